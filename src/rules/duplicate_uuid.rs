use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};
use crate::model::chain::RecordKind;

pub static RULE: Rule = Rule {
    name: "duplicate-uuid",
    severity: Severity::Error,
    summary: "two records share one `uuid`: the later replaces the earlier, whose content is lost",
    repair: Some(
        "remove an exact copy (kept in the repair log); keep both of two different records, the earlier under a new uuid",
    ),
    doc: r#"## What it does
Finds records whose `uuid` an earlier record of the file already has.

## Why is this bad?
A client that walks a parent chain indexes records by `uuid`, and the
later record replaces the
earlier one: its content and its `parentUuid`. Two different records with
one uuid therefore lose the earlier one's text on every resume, silently
(an error). An exact copy changes nothing (a warning), unless it is the
last record of the file: then the client resumes from it, and a copy of
a side-branch record moves the resume to a dead end (see `stale-leaf`).
Copies come from tools that rewrite or merge session files.

## What providers answer
Nothing: the client sends the later record in the earlier one's place.

## Example
```jsonl
{"type":"assistant","uuid":"b","parentUuid":"a","message":{"role":"assistant","content":[{"type":"text","text":"first"}]}}
{"type":"assistant","uuid":"b","parentUuid":"a","message":{"role":"assistant","content":[{"type":"text","text":"second"}]}}
```

## Repair
Removes the later copy of an exact duplicate (kept verbatim in the repair
log): the first copy stays, and a copy written at the end no longer moves
the leaf.

Two different user or assistant records with one uuid and one parent are
both kept: the earlier gets a uuid of its own (derived from the old one,
so a second repair gives the same copy) and the later is chained to it,
so the resume sends the earlier text, then the later, where the client
sent the later alone. Which of the two is right stays the reader's call;
the copy loses neither. Records of different parents or kinds, an
earlier record holding a tool call or result (which would then be sent
twice), and a later record holding a tool result (the earlier, kept
before it, would come between the call and its result, and the client
would answer the call with a placeholder) are left as they are.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(chain) = ctx.conv.chain.as_deref() else {
        return;
    };
    for (i, r) in chain.records.iter().enumerate() {
        let Some((prev, exact)) = r.duplicate_of else {
            continue;
        };
        let line = r.loc.line().unwrap_or(0);
        let pline = chain.line(prev).unwrap_or(0);
        let uuid = r.uuid.as_deref().unwrap_or_default();
        // The last loaded record is where the client starts.
        let last = !chain.records[i + 1..]
            .iter()
            .any(|x| !matches!(x.kind, RecordKind::Progress | RecordKind::Meta));
        let moved = exact && last && chain.displaced_leaf.is_some();
        let vars = [("line", line.to_string()), ("pline", pline.to_string())];
        let vars = super::dangling_parent::refs(&vars);
        let (resume, mut f) = if exact {
            let (resume, head, default) = if moved {
                (
                    ctx.profile().on(Pattern::DuplicateUuidCopyAtEnd),
                    format!(
                        "line {line} repeats line {pline} (uuid `{uuid}`) at the end of the file"
                    ),
                    "the resume starts from it (see `stale-leaf`)",
                )
            } else {
                (
                    ctx.profile().on(Pattern::DuplicateUuidCopy),
                    format!("line {line} repeats line {pline} (uuid `{uuid}`, same content)"),
                    "the resume reads one copy, nothing is lost",
                )
            };
            let f = ctx
                .finding(
                    &RULE,
                    None,
                    r.loc.clone(),
                    format!("{head}: {}", resume.says(default, &vars)),
                )
                .label(&r.loc, "the copy")
                .label(&chain.records[prev].loc, "the first copy");
            (resume, f)
        } else {
            let resume = ctx.profile().on(Pattern::DuplicateUuidReused);
            let f = ctx
                .finding(
                    &RULE,
                    None,
                    r.loc.clone(),
                    format!(
                        "line {line} reuses the uuid `{uuid}` of line {pline} with different content: {}",
                        resume.says(
                            "the resume keeps line {line} and line {pline} is lost",
                            &vars
                        )
                    ),
                )
                .label(&r.loc, "the later record: it replaces the earlier one")
                .label(&chain.records[prev].loc, "the earlier record: never sent");
            (resume, f)
        };
        f = f.notes(ctx.notes(&resume, None, &vars));
        f.severity = resume.severity_or(if exact && !moved {
            Severity::Warning
        } else {
            Severity::Error
        });
        let earlier = &chain.records[prev];
        if exact {
            // The later copy says nothing the first does not.
            f = f.fix(vec![crate::finding::Action::DropRecord {
                loc: r.loc.clone(),
            }]);
        } else if r.kind == earlier.kind
            && matches!(r.kind, RecordKind::User | RecordKind::Assistant)
            && r.parent == earlier.parent
            && r.sidechain == earlier.sidechain
        {
            f = f.fix(vec![crate::finding::Action::KeepReplaced {
                earlier: earlier.loc.clone(),
                later: r.loc.clone(),
            }]);
        }
        out.push(f.id(uuid));
    }
}
