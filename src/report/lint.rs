//! `lint`'s document, the outcome of a run: one printer per format (a
//! module each, beside this one).

use super::{Document, Format, Render, github, html, human, json, markdown, sarif};
use crate::lint::Outcome;

impl Document for Outcome {
    const COMMAND: &'static str = "lint";

    fn renderer(format: Format) -> Option<Render<Self>> {
        let render: Render<Self> = match format {
            Format::Human => |o, out| human::Human::from_env().render(o, out),
            Format::Json => |o, out| json::Json.render(o, out),
            Format::Sarif => |o, out| sarif::Sarif::from_env().render(o, out),
            Format::Github => |o, out| github::Github::from_env().render(o, out),
            Format::Markdown => |o, out| markdown::Markdown.render(o, out),
            Format::Html => html::lint,
        };
        Some(render)
    }
}
