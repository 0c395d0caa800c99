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
//! **Order.** Write contexts run in parallel on every core; each shard a
//! unit locks gives it a ticket, and a unit reaches the sinks only after
//! the units with earlier tickets on the same shards (see [`Stream`]), so
//! the stream is one total order consistent with execution.
//!
//! The unit being built is thread-local (a command runs on one thread from
//! start to end); the handler-facing functions need no server. With
//! propagation off each costs one relaxed load.

use crate::resp::Args;
use parking_lot::{Condvar, Mutex};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// True while this thread runs inside a write context of some stream
/// (between [`Stream::begin_command`] / `begin_block` / `begin_background`
/// and the matching end): the functions that state effects ([`rewrite`],
/// [`also`], [`prevent`], [`deleted`], [`ticket`]) do nothing otherwise,
/// at the cost of one thread-local load.
#[inline]
fn recording() -> bool {
    RECORDING.with(Cell::get)
}

thread_local! {
    /// Set while a script has turned propagation off (`redis.set_repl`):
    /// the commands it runs record nothing.
    static SUPPRESSED: Cell<bool> = const { Cell::new(false) };
}

/// This thread's recording state, set aside while a suspended script lets
/// the other connections of its thread run (script/yielding.rs): its unit
/// in progress, its change count, and whether it records.
pub struct ThreadState {
    unit: Unit,
    dirty: u64,
    recording: bool,
    suppressed: bool,
}

/// Takes this thread's recording state, leaving a fresh one (the same
/// write-gate stripe) for the code that runs until
/// [`restore_thread_state`].
pub fn take_thread_state() -> ThreadState {
    let unit = UNIT.with(|u| {
        let mut u = u.borrow_mut();
        let fresh = Unit {
            stripe: u.stripe,
            ..Unit::new()
        };
        std::mem::replace(&mut *u, fresh)
    });
    ThreadState {
        unit,
        dirty: DIRTY.with(|d| d.replace(0)),
        recording: RECORDING.with(|r| r.replace(false)),
        suppressed: SUPPRESSED.with(|s| s.replace(false)),
    }
}

/// Puts back the state [`take_thread_state`] took.
pub fn restore_thread_state(s: ThreadState) {
    UNIT.with(|u| *u.borrow_mut() = s.unit);
    DIRTY.with(|d| d.set(s.dirty));
    RECORDING.with(|r| r.set(s.recording));
    SUPPRESSED.with(|x| x.set(s.suppressed));
}

/// Turns the recording of this thread's commands off (`true`) or back on,
/// for `redis.set_repl(redis.REPL_NONE)` (script.c `scriptSetRepl`).
pub fn set_suppressed(v: bool) {
    SUPPRESSED.with(|s| s.set(v));
}

/// One record's place in its unit's byte buffer: the database it applies
/// to and the byte range of its RESP multibulk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    db: usize,
    start: usize,
    end: usize,
    /// The records of one group are one execution unit of Redis's (the
    /// command's own records, or one blocked client it served): a group
    /// of more than one record is wrapped in MULTI/EXEC, a unit's groups
    /// follow each other unwrapped (see [`Records::framed`]).
    group: u32,
    /// For the replicas only, not the AOF (PUBLISH: Redis's
    /// `PROPAGATE_REPL`).
    repl_only: bool,
}

/// The records of one unit, in execution order: each a database index and
/// a command in RESP multibulk form. Borrowed from the unit's buffer, so
/// recording allocates nothing once a thread's buffers have grown.
#[derive(Debug, Clone, Copy)]
pub struct Records<'a> {
    bytes: &'a [u8],
    spans: &'a [Span],
}

impl<'a> Records<'a> {
    /// Number of records.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when there is no record.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// (database, RESP bytes) of each record, in order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &'a [u8])> + 'a {
        let bytes = self.bytes;
        self.spans
            .iter()
            .map(move |s| (s.db, &bytes[s.start..s.end]))
    }

    /// Each record as (database, RESP bytes, opens MULTI, closes with
    /// EXEC, for the replicas only): a unit's records come in groups — the command's own records,
    /// then each blocked client it served, each a group of its own, as
    /// Redis 7.0 propagates a command and then each client served after it
    /// (`handleClientsBlockedOnKeys` runs `afterCommand` per client) — and
    /// a group of more than one record is wrapped in MULTI/EXEC (Redis's
    /// `propagatePendingCommands`). A transaction's or a script's records
    /// are one group. The framing counts the replica-only records, as
    /// Redis's does, so the AOF may get MULTI/EXEC around a single record
    /// (a transaction of a SET and a PUBLISH).
    pub fn framed(&self) -> impl Iterator<Item = (usize, &'a [u8], bool, bool, bool)> + 'a {
        let bytes = self.bytes;
        let spans = self.spans;
        spans.iter().enumerate().map(move |(i, s)| {
            let first = i == 0 || spans[i - 1].group != s.group;
            let last = i + 1 == spans.len() || spans[i + 1].group != s.group;
            let single = first && last;
            (
                s.db,
                &bytes[s.start..s.end],
                first && !single,
                last && !single,
                s.repl_only,
            )
        })
    }
}

/// A consumer of the stream: the AOF writer (persist/aof/writer.rs), later the
/// replication backlog, and tests.
pub trait Sink: Send + Sync {
    /// Appends one unit (records in execution order; a sink wraps more than
    /// one in MULTI/EXEC and emits SELECT when the database changes).
    /// Returns a position the producer must see reached before its reply
    /// leaves (the AOF's logical offset, see `before_reply`), or 0.
    fn append_unit(&self, unit: Records<'_>) -> u64;
}

/// Appends the `n` arguments `args` to `out` as a RESP multibulk.
fn encode_iter<'x>(out: &mut Vec<u8>, n: usize, args: impl Iterator<Item = &'x [u8]> + Clone) {
    // One reservation: the header and each argument's `$len\r\n..\r\n`
    // (at most 20 digits + 5 bytes of framing).
    out.reserve(16 + args.clone().map(|a| a.len() + 25).sum::<usize>());
    let mut b = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(b.format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in args {
        out.push(b'$');
        out.extend_from_slice(b.format(a.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// Appends `args` to `out` as a RESP multibulk.
pub fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    encode_iter(out, args.len(), args.iter().copied());
}

thread_local! {
    static UNIT: RefCell<Unit> = const { RefCell::new(Unit::new()) };
    static DIRTY: Cell<u64> = const { Cell::new(0) };
    static RECORDING: Cell<bool> = const { Cell::new(false) };
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

/// A unit's buffer grown past this is given back once the unit is handed
/// over (a big value's record), bytes.
const KEEP_BYTES: usize = 1 << 20;

/// The unit being built on this thread. Its vectors are cleared, not
/// dropped, between units.
#[derive(Default)]
struct Unit {
    /// Nesting of write contexts (commands inside EXEC, blocks, background
    /// steps); the gate is held while > 0.
    depth: u32,
    /// The outermost context is a single command (not a block or a
    /// background step).
    command: bool,
    /// The RESP bytes of the records (and of stated records later
    /// replaced, which no span names).
    bytes: Vec<u8>,
    /// Records of the unit so far, in order.
    spans: Vec<Span>,
    /// The current command's own records when its handler stated them
    /// (`own_set`); else its arguments, if it changed the dataset.
    own: Vec<Span>,
    own_set: bool,
    /// Where the current command's own records go: before the pops of the
    /// blocked clients it served.
    own_at: Option<usize>,
    /// [`dirty`] when the current command started.
    dirty_at: u64,
    /// Group of the records pushed next ([`next_group`]).
    group: u32,
    /// Position the current batch's replies wait for.
    need: u64,
    /// Tickets of the shards the current unit locked: (global shard id,
    /// ticket), in the order taken.
    tickets: Vec<(u32, u64)>,
    /// Scratch: the unit's positions and skipped tickets.
    positions: Vec<(u32, u64)>,
    skips: Vec<(u32, u64)>,
    /// Units of this thread's batch still waiting for an earlier one.
    delayed: Vec<Arc<Delayed>>,
    /// This thread's stripe of the write gate (chosen on first use).
    stripe: Option<usize>,
    /// The shared hold of that stripe while in a write context.
    held: Option<SharedToken>,
}

impl Unit {
    /// An empty unit (const, for the thread-local's initialiser).
    const fn new() -> Unit {
        Unit {
            depth: 0,
            command: false,
            bytes: Vec::new(),
            spans: Vec::new(),
            own: Vec::new(),
            own_set: false,
            own_at: None,
            dirty_at: 0,
            group: 0,
            need: 0,
            tickets: Vec::new(),
            positions: Vec::new(),
            skips: Vec::new(),
            delayed: Vec::new(),
            stripe: None,
            held: None,
        }
    }

    /// Encodes `args` into the buffer; its span (database 0).
    fn push_record(&mut self, args: &[&[u8]]) -> Span {
        let start = self.bytes.len();
        encode(&mut self.bytes, args);
        Span {
            db: 0,
            start,
            end: self.bytes.len(),
            group: self.group,
            repl_only: false,
        }
    }

    fn records(&self) -> Records<'_> {
        Records {
            bytes: &self.bytes,
            spans: &self.spans,
        }
    }

    /// Forgets the unit's records and tickets, keeping the buffers.
    fn clear(&mut self) {
        self.spans.clear();
        self.tickets.clear();
        self.group = 0;
        if self.bytes.capacity() > KEEP_BYTES {
            self.bytes = Vec::new();
        } else {
            self.bytes.clear();
        }
    }
}

type RawGate = parking_lot::RawRwLock;
type SharedToken = <RawGate as parking_lot::lock_api::RawRwLock>::SharedGuard;
type ExclusiveToken = <RawGate as parking_lot::lock_api::RawRwLock>::ExclusiveGuard;

/// Replaces the running command's record with `args` (Redis's
/// `rewriteClientCommandVector`). Does nothing outside a write context.
pub fn rewrite(args: &[&[u8]]) {
    if recording() {
        UNIT.with(|u| {
            let mut u = u.borrow_mut();
            if u.depth > 0 {
                let s = u.push_record(args);
                u.own.clear();
                u.own.push(s);
                u.own_set = true;
            }
        });
    }
}

/// Adds `args` to the running command's stated records (the first call
/// replaces its default record: SPOP with a count logs SREMs in batches).
pub fn rewrite_more(args: &[&[u8]]) {
    if recording() {
        UNIT.with(|u| {
            let mut u = u.borrow_mut();
            if u.depth > 0 {
                if !u.own_set {
                    u.own.clear();
                    u.own_set = true;
                }
                let s = u.push_record(args);
                u.own.push(s);
            }
        });
    }
}

/// The running command records nothing (Redis's
/// `preventCommandPropagation`).
pub fn prevent() {
    if recording() {
        UNIT.with(|u| {
            let mut u = u.borrow_mut();
            if u.depth > 0 {
                u.own.clear();
                u.own_set = true;
            }
        });
    }
}

/// Records `args` in database `db` after the running command's own record:
/// the pop of a blocked client it served, in non-blocking form.
pub fn also(db: usize, args: &[&[u8]]) {
    if recording() {
        UNIT.with(|u| {
            let mut u = u.borrow_mut();
            if u.depth > 0 {
                if u.own_at.is_none() {
                    u.own_at = Some(u.spans.len());
                }
                let s = u.push_record(args);
                u.spans.push(Span { db, ..s });
            }
        });
    }
}

/// A key of database `db` found expired (or chosen for eviction) is about
/// to be deleted. In a write context the deletion is recorded as `DEL` and
/// true is returned (delete it now); elsewhere (a read) false: the key is
/// only reported absent and stays until a write context deletes it (the
/// command layer's, right after the read: [`hidden_expired`]), so every
/// deletion is in the stream in order.
pub fn deleted(db: usize, key: &[u8]) -> bool {
    record_deletion(db, &[b"DEL", key])
}

/// Records the deletion `args` in database `db` when in a write context
/// (see [`deleted`]).
fn record_deletion(db: usize, args: &[&[u8]]) -> bool {
    if !recording() {
        return false;
    }
    UNIT.with(|u| {
        let mut u = u.borrow_mut();
        if u.depth == 0 {
            return false;
        }
        let s = u.push_record(args);
        u.spans.push(Span { db, ..s });
        true
    })
}

thread_local! {
    /// Keys a read outside a write context found expired and only hid
    /// ([`hidden_expired`]), for the command layer to delete after the
    /// command ([`take_hidden_expired`]).
    static HIDDEN: RefCell<Vec<(usize, Box<[u8]>)>> = const { RefCell::new(Vec::new()) };
}

/// A read outside a write context found `key` of database `db` expired
/// and reported it absent without deleting it ([`deleted`] returned
/// false): the command layer deletes it once the command is over, in a
/// write context of its own, so the `DEL` is in the stream as Redis's
/// lazy expiry on a read puts it there (db.c `expireIfNeeded` →
/// `deleteExpiredKeyAndPropagate`, each DEL on its own).
pub fn hidden_expired(db: usize, key: &[u8]) {
    HIDDEN.with(|h| h.borrow_mut().push((db, key.into())));
}

/// True when reads of this thread hid expired keys since the last
/// [`take_hidden_expired`]: one thread-local load.
#[inline]
pub fn has_hidden_expired() -> bool {
    HIDDEN.with(|h| !h.borrow().is_empty())
}

/// The keys [`hidden_expired`] noted on this thread, in order; the list
/// is left empty.
pub fn take_hidden_expired() -> Vec<(usize, Box<[u8]>)> {
    HIDDEN.with(|h| std::mem::take(&mut *h.borrow_mut()))
}

/// A field of the hash at `key` (database `db`) found expired is about to
/// be deleted: as [`deleted`], recorded as `HDEL key field` (Redis 7.4's
/// `propagateHashFieldDeletion`) and true in a write context, false
/// elsewhere (the field is then only hidden).
pub fn field_deleted(db: usize, key: &[u8], field: &[u8]) -> bool {
    record_deletion(db, &[b"HDEL", key, field])
}

/// A shard's place in the stream: its id among all shards of all
/// databases and the next ticket it hands out. Lives in the shard, changed
/// only under its lock.
#[derive(Debug, Default)]
pub struct ShardSeq {
    /// Global shard id (database * shards per database + index).
    pub gid: u32,
    next: u64,
}

/// Called with a shard's lock just taken: inside a write context, the
/// shard hands the unit its next ticket, which fixes the unit's place
/// among the other units that lock this shard (the order of the lock
/// acquisitions, i.e. of execution). One relaxed load otherwise.
#[inline]
pub fn ticket(seq: &mut ShardSeq) {
    if recording() {
        UNIT.with(|u| {
            let mut u = u.borrow_mut();
            if u.depth > 0 {
                u.tickets.push((seq.gid, seq.next));
                seq.next += 1;
            }
        });
    }
}

/// Inside a single write command: the records that follow belong to the
/// next group of its unit (a blocked client the command serves, see
/// [`Records::framed`]). Nothing elsewhere (a transaction's or a script's
/// records stay one group). One relaxed load when nothing is recorded.
#[inline]
pub fn next_group() {
    if recording() {
        UNIT.with(|u| {
            let mut u = u.borrow_mut();
            if u.depth == 1 && u.command {
                u.group += 1;
            }
        });
    }
}

/// A unit handed to the stream before the units it follows: the position
/// its producer waits for once it has reached the sinks.
#[derive(Default)]
struct Delayed {
    /// Sink position (u64::MAX while the unit waits).
    need: AtomicU64,
}

/// A unit waiting in [`Order`] for the units before it on some shard.
struct Waiting {
    bytes: Vec<u8>,
    spans: Vec<Span>,
    positions: Vec<(u32, u64)>,
    unmet: usize,
    done: Arc<Delayed>,
}

impl Waiting {
    fn records(&self) -> Records<'_> {
        Records {
            bytes: &self.bytes,
            spans: &self.spans,
        }
    }
}

/// The order of units: for each shard, the next ticket due; units whose
/// tickets are not all due wait, and are released in ticket order.
#[derive(Default)]
struct Order {
    next: Vec<u64>,
    /// Tickets that carry no records (a unit's earlier lock of a shard it
    /// locked again, or a unit that recorded nothing) and are not due yet.
    skips: FastSet<(u32, u64)>,
    /// (shard, ticket) -> waiting unit.
    waiting: FastMap<(u32, u64), usize>,
    units: Vec<Option<Waiting>>,
    free: Vec<usize>,
    /// The stream's consumers. Units are emitted with this lock held, so
    /// the sinks live under it (no second lock per unit).
    sinks: Vec<Arc<dyn Sink>>,
}

impl Order {
    fn next_of(&mut self, g: u32) -> u64 {
        let g = g as usize;
        if g >= self.next.len() {
            self.next.resize(g + 1, 0);
        }
        self.next[g]
    }

    fn is_due(&mut self, (g, t): (u32, u64)) -> bool {
        self.next_of(g) == t
    }

    /// Hands `records` to every sink; the highest position returned.
    fn emit(&self, records: Records<'_>) -> u64 {
        let mut need = 0;
        for s in &self.sinks {
            need = need.max(s.append_unit(records));
        }
        need
    }
}

/// [`Stream::set_user`]: the AOF is on.
pub const USER_AOF: u8 = 1;
/// [`Stream::set_user`]: the replication backlog exists (repl/).
pub const USER_REPL: u8 = 2;
/// [`Stream::set_user`]: the server is a replica. Nothing is recorded for
/// it (its backlog gets its master's bytes), but expired keys are left for
/// the master's DEL, as with a recorded stream.
pub const USER_REPLICA: u8 = 4;

/// The stream: its sinks, the order of units, and the write gate. One per
/// server.
///
/// Write contexts run in parallel. Each shard a context locks hands it a
/// ticket ([`ticket`]); a unit reaches the sinks once, on every shard it
/// locked, the units with earlier tickets have: so the records of any key
/// are in the order the commands ran, a multi-key command's records come
/// after everything it saw and before everything that saw it, and units
/// on unrelated shards are not ordered against each other. A unit's place
/// on a shard is its last ticket there (its earlier locks of the shard
/// only read: SORT's rounds). Handing a unit over is one short critical
/// section; a unit that must wait for another thread's costs its thread a
/// wait before its replies leave ([`Stream::wait_durable`]).
///
/// The write gate is striped (one stripe per thread, taken shared by every
/// write context): [`Stream::pause_writes`] takes every stripe to hold all
/// writers while an AOF rewrite walks the keyspace.
pub struct Stream {
    /// The consumers that need the stream ([`USER_AOF`], [`USER_REPL`]).
    users: std::sync::atomic::AtomicU8,
    /// The keyspace's flag (`Keyspace::with_propagation_flag`): set while
    /// any user is registered, [`USER_REPLICA`] included: expired keys are
    /// then deleted only by write contexts (which record the DEL), and
    /// reads report them missing.
    keyspace_flag: Arc<AtomicBool>,
    /// Effects are recorded (some consumer needs them); shared with the keyspace
    /// (`Keyspace::propagating`), whose expiry path tests it.
    on: Arc<AtomicBool>,
    stripes: Box<[parking_lot::RawRwLock]>,
    next_stripe: std::sync::atomic::AtomicUsize,
    order: Mutex<Order>,
    released: Condvar,
}

impl Default for Stream {
    fn default() -> Self {
        use parking_lot::lock_api::RawRwLock as _;
        Stream {
            users: Default::default(),
            keyspace_flag: Arc::default(),
            on: Arc::default(),
            stripes: (0..16).map(|_| parking_lot::RawRwLock::INIT).collect(),
            next_stripe: Default::default(),
            order: Mutex::new(Order::default()),
            released: Condvar::new(),
        }
    }
}

/// Holds every stripe of the write gate: no write context runs meanwhile.
pub struct Paused<'a>(&'a Stream, Vec<ExclusiveToken>);

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        use parking_lot::lock_api::RawRwLock as _;
        for (s, t) in self.0.stripes.iter().zip(self.1.drain(..)) {
            // SAFETY: `t` is the exclusive hold `pause_writes` took on `s`.
            unsafe { s.unlock_exclusive(t) };
        }
    }
}

impl Stream {
    /// Adds a consumer.
    pub fn add_sink(&self, s: Arc<dyn Sink>) {
        self.order.lock().sinks.push(s);
    }

    /// True when this thread is inside a write context.
    pub fn in_write_context() -> bool {
        recording()
    }

    /// True while effects are recorded (the AOF is on): one relaxed load.
    #[inline]
    pub fn on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Registers (`v` true) or withdraws a consumer that needs the stream
    /// ([`USER_AOF`], [`USER_REPL`]); recording is on while any is
    /// registered.
    pub fn set_user(&self, user: u8, v: bool) {
        let old = if v {
            self.users.fetch_or(user, Ordering::SeqCst) | user
        } else {
            self.users.fetch_and(!user, Ordering::SeqCst) & !user
        };
        self.keyspace_flag.store(old != 0, Ordering::SeqCst);
        self.on
            .store(old & (USER_AOF | USER_REPL) != 0, Ordering::SeqCst);
    }

    /// The keyspace's flag, for the keyspace to share
    /// (`Keyspace::with_propagation_flag`; see `keyspace_flag`).
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.keyspace_flag.clone()
    }

    /// True when this thread runs a single command's write context (not
    /// inside a block or another context): work that must lock its shards
    /// again after releasing them (serving blocked clients whose keys could
    /// not be locked at once) is then done after the command's unit, in a
    /// unit of its own, so that each unit's place on a shard is one lock.
    pub fn in_single_command() -> bool {
        UNIT.with(|u| {
            let u = u.borrow();
            u.depth == 1 && u.command
        })
    }

    /// Waits for the write contexts running on other threads, then holds
    /// them all off until the guard is dropped. Not to be called inside a
    /// write context (see [`Stream::in_write_context`]).
    pub fn pause_writes(&self) -> Paused<'_> {
        use parking_lot::lock_api::RawRwLock as _;
        let tokens = self.stripes.iter().map(|s| s.lock_exclusive()).collect();
        Paused(self, tokens)
    }

    fn enter(&self, command: bool) {
        UNIT.with(|u| self.enter_unit(&mut u.borrow_mut(), command));
    }

    /// [`Stream::enter`] on this thread's unit, borrowed by the caller.
    #[inline]
    fn enter_unit(&self, u: &mut Unit, command: bool) {
        use parking_lot::lock_api::RawRwLock as _;
        if u.depth == 0 {
            RECORDING.with(|r| r.set(true));
            u.command = command;
            let n = self.stripes.len();
            let i = *u
                .stripe
                .get_or_insert_with(|| self.next_stripe.fetch_add(1, Ordering::Relaxed) % n);
            u.held = Some(self.stripes[i].lock_shared());
        }
        u.depth += 1;
    }

    fn leave(&self) {
        UNIT.with(|u| self.leave_unit(&mut u.borrow_mut()));
    }

    /// [`Stream::leave`] on this thread's unit, borrowed by the caller.
    #[inline]
    fn leave_unit(&self, u: &mut Unit) {
        use parking_lot::lock_api::RawRwLock as _;
        u.depth -= 1;
        if u.depth != 0 {
            return;
        }
        RECORDING.with(|r| r.set(false));
        self.finish_unit(u, self.on());
        if let Some(t) = u.held.take() {
            // SAFETY: `t` is the shared hold the matching `enter` took on
            // this stripe, on this thread.
            unsafe { self.stripes[u.stripe.unwrap_or(0)].unlock_shared(t) };
        }
    }

    /// Inside a background context (depth 1), hands the records and
    /// tickets so far over as one unit and goes on with a new one, keeping
    /// the gate: a background loop that locks one shard after another
    /// (eviction, serving blocked clients) calls it after each lock, since
    /// a unit must take all its locks at one time to have one place in the
    /// order (a unit that locked shard A, released it, then locked B could
    /// be after a command on A and B on one and before it on the other).
    pub fn cut(&self) {
        UNIT.with(|u| {
            let mut u = u.borrow_mut();
            if u.depth == 1 && !u.command {
                self.finish_unit(&mut u, self.on());
            }
        });
    }

    /// Starts a write command (call only when [`on`]; always pair with
    /// [`Stream::end_command`]).
    pub fn begin_command(&self) {
        let d = dirty();
        UNIT.with(|u| {
            let u = &mut *u.borrow_mut();
            self.enter_unit(u, true);
            u.own.clear();
            u.own_set = false;
            u.own_at = None;
            u.dirty_at = d;
        });
    }

    /// Ends a write command that ran in database `db` with `args`: its own
    /// records (stated by its handler, else its arguments when it changed
    /// the dataset) go before the records of the blocked clients it served.
    pub fn end_command(&self, db: usize, args: &Args<'_>) {
        let d = dirty();
        UNIT.with(|u| {
            let u = &mut *u.borrow_mut();
            if !u.own_set {
                u.own.clear();
                if d != u.dirty_at {
                    let start = u.bytes.len();
                    encode_iter(&mut u.bytes, args.len(), args.iter());
                    u.own.push(Span {
                        db,
                        start,
                        end: u.bytes.len(),
                        group: 0,
                        repl_only: false,
                    });
                }
            }
            if SUPPRESSED.with(Cell::get) {
                u.own.clear();
            }
            let at = u.own_at.take().unwrap_or(u.spans.len());
            if at == u.spans.len() {
                u.spans
                    .extend(u.own.iter().map(|s| Span { db, group: 0, ..*s }));
            } else {
                u.spans
                    .splice(at..at, u.own.iter().map(|s| Span { db, group: 0, ..*s }));
            }
            u.own.clear();
            u.own_set = false;
            self.leave_unit(u);
        });
    }

    /// Records `args`, run in database `db`, for the replicas only (PUBLISH
    /// and SPUBLISH outside cluster mode: Redis's
    /// `forceCommandPropagation(c, PROPAGATE_REPL)`, so that the replicas'
    /// subscribers get the master's messages). Inside a transaction or a
    /// script it joins their records in order; alone it is a unit of its
    /// own. Nothing when recording is off or suppressed.
    pub fn replicas_only(&self, db: usize, args: &Args<'_>) {
        if !self.on() || SUPPRESSED.with(Cell::get) {
            return;
        }
        let push = |u: &mut Unit| {
            let start = u.bytes.len();
            encode_iter(&mut u.bytes, args.len(), args.iter());
            let s = Span {
                db,
                start,
                end: u.bytes.len(),
                group: u.group,
                repl_only: true,
            };
            u.spans.push(s);
        };
        UNIT.with(|u| {
            let u = &mut *u.borrow_mut();
            if u.depth > 0 {
                push(u);
            } else {
                self.enter_unit(u, true);
                push(u);
                self.leave_unit(u);
            }
        });
    }

    /// Starts a block whose records form one unit (EXEC). Returns whether
    /// recording is on; pass it to [`Stream::end_block`].
    pub fn begin_block(&self) -> bool {
        if !self.on() {
            return false;
        }
        self.enter(false);
        true
    }

    /// Ends a block started by [`Stream::begin_block`].
    pub fn end_block(&self, began: bool) {
        if began {
            self.leave();
        }
    }

    /// Starts a background write context (active expiry, eviction, serving
    /// blocked clients after a command): its records are one unit, ordered
    /// with commands. Pair with [`Stream::end_background`].
    pub fn begin_background(&self) {
        self.enter(false);
    }

    /// Ends [`Stream::begin_background`].
    pub fn end_background(&self) {
        self.leave();
    }

    /// Hands the unit built in `u` over and clears it: at once when every
    /// ticket is due, else into the waiting set (its thread waits for it in
    /// [`Stream::wait_durable`]). Tickets are handed over even when
    /// recording was turned off meanwhile (`recording` false), so no later
    /// unit waits forever.
    /// Runs with this thread's unit borrowed: sinks do not record.
    fn finish_unit(&self, u: &mut Unit, recording: bool) {
        if !recording {
            u.spans.clear();
        }
        if u.spans.is_empty() && u.tickets.is_empty() {
            u.clear();
            return;
        }
        let has = !u.spans.is_empty();
        if has && u.tickets.len() == 1 {
            // The common case: one command on one shard, its turn there,
            // nothing waiting.
            let (g, t) = u.tickets[0];
            let mut o = self.order.lock();
            if o.waiting.is_empty() && o.skips.is_empty() && o.is_due((g, t)) {
                let need = o.emit(u.records());
                o.next[g as usize] = t + 1;
                drop(o);
                u.need = u.need.max(need);
                u.clear();
                return;
            }
        }
        // A unit's place on a shard is its last ticket there; the earlier
        // ones, and all of them when it recorded nothing, are skips.
        u.positions.clear();
        u.skips.clear();
        if u.tickets.len() == 1 {
            let t = u.tickets[0];
            if has {
                u.positions.push(t);
            } else {
                u.skips.push(t);
            }
        } else {
            u.tickets.sort_unstable();
            for i in 0..u.tickets.len() {
                let t = u.tickets[i];
                let last = u.tickets.get(i + 1).is_none_or(|n| n.0 != t.0);
                if last && has {
                    u.positions.push(t);
                } else {
                    u.skips.push(t);
                }
            }
        }
        let mut work: smallvec::SmallVec<[u32; 8]> = smallvec::SmallVec::new();
        let mut o = self.order.lock();
        for &(g, t) in &u.skips {
            if o.is_due((g, t)) {
                o.next[g as usize] = t + 1;
            } else {
                o.skips.insert((g, t));
            }
            work.push(g);
        }
        let mut unmet = 0;
        for &p in &u.positions {
            if !o.is_due(p) {
                unmet += 1;
            }
        }
        if unmet == 0 {
            if has {
                let need = o.emit(u.records());
                u.need = u.need.max(need);
            }
            for &(g, t) in &u.positions {
                o.next[g as usize] = t + 1;
                work.push(g);
            }
        } else {
            let done = Arc::new(Delayed {
                need: AtomicU64::new(u64::MAX),
            });
            let idx = match o.free.pop() {
                Some(i) => i,
                None => {
                    o.units.push(None);
                    o.units.len() - 1
                }
            };
            for &p in &u.positions {
                if !o.is_due(p) {
                    o.waiting.insert(p, idx);
                }
            }
            o.units[idx] = Some(Waiting {
                bytes: std::mem::take(&mut u.bytes),
                spans: std::mem::take(&mut u.spans),
                positions: u.positions.clone(),
                unmet,
                done: done.clone(),
            });
            u.delayed.push(done);
            if Self::in_cycle(&o, idx) {
                self.break_cycle(&mut o, idx, &mut work);
            }
        }
        // Nothing can become due while nothing waits.
        let released = if o.skips.is_empty() && o.waiting.is_empty() {
            false
        } else {
            self.advance(&mut o, work)
        };
        drop(o);
        if released {
            self.released.notify_all();
        }
        u.clear();
    }

    /// Moves the shards in `work` past their due skips and releases the
    /// units that became due, transitively. True when a waiting unit was
    /// released.
    fn advance(&self, o: &mut Order, mut work: smallvec::SmallVec<[u32; 8]>) -> bool {
        let mut released = false;
        while let Some(g) = work.pop() {
            loop {
                let t = o.next_of(g);
                if o.skips.remove(&(g, t)) {
                    o.next[g as usize] = t + 1;
                    continue;
                }
                let Some(idx) = o.waiting.remove(&(g, t)) else {
                    break;
                };
                let w = o.units[idx].as_mut().expect("waiting unit");
                w.unmet -= 1;
                if w.unmet > 0 {
                    break;
                }
                let w = o.units[idx].take().expect("waiting unit");
                o.free.push(idx);
                let need = o.emit(w.records());
                w.done.need.store(need, Ordering::Release);
                released = true;
                for &(g2, t2) in &w.positions {
                    o.next[g2 as usize] = t2 + 1;
                    if g2 != g {
                        work.push(g2);
                    }
                }
            }
        }
        released
    }

    /// True when waiting unit `start` waits, through other waiting units,
    /// for itself: units that locked the same shards in opposite orders at
    /// different times. Every lock a unit takes at a later time than its
    /// first is meant to be cut into a unit of its own ([`Stream::cut`]),
    /// so this is a safety net against a stalled stream, not a path.
    fn in_cycle(o: &Order, start: usize) -> bool {
        let mut seen = vec![start];
        let mut stack = vec![start];
        while let Some(u) = stack.pop() {
            let Some(w) = o.units[u].as_ref() else {
                continue;
            };
            for &(g, t) in &w.positions {
                let due = o.next.get(g as usize).copied().unwrap_or(0);
                if due == t {
                    continue;
                }
                // The unit holding shard g's due ticket, if it waits too.
                let holder = o
                    .units
                    .iter()
                    .position(|x| x.as_ref().is_some_and(|x| x.positions.contains(&(g, due))));
                if let Some(v) = holder {
                    if v == start {
                        return true;
                    }
                    if !seen.contains(&v) {
                        seen.push(v);
                        stack.push(v);
                    }
                }
            }
        }
        false
    }

    /// Emits waiting unit `idx` out of turn: its positions not yet due
    /// become skips. Logged, as a unit's records now precede units whose
    /// effects they followed on some shard.
    fn break_cycle(&self, o: &mut Order, idx: usize, work: &mut smallvec::SmallVec<[u32; 8]>) {
        tracing::error!("propagation: units waiting for each other, one emitted out of order");
        let w = o.units[idx].take().expect("waiting unit");
        o.free.push(idx);
        for &(g, t) in &w.positions {
            if o.is_due((g, t)) {
                o.next[g as usize] = t + 1;
            } else {
                o.waiting.remove(&(g, t));
                o.skips.insert((g, t));
            }
            work.push(g);
        }
        let need = o.emit(w.records());
        w.done.need.store(need, Ordering::Release);
    }

    /// The sink position this thread's units must reach before its replies
    /// leave (0: none), after waiting for those of its units that were
    /// waiting for other threads' units; resets it.
    pub fn wait_durable(&self) -> u64 {
        let (mut need, delayed) = UNIT.with(|u| {
            let mut u = u.borrow_mut();
            if u.delayed.is_empty() {
                (std::mem::take(&mut u.need), Vec::new())
            } else {
                (std::mem::take(&mut u.need), std::mem::take(&mut u.delayed))
            }
        });
        for d in delayed {
            let mut o = self.order.lock();
            loop {
                let n = d.need.load(Ordering::Acquire);
                if n != u64::MAX {
                    need = need.max(n);
                    break;
                }
                self.released.wait(&mut o);
            }
        }
        need
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect(Mutex<Vec<String>>);

    impl Sink for Collect {
        fn append_unit(&self, recs: Records<'_>) -> u64 {
            let mut v = self.0.lock();
            for (_, r) in recs.iter() {
                let r = String::from_utf8_lossy(r).into_owned();
                v.push(r.split("\r\n").nth(2).unwrap_or_default().to_string());
            }
            v.len() as u64
        }
    }

    fn setup() -> (Stream, Arc<Collect>) {
        let s = Stream::default();
        let c = Arc::new(Collect::default());
        s.add_sink(c.clone());
        (s, c)
    }

    /// Hands over a unit recording `name` (None: nothing) with `tickets`;
    /// returns it (its need and its delayed entry).
    fn unit(s: &Stream, name: Option<&str>, tickets: &[(u32, u64)]) -> Unit {
        let mut u = Unit::default();
        if let Some(n) = name {
            let sp = u.push_record(&[n.as_bytes()]);
            u.spans.push(sp);
        }
        u.tickets.extend_from_slice(tickets);
        s.finish_unit(&mut u, true);
        u
    }

    fn emitted(c: &Collect) -> Vec<String> {
        c.0.lock().clone()
    }

    #[test]
    fn units_reach_the_sinks_in_ticket_order() {
        let (s, c) = setup();
        // B locked shard 1 after A and shard 2 first; C only shard 2 after B.
        let uc = unit(&s, Some("C"), &[(2, 1)]);
        let ub = unit(&s, Some("B"), &[(1, 1), (2, 0)]);
        assert!(emitted(&c).is_empty());
        assert_eq!((uc.delayed.len(), ub.delayed.len()), (1, 1));
        // A's earlier lock of shard 3 is a skip; its place is its last.
        let ua = unit(&s, Some("A"), &[(3, 0), (1, 0), (3, 1)]);
        assert_eq!(emitted(&c), ["A", "B", "C"]);
        assert_eq!(ua.need, 1);
        assert_eq!(ub.delayed[0].need.load(Ordering::Relaxed), 2);
        assert_eq!(uc.delayed[0].need.load(Ordering::Relaxed), 3);
        // A unit that recorded nothing only moves its shards on, also
        // when it comes after the unit that waits for it.
        unit(&s, Some("E"), &[(1, 4)]);
        unit(&s, None, &[(1, 2)]);
        unit(&s, Some("D"), &[(1, 3), (3, 2)]);
        assert_eq!(emitted(&c), ["A", "B", "C", "D", "E"]);
    }

    #[test]
    fn units_waiting_for_each_other_do_not_stall_the_stream() {
        let (s, c) = setup();
        // X before Y on shard 0, Y before X on shard 1.
        unit(&s, Some("X"), &[(0, 0), (1, 1)]);
        unit(&s, Some("Y"), &[(0, 1), (1, 0)]);
        assert_eq!(emitted(&c).len(), 2);
        unit(&s, Some("Z"), &[(0, 2), (1, 2)]);
        assert_eq!(emitted(&c).len(), 3);
        assert_eq!(emitted(&c)[2], "Z");
    }
}
