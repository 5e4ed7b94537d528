//! Where goose keeps its sessions: `sessions/` in its data directory,
//! `$GOOSE_PATH_ROOT/data` when that is set, else the `etcetera` crate's
//! app strategy goose uses (`config/paths.rs`): the XDG data directory
//! on Linux and macOS (`$XDG_DATA_HOME/goose`, `~/.local/share/goose`),
//! `%APPDATA%\Block\goose\data` on Windows. Sessions are rows of
//! `sessions.db` (schema ≥ 1.10), or legacy `<id>.jsonl` files.

use std::path::Path;

use crate::format::discovery::{self, App, Env, Found, Os, Session};

pub static APP: App = App {
    name: "goose",
    key: "goose",
    find,
    sessions,
};

fn find(env: &Env) -> Found {
    let mut found = Found::default();
    let data = match env.var("GOOSE_PATH_ROOT") {
        Some(root) => Some(root.join("data")),
        None if env.os == Os::Windows => env
            .config_dir
            .as_ref()
            .map(|d| d.join("Block").join("goose").join("data")),
        None => env.xdg_data().map(|d| d.join("goose")),
    };
    if let Some(dir) = data.and_then(|d| found.look(d.join("sessions"))) {
        found.inputs = discovery::files_in(&dir, |n| n == "sessions.db" || n.ends_with(".jsonl"));
    }
    found
}

fn sessions(path: &Path) -> Vec<Session> {
    if path.extension().is_some_and(|e| e == "jsonl") {
        return discovery::one_session(APP.name, path, discovery::stem(path, ".jsonl"));
    }
    discovery::sessions_in_db(
        APP.name,
        path,
        "SELECT DISTINCT CAST(session_id AS TEXT), NULL FROM messages ORDER BY 1",
    )
}
