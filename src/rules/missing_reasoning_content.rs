use super::{Ctx, Rule, at};
use crate::finding::profile::{Pattern, Provider};
use crate::finding::{Finding, Severity};
use crate::model::{Conversation, Message, PartKind, Role};

pub static RULE: Rule = Rule {
    name: "missing-reasoning-content",
    severity: Severity::Error,
    summary: "an assistant message of a thinking-mode history is stored without the reasoning its provider requires back (DeepSeek's `reasoning_content`)",
    repair: None,
    doc: r#"## What it does
Finds an assistant message stored without its reasoning (no thinking part,
no `reasoning_content`, not even an empty one) in a user turn where the
model called tools, in a history that was in thinking mode.

DeepSeek's thinking mode (DeepSeek V4, since 2026-04; thinking is on by
default) requires it back. Its guide
(https://api-docs.deepseek.com/guides/thinking_mode, "Input and Output
Parameters"):

> Between two `user` messages, if the model did not perform a tool call,
> the intermediate `assistant`'s `reasoning_content` does not need to
> participate in the context concatenation. If passed to the API in
> subsequent turns, it will be ignored.
>
> Between two `user` messages, if the model performed a tool call, the
> intermediate `assistant`'s `reasoning_content` must participate in the
> context concatenation and must be passed back to the API in all
> subsequent user interaction turns.

So every assistant message of a user turn with tool calls, in any turn
of the history, not only the current one. The API checks that the field
is there, not what it says: DeepSeek itself answers some tool-call steps
with no `reasoning_content` at all and then refuses them on replay
(QwenLM/qwen-code#3729), and the clients' fix, replaying an empty
`reasoning_content`, is taken (Qwen Code 0.15.5, pi 0.70.1;
NousResearch/hermes-agent#14941, tested on deepseek-v4-flash). A message
whose field is stored empty is therefore not reported. A text-only reply
between two tool-call steps of one user turn is refused too
(hermes-agent#14941), as the guide's scope says; reports that the API
wants the field on every assistant message of a thinking-mode history,
in turns without tool calls as well, are not what the guide says, and
such messages are not reported.

The evidence that the history was in thinking mode, which the finding
names:
- the store names the model of the message, and it is a DeepSeek model
  (its name holds `deepseek`; R1 builds served elsewhere excepted), and
  either other assistant messages of the history carry reasoning or the
  model is `deepseek-reasoner` (thinking mode only): an error, what the
  API answers;
- the store names no model, it is a Chat Completions log that keeps the
  `reasoning_content` field (sent as stored), and other assistant
  messages of the history carry reasoning: a warning for each message
  with tool calls and no reasoning. Which provider the history
  goes to is not in it: DeepSeek and Moonshot's Kimi thinking models
  refuse it, providers that do not require the reasoning back take it.

Not reported: a history with no reasoning anywhere (thinking mode off,
or a model that does not think), a model the store names that is not
DeepSeek's (its provider is not known to require the reasoning back),
and turns without tool calls.

## Why is this bad?
Every resume of the session is refused until the message is sent with a
`reasoning_content`: the user sees the same 400 on each prompt (Qwen Code
#3579 and #3658, Crush #2754, pi #3636, opencode #24083 and #24722). The
reasoning itself is lost: the store never kept it.

## What providers answer
- DeepSeek (Chat Completions, 400): ``The `reasoning_content` in the thinking mode must be passed back to the API.``
- DeepSeek (Anthropic-compatible endpoint, 400): ``The `content[].thinking` in the thinking mode must be passed back to the API.``
- Moonshot, Kimi thinking models (400): `thinking is enabled but reasoning_content is missing in assistant tool call message at index N`

## Example
```jsonl
{"role":"user","content":"List the files"}
{"role":"assistant","content":null,"reasoning_content":"I should run ls.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"shell","arguments":"{\"command\":\"ls\"}"}}]}
{"role":"tool","tool_call_id":"call_1","content":"a.txt"}
{"role":"assistant","content":null,"tool_calls":[{"id":"call_2","type":"function","function":{"name":"shell","arguments":"{\"command\":\"cat a.txt\"}"}}]}
```

## Repair
None: the reasoning is the model's and is not in the store. A client
that replays an empty `reasoning_content` on such messages heals it on
its own (each profile says which ones do, and from which version); a
copy that must be sent as stored can be given `"reasoning_content": ""`
by hand, which the API takes.
"#,
    check,
};

/// What a model's name says about its thinking mode on DeepSeek's API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeepSeek {
    /// `deepseek-reasoner`: every request thinks.
    Always,
    /// A DeepSeek model whose thinking mode is a request option (on by
    /// default for V4).
    Maybe,
}

/// Whether `model` names a model of DeepSeek's API (as Qwen Code picks
/// its DeepSeek provider by the name: it holds `deepseek`). R1 builds
/// served by others (`deepseek-r1:14b`) answer without this check: left
/// out.
fn deepseek(model: &str) -> Option<DeepSeek> {
    let m = model.to_ascii_lowercase();
    if !m.contains("deepseek") || m.contains("-r1") || m.contains("_r1") {
        return None;
    }
    Some(if m.contains("deepseek-reasoner") {
        DeepSeek::Always
    } else {
        DeepSeek::Maybe
    })
}

/// Whether a message carries reasoning: a thinking part with text, or a
/// reasoning field stored empty.
fn reasons(conv: &Conversation, pos: usize, m: &Message) -> bool {
    m.parts
        .iter()
        .any(|p| matches!(&p.kind, PartKind::Thinking { text } if !text.is_empty()))
        || conv
            .reasoning
            .as_deref()
            .is_some_and(|r| r.empty.contains(&pos))
}

/// Whether a message carries reasoning text (the evidence of thinking mode).
fn thinks(m: &Message) -> bool {
    m.role == Role::Assistant
        && m.parts
            .iter()
            .any(|p| matches!(&p.kind, PartKind::Thinking { text } if !text.is_empty()))
}

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    let msgs = &conv.messages;
    // The assistant messages that carry reasoning: without one, nothing
    // says the history was in thinking mode (unless its model always is).
    let reasoned: Vec<usize> = (0..msgs.len()).filter(|&i| thinks(&msgs[i])).collect();
    let models = conv.reasoning.as_deref();
    if reasoned.is_empty() && models.is_none() {
        return;
    }
    // User turns: from one prompt (a user message that is not results)
    // to the next.
    let mut start = 0;
    while start < msgs.len() {
        let end = (start + 1..msgs.len())
            .find(|&i| msgs[i].role == Role::User && !msgs[i].carries_results())
            .unwrap_or(msgs.len());
        let turn = start..end;
        start = end;
        if !msgs[turn.clone()]
            .iter()
            .any(|m| m.role == Role::Assistant && m.has_tool_calls())
        {
            continue;
        }
        for mi in turn {
            let m = &msgs[mi];
            if m.role != Role::Assistant || reasons(conv, mi, m) {
                continue;
            }
            if let Some(f) = finding(ctx, mi, m, &reasoned) {
                out.push(f);
            }
        }
    }
}

/// The finding on assistant message `mi`, stored without reasoning in a
/// turn with tool calls, when the history says it was in thinking mode.
fn finding(ctx: &Ctx<'_>, mi: usize, m: &Message, reasoned: &[usize]) -> Option<Finding> {
    let conv = ctx.conv;
    let model = conv.reasoning.as_deref().and_then(|r| r.model_of(mi));
    let calls = m.tool_calls().count();
    let evidence = match reasoned.first() {
        Some(&first) => format!(
            "thinking mode: {} other assistant message(s) of this history carry reasoning (the first: {})",
            reasoned.len(),
            at(conv, first)
        ),
        None => String::new(),
    };
    let (pattern, default, provider_note, model_note) = match model {
        Some(name) => {
            let kind = deepseek(name)?;
            let evidence = if !evidence.is_empty() {
                evidence
            } else if kind == DeepSeek::Always {
                format!("thinking mode: `{name}` thinks on every request")
            } else {
                return None;
            };
            let answer = if ctx.profile().provider == Provider::Anthropic {
                "DeepSeek's Anthropic-compatible endpoint answers `400 The `content[].thinking` in the thinking mode must be passed back to the API.`"
            } else {
                "DeepSeek answers `400 The `reasoning_content` in the thinking mode must be passed back to the API.`"
            };
            (
                Pattern::MissingReasoningContent,
                "sent without it, DeepSeek refuses the request",
                answer.to_string(),
                vec![
                    format!("the store names `{name}` (a DeepSeek model) for this history; {evidence}"),
                    "DeepSeek's thinking mode requires the `reasoning_content` of every assistant message of a user turn with tool calls back, in every later request; an empty one is taken".to_string(),
                ],
            )
        }
        None => {
            // Which provider the history goes to is not in it: only a
            // Chat Completions log that keeps the field (and is sent as
            // stored) is checked, and only a call is reported.
            if reasoned.is_empty()
                || calls == 0
                || ctx.profile().provider != Provider::OpenAiChat
                || !conv.reasoning.as_deref().is_some_and(|r| r.in_field)
            {
                return None;
            }
            (
                Pattern::MissingReasoningContentUnnamed,
                "sent without it, a thinking-mode provider that requires it back refuses the request",
                "the history names no model, so chatfsck cannot tell its provider: DeepSeek's thinking mode answers `400 The `reasoning_content` in the thinking mode must be passed back to the API.`, Moonshot's thinking models `thinking is enabled but reasoning_content is missing in assistant tool call message at index N`; a provider that does not require the reasoning back takes the request".to_string(),
                vec![evidence],
            )
        }
    };
    let resume = ctx.profile().on(pattern);
    let rule_severity = match pattern {
        Pattern::MissingReasoningContent => RULE.severity,
        _ => Severity::Warning,
    };
    let what = if calls > 0 {
        format!("with {calls} tool call(s)")
    } else {
        "in a user turn with tool calls".to_string()
    };
    let vars = [("model", model.unwrap_or(""))];
    let mut f = ctx
        .finding(
            &RULE,
            Some(mi),
            m.loc.clone(),
            format!(
                "assistant message {what} has no reasoning (`reasoning_content`): {}",
                resume.says(default, &vars)
            ),
        )
        .label(
            &m.loc,
            format!("assistant message ({}), no reasoning", at(conv, mi)),
        )
        .notes(model_note)
        .notes(ctx.notes(&resume, Some(&provider_note), &vars));
    f.severity = resume.severity_or(rule_severity);
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::profile::{Does, Profile};
    use crate::model::Dialect;
    use crate::rules::testutil::*;

    #[test]
    fn deepseek_names() {
        assert_eq!(deepseek("deepseek-v4-pro"), Some(DeepSeek::Maybe));
        assert_eq!(deepseek("DeepSeek-V4-Flash"), Some(DeepSeek::Maybe));
        assert_eq!(
            deepseek("deepseek/deepseek-reasoner"),
            Some(DeepSeek::Always)
        );
        for m in ["gpt-5", "kimi-k2.6", "deepseek-r1:14b", "DeepSeek-R1-0528"] {
            assert_eq!(deepseek(m), None, "{m}");
        }
    }

    fn think(t: &str) -> PartKind {
        PartKind::Thinking { text: t.into() }
    }

    /// A prompt, a reasoned call and its result, a call without reasoning
    /// and its result, a reasoned answer.
    fn history() -> crate::model::Conversation {
        let mut conv = conv(Dialect::OpenAi)
            .user("go")
            .msg(
                Role::Assistant,
                vec![think("think"), call("c1", "ls", "{}")],
            )
            .result("c1")
            .calls(&["c2"])
            .result("c2")
            .msg(Role::Assistant, vec![think("ok"), text_part("done")])
            .build();
        conv.reasoning_mut().in_field = true;
        conv
    }

    #[test]
    fn a_call_without_reasoning_beside_reasoned_ones_is_a_warning() {
        let f = rules_of(&history(), "missing-reasoning-content");
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].message, Some(3));
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].summary.contains("with 1 tool call(s)"));
        assert!(
            f[0].notes
                .iter()
                .any(|n| n.contains("cannot tell its provider"))
        );
        // A store that keeps reasoning its own way (think parts) says
        // nothing of how its client sends a message without it.
        let mut parts = history();
        parts.reasoning = None;
        assert!(rules_of(&parts, "missing-reasoning-content").is_empty());
        // Only a Chat Completions client sends `reasoning_content`.
        let mut other = history();
        std::sync::Arc::make_mut(&mut other.source).dialect = Dialect::Anthropic;
        assert!(rules_of(&other, "missing-reasoning-content").is_empty());
    }

    #[test]
    fn an_empty_field_or_no_reasoning_anywhere_is_not_reported() {
        let mut empty = history();
        empty.reasoning_mut().empty.insert(3);
        assert!(rules_of(&empty, "missing-reasoning-content").is_empty());
        let none = conv(Dialect::OpenAi)
            .user("go")
            .calls(&["c1"])
            .result("c1")
            .assistant("done")
            .build();
        assert!(rules_of(&none, "missing-reasoning-content").is_empty());
    }

    #[test]
    fn a_turn_without_calls_needs_no_reasoning() {
        let conv = conv(Dialect::OpenAi)
            .user("hi")
            .msg(Role::Assistant, vec![think("greet"), text_part("hello")])
            .user("again")
            .assistant("hello again")
            .build();
        assert!(rules_of(&conv, "missing-reasoning-content").is_empty());
    }

    #[test]
    fn a_named_deepseek_model_is_an_error_and_another_model_is_left() {
        let mut conv = conv(Dialect::OpenAi)
            .user("go")
            .msg(
                Role::Assistant,
                vec![think("think"), call("c1", "ls", "{}")],
            )
            .result("c1")
            .assistant("done")
            .build();
        conv.reasoning_mut()
            .models
            .insert(1, "deepseek-v4-pro".into());
        let f = rules_of(&conv, "missing-reasoning-content");
        assert_eq!(f.len(), 1, "{f:#?}");
        // The answer after the calls, in the same user turn, counts.
        assert_eq!(f[0].message, Some(3));
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].summary.contains("in a user turn with tool calls"));
        assert!(f[0].notes.iter().any(|n| n.contains("`deepseek-v4-pro`")));
        assert_eq!(
            Profile::UNKNOWN.on(Pattern::MissingReasoningContent).does,
            Does::SendsAsIs
        );
        conv.reasoning_mut().models.insert(1, "glm-5".into());
        assert!(rules_of(&conv, "missing-reasoning-content").is_empty());
    }

    #[test]
    fn deepseek_reasoner_thinks_without_other_evidence() {
        let mut conv = conv(Dialect::OpenAi)
            .user("go")
            .calls(&["c1"])
            .result("c1")
            .build();
        conv.reasoning_mut()
            .models
            .insert(1, "deepseek-v4-flash".into());
        assert!(rules_of(&conv, "missing-reasoning-content").is_empty());
        conv.reasoning_mut()
            .models
            .insert(1, "deepseek-reasoner".into());
        let f = rules_of(&conv, "missing-reasoning-content");
        assert_eq!(f.len(), 1);
        assert!(f[0].notes[0].contains("thinks on every request"));
    }
}
