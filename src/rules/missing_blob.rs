use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "missing-blob",
    severity: Severity::Warning,
    summary: "a record names a stored value by its key and the store does not hold it: the app rebuilds it from older records",
    repair: None,
    doc: r#"## What it does
Finds values a record names by key while the store does not hold them. In
LangGraph's PostgreSQL checkpointer (`langgraph-checkpoint-postgres`) a
checkpoint keeps its channel values apart, one `checkpoint_blobs` row per
channel and version, named by the checkpoint's `channel_versions`; the
finding is the thread's latest checkpoint naming a `messages` blob whose
row is gone (or is an `empty` row).

## Why is this bad?
The thread's state at that checkpoint is no longer stored anywhere: it
exists only as what the app can rebuild from the older checkpoints. The
thread still resumes, but it now depends on them: pruning old checkpoints
(`keep_latest`, a retention job) or losing the blob the rebuild starts
from loses the messages for good. The usual cause is a hand-run cleanup of
`checkpoint_blobs` or a partial restore.

## What the apps do
LangGraph 1.2 (`channels_from_checkpoint`) rebuilds a `messages` channel
(`add_messages`, a `BinaryOperatorAggregate`) that its checkpoint names
but does not hold: it walks the parent checkpoints up to the nearest one
whose blob is there, starts from that value and applies the `messages`
writes of every checkpoint on the way (`get_delta_channel_history`).
chatfsck reads the thread the same way; the finding says what the resume
sends. A graph whose `messages` is a plain value (no reducer) would
start empty instead.

## Example
```text
checkpoints       thread u  checkpoint 1f1e…7f23d  channel_versions.messages = 0000…0005.0.84…
checkpoint_blobs  (no row for thread u, messages, 0000…0005.0.84…)
```

## Repair
Report only: the rebuilt state is what the app resumes with. Restore the
row from a backup to make the thread independent of its older checkpoints.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    for m in &conv.missing_blobs {
        let f = ctx
            .finding(
                &RULE,
                None,
                m.missing.clone(),
                format!("{} is not stored: {}", m.what, m.rebuilt),
            )
            .label(&m.loc, "names the value")
            .label(&m.missing, "no such value in the store")
            .note("the thread now depends on the older records the value is rebuilt from: pruning them loses these messages");
        out.push(f);
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{Loc, MissingBlob};
    use crate::rules::testutil::*;

    #[test]
    fn a_missing_blob_is_reported_with_how_it_is_rebuilt() {
        let mut c = conv(crate::model::Dialect::LangGraph)
            .user("list")
            .assistant("listed")
            .build();
        assert!(rules_of(&c, "missing-blob").is_empty());
        let row = |table: &'static str, key: &str| Loc::Row {
            table: table.into(),
            key: key.into(),
            rowid: None,
        };
        c.missing_blobs.push(MissingBlob {
            loc: row("checkpoints", "c2"),
            missing: row("checkpoint_blobs", "c2/messages/2"),
            what: "the `messages` channel at version `2`".into(),
            rebuilt: "LangGraph rebuilds it from checkpoint `c1`: 2 messages".into(),
        });
        let f = rules_of(&c, "missing-blob");
        assert_eq!(f.len(), 1);
        assert!(f[0].summary.contains("checkpoint `c1`"), "{}", f[0].summary);
    }
}
