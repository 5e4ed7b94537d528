use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "prompt-divergence",
    severity: Severity::Error,
    summary: "the prompt a trace recorded as sent differs from the stored history: messages merged, dropped, re-labelled or stripped of tool calls",
    repair: None,
    doc: r#"## What it does
Needs two inputs: a conversation store and the trace its app wrote
(`chatfsck lint STORE --trace TRACE`, or `chatfsck diff STORE TRACE` for the
side-by-side table). Each request the trace recorded as sent (dispatch's
`provider.request` body, a Phoenix or OpenTelemetry LLM span's input
messages) is aligned with the stored history of the same conversation up to
that point, and the differences are reported with both sides' evidence:
- **merged**: several stored messages arrived as one message;
- **re-labelled**: a stored message was sent with another role (assistant
  text sent as `user`);
- **tool calls stripped**: a stored message's tool calls (or results) were
  not in the message sent;
- **dropped**: a stored message was not sent at all;
- **changed**: a stored message was sent with other content;
- **not stored**: the request sent a message the store does not hold.

The comparison is tolerant of what apps legitimately do when they convert a
stored history into a request: a system prompt the store does not keep,
thinking concatenated into the content (dispatch's `convertAssistantMessage`),
sent as `reasoning_content`, or left out; a tool message per tool result;
tool-call arguments re-serialised; whitespace between parts. A faithful
prompt is never reported.

## Why is this bad?
The store is what the app believes the conversation is; the request is what
the model saw. In dispatch (seed 000) `load()` merged six messages of three
turns into one `user` message: the `provider.request` body of turn 3 step 1
shows the model's own earlier answers sent as user text, and no earlier tool
call at all. The model lost the structure of the conversation and wrote its
next tool call as text into its reasoning.

## Example
Stored (seq 1–6): `user` "hello", `assistant` thinking + "Hello! How can I
help you today?", `user` "Can you read some files in this project",
`assistant` thinking + text. Sent as `messages[0]`: one `user` message whose
content is all six chunks concatenated.

## Repair
Report only: fix the loader (here, `msgidx-collision` renumbers the store so
an index-grouping loader builds the true messages again).
"#,
    check,
};

/// The check needs a store and a trace: it runs from `crosscheck`, never
/// over a single history.
fn check(_ctx: &Ctx<'_>, _out: &mut Vec<Finding>) {}
