use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};
use crate::model::{ExecStatus, MessageTable, PartKind};

pub static RULE: Rule = Rule {
    name: "index-gap",
    severity: Severity::Error,
    summary: "a message table's stored message indices skip values: a message was never stored",
    repair: Some(
        "rebuild a lost tool-result message from the tool execution records (settled ones); unsettled calls follow --orphan-calls",
    ),
    doc: r#"## What it does
Message tables give every message of a conversation an index (gbrain:
`subagent_messages.message_idx`, per `job_id`, from 0). This rule reports
indices that skip values: `0, 1, 3, 5` lost messages 2 and 4. When the
message before the gap holds tool calls that nothing answers, the lost
message is their tool-result message: the finding names those calls and, for
each, the execution record (gbrain: `subagent_tool_executions`) that can
rebuild its result, and whether it is settled (`complete` or `failed`) or
still `pending`. Such calls are not reported again by `orphan-tool-call`:
one cause, one finding.

## Why is this bad?
An app that rebuilds the history from the table on resume sends the calls
before the gap without their results, and the provider rejects the whole
request, on every retry: the job loops until it runs out of attempts. gbrain's
gateway loop (seed 003, PR #2257) persisted the assistant turns and the
execution rows but never the `user` message carrying the tool results, so
every even `message_idx` was missing.

## What providers answer
- Vercel AI SDK: `Tool results are missing for tool calls …` (`MissingToolResultsError`), or `Invalid prompt: The messages do not match the ModelMessage[] schema.`
- Anthropic: ``messages.N: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_…. Each `tool_use` block must have a corresponding `tool_result` block in the next message.``
- OpenAI: `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: …`

## Example
```
job_id=42 message_idx=0 user      [text "Dream cycle: review pages…"]
job_id=42 message_idx=1 assistant [text, tool_use toolu_01Gh… brain_list_pages]
job_id=42 message_idx=3 assistant [tool_use toolu_01qY… brain_get_page]
subagent_tool_executions: toolu_01Gh… complete, toolu_01qY… pending
```

## Repair
Inserts the lost message, at the missing index, as a `user` message of
`tool_result` blocks, one per dangling call: a `complete` execution gives its
`output` (as strict JSON text; a JSON string as its text), a `failed` one its
`error` with `is_error: true`. A call without a settled execution follows
the orphan-tool-call policy: a clearly marked placeholder (`is_error: true`,
logged as synthesized) by default; with `--no-synthesize`,
`--orphan-calls=report` or `--orphan-calls=drop` (dropping would edit the
assistant row, and message tables are repaired with inserts only) the whole
gap is left as it is, never half-filled, so that the app's own healer still
sees it. Gaps of more than one index, and gaps after a message with no
dangling call, cannot be rebuilt: they are reported. SQLite inputs are
repaired into a copy; PostgreSQL inputs are never modified: `--emit-sql`
writes a reviewable script of idempotent INSERTs, `--target` applies it to
another database.
"#,
    check,
};

fn range(table: &MessageTable, first: i64, last: i64) -> String {
    if first == last {
        format!("`{}` {first} is", table.index_column)
    } else {
        format!("`{}` {first}–{last} are", table.index_column)
    }
}

fn ids_list(ids: &[String]) -> String {
    ids.iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    let Some(table) = &conv.table else { return };
    for gap in &ctx.indices().gaps {
        let after = &conv.messages[gap.after];
        let after_idx = after.stored_index.unwrap_or_default();
        let Some(bi) = gap.before else {
            out.push(
                ctx.finding(
                    &RULE,
                    Some(gap.after),
                    after.loc.clone(),
                    format!(
                        "{} missing: the history starts at {after_idx}",
                        range(table, gap.first, gap.last)
                    ),
                )
                .label(&after.loc, format!("first stored message: `{}` {after_idx}", table.index_column))
                .note(format!(
                    "the app writes `{}` from {}; the first messages of this conversation were never stored or were deleted",
                    table.index_column, gap.first
                )),
            );
            continue;
        };
        let before = &conv.messages[bi];
        let before_idx = before.stored_index.unwrap_or_default();
        let calls: Vec<(usize, &str, &str)> = gap
            .dangling
            .iter()
            .filter_map(|&p| match &before.parts[p].kind {
                PartKind::ToolCall { id, name, .. } => Some((p, id.as_str(), name.as_str())),
                _ => None,
            })
            .collect();
        let ids: Vec<String> = calls.iter().map(|(_, id, _)| id.to_string()).collect();
        if calls.is_empty() {
            out.push(
                ctx.finding(
                    &RULE,
                    Some(gap.after),
                    after.loc.clone(),
                    format!(
                        "{} missing between {before_idx} and {after_idx}",
                        range(table, gap.first, gap.last)
                    ),
                )
                .label(
                    &after.loc,
                    format!("`{}` {after_idx} follows {before_idx}", table.index_column),
                )
                .label(
                    &before.loc,
                    format!("`{}` {before_idx}", table.index_column),
                )
                .note("what the lost messages held cannot be known from the table: report only"),
            );
            continue;
        }
        let mut notes = Vec::new();
        let mut settled = 0;
        for (_, id, name) in &calls {
            let status = match &table.executions {
                None => "the store keeps no tool execution records".to_string(),
                Some(ex) => match ex.for_call(id, before.stored_index) {
                    None => format!("no row in `{}`", ex.table),
                    Some(e) => {
                        let row = match e.id {
                            Some(r) => format!("`{}` id={r}", ex.table),
                            None => format!("a row of `{}`", ex.table),
                        };
                        if e.result().is_some() {
                            settled += 1;
                        }
                        match &e.status {
                            ExecStatus::Complete => {
                                format!("{row} is `complete`: its output rebuilds the result")
                            }
                            ExecStatus::Failed => {
                                format!(
                                    "{row} is `failed`: its error rebuilds the result (is_error)"
                                )
                            }
                            ExecStatus::Pending => format!(
                                "{row} is `pending`: the tool never settled, there is no result to rebuild"
                            ),
                            ExecStatus::Other(s) => {
                                format!("{row} has status `{s}`, not a settled one")
                            }
                        }
                    }
                },
            };
            notes.push(format!("`{id}` (`{name}`): {status}"));
        }
        let what = format!(
            "the tool-result message for {} was never stored",
            ids_list(&ids)
        );
        let summary = if gap.count() == 1 {
            format!("{} missing: {what}", range(table, gap.first, gap.last))
        } else {
            format!(
                "{} missing: {what}, nor {} more message{}",
                range(table, gap.first, gap.last),
                gap.count() - 1,
                if gap.count() == 2 { "" } else { "s" }
            )
        };
        let summary = match &table.executions {
            Some(ex) => format!(
                "{summary} ({settled} of {} result{} recoverable from `{}`)",
                calls.len(),
                if calls.len() == 1 { "" } else { "s" },
                ex.table
            ),
            None => summary,
        };
        let primary = before.part_loc(calls[0].0).clone();
        let mut f = ctx
            .finding(&RULE, Some(bi), primary.clone(), summary)
            .label(
                &primary,
                format!(
                    "`{}` {before_idx}: tool call{} {} dangle{}",
                    table.index_column,
                    if ids.len() == 1 { "" } else { "s" },
                    ids_list(&ids),
                    if ids.len() == 1 { "s" } else { "" }
                ),
            )
            .label(
                &after.loc,
                format!("`{}` {after_idx} follows {before_idx}", table.index_column),
            );
        for id in &ids {
            f = f.id(id);
        }
        for n in notes {
            f = f.note(n);
        }
        f = f.note("on resume the app replays these calls without results, and the provider rejects the history (AI SDK: `Tool results are missing for tool calls …`)");
        if gap.count() == 1 {
            let rebuild = vec![crate::finding::Action::RebuildResults {
                message: bi,
                index: gap.first,
                calls: calls.iter().map(|(p, _, _)| *p).collect(),
            }];
            // Results rebuilt from execution records are the tools' own;
            // a call with no settled record needs a placeholder.
            f = if settled == calls.len() {
                f.fix(rebuild)
            } else {
                f.unsafe_fix(rebuild)
            };
        } else {
            f = f.note("more than one message is missing: which index held the results cannot be known, so the gap is reported, not rebuilt");
        }
        out.push(f);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::model::*;
    use crate::rules::testutil::*;

    /// A gbrain job: messages at the given indices, with executions.
    fn job(indices: &[(i64, Role, Vec<PartKind>)], execs: &[(&str, &str)]) -> Conversation {
        let mut b = conv(crate::model::Dialect::Gbrain);
        for (idx, role, parts) in indices {
            b = b.msg(*role, parts.clone());
            b.conv.messages.last_mut().unwrap().stored_index = Some(*idx);
        }
        let mut c = b.build();
        let ex = Executions {
            table: "subagent_tool_executions".into(),
            rows: execs
                .iter()
                .enumerate()
                .map(|(i, (id, status))| Execution {
                    loc: Loc::Row {
                        table: "subagent_tool_executions".into(),
                        key: Arc::from(format!("job_id=7, tool_use_id={id}")),
                        rowid: Some(i as i64 + 1),
                    },
                    id: Some(i as i64 + 1),
                    message_index: 1,
                    ordinal: Some(0),
                    tool_use_id: id.to_string(),
                    tool_name: "brain_get_page".into(),
                    status: ExecStatus::parse(status),
                    output: Some("{\"ok\": true}".into()),
                    error: None,
                })
                .collect(),
        };
        c.table = Some(MessageTable {
            table: "subagent_messages".into(),
            conversation_column: Arc::from("job_id"),
            index_column: Arc::from("message_idx"),
            conversation_key: "7".into(),
            first_index: Some(0),
            executions: Some(ex),
        });
        c
    }

    #[test]
    fn seed_003_gaps_name_the_dangling_calls_and_their_executions() {
        let c = job(
            &[
                (0, Role::User, vec![text_part("dream")]),
                (
                    1,
                    Role::Assistant,
                    vec![call("toolu_A", "brain_list_pages", "{}")],
                ),
                (
                    3,
                    Role::Assistant,
                    vec![call("toolu_B", "brain_get_page", "{}")],
                ),
                (5, Role::Assistant, vec![text_part("synthesis")]),
            ],
            &[("toolu_A", "complete"), ("toolu_B", "pending")],
        );
        let f = rules_of(&c, "index-gap");
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].ids, vec!["toolu_A"]);
        assert!(f[0].summary.starts_with("`message_idx` 2 is missing: the tool-result message for `toolu_A` was never stored (1 of 1 result recoverable"), "{}", f[0].summary);
        assert!(f[0].notes[0].contains("is `complete`"), "{:?}", f[0].notes);
        assert!(f[1].notes[0].contains("is `pending`"), "{:?}", f[1].notes);
        assert!(f.iter().all(|f| f.fix.is_some()));
        // The gap explains the orphans: no second finding for the same cause…
        assert!(rules_of(&c, "orphan-tool-call").is_empty());
        // …unless index-gap does not run.
        let sel = crate::rules::Selection {
            select: vec![],
            ignore: vec!["index-gap".into()],
        };
        let orphans: Vec<_> = crate::rules::check(&c, &sel, provider_profile(c.source.dialect))
            .into_iter()
            .filter(|f| f.rule == "orphan-tool-call")
            .collect();
        assert_eq!(orphans.len(), 2);
    }

    #[test]
    fn contiguous_indices_and_other_gaps() {
        let c = job(
            &[
                (0, Role::User, vec![text_part("a")]),
                (1, Role::Assistant, vec![text_part("b")]),
            ],
            &[],
        );
        assert!(rules_of(&c, "index-gap").is_empty());
        let c = job(
            &[
                (2, Role::User, vec![text_part("a")]),
                (3, Role::Assistant, vec![text_part("b")]),
                (6, Role::User, vec![text_part("c")]),
            ],
            &[],
        );
        let f = rules_of(&c, "index-gap");
        assert_eq!(f.len(), 2);
        assert_eq!(
            f[0].summary,
            "`message_idx` 0–1 are missing: the history starts at 2"
        );
        assert_eq!(
            f[1].summary,
            "`message_idx` 4–5 are missing between 3 and 6"
        );
        assert!(f.iter().all(|f| f.fix.is_none()));
    }

    #[test]
    fn chunk_stores_and_files_have_no_index_gaps() {
        let mut c = conv(crate::model::Dialect::Anthropic)
            .user("a")
            .assistant("b")
            .build();
        c.messages[1].stored_index = Some(5);
        assert!(rules_of(&c, "index-gap").is_empty());
    }
}
