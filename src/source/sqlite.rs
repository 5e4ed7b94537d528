//! Forensic access to SQLite files.
//!
//! The database is evidence: nothing here writes to it, to its `-wal`,
//! `-shm` or `-journal`, or creates a file beside it. A plain `mode=ro`
//! open of a WAL database rewrites `-shm` and creates the `-wal`/`-shm` it
//! lacks; `immutable=1` ignores the WAL. So each file is opened the one
//! way that reads all of it and writes nothing:
//! - **in place, read-only** (`mode=ro`): a rollback-journal database with
//!   no `-wal` and no hot `-journal` (a read-only open takes shared locks
//!   and writes nothing; SQLite plays back only a journal whose first byte
//!   is not zero, [`journal_is_hot`]);
//! - **in place, read-only `-shm`** (`mode=ro&readonly_shm=1`): a WAL
//!   database with both its `-wal` and `-shm`. SQLite opens the `-shm`
//!   read-only: with no writer attached it rebuilds the WAL index in heap
//!   memory from the `-wal`; with one it reads the writer's index, under
//!   the usual read locks;
//! - **in place, immutable** (`immutable=1`): a WAL database without its
//!   `-shm` whose `-wal` adds nothing (absent, shorter than its header, no
//!   valid committed frame, or only frames the main file already holds:
//!   checkpointed, not yet reset; see [`wal_adds_nothing`]), or a
//!   rollback-journal database whose hot `-journal` holds only pages the
//!   main file has as they were (a crash before its transaction wrote the
//!   main file; see [`rollback_changes_nothing`]). The main file
//!   alone is then the database. Such an open takes no lock, so the main
//!   file's size and times are recorded, and [`Check::verify`] fails the
//!   read ("database changed while being read") if a writer came and wrote
//!   it meanwhile;
//! - **in place, the WAL index in memory** (`mode=ro&vfs=unix-none`, then
//!   `PRAGMA locking_mode=EXCLUSIVE` before the first read): a WAL database
//!   without its `-shm` whose `-wal` holds frames the main file lacks (an
//!   app's files copied without it, or its `-shm` deleted). In exclusive
//!   locking mode SQLite keeps the WAL index in heap memory, built from the
//!   `-wal`, and uses no `-shm`; the `unix-none` VFS makes the exclusive
//!   lock (which a read-only descriptor cannot take) a no-op; and no
//!   checkpoint runs on close (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`), so
//!   nothing is written to either file. With no lock taken, the main
//!   file's and the `-wal`'s stamps are checked as an immutable open's are.
//!   With its `-shm` gone no other connection is open on such a database
//!   (SQLite creates it on open), but an app in exclusive locking mode,
//!   whose index is in its own memory too;
//! - **a private copy** of the database with its `-journal`, in the
//!   temporary directory, read-write so that SQLite can roll it back there:
//!   only a hot `-journal` whose transaction had written the main file (a
//!   crash during a commit, or after its cache spilled), which SQLite must
//!   write the main file to play back. Reading it in place would take a
//!   VFS of chatfsck's own (the journal's pages laid over the main file's),
//!   which is unsafe code or C.
//!
//! The structure check (`PRAGMA quick_check`) runs on a connection of its
//! own, on a thread, while the readers read, and [`Check::verify`] waits
//! for it. A store whose readers read a table whole leaves that table out
//! ([`Snapshot::start_check`]: SQLite checks each page a reader reads, and
//! reading the chunk table twice made lint 1.4-1.5x slower); every
//! other store has the whole file checked. A source opened by `format` is
//! wrapped in [`Guarded`], which verifies when the source ends or fails;
//! lint verifies after a trace read on demand. A repair's copy passes
//! `PRAGMA quick_check` (`write::sqlite`), a full check of what was
//! copied; the input is checked only when the copy or its edit fails, to
//! tell damage in the input from a failed edit ([`Check::explain`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::error::{Error, Result};
use crate::model::Conversation;

pub const HEADER: &[u8; 16] = b"SQLite format 3\0";

/// How the connections of a snapshot open the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// The input, read-only (a rollback-journal database).
    ReadOnly,
    /// The input, read-only, its `-shm` opened read-only.
    ReadOnlyShm,
    /// The input's main file alone, with no lock.
    Immutable,
    /// The input, read-only, with no lock: the WAL index in heap memory.
    WalInHeap,
    /// The private copy, read-write.
    Copy,
}

/// An open, read-only view of a database and whatever keeps it alive.
pub struct Snapshot {
    pub conn: Connection,
    /// The file `conn` reads: the input, or the private copy.
    file: PathBuf,
    access: Access,
    /// The private copy, removed when the last holder is dropped.
    copy: Option<Arc<PrivateCopy>>,
    check: Arc<Check>,
    /// The header's write version (byte 18): 1 rollback journal, 2 WAL; a
    /// higher one is a format SQLite reads but never writes.
    write_version: u8,
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
    _copy: Option<Arc<PrivateCopy>>,
}

impl Snapshot {
    /// The header's write version (byte 18), as read when it was opened.
    pub fn write_version(&self) -> u8 {
        self.write_version
    }

    /// One more connection to the same file, opened as the first was, with
    /// its read transaction begun. On a rollback-journal database a read
    /// transaction holds a shared lock, which no writer can commit past:
    /// readers opened one after another all see the state the first saw.
    /// In WAL mode a read transaction keeps a checkpoint from overwriting
    /// what it reads; an immutable open and a WAL index in heap memory
    /// have no lock, and [`Check::verify`] tells whether the main file (and
    /// the `-wal`) was written meanwhile.
    pub fn reader(&self, path: &Path) -> Result<Reader> {
        Ok(Reader {
            conn: connect(path, &self.file, self.access, true)?,
            _copy: self.copy.clone(),
        })
    }

    /// Start the structure check, on a thread of its own, while the readers
    /// read: of every table but `read`, the tables the readers read whole
    /// ([`Check::start`]). A store that does not start it has it started
    /// in full when it is opened (`format`); a snapshot that is only
    /// copied has it run when verified.
    pub fn start_check(&self, read: &[&str]) {
        self.check.start(read)
    }

    /// What the end of the read must confirm (see [`Check`]).
    pub fn check(&self) -> Arc<Check> {
        self.check.clone()
    }

    /// Wait for the structure check, and confirm that no writer changed a
    /// database read without locks: an input error otherwise.
    pub fn verify(&self) -> Result<()> {
        self.check.verify()
    }

    /// Copy the database into `dest` as a file, where its main file alone
    /// is the database: a rollback-journal database read in place (under
    /// the shared lock of a read transaction, which no writer can commit
    /// past), or a main file read without locks (which [`Self::verify`]
    /// then vouches for). The kernel copies it, page cache to page cache;
    /// the backup API wrote it a page at a time, most of a store repair's
    /// time. `Ok(false)`, copying nothing: the database is more than its
    /// main file (a WAL's frames, a private copy), for the backup API.
    /// `dest_path` names `dest` in an error.
    pub fn copy_main_file(&self, dest: &std::fs::File, dest_path: &Path) -> Result<bool> {
        let out = |e: std::io::Error| Error::Output {
            path: dest_path.to_path_buf(),
            cause: format!("copying {}: {e}", self.file.display()),
        };
        match self.access {
            // Under the read transaction the connection holds since it
            // was opened.
            Access::Immutable | Access::ReadOnly => debug_assert!(!self.conn.is_autocommit()),
            Access::ReadOnlyShm | Access::WalInHeap | Access::Copy => return Ok(false),
        }
        std::fs::File::open(&self.file)
            .map_err(|e| Error::io(&self.file, &e))
            .and_then(|mut from| super::copy_all(&mut from, &mut &*dest).map_err(out))
            .map(|_| true)
    }

    /// Copy the database with SQLite's backup API into a new file at
    /// `dest`, inside the read transaction the snapshot's connection holds
    /// since it was opened. Without one, each step of the backup (100
    /// pages) begins a read of its own; on a WAL database opened with a
    /// read-only `-shm` SQLite takes every such read for a change to the
    /// database and starts the backup again from its first page, so a
    /// store of more than 100 pages was never copied: the repair ran
    /// forever.
    pub fn backup_to(&self, dest: &Path) -> rusqlite::Result<()> {
        debug_assert!(!self.conn.is_autocommit());
        self.conn.backup(rusqlite::MAIN_DB, dest, None)
    }
}

/// What a read of a snapshot must confirm at its end: that the structure
/// check (`PRAGMA quick_check`, run on a thread of its own while the
/// readers read) found no damage, and, for files read without locks (an
/// immutable main file; a main file and `-wal` with the WAL index in heap
/// memory), that their size and times are still those they had when the
/// database was opened.
pub struct Check {
    path: PathBuf,
    /// The files read without a lock (the main file, the `-wal`), as they
    /// were when opened.
    stamps: Vec<Stamped>,
    quick: Mutex<Quick>,
}

enum Quick {
    /// Its connection (its read transaction begun with the snapshot's),
    /// not started yet.
    Pending {
        conn: Connection,
        copy: Option<Arc<PrivateCopy>>,
    },
    Running {
        thread: std::thread::JoinHandle<std::result::Result<(), String>>,
        interrupt: rusqlite::InterruptHandle,
    },
    Done(std::result::Result<(), String>),
}

impl Check {
    /// The structure check's verdict (waiting for it), then the main file's
    /// stamp: the first complaint as an input error of the database.
    pub fn verify(&self) -> Result<()> {
        self.structure()?;
        self.verify_unchanged()
    }

    /// The stamps alone, for files read without locks: that no writer
    /// wrote them since they were opened.
    pub fn verify_unchanged(&self) -> Result<()> {
        if self
            .stamps
            .iter()
            .any(|(file, stamp, of)| of(file) != *stamp)
        {
            return Err(Error::input(
                &self.path,
                "database changed while being read; run again when the app is idle",
            ));
        }
        Ok(())
    }

    /// Start the structure check on its thread, if it has not started:
    /// of the whole database, or, with `read` (tables the readers read
    /// whole, which SQLite checks page by page as it reads them), of every
    /// other table with its indexes (`PRAGMA quick_check(TABLE)`, which
    /// leaves out the freelist and the page accounting across tables). A
    /// check never started runs in full when verified.
    pub fn start(&self, read: &[&str]) {
        let mut quick = self.lock();
        if let Quick::Pending { .. } = &*quick {
            let Quick::Pending { conn, copy } = std::mem::replace(&mut *quick, Quick::Done(Ok(())))
            else {
                unreachable!()
            };
            let interrupt = conn.get_interrupt_handle();
            let read: Vec<String> = read.iter().map(|t| t.to_ascii_lowercase()).collect();
            let thread = std::thread::Builder::new()
                .name("quick_check".into())
                .spawn(move || {
                    let _copy = copy;
                    structure(&conn, &read)
                });
            *quick = match thread {
                Ok(thread) => Quick::Running { thread, interrupt },
                Err(e) => Quick::Done(Err(format!("cannot start the structure check: {e}"))),
            };
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Quick> {
        self.quick
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn structure(&self) -> Result<()> {
        self.start(&[]);
        let mut quick = self.lock();
        if let Quick::Running { .. } = &*quick {
            let Quick::Running { thread, .. } = std::mem::replace(&mut *quick, Quick::Done(Ok(())))
            else {
                unreachable!()
            };
            let verdict = thread
                .join()
                .unwrap_or_else(|_| Err("the structure check failed".into()));
            *quick = Quick::Done(verdict);
        }
        match &*quick {
            Quick::Done(Err(cause)) => Err(Error::input(&self.path, cause.clone())),
            _ => Ok(()),
        }
    }

    /// An error met while reading, or the structure check's complaint
    /// when it has one: a read that failed on a damaged page is reported
    /// with the check's cause, which names the damage.
    pub fn explain(&self, err: Error) -> Error {
        match self.structure() {
            Err(damage) => damage,
            Ok(()) => err,
        }
    }
}

impl Drop for Check {
    /// A read that stopped early (an error elsewhere, `--conversation`)
    /// does not wait for the whole check: it is interrupted, and its thread
    /// (which holds the private copy alive) joined.
    fn drop(&mut self) {
        let quick = self
            .quick
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Quick::Running { interrupt, .. } = &*quick {
            interrupt.interrupt();
            if let Quick::Running { thread, .. } = std::mem::replace(quick, Quick::Done(Ok(()))) {
                let _ = thread.join();
            }
        }
    }
}

/// A file, its stamp when the database was opened, and how to take it.
type Stamped = (PathBuf, Option<Stamp>, fn(&Path) -> Option<Stamp>);

/// A file's size, times and identity: what a write changes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    #[cfg(unix)]
    changed: (i64, i64),
    #[cfg(unix)]
    inode: (u64, u64),
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt;
        Some(Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            #[cfg(unix)]
            changed: (meta.ctime(), meta.ctime_nsec()),
            #[cfg(unix)]
            inode: (meta.dev(), meta.ino()),
        })
    }

    /// A `-wal`'s stamp, without its change time (zero): SQLite run as
    /// root gives the `-wal` it opens the main file's owner, which sets it.
    fn of_wal(path: &Path) -> Option<Stamp> {
        Some(Stamp {
            #[cfg(unix)]
            changed: (0, 0),
            ..Stamp::of(path)?
        })
    }
}

/// A source read from a snapshot: when it ends, or fails, the snapshot's
/// [`Check`] is verified, so that a damaged or changed database is an
/// input error rather than a report on what was read of it.
pub struct Guarded<S: ?Sized> {
    pub inner: Box<S>,
    check: Option<Arc<Check>>,
}

impl<S: super::Source + ?Sized> Guarded<S> {
    pub fn new(inner: Box<S>, check: Arc<Check>) -> Self {
        Guarded {
            inner,
            check: Some(check),
        }
    }
}

impl<S: super::Source + ?Sized> super::Source for Guarded<S> {
    fn info(&self) -> Arc<super::SourceInfo> {
        self.inner.info()
    }
    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        match self.inner.next_conversation() {
            Some(Err(e)) => Some(Err(match &self.check {
                Some(check) => check.explain(e),
                None => e,
            })),
            Some(ok) => Some(ok),
            // Once: a caller that asks again after the error is told the
            // source has ended.
            None => match self.check.take()?.verify() {
                Ok(()) => None,
                Err(e) => Some(Err(e)),
            },
        }
    }
    fn is_trace(&self) -> bool {
        self.inner.is_trace()
    }
    fn done(&mut self, conv: Conversation) {
        self.inner.done(conv)
    }
    fn prepare_with(&mut self, work: super::Prepare) {
        self.inner.prepare_with(work)
    }
    fn prepared(&mut self) -> Option<super::Prepared> {
        self.inner.prepared()
    }
}

/// Open `file` (the input `path`, or its private copy) the way every
/// connection of a snapshot is opened (see the module documentation);
/// then, after `BEGIN` when asked, touch the schema so that locked,
/// encrypted and corrupt files fail at once, with a clear cause.
fn connect(path: &Path, file: &Path, access: Access, begin: bool) -> Result<Connection> {
    let fail = &error_of(path);
    let flags = OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let conn = match access {
        Access::Copy => {
            Connection::open_with_flags(file, flags | OpenFlags::SQLITE_OPEN_READ_WRITE)
        }
        Access::ReadOnly => Connection::open_with_flags(
            uri(file, "mode=ro"),
            flags | OpenFlags::SQLITE_OPEN_READ_ONLY,
        ),
        Access::ReadOnlyShm => Connection::open_with_flags(
            uri(file, "mode=ro&readonly_shm=1"),
            flags | OpenFlags::SQLITE_OPEN_READ_ONLY,
        ),
        Access::Immutable => Connection::open_with_flags(
            uri(file, "mode=ro&immutable=1"),
            flags | OpenFlags::SQLITE_OPEN_READ_ONLY,
        ),
        Access::WalInHeap => Connection::open_with_flags(
            uri(file, "mode=ro&vfs=unix-none"),
            flags | OpenFlags::SQLITE_OPEN_READ_ONLY,
        ),
    }
    .map_err(fail)?;
    if access == Access::WalInHeap {
        // Both before the first read: the pager opens the WAL then.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .map_err(fail)?;
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
            .map_err(fail)?;
    }
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

/// A `file:` URI of `path` with `query`: `%`, `?` and `#` escaped, an
/// absolute path after an empty authority.
fn uri(path: &Path, query: &str) -> PathBuf {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path.to_string_lossy().into_owned().into_bytes();
    let mut out = b"file:".to_vec();
    if bytes.first() == Some(&b'/') {
        out.extend_from_slice(b"//");
    }
    for b in bytes {
        match b {
            b'%' => out.extend_from_slice(b"%25"),
            b'?' => out.extend_from_slice(b"%3f"),
            b'#' => out.extend_from_slice(b"%23"),
            _ => out.push(b),
        }
    }
    out.push(b'?');
    out.extend_from_slice(query.as_bytes());
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        PathBuf::from(std::ffi::OsString::from_vec(out))
    }
    #[cfg(not(unix))]
    PathBuf::from(String::from_utf8_lossy(&out).into_owned())
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
    let shm = sidecar(path, "-shm");
    let journal = sidecar(path, "-journal");
    // A sidecar may be read or copied: a FIFO there would block forever,
    // a device never end.
    for (side, suffix) in [(&wal, "-wal"), (&shm, "-shm"), (&journal, "-journal")] {
        if let Ok(meta) = std::fs::metadata(side)
            && let Some(what) = super::not_regular(&meta)
        {
            return Err(Error::input(
                path,
                format!("its {suffix} is not a regular file ({what})"),
            ));
        }
    }
    // Taken before anything is read: a write after it changes them.
    let stamps: [Stamped; 2] = [
        (path.to_path_buf(), Stamp::of(path), Stamp::of),
        (wal.clone(), Stamp::of_wal(&wal), Stamp::of_wal),
    ];
    let hot = journal_is_hot(&journal).map_err(|e| Error::io(&journal, &e))?;
    let access = if hot
        && !(!wal_mode
            && !wal.exists()
            && rollback_changes_nothing(path, &head, &journal)
                .map_err(|e| Error::io(&journal, &e))?)
    {
        Access::Copy
    } else if hot {
        // The main file alone is the database its rollback would leave.
        Access::Immutable
    } else if !wal_mode && !wal.exists() {
        Access::ReadOnly
    } else if wal.exists() && shm.exists() {
        Access::ReadOnlyShm
    } else if !wal.exists()
        || wal_adds_nothing(path, &head, &wal).map_err(|e| Error::io(&wal, &e))?
    {
        Access::Immutable
    } else {
        Access::WalInHeap
    };
    // Private copies that killed runs left behind go first (whether or not
    // this run makes one: a killed run of an older build made more).
    crate::cleanup::sweep(&std::env::temp_dir(), "");
    let copy = if access == Access::Copy {
        let tmp = std::env::temp_dir();
        let tag = crate::cleanup::tag();
        let (registered, dir) = crate::cleanup::create_registered(&tmp, &tag, || {
            tempfile::Builder::new().prefix(&tag).tempdir_in(&tmp)
        })
        .map_err(|e| Error::input(path, format!("cannot create a private copy: {e}")))?;
        let dir = PrivateCopy {
            _registered: registered,
            dir,
        };
        let target = dir.dir.path().join("db");
        std::fs::copy(path, &target).map_err(|e| Error::io(path, &e))?;
        for (src, suffix) in [(&wal, "-wal"), (&journal, "-journal")] {
            if src.exists() {
                std::fs::copy(src, sidecar(&target, suffix)).map_err(|e| Error::io(src, &e))?;
            }
        }
        Some((Arc::new(dir), target))
    } else {
        None
    };
    let (copy, file) = match copy {
        Some((dir, target)) => (Some(dir), target),
        None => (None, path.to_path_buf()),
    };
    // Its read transaction is held from the start, as a reader's is: a
    // store read a query at a time (a Phoenix span, an opencode session)
    // sees one state of the database from its first query to its last,
    // and SQLite does not look for a journal and a WAL before each one.
    let conn = connect(path, &file, access, true)?;
    let check = Arc::new(Check {
        path: path.to_path_buf(),
        stamps: match access {
            Access::Immutable => stamps[..1].to_vec(),
            Access::WalInHeap => stamps.to_vec(),
            _ => Vec::new(),
        },
        quick: Mutex::new(Quick::Pending {
            conn: connect(path, &file, access, true)?,
            copy: copy.clone(),
        }),
    });
    Ok(Snapshot {
        conn,
        file,
        access,
        copy,
        check,
        write_version: head[18],
    })
}

/// The structure check: `PRAGMA quick_check` (every b-tree page, table
/// and index, without comparing index entries with their rows) of the
/// whole database, or of every table but those in `read` (lower case).
/// A damaged page that the readers never touch (an index, another table)
/// would otherwise go unnoticed, and a repair would copy the damage and
/// then fail on its own output. The first complaint, as a cause.
fn structure(conn: &Connection, read: &[String]) -> std::result::Result<(), String> {
    let first = |sql: &str| -> std::result::Result<String, String> {
        conn.query_row(sql, [], |r| r.get(0)).map_err(|e| cause(&e))
    };
    let mut verdict = "ok".to_string();
    if read.is_empty() {
        verdict = first("PRAGMA quick_check(1)")?;
    } else {
        let mut names = tables(conn).map_err(|e| cause(&e))?;
        names.push("sqlite_master".into());
        for name in names {
            if read.contains(&name.to_ascii_lowercase()) {
                continue;
            }
            verdict = first(&format!("PRAGMA quick_check({})", quote_ident(&name)))?;
            if verdict != "ok" {
                break;
            }
        }
    }
    if verdict == "ok" {
        return Ok(());
    }
    let what = verdict
        .lines()
        .find(|l| !l.starts_with("***"))
        .unwrap_or(&verdict)
        .trim();
    Err(format!("database is corrupt (PRAGMA quick_check: {what})"))
}

/// Whether a `-journal` is one SQLite must play back before it reads the
/// database: there, and its first byte not zero (SQLite's own test). An
/// app in `journal_mode=TRUNCATE` leaves an empty `-journal` after every
/// commit, one in `PERSIST` mode a journal whose header is zeroed: neither
/// holds anything to roll back, and a read-only open reads the database
/// in place beside it without writing to it. Neither does a journal
/// SQLite has not yet synced (it writes the header's magic number when
/// it syncs, before the main file's first write). A hot journal (a crash
/// in the middle of a write), or one a writer is filling now, is read
/// past only when its playback would change nothing
/// ([`rollback_changes_nothing`]); otherwise the database is read from a
/// private copy, rolled back there.
fn journal_is_hot(journal: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut f = match std::fs::File::open(journal) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let mut first = [0u8; 1];
    Ok(f.read(&mut first)? == 1 && first[0] != 0)
}

/// The page size a database header gives (bytes 16-17; 1 stands for
/// 65,536).
fn page_size_of(head: &[u8; 100]) -> usize {
    match u16::from_be_bytes([head[16], head[17]]) {
        1 => 65536,
        n => n as usize,
    }
}

/// The magic number every rollback journal header starts with.
const JOURNAL_MAGIC: [u8; 8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];

/// Whether SQLite's playback of a hot `-journal` would leave the main
/// file as it is, so that the main file alone is the database: the
/// transaction had not written the main file when it stopped. SQLite
/// writes the original of each page it changes to the journal first, and
/// the page itself only when the transaction commits or its cache
/// overflows; a crash before that (most of a transaction's life) leaves
/// the main file whole. Read as SQLite's playback reads the journal
/// (<https://www.sqlite.org/fileformat.html#the_rollback_journal>,
/// `pager_playback` in `pager.c`), and more widely wherever that is
/// simpler: the main file is the size the first header says the database
/// had; no super-journal is named; and every page record of every
/// segment, to the end of the file or the first header or page number
/// SQLite stops at, equals the main file's page, whatever its checksum
/// (SQLite stops at a bad one, and skips a segment whose record count is
/// not yet written). Any doubt is `false`: the database is read from a
/// private copy that SQLite rolls back.
fn rollback_changes_nothing(db: &Path, head: &[u8; 100], journal: &Path) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let mut j = std::fs::File::open(journal)?;
    let len = j.metadata()?.len();
    let mut header = [0u8; 28];
    if read_full(&mut j, &mut header)? < header.len() || header[..8] != JOURNAL_MAGIC {
        return Ok(false);
    }
    let (pages, sector, page_size) = (
        u64::from(be(&header[16..20])),
        u64::from(be(&header[20..24])),
        be(&header[24..28]) as usize,
    );
    let main_page = page_size_of(head);
    if !(32..=65536).contains(&sector)
        || !sector.is_power_of_two()
        || !(512..=65536).contains(&page_size)
        || !page_size.is_power_of_two()
        || page_size != main_page
    {
        return Ok(false);
    }
    // A super-journal named at the end: a transaction over several
    // databases, whose playback depends on another file.
    let mut tail = [0u8; 8];
    if len >= 16 {
        j.seek(SeekFrom::Start(len - 8))?;
        j.read_exact(&mut tail)?;
        if tail == JOURNAL_MAGIC {
            return Ok(false);
        }
    }
    let mut main = std::fs::File::open(db)?;
    let page_bytes = page_size as u64;
    if main.metadata()?.len() != pages * page_bytes {
        return Ok(false);
    }
    // The page SQLite never writes (the one holding the lock bytes): a
    // record for it ends the playback, as page 0 does.
    let pending_byte_page = 0x4000_0000 / page_bytes + 1;
    let record = 8 + page_bytes;
    let mut rec = vec![0u8; 8 + page_size];
    let mut theirs = vec![0u8; page_size];
    let mut at = 0u64;
    loop {
        // A segment: its header, then its records.
        if at + sector > len {
            return Ok(true);
        }
        j.seek(SeekFrom::Start(at))?;
        if read_full(&mut j, &mut header)? < header.len() || header[..8] != JOURNAL_MAGIC {
            return Ok(true);
        }
        let count = match be(&header[8..12]) {
            // Unknown (written without syncs), or not yet written (the
            // segment being filled): every record to the end of the file.
            0 | u32::MAX => u64::MAX,
            n => u64::from(n),
        };
        at += sector;
        let mut read = 0;
        while read < count {
            if at + record > len {
                return Ok(true);
            }
            j.seek(SeekFrom::Start(at))?;
            j.read_exact(&mut rec)?;
            let page = u64::from(be(&rec[..4]));
            if page == 0 || page == pending_byte_page {
                return Ok(true);
            }
            if page <= pages {
                main.seek(SeekFrom::Start((page - 1) * page_bytes))?;
                main.read_exact(&mut theirs)?;
                if rec[4..4 + page_size] != theirs[..] {
                    return Ok(false);
                }
            }
            at += record;
            read += 1;
        }
        at = at.div_ceil(sector) * sector;
    }
}

/// Whether the main file alone is the database, whatever the `-wal` beside
/// it holds: SQLite would read no frame of it (it is shorter than its
/// header, the header is not a valid WAL header, or no frame is valid and
/// committed), or every page its committed frames hold is already in the
/// main file, byte for byte, and the main file is as long as the last
/// commit says (it was checkpointed and not yet reset). Frames are valid as
/// SQLite's recovery reads them (<https://www.sqlite.org/fileformat2.html#walformat>):
/// the header's salts, and the checksum chained from the header through
/// every frame before. Anything else (a frame the main file lacks) is
/// `false`: the WAL must be read.
fn wal_adds_nothing(db: &Path, head: &[u8; 100], wal: &Path) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let mut f = std::io::BufReader::with_capacity(1 << 16, std::fs::File::open(wal)?);
    let mut header = [0u8; 32];
    if read_full(&mut f, &mut header)? < 32 {
        return Ok(true);
    }
    let magic = be(&header[0..4]);
    let page_size = be(&header[8..12]) as usize;
    if magic & !1 != 0x377f_0682
        || be(&header[4..8]) != 3_007_000
        || !(512..=65536).contains(&page_size)
        || !page_size.is_power_of_two()
    {
        return Ok(true);
    }
    let big = magic & 1 == 1;
    let mut sum = checksum(big, &header[..24], (0, 0));
    if sum != (be(&header[24..28]), be(&header[28..32])) {
        return Ok(true);
    }
    // The latest committed frame of each page (by offset), and the size of
    // the database at the last commit.
    let mut committed = std::collections::HashMap::new();
    let mut pending = Vec::new();
    let mut size = None;
    let mut frame = vec![0u8; 24 + page_size];
    let mut offset = 32u64;
    while read_full(&mut f, &mut frame)? == frame.len() {
        let page = be(&frame[0..4]);
        if page == 0 || frame[8..16] != header[16..24] {
            break;
        }
        sum = checksum(big, &frame[..8], sum);
        sum = checksum(big, &frame[24..], sum);
        if sum != (be(&frame[16..20]), be(&frame[20..24])) {
            break;
        }
        pending.push((page, offset + 24));
        let commit = be(&frame[4..8]);
        if commit != 0 {
            committed.extend(pending.drain(..));
            size = Some(commit);
        }
        offset += frame.len() as u64;
    }
    let Some(size) = size else {
        return Ok(true);
    };
    let main_page = page_size_of(head);
    let mut main = std::fs::File::open(db)?;
    if main_page != page_size || main.metadata()?.len() != u64::from(size) * page_size as u64 {
        return Ok(false);
    }
    let mut ours = vec![0u8; page_size];
    let mut theirs = vec![0u8; page_size];
    let mut wal = f.into_inner();
    for (page, at) in committed {
        if page > size {
            continue;
        }
        wal.seek(SeekFrom::Start(at))?;
        wal.read_exact(&mut ours)?;
        main.seek(SeekFrom::Start(u64::from(page - 1) * page_size as u64))?;
        main.read_exact(&mut theirs)?;
        if ours != theirs {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Read until `buf` is full or the file ends; how many bytes were read.
fn read_full(f: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// SQLite's WAL checksum of `data` (a multiple of 8 bytes), chained from
/// `sum`: 32-bit words big-endian when the magic number's low bit is set.
fn checksum(big: bool, data: &[u8], sum: (u32, u32)) -> (u32, u32) {
    let (mut s1, mut s2) = sum;
    for w in data.chunks_exact(8) {
        let word = |b: &[u8]| {
            let b = [b[0], b[1], b[2], b[3]];
            if big {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        s1 = s1.wrapping_add(word(&w[0..4])).wrapping_add(s2);
        s2 = s2.wrapping_add(word(&w[4..8])).wrapping_add(s1);
    }
    (s1, s2)
}

/// A column's value as text, whatever its storage class (`None` for NULL).
pub fn text(v: rusqlite::types::ValueRef<'_>) -> Option<String> {
    text_ref(v).map(std::borrow::Cow::into_owned)
}

/// [`text`], borrowed from the row where the value is valid UTF-8 text.
/// Checked by the standard library's validator first: the lossy
/// conversion walks every byte more slowly (a sixth of a reader thread's
/// time on gbrain's tables).
pub fn text_ref(v: rusqlite::types::ValueRef<'_>) -> Option<std::borrow::Cow<'_, str>> {
    use rusqlite::types::ValueRef;
    use std::borrow::Cow;
    match v {
        ValueRef::Null => None,
        ValueRef::Integer(i) => Some(Cow::Owned(i.to_string())),
        ValueRef::Real(f) => Some(Cow::Owned(f.to_string())),
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(match std::str::from_utf8(t) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(t),
        }),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A WAL-mode database whose last `rows` inserts stay in its `-wal`
    /// (no checkpoint on close), without its `-shm`.
    fn wal_db(dir: &Path, rows: u32) -> PathBuf {
        let db = dir.join("t.db");
        let conn = Connection::open(&db).unwrap();
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE t (x); PRAGMA wal_checkpoint(TRUNCATE);",
        )
        .unwrap();
        for i in 0..rows {
            conn.execute("INSERT INTO t VALUES (?1)", [i]).unwrap();
        }
        drop(conn);
        let _ = std::fs::remove_file(sidecar(&db, "-shm"));
        db
    }

    fn adds_nothing(db: &Path) -> bool {
        let mut head = [0u8; 100];
        head.copy_from_slice(&std::fs::read(db).unwrap()[..100]);
        wal_adds_nothing(db, &head, &sidecar(db, "-wal")).unwrap()
    }

    fn rows(db: &Path) -> i64 {
        open(db)
            .unwrap()
            .conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap()
    }

    /// Committed frames the main file lacks must be read; the same frames
    /// once checkpointed (still in the WAL, not yet reset) add nothing, and
    /// neither do frames past the last commit or a torn frame.
    #[test]
    fn a_wal_adds_nothing_only_when_the_main_file_holds_its_frames() {
        let d = tempfile::tempdir().unwrap();
        let db = wal_db(d.path(), 3);
        let wal = sidecar(&db, "-wal");
        assert!(std::fs::metadata(&wal).unwrap().len() > 32);
        assert!(!adds_nothing(&db));
        assert_eq!(rows(&db), 3);
        // A torn last frame: the frames before it still count.
        let mut bytes = std::fs::read(&wal).unwrap();
        let n = bytes.len();
        bytes[n - 1] ^= 0xff;
        std::fs::write(&wal, &bytes).unwrap();
        assert!(!adds_nothing(&db));
        assert_eq!(rows(&db), 2);
        // Only the header is valid: nothing to read.
        bytes.truncate(32 + 24 + 4096 - 1);
        std::fs::write(&wal, &bytes).unwrap();
        assert!(adds_nothing(&db));
        std::fs::write(&wal, b"").unwrap();
        assert!(adds_nothing(&db));
        // Checkpointed, not reset: the main file holds every frame.
        let d = tempfile::tempdir().unwrap();
        let db = wal_db(d.path(), 3);
        let conn = Connection::open(&db).unwrap();
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE);")
            .unwrap();
        drop(conn);
        std::fs::remove_file(sidecar(&db, "-shm")).unwrap();
        assert!(std::fs::metadata(sidecar(&db, "-wal")).unwrap().len() > 32);
        assert!(adds_nothing(&db));
        assert_eq!(rows(&db), 3);
    }

    /// A database read without locks (immutable) and written meanwhile is
    /// an error at the end of the read, not a report on torn data.
    #[test]
    fn a_database_written_during_an_immutable_read_fails_the_read() {
        let d = tempfile::tempdir().unwrap();
        let db = wal_db(d.path(), 0);
        std::fs::remove_file(sidecar(&db, "-wal")).unwrap();
        let snap = open(&db).unwrap();
        assert_eq!(snap.access, Access::Immutable);
        snap.verify().unwrap();
        let snap = open(&db).unwrap();
        let conn = Connection::open(d.path().join("t.db")).unwrap();
        conn.execute_batch("INSERT INTO t VALUES (1); PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
        let err = snap.verify().unwrap_err().to_string();
        assert!(err.contains("database changed while being read"), "{err}");
    }

    /// The journal walk on journals made by hand: what SQLite's playback
    /// would put back, against the main file.
    #[test]
    fn a_rollback_changes_nothing_only_when_every_page_is_as_it_was() {
        const PAGE: usize = 1024;
        let d = tempfile::tempdir().unwrap();
        let (db, journal) = (d.path().join("t.db"), d.path().join("t.db-journal"));
        let mut head = [0u8; 100];
        head[16..18].copy_from_slice(&(PAGE as u16).to_be_bytes());
        let page = |n: u8| vec![n; PAGE];
        // A journal of one segment: its header (sector 512), then records.
        let make = |pages: u32, nrec: u32, records: &[(u32, Vec<u8>)], tail: &[u8]| {
            let mut j = JOURNAL_MAGIC.to_vec();
            for v in [nrec, 7, pages, 512, PAGE as u32] {
                j.extend(v.to_be_bytes());
            }
            j.resize(512, 0);
            for (n, data) in records {
                j.extend(n.to_be_bytes());
                j.extend(data);
                j.extend([0u8; 4]);
            }
            j.extend(tail);
            std::fs::write(&journal, j).unwrap();
        };
        std::fs::write(&db, [page(1), page(2), page(3)].concat()).unwrap();
        let nothing_with =
            |head: &[u8; 100]| rollback_changes_nothing(&db, head, &journal).unwrap();
        let nothing = || nothing_with(&head);
        make(3, 2, &[(2, page(2)), (3, page(3))], &[]);
        assert!(nothing(), "every page as it was");
        make(3, u32::MAX, &[(2, page(2)), (3, page(9))], &[]);
        assert!(!nothing(), "page 3 changed");
        make(3, 0, &[(2, page(2)), (3, page(9))], &[]);
        assert!(!nothing(), "a segment not yet counted is read to the end");
        make(2, 1, &[(2, page(2))], &[]);
        assert!(!nothing(), "the database grew: SQLite would truncate it");
        make(3, 3, &[(2, page(2)), (0, page(0)), (3, page(9))], &[]);
        assert!(nothing(), "page 0 ends the playback");
        make(3, 2, &[(2, page(2)), (4, page(9))], &[]);
        assert!(nothing(), "a page past the old size is not played back");
        make(3, 1, &[(2, page(2))], &JOURNAL_MAGIC);
        assert!(!nothing(), "a super-journal is named");
        let mut other = head;
        other[16..18].copy_from_slice(&2048u16.to_be_bytes());
        make(3, 1, &[(2, page(2))], &[]);
        assert!(
            !nothing_with(&other),
            "the journal's page size is not the database's"
        );
    }

    /// The snapshot's own connection holds its read transaction from the
    /// open: queries made one at a time (a Phoenix span, an opencode
    /// session) all see the state the first saw, and on a rollback-mode
    /// database no writer commits past it meanwhile.
    #[test]
    fn the_snapshot_connection_sees_one_state_of_the_database() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("t.db");
        Connection::open(&db)
            .unwrap()
            .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
            .unwrap();
        let snap = open(&db).unwrap();
        assert_eq!(snap.access, Access::ReadOnly);
        // The structure check's connection, which holds a read
        // transaction of its own, is done and gone.
        snap.start_check(&[]);
        snap.verify().unwrap();
        let count = || -> i64 {
            snap.conn
                .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(count(), 1);
        let writer = Connection::open(&db).unwrap();
        writer.busy_timeout(Duration::ZERO).unwrap();
        let err = writer
            .execute_batch("INSERT INTO t VALUES (2);")
            .unwrap_err();
        assert_eq!(err.sqlite_error_code(), Some(ErrorCode::DatabaseBusy));
        assert_eq!(count(), 1);
        drop(snap);
        writer.execute_batch("INSERT INTO t VALUES (2);").unwrap();
    }

    /// A WAL with frames and no `-shm` is read in place, the WAL index in
    /// memory: every row, nothing created beside it, no byte or time of
    /// either file changed; a writer that appends to the `-wal` meanwhile
    /// fails the read.
    #[test]
    fn a_wal_without_its_shm_is_read_in_place_and_watched() {
        let d = tempfile::tempdir().unwrap();
        let db = wal_db(d.path(), 3);
        let files = || {
            let mut v: Vec<_> = std::fs::read_dir(d.path())
                .unwrap()
                .map(|e| {
                    let p = e.unwrap().path();
                    let m = std::fs::metadata(&p).unwrap();
                    (p.clone(), std::fs::read(&p).unwrap(), m.modified().unwrap())
                })
                .collect();
            v.sort();
            v
        };
        let before = files();
        assert_eq!(before.len(), 2);
        let snap = open(&db).unwrap();
        assert_eq!(snap.access, Access::WalInHeap);
        assert!(snap.copy.is_none());
        let reader = snap.reader(&db).unwrap();
        for conn in [&snap.conn, &reader.conn] {
            let n: i64 = conn
                .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
                .unwrap();
            assert_eq!(n, 3);
        }
        snap.verify().unwrap();
        drop((snap, reader));
        assert_eq!(before, files());
        let snap = open(&db).unwrap();
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch("INSERT INTO t VALUES (4);").unwrap();
        let err = snap.verify().unwrap_err().to_string();
        assert!(err.contains("database changed while being read"), "{err}");
    }
}
