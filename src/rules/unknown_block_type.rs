use super::{Ctx, Rule, at};
use crate::finding::{Action, Finding, Severity};
use crate::model::chain::BlockIssue;
use crate::model::{Dialect, PartKind, Slot};

pub static RULE: Rule = Rule {
    name: "unknown-block-type",
    severity: Severity::Error,
    summary: "a content block's `type` is none the API knows (or missing): the request is refused, or Claude Code drops the block",
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

A block with no `type` at all is another matter in a Claude Code session:
the client removes it from the request without a word (measured: the
request is valid; what the block held, a tool result's text say, never
reaches the model). That is reported as a warning. In an Anthropic
history sent as it is, the API refuses it (an error).

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
    untyped_in_claude_code(ctx, out);
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

/// Claude Code's blocks without a `type`: the client removes them before it
/// sends the request (the loader leaves them out of the message), so the
/// request goes through and what they held is lost without a word.
fn untyped_in_claude_code(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(chain) = ctx.conv.chain.as_deref() else {
        return;
    };
    for r in &chain.records {
        for issue in &r.issues {
            let BlockIssue::Untyped { block } = issue else {
                continue;
            };
            let line = r.loc.line().unwrap_or(0);
            let mut f = ctx
                .finding(
                    &RULE,
                    None,
                    r.loc.clone(),
                    format!(
                        "content block {block} on line {line} has no `type`: Claude Code removes it from the request without a word"
                    ),
                )
                .label(&r.loc, format!("content[{block}]"))
                .note("Claude Code 2.1.330 removes content blocks without a `type` before it sends the request: what the block held is lost from the history the model sees")
                .fix(vec![Action::DropBlock {
                    loc: r.loc.clone(),
                    block: *block,
                }]);
            f.severity = Severity::Warning;
            out.push(f);
        }
    }
}
