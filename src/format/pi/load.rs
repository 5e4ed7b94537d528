//! pi's session loader, as 0.73.1 runs it on resume
//! (`dist/core/session-manager.js`): which entries it keeps, the v1 → v2
//! → v3 migrations, and the walk from the leaf it resumes. Shared by the
//! reader (entries → messages) and the writer (which rewrites entries).
//!
//! - `loadEntriesFromFile`: the file is read as UTF-8 text (invalid bytes
//!   become U+FFFD), split on `\n`; a line `JSON.parse` refuses is skipped
//!   without a word. When the first entry left is not a `session` header
//!   with a string `id`, the file counts as empty: pi starts a new session
//!   and **rewrites the file** with only its new header.
//! - `migrateToCurrentVersion`: a header without `version` is v1 (linear:
//!   each entry gets a fresh 8-hex `id` and the previous entry's id as
//!   `parentId`; a compaction's `firstKeptEntryIndex` becomes
//!   `firstKeptEntryId`), v2 renames the message role `hookMessage` to
//!   `custom`; pi then rewrites the file as v3.
//! - `_buildIndex`: every entry but `session` ones goes into an id map (a
//!   later entry with the same id replaces an earlier one); the leaf is the
//!   **last entry of the file**.
//! - `buildSessionContext`: walk `parentId` from the leaf to the root; a
//!   `parentId` no entry has ends the walk there (the entries before it
//!   are silently left out); a cycle never ends (pi hangs).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use crate::error::Result;
use crate::format::records::chain::{self, Line};
use crate::model::{CorruptRecord, Loc, Unread};
use crate::source::Limits;

/// The session version pi 0.73.1 writes (`CURRENT_SESSION_VERSION`).
pub const CURRENT_VERSION: i64 = 3;

/// The entry types pi 0.73.1 writes.
pub const KNOWN_TYPES: &[&str] = &[
    "message",
    "thinking_level_change",
    "model_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
];

/// One entry the loader kept (the header excluded): its value as pi holds
/// it after the migrations, its `id` (assigned by the v1 migration for a
/// v1 file) and its `parentId`.
pub type Entry = chain::Node;

/// How the walk from the leaf ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// At an entry whose `parentId` is null: the root.
    Root,
    /// At entry `at`, whose `parentId` names no entry of the file.
    Cut { at: usize, missing: String },
    /// At entry `at`, whose `parentId` leads back onto the walk: pi 0.73.1
    /// never ends this walk (it hangs on resume).
    Cycle { at: usize },
}

/// What the loader leaves of a session file.
#[derive(Debug)]
pub struct Loaded {
    /// The header's `id`, when the first entry is a valid header.
    pub session_id: Option<String>,
    /// The header's version (1 when it names none).
    pub version: i64,
    /// The header is not what pi takes for one: it starts the file over.
    pub no_header: bool,
    pub entries: Vec<Entry>,
    pub corrupt: Vec<CorruptRecord>,
    pub unread: Vec<Unread>,
    /// Lines read with their lone surrogate escapes as U+FFFD.
    pub lone_surrogates: Vec<(Loc, u32)>,
    /// The entries the walk visits, root first (indices into `entries`).
    pub path: Vec<usize>,
    pub end: End,
    /// Header and session lines (not entries of the tree).
    pub meta: u64,
}

/// Load a session file as pi does.
pub fn load(path: &Path, limits: Limits) -> Result<Loaded> {
    let mut out = Loaded {
        session_id: None,
        version: 1,
        no_header: false,
        entries: Vec::new(),
        corrupt: Vec::new(),
        unread: Vec::new(),
        lone_surrogates: Vec::new(),
        path: Vec::new(),
        end: End::Root,
        meta: 0,
    };
    let mut first = true;
    // Parsed entries in file order with their file index, for the v1
    // migration's `firstKeptEntryIndex` (an index into every parsed line,
    // the header included).
    let mut parsed_index = 0usize;
    let mut index_of: Vec<usize> = Vec::new();
    chain::each_line(path, limits, |line| {
        let Line {
            loc,
            number,
            bytes,
            torn,
        } = line;
        let bytes = if number == 1 {
            bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
        } else {
            bytes
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        // Node decodes the file as UTF-8, each invalid sequence as U+FFFD.
        let text = String::from_utf8_lossy(bytes);
        let (value, n_surrogates) = match chain::parse(&text) {
            Ok(v) => v,
            Err(e) => {
                out.corrupt
                    .push(CorruptRecord::new(loc, chain::not_json(&e), bytes, torn));
                return Ok(());
            }
        };
        if n_surrogates > 0 {
            out.lone_surrogates.push((loc.clone(), n_surrogates));
        }
        let this_index = parsed_index;
        parsed_index += 1;
        let ty = value.get("type").and_then(Value::as_str).unwrap_or("");
        if first {
            first = false;
            if ty != "session" || !value.get("id").is_some_and(Value::is_string) {
                out.no_header = true;
            } else {
                out.session_id = value.get("id").and_then(Value::as_str).map(str::to_string);
                out.version = value.get("version").and_then(Value::as_i64).unwrap_or(1);
                if out.version > CURRENT_VERSION {
                    out.unread.push(Unread {
                        loc: loc.clone(),
                        kind: format!("session version {}", out.version),
                        what: "a session version newer than pi 0.73.1 writes: its entries are read as version 3",
                    });
                }
                out.meta += 1;
                return Ok(());
            }
        }
        if ty == "session" {
            // Another header: pi keeps it out of the tree.
            out.meta += 1;
            return Ok(());
        }
        index_of.push(this_index);
        out.entries
            .push(Entry::new(loc, value, "id", "parentId", false));
        Ok(())
    })?;
    if out.version < 2 {
        migrate_v1(&mut out.entries, &index_of);
    }
    if out.version < 3 {
        for e in &mut out.entries {
            if e.ty() == "message"
                && e.value.pointer("/message/role").and_then(Value::as_str) == Some("hookMessage")
            {
                e.value["message"]["role"] = Value::String("custom".into());
            }
        }
    }
    for e in &out.entries {
        let ty = e.ty();
        if !KNOWN_TYPES.contains(&ty) {
            out.unread.push(Unread {
                loc: e.loc.clone(),
                kind: if ty.is_empty() {
                    "an entry without a `type`".to_string()
                } else {
                    format!("entry type `{ty}`")
                },
                what: "an entry type pi 0.73.1 does not write: it stays in the tree, and no message of it is sent",
            });
        } else if ty == "message" {
            let role = e.value.pointer("/message/role").and_then(Value::as_str);
            if !matches!(
                role,
                Some("user" | "assistant" | "toolResult" | "bashExecution" | "custom")
            ) {
                out.unread.push(Unread {
                    loc: e.loc.clone(),
                    kind: match role {
                        Some(r) => format!("message role `{r}`"),
                        None => "a message entry without a `message.role`".to_string(),
                    },
                    what: "a message pi 0.73.1 does not convert: it is not sent",
                });
            }
        }
    }
    walk(&mut out);
    Ok(out)
}

/// The v1 → v2 migration: ids in file order, each entry the child of the
/// one before it. pi draws fresh random ids (and writes them back); these
/// are stable stand-ins with the same links.
fn migrate_v1(entries: &mut [Entry], index_of: &[usize]) {
    let mut prev: Option<String> = None;
    for (k, e) in entries.iter_mut().enumerate() {
        let id = format!("v1-{k}");
        e.id = Some(id.clone());
        e.parent = prev.replace(id.clone());
        if let Some(o) = e.value.as_object_mut() {
            o.insert("id".into(), Value::String(id));
        }
    }
    // `firstKeptEntryIndex` counts every parsed line, the header included.
    let id_at: HashMap<usize, String> = index_of
        .iter()
        .zip(entries.iter())
        .filter_map(|(&i, e)| e.id.clone().map(|id| (i, id)))
        .collect();
    for e in entries.iter_mut() {
        if e.ty() != "compaction" {
            continue;
        }
        let Some(o) = e.value.as_object_mut() else {
            continue;
        };
        if let Some(i) = o.get("firstKeptEntryIndex").and_then(Value::as_u64) {
            if let Some(id) = id_at.get(&(i as usize)) {
                o.insert("firstKeptEntryId".into(), Value::String(id.clone()));
            }
            o.remove("firstKeptEntryIndex");
        }
    }
}

/// `buildSessionContext`'s walk from the last entry.
fn walk(out: &mut Loaded) {
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for (i, e) in out.entries.iter().enumerate() {
        if let Some(id) = &e.id {
            by_id.insert(id.as_str(), i);
        }
    }
    let Some(mut at) = out.entries.len().checked_sub(1) else {
        return;
    };
    let mut seen = HashSet::new();
    let mut path = Vec::new();
    let end = loop {
        if !seen.insert(at) {
            break End::Cycle { at };
        }
        path.push(at);
        let Some(parent) = out.entries[at].parent.as_deref() else {
            break End::Root;
        };
        match by_id.get(parent) {
            Some(&p) => at = p,
            None => {
                break End::Cut {
                    at,
                    missing: parent.to_string(),
                };
            }
        }
    };
    path.reverse();
    out.path = path;
    out.end = end;
}
