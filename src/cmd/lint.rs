//! `chatfsck lint`: check histories and report every finding.

use std::io::Write;

use super::{check_output, emit, limits};
use crate::cli::LintArgs;
use crate::config::Config;
use crate::discover;
use crate::error::Error;
use crate::exit::{EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS};
use crate::finding::Severity;
use crate::format::discovery::Env;
use crate::lint::{self, Options, Outcome};
use crate::progress;
use crate::report::{self, Format};

pub fn run(a: LintArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let render = report::renderer::<Outcome>(a.format)?;
    let config = Config::load(a.config.config.as_deref())?;
    // Flags override the file, key by key.
    let selection = config.selection(a.select, a.ignore)?;
    let fail_on = a.fail_on.or(config.fail_on).unwrap_or(Severity::Error);
    let mut opts = Options {
        selection,
        limits: limits(&a.input),
        mapping: a.input.mapping(),
        detail: if a.format == Format::Html {
            lint::DETAIL_LIMIT
        } else {
            0
        },
        trace: a.trace,
        only: None,
    };
    // No path: every app's histories, where each app keeps them.
    let discovering = a.paths.is_empty() && !a.last;
    let mut paths = Vec::with_capacity(a.paths.len());
    if a.last {
        let named = super::named(None, true)?;
        opts.only = named.conversation;
        paths.push(named.path);
    }
    for p in &a.paths {
        let named = super::named(Some(p), false)?;
        // A session in a database of many: only it, when it is the one
        // input.
        if a.paths.len() == 1 {
            opts.only = named.conversation;
        }
        paths.push(named.path);
    }
    let mut inputs: Vec<&std::path::Path> = paths.iter().map(|p| p.as_path()).collect();
    inputs.extend(opts.trace.as_deref());
    check_output(&a.output, &inputs)?;
    let bar = progress::Bar::for_run(a.format);
    let tell = |p: lint::Progress<'_>| {
        if let Some(bar) = &bar {
            bar.event(p)
        }
    };
    let outcome = if discovering {
        discover::lint(&Env::from_process(), &opts, &tell)
    } else {
        lint::lint_with_progress(&paths, &opts, &tell)
    };
    if let Some(bar) = &bar {
        bar.finish();
    }
    let outcome = outcome?;
    for e in &outcome.errors {
        eprintln!("error: {e}");
    }
    emit(render, &outcome, &a.output, out)?;
    // An input that was not read is never clean: exit 2, unless the user
    // said files found in a directory may be left unread.
    let skip = a.skip_unreadable || config.skip_unreadable.unwrap_or(false);
    let named = outcome.errors.len() - outcome.walked_errors;
    if named > 0 || (outcome.walked_errors > 0 && !skip) {
        return Ok(EXIT_ERROR);
    }
    let failing = outcome.findings().any(|f| f.severity >= fail_on);
    Ok(if failing { EXIT_FINDINGS } else { EXIT_CLEAN })
}
