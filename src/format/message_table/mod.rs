//! Message tables: one row per message, ordered by an index column, grouped
//! into conversations by another (gbrain's `subagent_messages`, seed 003, or
//! any table named with a mapping). Read from SQLite files here and from
//! PostgreSQL in `postgres.rs`; both backends hand rows to the same code.
//!
//! gbrain is recognised from its schema, with no flag:
//!
//! ```sql
//! subagent_messages (id, job_id, message_idx, role, content_blocks JSONB, …,
//!                    UNIQUE (job_id, message_idx))
//! subagent_tool_executions (id, job_id, message_idx, tool_use_id, tool_name,
//!                    status pending|complete|failed, output JSONB, error, ordinal, …)
//! ```
//!
//! One job = one conversation. The rows stream in (conversation, index) order
//! from the reader thread; the executions of the same job stream in the same
//! order beside them (a merge of two ordered cursors), so memory holds one
//! conversation and its executions, never the table.

pub mod profile;

use crate::source::pipeline::Dealer;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::store::{Hooks, Opened, Probe, Store, Writing};

use crate::error::{Error, Result};
use crate::model::{
    Conversation, CorruptRecord, Dialect, ExecStatus, Execution, Executions, Format, Loc, Message,
    MessageTable, PartKind, Role, Slot, SourceInfo,
};
use crate::source::sqlite::{self, Snapshot, quote_ident};

pub const GBRAIN_MESSAGES: &str = "subagent_messages";
pub const GBRAIN_EXECUTIONS: &str = "subagent_tool_executions";

const MESSAGE_COLUMNS: [&str; 5] = ["id", "job_id", "message_idx", "role", "content_blocks"];
const EXECUTION_COLUMNS: [&str; 8] = [
    "id",
    "job_id",
    "message_idx",
    "tool_use_id",
    "tool_name",
    "status",
    "output",
    "error",
];

pub use crate::source::Mapping;

pub mod postgres;
pub mod writer;

pub static STORE: Store = Store {
    name: "gbrain message tables",
    formats: &[Format::SqliteTable, Format::PostgresTable],
    dialects: &[Dialect::Gbrain, Dialect::Table],
    probe: Probe::Sqlite {
        detect: |conn, _| match sqlite_layout(conn, None) {
            Ok(_) => Ok(true),
            Err(LayoutError::NotHistory(_)) => Ok(false),
            Err(LayoutError::Bad(cause) | LayoutError::Db(cause)) => Err(cause),
        },
        open: |path, snap| {
            let layout =
                sqlite_layout(&snap.conn, None).map_err(|e| Error::input(path, e.cause()))?;
            Ok(Opened::History(Box::new(open_sqlite(path, snap, layout)?)))
        },
    },
    writing: Writing::Copy {
        supports: writer::supports,
        new: writer::new,
    },
    hooks: Hooks::NONE,
};

/// Open the table a mapping names (no other store is tried).
pub fn open_mapped(path: &Path, snap: Snapshot, mapping: &Mapping) -> Result<Opened> {
    let layout = sqlite_layout(&snap.conn, Some(mapping)).map_err(|e| match e {
        LayoutError::NotHistory(why) => Error::not_history(path, format!("SQLite database {why}")),
        LayoutError::Bad(cause) | LayoutError::Db(cause) => Error::input(path, cause),
    })?;
    Ok(Opened::History(Box::new(open_sqlite(path, snap, layout)?)))
}

/// Why a database that no store recognised is not a history: why it is
/// not a message table (the store most databases are meant to be), and
/// which stores were tried.
pub fn why_not(conn: &rusqlite::Connection, tried: &[&str]) -> String {
    let why = match sqlite_layout(conn, None) {
        Err(e) => e.cause(),
        Ok(_) => "holds no conversation history chatfsck recognises".to_string(),
    };
    let tried = format!("tried: {}", tried.join(", "));
    match why.split_once("; name a message table") {
        Some((what, hint)) => {
            format!("SQLite database {what}; {tried}; name a message table{hint}")
        }
        None => format!("SQLite database {why}; {tried}"),
    }
}

/// Where the messages (and executions) are, resolved against the catalog.
#[derive(Debug, Clone)]
pub struct Layout {
    /// `gbrain`, or `table` for a mapped table.
    pub dialect: Dialect,
    /// The table's schema (PostgreSQL), for qualified names.
    pub schema: Option<String>,
    pub table: String,
    pub conversation: String,
    pub index: String,
    pub role: String,
    pub content: String,
    /// A column that identifies a row (gbrain's `id`); SQLite falls back to
    /// `rowid`.
    pub id: Option<String>,
    /// The first index the app writes, when it is known (gbrain: 0).
    pub first_index: Option<i64>,
    /// The execution table and whether it has `ordinal`.
    pub executions: Option<(String, bool)>,
    /// Whether content may be plain text (mapped tables); gbrain's
    /// `content_blocks` must be JSON.
    pub text_content: bool,
    /// Column types as the catalog names them (PostgreSQL), for casts in
    /// emitted SQL: (conversation, index, role, content).
    pub types: Option<[String; 4]>,
}

impl Layout {
    /// The table name, schema-qualified and quoted.
    pub fn qualified(&self, table: &str) -> String {
        match &self.schema {
            Some(s) => format!("{}.{}", quote_ident(s), quote_ident(table)),
            None => quote_ident(table),
        }
    }
}

impl LayoutError {
    fn cause(self) -> String {
        match self {
            LayoutError::NotHistory(c) | LayoutError::Bad(c) | LayoutError::Db(c) => c,
        }
    }
}

/// Why a layout could not be resolved.
pub enum LayoutError {
    /// The database holds no message table chatfsck recognises.
    NotHistory(String),
    /// The mapping names something that is not there, or of the wrong type.
    Bad(String),
    /// The catalog could not be read.
    Db(String),
}

/// What the layout resolution needs to know about a database.
pub trait Catalog {
    /// (schema, [(column, type)]) of a table, or `None` when there is none.
    #[allow(clippy::type_complexity)]
    fn columns(
        &mut self,
        table: &str,
    ) -> std::result::Result<Option<(Option<String>, Vec<(String, String)>)>, String>;
    /// Names of the tables, for error messages.
    fn tables(&mut self) -> std::result::Result<Vec<String>, String>;
    /// Whether a column type holds integers.
    fn is_integer(&self, ty: &str) -> bool;
}

fn list(names: &[String], max: usize) -> String {
    let mut v: Vec<String> = names.iter().take(max).map(|n| format!("`{n}`")).collect();
    if names.len() > max {
        v.push(format!("… {} more", names.len() - max));
    }
    v.join(", ")
}

/// Resolve where the messages are: the mapping when one is given, else
/// gbrain's schema when it is there.
pub fn resolve(
    cat: &mut dyn Catalog,
    mapping: Option<&Mapping>,
) -> std::result::Result<Layout, LayoutError> {
    let db = LayoutError::Db;
    if let Some(m) = mapping {
        let Some((schema, cols)) = cat.columns(&m.table).map_err(db)? else {
            let tables = cat.tables().map_err(LayoutError::Db)?;
            let known = if tables.is_empty() {
                "the database has no tables".to_string()
            } else {
                format!("tables: {}", list(&tables, 20))
            };
            return Err(LayoutError::Bad(format!(
                "no table `{}` ({known})",
                m.table
            )));
        };
        let type_of = |c: &str| cols.iter().find(|(n, _)| n == c).map(|(_, t)| t.clone());
        let names: Vec<String> = cols.iter().map(|(n, _)| n.clone()).collect();
        for (flag, col) in [
            ("--conversation-column", &m.conversation),
            ("--index-column", &m.index),
            ("--role-column", &m.role),
            ("--content-column", &m.content),
        ] {
            if type_of(col).is_none() {
                return Err(LayoutError::Bad(format!(
                    "table `{}` has no column `{col}` (named by {flag}; columns: {})",
                    m.table,
                    list(&names, 30)
                )));
            }
        }
        let index_type = type_of(&m.index).unwrap_or_default();
        if !cat.is_integer(&index_type) {
            let shown = if index_type.is_empty() {
                "has no declared type".to_string()
            } else {
                format!("is `{index_type}`")
            };
            return Err(LayoutError::Bad(format!(
                "index column `{}` of `{}` {shown}, not an integer type: messages cannot be ordered by it",
                m.index, m.table
            )));
        }
        let id = ["id"]
            .into_iter()
            .find(|c| type_of(c).is_some_and(|t| cat.is_integer(&t)))
            .map(String::from);
        return Ok(Layout {
            dialect: Dialect::Table,
            schema,
            table: m.table.clone(),
            conversation: m.conversation.clone(),
            index: m.index.clone(),
            role: m.role.clone(),
            content: m.content.clone(),
            id,
            first_index: None,
            executions: None,
            text_content: true,
            types: Some([
                type_of(&m.conversation).unwrap_or_default(),
                index_type,
                type_of(&m.role).unwrap_or_default(),
                type_of(&m.content).unwrap_or_default(),
            ]),
        });
    }
    let not_history = |cat: &mut dyn Catalog, why: String| -> LayoutError {
        let tables = cat.tables().unwrap_or_default();
        let known = if tables.is_empty() {
            "no tables".to_string()
        } else {
            format!("tables: {}", list(&tables, 20))
        };
        LayoutError::NotHistory(format!(
            "holds no conversation history chatfsck recognises ({why}; {known}); name a message table with --table and the column flags"
        ))
    };
    let Some((schema, cols)) = cat.columns(GBRAIN_MESSAGES).map_err(db)? else {
        return Err(not_history(cat, format!("no `{GBRAIN_MESSAGES}` table")));
    };
    let has = |cols: &[(String, String)], c: &str| cols.iter().any(|(n, _)| n == c);
    let missing: Vec<&str> = MESSAGE_COLUMNS
        .iter()
        .copied()
        .filter(|c| !has(&cols, c))
        .collect();
    if !missing.is_empty() {
        return Err(not_history(
            cat,
            format!(
                "`{GBRAIN_MESSAGES}` lacks {}",
                missing
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let type_of = |c: &str| {
        cols.iter()
            .find(|(n, _)| n == c)
            .map(|(_, t)| t.clone())
            .unwrap_or_default()
    };
    let executions = match cat.columns(GBRAIN_EXECUTIONS).map_err(db)? {
        Some((_, ecols)) if EXECUTION_COLUMNS.iter().all(|c| has(&ecols, c)) => {
            Some((GBRAIN_EXECUTIONS.to_string(), has(&ecols, "ordinal")))
        }
        _ => None,
    };
    Ok(Layout {
        dialect: Dialect::Gbrain,
        schema,
        table: GBRAIN_MESSAGES.into(),
        conversation: "job_id".into(),
        index: "message_idx".into(),
        role: "role".into(),
        content: "content_blocks".into(),
        id: Some("id".into()),
        first_index: Some(0),
        executions,
        text_content: false,
        types: Some([
            type_of("job_id"),
            type_of("message_idx"),
            type_of("role"),
            type_of("content_blocks"),
        ]),
    })
}

/// A message row as read, before parsing.
#[derive(Debug)]
pub struct RawMsg {
    pub rowid: Option<i64>,
    /// The conversation column's value, as text.
    pub conv: String,
    /// The index, or the stored value's text when it is not an integer.
    pub index: std::result::Result<i64, String>,
    pub role: Option<String>,
    pub content: Option<String>,
}

/// An execution row as read.
#[derive(Debug)]
pub struct RawExec {
    pub id: Option<i64>,
    pub conv: String,
    pub message_index: Option<i64>,
    pub ordinal: Option<i64>,
    pub tool_use_id: String,
    pub tool_name: String,
    pub status: String,
    pub output: Option<String>,
    pub error: Option<String>,
}

pub struct RawConv {
    pub id: String,
    pub msgs: Vec<RawMsg>,
    pub execs: Vec<RawExec>,
}

impl crate::source::pipeline::Weigh for RawConv {
    fn weight(&self) -> usize {
        let text = |t: &Option<String>| t.as_ref().map_or(0, String::len);
        let msgs: usize = self.msgs.iter().map(|m| text(&m.content)).sum();
        let execs: usize = self
            .execs
            .iter()
            .map(|e| text(&e.output) + text(&e.error))
            .sum();
        msgs + execs
    }
}

/// A backend's two ordered cursors.
pub trait RowReader {
    fn next_message(&mut self) -> std::result::Result<Option<RawMsg>, String>;
    /// `Ok(None)` at the end, or at once when the store keeps no executions.
    fn next_execution(&mut self) -> std::result::Result<Option<RawExec>, String>;
}

/// The order both cursors are sorted in (`ORDER BY` the key column, not its
/// text): integers by value and before any text, texts byte by byte. This is
/// how SQLite orders a column of INTEGER affinity such as gbrain's `job_id`
/// (PostgreSQL's BIGINT holds only integers), so the two cursors merge even
/// when a store holds text keys.
fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<i64>(), b.parse::<i64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

/// Group the rows into conversations, attach each job's executions, and
/// send them on. Stops at the first error (sent as the last item).
pub fn pump(reader: &mut dyn RowReader, target: &Path, tx: &Dealer<RawConv>) {
    let fail = |cause: String| Err(Error::input(target, cause));
    let mut current: Option<RawConv> = None;
    let mut held: Option<RawExec> = None;
    loop {
        let next = match reader.next_message() {
            Ok(m) => m,
            Err(e) => {
                let _ = tx.send(fail(e));
                return;
            }
        };
        let boundary = match (&current, &next) {
            (Some(c), Some(m)) => c.id != m.conv,
            (Some(_), None) => true,
            _ => false,
        };
        if boundary {
            let mut done = current.take().expect("boundary needs a conversation");
            // A store without executions answers `Ok(None)` at once.
            loop {
                let e = match held.take() {
                    Some(e) => e,
                    None => match reader.next_execution() {
                        Ok(Some(e)) => e,
                        Ok(None) => break,
                        Err(e) => {
                            let _ = tx.send(fail(e));
                            return;
                        }
                    },
                };
                match key_order(&e.conv, &done.id) {
                    std::cmp::Ordering::Less => continue,
                    std::cmp::Ordering::Equal => done.execs.push(e),
                    std::cmp::Ordering::Greater => {
                        held = Some(e);
                        break;
                    }
                }
            }
            if tx.send(Ok(done)).is_err() {
                return;
            }
        }
        match next {
            None => return,
            Some(m) => current
                .get_or_insert_with(|| RawConv {
                    id: m.conv.clone(),
                    msgs: Vec::new(),
                    execs: Vec::new(),
                })
                .msgs
                .push(m),
        }
    }
}

/// Build the conversation of one job from its rows.
pub fn build(raw: RawConv, layout: &Layout, info: &Arc<SourceInfo>) -> Conversation {
    let mut conv = Conversation::new(raw.id.clone(), info.clone());
    let table_name: Arc<str> = Arc::from(layout.table.as_str());
    let view = MessageTable {
        table: table_name.clone(),
        conversation_column: Arc::from(layout.conversation.as_str()),
        index_column: Arc::from(layout.index.as_str()),
        conversation_key: raw.id.clone(),
        first_index: layout.first_index,
        executions: layout.executions.as_ref().map(|(t, _)| {
            let et: Arc<str> = Arc::from(t.as_str());
            Executions {
                table: et.clone(),
                rows: raw
                    .execs
                    .into_iter()
                    .map(|e| Execution {
                        loc: Loc::Row {
                            table: et.clone().into(),
                            key: Arc::from(format!(
                                "{}={}, tool_use_id={}",
                                layout.conversation, e.conv, e.tool_use_id
                            )),
                            rowid: e.id,
                        },
                        id: e.id,
                        message_index: e.message_index.unwrap_or(-1),
                        ordinal: e.ordinal,
                        tool_use_id: e.tool_use_id,
                        tool_name: e.tool_name,
                        status: ExecStatus::parse(&e.status),
                        output: e.output,
                        error: e.error,
                    })
                    .collect(),
            }
        }),
    };
    for row in raw.msgs {
        let index = match &row.index {
            Ok(i) => *i,
            Err(text) => {
                let loc = Loc::Row {
                    table: table_name.clone().into(),
                    key: Arc::from(format!(
                        "{}={}, {}={text}",
                        layout.conversation, raw.id, layout.index
                    )),
                    rowid: row.rowid,
                };
                let reason = format!("has `{}` = `{text}`, not an integer", layout.index);
                let raw = row.content.as_deref().unwrap_or_default().as_bytes();
                conv.corrupt
                    .push(CorruptRecord::new(loc, reason, raw, false));
                continue;
            }
        };
        let loc = view.loc(index, row.rowid);
        let corrupt = |conv: &mut Conversation, reason: String| {
            let raw = row.content.as_deref().unwrap_or_default().as_bytes();
            conv.corrupt
                .push(CorruptRecord::new(loc.clone(), reason, raw, false))
        };
        let role_text = row.role.as_deref().unwrap_or("NULL");
        let Some(role) = Role::parse(role_text) else {
            corrupt(&mut conv, format!("has unknown role `{role_text}`"));
            continue;
        };
        let mut msg = Message::new(role, loc.clone());
        msg.stored_index = Some(index);
        if let Some(text) = row.content.as_deref() {
            let looks_json = matches!(
                text.trim_start().as_bytes().first(),
                Some(b'[' | b'"' | b'n')
            );
            // A failed parse pushes no part, so it can parse into `msg`.
            let parsed = if looks_json {
                super::records::record::parse_content_json(text, &mut msg, &loc)
            } else {
                Err(String::new())
            };
            match parsed {
                Ok(lone) => conv.note_lone_surrogates(&loc, lone),
                // A text column holds plain text, JSON-looking or not.
                Err(_) if layout.text_content => {
                    msg.push_at(
                        PartKind::Text {
                            text: text.to_string().into(),
                        },
                        loc.clone(),
                        Slot::Whole("content"),
                    );
                }
                Err(reason) => {
                    let reason = if looks_json {
                        reason
                    } else {
                        match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                            Ok(_) => "is neither a list of content blocks nor a string".to_string(),
                            Err(e) => super::records::record::json_error(&e),
                        }
                    };
                    corrupt(&mut conv, format!("has `{}` that {reason}", layout.content));
                    continue;
                }
            }
        }
        conv.messages.push(msg);
    }
    conv.table = Some(view);
    conv
}

/// Start the reader (`read`, sending raw conversations) and the parser of
/// a message table.
pub fn start(
    target: &Path,
    info: Arc<SourceInfo>,
    layout: Layout,
    read: impl FnOnce(Dealer<RawConv>) + Send + 'static,
) -> Result<crate::source::pipeline::Pipeline> {
    let build_info = info.clone();
    crate::source::pipeline::start(target, info, "rows", read, move |raw| {
        build(raw, &layout, &build_info)
    })
}

// ---------------------------------------------------------------- SQLite

struct SqliteCatalog<'a>(&'a rusqlite::Connection);

impl Catalog for SqliteCatalog<'_> {
    fn columns(
        &mut self,
        table: &str,
    ) -> std::result::Result<Option<(Option<String>, Vec<(String, String)>)>, String> {
        let cols = sqlite::columns_typed(self.0, table).map_err(|e| sqlite::cause(&e))?;
        Ok((!cols.is_empty()).then_some((None, cols)))
    }

    fn tables(&mut self) -> std::result::Result<Vec<String>, String> {
        sqlite::tables(self.0).map_err(|e| sqlite::cause(&e))
    }

    /// SQLite's INTEGER affinity: the declared type contains `INT`.
    fn is_integer(&self, ty: &str) -> bool {
        ty.to_ascii_uppercase().contains("INT")
    }
}

/// Resolve the layout of a SQLite database.
pub fn sqlite_layout(
    conn: &rusqlite::Connection,
    mapping: Option<&Mapping>,
) -> std::result::Result<Layout, LayoutError> {
    resolve(&mut SqliteCatalog(conn), mapping)
}

fn int_of(v: rusqlite::types::ValueRef<'_>) -> Option<i64> {
    match v {
        rusqlite::types::ValueRef::Integer(i) => Some(i),
        _ => None,
    }
}

struct SqliteReader<'a> {
    msgs: rusqlite::Rows<'a>,
    execs: Option<rusqlite::Rows<'a>>,
}

impl RowReader for SqliteReader<'_> {
    fn next_message(&mut self) -> std::result::Result<Option<RawMsg>, String> {
        let Some(row) = self.msgs.next().map_err(|e| sqlite::cause(&e))? else {
            return Ok(None);
        };
        let get = |i: usize| row.get_ref(i).map_err(|e| sqlite::cause(&e));
        let index = match get(2)? {
            rusqlite::types::ValueRef::Integer(i) => Ok(i),
            other => Err(sqlite::text(other).unwrap_or_else(|| "NULL".into())),
        };
        Ok(Some(RawMsg {
            rowid: int_of(get(0)?),
            conv: sqlite::text(get(1)?).unwrap_or_else(|| "NULL".into()),
            index,
            role: sqlite::text(get(3)?),
            content: sqlite::text(get(4)?),
        }))
    }

    fn next_execution(&mut self) -> std::result::Result<Option<RawExec>, String> {
        let Some(rows) = self.execs.as_mut() else {
            return Ok(None);
        };
        let Some(row) = rows.next().map_err(|e| sqlite::cause(&e))? else {
            return Ok(None);
        };
        let get = |i: usize| row.get_ref(i).map_err(|e| sqlite::cause(&e));
        Ok(Some(RawExec {
            id: int_of(get(0)?),
            conv: sqlite::text(get(1)?).unwrap_or_else(|| "NULL".into()),
            message_index: int_of(get(2)?),
            ordinal: int_of(get(3)?),
            tool_use_id: sqlite::text(get(4)?).unwrap_or_default(),
            tool_name: sqlite::text(get(5)?).unwrap_or_default(),
            status: sqlite::text(get(6)?).unwrap_or_default(),
            output: sqlite::text(get(7)?),
            error: sqlite::text(get(8)?),
        }))
    }
}

/// `SELECT` of the message rows, for SQLite (no casts: a stored value that
/// is not an integer must stay visible as what it is).
fn sqlite_messages_sql(l: &Layout, rowid: &str) -> String {
    let q = |c: &str| format!("m.{}", quote_ident(c));
    let rowid = if rowid == "NULL" {
        rowid.to_string()
    } else {
        format!("m.{rowid}")
    };
    format!(
        "SELECT {rowid}, {c}, {i}, {r}, {x} FROM {t} AS m ORDER BY {c}, {i}, {rowid}",
        c = q(&l.conversation),
        i = q(&l.index),
        r = q(&l.role),
        x = q(&l.content),
        t = l.qualified(&l.table),
    )
}

fn sqlite_executions_sql(l: &Layout, table: &str, ordinal: bool) -> String {
    let ord = if ordinal { "e.\"ordinal\"" } else { "NULL" };
    format!(
        "SELECT e.\"id\", e.\"job_id\", e.\"message_idx\", {ord}, e.\"tool_use_id\", e.\"tool_name\", e.\"status\", e.\"output\", e.\"error\" FROM {} AS e ORDER BY e.\"job_id\", e.\"message_idx\", {ord}, e.\"id\"",
        l.qualified(table)
    )
}

fn read_sqlite(path: &Path, snap: Snapshot, layout: &Layout, tx: Dealer<RawConv>) {
    let fail = |cause: String| Err(Error::input(path, cause));
    let rowid = match &layout.id {
        Some(id) => quote_ident(id),
        None => "rowid".to_string(),
    };
    let mut msgs = match snap.conn.prepare(&sqlite_messages_sql(layout, &rowid)) {
        Ok(st) => st,
        // WITHOUT ROWID tables have no rowid: locate rows by key only.
        Err(_) if layout.id.is_none() => {
            match snap.conn.prepare(&sqlite_messages_sql(layout, "NULL")) {
                Ok(st) => st,
                Err(e) => {
                    let _ = tx.send(fail(sqlite::cause(&e)));
                    return;
                }
            }
        }
        Err(e) => {
            let _ = tx.send(fail(sqlite::cause(&e)));
            return;
        }
    };
    let mut execs = match &layout.executions {
        Some((t, ordinal)) => match snap
            .conn
            .prepare(&sqlite_executions_sql(layout, t, *ordinal))
        {
            Ok(st) => Some(st),
            Err(e) => {
                let _ = tx.send(fail(sqlite::cause(&e)));
                return;
            }
        },
        None => None,
    };
    let msg_rows = match msgs.query([]) {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(fail(sqlite::cause(&e)));
            return;
        }
    };
    let exec_rows = match execs.as_mut().map(|s| s.query([])) {
        None => None,
        Some(Ok(r)) => Some(r),
        Some(Err(e)) => {
            let _ = tx.send(fail(sqlite::cause(&e)));
            return;
        }
    };
    let mut reader = SqliteReader {
        msgs: msg_rows,
        execs: exec_rows,
    };
    pump(&mut reader, path, &tx);
}

/// Open a message table in a SQLite database.
pub fn open_sqlite(
    path: &Path,
    snap: Snapshot,
    layout: Layout,
) -> Result<crate::source::pipeline::Pipeline> {
    let info = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: Format::SqliteTable,
        dialect: layout.dialect,
    });
    let p: PathBuf = path.to_path_buf();
    let l = layout.clone();
    start(path, info, layout, move |tx| read_sqlite(&p, snap, &l, tx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;

    struct Feed {
        msgs: std::vec::IntoIter<RawMsg>,
        execs: std::vec::IntoIter<RawExec>,
    }

    impl RowReader for Feed {
        fn next_message(&mut self) -> std::result::Result<Option<RawMsg>, String> {
            Ok(self.msgs.next())
        }
        fn next_execution(&mut self) -> std::result::Result<Option<RawExec>, String> {
            Ok(self.execs.next())
        }
    }

    fn m(conv: &str, index: i64) -> RawMsg {
        RawMsg {
            rowid: None,
            conv: conv.into(),
            index: Ok(index),
            role: Some("user".into()),
            content: Some("[]".into()),
        }
    }

    fn e(conv: &str, id: &str) -> RawExec {
        RawExec {
            id: None,
            conv: conv.into(),
            message_index: Some(1),
            ordinal: Some(0),
            tool_use_id: id.into(),
            tool_name: "t".into(),
            status: "complete".into(),
            output: None,
            error: None,
        }
    }

    #[test]
    fn executions_merge_into_their_jobs_by_integer_order() {
        // Jobs 2 and 10 sort numerically; job 1 and 5 have executions only.
        let mut feed = Feed {
            msgs: vec![m("2", 0), m("2", 1), m("10", 0)].into_iter(),
            execs: vec![e("1", "a"), e("2", "b"), e("5", "c"), e("10", "d")].into_iter(),
        };
        let (tx, rx) = sync_channel(16);
        let dealer = Dealer::single(tx);
        pump(&mut feed, Path::new("t"), &dealer);
        drop(dealer);
        let convs: Vec<RawConv> = rx.into_iter().flatten().map(|r| r.unwrap()).collect();
        assert_eq!(convs.len(), 2);
        assert_eq!(convs[0].id, "2");
        assert_eq!(convs[0].msgs.len(), 2);
        let ids = |c: &RawConv| {
            c.execs
                .iter()
                .map(|e| e.tool_use_id.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&convs[0]), vec!["b"]);
        assert_eq!(ids(&convs[1]), vec!["d"]);
    }

    #[test]
    fn text_keys_merge_in_the_order_sqlite_sorts_them() {
        // Integers first (by value), then texts byte by byte; a text key
        // that equals a job keeps its executions.
        let mut feed = Feed {
            msgs: vec![m("7", 0), m("a", 0), m("b", 0)].into_iter(),
            execs: vec![
                e("7", "x"),
                e("a", "y"),
                e("a", "z"),
                e("ab", "w"),
                e("b", "v"),
            ]
            .into_iter(),
        };
        let (tx, rx) = sync_channel(16);
        let dealer = Dealer::single(tx);
        pump(&mut feed, Path::new("t"), &dealer);
        drop(dealer);
        let convs: Vec<RawConv> = rx.into_iter().flatten().map(|r| r.unwrap()).collect();
        let ids: Vec<(String, Vec<String>)> = convs
            .iter()
            .map(|c| {
                (
                    c.id.clone(),
                    c.execs.iter().map(|e| e.tool_use_id.clone()).collect(),
                )
            })
            .collect();
        assert_eq!(
            ids,
            vec![
                ("7".to_string(), vec!["x".to_string()]),
                ("a".to_string(), vec!["y".to_string(), "z".to_string()]),
                ("b".to_string(), vec!["v".to_string()]),
            ]
        );
        assert_eq!(key_order("10", "9"), std::cmp::Ordering::Greater);
        assert_eq!(key_order("9", "a"), std::cmp::Ordering::Less);
    }
}
