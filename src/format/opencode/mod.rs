//! opencode's session database (`~/.local/share/opencode/opencode.db`,
//! `opencode-<channel>.db`; opencode ≥ 1.2).
//!
//! Tables `session`, `message(id, session_id, time_created, time_updated,
//! data)` and `part(id, message_id, session_id, time_created, time_updated,
//! data)`; `data` is the message or part object without its ids. One
//! conversation per session: messages ordered by `(time_created, id)`, the
//! parts of a message by `id`. What opencode replays on resume
//! (`message-v2.ts`, `toModelMessages` and `filterCompacted`; observed with
//! opencode 1.18.33):
//! - a `tool` part is the call *and* its result (`callID`): `completed`
//!   sends its output (`[Old tool result content cleared]` once compacted),
//!   `error` its error text; `pending` and `running` parts are sent with
//!   the result `[Tool execution was interrupted]`, patched in memory and
//!   never written back. Here such a part is a call without a result, and
//!   `orphan-tool-call` says what opencode does with it;
//! - an assistant message with `error` is skipped whole, unless it is a
//!   `MessageAbortedError` with parts other than step-start/reasoning;
//! - a user `compaction` part is sent as `What did we do so far?`, a
//!   `subtask` part as `The following tool was executed by the user`;
//!   everything before a compaction that a finished `summary` answer names
//!   is dropped; `text` parts marked `ignored` are not sent;
//! - `step-start`, `step-finish`, `snapshot`, `patch`, `agent`, `retry`
//!   parts are bookkeeping, counted as meta records.
//!
//! Skipped messages and bookkeeping parts are counted as meta records;
//! rows whose `data` does not parse are corrupt records. Every message and
//! part points at its row (`message`/`part` and its id). The legacy JSON
//! tree (`storage/`, ≤ 1.1) is read by `legacy`, with the same rules.
//!
//! Drift: opencode's V2 session store (`session_message`, the projection of
//! its event log, and `session_v2`, reported for opencode 2.0) is not read.
//! 1.18.33 creates `session_message` and leaves it empty; a row in it is
//! history this reader did not read, and each session holding such rows is
//! reported (`unknown-record-type`, at its first row, with the count), also
//! when the database has no `message`/`part` tables at all. Never "no
//! problems" for a history that was not read.

pub mod discover;
pub mod profile;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

pub mod legacy;
pub mod writer;

use super::store::{Hooks, Opened, Probe, Store, Writing};
use crate::error::Result;
use crate::format::records::record::tree_as_lenient_readers_read;
use crate::model::{
    ArgEncoding, Arguments, Conversation, CorruptRecord, Dialect, Format, Loc, Message, Name,
    PartKind, Role, SourceInfo, Unread,
};
use crate::source::Source;
use crate::source::sqlite::{self, Snapshot};

pub static STORE: Store = Store {
    name: "opencode database (opencode.db)",
    formats: &[Format::SqliteTable],
    dialects: &[Dialect::Opencode],
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

/// What opencode sends in place of the result of a `pending` or `running`
/// tool part.
pub const INTERRUPTED: &str = "[Tool execution was interrupted]";

/// opencode's V2 message projection: its columns this reader relies on to
/// say what it did not read.
const V2: &str = "session_message";
const V2_COLUMNS: &[&str] = &["id", "session_id", "type", "data"];

/// Whether the database is opencode's: `session`, `message` and `part`
/// tables with opencode's columns (≥ 1.2), or a V2 store: `session_message`
/// beside `session` or `session_v2` (detected so that it is reported as
/// unread, not as "no history").
pub fn detect(conn: &rusqlite::Connection, tables: &[String]) -> rusqlite::Result<bool> {
    let has = |t: &str| tables.iter().any(|x| x == t);
    let all = |table: &str, want: &[&str]| -> rusqlite::Result<bool> {
        let cols = sqlite::columns(conn, table)?;
        Ok(want.iter().all(|c| cols.iter().any(|x| x == c)))
    };
    if has(V2) && (has("session") || has("session_v2")) && !(has("message") && has("part")) {
        return all(V2, V2_COLUMNS);
    }
    if !(has("session") && has("message") && has("part")) {
        return Ok(false);
    }
    Ok(all("session", &["id", "project_id"])?
        && all(
            "message",
            &["id", "session_id", "time_created", "time_updated", "data"],
        )?
        && all(
            "part",
            &[
                "id",
                "message_id",
                "session_id",
                "time_created",
                "time_updated",
                "data",
            ],
        )?)
}

/// The sessions of one database, read one at a time.
pub struct Sessions {
    path: PathBuf,
    info: Arc<SourceInfo>,
    snap: Snapshot,
    ids: std::vec::IntoIter<String>,
    /// Whether the database has the `message`/`part` tables this reads.
    v1: bool,
    /// Whether it has a V2 `session_message` table (reported, not read).
    v2: bool,
}

pub fn open(path: &Path, snap: Snapshot) -> Result<Sessions> {
    let info = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: Format::SqliteTable,
        dialect: Dialect::Opencode,
    });
    // Every session that has messages (a session row without any holds no
    // history; messages whose session row is gone are read all the same),
    // in the `message` table or in the V2 `session_message` one.
    let (ids, v1, v2) = (|| -> rusqlite::Result<(Vec<String>, bool, bool)> {
        let tables = sqlite::tables(&snap.conn)?;
        let has = |t: &str| tables.iter().any(|x| x == t);
        let v1 = has("message") && has("part");
        let v2 = has(V2) && {
            let cols = sqlite::columns(&snap.conn, V2)?;
            V2_COLUMNS.iter().all(|c| cols.iter().any(|x| x == c))
        };
        let from = match (v1, v2) {
            (true, true) => {
                "SELECT session_id FROM message UNION SELECT session_id FROM session_message"
            }
            (true, false) => "SELECT session_id FROM message",
            (false, true) => "SELECT session_id FROM session_message",
            (false, false) => return Ok((Vec::new(), v1, v2)),
        };
        let sql = format!("SELECT DISTINCT CAST(session_id AS TEXT) FROM ({from}) ORDER BY 1");
        let mut st = snap.conn.prepare(&sql)?;
        let rows = st.query_map([], |r| r.get::<_, Option<String>>(0))?;
        let ids = rows
            .filter_map(|r| r.transpose())
            .collect::<rusqlite::Result<_>>()?;
        Ok((ids, v1, v2))
    })()
    .map_err(sqlite::error_of(path))?;
    Ok(Sessions {
        path: path.to_path_buf(),
        info,
        snap,
        ids: ids.into_iter(),
        v1,
        v2,
    })
}

impl Source for Sessions {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        let id = self.ids.next()?;
        let conn = &self.snap.conn;
        let conv = (|| {
            let mut conv = if self.v1 {
                read_session(conn, &id, &self.info)?
            } else {
                Conversation::new(&id, self.info.clone())
            };
            if self.v2 {
                v2_unread(conn, &id, &mut conv)?;
            }
            Ok(conv)
        })();
        Some(conv.map_err(sqlite::error_of(&self.path)))
    }
}

pub(crate) fn loc(table: &'static str, id: &str, rowid: i64) -> Loc {
    Loc::Row {
        table: Name::Static(table),
        key: Arc::from(id),
        rowid: Some(rowid),
    }
}

/// The session's rows in the V2 `session_message` table, reported as
/// unread at the first of them (by `seq` where the table has it).
fn v2_unread(
    conn: &rusqlite::Connection,
    session: &str,
    conv: &mut Conversation,
) -> rusqlite::Result<()> {
    let order = if sqlite::columns(conn, V2)?.iter().any(|c| c == "seq") {
        "seq, rowid"
    } else {
        "rowid"
    };
    let sql = format!(
        "SELECT rowid, CAST(id AS TEXT), CAST(type AS TEXT), \
         (SELECT count(*) FROM session_message WHERE session_id = ?1) \
         FROM session_message WHERE session_id = ?1 ORDER BY {order} LIMIT 1"
    );
    let first = conn.query_row(&sql, [session], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, Option<String>>(1)?.unwrap_or_default(),
            r.get::<_, Option<String>>(2)?.unwrap_or_default(),
            r.get::<_, i64>(3)?,
        ))
    });
    let (rowid, id, ty, n) = match first {
        Ok(row) => row,
        Err(rusqlite::Error::QueryReturnedNoRows) => return Ok(()),
        Err(e) => return Err(e),
    };
    let rows = if n == 1 { "row" } else { "rows" };
    conv.unread.push(Unread {
        loc: loc("session_message", &id, rowid),
        kind: format!("{n} session_message {rows} (the first of type `{ty}`)"),
        what: "opencode's V2 session store (session_message, opencode 2.0); this reader reads the message and part tables only",
    });
    Ok(())
}

/// A row as read: rowid, id and its `data`.
struct Row {
    rowid: i64,
    id: String,
    data: Vec<u8>,
}

fn rows(conn: &rusqlite::Connection, sql: &str, key: &str) -> rusqlite::Result<Vec<Row>> {
    let mut st = conn.prepare_cached(sql)?;
    let rows = st.query_map([key], |r| {
        Ok(Row {
            rowid: r.get(0)?,
            id: sqlite::text(r.get_ref(1)?).unwrap_or_default(),
            data: match r.get_ref(2)? {
                rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                    t.to_vec()
                }
                other => sqlite::text(other).unwrap_or_default().into_bytes(),
            },
        })
    })?;
    rows.collect()
}

/// A message record (a row, or a file of the legacy tree): where it is,
/// its id and its raw bytes.
pub(crate) struct Record {
    pub loc: Loc,
    pub id: String,
    pub data: Vec<u8>,
}

/// One message, parsed, with its parts (in order).
pub(crate) struct Msg {
    pub rec: Record,
    pub info: Value,
    pub parts: Vec<(Loc, Value)>,
}

fn read_session(
    conn: &rusqlite::Connection,
    session: &str,
    info: &Arc<SourceInfo>,
) -> rusqlite::Result<Conversation> {
    let mut conv = Conversation::new(session, info.clone());
    let messages = rows(
        conn,
        "SELECT rowid, id, data FROM message WHERE session_id = ?1 ORDER BY time_created, id",
        session,
    )?;
    let mut msgs = Vec::new();
    for row in messages {
        let at = loc("message", &row.id, row.rowid);
        // Read as opencode's `JSON.parse` reads it: a lone surrogate
        // escape (an emoji cut in two) as U+FFFD, noted for
        // `lone-surrogate`.
        let info: Value = match tree_as_lenient_readers_read(&row.data) {
            Ok((v @ Value::Object(_), lone)) => {
                conv.note_lone_surrogates(&at, lone);
                v
            }
            Ok(_) => {
                corrupt(
                    &mut conv,
                    "message",
                    &row,
                    "`data` is not a JSON object".into(),
                );
                continue;
            }
            Err(e) => {
                corrupt(
                    &mut conv,
                    "message",
                    &row,
                    format!("`data` is not JSON ({e})"),
                );
                continue;
            }
        };
        let mut parts = Vec::new();
        for p in rows(
            conn,
            "SELECT rowid, id, data FROM part WHERE message_id = ?1 ORDER BY id",
            &row.id,
        )? {
            match tree_as_lenient_readers_read(&p.data) {
                Ok((v @ Value::Object(_), lone)) => {
                    let at = loc("part", &p.id, p.rowid);
                    conv.note_lone_surrogates(&at, lone);
                    parts.push((at, v));
                }
                Ok(_) => corrupt(&mut conv, "part", &p, "`data` is not a JSON object".into()),
                Err(e) => corrupt(&mut conv, "part", &p, format!("`data` is not JSON ({e})")),
            }
        }
        let rec = Record {
            loc: at,
            id: row.id,
            data: row.data,
        };
        msgs.push(Msg { rec, info, parts });
    }
    build(&mut conv, msgs);
    Ok(conv)
}

fn corrupt(conv: &mut Conversation, table: &'static str, row: &Row, reason: String) {
    conv.corrupt.push(CorruptRecord::new(
        loc(table, &row.id, row.rowid),
        format!("{table} row `{}`: {reason}", row.id),
        &row.data,
        false,
    ));
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Part types that are bookkeeping: never sent to the model.
const BOOKKEEPING: &[&str] = &[
    "step-start",
    "step-finish",
    "snapshot",
    "patch",
    "agent",
    "retry",
];

/// Whether opencode skips this message on load: an assistant message with
/// an error, unless an aborted one with real content.
fn skipped(m: &Msg) -> bool {
    let Some(error) = m.info.get("error").filter(|e| !e.is_null()) else {
        return false;
    };
    if str_of(&m.info, "role") != Some("assistant") {
        return false;
    }
    let aborted = str_of(error, "name") == Some("MessageAbortedError");
    let content = m
        .parts
        .iter()
        .any(|(_, p)| !matches!(str_of(p, "type"), Some("step-start" | "reasoning")));
    !(aborted && content)
}

/// The position from which opencode loads: at the last compaction that a
/// finished summary answer names (`filterCompacted`), else the start.
fn compaction_start(msgs: &[Msg]) -> usize {
    let mut answered: Vec<&str> = Vec::new();
    for m in msgs.iter().rev() {
        let role = str_of(&m.info, "role");
        if role == Some("assistant")
            && m.info.get("summary").and_then(Value::as_bool) == Some(true)
            && m.info.get("finish").is_some_and(|f| !f.is_null())
            && m.info.get("error").is_none_or(Value::is_null)
            && let Some(parent) = str_of(&m.info, "parentID")
        {
            answered.push(parent);
        }
    }
    for (i, m) in msgs.iter().enumerate().rev() {
        if str_of(&m.info, "role") == Some("user")
            && answered.contains(&m.rec.id.as_str())
            && m.parts
                .iter()
                .any(|(_, p)| str_of(p, "type") == Some("compaction"))
        {
            return i;
        }
    }
    0
}

/// A record that does not parse as what it should be.
pub(crate) fn corrupt_record(conv: &mut Conversation, rec: &Record, what: &str, reason: String) {
    conv.corrupt.push(CorruptRecord::new(
        rec.loc.clone(),
        format!("{what} `{}`: {reason}", rec.id),
        &rec.data,
        false,
    ));
}

/// Build the conversation opencode loads from a session's messages, in
/// order.
pub(crate) fn build(conv: &mut Conversation, msgs: Vec<Msg>) {
    let start = compaction_start(&msgs);
    for (i, m) in msgs.iter().enumerate() {
        let role = match str_of(&m.info, "role") {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            other => {
                let reason = match other {
                    Some(r) => format!("unknown role `{r}`"),
                    None => "no `role`".to_string(),
                };
                corrupt_record(conv, &m.rec, "message", reason);
                continue;
            }
        };
        if i < start || skipped(m) {
            // Not sent: before the compaction, or an errored answer.
            conv.meta_records += 1 + m.parts.len() as u64;
            continue;
        }
        let mut msg = Message::new(role, m.rec.loc.clone());
        msg.finish_reason = str_of(&m.info, "finish").map(str::to_string);
        // The model that wrote a reply (`modelID`): opencode shapes what
        // it sends back by it.
        if role == Role::Assistant
            && let Some(model) = str_of(&m.info, "modelID").filter(|m| !m.is_empty())
        {
            let at = conv.messages.len();
            conv.reasoning_mut().models.insert(at, model.to_string());
        }
        for (at, p) in &m.parts {
            let at = at.clone();
            let ty = str_of(p, "type").unwrap_or("");
            match ty {
                "text" => {
                    if p.get("ignored").and_then(Value::as_bool) == Some(true) {
                        conv.meta_records += 1;
                        continue;
                    }
                    let text = str_of(p, "text").unwrap_or("");
                    msg.push(PartKind::Text { text: text.into() }, at);
                }
                "reasoning" => msg.push(
                    PartKind::Thinking {
                        text: str_of(p, "text").unwrap_or("").into(),
                    },
                    at,
                ),
                "compaction" => msg.push(
                    PartKind::Text {
                        text: "What did we do so far?".into(),
                    },
                    at,
                ),
                "subtask" => msg.push(
                    PartKind::Text {
                        text: "The following tool was executed by the user".into(),
                    },
                    at,
                ),
                "tool" => tool(&mut msg, p, at),
                t if BOOKKEEPING.contains(&t) => conv.meta_records += 1,
                other => msg.push(
                    PartKind::Other {
                        kind: other.to_string(),
                    },
                    at,
                ),
            }
        }
        conv.messages.push(msg);
    }
}

/// A tool part: the call, then its result when the part has one.
fn tool(msg: &mut Message, p: &Value, at: Loc) {
    let id = str_of(p, "callID").unwrap_or("").to_string();
    let name = str_of(p, "tool").unwrap_or("").to_string();
    let state = p.get("state").unwrap_or(&Value::Null);
    let status = str_of(state, "status").unwrap_or("");
    let input = match state.get("input") {
        Some(v @ Value::Object(_)) => v.to_string(),
        Some(v) if !v.is_null() => v.to_string(),
        _ => "{}".to_string(),
    };
    msg.push(
        PartKind::ToolCall {
            id: id.clone(),
            name,
            arguments: Arguments {
                raw: input.into(),
                encoding: ArgEncoding::JsonValue,
            },
        },
        at.clone(),
    );
    let result = match status {
        "completed" => {
            let compacted = state
                .get("time")
                .and_then(|t| t.get("compacted"))
                .is_some_and(|c| !c.is_null());
            let output = if compacted {
                "[Old tool result content cleared]"
            } else {
                str_of(state, "output").unwrap_or("")
            };
            Some((output.to_string(), false))
        }
        "error" => {
            let meta = state.get("metadata");
            let interrupted_output = meta
                .filter(|m| m.get("interrupted").and_then(Value::as_bool) == Some(true))
                .and_then(|m| str_of(m, "output"));
            match interrupted_output {
                Some(out) => Some((out.to_string(), false)),
                None => Some((str_of(state, "error").unwrap_or("").to_string(), true)),
            }
        }
        // `pending`, `running`: no result is stored (opencode sends
        // `[Tool execution was interrupted]` in its place).
        _ => None,
    };
    if let Some((content, is_error)) = result {
        msg.push(
            PartKind::ToolResult {
                call_id: id,
                content: content.into(),
                is_error: Some(is_error),
            },
            at,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(sql: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opencode.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL);
             CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
             CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
             INSERT INTO session VALUES ('ses_a', 'p');",
        )
        .unwrap();
        conn.execute_batch(sql).unwrap();
        (dir, path)
    }

    fn read(path: &Path) -> Conversation {
        let mut s = open(path, sqlite::open(path).unwrap()).unwrap();
        s.next_conversation().unwrap().unwrap()
    }

    fn msg(id: &str, t: i64, data: &str) -> String {
        format!("INSERT INTO message VALUES ('{id}', 'ses_a', {t}, {t}, '{data}');")
    }

    fn part(id: &str, m: &str, data: &str) -> String {
        format!("INSERT INTO part VALUES ('{id}', '{m}', 'ses_a', 0, 0, '{data}');")
    }

    /// An errored answer is skipped; an aborted one with content is kept.
    #[test]
    fn errored_answers_are_skipped_as_opencode_skips_them() {
        let sql = [
            msg("msg_1", 1, r#"{"role":"user"}"#),
            part("prt_1", "msg_1", r#"{"type":"text","text":"hi"}"#),
            msg(
                "msg_2",
                2,
                r#"{"role":"assistant","error":{"name":"APIError","data":{}}}"#,
            ),
            part("prt_2", "msg_2", r#"{"type":"text","text":"partial"}"#),
            msg(
                "msg_3",
                3,
                r#"{"role":"assistant","error":{"name":"MessageAbortedError","data":{}}}"#,
            ),
            part("prt_3", "msg_3", r#"{"type":"text","text":"kept"}"#),
            msg(
                "msg_4",
                4,
                r#"{"role":"assistant","error":{"name":"MessageAbortedError","data":{}}}"#,
            ),
            part("prt_4", "msg_4", r#"{"type":"step-start"}"#),
        ]
        .concat();
        let (_d, path) = db(&sql);
        let c = read(&path);
        let keys: Vec<String> = c
            .messages
            .iter()
            .map(|m| match &m.loc {
                Loc::Row { key, .. } => key.to_string(),
                Loc::Line { .. } => unreachable!(),
            })
            .collect();
        assert_eq!(keys, ["msg_1", "msg_3"]);
        assert_eq!(c.meta_records, 4);
    }

    /// Everything before a compaction that a finished summary names is
    /// dropped; the compaction itself is sent as a question.
    #[test]
    fn history_before_a_finished_compaction_is_dropped() {
        let sql = [
            msg("msg_1", 1, r#"{"role":"user"}"#),
            part("prt_1", "msg_1", r#"{"type":"text","text":"old"}"#),
            msg("msg_2", 2, r#"{"role":"user"}"#),
            part("prt_2", "msg_2", r#"{"type":"compaction","auto":true}"#),
            msg(
                "msg_3",
                3,
                r#"{"role":"assistant","summary":true,"finish":"stop","parentID":"msg_2"}"#,
            ),
            part("prt_3", "msg_3", r#"{"type":"text","text":"summary"}"#),
        ]
        .concat();
        let (_d, path) = db(&sql);
        let c = read(&path);
        assert_eq!(c.messages.len(), 2);
        assert!(matches!(&c.messages[0].parts[0].kind,
            PartKind::Text { text } if text.as_str() == "What did we do so far?"));
        assert_eq!(c.meta_records, 2);
    }

    #[test]
    fn a_database_without_parts_is_not_opencode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE session (id text, project_id text); CREATE TABLE message (id text, session_id text, time_created integer, time_updated integer, data text); CREATE TABLE part (id text, data text);",
        )
        .unwrap();
        let tables = sqlite::tables(&conn).unwrap();
        assert!(!detect(&conn, &tables).unwrap());
    }
}
