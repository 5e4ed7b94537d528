//! LangGraph's PostgreSQL checkpointer (`langgraph-checkpoint-postgres`,
//! `PostgresSaver`/`AsyncPostgresSaver`, 3.x; migrations in its `base.py`):
//!
//! - `checkpoints(thread_id, checkpoint_ns, checkpoint_id,
//!   parent_checkpoint_id, type, checkpoint JSONB, metadata JSONB)`: the
//!   checkpoint as JSON, whose `channel_values` keep only the primitive
//!   values (`None`, str, int, float, bool) inline;
//! - `checkpoint_blobs(thread_id, checkpoint_ns, channel, version, type,
//!   blob BYTEA)`: every other channel value, one row per channel and
//!   version (`type` `msgpack`, `pickle`, … or `empty`): the `messages`
//!   channel of a checkpoint is the blob of the version its
//!   `channel_versions` names;
//! - `checkpoint_writes(thread_id, checkpoint_ns, checkpoint_id, task_id,
//!   task_path, idx, channel, type, blob)`: the pending writes;
//! - `checkpoint_migrations(v)`.
//!
//! A thread resumes as `get_tuple` loads it: its latest checkpoint
//! (`ORDER BY checkpoint_id DESC LIMIT 1`), the blobs of its channel
//! versions (an inner join: a blob row that is missing leaves the channel
//! out, and the loop rebuilds it from the parents) and its writes (sorted by task path, task id, index).
//! Read the way the message tables are (`message_table::postgres`): a
//! read-only session, one `READ ONLY REPEATABLE READ` transaction, the
//! latest checkpoints streamed through a server-side cursor, and each
//! thread's blobs and writes fetched as it comes, so memory holds a batch
//! of checkpoints and one thread at a time.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use postgres::Client;
use rmpv::Value;

use super::serde::{self as lgserde, Unreadable, get, get_mut};
use super::state::{self, Latest, Write};
use crate::error::{Error, Result};
use crate::format::message_table::postgres::{self as pg, Target};
use crate::format::store::{Hooks, Opened, Probe, Store, Writing};
use crate::model::{Conversation, CorruptRecord, Dialect, Format, Loc, SourceInfo, Unread};
use crate::source::Source;

pub static STORE: Store = Store {
    name: "LangGraph checkpoints (PostgreSQL, langgraph-checkpoint-postgres)",
    formats: &[Format::PostgresTable],
    dialects: &[Dialect::LangGraph],
    probe: Probe::Postgres {
        detect,
        open: |path| Ok(Opened::History(Box::new(open(path)?))),
    },
    writing: Writing::Copy {
        supports: super::writer::supports,
        new: super::pg_writer::new,
    },
    hooks: Hooks::NONE,
};

pub const CHECKPOINTS: &str = "checkpoints";
pub const BLOBS: &str = "checkpoint_blobs";
pub const WRITES: &str = "checkpoint_writes";

/// Rows fetched per round trip.
const BATCH: usize = 200;

/// Whether the database (its tables on the search path) is a LangGraph
/// PostgreSQL checkpointer's: the three tables and the migrations table.
pub fn detect(tables: &[String]) -> bool {
    [CHECKPOINTS, BLOBS, WRITES, "checkpoint_migrations"]
        .iter()
        .all(|t| tables.iter().any(|x| x == t))
}

pub struct Threads {
    client: Client,
    path: PathBuf,
    info: Arc<SourceInfo>,
    buf: VecDeque<postgres::Row>,
    done: bool,
    blob: postgres::Statement,
    writes: postgres::Statement,
    failed: bool,
}

/// Open the database at `arg` (a `postgres:` URL) as LangGraph threads.
pub fn open(arg: &Path) -> Result<Threads> {
    let t = pg::target(&arg.to_string_lossy())?;
    let mut client = pg::connect(&t)?;
    let path = t.path();
    let fail = |e: postgres::Error| Error::input(&path, pg::cause(&e));
    // `task_path` came with migration 9; older tables sort without it.
    let has_path: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = ANY (current_schemas(false)) AND table_name = 'checkpoint_writes' AND column_name = 'task_path')",
            &[],
        )
        .map_err(fail)?
        .get(0);
    client
        .batch_execute(
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
             DECLARE chatfsck_threads NO SCROLL CURSOR FOR \
             SELECT DISTINCT ON (thread_id, checkpoint_ns) thread_id, checkpoint_ns, checkpoint_id, checkpoint::text, \
                    count(*) OVER (PARTITION BY thread_id, checkpoint_ns) \
             FROM checkpoints ORDER BY thread_id, checkpoint_ns, checkpoint_id DESC",
        )
        .map_err(fail)?;
    let blob = client
        .prepare(
            "SELECT type, blob FROM checkpoint_blobs WHERE thread_id = $1 AND checkpoint_ns = $2 AND channel = $3 AND version = $4",
        )
        .map_err(fail)?;
    let writes = client
        .prepare(&format!(
            "SELECT task_id, idx::bigint, channel, type, blob FROM checkpoint_writes \
             WHERE thread_id = $1 AND checkpoint_ns = $2 AND checkpoint_id = $3 ORDER BY {}task_id, idx",
            if has_path { "task_path, " } else { "" }
        ))
        .map_err(fail)?;
    Ok(Threads {
        client,
        info: Arc::new(SourceInfo {
            path: path.clone(),
            format: Format::PostgresTable,
            dialect: Dialect::LangGraph,
        }),
        path,
        buf: VecDeque::new(),
        done: false,
        blob,
        writes,
        failed: false,
    })
}

impl Source for Threads {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        if self.failed {
            return None;
        }
        let r = self.next().transpose()?;
        if r.is_err() {
            self.failed = true;
        }
        Some(r.map_err(|cause| Error::input(&self.path, cause)))
    }
}

impl Threads {
    fn next(&mut self) -> std::result::Result<Option<Conversation>, String> {
        let c = |e: postgres::Error| pg::cause(&e);
        if self.buf.is_empty() && !self.done {
            let rows = self
                .client
                .query(&format!("FETCH {BATCH} FROM chatfsck_threads"), &[])
                .map_err(c)?;
            self.done = rows.len() < BATCH;
            self.buf.extend(rows);
        }
        let Some(row) = self.buf.pop_front() else {
            // Read-only: nothing to commit; the cursor closes with it.
            let _ = self.client.batch_execute("ROLLBACK");
            return Ok(None);
        };
        let thread: String = row.try_get(0).map_err(c)?;
        let ns: String = row.try_get(1).map_err(c)?;
        let id: String = row.try_get(2).map_err(c)?;
        let text: String = row.try_get(3).map_err(c)?;
        let count: i64 = row.try_get(4).map_err(c)?;
        let mut conv = Conversation::new(state::conversation_id(&thread, &ns), self.info.clone());
        conv.meta_records = u64::try_from(count).unwrap_or(0).saturating_sub(1);
        let mut writes = Vec::new();
        for w in self
            .client
            .query(&self.writes, &[&thread, &ns, &id])
            .map_err(c)?
        {
            let task_id: String = w.try_get(0).map_err(c)?;
            let idx: i64 = w.try_get(1).map_err(c)?;
            writes.push(Write {
                loc: state::loc(WRITES, format!("{id}/{task_id}/{idx}"), None),
                task_id,
                channel: w.try_get(2).map_err(c)?,
                ty: w
                    .try_get::<_, Option<String>>(3)
                    .map_err(c)?
                    .unwrap_or_default(),
                value: w.try_get(4).map_err(c)?,
            });
        }
        let latest = Latest {
            loc: state::loc(CHECKPOINTS, id.clone(), None),
            ty: "json".into(),
            bytes: text.into_bytes(),
            writes,
        };
        let Some(mut cp) = state::checkpoint(&mut conv, &latest) else {
            return Ok(Some(conv));
        };
        // The channels the state reads, from their blobs.
        let mut messages = None;
        for channel in [state::MESSAGES, state::TASKS] {
            let Some(version) = get(&cp, "channel_versions")
                .and_then(|v| get(v, channel))
                .and_then(version_text)
            else {
                continue;
            };
            let loc = blob_loc(&id, channel, &version);
            let found = self
                .client
                .query_opt(&self.blob, &[&thread, &ns, &channel, &version])
                .map_err(c)?;
            // No row: LangGraph's join leaves the channel out, and the
            // loop rebuilds it from the parent checkpoints' blobs and writes
            // (checked with 1.2.24: the thread resumes with every message).
            // Not a finding; what chatfsck reads of the thread is then less
            // than LangGraph does (nothing).
            let Some(b) = found else {
                continue;
            };
            let ty: String = b.try_get(0).map_err(c)?;
            let bytes: Option<Vec<u8>> = b.try_get(1).map_err(c)?;
            if ty == "empty" {
                continue;
            }
            let bytes = bytes.unwrap_or_default();
            match lgserde::decode(&ty, &bytes) {
                Ok(v) if channel == state::MESSAGES => messages = Some((v, loc)),
                Ok(v) => set_value(&mut cp, channel, v),
                Err(Unreadable::Broken(why)) => conv.corrupt.push(CorruptRecord::new(
                    loc,
                    format!("the latest checkpoint's `{channel}` blob does not decode: {why}"),
                    &bytes,
                    false,
                )),
                Err(Unreadable::Unread(_)) => conv.unread.push(Unread {
                    loc,
                    kind: format!("`{channel}` blob (`{}`)", crate::escape::escape(&ty)),
                    what: if ty == "pickle" {
                        "a pickled value (LangGraph's `pickle_fallback`): never unpickled"
                    } else {
                        "a serialisation chatfsck does not read"
                    },
                }),
            }
        }
        state::read(
            &mut conv,
            &latest,
            &cp,
            messages.as_ref().map(|(v, l)| (v, l)),
        );
        Ok(Some(conv))
    }
}

/// A channel version as `jsonb_each_text` gives it: a string, or an
/// integer's digits.
fn version_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => s.as_str().map(str::to_string),
        Value::Integer(i) => Some(i.to_string()),
        Value::F64(f) => Some(f.to_string()),
        _ => None,
    }
}

fn set_value(cp: &mut Value, channel: &str, v: Value) {
    if let Some(Value::Map(values)) = get_mut(cp, "channel_values") {
        values.retain(|(k, _)| k.as_str() != Some(channel));
        values.push((Value::from(channel), v));
    }
}

/// Where a channel's blob is: the checkpoint that names it, the channel
/// and its version.
pub fn blob_loc(checkpoint: &str, channel: &str, version: &str) -> Loc {
    state::loc(BLOBS, format!("{checkpoint}/{channel}/{version}"), None)
}

/// The checkpoint id in a location of this store (a checkpoint, a blob or
/// a write: its key starts with the checkpoint's id).
pub fn checkpoint_of(loc: &Loc) -> Option<&str> {
    match loc {
        Loc::Row { key, .. } => key.split('/').next(),
        _ => None,
    }
}

/// Connect to the source, for a writer.
pub fn source(arg: &Path) -> Result<(Target, Client)> {
    let t = pg::target(&arg.to_string_lossy())?;
    let c = pg::connect(&t)?;
    Ok((t, c))
}
