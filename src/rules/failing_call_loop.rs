use foldhash::HashMap;

use super::{Ctx, Rule, at};
use crate::finding::{Finding, Severity};
use crate::model::{ArgEncoding, Arguments, PartKind};

/// Consecutive failing rounds that make a loop.
pub const THRESHOLD: usize = 3;

pub static RULE: Rule = Rule {
    name: "failing-call-loop",
    severity: Severity::Warning,
    summary: "the same tool call (name and arguments) failed in 3 or more consecutive rounds",
    repair: None,
    doc: r#"## What it does
Finds a tool call, the same name with the same arguments, that failed in
three or more consecutive tool rounds.

## Why is this bad?
A model that repeats a failing call is stuck: Orva (seed 001) burned its
whole 25-iteration budget re-emitting one broken call, minutes of billed
requests for nothing. A history that holds such a loop shows the agent had no
loop-breaker, and replaying it invites the model to continue the pattern.

A result counts as failed when the store marks it (`is_error`, a failed
status) or, where the store has no flag, when its text starts with an error
marker (`Error`, `<system>ERROR`, `{"error"`). Different arguments are
different calls: three informative "not found" probes are not a loop.

## Example
Three rounds of `read_file {"path": "src/main.go"}`, each answered with
`Error: no such file`.

## Repair
Report only: the rounds are real history.
"#,
    check,
};

pub fn failed(content: &str, is_error: Option<bool>) -> bool {
    // A result chatfsck's repair put in place of a missing one says nothing
    // about how the call went. (One searcher for every result: building
    // `str::contains`'s for each was 3 % of a chunk store's lint.)
    static PLACED: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(crate::model::PLACEHOLDER));
    if PLACED.find(content.as_bytes()).is_some() {
        return false;
    }
    if let Some(flag) = is_error {
        return flag;
    }
    let t = content.trim_start();
    let head: String = t.chars().take(16).collect::<String>().to_ascii_lowercase();
    head.starts_with("error")
        || head.starts_with("<system>error")
        || head.starts_with("{\"error\"")
        || head.starts_with("failed")
        || head.starts_with("exception")
}

fn signature(name: &str, args: &Arguments) -> String {
    let canonical = if args.encoding == ArgEncoding::Freeform {
        args.raw.to_string()
    } else {
        // Key order and spacing do not make a different call.
        match serde_json::from_str::<serde_json::Value>(args.raw.as_str()) {
            Ok(v) => canonical_json(&v),
            Err(_) => args.raw.to_string(),
        }
    };
    format!("{name}\u{0}{canonical}")
}

fn canonical_json(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys
                .iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        serde_json::Value::String((*k).clone()),
                        canonical_json(&map[*k])
                    )
                })
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        serde_json::Value::Array(a) => {
            format!(
                "[{}]",
                a.iter().map(canonical_json).collect::<Vec<_>>().join(",")
            )
        }
        other => other.to_string(),
    }
}

struct Streak {
    name: String,
    rounds: Vec<(usize, usize)>,
}

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let conv = ctx.conv;
    let pairing = ctx.pairing();
    let mut streaks: HashMap<String, Streak> = HashMap::default();
    let emit = |s: Streak, out: &mut Vec<Finding>| {
        if s.rounds.len() < THRESHOLD {
            return;
        }
        let (lm, lp) = *s.rounds.last().unwrap();
        let last = &conv.messages[lm];
        let mut f = ctx.finding(
            &RULE,
            Some(lm),
            last.part_loc(lp).clone(),
            format!(
                "tool call `{}` failed in {} consecutive rounds with the same arguments",
                s.name,
                s.rounds.len()
            ),
        );
        for (i, &(m, p)) in s.rounds.iter().enumerate() {
            let msg = &conv.messages[m];
            let id = match &msg.parts[p].kind {
                PartKind::ToolCall { id, .. } => id.clone(),
                _ => String::new(),
            };
            f = f.label(
                msg.part_loc(p),
                format!("round {} ({}): `{id}` fails", i + 1, at(conv, m)),
            );
            f = f.id(&id);
        }
        out.push(f.note("an agent without a loop-breaker repeats a failing call until its iteration budget runs out"));
    };
    for (mi, m) in conv.messages.iter().enumerate() {
        if !m.has_tool_calls() {
            continue;
        }
        let mut failed_now: HashMap<String, (String, usize)> = HashMap::default();
        for (pi, _id, name, args) in m.tool_calls() {
            let Some((rm, rp)) = pairing.result_of((mi, pi)) else {
                continue;
            };
            if let PartKind::ToolResult {
                content, is_error, ..
            } = &conv.messages[rm].parts[rp].kind
                && failed(content, *is_error)
            {
                failed_now.insert(signature(name, args), (name.to_string(), pi));
            }
        }
        // A streak ends in a round where its call did not fail.
        let ended: Vec<String> = streaks
            .keys()
            .filter(|k| !failed_now.contains_key(*k))
            .cloned()
            .collect();
        for k in ended {
            if let Some(s) = streaks.remove(&k) {
                emit(s, out);
            }
        }
        for (sig, (name, pi)) in failed_now {
            streaks
                .entry(sig)
                .or_insert_with(|| Streak {
                    name,
                    rounds: Vec::new(),
                })
                .rounds
                .push((mi, pi));
        }
    }
    let mut rest: Vec<Streak> = streaks.into_values().collect();
    rest.sort_by_key(|s| s.rounds[0]);
    for s in rest {
        emit(s, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;
    use crate::rules::testutil::*;

    fn round(b: B, id: &str, args: &str, ok: bool) -> B {
        b.msg(Role::Assistant, vec![call(id, "read_file", args)])
            .msg(
                Role::Tool,
                vec![result(
                    id,
                    if ok {
                        "fn main() {}"
                    } else {
                        "Error: no such file"
                    },
                    None,
                )],
            )
    }

    #[test]
    fn three_failing_rounds_are_a_loop() {
        let mut b = conv(crate::model::Dialect::OpenAi).user("read it");
        for i in 0..3 {
            b = round(b, &format!("c{i}"), r#"{"path": "src/main.go"}"#, false);
        }
        let f = rules_of(&b.build(), "failing-call-loop");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].ids, vec!["c0", "c1", "c2"]);
        assert!(f[0].summary.contains("3 consecutive rounds"));
    }

    #[test]
    fn two_failures_then_success_is_not() {
        let mut b = conv(crate::model::Dialect::OpenAi).user("read it");
        b = round(b, "c0", r#"{"path":"a"}"#, false);
        b = round(b, "c1", r#"{"path":"a"}"#, false);
        b = round(b, "c2", r#"{"path":"a"}"#, true);
        b = round(b, "c3", r#"{"path":"a"}"#, false);
        assert!(rules_of(&b.build(), "failing-call-loop").is_empty());
    }

    #[test]
    fn distinct_probes_are_not_a_loop_but_key_order_is_the_same_call() {
        let mut b = conv(crate::model::Dialect::OpenAi).user("find it");
        b = round(b, "c0", r#"{"path":"a"}"#, false);
        b = round(b, "c1", r#"{"path":"b"}"#, false);
        b = round(b, "c2", r#"{"path":"c"}"#, false);
        assert!(rules_of(&b.build(), "failing-call-loop").is_empty());
        let mut b = conv(crate::model::Dialect::OpenAi).user("find it");
        b = round(b, "c0", r#"{"a":1,"b":2}"#, false);
        b = round(b, "c1", r#"{"b":2, "a":1}"#, false);
        b = round(b, "c2", r#"{ "a": 1, "b": 2 }"#, false);
        assert_eq!(rules_of(&b.build(), "failing-call-loop").len(), 1);
    }

    #[test]
    fn error_markers() {
        assert!(failed("<system>ERROR: boom</system>", None));
        assert!(failed("{\"error\": \"x\"}", None));
        assert!(!failed("all good", None));
        assert!(failed("anything", Some(true)));
        assert!(!failed("Error: but flagged fine", Some(false)));
    }
}
