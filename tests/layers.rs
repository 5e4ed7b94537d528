//! The module graph, checked from the source: what may import what
//! (ARCHITECTURE.md), and no cycle between modules.
//!
//! A node is a top-level module of the library (`src/<name>.rs` or
//! `src/<name>/`), except `format` and `source`, whose children are nodes
//! of their own (`format::chat`, `format::store`, `source::trace`…), so
//! that the stores, the registry and the plumbing are checked apart. An
//! edge is any path `crate::a::b` or `super::b` in a file (comments
//! excluded), in code and in its unit tests alike.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Modules split into one node per child.
const SPLIT: &[&str] = &["format", "source"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `src/format/chat/mod.rs` → `["format", "chat"]`.
fn module_path(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root().join("src")).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// The node a module belongs to.
fn node(path: &[String]) -> Option<String> {
    let first = path.first()?;
    if SPLIT.contains(&first.as_str()) {
        return Some(match path.get(1) {
            Some(child) if is_module(&[first.clone(), child.clone()]) => {
                format!("{first}::{child}")
            }
            _ => first.clone(),
        });
    }
    Some(first.clone())
}

fn is_module(path: &[String]) -> bool {
    let mut p = root().join("src");
    for c in path {
        p.push(c);
    }
    p.is_dir() || p.with_extension("rs").is_file()
}

fn files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root().join("src")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.file_name().unwrap() != "bin" {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "rs")
                && p.file_name().unwrap() != "main.rs"
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn ident_at(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Every module path a file names: `crate::a::b…`, `super::x…`.
fn references(file: &Path) -> Vec<Vec<String>> {
    let here = module_path(file);
    // A `mod.rs` (or lib.rs) is the module itself; `super` is its parent.
    // A file `a/b.rs` is module a::b; `super` is `a`.
    let is_mod = file
        .file_name()
        .is_some_and(|n| n == "mod.rs" || n == "lib.rs");
    let parent: Vec<String> = if is_mod || here.is_empty() {
        here[..here.len().saturating_sub(1)].to_vec()
    } else {
        here[..here.len() - 1].to_vec()
    };
    let text = std::fs::read_to_string(file).unwrap();
    let mut out = Vec::new();
    for line in text.lines() {
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        for (base, key) in [(Vec::new(), "crate::"), (parent.clone(), "super::")] {
            let mut rest = code;
            while let Some(i) = rest.find(key) {
                let before = rest[..i].chars().last();
                rest = &rest[i + key.len()..];
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let mut path = base.clone();
                let mut tail = rest;
                loop {
                    let id = ident_at(tail);
                    if id.is_empty() {
                        break;
                    }
                    path.push(id.clone());
                    tail = &tail[id.len()..];
                    match tail.strip_prefix("::") {
                        Some(t) => tail = t,
                        None => break,
                    }
                }
                out.push(path);
            }
        }
    }
    out
}

/// node → the nodes it imports, with one file that does, for messages.
fn graph() -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let mut g: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for f in files() {
        let Some(from) = node(&module_path(&f)) else {
            continue; // lib.rs: declares the modules
        };
        let entry = g.entry(from.clone()).or_default();
        for r in references(&f) {
            // Keep the longest prefix that is a module.
            let mut m = r.clone();
            while !m.is_empty() && !is_module(&m) {
                m.pop();
            }
            if let Some(to) = node(&m)
                && to != from
            {
                entry.entry(to).or_insert_with(|| f.clone());
            }
        }
    }
    g
}

fn cycle(g: &BTreeMap<String, BTreeMap<String, PathBuf>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeMap<String, PathBuf>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(2) => return None,
            Some(1) => {
                let i = stack.iter().position(|x| x == n).unwrap();
                let mut c = stack[i..].to_vec();
                c.push(n.to_string());
                return Some(c);
            }
            _ => {}
        }
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for next in g.get(n).into_iter().flat_map(|m| m.keys()) {
            if let Some(c) = visit(next, g, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if let Some(c) = visit(n, g, &mut state, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

fn explain(g: &BTreeMap<String, BTreeMap<String, PathBuf>>, path: &[String]) -> String {
    path.windows(2)
        .map(|w| {
            let f = &g[&w[0]][&w[1]];
            format!(
                "{} → {} ({})",
                w[0],
                w[1],
                f.strip_prefix(root()).unwrap().display()
            )
        })
        .collect::<Vec<_>>()
        .join("\n  ")
}

#[test]
fn the_module_graph_has_no_cycle() {
    let g = graph();
    assert!(g.contains_key("format::chat") && g.contains_key("rules"));
    if let Some(c) = cycle(&g) {
        panic!("module cycle:\n  {}", explain(&g, &c));
    }
}

/// What each layer may import (ARCHITECTURE.md). A node not named here
/// may import anything that keeps the graph acyclic.
const ALLOWED: &[(&str, &[&str])] = &[
    // Rules read the model and produce findings (with their fixes).
    ("rules", &["model", "finding", "escape"]),
    // The model is data; it depends on nothing but text helpers.
    ("model", &["escape"]),
    ("finding", &["model"]),
    ("escape", &[]),
    ("error", &["escape"]),
    // The writers' contract: no store, no rule.
    ("write", &["model", "finding", "error", "source", "cleanup"]),
];

/// Nodes nobody below the engine may import.
fn forbidden(from: &str, to: &str) -> bool {
    // Lint marks findings fixable from the store's writer, never by asking
    // repair; reports render, so they never reach into readers or rules'
    // checks (only the catalogue, `report::rules`, names the rules).
    (from == "lint" && to == "repair")
        || (from.starts_with("source") && (to.starts_with("format") || to == "rules"))
        || (from.starts_with("format") && matches!(to, "rules" | "lint" | "repair" | "report"))
}

#[test]
fn layers_import_only_what_they_may() {
    let g = graph();
    let mut bad = BTreeSet::new();
    for (from, tos) in &g {
        for (to, file) in tos {
            let under = |a: &&str| to == a || to.starts_with(&format!("{a}::"));
            let allowed = ALLOWED
                .iter()
                .find(|(n, _)| n == from)
                .is_none_or(|(_, ok)| ok.iter().any(under));
            if !allowed || forbidden(from, to) {
                bad.insert(format!(
                    "{from} → {to} ({})",
                    file.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(bad.is_empty(), "imports across layers:\n  {}", {
        let v: Vec<String> = bad.into_iter().collect();
        v.join("\n  ")
    });
}

/// What an app's client does with a pattern is the app's profile
/// (`format/<store>/profile.rs`), never a rule's: outside their unit tests,
/// comments and documentation (`doc`, printed by `explain`, and the
/// catalogue's `summary`), the rules name no dialect and no app.
const APPS: &[&str] = &[
    "Dialect::",
    "Claude Code",
    "ClaudeCode",
    "Codex",
    "Gemini CLI",
    "GeminiCli",
    "opencode",
    "Opencode",
    "goose",
    "Goose",
    "Cursor",
    "Cline",
    "Roo Code",
    "RooCode",
    "Copilot",
    "kimi",
    "Kimi",
    "gbrain",
    "Gbrain",
    "Crush",
];

/// The code of a rule file: without its unit tests (the `#[cfg(test)]`
/// module that ends it), its comments and its documentation string.
fn rule_code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut out = String::new();
    let mut in_doc = false;
    for line in text.lines() {
        if in_doc {
            in_doc = !line.contains("\"#");
            continue;
        }
        let trimmed = line.trim_start();
        // The catalogue's one-line summary is documentation too.
        if trimmed.starts_with("summary: \"") {
            continue;
        }
        if let Some(doc) = trimmed.strip_prefix("doc: r#\"") {
            in_doc = !doc.contains("\"#");
            continue;
        }
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Each app or dialect `code` names, as a word.
fn apps_named(code: &str) -> Vec<&'static str> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    APPS.iter()
        .copied()
        .filter(|name| {
            code.match_indices(name).any(|(i, _)| {
                !word(code[..i].chars().last())
                    && (name.ends_with("::") || !word(code[i + name.len()..].chars().next()))
            })
        })
        .collect()
}

#[test]
fn rules_name_no_app_and_no_dialect() {
    let dir = root().join("src/rules");
    let mut named = Vec::new();
    let mut checked = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        checked += 1;
        let file = p.file_name().unwrap().to_string_lossy().into_owned();
        let apps = apps_named(&rule_code(&std::fs::read_to_string(&p).unwrap()));
        if !apps.is_empty() {
            named.push(format!("src/rules/{file}: {}", apps.join(", ")));
        }
    }
    assert!(
        checked > 30,
        "only {checked} rule files found under {dir:?}"
    );
    named.sort();
    assert!(
        named.is_empty(),
        "rules name apps or dialects (move what the client does to its profile):\n  {}",
        named.join("\n  ")
    );
}

/// The commands ask the engine and the stores' hooks (`format::Hooks`),
/// never an app by name: outside their unit tests and comments, the files
/// of `src/cmd/` name no dialect and no store's module.
#[test]
fn commands_name_no_dialect_and_no_store() {
    let dir = root().join("src/format");
    let stores: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("mod.rs").is_file())
        .map(|p| format!("format::{}::", p.file_name().unwrap().to_string_lossy()))
        .filter(|m| m != "format::discovery::")
        .collect();
    assert!(
        stores.len() > 10,
        "only {} stores under {dir:?}",
        stores.len()
    );
    let mut named = Vec::new();
    let mut files = vec![root().join("src/cmd")];
    let mut checked = 0;
    while let Some(p) = files.pop() {
        if p.is_dir() {
            files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if p.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        checked += 1;
        let code = rule_code(&std::fs::read_to_string(&p).unwrap());
        let rel = p.strip_prefix(root()).unwrap().display().to_string();
        if code.contains("Dialect::") {
            named.push(format!("{rel}: Dialect::"));
        }
        for m in &stores {
            if code.contains(m.as_str()) {
                named.push(format!("{rel}: {m}"));
            }
        }
    }
    assert!(checked > 5, "only {checked} command files found");
    named.sort();
    assert!(
        named.is_empty(),
        "commands name dialects or stores (make it a store hook, `format::Hooks`):\n  {}",
        named.join("\n  ")
    );
}

#[test]
fn the_rule_code_check_sees_what_it_must() {
    let text = "pub static RULE: Rule = Rule {\n    summary: \"Goose\",\n    doc: r#\"Codex does\n\"#,\n};\n// Codex\nfn f() { if d == Dialect::Goose { note(\"Cline heals\") } let codexish = 1; }\n#[cfg(test)]\nmod tests { Dialect::Codex }\n";
    assert_eq!(
        apps_named(&rule_code(text)),
        vec!["Dialect::", "Goose", "Cline"]
    );
}
