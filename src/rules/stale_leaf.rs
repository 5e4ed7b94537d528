use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "stale-leaf",
    severity: Severity::Error,
    summary: "the record the client resumes from is a dead end: the latest turns are left out",
    repair: None,
    doc: r#"## What it does
Finds a session whose last record is a copy of an earlier one, when the
copy moves the leaf the resume starts from away from the latest
conversation.

## Why is this bad?
The client resumes from the last record of the file (its newest
descendant). A record written again at the end (a side-branch tool result,
a merge by another tool) makes that dead end the leaf: everything after it
is silently left out of the request (8 of 15 messages in the fixture), and
the new turn is appended under the dead end, so the loss persists.

## What providers answer
Nothing: the request is valid, and shorter.

## Example
```jsonl
{"type":"user","uuid":"r2","parentUuid":"c2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"ok"}]}}
{"type":"assistant","uuid":"z","parentUuid":"r1","message":{"role":"assistant","content":[{"type":"text","text":"done"}]}}
{"type":"user","uuid":"r2","parentUuid":"c2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"ok"}]}}
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
    let (Some(leaf), Some(natural)) = (chain.leaf, chain.displaced_leaf) else {
        return;
    };
    // A leaf that leaves nothing out is no dead end (the records after it
    // were re-linked under it, say).
    if chain.messages_kept == chain.messages_in_file {
        return;
    }
    let loc = &chain.records[leaf].loc;
    let resume = ctx.profile().on(Pattern::StaleLeaf);
    let vars = [
        ("leaf", loc.line().unwrap_or(0).to_string()),
        ("latest", chain.line(natural).unwrap_or(0).to_string()),
        ("kept", super::dangling_parent::kept(chain)),
    ];
    let vars = super::dangling_parent::refs(&vars);
    out.push(
        ctx.finding(
            &RULE,
            None,
            loc.clone(),
            resume.says(
                "the resume starts from line {leaf}, a dead end, not from line {latest}: {kept}",
                &vars,
            ),
        )
        .label(loc, "the leaf the client takes")
        .label(
            &chain.records[natural].loc,
            "the latest conversation: never sent",
        )
        .notes(ctx.notes(&resume, None, &vars))
        .note("the next turn is appended under the dead end, so the loss persists"),
    );
}
