//! CONFIG GET / SET / RESETSTAT / REWRITE / HELP (Redis 7.0 config.c):
//! reading and changing the directives of `crate::config` at run time,
//! all-or-nothing for SET, and rewriting the start-up config file.

use super::{help_cmd, lossy, protected_allowed, reply_help, ADMIN_CFG, ALL_NODES_OK};
use crate::cmd::{acl, cmd, container, Command, Ctx};
use crate::resp::Args;
use std::sync::atomic::Ordering;

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

/// The CONFIG family's table entry.
pub static COMMANDS: &[Command] = &[container("config", acl::SLOW, CONFIG_SUBS).doc(
    "server",
    "2.0.0",
    "A container for server configuration commands",
    "Depends on subcommand.",
)];

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
        if !d.mutable
            && !crate::config::same_value_of_own(
                &ctx.server.config.read(),
                d.name,
                &lossy(args.get(i + 1)),
            )
        {
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
            if let crate::fdlimit::Adjusted::Lowered(n) = crate::fdlimit::adjust(want as u64) {
                drop(live);
                tracing::warn!("Failed applying new configuration. Possibly related to new maxclients setting. Restoring previous settings.");
                ctx.error(&format!(
                    "ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able to handle the specified number of clients, try with {n}"
                ));
                return;
            }
        }
        // oom-score-adj takes effect at once (Redis's updateOOMScoreAdj);
        // when writing the score fails, the previous one is put back.
        let oom = names
            .iter()
            .find(|n| n.starts_with("oom-score-adj"))
            .copied();
        let replica = ctx.server.repl.is_replica();
        if let Some(name) = oom {
            if crate::oom::apply_config(&next, replica).is_err() {
                let _ = crate::oom::apply_config(&live, replica);
                drop(live);
                ctx.error(&format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - {}",
                    crate::oom::SET_FAILED
                ));
                return;
            }
        }
        if let Err((name, why)) = ctx.server.net.reconfigure(&live, &next) {
            if oom.is_some() {
                let _ = crate::oom::apply_config(&live, replica);
            }
            drop(live);
            ctx.error(&format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
            ));
            return;
        }
        *live = next;
    }
    ctx.server.apply_config();
    crate::persist::aof::config_changed(ctx.server, crate::cmd::tx::in_exec());
    // A maxmemory below the memory in use evicts at once, in the
    // background (Redis's updateMaxmemory + performEvictions).
    if names.contains(&"maxmemory") {
        let (max, used) = (ctx.server.evict.maxmemory(), crate::evict::used_memory());
        if max != 0 && max < used {
            tracing::warn!("WARNING: the new maxmemory value set via CONFIG SET ({max}) is smaller than the current memory usage ({used}). This will result in key eviction and/or the inability to accept new write commands depending on the maxmemory-policy.");
            crate::cmd::evict_after_command();
        }
    }
    // A lower maxmemory-clients (or maxmemory, for a percentage) evicts
    // clients before the next command (Redis's beforeSleep evictClients).
    if names.contains(&"maxmemory-clients") || names.contains(&"maxmemory") {
        ctx.server.clients.evict();
    }
    ctx.out.ok();
}

/// CONFIG RESETSTAT: zeroes INFO's counters, commandstats and errorstats.
fn config_resetstat(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    let s = ctx.server;
    s.stats.reset();
    ctx.server.evict.reset_stats();
    ctx.server.clients.evicted.store(0, Ordering::Relaxed);
    crate::db::lazyfree::reset_stats();
    s.stats
        .expired_base
        .store(s.keyspace.expired_keys(), Ordering::Relaxed);
    s.keyspace.reset_expired_fields();
    ctx.out.ok();
}

/// Why rewriting the config file failed ([`rewrite_config`]).
pub(super) enum RewriteError {
    /// The server was started without a config file.
    NoFile,
    /// Writing or renaming failed.
    Io(std::io::Error),
}

/// Rewrites the start-up config file with the current values (changed
/// lines in place, new non-default ones appended; with `force_all` every
/// directive), through a temporary file renamed over the original (Redis's
/// `rewriteConfig`).
pub(super) fn rewrite_config(
    server: &crate::server::Server,
    force_all: bool,
) -> Result<(), RewriteError> {
    let (path, text) = {
        let c = server.config.read();
        let Some(path) = c.file.clone() else {
            return Err(RewriteError::NoFile);
        };
        let original = std::fs::read_to_string(&path).unwrap_or_default();
        (path.clone(), c.rewrite_text_opts(&original, force_all))
    };
    let tmp = path.with_extension(format!("rewrite-{}.tmp", std::process::id()));
    std::fs::write(&tmp, text.as_bytes())
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            RewriteError::Io(e)
        })
}

/// CONFIG REWRITE: [`rewrite_config`] without `force_all`.
fn config_rewrite(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    match rewrite_config(ctx.server, false) {
        Ok(()) => {
            tracing::info!("CONFIG REWRITE executed with success.");
            ctx.out.ok();
        }
        Err(RewriteError::NoFile) => ctx.error("ERR The server is running without a config file"),
        Err(RewriteError::Io(e)) => {
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
