use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};
use crate::model::chain::Link;

pub static RULE: Rule = Rule {
    name: "parent-cycle",
    severity: Severity::Warning,
    summary: "`parentUuid` links form a cycle: the resume stops there (and bridges by timestamp)",
    repair: None,
    doc: r#"## What it does
Finds a record on the resumed chain whose `parentUuid` names a record the
walk from the leaf has already passed: the links form a cycle.

## Why is this bad?
Claude Code 2.1.x treats a parent already on the chain like a missing one:
it takes the newest record at most 5,000 ms older instead, or starts the
conversation at this record. When nothing older exists, nothing is lost;
otherwise the history before the cycle is silently left out (then the
finding is an error). Other readers that follow links may loop forever.

## What providers answer
Nothing: the client sends what its walk found.

## Example
```jsonl
{"type":"user","uuid":"a","parentUuid":"b","message":{"role":"user","content":"hi"}}
{"type":"assistant","uuid":"b","parentUuid":"a","message":{"role":"assistant","content":[{"type":"text","text":"hello"}]}}
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
        let Link::Cycle { parent, older } = &r.link else {
            continue;
        };
        let line = r.loc.line().unwrap_or(0);
        let pline = chain.line(*parent).unwrap_or(0);
        let (what, lost) = match older {
            None => (
                "nothing is older, so Claude Code starts the conversation here: nothing is lost"
                    .to_string(),
                false,
            ),
            Some((k, gap)) if *gap <= crate::model::chain::BRIDGE_MS => (
                format!(
                    "Claude Code bridges it to line {} ({} older)",
                    chain.line(*k).unwrap_or(0),
                    super::dangling_parent::seconds(*gap)
                ),
                false,
            ),
            Some(_) => (
                format!(
                    "Claude Code starts the conversation here and {}",
                    super::dangling_parent::kept(chain)
                ),
                true,
            ),
        };
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
            .label(&chain.records[*parent].loc, "already on the chain");
        if lost {
            f.severity = Severity::Error;
        }
        out.push(f);
    }
}
