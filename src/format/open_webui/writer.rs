//! Repair of Open WebUI's `webui.db`: the `chat` column of each chat with a
//! broken tree is rewritten, re-linked, and nothing else changes (other
//! chats and columns, other tables, the schema).
//!
//! The tree is mended so that every stored message is reachable from the
//! root and the web app's walk ends:
//!
//! 1. a cycle is broken at its oldest message, and that message, like one
//!    whose `parentId` names no message, is hung under the newest message
//!    stored before it (by `timestamp`, then position) that does not
//!    descend from it, or becomes a root when there is none;
//! 2. every `childrenIds` is rebuilt from the `parentId`s: the entries that
//!    were right keep their order, a missing child is appended, an entry
//!    that names no message or a message with another parent is dropped;
//! 3. `currentId` naming no message (or one without a role) points at the
//!    newest leaf with a role; otherwise it moves down to its last
//!    descendant through the last child, as Open WebUI's backend does;
//! 4. the `messages` list beside the tree, when there is one, is written
//!    again as the walk from `currentId`.
//!
//! A message without a role is kept as it is (reported only). The whole
//! `chat` value, before and after, is in the repair log. The copy is made
//! with SQLite's backup API from the forensic snapshot.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::TABLE;
use crate::error::{Error, Result};
use crate::finding::Action;
use crate::format::records::record::replace_lone_surrogates;
use crate::model::{Conversation, Dialect, Loc};
use crate::source::sqlite::{self, Snapshot};
use crate::write::sqlite::{db_err, edit_sqlite_copy};
use crate::write::{Edit, Left, Log, Planned, Target, Writer};

/// What this writer carries out.
pub fn supports(_: Dialect, a: &Action) -> bool {
    matches!(a, Action::Relink { .. })
}

pub struct OpenWebuiWriter {
    input: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    snap: Snapshot,
    /// Chats to rewrite: (rowid, new `chat` text).
    rewrite: Vec<(i64, String)>,
}

pub fn new(t: &Target<'_>) -> Result<Box<dyn Writer>> {
    Ok(Box::new(OpenWebuiWriter {
        input: t.input.to_path_buf(),
        output: t.output.map(Path::to_path_buf),
        force: t.force,
        snap: sqlite::open(t.input)?,
        rewrite: Vec::new(),
    }))
}

impl Writer for OpenWebuiWriter {
    fn plan(&mut self, conv: &Conversation, planned: &[Planned<'_>], log: &mut Log) -> Result<()> {
        let Some(row) = relink_loc(planned).and_then(Loc::rowid) else {
            return Ok(());
        };
        let before: String = self
            .snap
            .conn
            .query_row(
                "SELECT CAST(chat AS TEXT) FROM chat WHERE rowid = ?1",
                [row],
                |r| r.get(0),
            )
            .map_err(sqlite::error_of(&self.input))?;
        let at = super::row_loc(&conv.id, Some(row));
        if let Some(after) = relink(conv, planned, &before, at, &self.input, log)? {
            self.rewrite.push((row, after));
        }
        Ok(())
    }

    fn write(self: Box<Self>, _log: &mut Log) -> Result<()> {
        let OpenWebuiWriter {
            input,
            output,
            force,
            snap,
            rewrite,
        } = *self;
        let Some(output) = output else { return Ok(()) };
        let out = output.as_path();
        edit_sqlite_copy(&input, out, force, snap, |tx| {
            for (row, text) in &rewrite {
                tx.execute(
                    &format!("UPDATE {TABLE} SET chat = ?1 WHERE rowid = ?2"),
                    rusqlite::params![text, row],
                )
                .map_err(|e| db_err(out, e))?;
            }
            Ok(())
        })
    }
}

/// Where the first re-linking of a chat's findings points (the chat's row).
pub fn relink_loc<'a>(planned: &'a [Planned<'_>]) -> Option<&'a Loc> {
    planned
        .iter()
        .flat_map(|p| &p.fix.actions)
        .find_map(|a| match a {
            Action::Relink { loc } => Some(loc),
            _ => None,
        })
}

/// Plan the re-linking of chat `conv`, whose `chat` column is `before`
/// (its row at `at`): the edit in the log and the new text, or `None`
/// when nothing is to change (said in the log).
pub fn relink(
    conv: &Conversation,
    planned: &[Planned<'_>],
    before: &str,
    at: Loc,
    input: &Path,
    log: &mut Log,
) -> Result<Option<String>> {
    let relink: Vec<&Planned<'_>> = planned
        .iter()
        .filter(|p| {
            p.fix
                .actions
                .iter()
                .any(|a| matches!(a, Action::Relink { .. }))
        })
        .collect();
    let Some(first) = relink.first() else {
        return Ok(None);
    };
    // A lone surrogate escape would not survive the rewrite as it is.
    if replace_lone_surrogates(before.as_bytes()).1 > 0 {
        for p in relink {
            log.left.push(Left::of(p.finding, "the chat holds a lone surrogate escape, which rewriting its JSON would change: mend the tree by hand"));
        }
        return Ok(None);
    }
    let mut chat: Value = serde_json::from_str(before)
        .map_err(|e| Error::input(input, format!("chat {} no longer parses: {e}", conv.id)))?;
    let changes = mend(&mut chat);
    if changes.is_empty() {
        for p in relink {
            log.left.push(Left::of(
                p.finding,
                "the re-linking found nothing to change",
            ));
        }
        return Ok(None);
    }
    let after = serde_json::to_string(&chat).expect("JSON");
    log.edits.push(Edit {
        before: Some(before.to_string()),
        after: Some(after.clone()),
        ..Edit::new(
            first.finding.rule,
            &conv.id,
            "relink",
            format!(
                "re-linked chat `{}`'s message tree: {}",
                conv.id,
                changes.join("; ")
            ),
            at,
        )
    });
    Ok(Some(after))
}

fn str_of<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// Mend the tree of chat `chat` in place (see the module's doc): what
/// changed, in a few words each; nothing when the tree is whole.
pub fn mend(chat: &mut Value) -> Vec<String> {
    let mut changes = Vec::new();
    let Some(history) = chat.get_mut("history").filter(|h| h.is_object()) else {
        return changes;
    };
    let Some(map) = history.get("messages").and_then(Value::as_object) else {
        return changes;
    };
    let keys: Vec<String> = map.keys().cloned().collect();
    let index: HashMap<&str, usize> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    let n = keys.len();
    let has_role: Vec<bool> = keys
        .iter()
        .map(|k| str_of(&map[k], "role").is_some())
        .collect();
    let mut parent: Vec<Option<usize>> = vec![None; n];
    let mut relink = vec![false; n];
    for (i, k) in keys.iter().enumerate() {
        if let Some(p) = str_of(&map[k], "parentId") {
            match index.get(p) {
                Some(&j) => parent[i] = Some(j),
                None => relink[i] = true,
            }
        }
    }
    // Time order: by `timestamp`, a message without one where it is
    // stored (it takes the one before it), then by position.
    let mut last = f64::NEG_INFINITY;
    let stamp: Vec<f64> = keys
        .iter()
        .map(|k| {
            if let Some(t) = map[k].get("timestamp").and_then(Value::as_f64) {
                last = t;
            }
            last
        })
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| stamp[a].total_cmp(&stamp[b]).then(a.cmp(&b)));
    let rank: Vec<usize> = {
        let mut r = vec![0; n];
        for (pos, &i) in order.iter().enumerate() {
            r[i] = pos;
        }
        r
    };
    // Break every cycle at its oldest message.
    let mut done = vec![false; n];
    for start in 0..n {
        let mut chain = Vec::new();
        let mut at = Some(start);
        while let Some(i) = at {
            if done[i] {
                break;
            }
            if let Some(pos) = chain.iter().position(|&c| c == i) {
                let cycle = &chain[pos..];
                let oldest = *cycle.iter().min_by_key(|&&c| rank[c]).expect("a cycle");
                parent[oldest] = None;
                relink[oldest] = true;
                break;
            }
            chain.push(i);
            at = parent[i];
        }
        for c in chain {
            done[c] = true;
        }
    }
    // Hang each message to re-link under the newest older one that does
    // not descend from it (the links form a forest now).
    let descends = |parent: &[Option<usize>], mut from: usize, of: usize| loop {
        if from == of {
            return true;
        }
        match parent[from] {
            Some(p) => from = p,
            None => return false,
        }
    };
    for &i in &order {
        if !relink[i] {
            continue;
        }
        let to = order[..rank[i]]
            .iter()
            .rev()
            .copied()
            .find(|&c| has_role[c] && !descends(&parent, c, i));
        parent[i] = to;
        let old = str_of(&map[&keys[i]], "parentId")
            .unwrap_or("null")
            .to_string();
        changes.push(match to {
            Some(p) => format!("`{}`'s parent `{old}` → `{}`", keys[i], keys[p]),
            None => format!("`{}`'s parent `{old}` → null (the root)", keys[i]),
        });
    }
    // The children of each message, from the parents.
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, k) in keys.iter().enumerate() {
        let stored = map[k].get("childrenIds").and_then(Value::as_array);
        for c in stored.into_iter().flatten().filter_map(Value::as_str) {
            if let Some(&j) = index.get(c)
                && parent[j] == Some(i)
                && !children[i].contains(&j)
            {
                children[i].push(j);
            }
        }
    }
    for &j in &order {
        if let Some(p) = parent[j]
            && !children[p].contains(&j)
        {
            children[p].push(j);
        }
    }
    // The current message.
    let current = history
        .get("currentId")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut cur = current
        .as_deref()
        .and_then(|c| index.get(c).copied())
        .filter(|&i| has_role[i]);
    if cur.is_none() {
        cur = order
            .iter()
            .rev()
            .copied()
            .find(|&i| has_role[i] && children[i].iter().all(|&c| !has_role[c]));
    }
    if let Some(mut c) = cur {
        while let Some(&next) = children[c].iter().rev().find(|&&k| has_role[k]) {
            c = next;
        }
        cur = Some(c);
    }
    // Write the links back.
    let map = history
        .get_mut("messages")
        .and_then(Value::as_object_mut)
        .expect("checked above");
    for (i, k) in keys.iter().enumerate() {
        let Some(m) = map.get_mut(k).and_then(Value::as_object_mut) else {
            continue;
        };
        let want_parent = parent[i].map_or(Value::Null, |p| Value::from(keys[p].clone()));
        let had_parent = m.get("parentId").cloned().unwrap_or(Value::Null);
        let same_parent = match (&had_parent, &want_parent) {
            (Value::String(a), Value::Null) => a.is_empty(),
            (a, b) => a == b,
        };
        if !same_parent {
            m.insert("parentId".into(), want_parent);
        }
        let want: Vec<Value> = children[i]
            .iter()
            .map(|&c| Value::from(keys[c].clone()))
            .collect();
        let had = m.get("childrenIds").and_then(Value::as_array);
        if had.map(Vec::as_slice) != Some(want.as_slice()) && !(had.is_none() && want.is_empty()) {
            let dropped: Vec<String> = had
                .into_iter()
                .flatten()
                .filter(|c| !want.contains(*c))
                .map(|c| format!("`{}`", c.as_str().unwrap_or("?")))
                .collect();
            if !dropped.is_empty() {
                changes.push(format!(
                    "dropped {} from `{k}`'s `childrenIds`",
                    dropped.join(", ")
                ));
            }
            m.insert("childrenIds".into(), Value::Array(want));
        }
    }
    let want_current = cur.map(|c| keys[c].clone());
    if want_current != current {
        changes.push(format!(
            "`currentId` `{}` → `{}`",
            current.as_deref().unwrap_or("null"),
            want_current.as_deref().unwrap_or("null")
        ));
        history.as_object_mut().expect("an object").insert(
            "currentId".into(),
            want_current.clone().map_or(Value::Null, Value::from),
        );
    }
    // The `messages` list beside the tree: the walk from `currentId`.
    let walk: Vec<Value> = {
        let map = history["messages"].as_object().expect("an object");
        let mut out = Vec::new();
        let mut at = cur;
        while let Some(i) = at {
            out.push(map[&keys[i]].clone());
            at = parent[i];
        }
        out.reverse();
        out
    };
    if let Some(list) = chat.get_mut("messages").filter(|l| l.is_array())
        && *list != Value::Array(walk.clone())
    {
        if !changes.is_empty() {
            changes.push("the `messages` list written again as the walk from `currentId`".into());
        }
        *list = Value::Array(walk);
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(id: &str, parent: Option<&str>, children: &[&str], ts: i64) -> Value {
        json!({"id": id, "parentId": parent, "childrenIds": children, "role": "user", "content": id, "timestamp": ts})
    }

    #[test]
    fn a_cycle_is_broken_at_its_oldest_message_and_hung_under_the_one_before() {
        let mut chat = json!({"history": {"currentId": "d", "messages": {
            "a": m("a", None, &["b"], 1), "b": m("b", Some("a"), &[], 2),
            "c": m("c", Some("d"), &["d"], 3), "d": m("d", Some("c"), &["c"], 4)}}});
        let changes = mend(&mut chat);
        assert!(!changes.is_empty());
        let h = &chat["history"]["messages"];
        assert_eq!(h["c"]["parentId"], "b");
        assert_eq!(h["b"]["childrenIds"], json!(["c"]));
        assert_eq!(h["d"]["childrenIds"], json!([]));
        assert_eq!(chat["history"]["currentId"], "d");
        // Mended once, nothing more to mend.
        assert!(mend(&mut chat).is_empty());
    }

    #[test]
    fn a_whole_tree_is_left_as_it_is() {
        let mut chat = json!({"history": {"currentId": "b", "messages": {
            "a": m("a", None, &["b"], 1), "b": m("b", Some("a"), &[], 2)}}});
        let before = chat.clone();
        assert!(mend(&mut chat).is_empty());
        assert_eq!(chat, before);
    }
}
