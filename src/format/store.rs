//! What a store is, for the registry in `format/mod.rs`: how it is
//! recognised, how it is opened, and whether and how it is written. Each
//! store's folder defines one [`Store`]; the registry lists them in
//! detection order.

use std::path::Path;

use crate::error::Result;
use crate::finding::Action;
use crate::model::{Dialect, Format};
use crate::source::sqlite::Snapshot;
use crate::source::trace::TraceSource;
use crate::source::{Limits, Source};
use crate::write::{Target, Writer};

/// What an input turned out to be.
pub enum Opened {
    /// A trace: recorded requests.
    Trace(TraceSource),
    /// A conversation store or log.
    History(Box<dyn Source>),
}

impl Opened {
    pub fn into_source(self) -> Box<dyn Source> {
        match self {
            Opened::Trace(t) => Box::new(t),
            Opened::History(s) => s,
        }
    }
}

/// The first bytes of a text file, for stores that recognise themselves
/// from their content.
pub struct Head<'a> {
    pub path: &'a Path,
    /// Up to [`Head::LEN`] bytes from the start, without a byte-order mark.
    pub bytes: &'a [u8],
    pub limits: Limits,
    /// The first non-blank line as JSON, parsed once for every store that
    /// looks at it ([`Head::first_value`]).
    first: std::cell::OnceCell<Option<serde_json::Value>>,
}

impl<'a> Head<'a> {
    pub const LEN: usize = 64 * 1024;

    pub fn new(path: &'a Path, bytes: &'a [u8], limits: Limits) -> Self {
        Head {
            path,
            bytes,
            limits,
            first: std::cell::OnceCell::new(),
        }
    }

    /// The first non-blank line of the head, when it parses as JSON:
    /// parsed on first use, shared by every store's `detect`. When that
    /// line is a record that does not parse (a torn or overwritten first
    /// line of a JSON Lines file), the first later record that does is
    /// taken instead: a damaged first line must not decide the format of
    /// the file. Later lines count only as records of their own (starting
    /// with `{` at the start of the line), never lines inside a
    /// pretty-printed document.
    pub fn first_value(&self) -> Option<&serde_json::Value> {
        self.first
            .get_or_init(|| {
                let mut lines = self
                    .bytes
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.iter().all(u8::is_ascii_whitespace));
                let first = lines.next()?;
                if let Ok(v) = serde_json::from_slice(first) {
                    return Some(v);
                }
                let record = |l: &[u8]| l.first() == Some(&b'{') && l.len() > 1;
                if !record(first) {
                    return None;
                }
                lines
                    .filter(|l| record(l))
                    .find_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
                    .filter(serde_json::Value::is_object)
            })
            .as_ref()
    }

    /// [`Head::first_value`], when it is an object.
    pub fn first_object(&self) -> Option<&serde_json::Map<String, serde_json::Value>> {
        self.first_value().and_then(serde_json::Value::as_object)
    }

    /// The file name's extension.
    pub fn extension(&self) -> Option<&str> {
        self.path.extension().and_then(|e| e.to_str())
    }
}

/// How a store is recognised and opened.
pub enum Probe {
    /// A SQLite database, from its schema (`tables` are its table names).
    Sqlite {
        /// `Err`: the cause of a database that cannot be read.
        detect: fn(&rusqlite::Connection, &[String]) -> std::result::Result<bool, String>,
        open: fn(&Path, Snapshot) -> Result<Opened>,
    },
    /// A PostgreSQL database, from the names of the tables on its search
    /// path; tried before the message tables, which are the default.
    Postgres {
        detect: fn(&[String]) -> bool,
        /// Open the database the `postgres:` URL names.
        open: fn(&Path) -> Result<Opened>,
    },
    /// A text file, from its first bytes. `detect` may read the file
    /// further; an `Err` is a file that is this store's but damaged.
    Text {
        detect: fn(&Head<'_>) -> Result<bool>,
        open: fn(&Path, Limits) -> Result<Opened>,
    },
}

/// Whether and how a store is written.
pub enum Writing {
    /// Never repaired; the reason, in one sentence, for the refusal.
    Never(&'static str),
    /// A repaired copy is written in the same format.
    Copy {
        /// Whether the writer carries out this action in this dialect.
        supports: fn(Dialect, &Action) -> bool,
        /// The writer for one repair (see [`Target`]).
        new: fn(&Target<'_>) -> Result<Box<dyn Writer>>,
    },
}

/// A store chatfsck reads.
pub struct Store {
    /// What users call it, in errors and docs.
    pub name: &'static str,
    /// The formats and dialects its reader reports: what it read is
    /// written back by its writer ([`store_of`]).
    pub formats: &'static [Format],
    pub dialects: &'static [Dialect],
    pub probe: Probe,
    pub writing: Writing,
    /// What the engine asks of this store beyond reading and writing it.
    pub hooks: Hooks,
}

/// What a store adds to the engine's work, each hook optional: the engine
/// walks the stores' hooks instead of naming an app (checked by
/// `tests/layers.rs`: `cmd/` names no dialect).
pub struct Hooks {
    /// The cause to say of a database at this path that is one of the
    /// app's own beside its histories, holding none, known by where it
    /// is; `None`: not one of the app's. Asked when no store reads it.
    pub own_database: Option<fn(&Path) -> Option<String>>,
    /// After `repair --in-place` replaced a history of this store.
    pub after_replace: Option<AfterReplace>,
    /// The histories have a parent chain whose resume the loader does not
    /// model as it models Claude Code's walk (`model::chain`): a repaired
    /// copy is held to the chain rules by their count.
    pub chain_by_count: bool,
    /// The input is one file of a session directory whose reader reads
    /// the files beside it (Mistral Vibe's `CURRENT`): a repaired copy is
    /// read where it was written, whatever its name, and a repair that
    /// does not settle in one pass keeps the input (a later pass would
    /// write its files beside a scratch name).
    pub reads_beside: bool,
}

impl Hooks {
    /// No hook.
    pub const NONE: Hooks = Hooks {
        own_database: None,
        after_replace: None,
        chain_by_count: false,
        reads_beside: false,
    };
}

/// What to do after a repaired copy replaced the input: bring an index
/// the app keeps of the file in step with it (Codex's projection).
pub struct AfterReplace {
    /// Run on the replaced file; with `only_if_behind` (the file was not
    /// replaced), only when the index has read past the file's end. `None`:
    /// nothing to do; `Ok`: what was done; `Err`: why it could not be.
    pub run: fn(&Path, bool) -> Option<std::result::Result<String, String>>,
    /// The patterns whose findings this settles once it is done.
    pub settles: &'static [crate::finding::profile::Pattern],
}
