//! `chatfsck rules`: the rule catalogue.

use std::io::Write;

use super::out_err;
use crate::cli::RulesArgs;
use crate::error::Error;
use crate::exit::EXIT_CLEAN;
use crate::report::{self, rules::Catalogue};
use crate::rules::RULES;

pub fn run(a: RulesArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let render = report::renderer::<Catalogue>(a.format)?;
    render(&Catalogue(RULES), out).map_err(out_err)?;
    Ok(EXIT_CLEAN)
}
