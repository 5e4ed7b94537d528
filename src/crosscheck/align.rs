//! The alignment of a stored conversation with one request built from it:
//! a small edit-distance search whose steps are the things that go wrong
//! between a store and a prompt (see the module above).

use serde_json::Value;

use crate::model::compare::{Op, Row};
use crate::model::{Conversation, Message, PartKind, Role};

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
pub(super) fn align(store: &Conversation, sent: &[Message]) -> (Vec<Row>, usize) {
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
        conv(crate::model::Dialect::Dispatch)
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
        let concat = conv(crate::model::Dialect::OpenAi)
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
        let apart = conv(crate::model::Dialect::OpenAi)
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
        let sent = conv(crate::model::Dialect::OpenAi)
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
        let sent = conv(crate::model::Dialect::OpenAi)
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
        let sent = conv(crate::model::Dialect::OpenAi)
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
        let sent = conv(crate::model::Dialect::OpenAi)
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
        let s = conv(crate::model::Dialect::Dispatch)
            .user("look")
            .msg(Role::Assistant, vec![thinking("<function=run_shell>")])
            .user("well?")
            .build();
        let sent = conv(crate::model::Dialect::OpenAi)
            .user("look")
            .user("well?")
            .build();
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
