use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "empty-history",
    severity: Severity::Error,
    summary: "a task's stored model history holds no message at all: the task has lost its history",
    repair: None,
    doc: r#"## What it does
Finds a history file that its app keeps for a task, but that holds no
message: Cline's or Roo Code's `api_conversation_history.json` reduced to
`[]`.

## Why is this bad?
The file is the only copy of what the model was told. Cline never writes an
empty array itself (`saveApiConversationHistory` returns early), so `[]`
comes from outside: a sync tool, a crash of another writer, a manual edit.
On resume Cline takes its "no API conversation history yet" branch and
continues the task with only the resumption text: all earlier context is
silently gone, no error is shown. Roo Code refuses to resume the task
instead.

## What the apps answer
- Cline: nothing; the task continues with an empty history.
- Roo Code: `Unexpected: No existing API conversation history`.

## Example
```json
[]
```
with `ui_messages.json` beside it still showing the task's paid requests.

## Repair
None: the history cannot be rebuilt from this file, and `ui_messages.json`
keeps only the UI's text, not the messages the model was sent. Restore the
file from a backup.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    // History files only: a trace's request or a table's conversation
    // with no message is another matter.
    if !conv.source.format.is_json_file()
        || !conv.messages.is_empty()
        || !conv.corrupt.is_empty()
        || conv.meta_records > 0
        // A store whose digests do not hold was not read whole: what it
        // holds is not known to be empty.
        || !conv.digest_mismatches.is_empty()
    {
        return;
    }
    let mut f = ctx
        .finding(
            &RULE,
            None,
            crate::model::Loc::Line {
                line: 1,
                start: 0,
                end: 0,
            },
            "the task's history is empty (`[]`): the task has lost its history".to_string(),
        )
        .notes(
            ctx.profile().on(Pattern::EmptyHistory).notes(
                Some("the app resumes with no history: all earlier context is gone"),
                &[],
            ),
        )
        .note("the UI log beside it (`ui_messages.json`) keeps only UI text; restore the history from a backup");
    // The file as a whole is the evidence, not a record of it.
    f.loc = None;
    out.push(f);
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::*;

    /// The note is the client's, from its profile; a client that says
    /// nothing gets the rule's.
    #[test]
    fn an_empty_history_is_an_error_with_the_clients_note() {
        use crate::finding::profile::{Does, Note, Pattern, Profile, Resume};
        static CLIENT: Profile = Profile {
            resume: &[Resume {
                pattern: Pattern::EmptyHistory,
                does: Does::Drops,
                severity: None,
                says: None,
                notes: &[Note::Text("all context is silently gone")],
                cites_context: true,
                versions: "",
                healed_from: None,
            }],
            ..Profile::UNKNOWN
        };
        let c = conv(crate::model::Dialect::Cline).build();
        let f = rules_in(&c, "empty-history", &CLIENT);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, crate::finding::Severity::Error);
        assert!(f[0].notes[0].contains("silently gone"), "{:?}", f[0].notes);
        let f = rules_of(&c, "empty-history");
        assert!(
            f[0].notes[0].contains("all earlier context is gone"),
            "{:?}",
            f[0].notes
        );
    }

    #[test]
    fn a_history_with_messages_is_not_empty() {
        let c = conv(crate::model::Dialect::Cline).user("hi").build();
        assert!(rules_of(&c, "empty-history").is_empty());
    }
}
