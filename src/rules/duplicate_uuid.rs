use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};
use crate::model::chain::{ChainRecord, RecordKind};
use foldhash::HashMap;

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
the copy loses neither. A later record whose parent descends from the
uuid it reuses closes a parent cycle: when its parent, and each parent up
from it, is the only record of its uuid, written between the two, up to
one that names the uuid as its parent (which then meant the earlier
record), the earlier gets a uuid of its own, the records written between
them that name the uuid as parent are linked to it under the new one,
and the later keeps its parent, so the cycle is gone and both are sent.
A later record naming its own uuid as parent, or a cycle through another
shared uuid, is left. Other records of different parents or kinds, an
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
    // Each uuid: the first record holding it, and how many do (made on
    // first use: few files reuse a uuid).
    let mut index = None;
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
        } else if r.kind == earlier.kind
            && matches!(r.kind, RecordKind::User | RecordKind::Assistant)
            && r.sidechain == earlier.sidechain
            && matches!(r.link, crate::model::chain::Link::Cycle { .. })
            && !shares_a_call(r, earlier)
            && closes_through_between(
                &chain.records,
                index.get_or_insert_with(|| by_uuid(&chain.records)),
                prev,
                i,
                uuid,
            )
        {
            // The later record's parent descends from the uuid it reuses:
            // the earlier gets a uuid of its own, and the cycle is gone.
            f = f.fix(vec![crate::finding::Action::UnshareUuid {
                earlier: earlier.loc.clone(),
                later: r.loc.clone(),
            }]);
        }
        out.push(f.id(uuid));
    }
}

/// Whether the records share a tool call or a result: both kept, it would
/// be sent twice.
fn shares_a_call(a: &ChainRecord, b: &ChainRecord) -> bool {
    a.calls.iter().any(|c| b.calls.contains(c)) || a.results.iter().any(|c| b.results.contains(c))
}

/// Each uuid of `records`: the first record holding it, and how many do.
fn by_uuid(records: &[ChainRecord]) -> HashMap<&str, (usize, usize)> {
    let mut index: HashMap<&str, (usize, usize)> = HashMap::default();
    for (i, r) in records.iter().enumerate() {
        if let Some(u) = r.uuid.as_deref() {
            index.entry(u).or_insert((i, 0)).1 += 1;
        }
    }
    index
}

/// Whether record `later`, which reuses the uuid of record `earlier`,
/// closes a parent cycle through records written between the two: its
/// parent, and each parent up from it, is the one record of its uuid,
/// written after `earlier` and before `later`, until one names `uuid` as
/// its parent (meaning the earlier record, the only one there was then).
/// Then giving the earlier record a uuid of its own, and those records
/// that name it their parent, breaks the cycle and keeps both. A later
/// record that names its own uuid as parent, or a path through a record
/// whose uuid is shared too or written elsewhere, is not that pattern.
fn closes_through_between(
    records: &[ChainRecord],
    index: &HashMap<&str, (usize, usize)>,
    earlier: usize,
    later: usize,
    uuid: &str,
) -> bool {
    let Some(mut at) = records[later].parent.as_deref() else {
        return false;
    };
    if at == uuid {
        return false;
    }
    for _ in 0..later.saturating_sub(earlier) {
        let Some(&(j, 1)) = index.get(at) else {
            return false;
        };
        let r = &records[j];
        if j <= earlier || j >= later || !r.kind.is_linkable() {
            return false;
        }
        match r.parent.as_deref() {
            Some(p) if p == uuid => return true,
            Some(p) => at = p,
            None => return false,
        }
    }
    false
}
