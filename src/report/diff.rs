//! Rendering of `diff`: human (coloured on a TTY), JSON and markdown.

use std::io::{self, Write};

use super::{Document, Format, Render};
use crate::diff::{Change, ConvDiff, Diff};
use crate::escape::escape;
use crate::escape::{md_code, md_escape};
use crate::model::Loc;

fn at(loc: &Loc) -> String {
    escape(&super::record(loc)).into_owned()
}

/// One line per change: (sigil, text).
fn lines(c: &ConvDiff) -> Vec<(char, String)> {
    let mut out = Vec::new();
    for ch in &c.changes {
        out.push(match ch {
            Change::Added {
                b,
                b_loc,
                role,
                summary,
            } => (
                '+',
                format!(
                    "added   message {b} ({}, `{role}`): {}",
                    at(b_loc),
                    escape(summary)
                ),
            ),
            Change::Removed {
                a,
                a_loc,
                role,
                summary,
            } => (
                '-',
                format!(
                    "removed message {a} ({}, `{role}`): {}",
                    at(a_loc),
                    escape(summary)
                ),
            ),
            Change::Moved {
                a,
                b,
                a_loc,
                b_loc,
                role,
                summary,
            } => (
                '>',
                format!(
                    "moved   message {a} ({}) → message {b} ({}), `{role}`: {}",
                    at(a_loc),
                    at(b_loc),
                    escape(summary)
                ),
            ),
            Change::Changed {
                a,
                b,
                a_loc,
                b_loc,
                role,
                details,
            } => (
                '~',
                format!(
                    "changed message {a} ({}) → message {b} ({}), `{role}`: {}",
                    at(a_loc),
                    at(b_loc),
                    escape(&details.join("; "))
                ),
            ),
        });
    }
    for l in &c.corrupt_removed {
        out.push(('-', format!("removed corrupt record ({})", at(l))));
    }
    for l in &c.corrupt_added {
        out.push(('+', format!("added corrupt record ({})", at(l))));
    }
    out
}

fn title(c: &ConvDiff) -> String {
    match (&c.a_id, &c.b_id) {
        (Some(a), Some(b)) if a == b => format!("conversation {}", escape(a)),
        (Some(a), Some(b)) => format!("conversation {} ↔ {}", escape(a), escape(b)),
        (Some(a), None) => format!(
            "conversation {} (only in A, {} messages)",
            escape(a),
            c.a_messages
        ),
        (None, Some(b)) => format!(
            "conversation {} (only in B, {} messages)",
            escape(b),
            c.b_messages
        ),
        (None, None) => "conversation".into(),
    }
}

impl Document for Diff {
    const COMMAND: &'static str = "diff";

    fn renderer(format: Format) -> Option<Render<Self>> {
        match format {
            Format::Human => Some(|d, out| human(d, super::use_color(), out)),
            Format::Json => Some(super::json::write::<Diff>),
            Format::Markdown => Some(markdown),
            Format::Sarif | Format::Github | Format::Html => None,
        }
    }
}

pub fn human(d: &Diff, color: bool, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "--- {}", escape(&d.a))?;
    writeln!(out, "+++ {}", escape(&d.b))?;
    let mut total = 0;
    for c in &d.conversations {
        if c.is_equal() {
            continue;
        }
        writeln!(
            out,
            "{}: {} → {} messages",
            title(c),
            c.a_messages,
            c.b_messages
        )?;
        for (sigil, text) in lines(c) {
            total += 1;
            let code = match sigil {
                '+' => "32",
                '-' => "31",
                '>' => "36",
                _ => "33",
            };
            if color {
                writeln!(out, "  \x1b[{code}m{sigil} {text}\x1b[0m")?;
            } else {
                writeln!(out, "  {sigil} {text}")?;
            }
        }
    }
    let same = d.conversations.iter().filter(|c| c.is_equal()).count();
    if d.is_equal() {
        writeln!(
            out,
            "no differences ({same} conversation{} compared)",
            if same == 1 { "" } else { "s" }
        )
    } else {
        writeln!(
            out,
            "{total} difference{}; {same} conversation{} identical",
            if total == 1 { "" } else { "s" },
            if same == 1 { "" } else { "s" }
        )
    }
}

pub fn markdown(d: &Diff, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "## chatfsck diff")?;
    writeln!(out)?;
    writeln!(out, "- A: {}", md_code(&d.a))?;
    writeln!(out, "- B: {}", md_code(&d.b))?;
    writeln!(out)?;
    if d.is_equal() {
        return writeln!(out, "No differences.");
    }
    for c in d.conversations.iter().filter(|c| !c.is_equal()) {
        writeln!(out, "### {}", md_escape(&title(c)))?;
        writeln!(out)?;
        writeln!(out, "| | change |")?;
        writeln!(out, "| --- | --- |")?;
        for (sigil, text) in lines(c) {
            let s = match sigil {
                '+' => "added",
                '-' => "removed",
                '>' => "moved",
                _ => "changed",
            };
            writeln!(out, "| {s} | {} |", md_escape(&text))?;
        }
        writeln!(out)?;
    }
    Ok(())
}
