//! Gemini CLI chat recordings
//! (`~/.gemini/tmp/<project slug or sha256>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl`,
//! sub-agents in `chats/<parentSessionId>/<sessionId>.jsonl`; up to v0.38 a
//! single pretty `.json`). A JSONL recording starts with a metadata line
//! (`sessionId`, `projectHash`); every later line is a message record
//! (`id`, `type` `user`|`gemini`|`info`|`error`|`warning`), a `$set`
//! (metadata, or `messages`: the whole set replaced) or a `$rewindTo`.
//!
//! On resume the app loads the records as `loadConversationRecord` does
//! (an id map where a later line replaces a record in place, `$rewindTo`
//! cuts, `$set.messages` resets; a line that does not parse is skipped
//! silently: see [`load`]) and converts them into `Content[]`
//! (`convertSessionToClientHistory`): info/error/warning records and
//! slash-command user records are not sent; a legacy-form `gemini` record
//! (string `content`, `thoughts[]`, `toolCalls[]`) becomes its thoughts,
//! text and calls, followed by a user turn with each `toolCalls[].result`.
//! Since #26939 the same results are also recorded as their own `user`
//! record: the two are one result (see [`read`]). Adjacent same-role turns
//! are merged before the request is sent.

pub mod discover;
pub mod profile;

use std::path::Path;
use std::sync::Arc;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::records::lazy::Node;
use super::store::{Head, Hooks, Opened, Probe, Store, Writing};
use crate::error::Result;
use crate::finding::Action;
use crate::model::{Dialect, Format, SourceInfo};
use crate::source::{Limits, OneFile};

pub mod load;
mod read;
mod writer;

pub static STORE: Store = Store {
    name: "Gemini CLI chat recording",
    formats: &[Format::Jsonl],
    dialects: &[Dialect::GeminiCli],
    probe: Probe::Text {
        detect,
        open: open_jsonl,
    },
    writing: Writing::Copy {
        supports,
        new: writer::new,
    },
    hooks: Hooks::NONE,
};

/// The single-document `.json` recording of Gemini CLI up to v0.38: read
/// and checked, never written (the app migrates it on resume).
pub static LEGACY: Store = Store {
    name: "Gemini CLI legacy chat recording (.json)",
    formats: &[Format::Json],
    dialects: &[Dialect::GeminiCli],
    probe: Probe::Text {
        detect: detect_legacy,
        open: open_legacy,
    },
    writing: Writing::Never(
        "a legacy single-document Gemini CLI recording is not rewritten: Gemini CLI migrates it to `.jsonl` on resume; repair that file",
    ),
    hooks: Hooks::NONE,
};

/// Removing a response, answering a call and dropping a torn line are
/// written in the app's own format (see `writer.rs`).
fn supports(_: Dialect, a: &Action) -> bool {
    matches!(
        a,
        Action::DropRecord { .. } | Action::RemoveResult { .. } | Action::AnswerCall { .. }
    )
}

/// A JSONL recording, from its content: the first line that parses is a
/// metadata object (string `sessionId`, 64-hex `projectHash`) without a
/// `messages` array.
fn detect(head: &Head<'_>) -> Result<bool> {
    Ok(head.first_value().is_some_and(|v| {
        load::is_metadata(Node::Tree(v)) && !v.get("messages").is_some_and(Value::is_array)
    }))
}

/// A legacy recording: one JSON object whose top-level keys hold the
/// metadata (pretty-printed, or on one line with its `messages`).
fn detect_legacy(head: &Head<'_>) -> Result<bool> {
    let bytes = head.bytes;
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Ok(false);
    }
    Ok(match head.first_value() {
        Some(v) => {
            load::is_metadata(Node::Tree(v)) && v.get("messages").is_some_and(Value::is_array)
        }
        None => legacy_head(bytes),
    })
}

/// Whether a (possibly cut) JSON object has a string `sessionId` and a
/// 64-hex `projectHash` among its top-level keys.
fn legacy_head(bytes: &[u8]) -> bool {
    #[derive(Default)]
    struct Seen {
        session: bool,
        hash: bool,
    }
    struct Keys<'s>(&'s mut Seen);
    impl<'de> Visitor<'de> for Keys<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> std::result::Result<(), A::Error> {
            while let Some(k) = m.next_key::<String>()? {
                match k.as_str() {
                    "sessionId" => self.0.session = m.next_value::<Value>()?.is_string(),
                    "projectHash" => {
                        self.0.hash = load::is_project_hash(Some(&m.next_value::<Value>()?))
                    }
                    _ => {
                        m.next_value::<IgnoredAny>()?;
                    }
                }
                if self.0.session && self.0.hash {
                    break;
                }
            }
            Ok(())
        }
    }
    let mut seen = Seen::default();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    // A head cut mid-document ends in an error; the keys seen before count.
    let _ = serde::Deserializer::deserialize_map(&mut de, Keys(&mut seen));
    seen.session && seen.hash
}

fn open_jsonl(path: &Path, limits: Limits) -> Result<Opened> {
    open(path, limits, Format::Jsonl)
}

fn open_legacy(path: &Path, limits: Limits) -> Result<Opened> {
    open(path, limits, Format::Json)
}

fn open(path: &Path, limits: Limits, format: Format) -> Result<Opened> {
    // One recording is one conversation; its format is the one the
    // loader finds, where it finds one.
    Ok(Opened::History(Box::new(OneFile::open(
        path,
        limits,
        format,
        Dialect::GeminiCli,
        |path, limits, info| {
            let loaded = load::load(path, limits)?;
            let info = Arc::new(SourceInfo {
                path: path.to_path_buf(),
                format: loaded.format.unwrap_or(info.format),
                dialect: Dialect::GeminiCli,
            });
            Ok(read::conversation(loaded, info))
        },
    )?)))
}
