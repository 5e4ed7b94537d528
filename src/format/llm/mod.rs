//! Simon Willison's `llm` CLI: its `logs.db` (`llm logs path`).
//!
//! Up to llm 0.31, a conversation is a `conversations` row and its
//! `responses` rows; each response holds the prompt sent (`prompt`,
//! `system`), the model's text (`response`), the calls the model made
//! (`tool_calls` rows) and the results of the previous response's calls
//! sent with this prompt (`tool_results` rows). `logs` reads each
//! conversation as `llm -c` replays it (`writer` repairs it in a copy).
//!
//! From llm 0.32 on (through 0.36), migration `m023_message_store` adds a
//! content-addressed message store (`messages` with `parent_hash`,
//! `parts`, `threads` with `tip_message_hash`, `turns`) that `llm -c`
//! replays instead for a conversation that has a thread: `store` reads it
//! (and `logs` the legacy rows of conversations without one). A database
//! whose store lacks a column the reader reads, or that names a migration
//! llm 0.36 does not have (a newer llm's schema), is refused with one
//! line, never reported clean.

pub mod discover;
mod hash;
pub mod logs;
pub mod profile;
mod pyjson;
mod rethread;
pub mod store;
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

/// Whether the database is llm's: its `_llm_migrations` table, and
/// `conversations` and `responses` with llm's columns. A database with a
/// message store this reader does not know (a column missing, or a
/// migration newer than llm 0.36's) is llm's too, and refused (`Err`).
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
    let newer: Vec<String> = {
        let mut st = conn
            .prepare("SELECT CAST(name AS TEXT) FROM _llm_migrations")
            .map_err(|e| sqlite::cause(&e))?;
        let names = st
            .query_map([], |r| r.get::<_, Option<String>>(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| sqlite::cause(&e))?;
        names
            .into_iter()
            .flatten()
            .filter(|n| !store::KNOWN_MIGRATIONS.contains(&n.as_str()))
            .collect()
    };
    if !newer.is_empty() {
        return Err(format!(
            "an llm logs.db migrated by an llm newer than 0.36 (migration {}): that schema is not read yet",
            newer
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !store::COLUMNS.iter().any(|(t, _)| has(t)) {
        return Ok(true);
    }
    for (table, want) in store::COLUMNS {
        if !has(table) {
            return Err(format!(
                "an llm logs.db with part of llm 0.32's message store (no `{table}` table; migration `m023_message_store`): that schema is not read"
            ));
        }
        let cols = sqlite::columns(conn, table).map_err(|e| sqlite::cause(&e))?;
        if let Some(c) = want.iter().find(|c| !cols.iter().any(|x| x == *c)) {
            return Err(format!(
                "an llm logs.db whose message store's `{table}` has no `{c}` column (not the shape of llm 0.32 to 0.36): that schema is not read"
            ));
        }
    }
    Ok(true)
}
