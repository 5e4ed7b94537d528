//! Runs a parsed command line. Returns the process exit code.

use std::io::{self, Write};

use crate::cli::{Cli, Command, InputArgs, InspectFormat, ListFormat};
use crate::error::Error;
use crate::lint::{self, Options};
use crate::report;
use crate::rules::{self, Selection};
use crate::source::Limits;

pub const EXIT_CLEAN: u8 = 0;
pub const EXIT_FINDINGS: u8 = 1;
pub const EXIT_ERROR: u8 = 2;

fn limits(a: &InputArgs) -> Limits {
    Limits {
        max_line_bytes: a.max_line_mib.saturating_mul(1 << 20),
        ..Limits::default()
    }
}

fn out_err(e: io::Error) -> Error {
    Error::Output {
        path: "<stdout>".into(),
        cause: e.to_string(),
    }
}

/// Run a command; errors that stop the job come back as `Err`.
pub fn run(cli: Cli) -> Result<u8, Error> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match cli.command {
        Command::Lint(a) => {
            let selection = Selection {
                select: a.select,
                ignore: a.ignore,
            };
            selection.validate().map_err(Error::Usage)?;
            let opts = Options {
                selection,
                limits: limits(&a.input),
                trace: a.trace,
            };
            let outcome = lint::lint(&a.paths, &opts)?;
            for e in &outcome.errors {
                eprintln!("error: {e}");
            }
            report::for_format(a.format)
                .render(&outcome, &mut out)
                .map_err(out_err)?;
            out.flush().map_err(out_err)?;
            if !outcome.errors.is_empty() {
                return Ok(EXIT_ERROR);
            }
            let failing = outcome
                .findings()
                .any(|f| f.severity >= a.fail_on.severity());
            Ok(if failing { EXIT_FINDINGS } else { EXIT_CLEAN })
        }
        Command::Inspect(a) => {
            let ins =
                crate::inspect::inspect(&a.path, a.conversation.as_deref(), limits(&a.input))?;
            match a.format {
                InspectFormat::Human => report::inspect::human(&ins, &mut out),
                InspectFormat::Json => report::inspect::json(&ins, &mut out),
                InspectFormat::Markdown => report::inspect::markdown(&ins, &mut out),
            }
            .map_err(out_err)?;
            Ok(EXIT_CLEAN)
        }
        Command::Rules(a) => {
            report::rules::list(a.format, &mut out).map_err(out_err)?;
            Ok(EXIT_CLEAN)
        }
        Command::Diff(a) => {
            let doc = crate::crosscheck::diff(
                &a.store,
                &a.trace,
                a.conversation.as_deref(),
                limits(&a.input),
            )?;
            match a.format {
                ListFormat::Human => report::diff::human(&doc, &mut out),
                ListFormat::Json => report::diff::json(&doc, &mut out),
            }
            .map_err(out_err)?;
            out.flush().map_err(out_err)?;
            Ok(if doc.divergent() {
                EXIT_FINDINGS
            } else {
                EXIT_CLEAN
            })
        }
        Command::Explain(a) => {
            let rule = rules::find(&a.rule).ok_or_else(|| {
                Error::Usage(format!(
                    "unknown rule `{}` (run `chatfsck rules` for the list)",
                    a.rule
                ))
            })?;
            report::rules::explain(rule, &mut out).map_err(out_err)?;
            Ok(EXIT_CLEAN)
        }
    }
}
