//! The per-message detail of one conversation, as plain data for reports
//! that draw it (the HTML timeline): every message and part with its
//! record, which result answers which call (`model::pairing`), the messages
//! a chunk store's index-grouping loader builds, and, when checked against
//! a trace, every recorded prompt beside the stored history.
//!
//! Computed here, by the engine, so the renderers only draw it.

use serde::Serialize;

use crate::crosscheck::DiffRequest;
use crate::escape::preview;
use crate::model::pairing::{Pairing, PartRef};
use crate::model::{Conversation, Loc, PartKind};

/// Characters of a part's text kept whole; a longer text is cut there
/// (and says so), so a report of thousands of conversations stays usable.
pub const FULL_TEXT: usize = 2000;
/// Characters of a part's one-line preview.
pub const PART_PREVIEW: usize = 80;

#[derive(Debug, Serialize)]
pub struct PartView {
    /// `text`, `thinking`, `tool-call`, `tool-result` or the store's kind.
    pub kind: String,
    /// The call's id, or the id a result answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name (calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Whether a result says it is an error.
    pub is_error: bool,
    /// One line, escaped of control characters.
    pub preview: String,
    /// The text (arguments of a call, content of a result), at most
    /// [`FULL_TEXT`] characters, raw: renderers escape it for their medium.
    pub text: String,
    /// Characters of the text: more than `text` holds when it was cut.
    pub chars: usize,
    pub loc: Loc,
}

#[derive(Debug, Serialize)]
pub struct MessageView {
    pub position: usize,
    pub role: &'static str,
    pub loc: Loc,
    pub stored_index: Option<i64>,
    pub parts: Vec<PartView>,
}

/// A tool call and the result that answers it.
#[derive(Debug, Serialize)]
pub struct Link {
    pub call: PartRef,
    pub result: PartRef,
    /// Another message sits between the call and its result.
    pub late: bool,
    /// Positions of the messages between the call's window and the result
    /// that carry no results: the interleaved ones.
    pub between: Vec<usize>,
}

/// One stored chunk, as the evidence table of seed 000 shows it.
#[derive(Debug, Serialize)]
pub struct ChunkRow {
    pub seq: u64,
    pub key: String,
    pub role: String,
    #[serde(rename = "msgIdx")]
    pub msg_idx: i64,
    #[serde(rename = "chunkIdx")]
    pub chunk_idx: i64,
    #[serde(rename = "type")]
    pub kind: String,
    pub preview: String,
    /// Position of the true message this chunk belongs to.
    pub message: usize,
    /// Position of the message the index-grouping loader puts it in.
    pub loaded_message: usize,
}

/// A message as the app's index-grouping loader builds it.
#[derive(Debug, Serialize)]
pub struct LoadedMessage {
    pub position: usize,
    pub role: String,
    pub seq_first: u64,
    pub seq_last: u64,
    pub chunks: usize,
    /// Roles of the chunks inside, in order of appearance.
    pub chunk_roles: Vec<String>,
    /// True messages merged into this one.
    pub true_messages: Vec<usize>,
}

/// Everything a report draws of one conversation.
#[derive(Debug, Serialize)]
pub struct Detail {
    pub messages: Vec<MessageView>,
    pub links: Vec<Link>,
    /// Calls no result answers.
    pub unanswered: Vec<PartRef>,
    /// Results that answer no pending call.
    pub strays: Vec<PartRef>,
    /// Stored chunks (chunk stores only).
    pub chunks: Option<Vec<ChunkRow>>,
    /// The messages the app's index-grouping loader builds (chunk stores).
    pub loaded: Option<Vec<LoadedMessage>>,
    /// Each request a trace recorded beside the stored history (with
    /// `lint --trace`).
    pub prompts: Vec<DiffRequest>,
}

fn cut(s: &str) -> (String, usize) {
    let chars = s.chars().count();
    (s.chars().take(FULL_TEXT).collect(), chars)
}

fn part_view(p: &crate::model::Part) -> PartView {
    let (id, name, is_error, text) = match &p.kind {
        PartKind::Text { text } | PartKind::Thinking { text } => {
            (None, None, false, text.as_str().to_string())
        }
        PartKind::ToolCall {
            id,
            name,
            arguments,
        } => (
            Some(id.clone()),
            Some(name.clone()),
            false,
            arguments.raw.as_str().to_string(),
        ),
        PartKind::ToolResult {
            call_id,
            content,
            is_error,
        } => (
            Some(call_id.clone()),
            None,
            *is_error == Some(true),
            content.as_str().to_string(),
        ),
        PartKind::Other { .. } => (None, None, false, String::new()),
    };
    let (text, chars) = cut(&text);
    PartView {
        kind: p.kind.type_name().to_string(),
        preview: preview(&text, PART_PREVIEW),
        id,
        name,
        is_error,
        text,
        chars,
        loc: p.loc.clone(),
    }
}

/// Characters of chunk content shown in evidence tables.
const CHUNK_PREVIEW: usize = 60;

fn chunk_preview(conv: &Conversation, c: &crate::model::Chunk) -> String {
    let Some(part) = conv
        .messages
        .get(c.message)
        .and_then(|m| m.parts.get(c.part))
    else {
        return String::new();
    };
    match &part.kind {
        PartKind::Text { text } | PartKind::Thinking { text } => {
            format!("\"{}\"", preview(text, CHUNK_PREVIEW))
        }
        PartKind::ToolCall {
            name, arguments, ..
        } => {
            format!(
                "{} {}",
                preview(name, 30),
                preview(&arguments.raw, CHUNK_PREVIEW - 20)
            )
        }
        PartKind::ToolResult {
            content, is_error, ..
        } => format!(
            "{}{} {}",
            preview(c.detail.as_deref().unwrap_or_default(), 30),
            if *is_error == Some(true) {
                " (error)"
            } else {
                ""
            },
            preview(content, CHUNK_PREVIEW - 20)
        ),
        PartKind::Other { .. } => c
            .detail
            .as_deref()
            .map(|d| preview(d, CHUNK_PREVIEW))
            .unwrap_or_default(),
    }
}

/// The stored chunks of a chunk store and the messages its index-grouping
/// loader builds of them.
pub fn chunk_views(conv: &Conversation) -> (Option<Vec<ChunkRow>>, Option<Vec<LoadedMessage>>) {
    let Some(log) = &conv.chunks else {
        return (None, None);
    };
    let groups = log.loaded_groups();
    let mut loaded_of = vec![0; log.chunks.len()];
    let mut loaded = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let cs = &log.chunks[g.clone()];
        let mut roles: Vec<String> = Vec::new();
        let mut msgs: Vec<usize> = Vec::new();
        // A group of a store whose indices all collide holds every
        // message: looking each one up in `msgs` took quadratic time.
        let mut seen: foldhash::HashSet<usize> = foldhash::HashSet::default();
        for (k, c) in cs.iter().enumerate() {
            loaded_of[g.start + k] = gi;
            if !roles.iter().any(|r| r == c.role.as_str()) {
                roles.push(c.role.to_string());
            }
            if seen.insert(c.message) {
                msgs.push(c.message);
            }
        }
        loaded.push(LoadedMessage {
            position: gi,
            role: cs[0].role.to_string(),
            seq_first: cs[0].seq,
            seq_last: cs[cs.len() - 1].seq,
            chunks: cs.len(),
            chunk_roles: roles,
            true_messages: msgs,
        });
    }
    let rows = log
        .chunks
        .iter()
        .enumerate()
        .map(|(i, c)| ChunkRow {
            seq: c.seq,
            key: match &c.loc {
                Loc::Row { key, .. } => key.to_string(),
                Loc::Line { line, .. } => format!("line {line}"),
            },
            role: c.role.to_string(),
            msg_idx: c.msg_idx,
            chunk_idx: c.chunk_idx,
            kind: c.kind.to_string(),
            preview: chunk_preview(conv, c),
            message: c.message,
            loaded_message: loaded_of[i],
        })
        .collect();
    (Some(rows), Some(loaded))
}

/// The detail of `conv`; `prompts` are the requests a trace recorded for
/// it, when it was checked against one.
pub fn of(conv: &Conversation, prompts: Vec<DiffRequest>) -> Detail {
    let pairing = Pairing::analyse(&conv.messages);
    let links = pairing
        .pairs
        .iter()
        .map(|p| {
            let from = pairing
                .window_end
                .get(&p.call.0)
                .copied()
                .unwrap_or(p.call.0);
            let between = if p.late {
                (from + 1..p.result.0)
                    .filter(|&i| !conv.messages[i].carries_results())
                    .collect()
            } else {
                Vec::new()
            };
            Link {
                call: p.call,
                result: p.result,
                late: p.late,
                between,
            }
        })
        .collect();
    let (chunks, loaded) = chunk_views(conv);
    Detail {
        messages: conv
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| MessageView {
                position: i,
                role: m.role.as_str(),
                loc: m.loc.clone(),
                stored_index: m.stored_index,
                parts: m.parts.iter().map(part_view).collect(),
            })
            .collect(),
        links,
        unanswered: pairing.unanswered.clone(),
        strays: pairing.strays.iter().map(|s| s.result).collect(),
        chunks,
        loaded,
        prompts,
    }
}
