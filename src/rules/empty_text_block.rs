use super::{Ctx, Rule};
use crate::finding::profile::{Pattern, Provider};
use crate::finding::{Finding, Severity};
use crate::model::{PartKind, Slot};

pub static RULE: Rule = Rule {
    name: "empty-text-block",
    severity: Severity::Error,
    summary: "a text block is empty or only whitespace, in a message that holds more",
    repair: Some(
        "remove the block (its record, when it holds nothing else); kept in the repair log",
    ),
    doc: r#"## What it does
Finds text blocks that are empty or hold only whitespace, in a message whose
other blocks (a tool call, other text) are not empty. A message with
nothing else is `empty-message`'s.

## Why is this bad?
The Messages API refuses every empty text block, wherever it is in the
message: the whole request fails, on every resume. A reply streamed as one
record per block leaves such a block when the model opened a text block and
went straight to a tool call.

## What providers answer
- Anthropic: `messages: text content blocks must be non-empty`
- Anthropic: `messages: text content blocks must contain non-whitespace text`

## Example
```jsonl
{"type":"assistant","uuid":"b","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":" \n"}]}}
{"type":"assistant","uuid":"c","parentUuid":"b","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ls","input":{}}]}}
```

## Repair
Removes the block (kept in the repair log): a record that holds nothing
else is removed and the records after it are re-linked past it; otherwise
the block is taken out of the record's content and every other block is
kept byte for byte.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    // The rule is the Messages API's: histories sent to another provider
    // carry an empty `content` beside their tool calls by design.
    if ctx.profile().provider != Provider::Anthropic {
        return;
    }
    let resume = ctx.profile().on(Pattern::EmptyTextBlock);
    for (mi, m) in ctx.conv.messages.iter().enumerate() {
        if super::empty_message::is_empty(m) {
            continue;
        }
        for p in &m.parts {
            let (PartKind::Text { text }, Some(Slot::Item("content", block))) = (&p.kind, p.slot)
            else {
                continue;
            };
            if !text.trim().is_empty() {
                continue;
            }
            let what = if text.is_empty() {
                "empty"
            } else {
                "only whitespace"
            };
            let line = p.loc.line().unwrap_or(0);
            let mut f = ctx
                .finding(
                    &RULE,
                    Some(mi),
                    p.loc.clone(),
                    format!(
                        "text block {block} on line {line} is {what}, in a message that holds more: {}",
                        resume.says("the API refuses the request", &[])
                    ),
                )
                .label(&p.loc, format!("content[{block}]"))
                .notes(ctx.notes(
                    &resume,
                    Some("the API answers `messages: text content blocks must be non-empty` (or `must contain non-whitespace text`)"),
                    &[],
                ))
                .fix(vec![crate::finding::Action::DropBlock {
                    loc: p.loc.clone(),
                    block,
                }]);
            f.severity = resume.severity_or(RULE.severity);
            out.push(f);
        }
    }
}
