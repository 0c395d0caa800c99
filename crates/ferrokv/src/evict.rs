//! maxmemory and key eviction, after Redis 7.0's evict.c.
//!
//! - Before a command runs (server.c `processCommand`), when `maxmemory` is
//!   set and [`crate::memory::used`] exceeds it, [`perform`] evicts keys
//!   chosen by `maxmemory-policy` until memory is back under the limit, the
//!   time budget (`maxmemory-eviction-tenacity`) runs out, or nothing can
//!   be evicted. In the last case a `denyoom` command is refused with
//!   [`OOM`].
//! - Candidates come from `maxmemory-samples` random keys per database (from
//!   the TTL index for `volatile-*`), merged into a pool of the
//!   [`POOL_SIZE`] best (Redis's `evictionPoolPopulate`): the longest idle
//!   (LRU), the least frequently used (LFU), the nearest expiry
//!   (volatile-ttl); the random policies take a random sampled key.
//! - Idleness and frequency come from each key's access record
//!   (db/lru.rs: the LRU clock, or Redis's LFU counter under an LFU policy).
//!
//! Only the thread that finds memory over the limit evicts; others that
//! find it over the limit at the same time wait on the eviction lock and
//! re-check. With `maxmemory 0` the cost per command is one atomic load.

use crate::db::dict::hash_key;
use crate::db::lru::{clock, LruPolicy};
use crate::util::rand_u64;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// What eviction works on: the parts of a server it reads and changes
/// (built by `Server::evict_env`; the fields are named as the server's).
pub struct Env<'a> {
    /// The databases keys are evicted from.
    pub keyspace: &'a crate::db::Keyspace,
    /// maxmemory settings and eviction state.
    pub evict: &'a Eviction,
    /// The exec gate, held shared while evicting.
    pub tx: &'a crate::tx::Transactions,
    /// The propagation stream evictions are recorded in (as `DEL`).
    pub propagation: &'a crate::propagate::Stream,
    /// The server's clock (LRU/LFU ageing).
    pub clock: &'a crate::clock::Clock,
    /// CLIENT PAUSE: no eviction while it is on (the dataset stays still).
    pub pause: &'a crate::pause::Pause,
}

/// The OOM error (server.c `shared.oomerr`), without the leading `-`.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// Eviction pool size (Redis's EVPOOL_SIZE).
pub const POOL_SIZE: usize = 16;

/// A maxmemory-policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Policy {
    /// LRU among keys with a TTL.
    VolatileLru = 0,
    /// LFU among keys with a TTL.
    VolatileLfu,
    /// Random among keys with a TTL.
    VolatileRandom,
    /// Nearest expiry first, among keys with a TTL.
    VolatileTtl,
    /// LRU among all keys.
    AllkeysLru,
    /// LFU among all keys.
    AllkeysLfu,
    /// Random among all keys.
    AllkeysRandom,
    /// Refuse denyoom commands over the limit.
    NoEviction,
}

/// The policy names, in [`Policy`] order (CONFIG spelling; the order of
/// Redis's config.c enum, which its CONFIG SET error lists).
pub const POLICY_NAMES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

impl Policy {
    fn from_u8(v: u8) -> Policy {
        match v {
            0 => Policy::VolatileLru,
            1 => Policy::VolatileLfu,
            2 => Policy::VolatileRandom,
            3 => Policy::VolatileTtl,
            4 => Policy::AllkeysLru,
            5 => Policy::AllkeysLfu,
            6 => Policy::AllkeysRandom,
            _ => Policy::NoEviction,
        }
    }

    /// Parses a CONFIG name (lower-case).
    pub fn parse(name: &str) -> Option<Policy> {
        POLICY_NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))
            .map(|i| Policy::from_u8(i as u8))
    }

    /// The CONFIG name.
    pub fn name(self) -> &'static str {
        POLICY_NAMES[self as usize]
    }

    /// True for the `volatile-*` policies.
    pub fn volatile(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }

    /// True for the LFU policies.
    pub fn lfu(self) -> bool {
        matches!(self, Policy::AllkeysLfu | Policy::VolatileLfu)
    }

    /// True for the LRU and LFU policies (Redis's
    /// MAXMEMORY_FLAG_NO_SHARED_INTEGERS).
    pub fn no_shared_integers(self) -> bool {
        matches!(
            self,
            Policy::AllkeysLru | Policy::VolatileLru | Policy::AllkeysLfu | Policy::VolatileLfu
        )
    }
}

/// The maxmemory settings and eviction state of one server
/// (`Server::evict`).
pub struct Eviction {
    /// `maxmemory`, bytes (0 = no limit).
    maxmemory: AtomicU64,
    /// `maxmemory-policy` ([`Policy`] as u8).
    policy: AtomicU8,
    /// `maxmemory-samples`.
    samples: AtomicU32,
    /// `maxmemory-eviction-tenacity`.
    tenacity: AtomicU32,
    /// Keys evicted since start or CONFIG RESETSTAT (INFO evicted_keys).
    evicted: AtomicU64,
    /// True while a background eviction runs (see [`Eviction::claim_background`]).
    background: std::sync::atomic::AtomicBool,
    /// The candidate pool and the non-empty databases; held by the one
    /// thread that evicts.
    state: Mutex<State>,
}

impl Default for Eviction {
    fn default() -> Self {
        Eviction {
            maxmemory: AtomicU64::new(0),
            policy: AtomicU8::new(Policy::NoEviction as u8),
            samples: AtomicU32::new(5),
            tenacity: AtomicU32::new(10),
            evicted: AtomicU64::new(0),
            background: std::sync::atomic::AtomicBool::new(false),
            state: Mutex::new(State {
                pool: Vec::new(),
                dbs: 0,
                dbs_at: None,
            }),
        }
    }
}

impl Eviction {
    /// Applies the maxmemory directives (called by `Server::apply_config`):
    /// `maxmemory` bytes (0 = no limit), the policy, `maxmemory-samples`,
    /// `maxmemory-eviction-tenacity`. Whether the policy is an LFU one
    /// decides the layout of the keys' access records (db/lru.rs), which
    /// the caller sets on the keyspace.
    pub fn configure(&self, maxmemory: u64, p: Policy, samples: u32, tenacity: u32) {
        self.maxmemory.store(maxmemory, Ordering::Relaxed);
        self.policy.store(p as u8, Ordering::Relaxed);
        self.samples
            .store(samples.clamp(1, 1024), Ordering::Relaxed);
        self.tenacity.store(tenacity, Ordering::Relaxed);
    }

    /// The memory limit in bytes (0 = none).
    #[inline]
    pub fn maxmemory(&self) -> u64 {
        self.maxmemory.load(Ordering::Relaxed)
    }

    /// The current policy.
    #[inline]
    pub fn policy(&self) -> Policy {
        Policy::from_u8(self.policy.load(Ordering::Relaxed))
    }

    /// Keys evicted since start (INFO evicted_keys).
    pub fn evicted_keys(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    /// Claims the one background eviction (Redis's eviction time proc,
    /// evict.c `startEvictionTimeProc`): true when the caller should start
    /// it, false when one already runs. The runner calls
    /// [`Eviction::release_background`] when it stops.
    pub fn claim_background(&self) -> bool {
        !self.background.swap(true, Ordering::AcqRel)
    }

    /// Ends the background eviction [`Eviction::claim_background`] claimed.
    pub fn release_background(&self) {
        self.background.store(false, Ordering::Release);
    }

    /// True when memory is over a set `maxmemory` and the policy may evict.
    pub fn over_limit(&self) -> bool {
        let max = self.maxmemory();
        max != 0 && self.policy() != Policy::NoEviction && used_for_eviction() > max
    }

    /// Resets the INFO counter (CONFIG RESETSTAT).
    pub fn reset_stats(&self) {
        self.evicted.store(0, Ordering::Relaxed);
    }

    /// Redis's `evictionTimeLimitUs`: the budget of one [`perform`] call.
    fn time_limit(&self) -> Option<Duration> {
        let t = self.tenacity.load(Ordering::Relaxed);
        if t <= 10 {
            Some(Duration::from_micros(50 * t as u64))
        } else if t < 100 {
            Some(Duration::from_micros(
                (500.0 * 1.15f64.powi(t as i32 - 10)) as u64,
            ))
        } else {
            None
        }
    }
}

/// Used memory as INFO and eviction see it: the counted allocator's
/// figure, or the resident set size when the allocator is not counted.
pub fn used_memory() -> u64 {
    if crate::memory::counted() {
        crate::memory::used()
    } else {
        crate::memory::rss_bytes()
    }
}

/// Used memory as maxmemory counts it: [`used_memory`] without the
/// replicas' output buffers ([`crate::memory::repl_not_counted`]).
pub fn used_for_eviction() -> u64 {
    used_memory().saturating_sub(crate::memory::repl_not_counted())
}

// ------------------------------------------------------------ eviction

/// Outcome of [`perform`] (Redis's EVICT_OK / EVICT_RUNNING / EVICT_FAIL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Under the limit.
    Ok,
    /// Still over, but keys were freed and the time budget ran out.
    Running,
    /// Over the limit and nothing could be evicted.
    Fail,
}

struct Cand {
    score: u64,
    db: usize,
    key: Box<[u8]>,
}

struct State {
    pool: Vec<Cand>,
    /// Bit i set: database i had keys at the last refresh.
    dbs: u64,
    dbs_at: Option<Instant>,
}

/// Called before every command while `maxmemory` is set: evicts as needed
/// and returns whether memory is still over the limit with nothing left to
/// evict (the caller then refuses denyoom commands with [`OOM`]). Must be
/// called with no shard lock and no transaction gate held.
pub fn perform(server: &Env<'_>) -> Outcome {
    let ev = &server.evict;
    let max = ev.maxmemory();
    if max == 0 || used_for_eviction() <= max {
        return Outcome::Ok;
    }
    // While clients are paused the dataset stays still: no eviction, and
    // no OOM refusal either (evict.c performEvictions).
    if server.pause.writes_paused(server.clock.now_ms()) {
        return Outcome::Ok;
    }
    let policy = ev.policy();
    if policy == Policy::NoEviction {
        return Outcome::Fail;
    }
    let mut st = match ev.state.try_lock() {
        Some(g) => g,
        None => {
            // Another thread is evicting: wait for it, then re-check.
            let g = ev.state.lock();
            if used_for_eviction() <= max {
                return Outcome::Ok;
            }
            g
        }
    };
    let gate = server.tx.gate_shared();
    let aof = server.propagation.on();
    if aof {
        server.propagation.begin_background();
    }
    let start = Instant::now();
    let limit = ev.time_limit();
    let mut freed = 0u64;
    let mut outcome = Outcome::Ok;
    while used_for_eviction() > max {
        match next_victim(server, &mut st, policy) {
            Some((db, key)) => {
                // Each eviction is a unit of its own in the propagation
                // stream (the sampling's locks one too): a unit takes all
                // its locks at one time (propagate.rs `Stream::cut`).
                server.propagation.cut();
                if evict_key(server, db, &key, policy.volatile()) {
                    freed += 1;
                }
                server.propagation.cut();
            }
            None => {
                // Nothing left to evict: values may still be on their way
                // out through the lazyfree thread; wait for it a little
                // (as long as one time budget), as Redis's
                // performEvictions waits on BIO_LAZY_FREE.
                outcome = Outcome::Fail;
                if crate::db::lazyfree::pending() > 0 {
                    std::thread::sleep(limit.unwrap_or(Duration::from_millis(1)));
                    if used_memory() <= max {
                        outcome = Outcome::Ok;
                    }
                }
                break;
            }
        }
        if freed > 0 && freed.is_multiple_of(16) && limit.is_some_and(|l| start.elapsed() > l) {
            outcome = Outcome::Running;
            break;
        }
    }
    if aof {
        server.propagation.end_background();
    }
    drop(gate);
    drop(st);
    outcome
}

/// Refreshes the set of non-empty databases at most every 100 ms.
fn refresh_dbs(server: &Env<'_>, st: &mut State, volatile: bool) {
    if st
        .dbs_at
        .is_some_and(|t| t.elapsed() < Duration::from_millis(100))
    {
        return;
    }
    let ks = &server.keyspace;
    let mut mask = 0u64;
    for i in 0..ks.db_count().min(64) {
        let db = ks.db(i);
        let any = (0..crate::db::keyspace::SHARDS).any(|s| {
            let sh = db.shard_at(s).lock();
            if volatile {
                sh.volatile_len() > 0
            } else {
                !sh.is_empty()
            }
        });
        if any {
            mask |= 1 << i;
        }
    }
    st.dbs = mask;
    st.dbs_at = Some(Instant::now());
}

/// Draws one sample from database `db`: a random shard, probing onward
/// past empty ones.
fn sample_db(server: &Env<'_>, db: usize, volatile: bool) -> Option<(Box<[u8]>, u32, u64)> {
    let d = server.keyspace.db(db);
    let n = crate::db::keyspace::SHARDS;
    let r = rand_u64();
    let first = (r as usize) % n;
    for i in 0..n {
        let sh = d.shard_at((first + i) % n).lock();
        if let Some(x) = sh.sample_for_eviction(rand_u64(), volatile) {
            return Some(x);
        }
    }
    None
}

fn score(lru_policy: &LruPolicy, policy: Policy, lru: u32, at: u64, t: u32) -> u64 {
    match policy {
        Policy::AllkeysLfu | Policy::VolatileLfu => 255 - lru_policy.decay(lru, t) as u64,
        Policy::VolatileTtl => u64::MAX - at,
        _ => t.wrapping_sub(lru) as u64,
    }
}

/// Picks the next key to evict, or None when nothing is evictable.
fn next_victim(server: &Env<'_>, st: &mut State, policy: Policy) -> Option<(usize, Box<[u8]>)> {
    let volatile = policy.volatile();
    refresh_dbs(server, st, volatile);
    let dbs = st.dbs;
    if dbs == 0 {
        // Re-check now: keys may have been added since the last refresh.
        st.dbs_at = None;
        refresh_dbs(server, st, volatile);
        if st.dbs == 0 {
            return None;
        }
    }
    let dbs = st.dbs;
    let random = matches!(policy, Policy::AllkeysRandom | Policy::VolatileRandom);
    let samples = server.evict.samples.load(Ordering::Relaxed) as usize;
    let now_t = clock(server.clock.now_ms());
    let count = dbs.count_ones() as u64;
    if random {
        // Round-robin is not needed: a random non-empty database.
        for _ in 0..4 {
            let pick = (rand_u64() % count) as u32;
            let db = nth_bit(dbs, pick);
            if let Some((k, _, _)) = sample_db(server, db, volatile) {
                return Some((db, k));
            }
        }
        st.dbs_at = None;
        return None;
    }
    let mut sampled_any = false;
    for db in 0..64 {
        if dbs & (1 << db) == 0 {
            continue;
        }
        for _ in 0..samples {
            let Some((key, lru, at)) = sample_db(server, db, volatile) else {
                break;
            };
            sampled_any = true;
            let sc = score(&server.keyspace.lru, policy, lru, at, now_t);
            pool_insert(&mut st.pool, Cand { score: sc, db, key });
        }
    }
    if !sampled_any && st.pool.is_empty() {
        st.dbs_at = None;
        return None;
    }
    // Best candidate last.
    st.pool.pop().map(|c| (c.db, c.key))
}

fn nth_bit(mask: u64, n: u32) -> usize {
    let mut m = mask;
    for _ in 0..n {
        m &= m - 1;
    }
    m.trailing_zeros() as usize
}

/// Inserts into the pool kept sorted by ascending score, at most
/// [`POOL_SIZE`] entries; a key already present is replaced.
fn pool_insert(pool: &mut Vec<Cand>, c: Cand) {
    if let Some(i) = pool.iter().position(|x| x.db == c.db && x.key == c.key) {
        pool.remove(i);
    }
    if pool.len() >= POOL_SIZE && pool[0].score >= c.score {
        return;
    }
    let at = pool.partition_point(|x| x.score < c.score);
    pool.insert(at, c);
    if pool.len() > POOL_SIZE {
        pool.remove(0);
    }
}

/// Deletes `key` of database `db` as an eviction: notifies `evicted`
/// (touching watchers and tracking), logs a DEL to the AOF, counts it.
/// False when the key is gone (or, for `volatile`, lost its TTL).
fn evict_key(server: &Env<'_>, db: usize, key: &[u8], volatile: bool) -> bool {
    let h = hash_key(key);
    let d = server.keyspace.db(db);
    let mut sh = d.lock(h);
    if !sh.contains_raw(h, key) || (volatile && sh.expire_at(h, key) == 0) {
        return false;
    }
    let old = sh.remove(h, key);
    if server.propagation.on() {
        crate::propagate::deleted(db, key);
    }
    drop(sh);
    if let Some(e) = old {
        crate::db::lazyfree::free_entry(e, crate::db::lazyfree::Reason::Eviction);
    }
    server.keyspace.events().evicted(db, key);
    server.evict.evicted.fetch_add(1, Ordering::Relaxed);
    true
}
