use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "missing-required-field",
    severity: Severity::Error,
    summary: "a record lacks a member its client's current version requires of its type",
    repair: None,
    doc: r#"## What it does
Finds records that lack a member the client requires of their type when
it loads the history: a record written by an older version, before the
member became required (a schema tightened on upgrade), or a record
damaged on disk. Each store's reader knows its client's requirements
and the version they were read from.

## Why is this bad?
A client that validates its records on load refuses the record, and
with it, often, the whole session: Copilot CLI answers `Session file is
corrupted (line N: missing field `messageId`)` (its earlier versions
`data.summary: Required`, copilot-cli#2089), and nothing of the history
can be resumed. The client's profile says what its app does.

## Example
```jsonl
{"type":"assistant.message","data":{"content":"ok"},"id":"e5","timestamp":"2026-11-29T08:24:05Z","parentId":"e4"}
```

## Repair
Report only: the value the member should hold is not in the record, and
the client has no default of its own for it.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for m in &ctx.conv.missing_fields {
        let line = m.loc.line().unwrap_or(0);
        let resume = ctx.profile().on(Pattern::MissingRequiredField);
        let vars = [("field", m.field.as_str()), ("record", m.record.as_str())];
        let does = resume.says(
            "a client that validates its records on load refuses it",
            &vars,
        );
        let mut f = ctx
            .finding(
                &RULE,
                None,
                m.loc.clone(),
                format!(
                    "line {line} (`{}`) has no `{}`, which its client requires: {does}",
                    m.record, m.field
                ),
            )
            .label(&m.loc, format!("no `{}`", m.field))
            .notes(ctx.notes(&resume, None, &vars));
        f.severity = resume.severity_or(RULE.severity);
        out.push(f);
    }
}
