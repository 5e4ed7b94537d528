//! dispatch's trace store, `.dispatch-data/traces.db` (seed 000).
//!
//! `records(id, kind, name, spanId, parentSpanId, conversationId, turnId,
//! timestamp, durationMs, status, attributes, …)` holds one row per log
//! line, span open and span close; `bodies(recordId, body)` holds large
//! payloads. Per turn, the kernel opens a `turn` span and one `step` span per
//! provider call; the step's close carries `finishReason` (or status `error`
//! and `error.message`). The OpenAI-compatible provider opens a
//! `provider.request` span under the step whose body is the request exactly
//! as sent (`{model, messages, stream, tools}`); a retried step has several.
//! `reconcile.repair` spans report what the conversation store changed while
//! loading (`repairedCount`, `droppedEmptyMessages`, `strippedErrorChunks`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::types::ValueRef;
use serde_json::Value;

use super::{Backend, Event, Group, messages, normalise_finish, request_id};
use crate::error::{Error, Result};
use crate::model::{
    Conversation, CorruptRecord, Dialect, Format, Loc, SourceInfo, SpanStatus, TraceStep,
};
use crate::source::sqlite::{self, Snapshot};

pub static STORE: Store = Store {
    name: "dispatch traces (traces.db)",
    formats: &[Format::SqliteTrace],
    dialects: &[Dialect::Dispatch],
    probe: Probe::Sqlite {
        detect: |_, tables| Ok(has(tables, "records") && has(tables, "bodies")),
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

const COLUMNS: [&str; 10] = [
    "id",
    "kind",
    "name",
    "spanId",
    "parentSpanId",
    "conversationId",
    "turnId",
    "timestamp",
    "status",
    "attributes",
];

pub struct DispatchTraces {
    path: PathBuf,
    info: Arc<SourceInfo>,
    snap: Snapshot,
    groups: Vec<String>,
    /// The requests of the conversation last opened.
    current: Vec<Plan>,
}

pub fn open(path: &Path, snap: Snapshot) -> Result<DispatchTraces> {
    let cols = sqlite::columns(&snap.conn, "records").map_err(sqlite::error_of(path))?;
    let missing: Vec<&str> = COLUMNS
        .iter()
        .copied()
        .filter(|c| !cols.iter().any(|x| x == c))
        .collect();
    if !missing.is_empty() {
        return Err(Error::input(
            path,
            format!(
                "has `records` and `bodies` tables but is not a dispatch trace database (`records` lacks {})",
                missing
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let bcols = sqlite::columns(&snap.conn, "bodies").map_err(sqlite::error_of(path))?;
    if !["recordId", "body"]
        .iter()
        .all(|c| bcols.iter().any(|x| x == c))
    {
        return Err(Error::input(
            path,
            "has `records` and `bodies` tables but is not a dispatch trace database (`bodies` lacks `recordId` or `body`)",
        ));
    }
    let groups = {
        let mut st = snap
            .conn
            .prepare(
                "SELECT CAST(conversationId AS TEXT) FROM records \
                 WHERE conversationId IS NOT NULL AND name = 'provider.request' \
                 GROUP BY conversationId ORDER BY MIN(timestamp), conversationId",
            )
            .map_err(sqlite::error_of(path))?;
        let rows = st
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(sqlite::error_of(path))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sqlite::error_of(path))?
    };
    if groups.is_empty() {
        return Err(Error::not_history(
            path,
            "dispatch trace database records no provider requests (no `provider.request` spans)",
        ));
    }
    Ok(DispatchTraces {
        path: path.to_path_buf(),
        info: Arc::new(SourceInfo {
            path: path.to_path_buf(),
            format: Format::SqliteTrace,
            dialect: Dialect::Dispatch,
        }),
        snap,
        groups,
        current: Vec::new(),
    })
}

/// One row of `records`.
#[derive(Debug, Clone)]
struct Rec {
    rowid: i64,
    id: String,
    kind: String,
    name: Option<String>,
    span: Option<String>,
    parent: Option<String>,
    turn: Option<String>,
    ts: Option<i64>,
    status: Option<String>,
    attrs: Option<String>,
}

impl Rec {
    fn loc(&self) -> Loc {
        Loc::Row {
            table: "records".into(),
            key: Arc::from(self.id.as_str()),
            rowid: Some(self.rowid),
        }
    }

    fn attributes(&self) -> serde_json::Map<String, Value> {
        self.attrs
            .as_deref()
            .and_then(|a| messages::parse_owned::<Value>(a).ok())
            .and_then(|v| match v {
                Value::Object(o) => Some(o),
                _ => None,
            })
            .unwrap_or_default()
    }
}

#[derive(Debug, Default, Clone)]
struct Span {
    id: String,
    name: String,
    parent: Option<String>,
    turn: Option<String>,
    open: Option<Rec>,
    close: Option<Rec>,
    /// When the span first appears.
    first_ts: i64,
}

fn int(v: ValueRef<'_>) -> Option<i64> {
    match v {
        ValueRef::Integer(i) => Some(i),
        ValueRef::Real(f) => Some(f as i64),
        ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// Milliseconds since the epoch as an RFC 3339 UTC timestamp.
pub fn iso_ms(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl DispatchTraces {
    fn records(&self, conv: &str) -> rusqlite::Result<Vec<Rec>> {
        let mut st = self.snap.conn.prepare(
            "SELECT rowid, id, kind, name, spanId, parentSpanId, turnId, timestamp, status, attributes \
             FROM records WHERE conversationId = ?1 AND kind IN ('span-open', 'span-close') \
             ORDER BY timestamp, rowid",
        )?;
        let rows = st.query_map([conv], |r| {
            Ok(Rec {
                rowid: r.get(0)?,
                id: sqlite::text(r.get_ref(1)?).unwrap_or_default(),
                kind: sqlite::text(r.get_ref(2)?).unwrap_or_default(),
                name: sqlite::text(r.get_ref(3)?),
                span: sqlite::text(r.get_ref(4)?),
                parent: sqlite::text(r.get_ref(5)?),
                turn: sqlite::text(r.get_ref(6)?),
                ts: int(r.get_ref(7)?),
                status: sqlite::text(r.get_ref(8)?),
                attrs: sqlite::text(r.get_ref(9)?),
            })
        })?;
        rows.collect()
    }

    /// The body recorded for a record: (bodies rowid, body).
    fn body(&self, record: &str) -> rusqlite::Result<Option<(i64, String)>> {
        let mut st = self
            .snap
            .conn
            .prepare_cached("SELECT rowid, body FROM bodies WHERE recordId = ?1")?;
        let mut rows = st.query([record])?;
        match rows.next()? {
            Some(r) => Ok(Some((
                r.get(0)?,
                sqlite::text(r.get_ref(1)?).unwrap_or_default(),
            ))),
            None => Ok(None),
        }
    }
}

impl Backend for DispatchTraces {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn groups(&self) -> &[String] {
        &self.groups
    }

    fn group(&mut self, id: &str) -> Result<Group> {
        let path = self.path.clone();
        let recs = self.records(id).map_err(sqlite::error_of(&path))?;
        // Spans in order of first appearance.
        let mut spans: Vec<Span> = Vec::new();
        let mut by_id: HashMap<String, usize> = HashMap::new();
        let mut turns: Vec<Option<String>> = Vec::new();
        for r in recs {
            let Some(sid) = r.span.clone() else { continue };
            // Turns are numbered in order of appearance; records outside any
            // turn (a reconcile report with no turnId) are not a turn.
            if r.turn.is_some() && !turns.contains(&r.turn) {
                turns.push(r.turn.clone());
            }
            let i = *by_id.entry(sid.clone()).or_insert_with(|| {
                spans.push(Span {
                    id: sid,
                    first_ts: r.ts.unwrap_or(0),
                    ..Span::default()
                });
                spans.len() - 1
            });
            let s = &mut spans[i];
            if let Some(n) = &r.name {
                s.name = n.clone();
            }
            if s.parent.is_none() {
                s.parent = r.parent.clone();
            }
            if s.turn.is_none() {
                s.turn = r.turn.clone();
            }
            match r.kind.as_str() {
                "span-open" if s.open.is_none() => s.open = Some(r),
                "span-close" if s.close.is_none() => s.close = Some(r),
                _ => {}
            }
        }
        let mut plans: Vec<Plan> = Vec::new();
        let mut step_in_turn: HashMap<Option<String>, usize> = HashMap::new();
        for step in spans.iter().filter(|s| s.name == "step") {
            let calls: Vec<&Span> = spans
                .iter()
                .filter(|s| s.name == "provider.request" && s.parent.as_deref() == Some(&step.id))
                .collect();
            let Some(call) = calls.last() else { continue };
            // 0 for a step recorded outside any turn.
            let turn_index = turns
                .iter()
                .position(|t| *t == step.turn)
                .map_or(0, |i| i + 1);
            let counter = step_in_turn.entry(step.turn.clone()).or_insert(0);
            let step_index = *counter;
            *counter += 1;
            let call_rec = call.open.as_ref().or(call.close.as_ref());
            plans.push(Plan {
                group: id.to_string(),
                turn_index,
                step_index,
                started: call_rec.and_then(|r| r.ts).unwrap_or(step.first_ts),
                step: step.clone(),
                call: (*call).clone(),
                retries: calls.len() - 1,
            });
        }
        let mut events = Vec::new();
        for s in spans.iter().filter(|s| s.name == "reconcile.repair") {
            let Some(r) = s.close.as_ref().or(s.open.as_ref()) else {
                continue;
            };
            let ts = r.ts.unwrap_or(s.first_ts);
            events.push(Event {
                name: s.name.clone(),
                loc: r.loc(),
                turn: s.turn.clone(),
                before_request: plans.iter().filter(|p| p.started <= ts).count(),
                attributes: r
                    .attributes()
                    .iter()
                    .filter(|(k, _)| !k.starts_with("error.stack"))
                    .map(|(k, v)| (k.clone(), scalar(v)))
                    .collect(),
                timestamp: Some(iso_ms(ts)),
            });
        }
        let requests = plans.len();
        self.current = plans;
        Ok(Group {
            id: id.to_string(),
            requests,
            events,
        })
    }

    fn request(&mut self, index: usize) -> Result<Conversation> {
        let path = self.path.clone();
        let Some(plan) = self.current.get(index) else {
            return Err(Error::input(&path, format!("no recorded request {index}")));
        };
        let (step, call) = (&plan.step, &plan.call);
        let id = plan.group.as_str();
        let conv_id = request_id(id, plan.turn_index, plan.step_index);
        let mut conv = Conversation::new(conv_id, self.info.clone());
        // The body: on the span-open record (dispatch's logger), or the close.
        let mut found = None;
        for r in [&call.open, &call.close].into_iter().flatten() {
            if let Some(b) = self.body(&r.id).map_err(sqlite::error_of(&path))? {
                found = Some((r.id.clone(), b));
                break;
            }
        }
        let call_rec = call.open.as_ref().or(call.close.as_ref());
        let mut meta = messages::RequestMeta::default();
        let mut request_bytes = None;
        let request_loc = match found {
            Some((rid, (brow, body))) => {
                let loc = Loc::Row {
                    table: "bodies".into(),
                    key: Arc::from(rid.as_str()),
                    rowid: Some(brow),
                };
                request_bytes = Some(body.len() as u64);
                let (c, m) = messages::openai_request(&body, &loc, conv);
                conv = c;
                meta = m;
                loc
            }
            None => {
                let loc = call_rec.map(Rec::loc).unwrap_or_else(|| Loc::Row {
                    table: "records".into(),
                    key: Arc::from(call.id.as_str()),
                    rowid: None,
                });
                conv.corrupt.push(CorruptRecord {
                    loc: loc.clone(),
                    reason: "opens a `provider.request` span whose body was never recorded (no `bodies` row)".into(),
                    excerpt: String::new(),
                    torn_tail: false,
                    not_utf8: false,
                });
                loc
            }
        };
        let open_attrs = call.open.as_ref().map(Rec::attributes).unwrap_or_default();
        let call_close_attrs = call.close.as_ref().map(Rec::attributes).unwrap_or_default();
        let (status, end, attrs) = match &step.close {
            Some(c) => (
                match c.status.as_deref() {
                    Some("ok") => SpanStatus::Ok,
                    Some("error") => SpanStatus::Error,
                    _ => SpanStatus::Unset,
                },
                Some(c.loc()),
                c.attributes(),
            ),
            None => match &call.close {
                Some(c) if c.status.as_deref() == Some("error") => {
                    (SpanStatus::Error, Some(c.loc()), serde_json::Map::new())
                }
                _ => (SpanStatus::Open, None, serde_json::Map::new()),
            },
        };
        let raw_finish = attrs
            .get("finishReason")
            .filter(|v| !v.is_null())
            .map(scalar);
        let error = attrs
            .get("error.message")
            .or_else(|| call_close_attrs.get("error.message"))
            .or_else(|| call_close_attrs.get("response.error_body"))
            .map(scalar);
        conv.trace = Some(Box::new(TraceStep {
            conversation: id.to_string(),
            turn: step.turn.clone(),
            turn_index: plan.turn_index,
            step_index: plan.step_index,
            span: step.id.clone(),
            request: request_loc,
            end,
            finish_reason: raw_finish.as_deref().map(normalise_finish),
            raw_finish_reason: raw_finish,
            status,
            error,
            model: open_attrs.get("model").map(scalar).or(meta.model),
            tools: meta.tools,
            request_bytes,
            retries: plan.retries,
            output: Vec::new(),
            started: Some(iso_ms(plan.started)),
        }));
        Ok(conv)
    }
}

/// A recorded request of the open conversation, before its body is read.
#[derive(Debug, Clone)]
struct Plan {
    group: String,
    turn_index: usize,
    step_index: usize,
    started: i64,
    step: Span,
    /// The last `provider.request` of the step (earlier ones were retried).
    call: Span,
    retries: usize,
}

#[cfg(test)]
mod tests {
    #[test]
    fn iso_timestamps() {
        assert_eq!(super::iso_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::iso_ms(1_782_640_800_123), "2026-06-28T10:00:00.123Z");
    }
}
