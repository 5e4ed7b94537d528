use super::{Ctx, Rule};
use crate::finding::profile::{Does, Pattern, Provider};
use crate::finding::{Finding, Severity};
use crate::model::{PartKind, Slot};

pub static RULE: Rule = Rule {
    name: "mismatched-tool-output",
    severity: Severity::Error,
    summary: "a tool output of one item type answers a call of another (Codex drops it as an orphan)",
    repair: Some(
        "give the output the item type its call expects; the output itself is kept, the old line goes to the repair log",
    ),
    doc: r#"## What it does
Finds, in a Codex rollout, an output whose item type does not match its
call's: a `function_call_output` answering a `custom_tool_call`, or a
`custom_tool_call_output` answering a `function_call` (or `local_shell_call`).
The `call_id`s match; the types do not.

## Why is this bad?
Codex pairs an output with a call of the matching type only. On resume
(0.169.0, `normalize.rs`) it drops the output as an orphan, logging
`ERROR codex_core::util: Orphan function call output for call id: call_…`,
and then inserts an `"aborted"` output for the call, which now looks
unanswered. The request is valid, but the call's real output is silently
lost from every later turn.

## What providers answer
Nothing: Codex drops the output before it sends the request. Sent as stored,
the Responses API would answer `No tool output found for custom tool call
call_….` for the call.

## Example
```jsonl
{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","input":"…","call_id":"call_A"}}
{"type":"response_item","payload":{"type":"function_call_output","call_id":"call_A","output":"Done"}}
```

## Repair
Rewrites the output's `type` to the one its call expects
(`custom_tool_call_output` for a custom call, `function_call_output`
otherwise), keeping `call_id` and `output` as they are; the line as it was is
in the repair log.
"#,
    check,
};

/// The output type the Responses API expects for a call type.
fn expected(call: &str) -> Option<&'static str> {
    match call {
        "function_call" | "local_shell_call" => Some("function_call_output"),
        "custom_tool_call" => Some("custom_tool_call_output"),
        "tool_search_call" => Some("tool_search_output"),
        _ => None,
    }
}

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    // Call and output item types are the Responses API's.
    if ctx.profile().provider != Provider::OpenAiResponses {
        return;
    }
    let resume = ctx.profile().on(Pattern::MismatchedToolOutput);
    for pair in &ctx.pairing().pairs {
        let (cm, cp) = pair.call;
        let (rm, rp) = pair.result;
        let call = &conv.messages[cm].parts[cp];
        let result = &conv.messages[rm].parts[rp];
        let (Some(Slot::Whole(call_ty)), Some(Slot::Whole(result_ty))) = (call.slot, result.slot)
        else {
            continue;
        };
        let Some(want) = expected(call_ty) else {
            continue;
        };
        if want == result_ty {
            continue;
        }
        let PartKind::ToolResult { call_id, .. } = &result.kind else {
            continue;
        };
        out.push(
            ctx.finding(
                &RULE,
                Some(rm),
                result.loc.clone(),
                match resume.does {
                    Does::Drops => format!(
                        "`{result_ty}` for `{call_id}` answers a `{call_ty}`: {} drops it and the output is lost",
                        ctx.profile().app
                    ),
                    _ => format!("`{result_ty}` for `{call_id}` answers a `{call_ty}`"),
                },
            )
            .label(&result.loc, format!("a `{result_ty}`, not the `{want}` the call needs"))
            .label(&call.loc, match call.loc.line() {
                Some(line) => format!("the `{call_ty}` it answers (line {line})"),
                None => format!("the `{call_ty}` it answers"),
            })
            .notes(ctx.notes(&resume,
                Some("the provider refuses an output whose type does not answer its call"),
                &[("call_id", call_id.as_str()), ("want", want)],
            ))
            .id(call_id)
            .fix(vec![crate::finding::Action::RetypeResult {
                message: rm,
                part: rp,
            }]),
        );
    }
}
