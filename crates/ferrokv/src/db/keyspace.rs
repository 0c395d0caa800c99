//! The keyspace: `databases` numbered databases, each split into
//! [`SHARDS`] shards by the high bits of the key's hash. A shard is a mutex
//! around its [`Dict`] of entries and its index of keys with a TTL.
//!
//! Locking rules (see ../../../../DESIGN.md, "Concurrency"):
//! - a single-key command locks the one shard of its key;
//! - a multi-key command locks every shard it touches through [`KeyLocks`],
//!   which takes them in ascending (database, shard) order, so two commands
//!   can never wait on each other;
//! - whole-database commands (FLUSHDB, DBSIZE, KEYS, SWAPDB) take the shards
//!   in the same order.
//!
//! Expiry is lazy (every lookup through [`Shard::get`] deletes an expired
//! key first, so no command sees one) and active ([`Keyspace::active_expire_cycle`],
//! modelled on Redis's `activeExpireCycle` in expire.c).

use super::blocking::BlockedKeys;
use super::dict::{hash_key, Dict};
use super::value::Entry;
use crate::util::rand_u64;
use indexmap::IndexSet;
use parking_lot::{Mutex, MutexGuard};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// log2 of the number of shards per database.
pub const SHARD_BITS: u32 = 8;
/// Shards per database.
pub const SHARDS: usize = 1 << SHARD_BITS;

/// Keys sampled per active-expiry round (Redis's ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP).
pub const EXPIRE_SAMPLE: usize = 20;

type KeySet = IndexSet<Box<[u8]>, foldhash::fast::RandomState>;

/// Which shard of a database a key hash belongs to.
#[inline]
pub fn shard_index(hash: u64) -> usize {
    (hash >> (64 - SHARD_BITS)) as usize
}

/// One shard: its keys and the subset that has a TTL.
#[derive(Default)]
pub struct Shard {
    dict: Dict<Entry>,
    volatile: KeySet,
    /// Keys deleted by lazy expiry since the counter was last drained.
    expired: u64,
    /// Clients blocked on keys of this shard (BLPOP...), per key, FIFO.
    /// They stay with the shard's position, not its data: SWAPDB and
    /// FLUSH* leave them in place.
    pub blocked: BlockedKeys,
    /// Index of the database this shard belongs to (for expiry events;
    /// positional like `blocked`).
    db: u32,
}

impl Shard {
    /// Number of keys, including expired ones not yet reclaimed.
    #[inline]
    pub fn len(&self) -> usize {
        self.dict.len()
    }

    /// True when the shard holds no key.
    pub fn is_empty(&self) -> bool {
        self.dict.is_empty()
    }

    /// Number of keys with a TTL.
    pub fn volatile_len(&self) -> usize {
        self.volatile.len()
    }

    /// Looks a key up, deleting it first when it has expired at `now` (ms).
    #[inline]
    pub fn get(&mut self, h: u64, key: &[u8], now: u64) -> Option<&mut Entry> {
        if self.dict.get(h, key).is_some_and(|e| e.is_expired(now)) {
            // With the AOF on, only a write context may delete (and log a
            // DEL); elsewhere the key is just reported absent.
            if crate::persist::aof::on()
                && !crate::persist::aof::expired(self as *const Shard as usize, key)
            {
                return None;
            }
            self.remove(h, key);
            self.expired += 1;
            crate::events::expired(self.db as usize, key);
            return None;
        }
        self.dict.get_mut(h, key)
    }

    /// True when `key` is in the table, expired or not (Redis's `dictFind`
    /// on the main dict, used by WATCH's flush rules).
    #[inline]
    pub fn contains_raw(&self, h: u64, key: &[u8]) -> bool {
        self.dict.get(h, key).is_some()
    }

    /// True when `key` is in the table but logically expired at `now`
    /// (Redis's `keyIsExpired`).
    #[inline]
    pub fn raw_expired(&self, h: u64, key: &[u8], now: u64) -> bool {
        self.dict.get(h, key).is_some_and(|e| e.is_expired(now))
    }

    /// Read-only lookup that treats an expired key as absent without
    /// deleting it.
    #[inline]
    pub fn peek(&self, h: u64, key: &[u8], now: u64) -> Option<&Entry> {
        self.dict.get(h, key).filter(|e| !e.is_expired(now))
    }

    /// True when `key` exists (and is not expired).
    #[inline]
    pub fn contains(&mut self, h: u64, key: &[u8], now: u64) -> bool {
        self.get(h, key, now).is_some()
    }

    /// Stores `entry` under `key`, replacing any previous entry, and keeps
    /// the TTL index in step. Returns the previous entry.
    pub fn insert(&mut self, h: u64, key: &[u8], entry: Entry) -> Option<Entry> {
        let has_ttl = entry.expire_at != 0;
        let old = self.dict.insert(h, key, entry);
        let had_ttl = old.as_ref().is_some_and(|o| o.expire_at != 0);
        if has_ttl && !had_ttl {
            self.volatile.insert(key.into());
        } else if had_ttl && !has_ttl {
            self.volatile.swap_remove(key);
        }
        old
    }

    /// Removes `key` (expired or not), returning its entry.
    pub fn remove(&mut self, h: u64, key: &[u8]) -> Option<Entry> {
        let e = self.dict.remove(h, key)?;
        if e.expire_at != 0 {
            self.volatile.swap_remove(key);
        }
        Some(e)
    }

    /// Sets (at > 0) or clears (at == 0) the TTL of an existing key. Returns
    /// false when the key does not exist.
    pub fn set_expire(&mut self, h: u64, key: &[u8], at: u64) -> bool {
        let Some(e) = self.dict.get_mut(h, key) else {
            return false;
        };
        let had = e.expire_at != 0;
        e.expire_at = at;
        if at != 0 && !had {
            self.volatile.insert(key.into());
        } else if at == 0 && had {
            self.volatile.swap_remove(key);
        }
        true
    }

    /// Empties the shard and returns its former keys as a detached shard,
    /// so the caller can free them after releasing the lock (FLUSHALL /
    /// FLUSHDB ASYNC). The lazy-expiry counter stays with `self`.
    pub fn take(&mut self) -> Shard {
        Shard {
            dict: std::mem::take(&mut self.dict),
            volatile: std::mem::take(&mut self.volatile),
            expired: 0,
            blocked: BlockedKeys::default(),
            db: self.db,
        }
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.dict.clear();
        self.volatile = KeySet::default();
    }

    /// Iterates over live and not-yet-reclaimed entries.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Entry)> {
        self.dict.iter()
    }

    /// One SCAN step over this shard (see [`Dict::scan_step`]).
    pub fn scan_step(&self, cursor: u64, f: impl FnMut(&[u8], &Entry)) -> u64 {
        self.dict.scan_step(cursor, f)
    }

    /// A random key, or None when empty (may be expired; the caller checks).
    pub fn random_key(&self) -> Option<Vec<u8>> {
        self.dict.random_entry(rand_u64).map(|(k, _)| k.to_vec())
    }

    /// Drains the lazy-expiry counter.
    pub fn take_expired(&mut self) -> u64 {
        std::mem::take(&mut self.expired)
    }

    /// One active-expiry pass: samples up to [`EXPIRE_SAMPLE`] keys with a
    /// TTL, deletes the expired ones, and repeats while more than 25% of the
    /// sample had expired. Returns (sampled, expired).
    pub fn expire_pass(&mut self, now: u64, deadline: Instant) -> (usize, usize) {
        let (mut sampled, mut expired) = (0, 0);
        loop {
            let n = self.volatile.len();
            if n == 0 {
                break;
            }
            let take = n.min(EXPIRE_SAMPLE);
            let mut round_expired = 0;
            for _ in 0..take {
                let len = self.volatile.len();
                if len == 0 {
                    break;
                }
                let i = (rand_u64() % len as u64) as usize;
                let key = self.volatile.get_index(i).expect("in range").clone();
                let h = hash_key(&key);
                if self.dict.get(h, &key).is_some_and(|e| e.is_expired(now))
                    && (!crate::persist::aof::on()
                        || crate::persist::aof::expired(self as *const Shard as usize, &key))
                {
                    self.remove(h, &key);
                    crate::events::expired(self.db as usize, &key);
                    round_expired += 1;
                }
            }
            sampled += take;
            expired += round_expired;
            if round_expired * 4 <= take || Instant::now() >= deadline {
                break;
            }
        }
        (sampled, expired)
    }
}

/// One database: its shards.
pub struct Db {
    shards: Box<[Mutex<Shard>]>,
}

impl Db {
    fn new(index: usize) -> Self {
        Db {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        db: index as u32,
                        ..Shard::default()
                    })
                })
                .collect(),
        }
    }

    /// Locks the shard of a key hash.
    #[inline]
    pub fn lock(&self, h: u64) -> MutexGuard<'_, Shard> {
        self.shards[shard_index(h)].lock()
    }

    /// Locks every shard in ascending order.
    pub fn lock_all(&self) -> Vec<MutexGuard<'_, Shard>> {
        self.shards.iter().map(|s| s.lock()).collect()
    }

    /// Number of keys (DBSIZE), counting keys that expired but were not yet
    /// reclaimed, as Redis does.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    /// True when the database holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of keys with a TTL.
    pub fn volatile_len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().volatile_len()).sum()
    }

    /// The shard at position `i` (0..SHARDS), for iteration (SCAN, KEYS).
    pub fn shard_at(&self, i: usize) -> &Mutex<Shard> {
        &self.shards[i]
    }
}

/// All databases plus keyspace-wide counters.
pub struct Keyspace {
    dbs: Box<[Db]>,
    /// Keys removed by active expiry (INFO expired_keys adds lazy ones).
    pub active_expired: AtomicU64,
    /// DEBUG SET-ACTIVE-EXPIRE switch.
    pub active_expire_enabled: AtomicBool,
    /// Number of active-expiry cycles that ran out of time (INFO
    /// expired_time_cap_reached_count).
    pub expire_time_cap_reached: AtomicU64,
    expire_cursor: AtomicU64,
}

impl Keyspace {
    /// `n` empty databases (the `databases` directive).
    pub fn new(n: usize) -> Self {
        Keyspace {
            dbs: (0..n.max(1)).map(Db::new).collect(),
            active_expired: AtomicU64::new(0),
            active_expire_enabled: AtomicBool::new(true),
            expire_time_cap_reached: AtomicU64::new(0),
            expire_cursor: AtomicU64::new(0),
        }
    }

    /// Number of databases.
    #[inline]
    pub fn db_count(&self) -> usize {
        self.dbs.len()
    }

    /// Database `i` (the caller validated the index).
    #[inline]
    pub fn db(&self, i: usize) -> &Db {
        &self.dbs[i]
    }

    /// Locks the shards of the given (database, key hash) pairs in the global
    /// order, deduplicated.
    pub fn lock_keys(&self, keys: &[(usize, u64)]) -> KeyLocks<'_> {
        let mut ids: Vec<(usize, usize)> = keys.iter().map(|&(d, h)| (d, shard_index(h))).collect();
        ids.sort_unstable();
        ids.dedup();
        let guards = ids
            .iter()
            .map(|&(d, s)| self.dbs[d].shards[s].lock())
            .collect();
        KeyLocks {
            ks: self,
            ids,
            guards,
        }
    }

    /// Wraps a guard already held on the shard of key hash `h` in database
    /// `db` (from [`Db::lock`]) as [`KeyLocks`], without unlocking it
    /// (serving blocked clients after a single-key write).
    pub fn adopt<'a>(&'a self, db: usize, h: u64, guard: MutexGuard<'a, Shard>) -> KeyLocks<'a> {
        KeyLocks {
            ks: self,
            ids: vec![(db, shard_index(h))],
            guards: vec![guard],
        }
    }

    /// Swaps the contents of two databases atomically (SWAPDB).
    pub fn swap_dbs(&self, a: usize, b: usize) {
        self.swap_dbs_with(a, b, |_, _| {});
    }

    /// SWAPDB with a hook: `before(lower, higher)` runs with every shard of
    /// both databases held, just before their contents are exchanged (WATCH
    /// uses it to see what each side holds).
    pub fn swap_dbs_with(
        &self,
        a: usize,
        b: usize,
        before: impl FnOnce(&[MutexGuard<'_, Shard>], &[MutexGuard<'_, Shard>]),
    ) {
        if a == b {
            return;
        }
        let (lo, hi) = (a.min(b), a.max(b));
        let mut ga = self.dbs[lo].lock_all();
        let mut gb = self.dbs[hi].lock_all();
        before(&ga, &gb);
        for (x, y) in ga.iter_mut().zip(gb.iter_mut()) {
            // Data moves, blocked clients stay with their database.
            std::mem::swap(&mut x.dict, &mut y.dict);
            std::mem::swap(&mut x.volatile, &mut y.volatile);
            std::mem::swap(&mut x.expired, &mut y.expired);
        }
    }

    /// Total keys removed by expiry so far, lazy and active.
    pub fn expired_keys(&self) -> u64 {
        let mut lazy = 0;
        for db in self.dbs.iter() {
            for s in db.shards.iter() {
                lazy += s.lock().expired;
            }
        }
        lazy + self.active_expired.load(Ordering::Relaxed)
    }

    /// One active expiry cycle over all databases, bounded by `budget` of
    /// wall time; continues next time from where it stopped. Each shard's
    /// pass runs inside `step` (the caller wraps it in the exec gate and
    /// applies the expiry events it queued, see tx.rs).
    pub fn active_expire_cycle(
        &self,
        now: u64,
        budget: Duration,
        step: &mut dyn FnMut(&mut dyn FnMut()),
    ) {
        if !self.active_expire_enabled.load(Ordering::Relaxed) {
            return;
        }
        let deadline = Instant::now() + budget;
        let total = (self.dbs.len() * SHARDS) as u64;
        let start = self.expire_cursor.load(Ordering::Relaxed);
        let mut i = 0;
        while i < total {
            let pos = (start + i) % total;
            let db = &self.dbs[(pos / SHARDS as u64) as usize];
            let shard = &db.shards[(pos % SHARDS as u64) as usize];
            if shard.lock().volatile_len() > 0 {
                step(&mut || {
                    let (_, exp) = shard.lock().expire_pass(now, deadline);
                    self.active_expired.fetch_add(exp as u64, Ordering::Relaxed);
                });
            }
            i += 1;
            if Instant::now() >= deadline {
                self.expire_time_cap_reached.fetch_add(1, Ordering::Relaxed);
                break;
            }
        }
        self.expire_cursor
            .store((start + i) % total.max(1), Ordering::Relaxed);
    }
}

/// Guards over several shards, possibly of several databases, taken in
/// global order by [`Keyspace::lock_keys`].
pub struct KeyLocks<'a> {
    ks: &'a Keyspace,
    ids: Vec<(usize, usize)>,
    guards: Vec<MutexGuard<'a, Shard>>,
}

impl<'a> KeyLocks<'a> {
    /// The locked shard holding key hash `h` of database `db`. Panics if that
    /// shard was not locked (a bug in the caller).
    #[inline]
    pub fn shard(&mut self, db: usize, h: u64) -> &mut Shard {
        let i = self
            .ids
            .binary_search(&(db, shard_index(h)))
            .expect("shard locked by lock_keys");
        &mut self.guards[i]
    }

    /// Shared access to the locked shard holding key hash `h` of database
    /// `db`, so that values of several shards can be read at once (SINTER,
    /// SUNION...). Panics if that shard was not locked.
    #[inline]
    pub fn shard_ref(&self, db: usize, h: u64) -> &Shard {
        let i = self
            .ids
            .binary_search(&(db, shard_index(h)))
            .expect("shard locked by lock_keys");
        &self.guards[i]
    }

    /// True when the shard of key hash `h` in database `db` is held.
    #[inline]
    pub fn holds(&self, db: usize, h: u64) -> bool {
        self.ids.binary_search(&(db, shard_index(h))).is_ok()
    }

    /// Adds the shard of key hash `h` in database `db` to the held set
    /// without risking a deadlock: waits for it when it sorts after every
    /// shard held (the global order), else only tries. Returns true when the
    /// shard is held afterwards (used by blocked-client serving, see
    /// db/blocking.rs).
    pub fn acquire(&mut self, db: usize, h: u64) -> bool {
        let id = (db, shard_index(h));
        match self.ids.binary_search(&id) {
            Ok(_) => true,
            Err(pos) => {
                let m = &self.ks.dbs[db].shards[id.1];
                let g = if pos == self.ids.len() {
                    Some(m.lock())
                } else {
                    m.try_lock()
                };
                match g {
                    Some(g) => {
                        self.ids.insert(pos, id);
                        self.guards.insert(pos, g);
                        true
                    }
                    None => false,
                }
            }
        }
    }
}
