//! Configuration: redis.conf-style directives read from a file and from
//! `--directive value` arguments, and the registry behind CONFIG GET / SET /
//! REWRITE. Names, value syntax (yes/no, memory units such as `1gb`/`1g`),
//! normalised CONFIG GET output and error texts follow Redis 7.0's config.c.

use crate::resp::parse::split_args;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// How a directive's value is parsed and printed.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// `yes` / `no`.
    Bool,
    /// A signed integer in `[min, max]`.
    Int { min: i64, max: i64 },
    /// A byte count with optional unit (`k kb m mb g gb`), printed in bytes.
    Memory { min: u64, max: u64 },
    /// One of a fixed list of words (case-insensitive, printed lower-case).
    Enum(&'static [&'static str]),
    /// Any string (single argument).
    Str,
    /// A space-separated list of arguments (bind, save).
    List,
    /// Octal permission bits (unixsocketperm).
    Octal,
}

/// One supported directive.
#[derive(Debug)]
pub struct Directive {
    /// Redis's directive name (lower-case).
    pub name: &'static str,
    /// Value syntax.
    pub kind: Kind,
    /// Default value, in the printed form.
    pub default: &'static str,
    /// False for directives CONFIG SET refuses ("can't set immutable config").
    pub mutable: bool,
}

const fn d(name: &'static str, kind: Kind, default: &'static str, mutable: bool) -> Directive {
    Directive {
        name,
        kind,
        default,
        mutable,
    }
}

const LOGLEVELS: &[&str] = &["debug", "verbose", "notice", "warning"];
const ENABLE_PROTECTED: &[&str] = &["no", "yes", "local"];
const YESNO_ONLY_NO: &[&str] = &["no"];
const PROPAGATION_ERROR_BEHAVIOR: &[&str] = &["ignore", "panic", "panic-on-replicas"];
const ACL_PUBSUB_DEFAULT: &[&str] = &["allchannels", "resetchannels"];
const CLUSTER_ENDPOINT_TYPES: &[&str] = &["ip", "hostname", "unknown-endpoint"];

/// client-output-buffer-limit's default, in CONFIG GET form.
const OBL_DEFAULT: &str = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60";

/// The nine numbers of a normalised client-output-buffer-limit value:
/// (hard, soft, soft-seconds) for normal, replica and pubsub clients.
pub fn obl_values(v: &str) -> [u64; 9] {
    let mut out = [0u64; 9];
    let words: Vec<&str> = v.split_whitespace().collect();
    for chunk in words.chunks(4) {
        let base = match chunk[0] {
            "normal" => 0,
            "slave" => 3,
            "pubsub" => 6,
            _ => continue,
        };
        for k in 0..3 {
            out[base + k] = chunk.get(k + 1).and_then(|x| x.parse().ok()).unwrap_or(0);
        }
    }
    out
}

/// Applies client-output-buffer-limit arguments (`<class> <hard> <soft>
/// <soft-seconds>` repeated; classes normal, replica or slave, pubsub; hard
/// and soft are memory values) to the normalised value `current`: only the
/// named classes change, and nothing changes when any group is invalid.
/// Errors are Redis 7.0's texts (config.c setConfigClientOutputBufferLimitOption).
pub fn merge_obl(current: &str, args: &[String]) -> Result<String, String> {
    let words: Vec<&str> = args.iter().flat_map(|a| a.split_whitespace()).collect();
    if !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut vals = obl_values(current);
    for g in words.chunks(4) {
        let base = match g[0].to_ascii_lowercase().as_str() {
            "normal" => 0,
            "replica" | "slave" => 3,
            "pubsub" => 6,
            _ => {
                return Err("Invalid client class specified in buffer limit configuration.".into())
            }
        };
        let bad = || "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
        let hard = parse_memory(g[1]).ok_or_else(bad)?;
        let soft = parse_memory(g[2]).ok_or_else(bad)?;
        let secs: i64 = g[3].parse().map_err(|_| bad())?;
        if secs < 0 || hard > i64::MAX as u64 || soft > i64::MAX as u64 {
            return Err(bad().into());
        }
        vals[base] = hard;
        vals[base + 1] = soft;
        vals[base + 2] = secs as u64;
    }
    Ok(format!(
        "normal {} {} {} slave {} {} {} pubsub {} {} {}",
        vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], vals[6], vals[7], vals[8]
    ))
}

/// A byte count as CONFIG REWRITE writes it: `Ngb`, `Nmb`, `Nkb` when
/// exact, else plain bytes (Redis's rewriteConfigFormatMemory).
fn format_memory(v: u64) -> String {
    const KB: u64 = 1024;
    if v != 0 && v.is_multiple_of(KB * KB * KB) {
        format!("{}gb", v / (KB * KB * KB))
    } else if v != 0 && v.is_multiple_of(KB * KB) {
        format!("{}mb", v / (KB * KB))
    } else if v != 0 && v.is_multiple_of(KB) {
        format!("{}kb", v / KB)
    } else {
        v.to_string()
    }
}

/// CONFIG REWRITE lines of client-output-buffer-limit: one per class that
/// differs from the defaults (all three when none does, i.e. when the file
/// already had the directive), memory as Redis writes it.
fn render_obl(d: &Directive, v: &str) -> String {
    let vals = obl_values(v);
    let defaults = obl_values(d.default);
    let mut all = Vec::new();
    let mut changed = Vec::new();
    for (i, class) in ["normal", "slave", "pubsub"].iter().enumerate() {
        let b = i * 3;
        let line = format!(
            "{} {} {} {} {}",
            d.name,
            class,
            format_memory(vals[b]),
            format_memory(vals[b + 1]),
            vals[b + 2]
        );
        if vals[b..b + 3] != defaults[b..b + 3] {
            changed.push(line.clone());
        }
        all.push(line);
    }
    if changed.is_empty() {
        all.join("\n")
    } else {
        changed.join("\n")
    }
}
const SANITIZE: &[&str] = &["no", "yes", "clients"];

const REPL_DISKLESS_LOAD: &[&str] = &["disabled", "on-empty-db", "swapdb"];
const OOM_SCORE_ADJ: &[&str] = &["no", "yes", "relative", "absolute"];
const SUPERVISED: &[&str] = &["upstart", "systemd", "auto", "no"];
const SYSLOG_FACILITIES: &[&str] = &[
    "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
];
/// Flags of shutdown-on-sigint / shutdown-on-sigterm, in CONFIG GET order.
const SHUTDOWN_FLAGS: &[&str] = &["save", "nosave", "now", "force"];

/// Directives Redis 7.0 marks HIDDEN_CONFIG: CONFIG GET returns them when
/// asked by name, never for a pattern.
pub const HIDDEN: &[&str] = &[
    "key-load-delay",
    "loading-process-events-interval-bytes",
    "rdb-key-save-delay",
    "use-exit-on-panic",
    "watchdog-period",
];

/// Values of `rdb-version` (ferrokv's own directive): the RDB format
/// version written in RDB files, DUMP payloads and the replication
/// full-sync payload (persist::rdb::RDB_VERSIONS_WRITTEN).
const RDB_VERSIONS: &[&str] = &["10", "11", "12"];
/// Values of `hello-server-name`.
const HELLO_SERVER_NAMES: &[&str] = &["redis", "ferrokv"];

const APPENDFSYNC: &[&str] = &["always", "everysec", "no"];
const TLS_AUTH_CLIENTS: &[&str] = &["no", "yes", "optional"];

/// Every directive ferrokv understands, sorted by name.
pub static DIRECTIVES: &[Directive] = &[
    d(
        "acl-pubsub-default",
        Kind::Enum(ACL_PUBSUB_DEFAULT),
        "resetchannels",
        true,
    ),
    d("aclfile", Kind::Str, "", false),
    d(
        "acllog-max-len",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "128",
        true,
    ),
    d("aof-load-truncated", Kind::Bool, "yes", true),
    d("aof-rewrite-incremental-fsync", Kind::Bool, "yes", true),
    d("aof-timestamp-enabled", Kind::Bool, "no", true),
    d("aof-use-rdb-preamble", Kind::Bool, "yes", true),
    d("appenddirname", Kind::Str, "appendonlydir", false),
    d("appendfilename", Kind::Str, "appendonly.aof", false),
    d("appendfsync", Kind::Enum(APPENDFSYNC), "everysec", true),
    d("appendonly", Kind::Bool, "no", true),
    d(
        "auto-aof-rewrite-min-size",
        Kind::Memory {
            min: 0,
            max: i64::MAX as u64,
        },
        "67108864",
        true,
    ),
    d(
        "auto-aof-rewrite-percentage",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "100",
        true,
    ),
    d("bind", Kind::List, "* -::*", true),
    d(
        "busy-reply-threshold",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "5000",
        true,
    ),
    d("client-output-buffer-limit", Kind::List, OBL_DEFAULT, true),
    d(
        "client-query-buffer-limit",
        Kind::Memory {
            min: 1024 * 1024,
            max: i64::MAX as u64,
        },
        "1073741824",
        true,
    ),
    d(
        "databases",
        Kind::Int {
            min: 1,
            max: i32::MAX as i64,
        },
        "16",
        false,
    ),
    d(
        "cluster-allow-pubsubshard-when-down",
        Kind::Bool,
        "yes",
        true,
    ),
    d("cluster-allow-reads-when-down", Kind::Bool, "no", true),
    d("cluster-allow-replica-migration", Kind::Bool, "yes", true),
    d(
        "cluster-announce-bus-port",
        Kind::Int { min: 0, max: 65535 },
        "0",
        true,
    ),
    d("cluster-announce-hostname", Kind::Str, "", true),
    d("cluster-announce-ip", Kind::Str, "", true),
    d(
        "cluster-announce-port",
        Kind::Int { min: 0, max: 65535 },
        "0",
        true,
    ),
    d(
        "cluster-announce-tls-port",
        Kind::Int { min: 0, max: 65535 },
        "0",
        true,
    ),
    d("cluster-config-file", Kind::Str, "nodes.conf", false),
    d("cluster-enabled", Kind::Bool, "no", false),
    d(
        "cluster-link-sendbuf-limit",
        Kind::Memory {
            min: 0,
            max: i64::MAX as u64,
        },
        "0",
        true,
    ),
    d(
        "cluster-migration-barrier",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "1",
        true,
    ),
    d(
        "cluster-node-timeout",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "15000",
        true,
    ),
    d("cluster-port", Kind::Int { min: 0, max: 65535 }, "0", false),
    d(
        "cluster-preferred-endpoint-type",
        Kind::Enum(CLUSTER_ENDPOINT_TYPES),
        "ip",
        true,
    ),
    d("cluster-replica-no-failover", Kind::Bool, "no", true),
    d(
        "cluster-replica-validity-factor",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "10",
        true,
    ),
    d("cluster-require-full-coverage", Kind::Bool, "yes", true),
    d("daemonize", Kind::Enum(YESNO_ONLY_NO), "no", false),
    d("dbfilename", Kind::Str, "dump.rdb", true),
    d("dir", Kind::Str, ".", true),
    // yes, as Redis: see lib.rs for what `no` gains and costs here.
    d("disable-thp", Kind::Bool, "yes", false),
    d(
        "enable-debug-command",
        Kind::Enum(ENABLE_PROTECTED),
        "no",
        false,
    ),
    d(
        "enable-module-command",
        Kind::Enum(ENABLE_PROTECTED),
        "no",
        false,
    ),
    d(
        "enable-protected-configs",
        Kind::Enum(ENABLE_PROTECTED),
        "no",
        false,
    ),
    d(
        "hash-max-listpack-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "512",
        true,
    ),
    d(
        "hash-max-listpack-value",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "64",
        true,
    ),
    // ferrokv: the `server` field of HELLO's reply (`redis`, what
    // clients expect, or `ferrokv`).
    d(
        "hello-server-name",
        Kind::Enum(HELLO_SERVER_NAMES),
        "redis",
        true,
    ),
    d(
        "hll-sparse-max-bytes",
        Kind::Memory {
            min: 0,
            max: i64::MAX as u64,
        },
        "3000",
        true,
    ),
    d(
        "hz",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "10",
        true,
    ),
    d("io-threads", Kind::Int { min: 1, max: 128 }, "0", false),
    d(
        "io-idle-poll-us",
        Kind::Int {
            min: 0,
            max: 1_000_000,
        },
        "50",
        true,
    ),
    // memcached's -I (ferrokv's memcached listener, cmd/memcache.rs).
    d(
        "item-size-max",
        Kind::Memory {
            min: 1024,
            max: 1024 * 1024 * 1024,
        },
        "1048576",
        true,
    ),
    d(
        "latency-monitor-threshold",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "0",
        true,
    ),
    d("latency-tracking", Kind::Bool, "yes", true),
    d(
        "lfu-decay-time",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "1",
        true,
    ),
    d(
        "lfu-log-factor",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "10",
        true,
    ),
    d(
        "list-max-listpack-size",
        Kind::Int {
            min: i32::MIN as i64,
            max: i32::MAX as i64,
        },
        "-2",
        true,
    ),
    d("logfile", Kind::Str, "", false),
    d("loglevel", Kind::Enum(LOGLEVELS), "notice", true),
    d("masterauth", Kind::Str, "", true),
    d("masteruser", Kind::Str, "", true),
    d(
        "maxclients",
        Kind::Int {
            min: 1,
            max: u32::MAX as i64,
        },
        "10000",
        true,
    ),
    d(
        "maxmemory",
        Kind::Memory {
            min: 0,
            max: u64::MAX,
        },
        "0",
        true,
    ),
    d(
        "maxmemory-eviction-tenacity",
        Kind::Int { min: 0, max: 100 },
        "10",
        true,
    ),
    d(
        "maxmemory-policy",
        Kind::Enum(crate::evict::POLICY_NAMES),
        "noeviction",
        true,
    ),
    d(
        "maxmemory-samples",
        Kind::Int {
            min: 1,
            max: i32::MAX as i64,
        },
        "5",
        true,
    ),
    d(
        "min-replicas-max-lag",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "10",
        true,
    ),
    d(
        "min-replicas-to-write",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "0",
        true,
    ),
    d("no-appendfsync-on-rewrite", Kind::Bool, "no", true),
    d("notify-keyspace-events", Kind::Str, "", true),
    d("pidfile", Kind::Str, "", false),
    d("port", Kind::Int { min: 0, max: 65535 }, "6379", true),
    d(
        "proto-max-bulk-len",
        Kind::Memory {
            min: 1024 * 1024,
            max: i64::MAX as u64,
        },
        "536870912",
        true,
    ),
    d(
        "propagation-error-behavior",
        Kind::Enum(PROPAGATION_ERROR_BEHAVIOR),
        "ignore",
        true,
    ),
    d("protected-mode", Kind::Bool, "yes", true),
    d("rdb-del-sync-files", Kind::Bool, "no", true),
    d("rdb-version", Kind::Enum(RDB_VERSIONS), "10", true),
    d(
        "rdb-key-save-delay",
        Kind::Int {
            min: i32::MIN as i64,
            max: i32::MAX as i64,
        },
        "0",
        true,
    ),
    d("rdbchecksum", Kind::Bool, "yes", false),
    d("rdbcompression", Kind::Bool, "yes", true),
    d(
        "repl-backlog-size",
        Kind::Memory {
            min: 1,
            max: i64::MAX as u64,
        },
        "1048576",
        true,
    ),
    d(
        "repl-backlog-ttl",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "3600",
        true,
    ),
    d("repl-disable-tcp-nodelay", Kind::Bool, "no", true),
    d(
        "repl-diskless-load",
        Kind::Enum(REPL_DISKLESS_LOAD),
        "disabled",
        true,
    ),
    d("repl-diskless-sync", Kind::Bool, "yes", true),
    d(
        "repl-diskless-sync-delay",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "5",
        true,
    ),
    d(
        "repl-diskless-sync-max-replicas",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "0",
        true,
    ),
    d(
        "repl-ping-replica-period",
        Kind::Int {
            min: 1,
            max: i32::MAX as i64,
        },
        "10",
        true,
    ),
    d(
        "repl-timeout",
        Kind::Int {
            min: 1,
            max: i32::MAX as i64,
        },
        "60",
        true,
    ),
    d("replica-announce-ip", Kind::Str, "", true),
    d(
        "replica-announce-port",
        Kind::Int { min: 0, max: 65535 },
        "0",
        true,
    ),
    d("replica-announced", Kind::Bool, "yes", true),
    d("replica-ignore-maxmemory", Kind::Bool, "yes", true),
    d("replica-lazy-flush", Kind::Bool, "no", true),
    d(
        "replica-priority",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "100",
        true,
    ),
    d("replica-read-only", Kind::Bool, "yes", true),
    d("replica-serve-stale-data", Kind::Bool, "yes", true),
    d("replicaof", Kind::List, "", false),
    d("requirepass", Kind::Str, "", true),
    d("sanitize-dump-payload", Kind::Enum(SANITIZE), "no", true),
    d("save", Kind::List, "3600 1 300 100 60 10000", true),
    d(
        "set-max-intset-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "512",
        true,
    ),
    d(
        "slowlog-log-slower-than",
        Kind::Int {
            min: -1,
            max: i64::MAX,
        },
        "10000",
        true,
    ),
    d(
        "slowlog-max-len",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "128",
        true,
    ),
    d("stop-writes-on-bgsave-error", Kind::Bool, "yes", true),
    d(
        "stream-node-max-bytes",
        Kind::Memory {
            min: 0,
            max: i64::MAX as u64,
        },
        "4096",
        true,
    ),
    d(
        "stream-node-max-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "100",
        true,
    ),
    d(
        "tcp-backlog",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "511",
        false,
    ),
    d(
        "tcp-keepalive",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "300",
        true,
    ),
    d(
        "timeout",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "0",
        true,
    ),
    d(
        "tls-auth-clients",
        Kind::Enum(TLS_AUTH_CLIENTS),
        "yes",
        true,
    ),
    d("tls-ca-cert-dir", Kind::Str, "", true),
    d("tls-ca-cert-file", Kind::Str, "", true),
    d("tls-cert-file", Kind::Str, "", true),
    d("tls-ciphers", Kind::Str, "", true),
    d("tls-ciphersuites", Kind::Str, "", true),
    d("tls-client-cert-file", Kind::Str, "", true),
    d("tls-client-key-file", Kind::Str, "", true),
    d("tls-client-key-file-pass", Kind::Str, "", true),
    d("tls-cluster", Kind::Bool, "no", true),
    d("tls-dh-params-file", Kind::Str, "", true),
    d("tls-key-file", Kind::Str, "", true),
    d("tls-key-file-pass", Kind::Str, "", true),
    d("tls-port", Kind::Int { min: 0, max: 65535 }, "0", true),
    d("tls-prefer-server-ciphers", Kind::Bool, "no", true),
    d("tls-protocols", Kind::Str, "", true),
    d("tls-replication", Kind::Bool, "no", true),
    d(
        "tls-session-cache-size",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "20480",
        true,
    ),
    d(
        "tls-session-cache-timeout",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "300",
        true,
    ),
    d("tls-session-caching", Kind::Bool, "yes", true),
    d(
        "tracking-table-max-keys",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "1000000",
        true,
    ),
    // ferrokv's memcached listener (net/memcache.rs): memcached's -p, -s
    // and -a.
    d(
        "memcached-port",
        Kind::Int { min: 0, max: 65535 },
        "0",
        false,
    ),
    d("memcached-unixsocket", Kind::Str, "", false),
    d("memcached-unixsocketperm", Kind::Octal, "0", false),
    // ferrokv's Prometheus endpoint (net/metrics.rs): `GET /metrics` over
    // HTTP on this port (0 = off) and address.
    d("metrics-bind", Kind::Str, "127.0.0.1", false),
    d("metrics-port", Kind::Int { min: 0, max: 65535 }, "0", false),
    d("unixsocket", Kind::Str, "", false),
    d("unixsocketperm", Kind::Octal, "0", false),
    d(
        "zset-max-listpack-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "128",
        true,
    ),
    d(
        "zset-max-listpack-value",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "64",
        true,
    ),
    // Redis 7.0 directives ferrokv parses, reports and lets CONFIG SET
    // change, but that have no effect here (no jemalloc defragmentation,
    // no syslog, no process-title or OOM-score handling, no quicklist
    // compression, lazy freeing decided by ferrokv itself): README,
    // "Configuration", lists them.
    d(
        "active-defrag-cycle-max",
        Kind::Int { min: 1, max: 99 },
        "25",
        true,
    ),
    d(
        "active-defrag-cycle-min",
        Kind::Int { min: 1, max: 99 },
        "1",
        true,
    ),
    d(
        "active-defrag-ignore-bytes",
        Kind::Memory {
            min: 1,
            max: i64::MAX as u64,
        },
        "104857600",
        true,
    ),
    d(
        "active-defrag-max-scan-fields",
        Kind::Int {
            min: 1,
            max: i64::MAX,
        },
        "1000",
        true,
    ),
    d(
        "active-defrag-threshold-lower",
        Kind::Int { min: 0, max: 1000 },
        "10",
        true,
    ),
    d(
        "active-defrag-threshold-upper",
        Kind::Int { min: 0, max: 1000 },
        "100",
        true,
    ),
    d(
        "active-expire-effort",
        Kind::Int { min: 1, max: 10 },
        "1",
        true,
    ),
    d("activedefrag", Kind::Bool, "no", true),
    d("activerehashing", Kind::Bool, "yes", true),
    d("always-show-logo", Kind::Bool, "no", false),
    d("aof-disable-auto-gc", Kind::Bool, "no", true),
    d("aof_rewrite_cpulist", Kind::Str, "", false),
    d("bgsave_cpulist", Kind::Str, "", false),
    d("bind-source-addr", Kind::Str, "", true),
    d("bio_cpulist", Kind::Str, "", false),
    d("crash-log-enabled", Kind::Bool, "yes", true),
    d("crash-memcheck-enabled", Kind::Bool, "yes", true),
    d("dynamic-hz", Kind::Bool, "yes", true),
    d("ignore-warnings", Kind::Str, "", true),
    d("io-threads-do-reads", Kind::Bool, "no", false),
    d("jemalloc-bg-thread", Kind::Bool, "yes", true),
    d(
        "key-load-delay",
        Kind::Int {
            min: i32::MIN as i64,
            max: i32::MAX as i64,
        },
        "0",
        true,
    ),
    d(
        "latency-tracking-info-percentiles",
        Kind::Str,
        "50 99 99.9",
        true,
    ),
    d("lazyfree-lazy-eviction", Kind::Bool, "no", true),
    d("lazyfree-lazy-expire", Kind::Bool, "no", true),
    d("lazyfree-lazy-server-del", Kind::Bool, "no", true),
    d("lazyfree-lazy-user-del", Kind::Bool, "no", true),
    d("lazyfree-lazy-user-flush", Kind::Bool, "no", true),
    d(
        "list-compress-depth",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "0",
        true,
    ),
    d(
        "loading-process-events-interval-bytes",
        Kind::Int {
            min: 1024,
            max: i32::MAX as i64,
        },
        "2097152",
        true,
    ),
    d("maxmemory-clients", Kind::Str, "0", true),
    d("oom-score-adj", Kind::Enum(OOM_SCORE_ADJ), "no", true),
    d("oom-score-adj-values", Kind::Str, "0 200 800", true),
    d(
        "proc-title-template",
        Kind::Str,
        "{title} {listen-addr} {server-mode}",
        true,
    ),
    d("rdb-save-incremental-fsync", Kind::Bool, "yes", true),
    d("replica-ignore-disk-write-errors", Kind::Bool, "no", true),
    d("server_cpulist", Kind::Str, "", false),
    d("set-proc-title", Kind::Bool, "yes", false),
    d("shutdown-on-sigint", Kind::Str, "default", true),
    d("shutdown-on-sigterm", Kind::Str, "default", true),
    d(
        "shutdown-timeout",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "10",
        true,
    ),
    d(
        "socket-mark-id",
        Kind::Int {
            min: 0,
            max: u32::MAX as i64,
        },
        "0",
        false,
    ),
    d("supervised", Kind::Enum(SUPERVISED), "no", false),
    d("syslog-enabled", Kind::Bool, "no", false),
    d(
        "syslog-facility",
        Kind::Enum(SYSLOG_FACILITIES),
        "local0",
        false,
    ),
    d("syslog-ident", Kind::Str, "redis", false),
    d("use-exit-on-panic", Kind::Bool, "no", true),
    d(
        "watchdog-period",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "0",
        true,
    ),
];

/// Old names Redis 7.0 still accepts for renamed directives:
/// (alias, canonical name). CONFIG GET lists both, CONFIG SET on either
/// changes the one value.
pub static ALIASES: &[(&str, &str)] = &[
    ("cluster-slave-no-failover", "cluster-replica-no-failover"),
    (
        "cluster-slave-validity-factor",
        "cluster-replica-validity-factor",
    ),
    ("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    ("hash-max-ziplist-value", "hash-max-listpack-value"),
    ("list-max-ziplist-size", "list-max-listpack-size"),
    ("lua-time-limit", "busy-reply-threshold"),
    ("min-slaves-max-lag", "min-replicas-max-lag"),
    ("min-slaves-to-write", "min-replicas-to-write"),
    ("repl-ping-slave-period", "repl-ping-replica-period"),
    ("slave-announce-ip", "replica-announce-ip"),
    ("slave-announce-port", "replica-announce-port"),
    ("slave-ignore-maxmemory", "replica-ignore-maxmemory"),
    ("slave-lazy-flush", "replica-lazy-flush"),
    ("slave-priority", "replica-priority"),
    ("slave-read-only", "replica-read-only"),
    ("slave-serve-stale-data", "replica-serve-stale-data"),
    ("slaveof", "replicaof"),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    ("zset-max-ziplist-value", "zset-max-listpack-value"),
];

/// Finds a directive by name or alias (ASCII case-insensitive).
/// Directives that CONFIG SET changes only when `enable-protected-configs`
/// allows it (Redis 7.0's PROTECTED_CONFIG flag, config.c): where the server
/// writes its files, the target of the classic "CONFIG SET dir + SAVE"
/// attack. They can always be set in the configuration file and on the
/// command line.
pub const PROTECTED: &[&str] = &["dbfilename", "dir"];

/// True for a directive in [`PROTECTED`].
pub fn is_protected(d: &Directive) -> bool {
    PROTECTED.contains(&d.name)
}

/// Whether a protected action (`enable-debug-command`,
/// `enable-protected-configs`) is allowed by `setting` for a client:
/// `yes` always, `local` for unix-socket and loopback clients only, `no`
/// never (Redis's `allowProtectedAction` and `islocalClient`). `addr` is
/// the client's peer address as CLIENT LIST shows it.
pub fn protected_action_allowed(setting: &str, unix: bool, addr: &str) -> bool {
    match setting {
        "yes" => true,
        "local" => unix || addr.starts_with("127.") || addr.starts_with("[::1]"),
        _ => false,
    }
}

/// The directive called `name` (case-insensitive; aliases such as
/// `hash-max-ziplist-entries` resolve to their directive), if supported.
pub fn directive(name: &str) -> Option<&'static Directive> {
    let name = ALIASES
        .iter()
        .find(|(a, _)| a.eq_ignore_ascii_case(name))
        .map_or(name, |(_, c)| *c);
    DIRECTIVES
        .iter()
        .find(|d| d.name.eq_ignore_ascii_case(name))
}

/// Parses a memory value as Redis's `memtoull`: digits with an optional
/// unit b, k, kb, m, mb, g, gb (case-insensitive; `k` = 1000, `kb` = 1024).
pub fn parse_memory(s: &str) -> Option<u64> {
    let lower = s.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(digits_end);
    if num.is_empty() {
        return None;
    }
    let mul: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    num.parse::<u64>().ok()?.checked_mul(mul)
}

/// The directives Redis 7.0 flags MULTI_ARG_CONFIG (config.c): a single
/// argument given for them in a configuration line is split by spaces.
const MULTI_ARG: &[&str] = &[
    "shutdown-on-sigint",
    "shutdown-on-sigterm",
    "save",
    "client-output-buffer-limit",
    "oom-score-adj-values",
    "bind",
    "replicaof",
    "latency-tracking-info-percentiles",
];

/// Validates and normalises `args` for directive `d`, returning the value in
/// CONFIG GET form, or Redis's reason text.
pub fn normalise(d: &Directive, args: &[String]) -> Result<String, String> {
    match d.kind {
        Kind::List => {
            if d.name == "save" {
                return normalise_save(args);
            }
            if d.name == "replicaof" {
                // Redis 7.0's setConfigReplicaOfOption: `no one` or a host
                // and a port in [0, 65535] (strtol, the whole argument).
                // No value at all is "not a replica": the line CONFIG
                // REWRITE writes for a master.
                if args.is_empty() {
                    return Ok(String::new());
                }
                if args.len() != 2 {
                    return Err("wrong number of arguments".into());
                }
                let no_one =
                    args[0].eq_ignore_ascii_case("no") && args[1].eq_ignore_ascii_case("one");
                if !no_one && !matches!(args[1].parse::<i64>(), Ok(0..=65535)) {
                    return Err("Invalid master port".into());
                }
            }
            Ok(args.join(" "))
        }
        // Multi-argument enums check their own (possibly empty) list.
        _ if args.is_empty() && d.name.starts_with("shutdown-on-sig") => {
            Err("argument(s) must be one of the following: default, save, nosave, now, force".into())
        }
        // Redis keeps a multi-argument directive's words as one list: the
        // single-value parsers below split by spaces.
        _ if args.len() > 1 && MULTI_ARG.contains(&d.name) => normalise(d, &[args.join(" ")]),
        _ if args.len() != 1 => Err("wrong number of arguments".into()),
        Kind::Bool if d.name == "activedefrag" && args[0].eq_ignore_ascii_case("yes") => Err(
            "Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution".into(),
        ),
        Kind::Bool => match args[0].to_ascii_lowercase().as_str() {
            "yes" => Ok("yes".into()),
            "no" => Ok("no".into()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Int { min, max } => {
            let v: i64 = args[0]
                .parse()
                .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
            if v < min || v > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            if d.name == "hz" {
                // Redis accepts any non-negative hz and clamps it to 1..=500
                // (CONFIG_MIN_HZ / CONFIG_MAX_HZ), which CONFIG GET shows.
                return Ok(v.clamp(1, 500).to_string());
            }
            Ok(v.to_string())
        }
        Kind::Memory { min, max } => {
            let v = parse_memory(&args[0])
                .ok_or_else(|| "argument must be a memory value".to_string())?;
            if v < min || v > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            Ok(v.to_string())
        }
        Kind::Enum(words) => {
            let l = args[0].to_ascii_lowercase();
            if words.contains(&l.as_str()) {
                Ok(l)
            } else {
                Err(format!(
                    "argument(s) must be one of the following: {}",
                    words.join(", ")
                ))
            }
        }
        Kind::Str if d.name == "notify-keyspace-events" => crate::events::normalise(&args[0]),
        Kind::Str if d.name.starts_with("shutdown-on-sig") => normalise_shutdown_flags(&args[0]),
        Kind::Str if d.name == "latency-tracking-info-percentiles" => {
            normalise_percentiles(&args[0])
        }
        Kind::Str if d.name == "oom-score-adj-values" => normalise_oom_values(&args[0]),
        Kind::Str if d.name == "maxmemory-clients" => normalise_maxmemory_clients(&args[0]),
        Kind::Str if d.name == "dbfilename" => {
            // Redis's isValidDBfilename.
            if args[0].contains('/') {
                Err("dbfilename can't be a path, just a filename".into())
            } else {
                Ok(args[0].clone())
            }
        }
        Kind::Str => Ok(args[0].clone()),
        Kind::Octal => {
            let v = u32::from_str_radix(&args[0], 8)
                .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
            if v > 0o777 {
                return Err("argument must be between 0 and 511 inclusive".into());
            }
            Ok(format!("{v:o}"))
        }
    }
}

/// shutdown-on-sigint / shutdown-on-sigterm (Redis 7.0's flags enum):
/// `default`, or any of save, nosave, now, force (not save with nosave),
/// shown in that order.
fn normalise_shutdown_flags(v: &str) -> Result<String, String> {
    let bad = || {
        "argument(s) must be one of the following: default, save, nosave, now, force".to_string()
    };
    let words: Vec<String> = v.split_whitespace().map(str::to_ascii_lowercase).collect();
    if words.is_empty() {
        return Err(bad());
    }
    if words.iter().all(|w| w == "default") {
        return Ok("default".into());
    }
    if words.iter().any(|w| !SHUTDOWN_FLAGS.contains(&w.as_str())) {
        return Err(bad());
    }
    let has = |f: &str| words.iter().any(|w| w == f);
    if has("save") && has("nosave") {
        return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
    }
    Ok(SHUTDOWN_FLAGS
        .iter()
        .filter(|f| has(f))
        .copied()
        .collect::<Vec<_>>()
        .join(" "))
}

/// True when `name` is one of ferrokv's own start-up-only directives
/// (`memcached-*`, `metrics-*`, which Redis does not have) and `value` is
/// its current value: CONFIG SET then succeeds without a change, so that
/// tools setting every directive of `CONFIG GET *` back to its own value
/// (Redis's test suite, "CONFIG sanity") work; Redis's own immutable
/// directives keep Redis's refusal.
pub fn same_value_of_own(config: &Config, name: &str, value: &str) -> bool {
    (name.starts_with("memcached-") || name.starts_with("metrics-"))
        && directive(name)
            .and_then(|d| normalise(d, &[value.to_string()]).ok())
            .is_some_and(|v| v == config.get(name))
}

/// latency-tracking-info-percentiles: numbers in [0, 100] (an empty list
/// allowed), shown as `%f` with trailing zeros trimmed (Redis 7.0's
/// `setConfigLatencyTrackingInfoPercentilesOutputOption`).
fn normalise_percentiles(v: &str) -> Result<String, String> {
    let mut out = Vec::new();
    for w in v.split_whitespace() {
        let p: f64 = w
            .parse()
            .map_err(|_| "Invalid latency-tracking-info-percentiles parameters".to_string())?;
        if !(0.0..=100.0).contains(&p) {
            return Err(
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                    .into(),
            );
        }
        let t = format!("{p:.6}");
        out.push(t.trim_end_matches('0').trim_end_matches('.').to_string());
    }
    Ok(out.join(" "))
}

/// oom-score-adj-values: three integers in [-2000, 2000] (Redis 7.0's
/// `setConfigOOMScoreAdjValuesOption`).
fn normalise_oom_values(v: &str) -> Result<String, String> {
    let words: Vec<&str> = v.split_whitespace().collect();
    if words.len() != 3 {
        return Err("wrong number of arguments".into());
    }
    let mut out = Vec::new();
    for w in words {
        let n: i64 = w
            .parse()
            .ok()
            .filter(|n| (-2000..=2000).contains(n))
            .ok_or_else(|| {
                "Invalid oom-score-adj-values, elements must be between -2000 and 2000.".to_string()
            })?;
        out.push(n.to_string());
    }
    Ok(out.join(" "))
}

/// maxmemory-clients: a memory value, or a percentage of maxmemory
/// (`10%`), shown as given in bytes or with its `%`.
fn normalise_maxmemory_clients(v: &str) -> Result<String, String> {
    if let Some(p) = v.strip_suffix('%') {
        let n: i64 = p
            .parse()
            .ok()
            .filter(|n| *n >= 0)
            .ok_or_else(|| "argument must be a memory or percent value".to_string())?;
        if n > 100 {
            return Err("percentage argument must be less or equal to 100".into());
        }
        return Ok(format!("{n}%"));
    }
    parse_memory(v)
        .map(|n| n.to_string())
        .ok_or_else(|| "argument must be a memory or percent value".to_string())
}

fn normalise_save(args: &[String]) -> Result<String, String> {
    let words: Vec<&str> = args.iter().flat_map(|a| a.split_whitespace()).collect();
    if words.is_empty() || (words.len() == 1 && words[0].is_empty()) {
        return Ok(String::new());
    }
    if !words.len().is_multiple_of(2) {
        return Err("Invalid save parameters".into());
    }
    for w in &words {
        if w.parse::<u64>().is_err() {
            return Err("Invalid save parameters".into());
        }
    }
    Ok(words.join(" "))
}

/// The effective configuration: one normalised string per directive.
#[derive(Debug, Clone)]
pub struct Config {
    values: BTreeMap<&'static str, String>,
    /// The config file given at start-up (CONFIG REWRITE target).
    pub file: Option<std::path::PathBuf>,
    /// `user <name> <rules...>` lines: [name, rules...] each (loaded by
    /// `acl::startup`).
    pub users: Vec<Vec<String>>,
    /// Directives whose value the server picked itself because the user
    /// left them at their default (`io-threads` 0 = one per core but
    /// one): CONFIG REWRITE treats them as defaults and leaves them out.
    pub derived: std::collections::BTreeSet<&'static str>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            values: DIRECTIVES
                .iter()
                .map(|d| (d.name, d.default.to_string()))
                .collect(),
            file: None,
            users: Vec::new(),
            derived: Default::default(),
        }
    }
}

/// A configuration error found while loading (file or arguments).
#[derive(Debug, thiserror::Error)]
#[error("\n*** FATAL CONFIG FILE ERROR (ferrokv {version}) ***\nReading the configuration file, at line {line}\n>>> '{text}'\n{reason}")]
pub struct LoadError {
    /// ferrokv's version.
    pub version: &'static str,
    /// 1-based line number in the combined config text.
    pub line: usize,
    /// The offending line.
    pub text: String,
    /// Why it was refused.
    pub reason: String,
}

impl Config {
    /// Reads the directives in `text` (redis.conf syntax), overriding defaults.
    /// Errors name the line, the directive and the reason, as Redis does.
    pub fn load_str(&mut self, text: &str) -> Result<(), LoadError> {
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |reason: String| LoadError {
                version: env!("CARGO_PKG_VERSION"),
                line: i + 1,
                text: line.to_string(),
                reason,
            };
            let mut scratch = Vec::new();
            let mut ranges = Vec::new();
            split_args(line.as_bytes(), &mut scratch, &mut ranges)
                .map_err(|_| err("Unbalanced quotes in configuration line".into()))?;
            let argv: Vec<String> = ranges
                .iter()
                .map(|&(s, e)| {
                    String::from_utf8_lossy(&scratch[s as usize..e as usize]).into_owned()
                })
                .collect();
            if argv.is_empty() {
                continue;
            }
            if argv[0].eq_ignore_ascii_case("user") && argv.len() >= 2 {
                // Redis's ACLAppendUserForLoading: validated now, applied
                // at start-up.
                if let Err((i, e)) = crate::acl::validate_user_line(&argv, &self.users) {
                    let bad = argv.get(i.min(argv.len() - 1)).cloned().unwrap_or_default();
                    return Err(err(format!(
                        "Error in user declaration '{}': {}",
                        bad,
                        e.message()
                    )));
                }
                self.users.push(argv[1..].to_vec());
                continue;
            }
            let Some(d) = directive(&argv[0]) else {
                return Err(err(format!(
                    "Bad directive or wrong number of arguments: '{}'",
                    argv[0]
                )));
            };
            // A multi-argument directive given one non-empty argument (the
            // command line quotes each option's value: `--replicaof "h p"`)
            // has it split by spaces, as Redis 7.0's loadServerConfigFromString
            // does for MULTI_ARG_CONFIG directives.
            let mut argv = argv;
            if MULTI_ARG.contains(&d.name) && argv.len() == 2 && !argv[1].is_empty() {
                let one = argv.pop().unwrap_or_default();
                let (mut sc, mut rg) = (Vec::new(), Vec::new());
                split_args(one.as_bytes(), &mut sc, &mut rg)
                    .map_err(|_| err("Unbalanced quotes in configuration line".into()))?;
                argv.extend(rg.iter().map(|&(s, e)| {
                    String::from_utf8_lossy(&sc[s as usize..e as usize]).into_owned()
                }));
            }
            if d.name == "save" && self.values.get("save").map(String::as_str) == Some(d.default) {
                // The first `save` line replaces the default points; later
                // ones add to them, as in redis.conf.
                self.values.insert("save", String::new());
            }
            let v = if d.name == "client-output-buffer-limit" {
                merge_obl(self.get(d.name), &argv[1..]).map_err(err)?
            } else {
                normalise(d, &argv[1..]).map_err(err)?
            };
            if d.name == "save" {
                let cur = self.values.get("save").cloned().unwrap_or_default();
                let merged = if cur.is_empty() || v.is_empty() {
                    v
                } else {
                    format!("{cur} {v}")
                };
                self.values.insert("save", merged);
            } else {
                self.values.insert(d.name, v);
            }
        }
        Ok(())
    }

    /// Builds a configuration from a redis-server-style command line:
    /// `[config-file] [--directive value ...]`. Returns the config text built
    /// from the arguments (appended after the file, as Redis does).
    pub fn from_args(args: &[String]) -> Result<Config, String> {
        let mut cfg = Config::default();
        let mut rest = args;
        let mut text = String::new();
        if let Some(first) = rest.first() {
            if !first.starts_with("--") {
                let content = if first == "-" {
                    let mut s = String::new();
                    std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                        .map_err(|e| format!("Fatal error, can't read config from stdin: {e}"))?;
                    s
                } else {
                    std::fs::read_to_string(first).map_err(|e| {
                        format!("Fatal error, can't open config file '{first}': {e}")
                    })?
                };
                let path = std::path::Path::new(first);
                cfg.file = Some(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()));
                text.push_str(&content);
                text.push('\n');
                rest = &rest[1..];
            }
        }
        // Redis 7.0's main(): `--name` starts a new line only once the
        // option before it has a value; until then an argument starting
        // with `--` is that option's value (`--port --bla` sets port to
        // "--bla"). `--save` followed by another option, or last, gets "".
        // The options follow the file after a newline, so without a file
        // they start at line 2, as in Redis's error reports.
        let mut opts = String::new();
        let mut has_value = true;
        for (j, a) in rest.iter().enumerate() {
            match a.strip_prefix("--") {
                Some(name) if has_value => {
                    if !opts.is_empty() {
                        opts.push('\n');
                    }
                    opts.push_str(name);
                    has_value = name.split_whitespace().count() > 1;
                    if !has_value && name.eq_ignore_ascii_case("save") {
                        let next_is_option = rest.get(j + 1).is_none_or(|n| n.starts_with("--"));
                        if next_is_option {
                            opts.push_str(" \"\"");
                            has_value = true;
                        }
                    }
                }
                _ => {
                    opts.push(' ');
                    opts.push_str(&repr_arg(a));
                    has_value = true;
                }
            }
        }
        if !opts.is_empty() && cfg.file.is_none() {
            text.push('\n');
        }
        text.push_str(&opts);
        cfg.load_str(&text).map_err(|e| e.to_string())?;
        Ok(cfg)
    }

    /// The normalised value of `name`.
    pub fn get(&self, name: &str) -> &str {
        self.values.get(name).map(String::as_str).unwrap_or("")
    }

    /// Integer value of `name` (0 when unparsable).
    pub fn get_i64(&self, name: &str) -> i64 {
        self.get(name).parse().unwrap_or(0)
    }

    /// Value of an integer or memory directive (`Kind::Int`, `Kind::Memory`:
    /// bytes) as an unsigned number; 0 when it is negative (or, for any
    /// other kind of directive, not a number).
    pub fn get_u64(&self, name: &str) -> u64 {
        debug_assert!(
            matches!(
                directive(name).map(|d| d.kind),
                Some(Kind::Int { .. } | Kind::Memory { .. })
            ),
            "{name} is not a numeric directive"
        );
        self.get(name).parse().unwrap_or(0)
    }

    /// Value of a yes/no directive (`Kind::Bool`): true for `yes`.
    pub fn get_bool(&self, name: &str) -> bool {
        debug_assert!(
            matches!(directive(name).map(|d| d.kind), Some(Kind::Bool)),
            "{name} is not a yes/no directive"
        );
        self.get(name) == "yes"
    }

    /// Value of an octal directive (`Kind::Octal`, e.g. `unixsocketperm`):
    /// the permission bits; 0 when unparsable.
    pub fn get_octal(&self, name: &str) -> u32 {
        debug_assert!(
            matches!(directive(name).map(|d| d.kind), Some(Kind::Octal)),
            "{name} is not an octal directive"
        );
        u32::from_str_radix(self.get(name), 8).unwrap_or(0)
    }

    /// `maxmemory-policy` as an eviction policy (`noeviction` when the
    /// stored name is unknown, which normalisation rules out).
    pub fn maxmemory_policy(&self) -> crate::evict::Policy {
        crate::evict::Policy::parse(self.get("maxmemory-policy"))
            .unwrap_or(crate::evict::Policy::NoEviction)
    }

    /// Sets one directive from CONFIG SET arguments; the error is Redis's
    /// reason text.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let d = directive(name).ok_or_else(|| "Unknown option".to_string())?;
        if !d.mutable {
            if same_value_of_own(self, d.name, value) {
                return Ok(());
            }
            return Err("can't set immutable config".into());
        }
        let args: Vec<String> = if matches!(d.kind, Kind::List) {
            value.split_whitespace().map(str::to_string).collect()
        } else {
            vec![value.to_string()]
        };
        let v = if d.name == "save" && args.is_empty() {
            String::new()
        } else if d.name == "client-output-buffer-limit" {
            merge_obl(self.get(d.name), &args)?
        } else {
            normalise(d, &args)?
        };
        self.values.insert(d.name, v);
        Ok(())
    }

    /// A directive's value as CONFIG GET shows it (the stored value, except
    /// notify-keyspace-events: see `events::display`).
    pub fn shown(&self, name: &str) -> String {
        match name {
            "notify-keyspace-events" => crate::events::display(self.get(name)),
            _ => self.get(name).to_string(),
        }
    }

    /// (name, value) pairs whose name matches the glob `pattern`.
    pub fn matching(&self, pattern: &[u8]) -> Vec<(&'static str, String)> {
        let mut v: Vec<(&'static str, String)> = DIRECTIVES
            .iter()
            .filter(|d| !HIDDEN.contains(&d.name))
            .filter(|d| crate::util::glob_match(pattern, d.name.as_bytes(), true))
            .map(|d| (d.name, self.shown(d.name)))
            .collect();
        for (alias, canon) in ALIASES {
            if crate::util::glob_match(pattern, alias.as_bytes(), true) {
                v.push((alias, self.get(canon).to_string()));
            }
        }
        v
    }

    /// Renders the configuration for CONFIG REWRITE: the original file with
    /// changed directives replaced in place and new ones appended.
    pub fn rewrite_text(&self, original: &str) -> String {
        self.rewrite_text_opts(original, false)
    }

    /// [`Config::rewrite_text`]; with `force_all` (DEBUG
    /// CONFIG-REWRITE-FORCE-ALL, Redis's `rewriteConfig(path, 1)`) every
    /// directive is written, those still at their default value too.
    pub fn rewrite_text_opts(&self, original: &str, force_all: bool) -> String {
        let mut seen = std::collections::BTreeSet::new();
        let mut out = String::new();
        for raw in original.lines() {
            let line = raw.trim();
            let name = line
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            if line.starts_with('#') || line.is_empty() {
                out.push_str(raw);
                out.push('\n');
                continue;
            }
            match directive(&name) {
                Some(d) => {
                    if seen.insert(d.name) {
                        let _ = writeln!(out, "{}", self.render(d));
                    }
                }
                None => {
                    out.push_str(raw);
                    out.push('\n');
                }
            }
        }
        let mut added = false;
        for d in DIRECTIVES {
            let at_default = self.get(d.name) == d.default || self.derived.contains(d.name);
            if seen.contains(d.name) || (!force_all && at_default) {
                continue;
            }
            if !added {
                out.push_str("# Generated by CONFIG REWRITE\n");
                added = true;
            }
            let _ = writeln!(out, "{}", self.render(d));
        }
        out
    }

    fn render(&self, d: &Directive) -> String {
        let v = self.get(d.name);
        match d.kind {
            Kind::List if d.name == "save" && v.is_empty() => "save \"\"".to_string(),
            Kind::List if d.name == "save" => {
                let w: Vec<&str> = v.split(' ').collect();
                w.chunks(2)
                    .map(|c| format!("save {}", c.join(" ")))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            Kind::List if d.name == "client-output-buffer-limit" => render_obl(d, v),
            Kind::List => format!("{} {}", d.name, v),
            Kind::Memory { .. } => match v.parse::<u64>() {
                Ok(n) => format!("{} {}", d.name, format_memory(n)),
                Err(_) => format!("{} {}", d.name, quote_arg(v)),
            },
            _ => format!("{} {}", d.name, quote_arg(v)),
        }
    }
}

/// A command-line value as Redis's `sdscatrepr` writes it into the
/// options text: always in double quotes, `\\`, `"`, `\n`, `\r`, `\t`
/// escaped, other control bytes as `\xNN` (so error reports show
/// `'port "6379" "6380"'` as Redis's do).
fn repr_arg(v: &str) -> String {
    let mut s = String::from("\"");
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                s.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// Quotes a value for a config line when it is empty or has spaces/quotes.
fn quote_arg(v: &str) -> String {
    if !v.is_empty() && !v.contains([' ', '"', '\'', '\\', '\t']) {
        return v.to_string();
    }
    repr_arg(v)
}

/// Configuration values read on the request path, mirrored from [`Config`]
/// into atomics so that no lock is taken per command. Updated by
/// `Server::apply_config` after every CONFIG SET.
#[derive(Debug, Default)]
pub struct LiveConfig {
    /// list-max-listpack-size (entries when > 0, size class when < 0).
    pub list_max_listpack_size: AtomicI64,
    /// list-compress-depth: nodes left uncompressed at each end of lists
    /// created from now on (0 = no compression).
    pub list_compress_depth: AtomicU64,
    /// hash-max-listpack-entries.
    pub hash_max_listpack_entries: AtomicU64,
    /// hash-max-listpack-value, bytes.
    pub hash_max_listpack_value: AtomicU64,
    /// set-max-intset-entries.
    pub set_max_intset_entries: AtomicU64,
    /// zset-max-listpack-entries.
    pub zset_max_listpack_entries: AtomicU64,
    /// stream-node-max-bytes (0: no limit).
    pub stream_node_max_bytes: AtomicU64,
    /// stream-node-max-entries (0: no limit).
    pub stream_node_max_entries: AtomicU64,
    /// zset-max-listpack-value, bytes.
    pub zset_max_listpack_value: AtomicU64,
    /// proto-max-bulk-len, bytes.
    pub proto_max_bulk_len: AtomicU64,
    /// hll-sparse-max-bytes: a sparse HyperLogLog growing past it turns
    /// dense, bytes (header included).
    pub hll_sparse_max_bytes: AtomicU64,
    /// item-size-max (memcached's -I), bytes.
    pub item_size_max: AtomicU64,
    /// client-query-buffer-limit, bytes.
    pub client_query_buffer_limit: AtomicU64,
    /// maxclients.
    pub maxclients: AtomicU64,
    /// timeout, seconds (0 = never).
    pub timeout: AtomicU64,
    /// tcp-keepalive, seconds.
    pub tcp_keepalive: AtomicU64,
    /// slowlog-log-slower-than, microseconds (-1 disables, 0 logs all).
    pub slowlog_slower_than: AtomicI64,
    /// slowlog-max-len, entries.
    pub slowlog_max_len: AtomicU64,
    /// latency-monitor-threshold, milliseconds (0 = off).
    pub latency_threshold: AtomicU64,
    /// latency-tracking: per-command latency histograms are recorded
    /// (LATENCY HISTOGRAM).
    pub latency_tracking: std::sync::atomic::AtomicBool,
    /// client-output-buffer-limit: (hard, soft, soft-seconds) for each
    /// [`OblClass`], in that order.
    pub obl: [AtomicU64; 9],
}

/// A client class of client-output-buffer-limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OblClass {
    /// Ordinary clients.
    Normal = 0,
    /// Replicas (`replica`, alias `slave`).
    Replica = 1,
    /// Clients subscribed to channels, patterns or shard channels.
    PubSub = 2,
}

impl LiveConfig {
    /// The output buffer limit that applies to `h` now: the pubsub class
    /// while it is subscribed, the normal class otherwise (Redis's
    /// getClientType).
    pub fn limit_for(&self, h: &crate::clients::ClientHandle) -> crate::clients::BufLimit {
        if h.outbox.subscriptions() > 0 {
            self.obl_limit(OblClass::PubSub)
        } else {
            self.obl_limit(OblClass::Normal)
        }
    }

    /// The current limit of `class`.
    pub fn obl_limit(&self, class: OblClass) -> crate::clients::BufLimit {
        let i = class as usize * 3;
        crate::clients::BufLimit {
            hard: self.obl[i].load(Ordering::Relaxed),
            soft: self.obl[i + 1].load(Ordering::Relaxed),
            soft_secs: self.obl[i + 2].load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_accessors() {
        let mut c = Config::default();
        c.set("maxmemory", "1mb").unwrap();
        c.set("maxmemory-policy", "ALLKEYS-LFU").unwrap();
        c.set("appendonly", "YES").unwrap();
        c.load_str("unixsocketperm 700").unwrap();
        assert_eq!(c.get_u64("maxmemory"), 1 << 20);
        assert_eq!(c.get_u64("hz"), 10);
        assert!(c.get_bool("appendonly"));
        assert!(!c.get_bool("tls-cluster"));
        assert_eq!(c.get_octal("unixsocketperm"), 0o700);
        assert_eq!(c.maxmemory_policy(), crate::evict::Policy::AllkeysLfu);
    }

    #[test]
    fn file_and_args() {
        let mut c = Config::default();
        c.load_str("# comment\nport 7000\nproto-max-bulk-len 2mb\nsave 60 1\nsave 10 5\n")
            .unwrap();
        assert_eq!(c.get("port"), "7000");
        assert_eq!(c.get("proto-max-bulk-len"), "2097152");
        assert_eq!(c.get("save"), "60 1 10 5");
        let e = c.load_str("port 1\nfoo bar\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.reason.contains("foo"));
        // Redis's report: the line (`>>> 'port abc'`) names the directive,
        // the reason is Redis's bare text.
        let e = c.load_str("port abc\n").unwrap_err();
        assert_eq!(e.reason, "argument couldn't be parsed into an integer");
        assert!(e.to_string().contains(">>> 'port abc'"), "{e}");
        let c = Config::from_args(&["--port".into(), "7001".into(), "--save".into(), "".into()])
            .unwrap();
        assert_eq!(c.get("port"), "7001");
        assert_eq!(c.get("save"), "");
    }

    #[test]
    fn output_buffer_limits() {
        let mut c = Config::default();
        assert_eq!(c.get("client-output-buffer-limit"), OBL_DEFAULT);
        c.set(
            "client-output-buffer-limit",
            "pubsub 1mb 2kb 3 replica 1 2 3",
        )
        .unwrap();
        assert_eq!(
            c.get("client-output-buffer-limit"),
            "normal 0 0 0 slave 1 2 3 pubsub 1048576 2048 3"
        );
        assert!(c.set("client-output-buffer-limit", "pubsub 1mb").is_err());
        assert!(c.set("client-output-buffer-limit", "foo 1 1 1").is_err());
        assert!(c
            .set("client-output-buffer-limit", "normal 1 1 -1")
            .is_err());
        assert_eq!(obl_values(c.get("client-output-buffer-limit"))[6], 1 << 20);
        let d = directive("client-output-buffer-limit").unwrap();
        assert_eq!(
            c.render(d),
            "client-output-buffer-limit slave 1 2 3\nclient-output-buffer-limit pubsub 1mb 2kb 3"
        );
        c.load_str("client-output-buffer-limit normal 1gb 0 0\n")
            .unwrap();
        assert_eq!(obl_values(c.get("client-output-buffer-limit"))[0], 1 << 30);
    }

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("1KB"), Some(1024));
        assert_eq!(parse_memory("3gb"), Some(3 << 30));
        assert_eq!(parse_memory("x"), None);
        assert_eq!(parse_memory("-1"), None);
    }
}
