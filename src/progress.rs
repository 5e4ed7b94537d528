//! A progress bar on stderr for long `lint` runs over many files.
//!
//! Presentation only: the engine reports [`Progress`] events through a
//! callback and knows nothing of this. The bar appears only for human
//! output on a terminal, and only once a run has taken long enough to need
//! it, so short runs and every machine-readable format print nothing extra.

use std::io::{self, IsTerminal};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::escape::escape;
use crate::lint::Progress;
use crate::report::Format;

/// How long a run goes before the bar appears.
const DELAY: Duration = Duration::from_millis(400);

/// Whether a run with this output format gets a progress bar: only human
/// output, only when stderr is a terminal.
pub fn wanted(format: Format, stderr_is_terminal: bool) -> bool {
    format == Format::Human && stderr_is_terminal
}

pub struct Bar {
    bar: ProgressBar,
    start: Instant,
    shown: AtomicBool,
}

impl Bar {
    /// A bar for this run, or `None` when the run should print none.
    pub fn for_run(format: Format) -> Option<Bar> {
        wanted(format, io::stderr().is_terminal()).then(Bar::new)
    }

    fn new() -> Bar {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} files {wide_msg}")
                .expect("the template is valid")
                .progress_chars("█▉▊▋▌▍▎▏ "),
        );
        Bar {
            bar,
            start: Instant::now(),
            shown: AtomicBool::new(false),
        }
    }

    /// Handle one engine event.
    pub fn event(&self, p: Progress<'_>) {
        match p {
            Progress::Started { inputs } => self.bar.set_length(inputs as u64),
            Progress::Checked { path } => {
                self.bar.inc(1);
                self.bar
                    .set_message(escape(&path.display().to_string()).into_owned());
                let many = self.bar.length().unwrap_or(0) > 1;
                if many
                    && self.start.elapsed() >= DELAY
                    && !self.shown.swap(true, Ordering::Relaxed)
                {
                    self.bar.set_draw_target(ProgressDrawTarget::stderr());
                }
            }
        }
    }

    /// Remove the bar before the report is printed.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::*;

    #[test]
    fn only_human_output_on_a_terminal_gets_a_bar() {
        assert!(wanted(Format::Human, true));
        assert!(!wanted(Format::Human, false));
        for f in Format::value_variants().iter().copied() {
            assert_eq!(wanted(f, true), f == Format::Human, "{f:?}");
        }
    }
}
