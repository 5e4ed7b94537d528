//! A source fed by two threads, for databases: a reader steps the store and
//! sends each conversation's raw rows, a parser builds the conversation, and
//! the caller runs the rules, so reading, parsing and checking overlap. The
//! channels are bounded: a few conversations are in flight, never the store.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

use super::Source;
use crate::error::{Error, Result};
use crate::model::{Conversation, SourceInfo};

/// Conversations in flight between two threads.
const DEPTH: usize = 4;

pub struct Pipeline {
    info: Arc<SourceInfo>,
    rx: Receiver<Result<Conversation>>,
}

impl Source for Pipeline {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        self.rx.recv().ok()
    }
}

/// Start `read` (which sends raw conversations, and an error as its last
/// item) and `build` on threads named `chatfsck-<name>-read` and `-parse`.
pub fn start<R: Send + 'static>(
    path: &Path,
    info: Arc<SourceInfo>,
    name: &str,
    read: impl FnOnce(SyncSender<Result<R>>) + Send + 'static,
    build: impl Fn(R) -> Conversation + Send + 'static,
) -> Result<Pipeline> {
    let (raw_tx, raw_rx) = sync_channel::<Result<R>>(DEPTH);
    let (tx, rx) = sync_channel::<Result<Conversation>>(DEPTH);
    let spawn = |role: &str, f: Box<dyn FnOnce() + Send>| {
        thread::Builder::new()
            .name(format!("chatfsck-{name}-{role}"))
            .spawn(f)
            .map(|_| ())
            .map_err(|e| Error::input(path, format!("cannot start the {role} thread: {e}")))
    };
    spawn("read", Box::new(move || read(raw_tx)))?;
    spawn(
        "parse",
        Box::new(move || {
            for raw in raw_rx {
                if tx.send(raw.map(&build)).is_err() {
                    return;
                }
            }
        }),
    )?;
    Ok(Pipeline { info, rx })
}
