//! opencode's legacy JSON storage (≤ 1.1): a tree under
//! `~/.local/share/opencode/storage/` of pretty-printed JSON files,
//! `session/<projectID>/<sessionID>.json`,
//! `message/<sessionID>/<messageID>.json`, `part/<messageID>/<partID>.json`
//! and `project/<projectID>.json`, each file the whole object, ids
//! included.
//!
//! A session is read from its session file: its messages are the files of
//! `message/<sessionID>/` (ordered by `time.created`, then id), the parts
//! of each those of `part/<messageID>/` (ordered by id, the file name), and
//! the conversation is built as opencode ≤ 1.1 loaded it (the same
//! `toModelMessages` rules as the database, see the parent module). Every
//! message and part points at its file (`storage` and the path under it).
//! Message, part and project files are recognised and left to their
//! session file (a directory walk skips them with that note; named alone,
//! they are refused with it). opencode 1.18.33 does not load this tree at
//! all (`Session not found`): the sessions it holds are only reachable by
//! older versions. Not repaired yet.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::super::store::{Head, Hooks, Opened, Probe, Store, Writing};
use super::{Msg, Record};
use crate::error::{Error, Result};
use crate::model::{Conversation, Dialect, Format, Loc, Name, SourceInfo};
use crate::source::{Limits, Source};

pub static STORE: Store = Store {
    name: "opencode legacy JSON storage (storage/)",
    formats: &[Format::Json],
    dialects: &[Dialect::Opencode],
    probe: Probe::Text { detect, open },
    writing: Writing::Never(
        "opencode's legacy JSON storage is read but not repaired yet (opencode 1.18 does not load it)",
    ),
    hooks: Hooks::NONE,
};

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

fn read(path: &Path, limits: Limits) -> Result<Vec<u8>> {
    let len = std::fs::metadata(path)
        .map_err(|e| Error::io(path, &e))?
        .len();
    if len > limits.max_document_bytes {
        return Err(Error::input(
            path,
            format!(
                "is {len} bytes, more than the {} bytes a JSON document may have",
                limits.max_document_bytes
            ),
        ));
    }
    std::fs::read(path).map_err(|e| Error::io(path, &e))
}

fn open(path: &Path, limits: Limits) -> Result<Opened> {
    let bytes = read(path, limits)?;
    let what = kind(&bytes).unwrap_or("other");
    if what != "session" {
        return Err(Error::PartOf {
            path: path.to_path_buf(),
            cause: format!(
                "is a {what} file of opencode's legacy JSON storage (`storage/`, opencode ≤ 1.1); it is read through its session file, `storage/session/<projectID>/<sessionID>.json`"
            ),
        });
    }
    let session: Value = serde_json::from_slice(&bytes).map_err(|e| {
        Error::input(
            path,
            format!("opencode legacy session file is not JSON ({e})"),
        )
    })?;
    let id = session
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::input(path, "opencode legacy session file has no `id`"))?
        .to_string();
    // storage/session/<projectID>/<sessionID>.json
    let root = path
        .parent()
        .and_then(Path::parent)
        .filter(|p| p.file_name().is_some_and(|n| n == "session"))
        .and_then(Path::parent)
        .ok_or_else(|| {
            Error::input(
                path,
                "is an opencode legacy session file outside `storage/session/<projectID>/`: its messages cannot be found",
            )
        })?
        .to_path_buf();
    let info = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: Format::Json,
        dialect: Dialect::Opencode,
    });
    Ok(Opened::History(Box::new(Session {
        info,
        root,
        id: Some(id),
        limits,
    })))
}

/// One session of the tree: one conversation.
struct Session {
    info: Arc<SourceInfo>,
    root: PathBuf,
    id: Option<String>,
    limits: Limits,
}

impl Source for Session {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        let id = self.id.take()?;
        Some(read_session(&self.root, &id, &self.info, self.limits))
    }
}

/// The `*.json` files of a directory, by name (none when it is missing).
fn files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, &e)),
    };
    let mut out = Vec::new();
    for e in entries {
        let p = e.map_err(|e| Error::io(dir, &e))?.path();
        if p.extension().is_some_and(|x| x == "json") && p.is_file() {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// Where a file of the tree is: `storage` and its path under the root.
fn loc(root: &Path, file: &Path) -> Loc {
    let rel = file.strip_prefix(root).unwrap_or(file);
    Loc::Row {
        table: Name::Static("storage"),
        key: Arc::from(rel.to_string_lossy().replace('\\', "/")),
        rowid: None,
    }
}

fn stem(file: &Path) -> String {
    file.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A file of the tree as a record, with its parsed object when it is one
/// (read as `JSON.parse` reads it: each lone surrogate escape is noted
/// in `conv` for `lone-surrogate`).
fn record(
    root: &Path,
    file: &Path,
    limits: Limits,
    conv: &mut Conversation,
) -> Result<(Record, std::result::Result<Value, String>)> {
    let data = read(file, limits)?;
    let at = loc(root, file);
    let parsed = match crate::format::records::record::tree_as_lenient_readers_read(&data) {
        Ok((v @ Value::Object(_), lone)) => {
            conv.note_lone_surrogates(&at, lone);
            Ok(v)
        }
        Ok(_) => Err("is not a JSON object".to_string()),
        Err(e) => Err(format!("is not JSON ({e})")),
    };
    Ok((
        Record {
            loc: at,
            id: stem(file),
            data,
        },
        parsed,
    ))
}

fn read_session(
    root: &Path,
    id: &str,
    info: &Arc<SourceInfo>,
    limits: Limits,
) -> Result<Conversation> {
    let mut conv = Conversation::new(id, info.clone());
    let mut msgs = Vec::new();
    for file in files(&root.join("message").join(id))? {
        let (rec, parsed) = record(root, &file, limits, &mut conv)?;
        let info = match parsed {
            Ok(v) => v,
            Err(why) => {
                super::corrupt_record(&mut conv, &rec, "message file", why);
                continue;
            }
        };
        let mut parts = Vec::new();
        for pf in files(&root.join("part").join(&rec.id))? {
            let (prec, parsed) = record(root, &pf, limits, &mut conv)?;
            match parsed {
                Ok(v) => parts.push((prec.loc, v)),
                Err(why) => super::corrupt_record(&mut conv, &prec, "part file", why),
            }
        }
        msgs.push(Msg { rec, info, parts });
    }
    // Ordered as opencode orders them: by creation time, then id.
    msgs.sort_by(|a, b| {
        let t = |m: &Msg| {
            m.info
                .get("time")
                .and_then(|t| t.get("created"))
                .and_then(Value::as_i64)
                .unwrap_or(0)
        };
        (t(a), &a.rec.id).cmp(&(t(b), &b.rec.id))
    });
    super::build(&mut conv, msgs);
    Ok(conv)
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
