//! llm's `logs.db` up to llm 0.31, read as `llm -c` replays a conversation.
//!
//! `load_conversation` (llm/cli.py, 0.31.1) takes the `conversations` row
//! and its `responses` rows in table order (`rows_where("conversation_id
//! = ?")`, no `ORDER BY`: rowid order), each rebuilt by
//! `Response.from_row` (llm/models.py): its prompt's `tool_results` rows
//! (`where response_id = ?`, rowid order), its own `tool_calls` rows
//! (`order by tool_call_id`, `arguments` through `json.loads`), its
//! `options_json` through `json.loads`, its `prompt_json` and
//! `response_json` through `json.loads(… or "null")`. A column that does
//! not parse raises there: `llm -c` stops with a traceback before
//! anything is sent, so it is a corrupt record.
//!
//! The OpenAI plugin's `build_messages` then sends, for each response in
//! turn: `system` when it differs from the last one sent, the `prompt`
//! as a `user` message when it is not empty, each tool result as a
//! `tool` message, the `response` text as an `assistant` message when it
//! is not empty, and the calls as one `assistant` message with
//! `tool_calls`. A chain of tool calls is a run of responses whose
//! prompt is empty and whose `tool_results` answer the previous
//! response's calls. Here each response becomes those messages (the text
//! and the calls in one assistant message), each part pointing at its row.
//!
//! From llm 0.32 on, a conversation that has a thread in the message
//! store is replayed from the thread instead (`store`); this reader asks
//! it for each conversation and thread id.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::Result;
use crate::model::{
    ArgEncoding, Arguments, Conversation, CorruptRecord, Dialect, Format, Loc, Message, Name,
    PartKind, Role, Slot, SourceInfo,
};
use crate::source::Source;
use crate::source::sqlite::{self, Snapshot};

use super::{pyjson, store};

pub const RESPONSES: &str = "responses";
pub const TOOL_CALLS: &str = "tool_calls";
pub const TOOL_RESULTS: &str = "tool_results";

/// The JSON columns of `responses` that `Response.from_row` parses:
/// (column, whether an empty or NULL value reads as `null`).
pub const JSON_COLUMNS: [(&str, bool); 3] = [
    ("options_json", false),
    ("prompt_json", true),
    ("response_json", true),
];

pub struct Conversations {
    path: PathBuf,
    info: Arc<SourceInfo>,
    snap: Snapshot,
    ids: std::vec::IntoIter<String>,
    sql: Sql,
    /// The database has llm 0.32's message store.
    store: bool,
}

/// The statements one conversation is read with (columns a database of
/// an older llm lacks are read as NULL).
struct Sql {
    responses: String,
    calls: Option<&'static str>,
    results: Option<&'static str>,
}

pub fn open(path: &Path, snap: Snapshot) -> Result<Conversations> {
    let info = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: Format::SqliteTable,
        dialect: Dialect::Llm,
    });
    let read = || -> rusqlite::Result<(Vec<String>, Sql)> {
        let tables = sqlite::tables(&snap.conn)?;
        let cols = sqlite::columns(&snap.conn, RESPONSES)?;
        let col = |c: &str| {
            if cols.iter().any(|x| x == c) {
                c.to_string()
            } else {
                "NULL".to_string()
            }
        };
        let responses = format!(
            "SELECT rowid, CAST(id AS TEXT), prompt, system, response, {}, {}, {} FROM responses WHERE conversation_id = ?1 ORDER BY rowid",
            col("options_json"),
            col("prompt_json"),
            col("response_json"),
        );
        let has = |t: &str| tables.iter().any(|x| x == t);
        let calls = has(TOOL_CALLS).then_some(
            "SELECT id, name, arguments, tool_call_id FROM tool_calls WHERE response_id = ?1 ORDER BY tool_call_id",
        );
        let results = has(TOOL_RESULTS).then_some(
            "SELECT id, name, output, tool_call_id FROM tool_results WHERE response_id = ?1 ORDER BY rowid",
        );
        let ids = store::ids(&snap.conn, has(store::THREADS))?;
        Ok((
            ids,
            Sql {
                responses,
                calls,
                results,
            },
        ))
    };
    let (ids, sql) = read().map_err(sqlite::error_of(path))?;
    let store = sqlite::tables(&snap.conn)
        .map_err(sqlite::error_of(path))?
        .iter()
        .any(|t| t == store::THREADS);
    Ok(Conversations {
        path: path.to_path_buf(),
        info,
        snap,
        ids: ids.into_iter(),
        sql,
        store,
    })
}

impl Source for Conversations {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        let id = self.ids.next()?;
        Some(
            replayed(&self.snap.conn, &self.sql, self.store, &id, &self.info)
                .map_err(sqlite::error_of(&self.path)),
        )
    }
}

/// A row of one of llm's tables.
pub fn loc(table: &'static str, key: &str, rowid: i64) -> Loc {
    Loc::Row {
        table: Name::Static(table),
        key: Arc::from(key),
        rowid: Some(rowid),
    }
}

/// Why a JSON column's value makes `json.loads` raise, if it does.
pub fn json_fault(value: Option<&str>, null_ok: bool) -> Option<String> {
    match value {
        None if null_ok => None,
        None => Some("is NULL".into()),
        Some("") if null_ok => None,
        Some(text) => pyjson::loads_error(text).map(|e| format!("is not JSON ({e})")),
    }
}

fn text_of(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<String>> {
    Ok(sqlite::text(r.get_ref(i)?))
}

/// The conversation `id` as `llm -c --cid` replays it: its legacy rows
/// are rebuilt first (a column `Response.from_row` cannot parse raises
/// there); then its thread's chain, when it has a thread whose walk
/// reaches the root, is what is sent; otherwise the legacy rows are
/// (none for a conversation llm 0.32 or later wrote), and the walk, with
/// where it broke, is the conversation's tree.
fn replayed(
    conn: &rusqlite::Connection,
    sql: &Sql,
    has_store: bool,
    id: &str,
    info: &Arc<SourceInfo>,
) -> rusqlite::Result<Conversation> {
    let mut conv = read_conversation(conn, sql, id, info)?;
    if !has_store {
        return Ok(conv);
    }
    let Some(walk) = store::walk(conn, id)? else {
        return Ok(conv);
    };
    // `load_chain(None)` is `[]`, which `_build_full_chain` passes over.
    if store::loads(&walk) && !walk.chain.is_empty() {
        conv.messages.clear();
        store::read_chain(conn, &walk, &mut conv)?;
    }
    conv.tree = Some(Box::new(store::tree_of(&walk)));
    Ok(conv)
}

fn read_conversation(
    conn: &rusqlite::Connection,
    sql: &Sql,
    id: &str,
    info: &Arc<SourceInfo>,
) -> rusqlite::Result<Conversation> {
    let mut conv = Conversation::new(id, info.clone());
    let mut st = conn.prepare_cached(&sql.responses)?;
    let mut rows = st.query([id])?;
    let mut system: Option<String> = None;
    while let Some(r) = rows.next()? {
        let rowid: i64 = r.get(0)?;
        let key = text_of(r, 1)?.unwrap_or_default();
        let at = loc(RESPONSES, &key, rowid);
        let prompt = text_of(r, 2)?.unwrap_or_default();
        let sys = text_of(r, 3)?.unwrap_or_default();
        let response = text_of(r, 4)?.unwrap_or_default();
        for (i, (column, null_ok)) in JSON_COLUMNS.iter().enumerate() {
            // A column an older llm did not have is not read by it either.
            if *column == "options_json" && r.get_ref(5 + i)? == rusqlite::types::ValueRef::Null {
                continue;
            }
            let value = text_of(r, 5 + i)?;
            if let Some(why) = json_fault(value.as_deref(), *null_ok) {
                conv.corrupt.push(CorruptRecord::new(
                    at.clone(),
                    format!("responses row {key}: `{column}` {why}"),
                    value.as_deref().unwrap_or_default().as_bytes(),
                    false,
                ));
            }
        }
        // `build_messages`: the system prompt when it changes.
        if !sys.is_empty() && system.as_deref() != Some(sys.as_str()) {
            let mut m = Message::new(Role::System, at.clone());
            m.push_at(
                PartKind::Text {
                    text: sys.clone().into(),
                },
                at.clone(),
                Slot::Whole("system"),
            );
            conv.messages.push(m);
            system = Some(sys);
        }
        if !prompt.is_empty() {
            let mut m = Message::new(Role::User, at.clone());
            m.push_at(
                PartKind::Text {
                    text: prompt.into(),
                },
                at.clone(),
                Slot::Whole("prompt"),
            );
            conv.messages.push(m);
        }
        if let Some(q) = sql.results {
            let mut st = conn.prepare_cached(q)?;
            let mut results = st.query([&key])?;
            while let Some(t) = results.next()? {
                let row: i64 = t.get(0)?;
                let at = loc(TOOL_RESULTS, &row.to_string(), row);
                let mut m = Message::new(Role::Tool, at.clone());
                m.push_at(
                    PartKind::ToolResult {
                        call_id: text_of(t, 3)?.unwrap_or_default(),
                        content: text_of(t, 2)?.unwrap_or_default().into(),
                        is_error: None,
                    },
                    at,
                    Slot::Whole("output"),
                );
                conv.messages.push(m);
            }
        }
        let mut m = Message::new(Role::Assistant, at.clone());
        if !response.is_empty() {
            m.push_at(
                PartKind::Text {
                    text: response.into(),
                },
                at.clone(),
                Slot::Whole("response"),
            );
        }
        if let Some(q) = sql.calls {
            let mut st = conn.prepare_cached(q)?;
            let mut calls = st.query([&key])?;
            while let Some(c) = calls.next()? {
                let row: i64 = c.get(0)?;
                let at = loc(TOOL_CALLS, &row.to_string(), row);
                let arguments = text_of(c, 2)?;
                let raw = arguments.clone().unwrap_or_default();
                if let Some(why) = json_fault(arguments.as_deref(), false) {
                    conv.corrupt.push(CorruptRecord::new(
                        at.clone(),
                        format!("tool_calls row {row}: `arguments` {why}"),
                        raw.as_bytes(),
                        false,
                    ));
                }
                m.push_at(
                    PartKind::ToolCall {
                        id: text_of(c, 3)?.unwrap_or_default(),
                        name: text_of(c, 1)?.unwrap_or_default(),
                        // `json.loads` of the column, then `json.dumps`
                        // when sent: checked above, as a corrupt record.
                        arguments: Arguments {
                            raw: raw.into(),
                            encoding: ArgEncoding::Freeform,
                        },
                    },
                    at,
                    Slot::Whole("arguments"),
                );
            }
        }
        if !m.parts.is_empty() {
            conv.messages.push(m);
        }
    }
    Ok(conv)
}
