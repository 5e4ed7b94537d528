use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Action, Finding, Severity};
use crate::model::LineDamageKind;

pub static RULE: Rule = Rule {
    name: "nul-padding",
    severity: Severity::Error,
    summary: "a run of NUL bytes in a JSON Lines file: space a crash left unwritten",
    repair: Some("drop the NUL bytes (logged), keeping the record on their line"),
    doc: r#"## What it does
Finds runs of NUL bytes (`\0`) in a JSON Lines file: at its end, after
the last record, or at the start of a line, before a record. A file
system that had extended the file when the machine lost power (or the
process was killed) leaves the space it never wrote as zeros; the next
run of the app appends after them.

## Why is this bad?
The NUL bytes are no JSON. A client that reads its log line by line
fails on them: it may refuse the whole session (`No session or task
matched`, copilot-cli#2217, #2927), skip them, or drop the line they
share with a record, and with it the record. The client's profile says
what its app does.

## Example
```text
{"type":"assistant.turn_end","data":{"turnId":"1"},"id":"e9","parentId":"e8"}
\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0
```

## Repair
Drops the NUL bytes (the line as it was goes to the repair log), and a
line left empty with them; the record after them on their line is kept
whole.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for d in &ctx.conv.line_damage {
        let LineDamageKind::NulPadding { nuls, record } = d.kind else {
            continue;
        };
        let line = d.loc.line().unwrap_or(0);
        let s = if nuls == 1 { "" } else { "s" };
        let (pattern, what, default) = if record {
            let t = d
                .record
                .as_deref()
                .map(|t| format!("a `{t}` record"))
                .unwrap_or_else(|| "a record".to_string());
            (
                Pattern::NulPaddingBeforeRecord,
                format!("line {line} holds {nuls} NUL byte{s} beside {t}"),
                "a line-by-line reader finds no JSON on the line and loses the record",
            )
        } else {
            (
                Pattern::NulPadding,
                format!("line {line} is {nuls} NUL byte{s} and nothing else"),
                "a line-by-line reader finds no JSON on the line",
            )
        };
        let resume = ctx.profile().on(pattern);
        let does = resume.says(default, &[]);
        let mut f = ctx
            .finding(&RULE, None, d.loc.clone(), format!("{what}: {does}"))
            .label(&d.loc, format!("{nuls} NUL byte{s}"))
            .notes(ctx.notes(&resume, None, &[]))
            .fix(vec![Action::DropPadding { loc: d.loc.clone() }]);
        f.severity = resume.severity_or(RULE.severity);
        out.push(f);
    }
}
