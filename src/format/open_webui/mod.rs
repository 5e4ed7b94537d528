//! Open WebUI (open-webui/open-webui): its `webui.db` (SQLite), or the same
//! tables in PostgreSQL ([`postgres`]). Table `chat(id, user_id, title, chat JSON, created_at,
//! updated_at, …)`, one row per conversation. The `chat` column holds
//! `{title, models, history: {messages: {<id>: {id, parentId, childrenIds,
//! role, content, timestamp, …}}, currentId}, messages: […], …}`: the
//! messages as a tree, each linked to its parent and its children, and
//! `currentId`, the message shown last (read in [`tree`]). Chats written
//! before the tree have only the `messages` list, read in its order.
//!
//! How the app reads it ([`tree`] says what each part of the app heals):
//!
//! - the web app (`createMessagesList`, src/lib/utils/index.ts, 0.12.4)
//!   walks `parentId` up from `currentId` and shows (and sends to the
//!   model) what that walk reaches;
//! - the backend (`ChatTable.get_chat_by_id` / `_repair_chat_current_id`,
//!   open_webui/models/chats.py, 0.12.4) mends some of the links when it
//!   loads a chat, and writes them back.
//!
//! Repaired into a copy ([`writer`]; on PostgreSQL into a script or another
//! database, [`pg_writer`]): each broken tree re-linked so that every
//! stored message is reachable and the walk ends.
//!
//! Each message points at its chat's row (`chat`, key: the chat's id
//! and the message's key).

pub mod discover;
mod pg_writer;
pub mod postgres;
pub mod profile;
pub mod tree;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::error::Result;
use crate::format::records::record::replace_lone_surrogates;
use crate::format::store::{Hooks, Opened, Probe, Store, Writing};
use crate::model::{Conversation, CorruptRecord, Dialect, Format, Loc, Name, SourceInfo};
use crate::source::Source;
use crate::source::sqlite::{self, Snapshot};

pub static STORE: Store = Store {
    name: "Open WebUI database (webui.db)",
    formats: &[Format::SqliteTable],
    dialects: &[Dialect::OpenWebui],
    probe: Probe::Sqlite {
        detect: |conn, tables| detect(conn, tables).map_err(|e| sqlite::cause(&e)),
        open: |path, snap| Ok(Opened::History(Box::new(open(path, snap)?))),
    },
    writing: Writing::Copy {
        supports: writer::supports,
        new: writer::new,
    },
    hooks: Hooks::NONE,
};

pub const TABLE: &str = "chat";

/// Whether the database is Open WebUI's: an `alembic_version` table and a
/// `chat` table with Open WebUI's columns.
pub fn detect(conn: &rusqlite::Connection, tables: &[String]) -> rusqlite::Result<bool> {
    let has = |t: &str| tables.iter().any(|x| x == t);
    if !(has("alembic_version") && has(TABLE)) {
        return Ok(false);
    }
    let cols = sqlite::columns(conn, TABLE)?;
    Ok(
        ["id", "user_id", "title", "chat", "created_at", "updated_at"]
            .iter()
            .all(|c| cols.iter().any(|x| x == c)),
    )
}

pub struct Chats {
    path: PathBuf,
    info: Arc<SourceInfo>,
    snap: Snapshot,
    /// Every chat's rowid, in the order of the table.
    rows: std::vec::IntoIter<i64>,
}

pub fn open(path: &Path, snap: Snapshot) -> Result<Chats> {
    let info = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: Format::SqliteTable,
        dialect: Dialect::OpenWebui,
    });
    let rows = (|| -> rusqlite::Result<Vec<i64>> {
        let mut st = snap.conn.prepare("SELECT rowid FROM chat ORDER BY rowid")?;
        st.query_map([], |r| r.get(0))?.collect()
    })()
    .map_err(sqlite::error_of(path))?;
    Ok(Chats {
        path: path.to_path_buf(),
        info,
        snap,
        rows: rows.into_iter(),
    })
}

impl Source for Chats {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        let rowid = self.rows.next()?;
        Some(read_chat(&self.snap.conn, rowid, &self.info).map_err(sqlite::error_of(&self.path)))
    }
}

/// Where message `key` of chat `chat` is stored (`rowid`: SQLite's).
pub fn loc(chat: &str, rowid: Option<i64>, key: &str) -> Loc {
    Loc::Row {
        table: Name::Static(TABLE),
        key: Arc::from(format!("{chat}/{key}")),
        rowid,
    }
}

/// The chat row itself.
pub fn row_loc(chat: &str, rowid: Option<i64>) -> Loc {
    Loc::Row {
        table: Name::Static(TABLE),
        key: Arc::from(chat),
        rowid,
    }
}

fn read_chat(
    conn: &rusqlite::Connection,
    rowid: i64,
    info: &Arc<SourceInfo>,
) -> rusqlite::Result<Conversation> {
    let mut st = conn.prepare_cached("SELECT CAST(id AS TEXT), chat FROM chat WHERE rowid = ?1")?;
    let mut rows = st.query([rowid])?;
    let Some(r) = rows.next()? else {
        return Ok(Conversation::new(rowid.to_string(), info.clone()));
    };
    let id = sqlite::text(r.get_ref(0)?).unwrap_or_else(|| rowid.to_string());
    let raw: Vec<u8> = match r.get_ref(1)? {
        rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => t.to_vec(),
        rusqlite::types::ValueRef::Null => Vec::new(),
        other => sqlite::text(other).unwrap_or_default().into_bytes(),
    };
    let mut conv = Conversation::new(id.clone(), info.clone());
    read_value(&mut conv, &id, Some(rowid), &raw);
    Ok(conv)
}

/// Read chat `id`'s `chat` column (`raw`, its JSON text) into `conv`.
pub fn read_value(conv: &mut Conversation, id: &str, rowid: Option<i64>, raw: &[u8]) {
    let at = row_loc(id, rowid);
    // Python's `json.loads` (the backend's reader) and `JSON.parse` take a
    // lone surrogate escape; it is read here as U+FFFD, and counted.
    let (fixed, lone) = replace_lone_surrogates(raw);
    let value = match serde_json::from_slice::<Value>(fixed.as_deref().unwrap_or(raw)) {
        Ok(v) => v,
        Err(e) => {
            let why = if raw.is_empty() {
                "the `chat` column is empty".to_string()
            } else {
                format!("the `chat` column is not JSON ({e})")
            };
            conv.corrupt.push(CorruptRecord::new(
                at,
                format!("chat {id}: {why}"),
                raw,
                false,
            ));
            return;
        }
    };
    conv.note_lone_surrogates(&at, lone);
    tree::read(conv, &value, id, rowid);
}
