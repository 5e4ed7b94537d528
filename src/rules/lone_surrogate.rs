use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};
use crate::model::Loc;

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
resume works (a warning). Strict JSON readers (Rust's serde_json and
sonic-rs, for example) reject the whole line; Python reads it but cannot
encode the text as UTF-8 again; and a request that carries the escape to
the API is refused. So in a provider-shaped history (kimi-cli's Python,
Cline's `JSON.parse`, an OpenAI or Anthropic JSONL, a message table such
as gbrain's) the record loads and the next request fails: an error. Gemini CLI 0.61.0 reads the record
and sends the escape as it is; what the Gemini API answers was not
established (a warning). opencode 1.18.33 reads a `part` or `message`
row's `data` holding one and sends U+FFFD in its place (a warning).
Copilot CLI (Node) and Cursor (Electron) read it with `JSON.parse`;
what they send was not established (a warning). chatfsck reads such a record as these readers do, the escape as
U+FFFD, rather than as a line that is not JSON.

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
    match ctx.conv.chain.as_deref() {
        Some(chain) => {
            for r in chain.records.iter().filter(|r| r.lone_surrogates > 0) {
                out.push(finding(ctx, &r.loc, r.lone_surrogates));
            }
        }
        // A recorded request was sent as it is: what the provider did with
        // it is the trace's to say.
        None if ctx.conv.trace.is_some() => {}
        None => {
            for (loc, n) in &ctx.conv.lone_surrogates {
                out.push(finding(ctx, loc, *n));
            }
        }
    }
}

/// The finding for `n` lone escapes on the record at `loc`, saying what
/// the app's reader does with them.
fn finding(ctx: &Ctx<'_>, loc: &Loc, n: u32) -> Finding {
    let at = match loc {
        Loc::Line { line, .. } => format!("line {line}"),
        Loc::Row { table, key, .. } => format!("{} row `{key}`", &**table),
    };
    let s = if n == 1 { "" } else { "s" };
    // A client that says nothing: Python's `json` (kimi-cli) and
    // `JSON.parse` read it, and nothing patches the text on the way out.
    let resume = ctx.profile().on(Pattern::LoneSurrogate);
    let place = [("place", if n == 1 { "its place" } else { "their place" })];
    let does = resume.says(
        "Python's `json` and `JSON.parse` read it, but the request cannot carry the text",
        &place,
    );
    let notes = ctx.notes(&resume,
        Some("Python fails to encode it as UTF-8 (`surrogates not allowed`); sent as an escape, Anthropic's API refuses it (`no low surrogate in string`); a strict reader (serde_json) refuses the line"),
        &place,
    );
    let severity = resume.severity.unwrap_or(Severity::Error);
    let mut f = ctx
        .finding(
            &RULE,
            None,
            loc.clone(),
            format!("{at} has {n} lone surrogate escape{s}: {does}"),
        )
        .label(
            loc,
            "a `\\uD800`–`\\uDFFF` escape that is not half of a pair",
        )
        .notes(notes)
        .fix(vec![crate::finding::Action::ReplaceSurrogates {
            loc: loc.clone(),
        }]);
    f.severity = severity;
    f
}
