//! The repair contract as a property of one input file (DESIGN.md,
//! "repair"): a repair that succeeds writes a copy that chatfsck reads,
//! that has no more errors of any rule than the input had, that a second
//! repair leaves byte for byte as it is, and that keeps (with the repair
//! log) every payload of the input; a repair that fails writes nothing and
//! the input never changes.
//!
//! One definition, two drivers: tests/conservation.rs runs the built binary
//! over a generated corpus with injected faults, and the `repair_file` fuzz
//! target (fuzz/) calls the library in process.

pub mod scan;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// Names an input is saved as: the first byte of a fuzz input picks one (fuzz/, and the
/// regression inputs tests/conservation.rs replays),
/// so one target reaches every dialect a name selects (Gemini CLI
/// recordings, Cline's task files, Codex rollouts, Copilot CLI events,
/// OTLP traces) as well as the ones content alone selects.
pub const NAMES: &[&str] = &[
    "session.jsonl",
    "history.json",
    "session-2025-06-01T10-00-0b1c2d3e.json",
    "api_conversation_history.json",
    "ui_messages.json",
    "rollout-2025-06-01T10-00-00-0198a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b.jsonl",
    "events.jsonl",
    "0b1c2d3e-4f50-4617-a8b9-cadbecfd0e1f.jsonl",
    "traces.jsonl",
    "conversation.json",
];

/// Split a fuzz input into the name it is saved under and its bytes.
pub fn named(data: &[u8]) -> Option<(&'static str, &[u8])> {
    let (&pick, body) = data.split_first()?;
    Some((NAMES[pick as usize % NAMES.len()], body))
}

/// What a repair reported.
pub struct Repaired {
    /// How many edits it made.
    pub edits: usize,
    /// The exact bytes of each edited record before the edit (the log's
    /// `before`, or `before_base64` decoded).
    pub befores: Vec<Vec<u8>>,
    /// Each member an edit rewrote in place (a re-linked `parentUuid`):
    /// its bytes before and after, as the log's `before` and `after` hold
    /// them.
    pub rewrites: Vec<(Vec<u8>, Vec<u8>)>,
    /// Whether the repair kept the input as it is, a copy of it being
    /// worse (the log's `kept_input`).
    pub kept: bool,
    /// The conversation each edit and each finding left names.
    pub conversations: Vec<String>,
}

impl Repaired {
    /// What a repair's log (`repair --log`, the report's JSON) says.
    pub fn from_log(doc: &serde_json::Value) -> Result<Repaired, String> {
        use base64::Engine as _;
        let edits = doc["edits"].as_array().ok_or("a log without edits")?;
        let mut befores = Vec::new();
        let mut rewrites = Vec::new();
        for e in edits {
            let (before, after) = (e["before"].as_str(), e["after"].as_str());
            // A member rewritten in place: the log holds the member alone.
            if let (Some(b), Some(a)) = (before, after)
                && b.starts_with('"')
            {
                rewrites.push((b.as_bytes().to_vec(), a.as_bytes().to_vec()));
            }
            if let Some(b64) = e["before_base64"].as_str() {
                befores.push(
                    base64::engine::general_purpose::STANDARD
                        .decode(b64)
                        .map_err(|e| format!("the log's before_base64 is not base64: {e}"))?,
                );
            } else if let Some(b) = before {
                befores.push(b.as_bytes().to_vec());
            }
        }
        let kept = doc["kept_input"].is_string();
        let left = doc["left"].as_array().map_or(&[][..], |l| l.as_slice());
        let conversations = edits
            .iter()
            .chain(left)
            .filter_map(|e| e["conversation"].as_str().map(str::to_string))
            .collect();
        Ok(Repaired {
            edits: edits.len(),
            befores,
            rewrites,
            kept,
            conversations,
        })
    }
}

/// The two commands the contract is about.
pub trait Chatfsck {
    /// Error-severity findings per rule, or why the input was not read.
    /// Warnings are not counted: a repair that brings records back into
    /// the history the client resumes (a re-linked Claude Code chain)
    /// brings their own state with them, such as an assistant message
    /// that kept only its thinking.
    fn lint(&self, path: &Path) -> Result<BTreeMap<String, usize>, String>;
    /// Of the copy's error findings, per rule, those on records the
    /// input's resume did not send (a Claude Code chain the repair mended
    /// brings back history that may hold errors of its own: they were in
    /// the input, out of the client's reach). A driver that cannot tell
    /// gives none, and every error counts.
    fn brought_back(&self, _input: &Path, _copy: &Path) -> BTreeMap<String, usize> {
        BTreeMap::new()
    }
    /// Whether the copy's resume sends every record the input's resume
    /// sends (Claude Code), but those the repair removed (`removed`). A
    /// driver that cannot tell answers no.
    fn resumes_as_much(&self, _input: &Path, _copy: &Path, _removed: &Removed) -> bool {
        false
    }
    /// Repair `input` into `output`.
    fn repair(&self, input: &Path, output: &Path) -> Result<Repaired, String>;
    /// Whether `input`'s store is one chatfsck never repairs (traces,
    /// report-only stores): a refusal is then the right answer.
    fn never_repaired(&self, input: &Path) -> bool;
}

/// The records a repair took out of the copy, by uuid: those it removed
/// (their bytes in the log), and those it gave a new uuid (old to new).
#[derive(Default)]
pub struct Removed {
    pub whole: HashSet<String>,
    pub renamed: std::collections::HashMap<String, String>,
}

impl Removed {
    /// From a repair's log: each `before` that is a record, and each
    /// `uuid` member rewritten in place.
    pub fn of(report: &Repaired) -> Removed {
        let uuid_member = |b: &[u8]| -> Option<String> {
            let v: serde_json::Value =
                serde_json::from_str(&format!("{{{}}}", String::from_utf8_lossy(b))).ok()?;
            v.get("uuid")?.as_str().map(str::to_string)
        };
        Removed {
            whole: report
                .befores
                .iter()
                .flat_map(|b| uuids_by_line(b))
                .flatten()
                .collect(),
            renamed: report
                .rewrites
                .iter()
                .filter_map(|(b, a)| Some((uuid_member(b)?, uuid_member(a)?)))
                .collect(),
        }
    }
}

/// Whether every record `input`'s resume sends is sent by `copy`'s (a
/// record the repair gave a new uuid, under that uuid), or was removed by
/// the repair.
pub fn sends_all(input: &HashSet<String>, copy: &HashSet<String>, removed: &Removed) -> bool {
    input.iter().all(|u| {
        copy.contains(u)
            || removed.whole.contains(u)
            || removed.renamed.get(u).is_some_and(|n| copy.contains(n))
    })
}

/// How one input fared.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// chatfsck does not read the input; the repair refused it too and
    /// wrote nothing.
    Unreadable,
    /// The store is never repaired.
    NotRepaired,
    /// Repaired, with this many edits, and every property held.
    Repaired(usize),
    /// The copy is the input as it is: any copy the writer made was worse
    /// (a writer defect the repair's own checks caught), and every
    /// property held.
    Kept,
}

/// Check the contract on `input`, writing copies into `work` (created,
/// and emptied by the caller). `Err` names the property that failed.
pub fn check(c: &dyn Chatfsck, input: &Path, work: &Path) -> Result<Outcome, String> {
    let name = input.file_name().ok_or("an input without a file name")?;
    // The copies keep the input's name: detection reads names too.
    let (first, second) = (work.join("1"), work.join("2"));
    for d in [&first, &second] {
        std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
    }
    let (copy, again) = (first.join(name), second.join(name));
    let original = std::fs::read(input).map_err(|e| e.to_string())?;
    let unchanged = || -> Result<(), String> {
        match std::fs::read(input) {
            Ok(b) if b == original => Ok(()),
            _ => Err("the input changed".into()),
        }
    };

    let Ok(before) = c.lint(input) else {
        let r = c.repair(input, &copy);
        unchanged()?;
        return match r {
            Ok(_) => Err("repair succeeded on an input lint cannot read".into()),
            Err(_) if copy.exists() => Err("a failed repair left an output file".into()),
            Err(_) => Ok(Outcome::Unreadable),
        };
    };
    let repaired = c.repair(input, &copy);
    unchanged()?;
    let report = match repaired {
        Ok(r) => r,
        Err(e) if copy.exists() => {
            return Err(format!("a failed repair left an output file ({e})"));
        }
        Err(_) if c.never_repaired(input) => return Ok(Outcome::NotRepaired),
        Err(e) => return Err(format!("repair failed on an input lint reads: {e}")),
    };
    // The log names the input's conversations, never a file of the
    // repair's own beside the copy (a later pass reads the copy under a
    // scratch name, gone once the repair ends): a path under the copy's
    // folder, compared component by component (as text, `…/1` was a
    // prefix of a session id `…/14d6b…`). A name the input itself holds
    // is the input's: a session id can be any text, and a search once
    // wrote the scratch folder's path into one.
    if let Some(c) = report
        .conversations
        .iter()
        .find(|c| Path::new(c).starts_with(&first) && !contains(&original, c.as_bytes()))
    {
        return Err(format!("the log names a scratch file of the repair: {c}"));
    }
    let copied = std::fs::read(&copy).map_err(|e| format!("no repaired copy: {e}"))?;
    if report.edits == 0 && copied != original {
        return Err("a repair without edits changed the bytes".into());
    }
    let after = c
        .lint(&copy)
        .map_err(|e| format!("the repaired copy is unreadable: {e}"))?;
    let mut back: Option<BTreeMap<String, usize>> = None;
    let mut keeps: Option<bool> = None;
    for (rule, n) in &after {
        let was = before.get(rule).copied().unwrap_or(0);
        if *n > was {
            let back = back.get_or_insert_with(|| c.brought_back(input, &copy));
            let revealed = back.get(rule).copied().unwrap_or(0);
            // An error that says what a resume leaves out costs nothing
            // when the copy's resume sends all the input's did: what it
            // leaves out, the input's left out too (a stray last record
            // removed can unmask a stale leaf the input had).
            // Rules whose errors say which history a Claude Code resume
            // leaves out: judged by what the resume sends.
            if chatfsck::repair::RESUME_RULES.contains(&rule.as_str())
                && *keeps
                    .get_or_insert_with(|| c.resumes_as_much(input, &copy, &Removed::of(&report)))
            {
                continue;
            }
            if n - revealed.min(*n) > was {
                return Err(format!(
                    "the copy has {n} `{rule}` finding(s) ({revealed} on history the input's resume did not send), the input had {was}"
                ));
            }
        }
    }
    let second = c
        .repair(&copy, &again)
        .map_err(|e| format!("a second repair failed: {e}"))?;
    if second.edits != 0 {
        return Err(format!("a second repair made {} edit(s)", second.edits));
    }
    let twice = std::fs::read(&again).map_err(|e| e.to_string())?;
    if twice != copied {
        return Err("a second repair changed the bytes".into());
    }
    conserved_with(&original, &copied, &report.befores, &report.rewrites)?;
    Ok(if report.kept {
        Outcome::Kept
    } else {
        Outcome::Repaired(report.edits)
    })
}

/// The `uuid` of the record on each line (1-based: index 0 is line 1).
pub fn uuids_by_line(bytes: &[u8]) -> Vec<Option<String>> {
    bytes
        .split(|&b| b == b'\n')
        .map(|l| {
            // Read as the client reads a line that is not UTF-8: each
            // invalid sequence as U+FFFD.
            let v: serde_json::Value = serde_json::from_str(&String::from_utf8_lossy(l)).ok()?;
            v["uuid"].as_str().map(str::to_string)
        })
        .collect()
}

/// A key for the record on each line, to find it again in a repaired
/// copy: its uuid, or, for a record without one (a damaged key), its JSON
/// without `parentUuid` (a repair may re-link it).
pub fn keys_by_line(bytes: &[u8]) -> Vec<Option<String>> {
    bytes
        .split(|&b| b == b'\n')
        .map(|l| {
            let mut v: serde_json::Value =
                serde_json::from_str(&String::from_utf8_lossy(l)).ok()?;
            if let Some(u) = v["uuid"].as_str() {
                return Some(format!("uuid {u}"));
            }
            v.as_object_mut()?.remove("parentUuid");
            Some(format!("record {v}"))
        })
        .collect()
}

/// The value on `line` (1-based) of `uuids_by_line`'s or `keys_by_line`'s answer.
pub fn on_line(uuids: &[Option<String>], line: u64) -> Option<&str> {
    let i = usize::try_from(line).ok()?.checked_sub(1)?;
    uuids.get(i)?.as_deref()
}

/// Every payload of the input (each string and object key of every JSON
/// record, and each line that is not JSON, byte for byte but for the
/// whitespace between the pieces a reader split it into) is in the copy or
/// in the log's `before` of an edit; a line of glued records followed by a
/// piece that is not one may be split between the two.
pub fn conserved(input: &[u8], copy: &[u8], befores: &[Vec<u8>]) -> Result<(), String> {
    conserved_with(input, copy, befores, &[])
}

/// [`conserved`], knowing the members the repair rewrote in place.
pub fn conserved_with(
    input: &[u8],
    copy: &[u8],
    befores: &[Vec<u8>],
    rewrites: &[(Vec<u8>, Vec<u8>)],
) -> Result<(), String> {
    let mut have = Payloads::default();
    have.add_document(copy);
    for b in befores {
        have.add_document(b);
    }
    let mut want = Payloads::default();
    want.add_document(input);
    // One searcher per needle, not one per needle and haystack: building
    // them was most of this check's time under the fuzzer.
    for s in &want.strings {
        if have.strings.contains(s) {
            continue;
        }
        let f = memchr::memmem::Finder::new(s.as_bytes());
        if !have.raw.iter().any(|r| f.find(r).is_some()) {
            return Err(format!("payload lost: {:?}", clip(s)));
        }
    }
    // A line a reader splits into several unreadable pieces is logged
    // piece by piece: the ASCII whitespace between the pieces is the one
    // thing not kept.
    let squeeze = |b: &[u8]| -> Vec<u8> {
        b.iter()
            .copied()
            .filter(|c| !c.is_ascii_whitespace())
            .collect()
    };
    let logged: Vec<u8> = befores.iter().flat_map(|b| squeeze(b)).collect();
    let copied = squeeze(copy);
    // Records glued on one line, then a piece that is not one: the records
    // go to the copy on lines of their own, the rest to the log.
    // Squeezed once: a cut after its m-th kept byte splits it in two.
    // The copy holding the first m bytes holds every shorter start, and
    // the log holding the bytes from m on holds every later end: so the
    // cuts that work are those between the smallest m whose end is logged
    // and the largest whose start is copied, each found by a binary search
    // over the cuts after a `}`.
    let split = |r: &[u8]| {
        let sq = squeeze(r);
        let cuts: Vec<usize> = (1..=sq.len()).filter(|&m| sq[m - 1] == b'}').collect();
        let copied_to = cuts.partition_point(|&m| contains(&copied, &sq[..m]));
        let logged_from = cuts.partition_point(|&m| !contains(&logged, &sq[m..]));
        logged_from < copied_to
    };
    // A record the reader takes as is (serde_json refuses it, a lone
    // surrogate escape say) whose members the repair rewrote (a re-linked
    // `parentUuid`, mended escapes): each member's old bytes are in the
    // log, and a line of the copy holds the rest of the record, in order,
    // around the new values; or the log holds all of it, in pieces.
    let rewritten = |r: &[u8]| {
        let mut cuts: Vec<(usize, usize)> = befores
            .iter()
            .filter(|b| !b.is_empty())
            .flat_map(|b| memchr::memmem::find_iter(r, b).map(move |at| (at, at + b.len())))
            .collect();
        if cuts.is_empty() {
            return false;
        }
        cuts.sort();
        // The pieces between the cuts (overlapping cuts as one).
        let mut pieces: Vec<&[u8]> = Vec::new();
        let mut from = 0;
        for (s, e) in cuts {
            if s >= from {
                pieces.push(&r[from..s]);
                from = e;
            } else {
                from = from.max(e);
            }
        }
        pieces.push(&r[from..]);
        // Every byte of it is in the log, piece by piece (a record the
        // repair mended, then the torn rest of its line it dropped).
        if pieces.iter().all(|p| p.iter().all(u8::is_ascii_whitespace)) {
            return true;
        }
        copy.split(|&c| c == b'\n').any(|l| {
            let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
            if !l.starts_with(first) || !l.ends_with(last) || l.len() < first.len() + last.len() {
                return false;
            }
            let mut rest = &l[first.len()..l.len() - last.len()];
            pieces[1..pieces.len() - 1]
                .iter()
                .all(|p| match memchr::memmem::find(rest, p) {
                    Some(at) => {
                        rest = &rest[at + p.len()..];
                        true
                    }
                    None => false,
                })
        })
    };
    // A record one pass rewrote in place (re-linked) and a later pass
    // removed or rewrote whole: the log or the copy holds it with the new
    // members. Passes can rewrite one member again (a parent re-linked,
    // then put under an inserted result), and several records can share
    // an old member with different new ones: every sequence of rewrites
    // is tried, a few deep.
    // Records with bytes that are not UTF-8 are also looked for as read,
    // each invalid sequence as U+FFFD (the copy and the log read so once,
    // if ever needed).
    let read = std::cell::OnceCell::new();
    let kept = |now: &[u8]| {
        let (copy_read, befores_read) = read.get_or_init(|| {
            let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned().into_bytes();
            (
                lossy(copy),
                befores.iter().map(|b| lossy(b)).collect::<Vec<_>>(),
            )
        });
        contains(copy, now)
            || contains(copy_read, now)
            || befores.iter().chain(befores_read).any(|b| b == now)
    };
    let rewritten_then_moved = |r: &[u8]| {
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        let mut frontier = vec![r.to_vec()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for text in &frontier {
                for (b, a) in rewrites {
                    let Some(at) = memchr::memmem::find(text, b) else {
                        continue;
                    };
                    let mut now = text.clone();
                    now.splice(at..at + b.len(), a.iter().copied());
                    if kept(&now) {
                        return true;
                    }
                    if seen.len() < 256 && seen.insert(now.clone()) {
                        next.push(now);
                    }
                }
            }
            frontier = next;
        }
        false
    };
    for r in &want.raw {
        let f = memchr::memmem::Finder::new(r);
        if f.find(copy).is_none()
            && !have.raw.iter().any(|h| f.find(h).is_some())
            && !contains(&logged, &squeeze(r))
            && !split(r)
            && !rewritten(r)
            && !rewritten_then_moved(r)
        {
            return Err(format!(
                "record lost: {:?}",
                clip(&String::from_utf8_lossy(r))
            ));
        }
    }
    Ok(())
}

fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

/// The payloads of some bytes: strings of the JSON they hold, and the
/// records that are not JSON.
#[derive(Default)]
struct Payloads {
    strings: HashSet<String>,
    raw: Vec<Vec<u8>>,
}

impl Payloads {
    /// A whole JSON document, or else one record per line.
    fn add_document(&mut self, bytes: &[u8]) {
        let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
            self.add_value(&v);
            return;
        }
        // A member of a record the log keeps (`"parentUuid":"…"`): its
        // string as the record held it, escapes decoded.
        if body.first() == Some(&b'"') {
            let member = format!("{{{}}}", String::from_utf8_lossy(body));
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&member) {
                self.add_value(&v);
            }
        }
        for line in body.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<serde_json::Value>(line) {
                Ok(v) => self.add_value(&v),
                // A record holding bytes that are not UTF-8 is read as the
                // clients read it, each invalid sequence as U+FFFD: its
                // strings are payloads, and a repair may edit it.
                Err(_) if std::str::from_utf8(line).is_err() => {
                    match serde_json::from_str::<serde_json::Value>(&String::from_utf8_lossy(line))
                    {
                        Ok(v) => self.add_value(&v),
                        // A piece of such a record (a field the log
                        // keeps) holds its strings as read the same way.
                        Err(_) => {
                            self.raw.push(line.to_vec());
                            self.raw
                                .push(String::from_utf8_lossy(line).into_owned().into_bytes());
                        }
                    }
                }
                Err(_) => self.add_torn_line(line),
            }
        }
    }

    /// A line that is not one JSON value: the records glued at its start
    /// are payloads like any record's (a repair may edit them, a
    /// `parentUuid` say, and log what it changed); the rest is kept whole.
    /// A line whose first piece is not JSON is kept whole.
    fn add_torn_line(&mut self, line: &[u8]) {
        let mut values =
            serde_json::Deserializer::from_slice(line).into_iter::<serde_json::Value>();
        let mut glued = Vec::new();
        while let Some(Ok(v)) = values.next() {
            glued.push(v);
        }
        let rest = &line[values.byte_offset()..];
        if glued.is_empty() || !glued.iter().all(|v| v.is_object()) {
            self.raw.push(line.to_vec());
            return;
        }
        for v in &glued {
            self.add_value(v);
        }
        if !rest.iter().all(u8::is_ascii_whitespace) {
            self.raw.push(rest.to_vec());
        }
    }

    fn add_value(&mut self, v: &serde_json::Value) {
        use serde_json::Value;
        match v {
            Value::String(s) => {
                self.strings.insert(s.clone());
                // A string that holds JSON (tool arguments, nested records)
                // may be re-encoded by a repair: its own strings count too.
                if let Ok(inner @ (Value::Object(_) | Value::Array(_))) =
                    serde_json::from_str::<Value>(s)
                {
                    self.add_value(&inner);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| self.add_value(x)),
            Value::Object(o) => {
                for (k, x) in o {
                    self.strings.insert(k.clone());
                    self.add_value(x);
                }
            }
            _ => {}
        }
    }
}
