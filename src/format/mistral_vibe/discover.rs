//! Where Mistral Vibe keeps its sessions (3.0.3): the session root is
//! `session_logging.save_dir` of its config, by default
//! `$VIBE_HOME/logs/session` (`vibe/utils/vibe_home.py`: `$VIBE_HOME`,
//! else `~/.vibe`); the harness run on its own takes
//! `$MISTRAL_VIBE_SESSION_ROOT` (`_host.py`, `_default_storage_root`).
//! Each session is `<root>/unified/<session-id>/`, read through its
//! `CURRENT` pointer; the id `vibe --resume` takes is the directory's name.
//! A `save_dir` set in `config.toml` is not read here: name the
//! directory's `CURRENT` as a path.

use std::path::Path;

use crate::format::discovery::{self, App, Env, Found, Session};

pub static APP: App = App {
    name: "Mistral Vibe",
    key: "mistral-vibe",
    find,
    sessions,
};

fn find(env: &Env) -> Found {
    let mut found = Found::default();
    let home = env.var_tilde("VIBE_HOME").or_else(|| env.in_home(".vibe"));
    let roots = [
        home.map(|h| h.join("logs").join("session")),
        env.var_tilde("MISTRAL_VIBE_SESSION_ROOT"),
    ];
    for root in roots.into_iter().flatten() {
        if let Some(unified) = found.look(root.join("unified")) {
            for session in discovery::dirs_in(&unified) {
                found
                    .inputs
                    .extend(discovery::files_in(&session, |n| n == "CURRENT"));
            }
        }
    }
    found.inputs.sort();
    found.inputs.dedup();
    found
}

/// The session directory's name.
fn sessions(path: &Path) -> Vec<Session> {
    let id = path
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    discovery::one_session(APP.name, path, id)
}
