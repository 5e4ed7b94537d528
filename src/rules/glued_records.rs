use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "glued-records",
    severity: Severity::Warning,
    summary: "two or more records written on one line (`…}{…`)",
    repair: Some("write each record on a line of its own"),
    doc: r#"## What it does
Finds lines of a JSON Lines file that hold more than one JSON value: a
record written without its newline, the next one glued to it.

## Why is this bad?
Claude Code 2.1.x reads its files with a streaming JSON parser
(`Bun.JSONL.parseChunk`), which takes every value on a line: nothing is
lost on resume. Every line-by-line reader (`jq`, scripts, other tools,
older clients) fails on the line and loses both records; seen in real
sessions, where the glued record held the assistant's final answer.

## What providers answer
Nothing.

## Example
```jsonl
{"type":"user","uuid":"a","message":{"role":"user","content":"hi"}}{"type":"summary","summary":"greeting","leafUuid":"a"}
```

## Repair
Writes each record on a line of its own, byte for byte; nothing is
dropped.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(chain) = ctx.conv.chain.as_deref() else {
        return;
    };
    for g in &chain.glued {
        let line = g.loc.line().unwrap_or(0);
        out.push(
            ctx.finding(
                &RULE,
                None,
                g.loc.clone(),
                format!(
                    "line {line} holds {} records glued together: Claude Code reads them all; line-by-line readers lose them",
                    g.values
                ),
            )
            .label(&g.loc, format!("{} JSON values on one line", g.values))
            .fix(vec![crate::finding::Action::SplitLine { loc: g.loc.clone() }]),
        );
    }
}
