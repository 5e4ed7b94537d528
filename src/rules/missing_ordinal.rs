use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};
use crate::model::Ordinal;

pub static RULE: Rule = Rule {
    name: "missing-ordinal",
    severity: Severity::Error,
    summary: "a line of a paginated history has no ordinal (or one that is not a number): the client refuses to resume when it is the last line",
    repair: Some(
        "give the last line the ordinal after the highest before it; a line inside the history is left",
    ),
    doc: r#"## What it does
Finds the lines of a paginated history that carry no `ordinal`, or one that
is not a whole number from 0 up. Codex 0.146 and later declares a rollout
paginated in its first line (`session_meta.payload.history_mode:
"paginated"`) and then gives every line the next ordinal; the client
continues the numbering from the last line when it appends.

## Why is this bad?
Before it appends to a paginated rollout, Codex reads the last line's
ordinal to continue from it (`rollout/src/ordinal.rs`,
`ordinal_state_for_rollout`). A last line without one makes the resume
fail, and the session cannot be continued (measured with Codex 0.169.0:
exit 1, nothing sent). Its writer never leaves a line without one, so such
a line comes from another writer: an older client, a tool, a hand edit.
Elsewhere in the file Codex 0.169.0 resumes the rollout (measured): that
is reported for information.

## What the apps answer
- Codex: `failed to resume local thread recorder: final paginated rollout record at <path> is missing an ordinal` (`code -32603`; openai/codex#45150)

## Example
```jsonl
{"timestamp":"…","ordinal":0,"type":"session_meta","payload":{"id":"…","history_mode":"paginated",…}}
{"timestamp":"…","ordinal":1,"type":"response_item","payload":{"type":"message","role":"user",…}}
{"timestamp":"…","type":"event_msg","payload":{"type":"task_complete",…}}
```

## Repair
The last line gets the ordinal after the highest before it (here
`"ordinal":2`), written after its `timestamp` as the client writes it
(the line as it was is kept in the repair log): Codex then continues the
numbering from it (the repaired fixture of this pattern is byte for
byte the rollout Codex 0.169.0 wrote, which it resumes).
A line without one inside the history is left as it is: Codex resumes
it, and no ordinal is free there.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(paging) = &ctx.conv.paging else {
        return;
    };
    let last = paging.records.len().saturating_sub(1);
    for (i, (loc, ordinal)) in paging.records.iter().enumerate() {
        let what = match ordinal {
            Ordinal::At(_) => continue,
            Ordinal::Missing => "has no ordinal",
            Ordinal::Invalid => "has an ordinal that is not a whole number from 0 up",
        };
        let mut f = ctx
            .finding(
                &RULE,
                None,
                loc.clone(),
                format!("a line of a paginated history {what}"),
            )
            .label(loc, format!("this line {what}"))
            .label(
                &paging.declared_at,
                "the history is declared paginated here",
            );
        let resume = ctx.profile().on(if i == last {
            Pattern::MissingOrdinalAtEnd
        } else {
            Pattern::MissingOrdinal
        });
        f.severity = resume.severity_or(RULE.severity);
        let provider = if i == last {
            "a reader that continues the numbering from the last line cannot continue it"
        } else {
            "a reader that numbers the history by its lines cannot number this one"
        };
        for note in ctx.notes(&resume, Some(provider), &[]) {
            f = f.note(note);
        }
        // The ordinal Codex would have given it: after the highest before.
        let next = paging.records[..i]
            .iter()
            .filter_map(|(_, o)| match o {
                Ordinal::At(n) => Some(*n),
                _ => None,
            })
            .max()
            .and_then(|n| n.checked_add(1));
        if i == last
            && let Some(ordinal) = next
        {
            f = f.fix(vec![crate::finding::Action::SetOrdinal {
                loc: loc.clone(),
                ordinal,
            }]);
        }
        out.push(f);
    }
}
