use super::{Ctx, Rule, at};
use crate::finding::{Action, Finding, Severity};
use crate::model::{Dialect, PartKind, Slot};

pub static RULE: Rule = Rule {
    name: "unknown-block-type",
    severity: Severity::Error,
    summary: "a content block's `type` is none the API knows (or missing): the request is refused",
    repair: Some("remove the record holding only that block (kept in the repair log)"),
    doc: r#"## What it does
Finds content blocks of Anthropic-shaped messages (Claude Code sessions,
Anthropic histories) whose `type` is not a block type of the Messages API,
or that have no `type` at all: a damaged `"type":"text"` (a flipped bit, a
torn and rejoined write), or a block some tool wrote by hand.

## Why is this bad?
The API validates every block by its `type` and refuses the whole request
for one it does not know. Claude Code 2.1.330 sends such a block as it is
(measured: a `txet` block in an assistant record, a `tool_rezult` in a
user record), so every resume of the session fails until the block is
gone.

## What providers answer
- Anthropic, an unknown type: ``messages.N.content.M: Input tag 'txet' found using 'type' does not match any of the expected tags: …`` (the API's wording for a tagged union, as for `tools.0`)
- Anthropic, no type: `messages.N.content.M.type: Field required`

## Example
```jsonl
{"type":"assistant","uuid":"b","parentUuid":"a","message":{"role":"assistant","content":[{"type":"txet","text":"Done."}]}}
```

## Repair
In Claude Code sessions, which write one block per record: removes the
record that holds only that block (the record goes to the repair log, its
children are re-linked to its parent). A block that shares its record is
reported only. A tool result lost that way leaves its call unanswered,
which the repair then answers as `orphan-tool-call` says.
"#,
    check,
};

/// The content block types of the Anthropic Messages API.
const KNOWN: &[&str] = &[
    "text",
    "image",
    "document",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
    "search_result",
    "container_upload",
    "mcp_tool_use",
    "mcp_tool_result",
    "tool_reference",
    "tool_search_tool_result",
    "compaction",
];

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    if !matches!(
        conv.source.dialect,
        Dialect::ClaudeCode | Dialect::Anthropic
    ) {
        return;
    }
    for (mi, m) in conv.messages.iter().enumerate() {
        for p in &m.parts {
            let PartKind::Other { kind } = &p.kind else {
                continue;
            };
            if KNOWN.contains(&kind.as_str()) {
                continue;
            }
            let block = match p.slot {
                Some(Slot::Item("content", k)) => Some(k),
                _ => None,
            };
            let (what, answer) = if kind == "untyped" {
                (
                    "has no `type`".to_string(),
                    "messages.N.content.M.type: Field required".to_string(),
                )
            } else {
                (
                    format!("has the type `{kind}`, which the API does not know"),
                    format!(
                        "messages.N.content.M: Input tag '{kind}' found using 'type' does not match any of the expected tags: …"
                    ),
                )
            };
            let line = p.loc.line().unwrap_or(0);
            let which = block.map_or(String::new(), |k| format!(" {k}"));
            let mut f = ctx
                .finding(
                    &RULE,
                    Some(mi),
                    p.loc.clone(),
                    format!("content block{which} on line {line} {what}: the request is refused"),
                )
                .label(
                    &p.loc,
                    format!(
                        "{} ({})",
                        block.map_or("a content block".to_string(), |k| format!("content[{k}]")),
                        at(conv, mi)
                    ),
                )
                .note(format!("the API answers `{answer}`"));
            if conv.source.dialect == Dialect::ClaudeCode {
                f = f.note("Claude Code 2.1.x sends the block as it is: every resume fails");
            }
            match block {
                Some(block) => out.push(f.fix(vec![Action::DropBlock {
                    loc: p.loc.clone(),
                    block,
                }])),
                None => out.push(f),
            }
        }
    }
}
