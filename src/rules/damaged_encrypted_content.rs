use super::{Ctx, Rule};
use crate::finding::profile::{Pattern, Provider};
use crate::finding::{Finding, Severity};
use crate::model::sealed::Seal;

pub static RULE: Rule = Rule {
    name: "damaged-encrypted-content",
    severity: Severity::Error,
    summary: "a reasoning item's encrypted content is cut or not base64 (Responses API)",
    repair: Some(
        "remove the reasoning item from the copy (it goes to the repair log): the model's output after it is kept, and the API accepts an output without its reasoning",
    ),
    doc: r#"## What it does
Finds reasoning items of an OpenAI Responses API history whose
`encrypted_content` is a Fernet token (`gAAAAA…`, the form the API issues)
that is no longer whole: a character outside URL-safe base64, or a length
no token can have (a version byte, a timestamp, an IV, whole cipher blocks
and a 32-byte HMAC), as a write cut short or a lost character leaves it.

## Why is this bad?
A client sends the encrypted reasoning back with the history, and the API
refuses the whole request when it cannot verify it, so every resume fails.

What cannot be known offline: a token that is whole but was altered, or
that the API cannot verify for another reason (issued for another
account or organisation, another model or provider, or a fault on the
server's side: the wave of openai/codex#8100–#8159, on well-formed tokens).
Only the server holds the key: such tokens are not reported.

## What providers answer
- OpenAI Responses API: `The encrypted content gAAA...Rg== could not be verified.` (code `invalid_encrypted_content`; openai/codex#8100–#8159, #35334)

## Example
```jsonl
{"timestamp":"…","type":"response_item","payload":{"type":"reasoning","summary":[],"content":null,"encrypted_content":"gAAAAABqAa-XvdXG5RfH"}}
```

## Repair
Removes the reasoning item from the copy (the line goes to the repair log,
verbatim). The message or call that followed it is kept: the API accepts
an output item without its reasoning, and the model loses only the
reasoning it can no longer read. A reasoning item inside a line that
holds more (a compaction's replacement history) is left, with the reason.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    if ctx.profile().provider != Provider::OpenAiResponses || conv.sealed.is_empty() {
        return;
    }
    for s in &conv.sealed {
        // Only items of the history the client sends.
        let Some(mi) = conv
            .messages
            .iter()
            .position(|m| m.parts.iter().any(|p| p.loc == s.loc))
        else {
            continue;
        };
        let what = match s.problem {
            Seal::NotBase64 => "holds a character that is not URL-safe base64",
            Seal::Cut => "has a length no whole token has: it was cut, or lost characters",
        };
        let loc = s.loc.clone();
        let mut f = ctx
            .finding(
                &RULE,
                Some(mi),
                loc.clone(),
                format!("the `{}` item's encrypted content {what}", s.kind),
            )
            .label(
                &loc,
                format!("encrypted_content, {} characters, not a whole token", s.len),
            );
        f = f.notes(ctx.profile().on(Pattern::DamagedEncryptedContent).notes(
            Some("sent as stored, the Responses API refuses the request: `The encrypted content gAAA... could not be verified.` (`invalid_encrypted_content`)"),
            &[],
        ));
        if s.alone {
            f = f.fix(vec![crate::finding::Action::DropRecord { loc }]);
        }
        out.push(f);
    }
}
