//! Where Gemini CLI keeps its chats: `~/.gemini/tmp/<project>/chats/`,
//! where `~` is `$GEMINI_CLI_HOME` when it is set (`homedir()` in
//! `packages/core/src/utils/paths.ts`), on every platform. A chat is
//! `session-<time>-<id8>.jsonl` (`.json` before 0.39), a sub-agent's
//! `chats/<parentId>/<id>.jsonl`; the id `gemini --resume` takes is the
//! `sessionId` its first record names (the file name keeps its first 8
//! characters).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::format::discovery::{self, App, Env, Found, Session};

pub static APP: App = App {
    name: "Gemini CLI",
    key: "gemini-cli",
    find,
    sessions,
};

fn find(env: &Env) -> Found {
    let mut found = Found::default();
    let home = env.var("GEMINI_CLI_HOME").or_else(|| env.home.clone());
    let Some(tmp) = home.map(|h| h.join(".gemini").join("tmp")) else {
        return found;
    };
    let Some(tmp) = found.look(tmp) else {
        return found;
    };
    for project in discovery::dirs_in(&tmp) {
        let chats = project.join("chats");
        if chats.is_dir() {
            found.inputs.extend(discovery::files_under(&chats, |n| {
                n.ends_with(".jsonl") || n.ends_with(".json")
            }));
        }
    }
    found
}

/// The `sessionId` of the file's first record, if it names one.
fn session_id(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut line = Vec::new();
    BufReader::new(file.take(64 * 1024))
        .read_until(b'\n', &mut line)
        .ok()?;
    // A whole-file `.json` chat is one document: its head is enough only
    // when the first line holds it; otherwise look for the key itself.
    let text = String::from_utf8_lossy(&line);
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
        return v.get("sessionId")?.as_str().map(str::to_string);
    }
    let at = text.find("\"sessionId\"")?;
    let rest = text[at + 11..].trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_string())
}

fn sessions(path: &Path) -> Vec<Session> {
    let id = session_id(path).unwrap_or_else(|| {
        let stem = discovery::stem(path, ".jsonl");
        stem.rsplit('-').next().unwrap_or(&stem).to_string()
    });
    discovery::one_session(APP.name, path, id)
}
