//! The lint engine: expand paths, read each input's conversations, run the
//! rules, collect findings. Files are checked in parallel; each conversation
//! is dropped as soon as its findings are computed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use serde::Serialize;

use crate::crosscheck;
use crate::error::Error;
use crate::finding::{Finding, Severity};
use crate::model::{Conversation, PartKind, Role, SourceInfo};
use crate::rules::{self, Selection};
use crate::source::{self, Limits};

/// Counts that describe a conversation (or a sum of them).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stats {
    pub conversations: u64,
    pub messages: u64,
    pub by_role: RoleCounts,
    pub tool_calls: u64,
    pub tool_results: u64,
    pub meta_records: u64,
    pub corrupt_records: u64,
}

impl Stats {
    pub fn of(conv: &Conversation) -> Stats {
        let mut s = Stats {
            conversations: 1,
            messages: conv.messages.len() as u64,
            meta_records: conv.meta_records,
            corrupt_records: conv.corrupt.len() as u64,
            ..Stats::default()
        };
        // Counted in a short list first: a conversation has a handful of
        // roles and thousands of messages.
        let mut roles: Vec<(&'static str, u64)> = Vec::new();
        for m in &conv.messages {
            let role = m.role.as_str();
            match roles.iter_mut().find(|(r, _)| *r == role) {
                Some((_, n)) => *n += 1,
                None => roles.push((role, 1)),
            }
            for p in &m.parts {
                match p.kind {
                    PartKind::ToolCall { .. } => s.tool_calls += 1,
                    PartKind::ToolResult { .. } => s.tool_results += 1,
                    _ => {}
                }
            }
        }
        for (role, n) in roles {
            s.by_role.add(role, n);
        }
        s
    }

    pub fn add(&mut self, o: &Stats) {
        self.conversations += o.conversations;
        self.messages += o.messages;
        for (k, v) in o.by_role.iter() {
            self.by_role.add(k, v);
        }
        self.tool_calls += o.tool_calls;
        self.tool_results += o.tool_results;
        self.meta_records += o.meta_records;
        self.corrupt_records += o.corrupt_records;
    }

    pub fn role(&self, r: Role) -> u64 {
        self.by_role.get(r.as_str())
    }
}

/// Messages by role, ordered by the role's name, written as a JSON map.
/// A short list: a run over many files keeps one per file, and a
/// `BTreeMap` cost a node of some 270 bytes for each.
#[derive(Debug, Clone, Default)]
pub struct RoleCounts(Vec<(&'static str, u64)>);

impl RoleCounts {
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.0.iter().copied()
    }

    pub fn get(&self, role: &str) -> u64 {
        self.0
            .iter()
            .find(|(r, _)| *r == role)
            .map_or(0, |(_, n)| *n)
    }

    fn add(&mut self, role: &'static str, n: u64) {
        match self.0.binary_search_by(|(r, _)| r.cmp(&role)) {
            Ok(i) => self.0[i].1 += n,
            Err(i) => self.0.insert(i, (role, n)),
        }
    }
}

impl Serialize for RoleCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

/// What a cross-check against a trace covered.
#[derive(Debug, Clone, Serialize)]
pub struct CrossCheck {
    pub trace: PathBuf,
    /// Conversations the trace records.
    pub trace_conversations: usize,
    /// Stored conversations the trace recorded requests for.
    pub conversations: usize,
    /// Recorded requests compared with the store.
    pub requests: usize,
}

/// What lint found in one input.
#[derive(Debug)]
pub struct FileReport {
    pub info: Arc<SourceInfo>,
    pub stats: Stats,
    pub findings: Vec<Finding>,
    pub crosscheck: Option<CrossCheck>,
    /// With [`Options::detail`]: each conversation with findings, or
    /// compared with a trace, as a report draws it (id, detail).
    pub details: Vec<(String, crate::detail::Detail)>,
}

#[derive(Debug, Default)]
pub struct Outcome {
    pub files: Vec<FileReport>,
    /// Files found by a directory walk that hold no history and do not
    /// look like one (a `package.json`, an app's UI log or metadata).
    pub skipped: Vec<(PathBuf, String)>,
    /// Inputs that were not read: named ones that could not be checked,
    /// and files a directory walk found whose name or content looks like a
    /// history but that chatfsck could not read. Never counted as clean.
    pub errors: Vec<Error>,
    /// How many of `errors` a directory walk found (the others were named):
    /// `--skip-unreadable` lets only these pass without exit code 2.
    pub walked_errors: usize,
    /// A run without a path: what was found of each app, in the order of
    /// the registry (`format::APPS`).
    pub discovered: Option<Vec<AppSummary>>,
}

/// What a run without a path found of one app.
#[derive(Debug, Clone, Serialize)]
pub struct AppSummary {
    /// What users call the app.
    pub app: &'static str,
    /// Its key in the JSON report.
    pub key: &'static str,
    /// Every place looked at, and whether it exists.
    pub looked: Vec<Looked>,
    /// The files found that hold its histories (a session each, or a
    /// database of them).
    pub found: usize,
    /// The sessions (conversations) read from them.
    pub sessions: u64,
    /// The sessions with at least one finding of severity error.
    pub with_errors: usize,
    /// What could not be read: the file and why. Never counted as clean.
    pub unread: Vec<Unread>,
}

/// A place discovery looked at.
#[derive(Debug, Clone, Serialize)]
pub struct Looked {
    pub path: PathBuf,
    pub exists: bool,
    /// The path as a person reads it: `~/…` under the home directory.
    #[serde(skip)]
    pub shown: String,
}

/// A file discovery found and could not read.
#[derive(Debug, Clone, Serialize)]
pub struct Unread {
    pub path: PathBuf,
    pub cause: String,
    /// The path as a person reads it: `~/…` under the home directory.
    #[serde(skip)]
    pub shown: String,
}

impl Outcome {
    /// Add another run's outcome to this one.
    pub fn merge(&mut self, o: Outcome) {
        self.files.extend(o.files);
        self.skipped.extend(o.skipped);
        self.errors.extend(o.errors);
        self.walked_errors += o.walked_errors;
    }
}

impl Outcome {
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.files.iter().flat_map(|f| &f.findings)
    }

    pub fn count(&self, sev: Severity) -> usize {
        sev.count(self.findings())
    }

    pub fn fixable(&self) -> usize {
        self.findings().filter(|f| f.fixable).count()
    }

    pub fn totals(&self) -> Stats {
        let mut t = Stats::default();
        for f in &self.files {
            t.add(&f.stats);
        }
        t
    }
}

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub selection: Selection,
    pub limits: Limits,
    /// The message table to read in SQLite and PostgreSQL inputs.
    pub mapping: Option<source::Mapping>,
    /// A trace to cross-check every store against (`--trace`).
    pub trace: Option<PathBuf>,
    /// Read only the conversation with this id (a session named by its id
    /// in a database that holds many).
    pub only: Option<String>,
    /// Keep the detail of conversations with findings (the HTML report
    /// draws their timelines): of at most this many in the whole run
    /// ([`DETAIL_LIMIT`]), so memory and the page stay bounded; 0 keeps none.
    pub detail: usize,
}

/// Conversations an HTML report draws in full; the findings of the others
/// are still listed, each with the command that draws it.
pub const DETAIL_LIMIT: usize = 300;

/// Run the selected rules over one conversation and mark which findings
/// `repair` can fix in this input's format. Rules know nothing of formats;
/// the repair engine knows which of its writers applies.
pub fn check(conv: &Conversation, selection: &Selection) -> Vec<Finding> {
    let profile = crate::format::profile_of(&conv.source);
    let mut findings = rules::check(conv, selection, profile);
    for f in &mut findings {
        f.fixable = f
            .fix
            .as_ref()
            .is_some_and(|fix| crate::format::can_apply(&conv.source, fix));
    }
    findings
}

/// One conversation's tally and findings.
type Checked = (Stats, Vec<Finding>);

fn checked(conv: &Conversation, selection: &Selection) -> Checked {
    (Stats::of(conv), check(conv, selection))
}

/// A trace opened once for a whole run and shared by the inputs checked
/// against it (a trace source reads requests on demand, so one at a time).
pub struct OpenTrace {
    path: PathBuf,
    source: std::sync::Mutex<crate::format::trace::TraceSource>,
}

impl OpenTrace {
    pub fn open(path: &Path, limits: Limits) -> Result<OpenTrace, Error> {
        Ok(OpenTrace {
            path: path.to_path_buf(),
            source: std::sync::Mutex::new(crate::format::open_trace(path, limits)?),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, crate::format::trace::TraceSource> {
        self.source
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Check one input: every conversation it holds, and, with a trace, every
/// request the trace recorded for it.
pub fn lint_one(
    path: &Path,
    opts: &Options,
    trace: Option<&OpenTrace>,
) -> Result<FileReport, Error> {
    lint_one_with(path, opts, trace, &Budget::new(opts.detail))
}

/// How many more conversations a run keeps the detail of, shared by the
/// inputs checked in parallel.
pub struct Budget(std::sync::atomic::AtomicUsize);

impl Budget {
    pub fn new(n: usize) -> Budget {
        Budget(std::sync::atomic::AtomicUsize::new(n))
    }

    /// One more, if any is left.
    fn take(&self) -> bool {
        use std::sync::atomic::Ordering;
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }
}

fn lint_one_with(
    path: &Path,
    opts: &Options,
    trace: Option<&OpenTrace>,
    budget: &Budget,
) -> Result<FileReport, Error> {
    let mut src = crate::format::open_with(path, opts.limits, opts.mapping.as_ref())?;
    // A trace is not cross-checked against itself.
    let trace = trace.filter(|_| !src.is_trace());
    let mut stats = Stats::default();
    let mut findings = Vec::new();
    let mut details = Vec::new();
    let mut cross = trace.map(|t| CrossCheck {
        trace: t.path.clone(),
        trace_conversations: t.lock().groups().len(),
        conversations: 0,
        requests: 0,
    });
    // The checks run where the source builds each conversation when it has
    // threads of its own (they then share the cores with reading); here
    // otherwise.
    let selection = opts.selection.clone();
    src.prepare_with(Arc::new(move |conv: &Conversation| {
        Box::new(checked(conv, &selection)) as source::Prepared
    }));
    let mut matched = false;
    while let Some(conv) = src.next_conversation() {
        let conv = conv?;
        if opts.only.as_ref().is_some_and(|only| *only != conv.id) {
            src.done(conv);
            continue;
        }
        matched = true;
        let (conv_stats, conv_findings) = src
            .prepared()
            .and_then(|p| p.downcast::<Checked>().ok())
            .map_or_else(|| checked(&conv, &opts.selection), |p| *p);
        stats.add(&conv_stats);
        let flagged = !conv_findings.is_empty();
        findings.extend(conv_findings);
        let mut prompts = None;
        if let (Some(t), Some(c)) = (trace, cross.as_mut()) {
            let cmp = crosscheck::compare(&conv, &mut t.lock())?;
            if let Some(cmp) = cmp {
                c.conversations += 1;
                c.requests += cmp.requests.len();
                findings.extend(rules::check_against_trace(
                    &conv,
                    &cmp,
                    &t.path,
                    &opts.selection,
                ));
                if opts.detail > 0 {
                    prompts = Some(
                        cmp.requests
                            .iter()
                            .map(|r| crosscheck::diff_request(&conv, r))
                            .collect(),
                    );
                }
            }
        }
        if (flagged || prompts.is_some()) && budget.take() {
            details.push((
                conv.id.clone(),
                crate::detail::of(&conv, prompts.unwrap_or_default()),
            ));
        }
        src.done(conv);
    }
    // A session named in a database of many was read, or the run says so:
    // never "no problems" about nothing.
    if let Some(only) = &opts.only
        && !matched
    {
        return Err(Error::input(
            path,
            format!(
                "holds no session `{}` (it is no longer there, or the store names it otherwise)",
                crate::escape::escape(only)
            ),
        ));
    }
    // The trace's requests were read on demand: confirm what a read to
    // its end would have (its structure check, no write meanwhile).
    if let Some(t) = trace {
        t.lock().verify()?;
    }
    Ok(FileReport {
        info: src.info(),
        stats,
        findings,
        crosscheck: cross,
        details,
    })
}

/// What the engine says while it works, for a progress display.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// The paths expanded to this many inputs.
    Started { inputs: usize },
    /// One input was checked (or failed); they finish in any order.
    Checked { path: &'a Path },
}

/// Lint every path (files, or directories walked recursively).
pub fn lint(paths: &[PathBuf], opts: &Options) -> Result<Outcome, Error> {
    lint_with_progress(paths, opts, &|_| {})
}

/// [`lint`], telling `progress` about each input as it is done.
pub fn lint_with_progress(
    paths: &[PathBuf],
    opts: &Options,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Result<Outcome, Error> {
    lint_inputs(source::expand(paths)?, opts, progress)
}

/// Lint these inputs: (path, named explicitly). A file found by a walk
/// that holds no history and does not look like one is skipped; one
/// named explicitly that cannot be read is an error.
pub fn lint_inputs(
    inputs: Vec<(PathBuf, bool)>,
    opts: &Options,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Result<Outcome, Error> {
    // Opened once: a bad trace stops the job before any work, and every
    // input is checked against the same open trace.
    let trace = match &opts.trace {
        Some(t) => Some(OpenTrace::open(t, opts.limits)?),
        None => None,
    };
    let budget = Budget::new(opts.detail);
    progress(Progress::Started {
        inputs: inputs.len(),
    });
    let results: Vec<(PathBuf, bool, Result<FileReport, Error>)> = inputs
        .into_par_iter()
        .map(|(path, explicit)| {
            // A bug met on one input fails that input, not the whole run.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                lint_one_with(&path, opts, trace.as_ref(), &budget)
            }))
            .unwrap_or_else(|panic| Err(Error::internal(&path, "the check", &*panic)));
            progress(Progress::Checked { path: &path });
            (path, explicit, r)
        })
        .collect();
    let mut out = Outcome::default();
    // Exactly one report per input at most: no doubling slack for a run
    // over tens of thousands of files.
    out.files.reserve_exact(results.len());
    for (path, explicit, r) in results {
        match r {
            Ok(report) => out.files.push(report),
            Err(Error::NotHistory { cause, .. })
                if !explicit && !crate::format::looks_like_history(&path) =>
            {
                out.skipped.push((path, cause))
            }
            // Read through another file of the walk: not unread.
            Err(Error::PartOf { cause, .. }) if !explicit => out.skipped.push((path, cause)),
            Err(e) => {
                if !explicit {
                    out.walked_errors += 1;
                }
                out.errors.push(e)
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn progress_hears_of_every_input() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/orphan-tool-call");
        let seen = Mutex::new((0usize, Vec::new()));
        let outcome = lint_with_progress(&[root], &Options::default(), &|p| {
            let mut s = seen.lock().unwrap();
            match p {
                Progress::Started { inputs } => s.0 = inputs,
                Progress::Checked { path } => s.1.push(path.to_path_buf()),
            }
        })
        .unwrap();
        let (total, checked) = seen.into_inner().unwrap();
        assert!(total > 1);
        assert_eq!(checked.len(), total);
        assert_eq!(
            outcome.files.len() + outcome.skipped.len() + outcome.errors.len(),
            total
        );
    }
}
