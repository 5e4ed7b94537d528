//! Histories chatfsck recognises but does not read yet: Aider's
//! `.aider.chat.history.md`, OpenHands trajectories, SWE-agent `.traj`
//! files and LangGraph `SqliteSaver` checkpoints
//! (samples and markers: `fixtures/unsupported/README.md`). Each is
//! refused with one line that names the app and says it is not supported
//! yet (exit 2), instead of "not a history" or, worse, a wrong reader that
//! finds nothing. Two stores: one tried on text files, one on SQLite
//! databases; each knows the apps of its kind.

use std::path::Path;

use super::store::{Head, Opened, Probe, Store, Writing};
use crate::error::{Error, Result};
use crate::source::Limits;
use crate::source::sqlite::Snapshot;

const NEVER: &str = "chatfsck does not read this format yet";

pub static TEXT: Store = Store {
    name: "Aider, OpenHands and SWE-agent histories (recognised, not read yet)",
    formats: &[],
    dialects: &[],
    probe: Probe::Text {
        detect: detect_text,
        open: open_text,
    },
    writing: Writing::Never(NEVER),
};

pub static SQLITE: Store = Store {
    name: "LangGraph checkpoints (recognised, not read yet)",
    formats: &[],
    dialects: &[],
    probe: Probe::Sqlite {
        detect: detect_sqlite,
        open: open_sqlite,
    },
    writing: Writing::Never(NEVER),
};

fn refuse(path: &Path, what: &str) -> Error {
    Error::input(
        path,
        format!("is {what}; chatfsck does not support this format yet"),
    )
}

/// What a text file is, when it is one of the apps of this store.
fn text_app(head: &Head<'_>) -> Option<&'static str> {
    let name = head
        .path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    // Every history passes through here: look at the first byte before
    // decoding anything (a JSON Lines history starts with `{` and is
    // neither of these).
    let first = head
        .bytes
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace());
    let wanted = match first {
        Some(b'#') => true,
        Some(b'{') => head.extension() == Some("traj"),
        Some(b'[') => true,
        _ => name == ".aider.chat.history.md",
    };
    if !wanted {
        return None;
    }
    let text = String::from_utf8_lossy(head.bytes);
    if name == ".aider.chat.history.md" || aider_header(&text) {
        return Some("an Aider chat history (`.aider.chat.history.md`)");
    }
    if first == Some(b'{') && swe_agent(head.extension(), &text) {
        return Some("a SWE-agent trajectory (`.traj`)");
    }
    if first == Some(b'[') && openhands(&text) {
        return Some("an OpenHands trajectory");
    }
    None
}

/// Aider writes `# aider chat started at YYYY-MM-DD HH:MM:SS` on every
/// launch, after a blank line: the first line that is not blank.
fn aider_header(text: &str) -> bool {
    let Some(line) = text.lines().find(|l| !l.trim().is_empty()) else {
        return false;
    };
    let Some(stamp) = line.strip_prefix("# aider chat started at ") else {
        return false;
    };
    let b = stamp.trim_end().as_bytes();
    b.len() == 19
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b' ',
            13 | 16 => *c == b':',
            _ => c.is_ascii_digit(),
        })
}

/// A JSON object with `trajectory`, `history` and `info`: the `.traj`
/// extension and the keys in the head.
fn swe_agent(ext: Option<&str>, text: &str) -> bool {
    ext == Some("traj")
        && ["\"trajectory\"", "\"history\"", "\"info\""]
            .iter()
            .all(|k| text.contains(k))
}

/// A JSON array whose first element has an integer `id`, a `timestamp`, a
/// `source` of `user`/`agent`/`environment` and an `action` or an
/// `observation`.
fn openhands(text: &str) -> bool {
    let Some(rest) = text.trim_start().strip_prefix('[') else {
        return false;
    };
    let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<serde_json::Value>();
    let Some(Ok(first)) = stream.next() else {
        return false;
    };
    first.get("id").is_some_and(serde_json::Value::is_u64)
        && first.get("timestamp").is_some()
        && matches!(
            first.get("source").and_then(|s| s.as_str()),
            Some("user" | "agent" | "environment")
        )
        && (first.get("action").is_some() || first.get("observation").is_some())
}

fn detect_text(head: &Head<'_>) -> Result<bool> {
    Ok(text_app(head).is_some())
}

fn open_text(path: &Path, limits: Limits) -> Result<Opened> {
    let bytes = {
        use std::io::Read;
        let f = std::fs::File::open(path).map_err(|e| Error::io(path, &e))?;
        let mut buf = Vec::new();
        f.take(Head::LEN as u64)
            .read_to_end(&mut buf)
            .map_err(|e| Error::io(path, &e))?;
        buf
    };
    let head = Head::new(path, &bytes, limits);
    let what = text_app(&head).unwrap_or("a history chatfsck recognises");
    Err(refuse(path, what))
}

fn columns(conn: &rusqlite::Connection, table: &str) -> std::result::Result<Vec<String>, String> {
    let mut stmt = conn
        .prepare(&format!(
            "PRAGMA table_info(\"{}\")",
            table.replace('"', "\"\"")
        ))
        .map_err(|e| e.to_string())?;
    let rows = stmt
        .query_map([], |r| r.get::<_, String>(1))
        .map_err(|e| e.to_string())?;
    rows.collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())
}

fn has(tables: &[String], t: &str) -> bool {
    tables.iter().any(|x| x == t)
}

fn has_columns(
    conn: &rusqlite::Connection,
    table: &str,
    want: &[&str],
) -> std::result::Result<bool, String> {
    let cols = columns(conn, table)?;
    Ok(want.iter().all(|w| cols.iter().any(|c| c == w)))
}

/// Which app wrote a database: table names alone are too common, so the
/// column sets are checked too.
fn sqlite_app(
    conn: &rusqlite::Connection,
    tables: &[String],
) -> std::result::Result<Option<&'static str>, String> {
    if has(tables, "checkpoints")
        && has(tables, "writes")
        && has_columns(
            conn,
            "checkpoints",
            &[
                "thread_id",
                "checkpoint_ns",
                "checkpoint_id",
                "parent_checkpoint_id",
                "type",
                "checkpoint",
                "metadata",
            ],
        )?
        && has_columns(
            conn,
            "writes",
            &["task_id", "idx", "channel", "type", "value"],
        )?
    {
        return Ok(Some("a LangGraph checkpoint database (`SqliteSaver`)"));
    }
    Ok(None)
}

fn detect_sqlite(
    conn: &rusqlite::Connection,
    tables: &[String],
) -> std::result::Result<bool, String> {
    Ok(sqlite_app(conn, tables)?.is_some())
}

fn open_sqlite(path: &Path, snap: Snapshot) -> Result<Opened> {
    let tables =
        crate::source::sqlite::tables(&snap.conn).map_err(crate::source::sqlite::error_of(path))?;
    let what = sqlite_app(&snap.conn, &tables)
        .map_err(|cause| Error::input(path, cause))?
        .unwrap_or("a database chatfsck recognises");
    Err(refuse(path, what))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_aider_header_is_found_after_blank_lines_only() {
        assert!(super::aider_header(
            "\n# aider chat started at 2025-09-14 10:02:11\n"
        ));
        assert!(!super::aider_header("# aider chat started at yesterday\n"));
        assert!(!super::aider_header(
            "hello\n# aider chat started at 2025-09-14 10:02:11\n"
        ));
    }
}
