//! Open WebUI on PostgreSQL (`DATABASE_URL=postgresql://…`): the same
//! `chat` table as `webui.db` (open_webui/models/chats.py, 0.12.4: `id`
//! the primary key, `chat` a SQLAlchemy `JSON` column, PostgreSQL's `json`
//! type since migration `242a2047eae0`), read as [`super`] reads it.
//!
//! `json` keeps the text as written: a `\u0000` escape and a lone
//! surrogate escape (`\ud83d`) are stored, while `jsonb` and every JSON
//! operator on the chat refuse them. So the column is read as text
//! (`chat::text`) and parsed here; the chats that hold either are findings
//! (`nul-escape`, `lone-surrogate`) saying what PostgreSQL and Open WebUI
//! do with them.
//!
//! Read as the other PostgreSQL stores are (`message_table::postgres`,
//! `langgraph::postgres`): a read-only session, one `READ ONLY REPEATABLE
//! READ` transaction, the chats streamed by a server-side cursor in `id`
//! order, a few at a time. Repaired into a script or another database
//! (`pg_writer`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use postgres::Client;

use super::{TABLE, read_value, row_loc};
use crate::error::{Error, Result};
use crate::format::message_table::postgres as pg;
use crate::format::store::{Hooks, Opened, Probe, Store, Writing};
use crate::model::{Conversation, Dialect, Format, NulEscapes, SourceInfo};
use crate::source::Source;

pub static STORE: Store = Store {
    name: "Open WebUI database (PostgreSQL)",
    formats: &[Format::PostgresTable],
    dialects: &[Dialect::OpenWebui],
    probe: Probe::Postgres {
        detect,
        open: |path| Ok(Opened::History(Box::new(open(path)?))),
    },
    writing: Writing::Copy {
        supports: super::writer::supports,
        new: super::pg_writer::new,
    },
    hooks: Hooks::NONE,
};

/// Chats fetched per round trip: a chat can be megabytes.
const BATCH: usize = 16;

/// What Open WebUI does with a chat whose text holds `\u0000`.
const NUL_EFFECT: &str = "Open WebUI 0.12.4 leaves the chat out of every chat search on PostgreSQL (its `Chat.chat::text NOT LIKE '%\\\\u0000%'` filter)";

/// Whether the database is Open WebUI's: its migrations table, `chat` and
/// `auth` (Open WebUI's own, since its first migration).
pub fn detect(tables: &[String]) -> bool {
    ["alembic_version", TABLE, "auth"]
        .iter()
        .all(|t| tables.iter().any(|x| x == t))
}

pub struct Chats {
    client: Client,
    path: PathBuf,
    info: Arc<SourceInfo>,
    rows: pg::Cursor,
    failed: bool,
}

/// Open the database at `arg` (a `postgres:` URL) as Open WebUI chats.
pub fn open(arg: &Path) -> Result<Chats> {
    let t = pg::target(&arg.to_string_lossy())?;
    let mut client = pg::connect(&t)?;
    let path = t.path();
    let fail = |e: postgres::Error| Error::input(&path, pg::cause(&e));
    let cols: Vec<String> = client
        .query(
            "SELECT column_name::text FROM information_schema.columns WHERE table_schema = ANY (current_schemas(false)) AND table_name = $1",
            &[&TABLE],
        )
        .map_err(fail)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if !["id", "chat"].iter().all(|c| cols.iter().any(|x| x == c)) {
        return Err(Error::input(
            &path,
            "its `chat` table has no `id` and `chat` columns: not Open WebUI's",
        ));
    }
    client
        .batch_execute(
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
             DECLARE chatfsck_chats NO SCROLL CURSOR FOR \
             SELECT id::text, chat::text FROM chat ORDER BY id",
        )
        .map_err(fail)?;
    Ok(Chats {
        client,
        info: Arc::new(SourceInfo {
            path: path.clone(),
            format: Format::PostgresTable,
            dialect: Dialect::OpenWebui,
        }),
        path,
        rows: pg::Cursor::new("chatfsck_chats", BATCH),
        failed: false,
    })
}

impl Source for Chats {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        if self.failed {
            return None;
        }
        let r = self.next().transpose()?;
        if r.is_err() {
            self.failed = true;
        }
        Some(r.map_err(|cause| Error::input(&self.path, cause)))
    }
}

impl Chats {
    fn next(&mut self) -> std::result::Result<Option<Conversation>, String> {
        let c = |e: postgres::Error| pg::cause(&e);
        let Some(row) = self.rows.next(&mut self.client)? else {
            // Read-only: nothing to commit; the cursor closes with it.
            let _ = self.client.batch_execute("ROLLBACK");
            return Ok(None);
        };
        let id: String = row.try_get(0).map_err(c)?;
        let text: Option<String> = row.try_get(1).map_err(c)?;
        let text = text.unwrap_or_default();
        let mut conv = Conversation::new(id.clone(), self.info.clone());
        let nul = nul_escapes(text.as_bytes());
        if nul > 0 {
            conv.nul_escapes.push(NulEscapes {
                loc: row_loc(&id, None),
                count: nul,
                effect: NUL_EFFECT,
            });
        }
        read_value(&mut conv, &id, None, text.as_bytes());
        Ok(Some(conv))
    }
}

/// How many `\u0000` escapes JSON text holds (an escaped backslash
/// before `u0000` is not one).
pub fn nul_escapes(text: &[u8]) -> u32 {
    let mut n = 0;
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'\\' {
            if text[i + 1..].starts_with(b"u0000") {
                n += 1;
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::nul_escapes;

    #[test]
    fn nul_escapes_are_counted_and_escaped_backslashes_are_not() {
        assert_eq!(nul_escapes(br#"{"a":"x\u0000y\u0000"}"#), 2);
        assert_eq!(nul_escapes(br#"{"a":"x\\u0000"}"#), 0);
        assert_eq!(nul_escapes(br#"{"a":"x\u00001"}"#), 1);
        assert_eq!(nul_escapes(br#"{"a":"\"}"#), 0);
        assert_eq!(nul_escapes(b"\\"), 0);
    }
}
