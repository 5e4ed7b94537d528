//! A Mistral Vibe session directory, read as 3.0.3 loads it to resume
//! (`mistralai_vibe_local_harness/vibe/_storage.py`,
//! `UnifiedSessionStore._load`, line 2498):
//!
//! - `CURRENT` names the store format (`mistral.vibe.unified-session-store/v1`),
//!   its minor (a minor above [`MINOR`] is refused: "requires a newer
//!   reader"), the `generation` and the `manifest_sha256`;
//! - `generations/<generation>/manifest.json` must hash (SHA-256 of its
//!   bytes without the final newline) to `manifest_sha256`, else the load
//!   fails ("manifest digest mismatch");
//! - the manifest names `checkpoint.json` (and `runtime-state.json`,
//!   `projection-state.json`) with their digests, each checked the same way
//!   (`_read_referenced_document`, line 5022); a checkpoint whose
//!   transcript is pooled names its `chunks`, each `chunks/<sha256>.json`
//!   checked against its name (`_ChunkCache.read`, line 2132): their
//!   concatenation is the Core's `context.messages`, the history the
//!   session resumes with;
//! - the journal segment `journal/<first sequence>.jsonl` is read by
//!   `_read_journal` (line 4598): a last line without a newline is
//!   skipped (a write cut short; the next append truncates it), every
//!   other line must parse as a known record, hash to its
//!   `record_sha256` (`_journal_record_digest`: the SHA-256 of the line
//!   with its `,"record_sha256":"<hex>"` field cut out, line 4630), follow
//!   the sequence and name the digest of the record before it in
//!   `previous_record_sha256`, else the load fails.
//!
//! Any failed check makes the load raise: Vibe does not resume the session.
//! Each is kept here as a [`DigestMismatch`] (or a corrupt record) and the
//! messages are read all the same, so the report shows what is at stake.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::model::{CorruptRecord, DigestMismatch, Loc, Name, Unread};

/// The store format 3.0.3 writes.
pub const STORE_FORMAT: &str = "mistral.vibe.unified-session-store/v1";

/// The highest store minor 3.0.3 reads (`STORE_FORMAT_MINOR`).
pub const MINOR: u64 = 10;

/// The journal record types 3.0.3 knows (`JournalRecordV1`).
const RECORD_TYPES: &[&str] = &[
    "action_intent",
    "action_result",
    "callback_registered",
    "callback_resolved",
    "command_reserved",
    "core_input",
    "process_notification_submitted",
    "process_operation_dispatched",
    "process_state_changed",
    "projection_advanced",
    "projection_delta",
    "receipt_failed",
    "receipt_succeeded",
    "session_relocated",
];

const DIGEST_FIELD: &[u8] = b",\"record_sha256\":\"";

/// What the client does with a session whose digests do not hold.
pub const REFUSES: &str = "Vibe 3.0.3 refuses to load the session (`UnifiedSessionStore._load` raises): it does not resume";

/// One context message of the checkpoint and where it is stored.
pub struct Item {
    pub value: Value,
    pub loc: Loc,
}

pub struct Loaded {
    pub session_id: String,
    pub messages: Vec<Item>,
    /// Journal records the client replays through its Core (not messages).
    pub journal: u64,
    /// The generation's documents read (manifest, checkpoint, states).
    pub documents: u64,
    pub corrupt: Vec<CorruptRecord>,
    pub digests: Vec<DigestMismatch>,
    pub unread: Vec<Unread>,
}

/// Whether a first value is a Vibe `CURRENT` pointer.
pub fn is_pointer(v: &serde_json::Map<String, Value>) -> bool {
    v.get("store_format").and_then(Value::as_str) == Some(STORE_FORMAT)
        && v.get("generation").is_some_and(Value::is_string)
        && v.get("manifest_sha256").is_some_and(Value::is_string)
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

fn at(file: &str, key: impl Into<Arc<str>>) -> Loc {
    Loc::Row {
        table: Name::from(file.to_string()),
        key: key.into(),
        rowid: None,
    }
}

/// `_read_document_body`: the bytes, which must end with a newline, without it.
fn body(path: &Path) -> std::result::Result<Vec<u8>, String> {
    let mut data = std::fs::read(path).map_err(|e| format!("cannot be read ({e})"))?;
    if data.last() != Some(&b'\n') {
        return Err("is not newline terminated".to_string());
    }
    data.pop();
    Ok(data)
}

struct Reader {
    root: PathBuf,
    digests: Vec<DigestMismatch>,
    documents: u64,
}

impl Reader {
    fn mismatch(&mut self, loc: Loc, what: String) {
        self.digests.push(DigestMismatch {
            loc,
            what,
            client: REFUSES.to_string(),
        });
    }

    /// A document named with its digest: its value, whatever the digest
    /// says. `dir` is this reader's; `name` comes from the store: one that
    /// is not a plain file name (or, in `chunks`, a digest) is refused by
    /// the client's validation, and never read here outside the session.
    fn document(&mut self, dir: &str, name: &str, digest: Option<&str>) -> Option<Value> {
        let rel = &format!("{dir}/{name}");
        let hex64 =
            |d: &str| d.len() == 64 && d.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        let plain = !matches!(name, "" | "." | "..")
            && !name.contains(['/', '\\'])
            && (dir != "chunks" || name.strip_suffix(".json").is_some_and(hex64));
        if !plain {
            self.mismatch(
                at(rel, "name"),
                format!("the manifest names `{name}`, which is not a file of the session"),
            );
            return None;
        }
        let b = match body(&self.root.join(rel)) {
            Ok(b) => b,
            Err(why) => {
                self.mismatch(at(rel, "file"), format!("`{rel}` {why}"));
                return None;
            }
        };
        if let Some(d) = digest
            && sha256_hex(&b) != d
        {
            self.mismatch(
                at(rel, "file"),
                format!(
                    "`{rel}` hashes to {} where its reference says {d}",
                    sha256_hex(&b)
                ),
            );
        }
        match serde_json::from_slice::<Value>(&b) {
            Ok(v) => {
                if !rel.starts_with("chunks/") {
                    self.documents += 1;
                }
                // `_read_document_bytes`: the manifest must be canonical.
                if name == "manifest.json"
                    && canonical(&v).is_some_and(|c| c.as_bytes() != b.as_slice())
                {
                    self.mismatch(
                        at(rel, "file"),
                        format!("`{rel}` is not canonical JSON (\"stored JSON document is not canonical\")"),
                    );
                }
                Some(v)
            }
            Err(e) => {
                self.mismatch(at(rel, "file"), format!("`{rel}` is not JSON ({e})"));
                None
            }
        }
    }
}

pub fn load(path: &Path) -> Result<Loaded> {
    let root = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let text = std::fs::read(path).map_err(|e| Error::io(path, &e))?;
    let current: Value = serde_json::from_slice(&text)
        .map_err(|e| Error::input(path, format!("not a Vibe CURRENT pointer ({e})")))?;
    let s = |k: &str| current.get(k).and_then(Value::as_str).unwrap_or("");
    if let Some(minor) = current.get("store_format_minor").and_then(Value::as_u64)
        && minor > MINOR
    {
        return Err(Error::input(
            path,
            format!(
                "a Vibe session store of minor {minor}, written by a newer Vibe: this reader knows up to minor {MINOR} (Vibe 3.0.3)"
            ),
        ));
    }
    // `_read_document_bytes`: CURRENT must be canonical, newline ended.
    let canonical_current = text.last() == Some(&b'\n')
        && canonical(&current).is_none_or(|c| c.as_bytes() == &text[..text.len() - 1]);
    let generation = s("generation").to_string();
    if generation.len() != 16 || !generation.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::input(
            path,
            "a Vibe CURRENT pointer whose generation is not 16 digits",
        ));
    }
    let session_id = s("session_id").to_string();
    let mut r = Reader {
        root,
        digests: Vec::new(),
        documents: 0,
    };
    if !canonical_current {
        r.mismatch(
            at("CURRENT", "file"),
            "`CURRENT` is not canonical JSON ended by a newline (\"stored JSON document is not canonical\")".to_string(),
        );
    }
    let gen_dir = format!("generations/{generation}");
    let manifest = r.document(&gen_dir, "manifest.json", Some(s("manifest_sha256")));
    let mut messages = Vec::new();
    let mut corrupt = Vec::new();
    let mut unread = Vec::new();
    let mut journal = 0;
    if let Some(m) = manifest {
        let cp = m.get("checkpoint").cloned().unwrap_or(Value::Null);
        let name = cp.get("path").and_then(Value::as_str).unwrap_or("");
        let rel = format!("{gen_dir}/{name}");
        let checkpoint = r.document(&gen_dir, name, cp.get("sha256").and_then(Value::as_str));
        match cp.get("chunks").and_then(Value::as_array) {
            Some(chunks) => {
                for d in chunks.iter().filter_map(Value::as_str) {
                    let crel = format!("chunks/{d}.json");
                    if let Some(Value::Array(items)) =
                        r.document("chunks", &format!("{d}.json"), Some(d))
                    {
                        for (k, v) in items.into_iter().enumerate() {
                            messages.push(Item {
                                value: v,
                                loc: at(&crel, format!("item {k}")),
                            });
                        }
                    }
                }
            }
            None => {
                if let Some(Value::Array(items)) = checkpoint
                    .as_ref()
                    .and_then(|c| c.pointer("/context/messages"))
                    .cloned()
                {
                    for (k, v) in items.into_iter().enumerate() {
                        messages.push(Item {
                            value: v,
                            loc: at(&rel, format!("context.messages[{k}]")),
                        });
                    }
                }
            }
        }
        for key in ["runtime_state", "projection_state"] {
            if let Some(d) = m.get(key) {
                let name = d.get("path").and_then(Value::as_str).unwrap_or("");
                r.document(&gen_dir, name, d.get("sha256").and_then(Value::as_str));
                for c in d
                    .get("chunks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    r.document("chunks", &format!("{c}.json"), Some(c));
                }
            }
        }
        let seg = m.get("recovery_journal_segment");
        let jrel = seg
            .and_then(|s| s.get("path"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let first = seg
            .and_then(|s| s.get("first_sequence"))
            .and_then(Value::as_u64)
            .unwrap_or(1);
        let valid_rel = jrel.strip_prefix("journal/").is_some_and(|n| {
            n.strip_suffix(".jsonl")
                .is_some_and(|d| d.len() == 16 && d.bytes().all(|b| b.is_ascii_digit()))
        });
        if !valid_rel {
            r.mismatch(
                at(
                    &format!("{gen_dir}/manifest.json"),
                    "recovery_journal_segment",
                ),
                format!("the manifest names no valid journal segment (`{jrel}`)"),
            );
        } else {
            match std::fs::read(r.root.join(&jrel)) {
                Ok(data) => {
                    journal = read_journal(&jrel, &data, first, &mut r, &mut corrupt, &mut unread);
                }
                Err(e) => r.mismatch(
                    at(&jrel, "file"),
                    format!("the journal segment `{jrel}` cannot be read ({e})"),
                ),
            }
        }
    }
    Ok(Loaded {
        session_id,
        messages,
        journal,
        documents: r.documents,
        corrupt,
        digests: r.digests,
        unread,
    })
}

/// Canonical JSON as the client writes it (`canonical_json`): keys sorted
/// (by UTF-16 code units), no whitespace, UTF-8. `None` for a float, where
/// the client's RFC 8785 form is not what serde writes.
pub fn canonical(v: &Value) -> Option<String> {
    let mut out = String::new();
    fn go(v: &Value, out: &mut String) -> Option<()> {
        match v {
            Value::Null | Value::Bool(_) | Value::String(_) => {
                out.push_str(&serde_json::to_string(v).ok()?);
            }
            Value::Number(n) => {
                if !(n.is_i64() || n.is_u64()) {
                    return None;
                }
                out.push_str(&n.to_string());
            }
            Value::Array(a) => {
                out.push('[');
                for (k, x) in a.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    go(x, out)?;
                }
                out.push(']');
            }
            Value::Object(o) => {
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
                out.push('{');
                for (k, key) in keys.into_iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(key).ok()?);
                    out.push(':');
                    go(&o[key], out)?;
                }
                out.push('}');
            }
        }
        Some(())
    }
    go(v, &mut out)?;
    Some(out)
}

/// `_journal_record_digest`: the digest stored in the line when it is the
/// SHA-256 of the line without its digest field, else `None`.
pub fn record_digest(raw: &[u8]) -> Option<String> {
    let start = raw
        .windows(DIGEST_FIELD.len())
        .rposition(|w| w == DIGEST_FIELD)?;
    let ds = start + DIGEST_FIELD.len();
    let de = ds + 64;
    if raw.get(de) != Some(&b'"') {
        return None;
    }
    let stored = std::str::from_utf8(&raw[ds..de]).ok()?;
    let mut rest = raw[..start].to_vec();
    rest.extend_from_slice(&raw[de + 1..]);
    (sha256_hex(&rest) == stored).then(|| stored.to_string())
}

/// `_read_journal`: every check the client makes, kept as findings.
fn read_journal(
    rel: &str,
    data: &[u8],
    first: u64,
    r: &mut Reader,
    corrupt: &mut Vec<CorruptRecord>,
    unread: &mut Vec<Unread>,
) -> u64 {
    let mut expected = first;
    let mut previous: Option<String> = None;
    let mut count = 0;
    let mut start = 0usize;
    let mut line_no = 0u64;
    while start < data.len() {
        line_no += 1;
        let end = data[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map(|p| start + p);
        let raw = &data[start..end.unwrap_or(data.len())];
        let rloc = at(rel, format!("line {line_no}"));
        let Some(end) = end else {
            corrupt.push(CorruptRecord::new(
                rloc,
                format!("no newline after the last record of `{rel}`"),
                raw,
                true,
            ));
            break;
        };
        start = end + 1;
        let v: Value = match serde_json::from_slice::<Value>(raw) {
            Ok(v) if v.is_object() => v,
            Ok(_) | Err(_) => {
                corrupt.push(CorruptRecord::new(
                    rloc,
                    format!("number {expected} of `{rel}` is not a JSON object: Vibe refuses the journal (\"invalid recovery journal record {expected}\")"),
                    raw,
                    false,
                ));
                expected += 1;
                previous = None;
                continue;
            }
        };
        count += 1;
        let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
        let version = v
            .get("recovery_journal_record_version")
            .and_then(Value::as_u64);
        if !RECORD_TYPES.contains(&ty) || version != Some(1) {
            unread.push(Unread {
                loc: rloc.clone(),
                kind: if ty.is_empty() {
                    "journal record".to_string()
                } else {
                    format!("journal record {ty}")
                },
                what: "a journal record of a type or version Vibe 3.0.3 does not know (a newer Vibe's; 3.0.3 refuses the journal)",
            });
        }
        let stored = v
            .get("record_sha256")
            .and_then(Value::as_str)
            .map(str::to_string);
        let computed = record_digest(raw);
        if computed.is_none() || computed != stored {
            r.mismatch(
                rloc.clone(),
                format!(
                    "journal record {expected} does not hash to its `record_sha256` {}",
                    stored.as_deref().unwrap_or("(none)")
                ),
            );
        }
        let seq = v.get("sequence").and_then(Value::as_u64);
        if seq != Some(expected) {
            r.mismatch(
                rloc.clone(),
                format!(
                    "journal record has sequence {} where {expected} follows (\"recovery journal sequence gap\")",
                    seq.map_or("(none)".to_string(), |s| s.to_string())
                ),
            );
        }
        let prev = v
            .get("previous_record_sha256")
            .and_then(Value::as_str)
            .map(str::to_string);
        if prev != previous {
            r.mismatch(
                rloc,
                format!(
                    "journal record {expected} names {} as the record before it, which is {} (\"recovery journal digest chain mismatch\")",
                    prev.as_deref().unwrap_or("none"),
                    previous.as_deref().unwrap_or("none: it is the first")
                ),
            );
        }
        expected = seq.unwrap_or(expected) + 1;
        previous = stored;
    }
    count
}
