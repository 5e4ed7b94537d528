//! GitHub Actions workflow commands: one `::error` / `::warning` /
//! `::notice` line per finding, which the runner turns into annotations on
//! the pull request, then the summary line as plain log output.
//!
//! A workflow command is one line that the runner parses, so history text
//! must not be able to end it or start another: control characters are
//! escaped as for a terminal first, then the runner's own escapes apply
//! (`%`, CR and LF everywhere; `:` and `,` in properties too).

use std::io::{self, Write};
use std::path::PathBuf;

use super::human::summary_line;
use super::{CiPath, CiPaths, ci_base};
use crate::escape::escape;
use crate::finding::{Finding, Severity};
use crate::lint::Outcome;
use crate::model::Loc;

pub struct Github {
    paths: CiPaths,
}

impl Github {
    pub fn from_env() -> Self {
        Self::with_base(ci_base())
    }

    pub fn with_base(base: Option<PathBuf>) -> Self {
        Github {
            paths: CiPaths::new(base),
        }
    }
}

pub fn command(sev: Severity) -> &'static str {
    match sev {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    }
}

/// Escape a command's message (the part after `::`).
pub fn escape_data(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c => out.push(c),
        }
    }
    out
}

/// Escape a property value (`file=…`, `title=…`).
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

fn location(f: &Finding) -> String {
    match &f.loc {
        Some(Loc::Row { table, key, rowid }) => {
            let rowid = rowid.map(|r| format!(", rowid {r}")).unwrap_or_default();
            format!(" (table `{table}`, key `{key}`{rowid})")
        }
        _ => String::new(),
    }
}

impl Github {
    fn line(&self, f: &Finding) -> String {
        let file = match self.paths.name(&f.source.path) {
            CiPath::Relative(rel) => Some(rel),
            CiPath::Absolute(abs) => Some(abs.display().to_string()),
            // A database is no file of the repository: no `file=`.
            CiPath::Url(_) => None,
        };
        let mut props: Vec<String> = file
            .map(|f| format!("file={}", escape_property(&escape(&f))))
            .into_iter()
            .collect();
        if let Some(line) = f.line() {
            props.push(format!("line={line}"));
        }
        props.push(format!("title={}", escape_property(f.rule)));
        // The first line is the summary; notes follow on their own lines.
        // `escape` leaves no CR or LF in history text, so the only line
        // breaks in the message are these.
        let on = if props.is_empty() {
            format!(" in {}", f.source.path.display())
        } else {
            String::new()
        };
        let mut lines = vec![escape(&format!("{}{}{on}", f.summary, location(f))).into_owned()];
        lines.extend(f.notes.iter().map(|n| escape(n).into_owned()));
        format!(
            "::{} {}::{}",
            command(f.severity),
            props.join(","),
            escape_data(&lines.join("\n"))
        )
    }
}

impl Github {
    /// Write `lint`'s outcome.
    pub fn render(&self, o: &Outcome, out: &mut dyn Write) -> io::Result<()> {
        for f in o.findings() {
            writeln!(out, "{}", self.line(f))?;
        }
        for e in &o.errors {
            writeln!(
                out,
                "::error title=chatfsck::{}",
                escape_data(&format!("could not check {e}"))
            )?;
        }
        // Plain log lines: no command, and nothing a runner would parse as one.
        super::human::write_skipped(o, out)?;
        writeln!(out, "chatfsck: {}", summary_line(o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runner_escapes() {
        assert_eq!(escape_data("100% done\r\nnext"), "100%25 done%0D%0Anext");
        assert_eq!(escape_property("a:b,c%d\ne"), "a%3Ab%2Cc%25d%0Ae");
    }
}
