//! Where Codex keeps rollouts: `$CODEX_HOME/sessions/YYYY/MM/DD/` and
//! `$CODEX_HOME/archived_sessions/`, each named
//! `rollout-<time>-<thread id>.jsonl`, or `.jsonl.zst` once compressed
//! (codex-rs/rollout/src/compression.rs, `parse_rollout_file_name`).

use std::path::Path;

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
