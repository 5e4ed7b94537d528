use super::{Ctx, Rule};
use crate::finding::profile::{Pattern, Provider};
use crate::finding::{Finding, Severity};
use crate::model::PartKind;
use crate::model::chain::Unreached;

/// The context of Claude's models, in tokens (1,000,000 with the
/// long-context option, which a session does not record).
pub const CONTEXT_TOKENS: u64 = 200_000;
/// Bytes a token, at most, as the estimate counts them: English text and
/// code run about 3 to 4 bytes a token, so a result this rule reports is
/// over the context however its text is tokenised.
pub const BYTES_PER_TOKEN: u64 = 4;

pub static RULE: Rule = Rule {
    name: "oversized-tool-result",
    severity: Severity::Warning,
    summary: "a tool result larger by itself than the model's context (over 800,000 bytes: 200,000 tokens at 4 bytes a token)",
    repair: None,
    doc: r#"## What it does
Finds tool results, in the history a resume sends, whose text alone is
over 800,000 bytes: at 4 bytes a token (English text and code run 3 to 4,
so the estimate is low) that is over the 200,000-token context of Claude's
models. Histories held to the Messages API's rules (Claude Code, and
Anthropic-shaped logs) are checked.

## Why is this bad?
Every request that carries the result is over the context: the API
refuses it. A client that sends the history as stored cannot go on; one
that compacts on that answer replaces the history with a summary. Such
results come from a tool that printed megabytes (a log, a minified file,
a database dump) in a version of the client that kept outputs inline,
or from a tool (an MCP server) whose output the client does not cut.

## What providers answer
- Anthropic: `prompt is too long: 1402871 tokens > 200000 maximum`

## Example
```jsonl
{"type":"user","uuid":"c","parentUuid":"b","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01…","content":"line 0000000 of a long tool output… (1,200,000 bytes)"}]}}
```

## Repair
Report only, for now: the result is the tool's output, and cutting it
loses what the model was shown. A session with the 1M-token context
option (`/model sonnet[1m]`) carries results up to about 4 MB.
"#,
    check,
};

/// The size over which a tool result is reported, in bytes.
pub const LIMIT_BYTES: u64 = CONTEXT_TOKENS * BYTES_PER_TOKEN;

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    if ctx.profile().provider != Provider::Anthropic {
        return;
    }
    // A result before a compaction, or on a branch the resume leaves, is
    // not sent.
    let unreached: std::collections::HashSet<u64> = ctx
        .conv
        .chain
        .as_deref()
        .map(|chain| {
            chain
                .records
                .iter()
                .filter(|r| r.unreached != Unreached::No)
                .filter_map(|r| r.loc.line())
                .collect()
        })
        .unwrap_or_default();
    let resume = ctx.profile().on(Pattern::OversizedToolResult);
    for (mi, m) in ctx.conv.messages.iter().enumerate() {
        for p in &m.parts {
            let PartKind::ToolResult {
                call_id, content, ..
            } = &p.kind
            else {
                continue;
            };
            let bytes = content.as_str().len() as u64;
            if bytes <= LIMIT_BYTES || p.loc.line().is_some_and(|l| unreached.contains(&l)) {
                continue;
            }
            let tokens = bytes / BYTES_PER_TOKEN;
            let mb = format!("{:.1}", bytes as f64 / 1e6);
            let line = p.loc.line().unwrap_or(0);
            let mut f = ctx
                .finding(
                    &RULE,
                    Some(mi),
                    p.loc.clone(),
                    format!(
                        "the result of call `{}` on line {line} is {bytes} bytes ({mb} MB, at least {tokens} tokens at {BYTES_PER_TOKEN} bytes a token), over the model's {CONTEXT_TOKENS}-token context by itself: {}",
                        crate::escape::preview(call_id, 60),
                        resume.says("every request that carries it is refused", &[])
                    ),
                )
                .label(&p.loc, format!("{mb} MB of tool output"))
                .notes(ctx.notes(
                    &resume,
                    Some("the API answers `prompt is too long: N tokens > 200000 maximum`"),
                    &[],
                ))
                .note("a session with the 1M-token context option (`/model sonnet[1m]`) carries results up to about 4 MB");
            f.severity = resume.severity_or(RULE.severity);
            out.push(f);
        }
    }
}
