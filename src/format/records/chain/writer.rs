//! What the writers of chain files share: a repaired copy in which every
//! line is copied byte for byte but those an edit names, and the tree
//! stays a tree. A record taken out hands its children to its parent, a
//! record put in takes the children of the record it follows, so that the
//! client's walk from the last record still reaches every record it
//! reached before; a parent id is changed in place in the line's text (the
//! rest of the line is kept as it is). Which actions an app's writer
//! carries out, and what it puts in, is the app's (`pi/writer.rs`,
//! `qwen_code/writer.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{App, Node};
use crate::config::RepairPolicy as Policy;
use crate::error::{Error, Result};
use crate::finding::Finding;
use crate::model::Loc;
use crate::source::Limits;
use crate::write::lines::Records;
use crate::write::{Edit, Log, Planned, Target};

/// The lines a repair changes.
#[derive(Default)]
pub struct Lines {
    pub drop: BTreeSet<u64>,
    /// Lines written with another text.
    pub replace: HashMap<u64, String>,
    /// Lines written right after a line.
    pub insert_after: BTreeMap<u64, Vec<String>>,
}

/// A chain writer's state between its plan and its copy.
pub struct Copy {
    pub input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    pub limits: Limits,
    pub policy: Policy,
    lines: Lines,
    planned: bool,
}

impl Copy {
    pub fn new(t: &Target<'_>) -> Copy {
        Copy {
            input: t.input.to_path_buf(),
            output: t.output.map(Path::to_path_buf),
            force: t.force,
            limits: t.limits,
            policy: *t.policy,
            lines: Lines::default(),
            planned: false,
        }
    }

    /// A plan starts: whether it has anything to plan.
    pub fn begin(&mut self, planned: &[Planned<'_>]) -> bool {
        self.planned = true;
        !planned.is_empty()
    }

    /// The lines changed so far, for a plan to change more.
    pub fn take(&mut self) -> Lines {
        std::mem::take(&mut self.lines)
    }

    /// The lines a plan changed.
    pub fn set(&mut self, lines: Lines) {
        self.lines = lines;
    }

    /// Write the copy (nothing on a dry run).
    pub fn write(&self) -> Result<()> {
        let Some(out) = &self.output else {
            return Ok(());
        };
        if !self.planned {
            return Err(Error::not_history(&self.input, "holds no conversation"));
        }
        crate::write::lines::write_edited(
            &self.input,
            out,
            self.limits.max_line_bytes,
            self.force,
            &crate::write::lines::Edited {
                drop: &self.lines.drop,
                replace: Some(&self.lines.replace),
                insert_after: Some(&self.lines.insert_after),
                tail: None,
            },
        )
    }
}

/// The records as the repair changes them.
pub struct Tree {
    /// Each record's parent now.
    pub parent: Vec<Option<String>>,
    /// Each record's value when its content changed.
    pub value: Vec<Option<Value>>,
    pub dropped: Vec<bool>,
    /// Every id a record has or is given.
    pub ids: HashSet<String>,
    /// Records put in, by the record they follow: (id, value).
    pub inserted: BTreeMap<usize, Vec<(String, Value)>>,
}

impl Tree {
    fn new(nodes: &[Node]) -> Tree {
        Tree {
            parent: nodes.iter().map(|n| n.parent.clone()).collect(),
            value: vec![None; nodes.len()],
            dropped: vec![false; nodes.len()],
            ids: nodes.iter().filter_map(|n| n.id.clone()).collect(),
            inserted: BTreeMap::new(),
        }
    }

    /// The records (kept) whose parent is `id`.
    pub fn children(&self, id: &str) -> Vec<usize> {
        (0..self.parent.len())
            .filter(|&i| !self.dropped[i] && self.parent[i].as_deref() == Some(id))
            .collect()
    }
}

/// What of a line that does not parse is kept in the copy.
pub struct Salvage {
    /// The text the line is written with.
    pub text: String,
    /// The ids of the records it holds.
    pub ids: Vec<String>,
    /// The edit's description.
    pub description: String,
}

/// One repair's plan of a chain file's edits.
pub struct Plan<'a, 'f, A> {
    pub nodes: &'a [Node],
    pub tree: Tree,
    pub records: Records<'a>,
    /// Edits by the record whose line they change (`None`: a dropped or
    /// inserted line, whose text the edit already holds).
    edits: Vec<(Option<usize>, Edit)>,
    /// Lines dropped as corrupt, for the relink after them.
    dropped_corrupt: Vec<(u64, &'f Finding)>,
    /// The text a record is written with in place of its bytes (a
    /// record this repair rewrote whole: split lines joined, padding
    /// dropped), by record.
    texts: HashMap<usize, String>,
    lines: Lines,
    /// The records a salvage kept from dropped lines, by id: their
    /// parents (see [`Plan::salvaged`]).
    salvaged: HashMap<String, Option<String>>,
    app: PhantomData<A>,
}

impl<'a, 'f, A: App> Plan<'a, 'f, A> {
    /// A plan of edits to `nodes`, read from `input`, on top of `lines`.
    pub fn new(nodes: &'a [Node], input: &'a Path, lines: Lines) -> Result<Self> {
        Ok(Plan {
            nodes,
            tree: Tree::new(nodes),
            records: Records::open(input)?,
            edits: Vec::new(),
            dropped_corrupt: Vec::new(),
            texts: HashMap::new(),
            lines,
            salvaged: HashMap::new(),
            app: PhantomData,
        })
    }

    /// A new id no record has, from `seed` ([`App::new_id`]).
    pub fn new_id(&mut self, seed: &str) -> String {
        A::new_id(seed, &mut self.tree.ids)
    }

    /// An edit of record `at`'s line: its text before and after is taken
    /// when the plan is finished.
    pub fn edit_of(&mut self, at: usize, e: Edit) {
        self.edits.push((Some(at), e));
    }

    /// Drop the line at `loc`, which does not parse: the client skips it.
    /// `salvage` says what of it is kept (records the client recovers
    /// from it). A line once dropped is not dropped again.
    pub fn drop_line(
        &mut self,
        f: &'f Finding,
        action: &'static str,
        loc: &Loc,
        salvage: impl FnOnce(&[u8]) -> Option<Salvage>,
    ) -> Result<()> {
        let Some(line) = loc.line() else {
            return Ok(());
        };
        if !self.lines.drop.insert(line) {
            return Ok(());
        }
        let (before, before_base64) = self.records.read_verbatim(loc)?;
        let kept = salvage(&self.records.read_bytes(loc)?);
        let description = match &kept {
            Some(s) => {
                self.lines.drop.remove(&line);
                self.lines.replace.insert(line, s.text.clone());
                self.tree.ids.extend(s.ids.iter().cloned());
                s.description.clone()
            }
            None => format!(
                "dropped line {line}, which does not parse ({} skips it on resume)",
                A::CLIENT
            ),
        };
        let mut e = Edit::of(f, action, description, loc.clone()).with_ids(f.ids.clone());
        e.before = Some(before);
        e.before_base64 = before_base64;
        e.after = kept.map(|s| s.text);
        self.edits.push((None, e));
        self.dropped_corrupt.push((line, f));
        Ok(())
    }

    /// Write record `i` with `text` (one line) in place of its bytes,
    /// which may span lines (a record split over them): the lines after
    /// its first are dropped. A record rewritten once is not rewritten
    /// again; the edit is logged all the same.
    pub fn rewrite(&mut self, e: Edit, i: usize, text: String) -> Result<()> {
        let loc = &self.nodes[i].loc;
        if let (Some(first), false) = (loc.line(), self.texts.contains_key(&i)) {
            let spans = self.records.read_bytes(loc)?;
            let more = memchr::memchr_iter(b'\n', &spans).count() as u64;
            self.lines.drop.extend(first + 1..=first + more);
            self.texts.insert(i, text);
        }
        self.edits.push((Some(i), e));
        Ok(())
    }

    /// Drop the line at `loc`, which holds nothing to keep (padding).
    pub fn drop_padding(&mut self, mut e: Edit, loc: &Loc) -> Result<()> {
        let Some(line) = loc.line() else {
            return Ok(());
        };
        if !self.lines.drop.insert(line) {
            return Ok(());
        }
        let (before, before_base64) = self.records.read_verbatim(loc)?;
        e.before = Some(before);
        e.before_base64 = before_base64;
        self.edits.push((None, e));
        Ok(())
    }

    /// Drop record `i`'s line; its children hang from its parent. False,
    /// and nothing done, when the line holds other records too (glued
    /// ones): dropping it would drop them.
    pub fn drop_node(
        &mut self,
        f: &Finding,
        action: &'static str,
        i: usize,
        description: String,
        ids: Vec<String>,
    ) -> Result<bool> {
        let n = &self.nodes[i];
        if n.glued {
            return Ok(false);
        }
        self.tree.dropped[i] = true;
        self.tree.value[i] = None;
        if let Some(line) = n.loc.line() {
            self.lines.drop.insert(line);
        }
        let mut ed = Edit::of(f, action, description, n.loc.clone()).with_ids(ids);
        // The line's exact bytes: a line that is not UTF-8 is kept in the
        // log in base64 as well.
        let (before, before_base64) = self.records.read_verbatim(&n.loc)?;
        (ed.before, ed.before_base64) = (Some(before), before_base64);
        self.edits.push((None, ed));
        if let Some(id) = n.id.clone() {
            let up = self.tree.parent[i].clone();
            self.relink_children(
                f,
                &id,
                up,
                "the dropped result's parent",
                "still reaches what came before",
                &[],
            );
        }
        Ok(true)
    }

    /// Drop record `i`'s line, which repeats record `of`'s (the same
    /// bytes, the same id: a line written twice). Its id stays (`of` has
    /// it), so no record is re-linked. False, and nothing done, when
    /// either shares its line with other records, or the lines differ.
    pub fn drop_repeat(
        &mut self,
        f: &Finding,
        action: &'static str,
        i: usize,
        of: usize,
    ) -> Result<bool> {
        let (n, o) = (&self.nodes[i], &self.nodes[of]);
        let (Some(line), Some(first)) = (n.loc.line(), o.loc.line()) else {
            return Ok(false);
        };
        if n.glued || o.glued || i == of || n.id.is_none() || n.id != o.id {
            return Ok(false);
        }
        let (before, before_base64) = self.records.read_verbatim(&n.loc)?;
        if self.records.read_bytes(&n.loc)? != self.records.read_bytes(&o.loc)? {
            return Ok(false);
        }
        if self.tree.dropped[i] || !self.lines.drop.insert(line) {
            return Ok(true);
        }
        self.tree.dropped[i] = true;
        self.tree.value[i] = None;
        let mut ed = Edit::of(
            f,
            action,
            format!(
                "dropped line {line}, which repeats line {first} byte for byte (a line written twice: {} would send what it holds twice)",
                A::CLIENT
            ),
            n.loc.clone(),
        )
        .with_ids(f.ids.clone());
        (ed.before, ed.before_base64) = (Some(before), before_base64);
        self.edits.push((None, ed));
        Ok(true)
    }

    /// The records whose parent is `id` hang from `to` instead, each an
    /// edit: "linked line N to {what}, so the client's walk {walk}".
    fn relink_children(
        &mut self,
        f: &Finding,
        id: &str,
        to: Option<String>,
        what: &str,
        walk: &str,
        ids: &[&str],
    ) {
        for c in self.tree.children(id) {
            self.tree.parent[c] = to.clone();
            let loc = self.nodes[c].loc.clone();
            self.edits.push((
                Some(c),
                Edit::of(
                    f,
                    "relink",
                    format!(
                        "linked line {} to {what}, so {}'s walk {walk}",
                        loc.line().unwrap_or(0),
                        A::CLIENT
                    ),
                    loc,
                )
                .with_ids(ids.iter().map(|s| s.to_string()).collect()),
            ));
        }
    }

    /// Record `i`'s text in the copy, from its text `raw` in the input:
    /// its edited value with the parent the plan gives it, or the input's
    /// text with only its parent member changed.
    fn record_text(&self, i: usize, n: &Node, raw: &str) -> String {
        match &self.tree.value[i] {
            Some(v) => {
                let mut v = v.clone();
                if let Some(o) = v.as_object_mut() {
                    o.insert(
                        A::PARENT.into(),
                        self.tree.parent[i]
                            .clone()
                            .map_or(Value::Null, Value::String),
                    );
                }
                v.to_string()
            }
            None => with_parent::<A>(
                raw,
                n.parent.as_deref(),
                self.tree.parent[i].as_deref(),
                &n.value,
            ),
        }
    }

    /// Remove item `k` of the array at `pointer` in record `i`, unless it
    /// is the array's only item: whether it was removed.
    pub fn remove_item(&mut self, i: usize, pointer: &str, k: usize) -> bool {
        let v = self.tree.value[i].get_or_insert_with(|| self.nodes[i].value.clone());
        match v.pointer_mut(pointer).and_then(Value::as_array_mut) {
            Some(a) if k < a.len() && a.len() > 1 => {
                a.remove(k);
                true
            }
            _ => false,
        }
    }

    /// The id a record put in after record `i` hangs from: the last one
    /// already put in after it, else `own`, record `i`'s id.
    pub fn under(&self, i: usize, own: &str) -> String {
        self.tree
            .inserted
            .get(&i)
            .and_then(|v| v.last())
            .map(|(id, _)| id.clone())
            .unwrap_or_else(|| own.to_string())
    }

    /// Put `value` (whose id is `id`, a child of `under`) in right after
    /// record `i`, as the result for the call `call`: the children of
    /// `under` hang from it.
    #[allow(clippy::too_many_arguments)]
    pub fn put_after(
        &mut self,
        f: &Finding,
        action: &'static str,
        i: usize,
        under: &str,
        id: String,
        value: Value,
        call: &str,
        description: String,
    ) {
        self.relink_children(
            f,
            under,
            Some(id.clone()),
            &format!("the result put in for `{call}`"),
            "goes through it",
            &[call],
        );
        let mut ed = Edit::of(f, action, description, self.nodes[i].loc.clone())
            .with_ids(vec![call.to_string()]);
        ed.synthesized = true;
        ed.after = Some(value.to_string());
        self.edits.push((None, ed));
        self.tree.inserted.entry(i).or_default().push((id, value));
    }

    /// The records a salvage kept (their ids and parents), for the
    /// relinks after it to see their links.
    pub fn salvaged(&mut self, links: impl IntoIterator<Item = (String, Option<String>)>) {
        self.salvaged.extend(links);
    }

    /// Whether the walk up the parent links (as the plan leaves them) from
    /// the record `from` comes to the record `to`.
    fn walk_reaches(&self, from: &str, to: &str) -> bool {
        let mut by_id: HashMap<&str, usize> = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if let (false, Some(id)) = (self.tree.dropped[i], n.id.as_deref()) {
                by_id.entry(id).or_insert(i);
            }
        }
        let mut at = Some(from.to_string());
        let mut seen = HashSet::new();
        while let Some(id) = at {
            if id == to {
                return true;
            }
            if !seen.insert(id.clone()) {
                return false;
            }
            at = match by_id.get(id.as_str()) {
                Some(&i) => self.tree.parent[i].clone(),
                None => match self.salvaged.get(&id) {
                    Some(p) => p.clone(),
                    None => return false,
                },
            };
        }
        false
    }

    /// The plan's end: a dropped line in the middle was most likely the
    /// parent of the first record after it, which is linked to the record
    /// before it; each changed line's text; the edits, into `log`. The
    /// lines the copy changes.
    pub fn finish(mut self, log: &mut Log) -> Result<Lines> {
        let nodes = self.nodes;
        for (line, f) in std::mem::take(&mut self.dropped_corrupt) {
            // The first record after it the copy keeps (one this plan
            // drops, a stray result, hands its children to its parent).
            let Some(a) = (0..nodes.len())
                .find(|&k| !self.tree.dropped[k] && nodes[k].loc.line().is_some_and(|l| l > line))
            else {
                continue;
            };
            let Some(missing) = self.tree.parent[a].clone() else {
                continue;
            };
            if self.tree.ids.contains(&missing) {
                continue;
            }
            let before = nodes[..a]
                .iter()
                .enumerate()
                .rev()
                .find(|(k, n)| {
                    !self.tree.dropped[*k] && n.id.is_some() && n.loc.line() != Some(line)
                })
                .and_then(|(_, n)| n.id.clone());
            // A link that would close a cycle the dropped line had hidden
            // (the client's walk would never end, or stop there) is not
            // made: the record keeps its parent, the walk stops at it as
            // it did.
            if let (Some(b), Some(own)) = (&before, &nodes[a].id)
                && self.walk_reaches(b, own)
            {
                continue;
            }
            self.tree.parent[a] = before.clone();
            self.edits.push((
                Some(a),
                Edit::of(f, "relink", format!(
                        "linked line {} (its parent `{missing}` is in no line left) to {}, the {} before the dropped line, so {}'s walk reaches the history before it",
                        nodes[a].loc.line().unwrap_or(0),
                        match &before {
                            Some(b) => format!("`{b}`"),
                            None => format!("nothing (the start of the {})", A::WHOLE),
                        },
                        A::NODE,
                        A::CLIENT,
                    ), nodes[a].loc.clone()),
            ));
        }
        // The text of each changed line.
        for (i, n) in nodes.iter().enumerate() {
            if self.tree.dropped[i] || n.glued {
                continue;
            }
            let text = self.texts.get(&i);
            if self.tree.parent[i] == n.parent && self.tree.value[i].is_none() && text.is_none() {
                continue;
            }
            let Some(line) = n.loc.line() else { continue };
            let raw = match text {
                Some(t) => t.clone(),
                None => self.records.read(&n.loc)?,
            };
            let text = self.record_text(i, n, &raw);
            self.lines.replace.insert(line, text);
        }
        // The records glued on one line (which the client reads each):
        // each changed one written in place in the line's text, the rest
        // of the line as it is.
        let mut glued_lines: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (i, n) in nodes.iter().enumerate() {
            if let (true, Some(line)) = (n.glued, n.loc.line()) {
                glued_lines.entry(line).or_default().push(i);
            }
        }
        for (line, on) in glued_lines {
            let changed = |i: usize| {
                !self.tree.dropped[i]
                    && (self.tree.parent[i] != nodes[i].parent || self.tree.value[i].is_some())
            };
            if self.lines.drop.contains(&line) || !on.iter().any(|&i| changed(i)) {
                continue;
            }
            let bytes = self.records.read_bytes(&nodes[on[0]].loc)?;
            let Ok(raw) = String::from_utf8(bytes) else {
                continue;
            };
            // The spans the client reads records from, as it reads them.
            let spans: Vec<(usize, usize)> = super::balanced_objects(&raw)
                .into_iter()
                .filter(|&(s, t)| super::parse(&raw[s..t]).is_ok())
                .collect();
            if spans.len() != on.len() {
                continue;
            }
            let mut text = raw.clone();
            for (&i, &(s, t)) in on.iter().zip(&spans).rev() {
                if !changed(i) {
                    continue;
                }
                let record = self.record_text(i, &nodes[i], &raw[s..t]);
                text.replace_range(s..t, &record);
            }
            self.lines.replace.insert(line, text);
        }
        for (i, list) in &self.tree.inserted {
            if let Some(line) = nodes[*i].loc.line() {
                self.lines
                    .insert_after
                    .entry(line)
                    .or_default()
                    .extend(list.iter().map(|(_, v)| v.to_string()));
            }
        }
        for (at, mut e) in std::mem::take(&mut self.edits) {
            if let Some(i) = at {
                let line = nodes[i].loc.line().unwrap_or(0);
                let (before, before_base64) = self.records.read_verbatim(&nodes[i].loc)?;
                e.before = Some(before);
                e.before_base64 = before_base64;
                e.after = self.lines.replace.get(&line).cloned();
            }
            log.edits.push(e);
        }
        Ok(self.lines)
    }
}

/// `line` with its parent member ([`App::PARENT`]) set to `parent`: in
/// place in its text when it holds the member as `JSON.stringify` writes
/// it, else re-serialised.
fn with_parent<A: App>(
    line: &str,
    old: Option<&str>,
    parent: Option<&str>,
    value: &Value,
) -> String {
    let member = |p: Option<&str>| match p {
        Some(p) => format!("\"{}\":{}", A::PARENT, Value::String(p.to_string())),
        None => format!("\"{}\":null", A::PARENT),
    };
    let was = member(old);
    if line.matches(&was).count() == 1 {
        return line.replacen(&was, &member(parent), 1);
    }
    let mut v = value.clone();
    if let Some(o) = v.as_object_mut() {
        o.insert(
            A::PARENT.into(),
            parent.map_or(Value::Null, |p| Value::String(p.to_string())),
        );
    }
    v.to_string()
}
