//! Files chatfsck makes and must not leave behind: the private copy of a
//! WAL database (a copy of the evidence, in the temporary directory) and a
//! repair's output before it is renamed into place. Their owners remove
//! them when dropped; an interrupt (Ctrl-C, `kill`, a closed terminal)
//! skips every destructor, so each such path is also registered here, and
//! [`on_interrupt`]'s handler removes what is registered before it exits.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use crate::exit::EXIT_INTERRUPTED;

/// What to remove on an interrupt.
#[derive(Debug)]
enum Target {
    /// A file (with its SQLite sidecars) or a directory.
    Path(PathBuf),
    /// Every entry of a directory whose name starts with a prefix holding
    /// this run's [`tag`]: registered *before* a temporary file of a
    /// random name is made there, so that no instant exists where the
    /// file is there and unknown to the handler.
    Prefix(PathBuf, String),
}

static REGISTERED: Mutex<Vec<(u64, Target)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(0);
/// Who ends the process, decided once ([`on_interrupt`], [`settle`]): the
/// run with its own result, or the interrupt handler with
/// [`EXIT_INTERRUPTED`]. Whichever takes it first from [`RUNNING`] owns the
/// exit; the other never reports anything.
static ENDING: AtomicU8 = AtomicU8::new(RUNNING);
/// Neither has taken the exit yet.
const RUNNING: u8 = 0;
/// The interrupt handler took it: it removes what is registered, says
/// `error: interrupted` and exits with [`EXIT_INTERRUPTED`].
const INTERRUPTED: u8 = 1;
/// The run took it, its output complete: a signal from now on is ignored.
const FINISHING: u8 = 2;

/// A registered path; dropping it unregisters the path (its owner has
/// removed it, or kept it on purpose).
#[derive(Debug)]
pub struct Registered(u64);

/// Remove `path` (a file, or a directory and all it holds) if the run is
/// interrupted before the returned guard is dropped.
pub fn register(path: PathBuf) -> Registered {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    lock().push((id, Target::Path(path)));
    Registered(id)
}

/// Remove `path` if the run is interrupted before it takes its exit
/// ([`settle`]), with no guard to drop: for an output whose path is free
/// now and that is put in place at the end of the run, so that a signal
/// once it is there removes it, as one before would have left it unmade,
/// and the run's 130 never leaves an output behind.
pub fn register_until_settled(path: PathBuf) {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    lock().push((id, Target::Path(path)));
}

/// Make a temporary file or directory in `dir` whose name starts with
/// `prefix` (which holds this run's [`tag`]) with `make`, and remove every
/// entry of `dir` so named if the run is interrupted before the returned
/// guard is dropped. `make` runs under the lock the interrupt handler
/// takes and never gives back: the file is made and known to the handler,
/// or not made at all.
pub fn create_registered<T>(
    dir: &std::path::Path,
    prefix: &str,
    make: impl FnOnce() -> std::io::Result<T>,
) -> std::io::Result<(Registered, T)> {
    debug_assert!(prefix.contains(&tag()));
    let mut registered = lock();
    let made = make()?;
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    registered.push((id, Target::Prefix(dir.to_path_buf(), prefix.to_string())));
    Ok((Registered(id), made))
}

/// Make the file `path` with `make` (a hard link, say: a name that must
/// never replace an existing file), and remove it if the run is
/// interrupted before the returned guard is dropped. As with
/// [`create_registered`], `make` runs under the handler's lock: the file
/// is made and known to the handler, or not made at all; and a path that
/// `make` could not create (someone else's file) is never registered.
pub fn create_registered_path(
    path: PathBuf,
    make: impl FnOnce() -> std::io::Result<()>,
) -> std::io::Result<Registered> {
    let mut registered = lock();
    make()?;
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    registered.push((id, Target::Path(path)));
    Ok(Registered(id))
}

/// [`atomically`], and the paths of `release` are no longer removed on an
/// interrupt once `step` is done: in one step, so an interrupt finds the
/// step not begun (and removes them) or done (and keeps what it put in
/// place), never half of it.
pub fn atomically_releasing<T>(release: Vec<Registered>, step: impl FnOnce() -> T) -> T {
    let mut held = lock();
    let out = step();
    held.retain(|(id, _)| !release.iter().any(|r| r.0 == *id));
    drop(held);
    // Their own drops find nothing left to remove.
    drop(release);
    out
}

/// Run `step` (a rename that puts an output in place) where the interrupt
/// handler cannot interleave with it: the handler takes the same lock
/// before it removes anything, and never gives it back. So the step is
/// done before the handler looks at the registered paths (which removes
/// what it made, if that is registered), or never done at all; without
/// it, a rename landing between the handler's removal of the destination
/// and of the temporary file left a copy without its log.
pub fn atomically<T>(step: impl FnOnce() -> T) -> T {
    let _held = lock();
    step()
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock().retain(|(id, _)| *id != self.0);
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<(u64, Target)>> {
    REGISTERED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Remove every registered path, a file with the `-journal`, `-wal` and
/// `-shm` SQLite keeps beside it while it edits the file (the temporary
/// copy of a SQLite repair); what is already gone is no error. The other
/// threads run on until the process exits and SQLite may make a journal
/// again in the meantime: the sidecars are removed once more after the
/// rest, which leaves that race a window of a few instructions.
fn remove_registered(registered: &mut Vec<(u64, Target)>) {
    let mut paths: Vec<PathBuf> = Vec::new();
    for (_, t) in registered.drain(..) {
        match t {
            Target::Path(p) => paths.push(p),
            Target::Prefix(dir, prefix) => {
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                paths.extend(
                    entries
                        .flatten()
                        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                        .map(|e| e.path()),
                );
            }
        }
    }
    let sidecars = |path: &PathBuf| {
        for suffix in ["-journal", "-wal", "-shm"] {
            let mut s = path.as_os_str().to_owned();
            s.push(suffix);
            let _ = std::fs::remove_file(PathBuf::from(s));
        }
    };
    for path in &paths {
        if path.is_dir() {
            // Another thread may still make a file in a directory being
            // removed (a hard link, a SQLite journal): the removal then
            // fails on a directory not empty, and is tried again.
            for _ in 0..5 {
                if std::fs::remove_dir_all(path).is_ok() || !path.exists() {
                    break;
                }
            }
        } else {
            let _ = std::fs::remove_file(path);
            sidecars(path);
        }
    }
    for path in paths.iter().filter(|p| !p.is_dir()) {
        sidecars(path);
    }
}

/// The tag in the name of every temporary file or directory this run
/// makes: `chatfsck-<pid>-`. A run killed with SIGKILL cleans nothing up;
/// the pid lets a later run tell its leftovers from a live run's files
/// ([`sweep`]).
pub fn tag() -> String {
    format!("chatfsck-{}-", std::process::id())
}

/// Remove, in `dir`, what runs of chatfsck that are gone left behind: the
/// entries named `<before>chatfsck-<pid>-…` whose process no longer exists
/// and that belong to this user, with a file's SQLite sidecars. Anything
/// else (another user's, a live run's, a name that only looks alike) is
/// left alone; errors are ignored (a sweep is housekeeping, never a
/// reason to fail). Only where `/proc` tells whether a process lives.
pub fn sweep(dir: &std::path::Path, before: &str) {
    let prefix = format!("{before}chatfsck-");
    sweep_where(dir, |name| {
        name.strip_prefix(prefix.as_str())
            .and_then(|rest| rest.split_once('-'))
            .map(|(pid, _)| pid)
    });
}

/// Remove, in `dir`, every atomic write's temporary file
/// (`.<name>.chatfsck-<pid>-….chatfsck-tmp`, and a SQLite copy's
/// `-journal`, `-wal`, `-shm`) that a run now gone left behind, whatever
/// its destination: as [`sweep`] does, for all the
/// files of a directory at once.
pub fn sweep_temps(dir: &std::path::Path) {
    sweep_where(dir, |name| {
        // A temporary SQLite copy's sidecars go with it.
        let name = ["-journal", "-wal", "-shm"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name);
        let name = name.strip_suffix(".chatfsck-tmp")?.strip_prefix('.')?;
        let rest = name
            .rfind(".chatfsck-")
            .map(|at| &name[at + ".chatfsck-".len()..])?;
        rest.split_once('-').map(|(pid, _)| pid)
    });
}

/// Remove, in `dir`, the repaired copies that `repair --in-place` runs now
/// gone left behind (`.<name>.chatfsck-<pid>.tmp`, see [`in_place_temp`]),
/// as [`sweep`] does.
pub fn sweep_in_place_temps(dir: &std::path::Path) {
    sweep_where(dir, |name| {
        let name = name.strip_prefix('.')?.strip_suffix(".tmp")?;
        name.rfind(".chatfsck-")
            .map(|at| &name[at + ".chatfsck-".len()..])
    });
}

/// The name `repair --in-place` writes the repaired copy of `name` under,
/// beside it, until it replaces it: `.<name>.chatfsck-<pid>.tmp`.
pub fn in_place_temp(name: &str) -> String {
    format!(".{name}.chatfsck-{}.tmp", std::process::id())
}

/// [`sweep`]'s walk: `pid_of` gives the process id in a name of ours (the
/// digits after `chatfsck-`), or `None` for any other name.
fn sweep_where(dir: &std::path::Path, pid_of: impl Fn(&str) -> Option<&str>) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(me) = std::fs::metadata("/proc/self").map(|m| m.uid()) else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(&pid_of) else {
                continue;
            };
            if pid.is_empty()
                || !pid.bytes().all(|b| b.is_ascii_digit())
                || std::path::Path::new("/proc").join(pid).exists()
            {
                continue;
            }
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.uid() != me {
                continue;
            }
            let _ = if meta.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (dir, pid_of);
}

/// On SIGINT, SIGTERM or SIGHUP: remove the registered paths, say so in one
/// line, and exit with [`EXIT_INTERRUPTED`]. A signal that comes once the
/// run has finished ([`settle`] returned) is ignored: the run's output is
/// complete and it exits with its own result, saying nothing of the
/// signal. A handler that cannot be set (one is already set, as in an
/// embedding program) leaves the default.
pub fn on_interrupt() {
    let _ = ctrlc::set_handler(|| {
        if ENDING
            .compare_exchange(RUNNING, INTERRUPTED, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return;
        }
        // Held until the process ends: no temporary file is made (nor a
        // registration dropped) once the removal has begun.
        let mut registered = lock();
        remove_registered(&mut registered);
        eprintln!("error: interrupted");
        std::process::exit(EXIT_INTERRUPTED.into());
    });
}

/// Called when the command is done, its output written, before its exit
/// code or error is reported: the run takes the exit, or, if an interrupt
/// took it first, waits for the handler to end the process with
/// [`EXIT_INTERRUPTED`]. Otherwise a command whose files the handler just
/// removed would fail on that and exit with 2 (or finish with 0) before the
/// handler's 130; and a signal landing after a plain check of a flag, as
/// the process ended, printed `error: interrupted` from the handler while
/// the run exited 0. One atomic step decides, so one of the two ends the
/// process and the other says nothing.
pub fn settle() {
    if ENDING
        .compare_exchange(RUNNING, FINISHING, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
    {
        return;
    }
    loop {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
