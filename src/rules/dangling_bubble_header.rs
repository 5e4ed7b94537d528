use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "dangling-bubble-header",
    severity: Severity::Error,
    summary: "a conversation's list of its messages names a record the store does not hold (Cursor: a `fullConversationHeadersOnly` entry with no `bubbleId:` row)",
    repair: None,
    doc: r#"## What it does
Finds entries of a conversation's own list of its messages that point at a
record the store does not hold. In Cursor's `state.vscdb` the order of a
chat ("composer") is `composerData.fullConversationHeadersOnly[].bubbleId`,
and each bubble is its own row `bubbleId:<composerId>:<bubbleId>` of
`cursorDiskKV`; an entry whose row is missing is reported.

## Why is this bad?
The message that entry stood for is gone: a reader that follows the header
list finds nothing for it. When the missing bubble was a tool call, the turn
that used it is incomplete (the answer after it refers to a read that is no
longer there); when it was a user message, two assistant turns meet. The
usual cause is a bubble row that was never flushed or was deleted while the
composer document kept its header.

## What the apps do
Cursor is closed source: what it does with such a composer is not known.
Readers of the store (txcript) skip the missing id silently. Cursor is
reported to reject composer documents it does not expect (`Failed to load
composer data`), so the header list is left as it is.

## Example
```text
composerData:9b8a…  {"fullConversationHeadersOnly":[{"bubbleId":"…0001"},{"bubbleId":"…0002"},{"bubbleId":"…0003"}], …}
bubbleId:9b8a…:…0001  {"type":1,"text":"Show me package.json"}
bubbleId:9b8a…:…0003  {"type":2,"text":"It names the project shop-api."}
```

## Repair
Report only: the missing bubble cannot be rebuilt, and an edited
`composerData` document is not known to load.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    for m in &conv.missing {
        let message = (m.before_message < conv.messages.len()).then_some(m.before_message);
        let mut f = ctx
            .finding(
                &RULE,
                message,
                m.loc.clone(),
                format!(
                    "`{}` names `{}`, which the store does not hold",
                    m.field, m.key
                ),
            )
            .label(&m.loc, format!("`{}` names a missing record", m.field));
        if let Some(next) = conv.messages.get(m.before_message) {
            f = f.label(&next.loc, "the conversation goes on here without it");
        }
        out.push(f.note(
            "the message it stood for is lost: a reader following the list finds nothing for it",
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{Loc, MissingRecord};
    use crate::rules::testutil::*;

    #[test]
    fn a_missing_record_is_reported_where_the_list_names_it() {
        let mut c = conv(crate::model::Dialect::Cursor)
            .user("show")
            .assistant("shown")
            .build();
        let loc = Loc::Row {
            table: "cursorDiskKV".into(),
            key: "composerData:x".into(),
            rowid: Some(1),
        };
        c.missing.push(MissingRecord {
            loc,
            field: "fullConversationHeadersOnly[1]".into(),
            key: "bubbleId:x:b2".into(),
            before_message: 1,
        });
        let f = rules_of(&c, "dangling-bubble-header");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].message, Some(1));
        assert!(f[0].summary.contains("bubbleId:x:b2"), "{}", f[0].summary);
        assert!(rules_of(&c, "orphan-tool-call").is_empty());
    }
}
