use super::{Ctx, Rule};
use crate::escape::preview;
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "corrupt-record",
    severity: Severity::Error,
    summary: "a line or row does not parse as a record of its format (torn write at crash)",
    repair: Some("drop the record from the copy; it is kept verbatim in the repair log"),
    doc: r#"## What it does
Finds lines (or rows) that are not valid JSON, or are valid JSON but not a
record of the file's format: a message with an unknown role, a message whose
fields have the wrong types, a line from another format.

## Why is this bad?
A process killed mid-write leaves a torn last line; a disk or sync problem
leaves garbage in the middle. Loaders either crash on the record or skip it
silently, and a skipped message can orphan the tool calls around it. The rest
of the file is still checked: one torn line is not the end of the evidence.

## Example
```jsonl
{"role":"user","content":"hi"}
{"role":"assistant","content":"Hello! How can I he
```

## Repair
Drops the record from the copy and keeps it verbatim in the repair log, so
no byte of evidence is lost.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for rec in &ctx.conv.corrupt {
        let what = match rec.loc.line() {
            Some(line) => format!("line {line}"),
            None => "record".to_string(),
        };
        let summary = if rec.torn_tail {
            format!(
                "{what} is cut off: {} (torn write at the end of the file)",
                rec.reason
            )
        } else {
            format!("{what} {}", rec.reason)
        };
        let mut f = ctx
            .finding(&RULE, None, rec.loc.clone(), summary)
            .label(&rec.loc, format!("`{}`", preview(&rec.excerpt, 60)));
        if ctx.conv.source.dialect == crate::model::Dialect::GeminiCli {
            f = f.note("Gemini CLI skips a line that does not parse without a word (`loadConversationRecord`): whatever it held is silently lost on resume");
        }
        if ctx.conv.source.dialect == crate::model::Dialect::ClaudeCode {
            f = f.note(if rec.torn_tail {
                "Claude Code 2.1.x skips the line on resume: what it held is lost, and the client appends after it"
            } else {
                "Claude Code 2.1.x skips the line on resume: what it held is lost, and the records chained to it lose their parent (see `dangling-parent`)"
            });
        }
        // goose's `SessionStorage::get_conversation` (block/goose
        // session_manager.rs, at 0164300 and dbec165) parses each row's
        // `content_json` with `serde_json::from_str(&content_json)?`.
        if ctx.conv.source.dialect == crate::model::Dialect::Goose
            && ctx.conv.source.format == crate::model::Format::SqliteTable
        {
            f = f.note("goose cannot load this session at all: its loader parses every row's `content_json` and gives up on the first that does not parse (serde_json's error), so nothing of the session is resumed; without this row it loads");
        }
        if ctx.conv.source.dialect == crate::model::Dialect::Codex {
            f = f.note(if rec.not_utf8 {
                "Codex reads the whole rollout as UTF-8 text: with this line in it, the resume fails (`failed to load thread history …: stream did not contain valid UTF-8`) and no item of the session reaches the model"
            } else if rec.torn_tail {
                "Codex skips this line on resume and says nothing: the item it held (often the turn's final answer) is silently lost; it writes a newline before appending, so the fragment stays in the rollout"
            } else {
                "Codex skips this line on resume and says nothing: the item it held is silently lost"
            });
        }
        out.push(f.fix(vec![crate::finding::Action::DropRecord {
            loc: rec.loc.clone(),
        }]));
    }
}
