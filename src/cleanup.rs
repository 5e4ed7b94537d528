//! Files chatfsck makes and must not leave behind: the private copy of a
//! WAL database (a copy of the evidence, in the temporary directory) and a
//! repair's output before it is renamed into place. Their owners remove
//! them when dropped; an interrupt (Ctrl-C, `kill`, a closed terminal)
//! skips every destructor, so each such path is also registered here, and
//! [`on_interrupt`]'s handler removes what is registered before it exits.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::exit::EXIT_INTERRUPTED;

static REGISTERED: Mutex<Vec<(u64, PathBuf)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(0);

/// A registered path; dropping it unregisters the path (its owner has
/// removed it, or kept it on purpose).
#[derive(Debug)]
pub struct Registered(u64);

/// Remove `path` (a file, or a directory and all it holds) if the run is
/// interrupted before the returned guard is dropped.
pub fn register(path: PathBuf) -> Registered {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    lock().push((id, path));
    Registered(id)
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock().retain(|(id, _)| *id != self.0);
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<(u64, PathBuf)>> {
    REGISTERED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Remove every registered path; what is already gone is no error.
fn remove_registered() {
    for (_, path) in lock().drain(..) {
        let _ = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
    }
}

/// On SIGINT, SIGTERM or SIGHUP: remove the registered paths, say so in one
/// line, and exit with [`EXIT_INTERRUPTED`]. A handler that cannot be set
/// (one is already set, as in an embedding program) leaves the default.
pub fn on_interrupt() {
    let _ = ctrlc::set_handler(|| {
        remove_registered();
        eprintln!("error: interrupted");
        std::process::exit(EXIT_INTERRUPTED.into());
    });
}
