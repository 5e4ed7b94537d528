use std::path::Path;

use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};
use crate::model::Event;
use crate::model::compare::{ConvComparison, Op, Row, ids, part_types, store_span};
use crate::model::{Conversation, Loc, Role};

pub static RULE: Rule = Rule {
    name: "prompt-divergence",
    severity: Severity::Error,
    summary: "the prompt a trace recorded as sent differs from the stored history: messages merged, dropped, re-labelled or stripped of tool calls",
    repair: None,
    doc: r#"## What it does
Needs two inputs: a conversation store and the trace its app wrote
(`chatfsck lint STORE --trace TRACE`, or `chatfsck diff STORE TRACE` for the
side-by-side table). Each request the trace recorded as sent (dispatch's
`provider.request` body, a Phoenix or OpenTelemetry LLM span's input
messages) is aligned with the stored history of the same conversation up to
that point, and the differences are reported with both sides' evidence:
- **merged**: several stored messages arrived as one message;
- **re-labelled**: a stored message was sent with another role (assistant
  text sent as `user`);
- **tool calls stripped**: a stored message's tool calls (or results) were
  not in the message sent;
- **dropped**: a stored message was not sent at all;
- **changed**: a stored message was sent with other content;
- **not stored**: the request sent a message the store does not hold.

The comparison is tolerant of what apps legitimately do when they convert a
stored history into a request: a system prompt the store does not keep,
thinking concatenated into the content (dispatch's `convertAssistantMessage`),
sent as `reasoning_content`, or left out; a tool message per tool result;
tool-call arguments re-serialised; whitespace between parts. A faithful
prompt is never reported.

## Why is this bad?
The store is what the app believes the conversation is; the request is what
the model saw. In dispatch (seed 000) `load()` merged six messages of three
turns into one `user` message: the `provider.request` body of turn 3 step 1
shows the model's own earlier answers sent as user text, and no earlier tool
call at all. The model lost the structure of the conversation and wrote its
next tool call as text into its reasoning.

## Example
Stored (seq 1–6): `user` "hello", `assistant` thinking + "Hello! How can I
help you today?", `user` "Can you read some files in this project",
`assistant` thinking + text. Sent as `messages[0]`: one `user` message whose
content is all six chunks concatenated.

## Repair
Report only: fix the loader (here, `msgidx-collision` renumbers the store so
an index-grouping loader builds the true messages again).
"#,
    check,
};

/// The check needs a store and a trace: it never runs over a single
/// history; [`findings`] runs over a comparison (`rules::check_against_trace`).
fn check(_ctx: &Ctx<'_>, _out: &mut Vec<Finding>) {}

/// One divergence, gathered over every request that shows it.
struct Gathered {
    row: Row,
    sent_role: Option<Role>,
    /// (request id, request location, sent position, sent preview)
    seen: Vec<(String, Loc, Option<usize>, String)>,
    reports: Vec<Event>,
}

fn key(r: &Row, sent_role: Option<Role>, sent_preview: &str) -> String {
    match r.op {
        Op::NotStored => format!("{:?}|{:?}|{sent_preview}", r.op, sent_role),
        _ => format!("{:?}|{:?}|{:?}|{:?}", r.op, r.store, sent_role, r.stripped),
    }
}

/// The `prompt-divergence` findings of one store-against-trace comparison:
/// each kind of difference once, with every request that shows it.
pub fn findings(
    ctx: &Ctx<'_>,
    store: &Conversation,
    cmp: &ConvComparison,
    trace_path: &Path,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut gathered: Vec<(String, Gathered)> = Vec::new();
    for req in &cmp.requests {
        for (ri, r) in req.rows.iter().enumerate() {
            if !r.op.diverges() {
                continue;
            }
            let sent_msg = r.sent.and_then(|s| req.sent_messages.get(s));
            let sent_role = sent_msg.map(|m| m.role);
            let sent_preview = sent_msg.map(|m| m.preview.clone()).unwrap_or_default();
            // A not-stored message is placed after the stored message before it.
            let mut row = r.clone();
            if r.op == Op::NotStored {
                row.store = req.rows[..ri]
                    .iter()
                    .rev()
                    .find_map(|p| p.store.last().copied())
                    .into_iter()
                    .collect();
            }
            let k = key(&row, sent_role, &sent_preview);
            let entry = match gathered.iter_mut().find(|(gk, _)| *gk == k) {
                Some((_, g)) => g,
                None => {
                    gathered.push((
                        k,
                        Gathered {
                            row,
                            sent_role,
                            seen: Vec::new(),
                            reports: Vec::new(),
                        },
                    ));
                    &mut gathered.last_mut().expect("pushed").1
                }
            };
            entry.seen.push((
                req.head.request.clone(),
                req.head.location.clone(),
                r.sent,
                sent_preview,
            ));
            for e in &req.reports {
                if !entry.reports.iter().any(|x| x.loc == e.loc) {
                    entry.reports.push(e.clone());
                }
            }
        }
    }
    for (_, g) in gathered {
        out.push(divergence_finding(ctx, store, g, trace_path));
    }
    out
}

fn divergence_finding(
    ctx: &Ctx<'_>,
    store: &Conversation,
    g: Gathered,
    trace_path: &Path,
) -> Finding {
    let r = &g.row;
    let span = store_span(store, &r.store);
    let role = g.sent_role.map(|r| r.as_str()).unwrap_or("?");
    let roles_of = |ms: &[usize]| {
        let mut v: Vec<&str> = Vec::new();
        for &i in ms {
            let r = store.messages[i].role.as_str();
            if !v.contains(&r) {
                v.push(r);
            }
        }
        v.iter()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join(" and ")
    };
    let chunks = store.chunks.as_ref().map(|log| {
        log.chunks
            .iter()
            .filter(|c| r.store.contains(&c.message))
            .count()
    });
    let summary = match r.op {
        Op::Merged => {
            let what = match chunks {
                Some(n) => format!("{n} chunks, {span}"),
                None => span.clone(),
            };
            let mut s = format!(
                "{} stored messages ({what}) were sent as one `{role}` message",
                r.store.len()
            );
            if !r.relabelled.is_empty() {
                s.push_str(&format!(
                    ": {} text sent as `{role}`",
                    roles_of(&r.relabelled)
                ));
            }
            if !r.stripped.is_empty() {
                s.push_str(&format!(", tool calls {} stripped", ids(&r.stripped)));
            }
            s
        }
        Op::Relabelled => format!(
            "stored `{}` message {} ({span}) was sent as `{role}`",
            store.messages[r.store[0]].role, r.store[0]
        ),
        Op::Stripped => format!(
            "stored `{}` message {} ({span}) was sent without its tool calls {}",
            store.messages[r.store[0]].role,
            r.store[0],
            ids(&r.stripped)
        ),
        Op::Changed => format!(
            "stored `{}` message {} ({span}) was sent with other content",
            store.messages[r.store[0]].role, r.store[0]
        ),
        Op::Dropped => format!(
            "stored `{}` message {} ({span}) was not sent",
            store.messages[r.store[0]].role, r.store[0]
        ),
        Op::NotStored => match r.store.first() {
            Some(&after) => format!(
                "a `{role}` message was sent after stored message {after} ({span}) that the store does not hold"
            ),
            None => format!("a `{role}` message was sent first that the store does not hold"),
        },
        Op::Same | Op::Injected => unreachable!("not a divergence"),
    };
    // The primary record: the first re-labelled message, or where the merge
    // starts going wrong (the second message), or the message itself.
    let primary = match r.op {
        Op::Merged => r
            .relabelled
            .first()
            .copied()
            .or_else(|| r.store.get(1).copied())
            .unwrap_or(r.store[0]),
        _ => r.store.first().copied().unwrap_or(0),
    };
    let loc = store
        .messages
        .get(primary)
        .map(|m| m.loc.clone())
        .unwrap_or_else(|| g.seen[0].1.clone());
    let message = (!r.store.is_empty()).then_some(primary);
    let mut f = ctx.finding(&RULE, message, loc, summary);
    // The store's side: the first record of every stored message involved.
    for &mi in &r.store {
        let m = &store.messages[mi];
        let mut text = format!(
            "{}: stored `{}` message {mi} ({})",
            store_span(store, &[mi]),
            m.role,
            part_types(m)
        );
        if r.relabelled.contains(&mi) {
            text.push_str(&format!(", sent as `{role}`"));
        } else if r.op == Op::Dropped {
            text.push_str(", not sent");
        } else if r.op == Op::NotStored {
            text.push_str(", the sent message follows it");
        }
        f = f.label(&m.loc, text);
    }
    // Put the primary's label first.
    if let Some(pos) = f
        .labels
        .iter()
        .position(|l| store.messages.get(primary).is_some_and(|m| m.loc == l.loc))
        && pos != 0
    {
        let l = f.labels.remove(pos);
        f.labels.insert(0, l);
    }
    // The trace's side: every request that shows it.
    for (req, loc, sent, preview) in &g.seen {
        let text = match sent {
            Some(s) => format!("`{req}` sent `{role}` messages[{s}]: `{preview}`"),
            None => format!("`{req}`: not in the request"),
        };
        f = f.label_in(trace_path, loc, text);
    }
    let n = g.seen.len();
    f = f.note(format!(
        "seen in {n} recorded request{}: {}",
        if n == 1 { "" } else { "s" },
        g.seen
            .iter()
            .map(|(req, _, sent, _)| match sent {
                Some(s) => format!("`{req}` messages[{s}]"),
                None => format!("`{req}`"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if r.relabelled
        .iter()
        .any(|&i| store.messages[i].role == Role::Assistant)
    {
        f = f.note(format!(
            "the model reads its own earlier answers as `{role}` text"
        ));
    }
    if !r.stripped.is_empty() {
        f = f.note(format!(
            "the stored tool calls or results {} never reach the model: it loses every example of its own structured calls",
            ids(&r.stripped)
        ));
    }
    if r.op == Op::Dropped {
        f = f.note("the app left this stored message out of the prompt when it loaded the history");
    }
    for e in &g.reports {
        f = f
            .note(format!(
                "the trace's `{}` report before this request says the app changed the history it loaded: {}",
                e.name,
                e.summary()
            ))
            .label_in(trace_path, &e.loc, format!("`{}`: {}", e.name, e.summary()));
    }
    f
}
