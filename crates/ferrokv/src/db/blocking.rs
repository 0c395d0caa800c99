//! Clients blocked on keys (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP,
//! BZPOPMIN, BZPOPMAX, BZMPOP): the generic machinery, modelled on the
//! behaviour of Redis's blocked.c (`blockForKeys`,
//! `handleClientsBlockedOnKeys`, `replyToBlockedClientTimedOut`) with a
//! multi-threaded hand-off.
//!
//! A [`Waiter`] records the database and keys a client waits on and a
//! [`BlockOp`]: the type-specific code that tries to serve it from one of
//! those keys (pop, move, ...) and encodes its reply. The waiter sits in a
//! per-key FIFO inside the key's shard ([`BlockedKeys`], a field of
//! [`Shard`]), so registering and serving happen under the shard lock:
//!
//! - the blocking command checks its keys and registers the waiter while
//!   holding their shards, so no push can slip in between;
//! - a command that adds data to a key (LPUSH, LMOVE's destination...)
//!   calls [`serve`] before it releases its locks: the waiters of that key
//!   are served first-come first-served, each one's element popped and its
//!   reply sent through its channel, atomically with the push: no other
//!   client can see the element in between. A waiter for another type
//!   (a BLPOP waiter on a key that became a sorted set) is skipped and the
//!   ones behind it are still served, as Redis serves only the clients
//!   blocked for the key's type;
//! - a waiter on several keys (possibly in several shards) is claimed by a
//!   small state machine (WAITING → BUSY → DONE), so exactly one key serves
//!   it; the connection's timeout, CLIENT UNBLOCK and disconnect claim it
//!   the same way (WAITING → DONE) and then remove it from every queue.
//!
//! Lock order is ascending (database, shard) everywhere. Serving a BLMOVE
//! needs the destination's shard too: [`KeyLocks::acquire`] takes it at once
//! when it sorts after every shard already held (blocking wait, deadlock
//! free), else only with `try_lock`. When that fails, or when the front
//! waiter is being served from another key by another thread, the key is
//! *deferred*: the pusher releases its locks, then [`serve_deferred`] locks
//! the key again together with what it needs and serves it. The only
//! remaining window is there: between the push and the deferred serving
//! another client may pop the new element (it is never lost or duplicated;
//! the waiter simply keeps waiting). The same deferred path serves keys
//! created by commands outside the list family (RENAME, COPY, MOVE,
//! SWAPDB...), through [`signal_after_command`].

use super::keyspace::KeyLocks;
use super::{hash_key, Keyspace};
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

const WAITING: u8 = 0;
const BUSY: u8 = 1;
const DONE: u8 = 2;

/// How a blocked client is woken.
#[derive(Debug)]
pub enum Wake {
    /// Served: the encoded reply.
    Served(Vec<u8>),
    /// CLIENT UNBLOCK id [TIMEOUT]: reply as on timeout.
    Timeout,
    /// CLIENT UNBLOCK id ERROR: "-UNBLOCKED client unblocked via CLIENT
    /// UNBLOCK".
    Error,
    /// The server became a replica (blocked.c `disconnectAllBlockedClients`):
    /// "-UNBLOCKED force unblock from blocking operation, instance state
    /// changed (master -> replica?)", and the connection is closed after it.
    StateChanged,
}

/// The result of one attempt to serve a waiter from a key.
#[derive(Debug)]
pub enum Attempt {
    /// Served: the reply (RESP bytes in the waiter's protocol).
    Served(Vec<u8>),
    /// The key holds nothing (missing or empty): the waiter keeps waiting
    /// and so do the ones behind it.
    NotReady,
    /// The key holds a value of a type this waiter does not pop from (a
    /// list waiter on a sorted set): it keeps waiting, and the waiters
    /// behind it are tried.
    Skip,
    /// The waiter needs a shard that could not be locked without risking a
    /// deadlock: retry after the current locks are released.
    Retry,
}

/// Type-specific serving code of a blocked command.
pub trait BlockOp: Send + Sync {
    /// Tries to serve the waiter from `key` (one of its keys, in database
    /// `cx.db`, whose shard is held in `cx.locks`). On success the op has
    /// applied its changes (pop, push to the destination, deletion of an
    /// emptied key) and called [`ServeCx::signal`] for any key it added data
    /// to.
    fn serve(&self, cx: &mut ServeCx<'_, '_>, key: &[u8]) -> Attempt;
}

/// What serving blocked clients needs from the layers above (the server
/// implements it), so that this layer depends on nothing above it.
pub trait Host: Sync {
    /// The keyspace the waiters are registered in.
    fn keyspace(&self) -> &super::keyspace::Keyspace;
    /// Hands the records of a round of locks over as one propagation unit
    /// (propagate.rs `Stream::cut`).
    fn cut_unit(&self);
    /// `list-max-listpack-size`, for pushes to a destination list.
    fn list_fill(&self) -> i64;
    /// list-compress-depth for a list the served command creates.
    fn list_compress_depth(&self) -> u64;
    /// Counts an error reply (INFO errorstats) given to a served client.
    fn record_error(&self, msg: &str);
}

/// What a [`BlockOp`] gets to work with.
pub struct ServeCx<'l, 'a> {
    /// The layers above (configuration, statistics).
    pub host: &'a dyn Host,
    /// The shards held; more may be taken with [`KeyLocks::acquire`].
    pub locks: &'l mut KeyLocks<'a>,
    /// The waiter's database.
    pub db: usize,
    /// Current time, ms since the epoch (lazy expiry).
    pub now: u64,
    /// True when the waiter speaks RESP3.
    pub resp3: bool,
    work: &'l mut Vec<(usize, Box<[u8]>)>,
}

impl ServeCx<'_, '_> {
    /// Notes that `key` of database `db` received data, so its own waiters
    /// are served next (a BLMOVE's destination).
    pub fn signal(&mut self, db: usize, key: &[u8]) {
        self.work.push((db, key.into()));
    }
}

/// A blocked client's registration.
pub struct Waiter {
    /// The client's id.
    pub client_id: u64,
    /// Database of the keys.
    pub db: usize,
    /// Distinct keys waited on, in the command's order.
    pub keys: Vec<Box<[u8]>>,
    /// RESP3 client.
    pub resp3: bool,
    /// The serving code.
    pub op: Box<dyn BlockOp>,
    state: AtomicU8,
    tx: Mutex<Option<tokio::sync::oneshot::Sender<Wake>>>,
    /// What the layers above want done when the waiter is served (the
    /// slow log entry of the blocked command, which Redis 7.0 logs only
    /// once the client is served: `updateStatsOnUnblock`). Taken by the
    /// serving thread into [`take_served_notes`]'s list.
    note: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter")
            .field("client_id", &self.client_id)
            .field("db", &self.db)
            .field("state", &self.state.load(Ordering::Relaxed))
            .finish()
    }
}

impl Waiter {
    /// A new waiter and the receiver its wake-up arrives on. Duplicate keys
    /// are dropped (a client waits once per key, as Redis's blockForKeys).
    pub fn new(
        client_id: u64,
        db: usize,
        keys: Vec<Box<[u8]>>,
        resp3: bool,
        op: Box<dyn BlockOp>,
    ) -> (Arc<Waiter>, tokio::sync::oneshot::Receiver<Wake>) {
        let mut uniq: Vec<Box<[u8]>> = Vec::with_capacity(keys.len());
        for k in keys {
            if !uniq.contains(&k) {
                uniq.push(k);
            }
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let w = Arc::new(Waiter {
            client_id,
            db,
            keys: uniq,
            resp3,
            op,
            state: AtomicU8::new(WAITING),
            tx: Mutex::new(Some(tx)),
            note: Mutex::new(None),
        });
        (w, rx)
    }

    /// Claims the waiter for a wake-up that is not a serve (timeout, CLIENT
    /// UNBLOCK, disconnect). False when it was already served or claimed.
    pub fn claim(&self) -> bool {
        loop {
            match self
                .state
                .compare_exchange(WAITING, DONE, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(DONE) => return false,
                Err(_) => std::thread::yield_now(),
            }
        }
    }

    /// Attaches `note`, handed to the serving thread when the waiter is
    /// served ([`take_served_notes`]). When the waiter was already served
    /// or claimed, the note is given back instead.
    pub fn set_note(
        &self,
        note: Box<dyn std::any::Any + Send>,
    ) -> Option<Box<dyn std::any::Any + Send>> {
        let mut slot = self.note.lock();
        if self.state.load(Ordering::Acquire) == DONE {
            return Some(note);
        }
        *slot = Some(note);
        None
    }

    /// Takes the note attached by [`Waiter::set_note`] (CLIENT UNBLOCK
    /// logs it itself).
    pub fn take_note(&self) -> Option<Box<dyn std::any::Any + Send>> {
        self.note.lock().take()
    }

    /// Sends a wake-up (after a successful [`Waiter::claim`] or serve).
    pub fn wake(&self, w: Wake) {
        if let Some(tx) = self.tx.lock().take() {
            let _ = tx.send(w);
        }
    }
}

/// The per-key FIFOs of waiters of one shard. Empty (one null pointer)
/// unless some client blocks on a key of the shard.
#[derive(Default)]
pub struct BlockedKeys(Option<Box<WaitQueues>>);

/// Key → FIFO of waiters.
type WaitQueues = HashMap<Box<[u8]>, VecDeque<Arc<Waiter>>>;

impl BlockedKeys {
    /// True when some waiter is queued on `key`.
    #[inline]
    pub fn has(&self, key: &[u8]) -> bool {
        self.0.as_ref().is_some_and(|m| m.contains_key(key))
    }

    /// Appends `w` to `key`'s queue; `waiters` counts the keyspace's
    /// registered waiters.
    pub fn add(&mut self, key: &[u8], w: Arc<Waiter>, waiters: &AtomicUsize) {
        self.0
            .get_or_insert_with(Default::default)
            .entry(key.into())
            .or_default()
            .push_back(w);
        waiters.fetch_add(1, Ordering::Relaxed);
    }

    /// Removes `w` from `key`'s queue (if present).
    pub fn remove(&mut self, key: &[u8], w: &Arc<Waiter>, waiters: &AtomicUsize) {
        let Some(m) = self.0.as_mut() else { return };
        if let Some(q) = m.get_mut(key) {
            let before = q.len();
            q.retain(|x| !Arc::ptr_eq(x, w));
            waiters.fetch_sub(before - q.len(), Ordering::Relaxed);
            if q.is_empty() {
                m.remove(key);
            }
        }
        if m.is_empty() {
            self.0 = None;
        }
    }

    fn nth(&self, key: &[u8], i: usize) -> Option<Arc<Waiter>> {
        self.0.as_ref()?.get(key)?.get(i).cloned()
    }

    fn remove_at(&mut self, key: &[u8], i: usize, waiters: &AtomicUsize) {
        let Some(m) = self.0.as_mut() else { return };
        if let Some(q) = m.get_mut(key) {
            if q.remove(i).is_some() {
                waiters.fetch_sub(1, Ordering::Relaxed);
            }
            if q.is_empty() {
                m.remove(key);
            }
        }
        if m.is_empty() {
            self.0 = None;
        }
    }

    /// Keys with waiters (SWAPDB re-check).
    pub fn keys(&self) -> Vec<Box<[u8]>> {
        self.0
            .as_ref()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }
}

/// Registers `w` on each of its keys. The caller holds every one of their
/// shards (the same guards under which it found the keys empty).
pub fn register(locks: &mut KeyLocks<'_>, w: &Arc<Waiter>) {
    for k in &w.keys {
        let h = hash_key(k);
        let sh = locks.shard(w.db, h);
        sh.blocked.add(k, w.clone(), &sh.signals.waiters);
    }
}

/// Removes `w` from every queue it is in, locking one shard at a time.
pub fn unregister(ks: &Keyspace, w: &Arc<Waiter>) {
    for k in &w.keys {
        let h = hash_key(k);
        let mut sh = ks.db(w.db).lock(h);
        let sh = &mut *sh;
        sh.blocked.remove(k, w, &sh.signals.waiters);
    }
}

/// Keys to serve again once the current locks are released.
pub type Deferred = Vec<(usize, Box<[u8]>)>;

/// Serves the waiters of `key` (database `db`, shard held in `locks`)
/// and, transitively, of any key their serving added data to. Keys that
/// could not be served now are appended to `deferred`.
pub fn serve<'a>(
    host: &'a dyn Host,
    locks: &mut KeyLocks<'a>,
    db: usize,
    key: &[u8],
    now: u64,
    deferred: &mut Deferred,
) {
    if !host.keyspace().any_waiters() {
        return;
    }
    if held() {
        // Inside MULTI/EXEC or a script: served once it is over, from
        // the state it left (Redis's handleClientsBlockedOnKeys).
        deferred.push((db, key.into()));
        return;
    }
    let mut work: Vec<(usize, Box<[u8]>)> = vec![(db, key.into())];
    while let Some((db, key)) = work.pop() {
        let h = hash_key(&key);
        if !locks.holds(db, h) {
            deferred.push((db, key));
            continue;
        }
        // Index of the waiter tried next: waiters skipped (another type)
        // stay in place, in order.
        let mut i = 0;
        loop {
            let Some(w) = locks.shard(db, h).blocked.nth(&key, i) else {
                break;
            };
            match w
                .state
                .compare_exchange(WAITING, BUSY, Ordering::AcqRel, Ordering::Acquire)
            {
                Err(DONE) => {
                    // Served from another key, timed out or unblocked: its
                    // connection removes it from the other queues.
                    let sh = locks.shard(db, h);
                    sh.blocked.remove_at(&key, i, &sh.signals.waiters);
                    continue;
                }
                Err(_) => {
                    // Being served from another key by another thread.
                    deferred.push((db, key.clone()));
                    break;
                }
                Ok(_) => {}
            }
            // The client's records are a group of their own in the
            // command's unit (no MULTI around the push and the pop).
            crate::propagate::next_group();
            let mut cx = ServeCx {
                host,
                locks: &mut *locks,
                db,
                now,
                resp3: w.resp3,
                work: &mut work,
            };
            match w.op.serve(&mut cx, &key) {
                Attempt::Served(reply) => {
                    w.state.store(DONE, Ordering::Release);
                    if let Some(n) = w.take_note() {
                        SERVED_NOTES.with(|v| v.borrow_mut().push(n));
                    }
                    let sh = locks.shard(db, h);
                    sh.blocked.remove_at(&key, i, &sh.signals.waiters);
                    w.wake(Wake::Served(reply));
                }
                Attempt::NotReady => {
                    w.state.store(WAITING, Ordering::Release);
                    break;
                }
                Attempt::Skip => {
                    w.state.store(WAITING, Ordering::Release);
                    i += 1;
                }
                Attempt::Retry => {
                    w.state.store(WAITING, Ordering::Release);
                    deferred.push((db, key.clone()));
                    break;
                }
            }
        }
    }
}

/// Serves the waiters of `keys` (database `db`) after data was added to
/// them, while the caller's `locks` (holding their shards) are still held,
/// then releases the locks and serves any key that had to be deferred.
pub fn serve_and_release<'a>(
    host: &'a dyn Host,
    mut locks: KeyLocks<'a>,
    db: usize,
    keys: &[&[u8]],
    now: u64,
) {
    if !host.keyspace().any_waiters() {
        return;
    }
    let mut deferred: Deferred = Vec::new();
    for k in keys {
        serve(host, &mut locks, db, k, now, &mut deferred);
    }
    drop(locks);
    if !deferred.is_empty() {
        serve_deferred(host, deferred, now);
    }
}

thread_local! {
    /// Notes of the waiters this thread served ([`Waiter::set_note`]),
    /// oldest first, until the running command takes them.
    static SERVED_NOTES: std::cell::RefCell<Vec<Box<dyn std::any::Any + Send>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The notes of the waiters served on this thread since the last call,
/// in serving order (empty, without allocating, when none were).
pub fn take_served_notes() -> Vec<Box<dyn std::any::Any + Send>> {
    SERVED_NOTES.with(|v| std::mem::take(&mut *v.borrow_mut()))
}

/// True when waiters served on this thread left notes.
#[inline]
pub fn has_served_notes() -> bool {
    SERVED_NOTES.with(|v| !v.borrow().is_empty())
}

thread_local! {
    static STASH: std::cell::RefCell<Deferred> = const { std::cell::RefCell::new(Vec::new()) };
    static HOLD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Holds (`true`) or releases the serving of blocked clients on this
/// thread, returning the previous setting: while held, keys that became
/// ready are stashed (see [`take_stashed`]) instead of served, so that a
/// MULTI/EXEC block or a script serves its waiters only once it is over,
/// from the state it left (Redis 7.0 serves blocked clients after the
/// command that made their keys ready: `handleClientsBlockedOnKeys`).
pub fn set_hold(on: bool) -> bool {
    HOLD.with(|h| h.replace(on))
}

/// True while [`set_hold`] holds serving on this thread.
fn held() -> bool {
    HOLD.with(std::cell::Cell::get)
}

/// Puts back keys [`take_stashed`] took (a suspended script's), before any
/// stashed since.
pub fn restore_stashed(d: Deferred) {
    STASH.with(|s| {
        let mut s = s.borrow_mut();
        let later = std::mem::replace(&mut *s, d);
        s.extend(later);
    });
}

/// The keys [`serve_and_release`] left to serve after the running command
/// (while effects are recorded), to pass to [`serve_deferred`].
pub fn take_stashed() -> Deferred {
    STASH.with(|s| std::mem::take(&mut *s.borrow_mut()))
}

/// Serves deferred keys after the caller released its locks, retrying
/// (and yielding) until no key is left to serve.
///
/// While effects are recorded, a single command's deferred keys are
/// stashed and served after its unit (cmd/mod.rs `run`, see
/// [`take_stashed`]), and a background context hands each round's locks
/// over as a unit of its own (`Stream::cut`): a unit takes all its locks at
/// one time (propagate.rs).
pub fn serve_deferred(host: &dyn Host, mut deferred: Deferred, now: u64) {
    if crate::propagate::Stream::in_single_command() || held() {
        STASH.with(|s| s.borrow_mut().extend(deferred));
        return;
    }
    let mut rounds = 0u32;
    while !deferred.is_empty() {
        let batch = std::mem::take(&mut deferred);
        for (db, key) in batch {
            let h = hash_key(&key);
            let mut locks = host.keyspace().lock_keys(&[(db, h)]);
            serve(host, &mut locks, db, &key, now, &mut deferred);
            drop(locks);
            host.cut_unit();
        }
        rounds += 1;
        if !deferred.is_empty() {
            if rounds > 64 {
                std::thread::sleep(std::time::Duration::from_micros(50));
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// After a write command outside the blocking-aware families: serves the
/// waiters of the keys it may have created. `keys` are the command's key
/// arguments in database `db`; `all` asks for every key with waiters in
/// every database (MOVE, SWAPDB, COPY ... DB, FLUSH*, where data can
/// appear in another database). Not atomic with the command itself (see
/// the module documentation).
pub fn signal_after_command(host: &dyn Host, db: usize, keys: &[&[u8]], all: bool, now: u64) {
    if !host.keyspace().any_waiters() {
        return;
    }
    let mut deferred: Deferred = keys.iter().map(|k| (db, Box::from(*k))).collect();
    if all {
        for d in 0..host.keyspace().db_count() {
            for i in 0..super::keyspace::SHARDS {
                let ks = host.keyspace().db(d).shard_at(i).lock().blocked.keys();
                deferred.extend(ks.into_iter().map(|k| (d, k)));
            }
        }
    }
    serve_deferred(host, deferred, now);
}
