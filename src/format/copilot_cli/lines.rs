//! The lines of an event log as a line-by-line reader meets them, and
//! the records they hold where a line is damaged around one: a record
//! split over several lines by raw newlines inside its strings
//! (`split-record`), NUL padding before or after it (`nul-padding`). The
//! reader (`mod.rs`) and the writer (`writer.rs`) read the log through
//! here, so that the repair edits the records the lint found.

use std::path::Path;

use crate::error::{Error, Result};
use crate::model::Loc;
use crate::source::Limits;
use crate::source::lines::{LineReader, Next};

/// How many lines that do not parse are kept to join with the lines
/// after them into one record (a record split by more raw newlines is
/// left as lines that do not parse).
const MAX_SPLIT_LINES: usize = 64;

/// How many of the kept lines are tried as a split record's first line.
const MAX_STARTS: usize = 4;

/// What the lines of a log hold, in file order.
pub trait Sink {
    /// Read `text` (at `loc`) as one record: `joined` lines, `nuls` NUL
    /// bytes of padding taken off its line. False, and nothing done,
    /// when it is no JSON object.
    fn record(&mut self, text: &[u8], at: At) -> bool;
    /// A line that holds no record, alone or joined with those around it.
    fn corrupt(&mut self, bytes: &[u8], loc: Loc, terminated: bool);
    /// A line of `nuls` NUL bytes and nothing else (but whitespace).
    fn padding(&mut self, loc: Loc, nuls: u64);
}

/// Where a record's text comes from.
#[derive(Debug, Clone)]
pub struct At {
    /// Its bytes: for a record split over lines, from its first line's
    /// start to its last line's end.
    pub loc: Loc,
    /// How many lines it is written over (1 but for a split record).
    pub lines: u64,
    /// NUL bytes taken off its line.
    pub nuls: u64,
}

/// A line kept to join with the lines after it.
struct Pending {
    bytes: Vec<u8>,
    line: u64,
    start: u64,
    end: u64,
    terminated: bool,
}

/// Read the log at `path` line by line into `sink`: a line longer than
/// `limits` allows is an error naming the file.
pub fn read(path: &Path, limits: Limits, sink: &mut impl Sink) -> Result<()> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, &e))?;
    let mut lines = LineReader::of_file(file, limits.max_line_bytes);
    let mut pending: Vec<Pending> = Vec::new();
    loop {
        match lines.next_line().map_err(|e| Error::io(path, &e))? {
            Next::End => break,
            Next::TooLong => {
                return Err(Error::input(
                    path,
                    format!(
                        "line {} is longer than {} MiB (raise the limit with --max-line-mib)",
                        lines.line,
                        limits.max_line_bytes >> 20
                    ),
                ));
            }
            Next::Line => {}
        }
        let bytes: &[u8] = &lines.buf;
        let loc = Loc::Line {
            line: lines.line,
            start: lines.start,
            end: lines.end(),
        };
        let (core, nuls) = strip_nuls(bytes);
        if core.iter().all(u8::is_ascii_whitespace) {
            if nuls > 0 {
                flush(&mut pending, sink);
                sink.padding(loc, nuls);
            } else if !pending.is_empty() {
                // A blank line inside a split string (`\n\n`).
                pending.push(Pending::of(bytes, &lines));
            }
            continue;
        }
        let at = At {
            loc: loc.clone(),
            lines: 1,
            nuls,
        };
        if sink.record(core, at) {
            flush(&mut pending, sink);
            continue;
        }
        if !pending.is_empty() && join_pending(&mut pending, core, &lines, sink) {
            continue;
        }
        pending.push(Pending::of(bytes, &lines));
        // A split record is no longer than a line may be.
        while pending.len() > MAX_SPLIT_LINES
            || pending.iter().map(|p| p.bytes.len()).sum::<usize>() > limits.max_line_bytes
        {
            let p = pending.remove(0);
            sink.corrupt(&p.bytes, p.loc(), p.terminated);
        }
    }
    flush(&mut pending, sink);
    Ok(())
}

impl Pending {
    fn of(bytes: &[u8], lines: &LineReader<impl std::io::BufRead>) -> Pending {
        Pending {
            bytes: bytes.to_vec(),
            line: lines.line,
            start: lines.start,
            end: lines.end(),
            terminated: lines.terminated,
        }
    }

    fn loc(&self) -> Loc {
        Loc::Line {
            line: self.line,
            start: self.start,
            end: self.end,
        }
    }
}

/// Try the pending lines from each one on, with `last`, as one record
/// (the earliest start first): the lines before it are corrupt.
fn join_pending(
    pending: &mut Vec<Pending>,
    last: &[u8],
    lines: &LineReader<impl std::io::BufRead>,
    sink: &mut impl Sink,
) -> bool {
    // A record starts a line with `{`: the latest few such lines are
    // tried, the latest first.
    let starts: Vec<usize> = (0..pending.len())
        .rev()
        .filter(|&k| pending[k].bytes.trim_ascii_start().starts_with(b"{"))
        .take(MAX_STARTS)
        .collect();
    for k in starts {
        let parts: Vec<&[u8]> = pending[k..]
            .iter()
            .map(|p| p.bytes.as_slice())
            .chain([last])
            .collect();
        let Some(text) = join(&parts) else {
            continue;
        };
        let first = &pending[k];
        let at = At {
            loc: Loc::Line {
                line: first.line,
                start: first.start,
                end: lines.end(),
            },
            lines: (pending.len() - k + 1) as u64,
            nuls: 0,
        };
        if sink.record(text.as_bytes(), at) {
            for p in pending.drain(..).take(k) {
                sink.corrupt(&p.bytes, p.loc(), p.terminated);
            }
            pending.clear();
            return true;
        }
    }
    false
}

fn flush(pending: &mut Vec<Pending>, sink: &mut impl Sink) {
    for p in pending.drain(..) {
        sink.corrupt(&p.bytes, p.loc(), p.terminated);
    }
}

/// `bytes` without the NUL bytes at its start and end, and how many.
pub fn strip_nuls(bytes: &[u8]) -> (&[u8], u64) {
    let lead = bytes.iter().take_while(|&&b| b == 0).count();
    let rest = &bytes[lead..];
    let trail = rest.iter().rev().take_while(|&&b| b == 0).count();
    (&rest[..rest.len() - trail], (lead + trail) as u64)
}

/// The lines `parts` (split where a record's text had raw newlines) as
/// the one line of JSON they were: each newline inside a string written
/// as `\n` (a carriage return before it as `\r`). `None` when the
/// lines are not UTF-8 or a newline falls outside a string.
pub fn join(parts: &[&[u8]]) -> Option<String> {
    let mut out = String::new();
    let mut in_string = false;
    let mut escaped = false;
    for (i, part) in parts.iter().enumerate() {
        let text = std::str::from_utf8(part).ok()?;
        if i > 0 {
            // A newline outside a string (a record written over lines
            // as a pretty-printer writes it), or after a backslash (no
            // JSON escape): not a record split by raw newlines.
            if escaped || !in_string {
                return None;
            }
            out.push_str("\\n");
        }
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if in_string {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    in_string = false;
                } else if c == '\r' && chars.peek().is_none() && i + 1 < parts.len() {
                    out.push_str("\\r");
                    continue;
                }
            } else if c == '"' {
                in_string = true;
            }
            out.push(c);
        }
    }
    Some(out)
}

/// The whole events a line that does not parse holds, as byte ranges of
/// `text`: each object starting `{"type":` or `{"id":` that parses where
/// it starts, after a torn event (a write cut short, the next one
/// appended on its line) or glued to another (`}{`). Copilot CLI 1.0.102
/// writes `type` first; logs written in the schema's order (`id`,
/// `parentId`, `timestamp`, `type`, `data`: the hand-made sessions of
/// `fixtures/copilot-cli/home`) start with `id`.
pub fn whole_events(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    let next = |from: usize| {
        ["{\"type\":", "{\"id\":"]
            .iter()
            .filter_map(|p| text[from..].find(p))
            .min()
    };
    while let Some(k) = next(from) {
        let start = from + k;
        let mut values =
            serde_json::Deserializer::from_str(&text[start..]).into_iter::<serde::de::IgnoredAny>();
        match values.next() {
            Some(Ok(_)) => {
                let end = start + values.byte_offset();
                out.push((start, end));
                from = end;
            }
            _ => from = start + 1,
        }
    }
    out
}

/// How many raw U+2028 / U+2029 characters `text` holds.
pub fn raw_separators(text: &[u8]) -> u32 {
    let n = |needle: &[u8]| memchr::memmem::find_iter(text, needle).count() as u32;
    n("\u{2028}".as_bytes()) + n("\u{2029}".as_bytes())
}

/// `text` with each raw U+2028 / U+2029 written as its escape. Both are
/// valid raw only inside a JSON string, where the escape is the same
/// character.
pub fn escape_separators(text: &str) -> String {
    text.replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_lines_join_with_their_newlines_escaped_in_strings_only() {
        let j = join(&[br#"{"a":"one"#, br#"two","b":"th"#, br#"ree"}"#]).unwrap();
        assert_eq!(j, r#"{"a":"one\ntwo","b":"th\nree"}"#);
        assert!(serde_json::from_str::<serde_json::Value>(&j).is_ok());
        let crlf = join(&[b"{\"a\":\"x\r", br#"y"}"#]).unwrap();
        assert_eq!(crlf, r#"{"a":"x\r\ny"}"#);
        // A backslash at the end of a line escapes nothing across it.
        assert_eq!(join(&[br#"{"a":"x\"#, br#"y"}"#]), None);
        // A record pretty-printed over lines is not split in a string.
        assert_eq!(join(&[b"{", br#""a":1}"#]), None);
    }

    #[test]
    fn whole_events_are_found_after_a_torn_one_and_between_glued_ones() {
        let torn = r#"{"type":"a","data":{"x":"cut{"type":"b","data":{}}"#;
        let got: Vec<&str> = whole_events(torn)
            .iter()
            .map(|&(s, e)| &torn[s..e])
            .collect();
        assert_eq!(got, [r#"{"type":"b","data":{}}"#]);
        let glued = r#"{"type":"a"}{"type":"b"}"#;
        assert_eq!(whole_events(glued), [(0, 12), (12, 24)]);
        // In the schema's order, `id` first.
        let by_id = r#"{"id":"a","type":"a"}{"id":"b","data":{"type":"c"}}"#;
        assert_eq!(whole_events(by_id), [(0, 21), (21, 51)]);
    }

    #[test]
    fn nul_padding_is_taken_off_both_ends() {
        assert_eq!(strip_nuls(b"\0\0{}\0"), (&b"{}"[..], 3));
        assert_eq!(strip_nuls(b"\0\0"), (&b""[..], 2));
        assert_eq!(strip_nuls(b"{\0}"), (&b"{\0}"[..], 0));
    }

    #[test]
    fn separators_are_counted_and_escaped() {
        let t = "{\"a\":\"x\u{2028}y\u{2029}\"}";
        assert_eq!(raw_separators(t.as_bytes()), 2);
        let e = escape_separators(t);
        assert_eq!(e, r#"{"a":"x\u2028y\u2029"}"#);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&e).unwrap(),
            serde_json::from_str::<serde_json::Value>(t).unwrap()
        );
    }
}
