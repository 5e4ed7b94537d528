use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "missing-tool-output",
    severity: Severity::Warning,
    summary: "a tool result names the file its full output was saved to, and that file is gone",
    repair: None,
    doc: r#"## What it does
Finds tool results whose full output the app kept in a file of its own,
when that file is neither where the result names it nor beside the
history. Claude Code 2.1.x writes an output too large for the session to
`<sessionId>/tool-results/<id>.txt` and keeps in the session only
`<persisted-output>`, the file's path and a 2 KB preview.

## Why is this bad?
The full output is lost. The model is sent the preview and a path that no
longer exists: when it reads the file (it is told to), the read fails, and
it goes on with the preview alone or runs the tool again. The usual cause
is a project folder copied without its session folders, or the session
folder cleaned up (`cleanupPeriodDays`) while the session file was kept.

## What the apps do
Claude Code 2.1.330 sends the stored `<persisted-output>` text as it is, on
every resume; nothing reads the file unless the model does.

## Example
```json
{"type":"tool_result","tool_use_id":"toolu_01…","content":"<persisted-output>\nOutput too large (83.6KB). Full output saved to: /home/u/.claude/projects/-home-u-app/3f1c…/tool-results/toolu_01….txt\n\nPreview (first 2KB):\n…\n</persisted-output>"}
```
with no `3f1c…/tool-results/toolu_01….txt` beside the session file.

## Repair
Report only: the output cannot be rebuilt. Restore the session's folder
(`<sessionId>/tool-results/`) from a backup.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    for m in &conv.missing_outputs {
        let Some(msg) = conv.messages.get(m.message) else {
            continue;
        };
        let loc = msg.part_loc(m.part).clone();
        let f = ctx
            .finding(
                &RULE,
                Some(m.message),
                loc.clone(),
                format!(
                    "tool result's full output was saved to `{}`, which is gone",
                    m.file
                ),
            )
            .label(&loc, "names an output file that is not there")
            .note(format!("not found there nor beside the history (`{}`)", m.looked))
            .note("the model is sent only the preview and this path; reading the file fails, so the full output is lost");
        out.push(f);
    }
}

#[cfg(test)]
mod tests {
    use crate::model::MissingOutput;
    use crate::rules::testutil::*;

    #[test]
    fn a_missing_output_file_is_reported_on_its_result() {
        let mut c = conv(crate::model::Dialect::ClaudeCode)
            .user("list")
            .assistant("listed")
            .build();
        assert!(rules_of(&c, "missing-tool-output").is_empty());
        c.missing_outputs.push(MissingOutput {
            message: 1,
            part: 0,
            file: "/h/p/s/tool-results/t.txt".into(),
            looked: "p/s/tool-results/t.txt".into(),
        });
        let f = rules_of(&c, "missing-tool-output");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].message, Some(1));
        assert!(
            f[0].summary.contains("/h/p/s/tool-results/t.txt"),
            "{}",
            f[0].summary
        );
    }
}
