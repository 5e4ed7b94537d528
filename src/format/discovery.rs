//! What an app's discovery is, for the registry in `format/mod.rs`
//! ([`super::APPS`]): where the app keeps its histories on this machine,
//! and which of the files there are its sessions, named as the client
//! names them. Each app's folder defines one [`App`] in its `discover.rs`
//! (the shape of atuin's importers: one small source per program, each
//! knowing its own default path and honouring the program's own override
//! before it).
//!
//! Every place is computed from an [`Env`]: the process's environment and
//! platform directories, or one a test builds for another platform.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The platform whose conventions an app follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
    MacOs,
    Windows,
}

/// The environment discovery reads: the home directory, the platform's
/// per-user directories (from the `dirs` crate, which honours
/// `XDG_CONFIG_HOME` and `XDG_DATA_HOME` on Linux) and the variables the
/// apps' own overrides are read from.
pub struct Env {
    pub os: Os,
    pub home: Option<PathBuf>,
    /// The platform's configuration directory: `$XDG_CONFIG_HOME` or
    /// `~/.config` (Linux), `~/Library/Application Support` (macOS),
    /// `%APPDATA%` (Windows). VS Code and its forks keep `User/` there.
    pub config_dir: Option<PathBuf>,
    vars: Vars,
}

/// How an [`Env`] reads a variable.
type Vars = Box<dyn Fn(&str) -> Option<OsString> + Send + Sync>;

impl Env {
    /// This process's environment.
    pub fn from_process() -> Env {
        let os = if cfg!(windows) {
            Os::Windows
        } else if cfg!(target_os = "macos") {
            Os::MacOs
        } else {
            Os::Linux
        };
        Env {
            os,
            home: dirs::home_dir(),
            config_dir: dirs::config_dir(),
            vars: Box::new(|k| std::env::var_os(k)),
        }
    }

    /// An environment made up for a platform (for tests): `vars` are the
    /// only variables set.
    pub fn made_up(os: Os, home: &Path, vars: &[(&str, &str)]) -> Env {
        let config_dir = match os {
            Os::Linux => home.join(".config"),
            Os::MacOs => home.join("Library/Application Support"),
            Os::Windows => home.join("AppData").join("Roaming"),
        };
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        let mut env = Env {
            os,
            home: Some(home.to_path_buf()),
            config_dir: Some(config_dir),
            vars: Box::new(move |k| {
                vars.iter()
                    .find(|(name, _)| name == k)
                    .map(|(_, v)| v.clone())
            }),
        };
        if os == Os::Linux
            && let Some(x) = env.var("XDG_CONFIG_HOME")
        {
            env.config_dir = Some(x);
        }
        env
    }

    /// A variable naming a directory: set, not empty, and absolute (the
    /// XDG specification ignores a relative one; a relative override would
    /// name a different place from every working directory).
    pub fn var(&self, name: &str) -> Option<PathBuf> {
        let v = (self.vars)(name)?;
        let p = PathBuf::from(v);
        (!p.as_os_str().is_empty() && p.is_absolute()).then_some(p)
    }

    /// A variable's text, when it is set, not empty, and UTF-8 (a URL,
    /// not a path).
    pub fn var_text(&self, name: &str) -> Option<String> {
        let v = (self.vars)(name)?.into_string().ok()?;
        (!v.is_empty()).then_some(v)
    }

    /// [`Env::var`], with a leading `~` or `~/` read as the home directory
    /// (clients that expand it themselves: Qwen Code's `QWEN_HOME`).
    pub fn var_tilde(&self, name: &str) -> Option<PathBuf> {
        let v = (self.vars)(name)?;
        let s = v.to_str()?;
        let p = if s == "~" {
            self.home.clone()?
        } else if let Some(rest) = s.strip_prefix("~/") {
            self.home.as_ref()?.join(rest)
        } else {
            PathBuf::from(s)
        };
        (!p.as_os_str().is_empty() && p.is_absolute()).then_some(p)
    }

    /// `~/<rel>`.
    pub fn in_home(&self, rel: &str) -> Option<PathBuf> {
        self.home.as_ref().map(|h| h.join(rel))
    }

    /// The XDG data directory as the XDG convention itself reads it on
    /// every platform (Node's `xdg-basedir`, Rust's `etcetera` Xdg):
    /// `$XDG_DATA_HOME`, else `~/.local/share`.
    pub fn xdg_data(&self) -> Option<PathBuf> {
        self.var("XDG_DATA_HOME")
            .or_else(|| self.in_home(".local/share"))
    }
}

/// One session an app's discovery found: the file that holds it, and the
/// name its client shows.
#[derive(Debug, Clone)]
pub struct Session {
    /// The app that keeps it.
    pub app: &'static str,
    /// The file chatfsck reads (a session file, or the database that
    /// holds the session among others).
    pub path: PathBuf,
    /// The id the client shows (`claude --resume`, `codex resume`, …).
    pub id: String,
    /// In a database of many sessions: the conversation to read.
    pub conversation: Option<String>,
    /// When it last changed.
    pub modified: Option<SystemTime>,
}

/// What an app's discovery found on this machine.
#[derive(Debug, Default)]
pub struct Found {
    /// Every place looked at, whether it exists or not.
    pub looked: Vec<PathBuf>,
    /// The files to read: each a session, or a store of sessions.
    pub inputs: Vec<PathBuf>,
    /// Places the app keeps histories in a layout chatfsck does not read:
    /// the path and what it holds. Never counted as clean.
    pub unknown: Vec<(PathBuf, String)>,
}

impl Found {
    /// Look at `dir`: note it, and whether it exists.
    pub fn look(&mut self, dir: PathBuf) -> Option<PathBuf> {
        let exists = dir.is_dir();
        self.looked.push(dir.clone());
        exists.then_some(dir)
    }
}

/// An app whose histories chatfsck finds without a path.
pub struct App {
    /// What users call it (the table's first column).
    pub name: &'static str,
    /// A stable key for the JSON report.
    pub key: &'static str,
    /// The files this app keeps its histories in, and where it looked.
    pub find: fn(&Env) -> Found,
    /// The sessions one of those files holds, as the client names them.
    /// A database lists its sessions; a session file is one.
    pub sessions: fn(&Path) -> Vec<Session>,
}

/// The files directly in `dir` (sorted) that `keep` accepts.
pub fn files_in(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| e.file_name().to_str().is_some_and(&keep))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// The directories directly in `dir` (sorted).
pub fn dirs_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// The files anywhere under `dir` (sorted, depth-first) that `keep`
/// accepts by name.
pub fn files_under(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .filter(|e| e.file_name().to_str().is_some_and(&keep))
        .map(walkdir::DirEntry::into_path)
        .collect()
}

/// A session file: its id is `id`, its time the file's.
pub fn one_session(app: &'static str, path: &Path, id: String) -> Vec<Session> {
    vec![Session {
        app,
        path: path.to_path_buf(),
        id,
        conversation: None,
        modified: modified(path),
    }]
}

/// The file's modification time.
pub fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The file's name without `suffix` (or its extension).
pub fn stem(path: &Path, suffix: &str) -> String {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    match name.strip_suffix(suffix) {
        Some(s) => s.to_string(),
        None => path
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string(),
    }
}

/// The sessions of a SQLite store: `query` answers (id, last change in
/// milliseconds since the epoch) rows. A database that cannot be read
/// lists none (lint says why when it reads it).
pub fn sessions_in_db(app: &'static str, path: &Path, query: &str) -> Vec<Session> {
    let Ok(snap) = crate::source::sqlite::open(path) else {
        return Vec::new();
    };
    let Ok(mut stmt) = snap.conn.prepare(query) else {
        return Vec::new();
    };
    let rows = stmt.query_map([], |r| {
        let id: String = r.get(0)?;
        let ms: Option<i64> = r.get(1).ok();
        Ok((id, ms))
    });
    let Ok(rows) = rows else {
        return Vec::new();
    };
    let file_time = modified(path);
    rows.filter_map(|r| r.ok())
        .map(|(id, ms)| Session {
            app,
            path: path.to_path_buf(),
            conversation: Some(id.clone()),
            id,
            modified: ms
                .and_then(|ms| u64::try_from(ms).ok())
                .map(|ms| SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(ms))
                .or(file_time),
        })
        .collect()
}
