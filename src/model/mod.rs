//! The canonical conversation model every source produces and every rule reads.
//!
//! A forensic model: nothing is normalised away. Tool-call arguments keep their
//! raw text when it is not valid JSON, and every message and part carries the
//! location of the record it came from, so a finding can always point at evidence.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;

pub mod chain;
mod chunks;
pub mod compare;
mod paging;
pub mod pairing;
mod reasoning;
pub mod sealed;
mod signatures;
mod source;
mod table;
#[cfg(test)]
pub(crate) mod testutil;
mod text;
mod trace;
pub mod tree;

pub use chunks::{Chunk, ChunkLog};
pub use paging::{Base, Ordinal, Paging, Parent, Projection, Unread};

/// The text of a tool result `repair` synthesizes. Clearly not the tool's
/// output; rules recognise it (a placeholder is not a failed call).
pub const PLACEHOLDER: &str = "[chatfsck repair] No result was recorded for this tool call: the session ended or was interrupted before it completed. This placeholder was inserted by chatfsck; the tool may or may not have run.";
pub use reasoning::Reasoning;
pub use signatures::Signatures;
pub use source::{Dialect, Format, SourceInfo};
pub use table::{ExecStatus, Execution, Executions, MessageTable, output_text};
pub use text::Text;
pub use trace::{Event, SpanStatus, TraceStep};

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

impl Loc {
    pub fn line(&self) -> Option<u64> {
        match self {
            Loc::Line { line, .. } => Some(*line),
            Loc::Row { .. } => None,
        }
    }

    /// The row's SQLite rowid, when it is a row that has one.
    pub fn rowid(&self) -> Option<i64> {
        match self {
            Loc::Row { rowid, .. } => *rowid,
            Loc::Line { .. } => None,
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

impl Part {
    /// Whether this is a tool call that repeats call `other`: the same id,
    /// name and arguments (one call recorded twice).
    pub fn repeats_call(&self, other: &Part) -> bool {
        match (&self.kind, &other.kind) {
            (
                PartKind::ToolCall {
                    id,
                    name,
                    arguments,
                },
                PartKind::ToolCall {
                    id: id2,
                    name: name2,
                    arguments: arguments2,
                },
            ) => id == id2 && name == name2 && arguments.raw == arguments2.raw,
            _ => false,
        }
    }
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
        self.add(Part {
            kind,
            loc,
            slot: None,
        });
    }

    pub fn push_at(&mut self, kind: PartKind, loc: Loc, slot: Slot) {
        self.add(Part {
            kind,
            loc,
            slot: Some(slot),
        });
    }

    /// Append a part, growing the list 1, 2, 4, 8…: a `Vec`'s first
    /// allocation holds four parts, and most messages have one, so a long
    /// conversation of short messages held three empty parts (about 500
    /// bytes) for each message it read.
    fn add(&mut self, part: Part) {
        if self.parts.len() == self.parts.capacity() {
            self.parts.reserve_exact(self.parts.len().max(1));
        }
        self.parts.push(part);
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
    /// True when the record's bytes are not UTF-8 (a client that reads the
    /// file as text may refuse the whole file, not only this record).
    pub not_utf8: bool,
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
            not_utf8: std::str::from_utf8(raw).is_err(),
        }
    }
}

/// A record a store names but does not hold: a conversation's own list of
/// its messages pointing at a row that is not there (Cursor's
/// `fullConversationHeadersOnly` naming a missing bubble).
#[derive(Debug, Clone)]
pub struct MissingRecord {
    /// The record that names the missing one.
    pub loc: Loc,
    /// Where in that record, e.g. `fullConversationHeadersOnly[1]`.
    pub field: String,
    /// The key the missing record would have.
    pub key: String,
    /// Position of the first message read after the missing record (the
    /// number of messages when none follows).
    pub before_message: usize,
}

/// A conversation a store lists while another file keeps its messages (a
/// Cursor workspace database's composer, whose bubbles are in the global
/// database): nothing of it is read from this store.
#[derive(Debug, Clone)]
pub struct Elsewhere {
    /// The record that lists it.
    pub loc: Loc,
    /// Where its messages are kept, in words a user can follow.
    pub holder: String,
}

/// A tool result whose full output the app keeps in a file of its own
/// (Claude Code's `<sessionId>/tool-results/<id>.txt`, named in the result
/// the model is sent), when that file is not there.
#[derive(Debug, Clone)]
pub struct MissingOutput {
    /// The message and part of the result.
    pub message: usize,
    pub part: usize,
    /// The file the result names, as it names it.
    pub file: String,
    /// Where it was looked for beside the history.
    pub looked: String,
}

/// A value a record names by its key while the store does not hold it: a
/// LangGraph checkpoint's `channel_versions` naming a `checkpoint_blobs`
/// row that is gone. The messages were read as the app rebuilds them.
#[derive(Debug, Clone)]
pub struct MissingBlob {
    /// The record that names the value.
    pub loc: Loc,
    /// Where the value would be.
    pub missing: Loc,
    /// What the value is, in a few words (`the `messages` channel at version …`).
    pub what: String,
    /// How the app rebuilds it, and from what, in one sentence.
    pub rebuilt: String,
}

/// A record, document or chunk of a hash-linked store that does not match
/// the digest that names it, or is gone (Mistral Vibe's session store: a
/// journal record's `record_sha256`, its `previous_record_sha256` chain, a
/// generation's documents and the chunks they name).
#[derive(Debug, Clone)]
pub struct DigestMismatch {
    pub loc: Loc,
    /// What does not match, in one line.
    pub what: String,
    /// What the client does then, in one sentence.
    pub client: String,
}

/// A record whose JSON text holds `\u0000` escapes, in a store whose
/// database keeps the text but refuses to work on it (PostgreSQL's `json`
/// column: `jsonb` and the JSON operators reject `\u0000`).
#[derive(Debug, Clone)]
pub struct NulEscapes {
    pub loc: Loc,
    /// How many.
    pub count: u32,
    /// What the app does with such a record, in one sentence.
    pub effect: &'static str,
}

/// Damage a line-by-line reader meets before JSON does: one record
/// written over several lines, raw line separators in its text, NUL
/// padding around it (`split-record`, `raw-line-separator`,
/// `nul-padding`). The record itself was read.
#[derive(Debug, Clone)]
pub struct LineDamage {
    /// The record's bytes: for a split record, from its first line's
    /// start to its last line's end; for padding alone, the line's.
    pub loc: Loc,
    pub kind: LineDamageKind,
    /// The record's type, where it has one (`user.message`).
    pub record: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineDamageKind {
    /// One record over `lines` lines, cut by raw newlines inside its
    /// strings; the lines joined (each newline read as `\n`) parse.
    Split { lines: u64 },
    /// `count` raw U+2028 LINE SEPARATOR or U+2029 PARAGRAPH SEPARATOR
    /// characters in the record's text (valid JSON; some line splitters
    /// split on them).
    RawSeparators { count: u32 },
    /// A run of `nuls` NUL bytes on the line (a crash's preallocated,
    /// never written space); `record`: a record follows on the line, else
    /// the line holds only padding.
    NulPadding { nuls: u64, record: bool },
}

/// A record that lacks a member its client requires of its type: the
/// client refuses it on load.
#[derive(Debug, Clone)]
pub struct MissingField {
    pub loc: Loc,
    /// The record's type (`assistant.message`).
    pub record: String,
    /// The member, as a path (`data.messageId`).
    pub field: String,
}

/// Where the walk a parent-linked store's client makes from its leaf
/// ends before a root, in a store whose client takes no other record in
/// the missing parent's place (pi, Qwen Code): the records above are
/// left out of the resumed history.
#[derive(Debug, Clone)]
pub struct ParentCut {
    /// The record whose parent link ends the walk.
    pub loc: Loc,
    /// The parent it names.
    pub missing: String,
    /// The parent is on the walk already (a cycle), not missing.
    pub cycle: bool,
    /// Messages of the file (one per record id) the walk does not reach.
    pub lost: usize,
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
    /// For apps that chain records by parent links (Claude Code): the
    /// record tree and the walk the client makes on resume.
    pub chain: Option<Box<chain::Chain>>,
    /// For apps that keep a conversation as one tree of messages linked
    /// both ways with a current-message pointer (Open WebUI): the tree and
    /// the walk its client makes.
    pub tree: Option<Box<tree::Tree>>,
    /// Records the conversation names but the store does not hold.
    pub missing: Vec<MissingRecord>,
    /// Where the client's walk from the leaf ends early, for parent-linked
    /// stores read without a [`chain::Chain`] (pi, Qwen Code).
    pub parent_cuts: Vec<ParentCut>,
    /// Tool calls the app leaves unanswered on purpose (Cline's accepted
    /// `attempt_completion`): not orphans, reported for information.
    pub by_design: Vec<ByDesign>,
    /// Gemini: the model of each model turn and the signed function calls.
    pub signatures: Option<Box<Signatures>>,
    /// The model the store names for each assistant message, and the
    /// messages whose reasoning field is stored empty (thinking-mode
    /// providers take an empty field, and refuse a missing one).
    pub reasoning: Option<Box<Reasoning>>,
    /// Records read with their lone surrogate escapes (`\ud800`) taken as
    /// U+FFFD, as the app's lenient JSON reader takes them, and how many
    /// each holds (provider-shaped histories; Claude Code counts them on
    /// its chain's records).
    pub lone_surrogates: Vec<(Loc, u32)>,
    /// Set when the store only lists the conversation: its messages are
    /// kept in another file.
    pub elsewhere: Option<Box<Elsewhere>>,
    /// Tool results whose output file is gone.
    pub missing_outputs: Vec<MissingOutput>,
    /// Stored values a record names by key that the store does not hold,
    /// and how the app rebuilds them (a LangGraph checkpoint's blob).
    pub missing_blobs: Vec<MissingBlob>,
    /// Records, documents or chunks that do not match their digest.
    pub digest_mismatches: Vec<DigestMismatch>,
    /// Records whose JSON text holds NUL escapes (`\u0000`) that their
    /// database refuses to work on, and what the app then does.
    pub nul_escapes: Vec<NulEscapes>,
    /// How the store numbers its records and which history this one
    /// continues, where it says so (Codex paginated rollouts).
    pub paging: Option<Box<Paging>>,
    /// Records of a kind or version the reader does not read.
    pub unread: Vec<Unread>,
    /// The version of the client that wrote the history, where its records
    /// say (Claude Code's `version`, Codex's `session_meta.cli_version`):
    /// the one on the last record that carries it, the newest client the
    /// session was resumed in. Profiles compare it with the version a
    /// client heals a pattern from.
    pub client_version: Option<String>,
    /// Item ids the store keeps on items its client sends with them
    /// (Codex rollouts: a `response_item`'s `id`).
    pub item_ids: Vec<ItemId>,
    /// Items whose encrypted content is not well-formed (`sealed`).
    pub sealed: Vec<sealed::Sealed>,
    /// Lines a line-by-line reader meets damaged around a record it read.
    pub line_damage: Vec<LineDamage>,
    /// Records lacking a member their client requires.
    pub missing_fields: Vec<MissingField>,
}

/// An id stored on an item: the record, the item's type, the id.
#[derive(Debug, Clone)]
pub struct ItemId {
    pub loc: Loc,
    pub kind: String,
    pub id: String,
    /// Whether the record is the item alone (a Codex `response_item`
    /// line), which a writer can edit, or holds more (a `compacted`
    /// line's replacement history).
    pub alone: bool,
}

/// A tool call its app never answers, by design: (message, part) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByDesign {
    pub message: usize,
    pub part: usize,
    /// Why the app leaves it unanswered, in one sentence.
    pub why: &'static str,
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
            chain: None,
            tree: None,
            missing: Vec::new(),
            parent_cuts: Vec::new(),
            by_design: Vec::new(),
            signatures: None,
            reasoning: None,
            lone_surrogates: Vec::new(),
            elsewhere: None,
            missing_outputs: Vec::new(),
            missing_blobs: Vec::new(),
            digest_mismatches: Vec::new(),
            nul_escapes: Vec::new(),
            paging: None,
            unread: Vec::new(),
            client_version: None,
            item_ids: Vec::new(),
            sealed: Vec::new(),
            line_damage: Vec::new(),
            missing_fields: Vec::new(),
        }
    }

    /// The reasoning side view, made on first use.
    pub fn reasoning_mut(&mut self) -> &mut Reasoning {
        self.reasoning.get_or_insert_with(Box::default)
    }

    /// Note that the record at `loc` was read with `n` lone surrogate
    /// escapes as U+FFFD (nothing when `n` is 0).
    pub fn note_lone_surrogates(&mut self, loc: &Loc, n: u32) {
        if n > 0 {
            self.lone_surrogates.push((loc.clone(), n));
        }
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
