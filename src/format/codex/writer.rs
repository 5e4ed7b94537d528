//! The repaired copy of a Codex rollout. Every edit is a whole line: a line
//! dropped (a torn or unreadable line, a stray output, a reasoning item
//! nothing follows, a call that repeats an earlier line), a line replaced
//! (an output given its call's type, a call and its output given a
//! call_id of their own), or
//! a line inserted right after a call (the `"aborted"` output Codex itself
//! would insert on resume). Every other line is copied byte for byte.
//!
//! A line that holds more than one item (a `compacted` line with its
//! `replacement_history`) is never edited: what the fix would change is
//! left, with the reason, in the repair log.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{OrphanCalls as OrphanPolicy, RepairPolicy as Policy};
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::model::{Conversation, Loc, PartKind, Slot};
use crate::source::Limits;
use crate::write::lines::Records;
use crate::write::payload::{self, Payload};
use crate::write::{Edit, Left, Log, Planned, Target, Writer};

/// What a fix may change, by the kind of line it touches.
#[derive(Default, Debug)]
struct LineEdit {
    drop: bool,
    replacement: Option<Payload>,
    insert_after: Vec<String>,
}

pub struct CodexWriter {
    input: PathBuf,
    origin: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    limits: Limits,
    policy: Policy,
    lines: BTreeMap<u64, LineEdit>,
    planned: bool,
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(CodexWriter {
        input: t.input.to_path_buf(),
        origin: t.origin.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
        limits: t.limits,
        policy: *t.policy,
        lines: BTreeMap::new(),
        planned: false,
    }))
}

fn key(loc: &Loc) -> u64 {
    match loc {
        Loc::Line { start, .. } => *start,
        Loc::Row { .. } => u64::MAX,
    }
}

fn line_no(loc: &Loc) -> u64 {
    loc.line().unwrap_or(0)
}

/// Every id a call or a result of `conv` holds.
fn call_ids(conv: &Conversation) -> std::collections::HashSet<String> {
    let mut taken = std::collections::HashSet::new();
    for m in &conv.messages {
        taken.extend(m.tool_calls().map(|(_, id, _, _)| id.to_string()));
        taken.extend(m.tool_results().map(|(_, id, _, _)| id.to_string()));
    }
    taken
}

/// The id Codex's convention gives the call at `call`, which reuses an
/// earlier call's id: the old id, `_`, and which use of the id it is
/// (`call_1_2` for the second), or the next number no call or result
/// holds. The same on every run.
fn renamed_call_id(
    conv: &Conversation,
    call: (usize, usize),
    taken: &mut std::collections::HashSet<String>,
) -> Option<String> {
    let crate::model::PartKind::ToolCall { id, .. } =
        &conv.messages.get(call.0)?.parts.get(call.1)?.kind
    else {
        return None;
    };
    let uses = conv
        .messages
        .iter()
        .enumerate()
        .flat_map(|(mi, m)| m.tool_calls().map(move |(pi, i, _, _)| ((mi, pi), i)))
        .filter(|&(at, i)| i == id && at <= call)
        .count();
    let mut n = uses;
    loop {
        let new = format!("{id}_{n}");
        if taken.insert(new.clone()) {
            return Some(new);
        }
        n += 1;
    }
}

/// `(line type, payload type)` of a rollout line that parses.
fn kinds(v: &Value) -> (&str, &str) {
    let ty = v.get("type").and_then(Value::as_str).unwrap_or_default();
    let pt = v
        .get("payload")
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    (ty, pt)
}

/// The output Codex inserts for an unanswered call of this type
/// (`normalize.rs`, `ensure_call_outputs_present`).
fn aborted(call_ty: &str, id: &str) -> Value {
    match call_ty {
        "custom_tool_call" => {
            serde_json::json!({"type": "custom_tool_call_output", "call_id": id, "output": "aborted"})
        }
        "tool_search_call" => {
            serde_json::json!({"type": "tool_search_output", "call_id": id, "status": "completed", "tools": []})
        }
        _ => {
            serde_json::json!({"type": "function_call_output", "call_id": id, "output": "aborted"})
        }
    }
}

/// Where a line inserted after the line at `loc` would sit in a
/// paginated rollout (`Conversation::paging`).
enum Paginated {
    /// The rollout is not paginated.
    No,
    /// After the last line, whose ordinal is one less than this.
    After(u64),
    /// Anywhere else.
    Inside,
}

/// The rollout line `bytes` with `"ordinal":<ordinal>`: spliced in after
/// its `timestamp` member (where Codex writes it) when it has none, every
/// other byte kept; a value that is no number is replaced (the line is
/// written again). None when the line is not a JSON object.
fn with_ordinal(bytes: &[u8], ordinal: u64) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut v: Value = serde_json::from_str(text).ok()?;
    let obj = v.as_object_mut()?;
    if let Some(old) = obj.get_mut("ordinal") {
        *old = Value::from(ordinal);
        return serde_json::to_string(&v).ok();
    }
    let member = format!("\"ordinal\":{ordinal}");
    const HEAD: &str = "{\"timestamp\":\"";
    let at = text
        .strip_prefix(HEAD)
        .and_then(|rest| rest.find('"'))
        .map(|q| HEAD.len() + q + 1)
        .filter(|&end| text[end..].starts_with(','));
    Some(match at {
        Some(end) => format!("{},{member}{}", &text[..end], &text[end..]),
        None if obj.is_empty() => format!("{{{member}}}"),
        None => {
            let open = text.find('{')?;
            format!("{}{member},{}", &text[..=open], &text[open + 1..])
        }
    })
}

fn paginated_next(conv: &Conversation, loc: &Loc) -> Paginated {
    let Some(paging) = &conv.paging else {
        return Paginated::No;
    };
    match paging.records.last() {
        Some((last, crate::model::Ordinal::At(n))) if last == loc => {
            n.checked_add(1).map_or(Paginated::Inside, Paginated::After)
        }
        _ => Paginated::Inside,
    }
}

/// Where the bytes that Codex forks replay as their own history end in
/// this rollout (the furthest of them), and the fork that reads furthest.
/// A fork whose base names no byte offset reads up to the first record
/// of its ordinal; one that names neither, the whole rollout.
fn inherited(conv: &Conversation, path: &Path) -> Option<(u64, super::home::Fork)> {
    let paging = conv.paging.as_ref()?;
    super::home::forks_of(path, &conv.id)
        .into_iter()
        .map(|fork| {
            let by_ordinal = fork.end_ordinal.map(|end| {
                paging
                    .records
                    .iter()
                    .find_map(|(loc, o)| match (loc, o) {
                        (Loc::Line { start, .. }, crate::model::Ordinal::At(n)) if *n >= end => {
                            Some(*start)
                        }
                        _ => None,
                    })
                    .unwrap_or(u64::MAX)
            });
            (fork.end_byte.or(by_ordinal).unwrap_or(u64::MAX), fork)
        })
        .max_by_key(|(cut, _)| *cut)
}

/// The first byte of the rollout each action changes: the line it drops
/// or rewrites, or, for a line inserted after a call, the byte after the
/// call's line.
fn touches(conv: &Conversation, action: &Action) -> Vec<u64> {
    let start = |loc: &Loc| match loc {
        Loc::Line { start, .. } => Some(*start),
        Loc::Row { .. } => None,
    };
    let part =
        |message: usize, part: usize| conv.messages.get(message).map(|m| m.part_loc(part).clone());
    match action {
        Action::DropRecord { loc }
        | Action::DropRepeat { loc, .. }
        | Action::DropItemId { loc }
        | Action::SetOrdinal { loc, .. } => start(loc).into_iter().collect(),
        Action::RemoveResult { message, part: p }
        | Action::RetypeResult { message, part: p }
        | Action::RenameTool {
            message, part: p, ..
        } => part(*message, *p)
            .as_ref()
            .and_then(start)
            .into_iter()
            .collect(),
        Action::AnswerCall { message, part: p } => match part(*message, *p) {
            Some(Loc::Line { end, .. }) => vec![end + 1],
            _ => Vec::new(),
        },
        Action::RenameCall {
            message,
            part: p,
            result,
        } => std::iter::once((*message, *p))
            .chain(*result)
            .filter_map(|(m, p)| part(m, p).as_ref().and_then(start))
            .collect(),
        _ => Vec::new(),
    }
}

impl Writer for CodexWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        self.planned = true;
        let path = self.input.clone();
        let mut records = Records::open(&path)?;
        let mut edits = Vec::new();
        // Every id a call or a result holds, and those this plan gives.
        let mut taken = call_ids(conv);
        let inherited = inherited(conv, &self.origin);
        for p in planned {
            let entry = |action: &'static str, description: String, loc: &Loc| Edit {
                ids: p.finding.ids.clone(),
                ..Edit::new(p.finding.rule, &conv.id, action, description, loc.clone())
            };
            let leave = |reason: String, log: &mut Log| {
                log.left.push(Left {
                    rule: p.finding.rule,
                    conversation: conv.id.clone(),
                    location: p.finding.loc.clone(),
                    summary: p.finding.summary.clone(),
                    reason,
                })
            };
            // A fork replays this rollout's first bytes as its own
            // history: a fix that changes them breaks the fork's resume.
            if let Some((cut, fork)) = &inherited
                && p.fix
                    .actions
                    .iter()
                    .flat_map(|a| touches(conv, a))
                    .any(|at| at < *cut)
            {
                leave(
                    format!(
                        "the Codex fork {} ({}) replays this rollout's first {cut} bytes as its own history (`session_meta.history_base`), and Codex refuses to resume the fork once they change (`failed to scan paginated model context lineage: …: cutoff byte offset is past the source rollout`): what lies in them is left as it is",
                        crate::escape::preview(&fork.thread, 60),
                        crate::escape::preview(&fork.path.display().to_string(), 200)
                    ),
                    log,
                );
                continue;
            }
            for action in &p.fix.actions {
                // The line the action is about, and the part it names.
                let (loc, part) = match action {
                    Action::DropRecord { loc }
                    | Action::DropRepeat { loc, .. }
                    | Action::DropItemId { loc } => (loc.clone(), None),
                    Action::RemoveResult { message, part }
                    | Action::AnswerCall { message, part }
                    | Action::RetypeResult { message, part } => {
                        let m = &conv.messages[*message];
                        (m.part_loc(*part).clone(), m.parts.get(*part))
                    }
                    Action::RenameCall {
                        message,
                        part,
                        result,
                    } => {
                        let call = (*message, *part);
                        let Some(id) = renamed_call_id(conv, call, &mut taken) else {
                            leave("the call is not where it was read".to_string(), log);
                            continue;
                        };
                        let mut lines = Vec::new();
                        for (what, at) in
                            std::iter::once(("call", call)).chain(result.map(|r| ("output", r)))
                        {
                            let loc = conv.messages[at.0].part_loc(at.1).clone();
                            let n = line_no(&loc);
                            let bytes = records.read_bytes(&loc)?;
                            let parsed = serde_json::from_slice::<Value>(&bytes).ok();
                            // Only a line that is one item, read as Codex
                            // reads it, and edited by no other fix.
                            let item = parsed.filter(|v| {
                                kinds(v).0 == "response_item"
                                    && v["payload"]["call_id"].is_string()
                                    && !conv.corrupt.iter().any(|c| c.loc == loc)
                                    && !self.lines.contains_key(&key(&loc))
                            });
                            let Some(v) = item else {
                                lines.clear();
                                leave(
                                    format!(
                                        "line {n} is not a rollout item this repair can edit alone; the {what} keeps its id"
                                    ),
                                    log,
                                );
                                break;
                            };
                            lines.push((what, loc, n, bytes, v));
                        }
                        for (what, loc, n, bytes, mut v) in lines {
                            let old = v["payload"]["call_id"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string();
                            let pt = kinds(&v).1.to_string();
                            v["payload"]["call_id"] = Value::String(id.clone());
                            let after = serde_json::to_string(&v).expect("a Value serialises");
                            let (before, before_raw) = crate::write::verbatim(&bytes);
                            let mut e = entry(
                                "rename-call",
                                format!(
                                    "gave the {what} (`{pt}`) on line {n} the call_id `{id}` in place of `{old}`, which an earlier call holds"
                                ),
                                &loc,
                            );
                            (e.before, e.before_base64) = (Some(before), before_raw);
                            e.after = Some(after.clone());
                            self.lines.entry(key(&loc)).or_default().replacement =
                                Some(Payload::from(after));
                            edits.push(e);
                        }
                        continue;
                    }
                    Action::RenameTool {
                        message,
                        part,
                        name,
                    } => {
                        let loc = conv.messages[*message].part_loc(*part).clone();
                        let n = line_no(&loc);
                        let bytes = records.read_bytes(&loc)?;
                        // Only a call's own line, read as Codex reads it,
                        // and edited by no other fix.
                        let item = serde_json::from_slice::<Value>(&bytes).ok().filter(|v| {
                            kinds(v).0 == "response_item"
                                && matches!(kinds(v).1, "function_call" | "custom_tool_call")
                                && v["payload"]["name"].is_string()
                                && !conv.corrupt.iter().any(|c| c.loc == loc)
                                && !self.lines.contains_key(&key(&loc))
                        });
                        let Some(mut v) = item else {
                            leave(
                                format!(
                                    "line {n} is not a call this repair can rename alone; its name is left"
                                ),
                                log,
                            );
                            continue;
                        };
                        let old = v["payload"]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string();
                        let id = v["payload"]["call_id"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string();
                        v["payload"]["name"] = Value::String(name.clone());
                        let after = serde_json::to_string(&v).expect("a Value serialises");
                        let (before, before_raw) = crate::write::verbatim(&bytes);
                        let mut e = entry(
                            "rename-tool",
                            format!(
                                "named the call `{id}` on line {n} `{name}` in place of `{}`, which the Responses API refuses; its call_id, and so its output, are kept (the line as it was is kept here)",
                                crate::escape::preview(&old, 60)
                            ),
                            &loc,
                        );
                        (e.before, e.before_base64) = (Some(before), before_raw);
                        e.after = Some(after.clone());
                        self.lines.entry(key(&loc)).or_default().replacement =
                            Some(Payload::from(after));
                        edits.push(e);
                        continue;
                    }
                    Action::SetOrdinal { loc, ordinal } => {
                        let n = line_no(loc);
                        if self.lines.contains_key(&key(loc)) {
                            leave(
                                format!("line {n} is edited by another fix; its ordinal is left"),
                                log,
                            );
                            continue;
                        }
                        let bytes = records.read_bytes(loc)?;
                        let Some(after) = with_ordinal(&bytes, *ordinal) else {
                            leave(
                                format!("line {n} is not a rollout line this repair can number"),
                                log,
                            );
                            continue;
                        };
                        let (before, before_raw) = crate::write::verbatim(&bytes);
                        let mut e = entry(
                            "set-ordinal",
                            format!(
                                "gave line {n}, the last of the paginated history, the ordinal {ordinal} (after the highest before it), from which Codex continues the numbering (the line as it was is kept here)"
                            ),
                            loc,
                        );
                        (e.before, e.before_base64) = (Some(before), before_raw);
                        e.after = Some(after.clone());
                        self.lines.entry(key(loc)).or_default().replacement =
                            Some(Payload::from(after));
                        edits.push(e);
                        continue;
                    }
                    _ => {
                        leave(
                            format!("`{}` is not done in Codex rollouts", action.name()),
                            log,
                        );
                        continue;
                    }
                };
                let bytes = records.read_bytes(&loc)?;
                // A line holding a large string (a tool's output of tens
                // of MB) is parsed without it (`payload::shrink`) and kept
                // as a range of the input, not held again for the log.
                let large = match (std::str::from_utf8(&bytes), records.file()?, &loc) {
                    (Ok(text), Some(file), Loc::Line { start, .. }) => {
                        payload::shrink(text).map(|s| {
                            (
                                Payload::raw(file.clone(), *start, bytes.len() as u64),
                                s,
                                file,
                                *start,
                            )
                        })
                    }
                    _ => None,
                };
                let (before, before_raw) = match &large {
                    Some(_) => (String::new(), None),
                    None => crate::write::verbatim(&bytes),
                };
                let set_before =
                    |e: &mut Edit, before: String, before_raw: Option<String>| match &large {
                        Some((whole, ..)) => e.large.before = Some(whole.clone()),
                        None => (e.before, e.before_base64) = (Some(before), before_raw),
                    };
                let n = line_no(&loc);
                // Parsed from the line's own bytes, as Codex's serde_json
                // reads it: a line that is not UTF-8 is unreadable (its
                // lossy text would parse, and hide that).
                let parsed: Option<Value> = match &large {
                    Some((_, s, ..)) => serde_json::from_str(&s.text).ok(),
                    None => serde_json::from_slice(&bytes).ok(),
                };
                let (ty, pt) = parsed.as_ref().map(kinds).unwrap_or_default();
                let (ty, pt) = (ty.to_string(), pt.to_string());
                let pt = pt.as_str();
                // A line the reader found corrupt (not JSON, not UTF-8, or
                // JSON that is no rollout item: Codex skips it or refuses
                // the file) goes whole, whatever it parses as.
                let unreadable = parsed.is_none() || conv.corrupt.iter().any(|c| c.loc == loc);
                // A line that holds a whole replacement history is never
                // edited for one of its items.
                if !unreadable && ty != "response_item" {
                    leave(
                        format!(
                            "line {n} is a `{ty}` line holding more than this item; it is left as it is"
                        ),
                        log,
                    );
                    continue;
                }
                match action {
                    Action::DropRecord { .. } => {
                        let what = match pt {
                            _ if unreadable => "the unreadable line",
                            "reasoning" if p.finding.rule == "damaged-encrypted-content" => {
                                "the reasoning item whose encrypted content is damaged"
                            }
                            "reasoning" => "the reasoning item nothing follows",
                            other => {
                                leave(
                                    format!("line {n} is a `{other}` item, not one to drop"),
                                    log,
                                );
                                continue;
                            }
                        };
                        let mut e = entry(
                            "drop-record",
                            format!("dropped {what} on line {n} (kept verbatim here)"),
                            &loc,
                        );
                        set_before(&mut e, before, before_raw);
                        self.lines.entry(key(&loc)).or_default().drop = true;
                        edits.push(e);
                    }
                    Action::DropRepeat { of, .. } => {
                        let m = line_no(of);
                        let first = records.read_bytes(of)?;
                        // The same line, or the same item written again
                        // at another time.
                        let repeats = first == bytes
                            || serde_json::from_slice::<Value>(&first).is_ok_and(|a| {
                                let earlier = a.get("payload");
                                earlier.is_some()
                                    && earlier == parsed.as_ref().and_then(|b| b.get("payload"))
                            });
                        if unreadable || !repeats {
                            leave(
                                format!("line {n} does not repeat line {m}; it is left as it is"),
                                log,
                            );
                            continue;
                        }
                        let mut e = entry(
                            "drop-repeat",
                            format!(
                                "dropped line {n}, which repeats the `{pt}` of line {m} (kept verbatim here)"
                            ),
                            &loc,
                        );
                        set_before(&mut e, before, before_raw);
                        self.lines.entry(key(&loc)).or_default().drop = true;
                        edits.push(e);
                    }
                    Action::DropItemId { .. } => {
                        let Some(mut v) = parsed.clone().filter(|_| !unreadable) else {
                            continue;
                        };
                        if self.lines.contains_key(&key(&loc)) {
                            leave(
                                format!("line {n} is edited by another fix; its id is left"),
                                log,
                            );
                            continue;
                        }
                        let Some(old) = v["payload"]
                            .as_object_mut()
                            .and_then(|p| p.shift_remove("id"))
                        else {
                            continue;
                        };
                        let after = serde_json::to_string(&v).expect("a Value serialises");
                        let mut e = entry(
                            "drop-item-id",
                            format!(
                                "removed the id {old} of the `{pt}` on line {n}, which the Responses API refuses (the line as it was is kept here)"
                            ),
                            &loc,
                        );
                        (e.before, e.before_base64) = (Some(before), before_raw);
                        e.after = Some(after.clone());
                        self.lines.entry(key(&loc)).or_default().replacement =
                            Some(Payload::from(after));
                        edits.push(e);
                    }
                    Action::RemoveResult { .. } => {
                        let mut e = entry(
                            "remove-result",
                            format!("removed the stray `{pt}` on line {n} (kept verbatim here)"),
                            &loc,
                        );
                        set_before(&mut e, before, before_raw);
                        self.lines.entry(key(&loc)).or_default().drop = true;
                        edits.push(e);
                    }
                    Action::RetypeResult { .. } => {
                        let Some(mut v) = parsed.clone() else {
                            continue;
                        };
                        let call_ty = conv
                            .messages
                            .iter()
                            .flat_map(|m| &m.parts)
                            .find_map(|q| match (&q.kind, q.slot, part.map(|r| &r.kind)) {
                                (
                                    PartKind::ToolCall { id, .. },
                                    Some(Slot::Whole(t)),
                                    Some(PartKind::ToolResult { call_id, .. }),
                                ) if id == call_id => Some(t),
                                _ => None,
                            })
                            .unwrap_or("function_call");
                        let want = match call_ty {
                            "custom_tool_call" => "custom_tool_call_output",
                            "tool_search_call" => "tool_search_output",
                            _ => "function_call_output",
                        };
                        v["payload"]["type"] = Value::String(want.into());
                        let after = serde_json::to_string(&v).expect("a Value serialises");
                        let mut e = entry(
                            "retype-result",
                            format!(
                                "made the `{pt}` on line {n} a `{want}`, as its `{call_ty}` needs; its output is kept"
                            ),
                            &loc,
                        );
                        set_before(&mut e, before, before_raw);
                        let after = match &large {
                            Some((_, s, file, start)) => {
                                let p = s.expand(after, file.clone(), *start);
                                e.large.after = Some(p.clone());
                                p
                            }
                            None => {
                                e.after = Some(after.clone());
                                Payload::from(after)
                            }
                        };
                        self.lines.entry(key(&loc)).or_default().replacement = Some(after);
                        edits.push(e);
                    }
                    Action::AnswerCall { .. } => {
                        let Some(PartKind::ToolCall { id, name, .. }) = part.map(|q| &q.kind)
                        else {
                            continue;
                        };
                        match self.policy.orphan_calls {
                            OrphanPolicy::Report => continue,
                            OrphanPolicy::Drop => {
                                let mut e = entry(
                                    "drop-call",
                                    format!(
                                        "dropped the unanswered call `{id}` (`{name}`) on line {n} (kept verbatim here)"
                                    ),
                                    &loc,
                                );
                                set_before(&mut e, before, before_raw);
                                self.lines.entry(key(&loc)).or_default().drop = true;
                                edits.push(e);
                            }
                            OrphanPolicy::Placeholder => {
                                // A paginated rollout numbers its lines: a
                                // line inserted after the last one takes
                                // the next ordinal; one inside would have
                                // none to take (Codex inserts the same
                                // output itself on resume, in memory).
                                let next = match paginated_next(conv, &loc) {
                                    Paginated::No => None,
                                    Paginated::After(n) => Some(n),
                                    Paginated::Inside => {
                                        leave(
                                            format!(
                                                "line {n} is inside a paginated rollout, whose lines are numbered: a line inserted there would have no ordinal to take (Codex inserts the `\"aborted\"` output itself on resume, in memory)"
                                            ),
                                            log,
                                        );
                                        continue;
                                    }
                                };
                                let mut line = serde_json::Map::new();
                                if let Some(ts) = parsed.as_ref().and_then(|v| v.get("timestamp")) {
                                    line.insert("timestamp".into(), ts.clone());
                                }
                                if let Some(next) = next {
                                    line.insert("ordinal".into(), Value::from(next));
                                }
                                line.insert("type".into(), Value::String("response_item".into()));
                                line.insert("payload".into(), aborted(pt, id));
                                let text = serde_json::to_string(&Value::Object(line))
                                    .expect("a Value serialises");
                                let mut e = entry(
                                    "answer-call",
                                    format!(
                                        "inserted the `\"aborted\"` output Codex itself sends for the unanswered call `{id}` (`{name}`), right after line {n}"
                                    ),
                                    &loc,
                                );
                                e.after = Some(text.clone());
                                e.synthesized = true;
                                self.lines
                                    .entry(key(&loc))
                                    .or_default()
                                    .insert_after
                                    .push(text);
                                edits.push(e);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        // A copy without a message is no history: no client resumes it
        // and chatfsck does not read it. The copy then keeps the input as
        // it is and every finding is left, with the reason.
        let keeps = crate::write::keeps_a_message(
            conv,
            |loc| self.lines.get(&key(loc)).is_some_and(|e| e.drop),
            self.lines.values().any(|e| !e.insert_after.is_empty()),
        );
        if !keeps {
            for e in &edits {
                self.lines.remove(&key(&e.location));
            }
            for p in planned {
                log.left
                    .push(Left::of(p.finding, crate::write::NO_MESSAGE_LEFT));
            }
            return Ok(());
        }
        edits.sort_by_key(|e| line_no(&e.location));
        log.edits.extend(edits);
        Ok(())
    }

    fn write(self: Box<Self>, _log: &mut Log) -> Result<()> {
        let (Some(output), true) = (&self.output, self.planned) else {
            return Err(Error::not_history(&self.input, "holds no conversation"));
        };
        if self.lines.is_empty() {
            // No line to change: the copy is the file, copied by the
            // kernel (or decompressed, for a plain copy of a `.zst` one).
            return crate::write::lines::copy_as(
                &self.input,
                output,
                self.limits.max_line_bytes,
                self.force,
            );
        }
        let werr = crate::write::lines::output_error(output);
        crate::write::lines::rewrite(
            &self.input,
            output,
            self.limits.max_line_bytes,
            self.force,
            |line, w| {
                let edit = self.lines.get(&line.start);
                let text: Option<Result<&[u8], &Payload>> = match edit {
                    Some(e) if e.drop => None,
                    Some(LineEdit {
                        replacement: Some(r),
                        ..
                    }) => Some(Err(r)),
                    _ => Some(Ok(line.bytes)),
                };
                let inserts = edit.map(|e| e.insert_after.as_slice()).unwrap_or_default();
                if let Some(t) = text {
                    match t {
                        Ok(b) => w.write_all(b),
                        Err(p) => p.write_to(w),
                    }
                    .map_err(&werr)?;
                    if line.terminated || !inserts.is_empty() {
                        w.write_all(b"\n").map_err(&werr)?;
                    }
                }
                for ins in inserts {
                    w.write_all(ins.as_bytes()).map_err(&werr)?;
                    w.write_all(b"\n").map_err(&werr)?;
                }
                Ok(())
            },
            |_| Ok(()),
        )
    }
}
