//! goose's session database (`~/.local/share/goose/sessions/sessions.db`).
//!
//! Tables `schema_version`, `sessions(id, …, working_dir, …)` and
//! `messages(id INTEGER AUTOINCREMENT, session_id, role, content_json,
//! created_timestamp, timestamp, tokens, metadata_json)` (later schema
//! versions add columns and tables; only these are read, by name). One
//! conversation per session: its rows `ORDER BY timestamp, id` (goose orders
//! by `timestamp`, one-second resolution; the id breaks ties), role `user`
//! or `assistant`, `content_json` the content array (`text`, `toolRequest`,
//! `toolResponse`, `thinking`, …), `metadata_json` `{userVisible,
//! agentVisible}`: rows the agent does not see are never sent and are
//! counted as meta records. A `toolRequest` is a call, a `toolResponse`
//! (in the next `user` row) its result, paired by `id`.
//!
//! On every reply goose runs `fix_conversation` over these messages: it
//! drops unanswered requests and stray responses (and a trailing assistant
//! message), synthesises nothing and writes nothing back. Here they are
//! read as stored, and `orphan-tool-call` / `orphan-tool-result` say that
//! goose silently drops them. Every message and part points at its row
//! (`messages`, key and rowid = `id`).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::writer;
use crate::error::Result;
use crate::format::records::lazy::Node;
use crate::format::store::{Hooks, Opened, Probe, Store, Writing};
use crate::model::{
    ArgEncoding, Arguments, Conversation, CorruptRecord, Dialect, Format, Loc, Message, Name,
    PartKind, Role, Slot, SourceInfo,
};
use crate::source::Source;
use crate::source::sqlite::{self, Snapshot};

pub static STORE: Store = Store {
    name: "goose sessions (sessions.db)",
    formats: &[Format::SqliteTable],
    dialects: &[Dialect::Goose],
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

pub const TABLE: &str = "messages";

/// Whether the database is goose's: `schema_version`, `sessions` with a
/// `working_dir`, and `messages` with goose's columns.
pub fn detect(conn: &rusqlite::Connection, tables: &[String]) -> rusqlite::Result<bool> {
    let has = |t: &str| tables.iter().any(|x| x == t);
    if !(has("schema_version") && has("sessions") && has(TABLE)) {
        return Ok(false);
    }
    let all = |table: &str, want: &[&str]| -> rusqlite::Result<bool> {
        let cols = sqlite::columns(conn, table)?;
        Ok(want.iter().all(|c| cols.iter().any(|x| x == c)))
    };
    Ok(all("sessions", &["id", "working_dir"])?
        && all(
            TABLE,
            &[
                "id",
                "session_id",
                "role",
                "content_json",
                "created_timestamp",
            ],
        )?)
}

/// The column goose orders a session's rows by (then by `id`):
/// `timestamp`, or `created_timestamp` in a table without it.
pub fn order_column(conn: &rusqlite::Connection) -> rusqlite::Result<&'static str> {
    let cols = sqlite::columns(conn, TABLE)?;
    Ok(if cols.iter().any(|c| c == "timestamp") {
        "\"timestamp\""
    } else {
        "created_timestamp"
    })
}

pub struct Sessions {
    path: PathBuf,
    info: Arc<SourceInfo>,
    snap: Snapshot,
    ids: std::vec::IntoIter<String>,
    /// A session's row ids in goose's order.
    order: String,
    /// One row's role, content and metadata.
    row: String,
}

pub fn open(path: &Path, snap: Snapshot) -> Result<Sessions> {
    let info = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: Format::SqliteTable,
        dialect: Dialect::Goose,
    });
    let read = || -> rusqlite::Result<(Vec<String>, String, String)> {
        let meta = sqlite::columns(&snap.conn, TABLE)?
            .iter()
            .any(|c| c == "metadata_json");
        // The rows are ordered by their ids alone, then read one by one:
        // sorting whole rows copied a large `content_json` through
        // SQLite's sorter several times over (about 9 MiB of memory for
        // each MB of one message).
        let order = format!(
            "SELECT id FROM messages WHERE session_id = ?1 ORDER BY {}, id",
            order_column(&snap.conn)?
        );
        let row = format!(
            "SELECT role, content_json, {} FROM messages WHERE id = ?1",
            if meta { "metadata_json" } else { "NULL" },
        );
        // Every session that has messages.
        let mut st = snap
            .conn
            .prepare("SELECT DISTINCT CAST(session_id AS TEXT) FROM messages ORDER BY 1")?;
        let rows = st.query_map([], |r| r.get::<_, Option<String>>(0))?;
        let ids = rows
            .filter_map(|r| r.transpose())
            .collect::<rusqlite::Result<_>>()?;
        Ok((ids, order, row))
    };
    let (ids, order, row) = read().map_err(sqlite::error_of(path))?;
    Ok(Sessions {
        path: path.to_path_buf(),
        info,
        snap,
        ids: ids.into_iter(),
        order,
        row,
    })
}

impl Source for Sessions {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        let id = self.ids.next()?;
        Some(
            read_session(&self.snap.conn, (&self.order, &self.row), &id, &self.info)
                .map_err(sqlite::error_of(&self.path)),
        )
    }
}

pub fn loc(id: i64) -> Loc {
    Loc::Row {
        table: Name::Static(TABLE),
        key: Arc::from(id.to_string()),
        rowid: Some(id),
    }
}

/// A row's bytes, borrowed from SQLite's own copy of the value.
fn bytes<'a>(v: rusqlite::types::ValueRef<'a>) -> Cow<'a, [u8]> {
    match v {
        rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => Cow::Borrowed(t),
        other => Cow::Owned(sqlite::text(other).unwrap_or_default().into_bytes()),
    }
}

fn read_session(
    conn: &rusqlite::Connection,
    (order, row): (&str, &str),
    session: &str,
    info: &Arc<SourceInfo>,
) -> rusqlite::Result<Conversation> {
    let mut conv = Conversation::new(session, info.clone());
    let ids: Vec<i64> = conn
        .prepare_cached(order)?
        .query_map([session], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut st = conn.prepare_cached(row)?;
    for id in ids {
        let mut rows = st.query([id])?;
        let Some(r) = rows.next()? else { continue };
        read_row(&mut conv, id, r)?;
    }
    Ok(conv)
}

/// One row, read from SQLite's copy of its value: a large `content_json`
/// costs that copy and the texts taken from it, no more.
fn read_row(conv: &mut Conversation, id: i64, r: &rusqlite::Row<'_>) -> rusqlite::Result<()> {
    let role = sqlite::text(r.get_ref(0)?).unwrap_or_default();
    let content = bytes(r.get_ref(1)?);
    let meta = sqlite::text(r.get_ref(2)?);
    let at = loc(id);
    let bad = |conv: &mut Conversation, why: String| {
        conv.corrupt.push(CorruptRecord::new(
            at.clone(),
            format!("messages row {id}: {why}"),
            &content,
            false,
        ))
    };
    let role = match role.as_str() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        // goose's loader skips any other role.
        _ => {
            conv.meta_records += 1;
            return Ok(());
        }
    };
    // Read lazily where that reads as goose's serde_json does, else as a
    // tree (which also says why a row does not parse).
    let tree: Value;
    let items = match Node::parse(&content) {
        Some(node) => node.items(),
        None => match serde_json::from_slice::<Value>(&content) {
            Ok(v) => {
                tree = v;
                Node::Tree(&tree).items()
            }
            Err(e) => {
                bad(conv, format!("`content_json` is not JSON ({e})"));
                return Ok(());
            }
        },
    };
    let Some(items) = items else {
        bad(conv, "`content_json` is not a JSON array".into());
        return Ok(());
    };
    // Only agent-visible messages are sent.
    let visible = meta
        .and_then(|m| serde_json::from_str::<Value>(&m).ok())
        .and_then(|m| m.get("agentVisible").and_then(Value::as_bool))
        .unwrap_or(true);
    if !visible {
        conv.meta_records += 1;
        return Ok(());
    }
    let mut msg = Message::new(role, at.clone());
    for (i, item) in items.into_iter().enumerate() {
        let kind = part(item);
        msg.push_at(kind, at.clone(), Slot::Item("content_json", i));
    }
    conv.messages.push(msg);
    Ok(())
}

fn str_of<'a>(v: Node<'a>, key: &str) -> Option<Cow<'a, str>> {
    v.get(key).and_then(|s| s.as_str())
}

fn string_of(v: Node<'_>, key: &str) -> String {
    str_of(v, key).map(Cow::into_owned).unwrap_or_default()
}

/// The text of a tool result's content items (one item's text is taken
/// as it is, not copied again).
fn content_text(items: Node<'_>) -> String {
    if let Some(items) = items.items() {
        let mut texts: Vec<Cow<'_, str>> = items
            .into_iter()
            .filter_map(|c| match str_of(c, "type").as_deref() {
                Some("text") => str_of(c, "text"),
                Some(other) => Some(Cow::Owned(format!("[{other}]"))),
                None => None,
            })
            .collect();
        return match texts.len() {
            1 => texts.pop().map(Cow::into_owned).unwrap_or_default(),
            _ => texts.join("\n"),
        };
    }
    if items.is_null() {
        return String::new();
    }
    match items.as_str() {
        Some(s) => s.into_owned(),
        None => items.to_json(),
    }
}

fn part(item: Node<'_>) -> PartKind {
    let ty = str_of(item, "type").unwrap_or_default();
    match ty.as_ref() {
        "text" => PartKind::Text {
            text: string_of(item, "text").into(),
        },
        "thinking" => PartKind::Thinking {
            text: string_of(item, "thinking").into(),
        },
        // Migrated to `thinking` by goose on read.
        "reasoning" => PartKind::Thinking {
            text: string_of(item, "text").into(),
        },
        "toolRequest" => {
            let value = item
                .get("toolCall")
                .filter(|c| str_of(*c, "status").as_deref() == Some("success"))
                .and_then(|c| c.get("value"));
            let name = value.map(|v| string_of(v, "name")).unwrap_or_default();
            let args = match value.and_then(|v| v.get("arguments")) {
                Some(a) if !a.is_null() => a.to_json(),
                _ => "{}".to_string(),
            };
            PartKind::ToolCall {
                id: string_of(item, "id"),
                name,
                arguments: Arguments {
                    raw: args.into(),
                    encoding: ArgEncoding::JsonValue,
                },
            }
        }
        "toolResponse" => {
            let result = item.get("toolResult");
            let (content, is_error) = match result.and_then(|r| str_of(r, "status")).as_deref() {
                Some("success") => match result.and_then(|r| r.get("value")) {
                    Some(value) => match value.get("content") {
                        // `{content, isError}` (current) …
                        Some(c) => (
                            content_text(c),
                            value
                                .get("isError")
                                .and_then(|e| e.as_bool())
                                .unwrap_or(false),
                        ),
                        // … or a bare content array (older goose).
                        None => (content_text(value), false),
                    },
                    None => (String::new(), false),
                },
                _ => (
                    result.map(|r| string_of(r, "error")).unwrap_or_default(),
                    true,
                ),
            };
            PartKind::ToolResult {
                call_id: string_of(item, "id"),
                content: content.into(),
                is_error: Some(is_error),
            }
        }
        other => PartKind::Other {
            kind: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_tool_result_shapes_and_errors_are_read() {
        let new = serde_json::json!({"type":"toolResponse","id":"a","toolResult":{"status":"success","value":{"content":[{"type":"text","text":"x"}],"isError":true}}});
        let old = serde_json::json!({"type":"toolResponse","id":"a","toolResult":{"status":"success","value":[{"type":"text","text":"y"}]}});
        let err = serde_json::json!({"type":"toolResponse","id":"a","toolResult":{"status":"error","error":"-32603: boom"}});
        let get = |v: &Node<'_>| match part(*v) {
            PartKind::ToolResult {
                content, is_error, ..
            } => (content.as_str().to_string(), is_error),
            other => panic!("{other:?}"),
        };
        let get = |v: &Value| {
            let text = v.to_string();
            let lazy = get(&Node::parse(text.as_bytes()).expect("read lazily"));
            assert_eq!(lazy, get(&Node::Tree(v)));
            lazy
        };
        assert_eq!(get(&new), ("x".into(), Some(true)));
        assert_eq!(get(&old), ("y".into(), Some(false)));
        assert_eq!(get(&err), ("-32603: boom".into(), Some(true)));
    }
}
