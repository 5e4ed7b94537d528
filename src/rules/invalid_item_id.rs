use foldhash::HashSet;

use super::{Ctx, Rule};
use crate::finding::profile::{Pattern, Provider};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "invalid-item-id",
    severity: Severity::Error,
    summary: "an item's id does not begin as the Responses API expects for its type",
    repair: Some(
        "remove the id from the item in the copy (the old line goes to the repair log): with the history sent inline, the API needs no item id",
    ),
    doc: r#"## What it does
Finds items of an OpenAI Responses API history whose stored `id` does not
begin with the prefix the API gives items of that type: `msg` for a
message, `rs` for a reasoning item, `fc` for a function call, `ctc` for a
custom tool call, `ws` for a web search call.

## Why is this bad?
A client that sends an item with its stored `id` has the whole request
refused when that id does not have the shape the API expects. Such ids come
from another provider or a proxy that named the items itself (`item_…`,
`resp_…_msg`), from items the client made itself (`review_rollout_user`,
a hook's UUID), from a history converted from another tool, or from a
hand edit. Some client versions leave some ids out of the request (a
UUID): the finding says what the session's client does.

## What providers answer
- OpenAI Responses API: `[invalid_id_prefix] Invalid 'input[N].id': '…'. Expected an ID that begins with 'msg'.` (also `fc`, `rs`; openai/codex#33176, #40039, #9360)

## Example
```jsonl
{"timestamp":"…","type":"response_item","payload":{"type":"message","id":"item_0","role":"assistant","content":[{"type":"output_text","text":"Done."}]}}
```

## Repair
Removes the `id` from the item in the copy; the old line goes to the repair
log. A client that sends the whole history inline (`store: false`) is
answered the same without item ids: the API resolves none of them. An item
inside a line that holds more than it (a compaction's replacement history)
is left, with the reason in the log.
"#,
    check,
};

/// The prefix the Responses API gives the id of an item of `kind`.
fn prefix(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "message" => "msg",
        "reasoning" => "rs",
        "function_call" => "fc",
        "custom_tool_call" => "ctc",
        "web_search_call" => "ws",
        _ => return None,
    })
}

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    if ctx.profile().provider != Provider::OpenAiResponses || conv.item_ids.is_empty() {
        return;
    }
    // Only items of the history the client sends (not those a compaction
    // or a rollback left behind).
    let sent: HashSet<u64> = conv
        .messages
        .iter()
        .flat_map(|m| m.parts.iter().map(|p| &p.loc).chain([&m.loc]))
        .filter_map(|l| l.line())
        .collect();
    for item in &conv.item_ids {
        let Some(want) = prefix(&item.kind) else {
            continue;
        };
        if item.id.starts_with(want) || !item.loc.line().is_some_and(|l| sent.contains(&l)) {
            continue;
        }
        let loc = item.loc.clone();
        let mi = conv
            .messages
            .iter()
            .position(|m| m.loc == loc || m.parts.iter().any(|p| p.loc == loc));
        let id = crate::escape::preview(&item.id, 80);
        let mut f = ctx
            .finding(
                &RULE,
                mi,
                loc.clone(),
                format!(
                    "the `{}` item's id `{id}` does not begin with `{want}`",
                    item.kind
                ),
            )
            .label(&loc, format!("id `{id}`: the API expects `{want}…`"));
        let resume = ctx.profile().on_first(if is_uuid(&item.id) {
            &[Pattern::InvalidItemIdUuid, Pattern::InvalidItemId]
        } else {
            &[Pattern::InvalidItemId]
        });
        f.severity = resume.severity_or(RULE.severity);
        f = f.notes(resume.notes(
            Some(&format!(
                "sent with this id, the Responses API answers `[invalid_id_prefix] Invalid 'input[N].id': '{id}'. Expected an ID that begins with '{want}'.`"
            )),
            &[("id", &id), ("want", want)],
        ));
        if item.alone {
            f = f.fix(vec![crate::finding::Action::DropItemId { loc }]);
        }
        out.push(f);
    }
}

/// Whether `id` has the shape of a UUID (8-4-4-4-12 hex digits).
fn is_uuid(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::{is_uuid, prefix};

    #[test]
    fn uuids() {
        assert!(is_uuid("019f629b-43ee-7a82-acb1-3071dbffbdad"));
        assert!(!is_uuid("review_rollout_user"));
        assert!(!is_uuid("019f629b-43ee-7a82-acb1-3071dbffbdadx"));
    }

    #[test]
    fn prefixes_by_item_type() {
        assert_eq!(prefix("message"), Some("msg"));
        assert_eq!(prefix("reasoning"), Some("rs"));
        assert_eq!(prefix("function_call"), Some("fc"));
        assert_eq!(prefix("function_call_output"), None);
    }
}
