//! The writer every JSON history shares: edits of records (replaced,
//! dropped, moved, inserted lines or array elements). Which edits a store
//! allows is the store's to say (its `supports`); provider-shaped messages
//! allow all of them.
//!
//! Planning reads only the lines it edits and computes their new text; the
//! write is one streaming pass that copies every other line byte for byte.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value};

use crate::config::{OrphanCalls as OrphanPolicy, RepairPolicy as Policy};
use crate::error::{Error, Result};
use crate::finding::{Action, Finding};
use crate::model::{Conversation, Format, Loc, PartKind, Role, Slot};
use crate::source::Limits;
use crate::write::atomic;
use crate::write::lines::{Kept, Records};
use crate::write::payload::{self, Payload};
use crate::write::{Edit, Left, Log, PLACEHOLDER, Planned, Target, Writer};

#[derive(Default, Debug)]
pub(crate) struct LineEdit {
    pub(crate) drop: bool,
    /// New text of the line (without newline).
    pub(crate) replacement: Option<Payload>,
    /// New lines written right after this one.
    pub(crate) insert_after: Vec<String>,
    /// This line is written after line N instead of here.
    pub(crate) moved_to: Option<u64>,
}

pub struct Plan {
    /// The edits, by where the record they edit starts in the file.
    pub(crate) lines: BTreeMap<u64, LineEdit>,
    pub log: Vec<Edit>,
    /// Findings whose fix turned out to change nothing.
    pub left: Vec<Left>,
}

/// Whether two records are the same JSON value (an edit that re-serialises
/// a record without changing it is no edit).
fn same_json(a: &str, b: &str) -> bool {
    match (
        serde_json::from_str::<Value>(a),
        serde_json::from_str::<Value>(b),
    ) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

enum Op {
    SetArguments {
        slot: Slot,
    },
    Remove {
        slot: Slot,
    },
    /// Add tool_result blocks to an Anthropic user message.
    AddResults {
        blocks: Vec<Value>,
        prepend: bool,
    },
    /// Each lone surrogate escape of the line as `\ufffd`, in place.
    ReplaceSurrogates,
}

impl Op {
    /// The whole record goes (its message has nothing else).
    fn removes_the_line(&self) -> bool {
        matches!(
            self,
            Op::Remove {
                slot: Slot::Whole(_)
            }
        )
    }
}

struct Pending {
    loc: Loc,
    ops: Vec<Op>,
    /// Log entries waiting for this line's final text, with the summary
    /// of the finding each fixes (for the record left as it is when the
    /// ops change nothing).
    entries: Vec<(Edit, String)>,
}

/// Records are keyed by where they start in the file: unique for JSONL
/// lines and for the elements of a JSON document alike.
fn key_of(loc: &Loc) -> u64 {
    match loc {
        Loc::Line { start, .. } => *start,
        Loc::Row { .. } => u64::MAX,
    }
}

fn line_of(loc: &Loc) -> u64 {
    loc.line().unwrap_or(0)
}

/// Python's json.dumps writes `", "` and `": "`; keep a line's style.
fn spaced(text: &str) -> bool {
    text.trim_start().starts_with('{') && {
        let t = text.trim_start();
        // After the first key's closing quote comes `:` then maybe a space.
        let mut in_str = false;
        let mut esc = false;
        let mut out = false;
        for (i, b) in t.bytes().enumerate().skip(1) {
            if in_str {
                if esc {
                    esc = false;
                } else if b == b'\\' {
                    esc = true;
                } else if b == b'"' {
                    in_str = false;
                }
            } else if b == b'"' {
                in_str = true;
            } else if b == b':' {
                out = t.as_bytes().get(i + 1) == Some(&b' ');
                break;
            }
        }
        out
    }
}

struct Spaced;
impl serde_json::ser::Formatter for Spaced {
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
}

/// A record written again in its own style: an element laid out over
/// lines (`JSON.stringify(…, null, 2)`, as Cline 4 writes its messages
/// file) is indented as it was, the line it closes on giving the depth; a
/// one-line record keeps Python's `", "`/`": "` spacing or the compact form.
fn serialize(v: &Value, text: &str) -> String {
    let text = text.trim();
    if text.contains('\n') {
        let last = text.rsplit('\n').next().unwrap_or("");
        let depth = &last[..last.len() - last.trim_start().len()];
        let pretty = serde_json::to_string_pretty(v).expect("a Value serialises");
        // A string's line breaks are escaped: every raw one is layout.
        pretty.replace('\n', &format!("\n{depth}"))
    } else if spaced(text) {
        let mut buf = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, Spaced);
        serde::Serialize::serialize(v, &mut ser).expect("a Value serialises");
        String::from_utf8(buf).expect("JSON is UTF-8")
    } else {
        serde_json::to_string(v).expect("a Value serialises")
    }
}

fn item<'a>(v: &'a mut Value, field: &str, k: usize) -> Option<&'a mut Value> {
    v.get_mut(field)?.as_array_mut()?.get_mut(k)
}

/// Apply ops to a record; returns `None` when nothing of the message is left.
fn apply(text: &str, ops: &[Op], anthropic: bool) -> std::result::Result<Option<String>, String> {
    // A line that goes whole is not read: it may hold what the reader
    // takes and serde_json does not (a lone surrogate escape).
    if ops.iter().any(Op::removes_the_line) {
        return Ok(None);
    }
    // The escapes go first, in the text, as the reader read them; a line
    // with nothing else to change keeps every other byte.
    let fixed;
    let text = if ops.iter().any(|o| matches!(o, Op::ReplaceSurrogates)) {
        fixed = crate::format::records::record::replace_lone_surrogates_in(text)
            .unwrap_or_else(|| text.to_string());
        if ops.iter().all(|o| matches!(o, Op::ReplaceSurrogates)) {
            return Ok(Some(fixed));
        }
        fixed.as_str()
    } else {
        text
    };
    let mut v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut removals: Vec<(&str, usize)> = Vec::new();
    for op in ops {
        match op {
            Op::SetArguments {
                slot: Slot::Item(field, k),
            } => {
                let it = item(&mut v, field, *k).ok_or("no such tool call")?;
                // The call's own shape decides, not the file's dialect: an
                // Anthropic block may sit in a file read as OpenAI. A call
                // with neither is left as it is (see `same_json`).
                if let Some(f) = it.get_mut("function").filter(|f| f.is_object()) {
                    f["arguments"] = Value::String("{}".into());
                } else if anthropic || it.get("input").is_some() {
                    it["input"] = Value::Object(Map::new());
                }
            }
            Op::SetArguments { .. } => return Err("tool call without a position".into()),
            Op::Remove {
                slot: Slot::Item(field, k),
            } => removals.push((field, *k)),
            Op::Remove {
                slot: Slot::Whole(_),
            } => unreachable!("a line that goes whole is not parsed"),
            Op::ReplaceSurrogates => {}
            Op::AddResults { blocks, prepend } => {
                let content = v.get("content").cloned().unwrap_or(Value::Null);
                let mut list = match content {
                    Value::Array(a) => a,
                    Value::String(s) if !s.is_empty() => {
                        vec![serde_json::json!({"type": "text", "text": s})]
                    }
                    _ => Vec::new(),
                };
                if *prepend {
                    let mut b = blocks.clone();
                    b.extend(list);
                    list = b;
                } else {
                    list.extend(blocks.iter().cloned());
                }
                v["content"] = Value::Array(list);
            }
        }
    }
    removals.sort_by_key(|r| std::cmp::Reverse(r.1));
    for (field, k) in removals {
        if let Some(arr) = v.get_mut(field).and_then(Value::as_array_mut)
            && k < arr.len()
        {
            arr.remove(k);
        }
    }
    // Nothing left of the message after removals: drop it.
    let empty_array = |v: &Value, f: &str| {
        v.get(f)
            .and_then(Value::as_array)
            .is_some_and(|a| a.is_empty())
    };
    if empty_array(&v, "tool_calls")
        && let Some(o) = v.as_object_mut()
    {
        o.remove("tool_calls");
    }
    let has_calls = v.get("tool_calls").is_some();
    let content_empty = match v.get("content") {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    };
    if content_empty
        && !has_calls
        && v.get("reasoning_content")
            .is_none_or(|r| r.as_str().is_some_and(str::is_empty))
    {
        return Ok(None);
    }
    Ok(Some(serialize(&v, text)))
}

/// The messages of `conv` in the order the copy holds them: each moved
/// message right after the message it moves after (its own followers
/// after it), the others where they were.
fn final_order(conv: &Conversation, planned: &[Planned<'_>]) -> Vec<usize> {
    let mut after_of: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut moved = std::collections::HashSet::new();
    for p in planned {
        for a in &p.fix.actions {
            if let Action::MoveAfter { messages, after } = a {
                after_of.entry(*after).or_default().extend(messages);
                moved.extend(messages.iter().copied());
            }
        }
    }
    fn emit(i: usize, after_of: &BTreeMap<usize, Vec<usize>>, order: &mut Vec<usize>) {
        order.push(i);
        for &m in after_of.get(&i).into_iter().flatten() {
            emit(m, after_of, order);
        }
    }
    let mut order = Vec::with_capacity(conv.messages.len());
    for i in (0..conv.messages.len()).filter(|i| !moved.contains(i)) {
        emit(i, &after_of, &mut order);
    }
    order
}

/// The messages whose every part is a result the plan removes.
fn emptied_messages(
    conv: &Conversation,
    planned: &[Planned<'_>],
) -> std::collections::HashSet<usize> {
    let mut removed: HashMap<usize, usize> = HashMap::new();
    for p in planned {
        for a in &p.fix.actions {
            if let Action::RemoveResult { message, .. } = a {
                *removed.entry(*message).or_default() += 1;
            }
        }
    }
    removed
        .into_iter()
        .filter(|(m, n)| *n >= conv.messages[*m].parts.len())
        .map(|(m, _)| m)
        .collect()
}

/// Why removing message `gone` (with the other `emptied` ones) would leave
/// turns the provider rejects, if it would: the first turn after the
/// system prompt an assistant's. Two turns of one role meeting are not a
/// reason (as `role-order` holds): the Anthropic API combines consecutive
/// turns of one role, and the OpenAI API takes them as they are.
fn order_after_removal(
    conv: &Conversation,
    gone: usize,
    emptied: &std::collections::HashSet<usize>,
) -> Option<String> {
    let kept = |i: &usize| !emptied.contains(i) && conv.messages[*i].role != Role::System;
    let prev = (0..gone).rev().find(kept).map(|i| conv.messages[i].role);
    let next = (gone + 1..conv.messages.len())
        .find(kept)
        .map(|i| conv.messages[i].role);
    match (prev, next) {
        (None, Some(Role::Assistant)) => Some(
            "removing its message would make an assistant message the first turn, which the provider rejects as well"
                .into(),
        ),
        _ => None,
    }
}

impl Plan {
    /// Whether the copy still holds a message: one the plan does not drop,
    /// or one it inserts.
    pub(crate) fn keeps_a_message(&self, conv: &Conversation) -> bool {
        conv.messages
            .iter()
            .any(|m| !self.lines.get(&key_of(&m.loc)).is_some_and(|e| e.drop))
            || self.lines.values().any(|e| !e.insert_after.is_empty())
    }
}

pub fn plan(
    conv: &Conversation,
    planned: &[Planned<'_>],
    policy: &Policy,
    path: &Path,
) -> Result<Plan> {
    // Anthropic-shaped messages: results are `tool_result` blocks of a user
    // message (Cline and Roo Code tasks, Cline 4's messages files).
    let anthropic = matches!(
        conv.source.dialect,
        crate::model::Dialect::Anthropic
            | crate::model::Dialect::Cline
            | crate::model::Dialect::Cline4
            | crate::model::Dialect::RooCode
    );
    let mut records = Records::open(path)?;
    let mut lines: BTreeMap<u64, LineEdit> = BTreeMap::new();
    let mut pending: BTreeMap<u64, Pending> = BTreeMap::new();
    let mut log: Vec<Edit> = Vec::new();
    let mut left: Vec<Left> = Vec::new();
    let pairing = crate::model::pairing::Pairing::analyse(&conv.messages);
    // Orphan answers, grouped by the message holding the calls.
    let mut answers: BTreeMap<usize, Vec<(usize, &Planned<'_>)>> = BTreeMap::new();
    // Messages every part of which is a result the plan removes: they go.
    let emptied = emptied_messages(conv, planned);
    let entry = |p: &Planned<'_>, action: &'static str, description: String, loc: Loc| Edit {
        ids: p.finding.ids.clone(),
        ..Edit::new(p.finding.rule, &conv.id, action, description, loc)
    };
    let op = |loc: &Loc, o: Op, e: Edit, f: &Finding, pending: &mut BTreeMap<u64, Pending>| {
        let p = pending.entry(key_of(loc)).or_insert_with(|| Pending {
            loc: loc.clone(),
            ops: Vec::new(),
            entries: Vec::new(),
        });
        p.ops.push(o);
        p.entries.push((e, f.summary.clone()));
    };
    for p in planned {
        for action in &p.fix.actions {
            match action {
                Action::DropRecord { loc } => {
                    // A JSON document's torn tail (`records::torn`): the
                    // copy ends after the last whole message.
                    let tail = conv.source.format == crate::model::Format::Json
                        && conv.corrupt.iter().any(|c| c.torn_tail && c.loc == *loc);
                    let description = if tail {
                        format!(
                            "dropped the torn tail from line {} on (kept verbatim here) and closed the document after its last whole message",
                            line_of(loc)
                        )
                    } else {
                        format!("dropped line {} (kept verbatim here)", line_of(loc))
                    };
                    let mut e = entry(p, "drop-record", description, loc.clone());
                    records.read_kept(loc)?.as_before(&mut e);
                    lines.entry(key_of(loc)).or_default().drop = true;
                    log.push(e);
                }
                Action::ReplaceSurrogates { loc } => {
                    let e = entry(
                        p,
                        "replace-surrogates",
                        format!(
                            "replaced the lone surrogate escapes on line {} with `\\ufffd`",
                            line_of(loc)
                        ),
                        loc.clone(),
                    );
                    op(loc, Op::ReplaceSurrogates, e, p.finding, &mut pending);
                }
                Action::ReplaceArguments {
                    message,
                    part,
                    with,
                } => {
                    let m = &conv.messages[*message];
                    let Some(slot) = m.parts[*part].slot else {
                        continue;
                    };
                    let loc = m.part_loc(*part).clone();
                    let e = entry(
                        p,
                        "replace-arguments",
                        format!(
                            "replaced the arguments with `{with}` on line {}",
                            line_of(&loc)
                        ),
                        loc.clone(),
                    );
                    op(&loc, Op::SetArguments { slot }, e, p.finding, &mut pending);
                }
                Action::RemoveResult { message, part } => {
                    let m = &conv.messages[*message];
                    let Some(slot) = m.parts[*part].slot else {
                        continue;
                    };
                    // The message holds more than results (tool calls, a
                    // block chatfsck does not know): removing a result must
                    // neither take that content with the whole record nor
                    // leave it standing between a call and its result.
                    let others = m
                        .parts
                        .iter()
                        .any(|x| !matches!(x.kind, PartKind::ToolResult { .. }));
                    let inside = pairing
                        .pairs
                        .iter()
                        .any(|q| q.call.0 < *message && *message < q.result.0);
                    // A message that goes must not leave the turns in an
                    // order the provider rejects as well.
                    if let Some(reason) = emptied
                        .contains(message)
                        .then(|| order_after_removal(conv, *message, &emptied))
                        .flatten()
                    {
                        left.push(Left {
                            rule: p.finding.rule,
                            conversation: p.finding.conversation.clone(),
                            location: p.finding.loc.clone(),
                            summary: p.finding.summary.clone(),
                            reason,
                        });
                        continue;
                    }
                    if others && (matches!(slot, Slot::Whole(_)) || inside) {
                        left.push(Left {
                            rule: p.finding.rule,
                            conversation: p.finding.conversation.clone(),
                            location: p.finding.loc.clone(),
                            summary: p.finding.summary.clone(),
                            reason: if matches!(slot, Slot::Whole(_)) {
                                "the record also holds other content (tool calls), which removing the result would remove".into()
                            } else {
                                "the message also holds other content, which would be left between a call and its result".into()
                            },
                        });
                        continue;
                    }
                    let loc = m.part_loc(*part).clone();
                    let e = entry(
                        p,
                        "remove-result",
                        format!("removed the stray tool result on line {}", line_of(&loc)),
                        loc.clone(),
                    );
                    op(&loc, Op::Remove { slot }, e, p.finding, &mut pending);
                }
                Action::AnswerCall { message, part } => {
                    answers.entry(*message).or_default().push((*part, p));
                }
                Action::MoveAfter { messages, after } => {
                    let target_line = conv.messages[*after].last_line().unwrap_or(0);
                    let target = key_of(&conv.messages[*after].loc);
                    for &mi in messages {
                        let loc = conv.messages[mi].loc.clone();
                        let mut e = entry(
                            p,
                            "move-after",
                            format!("moved line {} after line {target_line}", line_of(&loc)),
                            loc.clone(),
                        );
                        match records.read_kept(&loc)? {
                            Kept::Small((text, _)) => {
                                e.before = Some(text);
                                e.after = e.before.clone();
                            }
                            Kept::Large(p) => {
                                e.large.before = Some(p.clone());
                                e.large.after = Some(p);
                            }
                        }
                        lines.entry(key_of(&loc)).or_default().moved_to = Some(target);
                        log.push(e);
                    }
                }
                _ => {}
            }
        }
    }
    // The order of the messages in the copy, moves applied: placeholders
    // answer a call where its message ends up, not where it was.
    let order = final_order(conv, planned);
    let pos: HashMap<usize, usize> = order.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let next_of = |i: usize| pos.get(&i).and_then(|&k| order.get(k + 1)).copied();
    let window_end_of = |i: usize| {
        let Some(&start) = pos.get(&i) else {
            return i;
        };
        let mut k = start;
        while k + 1 < order.len() && conv.messages[order[k + 1]].carries_results() {
            k += 1;
        }
        order[k]
    };
    for (mi, calls) in answers {
        let m = &conv.messages[mi];
        let call_info: Vec<(usize, String, String)> = calls
            .iter()
            .filter_map(|(pi, _)| match &m.parts[*pi].kind {
                PartKind::ToolCall { id, name, .. } => Some((*pi, id.clone(), name.clone())),
                _ => None,
            })
            .collect();
        if policy.orphan_calls == OrphanPolicy::Drop {
            for ((pi, id, name), (_, p)) in call_info.iter().zip(&calls) {
                let Some(slot) = m.parts[*pi].slot else {
                    continue;
                };
                let loc = m.part_loc(*pi).clone();
                let e = entry(
                    p,
                    "drop-call",
                    format!(
                        "dropped the unanswered call `{id}` (`{name}`) from line {}",
                        line_of(&loc)
                    ),
                    loc.clone(),
                );
                op(&loc, Op::Remove { slot }, e, p.finding, &mut pending);
            }
            continue;
        }
        // Placeholder results.
        let window_end = window_end_of(mi);
        if anthropic {
            let blocks: Vec<Value> = call_info
                .iter()
                .map(|(_, id, _)| serde_json::json!({"type": "tool_result", "tool_use_id": id, "content": PLACEHOLDER, "is_error": true}))
                .collect();
            let next = next_of(mi)
                .map(|n| &conv.messages[n])
                .filter(|n| n.role == Role::User);
            match next {
                Some(n) => {
                    let loc = n.loc.clone();
                    let prepend = !n.carries_results();
                    let pd = pending.entry(key_of(&loc)).or_insert_with(|| Pending {
                        loc: loc.clone(),
                        ops: Vec::new(),
                        entries: Vec::new(),
                    });
                    pd.ops.push(Op::AddResults { blocks, prepend });
                    for ((_, id, name), (_, p)) in call_info.iter().zip(&calls) {
                        let mut e = entry(
                            p,
                            "answer-call",
                            format!(
                                "added a placeholder result for `{id}` (`{name}`) to the user message on line {}",
                                line_of(&loc)
                            ),
                            loc.clone(),
                        );
                        e.synthesized = true;
                        pd.entries.push((e, p.finding.summary.clone()));
                    }
                }
                None => {
                    let text = serde_json::to_string(
                        &serde_json::json!({"role": "user", "content": blocks}),
                    )
                    .expect("json");
                    let after = m.last_line().unwrap_or(0);
                    let anchor = key_of(&m.loc);
                    for ((_, id, name), (_, p)) in call_info.iter().zip(&calls) {
                        let mut e = entry(
                            p,
                            "answer-call",
                            format!(
                                "inserted a placeholder result for `{id}` (`{name}`) after line {after}"
                            ),
                            m.loc.clone(),
                        );
                        e.after = Some(text.clone());
                        e.synthesized = true;
                        log.push(e);
                    }
                    lines.entry(anchor).or_default().insert_after.push(text);
                }
            }
        } else {
            let after = conv.messages[window_end].last_line().unwrap_or(0);
            let anchor = key_of(&conv.messages[window_end].loc);
            for ((_, id, name), (_, p)) in call_info.iter().zip(&calls) {
                let text = serde_json::to_string(&serde_json::json!({"role": "tool", "tool_call_id": id, "content": PLACEHOLDER})).expect("json");
                let mut e = entry(
                    p,
                    "answer-call",
                    format!(
                        "inserted a placeholder result for `{id}` (`{name}`) after line {after}"
                    ),
                    m.part_loc(call_info[0].0).clone(),
                );
                e.after = Some(text.clone());
                e.synthesized = true;
                log.push(e);
                lines.entry(anchor).or_default().insert_after.push(text);
            }
        }
    }
    // Compute the final text of every line with ops.
    for (key, pd) in pending {
        let bytes = records.read_bytes(&pd.loc)?;
        let (before, utf8) = match String::from_utf8(bytes) {
            Ok(s) => (s, true),
            Err(e) => (String::from_utf8_lossy(e.as_bytes()).into_owned(), false),
        };
        let line = line_of(&pd.loc);
        // A line of UTF-8 holding a large string is edited on a stand-in
        // without it (`payload::shrink`), and kept as ranges of the input.
        let large = match (records.file()?, &pd.loc) {
            (Some(file), Loc::Line { start, .. }) if utf8 => {
                payload::shrink(&before).map(|s| (s, file, *start))
            }
            _ => None,
        };
        let before = match &large {
            Some((s, file, start)) => {
                let whole = Payload::raw(file.clone(), *start, before.len() as u64);
                drop(before);
                Err((s.text.as_str(), whole))
            }
            None => Ok(before),
        };
        let small = match &before {
            Ok(b) => b.as_str(),
            Err((b, _)) => b,
        };
        let result = apply(small, &pd.ops, anthropic);
        let why = match &result {
            // The reader took the line and serde_json does not (a lone
            // surrogate escape): what would change it is left, with why.
            Err(e) => Some(format!(
                "line {line} cannot be rewritten: {e}; it is left as it is"
            )),
            // The ops change nothing (a call without arguments to
            // replace): no edit is made, and none is logged.
            Ok(Some(a)) if same_json(a, small) => Some(format!(
                "line {line} holds nothing this repair can change (no arguments field to replace)"
            )),
            Ok(_) => None,
        };
        if let Some(reason) = why {
            left.extend(pd.entries.into_iter().map(|(e, summary)| Left {
                rule: e.rule,
                conversation: e.conversation,
                location: Some(e.location),
                summary,
                reason: reason.clone(),
            }));
            continue;
        }
        let after = result.unwrap_or_default();
        let edit = lines.entry(key).or_default();
        let large_after = match (&after, &large) {
            (Some(a), Some((s, file, start))) => Some(s.expand(a.clone(), file.clone(), *start)),
            _ => None,
        };
        match (&after, &large_after) {
            (_, Some(p)) => edit.replacement = Some(p.clone()),
            (Some(text), None) => edit.replacement = Some(Payload::from(text.clone())),
            (None, _) => edit.drop = true,
        }
        for (mut e, _) in pd.entries {
            match &before {
                Ok(b) => {
                    e.before = Some(b.clone());
                    e.after = after.clone();
                }
                Err((_, whole)) => {
                    e.large.before = Some(whole.clone());
                    e.large.after = large_after.clone();
                }
            }
            if after.is_none() {
                e.description
                    .push_str(" (nothing else was left in the message: line dropped)");
            }
            log.push(e);
        }
    }
    log.sort_by_key(|e| line_of(&e.location));
    Ok(Plan { lines, log, left })
}

/// What the copy holds in a record's place: the input's bytes, or the
/// plan's text (a large one read from the input as it is written).
#[derive(Clone)]
enum Piece<'a> {
    Input(&'a [u8]),
    Planned(&'a Payload),
    Text(String),
}

/// `json` (one compact element) laid out over lines, as
/// `JSON.stringify(…, null, 2)` lays out an element at `depth`.
fn indented(json: &str, depth: &str) -> String {
    match serde_json::from_str::<Value>(json) {
        Ok(v) => serde_json::to_string_pretty(&v)
            .expect("a Value serialises")
            .replace('\n', &format!("\n{depth}")),
        Err(_) => json.to_string(),
    }
}

impl Piece<'_> {
    fn write_to(self, w: &mut dyn Write) -> std::io::Result<()> {
        match self {
            Piece::Input(b) => w.write_all(b),
            Piece::Planned(p) => p.write_to(w),
            Piece::Text(t) => w.write_all(t.as_bytes()),
        }
    }

    fn into_vec(self) -> std::io::Result<Vec<u8>> {
        let mut v = Vec::new();
        self.write_to(&mut v)?;
        Ok(v)
    }
}

pub fn write(input: &Path, output: &Path, plan: &Plan, limits: Limits, force: bool) -> Result<()> {
    let mut stash: HashMap<u64, Vec<Vec<u8>>> = HashMap::new();
    let werr = crate::write::lines::output_error(output);
    crate::write::lines::rewrite(
        input,
        output,
        limits.max_line_bytes,
        force,
        |line, w| {
            let n = line.start;
            let edit = plan.lines.get(&n);
            let text: Option<Piece<'_>> = match edit {
                Some(e) if e.drop => None,
                Some(LineEdit {
                    replacement: Some(r),
                    ..
                }) => Some(Piece::Planned(r)),
                _ => Some(Piece::Input(line.bytes)),
            };
            let newline = line.terminated
                || edit.is_some_and(|e| !e.insert_after.is_empty())
                || stash.contains_key(&n);
            let inserts = edit.map(|e| e.insert_after.as_slice()).unwrap_or_default();
            match edit.and_then(|e| e.moved_to) {
                Some(target) => {
                    // What is inserted after a moved line moves with it.
                    let moved = stash.entry(target).or_default();
                    if let Some(t) = text {
                        moved.push(t.into_vec().map_err(&werr)?);
                    }
                    moved.extend(inserts.iter().map(|i| i.clone().into_bytes()));
                }
                None => {
                    if let Some(t) = text {
                        t.write_to(w).map_err(&werr)?;
                        if newline {
                            w.write_all(b"\n").map_err(&werr)?;
                        }
                    }
                    for ins in inserts {
                        w.write_all(ins.as_bytes()).map_err(&werr)?;
                        w.write_all(b"\n").map_err(&werr)?;
                    }
                }
            }
            if let Some(moved) = stash.remove(&n) {
                for t in moved {
                    w.write_all(&t).map_err(&werr)?;
                    w.write_all(b"\n").map_err(&werr)?;
                }
            }
            Ok(())
        },
        |_| Ok(()),
    )
}

/// Write a JSON document (an array of messages, or a request body with a
/// `messages` array): each element is kept as its original text or its
/// planned replacement; only the separators of the array are rewritten.
pub fn write_document(input: &Path, output: &Path, plan: &Plan, force: bool) -> Result<()> {
    let data = std::fs::read(input).map_err(|e| Error::io(input, &e))?;
    // A document cut inside a character: the text before it (the reader
    // salvaged what it holds whole, and the cut is in its torn tail).
    let text = match std::str::from_utf8(&data) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&data[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return Err(Error::input(input, "is not valid UTF-8")),
    };
    let base = text.as_ptr() as usize;
    #[derive(serde::Deserialize)]
    struct Body<'a> {
        #[serde(borrow)]
        messages: &'a serde_json::value::RawValue,
    }
    // The reader skips a byte order mark; so does the writer, which keeps
    // it in the copy with the bytes before the array.
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let whole = (|| -> std::result::Result<_, serde_json::Error> {
        let region: &str = if body.trim_start().starts_with('[') {
            body.trim()
        } else {
            serde_json::from_str::<Body<'_>>(body)?.messages.get()
        };
        let elements: Vec<&serde_json::value::RawValue> = serde_json::from_str(region)?;
        Ok((region, elements))
    })();
    // Where the array starts and ends in the input, its elements, how it
    // is laid out (`[` and the white space before its first element, `,`
    // and that white space between elements, what closes it), and what
    // follows it in the copy.
    let (start, end, elements, (open, sep, close), after): (_, _, _, _, &[u8]);
    let torn_close: String;
    match whole {
        Ok((region, els)) => {
            start = region.as_ptr() as usize - base;
            end = start + region.len();
            elements = els;
            // The array keeps its own layout: a compact one
            // (`JSON.stringify`, as Cline writes a task) stays compact, an
            // indented one (Cline 4's `messages` member, one level in)
            // keeps its indentation.
            (open, sep, close) = layout(region);
            after = &data[end..];
        }
        Err(e) => {
            // A document cut off: written up to its last whole element
            // and closed, when the plan drops the torn tail the reader
            // found after it (`records::torn`); anything else is not the
            // document the reader read.
            let changed = || Error::input(input, format!("is no longer the document it was: {e}"));
            let t = super::torn::torn(body).ok_or_else(changed)?;
            let bom = text.len() - body.len();
            if !plan
                .lines
                .get(&((bom + t.tail) as u64))
                .is_some_and(|l| l.drop)
            {
                return Err(changed());
            }
            start = bom + t.array;
            end = data.len();
            elements = t.elements;
            (open, sep, close) = (
                format!("[{}", t.lead),
                format!(",{}", t.lead),
                t.array_close,
            );
            torn_close = t.doc_close;
            after = torn_close.as_bytes();
        }
    }
    // Written as it is planned, each element from the input's text or the
    // plan's: never gathered into a second copy of the array (a task with
    // a tool's output of tens of MB took four).
    let tmp = atomic::Atomic::new(output)?;
    let mut w = tmp.writer(output)?;
    let werr = |e: std::io::Error| Error::Output {
        path: output.to_path_buf(),
        cause: e.to_string(),
    };
    let (open, sep, close) = (open.as_str(), sep.as_str(), close.as_str());
    // The indentation of an element of an array laid out over lines.
    let depth = open
        .rfind('\n')
        .map(|at| open[at + 1..].to_string())
        .filter(|_| memchr::memchr(b'\n', &data[start..end]).is_some());
    let depth = depth.as_deref();
    w.write_all(&data[..start]).map_err(&werr)?;
    let mut first = true;
    let mut put = |w: &mut dyn Write, t: Piece<'_>| -> Result<()> {
        w.write_all(if first { open } else { sep }.as_bytes())
            .map_err(&werr)?;
        first = false;
        t.write_to(w).map_err(&werr)
    };
    let mut stash: HashMap<u64, Vec<Piece<'_>>> = HashMap::new();
    for el in elements {
        let key = (el.get().as_ptr() as usize - base) as u64;
        let edit = plan.lines.get(&key);
        let text = match edit {
            Some(e) if e.drop => None,
            Some(LineEdit {
                replacement: Some(r),
                ..
            }) => Some(Piece::Planned(r)),
            _ => Some(Piece::Input(el.get().as_bytes())),
        };
        // An inserted message is laid out as the array's others are.
        let inserts = edit.into_iter().flat_map(|e| {
            e.insert_after.iter().map(|i| match depth {
                Some(d) => Piece::Text(indented(i, d)),
                None => Piece::Input(i.as_bytes()),
            })
        });
        match edit.and_then(|e| e.moved_to) {
            // What is inserted after a moved element moves with it.
            Some(target) => stash
                .entry(target)
                .or_default()
                .extend(text.into_iter().chain(inserts)),
            None => {
                for t in text.into_iter().chain(inserts) {
                    put(&mut w, t)?;
                }
            }
        }
        for t in stash.remove(&key).into_iter().flatten() {
            put(&mut w, t)?;
        }
    }
    let close = if first { "[]" } else { close };
    w.write_all(close.as_bytes()).map_err(&werr)?;
    w.write_all(after).map_err(&werr)?;
    atomic::finish(w, output)?;
    tmp.commit(output, force, Some(input))
}

/// The separators of a JSON array as its text lays them out: `[` and the
/// white space before its first element, `,` and that white space between
/// elements, and the white space after its last element and `]`.
fn layout(region: &str) -> (String, String, String) {
    let inner = region
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or("");
    if inner.trim().is_empty() {
        // No element to learn from: as JSON.stringify(…, null, 2) lays
        // out an array at the top level.
        return if region.contains('\n') {
            ("[\n  ".into(), ",\n  ".into(), "\n]".into())
        } else {
            ("[".into(), ",".into(), "]".into())
        };
    }
    let lead = &inner[..inner.len() - inner.trim_start().len()];
    let trail = &inner[inner.trim_end().len()..];
    (format!("[{lead}"), format!(",{lead}"), format!("{trail}]"))
}

/// The writer of one repair: a JSON file holds one conversation.
pub struct ChatWriter {
    input: std::path::PathBuf,
    output: Option<std::path::PathBuf>,
    force: bool,
    limits: Limits,
    policy: Policy,
    format: Option<Format>,
    plan: Option<Plan>,
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(ChatWriter {
        input: t.input.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
        limits: t.limits,
        policy: *t.policy,
        format: None,
        plan: None,
    }))
}

impl Writer for ChatWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        let mut p = plan(conv, planned, &self.policy, &self.input)?;
        if !p.keeps_a_message(conv) {
            // A copy without a message is no history: no app resumes it and
            // chatfsck does not read it. The copy keeps the input as it is
            // and every finding is left, with the reason.
            for f in planned {
                log.left
                    .push(Left::of(f.finding, crate::write::NO_MESSAGE_LEFT));
            }
            p = Plan {
                lines: BTreeMap::new(),
                log: Vec::new(),
                left: Vec::new(),
            };
        }
        log.edits.extend(p.log.iter().cloned());
        log.left.append(&mut p.left);
        self.format = Some(conv.source.format);
        self.plan = Some(p);
        Ok(())
    }

    fn write(self: Box<Self>, _log: &mut Log) -> Result<()> {
        let (Some(out), Some(plan)) = (&self.output, &self.plan) else {
            return Err(Error::not_history(&self.input, "holds no conversation"));
        };
        if plan.lines.is_empty() {
            // Nothing to change (not even a document's separators): the
            // copy is the file, copied by the kernel.
            atomic::copy(&self.input, out, self.force)
        } else if self.format == Some(Format::Json) {
            write_document(&self.input, out, plan, self.force)
        } else {
            write(&self.input, out, plan, self.limits, self.force)
        }
    }
}
