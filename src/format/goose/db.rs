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

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::writer;
use crate::error::Result;
use crate::format::store::{Opened, Probe, Store, Writing};
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
    sql: String,
}

pub fn open(path: &Path, snap: Snapshot) -> Result<Sessions> {
    let info = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: Format::SqliteTable,
        dialect: Dialect::Goose,
    });
    let read = || -> rusqlite::Result<(Vec<String>, String)> {
        let meta = sqlite::columns(&snap.conn, TABLE)?
            .iter()
            .any(|c| c == "metadata_json");
        let sql = format!(
            "SELECT id, role, content_json, {} FROM messages WHERE session_id = ?1 ORDER BY {}, id",
            if meta { "metadata_json" } else { "NULL" },
            order_column(&snap.conn)?
        );
        // Every session that has messages.
        let mut st = snap
            .conn
            .prepare("SELECT DISTINCT CAST(session_id AS TEXT) FROM messages ORDER BY 1")?;
        let rows = st.query_map([], |r| r.get::<_, Option<String>>(0))?;
        let ids = rows
            .filter_map(|r| r.transpose())
            .collect::<rusqlite::Result<_>>()?;
        Ok((ids, sql))
    };
    let (ids, sql) = read().map_err(sqlite::error_of(path))?;
    Ok(Sessions {
        path: path.to_path_buf(),
        info,
        snap,
        ids: ids.into_iter(),
        sql,
    })
}

impl Source for Sessions {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        let id = self.ids.next()?;
        Some(
            read_session(&self.snap.conn, &self.sql, &id, &self.info)
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

fn bytes(v: rusqlite::types::ValueRef<'_>) -> Vec<u8> {
    match v {
        rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => t.to_vec(),
        other => sqlite::text(other).unwrap_or_default().into_bytes(),
    }
}

fn read_session(
    conn: &rusqlite::Connection,
    sql: &str,
    session: &str,
    info: &Arc<SourceInfo>,
) -> rusqlite::Result<Conversation> {
    let mut conv = Conversation::new(session, info.clone());
    let mut st = conn.prepare_cached(sql)?;
    let mut rows = st.query([session])?;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let role = sqlite::text(r.get_ref(1)?).unwrap_or_default();
        let content = bytes(r.get_ref(2)?);
        let meta = sqlite::text(r.get_ref(3)?);
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
                continue;
            }
        };
        let items = match serde_json::from_slice::<Value>(&content) {
            Ok(Value::Array(items)) => items,
            Ok(_) => {
                bad(&mut conv, "`content_json` is not a JSON array".into());
                continue;
            }
            Err(e) => {
                bad(&mut conv, format!("`content_json` is not JSON ({e})"));
                continue;
            }
        };
        // Only agent-visible messages are sent.
        let visible = meta
            .and_then(|m| serde_json::from_str::<Value>(&m).ok())
            .and_then(|m| m.get("agentVisible").and_then(Value::as_bool))
            .unwrap_or(true);
        if !visible {
            conv.meta_records += 1;
            continue;
        }
        let mut msg = Message::new(role, at.clone());
        for (i, item) in items.iter().enumerate() {
            let kind = part(item);
            msg.push_at(kind, at.clone(), Slot::Item("content_json", i));
        }
        conv.messages.push(msg);
    }
    Ok(conv)
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The text of a tool result's content items.
fn content_text(items: &Value) -> String {
    match items {
        Value::Array(items) => items
            .iter()
            .filter_map(|c| match str_of(c, "type") {
                Some("text") => str_of(c, "text").map(str::to_string),
                Some(other) => Some(format!("[{other}]")),
                None => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn part(item: &Value) -> PartKind {
    let ty = str_of(item, "type").unwrap_or("");
    match ty {
        "text" => PartKind::Text {
            text: str_of(item, "text").unwrap_or("").into(),
        },
        "thinking" => PartKind::Thinking {
            text: str_of(item, "thinking").unwrap_or("").into(),
        },
        // Migrated to `thinking` by goose on read.
        "reasoning" => PartKind::Thinking {
            text: str_of(item, "text").unwrap_or("").into(),
        },
        "toolRequest" => {
            let value = item
                .get("toolCall")
                .filter(|c| str_of(c, "status") == Some("success"))
                .and_then(|c| c.get("value"));
            let name = value.and_then(|v| str_of(v, "name")).unwrap_or("");
            let args = match value.and_then(|v| v.get("arguments")) {
                Some(a) if !a.is_null() => a.to_string(),
                _ => "{}".to_string(),
            };
            PartKind::ToolCall {
                id: str_of(item, "id").unwrap_or("").to_string(),
                name: name.to_string(),
                arguments: Arguments {
                    raw: args.into(),
                    encoding: ArgEncoding::JsonValue,
                },
            }
        }
        "toolResponse" => {
            let result = item.get("toolResult").unwrap_or(&Value::Null);
            let (content, is_error) = match str_of(result, "status") {
                Some("success") => {
                    let value = result.get("value").unwrap_or(&Value::Null);
                    match value.get("content") {
                        // `{content, isError}` (current) …
                        Some(c) => (
                            content_text(c),
                            value
                                .get("isError")
                                .and_then(Value::as_bool)
                                .unwrap_or(false),
                        ),
                        // … or a bare content array (older goose).
                        None => (content_text(value), false),
                    }
                }
                _ => (str_of(result, "error").unwrap_or("").to_string(), true),
            };
            PartKind::ToolResult {
                call_id: str_of(item, "id").unwrap_or("").to_string(),
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
        let get = |v: &Value| match part(v) {
            PartKind::ToolResult {
                content, is_error, ..
            } => (content.as_str().to_string(), is_error),
            other => panic!("{other:?}"),
        };
        assert_eq!(get(&new), ("x".into(), Some(true)));
        assert_eq!(get(&old), ("y".into(), Some(false)));
        assert_eq!(get(&err), ("-32603: boom".into(), Some(true)));
    }
}
