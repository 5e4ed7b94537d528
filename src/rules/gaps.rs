//! Stored message indices of a message table: where they skip values and
//! where two rows claim the same one.
//!
//! Shared by `index-gap`, `duplicate-index` and `orphan-tool-call`, so that
//! one cause gets one diagnosis: a tool call left dangling because the
//! message after it (its results) was never stored is an index gap, and the
//! gap's finding names the call; `orphan-tool-call` does not report it again
//! while `index-gap` runs.

use crate::model::Conversation;
use crate::model::pairing::Pairing;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    /// Position of the message before the gap; `None` when the history
    /// starts after its first index.
    pub before: Option<usize>,
    /// Position of the message after the gap.
    pub after: usize,
    /// The missing indices, first and last (inclusive).
    pub first: i64,
    pub last: i64,
    /// Tool calls (part positions in `before`) that no result answers.
    pub dangling: Vec<usize>,
}

impl Gap {
    pub fn count(&self) -> i64 {
        self.last - self.first + 1
    }

    /// The missing message is the tool-result message of `before`.
    pub fn is_tool_results(&self) -> bool {
        !self.dangling.is_empty()
    }
}

#[derive(Debug, Default)]
pub struct Indices {
    pub gaps: Vec<Gap>,
    /// Runs of messages (positions) that share one index.
    pub duplicates: Vec<Vec<usize>>,
}

impl Indices {
    pub fn analyse(conv: &Conversation, pairing: &Pairing) -> Indices {
        let mut out = Indices::default();
        let Some(table) = &conv.table else {
            return out;
        };
        let mut prev: Option<(usize, i64)> = None;
        for (i, m) in conv.messages.iter().enumerate() {
            let Some(idx) = m.stored_index else { continue };
            match prev {
                None => {
                    if let Some(base) = table.first_index
                        && idx > base
                    {
                        out.gaps.push(Gap {
                            before: None,
                            after: i,
                            first: base,
                            last: idx - 1,
                            dangling: Vec::new(),
                        });
                    }
                }
                Some((pi, p)) if idx == p => match out.duplicates.last_mut() {
                    Some(run) if run.last() == Some(&pi) => run.push(i),
                    _ => out.duplicates.push(vec![pi, i]),
                },
                Some((pi, p)) if idx > p + 1 => {
                    let dangling = pairing
                        .unanswered
                        .iter()
                        .filter(|(mi, _)| *mi == pi)
                        .map(|(_, part)| *part)
                        .collect();
                    out.gaps.push(Gap {
                        before: Some(pi),
                        after: i,
                        first: p + 1,
                        last: idx - 1,
                        dangling,
                    });
                }
                _ => {}
            }
            prev = Some((i, idx));
        }
        out
    }

    /// Whether a gap explains why the call at (message, part) has no result.
    pub fn explains(&self, message: usize, part: usize) -> bool {
        self.gaps
            .iter()
            .any(|g| g.before == Some(message) && g.dangling.contains(&part))
    }
}
