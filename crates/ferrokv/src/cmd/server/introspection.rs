//! Introspection commands: TIME, MONITOR (fed by `cmd::feed_monitors`),
//! SLOWLOG GET / LEN / RESET / HELP (Redis 7.0 slowlog.c) and LATENCY
//! LATEST / HISTORY / RESET / DOCTOR / GRAPH / HISTOGRAM / HELP (latency.c,
//! sparkline.c).

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
    cmd("latency|graph", 3, ADMIN_CFG, (0, 0, 0), 0, latency_graph)
        .doc(
            "server",
            "2.8.13",
            "Return a latency graph for the event.",
            "O(1)",
        )
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_nodes",
            "response_policy:special",
        ]),
    cmd(
        "latency|histogram",
        -2,
        ADMIN_CFG,
        (0, 0, 0),
        0,
        latency_histogram,
    )
    .doc(
        "server",
        "7.0.0",
        "Return the cumulative distribution of latencies of a subset of commands or all.",
        "O(N) where N is the number of commands with latency information being retrieved.",
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

/// Columns of LATENCY GRAPH (Redis's LATENCY_GRAPH_COLS).
const GRAPH_COLS: usize = 80;

/// LATENCY GRAPH event: a verbatim string (RESP2: bulk), Redis 7.0's
/// `latencyCommandGenSparkeline`: `<event> - high <max> ms, low <min> ms
/// (all time high <max ever> ms)`, a line of 80 dashes, then the samples
/// (oldest first) as a 4-row filled sparkline, 80 columns per block, each
/// sample labelled vertically with how long ago it was taken (`12s`, `3m`,
/// `5h`, `2d`). `ERR No samples available for event '<event>'` when the
/// event (case-sensitive) has no series.
fn latency_graph(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let name = args.get(2);
    let now = ctx.server.clock.now_ms() / 1000;
    let graph = {
        let l = ctx.server.latency.lock();
        l.get(&*String::from_utf8_lossy(name)).map(|s| {
            let samples: Vec<(f64, String)> = s
                .samples
                .iter()
                .map(|&(t, ms)| {
                    let elapsed = now.saturating_sub(t);
                    let label = if elapsed < 60 {
                        format!("{elapsed}s")
                    } else if elapsed < 3600 {
                        format!("{}m", elapsed / 60)
                    } else if elapsed < 3600 * 24 {
                        format!("{}h", elapsed / 3600)
                    } else {
                        format!("{}d", elapsed / (3600 * 24))
                    };
                    (ms as f64, label)
                })
                .collect();
            let max = s.samples.iter().map(|x| x.1).max().unwrap_or(0);
            let min = s.samples.iter().map(|x| x.1).min().unwrap_or(0);
            let mut g = format!(
                "{} - high {} ms, low {} ms (all time high {} ms)\n",
                lossy(name),
                max,
                min,
                s.max
            );
            g.push_str(&"-".repeat(GRAPH_COLS));
            g.push('\n');
            g.push_str(&sparkline(&samples, GRAPH_COLS, 4));
            g
        })
    };
    match graph {
        Some(g) => ctx.out.verbatim(g.as_bytes()),
        None => ctx.error_with("ERR No samples available for event '", name, "'"),
    }
}

/// Renders `samples` (value, label) as Redis's sparkline.c does with
/// SPARKLINE_FILL: blocks of at most `columns` samples separated by an
/// empty line; in each, `rows` rows of `_ o #` (and `|` below a full cell)
/// scaled between the smallest and largest value of all samples, then,
/// when any sample has a label, a blank line and the labels written
/// downwards, one character per row.
pub fn sparkline(samples: &[(f64, String)], columns: usize, rows: usize) -> String {
    const FILL: &[u8] = b"_o#";
    let charset_len = FILL.len() as i64;
    let (mut min, mut max) = (0.0f64, 0.0f64);
    for (i, (v, _)) in samples.iter().enumerate() {
        if i == 0 {
            min = *v;
            max = *v;
        } else if *v < min {
            min = *v;
        } else if *v > max {
            max = *v;
        }
    }
    let labels = samples.iter().any(|(_, l)| !l.is_empty());
    let mut relmax = max - min;
    if relmax == 0.0 {
        relmax = 1.0;
    }
    let steps = charset_len * rows as i64;
    let rows = rows as i64;
    let mut out = String::new();
    let mut offset = 0;
    while offset < samples.len() {
        let block = &samples[offset..samples.len().min(offset + columns)];
        if offset != 0 {
            out.push('\n');
        }
        let mut row = 0i64;
        loop {
            let mut more = false;
            let mut chars = vec![b' '; block.len()];
            for (j, (v, label)) in block.iter().enumerate() {
                let relval = v - min;
                // C: (int)(relval*steps) / relmax, truncated again.
                let step = (((relval * steps as f64) as i64) as f64 / relmax) as i64;
                let step = step.clamp(0, steps - 1);
                if row < rows {
                    let idx = step - (rows - row - 1) * charset_len;
                    more = true;
                    if (0..charset_len).contains(&idx) {
                        chars[j] = FILL[idx as usize];
                    } else if idx >= charset_len {
                        chars[j] = b'|';
                    }
                } else {
                    // One blank line between the graph and the labels.
                    if labels && row - rows < 1 {
                        more = true;
                        break;
                    }
                    let at = (row - rows - 1) as usize;
                    if let Some(&c) = label.as_bytes().get(at) {
                        more = true;
                        chars[j] = c;
                    }
                }
            }
            if !more {
                break;
            }
            row += 1;
            out.push_str(&String::from_utf8_lossy(&chars));
            out.push('\n');
        }
        offset += columns;
    }
    out
}

/// LATENCY HISTOGRAM [command ...]: a map from command full names
/// (`set`, `config|get`) to `{calls: n, histogram_usec: {µs: cumulative
/// calls, ...}}`, Redis 7.0's `fillCommandCDF` over the histograms
/// `latency-tracking` records (see `stats::LATENCY_REPORT_US` for the
/// buckets). Without arguments every command with a histogram, in table
/// order (Redis: its dict's order); with arguments each named command
/// (case-insensitive, `container|sub` accepted, unknown names skipped,
/// repeats repeated) and, for a container, each of its subcommands with a
/// histogram.
fn latency_histogram(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let t = crate::cmd::table();
    let stats = &ctx.server.stats;
    let mut found: Vec<(usize, [u64; crate::stats::LATENCY_BUCKETS])> = Vec::new();
    if args.len() == 2 {
        for id in 0..t.all.len() {
            if let Some(h) = stats.latency(id) {
                found.push((id, h));
            }
        }
    } else {
        for i in 2..args.len() {
            let Some(c) = t.by_full_name(args.get(i)) else {
                continue;
            };
            let Some(id) = t.id_of(c) else { continue };
            if let Some(h) = stats.latency(id) {
                found.push((id, h));
            }
            for &sid in t.sub_ids(id) {
                if let Some(h) = stats.latency(sid) {
                    found.push((sid, h));
                }
            }
        }
    }
    let o = &mut *ctx.out;
    o.map(found.len());
    for (id, h) in found {
        o.bulk(t.all[id].name.as_bytes());
        o.map(2);
        o.bulk(b"calls");
        o.int(h.iter().sum::<u64>() as i64);
        o.bulk(b"histogram_usec");
        let reported = &h[..crate::stats::LATENCY_REPORT_US.len()];
        o.map(reported.iter().filter(|&&n| n > 0).count());
        let mut cumulative = 0u64;
        for (k, &n) in reported.iter().enumerate() {
            cumulative += n;
            if n > 0 {
                o.int(crate::stats::LATENCY_REPORT_US[k] as i64);
                o.int(cumulative as i64);
            }
        }
    }
}

fn latency_help(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    reply_help(
        ctx,
        "LATENCY",
        &[
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
        ],
    );
}

#[cfg(test)]
mod tests {
    use super::sparkline;

    #[test]
    fn sparkline_as_redis_draws_it() {
        let s = |v: &[(f64, &str)]| {
            let v: Vec<(f64, String)> = v.iter().map(|(x, l)| (*x, l.to_string())).collect();
            sparkline(&v, 80, 4)
        };
        // One value: the bottom row only, then the labels.
        assert_eq!(s(&[(7.0, "5s")]), " \n \n \n_\n \n5\ns\n");
        // 0..11 steps of 12: every fill character and the full column.
        let v: Vec<(f64, &str)> = (0..12).map(|i| (i as f64, "")).collect();
        assert_eq!(
            s(&v),
            "         _o#\n      _o#|||\n   _o#||||||\n_o#|||||||||\n"
        );
        // Blocks of 80 columns are separated by an empty line.
        let v: Vec<(f64, &str)> = (0..81).map(|_| (1.0, "")).collect();
        let out = s(&v);
        assert_eq!(out.lines().count(), 9);
        assert_eq!(out.lines().nth(4), Some(""));
    }
}
