use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "glued-records",
    severity: Severity::Error,
    summary: "two or more records written on one line (`…}{…`)",
    repair: Some("write each record on a line of its own"),
    doc: r#"## What it does
Finds lines of a JSON Lines file that hold more than one JSON value: a
record written without its newline, the next one glued to it.

## Why is this bad?
A client that reads its files with a streaming JSON parser needing a
newline between values reads the first record of such a line
and skips the rest of the line. Every record after the first is lost on
resume, and with it whatever hangs off it: a tool result lost leaves its
call unanswered, which the client removes from the request too; a record
lost from the chain strands the history above it, and a lost first
prompt leaves a history that starts with the assistant, which the
provider refuses. (A `summary` or `file-history-snapshot` glued after a
message costs nothing: the client sends neither.) Line-by-line readers
(`jq`, scripts, other tools) fail on the line and lose every record of
it. Seen in real sessions, where the glued record held the assistant's
final answer.

## What providers answer
Nothing for the glued line itself; a history left starting with the
assistant: `messages: first message must use the "user" role`.

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

/// Records the client loads and sends (the rest it reads past).
const MESSAGES: &[&str] = &["user", "assistant", "system", "attachment"];

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(chain) = ctx.conv.chain.as_deref() else {
        return;
    };
    for g in &chain.glued {
        let line = g.loc.line().unwrap_or(0);
        let lost = g
            .lost
            .iter()
            .map(|t| format!("`{t}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let messages = g.lost.iter().any(|t| MESSAGES.contains(&t.as_str()));
        let resume = ctx.profile().on(if messages {
            Pattern::GluedRecords
        } else {
            Pattern::GluedRecordsNoMessage
        });
        let vars = [("lost", lost.as_str())];
        let mut f = ctx
            .finding(
                &RULE,
                None,
                g.loc.clone(),
                format!(
                    "line {line} holds {} records glued together: {}",
                    g.values,
                    resume.says(
                        "the resume reads the first and loses the rest ({lost})",
                        &vars
                    )
                ),
            )
            .label(&g.loc, format!("{} JSON values on one line", g.values))
            .notes(ctx.notes(&resume, None, &vars))
            .fix(vec![crate::finding::Action::SplitLine {
                loc: g.loc.clone(),
            }]);
        f.severity = resume.severity_or(if messages {
            Severity::Error
        } else {
            Severity::Warning
        });
        out.push(f);
    }
}
