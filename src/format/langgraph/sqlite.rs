//! LangGraph's SQLite checkpointer (`langgraph-checkpoint-sqlite`,
//! `SqliteSaver`/`AsyncSqliteSaver`): tables `checkpoints(thread_id,
//! checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint,
//! metadata)` and `writes(thread_id, checkpoint_ns, checkpoint_id,
//! task_id, idx, channel, type, value)`. A checkpoint's channel values are
//! inside its `checkpoint` (serialised as `type` says).
//!
//! One conversation per thread and namespace, as `get_tuple` loads it
//! when the thread resumes: its latest checkpoint (`ORDER BY checkpoint_id
//! DESC LIMIT 1`; ids are time-ordered UUIDs) and that checkpoint's
//! writes (`ORDER BY task_id, idx`). Older checkpoints are the thread's
//! history (`get_state_history`), never sent to a model.
//!
//! The channel values are inside the checkpoint, serialised with it: the
//! PostgreSQL checkpointer's missing blob (`postgres`, `missing-blob`) has
//! no counterpart here. A checkpoint cut short does not decode at all
//! (`corrupt-record`: LangGraph cannot load the thread either). Only a
//! checkpoint rewritten without its `messages` value while its
//! `channel_versions` still names one would be rebuilt by LangGraph from
//! the older checkpoints (`get_delta_channel_history`); the library never
//! writes one, and it is read here as holding no messages.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::state::{self, Latest, Write};
use super::writer;
use crate::error::Result;
use crate::format::store::{Hooks, Opened, Probe, Store, Writing};
use crate::model::{Conversation, Dialect, Format, SourceInfo};
use crate::source::Source;
use crate::source::sqlite::{self, Snapshot};

pub static STORE: Store = Store {
    name: "LangGraph checkpoints (SQLite, langgraph-checkpoint-sqlite)",
    formats: &[Format::SqliteTable],
    dialects: &[Dialect::LangGraph],
    probe: Probe::Sqlite {
        detect: |conn, tables| detect(conn, tables).map_err(|e| sqlite::cause(&e)),
        open: |path, snap| Ok(Opened::History(Box::new(open(path, snap)?))),
    },
    writing: Writing::Copy {
        supports: writer::supports,
        new: writer::new,
    },
    hooks: Hooks::NONE,
};

pub const CHECKPOINTS: &str = "checkpoints";
pub const WRITES: &str = "writes";

/// Whether the database is a LangGraph SQLite checkpointer's: both tables
/// with their columns (`writes` alone is too common a name).
pub fn detect(conn: &rusqlite::Connection, tables: &[String]) -> rusqlite::Result<bool> {
    let has = |t: &str| tables.iter().any(|x| x == t);
    if !(has(CHECKPOINTS) && has(WRITES)) {
        return Ok(false);
    }
    let all = |table: &str, want: &[&str]| -> rusqlite::Result<bool> {
        let cols = sqlite::columns(conn, table)?;
        Ok(want.iter().all(|c| cols.iter().any(|x| x == c)))
    };
    Ok(all(
        CHECKPOINTS,
        &[
            "thread_id",
            "checkpoint_ns",
            "checkpoint_id",
            "parent_checkpoint_id",
            "type",
            "checkpoint",
            "metadata",
        ],
    )? && all(
        WRITES,
        &[
            "thread_id",
            "checkpoint_ns",
            "checkpoint_id",
            "task_id",
            "idx",
            "channel",
            "type",
            "value",
        ],
    )?)
}

pub struct Threads {
    path: PathBuf,
    info: Arc<SourceInfo>,
    snap: Snapshot,
    keys: std::vec::IntoIter<(String, String)>,
}

pub fn open(path: &Path, snap: Snapshot) -> Result<Threads> {
    let info = Arc::new(SourceInfo {
        path: path.to_path_buf(),
        format: Format::SqliteTable,
        dialect: Dialect::LangGraph,
    });
    let keys = (|| -> rusqlite::Result<Vec<(String, String)>> {
        let mut st = snap.conn.prepare(
            "SELECT DISTINCT CAST(thread_id AS TEXT), CAST(checkpoint_ns AS TEXT) FROM checkpoints ORDER BY 1, 2",
        )?;
        let rows = st.query_map([], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                r.get::<_, Option<String>>(1)?.unwrap_or_default(),
            ))
        })?;
        rows.collect()
    })()
    .map_err(sqlite::error_of(path))?;
    Ok(Threads {
        path: path.to_path_buf(),
        info,
        snap,
        keys: keys.into_iter(),
    })
}

impl Source for Threads {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        let (thread, ns) = self.keys.next()?;
        Some(
            read_thread(&self.snap.conn, &thread, &ns, &self.info)
                .map_err(sqlite::error_of(&self.path)),
        )
    }
}

/// A checkpoint row: its rowid, id, type and bytes.
pub type Row = (i64, String, String, Vec<u8>);

/// The latest checkpoint of a thread and namespace.
pub fn latest(
    conn: &rusqlite::Connection,
    thread: &str,
    ns: &str,
) -> rusqlite::Result<Option<Row>> {
    let mut st = conn.prepare_cached(
        "SELECT rowid, CAST(checkpoint_id AS TEXT), CAST(type AS TEXT), checkpoint FROM checkpoints WHERE thread_id = ?1 AND checkpoint_ns = ?2 ORDER BY checkpoint_id DESC LIMIT 1",
    )?;
    let mut rows = st.query([thread, ns])?;
    let Some(r) = rows.next()? else {
        return Ok(None);
    };
    Ok(Some((
        r.get(0)?,
        r.get::<_, Option<String>>(1)?.unwrap_or_default(),
        r.get::<_, Option<String>>(2)?.unwrap_or_default(),
        blob(r.get_ref(3)?),
    )))
}

fn blob(v: rusqlite::types::ValueRef<'_>) -> Vec<u8> {
    match v {
        rusqlite::types::ValueRef::Blob(b) | rusqlite::types::ValueRef::Text(b) => b.to_vec(),
        _ => Vec::new(),
    }
}

fn read_thread(
    conn: &rusqlite::Connection,
    thread: &str,
    ns: &str,
    info: &Arc<SourceInfo>,
) -> rusqlite::Result<Conversation> {
    let mut conv = Conversation::new(state::conversation_id(thread, ns), info.clone());
    let Some((rowid, id, ty, bytes)) = latest(conn, thread, ns)? else {
        return Ok(conv);
    };
    let mut writes = Vec::new();
    let mut st = conn.prepare_cached(
        "SELECT rowid, CAST(task_id AS TEXT), idx, CAST(channel AS TEXT), CAST(type AS TEXT), value FROM writes WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3 ORDER BY task_id, idx",
    )?;
    let mut rows = st.query([thread, ns, id.as_str()])?;
    while let Some(r) = rows.next()? {
        let task_id: String = r.get::<_, Option<String>>(1)?.unwrap_or_default();
        let idx: i64 = r.get(2)?;
        writes.push(Write {
            loc: state::loc(WRITES, format!("{id}/{task_id}/{idx}"), Some(r.get(0)?)),
            task_id,
            channel: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
            ty: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
            value: blob(r.get_ref(5)?),
        });
    }
    let latest = Latest {
        loc: state::loc(CHECKPOINTS, id, Some(rowid)),
        ty,
        bytes,
        writes,
    };
    conv.meta_records = count(conn, thread, ns)?.saturating_sub(1);
    if let Some(cp) = state::checkpoint(&mut conv, &latest) {
        state::read(&mut conv, &latest, &cp, None);
    }
    Ok(conv)
}

/// The thread's checkpoints.
fn count(conn: &rusqlite::Connection, thread: &str, ns: &str) -> rusqlite::Result<u64> {
    conn.prepare_cached(
        "SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?1 AND checkpoint_ns = ?2",
    )?
    .query_row([thread, ns], |r| r.get(0))
}
