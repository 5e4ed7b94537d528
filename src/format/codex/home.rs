//! Where Codex keeps rollouts: `$CODEX_HOME/sessions/YYYY/MM/DD/` and
//! `$CODEX_HOME/archived_sessions/`, each named
//! `rollout-<time>-<thread id>.jsonl`, or `.jsonl.zst` once compressed
//! (codex-rs/rollout/src/compression.rs, `parse_rollout_file_name`).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::model::Parent;

/// The folders of a Codex home that hold rollouts.
const FOLDERS: &[&str] = &["sessions", "archived_sessions"];

/// The Codex home a rollout at `path` lies in: the folder above the
/// `sessions` (or `archived_sessions`) folder it is under.
pub(super) fn home_of(path: &Path) -> Option<&Path> {
    path.ancestors()
        .skip(1)
        .find(|a| {
            a.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| FOLDERS.contains(&n))
        })
        .and_then(Path::parent)
}

/// Whether `name` is a rollout of `thread`.
pub(super) fn is_rollout_of(name: &str, thread: &str) -> bool {
    let plain = name.strip_suffix(".zst").unwrap_or(name);
    plain
        .strip_suffix(".jsonl")
        .is_some_and(|stem| stem.starts_with("rollout-") && stem.ends_with(thread))
}

/// The rollout of thread `thread` in the Codex home of the rollout at
/// `path`: found, missing (and where it was looked for), or unknown when
/// `path` is not in a Codex home's layout.
pub fn find_rollout(path: &Path, thread: &str) -> Parent {
    let Some(home) = home_of(path) else {
        return Parent::Unknown;
    };
    // An id that could step out of the home, or match any name, finds
    // nothing.
    if thread.is_empty() || thread.contains(['/', '\\']) {
        return Parent::Missing {
            searched: home.to_path_buf(),
        };
    }
    for folder in FOLDERS {
        let found = walkdir::WalkDir::new(home.join(folder))
            .max_depth(4)
            .into_iter()
            .filter_map(Result::ok)
            .find(|e| {
                e.file_type().is_file()
                    && e.file_name()
                        .to_str()
                        .is_some_and(|n| is_rollout_of(n, thread))
            });
        if let Some(e) = found {
            return Parent::Found(e.into_path());
        }
    }
    Parent::Missing {
        searched: home.to_path_buf(),
    }
}

/// A rollout of the home that continues another thread's history (a
/// fork's continuation, Codex 0.146 and later): Codex replays the records
/// of the base thread's rollout before ordinal `end_ordinal` (its first
/// `end_byte` bytes) as the fork's own history, and refuses to resume the
/// fork when those bytes changed (`failed to scan paginated model context
/// lineage: <base>: cutoff byte offset is past the source rollout`, seen
/// with the pinned 0.169.0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fork {
    pub path: PathBuf,
    pub thread: String,
    pub end_byte: Option<u64>,
    pub end_ordinal: Option<u64>,
}

/// Every fork in the Codex home of the rollout at `path` whose base is
/// `thread` (none when `path` is not in a Codex home). Each rollout's
/// first line is read once per home and run: a tree repair asks for every
/// rollout of the home.
pub fn forks_of(path: &Path, thread: &str) -> Vec<Fork> {
    static INDEX: OnceLock<Mutex<HashMap<PathBuf, Arc<Forks>>>> = OnceLock::new();
    let Some(home) = home_of(path) else {
        return Vec::new();
    };
    let index = {
        let mut homes = INDEX
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        homes
            .entry(home.to_path_buf())
            .or_insert_with(|| Arc::new(index_forks(home)))
            .clone()
    };
    index.get(thread).cloned().unwrap_or_default()
}

/// The forks of a home, by the thread they continue.
type Forks = HashMap<String, Vec<Fork>>;

fn index_forks(home: &Path) -> Forks {
    let mut forks = Forks::new();
    for folder in FOLDERS {
        for e in walkdir::WalkDir::new(home.join(folder))
            .max_depth(4)
            .into_iter()
            .filter_map(Result::ok)
        {
            let rollout = e.file_type().is_file()
                && e.file_name().to_str().is_some_and(|n| is_rollout_of(n, ""));
            if let Some(fork) = rollout.then(|| fork_of(e.path())).flatten() {
                forks.entry(fork.0).or_default().push(fork.1);
            }
        }
    }
    forks
}

/// The base thread and cutoff a rollout's `session_meta` names, if any.
fn fork_of(path: &Path) -> Option<(String, Fork)> {
    #[derive(serde::Deserialize)]
    struct Base {
        thread_id: String,
        #[serde(default)]
        end_ordinal_exclusive: Option<u64>,
        #[serde(default)]
        end_byte_offset: Option<u64>,
    }
    #[derive(serde::Deserialize)]
    struct Payload {
        #[serde(default)]
        id: Option<String>,
        history_base: Option<Base>,
    }
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "type")]
        ty: String,
        payload: Payload,
    }
    let line = first_line(path)?;
    let meta: Meta = serde_json::from_slice(&line).ok()?;
    let base = meta
        .payload
        .history_base
        .filter(|_| meta.ty == "session_meta")?;
    Some((
        base.thread_id,
        Fork {
            path: path.to_path_buf(),
            thread: meta.payload.id.unwrap_or_default(),
            end_byte: base.end_byte_offset,
            end_ordinal: base.end_ordinal_exclusive,
        },
    ))
}

/// A rollout's first line (a `.zst` one decompressed), up to 16 MiB: a
/// `session_meta` holds the session's instructions, not its history.
fn first_line(path: &Path) -> Option<Vec<u8>> {
    const CAP: u64 = 16 << 20;
    let file = std::fs::File::open(path).ok()?;
    let read: Box<dyn Read> = if path.extension().is_some_and(|e| e == "zst") {
        Box::new(zstd::stream::read::Decoder::new(file).ok()?)
    } else {
        Box::new(file)
    };
    let mut line = Vec::new();
    BufReader::new(read.take(CAP))
        .read_until(b'\n', &mut line)
        .ok()?;
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollout_is_known_by_its_name() {
        let t = "01a22347-de2f-7520-8cac-9a2f1784286e";
        assert!(is_rollout_of(
            &format!("rollout-2026-11-28T17-50-42-{t}.jsonl"),
            t
        ));
        assert!(is_rollout_of(
            &format!("rollout-2026-11-28T17-50-42-{t}.jsonl.zst"),
            t
        ));
        assert!(!is_rollout_of(
            &format!("rollout-2026-11-28T17-50-42-{t}.json"),
            t
        ));
        assert!(!is_rollout_of("rollout-x.jsonl", t));
        assert_eq!(
            home_of(Path::new("/h/.codex/sessions/2026/11/28/rollout-x.jsonl")),
            Some(Path::new("/h/.codex"))
        );
        assert_eq!(home_of(Path::new("/tmp/rollout-x.jsonl")), None);
    }
}
