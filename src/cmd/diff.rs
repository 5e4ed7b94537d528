//! `chatfsck diff`: compare two histories, or a store with its app's trace.

use std::io::Write;

use super::{limits, out_err};
use crate::cli::DiffArgs;
use crate::crosscheck::{self, DiffDoc};
use crate::diff::{self, Diff};
use crate::error::Error;
use crate::exit::{EXIT_CLEAN, EXIT_FINDINGS};
use crate::format::{self, Opened};
use crate::report;

pub fn run(a: DiffArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let lim = limits(&a.input);
    let mapping = a.input.mapping();
    // B is opened once: a trace is compared with the store, anything else
    // message by message.
    let b = match format::open_any_with(&a.b, lim, mapping.as_ref())? {
        Opened::Trace(trace) => {
            let render = report::renderer::<DiffDoc>(a.format)?;
            let doc = crosscheck::diff(
                &a.a,
                &a.b,
                trace,
                a.conversation.as_deref(),
                lim,
                mapping.as_ref(),
            )?;
            render(&doc, out).map_err(out_err)?;
            return Ok(if doc.divergent() {
                EXIT_FINDINGS
            } else {
                EXIT_CLEAN
            });
        }
        Opened::History(b) => b,
    };
    let render = report::renderer::<Diff>(a.format)?;
    let sa = match format::open_any_with(&a.a, lim, mapping.as_ref())? {
        Opened::History(sa) => sa,
        Opened::Trace(_) => {
            return Err(Error::input(
                &a.a,
                "is a trace, not a conversation store (`chatfsck diff STORE TRACE` takes the store first)",
            ));
        }
    };
    let d = diff::diff(&a.a, sa, &a.b, b, a.conversation.as_deref())?;
    render(&d, out).map_err(out_err)?;
    Ok(if d.is_equal() {
        EXIT_CLEAN
    } else {
        EXIT_FINDINGS
    })
}
