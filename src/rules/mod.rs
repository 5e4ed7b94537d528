//! The rule catalogue. One file per rule; each is a pure function over a
//! conversation that pushes findings. Rule names are a public interface.

use std::cell::OnceCell;
use std::sync::Arc;

use crate::finding::profile::Profile;
use crate::finding::{Finding, Label, Severity};
use crate::model::{Conversation, Loc};

pub mod gaps;

use crate::model::pairing;

mod corrupt_record;
mod damaged_encrypted_content;
mod dangling_bubble_header;
mod dangling_parent;
mod digest_mismatch;
mod duplicate_index;
mod duplicate_tool_call_id;
mod duplicate_uuid;
mod empty_history;
mod empty_message;
mod empty_text_block;
mod failing_call_loop;
mod function_response_count;
mod glued_records;
mod history_elsewhere;
mod index_gap;
mod interleaved_message;
mod invalid_item_id;
mod invalid_tool_arguments;
mod invalid_tool_name;
mod lone_surrogate;
mod mismatched_message_id;
mod mismatched_tool_output;
mod missing_blob;
mod missing_fork_parent;
mod missing_ordinal;
mod missing_reasoning_content;
mod missing_required_field;
mod missing_role;
mod missing_thought_signature;
mod missing_tool_output;
mod mixed_role_message;
mod msgidx_collision;
mod nul_escape;
mod nul_padding;
mod orphan_tool_call;
mod orphan_tool_result;
mod oversized_image;
mod oversized_tool_result;
mod parent_cycle;
mod projection_out_of_step;
pub mod prompt_divergence;
mod raw_line_separator;
mod reasoning_without_follower;
mod reused_ordinal;
mod role_order;
mod seq_gap;
mod split_record;
mod stale_leaf;
mod thinking_only_message;
mod thinking_signature;
mod tool_call_as_text;
mod trailing_completion_call;
pub mod truncated_response;
mod unchained_records;
mod unknown_block_type;
mod unknown_record_type;

/// A rule: its stable name, its documentation and its check.
pub struct Rule {
    pub name: &'static str,
    pub severity: Severity,
    /// One line: what it detects.
    pub summary: &'static str,
    /// One line: what `repair` does, or `None` when the rule only reports.
    pub repair: Option<&'static str>,
    /// Markdown: What it does / Why is this bad? / What providers answer /
    /// Example / Repair. Printed by `chatfsck explain`.
    pub doc: &'static str,
    pub check: fn(&Ctx<'_>, &mut Vec<Finding>),
}

/// Every rule, in catalogue order.
pub static RULES: &[&Rule] = &[
    &msgidx_collision::RULE,
    &mixed_role_message::RULE,
    &index_gap::RULE,
    &duplicate_index::RULE,
    &seq_gap::RULE,
    &orphan_tool_call::RULE,
    &orphan_tool_result::RULE,
    &function_response_count::RULE,
    &mismatched_tool_output::RULE,
    &interleaved_message::RULE,
    &duplicate_tool_call_id::RULE,
    &invalid_tool_arguments::RULE,
    &invalid_tool_name::RULE,
    &failing_call_loop::RULE,
    &tool_call_as_text::RULE,
    &thinking_only_message::RULE,
    &reasoning_without_follower::RULE,
    &empty_message::RULE,
    &empty_text_block::RULE,
    &corrupt_record::RULE,
    &glued_records::RULE,
    &lone_surrogate::RULE,
    &dangling_parent::RULE,
    &parent_cycle::RULE,
    &missing_role::RULE,
    &unchained_records::RULE,
    &duplicate_uuid::RULE,
    &stale_leaf::RULE,
    &mismatched_message_id::RULE,
    &thinking_signature::RULE,
    &unknown_block_type::RULE,
    &oversized_image::RULE,
    &oversized_tool_result::RULE,
    &role_order::RULE,
    &truncated_response::RULE,
    &prompt_divergence::RULE,
    &dangling_bubble_header::RULE,
    &trailing_completion_call::RULE,
    &empty_history::RULE,
    &history_elsewhere::RULE,
    &missing_tool_output::RULE,
    &missing_thought_signature::RULE,
    &missing_reasoning_content::RULE,
    &missing_ordinal::RULE,
    &reused_ordinal::RULE,
    &missing_fork_parent::RULE,
    &projection_out_of_step::RULE,
    &unknown_record_type::RULE,
    &invalid_item_id::RULE,
    &damaged_encrypted_content::RULE,
    &missing_blob::RULE,
    &digest_mismatch::RULE,
    &nul_escape::RULE,
    &split_record::RULE,
    &raw_line_separator::RULE,
    &nul_padding::RULE,
    &missing_required_field::RULE,
];

pub fn find(name: &str) -> Option<&'static Rule> {
    RULES.iter().copied().find(|r| r.name == name)
}

/// Which rules run.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub select: Vec<String>,
    pub ignore: Vec<String>,
}

impl Selection {
    /// Check that every named rule exists.
    pub fn validate(&self) -> Result<(), String> {
        for name in self.select.iter().chain(&self.ignore) {
            if find(name).is_none() {
                return Err(format!(
                    "unknown rule `{name}` (run `chatfsck rules` for the list)"
                ));
            }
        }
        Ok(())
    }

    pub fn enabled(&self, rule: &Rule) -> bool {
        (self.select.is_empty() || self.select.iter().any(|s| s == rule.name))
            && !self.ignore.iter().any(|s| s == rule.name)
    }
}

/// What a rule sees: the conversation, the profile of the client that
/// reads it back, and analyses shared between rules.
pub struct Ctx<'a> {
    pub conv: &'a Conversation,
    profile: &'a Profile,
    selection: Option<&'a Selection>,
    pairing: OnceCell<pairing::Pairing>,
    indices: OnceCell<gaps::Indices>,
    turns: OnceCell<Vec<usize>>,
}

impl<'a> Ctx<'a> {
    pub fn new(conv: &'a Conversation) -> Self {
        Ctx {
            conv,
            profile: &Profile::UNKNOWN,
            selection: None,
            pairing: OnceCell::new(),
            indices: OnceCell::new(),
            turns: OnceCell::new(),
        }
    }

    /// A context that knows which rules run, so that a rule can leave a
    /// cause to the rule that diagnoses it.
    pub fn with_selection(
        conv: &'a Conversation,
        selection: &'a Selection,
        profile: &'a Profile,
    ) -> Self {
        Ctx {
            selection: Some(selection),
            profile,
            ..Ctx::new(conv)
        }
    }

    /// What the client that reads this history back does with each
    /// pattern, and whose rules it is held to.
    pub fn profile(&self) -> &Profile {
        self.profile
    }

    /// The notes of a finding on a pattern the client does `resume` with:
    /// the profile's notes (`provider`: the rule's note where the client
    /// sends the history as it is), then, for an entry healed only from
    /// some client version on, which versions heal it and which one wrote
    /// this history. Rules take a profile's notes through here.
    pub fn notes(
        &self,
        resume: &crate::finding::profile::Resume,
        provider: Option<&str>,
        vars: &[(&str, &str)],
    ) -> Vec<String> {
        let mut notes = resume.notes(provider, vars);
        notes.extend(resume.version_note(self.profile.app, self.conv.client_version.as_deref()));
        notes
    }

    /// Whether a rule runs in this check.
    pub fn runs(&self, rule: &Rule) -> bool {
        self.selection.is_none_or(|s| s.enabled(rule))
    }

    /// How tool calls and results pair up (computed once, on first use).
    pub fn pairing(&self) -> &pairing::Pairing {
        self.pairing
            .get_or_init(|| pairing::Pairing::analyse(&self.conv.messages))
    }

    /// The turn of each message as Gemini sends them (adjacent messages
    /// of one side merged), made once: every stray result asks.
    pub fn turns(&self) -> &[usize] {
        self.turns
            .get_or_init(|| function_response_count::turns(&self.conv.messages))
    }

    /// Gaps and duplicates of a message table's stored indices.
    pub fn indices(&self) -> &gaps::Indices {
        self.indices
            .get_or_init(|| gaps::Indices::analyse(self.conv, self.pairing()))
    }

    /// Whether `index-gap` runs and explains the unanswered call at
    /// (message, part): its finding names the call and carries the fix.
    pub fn gap_explains(&self, message: usize, part: usize) -> bool {
        self.runs(&index_gap::RULE) && self.indices().explains(message, part)
    }

    /// Start a finding of `rule` about the message at `message`.
    pub fn finding(
        &self,
        rule: &Rule,
        message: Option<usize>,
        loc: Loc,
        summary: String,
    ) -> Finding {
        Finding {
            rule: rule.name,
            severity: rule.severity,
            source: self.conv.source.clone(),
            conversation: self.conv.id.clone(),
            message,
            loc: Some(loc),
            summary,
            notes: Vec::new(),
            labels: Vec::new(),
            ids: Vec::new(),
            fixable: false,
            fix: None,
        }
    }
}

impl Finding {
    pub fn label(mut self, loc: &Loc, text: impl Into<String>) -> Self {
        self.labels.push(Label {
            loc: loc.clone(),
            text: text.into(),
            path: None,
        });
        self
    }

    /// Evidence in another file than the finding's own.
    pub fn label_in(mut self, path: &std::path::Path, loc: &Loc, text: impl Into<String>) -> Self {
        let path = if path == self.source.path.as_path() {
            None
        } else {
            Some(Arc::from(path))
        };
        self.labels.push(Label {
            loc: loc.clone(),
            text: text.into(),
            path,
        });
        self
    }

    pub fn note(mut self, text: impl Into<String>) -> Self {
        self.notes.push(text.into());
        self
    }

    /// Each of `notes`, in order (a client profile's notes).
    pub fn notes(mut self, notes: Vec<String>) -> Self {
        self.notes.extend(notes);
        self
    }

    pub fn id(mut self, id: &str) -> Self {
        self.ids.push(id.to_string());
        self
    }

    /// Attach a safe fix: it keeps every payload and invents nothing.
    /// Whether it applies to this input is for the input's store to say
    /// (`format::can_apply`).
    pub fn fix(mut self, actions: Vec<crate::finding::Action>) -> Self {
        self.fix = Some(crate::finding::Fix {
            actions,
            applicability: crate::finding::Applicability::Safe,
        });
        self
    }

    /// Attach a fix that invents content (a placeholder result).
    pub fn unsafe_fix(mut self, actions: Vec<crate::finding::Action>) -> Self {
        self.fix = Some(crate::finding::Fix {
            actions,
            applicability: crate::finding::Applicability::Unsafe,
        });
        self
    }
}

/// Run the selected rules over one conversation, as the client of
/// `profile` reads it back. Findings come out in message order, then
/// catalogue order.
pub fn check(conv: &Conversation, selection: &Selection, profile: &Profile) -> Vec<Finding> {
    let ctx = Ctx::with_selection(conv, selection, profile);
    let mut out = Vec::new();
    for rule in RULES {
        if selection.enabled(rule) {
            (rule.check)(&ctx, &mut out);
        }
    }
    out.sort_by_key(|f| (f.line().unwrap_or(0), f.message.unwrap_or(usize::MAX)));
    out
}

/// The rules that need a store and the trace its app wrote: run over one
/// store-against-trace comparison.
pub fn check_against_trace(
    store: &Conversation,
    cmp: &crate::model::compare::ConvComparison,
    trace_path: &std::path::Path,
    selection: &Selection,
) -> Vec<Finding> {
    let ctx = Ctx::new(store);
    let mut out = Vec::new();
    if selection.enabled(&prompt_divergence::RULE) {
        out.extend(prompt_divergence::findings(&ctx, store, cmp, trace_path));
    }
    if selection.enabled(&truncated_response::RULE) {
        out.extend(truncated_response::against_store(
            &ctx, store, cmp, trace_path,
        ));
    }
    out
}

/// Describe a message position for summaries: `message 3 (line 9)`.
pub(crate) fn at(conv: &Conversation, pos: usize) -> String {
    match conv.messages.get(pos).and_then(|m| m.loc.line()) {
        Some(line) => format!("message {pos}, line {line}"),
        None => format!("message {pos}"),
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Rule unit tests: conversations built in memory, and the findings of
    //! one rule.
    //!
    //! A conversation is held to its provider's rules (the provider of
    //! its dialect); what each app's client does with a pattern is the
    //! app's profile, tested on the app's fixtures.
    pub use crate::model::testutil::*;

    use crate::finding::profile::{Profile, Provider};
    use crate::model::Dialect;

    /// A profile that says nothing but whose rules a dialect's histories
    /// are held to, whether they are replayed as stored, and how its
    /// loader pairs outputs.
    pub fn provider_profile(dialect: Dialect) -> &'static Profile {
        const fn of(provider: Provider, replays: bool, pairs_outputs_by_id: bool) -> Profile {
            Profile {
                provider,
                replays_as_stored: replays,
                pairs_outputs_by_id,
                ..Profile::UNKNOWN
            }
        }
        static CHAT: Profile = of(Provider::OpenAiChat, true, false);
        static RESPONSES: Profile = of(Provider::OpenAiResponses, false, true);
        static ANTHROPIC: Profile = of(Provider::Anthropic, true, false);
        static GEMINI: Profile = of(Provider::Gemini, false, false);
        match dialect {
            Dialect::OpenAi
            | Dialect::Kimi
            | Dialect::Dispatch
            | Dialect::Phoenix
            | Dialect::GenAi
            | Dialect::OpenInference => &CHAT,
            Dialect::Anthropic | Dialect::Gbrain => &ANTHROPIC,
            Dialect::Codex => &RESPONSES,
            Dialect::GeminiCli => &GEMINI,
            _ => &Profile::UNKNOWN,
        }
    }

    pub fn rules_of(conv: &crate::model::Conversation, rule: &str) -> Vec<crate::finding::Finding> {
        rules_in(conv, rule, provider_profile(conv.source.dialect))
    }

    /// The findings of one rule, as the client of `profile` reads `conv`.
    pub fn rules_in(
        conv: &crate::model::Conversation,
        rule: &str,
        profile: &Profile,
    ) -> Vec<crate::finding::Finding> {
        crate::rules::check(conv, &crate::rules::Selection::default(), profile)
            .into_iter()
            .filter(|f| f.rule == rule)
            .collect()
    }
}
