//! Server statistics for INFO (stats, commandstats, errorstats, clients).
//!
//! Counters bumped on every command live in per-thread blocks
//! ([`ThreadStats`]): each worker thread writes only its own block (relaxed
//! atomics, no shared cache line between cores) and INFO sums all blocks.
//! Rare events (errors by code, connections) use shared counters.

use parking_lot::Mutex;
use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Per-command counters (INFO commandstats: calls, usec, rejected_calls,
/// failed_calls).
#[derive(Debug, Default)]
pub struct CmdStat {
    /// Times executed.
    pub calls: AtomicU64,
    /// Total execution time, microseconds.
    pub usec: AtomicU64,
    /// Refused before execution (arity, auth, ...).
    pub rejected: AtomicU64,
    /// Executed and replied with an error.
    pub failed: AtomicU64,
}

/// One worker thread's counters.
#[derive(Debug)]
pub struct ThreadStats {
    /// Indexed by command id (see `cmd::table`).
    pub cmds: Box<[CmdStat]>,
    /// total_commands_processed.
    pub commands: AtomicU64,
    /// keyspace_hits.
    pub hits: AtomicU64,
    /// keyspace_misses.
    pub misses: AtomicU64,
    /// total_net_input_bytes.
    pub net_in: AtomicU64,
    /// total_net_output_bytes.
    pub net_out: AtomicU64,
}

impl ThreadStats {
    fn new(n: usize) -> Self {
        ThreadStats {
            cmds: (0..n).map(|_| CmdStat::default()).collect(),
            commands: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            net_in: AtomicU64::new(0),
            net_out: AtomicU64::new(0),
        }
    }
}

/// Relaxed add on a counter owned by the current thread.
#[inline]
pub fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

thread_local! {
    static LOCAL: OnceCell<Arc<ThreadStats>> = const { OnceCell::new() };
}

/// All statistics.
#[derive(Debug, Default)]
pub struct Stats {
    threads: Mutex<Vec<Arc<ThreadStats>>>,
    /// Error replies by error code (errorstats), and their total.
    pub errors: Mutex<BTreeMap<String, u64>>,
    /// total_connections_received.
    pub connections: AtomicU64,
    /// rejected_connections (maxclients).
    pub rejected_connections: AtomicU64,
    /// Baseline subtracted after CONFIG RESETSTAT, per counter name.
    reset_base: Mutex<BTreeMap<&'static str, u64>>,
}

/// Summed per-thread counters.
#[derive(Debug, Default, Clone)]
pub struct Totals {
    /// total_commands_processed.
    pub commands: u64,
    /// keyspace_hits.
    pub hits: u64,
    /// keyspace_misses.
    pub misses: u64,
    /// total_net_input_bytes.
    pub net_in: u64,
    /// total_net_output_bytes.
    pub net_out: u64,
}

impl Stats {
    /// The calling thread's counter block, created on first use. `ncmds` is
    /// the size of the command table.
    #[inline]
    pub fn local(&self, ncmds: usize) -> Arc<ThreadStats> {
        LOCAL.with(|c| {
            c.get_or_init(|| {
                let t = Arc::new(ThreadStats::new(ncmds));
                self.threads.lock().push(t.clone());
                t
            })
            .clone()
        })
    }

    /// Records an error reply: `code` is the first word of the message
    /// (ERR, WRONGTYPE, ...).
    pub fn record_error(&self, msg: &str) {
        let code = msg.split(' ').next().unwrap_or("ERR");
        let code = if code.is_empty() { "ERR" } else { code };
        *self.errors.lock().entry(code.to_string()).or_insert(0) += 1;
    }

    /// Sums every thread's counters (minus the CONFIG RESETSTAT baseline).
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for th in self.threads.lock().iter() {
            t.commands += th.commands.load(Ordering::Relaxed);
            t.hits += th.hits.load(Ordering::Relaxed);
            t.misses += th.misses.load(Ordering::Relaxed);
            t.net_in += th.net_in.load(Ordering::Relaxed);
            t.net_out += th.net_out.load(Ordering::Relaxed);
        }
        let b = self.reset_base.lock();
        let base = |k| b.get(k).copied().unwrap_or(0);
        t.commands = t.commands.saturating_sub(base("commands"));
        t.hits = t.hits.saturating_sub(base("hits"));
        t.misses = t.misses.saturating_sub(base("misses"));
        t.net_in = t.net_in.saturating_sub(base("net_in"));
        t.net_out = t.net_out.saturating_sub(base("net_out"));
        t
    }

    /// Per-command sums: (calls, usec, rejected, failed) for command id `i`.
    pub fn command(&self, i: usize) -> (u64, u64, u64, u64) {
        let mut r = (0, 0, 0, 0);
        for th in self.threads.lock().iter() {
            if let Some(c) = th.cmds.get(i) {
                r.0 += c.calls.load(Ordering::Relaxed);
                r.1 += c.usec.load(Ordering::Relaxed);
                r.2 += c.rejected.load(Ordering::Relaxed);
                r.3 += c.failed.load(Ordering::Relaxed);
            }
        }
        r
    }

    /// CONFIG RESETSTAT: zeroes what INFO reports as counters.
    pub fn reset(&self) {
        let t = {
            let mut b = self.reset_base.lock();
            b.clear();
            drop(b);
            self.totals()
        };
        let mut b = self.reset_base.lock();
        b.insert("commands", t.commands);
        b.insert("hits", t.hits);
        b.insert("misses", t.misses);
        b.insert("net_in", t.net_in);
        b.insert("net_out", t.net_out);
        drop(b);
        for th in self.threads.lock().iter() {
            for c in th.cmds.iter() {
                // Owned by other threads: a racing increment may be lost,
                // which RESETSTAT tolerates.
                c.calls.store(0, Ordering::Relaxed);
                c.usec.store(0, Ordering::Relaxed);
                c.rejected.store(0, Ordering::Relaxed);
                c.failed.store(0, Ordering::Relaxed);
            }
        }
        self.errors.lock().clear();
        self.connections.store(0, Ordering::Relaxed);
        self.rejected_connections.store(0, Ordering::Relaxed);
    }
}
