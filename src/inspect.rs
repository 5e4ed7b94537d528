//! `inspect`: what a source holds, conversation by conversation, as plain
//! data for the inspect report.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::escape::preview;
use crate::finding::Severity;
use crate::lint::Stats;
use crate::model::{Conversation, Loc, PartKind, SourceInfo};
use crate::rules::{self, Selection};
use crate::source::{self, Limits};

/// Characters of text shown per timeline row.
pub const PREVIEW: usize = 48;

#[derive(Debug, Serialize)]
pub struct Row {
    pub position: usize,
    #[serde(flatten)]
    pub loc: Loc,
    pub role: &'static str,
    pub parts: Vec<String>,
    pub tool_ids: Vec<String>,
    pub preview: String,
}

#[derive(Debug, Serialize)]
pub struct ConvView {
    pub id: String,
    #[serde(flatten)]
    pub stats: Stats,
    pub errors: usize,
    pub warnings: usize,
    pub findings: Vec<String>,
    pub timeline: Vec<Row>,
}

#[derive(Debug, Serialize)]
pub struct Inspection {
    pub path: String,
    pub format: &'static str,
    pub dialect: &'static str,
    pub conversations: Vec<ConvView>,
    #[serde(skip)]
    pub info: Option<Arc<SourceInfo>>,
}

fn row(pos: usize, m: &crate::model::Message) -> Row {
    let mut parts = Vec::new();
    let mut ids = Vec::new();
    let mut text = String::new();
    for p in &m.parts {
        let name = p.kind.type_name().to_string();
        if parts.last() != Some(&name) {
            parts.push(name);
        }
        match &p.kind {
            PartKind::ToolCall { id, name, .. } => {
                ids.push(id.clone());
                if text.is_empty() {
                    text = format!("{name}(…)");
                }
            }
            PartKind::ToolResult {
                call_id, content, ..
            } => {
                ids.push(call_id.clone());
                if text.is_empty() {
                    text = content.clone();
                }
            }
            PartKind::Text { text: t } if !t.trim().is_empty() => {
                if text.is_empty() || text.ends_with("(…)") {
                    text = t.clone();
                }
            }
            PartKind::Thinking { text: t } if text.is_empty() && !t.trim().is_empty() => {
                text = format!("[thinking] {t}");
            }
            _ => {}
        }
    }
    Row {
        position: pos,
        loc: m.loc.clone(),
        role: m.role.as_str(),
        parts,
        tool_ids: ids,
        preview: preview(&text, PREVIEW),
    }
}

pub fn view(conv: &Conversation) -> ConvView {
    let findings = rules::check(conv, &Selection::default());
    ConvView {
        id: conv.id.clone(),
        stats: Stats::of(conv),
        errors: findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count(),
        warnings: findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .count(),
        findings: findings
            .iter()
            .map(|f| {
                let at = f.line().map(|l| format!("line {l}: ")).unwrap_or_default();
                format!("{}: {at}{}", f.rule, f.summary)
            })
            .collect(),
        timeline: conv
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| row(i, m))
            .collect(),
    }
}

pub fn inspect(path: &Path, conversation: Option<&str>, limits: Limits) -> Result<Inspection> {
    let mut src = source::open(path, limits)?;
    let mut convs = Vec::new();
    while let Some(conv) = src.next_conversation() {
        let conv = conv?;
        if conversation.is_some_and(|want| want != conv.id) {
            continue;
        }
        convs.push(view(&conv));
    }
    if let Some(want) = conversation
        && convs.is_empty()
    {
        return Err(Error::input(path, format!("no conversation `{want}`")));
    }
    let info = src.info();
    Ok(Inspection {
        path: info.path.display().to_string(),
        format: info.format,
        dialect: info.dialect,
        conversations: convs,
        info: Some(info),
    })
}
