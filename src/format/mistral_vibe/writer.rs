//! A repaired copy of a Mistral Vibe session, published as Vibe 3.0.3
//! publishes a generation (`_storage.py`, `write_generation`, line 2191):
//! the transcript is cut into chunks again by the client's rule (a chunk
//! is sealed once its items pass 64 KiB, `_CHUNK_TARGET_BYTES`), each
//! written as `chunks/<sha256>.json`; a new generation directory holds the
//! manifest naming them, with the checkpoint and state documents copied
//! byte for byte (their digests do not change); `CURRENT` names the new
//! manifest by its digest. The journal segment is the generation's own
//! and is kept as it is. Every item the edits do not touch keeps its
//! bytes, so every digest is the one Vibe computes.
//!
//! The edits:
//! - a stray tool result (a tool message whose call no assistant message
//!   makes): its item removed, kept verbatim in the log;
//! - an unanswered call: a tool message after the call's message (and the
//!   results of its other calls) with what Vibe's Core gives a call it
//!   interrupted, a `failure` outcome whose text is `Interrupted by the
//!   runtime before completion.` (`_native.abi3.so` of 3.0.3). With
//!   `--orphan-calls=drop` it is left: a Vibe assistant message is one
//!   item, and dropping part of it is not written. In a recoverable
//!   generation (stopped while the call ran) it is left too: the runtime
//!   recovers the call from the journal itself.
//!
//! Nothing is written for a session whose digests do not hold (a copy
//! would either keep them broken or hide the edit that broke them), nor
//! for a generation whose transcript is not pooled in chunks (stores
//! before minor 4).
//!
//! Into a copy (`-o <dir>/CURRENT`), the session directory is copied
//! first; in place, the new generation and chunks are added beside the
//! old ones, which stay as they are, and `CURRENT` is replaced (with its
//! backup) by the engine.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::load::{canonical, sha256_hex};
use crate::config::{OrphanCalls as OrphanPolicy, RepairPolicy as Policy};
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::model::{Conversation, Loc, PartKind};
use crate::write::{Edit, Left, Log, Planned, Target, Writer, out_err};

/// What Vibe's Core gives a tool call it interrupted (a failure result).
pub const INTERRUPTED: &str = "Interrupted by the runtime before completion.";

/// `_CHUNK_TARGET_BYTES`.
const CHUNK_TARGET: usize = 64 * 1024;

pub struct VibeWriter {
    input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    policy: Policy,
    remove: BTreeSet<usize>,
    /// Items to put after the item at this index.
    insert_after: BTreeMap<usize, Vec<Value>>,
    planned: bool,
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(VibeWriter {
        input: t.input.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
        policy: *t.policy,
        remove: BTreeSet::new(),
        insert_after: BTreeMap::new(),
        planned: false,
    }))
}

/// The items of a canonical JSON array, each as its bytes.
fn split_items(body: &[u8]) -> Option<Vec<&[u8]>> {
    if body.first() != Some(&b'[') || body.last() != Some(&b']') {
        return None;
    }
    let inner = &body[1..body.len() - 1];
    let mut items = Vec::new();
    let (mut depth, mut in_str, mut esc, mut start) = (0i64, false, false, 0usize);
    for (i, &b) in inner.iter().enumerate() {
        if in_str {
            match (esc, b) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth -= 1,
            b',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !inner.is_empty() {
        items.push(&inner[start..]);
    }
    Some(items)
}

fn item_index(loc: &Loc) -> Option<usize> {
    match loc {
        Loc::Row { key, .. } => key.strip_prefix("item ")?.parse().ok(),
        Loc::Line { .. } => None,
    }
}

/// The session as the writer rewrites it: the raw bytes of every item of
/// its transcript, in order, and the documents around them.
struct Session {
    dir: PathBuf,
    current: Value,
    manifest: Value,
    generation: String,
    items: Vec<Vec<u8>>,
}

fn read_session(input: &Path) -> std::result::Result<Session, String> {
    let dir = match input.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let read = |rel: &str| -> std::result::Result<Vec<u8>, String> {
        let mut b = std::fs::read(dir.join(rel)).map_err(|e| format!("`{rel}`: {e}"))?;
        if b.pop() != Some(b'\n') {
            return Err(format!("`{rel}` is not newline terminated"));
        }
        Ok(b)
    };
    let current: Value = serde_json::from_slice(&read("CURRENT")?).map_err(|e| e.to_string())?;
    let generation = current
        .get("generation")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let manifest: Value =
        serde_json::from_slice(&read(&format!("generations/{generation}/manifest.json"))?)
            .map_err(|e| e.to_string())?;
    let Some(chunks) = manifest
        .pointer("/checkpoint/chunks")
        .and_then(Value::as_array)
    else {
        return Err(
            "its transcript is inside `checkpoint.json` (a store before minor 4), which is not rewritten"
                .into(),
        );
    };
    let mut items = Vec::new();
    for d in chunks.iter().filter_map(Value::as_str) {
        let body = read(&format!("chunks/{d}.json"))?;
        let parts = split_items(&body).ok_or_else(|| format!("chunk {d} is not an array"))?;
        items.extend(parts.into_iter().map(<[u8]>::to_vec));
    }
    Ok(Session {
        dir,
        current,
        manifest,
        generation,
        items,
    })
}

impl Writer for VibeWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        self.planned = true;
        if planned.is_empty() {
            return Ok(());
        }
        let why = if !conv.digest_mismatches.is_empty() {
            Some("the session's digests do not hold: a copy would keep them broken or hide the edit that broke them".to_string())
        } else {
            match read_session(&self.input) {
                Ok(s) if s.items.len() == conv.messages.len() => None,
                Ok(_) => Some("the transcript changed while it was read".to_string()),
                Err(e) => Some(format!("not written: {e}")),
            }
        };
        let recoverable = read_session(&self.input).is_ok_and(|s| {
            s.manifest.get("execution_state").and_then(Value::as_str) == Some("recoverable")
        });
        if let Some(why) = why {
            for p in planned {
                log.left.push(Left::of(p.finding, why.clone()));
            }
            return Ok(());
        }
        for p in planned {
            let f = p.finding;
            for action in &p.fix.actions {
                let part = |message: usize, part: usize| {
                    conv.messages.get(message).and_then(|m| m.parts.get(part))
                };
                match action {
                    Action::RemoveResult { message, part: k } => {
                        let Some(p) = part(*message, *k) else {
                            continue;
                        };
                        let PartKind::ToolResult { call_id, .. } = &p.kind else {
                            continue;
                        };
                        if item_index(&p.loc) != Some(*message) || !self.remove.insert(*message) {
                            continue;
                        }
                        let mut e = Edit::of(f, action.name(), format!(
                                "removed the tool message for `{call_id}` (transcript item {message}), which answers no call (Mistral's API refuses it)"
                            ), p.loc.clone()).with_ids(vec![call_id.clone()]);
                        let raw = read_session(&self.input)
                            .ok()
                            .and_then(|s| s.items.get(*message).cloned())
                            .unwrap_or_default();
                        e.before = Some(String::from_utf8_lossy(&raw).into_owned());
                        log.edits.push(e);
                    }
                    Action::AnswerCall { message, part: k } => {
                        let Some(p) = part(*message, *k) else {
                            continue;
                        };
                        let PartKind::ToolCall { id, name, .. } = &p.kind else {
                            continue;
                        };
                        if recoverable {
                            log.left.push(Left::of(
                                f,
                                "the generation is recoverable: Vibe recovers the call from its journal on resume (runs it again or fails it), and a result written here would answer it twice",
                            ));
                            continue;
                        }
                        match self.policy.orphan_calls {
                            OrphanPolicy::Report => {
                                log.left
                                    .push(Left::of(f, "orphan-calls policy is `report`"));
                            }
                            OrphanPolicy::Drop => log.left.push(Left::of(
                                f,
                                "a Vibe assistant message is one transcript item: dropping one of its calls is not written",
                            )),
                            OrphanPolicy::Placeholder => {
                                // After the call's message and the tool
                                // messages that follow it.
                                let mut after = *message;
                                while conv
                                    .messages
                                    .get(after + 1)
                                    .is_some_and(|m| m.role == crate::model::Role::Tool)
                                {
                                    after += 1;
                                }
                                let item = json!({"message": {
                                    "role": "tool",
                                    "tool_call_id": id,
                                    "name": name,
                                    "outcome": "failure",
                                    "content": [{"type": "text", "text": INTERRUPTED}],
                                }});
                                let mut e = Edit::of(f, action.name(), format!(
                                        "answered the call `{id}` (`{name}`) with the failure result Vibe's Core gives a call it interrupted (`{INTERRUPTED}`), a tool message after transcript item {after}"
                                    ), p.loc.clone()).with_ids(vec![id.clone()]);
                                e.synthesized = true;
                                e.after = canonical(&item);
                                log.edits.push(e);
                                self.insert_after.entry(after).or_default().push(item);
                            }
                        }
                    }
                    _ => log
                        .left
                        .push(Left::of(f, "not written in Mistral Vibe sessions")),
                }
            }
        }
        Ok(())
    }

    fn write(self: Box<Self>, _log: &mut Log) -> Result<()> {
        let Some(out) = &self.output else {
            return Ok(());
        };
        if !self.planned {
            return Err(Error::not_history(&self.input, "holds no conversation"));
        }
        let out_dir = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let in_dir = match self.input.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // The session's files first: a session that cannot be rewritten
        // is still copied whole (its `CURRENT` as it is, by the caller).
        let in_place = crate::write::atomic::same_file(&out_dir, &in_dir);
        if !in_place {
            copy_tree(&in_dir, &out_dir, self.force)?;
        }
        let s = read_session(&self.input).map_err(|e| Error::input(&self.input, e))?;
        if self.remove.is_empty() && self.insert_after.is_empty() {
            // Nothing to change: the copy is the session as it is, and in
            // place nothing is added beside it.
            let bytes = std::fs::read(&self.input).map_err(|e| Error::io(&self.input, &e))?;
            return crate::write::atomic::write_bytes(out, &bytes, self.force);
        }
        // The transcript, edited.
        let mut items: Vec<Vec<u8>> = Vec::new();
        for (k, raw) in s.items.iter().enumerate() {
            if !self.remove.contains(&k) {
                items.push(raw.clone());
            }
            for v in self.insert_after.get(&k).into_iter().flatten() {
                let text = canonical(v)
                    .ok_or_else(|| out_err(out, "a new transcript item is not canonical"))?;
                items.push(text.into_bytes());
            }
        }
        // Chunks, sealed as `_chunk_transcript` seals them.
        let mut digests = Vec::new();
        let (mut pending, mut size): (Vec<&[u8]>, usize) = (Vec::new(), 0);
        let mut seal = |pending: &mut Vec<&[u8]>| -> Result<()> {
            let mut body = b"[".to_vec();
            body.extend_from_slice(&pending.join(&b","[..]));
            body.push(b']');
            let d = sha256_hex(&body);
            let path = out_dir.join("chunks").join(format!("{d}.json"));
            if !path.exists() {
                body.push(b'\n');
                write_new(&path, &body)?;
            }
            digests.push(Value::String(d));
            pending.clear();
            Ok(())
        };
        for raw in &items {
            pending.push(raw);
            size += raw.len() + 1;
            if size >= CHUNK_TARGET {
                seal(&mut pending)?;
                size = 0;
            }
        }
        if !pending.is_empty() {
            seal(&mut pending)?;
        }
        // The new generation: `_next_generation`.
        let sequence = s
            .manifest
            .get("snapshot_sequence")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let newest = std::fs::read_dir(out_dir.join("generations"))
            .map_err(|e| Error::io(out_dir.join("generations"), &e))?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                (n.len() == 16 && n.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| n.parse::<u64>().ok())
                    .flatten()
            })
            .max();
        let generation = format!("{:016}", sequence.max(newest.map_or(0, |n| n + 1)));
        let new_dir = out_dir.join("generations").join(&generation);
        std::fs::create_dir_all(&new_dir).map_err(|e| out_err(&new_dir, e))?;
        let old_dir = s.dir.join("generations").join(&s.generation);
        for key in ["checkpoint", "runtime_state", "projection_state"] {
            if let Some(name) = s
                .manifest
                .pointer(&format!("/{key}/path"))
                .and_then(Value::as_str)
            {
                let bytes = std::fs::read(old_dir.join(name))
                    .map_err(|e| Error::io(old_dir.join(name), &e))?;
                write_new(&new_dir.join(name), &bytes)?;
            }
        }
        let mut manifest = s.manifest.clone();
        manifest["generation"] = Value::String(generation.clone());
        manifest["checkpoint"]["chunks"] = Value::Array(digests);
        let manifest = canonical(&manifest)
            .ok_or_else(|| out_err(out, "the manifest holds a number that is not an integer"))?;
        write_new(
            &new_dir.join("manifest.json"),
            format!("{manifest}\n").as_bytes(),
        )?;
        let mut current = s.current.clone();
        current["generation"] = Value::String(generation);
        current["manifest_sha256"] = Value::String(sha256_hex(manifest.as_bytes()));
        let current = canonical(&current)
            .ok_or_else(|| out_err(out, "CURRENT holds a number that is not an integer"))?;
        crate::write::atomic::write_bytes(out, format!("{current}\n").as_bytes(), self.force)
    }
}

/// A file of the new generation: written whole under a temporary name,
/// then renamed.
fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| out_err(dir, e))?;
    }
    crate::write::atomic::write_bytes(path, bytes, true)
}

/// Copy the session directory (all but `CURRENT`, which is written last,
/// and what earlier in-place repairs left) into `to`.
fn copy_tree(from: &Path, to: &Path, force: bool) -> Result<()> {
    for e in walkdir::WalkDir::new(from).sort_by_file_name() {
        let e = e.map_err(|e| Error::input(from, e.to_string()))?;
        let rel = e.path().strip_prefix(from).unwrap_or(e.path());
        let name = rel.to_string_lossy();
        if rel.as_os_str().is_empty() || name == "CURRENT" || name.contains(".chatfsck-") {
            continue;
        }
        let dst = to.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dst).map_err(|e| out_err(&dst, e))?;
        } else if e.file_type().is_file() {
            if dst.exists() && !force {
                let same = std::fs::read(&dst).ok() == std::fs::read(e.path()).ok();
                if !same {
                    return Err(out_err(
                        &dst,
                        "exists and differs from the session's file (use --force to overwrite)",
                    ));
                }
                continue;
            }
            crate::write::atomic::copy(e.path(), &dst, true)?;
        }
    }
    Ok(())
}
