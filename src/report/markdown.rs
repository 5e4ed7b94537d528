//! The markdown report: a summary line, a table of the files checked, then
//! for each file and conversation an evidence table. It pastes into a GitHub
//! issue; every piece of history text goes through `md_escape` (or
//! `md_code`) so it cannot change the document's structure.

use std::io::{self, Write};

use super::human::summary_line;
use crate::escape::{md_code, md_escape};
use crate::finding::{Finding, Severity};
use crate::lint::{FileReport, Outcome};
use crate::model::Loc;

pub struct Markdown;

/// Write a markdown table. Header cells are written as they are (they are
/// ours); body cells must already be escaped by the caller.
pub fn table<R: AsRef<[String]>>(
    out: &mut dyn Write,
    header: &[&str],
    rows: impl IntoIterator<Item = R>,
) -> io::Result<()> {
    writeln!(out, "| {} |", header.join(" | "))?;
    writeln!(out, "|{}", " --- |".repeat(header.len()))?;
    for r in rows {
        writeln!(out, "| {} |", r.as_ref().join(" | "))?;
    }
    Ok(())
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// The header of the location column for a set of findings.
fn loc_header(findings: &[&Finding]) -> &'static str {
    let lines = findings
        .iter()
        .all(|f| matches!(f.loc, Some(Loc::Line { .. })));
    let rows = findings
        .iter()
        .all(|f| matches!(f.loc, Some(Loc::Row { .. })));
    match (lines, rows) {
        (true, _) => "line",
        (_, true) => "key",
        _ => "location",
    }
}

fn loc_cell(loc: Option<&Loc>) -> String {
    match loc {
        Some(Loc::Line { line, .. }) => line.to_string(),
        Some(Loc::Row { key, .. }) => md_escape(key),
        None => String::new(),
    }
}

fn finding_row(f: &Finding) -> Vec<String> {
    vec![
        md_code(f.rule),
        f.severity.as_str().to_string(),
        loc_cell(f.loc.as_ref()),
        f.message.map(|m| m.to_string()).unwrap_or_default(),
        md_escape(&f.summary),
        f.ids
            .iter()
            .map(|i| md_escape(i))
            .collect::<Vec<_>>()
            .join(", "),
    ]
}

fn file_section(out: &mut dyn Write, file: &FileReport) -> io::Result<()> {
    writeln!(out, "## {}", md_code(&file.info.path.display().to_string()))?;
    writeln!(out)?;
    // Findings come out conversation by conversation; keep that order.
    let mut groups: Vec<(&str, Vec<&Finding>)> = Vec::new();
    for f in &file.findings {
        match groups.last_mut() {
            Some((conv, list)) if *conv == f.conversation => list.push(f),
            _ => groups.push((&f.conversation, vec![f])),
        }
    }
    let path = file.info.path.display().to_string();
    for (conv, findings) in groups {
        // A file that holds one conversation names it after itself.
        if conv != path {
            writeln!(out, "### Conversation {}", md_code(conv))?;
            writeln!(out)?;
        }
        let header = [
            "rule",
            "severity",
            loc_header(&findings),
            "message",
            "summary",
            "ids",
        ];
        let rows: Vec<Vec<String>> = findings.iter().map(|f| finding_row(f)).collect();
        table(out, &header, &rows)?;
        writeln!(out)?;
    }
    Ok(())
}

impl Markdown {
    /// Write `lint`'s outcome.
    pub fn render(&self, o: &Outcome, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "# chatfsck lint report")?;
        writeln!(out)?;
        writeln!(out, "{}.", upper_first(&summary_line(o)))?;
        writeln!(out)?;
        if !o.files.is_empty() {
            let rows: Vec<Vec<String>> = o
                .files
                .iter()
                .map(|f| {
                    vec![
                        md_escape(&f.info.path.display().to_string()),
                        format!("{} ({})", f.info.format, f.info.dialect),
                        f.stats.conversations.to_string(),
                        f.stats.messages.to_string(),
                        Severity::Error.count(&f.findings).to_string(),
                        Severity::Warning.count(&f.findings).to_string(),
                    ]
                })
                .collect();
            table(
                out,
                &[
                    "file",
                    "format",
                    "conversations",
                    "messages",
                    "errors",
                    "warnings",
                ],
                &rows,
            )?;
            writeln!(out)?;
        }
        for file in o.files.iter().filter(|f| !f.findings.is_empty()) {
            file_section(out, file)?;
        }
        if !o.errors.is_empty() || !o.skipped.is_empty() {
            writeln!(out, "## Not checked")?;
            writeln!(out)?;
            for e in &o.errors {
                writeln!(out, "- could not read: {}", md_escape(&e.to_string()))?;
            }
            for (path, reason) in &o.skipped {
                writeln!(
                    out,
                    "- skipped {}: {}",
                    md_escape(&path.display().to_string()),
                    md_escape(reason)
                )?;
            }
            writeln!(out)?;
        }
        writeln!(
            out,
            "Generated by chatfsck {} (`chatfsck lint --format markdown`).",
            env!("CARGO_PKG_VERSION")
        )
    }
}
