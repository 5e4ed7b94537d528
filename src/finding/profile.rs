//! Client profiles: what an app's client does, on resume, with each
//! pattern the rules detect, and which provider's rules its histories are
//! held to.
//!
//! A rule detects; the profile of the history's app says what that means
//! for the user (the severity and the note of the finding). Each store
//! declares its profiles in its own folder (`format/<store>/profile.rs`),
//! the registry (`format::PROFILES`) lists them, and lint hands the
//! profile of each input to the rules (`rules::Ctx::profile`). A store
//! that says nothing about a pattern gets the provider's behaviour: the
//! history is sent as it is and the request is refused.
//!
//! The type lives here, beside `Severity`, because rules read it (rules
//! import `model` and `finding` only) and stores declare it.

use super::Severity;
use crate::model::{Dialect, Format};

/// The API whose rules a history is held to when its client sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Not known, or not a request (a store whose app has its own loader
    /// and whose provider-level ordering rules chatfsck does not apply).
    Unknown,
    /// OpenAI Chat Completions (and providers of its shape).
    OpenAiChat,
    /// OpenAI Responses (items: reasoning, function calls and outputs).
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini API (`contents`, function calls and responses by turn).
    Gemini,
}

/// A pattern a rule detects, with the sub-case where what a client does
/// differs. Stable keys: profiles name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// A tool call with no result, and the conversation moves on.
    OrphanToolCall,
    /// A tool call with no result, and the history ends after it.
    OrphanToolCallAtEnd,
    /// A line or row that does not parse as a record.
    CorruptRecord,
    /// A record cut off at the end of the file (a torn write).
    CorruptRecordTornTail,
    /// A line that is not UTF-8.
    CorruptRecordNotUtf8,
    /// A tool call id used by an earlier call.
    DuplicateToolCallId,
    /// A history file that holds no message (`[]`).
    EmptyHistory,
    /// A reasoning item with no model output after it.
    ReasoningWithoutFollower,
    /// An output whose type does not answer its call's type.
    MismatchedToolOutput,
    /// A function call that opens a step of the current turn, unsigned.
    MissingThoughtSignature,
    /// A function call answered again in the next turn.
    FunctionResponseCount,
    /// A lone UTF-16 surrogate escape in a record's JSON text.
    LoneSurrogate,
    /// A tool result that answers no call before it, or a call already answered.
    OrphanToolResult,
    /// A tool result on a record the client's resume walk never reaches.
    OrphanToolResultOffChain,
    /// Tool results that exist but arrive after another message.
    InterleavedMessage,
    /// The last line of a paginated history carries no ordinal.
    MissingOrdinalAtEnd,
    /// A line before the last one of a paginated history carries no ordinal.
    MissingOrdinal,
    /// A line's ordinal repeats or goes below an earlier line's.
    ReusedOrdinal,
    /// A forked history whose base history is gone.
    MissingForkParent,
    /// An empty or whitespace-only text block beside other content.
    EmptyTextBlock,
    /// Tool-call arguments that are not a JSON object.
    InvalidToolArguments,
}

impl Pattern {
    /// Every pattern, in catalogue order (for `explain`).
    pub const ALL: &'static [Pattern] = &[
        Pattern::OrphanToolCall,
        Pattern::OrphanToolCallAtEnd,
        Pattern::CorruptRecord,
        Pattern::CorruptRecordTornTail,
        Pattern::CorruptRecordNotUtf8,
        Pattern::DuplicateToolCallId,
        Pattern::EmptyHistory,
        Pattern::ReasoningWithoutFollower,
        Pattern::MismatchedToolOutput,
        Pattern::MissingThoughtSignature,
        Pattern::FunctionResponseCount,
        Pattern::LoneSurrogate,
        Pattern::OrphanToolResult,
        Pattern::OrphanToolResultOffChain,
        Pattern::InterleavedMessage,
        Pattern::MissingOrdinalAtEnd,
        Pattern::MissingOrdinal,
        Pattern::ReusedOrdinal,
        Pattern::MissingForkParent,
        Pattern::EmptyTextBlock,
        Pattern::InvalidToolArguments,
    ];

    /// The rule that detects it.
    pub const fn rule(self) -> &'static str {
        match self {
            Pattern::OrphanToolCall | Pattern::OrphanToolCallAtEnd => "orphan-tool-call",
            Pattern::CorruptRecord
            | Pattern::CorruptRecordTornTail
            | Pattern::CorruptRecordNotUtf8 => "corrupt-record",
            Pattern::DuplicateToolCallId => "duplicate-tool-call-id",
            Pattern::EmptyHistory => "empty-history",
            Pattern::ReasoningWithoutFollower => "reasoning-without-follower",
            Pattern::MismatchedToolOutput => "mismatched-tool-output",
            Pattern::MissingThoughtSignature => "missing-thought-signature",
            Pattern::FunctionResponseCount => "function-response-count",
            Pattern::LoneSurrogate => "lone-surrogate",
            Pattern::OrphanToolResult | Pattern::OrphanToolResultOffChain => "orphan-tool-result",
            Pattern::InterleavedMessage => "interleaved-message",
            Pattern::MissingOrdinalAtEnd | Pattern::MissingOrdinal => "missing-ordinal",
            Pattern::ReusedOrdinal => "reused-ordinal",
            Pattern::MissingForkParent => "missing-fork-parent",
            Pattern::EmptyTextBlock => "empty-text-block",
            Pattern::InvalidToolArguments => "invalid-tool-arguments",
        }
    }

    /// The case, in a few words (for `explain`).
    pub const fn case(self) -> &'static str {
        match self {
            Pattern::OrphanToolCall => "the conversation moves on after the call",
            Pattern::OrphanToolCallAtEnd => "the history ends on the call",
            Pattern::CorruptRecord => "a record does not parse",
            Pattern::CorruptRecordTornTail => "the last record is cut off",
            Pattern::CorruptRecordNotUtf8 => "a line is not UTF-8",
            Pattern::DuplicateToolCallId => "two calls share an id",
            Pattern::EmptyHistory => "the history is empty",
            Pattern::ReasoningWithoutFollower => "a reasoning item has no output after it",
            Pattern::MismatchedToolOutput => "an output of another type answers a call",
            Pattern::MissingThoughtSignature => "a step of the current turn opens unsigned",
            Pattern::FunctionResponseCount => "a call is answered twice",
            Pattern::LoneSurrogate => "a record holds a lone surrogate escape",
            Pattern::OrphanToolResult => "a result answers no call, or an answered one",
            Pattern::OrphanToolResultOffChain => {
                "a result hangs off a record the resume never reaches"
            }
            Pattern::InterleavedMessage => "the results arrive after another message",
            Pattern::MissingOrdinalAtEnd => "the last line has no ordinal",
            Pattern::MissingOrdinal => "a line before the last has no ordinal",
            Pattern::ReusedOrdinal => "an ordinal repeats or goes back",
            Pattern::MissingForkParent => "the history a fork continues is gone",
            Pattern::EmptyTextBlock => "a text block beside other content is empty",
            Pattern::InvalidToolArguments => "a call's arguments are no JSON object",
        }
    }
}

/// What a client does with a pattern when it resumes the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Does {
    /// It heals the pattern before sending (how, in a few words).
    Heals(&'static str),
    /// It drops what the pattern holds: the request is valid, something
    /// is lost from the history the model sees.
    Drops,
    /// It sends the history as it is: the provider refuses the request.
    SendsAsIs,
    /// It refuses to resume the history, or cannot load it.
    RefusesToResume,
    /// Not known (a closed-source client).
    Unknown,
}

impl Does {
    pub fn describe(self) -> String {
        match self {
            Does::Heals(how) => format!("heals it ({how})"),
            Does::Drops => "drops it".to_string(),
            Does::SendsAsIs => "sends it as is: the provider refuses the request".to_string(),
            Does::RefusesToResume => "refuses to resume".to_string(),
            Does::Unknown => "not known".to_string(),
        }
    }
}

/// One note of a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Note {
    /// The client's behaviour, in its own words. `{name}` placeholders are
    /// filled by the rule (each rule's documentation names them).
    Text(&'static str),
    /// Here, the note the rule gives when no client heals the pattern (the
    /// provider's answer).
    Provider,
}

/// What one client does with one pattern.
#[derive(Debug, Clone, Copy)]
pub struct Resume {
    pub pattern: Pattern,
    pub does: Does,
    /// The severity that follows; `None`: the rule's own.
    pub severity: Option<Severity>,
    /// The finding's notes, in order.
    pub notes: &'static [Note],
    /// What the client does, in the words that end the finding's summary,
    /// for rules whose summary says it; `None`: the rule's own words.
    pub says: Option<&'static str>,
    /// Whether the finding keeps the rule's evidence beyond the pattern
    /// itself (e.g. the message the conversation moves on to).
    pub cites_context: bool,
    /// The client versions this was established on.
    pub versions: &'static str,
}

/// What the provider does with `pattern` when no client heals it: the
/// history is sent as it is, the rule's severity and note.
pub const fn provider(pattern: Pattern) -> Resume {
    Resume {
        pattern,
        does: Does::SendsAsIs,
        severity: None,
        says: None,
        notes: &[Note::Provider],
        cites_context: true,
        versions: "",
    }
}

/// A client: the app that reads a store back and sends its histories.
#[derive(Debug)]
pub struct Profile {
    /// The app, as its users name it.
    pub app: &'static str,
    /// The dialect the store reports for this app's histories.
    pub dialect: Dialect,
    /// The formats this profile covers; empty: all of the dialect's.
    pub formats: &'static [Format],
    /// Whose rules the histories are held to.
    pub provider: Provider,
    /// The client sends the stored messages as the request, in their order
    /// (a provider-shaped log, a recorded request); `false`: its loader
    /// rebuilds the request from its own records (merges, trims), so the
    /// provider's rules on turn order apply to what it builds, not to the
    /// store.
    pub replays_as_stored: bool,
    /// The client pairs a call with an output of its id anywhere in the
    /// history (Codex's loader): a call with such an output is not
    /// unanswered to it.
    pub pairs_outputs_by_id: bool,
    /// What the client does, pattern by pattern; a pattern not named gets
    /// [`provider`]'s behaviour.
    pub resume: &'static [Resume],
}

impl Profile {
    /// A history whose app is not known: held to no provider's ordering
    /// rules, every pattern the provider's.
    pub const UNKNOWN: Profile = Profile {
        app: "",
        dialect: Dialect::Unknown,
        formats: &[],
        provider: Provider::Unknown,
        replays_as_stored: false,
        pairs_outputs_by_id: false,
        resume: &[],
    };

    /// What the client does with `pattern`: its own entry, or the
    /// provider's behaviour.
    pub fn on(&self, pattern: Pattern) -> Resume {
        self.own(pattern).copied().unwrap_or(provider(pattern))
    }

    /// What the client does with the first of `patterns` (the most
    /// specific sub-case first) it names, or the provider's behaviour with
    /// the last.
    pub fn on_first(&self, patterns: &[Pattern]) -> Resume {
        patterns
            .iter()
            .find_map(|&p| self.own(p).copied())
            .unwrap_or_else(|| provider(patterns[patterns.len() - 1]))
    }

    /// The client's own entry for `pattern`, if it has one.
    pub fn own(&self, pattern: Pattern) -> Option<&Resume> {
        self.resume.iter().find(|r| r.pattern == pattern)
    }

    /// Whether this profile describes a history of `dialect` in `format`.
    pub fn covers(&self, dialect: Dialect, format: Format) -> bool {
        self.dialect == dialect && (self.formats.is_empty() || self.formats.contains(&format))
    }
}

impl Resume {
    /// What a client does with `pattern`, with the rule's severity and
    /// evidence, established on no named version.
    pub const fn new(pattern: Pattern, does: Does, notes: &'static [Note]) -> Resume {
        Resume {
            pattern,
            does,
            severity: None,
            says: None,
            notes,
            cites_context: true,
            versions: "",
        }
    }

    /// With the words that end the finding's summary.
    pub const fn saying(self, says: &'static str) -> Resume {
        Resume {
            says: Some(says),
            ..self
        }
    }

    /// With the severity that follows.
    pub const fn with_severity(self, severity: Severity) -> Resume {
        Resume {
            severity: Some(severity),
            ..self
        }
    }

    /// The words that end the finding's summary, filled like the notes.
    pub fn says(&self, default: &str, vars: &[(&str, &str)]) -> String {
        fill(self.says.unwrap_or(default), vars)
    }

    /// The client versions this was established on.
    pub const fn on_versions(self, versions: &'static str) -> Resume {
        Resume { versions, ..self }
    }

    /// The severity of a finding the rule gives `default`.
    pub fn severity_or(&self, default: Severity) -> Severity {
        self.severity.unwrap_or(default)
    }

    /// The notes, with the provider's note and `{name}` placeholders filled.
    pub fn notes(&self, provider: Option<&str>, vars: &[(&str, &str)]) -> Vec<String> {
        let mut out = Vec::new();
        for n in self.notes {
            match n {
                Note::Provider => out.extend(provider.map(str::to_string)),
                Note::Text(t) => out.push(fill(t, vars)),
            }
        }
        out
    }
}

/// `text` with each `{name}` of `vars` replaced by its value, in one pass
/// (a value is never read for placeholders).
fn fill(text: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let var = after
            .find('}')
            .and_then(|close| vars.iter().find(|(k, _)| *k == &after[..close]));
        match var {
            Some((k, v)) => {
                out.push_str(v);
                rest = &after[k.len() + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_once() {
        assert_eq!(
            fill(
                "drops `{id}` and {other} `{{x}}`",
                &[("id", "{id}"), ("x", "1")]
            ),
            "drops `{id}` and {other} `{1}`"
        );
    }

    #[test]
    fn a_pattern_no_profile_names_is_the_providers() {
        let r = Profile::UNKNOWN.on(Pattern::OrphanToolCall);
        assert_eq!(r.does, Does::SendsAsIs);
        assert_eq!(r.severity_or(Severity::Error), Severity::Error);
        assert_eq!(r.notes(Some("refused"), &[]), vec!["refused".to_string()]);
    }
}
