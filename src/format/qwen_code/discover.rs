//! Where Qwen Code keeps its sessions (0.15.10, `Storage`): the runtime
//! directory is `$QWEN_RUNTIME_DIR`, else `advanced.runtimeOutputDir` of
//! the user's `settings.json`, else the global directory, `$QWEN_HOME` or
//! `~/.qwen` (a leading `~` expanded). Sessions are
//! `<runtime>/projects/<cwd, each character not [A-Za-z0-9] as `-`>/chats/<sessionId>.jsonl`,
//! named as `SESSION_FILE_PATTERN` (`^[0-9a-fA-F-]{32,36}\.jsonl$`)
//! says; the id `qwen --resume` takes is the file's stem. Sessions written
//! before a runtime directory was set stay in the global one: both are
//! read. A relative runtime directory is resolved against each project's
//! root by the client, which this run does not know: it is not looked at.

use std::path::{Path, PathBuf};

use crate::format::discovery::{self, App, Env, Found, Session};

pub static APP: App = App {
    name: "Qwen Code",
    key: "qwen-code",
    find,
    sessions,
};

/// `SESSION_FILE_PATTERN`.
pub fn is_session(name: &str) -> bool {
    name.strip_suffix(".jsonl").is_some_and(|stem| {
        (32..=36).contains(&stem.len()) && stem.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
    })
}

/// `advanced.runtimeOutputDir` of the global `settings.json`, when absolute
/// or under `~`.
fn settings_dir(global: &Path, env: &Env) -> Option<PathBuf> {
    let text = std::fs::read_to_string(global.join("settings.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let dir = v.pointer("/advanced/runtimeOutputDir")?.as_str()?;
    let p = if dir == "~" {
        env.home.clone()?
    } else if let Some(rest) = dir.strip_prefix("~/") {
        env.home.as_ref()?.join(rest)
    } else {
        PathBuf::from(dir)
    };
    p.is_absolute().then_some(p)
}

fn find(env: &Env) -> Found {
    let mut found = Found::default();
    let Some(global) = env.var_tilde("QWEN_HOME").or_else(|| env.in_home(".qwen")) else {
        return found;
    };
    let runtime = env
        .var_tilde("QWEN_RUNTIME_DIR")
        .or_else(|| settings_dir(&global, env));
    let mut roots = Vec::new();
    if let Some(r) = runtime
        && r != global
    {
        roots.push(r);
    }
    roots.push(global);
    for root in roots {
        if let Some(projects) = found.look(root.join("projects")) {
            for project in discovery::dirs_in(&projects) {
                found
                    .inputs
                    .extend(discovery::files_in(&project.join("chats"), is_session));
            }
        }
    }
    found.inputs.dedup();
    found
}

fn sessions(path: &Path) -> Vec<Session> {
    discovery::one_session(APP.name, path, discovery::stem(path, ".jsonl"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn names() {
        assert!(super::is_session(
            "4bbf7eaf-87f8-44bc-9f3c-fd444e218b3b.jsonl"
        ));
        assert!(!super::is_session("4bbf7eaf.jsonl"));
        assert!(!super::is_session(
            "session-4bbf7eaf-87f8-44bc-9f3c-fd444e218b3b.jsonl"
        ));
    }
}
