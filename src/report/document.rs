//! One output format enum for every command, and the one interface every
//! command's document is rendered through.
//!
//! A document says, format by format, how it is written, or that it has no
//! such output ([`Document::renderer`]). Everything else follows from that
//! one match: the formats a command's `--format` accepts, lists in `--help`,
//! the man page and completions ([`FormatArg`]), and the usage error for any
//! other ([`renderer`]). Adding an output format is a variant here plus a
//! renderer module; the compiler then asks each document whether it has it.

use std::ffi::OsStr;
use std::io::{self, Write};

use clap::ValueEnum;
use clap::builder::{PossibleValue, TypedValueParser};

use crate::error::Error;
use crate::escape::escape;

/// Output formats. Not every document has every format: each command's
/// `--format` takes only those of its documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Text for people: diagnostics with evidence excerpts, or tables.
    Human,
    /// One JSON document for programs (lint's: docs/json-output.md).
    Json,
    /// SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.
    Sarif,
    /// GitHub Actions workflow commands: annotations on the pull request.
    Github,
    /// Tables that paste into an issue, a pull request or documentation.
    Markdown,
    /// One self-contained HTML page (no network, no external file):
    /// timelines with tool calls linked to their results, the findings at
    /// their messages, filters. Opens from disk; attach it to a bug report.
    Html,
}

impl Format {
    /// The name `--format` takes.
    pub fn name(self) -> String {
        self.to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    }
}

/// How a document is written in one format.
pub type Render<D> = fn(&D, &mut dyn Write) -> io::Result<()>;

/// What a command prints.
pub trait Document: Sized {
    /// The command that prints it, as the usage error names it.
    const COMMAND: &'static str;

    /// How this document is written in `format`, or `None` when it has no
    /// such output. The one place a document's formats are listed.
    fn renderer(format: Format) -> Option<Render<Self>>;
}

/// The formats `D` is written in, in the enum's order.
pub fn formats<D: Document>() -> Vec<Format> {
    Format::value_variants()
        .iter()
        .copied()
        .filter(|f| D::renderer(*f).is_some())
        .collect()
}

/// The shared check: how `D` is written in `format`, or a usage error that
/// names the command and the formats it has.
pub fn renderer<D: Document>(format: Format) -> Result<Render<D>, Error> {
    D::renderer(format)
        .ok_or_else(|| Error::Usage(no_output(D::COMMAND, &format.name(), &formats::<D>())))
}

/// The one-line refusal of a format a command does not write.
fn no_output(command: &str, format: &str, formats: &[Format]) -> String {
    let names: Vec<String> = formats.iter().map(|f| f.name()).collect();
    format!(
        "`{command}` has no `{format}` output (its formats: {})",
        names.join(", ")
    )
}

/// The value parser of a command's `--format`: only the formats of the
/// documents it prints, so `--help`, the man page and the completions list
/// just those, and any other value is refused in one line (exit code 2)
/// with the same words as [`renderer`].
#[derive(Debug, Clone)]
pub struct FormatArg {
    formats: Vec<Format>,
}

impl FormatArg {
    /// `--format` of a command that prints `D`.
    pub fn of<D: Document>() -> Self {
        FormatArg {
            formats: formats::<D>(),
        }
    }

    /// …and, depending on its input, `E`: the formats of either.
    pub fn or<E: Document>(mut self) -> Self {
        let more = formats::<E>();
        self.formats = Format::value_variants()
            .iter()
            .copied()
            .filter(|f| self.formats.contains(f) || more.contains(f))
            .collect();
        self
    }
}

impl TypedValueParser for FormatArg {
    type Value = Format;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<Format, clap::Error> {
        let name = value.to_string_lossy();
        match Format::from_str(&name, false) {
            Ok(f) if self.formats.contains(&f) => Ok(f),
            _ => Err(clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                // The value is the user's: escaped like any text we echo.
                format!(
                    "{}\n",
                    no_output(cmd.get_name(), &escape(&name), &self.formats)
                ),
            )),
        }
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            self.formats.iter().filter_map(|f| f.to_possible_value()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Plain;

    impl Document for Plain {
        const COMMAND: &'static str = "plain";
        fn renderer(format: Format) -> Option<Render<Self>> {
            match format {
                Format::Human => Some(|_, out| writeln!(out, "plain")),
                _ => None,
            }
        }
    }

    #[test]
    fn a_format_a_document_lacks_is_one_usage_line() {
        assert_eq!(formats::<Plain>(), [Format::Human]);
        let mut out = Vec::new();
        renderer::<Plain>(Format::Human).unwrap()(&Plain, &mut out).unwrap();
        assert_eq!(out, b"plain\n");
        match renderer::<Plain>(Format::Sarif) {
            Err(Error::Usage(m)) => {
                assert_eq!(m, "`plain` has no `sarif` output (its formats: human)")
            }
            _ => panic!("sarif accepted"),
        }
    }
}
