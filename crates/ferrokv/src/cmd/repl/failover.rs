//! FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms]: a coordinated
//! switch of roles between this master and one of its replicas (Redis
//! 7.0's replication.c failoverCommand, updateFailoverStatus,
//! abortFailover; redis.io/commands/failover).
//!
//! 1. Writes are paused (CLIENT PAUSE WRITE for the failover's purpose);
//!    the replicas acknowledge their offset every second (no GETACK: its
//!    own bytes would never be acknowledged by its answer); INFO shows
//!    `master_failover_state:waiting-for-sync`.
//! 2. Once the target (TO, or the first replica caught up) acknowledged
//!    the whole stream, this server becomes its replica and asks
//!    `PSYNC <replid> <offset> FAILOVER` (`failover-in-progress`); the
//!    target becomes a master and continues the history, this server
//!    follows it with a partial resynchronisation, and the pause ends.
//! 3. At TIMEOUT without a caught-up target the failover is aborted (or,
//!    with FORCE, goes on regardless); a target refusing the PSYNC, or
//!    FAILOVER ABORT, aborts it: this server is a master again and writes
//!    resume.
//!
//! The other side, a replica receiving `PSYNC ... FAILOVER` with its own
//! replication id, becomes a master first (mod.rs `psync`).

use super::replica;
use crate::cmd::Ctx;
use crate::repl::{failover_state, Failover, STATE_ONLINE};
use crate::resp::Args;
use crate::server::Server;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// INFO `master_failover_state`.
pub fn state_name(server: &Server) -> &'static str {
    match server.repl.failover.lock().as_ref().map(|f| f.state) {
        Some(failover_state::WAIT_FOR_SYNC) => "waiting-for-sync",
        Some(_) => "failover-in-progress",
        None => "no-failover",
    }
}

/// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds].
pub fn failover(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if ctx.server.cluster.enabled {
        return ctx.error("ERR FAILOVER not allowed in cluster mode.");
    }
    if args.len() == 2 && crate::cmd::opt_is(args.get(1), b"abort") {
        if ctx.server.repl.failover.lock().is_none() {
            return ctx.error("ERR No failover in progress.");
        }
        abort(ctx.server, "Failover manually aborted");
        return ctx.out.ok();
    }
    let mut timeout: i64 = 0;
    let mut force = false;
    let mut target: Option<(String, i64)> = None;
    let mut j = 1;
    while j < args.len() {
        let a = args.get(j);
        if crate::cmd::opt_is(a, b"timeout") && j + 1 < args.len() && timeout == 0 {
            let Some(t) = crate::util::parse_i64(args.get(j + 1)) else {
                return ctx.not_int();
            };
            if t <= 0 {
                return ctx.error("ERR FAILOVER timeout must be greater than 0");
            }
            timeout = t;
            j += 2;
        } else if crate::cmd::opt_is(a, b"to") && j + 2 < args.len() && target.is_none() {
            let Some(p) = crate::util::parse_i64(args.get(j + 2)) else {
                return ctx.not_int();
            };
            target = Some((String::from_utf8_lossy(args.get(j + 1)).into_owned(), p));
            j += 3;
        } else if crate::cmd::opt_is(a, b"force") && !force {
            force = true;
            j += 1;
        } else {
            return ctx.syntax();
        }
    }
    let server = ctx.server;
    if server.repl.failover.lock().is_some() {
        return ctx.error("ERR FAILOVER already in progress.");
    }
    if server.repl.is_replica() {
        return ctx.error("ERR FAILOVER is not valid when server is a replica.");
    }
    if server.repl.replicas.lock().is_empty() {
        return ctx.error("ERR FAILOVER requires connected replicas.");
    }
    if force && (timeout == 0 || target.is_none()) {
        return ctx.error(
            "ERR FAILOVER with force option requires both a timeout and target HOST and IP.",
        );
    }
    let target = match target {
        Some((host, port)) => {
            let Some(online) = find_replica(server, &host, port) else {
                return ctx.error("ERR FAILOVER target HOST and PORT is not a replica.");
            };
            if !online {
                return ctx.error("ERR FAILOVER target replica is not online.");
            }
            tracing::info!("FAILOVER requested to {host}:{port}.");
            Some((host, port as u16))
        }
        None => {
            tracing::info!("FAILOVER requested to any replica.");
            None
        }
    };
    let now = server.clock.now_ms();
    *server.repl.failover.lock() = Some(Failover {
        state: failover_state::WAIT_FOR_SYNC,
        target,
        end_ms: if timeout > 0 { now + timeout as u64 } else { 0 },
        force,
    });
    server.pause.pause(
        crate::pause::BY_FAILOVER,
        crate::pause::WRITE,
        u64::MAX,
        now,
    );
    let s: Arc<Server> = server.clone();
    let _ = std::thread::Builder::new()
        .name("ferrokv-failover".into())
        .spawn(move || drive(&s));
    ctx.out.ok();
}

/// The replica listening on `host:port`: Some(online?) or None.
fn find_replica(server: &Server, host: &str, port: i64) -> Option<bool> {
    server
        .repl
        .replicas
        .lock()
        .iter()
        .find(|r| *r.ip.lock() == host && r.port.load(Ordering::Relaxed) as i64 == port)
        .map(|r| r.state.load(Ordering::Relaxed) == STATE_ONLINE)
}

/// Watches a failover waiting for its target to catch up
/// (updateFailoverStatus), every few milliseconds.
fn drive(server: &Arc<Server>) {
    loop {
        std::thread::sleep(Duration::from_millis(5));
        let Some(f) = server.repl.failover.lock().clone() else {
            return;
        };
        if f.state != failover_state::WAIT_FOR_SYNC {
            return;
        }
        let now = server.clock.now_ms();
        if f.end_ms != 0 && f.end_ms <= now {
            if f.force {
                let (host, port) = f.target.clone().expect("FORCE requires TO");
                tracing::info!("FAILOVER to {host}:{port} time out exceeded, failing over.");
                start_switch(server, host, port);
            } else {
                abort(server, "Replica never caught up before timeout");
            }
            return;
        }
        let end = server.repl.backlog.end();
        let caught_up = {
            let replicas = server.repl.replicas.lock();
            match &f.target {
                Some((host, port)) => replicas
                    .iter()
                    .find(|r| {
                        *r.ip.lock() == *host && r.port.load(Ordering::Relaxed) == *port as u64
                    })
                    .filter(|r| r.ack_offset.load(Ordering::Relaxed) >= end)
                    .map(|_| (host.clone(), *port)),
                None => replicas
                    .iter()
                    .find(|r| r.ack_offset.load(Ordering::Relaxed) >= end)
                    .map(|r| (r.ip.lock().clone(), r.port.load(Ordering::Relaxed) as u16)),
            }
        };
        if let Some((host, port)) = caught_up {
            tracing::info!("Failover target {host}:{port} is synced, failing over.");
            start_switch(server, host, port);
            return;
        }
    }
}

/// Step 2: follow the target, asking it to become a master.
fn start_switch(server: &Arc<Server>, host: String, port: u16) {
    if let Some(f) = server.repl.failover.lock().as_mut() {
        f.state = failover_state::IN_PROGRESS;
        f.target = Some((host.clone(), port));
    }
    replica::follow_with(server, host, port, true);
}

/// The target accepted `PSYNC ... FAILOVER`: the failover is over and
/// writes resume (clearFailoverState).
pub fn finished(server: &Server) {
    if let Some(m) = server.repl.master.lock().as_mut() {
        m.failover = false;
    }
    *server.repl.failover.lock() = None;
    server.pause.unpause(crate::pause::BY_FAILOVER);
    tracing::info!("Failover completed.");
}

/// Aborts the failover (abortFailover): back to master if this server had
/// begun to follow its target, then writes resume.
pub fn abort(server: &Arc<Server>, why: &str) {
    let Some(f) = server.repl.failover.lock().take() else {
        return;
    };
    match &f.target {
        Some((h, p)) => tracing::info!("FAILOVER to {h}:{p} aborted: {why}"),
        None => tracing::info!("FAILOVER to any replica aborted: {why}"),
    }
    if f.state == failover_state::IN_PROGRESS {
        replica::promote(server);
    }
    server.pause.unpause(crate::pause::BY_FAILOVER);
}
