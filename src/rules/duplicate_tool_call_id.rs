use foldhash::HashMap;

use super::{Ctx, Rule, at};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "duplicate-tool-call-id",
    severity: Severity::Error,
    summary: "two tool calls share one id",
    repair: Some(
        "drop a call that repeats an earlier one exactly (same id, name and arguments: a record written twice); give a later call that reuses the id of a call already answered an id of its own, with the result that answers it; where the store's writer can",
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
- Claude Code (2.1.x) sends the first call of the id only: the later call
  is left out and its result sent as `(no content)`, so that call and its
  output are lost from the history the model sees.

## Repair
A call that repeats an earlier call exactly (the same id, name and
arguments) is the same call recorded twice: in a Codex rollout the
repeated line is dropped (it goes to the repair log), once the writer has
checked that the line repeats the earlier one (byte for byte, or the same
item written at another time).

A call that reuses the id of an earlier call whose result came before it
(an id counter that restarted) is another call: the result after it can
only answer it. It gets an id of its own, derived from the old one and
held by no other call or result, and so does the result that answers it;
the old values go to the repair log, and a second repair finds nothing to
change. The shape of the new id is the client's: in a Codex rollout the
old id, `_`, and which use of the id it is (`call_1_2` for the second); in
a Claude Code session the old id, `x`, and the use (`toolu_1x2`), as
Claude Code 2.1.330 answers a call whose id ends in `_2` with its own
`[Tool result missing due to internal error]`. Where both calls are
still open when a result comes (two calls under one id in one turn),
which call the result meant cannot be known from the history alone: that
reuse is reported only.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    let mut first: HashMap<&str, (usize, usize)> = HashMap::default();
    // The latest call with each id.
    let mut latest: HashMap<&str, (usize, usize)> = HashMap::default();
    for (mi, m) in conv.messages.iter().enumerate() {
        for (pi, id, name, _) in m.tool_calls() {
            if id.is_empty() {
                continue;
            }
            let before = latest.insert(id, (mi, pi));
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
                    } else if !repeat
                        && let Some(prev) = before
                        && answered_before(ctx, prev, mi)
                    {
                        let result = ctx.pairing().result_of((mi, pi));
                        f = f.fix(vec![crate::finding::Action::RenameCall {
                            message: mi,
                            part: pi,
                            result,
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

/// Whether call `prev` has its result before message `at`: a later call
/// with its id cannot be the one that result answers.
fn answered_before(ctx: &Ctx<'_>, prev: (usize, usize), at: usize) -> bool {
    ctx.pairing().result_of(prev).is_some_and(|(rm, _)| rm < at)
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
                healed_from: None,
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
        // Both calls open when the result comes: which one it answers is
        // not known, so no fix.
        assert!(f[0].fix.is_none());
        // The earlier call answered first: the later one gets an id of its
        // own, with the result after it (the name is the writer's).
        let c = conv(crate::model::Dialect::Codex)
            .user("go")
            .msg(Assistant, vec![call("t", "ls", "{}")])
            .result("t")
            .msg(Assistant, vec![call("t", "ls", r#"{"a":1}"#)])
            .result("t")
            .build();
        let f = rules_of(&c, "duplicate-tool-call-id");
        assert_eq!(f.len(), 1);
        let fix = f[0].fix.as_ref().expect("a reuse gets an id of its own");
        assert!(matches!(
            fix.actions[..],
            [Action::RenameCall {
                message: 3,
                part: 0,
                result: Some((4, 0))
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
