use super::{Ctx, Rule};
use crate::escape::preview;
use crate::finding::{Finding, Severity};
use crate::model::{ArgEncoding, Arguments};

pub static RULE: Rule = Rule {
    name: "invalid-tool-arguments",
    severity: Severity::Error,
    summary: "tool-call arguments are not valid JSON or not a JSON object (truncated mid-stream)",
    repair: Some(
        "replace the arguments with `{}` in the copy; the raw text is kept in the repair log",
    ),
    doc: r#"## What it does
Finds tool calls whose arguments do not parse as JSON, or parse to something
other than an object.

## Why is this bad?
A provider stream that resets in the middle of a tool call leaves
half-assembled argument JSON such as `{"path": "src/ma`. Orva (seed 001)
dispatched it, failed, and replayed the broken call verbatim on every later
request; strict endpoints reject the whole request, so the conversation is
bricked for good.

## What providers answer
- Moonshot: `Invalid request: messages.70.tool_calls.0.function.arguments: arguments must be a valid JSON object string`

## Example
```jsonl
{"role":"assistant","tool_calls":[{"type":"function","id":"call_7","function":{"name":"read_file","arguments":"{\"path\": \"src/ma"}}]}
```

## Repair
Replaces the arguments with `{}` in the copy (the model already saw the
failure in the call's result) and keeps the raw text in the repair log for
forensics, as Orva and NeMo Gym do.
"#,
    check,
};

/// Why the arguments are not a JSON object, or `None` when they are.
pub fn problem(args: &Arguments) -> Option<String> {
    if args.encoding == ArgEncoding::Freeform {
        return None;
    }
    let raw = args.raw.trim();
    if raw.is_empty() {
        return Some("arguments are empty".to_string());
    }
    // A JSON value's text was cut out of a record that parsed: it is JSON,
    // and only its kind is in question.
    let parsed = match args.encoding {
        ArgEncoding::JsonValue => Ok(serde::de::IgnoredAny),
        _ => serde_json::from_str::<serde::de::IgnoredAny>(raw),
    };
    match parsed {
        Err(e) if e.is_eof() => Some("arguments end mid-JSON (truncated)".to_string()),
        Err(e) => Some(format!("arguments are not valid JSON ({})", error_text(&e))),
        Ok(_) if !raw.starts_with('{') => {
            let what = match raw.as_bytes()[0] {
                b'[' => "an array",
                b'"' => "a string",
                b'n' => "null",
                b't' | b'f' => "a boolean",
                _ => "a number",
            };
            Some(format!("arguments are {what}, not a JSON object"))
        }
        Ok(_) => None,
    }
}

fn error_text(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.find(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for (mi, m) in ctx.conv.messages.iter().enumerate() {
        for (pi, id, name, args) in m.tool_calls() {
            if let Some(problem) = problem(args) {
                let loc = m.part_loc(pi).clone();
                out.push(
                    ctx.finding(
                        &RULE,
                        Some(mi),
                        loc.clone(),
                        format!("tool call `{id}` (`{name}`): {problem}"),
                    )
                    .label(&loc, format!("arguments: `{}`", preview(&args.raw, 60)))
                    .note("a stream reset mid tool-call leaves truncated argument JSON; replaying it is rejected on every request")
                    .notes(
                        ctx.profile()
                            .own(crate::finding::profile::Pattern::InvalidToolArguments)
                            .map(|r| r.notes(None, &[]))
                            .unwrap_or_default(),
                    )
                    .id(id)
                    .fix(vec![crate::finding::Action::ReplaceArguments {
                        message: mi,
                        part: pi,
                        with: "{}".to_string(),
                    }]),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(raw: &str) -> Arguments {
        Arguments {
            raw: raw.into(),
            encoding: ArgEncoding::JsonString,
        }
    }

    #[test]
    fn orva_truncated_arguments() {
        assert_eq!(
            problem(&a(r#"{"path": "src/ma"#)).as_deref(),
            Some("arguments end mid-JSON (truncated)")
        );
    }

    #[test]
    fn objects_pass_other_values_fail() {
        assert_eq!(problem(&a(r#" {"a": 1} "#)), None);
        assert_eq!(problem(&a("{}")), None);
        assert!(problem(&a("[1]")).unwrap().contains("an array"));
        assert!(problem(&a("\"x\"")).unwrap().contains("a string"));
        assert!(problem(&a("")).unwrap().contains("empty"));
        assert!(
            problem(&a("{\"a\":1}}"))
                .unwrap()
                .contains("not valid JSON")
        );
    }

    #[test]
    fn freeform_is_never_checked() {
        let args = Arguments {
            raw: "*** Begin Patch".into(),
            encoding: ArgEncoding::Freeform,
        };
        assert_eq!(problem(&args), None);
    }
}
