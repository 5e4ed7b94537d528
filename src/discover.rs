//! A run without a path: find every app's histories where the app keeps
//! them ([`crate::format::APPS`]), lint them app by app, and say per app
//! where it looked, what it found and read, and what it could not read.
//! Also the names users give sessions: the id the client shows, or a
//! unique prefix of it, and "the session I was just in" (`--last`).

use std::path::PathBuf;

use crate::error::Error;
use crate::finding::Severity;
use crate::format::discovery::{Env, Found, Session};
use crate::format::{APPS, App};
use crate::lint::{self, AppSummary, Looked, Options, Outcome, Progress, Unread};

/// Where every app's histories are on this machine.
pub fn find(env: &Env) -> Vec<(&'static App, Found)> {
    APPS.iter().map(|app| (*app, (app.find)(env))).collect()
}

/// Lint every history discovery finds: each app's files, every one of
/// them as if named (a file an app keeps as a session and no store reads
/// is unread, never skipped), and a summary per app.
pub fn lint(
    env: &Env,
    opts: &Options,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Result<Outcome, Error> {
    let found = find(env);
    let total: usize = found.iter().map(|(_, f)| f.inputs.len()).sum();
    progress(Progress::Started { inputs: total });
    // The total was announced once; each app's own start is not.
    let quiet = |p: Progress<'_>| {
        if let Progress::Checked { .. } = p {
            progress(p)
        }
    };
    let mut outcome = Outcome::default();
    let mut apps = Vec::with_capacity(found.len());
    for (app, f) in found {
        let inputs = f.inputs.iter().map(|p| (p.clone(), true)).collect();
        let o = lint::lint_inputs(inputs, opts, &quiet)?;
        apps.push(summary(app, &f, &o, env));
        outcome.merge(o);
        outcome.errors.extend(
            f.unknown
                .iter()
                .map(|(p, why)| Error::input(p, why.clone())),
        );
    }
    // What discovery found is walked, not named: `--skip-unreadable`
    // applies to it.
    outcome.walked_errors = outcome.errors.len();
    outcome.discovered = Some(apps);
    Ok(outcome)
}

/// `path` as a person reads it: `~/…` under the home directory.
pub fn shown(path: &std::path::Path, env: &Env) -> String {
    match env.home.as_ref().and_then(|h| path.strip_prefix(h).ok()) {
        Some(rel) if rel.as_os_str().is_empty() => "~".to_string(),
        Some(rel) => format!("~{}{}", std::path::MAIN_SEPARATOR, rel.display()),
        None => path.display().to_string(),
    }
}

fn summary(app: &'static App, found: &Found, o: &Outcome, env: &Env) -> AppSummary {
    let mut errored: Vec<(&std::path::Path, &str)> = o
        .findings()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| (&*f.source.path, f.conversation.as_str()))
        .collect();
    errored.sort_unstable();
    errored.dedup();
    let mut unread: Vec<Unread> = o
        .errors
        .iter()
        .map(|e| {
            let path = error_path(e).unwrap_or_default();
            Unread {
                shown: shown(&path, env),
                path,
                cause: cause(e),
            }
        })
        .collect();
    unread.extend(found.unknown.iter().map(|(p, why)| Unread {
        path: p.clone(),
        cause: why.clone(),
        shown: shown(p, env),
    }));
    AppSummary {
        app: app.name,
        key: app.key,
        looked: found
            .looked
            .iter()
            .map(|p| Looked {
                path: p.clone(),
                exists: p.exists(),
                shown: shown(p, env),
            })
            .collect(),
        found: found.inputs.len() + found.unknown.len(),
        sessions: o.files.iter().map(|f| f.stats.conversations).sum(),
        with_errors: errored.len(),
        unread,
    }
}

fn error_path(e: &Error) -> Option<PathBuf> {
    match e {
        Error::Input { path, .. }
        | Error::NotHistory { path, .. }
        | Error::PartOf { path, .. }
        | Error::Config { path, .. }
        | Error::Output { path, .. } => Some(path.clone()),
        _ => None,
    }
}

fn cause(e: &Error) -> String {
    match e {
        Error::Input { cause, .. }
        | Error::NotHistory { cause, .. }
        | Error::PartOf { cause, .. }
        | Error::Config { cause, .. }
        | Error::Output { cause, .. } => cause.clone(),
        other => other.to_string(),
    }
}

/// Every session of every app on this machine, as its client names it.
pub fn sessions(env: &Env) -> Vec<Session> {
    let mut out = Vec::new();
    for (app, found) in find(env) {
        for input in &found.inputs {
            out.extend((app.sessions)(input));
        }
    }
    out
}

/// Whether a command-line argument names a session rather than a file:
/// it is no file or directory here, and has no path separator.
pub fn is_session_name(arg: &std::path::Path) -> bool {
    let s = arg.to_string_lossy();
    // A name that ends as a history file's does is a missing file.
    let file_like = [
        ".jsonl", ".json", ".zst", ".db", ".sqlite", ".sqlite3", ".vscdb", ".traj", ".md",
    ]
    .iter()
    .any(|ext| s.ends_with(ext));
    !arg.exists()
        && !s.is_empty()
        && !file_like
        && !s.contains(['/', '\\'])
        && !crate::source::is_postgres(arg)
}

/// The session a user names: the id its client shows, or a prefix of it
/// that names one session only.
pub fn resolve(name: &str, env: &Env) -> Result<Session, Error> {
    let all = sessions(env);
    if let Some(s) = all.iter().find(|s| s.id == name) {
        return Ok(s.clone());
    }
    let matching: Vec<&Session> = all.iter().filter(|s| s.id.starts_with(name)).collect();
    match matching.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(Error::Usage(format!(
            "`{}` is no file, and no session of {} is named so (looked in {})",
            crate::escape::escape(name),
            app_names(),
            looked_in(env)
        ))),
        many => {
            let mut list: Vec<String> = many
                .iter()
                .take(20)
                .map(|s| {
                    format!(
                        "{} ({}, {})",
                        crate::escape::escape(&s.id),
                        s.app,
                        crate::escape::escape(&s.path.display().to_string())
                    )
                })
                .collect();
            if many.len() > 20 {
                list.push(format!("and {} more", many.len() - 20));
            }
            Err(Error::Usage(format!(
                "`{}` names {} sessions; give more of the id: {}",
                crate::escape::escape(name),
                many.len(),
                list.join(", ")
            )))
        }
    }
}

/// The session changed last, across every app.
pub fn last(env: &Env) -> Result<Session, Error> {
    sessions(env)
        .into_iter()
        .filter(|s| s.modified.is_some())
        .max_by_key(|s| s.modified)
        .ok_or_else(|| {
            Error::Usage(format!(
                "no agent histories found; looked in: {}",
                looked_in(env)
            ))
        })
}

fn app_names() -> String {
    APPS.iter().map(|a| a.name).collect::<Vec<_>>().join(", ")
}

/// Every place looked at, for a message.
pub fn looked_in(env: &Env) -> String {
    find(env)
        .iter()
        .flat_map(|(_, f)| f.looked.iter())
        .map(|p| crate::escape::escape(&shown(p, env)).into_owned())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::find;
    use crate::format::discovery::{Env, Os};

    /// Every place each app's discovery looks at, under a made-up home.
    fn looked(env: &Env, key: &str) -> Vec<PathBuf> {
        find(env)
            .into_iter()
            .find(|(app, _)| app.key == key)
            .map(|(_, f)| f.looked)
            .unwrap_or_default()
    }

    #[test]
    fn each_platform_has_its_own_places() {
        let home = Path::new("/h");
        let mac = Env::made_up(Os::MacOs, home, &[]);
        let win = Env::made_up(Os::Windows, home, &[]);
        let linux = Env::made_up(Os::Linux, home, &[("XDG_DATA_HOME", "/x/data")]);
        // Cursor's user directory is the platform's configuration directory.
        assert_eq!(
            looked(&mac, "cursor"),
            [home.join("Library/Application Support/Cursor/User/globalStorage")]
        );
        assert_eq!(
            looked(&win, "cursor"),
            [home.join("AppData/Roaming/Cursor/User/globalStorage")]
        );
        // goose: the etcetera crate's Windows strategy; XDG elsewhere.
        assert_eq!(
            looked(&win, "goose"),
            [home.join("AppData/Roaming/Block/goose/data/sessions")]
        );
        assert_eq!(
            looked(&mac, "goose"),
            [home.join(".local/share/goose/sessions")]
        );
        assert_eq!(
            looked(&linux, "goose"),
            [PathBuf::from("/x/data/goose/sessions")]
        );
        // opencode follows XDG on every platform (xdg-basedir).
        assert_eq!(
            looked(&win, "opencode"),
            [home.join(".local/share/opencode")]
        );
        assert_eq!(
            looked(&linux, "opencode"),
            [PathBuf::from("/x/data/opencode")]
        );
        // Claude Code and Codex: a folder in the home directory everywhere.
        assert_eq!(looked(&win, "claude-code"), [home.join(".claude/projects")]);
        assert_eq!(
            looked(&mac, "codex"),
            [
                home.join(".codex/sessions"),
                home.join(".codex/archived_sessions")
            ]
        );
    }

    #[test]
    fn an_app_s_override_replaces_its_default() {
        let home = Path::new("/h");
        let env = Env::made_up(
            Os::Linux,
            home,
            &[
                ("CLINE_DIR", "/c"),
                ("CLINE_SESSION_DATA_DIR", "/s"),
                ("GOOSE_PATH_ROOT", "/g"),
                ("GEMINI_CLI_HOME", "/gem"),
                ("COPILOT_HOME", "/cop"),
                // A relative override names no place: ignored.
                ("CODEX_HOME", "relative"),
            ],
        );
        let cline = looked(&env, "cline");
        assert!(cline.contains(&PathBuf::from("/c/data/tasks")), "{cline:?}");
        assert!(cline.contains(&PathBuf::from("/s")), "{cline:?}");
        assert_eq!(looked(&env, "goose"), [PathBuf::from("/g/data/sessions")]);
        assert_eq!(
            looked(&env, "gemini-cli"),
            [PathBuf::from("/gem/.gemini/tmp")]
        );
        assert_eq!(
            looked(&env, "copilot-cli"),
            [PathBuf::from("/cop/session-state")]
        );
        assert_eq!(looked(&env, "codex")[0], home.join(".codex/sessions"));
        // pi: a session directory of its own first, then the agent
        // directory's `sessions/` (sessions written before the override).
        let pi = Env::made_up(
            Os::Linux,
            home,
            &[
                ("PI_CODING_AGENT_DIR", "/pa"),
                ("PI_CODING_AGENT_SESSION_DIR", "/ps"),
            ],
        );
        assert_eq!(
            looked(&pi, "pi"),
            [PathBuf::from("/ps"), PathBuf::from("/pa/sessions")]
        );
        assert_eq!(
            looked(&Env::made_up(Os::Windows, home, &[]), "pi"),
            [home.join(".pi/agent/sessions")]
        );
    }
}
