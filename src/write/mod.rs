//! What a writer is given and what it gives back. A store whose repaired
//! copy chatfsck can write implements [`Writer`] in its own folder under
//! `format/`; the repair engine (`repair`) drives every writer the same
//! way: plan conversation by conversation, then write once.

use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::finding::Finding;
use crate::finding::Fix;
use policy::RepairPolicy as Policy;

pub mod atomic;
pub mod in_place;
pub mod lines;
pub mod payload;
pub mod policy;
pub mod sqlite;
pub mod tree;
use crate::model::{Conversation, Loc};
use crate::source::{Limits, Mapping};

/// An output error naming `path`, the file or folder being written.
pub fn out_err(path: &Path, e: impl std::fmt::Display) -> crate::error::Error {
    crate::error::Error::Output {
        path: path.to_path_buf(),
        cause: e.to_string(),
    }
}

/// Give `file` (a file, or a directory opened as one) the owner, group
/// and permissions of `like`: an output takes the place of, or mirrors,
/// a user's private file. A user who is not root cannot give a file away:
/// the owner is then left as it is (the file is the user's own, as the
/// original is, or the run could not have replaced it).
pub fn keep_owner_and_mode(file: &std::fs::File, like: &std::fs::Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata()?;
    if (meta.uid(), meta.gid()) != (like.uid(), like.gid()) {
        match std::os::unix::fs::fchown(file, Some(like.uid()), Some(like.gid())) {
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {}
            r => r?,
        }
    }
    // After the owner: a change of owner can clear set-id bits.
    file.set_permissions(like.permissions())
}

pub use crate::model::PLACEHOLDER;

/// Where and how one repair writes, as the user asked (checked by the
/// engine before a writer is made).
#[derive(Clone, Copy)]
pub struct Target<'a> {
    pub input: &'a Path,
    /// The file the user named: `input` itself on the first pass, and on
    /// the passes over the repaired copy (a scratch file) the file it
    /// repairs, whose neighbours (a Codex fork that replays its first
    /// bytes) still hold.
    pub origin: &'a Path,
    /// The copy to write; `None` on a dry run and for PostgreSQL inputs.
    pub output: Option<&'a Path>,
    pub force: bool,
    pub dry_run: bool,
    pub policy: &'a Policy,
    pub limits: Limits,
    pub mapping: Option<&'a Mapping>,
    /// PostgreSQL inputs: write the repair as a SQL script here.
    pub emit_sql: Option<&'a Path>,
    /// PostgreSQL inputs: apply the repair to this other database.
    pub target: Option<&'a str>,
    /// Claude Code sessions: where a record the client bridges is linked.
    pub relink: Relink,
}

/// Where a Claude Code record whose parent is missing is re-linked: to
/// the record before it in file order (the default, which is where a lost
/// record most often was), or as time has it: to the record the client
/// bridges it to, and otherwise to the newest record before it that is
/// not newer than it (the client resumes from the newest descendant of the
/// last record, so under a newer record its walk can start above this
/// one). The engine takes the second when the first would resume less of
/// the input than the client does, or as much with more errors
/// (`repair::repair`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Relink {
    #[default]
    FileOrder,
    AsBridged,
}

/// A finding with a fix the engine will apply.
pub struct Planned<'a> {
    pub finding: &'a Finding,
    pub fix: &'a Fix,
}

/// One edit, as the repair log records it.
#[derive(Debug, Clone)]
pub struct Edit {
    pub rule: &'static str,
    pub conversation: String,
    pub action: &'static str,
    /// What was done, in one line.
    pub description: String,
    pub location: Loc,
    /// The record before the edit, verbatim (`null` for an insertion).
    /// Bytes that are not UTF-8 show as U+FFFD here; the exact bytes are
    /// then in `before_base64`.
    pub before: Option<String>,
    /// The record's exact bytes in base64, when they are not UTF-8 (a
    /// write torn inside a character, damaged bytes); absent otherwise.
    pub before_base64: Option<String>,
    /// The record after the edit (`null` for a removal).
    pub after: Option<String>,
    /// A table row the edit deleted, whole: every column by name with its
    /// value as stored (`crate::write::sqlite::row_json`), so the log can
    /// put the row back; absent otherwise.
    pub row: Option<serde_json::Value>,
    /// True when the edit invents content (a placeholder result).
    pub synthesized: bool,
    /// Tool call ids involved.
    pub ids: Vec<String>,
    /// A large record's `before` and `after`, kept as pieces of the input
    /// rather than in memory; the log writes them in place of `before`
    /// and `after`.
    pub large: Large,
}

/// A large record's text before and after an edit, read from the input
/// when the log is written ([`payload::Payload`]).
#[derive(Debug, Clone, Default)]
pub struct Large {
    pub before: Option<payload::Payload>,
    pub after: Option<payload::Payload>,
}

/// An edit as the log writes it.
#[derive(Serialize)]
struct EditOut<'a> {
    rule: &'static str,
    conversation: &'a str,
    action: &'static str,
    description: &'a str,
    location: &'a Loc,
    before: Text<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    before_base64: &'a Option<String>,
    after: Text<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    row: &'a Option<serde_json::Value>,
    synthesized: bool,
    ids: &'a [String],
}

/// A record's text as the log writes it: `null`, a string, pieces
/// streamed from the input, or (a large record's `after` that keeps the
/// large strings of its `before`) text and ranges of the `before`.
#[derive(Serialize)]
#[serde(untagged)]
enum Text<'a> {
    Str(Option<&'a str>),
    Large(&'a payload::Payload),
    Pieces { pieces: Vec<payload::LogPiece<'a>> },
}

impl Text<'_> {
    fn of<'a>(small: &'a Option<String>, large: &'a Option<payload::Payload>) -> Text<'a> {
        match large {
            Some(p) => Text::Large(p),
            None => Text::Str(small.as_deref()),
        }
    }
}

impl Serialize for Edit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        EditOut {
            rule: self.rule,
            conversation: &self.conversation,
            action: self.action,
            description: &self.description,
            location: &self.location,
            before: Text::of(&self.before, &self.large.before),
            before_base64: &self.before_base64,
            // A large record's text is written once: its `after`, as
            // ranges of its `before` where it keeps them (issue 35: a
            // 24 MiB text rewritten took 66 MB of log).
            after: match (&self.large.after, &self.large.before) {
                (Some(a), Some(b)) => a
                    .pieces_of(b)
                    .map_or(Text::Large(a), |pieces| Text::Pieces { pieces }),
                _ => Text::of(&self.after, &self.large.after),
            },
            row: &self.row,
            synthesized: self.synthesized,
            ids: &self.ids,
        }
        .serialize(s)
    }
}

impl Edit {
    /// An edit of the record at `location`, its before and after to be
    /// filled in when the copy is written; nothing synthesized, no ids.
    pub fn new(
        rule: &'static str,
        conversation: &str,
        action: &'static str,
        description: String,
        location: Loc,
    ) -> Edit {
        Edit {
            rule,
            conversation: conversation.to_string(),
            action,
            description,
            location,
            before: None,
            before_base64: None,
            after: None,
            row: None,
            synthesized: false,
            ids: Vec::new(),
            large: Large::default(),
        }
    }

    /// An edit for finding `f` (its rule and conversation) of the record
    /// at `location`: what every store's writer starts an edit from.
    pub fn of(f: &Finding, action: &'static str, description: String, location: Loc) -> Edit {
        Edit::new(f.rule, &f.conversation, action, description, location)
    }

    /// The edit, naming the tool call ids it involves.
    #[must_use]
    pub fn with_ids(mut self, ids: Vec<String>) -> Edit {
        self.ids = ids;
        self
    }

    /// The edit, marked as inventing content (a placeholder result).
    #[must_use]
    pub fn synthesized(mut self) -> Edit {
        self.synthesized = true;
        self
    }

    /// Whether the edit has a `before` (in memory or large).
    pub fn has_before(&self) -> bool {
        self.before.is_some() || self.large.before.is_some()
    }
}

/// A finding the repair leaves as it is, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Left {
    pub rule: &'static str,
    pub conversation: String,
    pub location: Option<Loc>,
    pub summary: String,
    pub reason: String,
}

impl Left {
    /// The finding `f`, left as it is, and why.
    pub fn of(f: &Finding, reason: impl Into<String>) -> Self {
        Left {
            rule: f.rule,
            conversation: f.conversation.clone(),
            location: f.loc.clone(),
            summary: f.summary.clone(),
            reason: reason.into(),
        }
    }
}

/// Whether a copy still holds a message: a part of one (or a message
/// without parts) on a record the copy keeps, or a record the repair
/// inserts. A copy without one is no history.
pub fn keeps_a_message(conv: &Conversation, dropped: impl Fn(&Loc) -> bool, inserts: bool) -> bool {
    inserts
        || conv.messages.iter().any(|m| {
            m.parts.iter().any(|q| !dropped(&q.loc)) || (m.parts.is_empty() && !dropped(&m.loc))
        })
}

/// Why a repair that would leave no message keeps the input as it is.
pub const NO_MESSAGE_LEFT: &str =
    "the repair would leave no message, and an empty history is no history: the copy keeps it";

/// What a repair did: its edits, what it left, and where it wrote.
#[derive(Debug, Default)]
pub struct Log {
    pub edits: Vec<Edit>,
    pub left: Vec<Left>,
    /// Where the repair went, when it is not the `-o` file: a SQL script,
    /// another database (PostgreSQL inputs).
    pub sql: Option<String>,
    pub target: Option<String>,
    pub inserted: Option<u64>,
}

/// A store's writer for one repair.
pub trait Writer {
    /// Plan the fixes of one conversation: its edits go to `log`, and so
    /// does every finding it cannot carry out, with the reason.
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()>;
    /// Write the repaired copy. Not called on a dry run.
    ///
    /// A text store's writer (JSON Lines, JSON) adds nothing to `log`
    /// here: its edits are all known once planned. `repair` relies on it,
    /// learning from a dry pass whether a pass would edit a repaired copy
    /// again (`repair::tests::a_dry_pass_plans_what_a_written_pass_does`).
    fn write(self: Box<Self>, log: &mut Log) -> Result<()>;
}

/// A record's bytes as the log keeps them: its text, and, when the bytes
/// are not UTF-8, their exact copy in base64 (the text then holds U+FFFD
/// in place of what it cannot show).
pub fn verbatim(bytes: &[u8]) -> (String, Option<String>) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_string(), None),
        Err(_) => (
            String::from_utf8_lossy(bytes).into_owned(),
            Some(base64(bytes)),
        ),
    }
}

/// Standard base64 (RFC 4648, with padding).
fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_of_rfc4648_vectors() {
        for (raw, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(super::base64(raw.as_bytes()), enc);
        }
    }
}
