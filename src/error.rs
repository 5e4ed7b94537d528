//! Errors that stop chatfsck from doing its job (exit code 2).
//!
//! Every error renders as one line that names the file and the cause.

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub enum Error {
    /// An input could not be read or is not what chatfsck reads.
    Input { path: PathBuf, cause: String },
    /// A path that is readable but holds no conversation history; directory
    /// walks skip these, a file named on the command line is an error.
    NotHistory { path: PathBuf, cause: String },
    /// A file of a store that is read through another file (a message
    /// file of opencode's legacy tree, read through its session file): a
    /// directory walk skips it, since it is read; named alone, it is an
    /// error that says which file to name.
    PartOf { path: PathBuf, cause: String },
    /// Bad arguments.
    Usage(String),
    /// A configuration file that cannot be read or is not valid.
    Config { path: PathBuf, cause: String },
    /// Writing output failed.
    Output { path: PathBuf, cause: String },
    /// The reader of standard output went away (`| head`): not an error
    /// worth a message.
    BrokenPipe,
}

impl Error {
    pub fn input(path: impl AsRef<Path>, cause: impl Into<String>) -> Self {
        Error::Input {
            path: path.as_ref().to_path_buf(),
            cause: cause.into(),
        }
    }

    pub fn not_history(path: impl AsRef<Path>, cause: impl Into<String>) -> Self {
        Error::NotHistory {
            path: path.as_ref().to_path_buf(),
            cause: cause.into(),
        }
    }

    pub fn config(path: impl AsRef<Path>, cause: impl Into<String>) -> Self {
        Error::Config {
            path: path.as_ref().to_path_buf(),
            cause: cause.into(),
        }
    }

    pub fn io(path: impl AsRef<Path>, err: &std::io::Error) -> Self {
        Error::input(path, io_cause(err))
    }

    /// Checking `path` hit a bug: `what` (a thread, or the check itself)
    /// panicked with `panic`. The input fails with this cause; the run goes
    /// on with the others and ends with exit code 2, as for any input that
    /// cannot be checked.
    pub fn internal(
        path: impl AsRef<Path>,
        what: &str,
        panic: &(dyn std::any::Any + Send),
    ) -> Self {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        let message = message.lines().next().unwrap_or_default().to_string();
        Error::input(
            path,
            format!("internal error: {what} stopped on a bug ({message}); please report it"),
        )
    }
}

/// An I/O error as a one-line cause, without the OS error number.
pub fn io_cause(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::IsADirectory => "is a directory".to_string(),
        _ => lowercase_first(&strip_os_error(&err.to_string())),
    }
}

fn strip_os_error(s: &str) -> String {
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s.to_string(),
    }
}

fn lowercase_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Input { path, cause }
            | Error::NotHistory { path, cause }
            | Error::PartOf { path, cause }
            | Error::Config { path, cause }
            | Error::Output { path, cause } => {
                write!(
                    f,
                    "{}: {}",
                    crate::escape::escape(&path.display().to_string()),
                    crate::escape::escape(cause)
                )
            }
            Error::Usage(msg) => f.write_str(&crate::escape::escape(msg)),
            Error::BrokenPipe => f.write_str("standard output was closed"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;
