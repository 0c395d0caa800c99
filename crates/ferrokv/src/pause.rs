//! CLIENT PAUSE: holding client commands back for a while (Redis 7.0's
//! `pauseClients` / `unpauseClients` / `blockPostponeClient`, networking.c
//! and server.c processCommand).
//!
//! A pause has a kind (WRITE: commands flagged `write` or
//! `may-replicate`, and EXEC of a transaction holding one; ALL: every
//! command) and an end time. A paused command is not refused: its
//! connection keeps the request (the client's `postponed` field)
//! and runs it once the pause is over (CLIENT UNPAUSE, or the end time),
//! so its reply comes late, as Redis's postponed clients. Replicas and the
//! master link are never paused. A second CLIENT PAUSE keeps the stronger
//! kind and the later end. While writes are paused, active expiry and
//! eviction do not delete keys (they would be writes).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// No pause.
pub const NONE: u8 = 0;
/// CLIENT PAUSE ... WRITE.
pub const WRITE: u8 = 1;
/// CLIENT PAUSE ... ALL.
pub const ALL: u8 = 2;

/// The pause state of a server.
#[derive(Default)]
pub struct Pause {
    kind: AtomicU8,
    /// End of the pause, ms since the epoch.
    end_ms: AtomicU64,
    /// Woken when the pause is lifted (CLIENT UNPAUSE).
    lifted: tokio::sync::Notify,
}

impl Pause {
    /// Pauses clients of `kind` (WRITE or ALL) until `end_ms`, keeping the
    /// stronger kind and the later end of a pause already on.
    pub fn pause(&self, kind: u8, end_ms: u64) {
        self.kind.fetch_max(kind, Ordering::SeqCst);
        self.end_ms.fetch_max(end_ms, Ordering::SeqCst);
    }

    /// Lifts the pause (CLIENT UNPAUSE) and wakes the postponed clients.
    pub fn unpause(&self) {
        self.kind.store(NONE, Ordering::SeqCst);
        self.end_ms.store(0, Ordering::SeqCst);
        self.lifted.notify_waiters();
    }

    /// The kind of pause in force at `now_ms` (NONE once it ended).
    #[inline]
    pub fn kind_at(&self, now_ms: u64) -> u8 {
        let k = self.kind.load(Ordering::Relaxed);
        if k == NONE || self.end_ms.load(Ordering::Relaxed) < now_ms {
            NONE
        } else {
            k
        }
    }

    /// True while writes (and so expiry and eviction) are paused.
    #[inline]
    pub fn writes_paused(&self, now_ms: u64) -> bool {
        self.kind_at(now_ms) != NONE
    }

    /// Waits until the pause ends or is lifted (or changes: the caller
    /// checks again); `now` is the server's clock, ms since the epoch.
    pub async fn wait(&self, now: u64) {
        let notified = self.lifted.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let end = self.end_ms.load(Ordering::SeqCst);
        if self.kind.load(Ordering::SeqCst) == NONE || end < now {
            return;
        }
        // Wake a little after the end (the end itself still pauses), and
        // at least every second, in case the pause was extended.
        let wait = (end - now + 1).min(1000);
        tokio::select! {
            () = notified => {}
            () = tokio::time::sleep(std::time::Duration::from_millis(wait)) => {}
        }
    }
}
