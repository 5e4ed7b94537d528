//! Fixes as data. A rule that knows how its finding is repaired attaches a
//! [`Fix`]: actions against the canonical model (message and part positions,
//! record locations), and whether applying them is safe or invents content.
//! The writer of the input's store (`format/<store>/writer.rs`, through the
//! `write::Writer` trait) turns them into edits of a copy in the input's
//! own storage format; rules never edit anything.

use serde::Serialize;

use crate::model::Loc;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Action {
    /// Drop a record that does not parse (kept verbatim in the log).
    DropRecord { loc: Loc },
    /// Remove a tool result; its message goes too when nothing else remains.
    RemoveResult { message: usize, part: usize },
    /// Replace a tool call's arguments (the raw text goes to the log).
    ReplaceArguments {
        message: usize,
        part: usize,
        with: String,
    },
    /// Answer an unanswered tool call, by the repair's orphan policy:
    /// insert a placeholder result, or drop the call.
    AnswerCall { message: usize, part: usize },
    /// Give a tool result the item type its call expects (Codex: a
    /// `function_call_output` answering a `custom_tool_call` becomes a
    /// `custom_tool_call_output`); the output itself is kept.
    RetypeResult { message: usize, part: usize },
    /// Move messages (in order) to just after message `after`.
    MoveAfter { messages: Vec<usize>, after: usize },
    /// Renumber a chunk store's message indices so that each true message
    /// has its own, in order.
    RenumberIndices,
    /// Rebuild the tool-result message a message table lost at `index`: a
    /// `user` message answering the calls (`calls`: part positions) of the
    /// message at `message`, from the tool execution records where they are
    /// settled, else by the repair's orphan policy. Inserted, never edited.
    RebuildResults {
        message: usize,
        index: i64,
        calls: Vec<usize>,
    },
    /// Re-link a record whose parent link (Claude Code `parentUuid`) names
    /// a record that is not there to the record before it in file order.
    Relink { loc: Loc },
    /// Write the records glued on one line on lines of their own.
    SplitLine { loc: Loc },
    /// Replace lone surrogate escapes of a record with U+FFFD.
    ReplaceSurrogates { loc: Loc },
    /// Remove a thinking block whose signature the provider refuses (its
    /// text goes to the log).
    DropThinking { loc: Loc, block: usize },
    /// Keep a record that a later one with the same uuid replaces (Claude
    /// Code): the earlier gets a uuid of its own, and the later record is
    /// chained to it, so both are sent.
    KeepReplaced { earlier: Loc, later: Loc },
    /// Give an assistant record (Claude Code) the `message.id` of the
    /// reply it belongs to (the old value goes to the log).
    SetMessageId { loc: Loc, id: String },
    /// Remove a content block the API does not know (Claude Code: the
    /// record holding only it); it goes to the log.
    DropBlock { loc: Loc, block: usize },
    /// Drop the record at `loc`, which repeats the record at `of` (a
    /// record written twice); the writer checks that it does, and the
    /// repeat goes to the log.
    DropRepeat { loc: Loc, of: Loc },
    /// Give a tool call that reuses the id of an earlier call an id of
    /// its own, and the same to the result that answers it (`result`:
    /// message, part); the old values go to the log. The new id is
    /// derived from the old one by the store's writer, in its client's
    /// convention (a client may refuse ids of another shape), stably.
    RenameCall {
        message: usize,
        part: usize,
        result: Option<(usize, usize)>,
    },
    /// Replace an image the request cannot carry with a text block saying
    /// what was removed and why (the image goes to the log): the `nth`
    /// image of content block `block` of the record at `loc` (the block
    /// itself, or an image inside a tool result).
    ReplaceImage {
        loc: Loc,
        block: usize,
        nth: usize,
        why: String,
    },
    /// Remove the stored `id` of the item that is the record at `loc`
    /// (the old record goes to the log).
    DropItemId { loc: Loc },
    /// Two records share a uuid and the later closes a parent cycle
    /// through it (Claude Code): the earlier gets a uuid of its own, and
    /// the records written between them that name the uuid as parent are
    /// linked to it; the later keeps its parent. Both are sent.
    UnshareUuid { earlier: Loc, later: Loc },
    /// Give the last line of a paginated history (Codex), which has no
    /// ordinal or one that is no number, the ordinal `ordinal` (the one
    /// after the highest before it); the line as it was goes to the log.
    SetOrdinal { loc: Loc, ordinal: u64 },
    /// Replace a `tool_reference` the API refuses (item `item` of the
    /// content of the tool result at block `block` of the record at `loc`)
    /// with a text block saying what was removed and why (the block as it
    /// was goes to the log).
    ReplaceToolReference {
        loc: Loc,
        block: usize,
        item: usize,
        why: String,
    },
    /// Give a tool call the name `name` in place of one the API refuses
    /// (the old name goes to the log). Results answer a call by its id,
    /// which is kept, so the pair stays whole.
    RenameTool {
        message: usize,
        part: usize,
        name: String,
    },
    /// Write the record split over the lines at `loc` on one line, each
    /// raw newline inside its strings written as `\n` (the lines as they
    /// were go to the log).
    JoinLines { loc: Loc },
    /// Write each raw U+2028 / U+2029 of the record at `loc` as its escape
    /// (`\u2028`, `\u2029`): the same JSON value, on one line for every
    /// line splitter.
    EscapeSeparators { loc: Loc },
    /// Drop the NUL bytes of the line at `loc`, and the line when nothing
    /// else is on it (the bytes go to the log).
    DropPadding { loc: Loc },
}

impl Action {
    pub fn name(&self) -> &'static str {
        match self {
            Action::DropRecord { .. } => "drop-record",
            Action::RemoveResult { .. } => "remove-result",
            Action::ReplaceArguments { .. } => "replace-arguments",
            Action::AnswerCall { .. } => "answer-call",
            Action::RetypeResult { .. } => "retype-result",
            Action::MoveAfter { .. } => "move-after",
            Action::RenumberIndices => "renumber-indices",
            Action::RebuildResults { .. } => "rebuild-results",
            Action::Relink { .. } => "relink",
            Action::SplitLine { .. } => "split-line",
            Action::ReplaceSurrogates { .. } => "replace-surrogates",
            Action::DropThinking { .. } => "drop-thinking",
            Action::KeepReplaced { .. } => "keep-replaced",
            Action::SetMessageId { .. } => "set-message-id",
            Action::DropBlock { .. } => "drop-block",
            Action::DropRepeat { .. } => "drop-repeat",
            Action::RenameCall { .. } => "rename-call",
            Action::ReplaceImage { .. } => "replace-image",
            Action::DropItemId { .. } => "drop-item-id",
            Action::UnshareUuid { .. } => "unshare-uuid",
            Action::SetOrdinal { .. } => "set-ordinal",
            Action::ReplaceToolReference { .. } => "replace-tool-reference",
            Action::RenameTool { .. } => "rename-tool",
            Action::JoinLines { .. } => "join-lines",
            Action::EscapeSeparators { .. } => "escape-separators",
            Action::DropPadding { .. } => "drop-padding",
        }
    }
}

/// Whether a fix can be applied without a person's judgement (as ruff's
/// `Applicability`). `repair --no-synthesize` applies safe fixes only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Applicability {
    /// Keeps every payload of the input (in the copy or in the repair log)
    /// and invents nothing.
    Safe,
    /// Invents content: a placeholder result for a call whose real result
    /// was never recorded.
    Unsafe,
}

impl Applicability {
    pub fn as_str(self) -> &'static str {
        match self {
            Applicability::Safe => "safe",
            Applicability::Unsafe => "unsafe",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fix {
    pub actions: Vec<Action>,
    pub applicability: Applicability,
}
