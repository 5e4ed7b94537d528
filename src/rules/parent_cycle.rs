use super::dangling_parent::{STARTS_WITH_ASSISTANT, kept, refs, seconds};
use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};
use crate::model::chain::{Link, Unreached};

pub static RULE: Rule = Rule {
    name: "parent-cycle",
    severity: Severity::Warning,
    summary: "`parentUuid` links form a cycle: the resume stops there (and bridges by timestamp)",
    repair: Some(
        "in a message tree, break the cycle at its oldest message and hang that under the newest message before it",
    ),
    doc: r#"## What it does
Finds a record on the resumed chain whose `parentUuid` names a record the
walk from the leaf has already passed: the links form a cycle.

## Why is this bad?
The client treats a parent already on the chain like a missing one:
it takes the newest record at most 5,000 ms older instead, or starts the
conversation at this record. When nothing older exists, nothing is lost;
otherwise the history before the cycle is silently left out (then the
finding is an error). Other readers that follow links may loop forever.

pi's walk keeps no record of what it passed: on a cycle it never ends,
and the resume hangs (an error). Qwen Code's walk stops at the cycle and
leaves out what it does not reach.

## What providers answer
Nothing: the client sends what its walk found.

## Example
```jsonl
{"type":"user","uuid":"a","parentUuid":"b","message":{"role":"user","content":"hi"}}
{"type":"assistant","uuid":"b","parentUuid":"a","message":{"role":"assistant","content":[{"type":"text","text":"hello"}]}}
```

## In a message tree
A store that keeps a conversation as one tree of messages with a pointer
to the message shown last is walked from that pointer up the `parentId`
links. A link back onto the walk makes that walk endless: a client that
follows it never shows the conversation (an error; the client's profile
says what its app does).

## Repair
On a parent chain, report only. In a message tree, the cycle is broken at
its oldest message (by timestamp), which is hung under the newest message
stored before it that does not descend from it, and the children lists
are rebuilt from the parent links; the whole document before and after
is in the repair log.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    cuts(ctx, out);
    if let Some(tree) = ctx.conv.tree.as_deref()
        && let Some(crate::model::tree::TreeEnd::Cycle { at, parent }) = &tree.end
    {
        let (n, p) = (&tree.nodes[*at], &tree.nodes[*parent]);
        let resume = ctx.profile().on(Pattern::ParentCycleInTree);
        let mut f = ctx
            .finding(
                &RULE,
                None,
                n.loc.clone(),
                format!(
                    "message `{}`'s parent is `{}`, which descends from it (a cycle); {}",
                    n.key,
                    p.key,
                    resume.says("a walk that follows the links never ends", &[])
                ),
            )
            .label(
                &n.loc,
                format!(
                    "`{}` names `{}`, already on the walk",
                    tree.link_names().0,
                    p.key
                ),
            )
            .notes(ctx.notes(&resume, None, &[]));
        f.severity = resume.severity_or(Severity::Error);
        out.push(f.fix(vec![crate::finding::Action::Relink { loc: n.loc.clone() }]));
    }
    let Some(chain) = ctx.conv.chain.as_deref() else {
        return;
    };
    for r in &chain.records {
        let Link::Cycle { parent, older } = &r.link else {
            continue;
        };
        let line = r.loc.line().unwrap_or(0);
        let pline = chain.line(*parent).unwrap_or(0);
        // Nothing older in time does not mean nothing is lost: the
        // messages above the cycle in the file (a record whose reused uuid
        // closed it, written with an older time) are never reached.
        let above = chain
            .records
            .iter()
            .filter(|x| {
                x.kind.is_message()
                    && x.sidechain == r.sidechain
                    && x.unreached == Unreached::OffBranch
                    && x.loc.line() < r.loc.line()
            })
            .count();
        let (pattern, default, vars, severity) = match older {
            None if above == 0 => (
                Pattern::ParentCycleFirst,
                "nothing is older, so the resume starts the conversation here: nothing is lost",
                Vec::new(),
                Severity::Warning,
            ),
            Some((k, gap)) if *gap <= crate::model::chain::BRIDGE_MS => (
                Pattern::ParentCycleBridged,
                "the resume bridges it to line {to} ({gap} older)",
                vec![
                    ("to", chain.line(*k).unwrap_or(0).to_string()),
                    ("gap", seconds(*gap)),
                ],
                Severity::Warning,
            ),
            _ => (
                Pattern::ParentCycleTooOld,
                "the resume starts the conversation here and {kept}",
                vec![("kept", kept(chain))],
                Severity::Error,
            ),
        };
        let resume = ctx.profile().on(pattern);
        let vars = refs(&vars);
        let what = resume.says(default, &vars);
        let mut f = ctx
            .finding(
                &RULE,
                None,
                r.loc.clone(),
                format!(
                    "line {line}'s parent is line {pline}, which descends from it (a cycle); {what}"
                ),
            )
            .label(&r.loc, "`parentUuid` points down the chain")
            .label(&chain.records[*parent].loc, "already on the chain")
            .notes(ctx.notes(&resume, None, &vars));
        if above > 0 && r.kind == crate::model::chain::RecordKind::Assistant {
            f = f.note(STARTS_WITH_ASSISTANT);
        }
        f.severity = resume.severity_or(severity);
        out.push(f);
    }
}

/// A store whose client does not look for another parent (pi, Qwen Code):
/// what its walk does at the cycle is the profile's to say.
fn cuts(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for cut in ctx.conv.parent_cuts.iter().filter(|c| c.cycle) {
        let line = cut.loc.line().unwrap_or(0);
        let resume = ctx.profile().on(Pattern::ParentCycleCut);
        let vars = [("lost", cut.lost.to_string())];
        let vars = refs(&vars);
        let mut f = ctx
            .finding(
                &RULE,
                None,
                cut.loc.clone(),
                format!(
                    "line {line}'s parent `{}` is already on the walk from the last record (a cycle); {}",
                    cut.missing,
                    resume.says(
                        "the resume stops there, and the {lost} message(s) of the file before it are not sent",
                        &vars
                    )
                ),
            )
            .label(&cut.loc, "the parent link points down the walk")
            .notes(ctx.notes(&resume, None, &vars));
        f.severity = resume.severity_or(if cut.lost > 0 {
            Severity::Error
        } else {
            Severity::Warning
        });
        out.push(f);
    }
}
