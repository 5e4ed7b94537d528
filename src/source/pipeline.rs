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

/// A source read by several threads at once, for a store whose
/// conversations fall into key ranges (shards) that can be read
/// independently. Each worker takes the next shard from a shared counter,
/// reads and builds its conversations, and sends them to that shard's
/// channel; the consumer drains shard 0, then shard 1, and so on, so the
/// store's order is kept. Reading and parsing happen on the same thread,
/// while the row is warm in its cache, and scale with the cores. The
/// channels are bounded: a worker ahead of the consumer waits.
pub struct Sharded {
    info: Arc<SourceInfo>,
    shards: Vec<Receiver<Result<Conversation>>>,
    current: usize,
}

impl Source for Sharded {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        while let Some(rx) = self.shards.get(self.current) {
            match rx.recv() {
                Ok(item) => return Some(item),
                Err(_) => self.current += 1,
            }
        }
        None
    }
}

/// Conversations a worker may build ahead of the consumer, per shard.
const SHARD_DEPTH: usize = 32;

/// Start one thread per worker state in `workers`, named
/// `chatfsck-<name>-read`. `work(state, shard, out)` reads one shard and
/// sends its conversations (an error ends the shard); it returns `Err`
/// when the consumer has gone.
pub fn start_sharded<W: Send + 'static>(
    path: &Path,
    info: Arc<SourceInfo>,
    name: &str,
    shards: usize,
    workers: Vec<W>,
    work: impl Fn(&mut W, usize, &SyncSender<Result<Conversation>>) -> std::result::Result<(), Closed>
    + Send
    + Sync
    + 'static,
) -> Result<Sharded> {
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..shards)
        .map(|_| sync_channel::<Result<Conversation>>(SHARD_DEPTH))
        .unzip();
    // A worker takes a shard's sender and drops it when done, which tells
    // the consumer the shard is complete.
    let senders: Arc<Vec<std::sync::Mutex<Option<SyncSender<Result<Conversation>>>>>> = Arc::new(
        senders
            .into_iter()
            .map(|s| std::sync::Mutex::new(Some(s)))
            .collect(),
    );
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let work = Arc::new(work);
    for mut state in workers {
        let (senders, next, work) = (senders.clone(), next.clone(), work.clone());
        thread::Builder::new()
            .name(format!("chatfsck-{name}-read"))
            .spawn(move || {
                loop {
                    let shard = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(slot) = senders.get(shard) else {
                        return;
                    };
                    let taken = slot.lock().map(|mut s| s.take());
                    let Ok(Some(out)) = taken else {
                        return;
                    };
                    if work(&mut state, shard, &out).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| Error::input(path, format!("cannot start a reader thread: {e}")))?;
    }
    Ok(Sharded {
        info,
        shards: receivers,
        current: 0,
    })
}

/// Worker threads for a sharded source: as many as the cores, at least
/// two, at most eight.
pub fn shard_workers() -> usize {
    workers()
}
