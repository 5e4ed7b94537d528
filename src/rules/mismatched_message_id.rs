use std::collections::{HashMap, HashSet};

use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Action, Finding, Severity};
use crate::model::chain::{ChainRecord, RecordKind, Unreached};

pub static RULE: Rule = Rule {
    name: "mismatched-message-id",
    severity: Severity::Error,
    summary: "a record of a split reply carries another `message.id`: the resume leaves it and its tool calls out",
    repair: Some("give the record the `message.id` of the reply it belongs to"),
    doc: r#"## What it does
Finds an assistant record of a parent chain that belongs to the API reply of the
record before it but carries another `message.id`. That it belongs to the reply is read
from its `requestId`, the same as the record before it (the client writes
one on every assistant record); in a file without them, from a record of
the reply written under it.

## Why is this bad?
A client that writes one API reply as several records, one content block
each, chained one after the other, and the results of parallel tool calls
hang off them on side branches, walks one branch on resume and brings in
the rest of the reply by `message.id`. A record whose `message.id` was
damaged is not brought in: its tool call and the result answering it are
left out of the request without a word (the client sends 12 of the
14 units of the fixture): an error. When such a record is on the branch the
resume walks, the client sends it as a reply of its own, after the rest of
the reply and its results: a warning, as nothing is lost, but the model is
shown a turn it never took; `interleaved-message` reports it when that puts
it between calls and their results, which the client then replaces with
placeholders of its own.

## What providers answer
Nothing: the request is valid, and shorter.

## Example
```jsonl
{"type":"assistant","uuid":"a1","parentUuid":"u1","requestId":"req_1","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}
{"type":"assistant","uuid":"a2","parentUuid":"a1","requestId":"req_1","message":{"id":"msg_X","role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{}}]}}
{"type":"user","uuid":"r2","parentUuid":"a2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"ok"}]}}
{"type":"user","uuid":"r1","parentUuid":"a1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}
```

## Repair
Gives the record the `message.id` of the record before it, the reply it
belongs to, so that the client brings it in with its results. The old
value is in the repair log.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(chain) = ctx.conv.chain.as_deref() else {
        return;
    };
    let records = &chain.records;
    // The parent must be an assistant record: only those are looked up.
    let assistants: HashMap<&str, usize> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.kind == RecordKind::Assistant && r.unreached != Unreached::Replaced)
        .filter_map(|(i, r)| Some((r.uuid.as_deref()?, i)))
        .collect();
    // Who is written under whom, made the first time it is needed.
    let mut children: Option<HashMap<&str, Vec<usize>>> = None;
    let children_of = || {
        let mut c: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, r) in records.iter().enumerate() {
            if let Some(p) = &r.parent {
                c.entry(p.as_str()).or_default().push(i);
            }
        }
        c
    };
    // The records a reply goes on under, found once for all.
    let mut going_on: Option<HashSet<(usize, &str)>> = None;
    for (ri, r) in records.iter().enumerate() {
        let sent = r.unreached == Unreached::No;
        if r.kind != RecordKind::Assistant || !(sent || r.unreached == Unreached::OffBranch) {
            continue;
        }
        let (Some(id), Some(parent)) = (&r.message_id, &r.parent) else {
            continue;
        };
        let Some(p) = assistants.get(parent.as_str()).map(|&i| &records[i]) else {
            continue;
        };
        let Some(reply) = &p.message_id else {
            continue;
        };
        if p.kind != RecordKind::Assistant || p.unreached != Unreached::No || reply == id {
            continue;
        }
        // That it belongs to the reply: the same `requestId` (every record
        // 2.x writes has one), or, in a file without them, a record of the
        // reply written under it (the reply goes on after it).
        let same_request = match (&r.request_id, &p.request_id) {
            (Some(a), Some(b)) => a == b,
            (None, None) => {
                let children = children.get_or_insert_with(children_of);
                going_on
                    .get_or_insert_with(|| replies_going_on(records, children))
                    .contains(&(ri, reply.as_str()))
            }
            _ => false,
        };
        if !same_request {
            continue;
        }
        let line = r.loc.line().unwrap_or(0);
        let pline = p.loc.line().unwrap_or(0);
        let belongs = format!(
            "line {line} belongs to the reply of line {pline} but carries another `message.id`"
        );
        // On the branch the resume walks, it is sent, as a reply of its
        // own; off it, it is lost with the results under it.
        let (summary, shown, results, notes, severity) = if sent {
            let resume = ctx.profile().on(Pattern::MismatchedMessageId);
            let mut notes = ctx.notes(&resume, None, &[]);
            notes.push("the model is shown a turn it never took; where that puts the record between calls and their results, `interleaved-message` says what the client does".to_string());
            (
                format!(
                    "{belongs}: {}",
                    resume.says(
                        "the resume sends it as a reply of its own, after the rest of that reply",
                        &[]
                    )
                ),
                format!("`message.id` `{id}`"),
                Vec::new(),
                notes,
                resume.severity_or(Severity::Warning),
            )
        } else {
            let children = children.get_or_insert_with(children_of);
            let results: Vec<&ChainRecord> = r
                .uuid
                .as_deref()
                .and_then(|u| children.get(u))
                .into_iter()
                .flatten()
                .map(|&c| &records[c])
                .filter(|c| c.kind == RecordKind::User && c.unreached == Unreached::OffBranch)
                .collect();
            let resume = ctx.profile().on(Pattern::MismatchedMessageIdOffBranch);
            let what = format!(
                "{}{}",
                what_it_holds(&r.calls),
                answered(&r.calls, results.len())
            );
            let vars = [("what", what.as_str())];
            (
                format!(
                    "{belongs}: {}",
                    resume.says("the resume leaves {what} out of the request", &vars)
                ),
                format!("`message.id` `{id}`, never sent"),
                results,
                ctx.notes(&resume, None, &vars),
                resume.severity_or(Severity::Error),
            )
        };
        let mut f = ctx
            .finding(&RULE, None, r.loc.clone(), summary)
            .label(&r.loc, shown)
            .label(&p.loc, format!("the reply, `message.id` `{reply}`"));
        for c in &results {
            f = f.label(&c.loc, "its result, never sent");
        }
        f = f.notes(notes);
        f.severity = severity;
        for c in &r.calls {
            f = f.id(c);
        }
        out.push(f.fix(vec![Action::SetMessageId {
            loc: r.loc.clone(),
            id: reply.clone(),
        }]));
    }
}

/// "it, its tool call `a`" (or "it", for a record without calls).
fn what_it_holds(calls: &[String]) -> String {
    if calls.is_empty() {
        return "it".to_string();
    }
    format!(
        "it, its tool call{} {}",
        if calls.len() == 1 { "" } else { "s" },
        calls
            .iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// " and the result answering it", for the results under the record.
fn answered(calls: &[String], results: usize) -> String {
    if results == 0 {
        return String::new();
    }
    format!(
        " and the result{} answering {}",
        if results == 1 { "" } else { "s" },
        if calls.len() == 1 { "it" } else { "them" }
    )
}

/// Each assistant record under which a later record of its parent's
/// reply is written, through assistant records only (the rest of a reply
/// split over records), with that reply's `message.id`: `(record, id)`.
///
/// Found in one walk down the assistant records (each visited once): at a
/// record of reply `M`, the nearest record above it of the same reply is
/// where that reply was split, and the record below that one on the way
/// down is one the reply goes on under. (A walk down from each record
/// asked about was quadratic in a chain of them: 5,000 records of a
/// repaired copy took a minute.) Where records share a uuid or their
/// links loop, each record is walked under the first parent it is found
/// under.
fn replies_going_on<'r>(
    records: &'r [ChainRecord],
    children: &HashMap<&str, Vec<usize>>,
) -> HashSet<(usize, &'r str)> {
    let assistant = |i: usize| records[i].kind == RecordKind::Assistant;
    let below = |i: usize| -> &[usize] {
        records[i]
            .uuid
            .as_deref()
            .and_then(|u| children.get(u))
            .map_or(&[], Vec::as_slice)
    };
    // Assistant records under an assistant record start no walk; the
    // others do, then any not reached (in a loop of links).
    let mut under_one = vec![false; records.len()];
    for i in (0..records.len()).filter(|&i| assistant(i)) {
        for &c in below(i) {
            under_one[c] = true;
        }
    }
    let starts = (0..records.len())
        .filter(|&i| assistant(i) && !under_one[i])
        .chain((0..records.len()).filter(|&i| assistant(i)));
    let mut out = HashSet::new();
    let mut seen = vec![false; records.len()];
    // The walk: the records from the start down to here, where each of
    // them is on it (`path`), and for each reply the depths of its
    // records on it.
    let mut path: Vec<usize> = Vec::new();
    let mut at: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut stack: Vec<(usize, bool)> = Vec::new();
    for start in starts {
        if seen[start] {
            continue;
        }
        stack.push((start, true));
        while let Some((i, entering)) = stack.pop() {
            let id = records[i].message_id.as_deref();
            if !entering {
                path.pop();
                if let Some(v) = id.and_then(|m| at.get_mut(m)) {
                    v.pop();
                }
                continue;
            }
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            if let Some(m) = id {
                let depths = at.entry(m).or_default();
                if let Some(&a) = depths.last() {
                    out.insert((path.get(a + 1).copied().unwrap_or(i), m));
                }
                depths.push(path.len());
            }
            path.push(i);
            stack.push((i, false));
            for &c in below(i).iter().rev() {
                if assistant(c) && !seen[c] {
                    stack.push((c, true));
                }
            }
        }
    }
    out
}
