//! Store versus trace: align every request a trace recorded as sent with
//! the stored history of the same conversation, and say where they differ.
//!
//! A stored conversation is a list of true messages; a recorded request is
//! the list of messages the app built from it and sent. The alignment is a
//! small edit-distance search over the two lists whose steps are the things
//! that go wrong between a store and a prompt: several stored messages sent
//! as one (merged), a message sent under another role (re-labelled), a
//! message's tool calls left out (stripped), a stored message not sent
//! (dropped), content sent differently (changed), a sent message the store
//! does not hold (not stored). Stored messages after the last one the request
//! covers are the request's future (its answer, later turns) and cost nothing.
//!
//! Matching is tolerant of what apps do when they convert a history: a
//! system prompt the store does not keep, thinking concatenated into the
//! content (dispatch's `convertAssistantMessage`), sent apart as reasoning,
//! or left out; one tool message per tool result; re-serialised arguments;
//! whitespace and `<think>` tags between parts.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::error::Result;
use crate::escape::preview;
use crate::model::{Conversation, Loc, Message, PartKind, Role, TraceStep};
use crate::source::trace::{Event, TraceSource};

/// What happened to a stored message on its way into a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    /// Sent faithfully.
    Same,
    /// A system prompt the app adds and the store does not keep.
    Injected,
    /// Several stored messages sent as one.
    Merged,
    /// Sent under another role.
    Relabelled,
    /// Sent without its tool calls or results.
    Stripped,
    /// Sent with other content.
    Changed,
    /// Stored, not sent.
    Dropped,
    /// Sent, not stored.
    NotStored,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Same => "same",
            Op::Injected => "injected",
            Op::Merged => "merged",
            Op::Relabelled => "re-labelled",
            Op::Stripped => "stripped",
            Op::Changed => "changed",
            Op::Dropped => "dropped",
            Op::NotStored => "not stored",
        }
    }

    pub fn diverges(self) -> bool {
        !matches!(self, Op::Same | Op::Injected)
    }
}

/// One row of an alignment.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub op: Op,
    /// Stored messages (positions in the store conversation).
    pub store: Vec<usize>,
    /// Position in the request's `messages`.
    pub sent: Option<usize>,
    /// Stored messages sent under another role than their own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub relabelled: Vec<usize>,
    /// Tool call ids (or result ids) stored but not sent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stripped: Vec<String>,
}

/// Which request, and how it went: shared by the comparison and the
/// side-by-side view.
#[derive(Debug, Clone, Serialize)]
pub struct RequestHead {
    /// The request's id (`<conversation>/turn-<n>/step-<k>`).
    pub request: String,
    pub turn: usize,
    pub step: usize,
    /// Where the request body is recorded.
    pub location: Loc,
    pub finish_reason: Option<String>,
    pub status: &'static str,
    pub truncated: bool,
    /// Messages sent.
    pub sent: usize,
    /// Stored messages the request covers (a prefix of the store).
    pub covered: usize,
}

/// One recorded request, aligned with the store.
#[derive(Debug)]
pub struct RequestComparison {
    pub head: RequestHead,
    pub rows: Vec<Row>,
    pub step_info: TraceStep,
    /// Reports the trace recorded before this request that say the app
    /// changed the history it loaded.
    pub reports: Vec<Event>,
    /// What was sent, message by message, in short (role, parts, preview):
    /// the prompts themselves are not kept.
    pub sent_messages: Vec<Sent>,
}

/// A sent message, in short.
#[derive(Debug, Clone)]
pub struct Sent {
    pub role: Role,
    pub parts: String,
    pub preview: String,
}

impl RequestComparison {
    pub fn divergent(&self) -> bool {
        self.rows.iter().any(|r| r.op.diverges())
    }
}

/// A stored conversation and every request its trace recorded.
#[derive(Debug)]
pub struct ConvComparison {
    pub conversation: String,
    pub messages: usize,
    pub requests: Vec<RequestComparison>,
}

// ---------------------------------------------------------------------------
// Matching

/// A stored message, or one tool result of a stored message that holds
/// several (sent as one `tool` message each).
#[derive(Debug, Clone, Copy)]
struct Unit {
    msg: usize,
    part: Option<usize>,
}

fn units(store: &Conversation) -> Vec<Unit> {
    let mut out = Vec::new();
    for (i, m) in store.messages.iter().enumerate() {
        let results: Vec<usize> = m.tool_results().map(|(p, ..)| p).collect();
        if m.role == Role::Tool && results.len() > 1 {
            out.extend(results.into_iter().map(|p| Unit {
                msg: i,
                part: Some(p),
            }));
        } else {
            out.push(Unit { msg: i, part: None });
        }
    }
    out
}

fn same_role(a: Role, b: Role) -> bool {
    a == b || (a.is_instruction() && b.is_instruction())
}

/// Skip what may separate two parts in a concatenation: whitespace and
/// thinking tags.
fn skip_sep(s: &str, mut pos: usize) -> usize {
    loop {
        let rest = &s[pos..];
        let trimmed = rest.trim_start();
        pos += rest.len() - trimmed.len();
        let mut moved = false;
        for tag in ["<think>", "</think>", "<thinking>", "</thinking>"] {
            if s[pos..].starts_with(tag) {
                pos += tag.len();
                moved = true;
            }
        }
        if !moved {
            return pos;
        }
    }
}

fn consume(hay: &str, pos: usize, needle: &str) -> Option<usize> {
    let needle = needle.trim();
    if needle.is_empty() {
        return Some(pos);
    }
    let p = skip_sep(hay, pos);
    hay[p..].starts_with(needle).then(|| p + needle.len())
}

/// A stored part, as matching sees it.
enum Seg<'a> {
    Text(&'a str),
    Thinking(&'a str),
}

/// The text and thinking segments of a unit.
fn segs<'a>(store: &'a Conversation, u: Unit) -> Vec<Seg<'a>> {
    let m = &store.messages[u.msg];
    m.parts
        .iter()
        .filter_map(|p| match &p.kind {
            PartKind::Text { text } if !text.trim().is_empty() => Some(Seg::Text(text)),
            PartKind::Thinking { text } if !text.trim().is_empty() => Some(Seg::Thinking(text)),
            _ => None,
        })
        .collect()
}

/// The sent message's text and thinking, each concatenated.
fn sent_text(m: &Message) -> (String, String) {
    let mut text = String::new();
    let mut think = String::new();
    for p in &m.parts {
        match &p.kind {
            PartKind::Text { text: t } => text.push_str(t),
            PartKind::Thinking { text: t } => think.push_str(t),
            _ => {}
        }
    }
    (text, think)
}

/// Decompose the sent text (and reasoning) into the stored segments of a
/// run of units, in order: text is required, thinking may be in the text,
/// in the reasoning, or absent. Calls `end(i)` for every unit count `i`
/// (from 1) after which the sent text is used up. Each unit must contribute
/// something from the sent text, unless it has nothing to contribute.
struct Decomposer<'a> {
    units: &'a [Vec<Seg<'a>>],
    text: &'a str,
    think: &'a str,
    budget: u32,
}

impl Decomposer<'_> {
    fn done(&self, tpos: usize, hpos: usize) -> bool {
        skip_sep(self.text, tpos) == self.text.len()
            && skip_sep(self.think, hpos) == self.think.len()
    }

    /// Walk unit `u`, segment `s`; `used` says whether unit `u` consumed
    /// anything yet.
    fn walk(
        &mut self,
        u: usize,
        s: usize,
        tpos: usize,
        hpos: usize,
        used: bool,
        ends: &mut Vec<usize>,
    ) {
        if self.budget == 0 {
            return;
        }
        self.budget -= 1;
        if u >= self.units.len() {
            return;
        }
        if s == self.units[u].len() {
            // The unit is finished: it must have contributed, or had nothing.
            if !used && !self.units[u].is_empty() {
                return;
            }
            if self.done(tpos, hpos) && !ends.contains(&(u + 1)) {
                ends.push(u + 1);
            }
            if tpos < self.text.len() || hpos < self.think.len() {
                self.walk(u + 1, 0, tpos, hpos, false, ends);
            }
            return;
        }
        match self.units[u][s] {
            Seg::Text(t) => {
                if let Some(p) = consume(self.text, tpos, t) {
                    self.walk(u, s + 1, p, hpos, true, ends);
                }
            }
            Seg::Thinking(t) => {
                if let Some(p) = consume(self.text, tpos, t) {
                    self.walk(u, s + 1, p, hpos, true, ends);
                }
                if let Some(p) = consume(self.think, hpos, t)
                    && p > hpos
                {
                    self.walk(u, s + 1, tpos, p, true, ends);
                }
                // Thinking left out of the request.
                self.walk(u, s + 1, tpos, hpos, used, ends);
            }
        }
    }
}

/// Stored and sent arguments say the same thing: equal text, equal JSON,
/// a stored JSON string holding the sent JSON, or stored arguments that are
/// not JSON and that the app replaced before sending (Orva replays `{}`,
/// dispatch `{"_malformed_arguments": <the first 200 characters>}`; the
/// store's `invalid-tool-arguments` finding covers those).
fn args_equal(stored: &str, sent: &str) -> bool {
    if stored.trim() == sent.trim() {
        return true;
    }
    let Ok(sent_v) = serde_json::from_str::<Value>(sent) else {
        return false;
    };
    let replaced = |raw: &str| match &sent_v {
        Value::Object(o) => {
            o.is_empty()
                || o.values().any(|v| {
                    v.as_str()
                        .is_some_and(|t| !t.is_empty() && raw.starts_with(t))
                })
        }
        _ => false,
    };
    match serde_json::from_str::<Value>(stored) {
        Ok(v) if v == sent_v => true,
        Ok(Value::String(inner)) => match serde_json::from_str::<Value>(&inner) {
            Ok(v) => v == sent_v,
            Err(_) => replaced(&inner),
        },
        Ok(_) => false,
        Err(_) => replaced(stored),
    }
}

/// Tool calls of units, in order: (id, name, raw arguments).
fn calls_of<'a>(store: &'a Conversation, us: &[Unit]) -> Vec<(&'a str, &'a str, &'a str)> {
    us.iter()
        .flat_map(|u| store.messages[u.msg].tool_calls())
        .map(|(_, id, name, args)| (id, name, args.raw.as_str()))
        .collect()
}

fn results_of(store: &Conversation, u: Unit) -> Vec<(&str, &str)> {
    store.messages[u.msg]
        .tool_results()
        .filter(|(p, ..)| u.part.is_none_or(|want| want == *p))
        .map(|(_, id, content, _)| (id, content))
        .collect()
}

/// How a run of stored units relates to one sent message, if the sent
/// message is made of them.
#[derive(Debug)]
struct Cover {
    relabelled: Vec<usize>,
    stripped: Vec<String>,
}

/// Compare the tool parts of a run of units with a sent message. `None`:
/// the sent message has calls or results the units do not explain.
fn tool_cover(store: &Conversation, us: &[Unit], sent: &Message) -> Option<Vec<String>> {
    let stored_calls = calls_of(store, us);
    let sent_calls: Vec<(&str, &str, &str)> = sent
        .tool_calls()
        .map(|(_, id, name, args)| (id, name, args.raw.as_str()))
        .collect();
    let mut stripped = Vec::new();
    let mut si = 0;
    for (id, name, args) in &stored_calls {
        match sent_calls.get(si) {
            Some((sid, sname, sargs)) if sid == id && sname == name && args_equal(args, sargs) => {
                si += 1
            }
            _ => stripped.push((*id).to_string()),
        }
    }
    if si != sent_calls.len() {
        return None;
    }
    let sent_results: Vec<(&str, &str)> = sent
        .tool_results()
        .map(|(_, id, content, _)| (id, content))
        .collect();
    let stored_results: Vec<(&str, &str)> = us.iter().flat_map(|u| results_of(store, *u)).collect();
    let mut ri = 0;
    for (id, content) in &stored_results {
        match sent_results.get(ri) {
            Some((sid, scontent)) if sid == id && scontent.trim() == content.trim() => ri += 1,
            _ => stripped.push((*id).to_string()),
        }
    }
    if ri != sent_results.len() {
        return None;
    }
    Some(stripped)
}

/// Runs of units starting at `k` that the sent message is made of: the
/// number of units of each run, with what was re-labelled or stripped.
/// At most this many stored messages are looked for in one sent message.
const MAX_RUN: usize = 64;

fn covers<'a>(
    store: &Conversation,
    us: &[Unit],
    all_segs: &'a [Vec<Seg<'a>>],
    k: usize,
    sent: &Message,
    text: &'a str,
    think: &'a str,
) -> Vec<(usize, Cover)> {
    let upto = (k + MAX_RUN).min(us.len());
    let mut d = Decomposer {
        units: &all_segs[k..upto],
        text,
        think,
        budget: 20_000,
    };
    let mut ends = Vec::new();
    d.walk(0, 0, 0, 0, false, &mut ends);
    ends.sort_unstable();
    let mut out = Vec::new();
    for n in ends {
        // A merge starts and ends with messages whose content is in the
        // sent text: empty neighbours are dropped or stripped, not merged.
        if n > 1 && (all_segs[k].is_empty() || all_segs[k + n - 1].is_empty()) {
            continue;
        }
        let run = &us[k..k + n];
        let Some(stripped) = tool_cover(store, run, sent) else {
            continue;
        };
        let relabelled: Vec<usize> = run
            .iter()
            .filter(|u| {
                let r = store.messages[u.msg].role;
                !same_role(r, sent.role)
            })
            .map(|u| u.msg)
            .collect();
        out.push((
            n,
            Cover {
                relabelled,
                stripped,
            },
        ));
    }
    out
}

/// How one stored unit relates to one sent message when the text does not
/// decompose: same role means changed content.
fn tool_unit_same(store: &Conversation, u: Unit, sent: &Message) -> bool {
    let m = &store.messages[u.msg];
    if !(m.carries_results() && sent.carries_results()) {
        return false;
    }
    tool_cover(store, &[u], sent).is_some_and(|s| s.is_empty())
        && sent.tool_results().count() == results_of(store, u).len()
}

// Costs of the alignment steps. A changed message costs one step, like a
// merge; ties go to the alignment that covers more of the store.
const FREE: u32 = 0;
const STEP: u32 = 2;
const CHANGED: u32 = 2;

#[derive(Clone)]
enum Back {
    None,
    Diag {
        n: usize,
        op: Op,
        relabelled: Vec<usize>,
        stripped: Vec<String>,
    },
    Drop,
    Sent(Op),
}

/// Align a request's messages with the stored units.
fn align(store: &Conversation, sent: &[Message]) -> (Vec<Row>, usize) {
    let us = units(store);
    let (n, m) = (us.len(), sent.len());
    let inf = u32::MAX / 4;
    let mut cost = vec![vec![inf; m + 1]; n + 1];
    let mut back = vec![vec![Back::None; m + 1]; n + 1];
    cost[0][0] = 0;
    // For each sent message, the runs of units it can be made of, by start.
    let all_segs: Vec<Vec<Seg<'_>>> = us.iter().map(|u| segs(store, *u)).collect();
    let mut runs: Vec<Vec<Vec<(usize, Cover)>>> = Vec::with_capacity(m);
    for s in sent {
        let mut by_start = Vec::with_capacity(n);
        let (text, think) = sent_text(s);
        let (t, h) = (text.trim_start(), think.trim_start());
        for (k, segs_k) in all_segs.iter().enumerate() {
            // Cheap filter: the first stored segment must start the sent
            // text (or the reasoning, or be thinking left out).
            let plausible = match segs_k.first() {
                None => true,
                Some(Seg::Text(x)) => t.starts_with(x.trim()),
                Some(Seg::Thinking(x)) => {
                    t.starts_with(x.trim())
                        || h.starts_with(x.trim())
                        || segs_k
                            .iter()
                            .skip(1)
                            .any(|sg| matches!(sg, Seg::Text(y) if t.starts_with(y.trim())))
                        || segs_k.len() == 1
                }
            };
            by_start.push(if plausible {
                covers(store, &us, &all_segs, k, s, &text, &think)
            } else {
                Vec::new()
            });
        }
        runs.push(by_start);
    }
    for i in 0..=n {
        for j in 0..=m {
            let here = cost[i][j];
            if here >= inf {
                continue;
            }
            // Drop stored unit i.
            if i < n && here + STEP < cost[i + 1][j] {
                cost[i + 1][j] = here + STEP;
                back[i + 1][j] = Back::Drop;
            }
            if j < m {
                // A sent message the store does not hold.
                let op = if sent[j].role.is_instruction() {
                    Op::Injected
                } else {
                    Op::NotStored
                };
                let c = here + if op == Op::Injected { FREE } else { STEP };
                if c < cost[i][j + 1] {
                    cost[i][j + 1] = c;
                    back[i][j + 1] = Back::Sent(op);
                }
            }
            if i < n && j < m {
                let mut matched_single = false;
                for (len, cover) in &runs[j][i] {
                    let (op, c) = if *len == 1 {
                        matched_single = true;
                        if !cover.relabelled.is_empty() {
                            (Op::Relabelled, STEP)
                        } else if !cover.stripped.is_empty() {
                            (Op::Stripped, STEP)
                        } else {
                            (Op::Same, FREE)
                        }
                    } else {
                        (Op::Merged, STEP)
                    };
                    let c = here + c;
                    if c < cost[i + len][j + 1] {
                        cost[i + len][j + 1] = c;
                        back[i + len][j + 1] = Back::Diag {
                            n: *len,
                            op,
                            relabelled: cover.relabelled.clone(),
                            stripped: cover.stripped.clone(),
                        };
                    }
                }
                if !matched_single {
                    let sm = &store.messages[us[i].msg];
                    let (op, c) = if tool_unit_same(store, us[i], &sent[j]) {
                        (Op::Same, FREE)
                    } else if same_role(sm.role, sent[j].role) {
                        (Op::Changed, CHANGED)
                    } else {
                        (Op::Changed, inf)
                    };
                    let c = here.saturating_add(c);
                    if c < cost[i + 1][j + 1] {
                        cost[i + 1][j + 1] = c;
                        back[i + 1][j + 1] = Back::Diag {
                            n: 1,
                            op,
                            relabelled: Vec::new(),
                            stripped: Vec::new(),
                        };
                    }
                }
            }
        }
    }
    // The request covers a prefix of the store: the rest is its future.
    let mut best = 0;
    for i in 0..=n {
        if cost[i][m] <= cost[best][m] {
            best = i;
        }
    }
    let mut rows = Vec::new();
    let (mut i, mut j) = (best, m);
    while i > 0 || j > 0 {
        match back[i][j].clone() {
            Back::Diag {
                n,
                op,
                relabelled,
                stripped,
            } => {
                let mut msgs: Vec<usize> = us[i - n..i].iter().map(|u| u.msg).collect();
                msgs.dedup();
                rows.push(Row {
                    op,
                    store: msgs,
                    sent: Some(j - 1),
                    relabelled,
                    stripped,
                });
                i -= n;
                j -= 1;
            }
            Back::Drop => {
                rows.push(Row {
                    op: Op::Dropped,
                    store: vec![us[i - 1].msg],
                    sent: None,
                    relabelled: Vec::new(),
                    stripped: Vec::new(),
                });
                i -= 1;
            }
            Back::Sent(op) => {
                rows.push(Row {
                    op,
                    store: Vec::new(),
                    sent: Some(j - 1),
                    relabelled: Vec::new(),
                    stripped: Vec::new(),
                });
                j -= 1;
            }
            Back::None => break,
        }
    }
    rows.reverse();
    // Two tool units of one stored message that were both dropped are one row.
    let mut merged_rows: Vec<Row> = Vec::with_capacity(rows.len());
    for r in rows {
        if let Some(last) = merged_rows.last_mut()
            && last.op == r.op
            && r.op == Op::Dropped
            && last.store == r.store
        {
            continue;
        }
        merged_rows.push(r);
    }
    let covered = if best == 0 { 0 } else { us[best - 1].msg + 1 };
    (merged_rows, covered)
}

// ---------------------------------------------------------------------------
// Comparison

/// Compare one stored conversation with every request the trace recorded
/// for it. `None` when the trace has nothing for it.
pub fn compare(store: &Conversation, trace: &mut TraceSource) -> Result<Option<ConvComparison>> {
    if store.trace.is_some() || !trace.has_group(&store.id) {
        return Ok(None);
    }
    let group = trace.group(&store.id)?;
    let mut requests = Vec::new();
    // One request at a time: only its alignment and a summary are kept.
    for pos in 0..group.requests {
        let req = trace.request(pos)?;
        let Some(mut step) = req.trace.as_deref().cloned() else {
            continue;
        };
        step.output = Vec::new();
        let (rows, covered) = align(store, &req.messages);
        let reports = group
            .events
            .iter()
            .filter(|e| e.before_request <= pos && e.changed_history())
            .filter(|e| {
                // Reports of this turn, or of a load before it.
                e.turn.is_none() || e.turn == step.turn
            })
            .cloned()
            .collect();
        requests.push(RequestComparison {
            head: RequestHead {
                request: req.id.clone(),
                turn: step.turn_index,
                step: step.step_index,
                location: step.request.clone(),
                finish_reason: step.finish_reason.clone(),
                status: step.status.as_str(),
                truncated: step.truncated(),
                sent: req.messages.len(),
                covered,
            },
            rows,
            step_info: step,
            reports,
            sent_messages: req
                .messages
                .iter()
                .map(|m| Sent {
                    role: m.role,
                    parts: part_types(m),
                    preview: message_preview(m, 60),
                })
                .collect(),
        });
    }
    Ok(Some(ConvComparison {
        conversation: store.id.clone(),
        messages: store.messages.len(),
        requests,
    }))
}

/// Where stored messages are: `seq 1–6` (chunk stores), `lines 3–5`, or
/// `message 4`.
pub fn store_span(store: &Conversation, msgs: &[usize]) -> String {
    let (Some(&lo), Some(&hi)) = (msgs.iter().min(), msgs.iter().max()) else {
        return String::new();
    };
    let range = |a: u64, b: u64, one: &str, many: &str| {
        if a == b {
            format!("{one} {a}")
        } else {
            format!("{many} {a}–{b}")
        }
    };
    if let Some(log) = &store.chunks {
        let seqs: Vec<u64> = log
            .chunks
            .iter()
            .filter(|c| c.message >= lo && c.message <= hi)
            .map(|c| c.seq)
            .collect();
        if let (Some(a), Some(b)) = (seqs.iter().min(), seqs.iter().max()) {
            return range(*a, *b, "seq", "seq");
        }
    }
    let lines: Vec<u64> = (lo..=hi)
        .filter_map(|i| store.messages.get(i))
        .flat_map(|m| m.loc.line().into_iter().chain(m.last_line()))
        .collect();
    if let (Some(a), Some(b)) = (lines.iter().min(), lines.iter().max()) {
        return range(*a, *b, "line", "lines");
    }
    range(lo as u64, hi as u64, "message", "messages")
}

/// Part types of a message, in order, deduplicated: `thinking, text, tool-call`.
pub fn part_types(m: &Message) -> String {
    let mut v: Vec<&str> = Vec::new();
    for p in &m.parts {
        let t = p.kind.type_name();
        if v.last() != Some(&t) {
            v.push(t);
        }
    }
    if v.is_empty() {
        "empty".to_string()
    } else {
        v.join(", ")
    }
}

/// A short preview of a message's content.
pub fn message_preview(m: &Message, max: usize) -> String {
    let mut out = String::new();
    for p in &m.parts {
        let piece = match &p.kind {
            PartKind::Text { text } | PartKind::Thinking { text } => text.to_string(),
            PartKind::ToolCall { name, .. } => format!("{name}(…)"),
            PartKind::ToolResult { content, .. } => content.to_string(),
            PartKind::Other { kind } => format!("[{kind}]"),
        };
        if piece.trim().is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&piece);
        if out.len() > max * 4 {
            break;
        }
    }
    preview(&out, max)
}

/// Tool call ids as a list of code spans.
pub fn ids(v: &[String]) -> String {
    v.iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

// ---------------------------------------------------------------------------
// The side-by-side view (`chatfsck diff STORE TRACE`)

/// Stored messages, as a table shows them.
#[derive(Debug, Serialize)]
pub struct StoreSide {
    /// Positions of the stored messages.
    pub messages: Vec<usize>,
    /// `seq 1–3` (chunk stores) or `line 4`.
    pub at: String,
    pub roles: Vec<String>,
    pub parts: String,
    pub preview: String,
}

impl StoreSide {
    /// `3`, or `0–3`.
    pub fn position(&self) -> String {
        match (self.messages.first(), self.messages.last()) {
            (Some(a), Some(b)) if a != b => format!("{a}–{b}"),
            (Some(a), _) => a.to_string(),
            _ => String::new(),
        }
    }
}

/// A sent message, as a table shows it.
#[derive(Debug, Serialize)]
pub struct SentSide {
    /// Index in the request's `messages`.
    pub index: usize,
    pub role: String,
    pub parts: String,
    pub preview: String,
}

#[derive(Debug, Serialize)]
pub struct DiffRow {
    pub op: Op,
    pub store: Option<StoreSide>,
    pub sent: Option<SentSide>,
    /// What the op means here: roles sent under, ids stripped.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

#[derive(Debug, Serialize)]
pub struct DiffRequest {
    #[serde(flatten)]
    pub head: RequestHead,
    pub divergent: bool,
    pub rows: Vec<DiffRow>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reports: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct DiffConv {
    pub conversation: String,
    pub stored_messages: usize,
    pub requests: Vec<DiffRequest>,
}

#[derive(Debug, Serialize)]
pub struct DiffDoc {
    pub store: String,
    pub store_format: String,
    pub trace: String,
    pub trace_format: String,
    pub conversations: Vec<DiffConv>,
}

impl DiffDoc {
    pub fn divergent(&self) -> bool {
        self.conversations
            .iter()
            .flat_map(|c| &c.requests)
            .any(|r| r.divergent)
    }
}

fn store_side(store: &Conversation, msgs: &[usize]) -> Option<StoreSide> {
    if msgs.is_empty() {
        return None;
    }
    let mut roles: Vec<String> = Vec::new();
    let mut parts: Vec<String> = Vec::new();
    let mut previews: Vec<String> = Vec::new();
    for &i in msgs {
        let m = &store.messages[i];
        if !roles.iter().any(|r| r == m.role.as_str()) {
            roles.push(m.role.as_str().to_string());
        }
        parts.push(part_types(m));
        previews.push(message_preview(m, 40));
    }
    Some(StoreSide {
        messages: msgs.to_vec(),
        at: store_span(store, msgs),
        roles,
        parts: parts.join(" | "),
        preview: preview(&previews.join(" | "), 60),
    })
}

fn sent_side(req: &RequestComparison, pos: usize) -> Option<SentSide> {
    let m = req.sent_messages.get(pos)?;
    Some(SentSide {
        index: pos,
        role: m.role.as_str().to_string(),
        parts: m.parts.clone(),
        preview: m.preview.clone(),
    })
}

fn diff_request(store: &Conversation, req: &RequestComparison) -> DiffRequest {
    let rows = req
        .rows
        .iter()
        .map(|r| {
            let mut detail = Vec::new();
            if !r.relabelled.is_empty() {
                let sent_role = r
                    .sent
                    .and_then(|s| req.sent_messages.get(s))
                    .map(|m| m.role.as_str())
                    .unwrap_or("?");
                detail.push(format!(
                    "stored {} sent as `{sent_role}`",
                    r.relabelled
                        .iter()
                        .map(|i| format!("{i} (`{}`)", store.messages[*i].role))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if !r.stripped.is_empty() {
                detail.push(format!("not sent: {}", ids(&r.stripped)));
            }
            DiffRow {
                op: r.op,
                store: store_side(store, &r.store),
                sent: r.sent.and_then(|s| sent_side(req, s)),
                detail: detail.join("; "),
            }
        })
        .collect();
    DiffRequest {
        head: req.head.clone(),
        divergent: req.divergent(),
        rows,
        reports: req
            .reports
            .iter()
            .map(|e| format!("{}: {}", e.name, e.summary()))
            .collect(),
    }
}

/// Compare a store with a trace, conversation by conversation: every
/// recorded request beside the stored history it was built from.
/// `only` keeps one conversation, or one request of it.
pub fn diff(
    store_path: &Path,
    trace_path: &Path,
    mut trace: TraceSource,
    only: Option<&str>,
    limits: crate::source::Limits,
    mapping: Option<&crate::source::Mapping>,
) -> Result<DiffDoc> {
    let mut src = match crate::source::open_any_with(store_path, limits, mapping)? {
        crate::source::Opened::History(s) => s,
        crate::source::Opened::Trace(_) => {
            return Err(crate::error::Error::input(
                store_path,
                "is a trace, not a conversation store (`chatfsck diff STORE TRACE` takes the store first)",
            ));
        }
    };
    let (want_conv, want_req) = crate::source::trace::selection(only);
    let mut conversations = Vec::new();
    while let Some(conv) = src.next_conversation() {
        let conv = conv?;
        if want_conv.is_some_and(|w| w != conv.id) {
            continue;
        }
        let Some(cmp) = compare(&conv, &mut trace)? else {
            continue;
        };
        let requests: Vec<DiffRequest> = cmp
            .requests
            .iter()
            .filter(|r| want_req.is_none_or(|w| w == r.head.request))
            .map(|r| diff_request(&conv, r))
            .collect();
        if requests.is_empty() {
            continue;
        }
        conversations.push(DiffConv {
            conversation: conv.id.clone(),
            stored_messages: conv.messages.len(),
            requests,
        });
    }
    if conversations.is_empty() {
        let cause = match only {
            Some(id) => format!(
                "no conversation or request `{id}` that is both in the store and in {}",
                trace_path.display()
            ),
            None => format!(
                "no conversation of the store appears in {} (the trace records {})",
                trace_path.display(),
                trace
                    .groups()
                    .iter()
                    .take(5)
                    .map(|g| format!("`{g}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        return Err(crate::error::Error::input(store_path, cause));
    }
    let info = src.info();
    let tinfo = crate::source::Source::info(&trace);
    Ok(DiffDoc {
        store: store_path.display().to_string(),
        store_format: format!("{} ({})", info.format, info.dialect),
        trace: trace_path.display().to_string(),
        trace_format: format!("{} ({})", tinfo.format, tinfo.dialect),
        conversations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testutil::*;

    fn thinking(t: &str) -> PartKind {
        PartKind::Thinking { text: t.into() }
    }

    fn ops(rows: &[Row]) -> Vec<(Op, Vec<usize>, Option<usize>)> {
        rows.iter()
            .map(|r| (r.op, r.store.clone(), r.sent))
            .collect()
    }

    fn store() -> Conversation {
        conv("dispatch")
            .user("hello")
            .msg(
                Role::Assistant,
                vec![thinking("greet back"), text_part("Hello!")],
            )
            .user("read files")
            .msg(
                Role::Assistant,
                vec![
                    thinking("look"),
                    text_part("Looking."),
                    call("c1", "ls", r#"{"dir": "."}"#),
                ],
            )
            .msg(Role::Tool, vec![result("c1", "a.txt", Some(false))])
            .msg(Role::Assistant, vec![text_part("One file.")])
            .build()
    }

    #[test]
    fn a_faithful_prompt_is_not_divergent_whatever_the_app_does_with_thinking() {
        let s = store();
        // Thinking concatenated into content, arguments re-serialised, a
        // system prompt the store does not keep.
        let concat = conv("openai")
            .msg(Role::System, vec![text_part("You are dispatch.")])
            .user("hello")
            .msg(Role::Assistant, vec![text_part("greet backHello!")])
            .user("read files")
            .msg(
                Role::Assistant,
                vec![
                    text_part("look\nLooking."),
                    call("c1", "ls", r#"{"dir":"."}"#),
                ],
            )
            .msg(Role::Tool, vec![result("c1", "a.txt", None)])
            .build();
        let (rows, covered) = align(&s, &concat.messages);
        assert!(rows.iter().all(|r| !r.op.diverges()), "{:?}", ops(&rows));
        assert_eq!(covered, 5);
        // Thinking left out, or sent as reasoning.
        let apart = conv("openai")
            .user("hello")
            .msg(
                Role::Assistant,
                vec![thinking("greet back"), text_part("Hello!")],
            )
            .user("read files")
            .msg(
                Role::Assistant,
                vec![text_part("Looking."), call("c1", "ls", r#"{"dir":"."}"#)],
            )
            .build();
        let (rows, covered) = align(&s, &apart.messages);
        assert!(rows.iter().all(|r| !r.op.diverges()), "{:?}", ops(&rows));
        assert_eq!(covered, 4);
    }

    #[test]
    fn merged_relabelled_and_stripped() {
        let s = store();
        // seed 000's shape: everything before the last user message merged
        // into one `user` message, text only.
        let sent = conv("openai")
            .msg(
                Role::User,
                vec![text_part("hellogreet backHello!read fileslookLooking.")],
            )
            .build();
        let (rows, _) = align(&s, &sent.messages);
        assert_eq!(ops(&rows), vec![(Op::Merged, vec![0, 1, 2, 3], Some(0))]);
        assert_eq!(rows[0].relabelled, vec![1, 3]);
        assert_eq!(rows[0].stripped, vec!["c1".to_string()]);
    }

    #[test]
    fn dropped_and_not_stored() {
        let s = store();
        let sent = conv("openai")
            .user("hello")
            .user("read files")
            .user("are you there?")
            .build();
        let (rows, _) = align(&s, &sent.messages);
        assert_eq!(
            ops(&rows),
            vec![
                (Op::Same, vec![0], Some(0)),
                (Op::Dropped, vec![1], None),
                (Op::Same, vec![2], Some(1)),
                (Op::NotStored, vec![], Some(2)),
            ]
        );
    }

    #[test]
    fn relabelled_single_and_changed() {
        let s = store();
        let sent = conv("openai")
            .user("hello")
            .msg(Role::User, vec![text_part("Hello!")])
            .user("read everything")
            .build();
        let (rows, _) = align(&s, &sent.messages);
        assert_eq!(
            ops(&rows),
            vec![
                (Op::Same, vec![0], Some(0)),
                (Op::Relabelled, vec![1], Some(1)),
                (Op::Changed, vec![2], Some(2)),
            ]
        );
    }

    #[test]
    fn arguments_re_serialised_or_replaced_are_the_same_call() {
        assert!(args_equal(r#"{"dir": "."}"#, r#"{"dir":"."}"#));
        assert!(args_equal(r#""{\"dir\": \".\"}""#, r#"{"dir":"."}"#));
        // Not JSON in the store, replaced before sending.
        assert!(args_equal(r#"{"path": "src/ma"#, "{}"));
        assert!(args_equal(
            r#""{\"path\": \"src/ma""#,
            r#"{"_malformed_arguments":"{\"path\": \"src/ma"}"#
        ));
        assert!(!args_equal(r#"{"dir": "."}"#, r#"{"dir":"/"}"#));
        assert!(!args_equal(
            r#"{"path": "src/ma"#,
            r#"{"path":"elsewhere"}"#
        ));
    }

    #[test]
    fn stripped_tool_calls() {
        let s = store();
        let sent = conv("openai")
            .user("hello")
            .assistant("Hello!")
            .user("read files")
            .assistant("Looking.")
            .build();
        let (rows, _) = align(&s, &sent.messages);
        assert_eq!(rows[3].op, Op::Stripped);
        assert_eq!(rows[3].stripped, vec!["c1".to_string()]);
    }

    #[test]
    fn a_thinking_only_answer_the_loader_dropped_is_dropped() {
        // dispatch's reconcile drops assistant messages with only thinking.
        let s = conv("dispatch")
            .user("look")
            .msg(Role::Assistant, vec![thinking("<function=run_shell>")])
            .user("well?")
            .build();
        let sent = conv("openai").user("look").user("well?").build();
        let (rows, covered) = align(&s, &sent.messages);
        assert_eq!(
            ops(&rows),
            vec![
                (Op::Same, vec![0], Some(0)),
                (Op::Dropped, vec![1], None),
                (Op::Same, vec![2], Some(1)),
            ]
        );
        assert_eq!(covered, 3);
    }
}
