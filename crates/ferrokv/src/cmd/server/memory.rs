//! MEMORY USAGE / STATS / DOCTOR / MALLOC-STATS / PURGE / HELP, with the
//! replies, field order and texts of Redis 7.0 (object.c `memoryCommand`,
//! `objectComputeSize`, `getMemoryOverheadData`, `getMemoryDoctorReport`),
//! written anew over ferrokv's own accounting:
//!
//! - `used_memory` is what the counting allocator (memory.rs) holds: the
//!   bytes requested by live allocations, as Redis's `zmalloc_used_memory`.
//! - A key costs one dict node ([`Dict::NODE_BYTES`], 64 bytes: chain link,
//!   the 32-byte entry record with the value's first 24 bytes, the key when
//!   it fits in 22 bytes), the key's bytes on the heap when longer, and what
//!   its value allocated ([`Value::memory_usage`]). MEMORY USAGE adds these
//!   up as Redis adds `objectComputeSize`, the key's sds and the
//!   `dictEntry`, so a key's figure is what deleting it would give back to
//!   `used_memory` (the bucket array aside, which MEMORY STATS counts as
//!   overhead, as Redis leaves the dict's table out of MEMORY USAGE).
//! - MEMORY STATS fills Redis's fields from the same sources; the ones
//!   ferrokv has no counterpart for are documented at [`Overhead`].

use super::{reply_help, LS};
use crate::cmd::{acl, cmd, container, err, flags::*, keyspecs, Command, Ctx};
use crate::db::dict::Dict;
use crate::db::smallbytes::INLINE_CAP;
use crate::db::value::Entry;
use crate::resp::Args;
use std::sync::atomic::Ordering;

/// Tips of the MEMORY subcommands that report on every shard.
const STATS_TIPS: &[&str] = &[
    "nondeterministic_output",
    "request_policy:all_shards",
    "response_policy:special",
];

/// MEMORY subcommands (Redis 7.0's flags, ACL categories and tips).
static MEMORY_SUBS: &[Command] = &[
    cmd("memory|doctor", 2, 0, (0, 0, 0), 0, memory_doctor)
        .doc("server", "4.0.0", "Outputs memory problems report", "O(1)")
        .tips(STATS_TIPS),
    cmd("memory|help", 2, LS, (0, 0, 0), 0, memory_help).doc(
        "server",
        "4.0.0",
        "Show helpful text about the different subcommands",
        "O(1)",
    ),
    cmd(
        "memory|malloc-stats",
        2,
        0,
        (0, 0, 0),
        0,
        memory_malloc_stats,
    )
    .doc(
        "server",
        "4.0.0",
        "Show allocator internal stats",
        "Depends on how much memory is allocated, could be slow",
    )
    .tips(STATS_TIPS),
    cmd("memory|purge", 2, 0, (0, 0, 0), 0, memory_purge)
        .doc(
            "server",
            "4.0.0",
            "Ask the allocator to release memory",
            "Depends on how much memory is allocated, could be slow",
        )
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd("memory|stats", 2, 0, (0, 0, 0), 0, memory_stats)
        .doc("server", "4.0.0", "Show memory usage details", "O(1)")
        .tips(STATS_TIPS),
    cmd("memory|usage", -3, READONLY, (2, 2, 1), 0, memory_usage)
        .key_specs(keyspecs::OBJECT_ENCODING)
        .doc(
            "server",
            "4.0.0",
            "Estimate the memory usage of a key",
            "O(N) where N is the number of samples.",
        ),
];

/// The MEMORY family's table entry.
pub static COMMANDS: &[Command] = &[container("memory", acl::SLOW, MEMORY_SUBS).doc(
    "server",
    "4.0.0",
    "A container for memory diagnostics commands",
    "Depends on subcommand.",
)];

/// Redis's default number of samples (OBJ_COMPUTE_SIZE_DEF_SAMPLES).
const DEFAULT_SAMPLES: usize = 5;

/// Bytes MEMORY USAGE reports for `key` holding `e`, its value estimated
/// from `samples` elements (`usize::MAX`: all): the key's node, the key's
/// heap bytes when it is longer than the 22 bytes kept in the node, the
/// value's own allocations and, in cluster mode, the key's 8-byte place in
/// the shard's slot index (Redis adds its slot-to-keys metadata there too).
pub fn key_memory_usage(key: &[u8], e: &Entry, samples: usize) -> usize {
    let mut n = Dict::<Entry>::NODE_BYTES + e.value.memory_usage(samples);
    if key.len() > INLINE_CAP {
        n += key.len();
    }
    if crate::db::dict::slot_sharding() {
        n += 8;
    }
    n
}

/// MEMORY USAGE key [SAMPLES count]: integer bytes (see
/// [`key_memory_usage`]), nil for a missing key. As Redis: the options
/// are parsed before the lookup (`ERR syntax error` for an unknown option,
/// a SAMPLES without a value or a negative count, `ERR value is not an
/// integer or out of range` for a bad count; 0 samples everything); the
/// key is found as `dictFind` finds it, so a key whose TTL passed but that
/// was not reclaimed yet still has a size; no keyspace hit or miss, no
/// access time update.
fn memory_usage(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let mut samples = DEFAULT_SAMPLES;
    let mut i = 3;
    while i < args.len() {
        if args.get(i).eq_ignore_ascii_case(b"samples") && i + 1 < args.len() {
            match crate::util::parse_i64(args.get(i + 1)) {
                None => return ctx.error(err::NOT_INT),
                Some(n) if n < 0 => return ctx.error(err::SYNTAX),
                Some(0) => samples = usize::MAX,
                Some(n) => samples = n as usize,
            }
            i += 2;
        } else {
            return ctx.error(err::SYNTAX);
        }
    }
    let key = args.get(2);
    let (h, shard) = ctx.lock(key);
    let usage = shard
        .peek_raw(h, key)
        .map(|e| key_memory_usage(key, e, samples));
    drop(shard);
    match usage {
        Some(n) => ctx.out.int(n as i64),
        None => ctx.out.null(),
    }
}

/// One database's bookkeeping bytes (MEMORY STATS `db.N`).
#[derive(Debug, Clone, Copy, Default)]
pub struct DbOverhead {
    /// Database index.
    pub db: usize,
    /// Keys (expired ones not reclaimed yet included, as Redis's dictSize).
    pub keys: usize,
    /// `overhead.hashtable.main`: the key nodes (64 bytes each) and the
    /// bucket arrays. Redis counts its dictEntry, robj and bucket per key.
    pub main: usize,
    /// `overhead.hashtable.expires`: the TTL index (16-byte slots).
    pub expires: usize,
    /// `overhead.hashtable.slot-to-keys`: the cluster slot index (0
    /// outside cluster mode).
    pub slot_to_keys: usize,
}

/// What MEMORY STATS and MEMORY DOCTOR report (Redis's
/// `redisMemOverhead`), bytes unless stated. Sources:
///
/// - `total_allocated`: `used_memory`; `peak_allocated`: its highest value
///   seen by the cron, INFO and MEMORY; `startup_allocated`: `used_memory`
///   once the server was set up, before the dataset was loaded.
/// - `repl_backlog`: the bytes held by the replication backlog. ferrokv's
///   replicas read from the backlog itself, so `clients_slaves` is 0.
/// - `clients_normal`: query buffers (used and free) and pending output of
///   every client but replicas.
/// - `cluster_links`: 0 (the cluster bus keeps no per-link buffers worth
///   reporting). `aof_buffer`: the AOF bytes not yet written.
/// - `lua_caches` / `functions_caches`: the EVAL script cache and the
///   function libraries' code (INFO's used_memory_scripts_eval and
///   used_memory_functions).
/// - `allocator_allocated`: `used_memory`; `allocator_active` and
///   `allocator_resident`: the process's resident anonymous memory (the
///   pages the allocator holds; mimalloc does not tell which of them hold
///   live blocks, so jemalloc's active/resident split has no counterpart
///   and `allocator-rss` is 1); `rss`: the process's resident set, so
///   `rss-overhead` is the program's code and libraries.
#[derive(Debug, Clone, Default)]
pub struct Overhead {
    /// peak.allocated.
    pub peak_allocated: u64,
    /// total.allocated.
    pub total_allocated: u64,
    /// startup.allocated.
    pub startup_allocated: u64,
    /// replication.backlog.
    pub repl_backlog: u64,
    /// clients.slaves.
    pub clients_slaves: u64,
    /// clients.normal.
    pub clients_normal: u64,
    /// cluster.links.
    pub cluster_links: u64,
    /// aof.buffer.
    pub aof_buffer: u64,
    /// lua.caches.
    pub lua_caches: u64,
    /// functions.caches.
    pub functions_caches: u64,
    /// Databases holding keys, in order.
    pub dbs: Vec<DbOverhead>,
    /// overhead.total: startup, backlog, clients, links, AOF buffer,
    /// script caches and the databases' bookkeeping.
    pub overhead_total: u64,
    /// keys.count.
    pub total_keys: u64,
    /// keys.bytes-per-key: (total - startup) / keys, 0 without keys.
    pub bytes_per_key: u64,
    /// dataset.bytes: total - overhead.total (0 if negative).
    pub dataset: u64,
    /// dataset.percentage: dataset * 100 / (total - startup), a float.
    pub dataset_perc: f32,
    /// peak.percentage: total * 100 / peak, a float.
    pub peak_perc: f32,
    /// allocator.allocated.
    pub allocator_allocated: u64,
    /// allocator.active.
    pub allocator_active: u64,
    /// allocator.resident.
    pub allocator_resident: u64,
    /// The process's resident set size.
    pub rss: u64,
    /// Replica connections.
    pub replicas: usize,
    /// Other connections.
    pub normal_clients: usize,
    /// Scripts in the EVAL cache.
    pub cached_scripts: usize,
}

impl Overhead {
    /// Gathers the figures (Redis's `getMemoryOverheadData`); walks every
    /// shard of every database once.
    pub fn gather(server: &crate::server::Server) -> Overhead {
        let used = crate::evict::used_memory();
        let peak = server
            .stats
            .memory_peak
            .fetch_max(used, Ordering::Relaxed)
            .max(used);
        let mut o = Overhead {
            peak_allocated: peak,
            total_allocated: used,
            startup_allocated: server.stats.memory_startup.load(Ordering::Relaxed),
            ..Overhead::default()
        };
        let r = &server.repl;
        if r.backlog.active() {
            o.repl_backlog = r.backlog.span().1;
        }
        for c in server.clients.all() {
            let pending = c.outbox.pending() as u64;
            let i = c.info.lock();
            if i.flags.contains('S') {
                o.replicas += 1;
                continue;
            }
            o.normal_clients += 1;
            o.clients_normal += (i.qbuf + i.qbuf_free) as u64 + pending;
        }
        o.aof_buffer = server
            .aof
            .info_fields()
            .into_iter()
            .find(|(k, _)| *k == "aof_buffer_length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        if let Some(e) = server.scripts.eval.try_lock() {
            o.lua_caches = e.cache_bytes;
            o.cached_scripts = e.cache.len();
        }
        if let Some(f) = server.scripts.functions.try_lock() {
            o.functions_caches = f
                .libraries
                .iter()
                .map(|l| l.code.len() as u64 + l.name.len() as u64)
                .sum();
        }
        let ks = &server.keyspace;
        for db in 0..ks.db_count() {
            let mut d = DbOverhead {
                db,
                ..DbOverhead::default()
            };
            let base = ks.db(db);
            for i in 0..crate::db::keyspace::SHARDS {
                let shard = base.shard_at(i).lock();
                d.keys += shard.len();
                let (main, expires, slots) = shard.overhead();
                d.main += main;
                d.expires += expires;
                d.slot_to_keys += slots;
            }
            if d.keys > 0 {
                o.total_keys += d.keys as u64;
                o.dbs.push(d);
            }
        }
        o.overhead_total = o.startup_allocated
            + o.repl_backlog
            + o.clients_slaves
            + o.clients_normal
            + o.cluster_links
            + o.aof_buffer
            + o.lua_caches
            + o.functions_caches
            + o.dbs
                .iter()
                .map(|d| (d.main + d.expires + d.slot_to_keys) as u64)
                .sum::<u64>();
        o.dataset = used.saturating_sub(o.overhead_total);
        o.peak_perc = used as f32 * 100.0 / peak.max(1) as f32;
        let net = if used > o.startup_allocated {
            used - o.startup_allocated
        } else {
            1
        };
        o.dataset_perc = o.dataset as f32 * 100.0 / net as f32;
        o.bytes_per_key = net.checked_div(o.total_keys).unwrap_or(0);
        let resident = crate::memory::anon_rss_bytes()
            .filter(|&r| r > 0)
            .unwrap_or(used);
        o.allocator_allocated = used;
        o.allocator_active = resident;
        o.allocator_resident = resident;
        o.rss = crate::memory::rss_bytes();
        o
    }

    /// (ratio, bytes) of `a` over `b`, Redis's float ratio and signed
    /// difference.
    fn ratio(a: u64, b: u64) -> (f32, i64) {
        (a as f32 / b.max(1) as f32, a as i64 - b as i64)
    }

    /// allocator-fragmentation: active over allocated.
    pub fn allocator_frag(&self) -> (f32, i64) {
        Self::ratio(self.allocator_active, self.allocator_allocated)
    }

    /// allocator-rss: resident over active.
    pub fn allocator_rss(&self) -> (f32, i64) {
        Self::ratio(self.allocator_resident, self.allocator_active)
    }

    /// rss-overhead: the process's RSS over the allocator's resident bytes.
    pub fn rss_extra(&self) -> (f32, i64) {
        Self::ratio(self.rss, self.allocator_resident)
    }

    /// fragmentation: the process's RSS over used_memory.
    pub fn total_frag(&self) -> (f32, i64) {
        Self::ratio(self.rss, self.total_allocated)
    }
}

/// MEMORY STATS: a map (RESP2: flat array) of Redis 7.0's 27 fields in
/// its order, plus one `db.N` map (`overhead.hashtable.main`,
/// `overhead.hashtable.expires`, `overhead.hashtable.slot-to-keys`) per
/// database holding keys, after `functions.caches`. Integers are bytes,
/// ratios and percentages doubles (computed in single precision as
/// Redis does). See [`Overhead`] for what each figure is here.
fn memory_stats(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    let o = Overhead::gather(ctx.server);
    let out = &mut *ctx.out;
    out.map(27 + o.dbs.len());
    let int = |out: &mut crate::resp::Out, k: &str, v: i64| {
        out.bulk(k.as_bytes());
        out.int(v);
    };
    int(out, "peak.allocated", o.peak_allocated as i64);
    int(out, "total.allocated", o.total_allocated as i64);
    int(out, "startup.allocated", o.startup_allocated as i64);
    int(out, "replication.backlog", o.repl_backlog as i64);
    int(out, "clients.slaves", o.clients_slaves as i64);
    int(out, "clients.normal", o.clients_normal as i64);
    int(out, "cluster.links", o.cluster_links as i64);
    int(out, "aof.buffer", o.aof_buffer as i64);
    int(out, "lua.caches", o.lua_caches as i64);
    int(out, "functions.caches", o.functions_caches as i64);
    for d in &o.dbs {
        out.bulk(format!("db.{}", d.db).as_bytes());
        out.map(3);
        int(out, "overhead.hashtable.main", d.main as i64);
        int(out, "overhead.hashtable.expires", d.expires as i64);
        int(
            out,
            "overhead.hashtable.slot-to-keys",
            d.slot_to_keys as i64,
        );
    }
    int(out, "overhead.total", o.overhead_total as i64);
    int(out, "keys.count", o.total_keys as i64);
    int(out, "keys.bytes-per-key", o.bytes_per_key as i64);
    int(out, "dataset.bytes", o.dataset as i64);
    let dbl = |out: &mut crate::resp::Out, k: &str, v: f32| {
        out.bulk(k.as_bytes());
        out.double(v as f64);
    };
    dbl(out, "dataset.percentage", o.dataset_perc);
    dbl(out, "peak.percentage", o.peak_perc);
    int(out, "allocator.allocated", o.allocator_allocated as i64);
    int(out, "allocator.active", o.allocator_active as i64);
    int(out, "allocator.resident", o.allocator_resident as i64);
    let (r, b) = o.allocator_frag();
    dbl(out, "allocator-fragmentation.ratio", r);
    int(out, "allocator-fragmentation.bytes", b);
    let (r, b) = o.allocator_rss();
    dbl(out, "allocator-rss.ratio", r);
    int(out, "allocator-rss.bytes", b);
    let (r, b) = o.rss_extra();
    dbl(out, "rss-overhead.ratio", r);
    int(out, "rss-overhead.bytes", b);
    let (r, b) = o.total_frag();
    dbl(out, "fragmentation", r);
    int(out, "fragmentation.bytes", b);
}

/// Redis 7.0's MEMORY DOCTOR report for `o` (`getMemoryDoctorReport`):
/// the "empty instance" text under 5 MB allocated, otherwise its checks
/// (peak over 150% of used; total, allocator and RSS fragmentation over
/// their ratios and 10 MB; clients over 200 KB each on average; replica
/// buffers over 10 MB; more than 1000 cached scripts) with Redis's texts,
/// the allocator named `mimalloc`.
pub fn doctor_report(o: &Overhead) -> String {
    const MB10: i64 = 10 << 20;
    let mut issues: Vec<&str> = Vec::new();
    let empty = o.total_allocated < 5 * 1024 * 1024;
    if !empty {
        if o.peak_allocated as f32 / o.total_allocated as f32 > 1.5 {
            issues.push(" * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n");
        }
        let (r, b) = o.total_frag();
        if r > 1.4 && b > MB10 {
            issues.push(" * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"mimalloc\".\n\n");
        }
        let (r, b) = o.allocator_frag();
        if r > 1.1 && b > MB10 {
            issues.push(" * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n");
        }
        let (r, b) = o.allocator_rss();
        if r > 1.1 && b > MB10 {
            issues.push(" * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n");
        }
        let (r, b) = o.rss_extra();
        if r > 1.1 && b > MB10 {
            issues.push(" * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n");
        }
        if o.replicas > 0 && o.clients_slaves > 10 * 1024 * 1024 {
            issues.push(" * Big replica buffers: The replica output buffers in this instance are greater than 10MB for each replica (on average). This likely means that there is some replica instance that is struggling receiving data, either because it is too slow or because of networking issues. As a result, data piles on the master output buffers. Please try to identify what replica is not receiving data correctly and why. You can use the INFO output in order to check the replicas delays and the CLIENT LIST command to check the output buffers of each replica.\n\n");
        }
        if o.clients_normal / (o.normal_clients.max(1) as u64) > 1024 * 200 {
            issues.push(" * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n");
        }
        if o.cached_scripts > 1000 {
            issues.push(" * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.\n\n");
        }
    }
    if empty {
        "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n".to_string()
    } else if issues.is_empty() {
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n".to_string()
    } else {
        let mut s = String::from(
            "Sam, I detected a few issues in this Redis instance memory implants:\n\n",
        );
        for i in issues {
            s.push_str(i);
        }
        s.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
        s
    }
}

/// MEMORY DOCTOR: [`doctor_report`] as a verbatim string (RESP2: bulk).
fn memory_doctor(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    let report = doctor_report(&Overhead::gather(ctx.server));
    ctx.out.verbatim(report.as_bytes());
}

/// MEMORY MALLOC-STATS: the allocator's own statistics report (mimalloc's
/// `mi_stats_print_out`; Redis prints jemalloc's) as a verbatim string;
/// without allocator hooks, Redis's bulk reply for an allocator without
/// statistics.
fn memory_malloc_stats(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    match crate::memory::allocator_hooks() {
        Some(h) => {
            let text = (h.stats)();
            ctx.out.verbatim(text.as_bytes());
        }
        None => ctx
            .out
            .bulk(b"Stats not supported for the current allocator"),
    }
}

/// MEMORY PURGE: +OK after asking the allocator to return every freed
/// page to the system (mimalloc's forced collection; Redis purges
/// jemalloc's arenas). Nothing to do without allocator hooks, +OK as
/// Redis answers for allocators other than jemalloc.
fn memory_purge(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if let Some(h) = crate::memory::allocator_hooks() {
        (h.purge)();
    }
    ctx.out.ok();
}

/// MEMORY HELP: Redis 7.0's help lines.
fn memory_help(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    reply_help(
        ctx,
        "MEMORY",
        &[
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doctor_texts() {
        let mut o = Overhead {
            total_allocated: 1 << 20,
            peak_allocated: 1 << 20,
            ..Overhead::default()
        };
        assert!(doctor_report(&o).starts_with("Hi Sam, this instance is empty"));
        o.total_allocated = 64 << 20;
        o.peak_allocated = 64 << 20;
        o.allocator_allocated = 64 << 20;
        o.allocator_active = 64 << 20;
        o.allocator_resident = 64 << 20;
        o.rss = 64 << 20;
        assert!(doctor_report(&o).starts_with("Hi Sam, I can't find any memory issue"));
        o.peak_allocated = 200 << 20;
        let r = doctor_report(&o);
        assert!(r.starts_with("Sam, I detected a few issues"));
        assert!(r.contains(" * Peak memory:"));
        assert!(r.ends_with("I'm here to keep you safe, Sam. I want to help you.\n"));
    }
}
