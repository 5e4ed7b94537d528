//! Repair of Crush's `crush.db`: only the affected `messages` rows change,
//! everything else (other rows, other tables, the schema) stays as it was;
//! Crush's own triggers run as they run when Crush writes (a row's
//! `updated_at`, a session's `message_count`).
//! - a stray tool result is removed from its row's `parts`; a `tool` row
//!   left with no result is deleted;
//! - an unanswered tool call is answered by a new `tool` row right after
//!   its row, holding what Crush itself writes for a call its run was
//!   cancelled in (agent.go:1107-1153: an `is_error` `tool_result` with
//!   the call's id and name, `Error: user cancelled assistant tool
//!   calling`, and the `finish` part `Create` adds to every row but an
//!   assistant's), stamped with the call row's `created_at`: Crush orders
//!   by `created_at` (seconds), and a row of the same second sorts by its
//!   `rowid`, so the new row (the highest `rowid`) sorts right after the
//!   call's row and the `tool` rows of the same second; when a row of
//!   another role shares that second after it, nothing is inserted and the
//!   finding is left, with the reason. With `--orphan-calls=drop` the call
//!   is removed from its row instead;
//! - a call's arguments that are not a JSON object become `{}`, what Crush
//!   itself stores for a call cut off by a cancel (agent.go:1108-1111);
//! - a row whose `parts` Crush refuses is deleted.
//!
//! Every removed or replaced row is in the repair log; a deleted row is
//! logged whole (every column, its `row`), so the log can put it back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::db::TABLE;
use crate::config::{OrphanCalls, RepairPolicy};
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::model::{Conversation, Dialect, Loc, PartKind, Slot};
use crate::source::sqlite::{self, Snapshot};
use crate::write::sqlite::{db_err, edit_sqlite_copy, row_json};
use crate::write::{Edit, Left, Log, Planned, Target, Writer};

/// What Crush writes as the result of a call whose run was cancelled
/// (agent.go:1135-1138).
pub const CANCELLED: &str = "Error: user cancelled assistant tool calling";

/// What this writer carries out.
pub fn supports(_: Dialect, a: &Action) -> bool {
    matches!(
        a,
        Action::RemoveResult { .. }
            | Action::AnswerCall { .. }
            | Action::DropRecord { .. }
            | Action::ReplaceArguments { .. }
    )
}

/// One change to an element of a row's `parts`.
enum Op {
    Remove(usize),
    Input(usize, String),
}

/// A new `tool` row answering the unanswered calls of one row.
struct Insert {
    after: i64,
    calls: Vec<(String, String)>,
    entry: usize,
}

pub struct CrushWriter {
    input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    policy: RepairPolicy,
    snap: Snapshot,
    /// Changes to a row's `parts`: rowid → (change, log entry).
    ops: BTreeMap<i64, Vec<(Op, usize)>>,
    inserts: Vec<Insert>,
    /// Rows to delete: (rowid, log entry).
    delete: Vec<(i64, usize)>,
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(CrushWriter {
        input: t.input.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
        policy: *t.policy,
        snap: sqlite::open(t.input)?,
        ops: BTreeMap::new(),
        inserts: Vec::new(),
        delete: Vec::new(),
    }))
}

/// A UUID (version 4 in form, as Crush's `uuid.New()` writes) made from
/// what the row answers, so that the same repair writes the same row.
fn row_id(session: &str, calls: &[(String, String)]) -> String {
    let mut h = Sha256::new();
    h.update(session.as_bytes());
    for (id, _) in calls {
        h.update([0]);
        h.update(id.as_bytes());
    }
    let mut b: [u8; 16] = h.finalize()[..16].try_into().expect("16 bytes");
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

impl CrushWriter {
    /// Whether a row stamped like row `after` sorts right after it and the
    /// `tool` rows of its second: no later row of its session of another
    /// role shares its `created_at`.
    fn insertable(&self, after: i64) -> Result<bool> {
        self.snap
            .conn
            .query_row(
                "SELECT NOT EXISTS (SELECT 1 FROM messages m, messages r WHERE r.rowid = ?1 \
                 AND m.session_id = r.session_id AND m.created_at IS r.created_at \
                 AND m.rowid > r.rowid AND m.role IS NOT 'tool')",
                [after],
                |r| r.get(0),
            )
            .map_err(sqlite::error_of(&self.input))
    }
}

impl Writer for CrushWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        // Unanswered calls, by the row that holds them.
        type Answers<'a, 'b> =
            BTreeMap<i64, (Vec<(String, String)>, Vec<&'a Planned<'b>>, Option<Loc>)>;
        let mut answers: Answers<'_, '_> = BTreeMap::new();
        for p in planned {
            for action in &p.fix.actions {
                if let Action::DropRecord { loc } = action {
                    let Some(row) = loc.rowid() else { continue };
                    self.delete.push((row, log.edits.len()));
                    log.edits.push(Edit::of(
                        p.finding,
                        "drop-record",
                        "deleted the row whose `parts` Crush cannot read (kept verbatim here)"
                            .into(),
                        loc.clone(),
                    ));
                    continue;
                }
                let (Action::RemoveResult { message, part }
                | Action::AnswerCall { message, part }
                | Action::ReplaceArguments { message, part, .. }) = action
                else {
                    continue;
                };
                let Some(pt) = conv.messages.get(*message).and_then(|m| m.parts.get(*part)) else {
                    continue;
                };
                let (Some(row), Some(Slot::Item(_, index))) = (pt.loc.rowid(), pt.slot) else {
                    continue;
                };
                let entry = log.edits.len();
                match (&pt.kind, action) {
                    (PartKind::ToolResult { call_id, .. }, Action::RemoveResult { .. }) => {
                        self.ops
                            .entry(row)
                            .or_default()
                            .push((Op::Remove(index), entry));
                        log.edits.push(Edit::of(p.finding, "remove-result", format!(
                                "removed the stray `tool_result` for `{call_id}` (`parts[{index}]`)"
                            ), pt.loc.clone()).with_ids(vec![call_id.clone()]));
                    }
                    (
                        PartKind::ToolCall { id, arguments, .. },
                        Action::ReplaceArguments { with, .. },
                    ) => {
                        self.ops
                            .entry(row)
                            .or_default()
                            .push((Op::Input(index, with.clone()), entry));
                        log.edits.push(Edit::of(p.finding, "replace-arguments", format!(
                                "replaced the `input` of tool call `{id}` (`parts[{index}]`, {} bytes) with `{with}`, as Crush stores a call cut off by a cancel",
                                arguments.raw.len()
                            ), pt.loc.clone()).with_ids(vec![id.clone()]));
                    }
                    (PartKind::ToolCall { id, name, .. }, Action::AnswerCall { .. }) => {
                        if self.policy.orphan_calls == OrphanCalls::Drop {
                            self.ops
                                .entry(row)
                                .or_default()
                                .push((Op::Remove(index), entry));
                            log.edits.push(Edit::of(p.finding, "drop-call", format!("removed the unanswered `tool_call` `{id}` (`{name}`, `parts[{index}]`)"), pt.loc.clone()).with_ids(vec![id.clone()]));
                        } else {
                            let e = answers.entry(row).or_default();
                            e.0.push((id.clone(), name.clone()));
                            e.1.push(p);
                            e.2.get_or_insert_with(|| pt.loc.clone());
                        }
                    }
                    _ => {}
                }
            }
        }
        for (row, (calls, findings, at)) in answers {
            if !self.insertable(row)? {
                for p in findings {
                    log.left.push(Left::of(p.finding, "Crush orders a session's rows by `created_at` (seconds), then `rowid`, and a later row that is not a tool result shares this call's second: an inserted answer would not sort right after the call (use `--orphan-calls=drop` to remove the call instead)"));
                }
                continue;
            }
            let Some(at) = at else { continue };
            let list = calls
                .iter()
                .map(|(i, _)| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", ");
            self.inserts.push(Insert {
                after: row,
                calls: calls.clone(),
                entry: log.edits.len(),
            });
            let mut e = Edit::of(findings[0].finding, "answer-call", format!(
                    "inserted a `tool` row after row {row} answering {list} with the error result Crush writes for a cancelled call (`{CANCELLED}`)"
                ), at.clone()).with_ids(calls.into_iter().map(|(i, _)| i).collect());
            e.synthesized = true;
            log.edits.push(e);
        }
        Ok(())
    }

    fn write(self: Box<Self>, log: &mut Log) -> Result<()> {
        let CrushWriter {
            input,
            output,
            force,
            snap,
            ops,
            inserts,
            delete,
            ..
        } = *self;
        let Some(output) = output else { return Ok(()) };
        let out = output.as_path();
        edit_sqlite_copy(&input, out, force, snap, |tx| {
            let err = |e| db_err(out, e);
            let parts = |row: i64| -> Result<String> {
                tx.query_row("SELECT parts FROM messages WHERE rowid = ?1", [row], |r| {
                    Ok(sqlite::text(r.get_ref(0)?).unwrap_or_default())
                })
                .map_err(err)
            };
            for (row, changes) in &ops {
                let before = parts(*row)?;
                let mut v: Vec<Value> =
                    serde_json::from_str(&before).map_err(|e| Error::Output {
                        path: out.to_path_buf(),
                        cause: format!("messages row {row} no longer parses: {e}"),
                    })?;
                for (op, _) in changes {
                    if let Op::Input(i, with) = op
                        && let Some(data) = v.get_mut(*i).and_then(|p| p.get_mut("data"))
                        && let Some(obj) = data.as_object_mut()
                    {
                        obj.insert("input".into(), Value::String(with.clone()));
                    }
                }
                let mut gone: Vec<usize> = changes
                    .iter()
                    .filter_map(|(op, _)| match op {
                        Op::Remove(i) => Some(*i),
                        Op::Input(..) => None,
                    })
                    .collect();
                gone.sort_unstable();
                gone.dedup();
                for i in gone.into_iter().rev() {
                    if i < v.len() {
                        v.remove(i);
                    }
                }
                // A `tool` row with no result left is deleted (its
                // `finish` part alone is never sent).
                let role: String = tx
                    .query_row("SELECT role FROM messages WHERE rowid = ?1", [row], |r| {
                        Ok(sqlite::text(r.get_ref(0)?).unwrap_or_default())
                    })
                    .map_err(err)?;
                let empty = !v.iter().any(|p| {
                    matches!(
                        p.get("type").and_then(Value::as_str),
                        Some("tool_result" | "tool_call" | "text" | "reasoning")
                    )
                });
                let (after, deleted) = if empty && role == "tool" {
                    let whole = row_json(tx, out, TABLE, *row)?;
                    tx.execute("DELETE FROM messages WHERE rowid = ?1", [row])
                        .map_err(err)?;
                    (None, Some(whole))
                } else {
                    let text = serde_json::to_string(&v).expect("JSON");
                    tx.execute(
                        "UPDATE messages SET parts = ?1 WHERE rowid = ?2",
                        rusqlite::params![text, row],
                    )
                    .map_err(err)?;
                    (Some(text), None)
                };
                for (_, entry) in changes {
                    let e = &mut log.edits[*entry];
                    e.before = Some(before.clone());
                    e.after.clone_from(&after);
                    e.row.clone_from(&deleted);
                    if deleted.is_some() {
                        e.description
                            .push_str("; the row was left with no result and was deleted");
                    }
                }
            }
            for ins in &inserts {
                let (session, created): (String, rusqlite::types::Value) = tx
                    .query_row(
                        "SELECT session_id, created_at FROM messages WHERE rowid = ?1",
                        [ins.after],
                        |r| Ok((sqlite::text(r.get_ref(0)?).unwrap_or_default(), r.get(1)?)),
                    )
                    .map_err(err)?;
                let mut blocks: Vec<Value> = ins
                    .calls
                    .iter()
                    .map(|(id, name)| {
                        json!({"type": "tool_result", "data": {
                            "tool_call_id": id, "name": name, "content": CANCELLED,
                            "data": "", "mime_type": "", "metadata": "", "is_error": true,
                        }})
                    })
                    .collect();
                blocks.push(json!({"type": "finish", "data": {"reason": "stop", "time": 0}}));
                let body = serde_json::to_string(&blocks).expect("JSON");
                let id = row_id(&session, &ins.calls);
                let cols = sqlite::columns(tx, TABLE).map_err(err)?;
                let has = |c: &str| cols.iter().any(|x| x == c);
                let mut names = vec![
                    "id",
                    "session_id",
                    "role",
                    "parts",
                    "model",
                    "created_at",
                    "updated_at",
                ];
                let mut values: Vec<rusqlite::types::Value> = vec![
                    id.clone().into(),
                    session.into(),
                    "tool".to_string().into(),
                    body.clone().into(),
                    String::new().into(),
                    created.clone(),
                    created,
                ];
                if has("is_summary_message") {
                    names.push("is_summary_message");
                    values.push(0i64.into());
                }
                let marks: Vec<String> = (1..=names.len()).map(|i| format!("?{i}")).collect();
                tx.execute(
                    &format!(
                        "INSERT INTO messages ({}) VALUES ({})",
                        names.join(", "),
                        marks.join(", ")
                    ),
                    rusqlite::params_from_iter(values),
                )
                .map_err(err)?;
                let rowid = tx.last_insert_rowid();
                log.edits[ins.entry].location = super::db::loc(&id, rowid);
                log.edits[ins.entry].after = Some(body);
            }
            for (row, entry) in &delete {
                log.edits[*entry].before = parts(*row).ok();
                log.edits[*entry].row = Some(row_json(tx, out, TABLE, *row)?);
                tx.execute("DELETE FROM messages WHERE rowid = ?1", [row])
                    .map_err(err)?;
            }
            Ok(())
        })
    }
}
