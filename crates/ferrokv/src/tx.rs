//! Transactions: the exec gate that makes EXEC atomic across cores, and the
//! WATCH registry (Redis 7.0 multi.c semantics).
//!
//! ## The exec gate
//! Every command runs while holding one stripe of [`GATE`] in shared (read)
//! mode: the stripe of the thread it runs on, so the lock word stays in that
//! core's cache and is never contended by other cores. Background work that
//! changes keys (active expiry) does the same. EXEC takes no stripe for
//! itself; it takes *every* stripe in exclusive (write) mode, in index
//! order, which waits for the commands in flight on all cores to finish and
//! holds off new ones, then checks its watched keys and runs the queued
//! commands through the ordinary handlers (which lock their shards as
//! usual). No command of another connection can therefore observe part of a
//! transaction, and no touch of a watched key can fall between the WATCH
//! check and the first queued command. Two EXECs take the stripes in the
//! same order (no deadlock); nobody holds a shard lock while waiting for a
//! stripe; a blocked client (BLPOP...) holds nothing while it waits.
//!
//! ## WATCH
//! A registry maps (database, key) to the clients watching it. Key changes
//! are reported through events.rs (`signalModifiedKey` points in every
//! command family, lazy and active expiry, and the database-wide forms for
//! FLUSHDB / FLUSHALL / SWAPDB), and [`touch_key`] marks each watcher dirty.
//! As in Redis 7.0, a key that was already logically expired when it was
//! watched counts as absent: its deletion by expiry (or a flush) is no
//! change, but a new value is; and a watched key that expires before EXEC
//! makes EXEC fail even when nobody deleted it yet (`isWatchedKeyExpired`).
//!
//! Lock order: registry mutex, then shard mutexes. Command handlers never
//! take the registry while holding a shard: their touches are queued
//! (events.rs) and applied after the handler.

use crate::db::{hash_key, shard_index, Shard};
use crate::events;
use crate::resp::parse::OwnedArgs;
use parking_lot::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// Number of gate stripes. Threads beyond this share stripes (still
/// correct: readers never exclude each other).
pub const STRIPES: usize = 16;

/// One stripe, on its own cache lines.
#[repr(align(128))]
struct Stripe(RwLock<()>);

/// What WATCH and the background steps work on: the parts of a server
/// (built by `Server::tx_env`; the fields are named as the server's).
pub struct Env<'a> {
    /// The databases whose keys are watched.
    pub keyspace: &'a crate::db::Keyspace,
    /// The exec gate and the WATCH registry.
    pub tx: &'a Transactions,
    /// The propagation stream a background step records in.
    pub propagation: &'a crate::propagate::Stream,
}

/// A server's transaction state: the exec gate and the WATCH registry
/// (`Server::tx`).
pub struct Transactions {
    gate: [Stripe; STRIPES],
    registry: Mutex<Registry>,
}

impl Default for Transactions {
    fn default() -> Self {
        Transactions {
            gate: [const { Stripe(RwLock::new(())) }; STRIPES],
            registry: Mutex::new(Registry { dbs: Vec::new() }),
        }
    }
}

/// Stripes are dealt to threads round-robin, once per thread (an index,
/// the same for every server in the process).
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static MY_STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

#[inline]
fn my_stripe() -> usize {
    MY_STRIPE.with(|m| {
        let v = m.get();
        if v != usize::MAX {
            return v;
        }
        let n = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
        m.set(n);
        n
    })
}

impl Transactions {
    /// Enters the gate in shared mode for one command (or one step of
    /// background key work) on this thread. Never call it while holding it
    /// on the same thread (a waiting EXEC would deadlock the recursion).
    #[inline]
    pub fn gate_shared(&self) -> RwLockReadGuard<'_, ()> {
        self.gate[my_stripe()].0.read()
    }

    /// [`Transactions::gate_shared`], giving up (None) when `busy` turns
    /// true while it waits: a script holding the whole gate past
    /// busy-reply-threshold makes the waiting commands answer -BUSY. The
    /// uncontended case costs what `gate_shared` does.
    #[inline]
    pub fn gate_shared_unless(&self, busy: impl Fn() -> bool) -> Option<RwLockReadGuard<'_, ()>> {
        let stripe = &self.gate[my_stripe()].0;
        if let Some(g) = stripe.try_read() {
            return Some(g);
        }
        loop {
            if busy() {
                return None;
            }
            if let Some(g) = stripe.try_read_for(std::time::Duration::from_millis(5)) {
                return Some(g);
            }
        }
    }

    /// Takes the whole gate (every stripe, in order): no other command runs
    /// on any core until the guards drop. The caller must not hold a
    /// stripe.
    pub fn gate_exclusive(&self) -> [RwLockWriteGuard<'_, ()>; STRIPES] {
        // In index order (from_fn calls in order): two takers never
        // deadlock.
        std::array::from_fn(|i| self.gate[i].0.write())
    }

    /// Locks the registry when some key is watched (`events`: the
    /// keyspace's gate; FLUSHDB, FLUSHALL and SWAPDB take it before their
    /// shard locks), else None.
    pub fn lock_registry(&self, events: &events::Gate) -> Option<MutexGuard<'_, Registry>> {
        if events.watching() {
            Some(self.registry.lock())
        } else {
            None
        }
    }
}

/// A connection's MULTI state: the queued commands (command id, arguments)
/// and whether queuing failed (EXEC then replies EXECABORT).
#[derive(Default)]
pub struct MultiState {
    /// Queued commands: command-table id and arguments.
    pub queued: Vec<(usize, OwnedArgs)>,
    /// Set when a command was rejected while queuing (flagTransaction).
    pub dirty_exec: bool,
    /// CLIENT LIST `multi-mem` of the queued commands: their arguments'
    /// lengths plus 8 bytes per argument (Redis's `mstate.argv_len_sums`).
    pub argv_mem: usize,
}

/// A watching client's flag, shared with the registry.
#[derive(Default)]
pub struct WatchState {
    dirty: AtomicBool,
}

/// The keys a connection watches.
pub struct Watching {
    state: Arc<WatchState>,
    keys: Vec<(usize, Box<[u8]>)>,
}

impl Watching {
    /// Number of watched keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when no key is watched.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// True when a watched key was touched since WATCH.
    pub fn is_dirty(&self) -> bool {
        self.state.dirty.load(Ordering::Acquire)
    }
}

struct WatchRef {
    client: Arc<WatchState>,
    /// The key was already logically expired when WATCH was called.
    expired: bool,
}

/// Watched keys per database: key → watchers.
pub struct Registry {
    dbs: Vec<HashMap<Box<[u8]>, Vec<WatchRef>, foldhash::fast::RandomState>>,
}

impl Registry {
    fn db(
        &mut self,
        db: usize,
    ) -> &mut HashMap<Box<[u8]>, Vec<WatchRef>, foldhash::fast::RandomState> {
        while self.dbs.len() <= db {
            self.dbs.push(HashMap::default());
        }
        &mut self.dbs[db]
    }
}

/// WATCH key...: adds the keys of database `db` to the client's watch list
/// (a key already watched in that database is skipped), recording whether
/// each was already expired at `now`.
pub fn watch(server: &Env<'_>, w: &mut Option<Box<Watching>>, db: usize, keys: &[&[u8]], now: u64) {
    let w = w.get_or_insert_with(|| {
        Box::new(Watching {
            state: Arc::new(WatchState::default()),
            keys: Vec::new(),
        })
    });
    for &key in keys {
        if w.keys.iter().any(|(d, k)| *d == db && **k == *key) {
            continue;
        }
        let h = hash_key(key);
        let expired = server.keyspace.db(db).lock(h).raw_expired(h, key, now);
        let mut reg = server.tx.registry.lock();
        let refs = reg.db(db).entry(key.into()).or_default();
        if refs.is_empty() {
            server.keyspace.events().add_watched(1);
        }
        refs.push(WatchRef {
            client: w.state.clone(),
            expired,
        });
        drop(reg);
        w.keys.push((db, key.into()));
    }
}

/// Forgets every key the client watches and its dirty flag (UNWATCH, EXEC,
/// DISCARD, RESET, disconnect).
pub fn unwatch_all(server: &Env<'_>, w: &mut Option<Box<Watching>>) {
    let Some(w) = w.take() else {
        return;
    };
    if w.keys.is_empty() {
        return;
    }
    let mut reg = server.tx.registry.lock();
    for (db, key) in w.keys.iter() {
        let m = reg.db(*db);
        if let Some(refs) = m.get_mut(key) {
            refs.retain(|r| !Arc::ptr_eq(&r.client, &w.state));
            if refs.is_empty() {
                m.remove(key);
                server.keyspace.events().add_watched(-1);
            }
        }
    }
}

/// True when EXEC must fail because of WATCH: a watched key was touched, or
/// one that was alive when watched has expired since (multi.c
/// `isWatchedKeyExpired`). Call under the exclusive gate.
pub fn watch_failed(server: &Env<'_>, w: &Option<Box<Watching>>, now: u64) -> bool {
    let Some(w) = w else {
        return false;
    };
    if w.is_dirty() {
        return true;
    }
    let mut reg = server.tx.registry.lock();
    for (db, key) in w.keys.iter() {
        let was_expired = reg
            .db(*db)
            .get(key)
            .and_then(|refs| refs.iter().find(|r| Arc::ptr_eq(&r.client, &w.state)))
            .is_some_and(|r| r.expired);
        if was_expired {
            continue;
        }
        let h = hash_key(key);
        if server.keyspace.db(*db).lock(h).raw_expired(h, key, now) {
            return true;
        }
    }
    false
}

/// Marks every client watching `key` of `db` dirty (multi.c
/// `touchWatchedKey`), except watchers that saw the key already expired
/// while it is still absent (a deleted expired key is no logical change).
pub fn touch_key(server: &Env<'_>, db: usize, key: &[u8]) {
    let mut reg = server.tx.registry.lock();
    let Some(refs) = reg.dbs.get_mut(db).and_then(|m| m.get_mut(key)) else {
        return;
    };
    let mut exists: Option<bool> = None;
    for r in refs.iter_mut() {
        if r.expired {
            let e = *exists.get_or_insert_with(|| {
                let h = hash_key(key);
                server.keyspace.db(db).lock(h).contains_raw(h, key)
            });
            if !e {
                r.expired = false;
                continue;
            }
        }
        r.client.dirty.store(true, Ordering::Release);
    }
}

/// The watch side of FLUSHDB / FLUSHALL / SWAPDB (db.c
/// `touchAllWatchedKeysInDb`): database `emptied` (all its shards held in
/// `shards`, indexed by shard) is about to lose its contents, replaced by
/// those of `replaced` (SWAPDB) or by nothing. Watchers of keys that exist
/// in either are marked dirty, except where an expired key stays expired or
/// is replaced by nothing, or a missing key is replaced by an expired one.
pub fn touch_db(
    reg: &mut Registry,
    emptied: usize,
    shards: &[MutexGuard<'_, Shard>],
    replaced: Option<&[MutexGuard<'_, Shard>]>,
    now: u64,
) {
    let Some(m) = reg.dbs.get_mut(emptied) else {
        return;
    };
    for (key, refs) in m.iter_mut() {
        let h = hash_key(key);
        let i = shard_index(h);
        let in_emptied = shards[i].contains_raw(h, key);
        let in_replaced = replaced.is_some_and(|r| r[i].contains_raw(h, key));
        if !in_emptied && !in_replaced {
            continue;
        }
        let replaced_expired = replaced.is_some_and(|r| r[i].raw_expired(h, key, now));
        for r in refs.iter_mut() {
            if r.expired {
                if !in_replaced {
                    r.expired = false;
                    continue;
                } else if replaced_expired {
                    continue;
                }
            } else if !in_emptied && replaced_expired {
                r.expired = true;
                continue;
            }
            r.client.dirty.store(true, Ordering::Release);
        }
    }
}

/// Active expiry step wrapper: runs `f` (which deletes expired keys of one
/// shard) inside the gate, then applies the events it queued, so an EXEC
/// never misses an expiry-driven touch.
///
/// With the AOF on, the step also holds the AOF gate (taken after the
/// stripe, the order every command uses) so its expiry `DEL`s are logged in
/// execution order.
pub fn background_step(server: &Env<'_>, deliver: &dyn events::Deliver, f: &mut dyn FnMut()) {
    let _g = server.tx.gate_shared();
    let prop = server.propagation.on();
    if prop {
        server.propagation.begin_background();
    }
    f();
    if prop {
        server.propagation.end_background();
    }
    if events::pending() {
        events::drain(deliver);
    }
}
