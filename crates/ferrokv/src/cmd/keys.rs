//! Keyspace commands (redis.io/commands/?group=generic, plus the keyspace
//! half of the server group: DBSIZE, FLUSHDB, FLUSHALL, SWAPDB), following
//! the behaviour of Redis 7.0's db.c, expire.c and object.c.
//!
//! Conventions shared by every handler here:
//! - times on the wire are seconds (EXPIRE, TTL, EXPIRETIME) or milliseconds
//!   (the P* variants); internally an entry's `expire_at` is an absolute
//!   Unix time in ms (0 = no TTL) and `lru` its last access in seconds;
//! - a key whose TTL has passed is never visible: lookups go through
//!   [`Shard::get`](crate::db::Shard::get), which deletes it first (lazy
//!   expiry), and the whole-database walks (KEYS, SCAN, RANDOMKEY) skip or
//!   delete expired keys;
//! - multi-key commands (DEL, UNLINK, EXISTS, TOUCH, RENAME, COPY, MOVE) lock
//!   every shard they touch at once through
//!   [`Keyspace::lock_keys`](crate::db::Keyspace::lock_keys), in the global
//!   order, so they are atomic even across databases;
//! - "read" lookups (EXISTS, TOUCH, TTL, TYPE, OBJECT, COPY's source) count
//!   keyspace hits and misses as Redis's `lookupKeyRead*` does; write
//!   lookups do not;
//! - an access that Redis makes through `lookupKey` without `LOOKUP_NOTOUCH`
//!   (TOUCH, EXPIRE*, PERSIST, RENAME, MOVE, COPY's source) refreshes the
//!   entry's LRU time; EXISTS, TTL, TYPE, OBJECT, KEYS and SCAN do not.

use super::behaviour;
use super::keyspecs;
use super::{acl, cmd, container, err, flags::*, Command, Ctx};
use crate::db::keyspace::{SHARDS, SHARD_BITS};
use crate::db::{hash_key, lazyfree, Entry, Shard, StrValue, Value};
use crate::events::{GENERIC, NEW};
use crate::resp::Args;
use crate::server::Server;
use crate::util::{glob_match, parse_i64, rand_u64};
use std::sync::Arc;

/// OBJECT subcommands.
static OBJECT_SUBS: &[Command] = &[
    cmd(
        "object|encoding",
        3,
        READONLY,
        (2, 2, 1),
        acl::KEYSPACE,
        object_encoding,
    )
    .key_specs(keyspecs::OBJECT_ENCODING)
    .doc(
        "generic",
        "2.2.3",
        "Inspect the internal encoding of a Redis object",
        "O(1)",
    )
    .tips(&["nondeterministic_output"]),
    cmd(
        "object|freq",
        3,
        READONLY,
        (2, 2, 1),
        acl::KEYSPACE,
        object_freq,
    )
    .key_specs(keyspecs::OBJECT_ENCODING)
    .doc(
        "generic",
        "4.0.0",
        "Get the logarithmic access frequency counter of a Redis object",
        "O(1)",
    )
    .tips(&["nondeterministic_output"]),
    cmd(
        "object|help",
        2,
        LOADING | STALE,
        (0, 0, 0),
        acl::KEYSPACE,
        object_help,
    )
    .doc(
        "generic",
        "6.2.0",
        "Show helpful text about the different subcommands",
        "O(1)",
    ),
    cmd(
        "object|idletime",
        3,
        READONLY,
        (2, 2, 1),
        acl::KEYSPACE,
        object_idletime,
    )
    .key_specs(keyspecs::OBJECT_ENCODING)
    .doc(
        "generic",
        "2.2.3",
        "Get the time since a Redis object was last accessed",
        "O(1)",
    )
    .tips(&["nondeterministic_output"]),
    cmd(
        "object|refcount",
        3,
        READONLY,
        (2, 2, 1),
        acl::KEYSPACE,
        object_refcount,
    )
    .key_specs(keyspecs::OBJECT_ENCODING)
    .doc(
        "generic",
        "2.2.3",
        "Get the number of references to the value of the key",
        "O(1)",
    )
    .tips(&["nondeterministic_output"]),
];

const MULTI_SHARD_SUM: &[&str] = &["request_policy:multi_shard", "response_policy:agg_sum"];
const ALL_SHARDS_OK: &[&str] = &["request_policy:all_shards", "response_policy:all_succeeded"];

/// The generic (keyspace) family's table entries. Arity, flags, key
/// positions, ACL categories, tips and docs are those Redis 7.0 reports in
/// COMMAND INFO / COMMAND DOCS.
pub static COMMANDS: &[Command] = &[
    cmd("del", -2, WRITE, (1, -1, 1), acl::KEYSPACE, del).key_specs(keyspecs::DEL)
        .doc(
            "generic",
            "1.0.0",
            "Delete a key",
            "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).",
        )
        .tips(MULTI_SHARD_SUM),
    cmd("unlink", -2, WRITE | FAST, (1, -1, 1), acl::KEYSPACE, unlink).key_specs(keyspecs::DEL)
        .doc(
            "generic",
            "4.0.0",
            "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.",
            "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.",
        )
        .tips(MULTI_SHARD_SUM),
    cmd("exists", -2, READONLY | FAST, (1, -1, 1), acl::KEYSPACE, exists).key_specs(keyspecs::EXISTS)
        .doc(
            "generic",
            "1.0.0",
            "Determine if a key exists",
            "O(N) where N is the number of keys to check.",
        )
        .tips(MULTI_SHARD_SUM),
    cmd("touch", -2, READONLY | FAST, (1, -1, 1), acl::KEYSPACE, touch).key_specs(keyspecs::EXISTS)
        .doc(
            "generic",
            "3.2.1",
            "Alters the last access time of a key(s). Returns the number of existing keys specified.",
            "O(N) where N is the number of keys that will be touched.",
        )
        .tips(MULTI_SHARD_SUM),
    cmd("expire", -3, WRITE | FAST, (1, 1, 1), acl::KEYSPACE, expire).key_specs(keyspecs::EXPIRE).doc(
        "generic",
        "1.0.0",
        "Set a key's time to live in seconds",
        "O(1)",
    ),
    cmd("pexpire", -3, WRITE | FAST, (1, 1, 1), acl::KEYSPACE, pexpire).key_specs(keyspecs::EXPIRE).doc(
        "generic",
        "2.6.0",
        "Set a key's time to live in milliseconds",
        "O(1)",
    ),
    cmd("expireat", -3, WRITE | FAST, (1, 1, 1), acl::KEYSPACE, expireat).key_specs(keyspecs::EXPIRE).doc(
        "generic",
        "1.2.0",
        "Set the expiration for a key as a UNIX timestamp",
        "O(1)",
    ),
    cmd("pexpireat", -3, WRITE | FAST, (1, 1, 1), acl::KEYSPACE, pexpireat).key_specs(keyspecs::EXPIRE).doc(
        "generic",
        "2.6.0",
        "Set the expiration for a key as a UNIX timestamp specified in milliseconds",
        "O(1)",
    ),
    cmd("ttl", 2, READONLY | FAST, (1, 1, 1), acl::KEYSPACE, ttl).key_specs(keyspecs::DUMP)
        .doc(
            "generic",
            "1.0.0",
            "Get the time to live for a key in seconds",
            "O(1)",
        )
        .tips(&["nondeterministic_output"]),
    cmd("pttl", 2, READONLY | FAST, (1, 1, 1), acl::KEYSPACE, pttl).key_specs(keyspecs::DUMP)
        .doc(
            "generic",
            "2.6.0",
            "Get the time to live for a key in milliseconds",
            "O(1)",
        )
        .tips(&["nondeterministic_output"]),
    cmd("expiretime", 2, READONLY | FAST, (1, 1, 1), acl::KEYSPACE, expiretime).key_specs(keyspecs::DUMP).doc(
        "generic",
        "7.0.0",
        "Get the expiration Unix timestamp for a key",
        "O(1)",
    ),
    cmd("pexpiretime", 2, READONLY | FAST, (1, 1, 1), acl::KEYSPACE, pexpiretime).key_specs(keyspecs::DUMP).doc(
        "generic",
        "7.0.0",
        "Get the expiration Unix timestamp for a key in milliseconds",
        "O(1)",
    ),
    cmd("persist", 2, WRITE | FAST, (1, 1, 1), acl::KEYSPACE, persist).key_specs(keyspecs::EXPIRE).doc(
        "generic",
        "2.2.0",
        "Remove the expiration from a key",
        "O(1)",
    ),
    cmd("type", 2, READONLY | FAST, (1, 1, 1), acl::KEYSPACE, type_cmd).key_specs(keyspecs::HEXISTS).doc(
        "generic",
        "1.0.0",
        "Determine the type stored at key",
        "O(1)",
    ),
    cmd("rename", 3, WRITE, (1, 2, 1), acl::KEYSPACE, rename).key_specs(keyspecs::RENAME).doc(
        "generic",
        "1.0.0",
        "Rename a key",
        "O(1)",
    ),
    cmd("renamenx", 3, WRITE | FAST, (1, 2, 1), acl::KEYSPACE, renamenx).key_specs(keyspecs::RENAMENX).doc(
        "generic",
        "1.0.0",
        "Rename a key, only if the new key does not exist",
        "O(1)",
    ),
    cmd("copy", -3, WRITE | DENYOOM, (1, 2, 1), acl::KEYSPACE, copy).behaves(behaviour::OTHER_DBS).key_specs(keyspecs::COPY).doc(
        "generic",
        "6.2.0",
        "Copy a key",
        "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
    ),
    cmd("move", 3, WRITE | FAST, (1, 1, 1), acl::KEYSPACE, move_cmd).behaves(behaviour::OTHER_DBS).key_specs(keyspecs::DECR).doc(
        "generic",
        "1.0.0",
        "Move a key to another database",
        "O(1)",
    ),
    cmd("keys", 2, READONLY, (0, 0, 0), acl::KEYSPACE | acl::DANGEROUS, keys)
        .doc(
            "generic",
            "1.0.0",
            "Find all keys matching the given pattern",
            "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
        )
        .tips(&["request_policy:all_shards", "nondeterministic_output_order"]),
    cmd("scan", -2, READONLY, (0, 0, 0), acl::KEYSPACE, scan)
        .doc(
            "generic",
            "2.8.0",
            "Incrementally iterate the keys space",
            "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
        )
        .tips(&["nondeterministic_output", "request_policy:special"]),
    cmd("randomkey", 1, READONLY, (0, 0, 0), acl::KEYSPACE, randomkey)
        .doc(
            "generic",
            "1.0.0",
            "Return a random key from the keyspace",
            "O(1)",
        )
        .tips(&["request_policy:all_shards", "nondeterministic_output"]),
    cmd("dbsize", 1, READONLY | FAST, (0, 0, 0), acl::KEYSPACE, dbsize)
        .doc(
            "server",
            "1.0.0",
            "Return the number of keys in the selected database",
            "O(1)",
        )
        .tips(&["request_policy:all_shards", "response_policy:agg_sum"]),
    cmd("flushdb", -1, WRITE, (0, 0, 0), acl::KEYSPACE | acl::DANGEROUS, flushdb)
        .behaves(behaviour::OTHER_DBS)
        .doc(
            "server",
            "1.0.0",
            "Remove all keys from the current database",
            "O(N) where N is the number of keys in the selected database",
        )
        .tips(ALL_SHARDS_OK),
    cmd("flushall", -1, WRITE, (0, 0, 0), acl::KEYSPACE | acl::DANGEROUS, flushall)
        .behaves(behaviour::OTHER_DBS)
        .doc(
            "server",
            "1.0.0",
            "Remove all keys from all databases",
            "O(N) where N is the total number of keys in all databases",
        )
        .tips(ALL_SHARDS_OK),
    cmd("swapdb", 3, WRITE | FAST, (0, 0, 0), acl::KEYSPACE | acl::DANGEROUS, swapdb).behaves(behaviour::OTHER_DBS).doc(
        "server",
        "4.0.0",
        "Swaps two Redis databases",
        "O(N) where N is the count of clients watching or blocking on keys from both databases.",
    ),
    container("object", acl::SLOW, OBJECT_SUBS).doc(
        "generic",
        "2.2.3",
        "A container for object introspection commands",
        "Depends on subcommand.",
    ),
];

/// "ERR source and destination objects are the same" (Redis's
/// shared.sameobjecterr).
pub const SAME_OBJECT: &str = "ERR source and destination objects are the same";
/// getIntFromObjectOrReply's range error for 32-bit arguments (DB indexes).
pub const INT_RANGE: &str =
    "ERR value is out of range, value must between -2147483648 and 2147483647";
/// OBJECT FREQ without an LFU maxmemory-policy.
pub const NO_LFU: &str = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
/// OBJECT IDLETIME under an LFU maxmemory-policy.
pub const LFU_NO_IDLE: &str = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";

/// Redis's OBJ_SHARED_REFCOUNT: what OBJECT REFCOUNT reports for the shared
/// small-integer objects.
pub const SHARED_REFCOUNT: i64 = i32::MAX as i64;
/// Integers 0..OBJ_SHARED_INTEGERS are shared objects in Redis.
pub const SHARED_INTEGERS: i64 = 10_000;

/// The server, borrowed for the whole command (copying the reference out of
/// `ctx` lets shard guards live while `ctx` replies).
#[inline]
fn srv<'a>(ctx: &Ctx<'a>) -> &'a Arc<Server> {
    ctx.server
}

/// Parses a 32-bit integer argument as Redis's `getIntFromObjectOrReply`:
/// "not an integer" for a non-integer, the 32-bit range error (or `msg`
/// for both when given) otherwise. Replies with the error and returns None.
fn arg_i32(ctx: &mut Ctx<'_>, a: &[u8], msg: Option<&str>) -> Option<i32> {
    match parse_i64(a) {
        Some(v) if i32::try_from(v).is_ok() => Some(v as i32),
        Some(_) => {
            ctx.error(msg.unwrap_or(INT_RANGE));
            None
        }
        None => {
            ctx.error(msg.unwrap_or(err::NOT_INT));
            None
        }
    }
}

/// Parses a database index argument: a 32-bit integer within
/// `0..databases`, else "ERR DB index is out of range".
fn arg_db(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<usize> {
    let i = arg_i32(ctx, a, None)?;
    if i < 0 || i as usize >= srv(ctx).keyspace.db_count() {
        ctx.error(err::DB_RANGE);
        return None;
    }
    Some(i as usize)
}

/// (database, hash) pairs of the keys `args[from..]` in the client's db.
fn key_hashes(ctx: &Ctx<'_>, args: &Args<'_>, from: usize) -> Vec<(usize, u64)> {
    let db = ctx.client.db;
    (from..args.len())
        .map(|i| (db, hash_key(args.get(i))))
        .collect()
}

// ------------------------------------------------------------ DEL / UNLINK

/// Removes the keys `args[1..]` atomically; returns how many existed and
/// the removed entries (dropped by the caller after the locks are gone, so
/// freeing a large value never stalls the shard).
fn remove_keys(ctx: &mut Ctx<'_>, args: &Args<'_>) -> (i64, Vec<Entry>) {
    let db = ctx.client.db;
    let hashes = key_hashes(ctx, args, 1);
    let mut locks = srv(ctx).keyspace.lock_keys(&hashes);
    let mut freed = Vec::new();
    for (i, &(_, h)) in hashes.iter().enumerate() {
        let key = args.get(i + 1);
        let shard = locks.shard(db, h);
        if shard.get(h, key, ctx.now).is_some() {
            if let Some(e) = shard.remove(h, key) {
                freed.push(e);
                ctx.events().modified(db, key, GENERIC, "del");
            }
        }
    }
    drop(locks);
    (freed.len() as i64, freed)
}

/// DEL key [key ...]: integer, the number of keys removed (atomic across
/// shards; a repeated key counts once). With `lazyfree-lazy-user-del` the
/// large values are freed in the background, as UNLINK does.
fn del(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let (n, freed) = remove_keys(ctx, args);
    for e in freed {
        lazyfree::free_entry(e, lazyfree::Reason::UserDel);
    }
    ctx.out.int(n);
}

/// UNLINK key [key ...]: as DEL, but a value of more than 64 allocations
/// is freed on the background thread (Redis's lazyfree), so a huge value
/// does not delay the reply (INFO `lazyfree_pending_objects` counts it
/// until it is freed).
fn unlink(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let (n, freed) = remove_keys(ctx, args);
    for e in freed {
        lazyfree::free_entry(e, lazyfree::Reason::Unlink);
    }
    ctx.out.int(n);
}

// ------------------------------------------------------- EXISTS / TOUCH

/// EXISTS key [key ...]: integer, how many of the keys exist (a key named
/// twice counts twice). Does not refresh access times.
fn exists(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    count_existing(ctx, args, false);
}

/// TOUCH key [key ...]: integer, how many of the keys exist; refreshes
/// their access time (OBJECT IDLETIME), even under CLIENT NO-TOUCH, as
/// Redis does for TOUCH itself.
fn touch(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    count_existing(ctx, args, true);
}

fn count_existing(ctx: &mut Ctx<'_>, args: &Args<'_>, do_touch: bool) {
    let db = ctx.client.db;
    let hashes = key_hashes(ctx, args, 1);
    let now_t = crate::db::lru::Access::at(&srv(ctx).keyspace.lru, ctx.now);
    let mut locks = srv(ctx).keyspace.lock_keys(&hashes);
    let (mut hits, mut misses) = (0i64, 0i64);
    for (i, &(_, h)) in hashes.iter().enumerate() {
        match locks.shard(db, h).get(h, args.get(i + 1), ctx.now) {
            Some(e) => {
                if do_touch {
                    now_t.record(&mut e.lru);
                }
                hits += 1;
            }
            None => {
                misses += 1;
                ctx.events().keymiss(db, args.get(i + 1));
            }
        }
    }
    drop(locks);
    crate::stats::bump(&ctx.stats.hits, hits as u64);
    crate::stats::bump(&ctx.stats.misses, misses as u64);
    ctx.out.int(hits);
}

// --------------------------------------------------------------- EXPIRE*

/// EXPIRE key seconds [NX|XX|GT|LT].
fn expire(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    expire_generic(ctx, args, true, false);
}

/// PEXPIRE key milliseconds [NX|XX|GT|LT].
fn pexpire(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    expire_generic(ctx, args, true, true);
}

/// EXPIREAT key unix-time-seconds [NX|XX|GT|LT].
fn expireat(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    expire_generic(ctx, args, false, false);
}

/// PEXPIREAT key unix-time-milliseconds [NX|XX|GT|LT].
fn pexpireat(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    expire_generic(ctx, args, false, true);
}

/// The four EXPIRE variants (Redis's `expireGenericCommand`): `relative`
/// adds the command's time, `ms` selects the unit of the argument.
///
/// Order of checks as Redis: options (unknown option named in the error,
/// then NX with XX/GT/LT, then GT with LT), the integer, overflow of the
/// unit conversion or of the addition ("invalid expire time in '<cmd>'
/// command"), then the key. Replies 0 when the key is missing or a
/// condition fails (a key without TTL counts as an infinite TTL: GT never
/// applies to it, LT always does), else 1; a time at or before now deletes
/// the key (still replying 1).
fn expire_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, relative: bool, ms: bool) {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for i in 3..args.len() {
        let o = args.get(i);
        if o.eq_ignore_ascii_case(b"nx") {
            nx = true;
        } else if o.eq_ignore_ascii_case(b"xx") {
            xx = true;
        } else if o.eq_ignore_ascii_case(b"gt") {
            gt = true;
        } else if o.eq_ignore_ascii_case(b"lt") {
            lt = true;
        } else {
            return ctx.error_with("ERR Unsupported option ", o, "");
        }
    }
    if nx && (xx || gt || lt) {
        return ctx.error("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return ctx.error("ERR GT and LT options at the same time are not compatible");
    }
    let Some(mut when) = parse_i64(args.get(2)) else {
        return ctx.not_int();
    };
    let name = String::from_utf8_lossy(args.get(0)).to_ascii_lowercase();
    let bad = format!("ERR invalid expire time in '{name}' command");
    if !ms {
        match when.checked_mul(1000) {
            Some(w) => when = w,
            None => return ctx.error(&bad),
        }
    }
    let base = if relative { ctx.now as i64 } else { 0 };
    match when.checked_add(base) {
        Some(w) => when = w,
        None => return ctx.error(&bad),
    }
    let key = args.get(1);
    let touch = ctx.touch_time();
    let now = ctx.now;
    let (h, mut shard) = ctx.lock(key);
    let Some(e) = shard.get(h, key, now) else {
        drop(shard);
        return ctx.out.int(0);
    };
    if let Some(t) = touch {
        t.record(&mut e.lru);
    }
    let at = shard.expire_at(h, key);
    let current: i64 = if at == 0 { -1 } else { at as i64 };
    let refused = (nx && current != -1)
        || (xx && current == -1)
        || (gt && (current == -1 || when <= current))
        || (lt && current != -1 && when >= current);
    if refused {
        drop(shard);
        return ctx.out.int(0);
    }
    let old = if when <= now as i64 {
        ctx.modified(key, GENERIC, "del");
        shard.remove(h, key)
    } else {
        shard.set_expire(h, key, when as u64);
        ctx.modified(key, GENERIC, "expire");
        None
    };
    drop(shard);
    // Recorded as DEL when already expired, else as PEXPIREAT with the
    // absolute time and the same flags (Redis's expireGenericCommand).
    if old.is_some() {
        crate::propagate::rewrite(&[b"DEL", key]);
    } else if ctx.server.propagation.on() && (relative || !ms) {
        let t = itoa::Buffer::new().format(when).to_string();
        let mut argv: Vec<&[u8]> = vec![b"PEXPIREAT", key, t.as_bytes()];
        argv.extend((3..args.len()).map(|i| args.get(i)));
        crate::propagate::rewrite(&argv);
    }
    lazyfree::free_old(old, lazyfree::Reason::Expire);
    ctx.out.int(1);
}

// ------------------------------------------------------------- TTL family

/// TTL key: seconds to live, rounded to nearest; -1 without TTL, -2 when
/// the key does not exist.
fn ttl(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    ttl_generic(ctx, args, false, false);
}

/// PTTL key: milliseconds to live; -1 without TTL, -2 when missing.
fn pttl(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    ttl_generic(ctx, args, true, false);
}

/// EXPIRETIME key: absolute Unix time of expiry in seconds (rounded to
/// nearest); -1 / -2 as TTL.
fn expiretime(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    ttl_generic(ctx, args, false, true);
}

/// PEXPIRETIME key: absolute Unix time of expiry in ms; -1 / -2 as TTL.
fn pexpiretime(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    ttl_generic(ctx, args, true, true);
}

/// Redis's `ttlGenericCommand`: `ms` for milliseconds, `abs` for the
/// absolute expiry time instead of the remaining time.
fn ttl_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, ms: bool, abs: bool) {
    let key = args.get(1);
    let now = ctx.now;
    let (h, mut shard) = ctx.lock(key);
    let exists = shard.get(h, key, now).is_some();
    let at = exists.then(|| shard.expire_at(h, key));
    drop(shard);
    ctx.hit(key, at.is_some());
    let v = match at {
        None => -2,
        Some(0) => -1,
        Some(at) => {
            let t = if abs {
                at as i64
            } else {
                (at as i64 - now as i64).max(0)
            };
            if ms {
                t
            } else {
                (t + 500) / 1000
            }
        }
    };
    ctx.out.int(v);
}

/// PERSIST key: 1 when a TTL was removed, 0 when the key is missing or has
/// no TTL.
fn persist(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let now = ctx.now;
    let touch = ctx.touch_time();
    let (h, mut shard) = ctx.lock(key);
    let exists = match shard.get(h, key, now) {
        Some(e) => {
            if let Some(t) = touch {
                t.record(&mut e.lru);
            }
            true
        }
        None => false,
    };
    let had = exists && shard.expire_at(h, key) != 0;
    if had {
        shard.set_expire(h, key, 0);
        ctx.modified(key, GENERIC, "persist");
    }
    drop(shard);
    ctx.out.int(had as i64);
}

/// TYPE key: simple string, the type name (`string`, ...) or `none`.
fn type_cmd(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let now = ctx.now;
    let (h, mut shard) = ctx.lock(key);
    let t = shard.get(h, key, now).map(|e| e.value.type_name());
    drop(shard);
    ctx.hit(key, t.is_some());
    ctx.out.simple(t.unwrap_or("none"));
}

// ---------------------------------------------------- RENAME / COPY / MOVE

/// RENAME key newkey: +OK; "ERR no such key" when `key` is missing.
/// Replaces `newkey`; the TTL moves with the value.
fn rename(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    rename_generic(ctx, args, false);
}

/// RENAMENX key newkey: 1 when renamed, 0 when `newkey` exists (or equals
/// `key`); "ERR no such key" when `key` is missing.
fn renamenx(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    rename_generic(ctx, args, true);
}

fn rename_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, nx: bool) {
    let db = ctx.client.db;
    let (src, dst) = (args.get(1), args.get(2));
    let (hs, hd) = (hash_key(src), hash_key(dst));
    let now = ctx.now;
    let touch = ctx.touch_time();
    let mut locks = srv(ctx).keyspace.lock_keys(&[(db, hs), (db, hd)]);
    match locks.shard(db, hs).get(hs, src, now) {
        None => {
            drop(locks);
            return ctx.error(err::NO_SUCH_KEY);
        }
        Some(e) => {
            if let Some(t) = touch {
                t.record(&mut e.lru);
            }
        }
    }
    if src == dst {
        drop(locks);
        return if nx { ctx.out.int(0) } else { ctx.out.ok() };
    }
    let dst_exists = locks.shard(db, hd).get(hd, dst, now).is_some();
    if nx && dst_exists {
        drop(locks);
        return ctx.out.int(0);
    }
    let Some((e, at)) = locks.shard(db, hs).remove_with_expire(hs, src) else {
        drop(locks);
        return ctx.error(err::NO_SUCH_KEY);
    };
    let old = locks.shard(db, hd).insert_with_expire(hd, dst, e, at);
    drop(locks);
    lazyfree::free_old(old, lazyfree::Reason::ServerDel);
    ctx.notify(dst, NEW, "new");
    ctx.touch_key(src);
    ctx.touch_key(dst);
    ctx.notify(src, GENERIC, "rename_from");
    ctx.notify(dst, GENERIC, "rename_to");
    if nx {
        ctx.out.int(1)
    } else {
        ctx.out.ok()
    }
}

/// COPY source destination [DB destination-db] [REPLACE]: 1 when copied, 0
/// when `source` is missing or `destination` exists without REPLACE. The
/// copy keeps the TTL and starts with a fresh access time. Errors: "ERR DB
/// index is out of range", "ERR source and destination objects are the
/// same" (same key in the same database), syntax error for other options.
fn copy(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let src_db = ctx.client.db;
    let mut dst_db = src_db;
    let mut replace = false;
    let mut i = 3;
    while i < args.len() {
        let o = args.get(i);
        if o.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if o.eq_ignore_ascii_case(b"db") && i + 1 < args.len() {
            let Some(d) = arg_db(ctx, args.get(i + 1)) else {
                return;
            };
            dst_db = d;
            i += 1;
        } else {
            return ctx.syntax();
        }
        i += 1;
    }
    if ctx.server.cluster.enabled && (src_db != 0 || dst_db != 0) {
        return ctx.error("ERR Copying to another database is not allowed in cluster mode");
    }
    let (src, dst) = (args.get(1), args.get(2));
    if src_db == dst_db && src == dst {
        return ctx.error(SAME_OBJECT);
    }
    let (hs, hd) = (hash_key(src), hash_key(dst));
    let now = ctx.now;
    let touch = ctx.touch_time();
    let mut locks = srv(ctx).keyspace.lock_keys(&[(src_db, hs), (dst_db, hd)]);
    let src_shard = locks.shard(src_db, hs);
    let mut copy = match src_shard.get(hs, src, now) {
        None => {
            drop(locks);
            ctx.hit(src, false);
            return ctx.out.int(0);
        }
        Some(e) => {
            if let Some(t) = touch {
                t.record(&mut e.lru);
            }
            e.clone()
        }
    };
    let copy_at = src_shard.expire_at(hs, src);
    ctx.hit(src, true);
    copy.lru = ctx.server.keyspace.lru.initial(ctx.now);
    let shard = locks.shard(dst_db, hd);
    if shard.get(hd, dst, now).is_some() && !replace {
        drop(locks);
        return ctx.out.int(0);
    }
    let old = shard.insert_with_expire(hd, dst, copy, copy_at);
    drop(locks);
    lazyfree::free_old(old, lazyfree::Reason::ServerDel);
    ctx.events().notify(dst_db, dst, NEW, "new");
    ctx.events().modified(dst_db, dst, GENERIC, "copy_to");
    ctx.out.int(1);
}

/// MOVE key db: 1 when moved (with its TTL), 0 when the key is missing or
/// already exists in the target database. Errors: "ERR DB index is out of
/// range", "ERR source and destination objects are the same".
fn move_cmd(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if ctx.server.cluster.enabled {
        return ctx.error("ERR MOVE is not allowed in cluster mode");
    }
    let src_db = ctx.client.db;
    let Some(dst_db) = arg_db(ctx, args.get(2)) else {
        return;
    };
    if src_db == dst_db {
        return ctx.error(SAME_OBJECT);
    }
    let key = args.get(1);
    let h = hash_key(key);
    let now = ctx.now;
    let touch = ctx.touch_time();
    let mut locks = srv(ctx).keyspace.lock_keys(&[(src_db, h), (dst_db, h)]);
    match locks.shard(src_db, h).get(h, key, now) {
        None => {
            drop(locks);
            return ctx.out.int(0);
        }
        Some(e) => {
            if let Some(t) = touch {
                t.record(&mut e.lru);
            }
        }
    }
    if locks.shard(dst_db, h).get(h, key, now).is_some() {
        drop(locks);
        return ctx.out.int(0);
    }
    let Some((e, at)) = locks.shard(src_db, h).remove_with_expire(h, key) else {
        drop(locks);
        return ctx.out.int(0);
    };
    locks.shard(dst_db, h).insert_with_expire(h, key, e, at);
    drop(locks);
    ctx.events().notify(dst_db, key, NEW, "new");
    ctx.events().touch(src_db, key);
    ctx.events().touch(dst_db, key);
    ctx.events().notify(src_db, key, GENERIC, "move_from");
    ctx.events().notify(dst_db, key, GENERIC, "move_to");
    ctx.out.int(1);
}

// ------------------------------------------------------ KEYS / SCAN / ...

/// KEYS pattern: array of every live key matching the glob `pattern`
/// (Redis's `stringmatchlen` rules), in no particular order. Expired keys
/// are never returned. Runs under all the database's shard locks, so it is
/// a consistent snapshot.
fn keys(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let pat = args.get(1);
    let all = pat == b"*";
    let now = ctx.now;
    let guards = ctx.db().lock_all();
    let mut out: Vec<&[u8]> = Vec::new();
    for g in guards.iter() {
        for (k, _, at) in g.iter_with_expire() {
            if (at == 0 || at >= now) && (all || glob_match(pat, k, false)) {
                out.push(k);
            }
        }
    }
    ctx.out.bulk_array(out.into_iter());
    drop(guards);
}

/// Parses a SCAN cursor as Redis 7.0 does (`strtoul` in base 10, refusing a
/// leading space, trailing garbage and overflow): optional sign, digits; a
/// negative value wraps modulo 2^64 as in C; the empty string is 0; the
/// string ends at its first NUL byte, as for C. None → "ERR invalid cursor".
pub fn parse_scan_cursor(s: &[u8]) -> Option<u64> {
    let s = match s.iter().position(|&b| b == 0) {
        Some(p) => &s[..p],
        None => s,
    };
    if s.is_empty() {
        return Some(0);
    }
    if matches!(s[0], b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        return None;
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Splits a database SCAN cursor into (shard index, cursor inside that
/// shard's dict). Layout: the low [`SHARD_BITS`] bits are the shard, the
/// rest the shard's reverse-binary dict cursor. Any u64 is a valid cursor.
#[inline]
pub fn split_cursor(c: u64) -> (usize, u64) {
    ((c & (SHARDS as u64 - 1)) as usize, c >> SHARD_BITS)
}

/// Inverse of [`split_cursor`].
#[inline]
pub fn join_cursor(shard: usize, dict_cursor: u64) -> u64 {
    (dict_cursor << SHARD_BITS) | shard as u64
}

/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]: a two-element
/// array, the next cursor (bulk string, "0" when the iteration is complete)
/// and an array of keys.
///
/// The iteration visits shard 0..SHARDS in order and, inside each shard,
/// its dict with Redis's reverse-binary cursor, which survives table growth
/// and shrinking between calls; so every key present from the start to the
/// end of a full iteration is returned at least once (some may be returned
/// more than once). Each call examines about COUNT keys (up to 10×COUNT
/// bucket visits) before MATCH/TYPE filtering, as Redis does; expired keys
/// met on the way are deleted and never returned. Errors: "ERR invalid
/// cursor", "ERR value is not an integer or out of range" for COUNT, syntax
/// error for COUNT < 1 or an unknown option. An unknown TYPE matches
/// nothing.
fn scan(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(cursor) = parse_scan_cursor(args.get(1)) else {
        return ctx.error("ERR invalid cursor");
    };
    let mut count: i64 = 10;
    let mut pat: Option<&[u8]> = None;
    let mut typ: Option<&[u8]> = None;
    let mut i = 2;
    while i < args.len() {
        let o = args.get(i);
        let has_arg = i + 1 < args.len();
        if o.eq_ignore_ascii_case(b"count") && has_arg {
            let Some(c) = super::arg_i64(ctx, args.get(i + 1)) else {
                return;
            };
            if c < 1 {
                return ctx.syntax();
            }
            count = c;
        } else if o.eq_ignore_ascii_case(b"match") && has_arg {
            let p = args.get(i + 1);
            pat = if p == b"*" { None } else { Some(p) };
        } else if o.eq_ignore_ascii_case(b"type") && has_arg {
            typ = Some(args.get(i + 1));
        } else {
            return ctx.syntax();
        }
        i += 2;
    }
    let now = ctx.now;
    let db = ctx.db();
    let count = count as usize;
    let max_steps = count.saturating_mul(10);
    let (mut shard_i, mut dc) = split_cursor(cursor);
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let mut expired: Vec<Vec<u8>> = Vec::new();
    let mut steps = 0usize;
    let mut found = 0usize;
    let next = loop {
        let mut g = db.shard_at(shard_i).lock();
        if g.is_empty() {
            dc = 0;
        } else {
            loop {
                dc = g.scan_step_with_expire(dc, |k, e, at| {
                    found += 1;
                    if at != 0 && at < now {
                        expired.push(k.to_vec());
                        return;
                    }
                    if pat.is_some_and(|p| !glob_match(p, k, false)) {
                        return;
                    }
                    if typ.is_some_and(|t| !e.value.type_name().as_bytes().eq_ignore_ascii_case(t))
                    {
                        return;
                    }
                    seen.push(k.to_vec());
                });
                steps += 1;
                if dc == 0 || found >= count || steps >= max_steps {
                    break;
                }
            }
            for k in expired.drain(..) {
                let h = hash_key(&k);
                // Lazy expiry: the lookup deletes the key and counts it.
                let _ = g.get(h, &k, now);
            }
        }
        drop(g);
        if dc == 0 {
            shard_i += 1;
            if shard_i == SHARDS {
                break 0;
            }
        }
        if found >= count || steps >= max_steps {
            break join_cursor(shard_i, dc);
        }
    };
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.bulk_array(seen.iter().map(Vec::as_slice));
}

/// RANDOMKEY: a random live key (bulk string) or nil when the database is
/// empty. Expired keys drawn are deleted and another is drawn, so an
/// expired key is never returned. A shard is chosen with probability
/// proportional to its size, then a key inside it as Redis's
/// `dictGetRandomKey` does.
fn randomkey(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    let now = ctx.now;
    let mut guards = ctx.db().lock_all();
    // Expired keys a read may not delete (the AOF or replicas are on, see
    // Shard::get): drawn ones are left out, and when every key is one of
    // them there is none to return (they are deleted after the command).
    let mut hidden: std::collections::HashSet<Vec<u8>> = Default::default();
    let found = loop {
        let total: usize = guards.iter().map(|g| g.len()).sum();
        if total <= hidden.len() {
            break None;
        }
        let mut r = (rand_u64() % total as u64) as usize;
        let mut idx = 0;
        for (i, g) in guards.iter().enumerate() {
            if r < g.len() {
                idx = i;
                break;
            }
            r -= g.len();
        }
        let g: &mut Shard = &mut guards[idx];
        let Some(k) = g.random_key() else {
            continue;
        };
        if hidden.contains(&k) {
            continue;
        }
        let h = hash_key(&k);
        if g.get(h, &k, now).is_some() {
            break Some(k);
        }
        if g.contains_raw(h, &k) {
            hidden.insert(k);
        }
    };
    drop(guards);
    match found {
        Some(k) => ctx.out.bulk(&k),
        None => ctx.out.null(),
    }
}

/// DBSIZE: integer, number of keys in the selected database (keys that have
/// expired but were not yet reclaimed are counted, as in Redis).
fn dbsize(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    let n = ctx.db().len();
    ctx.out.int(n as i64);
}

/// Parses FLUSHDB / FLUSHALL's optional SYNC|ASYNC (Redis's
/// `getFlushCommandFlags`): Some(async?), None for a syntax error. Without
/// the option `lazyfree-lazy-user-flush` decides.
fn flush_mode(args: &Args<'_>) -> Option<bool> {
    match args.len() {
        1 => Some(lazyfree::lazy_user_flush()),
        2 if args.get(1).eq_ignore_ascii_case(b"sync") => Some(false),
        2 if args.get(1).eq_ignore_ascii_case(b"async") => Some(true),
        _ => None,
    }
}

/// FLUSHDB [ASYNC|SYNC]: +OK after removing every key of the selected
/// database atomically (all its shards locked at once). ASYNC frees the
/// memory on a background thread.
fn flushdb(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(lazy) = flush_mode(args) else {
        return ctx.syntax();
    };
    let mut taken = Vec::new();
    {
        let mut reg = ctx.server.tx.lock_registry(ctx.server.keyspace.events());
        let mut guards = ctx.db().lock_all();
        if let Some(r) = reg.as_mut() {
            crate::tx::touch_db(r, ctx.client.db, &guards, None, ctx.now);
        }
        for g in guards.iter_mut() {
            taken.push(g.take());
        }
    }
    // Redis's server.dirty += keys removed.
    ctx.dirty = Some(taken.iter().map(|s| s.len() as u64).sum());
    // Recorded even when the database was empty (Redis's
    // forceCommandPropagation), so replicas flush too.
    crate::propagate::mark_dirty();
    if lazy {
        let keys = taken.iter().map(|s| s.len()).sum();
        lazyfree::free_databases(taken, keys);
    } else {
        drop(taken);
    }
    if ctx.events().tracking() {
        crate::tracking::flushed(&srv(ctx).tracking_env(), lazy);
    }
    ctx.out.ok();
}

/// FLUSHALL [ASYNC|SYNC]: +OK after removing every key of every database
/// atomically (all shards of all databases locked in the global order).
fn flushall(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(lazy) = flush_mode(args) else {
        return ctx.syntax();
    };
    // A running BGSAVE is stopped before the keyspace is emptied: it reads
    // the live keyspace (no fork), and would otherwise finish at once over
    // the emptied shards and write a dump (Redis kills its child, which has
    // its own copy).
    crate::persist::rdb::cancel_bgsave(srv(ctx));
    let ks = &srv(ctx).keyspace;
    let mut taken = Vec::new();
    {
        let mut reg = ctx.server.tx.lock_registry(ctx.server.keyspace.events());
        let mut all: Vec<_> = (0..ks.db_count()).map(|d| ks.db(d).lock_all()).collect();
        if let Some(r) = reg.as_mut() {
            for (d, guards) in all.iter().enumerate() {
                crate::tx::touch_db(r, d, guards, None, ctx.now);
            }
        }
        for guards in all.iter_mut() {
            for g in guards.iter_mut() {
                if !g.is_empty() {
                    taken.push(g.take());
                }
            }
        }
    }
    let removed: u64 = taken.iter().map(|s| s.len() as u64).sum();
    // A running BGSAVE is stopped, and with save points an (empty)
    // snapshot is saved at once (Redis's flushAllDataAndResetRDB).
    // Each removed key is a change (emptyData); the save resets the
    // counter and FLUSHALL adds nothing after it: rdb_changes_since_last_save
    // is 0 (other.tcl "FLUSHALL should reset the dirty counter to 0 if we
    // enable save"). It is propagated all the same (mark_dirty, Redis's
    // forceCommandPropagation).
    let saved = crate::persist::rdb::on_flushall(srv(ctx));
    ctx.dirty = Some(if saved { 0 } else { removed });
    crate::propagate::mark_dirty();
    if lazy {
        let keys = taken.iter().map(|s| s.len()).sum();
        lazyfree::free_databases(taken, keys);
    } else {
        drop(taken);
    }
    if ctx.events().tracking() {
        crate::tracking::flushed(&srv(ctx).tracking_env(), lazy);
    }
    ctx.out.ok();
}

/// SWAPDB index1 index2: +OK after atomically exchanging the contents of two
/// databases (connections stay on their index and see the other data).
/// Errors: "ERR invalid first DB index" / "ERR invalid second DB index" for
/// a non-integer, "ERR DB index is out of range".
fn swapdb(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if ctx.server.cluster.enabled {
        return ctx.error("ERR SWAPDB is not allowed in cluster mode");
    }
    let Some(a) = arg_i32(ctx, args.get(1), Some("ERR invalid first DB index")) else {
        return;
    };
    let Some(b) = arg_i32(ctx, args.get(2), Some("ERR invalid second DB index")) else {
        return;
    };
    let n = srv(ctx).keyspace.db_count();
    if a < 0 || b < 0 || a as usize >= n || b as usize >= n {
        return ctx.error(err::DB_RANGE);
    }
    let (a, b, now) = (a as usize, b as usize, ctx.now);
    let mut reg = ctx.server.tx.lock_registry(ctx.server.keyspace.events());
    srv(ctx).keyspace.swap_dbs_with(a, b, |lo, hi| {
        if let Some(r) = reg.as_mut() {
            let (l, h) = (a.min(b), a.max(b));
            crate::tx::touch_db(r, l, lo, Some(hi), now);
            crate::tx::touch_db(r, h, hi, Some(lo), now);
        }
    });
    drop(reg);
    // Redis's swapdbCommand: server.dirty++ (recorded even for one index).
    crate::propagate::mark_dirty();
    ctx.out.ok();
}

// ----------------------------------------------------------------- OBJECT

/// True when maxmemory-policy is an LFU policy (the directive may not exist
/// yet: then it is not).
fn lfu_policy(ctx: &Ctx<'_>) -> bool {
    ctx.server.keyspace.lru.lfu()
}

/// Looks the key of OBJECT's subcommands up without touching it; returns
/// `f(entry)` or replies nil (and returns None) when it is missing.
fn object_lookup<T>(ctx: &mut Ctx<'_>, args: &Args<'_>, f: impl FnOnce(&Entry) -> T) -> Option<T> {
    let key = args.get(2);
    let now = ctx.now;
    let (h, mut shard) = ctx.lock(key);
    let r = shard.get(h, key, now).map(|e| f(e));
    drop(shard);
    ctx.count_lookup(r.is_some()); // LOOKUP_NONOTIFY: no keymiss
    if r.is_none() {
        ctx.out.null();
    }
    r
}

/// OBJECT ENCODING key: bulk string, Redis's encoding name (`int`,
/// `embstr`, `raw`, ...); nil when missing.
fn object_encoding(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if let Some(enc) = object_lookup(ctx, args, |e| e.value.encoding()) {
        ctx.out.bulk(enc.as_bytes());
    }
}

/// OBJECT REFCOUNT key: integer; Redis shares the objects of the integers
/// 0..9999 and reports them as 2147483647, everything else as 1; nil when
/// missing.
fn object_refcount(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let rc = object_lookup(ctx, args, |e| match &e.value {
        Value::Str(StrValue::Int(n))
            if (0..SHARED_INTEGERS).contains(n) && shared_ints(ctx.server) =>
        {
            SHARED_REFCOUNT
        }
        #[allow(unreachable_patterns)]
        _ => 1,
    });
    if let Some(rc) = rc {
        ctx.out.int(rc);
    }
}

/// Redis shares small integers unless maxmemory is set with an LRU or LFU
/// policy (object.c tryObjectEncoding, MAXMEMORY_FLAG_NO_SHARED_INTEGERS).
fn shared_ints(server: &Server) -> bool {
    server.evict.maxmemory() == 0 || !server.evict.policy().no_shared_integers()
}

/// OBJECT IDLETIME key: integer, seconds since the key was last accessed
/// (OBJECT itself does not count as an access); nil when missing; an error
/// under an LFU maxmemory-policy.
fn object_idletime(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let now = ctx.now;
    let Some(lru) = object_lookup(ctx, args, |e| e.lru) else {
        return;
    };
    if lfu_policy(ctx) {
        return ctx.error(LFU_NO_IDLE);
    }
    ctx.out.int(crate::db::lru::idle_secs(lru, now) as i64);
}

/// OBJECT FREQ key: the LFU counter (0-255, logarithmic), decayed to now
/// as object.c does (`LFUDecrAndReturn`). Access frequency is only tracked
/// under an LFU maxmemory-policy; otherwise Redis's error. Nil when missing.
fn object_freq(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let t = crate::db::lru::clock(ctx.now);
    let Some(lru) = object_lookup(ctx, args, |e| e.lru) else {
        return;
    };
    if !lfu_policy(ctx) {
        return ctx.error(NO_LFU);
    }
    ctx.out
        .int(i64::from(ctx.server.keyspace.lru.decay(lru, t)));
}

/// OBJECT HELP: array of simple strings, Redis's help text.
fn object_help(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    const LINES: &[&str] = &[
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
        "HELP",
        "    Prints this help.",
    ];
    ctx.out.array(LINES.len());
    for l in LINES {
        ctx.out.simple(l);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_cursor_parsing_follows_strtoul() {
        assert_eq!(parse_scan_cursor(b"0"), Some(0));
        assert_eq!(parse_scan_cursor(b""), Some(0));
        assert_eq!(parse_scan_cursor(b"007"), Some(7));
        assert_eq!(parse_scan_cursor(b"+5"), Some(5));
        assert_eq!(parse_scan_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_scan_cursor(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_scan_cursor(b"18446744073709551616"), None);
        assert_eq!(parse_scan_cursor(b"-"), None);
        assert_eq!(parse_scan_cursor(b"+"), None);
        assert_eq!(parse_scan_cursor(b" 1"), None);
        assert_eq!(parse_scan_cursor(b"1 "), None);
        assert_eq!(parse_scan_cursor(b"1.5"), None);
        assert_eq!(parse_scan_cursor(b"x"), None);
        assert_eq!(parse_scan_cursor(b"12\0zz"), Some(12));
    }

    #[test]
    fn cursor_layout_roundtrips() {
        for &(s, d) in &[(0usize, 0u64), (1, 0), (255, 0), (0, 1), (17, 12345)] {
            assert_eq!(split_cursor(join_cursor(s, d)), (s, d));
        }
        assert_eq!(join_cursor(0, 0), 0);
        let (s, _) = split_cursor(u64::MAX);
        assert!(s < SHARDS);
    }

    #[test]
    fn table_entries_are_consistent() {
        for c in COMMANDS {
            assert!(c.arity != 0, "{}", c.name);
            assert!(!c.summary.is_empty(), "{}", c.name);
            for s in c.subcommands {
                assert!(s.name.starts_with("object|"));
                assert!(!s.summary.is_empty());
            }
        }
        let names: std::collections::HashSet<_> = COMMANDS.iter().map(|c| c.name).collect();
        assert_eq!(names.len(), COMMANDS.len());
    }
}
