use super::{Ctx, Rule};
use crate::escape::preview;
use crate::finding::profile::{Pattern, Provider};
use crate::finding::{Finding, Severity};

/// The Messages API's longest `tool_use.name`, in characters.
pub const NAME_LIMIT: usize = 200;

pub static RULE: Rule = Rule {
    name: "invalid-tool-name",
    severity: Severity::Error,
    summary: "a tool call's name the API refuses: over 200 characters, or holding a NUL",
    repair: None,
    doc: r#"## What it does
Finds tool calls, in histories sent to the Messages API, whose name is
longer than 200 characters or holds a NUL character.

## Why is this bad?
The API checks the name of every `tool_use` block it is sent back, not
only the tools it offers: one such call in the history refuses the whole
request, on every resume, unless the client mends the name before it
sends it (Claude Code 2.1.330 cuts a long name to 200 characters; it
sends a NUL as stored). Names like these come from a model that wrote
a name of its own (a long MCP tool name, text in place of a name) or from
a damaged record.

## What providers answer
- Anthropic: `messages.N.content.M.tool_use.name: String should have at most 200 characters`
- Anthropic (a NUL in the name): the request is refused as invalid

## Example
```jsonl
{"type":"assistant","uuid":"b","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"mcp__server__aaaa… (240 characters)","input":{}}]}}
```

## Repair
Report only: the name is what the model called, and no name the copy
could give it says which tool ran. Remove the call and its result by
hand, or keep the session for reading.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    // The limits are the Messages API's.
    if ctx.profile().provider != Provider::Anthropic {
        return;
    }
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
            let loc = m.part_loc(pi).clone();
            let mut f = ctx
                .finding(
                    &RULE,
                    Some(mi),
                    loc.clone(),
                    format!(
                        "the name of tool call `{id}` {what}: {}",
                        resume.says("sent as is, the API refuses the request", &[])
                    ),
                )
                .label(&loc, format!("name: `{}`", preview(name, 60)))
                .notes(ctx.notes(
                    &resume,
                    Some(
                        "the API answers `messages.N.content.M.tool_use.name: String should have at most 200 characters` (or refuses the NUL), on every resume",
                    ),
                    &[],
                ))
                .id(id);
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
}
