//! What Claude Code does with each pattern when it resumes a session.

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::Dialect;

pub static PROFILE: Profile = Profile {
    app: "Claude Code",
    dialect: Dialect::ClaudeCode,
    formats: &[],
    provider: Provider::Anthropic,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        Resume {
            pattern: Pattern::OrphanToolCall,
            does: Does::Drops,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "Claude Code 2.1.x removes the unanswered call from the request without a word: the call is lost from the history the model sees",
            )],
            cites_context: true,
            versions: "2.1.x",
            healed_from: None,
        },
        Resume {
            pattern: Pattern::OrphanToolCallAtEnd,
            does: Does::Heals(
                "an `is_error` result `[Tool call interrupted: …]`, appended to the session file",
            ),
            severity: Some(Severity::Warning),
            says: None,
            notes: &[
                Note::Text(
                    "a session whose last record is a tool call may simply be running: the tool has not returned yet",
                ),
                Note::Text(
                    "on resume, Claude Code 2.1.x answers it with an `is_error` tool_result `[Tool call interrupted: the session ended before this call's result was recorded, so its outcome is unknown. …]` and an assistant `No response requested.`, and appends both to the session file",
                ),
            ],
            cites_context: true,
            versions: "2.1.x",
            healed_from: None,
        },
        Resume {
            pattern: Pattern::CorruptRecordTornTail,
            does: Does::Drops,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "Claude Code 2.1.x skips the line on resume: what it held is lost, and the client appends after it",
            )],
            cites_context: true,
            versions: "2.1.x",
            healed_from: None,
        },
        Resume {
            pattern: Pattern::CorruptRecord,
            does: Does::Drops,
            severity: None,
            says: None,
            notes: &[Note::Text(
                "Claude Code 2.1.x skips the line on resume: what it held is lost, and the records chained to it lose their parent (see `dangling-parent`)",
            )],
            cites_context: true,
            versions: "2.1.x",
            healed_from: None,
        },
        // Claude Code reads the record and sends U+FFFD instead.
        Resume::new(
            Pattern::LoneSurrogate,
            Does::Heals("U+FFFD in the escape's place"),
            &[Note::Text(
                "strict JSON readers reject the line; sent as is, the API answers `no low surrogate in string`",
            )],
        )
        .saying("Claude Code sends U+FFFD in {place}")
        .with_severity(Severity::Warning)
        .on_versions("2.1.x")
        // CHANGELOG 2.1.132: "Fixed `--resume` failing with `no low
        // surrogate in string` when a tool error truncation split an emoji;
        // pre-corrupted sessions are sanitized on load".
        .healed_from("2.1.132"),
        Resume::new(
            Pattern::OrphanToolResultOffChain,
            Does::Drops,
            &[Note::Text(
                "Claude Code leaves it out of the request: its content is lost",
            )],
        ),
        Resume::new(
            Pattern::InterleavedMessage,
            Does::Heals("`is_error` results right after the calls; the real results are left out"),
            &[Note::Text(
                "Claude Code 2.1.x answers the calls with `is_error` results `[Tool result missing due to internal error]` right after them and leaves the real results out: the request is accepted, and what the tools returned is lost",
            )],
        )
        .on_versions("2.1.x"),
        // The parent chain (`model::chain`): what the resume walk makes of
        // a link that names no record, or one already walked. `{to}`,
        // `{gap}`: the record that stands in and how much older it is;
        // `{kept}`: "the resume keeps N of M messages".
        Resume::new(
            Pattern::DanglingParentBridged,
            Does::Heals("the newest record at most 5,000 ms older stands in for the parent"),
            &[Note::Text(
                "Claude Code 2.1.x takes the newest record at most 5,000 ms older as the parent of an orphan; other readers of the file see a broken chain",
            )],
        )
        .saying("Claude Code bridges it to line {to} ({gap} older): nothing is lost")
        .with_severity(Severity::Warning)
        .on_versions("2.1.x"),
        Resume::new(Pattern::DanglingParentTooOld, Does::Drops, &[])
            .saying("Claude Code starts the conversation here and {kept}")
            .with_severity(Severity::Error)
            .on_versions("2.1.x"),
        Resume::new(Pattern::DanglingParentFirstReply, Does::SendsAsIs, &[])
            .saying("Claude Code starts the conversation with this assistant reply, and the prompt it answers is lost")
            .with_severity(Severity::Error)
            .on_versions("2.1.x"),
        Resume::new(
            Pattern::DanglingParentFirst,
            Does::Heals("the conversation starts at the record"),
            &[],
        )
        .saying("nothing is older, so Claude Code starts the conversation here: nothing is lost")
        .with_severity(Severity::Warning)
        .on_versions("2.1.x"),
        Resume::new(
            Pattern::ParentCycleFirst,
            Does::Heals("the conversation starts at the record"),
            &[],
        )
        .saying("nothing is older, so Claude Code starts the conversation here: nothing is lost")
        .with_severity(Severity::Warning)
        .on_versions("2.1.x"),
        Resume::new(
            Pattern::ParentCycleBridged,
            Does::Heals("the newest record at most 5,000 ms older stands in for the parent"),
            &[],
        )
        .saying("Claude Code bridges it to line {to} ({gap} older)")
        .with_severity(Severity::Warning)
        .on_versions("2.1.x"),
        Resume::new(Pattern::ParentCycleTooOld, Does::Drops, &[])
            .saying("Claude Code starts the conversation here and {kept}")
            .with_severity(Severity::Error)
            .on_versions("2.1.x"),
        // `{leaf}`: the line of the one record sent.
        Resume::new(Pattern::UnchainedRecords, Does::Drops, &[])
            .saying("Claude Code sends only line {leaf}; {kept}"),
        // `{line}`, `{pline}`: the lines of the later and the earlier record.
        Resume::new(Pattern::DuplicateUuidCopyAtEnd, Does::Drops, &[])
            .saying("Claude Code resumes from it (see `stale-leaf`)")
            .with_severity(Severity::Error),
        Resume::new(Pattern::DuplicateUuidCopy, Does::Heals("it reads one copy"), &[])
            .saying("Claude Code reads one copy, nothing is lost")
            .with_severity(Severity::Warning),
        Resume::new(Pattern::DuplicateUuidReused, Does::Drops, &[])
            .saying("Claude Code keeps line {line} and line {pline} is lost on resume")
            .with_severity(Severity::Error),
        // `{leaf}`, `{latest}`: the lines of the dead end and of the latest
        // conversation.
        Resume::new(Pattern::StaleLeaf, Does::Drops, &[])
            .saying("Claude Code resumes from line {leaf}, a dead end, not from line {latest}: {kept}"),
        // `{lost}`: the types of the records after the first.
        Resume::new(
            Pattern::GluedRecords,
            Does::Drops,
            &[Note::Text(
                "Claude Code 2.1.330 skips the line after its first record: the records after it are not sent, nor what depends on them (a call whose result is lost is removed; history above a lost record of the chain is stranded)",
            )],
        )
        .saying("Claude Code reads the first and loses the rest on resume ({lost})")
        .with_severity(Severity::Error)
        .on_versions("2.1.330"),
        Resume::new(
            Pattern::GluedRecordsNoMessage,
            Does::Drops,
            &[Note::Text(
                "Claude Code 2.1.330 skips the line after its first record; what it skips here is not sent to the model anyway",
            )],
        )
        .saying("Claude Code reads the first and loses the rest on resume ({lost})")
        .with_severity(Severity::Warning)
        .on_versions("2.1.330"),
        Resume::new(
            Pattern::MismatchedMessageId,
            Does::Changes("as a reply of its own, after the rest of that reply"),
            &[],
        )
        .saying("Claude Code sends it as a reply of its own, after the rest of that reply")
        .with_severity(Severity::Warning)
        .on_versions("2.1.330"),
        // `{what}`: the record and its calls, and the results under it.
        Resume::new(
            Pattern::MismatchedMessageIdOffBranch,
            Does::Drops,
            &[Note::Text(
                "Claude Code brings the records of a reply in by `message.id`: this one is silently lost, and its results with it",
            )],
        )
        .saying("Claude Code leaves {what} out of the request")
        .with_severity(Severity::Error)
        .on_versions("2.1.330"),
        Resume::new(Pattern::ThinkingSignature, Does::SendsAsIs, &[])
            .saying("Claude Code sends it as is and the API refuses the request")
            .on_versions("2.1.x"),
        // `{mb}`: the image's base64 size in MB, one decimal.
        Resume::new(
            Pattern::OversizedImageBase64,
            Does::RefusesToResume,
            &[Note::Text(
                "Claude Code answers `Image base64 size ({mb}MB) exceeds API limit (5MB). Please resize the image before sending.`",
            )],
        )
        .saying("Claude Code refuses to resume")
        .on_versions("2.1.330"),
        // Measured with the mock answering a request over 200,000
        // (estimated) tokens as the API does (tests/oracle.rs,
        // `claude_code_compacts_away_a_tool_result_over_the_context`).
        Resume::new(
            Pattern::OversizedToolResult,
            Does::Fails(
                "the request is refused as over the context, and it compacts the session into a summary made without the turns up to this result",
            ),
            &[
                Note::Text(
                    "Claude Code 2.1.330 sends the result whole on every resume; the API answers `prompt is too long: N tokens > 200000 maximum`",
                ),
                Note::Text(
                    "Claude Code then compacts the session on its own: its summary request is refused too, and retried with the earliest turns cut (`[earlier conversation truncated for compaction retry]`); the resumed conversation holds only that summary, which leaves out everything up to this result",
                ),
            ],
        )
        .saying("Claude Code's resume is refused, and it compacts the history away")
        .with_severity(Severity::Warning)
        .on_versions("2.1.330"),
        Resume::new(
            Pattern::UnknownBlockType,
            Does::SendsAsIs,
            &[Note::Text(
                "Claude Code 2.1.x sends the block as it is: every resume fails",
            )],
        )
        .on_versions("2.1.x"),
        Resume::new(
            Pattern::UnknownBlockTypeUntyped,
            Does::Drops,
            &[Note::Text(
                "Claude Code 2.1.330 removes content blocks without a `type` before it sends the request: what the block held is lost from the history the model sees",
            )],
        )
        .saying("Claude Code removes it from the request without a word")
        .with_severity(Severity::Warning)
        .on_versions("2.1.330"),
        Resume::new(
            Pattern::EmptyAssistantMessage,
            Does::Drops,
            &[Note::Text(
                "Claude Code 2.1.x drops an empty or whitespace-only assistant message on resume (and puts `No response requested.` in place of an empty final answer)",
            )],
        )
        .on_versions("2.1.x"),
        Resume::new(
            Pattern::EmptyUserMessage,
            Does::SendsAsIs,
            &[Note::Text(
                "Claude Code 2.1.x sends it as is, and the API refuses the request: `messages: text content blocks must contain non-whitespace text`",
            )],
        )
        .with_severity(Severity::Error)
        .on_versions("2.1.x"),
        Resume::new(
            Pattern::EmptyTextBlock,
            Does::Heals("the block left out of the request"),
            &[Note::Text(
                "Claude Code 2.1.x leaves a blank text block out of the request it builds, so its own resume is accepted; the API refuses the block (`messages: text content blocks must be non-empty`), and other readers of the session send it",
            )],
        )
        .saying("Claude Code leaves it out of the request")
        .with_severity(Severity::Warning)
        .on_versions("2.1.x"),
        Resume::new(
            Pattern::InvalidToolArguments,
            Does::SendsAsIs,
            &[Note::Text(
                "Claude Code 2.1.x sends the `input` as stored, and the API refuses the request: `tool_use.input: Input should be a valid dictionary`",
            )],
        )
        .on_versions("2.1.x"),
        Resume::new(
            Pattern::InvalidToolNameNul,
            Does::SendsAsIs,
            &[Note::Text(
                "Claude Code 2.1.330 sends the call under its name as stored, NUL and all, and the API refuses the request",
            )],
        )
        .on_versions("2.1.330"),
        Resume::new(
            Pattern::InvalidToolNameLong,
            Does::Changes("the name cut to its first 200 characters"),
            &[Note::Text(
                "Claude Code 2.1.330 sends the name cut to its first 200 characters: the request is valid, and the model sees the call under the shorter name; other readers of the session send it whole, and the API answers `messages.N.content.M.tool_use.name: String should have at most 200 characters`",
            )],
        )
        .saying("Claude Code sends it cut to its first 200 characters")
        .with_severity(Severity::Warning)
        .on_versions("2.1.330"),
        Resume::new(
            Pattern::InvalidToolReferenceLong,
            Does::SendsAsIs,
            &[Note::Text(
                "Claude Code 2.1.330 sends a tool reference as stored while the tool is offered (its MCP server configured, tool search on), and the API refuses the request: `messages.N.content.M.tool_result.content.K.tool_reference.tool_name: String should have at most 64 characters`; a reference to a tool it no longer offers it leaves out, sending the result as `[Tool references removed - tools no longer available]`",
            )],
        )
        .on_versions("2.1.330"),
        Resume::new(
            Pattern::OrphanServerToolResult,
            Does::SendsAsIs,
            &[Note::Text(
                "Claude Code 2.1.330 leaves out a `server_tool_use` whose result is not in its message, and sends the result as stored: the API refuses the request (``unexpected `tool_use_id` found in `…_tool_result` blocks``)",
            )],
        )
        .on_versions("2.1.330"),
        Resume::new(
            Pattern::OrphanServerToolResultAdvisor,
            Does::Heals("the advisor's blocks left out of the request"),
            &[Note::Text(
                "Claude Code 2.1.330 leaves every advisor block out of the request while no advisor model is set (a reply left with nothing else is sent as `[Advisor response]`); with one set, the API refuses the request (``unexpected `tool_use_id` found in `advisor_tool_result` blocks``) and the client sends it again without them. Versions from 2.1.152 to 2.1.276 were reported refused with the advisor off (anthropics/claude-code #62885, #95406)",
            )],
        )
        .saying("Claude Code leaves the advisor's blocks out of the request")
        .with_severity(Severity::Warning)
        .on_versions("2.1.330"),
        Resume::new(
            Pattern::DuplicateToolCallId,
            Does::Drops,
            &[Note::Text(
                "Claude Code 2.1.x sends the first call of the id only: the later call is left out and its result sent as `(no content)`, so that call and its output are lost from the history the model sees",
            )],
        )
        .on_versions("2.1.x"),
    ],
};
