//! Atomic output: write to a temporary file beside the destination, then
//! rename it into place, so an interrupted repair leaves no partial output.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::out_err;
use crate::error::{Error, Result};

pub struct Atomic {
    tmp: tempfile::NamedTempFile,
    /// The temporary file is also removed if the run is interrupted.
    _registered: crate::cleanup::Registered,
}

impl Atomic {
    /// A temporary file in the destination's directory (so the final rename
    /// stays on one filesystem), named after the destination.
    pub fn new(dest: &Path) -> Result<Atomic> {
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Leftovers of killed runs go first: those of every destination in
        // this directory, once a run (a tree repair writes thousands of
        // files into a few directories).
        if first_visit(dir) {
            crate::cleanup::sweep_temps(dir);
        }
        let prefix = format!(".{name}.{}", crate::cleanup::tag());
        // Made and registered at once: an interrupt at any instant finds it.
        let (registered, tmp) = crate::cleanup::create_registered(dir, &prefix, || {
            tempfile::Builder::new()
                .prefix(&prefix)
                .suffix(".chatfsck-tmp")
                .tempfile_in(dir)
        })
        .map_err(|e| out_err(dest, cannot_write_in(dir, &e)))?;
        Ok(Atomic {
            _registered: registered,
            tmp,
        })
    }

    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// The temporary file, to write to.
    pub fn file(&self) -> &File {
        self.tmp.as_file()
    }

    pub fn writer(&self, dest: &Path) -> Result<BufWriter<File>> {
        let f = self
            .tmp
            .as_file()
            .try_clone()
            .map_err(|e| out_err(dest, e))?;
        Ok(BufWriter::with_capacity(256 * 1024, f))
    }

    /// Start writing what the file holds to disk, for a caller with more
    /// to do before [`Atomic::commit`] (a SQLite copy, edited and checked
    /// after it was copied): run on a thread of its own, it leaves the
    /// commit's flush only what was written since. Nothing in a batch,
    /// which flushes its file system once at the end. Its error must be
    /// reported: after a flush that failed, the commit's may succeed.
    pub fn flush_early(&self, dest: &Path) -> Result<()> {
        if BATCHED.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.tmp.as_file().sync_data().map_err(|e| out_err(dest, e))
    }

    /// Flush to disk, give the copy the input's permissions, and rename it
    /// into place.
    pub fn commit(self, dest: &Path, force: bool, like: Option<&Path>) -> Result<()> {
        self.prepare(dest, like)?;
        // The registration is dropped once the lock is given back.
        let (_registration, result) = crate::cleanup::atomically(|| self.persist(dest, force));
        result
    }

    /// [`Atomic::commit`]'s first half: give the copy the permissions of
    /// `like` and flush it to disk (unless in a [`Batch`]).
    pub fn prepare(&self, dest: &Path, like: Option<&Path>) -> Result<()> {
        if let Some(meta) = like.and_then(|l| std::fs::metadata(l).ok()) {
            std::fs::set_permissions(self.tmp.path(), meta.permissions())
                .map_err(|e| out_err(dest, e))?;
        }
        if !BATCHED.load(Ordering::Relaxed) {
            self.tmp
                .as_file()
                .sync_all()
                .map_err(|e| out_err(dest, e))?;
        }
        Ok(())
    }

    /// [`Atomic::commit`]'s second half, the rename, for a caller that
    /// already holds the interrupt handler off
    /// ([`crate::cleanup::atomically`]) to put more than this file in place.
    /// The temporary name's registration comes back with the result: drop
    /// it once the lock is given back (dropping it takes the lock).
    pub fn persist(self, dest: &Path, force: bool) -> (crate::cleanup::Registered, Result<()>) {
        let Atomic {
            tmp,
            _registered: registered,
        } = self;
        let result = if force {
            tmp.persist(dest).map(|_| ())
        } else {
            tmp.persist_noclobber(dest).map(|_| ())
        };
        (registered, result.map_err(|e| out_err(dest, e.error)))
    }
}

/// Rename a finished file over `to`, out of the interrupt handler's way
/// ([`crate::cleanup::atomically`]): done before the handler removes what
/// is registered, or never. Every rename that puts an output in place
/// goes through here or [`Atomic::commit`] (or, for `repair --in-place`,
/// [`crate::write::in_place::replace`], whose exchanges of names hold the
/// same lock).
pub fn rename_into_place(from: &Path, to: &Path) -> std::io::Result<()> {
    crate::cleanup::atomically(|| std::fs::rename(from, to))
}

/// Why no file can be made in `dir`, in words that name `dir` (the
/// temporary file's own name would only confuse).
fn cannot_write_in(dir: &Path, e: &std::io::Error) -> String {
    match std::fs::metadata(dir) {
        Err(m) if m.kind() == std::io::ErrorKind::NotFound => {
            format!("its folder {} does not exist", dir.display())
        }
        Ok(m) if !m.is_dir() => format!("{} is not a folder", dir.display()),
        _ => {
            let cause = match e.raw_os_error() {
                Some(code) => std::io::Error::from_raw_os_error(code).to_string(),
                None => e.kind().to_string(),
            };
            format!("cannot create a file in {}: {cause}", dir.display())
        }
    }
}

/// Whether this run has not written into `dir` before.
fn first_visit(dir: &Path) -> bool {
    static SWEPT: Mutex<Option<std::collections::HashSet<PathBuf>>> = Mutex::new(None);
    let mut swept = SWEPT.lock().unwrap_or_else(|e| e.into_inner());
    swept.get_or_insert_default().insert(dir.to_path_buf())
}

/// Set while a [`Batch`] is open: commits rename without their own fsync.
static BATCHED: AtomicBool = AtomicBool::new(false);

/// Many new files written as one output (`repair DIR -o OUTDIR`): each is
/// still written to a temporary file and renamed into place, so an
/// interrupted run leaves no partial file, but none waits for the disk on
/// its own; [`Batch::finish`] flushes them all at once (`syncfs` of the
/// output's file system), before the run reports them written. One
/// `fsync` a file cost about as much as the repair itself on a tree of
/// 3,000 sessions. A power loss during the run can leave renamed files
/// whose data did not reach the disk; the run had not finished, and its
/// input is untouched.
pub struct Batch {
    dir: PathBuf,
}

impl Batch {
    /// Open the batch for files written under `dir`. One batch at a time
    /// (a run repairs one tree).
    pub fn begin(dir: &Path) -> Batch {
        let open = BATCHED.swap(true, Ordering::Relaxed);
        debug_assert!(!open, "one batch at a time");
        Batch {
            dir: dir.to_path_buf(),
        }
    }

    /// Flush everything written under the batch's directory to disk.
    pub fn finish(self) -> Result<()> {
        let dir = match File::open(&self.dir) {
            Ok(d) => d,
            // Nothing was written there.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(out_err(&self.dir, e)),
        };
        sync_filesystem(&dir).map_err(|e| out_err(&self.dir, e))
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        BATCHED.store(false, Ordering::Relaxed);
    }
}

#[cfg(target_os = "linux")]
fn sync_filesystem(dir: &File) -> std::io::Result<()> {
    rustix::fs::syncfs(dir).map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn sync_filesystem(_dir: &File) -> std::io::Result<()> {
    // No syncfs: flush every file system (POSIX sync).
    rustix::fs::sync();
    Ok(())
}

/// Copy `input` to `dest` as it is, atomically, with its permissions: the
/// kernel copies the bytes (`copy_file_range`), none pass through here.
pub fn copy(input: &Path, dest: &Path, force: bool) -> Result<()> {
    let tmp = Atomic::new(dest)?;
    let mut from = File::open(input).map_err(|e| Error::io(input, &e))?;
    crate::source::copy_all(&mut from, &mut tmp.file())
        .map_err(|e| out_err(dest, format!("copying {}: {e}", input.display())))?;
    tmp.commit(dest, force, Some(input))
}

/// Write a whole small file (a repair log, a SQL script) atomically. It
/// keeps the temporary file's owner-only permissions: it holds history text.
pub fn write_bytes(dest: &Path, bytes: &[u8], force: bool) -> Result<()> {
    Atomic::new(dest)?.fill(dest, bytes, force)
}

impl Atomic {
    /// Write `bytes` to this temporary file and rename it to `dest`: for a
    /// file whose temporary was made early, to learn that it can be
    /// written before anything else is.
    pub fn fill(self, dest: &Path, bytes: &[u8], force: bool) -> Result<()> {
        let mut w = self.writer(dest)?;
        w.write_all(bytes).map_err(|e| out_err(dest, e))?;
        finish(w, dest)?;
        self.commit(dest, force, None)
    }
}

/// Flush a writer, mapping errors to the destination.
pub fn finish(mut w: BufWriter<File>, dest: &Path) -> Result<()> {
    w.flush().map_err(|e| out_err(dest, e))
}

/// Whether two paths name one file (after links are resolved).
pub fn same_file(a: &Path, b: &Path) -> bool {
    // A path that does not resolve is no file (canonicalising it fails
    // too): one stat each, before walking every component of both, which
    // a repair of a directory did eight times per file.
    if std::fs::metadata(b).is_err() || std::fs::metadata(a).is_err() {
        return false;
    }
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Whether `path` is `input` or one of its SQLite sidecars (`-wal`,
/// `-shm`, `-journal`): the files a command must never write.
pub fn is_evidence(input: &Path, path: &Path) -> bool {
    ["", "-wal", "-shm", "-journal"].iter().any(|s| {
        let mut p = input.as_os_str().to_owned();
        p.push(s);
        let p = PathBuf::from(p);
        p == path || same_file(&p, path)
    })
}

/// Refuse a destination that is one of the inputs or a SQLite sidecar of
/// one (`-wal`, `-shm`, `-journal`: they are evidence), an existing file
/// without `force`, or a directory. `what` names the output in the message.
pub fn check_dest(inputs: &[&Path], output: &Path, force: bool, what: &str) -> Result<()> {
    for input in inputs {
        if is_evidence(input, output) {
            return Err(Error::Usage(format!(
                "refusing to write {what} over the input {} (it is evidence); name a new path with -o",
                output.display()
            )));
        }
    }
    if output.exists() && !force {
        return Err(Error::Usage(format!(
            "{} already exists; pass --force to overwrite it",
            output.display()
        )));
    }
    if output.is_dir() {
        return Err(Error::Usage(format!("{} is a directory", output.display())));
    }
    Ok(())
}
