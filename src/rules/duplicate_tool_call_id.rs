use foldhash::HashMap;

use super::{Ctx, Rule, at};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "duplicate-tool-call-id",
    severity: Severity::Error,
    summary: "two tool calls share one id",
    repair: Some(
        "drop a call that repeats an earlier one exactly (same id, name and arguments: a record written twice); give a call that reuses an earlier call's id an id of its own, with its result; each where the store's writer can",
    ),
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

## What the apps do
- Codex (0.169.0) sends both calls on resume (it answers a call itself only
  when no output anywhere in the history has its id), and the Responses API
  refuses the request. A rollout line written twice is enough.

## Repair
A call that repeats an earlier call exactly (the same id, name and
arguments) is the same call recorded twice: in a Codex rollout the
repeated line is dropped (it goes to the repair log), once the writer has
checked that the line repeats the earlier one (byte for byte, or the same
item written at another time). A call that reuses an earlier call's id
with another name or other arguments gets an id of its own, derived from
the old one (`<id>x2`, the same on every run), and so does the result
that answers it: the first result of that id after it that no earlier
call of the id is still waiting for. The old id and the block as it was go
to the repair log. Where the store's writer cannot do this (a Codex
rollout), the reuse is reported only.
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
                    let earlier = conv.messages[fm].part_loc(fp).clone();
                    let same = if fm == mi { " in the same message" } else { "" };
                    let repeat = m.parts[pi].repeats_call(&conv.messages[fm].parts[fp]);
                    let what = if repeat {
                        "this call repeats it: same name and arguments"
                    } else {
                        "this call reuses the id"
                    };
                    let mut f = ctx
                        .finding(
                            &RULE,
                            Some(mi),
                            loc.clone(),
                            format!("tool call id `{id}` (`{name}`) is already used by an earlier call{same}"),
                        )
                        .label(&loc, what)
                        .label(&earlier, format!("first call with this id ({})", at(conv, fm)))
                        .id(id);
                    for note in ctx
                        .profile()
                        .on(crate::finding::profile::Pattern::DuplicateToolCallId)
                        .notes(None, &[])
                    {
                        f = f.note(note);
                    }
                    if repeat && loc != earlier {
                        f = f.fix(vec![crate::finding::Action::DropRepeat {
                            loc,
                            of: earlier,
                        }]);
                    } else if !repeat {
                        // Another call under a reused id: it gets an id
                        // of its own, and so does the result after it.
                        f = f.fix(vec![crate::finding::Action::RenameCall {
                            message: mi,
                            part: pi,
                        }]);
                    }
                    out.push(f);
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

    /// A call made twice with the same name and arguments (a record
    /// written twice) carries the fix that drops the repeat; the same id
    /// on another call does not.
    #[test]
    fn an_exact_repeat_is_fixable_and_a_reuse_is_not() {
        use crate::finding::Action;
        use crate::model::Role::Assistant;
        let c = conv(crate::model::Dialect::Codex)
            .user("go")
            .msg(Assistant, vec![call("t", "ls", "{}")])
            .msg(Assistant, vec![call("t", "ls", "{}")])
            .result("t")
            .build();
        let f = rules_of(&c, "duplicate-tool-call-id");
        assert_eq!(f.len(), 1);
        let fix = f[0].fix.as_ref().expect("a repeat is fixable");
        assert!(matches!(fix.actions[..], [Action::DropRepeat { .. }]));
        assert!(f[0].notes.is_empty(), "{:?}", f[0].notes);
        // What the client does is its profile's note.
        use crate::finding::profile::{Does, Note, Pattern, Profile, Resume};
        static CLIENT: Profile = Profile {
            resume: &[Resume {
                pattern: Pattern::DuplicateToolCallId,
                does: Does::SendsAsIs,
                severity: None,
                says: None,
                notes: &[Note::Text("the client sends both calls")],
                cites_context: true,
                versions: "",
            }],
            ..Profile::UNKNOWN
        };
        let f = rules_in(&c, "duplicate-tool-call-id", &CLIENT);
        assert_eq!(f[0].notes, vec!["the client sends both calls".to_string()]);
        // Its result answers it: no orphan call beside the repeat.
        assert!(rules_of(&c, "orphan-tool-call").is_empty());
        let c = conv(crate::model::Dialect::Codex)
            .user("go")
            .msg(Assistant, vec![call("t", "ls", "{}")])
            .msg(Assistant, vec![call("t", "ls", r#"{"a":1}"#)])
            .result("t")
            .build();
        let f = rules_of(&c, "duplicate-tool-call-id");
        assert_eq!(f.len(), 1);
        let fix = f[0].fix.as_ref().expect("a reuse gets an id of its own");
        assert!(matches!(
            fix.actions[..],
            [Action::RenameCall {
                message: 2,
                part: 0
            }]
        ));
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
