//! Repair of opencode's database: a tool part left `pending` or `running`
//! is settled in the `error` state opencode itself writes for an aborted
//! tool (`{"status":"error","input":…,"error":"Tool execution aborted",
//! "metadata":{"interrupted":true},"time":{"start":…,"end":…}}`, #44254),
//! every other key of the part kept; or, with `--orphan-calls=drop`, the
//! part row is deleted. Only those `part` rows change: no `event` row is
//! invented, every other table and row stays as it was. A row whose
//! `data` holds lone surrogate escapes gets `\ufffd` in their place (what
//! opencode sends), every other byte kept. The copy is made
//! with SQLite's backup API from the forensic snapshot and must pass
//! `PRAGMA quick_check`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::config::{OrphanCalls, RepairPolicy};
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::format::records::record::replace_lone_surrogates_in;
use crate::model::{Conversation, Dialect, Loc, PartKind};
use crate::source::sqlite;
use crate::write::payload::{self, Payload};
use crate::write::sqlite::{db_err, edit_sqlite_copy, mend_surrogates_in_row, row_json};
use crate::write::{Edit, Log, Planned, Target, Writer};

/// The error text opencode stores for a tool it aborted.
pub const ABORTED: &str = "Tool execution aborted";

/// What this writer carries out: settling an unanswered tool part.
pub fn supports(_: Dialect, a: &Action) -> bool {
    matches!(
        a,
        Action::AnswerCall { .. } | Action::ReplaceSurrogates { .. }
    )
}

enum Change {
    /// Settle the part in the error state.
    Settle,
    /// Delete the part row.
    Delete,
    /// Replace the lone surrogate escapes of the row's `data`.
    Mend,
}

struct PartEdit {
    /// `part` or `message`.
    table: &'static str,
    rowid: i64,
    change: Change,
    /// The log entry.
    entry: usize,
}

pub struct PartWriter {
    input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    policy: RepairPolicy,
    edits: Vec<PartEdit>,
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(PartWriter {
        input: t.input.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
        policy: *t.policy,
        edits: Vec::new(),
    }))
}

impl PartWriter {
    /// Plan the mending of a row's lone surrogate escapes.
    fn mend(&mut self, conv: &Conversation, p: &Planned<'_>, loc: &Loc, log: &mut Log) {
        let Loc::Row {
            table,
            rowid: Some(rowid),
            ..
        } = loc
        else {
            return;
        };
        let table = match &**table {
            "message" => "message",
            "part" => "part",
            _ => return,
        };
        self.edits.push(PartEdit {
            table,
            rowid: *rowid,
            change: Change::Mend,
            entry: log.edits.len(),
        });
        log.edits.push(Edit::new(
            p.finding.rule,
            &conv.id,
            "replace-surrogates",
            "replaced the lone surrogate escapes with `\\ufffd`".to_string(),
            loc.clone(),
        ));
    }
}

impl Writer for PartWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        for p in planned {
            for action in &p.fix.actions {
                if let Action::ReplaceSurrogates { loc } = action {
                    self.mend(conv, p, loc, log);
                    continue;
                }
                let Action::AnswerCall { message, part } = action else {
                    continue;
                };
                let Some(part) = conv.messages.get(*message).and_then(|m| m.parts.get(*part))
                else {
                    continue;
                };
                let (
                    PartKind::ToolCall { id, name, .. },
                    Loc::Row {
                        rowid: Some(rowid), ..
                    },
                ) = (&part.kind, &part.loc)
                else {
                    continue;
                };
                let (change, action, description, synthesized) = match self.policy.orphan_calls {
                    OrphanCalls::Drop => (
                        Change::Delete,
                        "drop-call",
                        format!("deleted the unfinished tool part of `{id}` (`{name}`)"),
                        false,
                    ),
                    // The engine leaves calls alone under `report`.
                    _ => (
                        Change::Settle,
                        "answer-call",
                        format!(
                            "set the tool part of `{id}` (`{name}`) to the `error` state opencode writes for an aborted tool (`{ABORTED}`)"
                        ),
                        true,
                    ),
                };
                self.edits.push(PartEdit {
                    table: "part",
                    rowid: *rowid,
                    change,
                    entry: log.edits.len(),
                });
                log.edits.push(Edit {
                    synthesized,
                    ids: vec![id.clone()],
                    ..Edit::new(
                        p.finding.rule,
                        &conv.id,
                        action,
                        description,
                        part.loc.clone(),
                    )
                });
            }
        }
        Ok(())
    }

    fn write(self: Box<Self>, log: &mut Log) -> Result<()> {
        let Some(output) = &self.output else {
            return Ok(());
        };
        let snap = sqlite::open(&self.input)?;
        // Escapes are mended first: a part settled or deleted afterwards
        // starts from the mended text.
        let mut edits: Vec<&PartEdit> = self.edits.iter().collect();
        edits.sort_by_key(|e| !matches!(e.change, Change::Mend));
        edit_sqlite_copy(&self.input, output, self.force, snap, |tx| {
            for e in edits {
                let (before, after) = match e.change {
                    Change::Mend => {
                        let sql = match e.table {
                            "message" => (
                                "SELECT CAST(data AS TEXT) FROM message WHERE rowid = ?1",
                                "UPDATE message SET data = ?1 WHERE rowid = ?2",
                            ),
                            _ => (
                                "SELECT CAST(data AS TEXT) FROM part WHERE rowid = ?1",
                                "UPDATE part SET data = ?1 WHERE rowid = ?2",
                            ),
                        };
                        let (before, after) = mend_surrogates_in_row(
                            tx,
                            output,
                            sql,
                            e.rowid,
                            replace_lone_surrogates_in,
                        )?;
                        (Payload::from(before), Some(Payload::from(after)))
                    }
                    Change::Delete => {
                        let (before, _) = part_row(tx, output, e.rowid)?;
                        log.edits[e.entry].row = Some(row_json(tx, output, "part", e.rowid)?);
                        tx.execute("DELETE FROM part WHERE rowid = ?1", [e.rowid])
                            .map_err(|err| db_err(output, err))?;
                        (Payload::from(before), None)
                    }
                    Change::Settle => {
                        let (before, created) = part_row(tx, output, e.rowid)?;
                        let before: Arc<str> = before.into();
                        let after =
                            settled_shared(&before, created).ok_or_else(|| Error::Output {
                                path: output.clone(),
                                cause: format!(
                                    "part row {} no longer parses as a tool part",
                                    e.rowid
                                ),
                            })?;
                        let text = after.to_text().map_err(|err| Error::Output {
                            path: output.clone(),
                            cause: format!("part row {}: {err}", e.rowid),
                        })?;
                        tx.execute(
                            "UPDATE part SET data = ?1 WHERE rowid = ?2",
                            rusqlite::params![text, e.rowid],
                        )
                        .map_err(|err| db_err(output, err))?;
                        (Payload::shared(before), Some(after))
                    }
                };
                log.edits[e.entry].large.before = Some(before);
                log.edits[e.entry].large.after = after;
            }
            Ok(())
        })
    }
}

/// A part row's `data` as text, and its creation time.
fn part_row(tx: &rusqlite::Transaction<'_>, output: &Path, rowid: i64) -> Result<(String, i64)> {
    tx.query_row(
        "SELECT CAST(data AS TEXT), time_created FROM part WHERE rowid = ?1",
        [rowid],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .map_err(|err| db_err(output, err))
}

/// [`settled`] of a part held once, shared: a large string of it (a
/// command, a file's text) stays out of the tree the part is settled on
/// ([`payload::shrink`]) and is put back as it is written (issue 35,
/// defect 16: the part was held as its text, a tree, two copies of its
/// input and the text written).
fn settled_shared(data: &Arc<str>, created: i64) -> Option<Payload> {
    match payload::shrink(data) {
        Some(s) => settled(&s.text, created).map(|t| s.expand_shared(t, data.clone())),
        None => settled(data, created).map(Payload::from),
    }
}

/// The part's `data` with its state settled as aborted: the input kept
/// (`{}` when there is none), the start time kept (else the part's
/// creation time), and every other key of the part as it was.
pub fn settled(data: &str, created: i64) -> Option<String> {
    let (mut v, _) =
        crate::format::records::record::tree_as_lenient_readers_read(data.as_bytes()).ok()?;
    let obj = v.as_object_mut()?;
    let state = obj.get("state").cloned().unwrap_or(Value::Null);
    let input = match state.get("input") {
        Some(i) if !i.is_null() => i.clone(),
        _ => json!({}),
    };
    let start = state
        .get("time")
        .and_then(|t| t.get("start"))
        .and_then(Value::as_i64)
        .unwrap_or(created);
    obj.insert(
        "state".into(),
        json!({
            "status": "error",
            "input": input,
            "error": ABORTED,
            "metadata": {"interrupted": true},
            "time": {"start": start, "end": start},
        }),
    );
    serde_json::to_string(&v).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_running_part_keeps_its_keys_and_input() {
        let before = r#"{"type":"tool","tool":"bash","callID":"c1","state":{"status":"running","input":{"command":"npm test"},"title":"npm test","time":{"start":5}},"metadata":{"x":1}}"#;
        let after: serde_json::Value =
            serde_json::from_str(&super::settled(before, 1).unwrap()).unwrap();
        assert_eq!(after["callID"], "c1");
        assert_eq!(after["metadata"]["x"], 1);
        assert_eq!(after["state"]["status"], "error");
        assert_eq!(after["state"]["input"]["command"], "npm test");
        assert_eq!(after["state"]["error"], super::ABORTED);
        assert_eq!(after["state"]["metadata"]["interrupted"], true);
        assert_eq!(after["state"]["time"]["start"], 5);
    }
}
