use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};
use crate::model::chain::{BlockIssue, Signature};

pub static RULE: Rule = Rule {
    name: "thinking-signature",
    severity: Severity::Error,
    summary: "a thinking block has no signature, or one that is not well-formed",
    repair: Some("remove the thinking block (its text kept in the repair log)"),
    doc: r#"## What it does
Finds `thinking` blocks whose `signature` is missing, empty, not
well-formed base64 (cut short, or edited), or well-formed base64 whose
decoded bytes break the framing every signature the API issues has.

## Why is this bad?
The API checks the signature of every thinking block it is sent back.
A client that sends the block unchanged fails on every resume of the
session. Decoded, every signature the API issued in the sessions studied
is a protobuf message (field 2, the signed payload, itself a message of
length-delimited fields; then field 3): a signature cut at a base64
quantum, or with a length byte altered, runs a field past its end. A
signature of another shape (a proxy's), or with a few characters of its
payload altered, can only be checked by the server: it is not reported.

## What providers answer
- Anthropic (no signature): `thinking.signature: Field required`
- Anthropic (a signature it did not issue): ``Invalid `signature` in `thinking` block``

## Example
```jsonl
{"type":"assistant","uuid":"b","message":{"role":"assistant","content":[{"type":"thinking","thinking":"Let me see."}]}}
```

## Repair
Removes the thinking block (its text goes to the repair log); a record
left with nothing is removed and its children re-linked to its parent.
Thinking blocks are otherwise never modified.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(chain) = ctx.conv.chain.as_deref() else {
        return;
    };
    for r in &chain.records {
        for issue in &r.issues {
            let BlockIssue::Thinking { block, signature } = issue else {
                continue;
            };
            let line = r.loc.line().unwrap_or(0);
            let (what, answer) = match signature {
                Signature::Missing => ("has no `signature`", "thinking.signature: Field required"),
                Signature::Empty => (
                    "has an empty `signature`",
                    "Invalid `signature` in `thinking` block",
                ),
                Signature::Malformed => (
                    "has a `signature` that is not well-formed base64 (cut or altered)",
                    "Invalid `signature` in `thinking` block",
                ),
                Signature::Unframed => (
                    "has a `signature` that is well-formed base64 but, decoded, no longer frames as the message every API signature is (cut or altered)",
                    "Invalid `signature` in `thinking` block",
                ),
            };
            let resume = ctx.profile().on(Pattern::ThinkingSignature);
            let mut f = ctx
                .finding(
                    &RULE,
                    None,
                    r.loc.clone(),
                    format!(
                        "the thinking block {block} on line {line} {what}: {}",
                        resume.says("sent as is, the API refuses the request", &[])
                    ),
                )
                .label(&r.loc, format!("content[{block}]"))
                .note(format!("the API answers `{answer}`"))
                .notes(ctx.notes(&resume, None, &[]));
            f.severity = resume.severity_or(RULE.severity);
            out.push(f.fix(vec![crate::finding::Action::DropThinking {
                loc: r.loc.clone(),
                block: *block,
            }]));
        }
    }
}
