use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "nul-escape",
    severity: Severity::Warning,
    summary: "a record's JSON text holds NUL escapes (`\\u0000`) that its database keeps but refuses to work on (PostgreSQL `json`)",
    repair: None,
    doc: r#"## What it does
Finds records whose JSON text holds `\u0000` escapes, in a store whose
database keeps such text but refuses to work on it. PostgreSQL's `json`
type stores the text as it was written, `\u0000` and all; its `jsonb`
type and every JSON operator (`->`, `->>`, `json_each`) refuse it
(`unsupported Unicode escape sequence`: `\u0000 cannot be converted to
text`). Open WebUI on PostgreSQL keeps each chat in such a column (`chat.chat`,
SQLAlchemy's `JSON`), and a NUL reaches it from a model's output or a
pasted file.

## Why is this bad?
The chat itself loads (Python's `json` reads the escape), but whatever
the app asks of PostgreSQL about it fails: a query that applies a JSON
operator to the chat raises, and an export or a migration to `jsonb`
stops at the row.

## What the apps do
Open WebUI 0.12.4 leaves every chat whose text holds `\u0000` out of its
chat search on PostgreSQL (`Chat.chat::text NOT LIKE '%\\u0000%'`, a
"safety filter"): the chat is never found by a search.

## Example
```json
{"history":{"messages":{"m1":{"role":"assistant","content":"done\u0000"}}}}
```

## Repair
Report only: the text is what the model wrote.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for n in &ctx.conv.nul_escapes {
        let s = if n.count == 1 { "" } else { "s" };
        let at = match &n.loc {
            crate::model::Loc::Row { table, key, .. } => format!("{} row `{key}`", &**table),
            crate::model::Loc::Line { line, .. } => format!("line {line}"),
        };
        let f = ctx
            .finding(
                &RULE,
                None,
                n.loc.clone(),
                format!("{at} has {} NUL escape{s} (`\\u0000`): {}", n.count, n.effect),
            )
            .label(&n.loc, "its JSON text holds `\\u0000`")
            .note("PostgreSQL keeps it in a `json` column, but `jsonb` and the JSON operators refuse it (`\\u0000 cannot be converted to text`)");
        out.push(f);
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{Loc, NulEscapes};
    use crate::rules::testutil::*;

    #[test]
    fn nul_escapes_are_reported_with_what_the_app_does() {
        let mut c = conv(crate::model::Dialect::OpenWebui).user("hi").build();
        assert!(rules_of(&c, "nul-escape").is_empty());
        c.nul_escapes.push(NulEscapes {
            loc: Loc::Row {
                table: "chat".into(),
                key: "c1".into(),
                rowid: None,
            },
            count: 2,
            effect: "left out of every search",
        });
        let f = rules_of(&c, "nul-escape");
        assert_eq!(f.len(), 1);
        assert!(f[0].summary.contains("2 NUL escapes"), "{}", f[0].summary);
    }
}
