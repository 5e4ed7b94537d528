use std::sync::LazyLock;

use memchr::memmem;

use super::{Ctx, Rule};
use crate::escape::preview;
use crate::finding::{Finding, Severity};
use crate::model::{PartKind, Role};

pub static RULE: Rule = Rule {
    name: "tool-call-as-text",
    severity: Severity::Warning,
    summary: "assistant text or thinking contains tool-call markup instead of a structured call",
    repair: None,
    doc: r#"## What it does
Finds tool-call markup written as plain text or reasoning by the assistant:
`<function=name>…</function>`, `<tool_call>{…}`, `<function_calls><invoke name=…>`,
raw tool-call tokens (`<|tool_call_begin|>`, `<｜tool▁call▁begin｜>`,
`[TOOL_CALLS]`).

## Why is this bad?
A model emits tool calls as text when it has lost the structure of the
conversation, typically because the replayed history no longer shows any of
its earlier structured calls. In dispatch (seed 000) a merged history stripped
every prior tool call, the model wrote `<function=run_shell>` into its
reasoning, the stream parser routed it to the thinking channel, the kernel saw
zero tool calls and ended the turn. The markup is a symptom: look for a
history corruption earlier in the same conversation.

## Example
```jsonl
{"role":"assistant","content":"","reasoning_content":"<function=run_shell>\n<parameter=command>ls</parameter>\n</function>"}
```

## Repair
Report only: the call was never executed, and turning text into a call would
invent an action the agent never took.
"#,
    check,
};

/// Raw special tokens of tool calls: they never occur in honest prose.
const TOKENS: [&str; 5] = [
    "<|tool_call_begin|>",
    "<|tool_calls_section_begin|>",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "[TOOL_CALLS]",
];

/// A searcher for each marker, built once (`memmem::find` builds one per
/// call).
struct Finders {
    tokens: Vec<memmem::Finder<'static>>,
    function: memmem::Finder<'static>,
    tool_call: memmem::Finder<'static>,
    function_calls: memmem::Finder<'static>,
    invoke: memmem::Finder<'static>,
}

static FINDERS: LazyLock<Finders> = LazyLock::new(|| Finders {
    tokens: TOKENS
        .iter()
        .map(|t| memmem::Finder::new(t.as_bytes()))
        .collect(),
    function: memmem::Finder::new(b"<function="),
    tool_call: memmem::Finder::new(b"<tool_call>"),
    function_calls: memmem::Finder::new(b"<function_calls>"),
    invoke: memmem::Finder::new(b"<invoke name="),
});

/// Find tool-call markup in text. Returns the byte offset and the marker.
pub fn find_markup(text: &str) -> Option<(usize, &'static str)> {
    let b = text.as_bytes();
    // Every marker starts with `<` or `[`: most text has neither.
    memchr::memchr2(b'<', b'[', b)?;
    let Finders {
        tokens,
        function,
        tool_call,
        function_calls,
        invoke,
    } = &*FINDERS;
    for (tok, finder) in TOKENS.iter().zip(tokens) {
        if let Some(i) = finder.find(b) {
            return Some((i, tok));
        }
    }
    // `<function=NAME>` followed by a parameter or the closing tag.
    let mut from = 0;
    while let Some(i) = function.find(&b[from..]) {
        let at = from + i;
        let rest = &text[at + "<function=".len()..];
        let name_len = rest
            .bytes()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-' || *c == b'.')
            .count();
        if name_len > 0 && rest[name_len..].starts_with('>') {
            let window = &rest[name_len..rest.len().min(name_len + 2000)];
            if window.contains("<parameter=") || window.contains("</function>") {
                return Some((at, "<function=…>"));
            }
        }
        from = at + 1;
    }
    // `<tool_call>` followed by a JSON object naming a tool.
    let mut from = 0;
    while let Some(i) = tool_call.find(&b[from..]) {
        let at = from + i;
        let rest = text[at + "<tool_call>".len()..].trim_start();
        if rest.starts_with('{') && rest[..rest.len().min(200)].contains("\"name\"") {
            return Some((at, "<tool_call>"));
        }
        from = at + 1;
    }
    // Anthropic's legacy XML calling format.
    if let Some(i) = function_calls.find(b)
        && invoke.find(&b[i..]).is_some()
    {
        return Some((i, "<function_calls>"));
    }
    None
}

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for (mi, m) in ctx.conv.messages.iter().enumerate() {
        if m.role != Role::Assistant {
            continue;
        }
        for (pi, part) in m.parts.iter().enumerate() {
            let (text, channel) = match &part.kind {
                PartKind::Text { text } => (text, "text"),
                PartKind::Thinking { text } => (text, "thinking"),
                _ => continue,
            };
            if let Some((offset, marker)) = find_markup(text) {
                let loc = m.part_loc(pi).clone();
                let excerpt = preview(&text[offset..], 60);
                out.push(
                    ctx.finding(
                        &RULE,
                        Some(mi),
                        loc.clone(),
                        format!("assistant {channel} contains tool-call markup `{marker}` instead of a structured tool call"),
                    )
                    .label(&loc, format!("{channel}: `{excerpt}`"))
                    .note("the model writes calls as text when the replayed history lost its earlier structured calls; look for a corruption before this message"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_function_markup() {
        let t = "I'll look.\n<function=run_shell>\n<parameter=command>\nfind . -name '*.ts'\n</parameter>\n</function>";
        assert_eq!(find_markup(t).map(|x| x.1), Some("<function=…>"));
    }

    #[test]
    fn tool_call_json_and_tokens() {
        assert!(
            find_markup("<tool_call>\n{\"name\": \"ls\", \"arguments\": {}}\n</tool_call>")
                .is_some()
        );
        assert!(find_markup("x <|tool_call_begin|> functions.ls:0").is_some());
        assert!(find_markup("<function_calls>\n<invoke name=\"ls\">").is_some());
    }

    #[test]
    fn prose_about_markup_is_not_flagged() {
        assert!(find_markup("the parser handles `<tool_call>` tags").is_none());
        assert!(find_markup("use <function=NAME> syntax").is_none());
        assert!(find_markup("plain answer").is_none());
    }
}
