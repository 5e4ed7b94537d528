use super::{Ctx, Rule, at};
use crate::finding::{Finding, Severity};
use crate::model::{Dialect, PartKind, Role};

pub static RULE: Rule = Rule {
    name: "reasoning-without-follower",
    severity: Severity::Error,
    summary: "a reasoning item is not followed by the model output it belongs to (Responses API)",
    repair: Some("remove the reasoning item from the copy; it is kept verbatim in the repair log"),
    doc: r#"## What it does
Finds reasoning items of an OpenAI Responses API history (Codex rollouts)
that no model output item follows: the history ends on the reasoning, or the
next item is a tool output or a user message.

## Why is this bad?
The Responses API sends a reasoning item together with the item the model
produced after it (a message or a call), and refuses a request that holds a
reasoning item without it. Codex (0.169.0) sends the rollout's items as
stored on resume, with no reordering and no repair, so every resume of such
a rollout fails. The usual cause is a crash after the reasoning was written
and before the answer was: a torn last line (see `corrupt-record`) leaves
the reasoning last.

## What providers answer
- OpenAI Responses API: `Item 'rs_…' of type 'reasoning' was provided without its required following item.` (openai/codex#1227, #10722)

## Example
```jsonl
{"timestamp":"…","type":"response_item","payload":{"type":"reasoning","summary":[],"content":null,"encrypted_content":"gAAAAA…"}}
```
(the last line of the rollout)

## Repair
Removes the reasoning item from the copy and keeps it verbatim in the repair
log: it is encrypted, and its answer was never recorded.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    if conv.source.dialect != Dialect::Codex {
        return;
    }
    for (mi, m) in conv.messages.iter().enumerate() {
        if m.role != Role::Assistant {
            continue;
        }
        // Items of one reply are read into one message: a reasoning item
        // with nothing after it in its message has no following output.
        let Some(pi) = m.parts.len().checked_sub(1) else {
            continue;
        };
        if !matches!(m.parts[pi].kind, PartKind::Thinking { .. }) {
            continue;
        }
        let next = conv.messages.get(mi + 1);
        // The next turn's model output (a new assistant message after a
        // user turn event) still follows the reasoning directly.
        if next.is_some_and(|n| {
            n.role == Role::Assistant
                && n.parts
                    .first()
                    .is_some_and(|p| !matches!(p.kind, PartKind::Thinking { .. }))
        }) {
            continue;
        }
        let loc = m.part_loc(pi).clone();
        let summary = match next {
            None => "reasoning item has no following item: the history ends after it".to_string(),
            Some(n) => format!(
                "reasoning item is followed by a {} message, not by the model output it belongs to",
                n.role
            ),
        };
        let mut f = ctx
            .finding(&RULE, Some(mi), loc.clone(), summary)
            .label(&loc, "reasoning item with no following output");
        if let Some(n) = next {
            f = f.label(&n.loc, format!("the next item ({})", at(conv, mi + 1)));
        }
        out.push(
            f.note("Codex sends it as stored on resume, and the Responses API answers `Item 'rs_…' of type 'reasoning' was provided without its required following item.`")
                .fix(vec![crate::finding::Action::DropRecord { loc }]),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{Dialect, PartKind, Role};
    use crate::rules::testutil::*;

    fn thinking() -> PartKind {
        PartKind::Thinking { text: "".into() }
    }

    #[test]
    fn reasoning_last_in_a_codex_history() {
        let c = conv(Dialect::Codex)
            .user("go")
            .msg(Role::Assistant, vec![thinking()])
            .build();
        let f = rules_of(&c, "reasoning-without-follower");
        assert_eq!(f.len(), 1);
        assert!(f[0].summary.contains("history ends"), "{}", f[0].summary);
    }

    #[test]
    fn reasoning_before_its_call_is_fine() {
        let c = conv(Dialect::Codex)
            .user("go")
            .msg(Role::Assistant, vec![thinking(), call("c1", "exec", "{}")])
            .result("c1")
            .build();
        assert!(rules_of(&c, "reasoning-without-follower").is_empty());
    }

    #[test]
    fn reasoning_followed_by_the_next_turns_output_is_fine() {
        let c = conv(Dialect::Codex)
            .msg(Role::Assistant, vec![thinking()])
            .assistant("answer")
            .build();
        assert!(rules_of(&c, "reasoning-without-follower").is_empty());
        let c = conv(Dialect::Codex)
            .msg(Role::Assistant, vec![thinking()])
            .msg(Role::Assistant, vec![thinking(), text_part("answer")])
            .build();
        assert_eq!(rules_of(&c, "reasoning-without-follower").len(), 1);
    }

    #[test]
    fn other_dialects_are_left_to_thinking_only_message() {
        let c = conv(Dialect::Anthropic)
            .user("go")
            .msg(Role::Assistant, vec![thinking()])
            .build();
        assert!(rules_of(&c, "reasoning-without-follower").is_empty());
    }
}
