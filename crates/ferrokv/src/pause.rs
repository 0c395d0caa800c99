//! CLIENT PAUSE: holding client commands back for a while (Redis 7.0's
//! `pauseClients` / `unpauseClients` / `blockPostponeClient`, networking.c
//! and server.c processCommand).
//!
//! A pause has a kind (WRITE: commands flagged `write` or
//! `may-replicate`, and EXEC of a transaction holding one; ALL: every
//! command) and an end time. A paused command is not refused: its
//! connection keeps the request (the client's `postponed` field)
//! and runs it once the pause is over (CLIENT UNPAUSE, or the end time),
//! so its reply comes late, as Redis's postponed clients. Replicas are
//! never paused; a replica's master link is, as a client (its stream is
//! read but its held commands wait: cmd/repl/replica.rs). A second CLIENT
//! PAUSE keeps the stronger kind and the later end. While writes are
//! paused, active and lazy expiry and eviction do not delete keys (they
//! would be writes).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// No pause.
pub const NONE: u8 = 0;
/// CLIENT PAUSE ... WRITE.
pub const WRITE: u8 = 1;
/// CLIENT PAUSE ... ALL.
pub const ALL: u8 = 2;

/// Who paused: CLIENT PAUSE, or a FAILOVER in progress (Redis's pause
/// purposes: CLIENT UNPAUSE lifts only the first).
pub const BY_CLIENT: usize = 0;
/// See [`BY_CLIENT`].
pub const BY_FAILOVER: usize = 1;

/// The pause state of a server: per purpose a kind and an end time.
#[derive(Default)]
pub struct Pause {
    kind: [AtomicU8; 2],
    /// End of each pause, ms since the epoch.
    end_ms: [AtomicU64; 2],
    /// Woken when a pause is lifted.
    lifted: tokio::sync::Notify,
    /// [`Pause::end`] after every change, shared with the keyspace
    /// ([`Pause::end_flag`]).
    end_flag: std::sync::Arc<AtomicU64>,
}

impl Pause {
    /// Pauses clients of `kind` (WRITE or ALL) until `end_ms` for
    /// `purpose`, keeping the stronger kind and the later end of a pause
    /// of the same purpose still on at `now_ms` (the server's clock).
    pub fn pause(&self, purpose: usize, kind: u8, end_ms: u64, now_ms: u64) {
        if self.kind_of(purpose, now_ms) == NONE {
            self.end_ms[purpose].store(0, Ordering::SeqCst);
            self.kind[purpose].store(NONE, Ordering::SeqCst);
        }
        self.kind[purpose].fetch_max(kind, Ordering::SeqCst);
        self.end_ms[purpose].fetch_max(end_ms, Ordering::SeqCst);
        self.end_flag.store(self.end(), Ordering::SeqCst);
    }

    /// Lifts the pause of `purpose` (CLIENT UNPAUSE, the end of a
    /// failover) and wakes the postponed clients.
    pub fn unpause(&self, purpose: usize) {
        self.kind[purpose].store(NONE, Ordering::SeqCst);
        self.end_ms[purpose].store(0, Ordering::SeqCst);
        self.end_flag.store(self.end(), Ordering::SeqCst);
        self.lifted.notify_waiters();
    }

    #[inline]
    fn kind_of(&self, purpose: usize, now_ms: u64) -> u8 {
        let k = self.kind[purpose].load(Ordering::Relaxed);
        if k == NONE || self.end_ms[purpose].load(Ordering::Relaxed) < now_ms {
            NONE
        } else {
            k
        }
    }

    /// The kind of pause in force at `now_ms` (the strongest of the
    /// purposes; NONE once they ended).
    #[inline]
    pub fn kind_at(&self, now_ms: u64) -> u8 {
        self.kind_of(BY_CLIENT, now_ms)
            .max(self.kind_of(BY_FAILOVER, now_ms))
    }

    /// The end of the pause in force (ms since the epoch, 0 for none),
    /// kept up to date by [`Pause::pause`] and [`Pause::unpause`]: the
    /// keyspace holds this (`Keyspace::with_propagation_flag`) and does not
    /// expire keys lazily until then.
    pub fn end_flag(&self) -> std::sync::Arc<AtomicU64> {
        self.end_flag.clone()
    }

    /// The latest end (ms since the epoch) of the pauses set, 0 when none
    /// is.
    fn end(&self) -> u64 {
        (0..2)
            .filter(|&p| self.kind[p].load(Ordering::SeqCst) != NONE)
            .map(|p| self.end_ms[p].load(Ordering::SeqCst))
            .max()
            .unwrap_or(0)
    }

    /// True while writes (and so expiry and eviction) are paused.
    #[inline]
    pub fn writes_paused(&self, now_ms: u64) -> bool {
        self.kind_at(now_ms) != NONE
    }

    /// Waits until a pause ends or is lifted (or changes: the caller
    /// checks again); `now` is the server's clock, ms since the epoch.
    pub async fn wait(&self, now: u64) {
        let notified = self.lifted.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.kind_at(now) == NONE {
            return;
        }
        // The earliest end among the pauses in force; wake a little after
        // it (the end itself still pauses), at least every second.
        let end = (0..2)
            .filter(|&p| self.kind_of(p, now) != NONE)
            .map(|p| self.end_ms[p].load(Ordering::SeqCst))
            .min()
            .unwrap_or(now);
        let wait = (end.saturating_sub(now) + 1).min(1000);
        tokio::select! {
            () = notified => {}
            () = tokio::time::sleep(std::time::Duration::from_millis(wait)) => {}
        }
    }
}
