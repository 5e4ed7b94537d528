//! Crush's session database (`<data dir>/crush.db`, the data directory
//! being the project's `.crush/` by default).
//!
//! The schema is Crush's goose migrations (`internal/db/migrations/`, at
//! charmbracelet/crush@37f36e93): `sessions(id, parent_session_id, title,
//! message_count, …, summary_message_id, todos)`, `messages(id TEXT, session_id,
//! role, parts, model, created_at, updated_at, finished_at, provider,
//! is_summary_message)`, `files`, `read_files`, and goose's own
//! `goose_db_version`. One conversation per session (a sub-agent's session
//! is a session of its own, `parent_session_id` naming its parent).
//!
//! A session is loaded as Crush loads it to send it (`agent.go`,
//! `getSessionMessages` and `preparePrompt`; `message.go`,
//! `ListMessagesBySession` and `unmarshalParts`):
//! - its rows `ORDER BY created_at` (seconds: `strftime('%s', 'now')`,
//!   so rows of one second tie; SQLite returns them in `rowid` order, which
//!   is read here as the tie-break);
//! - `parts` is a JSON array of `{"type", "data"}`: `text`, `reasoning`,
//!   `tool_call`, `tool_result`, `finish`, `image_url`, `binary`,
//!   `shell_command`. A row whose `parts` does not parse, or holds a part
//!   Crush does not know, makes Crush's `List` fail: the session does not
//!   load at all;
//! - with a `summary_message_id`, only the summary and what follows are
//!   sent, the summary as a user message; the rows before are counted as
//!   meta records;
//! - a row with no part, an assistant row with no text, reasoning or tool
//!   call (a turn cancelled before it returned anything), and any role but
//!   `user`, `assistant` and `tool` are never sent: meta records too;
//! - `user`: its first text (with its text attachments and bang-mode shell
//!   commands) and its file attachments; `assistant`: its first text, its
//!   first reasoning, its tool calls (`input` is the arguments' JSON text);
//!   `tool`: its tool results, paired with the calls by `tool_call_id`.
//!
//! Every message and part points at its row (`messages`, key its `id`,
//! and its `rowid`), a part at its index in `parts`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::writer;
use crate::error::Result;
use crate::format::store::{Hooks, Opened, Probe, Store, Writing};
use crate::model::{
    ArgEncoding, Arguments, Conversation, CorruptRecord, Dialect, Format, Loc, Message, Name,
    PartKind, Role, Slot, SourceInfo, Unread,
};
use crate::source::Source;
use crate::source::sqlite::{self, Snapshot};

pub static STORE: Store = Store {
    name: "Crush sessions (crush.db)",
    formats: &[Format::SqliteTable],
    dialects: &[Dialect::Crush],
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

/// The newest migration of Crush's schema the reader knows
/// (`20260127000000_add_read_files_table.sql`).
pub const KNOWN_VERSION: i64 = 20_260_127_000_000;

/// The part types Crush writes (`message.go`, `partType`).
pub const PART_TYPES: &[&str] = &[
    "reasoning",
    "text",
    "image_url",
    "binary",
    "tool_call",
    "tool_result",
    "finish",
    "shell_command",
];

/// Whether the database is Crush's: `sessions` with its message and token
/// counts, `messages` with a `parts` column, and `files`.
pub fn detect(conn: &rusqlite::Connection, tables: &[String]) -> rusqlite::Result<bool> {
    let has = |t: &str| tables.iter().any(|x| x == t);
    if !(has("sessions") && has(TABLE) && has("files")) {
        return Ok(false);
    }
    let all = |table: &str, want: &[&str]| -> rusqlite::Result<bool> {
        let cols = sqlite::columns(conn, table)?;
        Ok(want.iter().all(|c| cols.iter().any(|x| x == c)))
    };
    Ok(all(
        "sessions",
        &[
            "id",
            "parent_session_id",
            "title",
            "message_count",
            "prompt_tokens",
        ],
    )? && all(TABLE, &["id", "session_id", "role", "parts", "created_at"])?
        && all("files", &["id", "session_id", "path", "content", "version"])?)
}

/// The newest migration applied to the database, when goose's table says.
fn schema_version(conn: &rusqlite::Connection) -> rusqlite::Result<Option<i64>> {
    let exists: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'goose_db_version')",
        [],
        |r| r.get(0),
    )?;
    if !exists {
        return Ok(None);
    }
    conn.query_row(
        "SELECT MAX(version_id) FROM goose_db_version WHERE is_applied",
        [],
        |r| r.get(0),
    )
}

pub struct Sessions {
    path: PathBuf,
    info: Arc<SourceInfo>,
    snap: Snapshot,
    ids: std::vec::IntoIter<String>,
    summary: bool,
    newer: Option<i64>,
}

pub fn open(path: &Path, snap: Snapshot) -> Result<Sessions> {
    let info = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: Format::SqliteTable,
        dialect: Dialect::Crush,
    });
    let read = || -> rusqlite::Result<(Vec<String>, bool, Option<i64>)> {
        let summary = sqlite::columns(&snap.conn, "sessions")?
            .iter()
            .any(|c| c == "summary_message_id");
        let newer = schema_version(&snap.conn)?.filter(|v| *v > KNOWN_VERSION);
        let mut st = snap
            .conn
            .prepare("SELECT DISTINCT session_id FROM messages ORDER BY 1")?;
        let rows = st.query_map([], |r| Ok(sqlite::text(r.get_ref(0)?)))?;
        let ids = rows
            .filter_map(|r| r.transpose())
            .collect::<rusqlite::Result<_>>()?;
        Ok((ids, summary, newer))
    };
    let (ids, summary, newer) = read().map_err(sqlite::error_of(path))?;
    Ok(Sessions {
        path: path.to_path_buf(),
        info,
        snap,
        ids: ids.into_iter(),
        summary,
        newer,
    })
}

impl Source for Sessions {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        let id = self.ids.next()?;
        Some(
            read_session(&self.snap.conn, &id, self.summary, self.newer, &self.info)
                .map_err(sqlite::error_of(&self.path)),
        )
    }
}

/// Where a row is: its `id` as the key, and its `rowid`.
pub fn loc(id: &str, rowid: i64) -> Loc {
    Loc::Row {
        table: Name::Static(TABLE),
        key: Arc::from(id),
        rowid: Some(rowid),
    }
}

/// A column's text as Go's `database/sql` scans it into a `string`: any
/// bytes, read here with invalid UTF-8 as U+FFFD (what `json.Unmarshal`
/// makes of it); NULL is empty.
fn lossy(v: rusqlite::types::ValueRef<'_>) -> String {
    sqlite::text(v).unwrap_or_default()
}

/// A session's rows in Crush's order: (rowid, id, role, parts).
pub fn rows(
    conn: &rusqlite::Connection,
    session: &str,
) -> rusqlite::Result<Vec<(i64, String, String, String)>> {
    conn.prepare_cached(
        "SELECT rowid, id, role, parts FROM messages \
         WHERE session_id = ?1 ORDER BY created_at, rowid",
    )?
    .query_map([session], |r| {
        Ok((
            r.get(0)?,
            lossy(r.get_ref(1)?),
            lossy(r.get_ref(2)?),
            lossy(r.get_ref(3)?),
        ))
    })?
    .collect()
}

/// The `model` column of a row, when it names one.
fn model_of(conn: &rusqlite::Connection, rowid: i64) -> Option<String> {
    conn.prepare_cached("SELECT model FROM messages WHERE rowid = ?1")
        .and_then(|mut st| st.query_row([rowid], |r| Ok(lossy(r.get_ref(0)?))))
        .ok()
        .filter(|m| !m.is_empty())
}

fn read_session(
    conn: &rusqlite::Connection,
    session: &str,
    summary: bool,
    newer: Option<i64>,
    info: &Arc<SourceInfo>,
) -> rusqlite::Result<Conversation> {
    let mut conv = Conversation::new(session, info.clone());
    let rows = rows(conn, session)?;
    if let Some(v) = newer
        && let Some((rowid, id, _, _)) = rows.first()
    {
        conv.unread.push(Unread {
            loc: loc(id, *rowid),
            kind: format!("goose_db_version {v}"),
            what: "the database was migrated by a newer Crush than the reader knows (its newest migration is 20260127000000): what the newer schema adds is not read",
        });
    }
    let summary_id: Option<String> = if summary {
        conn.query_row(
            "SELECT CAST(summary_message_id AS TEXT) FROM sessions WHERE id = ?1",
            [session],
            |r| r.get(0),
        )
        .ok()
        .flatten()
        .filter(|s: &String| !s.is_empty())
    } else {
        None
    };
    // Crush sends the summary and what follows, when the summary is there.
    let start = summary_id
        .as_deref()
        .and_then(|s| rows.iter().position(|(_, id, _, _)| id == s));
    for (i, (rowid, id, role, parts)) in rows.iter().enumerate() {
        let at = loc(id, *rowid);
        let parts = match parse(parts) {
            Ok(p) => p,
            Err(why) => {
                conv.corrupt.push(CorruptRecord::new(
                    at,
                    format!("messages row {rowid} (`{id}`): {why}"),
                    parts.as_bytes(),
                    false,
                ));
                continue;
            }
        };
        let mut unknown = false;
        for (j, p) in parts.iter().enumerate() {
            if let Part::Unknown(kind) = p {
                unknown = true;
                conv.unread.push(Unread {
                    loc: at.clone(),
                    kind: format!("parts[{j}] of type `{kind}`"),
                    what: "Crush (at 37f36e93) writes no such part and cannot load a session that holds one (`unknown part type`); this row was not read",
                });
            }
        }
        if unknown || start.is_some_and(|s| i < s) {
            conv.meta_records += 1;
            continue;
        }
        let role = if start == Some(i) {
            Role::User
        } else {
            match role.as_str() {
                "user" => Role::User,
                "assistant" => Role::Assistant,
                "tool" => Role::Tool,
                _ => {
                    conv.meta_records += 1;
                    continue;
                }
            }
        };
        match message(role, &at, &parts) {
            Some(m) => {
                // The model that wrote a reply (the row's `model`): what
                // its provider requires back depends on it.
                if m.role == Role::Assistant
                    && let Some(model) = model_of(conn, *rowid)
                {
                    let at = conv.messages.len();
                    conv.reasoning_mut().models.insert(at, model);
                }
                conv.messages.push(m)
            }
            None => conv.meta_records += 1,
        }
    }
    Ok(conv)
}

/// One part of a row, as Crush reads it.
#[derive(Debug)]
pub enum Part {
    Text(String),
    Reasoning(String),
    ToolCall {
        id: String,
        name: String,
        input: String,
    },
    ToolResult {
        call_id: String,
        content: String,
        media: bool,
        is_error: bool,
    },
    /// A file attachment: (its MIME type, its path).
    Binary(String, String),
    ShellCommand(String),
    /// `finish`, `image_url`: never sent.
    Unsent,
    Unknown(String),
}

/// A row's `parts`, or why Crush's `unmarshalParts` refuses it.
pub fn parse(text: &str) -> std::result::Result<Vec<Part>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("`parts` is not JSON ({e})"))?;
    let Value::Array(items) = v else {
        return Err("`parts` is not a JSON array".into());
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| part(item).map_err(|why| format!("`parts[{i}]` {why}")))
        .collect()
}

/// A string field as Go's `encoding/json` reads it into a `string`:
/// absent or null is empty, any other non-string refuses the part.
fn string(data: &Value, key: &str) -> std::result::Result<String, String> {
    match data.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "has a `{key}` that is not a string ({})",
            kind_of(other)
        )),
    }
}

fn boolean(data: &Value, key: &str) -> std::result::Result<bool, String> {
    match data.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(format!(
            "has a `{key}` that is not a boolean ({})",
            kind_of(other)
        )),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn part(item: &Value) -> std::result::Result<Part, String> {
    let Value::Object(_) = item else {
        return Err(format!("is {}, not an object", kind_of(item)));
    };
    let ty = string(item, "type")?;
    let data = match item.get("data") {
        // Go's `json.Unmarshal` of an absent (empty) `data` fails.
        None => return Err("has no `data`".into()),
        Some(Value::Null) => &Value::Null,
        Some(d @ Value::Object(_)) => d,
        Some(other) => return Err(format!("has `data` that is {}", kind_of(other))),
    };
    Ok(match ty.as_str() {
        "text" => Part::Text(string(data, "text")?),
        "reasoning" => Part::Reasoning(string(data, "thinking")?),
        "tool_call" => Part::ToolCall {
            id: string(data, "id")?,
            name: string(data, "name")?,
            input: string(data, "input")?,
        },
        "tool_result" => Part::ToolResult {
            call_id: string(data, "tool_call_id")?,
            content: string(data, "content")?,
            media: !string(data, "data")?.is_empty(),
            is_error: boolean(data, "is_error")?,
        },
        "binary" => Part::Binary(string(data, "MIMEType")?, string(data, "Path")?),
        "shell_command" => Part::ShellCommand(string(data, "command")?),
        "finish" | "image_url" => Part::Unsent,
        other => Part::Unknown(if other.is_empty() {
            "(none)".to_string()
        } else {
            other.to_string()
        }),
    })
}

/// The message Crush sends for a row, or none when it sends nothing.
fn message(role: Role, at: &Loc, parts: &[Part]) -> Option<Message> {
    if parts.is_empty() {
        return None;
    }
    let slot = |i: usize| Slot::Item("parts", i);
    let first_text = parts.iter().enumerate().find_map(|(i, p)| match p {
        Part::Text(t) => Some((i, t)),
        _ => None,
    });
    let mut m = Message::new(role, at.clone());
    match role {
        Role::Assistant => {
            let reasoning = parts.iter().enumerate().find_map(|(i, p)| match p {
                Part::Reasoning(t) => Some((i, t)),
                _ => None,
            });
            let calls = parts.iter().any(|p| matches!(p, Part::ToolCall { .. }));
            let text = first_text.map_or("", |(_, t)| t.as_str());
            let thinking = reasoning.map_or("", |(_, t)| t.as_str());
            // Cancelled before it returned anything: never sent.
            if !calls && text.is_empty() && thinking.is_empty() {
                return None;
            }
            if let Some((i, t)) = first_text {
                m.push_at(
                    PartKind::Text {
                        text: t.as_str().into(),
                    },
                    at.clone(),
                    slot(i),
                );
            }
            if let Some((i, t)) = reasoning.filter(|(_, t)| !t.is_empty()) {
                m.push_at(
                    PartKind::Thinking {
                        text: t.as_str().into(),
                    },
                    at.clone(),
                    slot(i),
                );
            }
            for (i, p) in parts.iter().enumerate() {
                if let Part::ToolCall { id, name, input } = p {
                    m.push_at(
                        PartKind::ToolCall {
                            id: id.clone(),
                            name: name.clone(),
                            arguments: Arguments {
                                raw: input.as_str().into(),
                                encoding: ArgEncoding::JsonString,
                            },
                        },
                        at.clone(),
                        slot(i),
                    );
                }
            }
        }
        Role::Tool => {
            for (i, p) in parts.iter().enumerate() {
                if let Part::ToolResult {
                    call_id,
                    content,
                    media,
                    is_error,
                } = p
                {
                    let content = if *media && !is_error {
                        "[media]"
                    } else {
                        content.as_str()
                    };
                    m.push_at(
                        PartKind::ToolResult {
                            call_id: call_id.clone(),
                            content: content.into(),
                            is_error: Some(*is_error),
                        },
                        at.clone(),
                        slot(i),
                    );
                }
            }
        }
        _ => {
            // The text Crush sends: the first text, its text attachments
            // and its shell commands.
            let mut text = first_text.map_or(String::new(), |(_, t)| t.trim().to_string());
            for p in parts {
                match p {
                    Part::Binary(mime, path) if mime.starts_with("text/") => {
                        text.push_str(&format!("\n<file path='{path}'>"));
                    }
                    Part::ShellCommand(cmd) => text.push_str(&format!("\n\n$ {cmd}")),
                    _ => {}
                }
            }
            if !text.is_empty() || first_text.is_some() {
                let i = first_text.map_or(0, |(i, _)| i);
                m.push_at(PartKind::Text { text: text.into() }, at.clone(), slot(i));
            }
            for (i, p) in parts.iter().enumerate() {
                if let Part::Binary(mime, _) = p
                    && !mime.starts_with("text/")
                {
                    m.push_at(
                        PartKind::Other {
                            kind: "file".to_string(),
                        },
                        at.clone(),
                        slot(i),
                    );
                }
            }
        }
    }
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_read_as_crush_reads_them() {
        let p = parse(r#"[{"type":"tool_call","data":{"id":"c1","name":"","input":"{}","finished":true}},{"type":"finish","data":{"reason":"tool_use","time":1}}]"#).unwrap();
        assert!(matches!(&p[0], Part::ToolCall { id, name, .. } if id == "c1" && name.is_empty()));
        assert!(matches!(p[1], Part::Unsent));
        assert!(parse(r#"[{"type":"text","data":{"text":7}}]"#).is_err());
        assert!(parse(r#"{"type":"text"}"#).is_err());
        assert!(
            matches!(&parse(r#"[{"type":"video","data":{}}]"#).unwrap()[0], Part::Unknown(k) if k == "video")
        );
    }
}
