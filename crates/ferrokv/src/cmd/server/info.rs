//! INFO (Redis 7.0 server.c `genRedisInfoString`): the server report in
//! Redis's sections and field names (server, clients, memory, persistence,
//! stats, replication, cpu, modules, commandstats, errorstats, cluster,
//! keyspace), and `bytes_to_human`, which other modules use.

use super::{lossy, lru_clock, LS};
use crate::cmd::{acl, cmd, table, Command, Ctx};
use crate::resp::Args;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

/// The INFO family's table entry.
pub static COMMANDS: &[Command] =
    &[
        cmd("info", -1, LS, (0, 0, 0), acl::SLOW | acl::DANGEROUS, info)
            .doc(
                "server",
                "1.0.0",
                "Get information and statistics about the server",
                "O(1)",
            )
            .tips(&[
                "nondeterministic_output",
                "request_policy:all_shards",
                "response_policy:special",
            ]),
    ];

/// Sections of `INFO` / `INFO default`.
const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
];
/// Sections of `INFO all` / `INFO everything` (Redis's order).
const ALL_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
];

/// INFO [section ...]: the server report, `# Section` headers and
/// `field:value` lines separated by CRLF, sections separated by an empty
/// line (verbatim string in RESP3). Unknown sections are ignored; the
/// sections are emitted in Redis's order whatever the argument order.
fn info(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let mut want: Vec<&str> = Vec::new();
    if args.len() == 1 {
        want.extend_from_slice(DEFAULT_SECTIONS);
    }
    for i in 1..args.len() {
        let a = lossy(args.get(i)).to_ascii_lowercase();
        match a.as_str() {
            "default" => want.extend_from_slice(DEFAULT_SECTIONS),
            "all" | "everything" => want.extend_from_slice(ALL_SECTIONS),
            s => {
                if let Some(n) = ALL_SECTIONS.iter().find(|n| **n == s) {
                    want.push(n);
                }
            }
        }
    }
    let text = info_text(ctx, &want);
    ctx.out.verbatim(text.as_bytes());
}

/// Builds the INFO text for the sections in `want` (any order, duplicates
/// allowed).
pub fn info_text(ctx: &Ctx<'_>, want: &[&str]) -> String {
    let mut out = String::new();
    for sec in ALL_SECTIONS {
        if !want.contains(sec) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        let mut s = Section(String::new());
        match *sec {
            "server" => info_server(ctx, &mut s),
            "clients" => info_clients(ctx, &mut s),
            "memory" => info_memory(ctx, &mut s),
            "persistence" => info_persistence(ctx, &mut s),
            "stats" => info_stats(ctx, &mut s),
            "replication" => info_replication(ctx, &mut s),
            "cpu" => info_cpu(&mut s),
            "modules" => s.header("Modules"),
            "commandstats" => info_commandstats(ctx, &mut s),
            "errorstats" => info_errorstats(ctx, &mut s),
            "latencystats" => info_latencystats(ctx, &mut s),
            "cluster" => {
                s.header("Cluster");
                s.kv("cluster_enabled", ctx.server.cluster.enabled as u8);
            }
            "keyspace" => info_keyspace(ctx, &mut s),
            _ => {}
        }
        out.push_str(&s.0);
    }
    out
}

struct Section(String);

impl Section {
    fn header(&mut self, name: &str) {
        let _ = write!(self.0, "# {name}\r\n");
    }
    fn kv(&mut self, k: &str, v: impl std::fmt::Display) {
        let _ = write!(self.0, "{k}:{v}\r\n");
    }
}

/// Redis's `bytesToHuman`: B, K, M, G, T, P with two decimals.
pub fn bytes_to_human(n: u64) -> String {
    let d = n as f64;
    const UNITS: [(&str, f64); 5] = [
        ("K", 1024.0),
        ("M", 1024.0 * 1024.0),
        ("G", 1024.0 * 1024.0 * 1024.0),
        ("T", 1024.0 * 1024.0 * 1024.0 * 1024.0),
        ("P", 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0),
    ];
    if d < 1024.0 {
        return format!("{n}B");
    }
    for (i, (u, f)) in UNITS.iter().enumerate() {
        if i == UNITS.len() - 1 || d < f * 1024.0 {
            return format!("{:.2}{u}", d / f);
        }
    }
    unreachable!()
}

/// The kernel's (sysname, release, machine), as INFO `os` shows them.
pub fn uname() -> (String, String, String) {
    // SAFETY: utsname is plain old data; uname fills it with NUL-terminated
    // strings.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return ("Linux".into(), String::new(), String::new());
        }
        let s = |f: &[libc::c_char]| {
            std::ffi::CStr::from_ptr(f.as_ptr())
                .to_string_lossy()
                .into_owned()
        };
        (s(&u.sysname), s(&u.release), s(&u.machine))
    }
}

fn info_server(ctx: &Ctx<'_>, s: &mut Section) {
    let srv = ctx.server;
    let c = srv.config.read();
    let (sys, rel, mach) = uname();
    let up = srv.uptime_secs();
    s.header("Server");
    s.kv("redis_version", crate::REDIS_VERSION);
    s.kv("server_name", "ferrokv");
    s.kv("ferrokv_version", crate::VERSION);
    s.kv("redis_git_sha1", "00000000");
    s.kv("redis_git_dirty", 0);
    s.kv("redis_build_id", "0");
    s.kv("redis_mode", "standalone");
    s.kv("os", format!("{sys} {rel} {mach}"));
    s.kv("arch_bits", usize::BITS);
    s.kv("monotonic_clock", "POSIX clock_gettime");
    s.kv("multiplexing_api", "epoll");
    s.kv("atomicvar_api", "c11-builtin");
    s.kv("process_id", std::process::id());
    s.kv("process_supervised", "no");
    s.kv("run_id", &srv.run_id);
    s.kv("tcp_port", srv.bound_port.load(Ordering::Relaxed));
    s.kv("server_time_usec", crate::util::now_us());
    s.kv("uptime_in_seconds", up);
    s.kv("uptime_in_days", up / 86400);
    s.kv("hz", c.get("hz"));
    s.kv("configured_hz", c.get("hz"));
    s.kv("lru_clock", lru_clock(ctx.now));
    s.kv("executable", &srv.executable);
    s.kv(
        "config_file",
        c.file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    );
    s.kv("io_threads_active", (srv.threads > 1) as u8);
    s.kv("ferrokv_io_threads", srv.threads);
}

fn info_clients(ctx: &Ctx<'_>, s: &mut Section) {
    let srv = ctx.server;
    let clients = srv.clients.all();
    let (mut max_in, mut max_out) = (0usize, 0usize);
    for c in &clients {
        let i = c.info.lock();
        max_in = max_in.max(i.qbuf + i.qbuf_free);
        max_out = max_out.max(i.obl);
    }
    s.header("Clients");
    s.kv("connected_clients", clients.len());
    s.kv("cluster_connections", 0);
    s.kv("maxclients", srv.live.maxclients.load(Ordering::Relaxed));
    s.kv("client_recent_max_input_buffer", max_in);
    s.kv("client_recent_max_output_buffer", max_out);
    let blocked = clients
        .iter()
        .filter(|c| c.blocked.lock().is_some() || c.postponed.load(Ordering::Relaxed))
        .count();
    s.kv("blocked_clients", blocked);
    s.kv("tracking_clients", srv.tracking.client_count());
    s.kv("clients_in_timeout_table", 0);
}

fn total_system_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

fn info_memory(ctx: &Ctx<'_>, s: &mut Section) {
    let server = ctx.server;
    // used_memory: bytes allocated through the counting allocator
    // (memory.rs), as Redis's zmalloc_used_memory; RSS when not counted.
    let rss = crate::memory::rss_bytes();
    let used = crate::evict::used_memory();
    let peak = server
        .stats
        .memory_peak
        .fetch_max(used, Ordering::Relaxed)
        .max(used);
    let sys = total_system_memory();
    s.header("Memory");
    s.kv("used_memory", used);
    s.kv("used_memory_human", bytes_to_human(used));
    s.kv("used_memory_rss", rss);
    s.kv("used_memory_rss_human", bytes_to_human(rss));
    s.kv("used_memory_peak", peak);
    s.kv("used_memory_peak_human", bytes_to_human(peak));
    s.kv(
        "used_memory_peak_perc",
        format!("{:.2}%", used as f64 * 100.0 / peak.max(1) as f64),
    );
    s.kv("total_system_memory", sys);
    s.kv("total_system_memory_human", bytes_to_human(sys));
    info_scripts_memory(server, s);
    let max = server.evict.maxmemory();
    s.kv("maxmemory", max);
    s.kv("maxmemory_human", bytes_to_human(max));
    s.kv("maxmemory_policy", server.evict.policy().name());
    s.kv(
        "mem_fragmentation_ratio",
        format!("{:.2}", rss as f64 / used.max(1) as f64),
    );
    s.kv("mem_fragmentation_bytes", rss.saturating_sub(used));
    // Memory maxmemory does not count (evict.c freeMemoryGetNotCountedMemory):
    // the replication buffer held beyond repl-backlog-size for lagging
    // replicas.
    s.kv(
        "mem_not_counted_for_evict",
        crate::memory::repl_not_counted(),
    );
    let backlog = &server.repl.backlog;
    let hist = if backlog.active() {
        backlog.span().1
    } else {
        0
    };
    s.kv("mem_replication_backlog", hist);
    s.kv("mem_allocator", "mimalloc");
    s.kv("active_defrag_running", 0);
    s.kv("lazyfree_pending_objects", crate::db::lazyfree::pending());
    s.kv("lazyfreed_objects", crate::db::lazyfree::freed());
}

/// The scripting lines of INFO memory (Redis 7.0's order). The
/// interpreters are skipped (0) while a script running on this thread
/// holds them (INFO called from a script).
fn info_scripts_memory(server: &crate::server::Server, s: &mut Section) {
    let scripts = &server.scripts;
    let (vm_eval, eval_bytes, cached) = match scripts.eval.try_lock() {
        Some(e) => (e.lua.memory(), e.cache_bytes, e.cache.len() as u64),
        None => (0, 0, 0),
    };
    let (vm_functions, functions_bytes) = match scripts.functions.try_lock() {
        Some(f) => (
            f.lua.memory(),
            f.libraries
                .iter()
                .map(|l| l.code.len() as u64 + l.name.len() as u64)
                .sum::<u64>(),
        ),
        None => (0, 0),
    };
    s.kv("used_memory_lua", vm_eval);
    s.kv("used_memory_vm_eval", vm_eval);
    s.kv("used_memory_lua_human", bytes_to_human(vm_eval));
    s.kv("used_memory_scripts_eval", eval_bytes);
    s.kv("number_of_cached_scripts", cached);
    s.kv(
        "number_of_functions",
        scripts.function_count.load(Ordering::Relaxed),
    );
    s.kv(
        "number_of_libraries",
        scripts.library_count.load(Ordering::Relaxed),
    );
    s.kv("used_memory_vm_functions", vm_functions);
    s.kv("used_memory_vm_total", vm_eval + vm_functions);
    s.kv(
        "used_memory_vm_total_human",
        bytes_to_human(vm_eval + vm_functions),
    );
    s.kv("used_memory_functions", functions_bytes);
    s.kv("used_memory_scripts", eval_bytes + functions_bytes);
    s.kv(
        "used_memory_scripts_human",
        bytes_to_human(eval_bytes + functions_bytes),
    );
}

fn info_persistence(ctx: &Ctx<'_>, s: &mut Section) {
    let srv = ctx.server;
    let st = &srv.rdb;
    let dirty = crate::persist::rdb::dirty(srv);
    let in_progress = st.bgsave_in_progress.load(Ordering::Relaxed);
    let now = crate::util::now_ms();
    s.header("Persistence");
    s.kv("loading", srv.repl.loading.load(Ordering::Relaxed) as u8);
    s.kv("async_loading", 0);
    s.kv("current_cow_peak", 0);
    s.kv("current_cow_size", 0);
    s.kv("current_cow_size_age", 0);
    s.kv("current_fork_perc", "0.00");
    let (processed, total) = if in_progress {
        (
            st.save_keys_processed.load(Ordering::Relaxed),
            st.save_keys_total.load(Ordering::Relaxed),
        )
    } else {
        (0, 0)
    };
    s.kv("current_save_keys_processed", processed);
    s.kv("current_save_keys_total", total);
    s.kv("rdb_changes_since_last_save", dirty);
    s.kv("rdb_bgsave_in_progress", in_progress as u8);
    s.kv("rdb_last_save_time", srv.lastsave.load(Ordering::Relaxed));
    s.kv(
        "rdb_last_bgsave_status",
        if st.last_bgsave_failed.load(Ordering::Relaxed) {
            "err"
        } else {
            "ok"
        },
    );
    s.kv(
        "rdb_last_bgsave_time_sec",
        st.last_bgsave_time_sec.load(Ordering::Relaxed),
    );
    let cur = if in_progress {
        (now.saturating_sub(st.bgsave_start_ms.load(Ordering::Relaxed)) / 1000) as i64
    } else {
        -1
    };
    s.kv("rdb_current_bgsave_time_sec", cur);
    s.kv("rdb_saves", st.saves.load(Ordering::Relaxed));
    s.kv("rdb_last_cow_size", 0);
    s.kv(
        "rdb_last_load_keys_expired",
        st.keys_expired.load(Ordering::Relaxed),
    );
    s.kv(
        "rdb_last_load_keys_loaded",
        st.keys_loaded.load(Ordering::Relaxed),
    );
    for (k, v) in srv.aof.info_fields() {
        s.kv(k, v);
    }
    s.kv("module_fork_in_progress", 0);
    s.kv("module_fork_last_cow_size", 0);
}

fn info_stats(ctx: &Ctx<'_>, s: &mut Section) {
    let srv = ctx.server;
    let st = &srv.stats;
    let t = st.totals();
    let (ops, kin, kout) = st.inst.lock().rates();
    let expired = srv
        .keyspace
        .expired_keys()
        .saturating_sub(st.expired_base.load(Ordering::Relaxed));
    s.header("Stats");
    s.kv(
        "total_connections_received",
        st.connections.load(Ordering::Relaxed),
    );
    s.kv("total_commands_processed", t.commands);
    s.kv("instantaneous_ops_per_sec", ops.round() as u64);
    s.kv("total_net_input_bytes", t.net_in);
    s.kv("total_net_output_bytes", t.net_out);
    s.kv("total_net_repl_input_bytes", 0);
    s.kv("total_net_repl_output_bytes", 0);
    s.kv("instantaneous_input_kbps", format!("{:.2}", kin / 1024.0));
    s.kv("instantaneous_output_kbps", format!("{:.2}", kout / 1024.0));
    s.kv("instantaneous_input_repl_kbps", "0.00");
    s.kv("instantaneous_output_repl_kbps", "0.00");
    s.kv(
        "rejected_connections",
        st.rejected_connections.load(Ordering::Relaxed),
    );
    let r = &srv.repl;
    s.kv("sync_full", r.sync_full.load(Ordering::Relaxed));
    s.kv("sync_partial_ok", r.sync_partial_ok.load(Ordering::Relaxed));
    s.kv(
        "sync_partial_err",
        r.sync_partial_err.load(Ordering::Relaxed),
    );
    s.kv("expired_keys", expired);
    // Redis 7.4: hash fields deleted by expiry.
    s.kv("expired_subkeys", srv.keyspace.expired_fields());
    s.kv(
        "expired_time_cap_reached_count",
        srv.keyspace.expire_time_cap_reached.load(Ordering::Relaxed),
    );
    s.kv("evicted_keys", srv.evict.evicted_keys());
    s.kv(
        "evicted_clients",
        srv.clients.evicted.load(Ordering::Relaxed),
    );
    s.kv("keyspace_hits", t.hits);
    s.kv("keyspace_misses", t.misses);
    s.kv("pubsub_channels", srv.pubsub.channel_count());
    s.kv("pubsub_patterns", srv.pubsub.pattern_count());
    s.kv("pubsubshard_channels", srv.pubsub.shard_count());
    s.kv("latest_fork_usec", 0);
    s.kv("total_forks", srv.stats.forks.load(Ordering::Relaxed));
    s.kv(
        "migrate_cached_sockets",
        crate::cmd::migrate::cached_sockets(),
    );
    s.kv("slave_expires_tracked_keys", 0);
    s.kv("tracking_total_keys", srv.tracking.total_keys());
    s.kv("tracking_total_items", srv.tracking.total_items());
    s.kv("tracking_total_prefixes", srv.tracking.total_prefixes());
    s.kv(
        "unexpected_error_replies",
        st.unexpected_error_replies.load(Ordering::Relaxed),
    );
    s.kv("total_error_replies", st.total_errors());
    s.kv("dump_payload_sanitizations", 0);
}

fn info_replication(ctx: &Ctx<'_>, s: &mut Section) {
    s.header("Replication");
    for (k, v) in crate::cmd::repl::info_fields(ctx.server, ctx.now) {
        s.kv(&k, v);
    }
}

/// CPU time of `who` (`RUSAGE_SELF` or `RUSAGE_CHILDREN`) as INFO cpu
/// reports it: (system, user) seconds.
pub fn rusage(who: libc::c_int) -> (f64, f64) {
    // SAFETY: getrusage fills a zeroed rusage struct.
    unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        if libc::getrusage(who, &mut r) != 0 {
            return (0.0, 0.0);
        }
        let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        (t(r.ru_stime), t(r.ru_utime))
    }
}

fn info_cpu(s: &mut Section) {
    let (sys, user) = rusage(libc::RUSAGE_SELF);
    let (csys, cuser) = rusage(libc::RUSAGE_CHILDREN);
    s.header("CPU");
    s.kv("used_cpu_sys", format!("{sys:.6}"));
    s.kv("used_cpu_user", format!("{user:.6}"));
    s.kv("used_cpu_sys_children", format!("{csys:.6}"));
    s.kv("used_cpu_user_children", format!("{cuser:.6}"));
}

fn info_commandstats(ctx: &Ctx<'_>, s: &mut Section) {
    s.header("Commandstats");
    let t = table();
    for (id, c) in t.all.iter().enumerate() {
        let (calls, usec, rejected, failed) = ctx.server.stats.command(id);
        if calls == 0 && rejected == 0 && failed == 0 {
            continue;
        }
        let per = if calls == 0 {
            0.0
        } else {
            usec as f64 / calls as f64
        };
        s.kv(
            &format!("cmdstat_{}", c.name),
            format!(
                "calls={calls},usec={usec},usec_per_call={per:.2},rejected_calls={rejected},failed_calls={failed}"
            ),
        );
    }
}

/// INFO latencystats (Redis 7.0's `fillCommandPercentiles` lines):
/// `latency_percentiles_usec_<command>:p50=<µs>,p99=<µs>,p99.9=<µs>` for
/// every command (and subcommand, `config|set`) with recorded calls, at the
/// percentiles of `latency-tracking-info-percentiles` (`p<n>` with the
/// number as Redis's `%f`-trimmed form). Each value is the upper bound in
/// microseconds, three decimals, of the histogram bucket holding that
/// percentile: the same buckets as LATENCY HISTOGRAM (powers of two of
/// nanoseconds from 1024 ns, see `stats::LATENCY_REPORT_US`), where Redis
/// reads an HdrHistogram with two significant digits — so ferrokv's values
/// are coarser (at most twice the true latency), ordered the same way.
fn info_latencystats(ctx: &Ctx<'_>, s: &mut Section) {
    s.header("Latencystats");
    let percentiles: Vec<String> = ctx
        .server
        .config
        .read()
        .get("latency-tracking-info-percentiles")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let t = table();
    for id in 0..t.all.len() {
        let Some(h) = ctx.server.stats.latency(id) else {
            continue;
        };
        let total: u64 = h.iter().sum();
        let mut line = String::new();
        for p in &percentiles {
            let Ok(pv) = p.parse::<f64>() else { continue };
            // The first bucket whose cumulative count reaches p% of the
            // calls (hdr_value_at_percentile: at least one call).
            let want = ((pv / 100.0) * total as f64).ceil().max(1.0) as u64;
            let mut cumulative = 0;
            let mut bucket = h.len() - 1;
            for (k, &n) in h.iter().enumerate() {
                cumulative += n;
                if cumulative >= want {
                    bucket = k;
                    break;
                }
            }
            let ns = if bucket < crate::stats::LATENCY_REPORT_US.len() {
                crate::stats::bucket_upper_ns(bucket)
            } else {
                1_000_000_000
            };
            if !line.is_empty() {
                line.push(',');
            }
            line.push_str(&format!("p{p}={:.3}", ns as f64 / 1000.0));
        }
        s.kv(
            &format!("latency_percentiles_usec_{}", t.all[id].name),
            line,
        );
    }
}

fn info_errorstats(ctx: &Ctx<'_>, s: &mut Section) {
    s.header("Errorstats");
    for (code, n) in ctx.server.stats.errors.lock().iter() {
        s.kv(&format!("errorstat_{code}"), format!("count={n}"));
    }
}

fn info_keyspace(ctx: &Ctx<'_>, s: &mut Section) {
    s.header("Keyspace");
    let ks = &ctx.server.keyspace;
    for i in 0..ks.db_count() {
        let db = ks.db(i);
        let keys = db.len();
        if keys == 0 {
            continue;
        }
        let mut line = format!("keys={keys},expires={},avg_ttl=0", db.volatile_len());
        // Redis 7.4's count of hashes with field TTLs, shown only when
        // there are some (so the line stays Redis 7.0's otherwise).
        let sub = if ks.field_ttl_keys() > 0 {
            db.field_ttl_len()
        } else {
            0
        };
        if sub > 0 {
            line.push_str(&format!(",subexpiry={sub}"));
        }
        s.kv(&format!("db{i}"), line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_bytes() {
        assert_eq!(bytes_to_human(0), "0B");
        assert_eq!(bytes_to_human(1023), "1023B");
        assert_eq!(bytes_to_human(1024), "1.00K");
        assert_eq!(bytes_to_human(1015784), "991.98K");
        assert_eq!(bytes_to_human(7208960), "6.88M");
        assert_eq!(bytes_to_human(25276059648), "23.54G");
    }
}
