//! A source fed by threads, for databases: a reader steps the store and
//! hands each conversation's raw rows to parser workers, which build the
//! conversations (and run the work the caller offers, lint's checks) while
//! the caller takes the results, so reading, parsing and checking overlap.
//! Parsing is the heaviest stage, so it has several workers. Conversations
//! travel in batches (up to [`BATCH_BYTES`] or [`BATCH_ITEMS`]): batch `i`
//! goes to worker `i % n` and is taken back from it in turn, which keeps
//! the store's order without a reorder buffer. The channels are bounded: a
//! few batches are in flight, never the store. Batches, because a
//! conversation is often small beside the cost of waking a thread for it.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

use super::{Prepare, Prepared, Source};
use crate::error::{Error, Result};
use crate::model::{Conversation, SourceInfo};

/// Batches waiting in each channel.
const DEPTH: usize = 2;

/// What a raw conversation weighs, in bytes, for cutting batches.
pub trait Weigh {
    fn weight(&self) -> usize;
}

/// The batch a sender is filling: its items and their weight in bytes.
struct Filling<T>(std::cell::RefCell<(Vec<T>, usize)>);

impl<T> Default for Filling<T> {
    fn default() -> Self {
        Filling(Default::default())
    }
}

impl<T> Filling<T> {
    /// Add an item of `bytes`; whether the batch should go now: it is
    /// full ([`BATCH_BYTES`], [`BATCH_ITEMS`]) or `last` (an error that
    /// ends the stream goes at once, with the batch before it).
    fn add(&self, item: T, bytes: usize, last: bool) -> bool {
        let mut f = self.0.borrow_mut();
        f.0.push(item);
        f.1 += bytes;
        last || f.1 >= BATCH_BYTES || f.0.len() >= BATCH_ITEMS
    }

    /// The batch so far and its weight, leaving an empty one.
    fn take(&self) -> (Vec<T>, usize) {
        std::mem::take(&mut *self.0.borrow_mut())
    }
}

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

/// What both threaded sources keep of their threads: the work offered to
/// them, its result for the conversation last handed out, and the threads
/// themselves.
#[derive(Default)]
struct Crew {
    hook: Hook,
    prepared: Option<Prepared>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Crew {
    fn offer(&mut self, work: Prepare) {
        let _ = self.hook.set(work);
    }

    /// Wait for every thread. A source stopped early (an error, or a
    /// caller that has seen enough) must first close what its threads send
    /// to, so that they end at their next send; only then have they closed
    /// their connections and dropped their share of a WAL database's
    /// private copy, which the last holder deletes. A thread still running
    /// when the process exits would leave that copy of the evidence in the
    /// temporary directory.
    fn join(&mut self) {
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

pub struct Pipeline {
    info: Arc<SourceInfo>,
    outputs: Vec<Receiver<Vec<Built>>>,
    next: usize,
    /// The batch being handed out.
    batch: std::vec::IntoIter<Built>,
    crew: Crew,
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.outputs.clear();
        self.crew.join();
    }
}

impl Source for Pipeline {
    fn info(&self) -> Arc<SourceInfo> {
        self.info.clone()
    }

    fn next_conversation(&mut self) -> Option<Result<Conversation>> {
        loop {
            if let Some((item, prepared)) = self.batch.next() {
                self.crew.prepared = prepared;
                return Some(item);
            }
            let got = self.outputs[self.next].recv().ok()?;
            self.next = (self.next + 1) % self.outputs.len();
            self.batch = got.into_iter();
        }
    }

    fn prepare_with(&mut self, work: Prepare) {
        self.crew.offer(work);
    }

    fn prepared(&mut self) -> Option<Prepared> {
        self.crew.prepared.take()
    }
}

/// The reader's end: raw conversations gather into a batch, and batch `i`
/// goes to worker `i % n`. What is left in the batch goes when the dealer
/// is dropped (the reader's end, or its crash, before the error).
pub struct Dealer<R: Weigh> {
    workers: Vec<SyncSender<Vec<Result<R>>>>,
    /// Batches sent, shared with the copy [`start`] keeps to report a
    /// reader's crash in its place in the stream.
    sent: Arc<AtomicUsize>,
    pending: Filling<Result<R>>,
}

impl<R: Weigh> Dealer<R> {
    /// A dealer with one channel, for tests of a reader.
    pub fn single(tx: SyncSender<Vec<Result<R>>>) -> Dealer<R> {
        Dealer {
            workers: vec![tx],
            sent: Arc::default(),
            pending: Default::default(),
        }
    }

    /// Hand on one raw conversation, or the error that ends the stream
    /// (which goes at once, with the batch before it); `Err` when nobody
    /// reads any more.
    pub fn send(&self, item: Result<R>) -> std::result::Result<(), Closed> {
        let (bytes, last) = (item.as_ref().map_or(0, Weigh::weight), item.is_err());
        if self.pending.add(item, bytes, last) {
            self.flush()
        } else {
            Ok(())
        }
    }

    fn flush(&self) -> std::result::Result<(), Closed> {
        let (batch, _) = self.pending.take();
        if batch.is_empty() {
            return Ok(());
        }
        let i = self.sent.fetch_add(1, Ordering::Relaxed);
        self.workers[i % self.workers.len()]
            .send(batch)
            .map_err(|_| Closed)
    }

    fn copy(&self) -> Dealer<R> {
        Dealer {
            workers: self.workers.clone(),
            sent: self.sent.clone(),
            pending: Default::default(),
        }
    }
}

impl<R: Weigh> Drop for Dealer<R> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Run `f`, catching a panic as the value it unwound with. A thread that
/// panics ends its input with [`Error::internal`] in the place of the
/// conversations it would have given: a stream that ended early would pass
/// for a store with fewer conversations.
fn contained<T>(f: impl FnOnce() -> T) -> thread::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
}

/// The consumer has gone.
#[derive(Debug)]
pub struct Closed;

/// Start `read` (which sends raw conversations, and an error as its last
/// item) on a thread named `chatfsck-<name>-read`, and `build` on workers
/// named `chatfsck-<name>-parse`.
pub fn start<R: Weigh + Send + 'static>(
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
            .map_err(|e| Error::input(path, format!("cannot start the {role} thread: {e}")))
    };
    let mut crew = Crew::default();
    let build = Arc::new(build);
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for _ in 0..workers() {
        let (raw_tx, raw_rx) = sync_channel::<Vec<Result<R>>>(DEPTH);
        let (tx, rx) = sync_channel::<Vec<Built>>(DEPTH);
        let (build, hook, path) = (build.clone(), crew.hook.clone(), path.to_path_buf());
        crew.threads.push(spawn(
            "parse",
            Box::new(move || {
                for raws in raw_rx {
                    let mut out = Vec::with_capacity(raws.len());
                    for raw in raws {
                        let built = contained(|| {
                            let item = raw.map(&*build);
                            let prepared = prepare(&hook, &item);
                            (item, prepared)
                        });
                        match built {
                            Ok(built) => out.push(built),
                            Err(panic) => {
                                // What was built before it, then the error.
                                let error = Error::internal(&path, "a parser thread", &*panic);
                                out.push((Err(error), None));
                                let _ = tx.send(out);
                                return;
                            }
                        }
                    }
                    if tx.send(out).is_err() {
                        return;
                    }
                }
            }),
        )?);
        inputs.push(raw_tx);
        outputs.push(rx);
    }
    let dealer = Dealer {
        workers: inputs,
        sent: Arc::default(),
        pending: Default::default(),
    };
    let path_buf = path.to_path_buf();
    crew.threads.push(spawn(
        "read",
        Box::new(move || {
            let backup = dealer.copy();
            if let Err(panic) = contained(move || read(dealer)) {
                let _ = backup.send(Err(Error::internal(&path_buf, "a reader thread", &*panic)));
            }
        }),
    )?);
    Ok(Pipeline {
        info,
        outputs,
        next: 0,
        batch: Vec::new().into_iter(),
        crew,
    })
}

/// A source read by several threads at once, for a store whose
/// conversations fall into key ranges (shards) that can be read
/// independently. Each worker takes the next shard from a shared counter,
/// reads and builds its conversations, and sends them to that shard's
/// channel in batches ([`BATCH_BYTES`], [`BATCH_ITEMS`]); the consumer
/// drains shard 0, then shard 1, and so on, so the store's order is kept.
/// Batches, not single conversations, because the consumer's work per
/// conversation is small: handed one at a time, a store of many short
/// conversations spent a quarter of its run in the kernel, waking the
/// consumer for each. Reading, parsing and the offered work (lint's
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
    shards: Vec<Receiver<Batch>>,
    current: usize,
    budget: Arc<Budget>,
    /// The batch being handed out, the worker that built it, and its
    /// weight, given back to the budget once all of it has been taken.
    batch: std::vec::IntoIter<Item>,
    batch_worker: usize,
    held: Option<usize>,
    /// Per worker: conversations handed back, to be freed by the thread
    /// that allocated them (freeing across threads costs the allocator
    /// dearly, in time and in memory held).
    graves: Vec<std::sync::mpsc::Sender<Conversation>>,
    /// The worker that built each conversation handed out, by id.
    origin: Vec<(String, usize)>,
    crew: Crew,
}

/// The workers are woken if the budget holds them, then waited for
/// ([`Crew::join`]).
impl Drop for Sharded {
    fn drop(&mut self) {
        self.shards.clear();
        self.graves.clear();
        self.budget.close();
        self.crew.join();
    }
}

/// A conversation (or error) and what the offered work made of it.
type Item = (Result<Conversation>, Option<Prepared>);

/// Conversations built in a row by one worker, from one shard: the items,
/// their weight in bytes, and the worker.
type Batch = (Vec<Item>, usize, usize);

/// Bytes of conversations built and not yet taken by the consumer.
const AHEAD: usize = 8 << 20;

/// A worker sends what it has built once it weighs this much …
pub(crate) const BATCH_BYTES: usize = 256 << 10;
/// … or holds this many conversations, or its shard ends.
pub(crate) const BATCH_ITEMS: usize = 64;

/// Batches waiting in one shard's channel (the budget bounds them first).
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
    /// The consumer has gone: nobody waits any more.
    closed: bool,
    /// Workers waiting for the budget: the consumer wakes them only then
    /// (a condition variable's wake is a system call, even with nobody to
    /// wake, and the consumer takes a conversation a few thousand times).
    waiting: usize,
}

impl Budget {
    /// Wait until a batch of `bytes` from `shard` may be sent: while the
    /// budget is spent, only the current shard's worker goes on, and only
    /// when the consumer has nothing of its shard left to take.
    fn take(&self, shard: usize, bytes: usize) {
        let Ok(mut g) = self.state.lock() else { return };
        while !g.closed
            && g.bytes > 0
            && g.bytes + bytes > AHEAD
            && !(g.current == shard && g.sent[shard] == g.taken)
        {
            g.waiting += 1;
            g = match self.changed.wait(g) {
                Ok(g) => g,
                Err(_) => return,
            };
            g.waiting -= 1;
        }
        g.bytes += bytes;
        g.sent[shard] += 1;
    }

    /// The consumer has handed out all of a batch of `bytes` from the
    /// current shard.
    fn give(&self, bytes: usize) {
        let Ok(mut g) = self.state.lock() else { return };
        g.bytes = g.bytes.saturating_sub(bytes);
        g.taken += 1;
        if g.waiting > 0 {
            self.changed.notify_all();
        }
    }

    /// The consumer has gone.
    fn close(&self) {
        if let Ok(mut g) = self.state.lock() {
            g.closed = true;
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
        loop {
            if let Some((item, prepared)) = self.batch.next() {
                self.crew.prepared = prepared;
                if let Ok(conv) = &item {
                    // A caller that never hands back leaves a short list.
                    if self.origin.len() >= 64 {
                        self.origin.remove(0);
                    }
                    self.origin.push((conv.id.clone(), self.batch_worker));
                }
                return Some(item);
            }
            if let Some(bytes) = self.held.take() {
                self.budget.give(bytes);
            }
            match self.shards.get(self.current)?.recv() {
                Ok((items, bytes, worker)) => {
                    self.batch = items.into_iter();
                    self.batch_worker = worker;
                    self.held = Some(bytes);
                }
                Err(_) => {
                    self.current += 1;
                    self.budget.advance(self.current);
                }
            }
        }
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
        self.crew.offer(work);
    }

    fn prepared(&mut self) -> Option<Prepared> {
        self.crew.prepared.take()
    }
}

/// Where a worker sends the conversations of the shard it reads.
pub struct ShardOut {
    tx: SyncSender<Batch>,
    shard: usize,
    budget: Arc<Budget>,
    worker: usize,
    grave: Arc<std::sync::Mutex<Receiver<Conversation>>>,
    hook: Hook,
    pending: Filling<Item>,
}

impl ShardOut {
    /// Send a conversation (weighing `bytes`) or the error that ends the
    /// shard, after running the offered work on it: it joins the batch
    /// being filled, which goes once it is full (or holds an error), when
    /// the budget allows; `Err` when the consumer has gone.
    pub fn send(
        &self,
        item: Result<Conversation>,
        bytes: usize,
    ) -> std::result::Result<(), Closed> {
        let prepared = prepare(&self.hook, &item);
        let last = item.is_err();
        if self.pending.add((item, prepared), bytes, last) {
            self.flush()
        } else {
            Ok(())
        }
    }

    /// Send the batch being filled, if it holds anything, once the budget
    /// allows; `Err` when the consumer has gone.
    fn flush(&self) -> std::result::Result<(), Closed> {
        let (items, bytes) = self.pending.take();
        if items.is_empty() {
            return Ok(());
        }
        self.budget.take(self.shard, bytes);
        self.tx
            .send((items, bytes, self.worker))
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
    type Slot = std::sync::Mutex<Option<SyncSender<Batch>>>;
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..shards)
        .map(|_| sync_channel::<Batch>(SHARD_DEPTH))
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
    let mut crew = Crew::default();
    for (worker, mut state) in workers.into_iter().enumerate() {
        let (senders, next, work, budget, hook, input) = (
            senders.clone(),
            next.clone(),
            work.clone(),
            budget.clone(),
            crew.hook.clone(),
            path.to_path_buf(),
        );
        let (bury, grave) = std::sync::mpsc::channel::<Conversation>();
        graves.push(bury);
        let grave = Arc::new(std::sync::Mutex::new(grave));
        let spawned = thread::Builder::new()
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
                        pending: Default::default(),
                    };
                    // The shard's last batch goes when its reading ends;
                    // after a crash, the conversations built before it,
                    // then the error in the place of the rest.
                    match contained(|| work(&mut state, shard, &out)).map(|r| r.and(out.flush())) {
                        Ok(Ok(())) => {}
                        Ok(Err(Closed)) => return,
                        Err(panic) => {
                            let error = Error::internal(&input, "a reader thread", &*panic);
                            let _ = out.send(Err(error), 0);
                            return;
                        }
                    }
                }
            })
            .map_err(|e| Error::input(path, format!("cannot start a reader thread: {e}")))?;
        crew.threads.push(spawned);
    }
    Ok(Sharded {
        info,
        shards: receivers,
        current: 0,
        budget,
        batch: Vec::new().into_iter(),
        batch_worker: 0,
        held: None,
        graves,
        origin: Vec::new(),
        crew,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn info() -> Arc<SourceInfo> {
        Arc::new(SourceInfo {
            path: PathBuf::from("store.db"),
            format: crate::model::Format::Jsonl,
            dialect: crate::model::Dialect::Unknown,
        })
    }

    /// Every item until the stream ends: ids, or the error's text.
    fn drain(src: &mut dyn Source) -> Vec<String> {
        let mut got = Vec::new();
        while let Some(item) = src.next_conversation() {
            match item {
                Ok(c) => got.push(c.id.clone()),
                Err(e) => {
                    got.push(format!("error: {e}"));
                    break;
                }
            }
        }
        got
    }

    impl Weigh for usize {
        fn weight(&self) -> usize {
            *self
        }
    }

    fn pipeline(read_until: usize, panic_in_build: Option<usize>) -> Vec<String> {
        let info = info();
        let build_info = info.clone();
        let mut p = start(
            Path::new("store.db"),
            info,
            "test",
            move |d: Dealer<usize>| {
                for i in 0..5 {
                    assert!(i < read_until, "the reader's bug");
                    if d.send(Ok(i)).is_err() {
                        return;
                    }
                }
            },
            move |i| {
                assert!(Some(i) != panic_in_build, "the parser's bug");
                Conversation::new(i.to_string(), build_info.clone())
            },
        )
        .unwrap();
        drain(&mut p)
    }

    #[test]
    fn a_pipeline_reads_in_order() {
        assert_eq!(pipeline(5, None), ["0", "1", "2", "3", "4"]);
    }

    /// A thread that panics ends the input with an error in the place of
    /// the conversations it would have given, never with a short stream.
    #[test]
    fn a_crashed_pipeline_thread_is_an_error_not_an_early_end() {
        let got = pipeline(3, None);
        assert_eq!(got[..3], ["0", "1", "2"]);
        assert!(
            got[3].contains("store.db")
                && got[3].contains(
                    "internal error: a reader thread stopped on a bug (the reader's bug)"
                ),
            "{got:?}"
        );
        assert_eq!(got.len(), 4);
        let got = pipeline(5, Some(2));
        assert_eq!(got[..2], ["0", "1"]);
        assert!(
            got[2].contains("internal error: a parser thread stopped on a bug (the parser's bug)"),
            "{got:?}"
        );
    }

    /// Conversations go in batches, by weight or by count; every shard's
    /// last batch goes when its reading ends, and the consumer gets every
    /// conversation once, in shard order, with the result of the work
    /// offered on it.
    #[test]
    fn a_sharded_source_hands_out_batches_in_order() {
        let per_shard = 3 * BATCH_ITEMS + 5;
        let mut s = start_sharded(
            Path::new("store.db"),
            info(),
            "test",
            3,
            vec![(), ()],
            move |_, shard, out| {
                for i in 0..per_shard {
                    // Now and then one heavier than a batch, alone or not.
                    let bytes = if i % 7 == 3 { BATCH_BYTES + 1 } else { 100 };
                    out.send(Ok(Conversation::new(format!("{shard}.{i}"), info())), bytes)?;
                }
                Ok(())
            },
        )
        .unwrap();
        s.prepare_with(Arc::new(|c: &Conversation| {
            Box::new(c.id.clone()) as Prepared
        }));
        let mut got = Vec::new();
        while let Some(c) = s.next_conversation() {
            let c = c.unwrap();
            if let Some(p) = s.prepared() {
                assert_eq!(*p.downcast::<String>().unwrap(), c.id);
            }
            got.push(c.id.clone());
            s.done(c);
        }
        let expected: Vec<String> = (0..3)
            .flat_map(|shard| (0..per_shard).map(move |i| format!("{shard}.{i}")))
            .collect();
        assert_eq!(got, expected);
    }

    /// The same for a sharded source, whether the bug is in the reading or
    /// in the work the consumer offered.
    #[test]
    fn a_crashed_shard_reader_is_an_error_not_an_early_end() {
        let run = |offer: bool| {
            // The readers start at once; with an offer, they wait for it.
            let offered = Arc::new(std::sync::atomic::AtomicBool::new(!offer));
            let wait = offered.clone();
            let mut s = start_sharded(
                Path::new("store.db"),
                info(),
                "test",
                4,
                vec![(), ()],
                move |_, shard, out| {
                    while !wait.load(Ordering::Acquire) {
                        thread::yield_now();
                    }
                    for i in 0..3 {
                        assert!(offer || (shard, i) != (2, 1), "the reader's bug");
                        let id = format!("{shard}.{i}");
                        out.send(Ok(Conversation::new(id, info())), 10)?;
                    }
                    Ok(())
                },
            )
            .unwrap();
            if offer {
                s.prepare_with(Arc::new(|c: &Conversation| {
                    assert!(c.id != "1.2", "the offered work's bug");
                    Box::new(()) as Prepared
                }));
                offered.store(true, Ordering::Release);
            }
            drain(&mut s)
        };
        let got = run(false);
        assert_eq!(got[..7], ["0.0", "0.1", "0.2", "1.0", "1.1", "1.2", "2.0"]);
        assert!(
            got[7].contains("internal error: a reader thread stopped on a bug (the reader's bug)"),
            "{got:?}"
        );
        assert_eq!(got.len(), 8);
        let got = run(true);
        assert_eq!(got[..5], ["0.0", "0.1", "0.2", "1.0", "1.1"]);
        assert!(got[5].contains("(the offered work's bug)"), "{got:?}");
        assert_eq!(got.len(), 6);
    }
}
