//! How tool calls and tool results pair up in a conversation.
//!
//! Shared by the tool-protocol rules so that each diagnoses one cause: a
//! result that exists but sits after an interleaved message is a *late*
//! pair (`interleaved-message`), not an orphan call plus an orphan result.

use foldhash::HashMap;

use crate::model::Message;

/// A part of a message: (message position, part position).
pub type PartRef = (usize, usize);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub call: PartRef,
    pub result: PartRef,
    /// The result arrives after a message that does not carry results: some
    /// other message sits between the call and its result.
    pub late: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stray {
    pub result: PartRef,
    /// The earlier call with this id that already had its result, if any.
    pub already_answered: Option<PartRef>,
}

#[derive(Debug, Default)]
pub struct Pairing {
    pub pairs: Vec<Pair>,
    /// Calls that no later result answers.
    pub unanswered: Vec<PartRef>,
    /// Results that answer no pending call.
    pub strays: Vec<Stray>,
    /// For each message with tool calls: the last position of the run of
    /// result-carrying messages that directly follows it (the message itself
    /// when none follows).
    pub window_end: HashMap<usize, usize>,
    result_of: HashMap<PartRef, PartRef>,
}

impl Pairing {
    pub fn analyse(messages: &[Message]) -> Pairing {
        let mut p = Pairing::default();
        // Unanswered calls by id; the most recent one answers first, so an id
        // reused in a later turn pairs with its own turn.
        let mut open: HashMap<&str, Vec<PartRef>> = HashMap::default();
        let mut answered: HashMap<&str, PartRef> = HashMap::default();
        for (i, m) in messages.iter().enumerate() {
            if m.has_tool_calls() {
                let mut j = i;
                while j + 1 < messages.len() && messages[j + 1].carries_results() {
                    j += 1;
                }
                p.window_end.insert(i, j);
            }
            for (k, part) in m.parts.iter().enumerate() {
                match &part.kind {
                    crate::model::PartKind::ToolCall { id, .. } => {
                        open.entry(id.as_str()).or_default().push((i, k));
                    }
                    crate::model::PartKind::ToolResult { call_id, .. } => {
                        let call = open.get_mut(call_id.as_str()).and_then(Vec::pop);
                        match call {
                            Some(call) => {
                                let late = i > p.window_end.get(&call.0).copied().unwrap_or(call.0);
                                p.pairs.push(Pair {
                                    call,
                                    result: (i, k),
                                    late,
                                });
                                p.result_of.insert(call, (i, k));
                                answered.insert(call_id.as_str(), call);
                            }
                            None => p.strays.push(Stray {
                                result: (i, k),
                                already_answered: answered.get(call_id.as_str()).copied(),
                            }),
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut unanswered: Vec<PartRef> = open.into_values().flatten().collect();
        unanswered.sort();
        p.unanswered = unanswered;
        p
    }

    /// The result that answers a call, if any.
    pub fn result_of(&self, call: PartRef) -> Option<PartRef> {
        self.result_of.get(&call).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testutil::*;

    #[test]
    fn parallel_calls_answered_in_any_order_pair_in_window() {
        let c = conv(crate::model::Dialect::OpenAi)
            .user("hi")
            .calls(&["a", "b"])
            .result("b")
            .result("a")
            .assistant("done")
            .build();
        let p = Pairing::analyse(&c.messages);
        assert_eq!(p.pairs.len(), 2);
        assert!(p.pairs.iter().all(|x| !x.late));
        assert!(p.unanswered.is_empty() && p.strays.is_empty());
        assert_eq!(p.window_end[&1], 3);
    }

    #[test]
    fn reused_id_pairs_with_its_own_turn() {
        let c = conv(crate::model::Dialect::OpenAi)
            .user("hi")
            .calls(&["x"])
            .user("again")
            .calls(&["x"])
            .result("x")
            .build();
        let p = Pairing::analyse(&c.messages);
        assert_eq!(p.unanswered, vec![(1, 0)]);
        assert_eq!(p.pairs[0].call, (3, 0));
        assert!(!p.pairs[0].late);
    }

    #[test]
    fn second_answer_is_a_stray_that_knows_the_first() {
        let c = conv(crate::model::Dialect::OpenAi)
            .user("hi")
            .calls(&["x"])
            .result("x")
            .result("x")
            .build();
        let p = Pairing::analyse(&c.messages);
        assert_eq!(p.strays.len(), 1);
        assert_eq!(p.strays[0].result, (3, 0));
        assert_eq!(p.strays[0].already_answered, Some((1, 0)));
    }

    #[test]
    fn result_after_interleaved_message_is_late_not_orphan() {
        let c = conv(crate::model::Dialect::Anthropic)
            .user("hi")
            .calls(&["a"])
            .user("reflect")
            .assistant("reflection")
            .result("a")
            .build();
        let p = Pairing::analyse(&c.messages);
        assert_eq!(p.pairs.len(), 1);
        assert!(p.pairs[0].late);
        assert!(p.unanswered.is_empty() && p.strays.is_empty());
    }
}
