//! Runs a parsed command line: hands it to its command's module
//! ([`crate::cmd`]) and returns the process exit code.

use std::io::{self, Write};

use crate::cli::{Cli, Command};
use crate::cmd;
use crate::error::Error;

pub use crate::exit::{EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, EXIT_INTERRUPTED};

/// Run a command; errors that stop the job come back as `Err`.
pub fn run(cli: Cli) -> Result<u8, Error> {
    // Reports write many small pieces; stdout alone would make a system
    // call per line.
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let code = match cli.command {
        Command::Lint(a) => cmd::lint::run(a, &mut out),
        Command::Inspect(a) => cmd::inspect::run(a, &mut out),
        Command::Repair(a) => cmd::repair::run(a, &mut out),
        Command::Diff(a) => cmd::diff::run(a, &mut out),
        Command::Rules(a) => cmd::rules::run(a, &mut out),
        Command::Explain(a) => cmd::explain::run(a, &mut out),
    }?;
    // Flushed here, not when dropped: a write that fails is an error.
    out.flush().map_err(cmd::out_err)?;
    Ok(code)
}
