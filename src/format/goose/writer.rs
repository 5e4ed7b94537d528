//! Repair of goose's `sessions.db`: only the affected `messages` rows
//! change, everything else (other rows, `metadata_json`, timestamps, other
//! tables, the schema) stays as it was.
//! - a stray `toolResponse` is removed from its row's `content_json`
//!   (compact JSON, as goose writes it); a row left empty is deleted;
//! - an unanswered `toolRequest` is answered by a new `user` row right
//!   after it, holding an error `toolResponse` with the marked placeholder,
//!   stamped with the request's `timestamp` (goose orders by `timestamp`,
//!   then `id`: the new row sorts right after the request, which is
//!   checked: when another row of the session shares that second after the
//!   request, nothing is inserted and the finding is left, with the
//!   reason); with `--orphan-calls=drop` the request is removed from its
//!   row instead, as goose itself does in memory;
//! - a row whose `content_json` does not parse is deleted.
//!
//! Every removed or replaced row is in the repair log; a deleted row is
//! logged whole (every column, its `row`), so the log can put it back.
//! The copy is made with SQLite's backup API from the forensic snapshot
//! and must pass `PRAGMA quick_check`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::db::TABLE;
use crate::config::{OrphanCalls, RepairPolicy};
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::model::{Conversation, Dialect, PartKind, Slot};
use crate::source::sqlite::{self, Snapshot};
use crate::write::payload::{self, Payload};
use crate::write::sqlite::{db_err, edit_sqlite_copy, row_json};
use crate::write::{Edit, Left, Log, PLACEHOLDER, Planned, Target, Writer};

/// What this writer carries out.
pub fn supports(_: Dialect, a: &Action) -> bool {
    matches!(
        a,
        Action::RemoveResult { .. } | Action::AnswerCall { .. } | Action::DropRecord { .. }
    )
}

/// A new `user` row answering the unanswered requests of one row.
struct Insert {
    after: i64,
    ids: Vec<String>,
    entry: usize,
}

pub struct GooseWriter {
    input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    policy: RepairPolicy,
    snap: Snapshot,
    /// Elements to remove from a row's `content_json`: rowid → (index, log entry).
    remove: BTreeMap<i64, Vec<(usize, usize)>>,
    inserts: Vec<Insert>,
    /// Rows to delete: (rowid, log entry).
    delete: Vec<(i64, usize)>,
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(GooseWriter {
        input: t.input.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
        policy: *t.policy,
        snap: sqlite::open(t.input)?,
        remove: BTreeMap::new(),
        inserts: Vec::new(),
        delete: Vec::new(),
    }))
}

impl GooseWriter {
    /// Whether a row stamped like row `after` would sort right after it:
    /// no later row of its session shares the value goose orders by.
    fn insertable(&self, after: i64) -> Result<bool> {
        let col =
            super::db::order_column(&self.snap.conn).map_err(sqlite::error_of(&self.input))?;
        self.snap
            .conn
            .query_row(
                &format!("SELECT NOT EXISTS (SELECT 1 FROM messages m, messages r WHERE r.id = ?1 AND m.session_id = r.session_id AND m.{col} IS r.{col} AND m.id > r.id)"),
                [after],
                |r| r.get(0),
            )
            .map_err(sqlite::error_of(&self.input))
    }
}

impl Writer for GooseWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        // Unanswered requests, by the row that holds them.
        let mut answers: BTreeMap<i64, (Vec<String>, Vec<&Planned<'_>>)> = BTreeMap::new();
        for p in planned {
            for action in &p.fix.actions {
                match action {
                    Action::RemoveResult { message, part }
                    | Action::AnswerCall { message, part } => {
                        let Some(pt) = conv.messages.get(*message).and_then(|m| m.parts.get(*part))
                        else {
                            continue;
                        };
                        let (Some(row), Some(Slot::Item(_, index))) = (pt.loc.rowid(), pt.slot)
                        else {
                            continue;
                        };
                        match (&pt.kind, action) {
                            (PartKind::ToolResult { call_id, .. }, Action::RemoveResult { .. }) => {
                                self.remove
                                    .entry(row)
                                    .or_default()
                                    .push((index, log.edits.len()));
                                log.edits.push(Edit::of(p.finding, "remove-result", format!("removed the stray `toolResponse` for `{call_id}` (`content_json[{index}]`)"), pt.loc.clone()).with_ids(vec![call_id.clone()]));
                            }
                            (PartKind::ToolCall { id, name, .. }, Action::AnswerCall { .. }) => {
                                if self.policy.orphan_calls == OrphanCalls::Drop {
                                    self.remove
                                        .entry(row)
                                        .or_default()
                                        .push((index, log.edits.len()));
                                    log.edits.push(Edit::of(p.finding, "drop-call", format!("removed the unanswered `toolRequest` `{id}` (`{name}`, `content_json[{index}]`), as goose drops it"), pt.loc.clone()).with_ids(vec![id.clone()]));
                                } else {
                                    let e = answers.entry(row).or_default();
                                    e.0.push(id.clone());
                                    e.1.push(p);
                                }
                            }
                            _ => {}
                        }
                    }
                    Action::DropRecord { loc } => {
                        let Some(row) = loc.rowid() else { continue };
                        self.delete.push((row, log.edits.len()));
                        log.edits.push(Edit::of(
                            p.finding,
                            "drop-record",
                            "deleted the row that does not parse (kept verbatim here)".into(),
                            loc.clone(),
                        ));
                    }
                    _ => {}
                }
            }
        }
        for (row, (ids, findings)) in answers {
            if !self.insertable(row)? {
                for p in findings {
                    log.left.push(Left::of(p.finding, "goose orders a session's rows by `timestamp` (one-second resolution), then `id`, and a later row shares this request's timestamp: an inserted answer would not sort right after the request (use `--orphan-calls=drop` to remove the request instead)"));
                }
                continue;
            }
            self.inserts.push(Insert {
                after: row,
                ids: ids.clone(),
                entry: log.edits.len(),
            });
            let list = ids
                .iter()
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", ");
            log.edits.push(Edit::of(findings[0].finding, "answer-call", format!("inserted a `user` row after row {row} answering {list} with an error `toolResponse` (placeholder)"), super::db::loc(row)).with_ids(ids).synthesized());
        }
        Ok(())
    }

    fn write(self: Box<Self>, log: &mut Log) -> Result<()> {
        let GooseWriter {
            input,
            output,
            force,
            snap,
            remove,
            inserts,
            delete,
            ..
        } = *self;
        let Some(output) = output else { return Ok(()) };
        let out = output.as_path();
        let cols = sqlite::columns(&snap.conn, TABLE).map_err(sqlite::error_of(&input))?;
        let has = |c: &str| cols.iter().any(|x| x == c);
        let (has_ts, has_meta, has_mid) =
            (has("timestamp"), has("metadata_json"), has("message_id"));
        edit_sqlite_copy(&input, out, force, snap, |tx| {
            let err = |e| db_err(out, e);
            let content = |row: i64| -> Result<String> {
                tx.query_row(
                    "SELECT CAST(content_json AS TEXT) FROM messages WHERE id = ?1",
                    [row],
                    |r| r.get(0),
                )
                .map_err(err)
            };
            for (row, items) in &remove {
                // The row's text is held once, shared by the log's before
                // and after; its large strings stay out of the tree the
                // edit is made on ([`payload::shrink`]), and the text
                // written is made from it (issue 35, defect 16: the row
                // was held as a tree, its text, the text written and a
                // copy of each for every log entry: 211 MiB for a 24 MiB
                // text).
                let before: Arc<str> = content(*row)?.into();
                let shrunk = payload::shrink(&before);
                let small = shrunk.as_ref().map_or(&*before, |s| s.text.as_str());
                let mut v: Vec<Value> = serde_json::from_str(small).map_err(|e| Error::Output {
                    path: out.to_path_buf(),
                    cause: format!("messages row {row} no longer parses: {e}"),
                })?;
                let mut idx: Vec<usize> = items.iter().map(|(i, _)| *i).collect();
                idx.sort_unstable();
                idx.dedup();
                for i in idx.into_iter().rev() {
                    if i < v.len() {
                        v.remove(i);
                    }
                }
                // A row left empty is deleted: logged whole (its
                // `metadata_json`, `tokens` and timestamps too).
                let mut deleted = None;
                let after = if v.is_empty() {
                    deleted = Some(row_json(tx, out, TABLE, *row)?);
                    tx.execute("DELETE FROM messages WHERE id = ?1", [row])
                        .map_err(err)?;
                    None
                } else {
                    let small = serde_json::to_string(&v).expect("JSON");
                    drop(v);
                    let after = match &shrunk {
                        Some(s) => s.expand_shared(small, before.clone()),
                        None => Payload::from(small),
                    };
                    let text = after.to_text().map_err(|e| Error::Output {
                        path: out.to_path_buf(),
                        cause: format!("messages row {row}: {e}"),
                    })?;
                    tx.execute(
                        "UPDATE messages SET content_json = ?1 WHERE id = ?2",
                        rusqlite::params![text, row],
                    )
                    .map_err(err)?;
                    Some(after)
                };
                drop(shrunk);
                let before = Payload::shared(before);
                for (_, entry) in items {
                    let e = &mut log.edits[*entry];
                    e.large.before = Some(before.clone());
                    e.large.after.clone_from(&after);
                    e.row.clone_from(&deleted);
                    if after.is_none() {
                        e.description
                            .push_str("; the row was left empty and was deleted");
                    }
                }
            }
            for ins in &inserts {
                let blocks: Vec<Value> = ins.ids.iter().map(|id| json!({"type": "toolResponse", "id": id, "toolResult": {"status": "error", "error": PLACEHOLDER}})).collect();
                let body = serde_json::to_string(&blocks).expect("JSON");
                let (session, created, ts, meta): (String, i64, Option<String>, Option<String>) = tx.query_row(
                    &format!(
                        "SELECT session_id, created_timestamp, {}, {} FROM messages WHERE id = ?1",
                        if has_ts { "\"timestamp\"" } else { "NULL" },
                        if has_meta { "metadata_json" } else { "NULL" },
                    ),
                    [ins.after],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                ).map_err(err)?;
                let meta = meta
                    .unwrap_or_else(|| r#"{"userVisible":true,"agentVisible":true}"#.to_string());
                let mut names = vec!["session_id", "role", "content_json", "created_timestamp"];
                if has_ts {
                    names.push("\"timestamp\"");
                }
                if has_meta {
                    names.push("metadata_json");
                }
                let marks: Vec<String> = (1..=names.len()).map(|i| format!("?{i}")).collect();
                let sql = format!(
                    "INSERT INTO messages ({}) VALUES ({})",
                    names.join(", "),
                    marks.join(", ")
                );
                let mut values: Vec<rusqlite::types::Value> = vec![
                    session.into(),
                    "user".to_string().into(),
                    body.clone().into(),
                    created.into(),
                ];
                if has_ts {
                    values.push(ts.map_or(rusqlite::types::Value::Null, Into::into));
                }
                if has_meta {
                    values.push(meta.into());
                }
                tx.execute(&sql, rusqlite::params_from_iter(values))
                    .map_err(err)?;
                let id = tx.last_insert_rowid();
                if has_mid {
                    tx.execute("UPDATE messages SET message_id = 'msg_' || session_id || '_' || id WHERE id = ?1", [id]).map_err(err)?;
                }
                log.edits[ins.entry].location = super::db::loc(id);
                log.edits[ins.entry].after = Some(body);
            }
            for (row, entry) in &delete {
                log.edits[*entry].before = content(*row).ok();
                log.edits[*entry].row = Some(row_json(tx, out, TABLE, *row)?);
                tx.execute("DELETE FROM messages WHERE id = ?1", [row])
                    .map_err(err)?;
            }
            Ok(())
        })
    }
}
