use super::{Ctx, Rule, at};
use crate::finding::profile::{Pattern, Provider};
use crate::finding::{Finding, Severity};
use crate::model::{PartKind, Role};

pub static RULE: Rule = Rule {
    name: "missing-thought-signature",
    severity: Severity::Warning,
    summary: "a Gemini 3 function call in the current turn has no `thoughtSignature`",
    repair: None,
    doc: r#"## What it does
Gemini histories only. Gemini 3 models hand out an opaque `thoughtSignature`
with the first function call of each step and require it back: the first
`functionCall` part of every model turn of the *current* turn (after the
last user turn with text and no function response) must carry one. This
rule finds such a call stored without it, in a model turn whose `model` is a
Gemini 3 model (`isGemini3Model`: the name matches `^gemini-3(\.|-|$)`).
Turns of a model it cannot name, and Gemini 2.5 turns, are not checked:
those models accept calls without a signature.

## Why is this bad?
A client that continues the pending tool loop with the history as stored
(no new user text) sends the unsigned call, and the Gemini API rejects the
request. Gemini CLI only keeps the signature when the turn was stored as
Part[] content (`$set.messages` rewrites); the plain-string recording path
drops it.

It is a warning, not an error: Gemini CLI patches its own requests
(`ensureActiveLoopHasThoughtSignatures` and `stripThoughts` stamp the first
call of a model turn with `thoughtSignature: "skip_thought_signature_validator"`),
and a resume with a new prompt moves these calls out of the current turn,
where the API does not check them.

## What providers answer
- Gemini API (400): `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:<name>` , position N. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.` (reported against other clients: anomalyco/opencode#4832, snow-cli#104)

## Example
```jsonl
{"$set":{"messages":[{"id":"u1","type":"user","content":[{"text":"Find every route handler"}]},{"id":"g1","type":"gemini","model":"gemini-3-pro-preview","content":[{"functionCall":{"id":"glob_1","name":"glob","args":{"pattern":"src/**/*.ts"}}}]},{"id":"u2","type":"user","content":[{"functionResponse":{"id":"glob_1","name":"glob","response":{"output":"…"}}}]}]}}
```

## Repair
None: the signature is the model's, and cannot be recovered. Gemini CLI's
own placeholder for a client that must send the turn is
`"thoughtSignature": "skip_thought_signature_validator"` on the first
`functionCall` part of each model turn.
"#,
    check,
};

/// `isGemini3Model`: `^gemini-3(\.|-|$)`.
fn is_gemini3(model: &str) -> bool {
    model
        .strip_prefix("gemini-3")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('-'))
}

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    // Thought signatures are the Gemini API's.
    if ctx.profile().provider != Provider::Gemini {
        return;
    }
    let Some(sigs) = conv.signatures.as_deref() else {
        return;
    };
    // The current turn starts after the last user message with text and
    // no function response.
    let start = conv
        .messages
        .iter()
        .rposition(|m| {
            m.role == Role::User
                && m.parts
                    .iter()
                    .any(|p| matches!(p.kind, PartKind::Text { .. }))
                && !m.carries_results()
        })
        .map_or(0, |i| i + 1);
    let mut prev_model = false;
    for (mi, m) in conv.messages.iter().enumerate().skip(start) {
        // Adjacent model messages are one turn: only its first call counts.
        let first_of_turn = !prev_model;
        prev_model = m.role == Role::Assistant;
        if m.role != Role::Assistant || !first_of_turn {
            continue;
        }
        let Some(model) = sigs.models.get(&mi) else {
            continue;
        };
        if !is_gemini3(model) {
            continue;
        }
        let Some((pi, id, name, _)) = m.tool_calls().next() else {
            prev_model = false;
            continue;
        };
        if sigs.signed.contains(&(mi, pi)) {
            continue;
        }
        out.push(
            ctx.finding(
                &RULE,
                Some(mi),
                m.part_loc(pi).clone(),
                format!(
                    "function call `{id}` (`{name}`) opens a step of the current turn of `{model}` without a `thoughtSignature`"
                ),
            )
            .label(
                m.part_loc(pi),
                format!("first function call of this model turn ({}), unsigned", at(conv, mi)),
            )
            .id(id)
            .note("Gemini 3 models validate the signature of the first function call of every step of the current turn; a client that continues this turn as stored gets `Function call is missing a thought_signature in functionCall parts.`")
            .notes(ctx.profile().on(Pattern::MissingThoughtSignature).notes(None, &[])),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::is_gemini3;

    #[test]
    fn gemini3_names() {
        for m in ["gemini-3", "gemini-3-pro-preview", "gemini-3.1-pro-preview"] {
            assert!(is_gemini3(m), "{m}");
        }
        for m in ["gemini-2.5-pro", "gemini-30", "my-gemini-3", "gemini-3x"] {
            assert!(!is_gemini3(m), "{m}");
        }
    }
}
