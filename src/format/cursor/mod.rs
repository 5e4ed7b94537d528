//! Cursor's global state database (`<User>/globalStorage/state.vscdb`).
//!
//! VS Code's `ItemTable(key, value)` beside Cursor's `cursorDiskKV(key,
//! value)`, whose keys `composerData:<composerId>` (one per chat session,
//! "composer") and `bubbleId:<composerId>:<bubbleId>` (one per bubble) hold
//! JSON. One conversation per composer: its bubbles in the order of
//! `composerData.fullConversationHeadersOnly[].bubbleId` (database order
//! only when that list is absent); bubble `type` 1 is a user message, 2 an
//! assistant one, and consecutive assistant bubbles (thinking, text, tool
//! bubbles of one turn) are one assistant message. A `toolFormerData`
//! bubble is the call and its result (`toolCallId`; `params` and `result`
//! are JSON strings); only `completed` and `error` have a result. Bubbles
//! of other types, and bubbles the header list does not name, are counted
//! as meta records; a header naming a bubble with no row is a
//! [`MissingRecord`] (`dangling-bubble-header`). Older composers without a
//! header list keep their bubbles inline in `composerData.conversation`
//! (read in that order, each pointing at `composerData:<id>#conversation[i]`),
//! and a composer that holds nothing (Cursor writes one per new chat tab)
//! is not a conversation.
//!
//! Cursor is closed source: what it sends on resume is not known. The
//! layout follows txcript's reader (checked by its author against Cursor
//! 3.16). A repaired copy is not written in Cursor's format (the shapes of
//! a settled tool bubble are not known), so `repair` leaves every finding,
//! with the reason. The per-workspace chat store of 2024
//! (`workbench.panel.aichat.view.aichat.chatdata`) is not read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::store::{Opened, Probe, Store, Writing};
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::format::records::record::tree_as_lenient_readers_read;
use crate::model::{
    ArgEncoding, Arguments, Conversation, CorruptRecord, Dialect, Format, Loc, Message,
    MissingRecord, Name, PartKind, Role, SourceInfo,
};
use crate::source::Source;
use crate::source::sqlite::{self, Snapshot};
use crate::write::{Log, Planned, Target, Writer};

pub static STORE: Store = Store {
    name: "Cursor state (state.vscdb)",
    formats: &[Format::SqliteKv],
    dialects: &[Dialect::Cursor],
    probe: Probe::Sqlite {
        detect: |conn, tables| detect(conn, tables).map_err(|e| sqlite::cause(&e)),
        open: |path, snap| Ok(Opened::History(Box::new(open(path, snap)?))),
    },
    writing: Writing::Copy {
        supports,
        new: writer,
    },
};

pub const TABLE: &str = "cursorDiskKV";

/// Whether the database is Cursor's: `ItemTable` and `cursorDiskKV` (key,
/// value) with at least one `composerData:` key. VS Code's own
/// `state.vscdb` has `ItemTable` only.
pub fn detect(conn: &rusqlite::Connection, tables: &[String]) -> rusqlite::Result<bool> {
    let has = |t: &str| tables.iter().any(|x| x == t);
    if !(has("ItemTable") && has(TABLE)) {
        return Ok(false);
    }
    let cols = sqlite::columns(conn, TABLE)?;
    if !["key", "value"].iter().all(|c| cols.iter().any(|x| x == c)) {
        return Ok(false);
    }
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;')",
        [],
        |r| r.get(0),
    )
}

/// No action is carried out: Cursor is closed source, and the shape of a
/// settled tool bubble or of a repaired header list it accepts is not
/// known (it rejects composer documents it does not expect: `Failed to
/// load composer data`).
pub fn supports(_: Dialect, _: &Action) -> bool {
    false
}

/// The writer: with no action supported, the copy is the database as it
/// is (made with the backup API, checked like every SQLite copy).
fn writer(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(Copy {
        input: t.input.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
    }))
}

struct Copy {
    input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
}

impl Writer for Copy {
    fn plan(&mut self, _: &Conversation, _: &[Planned<'_>], _: &mut Log) -> Result<()> {
        Ok(())
    }

    fn write(self: Box<Self>, _: &mut Log) -> Result<()> {
        let Some(out) = &self.output else {
            return Ok(());
        };
        let snap = sqlite::open(&self.input)?;
        crate::write::sqlite::edit_sqlite_copy(&self.input, out, self.force, snap, |_| Ok(()))
    }
}

pub struct Composers {
    path: PathBuf,
    info: Arc<SourceInfo>,
    snap: Snapshot,
    /// (rowid, composer id, `composerData` value)
    ids: std::vec::IntoIter<(i64, String)>,
}

pub fn open(path: &Path, snap: Snapshot) -> Result<Composers> {
    let info = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: Format::SqliteKv,
        dialect: Dialect::Cursor,
    });
    let ids = (|| -> rusqlite::Result<Vec<(i64, String)>> {
        let mut st = snap.conn.prepare(
            "SELECT rowid, key FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;' ORDER BY key",
        )?;
        let rows = st.query_map([], |r| {
            Ok((r.get(0)?, sqlite::text(r.get_ref(1)?).unwrap_or_default()))
        })?;
        rows.collect()
    })()
    .map_err(sqlite::error_of(path))?;
    Ok(Composers {
        path: path.to_path_buf(),
        info,
        snap,
        ids: ids.into_iter(),
    })
}

impl Source for Composers {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        loop {
            let (rowid, key) = self.ids.next()?;
            match read_composer(&self.snap.conn, rowid, &key, &self.info) {
                // Cursor writes a composer for every new chat tab: one
                // that holds nothing at all is not a conversation.
                Ok(c) if c.messages.is_empty() && c.missing.is_empty() && c.corrupt.is_empty() => {
                    continue;
                }
                Ok(c) => return Some(Ok(c)),
                Err(e) => return Some(Err(Error::input(&self.path, sqlite::cause(&e)))),
            }
        }
    }
}

fn loc(key: &str, rowid: i64) -> Loc {
    Loc::Row {
        table: Name::Static(TABLE),
        key: Arc::from(key),
        rowid: Some(rowid),
    }
}

fn bytes(v: rusqlite::types::ValueRef<'_>) -> Vec<u8> {
    match v {
        rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => t.to_vec(),
        other => sqlite::text(other).unwrap_or_default().into_bytes(),
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// A bubble row: its key, rowid and value.
struct Bubble {
    rowid: i64,
    key: String,
    id: String,
    value: Vec<u8>,
}

fn read_composer(
    conn: &rusqlite::Connection,
    rowid: i64,
    key: &str,
    info: &Arc<SourceInfo>,
) -> rusqlite::Result<Conversation> {
    let composer = key.strip_prefix("composerData:").unwrap_or(key);
    let mut conv = Conversation::new(composer, info.clone());
    let data: Vec<u8> = conn.query_row(
        "SELECT value FROM cursorDiskKV WHERE rowid = ?1",
        [rowid],
        |r| Ok(bytes(r.get_ref(0)?)),
    )?;
    let data_loc = loc(key, rowid);
    let lo = format!("bubbleId:{composer}:");
    let hi = format!("bubbleId:{composer};");
    let mut st = conn.prepare_cached(
        "SELECT rowid, key, value FROM cursorDiskKV WHERE key >= ?1 AND key < ?2 ORDER BY rowid",
    )?;
    let mut bubbles: Vec<Bubble> = st
        .query_map([&lo, &hi], |r| {
            let key = sqlite::text(r.get_ref(1)?).unwrap_or_default();
            Ok(Bubble {
                rowid: r.get(0)?,
                id: key[lo.len()..].to_string(),
                key,
                value: bytes(r.get_ref(2)?),
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    // Older composers keep their bubbles inline, in `conversation`.
    let mut inline = Vec::new();
    // Read as Cursor's `JSON.parse` reads it: a lone surrogate escape (an
    // emoji cut in two) as U+FFFD, noted for `lone-surrogate`.
    let headers: Option<Vec<Option<String>>> = match tree_as_lenient_readers_read(&data) {
        Ok((mut v, lone)) => {
            conv.note_lone_surrogates(&data_loc, lone);
            let headers = v
                .get("fullConversationHeadersOnly")
                .and_then(Value::as_array)
                .map(|hs| {
                    hs.iter()
                        .map(|h| str_of(h, "bubbleId").map(str::to_string))
                        .collect()
                });
            if headers.is_none()
                && let Some(Value::Array(items)) = v.get_mut("conversation").map(Value::take)
            {
                inline = items;
            }
            headers
        }
        Err(e) => {
            conv.corrupt.push(CorruptRecord::new(
                data_loc.clone(),
                format!("`{key}` is not JSON ({e})"),
                &data,
                false,
            ));
            None
        }
    };
    conv.meta_records += 1; // the composerData row itself
    let mut run_open = false;
    match headers {
        Some(headers) => {
            let mut used = vec![false; bubbles.len()];
            let by_id: foldhash::HashMap<&str, usize> = bubbles
                .iter()
                .enumerate()
                .map(|(i, b)| (b.id.as_str(), i))
                .collect();
            for (i, h) in headers.iter().enumerate() {
                let found = h.as_deref().and_then(|id| by_id.get(id).copied());
                match found {
                    Some(bi) => {
                        used[bi] = true;
                        add_bubble(&mut conv, &bubbles[bi], &mut run_open);
                    }
                    None => conv.missing.push(MissingRecord {
                        loc: data_loc.clone(),
                        field: format!("fullConversationHeadersOnly[{i}]"),
                        key: match h {
                            Some(id) => format!("bubbleId:{composer}:{id}"),
                            None => "(no bubbleId)".to_string(),
                        },
                        // Inside an assistant run, the run's own message.
                        before_message: conv.messages.len() - usize::from(run_open),
                    }),
                }
            }
            // Rows the header list does not name are not loaded.
            conv.meta_records += used.iter().filter(|u| !**u).count() as u64;
        }
        None => {
            for (i, item) in inline.iter().enumerate() {
                let b = Bubble {
                    rowid,
                    key: format!("{key}#conversation[{i}]"),
                    id: str_of(item, "bubbleId").unwrap_or("").to_string(),
                    value: serde_json::to_vec(item).unwrap_or_default(),
                };
                add_bubble(&mut conv, &b, &mut run_open);
            }
            for b in std::mem::take(&mut bubbles) {
                add_bubble(&mut conv, &b, &mut run_open);
            }
        }
    }
    Ok(conv)
}

/// Add one bubble: a user message, a part of the current assistant run, or
/// a meta record.
fn add_bubble(conv: &mut Conversation, b: &Bubble, run_open: &mut bool) {
    let at = loc(&b.key, b.rowid);
    let v: Value = match tree_as_lenient_readers_read(&b.value) {
        Ok((v @ Value::Object(_), lone)) => {
            conv.note_lone_surrogates(&at, lone);
            v
        }
        Ok(_) => {
            conv.corrupt.push(CorruptRecord::new(
                at,
                "bubble is not a JSON object".into(),
                &b.value,
                false,
            ));
            return;
        }
        Err(e) => {
            conv.corrupt.push(CorruptRecord::new(
                at,
                format!("bubble is not JSON ({e})"),
                &b.value,
                false,
            ));
            return;
        }
    };
    match v.get("type").and_then(Value::as_i64) {
        Some(1) => {
            *run_open = false;
            let mut m = Message::new(Role::User, at.clone());
            m.push(
                PartKind::Text {
                    text: str_of(&v, "text").unwrap_or("").into(),
                },
                at,
            );
            conv.messages.push(m);
        }
        Some(2) => {
            if !*run_open {
                conv.messages
                    .push(Message::new(Role::Assistant, at.clone()));
                *run_open = true;
            }
            let m = conv.messages.last_mut().expect("a run has its message");
            if let Some(t) = v.get("thinking").and_then(|t| str_of(t, "text")) {
                m.push(PartKind::Thinking { text: t.into() }, at.clone());
            }
            if let Some(t) = str_of(&v, "text").filter(|t| !t.is_empty()) {
                m.push(PartKind::Text { text: t.into() }, at.clone());
            }
            if let Some(tool) = v.get("toolFormerData").filter(|t| t.is_object()) {
                let id = str_of(tool, "toolCallId").unwrap_or("").to_string();
                let args = [str_of(tool, "params"), str_of(tool, "rawArgs")]
                    .into_iter()
                    .flatten()
                    .find(|a| !a.is_empty())
                    .unwrap_or("{}");
                m.push(
                    PartKind::ToolCall {
                        id: id.clone(),
                        name: str_of(tool, "name").unwrap_or("").to_string(),
                        arguments: Arguments {
                            raw: args.into(),
                            encoding: ArgEncoding::JsonString,
                        },
                    },
                    at.clone(),
                );
                let status = str_of(tool, "status").unwrap_or("");
                if matches!(status, "completed" | "error") {
                    m.push(
                        PartKind::ToolResult {
                            call_id: id,
                            content: str_of(tool, "result").unwrap_or("").into(),
                            is_error: Some(status == "error"),
                        },
                        at,
                    );
                }
            }
        }
        // Other bubble types (e.g. 7) are not messages.
        _ => conv.meta_records += 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty composer is skipped; an older one with inline bubbles is
    /// read in their order.
    #[test]
    fn inline_bubbles_are_read_and_empty_composers_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.vscdb");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            r#"CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
               CREATE TABLE cursorDiskKV (key TEXT PRIMARY KEY, value BLOB);
               INSERT INTO cursorDiskKV VALUES ('composerData:a', '{"_v":3,"composerId":"a","fullConversationHeadersOnly":[]}');
               INSERT INTO cursorDiskKV VALUES ('composerData:b', '{"_v":2,"composerId":"b","conversation":[{"type":1,"bubbleId":"1","text":"hi"},{"type":2,"bubbleId":"2","text":"hello"}]}');"#,
        )
        .unwrap();
        let tables = sqlite::tables(&conn).unwrap();
        assert!(detect(&conn, &tables).unwrap());
        let mut src = open(&path, sqlite::open(&path).unwrap()).unwrap();
        let c = src.next_conversation().unwrap().unwrap();
        assert_eq!(c.id, "b");
        let roles: Vec<Role> = c.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant]);
        assert!(src.next_conversation().is_none());
    }
}
