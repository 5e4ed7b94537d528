//! What a store-against-trace comparison found: for every request a trace
//! recorded, how each stored message reached it (sent, merged, dropped…).
//! `crosscheck` computes it; the rules that compare a store with its trace
//! and the reports read it.

use serde::Serialize;

use super::{Conversation, Event, Loc, Message, PartKind, Role, TraceStep};
use crate::escape::preview;

/// What happened to a stored message on its way into a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    /// Sent faithfully.
    Same,
    /// A system prompt the app adds and the store does not keep.
    Injected,
    /// Several stored messages sent as one.
    Merged,
    /// Sent under another role.
    Relabelled,
    /// Sent without its tool calls or results.
    Stripped,
    /// Sent with other content.
    Changed,
    /// Stored, not sent.
    Dropped,
    /// Sent, not stored.
    NotStored,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Same => "same",
            Op::Injected => "injected",
            Op::Merged => "merged",
            Op::Relabelled => "re-labelled",
            Op::Stripped => "stripped",
            Op::Changed => "changed",
            Op::Dropped => "dropped",
            Op::NotStored => "not stored",
        }
    }

    pub fn diverges(self) -> bool {
        !matches!(self, Op::Same | Op::Injected)
    }
}

/// One row of an alignment.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub op: Op,
    /// Stored messages (positions in the store conversation).
    pub store: Vec<usize>,
    /// Position in the request's `messages`.
    pub sent: Option<usize>,
    /// Stored messages sent under another role than their own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub relabelled: Vec<usize>,
    /// Tool call ids (or result ids) stored but not sent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stripped: Vec<String>,
}

/// Which request, and how it went: shared by the comparison and the
/// side-by-side view.
#[derive(Debug, Clone, Serialize)]
pub struct RequestHead {
    /// The request's id (`<conversation>/turn-<n>/step-<k>`).
    pub request: String,
    pub turn: usize,
    pub step: usize,
    /// Where the request body is recorded.
    pub location: Loc,
    pub finish_reason: Option<String>,
    pub status: &'static str,
    pub truncated: bool,
    /// Messages sent.
    pub sent: usize,
    /// Stored messages the request covers (a prefix of the store).
    pub covered: usize,
}

/// One recorded request, aligned with the store.
#[derive(Debug)]
pub struct RequestComparison {
    pub head: RequestHead,
    pub rows: Vec<Row>,
    pub step_info: TraceStep,
    /// Reports the trace recorded before this request that say the app
    /// changed the history it loaded.
    pub reports: Vec<Event>,
    /// What was sent, message by message, in short (role, parts, preview):
    /// the prompts themselves are not kept.
    pub sent_messages: Vec<Sent>,
}

/// A sent message, in short.
#[derive(Debug, Clone)]
pub struct Sent {
    pub role: Role,
    pub parts: String,
    pub preview: String,
}

impl RequestComparison {
    pub fn divergent(&self) -> bool {
        self.rows.iter().any(|r| r.op.diverges())
    }
}

/// A stored conversation and every request its trace recorded.
#[derive(Debug)]
pub struct ConvComparison {
    pub conversation: String,
    pub messages: usize,
    pub requests: Vec<RequestComparison>,
}

/// Where stored messages are: `seq 1–6` (chunk stores), `lines 3–5`, or
/// `message 4`.
pub fn store_span(store: &Conversation, msgs: &[usize]) -> String {
    let (Some(&lo), Some(&hi)) = (msgs.iter().min(), msgs.iter().max()) else {
        return String::new();
    };
    let range = |a: u64, b: u64, one: &str, many: &str| {
        if a == b {
            format!("{one} {a}")
        } else {
            format!("{many} {a}–{b}")
        }
    };
    if let Some(log) = &store.chunks {
        let seqs: Vec<u64> = log
            .chunks
            .iter()
            .filter(|c| c.message >= lo && c.message <= hi)
            .map(|c| c.seq)
            .collect();
        if let (Some(a), Some(b)) = (seqs.iter().min(), seqs.iter().max()) {
            return range(*a, *b, "seq", "seq");
        }
    }
    let lines: Vec<u64> = (lo..=hi)
        .filter_map(|i| store.messages.get(i))
        .flat_map(|m| m.loc.line().into_iter().chain(m.last_line()))
        .collect();
    if let (Some(a), Some(b)) = (lines.iter().min(), lines.iter().max()) {
        return range(*a, *b, "line", "lines");
    }
    range(lo as u64, hi as u64, "message", "messages")
}

/// Part types of a message, in order, deduplicated: `thinking, text, tool-call`.
pub fn part_types(m: &Message) -> String {
    let mut v: Vec<&str> = Vec::new();
    for p in &m.parts {
        let t = p.kind.type_name();
        if v.last() != Some(&t) {
            v.push(t);
        }
    }
    if v.is_empty() {
        "empty".to_string()
    } else {
        v.join(", ")
    }
}

/// A short preview of a message's content.
pub fn message_preview(m: &Message, max: usize) -> String {
    let mut out = String::new();
    for p in &m.parts {
        let piece = match &p.kind {
            PartKind::Text { text } | PartKind::Thinking { text } => text.to_string(),
            PartKind::ToolCall { name, .. } => format!("{name}(…)"),
            PartKind::ToolResult { content, .. } => content.to_string(),
            PartKind::Other { kind } => format!("[{kind}]"),
        };
        if piece.trim().is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&piece);
        if out.len() > max * 4 {
            break;
        }
    }
    preview(&out, max)
}

/// Tool call ids as a list of code spans.
pub fn ids(v: &[String]) -> String {
    v.iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
