//! `Server`: the state shared by every connection — configuration, keyspace,
//! client registry, statistics, slow log, latency monitor and MONITOR feed —
//! and [`run`], which starts the listeners and background tasks.

use crate::clients::ClientRegistry;
use crate::config::Config;
use crate::db::Keyspace;
use crate::stats::Stats;
use parking_lot::{Mutex, RwLock};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub use crate::config::{LiveConfig, OblClass};

/// One SLOWLOG entry (redis.io/commands/slowlog-get).
#[derive(Debug, Clone)]
pub struct SlowlogEntry {
    /// Unique, increasing id.
    pub id: u64,
    /// Unix time in seconds when the command ran.
    pub time: u64,
    /// Execution time in microseconds.
    pub duration_us: u64,
    /// Arguments, at most 32 (the last one says how many more), each cut to
    /// 128 bytes with "... (N more bytes)", as Redis's slowlogCreateEntry.
    pub args: Vec<Vec<u8>>,
    /// Client address "ip:port".
    pub addr: String,
    /// Client name.
    pub name: Vec<u8>,
}

/// The slow log ring.
#[derive(Debug, Default)]
pub struct SlowLog {
    /// Newest first.
    pub entries: VecDeque<SlowlogEntry>,
    /// Next id.
    pub next_id: u64,
}

/// One latency monitor event's samples (LATENCY HISTORY / LATEST).
#[derive(Debug, Default, Clone)]
pub struct LatencySeries {
    /// (unix seconds, latency ms), oldest first, at most 160.
    pub samples: VecDeque<(u64, u64)>,
    /// Highest latency ever recorded, ms.
    pub max: u64,
}

/// Shared server state.
pub struct Server {
    /// The exec gate and the WATCH registry (tx.rs).
    pub tx: crate::tx::Transactions,
    /// maxmemory settings and eviction state (evict.rs).
    pub evict: crate::evict::Eviction,
    /// The clock every part of the server reads "now" from (clock.rs);
    /// tests can set it.
    pub clock: crate::clock::Clock,
    /// The effective configuration (CONFIG GET/SET).
    pub config: RwLock<Config>,
    /// Hot-path copies of configuration values.
    pub live: LiveConfig,
    /// All databases.
    pub keyspace: Keyspace,
    /// Connected clients.
    pub clients: ClientRegistry,
    /// Pub/Sub channels, patterns and their subscribers.
    pub pubsub: crate::pubsub::PubSub,
    /// Client-side caching tables (CLIENT TRACKING).
    pub tracking: crate::tracking::Tracking,
    /// ACL users, log and state.
    pub acl: crate::acl::Acl,
    /// Counters for INFO.
    pub stats: Stats,
    /// SLOWLOG.
    pub slowlog: Mutex<SlowLog>,
    /// LATENCY events by name.
    pub latency: Mutex<std::collections::BTreeMap<String, LatencySeries>>,
    /// Connected MONITOR clients: (client id, sender of formatted lines).
    pub monitors: Mutex<Vec<(u64, tokio::sync::mpsc::UnboundedSender<Vec<u8>>)>>,
    /// Number of MONITOR clients (checked per command without locking).
    pub monitor_count: AtomicUsize,
    /// 40 hex characters, random per start (INFO run_id).
    pub run_id: String,
    /// Replication: ids, backlog, replicas, the link to a master (repl/).
    pub repl: crate::repl::Repl,
    /// Redis Cluster: nodes, slots, the bus (cluster/); unused unless
    /// cluster-enabled yes.
    pub cluster: crate::cluster::Cluster,
    /// Lua scripts and functions: the interpreters, the script cache, the
    /// function libraries and the running script's state (script/).
    pub scripts: crate::script::Scripts,
    /// The memcached protocol's server-wide state (cmd/memcache.rs).
    pub memcache: crate::db::value::ItemState,
    /// When the server started.
    pub started: Instant,
    /// Unix ms at start.
    pub started_ms: u64,
    /// Set by SHUTDOWN / signals; the main task exits when notified.
    pub shutdown: tokio::sync::Notify,
    /// True once shutdown began.
    pub shutting_down: AtomicBool,
    /// CLIENT PAUSE state (pause.rs).
    pub pause: crate::pause::Pause,
    /// Unix time (s) of the last successful save (LASTSAVE); start time
    /// until persistence saves.
    pub lastsave: AtomicU64,
    /// TCP port actually bound (port 0 picks a free one).
    pub bound_port: AtomicU64,
    /// Worker thread count (io-threads).
    pub threads: usize,
    /// Path of the executable (INFO executable).
    pub executable: String,
    /// RDB persistence state (SAVE, BGSAVE, INFO persistence).
    pub rdb: crate::persist::rdb::RdbState,
    /// The append-only file (persist/aof/), a sink of `propagation`.
    pub aof: Arc<crate::persist::aof::Aof>,
    /// The stream of effects of write commands (propagate.rs).
    pub propagation: crate::propagate::Stream,
    /// I/O workers, listeners (net/listener.rs).
    pub net: crate::workers::Net,
    /// The TLS context of the TLS listener (net::tls).
    pub tls: crate::tls::TlsState,
    /// Switches set by DEBUG subcommands (debug.c's server fields).
    pub debug: DebugState,
}

/// Switches and values set by DEBUG subcommands, mirroring the `server`
/// fields Redis 7.0's debug.c sets. The ones ferrokv has no machinery for
/// are kept so that the subcommands behave as in Redis (they reply OK)
/// and say so here.
#[derive(Debug)]
pub struct DebugState {
    /// DEBUG PAUSE-CRON (`server.pause_cron`): the cron task skips its work
    /// (metrics sampling, active expiry, scheduled saves, replication and
    /// client timeouts) while set.
    pub pause_cron: AtomicBool,
    /// DEBUG REPLYBUFFER PEAK-RESET-TIME, ms (-1: never;
    /// `server.reply_buffer_peak_reset_time`, default 5000). ferrokv's
    /// output buffers are not resized by a cron job, so the value is only
    /// kept.
    pub reply_buffer_peak_reset_time: AtomicI64,
    /// DEBUG REPLYBUFFER RESIZING (`server.reply_buffer_resizing_enabled`);
    /// kept only, as [`Self::reply_buffer_peak_reset_time`].
    pub reply_buffer_resizing: AtomicBool,
}

/// Redis 7.0's REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME, ms.
pub const REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME: i64 = 5000;

impl Default for DebugState {
    fn default() -> Self {
        DebugState {
            pause_cron: AtomicBool::new(false),
            reply_buffer_peak_reset_time: AtomicI64::new(REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME),
            reply_buffer_resizing: AtomicBool::new(true),
        }
    }
}

/// Evicts in the background while memory is over `maxmemory` (Redis's
/// eviction time proc, evict.c `evictionTimeProc`): started when an
/// eviction before a command ran out of its time budget, when CONFIG SET
/// lowers `maxmemory` below the memory in use, and by the cron as a safety
/// net; one at a time. It runs [`crate::evict::perform`] rounds on a
/// blocking thread, yielding between rounds so commands keep running, until
/// memory is under the limit or nothing more can be evicted, so `evicted`
/// keyspace events and tracking invalidations arrive without another
/// command being sent. A replica that ignores maxmemory evicts nothing.
pub fn evict_in_background(server: &Arc<Server>) {
    if !server.evict.over_limit()
        || (server.repl.backlog.replica_mode()
            && server.repl.ignore_maxmemory.load(Ordering::Relaxed))
        || !server.evict.claim_background()
    {
        return;
    }
    let s = server.clone();
    let run = move || {
        loop {
            if s.scripts.busy() {
                std::thread::sleep(std::time::Duration::from_millis(1));
                continue;
            }
            let outcome = crate::evict::perform(&s.evict_env());
            // `evicted` events and tracking invalidations queued on this
            // thread go out now (no command ends here to send them).
            if crate::events::pending() {
                crate::events::drain(&*s);
            }
            match outcome {
                crate::evict::Outcome::Running => std::thread::yield_now(),
                _ => break,
            }
        }
        s.evict.release_background();
    };
    if tokio::runtime::Handle::try_current().is_ok() {
        drop(tokio::task::spawn_blocking(run));
    } else if std::thread::Builder::new()
        .name("ferrokv-evict".into())
        .spawn(run)
        .is_err()
    {
        server.evict.release_background();
    }
}

impl Server {
    /// The parts of the server eviction works on (evict.rs).
    pub fn evict_env(&self) -> crate::evict::Env<'_> {
        crate::evict::Env {
            keyspace: &self.keyspace,
            evict: &self.evict,
            tx: &self.tx,
            propagation: &self.propagation,
            clock: &self.clock,
            pause: &self.pause,
        }
    }

    /// The parts of the server tracking works on (tracking.rs).
    pub fn tracking_env(&self) -> crate::tracking::Env<'_> {
        crate::tracking::Env {
            tracking: &self.tracking,
            clients: &self.clients,
            keyspace: &self.keyspace,
            live: &self.live,
        }
    }

    /// The parts of the server Pub/Sub works on (pubsub.rs).
    pub fn pubsub_env(&self) -> crate::pubsub::Env<'_> {
        crate::pubsub::Env {
            pubsub: &self.pubsub,
            live: &self.live,
        }
    }

    /// The parts of the server WATCH and background steps work on (tx.rs).
    pub fn tx_env(&self) -> crate::tx::Env<'_> {
        crate::tx::Env {
            keyspace: &self.keyspace,
            tx: &self.tx,
            propagation: &self.propagation,
        }
    }

    /// Builds the shared state from a loaded configuration.
    pub fn new(config: Config, threads: usize) -> Arc<Server> {
        let dbs = config.get_i64("databases").max(1) as usize;
        let now = crate::util::now_ms();
        let random_id = crate::repl::random_id;
        let run_id = random_id();
        let propagation = crate::propagate::Stream::default();
        let mut cluster = crate::cluster::Cluster::default();
        cluster.configure(&config);
        if cluster.enabled {
            // Keys are sharded by hash slot, with a per-slot index, from
            // the first key on (db/dict.rs `hash_key`).
            crate::db::dict::enable_slot_sharding();
        }
        let pause = crate::pause::Pause::default();
        let keyspace = Keyspace::with_propagation_flag(dbs, propagation.flag(), pause.end_flag());
        let s = Arc::new(Server {
            tx: Default::default(),
            evict: Default::default(),
            clock: crate::clock::Clock::new(),
            config: RwLock::new(config),
            live: LiveConfig::default(),
            keyspace,
            clients: ClientRegistry::default(),
            pubsub: Default::default(),
            tracking: Default::default(),
            acl: crate::acl::Acl::default(),
            stats: Stats::default(),
            slowlog: Mutex::new(SlowLog::default()),
            latency: Mutex::new(Default::default()),
            monitors: Mutex::new(Vec::new()),
            monitor_count: AtomicUsize::new(0),
            run_id,
            repl: Default::default(),
            cluster,
            scripts: Default::default(),
            memcache: Default::default(),
            started: Instant::now(),
            started_ms: now,
            shutdown: tokio::sync::Notify::new(),
            shutting_down: AtomicBool::new(false),
            pause,
            lastsave: AtomicU64::new(now / 1000),
            bound_port: AtomicU64::new(0),
            threads,
            executable: std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            rdb: Default::default(),
            aof: Default::default(),
            propagation,
            net: Default::default(),
            tls: Default::default(),
            debug: Default::default(),
        });
        s.propagation.add_sink(s.aof.clone());
        s.propagation.add_sink(s.repl.backlog.clone());
        s.apply_config();
        s
    }

    /// Copies configuration values used on the request path into
    /// [`LiveConfig`]. Call after every change of `config`.
    pub fn apply_config(&self) {
        let c = self.config.read();
        if self.cluster.enabled {
            // cluster-node-timeout & co. take effect at once (CONFIG SET).
            self.cluster.refresh_settings(&c, c.get_i64("port") as u16);
        }
        let l = &self.live;
        let u = |name: &str| c.get_u64(name);
        l.proto_max_bulk_len
            .store(u("proto-max-bulk-len"), Ordering::Relaxed);
        l.item_size_max.store(u("item-size-max"), Ordering::Relaxed);
        l.client_query_buffer_limit
            .store(u("client-query-buffer-limit"), Ordering::Relaxed);
        l.maxclients.store(u("maxclients"), Ordering::Relaxed);
        let mc = c.get("maxmemory-clients");
        let mc = match mc.strip_suffix('%') {
            Some(p) => -p.parse::<i64>().unwrap_or(0),
            None => mc.parse::<i64>().unwrap_or(0),
        };
        self.clients.set_eviction_limit(mc, u("maxmemory"));
        l.list_max_listpack_size
            .store(c.get_i64("list-max-listpack-size"), Ordering::Relaxed);
        l.list_compress_depth
            .store(u("list-compress-depth"), Ordering::Relaxed);
        l.hash_max_listpack_entries
            .store(u("hash-max-listpack-entries"), Ordering::Relaxed);
        l.hash_max_listpack_value
            .store(u("hash-max-listpack-value"), Ordering::Relaxed);
        l.set_max_intset_entries
            .store(u("set-max-intset-entries"), Ordering::Relaxed);
        l.zset_max_listpack_entries
            .store(u("zset-max-listpack-entries"), Ordering::Relaxed);
        l.stream_node_max_bytes
            .store(u("stream-node-max-bytes"), Ordering::Relaxed);
        l.stream_node_max_entries
            .store(u("stream-node-max-entries"), Ordering::Relaxed);
        l.hll_sparse_max_bytes
            .store(u("hll-sparse-max-bytes"), Ordering::Relaxed);
        l.zset_max_listpack_value
            .store(u("zset-max-listpack-value"), Ordering::Relaxed);
        l.timeout.store(u("timeout"), Ordering::Relaxed);
        crate::db::lazyfree::configure(
            c.get_bool("lazyfree-lazy-eviction"),
            c.get_bool("lazyfree-lazy-expire"),
            c.get_bool("lazyfree-lazy-server-del"),
            c.get_bool("lazyfree-lazy-user-del"),
            c.get_bool("lazyfree-lazy-user-flush"),
        );
        self.aof
            .timestamp_enabled
            .store(c.get_bool("aof-timestamp-enabled"), Ordering::Relaxed);
        let r = &self.repl;
        r.min_to_write
            .store(u("min-replicas-to-write"), Ordering::Relaxed);
        r.min_max_lag
            .store(u("min-replicas-max-lag"), Ordering::Relaxed);
        r.read_only
            .store(c.get_bool("replica-read-only"), Ordering::Relaxed);
        r.serve_stale
            .store(c.get_bool("replica-serve-stale-data"), Ordering::Relaxed);
        r.ignore_maxmemory
            .store(c.get_bool("replica-ignore-maxmemory"), Ordering::Relaxed);
        r.backlog.resize(u("repl-backlog-size") as usize);
        r.timeout_s
            .store(u("repl-timeout").max(1), Ordering::Relaxed);
        self.net.set_idle_poll_us(u("io-idle-poll-us"));
        self.tracking.set_max_keys(u("tracking-table-max-keys"));
        l.tcp_keepalive.store(u("tcp-keepalive"), Ordering::Relaxed);
        l.slowlog_slower_than
            .store(c.get_i64("slowlog-log-slower-than"), Ordering::Relaxed);
        l.slowlog_max_len
            .store(u("slowlog-max-len"), Ordering::Relaxed);
        self.scripts
            .busy_threshold_ms
            .store(u("busy-reply-threshold"), Ordering::Relaxed);
        l.latency_threshold
            .store(u("latency-monitor-threshold"), Ordering::Relaxed);
        l.latency_tracking
            .store(c.get_bool("latency-tracking"), Ordering::Relaxed);
        self.keyspace
            .events()
            .set_flags(crate::events::parse_flags(c.get("notify-keyspace-events")).unwrap_or(0));
        for (i, v) in crate::config::obl_values(c.get("client-output-buffer-limit"))
            .into_iter()
            .enumerate()
        {
            l.obl[i].store(v, Ordering::Relaxed);
        }
        self.acl.sync_config(
            c.get("acl-pubsub-default"),
            c.get_i64("acllog-max-len"),
            c.get("requirepass"),
        );
        let policy = c.maxmemory_policy();
        self.evict.configure(
            u("maxmemory"),
            policy,
            u("maxmemory-samples") as u32,
            u("maxmemory-eviction-tenacity") as u32,
        );
        self.keyspace.lru.configure(
            policy.lfu(),
            u("lfu-log-factor") as u32,
            u("lfu-decay-time") as u32,
        );
        drop(c);
        let max = l.slowlog_max_len.load(Ordering::Relaxed) as usize;
        let mut sl = self.slowlog.lock();
        while sl.entries.len() > max {
            sl.entries.pop_back();
        }
    }

    /// Seconds since start.
    pub fn uptime_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// Records a latency event of `ms` milliseconds when the latency monitor
    /// is on and `ms` reaches its threshold (Redis's latencyAddSampleIfNeeded).
    pub fn latency_sample(&self, event: &str, ms: u64) {
        let th = self.live.latency_threshold.load(Ordering::Relaxed);
        if th == 0 || ms < th {
            return;
        }
        let now = self.clock.now_ms() / 1000;
        let mut l = self.latency.lock();
        let s = l.entry(event.to_string()).or_default();
        if let Some(last) = s.samples.back_mut() {
            if last.0 == now {
                last.1 = last.1.max(ms);
                s.max = s.max.max(ms);
                return;
            }
        }
        s.samples.push_back((now, ms));
        if s.samples.len() > 160 {
            s.samples.pop_front();
        }
        s.max = s.max.max(ms);
    }

    /// Begins shutdown: the main task wakes and exits the process.
    pub fn request_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        self.shutdown.notify_one();
    }
}

/// Queued key events (events.rs) are delivered to WATCH, client-side
/// caching and Pub/Sub through this interface.
impl crate::events::Deliver for Server {
    fn gate(&self) -> &crate::events::Gate {
        self.keyspace.events()
    }

    fn touch_watchers(&self, db: usize, key: &[u8]) {
        crate::tx::touch_key(&self.tx_env(), db, key);
    }

    fn invalidate(&self, key: &[u8], expired: bool) {
        crate::tracking::key_modified(&self.tracking_env(), key, expired);
    }

    fn publish(&self, channel: &[u8], message: &[u8]) {
        crate::pubsub::publish(&self.pubsub_env(), channel, message);
    }
}

/// Serving blocked clients (db/blocking.rs) reaches the server through
/// this interface.
impl crate::persist::Host for Server {
    fn repl(&self) -> &crate::repl::Repl {
        &self.repl
    }
    fn config(&self) -> &RwLock<Config> {
        &self.config
    }
    fn live(&self) -> &LiveConfig {
        &self.live
    }
    fn keyspace(&self) -> &Keyspace {
        &self.keyspace
    }
    fn rdb(&self) -> &crate::persist::rdb::RdbState {
        &self.rdb
    }
    fn aof(&self) -> &Arc<crate::persist::aof::Aof> {
        &self.aof
    }
    fn propagation(&self) -> &crate::propagate::Stream {
        &self.propagation
    }
    fn stats(&self) -> &Stats {
        &self.stats
    }
    fn clock(&self) -> &crate::clock::Clock {
        &self.clock
    }
    fn lastsave(&self) -> &AtomicU64 {
        &self.lastsave
    }
    fn clients(&self) -> &ClientRegistry {
        &self.clients
    }
    fn worker_handles(&self) -> Vec<tokio::runtime::Handle> {
        self.net.worker_handles()
    }
    fn function_libraries(&self) -> Vec<Vec<u8>> {
        let f = self.scripts.functions.lock();
        f.libraries.iter().map(|l| l.code.clone()).collect()
    }
    fn load_function_library(&self, code: &[u8], replace: bool) -> Result<(), String> {
        let mut f = self.scripts.functions.lock();
        let r = f.load(code, replace);
        self.scripts.sync_functions(&f);
        r.map(|_| ())
            .map_err(|e| String::from_utf8_lossy(&e).into_owned())
    }

    fn clear_function_libraries(&self) {
        let mut f = self.scripts.functions.lock();
        if !f.libraries.is_empty() {
            f.flush();
            self.scripts.sync_functions(&f);
        }
    }
}

impl crate::db::blocking::Host for Server {
    fn keyspace(&self) -> &crate::db::keyspace::Keyspace {
        &self.keyspace
    }

    fn cut_unit(&self) {
        self.propagation.cut();
    }

    fn list_fill(&self) -> i64 {
        self.live.list_max_listpack_size.load(Ordering::Relaxed)
    }

    fn list_compress_depth(&self) -> u64 {
        self.live.list_compress_depth.load(Ordering::Relaxed)
    }

    fn record_error(&self, msg: &str) {
        self.stats.record_error(msg);
    }
}
