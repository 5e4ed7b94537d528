use super::{Ctx, Rule, at};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};
use crate::model::PartKind;

pub static RULE: Rule = Rule {
    name: "orphan-tool-result",
    severity: Severity::Error,
    summary: "a tool result answers no earlier, still unanswered tool call",
    repair: Some("remove the result from the copy; its payload is kept verbatim in the repair log"),
    doc: r#"## What it does
Finds tool results whose id matches no earlier tool call, or whose call was
already answered by an earlier result (a call answered twice). In Claude
Code sessions, also a server tool's result (`advisor_tool_result`,
`web_search_tool_result`, …) whose `server_tool_use` is not before it in
the same message: a reply paused (`pause_turn`) after the call, whose
result came in the next reply.

## Why is this bad?
A result must answer a call in the message right before it. A stray result
usually means the call was lost (a dropped or merged assistant message), the
result was written twice on retry, or its id was rewritten.

## What providers answer
- OpenAI: `Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.`
- Anthropic: ``messages.N.content.M: unexpected `tool_use_id` found in `tool_result` blocks: toolu_…. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.``
- Anthropic (a server tool's result): ``messages.N.content.0: unexpected `tool_use_id` found in `advisor_tool_result` blocks: srvtoolu_…. Each `advisor_tool_result` block must have a corresponding `server_tool_use` block before it.``
- Gemini API: `Please ensure that function response turn comes immediately after a function call turn.` (Gemini CLI sends a stray `functionResponse` as it is, merged into the surrounding user turn; a call answered twice in the next turn is `function-response-count`)

## Example
```jsonl
{"role":"user","content":"hi"}
{"role":"tool","tool_call_id":"call_missing","content":"42"}
```

## What the apps do
goose (`fix_conversation`, on every reply) drops a response that answers no
pending request (`Removed orphaned tool response '…'`): what it says never
reaches the model, silently.

Codex (0.169.0, `remove_orphan_outputs`) drops an output whose call is not
in the history, logging `ERROR codex_core::util: Orphan function call output
for call id: call_…`: the output is lost from what it sends.

## Repair
Removes the stray result from the copy and keeps it verbatim in the repair
log, as every agent framework does. A server tool's result goes with its
`server_tool_use` (which Claude Code leaves out of the request), both to
the log. A result that answers a real call but
arrives late is not stray: see `interleaved-message`.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    server_results(ctx, out);
    let conv = ctx.conv;
    // A chained history: a result hanging off a record that is not in the
    // file is never reached by the resume, and answers no call of the file.
    if let Some(chain) = conv.chain.as_deref() {
        for r in &chain.records {
            if r.unreached != crate::model::chain::Unreached::OffBranch {
                continue;
            }
            for id in &r.stray_results {
                out.push(
                    ctx.finding(
                        &RULE,
                        None,
                        r.loc.clone(),
                        format!("tool result for `{id}` matches no tool call in the file, and the resume never reaches it"),
                    )
                    .label(&r.loc, format!("no record calls `{id}`"))
                    .notes(
                        ctx.profile()
                            .on(Pattern::OrphanToolResultOffChain)
                            .notes(None, &[]),
                    )
                    .id(id)
                    .fix(vec![crate::finding::Action::DropRecord { loc: r.loc.clone() }]),
                );
            }
        }
    }
    for stray in &ctx.pairing().strays {
        // A second answer in the turn right after a Gemini call turn:
        // `function-response-count` reports it.
        if super::function_response_count::counts(ctx, stray) {
            continue;
        }
        let (mi, pi) = stray.result;
        let msg = &conv.messages[mi];
        let PartKind::ToolResult { call_id, .. } = &msg.parts[pi].kind else {
            continue;
        };
        let loc = msg.part_loc(pi).clone();
        let f = match stray.already_answered {
            Some((cm, cp)) => {
                let call_loc = conv.messages[cm].part_loc(cp);
                ctx.finding(
                    &RULE,
                    Some(mi),
                    loc.clone(),
                    format!("tool result for `{call_id}` answers a call that already has a result"),
                )
                .label(&loc, "second result for the same call")
                .label(
                    call_loc,
                    format!("the call, already answered ({})", at(conv, cm)),
                )
            }
            None if call_id.is_empty() => ctx
                .finding(
                    &RULE,
                    Some(mi),
                    loc.clone(),
                    "tool result has no tool call id".to_string(),
                )
                .label(&loc, "no `tool_call_id`"),
            None => ctx
                .finding(
                    &RULE,
                    Some(mi),
                    loc.clone(),
                    format!("tool result for `{call_id}` matches no earlier tool call"),
                )
                .label(&loc, format!("no call `{call_id}` precedes this result")),
        };
        let resume = ctx.profile().on(Pattern::OrphanToolResult);
        let mut f = f.notes(resume.notes(None, &[("call_id", call_id.as_str())]));
        // A client that drops a result no call of the history answers
        // (Crush) sends a valid request: the severity follows it. A second
        // answer to a call stays the rule's own.
        if stray.already_answered.is_none() {
            f.severity = resume.severity_or(RULE.severity);
        }
        out.push(
            f.id(call_id)
                .fix(vec![crate::finding::Action::RemoveResult {
                    message: mi,
                    part: pi,
                }]),
        );
    }
}

/// Server tool results (Claude Code: `advisor_tool_result`,
/// `web_search_tool_result`, …) without their `server_tool_use` before
/// them in the same message of the request: the API pairs a server tool's
/// call and result within one message.
fn server_results(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    use crate::model::chain::{BlockIssue, ChainRecord};
    use crate::model::{Loc, Slot};
    let Some(chain) = ctx.conv.chain.as_deref() else {
        return;
    };
    let by_start: std::collections::HashMap<u64, &ChainRecord> = chain
        .records
        .iter()
        .filter_map(|r| match r.loc {
            Loc::Line { start, .. } => Some((start, r)),
            Loc::Row { .. } => None,
        })
        .collect();
    // The server tool blocks of each message, in order: (the record, the
    // block, its type, the id it calls or answers, it is a call).
    let blocks = |m: &crate::model::Message| -> Vec<(Loc, usize, String, String, bool)> {
        let mut v = Vec::new();
        for p in &m.parts {
            let (PartKind::Other { kind }, Some(Slot::Item("content", k)), Loc::Line { start, .. }) =
                (&p.kind, p.slot, &p.loc)
            else {
                continue;
            };
            let Some(r) = by_start.get(start) else {
                continue;
            };
            for issue in &r.issues {
                match issue {
                    BlockIssue::ServerToolUse { block, id } if *block == k => {
                        v.push((r.loc.clone(), k, kind.clone(), id.clone(), true));
                    }
                    BlockIssue::ServerToolResult { block, id } if *block == k => {
                        v.push((r.loc.clone(), k, kind.clone(), id.clone(), false));
                    }
                    _ => {}
                }
            }
        }
        v
    };
    let mut calls: std::collections::HashMap<String, (Loc, usize)> = Default::default();
    for (mi, m) in ctx.conv.messages.iter().enumerate() {
        let mut here: std::collections::HashSet<String> = Default::default();
        for (loc, block, kind, id, call) in blocks(m) {
            if call {
                here.insert(id.clone());
                calls.entry(id).or_insert((loc.clone(), block));
                continue;
            }
            if here.contains(&id) {
                continue;
            }
            let advisor = kind == "advisor_tool_result";
            let pattern = if advisor {
                Pattern::OrphanServerToolResultAdvisor
            } else {
                Pattern::OrphanServerToolResult
            };
            let resume = ctx.profile().on(pattern);
            let line = loc.line().unwrap_or(0);
            let mut actions = vec![crate::finding::Action::DropBlock {
                loc: loc.clone(),
                block,
            }];
            let (what, call_at) = match calls.get(&id) {
                Some((cl, cb)) => {
                    actions.insert(
                        0,
                        crate::finding::Action::DropBlock {
                            loc: cl.clone(),
                            block: *cb,
                        },
                    );
                    (
                        format!(
                            "its `server_tool_use` is in an earlier message (line {})",
                            cl.line().unwrap_or(0)
                        ),
                        Some(cl.clone()),
                    )
                }
                None => ("no `server_tool_use` calls it".to_string(), None),
            };
            let mut f = ctx
                .finding(
                    &RULE,
                    Some(mi),
                    loc.clone(),
                    format!(
                        "the `{kind}` for `{id}` in content[{block}] on line {line} has no `server_tool_use` before it in its message ({what}): {}",
                        resume.says("the API refuses the request", &[])
                    ),
                )
                .label(&loc, format!("`{kind}` for `{id}`"));
            if let Some(cl) = &call_at {
                f = f.label(cl, "the `server_tool_use`, in another message");
            }
            let mut f = f
                .notes(ctx.notes(
                    &resume,
                    Some(
                        "the API answers ``messages.N.content.M: unexpected `tool_use_id` found in `…_tool_result` blocks: srvtoolu_…. Each `…_tool_result` block must have a corresponding `server_tool_use` block before it.``, on every resume",
                    ),
                    &[],
                ))
                .id(&id)
                .fix(actions);
            f.severity = resume.severity_or(RULE.severity);
            out.push(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::*;

    #[test]
    fn result_without_call() {
        let c = conv(crate::model::Dialect::OpenAi)
            .user("hi")
            .result("call_missing")
            .build();
        let f = rules_of(&c, "orphan-tool-result");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].ids, vec!["call_missing"]);
        assert!(f[0].summary.contains("matches no earlier tool call"));
    }

    #[test]
    fn call_answered_twice() {
        let c = conv(crate::model::Dialect::OpenAi)
            .user("hi")
            .calls(&["x"])
            .result("x")
            .result("x")
            .build();
        let f = rules_of(&c, "orphan-tool-result");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].message, Some(3));
        assert!(f[0].summary.contains("already has a result"));
        assert!(rules_of(&c, "orphan-tool-call").is_empty());
    }

    #[test]
    fn result_before_its_call_is_stray() {
        let c = conv(crate::model::Dialect::OpenAi)
            .user("hi")
            .result("x")
            .calls(&["x"])
            .build();
        assert_eq!(rules_of(&c, "orphan-tool-result").len(), 1);
        assert_eq!(rules_of(&c, "orphan-tool-call").len(), 1);
    }
}
