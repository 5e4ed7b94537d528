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
    /// A record's parent is missing; a record close enough in time
    /// stands in for it.
    DanglingParentBridged,
    /// A record's parent is missing, and the newest older record is too
    /// old to stand in for it.
    DanglingParentTooOld,
    /// A reply's parent is missing and nothing is older: its prompt is lost.
    DanglingParentFirstReply,
    /// A record's parent is missing and nothing is older.
    DanglingParentFirst,
    /// A record's parent is missing, and the client's walk stops there
    /// (no record stands in for it: pi, Qwen Code).
    DanglingParentCut,
    /// A parent link closes a cycle, and nothing is older.
    ParentCycleFirst,
    /// A parent link closes a cycle; a record close enough in time stands
    /// in for the parent.
    ParentCycleBridged,
    /// A parent link closes a cycle, and the newest older record is too old.
    ParentCycleTooOld,
    /// A parent link closes a cycle, in a store whose client does not look
    /// for another parent (pi, Qwen Code).
    ParentCycleCut,
    /// In a message tree walked from its current message: a message's
    /// parent is missing, and the walk stops at it.
    DanglingParentInTree,
    /// In a message tree: the current-message pointer names no message.
    DanglingCurrent,
    /// In a message tree: a message lists a child no message is.
    DanglingChild,
    /// In a message tree: the walk from the current message comes back
    /// onto itself.
    ParentCycleInTree,
    /// In a message tree: a stored message has no role.
    MissingRole,
    /// No record of the chain carries a parent link.
    UnchainedRecords,
    /// An exact copy of a record, written last: the resume starts from it.
    DuplicateUuidCopyAtEnd,
    /// An exact copy of a record.
    DuplicateUuidCopy,
    /// Two different records share one uuid.
    DuplicateUuidReused,
    /// The resume starts from a dead end, not from the latest conversation.
    StaleLeaf,
    /// Records glued on one line, messages among those after the first.
    GluedRecords,
    /// Records glued on one line, no message after the first.
    GluedRecordsNoMessage,
    /// A record of a split reply carries another message id, on the
    /// branch the resume walks.
    MismatchedMessageId,
    /// A record of a split reply carries another message id, off the
    /// branch the resume walks.
    MismatchedMessageIdOffBranch,
    /// A thinking block whose signature is missing, empty or malformed.
    ThinkingSignature,
    /// An image whose base64 data is over the API's limit.
    OversizedImageBase64,
    /// A tool result larger by itself than the model's context.
    OversizedToolResult,
    /// A content block whose type the API does not know.
    UnknownBlockType,
    /// A content block with no type, in a store whose loader leaves it out.
    UnknownBlockTypeUntyped,
    /// An assistant message of empty or whitespace-only text.
    EmptyAssistantMessage,
    /// A user message of empty or whitespace-only text blocks.
    EmptyUserMessage,
    /// An item id that does not begin as the API expects for its type.
    InvalidItemId,
    /// An item id of the wrong prefix that is a UUID.
    InvalidItemIdUuid,
    /// Encrypted reasoning that is no longer a whole token.
    DamagedEncryptedContent,
    /// The client's incremental index of the history has read past its end.
    ProjectionOutOfStep,
    /// An empty or whitespace-only text block beside other content.
    EmptyTextBlock,
    /// Tool-call arguments that are not a JSON object.
    InvalidToolArguments,
    /// A tool call's name that holds a NUL character.
    InvalidToolNameNul,
    /// A tool call's name over the API's 200 characters.
    InvalidToolNameLong,
    /// A tool call with an empty name, in a store whose client sends it
    /// as it is (Crush, when several tools run: crush#659).
    InvalidToolNameEmpty,
    /// A `tool_reference`'s tool name over the API's 64 characters.
    InvalidToolReferenceLong,
    /// A call's name the Responses API refuses: a character outside
    /// `[a-zA-Z0-9_-]` (a NUL, a dot).
    InvalidToolNameChars,
    /// A server tool's result without its call before it in its message.
    OrphanServerToolResult,
    /// An advisor tool's result without its call before it in its message.
    OrphanServerToolResultAdvisor,
    /// One record written over several lines by raw newlines in a string.
    SplitRecord,
    /// Raw U+2028 / U+2029 characters in a record's text.
    RawLineSeparator,
    /// A line of NUL bytes only (after the last record, or between records).
    NulPadding,
    /// A run of NUL bytes on a record's line (before it, or after it).
    NulPaddingBeforeRecord,
    /// A record lacking a member its client requires of its type.
    MissingRequiredField,
    /// An assistant message of a thinking-mode history stored without its
    /// reasoning, the store naming a DeepSeek model (whose thinking mode
    /// refuses it).
    MissingReasoningContent,
    /// An assistant message with tool calls stored without its reasoning
    /// while other messages carry theirs, the store naming no model.
    MissingReasoningContentUnnamed,
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
        Pattern::DanglingParentBridged,
        Pattern::DanglingParentTooOld,
        Pattern::DanglingParentFirstReply,
        Pattern::DanglingParentFirst,
        Pattern::DanglingParentCut,
        Pattern::ParentCycleFirst,
        Pattern::ParentCycleBridged,
        Pattern::ParentCycleTooOld,
        Pattern::ParentCycleCut,
        Pattern::DanglingParentInTree,
        Pattern::DanglingCurrent,
        Pattern::DanglingChild,
        Pattern::ParentCycleInTree,
        Pattern::MissingRole,
        Pattern::UnchainedRecords,
        Pattern::DuplicateUuidCopyAtEnd,
        Pattern::DuplicateUuidCopy,
        Pattern::DuplicateUuidReused,
        Pattern::StaleLeaf,
        Pattern::GluedRecords,
        Pattern::GluedRecordsNoMessage,
        Pattern::MismatchedMessageId,
        Pattern::MismatchedMessageIdOffBranch,
        Pattern::ThinkingSignature,
        Pattern::OversizedImageBase64,
        Pattern::OversizedToolResult,
        Pattern::UnknownBlockType,
        Pattern::UnknownBlockTypeUntyped,
        Pattern::EmptyAssistantMessage,
        Pattern::EmptyUserMessage,
        Pattern::InvalidItemId,
        Pattern::InvalidItemIdUuid,
        Pattern::DamagedEncryptedContent,
        Pattern::ProjectionOutOfStep,
        Pattern::EmptyTextBlock,
        Pattern::InvalidToolArguments,
        Pattern::InvalidToolNameNul,
        Pattern::InvalidToolNameLong,
        Pattern::InvalidToolNameEmpty,
        Pattern::InvalidToolReferenceLong,
        Pattern::InvalidToolNameChars,
        Pattern::OrphanServerToolResult,
        Pattern::OrphanServerToolResultAdvisor,
        Pattern::SplitRecord,
        Pattern::RawLineSeparator,
        Pattern::NulPadding,
        Pattern::NulPaddingBeforeRecord,
        Pattern::MissingRequiredField,
        Pattern::MissingReasoningContent,
        Pattern::MissingReasoningContentUnnamed,
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
            Pattern::OrphanToolResult
            | Pattern::OrphanToolResultOffChain
            | Pattern::OrphanServerToolResult
            | Pattern::OrphanServerToolResultAdvisor => "orphan-tool-result",
            Pattern::InterleavedMessage => "interleaved-message",
            Pattern::MissingOrdinalAtEnd | Pattern::MissingOrdinal => "missing-ordinal",
            Pattern::ReusedOrdinal => "reused-ordinal",
            Pattern::MissingForkParent => "missing-fork-parent",
            Pattern::DanglingParentBridged
            | Pattern::DanglingParentTooOld
            | Pattern::DanglingParentFirstReply
            | Pattern::DanglingParentFirst
            | Pattern::DanglingParentCut
            | Pattern::DanglingParentInTree
            | Pattern::DanglingCurrent
            | Pattern::DanglingChild => "dangling-parent",
            Pattern::ParentCycleFirst
            | Pattern::ParentCycleBridged
            | Pattern::ParentCycleTooOld
            | Pattern::ParentCycleCut
            | Pattern::ParentCycleInTree => "parent-cycle",
            Pattern::MissingRole => "missing-role",
            Pattern::UnchainedRecords => "unchained-records",
            Pattern::DuplicateUuidCopyAtEnd
            | Pattern::DuplicateUuidCopy
            | Pattern::DuplicateUuidReused => "duplicate-uuid",
            Pattern::StaleLeaf => "stale-leaf",
            Pattern::GluedRecords | Pattern::GluedRecordsNoMessage => "glued-records",
            Pattern::MismatchedMessageId | Pattern::MismatchedMessageIdOffBranch => {
                "mismatched-message-id"
            }
            Pattern::ThinkingSignature => "thinking-signature",
            Pattern::OversizedImageBase64 => "oversized-image",
            Pattern::OversizedToolResult => "oversized-tool-result",
            Pattern::UnknownBlockType | Pattern::UnknownBlockTypeUntyped => "unknown-block-type",
            Pattern::EmptyAssistantMessage | Pattern::EmptyUserMessage => "empty-message",
            Pattern::InvalidItemId | Pattern::InvalidItemIdUuid => "invalid-item-id",
            Pattern::DamagedEncryptedContent => "damaged-encrypted-content",
            Pattern::ProjectionOutOfStep => "projection-out-of-step",
            Pattern::EmptyTextBlock => "empty-text-block",
            Pattern::InvalidToolArguments => "invalid-tool-arguments",
            Pattern::InvalidToolNameNul
            | Pattern::InvalidToolNameLong
            | Pattern::InvalidToolNameEmpty
            | Pattern::InvalidToolReferenceLong
            | Pattern::InvalidToolNameChars => "invalid-tool-name",
            Pattern::SplitRecord => "split-record",
            Pattern::RawLineSeparator => "raw-line-separator",
            Pattern::NulPadding | Pattern::NulPaddingBeforeRecord => "nul-padding",
            Pattern::MissingRequiredField => "missing-required-field",
            Pattern::MissingReasoningContent | Pattern::MissingReasoningContentUnnamed => {
                "missing-reasoning-content"
            }
        }
    }

    /// Whether it is found on a parent chain of records (`model::chain`),
    /// which only the stores that write one have: no other client meets
    /// it, so `explain` names no "any other client" for it.
    pub const fn on_a_chain(self) -> bool {
        matches!(
            self,
            Pattern::DanglingParentBridged
                | Pattern::DanglingParentTooOld
                | Pattern::DanglingParentFirstReply
                | Pattern::DanglingParentFirst
                | Pattern::DanglingParentCut
                | Pattern::ParentCycleFirst
                | Pattern::ParentCycleBridged
                | Pattern::ParentCycleTooOld
                | Pattern::ParentCycleCut
                | Pattern::DanglingParentInTree
                | Pattern::DanglingCurrent
                | Pattern::DanglingChild
                | Pattern::ParentCycleInTree
                | Pattern::MissingRole
                | Pattern::UnchainedRecords
                | Pattern::DuplicateUuidCopyAtEnd
                | Pattern::DuplicateUuidCopy
                | Pattern::DuplicateUuidReused
                | Pattern::StaleLeaf
                | Pattern::GluedRecords
                | Pattern::GluedRecordsNoMessage
                | Pattern::MismatchedMessageId
                | Pattern::MismatchedMessageIdOffBranch
                | Pattern::ThinkingSignature
                | Pattern::OversizedImageBase64
                | Pattern::InvalidToolReferenceLong
                | Pattern::OrphanServerToolResult
                | Pattern::OrphanServerToolResultAdvisor
                | Pattern::UnknownBlockTypeUntyped
                | Pattern::OrphanToolResultOffChain
        )
    }

    /// Whether it is damage to the store's own framing (lines, required
    /// members) that each client's loader deals with in its own way before
    /// any request is built: what a client not profiled does with it is
    /// not known, rather than the provider's answer.
    pub const fn in_the_loader(self) -> bool {
        matches!(
            self,
            Pattern::SplitRecord
                | Pattern::RawLineSeparator
                | Pattern::NulPadding
                | Pattern::NulPaddingBeforeRecord
                | Pattern::MissingRequiredField
        )
    }

    /// Whether it is found in a paginated history (`model::paging`: its
    /// numbering, the history it continues, the index its client keeps of
    /// it), which only the stores that write one have: as for
    /// [`Pattern::on_a_chain`], no other client meets it.
    pub const fn on_a_paged_history(self) -> bool {
        matches!(
            self,
            Pattern::MissingOrdinalAtEnd
                | Pattern::MissingOrdinal
                | Pattern::ReusedOrdinal
                | Pattern::MissingForkParent
                | Pattern::ProjectionOutOfStep
        )
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
            Pattern::DanglingParentBridged => {
                "a record close enough in time stands in for the parent"
            }
            Pattern::DanglingParentTooOld => "the newest older record is too old to stand in",
            Pattern::DanglingParentFirstReply => "nothing is older, and the record is a reply",
            Pattern::DanglingParentFirst => "nothing is older",
            Pattern::DanglingParentCut => "the walk stops there, nothing stands in",
            Pattern::ParentCycleFirst => "nothing is older",
            Pattern::ParentCycleBridged => "a record close enough in time stands in for the parent",
            Pattern::ParentCycleTooOld => "the newest older record is too old to stand in",
            Pattern::ParentCycleCut => "the walk stops there, nothing stands in",
            Pattern::DanglingParentInTree => {
                "in a message tree, the walk from the current message stops at it"
            }
            Pattern::DanglingCurrent => "the current-message pointer names no message",
            Pattern::DanglingChild => "a message lists a child no message is",
            Pattern::ParentCycleInTree => {
                "in a message tree, the walk from the current message comes back onto itself"
            }
            Pattern::MissingRole => "a stored message has no role",
            Pattern::UnchainedRecords => "no record carries a parent link",
            Pattern::DuplicateUuidCopyAtEnd => "an exact copy is the last record",
            Pattern::DuplicateUuidCopy => "a record is copied exactly",
            Pattern::DuplicateUuidReused => "two different records share a uuid",
            Pattern::StaleLeaf => "the last record is a dead end",
            Pattern::GluedRecords => "messages are glued after the first record",
            Pattern::GluedRecordsNoMessage => "only records that are not messages are glued",
            Pattern::MismatchedMessageId => "the record is on the branch the resume walks",
            Pattern::MismatchedMessageIdOffBranch => {
                "the record is off the branch the resume walks"
            }
            Pattern::ThinkingSignature => "a thinking block's signature is missing or damaged",
            Pattern::OversizedImageBase64 => "an image's base64 data is over 5 MB",
            Pattern::OversizedToolResult => "a tool result alone is over the model's context",
            Pattern::UnknownBlockType => "a block's type is none the API knows",
            Pattern::UnknownBlockTypeUntyped => "a block has no type",
            Pattern::EmptyAssistantMessage => "an assistant message is blank",
            Pattern::EmptyUserMessage => "a user message holds only blank text",
            Pattern::InvalidItemId => "an item's id has the wrong prefix",
            Pattern::InvalidItemIdUuid => "an item's id is a UUID",
            Pattern::DamagedEncryptedContent => "encrypted reasoning is cut or not base64",
            Pattern::ProjectionOutOfStep => "the history is shorter than its index has read",
            Pattern::EmptyTextBlock => "a text block beside other content is empty",
            Pattern::InvalidToolArguments => "a call's arguments are no JSON object",
            Pattern::InvalidToolNameNul => "a call's name holds a NUL",
            Pattern::InvalidToolNameLong => "a call's name is over 200 characters",
            Pattern::InvalidToolNameEmpty => "a call's name is empty",
            Pattern::InvalidToolReferenceLong => "a tool reference's name is over 64 characters",
            Pattern::InvalidToolNameChars => {
                "a call's name holds a character outside `[a-zA-Z0-9_-]`"
            }
            Pattern::OrphanServerToolResult => {
                "a server tool's result is not in its call's message"
            }
            Pattern::OrphanServerToolResultAdvisor => {
                "an advisor's result is not in its call's message"
            }
            Pattern::SplitRecord => "a record is split over lines by raw newlines",
            Pattern::RawLineSeparator => "a record holds raw U+2028 or U+2029",
            Pattern::NulPadding => "a line holds only NUL bytes",
            Pattern::NulPaddingBeforeRecord => "NUL bytes share a line with a record",
            Pattern::MissingRequiredField => "a record lacks a member its client requires",
            Pattern::MissingReasoningContent => "the store names a DeepSeek model",
            Pattern::MissingReasoningContentUnnamed => {
                "the store names no model; other messages carry reasoning"
            }
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
    /// It sends what the pattern holds otherwise than stored (how, in a
    /// few words): the request is valid, the model sees another history.
    Changes(&'static str),
    /// It refuses to resume the history, or cannot load it.
    RefusesToResume,
    /// It resumes the history, and something else fails (what, in a few
    /// words).
    Fails(&'static str),
    /// Not known (a closed-source client).
    Unknown,
}

impl Does {
    pub fn describe(self) -> String {
        match self {
            Does::Heals(how) => format!("heals it ({how})"),
            Does::Drops => "drops it".to_string(),
            Does::SendsAsIs => "sends it as is: the provider refuses the request".to_string(),
            Does::Changes(how) => format!("sends it changed ({how})"),
            Does::RefusesToResume => "refuses to resume".to_string(),
            Does::Fails(what) => format!("resumes it, but {what}"),
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
    /// The first client version that does what `does` says, and what
    /// earlier versions do. `None`: every version does. The finding then
    /// says which versions heal it and which one wrote the history
    /// ([`Resume::version_note`]).
    pub healed_from: Option<Healed>,
}

/// From which client version a pattern is healed, and what the versions
/// before it do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Healed {
    pub from: &'static str,
    /// What earlier versions do, in a few words after "earlier versions";
    /// `None`: they send the pattern as it is (the provider's behaviour).
    pub earlier: Option<&'static str>,
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
        healed_from: None,
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
            healed_from: None,
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

    /// What `does` says holds from client version `version` on (a release
    /// note or the client's source says so); earlier versions send the
    /// pattern as it is.
    pub const fn healed_from(self, version: &'static str) -> Resume {
        Resume {
            healed_from: Some(Healed {
                from: version,
                earlier: None,
            }),
            ..self
        }
    }

    /// What `does` says holds from client version `version` on, and what
    /// versions before it do instead of sending the pattern as it is (a
    /// few words after "earlier versions").
    pub const fn healed_from_while_earlier(
        self,
        version: &'static str,
        earlier: &'static str,
    ) -> Resume {
        Resume {
            healed_from: Some(Healed {
                from: version,
                earlier: Some(earlier),
            }),
            ..self
        }
    }

    /// For an entry healed only from some version on: which versions of
    /// `app` heal the pattern, and which one wrote the history
    /// (`written_by`, where its records say).
    pub fn version_note(&self, app: &str, written_by: Option<&str>) -> Option<String> {
        let Healed { from, earlier } = self.healed_from?;
        let earlier = earlier.unwrap_or("send it as it is, and the request is refused");
        let heals = format!("{app} heals this from {from} on (earlier versions {earlier})");
        Some(match written_by {
            None => format!("{heals}; the history does not say which version wrote it"),
            Some(v) => match Version::parse(v).zip(Version::parse(from)) {
                Some((v_, from_)) if v_ >= from_ => {
                    format!("{heals}; this history was written by {v}, which does")
                }
                Some(_) => format!("{heals}; this history was written by {v}, which does not"),
                None => format!("{heals}; this history was written by `{v}`"),
            },
        })
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

/// A client version, `MAJOR.MINOR.PATCH` with any number of numeric
/// parts, an optional `-pre-release` (older than the release) and an
/// optional `+build` (ignored), as client versions are written
/// (`2.1.132`, `0.169.0`, `1.0.0-alpha.3`). Parts compare as numbers, a
/// missing part as 0.
#[derive(Debug, Clone)]
pub struct Version {
    parts: Vec<u64>,
    pre: Option<String>,
}

impl Version {
    /// `None` when `text` is not a version (a part that is not a number).
    pub fn parse(text: &str) -> Option<Version> {
        let text = text.trim();
        let text = text.strip_prefix('v').unwrap_or(text);
        let text = text.split_once('+').map_or(text, |(v, _)| v);
        let (core, pre) = match text.split_once('-') {
            Some((c, p)) if !p.is_empty() => (c, Some(p.to_string())),
            Some(_) => return None,
            None => (text, None),
        };
        let parts = core
            .split('.')
            .map(|p| {
                if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                    None
                } else {
                    p.parse().ok()
                }
            })
            .collect::<Option<Vec<u64>>>()?;
        Some(Version { parts, pre })
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let n = self.parts.len().max(other.parts.len());
        let part = |v: &Version, i: usize| v.parts.get(i).copied().unwrap_or(0);
        (0..n)
            .map(|i| part(self, i).cmp(&part(other, i)))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| match (&self.pre, &other.pre) {
                (None, None) => std::cmp::Ordering::Equal,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some(a), Some(b)) => pre_cmp(a, b),
            })
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Version {}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Pre-releases compare identifier by identifier, numbers as numbers
/// (`alpha.10` after `alpha.9`).
fn pre_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let mut x = a.split('.');
    let mut y = b.split('.');
    loop {
        match (x.next(), y.next()) {
            (None, None) => return std::cmp::Ordering::Equal,
            (None, Some(_)) => return std::cmp::Ordering::Less,
            (Some(_), None) => return std::cmp::Ordering::Greater,
            (Some(p), Some(q)) => {
                let o = match (p.parse::<u64>(), q.parse::<u64>()) {
                    (Ok(m), Ok(n)) => m.cmp(&n),
                    _ => p.cmp(q),
                };
                if o.is_ne() {
                    return o;
                }
            }
        }
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

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn versions_compare_part_by_part_as_numbers() {
        assert!(v("2.1.132") > v("2.1.99"));
        assert!(v("2.1.132") > v("2.0.64"));
        assert!(v("0.169.0") > v("0.46.0"));
        assert_eq!(v("2.1"), v("2.1.0"));
        assert_eq!(v("v1.2.3+build.7"), v("1.2.3"));
        assert!(v("1.0.0-alpha.3") < v("1.0.0"));
        assert!(v("1.0.0-alpha.3") > v("0.9.9"));
        assert!(v("1.0.0-alpha.10") > v("1.0.0-alpha.9"));
        for bad in ["", "2.x", "1..2", "a.b.c", "1.0-", "-1.0"] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_version_note_says_who_heals_and_who_wrote() {
        let r = Resume::new(Pattern::LoneSurrogate, Does::Heals("x"), &[]);
        assert_eq!(r.version_note("App", Some("1.0.0")), None);
        let r = r.healed_from("2.1.132");
        let heals = "App heals this from 2.1.132 on (earlier versions send it as it is, and the request is refused)";
        assert_eq!(
            r.version_note("App", Some("2.0.64")).unwrap(),
            format!("{heals}; this history was written by 2.0.64, which does not")
        );
        assert_eq!(
            r.version_note("App", Some("2.1.132")).unwrap(),
            format!("{heals}; this history was written by 2.1.132, which does")
        );
        assert_eq!(
            r.version_note("App", None).unwrap(),
            format!("{heals}; the history does not say which version wrote it")
        );
        assert_eq!(
            r.version_note("App", Some("nightly")).unwrap(),
            format!("{heals}; this history was written by `nightly`")
        );
        let r = r.healed_from_while_earlier("0.21.2", "drop it from the request");
        assert_eq!(
            r.version_note("App", Some("0.15.10")).unwrap(),
            "App heals this from 0.21.2 on (earlier versions drop it from the request); this history was written by 0.15.10, which does not"
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
