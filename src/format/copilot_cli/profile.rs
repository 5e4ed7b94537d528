//! What GitHub Copilot CLI does with each pattern when it resumes a
//! session: closed source, so what it does was seen running it
//! (1.0.102 offline against the loopback mock, `copilot -p … --resume`:
//! tests/oracle/copilot.py, fixtures/copilot-cli/README.md); where its
//! behaviour is not known it says so.

use crate::finding::Severity;
use crate::finding::profile::{Does, Note, Pattern, Profile, Provider, Resume};
use crate::model::Dialect;

const VERSIONS: &str = "1.0.102";

pub static PROFILE: Profile = Profile {
    app: "Copilot CLI",
    dialect: Dialect::CopilotCli,
    formats: &[],
    provider: Provider::Unknown,
    replays_as_stored: false,
    pairs_outputs_by_id: false,
    resume: &[
        Resume::new(
            Pattern::OrphanToolCall,
            Does::Heals("it sends a result of its own"),
            &[Note::Text(
                "Copilot CLI answers the call in the request it sends (`The execution of this tool, or a previous tool was interrupted.`) without writing it to the log: the request is valid",
            )],
        )
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::OrphanToolCallAtEnd,
            Does::Heals("it records a result of its own"),
            &[
                Note::Text(
                    "Copilot CLI writes a `tool.execution_complete` for the call on resume (`success: false`, error `interrupted`: `Tool execution was interrupted before a result was recorded…`) and a `session.warning`: the request is valid",
                ),
                Note::Text(
                    "the log ends on this call: if Copilot CLI is still running it, the call may simply be in progress",
                ),
            ],
        )
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::OrphanToolResult,
            Does::Drops,
            &[Note::Text(
                "Copilot CLI leaves a result whose call is not in the log out of the request it sends: the request is valid, and the output is lost from what the model sees",
            )],
        )
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::CorruptRecordTornTail,
            Does::Drops,
            &[Note::Text(
                "Copilot CLI drops the torn last line on resume and rewrites the log without it; the resume goes on with the events before it",
            )],
        )
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::CorruptRecord,
            Does::Drops,
            &[Note::Text(
                "Copilot CLI drops this line on resume without a word and rewrites the log without it: what it held, whole events glued on it included, is lost for good",
            )],
        )
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::SplitRecord,
            Does::Drops,
            &[Note::Text(
                "Copilot CLI finds no JSON on any of the lines, drops them all on resume without a word and rewrites the log without them: what the record held is lost for good",
            )],
        )
        .saying("Copilot CLI drops every one of them on resume and rewrites the log without them")
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::RawLineSeparator,
            Does::Heals("it reads the record whole"),
            &[Note::Text(
                "Copilot CLI splits its log on `\\n` only: it reads the record whole and sends its text as it is; versions of early 2026 refused such a log (`Session file is corrupted (line N: SyntaxError …)`, copilot-cli#2658, #2490)",
            )],
        )
        .saying("Copilot CLI reads the record whole")
        .with_severity(Severity::Info)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::NulPadding,
            Does::Heals("it drops the padding"),
            &[Note::Text(
                "Copilot CLI drops the NUL bytes on resume and rewrites the log without them; the history is resumed whole",
            )],
        )
        .saying("Copilot CLI drops them on resume and resumes the history whole")
        .with_severity(Severity::Warning)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::NulPaddingBeforeRecord,
            Does::Drops,
            &[Note::Text(
                "Copilot CLI drops the whole line on resume, the record with the NUL bytes, and rewrites the log without it: the record is lost for good",
            )],
        )
        .saying("Copilot CLI drops the line, record and all, on resume and rewrites the log without it")
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
        Resume::new(
            Pattern::MissingRequiredField,
            Does::RefusesToResume,
            &[
                Note::Text(
                    "Copilot CLI refuses to resume the session (`Session file is corrupted (line N: missing field …)`, or `invalid session event envelope` for `id`, `parentId` and `timestamp`): nothing of the history can be resumed",
                ),
                Note::Text(
                    "no repair: the value is not in the record, and Copilot CLI has no default of its own for it",
                ),
            ],
        )
        .saying("Copilot CLI refuses to resume the session")
        .with_severity(Severity::Error)
        .on_versions(VERSIONS),
        // Closed source, on Node: not seen resuming one.
        Resume::new(
            Pattern::LoneSurrogate,
            Does::Unknown,
            &[Note::Text(
                "what the app sends in its place was not established; strict JSON readers (serde_json) refuse the record, and sent as is the escape is refused (Anthropic: `no low surrogate in string`)",
            )],
        )
        .saying("a `JSON.parse` reader takes it, the escape as U+FFFD")
        .with_severity(Severity::Warning),
    ],
};
