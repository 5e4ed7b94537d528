//! Where GitHub Copilot CLI keeps its sessions: `$COPILOT_HOME`, else
//! `~/.copilot` (the same on every platform), one folder per session
//! under `session-state/<sessionId>/` with its `events.jsonl`; the id
//! `copilot --resume` takes is the folder's name.

use std::path::Path;

use crate::format::discovery::{self, App, Env, Found, Session};

pub static APP: App = App {
    name: "Copilot CLI",
    key: "copilot-cli",
    find,
    sessions,
};

fn find(env: &Env) -> Found {
    let mut found = Found::default();
    let Some(home) = env.var("COPILOT_HOME").or_else(|| env.in_home(".copilot")) else {
        return found;
    };
    if let Some(dir) = found.look(home.join("session-state")) {
        for session in discovery::dirs_in(&dir) {
            let events = session.join("events.jsonl");
            if events.is_file() {
                found.inputs.push(events);
            }
        }
    }
    found
}

fn sessions(path: &Path) -> Vec<Session> {
    let id = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    discovery::one_session(APP.name, path, id)
}
