use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "missing-role",
    severity: Severity::Error,
    summary: "a stored message of a message tree has no role",
    repair: None,
    doc: r#"## What it does
Finds messages of a message tree (a conversation kept as one document of
messages linked by `parentId` and `childrenIds`, with a pointer to the
message shown last) that have no `role`, or are not an object at all: a
save that wrote part of a message, or a provider's error stored in its
place.

## Why is this bad?
Every reader of the tree needs the role: to show the message, to send it
to the model, to pick the message to show last. A message without one
is sent without a role (which providers refuse) or skipped, and an app
that meets it where it expects a message may not open the conversation
at all. The client's profile says what its app does.

## What providers answer
`role` is a required field of every message of an OpenAI Chat Completions
request; the answer to a request without it was not recorded here.

## Example
```json
{"history": {"currentId": "b", "messages": {
  "a": {"id": "a", "parentId": null, "childrenIds": ["b"], "role": "user", "content": "hi"},
  "b": {"id": "b", "parentId": "a", "childrenIds": [], "content": "hello"}}}}
```

## Repair
Report only.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(tree) = ctx.conv.tree.as_deref() else {
        return;
    };
    let resume = ctx.profile().on(Pattern::MissingRole);
    for (i, n) in tree.nodes.iter().enumerate() {
        if n.role.is_some() {
            continue;
        }
        let walked = if tree.on_path(i) {
            "on the walk from the current message"
        } else {
            "off the walk from the current message"
        };
        let mut f = ctx
            .finding(
                &RULE,
                None,
                n.loc.clone(),
                format!(
                    "message `{}` has no role ({walked}); {}",
                    n.key,
                    resume.says("readers cannot tell who wrote it", &[])
                ),
            )
            .label(&n.loc, "no `role`")
            .notes(ctx.notes(&resume, None, &[]));
        f.severity = resume.severity_or(Severity::Error);
        out.push(f);
    }
}
