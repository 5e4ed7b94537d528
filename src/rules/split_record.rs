use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Action, Finding, Severity};
use crate::model::LineDamageKind;

pub static RULE: Rule = Rule {
    name: "split-record",
    severity: Severity::Error,
    summary: "one record written over several lines: raw newlines inside its strings",
    repair: Some("rejoin the lines into one record, each raw newline written as `\\n`"),
    doc: r#"## What it does
Finds records of a JSON Lines file written over several lines: a string
of the record holds a raw newline (a writer that did not escape it, or
an edit by hand), so the record's text runs on over the next lines. No
line of it parses alone; the lines joined, each raw newline inside a
string read as the escape `\n`, parse as one record.

## Why is this bad?
A client reads its log line by line, and each of these lines is no
JSON: it drops them, or refuses the whole file. What the record held (a
prompt, a reply, a tool's output) is lost from the resumed history, and
a client that rewrites its log on resume loses it for good. The client's
profile says what its app does.

## Example
```jsonl
{"type":"user.message","data":{"content":"second
prompt"},"id":"e1","parentId":null}
```

## Repair
Writes the record on one line, each raw newline inside a string written
as `\n` (a carriage return before it as `\r`): the same text, valid
JSON. The lines as they were go to the repair log.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for d in &ctx.conv.line_damage {
        let LineDamageKind::Split { lines } = d.kind else {
            continue;
        };
        let first = d.loc.line().unwrap_or(0);
        let last = first + lines.saturating_sub(1);
        let record = d
            .record
            .as_deref()
            .map(|t| format!("one `{t}` record"))
            .unwrap_or_else(|| "one record".to_string());
        let resume = ctx.profile().on(Pattern::SplitRecord);
        let vars = [("lines", &*format!("{first}–{last}"))];
        let does = resume.says(
            "a line-by-line reader finds no JSON on any of them and drops them",
            &vars,
        );
        let mut f = ctx
            .finding(
                &RULE,
                None,
                d.loc.clone(),
                format!(
                    "lines {first}–{last} hold {record} split by raw newlines inside its strings: {does}"
                ),
            )
            .label(&d.loc, format!("{lines} lines that parse as one record"))
            .notes(ctx.notes(&resume, None, &vars))
            .fix(vec![Action::JoinLines { loc: d.loc.clone() }]);
        f.severity = resume.severity_or(RULE.severity);
        out.push(f);
    }
}
