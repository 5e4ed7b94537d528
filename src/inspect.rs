//! `inspect`: what a source holds, conversation by conversation, as plain
//! data for the inspect report.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::escape::preview;
use crate::finding::Severity;
use crate::lint::Stats;
use crate::model::{Conversation, Loc, PartKind, SourceInfo};
use crate::rules::Selection;
use crate::source::{self, Limits};

/// Characters of text shown per timeline row.
pub const PREVIEW: usize = 48;

#[derive(Debug, Serialize)]
pub struct Row {
    pub position: usize,
    #[serde(flatten)]
    pub loc: Loc,
    pub role: &'static str,
    pub parts: Vec<String>,
    pub tool_ids: Vec<String>,
    pub preview: String,
    /// The other lines the message is built from, in order (a reply
    /// written as several records, results collected from side
    /// branches); absent when it is built from its own line alone.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub record_lines: Vec<u64>,
}

pub use crate::detail::{ChunkRow, LoadedMessage};

#[derive(Debug, Serialize)]
pub struct ConvView {
    pub id: String,
    #[serde(flatten)]
    pub stats: Stats,
    pub errors: usize,
    pub warnings: usize,
    pub findings: Vec<String>,
    /// Stored chunks (chunk stores only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_count: Option<usize>,
    /// How many messages the app's loader builds: differs from `messages`
    /// when an index-grouping loader merges chunks of several messages.
    pub loaded_messages: usize,
    /// The true messages (empty in a listing of many conversations).
    pub timeline: Vec<Row>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunks: Option<Vec<ChunkRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loaded: Option<Vec<LoadedMessage>>,
    /// What an HTML report draws: the findings in full and every message
    /// with its parts and call/result links (with [`Depth::Flagged`], for
    /// each conversation with findings even in a listing).
    #[serde(skip)]
    pub detail: Option<Box<(Vec<crate::finding::Finding>, crate::detail::Detail)>>,
}

impl ConvView {
    /// Drop the per-message detail, keeping the counts.
    fn summarise(&mut self, depth: Depth, keep: bool) {
        if depth == Depth::Timeline || self.errors + self.warnings == 0 || !keep {
            self.detail = None;
        }
        self.timeline = Vec::new();
        self.chunks = None;
        self.loaded = None;
    }
}

#[derive(Debug, Serialize)]
pub struct Inspection {
    pub path: String,
    pub format: crate::model::Format,
    pub dialect: crate::model::Dialect,
    /// Whether per-message detail is shown (one conversation, or one was
    /// asked for); a listing of many conversations keeps only counts.
    pub detail: bool,
    pub conversations: Vec<ConvView>,
    /// For a trace: its conversations, turns and recorded requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Vec<TraceConvView>>,
    #[serde(skip)]
    pub info: Option<Arc<SourceInfo>>,
}

/// One recorded request of a trace.
#[derive(Debug, Serialize)]
pub struct RequestView {
    pub id: String,
    pub turn: usize,
    pub step: usize,
    /// The turn's id as the trace records it.
    pub turn_id: Option<String>,
    pub span: String,
    /// Where the request is recorded.
    pub location: Loc,
    pub started: Option<String>,
    pub model: Option<String>,
    pub messages: usize,
    pub tools: Option<usize>,
    pub bytes: Option<u64>,
    pub finish_reason: Option<String>,
    pub raw_finish_reason: Option<String>,
    pub status: &'static str,
    pub error: Option<String>,
    pub retries: usize,
    pub truncated: bool,
    pub errors: usize,
    pub warnings: usize,
    pub findings: Vec<String>,
    /// The prompt as sent (with `--conversation`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prompt: Vec<Row>,
    /// The recorded answer, previewed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

/// One conversation of a trace.
#[derive(Debug, Serialize)]
pub struct TraceConvView {
    pub id: String,
    pub turns: usize,
    pub requests: Vec<RequestView>,
    /// Other reports the trace recorded (dispatch `reconcile.repair`).
    pub reports: Vec<crate::format::trace::Event>,
}

fn row(pos: usize, m: &crate::model::Message) -> Row {
    let mut parts = Vec::new();
    let mut ids = Vec::new();
    let mut text = String::new();
    for p in &m.parts {
        let name = p.kind.type_name().to_string();
        if parts.last() != Some(&name) {
            parts.push(name);
        }
        match &p.kind {
            PartKind::ToolCall { id, name, .. } => {
                ids.push(id.clone());
                if text.is_empty() {
                    text = format!("{name}(…)");
                }
            }
            PartKind::ToolResult {
                call_id, content, ..
            } => {
                ids.push(call_id.clone());
                if text.is_empty() {
                    text = content.to_string();
                }
            }
            PartKind::Text { text: t }
                if !t.trim().is_empty() && (text.is_empty() || text.ends_with("(…)")) =>
            {
                text = t.to_string();
            }
            PartKind::Thinking { text: t } if text.is_empty() && !t.trim().is_empty() => {
                text = format!("[thinking] {t}");
            }
            _ => {}
        }
    }
    // A timeline holds a row per message of the conversation: no spare
    // room (a `Vec`'s first allocation holds four names).
    parts.shrink_to_fit();
    ids.shrink_to_fit();
    let own = m.loc.line();
    let mut record_lines: Vec<u64> = m
        .parts
        .iter()
        .filter_map(|p| p.loc.line())
        .filter(|l| Some(*l) != own)
        .collect();
    record_lines.sort_unstable();
    record_lines.dedup();
    Row {
        position: pos,
        loc: m.loc.clone(),
        role: m.role.as_str(),
        parts,
        tool_ids: ids,
        preview: preview(&text, PREVIEW),
        record_lines,
    }
}

/// How much of each conversation `inspect` keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// The timeline rows of one conversation; counts only in a listing.
    Timeline,
    /// Also the full [`crate::detail::Detail`] and findings (the HTML
    /// report): of one conversation, or of each one with findings in a
    /// listing.
    Flagged,
}

pub fn view(conv: &Conversation, depth: Depth) -> ConvView {
    let findings = crate::lint::check(conv, &Selection::default());
    let (chunks, loaded) = crate::detail::chunk_views(conv);
    ConvView {
        loaded_messages: loaded.as_ref().map_or(conv.messages.len(), Vec::len),
        chunk_count: conv.chunks.as_ref().map(|c| c.chunks.len()),
        chunks,
        loaded,
        id: conv.id.clone(),
        stats: Stats::of(conv),
        errors: Severity::Error.count(&findings),
        warnings: Severity::Warning.count(&findings),
        findings: findings
            .iter()
            .map(|f| {
                let at = f.line().map(|l| format!("line {l}: ")).unwrap_or_default();
                format!("{}: {at}{}", f.rule, f.summary)
            })
            .collect(),
        timeline: conv
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| row(i, m))
            .collect(),
        detail: (depth == Depth::Flagged)
            .then(|| Box::new((findings, crate::detail::of(conv, Vec::new())))),
    }
}

fn request_view(conv: &Conversation, detail: bool) -> RequestView {
    let t = conv.trace.as_deref().expect("a recorded request");
    let findings = crate::lint::check(conv, &Selection::default());
    let answer: String = t
        .output
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match &p.kind {
            PartKind::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ");
    let tool_calls: Vec<String> = t
        .output
        .iter()
        .flat_map(|m| m.tool_calls())
        .map(|(_, _, name, _)| format!("{name}(…)"))
        .collect();
    let answer = if answer.trim().is_empty() {
        tool_calls.join(" ")
    } else {
        answer
    };
    RequestView {
        id: conv.id.clone(),
        turn: t.turn_index,
        step: t.step_index,
        turn_id: t.turn.clone(),
        span: t.span.clone(),
        location: t.request.clone(),
        started: t.started.clone(),
        model: t.model.clone(),
        messages: conv.messages.len(),
        tools: t.tools,
        bytes: t.request_bytes,
        finish_reason: t.finish_reason.clone(),
        raw_finish_reason: t.raw_finish_reason.clone(),
        status: t.status.as_str(),
        error: t.error.clone(),
        retries: t.retries,
        truncated: t.truncated(),
        errors: Severity::Error.count(&findings),
        warnings: Severity::Warning.count(&findings),
        findings: findings
            .iter()
            .map(|f| format!("{}: {}", f.rule, f.summary))
            .collect(),
        prompt: if detail {
            conv.messages
                .iter()
                .enumerate()
                .map(|(i, m)| row(i, m))
                .collect()
        } else {
            Vec::new()
        },
        answer: (!answer.trim().is_empty()).then(|| preview(&answer, PREVIEW)),
    }
}

/// `inspect` of a trace: its conversations and every recorded request;
/// with `conversation` (a conversation or one request id), each prompt.
fn inspect_trace(
    path: &Path,
    trace: &mut crate::format::trace::TraceSource,
    conversation: Option<&str>,
) -> Result<Inspection> {
    let info = source::Source::info(trace);
    let mut out = Vec::new();
    let (want_conv, want_req) = crate::format::trace::selection(conversation);
    for gid in trace.groups() {
        if want_conv.is_some_and(|w| w != gid) {
            continue;
        }
        let g = trace.group(&gid)?;
        let mut turns: Vec<usize> = Vec::new();
        let mut requests = Vec::new();
        for i in 0..g.requests {
            let r = trace.request(i)?;
            if want_req.is_some_and(|w| w != r.id) {
                continue;
            }
            let v = request_view(&r, conversation.is_some());
            if !turns.contains(&v.turn) {
                turns.push(v.turn);
            }
            requests.push(v);
        }
        out.push(TraceConvView {
            id: g.id,
            turns: turns.len(),
            requests,
            reports: g.events,
        });
    }
    if let Some(want) = conversation
        && out.iter().all(|c| c.requests.is_empty())
    {
        return Err(Error::input(path, format!("no conversation `{want}`")));
    }
    Ok(Inspection {
        path: info.path.display().to_string(),
        format: info.format,
        dialect: info.dialect,
        detail: conversation.is_some(),
        conversations: Vec::new(),
        trace: Some(out),
        info: Some(info),
    })
}

pub fn inspect(
    path: &Path,
    conversation: Option<&str>,
    limits: Limits,
    mapping: Option<&source::Mapping>,
) -> Result<Inspection> {
    inspect_with(path, conversation, limits, mapping, Depth::Timeline)
}

/// [`inspect`], keeping `depth` of each conversation.
pub fn inspect_with(
    path: &Path,
    conversation: Option<&str>,
    limits: Limits,
    mapping: Option<&source::Mapping>,
    depth: Depth,
) -> Result<Inspection> {
    let mut src = match crate::format::open_any_with(path, limits, mapping)? {
        crate::format::Opened::Trace(mut trace) => {
            return inspect_trace(path, &mut trace, conversation);
        }
        crate::format::Opened::History(src) => src,
    };
    let mut convs = Vec::new();
    while let Some(conv) = src.next_conversation() {
        let conv = conv?;
        if conversation.is_some_and(|want| want != conv.id) {
            continue;
        }
        convs.push(view(&conv, depth));
        // Many conversations: keep counts only (and, for a report that
        // draws them, the detail of those with findings).
        if conversation.is_none() && convs.len() > 1 {
            let mut kept = 0;
            for c in convs.iter_mut() {
                let keep = kept < crate::lint::DETAIL_LIMIT;
                c.summarise(depth, keep);
                kept += usize::from(c.detail.is_some());
            }
        }
    }
    if let Some(want) = conversation
        && convs.is_empty()
    {
        return Err(Error::input(path, format!("no conversation `{want}`")));
    }
    let info = src.info();
    Ok(Inspection {
        path: info.path.display().to_string(),
        format: info.format,
        dialect: info.dialect,
        detail: conversation.is_some() || convs.len() == 1,
        conversations: convs,
        trace: None,
        info: Some(info),
    })
}
