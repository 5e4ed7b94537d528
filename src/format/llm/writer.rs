//! Repair of llm's `logs.db` (up to 0.31) in a copy: only the rows a
//! finding names change; every other row, table and the schema stay.
//! - an unanswered call is answered as llm records a result: a
//!   `tool_results` row (`name`, `output`, `tool_call_id`, the call's
//!   `tool_id`) on the response that follows the call's response, whose
//!   prompt is empty (a tool chain's next step), with the marked
//!   placeholder as its `output`. When the call's response is the
//!   conversation's last, a response row is appended to carry it, as
//!   llm's chain does (`prompt` and `response` empty, the call's model,
//!   `options_json` `{}`): `llm -c` then sends the call, its answer and
//!   the new prompt. When the next response has a prompt of its own,
//!   `build_messages` would send that prompt between the call and an
//!   answer filed with it: nothing is inserted, the finding is left with
//!   the reason. With `--orphan-calls=drop` the `tool_calls` row is
//!   deleted instead.
//! - a stray result (its call's response is gone) is deleted;
//! - a column `Response.from_row` cannot parse is replaced by what llm
//!   reads as nothing: `arguments` and `options_json` by `{}`,
//!   `prompt_json` and `response_json` by NULL (the row itself, and the
//!   history it holds, kept).
//!
//! Every deleted row is logged whole (`row`), every replaced value with
//! its text before. The copy is made from the forensic snapshot.

use std::path::{Path, PathBuf};

use super::logs::{self, JSON_COLUMNS, RESPONSES, TOOL_CALLS, TOOL_RESULTS, json_fault};
use crate::config::{OrphanCalls, RepairPolicy};
use crate::error::Result;
use crate::finding::Action;
use crate::model::{Conversation, Dialect, Loc, PartKind};
use crate::source::sqlite::{self, Snapshot};
use crate::write::sqlite::{db_err, edit_sqlite_copy, row_json};
use crate::write::{Edit, Left, Log, PLACEHOLDER, Planned, Target, Writer};

/// What this writer carries out.
pub fn supports(_: Dialect, a: &Action) -> bool {
    matches!(
        a,
        Action::RemoveResult { .. } | Action::AnswerCall { .. } | Action::DropRecord { .. }
    )
}

/// Where an answer goes.
enum Carrier {
    /// The next response of the conversation (its rowid).
    Next(i64),
    /// A new response appended after the call's (its new id).
    Append(String),
}

/// An answer to one unanswered call (the `tool_calls` row).
struct Answer {
    call: i64,
    carrier: Carrier,
    entry: usize,
}

pub struct LlmWriter {
    input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    policy: RepairPolicy,
    snap: Snapshot,
    answers: Vec<Answer>,
    /// Rows to delete: (table, rowid, log entry).
    delete: Vec<(&'static str, i64, usize)>,
    /// Rows whose unparsable JSON columns are replaced: (table, rowid, log entry).
    mend: Vec<(&'static str, i64, usize)>,
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(LlmWriter {
        input: t.input.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
        policy: *t.policy,
        snap: sqlite::open(t.input)?,
        answers: Vec::new(),
        delete: Vec::new(),
        mend: Vec::new(),
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

/// A new response id in llm's shape (a lowercase ULID, as llm makes
/// them): the time part of the response it follows (so it sorts with
/// it), a random part made from the call it carries; one not yet taken.
fn new_id(conn: &rusqlite::Connection, after: &str, call: &str) -> rusqlite::Result<String> {
    const ALPHABET: &[u8] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let time: String = after.chars().take(10).collect();
    let mut seed: u64 = 0xcbf2_9ce4_8422_2325;
    for salt in 0u32.. {
        for b in after.bytes().chain(call.bytes()).chain(salt.to_le_bytes()) {
            seed ^= u64::from(b);
            seed = seed.wrapping_mul(0x0100_0000_01b3);
        }
        let mut x = seed;
        let tail: String = (0..16)
            .map(|_| {
                let c = ALPHABET[(x % 32) as usize] as char;
                x = x.rotate_right(5) ^ seed.rotate_left(17);
                c
            })
            .collect();
        let id = format!("{time:0<10}{tail}");
        let taken: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM responses WHERE id = ?1)",
            [&id],
            |r| r.get(0),
        )?;
        if !taken {
            return Ok(id);
        }
    }
    unreachable!("u32 salts")
}

impl LlmWriter {
    /// Where the answer to the call in `tool_calls` row `call` goes, or
    /// why it cannot go anywhere.
    fn carrier(
        &self,
        call: i64,
        call_id: &str,
    ) -> rusqlite::Result<std::result::Result<Carrier, String>> {
        let conn = &self.snap.conn;
        let (response, rowid, conv): (String, i64, Option<String>) = conn.query_row(
            "SELECT r.id, r.rowid, r.conversation_id FROM tool_calls c JOIN responses r ON r.id = c.response_id WHERE c.id = ?1",
            [call],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let next: Option<(i64, Option<String>)> = conn
            .query_row(
                "SELECT rowid, prompt FROM responses WHERE conversation_id IS ?1 AND rowid > ?2 ORDER BY rowid LIMIT 1",
                rusqlite::params![conv, rowid],
                |r| Ok((r.get(0)?, sqlite::text(r.get_ref(1)?))),
            )
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })?;
        Ok(match next {
            None => Ok(Carrier::Append(new_id(conn, &response, call_id)?)),
            Some((next, prompt)) if prompt.as_deref().unwrap_or_default().is_empty() => {
                Ok(Carrier::Next(next))
            }
            Some(_) => Err("the response after the call's has a prompt of its own, and `llm -c` (`build_messages`) sends a response's prompt before the tool results filed with it: an answer there would not follow the call (use `--orphan-calls=drop` to delete the call instead)".into()),
        })
    }
}

impl Writer for LlmWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        for p in planned {
            for action in &p.fix.actions {
                match action {
                    Action::RemoveResult { message, part }
                    | Action::AnswerCall { message, part } => {
                        let Some(pt) = conv.messages.get(*message).and_then(|m| m.parts.get(*part))
                        else {
                            continue;
                        };
                        let Some((_, row)) = row_of(&pt.loc) else {
                            continue;
                        };
                        match (&pt.kind, action) {
                            (PartKind::ToolResult { call_id, .. }, Action::RemoveResult { .. }) => {
                                self.delete.push((TOOL_RESULTS, row, log.edits.len()));
                                log.edits.push(Edit::of(p.finding, "remove-result", format!("deleted `tool_results` row {row}, the result for `{call_id}` that no earlier call of the conversation asks for"), pt.loc.clone()).with_ids(vec![call_id.clone()]));
                            }
                            (PartKind::ToolCall { id, name, .. }, Action::AnswerCall { .. }) => {
                                if self.policy.orphan_calls == OrphanCalls::Drop {
                                    self.delete.push((TOOL_CALLS, row, log.edits.len()));
                                    log.edits.push(Edit::of(p.finding, "drop-call", format!("deleted `tool_calls` row {row}, the unanswered call `{id}` (`{name}`)"), pt.loc.clone()).with_ids(vec![id.clone()]));
                                    continue;
                                }
                                match self
                                    .carrier(row, id)
                                    .map_err(sqlite::error_of(&self.input))?
                                {
                                    Ok(carrier) => {
                                        let to = match &carrier {
                                            Carrier::Next(r) => {
                                                format!("on the next response (rowid {r})")
                                            }
                                            Carrier::Append(new) => format!(
                                                "on a new empty response `{new}` appended after the call's, as llm's tool chain adds one"
                                            ),
                                        };
                                        self.answers.push(Answer {
                                            call: row,
                                            carrier,
                                            entry: log.edits.len(),
                                        });
                                        log.edits.push(Edit::of(p.finding, "answer-call", format!("inserted a `tool_results` row answering `{id}` (`{name}`) with the placeholder, {to}"), pt.loc.clone()).with_ids(vec![id.clone()]).synthesized());
                                    }
                                    Err(reason) => log.left.push(Left::of(p.finding, reason)),
                                }
                            }
                            _ => {}
                        }
                    }
                    Action::DropRecord { loc } => {
                        let Some((table, row)) = row_of(loc) else {
                            continue;
                        };
                        let table = match table {
                            RESPONSES => RESPONSES,
                            TOOL_CALLS => TOOL_CALLS,
                            _ => continue,
                        };
                        if self.mend.iter().any(|(t, r, _)| *t == table && *r == row) {
                            continue;
                        }
                        self.mend.push((table, row, log.edits.len()));
                        log.edits.push(Edit::of(p.finding, "replace-column", format!("replaced what `Response.from_row` cannot parse in `{table}` row {row} by what llm reads as nothing (the row kept)"), loc.clone()));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn write(self: Box<Self>, log: &mut Log) -> Result<()> {
        let LlmWriter {
            input,
            output,
            force,
            snap,
            answers,
            delete,
            mend,
            ..
        } = *self;
        let Some(output) = output else { return Ok(()) };
        let out = output.as_path();
        edit_sqlite_copy(&input, out, force, snap, |tx| {
            let err = |e| db_err(out, e);
            let cols = sqlite::columns(tx, TOOL_RESULTS).map_err(err)?;
            for a in &answers {
                let (response, tool_id, name, call_id): (String, Option<i64>, Option<String>, Option<String>) = tx
                    .query_row(
                        "SELECT response_id, tool_id, name, tool_call_id FROM tool_calls WHERE id = ?1",
                        [a.call],
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                    )
                    .map_err(err)?;
                let carrier = match &a.carrier {
                    Carrier::Next(rowid) => tx
                        .query_row("SELECT id FROM responses WHERE rowid = ?1", [rowid], |r| {
                            r.get::<_, String>(0)
                        })
                        .map_err(err)?,
                    Carrier::Append(new) => {
                        tx.execute(
                            "INSERT INTO responses (id, model, prompt, system, response, conversation_id, options_json, datetime_utc) \
                             SELECT ?1, model, '', NULL, '', conversation_id, '{}', datetime_utc FROM responses WHERE id = ?2",
                            rusqlite::params![new, response],
                        )
                        .map_err(err)?;
                        new.clone()
                    }
                };
                let mut names = vec!["response_id", "tool_id", "name", "output", "tool_call_id"];
                if cols.iter().any(|c| c == "exception") {
                    names.push("exception");
                }
                let marks: Vec<String> = (1..=names.len()).map(|i| format!("?{i}")).collect();
                let mut values: Vec<rusqlite::types::Value> = vec![
                    carrier.clone().into(),
                    tool_id.map_or(rusqlite::types::Value::Null, Into::into),
                    name.map_or(rusqlite::types::Value::Null, Into::into),
                    PLACEHOLDER.to_string().into(),
                    call_id.map_or(rusqlite::types::Value::Null, Into::into),
                ];
                if names.len() > 5 {
                    values.push(rusqlite::types::Value::Null);
                }
                tx.execute(
                    &format!(
                        "INSERT INTO tool_results ({}) VALUES ({})",
                        names.join(", "),
                        marks.join(", ")
                    ),
                    rusqlite::params_from_iter(values),
                )
                .map_err(err)?;
                let id = tx.last_insert_rowid();
                let e = &mut log.edits[a.entry];
                e.location = logs::loc(TOOL_RESULTS, &id.to_string(), id);
                e.after = Some(row_json(tx, out, TOOL_RESULTS, id)?.to_string());
            }
            for (table, row, entry) in &mend {
                let columns: &[(&str, bool)] = if *table == TOOL_CALLS {
                    &[("arguments", false)]
                } else {
                    &JSON_COLUMNS
                };
                let present = sqlite::columns(tx, table).map_err(err)?;
                let mut before = serde_json::Map::new();
                let mut after = serde_json::Map::new();
                for (column, null_ok) in columns {
                    if !present.iter().any(|c| c == column) {
                        continue;
                    }
                    let value: Option<String> = tx
                        .query_row(
                            &format!("SELECT CAST({column} AS TEXT) FROM {table} WHERE rowid = ?1"),
                            [row],
                            |r| r.get(0),
                        )
                        .map_err(err)?;
                    // NULL `options_json` is read as not there (older llm).
                    if value.is_none() && !null_ok {
                        continue;
                    }
                    if json_fault(value.as_deref(), *null_ok).is_none() {
                        continue;
                    }
                    let new = if *null_ok { None } else { Some("{}") };
                    tx.execute(
                        &format!("UPDATE {table} SET {column} = ?1 WHERE rowid = ?2"),
                        rusqlite::params![new, row],
                    )
                    .map_err(err)?;
                    before.insert(column.to_string(), value.into());
                    after.insert(column.to_string(), new.into());
                }
                let e = &mut log.edits[*entry];
                e.before = Some(serde_json::Value::Object(before).to_string());
                e.after = Some(serde_json::Value::Object(after).to_string());
            }
            for (table, row, entry) in &delete {
                log.edits[*entry].row = Some(row_json(tx, out, table, *row)?);
                tx.execute(&format!("DELETE FROM {table} WHERE rowid = ?1"), [row])
                    .map_err(err)?;
            }
            Ok(())
        })
    }
}
