//! A repaired copy of a Qwen Code session, written in Qwen Code's own
//! terms.
//!
//! Every line is copied byte for byte but those an edit names, and the
//! walk from the last record still reaches every record it reached before
//! (the chain writer Qwen Code shares with pi: `records::chain::writer`;
//! here, Qwen Code's own actions).
//!
//! - a line that does not parse: dropped (Qwen Code skips it anyway), the
//!   records Qwen Code recovers from it (`}{`-glued) written on lines of
//!   their own. The first record after it whose `parentUuid` then names no
//!   record (the dropped line was most likely its parent: a torn record
//!   and the one Qwen Code appended onto it) is linked to the record
//!   before the line, so the walk no longer stops there;
//! - a stray tool result: its `functionResponse` part removed, and its
//!   record with it when nothing else remains;
//! - an unanswered call: a `tool_result` record right after the call's
//!   record, with what Qwen Code itself records for a call cancelled
//!   while it ran (a `functionResponse` whose `response.error` is
//!   `[Operation Cancelled] Reason: User cancelled tool execution.`); or,
//!   with `--orphan-calls=drop`, the call removed from its record.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::load::{self, Loaded};
use super::read::{self, Sent};
use crate::config::OrphanCalls as OrphanPolicy;
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::format::records::chain::writer::{Copy, Plan, Salvage};
use crate::format::records::chain::{App, uuid_v4};
use crate::model::{Conversation, PartKind, Slot};
use crate::write::{Edit, Left, Log, Planned, Target, Writer};

/// What Qwen Code records for a call cancelled while it ran (0.15.10,
/// `CoreToolScheduler`: `[Operation Cancelled] Reason: ` and the reason).
pub const CANCELLED: &str = "[Operation Cancelled] Reason: User cancelled tool execution.";

/// Qwen Code's session files, for the shared chain writer.
pub struct Qwen;

impl App for Qwen {
    const CLIENT: &'static str = "Qwen Code";
    const PARENT: &'static str = "parentUuid";
    const NODE: &'static str = "record";
    const WHOLE: &'static str = "chain";

    /// A version 4 uuid, as Qwen Code draws them.
    fn new_id(seed: &str, taken: &mut HashSet<String>) -> String {
        uuid_v4(seed, taken)
    }
}

pub struct QwenWriter(Copy);

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(QwenWriter(Copy::new(t))))
}

/// The record of message `m` and the index in its `parts` of the part at
/// `part`: the part's line names its record (one per line, or refused).
fn record_of(
    loaded: &Loaded,
    sent: &[Sent],
    conv: &Conversation,
    m: usize,
    part: usize,
) -> Option<(usize, usize)> {
    let Some(Sent::Records(group)) = sent.get(m) else {
        return None;
    };
    let p = conv.messages.get(m)?.parts.get(part)?;
    let Some(Slot::Item(_, k)) = p.slot else {
        return None;
    };
    let line = p.loc.line()?;
    let i = group
        .iter()
        .copied()
        .find(|&i| loaded.records[i].loc.line() == Some(line))?;
    // Alone on its line: no other record of the file shares it (glued
    // records of other messages included), so a line edit touches it only.
    let on_line = loaded
        .records
        .iter()
        .filter(|r| r.loc.line() == Some(line))
        .count();
    (on_line == 1).then_some((i, k))
}

impl Writer for QwenWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        if !self.0.begin(planned) {
            return Ok(());
        }
        let loaded = load::load(&self.0.input, self.0.limits)?;
        let sent = read::sent(&loaded);
        if sent.len() != conv.messages.len() {
            return Err(Error::input(
                &self.0.input,
                "changed while it was being repaired (its records no longer match)",
            ));
        }
        let policy = self.0.policy;
        let lines = self.0.take();
        let mut plan = Plan::<Qwen>::new(&loaded.records, &self.0.input, lines)?;
        for p in planned {
            let f = p.finding;
            for action in &p.fix.actions {
                match action {
                    Action::DropRecord { loc } => {
                        let line = loc.line().unwrap_or(0);
                        plan.drop_line(f, action.name(), loc, |bytes| {
                            let text = String::from_utf8_lossy(bytes).into_owned();
                            let kept: Vec<String> = load::recover_objects(text.trim())
                                .into_iter()
                                .map(|(s, t)| text.trim()[s..t].to_string())
                                .filter(|t| {
                                    serde_json::from_str::<Value>(t).is_ok_and(|v| v.is_object())
                                })
                                .collect();
                            (!kept.is_empty()).then(|| Salvage {
                                description: format!(
                                    "dropped what of line {line} is no whole record, and wrote the {} record(s) Qwen Code recovers from it on lines of their own",
                                    kept.len()
                                ),
                                ids: Vec::new(),
                                text: kept.join("\n"),
                            })
                        })?;
                    }
                    Action::RemoveResult { message, part } => {
                        let Some((i, k)) = record_of(&loaded, &sent, conv, *message, *part) else {
                            log.left.push(Left::of(
                                f,
                                "the result's record is not one of its own line",
                            ));
                            continue;
                        };
                        let r = &loaded.records[i];
                        let v = plan.tree.value[i].get_or_insert_with(|| r.value.clone());
                        let Some(parts) = v
                            .pointer_mut("/message/parts")
                            .and_then(Value::as_array_mut)
                        else {
                            continue;
                        };
                        if k >= parts.len() {
                            continue;
                        }
                        let removed = parts.remove(k);
                        let call = removed
                            .pointer("/functionResponse/id")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string();
                        let line = r.loc.line().unwrap_or(0);
                        if !parts.is_empty() {
                            plan.edit_of(
                                i,
                                Edit::of(f, action.name(), format!("removed the tool result for `{call}` from line {line}: it answers no call"), r.loc.clone()).with_ids(vec![call]),
                            );
                            continue;
                        }
                        if !plan.drop_node(
                            f,
                            action.name(),
                            i,
                            format!(
                                "dropped the tool result for `{call}` (line {line}), which answers no call"
                            ),
                            vec![call],
                        )? {
                            log.left.push(Left::of(
                                f,
                                "the result shares its line with other records (glued): dropping the line would drop them",
                            ));
                        }
                    }
                    Action::AnswerCall { message, part } => {
                        let Some((i, k)) = record_of(&loaded, &sent, conv, *message, *part) else {
                            log.left
                                .push(Left::of(f, "the call's record is not one of its own line"));
                            continue;
                        };
                        let Some(PartKind::ToolCall { id, name, .. }) =
                            conv.messages[*message].parts.get(*part).map(|p| &p.kind)
                        else {
                            continue;
                        };
                        let r = &loaded.records[i];
                        let line = r.loc.line().unwrap_or(0);
                        match policy.orphan_calls {
                            OrphanPolicy::Report => {
                                log.left
                                    .push(Left::of(f, "orphan-calls policy is `report`"));
                            }
                            OrphanPolicy::Drop => {
                                if !plan.remove_item(i, "/message/parts", k) {
                                    log.left.push(Left::of(
                                        f,
                                        "the call is all its record holds: removing it would leave an empty model message",
                                    ));
                                    continue;
                                }
                                plan.edit_of(
                                    i,
                                    Edit::of(f, action.name(), format!("removed the unanswered call `{id}` (`{name}`) from line {line}"), r.loc.clone()).with_ids(vec![id.clone()]),
                                );
                            }
                            OrphanPolicy::Placeholder => {
                                let Some(cu) = r.id.clone() else {
                                    log.left.push(Left::of(
                                        f,
                                        "the call's record has no `uuid` to hang a result from",
                                    ));
                                    continue;
                                };
                                let under = plan.under(i, &cu);
                                let uuid = plan.new_id(&format!("{cu}/{id}"));
                                let field =
                                    |k: &str| r.value.get(k).cloned().unwrap_or(Value::Null);
                                let record = json!({
                                    "uuid": uuid,
                                    "parentUuid": under,
                                    "sessionId": field("sessionId"),
                                    "timestamp": field("timestamp"),
                                    "type": "tool_result",
                                    "cwd": field("cwd"),
                                    "version": field("version"),
                                    "message": {
                                        "role": "user",
                                        "parts": [{"functionResponse": {
                                            "id": id,
                                            "name": name,
                                            "response": {"error": CANCELLED},
                                        }}],
                                    },
                                    "toolCallResult": {"callId": id, "status": "cancelled"},
                                });
                                plan.put_after(
                                    f,
                                    action.name(),
                                    i,
                                    &under,
                                    uuid,
                                    record,
                                    id,
                                    format!(
                                        "answered the call `{id}` (`{name}`) with the result Qwen Code itself records for a call cancelled while it ran (`{CANCELLED}`), in a new record right after line {line}"
                                    ),
                                );
                            }
                        }
                    }
                    Action::DropRepeat { loc, of } => {
                        // Records sharing a uuid are merged, their parts
                        // concatenated: a record written twice sends its
                        // call twice.
                        let at = |l: &crate::model::Loc| {
                            let line = l.line()?;
                            loaded
                                .records
                                .iter()
                                .position(|r| r.loc.line() == Some(line))
                        };
                        let done = match (at(loc), at(of)) {
                            (Some(i), Some(o)) => plan.drop_repeat(f, action.name(), i, o)?,
                            _ => false,
                        };
                        if !done {
                            log.left.push(Left::of(
                                f,
                                "the repeat is not a line of its own that repeats the earlier one byte for byte",
                            ));
                        }
                    }
                    _ => log
                        .left
                        .push(Left::of(f, "not written in Qwen Code sessions")),
                }
            }
        }
        let lines = plan.finish(log)?;
        self.0.set(lines);
        Ok(())
    }

    fn write(self: Box<Self>, _log: &mut Log) -> Result<()> {
        self.0.write()
    }
}
