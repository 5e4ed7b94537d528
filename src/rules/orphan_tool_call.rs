use super::{Ctx, Rule, at};
use crate::finding::{Finding, Severity};
use crate::model::Role;

pub static RULE: Rule = Rule {
    name: "orphan-tool-call",
    severity: Severity::Error,
    summary: "a tool call has no result before the next non-tool message or the end",
    repair: Some(
        "insert a clearly marked placeholder result right after the call (or drop the call with `--orphan-calls=drop`)",
    ),
    doc: r#"## What it does
Finds tool calls that no tool result answers: the assistant asked for a tool,
and the history moves on to the next user or assistant message (or ends)
without the result.

## Why is this bad?
Providers require every tool call to be answered before the conversation goes
on. A history with an unanswered call is rejected on every resume: the saved
conversation is bricked until someone edits it. The usual cause is a crash or
kill between persisting the assistant message and persisting the tool results
(kimi-cli #2336, killed under memory pressure), or a loop that never persisted
the result message at all (gbrain's gateway loop).

## What providers answer
- OpenAI: `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: …`
- Anthropic: ``messages.N: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_…. Each `tool_use` block must have a corresponding `tool_result` block in the next message.``
- Vercel AI SDK: `Tool results are missing for tool calls …` (`MissingToolResultsError`)

## Example
```jsonl
{"role":"assistant","tool_calls":[{"type":"function","id":"Shell:206","function":{"name":"Shell","arguments":"{\"command\":\"ls\"}"}}]}
{"role":"user","content":"continue"}
```

## Repair
Inserts a result immediately after the call's message (merged into an
existing tool-result message when only some parallel calls are unanswered):
a clearly marked placeholder by default, as LiteLLM, Codex and kimi-cli do.
The placeholder is invented content, says so in the repair log, and can be
refused with `--no-synthesize`; `--orphan-calls=drop` removes the unanswered
call instead, as the OpenAI Agents SDK does. A result that exists but arrives
late is not an orphan: see `interleaved-message`.

In a message table whose stored indices skip the message right after the
call (gbrain, seed 003), the call is reported by `index-gap` instead, which
names it and rebuilds the lost result message from the tool execution
records; it is reported here only when `index-gap` does not run.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    let pairing = ctx.pairing();
    for &(mi, pi) in &pairing.unanswered {
        // A tool-result message lost from a message table: `index-gap`
        // names this call, with the execution that can rebuild its result.
        if ctx.gap_explains(mi, pi) {
            continue;
        }
        let msg = &conv.messages[mi];
        let crate::model::PartKind::ToolCall { id, name, .. } = &msg.parts[pi].kind else {
            continue;
        };
        let window_end = pairing.window_end.get(&mi).copied().unwrap_or(mi);
        let next = window_end + 1;
        let (summary, next_label) = match conv.messages.get(next) {
            Some(n) => (
                format!(
                    "tool call `{id}` (`{name}`) has no result before the next {} message",
                    role_word(n.role)
                ),
                Some((next, n)),
            ),
            None => (
                format!("tool call `{id}` (`{name}`) has no result: the history ends after it"),
                None,
            ),
        };
        let mut f = ctx
            .finding(&RULE, Some(mi), msg.part_loc(pi).clone(), summary)
            .label(
                msg.part_loc(pi),
                format!("tool call `{id}` is never answered"),
            )
            .id(id);
        let claude = conv.source.dialect == crate::model::Dialect::ClaudeCode;
        if let Some((pos, n)) = next_label {
            f = f.label(
                &n.loc,
                format!("the conversation moves on here ({})", at(conv, pos)),
            );
            f = if claude {
                f.note("Claude Code 2.1.x removes the unanswered call from the request without a word: the call is lost from the history the model sees")
            } else {
                f.note("providers reject the history: every tool call must be answered before the next message")
            };
        } else if claude {
            f.severity = crate::finding::Severity::Warning;
            f = f
                .note("a session whose last record is a tool call may simply be running: the tool has not returned yet")
                .note("on resume, Claude Code 2.1.x answers it with an `is_error` tool_result `[Tool call interrupted: the session ended before this call's result was recorded, so its outcome is unknown. …]` and an assistant `No response requested.`, and appends both to the session file");
        } else {
            f = f.note("a crash or kill after the call was persisted leaves this tail; every resume sends it unanswered");
        }
        out.push(f.unsafe_fix(vec![crate::finding::Action::AnswerCall {
            message: mi,
            part: pi,
        }]));
    }
}

fn role_word(role: Role) -> &'static str {
    role.as_str()
}

#[cfg(test)]
mod tests {
    use crate::model::Role;
    use crate::rules::testutil::*;

    #[test]
    fn kimi_2336_orphan_followed_by_user() {
        let c = conv(crate::model::Dialect::Kimi)
            .user("run it")
            .calls(&["Shell:206"])
            .user("hello?")
            .build();
        let f = rules_of(&c, "orphan-tool-call");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].ids, vec!["Shell:206"]);
        assert_eq!(f[0].message, Some(1));
        assert!(
            f[0].summary.contains("next user message"),
            "{}",
            f[0].summary
        );
    }

    #[test]
    fn parallel_calls_with_one_answer_missing() {
        let c = conv(crate::model::Dialect::OpenAi)
            .user("go")
            .calls(&["a", "b", "c"])
            .result("a")
            .result("c")
            .assistant("done")
            .build();
        let f = rules_of(&c, "orphan-tool-call");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].ids, vec!["b"]);
    }

    #[test]
    fn orphan_at_the_tail() {
        let c = conv(crate::model::Dialect::Anthropic)
            .user("go")
            .calls(&["toolu_1"])
            .build();
        let f = rules_of(&c, "orphan-tool-call");
        assert_eq!(f.len(), 1);
        assert!(f[0].summary.contains("history ends"));
    }

    #[test]
    fn late_result_is_not_an_orphan() {
        let c = conv(crate::model::Dialect::Anthropic)
            .user("go")
            .calls(&["t1"])
            .user("reflect")
            .result("t1")
            .build();
        assert!(rules_of(&c, "orphan-tool-call").is_empty());
        assert!(rules_of(&c, "orphan-tool-result").is_empty());
        assert_eq!(rules_of(&c, "interleaved-message").len(), 1);
    }

    #[test]
    fn answered_calls_are_fine_even_with_reused_ids() {
        let c = conv(crate::model::Dialect::OpenAi)
            .user("go")
            .calls(&["x"])
            .result("x")
            .msg(Role::User, vec![text_part("again")])
            .calls(&["x"])
            .result("x")
            .build();
        assert!(rules_of(&c, "orphan-tool-call").is_empty());
        assert!(rules_of(&c, "orphan-tool-result").is_empty());
        assert_eq!(rules_of(&c, "duplicate-tool-call-id").len(), 1);
    }
}
