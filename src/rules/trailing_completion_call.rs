use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "trailing-completion-call",
    severity: Severity::Info,
    summary: "a completion tool call its app leaves unanswered by design (Cline's accepted `attempt_completion`)",
    repair: None,
    doc: r#"## What it does
Names the tool calls that the app itself leaves without a result on
purpose, so that they are not mistaken for orphans: Cline's and Roo Code's
`attempt_completion`. When the user accepts the completion, the extension
starts a new task and pushes no result (`AttemptCompletionHandler`,
`AttemptCompletionTool`: `yesButtonClicked` returns).

## Why is this bad?
It is not: this is information. The stored history ends on (or moves on
after) an unanswered call, which a provider would reject if the file were
sent as it is; the app answers it itself when the task is resumed (Cline
inserts `result missing`, Roo Code `Task was interrupted before this tool
call could be completed.`). Any other tool reading the file must do the same.

## Example
```json
[…, {"role":"assistant","content":[{"type":"tool_use","id":"toolu_01…","name":"attempt_completion","input":{"result":"Done."}}]}]
```

## Repair
None: the file is what the app writes.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    for b in &conv.by_design {
        let Some(msg) = conv.messages.get(b.message) else {
            continue;
        };
        let Some(crate::model::PartKind::ToolCall { id, name, .. }) =
            msg.parts.get(b.part).map(|p| &p.kind)
        else {
            continue;
        };
        let loc = msg.part_loc(b.part).clone();
        out.push(
            ctx.finding(
                &RULE,
                Some(b.message),
                loc.clone(),
                format!(
                    "tool call `{id}` (`{name}`) is left unanswered by design: {}",
                    b.why
                ),
            )
            .label(
                &loc,
                format!("`{name}` has no result, as the app writes it"),
            )
            .id(id),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::model::ByDesign;
    use crate::rules::testutil::*;

    #[test]
    fn a_by_design_call_is_info_and_not_an_orphan() {
        let mut c = conv(crate::model::Dialect::Cline)
            .user("go")
            .calls(&["toolu_done"])
            .build();
        c.by_design.push(ByDesign {
            message: 1,
            part: 0,
            why: "accepted",
        });
        let f = rules_of(&c, "trailing-completion-call");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, crate::finding::Severity::Info);
        assert!(rules_of(&c, "orphan-tool-call").is_empty());
    }
}
