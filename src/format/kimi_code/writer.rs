//! A repaired copy of a Kimi Code agent journal, written in Kimi Code's
//! own terms. Every line is copied byte for byte but those an edit names:
//!
//! - a line that does not parse: dropped. Mid-file, Kimi Code would stop
//!   reading there and rewrite the journal without everything after it;
//!   without the line, it reads the records after it again;
//! - a stray tool result (a `tool.result` loop event whose call is not
//!   waiting for one): its line dropped (Kimi Code ignores it anyway);
//! - an unanswered call: a `tool.result` loop event right after the
//!   call's line, holding what Kimi Code itself answers such a call with
//!   on resume (an `isError` result `Tool execution was interrupted before
//!   its result was recorded. Do not assume the tool completed
//!   successfully.`), so the copy sends what the client sent in memory; or,
//!   with `--orphan-calls=drop`, the call's line dropped;
//! - messages between a call and its results (a message appended while
//!   the call's step was open, before the call): their lines moved after
//!   the last result's line, so the results follow their call.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::load::{self, Record};
use super::read::INTERRUPTED;
use crate::config::{OrphanCalls as OrphanPolicy, RepairPolicy as Policy};
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::model::{Conversation, PartKind};
use crate::source::Limits;
use crate::write::lines::Records;
use crate::write::{Edit, Left, Log, Planned, Target, Writer};

pub struct KimiWriter {
    input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    limits: Limits,
    policy: Policy,
    drop_lines: BTreeSet<u64>,
    insert_after: BTreeMap<u64, Vec<String>>,
    planned: bool,
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(KimiWriter {
        input: t.input.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
        limits: t.limits,
        policy: *t.policy,
        drop_lines: BTreeSet::new(),
        insert_after: BTreeMap::new(),
        planned: false,
    }))
}

/// The loop event of `r` when it is one of type `ty` for call `id`.
fn loop_event<'a>(r: &'a Record, ty: &str, id: &str) -> Option<&'a Value> {
    let ev = r.value.get("event")?;
    (r.ty() == "context.append_loop_event"
        && ev.get("type").and_then(Value::as_str) == Some(ty)
        && ev.get("toolCallId").and_then(Value::as_str) == Some(id))
    .then_some(ev)
}

impl Writer for KimiWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        self.planned = true;
        if planned.is_empty() {
            return Ok(());
        }
        let loaded = load::load(&self.input, self.limits)?;
        let by_line: HashMap<u64, &Record> = loaded
            .records
            .iter()
            .filter_map(|r| r.loc.line().map(|l| (l, r)))
            .collect();
        let mut records = Records::open(&self.input)?;
        for p in planned {
            let f = p.finding;
            for action in &p.fix.actions {
                let part = |message: usize, part: usize| {
                    conv.messages.get(message).and_then(|m| m.parts.get(part))
                };
                match action {
                    Action::DropRecord { loc } => {
                        let Some(line) = loc.line() else { continue };
                        if !self.drop_lines.insert(line) {
                            continue;
                        }
                        let (before, before_base64) = records.read_verbatim(loc)?;
                        let mut e = Edit::new(
                            f.rule,
                            &f.conversation,
                            action.name(),
                            format!(
                                "dropped line {line}, which does not parse (Kimi Code would drop it, and every line after it, on resume)"
                            ),
                            loc.clone(),
                        );
                        e.ids = f.ids.clone();
                        e.before = Some(before);
                        e.before_base64 = before_base64;
                        log.edits.push(e);
                    }
                    Action::RemoveResult { message, part: k } => {
                        let Some(p) = part(*message, *k) else {
                            continue;
                        };
                        let PartKind::ToolResult { call_id, .. } = &p.kind else {
                            continue;
                        };
                        let Some(line) = p.loc.line() else { continue };
                        let Some(r) = by_line
                            .get(&line)
                            .filter(|r| loop_event(r, "tool.result", call_id).is_some())
                        else {
                            log.left.push(Left::of(
                                f,
                                "the result is not a `tool.result` loop event of its own line",
                            ));
                            continue;
                        };
                        if !self.drop_lines.insert(line) {
                            continue;
                        }
                        let mut e = Edit::of(f, action.name(), format!(
                                "dropped the tool result for `{call_id}` (line {line}), which answers no call (Kimi Code ignores it on resume)"
                            ), r.loc.clone()).with_ids(vec![call_id.clone()]);
                        e.before = Some(records.read(&r.loc)?);
                        log.edits.push(e);
                    }
                    Action::AnswerCall { message, part: k } => {
                        let Some(p) = part(*message, *k) else {
                            continue;
                        };
                        let PartKind::ToolCall { id, name, .. } = &p.kind else {
                            continue;
                        };
                        let Some(line) = p.loc.line() else { continue };
                        let Some((r, ev)) = by_line
                            .get(&line)
                            .and_then(|r| loop_event(r, "tool.call", id).map(|ev| (*r, ev)))
                        else {
                            log.left.push(Left::of(
                                f,
                                "the call is not a `tool.call` loop event of its own line",
                            ));
                            continue;
                        };
                        match self.policy.orphan_calls {
                            OrphanPolicy::Report => {
                                log.left
                                    .push(Left::of(f, "orphan-calls policy is `report`"));
                            }
                            OrphanPolicy::Drop => {
                                if !self.drop_lines.insert(line) {
                                    continue;
                                }
                                let mut e = Edit::of(
                                    f,
                                    action.name(),
                                    format!(
                                        "dropped the unanswered call `{id}` (`{name}`), line {line}"
                                    ),
                                    r.loc.clone(),
                                )
                                .with_ids(vec![id.clone()]);
                                e.before = Some(records.read(&r.loc)?);
                                log.edits.push(e);
                            }
                            OrphanPolicy::Placeholder => {
                                let field =
                                    |k: &str| r.value.get(k).cloned().unwrap_or(Value::Null);
                                let record = json!({
                                    "type": "context.append_loop_event",
                                    "agentId": field("agentId"),
                                    "event": {
                                        "type": "tool.result",
                                        "parentUuid": ev.get("uuid").cloned().unwrap_or(Value::Null),
                                        "toolCallId": id,
                                        "result": {"output": INTERRUPTED, "isError": true},
                                    },
                                    "time": field("time"),
                                })
                                .to_string();
                                let mut e = Edit::of(f, action.name(), format!(
                                        "answered the call `{id}` (`{name}`) with the error result Kimi Code itself answers it with on resume (`{INTERRUPTED}`), in a new record right after line {line}"
                                    ), r.loc.clone()).with_ids(vec![id.clone()]);
                                e.synthesized = true;
                                e.after = Some(record.clone());
                                log.edits.push(e);
                                self.insert_after.entry(line).or_default().push(record);
                            }
                        }
                    }
                    Action::MoveAfter { messages, after } => {
                        // Each message moved is a `context.append_message`
                        // record of its own line, the one they go after a
                        // `tool.result` loop event's line: a line moved
                        // after a line.
                        let line_of = |m: usize, ty: &str| -> Option<u64> {
                            let msg = conv.messages.get(m)?;
                            let line = msg.loc.line()?;
                            let r = by_line.get(&line)?;
                            let own = msg.parts.iter().all(|p| p.loc.line() == Some(line));
                            let is = match ty {
                                "tool.result" => {
                                    r.value.pointer("/event/type").and_then(Value::as_str)
                                        == Some(ty)
                                }
                                _ => r.ty() == ty,
                            };
                            (own && is).then_some(line)
                        };
                        let (Some(moved), Some(to)) = (
                            messages
                                .iter()
                                .map(|&m| line_of(m, "context.append_message"))
                                .collect::<Option<Vec<_>>>(),
                            line_of(*after, "tool.result"),
                        ) else {
                            log.left.push(Left::of(
                                f,
                                "a message to move is not a `context.append_message` record of its own line, or the last result not a `tool.result` loop event of its own",
                            ));
                            continue;
                        };
                        if self.drop_lines.contains(&to)
                            || moved.iter().any(|l| *l > to || self.drop_lines.contains(l))
                        {
                            log.left.push(Left::of(
                                f,
                                "a message to move is not before the last result in the journal",
                            ));
                            continue;
                        }
                        for line in moved {
                            let r = by_line[&line];
                            let text = records.read(&r.loc)?;
                            self.drop_lines.insert(line);
                            let mut e = Edit::of(
                                f,
                                action.name(),
                                format!(
                                    "moved line {line} after line {to}, the call's last result, so the results come right after their call (Kimi Code sends the messages in the journal's order)"
                                ),
                                r.loc.clone(),
                            )
                            .with_ids(f.ids.clone());
                            e.before = Some(text.clone());
                            e.after = Some(text.clone());
                            log.edits.push(e);
                            self.insert_after.entry(to).or_default().push(text);
                        }
                    }
                    _ => log
                        .left
                        .push(Left::of(f, "not written in Kimi Code journals")),
                }
            }
        }
        Ok(())
    }

    fn write(self: Box<Self>, _log: &mut Log) -> Result<()> {
        let Some(out) = &self.output else {
            return Ok(());
        };
        if !self.planned {
            return Err(Error::not_history(&self.input, "holds no conversation"));
        }
        let werr = crate::write::lines::output_error(out);
        crate::write::lines::rewrite(
            &self.input,
            out,
            self.limits.max_line_bytes,
            self.force,
            |line, w| {
                if self.drop_lines.contains(&line.number) {
                    return Ok(());
                }
                w.write_all(line.bytes).map_err(&werr)?;
                if line.terminated {
                    w.write_all(b"\n").map_err(&werr)?;
                }
                if let Some(list) = self.insert_after.get(&line.number) {
                    if !line.terminated {
                        w.write_all(b"\n").map_err(&werr)?;
                    }
                    for text in list {
                        w.write_all(text.as_bytes()).map_err(&werr)?;
                        w.write_all(b"\n").map_err(&werr)?;
                    }
                }
                Ok(())
            },
            |_| Ok(()),
        )
    }
}
