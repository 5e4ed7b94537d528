//! The repaired copy of a Claude Code session: a copy the client resumes
//! whole. Edits are made on the record's own bytes (a `parentUuid` value,
//! a lone surrogate escape, a newline between glued records), a record is
//! dropped whole, and a missing tool result is inserted as a record of its
//! own, chained to its call; every other byte is copied as it is.
//!
//! After the planned edits, every record whose parent this repair removed
//! is re-linked to that parent's own parent (or, when that is gone too,
//! to the record before it in the copy), so no edit leaves a chain broken.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::OrphanCalls;
use crate::config::RepairPolicy as Policy;
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::format::records::record::as_lenient_readers_read;
use crate::model::chain::{ChainRecord, RecordKind};
use crate::model::{Conversation, Loc, PartKind};
use crate::source::Limits;
use crate::write::lines::Records;
use crate::write::{Edit, Log, PLACEHOLDER, Planned, Relink, Target, Writer};

pub fn supports(_: crate::model::Dialect, a: &Action) -> bool {
    matches!(
        a,
        Action::DropRecord { .. }
            | Action::RemoveResult { .. }
            | Action::AnswerCall { .. }
            | Action::Relink { .. }
            | Action::SplitLine { .. }
            | Action::ReplaceSurrogates { .. }
            | Action::DropThinking { .. }
            | Action::KeepReplaced { .. }
            | Action::SetMessageId { .. }
            | Action::DropBlock { .. }
            | Action::RenameCall { .. }
            | Action::ReplaceArguments { .. }
            | Action::ReplaceImage { .. }
            | Action::UnshareUuid { .. }
            | Action::ReplaceToolReference { .. }
            | Action::RenameTool { .. }
    )
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(CcWriter {
        input: t.input.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
        limits: t.limits,
        policy: *t.policy,
        relink: t.relink,
        plan: None,
    }))
}

/// What happens to one record (keyed by where it starts in the file).
#[derive(Default, Debug)]
struct RecEdit {
    drop: bool,
    parent: Option<Option<String>>,
    /// A new uuid: (the old, the new).
    uuid: Option<(String, String)>,
    surrogates: bool,
    /// The record names a member twice: written as the client reads it,
    /// each member once with its last value, before it is edited.
    as_read: bool,
    /// A new `message.id`: (the old, the new).
    message_id: Option<(String, String)>,
    /// Records written right after this one.
    insert_after: Vec<String>,
    /// Blocks of `message.content` replaced (the new block's JSON) or
    /// removed (`None`), by position.
    blocks: Vec<(usize, Option<String>)>,
}

#[derive(Default)]
struct Plan {
    recs: HashMap<u64, RecEdit>,
    /// Lines whose records go on lines of their own.
    split: HashSet<u64>,
    /// Lines to look at, with the byte ranges of their records.
    pieces: BTreeMap<u64, Vec<(u64, u64)>>,
}

pub struct CcWriter {
    input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    limits: Limits,
    policy: Policy,
    relink: Relink,
    plan: Option<Plan>,
}

/// The trees of the copy's parent links, as sets of uuids (union-find).
/// Every record re-linked here has no parent in the copy (its parent is
/// missing or removed), so its tree is its descendants: linking it under
/// a record of the same tree would make it its own ancestor.
#[derive(Default)]
struct Trees {
    id: HashMap<String, usize>,
    up: Vec<usize>,
}

impl Trees {
    fn node(&mut self, u: &str) -> usize {
        if let Some(&i) = self.id.get(u) {
            return i;
        }
        let i = self.up.len();
        self.up.push(i);
        self.id.insert(u.to_string(), i);
        i
    }

    fn root(&mut self, mut i: usize) -> usize {
        while self.up[i] != i {
            self.up[i] = self.up[self.up[i]];
            i = self.up[i];
        }
        i
    }

    fn join(&mut self, a: &str, b: &str) {
        let (a, b) = (self.node(a), self.node(b));
        let (a, b) = (self.root(a), self.root(b));
        self.up[a] = b;
    }

    fn same(&mut self, a: &str, b: &str) -> bool {
        let (a, b) = (self.node(a), self.node(b));
        self.root(a) == self.root(b)
    }
}

fn start_of(loc: &Loc) -> u64 {
    match loc {
        Loc::Line { start, .. } => *start,
        Loc::Row { .. } => u64::MAX,
    }
}

/// A slot of the file: a record read, or a line that did not parse.
struct Slot<'c> {
    loc: &'c Loc,
    rec: Option<&'c ChainRecord>,
}

impl Writer for CcWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        let Some(chain) = conv.chain.as_deref() else {
            return Err(Error::input(&self.input, "is not a Claude Code session"));
        };
        let mut records = Records::open(&self.input)?;
        let mut plan = Plan::default();
        let mut edits: Vec<Edit> = Vec::new();
        let by_start: HashMap<u64, &ChainRecord> = chain
            .records
            .iter()
            .map(|r| (start_of(&r.loc), r))
            .collect();
        // Every uuid in the file: a uuid this repair makes is none of them.
        let mut taken = Taken {
            uuids: chain
                .records
                .iter()
                .filter_map(|r| r.uuid.clone())
                .collect(),
            ..Taken::default()
        };
        // Every tool call id in the conversation: a call given an id of
        // its own gets none of them.
        let mut taken_ids: HashSet<String> = conv
            .messages
            .iter()
            .flat_map(|m| m.tool_calls().map(|(_, id, _, _)| id.to_string()))
            .collect();
        // Records to re-link, and the rule that asks it.
        let mut relink: HashMap<u64, &'static str> = HashMap::new();
        // The findings asking for those re-links, each once.
        let mut relink_asked: Vec<(&Planned<'_>, Vec<u64>)> = Vec::new();
        // The walk meets a parent cycle (report-only, a person's call).
        let cycle = chain
            .records
            .iter()
            .any(|r| matches!(r.link, crate::model::chain::Link::Cycle { .. }));
        let mut dropped_by: HashMap<u64, &'static str> = HashMap::new();
        let mut answered: Vec<(&ChainRecord, String, String, &Planned<'_>)> = Vec::new();
        // Blocks to remove with their record: (where, which, why, the
        // block is thinking).
        let mut thinking: Vec<(&Loc, usize, &Planned<'_>, bool)> = Vec::new();
        // Records whose parent a kept replaced record now is.
        let mut kept_parent: HashSet<u64> = HashSet::new();
        let mut kept_uuids: Vec<(String, Option<String>)> = Vec::new();
        // How many calls, and how many results, each tool call id has in
        // the conversation (counted once, for every call answered).
        let mut uses_of_id: HashMap<&str, (usize, usize)> = HashMap::new();
        for m in &conv.messages {
            for (_, id, _, _) in m.tool_calls() {
                uses_of_id.entry(id).or_default().0 += 1;
            }
            for (_, id, _, _) in m.tool_results() {
                uses_of_id.entry(id).or_default().1 += 1;
            }
        }
        let entry = |rule: &'static str, action: &'static str, description: String, loc: &Loc| {
            Edit::new(rule, &conv.id, action, description, loc.clone())
        };
        // A `parentUuid` edit: from one value (a uuid, or null) to another.
        let relink_entry =
            |rule: &'static str, what: String, loc: &Loc, from: Option<&str>, to: Option<&str>| {
                let shown = |u: Option<&str>| u.map_or("null".to_string(), |u| format!("`{u}`"));
                let json = |u: Option<&str>| match u {
                    Some(u) => format!("\"parentUuid\":{}", json_string(u)),
                    None => "\"parentUuid\":null".to_string(),
                };
                let mut e = entry(
                    rule,
                    "relink",
                    format!("{what}: `parentUuid` {} → {}", shown(from), shown(to)),
                    loc,
                );
                e.before = Some(json(from));
                e.after = Some(json(to));
                e
            };
        for p in planned {
            let rule = p.finding.rule;
            for a in &p.fix.actions {
                match a {
                    Action::DropRecord { loc } => {
                        let mut e = entry(
                            rule,
                            "drop-record",
                            format!(
                                "dropped line {} (kept verbatim here)",
                                loc.line().unwrap_or(0)
                            ),
                            loc,
                        );
                        (e.before, e.before_base64) =
                            records.read_verbatim(loc).map(|(t, raw)| (Some(t), raw))?;
                        edits.push(e);
                        plan.recs.entry(start_of(loc)).or_default().drop = true;
                        dropped_by.insert(start_of(loc), rule);
                    }
                    Action::RemoveResult { message, part } => {
                        let m = &conv.messages[*message];
                        let loc = m.part_loc(*part);
                        let alone = m.parts.iter().filter(|q| &q.loc == loc).count() == 1;
                        if !alone {
                            log.left
                                .push(left(p, conv, "the record holds more than this result"));
                            continue;
                        }
                        let mut e = entry(
                            rule,
                            "remove-result",
                            format!(
                                "removed the record on line {} holding only the stray tool result (kept verbatim here)",
                                loc.line().unwrap_or(0)
                            ),
                            loc,
                        );
                        (e.before, e.before_base64) =
                            records.read_verbatim(loc).map(|(t, raw)| (Some(t), raw))?;
                        e.ids = p.finding.ids.clone();
                        edits.push(e);
                        plan.recs.entry(start_of(loc)).or_default().drop = true;
                        dropped_by.insert(start_of(loc), rule);
                    }
                    Action::AnswerCall { message, part } => {
                        if self.policy.orphan_calls == OrphanCalls::Drop {
                            log.left.push(left(p, conv, "dropping calls is not done in Claude Code sessions: the result is inserted"));
                            continue;
                        }
                        if cycle {
                            log.left.push(left(p, conv, "the chain the client walks holds a parent cycle: a new record would move the leaf, and with it where the client breaks the cycle"));
                            continue;
                        }
                        let m = &conv.messages[*message];
                        let PartKind::ToolCall { id, name, .. } = &m.parts[*part].kind else {
                            continue;
                        };
                        // A result answers a call by its id: with two calls
                        // of that id (`duplicate-tool-call-id`), or a result
                        // of that id already in the file, an inserted one
                        // may answer the other call, and the next repair
                        // would insert another.
                        let (calls_of_id, results_of_id) =
                            uses_of_id.get(id.as_str()).copied().unwrap_or_default();
                        if calls_of_id > 1 || results_of_id > 0 {
                            log.left.push(left(p, conv, "another call or a result in the file has this call's id: a result inserted for it could answer the other call instead (see `duplicate-tool-call-id`)"));
                            continue;
                        }
                        let Some(rec) = by_start.get(&start_of(m.part_loc(*part))) else {
                            log.left
                                .push(left(p, conv, "the call is on no record of the chain"));
                            continue;
                        };
                        // A record without a uuid (the client sends its
                        // call with the rest of the reply, merged by
                        // `message.id`) is answered on a side branch off
                        // another record of the reply (below).
                        answered.push((rec, id.clone(), name.clone(), p));
                    }
                    Action::Relink { loc } => {
                        relink.insert(start_of(loc), rule);
                        match relink_asked.last_mut() {
                            Some((q, locs)) if std::ptr::eq(*q, p) => locs.push(start_of(loc)),
                            _ => relink_asked.push((p, vec![start_of(loc)])),
                        }
                    }
                    Action::SplitLine { loc } => {
                        if let Some(l) = loc.line() {
                            plan.split.insert(l);
                            let mut e = entry(
                                rule,
                                "split-line",
                                format!(
                                    "wrote each record glued on line {} on a line of its own",
                                    l
                                ),
                                loc,
                            );
                            e.before = Some(records.read(loc)?);
                            edits.push(e);
                        }
                    }
                    Action::ReplaceSurrogates { loc } => {
                        plan.recs.entry(start_of(loc)).or_default().surrogates = true;
                        let mut e = entry(
                            rule,
                            "replace-surrogates",
                            format!(
                                "replaced the lone surrogate escapes on line {} with `\\ufffd`",
                                loc.line().unwrap_or(0)
                            ),
                            loc,
                        );
                        // The exact bytes, in base64 when they are not
                        // UTF-8 (the record can be damaged otherwise too).
                        let bytes = records.read_bytes(loc)?;
                        e.after =
                            Some(String::from_utf8_lossy(&fix_surrogates(&bytes)).into_owned());
                        (e.before, e.before_base64) = {
                            let (t, raw) = crate::write::verbatim(&bytes);
                            (Some(t), raw)
                        };
                        edits.push(e);
                    }
                    Action::SetMessageId { loc, id } => {
                        let Some(old) = by_start
                            .get(&start_of(loc))
                            .and_then(|r| r.message_id.clone())
                        else {
                            continue;
                        };
                        let bytes = records.read_bytes(loc)?;
                        let Some((s, e)) = message_id_at(&bytes, &old) else {
                            log.left.push(left(
                                p,
                                conv,
                                "the record's `message.id` is not written as it reads (escapes, or more than one such value): it is not rewritten",
                            ));
                            continue;
                        };
                        let (before, before_base64) =
                            crate::write::verbatim(&[b"\"id\":", &bytes[s..e]].concat());
                        plan.recs.entry(start_of(loc)).or_default().message_id =
                            Some((old.clone(), id.clone()));
                        let mut e = entry(
                            rule,
                            "set-message-id",
                            format!(
                                "gave line {} the `message.id` of the reply it belongs to: `{old}` → `{id}`",
                                loc.line().unwrap_or(0)
                            ),
                            loc,
                        );
                        (e.before, e.before_base64) = (Some(before), before_base64);
                        e.after = Some(format!("\"id\":{}", serde_json::json!(id)));
                        edits.push(e);
                    }
                    Action::RenameCall {
                        message,
                        part,
                        result,
                    } => {
                        let m = &conv.messages[*message];
                        let PartKind::ToolCall { id, .. } = &m.parts[*part].kind else {
                            continue;
                        };
                        // Which use of the id this call is.
                        let uses = conv
                            .messages
                            .iter()
                            .enumerate()
                            .flat_map(|(mi, mm)| {
                                mm.tool_calls().map(move |(pi, i, _, _)| ((mi, pi), i))
                            })
                            .filter(|&(at, i)| i == id && at <= (*message, *part))
                            .count();
                        let result = *result;
                        let new = fresh_call_id(id, uses, &mut taken_ids);
                        let mut parts = vec![(*message, *part, "tool_use", "id")];
                        if let Some((mi, pi)) = result {
                            parts.push((mi, pi, "tool_result", "tool_use_id"));
                        }
                        let mut planned_here = Vec::new();
                        for (mi, pi, ty, key) in parts {
                            let q = &conv.messages[mi].parts[pi];
                            let Some(crate::model::Slot::Item("content", k)) = q.slot else {
                                break;
                            };
                            let text = records.read(&q.loc)?;
                            let Some((before, after)) = block_edit(&text, k, |b| {
                                (b["type"] == ty && b[key] == id.as_str()).then(|| {
                                    b[key] = Value::String(new.clone());
                                })
                            }) else {
                                break;
                            };
                            planned_here.push((q.loc.clone(), k, before, after, ty));
                        }
                        if planned_here.len() != 1 + usize::from(result.is_some()) {
                            log.left.push(left(
                                p,
                                conv,
                                "a block of the call or of its result is not where it was read",
                            ));
                            continue;
                        }
                        for (loc, k, before, after, ty) in planned_here {
                            let line = loc.line().unwrap_or(0);
                            let what = if ty == "tool_use" {
                                format!(
                                    "gave the call in block {k} of line {line}, which reused the id `{id}` of an earlier call, the id `{new}`"
                                )
                            } else {
                                format!(
                                    "gave the result in block {k} of line {line}, which answers that call, its id `{new}`"
                                )
                            };
                            let mut e = entry(rule, "rename-call", what, &loc);
                            e.before = Some(before);
                            e.after = Some(after.clone());
                            e.ids = vec![id.clone(), new.clone()];
                            edits.push(e);
                            plan.recs
                                .entry(start_of(&loc))
                                .or_default()
                                .blocks
                                .push((k, Some(after)));
                        }
                    }
                    Action::ReplaceArguments {
                        message,
                        part,
                        with,
                    } => {
                        let q = &conv.messages[*message].parts[*part];
                        let Some(crate::model::Slot::Item("content", k)) = q.slot else {
                            log.left.push(left(
                                p,
                                conv,
                                "the call is not a block of its record's content",
                            ));
                            continue;
                        };
                        let Ok(with_value) = serde_json::from_str::<Value>(with) else {
                            continue;
                        };
                        let text = records.read(&q.loc)?;
                        let Some((before, after)) = block_edit(&text, k, |b| {
                            (b["type"] == "tool_use" && !b["input"].is_object()).then(|| {
                                b["input"] = with_value.clone();
                            })
                        }) else {
                            log.left.push(left(
                                p,
                                conv,
                                "the call's block is not where it was read",
                            ));
                            continue;
                        };
                        let line = q.loc.line().unwrap_or(0);
                        let mut e = entry(
                            rule,
                            "replace-arguments",
                            format!(
                                "replaced the `input` of the call in block {k} of line {line}, which is no object, with `{with}` (the block as it was is kept here)"
                            ),
                            &q.loc,
                        );
                        e.before = Some(before);
                        e.after = Some(after.clone());
                        edits.push(e);
                        plan.recs
                            .entry(start_of(&q.loc))
                            .or_default()
                            .blocks
                            .push((k, Some(after)));
                    }
                    Action::ReplaceImage {
                        loc,
                        block,
                        nth,
                        why,
                    } => {
                        let marker = format!(
                            "[Image removed by chatfsck repair: {why}. The image is kept in the repair log.]"
                        );
                        let text = records.read(loc)?;
                        // A block edited already (another image of the same
                        // tool result) is edited further.
                        let base = plan
                            .recs
                            .get(&start_of(loc))
                            .and_then(|x| x.blocks.iter().rev().find(|(b, _)| b == block))
                            .and_then(|(_, n)| n.clone());
                        // Which item of a tool result's content the image
                        // is, counted in the record as read: once an earlier
                        // image of the block is text, counting the images
                        // left would name the wrong one, or none.
                        let item = content_blocks(text.as_bytes()).and_then(|(_, blocks)| {
                            let (s, e) = *blocks.get(*block)?;
                            let v: Value = serde_json::from_str(&text[s..e]).ok()?;
                            v["content"]
                                .as_array()?
                                .iter()
                                .enumerate()
                                .filter(|(_, x)| x["type"] == "image")
                                .nth(*nth)
                                .map(|(i, _)| i)
                        });
                        let changed = |b: &mut Value| {
                            let text_block = serde_json::json!({"type": "text", "text": marker});
                            if b["type"] == "image" && *nth == 0 {
                                *b = text_block;
                                return Some(());
                            }
                            if b["type"] != "tool_result" {
                                return None;
                            }
                            let img = b["content"].as_array_mut()?.get_mut(item?)?;
                            if img["type"] != "image" {
                                return None;
                            }
                            *img = text_block;
                            Some(())
                        };
                        let edited = match &base {
                            Some(base) => edit_block_json(base, changed),
                            None => block_edit(&text, *block, changed),
                        };
                        let Some((before, after)) = edited else {
                            log.left
                                .push(left(p, conv, "the image is not where it was read"));
                            continue;
                        };
                        let line = loc.line().unwrap_or(0);
                        let mut e = entry(
                            rule,
                            "replace-image",
                            format!(
                                "replaced the image in content[{block}] on line {line} with a text block saying it was removed: {why} (the block as it was is kept here)"
                            ),
                            loc,
                        );
                        e.before = Some(before);
                        e.after = Some(after.clone());
                        edits.push(e);
                        plan.recs
                            .entry(start_of(loc))
                            .or_default()
                            .blocks
                            .push((*block, Some(after)));
                    }
                    Action::ReplaceToolReference {
                        loc,
                        block,
                        item,
                        why,
                    } => {
                        let marker = format!(
                            "[Tool reference removed by chatfsck repair: {why}. The reference is kept in the repair log.]"
                        );
                        let changed = |b: &mut Value| {
                            if b["type"] != "tool_result" {
                                return None;
                            }
                            let r = b["content"].as_array_mut()?.get_mut(*item)?;
                            if r["type"] != "tool_reference" {
                                return None;
                            }
                            *r = serde_json::json!({"type": "text", "text": marker});
                            Some(())
                        };
                        let edited = match edited_block(&plan, loc, *block) {
                            Some(base) => edit_block_json(&base, changed),
                            None => block_edit(&records.read(loc)?, *block, changed),
                        };
                        let Some((before, after)) = edited else {
                            log.left.push(left(
                                p,
                                conv,
                                "the tool reference is not where it was read",
                            ));
                            continue;
                        };
                        let line = loc.line().unwrap_or(0);
                        let mut e = entry(
                            rule,
                            "replace-tool-reference",
                            format!(
                                "replaced the tool reference {item} of the tool result in content[{block}] on line {line} with a text block saying it was removed: {why} (the block as it was is kept here)"
                            ),
                            loc,
                        );
                        e.before = Some(before);
                        e.after = Some(after.clone());
                        edits.push(e);
                        plan.recs
                            .entry(start_of(loc))
                            .or_default()
                            .blocks
                            .push((*block, Some(after)));
                    }
                    Action::RenameTool {
                        message,
                        part,
                        name,
                    } => {
                        let q = &conv.messages[*message].parts[*part];
                        let Some(crate::model::Slot::Item("content", k)) = q.slot else {
                            log.left.push(left(
                                p,
                                conv,
                                "the call is not a block of its record's content",
                            ));
                            continue;
                        };
                        let changed = |b: &mut Value| {
                            if b["type"] != "tool_use" || !b["name"].is_string() {
                                return None;
                            }
                            b["name"] = Value::String(name.clone());
                            Some(())
                        };
                        let edited = match edited_block(&plan, &q.loc, k) {
                            Some(base) => edit_block_json(&base, changed),
                            None => block_edit(&records.read(&q.loc)?, k, changed),
                        };
                        let Some((before, after)) = edited else {
                            log.left.push(left(
                                p,
                                conv,
                                "the call's block is not where it was read",
                            ));
                            continue;
                        };
                        let line = q.loc.line().unwrap_or(0);
                        let mut e = entry(
                            rule,
                            "rename-tool",
                            format!(
                                "gave the call in block {k} of line {line} the name `{}`, in place of one the API refuses (the block as it was is kept here; its result answers it by id, which is kept)",
                                crate::escape::preview(name, 60)
                            ),
                            &q.loc,
                        );
                        e.before = Some(before);
                        e.after = Some(after.clone());
                        if let Some((_, id, _, _)) = conv.messages[*message]
                            .tool_calls()
                            .find(|(pi, ..)| *pi == *part)
                        {
                            e.ids = vec![id.to_string()];
                        }
                        edits.push(e);
                        plan.recs
                            .entry(start_of(&q.loc))
                            .or_default()
                            .blocks
                            .push((k, Some(after)));
                    }
                    Action::UnshareUuid { earlier, later } => {
                        let (Some(a), Some(b)) = (
                            by_start.get(&start_of(earlier)),
                            by_start.get(&start_of(later)),
                        ) else {
                            continue;
                        };
                        let Some(old) = a.uuid.clone() else { continue };
                        // The records written between the two that name the
                        // uuid as their parent meant the earlier record.
                        let between: Vec<&ChainRecord> = chain
                            .records
                            .iter()
                            .filter(|r| {
                                start_of(&r.loc) > start_of(earlier)
                                    && start_of(&r.loc) < start_of(later)
                                    && r.parent.as_deref() == Some(old.as_str())
                            })
                            .collect();
                        let busy = |l: &Loc| {
                            plan.recs
                                .get(&start_of(l))
                                .is_some_and(|e| e.drop || e.parent.is_some() || e.uuid.is_some())
                        };
                        if busy(earlier) || between.iter().any(|r| busy(&r.loc)) {
                            log.left.push(left(
                                p,
                                conv,
                                "another edit of this repair changes one of the records",
                            ));
                            continue;
                        }
                        let new = fresh_uuid(&old, "kept", &mut taken);
                        let (al, bl) = (a.loc.line().unwrap_or(0), b.loc.line().unwrap_or(0));
                        let mut e = entry(
                            rule,
                            "unshare-uuid",
                            format!(
                                "gave line {al}, whose uuid line {bl} reuses to close a parent cycle, the uuid `{new}`: both records are sent"
                            ),
                            earlier,
                        );
                        e.before = Some(format!("\"uuid\":\"{old}\""));
                        e.after = Some(format!("\"uuid\":\"{new}\""));
                        e.ids = vec![old.clone()];
                        edits.push(e);
                        plan.recs.entry(start_of(earlier)).or_default().uuid =
                            Some((old.clone(), new.clone()));
                        for r in between {
                            let rl = r.loc.line().unwrap_or(0);
                            edits.push(relink_entry(
                                rule,
                                format!("re-linked line {rl} to line {al}, its parent, under its new uuid"),
                                &r.loc,
                                Some(&old),
                                Some(&new),
                            ));
                            plan.recs.entry(start_of(&r.loc)).or_default().parent =
                                Some(Some(new.clone()));
                            kept_parent.insert(start_of(&r.loc));
                        }
                        kept_uuids.push((new, a.parent.clone()));
                    }
                    Action::DropThinking { loc, block } => thinking.push((loc, *block, p, true)),
                    Action::DropBlock { loc, block } => thinking.push((loc, *block, p, false)),
                    Action::KeepReplaced { earlier, later } => {
                        let (Some(a), Some(b)) = (
                            by_start.get(&start_of(earlier)),
                            by_start.get(&start_of(later)),
                        ) else {
                            continue;
                        };
                        let Some(old) = a.uuid.clone() else { continue };
                        let text = records.read(earlier)?;
                        let tools = serde_json::from_str::<Value>(&text).ok().is_none_or(|v| {
                            v["message"]["content"].as_array().is_some_and(|c| {
                                c.iter().any(|b| {
                                    matches!(b["type"].as_str(), Some("tool_use" | "tool_result"))
                                })
                            })
                        });
                        let busy = |l: &Loc| {
                            plan.recs
                                .get(&start_of(l))
                                .is_some_and(|e| e.drop || e.parent.is_some() || e.uuid.is_some())
                        };
                        if tools {
                            log.left.push(left(
                                p,
                                conv,
                                "the earlier record holds a tool call or result, which keeping both would send twice",
                            ));
                            continue;
                        }
                        if !b.results.is_empty() {
                            // The later record answers a call: chained
                            // before it, the earlier would come between
                            // the call and its result, and the client
                            // would answer the call with a placeholder.
                            log.left.push(left(
                                p,
                                conv,
                                "the later record holds a tool result: the earlier, kept before it, would come between the call and its result",
                            ));
                            continue;
                        }
                        if busy(earlier) || busy(later) {
                            log.left.push(left(
                                p,
                                conv,
                                "another edit of this repair changes one of the two records",
                            ));
                            continue;
                        }
                        let new = fresh_uuid(&old, "kept", &mut taken);
                        let (al, bl) = (a.loc.line().unwrap_or(0), b.loc.line().unwrap_or(0));
                        let mut e = entry(
                            rule,
                            "keep-replaced",
                            format!(
                                "kept line {al}, which line {bl} replaced: line {al} gets the uuid `{new}` and line {bl} is chained to it, so both are sent"
                            ),
                            earlier,
                        );
                        e.before = Some(format!("\"uuid\":\"{old}\""));
                        e.after = Some(format!("\"uuid\":\"{new}\""));
                        e.ids = vec![old.clone()];
                        edits.push(e);
                        edits.push(relink_entry(
                            rule,
                            format!("re-linked line {bl} to the kept line {al}"),
                            later,
                            b.parent.as_deref(),
                            Some(&new),
                        ));
                        plan.recs.entry(start_of(earlier)).or_default().uuid =
                            Some((old, new.clone()));
                        plan.recs.entry(start_of(later)).or_default().parent =
                            Some(Some(new.clone()));
                        kept_parent.insert(start_of(later));
                        kept_uuids.push((new, a.parent.clone()));
                    }
                    _ => {}
                }
            }
        }
        // Thinking blocks: a record holding only the block goes whole.
        for (loc, block, p, is_thinking) in thinking {
            let rule = p.finding.rule;
            let (text, raw) = records.read_verbatim(loc)?;
            // Read as the client reads it: lone surrogates as U+FFFD.
            let value = serde_json::from_slice::<Value>(&fix_surrogates(text.as_bytes())).ok();
            let content = value
                .as_ref()
                .and_then(|v| v["message"]["content"].as_array());
            let blocks = content.map(Vec::len);
            // A blank text block beside other blocks: taken out of the
            // record's content, every other block kept as it is.
            let blank = content.and_then(|c| c.get(block)).is_some_and(|b| {
                b["type"] == "text" && b["text"].as_str().is_some_and(|t| t.trim().is_empty())
            });
            if blank && blocks.is_some_and(|n| n > 1) && !is_thinking {
                let Some((before, _)) = block_edit(&text, block, |_| Some(())) else {
                    log.left
                        .push(left(p, conv, "the block is not where it was read"));
                    continue;
                };
                let line = loc.line().unwrap_or(0);
                let mut e = entry(
                    rule,
                    "drop-block",
                    format!(
                        "removed the blank text block {block} from line {line}; the record's other blocks are kept (the block is kept here)"
                    ),
                    loc,
                );
                e.before = Some(before);
                edits.push(e);
                plan.recs
                    .entry(start_of(loc))
                    .or_default()
                    .blocks
                    .push((block, None));
                continue;
            }
            if blocks != Some(1) {
                log.left.push(left(
                    p,
                    conv,
                    "the block shares its record with other blocks; removing it would rewrite the record",
                ));
                continue;
            }
            let line = loc.line().unwrap_or(0);
            let mut e = if is_thinking {
                entry(
                    rule,
                    "drop-thinking",
                    format!(
                        "removed the record on line {line} holding only thinking block {block}, whose signature the API refuses (its text is kept here)"
                    ),
                    loc,
                )
            } else {
                entry(
                    rule,
                    "drop-block",
                    if blank {
                        format!(
                            "removed the record on line {line} holding only the blank text block {block} (kept here)"
                        )
                    } else if let Some(ty) = content
                        .and_then(|c| c.get(block))
                        .and_then(|b| b["type"].as_str())
                        .filter(|t| {
                            matches!(*t, "server_tool_use" | "mcp_tool_use")
                                || t.ends_with("_tool_result")
                        })
                    {
                        format!(
                            "removed the record on line {line} holding only the `{ty}` block {block}, one half of a server tool's pair the request cannot carry in one message (kept here)"
                        )
                    } else {
                        format!(
                            "removed the record on line {line} holding only content block {block}, whose `type` is missing or none the API knows (kept here)"
                        )
                    },
                    loc,
                )
            };
            (e.before, e.before_base64) = (Some(text), raw);
            edits.push(e);
            plan.recs.entry(start_of(loc)).or_default().drop = true;
            dropped_by.insert(start_of(loc), rule);
        }
        // The copy's records, in file order.
        let mut slots: Vec<Slot<'_>> = chain
            .records
            .iter()
            .map(|r| Slot {
                loc: &r.loc,
                rec: Some(r),
            })
            .chain(conv.corrupt.iter().map(|c| Slot {
                loc: &c.loc,
                rec: None,
            }))
            .collect();
        slots.sort_by_key(|s| start_of(s.loc));
        // What the copy drops (every drop is planned by now).
        let dropped_set: HashSet<u64> = plan
            .recs
            .iter()
            .filter(|(_, e)| e.drop)
            .map(|(k, _)| *k)
            .collect();
        let dropped = |s: &Slot<'_>| dropped_set.contains(&start_of(s.loc));
        // Of the records the copy keeps, the last with each uuid: the one
        // the client takes for that uuid.
        let mut last_kept: HashMap<&str, u64> = HashMap::new();
        for s in &slots {
            if let Some(u) = s.rec.and_then(|r| r.uuid.as_deref())
                && !dropped(s)
            {
                last_kept.insert(u, start_of(s.loc));
            }
        }
        let kept_record = |u: &str| last_kept.get(u).and_then(|k| by_start.get(k)).copied();
        // Inserted results, after their call's record.
        let mut inserted_after: HashMap<u64, Vec<(String, String)>> = HashMap::new();
        let mut reparent: HashMap<String, String> = HashMap::new();
        // Results on a side branch: (their uuid, their parent's).
        let mut side_results: Vec<(String, String)> = Vec::new();
        for (rec, id, name, p) in &answered {
            let rule = p.finding.rule;
            let text = records.read(&rec.loc)?;
            // Chained to the call's record; or, for a record without a
            // uuid, off a record of the same reply the copy keeps (its
            // parent, else the last before it in the file), where the
            // client collects the reply's results.
            let (anchor, under_call) = match &rec.uuid {
                Some(u) => (u.clone(), true),
                None => {
                    // A record the client takes for its uuid, of this reply.
                    let of_the_reply = |r: &ChainRecord| {
                        r.message_id.is_some()
                            && r.message_id == rec.message_id
                            && r.kind != RecordKind::Meta
                            && r.uuid
                                .as_deref()
                                .and_then(kept_record)
                                .is_some_and(|k| std::ptr::eq(k, r))
                    };
                    let parent = rec
                        .parent
                        .as_deref()
                        .and_then(kept_record)
                        .filter(|r| of_the_reply(r));
                    let before = || {
                        chain
                            .records
                            .iter()
                            .rev()
                            .filter(|r| start_of(&r.loc) < start_of(&rec.loc))
                            .find(|r| of_the_reply(r))
                    };
                    match parent.or_else(before).and_then(|r| r.uuid.clone()) {
                        Some(u) => (u, false),
                        None => {
                            log.left.push(left(p, conv, "the call's record has no uuid, and the copy keeps no record of its reply that has one: no result record can be chained to it"));
                            continue;
                        }
                    }
                }
            };
            let new_uuid = fresh_uuid(&anchor, id, &mut taken);
            let record = result_record(&text, &anchor, &new_uuid, id).map_err(|e| {
                Error::input(
                    &self.input,
                    format!(
                        "line {} cannot be answered: {e}",
                        rec.loc.line().unwrap_or(0)
                    ),
                )
            })?;
            let mut e = entry(
                rule,
                "answer-call",
                format!(
                    "inserted an `is_error` tool_result record for `{id}` (`{name}`) after line {}, {}",
                    rec.loc.line().unwrap_or(0),
                    if under_call {
                        "chained to the call"
                    } else {
                        "chained to a record of the same reply (the call's record has no uuid), where the client collects the reply's results"
                    }
                ),
                &rec.loc,
            );
            e.after = Some(record.clone());
            e.synthesized = true;
            e.ids = vec![id.clone()];
            edits.push(e);
            inserted_after
                .entry(start_of(&rec.loc))
                .or_default()
                .push((new_uuid.clone(), record));
            // The record the resume walks after the call now follows the
            // result.
            if under_call {
                reparent.insert(anchor, new_uuid);
            } else {
                side_results.push((new_uuid, anchor));
            }
        }
        // Parents: what is in the copy, and where a link must go.
        let mut present: HashSet<&str> = HashSet::new();
        let mut parent_of_dropped: HashMap<&str, Option<&str>> = HashMap::new();
        for s in &slots {
            if let Some(r) = s.rec
                && let Some(u) = r.uuid.as_deref()
            {
                if dropped(s) {
                    parent_of_dropped.insert(u, r.parent.as_deref());
                } else if r.kind != RecordKind::Meta {
                    // The client does not look a parent up among records
                    // of other types (a snapshot, a summary, a damaged
                    // `type`): such a parent is missing to it.
                    present.insert(u);
                }
            }
        }
        let inserted: HashSet<String> = inserted_after
            .values()
            .flatten()
            .map(|(u, _)| u.clone())
            .collect();
        // The copy's trees before any re-link: a re-link that would make a
        // record its own ancestor is never made.
        // Of records sharing a uuid, the later is the one the client keeps.
        let mut parent_of: HashMap<&str, Option<&str>> = HashMap::new();
        for s in &slots {
            if let Some(r) = s.rec
                && let Some(u) = &r.uuid
                && !dropped(s)
            {
                parent_of.insert(u, r.parent.as_deref());
            }
        }
        let mut trees = Trees::default();
        for (u, p) in &parent_of {
            trees.node(u);
            if let Some(p) = p.filter(|p| present.contains(*p) || inserted.contains(*p)) {
                trees.join(u, p);
            }
        }
        for (call, result) in &reparent {
            trees.join(result, call);
        }
        for (result, parent) in &side_results {
            trees.join(result, parent);
        }
        for (new, parent) in &kept_uuids {
            present.insert(new);
            trees.node(new);
            if let Some(p) = parent.as_deref().filter(|p| present.contains(p)) {
                trees.join(new, p);
            }
        }
        // The record the client bridges a record with a missing parent to:
        // its own walk's, or, for a record a later one with its uuid
        // replaces, that one's (the copy may drop the later).
        let mut last_of: HashMap<&str, usize> = HashMap::new();
        for (i, r) in chain.records.iter().enumerate() {
            if let Some(u) = r.uuid.as_deref() {
                last_of.insert(u, i);
            }
        }
        let bridged_to = |r: &ChainRecord| -> Option<usize> {
            let walked = match (r.unreached, r.uuid.as_deref()) {
                (crate::model::chain::Unreached::Replaced, Some(u)) => {
                    &chain.records[*last_of.get(u)?]
                }
                _ => r,
            };
            match walked.link {
                crate::model::chain::Link::Bridged { to, .. } => Some(to),
                crate::model::chain::Link::Cycle {
                    older: Some((k, gap)),
                    ..
                } if gap <= crate::model::chain::BRIDGE_MS => Some(k),
                _ => None,
            }
        };
        // A removed record whose parent is missing leads, for the client,
        // where its bridge goes: the walk past it follows that.
        for s in &slots {
            if let Some(r) = s.rec
                && dropped(s)
                && let Some(u) = r.uuid.as_deref()
                && r.parent
                    .as_deref()
                    .is_some_and(|p| !present.contains(p) && !parent_of_dropped.contains_key(p))
                && let Some(k) = bridged_to(r)
                && let Some(b) = chain.records[k].uuid.as_deref()
            {
                parent_of_dropped.insert(u, Some(b));
            }
        }
        // A record whose parent this repair removes is linked past it, as
        // the client walked through it. Decided before any other re-link:
        // one made earlier in file order (a dangling record's link to the
        // record before it, say) could otherwise take a record of the tree
        // this one joins, and the link past the removed record, refused as
        // a cycle, would go elsewhere and cut what the input's resume sent.
        let mut past_removed: HashMap<u64, &str> = HashMap::new();
        for s in &slots {
            let key = start_of(s.loc);
            let Some(r) = s.rec else {
                continue;
            };
            let Some(own) = r.uuid.as_deref().filter(|u| !u.is_empty()) else {
                continue;
            };
            if dropped(s)
                || !r.kind.is_linkable()
                || kept_parent.contains(&key)
                || r.subtype.as_deref() == Some("compact_boundary")
                || matches!(r.link, crate::model::chain::Link::Cycle { .. })
            {
                continue;
            }
            let Some(p) = r.parent.as_deref() else {
                continue;
            };
            if reparent.contains_key(p) || present.contains(p) || inserted.contains(p) {
                continue;
            }
            let Some(up) = parent_of_dropped.get(p).copied() else {
                continue;
            };
            let Some(u) = kept_above(up, &present, &parent_of_dropped) else {
                continue;
            };
            if r.unreached == crate::model::chain::Unreached::Replaced {
                // The client never loads it (a later record with its uuid
                // replaces it): its link joins no tree, and the later
                // record's, which shares its uuid, tells nothing of it.
                past_removed.insert(key, u);
            } else if !trees.same(u, own) {
                trees.join(own, u);
                past_removed.insert(key, u);
            }
        }
        // The tool calls of each reply (records sharing a `message.id`,
        // which the client sends as one message); where the first kept
        // record answering each call is.
        let mut calls_of_reply: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut answered_at: HashMap<&str, u64> = HashMap::new();
        for s in &slots {
            let Some(r) = s.rec.filter(|_| !dropped(s)) else {
                continue;
            };
            if let Some(m) = r.message_id.as_deref() {
                calls_of_reply
                    .entry(m)
                    .or_default()
                    .extend(r.calls.iter().map(String::as_str));
            }
            for k in &r.results {
                answered_at.entry(k).or_insert(start_of(s.loc));
            }
        }
        // The records this repair re-links.
        let mut relinked: HashSet<u64> = HashSet::new();
        // The records before, per kind, newest last: main chain and
        // sidechain records are never linked to each other.
        let mut prevs: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        for s in &slots {
            let key = start_of(s.loc);
            if dropped(s) {
                continue;
            }
            let Some(r) = s.rec else {
                continue;
            };
            let prev = &mut prevs[usize::from(r.sidechain)];
            let own = r.uuid.as_deref().unwrap_or("");
            // Whether a record linked under `c` would leave one of the
            // calls of `c`'s reply without its result: a result written
            // before this record, in another record, sits on another
            // branch, and the client's walk through `c` would not send it.
            let opens_a_call = |c: &str| {
                let Some(c) = kept_record(c) else {
                    return false;
                };
                let own_calls: Vec<&str>;
                let calls = match c.message_id.as_deref().and_then(|m| calls_of_reply.get(m)) {
                    Some(calls) => calls,
                    None => {
                        own_calls = c.calls.iter().map(String::as_str).collect();
                        &own_calls
                    }
                };
                calls.iter().any(|k| {
                    answered_at.get(k).is_some_and(|&at| at < key)
                        && !r.results.iter().any(|x| x == k)
                })
            };
            // Whether the record of uuid `c` is newer than this one, when
            // links follow time (`Relink::AsBridged`). The client's leaf is
            // the newest descendant of the last row: a record linked under
            // a newer one puts that one's branch ahead of its own, and the
            // walk can start above it.
            // A record whose time cannot be read (a damaged `timestamp`)
            // may be newer: it is passed over too.
            let by_time = self.relink == Relink::AsBridged;
            let newer = |c: &str| {
                by_time
                    && match (kept_record(c).map(|c| c.timestamp_ms), r.timestamp_ms) {
                        (Some(Some(t)), Some(own)) => t > own,
                        (Some(None), Some(_)) => true,
                        _ => false,
                    }
            };
            // The newest record before this one that does not descend
            // from it, would leave no call without its result and, when
            // links follow time, is not newer than it (and whether a later
            // one had to be passed over).
            let before = |prev: &[String], trees: &mut Trees| {
                let mut passed = false;
                for c in prev.iter().rev() {
                    if (own.is_empty() || !trees.same(c, own)) && !newer(c) && !opens_a_call(c) {
                        return (Some(c.clone()), passed);
                    }
                    passed = true;
                }
                (None, passed)
            };
            let linkable = r.kind.is_linkable();
            let boundary = r.subtype.as_deref() == Some("compact_boundary");
            let asked = relink.get(&key).copied();
            if linkable && !kept_parent.contains(&key) && (r.parent.is_some() || asked.is_some()) {
                let line = r.loc.line().unwrap_or(0);
                let target: Option<(Option<String>, &'static str, String)> = if boundary {
                    None
                } else if let (None, Some(rule)) = (r.parent.as_deref(), asked) {
                    // No record carries a link (`unchained-records`): file
                    // order is the only order there is.
                    before(prev, &mut trees).0.map(|u| {
                        (
                            Some(u),
                            rule,
                            format!("linked line {line} to the record before it"),
                        )
                    })
                } else if let Some(p) = r.parent.as_deref()
                    && let Some(n) = reparent.get(p).filter(|_| {
                        r.unreached == crate::model::chain::Unreached::No
                            && !same_message(r, p, &answered)
                    })
                {
                    Some((
                        Some(n.clone()),
                        "answer-call",
                        format!("re-linked line {line} to the inserted tool result"),
                    ))
                } else if let crate::model::chain::Link::Cycle {
                    older: Some((k, gap)),
                    ..
                } = r.link
                    && asked.is_none()
                    && gap <= crate::model::chain::BRIDGE_MS
                    && dropped_set.contains(&start_of(&chain.records[k].loc))
                {
                    // Its parent is its own descendant, and the client
                    // breaks the cycle at the newest older record, which
                    // this repair removes: with nothing else within 5 s,
                    // the walk would stop here. Past the removed record, as
                    // the client went through it.
                    kept_above(chain.records[k].uuid.as_deref(), &present, &parent_of_dropped)
                        .filter(|u| own.is_empty() || !trees.same(u, own))
                        .map(|u| {
                            (
                                Some(u.to_string()),
                                // Under the rule that removed the record.
                                dropped_by
                                    .get(&start_of(&chain.records[k].loc))
                                    .copied()
                                    .unwrap_or("dangling-parent"),
                                format!(
                                    "re-linked line {line} past line {}, where Claude Code breaks its parent cycle, which this repair removes",
                                    chain.line(k).unwrap_or(0)
                                ),
                            )
                        })
                } else if let Some(p) = r.parent.as_deref()
                    && (present.contains(p) || inserted.contains(p))
                    && asked.is_none()
                {
                    // Its parent is in the copy. (A record lint asks to
                    // re-link whose parent is in the file hangs under a
                    // `progress` record, which the client does not load:
                    // it takes that record's parent, which is lost.)
                    None
                } else if let Some(p) = r.parent.as_deref()
                    && let Some(up) = parent_of_dropped.get(p).copied()
                {
                    // Its parent was removed by this repair: to that
                    // record's own parent, or the record before.
                    let to = match past_removed.get(&key).copied().or_else(|| {
                        kept_above(up, &present, &parent_of_dropped)
                            .filter(|u| own.is_empty() || !trees.same(u, own))
                    }) {
                        // A call this repair answers: under the result
                        // inserted for it, as the call's own children go
                        // (under the call, the client's walk would pass
                        // the result by).
                        Some(u) => Some(
                            reparent
                                .get(u)
                                .filter(|_| !same_message(r, u, &answered))
                                .map_or(u, String::as_str)
                                .to_string(),
                        ),
                        None => before(prev, &mut trees).0,
                    };
                    let rule = slots
                        .iter()
                        .find(|x| x.rec.and_then(|y| y.uuid.as_deref()) == Some(p))
                        .and_then(|x| dropped_by.get(&start_of(x.loc)).copied())
                        .unwrap_or("dangling-parent");
                    let what = format!(
                        "re-linked line {line} past the removed record{}",
                        if to.is_none() {
                            " (nothing is before it)"
                        } else {
                            ""
                        }
                    );
                    Some((to, rule, what))
                } else if asked.is_none()
                    && let Some(k) = bridged_to(r)
                    && dropped_set.contains(&start_of(&chain.records[k].loc))
                {
                    // The record the client bridges it to (its parent is
                    // missing) is removed by this repair: the client would
                    // bridge it further back, maybe past 5 s, and break
                    // the chain there. To the nearest record above that
                    // one the copy keeps.
                    kept_above(chain.records[k].uuid.as_deref(), &present, &parent_of_dropped)
                        .filter(|u| own.is_empty() || !trees.same(u, own))
                        .map(|u| {
                            (
                                Some(u.to_string()),
                                "dangling-parent",
                                format!(
                                    "re-linked line {line} past line {}, the record Claude Code bridges it to, which this repair removes",
                                    chain.line(k).unwrap_or(0)
                                ),
                            )
                        })
                } else if let Some(rule) = asked
                    && self.relink == Relink::AsBridged
                    && let crate::model::chain::Link::Bridged { to, .. } = &r.link
                    && let Some(u) = chain.records[*to]
                        .uuid
                        .as_deref()
                        .filter(|u| present.contains(u) && (own.is_empty() || !trees.same(u, own)))
                {
                    // The link the client makes for this record. (The
                    // record before it in file order may be newer than it;
                    // the client picks its leaf by time, and under that
                    // record its walk can start above this one.)
                    // A call answered by this repair: under its result,
                    // as the call's own children go.
                    let (u, what) = match reparent.get(u).filter(|_| !same_message(r, u, &answered))
                    {
                        Some(n) => (n.as_str(), ", under the tool result inserted for it"),
                        None => (u, ""),
                    };
                    Some((
                        Some(u.to_string()),
                        rule,
                        format!(
                            "re-linked line {line} to line {}, the record Claude Code bridges it to{what}",
                            chain.line(*to).unwrap_or(0)
                        ),
                    ))
                } else if let Some(rule) = asked {
                    let (to, passed) = before(prev, &mut trees);
                    let what = match (&to, passed) {
                        (Some(_), false) => {
                            format!("re-linked line {line} to the record before it")
                        }
                        (Some(_), true) => format!(
                            "re-linked line {line} to the newest record before it that does not descend from it{} and leaves no tool call without its result",
                            if by_time {
                                ", is not newer than it"
                            } else {
                                ""
                            }
                        ),
                        (None, false) => format!(
                            "re-linked line {line} to the record before it (nothing is before it)"
                        ),
                        (None, true) => format!(
                            "started the chain at line {line} (every record before it descends from it{} or would leave a tool call without its result)",
                            if by_time { ", is newer than it" } else { "" }
                        ),
                    };
                    Some((to, rule, what))
                } else {
                    None
                };
                // A record the client bridges to an older one is no root:
                // a link to nothing would start the walk here and cut off
                // what the bridge reaches (the record bridged to has no
                // uuid a link could name). It stays as the client reads it.
                let target = target.filter(|(to, _, _)| {
                    to.is_some()
                        || r.parent.is_none()
                        || !matches!(r.link, crate::model::chain::Link::Bridged { .. })
                        || asked.is_none()
                });
                if let Some((to, rule, what)) = target {
                    relinked.insert(key);
                    edits.push(relink_entry(
                        rule,
                        what,
                        &r.loc,
                        r.parent.as_deref(),
                        to.as_deref(),
                    ));
                    // A record a later one with its uuid replaces is not
                    // the client's: its link joins no tree of the copy.
                    if let Some(u) = &to
                        && !own.is_empty()
                        && r.unreached != crate::model::chain::Unreached::Replaced
                    {
                        trees.join(own, u);
                    }
                    plan.recs.entry(key).or_default().parent = Some(to);
                }
            }
            // A record a later kept one with its uuid replaces is no
            // record to link to: the client resolves its uuid to the later
            // one, which may come after (a link to it can close a cycle).
            if linkable
                && r.kind != RecordKind::Progress
                && let Some(u) = &r.uuid
                && last_kept.get(u.as_str()) == Some(&key)
            {
                prev.push(u.clone());
            }
            if let Some(ins) = inserted_after.get(&key) {
                for (u, text) in ins {
                    plan.recs
                        .entry(key)
                        .or_default()
                        .insert_after
                        .push(text.clone());
                    prev.push(u.clone());
                }
            }
        }
        // A finding whose re-links all came to nothing (no record before
        // has a uuid a link can name, or a link to nothing would cut off
        // what the client bridges to) is left, and says why: the copy
        // still holds it.
        for (p, locs) in &relink_asked {
            if !locs.iter().any(|k| relinked.contains(k)) {
                log.left.push(left(
                    p,
                    conv,
                    "no record before it can be named by a link (none has a uuid, or each would make a cycle or leave a call without its result): a `parentUuid` of null would start the chain there, which mends nothing",
                ));
            }
        }
        // Lines to rewrite, with their records' ranges.
        let edited_lines: HashSet<u64> = slots
            .iter()
            .filter(|s| plan.recs.contains_key(&start_of(s.loc)))
            .filter_map(|s| s.loc.line())
            .chain(plan.split.iter().copied())
            .collect();
        for s in &slots {
            if let (Some(l), Loc::Line { start, end, .. }) = (s.loc.line(), s.loc)
                && edited_lines.contains(&l)
            {
                plan.pieces.entry(l).or_default().push((*start, *end));
            }
        }
        // A copy without a message is no history: no client resumes it,
        // and it may no longer even read as a Claude Code session. The
        // copy then keeps the input as it is and every finding is left,
        // with the reason. The messages are those of the whole file, not
        // only of the input's resume: a record whose parent is lost can
        // leave the resume with none, and the re-link that mends it brings
        // them back.
        let dropped = |loc: &Loc| plan.recs.get(&start_of(loc)).is_some_and(|e| e.drop);
        let keeps = crate::write::keeps_a_message(
            conv,
            dropped,
            plan.recs.values().any(|e| !e.insert_after.is_empty()),
        ) || conv
            .chain
            .iter()
            .flat_map(|c| c.records.iter())
            .any(|r| r.kind.is_message() && !dropped(&r.loc));
        if !keeps {
            for p in planned {
                let said = log
                    .left
                    .iter()
                    .any(|l| l.rule == p.finding.rule && l.location == p.finding.loc);
                if !said {
                    log.left.push(left(p, conv, crate::write::NO_MESSAGE_LEFT));
                }
            }
            self.plan = Some(Plan::default());
            return Ok(());
        }
        // A re-link's `before` is the member as read. The record's bytes
        // say otherwise in two cases, each read once:
        // - a record without a `parentUuid` member gets one, written first:
        //   an insertion, not a value replaced. The edit's `before` is the
        //   whole record as it was, and `after` the record with the member
        //   (a `"parentUuid":null` before would name bytes it never held);
        // - a member whose bytes are not UTF-8 (a uuid that held a damaged
        //   byte, read with a U+FFFD): the log keeps them exactly, as it
        //   keeps every other record that is not.
        for e in edits.iter_mut().filter(|e| e.action == "relink") {
            let bytes = records.read_bytes(&e.location)?;
            if members(&bytes, b"\"parentUuid\"").next().is_none() {
                let to = plan
                    .recs
                    .get(&start_of(&e.location))
                    .and_then(|x| x.parent.clone())
                    .flatten();
                if let Some(after) = set_parent(&bytes, to.as_deref()) {
                    let (text, raw) = crate::write::verbatim(&bytes);
                    (e.before, e.before_base64) = (Some(text), raw);
                    e.after = Some(String::from_utf8_lossy(&after).into_owned());
                }
            } else if e.before.as_deref().is_some_and(|b| b.contains('\u{fffd}'))
                && std::str::from_utf8(&bytes).is_err()
                && let Some((key, _, end)) = parent_member(&bytes)
                && let (text, Some(raw)) = crate::write::verbatim(&bytes[key..end])
            {
                (e.before, e.before_base64) = (Some(text), Some(raw));
            }
        }
        // A record that names a member twice was read as the client reads
        // it, each member with its last value. An edit of its bytes would
        // change the first of two `parentUuid`s, which the client does not
        // read; so an edited one is written as it was read, and its first
        // edit's `before` is the whole record as it was: the values named
        // first, which the client never read either, are in the log.
        // The same for a record whose blocks are edited and whose bytes
        // are not all UTF-8: its blocks were found in the text the client
        // reads (each sequence that is not UTF-8 a U+FFFD), so that text
        // is what is written, and the log keeps the record's own bytes.
        for (start, x) in plan.recs.iter_mut() {
            let in_place = x.parent.is_some()
                || x.uuid.is_some()
                || x.message_id.is_some()
                || x.surrogates
                || !x.blocks.is_empty();
            let Some(r) = by_start.get(start) else {
                continue;
            };
            if x.drop || !in_place || (!r.named_twice && x.blocks.is_empty()) {
                continue;
            }
            let bytes = records.read_bytes(&r.loc)?;
            let why = if r.named_twice {
                "; the record names a member twice and is written as the client reads it, each member once with its last value"
            } else if !x.blocks.is_empty() && std::str::from_utf8(&bytes).is_err() {
                "; the record holds bytes that are not UTF-8 and is written as the client reads it, each such sequence as U+FFFD"
            } else {
                continue;
            };
            let Some(e) = edits.iter_mut().find(|e| start_of(&e.location) == *start) else {
                continue;
            };
            x.as_read = true;
            let (text, raw) = crate::write::verbatim(&bytes);
            (e.before, e.before_base64) = (Some(text), raw);
            e.description.push_str(why);
        }
        edits.sort_by_key(|e| (e.location.line().unwrap_or(0), start_of(&e.location)));
        log.edits.extend(edits);
        self.plan = Some(plan);
        Ok(())
    }

    fn write(self: Box<Self>, _log: &mut Log) -> Result<()> {
        let (Some(out), Some(plan)) = (&self.output, &self.plan) else {
            return Err(Error::not_history(&self.input, "holds no conversation"));
        };
        if plan.pieces.is_empty() {
            // No line to look at: every line is written as it is, so the
            // copy is the file, copied by the kernel.
            return crate::write::atomic::copy(&self.input, out, self.force);
        }
        let werr = crate::write::lines::output_error(out);
        crate::write::lines::rewrite(
            &self.input,
            out,
            self.limits.max_line_bytes,
            self.force,
            |line, w| {
                let Some(pieces) = plan.pieces.get(&line.number) else {
                    w.write_all(line.bytes).map_err(&werr)?;
                    if line.terminated {
                        w.write_all(b"\n").map_err(&werr)?;
                    }
                    return Ok(());
                };
                let split = plan.split.contains(&line.number);
                let base = line.start;
                let buf = line.bytes;
                let mut outl: Vec<u8> = Vec::with_capacity(buf.len().min(1 << 16) + 256);
                let mut cursor = 0usize;
                let mut wrote_any = false;
                let mut trailing: Vec<String> = Vec::new();
                for &(s, e) in pieces {
                    let (s, e) = ((s - base) as usize, (e - base) as usize);
                    let gap = &buf[cursor.min(s)..s];
                    cursor = e;
                    let edit = plan.recs.get(&(s as u64 + base));
                    if edit.is_some_and(|x| x.drop) {
                        trailing.extend(edit.map(|x| x.insert_after.clone()).unwrap_or_default());
                        continue;
                    }
                    if wrote_any {
                        if split {
                            outl.push(b'\n');
                        } else {
                            outl.extend_from_slice(gap);
                        }
                    } else if !split {
                        outl.extend_from_slice(gap);
                    }
                    let whole = &buf[s..e];
                    // A large record is written in place, its edits
                    // spliced in as it is written (a copy per edit cost
                    // its size each: issue 35, defect 16).
                    if let Some(x) = edit
                        && whole.len() >= crate::write::payload::LARGE
                        && !x.as_read
                        && !x.surrogates
                        && let Some(cuts) = splices(whole, x)
                    {
                        w.write_all(&outl).map_err(&werr)?;
                        outl.clear();
                        let mut at = 0;
                        for (cs, ce, with) in cuts {
                            w.write_all(&whole[at..cs]).map_err(&werr)?;
                            w.write_all(&with).map_err(&werr)?;
                            at = ce;
                        }
                        w.write_all(&whole[at..]).map_err(&werr)?;
                        trailing.extend(x.insert_after.iter().cloned());
                        wrote_any = true;
                        continue;
                    }
                    let mut piece = whole.to_vec();
                    if let Some(x) = edit {
                        if x.as_read {
                            // Read as the loader reads the line: each
                            // sequence that is not UTF-8 as U+FFFD (the
                            // log keeps the record's own bytes).
                            let text = String::from_utf8_lossy(&piece);
                            piece = as_lenient_readers_read(text.as_bytes())
                                .map(|(t, _)| t)
                                .ok_or_else(|| {
                                    Error::input(
                                        &self.input,
                                        format!("line {}: the record no longer reads", line.number),
                                    )
                                })?;
                        } else if x.surrogates {
                            piece = fix_surrogates(&piece);
                        }
                        if let Some((old, new)) = &x.uuid {
                            piece = set_uuid(&piece, old, new).ok_or_else(|| {
                                Error::input(
                                    &self.input,
                                    format!(
                                        "line {}: the record's `uuid` is not where it was read",
                                        line.number
                                    ),
                                )
                            })?;
                        }
                        if let Some(p) = &x.parent {
                            piece = set_parent(&piece, p.as_deref()).ok_or_else(|| {
                                Error::input(
                                    &self.input,
                                    format!("line {}: no `parentUuid` to re-link", line.number),
                                )
                            })?;
                        }
                        if let Some((old, new)) = &x.message_id {
                            piece = set_message_id(&piece, old, new).ok_or_else(|| {
                                Error::input(
                                    &self.input,
                                    format!(
                                        "line {}: the record's `message.id` is not where it was read",
                                        line.number
                                    ),
                                )
                            })?;
                        }
                        if !x.blocks.is_empty() {
                            piece = edit_blocks(&piece, &x.blocks).ok_or_else(|| {
                                Error::input(
                                    &self.input,
                                    format!(
                                        "line {}: the record's `message.content` is not where it was read",
                                        line.number
                                    ),
                                )
                            })?;
                        }
                        trailing.extend(x.insert_after.iter().cloned());
                    }
                    outl.extend_from_slice(&piece);
                    wrote_any = true;
                }
                if wrote_any && !split {
                    outl.extend_from_slice(&buf[cursor.min(buf.len())..]);
                }
                if wrote_any {
                    w.write_all(&outl).map_err(&werr)?;
                    if line.terminated || !trailing.is_empty() {
                        w.write_all(b"\n").map_err(&werr)?;
                    }
                }
                for t in &trailing {
                    w.write_all(t.as_bytes()).map_err(&werr)?;
                    w.write_all(b"\n").map_err(&werr)?;
                }
                Ok(())
            },
            |_| Ok(()),
        )
    }
}

/// `r` is a record of the same API message as the call record `parent`
/// (a parallel call chained to the one before it): it stays where it is.
fn same_message(
    r: &ChainRecord,
    parent: &str,
    answered: &[(&ChainRecord, String, String, &Planned<'_>)],
) -> bool {
    answered.iter().any(|(c, _, _, _)| {
        c.uuid.as_deref() == Some(parent) && r.message_id.is_some() && r.message_id == c.message_id
    })
}

fn left(p: &Planned<'_>, conv: &Conversation, reason: &str) -> crate::write::Left {
    crate::write::Left {
        conversation: conv.id.clone(),
        ..crate::write::Left::of(p.finding, reason)
    }
}

/// A uuid-shaped id derived from the call's record and the call id: the
/// same input gives the same copy.
fn derived_uuid(parent: &str, call: &str) -> String {
    let mut h: [u64; 2] = [0xcbf2_9ce4_8422_2325, 0x8422_2325_cbf2_9ce4];
    for (k, hv) in h.iter_mut().enumerate() {
        for b in parent.bytes().chain([b'/', k as u8]).chain(call.bytes()) {
            *hv ^= u64::from(b);
            *hv = hv.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    let hex = format!("{:016x}{:016x}", h[0], h[1]);
    format!(
        "{}-{}-4{}-8{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

/// An id for the `n`th call that shares the id `old`: `<old>x<n>`, or,
/// when the conversation has that one too, with a further suffix; the
/// same for the same input. Letters and digits only: with `<old>_2`,
/// Claude Code 2.1.330 sent its own `[Tool result missing due to internal
/// error]` in place of the call's result (found with the oracle; `x2`
/// resumes whole).
fn fresh_call_id(old: &str, n: usize, taken: &mut HashSet<String>) -> String {
    let mut id = format!("{old}x{n}");
    let mut k = 1;
    while taken.contains(&id) {
        k += 1;
        id = format!("{old}x{n}x{k}");
    }
    taken.insert(id.clone());
    id
}

/// A byte range of a record.
type Span = (usize, usize);

/// The byte ranges of a record's `message.content` list and of each of
/// its blocks, read as the client reads the record (a member named twice
/// has its last value).
fn content_blocks(piece: &[u8]) -> Option<(Span, Vec<Span>)> {
    use serde_json::value::RawValue;
    let text = std::str::from_utf8(piece).ok()?;
    let base = text.as_ptr() as usize;
    let span = |r: &RawValue| {
        let s = r.get();
        let a = s.as_ptr() as usize - base;
        (a, a + s.len())
    };
    let top: HashMap<String, &RawValue> = serde_json::from_str(text).ok()?;
    let message: HashMap<String, &RawValue> =
        serde_json::from_str(top.get("message")?.get()).ok()?;
    let content = *message.get("content")?;
    let blocks: Vec<&RawValue> = serde_json::from_str(content.get()).ok()?;
    Some((span(content), blocks.into_iter().map(span).collect()))
}

/// Block `k` of the record at `loc` as an earlier edit of this repair
/// left it, if one did: a further edit of the block starts from it.
fn edited_block(plan: &Plan, loc: &Loc, k: usize) -> Option<String> {
    plan.recs
        .get(&start_of(loc))
        .and_then(|x| x.blocks.iter().rev().find(|(b, _)| *b == k))
        .and_then(|(_, n)| n.clone())
}

/// Block `k` of the record `text` as it is, and as `change` leaves it
/// (`None` when `change` finds it is not the block meant).
fn block_edit(
    text: &str,
    k: usize,
    change: impl FnOnce(&mut Value) -> Option<()>,
) -> Option<(String, String)> {
    let (_, blocks) = content_blocks(text.as_bytes())?;
    let (s, e) = *blocks.get(k)?;
    edit_block_json(&text[s..e], change)
}

/// The block `before` (its JSON text) and as `change` leaves it.
fn edit_block_json(
    before: &str,
    change: impl FnOnce(&mut Value) -> Option<()>,
) -> Option<(String, String)> {
    let mut v: Value = serde_json::from_str(before).ok()?;
    change(&mut v)?;
    Some((before.to_string(), v.to_string()))
}

/// `piece` with the blocks of its `message.content` replaced or removed;
/// every other block is kept byte for byte.
fn edit_blocks(piece: &[u8], edits: &[(usize, Option<String>)]) -> Option<Vec<u8>> {
    let ((cs, ce), blocks) = content_blocks(piece)?;
    let mut out = piece[..cs].to_vec();
    out.push(b'[');
    let mut first = true;
    for (k, &(s, e)) in blocks.iter().enumerate() {
        let new = match edits.iter().rev().find(|(b, _)| *b == k) {
            Some((_, n)) => n.as_deref().map(str::as_bytes),
            None => Some(&piece[s..e]),
        };
        if let Some(b) = new {
            if !first {
                out.push(b',');
            }
            out.extend_from_slice(b);
            first = false;
        }
    }
    out.push(b']');
    out.extend_from_slice(&piece[ce..]);
    Some(out)
}

/// `derived_uuid`, unless the file already holds that uuid (a copy an
/// earlier repair wrote, damaged again, can): then derived again, with a
/// counter, until it is new. Still the same copy for the same input.
fn fresh_uuid(parent: &str, call: &str, taken: &mut Taken) -> String {
    // The counter goes on from where the last uuid of this pair was found
    // (every uuid before it is taken, and none is ever given back): 80,000
    // records of one uuid each kept under a new one made the count start
    // at 0 each time, quadratic in them.
    let key = (parent.to_string(), call.to_string());
    let mut n = taken.counted.get(&key).copied().unwrap_or(0);
    let derive = |n: u32| match n {
        0 => derived_uuid(parent, call),
        n => derived_uuid(parent, &format!("{call}#{n}")),
    };
    let mut u = derive(n);
    while taken.uuids.contains(&u) {
        n += 1;
        u = derive(n);
    }
    taken.uuids.insert(u.clone());
    taken.counted.insert(key, n);
    u
}

/// The uuids a new one must be none of (the file's, and those this repair
/// made), and for each (parent, call) the counter of its last one.
#[derive(Default)]
struct Taken {
    uuids: HashSet<String>,
    counted: HashMap<(String, String), u32>,
}

/// The tool_result record answering `call` in the call's record `text`,
/// with the call record's session fields.
fn result_record(
    text: &str,
    parent: &str,
    uuid: &str,
    call: &str,
) -> std::result::Result<String, String> {
    // Read as the client reads it: lone surrogates as U+FFFD.
    let v: Value =
        serde_json::from_slice(&fix_surrogates(text.as_bytes())).map_err(|e| e.to_string())?;
    let mut out = serde_json::Map::new();
    out.insert("parentUuid".into(), Value::String(parent.into()));
    for k in [
        "isSidechain",
        "userType",
        "cwd",
        "sessionId",
        "version",
        "gitBranch",
        "slug",
    ] {
        if let Some(x) = v.get(k) {
            out.insert(k.into(), x.clone());
        }
    }
    out.insert("type".into(), Value::String("user".into()));
    out.insert(
        "message".into(),
        serde_json::json!({"role": "user", "content": [{"tool_use_id": call, "type": "tool_result", "content": PLACEHOLDER, "is_error": true}]}),
    );
    out.insert("uuid".into(), Value::String(uuid.into()));
    if let Some(t) = v.get("timestamp") {
        out.insert("timestamp".into(), t.clone());
    }
    out.insert(
        "toolUseResult".into(),
        Value::String(format!("Error: {PLACEHOLDER}")),
    );
    Ok(Value::Object(out).to_string())
}

/// `piece` with its lone surrogate escapes as `\ufffd`, as the client reads
/// them (the loader's replacement, always as a copy).
fn fix_surrogates(piece: &[u8]) -> Vec<u8> {
    crate::format::records::record::replace_lone_surrogates(piece)
        .0
        .unwrap_or_else(|| piece.to_vec())
}

/// From the record `up` (one this repair removes, or any), up its parents
/// through removed records to the first record the copy keeps.
fn kept_above<'a>(
    mut up: Option<&'a str>,
    present: &HashSet<&str>,
    parent_of_dropped: &HashMap<&str, Option<&'a str>>,
) -> Option<&'a str> {
    let mut guard = 0;
    while let Some(u) = up
        && !present.contains(u)
        && guard <= parent_of_dropped.len()
    {
        up = parent_of_dropped.get(u).copied().flatten();
        guard += 1;
    }
    up.filter(|u| present.contains(u))
}

/// `s` written as a JSON string: a uuid read from a damaged record can
/// hold any text (quotes, newlines), and is written back as JSON.
fn json_string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// The end (one past the closing quote) of the JSON string that starts at
/// `start` (its opening quote), past escaped quotes.
fn string_end(piece: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < piece.len() {
        match piece[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Where the record's `"key":"…"` members whose value reads as `old`
/// are: each value's byte range, quotes included, in order. The value is
/// read as the loader reads it (escapes decoded, bytes that are not UTF-8
/// as U+FFFD), so a damaged value is found as it was reported. A key of
/// the same name inside the message (a tool call's `id`, a quoted record)
/// with another value is passed over; a record that names the member
/// twice with that value (glued and cut records can) has both, and the
/// client reads the last. Empty when there is none.
fn strings_at(piece: &[u8], key: &[u8], old: &str) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    for (_, s) in members(piece, key) {
        if piece.get(s) != Some(&b'"') {
            continue;
        }
        let Some(e) = string_end(piece, s) else {
            continue;
        };
        let read = serde_json::from_str::<String>(&String::from_utf8_lossy(&piece[s..e]));
        if read.ok().as_deref() == Some(old) {
            found.push((s, e));
        }
    }
    found
}

/// The one member [`strings_at`] finds, or `None` where there are none
/// or several.
fn string_at(piece: &[u8], key: &[u8], old: &str) -> Option<(usize, usize)> {
    match strings_at(piece, key, old).as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// `piece` with each of the members at `at` (value ranges, in order)
/// given the string `new`.
fn with_strings(piece: &[u8], at: &[(usize, usize)], new: &str) -> Vec<u8> {
    let mut out = piece.to_vec();
    for range in at.iter().rev() {
        out = with_string(&out, *range, new);
    }
    out
}

/// Each member named `key` (its quoted name, `"uuid"`) in `piece`: where
/// the name starts and where its value does. JSON allows whitespace
/// around the colon; a name inside a string is escaped (`\"uuid\"`), so
/// it never matches.
fn members<'a>(piece: &'a [u8], key: &'a [u8]) -> impl Iterator<Item = (usize, usize)> + 'a {
    let skip = |mut i: usize| {
        while piece.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    memchr::memmem::find_iter(piece, key).filter_map(move |at| {
        let colon = skip(at + key.len());
        (piece.get(colon) == Some(&b':')).then(|| (at, skip(colon + 1)))
    })
}

/// `piece` with the byte range `at` replaced by `value` written as a JSON
/// string.
fn with_string(piece: &[u8], (s, e): (usize, usize), value: &str) -> Vec<u8> {
    let value = json_string(value);
    let mut out = Vec::with_capacity(piece.len() + value.len());
    out.extend_from_slice(&piece[..s]);
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(&piece[e..]);
    out
}

/// The edits of `x` (a new `uuid`, `parentUuid`, `message.id`) as byte
/// ranges of `piece` and what replaces each, in order: the bytes
/// [`set_uuid`], [`set_parent`] and [`set_message_id`] make one after the
/// other, without a copy of the record per edit. `None` where one is not
/// found or two overlap (the caller edits a copy then, and says why).
fn splices(piece: &[u8], x: &RecEdit) -> Option<Vec<(usize, usize, Vec<u8>)>> {
    // Only links and ids are spliced; a record whose blocks are edited too
    // (an image or an input replaced, a block removed) takes the path that
    // edits its JSON.
    if !x.blocks.is_empty() {
        return None;
    }
    let mut cuts = Vec::new();
    if let Some((old, new)) = &x.uuid {
        let (s, e) = string_at(piece, b"\"uuid\"", old)?;
        cuts.push((s, e, json_string(new).into_bytes()));
    }
    if let Some(to) = &x.parent {
        if members(piece, b"\"parentUuid\"").next().is_some() {
            let (_, s, e) = parent_member(piece)?;
            let with = match to {
                Some(u) => json_string(u),
                None => "null".to_string(),
            };
            cuts.push((s, e, with.into_bytes()));
        } else {
            // The member goes first, as `set_parent` writes it.
            let rest = piece.strip_prefix(b"{")?;
            let mut with = format!("{{\"parentUuid\":{}", json_string(to.as_deref()?));
            if !rest.trim_ascii_start().starts_with(b"}") {
                with.push(',');
            }
            cuts.push((0, 1, with.into_bytes()));
        }
    }
    if let Some((old, new)) = &x.message_id {
        let (s, e) = message_id_at(piece, old)?;
        cuts.push((s, e, json_string(new).into_bytes()));
    }
    cuts.sort_by_key(|c| c.0);
    cuts.windows(2).all(|w| w[0].1 <= w[1].0).then_some(cuts)
}

/// Replace the record's `"uuid":"old"` (the only one) with the new uuid.
fn set_uuid(piece: &[u8], old: &str, new: &str) -> Option<Vec<u8>> {
    // The record's own `uuid` members (depth 1: glued and cut records
    // can name it twice) get the new uuid, whichever its reader takes; a
    // member inside the message (a quoted or glued record) is not the
    // record's. Without one at depth 1, a single candidate is taken.
    let at = strings_at(piece, b"\"uuid\"", old);
    let own: Vec<(usize, usize)> = at
        .iter()
        .copied()
        .filter(|(s, _)| depth_at(piece, *s) == 1)
        .collect();
    match (own.as_slice(), at.as_slice()) {
        ([], [one]) => Some(with_string(piece, *one, new)),
        ([], _) => None,
        (own, _) => Some(with_strings(piece, own, new)),
    }
}

/// How deep in objects and arrays byte `at` of `piece` is (1: a member
/// of the record itself); brackets inside strings do not count.
fn depth_at(piece: &[u8], at: usize) -> usize {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in &piece[..at.min(piece.len())] {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    depth
}

/// Where the record's message id `old` is ([`string_at`] of `"id":`; a
/// tool call's id is never a message's: `toolu_…`, `msg_…`).
fn message_id_at(piece: &[u8], old: &str) -> Option<(usize, usize)> {
    string_at(piece, b"\"id\"", old)
}

/// Replace the record's message id `old` ([`message_id_at`]) with `new`.
fn set_message_id(piece: &[u8], old: &str, new: &str) -> Option<Vec<u8>> {
    let at = message_id_at(piece, old)?;
    Some(with_string(piece, at, new))
}

/// Where the record's first `"parentUuid":` member is: the start of its
/// key, and the start and end of its value (a string or null).
fn parent_member(piece: &[u8]) -> Option<(usize, usize, usize)> {
    let (at, s) = members(piece, b"\"parentUuid\"").next()?;
    let e = match piece.get(s)? {
        b'"' => string_end(piece, s)?,
        b'n' if piece[s..].starts_with(b"null") => s + 4,
        _ => return None,
    };
    Some((at, s, e))
}

/// Replace the value of the record's `parentUuid` (a string or null), or
/// give a record that has none its first key.
fn set_parent(piece: &[u8], to: Option<&str>) -> Option<Vec<u8>> {
    if members(piece, b"\"parentUuid\"").next().is_none() {
        let (to, rest) = (to?, piece.strip_prefix(b"{")?);
        let mut out = format!("{{\"parentUuid\":{}", json_string(to)).into_bytes();
        if !rest.trim_ascii_start().starts_with(b"}") {
            out.push(b',');
        }
        out.extend_from_slice(rest);
        return Some(out);
    }
    let (_, s, e) = parent_member(piece)?;
    let mut out = Vec::with_capacity(piece.len() + 40);
    out.extend_from_slice(&piece[..s]);
    match to {
        Some(u) => out.extend_from_slice(json_string(u).as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(&piece[e..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// JSON allows whitespace around a member's colon: the member is
    /// found there too (a repair_file find, `claude-code-parent-key-
    /// spaced-before-its-colon`: the re-link failed the whole repair, or
    /// would have added a second `parentUuid`, the first of which a
    /// reader that keeps the last would pass over).
    #[test]
    fn a_member_is_found_with_whitespace_around_its_colon() {
        let r = br#"{"parentUuid"  :  "a","uuid" :"b","message":{"id"	:"m"}}"#;
        assert_eq!(
            set_parent(r, None).unwrap(),
            br#"{"parentUuid"  :  null,"uuid" :"b","message":{"id"	:"m"}}"#.to_vec()
        );
        assert_eq!(
            set_parent(r, Some("c")).unwrap(),
            br#"{"parentUuid"  :  "c","uuid" :"b","message":{"id"	:"m"}}"#.to_vec()
        );
        assert_eq!(
            set_uuid(r, "b", "d").unwrap(),
            br#"{"parentUuid"  :  "a","uuid" :"d","message":{"id"	:"m"}}"#.to_vec()
        );
        assert_eq!(
            set_message_id(r, "m", "n").unwrap(),
            br#"{"parentUuid"  :  "a","uuid" :"b","message":{"id"	:"n"}}"#.to_vec()
        );
        // A name inside a string is escaped: never a member.
        let q = br#"{"text":"\"parentUuid\" : \"x\"","parentUuid":"a"}"#;
        assert_eq!(
            set_parent(q, Some("c")).unwrap(),
            br#"{"text":"\"parentUuid\" : \"x\"","parentUuid":"c"}"#.to_vec()
        );
    }

    #[test]
    fn a_uuid_is_replaced_only_where_it_is_the_record_s() {
        let r = br#"{"parentUuid":"a","message":{"content":"\"uuid\":\"b\""},"uuid":"b"}"#;
        assert_eq!(
            set_uuid(r, "b", "c").unwrap(),
            br#"{"parentUuid":"a","message":{"content":"\"uuid\":\"b\""},"uuid":"c"}"#.to_vec()
        );
        // Two candidates: the record's is the member of the record itself.
        assert_eq!(
            set_uuid(br#"{"x":{"uuid":"b"},"uuid":"b"}"#, "b", "c").unwrap(),
            br#"{"x":{"uuid":"b"},"uuid":"c"}"#.to_vec()
        );
        // Two nested candidates and none of the record's: not known.
        assert_eq!(
            set_uuid(br#"{"x":{"uuid":"b"},"y":[{"uuid":"b"}]}"#, "b", "c"),
            None
        );
        assert_eq!(set_uuid(br#"{"uuid":"a"}"#, "b", "c"), None);
        // The record names its own uuid twice: both get the new one.
        assert_eq!(
            set_uuid(br#"{"uuid":"b","m":"{\"uuid\"","uuid":"b"}"#, "b", "c").unwrap(),
            br#"{"uuid":"c","m":"{\"uuid\"","uuid":"c"}"#.to_vec()
        );
    }

    #[test]
    fn parent_values_are_replaced_in_place() {
        let r = br#"{"parentUuid":"a","x":"\"parentUuid\":\"b\""}"#;
        assert_eq!(
            set_parent(r, Some("c")).unwrap(),
            br#"{"parentUuid":"c","x":"\"parentUuid\":\"b\""}"#.to_vec()
        );
        assert_eq!(
            set_parent(br#"{"parentUuid": null}"#, Some("c")).unwrap(),
            br#"{"parentUuid": "c"}"#.to_vec()
        );
        assert_eq!(set_parent(br#"{"a":1}"#, None), None);
        assert_eq!(
            set_parent(br#"{"a":1}"#, Some("c")).unwrap(),
            br#"{"parentUuid":"c","a":1}"#.to_vec()
        );
    }

    /// A repair_file find: a damaged record's uuid held text with escaped
    /// newlines and quotes; a re-link to it wrote that text raw, and the
    /// copy's line broke into pieces of no JSON.
    #[test]
    fn parent_values_are_written_and_read_as_json_strings() {
        let parent = "f79e\"a file\n</system-reminder>";
        let r = br#"{"parentUuid":"x\"y","a":1}"#;
        let out = set_parent(r, Some(parent)).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["parentUuid"], parent);
        assert_eq!(v["a"], 1);
        let out = set_parent(br#"{"a":1}"#, Some(parent)).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["parentUuid"], parent);
        let r = br#"{"uuid":"a\"b","parentUuid":null}"#;
        let out = set_uuid(r, "a\"b", "c").unwrap();
        assert_eq!(out, br#"{"uuid":"c","parentUuid":null}"#.to_vec());
    }

    /// A repair_file find: a uuid holding bytes that are not UTF-8 is read
    /// (and reported) with U+FFFD; giving the record a new uuid must find
    /// the value as it was read, or the repair fails.
    #[test]
    fn a_uuid_that_is_not_utf8_is_found_as_it_was_read() {
        let r = b"{\"uuid\":\"ab\xff\xfecd\",\"x\":{\"uuid\":\"other\"}}";
        let old = String::from_utf8_lossy(b"ab\xff\xfecd").into_owned();
        let out = set_uuid(r, &old, "n").unwrap();
        assert_eq!(out, br#"{"uuid":"n","x":{"uuid":"other"}}"#.to_vec());
        // Escapes are read as the loader reads them.
        let out = set_uuid(br#"{"uuid":"\u0061b"}"#, "ab", "n").unwrap();
        assert_eq!(out, br#"{"uuid":"n"}"#.to_vec());
        assert_eq!(
            set_message_id(br#"{"message":{"id":"m\u00e9"}}"#, "m\u{e9}", "k").unwrap(),
            br#"{"message":{"id":"k"}}"#.to_vec()
        );
    }

    #[test]
    fn fresh_uuids_are_none_of_the_files_own() {
        let first = derived_uuid("p", "toolu_1");
        let taken_of = |u: &[&String]| Taken {
            uuids: u.iter().map(|u| (*u).clone()).collect(),
            ..Taken::default()
        };
        let mut taken = taken_of(&[&first]);
        let u = fresh_uuid("p", "toolu_1", &mut taken);
        assert_ne!(u, first);
        assert!(taken.uuids.contains(&u));
        // The same file gives the same uuid.
        let mut again = taken_of(&[&first]);
        assert_eq!(fresh_uuid("p", "toolu_1", &mut again), u);
        // The next of the pair goes on past both, and is the uuid a count
        // from 0 finds.
        let next = fresh_uuid("p", "toolu_1", &mut again);
        let mut from_0 = taken_of(&[&first, &u]);
        assert_eq!(fresh_uuid("p", "toolu_1", &mut from_0), next);
        assert_ne!(next, u);
    }

    #[test]
    fn derived_uuids_are_stable_and_uuid_shaped() {
        let a = derived_uuid("p", "toolu_1");
        assert_eq!(a, derived_uuid("p", "toolu_1"));
        assert_ne!(a, derived_uuid("p", "toolu_2"));
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
    }
}
