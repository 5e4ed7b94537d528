//! Repair of a thread of llm's message store (llm 0.32 to 0.36) in the
//! copy. Messages are content-addressed: a message's hash covers its
//! parts and its parent's hash (`message_hash`, llm/logs.py), so a
//! message cannot be changed in place. As llm itself does when a history
//! diverges (`LogStore.ensure_chain`), the repaired messages are written
//! as new rows under the hashes llm gives them, with their parts, from
//! the first changed message to the tip, and the thread's
//! `tip_message_hash` moves to the new tip. Every other row stays: the old
//! messages (other threads and the thread's `turns` may name them), the
//! turns, the legacy tables.
//!
//! - an unanswered call is answered as llm's chain answers a call it
//!   did not run (`execute_tool_calls`, `_append_tool_results_to_chain`
//!   in llm/models.py): a `tool_result` part (`name`, `output`,
//!   `tool_call_id`, `exception`) in the `tool` message that follows the
//!   call's message, or in a new `tool` message right after it; the
//!   `output` is the marked placeholder. With `--orphan-calls=drop` the
//!   call's part is left out instead;
//! - a stray result, and a part llm cannot rebuild, are left out;
//! - a message left without parts by that is left out (llm sends nothing
//!   for an empty `tool` message).
//!
//! The new hashes are `hash::message_hash` of the messages as stored
//! (checked against hashes llm wrote in tests/llm.rs); a message whose
//! stored hash is not its content's (a part lost after llm hashed it) is
//! named in the log. A part that borrows a fragment or holds an
//! attachment (hashed by llm from the bytes of a file) is not rebuilt:
//! the thread's findings are left, with the reason.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::hash;
use super::store::{MESSAGES, PARTS, THREADS};
use crate::model::PLACEHOLDER;

/// The `exception` of a placeholder result: llm records one on every
/// result of a call it answered without running it (`Error: tool … does
/// not exist`, `Cancelled: …`).
pub const EXCEPTION: &str = "chatfsck repair: no result was recorded for this call";

/// One part of a message as the copy will hold it.
#[derive(Clone)]
enum NewPart {
    /// A stored `parts` row, copied as it is.
    Row(i64),
    /// A placeholder result for call `id` of tool `name`.
    Answer { name: String, id: String },
}

struct NewMessage {
    role: String,
    metadata: Option<String>,
    parts: Vec<NewPart>,
    /// The stored message it comes from (its hash), if any.
    from: Option<String>,
    /// Its content is the stored message's, parts unchanged.
    same: bool,
}

/// A message the copy gets: (hash, parent, role, metadata, parts).
type Written = (String, Option<String>, String, Option<String>, Vec<NewPart>);

/// The rows the copy gets for one thread.
pub struct Rethread {
    pub thread: String,
    pub old_tip: Option<String>,
    pub new_tip: Option<String>,
    /// New messages, root side first.
    messages: Vec<Written>,
    /// (old hash, new hash) of each message written again.
    pub renamed: Vec<(String, String)>,
    /// The placeholder parts: (call id, new message hash, position).
    pub answers: Vec<(String, String, usize)>,
    /// Messages written again whose stored hash is not their content's.
    pub stale: Vec<String>,
    /// Messages left out.
    pub skipped: HashSet<String>,
}

/// What a thread's repair is asked to do.
#[derive(Default)]
pub struct Asked {
    /// Calls to answer: (the message holding the call, call id, tool name).
    pub answer: Vec<(String, String, String)>,
    /// `parts` rows to leave out.
    pub drop: HashSet<i64>,
    /// Messages (with no parts) to leave out.
    pub skip: HashSet<String>,
}

fn q<T: rusqlite::types::FromSql>(
    conn: &rusqlite::Connection,
    sql: &str,
    p: impl rusqlite::Params,
) -> rusqlite::Result<Option<T>> {
    use rusqlite::OptionalExtension;
    conn.query_row(sql, p, |r| r.get(0)).optional()
}

/// The message a `parts` row belongs to.
pub fn message_of_part(conn: &rusqlite::Connection, id: i64) -> rusqlite::Result<Option<String>> {
    Ok(q::<Option<String>>(
        conn,
        "SELECT CAST(message_hash AS TEXT) FROM parts WHERE id = ?1",
        [id],
    )?
    .flatten())
}

/// The stored message's dict as `Message.to_dict()` gives it after
/// `load_chain`, or why it cannot be rebuilt exactly.
fn stored_dict(
    conn: &rusqlite::Connection,
    role: &str,
    metadata: Option<&str>,
    parts: &[NewPart],
) -> rusqlite::Result<Result<Value, String>> {
    let mut out = Vec::new();
    for p in parts {
        let d = match p {
            NewPart::Answer { name, id } => {
                let mut d = Map::new();
                d.insert("type".into(), "tool_result".into());
                d.insert("name".into(), name.clone().into());
                d.insert("output".into(), PLACEHOLDER.into());
                d.insert("tool_call_id".into(), id.clone().into());
                d.insert("exception".into(), EXCEPTION.into());
                Value::Object(d)
            }
            NewPart::Row(id) => {
                let (kind, text, payload): (Option<String>, Option<String>, Option<String>) = conn
                    .query_row(
                        "SELECT CAST(type AS TEXT), CAST(text AS TEXT), CAST(payload AS TEXT) FROM parts WHERE id = ?1",
                        [id],
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                    )?;
                let attached: bool = conn.query_row(
                    "SELECT EXISTS (SELECT 1 FROM part_attachments WHERE part_id = ?1)",
                    [id],
                    |r| r.get(0),
                )?;
                if attached {
                    return Ok(Err(format!(
                        "parts row {id} has an attachment, whose hash llm takes from its bytes"
                    )));
                }
                let mut d = match payload.as_deref().filter(|s| !s.is_empty()) {
                    None => Map::new(),
                    Some(raw) => match serde_json::from_str::<Value>(raw) {
                        Ok(Value::Object(o)) => o,
                        _ => return Ok(Err(format!("parts row {id}'s payload does not parse"))),
                    },
                };
                if d.contains_key("text_ref") || d.contains_key("attachment") {
                    return Ok(Err(format!(
                        "parts row {id} borrows a fragment or an attachment"
                    )));
                }
                d.insert("type".into(), kind.unwrap_or_default().into());
                if let Some(t) = text {
                    d.insert("text".into(), t.into());
                }
                Value::Object(d)
            }
        };
        out.push(d);
    }
    let mut m = Map::new();
    m.insert("role".into(), role.into());
    m.insert("parts".into(), Value::Array(out));
    if let Some(raw) = metadata.filter(|s| !s.is_empty()) {
        match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(o)) if o.is_empty() => {}
            Ok(Value::Null) => {}
            Ok(v) => {
                m.insert("provider_metadata".into(), v);
            }
            Err(_) => return Ok(Err("its provider_metadata does not parse".into())),
        }
    }
    Ok(Ok(Value::Object(m)))
}

/// Plans the repair of thread `thread`, whose tip is `old_tip`, to hold
/// `chain` (root first, each message's stored parent or not): the rows
/// the copy gets, or why it cannot be repaired.
pub fn plan(
    conn: &rusqlite::Connection,
    thread: &str,
    old_tip: Option<String>,
    chain: &[String],
    asked: &Asked,
) -> rusqlite::Result<Result<Rethread, String>> {
    let mut new: Vec<NewMessage> = Vec::new();
    let mut pending: Vec<NewPart> = Vec::new();
    let mut stored_parent: HashMap<String, Option<String>> = HashMap::new();
    let mut skipped: HashSet<String> = HashSet::new();
    for (i, h) in chain.iter().enumerate() {
        let (role, metadata, parent): (Option<String>, Option<String>, Option<String>) = conn
            .query_row(
                "SELECT CAST(role AS TEXT), CAST(provider_metadata AS TEXT), CAST(parent_hash AS TEXT) FROM messages WHERE hash = ?1",
                [h],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
        // Re-parented: the chain goes on from another message.
        let linked = parent.as_deref() == i.checked_sub(1).map(|p| chain[p].as_str());
        stored_parent.insert(h.clone(), parent);
        let role = role.unwrap_or_default();
        let stored: Vec<i64> = {
            let mut st = conn
                .prepare_cached("SELECT id FROM parts WHERE message_hash = ?1 ORDER BY position")?;
            st.query_map([h], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?
        };
        let mut parts: Vec<NewPart> = stored
            .iter()
            .filter(|id| !asked.drop.contains(id))
            .map(|id| NewPart::Row(*id))
            .collect();
        let mut same = parts.len() == stored.len() && linked;
        if !pending.is_empty() {
            if role == "tool" {
                parts.append(&mut pending);
                same = false;
            } else {
                new.push(NewMessage {
                    role: "tool".into(),
                    metadata: None,
                    parts: std::mem::take(&mut pending),
                    from: None,
                    same: false,
                });
            }
        }
        if parts.is_empty() && (!stored.is_empty() || asked.skip.contains(h)) {
            // Emptied by the repair, or empty and asked to: left out.
            skipped.insert(h.clone());
        } else {
            new.push(NewMessage {
                role: role.clone(),
                metadata,
                parts,
                from: Some(h.clone()),
                same,
            });
        }
        pending.extend(
            asked
                .answer
                .iter()
                .filter(|(m, _, _)| m == h)
                .map(|(_, id, name)| NewPart::Answer {
                    name: name.clone(),
                    id: id.clone(),
                }),
        );
    }
    if !pending.is_empty() {
        new.push(NewMessage {
            role: "tool".into(),
            metadata: None,
            parts: pending,
            from: None,
            same: false,
        });
    }
    // The unchanged prefix keeps its rows.
    let mut k = 0;
    while k < new.len()
        && k < chain.len()
        && new[k].same
        && new[k].from.as_deref() == Some(&chain[k])
    {
        k += 1;
    }
    let mut parent: Option<String> = if k == 0 {
        None
    } else {
        Some(chain[k - 1].clone())
    };
    let mut out = Rethread {
        thread: thread.to_string(),
        old_tip,
        new_tip: parent.clone(),
        messages: Vec::new(),
        renamed: Vec::new(),
        answers: Vec::new(),
        stale: Vec::new(),
        skipped,
    };
    for m in &new[k..] {
        // Re-derive the stored hash before trusting the rebuilt dict.
        if let Some(from) = &m.from {
            let stored: Vec<NewPart> = {
                let mut st = conn.prepare_cached(
                    "SELECT id FROM parts WHERE message_hash = ?1 ORDER BY position",
                )?;
                st.query_map([from], |r| r.get(0))?
                    .map(|r| r.map(NewPart::Row))
                    .collect::<rusqlite::Result<_>>()?
            };
            let dict = match stored_dict(conn, &m.role, m.metadata.as_deref(), &stored)? {
                Ok(d) => d,
                Err(why) => {
                    return Ok(Err(format!(
                        "message `{from}` cannot be written again with llm's hash: {why}"
                    )));
                }
            };
            let p = stored_parent.get(from).cloned().flatten();
            if hash::message_hash(&dict, p.as_deref()) != *from {
                // Its content changed after llm hashed it (a part lost):
                // written again from what is stored, as llm would hash it.
                out.stale.push(from.clone());
            }
        }
        let dict = match stored_dict(conn, &m.role, m.metadata.as_deref(), &m.parts)? {
            Ok(d) => d,
            Err(why) => return Ok(Err(why)),
        };
        let h = hash::message_hash(&dict, parent.as_deref());
        if let Some(from) = &m.from {
            out.renamed.push((from.clone(), h.clone()));
        }
        for (pos, p) in m.parts.iter().enumerate() {
            if let NewPart::Answer { id, .. } = p {
                out.answers.push((id.clone(), h.clone(), pos));
            }
        }
        out.messages.push((
            h.clone(),
            parent.clone(),
            m.role.clone(),
            m.metadata.clone(),
            m.parts.clone(),
        ));
        parent = Some(h);
    }
    out.new_tip = parent;
    Ok(Ok(out))
}

impl Rethread {
    /// How many messages the copy gets.
    pub fn written(&self) -> usize {
        self.messages.len()
    }
}

/// Writes the planned rows into the copy; returns the `parts` row id of
/// each placeholder, in `answers` order.
pub fn write(tx: &rusqlite::Transaction<'_>, r: &Rethread) -> rusqlite::Result<Vec<i64>> {
    let mut ids: HashMap<(String, usize), i64> = HashMap::new();
    for (h, parent, role, metadata, parts) in &r.messages {
        let added = tx.execute(
            &format!("INSERT OR IGNORE INTO {MESSAGES} (hash, parent_hash, role, provider_metadata) VALUES (?1, ?2, ?3, ?4)"),
            rusqlite::params![h, parent, role, metadata],
        )?;
        for (pos, p) in parts.iter().enumerate() {
            if added == 0 {
                // Already there (another thread's repair wrote it).
                if let Some(id) = q::<i64>(
                    tx,
                    "SELECT id FROM parts WHERE message_hash = ?1 AND position = ?2",
                    rusqlite::params![h, pos as i64],
                )? {
                    ids.insert((h.clone(), pos), id);
                }
                continue;
            }
            match p {
                NewPart::Row(old) => {
                    tx.execute(
                        &format!("INSERT INTO {PARTS} (message_hash, position, type, tool_name, text, payload) SELECT ?1, ?2, type, tool_name, text, payload FROM parts WHERE id = ?3"),
                        rusqlite::params![h, pos as i64, old],
                    )?;
                    let new = tx.last_insert_rowid();
                    tx.execute(
                        "INSERT INTO part_fragments (part_id, fragment_id, \"order\") SELECT ?1, fragment_id, \"order\" FROM part_fragments WHERE part_id = ?2",
                        rusqlite::params![new, old],
                    )?;
                }
                NewPart::Answer { name, id } => {
                    let mut payload = Map::new();
                    payload.insert("name".into(), name.clone().into());
                    payload.insert("output".into(), PLACEHOLDER.into());
                    payload.insert("tool_call_id".into(), id.clone().into());
                    payload.insert("exception".into(), EXCEPTION.into());
                    tx.execute(
                        &format!("INSERT INTO {PARTS} (message_hash, position, type, tool_name, text, payload) VALUES (?1, ?2, 'tool_result', ?3, NULL, ?4)"),
                        rusqlite::params![h, pos as i64, name, hash::py_dumps(&Value::Object(payload))],
                    )?;
                    ids.insert((h.clone(), pos), tx.last_insert_rowid());
                }
            }
        }
    }
    tx.execute(
        &format!("UPDATE {THREADS} SET tip_message_hash = ?1 WHERE id = ?2"),
        rusqlite::params![r.new_tip, r.thread],
    )?;
    Ok(r.answers
        .iter()
        .map(|(_, h, pos)| ids.get(&(h.clone(), *pos)).copied().unwrap_or(0))
        .collect())
}

/// The chain (root first) to put above a thread's messages whose walk
/// stops at `missing` (a lost message, or the lost tip), and what it is:
/// the input of the turn that produced `missing` (`turns.parent_message_hash`
/// of the thread's turn whose `tip_message_hash` it is: `LogStore.log`
/// records both), when that walks to a root; else nothing (the oldest
/// message left starts the chain).
pub fn bridge(
    conn: &rusqlite::Connection,
    thread: &str,
    missing: &str,
) -> rusqlite::Result<Result<(Vec<String>, String), String>> {
    let parent: Option<Option<String>> = q::<Option<String>>(
        conn,
        "SELECT CAST(parent_message_hash AS TEXT) FROM turns WHERE thread_id = ?1 AND tip_message_hash = ?2 ORDER BY id DESC LIMIT 1",
        [thread, missing],
    )?;
    let Some(Some(from)) = parent else {
        return Ok(Ok((
            Vec::new(),
            format!(
                "no turn of the thread says what came before the lost message `{missing}`: the oldest message left starts the chain"
            ),
        )));
    };
    let mut above = Vec::new();
    let mut at = Some(from.clone());
    let mut seen = HashSet::new();
    while let Some(h) = at {
        if !seen.insert(h.clone()) {
            return Ok(Err(format!(
                "the chain above the lost message `{missing}` loops"
            )));
        }
        match q::<Option<String>>(
            conn,
            "SELECT CAST(parent_hash AS TEXT) FROM messages WHERE hash = ?1",
            [&h],
        )? {
            Some(p) => {
                above.push(h);
                at = p;
            }
            None => {
                return Ok(Err(format!(
                    "the turn that wrote the lost message `{missing}` went on from `{from}`, whose chain is broken too (`{h}` is not stored)"
                )));
            }
        }
    }
    above.reverse();
    Ok(Ok((
        above,
        format!(
            "linked what is left of the thread under `{from}`, the input of the turn (`turns`) that wrote the lost message `{missing}`, whose content is gone"
        ),
    )))
}
