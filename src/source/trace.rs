//! A trace as a source: the recorded requests of a trace format (a
//! [`Backend`], in `format/trace/`) as a stream of conversations, and by
//! conversation for cross-checks against a store.

use std::sync::Arc;

use super::Source;
use crate::error::Result;
use crate::model::{Conversation, CorruptRecord, Event, SourceInfo};

/// One conversation of a trace, opened: how many requests it recorded
/// (read them with [`TraceSource::request`]) and its other reports.
#[derive(Debug)]
pub struct Group {
    pub id: String,
    pub requests: usize,
    pub events: Vec<Event>,
}

/// A trace format.
pub trait Backend: Send {
    fn info(&self) -> Arc<SourceInfo>;
    /// Conversation ids, in the order the trace first records them.
    fn groups(&self) -> &[String];
    /// Open one conversation: index its requests, read its events.
    fn group(&mut self, id: &str) -> Result<Group>;
    /// Read the `index`-th request of the conversation last opened. One
    /// request at a time: memory holds one prompt, not the conversation's
    /// every prompt.
    fn request(&mut self, index: usize) -> Result<Conversation>;
    /// Records that belong to no conversation because they do not parse.
    fn stray(&mut self) -> Vec<CorruptRecord> {
        Vec::new()
    }
}

/// A trace as a stream of recorded requests, with access by conversation
/// for cross-checks. Streaming (`Source`) and access by conversation both
/// move the same cursor: use one or the other.
pub struct TraceSource {
    backend: Box<dyn Backend>,
    next_group: usize,
    /// The requests of the open conversation: (next, count).
    cursor: Option<(usize, usize)>,
    stray_done: bool,
    /// What the end of the read must confirm, for a SQLite trace.
    check: Option<Arc<super::sqlite::Check>>,
}

impl TraceSource {
    pub fn new(backend: Box<dyn Backend>) -> Self {
        TraceSource {
            backend,
            next_group: 0,
            cursor: None,
            stray_done: false,
            check: None,
        }
    }

    /// What a read to the end would have confirmed, for a trace read on
    /// demand (a SQLite trace's [`super::sqlite::Check`]).
    pub fn verify(&self) -> Result<()> {
        match &self.check {
            Some(check) => check.verify(),
            None => Ok(()),
        }
    }

    /// Verify `check` when the trace has been read to its end, or failed
    /// ([`super::sqlite::Guarded`]).
    pub fn guarded(mut self, check: Arc<super::sqlite::Check>) -> Self {
        self.check = Some(check);
        self
    }

    pub fn groups(&self) -> Vec<String> {
        self.backend.groups().to_vec()
    }

    pub fn has_group(&self, id: &str) -> bool {
        self.backend.groups().iter().any(|g| g == id)
    }

    /// Open a conversation; then read its requests with [`Self::request`].
    pub fn group(&mut self, id: &str) -> Result<Group> {
        self.cursor = None;
        self.backend.group(id)
    }

    /// The `index`-th request of the conversation last opened.
    pub fn request(&mut self, index: usize) -> Result<Conversation> {
        self.backend.request(index)
    }
}

impl Source for TraceSource {
    fn info(&self) -> Arc<SourceInfo> {
        self.backend.info()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        match self.next_unchecked() {
            Some(Err(e)) => Some(Err(match &self.check {
                Some(check) => check.explain(e),
                None => e,
            })),
            Some(ok) => Some(ok),
            None => match self.check.as_ref()?.verify() {
                Ok(()) => None,
                Err(e) => {
                    self.check = None;
                    Some(Err(e))
                }
            },
        }
    }

    fn is_trace(&self) -> bool {
        true
    }
}

impl TraceSource {
    fn next_unchecked(&mut self) -> Option<Result<Conversation>> {
        loop {
            if let Some((next, count)) = self.cursor
                && next < count
            {
                self.cursor = Some((next + 1, count));
                return Some(self.backend.request(next));
            }
            if !self.stray_done {
                self.stray_done = true;
                let stray = self.backend.stray();
                if !stray.is_empty() {
                    let info = self.backend.info();
                    let mut c = Conversation::new(info.path.display().to_string(), info);
                    c.corrupt = stray;
                    return Some(Ok(c));
                }
            }
            let id = self.backend.groups().get(self.next_group)?.clone();
            self.next_group += 1;
            match self.backend.group(&id) {
                Ok(g) => self.cursor = Some((0, g.requests)),
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
