//! A source fed by threads, for databases: a reader steps the store and
//! hands each conversation's raw rows to parser workers, which build the
//! conversations (and run the work the caller offers, lint's checks) while
//! the caller takes the results, so reading, parsing and checking overlap. Parsing is the heaviest stage, so it has several
//! workers; conversation `i` goes to worker `i % n` and is taken back from
//! it in turn, which keeps the store's order without a reorder buffer. The
//! channels are bounded: a few conversations are in flight, never the
//! store.

use std::cell::Cell;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

use super::{Prepare, Prepared, Source};
use crate::error::{Error, Result};
use crate::model::{Conversation, SourceInfo};

/// Conversations waiting in each channel.
const DEPTH: usize = 2;

/// Worker threads (parsers, or sharded readers): two, so that on a
/// two-core machine they can use the core the other stage leaves idle.
/// More would spread the work further on bigger machines, but each costs
/// some 20-30 MiB of allocator and page-cache memory, and the store
/// benchmark's bound is 100 MiB (bench/README.md).
pub fn workers() -> usize {
    2
}

/// The work offered by the consumer, once it is offered; shared with the
/// threads that build conversations.
type Hook = Arc<std::sync::OnceLock<Prepare>>;

/// Run the offered work, if any, on a conversation just built.
fn prepare(hook: &Hook, item: &Result<Conversation>) -> Option<Prepared> {
    match (hook.get(), item) {
        (Some(work), Ok(conv)) => Some(work(conv)),
        _ => None,
    }
}

/// A built conversation (or error) and what the offered work made of it.
type Built = (Result<Conversation>, Option<Prepared>);

pub struct Pipeline {
    info: Arc<SourceInfo>,
    outputs: Vec<Receiver<Built>>,
    next: usize,
    hook: Hook,
    prepared: Option<Prepared>,
}

impl Source for Pipeline {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        let got = self.outputs[self.next].recv().ok();
        self.next = (self.next + 1) % self.outputs.len();
        let (item, prepared) = got?;
        self.prepared = prepared;
        Some(item)
    }

    fn prepare_with(&mut self, work: Prepare) {
        let _ = self.hook.set(work);
    }

    fn prepared(&mut self) -> Option<Prepared> {
        self.prepared.take()
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
    let hook = Hook::default();
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for _ in 0..workers() {
        let (raw_tx, raw_rx) = sync_channel::<Result<R>>(DEPTH);
        let (tx, rx) = sync_channel::<Built>(DEPTH);
        let (build, hook) = (build.clone(), hook.clone());
        spawn(
            "parse",
            Box::new(move || {
                for raw in raw_rx {
                    let item = raw.map(&*build);
                    let prepared = prepare(&hook, &item);
                    if tx.send((item, prepared)).is_err() {
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
        hook,
        prepared: None,
    })
}

/// A source read by several threads at once, for a store whose
/// conversations fall into key ranges (shards) that can be read
/// independently. Each worker takes the next shard from a shared counter,
/// reads and builds its conversations, and sends them to that shard's
/// channel; the consumer drains shard 0, then shard 1, and so on, so the
/// store's order is kept. Reading, parsing and the offered work (lint's
/// checks) happen on the same thread, while the rows and the conversation
/// are warm in its cache, and scale with the cores.
///
/// Memory is bounded by a budget of bytes built ahead of the consumer
/// ([`AHEAD`]), shared by the workers: once it is spent a worker waits,
/// except the worker on the shard being consumed when the consumer has
/// nothing of that shard left to take (so the consumer always gets its
/// next conversation), and any worker when nothing is ahead (so one
/// conversation larger than the budget passes).
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
    hook: Hook,
    prepared: Option<Prepared>,
}

/// A conversation (or error), its weight in bytes, the worker that built
/// it, and what the offered work made of it.
type Item = (Result<Conversation>, usize, usize, Option<Prepared>);

/// Bytes of conversations built and not yet taken by the consumer.
const AHEAD: usize = 8 << 20;

/// Conversations waiting in one shard's channel.
pub(crate) const SHARD_DEPTH: usize = 64;

struct Budget {
    state: std::sync::Mutex<Ahead>,
    changed: std::sync::Condvar,
}

#[derive(Default)]
struct Ahead {
    /// Bytes built and not yet taken by the consumer.
    bytes: usize,
    /// The shard being consumed, and how many of its conversations the
    /// consumer has taken.
    current: usize,
    taken: usize,
    /// Conversations sent, by shard.
    sent: Vec<usize>,
}

impl Budget {
    /// Wait until a conversation of `bytes` from `shard` may be sent: while
    /// the budget is spent, only the current shard's worker goes on, and
    /// only when the consumer has nothing of its shard left to take.
    fn take(&self, shard: usize, bytes: usize) {
        let Ok(mut g) = self.state.lock() else { return };
        while g.bytes > 0
            && g.bytes + bytes > AHEAD
            && !(g.current == shard && g.sent[shard] == g.taken)
        {
            g = match self.changed.wait(g) {
                Ok(g) => g,
                Err(_) => return,
            };
        }
        g.bytes += bytes;
        g.sent[shard] += 1;
    }

    /// The consumer took a conversation of `bytes` from the current shard.
    fn give(&self, bytes: usize) {
        if let Ok(mut g) = self.state.lock() {
            g.bytes = g.bytes.saturating_sub(bytes);
            g.taken += 1;
        }
        self.changed.notify_all();
    }

    /// The consumer moved on to `shard`.
    fn advance(&self, shard: usize) {
        if let Ok(mut g) = self.state.lock() {
            g.current = shard;
            g.taken = 0;
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
                Ok((item, bytes, worker, prepared)) => {
                    self.budget.give(bytes);
                    self.prepared = prepared;
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
                    self.budget.advance(self.current);
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

    fn prepare_with(&mut self, work: Prepare) {
        let _ = self.hook.set(work);
    }

    fn prepared(&mut self) -> Option<Prepared> {
        self.prepared.take()
    }
}

/// Where a worker sends the conversations of the shard it reads.
pub struct ShardOut {
    tx: SyncSender<Item>,
    shard: usize,
    budget: Arc<Budget>,
    worker: usize,
    grave: Arc<std::sync::Mutex<Receiver<Conversation>>>,
    hook: Hook,
}

impl ShardOut {
    /// Send a conversation (weighing `bytes`) or the error that ends the
    /// shard, once the budget allows, after running the offered work on
    /// it; `Err` when the consumer has gone.
    pub fn send(
        &self,
        item: Result<Conversation>,
        bytes: usize,
    ) -> std::result::Result<(), Closed> {
        let prepared = prepare(&self.hook, &item);
        self.budget.take(self.shard, bytes);
        self.tx
            .send((item, bytes, self.worker, prepared))
            .map_err(|_| Closed)
    }
}

impl ShardOut {
    /// The conversations the consumer has handed back to this worker, to
    /// be freed (or recycled) here.
    pub fn returned(&self) -> Vec<Conversation> {
        match self.grave.lock() {
            Ok(grave) => grave.try_iter().collect(),
            Err(_) => Vec::new(),
        }
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
    let budget = Arc::new(Budget {
        state: std::sync::Mutex::new(Ahead {
            sent: vec![0; shards],
            ..Ahead::default()
        }),
        changed: std::sync::Condvar::new(),
    });
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let work = Arc::new(work);
    let mut graves = Vec::new();
    let hook = Hook::default();
    for (worker, mut state) in workers.into_iter().enumerate() {
        let (senders, next, work, budget, hook) = (
            senders.clone(),
            next.clone(),
            work.clone(),
            budget.clone(),
            hook.clone(),
        );
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
                        hook: hook.clone(),
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
        hook,
        prepared: None,
    })
}
