//! Server statistics for INFO (stats, commandstats, errorstats, clients).
//!
//! Counters bumped on every command live in per-thread blocks
//! ([`ThreadStats`]): each worker thread writes only its own block (relaxed
//! atomics, no shared cache line between cores) and INFO sums all blocks.
//! Rare events (errors by code, connections) use shared counters.

use parking_lot::Mutex;
use std::cell::RefCell;
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
    /// Latency histogram of the executed calls (LATENCY HISTOGRAM),
    /// allocated at the command's first call on this thread with
    /// `latency-tracking` on (Redis allocates it on the first call too).
    pub latency: std::sync::OnceLock<Box<LatencyHistogram>>,
}

/// Buckets of a [`LatencyHistogram`]: the [`LATENCY_REPORT_US`] buckets
/// LATENCY HISTOGRAM reports, and one for slower calls.
pub const LATENCY_BUCKETS: usize = LATENCY_REPORT_US.len() + 1;

/// The `histogram_usec` keys of LATENCY HISTOGRAM, microseconds. Redis 7.0
/// records each call's duration (whole microseconds, as nanoseconds) in an
/// HdrHistogram tracking 1 ns to 1 s with 2 significant digits and reports
/// it with a logarithmic iterator from 1024 ns, doubling: each report is
/// the highest value equivalent to 1024 * 2^k ns (2^(10+k) + 2^(k+3) - 1
/// ns) in microseconds, with the count of calls up to that value. Levels
/// past 1 s are never reached, so calls slower than the last one (0.54 s)
/// count in `calls` only, as in Redis.
pub const LATENCY_REPORT_US: [u64; 20] = {
    let mut t = [0u64; 20];
    let mut k = 0;
    while k < 20 {
        t[k] = bucket_upper_ns(k) / 1000;
        k += 1;
    }
    t
};

/// The highest duration, nanoseconds, that report level `k` of
/// [`LATENCY_REPORT_US`] stands for (the HdrHistogram's highest value
/// equivalent to 1024 * 2^k ns): 2^(10+k) + 2^(k+3) - 1.
pub const fn bucket_upper_ns(k: usize) -> u64 {
    (1u64 << (10 + k)) + (1u64 << (k + 3)) - 1
}

/// A command's latency histogram (see [`LATENCY_REPORT_US`]): calls per
/// bucket, the last bucket holding the calls too slow to be reported.
#[derive(Debug, Default)]
pub struct LatencyHistogram(pub [AtomicU64; LATENCY_BUCKETS]);

impl LatencyHistogram {
    /// The bucket of a call of `us` microseconds: the first report level
    /// whose highest equivalent value (in ns) is at least `us * 1000`.
    pub fn bucket(us: u64) -> usize {
        let ns = us.saturating_mul(1000).max(1);
        (0..LATENCY_REPORT_US.len())
            .find(|&k| ns <= bucket_upper_ns(k))
            .unwrap_or(LATENCY_BUCKETS - 1)
    }
}

impl CmdStat {
    /// Records a call of `us` microseconds in the latency histogram (the
    /// calling thread owns this block).
    #[inline]
    pub fn record_latency(&self, us: u64) {
        let h = self.latency.get_or_init(Box::default);
        bump(&h.0[LatencyHistogram::bucket(us)], 1);
    }
}

/// Number of memcached protocol counters per thread (their meaning:
/// `cmd::memcache::counter`).
pub const MC_COUNTERS: usize = 23;

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
    /// Write commands that did not fail (INFO rdb_changes_since_last_save;
    /// counts commands, where Redis counts modified keys).
    pub dirty: AtomicU64,
    /// memcached protocol counters (`stats`), indexed by
    /// `cmd::memcache::counter`.
    pub mc: [AtomicU64; MC_COUNTERS],
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
            dirty: AtomicU64::new(0),
            mc: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// Relaxed add on a counter owned by the current thread.
#[inline]
pub fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

thread_local! {
    /// This thread's counter block of each server it served, by
    /// [`StatsId`] (one entry in a server process; tests may run several
    /// servers on one thread).
    static LOCAL: RefCell<Vec<(u64, Arc<ThreadStats>)>> = const { RefCell::new(Vec::new()) };
}

/// A process-unique id of a [`Stats`] (a server), so a thread finds its
/// counter block of that server, and never that of a server dropped
/// before, even at the same address.
#[derive(Debug)]
pub struct StatsId(u64);

impl Default for StatsId {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        StatsId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// All statistics.
#[derive(Debug, Default)]
pub struct Stats {
    id: StatsId,
    threads: Mutex<Vec<Arc<ThreadStats>>>,
    /// Error replies by error code (errorstats), and their total.
    pub errors: Mutex<BTreeMap<String, u64>>,
    /// total_connections_received.
    pub connections: AtomicU64,
    /// rejected_connections (maxclients).
    pub rejected_connections: AtomicU64,
    /// total_forks: background saves, AOF rewrites and replication
    /// snapshots started. Redis forks a child for each; ferrokv runs them
    /// on threads and counts the same events.
    pub forks: AtomicU64,
    /// unexpected_error_replies: errors a command replied while the AOF was
    /// loading (later: to a master or a replica), Redis's
    /// `stat_unexpected_error_replies`.
    pub unexpected_error_replies: AtomicU64,
    /// Baseline subtracted after CONFIG RESETSTAT, per counter name.
    reset_base: Mutex<BTreeMap<&'static str, u64>>,
    /// `Keyspace::expired_keys()` at the last CONFIG RESETSTAT (INFO
    /// expired_keys reports the difference).
    pub expired_base: AtomicU64,
    /// [`Totals::dirty`] at the last successful save (INFO
    /// rdb_changes_since_last_save reports the difference).
    pub dirty_base: AtomicU64,
    /// Samples behind INFO's instantaneous_* fields.
    pub inst: Mutex<InstMetrics>,
    /// The highest used_memory INFO has seen (used_memory_peak), bytes.
    pub memory_peak: AtomicU64,
    /// used_memory when the server had started, before the dataset was
    /// loaded (Redis's `initial_memory_usage`, MEMORY STATS
    /// `startup.allocated`), bytes.
    pub memory_startup: AtomicU64,
}

/// Number of samples averaged by the instantaneous metrics (Redis keeps 16,
/// taken every 100 ms).
const INST_SAMPLES: usize = 16;

/// Rolling per-second rates of commands and network bytes, sampled by the
/// cron (`Stats::sample`) as Redis's `trackInstantaneousMetric` does: each
/// sample is the rate since the previous one, INFO reports their mean.
#[derive(Debug, Default)]
pub struct InstMetrics {
    last: Option<(u64, Totals)>,
    /// (ops/s, input bytes/s, output bytes/s) per sample.
    rates: std::collections::VecDeque<(f64, f64, f64)>,
}

impl InstMetrics {
    /// Mean (ops/s, input bytes/s, output bytes/s) over the kept samples.
    pub fn rates(&self) -> (f64, f64, f64) {
        let n = self.rates.len().max(1) as f64;
        let s = self
            .rates
            .iter()
            .fold((0.0, 0.0, 0.0), |a, r| (a.0 + r.0, a.1 + r.1, a.2 + r.2));
        (s.0 / n, s.1 / n, s.2 / n)
    }
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
    /// Successful write commands since start (never reset by RESETSTAT).
    pub dirty: u64,
}

impl Stats {
    /// The calling thread's counter block, created on first use. `ncmds` is
    /// the size of the command table.
    #[inline]
    pub fn local(&self, ncmds: usize) -> Arc<ThreadStats> {
        LOCAL.with(|c| {
            let mut c = c.borrow_mut();
            if let Some((_, t)) = c.iter().find(|(id, _)| *id == self.id.0) {
                return t.clone();
            }
            let t = Arc::new(ThreadStats::new(ncmds));
            self.threads.lock().push(t.clone());
            // Entries of servers that are gone hold only their own block.
            c.retain(|(_, t)| Arc::strong_count(t) > 1);
            c.push((self.id.0, t.clone()));
            t
        })
    }

    /// Records an error reply: `code` is the first word of the message
    /// (ERR, WRONGTYPE, ...).
    pub fn record_error(&self, msg: &str) {
        let code = msg.split(' ').next().unwrap_or("ERR");
        let code = if code.is_empty() { "ERR" } else { code };
        *self.errors.lock().entry(code.to_string()).or_insert(0) += 1;
    }

    /// Sums memcached counter `i` (`cmd::memcache::counter`) over every
    /// thread.
    pub fn sum_mc(&self, i: usize) -> u64 {
        self.threads
            .lock()
            .iter()
            .map(|t| t.mc[i].load(Ordering::Relaxed))
            .sum()
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
            t.dirty += th.dirty.load(Ordering::Relaxed);
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

    /// Takes one instantaneous-metrics sample at `now_ms` (called by the
    /// cron every tick).
    pub fn sample(&self, now_ms: u64) {
        let t = self.totals();
        let mut m = self.inst.lock();
        if let Some((at, prev)) = m.last.take() {
            let dt = now_ms.saturating_sub(at);
            if dt > 0 {
                let per_s = |a: u64, b: u64| a.saturating_sub(b) as f64 * 1000.0 / dt as f64;
                let r = (
                    per_s(t.commands, prev.commands),
                    per_s(t.net_in, prev.net_in),
                    per_s(t.net_out, prev.net_out),
                );
                m.rates.push_back(r);
                if m.rates.len() > INST_SAMPLES {
                    m.rates.pop_front();
                }
            }
        }
        m.last = Some((now_ms, t));
    }

    /// Sum of all error replies (INFO total_error_replies).
    pub fn total_errors(&self) -> u64 {
        self.errors.lock().values().sum()
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

    /// The latency histogram of command id `i` summed over threads: calls
    /// per bucket (see [`LatencyHistogram`]); None when the command has
    /// no histogram (never called with `latency-tracking` on since start
    /// or the last CONFIG RESETSTAT).
    pub fn latency(&self, i: usize) -> Option<[u64; LATENCY_BUCKETS]> {
        let mut r = None;
        for th in self.threads.lock().iter() {
            if let Some(h) = th.cmds.get(i).and_then(|c| c.latency.get()) {
                let sum = r.get_or_insert([0u64; LATENCY_BUCKETS]);
                for (s, b) in sum.iter_mut().zip(h.0.iter()) {
                    *s += b.load(Ordering::Relaxed);
                }
            }
        }
        r.filter(|b| b.iter().any(|&n| n > 0))
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
                if let Some(h) = c.latency.get() {
                    for b in h.0.iter() {
                        b.store(0, Ordering::Relaxed);
                    }
                }
            }
        }
        self.errors.lock().clear();
        *self.inst.lock() = InstMetrics::default();
        self.connections.store(0, Ordering::Relaxed);
        self.rejected_connections.store(0, Ordering::Relaxed);
        self.forks.store(0, Ordering::Relaxed);
        self.unexpected_error_replies.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_buckets_follow_redis_report_levels() {
        assert_eq!(
            LATENCY_REPORT_US,
            [
                1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2113, 4227, 8454, 16908, 33816, 67633,
                135266, 270532, 541065
            ]
        );
        // 1 µs = 1000 ns <= 1031 ns; 2 µs > 1031 but <= 2063.
        assert_eq!(LatencyHistogram::bucket(0), 0);
        assert_eq!(LatencyHistogram::bucket(1), 0);
        assert_eq!(LatencyHistogram::bucket(2), 1);
        assert_eq!(LatencyHistogram::bucket(3), 2);
        assert_eq!(LatencyHistogram::bucket(33), 5);
        assert_eq!(LatencyHistogram::bucket(34), 6);
        assert_eq!(LatencyHistogram::bucket(541_065), 19);
        assert_eq!(LatencyHistogram::bucket(541_066), LATENCY_BUCKETS - 1);
        assert_eq!(LatencyHistogram::bucket(u64::MAX), LATENCY_BUCKETS - 1);
    }
}
