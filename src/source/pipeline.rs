//! A source fed by threads, for databases: a reader steps the store and
//! hands each conversation's raw rows to parser workers, which build the
//! conversations (and run the work the caller offers, lint's checks) while
//! the caller takes the results, so reading, parsing and checking overlap.
//! Parsing is the heaviest stage, so it has several workers; conversation
//! `i` goes to worker `i % n` and is taken back from it in turn, which keeps
//! the store's order without a reorder buffer. The channels are bounded: a
//! few conversations are in flight, never the store.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
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
    outputs: Vec<Receiver<Built>>,
    next: usize,
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
        let got = self.outputs[self.next].recv().ok();
        self.next = (self.next + 1) % self.outputs.len();
        let (item, prepared) = got?;
        self.crew.prepared = prepared;
        Some(item)
    }

    fn prepare_with(&mut self, work: Prepare) {
        self.crew.offer(work);
    }

    fn prepared(&mut self) -> Option<Prepared> {
        self.crew.prepared.take()
    }
}

/// The reader's end: conversation `i` goes to worker `i % n`.
pub struct Dealer<R> {
    workers: Vec<SyncSender<Result<R>>>,
    /// Items sent, shared with the copy [`start`] keeps to report a
    /// reader's crash in its place in the stream.
    sent: Arc<AtomicUsize>,
}

impl<R> Dealer<R> {
    /// A dealer with one channel, for tests of a reader.
    pub fn single(tx: SyncSender<Result<R>>) -> Dealer<R> {
        Dealer {
            workers: vec![tx],
            sent: Arc::default(),
        }
    }

    /// Hand on one raw conversation, or the error that ends the stream;
    /// `Err` when nobody reads any more.
    pub fn send(&self, item: Result<R>) -> std::result::Result<(), Closed> {
        let i = self.sent.fetch_add(1, Ordering::Relaxed);
        self.workers[i % self.workers.len()]
            .send(item)
            .map_err(|_| Closed)
    }

    fn copy(&self) -> Dealer<R> {
        Dealer {
            workers: self.workers.clone(),
            sent: self.sent.clone(),
        }
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
            .map_err(|e| Error::input(path, format!("cannot start the {role} thread: {e}")))
    };
    let mut crew = Crew::default();
    let build = Arc::new(build);
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for _ in 0..workers() {
        let (raw_tx, raw_rx) = sync_channel::<Result<R>>(DEPTH);
        let (tx, rx) = sync_channel::<Built>(DEPTH);
        let (build, hook, path) = (build.clone(), crew.hook.clone(), path.to_path_buf());
        crew.threads.push(spawn(
            "parse",
            Box::new(move || {
                for raw in raw_rx {
                    let built = contained(|| {
                        let item = raw.map(&*build);
                        let prepared = prepare(&hook, &item);
                        (item, prepared)
                    });
                    let sent = match built {
                        Ok(built) => tx.send(built),
                        Err(panic) => {
                            let error = Error::internal(&path, "a parser thread", &*panic);
                            let _ = tx.send((Err(error), None));
                            return;
                        }
                    };
                    if sent.is_err() {
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
        crew,
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
    /// The consumer has gone: nobody waits any more.
    closed: bool,
    /// Workers waiting for the budget: the consumer wakes them only then
    /// (a condition variable's wake is a system call, even with nobody to
    /// wake, and the consumer takes a conversation a few thousand times).
    waiting: usize,
}

impl Budget {
    /// Wait until a conversation of `bytes` from `shard` may be sent: while
    /// the budget is spent, only the current shard's worker goes on, and
    /// only when the consumer has nothing of its shard left to take.
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

    /// The consumer took a conversation of `bytes` from the current shard.
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
        while let Some(rx) = self.shards.get(self.current) {
            match rx.recv() {
                Ok((item, bytes, worker, prepared)) => {
                    self.budget.give(bytes);
                    self.crew.prepared = prepared;
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
        self.crew.offer(work);
    }

    fn prepared(&mut self) -> Option<Prepared> {
        self.crew.prepared.take()
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
                    };
                    match contained(|| work(&mut state, shard, &out)) {
                        Ok(Ok(())) => {}
                        Ok(Err(Closed)) => return,
                        Err(panic) => {
                            let error = Error::internal(&input, "a reader thread", &*panic);
                            let _ = out.tx.send((Err(error), 0, worker, None));
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
