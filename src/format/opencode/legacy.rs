//! opencode's legacy JSON storage (≤ 1.1): a tree under
//! `~/.local/share/opencode/storage/` of pretty-printed JSON files,
//! `session/<projectID>/<sessionID>.json`,
//! `message/<sessionID>/<messageID>.json`, `part/<messageID>/<partID>.json`
//! and `project/<projectID>.json`.
//!
//! Not read yet: each file is recognised from its content and refused with
//! one line naming opencode, so that it is never taken for a provider
//! message file (which would find "no problems" in a file it did not
//! understand). opencode 1.18.33 does not load this tree either (`Session
//! not found`); since 1.2 the sessions live in `opencode.db`.

use std::path::Path;

use super::super::store::{Head, Opened, Probe, Store, Writing};
use crate::error::{Error, Result};
use crate::model::{Dialect, Format};
use crate::source::Limits;

pub static STORE: Store = Store {
    name: "opencode legacy JSON storage (storage/, refused)",
    formats: &[Format::Json],
    dialects: &[Dialect::Opencode],
    probe: Probe::Text { detect, open },
    writing: Writing::Never("opencode's legacy JSON storage is not read yet"),
};

/// The cause every file of the tree is refused with.
pub const REFUSAL: &str = "is a file of opencode's legacy JSON storage (`storage/`, opencode ≤ 1.1), which chatfsck does not read yet (opencode 1.18 does not load it either: `Session not found`); check `opencode.db` instead";

/// What a file of the tree is, from the keys at its top (each file is one
/// object written by `JSON.stringify(obj, null, 2)`, ids first).
fn kind(head: &[u8]) -> Option<&'static str> {
    let start = head.iter().position(|b| !b.is_ascii_whitespace())?;
    if head[start] != b'{' {
        return None;
    }
    // The first keys, with the spacing taken out.
    let squeezed: Vec<u8> = head[start..]
        .iter()
        .take(2048)
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let has = |needle: &str| memchr::memmem::find(&squeezed, needle.as_bytes()).is_some();
    if has(r#"{"id":"msg_"#) && has(r#""sessionID":"ses_"#) && has(r#""role":"#) {
        Some("message")
    } else if has(r#"{"id":"prt_"#) && has(r#""messageID":"msg_"#) && has(r#""type":"#) {
        Some("part")
    } else if has(r#"{"id":"ses_"#) && has(r#""projectID":"#) && has(r#""version":"#) {
        Some("session")
    } else if has(r#"{"id":""#) && has(r#""worktree":"#) && has(r#""time":{"created":"#) {
        Some("project")
    } else {
        None
    }
}

fn detect(head: &Head<'_>) -> Result<bool> {
    Ok(head.extension() == Some("json") && kind(head.bytes).is_some())
}

fn open(path: &Path, _: Limits) -> Result<Opened> {
    Err(Error::input(path, REFUSAL))
}

#[cfg(test)]
mod tests {
    use super::kind;

    #[test]
    fn each_file_of_the_tree_is_recognised_and_nothing_else() {
        assert_eq!(
            kind(b"{\n  \"id\": \"msg_1\",\n  \"sessionID\": \"ses_1\",\n  \"role\": \"user\"\n}"),
            Some("message")
        );
        assert_eq!(
            kind(br#"{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"text"}"#),
            Some("part")
        );
        assert_eq!(
            kind(br#"{"id":"ses_1","slug":"x","version":"1.1.36","projectID":"p"}"#),
            Some("session")
        );
        assert_eq!(kind(br#"{"role":"user","content":"hi"}"#), None);
        assert_eq!(
            kind(br#"[{"id":"msg_1","sessionID":"ses_1","role":"user"}]"#),
            None
        );
    }
}
