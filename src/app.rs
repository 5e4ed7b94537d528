//! Runs a parsed command line. Returns the process exit code.

use std::io::{self, Write};

use crate::cli::{Cli, Command, InputArgs};
use crate::config::Config;
use crate::error::Error;
use crate::finding::Severity;
use crate::lint::{self, Options};
use crate::progress;
use crate::report;
use crate::rules;
use crate::source::Limits;

pub const EXIT_CLEAN: u8 = 0;
pub const EXIT_FINDINGS: u8 = 1;
pub const EXIT_ERROR: u8 = 2;
/// A run stopped by a signal (the shell's 128 + SIGINT); see [`crate::cleanup`].
pub const EXIT_INTERRUPTED: u8 = 130;

fn limits(a: &InputArgs) -> Limits {
    Limits {
        max_line_bytes: a.max_line_mib.saturating_mul(1 << 20),
        ..Limits::default()
    }
}

fn out_err(e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return Error::BrokenPipe;
    }
    Error::Output {
        path: "<stdout>".into(),
        cause: e.to_string(),
    }
}

/// Run a command; errors that stop the job come back as `Err`.
pub fn run(cli: Cli) -> Result<u8, Error> {
    // Reports write many small pieces; stdout alone would make a system
    // call per line.
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    match cli.command {
        Command::Lint(a) => {
            let render = report::renderer::<lint::Outcome>(a.format)?;
            let config = Config::load(a.config.config.as_deref())?;
            // Flags override the file, key by key.
            let selection = config.selection(a.select, a.ignore)?;
            let fail_on = a.fail_on.or(config.fail_on).unwrap_or(Severity::Error);
            let opts = Options {
                selection,
                limits: limits(&a.input),
                mapping: a.input.mapping(),
                trace: a.trace,
            };
            let bar = progress::Bar::for_run(a.format);
            let outcome = lint::lint_with_progress(&a.paths, &opts, &|p| {
                if let Some(bar) = &bar {
                    bar.event(p)
                }
            });
            if let Some(bar) = &bar {
                bar.finish();
            }
            let outcome = outcome?;
            for e in &outcome.errors {
                eprintln!("error: {e}");
            }
            render(&outcome, &mut out).map_err(out_err)?;
            out.flush().map_err(out_err)?;
            if !outcome.errors.is_empty() {
                return Ok(EXIT_ERROR);
            }
            let failing = outcome.findings().any(|f| f.severity >= fail_on);
            Ok(if failing { EXIT_FINDINGS } else { EXIT_CLEAN })
        }
        Command::Inspect(a) => {
            let render = report::renderer::<crate::inspect::Inspection>(a.format)?;
            let ins = crate::inspect::inspect(
                &a.path,
                a.conversation.as_deref(),
                limits(&a.input),
                a.input.mapping().as_ref(),
            )?;
            render(&ins, &mut out).map_err(out_err)?;
            Ok(EXIT_CLEAN)
        }
        Command::Repair(a) => {
            let render = report::renderer::<crate::repair::Report>(a.format)?;
            let config = Config::load(a.config.config.as_deref())?;
            let policy =
                config.repair_policy_with(a.orphan_calls, a.no_synthesize.then_some(false))?;
            let selection = config.selection(a.select, a.ignore)?;
            if let Some(log) = &a.log {
                if log.exists() && !a.force {
                    return Err(Error::Usage(format!(
                        "{} already exists; pass --force to overwrite it",
                        log.display()
                    )));
                }
                if a.output.as_ref() == Some(log) || log == &a.input {
                    return Err(Error::Usage(
                        "the repair log needs a path of its own".into(),
                    ));
                }
            }
            let opts = crate::repair::Options {
                selection,
                policy,
                limits: limits(&a.input_args),
                dry_run: a.dry_run,
                force: a.force,
                mapping: a.input_args.mapping(),
                emit_sql: a.emit_sql.clone(),
                target: a.target.clone(),
            };
            let output = if a.dry_run { None } else { a.output.as_deref() };
            let rep = crate::repair::repair(&a.input, output, &opts)?;
            if let Some(log) = &a.log {
                report::repair::write_log(&rep, log, a.force)?;
            }
            render(&rep, &mut out).map_err(out_err)?;
            Ok(EXIT_CLEAN)
        }
        Command::Diff(a) => {
            let lim = limits(&a.input);
            let mapping = a.input.mapping();
            // B is opened once: a trace is compared with the store, anything
            // else message by message.
            let b = match crate::source::open_any_with(&a.b, lim, mapping.as_ref())? {
                crate::source::Opened::Trace(trace) => {
                    let render = report::renderer::<crate::crosscheck::DiffDoc>(a.format)?;
                    let doc = crate::crosscheck::diff(
                        &a.a,
                        &a.b,
                        trace,
                        a.conversation.as_deref(),
                        lim,
                        mapping.as_ref(),
                    )?;
                    render(&doc, &mut out).map_err(out_err)?;
                    out.flush().map_err(out_err)?;
                    return Ok(if doc.divergent() {
                        EXIT_FINDINGS
                    } else {
                        EXIT_CLEAN
                    });
                }
                crate::source::Opened::History(b) => b,
            };
            let render = report::renderer::<crate::diff::Diff>(a.format)?;
            let sa = match crate::source::open_any_with(&a.a, lim, mapping.as_ref())? {
                crate::source::Opened::History(sa) => sa,
                crate::source::Opened::Trace(_) => {
                    return Err(Error::input(
                        &a.a,
                        "is a trace, not a conversation store (`chatfsck diff STORE TRACE` takes the store first)",
                    ));
                }
            };
            let d = crate::diff::diff(&a.a, sa, &a.b, b, a.conversation.as_deref())?;
            render(&d, &mut out).map_err(out_err)?;
            Ok(if d.is_equal() {
                EXIT_CLEAN
            } else {
                EXIT_FINDINGS
            })
        }
        Command::Rules(a) => {
            let render = report::renderer::<report::rules::Catalogue>(a.format)?;
            render(&report::rules::Catalogue(rules::RULES), &mut out).map_err(out_err)?;
            Ok(EXIT_CLEAN)
        }
        Command::Explain(a) => {
            let render = report::renderer::<rules::Rule>(report::Format::Human)?;
            let rule = rules::find(&a.rule).ok_or_else(|| {
                Error::Usage(format!(
                    "unknown rule `{}` (run `chatfsck rules` for the list)",
                    a.rule
                ))
            })?;
            render(rule, &mut out).map_err(out_err)?;
            Ok(EXIT_CLEAN)
        }
    }
}
