//! The record tree of an app that chains its records by parent links
//! (Claude Code's `uuid`/`parentUuid`), as its client walks it on resume:
//! every record with its link, how the client resolved it, whether the
//! resume reaches it and why not. A side view beside `messages`, which
//! hold what the walk sends; rules and reports read both.

use super::Loc;

/// Claude Code bridges a missing parent to a record at most this much
/// older (`var ugr=5000` in 2.1.330).
pub const BRIDGE_MS: i64 = 5000;

/// How a record was read from its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    User,
    Assistant,
    /// `system` records (stop hooks, turn durations, compact boundaries).
    System,
    Attachment,
    /// `progress` records: never loaded by the client; their children are
    /// re-linked to their own parent.
    Progress,
    /// Metadata the client keeps out of the tree (`summary`,
    /// `file-history-snapshot`, `last-prompt`…).
    Meta,
}

impl RecordKind {
    pub fn is_message(self) -> bool {
        matches!(self, RecordKind::User | RecordKind::Assistant)
    }

    /// A record the chain runs through, whose `parentUuid` a repair may
    /// set (not a file-history snapshot, a summary, or other metadata).
    pub fn is_linkable(self) -> bool {
        matches!(
            self,
            RecordKind::User
                | RecordKind::Assistant
                | RecordKind::System
                | RecordKind::Attachment
                | RecordKind::Progress
        )
    }
}

/// How the walk went from a record to the one before it.
#[derive(Debug, Clone, PartialEq)]
pub enum Link {
    /// Not walked (off the resumed chain).
    NotWalked,
    /// `parentUuid` is null: the start of the chain.
    Root,
    /// A `compact_boundary`: the walk stops, what precedes is not replayed.
    Boundary,
    /// The parent (through progress records, if any) exists.
    Parent { to: usize, through_progress: usize },
    /// The parent is missing; the client took the newest older record.
    Bridged {
        missing: String,
        to: usize,
        gap_ms: i64,
    },
    /// The parent is missing and nothing older was close enough: the chain
    /// starts here. `older` is the newest older record, if any.
    Broken {
        missing: String,
        older: Option<(usize, i64)>,
    },
    /// The parent is already on the chain (a cycle); the client falls back
    /// to timestamps as for a missing parent: `older` is the newest older
    /// record (bridged when at most 5,000 ms older).
    Cycle {
        parent: usize,
        older: Option<(usize, i64)>,
    },
}

/// Why the resume does not reach a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreached {
    /// Reached (sent, or walked through).
    No,
    /// Before the last `compact_boundary`: not replayed, by design.
    BeforeBoundary,
    /// Lost: the chain breaks (a missing parent, no links) above it.
    CutOff,
    /// On a branch the resumed leaf does not descend from.
    OffBranch,
    /// A sidechain (sub-agent) record in a main session.
    Sidechain,
    /// A record another record with the same uuid replaces.
    Replaced,
    /// Metadata or progress: never part of the conversation.
    NotLoaded,
}

/// A thinking block's signature that the provider will refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signature {
    Missing,
    Empty,
    /// Not base64, or not a whole number of base64 quanta: cut or altered.
    Malformed,
    /// Well-formed base64 of the shape the API issues, whose decoded
    /// framing is broken: cut at a quantum, or a length byte altered.
    Unframed,
}

/// The Messages API's longest `tool_reference.tool_name`, in characters
/// (`…tool_reference.tool_name: String should have at most 64 characters`).
pub const TOOL_REFERENCE_NAME_LIMIT: usize = 64;

/// One content block worth a rule's attention, by position in its record.
#[derive(Debug, Clone, PartialEq)]
pub enum BlockIssue {
    Thinking {
        block: usize,
        signature: Signature,
    },
    /// An image block (in the message or in a tool result at `block`):
    /// its base64 length, and its pixel size when its header could be
    /// read.
    Image {
        block: usize,
        base64_len: u64,
        size: Option<(u64, u64)>,
    },
    /// A content block without a `type`, which the client removes before
    /// it sends the request (it is no part of the message read).
    Untyped {
        block: usize,
    },
    /// A `tool_reference` in the tool result at `block` (item `item` of
    /// its content) whose `tool_name` is over the API's 64 characters.
    ToolReference {
        block: usize,
        item: usize,
        name: String,
    },
    /// A server tool's call (`server_tool_use`, `mcp_tool_use`) and its id.
    ServerToolUse {
        block: usize,
        id: String,
    },
    /// A server tool's result (`advisor_tool_result`,
    /// `web_search_tool_result`, …): a block other than `tool_result` that
    /// answers a call by `tool_use_id`.
    ServerToolResult {
        block: usize,
        id: String,
    },
}

#[derive(Debug, Clone)]
pub struct ChainRecord {
    pub loc: Loc,
    pub kind: RecordKind,
    /// `system` subtype, when there is one.
    pub subtype: Option<String>,
    pub uuid: Option<String>,
    pub parent: Option<String>,
    pub timestamp_ms: Option<i64>,
    pub sidechain: bool,
    /// The API message id (`message.id`) of an assistant record.
    pub message_id: Option<String>,
    /// The API request the record's message answered (`requestId`): the
    /// records of one reply share it, as they share `message.id`.
    pub request_id: Option<String>,
    /// The ids of the tool calls (`tool_use` blocks) the record holds.
    pub calls: Vec<String>,
    /// The call ids of the tool results (`tool_result` blocks) it holds.
    pub results: Vec<String>,
    /// The walk's link from this record (for records it walked).
    pub link: Link,
    pub unreached: Unreached,
    /// An earlier record with the same uuid: (its position, identical).
    pub duplicate_of: Option<(usize, bool)>,
    /// Lone surrogate escapes (`\ud800`) in the record's text.
    pub lone_surrogates: u32,
    /// The record names a member twice (in it or in its message): it was
    /// read as the client reads it, each member with its last value.
    pub named_twice: bool,
    pub issues: Vec<BlockIssue>,
    /// Tool results of the record whose call is in no record of the file.
    pub stray_results: Vec<String>,
}

/// Several JSON values on one line.
#[derive(Debug, Clone)]
pub struct Glued {
    /// The whole line.
    pub loc: Loc,
    pub values: usize,
    /// The `type` of each record after the first (`?` for a value that is
    /// no record): Claude Code reads the first record of the line only.
    pub lost: Vec<String>,
}

/// The tree and the walk.
#[derive(Debug, Clone, Default)]
pub struct Chain {
    /// Every parsed record, in file order.
    pub records: Vec<ChainRecord>,
    /// The record the client resumes from.
    pub leaf: Option<usize>,
    /// The leaf the client would take without the record that moved it
    /// (a record written again at the end), when that one differs.
    pub displaced_leaf: Option<usize>,
    /// Every user/assistant record is a sidechain record: a sub-agent file.
    pub sidechain_only: bool,
    /// User/assistant records of the conversation (one per uuid), and how
    /// many of them the resume sends.
    pub messages_in_file: usize,
    pub messages_kept: usize,
    pub glued: Vec<Glued>,
}

impl Chain {
    /// User/assistant records (one per uuid, not replaced) the resume does
    /// not reach because the chain is cut off or another branch is taken.
    pub fn lost(&self) -> usize {
        self.records
            .iter()
            .filter(|r| {
                r.kind.is_message()
                    && matches!(r.unreached, Unreached::CutOff | Unreached::OffBranch)
            })
            .count()
    }

    /// The line of record `i`.
    pub fn line(&self, i: usize) -> Option<u64> {
        self.records.get(i).and_then(|r| r.loc.line())
    }
}
