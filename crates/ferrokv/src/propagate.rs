//! The stream of effects: what write commands did, as the commands Redis
//! 7.0 would propagate (server.c `call`, `alsoPropagate`,
//! `propagatePendingCommands`), for the AOF today and replicas next.
//!
//! **What is recorded.** A write command that changed the dataset is
//! recorded as it was sent, unless its handler stated otherwise, as Redis's
//! handlers do with `rewriteClientCommandVector` / `alsoPropagate` /
//! `preventCommandPropagation`: [`rewrite`] replaces the command's record
//! (relative expiry becomes absolute: `SET .. PXAT`, `PEXPIREAT`; an expiry
//! in the past becomes `DEL`; `INCRBYFLOAT` becomes `SET .. KEEPTTL`;
//! `SPOP` becomes `SREM` or `DEL`; a blocking pop its non-blocking form),
//! [`prevent`] drops it, [`also`] adds the pop of a blocked client the
//! command served. "Changed the dataset" is Redis's `server.dirty`: every
//! `signalModifiedKey` of the command (events.rs calls [`mark_dirty`]),
//! plus the commands that count without touching a key (FLUSHALL, SWAPDB).
//! Nothing reads a reply to find out what a command did.
//!
//! **Units.** The records of one command, of one MULTI/EXEC block
//! ([`Stream::begin_block`]) or of one background step (active expiry,
//! eviction) form a unit: keys deleted by expiry or eviction inside it come
//! first as `DEL`, then the command's own record, then the pops of blocked
//! clients it served (Redis serves them after the command). A sink wraps a
//! unit of more than one record in MULTI/EXEC and emits `SELECT` when the
//! database changes.
//!
//! **Order.** While propagation is on, write contexts take the stream's
//! gate (reads never do), so units reach the sinks in execution order.
//!
//! The unit being built is thread-local (a command runs on one thread from
//! start to end); the handler-facing functions need no server. With
//! propagation off each costs one relaxed load.

use crate::resp::Args;
use parking_lot::{Condvar, Mutex, RwLock};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// True while write commands are propagated to some sink (the AOF is on).
/// A process-wide flag so that the keyspace's expiry path can test it with
/// one relaxed load.
static ON: AtomicBool = AtomicBool::new(false);

/// True while effects are recorded.
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Turns recording on or off (the AOF turning on or off).
pub fn set_on(v: bool) {
    ON.store(v, Ordering::SeqCst);
}

/// One record: the database it applies to and a command in RESP form.
pub type Record = (usize, Vec<u8>);

/// A consumer of the stream: the AOF writer (persist/aof.rs), later the
/// replication backlog, and tests.
pub trait Sink: Send + Sync {
    /// Appends one unit (records in execution order; a sink wraps more than
    /// one in MULTI/EXEC and emits SELECT when the database changes).
    /// Returns a position the producer must see reached before its reply
    /// leaves (the AOF's logical offset, see `before_reply`), or 0.
    fn append_unit(&self, recs: &[Record]) -> u64;
}

/// Appends `args` to `out` as a RESP multibulk.
pub fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    let mut b = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(b.format(args.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in args {
        out.push(b'$');
        out.extend_from_slice(b.format(a.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// `args` as one RESP multibulk.
pub fn record(args: &[&[u8]]) -> Vec<u8> {
    let mut v = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    encode(&mut v, args);
    v
}

thread_local! {
    static UNIT: RefCell<Unit> = RefCell::new(Unit::default());
    static DIRTY: Cell<u64> = const { Cell::new(0) };
}

/// Counts one change of the dataset by the running command (Redis's
/// `server.dirty++`): a command that counted none is not recorded.
#[inline]
pub fn mark_dirty() {
    DIRTY.with(|d| d.set(d.get().wrapping_add(1)));
}

/// This thread's change counter.
#[inline]
fn dirty() -> u64 {
    DIRTY.with(Cell::get)
}

/// The unit being built on this thread.
#[derive(Default)]
struct Unit {
    /// Nesting of write contexts (commands inside EXEC, blocks, background
    /// steps); the gate is held while > 0.
    depth: u32,
    /// Records of the unit so far.
    pending: Vec<Record>,
    /// The current command's own records when its handler stated them
    /// (None: its arguments, if it changed the dataset).
    own: Option<Vec<Vec<u8>>>,
    /// Where the current command's own records go: before the pops of the
    /// blocked clients it served.
    own_at: Option<usize>,
    /// [`dirty`] when the current command started.
    dirty_at: u64,
    /// Position the current batch's replies wait for.
    need: u64,
}

/// Replaces the running command's record with `args` (Redis's
/// `rewriteClientCommandVector`). Does nothing outside a write context.
pub fn rewrite(args: &[&[u8]]) {
    if on() {
        UNIT.with(|u| {
            let mut u = u.borrow_mut();
            if u.depth > 0 {
                u.own = Some(vec![record(args)]);
            }
        });
    }
}

/// Adds `args` to the running command's stated records (the first call
/// replaces its default record: SPOP with a count logs SREMs in batches).
pub fn rewrite_more(args: &[&[u8]]) {
    if on() {
        UNIT.with(|u| {
            let mut u = u.borrow_mut();
            if u.depth > 0 {
                u.own.get_or_insert_with(Vec::new).push(record(args));
            }
        });
    }
}

/// The running command records nothing (Redis's
/// `preventCommandPropagation`).
pub fn prevent() {
    if on() {
        UNIT.with(|u| {
            let mut u = u.borrow_mut();
            if u.depth > 0 {
                u.own = Some(Vec::new());
            }
        });
    }
}

/// Records `args` in database `db` after the running command's own record:
/// the pop of a blocked client it served, in non-blocking form.
pub fn also(db: usize, args: &[&[u8]]) {
    if on() {
        UNIT.with(|u| {
            let mut u = u.borrow_mut();
            if u.depth > 0 {
                if u.own_at.is_none() {
                    u.own_at = Some(u.pending.len());
                }
                u.pending.push((db, record(args)));
            }
        });
    }
}

/// A key of database `db` found expired (or chosen for eviction) is about
/// to be deleted. In a write context the deletion is recorded as `DEL` and
/// true is returned (delete it now); elsewhere (a read) false: the key is
/// only reported absent and stays until a write context deletes it, so
/// every deletion is in the stream in order.
pub fn deleted(db: usize, key: &[u8]) -> bool {
    UNIT.with(|u| {
        let mut u = u.borrow_mut();
        if u.depth == 0 {
            return false;
        }
        u.pending.push((db, record(&[b"DEL", key])));
        true
    })
}

/// The position this thread's last units must reach before its replies
/// leave (0: none), reset.
pub fn take_need() -> u64 {
    UNIT.with(|u| std::mem::take(&mut u.borrow_mut().need))
}

/// A lock without a guard object, taken by one function and released by
/// another on the same thread (the begin and end of a write context).
#[derive(Default)]
struct Gate {
    held: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn lock(&self) {
        let mut h = self.held.lock();
        while *h {
            self.cv.wait(&mut h);
        }
        *h = true;
    }

    fn unlock(&self) {
        *self.held.lock() = false;
        self.cv.notify_one();
    }
}

/// Holds the stream's gate: no write context runs meanwhile (an AOF
/// rewrite snapshots the keyspace under it).
pub struct Paused<'a>(&'a Gate);

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        self.0.unlock();
    }
}

/// The stream: its sinks and the gate that orders write contexts. One per
/// server.
#[derive(Default)]
pub struct Stream {
    gate: Gate,
    sinks: RwLock<Vec<Arc<dyn Sink>>>,
}

impl Stream {
    /// Adds a consumer.
    pub fn add_sink(&self, s: Arc<dyn Sink>) {
        self.sinks.write().push(s);
    }

    /// Removes a consumer (compared by identity).
    pub fn remove_sink(&self, s: &Arc<dyn Sink>) {
        self.sinks.write().retain(|x| !Arc::ptr_eq(x, s));
    }

    /// True when this thread is inside a write context.
    pub fn in_write_context() -> bool {
        UNIT.with(|u| u.borrow().depth > 0)
    }

    /// Waits for the write context running on another thread, then holds
    /// the gate until the guard is dropped. Not to be called inside a write
    /// context (see [`Stream::in_write_context`]).
    pub fn pause_writes(&self) -> Paused<'_> {
        self.gate.lock();
        Paused(&self.gate)
    }

    fn enter(&self) {
        UNIT.with(|u| {
            let mut u = u.borrow_mut();
            if u.depth == 0 {
                self.gate.lock();
            }
            u.depth += 1;
        });
    }

    fn leave(&self) {
        let done = UNIT.with(|u| {
            let mut u = u.borrow_mut();
            u.depth -= 1;
            (u.depth == 0).then(|| std::mem::take(&mut u.pending))
        });
        if let Some(p) = done {
            self.finish_unit(p);
        }
    }

    /// Starts a write command (call only when [`on`]; always pair with
    /// [`Stream::end_command`]).
    pub fn begin_command(&self) {
        self.enter();
        let d = dirty();
        UNIT.with(|u| {
            let mut u = u.borrow_mut();
            u.own = None;
            u.own_at = None;
            u.dirty_at = d;
        });
    }

    /// Ends a write command that ran in database `db` with `args`: its own
    /// records (stated by its handler, else its arguments when it changed
    /// the dataset) go before the records of the blocked clients it served.
    pub fn end_command(&self, db: usize, args: &Args<'_>) {
        let changed = dirty() != UNIT.with(|u| u.borrow().dirty_at);
        UNIT.with(|u| {
            let mut u = u.borrow_mut();
            let own = match u.own.take() {
                Some(v) => v,
                None if changed => {
                    let argv: smallvec::SmallVec<[&[u8]; 8]> = args.iter().collect();
                    vec![record(&argv)]
                }
                None => Vec::new(),
            };
            let at = u.own_at.take().unwrap_or(u.pending.len());
            for (i, r) in own.into_iter().enumerate() {
                u.pending.insert(at + i, (db, r));
            }
        });
        self.leave();
    }

    /// Starts a block whose records form one unit (EXEC). Returns whether
    /// recording is on; pass it to [`Stream::end_block`].
    pub fn begin_block(&self) -> bool {
        if !on() {
            return false;
        }
        self.enter();
        true
    }

    /// Ends a block started by [`Stream::begin_block`].
    pub fn end_block(&self, began: bool) {
        if began {
            self.leave();
        }
    }

    /// Starts a background write context (active expiry, eviction): its
    /// `DEL`s are one unit, ordered with commands. Pair with
    /// [`Stream::end_background`].
    pub fn begin_background(&self) {
        self.enter();
    }

    /// Ends [`Stream::begin_background`].
    pub fn end_background(&self) {
        self.leave();
    }

    fn finish_unit(&self, pending: Vec<Record>) {
        if !pending.is_empty() && on() {
            let mut need = 0;
            for s in self.sinks.read().iter() {
                need = need.max(s.append_unit(&pending));
            }
            UNIT.with(|u| {
                let mut u = u.borrow_mut();
                u.need = u.need.max(need);
            });
        }
        // Taken by the outermost enter on this thread.
        self.gate.unlock();
    }
}
