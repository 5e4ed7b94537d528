//! One conversation: its findings, its timeline (one lane per role, each
//! tool call linked to its result), and, where the engine has them, the
//! messages a chunk store's loader builds and the prompts a trace recorded.

use std::io::{self, Write};

use super::esc;
use crate::detail::{Detail, PartView};
use crate::escape::html_escape;
use crate::finding::Finding;
use crate::inspect::TraceConvView;
use crate::report::{plural, record};

pub(crate) struct Conv<'a> {
    /// The section's id, `c3`: ids never hold history text.
    pub anchor: &'a str,
    pub id: &'a str,
    pub file: &'a str,
    pub findings: &'a [&'a Finding],
    pub detail: &'a Detail,
    pub open: bool,
}

/// The lane a role speaks in.
fn lane(role: &str) -> &'static str {
    match role {
        "system" | "developer" => "system",
        "user" => "user",
        "assistant" => "assistant",
        _ => "tool",
    }
}

fn worst<'a>(fs: impl Iterator<Item = &'a &'a Finding>) -> Option<&'static str> {
    fs.map(|f| f.severity).max().map(|s| s.as_str())
}

/// One finding, with its evidence and the rule's documentation.
pub(crate) fn finding(
    out: &mut dyn Write,
    id: &str,
    message: Option<String>,
    f: &Finding,
) -> io::Result<()> {
    let sev = f.severity.as_str();
    writeln!(
        out,
        "<article class=\"finding sev-{sev}\" id=\"{id}\" data-rule=\"{}\" data-sev=\"{sev}\">",
        esc(f.rule)
    )?;
    writeln!(
        out,
        "<div class=\"head\"><span class=\"badge sev\">{sev}</span><span class=\"badge rule\">{}</span><span class=\"sum\">{}</span></div>",
        esc(f.rule),
        esc(&f.summary)
    )?;
    let at = f
        .loc
        .as_ref()
        .map(|l| format!(" · {}", esc(&record(l))))
        .unwrap_or_default();
    let msg = match (message, f.message) {
        (Some(anchor), Some(m)) => format!("<a href=\"#{anchor}\">message {m}</a>"),
        (None, Some(m)) => format!("message {m}"),
        _ => "the conversation".to_string(),
    };
    writeln!(
        out,
        "<div class=\"where\">at {msg}{at}{}{}</div>",
        if f.ids.is_empty() {
            String::new()
        } else {
            format!(
                " · ids <code>{}</code>",
                f.ids
                    .iter()
                    .map(|i| esc(i))
                    .collect::<Vec<_>>()
                    .join("</code>, <code>")
            )
        },
        if f.fixable {
            " · <b>repair fixes it</b>"
        } else {
            ""
        }
    )?;
    if !f.labels.is_empty() || !f.notes.is_empty() {
        writeln!(out, "<ul>")?;
        for l in &f.labels {
            let file = l
                .path
                .as_ref()
                .map(|p| {
                    format!(
                        "<span class=\"mono\">{}</span> ",
                        esc(&p.display().to_string())
                    )
                })
                .unwrap_or_default();
            writeln!(
                out,
                "<li class=\"ev\">{file}<span class=\"mono\">{}</span>: {}</li>",
                esc(&record(&l.loc)),
                esc(&l.text)
            )?;
        }
        for n in &f.notes {
            writeln!(out, "<li class=\"note\">{}</li>", esc(n))?;
        }
        writeln!(out, "</ul>")?;
    }
    if let Some(rule) = crate::rules::find(f.rule) {
        writeln!(
            out,
            "<div class=\"help\">{} <a href=\"#rule-{}\">(how to read and fix it)</a></div>",
            esc(rule.summary),
            esc(rule.name)
        )?;
    }
    writeln!(out, "</article>")
}

fn part(out: &mut dyn Write, id: &str, p: &PartView, flags: &[&str]) -> io::Result<()> {
    let mut class = p.kind.clone();
    for f in flags {
        class.push(' ');
        class.push_str(f);
    }
    write!(out, "<div class=\"part {}\" id=\"{id}\">", esc(&class))?;
    let label = match (p.kind.as_str(), &p.name, &p.id) {
        ("tool-call", Some(n), Some(i)) => format!("call {} <code>{}</code>", esc(n), esc(i)),
        ("tool-result", _, Some(i)) => format!(
            "result{} <code>{}</code>",
            if p.is_error { " (error)" } else { "" },
            esc(i)
        ),
        (k, _, _) => esc(k),
    };
    write!(out, "<span class=\"k\">{label}</span>")?;
    for f in flags {
        let what = match *f {
            "unanswered" => "no result",
            "stray" => "answers no call",
            _ => continue,
        };
        write!(out, "<span class=\"flag\">⚠ {what}</span>")?;
    }
    let long = p.chars > crate::detail::PART_PREVIEW || p.text.contains('\n');
    if long {
        write!(
            out,
            "<details><summary>{}</summary><pre>{}</pre>{}</details>",
            esc(&p.preview),
            html_escape(&p.text, true),
            if p.chars > p.text.chars().count() {
                format!(
                    "<div class=\"muted\">cut after {} of {} characters</div>",
                    p.text.chars().count(),
                    p.chars
                )
            } else {
                String::new()
            }
        )?;
    } else if !p.preview.is_empty() {
        write!(out, "<span class=\"pv\">{}</span>", esc(&p.preview))?;
    }
    writeln!(out, "</div>")
}

/// The timeline: one row per message, in its role's lane; connectors from
/// each call to its result.
fn timeline(out: &mut dyn Write, c: &Conv<'_>) -> io::Result<()> {
    let d = c.detail;
    let a = c.anchor;
    // Findings and marks by message.
    let mut at: Vec<Vec<(usize, &Finding)>> = vec![Vec::new(); d.messages.len()];
    for (k, f) in c.findings.iter().enumerate() {
        if let Some(m) = f.message.filter(|m| *m < d.messages.len()) {
            at[m].push((k, f));
        }
    }
    let mut interleaved = vec![false; d.messages.len()];
    for l in &d.links {
        for &i in &l.between {
            if let Some(x) = interleaved.get_mut(i) {
                *x = true;
            }
        }
    }
    writeln!(out, "<div class=\"timeline linked\" id=\"{a}-t\">")?;
    writeln!(
        out,
        "<div class=\"lanes\"><div></div><div class=\"l-system\">system</div><div class=\"l-user\">user</div><div class=\"l-assistant\">assistant</div><div class=\"l-tool\">tool</div></div>"
    )?;
    for (i, m) in d.messages.iter().enumerate() {
        let fs = &at[i];
        let mut class = String::from("msg");
        if let Some(w) = worst(fs.iter().map(|(_, f)| f)) {
            class.push_str(&format!(" flagged sev-{w}"));
        }
        if interleaved[i] {
            class.push_str(" interleaved");
        }
        writeln!(
            out,
            "<div class=\"row lane-{}\"><div class=\"pos\"><a href=\"#{a}-m{i}\">#{i}</a></div><div class=\"{class}\" id=\"{a}-m{i}\" data-role=\"{}\">",
            lane(m.role),
            m.role
        )?;
        let idx = m
            .stored_index
            .map(|x| format!("<span>idx {x}</span>"))
            .unwrap_or_default();
        let between = if interleaved[i] {
            "<span class=\"flag\">⚠ between a call and its result</span>"
        } else {
            ""
        };
        writeln!(
            out,
            "<div class=\"mh\"><span class=\"role\">{role}</span><span class=\"mono at\" title=\"{at}\">{at}</span>{idx}{between}</div>",
            role = m.role,
            at = esc(&record(&m.loc)),
        )?;
        for (k, p) in m.parts.iter().enumerate() {
            let mut flags = Vec::new();
            if d.unanswered.contains(&(i, k)) {
                flags.push("unanswered");
            }
            if d.strays.contains(&(i, k)) {
                flags.push("stray");
            }
            part(out, &format!("{a}-m{i}-p{k}"), p, &flags)?;
        }
        if m.parts.is_empty() {
            writeln!(out, "<div class=\"part muted\">(no content)</div>")?;
        }
        if !fs.is_empty() {
            write!(out, "<div class=\"marks\">")?;
            for (k, f) in fs {
                write!(
                    out,
                    "<a class=\"mark sev-{1}\" href=\"#{a}-f{k}\" data-rule=\"{0}\" data-sev=\"{1}\">{0}</a>",
                    esc(f.rule),
                    f.severity.as_str()
                )?;
            }
            writeln!(out, "</div>")?;
        }
        writeln!(out, "</div></div>")?;
    }
    writeln!(
        out,
        "<svg class=\"links\" xmlns=\"http://www.w3.org/2000/svg\" aria-hidden=\"true\">"
    )?;
    for l in &d.links {
        writeln!(
            out,
            "<path class=\"link{}\" data-from=\"{a}-m{}-p{}\" data-to=\"{a}-m{}-p{}\"></path>",
            if l.late { " late" } else { "" },
            l.call.0,
            l.call.1,
            l.result.0,
            l.result.1
        )?;
    }
    writeln!(out, "</svg>\n</div>")
}

/// A chunk store: the true messages beside the messages the app's
/// index-grouping loader builds of the same chunks.
fn loaded(out: &mut dyn Write, c: &Conv<'_>) -> io::Result<()> {
    let (Some(chunks), Some(loaded)) = (&c.detail.chunks, &c.detail.loaded) else {
        return Ok(());
    };
    let a = c.anchor;
    writeln!(
        out,
        "<h3>What the app loads: {} stored become {}</h3>",
        plural(c.detail.messages.len(), "message", "messages"),
        plural(loaded.len(), "message", "messages")
    )?;
    writeln!(out, "<div class=\"pairs linked\" id=\"{a}-l\">")?;
    writeln!(
        out,
        "<div class=\"col\"><h3>True messages (stored chunks)</h3>"
    )?;
    for m in &c.detail.messages {
        let seqs: Vec<u64> = chunks
            .iter()
            .filter(|r| r.message == m.position)
            .map(|r| r.seq)
            .collect();
        let span = match (seqs.first(), seqs.last()) {
            (Some(x), Some(y)) if x != y => format!("seq {x}–{y}"),
            (Some(x), _) => format!("seq {x}"),
            _ => String::new(),
        };
        let pv = m
            .parts
            .iter()
            .find(|p| !p.preview.is_empty())
            .map(|p| p.preview.as_str())
            .unwrap_or("");
        writeln!(
            out,
            "<div class=\"box r-{}\" id=\"{a}-s{}\"><b>#{} {}</b> <span class=\"muted\">{}</span><div class=\"pv\">{}</div></div>",
            lane(m.role),
            m.position,
            m.position,
            m.role,
            span,
            esc(pv)
        )?;
    }
    writeln!(
        out,
        "</div><div></div><div class=\"col\"><h3>Loaded by msgIdx</h3>"
    )?;
    for l in loaded {
        let bad = l.true_messages.len() > 1 || l.chunk_roles.len() > 1;
        writeln!(
            out,
            "<div class=\"box r-{}{}\" id=\"{a}-g{}\"><b>#{} {}</b> <span class=\"muted\">{}, {}</span><div class=\"pv\">{}</div></div>",
            lane(&l.role),
            if bad { " bad" } else { "" },
            l.position,
            l.position,
            esc(&l.role),
            if l.seq_first == l.seq_last {
                format!("seq {}", l.seq_first)
            } else {
                format!("seq {}–{}", l.seq_first, l.seq_last)
            },
            plural(l.chunks, "chunk", "chunks"),
            if bad {
                format!(
                    "merges true messages {} (roles {})",
                    l.true_messages
                        .iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    esc(&l.chunk_roles.join(", "))
                )
            } else {
                format!(
                    "true message {}",
                    l.true_messages.first().copied().unwrap_or(0)
                )
            }
        )?;
    }
    writeln!(out, "</div>")?;
    writeln!(
        out,
        "<svg class=\"links\" xmlns=\"http://www.w3.org/2000/svg\" aria-hidden=\"true\">"
    )?;
    let mut seen: Vec<(usize, usize)> = Vec::new();
    for r in chunks {
        if seen.contains(&(r.message, r.loaded_message)) {
            continue;
        }
        seen.push((r.message, r.loaded_message));
        let bad = loaded
            .get(r.loaded_message)
            .is_some_and(|l| l.true_messages.len() > 1 || l.chunk_roles.len() > 1);
        writeln!(
            out,
            "<path class=\"{}\" data-from=\"{a}-s{}\" data-to=\"{a}-g{}\"></path>",
            if bad { "merge" } else { "link" },
            r.message,
            r.loaded_message
        )?;
    }
    writeln!(out, "</svg></div>")
}

/// Each recorded prompt beside the stored history (`lint --trace`).
fn prompts(out: &mut dyn Write, c: &Conv<'_>) -> io::Result<()> {
    if c.detail.prompts.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "<h3>What was sent: {} recorded in the trace</h3>",
        plural(c.detail.prompts.len(), "request", "requests")
    )?;
    for r in &c.detail.prompts {
        let h = &r.head;
        writeln!(
            out,
            "<details class=\"prompt\"{}><summary><b>turn {} step {}</b> <span class=\"mono\">{}</span> · {} sent · status {} · {}{}</summary>",
            if r.divergent { " open" } else { "" },
            h.turn,
            h.step,
            esc(&record(&h.location)),
            plural(h.sent, "message", "messages"),
            esc(h.status),
            match &h.finish_reason {
                Some(f) => format!("finish <code>{}</code>", esc(f)),
                None => "no finish reason".into(),
            },
            if r.divergent {
                " · <span class=\"badge sev-error\">differs from the store</span>"
            } else {
                ""
            }
        )?;
        writeln!(
            out,
            "<table class=\"prompt\"><tr><th>stored</th><th>at</th><th>role</th><th>preview</th><th>op</th><th>sent</th><th>role</th><th>preview</th></tr>"
        )?;
        for row in &r.rows {
            let diverges = row.op != crate::model::compare::Op::Same
                && row.op != crate::model::compare::Op::Injected;
            let (sp, sa, sr, sv) = match &row.store {
                Some(s) => (
                    s.position(),
                    s.at.clone(),
                    s.roles.join("+"),
                    s.preview.clone(),
                ),
                None => Default::default(),
            };
            let (np, nr, nv) = match &row.sent {
                Some(s) => (
                    format!("messages[{}]", s.index),
                    s.role.clone(),
                    s.preview.clone(),
                ),
                None => Default::default(),
            };
            writeln!(
                out,
                "<tr{}><td>{}</td><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td class=\"op\">{}{}</td><td class=\"mono\">{}</td><td>{}</td><td>{}</td></tr>",
                if diverges { " class=\"diverges\"" } else { "" },
                esc(&sp),
                esc(&sa),
                esc(&sr),
                esc(&sv),
                row.op.as_str(),
                if row.detail.is_empty() {
                    String::new()
                } else {
                    format!("<div class=\"muted\">{}</div>", esc(&row.detail))
                },
                esc(&np),
                esc(&nr),
                esc(&nv)
            )?;
        }
        writeln!(out, "</table>")?;
        for rep in &r.reports {
            writeln!(out, "<p class=\"muted\">trace report: {}</p>", esc(rep))?;
        }
        writeln!(out, "</details>")?;
    }
    Ok(())
}

/// One conversation's section.
pub(crate) fn conversation(out: &mut dyn Write, c: &Conv<'_>) -> io::Result<()> {
    let a = c.anchor;
    let sev = worst(c.findings.iter()).unwrap_or("none");
    writeln!(
        out,
        "<section class=\"card conv sev-{sev}\" id=\"{a}\">\n<details{}>",
        if c.open { " open" } else { "" }
    )?;
    let errors = crate::finding::Severity::Error.count(c.findings.iter().copied());
    let warnings = crate::finding::Severity::Warning.count(c.findings.iter().copied());
    writeln!(
        out,
        "<summary><h2>{}</h2><span class=\"where\">{}{}, {}</span>{}{}</summary>",
        esc(c.id),
        if c.file == c.id {
            String::new()
        } else {
            format!("{} · ", esc(c.file))
        },
        plural(c.detail.messages.len(), "message", "messages"),
        plural(c.detail.links.len(), "answered call", "answered calls"),
        if errors > 0 {
            format!(
                " <span class=\"badge sev-error\">{}</span>",
                plural(errors, "error", "errors")
            )
        } else {
            String::new()
        },
        if warnings > 0 {
            format!(
                " <span class=\"badge sev-warning\">{}</span>",
                plural(warnings, "warning", "warnings")
            )
        } else {
            String::new()
        }
    )?;
    if !c.findings.is_empty() {
        writeln!(out, "<div class=\"findings\">")?;
        for (k, f) in c.findings.iter().enumerate() {
            let m = f
                .message
                .filter(|m| *m < c.detail.messages.len())
                .map(|m| format!("{a}-m{m}"));
            finding(out, &format!("{a}-f{k}"), m, f)?;
        }
        writeln!(out, "</div>")?;
    }
    timeline(out, c)?;
    loaded(out, c)?;
    prompts(out, c)?;
    writeln!(out, "</details>\n</section>")
}

/// A conversation whose findings are listed without its timeline: the
/// engine keeps the detail of [`crate::lint::DETAIL_LIMIT`] conversations.
pub(crate) fn undrawn(
    out: &mut dyn Write,
    a: &str,
    id: &str,
    file: &str,
    findings: &[&Finding],
    open: bool,
) -> io::Result<()> {
    let sev = worst(findings.iter()).unwrap_or("none");
    writeln!(
        out,
        "<section class=\"card conv sev-{sev}\" id=\"{a}\">\n<details{}>",
        if open { " open" } else { "" }
    )?;
    let errors = crate::finding::Severity::Error.count(findings.iter().copied());
    let warnings = crate::finding::Severity::Warning.count(findings.iter().copied());
    writeln!(
        out,
        "<summary><h2>{}</h2><span class=\"where\">{}</span>{}{}</summary>",
        esc(id),
        if file == id { String::new() } else { esc(file) },
        if errors > 0 {
            format!(
                " <span class=\"badge sev-error\">{}</span>",
                plural(errors, "error", "errors")
            )
        } else {
            String::new()
        },
        if warnings > 0 {
            format!(
                " <span class=\"badge sev-warning\">{}</span>",
                plural(warnings, "warning", "warnings")
            )
        } else {
            String::new()
        }
    )?;
    writeln!(
        out,
        "<p class=\"muted\">This report draws the timelines of the first {} conversations with findings; draw this one with <code>chatfsck inspect {} --conversation {} --format html -o FILE</code>.</p>",
        crate::lint::DETAIL_LIMIT,
        esc(file),
        esc(id)
    )?;
    writeln!(out, "<div class=\"findings\">")?;
    for (k, f) in findings.iter().enumerate() {
        finding(out, &format!("{a}-f{k}"), None, f)?;
    }
    writeln!(out, "</div>\n</details>\n</section>")
}

/// `inspect` of a trace: each conversation's recorded requests.
pub(crate) fn trace(out: &mut dyn Write, convs: &[TraceConvView]) -> io::Result<()> {
    for c in convs {
        writeln!(
            out,
            "<section class=\"card\"><h2>{}</h2><p class=\"where\">{}, {}</p>",
            esc(&c.id),
            plural(c.turns, "turn", "turns"),
            plural(c.requests.len(), "recorded request", "recorded requests")
        )?;
        writeln!(
            out,
            "<table class=\"prompt\"><tr><th>turn</th><th>step</th><th>recorded at</th><th>messages</th><th>finish</th><th>status</th><th>findings</th></tr>"
        )?;
        for r in &c.requests {
            writeln!(
                out,
                "<tr{}><td>{}</td><td>{}</td><td class=\"mono\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                if r.errors > 0 {
                    " class=\"diverges\""
                } else {
                    ""
                },
                r.turn,
                r.step,
                esc(&record(&r.location)),
                r.messages,
                esc(r.finish_reason.as_deref().unwrap_or("none")),
                esc(r.status),
                r.findings
                    .iter()
                    .map(|f| esc(f))
                    .collect::<Vec<_>>()
                    .join("<br>")
            )?;
        }
        writeln!(out, "</table></section>")?;
    }
    Ok(())
}
