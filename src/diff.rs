//! `diff`: a message-level structural comparison of two histories, of any
//! supported formats (original vs repaired, store vs another store).
//! Messages are aligned with `similar`'s diff on their content; a removed
//! message that reappears elsewhere is reported as moved; aligned messages
//! whose parts or stored attributes differ are reported as changed.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;
use similar::{Algorithm, DiffOp, capture_diff_slices};

use crate::error::{Error, Result};
use crate::escape::preview;
use crate::model::{Conversation, Loc, Message, PartKind};
use crate::source::Source;

#[derive(Debug, Serialize)]
#[serde(tag = "change", rename_all = "lowercase")]
pub enum Change {
    Added {
        b: usize,
        b_loc: Loc,
        role: &'static str,
        summary: String,
    },
    Removed {
        a: usize,
        a_loc: Loc,
        role: &'static str,
        summary: String,
    },
    Moved {
        a: usize,
        b: usize,
        a_loc: Loc,
        b_loc: Loc,
        role: &'static str,
        summary: String,
    },
    Changed {
        a: usize,
        b: usize,
        a_loc: Loc,
        b_loc: Loc,
        role: &'static str,
        details: Vec<String>,
    },
}

#[derive(Debug, Serialize)]
pub struct ConvDiff {
    pub a_id: Option<String>,
    pub b_id: Option<String>,
    pub a_messages: usize,
    pub b_messages: usize,
    pub changes: Vec<Change>,
    /// Records that do not parse, present on one side only.
    pub corrupt_removed: Vec<Loc>,
    pub corrupt_added: Vec<Loc>,
}

impl ConvDiff {
    pub fn is_equal(&self) -> bool {
        self.a_id.is_some()
            && self.b_id.is_some()
            && self.changes.is_empty()
            && self.corrupt_removed.is_empty()
            && self.corrupt_added.is_empty()
    }
}

#[derive(Debug, Serialize)]
pub struct Diff {
    pub version: u32,
    pub a: String,
    pub b: String,
    pub conversations: Vec<ConvDiff>,
}

impl Diff {
    pub fn is_equal(&self) -> bool {
        self.conversations.iter().all(ConvDiff::is_equal)
    }
}

/// A short description of a part, for summaries and details.
fn part_text(p: &PartKind) -> String {
    match p {
        PartKind::Text { text } => format!("text \"{}\"", preview(text, 50)),
        PartKind::Thinking { text } => format!("thinking \"{}\"", preview(text, 50)),
        PartKind::ToolCall {
            id,
            name,
            arguments,
        } => {
            format!("tool-call `{id}` {name}({})", preview(&arguments.raw, 40))
        }
        PartKind::ToolResult {
            call_id,
            content,
            is_error,
        } => format!(
            "tool-result `{call_id}`{} \"{}\"",
            if *is_error == Some(true) {
                " (error)"
            } else {
                ""
            },
            preview(content, 40)
        ),
        PartKind::Other { kind } => kind.clone(),
    }
}

fn summary(m: &Message) -> String {
    let parts: Vec<String> = m.parts.iter().map(|p| part_text(&p.kind)).collect();
    if parts.is_empty() {
        "(empty)".into()
    } else {
        parts.join("; ")
    }
}

/// What a message says: the key messages are aligned on (its role and
/// its parts' content, not where it is stored). It refers to the message
/// and carries a hash of that content, instead of a copy of every text:
/// a copy doubled the memory a diff of long histories took, for each side.
#[derive(Debug, Clone, Copy)]
struct Key<'m> {
    hash: u64,
    msg: &'m Message,
}

impl Key<'_> {
    fn content(&self) -> impl Iterator<Item = Fields<'_>> {
        self.msg.parts.iter().map(|p| fields(&p.kind))
    }
}

impl PartialEq for Key<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o).is_eq()
    }
}

impl Eq for Key<'_> {}

impl PartialOrd for Key<'_> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Key<'_> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.hash
            .cmp(&o.hash)
            .then_with(|| self.msg.role.as_str().cmp(o.msg.role.as_str()))
            .then_with(|| self.content().cmp(o.content()))
    }
}

impl std::hash::Hash for Key<'_> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write_u64(self.hash)
    }
}

/// What a part says, as the key compares it: its kind and its texts.
type Fields<'p> = (u8, &'p str, &'p str, &'p str, Option<bool>);

fn fields(p: &PartKind) -> Fields<'_> {
    match p {
        PartKind::Text { text } => (0, text, "", "", None),
        PartKind::Thinking { text } => (1, text, "", "", None),
        PartKind::ToolCall {
            id,
            name,
            arguments,
        } => (2, id, name, &arguments.raw, None),
        PartKind::ToolResult {
            call_id,
            content,
            is_error,
        } => (3, call_id, content, "", *is_error),
        PartKind::Other { kind } => (4, kind, "", "", None),
    }
}

fn key(m: &Message) -> Key<'_> {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = foldhash::quality::FixedState::with_seed(0).build_hasher();
    m.role.as_str().hash(&mut h);
    for p in &m.parts {
        fields(&p.kind).hash(&mut h);
    }
    Key {
        hash: h.finish(),
        msg: m,
    }
}

/// Differences between two messages that align.
fn details(a: &Message, b: &Message) -> Vec<String> {
    let mut out = Vec::new();
    if a.role != b.role {
        out.push(format!("role `{}` → `{}`", a.role, b.role));
    }
    if a.stored_index != b.stored_index {
        let f = |i: Option<i64>| i.map_or("none".to_string(), |i| i.to_string());
        out.push(format!(
            "stored index {} → {}",
            f(a.stored_index),
            f(b.stored_index)
        ));
    }
    if a.finish_reason != b.finish_reason {
        out.push(format!(
            "finish reason {:?} → {:?}",
            a.finish_reason, b.finish_reason
        ));
    }
    let n = a.parts.len().max(b.parts.len());
    for i in 0..n {
        match (a.parts.get(i), b.parts.get(i)) {
            (Some(x), Some(y)) if x.kind == y.kind => {}
            (Some(x), Some(y)) => out.push(format!(
                "part {i}: {} → {}",
                part_text(&x.kind),
                part_text(&y.kind)
            )),
            (Some(x), None) => out.push(format!("part {i} removed: {}", part_text(&x.kind))),
            (None, Some(y)) => out.push(format!("part {i} added: {}", part_text(&y.kind))),
            (None, None) => {}
        }
    }
    out
}

pub fn compare(a: &Conversation, b: &Conversation) -> ConvDiff {
    let ka: Vec<Key<'_>> = a.messages.iter().map(key).collect();
    let kb: Vec<Key<'_>> = b.messages.iter().map(key).collect();
    let ops = capture_diff_slices(Algorithm::Patience, &ka, &kb);
    let mut removed: Vec<usize> = Vec::new();
    let mut added: Vec<usize> = Vec::new();
    let mut changes = Vec::new();
    let mut replaced: Vec<(usize, usize)> = Vec::new();
    for op in ops {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for k in 0..len {
                    let (ma, mb) = (&a.messages[old_index + k], &b.messages[new_index + k]);
                    let d = details(ma, mb);
                    if !d.is_empty() {
                        changes.push((
                            old_index + k,
                            Change::Changed {
                                a: old_index + k,
                                b: new_index + k,
                                a_loc: ma.loc.clone(),
                                b_loc: mb.loc.clone(),
                                role: ma.role.as_str(),
                                details: d,
                            },
                        ));
                    }
                }
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => removed.extend(old_index..old_index + old_len),
            DiffOp::Insert {
                new_index, new_len, ..
            } => added.extend(new_index..new_index + new_len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                // Same role at the same offset: a message that changed.
                let pairs = old_len.min(new_len);
                for k in 0..pairs {
                    if a.messages[old_index + k].role == b.messages[new_index + k].role {
                        replaced.push((old_index + k, new_index + k));
                    } else {
                        removed.push(old_index + k);
                        added.push(new_index + k);
                    }
                }
                removed.extend(old_index + pairs..old_index + old_len);
                added.extend(new_index + pairs..new_index + new_len);
            }
        }
    }
    // A removed message whose content reappears among the added is moved.
    let mut added_by_key: HashMap<&Key<'_>, Vec<usize>> = HashMap::new();
    for &j in &added {
        added_by_key.entry(&kb[j]).or_default().push(j);
    }
    let mut moved_to: BTreeMap<usize, usize> = BTreeMap::new();
    for &i in &removed {
        if let Some(js) = added_by_key.get_mut(&ka[i])
            && !js.is_empty()
        {
            moved_to.insert(i, js.remove(0));
        }
    }
    let moved_targets: Vec<usize> = moved_to.values().copied().collect();
    // Changed messages may also be moved pairs hiding in a replace block.
    for (i, j) in replaced {
        let (ma, mb) = (&a.messages[i], &b.messages[j]);
        changes.push((
            i,
            Change::Changed {
                a: i,
                b: j,
                a_loc: ma.loc.clone(),
                b_loc: mb.loc.clone(),
                role: ma.role.as_str(),
                details: details(ma, mb),
            },
        ));
    }
    for &i in &removed {
        let m = &a.messages[i];
        match moved_to.get(&i) {
            Some(&j) => changes.push((
                i,
                Change::Moved {
                    a: i,
                    b: j,
                    a_loc: m.loc.clone(),
                    b_loc: b.messages[j].loc.clone(),
                    role: m.role.as_str(),
                    summary: summary(m),
                },
            )),
            None => changes.push((
                i,
                Change::Removed {
                    a: i,
                    a_loc: m.loc.clone(),
                    role: m.role.as_str(),
                    summary: summary(m),
                },
            )),
        }
    }
    for &j in added.iter().filter(|j| !moved_targets.contains(j)) {
        let m = &b.messages[j];
        // Order additions just after the message they follow in A's terms.
        let anchor = j.min(a.messages.len());
        changes.push((
            anchor,
            Change::Added {
                b: j,
                b_loc: m.loc.clone(),
                role: m.role.as_str(),
                summary: summary(m),
            },
        ));
    }
    changes.sort_by_key(|(pos, c)| (*pos, matches!(c, Change::Added { .. })));
    let excerpts_b: Vec<&str> = b.corrupt.iter().map(|c| c.excerpt.as_str()).collect();
    let excerpts_a: Vec<&str> = a.corrupt.iter().map(|c| c.excerpt.as_str()).collect();
    ConvDiff {
        a_id: Some(a.id.clone()),
        b_id: Some(b.id.clone()),
        a_messages: a.messages.len(),
        b_messages: b.messages.len(),
        changes: changes.into_iter().map(|(_, c)| c).collect(),
        corrupt_removed: a
            .corrupt
            .iter()
            .filter(|c| !excerpts_b.contains(&c.excerpt.as_str()))
            .map(|c| c.loc.clone())
            .collect(),
        corrupt_added: b
            .corrupt
            .iter()
            .filter(|c| !excerpts_a.contains(&c.excerpt.as_str()))
            .map(|c| c.loc.clone())
            .collect(),
    }
}

/// Every conversation of a source, or only the one asked for (the others
/// are dropped as they are read).
fn read_all(mut src: Box<dyn Source>, only: Option<&str>) -> Result<Vec<Conversation>> {
    let mut out = Vec::new();
    while let Some(c) = src.next_conversation() {
        let c = c?;
        if only.is_none_or(|id| id == c.id) {
            out.push(c);
        }
    }
    Ok(out)
}

fn only(c: &Conversation, side_a: bool) -> ConvDiff {
    ConvDiff {
        a_id: side_a.then(|| c.id.clone()),
        b_id: (!side_a).then(|| c.id.clone()),
        a_messages: if side_a { c.messages.len() } else { 0 },
        b_messages: if side_a { 0 } else { c.messages.len() },
        changes: Vec::new(),
        corrupt_removed: Vec::new(),
        corrupt_added: Vec::new(),
    }
}

/// Compare two histories, already open. Single-conversation inputs are
/// compared directly; multi-conversation stores are aligned by conversation
/// id (each side held in memory: a whole-store diff is not streamed).
pub fn diff(
    a: &Path,
    sa: Box<dyn Source>,
    b: &Path,
    sb: Box<dyn Source>,
    conversation: Option<&str>,
) -> Result<Diff> {
    let ca = read_all(sa, conversation)?;
    let cb = read_all(sb, conversation)?;
    if let Some(id) = conversation
        && ca.is_empty()
        && cb.is_empty()
    {
        return Err(Error::Usage(format!(
            "no conversation `{id}` in either input"
        )));
    }
    let mut convs = Vec::new();
    if ca.len() == 1 && cb.len() == 1 {
        convs.push(compare(&ca[0], &cb[0]));
    } else {
        let by_id: HashMap<&str, &Conversation> = cb.iter().map(|c| (c.id.as_str(), c)).collect();
        for c in &ca {
            match by_id.get(c.id.as_str()) {
                Some(other) => convs.push(compare(c, other)),
                None => convs.push(only(c, true)),
            }
        }
        let ids_a: Vec<&str> = ca.iter().map(|c| c.id.as_str()).collect();
        for c in cb.iter().filter(|c| !ids_a.contains(&c.id.as_str())) {
            convs.push(only(c, false));
        }
    }
    Ok(Diff {
        version: crate::finding::JSON_VERSION,
        a: a.display().to_string(),
        b: b.display().to_string(),
        conversations: convs,
    })
}
