use super::{Ctx, Rule, at};
use crate::finding::profile::{Pattern, Provider};
use crate::finding::{Finding, Severity};
use crate::model::{PartKind, Role};

pub static RULE: Rule = Rule {
    name: "reasoning-without-follower",
    severity: Severity::Error,
    summary: "a reasoning item is not followed by the model output it belongs to (Responses API)",
    repair: Some("remove the reasoning item from the copy; it is kept verbatim in the repair log"),
    doc: r#"## What it does
Finds reasoning items of an OpenAI Responses API history (Codex rollouts)
that no model output item follows: the history ends on the reasoning, or the
next item is a tool output, a user message or another reasoning item.

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
    // Reasoning items and their followers are the Responses API's.
    if ctx.profile().provider != Provider::OpenAiResponses {
        return;
    }
    let thinking = |k: &PartKind| matches!(k, PartKind::Thinking { .. });
    for (mi, m) in conv.messages.iter().enumerate() {
        if m.role != Role::Assistant {
            continue;
        }
        // Consecutive items of one reply are one message: a reasoning
        // item's follower is the next part, or past the last part, the
        // next message's first.
        for (pi, part) in m.parts.iter().enumerate() {
            if !thinking(&part.kind) {
                continue;
            }
            // What follows it, when that is no model output: its summary,
            // and the next item (none when the history ends).
            let (summary, next) = match m.parts.get(pi + 1) {
                Some(p) if !thinking(&p.kind) => continue,
                Some(_) => (
                    "reasoning item is followed by another reasoning item, not by the model output it belongs to".to_string(),
                    Some((m.part_loc(pi + 1), "the next item (reasoning)".to_string())),
                ),
                None => match conv.messages.get(mi + 1) {
                    Some(n)
                        if n.role == Role::Assistant
                            && n.parts.first().is_some_and(|p| !thinking(&p.kind)) =>
                    {
                        continue;
                    }
                    Some(n) => (
                        format!(
                            "reasoning item is followed by a {} message, not by the model output it belongs to",
                            n.role
                        ),
                        Some((&n.loc, format!("the next item ({})", at(conv, mi + 1)))),
                    ),
                    None => (
                        "reasoning item has no following item: the history ends after it"
                            .to_string(),
                        None,
                    ),
                },
            };
            let loc = m.part_loc(pi).clone();
            let mut f = ctx
                .finding(&RULE, Some(mi), loc.clone(), summary)
                .label(&loc, "reasoning item with no following output");
            if let Some((at_loc, label)) = next {
                f = f.label(at_loc, label);
            }
            f = f.notes(ctx.profile().on(Pattern::ReasoningWithoutFollower).notes(
                Some("sent as stored, the Responses API answers `Item 'rs_…' of type 'reasoning' was provided without its required following item.`"),
                &[],
            ));
            out.push(f.fix(vec![crate::finding::Action::DropRecord { loc }]));
        }
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

    /// Consecutive reasoning items are one message's parts: each but the
    /// last is followed by reasoning, which is no model output. Only the
    /// last was reported, so a repair dropped one a pass and never
    /// settled (fuzz/regressions/repair_file/codex-second-repair-not-a-no-op).
    #[test]
    fn reasoning_followed_by_reasoning() {
        let c = conv(Dialect::Codex)
            .user("go")
            .msg(Role::Assistant, vec![thinking(), thinking(), thinking()])
            .result("c1")
            .build();
        let f = rules_of(&c, "reasoning-without-follower");
        assert_eq!(f.len(), 3, "{f:#?}");
        assert!(
            f[0].summary.contains("another reasoning item"),
            "{}",
            f[0].summary
        );
        assert!(f[2].summary.contains("tool message"), "{}", f[2].summary);
        let c = conv(Dialect::Codex)
            .user("go")
            .msg(
                Role::Assistant,
                vec![thinking(), thinking(), text_part("answer")],
            )
            .build();
        let f = rules_of(&c, "reasoning-without-follower");
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].summary.contains("another reasoning item"),
            "{}",
            f[0].summary
        );
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
