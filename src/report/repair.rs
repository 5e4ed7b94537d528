//! Rendering of a repair: what was done, what was left, and the log file.

use std::io::{self, Write};
use std::path::Path;

use super::{Document, Format, Render};
use crate::error::{Error, Result};
use crate::escape::{escape, md_code, md_escape};
use crate::model::Loc;
use crate::repair::Report;
use crate::write::atomic::Atomic;

fn at(loc: &Loc) -> String {
    escape(&super::record(loc)).into_owned()
}

impl Document for Report {
    const COMMAND: &'static str = "repair";

    fn renderer(format: Format) -> Option<Render<Self>> {
        match format {
            Format::Human => Some(human),
            Format::Json => Some(super::json::write::<Report>),
            Format::Markdown => Some(markdown),
            Format::Sarif | Format::Github | Format::Html => None,
        }
    }
}

pub fn human(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let target = match (&r.output, r.dry_run) {
        (_, true) => "(dry run: nothing written)".to_string(),
        (Some(o), false) => format!("→ {}", escape(o)),
        (None, false) => String::new(),
    };
    writeln!(
        out,
        "repair {} {target} ({}, {})",
        escape(&r.input),
        r.format,
        r.dialect
    )?;
    if let Some(w) = &r.written_as {
        writeln!(out, "  written as {}", escape(w))?;
    }
    if let Some(b) = &r.backup {
        writeln!(out, "  backup of the original: {}", escape(b))?;
    }
    for e in &r.edits {
        let tag = if e.synthesized { "  [synthesized]" } else { "" };
        writeln!(
            out,
            "  {:<22} {:<14} {}{tag}",
            e.rule,
            at(&e.location),
            escape(&e.description)
        )?;
    }
    if !r.left.is_empty() {
        writeln!(out, "left as is:")?;
        for l in &r.left {
            let loc = l.location.as_ref().map(at).unwrap_or_default();
            writeln!(
                out,
                "  {:<22} {:<14} {} ({})",
                l.rule,
                loc,
                escape(&l.summary),
                escape(&l.reason)
            )?;
        }
    }
    let synthesized = r.edits.iter().filter(|e| e.synthesized).count();
    let verb = if r.dry_run { "would apply" } else { "applied" };
    let mut line = format!(
        "{verb} {} edit{}",
        r.edits.len(),
        if r.edits.len() == 1 { "" } else { "s" }
    );
    if synthesized > 0 {
        line.push_str(&format!(" ({synthesized} synthesized)"));
    }
    line.push_str(&format!(
        "; {} finding{} left as is",
        r.left.len(),
        if r.left.len() == 1 { "" } else { "s" }
    ));
    if r.edits.is_empty() && !r.dry_run {
        line.push_str(match r.output {
            Some(_) => "; the copy is identical to the input",
            None => "; nothing was written",
        });
    }
    writeln!(out, "{line}")
}

/// Write the repair log atomically, through `tmp`, its temporary file
/// beside `path`.
///
/// Streamed: a large record's text is read from the input as it is
/// written (`write::payload`), never gathered with the rest of the log.
pub fn write_log(r: &Report, tmp: Atomic, path: &Path, force: bool) -> Result<()> {
    let mut w = tmp.writer(path)?;
    super::json::write(r, &mut w).map_err(|e| Error::Output {
        path: path.to_path_buf(),
        cause: e.to_string(),
    })?;
    crate::write::atomic::finish(w, path)?;
    tmp.commit(path, force, None)
}

/// A markdown table of the edits and what was left, for a bug report.
pub fn markdown(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "## chatfsck repair of {}", md_code(&r.input))?;
    writeln!(out)?;
    let target = match (&r.output, r.dry_run) {
        (_, true) => "dry run: nothing written".to_string(),
        (Some(o), false) => format!("written to {}", md_code(o)),
        (None, false) => String::new(),
    };
    writeln!(out, "{} ({}), {target}.", r.format, r.dialect)?;
    writeln!(out)?;
    writeln!(out, "| rule | where | edit | synthesized |")?;
    writeln!(out, "| --- | --- | --- | --- |")?;
    for e in &r.edits {
        writeln!(
            out,
            "| {} | {} | {} | {} |",
            e.rule,
            md_escape(&at(&e.location)),
            md_escape(&e.description),
            if e.synthesized { "yes" } else { "" }
        )?;
    }
    if !r.left.is_empty() {
        writeln!(out)?;
        writeln!(out, "Left as is:")?;
        writeln!(out)?;
        writeln!(out, "| rule | where | finding | why |")?;
        writeln!(out, "| --- | --- | --- | --- |")?;
        for l in &r.left {
            writeln!(
                out,
                "| {} | {} | {} | {} |",
                l.rule,
                md_escape(&l.location.as_ref().map(at).unwrap_or_default()),
                md_escape(&l.summary),
                md_escape(&l.reason)
            )?;
        }
    }
    Ok(())
}
