//! Where Kimi Code keeps its sessions (2.1.0): the home directory is
//! `$KIMI_CODE_HOME`, else `~/.kimi-code`; each session is
//! `<home>/sessions/<workdir-key>/<session-id>/` (the key is
//! `wd_<work dir name>_<12 hex digits of its SHA-256>`), and each agent
//! of it (`main`, subagents) keeps its journal in
//! `agents/<agent>/wire.jsonl`. The id `kimi -r` takes is the session
//! directory's name.

use std::path::Path;

use crate::format::discovery::{self, App, Env, Found, Session};

pub static APP: App = App {
    name: "Kimi Code",
    key: "kimi-code",
    find,
    sessions,
};

fn find(env: &Env) -> Found {
    let mut found = Found::default();
    let Some(home) = env
        .var_tilde("KIMI_CODE_HOME")
        .or_else(|| env.in_home(".kimi-code"))
    else {
        return found;
    };
    if let Some(sessions) = found.look(home.join("sessions")) {
        for workdir in discovery::dirs_in(&sessions) {
            for session in discovery::dirs_in(&workdir) {
                for agent in discovery::dirs_in(&session.join("agents")) {
                    found
                        .inputs
                        .extend(discovery::files_in(&agent, |n| n == "wire.jsonl"));
                }
            }
        }
    }
    found.inputs.sort();
    found.inputs.dedup();
    found
}

/// The session directory's name (`agents/<agent>/wire.jsonl` three levels
/// down), with the agent when it is not `main`.
fn sessions(path: &Path) -> Vec<Session> {
    let agent = path.parent();
    let session = agent.and_then(Path::parent).and_then(Path::parent);
    let name = |p: Option<&Path>| {
        p.and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let (agent, session) = (name(agent), name(session));
    let id = if agent == "main" || agent.is_empty() {
        session
    } else {
        format!("{session}/{agent}")
    };
    discovery::one_session(APP.name, path, id)
}
