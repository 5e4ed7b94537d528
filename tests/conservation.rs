//! Conservation at scale: every history under fixtures/ (each client's
//! format, healthy and broken) and a generated OpenAI corpus, each also
//! damaged in several ways a crash or a bug damages a file (a torn tail, a
//! lost line, a line written twice, lines swapped, two records glued on one
//! line, a byte of invalid UTF-8, a line overwritten by NUL bytes), is
//! repaired by the built binary, file by file, and the repair contract
//! (tests/contract/mod.rs) is checked on each: nothing lost from the copy
//! and the log together, the copy reads and has no error the input did
//! not have, a second repair is byte-identical, the input never changes,
//! and a failed repair writes nothing.

mod common;
#[path = "contract/mod.rs"]
mod contract;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use contract::{Chatfsck, Outcome, Repaired};

/// The built binary as the contract's driver.
struct Binary;

/// What a Claude Code session's resume sends, from `inspect`'s timeline:
/// the uuid (or `by_line`'s key) of the record that starts each message it loads (a record
/// merged into one of them, a split part or a result, is not listed).
/// `None` for a file that is not read as a Claude Code session.
fn sent_by_resume(
    path: &Path,
    by_line: fn(&[u8]) -> Vec<Option<String>>,
) -> Option<std::collections::HashSet<String>> {
    let o = chatfsck()
        .args(["inspect", "--format", "json"])
        .arg(path)
        .output()
        .ok()?;
    let inspect: serde_json::Value = serde_json::from_slice(&o.stdout).ok()?;
    if inspect["dialect"] != "claude-code" {
        return None;
    }
    let uuids = by_line(&std::fs::read(path).ok()?);
    Some(
        inspect["conversations"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["timeline"].as_array().into_iter().flatten())
            .flat_map(|m| {
                let merged = m["record_lines"].as_array().into_iter().flatten();
                std::iter::once(&m["line"]).chain(merged)
            })
            .filter_map(|l| l.as_u64())
            .filter_map(|l| contract::on_line(&uuids, l).map(str::to_string))
            .collect(),
    )
}

fn chatfsck() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_chatfsck"));
    c.env("NO_COLOR", "1");
    c
}

fn one_line(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).trim().to_string()
}

impl Chatfsck for Binary {
    fn lint(&self, path: &Path) -> Result<BTreeMap<String, usize>, String> {
        let o = chatfsck()
            .args(["lint", "--format", "json"])
            .arg(path)
            .output()
            .map_err(|e| e.to_string())?;
        if !matches!(o.status.code(), Some(0 | 1)) {
            return Err(one_line(&o));
        }
        let doc: serde_json::Value =
            serde_json::from_slice(&o.stdout).map_err(|e| format!("lint JSON: {e}"))?;
        let mut t = BTreeMap::new();
        for f in doc["findings"].as_array().ok_or("no findings array")? {
            if f["severity"] == "error" {
                *t.entry(f["rule"].as_str().unwrap_or("?").to_string())
                    .or_default() += 1;
            }
        }
        Ok(t)
    }

    /// From `inspect`'s timelines ([`sent_by_resume`]).
    fn resumes_as_much(&self, input: &Path, copy: &Path, removed: &contract::Removed) -> bool {
        let sent = |p| sent_by_resume(p, contract::uuids_by_line);
        match (sent(input), sent(copy)) {
            (Some(a), Some(b)) => contract::sends_all(&a, &b, removed),
            _ => false,
        }
    }

    fn brought_back(&self, input: &Path, copy: &Path) -> BTreeMap<String, usize> {
        let Some(sent) = sent_by_resume(input, contract::keys_by_line) else {
            return BTreeMap::new();
        };
        let o = chatfsck()
            .args(["lint", "--format", "json"])
            .arg(copy)
            .output();
        let Some(lint) = o
            .ok()
            .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
        else {
            return BTreeMap::new();
        };
        let after = contract::keys_by_line(&std::fs::read(copy).unwrap_or_default());
        let mut t = BTreeMap::new();
        for f in lint["findings"].as_array().into_iter().flatten() {
            if f["severity"] == "error"
                && let Some(u) = f["location"]["line"]
                    .as_u64()
                    .and_then(|l| contract::on_line(&after, l))
                && !sent.contains(u)
            {
                *t.entry(f["rule"].as_str().unwrap_or("?").to_string())
                    .or_default() += 1;
            }
        }
        t
    }

    fn repair(&self, input: &Path, output: &Path) -> Result<Repaired, String> {
        let log = output.with_extension("repair-log.json");
        let o = chatfsck()
            .args(["repair", "--format", "json"])
            .arg(input)
            .arg("-o")
            .arg(output)
            .arg("--log")
            .arg(&log)
            .output()
            .map_err(|e| e.to_string())?;
        if o.status.code() != Some(0) {
            if log.exists() {
                return Err(format!("a failed repair left its log: {}", one_line(&o)));
            }
            return Err(one_line(&o));
        }
        let doc: serde_json::Value = serde_json::from_slice(
            &std::fs::read(&log).map_err(|e| format!("no repair log: {e}"))?,
        )
        .map_err(|e| format!("the repair log is not JSON: {e}"))?;
        std::fs::remove_file(&log).map_err(|e| e.to_string())?;
        Repaired::from_log(&doc)
    }

    fn never_repaired(&self, input: &Path) -> bool {
        // Such a store is refused before anything is read, in one line
        // that says why (the stores' `Writing::Never` reasons).
        const NEVER: &[&str] = &[
            "are not repaired",
            "does not write a repaired copy",
            "is not rewritten",
            "does not read this format",
        ];
        chatfsck()
            .args(["repair", "--dry-run"])
            .arg(input)
            .output()
            .is_ok_and(|o| {
                o.status.code() == Some(2) && NEVER.iter().any(|n| one_line(&o).contains(n))
            })
    }
}

/// A small deterministic generator (64-bit LCG, Knuth's constants).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

/// The ways a file is damaged, each as a crash or a bug damages it.
const DAMAGE: &[&str] = &[
    "torn-tail",
    "lost-line",
    "line-twice",
    "lines-swapped",
    "glued",
    "invalid-utf8",
    "nul-line",
];

fn damage(body: &[u8], how: &str, rng: &mut Rng) -> Option<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = body.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    if lines.last().is_some_and(Vec::is_empty) {
        lines.pop();
    }
    if lines.len() < 2 {
        return None;
    }
    let n = lines.len();
    let i = rng.below(n - 1);
    let mut joined_tail = true;
    match how {
        "torn-tail" => {
            let last = lines.last_mut()?;
            let cut = 1 + rng.below(last.len().saturating_sub(1).max(1));
            last.truncate(cut);
            joined_tail = false;
        }
        "lost-line" => {
            lines.remove(i);
        }
        "line-twice" => {
            let l = lines[i].clone();
            lines.insert(i, l);
        }
        "lines-swapped" => lines.swap(i, i + 1),
        "glued" => {
            let next = lines.remove(i + 1);
            lines[i].extend(next);
        }
        "invalid-utf8" => {
            let l = &mut lines[i];
            let at = rng.below(l.len());
            l.insert(at, 0xE2);
        }
        "nul-line" => {
            let len = lines[i].len();
            lines[i] = vec![0; len];
        }
        _ => unreachable!(),
    }
    let mut out = lines.join(&b'\n');
    if joined_tail {
        out.push(b'\n');
    }
    Some(out)
}

/// The inputs: (name the case is known by, file name, bytes).
fn corpus(generated: &Path) -> Vec<(String, String, Vec<u8>)> {
    let mut rng = Rng(0x00c0_ffee);
    let mut sources: Vec<(String, PathBuf)> = Vec::new();
    let roots = ["fixtures", "tests/data"].map(|d| common::root().join(d));
    for e in roots
        .iter()
        .flat_map(|r| walkdir::WalkDir::new(r).sort_by_file_name())
    {
        let e = e.unwrap();
        let p = e.path();
        // The real sessions of fixtures/corpus are large (up to 2.6 MB):
        // their damaged copies are the oracle's and tests/claude_code.rs's.
        if e.file_type().is_file()
            && matches!(
                p.extension().and_then(|x| x.to_str()),
                Some("jsonl" | "json")
            )
            && !p.starts_with(common::root().join("fixtures/corpus"))
            // A Mistral Vibe session is a directory read through its
            // `CURRENT`: one of its chunks or documents alone is no
            // history (tests/mistral_vibe.rs damages the sessions whole).
            && !p.starts_with(common::root().join("fixtures/mistral-vibe"))
        {
            let rel = p.strip_prefix(common::root()).unwrap();
            sources.push((rel.display().to_string(), p.to_path_buf()));
        }
    }
    for e in walkdir::WalkDir::new(generated).sort_by_file_name() {
        let e = e.unwrap();
        if e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "jsonl") {
            let rel = e.path().strip_prefix(generated).unwrap();
            sources.push((
                format!("generated/{}", rel.display()),
                e.path().to_path_buf(),
            ));
        }
    }
    let mut out = Vec::new();
    for (label, path) in sources {
        let body = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // Each file as it is, damaged in three of the ways, and twice
        // damaged two or three times over (a crash after a bug).
        for _ in 0..3 {
            let how = DAMAGE[rng.below(DAMAGE.len())];
            if let Some(b) = damage(&body, how, &mut rng) {
                out.push((format!("{label} ({how})"), name.clone(), b));
            }
        }
        for _ in 0..2 {
            let mut b = body.clone();
            let mut hows = Vec::new();
            for _ in 0..2 + rng.below(2) {
                let how = DAMAGE[rng.below(DAMAGE.len())];
                if let Some(d) = damage(&b, how, &mut rng) {
                    b = d;
                    hows.push(how);
                }
            }
            if !hows.is_empty() {
                out.push((format!("{label} ({})", hows.join(", ")), name.clone(), b));
            }
        }
        out.push((label, name, body));
    }
    out
}

#[test]
#[cfg_attr(
    not(has_tool = "python3"),
    ignore = "needs Python 3 (python3 on PATH): it generates the corpus"
)]
fn every_repair_conserves_every_payload() {
    let tmp = tempfile::tempdir().unwrap();
    let generated = tmp.path().join("generated");
    let status = Command::new("python3")
        .arg(common::root().join("bench/gen_corpus.py"))
        .args(["--out"])
        .arg(&generated)
        .args(["--files", "120", "--mb", "3", "--seed", "7"])
        .output()
        .expect("python3 runs bench/gen_corpus.py");
    assert!(
        status.status.success(),
        "gen_corpus.py failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let cases = corpus(&generated);
    assert!(cases.len() > 500, "only {} cases", cases.len());

    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let chunk = cases.len().div_ceil(threads);
    let results: Vec<(String, Result<Outcome, String>)> = std::thread::scope(|s| {
        // Every thread is spawned before any is joined: collecting the
        // handles first is what makes them run at once.
        #[allow(clippy::needless_collect)]
        let handles: Vec<_> = cases
            .chunks(chunk)
            .enumerate()
            .map(|(t, part)| {
                let root = tmp.path().join(format!("t{t}"));
                s.spawn(move || {
                    part.iter()
                        .enumerate()
                        .map(|(k, (label, name, body))| {
                            let case = root.join(k.to_string());
                            std::fs::create_dir_all(case.join("in")).unwrap();
                            let input = case.join("in").join(name);
                            std::fs::write(&input, body).unwrap();
                            let r = contract::check(&Binary, &input, &case.join("out"));
                            // CHATFSCK_KEEP_BROKEN=DIR keeps each input that
                            // broke the contract, or that the repair kept as it
                            // is, to reproduce it.
                            if let (Err(_) | Ok(Outcome::Kept), Some(keep)) =
                                (&r, std::env::var_os("CHATFSCK_KEEP_BROKEN"))
                            {
                                let to = Path::new(&keep).join(format!("t{t}-{k}"));
                                std::fs::create_dir_all(&to).unwrap();
                                std::fs::copy(&input, to.join(name)).unwrap();
                            }
                            std::fs::remove_dir_all(&case).unwrap();
                            (label.clone(), r)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });

    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    let mut edits = 0;
    let mut broken = Vec::new();
    let mut kept = Vec::new();
    for (label, r) in &results {
        match r {
            Ok(Outcome::Repaired(n)) => {
                *tally.entry("repaired").or_default() += 1;
                edits += n;
            }
            Ok(Outcome::NotRepaired) => *tally.entry("never repaired").or_default() += 1,
            Ok(Outcome::Kept) => kept.push(label.as_str()),
            Ok(Outcome::Unreadable) => *tally.entry("unreadable").or_default() += 1,
            Err(why) => broken.push(format!("{label}: {why}")),
        }
    }
    eprintln!("{} cases: {tally:?}, {edits} edits", results.len());
    assert!(
        broken.is_empty(),
        "{} broke the contract:\n{}",
        broken.len(),
        broken.join("\n")
    );
    // The repair keeps an input as it is when any copy it could write is
    // worse: that keeps the contract, and hides the writer defect behind
    // it from the checks above. Damage as a crash or a bug does it must
    // never need it.
    let stale: Vec<&str> = KEPT_OPEN
        .iter()
        .copied()
        .filter(|k| !kept.contains(k))
        .collect();
    assert!(
        stale.is_empty(),
        "KEPT_OPEN lists inputs the repair no longer keeps (take them off):\n{}",
        stale.join("\n")
    );
    kept.retain(|k| !KEPT_OPEN.contains(k));
    assert!(
        kept.is_empty(),
        "{} kept the input as it is (a writer defect):\n{}",
        kept.len(),
        kept.join("\n")
    );
    // The corpus must exercise repair, not only refusals.
    assert!(tally.get("repaired").copied().unwrap_or(0) > results.len() / 2);
    assert!(edits > 200, "only {edits} edits");
}

/// Every input a fuzz target failed on (fuzz/regressions/TARGET/, in the
/// targets' format: the first byte picks the file name) keeps the
/// contract on the built binary: repair_file's inputs the whole contract,
/// lint_file's an answer (findings, or exit 2 with one line), never a
/// crash.
#[test]
fn fuzz_regressions_keep_the_contract() {
    let dir = common::root().join("fuzz/regressions");
    let tmp = tempfile::tempdir().unwrap();
    let mut seen = 0;
    let mut kept = Vec::new();
    for target in ["repair_file", "lint_file"] {
        let Ok(entries) = std::fs::read_dir(dir.join(target)) else {
            continue;
        };
        for e in entries {
            let e = e.unwrap();
            let data = std::fs::read(e.path()).unwrap();
            let Some((name, body)) = contract::named(&data) else {
                continue;
            };
            seen += 1;
            let case = tmp.path().join(format!("{target}-{seen}"));
            std::fs::create_dir_all(case.join("in")).unwrap();
            let input = case.join("in").join(name);
            std::fs::write(&input, body).unwrap();
            let label = e.path().display().to_string();
            if target == "repair_file" {
                match contract::check(&Binary, &input, &case.join("out")) {
                    Err(why) => panic!("{label}: {why}"),
                    Ok(Outcome::Kept) => kept.push(e.file_name().to_string_lossy().into_owned()),
                    Ok(_) => {}
                }
            } else {
                let o = chatfsck()
                    .args(["lint", "--format", "json"])
                    .arg(&input)
                    .output()
                    .unwrap();
                let code = o.status.code();
                assert!(matches!(code, Some(0..=2)), "{label}: exit {code:?}");
                if code == Some(2) {
                    assert_eq!(one_line(&o).lines().count(), 1, "{label}");
                }
            }
        }
    }
    assert!(seen > 0, "no regression inputs under {}", dir.display());
    // The inputs the repair keeps as they are are the ones listed, and
    // only they: one that is repaired now had its defect fixed (take it
    // off the list), one that is kept now has a new defect.
    kept.sort();
    let mut want = GUARDED.to_vec();
    want.sort_unstable();
    assert_eq!(kept, want, "the repair_file regressions kept as they are");
}

/// Mutated fixtures whose every copy the repair could write holds an
/// error the input does not, so the repair keeps the input: open writer
/// defects, and only they (an entry the repair no longer keeps fails the
/// test: take it off). None is open: the chain writers' (pi, Qwen Code,
/// Copilot CLI) and Kimi Code's that were listed here are fixed (issue
/// 40: glued entries and records, a cycle a damaged line hid, a record
/// written twice, a message between a call and its result); a new one
/// here is a new defect.
const KEPT_OPEN: &[&str] = &[];

/// The repair_file regression inputs the repair keeps as they are.
const GUARDED: &[&str] = &[
    // Writer defects: every copy the writer makes holds an error the input
    // does not (fuzz/README.md, "Open defects").
    "anthropic-orphan-tool-result-gained",
    "claude-code-interleaved-message-gained",
    "claude-code-orphan-tool-call-gained-2",
    "claude-code-orphan-tool-call-gained-3",
    "claude-code-orphan-tool-call-gained-4",
    "claude-code-orphan-tool-call-gained-5",
    "claude-code-orphan-tool-result-gained",
    "claude-code-second-repair-not-a-no-op",
    // A stray result glued to another record (the open Qwen Code writer
    // defect of KEPT_OPEN's `stray-result.jsonl (glued)`): its line is not
    // dropped, and a copy that re-links the chain would send the result.
    "qwen-stray-result-glued-to-a-record-not-utf8",
    // The copy would be another store's file: damage had hidden what the
    // input is, and what it is decides what a repair of it means.
    "claude-code-copy-read-as-a-copilot-event-log",
    "claude-code-records-read-by-another-reader-once-repaired",
    "openai-lines-before-a-goose-session",
];
/// A record glued at the start of a torn line is a payload like any
/// record: the repair may edit it (re-link it) and log what it changed,
/// and the rest of the line must be in the log. Dropping a string of the
/// record, or the rest of the line, still breaks the contract.
#[test]
fn a_glued_record_may_be_edited_where_the_log_says() {
    let input = b"{\"parentUuid\":\"gone\",\"text\":\"kept\"}]},\"uuid\":\"torn\"\n";
    let copy = b"{\"parentUuid\":\"prev\",\"text\":\"kept\"}\n";
    let befores = [
        b"\"parentUuid\":\"gone\"".to_vec(),
        b"]},\"uuid\":\"torn\"".to_vec(),
    ];
    assert_eq!(contract::conserved(input, copy, &befores), Ok(()));
    let lost_text = b"{\"parentUuid\":\"prev\"}\n";
    assert!(contract::conserved(input, lost_text, &befores).is_err());
    assert!(contract::conserved(input, copy, &befores[..1]).is_err());
}

/// A session id is any text the file holds, even a path beside the
/// repair's copy (a search wrote `…/repair-out/14d6b…` into one, having
/// seen the contract compare names with its folder `…/repair-out/1`):
/// the contract does not take it for a scratch file.
#[test]
fn a_session_id_that_looks_like_a_scratch_path_is_the_inputs() {
    let d = tempfile::tempdir().unwrap();
    let work = d.path().join("out");
    let id = "4c2ddfdc-b619-4525-8d03-1950fb1b0257";
    let text =
        std::fs::read_to_string(common::root().join("fixtures/claude-code/healthy/linear.jsonl"))
            .unwrap()
            .replace(id, &format!("{}/14d6b", work.display()));
    // A torn last line: the repair drops it and logs the conversation.
    let mut cut = text.trim_end().len() - 20;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let input = d.path().join(format!("{id}.jsonl"));
    std::fs::write(&input, &text[..cut]).unwrap();
    let outcome = contract::check(&Binary, &input, &work);
    assert!(outcome.is_ok(), "{:?}", outcome.err());
}
