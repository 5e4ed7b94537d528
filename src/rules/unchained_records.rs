use super::{Ctx, Rule};
use crate::finding::Action;
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};
use crate::model::chain::Unreached;

pub static RULE: Rule = Rule {
    name: "unchained-records",
    severity: Severity::Error,
    summary: "no record carries a `parentUuid`: the resume sends only the last one",
    repair: Some("link each record to the record before it in file order"),
    doc: r#"## What it does
Finds a session written as a parent chain with several user/assistant
records none of
which has a `parentUuid`.

## Why is this bad?
The client resumes by walking `parentUuid` back from the last record.
With no links, every record is a root, and only the last one is sent
(1 of 19 in the fixture). The client has a warning for it, printed only in
some modes: "Resume transcript … has N user/assistant records but none
carry parentUuid links; only M reached the resumed conversation".

## What providers answer
Nothing, or an error when the one record sent is an assistant message.

## Example
```jsonl
{"type":"user","uuid":"a","parentUuid":null,"message":{"role":"user","content":"hi"}}
{"type":"assistant","uuid":"b","parentUuid":null,"message":{"role":"assistant","content":[{"type":"text","text":"hello"}]}}
```

## Repair
Links each record to the record before it in file order, main chain and
sidechain records apart (the order the client wrote them in, and the only
order the file still has), so that the resume walks the whole file; a
`compact_boundary` stays the start of its chain. Each link is in the
repair log.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(chain) = ctx.conv.chain.as_deref() else {
        return;
    };
    let mut msgs = chain.records.iter().filter(|r| {
        r.kind.is_message() && !matches!(r.unreached, Unreached::Replaced | Unreached::Sidechain)
    });
    if chain.messages_in_file < 2 || !msgs.all(|r| r.parent.is_none()) {
        return;
    }
    let Some(leaf) = chain.leaf else { return };
    let loc = chain.records[leaf].loc.clone();
    let resume = ctx.profile().on(Pattern::UnchainedRecords);
    let vars = [
        ("leaf", loc.line().unwrap_or(0).to_string()),
        ("kept", super::dangling_parent::kept(chain)),
    ];
    let vars = super::dangling_parent::refs(&vars);
    let mut f = ctx
        .finding(
            &RULE,
            None,
            loc.clone(),
            format!(
                "none of the {} user/assistant records carries a `parentUuid`: {}",
                chain.messages_in_file,
                resume.says("the resume sends only line {leaf}; {kept}", &vars)
            ),
        )
        .label(&loc, "the only record the resume sends")
        .notes(ctx.notes(&resume, None, &vars));
    f.loc = None;
    let links = chain
        .records
        .iter()
        .filter(|r| {
            r.parent.is_none()
                && r.subtype.as_deref() != Some("compact_boundary")
                && r.kind.is_linkable()
        })
        .map(|r| Action::Relink { loc: r.loc.clone() })
        .collect();
    out.push(f.fix(links));
}
