//! Arize Phoenix's SQLite database (`$PHOENIX_WORKING_DIR/phoenix.db`).
//!
//! `spans.attributes` is nested JSON (OpenInference's dotted keys become
//! objects, numeric segments arrays): `llm.input_messages[i].message.*` is
//! the prompt as sent, `llm.output_messages` the answer, `llm.finish_reason`
//! (or the raw response in `output.value`) how it ended. Every LLM span is
//! one recorded request; a conversation is a session (or, without one, a
//! trace); its traces are turns, the LLM spans of a trace its steps. A
//! trace's session is the one Phoenix filed it under (`project_sessions`,
//! made from the spans' `session.id` as they arrived, and what its UI
//! shows); in a database without that table, the span's `session.id`. Older databases name the columns `parent_span_id`,
//! `kind` and `status`; both spellings are read.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use super::messages::{self, decoded, list, path as at};
use super::{Backend, Group, normalise_finish, request_id};
use crate::error::{Error, Result};
use crate::format::records::record::lone_surrogates;
use crate::model::{Conversation, Dialect, Format, Loc, SourceInfo, SpanStatus, TraceStep};
use crate::source::sqlite::{self, Snapshot, quote_ident};

pub static STORE: Store = Store {
    name: "Arize Phoenix traces",
    formats: &[Format::SqliteTrace],
    dialects: &[Dialect::Phoenix],
    probe: Probe::Sqlite {
        detect: |_, tables| Ok(has(tables, "spans") && has(tables, "traces")),
        open: |path, snap| Ok(Opened::Trace(TraceSource::new(Box::new(open(path, snap)?)))),
    },
    writing: Writing::Never(super::NOT_REPAIRED),
    hooks: Hooks::NONE,
};

fn has(tables: &[String], t: &str) -> bool {
    tables.iter().any(|x| x == t)
}
use super::TraceSource;
use crate::format::store::{Hooks, Opened, Probe, Store, Writing};

pub struct Phoenix {
    path: PathBuf,
    info: Arc<SourceInfo>,
    snap: Snapshot,
    cols: Cols,
    groups: Vec<String>,
    /// LLM spans: (group, spans rowid, trace id), in start order.
    index: Vec<(String, i64, String)>,
    /// Each group's spans: positions in `index`, in order.
    members: Vec<Vec<usize>>,
    /// The requests of the conversation last opened: (group, spans rowid,
    /// trace id, turn, step).
    current: Vec<Plan>,
    /// Where each group is in `groups` (and `members`).
    group_at: HashMap<String, usize>,
    /// The group last opened, by its place in `groups`.
    open_group: usize,
    /// Requests read ahead, in the order a stream of the whole trace reads
    /// them, each being built on the thread pool.
    ahead: VecDeque<Ahead>,
    /// Attribute bytes of the requests in `ahead`.
    ahead_bytes: usize,
    /// The next request to read ahead: its group's place and plan, and
    /// its index in that plan.
    cursor: (usize, Vec<Plan>, usize),
}

struct Cols {
    kind: &'static str,
    status: &'static str,
    status_message: Option<&'static str>,
    events: Option<&'static str>,
    start: Option<&'static str>,
    sessions: bool,
}

fn not_phoenix(path: &Path, table: &str, missing: &[&str]) -> Error {
    Error::input(
        path,
        format!(
            "has `spans` and `traces` tables but is not an Arize Phoenix database (`{table}` lacks {})",
            missing
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
}

/// Attributes as nested JSON, with any flat dotted keys folded in.
fn nested(v: Value) -> Value {
    match v {
        Value::Object(o) if o.keys().any(|k| k.contains('.')) => {
            let pairs: Vec<(String, Value)> = o.into_iter().collect();
            messages::unflatten(pairs.iter().map(|(k, v)| (k.as_str(), v.clone())))
        }
        other => other,
    }
}

/// What the index needs of a span's attributes: whether they mark an LLM
/// span (`openinference.span.kind` is `LLM`, or `llm.input_messages` is
/// there) and its `session.id`. Read without building the attributes' tree:
/// each object on the way is split into its keys and raw values, and only
/// the values on the three paths are looked into. Attributes with flat
/// dotted keys at the top are folded first, as [`nested`] folds them.
#[derive(Default)]
struct IndexKeys {
    llm: bool,
    session: Option<String>,
}

/// An object's members, their values left as raw JSON text. A repeated
/// key keeps its last value, as serde_json's own map does.
type Members<'a> = HashMap<Key<'a>, &'a RawValue>;

/// A member's name: borrowed from the text unless it holds escapes.
#[derive(PartialEq, Eq, Hash)]
struct Key<'a>(Cow<'a, str>);

impl std::borrow::Borrow<str> for Key<'_> {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

fn members(json: &str) -> Option<Members<'_>> {
    serde_json::from_str(json).ok()
}

/// The value at a dotted path of an object's members.
fn member_at<'a>(object: &Members<'a>, dotted: &str) -> Option<&'a RawValue> {
    let (seg, rest) = match dotted.split_once('.') {
        Some((seg, rest)) => (seg, Some(rest)),
        None => (dotted, None),
    };
    let found = *object.get(seg)?;
    match rest {
        None => Some(found),
        Some(rest) => member_at(&members(found.get())?, rest),
    }
}

impl IndexKeys {
    fn of(attrs: &str) -> IndexKeys {
        let top = members(attrs);
        let flat = top
            .as_ref()
            .is_none_or(|top| top.keys().any(|k| k.0.contains('.')));
        // A key with a lone surrogate escape is refused by the split into
        // members, and read as U+FFFD by the tree (as by Phoenix's Python).
        let lone = || lone_surrogates(attrs.as_bytes()).next().is_some();
        let top = match top {
            Some(top) if !flat && !lone() => top,
            // Flat keys, or text the split refuses: read as the request's
            // own read does.
            _ => {
                let v = messages::parse_owned::<Value>(attrs).map_or(Value::Null, nested);
                return IndexKeys {
                    llm: at(&v, "openinference.span.kind").and_then(Value::as_str) == Some("LLM")
                        || at(&v, "llm.input_messages").is_some(),
                    session: at(&v, "session.id")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                };
            }
        };
        let string = |dotted: &str| {
            member_at(&top, dotted).and_then(|r| messages::parse_owned::<String>(r.get()).ok())
        };
        IndexKeys {
            llm: string("openinference.span.kind").as_deref() == Some("LLM")
                || member_at(&top, "llm.input_messages").is_some(),
            session: string("session.id"),
        }
    }
}

pub fn open(path: &Path, snap: Snapshot) -> Result<Phoenix> {
    let conn = &snap.conn;
    let cols = sqlite::columns(conn, "spans").map_err(sqlite::error_of(path))?;
    let has = |c: &str| cols.iter().any(|x| x == c);
    let pick = |a: &'static str, b: &'static str| {
        if has(a) {
            Some(a)
        } else if has(b) {
            Some(b)
        } else {
            None
        }
    };
    let mut missing = Vec::new();
    for c in ["id", "trace_rowid", "span_id", "name", "attributes"] {
        if !has(c) {
            missing.push(c);
        }
    }
    let kind = pick("span_kind", "kind");
    let status = pick("status_code", "status");
    if kind.is_none() {
        missing.push("span_kind");
    }
    if status.is_none() {
        missing.push("status_code");
    }
    if !missing.is_empty() {
        return Err(not_phoenix(path, "spans", &missing));
    }
    let tcols = sqlite::columns(conn, "traces").map_err(sqlite::error_of(path))?;
    let missing: Vec<&str> = ["id", "trace_id"]
        .into_iter()
        .filter(|c| !tcols.iter().any(|x| x == c))
        .collect();
    if !missing.is_empty() {
        return Err(not_phoenix(path, "traces", &missing));
    }
    let tables = sqlite::tables(conn).map_err(sqlite::error_of(path))?;
    let sessions = tcols.iter().any(|c| c == "project_session_rowid")
        && tables.iter().any(|t| t == "project_sessions")
        && sqlite::columns(conn, "project_sessions")
            .map_err(sqlite::error_of(path))?
            .iter()
            .any(|c| c == "session_id");
    let cols = Cols {
        kind: kind.expect("checked"),
        status: status.expect("checked"),
        status_message: pick("status_message", "status_message"),
        events: pick("events", "events"),
        start: pick("start_time", "start_time"),
        sessions,
    };
    let order = cols
        .start
        .map(|s| format!("s.{}, ", quote_ident(s)))
        .unwrap_or_default();
    let (session_col, session_join) = if cols.sessions {
        (
            "ps.session_id",
            "LEFT JOIN project_sessions ps ON ps.id = t.project_session_rowid",
        )
    } else {
        ("NULL", "")
    };
    // The spans in start order, from the keys alone: sorting the rows
    // with their attributes would make SQLite spill gigabytes of them to a
    // temporary file.
    let mut rank: HashMap<i64, usize> = HashMap::new();
    {
        let sql = format!("SELECT s.id FROM spans s ORDER BY {order}s.id");
        let mut st = conn.prepare(&sql).map_err(sqlite::error_of(path))?;
        let mut rows = st.query([]).map_err(sqlite::error_of(path))?;
        while let Some(r) = rows.next().map_err(sqlite::error_of(path))? {
            let rowid: i64 = r.get(0).map_err(sqlite::error_of(path))?;
            let n = rank.len();
            rank.entry(rowid).or_insert(n);
        }
    }
    // A span's attributes are read here only when its columns leave the
    // question open: whether it is an LLM span (its kind is not `LLM`), or
    // which session it is in (its trace has no Phoenix session). An LLM
    // span in a session, most of a store's bytes, is read once, when its
    // request is built.
    let kind = quote_ident(cols.kind);
    let attributes = if cols.sessions {
        format!(
            "CASE WHEN s.{kind} = 'LLM' AND trim(coalesce(ps.session_id, '')) != '' \
             THEN NULL ELSE s.attributes END"
        )
    } else {
        "s.attributes".to_string()
    };
    let sql = format!(
        "SELECT s.id, s.{kind}, {attributes}, t.trace_id, {session_col} \
         FROM spans s JOIN traces t ON t.id = s.trace_rowid {session_join}",
    );
    let mut index = Vec::new();
    {
        let mut st = conn.prepare(&sql).map_err(sqlite::error_of(path))?;
        let mut rows = st.query([]).map_err(sqlite::error_of(path))?;
        while let Some(r) = rows.next().map_err(sqlite::error_of(path))? {
            let rowid: i64 = r.get(0).map_err(sqlite::error_of(path))?;
            let kind = sqlite::text(r.get_ref(1).map_err(sqlite::error_of(path))?);
            let attrs = sqlite::text_ref(r.get_ref(2).map_err(sqlite::error_of(path))?);
            let keys = attrs.as_deref().map(IndexKeys::of).unwrap_or_default();
            if !(kind.as_deref() == Some("LLM") || keys.llm) {
                continue;
            }
            let trace =
                sqlite::text(r.get_ref(3).map_err(sqlite::error_of(path))?).unwrap_or_default();
            let session = sqlite::text(r.get_ref(4).map_err(sqlite::error_of(path))?);
            // Phoenix's own session of the trace (`project_sessions`, what
            // its UI groups the trace under), else the span's `session.id`
            // (a database without sessions), else the trace.
            let group = session
                .filter(|s| !s.trim().is_empty())
                .or(keys.session.filter(|s| !s.is_empty()))
                .unwrap_or_else(|| trace.clone());
            index.push((group, rowid, trace));
        }
    }
    if index.is_empty() {
        return Err(Error::not_history(
            path,
            "Phoenix database records no LLM spans",
        ));
    }
    // Every span the join gives is in `rank`, unless a writer slipped one
    // in between the two queries (they share no transaction here): last.
    index.sort_by_key(|(_, rowid, _)| (rank.get(rowid).copied().unwrap_or(usize::MAX), *rowid));
    let mut groups: Vec<String> = Vec::new();
    let mut group_at: HashMap<String, usize> = HashMap::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (i, (g, _, _)) in index.iter().enumerate() {
        let at = *group_at.entry(g.clone()).or_insert_with(|| {
            groups.push(g.clone());
            members.push(Vec::new());
            groups.len() - 1
        });
        members[at].push(i);
    }
    Ok(Phoenix {
        path: path.to_path_buf(),
        info: Arc::new(SourceInfo {
            path: path.to_path_buf(),
            format: Format::SqliteTrace,
            dialect: Dialect::Phoenix,
        }),
        snap,
        cols,
        groups,
        index,
        members,
        current: Vec::new(),
        group_at,
        open_group: 0,
        ahead: VecDeque::new(),
        ahead_bytes: 0,
        cursor: (0, Vec::new(), 0),
    })
}

struct Row {
    span_id: String,
    attrs: Option<String>,
    status: Option<String>,
    status_message: Option<String>,
    events: Option<String>,
    start: Option<String>,
}

impl Phoenix {
    fn row(&self, rowid: i64) -> rusqlite::Result<Row> {
        let opt = |c: Option<&str>| c.map(quote_ident).unwrap_or_else(|| "NULL".into());
        let sql = format!(
            "SELECT span_id, attributes, {}, {}, {}, {} FROM spans WHERE id = ?1",
            quote_ident(self.cols.status),
            opt(self.cols.status_message),
            opt(self.cols.events),
            opt(self.cols.start),
        );
        let mut st = self.snap.conn.prepare_cached(&sql)?;
        st.query_row([rowid], |r| {
            Ok(Row {
                span_id: sqlite::text(r.get_ref(0)?).unwrap_or_default(),
                attrs: sqlite::text(r.get_ref(1)?),
                status: sqlite::text(r.get_ref(2)?),
                status_message: sqlite::text(r.get_ref(3)?),
                events: sqlite::text(r.get_ref(4)?),
                start: sqlite::text(r.get_ref(5)?),
            })
        })
    }

    /// The plan of the group at `g` in `groups`: (group, spans rowid,
    /// trace id, turn, step) of each of its requests, in start order.
    fn plan(&self, g: usize) -> Vec<Plan> {
        let id = &self.groups[g];
        let mut traces: Vec<&str> = Vec::new();
        let mut steps: HashMap<&str, usize> = HashMap::new();
        let mut plan = Vec::new();
        for (_, rowid, trace) in self.members[g].iter().map(|&i| &self.index[i]) {
            if !traces.contains(&trace.as_str()) {
                traces.push(trace);
            }
            let turn_index = traces.iter().position(|t| t == trace).expect("pushed") + 1;
            let step = steps.entry(trace).or_insert(0);
            plan.push((id.clone(), *rowid, trace.clone(), turn_index, *step));
            *step += 1;
        }
        plan
    }

    /// Read requests ahead of `want` (a group's place, a request index),
    /// which comes first, until [`AHEAD_BYTES`] of attributes are in
    /// flight: this thread reads the rows, the thread pool builds them
    /// (parsing a prompt is most of a Phoenix read) while the caller checks
    /// the ones built. The order is the order a stream of the whole trace
    /// asks for them (group after group); a request asked out of that order
    /// drops what was read ahead and starts again from it.
    fn read_ahead(&mut self, want: (usize, usize)) -> Result<()> {
        while self.ahead.front().is_some_and(|a| a.at < want) {
            let gone = self.ahead.pop_front().expect("front");
            self.ahead_bytes -= gone.bytes;
        }
        if self.ahead.front().is_none_or(|a| a.at != want) {
            self.ahead.clear();
            self.ahead_bytes = 0;
            self.cursor = (want.0, self.plan(want.0), want.1);
        }
        while self.ahead.is_empty() || self.ahead_bytes < AHEAD_BYTES {
            let (g, i) = (self.cursor.0, self.cursor.2);
            let Some(entry) = self.cursor.1.get(i).cloned() else {
                if g + 1 >= self.groups.len() {
                    break;
                }
                self.cursor = (g + 1, self.plan(g + 1), 0);
                continue;
            };
            let row = match self.row(entry.1) {
                Ok(row) => row,
                Err(e) if self.ahead.is_empty() => {
                    return Err(sqlite::error_of(&self.path)(e));
                }
                // That request's own read reports it, when it is asked for.
                Err(_) => break,
            };
            self.cursor.2 += 1;
            let bytes = row.attrs.as_ref().map_or(0, String::len);
            let (tx, rx) = std::sync::mpsc::channel();
            let info = self.info.clone();
            rayon::spawn(move || {
                // A panic is carried to the reader, not left to abort.
                let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    build(&info, &entry, row)
                }));
                let _ = tx.send(built);
            });
            self.ahead_bytes += bytes;
            self.ahead.push_back(Ahead {
                at: (g, i),
                bytes,
                built: rx,
            });
        }
        Ok(())
    }
}

/// Wait for a build `read_ahead` gave the thread pool. The caller is
/// often one of the pool's own threads (a directory's files are read on
/// them), and a build spawned there waits in that thread's own queue: a
/// blocking wait would hold a thread the build needs, and with every
/// thread of the pool waiting so (two Phoenix databases in a directory
/// on two cores, or one on one), nothing ran and lint never ended. So
/// the waiting thread runs the pool's pending work itself; once the pool
/// has none for it, its builds are running on other threads, which never
/// wait, and a blocking wait ends.
fn wait_built<T>(
    built: &std::sync::mpsc::Receiver<T>,
) -> std::result::Result<T, std::sync::mpsc::RecvError> {
    loop {
        match built.try_recv() {
            Ok(v) => return Ok(v),
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                return Err(std::sync::mpsc::RecvError);
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => {}
        }
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            return built.recv();
        }
    }
}

/// A group's request: (group, spans rowid, trace id, turn, step).
type Plan = (String, i64, String, usize, usize);

/// A request read ahead: where it is in the stream, its attributes' size,
/// and where its build arrives.
struct Ahead {
    at: (usize, usize),
    bytes: usize,
    built: std::sync::mpsc::Receiver<std::thread::Result<Conversation>>,
}

/// How many bytes of span attributes are read ahead of the request the
/// caller asked for.
const AHEAD_BYTES: usize = 8 << 20;

/// One recorded request, built from its span's row.
fn build(
    info: &Arc<SourceInfo>,
    (id, rowid, trace, turn_index, step_index): &Plan,
    row: Row,
) -> Conversation {
    let loc = Loc::Row {
        table: "spans".into(),
        key: Arc::from(row.span_id.as_str()),
        rowid: Some(*rowid),
    };
    let mut conv = Conversation::new(request_id(id, *turn_index, *step_index), info.clone());
    let attrs = match row.attrs.as_deref().map(messages::parse_owned::<Value>) {
        Some(Ok(v)) => nested(v),
        Some(Err(e)) => {
            conv.corrupt.push(messages::corrupt(
                &loc,
                format!(
                    "has `attributes` that {}",
                    crate::format::records::record::json_error(&e)
                ),
                row.attrs.as_deref().unwrap_or_default(),
            ));
            Value::Null
        }
        None => Value::Null,
    };
    let p = from_openinference(&attrs, &loc, &mut conv);
    let status = match row.status.as_deref() {
        Some("OK") => SpanStatus::Ok,
        Some("ERROR") => SpanStatus::Error,
        _ => SpanStatus::Unset,
    };
    let events = row
        .events
        .as_deref()
        .and_then(|e| messages::parse_owned::<Value>(e).ok())
        .unwrap_or(Value::Null);
    let error = row
        .status_message
        .filter(|m| !m.trim().is_empty())
        .or_else(|| exception_message(&events));
    let head = SpanHead {
        conversation: id.clone(),
        turn: Some(trace.clone()),
        turn_index: *turn_index,
        step_index: *step_index,
        span: row.span_id,
        status,
        error,
        started: row.start,
    };
    conv.trace = Some(Box::new(p.into_step(head, loc)));
    conv
}

/// The message of an `exception` event: nested or flat attributes.
pub fn exception_message(events: &Value) -> Option<String> {
    list(events).into_iter().find_map(|e| {
        if e.get("name").and_then(Value::as_str) != Some("exception") {
            return None;
        }
        let a = e.get("attributes")?;
        a.get("exception.message")
            .or_else(|| at(a, "exception.message"))
            .and_then(Value::as_str)
            .map(str::to_string)
    })
}

/// Fill a request conversation from OpenInference attributes (nested JSON):
/// prompt, answer, finish reason, model, tools. Shared with OTLP.
pub fn from_openinference(attrs: &Value, loc: &Loc, conv: &mut Conversation) -> Partial {
    let mut p = Partial::default();
    if let Some(input) = at(attrs, "llm.input_messages") {
        let (msgs, bad) = messages::openinference(input, loc);
        conv.messages = msgs;
        conv.corrupt.extend(bad);
        p.bytes = Some(
            at(attrs, "input.value")
                .and_then(Value::as_str)
                .map(str::len)
                .unwrap_or_else(|| json_len(input)) as u64,
        );
    } else if let Some(raw) = at(attrs, "input.value").and_then(Value::as_str) {
        // No structured messages: the raw request, when it is a chat body.
        let taken = std::mem::replace(
            conv,
            Conversation::new(conv.id.clone(), conv.source.clone()),
        );
        let (c, meta) = messages::openai_request(raw, loc, taken);
        *conv = c;
        p.tools = meta.tools;
        p.model = meta.model;
        p.bytes = Some(raw.len() as u64);
    } else {
        conv.corrupt.push(messages::corrupt(
            loc,
            "is an LLM span that records no prompt (no `llm.input_messages`, no `input.value`)"
                .into(),
            "",
        ));
    }
    if let Some(out) = at(attrs, "llm.output_messages") {
        let (msgs, bad) = messages::openinference(out, loc);
        p.output = msgs;
        conv.corrupt.extend(bad);
    }
    p.finish = at(attrs, "llm.finish_reason")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| {
            at(attrs, "output.value")
                .and_then(decoded)
                .and_then(|v| messages::response_finish(&v))
        });
    if p.model.is_none() {
        p.model = at(attrs, "llm.model_name")
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    if p.tools.is_none() {
        p.tools = at(attrs, "llm.tools").map(|t| list(t).len());
    }
    p
}

/// The length of a value written as compact JSON, without writing it.
fn json_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    // Writing a `Value` fails only if the writer does; this one cannot.
    let _ = serde_json::to_writer(&mut n, v);
    n.0
}

/// What the OpenInference attributes say besides the prompt.
#[derive(Debug, Default)]
pub struct Partial {
    pub finish: Option<String>,
    pub model: Option<String>,
    pub tools: Option<usize>,
    pub bytes: Option<u64>,
    pub output: Vec<crate::model::Message>,
}

/// What a span says of its request besides its OpenInference attributes.
pub struct SpanHead {
    pub conversation: String,
    pub turn: Option<String>,
    pub turn_index: usize,
    pub step_index: usize,
    pub span: String,
    pub status: SpanStatus,
    pub error: Option<String>,
    pub started: Option<String>,
}

impl Partial {
    /// The step an OpenInference span records (Phoenix and OTLP alike): one
    /// request, answered in the same span, never retried.
    pub fn into_step(self, head: SpanHead, loc: Loc) -> TraceStep {
        TraceStep {
            conversation: head.conversation,
            turn: head.turn,
            turn_index: head.turn_index,
            step_index: head.step_index,
            span: head.span,
            request: loc.clone(),
            end: Some(loc),
            finish_reason: self.finish.as_deref().map(normalise_finish),
            raw_finish_reason: self.finish,
            status: head.status,
            error: head.error,
            model: self.model,
            tools: self.tools,
            request_bytes: self.bytes,
            retries: 0,
            output: self.output,
            started: head.started,
        }
    }
}

impl Backend for Phoenix {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn groups(&self) -> &[String] {
        &self.groups
    }

    fn group(&mut self, id: &str) -> Result<Group> {
        self.open_group = self.group_at.get(id).copied().unwrap_or(usize::MAX);
        self.current = if self.open_group == usize::MAX {
            Vec::new()
        } else {
            self.plan(self.open_group)
        };
        let requests = self.current.len();
        Ok(Group {
            id: id.to_string(),
            requests,
            events: Vec::new(),
        })
    }

    fn request(&mut self, index: usize) -> Result<Conversation> {
        if index >= self.current.len() {
            return Err(Error::input(
                &self.path,
                format!("no recorded request {index}"),
            ));
        }
        self.read_ahead((self.open_group, index))?;
        let next = self.ahead.pop_front().expect("read ahead");
        self.ahead_bytes -= next.bytes;
        match wait_built(&next.built) {
            Ok(Ok(conv)) => Ok(conv),
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => Err(Error::input(
                &self.path,
                format!("request {index} was not built"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index's reading, as the whole tree answers it.
    fn from_tree(attrs: &str) -> (bool, Option<String>) {
        let v = messages::parse_owned::<Value>(attrs).map_or(Value::Null, nested);
        (
            at(&v, "openinference.span.kind").and_then(Value::as_str) == Some("LLM")
                || at(&v, "llm.input_messages").is_some(),
            at(&v, "session.id")
                .and_then(Value::as_str)
                .map(str::to_string),
        )
    }

    #[test]
    fn the_index_reads_attributes_as_their_tree_does() {
        for attrs in [
            r#"{"llm":{"input_messages":[{"message":{"role":"user","content":"q"}}]},"session":{"id":"s1"}}"#,
            r#"{"openinference":{"span":{"kind":"LLM"}},"session":{"id":"s\u0031"}}"#,
            r#"{"openinference":{"span":{"kind":"CHAIN"}},"session":{"id":7}}"#,
            r#"{"llm":{"input_messages":null}}"#,
            r#"{"llm":{"input_messages.0.message.role":"user"}}"#,
            r#"{"session":{"id":"a"},"session":{"id":"b"}}"#,
            r#"{"session":{"id":"a"},"session":{"other":"b"}}"#,
            r#"{"llm.input_messages.0.message.role":"user","session.id":"flat"}"#,
            r#"{"session.id":"a","session":{"id":"b"}}"#,
            r#"{"session":{"id":"b"},"session.id":"a"}"#,
            r#"{"se\u0073sion":{"id":"escaped key"}}"#,
            r#"[{"session":{"id":"x"}}]"#,
            r#"{"session":{"id":"torn"#,
            r#"{"session":{"id":"cut \ud83d"}}"#,
            r#"{"k\udc00":1,"session":{"id":"s"}}"#,
            r#"{"llm":{"input_messages":[{"message":{"content":"\ud800"}}]},"session":{"id":"s"}}"#,
            r#"{"session":{"id":"x"}} trailing"#,
            r#""text""#,
            "",
        ] {
            let keys = IndexKeys::of(attrs);
            assert_eq!((keys.llm, keys.session), from_tree(attrs), "{attrs}");
        }
    }
}
