//! How a store numbers its records and which history it continues, where
//! the store says so. Codex's paginated history (0.146 and later) is the
//! one such store today: the rollout's first record declares it
//! (`session_meta.payload.history_mode: "paginated"`), every record then
//! carries the next `ordinal`, the client appends after the last one and
//! indexes its history projection by them, and a fork names the thread it
//! continues (`history_base`). The reader fills this in; the rules judge
//! it without knowing which app wrote it.

use std::path::PathBuf;

use super::Loc;

#[derive(Debug, Clone)]
pub struct Paging {
    /// The record that declares the numbering.
    pub declared_at: Loc,
    /// Every record after the declaration (that one included), in file
    /// order, with its ordinal.
    pub records: Vec<(Loc, Ordinal)>,
    /// The history this one continues, when it is a fork's continuation.
    pub base: Option<Base>,
    /// What the client's index of this history (a projection it keeps
    /// beside it, read incrementally from where it stopped) has read of it.
    pub projection: Option<Projection>,
}

/// How far a client's incremental index of a history has read it: the
/// next byte and the next ordinal it will read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Projection {
    /// The database that holds it.
    pub store: PathBuf,
    pub next_byte: u64,
    pub next_ordinal: u64,
}

/// A record's ordinal as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ordinal {
    /// The record has none.
    Missing,
    /// It has one that is not a whole number from 0 up.
    Invalid,
    At(u64),
}

/// The history a fork continues: the records of thread `thread` before
/// ordinal `end_exclusive` (its first `end_byte_offset` bytes) come first.
#[derive(Debug, Clone)]
pub struct Base {
    /// The record that names it.
    pub loc: Loc,
    pub thread: String,
    pub end_exclusive: Option<u64>,
    pub parent: Parent,
}

/// Whether the history a fork continues is where its client looks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parent {
    /// Found, at this path.
    Found(PathBuf),
    /// Not under this folder (the client's home of histories), where the
    /// client looks for it.
    Missing { searched: PathBuf },
    /// The file is not in a layout whose home can be told (a copy taken
    /// out of it): nothing is said.
    Unknown,
}

impl Paging {
    pub fn new(declared_at: Loc) -> Self {
        Paging {
            declared_at,
            records: Vec::new(),
            base: None,
            projection: None,
        }
    }
}

/// A record of a kind the reader does not know, or of a version it does
/// not read: never counted as read (drift between the client and this
/// reader must show).
#[derive(Debug, Clone)]
pub struct Unread {
    pub loc: Loc,
    /// The kind as stored (e.g. `response_item/foo`).
    pub kind: String,
    /// What was not read, in a few words.
    pub what: &'static str,
}
