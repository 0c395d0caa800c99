//! The access record of every key: the 32-bit `lru` field of each
//! [`Entry`](super::Entry), as Redis's evict.c keeps it in `robj->lru`.
//!
//! Under the LRU-family policies (and no eviction at all) the field holds
//! the time of the last access on the LRU [`clock`]: 10 ms units, wrapping
//! every 497 days, finer than Redis's 1 s LRU clock so that a fast write
//! flood still orders keys; OBJECT IDLETIME reads it. Under an LFU policy
//! it holds Redis's 24-bit layout: 16 bits of access time in minutes, then
//! an 8-bit logarithmic counter ([`LruPolicy::access`], Redis's
//! `updateLFU`, `LFULogIncr`, `LFUDecrAndReturn`); OBJECT FREQ reads it.
//!
//! Which layout is in force, and the LFU tuning (`lfu-log-factor`,
//! `lfu-decay-time`), is the keyspace's [`LruPolicy`], set from the
//! configuration by the server.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Units of the LRU clock per second.
pub const CLOCK_HZ: u64 = 100;

/// Initial LFU counter of a new key (Redis's LFU_INIT_VAL).
pub const LFU_INIT_VAL: u32 = 5;

/// The LRU clock at `now_ms` (ms since the Unix epoch): 10 ms units,
/// wrapping.
#[inline]
pub fn clock(now_ms: u64) -> u32 {
    (now_ms / (1000 / CLOCK_HZ)) as u32
}

/// Seconds since the access recorded as `lru` (LRU layout), at `now_ms`
/// (OBJECT IDLETIME, Redis's `estimateObjectIdleTime`).
pub fn idle_secs(lru: u32, now_ms: u64) -> u64 {
    u64::from(clock(now_ms).wrapping_sub(lru)) / CLOCK_HZ
}

/// The `lru` value of an access `idle_s` seconds before `now_ms`
/// (RESTORE IDLETIME, RDB IDLE).
pub fn clock_idle(now_ms: u64, idle_s: u64) -> u32 {
    clock(now_ms).wrapping_sub((idle_s.min(u32::MAX as u64 / CLOCK_HZ) * CLOCK_HZ) as u32)
}

/// Minutes of LRU clock time `t`, on 16 bits (the LFU decrement time).
#[inline]
fn minutes(t: u32) -> u32 {
    (t / (60 * CLOCK_HZ as u32)) & 0xFFFF
}

/// The `lru` field for a key restored with `FREQ freq` (RESTORE, RDB):
/// only meaningful under LFU.
pub fn with_freq(now_ms: u64, freq: u8) -> u32 {
    (minutes(clock(now_ms)) << 8) | freq as u32
}

/// Which layout the `lru` fields use and the LFU tuning: one per keyspace.
#[derive(Debug)]
pub struct LruPolicy {
    /// An LFU maxmemory-policy is in force.
    lfu: AtomicBool,
    /// `lfu-log-factor`.
    log_factor: AtomicU32,
    /// `lfu-decay-time`, minutes (0: never decay).
    decay_time: AtomicU32,
}

impl Default for LruPolicy {
    fn default() -> Self {
        LruPolicy {
            lfu: AtomicBool::new(false),
            log_factor: AtomicU32::new(10),
            decay_time: AtomicU32::new(1),
        }
    }
}

impl LruPolicy {
    /// Sets the layout (`lfu`: an LFU policy is in force) and the LFU
    /// tuning (`lfu-log-factor`, `lfu-decay-time` in minutes).
    pub fn configure(&self, lfu: bool, log_factor: u32, decay_time: u32) {
        self.lfu.store(lfu, Ordering::Relaxed);
        self.log_factor.store(log_factor, Ordering::Relaxed);
        self.decay_time.store(decay_time, Ordering::Relaxed);
    }

    /// True under an LFU policy (the `lru` fields hold LFU data).
    #[inline]
    pub fn lfu(&self) -> bool {
        self.lfu.load(Ordering::Relaxed)
    }

    /// The `lru` field of a new key created at `now_ms`: the [`clock`], or
    /// under LFU (now in minutes, [`LFU_INIT_VAL`]) (Redis's
    /// `createObject`).
    #[inline]
    pub fn initial(&self, now_ms: u64) -> u32 {
        let t = clock(now_ms);
        if self.lfu() {
            (minutes(t) << 8) | LFU_INIT_VAL
        } else {
            t
        }
    }

    /// Records an access at clock time `t` ([`clock`]) in an `lru` field:
    /// the time under LRU; under LFU the decayed, then probabilistically
    /// incremented counter (Redis's `updateLFU`). One branch on a cached
    /// flag.
    #[inline]
    pub fn access(&self, lru: &mut u32, t: u32) {
        if self.lfu() {
            let c = self.incr(self.decay(*lru, t));
            *lru = (minutes(t) << 8) | c;
        } else {
            *lru = t;
        }
    }

    /// The LFU counter of `lru` decayed by one per `lfu-decay-time`
    /// minutes elapsed since its last decrement time (Redis's
    /// `LFUDecrAndReturn`); `t` is the [`clock`] now.
    pub fn decay(&self, lru: u32, t: u32) -> u32 {
        let ldt = (lru >> 8) & 0xFFFF;
        let counter = lru & 0xFF;
        let now = minutes(t);
        let elapsed = if now >= ldt {
            now - ldt
        } else {
            65535 - ldt + now
        };
        let decay = self.decay_time.load(Ordering::Relaxed);
        let periods = elapsed.checked_div(decay).unwrap_or(0);
        counter.saturating_sub(periods)
    }

    /// Logarithmic increment of an LFU counter (Redis's `LFULogIncr`): the
    /// probability is 1 / ((counter - LFU_INIT_VAL) * lfu-log-factor + 1).
    pub fn incr(&self, counter: u32) -> u32 {
        if counter >= 255 {
            return 255;
        }
        let r = (crate::util::rand_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let base = counter.saturating_sub(LFU_INIT_VAL) as f64;
        let p = 1.0 / (base * self.log_factor.load(Ordering::Relaxed) as f64 + 1.0);
        if r < p {
            counter + 1
        } else {
            counter
        }
    }
}

/// One access to record in `lru` fields: the keyspace's policy and the LRU
/// [`clock`] time of the access (a command's, see `Ctx::touch_time`).
#[derive(Debug, Clone, Copy)]
pub struct Access<'a> {
    policy: &'a LruPolicy,
    t: u32,
}

impl<'a> Access<'a> {
    /// An access at `now_ms` under `policy`.
    #[inline]
    pub fn at(policy: &'a LruPolicy, now_ms: u64) -> Self {
        Access {
            policy,
            t: clock(now_ms),
        }
    }

    /// Records the access in an entry's `lru` field
    /// ([`LruPolicy::access`]).
    #[inline]
    pub fn record(self, lru: &mut u32) {
        self.policy.access(lru, self.t)
    }
}
