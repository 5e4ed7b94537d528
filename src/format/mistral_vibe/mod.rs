//! Mistral Vibe's unified session store (`mistral-vibe` 3.0.3 on PyPI,
//! read from its published source, `mistralai_vibe_local_harness/vibe/_storage.py`):
//! `<root>/unified/<session-id>/` holds a `CURRENT` pointer, the
//! generation it names (`generations/<16 digits>/manifest.json`,
//! `checkpoint.json`, `runtime-state.json`, `projection-state.json`), the
//! content-addressed transcript chunks (`chunks/<sha256>.json`) and the
//! hash-linked recovery journal (`journal/<16 digits>.jsonl`). The input
//! chatfsck takes is the `CURRENT` file; the rest is read beside it
//! ([`load`]), every digest checked as the client checks it, and the
//! checkpoint's context messages mapped to the common model (`read.rs`).
//!
//! A repaired copy is published as the client publishes a generation:
//! new chunks, a new generation's manifest and `CURRENT`, every digest
//! recomputed by the client's rules (`writer.rs`).

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
    name: "Mistral Vibe session",
    formats: &[Format::Json],
    dialects: &[Dialect::MistralVibe],
    probe: Probe::Text { detect, open },
    writing: Writing::Copy {
        supports,
        new: writer::new,
    },
    // Its reader reads the generation, chunks and journal beside `CURRENT`.
    hooks: Hooks {
        reads_beside: true,
        ..Hooks::NONE
    },
};

/// What the writer carries out in a Vibe session (see `writer.rs`).
fn supports(_: Dialect, a: &Action) -> bool {
    matches!(a, Action::RemoveResult { .. } | Action::AnswerCall { .. })
}

/// A Vibe `CURRENT` pointer of the store format this reader knows: one
/// line as Vibe writes it, or, named `CURRENT`, a pointer written back in
/// another form (which Vibe refuses, and the reader says so).
fn detect(head: &Head<'_>) -> Result<bool> {
    if head.first_object().is_some_and(load::is_pointer) {
        return Ok(true);
    }
    Ok(head.path.file_name().is_some_and(|n| n == "CURRENT")
        && serde_json::from_slice::<serde_json::Value>(head.bytes)
            .ok()
            .as_ref()
            .and_then(serde_json::Value::as_object)
            .is_some_and(load::is_pointer))
}

fn open(path: &Path, limits: Limits) -> Result<Opened> {
    let read: fn(&Path, Limits, Arc<SourceInfo>) -> Result<crate::model::Conversation> =
        |path, _limits, info| load::load(path).map(|l| read::conversation(l, info));
    OneFile::open(path, limits, Format::Json, Dialect::MistralVibe, read)
        .map(|s| Opened::History(Box::new(s)))
}
