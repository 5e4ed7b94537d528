//! Histories chatfsck recognises but does not read yet: Aider's
//! `.aider.chat.history.md`, OpenHands trajectories, SWE-agent `.traj`
//! files and Kimi Code's `wire.jsonl` event logs (samples and markers:
//! `fixtures/unsupported/README.md`). Each is refused with one line that
//! names the app and says it is not supported yet (exit 2), instead of "not
//! a history" or, worse, a wrong reader that finds nothing. (The SQLite
//! stores it once refused, LangGraph's and Open WebUI's, are read now.)

use std::path::Path;

use super::store::{Head, Hooks, Opened, Probe, Store, Writing};
use crate::error::{Error, Result};
use crate::source::Limits;

const NEVER: &str = "chatfsck does not read this format yet";

pub static TEXT: Store = Store {
    name: "Aider, OpenHands, SWE-agent and Kimi Code histories (recognised, not read yet)",
    formats: &[],
    dialects: &[],
    probe: Probe::Text {
        detect: detect_text,
        open: open_text,
    },
    writing: Writing::Never(NEVER),
    hooks: Hooks::NONE,
};

fn refuse(path: &Path, what: &str) -> Error {
    Error::input(
        path,
        format!("is {what}; chatfsck does not support this format yet"),
    )
}

/// What a text file is, when it is one of the apps of this store.
fn text_app(head: &Head<'_>) -> Option<std::borrow::Cow<'static, str>> {
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
        Some(b'{') => head.extension() == Some("traj") || kimi_wire(head.bytes).is_some(),
        Some(b'[') => true,
        _ => name == ".aider.chat.history.md",
    };
    if !wanted {
        return None;
    }
    let text = String::from_utf8_lossy(head.bytes);
    if name == ".aider.chat.history.md" || aider_header(&text) {
        return Some("an Aider chat history (`.aider.chat.history.md`)".into());
    }
    if first == Some(b'{') && swe_agent(head.extension(), &text) {
        return Some("a SWE-agent trajectory (`.traj`)".into());
    }
    if first == Some(b'{')
        && let Some(version) = kimi_wire(head.bytes)
    {
        // Protocols 1.0 to 1.5 are read by `format::kimi_code`, tried first.
        return Some(
            format!(
                "a Kimi Code session's event log (`wire.jsonl`) of protocol version {}, which chatfsck does not know (it reads 1.0 to 1.5, what Kimi Code 2.1.0 migrates and writes)",
                crate::escape::preview(&version, 40)
            )
            .into(),
        );
    }
    if first == Some(b'[') && openhands(&text) {
        return Some("an OpenHands trajectory".into());
    }
    None
}

/// The protocol version of a Kimi Code (or kimi-cli) event log
/// (`sessions/<workdir>/<session>/agents/<agent>/wire.jsonl`), whose first
/// line is `{"type":"metadata","protocol_version":"1.5",…}` (Kimi Code
/// 2.1.0 writes it so; kimi-cli's migrations went from 1.1 to 1.5). Without
/// this, the log's records, each with a `type`, were taken for a Claude
/// Code session with no message and called clean.
fn kimi_wire(bytes: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct First {
        #[serde(rename = "type")]
        ty: String,
        protocol_version: serde_json::Value,
    }
    let line = bytes.split(|&b| b == b'\n').next()?;
    let first: First = serde_json::from_slice(line).ok()?;
    (first.ty == "metadata").then(|| match first.protocol_version {
        serde_json::Value::String(s) => s,
        v => v.to_string(),
    })
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
    let what = text_app(&head).unwrap_or("a history chatfsck recognises".into());
    Err(refuse(path, &what))
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
