use super::{Ctx, Rule, at};
use crate::finding::profile::Pattern;
use crate::finding::{Action, Finding, Severity};
use crate::model::chain::BlockIssue;
use crate::model::{PartKind, Slot};

pub static RULE: Rule = Rule {
    name: "unknown-block-type",
    severity: Severity::Error,
    summary: "a content block's `type` is none the API knows (or missing): the request is refused, or the client drops the block",
    repair: Some("remove the record holding only that block (kept in the repair log)"),
    doc: r#"## What it does
Finds content blocks of Anthropic-shaped messages (sessions of one-block
records, Anthropic histories) whose `type` is not a block type of the Messages API,
or that have no `type` at all: a damaged `"type":"text"` (a flipped bit, a
torn and rejoined write), or a block some tool wrote by hand.

## Why is this bad?
The API validates every block by its `type` and refuses the whole request
for one it does not know. A client that sends such a block as it is
(measured: a `txet` block in an assistant record, a `tool_rezult` in a
user record) fails on every resume of the session until the block is
gone.

A block with no `type` at all is another matter in a session of one-block
records: the client's loader may remove it from the request without a word (measured: the
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
In sessions that write one block per record: removes the
record that holds only that block (the record goes to the repair log, its
children are re-linked to its parent). A block that shares its record is
reported only. A tool result lost that way leaves its call unanswered,
which the repair then answers as `orphan-tool-call` says.
"#,
    check,
};

/// The content block types of the Anthropic Messages API: those the
/// client's bundled API types know (Claude Code 2.1.330: its set of block
/// types, and the three it adds, `connector_text`, `mid_conv_system`,
/// `tool_reference`). A healthy session holds the newer ones (an
/// `advisor_tool_result` answering a `server_tool_use`), so a type
/// missing here is a false alarm on every such session.
const KNOWN: &[&str] = &[
    "advisor_tool_result",
    "connector_text",
    "fallback",
    "mcp_tool_listing",
    "mid_conv_system",
    "tool_addition",
    "tool_removal",
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
    untyped_on_the_chain(ctx, out);
    let conv = ctx.conv;
    if !conv.source.dialect.holds_anthropic_blocks() {
        return;
    }
    let resume = ctx.profile().on(Pattern::UnknownBlockType);
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
                .note(format!("the API answers `{answer}`"))
                .notes(ctx.notes(&resume, None, &[]));
            f.severity = resume.severity_or(RULE.severity);
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

/// Blocks without a `type` on a parent chain's records, which the loader
/// leaves out of the message: what the client does with them is its
/// profile's.
fn untyped_on_the_chain(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(chain) = ctx.conv.chain.as_deref() else {
        return;
    };
    let resume = ctx.profile().on(Pattern::UnknownBlockTypeUntyped);
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
                        "content block {block} on line {line} has no `type`: {}",
                        resume.says("the request is refused", &[])
                    ),
                )
                .label(&r.loc, format!("content[{block}]"))
                .notes(ctx.notes(&resume, None, &[]))
                .fix(vec![Action::DropBlock {
                    loc: r.loc.clone(),
                    block: *block,
                }]);
            f.severity = resume.severity_or(RULE.severity);
            out.push(f);
        }
    }
}
