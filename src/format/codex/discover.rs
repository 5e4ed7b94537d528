//! Where Codex keeps its rollouts: `$CODEX_HOME`, else `~/.codex`
//! (`find_codex_home` in codex-rs; the same on every platform), under
//! `sessions/YYYY/MM/DD/` and `archived_sessions/`. A rollout is
//! `rollout-<timestamp>-<thread id>.jsonl`, or `.jsonl.zst` once Codex
//! (≥ 0.137) compressed it after a week idle; the id `codex resume`
//! takes is the thread id at the end of the name.

use std::path::Path;

use crate::format::discovery::{self, App, Env, Found, Session};

pub static APP: App = App {
    name: "Codex",
    key: "codex",
    find,
    sessions,
};

/// A rollout's file name.
fn is_rollout(name: &str) -> bool {
    name.starts_with("rollout-") && (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst"))
}

fn find(env: &Env) -> Found {
    let mut found = Found::default();
    let Some(home) = env.var("CODEX_HOME").or_else(|| env.in_home(".codex")) else {
        return found;
    };
    for sub in ["sessions", "archived_sessions"] {
        if let Some(dir) = found.look(home.join(sub)) {
            found
                .inputs
                .extend(discovery::files_under(&dir, is_rollout));
        }
    }
    found
}

/// `rollout-2026-05-01T10-00-00-<uuid>.jsonl(.zst)` → `<uuid>`.
pub fn thread_id(path: &Path) -> String {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let stem = name
        .strip_suffix(".zst")
        .unwrap_or(name)
        .strip_suffix(".jsonl")
        .unwrap_or(name);
    let stem = stem.strip_prefix("rollout-").unwrap_or(stem);
    // A UUID is 36 characters: 8-4-4-4-12.
    match stem.len().checked_sub(36).map(|i| (i, &stem[i..])) {
        Some((i, id)) if stem.is_char_boundary(i) && is_uuid(id) => id.to_string(),
        _ => stem.to_string(),
    }
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn sessions(path: &Path) -> Vec<Session> {
    discovery::one_session(APP.name, path, thread_id(path))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn the_thread_id_is_the_end_of_the_name() {
        let id = "0199a213-81c0-7800-8aa1-bbab2a035a53";
        for ext in [".jsonl", ".jsonl.zst"] {
            let name = format!("rollout-2025-10-01T09-30-00-{id}{ext}");
            assert_eq!(super::thread_id(Path::new(&name)), id);
        }
        assert_eq!(super::thread_id(Path::new("rollout-x.jsonl")), "x");
    }
}
