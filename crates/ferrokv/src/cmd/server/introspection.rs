//! Introspection commands: TIME, MONITOR (fed by `cmd::feed_monitors`),
//! SLOWLOG GET / LEN / RESET / HELP (Redis 7.0 slowlog.c) and LATENCY
//! LATEST / HISTORY / RESET / DOCTOR / HELP (latency.c; no graphs).

use super::{help_cmd, lossy, reply_help, ADMIN_CFG, ALL_NODES_OK, LS};
use crate::cmd::{acl, cmd, container, flags::*, Command, Ctx};
use crate::resp::Args;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

/// SLOWLOG subcommands.
static SLOWLOG_SUBS: &[Command] = &[
    cmd("slowlog|get", -2, ADMIN | LS, (0, 0, 0), 0, slowlog_get)
        .doc(
            "server",
            "2.2.12",
            "Get the slow log's entries",
            "O(N) where N is the number of entries returned",
        )
        .tips(&["request_policy:all_nodes", "nondeterministic_output"]),
    cmd("slowlog|len", 2, ADMIN | LS, (0, 0, 0), 0, slowlog_len)
        .doc("server", "2.2.12", "Get the slow log's length", "O(1)")
        .tips(&[
            "request_policy:all_nodes",
            "response_policy:agg_sum",
            "nondeterministic_output",
        ]),
    cmd("slowlog|reset", 2, ADMIN | LS, (0, 0, 0), 0, slowlog_reset)
        .doc(
            "server",
            "2.2.12",
            "Clear all entries from the slow log",
            "O(N) where N is the number of entries in the slowlog",
        )
        .tips(ALL_NODES_OK),
    help_cmd("slowlog|help", acl::SLOW, slowlog_help),
];

/// LATENCY subcommands.
static LATENCY_SUBS: &[Command] = &[
    cmd("latency|doctor", 2, ADMIN_CFG, (0, 0, 0), 0, latency_doctor)
        .doc(
            "server",
            "2.8.13",
            "Return a human readable latency analysis report.",
            "O(1)",
        )
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_nodes",
            "response_policy:special",
        ]),
    cmd(
        "latency|history",
        3,
        ADMIN_CFG,
        (0, 0, 0),
        0,
        latency_history,
    )
    .doc(
        "server",
        "2.8.13",
        "Return timestamp-latency samples for the event.",
        "O(1)",
    )
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_nodes",
        "response_policy:special",
    ]),
    cmd("latency|latest", 2, ADMIN_CFG, (0, 0, 0), 0, latency_latest)
        .doc(
            "server",
            "2.8.13",
            "Return the latest latency samples for all events.",
            "O(1)",
        )
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_nodes",
            "response_policy:special",
        ]),
    cmd("latency|reset", -2, ADMIN_CFG, (0, 0, 0), 0, latency_reset)
        .doc(
            "server",
            "2.8.13",
            "Reset latency data for one or more events.",
            "O(1)",
        )
        .tips(ALL_NODES_OK),
    help_cmd("latency|help", acl::SLOW, latency_help),
];

/// The introspection family's table entries.
pub static COMMANDS: &[Command] = &[
    cmd("time", 1, LS | FAST, (0, 0, 0), 0, time)
        .doc("server", "2.6.0", "Return the current server time", "O(1)")
        .tips(&["nondeterministic_output"]),
    cmd("monitor", 1, ADMIN_CFG, (0, 0, 0), 0, monitor).doc(
        "server",
        "1.0.0",
        "Listen for all requests received by the server in real time",
        "",
    ),
    container("slowlog", acl::SLOW, SLOWLOG_SUBS).doc(
        "server",
        "2.2.12",
        "A container for slow log commands",
        "Depends on subcommand.",
    ),
    container("latency", acl::SLOW, LATENCY_SUBS).doc(
        "server",
        "2.8.13",
        "A container for latency diagnostics commands",
        "Depends on subcommand.",
    ),
];

/// TIME: [unix seconds, microseconds] as bulk strings.
fn time(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    let us = ctx.server.clock.now_us();
    ctx.out.array(2);
    ctx.out.bulk_int((us / 1_000_000) as i64);
    ctx.out.bulk_int((us % 1_000_000) as i64);
}

// ---------------------------------------------------------------- MONITOR

/// MONITOR: turns this connection into a monitor: it receives every
/// command other clients run (fed by `cmd::feed_monitors`) until it closes.
fn monitor(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if ctx.client.deny_blocking {
        // Inside MULTI/EXEC (Redis's CLIENT_DENY_BLOCKING).
        return ctx.error("ERR MONITOR isn't allowed for DENY BLOCKING client");
    }
    if ctx.client.monitor_rx.is_some() {
        ctx.out.ok();
        return;
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let srv = ctx.server;
    srv.monitors.lock().push((ctx.client.handle.id, tx));
    srv.monitor_count.fetch_add(1, Ordering::Relaxed);
    ctx.client.handle.monitor.store(true, Ordering::Relaxed);
    {
        let mut i = ctx.client.handle.info.lock();
        if !i.flags.contains('O') {
            i.flags.push('O');
        }
    }
    ctx.client.monitor_rx = Some(rx);
    ctx.out.ok();
}

// ---------------------------------------------------------------- SLOWLOG

/// SLOWLOG GET [count]: newest entries first (default 10, -1 = all); each
/// [id, unix time, microseconds, [args], "ip:port", client name].
fn slowlog_get(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let count = if args.len() == 3 {
        match crate::util::parse_i64(args.get(2)) {
            Some(n) if n >= -1 => n,
            _ => {
                ctx.error("ERR count should be greater than or equal to -1");
                return;
            }
        }
    } else if args.len() == 2 {
        10
    } else {
        ctx.error_with(
            "ERR unknown subcommand or wrong number of arguments for '",
            args.get(1),
            "'. Try SLOWLOG HELP.",
        );
        return;
    };
    let entries: Vec<_> = {
        let sl = ctx.server.slowlog.lock();
        let n = if count < 0 {
            sl.entries.len()
        } else {
            (count as usize).min(sl.entries.len())
        };
        sl.entries.iter().take(n).cloned().collect()
    };
    let o = &mut *ctx.out;
    o.array(entries.len());
    for e in entries {
        o.array(6);
        o.int(e.id as i64);
        o.int(e.time as i64);
        o.int(e.duration_us as i64);
        o.array(e.args.len());
        for a in &e.args {
            o.bulk(a);
        }
        o.bulk(e.addr.as_bytes());
        o.bulk(&e.name);
    }
}

/// SLOWLOG LEN: number of entries.
fn slowlog_len(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    let n = ctx.server.slowlog.lock().entries.len();
    ctx.out.int(n as i64);
}

/// SLOWLOG RESET: drops every entry (ids keep increasing).
fn slowlog_reset(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    ctx.server.slowlog.lock().entries.clear();
    ctx.out.ok();
}

fn slowlog_help(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    reply_help(
        ctx,
        "SLOWLOG",
        &[
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ],
    );
}

// ---------------------------------------------------------------- LATENCY

/// LATENCY LATEST: [event, time of latest sample, latest ms, max ms] per
/// event.
fn latency_latest(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    let l = ctx.server.latency.lock();
    let o = &mut *ctx.out;
    o.array(l.len());
    for (name, s) in l.iter() {
        let (t, ms) = s.samples.back().copied().unwrap_or((0, 0));
        o.array(4);
        o.bulk(name.as_bytes());
        o.int(t as i64);
        o.int(ms as i64);
        o.int(s.max as i64);
    }
}

/// LATENCY HISTORY event: [unix time, ms] samples, oldest first (at most
/// 160).
fn latency_history(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let name = lossy(args.get(2));
    let l = ctx.server.latency.lock();
    let o = &mut *ctx.out;
    match l.get(&name) {
        None => o.array(0),
        Some(s) => {
            o.array(s.samples.len());
            for (t, ms) in &s.samples {
                o.array(2);
                o.int(*t as i64);
                o.int(*ms as i64);
            }
        }
    }
}

/// LATENCY RESET [event ...]: drops the named events (all without names);
/// replies the number of events dropped.
fn latency_reset(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let mut l = ctx.server.latency.lock();
    let n = if args.len() == 2 {
        let n = l.len();
        l.clear();
        n
    } else {
        (2..args.len())
            .filter(|&i| l.remove(&lossy(args.get(i))).is_some())
            .count()
    };
    drop(l);
    ctx.out.int(n as i64);
}

/// LATENCY DOCTOR: a short human-readable report per event (ferrokv's own
/// wording; Redis's report also gives advice).
fn latency_doctor(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    let th = ctx.server.live.latency_threshold.load(Ordering::Relaxed);
    let mut s = String::new();
    if th == 0 {
        s.push_str("Latency monitoring is disabled in this ferrokv instance. Enable it with \"CONFIG SET latency-monitor-threshold <milliseconds>\".\n");
    } else {
        let l = ctx.server.latency.lock();
        if l.is_empty() {
            let _ = writeln!(
                s,
                "No latency spike above {th} milliseconds was observed during the lifetime of this instance."
            );
        } else {
            let _ = writeln!(s, "Latency spikes above {th} milliseconds were observed:\n");
            for (i, (name, e)) in l.iter().enumerate() {
                let n = e.samples.len().max(1) as u64;
                let avg = e.samples.iter().map(|x| x.1).sum::<u64>() / n;
                let _ = writeln!(
                    s,
                    "{}. {}: {} latency spikes (average {}ms), worst all time event {}ms.",
                    i + 1,
                    name,
                    e.samples.len(),
                    avg,
                    e.max
                );
            }
        }
    }
    ctx.out.verbatim(s.as_bytes());
}

fn latency_help(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    reply_help(
        ctx,
        "LATENCY",
        &[
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
        ],
    );
}
