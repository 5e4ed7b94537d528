//! A repaired copy of a pi session, written in pi's own terms.
//!
//! Every line is copied byte for byte but those an edit names, and the
//! tree stays a tree, so that pi's walk from the last entry still reaches
//! every entry it reached before (the chain writer pi shares with Qwen
//! Code: `records::chain::writer`; here, pi's own actions).
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

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::load::{self, CURRENT_VERSION, Loaded};
use super::read::{self, Sent};
use crate::config::OrphanCalls as OrphanPolicy;
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::format::records::chain::App;
use crate::format::records::chain::writer::{Copy, Plan, Salvage, Tree};
use crate::model::{Conversation, PartKind, Slot};
use crate::write::{Edit, Left, Log, Planned, Target, Writer};

/// What pi itself sends for a call without a result (pi-ai's
/// `transformMessages`, 0.73.1).
pub const NO_RESULT: &str = "No result provided";

/// pi's session files, for the shared chain writer.
pub struct Pi;

impl App for Pi {
    const CLIENT: &'static str = "pi";
    const PARENT: &'static str = "parentId";
    const NODE: &'static str = "entry";
    const WHOLE: &'static str = "tree";

    /// An 8-hex id, as pi draws them.
    fn new_id(seed: &str, taken: &mut HashSet<String>) -> String {
        let mut h: u32 = 0x811c_9dc5;
        for b in seed.bytes() {
            h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
        loop {
            let id = format!("{h:08x}");
            if taken.insert(id.clone()) {
                return id;
            }
            h = h.wrapping_add(1);
        }
    }
}

pub struct PiWriter(Copy);

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(PiWriter(Copy::new(t))))
}

impl Writer for PiWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        if !self.0.begin(planned) {
            return Ok(());
        }
        let loaded = load::load(&self.0.input, self.0.limits)?;
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
                &self.0.input,
                "changed while it was being repaired (its entries no longer match)",
            ));
        }
        let entry_of = |m: usize| match sent.get(m) {
            Some(Sent::Entry(i)) => Some(*i),
            _ => None,
        };
        let policy = self.0.policy;
        let lines = self.0.take();
        let mut plan = Plan::<Pi>::new(&loaded.entries, &self.0.input, lines)?;
        // The calls whose results this repair recovers from glued lines:
        // they are answered already.
        let mut recovered: HashSet<String> = HashSet::new();
        for p in planned {
            for action in &p.fix.actions {
                if let Action::DropRecord { loc } = action
                    && let Some((_, found)) = glued_entries(&plan.records.read_bytes(loc)?)
                {
                    recovered.extend(found.iter().filter_map(|(_, v)| {
                        (v.pointer("/message/role")? == "toolResult")
                            .then(|| v.pointer("/message/toolCallId")?.as_str())
                            .flatten()
                            .map(str::to_string)
                    }));
                }
            }
        }
        // The links of the entries salvaged from lines dropped so far.
        let mut salvaged: HashMap<String, Option<String>> = HashMap::new();
        for p in planned {
            let f = p.finding;
            for action in &p.fix.actions {
                match action {
                    Action::DropRecord { loc } => {
                        let line = loc.line().unwrap_or(0);
                        let mut around = Around::of(&loaded, &plan.tree, line, &salvaged);
                        plan.drop_line(f, action.name(), loc, |bytes| {
                            salvage(bytes, line, &mut around)
                        })?;
                        plan.salvaged(around.added.iter().cloned());
                        salvaged.extend(around.added);
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
                        if !plan.drop_node(
                            f,
                            action.name(),
                            i,
                            format!(
                                "dropped the tool result for `{call}` (line {}), which answers no call before it",
                                e.loc.line().unwrap_or(0)
                            ),
                            vec![call],
                        )? {
                            log.left.push(Left::of(
                                f,
                                "the result shares its line with other records (glued): dropping the line would drop them",
                            ));
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
                        match policy.orphan_calls {
                            OrphanPolicy::Report => {
                                log.left
                                    .push(Left::of(f, "orphan-calls policy is `report`"));
                            }
                            OrphanPolicy::Drop => {
                                let Some(Slot::Item(_, k)) = m.parts[*part].slot else {
                                    continue;
                                };
                                if !plan.remove_item(i, "/message/content", k) {
                                    log.left.push(Left::of(
                                        f,
                                        "the call is all its message holds: removing it would leave an empty assistant message",
                                    ));
                                    continue;
                                }
                                plan.edit_of(
                                    i,
                                    Edit::of(f, action.name(), format!(
                                            "removed the unanswered call `{id}` (`{name}`) from line {}",
                                            e.loc.line().unwrap_or(0)
                                        ), e.loc.clone()).with_ids(vec![id.clone()]),
                                );
                            }
                            OrphanPolicy::Placeholder if recovered.contains(id) => {
                                log.left.push(Left::of(
                                    f,
                                    "its result is in a glued line this repair writes on lines of their own",
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
                                let under = plan.under(i, &aid);
                                let new_id = plan.new_id(&format!("{aid}/{id}"));
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
                                plan.put_after(
                                    f,
                                    action.name(),
                                    i,
                                    &under,
                                    new_id,
                                    entry,
                                    id,
                                    format!(
                                        "answered the call `{id}` (`{name}`) with the result pi itself sends for it (`isError`, `{NO_RESULT}`), in a new entry right after line {}",
                                        e.loc.line().unwrap_or(0)
                                    ),
                                );
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
                        match move_after(&loaded, &mut plan.tree, &moved, to) {
                            Some(changed) => {
                                for c in changed {
                                    plan.edit_of(
                                        c,
                                        Edit::of(f, action.name(), format!(
                                                "re-linked line {} so that the results come right after their call and the other messages after them",
                                                loaded.entries[c].loc.line().unwrap_or(0)
                                            ), loaded.entries[c].loc.clone()).with_ids(f.ids.clone()),
                                    );
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
        let lines = plan.finish(log)?;
        self.0.set(lines);
        Ok(())
    }

    fn write(self: Box<Self>, _log: &mut Log) -> Result<()> {
        self.0.write()
    }
}

/// What a salvage of line `line` needs to know of the entries around it.
struct Around {
    /// Every id an entry has or a repair gave.
    known: HashSet<String>,
    /// Each kept entry's parent now, by id.
    parent: HashMap<String, Option<String>>,
    /// The last kept entry before the line.
    before: Option<String>,
    /// The entries this salvage keeps, and their parents.
    added: Vec<(String, Option<String>)>,
}

impl Around {
    /// Around line `line`, with the entries salvaged from other lines
    /// (`salvaged`: their ids and parents).
    fn of(
        l: &Loaded,
        tree: &Tree,
        line: u64,
        salvaged: &HashMap<String, Option<String>>,
    ) -> Around {
        let kept = || {
            l.entries
                .iter()
                .enumerate()
                .filter(|(i, _)| !tree.dropped[*i])
        };
        Around {
            known: tree.ids.clone(),
            parent: salvaged
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .chain(kept().filter_map(|(i, e)| Some((e.id.clone()?, tree.parent[i].clone()))))
                .collect(),
            before: kept()
                .filter(|(_, e)| e.loc.line().is_some_and(|l| l < line))
                .filter_map(|(_, e)| e.id.clone())
                .next_back(),
            added: Vec::new(),
        }
    }

    /// Whether the walk up from `parent` comes to `id`: hung there, the
    /// entry `id` would close a cycle (pi's walk would never end).
    fn closes_cycle(&self, id: &str, parent: Option<&str>) -> bool {
        let mut at = parent.map(str::to_string);
        let mut steps = 0;
        while let Some(p) = at {
            if p == id {
                return true;
            }
            steps += 1;
            if steps > self.parent.len() {
                return false;
            }
            at = self.parent.get(&p).cloned().flatten();
        }
        false
    }
}

/// What of line `line`, which does not parse, is kept: the whole entries
/// it holds ([`glued_entries`]: entries glued on one line, or a torn entry
/// with the next one pi appended right onto it), each on a line of its
/// own, but those whose id an entry of the file already has (a line
/// written twice, then glued). An entry whose parent is in no line (the
/// torn one before it), or hung where it would close a cycle (the line
/// had hidden it: pi's walk never ends on one), hangs from the entry
/// before it: the last kept entry before the line, or the one kept before
/// it on the line; one that would close a cycle there too stays out.
fn salvage(bytes: &[u8], line: u64, around: &mut Around) -> Option<Salvage> {
    let (at, found) = glued_entries(bytes)?;
    let mut texts = Vec::new();
    let mut ids = Vec::new();
    let mut relinked = Vec::new();
    for (mut text, mut v) in found {
        let Some(id) = v.get("id").and_then(Value::as_str).map(str::to_string) else {
            continue;
        };
        if around.known.contains(&id) {
            continue;
        }
        let parent = v
            .get("parentId")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(str::to_string);
        let lost = parent.as_ref().is_some_and(|p| !around.known.contains(p));
        let cycle = around.closes_cycle(&id, parent.as_deref());
        if (lost || cycle) && around.closes_cycle(&id, around.before.as_deref()) {
            // Hung from the entry before it, it would close the cycle all
            // the same: it stays out, as pi leaves it out (the line is in
            // the log whole).
            continue;
        }
        if lost || cycle {
            let now = around.before.clone();
            let was = format!(
                "\"parentId\":{}",
                parent.clone().map_or(Value::Null, Value::String)
            );
            let to = format!(
                "\"parentId\":{}",
                now.clone().map_or(Value::Null, Value::String)
            );
            if text.matches(&was).count() == 1 {
                text = text.replacen(&was, &to, 1);
            } else if let Some(o) = v.as_object_mut() {
                o.insert(
                    "parentId".into(),
                    now.clone().map_or(Value::Null, Value::String),
                );
                text = v.to_string();
            }
            relinked.push(format!(
                "`{id}` (its parent `{}` {}) hung from {}",
                parent.as_deref().unwrap_or("null"),
                if lost {
                    "is in no line"
                } else {
                    "would close a cycle"
                },
                now.as_deref()
                    .map_or("nothing (the start of the tree)".to_string(), |b| format!(
                        "`{b}`"
                    )),
            ));
            around.parent.insert(id.clone(), now.clone());
            around.added.push((id.clone(), now));
        } else {
            around.parent.insert(id.clone(), parent.clone());
            around.added.push((id.clone(), parent));
        }
        around.known.insert(id.clone());
        around.before = Some(id.clone());
        ids.push(id);
        texts.push(text);
    }
    if texts.is_empty() {
        return None;
    }
    let list = ids
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut description = if at > 0 {
        format!(
            "dropped the first {at} bytes of line {line}, a torn entry, and kept the {} whole entr{} after it ({list}) on lines of their own (pi skips the whole line on resume)",
            ids.len(),
            if ids.len() == 1 { "y" } else { "ies" }
        )
    } else {
        format!(
            "wrote the {} entries glued on line {line} ({list}) on lines of their own (pi skips the whole line on resume)",
            ids.len()
        )
    };
    if !relinked.is_empty() {
        description.push_str("; ");
        description.push_str(&relinked.join("; "));
    }
    Some(Salvage {
        description,
        ids,
        text: texts.join("\n"),
    })
}

/// The whole entries a line that does not parse holds: from the first
/// place on it where whole entries follow one another to its end (its
/// start: entries glued `}{`; else where pi appended an entry right onto
/// a torn one, pi writing no newline first), the offset of that place
/// and each entry's text and value. An entry is an object with a string
/// `type` (not a `session` header) and a string `id`.
fn glued_entries(bytes: &[u8]) -> Option<(usize, Vec<(String, Value)>)> {
    let starts = std::iter::once(0)
        .chain(memchr::memmem::find_iter(bytes, b"{\"type\":").filter(|&p| p > 0));
    'start: for p in starts {
        let mut at = p;
        let mut out = Vec::new();
        loop {
            while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
                at += 1;
            }
            if at >= bytes.len() {
                break;
            }
            let mut values =
                serde_json::Deserializer::from_slice(&bytes[at..]).into_iter::<Value>();
            let Some(Ok(v)) = values.next() else {
                continue 'start;
            };
            let end = at + values.byte_offset();
            let Ok(text) = std::str::from_utf8(&bytes[at..end]) else {
                continue 'start;
            };
            let entry = v
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| t != "session")
                && v.get("id").is_some_and(Value::is_string);
            if !entry {
                continue 'start;
            }
            out.push((text.to_string(), v));
            at = end;
        }
        if !out.is_empty() {
            return Some((p, out));
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
