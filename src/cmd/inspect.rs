//! `chatfsck inspect`: what a history holds.

use std::io::Write;

use super::{limits, out_err};
use crate::cli::InspectArgs;
use crate::error::Error;
use crate::exit::EXIT_CLEAN;
use crate::inspect::{self, Inspection};
use crate::report;

pub fn run(a: InspectArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let render = report::renderer::<Inspection>(a.format)?;
    let ins = inspect::inspect(
        &a.path,
        a.conversation.as_deref(),
        limits(&a.input),
        a.input.mapping().as_ref(),
    )?;
    render(&ins, out).map_err(out_err)?;
    Ok(EXIT_CLEAN)
}
