//! The side-by-side view of `chatfsck diff STORE TRACE`: every recorded
//! request beside the stored history it was built from.

use std::path::Path;

use serde::Serialize;

use super::compare;
use crate::error::Result;
use crate::escape::preview;
use crate::format::trace::TraceSource;
use crate::format::{self, Opened};
use crate::model::Conversation;
use crate::model::compare::{
    Op, RequestComparison, RequestHead, ids, message_preview, part_types, store_span,
};

// ---------------------------------------------------------------------------
// The side-by-side view (`chatfsck diff STORE TRACE`)

/// Stored messages, as a table shows them.
#[derive(Debug, Serialize)]
pub struct StoreSide {
    /// Positions of the stored messages.
    pub messages: Vec<usize>,
    /// `seq 1–3` (chunk stores) or `line 4`.
    pub at: String,
    pub roles: Vec<String>,
    pub parts: String,
    pub preview: String,
}

impl StoreSide {
    /// `3`, or `0–3`.
    pub fn position(&self) -> String {
        match (self.messages.first(), self.messages.last()) {
            (Some(a), Some(b)) if a != b => format!("{a}–{b}"),
            (Some(a), _) => a.to_string(),
            _ => String::new(),
        }
    }
}

/// A sent message, as a table shows it.
#[derive(Debug, Serialize)]
pub struct SentSide {
    /// Index in the request's `messages`.
    pub index: usize,
    pub role: String,
    pub parts: String,
    pub preview: String,
}

#[derive(Debug, Serialize)]
pub struct DiffRow {
    pub op: Op,
    pub store: Option<StoreSide>,
    pub sent: Option<SentSide>,
    /// What the op means here: roles sent under, ids stripped.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

#[derive(Debug, Serialize)]
pub struct DiffRequest {
    #[serde(flatten)]
    pub head: RequestHead,
    pub divergent: bool,
    pub rows: Vec<DiffRow>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reports: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct DiffConv {
    pub conversation: String,
    pub stored_messages: usize,
    pub requests: Vec<DiffRequest>,
}

#[derive(Debug, Serialize)]
pub struct DiffDoc {
    pub store: String,
    pub store_format: String,
    pub trace: String,
    pub trace_format: String,
    pub conversations: Vec<DiffConv>,
}

impl DiffDoc {
    pub fn divergent(&self) -> bool {
        self.conversations
            .iter()
            .flat_map(|c| &c.requests)
            .any(|r| r.divergent)
    }
}

fn store_side(store: &Conversation, msgs: &[usize]) -> Option<StoreSide> {
    if msgs.is_empty() {
        return None;
    }
    let mut roles: Vec<String> = Vec::new();
    let mut parts: Vec<String> = Vec::new();
    let mut previews: Vec<String> = Vec::new();
    for &i in msgs {
        let m = &store.messages[i];
        if !roles.iter().any(|r| r == m.role.as_str()) {
            roles.push(m.role.as_str().to_string());
        }
        parts.push(part_types(m));
        previews.push(message_preview(m, 40));
    }
    Some(StoreSide {
        messages: msgs.to_vec(),
        at: store_span(store, msgs),
        roles,
        parts: parts.join(" | "),
        preview: preview(&previews.join(" | "), 60),
    })
}

fn sent_side(req: &RequestComparison, pos: usize) -> Option<SentSide> {
    let m = req.sent_messages.get(pos)?;
    Some(SentSide {
        index: pos,
        role: m.role.as_str().to_string(),
        parts: m.parts.clone(),
        preview: m.preview.clone(),
    })
}

/// One recorded request beside the stored history it was built from.
pub fn diff_request(store: &Conversation, req: &RequestComparison) -> DiffRequest {
    let rows = req
        .rows
        .iter()
        .map(|r| {
            let mut detail = Vec::new();
            if !r.relabelled.is_empty() {
                let sent_role = r
                    .sent
                    .and_then(|s| req.sent_messages.get(s))
                    .map(|m| m.role.as_str())
                    .unwrap_or("?");
                detail.push(format!(
                    "stored {} sent as `{sent_role}`",
                    r.relabelled
                        .iter()
                        .map(|i| format!("{i} (`{}`)", store.messages[*i].role))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if !r.stripped.is_empty() {
                detail.push(format!("not sent: {}", ids(&r.stripped)));
            }
            DiffRow {
                op: r.op,
                store: store_side(store, &r.store),
                sent: r.sent.and_then(|s| sent_side(req, s)),
                detail: detail.join("; "),
            }
        })
        .collect();
    DiffRequest {
        head: req.head.clone(),
        divergent: req.divergent(),
        rows,
        reports: req
            .reports
            .iter()
            .map(|e| format!("{}: {}", e.name, e.summary()))
            .collect(),
    }
}

/// Compare a store with a trace, conversation by conversation: every
/// recorded request beside the stored history it was built from.
/// `only` keeps one conversation, or one request of it.
pub fn diff(
    store_path: &Path,
    trace_path: &Path,
    mut trace: TraceSource,
    only: Option<&str>,
    limits: crate::source::Limits,
    mapping: Option<&crate::source::Mapping>,
) -> Result<DiffDoc> {
    let mut src = match format::open_any_with(store_path, limits, mapping)? {
        Opened::History(s) => s,
        Opened::Trace(_) => {
            return Err(crate::error::Error::input(
                store_path,
                "is a trace, not a conversation store (`chatfsck diff STORE TRACE` takes the store first)",
            ));
        }
    };
    let (want_conv, want_req) = format::trace::selection(only);
    let mut conversations = Vec::new();
    while let Some(conv) = src.next_conversation() {
        let conv = conv?;
        if want_conv.is_some_and(|w| w != conv.id) {
            continue;
        }
        let Some(cmp) = compare(&conv, &mut trace)? else {
            continue;
        };
        let requests: Vec<DiffRequest> = cmp
            .requests
            .iter()
            .filter(|r| want_req.is_none_or(|w| w == r.head.request))
            .map(|r| diff_request(&conv, r))
            .collect();
        if requests.is_empty() {
            continue;
        }
        conversations.push(DiffConv {
            conversation: conv.id.clone(),
            stored_messages: conv.messages.len(),
            requests,
        });
    }
    if conversations.is_empty() {
        let cause = match only {
            Some(id) => format!(
                "no conversation or request `{id}` that is both in the store and in {}",
                trace_path.display()
            ),
            None => format!(
                "no conversation of the store appears in {} (the trace records {})",
                trace_path.display(),
                trace
                    .groups()
                    .iter()
                    .take(5)
                    .map(|g| format!("`{g}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        return Err(crate::error::Error::input(store_path, cause));
    }
    let info = src.info();
    let tinfo = crate::source::Source::info(&trace);
    Ok(DiffDoc {
        store: store_path.display().to_string(),
        store_format: format!("{} ({})", info.format, info.dialect),
        trace: trace_path.display().to_string(),
        trace_format: format!("{} ({})", tinfo.format, tinfo.dialect),
        conversations,
    })
}
