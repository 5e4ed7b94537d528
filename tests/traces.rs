//! Traces: what was really sent, and where it differs from the store. The
//! built binary on the real fixture files (fixtures/traces/build.py).

mod common;
use common::*;

use std::path::Path;

const SEED: &str = "1a997b08-09c2-412c-b296-48703c8aaf58";
const HEALTHY: &str = "7c1e2f30-5a4b-4d8e-9f10-2b3c4d5e6f70";
const CUT: &str = "3b5c9e12-7f40-4d2a-8e61-0c9a4f2d7b18";
const STORE: &str = "fixtures/dispatch/seed-000.db";
const TRACES: &str = "fixtures/dispatch/traces.db";
const PHOENIX: &str = "fixtures/traces/phoenix.db";
const OTLP_GENAI: &str = "fixtures/traces/otlp-genai.jsonl";
const OTLP_OI: &str = "fixtures/traces/otlp-openinference.jsonl";

fn findings(doc: &serde_json::Value) -> &Vec<serde_json::Value> {
    doc["findings"].as_array().unwrap()
}

fn of_rule<'a>(doc: &'a serde_json::Value, rule: &str) -> Vec<&'a serde_json::Value> {
    findings(doc).iter().filter(|f| f["rule"] == rule).collect()
}

fn chunk_key(seq: u32) -> String {
    format!("conv:{SEED}:chunk:{seq:010}")
}

/// The record id and body of a request, straight from the trace database.
fn request_body(db: &str, conv: &str, turn: usize, step: usize) -> (String, serde_json::Value) {
    let c = rusqlite::Connection::open_with_flags(
        root().join(db),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    // Turns in order, steps in order, the provider.request under each step.
    let turns: Vec<String> = c
        .prepare("SELECT turnId FROM records WHERE conversationId = ?1 AND name = 'turn' AND kind = 'span-open' ORDER BY timestamp")
        .unwrap()
        .query_map([conv], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let steps: Vec<String> = c
        .prepare("SELECT spanId FROM records WHERE turnId = ?1 AND name = 'step' AND kind = 'span-open' ORDER BY timestamp")
        .unwrap()
        .query_map([&turns[turn - 1]], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let (id, body): (String, String) = c
        .query_row(
            "SELECT r.id, b.body FROM records r JOIN bodies b ON b.recordId = r.id \
             WHERE r.parentSpanId = ?1 AND r.name = 'provider.request' AND r.kind = 'span-open'",
            [&steps[step]],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    (id, serde_json::from_str(&body).unwrap())
}

#[test]
fn the_dispatch_trace_holds_the_prompt_seed_000_quotes() {
    let (_, body) = request_body(TRACES, SEED, 3, 1);
    let msgs = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "user", "assistant", "tool", "tool"]);
    // MSG[0]: hello + assistant thinking + assistant text + user text +
    // assistant thinking + assistant text, concatenated.
    let m0 = msgs[0]["content"].as_str().unwrap();
    assert!(m0.starts_with("helloThe user simply said hello."), "{m0}");
    assert!(m0.contains("Hello! How can I help you today?Can you read some files in this project"));
    assert!(m0.ends_with("Which files or areas are you interested in?"));
    assert_eq!(
        msgs[1]["content"],
        "the caching, there are 3 different percentages displayed"
    );
    assert_eq!(msgs[2]["tool_calls"].as_array().unwrap().len(), 2);
    assert!(
        msgs[2]["content"]
            .as_str()
            .unwrap()
            .starts_with("The user wants to look at files related to caching")
    );
    assert_eq!(msgs[3]["tool_call_id"], "call_0c9d2e71b4a84f6f9e3a5b1c");
    assert_eq!(msgs[4]["content"], "");
    assert_eq!(body["tools"].as_array().unwrap().len(), 9);
    let c = rusqlite::Connection::open(root().join(TRACES)).unwrap();
    let finish: String = c
        .query_row(
            "SELECT json_extract(attributes, '$.finishReason') FROM records r \
             WHERE name = 'step' AND kind = 'span-close' AND conversationId = ?1 ORDER BY timestamp DESC LIMIT 1",
            [SEED],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(finish, "stop");
    let repair: String = c
        .query_row(
            "SELECT attributes FROM records WHERE name = 'reconcile.repair' AND kind = 'span-close' \
             AND conversationId = ?1 ORDER BY timestamp DESC LIMIT 1",
            [SEED],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        repair,
        r#"{"repairedCount":0,"firstRepairedToolCallId":null,"strippedErrorChunks":0,"droppedEmptyMessages":1}"#
    );
}

#[test]
fn lint_store_with_trace_reports_the_merged_prompt_with_both_sides_evidence() {
    for (store, trace) in [
        (STORE, TRACES),
        (
            "fixtures/dispatch/wal/dispatch.db",
            "fixtures/dispatch/wal/traces.db",
        ),
    ] {
        let (code, doc) = lint_json(store, &["--trace", trace]);
        assert_eq!(code, 1);
        assert_eq!(doc["files"][0]["crosscheck"]["trace"], trace);
        assert_eq!(doc["files"][0]["crosscheck"]["conversations"], 2);
        assert_eq!(doc["files"][0]["crosscheck"]["requests"], 8);
        let div = of_rule(&doc, "prompt-divergence");
        assert_eq!(div.len(), 2, "{doc:#}");
        for f in &div {
            assert_eq!(f["conversation"], SEED, "nothing for the healthy one");
            assert_eq!(f["severity"], "error");
            assert_eq!(f["location"]["path"], store);
            assert_eq!(f["location"]["table"], "kv");
        }
        assert!(of_rule(&doc, "truncated-response").is_empty());
        // Turn 3: seq 1–6 (four true messages) sent as one `user` message.
        let f = div
            .iter()
            .find(|f| {
                f["summary"]
                    .as_str()
                    .unwrap()
                    .starts_with("4 stored messages")
            })
            .unwrap();
        assert_eq!(
            f["summary"],
            "4 stored messages (6 chunks, seq 1–6) were sent as one `user` message: `assistant` text sent as `user`"
        );
        assert_eq!(f["location"]["key"], chunk_key(2));
        let ev = f["evidence"].as_array().unwrap();
        let store_keys: Vec<&str> = ev
            .iter()
            .filter(|e| e["location"]["path"] == store)
            .map(|e| e["location"]["key"].as_str().unwrap())
            .collect();
        assert_eq!(
            store_keys,
            [chunk_key(2), chunk_key(1), chunk_key(4), chunk_key(5)]
        );
        let sent: Vec<&serde_json::Value> = ev
            .iter()
            .filter(|e| e["location"]["path"] == trace)
            .collect();
        assert_eq!(sent.len(), 2, "turn 3 step 0 and step 1");
        let (step1, _) = request_body(TRACES, SEED, 3, 1);
        let e = sent
            .iter()
            .find(|e| e["location"]["key"] == step1.as_str())
            .expect("turn 3 step 1's provider.request record");
        assert_eq!(e["location"]["table"], "bodies");
        let text = e["text"].as_str().unwrap();
        assert!(
            text.starts_with(&format!(
                "`{SEED}/turn-3/step-1` sent `user` messages[0]: `helloThe user simply said hello."
            )),
            "{text}"
        );
        // Turn 2: seq 1–3.
        assert!(div.iter().any(|f| f["summary"]
            == "2 stored messages (3 chunks, seq 1–3) were sent as one `user` message: `assistant` text sent as `user`"));
    }
}

#[test]
fn the_healthy_conversation_matches_every_recorded_prompt() {
    let o = run(&[
        "diff",
        STORE,
        TRACES,
        "--conversation",
        HEALTHY,
        "--format",
        "json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let reqs = doc["conversations"][0]["requests"].as_array().unwrap();
    assert_eq!(reqs.len(), 4);
    for r in reqs {
        assert_eq!(r["divergent"], false);
        for row in r["rows"].as_array().unwrap() {
            assert_eq!(row["op"], "same", "{row:#}");
        }
    }
    // The last request covers everything but the final answer.
    assert_eq!(reqs[3]["covered"], 7);
}

#[test]
fn diff_aligns_the_seed_prompt_with_the_store() {
    let id = format!("{SEED}/turn-3/step-1");
    let o = run(&[
        "diff",
        STORE,
        TRACES,
        "--conversation",
        &id,
        "--format",
        "json",
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &doc["conversations"][0]["requests"][0];
    assert_eq!(r["request"], id.as_str());
    assert_eq!(r["finish_reason"], "stop");
    let rows = r["rows"].as_array().unwrap();
    let ops: Vec<&str> = rows.iter().map(|r| r["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["merged", "same", "same", "same", "same"]);
    assert_eq!(
        rows[0]["store"]["messages"],
        serde_json::json!([0, 1, 2, 3])
    );
    assert_eq!(rows[0]["store"]["at"], "seq 1–6");
    assert_eq!(
        rows[0]["store"]["roles"],
        serde_json::json!(["user", "assistant"])
    );
    assert_eq!(rows[0]["sent"]["index"], 0);
    assert_eq!(rows[0]["sent"]["role"], "user");
    // Thinking concatenated into the assistant's content is not a difference.
    assert_eq!(rows[2]["store"]["at"], "seq 8–11");
    assert_eq!(rows[2]["sent"]["index"], 2);
    // The thinking-only answer (seq 14) is the request's future, not a drop.
    assert_eq!(r["covered"], 8);
}

#[test]
fn truncated_responses_are_found_in_all_three_trace_formats() {
    let cases: [(&str, &str, &str, serde_json::Value); 6] = [
        (
            TRACES,
            "sqlite-trace",
            "3b5c9e12-7f40-4d2a-8e61-0c9a4f2d7b18/turn-1/step-1",
            serde_json::json!("records"),
        ),
        (
            "fixtures/dispatch/wal/traces.db",
            "sqlite-trace",
            "3b5c9e12-7f40-4d2a-8e61-0c9a4f2d7b18/turn-1/step-1",
            serde_json::json!("records"),
        ),
        (
            PHOENIX,
            "sqlite-trace",
            "sess-5d0c2b7e-support-4417/turn-2/step-0",
            serde_json::json!("spans"),
        ),
        (
            "fixtures/traces/wal/phoenix.db",
            "sqlite-trace",
            "sess-5d0c2b7e-support-4417/turn-2/step-0",
            serde_json::json!("spans"),
        ),
        (
            OTLP_GENAI,
            "otlp-jsonl",
            "conv_6f1e9b2a4c7d/turn-2/step-0",
            serde_json::json!(2),
        ),
        (
            OTLP_OI,
            "otlp-jsonl",
            "thread-2c41e8/turn-2/step-0",
            serde_json::json!(2),
        ),
    ];
    for (path, format, conv, at) in cases {
        let (code, doc) = lint_json(path, &[]);
        assert_eq!(code, 1, "{path}");
        assert_eq!(doc["files"][0]["format"], format, "{path}");
        let all = findings(&doc);
        assert_eq!(all.len(), 1, "{path}: {doc:#}");
        let f = &all[0];
        assert_eq!(f["rule"], "truncated-response", "{path}");
        assert_eq!(f["conversation"], conv, "{path}");
        let loc = &f["location"];
        match at {
            serde_json::Value::Number(_) => assert_eq!(loc["line"], at, "{path}"),
            table => assert_eq!(loc["table"], table, "{path}"),
        }
        assert!(
            f["summary"]
                .as_str()
                .unwrap()
                .contains("ended without a finish reason"),
            "{path}"
        );
    }
}

#[test]
fn every_request_is_checked_as_a_history() {
    // The healthy requests report nothing; each recorded request is one
    // conversation named after its conversation, turn and step.
    let o = run(&["inspect", "--format", "json", TRACES]);
    assert_eq!(code(&o), 0);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let convs = doc["trace"].as_array().unwrap();
    let ids: Vec<&str> = convs.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [SEED, HEALTHY, CUT]);
    let seed = &convs[0];
    assert_eq!(seed["turns"], 3);
    let reqs: Vec<(&str, &str, u64)> = seed["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap(),
                r["finish_reason"].as_str().unwrap(),
                r["messages"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        reqs,
        [
            (format!("{SEED}/turn-1/step-0").as_str(), "stop", 1),
            (format!("{SEED}/turn-2/step-0").as_str(), "stop", 2),
            (format!("{SEED}/turn-3/step-0").as_str(), "tool_call", 2),
            (format!("{SEED}/turn-3/step-1").as_str(), "stop", 5),
        ]
    );
    let reports = seed["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 3);
    assert_eq!(reports[2]["name"], "reconcile.repair");
    assert_eq!(reports[2]["before_request"], 4);
    let cut = &convs[2]["requests"][1];
    assert_eq!(cut["status"], "error");
    assert_eq!(cut["truncated"], true);
    assert!(cut["finish_reason"].is_null());
}

/// A dispatch store (message indices numbered right) holding conversation
/// `CUT`, whose last answer is the chunk `answer`.
fn store_for_cut(dir: &Path, answer: &str) -> String {
    let db = dir.join("dispatch.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(
        "CREATE TABLE kv (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (namespace, key));",
    )
    .unwrap();
    let chunks = [
        r#"{"chunk":{"type":"text","text":"summarise packages/kernel/src/runtime/run-turn.ts"},"role":"user","msgIdx":0,"chunkIdx":0}"#,
        r#"{"chunk":{"type":"text","text":"Reading the file."},"role":"assistant","msgIdx":1,"chunkIdx":0}"#,
        r#"{"chunk":{"type":"tool-call","toolCallId":"call_4f1c9a7e2b6d48e09a3c5d17","toolName":"read_file","input":{"path":"packages/kernel/src/runtime/run-turn.ts"}},"role":"assistant","msgIdx":1,"chunkIdx":1}"#,
        r#"{"chunk":{"type":"tool-result","toolCallId":"call_4f1c9a7e2b6d48e09a3c5d17","toolName":"read_file","content":"import type { ChatMessage, Chunk, StepId } from \"../contracts/conversation.js\";\n// … 640 more lines","isError":false},"role":"tool","msgIdx":2,"chunkIdx":0}"#,
        answer,
    ];
    for (i, v) in chunks.iter().enumerate() {
        c.execute(
            "INSERT INTO kv VALUES ('conversation-store', ?1, ?2)",
            [format!("conv:{CUT}:chunk:{:010}", i + 1), v.to_string()],
        )
        .unwrap();
    }
    db.to_string_lossy().into_owned()
}

#[test]
fn a_cut_answer_stored_as_complete_is_reported_against_the_store() {
    let d = tempfile::tempdir().unwrap();
    let db = store_for_cut(
        d.path(),
        r#"{"chunk":{"type":"text","text":"run-turn.ts drives one turn: it streams a step, runs the tool calls and"},"role":"assistant","msgIdx":3,"chunkIdx":0}"#,
    );
    let (code, doc) = lint_json(&db, &["--trace", TRACES]);
    assert_eq!(code, 1);
    let t = of_rule(&doc, "truncated-response");
    assert_eq!(t.len(), 1, "{doc:#}");
    assert_eq!(t[0]["conversation"], CUT);
    assert_eq!(t[0]["message"], 3);
    assert_eq!(
        t[0]["location"]["key"],
        format!("conv:{CUT}:chunk:0000000005")
    );
    let ev = t[0]["evidence"].as_array().unwrap();
    assert!(ev.iter().any(|e| e["location"]["path"] == TRACES
        && e["location"]["table"] == "records"
        && e["text"].as_str().unwrap().contains("turn-1/step-1")));
    assert!(of_rule(&doc, "prompt-divergence").is_empty(), "{doc:#}");

    // Stored with the error chunk dispatch writes: the app knew.
    let d = tempfile::tempdir().unwrap();
    let db = store_for_cut(
        d.path(),
        r#"{"chunk":{"type":"error","message":"The socket connection was closed unexpectedly."},"role":"assistant","msgIdx":3,"chunkIdx":0}"#,
    );
    let (code, doc) = lint_json(&db, &["--trace", TRACES]);
    assert!(of_rule(&doc, "truncated-response").is_empty(), "{doc:#}");
    assert_eq!(code, 0, "{doc:#}");
}

#[test]
fn no_command_touches_a_trace_or_writes_beside_it() {
    let wal = copy_wal_to_tmp(&[
        "fixtures/dispatch/wal/dispatch.db",
        "fixtures/dispatch/wal/traces.db",
        "fixtures/traces/wal/phoenix.db",
    ]);
    let plain = copy_to_tmp(&[TRACES, PHOENIX, OTLP_GENAI, OTLP_OI]);
    let p = |name: &str| wal.path().join(name).to_string_lossy().into_owned();
    let q = |name: &str| plain.path().join(name).to_string_lossy().into_owned();
    // The WAL-only files hold nothing without their -wal.
    assert!(
        std::fs::metadata(wal.path().join("dispatch.db"))
            .unwrap()
            .len()
            <= 4096
    );
    let before = (dir_fingerprints(wal.path()), dir_fingerprints(plain.path()));
    std::thread::sleep(std::time::Duration::from_millis(20));
    let store = p("dispatch.db");
    let traces_wal = p("traces.db");
    for args in [
        vec!["lint", store.as_str(), "--trace", traces_wal.as_str()],
        vec!["lint", "--format", "json", traces_wal.as_str()],
        vec!["diff", store.as_str(), traces_wal.as_str()],
        vec!["inspect", traces_wal.as_str()],
        vec!["inspect", traces_wal.as_str(), "--conversation", SEED],
    ] {
        let o = run(&args);
        assert!(code(&o) < 2, "{args:?}: {}", stderr(&o));
    }
    // The WAL-only trace shows every request.
    let (_, doc) = lint_json(&traces_wal, &[]);
    assert_eq!(doc["files"][0]["conversations"], 10);
    for path in [
        p("phoenix.db"),
        q("traces.db"),
        q("phoenix.db"),
        q("otlp-genai.jsonl"),
        q("otlp-openinference.jsonl"),
    ] {
        for args in [
            vec!["lint", path.as_str()],
            vec!["inspect", path.as_str()],
            vec!["inspect", "--format", "markdown", path.as_str()],
        ] {
            let o = run(&args);
            assert!(code(&o) < 2, "{args:?}: {}", stderr(&o));
        }
    }
    assert_eq!(
        before,
        (dir_fingerprints(wal.path()), dir_fingerprints(plain.path())),
        "every database, -wal, -shm and OTLP file is byte-for-byte unchanged, nothing new beside them"
    );
}

fn assert_one_line_error(args: &[&str], path: &str, cause: &str) {
    let o = run(args);
    assert_eq!(code(&o), 2, "{args:?}: {}", stdout(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains(path), "names {path}: {err}");
    assert!(err.contains(cause), "says `{cause}`: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_trace_that_is_not_what_it_claims_is_a_one_line_error() {
    let d = tempfile::tempdir().unwrap();
    let w = |name: &str, bytes: &[u8]| {
        let p = d.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_string_lossy().into_owned()
    };
    // --trace given a store, or a chat log.
    assert_one_line_error(
        &["lint", STORE, "--trace", STORE],
        STORE,
        "is not a trace but a dispatch sqlite-kv history",
    );
    let chat = w("chat.jsonl", b"{\"role\":\"user\",\"content\":\"hi\"}\n");
    assert_one_line_error(
        &["lint", STORE, "--trace", &chat],
        &chat,
        "is not a trace but a message history",
    );
    // `diff STORE HISTORY` is a diff of two histories, not an error.
    assert_eq!(code(&run(&["diff", STORE, &chat])), 1);
    // The arguments of diff swapped.
    assert_one_line_error(
        &["diff", TRACES, TRACES],
        TRACES,
        "is a trace, not a conversation store",
    );
    assert_one_line_error(
        &["diff", TRACES, STORE],
        TRACES,
        "is a trace, not a conversation store",
    );
    // An OTLP export whose first line announces spans and is torn.
    let torn = w(
        "spans.jsonl",
        b"{\"resourceSpans\":[{\"resource\":{\"attributes\":[]},\"scopeSpans\":[{\"spans\":[{\"traceId\":\"4bf9",
    );
    for cmd in ["lint", "inspect"] {
        assert_one_line_error(
            &[cmd, &torn],
            &torn,
            "OTLP trace file: line 1 ends before the JSON value is complete",
        );
    }
    // OTLP with spans but no LLM request in them.
    let nollm = w(
        "http.jsonl",
        br#"{"resourceSpans":[{"resource":{"attributes":[]},"scopeSpans":[{"scope":{"name":"http"},"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","name":"GET /","kind":2,"startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"http.method","value":{"stringValue":"GET"}}],"status":{}}]}]}]}
"#,
    );
    assert_one_line_error(&["lint", &nollm], &nollm, "records no LLM request");
    // Tables named like a dispatch trace store, columns of something else.
    let fake = d.path().join("traces.db");
    {
        let c = rusqlite::Connection::open(&fake).unwrap();
        c.execute_batch(
            "CREATE TABLE records (id TEXT PRIMARY KEY, payload TEXT); CREATE TABLE bodies (recordId TEXT, body TEXT);",
        )
        .unwrap();
    }
    let fake = fake.to_string_lossy().into_owned();
    assert_one_line_error(
        &["lint", &fake],
        &fake,
        "is not a dispatch trace database (`records` lacks `kind`",
    );
    assert_one_line_error(
        &["lint", STORE, "--trace", &fake],
        &fake,
        "is not a dispatch trace database",
    );
    // A dispatch trace store that recorded no request.
    let empty = d.path().join("empty-traces.db");
    {
        let c = rusqlite::Connection::open(&empty).unwrap();
        c.execute_batch(
            "CREATE TABLE records (id TEXT PRIMARY KEY, kind TEXT NOT NULL, level TEXT, msg TEXT, name TEXT, spanId TEXT, parentSpanId TEXT, conversationId TEXT, turnId TEXT, extensionId TEXT NOT NULL, timestamp INTEGER NOT NULL, durationMs INTEGER, status TEXT, attributes TEXT, links TEXT);
             CREATE TABLE bodies (recordId TEXT PRIMARY KEY, body TEXT NOT NULL);
             INSERT INTO records (id, kind, level, msg, extensionId, timestamp) VALUES ('a', 'log', 'info', 'started', 'kernel', 1);",
        )
        .unwrap();
    }
    let empty = empty.to_string_lossy().into_owned();
    assert_one_line_error(&["lint", &empty], &empty, "records no provider requests");
    // Phoenix-shaped tables without the span attributes.
    let phx = d.path().join("phoenix.db");
    {
        let c = rusqlite::Connection::open(&phx).unwrap();
        c.execute_batch(
            "CREATE TABLE traces (id INTEGER PRIMARY KEY, trace_id TEXT); CREATE TABLE spans (id INTEGER PRIMARY KEY, trace_rowid INTEGER, span_id TEXT, name TEXT, span_kind TEXT, status_code TEXT);",
        )
        .unwrap();
    }
    let phx = phx.to_string_lossy().into_owned();
    assert_one_line_error(
        &["lint", &phx],
        &phx,
        "is not an Arize Phoenix database (`spans` lacks `attributes`)",
    );
    // A conversation the trace does not hold.
    assert_one_line_error(
        &["inspect", TRACES, "--conversation", "nope"],
        TRACES,
        "no conversation `nope`",
    );
    assert_one_line_error(
        &["diff", STORE, PHOENIX],
        STORE,
        "no conversation of the store appears in",
    );
    // Nothing was written beside the inputs.
    let mut names: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "chat.jsonl",
            "empty-traces.db",
            "http.jsonl",
            "phoenix.db",
            "spans.jsonl",
            "traces.db"
        ]
    );
}

#[test]
fn hostile_text_in_a_trace_never_reaches_the_terminal_raw() {
    let d = tempfile::tempdir().unwrap();
    let line = r#"{"resourceSpans":[{"resource":{"attributes":[]},"scopeSpans":[{"scope":{"name":"x"},"spans":[{"traceId":"t\u001b[31m1","spanId":"s\u009b1","name":"chat","kind":3,"startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"gen_ai.conversation.id","value":{"stringValue":"conv\u001b]0;pwned\u0007"}},{"key":"gen_ai.input.messages","value":{"stringValue":"[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"content\":\"hi \u001b[2J \u202e\"}]}]"}}],"status":{"code":2,"message":"reset \u001b[31m by peer \u202e"}}]}]}]}"#;
    let p = d.path().join("hostile.jsonl");
    std::fs::write(&p, format!("{line}\n")).unwrap();
    let p = p.to_string_lossy().into_owned();
    for args in [
        vec!["lint", p.as_str()],
        vec!["lint", "--format", "json", p.as_str()],
        vec!["inspect", p.as_str()],
        vec!["inspect", "--format", "markdown", p.as_str()],
        vec!["inspect", "--format", "json", p.as_str()],
        vec![
            "inspect",
            p.as_str(),
            "--conversation",
            "conv\u{1b}]0;pwned\u{7}",
        ],
    ] {
        let o = run(&args);
        assert!(code(&o) < 2, "{args:?}: {}", stderr(&o));
        for stream in [stdout(&o), stderr(&o)] {
            for bad in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}'] {
                assert!(!stream.contains(bad), "{args:?}: raw {bad:?} in {stream}");
            }
        }
    }
}

#[test]
fn snapshots_of_trace_output() {
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("lint_human__dispatch-traces", vec!["lint", TRACES]),
        (
            "lint_json__dispatch-traces",
            vec!["lint", "--format", "json", TRACES],
        ),
        ("lint_human__phoenix", vec!["lint", PHOENIX]),
        (
            "lint_json__phoenix",
            vec!["lint", "--format", "json", PHOENIX],
        ),
        (
            "lint_human__store-with-trace",
            vec!["lint", STORE, "--trace", TRACES],
        ),
        (
            "lint_json__store-with-trace",
            vec!["lint", "--format", "json", STORE, "--trace", TRACES],
        ),
        ("inspect__dispatch-traces", vec!["inspect", TRACES]),
        (
            "inspect_markdown__dispatch-traces-seed",
            vec![
                "inspect",
                "--format",
                "markdown",
                TRACES,
                "--conversation",
                SEED,
            ],
        ),
        (
            "inspect__phoenix-session",
            vec![
                "inspect",
                PHOENIX,
                "--conversation",
                "sess-5d0c2b7e-support-4417",
            ],
        ),
        (
            "inspect__otlp-genai-session",
            vec!["inspect", OTLP_GENAI, "--conversation", "conv_6f1e9b2a4c7d"],
        ),
        (
            "diff_human__seed",
            vec!["diff", STORE, TRACES, "--conversation", SEED],
        ),
        (
            "diff_json__seed-turn-3-step-1",
            vec![
                "diff",
                "--format",
                "json",
                STORE,
                TRACES,
                "--conversation",
                "1a997b08-09c2-412c-b296-48703c8aaf58/turn-3/step-1",
            ],
        ),
        (
            "explain__prompt-divergence",
            vec!["explain", "prompt-divergence"],
        ),
        (
            "explain__truncated-response",
            vec!["explain", "truncated-response"],
        ),
    ];
    for (name, args) in cases {
        let o = run(&args);
        assert!(code(&o) < 2, "{args:?}: {}", stderr(&o));
        insta::assert_snapshot!(name, stdout(&o));
    }
}

#[test]
fn a_step_never_closed_is_a_truncated_response() {
    // The app died mid-stream: the step and its provider.request were
    // opened and never closed.
    let d = copy_to_tmp(&[TRACES]);
    let db = d.path().join("traces.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        let n = c
            .execute(
                "DELETE FROM records WHERE conversationId = ?1 AND kind = 'span-close' \
                 AND name IN ('step', 'provider.request', 'turn', 'ttft') \
                 AND timestamp > (SELECT MAX(timestamp) FROM records WHERE conversationId = ?1 \
                                  AND name = 'provider.request' AND kind = 'span-open')",
                [HEALTHY],
            )
            .unwrap();
        assert_eq!(n, 4);
    }
    let db = db.to_string_lossy().into_owned();
    let (_, doc) = lint_json(&db, &[]);
    let t = of_rule(&doc, "truncated-response");
    let f = t
        .iter()
        .find(|f| f["conversation"] == format!("{HEALTHY}/turn-2/step-1").as_str())
        .expect("the unclosed step");
    assert!(
        f["summary"]
            .as_str()
            .unwrap()
            .contains("never closed: the app stopped during the call"),
        "{f:#}"
    );
    assert_eq!(f["location"]["table"], "bodies");
}

#[test]
fn phoenix_databases_with_the_old_column_names_are_read() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("phoenix.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        let attrs = serde_json::json!({
            "llm": {
                "input_messages": [{"message": {"role": "user", "content": "hi"}}],
                "output_messages": [{"message": {"role": "assistant", "content": "hello"}}],
                "finish_reason": "stop",
            },
            "openinference": {"span": {"kind": "LLM"}},
        });
        c.execute_batch(
            "CREATE TABLE projects (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
             CREATE TABLE traces (id INTEGER PRIMARY KEY, project_rowid INTEGER NOT NULL, session_id TEXT,
               trace_id TEXT NOT NULL, start_time TEXT NOT NULL, end_time TEXT NOT NULL);
             CREATE TABLE spans (id INTEGER PRIMARY KEY, trace_rowid INTEGER NOT NULL, span_id TEXT NOT NULL,
               parent_span_id TEXT, name TEXT NOT NULL, kind TEXT NOT NULL, start_time TEXT NOT NULL,
               end_time TEXT NOT NULL, attributes JSON NOT NULL, events JSON NOT NULL, status TEXT NOT NULL,
               status_message TEXT NOT NULL, latency_ms REAL NOT NULL, cumulative_error_count INTEGER NOT NULL,
               cumulative_llm_token_count_prompt INTEGER NOT NULL, cumulative_llm_token_count_completion INTEGER NOT NULL);
             INSERT INTO projects VALUES (1, 'default');
             INSERT INTO traces VALUES (1, 1, NULL, 'abc', '2024-04-03 19:41:48', '2024-04-03 19:41:49');",
        )
        .unwrap();
        c.execute(
            "INSERT INTO spans VALUES (1, 1, 's1', NULL, 'ChatCompletion', 'LLM', '2024-04-03 19:41:48', \
             '2024-04-03 19:41:49', ?1, '[]', 'OK', '', 812.0, 0, 10, 2)",
            [attrs.to_string()],
        )
        .unwrap();
    }
    let db = db.to_string_lossy().into_owned();
    let (code, doc) = lint_json(&db, &[]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["files"][0]["dialect"], "phoenix");
    assert_eq!(doc["files"][0]["conversations"], 1);
    let o = run(&["inspect", "--format", "json", &db]);
    let ins: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &ins["trace"][0]["requests"][0];
    assert_eq!(
        r["id"], "abc/turn-1/step-0",
        "no session: the trace is the conversation"
    );
    assert_eq!(r["finish_reason"], "stop");
    assert_eq!(r["answer"], "hello");
}

/// Phoenix files a trace under one session (`traces.project_session_rowid`,
/// from the `session.id` of the spans as they arrived): its UI shows the
/// trace there, so chatfsck groups it there too, whatever a span's own
/// attribute says. A trace without a session falls back to the span's
/// `session.id`; a span whose kind column is not `LLM` is still a request
/// when its attributes hold a prompt.
#[test]
fn phoenix_groups_a_trace_under_the_session_phoenix_filed_it_in() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("phoenix.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE project_sessions (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL UNIQUE);
             CREATE TABLE traces (id INTEGER PRIMARY KEY, trace_id TEXT NOT NULL UNIQUE,
               project_session_rowid INTEGER);
             CREATE TABLE spans (id INTEGER PRIMARY KEY, trace_rowid INTEGER NOT NULL, span_id TEXT NOT NULL,
               name TEXT NOT NULL, span_kind TEXT NOT NULL, start_time TEXT NOT NULL,
               attributes JSON NOT NULL, events JSON NOT NULL, status_code TEXT NOT NULL,
               status_message TEXT NOT NULL);
             INSERT INTO project_sessions VALUES (1, 'filed');
             INSERT INTO traces VALUES (1, 't-in-session', 1), (2, 't-alone', NULL);",
        )
        .unwrap();
        let span = |id: i64, trace: i64, kind: &str, session: &str, start: &str| {
            let attrs = serde_json::json!({
                "llm": {
                    "input_messages": [{"message": {"role": "user", "content": "hi"}}],
                    "output_messages": [{"message": {"role": "assistant", "content": "hello"}}],
                    "finish_reason": "stop",
                },
                "session": {"id": session},
            });
            c.execute(
                "INSERT INTO spans VALUES (?1, ?2, ?3, 'ChatCompletion', ?4, ?5, ?6, '[]', 'OK', '')",
                rusqlite::params![id, trace, format!("s{id}"), kind, start, attrs.to_string()],
            )
            .unwrap();
        };
        span(
            1,
            1,
            "LLM",
            "the-span-says-otherwise",
            "2024-04-03 10:00:00",
        );
        span(2, 1, "UNKNOWN", "filed", "2024-04-03 10:00:01");
        span(3, 2, "LLM", "from-the-attribute", "2024-04-03 11:00:00");
    }
    let db = db.to_string_lossy().into_owned();
    let o = run(&["inspect", "--format", "json", &db]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ins: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids: Vec<Vec<&str>> = ins["trace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["requests"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["id"].as_str().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(
        ids,
        [
            vec!["filed/turn-1/step-0", "filed/turn-1/step-1"],
            vec!["from-the-attribute/turn-1/step-0"],
        ]
    );
}

#[test]
fn a_pretty_printed_otlp_document_is_read_with_real_line_numbers() {
    let text = std::fs::read_to_string(root().join(OTLP_GENAI)).unwrap();
    let second: serde_json::Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    let pretty = serde_json::to_string_pretty(&second).unwrap();
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("export.json");
    std::fs::write(&p, &pretty).unwrap();
    let p = p.to_string_lossy().into_owned();
    let (code, doc) = lint_json(&p, &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["files"][0]["format"], "otlp-json");
    let f = &findings(&doc)[0];
    assert_eq!(f["rule"], "truncated-response");
    // The line where the cut span's object opens.
    let line = f["location"]["line"].as_u64().unwrap() as usize;
    let start = f["location"]["byte_start"].as_u64().unwrap() as usize;
    assert_eq!(&pretty[start..start + 1], "{");
    assert_eq!(pretty[..start].matches('\n').count() + 1, line);
    assert!(pretty[start..].contains("6e0c63257de34c92"));
}

#[test]
fn records_outside_any_turn_do_not_shift_turn_numbers() {
    // A span recorded before the first turn, with no turnId (a reconcile
    // report at load, say), must not become "turn 1".
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("traces.db");
    std::fs::copy(root().join(TRACES), &db).unwrap();
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute(
            "INSERT INTO records (id, kind, name, spanId, conversationId, extensionId, timestamp, status, attributes) \
             VALUES ('early', 'span-open', 'reconcile.repair', 'span-early', ?1, 'conversation-store', 1, NULL, '{}')",
            [SEED],
        )
        .unwrap();
    }
    let o = run(&[
        "inspect",
        "--format",
        "json",
        db.to_str().unwrap(),
        "--conversation",
        SEED,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains(&format!("{SEED}/turn-3/step-1")), "{text}");
    assert!(!text.contains(&format!("{SEED}/turn-4/")), "{text}");
}

/// A lone surrogate escape (`\ud83d`, an emoji cut in two) in what a
/// tracing app wrote: Phoenix's Python and an OTLP exporter's reader take
/// it, as U+FFFD. chatfsck read the whole span as "not valid JSON", lost
/// its prompt and its finish reason, and reported a cut answer and a
/// prompt that was never recorded. Each damaged copy now reads as its
/// fixture does: the same findings, every request with all its messages.
#[test]
fn a_lone_surrogate_escape_in_a_trace_is_read_as_its_app_reads_it() {
    let d = tempfile::tempdir().unwrap();
    let requests = |path: &str| -> Vec<(String, usize, serde_json::Value)> {
        let o = run(&["inspect", "--format", "json", path]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        doc["trace"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["requests"].as_array().unwrap())
            .map(|r| {
                (
                    r["id"].as_str().unwrap().to_string(),
                    r["messages"].as_u64().unwrap() as usize,
                    r["finish_reason"].clone(),
                )
            })
            .collect()
    };
    let summaries = |path: &str| -> Vec<String> {
        let (_, doc) = lint_json(path, &[]);
        findings(&doc)
            .iter()
            .map(|f| format!("{} {}", f["rule"], f["summary"]))
            .collect()
    };
    let same = |fixture: &str, damaged: &Path| {
        let (fixture, damaged) = (
            root().join(fixture).to_string_lossy().into_owned(),
            damaged.to_string_lossy().into_owned(),
        );
        assert_eq!(summaries(&damaged), summaries(&fixture), "{damaged}");
        assert_eq!(requests(&damaged), requests(&fixture), "{damaged}");
    };

    // Phoenix: in a prompt's text.
    let db = d.path().join("phoenix.db");
    std::fs::copy(root().join(PHOENIX), &db).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    let attrs: String = c
        .query_row("SELECT attributes FROM spans WHERE id = 4", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(attrs.contains(r#""content":"You are"#));
    let cut = attrs.replacen(r#""content":"You are"#, r#""content":"\ud83dYou are"#, 1);
    c.execute("UPDATE spans SET attributes = ?1 WHERE id = 4", [&cut])
        .unwrap();
    drop(c);
    same(PHOENIX, &db);

    // dispatch's trace: in a step's attributes, which hold its finish
    // reason (JSON.stringify writes a lone surrogate as an escape).
    let db = d.path().join("traces.db");
    std::fs::copy(root().join(TRACES), &db).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    let n = c
        .execute(
            r#"UPDATE records SET attributes = replace(attributes, '"finishReason":"stop"', '"finishReason":"stop","note":"cut \ud83d"') WHERE id = '5dea85f046a74589'"#,
            [],
        )
        .unwrap();
    assert_eq!(n, 1);
    drop(c);
    same(TRACES, &db);

    // OTLP: in a prompt's text, and in the raw answer the finish reason
    // is read from (`output.value`, JSON in a string: the escape is
    // written `\\ud83d` there).
    let text = std::fs::read_to_string(root().join(OTLP_OI)).unwrap();
    let first = text.lines().next().unwrap();
    assert!(first.contains("Summarise the") && first.contains(r#"\"text\":\"v2.3"#));
    let cut = text
        .replacen("Summarise the", r"Summarise \ud83dthe", 1)
        .replacen(r#"\"text\":\"v2.3"#, r#"\"text\":\"\\ud83dv2.3"#, 1);
    let otlp = d.path().join("otlp-openinference.jsonl");
    std::fs::write(&otlp, cut).unwrap();
    same(OTLP_OI, &otlp);
}

/// A Phoenix read builds its requests on the thread pool and waits for
/// them; a directory's files are read on that same pool. A thread that
/// blocked on its builds held a thread they needed: with every thread
/// waiting so, lint of a directory holding two Phoenix databases never
/// ended on two threads, nor one database on one. Each pool size now
/// ends, with the same report.
#[test]
fn a_directory_of_phoenix_databases_is_read_on_any_number_of_threads() {
    let mut reports = Vec::new();
    for threads in ["1", "2", "3"] {
        let o = run_within_a_minute(
            &["lint", "--format", "json", "fixtures/traces/"],
            &[("RAYON_NUM_THREADS", threads)],
            &format!("{threads} thread(s)"),
        );
        assert_eq!(code(&o), 1, "{threads} thread(s): {}", stderr(&o));
        reports.push(stdout(&o));
    }
    assert!(reports.iter().all(|r| r == &reports[0]));
    let doc: serde_json::Value = serde_json::from_str(&reports[0]).unwrap();
    assert!(doc["files"].as_array().unwrap().len() >= 3, "{doc:#}");
}
