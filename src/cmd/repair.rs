//! `chatfsck repair`: write a repaired copy of a history.

use std::io::Write;

use super::{limits, out_err};
use crate::cli::RepairArgs;
use crate::config::Config;
use crate::error::Error;
use crate::exit::EXIT_CLEAN;
use crate::repair::{self, Report};
use crate::report;

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
    let rep = repair::repair(&a.input, output, &opts)?;
    if let Some(log) = &a.log {
        report::repair::write_log(&rep, log, a.force)?;
    }
    render(&rep, out).map_err(out_err)?;
    Ok(EXIT_CLEAN)
}
