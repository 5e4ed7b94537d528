//! The canonical conversation model every source produces and every rule reads.
//!
//! A forensic model: nothing is normalised away. Tool-call arguments keep their
//! raw text when it is not valid JSON, and every message and part carries the
//! location of the record it came from, so a finding can always point at evidence.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn parse(s: &str) -> Option<Role> {
        Some(match s {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// System-like roles that carry instructions rather than turns.
    pub fn is_instruction(self) -> bool {
        matches!(self, Role::System | Role::Developer)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a record lives in its store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Loc {
    /// A line of a text file: 1-based line number and the byte range of the
    /// line (without its newline).
    Line {
        line: u64,
        #[serde(rename = "byte_start")]
        start: u64,
        #[serde(rename = "byte_end")]
        end: u64,
    },
    /// A row of a database table, named by its key (or rowid).
    Row {
        table: Name,
        key: Arc<str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        rowid: Option<i64>,
    },
}

/// A name a store gives many records (a table's): a constant costs
/// nothing to copy, and a name read at run time is shared. Locations are
/// cloned for every chunk of a store, and sharing a constant through a
/// reference count cost more than the rest of the chunk's bookkeeping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Name {
    Static(&'static str),
    Shared(Arc<str>),
}

impl std::ops::Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            Name::Static(s) => s,
            Name::Shared(s) => s,
        }
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

impl Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

impl From<&'static str> for Name {
    fn from(s: &'static str) -> Name {
        Name::Static(s)
    }
}

impl From<Arc<str>> for Name {
    fn from(s: Arc<str>) -> Name {
        Name::Shared(s)
    }
}

impl From<String> for Name {
    fn from(s: String) -> Name {
        Name::Shared(Arc::from(s))
    }
}

/// Text read from a history: a slice of the buffer a conversation's
/// records were read into, or a string of its own (escapes decoded, other
/// sources). A million-chunk store holds half a gigabyte of text; sharing
/// the buffer spares a copy and an allocation per chunk. Dereferences to
/// `str`.
#[derive(Clone)]
pub struct Text(TextRepr);

#[derive(Clone)]
enum TextRepr {
    Own(String),
    Shared {
        buf: Arc<String>,
        start: usize,
        end: usize,
    },
}

impl Text {
    /// `buf[start..end]`, sharing `buf`; a copy if the range does not fall
    /// on character boundaries.
    pub fn shared(buf: &Arc<String>, start: usize, end: usize) -> Text {
        match buf.get(start..end) {
            Some(_) => Text(TextRepr::Shared {
                buf: buf.clone(),
                start,
                end,
            }),
            None => Text::from(String::from_utf8_lossy(&buf.as_bytes()[start..end]).into_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            TextRepr::Own(s) => s,
            TextRepr::Shared { buf, start, end } => &buf[*start..*end],
        }
    }
}

impl Default for Text {
    fn default() -> Text {
        Text(TextRepr::Own(String::new()))
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

impl PartialEq for Text {
    fn eq(&self, o: &Text) -> bool {
        self.as_str() == o.as_str()
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, o: &str) -> bool {
        self.as_str() == o
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, o: &&str) -> bool {
        self.as_str() == *o
    }
}

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_str().hash(h)
    }
}

impl Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text(TextRepr::Own(s))
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text(TextRepr::Own(s.to_string()))
    }
}

impl From<Text> for String {
    fn from(t: Text) -> String {
        match t.0 {
            TextRepr::Own(s) => s,
            TextRepr::Shared { .. } => t.as_str().to_string(),
        }
    }
}

impl Loc {
    pub fn line(&self) -> Option<u64> {
        match self {
            Loc::Line { line, .. } => Some(*line),
            Loc::Row { .. } => None,
        }
    }
}

/// Tool-call arguments, kept as the raw text the store holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arguments {
    /// The raw text: a JSON string's content (OpenAI) or the serialised input
    /// object (Anthropic) exactly as stored.
    pub raw: Text,
    pub encoding: ArgEncoding,
}

/// How a store encodes tool-call arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgEncoding {
    /// A JSON string whose content must be a JSON object (OpenAI
    /// `function.arguments`); `raw` is the decoded string content.
    JsonString,
    /// A JSON value that must be an object (Anthropic `input`); `raw` is the
    /// value's JSON text, cut out of a record that parsed (so it is JSON).
    JsonValue,
    /// Free-form text (Codex `custom_tool_call.input`): never checked as JSON.
    Freeform,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum PartKind {
    Text {
        text: Text,
    },
    Thinking {
        text: Text,
    },
    ToolCall {
        id: String,
        name: String,
        arguments: Arguments,
    },
    ToolResult {
        call_id: String,
        content: Text,
        is_error: Option<bool>,
    },
    /// Anything else (images, documents, redacted thinking, error chunks):
    /// kept by kind so counts and previews stay honest.
    Other {
        kind: String,
    },
}

impl PartKind {
    /// Short type name used in tables and JSON.
    pub fn type_name(&self) -> &str {
        match self {
            PartKind::Text { .. } => "text",
            PartKind::Thinking { .. } => "thinking",
            PartKind::ToolCall { .. } => "tool-call",
            PartKind::ToolResult { .. } => "tool-result",
            PartKind::Other { kind } => kind,
        }
    }
}

/// Where inside its record a part sits, for writers that edit the record:
/// `Item("tool_calls", 2)` is `tool_calls[2]`, `Item("content", 0)` the first
/// content block, `Whole("content")` a plain string content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Whole(&'static str),
    Item(&'static str, usize),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub kind: PartKind,
    /// The record this part was read from.
    pub loc: Loc,
    /// Where in the record, when the source knows.
    pub slot: Option<Slot>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
    /// The first record of the message.
    pub loc: Loc,
    /// Message index as the store recorded it, where it records one.
    pub stored_index: Option<i64>,
    /// The stored finish reason, where the store keeps one.
    pub finish_reason: Option<String>,
}

impl Message {
    pub fn new(role: Role, loc: Loc) -> Self {
        Message {
            role,
            parts: Vec::new(),
            loc,
            stored_index: None,
            finish_reason: None,
        }
    }

    pub fn push(&mut self, kind: PartKind, loc: Loc) {
        self.parts.push(Part {
            kind,
            loc,
            slot: None,
        });
    }

    pub fn push_at(&mut self, kind: PartKind, loc: Loc, slot: Slot) {
        self.parts.push(Part {
            kind,
            loc,
            slot: Some(slot),
        });
    }

    pub fn tool_calls(&self) -> impl Iterator<Item = (usize, &str, &str, &Arguments)> {
        self.parts
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match &p.kind {
                PartKind::ToolCall {
                    id,
                    name,
                    arguments,
                } => Some((i, id.as_str(), name.as_str(), arguments)),
                _ => None,
            })
    }

    pub fn tool_results(&self) -> impl Iterator<Item = (usize, &str, &str, Option<bool>)> {
        self.parts
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match &p.kind {
                PartKind::ToolResult {
                    call_id,
                    content,
                    is_error,
                } => Some((i, call_id.as_str(), content.as_str(), *is_error)),
                _ => None,
            })
    }

    pub fn has_tool_calls(&self) -> bool {
        self.tool_calls().next().is_some()
    }

    /// A message that carries tool results back to the model: a `tool`
    /// message, or a `user` message holding `tool_result` blocks (Anthropic).
    pub fn carries_results(&self) -> bool {
        self.role == Role::Tool || self.tool_results().next().is_some()
    }

    /// Last line this message was read from (messages may span records).
    pub fn last_line(&self) -> Option<u64> {
        self.parts
            .iter()
            .filter_map(|p| p.loc.line())
            .chain(self.loc.line())
            .max()
    }

    /// The location of a part, falling back to the message's own.
    pub fn part_loc(&self, part: usize) -> &Loc {
        self.parts.get(part).map(|p| &p.loc).unwrap_or(&self.loc)
    }
}

/// What a source recognised a file or database as.
#[derive(Debug, Clone, Serialize)]
pub struct SourceInfo {
    /// The path as the user named it (relative paths stay relative).
    pub path: PathBuf,
    /// Storage format: `jsonl`, `json`, `sqlite-kv`, …
    pub format: &'static str,
    /// Dialect inside the format: `openai`, `kimi`, `anthropic`, `claude-code`, `codex`, `dispatch`, …
    pub dialect: &'static str,
}

/// A line or row that could not be read as a record of its format.
#[derive(Debug, Clone)]
pub struct CorruptRecord {
    pub loc: Loc,
    /// Why it does not parse, in one line.
    pub reason: String,
    /// The first bytes of the record, lossily decoded, for evidence.
    pub excerpt: String,
    /// True when this is the last record of the file and has no terminator:
    /// the classic torn write at a crash.
    pub torn_tail: bool,
}

impl CorruptRecord {
    /// Bytes of a record kept as evidence in a finding.
    pub const EXCERPT: usize = 240;

    /// A corrupt record with the first [`Self::EXCERPT`] bytes of its raw
    /// text as evidence, cut before a character that would be split (a
    /// torn multi-byte character at the cut would read as U+FFFD).
    pub fn new(loc: Loc, reason: String, raw: &[u8], torn_tail: bool) -> CorruptRecord {
        let mut cut = raw.len().min(Self::EXCERPT);
        if let Err(e) = std::str::from_utf8(&raw[..cut])
            && e.error_len().is_none()
        {
            cut = e.valid_up_to();
        }
        CorruptRecord {
            loc,
            reason,
            excerpt: String::from_utf8_lossy(&raw[..cut]).into_owned(),
            torn_tail,
        }
    }
}

/// A conversation: the unit every rule checks.
#[derive(Debug, Clone)]
pub struct Conversation {
    pub id: String,
    pub source: Arc<SourceInfo>,
    pub messages: Vec<Message>,
    pub corrupt: Vec<CorruptRecord>,
    /// Records that are valid but are not messages (meta lines, progress
    /// records, snapshots): counted, never checked, always preserved.
    pub meta_records: u64,
    /// The raw chunk view, for chunk stores.
    pub chunks: Option<ChunkLog>,
    /// The row view, for message tables: where the rows live, how they are
    /// indexed, and the tool execution records kept beside them.
    pub table: Option<MessageTable>,
    /// For a request recorded in a trace: what the trace says about the
    /// call that sent `messages`.
    pub trace: Option<Box<TraceStep>>,
}

impl Conversation {
    pub fn new(id: impl Into<String>, source: Arc<SourceInfo>) -> Self {
        Conversation {
            id: id.into(),
            source,
            messages: Vec::new(),
            corrupt: Vec::new(),
            meta_records: 0,
            chunks: None,
            table: None,
            trace: None,
        }
    }
}

/// One stored chunk of a chunk store (dispatch's KV rows): the raw view
/// that index-based loaders see, beside the true messages.
#[derive(Debug, Clone)]
pub struct Chunk {
    pub seq: u64,
    pub loc: Loc,
    /// The stored role.
    pub role: Role,
    pub msg_idx: i64,
    pub chunk_idx: i64,
    /// The chunk's `type`.
    pub kind: std::borrow::Cow<'static, str>,
    /// What evidence tables show beside the content: the tool name of a
    /// result, the message of an error chunk.
    pub detail: Option<String>,
    /// The true message this chunk belongs to (position in `messages`).
    pub message: usize,
    /// The part of that message it became.
    pub part: usize,
}

/// The raw chunk log of a conversation, in seq order.
#[derive(Debug, Clone, Default)]
pub struct ChunkLog {
    pub chunks: Vec<Chunk>,
    /// The conversation's `:seq` counter row (location, value) if present.
    pub seq_counter: Option<(Loc, String)>,
    /// Keys seen more than once for the same seq (differently formatted).
    pub repeated: Vec<(u64, Loc)>,
    /// The buffer the conversation's texts share, for the reader to fill
    /// again once the conversation is dropped (see `source::kv`).
    pub buffer: Option<Arc<String>>,
}

impl ChunkLog {
    /// The messages an index-grouping loader (dispatch's `load()`) builds:
    /// a new message starts only where `msgIdx` changes. Returns index
    /// ranges into `chunks`.
    pub fn loaded_groups(&self) -> Vec<std::ops::Range<usize>> {
        let mut out = Vec::new();
        let mut start = 0;
        for i in 1..=self.chunks.len() {
            if i == self.chunks.len() || self.chunks[i].msg_idx != self.chunks[i - 1].msg_idx {
                if i > start {
                    out.push(start..i);
                }
                start = i;
            }
        }
        out
    }
}

/// A message table (gbrain's `subagent_messages`, or a table named by a
/// mapping): one row per message, `stored_index` on every message, and the
/// conversation's tool execution records where the store keeps them.
#[derive(Debug, Clone)]
pub struct MessageTable {
    pub table: Arc<str>,
    /// The column that names the conversation (`job_id`).
    pub conversation_column: Arc<str>,
    /// The column that orders messages (`message_idx`).
    pub index_column: Arc<str>,
    /// The conversation's key value, as text (`42`).
    pub conversation_key: String,
    /// The first index the app writes (gbrain: 0), when it is known.
    pub first_index: Option<i64>,
    /// The execution records, or `None` when the store keeps none.
    pub executions: Option<Executions>,
}

impl MessageTable {
    /// The key that names a row: `job_id=42, message_idx=3`.
    pub fn key(&self, index: i64) -> String {
        format!(
            "{}={}, {}={index}",
            self.conversation_column, self.conversation_key, self.index_column
        )
    }

    /// The location a message at `index` has (or would have) in the table.
    pub fn loc(&self, index: i64, rowid: Option<i64>) -> Loc {
        Loc::Row {
            table: Name::Shared(self.table.clone()),
            key: Arc::from(self.key(index)),
            rowid,
        }
    }
}

/// The tool execution records of one conversation (gbrain's
/// `subagent_tool_executions`), in (message index, ordinal, id) order.
#[derive(Debug, Clone)]
pub struct Executions {
    pub table: Arc<str>,
    pub rows: Vec<Execution>,
}

impl Executions {
    /// The execution that answers tool call `id` made in the message at
    /// `index`: a settled one first (the latest), else the latest of any
    /// status. Rows of the call's own message win over same-id rows of other
    /// turns (provider ids may repeat across turns).
    pub fn for_call(&self, id: &str, index: Option<i64>) -> Option<&Execution> {
        let same_id = || self.rows.iter().filter(move |e| e.tool_use_id == id);
        let own: Vec<&Execution> = same_id()
            .filter(|e| index.is_some_and(|i| e.message_index == i))
            .collect();
        let pool: Vec<&Execution> = if own.is_empty() {
            same_id().collect()
        } else {
            own
        };
        pool.iter()
            .rev()
            .find(|e| e.status.is_settled())
            .or_else(|| pool.last())
            .copied()
    }
}

/// The state of a tool execution record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecStatus {
    Pending,
    Complete,
    Failed,
    /// A value outside the schema's CHECK constraint, kept as stored.
    Other(String),
}

impl ExecStatus {
    pub fn parse(s: &str) -> ExecStatus {
        match s {
            "pending" => ExecStatus::Pending,
            "complete" => ExecStatus::Complete,
            "failed" => ExecStatus::Failed,
            other => ExecStatus::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            ExecStatus::Pending => "pending",
            ExecStatus::Complete => "complete",
            ExecStatus::Failed => "failed",
            ExecStatus::Other(s) => s,
        }
    }

    /// `complete` or `failed`: the tool ran to an end and its outcome is stored.
    pub fn is_settled(&self) -> bool {
        matches!(self, ExecStatus::Complete | ExecStatus::Failed)
    }
}

/// One tool execution record.
#[derive(Debug, Clone)]
pub struct Execution {
    pub loc: Loc,
    pub id: Option<i64>,
    /// Index of the message that holds the call.
    pub message_index: i64,
    pub ordinal: Option<i64>,
    pub tool_use_id: String,
    pub tool_name: String,
    pub status: ExecStatus,
    /// The stored output, as JSON text (`complete`).
    pub output: Option<String>,
    /// The stored error text (`failed`).
    pub error: Option<String>,
}

impl Execution {
    /// The tool result a settled execution gives back — `complete`: its
    /// output (a JSON string as its text, any other JSON value normalised);
    /// `failed`: its error, as an error — or `None` while it is unsettled.
    /// The one place that decides what is recoverable, for the rule that
    /// reports a gap and the repair that fills it.
    pub fn result(&self) -> Option<(String, bool)> {
        match self.status {
            ExecStatus::Complete => Some((output_text(self.output.as_deref()), false)),
            ExecStatus::Failed => Some((
                self.error
                    .clone()
                    .unwrap_or_else(|| "(the execution failed; no error text was stored)".into()),
                true,
            )),
            ExecStatus::Pending | ExecStatus::Other(_) => None,
        }
    }
}

/// An execution's stored output as tool-result text: a JSON string gives
/// its text; any other JSON value its strict, compact JSON; a value that
/// does not parse as JSON (SQLite ports store text) is kept as it is.
pub fn output_text(output: Option<&str>) -> String {
    let Some(raw) = output else {
        return "null".into();
    };
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(v) => serde_json::to_string(&v).expect("a Value serialises"),
        Err(_) => raw.to_string(),
    }
}

/// How a traced span ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SpanStatus {
    Ok,
    Error,
    /// Closed without a status (OpenTelemetry `UNSET`).
    Unset,
    /// Opened and never closed: the process stopped during the call.
    Open,
}

impl SpanStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SpanStatus::Ok => "ok",
            SpanStatus::Error => "error",
            SpanStatus::Unset => "unset",
            SpanStatus::Open => "open",
        }
    }
}

/// One provider call recorded in a trace: the request's messages are the
/// conversation's `messages`; this is everything else the trace knows.
#[derive(Debug, Clone)]
pub struct TraceStep {
    /// The conversation the trace files the call under (dispatch's
    /// `conversationId`, `session.id`, `gen_ai.conversation.id`, or the
    /// trace id when nothing names one).
    pub conversation: String,
    /// The turn's id as recorded (dispatch `turnId`, the OpenTelemetry trace id).
    pub turn: Option<String>,
    /// 1-based position of the turn in the conversation.
    pub turn_index: usize,
    /// 0-based position of the step (provider call) in its turn.
    pub step_index: usize,
    /// The span of the call (dispatch: the `step` span).
    pub span: String,
    /// Where the request body is recorded.
    pub request: Loc,
    /// Where the call's outcome is recorded (span close, span row), if it
    /// was recorded at all.
    pub end: Option<Loc>,
    /// The finish reason, normalised (`stop`, `tool_call`, `length`,
    /// `content_filter`, or the raw value when unknown).
    pub finish_reason: Option<String>,
    /// The finish reason exactly as recorded.
    pub raw_finish_reason: Option<String>,
    pub status: SpanStatus,
    /// The recorded error: status message, `error.message`, exception event.
    pub error: Option<String>,
    pub model: Option<String>,
    /// Tools offered in the request.
    pub tools: Option<usize>,
    /// Size of the recorded request payload in bytes.
    pub request_bytes: Option<u64>,
    /// Earlier attempts of the same step (retries) recorded before this one.
    pub retries: usize,
    /// The recorded answer, where the trace keeps it.
    pub output: Vec<Message>,
    /// When the call started, as recorded.
    pub started: Option<String>,
}

impl TraceStep {
    /// The call ended without a finish reason, or with an error: the
    /// answer is cut off.
    pub fn truncated(&self) -> bool {
        self.finish_reason.is_none()
            || self.finish_reason.as_deref() == Some("error")
            || matches!(self.status, SpanStatus::Error | SpanStatus::Open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_excerpt_never_splits_a_character() {
        let loc = Loc::Line {
            line: 1,
            start: 0,
            end: 0,
        };
        // 239 ASCII bytes then a two-byte character across the 240-byte cut.
        let mut raw = vec![b'a'; 239];
        raw.extend("é and more".as_bytes());
        let c = CorruptRecord::new(loc.clone(), "x".into(), &raw, false);
        assert_eq!(c.excerpt.len(), 239);
        assert!(!c.excerpt.contains('\u{fffd}'));
        // Damage inside the excerpt is still shown, replaced.
        let c = CorruptRecord::new(loc, "x".into(), b"ab\xffcd", false);
        assert_eq!(c.excerpt, "ab\u{fffd}cd");
    }
}
