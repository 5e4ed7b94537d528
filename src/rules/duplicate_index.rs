use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};
use crate::model::Loc;

pub static RULE: Rule = Rule {
    name: "duplicate-index",
    severity: Severity::Error,
    summary: "two rows of a message table claim the same message index",
    repair: None,
    doc: r#"## What it does
Reports rows of one conversation in a message table that carry the same
message index. gbrain's `subagent_messages` forbids it with
`UNIQUE (job_id, message_idx)`; a table read with `--table` and the column
flags may have no such constraint.

## Why is this bad?
A loader that keys messages by index keeps one of the rows and silently loses
the other; one that orders by index alone gets them in an undefined order,
which changes from one query plan to the next. An app that writes with
`ON CONFLICT DO NOTHING` under a unique constraint never produces this; two
writers racing on a table without one do (a re-claimed job whose old worker
is still writing).

## What providers answer
Nothing specific: depending on which row the loader keeps, the history
loses a message (see `index-gap` and `orphan-tool-call` for what providers
answer then) or holds two turns of one role in a row (`role-order`).

## Example
```
conversation_id=c1 idx=0 user      "hello"
conversation_id=c1 idx=1 assistant "Hi!"
conversation_id=c1 idx=1 assistant "Hello! How can I help?"
```

## Repair
Report only: which of the rows is the real message cannot be known from the
table.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    let Some(table) = &conv.table else { return };
    for run in &ctx.indices().duplicates {
        let idx = conv.messages[run[0]].stored_index.unwrap_or_default();
        let rowids: Vec<String> = run
            .iter()
            .filter_map(|&i| match &conv.messages[i].loc {
                Loc::Row { rowid: Some(r), .. } => Some(r.to_string()),
                _ => None,
            })
            .collect();
        let which = if rowids.len() == run.len() {
            format!(" (rowids {})", rowids.join(", "))
        } else {
            String::new()
        };
        let second = &conv.messages[run[1]];
        let mut f = ctx.finding(
            &RULE,
            Some(run[1]),
            second.loc.clone(),
            format!(
                "{} rows claim `{}` {idx}{which}",
                run.len(),
                table.index_column
            ),
        );
        for (k, &i) in run.iter().enumerate() {
            let m = &conv.messages[i];
            f = f.label(
                &m.loc,
                format!("row {} of {}: `{}` message", k + 1, run.len(), m.role),
            );
        }
        out.push(f.note(
            "a loader keyed by index keeps one of them and loses the others; which one is undefined",
        ));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::model::*;
    use crate::rules::testutil::*;

    #[test]
    fn two_rows_with_one_index() {
        let mut c = conv(crate::model::Dialect::Table)
            .user("hello")
            .assistant("Hi!")
            .assistant("Hello!")
            .build();
        for (i, idx) in [0, 1, 1].into_iter().enumerate() {
            c.messages[i].stored_index = Some(idx);
            c.messages[i].loc = Loc::Row {
                table: "chat".into(),
                key: Arc::from(format!("conv=c1, idx={idx}")),
                rowid: Some(i as i64 + 10),
            };
        }
        c.table = Some(MessageTable {
            table: "chat".into(),
            conversation_column: Arc::from("conv"),
            index_column: Arc::from("idx"),
            conversation_key: "c1".into(),
            first_index: None,
            executions: None,
        });
        let f = rules_of(&c, "duplicate-index");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].summary, "2 rows claim `idx` 1 (rowids 11, 12)");
        assert!(f[0].fix.is_none());
        assert!(rules_of(&c, "index-gap").is_empty());
    }
}
