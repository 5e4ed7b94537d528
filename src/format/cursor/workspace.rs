//! Cursor's workspace database (`<User>/workspaceStorage/<hash>/
//! state.vscdb`): VS Code's `ItemTable(key, value)` alone, no
//! `cursorDiskKV`. Two of its keys concern chats:
//!
//! - `workbench.panel.aichat.view.aichat.chatdata`, the chat panel of
//!   Cursor before composers (2024): `{"tabs":[{"tabId", "chatTitle",
//!   "bubbles":[{"type":"user"|"ai", "text", …}]}]}`. The messages are
//!   here: one conversation per tab, a `user` bubble a user message, an
//!   `ai` bubble (its `text`, or `rawText` when `text` is empty) part of
//!   the assistant message it follows. A bubble with no text (a response
//!   stopped before any) and a bubble of another type are meta records.
//! - `composer.composerData`, the workspace's list of composers
//!   (`{"allComposers":[{"composerId", "name", "createdAt", …}], …}`).
//!   A composer's messages are **not** here: Cursor keeps them in the
//!   global database (`<User>/globalStorage/state.vscdb`, rows
//!   `composerData:<id>` and `bubbleId:<id>:…` of `cursorDiskKV`), read
//!   by this store's global reader. Each listed composer is a
//!   conversation with no message whose [`Elsewhere`] names that file
//!   (rule `history-elsewhere`). A listed composer that carries its
//!   bubbles inline (`conversation`, as older composer documents do) is
//!   read from them, as the global reader reads them.
//!
//! Shapes from readers of the store (cursor-chat exporters, hstry's
//! fixture, txcript); Cursor is closed source, so what it sends on resume
//! is not known. Every value is read when the database is opened: the
//! workspace's chats are small next to the global database.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::error::Result;
use crate::format::records::record::tree_as_lenient_readers_read;
use crate::model::{
    Conversation, CorruptRecord, Dialect, Elsewhere, Format, Loc, Message, Name, PartKind, Role,
    SourceInfo,
};
use crate::source::Source;
use crate::source::sqlite::{self, Snapshot};

pub const ITEMS: &str = "ItemTable";
/// The workspace's list of composers.
pub const COMPOSERS: &str = "composer.composerData";
/// The chat panel's tabs, before composers.
pub const CHATS: &str = "workbench.panel.aichat.view.aichat.chatdata";

/// Whether the database is a Cursor workspace's: `ItemTable` (key,
/// value) holding the composer list or the chat panel's tabs. VS Code's
/// own workspace `state.vscdb` holds neither.
pub fn detect(conn: &rusqlite::Connection, tables: &[String]) -> rusqlite::Result<bool> {
    if !tables.iter().any(|t| t == ITEMS) {
        return Ok(false);
    }
    let cols = sqlite::columns(conn, ITEMS)?;
    if !["key", "value"].iter().all(|c| cols.iter().any(|x| x == c)) {
        return Ok(false);
    }
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM ItemTable WHERE key IN (?1, ?2))",
        [COMPOSERS, CHATS],
        |r| r.get(0),
    )
}

/// The workspace's conversations, built when it is opened.
pub struct Workspace {
    info: Arc<SourceInfo>,
    convs: std::vec::IntoIter<Conversation>,
    _snap: Snapshot,
}

pub fn open(path: &Path, snap: Snapshot) -> Result<Workspace> {
    let info = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: Format::SqliteKv,
        dialect: Dialect::Cursor,
    });
    let rows = (|| -> rusqlite::Result<Vec<(i64, String, Vec<u8>)>> {
        let mut st = snap.conn.prepare(
            "SELECT rowid, key, value FROM ItemTable WHERE key IN (?1, ?2) ORDER BY key DESC",
        )?;
        let rows = st.query_map([COMPOSERS, CHATS], |r| {
            Ok((
                r.get(0)?,
                sqlite::text(r.get_ref(1)?).unwrap_or_default(),
                super::bytes(r.get_ref(2)?),
            ))
        })?;
        rows.collect()
    })()
    .map_err(sqlite::error_of(path))?;
    let holder = holder(path);
    let mut convs = Vec::new();
    // The chat panel's tabs first, then the composers.
    for (rowid, key, value) in rows {
        let at = row(&key, rowid);
        let v = match tree_as_lenient_readers_read(&value) {
            Ok((v, _)) => v,
            Err(e) => {
                let mut c = Conversation::new(key.as_str(), info.clone());
                c.corrupt.push(CorruptRecord::new(
                    at,
                    format!("`{key}` is not JSON ({e})"),
                    &value,
                    false,
                ));
                convs.push(c);
                continue;
            }
        };
        if key == CHATS {
            tabs(&v, rowid, &info, &mut convs);
        } else {
            composers(&v, rowid, &info, &holder, &mut convs);
        }
    }
    Ok(Workspace {
        info,
        convs: convs.into_iter(),
        _snap: snap,
    })
}

impl Source for Workspace {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        self.convs.next().map(Ok)
    }
}

fn row(key: &str, rowid: i64) -> Loc {
    Loc::Row {
        table: Name::Static(ITEMS),
        key: Arc::from(key),
        rowid: Some(rowid),
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Where the workspace's composers keep their messages: the global
/// database beside `workspaceStorage`, named by its path when this one
/// lies where Cursor puts it.
fn holder(path: &Path) -> String {
    let global: Option<PathBuf> = path
        .parent()
        .and_then(Path::parent)
        .filter(|d| d.file_name().is_some_and(|n| n == "workspaceStorage"))
        .and_then(Path::parent)
        .map(|user| user.join("globalStorage").join("state.vscdb"));
    match global {
        Some(g) => format!(
            "Cursor's global database `{}` (rows `composerData:<id>` and `bubbleId:<id>:…` of `cursorDiskKV`)",
            g.display()
        ),
        None => "Cursor's global database `<User>/globalStorage/state.vscdb` (rows `composerData:<id>` and `bubbleId:<id>:…` of `cursorDiskKV`)".to_string(),
    }
}

/// The chat panel's tabs: one conversation per tab that holds a bubble.
fn tabs(v: &Value, rowid: i64, info: &Arc<SourceInfo>, out: &mut Vec<Conversation>) {
    let Some(tabs) = v.get("tabs").and_then(Value::as_array) else {
        let mut c = Conversation::new(CHATS, info.clone());
        c.meta_records += 1;
        out.push(c);
        return;
    };
    for (i, tab) in tabs.iter().enumerate() {
        let id = str_of(tab, "tabId")
            .map(str::to_string)
            .unwrap_or_else(|| format!("{CHATS}#tabs[{i}]"));
        let mut c = Conversation::new(id, info.clone());
        let bubbles = tab.get("bubbles").and_then(Value::as_array);
        let mut run_open = false;
        for (j, b) in bubbles.into_iter().flatten().enumerate() {
            let at = row(&format!("{CHATS}#tabs[{i}].bubbles[{j}]"), rowid);
            let text = str_of(b, "text")
                .filter(|t| !t.is_empty())
                .or_else(|| str_of(b, "rawText"))
                .filter(|t| !t.is_empty());
            let role = match str_of(b, "type") {
                Some("user") => Role::User,
                Some("ai") => Role::Assistant,
                _ => {
                    c.meta_records += 1;
                    continue;
                }
            };
            let Some(text) = text else {
                c.meta_records += 1;
                continue;
            };
            if role == Role::User || !run_open {
                c.messages.push(Message::new(role, at.clone()));
            }
            run_open = role == Role::Assistant;
            let m = c.messages.last_mut().expect("a message was pushed");
            m.push(PartKind::Text { text: text.into() }, at);
        }
        // A tab Cursor opened and nothing was asked in is not a
        // conversation (as an empty composer is not).
        if !c.messages.is_empty() || c.meta_records > 0 {
            out.push(c);
        }
    }
}

/// The composer list: a conversation per composer, read from its inline
/// bubbles when it has them, listed as kept elsewhere otherwise.
fn composers(
    v: &Value,
    rowid: i64,
    info: &Arc<SourceInfo>,
    holder: &str,
    out: &mut Vec<Conversation>,
) {
    let list = v
        .get("allComposers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, composer) in list.iter().enumerate() {
        let key = format!("{COMPOSERS}#allComposers[{i}]");
        let id = str_of(composer, "composerId")
            .map(str::to_string)
            .unwrap_or_else(|| key.clone());
        let mut c = Conversation::new(id, info.clone());
        c.meta_records += 1; // the composer's entry itself
        let inline = composer
            .get("conversation")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty());
        match inline {
            Some(items) => {
                let mut run_open = false;
                for (j, item) in items.iter().enumerate() {
                    let b = super::Bubble {
                        rowid,
                        key: format!("{key}.conversation[{j}]"),
                        id: str_of(item, "bubbleId").unwrap_or("").to_string(),
                        value: serde_json::to_vec(item).unwrap_or_default(),
                    };
                    super::add_bubble_in(&mut c, &b, &mut run_open, ITEMS);
                }
            }
            None => {
                c.elsewhere = Some(Box::new(Elsewhere {
                    loc: row(&key, rowid),
                    holder: holder.to_string(),
                }));
            }
        }
        out.push(c);
    }
}
