//! `chatfsck explain RULE`: one rule's documentation.

use std::io::Write;

use super::out_err;
use crate::cli::ExplainArgs;
use crate::error::Error;
use crate::exit::EXIT_CLEAN;
use crate::report::rules::Explanation;
use crate::report::{self, Format};
use crate::rules;

pub fn run(a: ExplainArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let render = report::renderer::<Explanation>(Format::Human)?;
    let rule = rules::find(&a.rule).ok_or_else(|| {
        Error::Usage(format!(
            "unknown rule `{}` (run `chatfsck rules` for the list)",
            a.rule
        ))
    })?;
    let doc = Explanation {
        rule,
        profiles: crate::format::PROFILES,
    };
    render(&doc, out).map_err(out_err)?;
    Ok(EXIT_CLEAN)
}
