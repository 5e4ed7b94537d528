//! The repair contract, proved on every fixture and on a generated corpus
//! with injected faults:
//! 1. lint on the copy reports nothing repair claims to fix;
//! 2. a second repair changes nothing;
//! 3. every payload of the input is in the copy or in the repair log;
//! 4. the input is byte-for-byte unchanged;
//! 5. a repair killed mid-write leaves no output file.

mod common;
use common::*;

use std::collections::BTreeSet;
use std::path::Path;

/// Every payload string of a JSONL history, read independently of chatfsck:
/// texts, thinking, tool-call arguments and ids, tool results.
fn payloads(text: &str) -> (BTreeSet<String>, Vec<String>) {
    let mut set = BTreeSet::new();
    let mut unparsed = Vec::new();
    fn walk(v: &serde_json::Value, set: &mut BTreeSet<String>) {
        match v {
            serde_json::Value::String(s) if !s.is_empty() => {
                set.insert(s.clone());
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, set)),
            serde_json::Value::Object(o) => {
                for (k, x) in o {
                    // Keys and fixed vocabulary are not payloads.
                    if !matches!(k.as_str(), "role" | "type") {
                        walk(x, set);
                    }
                }
            }
            _ => {}
        }
    }
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<serde_json::Value>(line) {
            Ok(v) => walk(&v, &mut set),
            Err(_) => unparsed.push(line.to_string()),
        }
    }
    (set, unparsed)
}

struct Repaired {
    out: std::path::PathBuf,
    log: serde_json::Value,
    _dir: tempfile::TempDir,
}

fn repair(input: &str, extra: &[&str]) -> Repaired {
    let dir = tempfile::tempdir().unwrap();
    let out = dir
        .path()
        .join("repaired")
        .with_extension(Path::new(input).extension().unwrap());
    let log = dir.path().join("log.json");
    let mut args = vec![
        "repair",
        input,
        "-o",
        out.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert_eq!(code(&o), 0, "repair {input}: {}{}", stdout(&o), stderr(&o));
    let log = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    Repaired {
        out,
        log,
        _dir: dir,
    }
}

fn fixed_rules(log: &serde_json::Value) -> BTreeSet<String> {
    log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["rule"].as_str().unwrap().to_string())
        .collect()
}

/// Proofs 1–4 for one JSONL input.
fn prove(input: &str, extra: &[&str]) -> Repaired {
    let before = fingerprint(&root().join(input)).or_else(|| fingerprint(Path::new(input)));
    let r = repair(input, extra);
    // 4. the input is untouched
    assert_eq!(
        before,
        fingerprint(&root().join(input)).or_else(|| fingerprint(Path::new(input))),
        "{input} changed"
    );
    // 1. nothing repair claims to fix is left
    let fixed = fixed_rules(&r.log);
    let (_, doc) = lint_json(r.out.to_str().unwrap(), &[]);
    for f in doc["findings"].as_array().unwrap() {
        assert!(
            !fixed.contains(f["rule"].as_str().unwrap()),
            "{input}: repaired copy still has {f:#}"
        );
    }
    // 2. a second repair changes nothing
    let again = repair(r.out.to_str().unwrap(), extra);
    assert_eq!(
        again.log["edits"].as_array().unwrap().len(),
        0,
        "{input}: second repair edits {:#}",
        again.log
    );
    assert_eq!(
        std::fs::read(&r.out).unwrap(),
        std::fs::read(&again.out).unwrap(),
        "{input}: second repair changed bytes"
    );
    // 3. every payload is in the copy or in the log
    let input_text = String::from_utf8_lossy(
        &std::fs::read(root().join(input))
            .or_else(|_| std::fs::read(input))
            .unwrap(),
    )
    .into_owned();
    let out_text = std::fs::read_to_string(&r.out).unwrap();
    let (inp, unparsed) = payloads(&input_text);
    let (outp, _) = payloads(&out_text);
    let logged: Vec<String> = r.log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["before"].as_str().map(String::from))
        .collect();
    let (logp, _) = payloads(&logged.join("\n"));
    for p in &inp {
        assert!(
            outp.contains(p) || logp.contains(p),
            "{input}: payload lost: {p:?}"
        );
    }
    for line in unparsed {
        assert!(
            logged.iter().any(|l| l == &line) || out_text.contains(&line),
            "{input}: corrupt line lost: {line}"
        );
    }
    r
}

fn fixable_fixtures() -> Vec<String> {
    fixtures()
        .into_iter()
        .filter(|f| f.ends_with(".jsonl"))
        .filter(|f| {
            let (_, doc) = lint_json(f, &[]);
            doc["summary"]["fixable"].as_u64().unwrap() > 0
        })
        .collect()
}

#[test]
fn every_repairable_fixture_repairs_and_the_proofs_hold() {
    let list = fixable_fixtures();
    assert!(list.len() >= 15, "{list:?}");
    for f in &list {
        for policy in [&[][..], &["--orphan-calls", "drop"][..]] {
            prove(f, policy);
        }
    }
}

#[test]
fn untouched_lines_are_byte_identical_meta_lines_included() {
    let input = "fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl";
    let r = prove(input, &[]);
    let a = std::fs::read_to_string(root().join(input)).unwrap();
    let b = std::fs::read_to_string(&r.out).unwrap();
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    assert_eq!(lb.len(), la.len() + 1);
    // The placeholder goes right after the call (line 24), everything else is as it was.
    assert_eq!(&lb[..24], &la[..24]);
    assert_eq!(&lb[25..], &la[24..]);
    let inserted: serde_json::Value = serde_json::from_str(lb[24]).unwrap();
    assert_eq!(inserted["role"], "tool");
    assert_eq!(inserted["tool_call_id"], "Shell:206");
    assert!(
        inserted["content"]
            .as_str()
            .unwrap()
            .starts_with("[chatfsck repair]")
    );
    let edit = &r.log["edits"][0];
    assert_eq!(edit["synthesized"], true);
    assert_eq!(edit["rule"], "orphan-tool-call");
}

#[test]
fn policies_drop_and_no_synthesize() {
    let input = "fixtures/orphan-tool-call/openai-parallel-one-missing.jsonl";
    let r = prove(input, &["--orphan-calls", "drop"]);
    assert!(
        r.log["edits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["synthesized"] == false)
    );
    let out = std::fs::read_to_string(&r.out).unwrap();
    assert!(!out.contains("[chatfsck repair]"));
    // --no-synthesize: nothing is invented, the orphan is reported as left.
    let r = repair(input, &["--no-synthesize"]);
    assert_eq!(r.log["edits"].as_array().unwrap().len(), 0);
    assert_eq!(r.log["left"][0]["rule"], "orphan-tool-call");
    assert_eq!(
        std::fs::read(&r.out).unwrap(),
        std::fs::read(root().join(input)).unwrap()
    );
    let r = repair(input, &["--orphan-calls", "report"]);
    assert_eq!(
        r.log["left"][0]["reason"],
        "orphan-calls policy is `report`"
    );
}

#[test]
fn dry_run_writes_nothing_and_outputs_are_never_clobbered() {
    let d = tempfile::tempdir().unwrap();
    let input = "fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl";
    let out = d.path().join("out.jsonl");
    let o = run(&["repair", input, "-o", out.to_str().unwrap(), "--dry-run"]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("would apply 1 edit"), "{}", stdout(&o));
    assert!(!out.exists());
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    // An existing output is refused without --force.
    std::fs::write(&out, "keep me").unwrap();
    let o = run(&["repair", input, "-o", out.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("already exists; pass --force"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep me");
    assert_eq!(
        code(&run(&[
            "repair",
            input,
            "-o",
            out.to_str().unwrap(),
            "--force"
        ])),
        0
    );
    assert_ne!(std::fs::read_to_string(&out).unwrap(), "keep me");
    // The input is never the output, not even with --force.
    let copy = d.path().join("in.jsonl");
    std::fs::copy(root().join(input), &copy).unwrap();
    let before = fingerprint(&copy);
    for extra in [&[][..], &["--force"][..]] {
        let mut args = vec![
            "repair",
            copy.to_str().unwrap(),
            "-o",
            copy.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert_eq!(code(&o), 2);
        assert!(
            stderr(&o).contains("refusing to write the repaired copy over the input"),
            "{}",
            stderr(&o)
        );
    }
    assert_eq!(before, fingerprint(&copy));
    // No output path at all.
    let o = run(&["repair", input]);
    assert_eq!(code(&o), 2);
}

/// A loader that starts a new message only where msgIdx changes (dispatch's
/// load()), and one that also splits on role changes. Returns the roles.
fn loaders(db: &Path, conv: &str) -> (Vec<String>, Vec<String>) {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let mut st = c
        .prepare("SELECT value FROM kv WHERE namespace = 'conversation-store' AND key LIKE ?1 ORDER BY key")
        .unwrap();
    let rows: Vec<serde_json::Value> = st
        .query_map([format!("conv:{conv}:chunk:%")], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|v| serde_json::from_str(&v.unwrap()).unwrap())
        .collect();
    let mut by_idx: Vec<String> = Vec::new();
    let mut by_role: Vec<String> = Vec::new();
    let (mut last_idx, mut last_role) = (None, None);
    for r in &rows {
        let (idx, role) = (
            r["msgIdx"].as_i64(),
            r["role"].as_str().unwrap().to_string(),
        );
        if idx != last_idx {
            by_idx.push(role.clone());
        }
        if idx != last_idx || Some(&role) != last_role.as_ref() {
            by_role.push(role.clone());
        }
        last_idx = idx;
        last_role = Some(role);
    }
    (by_idx, by_role)
}

#[test]
fn dispatch_store_repairs_for_both_loaders_and_keeps_everything_else() {
    let d = copy_wal_to_tmp(&["fixtures/dispatch/wal/dispatch.db"]);
    let before = dir_fingerprints(d.path());
    let input = d.path().join("dispatch.db");
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("repaired.db");
    let log = out_dir.path().join("log.json");
    let o = run(&[
        "repair",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(before, dir_fingerprints(d.path()), "input files changed");
    // Only the repaired file: no -wal, -shm or temporary left beside it.
    let mut names: Vec<String> = std::fs::read_dir(out_dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec!["log.json", "repaired.db"]);
    let seed = "1a997b08-09c2-412c-b296-48703c8aaf58";
    let expected = [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ];
    let (by_idx, by_role) = loaders(&out, seed);
    assert_eq!(by_idx, expected);
    assert_eq!(by_role, expected);
    // Before the repair the index loader merged seq 1–11 into one user message.
    let (orig_idx, _) = loaders(&root().join("fixtures/dispatch/seed-000.db"), seed);
    assert_eq!(orig_idx, ["user", "tool", "tool", "assistant"]);
    // Everything but msgIdx of the seed's chunks is identical, row by row.
    let dump = |p: &Path| -> Vec<(String, String, String)> {
        let c =
            rusqlite::Connection::open_with_flags(p, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        let mut st = c
            .prepare("SELECT namespace, key, value FROM kv ORDER BY namespace, key")
            .unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let (a, b) = (
        dump(&root().join("fixtures/dispatch/seed-000.db")),
        dump(&out),
    );
    assert_eq!(a.len(), b.len());
    let mut changed = 0;
    for (x, y) in a.iter().zip(&b) {
        assert_eq!((&x.0, &x.1), (&y.0, &y.1));
        if x.2 != y.2 {
            changed += 1;
            assert!(x.1.starts_with(&format!("conv:{seed}:chunk:")), "{}", x.1);
            let (mut vx, mut vy): (serde_json::Value, serde_json::Value) = (
                serde_json::from_str(&x.2).unwrap(),
                serde_json::from_str(&y.2).unwrap(),
            );
            vx["msgIdx"] = 0.into();
            vy["msgIdx"] = 0.into();
            assert_eq!(vx, vy, "only msgIdx may change");
        }
    }
    assert_eq!(changed, 13);
    let c = rusqlite::Connection::open(&out).unwrap();
    let check: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let tables: i64 = c
        .query_row("SELECT count(*) FROM _migrations", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tables, 2);
    drop(c);
    // The log has every replaced value verbatim.
    let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    let edits = log["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 13);
    assert!(
        edits
            .iter()
            .all(|e| e["before"].is_string() && e["after"].is_string())
    );
    // Lint: the collision is gone; a second repair changes nothing.
    let (_, doc) = lint_json(out.to_str().unwrap(), &[]);
    assert!(
        rule_locs(&doc)
            .iter()
            .all(|r| !r.starts_with("msgidx-collision") && !r.starts_with("mixed-role-message"))
    );
    let out2 = out_dir.path().join("again.db");
    assert_eq!(
        code(&run(&[
            "repair",
            out.to_str().unwrap(),
            "-o",
            out2.to_str().unwrap()
        ])),
        0
    );
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&out2).unwrap());
}

#[test]
fn diff_of_original_and_repaired_shows_exactly_the_edits() {
    let input = "fixtures/corrupt-record/kimi-torn-tool-result.jsonl";
    let r = prove(input, &[]);
    let o = run(&["diff", "--format", "json", input, r.out.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &d["conversations"][0];
    let changes = c["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{d:#}");
    assert_eq!(changes[0]["change"], "added");
    assert_eq!(changes[0]["role"], "tool");
    assert_eq!(c["corrupt_removed"].as_array().unwrap().len(), 1);
    // Equal histories: exit 0.
    assert_eq!(code(&run(&["diff", input, input])), 0);
    // The store: every renumbered message shows its index change, nothing else.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.db");
    run(&[
        "repair",
        "fixtures/dispatch/seed-000.db",
        "-o",
        out.to_str().unwrap(),
    ]);
    let o = run(&[
        "diff",
        "--format",
        "json",
        "fixtures/dispatch/seed-000.db",
        out.to_str().unwrap(),
    ]);
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let convs = d["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 2);
    let seed = convs
        .iter()
        .find(|c| c["a_id"] == "1a997b08-09c2-412c-b296-48703c8aaf58")
        .unwrap();
    let changes = seed["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 8, "{seed:#}");
    assert!(changes.iter().all(|c| {
        c["change"] == "changed"
            && c["details"][0]
                .as_str()
                .unwrap()
                .starts_with("stored index")
    }));
    let healthy = convs
        .iter()
        .find(|c| c["a_id"] != "1a997b08-09c2-412c-b296-48703c8aaf58")
        .unwrap();
    assert!(healthy["changes"].as_array().unwrap().is_empty());
    // Markdown pastes into an issue.
    let o = run(&[
        "diff",
        "--format",
        "markdown",
        input,
        r.out.to_str().unwrap(),
    ]);
    assert!(
        stdout(&o).contains("| added | added   message 6 (line 17, \\`tool\\`)"),
        "{}",
        stdout(&o)
    );
}

/// A generated corpus: healthy OpenAI conversations with one injected
/// fault each; every fault is found, repaired, and the proofs hold.
#[test]
fn generated_corpus_with_injected_faults() {
    let dir = tempfile::tempdir().unwrap();
    let mut seed: u64 = 0x9e3779b97f4a7c15;
    let mut rnd = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let faults = [
        "orphan-call",
        "stray-result",
        "bad-args",
        "torn-tail",
        "interleaved",
        "orphan-tail",
    ];
    for i in 0..36 {
        let fault = faults[i % faults.len()];
        let mut lines: Vec<String> =
            vec![r#"{"role":"system","content":"You are a coding agent."}"#.into()];
        let turns = 2 + rnd(4);
        let fault_turn = rnd(turns);
        for t in 0..turns {
            lines.push(format!(
                r#"{{"role":"user","content":"step {t} of task {i}: look at src/m{t}.rs"}}"#
            ));
            let id = format!("call_{i}_{t}");
            let args = if fault == "bad-args" && t == fault_turn {
                r#"{\"path\": \"src/ma"#.to_string()
            } else {
                format!(r#"{{\"path\": \"src/m{t}.rs\"}}"#)
            };
            lines.push(format!(r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"{id}","type":"function","function":{{"name":"read_file","arguments":"{args}"}}}}]}}"#));
            let result = format!(
                r#"{{"role":"tool","tool_call_id":"{id}","content":"fn m{t}() {{ println!(\"{t}\"); }}"}}"#
            );
            match fault {
                "orphan-call" if t == fault_turn => {}
                "interleaved" if t == fault_turn => {
                    lines.push(r#"{"role":"user","content":"You attempted to help the user; reflect on the failure."}"#.into());
                    lines.push(result);
                }
                _ => lines.push(result),
            }
            if fault == "stray-result" && t == fault_turn {
                lines.push(format!(r#"{{"role":"tool","tool_call_id":"call_ghost_{i}","content":"orphaned output {i}"}}"#));
            }
            lines.push(format!(
                r#"{{"role":"assistant","content":"done with step {t}"}}"#
            ));
        }
        if fault == "orphan-tail" {
            lines.push(format!(r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"call_tail_{i}","type":"function","function":{{"name":"bash","arguments":"{{\"cmd\": \"ls\"}}"}}}}]}}"#));
        }
        let mut text = lines.join("\n") + "\n";
        if fault == "torn-tail" {
            text.push_str(r#"{"role":"assistant","content":"I will now rea"#);
        }
        let p = dir.path().join(format!("conv-{i:03}.jsonl"));
        std::fs::write(&p, text).unwrap();
        let (code, doc) = lint_json(p.to_str().unwrap(), &[]);
        assert_eq!(code, 1, "{fault}: {doc:#}");
        let expected = match fault {
            "orphan-call" | "orphan-tail" => "orphan-tool-call",
            "stray-result" => "orphan-tool-result",
            "bad-args" => "invalid-tool-arguments",
            "torn-tail" => "corrupt-record",
            _ => "interleaved-message",
        };
        let rules: Vec<&str> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rule"].as_str().unwrap())
            .collect();
        assert_eq!(rules, vec![expected], "{fault} in {}", p.display());
        for policy in [&[][..], &["--orphan-calls", "drop"][..]] {
            let r = prove(p.to_str().unwrap(), policy);
            let (c, _) = lint_json(r.out.to_str().unwrap(), &[]);
            assert_eq!(c, 0, "{fault}: the repaired copy must lint clean");
        }
    }
}

#[test]
fn a_repair_killed_mid_write_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.jsonl");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&input).unwrap());
        let body = "x".repeat(2000);
        for i in 0..150_000 {
            writeln!(f, r#"{{"role":"user","content":"{i} {body}"}}"#).unwrap();
            writeln!(f, r#"{{"role":"assistant","content":"ok {i}"}}"#).unwrap();
        }
        writeln!(f, r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"c1","type":"function","function":{{"name":"ls","arguments":"{{}}"}}}}]}}"#).unwrap();
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("out.jsonl");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("chatfsck"))
        .args([
            "repair",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the temporary output exists, then kill the process.
    let start = std::time::Instant::now();
    loop {
        let tmp_exists = std::fs::read_dir(out_dir.path()).unwrap().any(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".chatfsck-tmp")
        });
        if tmp_exists || start.elapsed() > std::time::Duration::from_secs(20) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the repair finished before it could be killed"
    );
    assert!(!out.exists(), "a killed repair left a partial output file");
}

#[test]
fn json_documents_repair_in_place_of_their_array() {
    let input = "fixtures/orphan-tool-call/openai-array.json";
    let before = fingerprint(&root().join(input));
    let r = repair(input, &[]);
    assert_eq!(before, fingerprint(&root().join(input)));
    let (c, _) = lint_json(r.out.to_str().unwrap(), &[]);
    assert_eq!(c, 0, "the repaired document lints clean");
    // Every original element is in the copy, byte for byte.
    let a = std::fs::read_to_string(root().join(input)).unwrap();
    let b = std::fs::read_to_string(&r.out).unwrap();
    let elements = |t: &str| -> Vec<String> {
        let v: Vec<Box<serde_json::value::RawValue>> = serde_json::from_str(t).unwrap();
        v.into_iter().map(|e| e.get().to_string()).collect()
    };
    let (ea, eb) = (elements(&a), elements(&b));
    assert_eq!(eb.len(), ea.len() + 1);
    for e in &ea {
        assert!(eb.contains(e), "element lost or changed: {e}");
    }
    let again = repair(r.out.to_str().unwrap(), &[]);
    assert_eq!(again.log["edits"].as_array().unwrap().len(), 0);
    assert_eq!(
        std::fs::read(&r.out).unwrap(),
        std::fs::read(&again.out).unwrap()
    );
    // A request body keeps everything around `messages`.
    let d = tempfile::tempdir().unwrap();
    let body = d.path().join("request.json");
    std::fs::write(
        &body,
        r#"{"model":"gpt-5","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{\"p\": \"x"}}]},{"role":"user","content":"and?"}],"stream":true}"#,
    )
    .unwrap();
    let r = repair(body.to_str().unwrap(), &[]);
    let out: serde_json::Value = serde_json::from_slice(&std::fs::read(&r.out).unwrap()).unwrap();
    assert_eq!(out["model"], "gpt-5");
    assert_eq!(out["stream"], true);
    assert_eq!(out["messages"].as_array().unwrap().len(), 4);
    assert_eq!(
        out["messages"][1]["tool_calls"][0]["function"]["arguments"],
        "{}"
    );
    assert_eq!(out["messages"][2]["role"], "tool");
    assert_eq!(lint_json(r.out.to_str().unwrap(), &[]).0, 0);
}

/// A trace is evidence of what was sent to the provider: `repair` refuses
/// it with one line and exit 2, before anything is written. (The WAL trace
/// used to be "repaired" into a 4 KB copy of its main file alone, without
/// the rows that live in its -wal.)
#[test]
fn traces_are_never_repaired() {
    let d = tempfile::tempdir().unwrap();
    for (i, trace) in [
        "fixtures/dispatch/wal/traces.db",
        "fixtures/traces/phoenix.db",
        "fixtures/traces/otlp-genai.jsonl",
        "fixtures/traces/otlp-openinference.jsonl",
    ]
    .into_iter()
    .enumerate()
    {
        let out = d.path().join(format!("copy-{i}"));
        let log = d.path().join(format!("log-{i}.json"));
        let o = run(&[
            "repair",
            trace,
            "-o",
            out.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 2, "{trace}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{trace}: {err}");
        assert!(
            err.contains(trace) && err.contains("traces are evidence of what was sent"),
            "{trace}: {err}"
        );
        assert!(
            !out.exists() && !log.exists(),
            "{trace}: something was written"
        );
    }
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
}

/// A record the reader takes but serde_json does not: a lone surrogate
/// escape in a field the reader skips. A line that goes whole is dropped
/// without being read; an edit inside it is left, with why, and the rest
/// of the repair goes on. Both once failed the whole repair ("line N
/// cannot be edited", exit 2; fuzz/regressions/repair_file/
/// kimi-stray-result-holding-a-lone-surrogate).
#[test]
fn a_line_serde_json_cannot_read_is_dropped_or_left_never_fatal() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("context.jsonl");
    let lines = [
        r#"{"role": "_checkpoint", "id": 0}"#,
        r#"{"role":"user","content":"q"}"#,
        r#"{"role":"assistant","content":"a","x":"\ud800 y","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\": "}}]}"#,
        r#"{"role":"tool","tool_call_id":"c1","content":"ok"}"#,
        r#"{"role":"tool","tool_call_id":"gone","content":"stray","x":"\ud800 z"}"#,
        r#"{"role":"assistant","content":"done"}"#,
    ];
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let (out, log) = repair_logged(&input, d.path());
    assert_eq!(edit_lines(&log), ["remove-result@5"], "{log:#}");
    let left = log["left"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{log:#}");
    assert_eq!(left[0]["rule"], "invalid-tool-arguments", "{log:#}");
    assert!(
        left[0]["reason"]
            .as_str()
            .unwrap()
            .contains("line 3 cannot be rewritten"),
        "{log:#}"
    );
    let copy = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        copy,
        [lines[0], lines[1], lines[2], lines[3], lines[5]].join("\n") + "\n"
    );
}

#[test]
fn a_lone_surrogate_escape_is_replaced_in_place_and_its_record_kept() {
    // Python's `json` reads the prompt; the old reading called the line
    // "not valid JSON" and the repair dropped the user's prompt.
    for (input, line) in [
        ("fixtures/lone-surrogate/kimi-user-prompt.jsonl", 3),
        (
            "fixtures/lone-surrogate/openai-tool-output-surrogateescape.jsonl",
            4,
        ),
    ] {
        let r = prove(input, &[]);
        assert_eq!(
            edit_lines(&r.log),
            [format!("replace-surrogates@{line}")],
            "{:#}",
            r.log
        );
        let before = std::fs::read_to_string(root().join(input)).unwrap();
        let after = std::fs::read_to_string(&r.out).unwrap();
        let mut want = before.clone();
        for esc in ["\\ud83d", "\\udc80", "\\udcff"] {
            want = want.replace(esc, "\\ufffd");
        }
        assert_ne!(before, want);
        assert_eq!(after, want, "only the escapes change");
        let (code, doc) = lint_json(r.out.to_str().unwrap(), &["--fail-on", "info"]);
        assert_eq!(code, 0, "{doc:#}");
    }
}

#[test]
fn a_member_named_twice_is_read_as_python_reads_it() {
    // Python's `json` and `JSON.parse` keep the last value of a member
    // named twice; lint called such a line "not a message record" and
    // the repair dropped it, though the app reads it.
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("history.jsonl");
    let lines = [
        r#"{"role":"user","content":"lost to the app","content":"list the files"}"#,
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}],"tool_calls":[{"id":"c2","type":"function","function":{"name":"ls","arguments":"{}"}}]}"#,
        r#"{"role":"tool","tool_call_id":"c2","content":"a.txt"}"#,
        r#"{"role":"assistant","content":"One file: a.txt."}"#,
    ];
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let (code, doc) = lint_json(input.to_str().unwrap(), &["--fail-on", "info"]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["summary"]["messages"], 4, "{doc:#}");
    let o = run(&["inspect", input.to_str().unwrap(), "--format", "json"]);
    let text = stdout(&o);
    assert!(
        text.contains("list the files") && !text.contains("lost to the app"),
        "{text}"
    );
    assert!(text.contains("c2") && !text.contains("\"c1\""), "{text}");
}
