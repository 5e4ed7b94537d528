use std::collections::BTreeMap;

use super::{Ctx, Rule, at};
use crate::finding::profile::{Pattern, Provider};
use crate::finding::{Finding, Severity};
use crate::model::pairing::{PartRef, Stray};
use crate::model::{Message, PartKind, Role};

pub static RULE: Rule = Rule {
    name: "function-response-count",
    severity: Severity::Error,
    summary: "a Gemini function-call turn is followed by more function responses than it has calls",
    repair: Some(
        "remove the extra responses from the copy, keeping the first answer to each call; the removed ones go to the repair log",
    ),
    doc: r#"## What it does
Gemini histories only. After a model turn with N `functionCall` parts, the
next turn must hold exactly N `functionResponse` parts. This rule finds a
call answered more than once in that turn: the count no longer matches.
(A call with no response is `orphan-tool-call`; a response with no call,
`orphan-tool-result`.)

Turns are counted as Gemini CLI sends them: adjacent records of the same
role are merged into one turn (`coalesceConsecutiveRoles`). A response
Gemini CLI records twice by design, inside the call's `toolCalls[].result`
and again as its own `user` record (#26939), is one response: only two
response *records* for one call count.

## Why is this bad?
The Gemini API rejects the whole request, on every resume: the session is
stuck until the history is edited. Gemini CLI writes this history itself:
since #26939 each result is stored twice, and on resume
`convertSessionToClientHistory` emits both copies, then persists them as two
`user` records in a `$set.messages` line (#29365, still in 0.61.0); every
later resume keeps both.

## What providers answer
- Gemini API (400 INVALID_ARGUMENT): `Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.` (gemini-cli #5443, #13292, #29365)

## Example
```jsonl
{"$set":{"messages":[{"id":"u1","type":"user","content":[{"text":"Show me src/main.ts"}]},{"id":"g1","type":"gemini","content":[{"functionCall":{"id":"read_file_1","name":"read_file","args":{}}}]},{"id":"g1_response","type":"user","content":[{"functionResponse":{"id":"read_file_1","name":"read_file","response":{"output":"…"}}}]},{"id":"u2","type":"user","content":[{"functionResponse":{"id":"read_file_1","name":"read_file","response":{"output":"…"}}}]}]}}
```

## Repair
Removes every response after the first for the same call from the copy
(the record goes when nothing else is left in it), and keeps each removed
response verbatim in the repair log. Safe: nothing is invented.
"#,
    check,
};

/// Turn numbers as Gemini sends them: adjacent same-role messages merged.
pub(super) fn turns(messages: &[Message]) -> Vec<usize> {
    let mut out = Vec::with_capacity(messages.len());
    let mut turn = 0;
    // Tool results travel in `user` turns.
    let side = |m: &Message| match m.role {
        Role::Tool => Role::User,
        r => r,
    };
    for (i, m) in messages.iter().enumerate() {
        if i > 0 && side(&messages[i - 1]) != side(m) {
            turn += 1;
        }
        out.push(turn);
    }
    out
}

/// A second answer to a call, in the turn right after the call's turn of
/// a Gemini history: this rule reports it (and `orphan-tool-result` does
/// not, when this rule runs).
pub(super) fn counts(ctx: &Ctx<'_>, stray: &Stray) -> bool {
    duplicate_of(ctx, stray).is_some()
}

fn duplicate_of(ctx: &Ctx<'_>, stray: &Stray) -> Option<PartRef> {
    if ctx.profile().provider != Provider::Gemini || !ctx.runs(&RULE) {
        return None;
    }
    let call = stray.already_answered?;
    let turn = ctx.turns();
    (turn[stray.result.0] == turn[call.0] + 1).then_some(call)
}

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    // Turns of function calls and responses are the Gemini API's.
    if ctx.profile().provider != Provider::Gemini {
        return;
    }
    let turn = ctx.turns();
    // Duplicates grouped by the turn of the calls they answer again.
    let mut by_turn: BTreeMap<usize, Vec<(PartRef, PartRef)>> = BTreeMap::new();
    for stray in &ctx.pairing().strays {
        if let Some(call) = duplicate_of(ctx, stray) {
            by_turn
                .entry(turn[call.0])
                .or_default()
                .push((call, stray.result));
        }
    }
    if by_turn.is_empty() {
        return;
    }
    // The calls and the responses of each turn, counted once (a turn per
    // duplicate, each counted over every message, was quadratic).
    let turns = turn.last().map_or(0, |t| t + 1);
    let (mut calls_in, mut responses_in) = (vec![0usize; turns + 1], vec![0usize; turns + 1]);
    for (m, &t) in conv.messages.iter().zip(turn) {
        calls_in[t] += m.tool_calls().count();
        responses_in[t] += m.tool_results().count();
    }
    for (t, dups) in by_turn {
        let calls = calls_in[t];
        let responses = responses_in[t + 1];
        let (first_mi, first_pi) = dups[0].1;
        let first = &conv.messages[first_mi];
        let mut ids: Vec<&str> = Vec::new();
        for ((cm, cp), _) in &dups {
            if let PartKind::ToolCall { id, .. } = &conv.messages[*cm].parts[*cp].kind
                && !ids.contains(&id.as_str())
            {
                ids.push(id);
            }
        }
        let (cm0, cp0) = dups[0].0;
        let summary = format!(
            "the model turn at {} makes {calls} function call{} but the turn after it sends {responses} function responses: {} answered more than once",
            at(conv, cm0),
            if calls == 1 { "" } else { "s" },
            ids.iter()
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", "),
        );
        let mut f = ctx.finding(
            &RULE,
            Some(first_mi),
            first.part_loc(first_pi).clone(),
            summary,
        );
        let mut actions = Vec::new();
        for ((cm, cp), (rm, rp)) in &dups {
            let PartKind::ToolCall { id, .. } = &conv.messages[*cm].parts[*cp].kind else {
                continue;
            };
            f = f.label(
                conv.messages[*rm].part_loc(*rp),
                format!(
                    "another response for `{id}` ({}): the call is answered already",
                    at(conv, *rm)
                ),
            );
            actions.push(crate::finding::Action::RemoveResult {
                message: *rm,
                part: *rp,
            });
        }
        // The call turn last: a renderer that shows one label per line
        // keeps the duplicate.
        f = f.label(
            conv.messages[cm0].part_loc(cp0),
            format!(
                "the call turn ({}): {calls} function call{}",
                at(conv, cm0),
                if calls == 1 { "" } else { "s" }
            ),
        );
        for id in &ids {
            f = f.id(id);
        }
        f = f.notes(ctx.profile().on(Pattern::FunctionResponseCount).notes(
            Some("sent as stored, the Gemini API rejects the request: `Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.`"),
            &[],
        ));
        out.push(f.fix(actions));
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Role;
    use crate::rules::testutil::*;

    #[test]
    fn a_call_answered_twice_in_the_next_turn() {
        let c = conv(crate::model::Dialect::GeminiCli)
            .user("show it")
            .calls(&["read_file_1"])
            .msg(Role::User, vec![result("read_file_1", "ok", None)])
            .msg(Role::User, vec![result("read_file_1", "ok", None)])
            .assistant("here")
            .build();
        let f = rules_of(&c, "function-response-count");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].message, Some(3));
        assert!(
            f[0].summary.contains("1 function call but"),
            "{}",
            f[0].summary
        );
        assert!(rules_of(&c, "orphan-tool-result").is_empty());
    }

    #[test]
    fn other_dialects_keep_orphan_tool_result() {
        let c = conv(crate::model::Dialect::OpenAi)
            .user("show it")
            .calls(&["x"])
            .result("x")
            .result("x")
            .build();
        assert!(rules_of(&c, "function-response-count").is_empty());
        assert_eq!(rules_of(&c, "orphan-tool-result").len(), 1);
    }

    #[test]
    fn a_late_second_answer_is_a_stray_not_a_count() {
        let c = conv(crate::model::Dialect::GeminiCli)
            .user("show it")
            .calls(&["x"])
            .msg(Role::User, vec![result("x", "ok", None)])
            .assistant("done")
            .msg(Role::User, vec![result("x", "ok", None)])
            .build();
        assert!(rules_of(&c, "function-response-count").is_empty());
        assert_eq!(rules_of(&c, "orphan-tool-result").len(), 1);
    }
}
