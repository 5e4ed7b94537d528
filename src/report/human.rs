//! Human output: one miette diagnostic per finding, with the evidence
//! records excerpted and labelled, then a one-line summary.

use std::fmt;
use std::io::{self, Write};

use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, SourceCode};

use super::plural;
use super::snippet::Excerpt;
use crate::escape::escape;
use crate::finding::{Finding, Severity};
use crate::lint::Outcome;
use crate::model::Loc;

pub struct Human {
    color: bool,
    width: usize,
}

impl Human {
    pub fn from_env() -> Self {
        let color = super::use_color();
        Human { color, width: 100 }
    }
}

struct Diag<'a> {
    finding: &'a Finding,
    excerpt: Excerpt,
    message: String,
    help: Option<String>,
}

impl fmt::Debug for Diag<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Display for Diag<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Diag<'_> {}

impl Diagnostic for Diag<'_> {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.finding.rule))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.finding.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
            Severity::Info => miette::Severity::Advice,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(&self.excerpt)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let mut seen = Vec::new();
        let mut labels = Vec::new();
        for (i, l) in self.finding.labels.iter().enumerate() {
            // Evidence in another file is listed under the diagnostic.
            if l.path.is_some() {
                continue;
            }
            let Some(span) = self.excerpt.span_of(&l.loc) else {
                continue;
            };
            // One label per line: later evidence on the same line joins it.
            if seen.contains(&span.offset()) {
                continue;
            }
            seen.push(span.offset());
            let text = escape(&l.text).into_owned();
            labels.push(if i == 0 {
                LabeledSpan::new_primary_with_span(Some(text), span)
            } else {
                LabeledSpan::new_with_span(Some(text), span)
            });
        }
        Some(Box::new(labels.into_iter()))
    }
}

/// Where a finding is, as `path:line` or `path: table key`.
pub fn location(f: &Finding) -> String {
    let path = f.source.path.display().to_string();
    match &f.loc {
        Some(loc) => loc_text(&path, loc),
        None => path,
    }
}

/// A record of a file, as `path:line` or `path: table key (rowid n)`.
pub fn loc_text(path: &str, loc: &Loc) -> String {
    match loc {
        Loc::Line { line, .. } => format!("{path}:{line}"),
        Loc::Row { .. } => format!("{path}: {}", super::record(loc)),
    }
}

impl Human {
    fn diag<'a>(&self, f: &'a Finding) -> Diag<'a> {
        let mut locs: Vec<&Loc> = f
            .labels
            .iter()
            .filter(|l| l.path.is_none())
            .map(|l| &l.loc)
            .collect();
        if locs.is_empty()
            && let Some(l) = &f.loc
        {
            locs.push(l);
        }
        let excerpt = Excerpt::read(&f.source.path, &locs);
        let message = escape(&f.summary).into_owned();
        let mut help: Vec<String> = f.notes.iter().map(|n| escape(n).into_owned()).collect();
        for l in &f.labels {
            if let Some(p) = &l.path {
                help.push(format!(
                    "evidence: {}: {}",
                    escape(&loc_text(&p.display().to_string(), &l.loc)),
                    escape(&l.text)
                ));
            }
        }
        if f.fixable
            && let Some(rule) = crate::rules::find(f.rule)
            && let Some(repair) = rule.repair
        {
            help.push(format!("repair: {repair}"));
        }
        Diag {
            finding: f,
            excerpt,
            message,
            help: if help.is_empty() {
                None
            } else {
                Some(help.join("\n"))
            },
        }
    }

    fn handler(&self) -> GraphicalReportHandler {
        let theme = if self.color {
            GraphicalTheme::unicode()
        } else {
            GraphicalTheme::unicode_nocolor()
        };
        GraphicalReportHandler::new_themed(theme)
            .with_width(self.width)
            .with_context_lines(0)
            .with_links(false)
    }
}

/// The closing line: counts by severity and how many are repairable.
pub fn summary_line(o: &Outcome) -> String {
    let t = o.totals();
    let files = o.files.len();
    let scope = format!(
        "{} ({}, {})",
        plural(files, "file", "files"),
        plural(t.conversations as usize, "conversation", "conversations"),
        plural(t.messages as usize, "message", "messages"),
    );
    let (e, w, i) = (
        o.count(Severity::Error),
        o.count(Severity::Warning),
        o.count(Severity::Info),
    );
    // "No problems" is said only about what was read.
    let mut line = if e + w + i == 0 && files == 0 && !o.errors.is_empty() {
        "nothing was read".to_string()
    } else if e + w + i == 0 {
        format!("no problems found in {scope}")
    } else {
        let mut parts = vec![
            plural(e, "error", "errors"),
            plural(w, "warning", "warnings"),
        ];
        if i > 0 {
            parts.push(plural(i, "info", "infos"));
        }
        let affected = o.files.iter().filter(|f| !f.findings.is_empty()).count();
        let mut s = format!("found {} in {affected} of {scope}", parts.join(", "));
        let fixable = o.fixable();
        if fixable > 0 {
            s.push_str(&format!("; {fixable} repairable with `chatfsck repair`"));
        }
        s
    };
    if !o.skipped.is_empty() {
        line.push_str(&format!(
            "; skipped {}",
            plural(o.skipped.len(), "file", "files")
        ));
    }
    if !o.errors.is_empty() {
        line.push_str(&format!(
            "; {} could not be read",
            plural(o.errors.len(), "input", "inputs")
        ));
    }
    line
}

impl Human {
    /// Write `lint`'s outcome.
    pub fn render(&self, outcome: &Outcome, out: &mut dyn Write) -> io::Result<()> {
        let handler = self.handler();
        for f in outcome.findings() {
            let diag = self.diag(f);
            let mut s = String::new();
            if handler.render_report(&mut s, &diag).is_err() {
                s = format!("{}: {}\n", location(f), diag.message);
            }
            // miette prints the header without the path when no label
            // resolved; make sure the location is always there.
            if !s.contains(&*escape(&f.source.path.display().to_string())) {
                s = format!("{}\n{s}", escape(&location(f)));
            }
            out.write_all(s.as_bytes())?;
        }
        for f in &outcome.files {
            if let Some(c) = &f.crosscheck
                && c.conversations == 0
            {
                writeln!(
                    out,
                    "note: no conversation of {} appears in {} (it records {}): nothing cross-checked",
                    escape(&f.info.path.display().to_string()),
                    escape(&c.trace.display().to_string()),
                    plural(c.trace_conversations, "conversation", "conversations"),
                )?;
            } else if let Some(c) = &f.crosscheck {
                writeln!(
                    out,
                    "note: cross-checked {} against {}: {} recorded in the trace, {}",
                    escape(&f.info.path.display().to_string()),
                    escape(&c.trace.display().to_string()),
                    plural(c.conversations, "conversation", "conversations"),
                    plural(c.requests, "request compared", "requests compared"),
                )?;
            }
        }
        write_skipped(outcome, out)?;
        if let Some(apps) = &outcome.discovered {
            if apps.iter().all(|a| a.found == 0) {
                return write_none_found(apps, out);
            }
            write_apps(apps, out)?;
        }
        writeln!(out, "{}", summary_line(outcome))
    }
}

/// A run without a path on a machine with none of the apps' histories.
fn write_none_found(apps: &[crate::lint::AppSummary], out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "no agent histories found; looked in:")?;
    for a in apps {
        let places: Vec<String> = a
            .looked
            .iter()
            .map(|l| escape(&l.shown).into_owned())
            .collect();
        writeln!(out, "  {}: {}", a.app, places.join(", "))?;
    }
    writeln!(
        out,
        "name a history with `chatfsck lint PATH` if it is kept elsewhere"
    )
}

/// The table of a run without a path: one row per app.
fn write_apps(apps: &[crate::lint::AppSummary], out: &mut dyn Write) -> io::Result<()> {
    let rows = || {
        apps.iter().map(|a| {
            let existing: Vec<String> = a
                .looked
                .iter()
                .filter(|l| l.exists)
                .map(|l| escape(&l.shown).into_owned())
                .collect();
            let place = if existing.is_empty() {
                "not found".to_string()
            } else {
                existing.join("\n")
            };
            let n = |x: usize| {
                if a.found == 0 {
                    "-".to_string()
                } else {
                    x.to_string()
                }
            };
            vec![
                a.app.to_string(),
                n(a.found),
                n(usize::try_from(a.sessions).unwrap_or(usize::MAX)),
                n(a.with_errors),
                n(a.unread.len()),
                place,
            ]
        })
    };
    super::table::write(
        out,
        &[
            "app",
            "files",
            "sessions read",
            "with errors",
            "unread",
            "where",
        ],
        rows,
    )?;
    for a in apps {
        for u in &a.unread {
            writeln!(
                out,
                "unread: {}: {}: {}",
                a.app,
                escape(&u.shown),
                escape(&u.cause)
            )?;
        }
    }
    Ok(())
}

/// One plain `note:` line per file a directory walk skipped.
pub fn write_skipped(outcome: &Outcome, out: &mut dyn Write) -> io::Result<()> {
    for (path, reason) in &outcome.skipped {
        writeln!(
            out,
            "note: skipped {}: {}",
            escape(&path.display().to_string()),
            escape(reason)
        )?;
    }
    Ok(())
}
