use super::{Ctx, Rule};
use crate::escape::preview;
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "corrupt-record",
    severity: Severity::Error,
    summary: "a line or row does not parse as a record of its format (torn write at crash)",
    repair: Some("drop the record from the copy; it is kept verbatim in the repair log"),
    doc: r#"## What it does
Finds lines (or rows) that are not valid JSON, or are valid JSON but not a
record of the file's format: a message with an unknown role, a message whose
fields have the wrong types, a line from another format.

## Why is this bad?
A process killed mid-write leaves a torn last line; a disk or sync problem
leaves garbage in the middle. Loaders either crash on the record or skip it
silently, and a skipped message can orphan the tool calls around it. The rest
of the file is still checked: one torn line is not the end of the evidence.

## Example
```jsonl
{"role":"user","content":"hi"}
{"role":"assistant","content":"Hello! How can I he
```

## Repair
Drops the record from the copy and keeps it verbatim in the repair log, so
no byte of evidence is lost.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for rec in &ctx.conv.corrupt {
        let what = match rec.loc.line() {
            Some(line) => format!("line {line}"),
            None => "record".to_string(),
        };
        let summary = if rec.torn_tail {
            format!(
                "{what} is cut off: {} (torn write at the end of the file)",
                rec.reason
            )
        } else {
            format!("{what} {}", rec.reason)
        };
        let mut f = ctx
            .finding(&RULE, None, rec.loc.clone(), summary)
            .label(&rec.loc, format!("`{}`", preview(&rec.excerpt, 60)));
        // The most specific case the client treats in its own way.
        let mut cases = Vec::with_capacity(3);
        if rec.not_utf8 {
            cases.push(Pattern::CorruptRecordNotUtf8);
        }
        if rec.torn_tail {
            cases.push(Pattern::CorruptRecordTornTail);
        }
        cases.push(Pattern::CorruptRecord);
        let resume = ctx.profile().on_first(&cases);
        // A client that heals the line (drops a torn tail and goes on
        // whole) says so with its severity.
        f.severity = resume.severity_or(RULE.severity);
        for note in resume.notes(None, &[]) {
            f = f.note(note);
        }
        out.push(f.fix(vec![crate::finding::Action::DropRecord {
            loc: rec.loc.clone(),
        }]));
    }
}
