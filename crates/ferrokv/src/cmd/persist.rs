//! Persistence commands: SAVE, BGSAVE, LASTSAVE (rdb.c), BGREWRITEAOF
//! (aof.c) and DUMP, RESTORE (cluster.c), with Redis 7.0's replies and errors. The file format and the
//! save machinery live in `persist::rdb`.
//!
//! Differences from Redis: SAVE blocks only the calling connection's thread
//! (other threads keep serving clients while it runs); RESTORE's FREQ is
//! validated and ignored (no LFU counters are kept).

use super::keyspecs;
use super::{acl, cmd, err, flags::*, Command, Ctx};
use crate::db::{Entry, Value};
use crate::persist::rdb::{self, PayloadError};
use crate::resp::Args;
use std::sync::atomic::Ordering;

/// The persistence family's table entries.
pub static COMMANDS: &[Command] = &[
    cmd(
        "save",
        1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI,
        (0, 0, 0),
        0,
        save,
    )
    .doc(
        "server",
        "1.0.0",
        "Synchronously save the dataset to disk",
        "O(N) where N is the total number of keys in all databases",
    ),
    cmd(
        "bgsave",
        -1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING,
        (0, 0, 0),
        0,
        bgsave,
    )
    .doc(
        "server",
        "1.0.0",
        "Asynchronously save the dataset to disk",
        "O(1)",
    ),
    cmd(
        "bgrewriteaof",
        1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING,
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
    cmd(
        "lastsave",
        1,
        LOADING | STALE | FAST,
        (0, 0, 0),
        acl::ADMIN | acl::DANGEROUS,
        lastsave,
    )
    .doc(
        "server",
        "1.0.0",
        "Get the UNIX time stamp of the last successful save to disk",
        "O(1)",
    )
    .tips(&["nondeterministic_output"]),
    cmd("dump", 2, READONLY, (1, 1, 1), acl::KEYSPACE, dump).key_specs(keyspecs::DUMP)
        .doc(
            "generic",
            "2.6.0",
            "Return a serialized version of the value stored at the specified key.",
            "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
        )
        .tips(&["nondeterministic_output"])
        .key_flags(&["RO", "ACCESS"]),
    cmd(
        "restore",
        -4,
        WRITE | DENYOOM,
        (1, 1, 1),
        acl::KEYSPACE | acl::DANGEROUS,
        restore,
    ).key_specs(keyspecs::PSETEX)
    .doc(
        "generic",
        "2.6.0",
        "Create a key using the provided serialized value, previously obtained using DUMP.",
        "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
    )
    .key_flags(&["OW", "UPDATE"]),
];

/// SAVE: synchronous save. "Background save already in progress" while a
/// BGSAVE runs; a bare `-ERR` when writing failed (as Redis's shared.err).
fn save(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    match rdb::save(ctx.server) {
        Ok(()) => ctx.out.ok(),
        Err(e) if e.starts_with("Background") => ctx.error(&format!("ERR {e}")),
        Err(_) => ctx.error("ERR"),
    }
}

/// BGSAVE [SCHEDULE]: starts a background save ("Background saving
/// started"); with one running, an error (SCHEDULE included, as Redis,
/// which only schedules behind other kinds of background work).
fn bgsave(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if args.len() > 1 && !(args.len() == 2 && args.get(1).eq_ignore_ascii_case(b"schedule")) {
        return ctx.syntax();
    }
    match rdb::bgsave(ctx.server) {
        Ok(()) => ctx.out.simple("Background saving started"),
        Err(e) => ctx.error(&format!("ERR {e}")),
    }
}

/// Redis 7.0's bgrewriteaofCommand: refused while one is running.
fn bgrewriteaof(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if ctx.server.aof.rewriting.load(Ordering::Acquire) {
        return ctx.error("ERR Background append only file rewriting already in progress");
    }
    // Inside a transaction, or while a BGSAVE runs, the cron starts it
    // (aof.c bgrewriteaofCommand: `hasActiveChildProcess() || in_exec`).
    if crate::cmd::tx::in_exec() || ctx.server.rdb.bgsave_in_progress.load(Ordering::Relaxed) {
        ctx.server
            .aof
            .rewrite_scheduled
            .store(true, Ordering::Relaxed);
        crate::persist::aof::start_tick(ctx.server);
        return ctx
            .out
            .simple("Background append only file rewriting scheduled");
    }
    if crate::persist::aof::start_rewrite(ctx.server, false) {
        ctx.out
            .simple("Background append only file rewriting started");
    } else {
        ctx.error("ERR Background append only file rewriting already in progress");
    }
}

/// LASTSAVE: unix time of the last successful save (start time before).
fn lastsave(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    ctx.out
        .int(ctx.server.lastsave.load(Ordering::Relaxed) as i64);
}

/// DUMP key: the value in Redis's payload format, nil when missing.
fn dump(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let opts = rdb::dump_opts(ctx.server);
    let (h, mut g) = ctx.lock(key);
    let payload = g
        .get(h, key, ctx.now)
        .map(|e| rdb::dump_payload(&e.value, &opts));
    drop(g);
    ctx.hit(key, payload.is_some());
    match payload {
        Some(p) => ctx.out.bulk(&p),
        None => ctx.out.null(),
    }
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]
/// (cluster.c restoreCommand): options first, then BUSYKEY, TTL, payload
/// checks, in Redis's order.
pub(crate) fn restore(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let (mut replace, mut absttl) = (false, false);
    let mut idle: Option<i64> = None;
    let mut freq: Option<i64> = None;
    let mut j = 4;
    while j < args.len() {
        let a = args.get(j);
        let more = args.len() - j - 1;
        if a.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if a.eq_ignore_ascii_case(b"absttl") {
            absttl = true;
        } else if a.eq_ignore_ascii_case(b"idletime") && more >= 1 && freq.is_none() {
            let Some(v) = super::arg_i64(ctx, args.get(j + 1)) else {
                return;
            };
            if v < 0 {
                return ctx.error("ERR Invalid IDLETIME value, must be >= 0");
            }
            idle = Some(v);
            j += 1;
        } else if a.eq_ignore_ascii_case(b"freq") && more >= 1 && idle.is_none() {
            let Some(v) = super::arg_i64(ctx, args.get(j + 1)) else {
                return;
            };
            if !(0..=255).contains(&v) {
                return ctx.error("ERR Invalid FREQ value, must be >= 0 and <= 255");
            }
            freq = Some(v);
            j += 1;
        } else {
            return ctx.syntax();
        }
        j += 1;
    }
    let key = args.get(1);
    let (h, mut g) = ctx.lock(key);
    if !replace && g.contains(h, key, ctx.now) {
        drop(g);
        return ctx.error("BUSYKEY Target key name already exists.");
    }
    let Some(mut ttl) = crate::util::parse_i64(args.get(2)) else {
        drop(g);
        return ctx.error(err::NOT_INT);
    };
    if ttl < 0 {
        drop(g);
        return ctx.error("ERR Invalid TTL value, must be >= 0");
    }
    let value: Value = match rdb::restore_value(ctx.server, args.get(3), key) {
        Ok(v) => v,
        Err(PayloadError::VersionOrChecksum) => {
            drop(g);
            return ctx.error("ERR DUMP payload version or checksum are wrong");
        }
        Err(PayloadError::BadFormat) => {
            drop(g);
            return ctx.error("ERR Bad data format");
        }
    };
    let deleted = replace && g.remove(h, key).is_some();
    if ttl != 0 && !absttl {
        ttl = ttl.saturating_add(ctx.now as i64);
    }
    if ttl != 0 && ttl as u64 <= ctx.now {
        // Already expired: the key is not created (a replaced one is gone).
        drop(g);
        ctx.dirty = Some(deleted as u64);
        if deleted {
            ctx.modified(key, crate::events::GENERIC, "del");
            // Propagated as the deletion it was (cluster.c restoreCommand).
            crate::propagate::rewrite(&[b"DEL", key]);
        }
        return ctx.out.ok();
    }
    if ttl != 0 && !absttl && ctx.server.propagation.on() {
        // A relative TTL is propagated as the absolute time it became, with
        // ABSTTL, so the AOF and replicas expire the key when this server
        // does (cluster.c restoreCommand's rewriteClientCommandArgument).
        let mut at = itoa::Buffer::new();
        let at = at.format(ttl).as_bytes();
        let mut rec: Vec<&[u8]> = (0..args.len()).map(|i| args.get(i)).collect();
        rec[2] = at;
        rec.push(b"ABSTTL");
        crate::propagate::rewrite(&rec);
    }
    let mut e = Entry::new(value, ctx.server.keyspace.lru.initial(ctx.now));
    // cluster.c restoreCommand -> objectSetLRUOrLFU: FREQ counts under an
    // LFU policy, IDLETIME under the others.
    if ctx.server.keyspace.lru.lfu() {
        if let Some(f) = freq {
            e.lru = crate::db::lru::with_freq(ctx.now, f.clamp(0, 255) as u8);
        }
    } else if let Some(s) = idle {
        e.lru = crate::db::lru::clock_idle(ctx.now, s.max(0) as u64);
    }
    let old = g.insert_with_expire(h, key, e, ttl as u64);
    drop(g);
    crate::db::lazyfree::free_old(old, crate::db::lazyfree::Reason::ServerDel);
    // cluster.c restoreCommand: dbAdd ("new", also after REPLACE's
    // delete), then "restore".
    ctx.notify(key, crate::events::NEW, "new");
    ctx.modified(key, crate::events::GENERIC, "restore");
    ctx.out.ok();
}
