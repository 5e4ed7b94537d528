//! `chatfsck repair`: write a repaired copy of a history.

use std::io::Write;

use super::{limits, out_err};
use crate::cli::RepairArgs;
use crate::config::Config;
use crate::error::Error;
use crate::exit::EXIT_CLEAN;
use crate::repair::{self, Report};
use crate::report;
use crate::write::atomic::Atomic;

pub fn run(a: RepairArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let render = report::renderer::<Report>(a.format)?;
    let config = Config::load(a.config.config.as_deref())?;
    let policy = config.repair_policy_with(a.orphan_calls, a.no_synthesize.then_some(false))?;
    let selection = config.selection(a.select, a.ignore)?;
    if let Some(log) = &a.log {
        let outputs: Vec<&std::path::Path> = [a.output.as_deref(), a.emit_sql.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        repair::check_log(&a.input, &outputs, log, a.force)?;
    }
    let opts = repair::Options {
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
    // The log's temporary file is made first: a log that cannot be
    // written stops the repair before any copy exists.
    let log_tmp = match &a.log {
        Some(log) => Some((Atomic::new(log)?, log)),
        None => None,
    };
    // A copy is only complete with its log: until both are in place, an
    // interrupt removes both. Registered before they exist when the paths
    // are free (so no window is left); when --force replaces files, once
    // the copy replaced its file.
    let guard = || match (output, &a.log) {
        (Some(o), Some(l)) => Some([
            crate::cleanup::register(o.to_path_buf()),
            crate::cleanup::register(l.clone()),
        ]),
        _ => None,
    };
    let free = output.is_some_and(|o| !o.exists()) && a.log.as_ref().is_some_and(|l| !l.exists());
    let mut pair = if free { guard() } else { None };
    let rep = repair::repair(&a.input, output, &opts)?;
    if pair.is_none() {
        pair = guard();
    }
    if let Some((tmp, log)) = log_tmp
        && let Err(e) = report::repair::write_log(&rep, tmp, log, a.force)
    {
        // A copy without its log would hold fewer payloads than the
        // input, with the others nowhere: remove it.
        if let Some(out) = output {
            let _ = std::fs::remove_file(out);
        }
        return Err(e);
    }
    drop(pair);
    render(&rep, out).map_err(out_err)?;
    Ok(EXIT_CLEAN)
}
