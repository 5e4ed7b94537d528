//! `repair --in-place`: put the repaired copy in the place of the file,
//! keep the original as a backup, and lose nothing its app writes to it
//! meanwhile.
//!
//! The backup is a hard link of the original (made in one step, complete
//! by construction, with the original's owner, mode and inode), or, where
//! the file system refuses links, a copy written under a temporary name,
//! flushed, then renamed to its name: no file named as a backup is ever
//! incomplete. The repaired copy then takes the file's name by an
//! exchange of the two names (`renameat2` `RENAME_EXCHANGE`), so that the
//! file it displaces keeps a name whatever it is, and the original,
//! still open, is looked at once more: if it was written to, touched or
//! replaced since the change check read it, the exchange is undone and
//! nothing is replaced. All of it runs out of the interrupt handler's way
//! ([`crate::cleanup::atomically_releasing`]).

use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::out_err;
use crate::cleanup::Registered;
use crate::error::{Error, Result};

/// What tells one state of a file from another without reading it: its
/// inode, size and modification time (to the nanosecond).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct State {
    dev: u64,
    ino: u64,
    pub len: u64,
    mtime: (i64, i64),
}

impl State {
    pub fn of(meta: &std::fs::Metadata) -> State {
        State {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
        }
    }

    fn same_file(&self, meta: &std::fs::Metadata) -> bool {
        self.dev == meta.dev() && self.ino == meta.ino()
    }

    /// How `now` differs from this state, in words.
    pub fn change(&self, now: &State) -> String {
        if (now.dev, now.ino) != (self.dev, self.ino) {
            "it was replaced by another file".into()
        } else if now.len != self.len {
            format!("{} bytes, then {}", self.len, now.len)
        } else if now.mtime != self.mtime {
            "its modification time moved".into()
        } else {
            "its content differs".into()
        }
    }
}

/// What [`replace`] did.
pub enum Outcome {
    /// The repaired copy is in place; the original is kept as the backup.
    Replaced,
    /// The file changed while it was being repaired: it is as its app left
    /// it, and no backup is kept. `kept` names the repaired copy when its
    /// app wrote to it in the instant it was in place.
    Changed { what: String, kept: Option<PathBuf> },
}

/// Whether `link(2)` failing with `e` means the file system makes no hard
/// links here (then the backup is a copy), rather than that no file can
/// be made at all.
fn links_refused(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    let errno = Errno::from_io_error(e);
    [
        Errno::PERM,
        Errno::XDEV,
        Errno::OPNOTSUPP,
        Errno::MLINK,
        Errno::NOSYS,
    ]
    .iter()
    .any(|x| Some(*x) == errno)
}

/// Whether a rename flag (`RENAME_EXCHANGE`) is unknown to the kernel or
/// the file system.
fn exchange_refused(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    let errno = Errno::from_io_error(e);
    [Errno::INVAL, Errno::NOSYS, Errno::OPNOTSUPP]
        .iter()
        .any(|x| Some(*x) == errno)
}

/// Swap the names `a` and `b` in one step.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn exchange(_a: &Path, _b: &Path) -> std::io::Result<()> {
    Err(std::io::Error::from_raw_os_error(
        rustix::io::Errno::NOSYS.raw_os_error(),
    ))
}

/// The backup of `target`: a hard link, or a complete copy of `original`
/// renamed to `backup` once flushed. Registered: an interrupt before the
/// replacement removes it.
fn make_backup(
    target: &Path,
    original: &File,
    meta: &std::fs::Metadata,
    backup: &Path,
) -> Result<Registered> {
    let linked = crate::cleanup::create_registered_path(backup.to_path_buf(), || {
        std::fs::hard_link(target, backup)
    });
    match linked {
        Ok(registered) => return Ok(registered),
        Err(e) if links_refused(&e) => {}
        Err(e) => return Err(out_err(backup, e)),
    }
    let tmp = crate::write::atomic::Atomic::new(backup)?;
    let copied = (|| -> std::io::Result<()> {
        let mut from = original;
        from.seek(SeekFrom::Start(0))?;
        crate::source::copy_all(&mut from, &mut tmp.file())?;
        super::keep_owner_and_mode(tmp.file(), meta)
    })();
    copied.map_err(|e| out_err(backup, format!("copying {}: {e}", target.display())))?;
    // Flushed, then renamed to a name that must be free.
    tmp.commit(backup, false, None)?;
    Ok(crate::cleanup::register(backup.to_path_buf()))
}

/// A free name beside `target` for a file kept there
/// (`<name>.chatfsck-<what>-<pid>-<ns>`): the repaired copy its app
/// wrote to, the original if it could not be given its name back.
fn kept_name(target: &Path, what: &str) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    target.with_file_name(format!(
        "{name}.chatfsck-{what}-{}-{stamp}",
        std::process::id()
    ))
}

/// Replace `target` by the repaired copy at `tmp` (`tmp_registered`
/// removes it on an interrupt), keeping the original as `backup`.
/// `original` is the file as opened before it was repaired, and `seen`
/// its state when the change check last read it in full and found it as
/// the repair read it.
pub fn replace(
    target: &Path,
    original: &File,
    seen: State,
    tmp: &Path,
    tmp_registered: Registered,
    backup: &Path,
) -> Result<Outcome> {
    let meta = original.metadata().map_err(|e| Error::io(target, &e))?;
    let remove_tmp = || {
        let _ = std::fs::remove_file(tmp);
    };
    // The repaired copy: the original's owner and mode, on disk.
    let repaired = (|| -> std::io::Result<(File, State)> {
        let r = File::open(tmp)?;
        super::keep_owner_and_mode(&r, &meta)?;
        r.sync_all()?;
        let state = State::of(&r.metadata()?);
        Ok((r, state))
    })();
    let (repaired, repaired_state) = match repaired {
        Ok(r) => r,
        Err(e) => {
            remove_tmp();
            return Err(out_err(target, e));
        }
    };
    let backup_registered = match make_backup(target, original, &meta, backup) {
        Ok(r) => r,
        Err(e) => {
            remove_tmp();
            return Err(e);
        }
    };
    let step = || -> Result<Outcome> {
        let remove_backup = || {
            let _ = std::fs::remove_file(backup);
        };
        match exchange(tmp, target) {
            Ok(()) => {}
            Err(e) if exchange_refused(&e) => {
                return replace_by_rename(target, original, seen, tmp, backup);
            }
            Err(e) => {
                remove_backup();
                remove_tmp();
                return Err(out_err(target, e));
            }
        }
        // `tmp` now names what `target` named: the original, unless its
        // app replaced it since the check.
        let displaced = std::fs::symlink_metadata(tmp);
        let now = original.metadata().map(|m| State::of(&m));
        let moved = !displaced.as_ref().is_ok_and(|d| seen.same_file(d));
        if !moved && now.as_ref().is_ok_and(|n| *n == seen) {
            // Its other name: the backup holds it (or a copy of it).
            remove_tmp();
            return Ok(Outcome::Replaced);
        }
        let what = match (&displaced, &now) {
            (Ok(d), _) if moved => seen.change(&State::of(d)),
            (_, Ok(n)) => seen.change(n),
            (_, Err(e)) => format!("it could not be looked at again: {e}"),
        };
        let what = format!("{what}, seen once the repaired copy had taken its name, undone");
        // Changed meanwhile: give the file back its name, with its change.
        if let Err(e) = exchange(tmp, target) {
            // Under a name no sweep removes.
            let keep = kept_name(target, "original");
            let at = match std::fs::rename(tmp, &keep) {
                Ok(()) => keep,
                Err(_) => tmp.to_path_buf(),
            };
            return Err(out_err(
                target,
                format!(
                    "changed while it was being repaired ({what}), and the repaired copy that replaced it could not be swapped back: {e}; the file as its app left it is {}",
                    at.display()
                ),
            ));
        }
        remove_backup();
        // The repaired copy is back at `tmp`; its app may have written to
        // it in the instant it was in place.
        let back = std::fs::symlink_metadata(tmp);
        let untouched = back.is_ok_and(|b| repaired_state.same_file(&b))
            && repaired
                .metadata()
                .is_ok_and(|m| State::of(&m) == repaired_state);
        if untouched {
            remove_tmp();
            return Ok(Outcome::Changed { what, kept: None });
        }
        let keep = kept_name(target, "repaired");
        std::fs::rename(tmp, &keep).map_err(|e| out_err(&keep, e))?;
        Ok(Outcome::Changed {
            what,
            kept: Some(keep),
        })
    };
    crate::cleanup::atomically_releasing(vec![tmp_registered, backup_registered], step)
}

/// [`replace`] where the file system cannot exchange two names: a rename
/// over the file, and, if the original changed meanwhile, the original
/// put back (the linked backup renamed to its name, or its content
/// written again from the file still open).
fn replace_by_rename(
    target: &Path,
    original: &File,
    seen: State,
    tmp: &Path,
    backup: &Path,
) -> Result<Outcome> {
    std::fs::rename(tmp, target).map_err(|e| {
        let _ = std::fs::remove_file(tmp);
        let _ = std::fs::remove_file(backup);
        out_err(target, e)
    })?;
    let now = original.metadata().map(|m| State::of(&m));
    if now.as_ref().is_ok_and(|n| *n == seen) {
        return Ok(Outcome::Replaced);
    }
    let what = match &now {
        Ok(n) => seen.change(n),
        Err(e) => format!("it could not be looked at again: {e}"),
    };
    let linked = std::fs::symlink_metadata(backup).is_ok_and(|b| seen.same_file(&b));
    let restored = if linked {
        std::fs::rename(backup, target)
    } else {
        (|| -> std::io::Result<()> {
            let mut to = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(tmp)?;
            let mut from = original;
            from.seek(SeekFrom::Start(0))?;
            crate::source::copy_all(&mut from, &mut to)?;
            super::keep_owner_and_mode(&to, &original.metadata()?)?;
            to.sync_all()?;
            std::fs::rename(tmp, target)?;
            let _ = std::fs::remove_file(backup);
            Ok(())
        })()
    };
    restored.map_err(|e| {
        out_err(
            target,
            format!(
                "changed while it was being repaired ({what}), and could not be put back: {e}; the original is kept as {}",
                backup.display()
            ),
        )
    })?;
    Ok(Outcome::Changed { what, kept: None })
}

/// What runs of `repair --in-place` that are gone left in `dir`: their
/// repaired copies (`.<name>.chatfsck-<pid>.tmp`, of a process that no
/// longer exists) and the folders their later passes read the copy in
/// (`.chatfsck-<pid>-…`), with the temporary files of its atomic writes.
/// A backup is never removed: one that a run killed in
/// the instant between linking it and replacing the file left is another
/// name of the file itself, and a live run's looks the same.
pub fn sweep(dir: &Path) {
    crate::cleanup::sweep_in_place_temps(dir);
    crate::cleanup::sweep_temps(dir);
    crate::cleanup::sweep(dir, ".");
}
