//! The reader every JSON history shares: JSONL logs (one record per line)
//! and JSON documents (one array of records, or an object with a `messages`
//! array). A JSONL file is read line by line, never slurped; a JSON
//! document is one conversation and is read whole, within a size limit.
//! Each record is parsed once ([`record`]) and handed to the reader of its
//! family (provider-shaped messages, Claude Code, Codex), which the store
//! that opened the file names.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::model::{Conversation, Dialect, Format, Loc, SourceInfo};
use crate::source::compressed::Text;
use crate::source::lines::{LineReader, Next};
use crate::source::{Limits, Source};
use record::{Builder, Family, Handlers};

pub mod chain;
pub mod lazy;
pub mod record;
pub(crate) mod torn;
pub mod writer;

pub struct FileSource {
    path: PathBuf,
    limits: Limits,
    handlers: &'static Handlers,
    info: Arc<SourceInfo>,
    done: bool,
}

/// Open a JSON history whose records `handlers` read.
pub(crate) fn open(
    path: &Path,
    limits: Limits,
    handlers: &'static Handlers,
) -> Result<Box<dyn Source>> {
    // Open now so that an unreadable file fails before any work starts.
    File::open(path).map_err(|e| Error::io(path, &e))?;
    // A store that reads only its own records knows its dialect before
    // reading: the repair engine picks the writer from it.
    let dialect = match (handlers.chat, handlers.claude_code, handlers.codex) {
        (None, Some(_), None) => Dialect::ClaudeCode,
        (None, None, Some(_)) => Dialect::Codex,
        _ => Dialect::Unknown,
    };
    Ok(Box::new(FileSource {
        path: path.to_path_buf(),
        limits,
        handlers,
        info: Arc::new(SourceInfo {
            path: path.to_path_buf(),
            format: Format::Jsonl,
            dialect,
        }),
        done: false,
    }))
}

/// The family of the first line in `head` that parses as a JSON object
/// with a `role` or a `type` (as the builder decides a file's family);
/// `None` when no such line is in the head.
pub fn first_family(head: &super::Head<'_>) -> Option<Family> {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow, default)]
        role: Option<&'a RawValue>,
        #[serde(rename = "type", borrow, default)]
        ty: Option<&'a RawValue>,
        #[serde(borrow, default)]
        payload: Option<&'a RawValue>,
    }
    let text = head.bytes;
    if text.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    for line in text.split(|&b| b == b'\n') {
        let Ok(p) = serde_json::from_slice::<Probe<'_>>(line) else {
            continue;
        };
        return match (p.role, p.ty, p.payload) {
            (Some(_), _, _) => Some(Family::Chat),
            (None, Some(_), Some(_)) => Some(Family::Codex),
            (None, Some(_), None) => Some(Family::ClaudeCode),
            (None, None, _) => continue,
        };
    }
    None
}

impl Source for FileSource {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        if self.done {
            return None;
        }
        self.done = true;
        let result = read_file(&self.path, self.limits, self.handlers);
        if let Ok(conv) = &result {
            self.info = conv.source.clone();
        }
        Some(result)
    }
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The file's text, buffered: a compressed file (a Codex `.jsonl.zst`
/// rollout) is decompressed as it is read.
type Reader = BufReader<Text>;

fn read_file(path: &Path, limits: Limits, handlers: &'static Handlers) -> Result<Conversation> {
    let mut reader = Text::open(path)?.buffered();
    let head = reader.fill_buf().map_err(|e| Error::io(path, &e))?;
    let head = head.strip_prefix(BOM).unwrap_or(head);
    let first = head.iter().copied().find(|b| !b.is_ascii_whitespace());
    let Some(first) = first else {
        return Err(Error::not_history(path, "file is empty"));
    };
    let is_json_ext = path.extension().and_then(|e| e.to_str()) == Some("json");
    if first == b'[' || (is_json_ext && first == b'{') {
        match read_document(path, reader, limits, handlers)? {
            Some(conv) => return Ok(conv),
            // Not a document: JSONL that happens to be named `.json`.
            None => reader = Text::open(path)?.buffered(),
        }
    }
    read_lines(path, reader, limits, handlers)
}

fn new_builder(path: &Path, handlers: &'static Handlers) -> Builder {
    let placeholder = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: Format::Jsonl,
        dialect: Dialect::Unknown,
    });
    Builder::new(
        Conversation::new(path.display().to_string(), placeholder),
        handlers,
    )
}

fn finish(path: &Path, mut b: Builder, format: Format) -> Result<Conversation> {
    if b.records == 0 {
        let cause = match b.first_problem.take() {
            Some(p) => format!("not a message history: {p}"),
            None => "not a message history".to_string(),
        };
        return Err(Error::not_history(path, cause));
    }
    let dialect = b.dialect();
    b.conv.source = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format,
        dialect,
    });
    Ok(b.conv)
}

fn read_lines(
    path: &Path,
    reader: Reader,
    limits: Limits,
    handlers: &'static Handlers,
) -> Result<Conversation> {
    let len = reader.get_ref().len_hint();
    let mut lines = LineReader::new(reader, limits.max_line_bytes).with_len(len);
    let mut b = new_builder(path, handlers);
    loop {
        match lines.next_line().map_err(|e| Error::io(path, &e))? {
            Next::End => break,
            Next::TooLong => return Err(line_too_long(path, lines.line, limits)),
            Next::Line => {}
        }
        let mut bytes: &[u8] = &lines.buf;
        if lines.line == 1 {
            bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let loc = Loc::Line {
            line: lines.line,
            start: lines.start,
            end: lines.end(),
        };
        let torn = !lines.terminated;
        if memchr::memchr(0, bytes).is_some() {
            if b.records == 0 && lines.line == 1 && !torn {
                return Err(Error::not_history(
                    path,
                    "binary file (NUL bytes on line 1)",
                ));
            }
            b.corrupt(loc, "contains NUL bytes".into(), bytes, torn);
            continue;
        }
        match b.feed_bytes(bytes, loc.clone(), torn) {
            Ok(()) => {}
            Err(_) if torn => {
                b.corrupt(loc, "is not valid UTF-8".into(), bytes, true);
            }
            // A first line that reads as a record once its invalid
            // sequences are replaced is a damaged record, not a binary file.
            Err(_)
                if b.records == 0
                    && lines.line == 1
                    && !record::one_json_value(String::from_utf8_lossy(bytes).as_bytes()) =>
            {
                return Err(Error::not_history(
                    path,
                    "binary file (line 1 is not UTF-8 text)",
                ));
            }
            // A write torn inside a multi-byte character, or bytes
            // damaged on disk: a damaged record like any other.
            Err(_) => b.corrupt(loc, "is not valid UTF-8".into(), bytes, false),
        }
    }
    finish(path, b, Format::Jsonl)
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow)]
    messages: Vec<&'a RawValue>,
}

/// Read a JSON document. `Ok(None)` when the file is not a document after
/// all (an object that is one JSONL record).
fn read_document(
    path: &Path,
    mut reader: Reader,
    limits: Limits,
    handlers: &'static Handlers,
) -> Result<Option<Conversation>> {
    let too_large = || {
        Error::input(
            path,
            format!(
                "JSON document is larger than {} MiB",
                limits.max_document_bytes >> 20
            ),
        )
    };
    // A plain file's size is known before reading; a compressed one's
    // text is read up to the limit.
    let len = if reader.get_ref().is_zstd() {
        0
    } else {
        std::fs::metadata(path)
            .map_err(|e| Error::io(path, &e))?
            .len()
    };
    if len > limits.max_document_bytes {
        return Err(too_large());
    }
    let mut data = Vec::with_capacity(len as usize);
    (&mut reader)
        .take(limits.max_document_bytes)
        .read_to_end(&mut data)
        .map_err(|e| Error::io(path, &e))?;
    if !reader
        .fill_buf()
        .map_err(|e| Error::io(path, &e))?
        .is_empty()
    {
        return Err(too_large());
    }
    let start = if data.starts_with(BOM) { BOM.len() } else { 0 };
    if memchr::memchr(0, &data).is_some() {
        return Err(Error::not_history(path, "binary file (NUL bytes)"));
    }
    let text = std::str::from_utf8(&data[start..]).map_err(|e| {
        let line = 1 + memchr::memchr_iter(b'\n', &data[..start + e.valid_up_to()]).count();
        Error::input(path, format!("line {line} is not valid UTF-8"))
    })?;
    let elements: Vec<&RawValue> = if text.trim_start().starts_with('[') {
        serde_json::from_str(text).map_err(|e| {
            Error::input(
                path,
                format!(
                    "is not valid JSON ({} at line {} column {})",
                    short(&e),
                    e.line(),
                    e.column()
                ),
            )
        })?
    } else {
        match serde_json::from_str::<Body<'_>>(text) {
            Ok(body) => body.messages,
            // One JSON object over several lines is a document, not JSON
            // Lines: read as lines, it would be blamed for a torn first line.
            Err(_) if is_multiline_value(text) => {
                return Err(Error::not_history(
                    path,
                    "not a message history: the JSON document is an object without a `messages` array",
                ));
            }
            Err(_) => return Ok(None),
        }
    };
    let empty = elements.is_empty() && text.trim_start().starts_with('[');
    let mut b = new_builder(path, handlers);
    for (el, loc) in element_locs(text, start, elements) {
        b.feed(el.get(), loc, false);
    }
    if b.records == 0 && b.conv.corrupt.is_empty() {
        // `[]` is a history (an emptied one) only where its name says so.
        return Err(Error::not_history(
            path,
            if empty {
                "JSON document holds no messages (an empty array: an emptied Cline or Roo Code task is read as one only under its own name, api_conversation_history.json)"
            } else {
                "JSON document holds no messages"
            },
        ));
    }
    finish(path, b, Format::Json).map(Some)
}

/// Whether `text` is one JSON value that spans more than one line.
fn is_multiline_value(text: &str) -> bool {
    text.trim().contains('\n') && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// The elements of a JSON document's array, each with its location: the
/// line it starts on and its byte range in the file (`start`: where `text`
/// starts in the file, after a byte-order mark).
pub(crate) fn element_locs<'t>(
    text: &'t str,
    start: usize,
    elements: Vec<&'t RawValue>,
) -> impl Iterator<Item = (&'t RawValue, Loc)> {
    let base = text.as_ptr() as usize;
    let (mut line, mut counted) = (1u64, 0usize);
    elements.into_iter().map(move |el| {
        let off = el.get().as_ptr() as usize - base;
        line += memchr::memchr_iter(b'\n', &text.as_bytes()[counted..off]).count() as u64;
        counted = off;
        let loc = Loc::Line {
            line,
            start: (start + off) as u64,
            end: (start + off + el.get().len()) as u64,
        };
        (el, loc)
    })
}

/// A line over the limit: the one-line error every line reader gives.
pub(crate) fn line_too_long(path: &Path, line: u64, limits: Limits) -> Error {
    Error::input(
        path,
        format!(
            "line {line} is longer than {} MiB; not a message log (raise the limit with --max-line-mib)",
            limits.max_line_bytes >> 20
        ),
    )
}

fn short(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.find(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
