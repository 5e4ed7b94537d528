//! Where Crush keeps its sessions (charmbracelet/crush@37f36e93,
//! `internal/config/load.go`, `internal/projects/projects.go`,
//! `internal/db/connect.go`): each project's data directory (`.crush/` in
//! the project, or the `data_directory` of its config) holds `crush.db`.
//! The global data directory is `$CRUSH_GLOBAL_DATA`, else
//! `$XDG_DATA_HOME/crush`, else `%LOCALAPPDATA%\crush` on Windows and
//! `~/.local/share/crush` elsewhere (`GlobalConfigData`); its
//! `projects.json` lists every project Crush ran in with its `data_dir`,
//! and the server's own workspace is that directory (`GlobalWorkspaceDir`),
//! whose data directory is its `.crush/`. A session's id is its row's `id`
//! in `sessions`.

use std::path::{Path, PathBuf};

use crate::format::discovery::{self, App, Env, Found, Os, Session};

pub static APP: App = App {
    name: "Crush",
    key: "crush",
    find,
    sessions,
};

/// Crush's global data directory.
pub fn global(env: &Env) -> Option<PathBuf> {
    if let Some(d) = env.var("CRUSH_GLOBAL_DATA") {
        return Some(d);
    }
    if let Some(x) = env.var("XDG_DATA_HOME") {
        return Some(x.join("crush"));
    }
    if env.os == Os::Windows {
        return env
            .var("LOCALAPPDATA")
            .or_else(|| env.in_home("AppData/Local"))
            .map(|d| d.join("crush"));
    }
    env.in_home(".local/share/crush")
}

/// The data directories `projects.json` lists (absolute ones only).
fn projects(global: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(global.join("projects.json")) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    v.get("projects")
        .and_then(|p| p.as_array())
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("data_dir")?.as_str().map(PathBuf::from))
        .filter(|p| p.is_absolute())
        .collect()
}

fn find(env: &Env) -> Found {
    let mut found = Found::default();
    let Some(global) = global(env) else {
        return found;
    };
    let mut dirs = vec![global.clone(), global.join(".crush")];
    dirs.extend(projects(&global));
    dirs.dedup();
    for dir in dirs {
        if found
            .inputs
            .iter()
            .any(|f| f.parent() == Some(dir.as_path()))
        {
            continue;
        }
        if let Some(dir) = found.look(dir) {
            found
                .inputs
                .extend(discovery::files_in(&dir, |n| n == "crush.db"));
        }
    }
    found
}

fn sessions(path: &Path) -> Vec<Session> {
    discovery::sessions_in_db(
        APP.name,
        path,
        "SELECT DISTINCT CAST(m.session_id AS TEXT), MAX(m.updated_at) * 1000 FROM messages m GROUP BY m.session_id ORDER BY 1",
    )
}
