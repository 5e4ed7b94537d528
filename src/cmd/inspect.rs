//! `chatfsck inspect`: what a history holds.

use std::io::Write;

use super::{check_output, emit, limits};
use crate::cli::InspectArgs;
use crate::error::Error;
use crate::exit::EXIT_CLEAN;
use crate::inspect::{self, Depth, Inspection};
use crate::report::{self, Format};

pub fn run(a: InspectArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let render = report::renderer::<Inspection>(a.format)?;
    let named = super::named(a.path.as_deref(), a.last)?;
    check_output(&a.output, &[&named.path])?;
    let depth = if a.format == Format::Html {
        Depth::Flagged
    } else {
        Depth::Timeline
    };
    let ins = inspect::inspect_with(
        &named.path,
        a.conversation.as_deref().or(named.conversation.as_deref()),
        limits(&a.input),
        a.input.mapping().as_ref(),
        depth,
    )?;
    emit(render, &ins, &a.output, out)?;
    Ok(EXIT_CLEAN)
}
