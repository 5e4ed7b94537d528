//! Simon Willison's `llm` CLI: its `logs.db` (`llm logs path`).
//!
//! Up to llm 0.31, a conversation is a `conversations` row and its
//! `responses` rows; each response holds the prompt sent (`prompt`,
//! `system`), the model's text (`response`), the calls the model made
//! (`tool_calls` rows) and the results of the previous response's calls
//! sent with this prompt (`tool_results` rows). `logs` reads each
//! conversation as `llm -c` replays it (`writer` repairs it in a copy).
//!
//! From llm 0.32 on, migration `m023_message_store` adds a
//! content-addressed message store (`messages` with `parent_hash`,
//! `parts`, `threads` with `tip_message_hash`, `turns`) that `llm -c`
//! replays instead: not read yet, a database that has it is refused with
//! one line naming that schema, never reported clean.

pub mod discover;
pub mod logs;
pub mod profile;
mod pyjson;
pub mod writer;

use crate::format::store::{Hooks, Opened, Probe, Store, Writing};
use crate::model::{Dialect, Format};
use crate::source::sqlite;

pub static STORE: Store = Store {
    name: "llm logs (logs.db)",
    formats: &[Format::SqliteTable],
    dialects: &[Dialect::Llm],
    probe: Probe::Sqlite {
        detect,
        open: |path, snap| Ok(Opened::History(Box::new(logs::open(path, snap)?))),
    },
    writing: Writing::Copy {
        supports: writer::supports,
        new: writer::new,
    },
    hooks: Hooks::NONE,
};

/// The tables of llm 0.32's message store (migration `m023_message_store`).
const MESSAGE_STORE: [&str; 4] = ["messages", "parts", "threads", "turns"];

/// Whether the database is llm's: its `_llm_migrations` table, and
/// `conversations` and `responses` with llm's columns. A database with
/// llm 0.32's message store is llm's too, and refused (`Err`).
pub fn detect(conn: &rusqlite::Connection, tables: &[String]) -> Result<bool, String> {
    let has = |t: &str| tables.iter().any(|x| x == t);
    if !(has("_llm_migrations") && has("conversations") && has("responses")) {
        return Ok(false);
    }
    let all = |table: &str, want: &[&str]| -> Result<bool, String> {
        let cols = sqlite::columns(conn, table).map_err(|e| sqlite::cause(&e))?;
        Ok(want.iter().all(|c| cols.iter().any(|x| x == c)))
    };
    if !(all("conversations", &["id", "model"])?
        && all(
            "responses",
            &[
                "id",
                "model",
                "prompt",
                "system",
                "response",
                "conversation_id",
            ],
        )?)
    {
        return Ok(false);
    }
    let store: Vec<&str> = MESSAGE_STORE.into_iter().filter(|t| has(t)).collect();
    if !store.is_empty() {
        return Err(format!(
            "an llm logs.db with the message store of llm 0.32 and later (tables {}; migration `m023_message_store`), which `llm -c` replays instead of `responses`: that schema is not read yet",
            store.join(", ")
        ));
    }
    Ok(true)
}
