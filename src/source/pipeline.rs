//! A source fed by threads, for databases: a reader steps the store and
//! hands each conversation's raw rows to parser workers, which build the
//! conversations while the caller runs the rules, so reading, parsing and
//! checking overlap. Parsing is the heaviest stage, so it has several
//! workers; conversation `i` goes to worker `i % n` and is taken back from
//! it in turn, which keeps the store's order without a reorder buffer. The
//! channels are bounded: a few conversations are in flight, never the
//! store.

use std::cell::Cell;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

use super::Source;
use crate::error::{Error, Result};
use crate::model::{Conversation, SourceInfo};

/// Conversations waiting in each channel.
const DEPTH: usize = 2;

/// Parser workers: at least two, so that on a two-core machine the parsers
/// can use the reader's core whenever it waits; at most eight.
fn workers() -> usize {
    thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8))
}

pub struct Pipeline {
    info: Arc<SourceInfo>,
    outputs: Vec<Receiver<Result<Conversation>>>,
    next: usize,
}

impl Source for Pipeline {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        let got = self.outputs[self.next].recv().ok();
        self.next = (self.next + 1) % self.outputs.len();
        got
    }
}

/// The reader's end: conversation `i` goes to worker `i % n`.
pub struct Dealer<R> {
    workers: Vec<SyncSender<Result<R>>>,
    sent: Cell<usize>,
}

impl<R> Dealer<R> {
    /// A dealer with one channel, for tests of a reader.
    pub fn single(tx: SyncSender<Result<R>>) -> Dealer<R> {
        Dealer {
            workers: vec![tx],
            sent: Cell::new(0),
        }
    }

    /// Hand on one raw conversation, or the error that ends the stream;
    /// `Err` when nobody reads any more.
    pub fn send(&self, item: Result<R>) -> std::result::Result<(), Closed> {
        let i = self.sent.get();
        self.sent.set(i + 1);
        self.workers[i % self.workers.len()]
            .send(item)
            .map_err(|_| Closed)
    }
}

/// The consumer has gone.
#[derive(Debug)]
pub struct Closed;

/// Start `read` (which sends raw conversations, and an error as its last
/// item) on a thread named `chatfsck-<name>-read`, and `build` on workers
/// named `chatfsck-<name>-parse`.
pub fn start<R: Send + 'static>(
    path: &Path,
    info: Arc<SourceInfo>,
    name: &str,
    read: impl FnOnce(Dealer<R>) + Send + 'static,
    build: impl Fn(R) -> Conversation + Send + Sync + 'static,
) -> Result<Pipeline> {
    let spawn = |role: &str, f: Box<dyn FnOnce() + Send>| {
        thread::Builder::new()
            .name(format!("chatfsck-{name}-{role}"))
            .spawn(f)
            .map(|_| ())
            .map_err(|e| Error::input(path, format!("cannot start the {role} thread: {e}")))
    };
    let build = Arc::new(build);
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for _ in 0..workers() {
        let (raw_tx, raw_rx) = sync_channel::<Result<R>>(DEPTH);
        let (tx, rx) = sync_channel::<Result<Conversation>>(DEPTH);
        let build = build.clone();
        spawn(
            "parse",
            Box::new(move || {
                for raw in raw_rx {
                    if tx.send(raw.map(&*build)).is_err() {
                        return;
                    }
                }
            }),
        )?;
        inputs.push(raw_tx);
        outputs.push(rx);
    }
    let dealer = Dealer {
        workers: inputs,
        sent: Cell::new(0),
    };
    spawn("read", Box::new(move || read(dealer)))?;
    Ok(Pipeline {
        info,
        outputs,
        next: 0,
    })
}
