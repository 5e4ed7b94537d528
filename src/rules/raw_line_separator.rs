use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Action, Finding, Severity};
use crate::model::LineDamageKind;

pub static RULE: Rule = Rule {
    name: "raw-line-separator",
    severity: Severity::Warning,
    summary: "a record's text holds raw U+2028 / U+2029 characters, which some line splitters split on",
    repair: Some("write each as its escape (`\\u2028`, `\\u2029`): the same JSON value"),
    doc: r#"## What it does
Finds records of a JSON Lines file whose text holds a raw U+2028 LINE
SEPARATOR or U+2029 PARAGRAPH SEPARATOR (pasted text, a model's output).
JSON allows them raw inside strings, and `JSON.stringify` writes them
raw.

## Why is this bad?
JavaScript counts both as line terminators: a reader that splits its
log into lines by a regular expression (`/^.*$/m`) or by Unicode line
breaks cuts the record in two, and neither half parses. Copilot CLI
versions of early 2026 refused to resume such a log (`Session file is
corrupted (line N: SyntaxError …)`, copilot-cli#2658, #2490). A reader
that splits on `\n` only reads the record whole. The client's profile
says what its app does.

## Example
```jsonl
{"type":"user.message","data":{"content":"one line two"},"id":"e1","parentId":null}
```
(with a raw U+2028 between `line` and `two`)

## Repair
Writes each as its escape (`\u2028`, `\u2029`): the same JSON value,
read alike by every reader; the line as it was goes to the repair log.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for d in &ctx.conv.line_damage {
        let LineDamageKind::RawSeparators { count } = d.kind else {
            continue;
        };
        let line = d.loc.line().unwrap_or(0);
        let s = if count == 1 { "" } else { "s" };
        let resume = ctx.profile().on(Pattern::RawLineSeparator);
        let does = resume.says(
            "a reader that splits lines on Unicode line breaks cuts the record there",
            &[],
        );
        let mut f = ctx
            .finding(
                &RULE,
                None,
                d.loc.clone(),
                format!("line {line} holds {count} raw U+2028/U+2029 character{s}: {does}"),
            )
            .label(
                &d.loc,
                "raw U+2028 LINE SEPARATOR or U+2029 PARAGRAPH SEPARATOR",
            )
            .notes(ctx.notes(&resume, None, &[]))
            .fix(vec![Action::EscapeSeparators { loc: d.loc.clone() }]);
        f.severity = resume.severity_or(RULE.severity);
        out.push(f);
    }
}
