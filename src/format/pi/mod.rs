//! pi's session files (`@mariozechner/pi-coding-agent`, read here as
//! 0.73.1 reads them): `~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl`
//! (see [`discover`] for the overrides). The first line is a `session`
//! header (`version` 3, `id`, `timestamp`, `cwd`); every later line is an
//! entry of a tree linked by `id`/`parentId`: `message` (`user`,
//! `assistant` with `toolCall` blocks, `toolResult`, `bashExecution`,
//! `custom`), `model_change`, `thinking_level_change`, `compaction`,
//! `branch_summary`, `custom`, `custom_message`, `label`, `session_info`.
//! pi appends one line per entry (`appendFileSync`), and rewrites the whole
//! file only to migrate a v1 or v2 session.
//!
//! On resume pi walks `parentId` back from the last entry of the file and
//! sends what that path holds ([`load`], [`read`]): abandoned branches are
//! not sent, a compaction replaces what precedes its kept entries with its
//! summary, a line that does not parse is skipped without a word.

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
    name: "pi session",
    formats: &[Format::Jsonl],
    dialects: &[Dialect::Pi],
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

/// What the writer carries out in pi's own format (see `writer.rs`).
fn supports(_: Dialect, a: &Action) -> bool {
    matches!(
        a,
        Action::DropRecord { .. }
            | Action::RemoveResult { .. }
            | Action::AnswerCall { .. }
            | Action::MoveAfter { .. }
    )
}

/// A pi session, from its content: the first record is a `session`
/// header with a string `id`, `timestamp` and `cwd`.
fn detect(head: &Head<'_>) -> Result<bool> {
    Ok(head.first_object().is_some_and(is_header))
}

/// A `session` header as pi writes it.
pub fn is_header(o: &serde_json::Map<String, Value>) -> bool {
    o.get("type").and_then(Value::as_str) == Some("session")
        && o.get("id").is_some_and(Value::is_string)
        && o.get("timestamp").is_some_and(Value::is_string)
        && o.get("cwd").is_some_and(Value::is_string)
        && o.get("version").is_none_or(Value::is_number)
}

fn open(path: &Path, limits: Limits) -> Result<Opened> {
    Ok(Opened::History(Box::new(OneFile::open(
        path,
        limits,
        Format::Jsonl,
        Dialect::Pi,
        |path, limits, info| load::load(path, limits).map(|l| read::conversation(l, info)),
    )?)))
}
