//! Qwen Code's session files (`@qwen-code/qwen-code`, read here as 0.15.10
//! reads them): `~/.qwen/projects/<cwd, each character not [A-Za-z0-9] as
//! `-`>/chats/<sessionId>.jsonl` (see [`discover`] for the overrides). Every
//! line is one record (`uuid`, `parentUuid`, `sessionId`, `timestamp`,
//! `type` `user`/`assistant`/`tool_result`/`system`, `cwd`, `version`)
//! wrapping a Gemini `Content` in `message` (`role` `user`/`model`, `parts`
//! of `text`, `thought`, `functionCall`, `functionResponse`), or a
//! `systemPayload` (`subtype` `ui_telemetry`, `attribution_snapshot`,
//! `chat_compression`, `custom_title`…). The client appends one line per
//! record (`JSON.stringify(record) + "\n"`); `/rewind` re-roots the chain
//! and leaves the abandoned records in the file.
//!
//! On resume Qwen Code walks `parentUuid` back from the last record of the
//! file and sends what that path holds ([`load`], [`read`]); a repaired
//! copy is written in its own terms (`writer.rs`).

pub mod discover;
pub mod load;
pub mod profile;
mod read;
mod writer;

use serde_json::Value;
use std::path::Path;

use super::store::{Head, Hooks, Opened, Probe, Store, Writing};
use crate::error::Result;
use crate::finding::Action;
use crate::model::{Dialect, Format};
use crate::source::{Limits, OneFile};

pub static STORE: Store = Store {
    name: "Qwen Code session",
    formats: &[Format::Jsonl],
    dialects: &[Dialect::QwenCode],
    probe: Probe::Text { detect, open },
    writing: Writing::Copy {
        supports,
        new: writer::new,
    },
    // The walk its client makes on resume is not modelled as Claude
    // Code's is (`model::chain`).
    hooks: Hooks {
        chain_by_count: true,
        ..Hooks::NONE
    },
};

/// What the writer carries out in Qwen Code's own format (see `writer.rs`).
fn supports(_: Dialect, a: &Action) -> bool {
    matches!(
        a,
        Action::DropRecord { .. }
            | Action::RemoveResult { .. }
            | Action::AnswerCall { .. }
            | Action::DropRepeat { .. }
    )
}

/// A Qwen Code session, from its content: the first record carries a
/// string `uuid`, `sessionId` and `cwd`, a `type` Qwen Code writes, and a
/// Gemini `Content` (`parts`) or a `systemPayload`. (Claude Code's records
/// share the first fields; their `message` holds `content`, not `parts`.)
fn detect(head: &Head<'_>) -> Result<bool> {
    Ok(head.first_object().is_some_and(is_record))
}

/// A record as Qwen Code writes it.
pub fn is_record(o: &serde_json::Map<String, Value>) -> bool {
    let str_field = |k: &str| o.get(k).is_some_and(Value::is_string);
    str_field("uuid")
        && str_field("sessionId")
        && str_field("cwd")
        && o.get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| load::KNOWN_TYPES.contains(&t))
        && (o
            .get("message")
            .and_then(|m| m.get("parts"))
            .is_some_and(Value::is_array)
            || o.get("systemPayload").is_some_and(Value::is_object))
}

fn open(path: &Path, limits: Limits) -> Result<Opened> {
    Ok(Opened::History(Box::new(OneFile::open(
        path,
        limits,
        Format::Jsonl,
        Dialect::QwenCode,
        |path, limits, info| load::load(path, limits).map(|l| read::conversation(l, info)),
    )?)))
}
