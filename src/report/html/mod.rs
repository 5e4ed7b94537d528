//! HTML: one self-contained page (no network, no external script, style or
//! font), that opens from disk and attaches to a bug report. A summary
//! header (counts by rule and severity, inputs not read, a filter), an
//! index of the conversations with findings, and each conversation as a
//! timeline with one lane per role, every tool call linked to its result
//! by a drawn connector, the findings anchored at their messages.
//!
//! Every text from a history is escaped ([`crate::escape::html_escape`]);
//! the page's only script and style are inline and allowed by their hashes
//! in a Content-Security-Policy that allows nothing else (`default-src
//! 'none'`): no request leaves the page. Renders what the engine computed
//! (`lint::Outcome`, `inspect::Inspection`, `detail::Detail`).

use std::collections::BTreeMap;
use std::io::{self, Write};

use sha2::{Digest, Sha256};

use super::plural;
use crate::escape::html_escape;
use crate::finding::{Finding, Severity};
use crate::inspect::Inspection;
use crate::lint::Outcome;

mod timeline;

const STYLE: &str = include_str!("style.css");
const SCRIPT: &str = include_str!("script.js");

/// More conversations with detail than this: their sections start closed.
const OPEN_UP_TO: usize = 12;

/// Text for an element or a quoted attribute.
pub(crate) fn esc(s: &str) -> String {
    html_escape(s, false)
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `'sha256-…'` of an inline script or style, for the policy.
fn hash(text: &str) -> String {
    format!("'sha256-{}'", base64(&Sha256::digest(text.as_bytes())))
}

/// The policy: nothing but this page's own style and script.
pub fn csp() -> String {
    format!(
        "default-src 'none'; style-src {}; script-src {}; base-uri 'none'; \
         form-action 'none'",
        hash(STYLE),
        hash(SCRIPT)
    )
}

fn head(out: &mut dyn Write, title: &str) -> io::Result<()> {
    writeln!(out, "<!DOCTYPE html>")?;
    writeln!(out, "<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">")?;
    writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        csp()
    )?;
    writeln!(out, "<meta name=\"referrer\" content=\"no-referrer\">")?;
    writeln!(
        out,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    )?;
    writeln!(
        out,
        "<meta name=\"generator\" content=\"chatfsck {}\">",
        env!("CARGO_PKG_VERSION")
    )?;
    writeln!(out, "<title>{}</title>", esc(title))?;
    writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>")
}

/// The documentation of every rule with a finding on the page, once.
fn rule_docs(out: &mut dyn Write, findings: &[&Finding]) -> io::Result<()> {
    let rules: Vec<&crate::rules::Rule> = crate::rules::RULES
        .iter()
        .copied()
        .filter(|r| findings.iter().any(|f| f.rule == r.name))
        .collect();
    if rules.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "<section class=\"card\" id=\"rules\">\n<h2>The rules found</h2>"
    )?;
    for r in rules {
        writeln!(
            out,
            "<details class=\"rule\" id=\"rule-{0}\"><summary><span class=\"badge rule\">{0}</span> {1}</summary><pre>{2}</pre></details>",
            esc(r.name),
            esc(r.summary),
            html_escape(r.doc, true)
        )?;
    }
    writeln!(out, "</section>")
}

fn foot(out: &mut dyn Write, findings: &[&Finding]) -> io::Result<()> {
    rule_docs(out, findings)?;
    writeln!(out, "</main>\n<script>{SCRIPT}</script>\n</body>\n</html>")
}

/// Counts by rule and severity, and the filter that goes with them.
fn summary(out: &mut dyn Write, findings: &[&Finding]) -> io::Result<()> {
    let mut by_rule: BTreeMap<&str, [usize; 3]> = BTreeMap::new();
    for f in findings {
        by_rule.entry(f.rule).or_default()[f.severity as usize] += 1;
    }
    let sev = [Severity::Error, Severity::Warning, Severity::Info];
    writeln!(out, "<div class=\"summary\">")?;
    for s in sev {
        writeln!(
            out,
            "<div class=\"tot sev-{0}\"><b>{1}</b>{0}{2}</div>",
            s.as_str(),
            s.count(findings.iter().copied()),
            if s.count(findings.iter().copied()) == 1 {
                ""
            } else {
                "s"
            }
        )?;
    }
    writeln!(out, "</div>")?;
    if by_rule.is_empty() {
        return writeln!(out, "<p>No findings.</p>");
    }
    writeln!(
        out,
        "<table class=\"byrule\"><tr><th>rule</th><th>error</th><th>warning</th><th>info</th></tr>"
    )?;
    for (rule, n) in &by_rule {
        writeln!(
            out,
            "<tr><td><span class=\"badge rule\">{}</span></td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(rule),
            n[Severity::Error as usize],
            n[Severity::Warning as usize],
            n[Severity::Info as usize]
        )?;
    }
    writeln!(out, "</table>")?;
    writeln!(out, "<fieldset id=\"filter\"><legend>Show</legend>")?;
    for s in sev {
        if s.count(findings.iter().copied()) > 0 {
            writeln!(
                out,
                "<label><input type=\"checkbox\" checked data-kind=\"sev\" value=\"{0}\"> <span class=\"badge sev-{0}\">{0}</span></label>",
                s.as_str()
            )?;
        }
    }
    for rule in by_rule.keys() {
        writeln!(
            out,
            "<label><input type=\"checkbox\" checked data-kind=\"rule\" value=\"{0}\"> <span class=\"badge rule\">{0}</span></label>",
            esc(rule)
        )?;
    }
    writeln!(out, "</fieldset>")
}

/// One entry of the index: a conversation with findings.
pub(crate) struct Entry {
    pub anchor: String,
    pub file: String,
    pub id: String,
    pub errors: usize,
    pub warnings: usize,
}

fn index(out: &mut dyn Write, entries: &[Entry], total: Option<u64>) -> io::Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    writeln!(out, "<nav class=\"card\" id=\"index\">")?;
    writeln!(
        out,
        "<h2>{}{}</h2>\n<ol>",
        plural(
            entries.len(),
            "conversation with findings",
            "conversations with findings"
        ),
        total.map(|t| format!(" (of {t})")).unwrap_or_default()
    )?;
    for e in entries {
        writeln!(
            out,
            "<li data-for=\"{}\"><a href=\"#{0}\">{}</a> <span class=\"where\">{}</span> {}{}</li>",
            e.anchor,
            esc(&e.id),
            if e.file == e.id {
                String::new()
            } else {
                esc(&e.file)
            },
            if e.errors > 0 {
                format!(
                    "<span class=\"badge sev-error\">{}</span> ",
                    plural(e.errors, "error", "errors")
                )
            } else {
                String::new()
            },
            if e.warnings > 0 {
                format!(
                    "<span class=\"badge sev-warning\">{}</span>",
                    plural(e.warnings, "warning", "warnings")
                )
            } else {
                String::new()
            }
        )?;
    }
    writeln!(out, "</ol>\n</nav>")
}

/// `lint --format html`.
pub fn lint(o: &Outcome, out: &mut dyn Write) -> io::Result<()> {
    let paths: Vec<String> = o
        .files
        .iter()
        .map(|f| f.info.path.display().to_string())
        .collect();
    let title = match paths.as_slice() {
        [one] => format!("chatfsck lint: {one}"),
        _ => format!("chatfsck lint: {}", plural(paths.len(), "input", "inputs")),
    };
    head(out, &title)?;
    let totals = o.totals();
    writeln!(
        out,
        "<header class=\"page\"><h1>chatfsck lint <span class=\"path\">{}</span></h1>",
        esc(&match paths.as_slice() {
            [one] => one.clone(),
            _ => plural(paths.len(), "input", "inputs"),
        })
    )?;
    writeln!(
        out,
        "<p class=\"meta\">{}, {}, {}, {} read · {} not read · generated by chatfsck {}</p></header>",
        plural(o.files.len(), "input", "inputs"),
        plural(
            totals.conversations as usize,
            "conversation",
            "conversations"
        ),
        plural(totals.messages as usize, "message", "messages"),
        plural(
            totals.corrupt_records as usize,
            "corrupt record",
            "corrupt records"
        ),
        o.errors.len() + o.skipped.len(),
        env!("CARGO_PKG_VERSION")
    )?;
    writeln!(
        out,
        "<main>\n<section class=\"card\" id=\"summary\">\n<h2>Summary</h2>"
    )?;
    let all: Vec<&Finding> = o.findings().collect();
    summary(out, &all)?;
    writeln!(
        out,
        "<h3>Inputs read</h3>\n<table class=\"inputs\"><tr><th>input</th><th>format</th><th>conversations</th><th>messages</th><th>findings</th><th>cross-checked</th></tr>"
    )?;
    for f in &o.files {
        writeln!(
            out,
            "<tr><td class=\"mono\">{}</td><td>{} ({})</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            esc(&f.info.path.display().to_string()),
            f.info.format,
            f.info.dialect,
            f.stats.conversations,
            f.stats.messages,
            f.findings.len(),
            f.crosscheck
                .as_ref()
                .map(|c| format!(
                    "against <span class=\"mono\">{}</span>: {}, {}",
                    esc(&c.trace.display().to_string()),
                    plural(c.conversations, "conversation", "conversations"),
                    plural(c.requests, "recorded request", "recorded requests")
                ))
                .unwrap_or_default()
        )?;
    }
    writeln!(out, "</table>")?;
    if o.errors.is_empty() && o.skipped.is_empty() {
        writeln!(out, "<p class=\"muted\">Every input was read.</p>")?;
    } else {
        writeln!(out, "<h3>Inputs not read</h3>\n<ul class=\"notread\">")?;
        for e in &o.errors {
            writeln!(out, "<li>{}</li>", esc(&e.to_string()))?;
        }
        for (p, cause) in &o.skipped {
            writeln!(
                out,
                "<li><span class=\"mono\">{}</span>: skipped, {}</li>",
                esc(&p.display().to_string()),
                esc(cause)
            )?;
        }
        writeln!(out, "</ul>")?;
    }
    writeln!(out, "</section>")?;
    // One section per conversation with findings (or compared with a
    // trace), in the order the input holds them: a timeline where the
    // engine kept the detail, the findings alone otherwise.
    let detailed: usize = o.files.iter().map(|f| f.details.len()).sum();
    let flagged: usize = o
        .files
        .iter()
        .map(|f| {
            let mut ids: Vec<&str> = f.findings.iter().map(|x| x.conversation.as_str()).collect();
            ids.dedup();
            ids.len()
        })
        .sum();
    let mut entries = Vec::new();
    let mut sections: Vec<u8> = Vec::new();
    let mut n = 0;
    for f in &o.files {
        let path = f.info.path.display().to_string();
        let mut order: Vec<&str> = Vec::new();
        let mut by_conv: BTreeMap<&str, Vec<&Finding>> = BTreeMap::new();
        for x in &f.findings {
            let id = x.conversation.as_str();
            if !by_conv.contains_key(id) {
                order.push(id);
            }
            by_conv.entry(id).or_default().push(x);
        }
        let details: BTreeMap<&str, &crate::detail::Detail> =
            f.details.iter().map(|(id, d)| (id.as_str(), d)).collect();
        for (id, _) in &f.details {
            if !by_conv.contains_key(id.as_str()) {
                order.push(id);
            }
        }
        for id in order {
            let fs = by_conv.remove(id).unwrap_or_default();
            let anchor = format!("c{n}");
            n += 1;
            if !fs.is_empty() {
                entries.push(Entry {
                    anchor: anchor.clone(),
                    file: path.clone(),
                    id: id.to_string(),
                    errors: Severity::Error.count(fs.iter().copied()),
                    warnings: Severity::Warning.count(fs.iter().copied()),
                });
            }
            let open = detailed.max(flagged) <= OPEN_UP_TO;
            match details.get(id) {
                Some(d) => timeline::conversation(
                    &mut sections,
                    &timeline::Conv {
                        anchor: &anchor,
                        id,
                        file: &path,
                        findings: &fs,
                        detail: d,
                        open,
                    },
                )?,
                None => timeline::undrawn(&mut sections, &anchor, id, &path, &fs, open)?,
            }
        }
    }
    index(out, &entries, Some(totals.conversations))?;
    out.write_all(&sections)?;
    foot(out, &all)
}

/// `inspect --format html`.
pub fn inspect(ins: &Inspection, out: &mut dyn Write) -> io::Result<()> {
    head(out, &format!("chatfsck inspect: {}", ins.path))?;
    writeln!(
        out,
        "<header class=\"page\"><h1>chatfsck inspect <span class=\"path\">{}</span></h1>",
        esc(&ins.path)
    )?;
    let convs = match &ins.trace {
        Some(t) => t.len(),
        None => ins.conversations.len(),
    };
    writeln!(
        out,
        "<p class=\"meta\">{} ({}) · {} · generated by chatfsck {}</p></header>\n<main>",
        ins.format,
        ins.dialect,
        plural(convs, "conversation", "conversations"),
        env!("CARGO_PKG_VERSION")
    )?;
    if let Some(trace) = &ins.trace {
        timeline::trace(out, trace)?;
        return foot(out, &[]);
    }
    let all: Vec<&Finding> = ins
        .conversations
        .iter()
        .filter_map(|c| c.detail.as_ref())
        .flat_map(|d| &d.0)
        .collect();
    writeln!(
        out,
        "<section class=\"card\" id=\"summary\">\n<h2>Summary</h2>"
    )?;
    summary(out, &all)?;
    if !ins.detail {
        writeln!(
            out,
            "<h3>Conversations</h3>\n<table class=\"inputs\"><tr><th>conversation</th><th>chunks</th><th>messages</th><th>loaded</th><th>tool calls</th><th>errors</th><th>warnings</th></tr>"
        )?;
        for (i, c) in ins.conversations.iter().enumerate() {
            let name = if c.detail.is_some() {
                format!("<a href=\"#c{i}\">{}</a>", esc(&c.id))
            } else {
                esc(&c.id)
            };
            writeln!(
                out,
                "<tr><td class=\"mono\">{name}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                c.chunk_count
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "-".into()),
                c.stats.messages,
                c.loaded_messages,
                c.stats.tool_calls,
                c.errors,
                c.warnings
            )?;
        }
        writeln!(out, "</table>")?;
        let undrawn = ins
            .conversations
            .iter()
            .filter(|c| c.errors + c.warnings > 0 && c.detail.is_none())
            .count();
        if undrawn > 0 {
            writeln!(
                out,
                "<p class=\"muted\">Timelines are drawn for the first {} conversations with findings; {} more are counted above. Draw one with <code>chatfsck inspect {} --conversation ID --format html -o FILE</code>.</p>",
                crate::lint::DETAIL_LIMIT,
                plural(undrawn, "conversation", "conversations"),
                esc(&ins.path)
            )?;
        }
    }
    writeln!(out, "</section>")?;
    let detailed = ins
        .conversations
        .iter()
        .filter(|c| c.detail.is_some())
        .count();
    let mut entries = Vec::new();
    let mut sections: Vec<u8> = Vec::new();
    for (i, c) in ins.conversations.iter().enumerate() {
        let Some(d) = &c.detail else { continue };
        let anchor = format!("c{i}");
        let fs: Vec<&Finding> = d.0.iter().collect();
        if !fs.is_empty() {
            entries.push(Entry {
                anchor: anchor.clone(),
                file: ins.path.clone(),
                id: c.id.clone(),
                errors: c.errors,
                warnings: c.warnings,
            });
        }
        timeline::conversation(
            &mut sections,
            &timeline::Conv {
                anchor: &anchor,
                id: &c.id,
                file: &ins.path,
                findings: &fs,
                detail: &d.1,
                open: ins.detail || detailed <= OPEN_UP_TO,
            },
        )?;
    }
    if !ins.detail {
        index(out, &entries, Some(ins.conversations.len() as u64))?;
    }
    out.write_all(&sections)?;
    foot(out, &all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_of_known_values() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
