use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "lone-surrogate",
    severity: Severity::Warning,
    summary: "a JSON string holds a lone UTF-16 surrogate escape (`\\ud800`)",
    repair: Some("replace each lone escape with `\\ufffd` in place"),
    doc: r#"## What it does
Finds records whose JSON text has a `\uD800`–`\uDFFF` escape that is not
half of a surrogate pair: text cut inside an emoji, or a tool's output
that was not valid UTF-16.

## Why is this bad?
Claude Code 2.1.x reads the record and sends U+FFFD in its place, so the
resume works. Strict JSON readers (Rust's serde_json and sonic-rs, for
example) reject the whole line; Python reads it but cannot encode the text
as UTF-8 again; and a request that carries the escape to the API is
refused.

## What providers answer
- Anthropic (its JSON decoder, on a request body holding the escape): `no low surrogate in string`

## Example
```jsonl
{"type":"user","uuid":"a","message":{"role":"user","content":"cut \ud83d here"}}
```

## Repair
Replaces each lone escape with `\ufffd` in place (what the client sends);
the rest of the record is untouched.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(chain) = ctx.conv.chain.as_deref() else {
        return;
    };
    for r in chain.records.iter().filter(|r| r.lone_surrogates > 0) {
        let line = r.loc.line().unwrap_or(0);
        let n = r.lone_surrogates;
        out.push(
            ctx.finding(
                &RULE,
                None,
                r.loc.clone(),
                format!(
                    "line {line} has {n} lone surrogate escape{}: Claude Code sends U+FFFD in {}",
                    if n == 1 { "" } else { "s" },
                    if n == 1 { "its place" } else { "their place" }
                ),
            )
            .label(&r.loc, "a `\\uD800`–`\\uDFFF` escape that is not half of a pair")
            .note("strict JSON readers reject the line; sent as is, the API answers `no low surrogate in string`")
            .fix(vec![crate::finding::Action::ReplaceSurrogates { loc: r.loc.clone() }]),
        );
    }
}
