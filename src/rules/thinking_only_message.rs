use super::{Ctx, Rule};
use crate::escape::preview;
use crate::finding::{Finding, Severity};
use crate::model::{PartKind, Role};

pub static RULE: Rule = Rule {
    name: "thinking-only-message",
    severity: Severity::Warning,
    summary: "an assistant message holds only thinking: loaders that require text or a tool call drop it",
    repair: None,
    doc: r#"## What it does
Finds assistant messages whose only content is thinking (reasoning): no
text, no tool call.

## Why is this bad?
Many loaders keep an assistant message only when it has text or a tool call.
dispatch's `reconcile.ts` (seed 000) silently dropped such messages on the
next load (`droppedEmptyMessages: 1`), so the evidence of the failing turn
vanished and the replayed history lost a turn. A thinking-only message is
also what a model leaves when its answer went into the reasoning channel,
often with tool-call markup (see `tool-call-as-text`).

## Example
```jsonl
{"role":"assistant","content":[{"type":"thinking","thinking":"<function=run_shell>…","signature":"…"}]}
```

## Repair
Report only: the thinking is real model output; whether to keep it is the
loader's decision.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    // A Responses API reasoning item with no model output after it is
    // what `reasoning-without-follower` reports, with what the API answers.
    if ctx.profile().provider == crate::finding::profile::Provider::OpenAiResponses {
        return;
    }
    for (mi, m) in ctx.conv.messages.iter().enumerate() {
        if m.role != Role::Assistant || m.parts.is_empty() {
            continue;
        }
        let mut thinking = None;
        let only_thinking = m.parts.iter().all(|p| match &p.kind {
            PartKind::Thinking { text } => {
                thinking.get_or_insert(text.as_str());
                true
            }
            PartKind::Other { kind } => kind == "redacted_thinking",
            // An empty `content: ""` beside the reasoning is no answer.
            PartKind::Text { text } => text.trim().is_empty(),
            _ => false,
        });
        let Some(text) = thinking else { continue };
        if only_thinking && !interrupted(ctx, mi) {
            out.push(
                ctx.finding(
                    &RULE,
                    Some(mi),
                    m.loc.clone(),
                    "assistant message holds only thinking: no text and no tool call".to_string(),
                )
                .label(&m.loc, format!("thinking: `{}`", preview(text, 60)))
                .note("loaders that keep only messages with text or tool calls drop this message on the next load"),
            );
        }
    }
}

/// The user interrupted the reply (Claude Code writes this marker): an
/// unfinished turn, not a corruption.
fn interrupted(ctx: &Ctx<'_>, mi: usize) -> bool {
    ctx.conv.messages.get(mi + 1).is_some_and(|next| {
        next.role == Role::User
            && next.parts.iter().any(|p| {
                matches!(&p.kind, PartKind::Text { text } if text.starts_with("[Request interrupted by user"))
            })
    })
}

#[cfg(test)]
mod tests {
    use crate::model::{PartKind, Role};
    use crate::rules::testutil::*;

    #[test]
    fn thinking_only_is_flagged_thinking_plus_text_is_not() {
        let th = || PartKind::Thinking { text: "hmm".into() };
        let c = conv(crate::model::Dialect::Anthropic)
            .user("hi")
            .msg(Role::Assistant, vec![th()])
            .user("again")
            .msg(Role::Assistant, vec![th(), text_part("answer")])
            .build();
        let f = rules_of(&c, "thinking-only-message");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].message, Some(1));
    }

    #[test]
    fn interrupted_reply_is_not_flagged() {
        let c = conv(crate::model::Dialect::ClaudeCode)
            .user("hi")
            .msg(
                Role::Assistant,
                vec![PartKind::Thinking { text: "hmm".into() }],
            )
            .user("[Request interrupted by user]")
            .build();
        assert!(rules_of(&c, "thinking-only-message").is_empty());
    }
}
