use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};
use crate::model::{Message, PartKind, Role};

pub static RULE: Rule = Rule {
    name: "empty-message",
    severity: Severity::Warning,
    summary: "a message has no content at all",
    repair: Some(
        "a chain of one-block records: remove the records of a blank message (kept in the repair log); a content-addressed message tree: leave a message with no parts out of the walk; elsewhere report only",
    ),
    doc: r#"## What it does
Finds messages with no content: no parts, or only empty or whitespace-only
text, and no tool call or tool result.

## Why is this bad?
Empty messages are what a crash between "start message" and "append
content" leaves, or a stream that ended before its first token. Anthropic
rejects them outright; other providers accept them and the model sees a turn
that says nothing.

## What providers answer
- Anthropic: `messages: text content blocks must be non-empty`
- Anthropic: `messages: text content blocks must contain non-whitespace text`
- Anthropic: `messages.N: all messages must have non-empty content except for the optional final assistant message`

## Example
```jsonl
{"role":"assistant","content":""}
```

## Repair
In a session written as a parent chain of one-block records, removes the
records of a message that holds only
empty or whitespace-only text (kept verbatim in the repair log) and
re-links the records after them, as the client itself drops such an
assistant message. In a message tree whose messages are content-addressed
(llm's message store), leaves a message with no parts at all out of the
walk, the messages after it linked to the one before it (written again
under new hashes; the old rows kept). Elsewhere, report only.
"#,
    check,
};

pub fn is_empty(m: &Message) -> bool {
    m.parts.iter().all(|p| match &p.kind {
        PartKind::Text { text } => text.trim().is_empty(),
        _ => false,
    })
}

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    let last = conv.messages.len().saturating_sub(1);
    for (mi, m) in conv.messages.iter().enumerate() {
        if !is_empty(m) {
            continue;
        }
        // Anthropic allows an empty final assistant message (a prefill).
        if mi == last && m.role == Role::Assistant && conv.source.dialect.is_anthropic_request() {
            continue;
        }
        let what = if m.parts.is_empty() {
            "no content"
        } else {
            "only empty text"
        };
        let mut f = ctx
            .finding(
                &RULE,
                Some(mi),
                m.loc.clone(),
                format!("`{}` message has {what}", m.role),
            )
            .label(&m.loc, "empty message");
        if conv.chain.is_some() {
            // Its records hold nothing but blank text: removing them loses
            // nothing, and the records after them are re-linked (the chain
            // says how).
            let mut locs: Vec<&crate::model::Loc> = m.parts.iter().map(|p| &p.loc).collect();
            locs.push(&m.loc);
            locs.sort_by_key(|l| match l {
                crate::model::Loc::Line { start, .. } => *start,
                crate::model::Loc::Row { .. } => 0,
            });
            locs.dedup();
            if !m.parts.is_empty() {
                f = f.fix(
                    locs.into_iter()
                        .map(|l| crate::finding::Action::DropRecord { loc: l.clone() })
                        .collect(),
                );
            }
        }
        // A message with no parts at all in a tree whose writer can leave
        // it out of the walk.
        if m.parts.is_empty() && conv.tree.as_deref().is_some_and(|t| t.drops_empty) {
            f = f.fix(vec![crate::finding::Action::DropRecord {
                loc: m.loc.clone(),
            }]);
        }
        // What the client does with a blank message (one that has no
        // content at all is its loader's to say).
        let pattern = if m.role == Role::Assistant {
            Some(Pattern::EmptyAssistantMessage)
        } else if m.parts.is_empty() {
            None
        } else {
            Some(Pattern::EmptyUserMessage)
        };
        if let Some(p) = pattern {
            let resume = ctx.profile().on(p);
            f = f.notes(ctx.notes(&resume, None, &[]));
            f.severity = resume.severity_or(RULE.severity);
        }
        out.push(f);
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Role;
    use crate::rules::testutil::*;

    #[test]
    fn empty_and_whitespace_text() {
        let c = conv(crate::model::Dialect::OpenAi)
            .user("hi")
            .msg(Role::Assistant, vec![])
            .msg(Role::User, vec![text_part("  \n")])
            .assistant("ok")
            .build();
        let f = rules_of(&c, "empty-message");
        assert_eq!(f.len(), 2);
        assert!(f[0].summary.contains("no content"));
        assert!(f[1].summary.contains("only empty text"));
    }

    #[test]
    fn tool_call_only_assistant_is_not_empty() {
        let c = conv(crate::model::Dialect::OpenAi)
            .user("hi")
            .calls(&["a"])
            .result("a")
            .build();
        assert!(rules_of(&c, "empty-message").is_empty());
    }

    #[test]
    fn anthropic_final_assistant_prefill_is_allowed() {
        let c = conv(crate::model::Dialect::Anthropic)
            .user("hi")
            .msg(Role::Assistant, vec![])
            .build();
        assert!(rules_of(&c, "empty-message").is_empty());
    }
}
