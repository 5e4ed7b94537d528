//! Forensic access to SQLite files.
//!
//! The database is evidence. A WAL database must still show its
//! un-checkpointed frames, yet even a `mode=ro` open rewrites `-shm` (and
//! creates `-wal`/`-shm` for a WAL-mode file that has none), while
//! `immutable=1` silently ignores the WAL. So:
//! - a rollback-journal database with no `-wal` and no hot `-journal` is
//!   opened read-only in place (a read-only open of such a file takes only
//!   shared locks and writes nothing);
//! - anything else (WAL mode, a `-wal` or `-journal` beside it) is copied,
//!   with its `-wal`/`-journal`, into a private temporary directory, and the
//!   copy is opened: SQLite replays the WAL there, never beside the input.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::error::{Error, Result};

pub const HEADER: &[u8; 16] = b"SQLite format 3\0";

/// An open, read-only view of a database and whatever keeps it alive.
pub struct Snapshot {
    pub conn: Connection,
    /// The file `conn` reads: the input, or the private copy.
    file: PathBuf,
    /// The private copy, removed when the last holder is dropped.
    copy: Option<std::sync::Arc<PrivateCopy>>,
}

/// The private copy of a database: a directory in the temporary directory,
/// removed when dropped, or by the interrupt handler if the run is stopped
/// first ([`crate::cleanup`]).
pub struct PrivateCopy {
    dir: tempfile::TempDir,
    _registered: crate::cleanup::Registered,
}

/// Another connection to a snapshot's file, for a reader thread: it holds
/// the private copy (if any) alive, and a read transaction from the start,
/// so that every such connection sees the same database.
pub struct Reader {
    pub conn: Connection,
    _copy: Option<std::sync::Arc<PrivateCopy>>,
}

impl Snapshot {
    /// One more connection to the same file, opened as the first was, with
    /// its read transaction begun. On a rollback-journal database a read
    /// transaction holds a shared lock, which no writer can commit past:
    /// readers opened one after another all see the state the first saw.
    pub fn reader(&self, path: &Path) -> Result<Reader> {
        Ok(Reader {
            conn: connect(path, &self.file, self.copy.is_some(), true)?,
            _copy: self.copy.clone(),
        })
    }
}

/// Open `file` (the input `path`, or its private copy) the way every
/// connection here is opened: read-only in place, read-write on a copy
/// (SQLite must be able to replay the WAL there); then, after `BEGIN` when
/// asked, touch the schema so that locked, encrypted and corrupt files fail
/// at once, with a clear cause.
fn connect(path: &Path, file: &Path, copied: bool, begin: bool) -> Result<Connection> {
    let access = if copied {
        OpenFlags::SQLITE_OPEN_READ_WRITE
    } else {
        OpenFlags::SQLITE_OPEN_READ_ONLY
    };
    let fail = &error_of(path);
    let conn = Connection::open_with_flags(file, access | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(fail)?;
    conn.busy_timeout(Duration::from_secs(2)).map_err(fail)?;
    if begin {
        conn.execute_batch("BEGIN").map_err(fail)?;
    }
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })
    .map_err(fail)?;
    Ok(conn)
}

fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Map a SQLite error to a one-line cause.
pub fn cause(e: &rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            "database is locked by another process (a writer holds it); try again when the app is idle".into()
        }
        Some(ErrorCode::NotADatabase) => {
            "not a readable SQLite database (encrypted, e.g. with SQLCipher, or its header is damaged)".into()
        }
        Some(ErrorCode::DatabaseCorrupt) => "database is corrupt (SQLite: database disk image is malformed)".into(),
        Some(ErrorCode::CannotOpen) => "cannot open the database".into(),
        _ => {
            let s = e.to_string();
            s.lines().next().unwrap_or_default().to_string()
        }
    }
}

pub fn open(path: &Path) -> Result<Snapshot> {
    let mut head = [0u8; 100];
    {
        use std::io::Read;
        let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, &e))?;
        let n = f.read(&mut head).map_err(|e| Error::io(path, &e))?;
        if n < 16 || &head[..16] != HEADER {
            return Err(Error::input(
                path,
                "not a SQLite database (no SQLite header)",
            ));
        }
        if n < 100 {
            return Err(Error::input(
                path,
                format!(
                    "SQLite database is truncated ({n} bytes, shorter than its 100-byte header)"
                ),
            ));
        }
    }
    let wal_mode = head[18] == 2 || head[19] == 2;
    let wal = sidecar(path, "-wal");
    let journal = sidecar(path, "-journal");
    // A sidecar is copied with the database: a FIFO there would block the
    // copy forever, a device never end.
    for (side, suffix) in [(&wal, "-wal"), (&journal, "-journal")] {
        if let Ok(meta) = std::fs::metadata(side)
            && let Some(what) = super::not_regular(&meta)
        {
            return Err(Error::input(
                path,
                format!("its {suffix} is not a regular file ({what})"),
            ));
        }
    }
    let needs_copy = wal_mode || wal.exists() || journal.exists();
    let copy = if needs_copy {
        // Private copies that killed runs left behind go first.
        crate::cleanup::sweep(&std::env::temp_dir(), "");
        let dir = tempfile::Builder::new()
            .prefix(&crate::cleanup::tag())
            .tempdir()
            .map_err(|e| Error::input(path, format!("cannot create a private copy: {e}")))?;
        let dir = PrivateCopy {
            _registered: crate::cleanup::register(dir.path().to_path_buf()),
            dir,
        };
        let target = dir.dir.path().join("db");
        std::fs::copy(path, &target).map_err(|e| Error::io(path, &e))?;
        for (src, suffix) in [(&wal, "-wal"), (&journal, "-journal")] {
            if src.exists() {
                std::fs::copy(src, sidecar(&target, suffix)).map_err(|e| Error::io(src, &e))?;
            }
        }
        Some((std::sync::Arc::new(dir), target))
    } else {
        None
    };
    let (copy, file) = match copy {
        Some((dir, target)) => (Some(dir), target),
        None => (None, path.to_path_buf()),
    };
    let conn = connect(path, &file, copy.is_some(), false)?;
    quick_check(path, &conn)?;
    Ok(Snapshot { conn, file, copy })
}

/// Check the structure of the whole database (`PRAGMA quick_check`: every
/// b-tree page, table and index, without comparing index entries with
/// their rows) before anything is read from it. A damaged page that the
/// readers never touch (an index, another table) would otherwise go
/// unnoticed, and a repair would copy the damage and then fail on its own
/// output. A corrupt database is an input error naming SQLite's first
/// complaint.
fn quick_check(path: &Path, conn: &Connection) -> Result<()> {
    let first: String = conn
        .query_row("PRAGMA quick_check(1)", [], |r| r.get(0))
        .map_err(error_of(path))?;
    if first == "ok" {
        return Ok(());
    }
    let what = first
        .lines()
        .find(|l| !l.starts_with("***"))
        .unwrap_or(&first)
        .trim();
    Err(Error::input(
        path,
        format!("database is corrupt (PRAGMA quick_check: {what})"),
    ))
}

/// A column's value as text, whatever its storage class (`None` for NULL).
pub fn text(v: rusqlite::types::ValueRef<'_>) -> Option<String> {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => None,
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
    }
}

/// An error of `path`'s database as an input error with a one-line cause.
pub fn error_of(path: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |e| Error::input(path, cause(&e))
}

/// Names of the tables in the database.
pub fn tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut st =
        conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?;
    let rows = st.query_map([], |r| r.get::<_, String>(0))?;
    rows.collect()
}

/// Column names of a table.
pub fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    Ok(columns_typed(conn, table)?
        .into_iter()
        .map(|(name, _)| name)
        .collect())
}

/// Columns of a table or view with their declared types; empty when there
/// is no such table. Names match as SQLite matches them (ignoring ASCII
/// case).
pub fn columns_typed(conn: &Connection, table: &str) -> rusqlite::Result<Vec<(String, String)>> {
    let mut st = conn.prepare(&format!("PRAGMA table_info({})", quote_ident(table)))?;
    let rows = st.query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, String>(2)?)))?;
    rows.collect()
}

/// Quote an identifier for SQLite: never interpolate a name unquoted.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
