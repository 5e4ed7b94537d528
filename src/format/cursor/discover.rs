//! Where Cursor keeps its chats: the global `state.vscdb` of its user
//! directory, `Cursor/User/globalStorage/` in the platform's
//! configuration directory (`~/.config` or `$XDG_CONFIG_HOME` on Linux,
//! `~/Library/Application Support` on macOS, `%APPDATA%` on Windows), as
//! VS Code keeps its own. A chat (a composer) is its `composerData:<id>`
//! row. The per-workspace databases of `workspaceStorage/` are not looked
//! at yet.

use std::path::Path;

use crate::format::discovery::{self, App, Env, Found, Session};

pub static APP: App = App {
    name: "Cursor",
    key: "cursor",
    find,
    sessions,
};

fn find(env: &Env) -> Found {
    let mut found = Found::default();
    let Some(config) = &env.config_dir else {
        return found;
    };
    let global = config.join("Cursor").join("User").join("globalStorage");
    if let Some(dir) = found.look(global) {
        let db = dir.join("state.vscdb");
        if db.is_file() {
            found.inputs.push(db);
        }
    }
    found
}

fn sessions(path: &Path) -> Vec<Session> {
    discovery::sessions_in_db(
        APP.name,
        path,
        "SELECT substr(key, 14), NULL FROM cursorDiskKV \
         WHERE key >= 'composerData:' AND key < 'composerData;' ORDER BY key",
    )
}
