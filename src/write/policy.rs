//! The repair policies: what `repair` does with a tool call that has no
//! result, and whether it may invent content. Set by flags or by the
//! `[repair]` table of chatfsck.toml (`config`).

use serde::Deserialize;

/// What `repair` does with a tool call that has no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum OrphanCalls {
    /// Insert a result right after the call: the real one when an execution
    /// record or trace holds it, else a clearly marked placeholder.
    Placeholder,
    /// Remove the unanswered call from the copy (kept in the repair log).
    Drop,
    /// Change nothing; only report the call.
    Report,
}

/// The repair policies, resolved: what the repair command applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RepairPolicy {
    pub orphan_calls: OrphanCalls,
    /// Whether repair may invent content (placeholder results). Results
    /// recovered from execution records or traces are not invented.
    pub synthesize: bool,
}

impl Default for RepairPolicy {
    fn default() -> Self {
        RepairPolicy {
            orphan_calls: OrphanCalls::Placeholder,
            synthesize: true,
        }
    }
}

impl RepairPolicy {
    /// Resolve the policy from the values given (by flags or the file; the
    /// caller lets flags win before calling). `orphan_calls` defaults to
    /// `placeholder`, or to `report` when synthesizing is switched off;
    /// asking for placeholders while forbidding invented content is a
    /// contradiction, not something to guess about.
    pub fn resolve(
        orphan_calls: Option<OrphanCalls>,
        synthesize: Option<bool>,
    ) -> Result<RepairPolicy, String> {
        let synthesize = synthesize.unwrap_or(true);
        let orphan_calls = match orphan_calls {
            Some(OrphanCalls::Placeholder) if !synthesize => {
                return Err(
                    "`orphan-calls = \"placeholder\"` invents results, which `synthesize = false` forbids (use \"drop\" or \"report\")"
                        .to_string(),
                );
            }
            Some(o) => o,
            None if synthesize => OrphanCalls::Placeholder,
            None => OrphanCalls::Report,
        };
        Ok(RepairPolicy {
            orphan_calls,
            synthesize,
        })
    }
}
