//! Rendering of `inspect`: a header, counts, and evidence tables (human,
//! JSON, markdown). The markdown pastes into a bug report.

use std::io::{self, Write};

use super::{Document, Format, Render, plural, table};

use crate::escape::{escape, md_code, md_escape};
use crate::inspect::{ConvView, Inspection, RequestView, TraceConvView};
use crate::model::Loc;

fn loc_cell(loc: &Loc) -> String {
    match loc {
        Loc::Line { line, .. } => line.to_string(),
        Loc::Row { rowid: Some(r), .. } => r.to_string(),
        Loc::Row { key, .. } => escape(key).into_owned(),
    }
}

/// Rows of the evidence tables, as plain cells, shared by both renderers.
fn chunk_cells(c: &ConvView) -> impl Iterator<Item = Vec<String>> + '_ {
    c.chunks.iter().flatten().map(|r| {
        vec![
            format!("{:010}", r.seq),
            r.role.clone(),
            r.msg_idx.to_string(),
            r.chunk_idx.to_string(),
            r.kind.clone(),
            r.preview.clone(),
            r.message.to_string(),
            r.loaded_message.to_string(),
        ]
    })
}

const CHUNK_HEADER: [&str; 8] = [
    "seq",
    "role",
    "msgIdx",
    "chunkIdx",
    "type",
    "preview",
    "true msg",
    "loaded msg",
];

fn loaded_cells(c: &ConvView) -> impl Iterator<Item = Vec<String>> + '_ {
    c.loaded.iter().flatten().map(|m| {
        vec![
            m.position.to_string(),
            m.role.clone(),
            if m.seq_first == m.seq_last {
                m.seq_first.to_string()
            } else {
                format!("{}–{}", m.seq_first, m.seq_last)
            },
            m.chunks.to_string(),
            m.chunk_roles.join(", "),
            m.true_messages
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        ]
    })
}

const LOADED_HEADER: [&str; 6] = ["#", "role", "seq", "chunks", "chunk roles", "true messages"];

/// A row's tool ids, escaped, one a line (human) or comma-separated.
fn ids_cell(ids: &[String], sep: &str) -> String {
    ids.iter()
        .map(|i| escape(i).into_owned())
        .collect::<Vec<_>>()
        .join(sep)
}

fn timeline_cells<'a>(c: &'a ConvView, sep: &'a str) -> impl Iterator<Item = Vec<String>> + 'a {
    c.timeline.iter().map(|r| {
        vec![
            r.position.to_string(),
            loc_cell(&r.loc),
            r.role.to_string(),
            r.parts.join(","),
            ids_cell(&r.tool_ids, sep),
            r.preview.clone(),
        ]
    })
}

fn list_cells(ins: &Inspection) -> impl Iterator<Item = Vec<String>> + '_ {
    ins.conversations.iter().map(|c| {
        vec![
            escape(&c.id).into_owned(),
            c.chunk_count
                .map(|n| n.to_string())
                .unwrap_or_else(|| "-".into()),
            c.stats.messages.to_string(),
            c.loaded_messages.to_string(),
            (c.stats.tool_calls).to_string(),
            c.errors.to_string(),
            c.warnings.to_string(),
        ]
    })
}

const LIST_HEADER: [&str; 7] = [
    "conversation",
    "chunks",
    "messages",
    "loaded",
    "tool calls",
    "errors",
    "warnings",
];

impl Document for Inspection {
    const COMMAND: &'static str = "inspect";

    fn renderer(format: Format) -> Option<Render<Self>> {
        match format {
            Format::Human => Some(human),
            Format::Json => Some(json),
            Format::Markdown => Some(markdown),
            Format::Html => Some(super::html::inspect),
            Format::Sarif | Format::Github => None,
        }
    }
}

pub fn human(ins: &Inspection, out: &mut dyn Write) -> io::Result<()> {
    if let Some(tr) = &ins.trace {
        return trace_human(ins, tr, out);
    }
    writeln!(out, "{}", escape(&ins.path))?;
    writeln!(out, "  format:        {} ({})", ins.format, ins.dialect)?;
    writeln!(out, "  conversations: {}", ins.conversations.len())?;
    if !ins.detail {
        table::write(out, &LIST_HEADER, || list_cells(ins))?;
        writeln!(
            out,
            "use --conversation ID for one conversation's evidence tables"
        )?;
        return Ok(());
    }
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
            "  messages:      {} ({})",
            c.stats.messages,
            roles.join(", ")
        )?;
        if c.loaded.is_some() {
            writeln!(
                out,
                "  loaded as:     {} messages by an index-grouping loader",
                c.loaded_messages
            )?;
        }
        writeln!(
            out,
            "  tool calls:    {}, tool results: {}",
            c.stats.tool_calls, c.stats.tool_results
        )?;
        writeln!(
            out,
            "  other records: {} meta, {} corrupt",
            c.stats.meta_records, c.stats.corrupt_records
        )?;
        writeln!(
            out,
            "  findings:      {} errors, {} warnings",
            c.errors, c.warnings
        )?;
        for f in &c.findings {
            writeln!(out, "    - {}", escape(f))?;
        }
        if c.chunks.is_some() {
            writeln!(out, "\nchunks")?;
            table::write(out, &CHUNK_HEADER, || chunk_cells(c))?;
            writeln!(out, "\nmessages as the index-grouping loader builds them")?;
            table::write(out, &LOADED_HEADER, || loaded_cells(c))?;
            writeln!(
                out,
                "\ntrue messages (a message starts where chunkIdx restarts at 0 or the role changes)"
            )?;
        }
        let loc_name = if c.chunks.is_some() { "row" } else { "line" };
        table::write(
            out,
            &["#", loc_name, "role", "parts", "tool ids", "preview"],
            || timeline_cells(c, "\n"),
        )?;
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

fn md_table(
    out: &mut dyn Write,
    header: &[&str],
    rows: impl Iterator<Item = Vec<String>>,
) -> io::Result<()> {
    super::markdown::table(
        out,
        header,
        rows.map(|r| r.iter().map(|c| md_escape(c)).collect::<Vec<_>>()),
    )
}

pub fn markdown(ins: &Inspection, out: &mut dyn Write) -> io::Result<()> {
    if let Some(tr) = &ins.trace {
        return trace_markdown(ins, tr, out);
    }
    writeln!(out, "## {}", md_code(&ins.path))?;
    writeln!(out)?;
    writeln!(
        out,
        "{} ({}), {} conversation{}. Generated by chatfsck {}.",
        ins.format,
        ins.dialect,
        ins.conversations.len(),
        if ins.conversations.len() == 1 {
            ""
        } else {
            "s"
        },
        env!("CARGO_PKG_VERSION")
    )?;
    writeln!(out)?;
    if !ins.detail {
        return md_table(out, &LIST_HEADER, list_cells(ins));
    }
    for c in &ins.conversations {
        writeln!(out, "### Conversation {}", md_code(&c.id))?;
        writeln!(out)?;
        writeln!(
            out,
            "{} messages, loaded as {}; {} errors, {} warnings.",
            c.stats.messages, c.loaded_messages, c.errors, c.warnings
        )?;
        writeln!(out)?;
        for f in &c.findings {
            writeln!(out, "- {}", md_escape(f))?;
        }
        if !c.findings.is_empty() {
            writeln!(out)?;
        }
        if c.chunks.is_some() {
            writeln!(out, "#### Chunks")?;
            writeln!(out)?;
            md_table(out, &CHUNK_HEADER, chunk_cells(c))?;
            writeln!(out)?;
            writeln!(
                out,
                "#### Messages as the index-grouping loader builds them"
            )?;
            writeln!(out)?;
            md_table(out, &LOADED_HEADER, loaded_cells(c))?;
            writeln!(out)?;
            writeln!(out, "#### True messages")?;
            writeln!(out)?;
        }
        let loc_name = if c.chunks.is_some() { "row" } else { "line" };
        md_table(
            out,
            &["#", loc_name, "role", "parts", "tool ids", "preview"],
            timeline_cells(c, ", "),
        )?;
        writeln!(out)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Traces

const REQUEST_HEADER: [&str; 11] = [
    "turn",
    "step",
    "recorded at",
    "started",
    "messages",
    "tools",
    "bytes",
    "finish",
    "status",
    "errors",
    "warnings",
];

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "-".into())
}

fn finish_cell(r: &RequestView) -> String {
    match (&r.finish_reason, &r.raw_finish_reason) {
        (Some(f), Some(raw)) if f != raw => format!("{f} ({raw})"),
        (Some(f), _) => f.clone(),
        (None, _) => "none".into(),
    }
}

fn request_cells(r: &RequestView) -> Vec<String> {
    vec![
        r.turn.to_string(),
        r.step.to_string(),
        super::record(&r.location),
        opt(&r.started),
        r.messages.to_string(),
        opt(&r.tools),
        opt(&r.bytes),
        finish_cell(r),
        if r.retries > 0 {
            format!("{} ({} retries)", r.status, r.retries)
        } else {
            r.status.to_string()
        },
        r.errors.to_string(),
        r.warnings.to_string(),
    ]
}

fn prompt_cells<'a>(r: &'a RequestView, sep: &'a str) -> impl Iterator<Item = Vec<String>> + 'a {
    r.prompt.iter().map(|m| {
        vec![
            m.position.to_string(),
            m.role.to_string(),
            m.parts.join(","),
            ids_cell(&m.tool_ids, sep),
            m.preview.clone(),
        ]
    })
}

const PROMPT_HEADER: [&str; 5] = ["#", "role", "parts", "tool ids", "preview"];

fn request_facts(r: &RequestView) -> Vec<(&'static str, String)> {
    let mut v = vec![(
        "sent",
        format!(
            "{}: {}, {}, {}{}",
            super::record(&r.location),
            plural(r.messages, "message", "messages"),
            r.tools
                .map(|t| plural(t, "tool", "tools"))
                .unwrap_or_else(|| "tools not recorded".into()),
            r.bytes
                .map(|b| format!("{b} bytes"))
                .unwrap_or_else(|| "size not recorded".into()),
            r.model
                .as_ref()
                .map(|m| format!(", model {m}"))
                .unwrap_or_default()
        ),
    )];
    let mut ended = match &r.finish_reason {
        Some(_) => format!("finish {}, status {}", finish_cell(r), r.status),
        None => format!("no finish reason, status {}", r.status),
    };
    if let Some(e) = &r.error {
        ended.push_str(&format!(": {}", crate::escape::preview(e, 100)));
    }
    if r.truncated {
        ended.push_str(" (truncated)");
    }
    v.push(("ended", ended));
    if let Some(a) = &r.answer {
        v.push(("answer", a.clone()));
    }
    v
}

fn trace_header(ins: &Inspection, tr: &[TraceConvView]) -> String {
    let requests: usize = tr.iter().map(|c| c.requests.len()).sum();
    format!(
        "  format:        {} ({})\n  conversations: {}, {}",
        ins.format,
        ins.dialect,
        tr.len(),
        plural(requests, "recorded request", "recorded requests")
    )
}

fn trace_human(ins: &Inspection, tr: &[TraceConvView], out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", escape(&ins.path))?;
    writeln!(out, "{}", trace_header(ins, tr))?;
    for c in tr {
        writeln!(out)?;
        writeln!(
            out,
            "conversation {}: {}, {}",
            escape(&c.id),
            plural(c.turns, "turn", "turns"),
            plural(c.requests.len(), "request", "requests")
        )?;
        for e in &c.reports {
            writeln!(
                out,
                "  {} after {}, at {}: {}",
                escape(&e.name),
                plural(e.before_request, "request", "requests"),
                escape(&super::record(&e.loc)),
                escape(&e.summary())
            )?;
        }
        if !ins.detail {
            table::write(out, &REQUEST_HEADER, || {
                c.requests.iter().map(|r| {
                    request_cells(r)
                        .into_iter()
                        .map(|x| escape(&x).into_owned())
                        .collect::<Vec<_>>()
                })
            })?;
            continue;
        }
        for r in &c.requests {
            writeln!(out)?;
            writeln!(out, "turn {} step {} — {}", r.turn, r.step, escape(&r.id))?;
            for (label, fact) in request_facts(r) {
                writeln!(out, "  {:<8} {}", format!("{label}:"), escape(&fact))?;
            }
            for f in &r.findings {
                writeln!(out, "  - {}", escape(f))?;
            }
            table::write(out, &PROMPT_HEADER, || prompt_cells(r, ", "))?;
        }
    }
    if !ins.detail {
        writeln!(out, "use --conversation ID for each step's prompt")?;
    }
    Ok(())
}

fn trace_markdown(ins: &Inspection, tr: &[TraceConvView], out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "## {}", md_code(&ins.path))?;
    writeln!(out)?;
    let requests: usize = tr.iter().map(|c| c.requests.len()).sum();
    writeln!(
        out,
        "{} ({}), {}, {}. Generated by chatfsck {}.",
        ins.format,
        ins.dialect,
        plural(tr.len(), "conversation", "conversations"),
        plural(requests, "recorded request", "recorded requests"),
        env!("CARGO_PKG_VERSION")
    )?;
    for c in tr {
        writeln!(out)?;
        writeln!(out, "### Conversation {}", md_code(&c.id))?;
        writeln!(out)?;
        for e in &c.reports {
            writeln!(
                out,
                "- `{}` after {}, at {}: {}",
                md_escape(&e.name),
                plural(e.before_request, "request", "requests"),
                md_escape(&super::record(&e.loc)),
                md_escape(&e.summary())
            )?;
        }
        if !c.reports.is_empty() {
            writeln!(out)?;
        }
        if !ins.detail {
            md_table(out, &REQUEST_HEADER, c.requests.iter().map(request_cells))?;
            continue;
        }
        for r in &c.requests {
            writeln!(out, "#### Turn {} step {}", r.turn, r.step)?;
            writeln!(out)?;
            for (label, fact) in request_facts(r) {
                writeln!(out, "- {label}: {}", md_escape(&fact))?;
            }
            for f in &r.findings {
                writeln!(out, "- {}", md_escape(f))?;
            }
            writeln!(out)?;
            md_table(out, &PROMPT_HEADER, prompt_cells(r, ", "))?;
            writeln!(out)?;
        }
    }
    Ok(())
}
