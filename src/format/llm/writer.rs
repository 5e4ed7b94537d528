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
//!
//! A conversation read from llm 0.32's message store (its parts are
//! `parts` rows) is repaired by `rethread`: its thread's repaired
//! messages are written as new rows under llm's hashes and the thread's
//! tip moves to them; each part left out is logged whole (`row`).

use std::path::{Path, PathBuf};

use super::logs::{self, JSON_COLUMNS, RESPONSES, TOOL_CALLS, TOOL_RESULTS, json_fault};
use super::rethread::{self, Asked, Rethread};
use super::store::{self, PARTS};
use crate::config::{OrphanCalls, RepairPolicy};
use crate::error::Result;
use crate::finding::Action;
use crate::model::tree::TreeEnd;
use crate::model::{Conversation, Dialect, Loc, PartKind};
use crate::source::sqlite::{self, Snapshot};
use crate::write::sqlite::{db_err, edit_sqlite_copy, row_json};
use crate::write::{Edit, Left, Log, PLACEHOLDER, Planned, Target, Writer};

/// What this writer carries out.
pub fn supports(_: Dialect, a: &Action) -> bool {
    matches!(
        a,
        Action::RemoveResult { .. }
            | Action::AnswerCall { .. }
            | Action::DropRecord { .. }
            | Action::Relink { .. }
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
    /// Threads of the message store written again.
    threads: Vec<Thread>,
}

/// One thread's repair and the log entries it fills in when written.
struct Thread {
    plan: Rethread,
    /// (call id, log entry) of each placeholder.
    answers: Vec<(String, usize)>,
    /// (`parts` row, log entry) of each part left out.
    dropped: Vec<(i64, usize)>,
    /// (message hash, log entry) of each message left out.
    skipped: Vec<(String, usize)>,
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
        threads: Vec::new(),
    }))
}

/// The key of a row.
fn key_of(loc: &Loc) -> Option<&str> {
    match loc {
        Loc::Row { key, .. } => Some(key),
        _ => None,
    }
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

/// What a store action asks of a thread: a call to answer or drop, a
/// part to leave out.
enum Ask {
    Answer {
        message: String,
        id: String,
        name: String,
        part: i64,
        loc: Loc,
    },
    Drop {
        part: i64,
        action: &'static str,
        what: String,
        loc: Loc,
    },
    /// Mend the thread's broken walk.
    Relink { loc: Loc },
    /// Leave a message with no parts out.
    Skip { hash: String, loc: Loc },
}

impl LlmWriter {
    /// Plans the fixes a conversation's actions on the message store ask
    /// for (`false`: none do).
    fn plan_thread(
        &mut self,
        conv: &Conversation,
        planned: &[Planned<'_>],
        log: &mut Log,
    ) -> Result<bool> {
        let Some(tree) = conv.tree.as_deref() else {
            return Ok(false);
        };
        let in_store = |loc: &Loc| matches!(row_of(loc), Some((t, _)) if t == PARTS);
        let mut asks: Vec<(usize, Ask)> = Vec::new();
        let mut any = false;
        let conn = &self.snap.conn;
        let err = sqlite::error_of(&self.input);
        for (i, p) in planned.iter().enumerate() {
            for action in &p.fix.actions {
                match action {
                    Action::RemoveResult { message, part }
                    | Action::AnswerCall { message, part } => {
                        let Some(pt) = conv.messages.get(*message).and_then(|m| m.parts.get(*part))
                        else {
                            continue;
                        };
                        if !in_store(&pt.loc) {
                            continue;
                        }
                        any = true;
                        let Some((_, row)) = row_of(&pt.loc) else {
                            continue;
                        };
                        let holder = key_of(&conv.messages[*message].loc)
                            .unwrap_or_default()
                            .to_string();
                        match (&pt.kind, action) {
                            (PartKind::ToolResult { call_id, .. }, Action::RemoveResult { .. }) => {
                                asks.push((i, Ask::Drop { part: row, action: "remove-result", what: format!("the result for `{call_id}` that no earlier call of the thread asks for"), loc: pt.loc.clone() }));
                            }
                            (PartKind::ToolCall { id, name, .. }, Action::AnswerCall { .. }) => {
                                if self.policy.orphan_calls == OrphanCalls::Drop {
                                    asks.push((
                                        i,
                                        Ask::Drop {
                                            part: row,
                                            action: "drop-call",
                                            what: format!("the unanswered call `{id}` (`{name}`)"),
                                            loc: pt.loc.clone(),
                                        },
                                    ));
                                } else {
                                    asks.push((
                                        i,
                                        Ask::Answer {
                                            message: holder,
                                            id: id.clone(),
                                            name: name.clone(),
                                            part: row,
                                            loc: pt.loc.clone(),
                                        },
                                    ));
                                }
                            }
                            _ => {}
                        }
                    }
                    Action::Relink { loc } => {
                        any = true;
                        asks.push((i, Ask::Relink { loc: loc.clone() }));
                    }
                    Action::DropRecord { loc } if matches!(row_of(loc), Some((t, _)) if t == store::MESSAGES) =>
                    {
                        any = true;
                        asks.push((
                            i,
                            Ask::Skip {
                                hash: key_of(loc).unwrap_or_default().to_string(),
                                loc: loc.clone(),
                            },
                        ));
                    }
                    Action::DropRecord { loc } if in_store(loc) => {
                        any = true;
                        let Some((_, row)) = row_of(loc) else {
                            continue;
                        };
                        asks.push((
                            i,
                            Ask::Drop {
                                part: row,
                                action: "drop-part",
                                what: "a part `LogStore._load_parts` cannot rebuild".into(),
                                loc: loc.clone(),
                            },
                        ));
                    }
                    _ => {}
                }
            }
        }
        if !any {
            return Ok(false);
        }
        let leave = |log: &mut Log, why: &str| {
            let mut seen = std::collections::HashSet::new();
            for (i, _) in &asks {
                if seen.insert(*i) {
                    log.left
                        .push(Left::of(planned[*i].finding, why.to_string()));
                }
            }
        };
        let Some(thread) = tree
            .current_loc
            .as_ref()
            .and_then(key_of)
            .map(str::to_string)
        else {
            return Ok(true);
        };
        let mut chain: Vec<String> = tree
            .path
            .iter()
            .map(|&n| tree.nodes[n].key.clone())
            .collect();
        let mut bridge = String::new();
        match &tree.end {
            Some(TreeEnd::Root) => {}
            Some(TreeEnd::MissingParent { missing, .. } | TreeEnd::MissingCurrent { missing })
                if asks.iter().any(|(_, a)| matches!(a, Ask::Relink { .. })) =>
            {
                match rethread::bridge(conn, &thread, missing).map_err(&err)? {
                    Ok((above, how)) => {
                        let mut whole = above;
                        whole.append(&mut chain);
                        chain = whole;
                        bridge = how;
                    }
                    Err(why) => {
                        leave(log, &why);
                        return Ok(true);
                    }
                }
            }
            _ => {
                leave(
                    log,
                    "the thread's chain does not reach its root (see `dangling-parent`): `llm -c` does not send it, and it is not written again",
                );
                return Ok(true);
            }
        }
        let mut asked = Asked::default();
        for (_, a) in &asks {
            match a {
                Ask::Answer {
                    message, id, name, ..
                } => asked
                    .answer
                    .push((message.clone(), id.clone(), name.clone())),
                Ask::Relink { .. } => {}
                Ask::Skip { hash, .. } => {
                    asked.skip.insert(hash.clone());
                }
                Ask::Drop { part, .. } => {
                    // A part the reader skipped: which message holds it.
                    if rethread::message_of_part(conn, *part)
                        .map_err(&err)?
                        .is_some()
                    {
                        asked.drop.insert(*part);
                    }
                }
            }
        }
        if chain.is_empty() {
            leave(
                log,
                "nothing of the thread is left to link: no message of it is stored, and no turn says what came before its tip",
            );
            return Ok(true);
        }
        let plan = match rethread::plan(conn, &thread, tree.current.clone(), &chain, &asked)
            .map_err(&err)?
        {
            Ok(plan) => plan,
            Err(why) => {
                leave(log, &why);
                return Ok(true);
            }
        };
        let stale = if plan.stale.is_empty() {
            String::new()
        } else {
            format!(
                " ({} stored under a hash of content it no longer has: {})",
                plan.stale.len(),
                plan.stale
                    .iter()
                    .map(|h| format!("`{h}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let tips = format!(
            "its tip moved from `{}` to `{}`",
            plan.old_tip.as_deref().unwrap_or("null"),
            plan.new_tip.as_deref().unwrap_or("null"),
        );
        let moved = if plan.written() == 0 {
            format!("no message written again; {tips}")
        } else {
            format!(
                "the thread's messages from there on ({}) are written again under llm's hashes{stale}, the old ones kept; {tips}",
                plan.written()
            )
        };
        let mut t = Thread {
            plan,
            answers: Vec::new(),
            dropped: Vec::new(),
            skipped: Vec::new(),
        };
        for (i, a) in asks {
            let f = planned[i].finding;
            match a {
                Ask::Answer {
                    id,
                    name,
                    part,
                    loc,
                    message,
                } => {
                    let _ = part;
                    t.answers.push((id.clone(), log.edits.len()));
                    log.edits.push(Edit::of(f, "answer-call", format!("inserted a `tool_result` part answering `{id}` (`{name}`) with the placeholder in the `tool` message after message `{message}`, as llm answers a call it did not run; {moved}"), loc).with_ids(vec![id]).synthesized());
                }
                Ask::Drop {
                    part,
                    action,
                    what,
                    loc,
                } => {
                    t.dropped.push((part, log.edits.len()));
                    log.edits.push(Edit::of(
                        f,
                        action,
                        format!("left out `parts` row {part}, {what}; {moved}"),
                        loc,
                    ));
                }
                Ask::Relink { loc } => {
                    let mut e = Edit::of(f, "relink", format!("{bridge}; {moved}"), loc);
                    let tip = |h: &Option<String>| {
                        serde_json::json!({ "tip_message_hash": h }).to_string()
                    };
                    e.before = Some(tip(&t.plan.old_tip));
                    e.after = Some(tip(&t.plan.new_tip));
                    log.edits.push(e);
                }
                Ask::Skip { hash, loc } => {
                    if t.plan.skipped.contains(&hash) {
                        t.skipped.push((hash.clone(), log.edits.len()));
                        log.edits.push(Edit::of(f, "drop-message", format!("left message `{hash}` (no parts) out of the thread's walk, the messages after it linked to the one before it; {moved}"), loc));
                    } else {
                        log.edits.push(Edit::of(f, "fill-message", format!("message `{hash}` (no parts) is written again with the placeholder result of the call before it; {moved}"), loc));
                    }
                }
            }
        }
        self.threads.push(t);
        Ok(true)
    }
}

impl Writer for LlmWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        // The message store's actions first; the legacy tables' below.
        self.plan_thread(conv, planned, log)?;
        for p in planned {
            for action in &p.fix.actions {
                match action {
                    Action::RemoveResult { message, part }
                    | Action::AnswerCall { message, part } => {
                        let Some(pt) = conv.messages.get(*message).and_then(|m| m.parts.get(*part))
                        else {
                            continue;
                        };
                        let Some((table, row)) = row_of(&pt.loc) else {
                            continue;
                        };
                        if table != TOOL_CALLS && table != TOOL_RESULTS {
                            continue;
                        }
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
            threads,
            ..
        } = *self;
        let Some(output) = output else { return Ok(()) };
        let out = output.as_path();
        edit_sqlite_copy(&input, out, force, snap, |tx| {
            let err = |e| db_err(out, e);
            for t in &threads {
                for (part, entry) in &t.dropped {
                    log.edits[*entry].row = Some(row_json(tx, out, PARTS, *part)?);
                }
                for (hash, entry) in &t.skipped {
                    if let Ok(rowid) =
                        tx.query_row("SELECT rowid FROM messages WHERE hash = ?1", [hash], |r| {
                            r.get::<_, i64>(0)
                        })
                    {
                        log.edits[*entry].row = Some(row_json(tx, out, store::MESSAGES, rowid)?);
                    }
                }
                let ids = rethread::write(tx, &t.plan).map_err(err)?;
                for ((call, _, _), id) in t.plan.answers.iter().zip(ids) {
                    if let Some((_, entry)) = t.answers.iter().find(|(c, _)| c == call) {
                        let e = &mut log.edits[*entry];
                        e.location = store::part_loc(id);
                        e.after = Some(row_json(tx, out, PARTS, id)?.to_string());
                    }
                }
            }
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
