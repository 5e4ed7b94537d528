//! Rendering of `inspect`: a header, counts, and a timeline table.

use std::io::{self, Write};

use comfy_table::{ContentArrangement, Table, presets};

use crate::escape::escape;
use crate::inspect::Inspection;
use crate::model::Loc;

pub fn human(ins: &Inspection, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", escape(&ins.path))?;
    writeln!(out, "  format:  {} ({})", ins.format, ins.dialect)?;
    writeln!(out, "  conversations: {}", ins.conversations.len())?;
    for c in &ins.conversations {
        writeln!(out)?;
        writeln!(out, "conversation {}", escape(&c.id))?;
        let roles: Vec<String> = c
            .stats
            .by_role
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect();
        writeln!(
            out,
            "  messages:     {} ({})",
            c.stats.messages,
            roles.join(", ")
        )?;
        writeln!(
            out,
            "  tool calls:   {}, tool results: {}",
            c.stats.tool_calls, c.stats.tool_results
        )?;
        writeln!(
            out,
            "  other records: {} meta, {} corrupt",
            c.stats.meta_records, c.stats.corrupt_records
        )?;
        writeln!(
            out,
            "  findings:     {} errors, {} warnings",
            c.errors, c.warnings
        )?;
        for f in &c.findings {
            writeln!(out, "    - {}", escape(f))?;
        }
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(vec!["#", "line", "role", "parts", "tool ids", "preview"]);
        for r in &c.timeline {
            let line = match &r.loc {
                Loc::Line { line, .. } => line.to_string(),
                Loc::Row { key, .. } => key.to_string(),
            };
            t.add_row(vec![
                r.position.to_string(),
                line,
                r.role.to_string(),
                r.parts.join(","),
                escape(&r.tool_ids.join("\n")).into_owned(),
                r.preview.clone(),
            ]);
        }
        writeln!(out, "{t}")?;
    }
    Ok(())
}

pub fn json(ins: &Inspection, out: &mut dyn Write) -> io::Result<()> {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        version: u32,
        tool: super::json::Tool,
        #[serde(flatten)]
        inspection: &'a Inspection,
    }
    super::json::write(
        &Doc {
            version: super::json::VERSION,
            tool: super::json::TOOL,
            inspection: ins,
        },
        out,
    )
}
