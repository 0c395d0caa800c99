//! Server commands (redis.io/commands/?group=server): INFO, CONFIG, COMMAND,
//! TIME, LASTSAVE, DEBUG, MONITOR, SLOWLOG, LATENCY and SHUTDOWN.
//!
//! Replies, error texts and INFO field names follow Redis 7.0 (server.c
//! `genRedisInfoString`, config.c, commands.c, slowlog.c, latency.c,
//! debug.c), written anew here. Where ferrokv cannot do what Redis does
//! (saving on SHUTDOWN, RDB-compressed lengths, latency graphs) the reply says
//! so or the field is left out rather than faked; the crate's report lists the
//! differences.

use super::behaviour;
use super::{acl, cmd, container, flags, flags::*, table, Command, Ctx};
use crate::resp::Args;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

const LS: u64 = LOADING | STALE;
const ADMIN_CFG: u64 = ADMIN | NOSCRIPT | LOADING | STALE;
const ALL_NODES_OK: &[&str] = &["request_policy:all_nodes", "response_policy:all_succeeded"];

const fn help_cmd(name: &'static str, acl: u64, handler: super::Handler) -> Command {
    cmd(name, 2, LS, (0, 0, 0), acl, handler).doc(
        "server",
        "5.0.0",
        "Show helpful text about the different subcommands",
        "O(1)",
    )
}

/// CONFIG subcommands.
static CONFIG_SUBS: &[Command] = &[
    cmd("config|get", -3, ADMIN_CFG, (0, 0, 0), 0, config_get).doc(
        "server",
        "2.0.0",
        "Get the values of configuration parameters",
        "O(N) when N is the number of configuration parameters provided",
    ),
    cmd("config|set", -4, ADMIN_CFG, (0, 0, 0), 0, config_set)
        .doc(
            "server",
            "2.0.0",
            "Set configuration parameters to the given values",
            "O(N) when N is the number of configuration parameters provided",
        )
        .tips(ALL_NODES_OK),
    cmd(
        "config|resetstat",
        2,
        ADMIN_CFG,
        (0, 0, 0),
        0,
        config_resetstat,
    )
    .doc(
        "server",
        "2.0.0",
        "Reset the stats returned by INFO",
        "O(1)",
    ),
    cmd("config|rewrite", 2, ADMIN_CFG, (0, 0, 0), 0, config_rewrite).doc(
        "server",
        "2.8.0",
        "Rewrite the configuration file with the in memory configuration",
        "O(1)",
    ),
    help_cmd("config|help", 0, config_help),
];

/// COMMAND subcommands.
static COMMAND_SUBS: &[Command] = &[
    cmd(
        "command|count",
        2,
        LS,
        (0, 0, 0),
        acl::CONNECTION,
        command_count,
    )
    .doc(
        "server",
        "2.8.13",
        "Get total number of Redis commands",
        "O(1)",
    ),
    cmd(
        "command|docs",
        -2,
        LS,
        (0, 0, 0),
        acl::CONNECTION,
        command_docs,
    )
    .doc(
        "server",
        "7.0.0",
        "Get array of specific Redis command documentation",
        "O(N) where N is the number of commands to look up",
    )
    .tips(&["nondeterministic_output_order"]),
    cmd(
        "command|getkeys",
        -4,
        LS,
        (0, 0, 0),
        acl::CONNECTION,
        command_getkeys,
    )
    .doc(
        "server",
        "2.8.13",
        "Extract keys given a full Redis command",
        "O(N) where N is the number of arguments to the command",
    ),
    cmd(
        "command|getkeysandflags",
        -4,
        LS,
        (0, 0, 0),
        acl::CONNECTION,
        command_getkeysandflags,
    )
    .doc(
        "server",
        "7.0.0",
        "Extract keys and access flags given a full Redis command",
        "O(N) where N is the number of arguments to the command",
    ),
    help_cmd("command|help", acl::CONNECTION, command_help),
    cmd(
        "command|info",
        -2,
        LS,
        (0, 0, 0),
        acl::CONNECTION,
        command_info,
    )
    .doc(
        "server",
        "2.8.13",
        "Get array of specific Redis command details, or all when no argument is given.",
        "O(N) where N is the number of commands to look up",
    )
    .tips(&["nondeterministic_output_order"]),
    cmd(
        "command|list",
        -2,
        LS,
        (0, 0, 0),
        acl::CONNECTION,
        command_list,
    )
    .doc(
        "server",
        "7.0.0",
        "Get an array of Redis command names",
        "O(N) where N is the total number of Redis commands",
    )
    .tips(&["nondeterministic_output_order"]),
];

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

/// The server family's table entries.
pub static COMMANDS: &[Command] = &[
    container("config", acl::SLOW, CONFIG_SUBS).doc(
        "server",
        "2.0.0",
        "A container for server configuration commands",
        "Depends on subcommand.",
    ),
    cmd("command", -1, LS, (0, 0, 0), acl::CONNECTION, command_all)
        .subs(COMMAND_SUBS)
        .doc(
            "server",
            "2.8.13",
            "Get array of Redis command details",
            "O(N) where N is the total number of Redis commands",
        )
        .tips(&["nondeterministic_output_order"]),
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
    cmd("time", 1, LS | FAST, (0, 0, 0), 0, time)
        .doc("server", "2.6.0", "Return the current server time", "O(1)")
        .tips(&["nondeterministic_output"]),
    cmd(
        "bgrewriteaof",
        1,
        super::flags::ADMIN | super::flags::NOSCRIPT | super::flags::NO_ASYNC_LOADING,
        (0, 0, 0),
        0,
        bgrewriteaof,
    )
    .doc(
        "server",
        "1.0.0",
        "Asynchronously rewrites the append-only file to disk",
        "O(1)",
    ),
    cmd("debug", -2, ADMIN_CFG, (0, 0, 0), 0, debug).behaves(behaviour::STOPS_THE_WORLD).doc(
        "server",
        "1.0.0",
        "A container for debugging commands",
        "Depends on subcommand.",
    ),
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
    cmd(
        "shutdown",
        -1,
        ADMIN_CFG | NO_MULTI | ALLOW_BUSY,
        (0, 0, 0),
        0,
        shutdown,
    )
    .doc(
        "server",
        "1.0.0",
        "Synchronously save the dataset to disk and then shut down the server",
        "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)",
    ),
];

/// Replies with Redis's HELP layout: an array of status lines, the first
/// naming the command, the last two describing HELP (`addReplyHelp`).
pub(crate) fn reply_help(ctx: &mut Ctx<'_>, name: &str, lines: &[&str]) {
    ctx.out.array(lines.len() + 3);
    ctx.out.simple(&format!(
        "{name} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ));
    for l in lines {
        ctx.out.simple(l);
    }
    ctx.out.simple("HELP");
    ctx.out.simple("    Prints this help.");
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ---------------------------------------------------------------- CONFIG

/// CONFIG GET pattern [pattern ...]: a map of matching directives
/// (glob patterns, case-insensitive; each directive once). As in Redis, a
/// pattern without glob characters is an exact lookup and the reply names
/// the directive as the caller spelled it (`CONFIG GET HZ` → `HZ`).
fn config_get(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    // (canonical name, name to reply, value)
    let mut found: Vec<(&'static str, String, String)> = Vec::new();
    {
        let c = ctx.server.config.read();
        for i in 2..args.len() {
            let pat = args.get(i);
            if !pat.iter().any(|b| matches!(b, b'*' | b'?' | b'[')) {
                let given = lossy(pat);
                if let Some(d) = crate::config::directive(&given) {
                    if !found.iter().any(|(n, _, _)| *n == d.name) {
                        found.push((d.name, given, c.shown(d.name)));
                    }
                }
                continue;
            }
            for (k, v) in c.matching(pat) {
                if !found.iter().any(|(n, _, _)| *n == k) {
                    found.push((k, k.to_string(), v));
                }
            }
        }
    }
    ctx.out.map(found.len());
    for (_, k, v) in found {
        ctx.out.bulk(k.as_bytes());
        ctx.out.bulk(v.as_bytes());
    }
}

/// CONFIG SET directive value [directive value ...]: all-or-nothing, as
/// Redis 7.0's `configSetCommand`: names are checked first (unknown,
/// immutable, duplicate), then every value is applied to a copy of the
/// configuration which replaces the live one only when all succeeded; then
/// [`crate::server::Server::apply_config`] refreshes the hot-path copies.
fn config_set(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !args.len().is_multiple_of(2) {
        ctx.syntax();
        return;
    }
    let mut names: Vec<&'static str> = Vec::new();
    for i in (2..args.len()).step_by(2) {
        let raw = lossy(args.get(i));
        let Some(d) = crate::config::directive(&raw) else {
            ctx.error(&format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{raw}'"
            ));
            return;
        };
        let fail = |why: &str| {
            format!("ERR CONFIG SET failed (possibly related to argument '{raw}') - {why}")
        };
        if !d.mutable {
            ctx.error(&fail("can't set immutable config"));
            return;
        }
        if crate::config::is_protected(d) && !protected_allowed(ctx, "enable-protected-configs") {
            ctx.error(&fail("can't set protected config"));
            return;
        }
        if names.contains(&d.name) {
            ctx.error(&fail("duplicate parameter"));
            return;
        }
        names.push(d.name);
    }
    {
        let mut live = ctx.server.config.write();
        let mut next = live.clone();
        for i in (2..args.len()).step_by(2) {
            let raw = lossy(args.get(i));
            let value = lossy(args.get(i + 1));
            if let Err(why) = next.set(&raw, &value) {
                drop(live);
                ctx.error(&format!(
                    "ERR CONFIG SET failed (possibly related to argument '{raw}') - {why}"
                ));
                return;
            }
        }
        if names.contains(&"dir") {
            // Redis changes the working directory at once (the RDB file
            // is written there).
            let dir = next.get("dir").to_string();
            if let Err(e) = std::env::set_current_dir(&dir) {
                drop(live);
                let why = match e.kind() {
                    std::io::ErrorKind::NotFound => "No such file or directory".to_string(),
                    _ => e.to_string(),
                };
                ctx.error(&format!(
                    "ERR CONFIG SET failed (possibly related to argument 'dir') - {why}"
                ));
                return;
            }
            if let Ok(cwd) = std::env::current_dir() {
                let _ = next.set("dir", &cwd.display().to_string());
            }
        }
        let (prev, want) = (live.get_i64("maxclients"), next.get_i64("maxclients"));
        if want > prev {
            // Redis's updateMaxclients: the open-file limit must serve the
            // new count (raised when possible).
            if let crate::net::fdlimit::Adjusted::Lowered(n) =
                crate::net::fdlimit::adjust(want as u64)
            {
                drop(live);
                tracing::warn!("Failed applying new configuration. Possibly related to new maxclients setting. Restoring previous settings.");
                ctx.error(&format!(
                    "ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able to handle the specified number of clients, try with {n}"
                ));
                return;
            }
        }
        if let Err((name, why)) = crate::net::listener::apply_config_set(ctx.server, &live, &next) {
            drop(live);
            ctx.error(&format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
            ));
            return;
        }
        *live = next;
    }
    ctx.server.apply_config();
    crate::persist::aof::config_changed(ctx.server);
    ctx.out.ok();
}

/// CONFIG RESETSTAT: zeroes INFO's counters, commandstats and errorstats.
fn config_resetstat(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    let s = ctx.server;
    s.stats.reset();
    ctx.server.evict.reset_stats();
    s.stats
        .expired_base
        .store(s.keyspace.expired_keys(), Ordering::Relaxed);
    ctx.out.ok();
}

/// CONFIG REWRITE: rewrites the start-up config file with the current
/// values (changed lines in place, new non-default ones appended), through
/// a temporary file renamed over the original.
fn config_rewrite(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    let (path, text) = {
        let c = ctx.server.config.read();
        let Some(path) = c.file.clone() else {
            drop(c);
            ctx.error("ERR The server is running without a config file");
            return;
        };
        let original = std::fs::read_to_string(&path).unwrap_or_default();
        (path.clone(), c.rewrite_text(&original))
    };
    let tmp = path.with_extension(format!("rewrite-{}.tmp", std::process::id()));
    let res = std::fs::write(&tmp, text.as_bytes()).and_then(|_| std::fs::rename(&tmp, &path));
    match res {
        Ok(()) => {
            tracing::info!("CONFIG REWRITE executed with success.");
            ctx.out.ok();
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            tracing::warn!("CONFIG REWRITE failed: {e}");
            ctx.error(&format!("ERR Rewriting config file: {e}"));
        }
    }
}

fn config_help(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    reply_help(
        ctx,
        "CONFIG",
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    );
}

// ---------------------------------------------------------------- COMMAND

/// Key-spec flags derived from the command flags: a read-only command's
/// keys are `RO access`, a write command's `RW update` (Redis declares them
/// per command; e.g. DEL's are `RM delete`).
fn key_spec_flags(c: &Command) -> &'static [&'static str] {
    if !c.key_flags.is_empty() {
        c.key_flags
    } else if c.flags & flags::WRITE != 0 {
        &["RW", "update"]
    } else {
        &["RO", "access"]
    }
}

/// One COMMAND INFO entry (Redis 7.0 shape): name, arity, flags, first key,
/// last key, step, ACL categories, tips, key specs, subcommands.
fn write_command_info(ctx: &mut Ctx<'_>, c: &Command) {
    let o = &mut *ctx.out;
    o.array(10);
    o.bulk(c.name.as_bytes());
    o.int(c.arity as i64);
    let fl: Vec<&str> = flags::NAMES
        .iter()
        .filter(|(b, _)| c.flags & b != 0)
        .map(|(_, n)| *n)
        .collect();
    o.set(fl.len());
    for f in fl {
        o.simple(f);
    }
    o.int(c.first_key as i64);
    o.int(c.last_key as i64);
    o.int(c.step as i64);
    let cats = c.acl_categories();
    let names: Vec<&str> = acl::NAMES
        .iter()
        .filter(|(b, _)| cats & b != 0)
        .map(|(_, n)| *n)
        .collect();
    o.set(names.len());
    for n in names {
        o.simple(&format!("@{n}"));
    }
    o.array(c.tips.len());
    for t in c.tips {
        o.bulk(t.as_bytes());
    }
    if c.first_key > 0 {
        o.array(1);
        o.map(3);
        o.bulk(b"flags");
        let kf = key_spec_flags(c);
        o.set(kf.len());
        for f in kf {
            o.simple(f);
        }
        o.bulk(b"begin_search");
        o.map(2);
        o.bulk(b"type");
        o.bulk(b"index");
        o.bulk(b"spec");
        o.map(1);
        o.bulk(b"index");
        o.int(c.first_key as i64);
        o.bulk(b"find_keys");
        o.map(2);
        o.bulk(b"type");
        o.bulk(b"range");
        o.bulk(b"spec");
        o.map(3);
        o.bulk(b"lastkey");
        o.int(if c.last_key < 0 {
            c.last_key as i64
        } else {
            (c.last_key - c.first_key) as i64
        });
        o.bulk(b"keystep");
        o.int(c.step as i64);
        o.bulk(b"limit");
        o.int(0);
    } else {
        o.array(0);
    }
    o.array(c.subcommands.len());
    for s in c.subcommands {
        write_command_info(ctx, s);
    }
}

/// COMMAND: COMMAND INFO of every top-level command.
fn command_all(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    let all: Vec<&Command> = table().top_level().collect();
    ctx.out.array(all.len());
    for c in all {
        write_command_info(ctx, c);
    }
}

/// COMMAND COUNT: number of top-level commands.
fn command_count(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    ctx.out.int(table().top_level().count() as i64);
}

/// COMMAND INFO [name ...]: one entry per name (nil when unknown; names may
/// be `container|sub`); every command when no name is given.
fn command_info(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if args.len() == 2 {
        return command_all(ctx, args);
    }
    ctx.out.array(args.len() - 2);
    for i in 2..args.len() {
        match table().by_full_name(args.get(i)) {
            Some(c) => write_command_info(ctx, c),
            None => ctx.out.null(),
        }
    }
}

fn write_command_docs(ctx: &mut Ctx<'_>, c: &Command) {
    let o = &mut *ctx.out;
    o.map(if c.is_container() { 5 } else { 4 });
    o.bulk(b"summary");
    o.bulk(c.summary.as_bytes());
    o.bulk(b"since");
    o.bulk(c.since.as_bytes());
    o.bulk(b"group");
    o.bulk(c.group.as_bytes());
    o.bulk(b"complexity");
    o.bulk(c.complexity.as_bytes());
    if c.is_container() {
        o.bulk(b"subcommands");
        o.map(c.subcommands.len());
        for s in c.subcommands {
            ctx.out.bulk(s.name.as_bytes());
            write_command_docs(ctx, s);
        }
    }
}

/// COMMAND DOCS [name ...]: a map of name → documentation (summary, since,
/// group, complexity, subcommands); unknown names are left out. Argument
/// and history documentation is not kept by ferrokv.
fn command_docs(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let list: Vec<&Command> = if args.len() == 2 {
        table().top_level().collect()
    } else {
        (2..args.len())
            .filter_map(|i| table().by_full_name(args.get(i)))
            .collect()
    };
    ctx.out.map(list.len());
    for c in list {
        ctx.out.bulk(c.name.as_bytes());
        write_command_docs(ctx, c);
    }
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN glob]:
/// names of all commands and subcommands.
fn command_list(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let t = table();
    let all = t.all.iter().copied();
    let names: Vec<&str> = match args.len() {
        2 => all.map(|c| c.name).collect(),
        5 if args.get(2).eq_ignore_ascii_case(b"filterby") => {
            let kind = args.get(3);
            let val = args.get(4);
            if kind.eq_ignore_ascii_case(b"module") {
                Vec::new()
            } else if kind.eq_ignore_ascii_case(b"aclcat") {
                match acl::NAMES
                    .iter()
                    .find(|(_, n)| n.as_bytes().eq_ignore_ascii_case(val))
                {
                    Some((bit, _)) => all
                        .filter(|c| c.acl_categories() & bit != 0)
                        .map(|c| c.name)
                        .collect(),
                    None => Vec::new(),
                }
            } else if kind.eq_ignore_ascii_case(b"pattern") {
                all.filter(|c| crate::util::glob_match(val, c.name.as_bytes(), true))
                    .map(|c| c.name)
                    .collect()
            } else {
                return ctx.syntax();
            }
        }
        _ => return ctx.syntax(),
    };
    ctx.out.array(names.len());
    for n in names {
        ctx.out.bulk(n.as_bytes());
    }
}

/// Resolves the command of a COMMAND GETKEYS request and its keys, or
/// replies Redis 7.0's error (commandGetKeys: unknown command, no key specs,
/// arity, then no key found). Some(empty) = reply an empty array
/// (a command whose keys are optional).
fn getkeys_positions(ctx: &mut Ctx<'_>, args: &Args<'_>) -> Option<super::keyspecs::Keys> {
    let t = table();
    let sub = args.tail(2);
    let mut c = t.lookup(sub.get(0)).map(|id| (id, t.all[id]));
    if let Some((id, top)) = c {
        if top.is_container() && sub.len() >= 2 {
            c = t.lookup_sub(id, sub.get(1)).map(|s| (s, t.all[s]));
        }
    }
    let Some((_, c)) = c else {
        ctx.error("ERR Invalid command specified");
        return None;
    };
    if !super::keyspecs::has_keys(c) {
        ctx.error("ERR The command has no key arguments");
        return None;
    }
    let argc = sub.len() as i32;
    if (c.arity > 0 && argc != c.arity) || argc < -c.arity {
        ctx.error("ERR Invalid number of arguments specified for command");
        return None;
    }
    let keys = super::keyspecs::get_keys(c, &sub);
    if keys.is_empty() && c.flags & flags::NO_MANDATORY_KEYS == 0 {
        ctx.error("ERR Invalid arguments specified for command");
        return None;
    }
    Some(keys)
}

/// COMMAND GETKEYS command [arg ...]: the key arguments of a request.
fn command_getkeys(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(keys) = getkeys_positions(ctx, args) else {
        return;
    };
    ctx.out.array(keys.len());
    for k in keys {
        ctx.out.bulk(args.get(k.pos + 2));
    }
}

/// COMMAND GETKEYSANDFLAGS command [arg ...]: [key, [flags]] pairs.
fn command_getkeysandflags(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(keys) = getkeys_positions(ctx, args) else {
        return;
    };
    ctx.out.array(keys.len());
    for k in keys {
        ctx.out.array(2);
        ctx.out.bulk(args.get(k.pos + 2));
        let names: Vec<&str> = super::keyspecs::flag_names(k.flags).collect();
        ctx.out.set(names.len());
        for f in names {
            ctx.out.simple(f);
        }
    }
}

fn command_help(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    reply_help(
        ctx,
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
        ],
    );
}

// ---------------------------------------------------------------- INFO

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
            "cluster" => {
                s.header("Cluster");
                s.kv("cluster_enabled", 0);
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

fn uname() -> (String, String, String) {
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

/// Redis's LRU clock: seconds since the epoch in 24 bits.
fn lru_clock(now_ms: u64) -> u64 {
    (now_ms / 1000) & ((1 << 24) - 1)
}

fn info_server(ctx: &Ctx<'_>, s: &mut Section) {
    let srv = ctx.server;
    let c = srv.config.read();
    let (sys, rel, mach) = uname();
    let up = srv.uptime_secs();
    s.header("Server");
    s.kv("redis_version", crate::REDIS_VERSION);
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
    s.kv("ferrokv_version", crate::VERSION);
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
        .filter(|c| c.blocked.lock().is_some())
        .count();
    s.kv("blocked_clients", blocked);
    s.kv("tracking_clients", srv.tracking.client_count());
    s.kv("clients_in_timeout_table", 0);
}

/// Resident set size of this process in bytes (/proc/self/statm).
pub fn rss_bytes() -> u64 {
    let page = {
        // SAFETY: sysconf has no memory effects.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if p > 0 {
            p as u64
        } else {
            4096
        }
    };
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map(|pages| pages * page)
        .unwrap_or(0)
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

fn peak_memory(now: u64) -> u64 {
    static PEAK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    PEAK.fetch_max(now, Ordering::Relaxed).max(now)
}

fn info_memory(ctx: &Ctx<'_>, s: &mut Section) {
    let server = ctx.server;
    // used_memory: bytes allocated through the counting allocator
    // (memory.rs), as Redis's zmalloc_used_memory; RSS when not counted.
    let rss = rss_bytes();
    let used = crate::evict::used_memory();
    let peak = peak_memory(used);
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
    let max = server.evict.maxmemory();
    s.kv("maxmemory", max);
    s.kv("maxmemory_human", bytes_to_human(max));
    s.kv("maxmemory_policy", server.evict.policy().name());
    s.kv(
        "mem_fragmentation_ratio",
        format!("{:.2}", rss as f64 / used.max(1) as f64),
    );
    s.kv("mem_fragmentation_bytes", rss.saturating_sub(used));
    s.kv("mem_allocator", "mimalloc");
    s.kv("lazyfree_pending_objects", 0);
}

fn info_persistence(ctx: &Ctx<'_>, s: &mut Section) {
    let srv = ctx.server;
    let st = &srv.rdb;
    let dirty = crate::persist::rdb::dirty(srv);
    let in_progress = st.bgsave_in_progress.load(Ordering::Relaxed);
    let now = crate::util::now_ms();
    s.header("Persistence");
    s.kv("loading", 0);
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
    s.kv("sync_full", 0);
    s.kv("sync_partial_ok", 0);
    s.kv("sync_partial_err", 0);
    s.kv("expired_keys", expired);
    s.kv(
        "expired_time_cap_reached_count",
        srv.keyspace.expire_time_cap_reached.load(Ordering::Relaxed),
    );
    s.kv("evicted_keys", srv.evict.evicted_keys());
    s.kv("evicted_clients", 0);
    s.kv("keyspace_hits", t.hits);
    s.kv("keyspace_misses", t.misses);
    s.kv("pubsub_channels", srv.pubsub.channel_count());
    s.kv("pubsub_patterns", srv.pubsub.pattern_count());
    s.kv("pubsubshard_channels", srv.pubsub.shard_count());
    s.kv("latest_fork_usec", 0);
    s.kv("total_forks", 0);
    s.kv("migrate_cached_sockets", 0);
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

/// The replication id reported by INFO (random per process; ferrokv has no
/// replication yet, so it never changes).
fn master_replid() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let mut s = String::new();
        while s.len() < 40 {
            let _ = write!(s, "{:016x}", crate::util::rand_u64());
        }
        s.truncate(40);
        s
    })
}

fn info_replication(_ctx: &Ctx<'_>, s: &mut Section) {
    s.header("Replication");
    s.kv("role", "master");
    s.kv("connected_slaves", 0);
    s.kv("master_failover_state", "no-failover");
    s.kv("master_replid", master_replid());
    s.kv("master_replid2", "0".repeat(40));
    s.kv("master_repl_offset", 0);
    s.kv("second_repl_offset", -1);
    s.kv("repl_backlog_active", 0);
    s.kv("repl_backlog_size", 1048576);
    s.kv("repl_backlog_first_byte_offset", 0);
    s.kv("repl_backlog_histlen", 0);
}

fn rusage(who: libc::c_int) -> (f64, f64) {
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
        s.kv(
            &format!("db{i}"),
            format!("keys={keys},expires={},avg_ttl=0", db.volatile_len()),
        );
    }
}

// ---------------------------------------------------------------- TIME, LASTSAVE

/// TIME: [unix seconds, microseconds] as bulk strings.
fn time(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    let us = crate::util::now_us();
    ctx.out.array(2);
    ctx.out.bulk_int((us / 1_000_000) as i64);
    ctx.out.bulk_int((us % 1_000_000) as i64);
}

/// BGREWRITEAOF: starts a background AOF rewrite (persist/aof.rs), as
/// Redis 7.0's bgrewriteaofCommand: refused while one is running.
fn bgrewriteaof(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if ctx.server.aof.rewriting.load(Ordering::Acquire) {
        return ctx.error("ERR Background append only file rewriting already in progress");
    }
    if crate::persist::aof::start_rewrite(ctx.server, false) {
        ctx.out
            .simple("Background append only file rewriting started");
    } else {
        ctx.error("ERR Background append only file rewriting already in progress");
    }
}

// ---------------------------------------------------------------- DEBUG

/// True when DEBUG may run for this client under `enable-debug-command`
/// (`no`, `yes`, or `local`: loopback and unix-socket clients only).
fn debug_allowed(ctx: &Ctx<'_>) -> bool {
    protected_allowed(ctx, "enable-debug-command")
}

/// True when the protected action governed by directive `name`
/// (`enable-debug-command`, `enable-protected-configs`) is allowed for the
/// calling client.
fn protected_allowed(ctx: &Ctx<'_>, name: &str) -> bool {
    let h = &ctx.client.handle;
    crate::config::protected_action_allowed(ctx.server.config.read().get(name), h.unix, &h.addr)
}

/// DEBUG OBJECT | SLEEP | SET-ACTIVE-EXPIRE | HELP (the subset ferrokv has).
/// Refused unless `enable-debug-command` allows it, as Redis 7.0.
fn debug(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !debug_allowed(ctx) {
        ctx.error("ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.");
        return;
    }
    let sub = args.get(1);
    let n = args.len();
    if sub.eq_ignore_ascii_case(b"help") && n == 2 {
        reply_help(
            ctx,
            "DEBUG",
            &[
                "OBJECT <key>",
                "    Show low level info about `key` and associated value.",
                "RELOAD [option ...]",
                "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
                "    * MERGE: conflicting keys will be loaded from RDB.",
                "    * NOFLUSH: the existing database will not be removed before load, but",
                "      conflicting keys will generate an exception and kill the server.",
                "    * NOSAVE: the database will be loaded from an existing RDB file.",
                "    Examples:",
                "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
                "      the database.",
                "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
                "      existing RDB file.",
                "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
                "      file to the database.",
                "SET-ACTIVE-EXPIRE <0|1>",
                "    Setting it to 0 disables expiring keys in background when they are not",
                "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
                "    default.",
                "SLEEP <seconds>",
                "    Stop the server for <seconds>. Decimals allowed.",
            ],
        );
    } else if sub.eq_ignore_ascii_case(b"object") && n == 3 {
        debug_object(ctx, args.get(2));
    } else if sub.eq_ignore_ascii_case(b"reload") {
        debug_reload(ctx, args);
    } else if sub.eq_ignore_ascii_case(b"sleep") && n == 3 {
        let secs = crate::util::parse_f64(args.get(2))
            .filter(|v| v.is_finite() && *v > 0.0)
            .unwrap_or(0.0);
        sleep_blocking(std::time::Duration::from_secs_f64(secs.min(1e9)));
        ctx.out.ok();
    } else if sub.eq_ignore_ascii_case(b"set-active-expire") && n == 3 {
        let on = crate::util::parse_i64(args.get(2)).unwrap_or(0) != 0;
        ctx.server
            .keyspace
            .active_expire_enabled
            .store(on, Ordering::Relaxed);
        ctx.out.ok();
    } else {
        ctx.error_with(
            "ERR unknown subcommand or wrong number of arguments for '",
            sub,
            "'. Try DEBUG HELP.",
        );
    }
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE] (debug.c): save, empty, load
/// the RDB back, with every other command on every core held back for the
/// duration (the exclusive exec gate; inside EXEC it is held already), as
/// Redis's single thread does: a write arriving between the save and the
/// load would otherwise be lost, or be taken for a duplicate key of the
/// file and fail the load.
fn debug_reload(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let (mut merge, mut noflush, mut nosave) = (false, false, false);
    for i in 2..args.len() {
        let o = args.get(i);
        if o.eq_ignore_ascii_case(b"merge") {
            merge = true;
        } else if o.eq_ignore_ascii_case(b"noflush") {
            noflush = true;
        } else if o.eq_ignore_ascii_case(b"nosave") {
            nosave = true;
        } else {
            return ctx
                .error("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.");
        }
    }
    // Dispatched without the shared gate (cmd::execute), so this thread
    // may take the whole of it.
    let _world = (!super::tx::in_exec()).then(crate::tx::gate_exclusive);
    if !nosave {
        if let Err(e) = crate::persist::rdb::save_now(ctx.server) {
            tracing::warn!("DEBUG RELOAD: {e}");
            return ctx.error("ERR");
        }
    }
    match crate::persist::rdb::debug_reload(ctx.server, merge, noflush, true) {
        Ok(()) => ctx.out.ok(),
        Err(e) => {
            tracing::warn!("DEBUG RELOAD: {e}");
            ctx.error("ERR Error trying to load the RDB dump, check server logs.")
        }
    }
}

/// Sleeps this connection for `d`. Redis's DEBUG SLEEP stops the whole
/// server; ferrokv stops only the calling connection: on the multi-thread
/// runtime `block_in_place` hands this worker's other tasks to another
/// thread first, so other clients keep being served.
fn sleep_blocking(d: std::time::Duration) {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| std::thread::sleep(d))
        }
        _ => std::thread::sleep(d),
    }
}

/// Bytes of an RDB length prefix for `len` (rdbSaveLen).
fn rdb_len_bytes(len: u64) -> u64 {
    match len {
        0..=63 => 1,
        64..=16383 => 2,
        16384..=0xFFFF_FFFF => 5,
        _ => 9,
    }
}

/// RDB size of a string value without compression: integers that fit 32
/// bits use the compact integer encodings, anything else a length prefix.
fn rdb_string_len(v: &crate::db::value::StrValue) -> u64 {
    use crate::db::value::StrValue;
    let mut tmp = itoa::Buffer::new();
    if let StrValue::Int(i) = v {
        if i8::try_from(*i).is_ok() {
            return 2;
        }
        if i16::try_from(*i).is_ok() {
            return 3;
        }
        if i32::try_from(*i).is_ok() {
            return 5;
        }
    }
    let len = v.as_bytes(&mut tmp).len() as u64;
    rdb_len_bytes(len) + len
}

/// DEBUG OBJECT key: Redis's one-line summary. `serializedlength` is the
/// uncompressed RDB size (Redis LZF-compresses strings over 20 bytes, so
/// its number is smaller for compressible values).
fn debug_object(ctx: &mut Ctx<'_>, key: &[u8]) {
    let now = ctx.now;
    let (h, shard) = ctx.lock(key);
    let Some(e) = shard.peek(h, key, now) else {
        drop(shard);
        ctx.error(super::err::NO_SUCH_KEY);
        return;
    };
    use crate::db::value::{StrValue, Value};
    // Shared integers (0..10000) have Redis's OBJ_SHARED_REFCOUNT.
    let (refcount, serialized): (u64, u64) = match &e.value {
        Value::Str(StrValue::Int(i)) if (0..10000).contains(i) => (2147483647, 2),
        Value::Str(sv) => (1, rdb_string_len(sv)),
        Value::Hash(hv) => (1, hv.serialized_len() as u64),
        Value::List(l) => (1, l.packed_bytes() as u64),
        #[allow(unreachable_patterns)]
        _ => (1, e.value.mem_usage() as u64),
    };
    // Redis's 24-bit LRU clock (seconds) of the last access.
    let idle = crate::db::lru::idle_secs(e.lru, now);
    let lru = lru_clock(now).wrapping_sub(idle) & ((1 << 24) - 1);
    let mut line = format!(
        "Value at:{:p} refcount:{} encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{}",
        e as *const _,
        refcount,
        e.value.encoding(),
        serialized,
        lru,
        idle
    );
    if let Value::List(l) = &e.value {
        // Redis 7.0's quicklist details (debug.c); node sizes are ours.
        let nodes = l.node_count();
        line.push_str(&format!(
            " ql_nodes:{} ql_avg_node:{:.2} ql_listpack_max:{} ql_compressed:0 ql_uncompressed_size:{}",
            nodes,
            l.len() as f64 / nodes.max(1) as f64,
            ctx.server.live.list_max_listpack_size.load(Ordering::Relaxed),
            l.packed_bytes()
        ));
    }
    drop(shard);
    ctx.out.simple(&line);
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

// ---------------------------------------------------------------- SHUTDOWN

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: stops the server; on
/// success no reply is sent and the process exits 0.
///
/// Saves the RDB first with SAVE, or without NOSAVE when save points are
/// configured (prepareForShutdown); when that save fails the server keeps
/// running and replies "Errors trying to SHUTDOWN" unless FORCE is given.
/// No shutdown is ever pending (there are no replicas to wait for), so ABORT
/// always answers "No shutdown in progress.".
fn shutdown(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let (mut nosave, mut save, mut force, mut abort) = (false, false, false, false);
    for i in 1..args.len() {
        let a = args.get(i);
        if a.eq_ignore_ascii_case(b"nosave") {
            nosave = true;
        } else if a.eq_ignore_ascii_case(b"save") {
            save = true;
        } else if a.eq_ignore_ascii_case(b"now") {
        } else if a.eq_ignore_ascii_case(b"force") {
            force = true;
        } else if a.eq_ignore_ascii_case(b"abort") {
            abort = true;
        } else {
            return ctx.syntax();
        }
    }
    if (nosave && save) || (abort && args.len() > 2) {
        return ctx.syntax();
    }
    if abort {
        ctx.error("ERR No shutdown in progress.");
        return;
    }
    if !shutdown_save(ctx.server, save, nosave) && !force {
        ctx.error("ERR Errors trying to SHUTDOWN. Check logs.");
        return;
    }
    ctx.server
        .rdb
        .shutdown_handled
        .store(true, Ordering::SeqCst);
    tracing::info!("User requested shutdown...");
    if crate::propagate::on() {
        tracing::info!("Calling fsync() on the AOF file.");
        ctx.server.aof.flush_all();
    }
    ctx.client.close_after_reply = true;
    ctx.server.request_shutdown();
}

/// The save of a shutdown: done when `save`, or when save points are
/// configured and not `nosave`. Cancels a running BGSAVE first. True when
/// the shutdown may go on. Marks the shutdown as handled so the exit path
/// does not save again.
pub fn shutdown_save(server: &crate::server::Server, save: bool, nosave: bool) -> bool {
    use crate::persist::rdb;
    rdb::cancel_bgsave(server);
    let want = save || (!nosave && !rdb::save_points(server).is_empty());
    if want {
        tracing::info!("Saving the final RDB snapshot before exiting.");
        if let Err(e) = rdb::save_now(server) {
            tracing::warn!("Error trying to save the DB, can't exit. ({e})");
            return false;
        }
    }
    server.rdb.shutdown_handled.store(true, Ordering::SeqCst);
    true
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

    #[test]
    fn rdb_lengths() {
        use crate::db::value::StrValue;
        assert_eq!(rdb_string_len(&StrValue::Int(123)), 2);
        assert_eq!(rdb_string_len(&StrValue::Int(1000)), 3);
        assert_eq!(rdb_string_len(&StrValue::Int(100000)), 5);
        assert_eq!(rdb_string_len(&StrValue::from_bytes(b"hello")), 6);
        assert_eq!(rdb_len_bytes(64), 2);
    }

    #[test]
    fn table_has_help_for_every_container() {
        for c in COMMANDS {
            if c.is_container() {
                assert!(
                    c.subcommands.iter().any(|s| s.name.ends_with("|help")),
                    "{} has no HELP",
                    c.name
                );
            }
        }
    }
}
