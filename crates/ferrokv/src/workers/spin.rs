//! Idle polling: an I/O worker keeps polling for input for a few
//! microseconds after its last batch before it sleeps (`io-idle-poll-us`).
//!
//! Why: when a worker runs out of ready connections its runtime blocks in
//! `epoll_wait`, and the next request must wake it. On Linux that wake-up
//! (`sock_def_readable` → `ep_poll_callback` → `try_to_wake_up`, an
//! inter-processor interrupt when the worker slept on another core, a VM
//! exit under virtualisation) is paid inside the *sender's* `send`. Under
//! redis-benchmark the client is the bottleneck, and a server that finishes
//! each batch quickly and sleeps makes many of the client's sends pay that
//! wake-up: `perf record` on redis-benchmark (-P 16, 50 clients) showed 14%
//! of the client's CPU in `sock_def_readable` against a server that slept
//! between batches, 2% against redis-server (slower, so rarely asleep when
//! a request arrives), and the faster server got fewer requests per second.
//!
//! How: each worker runtime's `block_on` future is [`run`]. After a batch
//! it yields in a loop; while a task is yielding, tokio's current-thread
//! scheduler polls the reactor with a zero timeout (`epoll_wait(…, 0)`)
//! instead of blocking, so a request arriving meanwhile finds no sleeping
//! waiter to wake. Each round also calls `sched_yield`, so a spinning
//! worker gives its core to any other runnable thread (a client on the
//! same machine, another worker). The spin lasts at most `io-idle-poll-us`
//! (default 50 µs), and only while most recent gaps between batches were
//! that short ([`Budget`]): a lightly loaded server sleeps at once, an
//! idle one uses no CPU. Seastar's reactor polls the same way
//! (`--idle-poll-time-us`).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

thread_local! {
    /// Batches executed on this thread.
    static BATCHES: Cell<u64> = const { Cell::new(0) };
    /// The spinner's waker while it sleeps.
    static PARKED: RefCell<Option<Waker>> = const { RefCell::new(None) };
}

/// Called by a connection after each batch of requests: counts it and,
/// when this thread's spinner sleeps, wakes it (a wake-up within the same
/// runtime: no system call).
#[inline]
pub fn batch_done() {
    BATCHES.with(|b| b.set(b.get().wrapping_add(1)));
    PARKED.with(|p| {
        if let Some(w) = p.borrow_mut().take() {
            w.wake();
        }
    });
}

fn batches() -> u64 {
    BATCHES.with(|b| b.get())
}

/// Resolves at this thread's next batch.
struct NextBatch {
    seen: u64,
}

impl Future for NextBatch {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if batches() != self.seen {
            return Poll::Ready(());
        }
        PARKED.with(|p| *p.borrow_mut() = Some(cx.waker().clone()));
        Poll::Pending
    }
}

/// Whether to poll after a batch: a running share of idle periods (the gap
/// from the end of one batch to the next) that were short enough for a
/// poll of `io-idle-poll-us` to catch the next batch. The gap is measured
/// whether or not the worker polled, so a load that speeds up is noticed.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Exponential moving average of hits (gap ≤ ceiling), in 1/256ths,
    /// weight 1/8 per idle period.
    hits: u32,
}

impl Default for Budget {
    fn default() -> Self {
        Budget { hits: 256 }
    }
}

impl Budget {
    /// How long to poll now, µs, given the ceiling `max`
    /// (`io-idle-poll-us`): `max` while at least half of the recent idle
    /// periods were short enough, otherwise 0 (sleep at once).
    pub fn current(&self, max: u64) -> u64 {
        if self.hits >= 128 {
            max
        } else {
            0
        }
    }

    /// Records an idle period of `gap_us` µs under the ceiling `max`.
    pub fn after(&mut self, gap_us: u64, max: u64) {
        let hit = max > 0 && gap_us <= max;
        self.hits = self.hits - self.hits / 8 + if hit { 32 } else { 0 };
    }
}

/// The idle poller of one I/O worker thread: the worker runtime's
/// `block_on` future, for the life of the runtime (never returns).
/// `idle_poll_us` is `io-idle-poll-us`: the longest spin after a batch, µs
/// (0 = sleep at once), changed by CONFIG SET while it runs.
pub async fn run(idle_poll_us: std::sync::Arc<AtomicU64>) {
    let mut budget = Budget::default();
    NextBatch { seen: batches() }.await;
    loop {
        // A batch just ran: an idle period may begin.
        let seen = batches();
        let t0 = Instant::now();
        let max = idle_poll_us.load(Ordering::Relaxed);
        let limit = budget.current(max);
        let mut caught = false;
        if limit > 0 {
            loop {
                // Back to the scheduler: it runs the connections that
                // became ready and, with nothing else to run, polls the
                // reactor without blocking before resuming this task.
                tokio::task::yield_now().await;
                if batches() != seen {
                    caught = true;
                    break;
                }
                if t0.elapsed().as_micros() as u64 >= limit {
                    break;
                }
                std::thread::yield_now();
            }
        }
        if !caught {
            NextBatch { seen }.await;
        }
        budget.after(t0.elapsed().as_micros() as u64, max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_while_most_gaps_are_short() {
        let mut b = Budget::default();
        assert_eq!(b.current(50), 50);
        // Gaps longer than the ceiling: polling stops after a few.
        let mut misses = 0;
        while b.current(50) == 50 {
            b.after(1000, 50);
            misses += 1;
        }
        assert_eq!(misses, 6);
        assert_eq!(b.current(50), 0);
        for _ in 0..100 {
            b.after(1000, 50);
        }
        assert_eq!(b.current(50), 0);
        // Short gaps again (measured while not polling): it resumes.
        let mut hits = 0;
        while b.current(50) == 0 {
            b.after(10, 50);
            hits += 1;
        }
        assert!(hits <= 6, "{hits}");
        // One long pause among short gaps does not stop it.
        for _ in 0..20 {
            b.after(10, 50);
        }
        b.after(5_000_000, 50);
        assert_eq!(b.current(50), 50);
        // A higher ceiling counts longer gaps as short; 0 is off.
        let mut b = Budget::default();
        for _ in 0..20 {
            b.after(1000, 2000);
        }
        assert_eq!(b.current(2000), 2000);
        assert_eq!(b.current(0), 0);
        for _ in 0..20 {
            b.after(0, 0);
        }
        assert_eq!(b.current(50), 0);
    }
}
