//! Where llm keeps its log: `logs.db` in its user directory (`llm logs
//! path`; llm/cli.py `user_dir`, `logs_db_path`): `$LLM_USER_PATH` when
//! that is set, else click's `get_app_dir("io.datasette.llm")`: the
//! platform's configuration directory, `$XDG_CONFIG_HOME` or `~/.config`
//! on Linux, `~/Library/Application Support` on macOS, `%APPDATA%` on
//! Windows. The id `llm logs` and `llm -c --cid` take is a conversation's
//! `id`, or from llm 0.32 on a thread's (`threads.id`, the same id for a
//! conversation both hold; `load_conversation` in llm/cli.py).

use std::path::Path;

use crate::format::discovery::{self, App, Env, Found, Session};

pub static APP: App = App {
    name: "llm",
    key: "llm",
    find,
    sessions,
};

fn find(env: &Env) -> Found {
    let mut found = Found::default();
    let dir = env
        .var("LLM_USER_PATH")
        .or_else(|| env.config_dir.as_ref().map(|d| d.join("io.datasette.llm")));
    if let Some(dir) = dir.and_then(|d| found.look(d)) {
        found.inputs = discovery::files_in(&dir, |n| n == "logs.db");
    }
    found
}

fn sessions(path: &Path) -> Vec<Session> {
    let threads = discovery::sessions_in_db(
        APP.name,
        path,
        "SELECT CAST(id AS TEXT), NULL FROM conversations UNION SELECT CAST(id AS TEXT), NULL FROM threads",
    );
    if !threads.is_empty() {
        return threads;
    }
    // Up to llm 0.31: no `threads` table.
    discovery::sessions_in_db(
        APP.name,
        path,
        "SELECT CAST(id AS TEXT), NULL FROM conversations ORDER BY rowid",
    )
}
