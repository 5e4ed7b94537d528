//! Where Claude Code keeps its sessions: `$CLAUDE_CONFIG_DIR/projects`,
//! else `~/.claude/projects` (the same on Linux, macOS and Windows, where
//! `~` is `%USERPROFILE%`). A session is
//! `projects/<project dir>/<sessionId>.jsonl`, the id `claude --resume`
//! takes; a sub-agent's transcript, `<sessionId>/subagents/agent-<id>.jsonl`,
//! is a history of its own. Large tool outputs
//! (`<sessionId>/tool-results/*.txt`), `agent-<id>.meta.json` and
//! `sessions-index.json` are not histories.

use std::path::Path;

use crate::format::discovery::{self, App, Env, Found, Session};

pub static APP: App = App {
    name: "Claude Code",
    key: "claude-code",
    find,
    sessions,
};

fn find(env: &Env) -> Found {
    let mut found = Found::default();
    let base = env
        .var("CLAUDE_CONFIG_DIR")
        .or_else(|| env.in_home(".claude"));
    if let Some(projects) = base.map(|b| b.join("projects"))
        && let Some(dir) = found.look(projects)
    {
        found.inputs = discovery::files_under(&dir, |n| n.ends_with(".jsonl"));
    }
    found
}

fn sessions(path: &Path) -> Vec<Session> {
    discovery::one_session(APP.name, path, discovery::stem(path, ".jsonl"))
}
