//! Kimi Code's sessions (`@moonshot-ai/kimi-code`, read here as 2.1.0
//! reads them): `~/.kimi-code/sessions/<workdir-key>/<session>/` holds a
//! `state.json` and, for each agent (`main`, and each subagent), an event
//! journal `agents/<agent>/wire.jsonl`. Its first line is a `metadata`
//! record (`protocol_version` `1.5`, `created_at`); every other line one
//! record with a `type`: `turn.prompt`, `context.append_message`,
//! `context.append_loop_event` (`step.begin`, `content.part`,
//! `tool.call`, `tool.result`, `step.end`), `llm.request`,
//! `usage.record`, and the UI's `kind: event` records
//! (`agent.message.appended`, `agent.turn.started`…). The client appends
//! whole lines and, on resume, rebuilds each agent's context from the
//! `context.*` records alone ([`load`], [`read`]); a repaired copy is
//! written in its own terms (`writer.rs`). A journal of protocol 1.0 to
//! 1.4 is read as the client migrates it to 1.5 ([`load`]); one of
//! another version is left to `format::unsupported`, which refuses it.

pub mod discover;
pub mod load;
pub mod profile;
mod read;
mod writer;

use std::path::Path;
use std::sync::Arc;

use super::store::{Head, Hooks, Opened, Probe, Store, Writing};
use crate::error::Result;
use crate::finding::Action;
use crate::model::{Dialect, Format, SourceInfo};
use crate::source::{Limits, OneFile};

pub static STORE: Store = Store {
    name: "Kimi Code session",
    formats: &[Format::Jsonl],
    dialects: &[Dialect::KimiCode],
    probe: Probe::Text { detect, open },
    writing: Writing::Copy {
        supports,
        new: writer::new,
    },
    hooks: Hooks::NONE,
};

/// What the writer carries out in Kimi Code's own format (see `writer.rs`).
fn supports(_: Dialect, a: &Action) -> bool {
    matches!(
        a,
        Action::DropRecord { .. }
            | Action::RemoveResult { .. }
            | Action::AnswerCall { .. }
            | Action::MoveAfter { .. }
    )
}

/// A Kimi Code wire journal of the protocol version this reader knows,
/// from its first line.
fn detect(head: &Head<'_>) -> Result<bool> {
    Ok(head.first_object().is_some_and(load::is_known_metadata))
}

fn open(path: &Path, limits: Limits) -> Result<Opened> {
    let read: fn(&Path, Limits, Arc<SourceInfo>) -> Result<crate::model::Conversation> =
        |path, limits, info| load::load(path, limits).map(|l| read::conversation(l, info));
    OneFile::open(path, limits, Format::Jsonl, Dialect::KimiCode, read)
        .map(|s| Opened::History(Box::new(s)))
}
