//! Rendering of `diff STORE TRACE`: for every recorded request, the stored
//! messages beside the messages sent, one row per alignment step.

use std::io::{self, Write};

use super::{Document, Format, Render, plural};

use comfy_table::{ContentArrangement, Table, presets};

use crate::crosscheck::{DiffDoc, SentSide, StoreSide};
use crate::escape::escape;
use crate::model::compare::Op;
use crate::report::human::loc_text;

fn store_cells(s: &Option<StoreSide>) -> Vec<String> {
    match s {
        Some(s) => vec![
            s.position(),
            s.at.clone(),
            s.roles.join("+"),
            s.parts.clone(),
        ],
        None => vec![String::new(); 4],
    }
}

fn sent_cells(s: &Option<SentSide>) -> Vec<String> {
    match s {
        Some(s) => vec![
            format!("messages[{}]", s.index),
            s.role.clone(),
            s.parts.clone(),
        ],
        None => vec![String::new(); 3],
    }
}

impl Document for DiffDoc {
    const COMMAND: &'static str = "diff STORE TRACE";

    fn renderer(format: Format) -> Option<Render<Self>> {
        match format {
            Format::Human => Some(human),
            Format::Json => Some(json),
            // `inspect --format markdown TRACE` has the requests as tables.
            Format::Markdown | Format::Sarif | Format::Github | Format::Html => None,
        }
    }
}

pub fn human(doc: &DiffDoc, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "store: {} — {}", escape(&doc.store), doc.store_format)?;
    writeln!(out, "trace: {} — {}", escape(&doc.trace), doc.trace_format)?;
    for c in &doc.conversations {
        writeln!(out)?;
        writeln!(
            out,
            "conversation {} ({}, {})",
            escape(&c.conversation),
            plural(c.stored_messages, "stored message", "stored messages"),
            plural(c.requests.len(), "recorded request", "recorded requests")
        )?;
        for r in &c.requests {
            let (h, divergent) = (&r.head, r.divergent);
            writeln!(out)?;
            let finish = match &h.finish_reason {
                Some(f) => format!("finish `{}`", escape(f)),
                None => "no finish reason".to_string(),
            };
            writeln!(
                out,
                "{} — turn {} step {}: {} sent, status {}, {}{}",
                escape(&h.request),
                h.turn,
                h.step,
                plural(h.sent, "message", "messages"),
                h.status,
                finish,
                if divergent {
                    " — DIFFERS FROM THE STORE"
                } else {
                    " — matches the store"
                }
            )?;
            writeln!(
                out,
                "  sent: {}",
                escape(&loc_text(&doc.trace, &h.location))
            )?;
            for rep in &r.reports {
                writeln!(out, "  note: {}", escape(rep))?;
            }
            let mut t = Table::new();
            t.load_preset(presets::UTF8_FULL_CONDENSED)
                .set_content_arrangement(ContentArrangement::Disabled)
                .set_header(vec![
                    "stored", "at", "role", "parts", "", "sent", "role", "parts", "preview",
                ]);
            for row in &r.rows {
                let mut cs = store_cells(&row.store);
                let op = if row.op == Op::Same {
                    "=".to_string()
                } else {
                    row.op.as_str().to_string()
                };
                cs.push(op);
                cs.extend(sent_cells(&row.sent));
                let preview = match (&row.sent, &row.store) {
                    (Some(s), _) => s.preview.clone(),
                    (None, Some(s)) => s.preview.clone(),
                    (None, None) => String::new(),
                };
                cs.push(preview);
                t.add_row(
                    cs.into_iter()
                        .map(|c| escape(&c).into_owned())
                        .collect::<Vec<_>>(),
                );
            }
            writeln!(out, "{t}")?;
            for row in r.rows.iter().filter(|row| !row.detail.is_empty()) {
                writeln!(out, "  {}: {}", row.op.as_str(), escape(&row.detail))?;
            }
        }
    }
    let (n, d) = doc
        .conversations
        .iter()
        .flat_map(|c| &c.requests)
        .fold((0, 0), |(n, d), r| (n + 1, d + usize::from(r.divergent)));
    writeln!(out)?;
    writeln!(
        out,
        "{d} of {} {} from the store",
        plural(n, "recorded request", "recorded requests"),
        if d == 1 { "differs" } else { "differ" }
    )
}

pub fn json(doc: &DiffDoc, out: &mut dyn Write) -> io::Result<()> {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        version: u32,
        tool: super::json::Tool,
        #[serde(flatten)]
        diff: &'a DiffDoc,
    }
    super::json::write(
        &Doc {
            version: super::json::VERSION,
            tool: super::json::TOOL,
            diff: doc,
        },
        out,
    )
}
