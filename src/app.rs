//! Runs a parsed command line: hands it to its command's module
//! ([`crate::cmd`]) and returns the process exit code.

use std::io::{self, Write};

use crate::cli::{Cli, Command};
use crate::cmd;
use crate::error::Error;

pub use crate::exit::{EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, EXIT_INTERRUPTED};

/// The whole command, from its arguments (the program's name first) to
/// its exit code, as the `chatfsck` binary and the Python package's
/// `chatfsck` command run it: errors printed in one line, exit code 2.
pub fn main<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::Parser;
    // An interrupted run removes the private copies and temporary output
    // it made before it exits.
    crate::cleanup::on_interrupt();
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_ERROR } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    // A bug is reported in one line with exit code 2, like any error,
    // after the panic's own message (which says where it happened).
    let outcome = std::panic::catch_unwind(|| run(cli));
    // A run interrupted meanwhile ends with the interrupt's exit code.
    crate::cleanup::settle();
    let Ok(outcome) = outcome else {
        eprintln!("error: internal error: chatfsck stopped on a bug; please report it");
        return EXIT_ERROR;
    };
    match outcome {
        Ok(code) => code,
        Err(Error::BrokenPipe) => EXIT_CLEAN,
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_ERROR
        }
    }
}

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
