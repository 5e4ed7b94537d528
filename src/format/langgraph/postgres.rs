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
//! out) and its writes (sorted by task path, task id, index). A `messages`
//! channel the checkpoint names without its blob is rebuilt as LangGraph
//! rebuilds it (`Walk`): from the nearest parent checkpoint whose blob is
//! there, and the `messages` writes of the checkpoints since.
//! Read the way the message tables are (`message_table::postgres`): a
//! read-only session, one `READ ONLY REPEATABLE READ` transaction, the
//! latest checkpoints streamed through a server-side cursor, and each
//! thread's blobs and writes fetched as it comes, so memory holds a batch
//! of checkpoints and one thread at a time.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use postgres::Client;
use rmpv::Value;

use super::serde::{self as lgserde, Unreadable, get, get_mut};
use super::state::{self, Latest, Write};
use crate::error::{Error, Result};
use crate::format::message_table::postgres::{self as pg, Target};
use crate::format::store::{Hooks, Opened, Probe, Store, Writing};
use crate::model::{
    Conversation, CorruptRecord, Dialect, Format, Loc, MissingBlob, SourceInfo, Unread,
};
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
    rows: pg::Cursor,
    blob: postgres::Statement,
    writes: postgres::Statement,
    walk: Walk,
    failed: bool,
}

/// Open the database at `arg` (a `postgres:` URL) as LangGraph threads.
pub fn open(arg: &Path) -> Result<Threads> {
    let t = pg::target(&arg.to_string_lossy())?;
    let mut client = pg::connect(&t)?;
    let path = t.path();
    let fail = |e: postgres::Error| Error::input(&path, pg::cause(&e));
    // `ShallowPostgresSaver` (deprecated since 2.0.20, still in 3.2.0) keeps one
    // checkpoint per thread in tables of the same names, without
    // `checkpoint_id` and without blob versions.
    let shallow: bool = client
        .query_one(
            "SELECT NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = ANY (current_schemas(false)) AND table_name = 'checkpoints' AND column_name = 'checkpoint_id')",
            &[],
        )
        .map_err(fail)?
        .get(0);
    if shallow {
        return Err(Error::input(
            &path,
            "holds the tables of LangGraph's ShallowPostgresSaver (one checkpoint per thread, no `checkpoint_id`), which chatfsck does not read yet",
        ));
    }
    let has_path = has_task_path(&mut client).map_err(fail)?;
    client
        .batch_execute(
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
             DECLARE chatfsck_threads NO SCROLL CURSOR FOR \
             SELECT DISTINCT ON (thread_id, checkpoint_ns) thread_id, checkpoint_ns, checkpoint_id, checkpoint::text, \
                    count(*) OVER (PARTITION BY thread_id, checkpoint_ns), parent_checkpoint_id \
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
    let walk = Walk::prepare(&mut client, has_path).map_err(fail)?;
    Ok(Threads {
        client,
        info: Arc::new(SourceInfo {
            path: path.clone(),
            format: Format::PostgresTable,
            dialect: Dialect::LangGraph,
        }),
        path,
        rows: pg::Cursor::new("chatfsck_threads", BATCH),
        blob,
        writes,
        walk,
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
        let Some(row) = self.rows.next(&mut self.client)? else {
            // Read-only: nothing to commit; the cursor closes with it.
            let _ = self.client.batch_execute("ROLLBACK");
            return Ok(None);
        };
        let thread: String = row.try_get(0).map_err(c)?;
        let ns: String = row.try_get(1).map_err(c)?;
        let id: String = row.try_get(2).map_err(c)?;
        let text: String = row.try_get(3).map_err(c)?;
        let count: i64 = row.try_get(4).map_err(c)?;
        let parent: Option<String> = row.try_get(5).map_err(c)?;
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
            let found = match found {
                Some(b) => {
                    let ty: String = b.try_get(0).map_err(c)?;
                    let bytes: Option<Vec<u8>> = b.try_get(1).map_err(c)?;
                    Some((ty, bytes.unwrap_or_default())).filter(|(ty, _)| ty != "empty")
                }
                None => None,
            };
            // No row (or an `empty` one): LangGraph's join leaves the
            // channel out. The tasks channel is then empty; `messages` is
            // rebuilt from the parent checkpoints (checked with 1.2.24: the
            // thread resumes with every message).
            let Some((ty, bytes)) = found else {
                if channel == state::MESSAGES {
                    let list = self.rebuild(
                        &mut conv,
                        &thread,
                        &ns,
                        &id,
                        parent.as_deref(),
                        &version,
                        &loc,
                    )?;
                    messages = list.map(|l| (Value::Array(l), loc));
                }
                continue;
            };
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

impl Threads {
    /// The `messages` of checkpoint `id`, whose blob (at `version`, `loc`)
    /// is not stored, as LangGraph rebuilds them; the finding that says so.
    /// `None` when a value the rebuild needs does not decode (a finding
    /// too: LangGraph cannot load the thread).
    #[allow(clippy::too_many_arguments)]
    fn rebuild(
        &mut self,
        conv: &mut Conversation,
        thread: &str,
        ns: &str,
        id: &str,
        parent: Option<&str>,
        version: &str,
        loc: &Loc,
    ) -> std::result::Result<Option<Vec<Value>>, String> {
        let c = |e: postgres::Error| pg::cause(&e);
        let r = self
            .walk
            .rebuild(&mut self.client, thread, ns, id, parent, state::MESSAGES)
            .map_err(c)?;
        let what = format!(
            "the `messages` channel the latest checkpoint names (version `{}`)",
            crate::escape::escape(version)
        );
        let r = match r {
            Ok(r) => r,
            Err(bad) => {
                match bad.why {
                    Unreadable::Broken(why) => conv.corrupt.push(CorruptRecord::new(
                        bad.loc,
                        format!("LangGraph rebuilds {what} from this value, which does not decode: {why}"),
                        &bad.bytes,
                        false,
                    )),
                    Unreadable::Unread(_) => conv.unread.push(Unread {
                        loc: bad.loc,
                        kind: "value the `messages` channel is rebuilt from".into(),
                        what: "a pickled value or a serialisation chatfsck does not read",
                    }),
                }
                return Ok(None);
            }
        };
        let n = r.list.len();
        let from = match &r.seed {
            Some((cp, v)) => format!(
                "the `messages` blob of checkpoint `{}` (version `{}`)",
                crate::escape::escape(cp),
                crate::escape::escape(v)
            ),
            None => "an empty list (no older checkpoint's blob is there)".into(),
        };
        conv.missing_blobs.push(MissingBlob {
            loc: state::loc(CHECKPOINTS, id.to_string(), None),
            missing: loc.clone(),
            what,
            rebuilt: format!(
                "LangGraph rebuilds it from {from} and the {} `messages` write{} of the {} checkpoint{} walked: the resume starts from these {n} message{}",
                r.writes,
                if r.writes == 1 { "" } else { "s" },
                r.chain,
                if r.chain == 1 { "" } else { "s" },
                if n == 1 { "" } else { "s" },
            ),
        });
        Ok(Some(r.list))
    }
}

/// Whether `checkpoint_writes` has `task_path` (migration 9; older tables
/// sort without it).
pub fn has_task_path(client: &mut Client) -> std::result::Result<bool, postgres::Error> {
    Ok(client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = ANY (current_schemas(false)) AND table_name = 'checkpoint_writes' AND column_name = 'task_path')",
            &[],
        )?
        .get(0))
}

/// LangGraph's rebuild of a channel that a checkpoint names without
/// holding its value (`channels_from_checkpoint`, for a
/// `BinaryOperatorAggregate` such as `messages` with `add_messages`;
/// `PostgresSaver.get_delta_channel_history`): walk the parent links from
/// the checkpoint's parent, among the thread's checkpoints whose id is not
/// after its own, to the first whose blob of the channel is there (not
/// `empty`) or whose value is inline; start from that value (an empty
/// list when the walk ends first) and apply the channel's writes of every
/// checkpoint walked, oldest first, each sorted by task path, task id and
/// index (`writes_sort_key`, Python's code point order).
pub struct Walk {
    step: postgres::Statement,
    blob: postgres::Statement,
    writes: postgres::Statement,
}

/// What a rebuild starts from and applies.
pub struct Rebuilt {
    pub list: Vec<Value>,
    /// The checkpoint and version of the blob it starts from.
    pub seed: Option<(String, String)>,
    /// Checkpoints walked.
    pub chain: usize,
    /// Writes applied.
    pub writes: usize,
}

/// A value the rebuild needs that does not decode.
pub struct Bad {
    pub loc: Loc,
    pub why: Unreadable,
    pub bytes: Vec<u8>,
}

impl Walk {
    pub fn prepare(
        client: &mut Client,
        has_path: bool,
    ) -> std::result::Result<Walk, postgres::Error> {
        Ok(Walk {
            step: client.prepare(
                "SELECT c.parent_checkpoint_id, c.checkpoint -> 'channel_versions' ->> $4::text, \
                        EXISTS (SELECT 1 FROM checkpoint_blobs b WHERE b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns \
                                AND b.channel = $4::text AND b.version = c.checkpoint -> 'channel_versions' ->> $4::text AND b.type <> 'empty'), \
                        (c.checkpoint -> 'channel_values' -> $4::text)::text \
                 FROM checkpoints c WHERE c.thread_id = $1 AND c.checkpoint_ns = $2 AND c.checkpoint_id = $3 AND c.checkpoint_id <= $5",
            )?,
            blob: client.prepare(
                "SELECT type, blob FROM checkpoint_blobs WHERE thread_id = $1 AND checkpoint_ns = $2 AND channel = $3 AND version = $4",
            )?,
            writes: client.prepare(&format!(
                "SELECT task_id, idx::bigint, type, blob FROM checkpoint_writes \
                 WHERE thread_id = $1 AND checkpoint_ns = $2 AND checkpoint_id = $3 AND channel = $4 \
                 ORDER BY {}task_id COLLATE \"C\", idx",
                if has_path { "task_path COLLATE \"C\", " } else { "" }
            ))?,
        })
    }

    /// Rebuild `channel` of checkpoint `target` (whose parent is `parent`).
    pub fn rebuild(
        &self,
        client: &mut Client,
        thread: &str,
        ns: &str,
        target: &str,
        parent: Option<&str>,
        channel: &str,
    ) -> std::result::Result<std::result::Result<Rebuilt, Bad>, postgres::Error> {
        let mut chain: Vec<String> = Vec::new();
        let mut seen = HashSet::new();
        let mut seed = None;
        let mut list: Vec<Value> = Vec::new();
        let mut cur = parent.map(str::to_string);
        while let Some(cid) = cur.take() {
            // LangGraph would go round a cycle forever; it is walked once.
            if !seen.insert(cid.clone()) {
                break;
            }
            let Some(row) =
                client.query_opt(&self.step, &[&thread, &ns, &cid, &channel, &target])?
            else {
                break;
            };
            chain.push(cid.clone());
            let next: Option<String> = row.try_get(0)?;
            let version: Option<String> = row.try_get(1)?;
            let has_blob: bool = row.try_get(2)?;
            let inline: Option<String> = row.try_get(3)?;
            if let (true, Some(v)) = (has_blob, version) {
                let b = client.query_one(&self.blob, &[&thread, &ns, &channel, &v])?;
                let ty: String = b.try_get(0)?;
                let bytes: Vec<u8> = b.try_get::<_, Option<Vec<u8>>>(1)?.unwrap_or_default();
                match lgserde::decode(&ty, &bytes) {
                    Ok(value) => list = write_list(value),
                    Err(why) => {
                        return Ok(Err(Bad {
                            loc: blob_loc(&cid, channel, &v),
                            why,
                            bytes,
                        }));
                    }
                }
                seed = Some((cid, v));
                break;
            }
            if let Some(text) = inline.filter(|t| t != "null") {
                if let Ok(value) = lgserde::decode("json", text.as_bytes()) {
                    list = write_list(value);
                }
                seed = Some((cid, "inline".into()));
                break;
            }
            cur = next;
        }
        let mut writes = 0;
        for cid in chain.iter().rev() {
            for w in client.query(&self.writes, &[&thread, &ns, cid, &channel])? {
                let task_id: String = w.try_get(0)?;
                let idx: i64 = w.try_get(1)?;
                let ty: Option<String> = w.try_get(2)?;
                let bytes: Vec<u8> = w.try_get::<_, Option<Vec<u8>>>(3)?.unwrap_or_default();
                match lgserde::decode(ty.as_deref().unwrap_or_default(), &bytes) {
                    Ok(v) => state::add_messages(&mut list, &state::write_messages(v)),
                    Err(why) => {
                        return Ok(Err(Bad {
                            loc: state::loc(WRITES, format!("{cid}/{task_id}/{idx}"), None),
                            why,
                            bytes,
                        }));
                    }
                }
                writes += 1;
            }
        }
        Ok(Ok(Rebuilt {
            list,
            seed,
            chain: chain.len(),
            writes,
        }))
    }
}

/// A stored list value (a `DeltaChannel` snapshot's too) as its items.
fn write_list(v: Value) -> Vec<Value> {
    match v {
        Value::Ext(lgserde::EXT_DELTA_SNAPSHOT, data) => match lgserde::msgpack(&data) {
            Ok(Value::Array(items)) => items,
            _ => Vec::new(),
        },
        Value::Array(items) => items,
        _ => Vec::new(),
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
