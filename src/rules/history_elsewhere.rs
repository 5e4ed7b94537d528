use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "history-elsewhere",
    severity: Severity::Info,
    summary: "a store lists a conversation whose messages another file keeps: none of them was read here",
    repair: None,
    doc: r#"## What it does
Reports a conversation that the file read only lists, while its messages
are kept in another file. A Cursor workspace database
(`<User>/workspaceStorage/<hash>/state.vscdb`) lists the workspace's chats
("composers") in `composer.composerData`, but Cursor keeps every
composer's messages in the global database
(`<User>/globalStorage/state.vscdb`, table `cursorDiskKV`).

## Why is this bad?
It is not, in itself: it says what was not checked. Linting the workspace
database alone checks none of those messages; a "no problems" there says
nothing about them. The finding names the file that holds them.

## What the apps do
Cursor shows the workspace's composers from this list and loads each one's
messages from the global database.

## Example
```text
ItemTable  composer.composerData  {"allComposers":[{"composerId":"7a21…","name":"Add a health route",…}],…}
```

## Repair
Nothing to repair here: lint the file the finding names.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    let Some(e) = &conv.elsewhere else {
        return;
    };
    let f = ctx
        .finding(
            &RULE,
            None,
            e.loc.clone(),
            format!(
                "conversation `{}` is only listed here: its messages are kept in {}",
                conv.id, e.holder
            ),
        )
        .label(&e.loc, "lists the conversation, without its messages")
        .note("none of its messages was read from this file: lint the file that keeps them");
    out.push(f);
}

#[cfg(test)]
mod tests {
    use crate::model::{Elsewhere, Loc};
    use crate::rules::testutil::*;

    #[test]
    fn a_conversation_kept_elsewhere_is_named_with_its_holder() {
        let mut c = conv(crate::model::Dialect::Cursor).build();
        assert!(rules_of(&c, "history-elsewhere").is_empty());
        c.elsewhere = Some(Box::new(Elsewhere {
            loc: Loc::Row {
                table: "ItemTable".into(),
                key: "composer.composerData#allComposers[0]".into(),
                rowid: Some(1),
            },
            holder: "the global database `g`".into(),
        }));
        let f = rules_of(&c, "history-elsewhere");
        assert_eq!(f.len(), 1);
        assert!(
            f[0].summary.contains("the global database `g`"),
            "{}",
            f[0].summary
        );
    }
}
