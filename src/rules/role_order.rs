use super::{Ctx, Rule};
use crate::finding::profile::{Profile, Provider};
use crate::finding::{Finding, Severity};
use crate::model::Role;

pub static RULE: Rule = Rule {
    name: "role-order",
    severity: Severity::Warning,
    summary: "turn order the target provider rejects (first message not `user`; a `system` message inside Anthropic `messages`)",
    repair: None,
    doc: r#"## What it does
Checks the order of turns against the rules of the provider the history is
written for:
- every dialect that is replayed as a request (OpenAI, kimi-cli, Anthropic,
  dispatch, and the requests recorded in traces): the first message after
  the system prompt must be `user`;
- Anthropic: `system` belongs in the top-level `system` field, not in
  `messages`. Two `user` (or two `assistant`) messages in a row are not
  reported: the API combines consecutive turns of one role into one turn.

Application logs that are not replayed verbatim (Claude Code sessions, Codex
rollouts, opencode, goose and Cursor stores) are not checked: their apps
rebuild the request.

## Why is this bad?
The provider refuses the request: a history whose first turn is the
assistant's (a lost or dropped opening message) cannot be resumed.

## Example
```jsonl
{"role":"assistant","content":"Staging runs api 2.4.0-rc.2."}
{"role":"user","content":"and production?"}
```

## Repair
Report only: which message was lost or merged cannot be known from the order
alone.
"#,
    check,
};

#[derive(PartialEq)]
enum Flavor {
    OpenAi,
    Anthropic,
}

/// Whose ordering rules apply: only to a history its client replays as
/// stored. Apps that rebuild the request from their own records (one
/// merges a trailing user message into the resume text, another merges
/// and trims): the stored order is not what is sent.
fn flavor(profile: &Profile) -> Option<Flavor> {
    if !profile.replays_as_stored {
        return None;
    }
    match profile.provider {
        // Requests recorded in traces are what was sent: checked like OpenAI.
        Provider::OpenAiChat => Some(Flavor::OpenAi),
        Provider::Anthropic => Some(Flavor::Anthropic),
        Provider::Unknown | Provider::OpenAiResponses | Provider::Gemini => None,
    }
}

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    let Some(flavor) = flavor(ctx.profile()) else {
        return;
    };
    let first = conv.messages.iter().position(|m| !m.role.is_instruction());
    if let Some(fi) = first {
        let m = &conv.messages[fi];
        if m.role != Role::User {
            out.push(
                ctx.finding(
                    &RULE,
                    Some(fi),
                    m.loc.clone(),
                    format!(
                        "the first message after the system prompt is `{}`, not `user`",
                        m.role
                    ),
                )
                .label(&m.loc, format!("first turn is `{}`", m.role)),
            );
        }
    }
    if flavor != Flavor::Anthropic {
        return;
    }
    for (mi, m) in conv.messages.iter().enumerate() {
        if m.role.is_instruction() {
            out.push(
                ctx.finding(
                    &RULE,
                    Some(mi),
                    m.loc.clone(),
                    format!("`{}` message inside `messages`: Anthropic takes the system prompt in the top-level `system` field", m.role),
                )
                .label(&m.loc, "system prompt in the message list"),
            );
            continue;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Role;
    use crate::rules::testutil::*;

    #[test]
    fn anthropic_merges_two_users_but_rejects_an_assistant_first() {
        let c = conv(crate::model::Dialect::Anthropic)
            .user("a")
            .user("b")
            .assistant("c")
            .assistant("d")
            .build();
        assert!(rules_of(&c, "role-order").is_empty());
        let c = conv(crate::model::Dialect::Anthropic)
            .assistant("c")
            .user("a")
            .build();
        let f = rules_of(&c, "role-order");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].message, Some(0));
    }

    #[test]
    fn openai_two_users_is_fine_but_assistant_first_is_not() {
        let c = conv(crate::model::Dialect::OpenAi)
            .msg(Role::System, vec![text_part("sys")])
            .user("a")
            .user("b")
            .build();
        assert!(rules_of(&c, "role-order").is_empty());
        let c = conv(crate::model::Dialect::OpenAi)
            .assistant("hi")
            .user("b")
            .build();
        assert_eq!(rules_of(&c, "role-order").len(), 1);
    }

    #[test]
    fn app_logs_are_not_checked() {
        let c = conv(crate::model::Dialect::ClaudeCode)
            .assistant("hi")
            .assistant("b")
            .build();
        assert!(rules_of(&c, "role-order").is_empty());
    }
}
