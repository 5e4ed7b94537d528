use super::{Ctx, Rule};
use crate::escape::preview;
use crate::finding::profile::{Pattern, Provider, Resume};
use crate::finding::{Action, Finding, Severity};
use crate::model::chain::{BlockIssue, TOOL_REFERENCE_NAME_LIMIT, Unreached};

/// The Messages API's longest `tool_use.name`, in characters.
pub const NAME_LIMIT: usize = 200;

pub static RULE: Rule = Rule {
    name: "invalid-tool-name",
    severity: Severity::Error,
    summary: "a tool name the API refuses: a call's over 200 characters, holding a NUL or (Crush) empty, a tool reference's over 64 (Messages API); a call's holding a character outside `[a-zA-Z0-9_-]` (Responses API)",
    repair: Some(
        "name the call as the API takes it: without its NULs, cut to 200 characters (Messages API) or each other refused character as `_` (Responses API); replace a tool reference with a text block saying which tool it named and why it was removed; the old blocks go to the repair log; where the store's writer can",
    ),
    doc: r#"## What it does
Finds tool names, in histories sent to the Messages API, that the API
refuses: a tool call's name longer than 200 characters or holding a NUL
character, and (Claude Code) a `tool_reference` in a tool result whose
`tool_name` is longer than 64 characters; and, in a Crush session, a tool
call whose name is empty (Crush stores one when several tools run at once,
crush#659, and sends it back as it is). In histories sent to the
Responses API (Codex), a `function_call` or `custom_tool_call` whose name
holds a character outside `[a-zA-Z0-9_-]`: NULs written into a persisted
name (openai/codex#24369), or a legacy dotted name such as
`functions.exec_command`.

## Why is this bad?
The API checks the name of every `tool_use` block it is sent back, not
only the tools it offers, and the tool name of every `tool_reference`
(the tools a tool search found): one such name in the history refuses the
whole request, on every resume, unless the client mends it before it
sends it (Claude Code 2.1.330 cuts a long call name to 200 characters; it
sends a NUL as stored, and a tool reference as stored while the tool is
offered; Codex 0.169.0 sends a Responses API name as stored). Names like
these come from a model that wrote a name of its
own, from an MCP tool whose prefixed name is long
(`mcp__plugin_<plugin>_<server>__<tool>`), or from a damaged record.

## What providers answer
- Anthropic: `messages.N.content.M.tool_use.name: String should have at most 200 characters`
- Anthropic (a NUL in the name): the request is refused as invalid
- Anthropic: `messages.N.content.M.tool_result.content.K.tool_reference.tool_name: String should have at most 64 characters`
- OpenAI Responses: `Invalid 'input[N].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`

## Example
```jsonl
{"type":"assistant","uuid":"b","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"mcp__server__aaaa… (240 characters)","input":{}}]}}
{"type":"user","uuid":"c","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"tool_reference","tool_name":"mcp__tooluniverse__FDA_get_info_on_conditions… (82 characters)"}]}]}}
{"type":"response_item","payload":{"type":"function_call","name":"apply\u0000\u0000\u0000","arguments":"{}","call_id":"call_1"}}
```

## Repair
A call's name loses its NUL characters and is cut to its first 200
characters, as Claude Code cuts it when it sends it; the result answers
the call by its id, which is kept, so the pair stays whole. A name of
nothing but NULs is left as it is (no name says which tool ran). A tool
reference over 64 characters becomes a text block saying which tool it
named and why it was removed, as Claude Code leaves out references to
tools it no longer offers: the model sees that the search found the tool
and must search again to load it. The block as it was goes to the
repair log; every other block of the record is kept byte for byte.
A Responses API name loses its NULs and has each other character the
API refuses replaced by `_` (`functions.exec_command` becomes
`functions_exec_command`); the `call_id` is kept, so its output still
answers it. A name with nothing left is left as it is.
An empty name is reported only: nothing in the record says which tool
ran.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    empty(ctx, out);
    match ctx.profile().provider {
        Provider::Anthropic => messages_api(ctx, out),
        Provider::OpenAiResponses => responses_api(ctx, out),
        _ => {}
    }
}

/// Whether the Responses API takes `name` as a call's name:
/// `^[a-zA-Z0-9_-]+$`.
pub fn responses_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The name the Responses API takes for `name`: its NULs removed, each
/// other character it refuses as `_`; `None` when nothing is left.
pub fn responses_name(name: &str) -> Option<String> {
    let fixed: String = name
        .chars()
        .filter(|c| *c != '\0')
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    (!fixed.is_empty()).then_some(fixed)
}

/// A call whose name the API refuses: where it is (message, part), why
/// (`what`), and the name the repair gives it, if any is left.
struct BadName<'a> {
    at: (usize, usize),
    id: &'a str,
    name: &'a str,
    what: String,
    fixed: Option<String>,
}

impl BadName<'_> {
    /// The finding, with what the client does (`resume`) and what the API
    /// answers (`answers`).
    fn finding(self, ctx: &Ctx<'_>, resume: &Resume, answers: &'static str) -> Finding {
        let (mi, pi) = self.at;
        let loc = ctx.conv.messages[mi].part_loc(pi).clone();
        let mut f = ctx
            .finding(
                &RULE,
                Some(mi),
                loc.clone(),
                format!(
                    "the name of tool call `{}` {}: {}",
                    self.id,
                    self.what,
                    resume.says("sent as is, the API refuses the request", &[])
                ),
            )
            .label(&loc, format!("name: `{}`", preview(self.name, 60)))
            .notes(ctx.notes(resume, Some(answers), &[]))
            .id(self.id);
        if let Some(name) = self.fixed {
            f = f.fix(vec![Action::RenameTool {
                message: mi,
                part: pi,
                name,
            }]);
        }
        f.severity = resume.severity_or(RULE.severity);
        f
    }
}

/// Calls the Responses API refuses by name.
fn responses_api(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let resume = ctx.profile().on(Pattern::InvalidToolNameChars);
    for (mi, m) in ctx.conv.messages.iter().enumerate() {
        for (pi, id, name, _) in m.tool_calls() {
            // An empty name is a name the reader could not read, unless
            // the client's profile says it sends one (`empty`).
            if name.is_empty() || responses_name_ok(name) {
                continue;
            }
            let what = if name.contains('\0') {
                "holds NUL characters".to_string()
            } else {
                let bad: String = name
                    .chars()
                    .filter(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
                    .take(3)
                    .map(|c| format!("`{}`", c.escape_default()))
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("holds {bad}, outside the `[a-zA-Z0-9_-]` the API accepts")
            };
            let call = BadName {
                at: (mi, pi),
                id,
                name,
                what,
                fixed: responses_name(name),
            };
            out.push(call.finding(
                ctx,
                &resume,
                "the API answers `Invalid 'input[N].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`, on every resume",
            ));
        }
    }
}

/// Calls and tool references the Messages API refuses by name.
fn messages_api(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for (mi, m) in ctx.conv.messages.iter().enumerate() {
        for (pi, id, name, _) in m.tool_calls() {
            let chars = name.chars().count();
            let (pattern, what) = if name.contains('\0') {
                (
                    Pattern::InvalidToolNameNul,
                    "holds a NUL character".to_string(),
                )
            } else if chars > NAME_LIMIT {
                (
                    Pattern::InvalidToolNameLong,
                    format!("is {chars} characters long, over the {NAME_LIMIT} the API accepts"),
                )
            } else {
                continue;
            };
            let resume = ctx.profile().on(pattern);
            // The name the API takes: without its NULs, cut where Claude
            // Code cuts it.
            let fixed: String = name
                .chars()
                .filter(|c| *c != '\0')
                .take(NAME_LIMIT)
                .collect();
            let call = BadName {
                at: (mi, pi),
                id,
                name,
                what,
                fixed: (!fixed.is_empty()).then_some(fixed),
            };
            out.push(call.finding(
                ctx,
                &resume,
                "the API answers `messages.N.content.M.tool_use.name: String should have at most 200 characters` (or refuses the NUL), on every resume",
            ));
        }
    }
    references(ctx, out);
}

/// Tool calls with an empty name, in a store whose client says what it
/// does with them (Crush sends them as they are: crush#659). Elsewhere an
/// empty name is how a reader marks a name it could not read, not a name
/// the client sends.
fn empty(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(resume) = ctx.profile().own(Pattern::InvalidToolNameEmpty) else {
        return;
    };
    for (mi, m) in ctx.conv.messages.iter().enumerate() {
        for (pi, id, name, _) in m.tool_calls() {
            if !name.is_empty() {
                continue;
            }
            let loc = m.part_loc(pi).clone();
            let mut f = ctx
                .finding(
                    &RULE,
                    Some(mi),
                    loc.clone(),
                    format!(
                        "tool call `{id}` has an empty name: {}",
                        resume.says("sent as is, the provider refuses the request", &[])
                    ),
                )
                .label(&loc, "name: ``")
                .notes(ctx.notes(
                    resume,
                    Some("a provider refuses a tool call without a name, on every resume"),
                    &[],
                ))
                .id(id);
            f.severity = resume.severity_or(RULE.severity);
            out.push(f);
        }
    }
}

/// Tool references (Claude Code's tool search results) whose tool name is
/// over the API's 64 characters, in the records the resume sends.
fn references(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(chain) = ctx.conv.chain.as_deref() else {
        return;
    };
    let resume = ctx.profile().on(Pattern::InvalidToolReferenceLong);
    for r in chain
        .records
        .iter()
        .filter(|r| r.unreached == Unreached::No)
    {
        for issue in &r.issues {
            let BlockIssue::ToolReference { block, item, name } = issue else {
                continue;
            };
            let chars = name.chars().count();
            let line = r.loc.line().unwrap_or(0);
            let mut f = ctx
                .finding(
                    &RULE,
                    None,
                    r.loc.clone(),
                    format!(
                        "the tool reference {item} of the tool result in content[{block}] on line {line} names a tool of {chars} characters, over the {TOOL_REFERENCE_NAME_LIMIT} the API accepts: {}",
                        resume.says("sent as is, the API refuses the request", &[])
                    ),
                )
                .label(&r.loc, format!("tool_name: `{}`", preview(name, 60)))
                .notes(ctx.notes(
                    &resume,
                    Some(
                        "the API answers `messages.N.content.M.tool_result.content.K.tool_reference.tool_name: String should have at most 64 characters`, on every resume",
                    ),
                    &[],
                ))
                .fix(vec![Action::ReplaceToolReference {
                    loc: r.loc.clone(),
                    block: *block,
                    item: *item,
                    why: format!(
                        "it named the tool `{name}`, {chars} characters, over the {TOOL_REFERENCE_NAME_LIMIT} the API accepts in a tool reference"
                    ),
                }]);
            f.severity = resume.severity_or(RULE.severity);
            out.push(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::*;

    #[test]
    fn a_long_or_nul_name_is_found_and_a_short_one_is_not() {
        use crate::model::Role::Assistant;
        let long = "t".repeat(201);
        let c = conv(crate::model::Dialect::Anthropic)
            .user("go")
            .msg(Assistant, vec![call("a", &long, "{}")])
            .result("a")
            .msg(Assistant, vec![call("b", "Bash\0", "{}")])
            .result("b")
            .msg(Assistant, vec![call("c", &"t".repeat(200), "{}")])
            .result("c")
            .build();
        let f = rules_of(&c, "invalid-tool-name");
        let ids: Vec<&str> = f.iter().map(|f| f.ids[0].as_str()).collect();
        assert_eq!(ids, vec!["a", "b"], "{f:?}");
        assert!(f[0].summary.contains("201 characters"), "{}", f[0].summary);
        assert!(f[1].summary.contains("NUL"), "{}", f[1].summary);
    }

    #[test]
    fn a_responses_name_outside_the_pattern_is_found_and_renamed() {
        use crate::model::Role::Assistant;
        let c = conv(crate::model::Dialect::Codex)
            .user("go")
            .msg(Assistant, vec![call("a", "apply\0\0", "{}")])
            .result("a")
            .msg(Assistant, vec![call("b", "functions.exec_command", "{}")])
            .result("b")
            .msg(Assistant, vec![call("c", "exec_command-2", "{}")])
            .result("c")
            .msg(Assistant, vec![call("d", &"t".repeat(240), "{}")])
            .result("d")
            .msg(Assistant, vec![call("e", "", "{}")])
            .result("e")
            .build();
        let f = rules_of(&c, "invalid-tool-name");
        let ids: Vec<&str> = f.iter().map(|f| f.ids[0].as_str()).collect();
        assert_eq!(ids, vec!["a", "b"], "{f:?}");
        assert!(f[0].summary.contains("NUL"), "{}", f[0].summary);
        assert!(f[1].summary.contains("`.`"), "{}", f[1].summary);
        assert_eq!(super::responses_name("apply\0\0").as_deref(), Some("apply"));
        assert_eq!(
            super::responses_name("functions.exec_command").as_deref(),
            Some("functions_exec_command")
        );
        assert_eq!(super::responses_name("\0\0"), None);
    }

    #[test]
    fn an_empty_name_is_found_only_where_the_client_says_it_sends_it() {
        use crate::model::Role::Assistant;
        // Elsewhere an empty name is a name the reader could not read.
        let c = conv(crate::model::Dialect::Anthropic)
            .user("go")
            .msg(Assistant, vec![call("a", "", "{}")])
            .result("a")
            .build();
        assert!(rules_of(&c, "invalid-tool-name").is_empty());
    }
}
