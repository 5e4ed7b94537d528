//! `repair`: turn the fixes rules attached to their findings into edits of a
//! copy of the input, in the input's own storage format.
//!
//! The engine is one loop for every store: open the input, check each
//! conversation, decide which fixes apply ([`plan`]), hand them to the
//! writer of the input's store (`format/<store>/writer.rs`), then let the
//! writer write. A store without a writer is refused before anything is
//! read or written.
//!
//! Contract (DESIGN.md): the input is never written; the output is a new
//! path, written atomically; every removed or replaced payload goes to the
//! repair log; everything the repair did not need to touch is preserved
//! exactly; a second repair changes nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::finding::Finding;
use crate::finding::{Action, Applicability};
use crate::format::{self, Dialect, Format, Writing};
use crate::rules::Selection;
use crate::source::{self, Limits};
use crate::write::{Log, Planned, Relink, Target, atomic};

pub use crate::config::{OrphanCalls as OrphanPolicy, RepairPolicy as Policy};
pub use crate::write::{Edit, Left, PLACEHOLDER};

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub selection: Selection,
    pub policy: Policy,
    pub limits: Limits,
    pub dry_run: bool,
    pub force: bool,
    /// The message table to read in SQLite and PostgreSQL inputs.
    pub mapping: Option<source::Mapping>,
    /// PostgreSQL inputs: write the repair as a SQL script here.
    pub emit_sql: Option<PathBuf>,
    /// PostgreSQL inputs: apply the repair to this other database.
    pub target: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub version: u32,
    pub input: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    pub format: Format,
    pub dialect: Dialect,
    pub dry_run: bool,
    pub policy: Policy,
    /// PostgreSQL inputs: the SQL script written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
    /// PostgreSQL inputs: the database the repair was applied to, and how
    /// many rows it inserted there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inserted: Option<u64>,
    /// The form the copy was written in, when it is not plain text as
    /// read, and why (a compressed Codex rollout: `source::compressed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written_as: Option<String>,
    /// `--in-place`: the copy of the input kept beside it before it was
    /// replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
    /// `--in-place`: what else was brought in step with the replaced file
    /// (an index the app keeps of it), in a sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub companion: Option<String>,
    pub edits: Vec<Edit>,
    pub left: Vec<Left>,
    /// Why the copy is the input as it is, when every copy a repair could
    /// write would be worse than the input (each finding left then gives
    /// the same reason, ending in [`KEPT_INPUT`]); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_input: Option<String>,
    /// The store whose reader read the input (and whose writer wrote the
    /// copy): a file of one dialect can be read by two (a Claude Code
    /// session whose first lines are damaged is read as a chat history).
    #[serde(skip)]
    pub store: &'static str,
    /// What lint makes of the copy, read by the pass that settled it (a
    /// dry pass that found nothing to change): the checks that judge the
    /// copy afterwards read it from here, not from the file again.
    #[serde(skip)]
    settled_read: Option<Box<ReadBack>>,
}

/// Decide, for the findings of one conversation, which fixes apply.
pub fn plan<'a>(
    findings: &'a [Finding],
    policy: &Policy,
    left: &mut Vec<Left>,
) -> Vec<Planned<'a>> {
    let mut out = Vec::new();
    for f in findings {
        let leave = |reason: &str, left: &mut Vec<Left>| {
            left.push(Left {
                rule: f.rule,
                conversation: f.conversation.clone(),
                location: f.loc.clone(),
                summary: f.summary.clone(),
                reason: reason.to_string(),
            })
        };
        let Some(fix) = &f.fix else {
            // A rule that repairs may still have no fix for this finding
            // (the finding's notes say why).
            let rule = crate::rules::find(f.rule);
            leave(
                if rule.is_some_and(|r| r.repair.is_some()) {
                    "no repair for this case (its rule repairs others)"
                } else {
                    "report-only rule"
                },
                left,
            );
            continue;
        };
        if !f.fixable {
            leave(
                &format!(
                    "not repairable in {} ({}) inputs",
                    f.source.format, f.source.dialect
                ),
                left,
            );
            continue;
        }
        // A fix that invents content (a placeholder) needs synthesizing on,
        // unless the policy answers calls otherwise (by dropping them).
        let invents = fix.applicability == Applicability::Unsafe;
        let answers = fix
            .actions
            .iter()
            .any(|a| matches!(a, Action::AnswerCall { .. }));
        if answers {
            match policy.orphan_calls {
                OrphanPolicy::Report => {
                    leave("orphan-calls policy is `report`", left);
                    continue;
                }
                OrphanPolicy::Placeholder if invents && !policy.synthesize => {
                    leave(
                        "synthesizing is off: a placeholder would invent content",
                        left,
                    );
                    continue;
                }
                _ => {}
            }
        }
        out.push(Planned { finding: f, fix });
    }
    out
}

/// Refuse outputs that would overwrite the input (or its sidecars) or an
/// existing file without `--force`.
fn check_output(input: &Path, output: &Path, force: bool) -> Result<()> {
    atomic::check_dest(&[input], output, force, "the repaired copy")
}

/// Refuse a repair log that would overwrite the input, its sidecars, the
/// repaired copy (or SQL script), or an existing file without `--force`:
/// checked exactly as the output is, `--force` or not.
pub fn check_log(input: &Path, outputs: &[&Path], log: &Path, force: bool) -> Result<()> {
    if atomic::is_evidence(input, log) {
        return Err(Error::Usage(format!(
            "refusing to write the repair log over the input {} (it is evidence); name a new path with --log",
            log.display()
        )));
    }
    if outputs
        .iter()
        .any(|o| *o == log || atomic::same_file(o, log))
    {
        return Err(Error::Usage(format!(
            "the repair log {} needs a path of its own, not the output's",
            log.display()
        )));
    }
    check_output(input, log, force)
}

/// Refuse a repaired copy that chatfsck reads, under the copy's own name,
/// with another store than the input under its name: detection reads
/// names where content cannot tell (an emptied Cline task, `[]`, is one
/// only as `api_conversation_history.json`), and such a copy reads back as
/// something else, or as no history. The caller removes the copy.
pub fn check_reads_back(input: &Path, out: &Path, opts: &Options) -> Result<()> {
    let Ok(Some(was)) = format::text_store(input, opts.limits) else {
        return Ok(());
    };
    let now = match format::text_store(out, opts.limits) {
        Ok(Some(now)) if std::ptr::eq(now, was) => return Ok(()),
        Ok(Some(now)) => format!("read by the {} reader", now.name),
        Ok(None) => "read as a SQLite database".to_string(),
        Err(e) => format!("refused ({e})"),
    };
    let name = |p: &Path| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    Err(Error::input(
        input,
        format!(
            "is read by the {} reader under its name {}, but its repaired copy named {} would be {now} (chatfsck tells this store by the file's name where its content cannot tell): no copy was written; name the copy {} (in a folder of its own)",
            was.name,
            name(input),
            name(out),
            name(input),
        ),
    ))
}

/// How many more times a repaired text copy is repaired, at most, before it
/// settles (see [`repair`]).
const SETTLE_PASSES: usize = 3;

/// The rules that say which history a resume leaves out: a repair that
/// links records can make one appear where the input's resume left the
/// same history out, so these are judged by what the copy's resume sends,
/// not by their count (here, and by the repair contract's tests).
pub const RESUME_RULES: &[&str] = &[
    "dangling-parent",
    "duplicate-uuid",
    "parent-cycle",
    "stale-leaf",
    "unchained-records",
];

/// Repair `input` into `output` (or plan only, with `dry_run`).
///
/// A text copy (JSON Lines, JSON) is then repaired again until a pass
/// changes nothing: an edit can bring records into view that the input's
/// reader could not see (a Claude Code record re-linked into the chain the
/// client resumes brings the records behind it, a stray result among
/// them), and the contract is that a second repair of the copy changes
/// nothing. The later passes' edits are logged after the first's, each
/// saying it was made on the repaired copy.
pub fn repair(input: &Path, output: Option<&Path>, opts: &Options) -> Result<Report> {
    let report = linked(input, output, opts)?;
    match output {
        Some(out) if !opts.dry_run && report.dialect == Dialect::ClaudeCode => {
            resumes_as_much(input, out, opts, report)
        }
        _ => Ok(report),
    }
}

/// Never worse, of the rules that say which history a resume leaves out
/// (`RESUME_RULES`): a Claude Code copy with more errors of one of them
/// than its input, whose resume leaves out a record the input's resume
/// sent (but those the repair removed or gave a new uuid, which are in
/// the log), keeps the input as it is.
fn resumes_as_much(input: &Path, out: &Path, opts: &Options, report: Report) -> Result<Report> {
    if report.edits.is_empty() {
        return Ok(report);
    }
    // Most copies hold no error of these rules: one read settles it.
    let copy = copy_read(&report, out, input, opts)?;
    if !copy.errors.iter().any(|(r, _)| RESUME_RULES.contains(r)) {
        return Ok(report);
    }
    let before = read_back(input, opts)?;
    let Some((rule, n)) = copy.gained(&before, true, |r| RESUME_RULES.contains(&r)) else {
        return Ok(report);
    };
    // The uuids of the records the repair removed (a `before` that is a
    // record: its bytes are in the log), and of those it gave a new uuid
    // (a `uuid` member before and after): a renamed record counts as sent
    // only when the copy's resume sends it under its new uuid.
    let uuid_of = |b: &str| -> Option<String> {
        let v = serde_json::from_str::<serde_json::Value>(b)
            .or_else(|_| serde_json::from_str(&format!("{{{b}}}")))
            .ok()?;
        v.get("uuid")?.as_str().map(str::to_string)
    };
    let mut removed = std::collections::HashSet::new();
    let mut renamed = HashMap::new();
    for e in &report.edits {
        let Some((b, old)) = e.before.as_deref().and_then(|b| Some((b, uuid_of(b)?))) else {
            continue;
        };
        match e.after.as_deref().and_then(uuid_of) {
            Some(new) if b.trim_start().starts_with('"') => {
                renamed.insert(old, new);
            }
            _ => {
                removed.insert(old);
            }
        }
    }
    let lost = before
        .sent
        .iter()
        .filter(|u| {
            !copy.sent.contains(*u)
                && !removed.contains(*u)
                && !renamed.get(*u).is_some_and(|n| copy.sent.contains(n))
        })
        .count();
    if lost == 0 {
        return Ok(report);
    }
    let why = format!(
        "the repaired copy would hold {n} {rule} error(s) more than the input, and its resume would leave out {lost} record(s) the input's resume sends: {KEPT_INPUT}"
    );
    keep_input(input, out, opts, &why, report)
}

/// Repair in file order; for a Claude Code session whose repair re-links
/// a record, also with the links the client makes, and keep the better.
fn linked(input: &Path, output: Option<&Path>, opts: &Options) -> Result<Report> {
    let report = settle(input, output, opts, Relink::FileOrder)?;
    let Some(out) = output else {
        return Ok(report);
    };
    let relinked = report
        .edits
        .iter()
        .any(|e| e.action == "relink" && e.rule == "dangling-parent");
    if opts.dry_run || report.dialect != Dialect::ClaudeCode || !relinked {
        return Ok(report);
    }
    // A record re-linked in file order can hang under a newer record, and
    // Claude Code picks the record it resumes from by time: the walk can
    // then start above it and leave out history the input's resume sends,
    // or a result can land far from its call. Judged by the model of the
    // resume lint uses, a copy that sends less of the input's history, or
    // still holds errors, is compared with the copy that writes the links
    // the client makes for bridged records; that one is kept if it loses
    // less, or as little with fewer errors.
    let Ok(want) = format::claude_code::resumed_at(input, opts.limits) else {
        return Ok(report);
    };
    let judge = |r: &Report, p: &Path| -> Option<(usize, usize)> {
        let got = copy_read(r, p, input, opts).ok()?;
        Some((
            want.iter().filter(|u| !got.sent.contains(*u)).count(),
            got.errors.len(),
        ))
    };
    let Some(first) = judge(&report, out) else {
        return Ok(report);
    };
    if first == (0, 0) {
        return Ok(report);
    }
    let Ok((_registered, scratch)) = scratch_beside(out) else {
        return Ok(report);
    };
    let alt = scratch.path().join(input.file_name().unwrap_or_default());
    // The copy written is a repair: another way that fails changes nothing.
    let Ok(mut other) = settle(input, Some(&alt), opts, Relink::AsBridged) else {
        return Ok(report);
    };
    if judge(&other, &alt).is_none_or(|second| second >= first) {
        return Ok(report);
    }
    // A second repair starts in file order: a copy with the client's links
    // that a repair in file order would still edit (a record bridged to
    // one that is itself dangling, say) is no fixpoint, and a second
    // repair would change it.
    let dry = Options {
        dry_run: true,
        ..opts.clone()
    };
    if repair_once(&alt, input, None, &dry, Relink::FileOrder, None)
        .is_ok_and(|r| !r.edits.is_empty())
    {
        return Ok(report);
    }
    crate::write::atomic::rename_into_place(&alt, out).map_err(|e| Error::io(out, &e))?;
    other.output = report.output;
    Ok(other)
}

/// What lint makes of a file, read back: the uuids Claude Code's resume
/// of it sends (none for other stores), and its error findings, each with
/// the uuid of the Claude Code record it is on.
#[derive(Debug, Default, Clone)]
struct ReadBack {
    sent: std::collections::HashSet<String>,
    errors: Vec<(&'static str, Option<String>)>,
}

impl ReadBack {
    /// The first rule (by name) among those `judged` of which this copy
    /// holds more errors than `input` did, and how many more. With
    /// `brought_back_free`, errors on records the input's resume did not
    /// send (history the repair brought back) are not counted.
    fn gained(
        &self,
        input: &ReadBack,
        brought_back_free: bool,
        judged: impl Fn(&'static str) -> bool,
    ) -> Option<(&'static str, usize)> {
        let was = input.by_rule(None);
        let now = self.by_rule(brought_back_free.then_some(&input.sent));
        let mut gained: Vec<(&'static str, usize)> = now
            .into_iter()
            .filter(|(r, _)| judged(r))
            .filter_map(|(r, n)| {
                n.checked_sub(*was.get(r).unwrap_or(&0))
                    .filter(|d| *d > 0)
                    .map(|d| (r, d))
            })
            .collect();
        gained.sort_unstable();
        gained.first().copied()
    }

    /// The error findings by rule. With `sent_before`, a finding on a
    /// record that uuid set lacks (history a repair brought back into the
    /// resume, which the input's resume did not send) is not counted.
    fn by_rule(
        &self,
        sent_before: Option<&std::collections::HashSet<String>>,
    ) -> HashMap<&'static str, usize> {
        let mut out = HashMap::new();
        for (rule, uuid) in &self.errors {
            let brought_back = sent_before
                .zip(uuid.as_deref())
                .is_some_and(|(sent, u)| !sent.contains(u));
            if !brought_back {
                *out.entry(*rule).or_default() += 1;
            }
        }
        out
    }
}

fn read_back(path: &Path, opts: &Options) -> Result<ReadBack> {
    let mut src = format::open_with(path, opts.limits, opts.mapping.as_ref())?;
    let mut back = ReadBack::default();
    while let Some(conv) = src.next_conversation() {
        let conv = conv?;
        back.add(&conv, &crate::lint::check(&conv, &opts.selection));
        src.done(conv);
    }
    Ok(back)
}

impl ReadBack {
    /// Add one conversation, with the findings lint makes of it.
    fn add(&mut self, conv: &crate::model::Conversation, findings: &[Finding]) {
        self.sent
            .extend(format::claude_code::resumed(conv).map(str::to_string));
        // The uuid of the record on each line (Claude Code).
        let mut by_line: HashMap<u64, &str> = HashMap::new();
        for r in conv.chain.iter().flat_map(|c| c.records.iter()) {
            if let (Some(line), Some(u)) = (r.loc.line(), r.uuid.as_deref()) {
                by_line.entry(line).or_insert(u);
            }
        }
        for f in findings {
            if f.severity == crate::finding::Severity::Error {
                let uuid = f
                    .loc
                    .as_ref()
                    .and_then(crate::model::Loc::line)
                    .and_then(|l| by_line.get(&l))
                    .map(|u| u.to_string());
                self.errors.push((f.rule, uuid));
            }
        }
    }
}

/// A registered temporary directory beside `out` (removed on drop, and
/// swept by a later run if this one is killed).
fn scratch_beside(out: &Path) -> Result<(crate::cleanup::Registered, tempfile::TempDir)> {
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let prefix = format!(".{}", crate::cleanup::tag());
    crate::cleanup::create_registered(dir, &prefix, || {
        tempfile::Builder::new().prefix(&prefix).tempdir_in(dir)
    })
    .map_err(|e| Error::io(out, &e))
}

/// The copy at `out` as `path` (a link; a copy where the file system has
/// no links): read, never written.
fn link_as(out: &Path, path: &Path) -> Result<()> {
    if std::fs::hard_link(out, path).is_err() {
        std::fs::copy(out, path).map_err(|e| Error::io(out, &e))?;
    }
    Ok(())
}

/// [`read_back`] of the copy at `out`, read under the input's file name,
/// as the settle passes read it (detection reads names: a Codex rollout's,
/// a Gemini CLI session's).
fn read_copy(out: &Path, input: &Path, opts: &Options, beside: bool) -> Result<ReadBack> {
    let name = input.file_name().unwrap_or_default();
    if beside || out.file_name() == Some(name) {
        return read_back(out, opts);
    }
    let (_registered, scratch) = scratch_beside(out)?;
    let copy = scratch.path().join(name);
    link_as(out, &copy)?;
    read_back(&copy, opts)
}

/// What lint makes of the copy at `out`: as the pass that settled it read
/// it, or read again.
fn copy_read<'a>(
    report: &'a Report,
    out: &Path,
    input: &Path,
    opts: &Options,
) -> Result<std::borrow::Cow<'a, ReadBack>> {
    Ok(match &report.settled_read {
        Some(r) => std::borrow::Cow::Borrowed(&**r),
        None => std::borrow::Cow::Owned(read_copy(
            out,
            input,
            opts,
            format::store_for(report.format, report.dialect).is_some_and(|s| s.hooks.reads_beside),
        )?),
    })
}

/// Repair `input` into `output`, then repair the copy again until a pass
/// changes nothing (a fix can uncover another finding).
fn settle(input: &Path, output: Option<&Path>, opts: &Options, relink: Relink) -> Result<Report> {
    let mut report = repair_once(input, input, output, opts, relink, None)?;
    let Some(out) = output else {
        return Ok(report);
    };
    if opts.dry_run
        || !matches!(
            report.format,
            Format::Jsonl | Format::Json | Format::DatasetJsonl
        )
    {
        return Ok(report);
    }
    // The later passes read the copy under the input's own file name
    // (detection reads names; `--in-place` writes to a temporary name),
    // in a directory of their own beside the copy.
    let name = input.file_name().unwrap_or_default();
    // What the last pass left: what the copy still holds.
    let mut last_left = None;
    let mut settled = false;
    // The format and dialect the settled copy reads as.
    let mut reads_as = (report.format, report.dialect);
    for pass in 2..=SETTLE_PASSES + 1 {
        if report.edits.is_empty() {
            settled = true;
            break;
        }
        // The copy is read under the input's file name. A Claude Code
        // session's reader reads the file alone: a copy that has that
        // name is read where it is. Any other is linked into a directory
        // of its own beside it (not read in its own folder, whose other
        // files a reader may look at: a Cline task's).
        let beside =
            format::store_for(report.format, report.dialect).is_some_and(|s| s.hooks.reads_beside);
        let in_place =
            beside || (out.file_name() == Some(name) && report.dialect == Dialect::ClaudeCode);
        let mut scratch = if in_place {
            None
        } else {
            Some(scratch_beside(out)?)
        };
        let copy = match &scratch {
            Some((_, dir)) => {
                let copy = dir.path().join(name);
                link_as(out, &copy)?;
                copy
            }
            None => out.to_path_buf(),
        };
        // A dry pass first: a text store's writer logs every edit as it
        // plans it, so the pass that settles the copy (most often the
        // first after the repair) writes nothing. A pass that would edit
        // the copy runs again, writing.
        let dry = Options {
            dry_run: true,
            ..opts.clone()
        };
        let mut read = ReadBack::default();
        let mut next = None;
        let again = match repair_once(&copy, input, None, &dry, relink, Some(&mut read)) {
            Ok(r) if r.edits.is_empty() || r.store != report.store || beside => Ok(r),
            Ok(_) => {
                let dir = match &scratch {
                    Some((_, dir)) => dir.path().to_path_buf(),
                    None => scratch.insert(scratch_beside(out)?).1.path().to_path_buf(),
                };
                let written = dir.join(format!("{}.next", crate::cleanup::tag()));
                let r = repair_once(&copy, input, Some(&written), opts, relink, None);
                next = Some(written);
                r
            }
            Err(e) => Err(e),
        };
        // A copy another store's reader reads (a Copilot CLI event log, a
        // provider-shaped history) is no repair of this store's file: the
        // repair it would get is another program's, or none.
        let store = match &again {
            Ok(r) => r.store,
            Err(_) => match format::open_with(&copy, opts.limits, opts.mapping.as_ref()) {
                Ok(src) => format::store_of(&src.info()).map_or("", |s| s.name),
                Err(_) => report.store,
            },
        };
        if store != report.store {
            let why = format!(
                "the repaired copy would be read by the {store} reader, where the input is read by the {} reader: {KEPT_INPUT}",
                report.store
            );
            return keep_input(input, out, opts, &why, report);
        }
        // A pass that fails leaves nothing: not the copy an earlier pass
        // committed either (a failed repair writes nothing).
        let again = match again {
            Ok(r) => r,
            // A copy that reads as no history at all (the lines an earlier
            // pass left are all damaged) is worse than any input.
            Err(Error::NotHistory { cause, .. }) => {
                let why =
                    format!("the repaired copy would read as no history ({cause}): {KEPT_INPUT}");
                return keep_input(input, out, opts, &why, report);
            }
            Err(e) => {
                let _ = std::fs::remove_file(out);
                return Err(e);
            }
        };
        last_left = Some(again.left.clone());
        // A conversation named by its file is the input's, not the
        // scratch copy's (which is gone once the repair ends).
        let (scratch_name, input_name) = (copy.display().to_string(), input.display().to_string());
        let as_input = |c: String| match c.strip_prefix(&scratch_name) {
            Some(rest) => format!("{input_name}{rest}"),
            None => c,
        };
        // What this pass leaves, the copy holds: said once. (A finding an
        // edit brought into view, which this pass leaves, was in no
        // earlier pass's list: the settling pass's too.)
        let mut said: std::collections::HashSet<(&'static str, String)> = report
            .left
            .iter()
            .map(|k| (k.rule, k.summary.clone()))
            .collect();
        for mut l in again.left {
            l.conversation = as_input(l.conversation);
            if said.insert((l.rule, l.summary.clone())) {
                report.left.push(l);
            }
        }
        if beside && !again.edits.is_empty() {
            let why = format!(
                "the repair does not settle in one pass, and a store read with the files beside it is written in one: {KEPT_INPUT}"
            );
            return keep_input(input, out, opts, &why, report);
        }
        if again.edits.is_empty() {
            reads_as = (again.format, again.dialect);
            settled = true;
            report.settled_read = Some(Box::new(read));
            break;
        }
        let next = next.ok_or_else(|| Error::Output {
            path: out.to_path_buf(),
            cause: "internal: a pass that edits the copy wrote none".into(),
        })?;
        crate::write::atomic::rename_into_place(&next, out).map_err(|e| Error::io(out, &e))?;
        report.edits.extend(again.edits.into_iter().map(|mut e| {
            e.description = format!("{} (pass {pass}, on the repaired copy)", e.description);
            e.conversation = as_input(e.conversation);
            e
        }));
    }
    // A copy that another pass would still change is no repair: a second
    // repair must change nothing.
    if !settled {
        let why = format!(
            "the repair does not settle (after {SETTLE_PASSES} more passes on the repaired copy, another would still change it): {KEPT_INPUT}"
        );
        return keep_input(input, out, opts, &why, report);
    }
    // Never worse: a copy that still holds findings must hold no more
    // errors of any rule than the input. Errors on history the input's
    // resume did not send are not counted, and the rules that say which
    // history a resume leaves out are judged by what the resume sends once
    // the way of linking is chosen (see `repair`).
    //
    // Read as another format or dialect than the input (a repair can
    // remove the only records that told them apart), the same records can
    // mean other things: a goose `toolRequest` is no call in an OpenAI
    // history, and becomes an unanswered one once the OpenAI lines before
    // it are dropped. Such a copy is held to every rule, every error
    // counted. (A copy another store reads never gets here: see above.)
    let other_dialect = reads_as != (report.format, report.dialect);
    // The other stores with a parent chain (their `chain_by_count` hook):
    // what their resume sends is not modelled as Claude Code's is, so a
    // copy is held to the chain rules by count, as the repair contract
    // holds it.
    let other_chain =
        format::store_for(report.format, report.dialect).is_some_and(|s| s.hooks.chain_by_count);
    if other_dialect
        || other_chain
        || last_left
            .as_ref()
            .is_some_and(|l: &Vec<Left>| !l.is_empty())
    {
        let (before, copy) = (
            read_back(input, opts)?,
            copy_read(&report, out, input, opts)?,
        );
        let by_count = other_dialect || other_chain;
        let gained = copy.gained(&before, !by_count, |r| {
            by_count || !RESUME_RULES.contains(&r)
        });
        if let Some((rule, n)) = gained {
            let why = if other_dialect {
                format!(
                    "the repaired copy would read as {} ({}), where the input reads as {} ({}), and there it would hold {n} {rule} error(s) more than the input: {KEPT_INPUT}",
                    reads_as.0, reads_as.1, report.format, report.dialect,
                )
            } else {
                format!(
                    "the repaired copy would hold {n} {rule} error(s) more than the input: {KEPT_INPUT}"
                )
            };
            return keep_input(input, out, opts, &why, report);
        }
    }
    // A finding an earlier pass left and a later pass repaired is not
    // left: of each rule, no more are said to be left than the copy holds.
    if let Some(last) = last_left {
        let mut room: HashMap<&str, usize> = HashMap::new();
        for l in &last {
            *room.entry(l.rule).or_default() += 1;
        }
        report.left.retain(|l| match room.get_mut(l.rule) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        });
    }
    Ok(report)
}

/// How every reason for keeping the input as it is ends (a check that a
/// copy is never worse than its input failed): what tells such a repair
/// from one that found nothing to do.
pub const KEPT_INPUT: &str = "the copy keeps the input as it is";

/// Make the copy the input as it is, every finding a repair would have
/// fixed left with the reason `why`.
fn keep_input(
    input: &Path,
    out: &Path,
    opts: &Options,
    why: &str,
    report: Report,
) -> Result<Report> {
    let mut src = format::open_with(input, opts.limits, opts.mapping.as_ref())?;
    let mut left = Vec::new();
    while let Some(conv) = src.next_conversation() {
        let conv = conv?;
        let findings = crate::lint::check(&conv, &opts.selection);
        for p in plan(&findings, &opts.policy, &mut left) {
            left.push(Left::of(p.finding, why));
        }
        src.done(conv);
    }
    crate::write::lines::copy_as(input, out, opts.limits.max_line_bytes, true)?;
    Ok(Report {
        edits: Vec::new(),
        left,
        kept_input: Some(why.to_string()),
        settled_read: None,
        ..report
    })
}

/// One pass: repair `input` into `output`.
/// With `back`, what lint makes of the input is added to it as well.
fn repair_once(
    input: &Path,
    origin: &Path,
    output: Option<&Path>,
    opts: &Options,
    relink: Relink,
    mut back: Option<&mut ReadBack>,
) -> Result<Report> {
    let pg = source::is_postgres(input);
    if pg {
        if output.is_some() {
            return Err(Error::Usage(
                "a PostgreSQL database is never modified and has no file copy: write the repair as a script with --emit-sql FILE, or apply it to another database with --target URL".into(),
            ));
        }
        if opts.emit_sql.is_none() && opts.target.is_none() && !opts.dry_run {
            return Err(Error::Usage(
                "repair of a PostgreSQL database needs --emit-sql FILE or --target URL (or --dry-run)".into(),
            ));
        }
        if let Some(sql) = &opts.emit_sql {
            check_output(input, sql, opts.force)?;
        }
    } else if opts.emit_sql.is_some() || opts.target.is_some() {
        return Err(Error::Usage(format!(
            "--emit-sql and --target repair PostgreSQL inputs; {} is a file: write its repaired copy with -o",
            input.display()
        )));
    } else if let Some(out) = output {
        check_output(input, out, opts.force)?;
    } else if !opts.dry_run {
        return Err(Error::Usage("repair needs -o OUTPUT (or --dry-run)".into()));
    }
    let mut src = format::open_with(input, opts.limits, opts.mapping.as_ref())?;
    let info = src.info();
    // The store's writer, made before any conversation is read: a store
    // that is never repaired is refused here, with nothing written.
    let target = Target {
        input,
        origin,
        output: if opts.dry_run { None } else { output },
        force: opts.force,
        dry_run: opts.dry_run,
        policy: &opts.policy,
        limits: opts.limits,
        mapping: opts.mapping.as_ref(),
        emit_sql: opts.emit_sql.as_deref(),
        target: opts.target.as_deref(),
        relink,
    };
    let store = format::store_of(&info).map_or("", |s| s.name);
    let mut writer = match format::store_of(&info).map(|s| &s.writing) {
        Some(Writing::Copy { new, .. }) => new(&target)?,
        Some(Writing::Never(why)) => return Err(Error::input(input, *why)),
        None => {
            return Err(Error::input(
                input,
                format!(
                    "internal: no store writes {} ({}) inputs",
                    info.format, info.dialect
                ),
            ));
        }
    };
    let mut log = Log::default();
    let mut last = None;
    // The checks run where the source builds each conversation when it has
    // threads of its own, as lint's do; here otherwise.
    let selection = opts.selection.clone();
    src.prepare_with(std::sync::Arc::new(
        move |conv: &crate::model::Conversation| {
            Box::new(crate::lint::check(conv, &selection)) as source::Prepared
        },
    ));
    while let Some(conv) = src.next_conversation() {
        let conv = conv?;
        let findings = src
            .prepared()
            .and_then(|p| p.downcast::<Vec<Finding>>().ok())
            .map_or_else(|| crate::lint::check(&conv, &opts.selection), |p| *p);
        if let Some(b) = back.as_deref_mut() {
            b.add(&conv, &findings);
        }
        let planned = plan(&findings, &opts.policy, &mut log.left);
        writer.plan(&conv, &planned, &mut log)?;
        last = Some(conv.source.clone());
        src.done(conv);
    }
    // A file's dialect is known once it has been read.
    let info = last.unwrap_or(info);
    if !opts.dry_run {
        writer.write(&mut log)?;
    }
    // A PostgreSQL source is named without its password.
    let display = if pg {
        info.path.display().to_string()
    } else {
        input.display().to_string()
    };
    let written_as = match (output, opts.dry_run) {
        (Some(out), false) if !pg => source::compressed::written_as(input, out)?,
        _ => None,
    };
    let output = match (&log.sql, &log.target) {
        (Some(s), Some(t)) => Some(format!("{s} and {t}")),
        (Some(s), None) => Some(s.clone()),
        (None, Some(t)) => Some(t.clone()),
        (None, None) => output.map(|p| p.display().to_string()),
    };
    Ok(Report {
        version: crate::finding::JSON_VERSION,
        input: display,
        output,
        format: info.format,
        dialect: info.dialect,
        dry_run: opts.dry_run,
        policy: opts.policy,
        sql: log.sql,
        target: log.target,
        inserted: log.inserted,
        written_as,
        backup: None,
        companion: None,
        edits: log.edits,
        left: log.left,
        kept_input: None,
        store,
        settled_read: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `settle` learns whether a pass would edit the copy from a dry pass:
    /// a text store's writer logs every edit (and every finding left) as
    /// it plans, before it writes. So a dry pass and a pass that writes
    /// report the same, on every text fixture a repair reads.
    #[test]
    fn a_dry_pass_plans_what_a_written_pass_does() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        // The text files of the fixtures (JSON Lines and JSON).
        let files: Vec<PathBuf> = ["fixtures", "tests/data"]
            .iter()
            .flat_map(|d| walkdir::WalkDir::new(root.join(d)).sort_by_file_name())
            .filter_map(|e| e.ok().map(walkdir::DirEntry::into_path))
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl" || e == "json"))
            .collect();
        let opts = Options::default();
        let dry = Options {
            dry_run: true,
            ..opts.clone()
        };
        let work = tempfile::tempdir().unwrap();
        let mut compared = 0;
        for (i, f) in files.iter().enumerate() {
            let out = work.path().join(i.to_string());
            std::fs::create_dir(&out).unwrap();
            let out = out.join(f.file_name().unwrap());
            for relink in [Relink::FileOrder, Relink::AsBridged] {
                let written = repair_once(f, f, Some(&out), &opts, relink, None);
                let planned = repair_once(f, f, None, &dry, relink, None);
                let _ = std::fs::remove_file(&out);
                let (Ok(w), Ok(p)) = (written, planned) else {
                    continue;
                };
                let json = |r: &Report| {
                    serde_json::to_value((&r.edits, &r.left, r.format, r.dialect, r.store)).unwrap()
                };
                assert_eq!(json(&p), json(&w), "{}", f.display());
                compared += 1;
            }
        }
        assert!(compared > 100, "only {compared} repairs compared");
    }
}
