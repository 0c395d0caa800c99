//! ferrokv: a Redis-compatible in-memory data store.
//!
//! The crate is the whole server; the `ferrokv-server` binary only turns its
//! command line into a [`config::Config`] and calls [`run`]. The path of one
//! request: [`net::connection`] reads into the client's buffer,
//! [`resp::parse`] yields each complete request as borrowed argument slices,
//! [`cmd::execute`] looks the command up and runs its handler against the
//! [`db::Keyspace`], the handler writes its reply into the output buffer, and
//! the connection sends all replies of the batch with one write.

pub mod acl;
pub mod clients;
pub mod clock;
pub mod cluster;
pub mod cmd;
pub mod config;
pub mod db;
pub mod events;
pub mod evict;
pub mod fdlimit;
pub mod keyspecs;
pub mod ldouble;
pub mod log;
pub mod lzf;
pub mod memory;
pub mod net;
pub mod oom;
pub mod pause;
pub mod persist;
pub mod propagate;
pub mod pubsub;
pub mod repl;
pub mod resp;
pub mod script;
pub mod server;
pub mod stats;
pub mod tls;
pub mod tracking;
pub mod tx;
pub mod util;
pub mod workers;

use config::Config;
use server::Server;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// ferrokv's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The Redis version whose behaviour ferrokv follows (reported by INFO and
/// HELLO, so clients enable the features they check for).
pub const REDIS_VERSION: &str = "7.0.15";

/// Number of I/O worker threads: `io-threads` when set, otherwise
/// [`default_io_threads`].
pub fn thread_count(config: &Config) -> usize {
    match config.get_i64("io-threads") {
        n if n > 0 => n as usize,
        _ => default_io_threads(),
    }
}

/// The default number of I/O worker threads: one per core but one (at
/// least one). The remaining core runs the main thread (accepting, the
/// cron, persistence) and the kernel's network processing, and on the
/// machine where redis-benchmark runs beside the server, the client: with
/// a worker on every core of a 2-core machine, the workers, which poll for
/// input after each batch (`io-idle-poll-us`), and the client compete for
/// the cores, and a woken worker waits for a scheduler tick behind the
/// client (p99 at -P 1 rose from 0.6 to 3.7 ms). README, Performance, has
/// the measurements for both settings.
pub fn default_io_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .saturating_sub(1)
        .max(1)
}

/// Starts the server with `config` and blocks until SHUTDOWN, SIGTERM or
/// SIGINT. Errors: binding a listener failed.
pub fn run(mut config: Config) -> std::io::Result<()> {
    if config.get_bool("disable-thp") {
        disable_thp();
    } else {
        memory::set_thp_allowed(true);
    }
    // maxclients must fit in the open-file limit (Redis's
    // adjustOpenFilesLimit): raise it, or lower maxclients with a warning.
    match fdlimit::adjust(config.get_i64("maxclients").max(1) as u64) {
        fdlimit::Adjusted::Ok => {}
        fdlimit::Adjusted::Lowered(n) => {
            let _ = config.load_str(&format!("maxclients {n}"));
        }
        fdlimit::Adjusted::TooLow => {
            return Err(std::io::Error::other(
                "the open file limit is too low to start",
            ))
        }
    }
    let threads = thread_count(&config);
    // CONFIG GET io-threads shows the count in use (the directive's
    // default, 0, means "pick one"); picked, it stays a default for CONFIG
    // REWRITE.
    if config.get_i64("io-threads") <= 0 {
        config.derived.insert("io-threads");
    }
    let _ = config.load_str(&format!("io-threads {threads}"));
    // The main runtime accepts connections and runs the cron and signal
    // handling; clients are served by `threads` worker runtimes (one thread
    // each, started by `serve`, see net::listener::Workers).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("ferrokv-main")
        .build()?;
    let r = rt.block_on(serve(config, threads));
    // Connections still inside a blocking section (DEBUG SLEEP) must not
    // hold the exit back.
    rt.shutdown_timeout(Duration::from_millis(500));
    r
}

/// Turns transparent huge pages off for this process (`disable-thp yes`,
/// the default, as in Redis). Redis turns them off because its fork-based
/// saves would copy 2 MiB per written page; ferrokv never forks, and with
/// `disable-thp no` mimalloc backs its arenas with 2 MiB pages, which
/// removes most TLB misses of keyspace lookups (GET at -P16 over millions
/// of keys: 18% less CPU per request, +30% ops/s). The default stays off
/// because memory then becomes resident in 2 MiB page faults that zero (and
/// may compact) a whole huge page while clients wait: `SET -d 1024` on
/// fresh keys went from a p99 of 0.6-1.7 ms to 5-6 ms. A big bulk string
/// is reserved at its declared length, as Redis does, but only the bytes
/// received are touched, so a declared length alone does not make memory
/// resident in either mode.
fn disable_thp() {
    // SAFETY: prctl with integer arguments only changes a process flag.
    let r = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    if r != 0 {
        tracing::warn!(
            "failed to disable transparent huge pages: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// The async body of [`run`].
pub async fn serve(config: Config, threads: usize) -> std::io::Result<()> {
    // Signal handlers first, so a SIGTERM right after start-up (before the
    // ready line) still exits cleanly.
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let port = config.get_i64("port") as u16;
    let backlog = config.get_i64("tcp-backlog").max(1) as u32;
    let binds: Vec<String> = config
        .get("bind")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let unixsocket = config.get("unixsocket").to_string();
    let unixperm = config.get_octal("unixsocketperm");
    let dir = config.get("dir").to_string();
    if dir != "." && !dir.is_empty() {
        std::env::set_current_dir(&dir)
            .map_err(|e| std::io::Error::new(e.kind(), format!("Can't chdir to '{dir}': {e}")))?;
    }
    let pidfile = config.get("pidfile").to_string();
    let mut config = config;
    if let Ok(cwd) = std::env::current_dir() {
        // CONFIG GET dir shows the absolute working directory, as Redis.
        let _ = config.set("dir", &cwd.display().to_string());
    }
    let idle_poll_us = config.get_u64("io-idle-poll-us");
    cmd::init();
    let server = Server::new(config, threads);
    let _ = server
        .net
        .workers
        .set(workers::Workers::start(threads, idle_poll_us)?);
    {
        let (aclfile, lines) = {
            let c = server.config.read();
            (c.get("aclfile").to_string(), c.users.clone())
        };
        acl::startup(&server.acl, &aclfile, &lines).map_err(std::io::Error::other)?;
    }
    // Cluster mode: nodes.conf is read (or created) and keys are sharded
    // by hash slot before any key is loaded.
    cmd::cluster::init(&server).map_err(std::io::Error::other)?;
    // MEMORY STATS startup.allocated: what the server holds before data.
    server
        .stats
        .memory_startup
        .store(evict::used_memory(), Ordering::Relaxed);
    // The TCP ports are bound first (a port in use stops the start-up
    // before a long load), but accepted from only after the dataset is
    // loaded, so no client sees a partial keyspace; a bad file stops the
    // start-up with its name.
    let tls_port = server.config.read().get_i64("tls-port") as u16;
    let sockets = match net::listener::bind_startup(
        &binds,
        port,
        tls_port,
        backlog,
        !unixsocket.is_empty(),
    ) {
        Ok(s) => s,
        Err(e) => {
            // Redis's listenToPort / initListeners: the reason, then the
            // line Redis's test suite looks for to retry on another port.
            tracing::warn!("Warning: {e}");
            tracing::warn!("Failed listening on port {port} (TCP), aborting.");
            return Err(e);
        }
    };
    let show_logo = server.config.read().get_bool("always-show-logo");
    log::banner(show_logo, server.cluster.enabled, port);
    tracing::info!("Server initialized");
    // The AOF when appendonly is yes (Redis's loadDataFromDisk), else the RDB.
    if !persist::aof::load_at_startup(&server, &mut cmd::replay::AofReplay::new(&server))
        .map_err(std::io::Error::other)?
    {
        persist::rdb::load_at_startup(&server).map_err(std::io::Error::other)?;
    }
    persist::aof::start_tick(&server);
    if tls_port != 0 {
        let ctx = tls::build(&server.config.read()).map_err(|e| {
            tracing::warn!("{e}");
            std::io::Error::other(format!(
                "Failed to configure TLS. Check logs for more info. ({e})"
            ))
        })?;
        server.tls.install(ctx);
    }
    let bound_port = net::listener::listen(&server, &binds, sockets, backlog)?;
    server
        .bound_port
        .store(bound_port as u64, Ordering::Relaxed);
    if !unixsocket.is_empty() {
        let l = net::listener::bind_unix(&unixsocket, unixperm)?;
        tokio::spawn(net::listener::accept_unix(
            server.clone(),
            l,
            unixsocket.clone(),
        ));
    }
    net::listener::listen_memcached(&server, &binds, backlog)?;
    net::metrics::listen(&server, backlog)?;
    if !pidfile.is_empty() {
        if let Err(e) = std::fs::write(&pidfile, format!("{}\n", std::process::id())) {
            tracing::warn!("Failed to write PID file: {e}");
        }
    }
    if server.cluster.enabled {
        cmd::cluster::bus::start(&server, &binds)?;
    }
    tokio::spawn(cron(server.clone()));
    let replicaof = server.config.read().get("replicaof").to_string();
    if let Some((host, port)) = replicaof.split_once(' ') {
        if let Ok(port) = port.trim().parse::<u16>() {
            cmd::repl::replica::follow(&server, host.trim().to_string(), port);
        }
    }
    // Redis sets the OOM score once the configuration is loaded.
    let _ = oom::apply_config(&server.config.read(), server.repl.is_replica());
    tracing::info!(
        version = %VERSION,
        redis_version = %REDIS_VERSION,
        port = bound_port,
        tls_port,
        pid = std::process::id(),
        threads,
        "Ready to accept connections"
    );
    tokio::select! {
        _ = server.shutdown.notified() => tracing::info!("SHUTDOWN requested, exiting"),
        _ = int.recv() => tracing::info!("Received SIGINT scheduling shutdown..."),
        _ = term.recv() => tracing::info!("Received SIGTERM scheduling shutdown..."),
    }
    server.shutting_down.store(true, Ordering::SeqCst);
    net::listener::close_all(&server);
    if server.cluster.enabled {
        if let Err(e) = server.cluster.save_config() {
            tracing::warn!("Could not save the cluster config file: {e}");
        }
    }
    if server.propagation.on() {
        server.aof.flush_all();
    }
    if !server.rdb.shutdown_handled.load(Ordering::SeqCst) {
        // Signals: save when save points are configured, as Redis's
        // prepareForShutdown (a failed save is logged; the process exits).
        let s = server.clone();
        let _ =
            tokio::task::spawn_blocking(move || cmd::server::shutdown_save(&s, false, false)).await;
    }
    if !unixsocket.is_empty() {
        let _ = std::fs::remove_file(&unixsocket);
    }
    let mc_socket = server.config.read().get("memcached-unixsocket").to_string();
    if !mc_socket.is_empty() {
        let _ = std::fs::remove_file(&mc_socket);
    }
    if !pidfile.is_empty() {
        let _ = std::fs::remove_file(&pidfile);
    }
    tracing::info!("ferrokv is now ready to exit, bye bye...");
    Ok(())
}

/// The active expiry part of a cron tick (Redis's `activeExpireCycle` in
/// `databasesCron`): one cycle over every database at the server's clock,
/// bounded by `budget` of wall time, then the BCAST invalidations of the
/// keys it expired. Tests call it directly to expire keys without waiting
/// for the cron.
pub fn active_expire(server: &Arc<Server>, budget: Duration) {
    if server.repl.backlog.replica_mode() {
        // A replica's keys expire when its master says DEL (Redis's
        // activeExpireCycle runs on masters only), except those its own
        // clients wrote with a TTL on a writable replica.
        cmd::repl::replica::expire_own_keys(server);
        return;
    }
    if server.pause.writes_paused(server.clock.now_ms()) {
        // CLIENT PAUSE: the dataset stays still (server.c databasesCron).
        return;
    }
    // Expiry DELs are propagated in order with write commands: each step
    // holds its gate stripe (tx.rs).
    let started = std::time::Instant::now();
    server
        .keyspace
        .active_expire_cycle(server.clock.now_ms(), budget, &mut |f| {
            tx::background_step(&server.tx_env(), &**server, f)
        });
    // LATENCY's "expire-cycle" event (activeExpireCycle's
    // latencyAddSampleIfNeeded): a cycle that freed a big value at once.
    server.latency_sample("expire-cycle", started.elapsed().as_millis() as u64);
    // Clients blocked on keys that expired: XREADGROUP is told the key is
    // gone (db.c signalDeletedKeyAsReady).
    let expired = server.keyspace.take_expired_waited();
    if !expired.is_empty() {
        let now = server.clock.now_ms();
        let mut expired = Some(expired);
        tx::background_step(&server.tx_env(), &**server, &mut || {
            if let Some(keys) = expired.take() {
                db::blocking::serve_deferred(&**server, keys, now);
            }
        });
    }
    tracking::flush_bcast(&server.tracking_env());
    if server.tracking.client_count() > 0 {
        let _ = tracking::limit_used_slots(&server.tracking_env());
    }
}

/// Background work run `hz` times per second, like Redis's `serverCron`:
/// the instantaneous-metrics sample (INFO instantaneous_ops_per_sec), the
/// active expiry cycle (at most 25% of each period) and, once a second,
/// closing clients idle longer than `timeout`. DEBUG PAUSE-CRON 1 skips
/// all of it (Redis's `server.pause_cron`) until PAUSE-CRON 0.
async fn cron(server: Arc<Server>) {
    let mut tick: u64 = 0;
    loop {
        let hz = server.config.read().get_i64("hz").clamp(1, 500) as u64;
        let period = Duration::from_millis(1000 / hz);
        tokio::time::sleep(period).await;
        if server.debug.pause_cron.load(Ordering::Relaxed) {
            continue;
        }
        tick += 1;
        server.stats.sample(server.clock.now_ms());
        // used_memory_peak / MEMORY STATS peak.allocated, as serverCron.
        server
            .stats
            .memory_peak
            .fetch_max(evict::used_memory(), Ordering::Relaxed);
        persist::rdb::cron(&server);
        // Memory over maxmemory with no command coming: evict anyway.
        server::evict_in_background(&server);
        let s = server.clone();
        let budget = period / 4;
        let _ = tokio::task::spawn_blocking(move || active_expire(&s, budget)).await;
        if tick.is_multiple_of(hz) {
            memory::release_free_memory();
            cmd::repl::master::cron(&server, tick / hz);
            cmd::migrate::close_idle();
            let timeout = server.live.timeout.load(Ordering::Relaxed);
            if timeout > 0 {
                let now = server.clock.now_ms();
                for c in server.clients.all() {
                    // Monitors, blocked clients (BLPOP...) and Pub/Sub
                    // subscribers are exempt, as in Redis's
                    // clientsCronHandleTimeout.
                    if !c.monitor.load(Ordering::Relaxed)
                        && !c.subscribed()
                        && !c.info.lock().flags.contains(['S', 'M'])
                        && c.blocked.lock().is_none()
                        && c.idle_secs(now) > timeout
                    {
                        c.kill();
                    }
                }
            }
        }
    }
}
