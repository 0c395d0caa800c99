//! Replication commands (Redis 7.0 replication.c): PSYNC and SYNC (a
//! replica asking to be fed), REPLCONF, REPLICAOF / SLAVEOF, ROLE, WAIT,
//! and the INFO replication section. The state is in `repl/`; feeding a
//! replica's connection is [`master`], following a master is [`replica`].

pub mod failover;
pub mod master;
pub mod replica;

use super::flags::*;
use super::{acl, cmd, Command, Ctx};
use crate::repl::{link, STATE_ONLINE};
use crate::resp::Args;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The replication commands.
pub static COMMANDS: &[Command] = &[
    cmd(
        "psync",
        -3,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI,
        (0, 0, 0),
        0,
        psync,
    )
    .doc(
        "server",
        "2.8.0",
        "Internal command used for replication",
        "",
    ),
    cmd(
        "sync",
        1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI,
        (0, 0, 0),
        0,
        sync,
    )
    .doc(
        "server",
        "1.0.0",
        "Internal command used for replication",
        "",
    ),
    cmd(
        "replconf",
        -1,
        ADMIN | NOSCRIPT | LOADING | STALE | ALLOW_BUSY,
        (0, 0, 0),
        0,
        replconf,
    )
    .doc(
        "server",
        "3.0.0",
        "An internal command for configuring the replication stream",
        "O(1)",
    ),
    cmd(
        "replicaof",
        3,
        ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING,
        (0, 0, 0),
        0,
        replicaof,
    )
    .doc(
        "server",
        "5.0.0",
        "Make the server a replica of another instance, or promote it as master.",
        "O(1)",
    ),
    cmd(
        "slaveof",
        3,
        ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING,
        (0, 0, 0),
        0,
        replicaof,
    )
    .doc(
        "server",
        "1.0.0",
        "Make the server a replica of another instance, or promote it as master. Deprecated starting with Redis 5. Use REPLICAOF instead.",
        "O(1)",
    ),
    cmd(
        "role",
        1,
        NOSCRIPT | LOADING | STALE | FAST,
        (0, 0, 0),
        acl::ADMIN | acl::DANGEROUS,
        role,
    )
    .doc(
        "server",
        "2.8.12",
        "Return the role of the instance in the context of replication",
        "O(1)",
    ),
    cmd("failover", -1, ADMIN | NOSCRIPT | STALE, (0, 0, 0), 0, failover::failover)
        .doc(
            "server",
            "6.2.0",
            "Start a coordinated failover between this server and one of its replicas.",
            "O(1)",
        ),
    cmd("wait", 3, NOSCRIPT, (0, 0, 0), acl::CONNECTION, wait)
        .doc(
            "generic",
            "3.0.0",
            "Wait for the synchronous replication of all the write commands sent in the context of the current connection",
            "O(1)",
        )
        .tips(&["request_policy:all_shards", "response_policy:agg_min"]),
];

/// What a replica asked for with PSYNC (or SYNC): the connection hands its
/// socket to [`master::serve_replica`] after the command.
#[derive(Debug, Clone)]
pub struct SyncRequest {
    /// The replication id it has ("?" for none); None for SYNC.
    pub replid: Option<String>,
    /// The first offset it needs.
    pub offset: i64,
}

/// A WAIT in progress: the connection waits for acknowledgements after
/// the command (see `net::connection`).
#[derive(Debug, Clone, Copy)]
pub struct WaitRequest {
    /// Replicas wanted.
    pub replicas: usize,
    /// Offset they must have acknowledged.
    pub offset: u64,
    /// When to give up (None: never).
    pub deadline: Option<std::time::Instant>,
}

/// `-NOMASTERLINK` of a replica asked to feed a replica while its own link
/// is down (replication.c syncCommand).
const NOMASTERLINK: &str = "NOMASTERLINK Can't SYNC while not connected with my master";

fn sync_allowed(ctx: &mut Ctx<'_>) -> bool {
    if ctx.client.handle.info.lock().flags.contains('S') {
        // Already a replica: ignored, as Redis does.
        return false;
    }
    let r = &ctx.server.repl;
    if r.is_replica() && r.link_state.load(Ordering::Acquire) != link::CONNECTED {
        ctx.error(NOMASTERLINK);
        return false;
    }
    if let Some(c) = ctx.client.repl_conf.as_deref() {
        // A filtered RDB is only sent over the socket (`$EOF:` framing).
        if c.filtered() && !c.capa_eof {
            ctx.error("ERR Filtered replica requires EOF capability");
            return false;
        }
    }
    true
}

/// PSYNC replicationid offset [FAILOVER]: with FAILOVER (sent by a master
/// failing over to this replica, failover.rs) and this server's own
/// replication id, the replica becomes a master first (replication.c
/// syncCommand); while this server fails over, no one may sync.
fn psync(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if ctx.client.handle.info.lock().flags.contains('S') {
        return;
    }
    if args.len() > 3 && crate::cmd::opt_is(args.get(3), b"failover") {
        if !ctx.server.repl.is_replica() {
            return ctx.error("ERR PSYNC FAILOVER can't be sent to a master.");
        }
        let mine = ctx.server.repl.ids.lock().replid.clone();
        if args.get(1) == mine.as_bytes() {
            replica::promote(ctx.server);
            tracing::info!(
                "MASTER MODE enabled (failover request from '{}')",
                ctx.client.handle.describe(ctx.now)
            );
        } else {
            return ctx.error("ERR PSYNC FAILOVER replid must match my replid.");
        }
    }
    if ctx.server.repl.failover.lock().is_some() {
        return ctx.error("NOMASTERLINK Can't SYNC while failing over");
    }
    if !sync_allowed(ctx) {
        return;
    }
    let Some(offset) = crate::util::parse_i64(args.get(2)) else {
        return ctx.not_int();
    };
    ctx.client.repl_sync = Some(SyncRequest {
        replid: Some(String::from_utf8_lossy(args.get(1)).into_owned()),
        offset,
    });
}

/// SYNC: the old protocol, always a full resynchronisation.
fn sync(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if !sync_allowed(ctx) {
        return;
    }
    ctx.client.repl_sync = Some(SyncRequest {
        replid: None,
        offset: -1,
    });
}

/// REPLCONF option value ...: listening-port, ip-address, capa, ack,
/// getack, rdb-only, rdb-filter-only (Redis's replconfCommand). Options for a connection
/// that is not (yet) a replica are remembered for its PSYNC.
fn replconf(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if args.len().is_multiple_of(2) {
        return ctx.syntax();
    }
    let mut i = 1;
    while i < args.len() {
        let opt = args.get(i);
        let val = args.get(i + 1);
        let pending = ctx
            .client
            .repl_conf
            .get_or_insert_with(|| Box::new(master::ReplConf::default()));
        if opt.eq_ignore_ascii_case(b"listening-port") {
            // Any integer, as Redis's getLongFromObjectOrReply (the port
            // is shown as the replica sent it, cut to 16 bits here).
            match crate::util::parse_i64(val) {
                Some(p) => pending.port = p as u16,
                None => return ctx.not_int(),
            }
        } else if opt.eq_ignore_ascii_case(b"ip-address") {
            if val.len() >= 46 {
                return ctx.error(&format!(
                    "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes",
                    val.len()
                ));
            }
            pending.ip = Some(String::from_utf8_lossy(val).into_owned());
        } else if opt.eq_ignore_ascii_case(b"capa") {
            if val.eq_ignore_ascii_case(b"eof") {
                pending.capa_eof = true;
            } else if val.eq_ignore_ascii_case(b"psync2") {
                pending.capa_psync2 = true;
            }
        } else if opt.eq_ignore_ascii_case(b"ack") || opt.eq_ignore_ascii_case(b"fack") {
            // Sent by replicas on their own connection (handled by the
            // feeder); a normal client's ACK is ignored, without reply.
            return;
        } else if opt.eq_ignore_ascii_case(b"getack") {
            // Only a master may ask (the replica's link answers it).
            return;
        } else if opt.eq_ignore_ascii_case(b"rdb-only") {
            match crate::util::parse_i64(val) {
                Some(0) => pending.rdb_only = false,
                Some(1) => pending.rdb_only = true,
                Some(_) => {
                    return ctx.error("ERR value is out of range, value must between 0 and 1")
                }
                None => return ctx.not_int(),
            }
        } else if opt.eq_ignore_ascii_case(b"rdb-filter-only") {
            // What the RDB keeps (redis-cli --functions-rdb): the value
            // splits as sdssplitargs splits; everything is left out but
            // the parts it names, "functions" the only one known. As
            // Redis, a bad value leaves what was set before it.
            let (mut buf, mut ranges) = (Vec::new(), Vec::new());
            if crate::resp::parse::split_args(val, &mut buf, &mut ranges).is_err() {
                return ctx.error("ERR Missing rdb-filter-only values");
            }
            pending.exclude_data = true;
            pending.exclude_functions = true;
            for &(a, b) in &ranges {
                let part = &buf[a as usize..b as usize];
                if part.eq_ignore_ascii_case(b"functions") {
                    pending.exclude_functions = false;
                } else {
                    let msg = format!(
                        "ERR Unsupported rdb-filter-only option: {}",
                        String::from_utf8_lossy(part)
                    );
                    return ctx.error(&msg);
                }
            }
        } else {
            let mut msg = b"ERR Unrecognized REPLCONF option: ".to_vec();
            msg.extend_from_slice(opt);
            ctx.failed = true;
            ctx.out.error_bytes(&msg);
            ctx.server.stats.record_error("ERR");
            return;
        }
        i += 2;
    }
    ctx.out.ok();
}

/// REPLICAOF host port | NO ONE (and SLAVEOF).
fn replicaof(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let host = args.get(1);
    let port = args.get(2);
    if host.eq_ignore_ascii_case(b"no") && port.eq_ignore_ascii_case(b"one") {
        if ctx.server.repl.is_replica() {
            replica::promote(ctx.server);
            tracing::info!(
                "MASTER MODE enabled (user request from '{}')",
                ctx.client.handle.describe(ctx.now)
            );
        }
        // A master's OOM score class (Redis's replicationUnsetMaster).
        let _ = crate::oom::apply_config(&ctx.server.config.read(), false);
        return ctx.out.ok();
    }
    if ctx.client.handle.info.lock().flags.contains('S') {
        return ctx.error("ERR Command is not valid when client is a replica.");
    }
    let Some(p) = crate::util::parse_i64(port) else {
        return ctx.error("ERR Invalid master port");
    };
    if !(0..=65535).contains(&p) {
        return ctx.error("ERR Invalid master port");
    }
    let host = String::from_utf8_lossy(host).into_owned();
    {
        let m = ctx.server.repl.master.lock();
        if let Some(m) = m.as_ref() {
            if m.host.eq_ignore_ascii_case(&host) && m.port == p as u16 {
                tracing::info!("REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.");
                return ctx.out.simple("OK Already connected to specified master");
            }
        }
    }
    replica::follow(ctx.server, host.clone(), p as u16);
    let _ = crate::oom::apply_config(&ctx.server.config.read(), true);
    tracing::info!(
        "REPLICAOF {host}:{p} enabled (user request from '{}')",
        ctx.client.handle.describe(ctx.now)
    );
    ctx.out.ok();
}

/// ROLE (redis.io/commands/role).
fn role(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    let r = &ctx.server.repl;
    let master = r.master.lock().as_ref().map(|m| (m.host.clone(), m.port));
    match master {
        None => {
            ctx.out.array(3);
            ctx.out.bulk(b"master");
            ctx.out.int(r.backlog.end() as i64);
            let replicas: Vec<_> = r.replicas.lock().clone();
            let online: Vec<_> = replicas
                .iter()
                .filter(|x| x.state.load(Ordering::Relaxed) == STATE_ONLINE)
                .collect();
            ctx.out.array(online.len());
            for x in online {
                ctx.out.array(3);
                ctx.out.bulk(x.ip.lock().as_bytes());
                ctx.out
                    .bulk(x.port.load(Ordering::Relaxed).to_string().as_bytes());
                ctx.out
                    .bulk(x.ack_offset.load(Ordering::Relaxed).to_string().as_bytes());
            }
        }
        Some((host, port)) => {
            ctx.out.array(5);
            ctx.out.bulk(b"slave");
            ctx.out.bulk(host.as_bytes());
            ctx.out.int(port as i64);
            let st = r.link_state.load(Ordering::Acquire);
            ctx.out.bulk(match st {
                link::CONNECT => b"connect".as_slice(),
                link::CONNECTING => b"connecting",
                link::TRANSFER => b"sync",
                _ => b"connected",
            });
            let off = if st == link::CONNECTED {
                r.processed.load(Ordering::Acquire) as i64
            } else {
                -1
            };
            ctx.out.int(off);
        }
    }
}

/// WAIT numreplicas timeout.
fn wait(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if ctx.server.repl.is_replica() {
        return ctx.error("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.");
    }
    let Some(n) = crate::util::parse_i64(args.get(1)) else {
        return ctx.not_int();
    };
    let Some(timeout) = crate::util::parse_i64(args.get(2)) else {
        return ctx.error("ERR timeout is not an integer or out of range");
    };
    if timeout < 0 {
        return ctx.error("ERR timeout is negative");
    }
    let offset = ctx.server.repl.backlog.end();
    let acked = ctx.server.repl.acked_at_least(offset);
    if ctx.client.deny_blocking || acked as i64 >= n {
        return ctx.out.int(acked as i64);
    }
    // Ask the replicas for an acknowledgement now (Redis sends GETACK
    // from beforeSleep for every blocked WAIT).
    master::request_acks(ctx.server);
    ctx.client.repl_wait = Some(WaitRequest {
        replicas: n.max(0) as usize,
        offset,
        deadline: (timeout > 0)
            .then(|| std::time::Instant::now() + std::time::Duration::from_millis(timeout as u64)),
    });
}

/// The INFO replication section's fields (Redis 7.0's
/// genRedisInfoString "replication").
pub fn info_fields(server: &Arc<crate::server::Server>, now_ms: u64) -> Vec<(String, String)> {
    let r = &server.repl;
    let mut v: Vec<(String, String)> = Vec::new();
    let mut kv = |k: &str, val: String| v.push((k.to_string(), val));
    let master = r.master.lock().as_ref().map(|m| (m.host.clone(), m.port));
    match &master {
        None => kv("role", "master".into()),
        Some((host, port)) => {
            kv("role", "slave".into());
            kv("master_host", host.clone());
            kv("master_port", port.to_string());
            let st = r.link_state.load(Ordering::Acquire);
            kv(
                "master_link_status",
                if st == link::CONNECTED { "up" } else { "down" }.into(),
            );
            let last = r.link_last_io_ms.load(Ordering::Relaxed);
            kv(
                "master_last_io_seconds_ago",
                if st == link::CONNECTED {
                    (now_ms.saturating_sub(last) / 1000).to_string()
                } else {
                    "-1".into()
                },
            );
            kv(
                "master_sync_in_progress",
                u8::from(st == link::TRANSFER).to_string(),
            );
            kv(
                "slave_read_repl_offset",
                (r.processed.load(Ordering::Acquire) + r.read_ahead.load(Ordering::Acquire))
                    .to_string(),
            );
            kv(
                "slave_repl_offset",
                r.processed.load(Ordering::Acquire).to_string(),
            );
            if st == link::TRANSFER {
                kv(
                    "master_sync_total_bytes",
                    r.transfer_size.load(Ordering::Relaxed).to_string(),
                );
                kv(
                    "master_sync_read_bytes",
                    r.transfer_read.load(Ordering::Relaxed).to_string(),
                );
                let left = r.transfer_size.load(Ordering::Relaxed)
                    - r.transfer_read.load(Ordering::Relaxed) as i64;
                kv("master_sync_left_bytes", left.to_string());
                kv("master_sync_perc", "0.00".into());
                kv("master_sync_last_io_seconds_ago", "0".into());
            }
            if st != link::CONNECTED {
                let since = r.link_down_since_ms.load(Ordering::Relaxed);
                kv(
                    "master_link_down_since_seconds",
                    if since == 0 {
                        "-1".into()
                    } else {
                        (now_ms.saturating_sub(since) / 1000).to_string()
                    },
                );
            }
            let c = server.config.read();
            kv("slave_priority", c.get("replica-priority").to_string());
            kv(
                "slave_read_only",
                u8::from(c.get_bool("replica-read-only")).to_string(),
            );
            kv(
                "replica_announced",
                u8::from(c.get_bool("replica-announced")).to_string(),
            );
        }
    }
    let replicas: Vec<_> = r.replicas.lock().clone();
    kv("connected_slaves", replicas.len().to_string());
    let min = server.config.read().get_i64("min-replicas-to-write");
    if min > 0 {
        let lag = server.config.read().get_i64("min-replicas-max-lag").max(0) as u64;
        kv(
            "min_slaves_good_slaves",
            r.good_replicas(now_ms, lag).to_string(),
        );
    }
    for (i, x) in replicas.iter().enumerate() {
        let lag = now_ms.saturating_sub(x.ack_ms.load(Ordering::Relaxed)) / 1000;
        kv(
            &format!("slave{i}"),
            format!(
                "ip={},port={},state={},offset={},lag={}",
                x.ip.lock(),
                x.port.load(Ordering::Relaxed),
                x.state_name(),
                x.ack_offset.load(Ordering::Relaxed),
                lag
            ),
        );
    }
    kv("master_failover_state", failover::state_name(server).into());
    let ids = r.ids.lock().clone();
    kv("master_replid", ids.replid);
    kv("master_replid2", ids.replid2);
    let end = if master.is_some() && !r.backlog.active() {
        r.processed.load(Ordering::Acquire)
    } else {
        r.backlog.end()
    };
    kv("master_repl_offset", end.to_string());
    kv("second_repl_offset", ids.second_offset.to_string());
    let active = r.backlog.active();
    kv("repl_backlog_active", u8::from(active).to_string());
    kv(
        "repl_backlog_size",
        server
            .config
            .read()
            .get_u64("repl-backlog-size")
            .to_string(),
    );
    let (first, hist) = if active { r.backlog.span() } else { (0, 0) };
    kv("repl_backlog_first_byte_offset", first.to_string());
    kv("repl_backlog_histlen", hist.to_string());
    v
}

/// True when a write must be refused because fewer than
/// `min-replicas-to-write` replicas acknowledged within
/// `min-replicas-max-lag` seconds (Redis's `checkGoodReplicasStatus`).
pub fn not_enough_replicas(server: &crate::server::Server, now_ms: u64) -> bool {
    let min = server.repl.min_to_write.load(Ordering::Relaxed);
    if min == 0 || server.repl.backlog.replica_mode() {
        return false;
    }
    let lag = server.repl.min_max_lag.load(Ordering::Relaxed);
    (server.repl.good_replicas(now_ms, lag) as u64) < min
}
