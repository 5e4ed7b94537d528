//! Where pi keeps its sessions (0.73.1, `dist/config.js` and `main.js`):
//! the agent directory is `$PI_CODING_AGENT_DIR`, else `~/.pi/agent` (on
//! every platform); sessions are `<agent>/sessions/--<cwd>--/<time>_<uuid>.jsonl`
//! (the cwd with its leading `/` dropped and `/`, `\`, `:` as `-`). A
//! session directory set by `$PI_CODING_AGENT_SESSION_DIR` (or `sessionDir`
//! in `<agent>/settings.json`) holds the files directly, and wins over the
//! default; sessions written before it was set stay in the default place,
//! so both are read. The id `pi --session` takes is the header's `id`,
//! the uuid at the end of the file name.
//!
//! A `*.jsonl.<n>.bak` beside a session is a backup another writer (a pi
//! fork, oh-my-pi) left there: listed as not read, never as clean.

use std::path::{Path, PathBuf};

use crate::format::discovery::{self, App, Env, Found, Session};

pub static APP: App = App {
    name: "pi",
    key: "pi",
    find,
    sessions,
};

fn is_session(name: &str) -> bool {
    name.ends_with(".jsonl")
}

/// `x.jsonl.<digits>.bak`.
fn is_stranded_backup(name: &str) -> bool {
    name.strip_suffix(".bak")
        .and_then(|s| s.rsplit_once(".jsonl."))
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `sessionDir` of the agent's `settings.json`, `~` expanded as pi does.
fn settings_dir(agent: &Path, env: &Env) -> Option<PathBuf> {
    let text = std::fs::read_to_string(agent.join("settings.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let dir = v.get("sessionDir")?.as_str()?;
    let p = if dir == "~" {
        env.home.clone()?
    } else if let Some(rest) = dir.strip_prefix("~/") {
        env.home.as_ref()?.join(rest)
    } else {
        PathBuf::from(dir)
    };
    p.is_absolute().then_some(p)
}

fn collect(found: &mut Found, dir: &Path) {
    found.inputs.extend(discovery::files_in(dir, is_session));
    for b in discovery::files_in(dir, is_stranded_backup) {
        found.unknown.push((
            b,
            "a backup of a session another writer (a pi fork) left beside it; pi does not read it"
                .to_string(),
        ));
    }
}

fn find(env: &Env) -> Found {
    let mut found = Found::default();
    let Some(agent) = env
        .var("PI_CODING_AGENT_DIR")
        .or_else(|| env.in_home(".pi/agent"))
    else {
        return found;
    };
    let custom = env
        .var("PI_CODING_AGENT_SESSION_DIR")
        .or_else(|| settings_dir(&agent, env));
    if let Some(dir) = custom.and_then(|d| found.look(d)) {
        collect(&mut found, &dir);
    }
    if let Some(root) = found.look(agent.join("sessions")) {
        for project in discovery::dirs_in(&root) {
            collect(&mut found, &project);
        }
    }
    found.inputs.dedup();
    found
}

/// `2026-11-28T21-26-37-110Z_<uuid>.jsonl` → `<uuid>`.
pub fn session_id(path: &Path) -> String {
    let stem = discovery::stem(path, ".jsonl");
    match stem.rsplit_once('_') {
        Some((_, id)) if !id.is_empty() => id.to_string(),
        _ => stem,
    }
}

fn sessions(path: &Path) -> Vec<Session> {
    discovery::one_session(APP.name, path, session_id(path))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn names() {
        let id = "01a2240d-8b34-7454-8a97-6035e26c947e";
        assert_eq!(
            super::session_id(Path::new(&format!("2026-11-28T21-26-37-110Z_{id}.jsonl"))),
            id
        );
        assert!(super::is_stranded_backup("a_b.jsonl.1764351234567.bak"));
        assert!(!super::is_stranded_backup("a_b.jsonl.bak"));
        assert!(!super::is_stranded_backup("a_b.jsonl"));
    }
}
