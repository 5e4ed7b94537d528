use foldhash::HashMap;

use super::{Ctx, Rule, at};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "duplicate-tool-call-id",
    severity: Severity::Error,
    summary: "two tool calls share one id",
    repair: None,
    doc: r#"## What it does
Finds tool calls whose id was already used by an earlier call in the same
conversation, in the same message or in a later turn.

## Why is this bad?
Results are matched to calls by id. With two calls under one id, a result
answers either of them, and providers that check uniqueness reject the whole
request. Duplicates come from id counters that restart (per process, per
session resume) or from a message persisted twice.

## What providers answer
- Anthropic: ``messages.N.content.M: `tool_use` ids must be unique``

## Example
```jsonl
{"role":"assistant","tool_calls":[{"type":"function","id":"call_1","function":{"name":"ls","arguments":"{}"}}]}
{"role":"tool","tool_call_id":"call_1","content":"a.txt"}
{"role":"assistant","tool_calls":[{"type":"function","id":"call_1","function":{"name":"cat","arguments":"{}"}}]}
```

## Repair
Report only: which call a later result meant cannot be known from the
history alone.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    let mut first: HashMap<&str, (usize, usize)> = HashMap::default();
    for (mi, m) in conv.messages.iter().enumerate() {
        for (pi, id, name, _) in m.tool_calls() {
            if id.is_empty() {
                continue;
            }
            match first.get(id) {
                Some(&(fm, fp)) => {
                    let loc = m.part_loc(pi).clone();
                    let same = if fm == mi { " in the same message" } else { "" };
                    out.push(
                        ctx.finding(
                            &RULE,
                            Some(mi),
                            loc.clone(),
                            format!("tool call id `{id}` (`{name}`) is already used by an earlier call{same}"),
                        )
                        .label(&loc, "this call reuses the id")
                        .label(conv.messages[fm].part_loc(fp), format!("first call with this id ({})", at(conv, fm)))
                        .id(id),
                    );
                }
                None => {
                    first.insert(id, (mi, pi));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::*;

    #[test]
    fn same_message_duplicates() {
        let c = conv(crate::model::Dialect::Anthropic)
            .user("go")
            .calls(&["t", "t"])
            .result("t")
            .result("t")
            .build();
        let f = rules_of(&c, "duplicate-tool-call-id");
        assert_eq!(f.len(), 1);
        assert!(f[0].summary.contains("same message"));
    }

    #[test]
    fn distinct_ids_are_fine() {
        let c = conv(crate::model::Dialect::OpenAi)
            .user("go")
            .calls(&["a", "b"])
            .result("a")
            .result("b")
            .build();
        assert!(rules_of(&c, "duplicate-tool-call-id").is_empty());
    }
}
