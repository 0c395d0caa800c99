//! The server's clock: the one source of "now" for command execution (TTLs,
//! EXPIRE family, OBJECT IDLETIME, LRU/LFU ageing), lazy and active expiry,
//! eviction, the cron (instantaneous metrics, the `timeout` of idle
//! clients) and what persistence writes as the time of a save.
//!
//! A [`Clock`] reads the wall clock (Redis reads `ustime()` the same way)
//! unless a test has set it ([`Clock::set_ms`], [`Clock::advance_ms`]):
//! then it stands still at the time the test chose, so tests of TTLs, idle
//! times and LFU decay run without sleeping and without depending on how
//! loaded the machine is. Each server owns its clock (`Server::clock`), so
//! two servers in one process can run at different times.
//!
//! Cost on the request path: one relaxed atomic load besides the
//! `clock_gettime` vDSO call.

use std::sync::atomic::{AtomicU64, Ordering};

/// A wall clock that tests can stop and move.
#[derive(Debug, Default)]
pub struct Clock {
    /// 0: the wall clock; otherwise the time the clock stands at, in
    /// microseconds since the Unix epoch.
    set_us: AtomicU64,
}

impl Clock {
    /// A clock reading the wall clock.
    pub const fn new() -> Clock {
        Clock {
            set_us: AtomicU64::new(0),
        }
    }

    /// Microseconds since the Unix epoch.
    #[inline]
    pub fn now_us(&self) -> u64 {
        match self.set_us.load(Ordering::Relaxed) {
            0 => crate::util::now_us(),
            t => t,
        }
    }

    /// Milliseconds since the Unix epoch.
    #[inline]
    pub fn now_ms(&self) -> u64 {
        self.now_us() / 1000
    }

    /// Stops the clock at `ms` milliseconds since the Unix epoch (must be
    /// above 0). Tests only: every reader sees the new time at its next
    /// reading.
    pub fn set_ms(&self, ms: u64) {
        self.set_us.store(ms.max(1) * 1000, Ordering::Relaxed);
    }

    /// Moves the clock `ms` milliseconds forward, stopping it first at the
    /// current wall-clock time when it was running.
    pub fn advance_ms(&self, ms: u64) {
        let now = self.now_us();
        self.set_us.store(now + ms * 1000, Ordering::Relaxed);
    }

    /// True when a test has set the clock.
    pub fn is_set(&self) -> bool {
        self.set_us.load(Ordering::Relaxed) != 0
    }

    /// Lets the clock follow the wall clock again.
    pub fn resume(&self) {
        self.set_us.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_advance_and_resume() {
        let c = Clock::new();
        let wall = crate::util::now_ms();
        assert!(c.now_ms() >= wall);
        c.set_ms(1_000_000);
        assert_eq!(c.now_ms(), 1_000_000);
        assert_eq!(c.now_us(), 1_000_000_000);
        c.advance_ms(1500);
        assert_eq!(c.now_ms(), 1_001_500);
        assert!(c.is_set());
        c.resume();
        assert!(!c.is_set());
        assert!(c.now_ms() >= wall);
    }
}
