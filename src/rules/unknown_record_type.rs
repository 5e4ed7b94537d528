use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "unknown-record-type",
    severity: Severity::Warning,
    summary: "a record of a kind (or a version) the reader does not know: what it holds was not read",
    repair: None,
    doc: r#"## What it does
Finds the records a reader does not know: a kind of line, an item type or a
declared version newer than the ones it reads. Today: Codex rollout lines
whose `type` is none of those Codex 0.169.0 writes, `response_item`s of a
type it does not write, and a `session_meta.history_mode` other than
`legacy` and `paginated`.

## Why is this bad?
The apps change what they write from one version to the next. A record the
reader skips in silence could hold a message, a tool call or its output:
the history would be checked without it, and "no problems" would be a
claim about a history that was not read. Reported, the drift shows: which
file, which record, which kind, and what was not read.

## Example
```jsonl
{"timestamp":"…","ordinal":12,"type":"thread_snapshot","payload":{…}}
```

## Repair
Report only. Check the client's version; a chatfsck that reads it is the
fix.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for u in &ctx.conv.unread {
        out.push(
            ctx.finding(
                &RULE,
                None,
                u.loc.clone(),
                format!("{} is not read: {}", u.kind, u.what),
            )
            .label(&u.loc, u.kind.clone()),
        );
    }
}
