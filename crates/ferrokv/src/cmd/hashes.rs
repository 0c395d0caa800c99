//! Hash commands (redis.io/commands/?group=hash): HSET, HSETNX, HMSET, HGET,
//! HMGET, HGETALL, HKEYS, HVALS, HDEL, HLEN, HEXISTS, HSTRLEN, HINCRBY,
//! HINCRBYFLOAT, HSCAN and HRANDFIELD, following Redis 7.0's t_hash.c as
//! observed on redis-server 7.0.15.
//!
//! Conventions:
//! - reads (HGET, HMGET, HLEN, HSTRLEN, HEXISTS, HKEYS, HVALS, HGETALL, HSCAN,
//!   HRANDFIELD) count keyspace hits/misses as `lookupKeyRead` does; writes
//!   do not; every access refreshes the entry's LRU time unless the client
//!   set CLIENT NO-TOUCH;
//! - argument errors that Redis detects before the key lookup (an odd HSET
//!   argument count, a bad HINCRBY increment, a bad HSCAN cursor, a bad
//!   HRANDFIELD count) win over WRONGTYPE; HSCAN options are parsed after the
//!   lookup, so a missing key answers the empty scan whatever they are;
//! - a write that creates a hash builds it aside and inserts it only when it
//!   holds a field, and a hash emptied by HDEL is deleted, so no empty hash
//!   is ever visible;
//! - encodings and conversion ([`HashValue`]) use hash-max-listpack-entries
//!   and hash-max-listpack-value as currently configured;
//! - fields with a TTL (hash-field expiration, cmd/hash_ttl.rs) that has
//!   passed are gone for every command: a command that names the field
//!   deletes it first where it may (Redis 7.4's lazy expiry: an `HDEL` is
//!   recorded, `hexpired` notified, and the key deleted with its last
//!   field), else only hides it; whole-hash reads skip them; HLEN still
//!   counts them until they are deleted, as Redis's does.

use super::keyspecs;
use super::{acl, cmd, err, flags::*, Command, Ctx};
use crate::db::hash::{HashValue, Limits};
use crate::db::{Entry, Shard, Value};
use crate::events::{GENERIC, HASH, NEW};
use crate::resp::Args;
use crate::util::{glob_match, parse_i64, rand_u64};
use parking_lot::MutexGuard;
use std::sync::atomic::Ordering;

/// The hashes family's table entries (arity, flags, key positions, ACL
/// categories, docs and tips as Redis 7.0's COMMAND INFO / COMMAND DOCS).
pub static COMMANDS: &[Command] = &[
    cmd("hset", -4, WRITE | DENYOOM | FAST, (1, 1, 1), acl::HASH, hset).key_specs(keyspecs::EXPIRE).doc(
        "hash",
        "2.0.0",
        "Set the string value of a hash field",
        "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.",
    ),
    cmd("hsetnx", 4, WRITE | DENYOOM | FAST, (1, 1, 1), acl::HASH, hsetnx).key_specs(keyspecs::APPEND).doc(
        "hash",
        "2.0.0",
        "Set the value of a hash field, only if the field does not exist",
        "O(1)",
    )
    .key_flags(&["RW", "insert"]),
    cmd("hget", 3, READONLY | FAST, (1, 1, 1), acl::HASH, hget).key_specs(keyspecs::DUMP).doc(
        "hash",
        "2.0.0",
        "Get the value of a hash field",
        "O(1)",
    ),
    cmd("hmset", -4, WRITE | DENYOOM | FAST, (1, 1, 1), acl::HASH, hmset).key_specs(keyspecs::EXPIRE).doc(
        "hash",
        "2.0.0",
        "Set multiple hash fields to multiple values",
        "O(N) where N is the number of fields being set.",
    ),
    cmd("hmget", -3, READONLY | FAST, (1, 1, 1), acl::HASH, hmget).key_specs(keyspecs::DUMP).doc(
        "hash",
        "2.0.0",
        "Get the values of all the given hash fields",
        "O(N) where N is the number of fields being requested.",
    ),
    cmd("hgetall", 2, READONLY, (1, 1, 1), acl::HASH, hgetall).key_specs(keyspecs::DUMP)
        .doc(
            "hash",
            "2.0.0",
            "Get all the fields and values in a hash",
            "O(N) where N is the size of the hash.",
        )
        .tips(&["nondeterministic_output_order"]),
    cmd("hdel", -3, WRITE | FAST, (1, 1, 1), acl::HASH, hdel).key_specs(keyspecs::HDEL).doc(
        "hash",
        "2.0.0",
        "Delete one or more hash fields",
        "O(N) where N is the number of fields to be removed.",
    )
    .key_flags(&["RW", "delete"]),
    cmd("hlen", 2, READONLY | FAST, (1, 1, 1), acl::HASH, hlen).key_specs(keyspecs::HEXISTS).doc(
        "hash",
        "2.0.0",
        "Get the number of fields in a hash",
        "O(1)",
    )
    .key_flags(&["RO"]),
    cmd("hexists", 3, READONLY | FAST, (1, 1, 1), acl::HASH, hexists).key_specs(keyspecs::HEXISTS).doc(
        "hash",
        "2.0.0",
        "Determine if a hash field exists",
        "O(1)",
    )
    .key_flags(&["RO"]),
    cmd("hkeys", 2, READONLY, (1, 1, 1), acl::HASH, hkeys).key_specs(keyspecs::DUMP)
        .doc(
            "hash",
            "2.0.0",
            "Get all the fields in a hash",
            "O(N) where N is the size of the hash.",
        )
        .tips(&["nondeterministic_output_order"]),
    cmd("hvals", 2, READONLY, (1, 1, 1), acl::HASH, hvals).key_specs(keyspecs::DUMP)
        .doc(
            "hash",
            "2.0.0",
            "Get all the values in a hash",
            "O(N) where N is the size of the hash.",
        )
        .tips(&["nondeterministic_output_order"]),
    cmd("hincrby", 4, WRITE | DENYOOM | FAST, (1, 1, 1), acl::HASH, hincrby).key_specs(keyspecs::DECR).doc(
        "hash",
        "2.0.0",
        "Increment the integer value of a hash field by the given number",
        "O(1)",
    )
    .key_flags(&["RW", "access", "update"]),
    cmd(
        "hincrbyfloat",
        4,
        WRITE | DENYOOM | FAST,
        (1, 1, 1),
        acl::HASH,
        hincrbyfloat,
    ).key_specs(keyspecs::DECR)
    .doc(
        "hash",
        "2.6.0",
        "Increment the float value of a hash field by the given amount",
        "O(1)",
    )
    .key_flags(&["RW", "access", "update"]),
    cmd("hstrlen", 3, READONLY | FAST, (1, 1, 1), acl::HASH, hstrlen).key_specs(keyspecs::HEXISTS).doc(
        "hash",
        "3.2.0",
        "Get the length of the value of a hash field",
        "O(1)",
    )
    .key_flags(&["RO"]),
    cmd("hscan", -3, READONLY, (1, 1, 1), acl::HASH, hscan).key_specs(keyspecs::DUMP)
        .doc(
            "hash",
            "2.8.0",
            "Incrementally iterate hash fields and associated values",
            "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        )
        .tips(&["nondeterministic_output"]),
    cmd("hrandfield", -2, READONLY, (1, 1, 1), acl::HASH, hrandfield).key_specs(keyspecs::DUMP)
        .doc(
            "hash",
            "6.2.0",
            "Get one or multiple random fields from a hash",
            "O(N) where N is the number of fields returned",
        )
        .tips(&["nondeterministic_output"]),
];

/// "ERR hash value is not an integer" (HINCRBY on a non-integer field).
pub const ERR_NOT_INT_HASH: &str = "ERR hash value is not an integer";
/// "ERR hash value is not a float" (HINCRBYFLOAT on a non-float field).
pub const ERR_NOT_FLOAT_HASH: &str = "ERR hash value is not a float";
/// "ERR increment would produce NaN or Infinity".
pub const ERR_NAN_INF_RESULT: &str = "ERR increment would produce NaN or Infinity";
/// "ERR value is NaN or Infinity" (HINCRBYFLOAT with an infinite increment).
pub const ERR_NAN_INF_ARG: &str = "ERR value is NaN or Infinity";
/// "ERR value is out of range" (HRANDFIELD count beyond the reply limits).
pub const ERR_OUT_OF_RANGE: &str = "ERR value is out of range";

// ---------------------------------------------------------------- helpers

/// The conversion thresholds as currently configured.
#[inline]
pub(super) fn limits(ctx: &Ctx<'_>) -> Limits {
    let live = &ctx.server.live;
    Limits {
        max_entries: live.hash_max_listpack_entries.load(Ordering::Relaxed),
        max_value: live.hash_max_listpack_value.load(Ordering::Relaxed),
    }
}

use super::opt_is;

/// The result of looking a key up for a hash command.
pub(super) enum Look<'s> {
    /// No such key (or it expired).
    Missing,
    /// The key holds another type.
    Wrong,
    /// The key's hash.
    Hash(&'s mut HashValue),
}

/// Looks `key` up (lazy expiry first), refreshes its LRU time and, when
/// `read` is set, counts a keyspace hit or miss as `lookupKeyRead` does.
pub(super) fn lookup<'s>(
    ctx: &Ctx<'_>,
    shard: &'s mut Shard,
    h: u64,
    key: &[u8],
    read: bool,
) -> Look<'s> {
    let t = ctx.touch_time();
    let found = shard.get(h, key, ctx.now);
    if read {
        ctx.hit(key, found.is_some());
    }
    match found {
        None => Look::Missing,
        Some(e) => {
            if let Some(t) = t {
                t.record(&mut e.lru);
            }
            match &mut e.value {
                Value::Hash(hv) => Look::Hash(hv),
                _ => Look::Wrong,
            }
        }
    }
}

/// What the lazy expiry of one field found ([`expire_field`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FieldAge {
    /// Present and not expired, or absent.
    Live,
    /// Its TTL had passed: it was deleted (and its `HDEL` recorded).
    Deleted,
    /// Its TTL had passed but this command may not delete (a read while
    /// effects are recorded): it is only treated as absent.
    Hidden,
}

/// The lazy expiry of `field` of the hash at `key` (Redis 7.4's
/// `hashTypeGetValue` with `HFE_LAZY_EXPIRE`): when its TTL has passed, it
/// is deleted where this command may delete (no stream of effects, or a
/// write context that records `HDEL key field`), else hidden. The caller
/// ends with [`lazy_done`].
pub(super) fn expire_field(
    ctx: &Ctx<'_>,
    hv: &mut HashValue,
    key: &[u8],
    field: &[u8],
) -> FieldAge {
    if !hv.is_expired(field, ctx.now) {
        return FieldAge::Live;
    }
    if ctx.server.propagation.on() && !crate::propagate::field_deleted(ctx.client.db, key, field) {
        return FieldAge::Hidden;
    }
    hv.remove(field);
    ctx.server.keyspace.count_expired_fields(1);
    FieldAge::Deleted
}

/// After fields of the hash at `key` were deleted by lazy expiry
/// (`expired`): deletes the key when no field is left (else records its
/// new earliest field TTL in the shard's index), then notifies
/// `hexpired` (and `del`), touching its watchers, as Redis 7.4 does.
pub(super) fn lazy_done(
    ctx: &Ctx<'_>,
    mut shard: MutexGuard<'_, Shard>,
    h: u64,
    key: &[u8],
    expired: bool,
) {
    if !expired {
        return;
    }
    let (empty, min) = match shard.peek_raw(h, key) {
        Some(Entry {
            value: Value::Hash(hv),
            ..
        }) => (hv.is_empty(), hv.min_field_ttl()),
        _ => (false, None),
    };
    if empty {
        shard.remove(h, key);
    } else {
        // The key's earliest field TTL moved (or went): kept exact for
        // active expiry and for the count that decides the RDB version.
        shard.note_field_ttls(key, min);
    }
    drop(shard);
    ctx.modified(key, HASH, "hexpired");
    if empty {
        ctx.notify(key, GENERIC, "del");
    }
}

/// Stores a hash created by a write, unless it stayed empty.
fn insert_new(ctx: &Ctx<'_>, shard: &mut Shard, h: u64, key: &[u8], hv: HashValue) {
    if !hv.is_empty() {
        shard.insert(
            h,
            key,
            Entry::new(Value::Hash(hv), ctx.server.keyspace.lru.initial(ctx.now)),
        );
    }
}

/// Writes one pair as HRANDFIELD / HGETALL-like replies do: in RESP3 with
/// values, a two-element array; otherwise the field, then the value when
/// `with_values`.
#[inline]
fn reply_pair(ctx: &mut Ctx<'_>, f: &[u8], v: &[u8], with_values: bool) {
    if with_values && ctx.out.resp3 {
        ctx.out.array(2);
    }
    ctx.out.bulk(f);
    if with_values {
        ctx.out.bulk(v);
    }
}

// ---------------------------------------------------------------- HSET family

/// HSET key field value [field value ...] → number of fields added;
/// HMSET → +OK. An unpaired field is "ERR wrong number of arguments for
/// '<cmd>' command" before any lookup. A listpack hash converts before the
/// writes when any argument is longer than hash-max-listpack-value, and as
/// soon as it holds more than hash-max-listpack-entries fields
/// (`hsetCommand`, `hashTypeTryConversion`).
fn hset_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, name: &str, ok_reply: bool) {
    if args.len() % 2 == 1 {
        return ctx.error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
    }
    let key = args.get(1);
    let lim = limits(ctx);
    let (h, mut shard) = ctx.lock(key);
    let write = |hv: &mut HashValue| {
        let pairs = (2..args.len())
            .step_by(2)
            .map(|i| (args.get(i), args.get(i + 1)));
        hv.set_many(pairs, lim) as i64
    };
    let created = match lookup(ctx, &mut shard, h, key, false) {
        Look::Wrong => {
            drop(shard);
            return ctx.wrongtype();
        }
        Look::Hash(hv) => write(hv),
        Look::Missing => {
            let mut hv = HashValue::new();
            let n = write(&mut hv);
            insert_new(ctx, &mut shard, h, key, hv);
            ctx.notify(key, NEW, "new");
            n
        }
    };
    drop(shard);
    // t_hash.c hsetCommand: signals even when no value changed.
    ctx.modified(key, HASH, "hset");
    if ok_reply {
        ctx.out.ok();
    } else {
        ctx.out.int(created);
    }
}

fn hset(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    hset_generic(ctx, args, "hset", false);
}

fn hmset(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    hset_generic(ctx, args, "hmset", true);
}

/// HSETNX key field value → 1 when the field was added, 0 when it existed
/// (then nothing changes, not even the encoding).
fn hsetnx(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let (key, field, value) = (args.get(1), args.get(2), args.get(3));
    let lim = limits(ctx);
    let (h, mut shard) = ctx.lock(key);
    let added = match lookup(ctx, &mut shard, h, key, false) {
        Look::Wrong => {
            drop(shard);
            return ctx.wrongtype();
        }
        Look::Hash(hv) => {
            let age = expire_field(ctx, hv, key, field);
            if age == FieldAge::Deleted {
                ctx.modified(key, HASH, "hexpired");
            }
            if age == FieldAge::Live && hv.contains(field) {
                false
            } else {
                hv.try_conversion([field, value].into_iter(), lim);
                hv.set(field, value, lim)
            }
        }
        Look::Missing => {
            let mut hv = HashValue::new();
            hv.try_conversion([field, value].into_iter(), lim);
            hv.set(field, value, lim);
            insert_new(ctx, &mut shard, h, key, hv);
            ctx.notify(key, NEW, "new");
            true
        }
    };
    drop(shard);
    if added {
        ctx.modified(key, HASH, "hset");
    }
    ctx.out.int(added as i64);
}

// ---------------------------------------------------------------- reads

/// HGET key field → the value, or nil (missing key or field).
fn hget(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    match lookup(ctx, &mut shard, h, key, true) {
        Look::Missing => ctx.out.null(),
        Look::Wrong => {
            drop(shard);
            ctx.wrongtype()
        }
        Look::Hash(hv) => {
            let field = args.get(2);
            let age = expire_field(ctx, hv, key, field);
            match hv.get(field).filter(|_| age == FieldAge::Live) {
                Some(v) => ctx.out.bulk(v),
                None => ctx.out.null(),
            }
            lazy_done(ctx, shard, h, key, age == FieldAge::Deleted);
        }
    }
}

/// HMGET key field [field ...] → an array with each field's value or nil;
/// all nils for a missing key.
fn hmget(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let mut hv = match lookup(ctx, &mut shard, h, key, true) {
        Look::Wrong => {
            drop(shard);
            return ctx.wrongtype();
        }
        Look::Missing => None,
        Look::Hash(hv) => Some(hv),
    };
    ctx.out.array(args.len() - 2);
    let mut expired = false;
    for i in 2..args.len() {
        let field = args.get(i);
        let mut age = FieldAge::Live;
        if let Some(hv) = hv.as_deref_mut() {
            age = expire_field(ctx, hv, key, field);
            expired |= age == FieldAge::Deleted;
        }
        match hv
            .as_deref()
            .and_then(|hv| hv.get(field))
            .filter(|_| age == FieldAge::Live)
        {
            Some(v) => ctx.out.bulk(v),
            None => ctx.out.null(),
        }
    }
    lazy_done(ctx, shard, h, key, expired);
}

/// HLEN key → number of fields, 0 for a missing key.
fn hlen(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    match lookup(ctx, &mut shard, h, key, true) {
        Look::Missing => ctx.out.int(0),
        Look::Wrong => {
            drop(shard);
            ctx.wrongtype()
        }
        Look::Hash(hv) => ctx.out.int(hv.len() as i64),
    }
}

/// HSTRLEN key field → the value's length in bytes, 0 when missing.
fn hstrlen(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    match lookup(ctx, &mut shard, h, key, true) {
        Look::Missing => ctx.out.int(0),
        Look::Wrong => {
            drop(shard);
            ctx.wrongtype()
        }
        Look::Hash(hv) => {
            let field = args.get(2);
            let age = expire_field(ctx, hv, key, field);
            let n = hv
                .get(field)
                .filter(|_| age == FieldAge::Live)
                .map_or(0, |v| v.len());
            ctx.out.int(n as i64);
            lazy_done(ctx, shard, h, key, age == FieldAge::Deleted);
        }
    }
}

/// HEXISTS key field → 1 or 0.
fn hexists(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    match lookup(ctx, &mut shard, h, key, true) {
        Look::Missing => ctx.out.int(0),
        Look::Wrong => {
            drop(shard);
            ctx.wrongtype()
        }
        Look::Hash(hv) => {
            let field = args.get(2);
            let age = expire_field(ctx, hv, key, field);
            ctx.out
                .int((age == FieldAge::Live && hv.contains(field)) as i64);
            lazy_done(ctx, shard, h, key, age == FieldAge::Deleted);
        }
    }
}

/// HKEYS / HVALS / HGETALL (`genericHgetallCommand`): fields, values or
/// both; HGETALL replies a map (RESP3 `%`, RESP2 a flat array), the others
/// an array; a missing key gives the empty map / array. Order: insertion
/// order for `listpack`, table order for `hashtable`.
fn getall_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, fields: bool, values: bool) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let hv = match lookup(ctx, &mut shard, h, key, true) {
        Look::Wrong => {
            drop(shard);
            return ctx.wrongtype();
        }
        Look::Missing => {
            drop(shard);
            if fields && values {
                ctx.out.map(0);
            } else {
                ctx.out.array(0);
            }
            return;
        }
        Look::Hash(hv) => hv,
    };
    let now = ctx.now;
    let n = hv.live_len(now);
    if fields && values {
        ctx.out.map(n);
    } else {
        ctx.out.array(n);
    }
    for (f, v) in hv.iter_live(now) {
        if fields {
            ctx.out.bulk(f);
        }
        if values {
            ctx.out.bulk(v);
        }
    }
}

fn hkeys(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    getall_generic(ctx, args, true, false);
}

fn hvals(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    getall_generic(ctx, args, false, true);
}

fn hgetall(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    getall_generic(ctx, args, true, true);
}

// ---------------------------------------------------------------- HDEL

/// HDEL key field [field ...] → number of fields removed; the key is
/// deleted when its last field goes.
fn hdel(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let (deleted, emptied) = match lookup(ctx, &mut shard, h, key, false) {
        Look::Missing => (0, false),
        Look::Wrong => {
            drop(shard);
            return ctx.wrongtype();
        }
        Look::Hash(hv) => {
            let mut n = 0i64;
            for i in 2..args.len() {
                if hv.remove(args.get(i)) {
                    n += 1;
                    if hv.is_empty() {
                        break;
                    }
                }
            }
            (n, hv.is_empty())
        }
    };
    if emptied {
        shard.remove(h, key);
    }
    drop(shard);
    if deleted > 0 {
        ctx.modified(key, HASH, "hdel");
        if emptied {
            ctx.notify(key, GENERIC, "del");
        }
    }
    ctx.out.int(deleted);
}

// ---------------------------------------------------------------- counters

/// HINCRBY key field increment → the new value. The increment is parsed
/// first ("ERR value is not an integer or out of range"); a missing field
/// counts as 0; a stored value that is not a canonical 64-bit integer is
/// "ERR hash value is not an integer"; overflow is "ERR increment or
/// decrement would overflow" (value unchanged).
fn hincrby(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(incr) = super::arg_i64(ctx, args.get(3)) else {
        return;
    };
    let (key, field) = (args.get(1), args.get(2));
    let lim = limits(ctx);
    let (h, mut shard) = ctx.lock(key);
    let mut fresh = HashValue::new();
    let (hv, is_new) = match lookup(ctx, &mut shard, h, key, false) {
        Look::Wrong => {
            drop(shard);
            return ctx.wrongtype();
        }
        Look::Hash(hv) => (hv, false),
        Look::Missing => (&mut fresh, true),
    };
    let age = expire_field(ctx, hv, key, field);
    let old = match hv.get(field).filter(|_| age == FieldAge::Live) {
        None => 0,
        Some(v) => match parse_i64(v) {
            Some(n) => n,
            None => {
                drop(shard);
                return ctx.error(ERR_NOT_INT_HASH);
            }
        },
    };
    let Some(new) = old.checked_add(incr) else {
        drop(shard);
        return ctx.error(err::OVERFLOW);
    };
    let mut digits = itoa::Buffer::new();
    set_counter(hv, field, digits.format(new).as_bytes(), lim, age);
    if is_new {
        insert_new(ctx, &mut shard, h, key, fresh);
        ctx.notify(key, NEW, "new");
    }
    drop(shard);
    if age == FieldAge::Deleted {
        ctx.modified(key, HASH, "hexpired");
    }
    ctx.modified(key, HASH, "hincrby");
    ctx.out.int(new);
}

/// HINCRBYFLOAT key field increment → the new value as a bulk string,
/// computed in `long double` and printed as Redis does
/// ([`crate::ldouble::incr_by_float`]). Errors, in Redis's order: a bad
/// increment ("ERR value is not a valid float"), an infinite one ("ERR value
/// is NaN or Infinity"), WRONGTYPE, a stored value that is not a float
/// ("ERR hash value is not a float"), a NaN/infinite sum ("ERR increment
/// would produce NaN or Infinity"); nothing is written then.
fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    use crate::ldouble::{incr_by_float, FloatError};
    let (key, field, incr) = (args.get(1), args.get(2), args.get(3));
    let from_zero = match incr_by_float(b"0", incr) {
        Ok(v) => v,
        Err(FloatError::NanOrInf) => return ctx.error(ERR_NAN_INF_ARG),
        Err(_) => return ctx.error(err::NOT_FLOAT),
    };
    let lim = limits(ctx);
    let (h, mut shard) = ctx.lock(key);
    let mut fresh = HashValue::new();
    let (hv, is_new) = match lookup(ctx, &mut shard, h, key, false) {
        Look::Wrong => {
            drop(shard);
            return ctx.wrongtype();
        }
        Look::Hash(hv) => (hv, false),
        Look::Missing => (&mut fresh, true),
    };
    let age = expire_field(ctx, hv, key, field);
    let sum = match hv.get(field).filter(|_| age == FieldAge::Live) {
        None => from_zero,
        Some(v) => match incr_by_float(v, incr) {
            Ok(s) => s,
            Err(FloatError::NanOrInf) => {
                drop(shard);
                return ctx.error(ERR_NAN_INF_RESULT);
            }
            Err(_) => {
                drop(shard);
                return ctx.error(ERR_NOT_FLOAT_HASH);
            }
        },
    };
    set_counter(hv, field, &sum, lim, age);
    let keeps_ttl = hv.field_ttl(field).is_some();
    if is_new {
        insert_new(ctx, &mut shard, h, key, fresh);
        ctx.notify(key, NEW, "new");
    }
    drop(shard);
    if age == FieldAge::Deleted {
        ctx.modified(key, HASH, "hexpired");
    }
    ctx.modified(key, HASH, "hincrbyfloat");
    // Recorded as HSET key field <result> (Redis 7.0's hincrbyfloatCommand),
    // or, for a field with a TTL, as Redis 8 does: HSETEX key KEEPTTL
    // FIELDS 1 field <result>, which keeps it.
    if keeps_ttl {
        crate::propagate::rewrite(&[
            b"HSETEX",
            key,
            b"KEEPTTL",
            b"FIELDS",
            b"1",
            args.get(2),
            &sum,
        ]);
    } else {
        crate::propagate::rewrite(&[b"HSET", key, args.get(2), &sum]);
    }
    ctx.out.bulk(&sum);
}

/// Stores a counter's new value: a live field keeps its TTL (Redis's
/// `HASH_SET_KEEP_TTL`), an expired one that could not be deleted is
/// replaced without it.
fn set_counter(hv: &mut HashValue, field: &[u8], value: &[u8], lim: Limits, age: FieldAge) {
    if age == FieldAge::Live {
        hv.set_keep_ttl(field, value, lim);
    } else {
        hv.set(field, value, lim);
    }
}

// ---------------------------------------------------------------- HSCAN

/// HSCAN key cursor [MATCH pattern] [COUNT count] → [next cursor, [field,
/// value, ...]] (`hscanCommand` + `scanGenericCommand`).
///
/// The cursor is checked first ("ERR invalid cursor"), then the key (a
/// missing key answers cursor 0 and no elements whatever the options), then
/// the options: COUNT must be an integer ≥ 1, TYPE is not accepted for a
/// key (syntax error). A `listpack` hash returns every pair in one call with
/// cursor 0, as Redis does; a `hashtable` one visits buckets with the
/// reverse-binary cursor until it has about COUNT elements (fields and
/// values both count, as in Redis) or 10×COUNT buckets; MATCH then filters
/// on the field.
fn hscan(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(mut cursor) = super::keys::parse_scan_cursor(args.get(2)) else {
        return ctx.error("ERR invalid cursor");
    };
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let hv = match lookup(ctx, &mut shard, h, key, true) {
        Look::Missing => {
            drop(shard);
            ctx.out.array(2);
            ctx.out.bulk(b"0");
            ctx.out.array(0);
            return;
        }
        Look::Wrong => {
            drop(shard);
            return ctx.wrongtype();
        }
        Look::Hash(hv) => &*hv,
    };
    let mut count: i64 = 10;
    let mut pat: Option<&[u8]> = None;
    let mut i = 3;
    while i < args.len() {
        let o = args.get(i);
        let has_arg = i + 1 < args.len();
        if opt_is(o, b"count") && has_arg {
            let Some(c) = parse_i64(args.get(i + 1)) else {
                drop(shard);
                return ctx.not_int();
            };
            if c < 1 {
                drop(shard);
                return ctx.syntax();
            }
            count = c;
        } else if opt_is(o, b"match") && has_arg {
            let p = args.get(i + 1);
            pat = if p == b"*" { None } else { Some(p) };
        } else {
            drop(shard);
            return ctx.syntax();
        }
        i += 2;
    }
    let mut items: Vec<(&[u8], &[u8])> = Vec::new();
    let now = ctx.now;
    match hv {
        HashValue::Table(t) => {
            let count = count as u64;
            let mut budget = count.saturating_mul(10);
            loop {
                cursor = t.scan_step(cursor, |f, v| {
                    if !hv.is_expired(f, now) {
                        items.push((f, v))
                    }
                });
                if cursor == 0 || budget == 0 || (items.len() as u64) * 2 >= count {
                    break;
                }
                budget -= 1;
            }
        }
        _ => {
            items.extend(hv.iter_live(now));
            cursor = 0;
        }
    }
    if let Some(p) = pat {
        items.retain(|(f, _)| glob_match(p, f, false));
    }
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(cursor).as_bytes());
    ctx.out.array(items.len() * 2);
    for (f, v) in items {
        ctx.out.bulk(f);
        ctx.out.bulk(v);
    }
}

// ---------------------------------------------------------------- HRANDFIELD

/// HRANDFIELD key [count [WITHVALUES]] (`hrandfieldCommand`).
///
/// Without count: a random field (bulk), nil for a missing key. With
/// count (parsed first: "ERR value is not an integer or out of range", and
/// i64::MIN is "ERR value is out of range, value must between
/// -9223372036854775807 and 9223372036854775807"; then a third argument
/// other than WITHVALUES is a syntax error; with WITHVALUES |count| beyond
/// LONG_MAX/2 is "ERR value is out of range"): a missing key gives an empty
/// array; count 0 an empty array; a positive count min(count, size)
/// distinct fields (the whole hash in its order when count ≥ size); a
/// negative count exactly |count| fields drawn independently (repetitions
/// possible). WITHVALUES adds each value after its field (RESP2) or makes
/// each element a [field, value] array (RESP3). A negative count of more
/// than [`STREAM_ABOVE`](super::stream::STREAM_ABOVE) fields is produced
/// chunk by chunk from a copy of the hash (cmd/stream.rs), bounded by the
/// output buffer limits as Redis's reply is.
fn hrandfield(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    if args.len() >= 3 {
        let Some(l) = parse_i64(args.get(2)) else {
            return ctx.not_int();
        };
        if l == i64::MIN {
            return ctx.error(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            );
        }
        let with_values = args.len() == 4;
        if args.len() > 4 || (with_values && !opt_is(args.get(3), b"withvalues")) {
            return ctx.syntax();
        }
        if with_values && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
            return ctx.error(ERR_OUT_OF_RANGE);
        }
        return hrandfield_count(ctx, key, l, with_values);
    }
    let (h, mut shard) = ctx.lock(key);
    let copy = match rand_source(ctx, &mut shard, h, key) {
        RandSource::Empty => return ctx.out.null(),
        RandSource::Wrong => {
            drop(shard);
            return ctx.wrongtype();
        }
        RandSource::Live(copy) => copy,
    };
    let Look::Hash(hv) = lookup(ctx, &mut shard, h, key, false) else {
        return ctx.out.null();
    };
    let hv: &HashValue = copy.as_ref().unwrap_or(hv);
    match hv.random_pair(rand_u64) {
        Some((f, _)) => ctx.out.bulk(f),
        None => ctx.out.null(),
    }
}

/// What HRANDFIELD draws from ([`rand_source`]).
enum RandSource {
    /// No such key, or its last fields just expired.
    Empty,
    /// The key holds another type.
    Wrong,
    /// The hash at the key, or (Some) a copy of its live fields.
    Live(Option<HashValue>),
}

/// Looks the hash up for HRANDFIELD (counting a hit or miss) and deletes
/// its expired fields first ([`purge_expired`]), the key with the last.
fn rand_source(ctx: &Ctx<'_>, shard: &mut Shard, h: u64, key: &[u8]) -> RandSource {
    match lookup(ctx, shard, h, key, true) {
        Look::Missing => RandSource::Empty,
        Look::Wrong => RandSource::Wrong,
        Look::Hash(hv) => match purge_expired(ctx, hv, key) {
            Purged::Gone => {
                shard.remove(h, key);
                expired_events(ctx, key, true);
                RandSource::Empty
            }
            Purged::Some(n, copy) => {
                if n > 0 {
                    expired_events(ctx, key, false);
                }
                RandSource::Live(copy)
            }
        },
    }
}

/// What [`purge_expired`] did.
enum Purged {
    /// Every field had expired and was deleted: the caller deletes the key.
    Gone,
    /// `n` expired fields were deleted; with a copy of the live fields when
    /// expired ones could only be hidden.
    Some(usize, Option<HashValue>),
}

/// Before HRANDFIELD (Redis 7.4's `hashTypeExpireIfNeeded`): deletes every
/// expired field of the hash at `key` where this command may delete
/// (recording their `HDEL`s), else returns a copy of its live fields for
/// the command to draw from.
fn purge_expired(ctx: &Ctx<'_>, hv: &mut HashValue, key: &[u8]) -> Purged {
    if !hv.any_expired(ctx.now) {
        return Purged::Some(0, None);
    }
    let mut n = 0;
    for f in hv.expired_fields(ctx.now) {
        if expire_field(ctx, hv, key, &f) == FieldAge::Hidden {
            let mut copy = HashValue::new();
            let lim = limits(ctx);
            let live: Vec<(&[u8], &[u8])> = hv.iter_live(ctx.now).collect();
            copy.set_many(live.iter().copied(), lim);
            return Purged::Some(n, Some(copy));
        }
        n += 1;
    }
    if hv.is_empty() {
        Purged::Gone
    } else {
        Purged::Some(n, None)
    }
}

/// Notifies `hexpired` (and `del` when `gone`) for lazily expired fields of
/// `key`.
fn expired_events(ctx: &Ctx<'_>, key: &[u8], gone: bool) {
    ctx.modified(key, HASH, "hexpired");
    if gone {
        ctx.notify(key, GENERIC, "del");
    }
}

/// Picks `k` distinct indexes out of `0..n` (k < n) by a partial
/// Fisher-Yates shuffle.
fn distinct_indexes(n: usize, k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    for i in 0..k {
        let j = i + (rand_u64() % (n - i) as u64) as usize;
        idx.swap(i, j);
    }
    idx.truncate(k);
    idx
}

/// HRANDFIELD with a count (`hrandfieldWithCountCommand`).
fn hrandfield_count(ctx: &mut Ctx<'_>, key: &[u8], l: i64, with_values: bool) {
    let (h, mut shard) = ctx.lock(key);
    let copy = match rand_source(ctx, &mut shard, h, key) {
        RandSource::Empty => {
            drop(shard);
            return ctx.out.array(0);
        }
        RandSource::Wrong => {
            drop(shard);
            return ctx.wrongtype();
        }
        RandSource::Live(copy) => copy,
    };
    let Look::Hash(hv) = lookup(ctx, &mut shard, h, key, false) else {
        return ctx.out.array(0);
    };
    let hv: &HashValue = copy.as_ref().unwrap_or(hv);
    let count = l.unsigned_abs();
    let uniq = l >= 0;
    if count == 0 {
        drop(shard);
        return ctx.out.array(0);
    }
    let header = |ctx: &mut Ctx<'_>, n: usize| {
        if with_values && !ctx.out.resp3 {
            ctx.out.array(n * 2);
        } else {
            ctx.out.array(n);
        }
    };
    // CASE 1: repetitions allowed (or a single element).
    if !uniq || count == 1 {
        if count > super::stream::STREAM_ABOVE {
            header(ctx, count as usize);
            let shape = super::stream::Shape::Pairs {
                values: with_values,
            };
            let mut picks = super::stream::RandomPicks::new(shape, count);
            for (f, v) in hv.iter() {
                picks.push(f);
                picks.push(v);
            }
            drop(shard);
            return ctx.stream_reply(picks);
        }
        let count = count as usize;
        header(ctx, count);
        match hv {
            HashValue::Table(t) => {
                for _ in 0..count {
                    let Some((f, v)) = t.random_pair(rand_u64) else {
                        break;
                    };
                    reply_pair(ctx, f, v, with_values);
                }
            }
            _ => {
                let all: Vec<(&[u8], &[u8])> = hv.iter().collect();
                for _ in 0..count {
                    let (f, v) = all[(rand_u64() % all.len() as u64) as usize];
                    reply_pair(ctx, f, v, with_values);
                }
            }
        }
        return;
    }
    let size = hv.len();
    // CASE 2: the whole hash, in its order.
    if count >= size as u64 {
        header(ctx, size);
        for (f, v) in hv.iter() {
            reply_pair(ctx, f, v, with_values);
        }
        return;
    }
    let count = count as usize;
    header(ctx, count);
    match hv {
        HashValue::Table(t) if count * 3 > size => {
            let all: Vec<(&[u8], &[u8])> = t.iter().collect();
            for i in distinct_indexes(all.len(), count) {
                reply_pair(ctx, all[i].0, all[i].1, with_values);
            }
        }
        // A big table: sample until `count` distinct fields.
        HashValue::Table(t) => {
            let mut seen: std::collections::HashSet<&[u8], foldhash::fast::RandomState> =
                std::collections::HashSet::with_capacity_and_hasher(count, Default::default());
            while seen.len() < count {
                let Some((f, v)) = t.random_pair(rand_u64) else {
                    break;
                };
                if seen.insert(f) {
                    reply_pair(ctx, f, v, with_values);
                }
            }
        }
        // A listpack, or a table not much bigger than count: pick distinct
        // positions; a listpack replies them in its own order as Redis's
        // lpRandomPairsUnique does.
        _ => {
            let all: Vec<(&[u8], &[u8])> = hv.iter().collect();
            let mut idx = distinct_indexes(all.len(), count);
            idx.sort_unstable();
            for i in idx {
                reply_pair(ctx, all[i].0, all[i].1, with_values);
            }
        }
    }
}
