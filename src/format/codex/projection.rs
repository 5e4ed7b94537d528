//! Codex's history projection (0.146 and later): `thread_history_1.sqlite`
//! in the Codex home indexes each paginated rollout incrementally. Its
//! `thread_history_projection_state(thread_id, next_rollout_byte_offset,
//! next_rollout_ordinal)` says where the next read starts; `thread_items`
//! and `thread_turns` hold what was read, by `rollout_ordinal`. The
//! rollout's path is in `state_5.sqlite`'s `threads.rollout_path`.
//!
//! Measured with Codex 0.169.0: a rollout rewritten shorter than the
//! projection's next offset still resumes, but its later turns are never
//! indexed, and `fork` refuses the thread (`failed to prepare paginated
//! fork: thread-store internal error: durable rollout shrank before
//! projection`). With the thread's projection rows deleted, Codex rebuilds
//! them from the rollout on its next load, and the fork succeeds.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use crate::error::{Error, Result};
use crate::model::Projection;
use crate::source::sqlite;

/// The projection database, in the Codex home.
const PROJECTION_DB: &str = "thread_history_1.sqlite";
/// The thread index, in the Codex home.
const STATE_DB: &str = "state_5.sqlite";
/// The tables that hold a thread's projection (`thread_realtime_items`
/// goes with the state row, by Codex's own trigger).
const TABLES: &[&str] = &[
    "thread_items",
    "thread_turns",
    "thread_history_projection_state",
];

/// What a Codex home's databases say, read once per home and run.
#[derive(Default)]
struct Home {
    /// Thread id to (next byte, next ordinal).
    states: HashMap<String, (u64, u64)>,
    /// Thread id to the rollout path the thread index names.
    rollouts: HashMap<String, PathBuf>,
}

static HOMES: LazyLock<Mutex<HashMap<PathBuf, Arc<Home>>>> = LazyLock::new(Default::default);

fn load(home: &Path) -> Arc<Home> {
    let mut homes = HOMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(h) = homes.get(home) {
        return h.clone();
    }
    let mut h = Home::default();
    // A database that cannot be read says nothing: nothing is judged by it.
    if let Ok(snap) = open_existing(&home.join(PROJECTION_DB))
        && let Ok(mut st) = snap.conn.prepare(
            "SELECT thread_id, next_rollout_byte_offset, next_rollout_ordinal \
             FROM thread_history_projection_state",
        )
        && let Ok(rows) = st.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
    {
        for (t, b, o) in rows.flatten() {
            if let (Ok(b), Ok(o)) = (u64::try_from(b), u64::try_from(o)) {
                h.states.insert(t, (b, o));
            }
        }
    }
    if let Ok(snap) = open_existing(&home.join(STATE_DB))
        && let Ok(mut st) = snap.conn.prepare("SELECT id, rollout_path FROM threads")
        && let Ok(rows) = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
    {
        for (t, p) in rows.flatten() {
            h.rollouts.insert(t, PathBuf::from(p));
        }
    }
    let h = Arc::new(h);
    homes.insert(home.to_path_buf(), h.clone());
    h
}

fn open_existing(path: &Path) -> Result<sqlite::Snapshot> {
    if !path.is_file() {
        return Err(Error::input(path, "not there"));
    }
    sqlite::open(path)
}

/// The file name of `path`, without a `.zst` suffix.
fn plain_name(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    Some(name.strip_suffix(".zst").unwrap_or(name))
}

/// Whether `path` is the rollout of `thread` the home's projection
/// indexes: it has the rollout's name, and the name the thread index
/// gives (a home copied or moved elsewhere keeps its old paths there, so
/// the names are compared). A copy of the rollout under another name, a
/// repair's temporary file among them, is not judged by it.
fn is_the_rollout(home: &Home, path: &Path, thread: &str) -> bool {
    let Some(name) = plain_name(path) else {
        return false;
    };
    super::home::is_rollout_of(name, thread)
        && home
            .rollouts
            .get(thread)
            .is_none_or(|p| plain_name(p) == Some(name))
}

/// How far Codex's projection has read the rollout of `thread` at `path`,
/// when `path` is that thread's rollout in a Codex home that has one.
pub fn state(path: &Path, thread: &str) -> Option<Projection> {
    let home_dir = super::home::home_of(path)?;
    let home = load(home_dir);
    let &(next_byte, next_ordinal) = home.states.get(thread)?;
    is_the_rollout(&home, path, thread).then(|| Projection {
        store: home_dir.join(PROJECTION_DB),
        next_byte,
        next_ordinal,
    })
}

/// Delete the projection of `thread` (the rows of [`TABLES`]) from the
/// home's database, in one transaction: Codex rebuilds it from the
/// rollout on its next load. Returns the state row removed (next byte,
/// next ordinal), or None when there was none.
pub fn reset(store: &Path, thread: &str) -> Result<Option<(u64, u64)>> {
    let db_err = |e: rusqlite::Error| Error::input(store, sqlite::cause(&e));
    let mut conn = rusqlite::Connection::open_with_flags(
        store,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(db_err)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(db_err)?;
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(db_err)?;
    let was = tx
        .query_row(
            "SELECT next_rollout_byte_offset, next_rollout_ordinal \
             FROM thread_history_projection_state WHERE thread_id = ?1",
            [thread],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
        )
        .map(|(b, o)| Some((b.max(0) as u64, o.max(0) as u64)))
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })
        .map_err(db_err)?;
    for t in TABLES {
        tx.execute(&format!("DELETE FROM {t} WHERE thread_id = ?1"), [thread])
            .map_err(db_err)?;
    }
    tx.commit().map_err(db_err)?;
    // Read again if asked again in this run.
    if let Some(home) = store.parent() {
        HOMES.lock().unwrap_or_else(|e| e.into_inner()).remove(home);
    }
    Ok(was)
}
