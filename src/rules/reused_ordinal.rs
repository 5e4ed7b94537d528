use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};
use crate::model::Ordinal;

pub static RULE: Rule = Rule {
    name: "reused-ordinal",
    severity: Severity::Error,
    summary: "a line of a paginated history repeats an ordinal or goes back: two writers appended to one history",
    repair: None,
    doc: r#"## What it does
Finds the lines of a paginated history whose `ordinal` is not above the
ordinal of every line before it. Codex 0.146 and later numbers the lines of
a paginated rollout one by one, and a fork's continuation goes on from the
ordinal its base ends at (`history_base.end_ordinal_exclusive`).

## Why is this bad?
One writer never numbers a line twice. An ordinal used again means two
writers appended to the same rollout, each continuing from the last line it
had seen (two clients on one session, a resume while another still ran):
their lines are interleaved and one turn's items may sit inside the
other's. Codex's history projection (`thread_history_1.sqlite`, beside
`state_5.sqlite`) takes the lines it has not indexed yet expecting each to
carry the ordinal after the last one it indexed, and refuses the thread at
the line that breaks that: users report forks and loads that fail until the
rollout is mended. (Codex 0.169.0 resuming such a rollout into a Codex home
with no projection of it yet succeeds: measured.)

## What the apps answer
- Codex: `thread history projection expected ordinal 9814, got 9813` (openai/codex#41566, #35746, #41353), e.g. `failed to prepare paginated fork: thread-store internal error: thread history projection expected ordinal 2324, got 2323` (`code -32603`)

## Example
```jsonl
{"timestamp":"…","ordinal":26,"type":"event_msg","payload":{"type":"token_count",…}}
{"timestamp":"…","ordinal":27,"type":"event_msg","payload":{"type":"task_complete",…}}
{"timestamp":"…","ordinal":27,"type":"event_msg","payload":{"type":"token_count",…}}
```

## Repair
Report only: which writer's lines to keep, and in which order, is the
user's call; the finding names both lines.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(paging) = &ctx.conv.paging else {
        return;
    };
    let mut highest: Option<(u64, &crate::model::Loc)> = None;
    for (loc, ordinal) in &paging.records {
        let Ordinal::At(n) = *ordinal else { continue };
        match highest {
            Some((h, at)) if n <= h => {
                let what = if n == h { "repeats" } else { "goes back below" };
                let next = (h + 1).to_string();
                let got = n.to_string();
                let mut f = ctx
                    .finding(
                        &RULE,
                        None,
                        loc.clone(),
                        format!("ordinal {n} {what} ordinal {h} of an earlier line"),
                    )
                    .label(loc, format!("ordinal {n}"))
                    .label(at, format!("ordinal {h}"));
                let resume = ctx.profile().on(Pattern::ReusedOrdinal);
                f.severity = resume.severity_or(RULE.severity);
                let vars = [("next", next.as_str()), ("got", got.as_str())];
                for note in ctx.notes(
                    &resume,
                    Some("a reader that keys the history by ordinal finds two lines under one"),
                    &vars,
                ) {
                    f = f.note(note);
                }
                out.push(f);
            }
            _ => highest = Some((n, loc)),
        }
    }
}
