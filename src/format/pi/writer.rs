//! A repaired copy of a pi session, written in pi's own terms.
//!
//! Every line is copied byte for byte but those an edit names. The tree
//! stays a tree: an entry taken out hands its children to its parent, an
//! entry put in takes the children of the entry it follows, so that pi's
//! walk from the last entry still reaches every entry it reached before.
//! A `parentId` is changed in place in the line's text (the rest of the
//! line is kept as it is).
//!
//! - a line that does not parse: dropped (pi skips it anyway); when it is
//!   a torn entry with the next entry pi appended right onto it (pi writes
//!   no newline first), only the fragment goes and the whole entry is kept
//!   on the line. The first entry after it whose `parentId` then names no
//!   entry (the dropped line was most likely its parent) is linked to the
//!   entry before the line, so the walk no longer stops there;
//! - a stray tool result: its entry is dropped;
//! - an unanswered call: a `toolResult` entry right after the call's
//!   entry, with what pi itself sends for it on resume
//!   (`isError: true`, `No result provided`); or, with
//!   `--orphan-calls=drop`, the call removed from its message;
//! - messages between a call and its results: moved after the results by
//!   re-linking the entries.
//!
//! A v1 or v2 session is not written: pi migrates it (and rewrites the
//! file) the first time it opens it; repair that file.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::load::{self, CURRENT_VERSION, Loaded};
use super::read::{self, Sent};
use crate::config::{OrphanCalls as OrphanPolicy, RepairPolicy as Policy};
use crate::error::{Error, Result};
use crate::finding::{Action, Finding};
use crate::model::{Conversation, Loc, PartKind, Slot};
use crate::source::Limits;
use crate::write::lines::Records;
use crate::write::{Edit, Left, Log, Planned, Target, Writer};

/// What pi itself sends for a call without a result (pi-ai's
/// `transformMessages`, 0.73.1).
pub const NO_RESULT: &str = "No result provided";

pub struct PiWriter {
    input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    limits: Limits,
    policy: Policy,
    drop_lines: BTreeSet<u64>,
    /// Lines written with another text.
    replace: HashMap<u64, String>,
    /// Lines written right after a line.
    insert_after: BTreeMap<u64, Vec<String>>,
    planned: bool,
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(PiWriter {
        input: t.input.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
        limits: t.limits,
        policy: *t.policy,
        drop_lines: BTreeSet::new(),
        replace: HashMap::new(),
        insert_after: BTreeMap::new(),
        planned: false,
    }))
}

/// The entries as the repair changes them.
struct Tree {
    /// Each entry's `parentId` now.
    parent: Vec<Option<String>>,
    /// Each entry's value when its content changed.
    value: Vec<Option<Value>>,
    dropped: Vec<bool>,
    ids: HashSet<String>,
    /// Entries put in, by the entry they follow: (id, parent, value).
    inserted: BTreeMap<usize, Vec<(String, Value)>>,
}

impl Tree {
    fn new(l: &Loaded) -> Tree {
        Tree {
            parent: l.entries.iter().map(|e| e.parent.clone()).collect(),
            value: vec![None; l.entries.len()],
            dropped: vec![false; l.entries.len()],
            ids: l.entries.iter().filter_map(|e| e.id.clone()).collect(),
            inserted: BTreeMap::new(),
        }
    }

    /// Entries (kept) whose parent is `id`, and inserted entries' too.
    fn children(&self, id: &str) -> Vec<usize> {
        (0..self.parent.len())
            .filter(|&i| !self.dropped[i] && self.parent[i].as_deref() == Some(id))
            .collect()
    }

    /// A new 8-hex id no entry has, derived from `seed` (stable: a second
    /// repair of the same input makes the same copy).
    fn new_id(&mut self, seed: &str) -> String {
        let mut h: u32 = 0x811c_9dc5;
        for b in seed.bytes() {
            h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
        loop {
            let id = format!("{h:08x}");
            if self.ids.insert(id.clone()) {
                return id;
            }
            h = h.wrapping_add(1);
        }
    }
}

fn edit(
    f: &Finding,
    action: &'static str,
    description: String,
    loc: Loc,
    ids: Vec<String>,
) -> Edit {
    let mut e = Edit::new(f.rule, &f.conversation, action, description, loc);
    e.ids = ids;
    e
}

/// `line` with its `parentId` set to `parent`: in place in its text when
/// it holds the member as `JSON.stringify` writes it, else re-serialised.
fn with_parent(line: &str, old: Option<&str>, parent: Option<&str>, value: &Value) -> String {
    let new = match parent {
        Some(p) => format!("\"parentId\":{}", Value::String(p.to_string())),
        None => "\"parentId\":null".to_string(),
    };
    let was = match old {
        Some(p) => format!("\"parentId\":{}", Value::String(p.to_string())),
        None => "\"parentId\":null".to_string(),
    };
    if line.matches(&was).count() == 1 {
        return line.replacen(&was, &new, 1);
    }
    let mut v = value.clone();
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "parentId".into(),
            parent.map_or(Value::Null, |p| Value::String(p.to_string())),
        );
    }
    v.to_string()
}

impl Writer for PiWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        self.planned = true;
        if planned.is_empty() {
            return Ok(());
        }
        let loaded = load::load(&self.input, self.limits)?;
        if loaded.version < CURRENT_VERSION || loaded.no_header {
            for p in planned {
                log.left.push(Left::of(
                    p.finding,
                    if loaded.no_header {
                        "the file has no session header pi reads: pi would start it over; not written"
                    } else {
                        "a v1 or v2 pi session is migrated (and rewritten) by pi the first time it opens it; repair that file"
                    },
                ));
            }
            return Ok(());
        }
        let sent = read::sent(&loaded);
        if sent.len() != conv.messages.len() {
            return Err(Error::input(
                &self.input,
                "changed while it was being repaired (its entries no longer match)",
            ));
        }
        let entry_of = |m: usize| match sent.get(m) {
            Some(Sent::Entry(i)) => Some(*i),
            _ => None,
        };
        let mut tree = Tree::new(&loaded);
        let mut records = Records::open(&self.input)?;
        // Edits by the entry whose line they change (`None`: a dropped line).
        let mut edits: Vec<(Option<usize>, Edit)> = Vec::new();
        let mut dropped_corrupt: Vec<(u64, &Finding)> = Vec::new();
        for p in planned {
            let f = p.finding;
            for action in &p.fix.actions {
                match action {
                    Action::DropRecord { loc } => {
                        let Some(line) = loc.line() else { continue };
                        if !self.drop_lines.insert(line) {
                            continue;
                        }
                        let (before, before_base64) = records.read_verbatim(loc)?;
                        let glued = glued_entry(&records.read_bytes(loc)?);
                        let description = match &glued {
                            Some((at, id, text)) => {
                                self.drop_lines.remove(&line);
                                self.replace.insert(line, text.clone());
                                tree.ids.insert(id.clone());
                                format!(
                                    "dropped the first {at} bytes of line {line}, a torn entry, and kept the entry `{id}` pi appended right onto it (pi skips the whole line on resume)"
                                )
                            }
                            None => format!(
                                "dropped line {line}, which does not parse (pi skips it on resume)"
                            ),
                        };
                        let mut e = edit(f, action.name(), description, loc.clone(), f.ids.clone());
                        e.before = Some(before);
                        e.before_base64 = before_base64;
                        e.after = glued.map(|(_, _, text)| text);
                        edits.push((None, e));
                        dropped_corrupt.push((line, f));
                    }
                    Action::RemoveResult { message, .. } => {
                        let Some(i) = entry_of(*message).filter(|&i| {
                            loaded.entries[i].value.pointer("/message/role")
                                == Some(&Value::String("toolResult".into()))
                        }) else {
                            log.left.push(Left::of(
                                f,
                                "the result is not a `toolResult` entry of its own",
                            ));
                            continue;
                        };
                        let e = &loaded.entries[i];
                        let call = e
                            .value
                            .pointer("/message/toolCallId")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string();
                        tree.dropped[i] = true;
                        if let Some(line) = e.loc.line() {
                            self.drop_lines.insert(line);
                        }
                        let mut ed = edit(
                            f,
                            action.name(),
                            format!(
                                "dropped the tool result for `{call}` (line {}), which answers no call before it",
                                e.loc.line().unwrap_or(0)
                            ),
                            e.loc.clone(),
                            vec![call],
                        );
                        ed.before = Some(records.read(&e.loc)?);
                        edits.push((None, ed));
                        if let Some(id) = e.id.clone() {
                            let up = tree.parent[i].clone();
                            for c in tree.children(&id) {
                                tree.parent[c] = up.clone();
                                edits.push((
                                    Some(c),
                                    edit(
                                        f,
                                        "relink",
                                        format!(
                                            "linked line {} to the dropped result's parent, so pi's walk still reaches what came before",
                                            loaded.entries[c].loc.line().unwrap_or(0)
                                        ),
                                        loaded.entries[c].loc.clone(),
                                        Vec::new(),
                                    ),
                                ));
                            }
                        }
                    }
                    Action::AnswerCall { message, part } => {
                        let Some(i) = entry_of(*message) else {
                            continue;
                        };
                        let m = &conv.messages[*message];
                        let Some(PartKind::ToolCall { id, name, .. }) =
                            m.parts.get(*part).map(|p| &p.kind)
                        else {
                            continue;
                        };
                        let e = &loaded.entries[i];
                        match self.policy.orphan_calls {
                            OrphanPolicy::Report => {
                                log.left
                                    .push(Left::of(f, "orphan-calls policy is `report`"));
                            }
                            OrphanPolicy::Drop => {
                                let Some(Slot::Item(_, k)) = m.parts[*part].slot else {
                                    continue;
                                };
                                let v = tree.value[i].get_or_insert_with(|| e.value.clone());
                                let left = match v
                                    .pointer_mut("/message/content")
                                    .and_then(Value::as_array_mut)
                                {
                                    Some(a) if k < a.len() && a.len() > 1 => {
                                        a.remove(k);
                                        true
                                    }
                                    _ => false,
                                };
                                if !left {
                                    log.left.push(Left::of(
                                        f,
                                        "the call is all its message holds: removing it would leave an empty assistant message",
                                    ));
                                    continue;
                                }
                                edits.push((
                                    Some(i),
                                    edit(
                                        f,
                                        action.name(),
                                        format!(
                                            "removed the unanswered call `{id}` (`{name}`) from line {}",
                                            e.loc.line().unwrap_or(0)
                                        ),
                                        e.loc.clone(),
                                        vec![id.clone()],
                                    ),
                                ));
                            }
                            OrphanPolicy::Placeholder => {
                                let Some(aid) = e.id.clone() else {
                                    log.left.push(Left::of(
                                        f,
                                        "the call's entry has no `id` to hang a result from",
                                    ));
                                    continue;
                                };
                                // Hang it under the last result already put in
                                // after this entry, if any.
                                let under = tree
                                    .inserted
                                    .get(&i)
                                    .and_then(|v| v.last())
                                    .map(|(id, _)| id.clone())
                                    .unwrap_or(aid.clone());
                                let new_id = tree.new_id(&format!("{aid}/{id}"));
                                let ts = e.value.get("timestamp").cloned().unwrap_or(Value::Null);
                                let ms = e
                                    .value
                                    .pointer("/message/timestamp")
                                    .cloned()
                                    .unwrap_or(Value::Null);
                                let entry = json!({
                                    "type": "message",
                                    "id": new_id,
                                    "parentId": under,
                                    "timestamp": ts,
                                    "message": {
                                        "role": "toolResult",
                                        "toolCallId": id,
                                        "toolName": name,
                                        "content": [{"type": "text", "text": NO_RESULT}],
                                        "isError": true,
                                        "timestamp": ms,
                                    },
                                });
                                for c in tree.children(&under) {
                                    tree.parent[c] = Some(new_id.clone());
                                    edits.push((
                                        Some(c),
                                        edit(
                                            f,
                                            "relink",
                                            format!(
                                                "linked line {} to the result put in for `{id}`, so pi's walk goes through it",
                                                loaded.entries[c].loc.line().unwrap_or(0)
                                            ),
                                            loaded.entries[c].loc.clone(),
                                            vec![id.clone()],
                                        ),
                                    ));
                                }
                                let mut ed = edit(
                                    f,
                                    action.name(),
                                    format!(
                                        "answered the call `{id}` (`{name}`) with the result pi itself sends for it (`isError`, `{NO_RESULT}`), in a new entry right after line {}",
                                        e.loc.line().unwrap_or(0)
                                    ),
                                    e.loc.clone(),
                                    vec![id.clone()],
                                );
                                ed.synthesized = true;
                                ed.after = Some(entry.to_string());
                                edits.push((None, ed));
                                tree.inserted.entry(i).or_default().push((new_id, entry));
                            }
                        }
                    }
                    Action::MoveAfter { messages, after } => {
                        let (Some(moved), Some(to)) = (
                            messages
                                .iter()
                                .map(|&m| entry_of(m))
                                .collect::<Option<Vec<_>>>(),
                            entry_of(*after),
                        ) else {
                            log.left
                                .push(Left::of(f, "a message to move is not an entry of its own"));
                            continue;
                        };
                        match move_after(&loaded, &mut tree, &moved, to) {
                            Some(changed) => {
                                for c in changed {
                                    edits.push((
                                        Some(c),
                                        edit(
                                            f,
                                            action.name(),
                                            format!(
                                                "re-linked line {} so that the results come right after their call and the other messages after them",
                                                loaded.entries[c].loc.line().unwrap_or(0)
                                            ),
                                            loaded.entries[c].loc.clone(),
                                            f.ids.clone(),
                                        ),
                                    ));
                                }
                            }
                            None => log.left.push(Left::of(
                                f,
                                "the messages are not one run of pi's resumed path",
                            )),
                        }
                    }
                    _ => log.left.push(Left::of(f, "not written in pi sessions")),
                }
            }
        }
        // A dropped line in the middle was most likely the parent of the
        // first entry after it: link that entry to the entry before it.
        for (line, f) in dropped_corrupt {
            let after = loaded
                .entries
                .iter()
                .position(|e| e.loc.line().is_some_and(|l| l > line));
            let Some(a) = after else { continue };
            let Some(missing) = tree.parent[a].clone() else {
                continue;
            };
            if tree.ids.contains(&missing) {
                continue;
            }
            let before = loaded.entries[..a]
                .iter()
                .enumerate()
                .rev()
                .find(|(k, e)| !tree.dropped[*k] && e.id.is_some())
                .and_then(|(_, e)| e.id.clone());
            tree.parent[a] = before.clone();
            edits.push((
                Some(a),
                edit(
                    f,
                    "relink",
                    format!(
                        "linked line {} (its parent `{missing}` is in no line left) to {}, the entry before the dropped line, so pi's walk reaches the history before it",
                        loaded.entries[a].loc.line().unwrap_or(0),
                        match &before {
                            Some(b) => format!("`{b}`"),
                            None => "nothing (the start of the tree)".to_string(),
                        }
                    ),
                    loaded.entries[a].loc.clone(),
                    Vec::new(),
                ),
            ));
        }
        // The text of each changed line.
        for (i, e) in loaded.entries.iter().enumerate() {
            if tree.dropped[i] {
                continue;
            }
            let reparented = tree.parent[i] != e.parent;
            if !reparented && tree.value[i].is_none() {
                continue;
            }
            let Some(line) = e.loc.line() else { continue };
            let raw = records.read(&e.loc)?;
            let text = match &tree.value[i] {
                Some(v) => {
                    let mut v = v.clone();
                    if let Some(o) = v.as_object_mut() {
                        o.insert(
                            "parentId".into(),
                            tree.parent[i].clone().map_or(Value::Null, Value::String),
                        );
                    }
                    v.to_string()
                }
                None => with_parent(
                    &raw,
                    e.parent.as_deref(),
                    tree.parent[i].as_deref(),
                    &e.value,
                ),
            };
            self.replace.insert(line, text);
        }
        for (i, list) in &tree.inserted {
            if let Some(line) = loaded.entries[*i].loc.line() {
                self.insert_after
                    .entry(line)
                    .or_default()
                    .extend(list.iter().map(|(_, v)| v.to_string()));
            }
        }
        for (at, mut e) in edits {
            if let Some(i) = at {
                let line = loaded.entries[i].loc.line().unwrap_or(0);
                e.before = Some(records.read(&loaded.entries[i].loc)?);
                e.after = self.replace.get(&line).cloned();
            }
            log.edits.push(e);
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
        let werr = crate::write::lines::output_error(out);
        crate::write::lines::rewrite(
            &self.input,
            out,
            self.limits.max_line_bytes,
            self.force,
            |line, w| {
                if self.drop_lines.contains(&line.number) {
                    return Ok(());
                }
                match self.replace.get(&line.number) {
                    Some(text) => {
                        w.write_all(text.as_bytes()).map_err(&werr)?;
                        w.write_all(b"\n").map_err(&werr)?;
                    }
                    None => {
                        w.write_all(line.bytes).map_err(&werr)?;
                        if line.terminated {
                            w.write_all(b"\n").map_err(&werr)?;
                        }
                    }
                }
                if let Some(list) = self.insert_after.get(&line.number) {
                    if !line.terminated && !self.replace.contains_key(&line.number) {
                        w.write_all(b"\n").map_err(&werr)?;
                    }
                    for text in list {
                        w.write_all(text.as_bytes()).map_err(&werr)?;
                        w.write_all(b"\n").map_err(&werr)?;
                    }
                }
                Ok(())
            },
            |_| Ok(()),
        )
    }
}

/// An entry pi appended right onto a torn one (it writes no newline
/// first): the offset where it starts on the line, its id, and its text.
/// The line holds a fragment, then one whole entry that parses.
fn glued_entry(bytes: &[u8]) -> Option<(usize, String, String)> {
    let starts = memchr::memmem::find_iter(bytes, b"{\"type\":").filter(|&p| p > 0);
    for p in starts {
        let Ok(text) = std::str::from_utf8(&bytes[p..]) else {
            continue;
        };
        let text = text.trim_end();
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            continue;
        };
        let ty = v.get("type").and_then(Value::as_str);
        let id = v.get("id").and_then(Value::as_str);
        if let (Some(ty), Some(id)) = (ty, id)
            && ty != "session"
        {
            return Some((p, id.to_string(), text.to_string()));
        }
    }
    None
}

/// Move the entries `moved` (a run of pi's resumed path) to right after
/// `to`, which follows them on the path: the path's segment from the
/// first moved entry to `to` is re-linked as its other entries, then the
/// moved ones. The entries whose parent changed, or `None` when the
/// entries are not laid out so.
fn move_after(l: &Loaded, tree: &mut Tree, moved: &[usize], to: usize) -> Option<Vec<usize>> {
    let path = &l.path;
    let head = *moved.first()?;
    let first = path.iter().position(|&i| i == head)?;
    let last = path.iter().position(|&i| i == to)?;
    if last <= first {
        return None;
    }
    let seg = &path[first..=last];
    if !moved.iter().all(|m| seg.contains(m)) || moved.contains(&to) {
        return None;
    }
    let mut order: Vec<usize> = seg.iter().copied().filter(|i| !moved.contains(i)).collect();
    order.extend(moved.iter().copied());
    let top = tree.parent[seg[0]].clone();
    let old_last = l.entries[to].id.clone()?;
    let new_last = l.entries[*order.last()?].id.clone()?;
    // Children of the old end of the run, off the run, hang from its new end.
    let outside: Vec<usize> = tree
        .children(&old_last)
        .into_iter()
        .filter(|c| !seg.contains(c))
        .collect();
    let mut changed = Vec::new();
    let mut up = top;
    for &i in &order {
        if tree.parent[i] != up {
            tree.parent[i] = up.clone();
            changed.push(i);
        }
        up = Some(l.entries[i].id.clone()?);
    }
    for c in outside {
        if tree.parent[c].as_deref() != Some(new_last.as_str()) {
            tree.parent[c] = Some(new_last.clone());
            changed.push(c);
        }
    }
    Some(changed)
}
