//! Repair of a LangGraph SQLite checkpointer, into a copy: the thread gets
//! a NEW checkpoint, appended after its latest one (its
//! `parent_checkpoint_id`), which the next `invoke` resumes from; every
//! older checkpoint and write stays as it was.
//!
//! The new checkpoint is the latest one with, in its `messages` channel,
//! a `ToolMessage` answering each unanswered call (`tool_call_id` the
//! call's id, `status: "error"`, the marked placeholder as its content),
//! right after the `AIMessage` that made the call and the results already
//! there: what LangChain users write with `update_state` to unstick a
//! thread. Its id sorts after the latest one's (ids are compared as
//! text), its metadata says `source: "update"` and the next step; the
//! channel versions are kept, so the next step runs what the latest
//! checkpoint would have run, and so are its pending writes, copied to
//! the new checkpoint. A call the checkpoint still has work for (a tool
//! paused in `interrupt()`, a `Send` to the tool node) is never answered:
//! it is not an orphan (`state`).
//!
//! Every new checkpoint is in the repair log (the messages it adds; the
//! latest checkpoint it follows, which is kept). The copy is made with
//! SQLite's backup API from the forensic snapshot.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rmpv::Value;

use super::serde::{self, get, get_mut, str_of};
use super::sqlite::{CHECKPOINTS, WRITES};
use crate::config::{OrphanCalls, RepairPolicy};
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::model::{Conversation, Dialect, Loc, PartKind};
use crate::source::sqlite::{self, Snapshot};
use crate::write::sqlite::{db_err, edit_sqlite_copy};
use crate::write::{Edit, Left, Log, PLACEHOLDER, Planned, Target, Writer};

/// What this writer carries out: answering calls.
pub fn supports(_: Dialect, a: &Action) -> bool {
    matches!(a, Action::AnswerCall { .. })
}

/// The calls to answer on one checkpoint (by its rowid).
struct Answer {
    conversation: String,
    ids: Vec<String>,
    entry: usize,
}

pub struct LangGraphWriter {
    input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    policy: RepairPolicy,
    snap: Snapshot,
    answers: BTreeMap<i64, Answer>,
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(LangGraphWriter {
        input: t.input.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
        policy: *t.policy,
        snap: sqlite::open(t.input)?,
        answers: BTreeMap::new(),
    }))
}

fn row_of(loc: &Loc) -> Option<(&str, i64)> {
    match loc {
        Loc::Row {
            table,
            rowid: Some(r),
            ..
        } => Some((&**table, *r)),
        _ => None,
    }
}

impl Writer for LangGraphWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        for p in planned {
            for action in &p.fix.actions {
                let Action::AnswerCall { message, part } = action else {
                    continue;
                };
                let Some(pt) = conv.messages.get(*message).and_then(|m| m.parts.get(*part)) else {
                    continue;
                };
                let PartKind::ToolCall { id, .. } = &pt.kind else {
                    continue;
                };
                if self.policy.orphan_calls == OrphanCalls::Drop {
                    log.left.push(Left::of(
                        p.finding,
                        "`--orphan-calls=drop` is not carried out on a LangGraph checkpoint: the call is part of the `AIMessage` the model wrote, and LangGraph users answer it with a `ToolMessage` instead",
                    ));
                    continue;
                }
                match row_of(&pt.loc) {
                    Some((table, row)) if table == CHECKPOINTS => {
                        let a = self.answers.entry(row).or_insert_with(|| {
                            log.edits.push(Edit { synthesized: true, ..Edit::new(p.finding.rule, &conv.id, "answer-call", String::new(), pt.loc.clone()) });
                            Answer {
                                conversation: conv.id.clone(),
                                ids: Vec::new(),
                                entry: log.edits.len() - 1,
                            }
                        });
                        a.ids.push(id.clone());
                        let list = a
                            .ids
                            .iter()
                            .map(|i| format!("`{i}`"))
                            .collect::<Vec<_>>()
                            .join(", ");
                        let e = &mut log.edits[a.entry];
                        e.ids.clone_from(&a.ids);
                        e.description = format!(
                            "appended a checkpoint after the latest one of thread `{}` whose `messages` answer {list} with a `ToolMessage` (status `error`, placeholder); the latest checkpoint is kept as its parent",
                            a.conversation
                        );
                    }
                    _ => log.left.push(Left::of(
                        p.finding,
                        "the call is in a pending write, not in the checkpoint: LangGraph applies it on resume, and a checkpoint cannot answer it before it is applied",
                    )),
                }
            }
        }
        Ok(())
    }

    fn write(self: Box<Self>, log: &mut Log) -> Result<()> {
        let LangGraphWriter {
            input,
            output,
            force,
            snap,
            answers,
            ..
        } = *self;
        let Some(output) = output else { return Ok(()) };
        let out = output.as_path();
        edit_sqlite_copy(&input, out, force, snap, |tx| {
            let err = |e| db_err(out, e);
            for (row, a) in &answers {
                type Row = (String, String, String, String, Vec<u8>, Option<Vec<u8>>);
                let (thread, ns, id, ty, bytes, meta): Row = tx
                    .query_row(
                        "SELECT thread_id, checkpoint_ns, checkpoint_id, type, checkpoint, metadata FROM checkpoints WHERE rowid = ?1",
                        [row],
                        |r| {
                            Ok((
                                r.get(0)?,
                                r.get(1)?,
                                r.get(2)?,
                                r.get(3)?,
                                r.get(4)?,
                                r.get(5)?,
                            ))
                        },
                    )
                    .map_err(err)?;
                let bad = |why: String| Error::Output {
                    path: out.to_path_buf(),
                    cause: format!("checkpoint {id} of thread {thread}: {why}"),
                };
                if ty != "msgpack" {
                    return Err(bad(format!(
                        "serialised as `{ty}`; only msgpack checkpoints are written"
                    )));
                }
                let mut cp = serde::msgpack(&bytes).map_err(|e| bad(format!("{e:?}")))?;
                let added = answer(&mut cp, &a.ids).map_err(bad)?;
                let new_id = next_id(&id).ok_or_else(|| bad("its id is not a UUID".into()))?;
                if let Some(v) = get_mut(&mut cp, "id") {
                    *v = Value::from(new_id.as_str());
                }
                let body = serde::encode(&cp);
                let meta = meta.map(|m| update_metadata(&m));
                tx.execute(
                    "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    rusqlite::params![thread, ns, new_id, id, ty, body, meta],
                )
                .map_err(err)?;
                let new_row = tx.last_insert_rowid();
                // The latest checkpoint's pending writes, carried over.
                // Every column, whatever the checkpointer's version added
                // (`task_path`).
                let cols = sqlite::columns(tx, WRITES).map_err(err)?;
                let names: Vec<String> = cols.iter().map(|c| sqlite::quote_ident(c)).collect();
                let values: Vec<String> = cols
                    .iter()
                    .zip(&names)
                    .map(|(c, q)| {
                        if c == "checkpoint_id" {
                            "?1".to_string()
                        } else {
                            q.clone()
                        }
                    })
                    .collect();
                tx.execute(
                    &format!(
                        "INSERT INTO {WRITES} ({}) SELECT {} FROM {WRITES} WHERE thread_id = ?2 AND checkpoint_ns = ?3 AND checkpoint_id = ?4",
                        names.join(", "),
                        values.join(", ")
                    ),
                    rusqlite::params![new_id, thread, ns, id],
                )
                .map_err(err)?;
                let e = &mut log.edits[a.entry];
                e.location = super::state::loc(CHECKPOINTS, new_id.clone(), Some(new_row));
                e.after = Some(serde_json::Value::Array(added).to_string());
            }
            Ok(())
        })
    }
}

/// Add to the checkpoint's `messages` a `ToolMessage` for each id, right
/// after the results that follow the message that made the call. Returns
/// the messages added, as JSON for the log.
pub(super) fn answer(
    cp: &mut Value,
    ids: &[String],
) -> std::result::Result<Vec<serde_json::Value>, String> {
    let Some(Value::Array(list)) =
        get_mut(cp, "channel_values").and_then(|v| get_mut(v, super::state::MESSAGES))
    else {
        return Err("no `messages` channel".into());
    };
    let mut added = Vec::new();
    for id in ids {
        let fields = |v: &Value| match v {
            Value::Ext(ty, data) => serde::object(*ty, data),
            _ => None,
        };
        let calls = |v: &Value| {
            fields(v).is_some_and(|o| {
                matches!(get(&o.fields, "tool_calls"), Some(Value::Array(c)) if c.iter().any(|c| str_of(c, "id") == Some(id)))
            })
        };
        let Some(at) = list.iter().position(calls) else {
            return Err(format!("no message makes the call `{id}`"));
        };
        let mut end = at + 1;
        while end < list.len()
            && fields(&list[end]).is_some_and(|o| o.class.starts_with("ToolMessage"))
        {
            end += 1;
        }
        let name = list[at..=at].iter().find_map(fields).and_then(|o| {
            match get(&o.fields, "tool_calls") {
                Some(Value::Array(c)) => c
                    .iter()
                    .find(|c| str_of(c, "id") == Some(id))
                    .and_then(|c| str_of(c, "name"))
                    .map(str::to_string),
                _ => None,
            }
        });
        let msg = tool_message(id, name.as_deref());
        added.push(serde::to_json(&msg));
        list.insert(end, msg);
    }
    Ok(added)
}

/// A `ToolMessage` as `model_dump()` writes it.
fn tool_message(id: &str, name: Option<&str>) -> Value {
    let s = Value::from;
    let fields = Value::Map(vec![
        (s("content"), s(PLACEHOLDER)),
        (s("additional_kwargs"), Value::Map(Vec::new())),
        (s("response_metadata"), Value::Map(Vec::new())),
        (s("type"), s("tool")),
        (s("name"), name.map_or(Value::Nil, s)),
        (s("id"), s(format!("chatfsck-answer-{id}").as_str())),
        (s("tool_call_id"), s(id)),
        (s("artifact"), Value::Nil),
        (s("status"), s("error")),
    ]);
    serde::pydantic("langchain_core.messages.tool", "ToolMessage", fields)
}

/// The id after `id`: the same UUID plus one (LangGraph compares ids as
/// text to find the latest).
pub fn next_id(id: &str) -> Option<String> {
    let hex: String = id.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let n = u128::from_str_radix(&hex, 16).ok()?.checked_add(1)?;
    let h = format!("{n:032x}");
    Some(format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    ))
}

/// The latest checkpoint's metadata with `source: "update"` and the next
/// step, as `update_state` writes it; kept as it is when it is not JSON.
pub(super) fn update_metadata(meta: &[u8]) -> Vec<u8> {
    let Ok(serde_json::Value::Object(mut m)) = serde_json::from_slice::<serde_json::Value>(meta)
    else {
        return meta.to_vec();
    };
    let step = m
        .get("step")
        .and_then(serde_json::Value::as_i64)
        .unwrap_or(-1);
    m.insert("source".into(), "update".into());
    m.insert("step".into(), (step + 1).into());
    m.remove("writes");
    serde_json::to_vec(&m).expect("JSON")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_next_id_sorts_after_the_id() {
        let id = "1f0c2a4e-7b3d-6a10-8002-0242ac1200ff";
        let next = super::next_id(id).expect("a uuid");
        assert_eq!(next, "1f0c2a4e-7b3d-6a10-8002-0242ac120100");
        assert!(next.as_str() > id);
        assert_eq!(super::next_id("not-a-uuid"), None);
    }
}
