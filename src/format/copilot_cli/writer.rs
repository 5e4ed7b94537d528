//! A repaired copy of a Copilot CLI event log, written in Copilot CLI's
//! own terms.
//!
//! Every line is copied byte for byte but those an edit names, and every
//! event's `parentId` still names the event before it (the chain writer
//! Copilot CLI shares with pi and Qwen Code: `records::chain::writer`):
//!
//! - a line that does not parse: dropped (Copilot CLI drops it too, and
//!   rewrites the file without it), the whole events it holds (`}{`-glued
//!   lines) written on lines of their own, so that what Copilot CLI would
//!   lose for good is kept;
//! - a stray tool result (a `tool.execution_complete` no request names):
//!   its event removed, the event after it hung from the one before;
//! - an unanswered call: the `tool.execution_complete` Copilot CLI itself
//!   writes on resume for a call without a recorded result
//!   ([`INTERRUPTED`], error code `interrupted`), right after the call's
//!   `tool.execution_start` (else its `assistant.message`). A call whose
//!   result is in a glued line that this repair splits is left alone.

use std::collections::HashSet;
use std::path::Path;

use serde_json::{Value, json};

use crate::config::OrphanCalls as OrphanPolicy;
use crate::error::Result;
use crate::finding::{Action, Finding};
use crate::format::records::chain::writer::{Copy, Plan, Salvage};
use crate::format::records::chain::{self, App, Node, uuid_v4};

use super::lines;
use crate::model::{Conversation, Loc, PartKind};
use crate::source::Limits;
use crate::write::{Edit, Left, Log, Planned, Target, Writer};

/// The error Copilot CLI 1.0.102 records, on resume, for a call whose
/// result the log does not hold (a `tool.execution_complete` with
/// `success: false`, `error.code` `interrupted`, `model` `resumed`).
pub const INTERRUPTED: &str = "Tool execution was interrupted before a result was recorded. Its effects may be absent, partial, or already complete, and other tools may have completed successfully. Check the current state before retrying; do not assume success or replay this operation blindly.";

/// Copilot CLI's event logs, for the shared chain writer.
pub struct Copilot;

impl App for Copilot {
    const CLIENT: &'static str = "Copilot CLI";
    const PARENT: &'static str = "parentId";
    const NODE: &'static str = "event";
    const WHOLE: &'static str = "log";

    /// A version 4 uuid, as Copilot CLI draws event ids.
    fn new_id(seed: &str, taken: &mut HashSet<String>) -> String {
        uuid_v4(seed, taken)
    }
}

/// The events of the log: one per record its lines hold (a line that
/// parses as an object, NUL padding taken off it, or lines a split record
/// runs over), as the reader reads them (`lines.rs`).
fn events(path: &Path, limits: Limits) -> Result<Vec<Node>> {
    struct Events(Vec<Node>);
    impl lines::Sink for Events {
        fn record(&mut self, text: &[u8], at: lines::At) -> bool {
            let Ok(text) = std::str::from_utf8(text) else {
                return false;
            };
            match chain::parse(text) {
                Ok((v @ Value::Object(_), _)) => {
                    self.0.push(Node::new(at.loc, v, "id", "parentId", false));
                    true
                }
                _ => false,
            }
        }
        fn corrupt(&mut self, _: &[u8], _: Loc, _: bool) {}
        fn padding(&mut self, _: Loc, _: u64) {}
    }
    let mut out = Events(Vec::new());
    lines::read(path, limits, &mut out)?;
    Ok(out.0)
}

/// The whole events a line that does not parse holds (`}{`-glued, or
/// after a torn one), as their texts. On a line that is not UTF-8, an
/// event with a byte that is not (read as U+FFFD) is no event of it: its
/// text would not be the line's.
fn glued_events(bytes: &[u8]) -> Vec<(String, Value)> {
    let utf8 = std::str::from_utf8(bytes).is_ok();
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    lines::whole_events(text)
        .into_iter()
        .filter_map(|(s, t)| {
            let part = &text[s..t];
            if !utf8 && part.contains('\u{FFFD}') {
                return None;
            }
            let v = serde_json::from_str::<Value>(part).ok()?;
            let event = v.get("type").is_some_and(Value::is_string)
                && v.get("id").is_some_and(Value::is_string)
                && v.get("data").is_some_and(Value::is_object);
            event.then(|| (part.to_string(), v))
        })
        .collect()
}

/// The call a result event answers.
fn result_of(v: &Value) -> Option<&str> {
    (v.get("type").and_then(Value::as_str) == Some("tool.execution_complete"))
        .then(|| v.pointer("/data/toolCallId").and_then(Value::as_str))
        .flatten()
}

pub struct CopilotWriter(Copy);

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(CopilotWriter(Copy::new(t))))
}

/// The event on the line of message `m`'s part `part`, of type `ty`.
fn event_of(nodes: &[Node], conv: &Conversation, m: usize, part: usize, ty: &str) -> Option<usize> {
    let line = conv.messages.get(m)?.parts.get(part)?.loc.line()?;
    nodes
        .iter()
        .position(|n| n.loc.line() == Some(line))
        .filter(|&i| nodes[i].ty() == ty)
}

impl Writer for CopilotWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        if !self.0.begin(planned) {
            return Ok(());
        }
        let nodes = events(&self.0.input, self.0.limits)?;
        let policy = self.0.policy;
        let lines = self.0.take();
        let mut plan = Plan::<Copilot>::new(&nodes, &self.0.input, lines)?;
        // The results this repair recovers from glued lines: their calls
        // are answered already.
        let mut recovered: HashSet<String> = HashSet::new();
        for p in planned {
            for action in &p.fix.actions {
                if let Action::DropRecord { loc } = action {
                    let bytes = plan.records.read_bytes(loc)?;
                    recovered.extend(
                        glued_events(&bytes)
                            .iter()
                            .filter_map(|(_, v)| result_of(v).map(str::to_string)),
                    );
                }
            }
        }
        // The events already on lines of their own, and those a split
        // line has put back: an event is never written twice (a line
        // written twice, then glued, holds one already there).
        let mut seen: HashSet<String> = nodes.iter().filter_map(|n| n.id.clone()).collect();
        rewrite_lines(&mut plan, &nodes, planned, log)?;
        for p in planned {
            let f = p.finding;
            for action in &p.fix.actions {
                match action {
                    Action::DropRecord { loc } => {
                        drop_line(&mut plan, &nodes, f, action.name(), loc, &mut seen)?;
                    }
                    Action::RemoveResult { message, part } => {
                        let Some(i) =
                            event_of(&nodes, conv, *message, *part, "tool.execution_complete")
                        else {
                            log.left.push(Left::of(
                                f,
                                "the result is not a `tool.execution_complete` event of its own line",
                            ));
                            continue;
                        };
                        let call = result_of(&nodes[i].value).unwrap_or("").to_string();
                        let line = nodes[i].loc.line().unwrap_or(0);
                        if !plan.drop_node(
                            f,
                            action.name(),
                            i,
                            format!(
                                "dropped the tool result for `{call}` (line {line}), which answers no call (Copilot CLI leaves it out of the request)"
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
                        let Some(PartKind::ToolCall { id, name, .. }) = conv
                            .messages
                            .get(*message)
                            .and_then(|m| m.parts.get(*part))
                            .map(|p| &p.kind)
                        else {
                            continue;
                        };
                        if recovered.contains(id) {
                            log.left.push(Left::of(
                                f,
                                "its result is in a glued line this repair splits into whole events",
                            ));
                            continue;
                        }
                        let Some(at) = event_of(&nodes, conv, *message, *part, "assistant.message")
                        else {
                            log.left.push(Left::of(
                                f,
                                "the call is not in an `assistant.message` event of its own line",
                            ));
                            continue;
                        };
                        match policy.orphan_calls {
                            OrphanPolicy::Report => {
                                log.left
                                    .push(Left::of(f, "orphan-calls policy is `report`"));
                            }
                            OrphanPolicy::Drop => log.left.push(Left::of(
                                f,
                                "Copilot CLI answers an unanswered call itself on resume; the call is kept (the policy `drop` is not carried out in Copilot CLI logs)",
                            )),
                            OrphanPolicy::Placeholder => {
                                answer(&mut plan, f, action.name(), &nodes, at, id, name);
                            }
                        }
                    }
                    Action::JoinLines { .. }
                    | Action::EscapeSeparators { .. }
                    | Action::DropPadding { .. } => {}
                    _ => log
                        .left
                        .push(Left::of(f, "not written in Copilot CLI event logs")),
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

/// Drop the line at `loc`, keeping the whole events it holds on lines of
/// their own, but those `seen` already holds (the line itself is in the
/// log, whole).
fn drop_line<'f>(
    plan: &mut Plan<'_, 'f, Copilot>,
    nodes: &[Node],
    f: &'f Finding,
    action: &'static str,
    loc: &crate::model::Loc,
    seen: &mut HashSet<String>,
) -> Result<()> {
    let line = loc.line().unwrap_or(0);
    // The event before the line, which a kept event whose parent is in no
    // line (the torn one before it) hangs from.
    let mut before = nodes
        .iter()
        .rev()
        .find(|n| n.loc.line().is_some_and(|l| l < line))
        .and_then(|n| n.id.clone());
    let known: HashSet<String> = seen.clone();
    plan.drop_line(f, action, loc, |bytes| {
        let mut kept: Vec<(String, Value)> = glued_events(bytes)
            .into_iter()
            .filter(|(_, v)| {
                v.get("id")
                    .and_then(Value::as_str)
                    .is_none_or(|id| seen.insert(id.to_string()))
            })
            .collect();
        let mut relinked = String::new();
        for (text, v) in &mut kept {
            let parent = v.get("parentId").and_then(Value::as_str);
            let lost = parent.is_some_and(|p| !known.contains(p) && Some(p) != before.as_deref());
            if lost && let (Some(p), Some(b)) = (parent, before.as_deref()) {
                relinked = format!(
                    "; the first, whose parent `{p}` is in no whole event, hung from `{b}`, the event before the line"
                );
                let was = format!("\"parentId\":{}", Value::String(p.to_string()));
                let now = format!("\"parentId\":{}", Value::String(b.to_string()));
                if text.matches(&was).count() == 1 {
                    *text = text.replacen(&was, &now, 1);
                } else if let Some(o) = v.as_object_mut() {
                    o.insert("parentId".into(), Value::String(b.to_string()));
                    *text = v.to_string();
                }
            }
            before = v.get("id").and_then(Value::as_str).map(str::to_string);
        }
        (!kept.is_empty()).then(|| Salvage {
            description: format!(
                "dropped what of line {line} is no whole event, and wrote the {} whole event(s) it holds on lines of their own (Copilot CLI would drop them all and rewrite the log without them){relinked}",
                kept.len()
            ),
            ids: kept
                .iter()
                .filter_map(|(_, v)| v.get("id").and_then(Value::as_str).map(str::to_string))
                .collect(),
            text: kept
                .into_iter()
                .map(|(t, _)| t)
                .collect::<Vec<_>>()
                .join("\n"),
        })
    })
}

/// Put in, after the call's `tool.execution_start` (else its
/// `assistant.message`, event `at`), the result Copilot CLI writes for a
/// call it finds unanswered on resume.
fn answer(
    plan: &mut Plan<'_, '_, Copilot>,
    f: &Finding,
    action: &'static str,
    nodes: &[Node],
    at: usize,
    id: &str,
    name: &str,
) {
    let i = nodes
        .iter()
        .enumerate()
        .skip(at + 1)
        .find(|(_, n)| {
            n.ty() == "tool.execution_start"
                && n.value.pointer("/data/toolCallId").and_then(Value::as_str) == Some(id)
        })
        .map_or(at, |(k, _)| k);
    let Some(own) = nodes[i].id.clone() else {
        return;
    };
    let under = plan.under(i, &own);
    let uuid = plan.new_id(&format!("{own}/{id}"));
    let line = nodes[i].loc.line().unwrap_or(0);
    let event = json!({
        "type": "tool.execution_complete",
        "data": {
            "toolCallId": id,
            "model": "resumed",
            "interactionId": "resume",
            "success": false,
            "error": {"message": INTERRUPTED, "code": "interrupted"},
        },
        "id": uuid,
        "timestamp": nodes[i].value.get("timestamp").cloned().unwrap_or(Value::Null),
        "parentId": under,
    });
    plan.put_after(
        f,
        action,
        i,
        &under,
        uuid.clone(),
        event,
        id,
        format!(
            "answered the call `{id}` (`{name}`) with the result Copilot CLI itself records on resume for a call without one (`{INTERRUPTED}`), in a new event right after line {line}"
        ),
    );
    // The event after it whose parent is in no line most likely followed
    // the lost result: it follows the one put in.
    let Some(next) = (i + 1..nodes.len()).find(|&k| !plan.tree.dropped[k]) else {
        return;
    };
    let Some(missing) = plan.tree.parent[next].clone() else {
        return;
    };
    if plan.tree.ids.contains(&missing) {
        return;
    }
    plan.tree.parent[next] = Some(uuid);
    plan.edit_of(
        next,
        Edit::of(f, "relink", format!(
                "linked line {} (its parent `{missing}` is in no line) to the result put in for `{id}`, the event before it now",
                nodes[next].loc.line().unwrap_or(0)
            ), nodes[next].loc.clone()).with_ids(vec![id.to_string()]),
    );
}

/// What a repair rewrites of one record's lines.
#[derive(Default)]
struct Rewrite<'f> {
    join: bool,
    escape: bool,
    unpad: bool,
    /// The findings and actions, in order, for the log.
    by: Vec<(&'f Finding, &'static str)>,
}

/// Rewrite the records whose lines are damaged around them: split lines
/// joined into one, NUL padding dropped, raw U+2028/U+2029 escaped (each
/// record once, with every such action planned for it); a line of
/// padding alone dropped.
fn rewrite_lines<'f>(
    plan: &mut Plan<'_, 'f, Copilot>,
    nodes: &[Node],
    planned: &[Planned<'f>],
    log: &mut Log,
) -> Result<()> {
    let mut by_loc: Vec<(Loc, Rewrite<'f>)> = Vec::new();
    for p in planned {
        for action in &p.fix.actions {
            let (Action::JoinLines { loc }
            | Action::EscapeSeparators { loc }
            | Action::DropPadding { loc }) = action
            else {
                continue;
            };
            let k = match by_loc.iter().position(|(l, _)| l == loc) {
                Some(k) => k,
                None => {
                    by_loc.push((loc.clone(), Rewrite::default()));
                    by_loc.len() - 1
                }
            };
            let r = &mut by_loc[k].1;
            match action {
                Action::JoinLines { .. } => r.join = true,
                Action::EscapeSeparators { .. } => r.escape = true,
                _ => r.unpad = true,
            }
            r.by.push((p.finding, action.name()));
        }
    }
    for (loc, r) in by_loc {
        let line = loc.line().unwrap_or(0);
        let Some(i) = nodes.iter().position(|n| n.loc == loc) else {
            // A line of padding alone.
            for (f, action) in r.by {
                plan.drop_padding(
                    Edit::of(f, action, format!("dropped line {line}, NUL bytes and nothing else (Copilot CLI drops them too)"), loc.clone()),
                    &loc,
                )?;
            }
            continue;
        };
        let bytes = plan.records.read_bytes(&loc)?;
        let parts: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        if parts.len() > 1 && !r.join {
            for (f, _) in r.by {
                log.left.push(Left::of(
                    f,
                    "the record is split over lines, and joining them is not part of this repair",
                ));
            }
            continue;
        }
        let parts: Vec<&[u8]> = parts
            .into_iter()
            .map(|p| if r.unpad { lines::strip_nuls(p).0 } else { p })
            .collect();
        let Some(mut text) = lines::join(&parts) else {
            for (f, _) in r.by {
                log.left
                    .push(Left::of(f, "the record's lines are not UTF-8"));
            }
            continue;
        };
        if r.escape {
            text = lines::escape_separators(&text);
        }
        // The text must read as the event the lint read.
        if chain::parse(&text).map(|(v, _)| v).ok().as_ref() != Some(&nodes[i].value) {
            for (f, _) in r.by {
                log.left.push(Left::of(
                    f,
                    "the rewritten record would not read as the record found",
                ));
            }
            continue;
        }
        let id = nodes[i].id.clone().into_iter().collect::<Vec<_>>();
        let last = line + parts.len() as u64 - 1;
        for (f, action) in r.by {
            let description = match action {
                "join-lines" => format!(
                    "joined lines {line}–{last} into the one event they hold, each raw newline inside its strings written as `\\n` (Copilot CLI would drop every one of the lines)"
                ),
                "escape-separators" => format!(
                    "wrote each raw U+2028/U+2029 of line {line} as its escape (`\\u2028`, `\\u2029`): the same text"
                ),
                _ => format!("dropped the NUL bytes of line {line}, keeping the event on it"),
            };
            plan.rewrite(
                Edit::of(f, action, description, loc.clone()).with_ids(id.clone()),
                i,
                text.clone(),
            )?;
        }
    }
    Ok(())
}
