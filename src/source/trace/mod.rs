//! Trace sources: what a tracing store recorded as really sent to the
//! provider. Every recorded request becomes one [`Conversation`] whose
//! messages are the prompt as sent and whose [`TraceStep`] holds the rest
//! (finish reason, status, where the span closed). Requests are grouped by
//! the conversation the trace files them under, so a store can be compared
//! with the prompts built from it (see `crosscheck`).
//!
//! One module per format: dispatch's `traces.db`, Arize Phoenix's
//! `phoenix.db`, OTLP JSON Lines. The formats share the message shapes in
//! [`messages`].

use std::path::Path;
use std::sync::Arc;

use super::Source;
use crate::error::{Error, Result};
use crate::model::{Conversation, CorruptRecord, Loc, SourceInfo};

pub mod dispatch;
pub mod messages;
pub mod otlp;
pub mod phoenix;

/// Something a trace recorded about a conversation besides its requests:
/// dispatch's `reconcile.repair` reports.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Event {
    pub name: String,
    #[serde(flatten)]
    pub loc: Loc,
    /// The turn it was recorded in, if any.
    pub turn: Option<String>,
    /// How many of the conversation's requests started before it.
    pub before_request: usize,
    /// Its attributes, as recorded (scalars as JSON text).
    pub attributes: Vec<(String, String)>,
    pub timestamp: Option<String>,
}

impl Event {
    /// `droppedEmptyMessages 1, repairedCount 0`: the attributes that say
    /// something was changed, or all of them when none did.
    pub fn summary(&self) -> String {
        let changed: Vec<String> = self
            .attributes
            .iter()
            .filter(|(_, v)| v.parse::<f64>().is_ok_and(|n| n != 0.0))
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        if !changed.is_empty() {
            return changed.join(", ");
        }
        self.attributes
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether the report says the app changed the history it loaded.
    pub fn changed_history(&self) -> bool {
        self.attributes
            .iter()
            .any(|(_, v)| v.parse::<f64>().is_ok_and(|n| n != 0.0))
    }
}

/// One conversation of a trace, opened: how many requests it recorded
/// (read them with [`TraceSource::request`]) and its other reports.
#[derive(Debug)]
pub struct Group {
    pub id: String,
    pub requests: usize,
    pub events: Vec<Event>,
}

/// A trace format.
pub trait Backend: Send {
    fn info(&self) -> Arc<SourceInfo>;
    /// Conversation ids, in the order the trace first records them.
    fn groups(&self) -> &[String];
    /// Open one conversation: index its requests, read its events.
    fn group(&mut self, id: &str) -> Result<Group>;
    /// Read the `index`-th request of the conversation last opened. One
    /// request at a time: memory holds one prompt, not the conversation's
    /// every prompt.
    fn request(&mut self, index: usize) -> Result<Conversation>;
    /// Records that belong to no conversation because they do not parse.
    fn stray(&mut self) -> Vec<CorruptRecord> {
        Vec::new()
    }
}

/// A trace as a stream of recorded requests, with access by conversation
/// for cross-checks. Streaming (`Source`) and access by conversation both
/// move the same cursor: use one or the other.
pub struct TraceSource {
    backend: Box<dyn Backend>,
    next_group: usize,
    /// The requests of the open conversation: (next, count).
    cursor: Option<(usize, usize)>,
    stray_done: bool,
}

impl TraceSource {
    pub fn new(backend: Box<dyn Backend>) -> Self {
        TraceSource {
            backend,
            next_group: 0,
            cursor: None,
            stray_done: false,
        }
    }

    pub fn groups(&self) -> Vec<String> {
        self.backend.groups().to_vec()
    }

    pub fn has_group(&self, id: &str) -> bool {
        self.backend.groups().iter().any(|g| g == id)
    }

    /// Open a conversation; then read its requests with [`Self::request`].
    pub fn group(&mut self, id: &str) -> Result<Group> {
        self.cursor = None;
        self.backend.group(id)
    }

    /// The `index`-th request of the conversation last opened.
    pub fn request(&mut self, index: usize) -> Result<Conversation> {
        self.backend.request(index)
    }
}

impl Source for TraceSource {
    fn info(&self) -> Arc<SourceInfo> {
        self.backend.info()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        loop {
            if let Some((next, count)) = self.cursor
                && next < count
            {
                self.cursor = Some((next + 1, count));
                return Some(self.backend.request(next));
            }
            if !self.stray_done {
                self.stray_done = true;
                let stray = self.backend.stray();
                if !stray.is_empty() {
                    let info = self.backend.info();
                    let mut c = Conversation::new(info.path.display().to_string(), info);
                    c.corrupt = stray;
                    return Some(Ok(c));
                }
            }
            let id = self.backend.groups().get(self.next_group)?.clone();
            self.next_group += 1;
            match self.backend.group(&id) {
                Ok(g) => self.cursor = Some((0, g.requests)),
                Err(e) => return Some(Err(e)),
            }
        }
    }

    fn as_trace(&mut self) -> Option<&mut TraceSource> {
        Some(self)
    }
}

/// Recognise a trace among SQLite databases. `Ok(None)`: not a trace.
pub fn open_sqlite(path: &Path, snap: super::sqlite::Snapshot) -> Result<Option<TraceSource>> {
    let tables = super::sqlite::tables(&snap.conn)
        .map_err(|e| Error::input(path, super::sqlite::cause(&e)))?;
    let has = |t: &str| tables.iter().any(|x| x == t);
    if has("records") && has("bodies") {
        return Ok(Some(TraceSource::new(Box::new(dispatch::open(
            path, snap,
        )?))));
    }
    if has("spans") && has("traces") {
        return Ok(Some(TraceSource::new(Box::new(phoenix::open(path, snap)?))));
    }
    Ok(None)
}

/// The id of one recorded request: `<conversation>/turn-<n>/step-<k>`.
pub fn request_id(conversation: &str, turn: usize, step: usize) -> String {
    format!("{conversation}/turn-{turn}/step-{step}")
}

/// What `--conversation ID` selects in a trace: a conversation, or one
/// request of it (`<conversation>/turn-<n>/step-<k>`, as [`request_id`]
/// writes it). Returns (conversation, request).
pub fn selection(id: Option<&str>) -> (Option<&str>, Option<&str>) {
    match id {
        Some(id) => match id.rsplit_once("/turn-") {
            Some((conv, rest)) if rest.contains("/step-") => (Some(conv), Some(id)),
            _ => (Some(id), None),
        },
        None => (None, None),
    }
}

/// Normalise a provider's raw finish reason to the OpenTelemetry GenAI
/// vocabulary: `tool_calls` (OpenAI), `tool_use` (Anthropic),
/// `function_call` → `tool_call`; `end_turn`, `STOP` → `stop`;
/// `max_tokens`, `MAX_TOKENS` → `length`; `SAFETY` → `content_filter`.
/// Unknown values pass through, lowercased.
pub fn normalise_finish(raw: &str) -> String {
    let lower = raw.trim().to_ascii_lowercase();
    match lower.as_str() {
        "tool_calls" | "tool_use" | "function_call" | "tool_call" | "tool-calls" => "tool_call",
        "stop" | "end_turn" | "stop_sequence" | "eos" | "finish_reason_stop" => "stop",
        "length" | "max_tokens" | "max_output_tokens" | "model_length" => "length",
        "content_filter" | "safety" | "refusal" | "recitation" | "blocklist" => "content_filter",
        "error" => "error",
        _ => return lower,
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn finish_reasons_are_normalised() {
        use super::normalise_finish as n;
        assert_eq!(n("tool_calls"), "tool_call");
        assert_eq!(n("tool_use"), "tool_call");
        assert_eq!(n("end_turn"), "stop");
        assert_eq!(n("STOP"), "stop");
        assert_eq!(n("MAX_TOKENS"), "length");
        assert_eq!(n("weird"), "weird");
    }
}

#[cfg(test)]
mod selection_tests {
    use super::*;

    #[test]
    fn a_request_id_selects_its_conversation_and_itself() {
        let id = request_id("a/turn-x", 3, 1);
        assert_eq!(selection(Some(&id)), (Some("a/turn-x"), Some(id.as_str())));
        assert_eq!(selection(Some("conv")), (Some("conv"), None));
        assert_eq!(selection(None), (None, None));
    }
}
