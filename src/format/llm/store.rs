//! llm's message store (llm 0.32 and later, migration `m023_message_store`
//! in llm/migrations.py), read as `llm -c` replays a conversation.
//!
//! Read from the wheels of llm 0.32 and 0.36: the same migrations
//! (m023 to m027), the same `load_conversation`, `LogStore.load_chain` and
//! `_load_parts`, the same OpenAI plugin `_append_llm_message`; 0.36 only
//! closes the database after loading and keeps metadata-only reasoning
//! parts in place (reasoning is not sent by the Chat Completions plugin).
//!
//! `load_conversation` (llm/cli.py, 0.32 to 0.36) first rebuilds the
//! conversation's legacy `responses` rows (`Response.from_row`, as llm
//! 0.31 does: see `logs`), then asks `LogStore(db).thread_messages(id)`
//! (llm/logs.py) for the thread with the conversation's id: its
//! `threads.tip_message_hash`, walked up `messages.parent_hash` to the
//! root (`LogStore.load_chain`, which raises `KeyError` at a hash no
//! `messages` row has), each message's `parts` in `position` order
//! (`LogStore._load_parts`: `payload` through `json.loads`, `type` and
//! `text` from their columns, fragment references resolved, then
//! `Part.from_dict` in llm/parts.py, which raises `ValueError` on an
//! unknown type and `KeyError` on a missing member). When the chain loads
//! and is not empty it is the history sent (`_build_full_chain` in
//! llm/models.py prefers `loaded_messages`); on `KeyError`
//! `load_conversation` passes, and the legacy rows are sent instead:
//! for a conversation written by llm 0.32 or later there are none, and the
//! whole thread is silently left out. A `json.loads` or `ValueError`
//! raises out of `llm -c`: a traceback, nothing sent.
//!
//! llm 0.32 to 0.36 no longer write the legacy tables
//! (`Response.log_to_db`: only `LogStore.log`); the migration does not
//! copy old conversations into the store: a conversation of llm 0.31
//! is read from `responses` until llm 0.32 or later continues it, which
//! writes the whole rebuilt chain as its thread (thread ids are
//! conversation ids). A conversation with a thread is read from the
//! thread here (and its legacy rows checked only for what makes
//! `Response.from_row` raise), one without from its legacy rows.
//!
//! The OpenAI plugin's `_append_llm_message` then sends each message:
//! a `tool` message as one `tool` message per `tool_result` part, the
//! others with their text and their calls (`reasoning` parts are not
//! sent); a `system` message equal to the last one sent is skipped.
//! Each message here points at its `messages` row (key: its hash), each
//! part at its `parts` row (key: its id); the thread's walk is the
//! conversation's `tree` (`dangling-parent` reports a break).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::model::tree::{Tree, TreeEnd, TreeNode};
use crate::model::{
    ArgEncoding, Arguments, Conversation, CorruptRecord, Loc, Message, Name, PartKind, Role, Slot,
};

use super::pyjson;
use crate::source::sqlite;

pub const MESSAGES: &str = "messages";
pub const PARTS: &str = "parts";
pub const THREADS: &str = "threads";

/// The migrations of llm 0.36 (`llm/migrations.py`; 0.32 has the same
/// list). A database that names another one was written by a newer llm
/// whose store this reader does not know: it is refused, never reported
/// clean.
pub const KNOWN_MIGRATIONS: &[&str] = &[
    "m001_initial",
    "m002_id_primary_key",
    "m003_chat_id_foreign_key",
    "m004_column_order",
    "m004_drop_provider",
    "m005_debug",
    "m006_new_logs_table",
    "m007_finish_logs_table",
    "m008_reply_to_id_foreign_key",
    "m008_fix_column_order_in_logs",
    "m009_delete_logs_table_if_empty",
    "m010_create_new_log_tables",
    "m011_fts_for_responses",
    "m012_attachments_tables",
    "m013_usage",
    "m014_schemas",
    "m015_fragments_tables",
    "m016_fragments_table_pks",
    "m017_tools_tables",
    "m017_tools_plugin",
    "m018_tool_instances",
    "m019_resolved_model",
    "m020_tool_results_attachments",
    "m021_tool_results_exception",
    "m022_response_reasoning",
    "m023_message_store",
    "m024_tool_instance_references",
    "m025_turn_tools_instance_backfill",
    "m026_message_tree_view",
    "m027_turns_response_json",
];

/// The columns of the store this reader reads (`m023_message_store`).
pub const COLUMNS: [(&str, &[&str]); 3] = [
    (MESSAGES, &["hash", "parent_hash", "role"]),
    (
        PARTS,
        &["id", "message_hash", "position", "type", "text", "payload"],
    ),
    (THREADS, &["id", "tip_message_hash"]),
];

/// A `messages` row.
pub fn message_loc(hash: &str, rowid: i64) -> Loc {
    Loc::Row {
        table: Name::Static(MESSAGES),
        key: Arc::from(hash),
        rowid: Some(rowid),
    }
}

/// A `parts` row.
pub fn part_loc(id: i64) -> Loc {
    Loc::Row {
        table: Name::Static(PARTS),
        key: Arc::from(id.to_string().as_str()),
        rowid: Some(id),
    }
}

/// A `threads` row.
pub fn thread_loc(id: &str, rowid: i64) -> Loc {
    Loc::Row {
        table: Name::Static(THREADS),
        key: Arc::from(id),
        rowid: Some(rowid),
    }
}

/// One stored message of a thread's chain.
pub struct Stored {
    pub hash: String,
    pub rowid: i64,
    pub parent: Option<String>,
    pub role: String,
}

/// A thread's walk from its tip, as `LogStore.load_chain` makes it.
pub struct Walk {
    /// The thread's row.
    pub loc: Loc,
    pub tip: Option<String>,
    /// The messages reached, root first.
    pub chain: Vec<Stored>,
    pub end: TreeEnd,
}

fn get_message(conn: &rusqlite::Connection, hash: &str) -> rusqlite::Result<Option<Stored>> {
    let mut st = conn.prepare_cached(
        "SELECT rowid, CAST(parent_hash AS TEXT), CAST(role AS TEXT) FROM messages WHERE hash = ?1",
    )?;
    let mut rows = st.query([hash])?;
    Ok(match rows.next()? {
        Some(r) => Some(Stored {
            hash: hash.to_string(),
            rowid: r.get(0)?,
            parent: r.get(1)?,
            role: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
        }),
        None => None,
    })
}

/// The thread `id`'s walk, or `None` when there is no such thread.
pub fn walk(conn: &rusqlite::Connection, id: &str) -> rusqlite::Result<Option<Walk>> {
    let row: Option<(i64, Option<String>)> = {
        let mut st = conn.prepare_cached(
            "SELECT rowid, CAST(tip_message_hash AS TEXT) FROM threads WHERE id = ?1",
        )?;
        let mut rows = st.query([id])?;
        match rows.next()? {
            Some(r) => Some((r.get(0)?, r.get(1)?)),
            None => None,
        }
    };
    let Some((rowid, tip)) = row else {
        return Ok(None);
    };
    let mut chain = Vec::new();
    let mut seen = HashSet::new();
    let mut at = tip.clone();
    let end = loop {
        let Some(hash) = at else {
            break TreeEnd::Root;
        };
        if !seen.insert(hash.clone()) {
            // A hash covers its parent's: a cycle cannot be written by
            // llm, and its walk would never end.
            break TreeEnd::Cycle {
                at: chain.len() - 1,
                parent: chain
                    .iter()
                    .position(|m: &Stored| m.hash == hash)
                    .unwrap_or(0),
            };
        }
        match get_message(conn, &hash)? {
            Some(m) => {
                at = m.parent.clone();
                chain.push(m);
            }
            None if chain.is_empty() => break TreeEnd::MissingCurrent { missing: hash },
            None => {
                break TreeEnd::MissingParent {
                    at: chain.len() - 1,
                    missing: hash,
                };
            }
        }
    };
    chain.reverse();
    let end = match end {
        TreeEnd::MissingParent { missing, .. } => TreeEnd::MissingParent { at: 0, missing },
        TreeEnd::Cycle { at, parent } => TreeEnd::Cycle {
            at: chain.len() - 1 - at,
            parent: chain.len() - 1 - parent,
        },
        e => e,
    };
    Ok(Some(Walk {
        loc: thread_loc(id, rowid),
        tip,
        chain,
        end,
    }))
}

/// The walk as the model's message tree (what `dangling-parent` reads).
pub fn tree_of(w: &Walk) -> Tree {
    let nodes: Vec<TreeNode> = w
        .chain
        .iter()
        .map(|m| TreeNode {
            loc: message_loc(&m.hash, m.rowid),
            key: m.hash.clone(),
            id: Some(m.hash.clone()),
            parent: m.parent.clone(),
            children: Vec::new(),
            role: Role::parse(&m.role).map(|_| m.role.clone()),
            timestamp: None,
        })
        .collect();
    Tree {
        path: (0..nodes.len()).collect(),
        nodes,
        current_loc: Some(w.loc.clone()),
        current: w.tip.clone(),
        end: Some(w.end.clone()),
        dangling_children: Vec::new(),
        links: Some(("parent_hash", "tip_message_hash")),
        drops_empty: true,
    }
}

/// Whether the walk reached the root: `load_chain` returns the chain.
pub fn loads(w: &Walk) -> bool {
    matches!(w.end, TreeEnd::Root)
}

/// One `parts` row.
pub struct PartRow {
    pub id: i64,
    pub kind: String,
    pub text: Option<String>,
    pub payload: Option<String>,
}

pub fn parts_of(conn: &rusqlite::Connection, hash: &str) -> rusqlite::Result<Vec<PartRow>> {
    let mut st = conn.prepare_cached(
        "SELECT id, type, text, payload FROM parts WHERE message_hash = ?1 ORDER BY position",
    )?;
    // Values as llm's Python reads them, bytes that are not UTF-8 lossily.
    let rows = st.query_map([hash], |r| {
        Ok(PartRow {
            id: r.get(0)?,
            kind: sqlite::text(r.get_ref(1)?).unwrap_or_default(),
            text: sqlite::text(r.get_ref(2)?),
            payload: sqlite::text(r.get_ref(3)?),
        })
    })?;
    rows.collect()
}

/// A fragment's content (`fragments.content`), for a `text_ref`.
fn fragment(conn: &rusqlite::Connection, id: i64) -> rusqlite::Result<Option<String>> {
    let mut st =
        conn.prepare_cached("SELECT CAST(content AS TEXT) FROM fragments WHERE id = ?1")?;
    let mut rows = st.query([id])?;
    Ok(match rows.next()? {
        Some(r) => r.get(0)?,
        None => None,
    })
}

/// The members `Part.from_dict` reads with `d[...]` for each type.
fn required(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "text" | "reasoning" => &["text"],
        "tool_call" => &["name", "arguments"],
        "tool_result" => &["name", "output"],
        "attachment" => &[],
        _ => return None,
    })
}

/// `text` with the constants Python's `json.loads` reads and JSON has
/// not (`NaN`, `Infinity`, `-Infinity`) read as `null` outside strings:
/// what the part holds is read; the arguments are kept as stored.
fn lenient(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else if let Some(word) = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|w| rest.starts_with(w))
        {
            out.push_str("null");
            rest = &rest[word.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The `arguments` member of a payload as stored (a number Python
/// writes, `NaN` or `1e400`, kept as it is).
fn arguments_text(payload: &str) -> Option<String> {
    let v: Box<serde_json::value::RawValue> = serde_json::from_str(payload).ok()?;
    let members: std::collections::HashMap<String, &serde_json::value::RawValue> =
        serde_json::from_str(v.get()).ok()?;
    members.get("arguments").map(|r| r.get().to_string())
}

/// A part llm cannot rebuild, kept in its message as evidence (the
/// message is not empty: llm stops before sending it).
fn unreadable(msg: &mut Message, loc: Loc) {
    msg.push_at(
        PartKind::Other {
            kind: "unreadable".into(),
        },
        loc,
        Slot::Whole("payload"),
    );
}

/// Reads the chain of a thread whose walk reached the root into `conv`:
/// each message and its parts as `_load_parts` and `Part.from_dict`
/// rebuild them; a part they raise on is a corrupt record.
pub fn read_chain(
    conn: &rusqlite::Connection,
    w: &Walk,
    conv: &mut Conversation,
) -> rusqlite::Result<()> {
    for m in &w.chain {
        let at = message_loc(&m.hash, m.rowid);
        // A role no provider takes: `missing-role` reports it (the tree).
        let Some(role) = Role::parse(&m.role) else {
            continue;
        };
        let mut msg = Message::new(role, at.clone());
        for p in parts_of(conn, &m.hash)? {
            let loc = part_loc(p.id);
            let mut payload: serde_json::Map<String, Value> = serde_json::Map::new();
            if let Some(raw) = p.payload.as_deref().filter(|s| !s.is_empty()) {
                if let Some(e) = pyjson::loads_error(raw) {
                    conv.corrupt.push(CorruptRecord::new(
                        loc.clone(),
                        format!(
                            "parts row {} of message `{}`: `payload` is not JSON ({e}): `LogStore._load_parts` raises",
                            p.id, m.hash
                        ),
                        raw.as_bytes(),
                        false,
                    ));
                    unreadable(&mut msg, loc);
                    continue;
                }
                match serde_json::from_str::<Value>(raw)
                    .or_else(|_| serde_json::from_str::<Value>(&lenient(raw)))
                {
                    Ok(Value::Object(o)) => payload = o,
                    Ok(_) => {
                        conv.corrupt.push(CorruptRecord::new(
                            loc.clone(),
                            format!(
                                "parts row {} of message `{}`: `payload` is not a JSON object: `Part.from_dict` raises",
                                p.id, m.hash
                            ),
                            raw.as_bytes(),
                            false,
                        ));
                        unreadable(&mut msg, loc);
                        continue;
                    }
                    // JSON Python reads and serde does not (a number
                    // beyond a double): not read, and said so, never
                    // taken for corrupt.
                    Err(_) => {
                        conv.unread.push(crate::model::Unread {
                            loc: loc.clone(),
                            kind: format!("a `{}` part", p.kind),
                            what: "its payload holds a number only Python's JSON reads (one beyond a double)",
                        });
                        unreadable(&mut msg, loc);
                        continue;
                    }
                }
            }
            if let Some(t) = &p.text {
                payload.insert("text".into(), Value::String(t.clone()));
            }
            if let Some(Value::Array(pieces)) = payload.remove("text_ref") {
                let mut text = String::new();
                for piece in &pieces {
                    if let Some(l) = piece.get("literal").and_then(Value::as_str) {
                        text.push_str(l);
                    } else if let Some(id) = piece.get("fragment").and_then(Value::as_i64) {
                        text.push_str(&fragment(conn, id)?.unwrap_or_default());
                    }
                }
                payload.insert("text".into(), Value::String(text));
            }
            let Some(need) = required(&p.kind) else {
                conv.corrupt.push(CorruptRecord::new(
                    loc.clone(),
                    format!(
                        "parts row {} of message `{}`: unknown part type `{}`: `Part.from_dict` raises `ValueError`",
                        p.id, m.hash, p.kind
                    ),
                    p.payload.as_deref().unwrap_or_default().as_bytes(),
                    false,
                ));
                unreadable(&mut msg, loc);
                continue;
            };
            if let Some(missing) = need.iter().find(|k| !payload.contains_key(**k)) {
                conv.corrupt.push(CorruptRecord::new(
                    loc.clone(),
                    format!(
                        "parts row {} of message `{}`: a `{}` part without `{missing}`: `Part.from_dict` raises `KeyError`, and `llm -c` replays the conversation's legacy `responses` rows instead of the thread",
                        p.id, m.hash, p.kind
                    ),
                    p.payload.as_deref().unwrap_or_default().as_bytes(),
                    false,
                ));
                unreadable(&mut msg, loc);
                continue;
            }
            let s = |k: &str| match payload.get(k) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(v) => v.to_string(),
            };
            let kind = match p.kind.as_str() {
                "text" => PartKind::Text {
                    text: s("text").into(),
                },
                "reasoning" => PartKind::Thinking {
                    text: s("text").into(),
                },
                "tool_call" => PartKind::ToolCall {
                    id: s("tool_call_id"),
                    name: s("name"),
                    // `json.dumps(part.arguments)` when sent.
                    arguments: Arguments {
                        raw: arguments_text(p.payload.as_deref().unwrap_or_default())
                            .or_else(|| payload.get("arguments").map(Value::to_string))
                            .unwrap_or_default()
                            .into(),
                        encoding: ArgEncoding::Freeform,
                    },
                },
                "tool_result" => PartKind::ToolResult {
                    call_id: s("tool_call_id"),
                    content: s("output").into(),
                    is_error: Some(payload.get("exception").is_some_and(|e| !e.is_null())),
                },
                _ => PartKind::Other {
                    kind: p.kind.clone(),
                },
            };
            msg.push_at(kind, loc, Slot::Whole("payload"));
        }
        conv.messages.push(msg);
    }
    Ok(())
}

/// The ids `llm -c --cid` takes, conversations' first (rowid order),
/// then the threads that have no conversations row.
pub fn ids(conn: &rusqlite::Connection, store: bool) -> rusqlite::Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashMap<String, ()> = HashMap::new();
    let mut q = vec!["SELECT CAST(id AS TEXT) FROM conversations ORDER BY rowid"];
    if store {
        q.push("SELECT CAST(id AS TEXT) FROM threads ORDER BY rowid");
    }
    for q in q {
        let mut st = conn.prepare(q)?;
        for id in st.query_map([], |r| r.get::<_, Option<String>>(0))? {
            if let Some(id) = id?
                && seen.insert(id.clone(), ()).is_none()
            {
                out.push(id);
            }
        }
    }
    Ok(out)
}
