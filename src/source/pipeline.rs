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

/// Worker threads (parsers, or sharded readers): two, so that on a
/// two-core machine they can use the core the other stage leaves idle.
/// More would spread the work further on bigger machines, but each costs
/// some 20-30 MiB of allocator and page-cache memory, and the store
/// benchmark's bound is 100 MiB (bench/README.md).
fn workers() -> usize {
    2
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
/// while the row is warm in its cache, and scale with the cores.
///
/// Memory is bounded by a budget of bytes built ahead of the consumer
/// ([`AHEAD`]), shared by the workers: a worker on a later shard waits for
/// it, while the worker on the shard being consumed never waits (so the
/// consumer always gets its next conversation), nor does a worker when
/// nothing is ahead (so one conversation larger than the budget passes).
pub struct Sharded {
    info: Arc<SourceInfo>,
    shards: Vec<Receiver<Item>>,
    current: usize,
    budget: Arc<Budget>,
    /// Per worker: conversations handed back, to be freed by the thread
    /// that allocated them (freeing across threads costs the allocator
    /// dearly, in time and in memory held).
    graves: Vec<std::sync::mpsc::Sender<Conversation>>,
    /// The worker that built each conversation handed out, by id.
    origin: Vec<(String, usize)>,
}

/// A conversation (or error), its weight in bytes, and the worker that
/// built it.
type Item = (Result<Conversation>, usize, usize);

/// Bytes of conversations built and not yet taken by the consumer.
const AHEAD: usize = 8 << 20;

/// Conversations waiting in one shard's channel.
const SHARD_DEPTH: usize = 16;

#[derive(Default)]
struct Budget {
    /// (bytes ahead, shard being consumed)
    state: std::sync::Mutex<(usize, usize)>,
    changed: std::sync::Condvar,
}

impl Budget {
    fn take(&self, shard: usize, bytes: usize) {
        let Ok(mut g) = self.state.lock() else { return };
        while g.0 > 0 && g.0 + bytes > AHEAD && g.1 != shard {
            g = match self.changed.wait(g) {
                Ok(g) => g,
                Err(_) => return,
            };
        }
        g.0 += bytes;
    }

    fn give(&self, consumed: usize, bytes: usize) {
        if let Ok(mut g) = self.state.lock() {
            g.0 = g.0.saturating_sub(bytes);
            g.1 = consumed;
        }
        self.changed.notify_all();
    }
}

impl Source for Sharded {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        while let Some(rx) = self.shards.get(self.current) {
            match rx.recv() {
                Ok((item, bytes, worker)) => {
                    self.budget.give(self.current, bytes);
                    if let Ok(conv) = &item {
                        // A caller that never hands back leaves a short list.
                        if self.origin.len() >= 64 {
                            self.origin.remove(0);
                        }
                        self.origin.push((conv.id.clone(), worker));
                    }
                    return Some(item);
                }
                Err(_) => {
                    self.current += 1;
                    self.budget.give(self.current, 0);
                }
            }
        }
        None
    }

    fn done(&mut self, conv: Conversation) {
        let at = self.origin.iter().position(|(id, _)| *id == conv.id);
        match at.map(|i| self.origin.swap_remove(i)) {
            Some((_, worker)) => {
                let _ = self.graves[worker].send(conv);
            }
            None => drop(conv),
        }
    }
}

/// Where a worker sends the conversations of the shard it reads.
pub struct ShardOut {
    tx: SyncSender<Item>,
    shard: usize,
    budget: Arc<Budget>,
    worker: usize,
    grave: Arc<std::sync::Mutex<Receiver<Conversation>>>,
}

impl ShardOut {
    /// Send a conversation (weighing `bytes`) or the error that ends the
    /// shard, once the budget allows; `Err` when the consumer has gone.
    pub fn send(
        &self,
        item: Result<Conversation>,
        bytes: usize,
    ) -> std::result::Result<(), Closed> {
        // Free what the consumer handed back first.
        if let Ok(grave) = self.grave.lock() {
            while let Ok(conv) = grave.try_recv() {
                drop(conv);
            }
        }
        self.budget.take(self.shard, bytes);
        self.tx.send((item, bytes, self.worker)).map_err(|_| Closed)
    }
}

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
    work: impl Fn(&mut W, usize, &ShardOut) -> std::result::Result<(), Closed> + Send + Sync + 'static,
) -> Result<Sharded> {
    type Slot = std::sync::Mutex<Option<SyncSender<Item>>>;
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..shards)
        .map(|_| sync_channel::<Item>(SHARD_DEPTH))
        .unzip();
    // A worker takes a shard's sender and drops it when done, which tells
    // the consumer the shard is complete.
    let senders: Arc<Vec<Slot>> = Arc::new(
        senders
            .into_iter()
            .map(|s| std::sync::Mutex::new(Some(s)))
            .collect(),
    );
    let budget = Arc::new(Budget::default());
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let work = Arc::new(work);
    let mut graves = Vec::new();
    for (worker, mut state) in workers.into_iter().enumerate() {
        let (senders, next, work, budget) =
            (senders.clone(), next.clone(), work.clone(), budget.clone());
        let (bury, grave) = std::sync::mpsc::channel::<Conversation>();
        graves.push(bury);
        let grave = Arc::new(std::sync::Mutex::new(grave));
        thread::Builder::new()
            .name(format!("chatfsck-{name}-read"))
            .spawn(move || {
                loop {
                    let shard = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(slot) = senders.get(shard) else {
                        return;
                    };
                    let taken = slot.lock().map(|mut s| s.take());
                    let Ok(Some(tx)) = taken else {
                        return;
                    };
                    let out = ShardOut {
                        tx,
                        shard,
                        budget: budget.clone(),
                        worker,
                        grave: grave.clone(),
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
        budget,
        graves,
        origin: Vec::new(),
    })
}

/// Reader threads for a sharded source.
pub fn shard_workers() -> usize {
    workers()
}
