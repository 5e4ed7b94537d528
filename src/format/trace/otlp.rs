//! OTLP JSON files, as OpenTelemetry's file exporter writes them: one
//! `{"resourceSpans": [{"resource", "scopeSpans": [{"scope", "spans"}]}]}`
//! per line (a pretty-printed single document is read too). Attribute
//! values are OTLP `AnyValue`s (`{"stringValue": …}`, `{"intValue": "3"}`,
//! `arrayValue`, `kvlistValue`, …).
//!
//! A span is a recorded request when it carries the prompt: the GenAI
//! conventions' `gen_ai.input.messages` (with `gen_ai.output.messages`,
//! `gen_ai.response.finish_reasons`, `gen_ai.conversation.id`), or
//! OpenInference's flat keys (`llm.input_messages.0.message.role`, …,
//! `llm.finish_reason`, `session.id`).
//!
//! The file is read twice, line by line: once to index the spans (ids,
//! parents, conversation, byte range), then once per conversation to parse
//! only its spans, so memory holds one conversation at a time.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::messages::{self, decoded, list};
use super::{Backend, Group, request_id};
use crate::error::{Error, Result};
use crate::format::records::record::json_error;
use crate::model::{
    Conversation, CorruptRecord, Dialect, Format, Loc, Message, PartKind, Role, SourceInfo,
    SpanStatus,
};
use crate::source::Limits;
use crate::source::lines::{LineReader, Next};

pub static STORE: Store = Store {
    name: "OTLP JSON traces",
    formats: &[Format::OtlpJsonl, Format::OtlpJson],
    dialects: &[Dialect::GenAi, Dialect::OpenInference],
    probe: Probe::Text {
        detect: |head| Ok(detect(head.path, head.limits)?.is_some()),
        open: |path, limits| {
            let mode = detect(path, limits)?.unwrap_or(Mode::Lines);
            Ok(Opened::Trace(TraceSource::new(Box::new(open(
                path, mode, limits,
            )?))))
        },
    },
    writing: Writing::Never(super::NOT_REPAIRED),
    hooks: Hooks::NONE,
};
use super::TraceSource;
use crate::format::store::{Hooks, Opened, Probe, Store, Writing};

#[derive(Deserialize)]
struct Doc<'a> {
    #[serde(rename = "resourceSpans", borrow, default)]
    resource_spans: Option<Vec<ResourceSpans<'a>>>,
}

#[derive(Deserialize)]
struct ResourceSpans<'a> {
    #[serde(default)]
    resource: Option<Resource>,
    #[serde(rename = "scopeSpans", borrow, default)]
    scope_spans: Vec<ScopeSpans<'a>>,
    /// The name before OTLP 0.15.
    #[serde(rename = "instrumentationLibrarySpans", borrow, default)]
    library_spans: Vec<ScopeSpans<'a>>,
}

#[derive(Deserialize, Default)]
struct Resource {
    #[serde(default)]
    attributes: Vec<KeyValue>,
}

#[derive(Deserialize)]
struct ScopeSpans<'a> {
    #[serde(borrow, default)]
    spans: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct KeyValue {
    key: String,
    #[serde(default)]
    value: Value,
}

#[derive(Deserialize)]
struct SpanDoc {
    #[serde(rename = "traceId", default)]
    trace_id: String,
    #[serde(rename = "spanId", default)]
    span_id: String,
    #[serde(rename = "parentSpanId", default)]
    parent_span_id: Option<String>,
    #[serde(rename = "startTimeUnixNano", default)]
    start: Option<Value>,
    #[serde(default)]
    attributes: Vec<KeyValue>,
    #[serde(default)]
    events: Vec<EventDoc>,
    #[serde(default)]
    status: Option<StatusDoc>,
}

#[derive(Deserialize)]
struct EventDoc {
    #[serde(default)]
    name: String,
    #[serde(default)]
    attributes: Vec<KeyValue>,
}

#[derive(Deserialize)]
struct StatusDoc {
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
}

/// An OTLP `AnyValue` as plain JSON.
pub fn any_value(v: &Value) -> Value {
    let Some(o) = v.as_object() else {
        return v.clone();
    };
    if let Some(s) = o.get("stringValue") {
        return s.clone();
    }
    if let Some(i) = o.get("intValue") {
        return match i {
            Value::String(s) => s
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| i.clone()),
            other => other.clone(),
        };
    }
    if let Some(b) = o.get("boolValue") {
        return b.clone();
    }
    if let Some(d) = o.get("doubleValue") {
        return d.clone();
    }
    if let Some(b) = o.get("bytesValue") {
        return b.clone();
    }
    if let Some(a) = o.get("arrayValue") {
        return Value::Array(
            a.get("values")
                .and_then(Value::as_array)
                .map(|vs| vs.iter().map(any_value).collect())
                .unwrap_or_default(),
        );
    }
    if let Some(kv) = o.get("kvlistValue") {
        let mut m = serde_json::Map::new();
        for e in kv
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(k) = e.get("key").and_then(Value::as_str) {
                m.insert(
                    k.to_string(),
                    e.get("value").map(any_value).unwrap_or(Value::Null),
                );
            }
        }
        return Value::Object(m);
    }
    Value::Null
}

fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attrs.iter().find(|kv| kv.key == key).map(|kv| &kv.value)
}

fn attr_str(attrs: &[KeyValue], key: &str) -> Option<String> {
    attr(attrs, key)
        .map(any_value)
        .and_then(|v| v.as_str().map(str::to_string))
        .filter(|s| !s.is_empty())
}

const GENAI_INPUT: &str = "gen_ai.input.messages";
const OI_INPUT: &str = "llm.input_messages.";

fn is_request(attrs: &[KeyValue]) -> bool {
    attrs
        .iter()
        .any(|kv| kv.key == GENAI_INPUT || kv.key.starts_with(OI_INPUT))
}

fn conversation_attr(attrs: &[KeyValue]) -> Option<String> {
    attr_str(attrs, "gen_ai.conversation.id").or_else(|| attr_str(attrs, "session.id"))
}

/// How the file holds its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// JSON Lines, one export per line.
    Lines,
    /// One pretty-printed JSON document.
    Document,
}

/// Whether a `.jsonl`/`.json` file is an OTLP export: its first record has
/// `resourceSpans`. A first line that announces `resourceSpans` but does
/// not parse is an error: the file claims to be a trace and is not.
pub fn detect(path: &Path, limits: Limits) -> Result<Option<Mode>> {
    // Most files are no export: their first line is looked at as it
    // streams by, not gathered (a compact Cline task is one line of tens
    // of MB, which a buffer grown for it left in the peak of every run).
    if !first_line_may_be_an_export(path)? {
        return Ok(None);
    }
    let file = File::open(path).map_err(|e| Error::io(path, &e))?;
    let mut lines = LineReader::new(BufReader::new(file), limits.max_line_bytes);
    loop {
        match lines.next_line().map_err(|e| Error::io(path, &e))? {
            Next::End | Next::TooLong => return Ok(None),
            Next::Line => {}
        }
        let bytes = lines
            .buf
            .strip_prefix(b"\xEF\xBB\xBF")
            .unwrap_or(&lines.buf);
        // Every history passes through here: a line that does not name
        // `resourceSpans` is no OTLP export, and is not parsed here (a
        // pretty-printed document's lone `{` is checked whole below).
        let names_spans = memchr::memmem::find(bytes, b"\"resourceSpans\"").is_some();
        if !names_spans && bytes.trim_ascii() != b"{" {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(bytes);
        let t = text.trim();
        if t.is_empty() {
            continue;
        }
        if !t.starts_with('{') {
            return Ok(None);
        }
        if t == "{" {
            // A pretty-printed document: look at the whole of it.
            return detect_document(path, limits);
        }
        let head: String = t.chars().take(64).collect();
        let mended = std::cell::OnceCell::new();
        return match messages::parse_lenient::<Doc<'_>>(t, &mended) {
            Ok(Doc {
                resource_spans: Some(_),
            }) => Ok(Some(Mode::Lines)),
            Ok(_) => Ok(None),
            Err(e) if head.contains("\"resourceSpans\"") => Err(Error::input(
                path,
                format!("OTLP trace file: line {} {}", lines.line, json_error(&e)),
            )),
            Err(_) => Ok(None),
        };
    }
}

/// Whether the first line of the file names `resourceSpans` or is a lone
/// `{` (after a byte-order mark, with ASCII whitespace around it): the
/// lines [`detect`] looks further at. Read in the reader's own chunks,
/// keeping only the few bytes a name cut between two chunks needs.
fn first_line_may_be_an_export(path: &Path) -> Result<bool> {
    use std::io::BufRead;
    const NAME: &[u8] = br#""resourceSpans""#;
    let file = File::open(path).map_err(|e| Error::io(path, &e))?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let finder = memchr::memmem::Finder::new(NAME);
    // The last bytes of the previous chunk, and what the line held so far
    // besides whitespace: nothing, a lone `{`, or more.
    let mut tail: Vec<u8> = Vec::with_capacity(2 * NAME.len());
    let (mut brace, mut other) = (false, false);
    let mut first = true;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(path, &e)),
        };
        if chunk.is_empty() {
            return Ok(brace && !other);
        }
        let (line, ends) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..i], true),
            None => (chunk, false),
        };
        let mut body = line;
        if first {
            body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
            first = false;
        }
        tail.extend_from_slice(&body[..body.len().min(NAME.len())]);
        if finder.find(&tail).is_some() || finder.find(body).is_some() {
            return Ok(true);
        }
        if !other {
            for &b in body.iter().filter(|b| !b.is_ascii_whitespace()) {
                if b == b'{' && !brace {
                    brace = true;
                } else {
                    other = true;
                    break;
                }
            }
        }
        if ends {
            return Ok(brace && !other);
        }
        tail.clear();
        tail.extend_from_slice(&body[body.len().saturating_sub(NAME.len())..]);
        let n = line.len();
        reader.consume(n);
    }
}

fn detect_document(path: &Path, limits: Limits) -> Result<Option<Mode>> {
    let len = std::fs::metadata(path)
        .map_err(|e| Error::io(path, &e))?
        .len();
    if len > limits.max_document_bytes {
        return Ok(None);
    }
    // An export names `resourceSpans` first: do not read a large document
    // that does not.
    let mut head = vec![0u8; 4096];
    let n = File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| Error::io(path, &e))?;
    if memchr::memmem::find(&head[..n], br#""resourceSpans""#).is_none() {
        return Ok(None);
    }
    let data = std::fs::read(path).map_err(|e| Error::io(path, &e))?;
    let Ok(text) = std::str::from_utf8(&data) else {
        return Ok(None);
    };
    let mended = std::cell::OnceCell::new();
    match messages::parse_lenient::<Doc<'_>>(text.trim_start_matches('\u{feff}'), &mended) {
        Ok(Doc {
            resource_spans: Some(_),
        }) => Ok(Some(Mode::Document)),
        _ => Ok(None),
    }
}

/// What the index keeps of a span.
#[derive(Debug, Clone)]
struct SpanMeta {
    line: u64,
    start: u64,
    end: u64,
    trace: String,
    span: String,
    parent: Option<String>,
    request: bool,
    conversation: Option<String>,
    start_ns: u128,
    order: usize,
}

pub struct Otlp {
    path: PathBuf,
    /// The file, open once: requests are read from it span by span.
    file: File,
    info: Arc<SourceInfo>,
    groups: Vec<String>,
    /// Request spans by conversation, in order.
    members: HashMap<String, Vec<SpanMeta>>,
    stray: Vec<CorruptRecord>,
    /// The requests of the conversation last opened: (group, span, turn, step).
    current: Vec<(String, SpanMeta, usize, usize)>,
}

fn nanos(v: &Option<Value>) -> u128 {
    match v {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_u64().map(u128::from).unwrap_or(0),
        _ => 0,
    }
}

/// Index one record (a line, or the whole document).
#[allow(clippy::too_many_arguments)]
fn index_record(
    text: &str,
    base: u64,
    line: u64,
    mode: Mode,
    torn: bool,
    spans: &mut Vec<SpanMeta>,
    resource_conv: &mut HashMap<usize, String>,
    stray: &mut Vec<CorruptRecord>,
) {
    let whole = Loc::Line {
        line,
        start: base,
        end: base + text.len() as u64,
    };
    // Offsets are taken in the text parsed: the mended copy, when the
    // text has lone surrogate escapes, is as long as the text.
    let mended = std::cell::OnceCell::new();
    let doc: Doc<'_> = match messages::parse_lenient(text, &mended) {
        Ok(d) => d,
        Err(e) => {
            let mut c = messages::corrupt(&whole, json_error(&e), text);
            c.torn_tail = torn && e.is_eof();
            stray.push(c);
            return;
        }
    };
    let Some(rs) = doc.resource_spans else {
        // Metrics or logs in the same file: not ours, never corruption.
        return;
    };
    let origin = mended.get().map_or(text.as_bytes(), Vec::as_slice).as_ptr() as usize;
    for r in rs {
        let res_conv = r
            .resource
            .as_ref()
            .and_then(|res| conversation_attr(&res.attributes));
        for raw in r
            .scope_spans
            .iter()
            .chain(&r.library_spans)
            .flat_map(|s| &s.spans)
        {
            let off = raw.get().as_ptr() as usize - origin;
            let span_line = match mode {
                Mode::Lines => line,
                Mode::Document => {
                    line + memchr::memchr_iter(b'\n', &text.as_bytes()[..off]).count() as u64
                }
            };
            let loc = Loc::Line {
                line: span_line,
                start: base + off as u64,
                end: base + (off + raw.get().len()) as u64,
            };
            // The span as the file holds it (not as mended), for evidence.
            // What is parsed is `raw`: the mended text when the record
            // needed mending, else the file's, read leniently (a record
            // can parse with the escape inside a value it does not decode).
            let own = &text[off..off + raw.get().len()];
            let s: SpanDoc = match messages::parse_owned(raw.get()) {
                Ok(s) => s,
                Err(e) => {
                    stray.push(messages::corrupt(
                        &loc,
                        format!("holds a span that {}", json_error(&e)),
                        own,
                    ));
                    continue;
                }
            };
            let Loc::Line { line, start, end } = loc else {
                unreachable!()
            };
            let order = spans.len();
            if let Some(c) = &res_conv {
                resource_conv.insert(order, c.clone());
            }
            spans.push(SpanMeta {
                line,
                start,
                end,
                trace: s.trace_id,
                span: s.span_id,
                parent: s.parent_span_id.filter(|p| !p.is_empty()),
                request: is_request(&s.attributes),
                conversation: conversation_attr(&s.attributes),
                start_ns: nanos(&s.start),
                order,
            });
        }
    }
}

pub fn open(path: &Path, mode: Mode, limits: Limits) -> Result<Otlp> {
    let mut spans = Vec::new();
    let mut resource_conv = HashMap::new();
    let mut stray = Vec::new();
    let mut genai = false;
    match mode {
        Mode::Document => {
            let data = std::fs::read(path).map_err(|e| Error::io(path, &e))?;
            let text = std::str::from_utf8(&data)
                .map_err(|_| Error::input(path, "OTLP trace file is not valid UTF-8"))?;
            let skip = if text.starts_with('\u{feff}') { 3 } else { 0 };
            index_record(
                &text[skip..],
                skip as u64,
                1,
                mode,
                false,
                &mut spans,
                &mut resource_conv,
                &mut stray,
            );
            genai = text.contains(GENAI_INPUT);
        }
        Mode::Lines => {
            let file = File::open(path).map_err(|e| Error::io(path, &e))?;
            let mut lines = LineReader::new(
                BufReader::with_capacity(256 * 1024, file),
                limits.max_line_bytes,
            );
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
                let mut bytes: &[u8] = &lines.buf;
                let mut base = lines.start;
                if lines.line == 1 && bytes.starts_with(b"\xEF\xBB\xBF") {
                    bytes = &bytes[3..];
                    base += 3;
                }
                if bytes.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let Ok(text) = std::str::from_utf8(bytes) else {
                    let loc = Loc::Line {
                        line: lines.line,
                        start: base,
                        end: lines.end(),
                    };
                    stray.push(CorruptRecord::new(
                        loc,
                        "is not valid UTF-8".into(),
                        bytes,
                        !lines.terminated,
                    ));
                    continue;
                };
                if !genai && memchr::memmem::find(bytes, GENAI_INPUT.as_bytes()).is_some() {
                    genai = true;
                }
                index_record(
                    text,
                    base,
                    lines.line,
                    mode,
                    !lines.terminated,
                    &mut spans,
                    &mut resource_conv,
                    &mut stray,
                );
            }
        }
    }
    // A span's conversation: its own attribute, an ancestor's, its
    // resource's, or its trace.
    let by_id: HashMap<(&str, &str), usize> = spans
        .iter()
        .enumerate()
        .map(|(i, s)| ((s.trace.as_str(), s.span.as_str()), i))
        .collect();
    let mut resolved: Vec<String> = Vec::with_capacity(spans.len());
    for (i, s) in spans.iter().enumerate() {
        let mut cur = i;
        let mut conv = None;
        for _ in 0..64 {
            let c = &spans[cur];
            if let Some(v) = &c.conversation {
                conv = Some(v.clone());
                break;
            }
            match c
                .parent
                .as_deref()
                .and_then(|p| by_id.get(&(c.trace.as_str(), p)))
            {
                Some(&p) => cur = p,
                None => break,
            }
        }
        resolved.push(
            conv.or_else(|| resource_conv.get(&i).cloned())
                .unwrap_or_else(|| s.trace.clone()),
        );
    }
    let mut requests: Vec<(String, SpanMeta)> = spans
        .iter()
        .zip(resolved)
        .filter(|(s, _)| s.request)
        .map(|(s, g)| (g, s.clone()))
        .collect();
    if requests.is_empty() && stray.is_empty() {
        return Err(Error::not_history(
            path,
            "OTLP trace file records no LLM request (no span with `gen_ai.input.messages` or `llm.input_messages`)",
        ));
    }
    requests.sort_by_key(|(_, s)| (s.start_ns, s.order));
    let mut groups: Vec<String> = Vec::new();
    let mut members: HashMap<String, Vec<SpanMeta>> = HashMap::new();
    for (g, s) in requests {
        if !members.contains_key(&g) {
            groups.push(g.clone());
        }
        members.entry(g).or_default().push(s);
    }
    Ok(Otlp {
        path: path.to_path_buf(),
        file: File::open(path).map_err(|e| Error::io(path, &e))?,
        info: Arc::new(SourceInfo {
            path: path.to_path_buf(),
            format: if mode == Mode::Lines {
                Format::OtlpJsonl
            } else {
                Format::OtlpJson
            },
            dialect: if genai {
                Dialect::GenAi
            } else {
                Dialect::OpenInference
            },
        }),
        groups,
        members,
        stray,
        current: Vec::new(),
    })
}

fn read_span(file: &mut File, m: &SpanMeta) -> std::io::Result<String> {
    file.seek(SeekFrom::Start(m.start))?;
    let mut buf = vec![0u8; (m.end - m.start) as usize];
    file.read_exact(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Nanoseconds since the epoch as an RFC 3339 UTC timestamp.
fn iso_ns(ns: u128) -> Option<String> {
    (ns > 0).then(|| super::dispatch::iso_ms((ns / 1_000_000) as i64))
}

fn system_message(v: &Value, loc: &Loc) -> Option<Message> {
    let text = match v {
        Value::String(s) => s.clone(),
        other => list(other)
            .into_iter()
            .filter_map(|p| p.get("content").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let mut m = Message::new(Role::System, loc.clone());
    m.push(PartKind::Text { text: text.into() }, loc.clone());
    Some(m)
}

fn build(span: &SpanDoc, loc: &Loc, conv: &mut Conversation) -> super::phoenix::Partial {
    let attrs: Vec<(String, Value)> = span
        .attributes
        .iter()
        .map(|kv| (kv.key.clone(), any_value(&kv.value)))
        .collect();
    let get = |k: &str| attrs.iter().find(|(key, _)| key == k).map(|(_, v)| v);
    let mut p = super::phoenix::Partial::default();
    if let Some(input) = get(GENAI_INPUT) {
        match decoded(input) {
            Some(v) => {
                let (msgs, bad) = messages::genai(&v, loc);
                if let Some(sys) = get("gen_ai.system_instructions")
                    .and_then(decoded)
                    .and_then(|s| system_message(&s, loc))
                {
                    conv.messages.push(sys);
                }
                conv.messages.extend(msgs);
                conv.corrupt.extend(bad);
            }
            None => conv.corrupt.push(messages::corrupt(
                loc,
                format!("has `{GENAI_INPUT}` that is not JSON"),
                input.as_str().unwrap_or_default(),
            )),
        }
        p.bytes = Some(match input {
            Value::String(s) => s.len() as u64,
            other => other.to_string().len() as u64,
        });
        if let Some(out) = get("gen_ai.output.messages").and_then(decoded) {
            let (msgs, bad) = messages::genai(&out, loc);
            p.output = msgs;
            conv.corrupt.extend(bad);
        }
        p.finish = p
            .output
            .iter()
            .find_map(|m| m.finish_reason.clone())
            .or_else(|| {
                get("gen_ai.response.finish_reasons")
                    .and_then(decoded)
                    .and_then(|v| {
                        list(&v)
                            .first()
                            .and_then(|f| f.as_str())
                            .map(str::to_string)
                    })
            });
        p.model = get("gen_ai.response.model")
            .or_else(|| get("gen_ai.request.model"))
            .and_then(Value::as_str)
            .map(str::to_string);
        p.tools = get("gen_ai.tool.definitions")
            .and_then(decoded)
            .map(|v| list(&v).len());
    } else {
        let nested = messages::unflatten(attrs.iter().map(|(k, v)| (k.as_str(), v.clone())));
        p = super::phoenix::from_openinference(&nested, loc, conv);
    }
    p
}

impl Backend for Otlp {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn groups(&self) -> &[String] {
        &self.groups
    }

    fn stray(&mut self) -> Vec<CorruptRecord> {
        std::mem::take(&mut self.stray)
    }

    fn group(&mut self, id: &str) -> Result<Group> {
        let mut traces: Vec<&str> = Vec::new();
        let mut steps: HashMap<&str, usize> = HashMap::new();
        let mut plan = Vec::new();
        for m in self.members.get(id).map(Vec::as_slice).unwrap_or_default() {
            if !traces.contains(&m.trace.as_str()) {
                traces.push(&m.trace);
            }
            let turn_index = traces.iter().position(|t| *t == m.trace).expect("pushed") + 1;
            let step = steps.entry(&m.trace).or_insert(0);
            plan.push((id.to_string(), m.clone(), turn_index, *step));
            *step += 1;
        }
        let requests = plan.len();
        self.current = plan;
        Ok(Group {
            id: id.to_string(),
            requests,
            events: Vec::new(),
        })
    }

    fn request(&mut self, index: usize) -> Result<Conversation> {
        let Some((id, m, turn_index, step_index)) = self.current.get(index).cloned() else {
            return Err(Error::input(
                &self.path,
                format!("no recorded request {index}"),
            ));
        };
        let loc = Loc::Line {
            line: m.line,
            start: m.start,
            end: m.end,
        };
        let text = read_span(&mut self.file, &m).map_err(|e| Error::io(&self.path, &e))?;
        let span: SpanDoc = messages::parse_owned(&text).map_err(|e| {
            Error::input(
                &self.path,
                format!(
                    "changed while it was read (line {}: {})",
                    m.line,
                    json_error(&e)
                ),
            )
        })?;
        let mut conv =
            Conversation::new(request_id(&id, turn_index, step_index), self.info.clone());
        let p = build(&span, &loc, &mut conv);
        let code = span.status.as_ref().and_then(|s| s.code.clone());
        let status = match code {
            Some(Value::Number(n)) if n.as_u64() == Some(2) => SpanStatus::Error,
            Some(Value::Number(n)) if n.as_u64() == Some(1) => SpanStatus::Ok,
            Some(Value::String(s)) if s.ends_with("ERROR") => SpanStatus::Error,
            Some(Value::String(s)) if s.ends_with("OK") => SpanStatus::Ok,
            _ => SpanStatus::Unset,
        };
        let error = span
            .status
            .as_ref()
            .and_then(|s| s.message.clone())
            .filter(|m| !m.trim().is_empty())
            .or_else(|| {
                span.events
                    .iter()
                    .filter(|e| e.name == "exception")
                    .find_map(|e| attr_str(&e.attributes, "exception.message"))
            });
        let head = super::phoenix::SpanHead {
            conversation: id,
            turn: Some(m.trace.clone()),
            turn_index,
            step_index,
            span: m.span.clone(),
            status,
            error,
            started: iso_ns(m.start_ns),
        };
        conv.trace = Some(Box::new(p.into_step(head, loc)));
        Ok(conv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn any_values() {
        assert_eq!(any_value(&json!({"stringValue": "a"})), json!("a"));
        assert_eq!(any_value(&json!({"intValue": "42"})), json!(42));
        assert_eq!(
            any_value(&json!({"arrayValue": {"values": [{"stringValue": "tool_calls"}]}})),
            json!(["tool_calls"])
        );
        assert_eq!(
            any_value(
                &json!({"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": true}}]}})
            ),
            json!({"k": true})
        );
    }
}
