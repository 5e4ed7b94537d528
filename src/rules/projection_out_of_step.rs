use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};
use crate::model::Loc;

pub static RULE: Rule = Rule {
    name: "projection-out-of-step",
    severity: Severity::Error,
    summary: "the index a client keeps of a history has read past the history's end: the history was rewritten shorter after it was indexed",
    repair: None,
    doc: r#"## What it does
Compares a history with the index its client keeps of it, where the client
keeps one: an incremental projection, beside the histories, that records
how far it has read each history (the next byte and the next ordinal to
read) and the items it read up to there. Codex 0.146 and later keeps one
for each paginated rollout (`thread_history_1.sqlite` in the Codex home,
table `thread_history_projection_state`). A history is judged only where it
is the file the client's thread index names (`state_5.sqlite`,
`threads.rollout_path`), or, with no such entry, the file carrying the
thread's rollout name in the Codex home.

## Why is this bad?
The projection reads on from where it stopped. A history rewritten shorter
after it was indexed (an editor, a sync, a script, a repair put in its
place by hand) leaves the projection pointing past its end: the items it
holds are those of the old bytes, and what the client appends later is
never indexed.

## What the apps answer
- Codex: `failed to prepare paginated fork: thread-store internal error: durable rollout shrank before projection: <path>` (`code -32603`; measured with 0.169.0)

## Example
`thread_history_projection_state` holds `next_rollout_byte_offset = 100111`
for the thread, and its rollout is now 89166 bytes long.

## Repair
`repair --in-place` resets the thread's projection (its rows in
`thread_items`, `thread_turns` and `thread_history_projection_state`, in one
transaction) after it has replaced the rollout, and also when the rollout
itself needs no edit: the client rebuilds it from the rollout on its next
load (measured: the fork then succeeds). A repair into a copy leaves the
index as it is (it is the client's, beside the original); the report of an
in-place repair says what was reset.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(paging) = ctx.conv.paging.as_deref() else {
        return;
    };
    let Some(p) = &paging.projection else {
        return;
    };
    // The history's length as read: the end of its last line, with the
    // newline after it (one byte more than a torn last line has: a
    // shrink of one byte goes unjudged, never a healthy file).
    let end = |loc: &Loc| match loc {
        Loc::Line { end, .. } => Some(end + 1),
        Loc::Row { .. } => None,
    };
    let Some(len) = paging
        .records
        .iter()
        .filter_map(|(loc, _)| end(loc))
        .chain(ctx.conv.corrupt.iter().filter_map(|c| end(&c.loc)))
        .max()
    else {
        return;
    };
    if p.next_byte <= len {
        return;
    }
    let store = p.store.display().to_string();
    let mut f = ctx
        .finding(
            &RULE,
            None,
            paging.declared_at.clone(),
            format!(
                "the index of this history in {store} has read its first {} bytes (ordinals below {}), and it now holds {len}: it was rewritten shorter after it was indexed",
                p.next_byte, p.next_ordinal
            ),
        )
        .label(
            &paging.declared_at,
            format!("indexed up to byte {}", p.next_byte),
        );
    let resume = ctx.profile().on(Pattern::ProjectionOutOfStep);
    f.severity = resume.severity_or(RULE.severity);
    let next = p.next_byte.to_string();
    let vars = [("store", store.as_str()), ("next_byte", next.as_str())];
    for note in ctx.notes(
        &resume,
        Some("what the index holds is not what the history holds, and what is appended later is never indexed"),
        &vars,
    ) {
        f = f.note(note);
    }
    out.push(f);
}
