use std::collections::{BTreeMap, BTreeSet};

use super::{Ctx, Rule, at};
use crate::finding::{Finding, Severity};
use crate::model::PartKind;

pub static RULE: Rule = Rule {
    name: "interleaved-message",
    severity: Severity::Error,
    summary: "a non-tool message sits between a tool call and its result",
    repair: Some("move the interleaved messages after the results"),
    doc: r#"## What it does
Finds messages that sit between an assistant's tool calls and the results
that answer them. The results exist; they just arrive too late.

## Why is this bad?
Providers require the results to follow the call directly. zeph (seed 004)
ran self-reflection inside its tool-result loop, which pushed a user prompt
and an assistant answer between `tool_use` and `tool_result`: OpenAI answered
400 and Anthropic-style context assembly downgraded the orphaned calls to
text, silently losing the results.

## What providers answer
- OpenAI: `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: …`
- Anthropic: ``messages.N: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_…. Each `tool_use` block must have a corresponding `tool_result` block in the next message.``

Claude Code (2.1.330, measured) sends no such request: it answers the
calls with `is_error` results `[Tool result missing due to internal
error]` right after them and leaves the real results out of the request,
so what the tools returned is silently lost.

Not checked in Codex rollouts: the Responses API Codex uses pairs an output
with its call by `call_id` wherever it follows it.

## Example
```jsonl
{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"web_scrape","input":{}}]}
{"role":"user","content":"You attempted to help..."}
{"role":"assistant","content":"reflection"}
{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"HTTP 403","is_error":true}]}
```

## Repair
Moves the interleaved messages after the results, so the call is answered
directly and nothing is lost. Safe: no content changes, only order.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    // The Responses API pairs an output with its call by `call_id`
    // wherever it comes after it (a client may insert the `"aborted"`
    // output of an unanswered call right after that call, in the middle of
    // a parallel batch); the order is not an error there.
    if ctx.profile().provider == crate::finding::profile::Provider::OpenAiResponses {
        return;
    }
    let pairing = ctx.pairing();
    // Late pairs grouped by the message holding the calls.
    let mut by_call_msg: BTreeMap<usize, Vec<&crate::model::pairing::Pair>> = BTreeMap::new();
    for p in pairing.pairs.iter().filter(|p| p.late) {
        by_call_msg.entry(p.call.0).or_default().push(p);
    }
    for (cm, pairs) in by_call_msg {
        let window_end = pairing.window_end.get(&cm).copied().unwrap_or(cm);
        let last_result = pairs.iter().map(|p| p.result.0).max().unwrap_or(cm);
        let between: Vec<usize> = (window_end + 1..last_result)
            .filter(|&i| !conv.messages[i].carries_results())
            .collect();
        let Some(&first) = between.first() else {
            continue;
        };
        let ids: Vec<&str> = pairs
            .iter()
            .filter_map(|p| match &conv.messages[p.call.0].parts[p.call.1].kind {
                PartKind::ToolCall { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        let n = between.len();
        let summary = format!(
            "{n} message{} between tool call{} {} and {} result{}",
            if n == 1 { " sits" } else { "s sit" },
            if ids.len() == 1 { "" } else { "s" },
            ids.iter()
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if ids.len() == 1 { "its" } else { "their" },
            if ids.len() == 1 { "" } else { "s" },
        );
        let call_msg = &conv.messages[cm];
        let mut f = ctx
            .finding(
                &RULE,
                Some(first),
                conv.messages[first].loc.clone(),
                summary,
            )
            .label(
                &call_msg.loc,
                format!(
                    "tool call{} here ({})",
                    if ids.len() == 1 { "" } else { "s" },
                    at(conv, cm)
                ),
            );
        for &i in &between {
            let m = &conv.messages[i];
            f = f.label(&m.loc, format!("interleaved `{}` message", m.role));
        }
        let mut result_msgs: Vec<usize> = pairs.iter().map(|p| p.result.0).collect();
        result_msgs.dedup();
        for r in result_msgs {
            f = f.label(&conv.messages[r].loc, "the result arrives here");
        }
        f = f.note("the results exist: this is not an orphan call, the order is wrong");
        f = f.notes(
            ctx.profile()
                .on(crate::finding::profile::Pattern::InterleavedMessage)
                .notes(None, &[]),
        );
        for id in ids {
            f = f.id(id);
        }
        // A moved message takes the results of its own calls that sit in
        // the window with it, so that they still follow it; a message that
        // answers both a moved call and one that stays cannot be split, and
        // the finding is then only reported.
        let mut moving = between.clone();
        let mut splits = false;
        for r in window_end + 1..last_result {
            if !conv.messages[r].carries_results() {
                continue;
            }
            let callers: BTreeSet<bool> = pairing
                .pairs
                .iter()
                .filter(|p| p.result.0 == r)
                .map(|p| between.contains(&p.call.0))
                .collect();
            match (callers.contains(&true), callers.contains(&false)) {
                (true, false) => moving.push(r),
                (true, true) => splits = true,
                _ => {}
            }
        }
        moving.sort_unstable();
        if splits {
            out.push(f.note(
                "not repaired: a message in the window answers both a moved message and the calls it interleaves",
            ));
            continue;
        }
        out.push(f.fix(vec![crate::finding::Action::MoveAfter {
            messages: moving,
            after: last_result,
        }]));
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::*;

    #[test]
    fn zeph_reflection_between_use_and_result() {
        let c = conv(crate::model::Dialect::Anthropic)
            .user("scrape")
            .calls(&["id-1", "id-2"])
            .user("You attempted to help...")
            .assistant("reflection")
            .result("id-1")
            .result("id-2")
            .build();
        let f = rules_of(&c, "interleaved-message");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].message, Some(2));
        assert_eq!(f[0].ids, vec!["id-1", "id-2"]);
        assert!(f[0].summary.starts_with("2 messages sit between"));
        assert!(rules_of(&c, "orphan-tool-call").is_empty());
        assert!(rules_of(&c, "orphan-tool-result").is_empty());
    }

    #[test]
    fn partial_answer_then_interleave_then_rest() {
        let c = conv(crate::model::Dialect::OpenAi)
            .user("go")
            .calls(&["a", "b"])
            .result("a")
            .user("hey")
            .result("b")
            .build();
        let f = rules_of(&c, "interleaved-message");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].ids, vec!["b"]);
        assert_eq!(f[0].message, Some(3));
    }

    #[test]
    fn a_moved_message_takes_its_own_results_with_it() {
        let c = conv(crate::model::Dialect::OpenAi)
            .user("go")
            .calls(&["a"])
            .calls(&["b"])
            .result("b")
            .result("a")
            .build();
        let f = rules_of(&c, "interleaved-message");
        assert_eq!(f.len(), 1);
        let fix = f[0].fix.as_ref().unwrap();
        assert!(matches!(
            &fix.actions[..],
            [crate::finding::Action::MoveAfter { messages, after: 4 }] if messages == &[2, 3]
        ));
    }
}
