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
use super::dict::{hash_key, BucketHint, Dict, Lookup};
use super::value::{Entry, Value};
use crate::util::rand_u64;
use parking_lot::{Mutex, MutexGuard};
use smallvec::SmallVec;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// log2 of the number of shards per database.
pub const SHARD_BITS: u32 = 8;
/// Shards per database.
pub const SHARDS: usize = 1 << SHARD_BITS;

/// Keys sampled per active-expiry round (Redis's ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP).
pub const EXPIRE_SAMPLE: usize = 20;

/// Most hash fields one shard's active expiry pass deletes per cycle.
pub const FIELDS_PER_PASS: usize = 1000;

/// The hash -> expiry-time table of [`Volatile`]: open addressing with
/// linear probing over 16-byte slots `(key hash, expiry ms)`, an expiry of 0
/// marking an empty slot (a stored TTL is never 0). At most 3/4 full, it
/// costs 21-43 bytes per key with a TTL; deletion shifts the following
/// entries back, so there are no tombstones. Random sampling (for active
/// expiry) picks a random slot and walks to the next occupied one.
#[derive(Default)]
struct TtlTable {
    slots: Vec<(u64, u64)>,
    len: usize,
}

impl TtlTable {
    #[inline]
    fn home(&self, h: u64) -> usize {
        // High bits of a multiplicative hash: the key hash's own high bits
        // are equal for every key of a shard.
        let bits = self.slots.len().trailing_zeros();
        (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    /// Slot index of `h`, if present.
    #[inline]
    fn find(&self, h: u64) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(h);
        loop {
            let (sh, at) = self.slots[i];
            if at == 0 {
                return None;
            }
            if sh == h {
                return Some(i);
            }
            i = (i + 1) & mask;
        }
    }

    #[inline]
    fn get(&self, h: u64) -> Option<u64> {
        self.find(h).map(|i| self.slots[i].1)
    }

    #[inline]
    fn contains(&self, h: u64) -> bool {
        self.find(h).is_some()
    }

    /// Inserts or updates; `at` must not be 0.
    fn insert(&mut self, h: u64, at: u64) {
        if let Some(i) = self.find(h) {
            self.slots[i].1 = at;
            return;
        }
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.resize((self.slots.len() * 2).max(8));
        }
        self.place(h, at);
        self.len += 1;
    }

    fn place(&mut self, h: u64, at: u64) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(h);
        while self.slots[i].1 != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = (h, at);
    }

    /// Removes `h`; returns its expiry time.
    fn remove(&mut self, h: u64) -> Option<u64> {
        let mut i = self.find(h)?;
        let at = self.slots[i].1;
        let mask = self.slots.len() - 1;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let (sh, sat) = self.slots[j];
            if sat == 0 {
                break;
            }
            let k = self.home(sh);
            // The entry at j may move back to the hole at i unless its home
            // lies cyclically in (i, j].
            let stays = if i <= j {
                i < k && k <= j
            } else {
                i < k || k <= j
            };
            if !stays {
                self.slots[i] = self.slots[j];
                i = j;
            }
        }
        self.slots[i] = (0, 0);
        self.len -= 1;
        if self.slots.len() > 8 && self.len * 8 < self.slots.len() {
            self.resize((self.slots.len() / 2).max(8));
        }
        Some(at)
    }

    fn resize(&mut self, cap: usize) {
        let old = std::mem::replace(&mut self.slots, vec![(0, 0); cap]);
        for (h, at) in old {
            if at != 0 {
                self.place(h, at);
            }
        }
    }

    /// A roughly uniform random entry; None when empty.
    fn sample(&self, r: u64) -> Option<(u64, u64)> {
        if self.len == 0 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = r as usize & mask;
        while self.slots[i].1 == 0 {
            i = (i + 1) & mask;
        }
        Some(self.slots[i])
    }
}

/// A shard's TTLs: for each key with a TTL (marked in its dict node), its
/// absolute expiry time in ms since the epoch.
///
/// The index ([`TtlTable`]) is keyed by the key's 64-bit hash, not its
/// bytes, so an entry costs one 16-byte slot and no copy of the key. Two keys of a
/// shard whose hashes collide (about 1 in 2^64 per pair) cannot share that
/// slot: the later one goes to `overflow`, keyed by its bytes. A marked
/// key is in exactly one of the two; `overflow` is checked first.
#[derive(Default)]
struct Volatile {
    by_hash: TtlTable,
    overflow: HashMap<Box<[u8]>, u64, foldhash::fast::RandomState>,
}

impl Volatile {
    #[inline]
    fn len(&self) -> usize {
        self.by_hash.len + self.overflow.len()
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.by_hash.len == 0 && self.overflow.is_empty()
    }

    /// Expiry time of a marked key.
    #[inline]
    fn get(&self, h: u64, key: &[u8]) -> u64 {
        if !self.overflow.is_empty() {
            if let Some(&at) = self.overflow.get(key) {
                return at;
            }
        }
        self.by_hash.get(h).unwrap_or(0)
    }

    /// Sets the expiry time of a key that was marked (`had`) or is
    /// becoming marked.
    fn set(&mut self, h: u64, key: &[u8], at: u64, had: bool) {
        if had {
            if let Some(x) = self.overflow.get_mut(key) {
                *x = at;
            } else {
                self.by_hash.insert(h, at);
            }
        } else if self.by_hash.contains(h) {
            self.overflow.insert(key.into(), at);
        } else {
            self.by_hash.insert(h, at);
        }
    }

    /// Forgets a marked key; returns its expiry time.
    fn remove(&mut self, h: u64, key: &[u8]) -> u64 {
        if !self.overflow.is_empty() {
            if let Some(at) = self.overflow.remove(key) {
                return at;
            }
        }
        self.by_hash.remove(h).unwrap_or(0)
    }
}

/// Which shard of a database a key hash belongs to.
#[inline]
pub fn shard_index(hash: u64) -> usize {
    (hash >> (64 - SHARD_BITS)) as usize
}

/// One shard: its keys and the subset that has a TTL.
///
/// Memory layout (see db/dict.rs): each key is one 64-byte node holding the
/// key (inline up to 22 bytes), its [`Entry`] (value, short strings inline,
/// and the 32-bit LRU/LFU field) and the chain link. A key with a TTL is
/// marked in its node and has its expiry time in the volatile index, so keys
/// without a TTL (most of them) pay nothing for expiry and a lookup only
/// consults the index for marked keys.
#[derive(Default)]
pub struct Shard {
    dict: Dict<Entry>,
    volatile: Volatile,
    /// Keys deleted by lazy expiry since the counter was last drained.
    expired: u64,
    /// Clients blocked on keys of this shard (BLPOP...), per key, FIFO.
    /// They stay with the shard's position, not its data: SWAPDB and
    /// FLUSH* leave them in place.
    pub blocked: BlockedKeys,
    /// Index of the database this shard belongs to (for expiry events;
    /// positional like `blocked`).
    db: u32,
    /// The shard's place in the propagation stream (tickets handed to the
    /// write contexts that lock it; positional like `blocked`).
    seq: crate::propagate::ShardSeq,
    /// Point-in-time copies that have not copied this shard yet
    /// ([`ShardCopier`]; positional like `blocked`).
    copiers: Vec<Arc<dyn ShardCopier>>,
    /// Keys saved before a write changed them, for the one armed copier
    /// (see [`ShardCopier`]).
    saved: Option<Box<SavedKeys>>,
    /// The keyspace's signals (shared by all its shards).
    pub(crate) signals: Arc<Signals>,
    /// Cluster mode: the key hashes of each of this shard's 64 hash slots
    /// (db/slotindex.rs); None otherwise.
    slots: Option<Box<super::slotindex::SlotIndex>>,
    /// Keys whose hash has field TTLs, by their earliest one (Redis 7.4's
    /// per-database `hexpires`); None until the shard has one.
    hfe: Option<Box<HfeIndex>>,
}

/// The keys of a shard whose hash value has field TTLs, each with the
/// earliest expiry time (ms) of its fields, for the active expiry of fields
/// ([`Shard::expire_fields_pass`]). Kept in step by
/// [`Shard::insert_with_expire`], [`Shard::remove`] and the commands that
/// change field TTLs in place ([`Shard::note_field_ttls`]); a key deleted
/// another way leaves a stale entry that the pass drops when it is due.
#[derive(Default)]
struct HfeIndex {
    by_key: HashMap<Box<[u8]>, u64, foldhash::fast::RandomState>,
    by_time: BTreeSet<(u64, Box<[u8]>)>,
}

impl HfeIndex {
    /// Sets (Some) or removes (None) `key`'s entry; the change of the
    /// number of keys indexed (-1, 0 or +1).
    fn set(&mut self, key: &[u8], min: Option<u64>) -> i64 {
        let old = self.by_key.get(key).copied();
        if old == min {
            return 0;
        }
        if let Some(t) = old {
            self.by_time.remove(&(t, Box::<[u8]>::from(key)));
        }
        match min {
            Some(t) => {
                self.by_time.insert((t, key.into()));
                self.by_key.insert(key.into(), t);
                if old.is_none() {
                    1
                } else {
                    0
                }
            }
            None => {
                self.by_key.remove(key);
                -1
            }
        }
    }

    /// The earliest entry due before `now`.
    fn due(&self, now: u64) -> Option<&(u64, Box<[u8]>)> {
        self.by_time.first().filter(|(t, _)| *t < now)
    }
}

/// The earliest field expiry time of `e`'s value when it is a hash with
/// field TTLs.
#[inline]
fn field_ttl_min(e: &Entry) -> Option<u64> {
    match &e.value {
        Value::Hash(h) => h.min_field_ttl(),
        _ => None,
    }
}

/// What the shards of one keyspace read or count while they work, shared
/// by the keyspace and every shard: per server, not per process, so two
/// servers can live in one process.
#[derive(Debug, Default)]
pub struct Signals {
    /// Whether key changes have anything to do (events.rs): notification
    /// flags, watched keys, client-side caching.
    pub events: crate::events::Gate,
    /// The effects of write commands are recorded (the flag of the
    /// server's propagation stream, propagate.rs): an expired key is then
    /// deleted only inside a write context, which propagates its DEL;
    /// elsewhere it is reported missing.
    pub propagating: Arc<AtomicBool>,
    /// Clients blocked on keys of this keyspace (db/blocking.rs), for a
    /// one-load "anyone blocked?" check.
    pub waiters: std::sync::atomic::AtomicUsize,
    /// Keys whose hash has field TTLs, over all shards (Redis 7.4's
    /// `subexpiry` count); decides whether an RDB file needs version 12.
    pub hfe_keys: std::sync::atomic::AtomicI64,
    /// Hash fields deleted by expiry, lazy and active (INFO
    /// `expired_subkeys`).
    pub expired_fields: AtomicU64,
    /// Keys (database, key) with waiters that expired (lazily or actively)
    /// since the last [`Keyspace::take_expired_waited`]: their blocked
    /// XREADGROUP clients are told the key is gone, as Redis's
    /// `signalDeletedKeyAsReady` (db.c) does.
    expired_waited: parking_lot::Mutex<Vec<(usize, Box<[u8]>)>>,
    /// True while `expired_waited` is not empty (one-load check).
    expired_waited_any: AtomicBool,
    /// End of the CLIENT PAUSE WRITE/ALL in force (ms since the epoch, 0
    /// for none), kept by the server's pause state (`Pause::end_flag`):
    /// until then a lookup reports an expired key absent without deleting
    /// it, as Redis 7.0's `expireIfNeeded` skips lazy expiry while clients
    /// are paused (pause.tcl "both active and passive expires are
    /// skipped").
    expiry_paused_until: Arc<AtomicU64>,
}

impl Signals {
    /// Notes that `key` of database `db`, on which clients wait, expired.
    fn note_expired_waited(&self, db: usize, key: &[u8]) {
        self.expired_waited.lock().push((db, key.into()));
        self.expired_waited_any.store(true, Ordering::Release);
    }
}

/// The keys a write was about to change in a shard that a point-in-time
/// copy has not copied yet, each as the copy serialised it before the
/// change (None: it did not exist, or had expired, when the copy began).
pub type SavedKeys = HashMap<Box<[u8]>, Option<Vec<u8>>, foldhash::fast::RandomState>;

/// A point-in-time copy of the keyspace taken while writers go on (what
/// Redis gets from fork(): the AOF rewrite's base, and a replica's full
/// sync next), copy-on-write per key as fork() is per page. Armed on every
/// shard while writes are paused ([`Keyspace::arm_copier`]). Until the
/// copy's walk reaches a shard ([`Keyspace::copy_shard`]), a write that is
/// about to change a key of it first saves that key as it is
/// ([`ShardCopier::save_key`], once per key); the walk then serialises the
/// shard's other keys as they are and adds the saved ones, so every key is
/// copied as it was when the copy began. A write that changes a whole shard
/// (FLUSHALL, FLUSHDB, SWAPDB) makes it copy the shard first.
pub trait ShardCopier: Send + Sync {
    /// Copies `shard` (locked; database `db`, index `idx` in it): its keys
    /// as they are, but the ones in `saved`, then the saved ones as they
    /// were.
    fn copy(&self, db: usize, idx: usize, shard: &Shard, saved: Option<&SavedKeys>);
    /// Serialises one key as it is now (`expire_at`: ms since the epoch, 0
    /// = no TTL) into `out`; false when it is left out (expired when the
    /// copy began).
    fn save_key(&self, key: &[u8], entry: &Entry, expire_at: u64, out: &mut Vec<u8>) -> bool;
}

/// Locks `m` and, inside a write context while effects are recorded, takes
/// the shard's ticket (propagate.rs): every lock a write context takes goes
/// through here.
#[inline]
fn lock_shard(m: &Mutex<Shard>) -> MutexGuard<'_, Shard> {
    let mut g = m.lock();
    locked(&mut g);
    g
}

/// What every lock a write may follow does once taken (see [`lock_shard`]).
#[inline]
fn locked(g: &mut Shard) {
    crate::propagate::ticket(&mut g.seq);
}

/// True when the marked key `key` has expired at `now`.
#[inline]
fn vol_expired(vol: &Volatile, h: u64, key: &[u8], now: u64) -> bool {
    let at = vol.get(h, key);
    at != 0 && at < now
}

impl Shard {
    /// Before a change of `key`: a point-in-time copy that has not copied
    /// this shard yet saves the key as it is ([`ShardCopier`]). Only writes
    /// change keys: while effects are recorded, only inside a write
    /// context (elsewhere lookups are reads: an expired key is hidden, not
    /// deleted). One load when no copy is armed.
    #[inline]
    fn before_write(&mut self, h: u64, key: &[u8]) {
        if !self.copiers.is_empty() {
            self.save_before_write(h, key);
        }
    }

    #[cold]
    fn save_before_write(&mut self, h: u64, key: &[u8]) {
        if self.signals.propagating.load(Ordering::Relaxed)
            && !crate::propagate::Stream::in_write_context()
        {
            return;
        }
        let saved = self.saved.get_or_insert_with(Default::default);
        if saved.contains_key(key) {
            return;
        }
        let bytes = match self.dict.get_marked(h, key) {
            Some((e, marked)) => {
                let at = if marked { self.volatile.get(h, key) } else { 0 };
                let mut b = Vec::new();
                self.copiers[0].save_key(key, e, at, &mut b).then_some(b)
            }
            None => None,
        };
        saved.insert(key.into(), bytes);
    }

    /// Before a change of the whole shard (FLUSH*, SWAPDB): every armed
    /// copy copies it now.
    fn copy_now(&mut self) {
        if self.copiers.is_empty() {
            return;
        }
        let (db, idx) = (self.db as usize, self.seq.gid as usize % SHARDS);
        let saved = self.saved.take();
        for c in std::mem::take(&mut self.copiers) {
            c.copy(db, idx, self, saved.as_deref());
        }
    }

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

    /// The shapes of this shard's key table and of its TTL index (DEBUG
    /// HTSTATS). The TTL index is open addressing (one entry per occupied
    /// slot); its rare hash-collision overflow entries count as one slot
    /// each.
    pub fn table_stats(&self) -> (super::TableStats, super::TableStats) {
        let v = &self.volatile;
        let mut ttl = super::TableStats::open_addressing(v.by_hash.slots.len(), v.by_hash.len);
        ttl.add_buckets(1, v.overflow.len());
        (self.dict.table_stats(), ttl)
    }

    /// Cluster mode: the number of keys of hash `slot` (one of this
    /// shard's), expired or not; None without a slot index.
    pub fn count_in_slot(&self, slot: u16) -> Option<usize> {
        self.slots.as_ref().map(|ix| ix.count(slot))
    }

    /// Cluster mode: up to `max` keys of hash `slot` (one of this shard's),
    /// expired or not; None without a slot index.
    pub fn keys_in_slot(&self, slot: u16, max: usize) -> Option<Vec<Vec<u8>>> {
        let ix = self.slots.as_ref()?;
        let mut out = Vec::new();
        'outer: for h in ix.hashes(slot) {
            // Every key of the bucket whose full hash is h (normally one).
            for k in self.dict.bucket_keys(h) {
                if out.len() >= max {
                    break 'outer;
                }
                if hash_key(k) == h {
                    out.push(k.to_vec());
                }
            }
        }
        Some(out)
    }

    /// Looks a key up, deleting it first when it has expired at `now` (ms).
    #[inline]
    pub fn get(&mut self, h: u64, key: &[u8], now: u64) -> Option<&mut Entry> {
        self.before_write(h, key);
        let db = self.db as usize;
        let vol = &self.volatile;
        let signals = &self.signals;
        // With the AOF on, only a write context may delete (and log a DEL);
        // elsewhere an expired key is just reported absent.
        let mut hidden = false;
        let found = self.dict.get_mut_or_remove(h, key, |_, marked| {
            if !(marked && vol_expired(vol, h, key, now)) {
                return false;
            }
            if signals.expiry_paused_until.load(Ordering::Relaxed) >= now {
                // Writes are paused: no lazy expiry (Redis's expireIfNeeded
                // with checkClientPauseTimeoutAndReturnIfPaused).
                hidden = true;
                return false;
            }
            if signals.propagating.load(Ordering::Relaxed) && !crate::propagate::deleted(db, key) {
                hidden = true;
                crate::propagate::hidden_expired(db, key);
                return false;
            }
            true
        });
        match found {
            Lookup::Found(e) => {
                if hidden {
                    None
                } else {
                    Some(e)
                }
            }
            Lookup::Missing => None,
            Lookup::Removed(e) => {
                super::lazyfree::free_entry(e, super::lazyfree::Reason::Expire);
                self.volatile.remove(h, key);
                if let Some(ix) = self.slots.as_mut() {
                    ix.remove(h);
                }
                self.expired += 1;
                self.signals.events.expired(self.db as usize, key);
                if self.blocked.has(key) {
                    self.signals.note_expired_waited(self.db as usize, key);
                }
                None
            }
        }
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
        self.dict.get(h, key).is_some() && self.is_expired(h, key, now)
    }

    /// The entry of `key` whether or not it is logically expired (Redis's
    /// `dictFind` on the main dict, as MEMORY USAGE uses it); no side
    /// effect.
    #[inline]
    pub fn peek_raw(&self, h: u64, key: &[u8]) -> Option<&Entry> {
        self.dict.get(h, key)
    }

    /// Bookkeeping bytes of the shard for MEMORY STATS, in bytes: (the key
    /// nodes plus the bucket array, the TTL index, the cluster slot index).
    /// Values and keys longer than the inline 22 bytes are not included.
    pub fn overhead(&self) -> (usize, usize, usize) {
        let main = self.dict.len() * Dict::<Entry>::NODE_BYTES
            + self.dict.buckets() * std::mem::size_of::<usize>();
        let v = &self.volatile;
        let expires = v.by_hash.slots.capacity() * 16
            + v.overflow.capacity() * (std::mem::size_of::<(Box<[u8]>, u64)>() + 1)
            + v.overflow.keys().map(|k| k.len()).sum::<usize>();
        let slots = self.slots.as_ref().map_or(0, |ix| ix.bytes());
        (main, expires, slots)
    }

    /// Read-only lookup that treats an expired key as absent without
    /// deleting it.
    #[inline]
    pub fn peek(&self, h: u64, key: &[u8], now: u64) -> Option<&Entry> {
        match self.dict.get_marked(h, key)? {
            (_, true) if vol_expired(&self.volatile, h, key, now) => None,
            (e, _) => Some(e),
        }
    }

    /// True when `key` exists (and is not expired).
    #[inline]
    pub fn contains(&mut self, h: u64, key: &[u8], now: u64) -> bool {
        self.get(h, key, now).is_some()
    }

    /// The absolute expiry time of `key` in ms since the epoch, or 0 when it
    /// has no TTL or does not exist. Does not check whether it passed.
    #[inline]
    pub fn expire_at(&self, h: u64, key: &[u8]) -> u64 {
        if self.volatile.is_empty() {
            return 0;
        }
        match self.dict.mark(h, key) {
            Some(true) => self.volatile.get(h, key),
            _ => 0,
        }
    }

    /// True when `key` has a TTL that has passed at `now` (ms).
    #[inline]
    pub fn is_expired(&self, h: u64, key: &[u8], now: u64) -> bool {
        let at = self.expire_at(h, key);
        at != 0 && at < now
    }

    /// Stores `entry` under `key` without a TTL, replacing any previous
    /// entry (and its TTL). Returns the previous entry.
    #[inline]
    pub fn insert(&mut self, h: u64, key: &[u8], entry: Entry) -> Option<Entry> {
        self.insert_with_expire(h, key, entry, 0)
    }

    /// Stores `entry` under `key` with expiry time `at` (ms since the epoch;
    /// 0 = no TTL), replacing any previous entry and TTL. Returns the
    /// previous entry.
    pub fn insert_with_expire(
        &mut self,
        h: u64,
        key: &[u8],
        entry: Entry,
        at: u64,
    ) -> Option<Entry> {
        self.before_write(h, key);
        let min = field_ttl_min(&entry);
        let old = self.dict.insert_marked(h, key, entry, at != 0);
        if old.is_none() {
            if let Some(ix) = self.slots.as_mut() {
                ix.insert(h);
            }
        }
        let had = matches!(old, Some((_, true)));
        self.note_expire(h, key, had, at);
        if min.is_some() || self.hfe.is_some() {
            self.note_field_ttls(key, min);
        }
        old.map(|(e, _)| e)
    }

    /// Records that the hash at `key` now has its earliest field TTL at
    /// `min` (None: no field TTL, or no such hash any more), for the active
    /// expiry of fields. Commands that change field TTLs in place call it.
    pub fn note_field_ttls(&mut self, key: &[u8], min: Option<u64>) {
        if min.is_none() && self.hfe.is_none() {
            return;
        }
        let ix = self.hfe.get_or_insert_with(Default::default);
        let d = ix.set(key, min);
        if d != 0 {
            self.signals
                .hfe_keys
                .fetch_add(d, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Number of keys of this shard whose hash has field TTLs.
    pub fn field_ttl_keys(&self) -> usize {
        self.hfe.as_ref().map_or(0, |ix| ix.by_key.len())
    }

    /// Brings the volatile index in step after the mark of `key` changed
    /// from `had` (it had a TTL) to `at != 0`.
    #[inline]
    fn note_expire(&mut self, h: u64, key: &[u8], had: bool, at: u64) {
        if at != 0 {
            self.volatile.set(h, key, at, had);
        } else if had {
            self.volatile.remove(h, key);
        }
    }

    /// Removes `key` (expired or not), returning its entry.
    #[inline]
    pub fn remove(&mut self, h: u64, key: &[u8]) -> Option<Entry> {
        self.before_write(h, key);
        let (_, e, marked) = self.dict.remove_marked(h, key)?;
        if marked {
            self.volatile.remove(h, key);
        }
        if let Some(ix) = self.slots.as_mut() {
            ix.remove(h);
        }
        if self.hfe.is_some() {
            self.note_field_ttls(key, None);
        }
        Some(e)
    }

    /// Removes `key` (expired or not), returning its entry and its expiry
    /// time (ms since the epoch, 0 = no TTL), for RENAME and MOVE.
    pub fn remove_with_expire(&mut self, h: u64, key: &[u8]) -> Option<(Entry, u64)> {
        self.before_write(h, key);
        let (_, e, marked) = self.dict.remove_marked(h, key)?;
        let at = if marked {
            self.volatile.remove(h, key)
        } else {
            0
        };
        if let Some(ix) = self.slots.as_mut() {
            ix.remove(h);
        }
        if self.hfe.is_some() {
            self.note_field_ttls(key, None);
        }
        Some((e, at))
    }

    /// Sets (at > 0) or clears (at == 0) the TTL of an existing key. Returns
    /// false when the key does not exist.
    pub fn set_expire(&mut self, h: u64, key: &[u8], at: u64) -> bool {
        self.before_write(h, key);
        let Some(had) = self.dict.mark(h, key) else {
            return false;
        };
        if had != (at != 0) {
            self.dict.set_mark(h, key, at != 0);
        }
        self.note_expire(h, key, had, at);
        true
    }

    /// Empties the shard and returns its former keys as a detached shard,
    /// so the caller can free them after releasing the lock (FLUSHALL /
    /// FLUSHDB ASYNC). The lazy-expiry counter stays with `self`.
    pub fn take(&mut self) -> Shard {
        self.copy_now();
        let hint = self.dict.detach_hint();
        let dict = std::mem::take(&mut self.dict);
        if let Some(h) = hint {
            self.dict.attach_hint(h);
        }
        let slots = self.slots.as_mut().map(std::mem::take);
        let hfe = self.hfe.take();
        if let Some(ix) = &hfe {
            self.signals
                .hfe_keys
                .fetch_sub(ix.by_key.len() as i64, Ordering::Relaxed);
        }
        Shard {
            dict,
            volatile: std::mem::take(&mut self.volatile),
            hfe,
            expired: 0,
            blocked: BlockedKeys::default(),
            db: self.db,
            seq: Default::default(),
            copiers: Vec::new(),
            saved: None,
            signals: self.signals.clone(),
            slots,
        }
    }

    /// Iterates over live and not-yet-reclaimed entries with their expiry
    /// time (ms since the epoch, 0 = no TTL).
    pub fn iter_with_expire(&self) -> impl Iterator<Item = (&[u8], &Entry, u64)> {
        self.dict.iter_marked().map(|(k, e, marked)| {
            let at = if marked {
                self.volatile.get(hash_key(k), k)
            } else {
                0
            };
            (k, e, at)
        })
    }

    /// One SCAN step over this shard (see [`Dict::scan_step_marked`]),
    /// passing each key's expiry time (ms since the epoch, 0 = no TTL).
    pub fn scan_step_with_expire(&self, cursor: u64, mut f: impl FnMut(&[u8], &Entry, u64)) -> u64 {
        self.dict.scan_step_marked(cursor, |k, e, marked| {
            let at = if marked {
                self.volatile.get(hash_key(k), k)
            } else {
                0
            };
            f(k, e, at)
        })
    }

    /// A random key, or None when empty (may be expired; the caller checks).
    pub fn random_key(&self) -> Option<Vec<u8>> {
        self.dict.random_entry(rand_u64).map(|(k, _)| k.to_vec())
    }

    /// A random key of the TTL index (`r` is a random number): its bytes
    /// when its TTL has passed at `now`.
    fn sample_expired(&self, r: u64, now: u64) -> Option<Box<[u8]>> {
        let n = self.volatile.by_hash.len;
        let i = (r % self.volatile.len().max(1) as u64) as usize;
        if i >= n {
            return self
                .volatile
                .overflow
                .iter()
                .nth(i - n)
                .filter(|(_, &at)| at < now)
                .map(|(k, _)| k.clone());
        }
        let (h, at) = self.volatile.by_hash.sample(r >> 16)?;
        if at >= now {
            return None;
        }
        // The index knows the key by its hash: find the marked node with
        // that hash (its bucket is the SCAN cursor `h`) that is not in the
        // overflow map.
        let ov = &self.volatile.overflow;
        let mut found = None;
        self.dict.scan_step_marked(h, |k, _, marked| {
            if found.is_none() && marked && hash_key(k) == h && !ov.contains_key(k) {
                found = Some(Box::<[u8]>::from(k));
            }
        });
        found
    }

    /// One eviction sample (maxmemory, evict.rs): a random key with its
    /// LRU/LFU field and expiry time (0 = none), drawn from the whole
    /// shard, or from its keys with a TTL when `volatile`. `r` is a random
    /// number. None when there is nothing to draw from.
    pub fn sample_for_eviction(&self, r: u64, volatile: bool) -> Option<(Box<[u8]>, u32, u64)> {
        if !volatile {
            let mut x = r;
            let (k, e) = self.dict.random_entry(|| {
                x = x
                    .wrapping_mul(0x5851_F42D_4C95_7F2D)
                    .wrapping_add(0x1405_7B7E_F767_814F);
                x ^ (x >> 29)
            })?;
            let at = self.expire_at(hash_key(k), k);
            return Some((k.into(), e.lru, at));
        }
        let n = self.volatile.by_hash.len;
        let total = self.volatile.len();
        if total == 0 {
            return None;
        }
        let i = (r % total as u64) as usize;
        let (key, at) = if i >= n {
            let (k, &at) = self.volatile.overflow.iter().nth(i - n)?;
            (k.clone(), at)
        } else {
            let (h, at) = self.volatile.by_hash.sample(r >> 16)?;
            let ov = &self.volatile.overflow;
            let mut found = None;
            self.dict.scan_step_marked(h, |k, _, marked| {
                if found.is_none() && marked && hash_key(k) == h && !ov.contains_key(k) {
                    found = Some(Box::<[u8]>::from(k));
                }
            });
            (found?, at)
        };
        let lru = self.dict.get(hash_key(&key), &key)?.lru;
        Some((key, lru, at))
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
                if let Some(key) = self.sample_expired(rand_u64(), now) {
                    if self.signals.propagating.load(Ordering::Relaxed)
                        && !crate::propagate::deleted(self.db as usize, &key)
                    {
                        continue;
                    }
                    if let Some(e) = self.remove(hash_key(&key), &key) {
                        super::lazyfree::free_entry(e, super::lazyfree::Reason::Expire);
                    }
                    self.signals.events.expired(self.db as usize, &key);
                    if self.blocked.has(&key) {
                        self.signals.note_expired_waited(self.db as usize, &key);
                    }
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

    /// True when some hash of this shard has a field due to expire at `now`.
    pub fn fields_due(&self, now: u64) -> bool {
        self.hfe.as_ref().is_some_and(|ix| ix.due(now).is_some())
    }

    /// One active expiry pass over hash fields (Redis 7.4's
    /// `hashTypeDbActiveExpire`): for each hash whose earliest field TTL
    /// has passed, deletes its expired fields (each recorded as `HDEL key
    /// field` while effects are recorded), notifies `hexpired`, and deletes
    /// the key (`del`) when no field is left; stops after about `quota`
    /// fields. Returns the number of fields deleted.
    pub fn expire_fields_pass(&mut self, now: u64, quota: usize) -> usize {
        let db = self.db as usize;
        let mut done = 0;
        while done < quota {
            let Some((_, key)) = self.hfe.as_ref().and_then(|ix| ix.due(now)).cloned() else {
                break;
            };
            self.note_field_ttls(&key, None);
            let h = hash_key(&key);
            self.before_write(h, &key);
            let Some(e) = self.dict.get_mut(h, &key) else {
                continue;
            };
            let Value::Hash(hv) = &mut e.value else {
                continue;
            };
            let propagating = self.signals.propagating.load(Ordering::Relaxed);
            let mut n = 0;
            let expired = hv.expired_fields(now);
            let had = !expired.is_empty();
            for f in expired {
                if done + n >= quota {
                    break;
                }
                if propagating && !crate::propagate::field_deleted(db, &key, &f) {
                    continue;
                }
                hv.remove(&f);
                n += 1;
            }
            let (empty, min) = (hv.is_empty(), hv.min_field_ttl());
            done += n;
            if n > 0 {
                self.signals
                    .expired_fields
                    .fetch_add(n as u64, Ordering::Relaxed);
                self.signals
                    .events
                    .modified(db, &key, crate::events::HASH, "hexpired");
            }
            if empty {
                self.remove(h, &key);
                self.signals
                    .events
                    .notify(db, &key, crate::events::GENERIC, "del");
            } else {
                self.note_field_ttls(&key, min);
                if had && n == 0 {
                    // Nothing could be deleted here (no write context).
                    break;
                }
            }
        }
        done
    }
}

/// One database: its shards.
pub struct Db {
    shards: Box<[Mutex<Shard>]>,
    /// Each shard's bucket array, for prefetching without the lock.
    hints: Box<[Arc<BucketHint>]>,
}

impl Db {
    fn new(index: usize, signals: &Arc<Signals>) -> Self {
        let hints: Box<[Arc<BucketHint>]> = (0..SHARDS).map(|_| Arc::default()).collect();
        Db {
            shards: hints
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    let mut s = Shard {
                        db: index as u32,
                        signals: signals.clone(),
                        ..Shard::default()
                    };
                    s.seq.gid = (index * SHARDS + i) as u32;
                    if super::dict::slot_sharding() {
                        s.slots = Some(Box::default());
                    }
                    s.dict.attach_hint(h.clone());
                    Mutex::new(s)
                })
                .collect(),
            hints,
        }
    }

    /// Starts loading what a lookup of `key` will touch first: the cache
    /// lines of its shard's lock and of its bucket. Takes no lock; a stale
    /// bucket address (the table was resized meanwhile) only wastes the
    /// prefetch.
    /// Returns the key's hash for [`Db::prefetch_entry`].
    #[inline]
    pub fn prefetch(&self, key: &[u8]) -> u64 {
        let h = hash_key(key);
        let i = shard_index(h);
        super::dict::prefetch_line(&self.shards[i] as *const Mutex<Shard> as usize);
        self.hints[i].prefetch(h);
        h
    }

    /// Second step, once [`Db::prefetch`]'s lines had time to arrive:
    /// prefetches the first entry of the key's bucket. Reads the bucket
    /// under the shard's lock, taken only if it is free (never waits).
    #[inline]
    pub fn prefetch_entry(&self, hash: u64) {
        if let Some(s) = self.shards[shard_index(hash)].try_lock() {
            s.dict.prefetch_head(hash);
        }
    }

    /// Locks the shard of a key hash.
    #[inline]
    pub fn lock(&self, h: u64) -> MutexGuard<'_, Shard> {
        lock_shard(&self.shards[shard_index(h)])
    }

    /// Sizes every shard's table for `keys` keys spread over the shards
    /// (RDB RESIZEDB hint; Redis's dictExpand in rdbLoad). Takes each
    /// shard's lock in turn.
    pub fn reserve(&self, keys: usize) {
        // Shards receive about keys/SHARDS each, give or take a few
        // standard deviations.
        let per = keys / SHARDS;
        let per = per + per / 8 + 8;
        for s in self.shards.iter() {
            s.lock().dict.reserve(per);
        }
    }

    /// Locks every shard in ascending order.
    pub fn lock_all(&self) -> Vec<MutexGuard<'_, Shard>> {
        self.shards.iter().map(lock_shard).collect()
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

    /// Number of keys whose hash has field TTLs (INFO keyspace
    /// `subexpiry`).
    pub fn field_ttl_len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().field_ttl_keys()).sum()
    }

    /// The shapes of the database's key tables and TTL indexes, every
    /// shard's added up ([`Shard::table_stats`]): the table size is the
    /// total of the shards' buckets, the chain lengths those of all
    /// buckets. Locks one shard at a time.
    pub fn table_stats(&self) -> (super::TableStats, super::TableStats) {
        let mut keys = super::TableStats::default();
        let mut ttls = super::TableStats::default();
        for s in self.shards.iter() {
            let (k, t) = s.lock().table_stats();
            keys.merge(&k);
            ttls.merge(&t);
        }
        (keys, ttls)
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
    /// The layout of the keys' access records and the LFU tuning.
    pub lru: super::lru::LruPolicy,
    /// Shared with every shard.
    signals: Arc<Signals>,
}

impl Keyspace {
    /// `n` empty databases (the `databases` directive).
    pub fn new(n: usize) -> Self {
        Keyspace::with_propagation_flag(n, Arc::default(), Arc::default())
    }

    /// [`Keyspace::new`] sharing the recording flag of a propagation
    /// stream (`Stream::flag`).
    ///
    /// `paused_until`: the end of the pause of writes in force, ms since
    /// the epoch (0 for none), shared with the server's pause state
    /// (`Pause::end_flag`): lookups do not delete expired keys until then.
    pub fn with_propagation_flag(
        n: usize,
        propagating: Arc<AtomicBool>,
        paused_until: Arc<AtomicU64>,
    ) -> Self {
        let signals = Arc::new(Signals {
            propagating,
            expiry_paused_until: paused_until,
            ..Signals::default()
        });
        Keyspace {
            dbs: (0..n.max(1)).map(|i| Db::new(i, &signals)).collect(),
            signals,
            active_expired: AtomicU64::new(0),
            active_expire_enabled: AtomicBool::new(true),
            expire_time_cap_reached: AtomicU64::new(0),
            expire_cursor: AtomicU64::new(0),
            lru: Default::default(),
        }
    }

    /// The gate of key events (events.rs) of this keyspace.
    #[inline]
    pub fn events(&self) -> &crate::events::Gate {
        &self.signals.events
    }

    /// True when some client is blocked on a key of this keyspace.
    #[inline]
    pub fn any_waiters(&self) -> bool {
        self.signals.waiters.load(Ordering::Relaxed) > 0
    }

    /// Takes the keys with waiters that expired since the last call (empty
    /// without a lock when there are none), for the caller to serve their
    /// waiters (db/blocking.rs `serve_deferred`) once its locks are
    /// released.
    #[inline]
    pub fn take_expired_waited(&self) -> Vec<(usize, Box<[u8]>)> {
        if !self.signals.expired_waited_any.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut v = self.signals.expired_waited.lock();
        self.signals
            .expired_waited_any
            .store(false, Ordering::Release);
        std::mem::take(&mut *v)
    }

    /// Number of databases.
    #[inline]
    pub fn db_count(&self) -> usize {
        self.dbs.len()
    }

    /// Arms `c` on every shard of every database: call with writes paused
    /// (`Stream::pause_writes`), so that no shard changes between the
    /// first and the last arming.
    pub fn arm_copier(&self, c: &Arc<dyn ShardCopier>) {
        for db in self.dbs.iter() {
            for s in db.shards.iter() {
                let mut g = s.lock();
                // One copy at a time per shard saves keys: an earlier one
                // still armed copies the shard first.
                g.copy_now();
                g.copiers.push(c.clone());
            }
        }
    }

    /// The copy's walk: when `c` has not copied shard `idx` of database
    /// `db` yet, copies it now (under its lock) and returns true; false
    /// when a writer made it copy the shard already.
    pub fn copy_shard(&self, c: &Arc<dyn ShardCopier>, db: usize, idx: usize) -> bool {
        let mut g = self.dbs[db].shards[idx].lock();
        let Some(i) = g.copiers.iter().position(|x| Arc::ptr_eq(x, c)) else {
            return false;
        };
        g.copiers.swap_remove(i);
        let saved = g.saved.take();
        c.copy(db, idx, &g, saved.as_deref());
        true
    }

    /// Disarms `c` wherever it has not copied yet (the copy was abandoned).
    pub fn disarm_copier(&self, c: &Arc<dyn ShardCopier>) {
        for db in self.dbs.iter() {
            for s in db.shards.iter() {
                let mut g = s.lock();
                let before = g.copiers.len();
                g.copiers.retain(|x| !Arc::ptr_eq(x, c));
                if g.copiers.len() != before {
                    g.saved = None;
                }
            }
        }
    }

    /// Database `i` (the caller validated the index).
    #[inline]
    pub fn db(&self, i: usize) -> &Db {
        &self.dbs[i]
    }

    /// Locks the shards of the given (database, key hash) pairs in the global
    /// order, deduplicated.
    pub fn lock_keys(&self, keys: &[(usize, u64)]) -> KeyLocks<'_> {
        let mut ids: SmallVec<[(usize, usize); 2]> =
            keys.iter().map(|&(d, h)| (d, shard_index(h))).collect();
        ids.sort_unstable();
        ids.dedup();
        let guards = ids
            .iter()
            .map(|&(d, s)| lock_shard(&self.dbs[d].shards[s]))
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
            ids: smallvec::smallvec![(db, shard_index(h))],
            guards: smallvec::smallvec![guard],
        }
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
        for g in ga.iter_mut().chain(gb.iter_mut()) {
            g.copy_now();
        }
        before(&ga, &gb);
        for (x, y) in ga.iter_mut().zip(gb.iter_mut()) {
            // Data moves, blocked clients (and bucket hints) stay with
            // their database.
            let (hx, hy) = (x.dict.detach_hint(), y.dict.detach_hint());
            std::mem::swap(&mut x.dict, &mut y.dict);
            if let (Some(hx), Some(hy)) = (hx, hy) {
                x.dict.attach_hint(hx);
                y.dict.attach_hint(hy);
            }
            std::mem::swap(&mut x.volatile, &mut y.volatile);
            std::mem::swap(&mut x.slots, &mut y.slots);
            std::mem::swap(&mut x.hfe, &mut y.hfe);
            std::mem::swap(&mut x.expired, &mut y.expired);
        }
    }

    /// Counts `n` hash fields deleted by lazy expiry.
    #[inline]
    pub fn count_expired_fields(&self, n: u64) {
        self.signals.expired_fields.fetch_add(n, Ordering::Relaxed);
    }

    /// Hash fields deleted by expiry so far, lazy and active (INFO
    /// `expired_subkeys`).
    pub fn expired_fields(&self) -> u64 {
        self.signals.expired_fields.load(Ordering::Relaxed)
    }

    /// Zeroes the count of expired hash fields (CONFIG RESETSTAT).
    pub fn reset_expired_fields(&self) {
        self.signals.expired_fields.store(0, Ordering::Relaxed);
    }

    /// Number of keys whose hash has field TTLs, over all databases.
    pub fn field_ttl_keys(&self) -> u64 {
        self.signals.hfe_keys.load(Ordering::Relaxed).max(0) as u64
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

    /// Deletes `key` of database `db` if it has a TTL that has passed at
    /// `now` (ms), as an active expiry would (the deletion is recorded when
    /// the caller is in a write context). Returns `Some(true)` when it was
    /// deleted, `Some(false)` when it still has a TTL to come, `None` when
    /// the key is gone or no longer has a TTL. Used by a writable replica
    /// for the keys its own clients gave a TTL (Redis's `expireSlaveKeys`).
    pub fn expire_key_if_due(&self, db: usize, key: &[u8], now: u64) -> Option<bool> {
        let d = self.dbs.get(db)?;
        let h = hash_key(key);
        let mut g = d.lock(h);
        if !g.contains_raw(h, key) || g.expire_at(h, key) == 0 {
            return None;
        }
        if !g.is_expired(h, key, now) {
            return Some(false);
        }
        // Recorded as DEL when the caller is in a write context (the AOF
        // is on); deleted either way, as the replica's own expiry.
        let _ = crate::propagate::deleted(db, key);
        if let Some(e) = g.remove(h, key) {
            super::lazyfree::free_entry(e, super::lazyfree::Reason::Expire);
        }
        g.signals.events.expired(db, key);
        if g.blocked.has(key) {
            g.signals.note_expired_waited(db, key);
        }
        drop(g);
        self.active_expired.fetch_add(1, Ordering::Relaxed);
        Some(true)
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
            let (keys, fields) = {
                let g = shard.lock();
                (g.volatile_len() > 0, g.fields_due(now))
            };
            if keys || fields {
                step(&mut || {
                    let mut g = lock_shard(shard);
                    if keys {
                        let (_, exp) = g.expire_pass(now, deadline);
                        self.active_expired.fetch_add(exp as u64, Ordering::Relaxed);
                    }
                    if fields {
                        g.expire_fields_pass(now, FIELDS_PER_PASS);
                    }
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
///
/// Up to two shards are held inline (no heap allocation for the common
/// single-key and two-key commands).
pub struct KeyLocks<'a> {
    ks: &'a Keyspace,
    ids: SmallVec<[(usize, usize); 2]>,
    guards: SmallVec<[MutexGuard<'a, Shard>; 2]>,
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
                let g = g.map(|mut g| {
                    locked(&mut g);
                    g
                });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::value::{StrValue, Value};

    fn e() -> Entry {
        Entry::new(Value::Str(StrValue::from_bytes(b"v")), 0)
    }

    #[test]
    fn ttl_lives_in_the_volatile_index() {
        let mut s = Shard::default();
        let (a, b) = (
            b"a".as_slice(),
            b"a-much-longer-key-than-22-bytes".as_slice(),
        );
        let (ha, hb) = (hash_key(a), hash_key(b));
        s.insert_with_expire(ha, a, e(), 100);
        s.insert(hb, b, e());
        assert_eq!(
            (s.volatile_len(), s.expire_at(ha, a), s.expire_at(hb, b)),
            (1, 100, 0)
        );
        assert!(s.set_expire(hb, b, 50));
        assert_eq!(s.volatile_len(), 2);
        assert_eq!(s.iter_with_expire().map(|x| x.2).sum::<u64>(), 150);
        // SET without KEEPTTL drops the TTL.
        s.insert(ha, a, e());
        assert_eq!((s.volatile_len(), s.expire_at(ha, a)), (1, 0));
        s.set_expire(ha, a, 100);
        // Alive through its last millisecond (Redis's keyIsExpired:
        // expired when now > when).
        assert!(s.peek(hb, b, 50).is_some());
        assert!(s.peek(hb, b, 51).is_none());
        assert!(s.get(ha, a, 99).is_some());
        assert!(s.get(hb, b, 60).is_none());
        assert_eq!((s.len(), s.volatile_len(), s.take_expired()), (1, 1, 1));
        assert!(s.set_expire(ha, a, 0));
        assert_eq!(s.volatile_len(), 0);
        assert!(!s.set_expire(hb, b, 5));
    }

    #[test]
    fn ttl_table_matches_a_model() {
        let mut t = TtlTable::default();
        let mut m = std::collections::HashMap::new();
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            x = crate::util::xorshift64(x);
            x
        };
        for step in 0..200_000u64 {
            // Few distinct hashes, all with the same high byte (one shard).
            let h = (0xAB << 56) | (next() % 3000);
            match next() % 3 {
                0 | 1 if step < 120_000 => {
                    let at = step + 1;
                    t.insert(h, at);
                    m.insert(h, at);
                }
                _ => assert_eq!(t.remove(h), m.remove(&h), "step {step}"),
            }
            assert_eq!(t.len, m.len());
            if step % 997 == 0 {
                for (&k, &v) in &m {
                    assert_eq!(t.get(k), Some(v));
                }
                if let Some((h, at)) = t.sample(next()) {
                    assert_eq!(m.get(&h), Some(&at));
                }
            }
        }
        assert!(m.is_empty() && t.slots.len() == 8);
    }

    #[test]
    fn colliding_hashes_go_to_the_overflow_map() {
        let mut v = Volatile::default();
        v.set(7, b"a", 100, false);
        v.set(7, b"b", 200, false);
        assert_eq!((v.by_hash.len, v.overflow.len()), (1, 1));
        assert_eq!((v.get(7, b"a"), v.get(7, b"b")), (100, 200));
        v.set(7, b"b", 250, true);
        v.set(7, b"a", 150, true);
        assert_eq!((v.get(7, b"a"), v.get(7, b"b")), (150, 250));
        assert_eq!(v.remove(7, b"a"), 150);
        assert_eq!(v.get(7, b"b"), 250);
        v.set(7, b"c", 300, false);
        assert_eq!((v.get(7, b"b"), v.get(7, b"c"), v.len()), (250, 300, 2));
        assert_eq!(v.remove(7, b"b"), 250);
        assert_eq!(v.remove(7, b"c"), 300);
        assert!(v.is_empty());
    }

    #[test]
    fn active_expiry_samples_the_index() {
        let mut s = Shard::default();
        for i in 0..500u32 {
            let k = format!("k{i}");
            let h = hash_key(k.as_bytes());
            s.insert_with_expire(h, k.as_bytes(), e(), if i < 400 { 10 } else { 1000 });
        }
        let far = Instant::now() + Duration::from_secs(5);
        while s.expire_pass(20, far).1 > 0 {}
        assert!(s.len() < 500 && s.len() >= 100);
        assert_eq!(s.len(), s.volatile_len());
        for (k, _, at) in s.iter_with_expire() {
            assert!(at == 1000 || at == 10, "{k:?}");
        }
    }
}
