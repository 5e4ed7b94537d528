use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};
use crate::model::chain::{Chain, Link, RecordKind};

pub static RULE: Rule = Rule {
    name: "dangling-parent",
    severity: Severity::Error,
    summary: "a record's parent is missing: the resume bridges it by timestamp, or silently drops the history before it",
    repair: Some(
        "re-link the record to the record before it in file order (in a message tree: under the newest message before it, the links rebuilt)",
    ),
    doc: r#"## What it does
Finds records on the parent chain a resume walks (each record names its
parent by `parentUuid`) whose `parentUuid` names a
record that is not in the file (a deleted `progress` record, a line
overwritten by NUL bytes, a torn write), and says what the client does
with the gap.

## Why is this bad?
The client rebuilds a session by walking `parentUuid` back from the last
record. When a parent is missing, it takes the newest record at most
5,000 ms older than the orphan as its parent (`var ugr=5000` in the
client); when there is none, **the chain starts at the orphan and
everything before it is silently left out of the request**: the resume
succeeds, rc 0, with part of the history (3 of 13 messages, 12 of 26 in
the fixtures). When the orphan is an assistant record, the request then
starts with an assistant message. A bridged gap loses nothing (a warning);
an orphan with nothing older becomes the first record (a warning).

Stripping `progress` records from a session (anthropics/claude-code
#22107, #23375) is the common cause: their children point at records that
no longer exist.

pi (`parentId`) and Qwen Code (`parentUuid`) walk back from the last
record of the file the same way, but put nothing in a missing parent's
place: the walk stops at the record that names it, the resume succeeds
without a word, and the messages before it are not sent (an error when
there are any). In their sessions this is reported only; a line that did
not parse is the usual cause, and `corrupt-record`'s repair re-links its
child.

## What providers answer
Nothing: the request is sent without the history before the break. The
client's own log line, not printed by default: `transcript load: skipped
N line(s) that did not parse as JSON (e.g. a torn or corrupt write)`.

## Example
```jsonl
{"type":"user","uuid":"a","parentUuid":null,"timestamp":"2026-01-01T10:00:00.000Z","message":{"role":"user","content":"hi"}}
{"type":"assistant","uuid":"c","parentUuid":"b","timestamp":"2026-01-01T10:00:13.574Z","message":{"role":"assistant","content":[{"type":"text","text":"hello"}]}}
```

## In a message tree
A store that keeps a conversation as one tree of messages, each naming its
parent (`parentId`) and its children (`childrenIds`), and a pointer to the
message shown last (`currentId`), is walked from that pointer up the
parent links. Three links can name a message the tree does not hold:

- a message's `parentId` on the walk: the walk stops at the message, and
  every message above it is left out (an error);
- the pointer itself: the walk finds nothing (an error);
- an entry of `childrenIds`: a branch that leads nowhere (a warning).

The client's profile says what its app does with each (some mend the
pointer when they load the conversation). Repair re-links the tree: the
message hangs under the newest message stored before it that does not
descend from it, `childrenIds` are rebuilt from the parent links, and
the pointer names the newest leaf when it names no message; the whole
document before and after is in the repair log.

## Repair
Re-links the record to the record before it in file order (never across a
`compact_boundary`: the boundary starts the chain), so that the client
walks the whole file; the old `parentUuid` is in the repair log. A record
written before its own parent (its result, say) is passed over: linking
to it would make the record its own ancestor, a cycle. When every earlier
record descends from it, the record becomes the start of the chain
(`parentUuid` null), which is where the client starts anyway. A record
the client bridges to a record no link can name (one without a `uuid`)
is left as it is: a null link would start the chain there and cut off
what the bridge reaches.

The copy must resume at least the history the input does. The client
resumes from the newest (by time) descendant of the last record, so a
record hung under a newer one can move where its walk starts and leave
the record out, and a result linked in file order can land far from its
call. When the copy sends less of the input's history, or still holds
errors, the repair also writes the copy that takes the links the client
makes for bridged records (the edit says "the record the client bridges
it to"), and keeps that one if it loses less, or as little with fewer
errors.

An assistant reply that is the oldest record, its parent lost (the
session's first prompt never reached the disk, or was zeroed), is an
error and is not repaired: the client starts the conversation with the
reply, the provider refuses a conversation that does not start with the
user (`messages: first message must use the "user" role`), and no link
changes that. The prompt's text is not in the file.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    cuts(ctx, out);
    if let Some(tree) = ctx.conv.tree.as_deref() {
        check_tree(ctx, tree, out);
    }
    let Some(chain) = ctx.conv.chain.as_deref() else {
        return;
    };
    let profile = ctx.profile();
    for r in &chain.records {
        let line = r.loc.line().unwrap_or(0);
        let f = match &r.link {
            Link::Bridged {
                missing,
                to,
                gap_ms,
            } => {
                let resume = profile.on(Pattern::DanglingParentBridged);
                let vars = [
                    ("to", chain.line(*to).unwrap_or(0).to_string()),
                    ("gap", seconds(*gap_ms)),
                ];
                let vars = refs(&vars);
                let mut f = ctx
                    .finding(
                        &RULE,
                        None,
                        r.loc.clone(),
                        format!(
                            "line {line}'s parent `{missing}` is not in the file; {}",
                            resume.says(
                                "the resume bridges it to line {to} ({gap} older): nothing is lost",
                                &vars
                            )
                        ),
                    )
                    .label(
                        &r.loc,
                        format!("`parentUuid` names `{missing}`, which no record has"),
                    )
                    .label(
                        &chain.records[*to].loc,
                        "the newest older record: the client takes it as the parent",
                    )
                    .notes(ctx.notes(&resume, None, &vars));
                f.severity = resume.severity_or(Severity::Warning);
                f
            }
            Link::Broken {
                missing,
                older: Some((k, gap)),
            } => {
                let resume = profile.on(Pattern::DanglingParentTooOld);
                let vars = [("kept", kept(chain))];
                let vars = refs(&vars);
                let mut f = ctx
                    .finding(
                        &RULE,
                        None,
                        r.loc.clone(),
                        format!(
                            "line {line}'s parent `{missing}` is not in the file and the newest older record is {} older: {}",
                            seconds(*gap),
                            resume.says("the resume starts the conversation here and {kept}", &vars)
                        ),
                    )
                    .label(&r.loc, format!("`parentUuid` names `{missing}`, which no record has"))
                    .label(
                        &chain.records[*k].loc,
                        "the newest older record: too old to bridge (over 5,000 ms)",
                    )
                    .notes(ctx.notes(&resume, None, &vars))
                    .note("the resume succeeds without a word: the history before this record is not sent");
                if r.kind == RecordKind::Assistant {
                    f = f.note(STARTS_WITH_ASSISTANT);
                }
                f.severity = resume.severity_or(Severity::Error);
                f
            }
            // The first record in time, a reply whose prompt is lost: the
            // conversation the client sends starts with the assistant.
            Link::Broken {
                missing,
                older: None,
            } if r.kind == RecordKind::Assistant
                && r.unreached == crate::model::chain::Unreached::No =>
            {
                let resume = profile.on(Pattern::DanglingParentFirstReply);
                let mut f = ctx
                    .finding(
                        &RULE,
                        None,
                        r.loc.clone(),
                        format!(
                            "line {line}'s parent `{missing}` is not in the file and nothing is older: {}",
                            resume.says("the resume starts the conversation with this assistant reply, and the prompt it answers is lost", &[])
                        ),
                    )
                    .label(&r.loc, format!("`parentUuid` names `{missing}`, which no record has"))
                    .notes(ctx.notes(&resume, None, &[]))
                    .note(STARTS_WITH_ASSISTANT)
                    .note("not repaired: re-linking the reply would leave it first all the same, and the lost prompt's text is not in the file");
                f.severity = resume.severity_or(Severity::Error);
                out.push(f);
                continue;
            }
            Link::Broken {
                missing,
                older: None,
            } => {
                let resume = profile.on(Pattern::DanglingParentFirst);
                let mut f = ctx
                    .finding(
                        &RULE,
                        None,
                        r.loc.clone(),
                        format!(
                            "line {line}'s parent `{missing}` is not in the file; {}",
                            resume.says("nothing is older, so the resume starts the conversation here: nothing is lost", &[])
                        ),
                    )
                    .label(&r.loc, format!("`parentUuid` names `{missing}`, which no record has"))
                    .notes(ctx.notes(&resume, None, &[]));
                f.severity = resume.severity_or(Severity::Warning);
                f
            }
            _ => continue,
        };
        let mut f = f;
        if r.unreached == crate::model::chain::Unreached::CutOff {
            f = f.note("this record lies above a break in the chain further down (an error of this rule): the resume does not reach it until that break is mended");
        }
        out.push(f.fix(vec![crate::finding::Action::Relink { loc: r.loc.clone() }]));
    }
}

/// A store whose client stops its walk at a missing parent (pi, Qwen
/// Code): the records above are not sent, and nothing stands in.
fn cuts(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for cut in ctx.conv.parent_cuts.iter().filter(|c| !c.cycle) {
        let line = cut.loc.line().unwrap_or(0);
        let resume = ctx.profile().on(Pattern::DanglingParentCut);
        let vars = [("lost", cut.lost.to_string())];
        let vars = refs(&vars);
        let mut f = ctx
            .finding(
                &RULE,
                None,
                cut.loc.clone(),
                format!(
                    "line {line}'s parent `{}` is not in the file; {}",
                    cut.missing,
                    resume.says(
                        "the resume starts the conversation at this record, and the {lost} message(s) of the file before it are not sent",
                        &vars
                    )
                ),
            )
            .label(
                &cut.loc,
                format!("the parent link names `{}`, which no record has", cut.missing),
            )
            .notes(ctx.notes(&resume, None, &vars));
        f.severity = resume.severity_or(if cut.lost > 0 {
            Severity::Error
        } else {
            Severity::Warning
        });
        out.push(f);
    }
}

/// `vars` as the pairs a profile's placeholders are filled from.
pub(crate) fn refs<'a>(vars: &'a [(&'a str, String)]) -> Vec<(&'a str, &'a str)> {
    vars.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// What a request that starts with the assistant meets (validated by the
/// resume oracle's Anthropic rules, `first_not_user`).
pub(crate) const STARTS_WITH_ASSISTANT: &str = "the request then starts with an assistant message, which the provider refuses: `messages: first message must use the \"user\" role`";

/// "the resume keeps 3 of 13 messages".
pub(crate) fn kept(chain: &Chain) -> String {
    format!(
        "the resume keeps {} of {} messages",
        chain.messages_kept, chain.messages_in_file
    )
}

pub(crate) fn seconds(ms: i64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{}.{:03} s", ms / 1000, ms % 1000)
    }
}

/// A message tree: a parent, the current-message pointer or a child that
/// names no message.
fn check_tree(ctx: &Ctx<'_>, tree: &crate::model::tree::Tree, out: &mut Vec<Finding>) {
    use crate::model::tree::TreeEnd;
    let profile = ctx.profile();
    let (kept, stored) = tree.kept();
    for (i, child) in &tree.dangling_children {
        let n = &tree.nodes[*i];
        let resume = profile.on(Pattern::DanglingChild);
        let mut f = ctx
            .finding(
                &RULE,
                None,
                n.loc.clone(),
                format!(
                    "message `{}` lists a child `{child}` that is not in the conversation; {}",
                    n.key,
                    resume.says("a branch that leads nowhere", &[])
                ),
            )
            .label(
                &n.loc,
                format!("`childrenIds` names `{child}`, which no message has"),
            )
            .notes(ctx.notes(&resume, None, &[]));
        f.severity = resume.severity_or(Severity::Warning);
        out.push(f.fix(vec![crate::finding::Action::Relink { loc: n.loc.clone() }]));
    }
    match &tree.end {
        Some(TreeEnd::MissingParent { at, missing }) => {
            let n = &tree.nodes[*at];
            let resume = profile.on(Pattern::DanglingParentInTree);
            let vars = [(
                "kept",
                format!("{kept} of {stored} stored messages are reached"),
            )];
            let vars = refs(&vars);
            let mut f = ctx
                .finding(
                    &RULE,
                    None,
                    n.loc.clone(),
                    format!(
                        "message `{}`'s parent `{missing}` is not in the conversation; {}",
                        n.key,
                        resume.says(
                            "the walk from the current message stops here: {kept}",
                            &vars
                        )
                    ),
                )
                .label(
                    &n.loc,
                    format!(
                        "`{}` names `{missing}`, which no message has",
                        tree.link_names().0
                    ),
                )
                .notes(ctx.notes(&resume, None, &vars));
            f.severity = resume.severity_or(Severity::Error);
            out.push(f.fix(vec![crate::finding::Action::Relink { loc: n.loc.clone() }]));
        }
        Some(TreeEnd::MissingCurrent { missing }) => {
            let Some(at) = tree.current_loc.clone() else {
                return;
            };
            let resume = profile.on(Pattern::DanglingCurrent);
            let mut f = ctx
                .finding(
                    &RULE,
                    None,
                    at.clone(),
                    format!(
                        "the current message `{missing}` is not in the conversation ({stored} messages stored); {}",
                        resume.says("a walk from it finds nothing", &[])
                    ),
                )
                .label(
                    &at,
                    format!("`{}` names `{missing}`, which no message has", tree.link_names().1),
                )
                .notes(ctx.notes(&resume, None, &[]));
            f.severity = resume.severity_or(Severity::Error);
            out.push(f.fix(vec![crate::finding::Action::Relink { loc: at }]));
        }
        _ => {}
    }
}
