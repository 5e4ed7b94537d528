//! Where Cline and Roo Code keep their tasks.
//!
//! - The VS Code extensions: `tasks/<taskId>/api_conversation_history.json`
//!   in the extension's global storage, `User/globalStorage/<extension id>`
//!   of the editor's directory in the platform's configuration directory
//!   (`~/.config` or `$XDG_CONFIG_HOME` on Linux, `~/Library/Application
//!   Support` on macOS, `%APPDATA%` on Windows), for VS Code and the forks
//!   that run its extensions. Cline's id is `saoudrizwan.claude-dev`, Roo
//!   Code's `rooveterinaryinc.roo-cline`.
//! - The Cline CLI (`standalone/vscode-context.ts`): the same task folders
//!   under `$CLINE_DATA_DIR/tasks`, else `${CLINE_DIR:-~/.cline}/data/tasks`.
//! - Cline ≥ 4.0 (the SDK's session store, `storage/paths.ts`):
//!   `<sessions>/<id>/<id>.messages.json`, where `<sessions>` is
//!   `$CLINE_SESSION_DATA_DIR`, else `$CLINE_DATA_DIR/sessions`, else
//!   `${CLINE_DIR:-~/.cline}/data/sessions`.
//!
//! The task or session id is the folder's name.

use std::path::{Path, PathBuf};

use crate::format::discovery::{self, App, Env, Found, Session};

pub static CLINE: App = App {
    name: "Cline",
    key: "cline",
    find: find_cline,
    sessions: sessions_cline,
};

pub static ROO: App = App {
    name: "Roo Code",
    key: "roo-code",
    find: find_roo,
    sessions: sessions_roo,
};

/// The editors whose extension storage is looked at, by the name of their
/// folder in the configuration directory.
const EDITORS: &[&str] = &["Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf"];

/// The history file of a task folder.
const HISTORY: &str = "api_conversation_history.json";

fn extension_tasks(env: &Env, extension: &str, found: &mut Found) {
    let Some(config) = &env.config_dir else {
        return;
    };
    for editor in EDITORS {
        let storage = config.join(editor).join("User").join("globalStorage");
        // VS Code's place is always named; a fork's only when it is there.
        if *editor != "Code" && !storage.is_dir() {
            continue;
        }
        if let Some(tasks) = found.look(storage.join(extension).join("tasks")) {
            task_folders(&tasks, found);
        }
    }
}

fn task_folders(tasks: &Path, found: &mut Found) {
    for task in discovery::dirs_in(tasks) {
        let history = task.join(HISTORY);
        if history.is_file() {
            found.inputs.push(history);
        }
    }
}

/// `$CLINE_DATA_DIR`, else `${CLINE_DIR:-~/.cline}/data`.
fn cline_data(env: &Env) -> Option<PathBuf> {
    env.var("CLINE_DATA_DIR").or_else(|| {
        env.var("CLINE_DIR")
            .or_else(|| env.in_home(".cline"))
            .map(|d| d.join("data"))
    })
}

fn find_cline(env: &Env) -> Found {
    let mut found = Found::default();
    extension_tasks(env, "saoudrizwan.claude-dev", &mut found);
    let data = cline_data(env);
    if let Some(tasks) = data.as_ref().and_then(|d| found.look(d.join("tasks"))) {
        task_folders(&tasks, &mut found);
    }
    let sessions = env
        .var("CLINE_SESSION_DATA_DIR")
        .or_else(|| data.map(|d| d.join("sessions")));
    if let Some(dir) = sessions.and_then(|d| found.look(d)) {
        for session in discovery::dirs_in(&dir) {
            let id = session
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            let messages = session.join(format!("{id}.messages.json"));
            if messages.is_file() {
                found.inputs.push(messages);
            }
        }
    }
    found
}

fn find_roo(env: &Env) -> Found {
    let mut found = Found::default();
    extension_tasks(env, "rooveterinaryinc.roo-cline", &mut found);
    found
}

/// The task or session folder's name.
fn folder_id(path: &Path) -> String {
    path.parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string()
}

fn sessions_cline(path: &Path) -> Vec<Session> {
    discovery::one_session(CLINE.name, path, folder_id(path))
}

fn sessions_roo(path: &Path) -> Vec<Session> {
    discovery::one_session(ROO.name, path, folder_id(path))
}
