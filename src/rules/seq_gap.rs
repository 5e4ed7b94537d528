use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "seq-gap",
    severity: Severity::Warning,
    summary: "a chunk log's sequence numbers skip or repeat, or its seq counter disagrees with the last chunk",
    repair: None,
    doc: r#"## What it does
dispatch promises a 1-based, gap-free `seq` per conversation, and keeps the
last seq written under `conv:<id>:seq`. This rule reports missing seq
numbers, seq numbers stored twice (under differently formatted keys), and a
counter that disagrees with the last chunk.

## Why is this bad?
A missing seq is a chunk that was never written or was deleted: part of a
message is gone. A counter behind the last chunk makes the next append
overwrite existing chunks; a counter ahead of it means chunks were lost. Sync
clients that resume from a seq cursor skip or duplicate data either way.

## Example
Chunks `…:chunk:0000000001`, `…:chunk:0000000002`, `…:chunk:0000000004` and
`conv:<id>:seq = 5`.

## Repair
Report only: a missing chunk cannot be rebuilt from the store.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    let Some(log) = &conv.chunks else { return };
    let mut expected = 1u64;
    for c in &log.chunks {
        if c.seq > expected {
            let missing = if c.seq - expected == 1 {
                format!("seq {expected} is missing")
            } else {
                format!("seq {expected}–{} are missing", c.seq - 1)
            };
            out.push(
                ctx.finding(
                    &RULE,
                    Some(c.message),
                    c.loc.clone(),
                    format!("{missing} from the chunk log"),
                )
                .label(
                    &c.loc,
                    format!("seq {} follows seq {}", c.seq, expected - 1),
                ),
            );
        }
        expected = expected.max(c.seq + 1);
    }
    for (seq, loc) in &log.repeated {
        out.push(
            ctx.finding(
                &RULE,
                None,
                loc.clone(),
                format!("seq {seq} is stored twice, under two keys"),
            )
            .label(loc, "second key for the same seq"),
        );
    }
    if let Some((loc, value)) = &log.seq_counter {
        let last = log.chunks.last().map(|c| c.seq).unwrap_or(0);
        match value.parse::<u64>() {
            Ok(n) if n == last => {}
            Ok(n) => out.push(
                ctx.finding(
                    &RULE,
                    None,
                    loc.clone(),
                    format!("the seq counter says {n}, but the last chunk is seq {last}"),
                )
                .label(loc, format!("counter = {n}"))
                .note(if n < last {
                    "the next append will overwrite existing chunks"
                } else {
                    "chunks after the last one stored were lost"
                }),
            ),
            Err(_) => out.push(
                ctx.finding(
                    &RULE,
                    None,
                    loc.clone(),
                    "the seq counter is not a number".to_string(),
                )
                .label(loc, "counter is not a decimal number"),
            ),
        }
    }
}
