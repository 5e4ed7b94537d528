use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};
use crate::model::chain::BlockIssue;

pub static RULE: Rule = Rule {
    name: "oversized-image",
    severity: Severity::Error,
    summary: "an image's base64 data is over 5 MB: Claude Code refuses to resume",
    repair: None,
    doc: r#"## What it does
Finds `image` blocks (in user messages and in tool results) whose base64
data is longer than 5 MiB (5,242,880 characters).

## Why is this bad?
Claude Code 2.1.x compares `source.data.length` with the API's limit and
refuses to send the request: every resume of the session fails (rc 1)
until the image is removed or shrunk.

## What providers answer
- Claude Code (2.1.330, before sending; rc 1): `Image base64 size (7.5MB) exceeds API limit (5MB). Please resize the image before sending.`

## Example
```jsonl
{"type":"user","uuid":"a","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR… (7,842,560 characters)"}}]}}
```

## Repair
Report only.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(chain) = ctx.conv.chain.as_deref() else {
        return;
    };
    for r in &chain.records {
        for issue in &r.issues {
            let BlockIssue::LargeImage { block, base64_len } = issue else {
                continue;
            };
            let line = r.loc.line().unwrap_or(0);
            let mb = *base64_len as f64 / (1024.0 * 1024.0);
            out.push(
                ctx.finding(
                    &RULE,
                    None,
                    r.loc.clone(),
                    format!("the image in content[{block}] on line {line} is {base64_len} base64 characters ({mb:.1} MB), over the 5 MB limit: Claude Code refuses to resume"),
                )
                .label(&r.loc, format!("content[{block}]"))
                .note(format!("Claude Code answers `Image base64 size ({mb:.1}MB) exceeds API limit (5MB). Please resize the image before sending.`")),
            );
        }
    }
}
