//! Arize Phoenix's SQLite database (`$PHOENIX_WORKING_DIR/phoenix.db`).
//!
//! `spans.attributes` is nested JSON (OpenInference's dotted keys become
//! objects, numeric segments arrays): `llm.input_messages[i].message.*` is
//! the prompt as sent, `llm.output_messages` the answer, `llm.finish_reason`
//! (or the raw response in `output.value`) how it ended, `session.id` the
//! conversation. Every LLM span is one recorded request; a conversation is a
//! session (or, without one, a trace); its traces are turns, the LLM spans
//! of a trace its steps. Older databases name the columns `parent_span_id`,
//! `kind` and `status`; both spellings are read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::messages::{self, decoded, list, path as at};
use super::{Backend, Group, normalise_finish, request_id};
use crate::error::{Error, Result};
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
};

fn has(tables: &[String], t: &str) -> bool {
    tables.iter().any(|x| x == t)
}
use super::TraceSource;
use crate::format::store::{Opened, Probe, Store, Writing};

pub struct Phoenix {
    path: PathBuf,
    info: Arc<SourceInfo>,
    snap: Snapshot,
    cols: Cols,
    groups: Vec<String>,
    /// LLM spans: (group, spans rowid, trace id), in start order.
    index: Vec<(String, i64, String)>,
    /// Each group's spans: positions in `index`, in order.
    members: HashMap<String, Vec<usize>>,
    /// The requests of the conversation last opened: (group, spans rowid,
    /// trace id, turn, step).
    current: Vec<(String, i64, String, usize, usize)>,
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

fn is_llm(kind: Option<&str>, attrs: &Value) -> bool {
    kind == Some("LLM")
        || at(attrs, "openinference.span.kind").and_then(Value::as_str) == Some("LLM")
        || at(attrs, "llm.input_messages").is_some()
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
    let sql = format!(
        "SELECT s.id, s.{kind}, s.attributes, t.trace_id, {session_col} \
         FROM spans s JOIN traces t ON t.id = s.trace_rowid {session_join}",
        kind = quote_ident(cols.kind),
    );
    let mut index = Vec::new();
    {
        let mut st = conn.prepare(&sql).map_err(sqlite::error_of(path))?;
        let mut rows = st.query([]).map_err(sqlite::error_of(path))?;
        while let Some(r) = rows.next().map_err(sqlite::error_of(path))? {
            let rowid: i64 = r.get(0).map_err(sqlite::error_of(path))?;
            let kind = sqlite::text(r.get_ref(1).map_err(sqlite::error_of(path))?);
            let attrs = sqlite::text_ref(r.get_ref(2).map_err(sqlite::error_of(path))?)
                .and_then(|a| serde_json::from_str::<Value>(&a).ok())
                .map(nested)
                .unwrap_or(Value::Null);
            if !is_llm(kind.as_deref(), &attrs) {
                continue;
            }
            let trace =
                sqlite::text(r.get_ref(3).map_err(sqlite::error_of(path))?).unwrap_or_default();
            let session = sqlite::text(r.get_ref(4).map_err(sqlite::error_of(path))?);
            let group = at(&attrs, "session.id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or(session)
                .filter(|s| !s.is_empty())
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
    let mut members: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, (g, _, _)) in index.iter().enumerate() {
        members
            .entry(g.clone())
            .or_insert_with(|| {
                groups.push(g.clone());
                Vec::new()
            })
            .push(i);
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
                .unwrap_or_else(|| input.to_string().len()) as u64,
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
        let mut traces: Vec<&str> = Vec::new();
        let mut steps: HashMap<&str, usize> = HashMap::new();
        let mut plan = Vec::new();
        let at = self.members.get(id).map_or(&[][..], Vec::as_slice);
        for (_, rowid, trace) in at.iter().map(|&i| &self.index[i]) {
            if !traces.contains(&trace.as_str()) {
                traces.push(trace);
            }
            let turn_index = traces.iter().position(|t| t == trace).expect("pushed") + 1;
            let step = steps.entry(trace).or_insert(0);
            plan.push((id.to_string(), *rowid, trace.clone(), turn_index, *step));
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
        let path = self.path.clone();
        let Some((id, rowid, trace, turn_index, step_index)) = self.current.get(index).cloned()
        else {
            return Err(Error::input(&path, format!("no recorded request {index}")));
        };
        let row = self.row(rowid).map_err(sqlite::error_of(&path))?;
        let loc = Loc::Row {
            table: "spans".into(),
            key: Arc::from(row.span_id.as_str()),
            rowid: Some(rowid),
        };
        let mut conv =
            Conversation::new(request_id(&id, turn_index, step_index), self.info.clone());
        let attrs = match row.attrs.as_deref().map(serde_json::from_str::<Value>) {
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
            .and_then(|e| serde_json::from_str::<Value>(e).ok())
            .unwrap_or(Value::Null);
        let error = row
            .status_message
            .filter(|m| !m.trim().is_empty())
            .or_else(|| exception_message(&events));
        let head = SpanHead {
            conversation: id,
            turn: Some(trace),
            turn_index,
            step_index,
            span: row.span_id.clone(),
            status,
            error,
            started: row.start,
        };
        conv.trace = Some(Box::new(p.into_step(head, loc)));
        Ok(conv)
    }
}
