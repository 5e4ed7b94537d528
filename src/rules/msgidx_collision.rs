use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "msgidx-collision",
    severity: Severity::Error,
    summary: "adjacent messages share a stored message index, so an index-grouping loader merges them",
    repair: Some(
        "renumber msgIdx per conversation so every true message has its own index, in order",
    ),
    doc: r#"## What it does
In chunk stores (dispatch's SQLite KV), each chunk carries `msgIdx` and
`chunkIdx`. A true message starts where `chunkIdx` restarts at 0 or the role
changes. This rule finds adjacent true messages that carry the same `msgIdx`:
a loader that starts a new message only when `msgIdx` changes merges them.
Reusing an index is harmless when the neighbouring message has a different
one; only adjacent collisions merge, and only those are reported.

## Why is this bad?
dispatch (seed 000) assigned `msgIdx` per `append()` call, starting at 0 each
time, while `load()` grouped chunks by `msgIdx`. Every single-message append
produced `msgIdx=0`, so three turns of user and assistant chunks collapsed
into one `user` message. The model saw its own answers labelled as user
text, lost every earlier tool call (a user message keeps only text), and
fell back to writing tool calls as text in its reasoning.

## Example
```
seq=1 role=user      msgIdx=0 chunkIdx=0 text "hello"
seq=2 role=assistant msgIdx=0 chunkIdx=0 thinking "The user simply said hello..."
seq=3 role=assistant msgIdx=0 chunkIdx=1 text "Hello! How can I help you today?"
seq=4 role=user      msgIdx=0 chunkIdx=0 text "Can you read some files in this project"
```

## Repair
Renumbers `msgIdx` per conversation so that every true message gets its own
index, in order: keys, seq, chunk content and every other row stay
untouched. The repaired store loads correctly under the index-grouping
loader and under a role-splitting one. Safe.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    let Some(log) = &conv.chunks else { return };
    for group in log.loaded_groups() {
        let chunks = &log.chunks[group.clone()];
        let first_msg = chunks[0].message;
        let last_msg = chunks[chunks.len() - 1].message;
        if first_msg == last_msg {
            continue;
        }
        let n = last_msg - first_msg + 1;
        let mut roles: Vec<&str> = Vec::new();
        for c in chunks {
            if !roles.contains(&c.role.as_str()) {
                roles.push(c.role.as_str());
            }
        }
        // The collision starts at the first chunk of the second message.
        let second = chunks
            .iter()
            .find(|c| c.message != first_msg)
            .expect("n > 1");
        let msg_idx = chunks[0].msg_idx;
        let (s0, s1) = (chunks[0].seq, chunks[chunks.len() - 1].seq);
        let mut f = ctx.finding(
            &RULE,
            Some(second.message),
            second.loc.clone(),
            format!(
                "{n} messages (seq {s0}–{s1}) share msgIdx {msg_idx}: an index-grouping loader merges them into one `{}` message",
                chunks[0].role
            ),
        );
        // Label the first chunk of every merged message.
        let mut seen = None;
        for c in chunks {
            if seen != Some(c.message) {
                seen = Some(c.message);
                f = f.label(
                    &c.loc,
                    format!(
                        "seq {}: `{}` message {} starts, msgIdx {}",
                        c.seq, c.role, c.message, c.msg_idx
                    ),
                );
            }
        }
        if roles.len() > 1 {
            f = f.note(format!(
                "the merged message mixes {} chunks (see `mixed-role-message`)",
                roles
                    .iter()
                    .map(|r| format!("`{r}`"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ));
        }
        out.push(
            f.note("dispatch's append() restarted msgIdx at 0 on every call while load() grouped by msgIdx (seed 000)")
                .fix(vec![crate::finding::Action::RenumberIndices]),
        );
    }
}
