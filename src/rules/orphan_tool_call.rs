use super::{Ctx, Rule, at};
use crate::finding::profile::Pattern;
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
- Gemini API: `Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.` (Gemini CLI sends the call unanswered: it repairs nothing on resume by default)

## Example
```jsonl
{"role":"assistant","tool_calls":[{"type":"function","id":"Shell:206","function":{"name":"Shell","arguments":"{\"command\":\"ls\"}"}}]}
{"role":"user","content":"continue"}
```

## What the apps do
- opencode keeps call and result in one `tool` part; a part left `pending` or
  `running` (the app was stopped mid-call) is sent on every load as the call
  followed by the error result `[Tool execution was interrupted]`, patched in
  memory and never written back. Reported as a **warning** for opencode
  databases: the app copes, any other reader of the database sees an
  unanswered call.
- goose (`fix_conversation`, on every reply) **drops** the unanswered request
  (`Removed orphaned tool request '…'`), and the assistant message with it
  when that message ends the history (`Removed trailing assistant message`):
  the turn is silently lost from the model's view. An error.
- Cursor is closed source; what it sends for a tool bubble that never
  completed is not known. An error.
- Codex (0.169.0) answers an unanswered call itself when it resumes a
  rollout: it inserts `function_call_output{output:"aborted"}` (or
  `custom_tool_call_output`) right after the call, in memory only, when
  no output anywhere in the rollout has the call's id. The request is
  valid, so in a Codex rollout this is a **warning**: what is lost is the
  output that was never recorded. A rollout whose last record is a call
  may belong to a session that is still running. A call whose id has an
  output elsewhere is a reused id, sent as it is: see
  `duplicate-tool-call-id`.

## Repair
Inserts a result immediately after the call's message (merged into an
existing tool-result message when only some parallel calls are unanswered):
a clearly marked placeholder by default, as LiteLLM, Codex and kimi-cli do.
The placeholder is invented content, says so in the repair log, and can be
refused with `--no-synthesize`; `--orphan-calls=drop` removes the unanswered
call instead, as the OpenAI Agents SDK does. In an opencode database the
part itself is settled in the `error` state opencode writes for an aborted
tool (`Tool execution aborted`, `metadata.interrupted`); in goose's
`sessions.db` a `user` row answering the call is inserted after it (or the
request is removed from its row, as goose itself does, with `drop`). A
result that exists but arrives late is not an orphan: see
`interleaved-message`.

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
    // The ids with an output anywhere in the history, gathered once (the
    // history is scanned only when a call is unanswered).
    let outputs: std::cell::OnceCell<std::collections::HashSet<&str>> = std::cell::OnceCell::new();
    for &(mi, pi) in &pairing.unanswered {
        // A tool-result message lost from a message table: `index-gap`
        // names this call, with the execution that can rebuild its result.
        if ctx.gap_explains(mi, pi) {
            continue;
        }
        // Left unanswered by the app on purpose: `trailing-completion-call`.
        if conv
            .by_design
            .iter()
            .any(|b| (b.message, b.part) == (mi, pi))
        {
            continue;
        }
        let msg = &conv.messages[mi];
        let crate::model::PartKind::ToolCall { id, name, .. } = &msg.parts[pi].kind else {
            continue;
        };
        // The same call (id, name and arguments) recorded twice, the later
        // copy answered after both: the history holds one call twice, and
        // its result answers it. `duplicate-tool-call-id` reports the repeat (its
        // repair drops it); a placeholder here would give the id a second
        // result. Codex answers a call on resume only when no output
        // anywhere in the history has its id: any such call is left as it
        // is, and sent.
        let answered_later = pairing.pairs.iter().any(|p| {
            p.call > (mi, pi)
                && p.result > (mi, pi)
                && msg.parts[pi].repeats_call(&conv.messages[p.call.0].parts[p.call.1])
        });
        // A client that pairs outputs by id anywhere (Codex) answers a
        // call on resume only when no output anywhere has its id: any such
        // call is sent as it is.
        let output_elsewhere = ctx.profile().pairs_outputs_by_id
            && outputs
                .get_or_init(|| {
                    conv.messages
                        .iter()
                        .flat_map(|m| m.tool_results().map(|(_, call_id, _, _)| call_id))
                        .collect()
                })
                .contains(id.as_str());
        if answered_later || output_elsewhere {
            continue;
        }
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
        let (pattern, provider) = match next_label {
            Some(_) => (
                Pattern::OrphanToolCall,
                "providers reject the history: every tool call must be answered before the next message",
            ),
            None => (
                Pattern::OrphanToolCallAtEnd,
                "a crash or kill after the call was persisted leaves this tail; every resume sends it unanswered",
            ),
        };
        let resume = ctx.profile().on(pattern);
        if let Some((pos, n)) = next_label.filter(|_| resume.cites_context) {
            f = f.label(
                &n.loc,
                format!("the conversation moves on here ({})", at(conv, pos)),
            );
        }
        f.severity = resume.severity_or(RULE.severity);
        let vars = [("id", id.as_str()), ("output", output_item(msg, pi))];
        for note in ctx.notes(&resume, Some(provider), &vars) {
            f = f.note(note);
        }
        out.push(f.unsafe_fix(vec![crate::finding::Action::AnswerCall {
            message: mi,
            part: pi,
        }]));
    }
}

/// The output item that answers the call at `pi` in the Responses API
/// (`{output}` in a profile's note).
fn output_item(msg: &crate::model::Message, pi: usize) -> &'static str {
    match msg.parts[pi].slot {
        Some(crate::model::Slot::Whole("custom_tool_call")) => "custom_tool_call_output",
        Some(crate::model::Slot::Whole("tool_search_call")) => "tool_search_output",
        _ => "function_call_output",
    }
}

fn role_word(role: Role) -> &'static str {
    role.as_str()
}

#[cfg(test)]
mod tests {
    use crate::model::Role;
    use crate::rules::testutil::*;

    /// The same call (id, name, arguments) recorded twice and answered
    /// after the second copy is not unanswered (`duplicate-tool-call-id`
    /// reports the repeat); an id used again by a later call, after the
    /// first was answered, leaves that later call an orphan.
    #[test]
    fn a_repeated_call_is_answered_by_its_result() {
        use crate::model::Role::Assistant;
        let c = conv(crate::model::Dialect::Codex)
            .user("go")
            .msg(Assistant, vec![call("t", "ls", "{}")])
            .msg(Assistant, vec![call("t", "ls", "{}")])
            .result("t")
            .assistant("done")
            .build();
        assert!(rules_of(&c, "orphan-tool-call").is_empty());
        let c = conv(crate::model::Dialect::OpenAi)
            .user("go")
            .msg(Assistant, vec![call("t", "ls", "{}")])
            .result("t")
            .msg(Assistant, vec![call("t", "ls", "{}")])
            .user("next")
            .build();
        let f = rules_of(&c, "orphan-tool-call");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].message, Some(3));
        // Codex answers a call itself only when no output anywhere has its
        // id: such a later call is sent as it is, no orphan to Codex.
        let c = conv(crate::model::Dialect::Codex)
            .user("go")
            .msg(Assistant, vec![call("t", "ls", "{}")])
            .result("t")
            .msg(Assistant, vec![call("t", "cat", "{}")])
            .user("next")
            .build();
        assert!(rules_of(&c, "orphan-tool-call").is_empty());
        assert_eq!(rules_of(&c, "duplicate-tool-call-id").len(), 1);
    }

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
