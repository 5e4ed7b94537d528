//! Real session files written by real tools (fixtures/corpus, copied from the
//! repository): healthy real data must not raise false alarms.

mod common;
use common::*;

#[test]
fn real_sessions_raise_only_their_two_real_anomalies() {
    let corpus = root().join("fixtures/corpus");
    // Without the corpus the test cannot run: it fails and says so.
    assert!(corpus.exists(), "{} is not present", corpus.display());
    let (code, doc) = lint_json(corpus.to_str().unwrap(), &[]);
    assert_eq!(doc["files"].as_array().unwrap().len(), 16, "{doc:#}");
    assert!(doc["skipped"].as_array().unwrap().is_empty());
    let got: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let p = f["location"]["path"].as_str().unwrap();
            let name = p.rsplit('/').take(2).collect::<Vec<_>>().join("<");
            format!(
                "{}@{}:{}",
                f["rule"].as_str().unwrap(),
                name,
                f["location"]["line"]
            )
        })
        .collect();
    // 1. The Claude Code "Warmup" sub-agent really wrote `<function_calls>`
    //    markup as text instead of calling tools.
    // 2. incremental-subagents/turn-1.jsonl is a live snapshot taken mid-turn:
    //    its last record is a Bash tool_use whose result was not written yet
    //    (the corpus README calls it the only true orphan). Claude Code
    //    patches it on resume, and the session may have been running: a
    //    warning, so the corpus raises no error (exit 0).
    assert_eq!(
        got,
        vec![
            "tool-call-as-text@agent-36541525.jsonl<-tmp-private:2",
            "orphan-tool-call@turn-1.jsonl<incremental-subagents:25",
        ],
        "{doc:#}"
    );
    assert_eq!(code, 0);
    let dialects: Vec<&str> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["dialect"].as_str().unwrap())
        .collect();
    assert_eq!(dialects.iter().filter(|d| **d == "claude-code").count(), 13);
    assert_eq!(dialects.iter().filter(|d| **d == "kimi").count(), 2);
    assert_eq!(dialects.iter().filter(|d| **d == "codex").count(), 1);
}
