//! A repaired copy of a Qwen Code session, written in Qwen Code's own
//! terms.
//!
//! Every line is copied byte for byte but those an edit names. The walk
//! from the last record still reaches every record it reached before: a
//! record taken out hands its children to its parent, a record put in
//! takes the children of the record it follows. A `parentUuid` is changed
//! in place in the line's text.
//!
//! - a line that does not parse: dropped (Qwen Code skips it anyway), the
//!   records Qwen Code recovers from it (`}{`-glued) written on lines of
//!   their own. The first record after it whose `parentUuid` then names no
//!   record (the dropped line was most likely its parent: a torn record
//!   and the one Qwen Code appended onto it) is linked to the record
//!   before the line, so the walk no longer stops there;
//! - a stray tool result: its `functionResponse` part removed, and its
//!   record with it when nothing else remains;
//! - an unanswered call: a `tool_result` record right after the call's
//!   record, with what Qwen Code itself records for a call cancelled
//!   while it ran (a `functionResponse` whose `response.error` is
//!   `[Operation Cancelled] Reason: User cancelled tool execution.`); or,
//!   with `--orphan-calls=drop`, the call removed from its record.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::load::{self, Loaded};
use super::read::{self, Sent};
use crate::config::{OrphanCalls as OrphanPolicy, RepairPolicy as Policy};
use crate::error::{Error, Result};
use crate::finding::{Action, Finding};
use crate::model::{Conversation, Loc, PartKind, Slot};
use crate::source::Limits;
use crate::write::lines::Records;
use crate::write::{Edit, Left, Log, Planned, Target, Writer};

/// What Qwen Code records for a call cancelled while it ran (0.15.10,
/// `CoreToolScheduler`: `[Operation Cancelled] Reason: ` and the reason).
pub const CANCELLED: &str = "[Operation Cancelled] Reason: User cancelled tool execution.";

pub struct QwenWriter {
    input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    limits: Limits,
    policy: Policy,
    drop_lines: BTreeSet<u64>,
    replace: HashMap<u64, String>,
    insert_after: BTreeMap<u64, Vec<String>>,
    planned: bool,
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(QwenWriter {
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

/// The records as the repair changes them.
struct Tree {
    parent: Vec<Option<String>>,
    value: Vec<Option<Value>>,
    dropped: Vec<bool>,
    uuids: HashSet<String>,
    /// Records put in, by the record they follow.
    inserted: BTreeMap<usize, Vec<(String, Value)>>,
}

impl Tree {
    fn new(l: &Loaded) -> Tree {
        Tree {
            parent: l.records.iter().map(|r| r.parent.clone()).collect(),
            value: vec![None; l.records.len()],
            dropped: vec![false; l.records.len()],
            uuids: l.records.iter().filter_map(|r| r.uuid.clone()).collect(),
            inserted: BTreeMap::new(),
        }
    }

    fn children(&self, uuid: &str) -> Vec<usize> {
        (0..self.parent.len())
            .filter(|&i| !self.dropped[i] && self.parent[i].as_deref() == Some(uuid))
            .collect()
    }

    /// A new uuid no record has, derived from `seed` (stable: a second
    /// repair of the same input makes the same copy).
    fn new_uuid(&mut self, seed: &str) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in seed.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        loop {
            let lo = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let u = format!(
                "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
                (h >> 32) as u32,
                (h >> 16) as u16,
                h as u16 & 0xfff,
                (lo >> 52) as u16 & 0xfff,
                lo & 0xffff_ffff_ffff
            );
            if self.uuids.insert(u.clone()) {
                return u;
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

/// `line` with its `parentUuid` set to `parent`: in place in its text when
/// it holds the member as `JSON.stringify` writes it, else re-serialised.
fn with_parent(line: &str, old: Option<&str>, parent: Option<&str>, value: &Value) -> String {
    let member = |p: Option<&str>| match p {
        Some(p) => format!("\"parentUuid\":{}", Value::String(p.to_string())),
        None => "\"parentUuid\":null".to_string(),
    };
    let was = member(old);
    if line.matches(&was).count() == 1 {
        return line.replacen(&was, &member(parent), 1);
    }
    let mut v = value.clone();
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "parentUuid".into(),
            parent.map_or(Value::Null, |p| Value::String(p.to_string())),
        );
    }
    v.to_string()
}

/// The record of message `m` and the index in its `parts` of the part at
/// `part`: the part's line names its record (one per line, or refused).
fn record_of(
    loaded: &Loaded,
    sent: &[Sent],
    conv: &Conversation,
    m: usize,
    part: usize,
) -> Option<(usize, usize)> {
    let Some(Sent::Records(group)) = sent.get(m) else {
        return None;
    };
    let p = conv.messages.get(m)?.parts.get(part)?;
    let Some(Slot::Item(_, k)) = p.slot else {
        return None;
    };
    let line = p.loc.line()?;
    let mut on_line = group
        .iter()
        .copied()
        .filter(|&i| loaded.records[i].loc.line() == Some(line));
    let i = on_line.next()?;
    on_line.next().is_none().then_some((i, k))
}

impl Writer for QwenWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        self.planned = true;
        if planned.is_empty() {
            return Ok(());
        }
        let loaded = load::load(&self.input, self.limits)?;
        let sent = read::sent(&loaded);
        if sent.len() != conv.messages.len() {
            return Err(Error::input(
                &self.input,
                "changed while it was being repaired (its records no longer match)",
            ));
        }
        let mut tree = Tree::new(&loaded);
        let mut records = Records::open(&self.input)?;
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
                        let kept: Vec<String> = {
                            let bytes = records.read_bytes(loc)?;
                            let text = String::from_utf8_lossy(&bytes).into_owned();
                            load::recover_objects(text.trim())
                                .into_iter()
                                .map(|(s, t)| text.trim()[s..t].to_string())
                                .filter(|t| {
                                    serde_json::from_str::<Value>(t).is_ok_and(|v| v.is_object())
                                })
                                .collect()
                        };
                        let description = if kept.is_empty() {
                            format!(
                                "dropped line {line}, which does not parse (Qwen Code skips it on resume)"
                            )
                        } else {
                            self.drop_lines.remove(&line);
                            self.replace.insert(line, kept.join("\n"));
                            format!(
                                "dropped what of line {line} is no whole record, and wrote the {} record(s) Qwen Code recovers from it on lines of their own",
                                kept.len()
                            )
                        };
                        let mut e = edit(f, action.name(), description, loc.clone(), f.ids.clone());
                        e.before = Some(before);
                        e.before_base64 = before_base64;
                        e.after = (!kept.is_empty()).then(|| kept.join("\n"));
                        edits.push((None, e));
                        dropped_corrupt.push((line, f));
                    }
                    Action::RemoveResult { message, part } => {
                        let Some((i, k)) = record_of(&loaded, &sent, conv, *message, *part) else {
                            log.left.push(Left::of(
                                f,
                                "the result's record is not one of its own line",
                            ));
                            continue;
                        };
                        let r = &loaded.records[i];
                        let v = tree.value[i].get_or_insert_with(|| r.value.clone());
                        let Some(parts) = v
                            .pointer_mut("/message/parts")
                            .and_then(Value::as_array_mut)
                        else {
                            continue;
                        };
                        if k >= parts.len() {
                            continue;
                        }
                        let removed = parts.remove(k);
                        let call = removed
                            .pointer("/functionResponse/id")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string();
                        let line = r.loc.line().unwrap_or(0);
                        if !parts.is_empty() {
                            edits.push((
                                Some(i),
                                edit(
                                    f,
                                    action.name(),
                                    format!("removed the tool result for `{call}` from line {line}: it answers no call"),
                                    r.loc.clone(),
                                    vec![call],
                                ),
                            ));
                            continue;
                        }
                        tree.dropped[i] = true;
                        tree.value[i] = None;
                        self.drop_lines.insert(line);
                        let mut ed = edit(
                            f,
                            action.name(),
                            format!(
                                "dropped the tool result for `{call}` (line {line}), which answers no call"
                            ),
                            r.loc.clone(),
                            vec![call],
                        );
                        ed.before = Some(records.read(&r.loc)?);
                        edits.push((None, ed));
                        if let Some(u) = r.uuid.clone() {
                            let up = tree.parent[i].clone();
                            for c in tree.children(&u) {
                                tree.parent[c] = up.clone();
                                edits.push((
                                    Some(c),
                                    edit(
                                        f,
                                        "relink",
                                        format!(
                                            "linked line {} to the dropped result's parent, so Qwen Code's walk still reaches what came before",
                                            loaded.records[c].loc.line().unwrap_or(0)
                                        ),
                                        loaded.records[c].loc.clone(),
                                        Vec::new(),
                                    ),
                                ));
                            }
                        }
                    }
                    Action::AnswerCall { message, part } => {
                        let Some((i, k)) = record_of(&loaded, &sent, conv, *message, *part) else {
                            log.left
                                .push(Left::of(f, "the call's record is not one of its own line"));
                            continue;
                        };
                        let Some(PartKind::ToolCall { id, name, .. }) =
                            conv.messages[*message].parts.get(*part).map(|p| &p.kind)
                        else {
                            continue;
                        };
                        let r = &loaded.records[i];
                        let line = r.loc.line().unwrap_or(0);
                        match self.policy.orphan_calls {
                            OrphanPolicy::Report => {
                                log.left
                                    .push(Left::of(f, "orphan-calls policy is `report`"));
                            }
                            OrphanPolicy::Drop => {
                                let v = tree.value[i].get_or_insert_with(|| r.value.clone());
                                let left = match v
                                    .pointer_mut("/message/parts")
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
                                        "the call is all its record holds: removing it would leave an empty model message",
                                    ));
                                    continue;
                                }
                                edits.push((
                                    Some(i),
                                    edit(
                                        f,
                                        action.name(),
                                        format!("removed the unanswered call `{id}` (`{name}`) from line {line}"),
                                        r.loc.clone(),
                                        vec![id.clone()],
                                    ),
                                ));
                            }
                            OrphanPolicy::Placeholder => {
                                let Some(cu) = r.uuid.clone() else {
                                    log.left.push(Left::of(
                                        f,
                                        "the call's record has no `uuid` to hang a result from",
                                    ));
                                    continue;
                                };
                                let under = tree
                                    .inserted
                                    .get(&i)
                                    .and_then(|v| v.last())
                                    .map(|(u, _)| u.clone())
                                    .unwrap_or(cu.clone());
                                let uuid = tree.new_uuid(&format!("{cu}/{id}"));
                                let field =
                                    |k: &str| r.value.get(k).cloned().unwrap_or(Value::Null);
                                let record = json!({
                                    "uuid": uuid,
                                    "parentUuid": under,
                                    "sessionId": field("sessionId"),
                                    "timestamp": field("timestamp"),
                                    "type": "tool_result",
                                    "cwd": field("cwd"),
                                    "version": field("version"),
                                    "message": {
                                        "role": "user",
                                        "parts": [{"functionResponse": {
                                            "id": id,
                                            "name": name,
                                            "response": {"error": CANCELLED},
                                        }}],
                                    },
                                    "toolCallResult": {"callId": id, "status": "cancelled"},
                                });
                                for c in tree.children(&under) {
                                    tree.parent[c] = Some(uuid.clone());
                                    edits.push((
                                        Some(c),
                                        edit(
                                            f,
                                            "relink",
                                            format!(
                                                "linked line {} to the result put in for `{id}`, so Qwen Code's walk goes through it",
                                                loaded.records[c].loc.line().unwrap_or(0)
                                            ),
                                            loaded.records[c].loc.clone(),
                                            vec![id.clone()],
                                        ),
                                    ));
                                }
                                let mut ed = edit(
                                    f,
                                    action.name(),
                                    format!(
                                        "answered the call `{id}` (`{name}`) with the result Qwen Code itself records for a call cancelled while it ran (`{CANCELLED}`), in a new record right after line {line}"
                                    ),
                                    r.loc.clone(),
                                    vec![id.clone()],
                                );
                                ed.synthesized = true;
                                ed.after = Some(record.to_string());
                                edits.push((None, ed));
                                tree.inserted.entry(i).or_default().push((uuid, record));
                            }
                        }
                    }
                    _ => log
                        .left
                        .push(Left::of(f, "not written in Qwen Code sessions")),
                }
            }
        }
        // A dropped line in the middle was most likely the parent of the
        // first record after it: link that record to the record before it.
        for (line, f) in dropped_corrupt {
            let Some(a) = loaded
                .records
                .iter()
                .position(|r| r.loc.line().is_some_and(|l| l > line))
            else {
                continue;
            };
            let Some(missing) = tree.parent[a].clone() else {
                continue;
            };
            if tree.uuids.contains(&missing) {
                continue;
            }
            let before = loaded.records[..a]
                .iter()
                .enumerate()
                .rev()
                .find(|(k, r)| !tree.dropped[*k] && r.uuid.is_some() && r.loc.line() != Some(line))
                .and_then(|(_, r)| r.uuid.clone());
            tree.parent[a] = before.clone();
            edits.push((
                Some(a),
                edit(
                    f,
                    "relink",
                    format!(
                        "linked line {} (its parent `{missing}` is in no line left) to {}, the record before the dropped line, so Qwen Code's walk reaches the history before it",
                        loaded.records[a].loc.line().unwrap_or(0),
                        match &before {
                            Some(b) => format!("`{b}`"),
                            None => "nothing (the start of the chain)".to_string(),
                        }
                    ),
                    loaded.records[a].loc.clone(),
                    Vec::new(),
                ),
            ));
        }
        for (i, r) in loaded.records.iter().enumerate() {
            if tree.dropped[i] || r.glued {
                continue;
            }
            if tree.parent[i] == r.parent && tree.value[i].is_none() {
                continue;
            }
            let Some(line) = r.loc.line() else { continue };
            let raw = records.read(&r.loc)?;
            let text = match &tree.value[i] {
                Some(v) => {
                    let mut v = v.clone();
                    if let Some(o) = v.as_object_mut() {
                        o.insert(
                            "parentUuid".into(),
                            tree.parent[i].clone().map_or(Value::Null, Value::String),
                        );
                    }
                    v.to_string()
                }
                None => with_parent(
                    &raw,
                    r.parent.as_deref(),
                    tree.parent[i].as_deref(),
                    &r.value,
                ),
            };
            self.replace.insert(line, text);
        }
        for (i, list) in &tree.inserted {
            if let Some(line) = loaded.records[*i].loc.line() {
                self.insert_after
                    .entry(line)
                    .or_default()
                    .extend(list.iter().map(|(_, v)| v.to_string()));
            }
        }
        for (at, mut e) in edits {
            if let Some(i) = at {
                let line = loaded.records[i].loc.line().unwrap_or(0);
                e.before = Some(records.read(&loaded.records[i].loc)?);
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
