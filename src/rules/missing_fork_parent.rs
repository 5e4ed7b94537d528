use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};
use crate::model::Parent;

pub static RULE: Rule = Rule {
    name: "missing-fork-parent",
    severity: Severity::Error,
    summary: "a fork's continuation names the history it continues, and that history is not there: the client refuses to resume it",
    repair: None,
    doc: r#"## What it does
Finds a forked history whose base is gone. A Codex fork (0.146 and later,
paginated history) does not copy the history it was forked from: its first
line names it (`session_meta.payload.history_base`: `thread_id`,
`end_ordinal_exclusive`, `end_byte_offset`) and its own lines go on from
there. This rule looks for the base's rollout where the client keeps
rollouts, under the same Codex home (`sessions/`, `archived_sessions/`,
`.jsonl` or `.jsonl.zst`). A rollout outside a Codex home's layout is not
judged.

## Why is this bad?
The fork's first turns are in the base's rollout only. With it deleted
(a cleanup, `codex delete`, a sync that skipped it) the client cannot
rebuild the history and refuses to resume the fork (measured with Codex
0.169.0: exit 1, nothing sent); what the fork holds alone is its own turns.

## What the apps answer
- Codex: `thread/resume failed: invalid paginated history lineage for <thread id>: missing source rollout` (`code -32600`)

## Example
```jsonl
{"timestamp":"…","ordinal":28,"type":"session_meta","payload":{"id":"01a22364-…","forked_from_id":"01a22347-…","history_mode":"paginated","history_base":{"thread_id":"01a22347-…","end_ordinal_exclusive":28,"end_byte_offset":106418},…}}
```
with no `rollout-…-01a22347-….jsonl` (or `.jsonl.zst`) under the Codex home.

## Repair
Report only: restore the base's rollout (from a backup, or from
`archived_sessions/`) to its place under `sessions/`.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(base) = ctx.conv.paging.as_ref().and_then(|p| p.base.as_ref()) else {
        return;
    };
    let Parent::Missing { searched } = &base.parent else {
        return;
    };
    let upto = base
        .end_exclusive
        .map(|n| format!(" (its lines before ordinal {n})"))
        .unwrap_or_default();
    let mut f = ctx
        .finding(
            &RULE,
            None,
            base.loc.clone(),
            format!(
                "this history continues thread `{}`{upto}, whose rollout is not under {}",
                base.thread,
                searched.display()
            ),
        )
        .label(&base.loc, format!("continues thread `{}`", base.thread));
    let resume = ctx.profile().on(Pattern::MissingForkParent);
    f.severity = resume.severity_or(RULE.severity);
    let vars = [("thread", base.thread.as_str())];
    for note in ctx.notes(
        &resume,
        Some("the history it continues cannot be rebuilt: what came before the fork is lost"),
        &vars,
    ) {
        f = f.note(note);
    }
    out.push(f);
}
