use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "mixed-role-message",
    severity: Severity::Error,
    summary: "one stored or replayed message holds parts of different roles",
    repair: Some("split at the role boundaries (in chunk stores: renumber msgIdx)"),
    doc: r#"## What it does
Finds a message, as the app's loader builds it, that holds chunks written
with different roles: assistant text under a `user` message, user text under
an `assistant` one.

## Why is this bad?
The whole message is replayed with the role of its first chunk. In dispatch
(seed 000) six messages of three turns reached the model as one `user`
message: the model read its own earlier answers as the user's words, and
because a user message keeps only text, its earlier tool calls were silently
stripped from the prompt.

## Example
A loaded message built from chunks `user text`, `assistant thinking`,
`assistant text`, `user text` is sent as one `user` message.

## Repair
Splits the message at its role boundaries. In chunk stores this is the
`msgidx-collision` repair: renumber `msgIdx` so each true message has its
own index. Safe.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    let Some(log) = &conv.chunks else { return };
    for group in log.loaded_groups() {
        let chunks = &log.chunks[group];
        let role = chunks[0].role.as_str();
        let Some(other) = chunks.iter().find(|c| c.role != chunks[0].role) else {
            continue;
        };
        let mut roles: Vec<&str> = vec![role];
        for c in chunks {
            if !roles.contains(&c.role.as_str()) {
                roles.push(c.role.as_str());
            }
        }
        let (s0, s1) = (chunks[0].seq, chunks[chunks.len() - 1].seq);
        let mut f = ctx
            .finding(
                &RULE,
                Some(other.message),
                other.loc.clone(),
                format!(
                    "the loaded message at seq {s0}–{s1} holds {} chunks but is replayed as one `{role}` message",
                    roles.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ")
                ),
            )
            .label(&other.loc, format!("seq {}: `{}` chunk inside a `{role}` message", other.seq, other.role))
            .label(&chunks[0].loc, format!("seq {s0}: the message's role comes from here"));
        let stripped: Vec<String> = chunks
            .iter()
            .filter(|c| c.kind == "tool-call")
            .map(|c| c.seq.to_string())
            .collect();
        if role == "user" && !stripped.is_empty() {
            f = f.note(format!(
                "a `user` message keeps only text: the tool calls at seq {} are stripped from the prompt",
                stripped.join(", ")
            ));
        }
        out.push(f.fix(vec![crate::finding::Action::RenumberIndices]));
    }
}
