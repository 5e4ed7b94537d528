//! A new directory tree as one output (`repair DIR -o OUTDIR`): built in a
//! temporary directory beside its destination,
//! `.<OUTDIR>.chatfsck-<pid>-tree.tmp`, and renamed to OUTDIR once every
//! file (and the run's log) is written. So OUTDIR is absent or complete,
//! never half filled: an interrupt (SIGINT, SIGTERM, SIGHUP) removes the
//! temporary tree ([`crate::cleanup`]), and what a killed run (SIGKILL)
//! left is swept by the next run that writes beside it.

use std::path::{Path, PathBuf};

use super::out_err;
use crate::cleanup::Registered;
use crate::error::Result;
use crate::write::atomic::Atomic;

pub struct TreeOut {
    tmp: PathBuf,
    dest: PathBuf,
    /// The temporary tree is removed if the run is interrupted.
    _registered: Registered,
}

impl TreeOut {
    /// The temporary tree for `dest`, made owner-only (its final modes are
    /// given by [`TreeOut::finish`]), after the temporary trees that runs
    /// now gone left for the same destination are removed.
    pub fn begin(dest: &Path) -> Result<TreeOut> {
        let parent = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| out_err(dest, "names no directory (it ends in `..`)"))?;
        // Missing parents are made, as a tree repair always made them.
        std::fs::create_dir_all(parent).map_err(|e| out_err(dest, e))?;
        crate::cleanup::sweep(parent, &format!(".{name}."));
        let prefix = format!(".{name}.{}tree", crate::cleanup::tag());
        let tmp = parent.join(format!("{prefix}.tmp"));
        let (registered, ()) = crate::cleanup::create_registered(parent, &prefix, || {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new().mode(0o700).create(&tmp)
        })
        .map_err(|e| out_err(dest, format!("cannot create {}: {e}", tmp.display())))?;
        Ok(TreeOut {
            tmp,
            dest: dest.to_path_buf(),
            _registered: registered,
        })
    }

    /// Where the files go while the tree is being built.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// A path under the temporary tree as it will be once in place.
    pub fn final_path(&self, p: &Path) -> PathBuf {
        match p.strip_prefix(&self.tmp) {
            Ok(rel) if rel.as_os_str().is_empty() => self.dest.clone(),
            Ok(rel) => self.dest.join(rel),
            Err(_) => p.to_path_buf(),
        }
    }

    /// Put the tree in place: give every directory the mode of the
    /// directory of `like` at the same relative path (and, run as root,
    /// its owner), then, where the interrupt handler cannot interleave,
    /// commit `log` and rename the tree to its destination (or, when the
    /// destination exists, move its files in, replacing files only with
    /// `force`). Both are in place, or neither.
    pub fn finish(self, like: &Path, force: bool, log: Option<(Atomic, &Path)>) -> Result<()> {
        self.give_modes(like)?;
        if let Some((tmp, path)) = &log {
            tmp.prepare(path, None)?;
        }
        // A tree and log put in place are removed by an interrupt that
        // comes before the run takes its exit, as single copies are: an
        // exit 130 leaves no output. Registered while their paths are free
        // (an OUTDIR that exists is merged into, and never removed).
        if std::fs::symlink_metadata(&self.dest).is_err() {
            crate::cleanup::register_until_settled(self.dest.clone());
            if let Some((_, path)) = &log
                && std::fs::symlink_metadata(path).is_err()
            {
                crate::cleanup::register_until_settled(path.to_path_buf());
            }
        }
        // The log's registration, dropped once the lock is given back.
        let mut registration = None;
        let result = crate::cleanup::atomically(|| {
            let logged = match log {
                Some((tmp, path)) => {
                    let (registered, persisted) = tmp.persist(path, force);
                    registration = Some(registered);
                    persisted?;
                    Some(path)
                }
                None => None,
            };
            let moved = if std::fs::symlink_metadata(&self.dest).is_err() {
                std::fs::rename(&self.tmp, &self.dest)
            } else {
                merge(&self.tmp, &self.dest, force)
            };
            moved.map_err(|e| {
                // The log without its tree would describe files not there.
                if let Some(l) = logged {
                    let _ = std::fs::remove_file(l);
                }
                out_err(&self.dest, e)
            })
        });
        drop(registration);
        result
    }

    fn give_modes(&self, like: &Path) -> Result<()> {
        // Deepest first: a directory that loses its owner's write or search
        // permission has its own subdirectories done already.
        for entry in walkdir::WalkDir::new(&self.tmp).contents_first(true) {
            let entry = entry.map_err(|e| out_err(&self.tmp, e))?;
            if !entry.file_type().is_dir() {
                continue;
            }
            let rel = entry
                .path()
                .strip_prefix(&self.tmp)
                .unwrap_or(Path::new(""));
            let Ok(meta) = std::fs::metadata(like.join(rel)) else {
                continue;
            };
            let to = self.final_path(entry.path());
            std::fs::File::open(entry.path())
                .and_then(|dir| super::keep_owner_and_mode(&dir, &meta))
                .map_err(|e| out_err(&to, e))?;
        }
        Ok(())
    }
}

/// `std::fs::create_dir_all` for a directory of the temporary tree, out
/// of the interrupt handler's way ([`crate::cleanup::atomically`]): it
/// makes the missing parents too, so a thread that made one after the
/// handler removed the tree would make the tree again, and leave it.
pub fn create_dir_all(path: &Path) -> std::io::Result<()> {
    crate::cleanup::atomically(|| std::fs::create_dir_all(path))
}

impl Drop for TreeOut {
    /// A tree not put in place (the run failed) is removed; once renamed,
    /// the temporary path no longer exists.
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

/// Move what `from` holds into the existing directory `to`: an entry `to`
/// does not have is renamed there whole; a directory both have is merged;
/// a file replaces `to`'s only with `force`.
fn merge(from: &Path, to: &Path, force: bool) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let dest = to.join(entry.file_name());
        match std::fs::symlink_metadata(&dest) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::rename(entry.path(), &dest)?;
            }
            Err(e) => return Err(e),
            Ok(m) if m.is_dir() && entry.file_type()?.is_dir() => {
                merge(&entry.path(), &dest, force)?;
            }
            Ok(_) if force => std::fs::rename(entry.path(), &dest)?,
            Ok(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    format!("{} already exists", dest.display()),
                ));
            }
        }
    }
    Ok(())
}
