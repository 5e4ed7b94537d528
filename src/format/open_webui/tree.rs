//! A chat's message tree, walked as the web app walks it, and what the
//! app's two halves do with a damaged tree.
//!
//! **The web app** (`createMessagesList(history, currentId)`,
//! src/lib/utils/index.ts, as open-webui 0.12.4 ships it) follows
//! `parentId` up from `currentId` and shows, and sends to the model, what
//! it reaches, root first:
//!
//! - `currentId` null, or naming no message → nothing: the chat opens
//!   empty;
//! - a `parentId` naming no message → the walk stops there: the list
//!   starts at that message, everything above it is not shown and not
//!   sent;
//! - a `parentId` leading back onto the walk → the loop never ends (the
//!   list grows until the tab runs out of memory): "Loading…" forever
//!   (016bb24 and earlier recurse, and die of a `RangeError`);
//! - a `parentId` null or absent → the root.
//!
//! **The backend** (`ChatTable._repair_chat_current_id`, run by
//! `get_chat_by_id` on every load, open_webui/models/chats.py in 0.12.4;
//! older releases do not have it) mends in memory (later sources also
//! write it back), before the web app gets the chat:
//!
//! - every message into its parent's `childrenIds` when missing there (a
//!   dangling entry in `childrenIds` is left, and skipped);
//! - a `currentId` naming a message with an `id` and a `role` moves down to
//!   its last descendant through `childrenIds`; any other `currentId`
//!   (missing, malformed, without a role) is replaced by the newest leaf
//!   with a role (by `timestamp`);
//! - it does not mend a missing parent nor a cycle: the web app's walk
//!   then meets them as above.
//!
//! tests/oracle/open_webui.py runs both pieces of the pinned wheel on the
//! fixtures and on their repaired copies (tests/open_webui.rs).
//!
//! Here the tree is read as stored (what the web app gets from an older
//! backend, or from any backend for a missing parent or a cycle), and the
//! findings say what each half does.

use std::collections::HashMap;

use serde_json::Value;

use super::loc;
use crate::model::tree::{Tree, TreeEnd, TreeNode};
use crate::model::{Conversation, Message, PartKind, Role, Slot, Text};

/// Read chat `value` (the `chat` column) into `conv`.
pub fn read(conv: &mut Conversation, value: &Value, chat: &str, rowid: Option<i64>) {
    let history = value.get("history").filter(|h| h.is_object());
    let messages = history.and_then(|h| h.get("messages"));
    match messages.and_then(Value::as_object) {
        Some(map) => read_tree(conv, history, map, chat, rowid),
        // A chat from before the tree: the `messages` list, in its order.
        None => {
            let list = value.get("messages").and_then(Value::as_array);
            for (i, m) in list.into_iter().flatten().enumerate() {
                let key = m
                    .get("id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("messages[{i}]"));
                match message(m, &loc(chat, rowid, &key)) {
                    Some(msg) => conv.messages.push(msg),
                    None => conv.meta_records += 1,
                }
            }
        }
    }
}

fn read_tree(
    conv: &mut Conversation,
    history: Option<&Value>,
    map: &serde_json::Map<String, Value>,
    chat: &str,
    rowid: Option<i64>,
) {
    let str_of = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let mut tree = Tree::default();
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(map.len());
    for (key, m) in map {
        index.insert(key.as_str(), tree.nodes.len());
        tree.nodes.push(TreeNode {
            loc: loc(chat, rowid, key),
            key: key.clone(),
            id: str_of(m, "id"),
            parent: str_of(m, "parentId"),
            children: m
                .get("childrenIds")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            role: str_of(m, "role"),
            timestamp: m.get("timestamp").and_then(Value::as_f64),
        });
    }
    for (i, n) in tree.nodes.iter().enumerate() {
        for c in &n.children {
            if !index.contains_key(c.as_str()) {
                tree.dangling_children.push((i, c.clone()));
            }
        }
    }
    tree.current = history.and_then(|h| str_of(h, "currentId"));
    tree.current_loc = Some(super::row_loc(chat, rowid));
    // The web app's walk, iteratively (it recurses).
    let end = match tree.current.as_deref() {
        None => TreeEnd::NoCurrent,
        Some(c) => match index.get(c) {
            None => TreeEnd::MissingCurrent {
                missing: c.to_string(),
            },
            Some(&start) => {
                let mut on = vec![false; tree.nodes.len()];
                let mut at = start;
                loop {
                    on[at] = true;
                    tree.path.push(at);
                    let Some(p) = tree.nodes[at].parent.as_deref() else {
                        break TreeEnd::Root;
                    };
                    match index.get(p) {
                        None => {
                            break TreeEnd::MissingParent {
                                at,
                                missing: p.to_string(),
                            };
                        }
                        Some(&k) if on[k] => break TreeEnd::Cycle { at, parent: k },
                        Some(&k) => at = k,
                    }
                }
            }
        },
    };
    tree.path.reverse();
    tree.end = Some(end);
    for &i in &tree.path {
        let n = &tree.nodes[i];
        match map.get(&n.key).and_then(|m| message(m, &n.loc)) {
            Some(msg) => conv.messages.push(msg),
            None => conv.meta_records += 1,
        }
    }
    conv.meta_records += (tree.nodes.len() - tree.path.len()) as u64;
    conv.tree = Some(Box::new(tree));
}

/// One stored message as the web app sends it: its role and its text
/// (`None`: no role the model knows, or not an object).
fn message(m: &Value, at: &crate::model::Loc) -> Option<Message> {
    let role = Role::parse(m.get("role")?.as_str()?)?;
    let mut msg = Message::new(role, at.clone());
    match m.get("content") {
        Some(Value::String(s)) => msg.push_at(
            PartKind::Text {
                text: Text::from(s.as_str()),
            },
            at.clone(),
            Slot::Whole("content"),
        ),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let kind = match item.get("type").and_then(Value::as_str) {
                    Some("text") => PartKind::Text {
                        text: Text::from(item.get("text").and_then(Value::as_str).unwrap_or("")),
                    },
                    Some(other) => PartKind::Other {
                        kind: other.to_string(),
                    },
                    None => continue,
                };
                msg.push_at(kind, at.clone(), Slot::Item("content", i));
            }
        }
        _ => {}
    }
    Some(msg)
}
