//! Hash-field expiration, from releases after Redis 7.0 (redis.io pages of
//! Redis 8.0: HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT, HTTL, HPTTL,
//! HEXPIRETIME, HPEXPIRETIME, HPERSIST (Redis 7.4), HGETEX, HSETEX and
//! HGETDEL (Redis 8.0)), following Redis 8's t_hash.c.
//!
//! A field's TTL is an absolute time in ms ([`HashValue::field_ttl`]); a
//! field whose TTL has passed is gone for every command (cmd/hashes.rs,
//! "lazy expiry") and is deleted by the active expiry cycle
//! ([`crate::db::Shard::expire_fields_pass`]). Every deletion of an expired
//! field is recorded as `HDEL key field`; TTLs are recorded as absolute
//! times: `HPEXPIREAT key ms FIELDS n field...` (only the fields it set),
//! `HSETEX key PXAT ms ...`, `HPERSIST`; HGETDEL as `HDEL`.
//!
//! Reply codes per field (the redis.io pages): -2 no such field (or key, or
//! the field had expired), 0 the NX/XX/GT/LT condition was not met, 1 done,
//! 2 deleted because the time given had already passed; HTTL-like commands
//! reply -1 for a field without TTL; HPERSIST 1 when it removed a TTL.

use super::hashes::{expire_field, limits, lookup, FieldAge, Look};
use super::{acl, cmd, flags::*, Command, Ctx};
use crate::db::{Entry, HashValue, Shard, Value};
use crate::events::{GENERIC, HASH, NEW};
use crate::keyspecs;
use crate::resp::Args;
use crate::util::parse_i64;

/// The hash-field expiration family's table entries (arity, flags, key
/// specs, ACL categories and docs as Redis 8.0's COMMAND INFO / DOCS).
pub static COMMANDS: &[Command] = &[
    cmd("hexpire", -6, WRITE | DENYOOM | FAST, (1, 1, 1), acl::HASH, hexpire)
        .key_specs(keyspecs::EXPIRE)
        .doc(
            "hash",
            "7.4.0",
            "Set expiry for hash field using relative time to expire (seconds)",
            "O(N) where N is the number of specified fields",
        ),
    cmd("hpexpire", -6, WRITE | DENYOOM | FAST, (1, 1, 1), acl::HASH, hpexpire)
        .key_specs(keyspecs::EXPIRE)
        .doc(
            "hash",
            "7.4.0",
            "Set expiry for hash field using relative time to expire (milliseconds)",
            "O(N) where N is the number of specified fields",
        ),
    cmd("hexpireat", -6, WRITE | DENYOOM | FAST, (1, 1, 1), acl::HASH, hexpireat)
        .key_specs(keyspecs::EXPIRE)
        .doc(
            "hash",
            "7.4.0",
            "Set expiry for hash field using an absolute Unix timestamp (seconds)",
            "O(N) where N is the number of specified fields",
        ),
    cmd("hpexpireat", -6, WRITE | DENYOOM | FAST, (1, 1, 1), acl::HASH, hpexpireat)
        .key_specs(keyspecs::EXPIRE)
        .doc(
            "hash",
            "7.4.0",
            "Set expiry for hash field using an absolute Unix timestamp (milliseconds)",
            "O(N) where N is the number of specified fields",
        ),
    cmd("httl", -5, READONLY | FAST, (1, 1, 1), acl::HASH, httl)
        .key_specs(keyspecs::DUMP)
        .doc(
            "hash",
            "7.4.0",
            "Returns the TTL in seconds of a hash field.",
            "O(N) where N is the number of specified fields",
        )
        .tips(&["nondeterministic_output"]),
    cmd("hpttl", -5, READONLY | FAST, (1, 1, 1), acl::HASH, hpttl)
        .key_specs(keyspecs::DUMP)
        .doc(
            "hash",
            "7.4.0",
            "Returns the TTL in milliseconds of a hash field.",
            "O(N) where N is the number of specified fields",
        )
        .tips(&["nondeterministic_output"]),
    cmd("hexpiretime", -5, READONLY | FAST, (1, 1, 1), acl::HASH, hexpiretime)
        .key_specs(keyspecs::DUMP)
        .doc(
            "hash",
            "7.4.0",
            "Returns the expiration time of a hash field as a Unix timestamp, in seconds.",
            "O(N) where N is the number of specified fields",
        ),
    cmd("hpexpiretime", -5, READONLY | FAST, (1, 1, 1), acl::HASH, hpexpiretime)
        .key_specs(keyspecs::DUMP)
        .doc(
            "hash",
            "7.4.0",
            "Returns the expiration time of a hash field as a Unix timestamp, in msec.",
            "O(N) where N is the number of specified fields",
        ),
    cmd("hpersist", -5, WRITE | FAST, (1, 1, 1), acl::HASH, hpersist)
        .key_specs(keyspecs::EXPIRE)
        .doc(
            "hash",
            "7.4.0",
            "Removes the expiration time for each specified field",
            "O(N) where N is the number of specified fields",
        ),
    cmd("hgetex", -5, WRITE | FAST, (1, 1, 1), acl::HASH, hgetex)
        .key_specs(keyspecs::DECR)
        .doc(
            "hash",
            "8.0.0",
            "Get the value of one or more fields of a given hash key, and optionally set their expiration.",
            "O(N) where N is the number of specified fields",
        ),
    cmd("hsetex", -6, WRITE | DENYOOM | FAST, (1, 1, 1), acl::HASH, hsetex)
        .key_specs(keyspecs::EXPIRE)
        .doc(
            "hash",
            "8.0.0",
            "Set the value of one or more fields of a given hash key, and optionally set their expiration.",
            "O(N) where N is the number of fields being set.",
        ),
    cmd("hgetdel", -5, WRITE | FAST, (1, 1, 1), acl::HASH, hgetdel)
        .key_specs(keyspecs::GETDEL)
        .doc(
            "hash",
            "8.0.0",
            "Returns the value of a field and deletes it from the hash.",
            "O(N) where N is the number of specified fields",
        ),
];

/// Latest field expiry time accepted, ms since the epoch (Redis's
/// `HFE_MAX_ABS_TIME_MSEC`, `EB_EXPIRE_TIME_MAX >> 2`).
pub const MAX_FIELD_TTL_MS: i64 = ((1i64 << 48) - 1) >> 2;

/// "ERR Mandatory argument FIELDS is missing or not at the right position".
pub const ERR_FIELDS_MISSING: &str =
    "ERR Mandatory argument FIELDS is missing or not at the right position";
/// The numfields error of the HTTL-like commands, HPERSIST, HGETEX and
/// HGETDEL.
pub const ERR_NUMFIELDS_POSITIVE: &str = "ERR Number of fields must be a positive integer";
/// The numfields error of the HEXPIRE family.
pub const ERR_NUMFIELDS_HEXPIRE: &str = "ERR Parameter `numFields` should be greater than 0";
/// A numfields that does not match the fields given.
pub const ERR_NUMFIELDS_MATCH: &str =
    "ERR The `numfields` parameter must match the number of arguments";
/// A negative time.
pub const ERR_NEGATIVE_TIME: &str = "ERR invalid expire time, must be >= 0";

/// Reply code: no such field.
const NO_FIELD: i64 = -2;
/// Reply code: the field has no TTL.
const NO_TTL: i64 = -1;
/// Reply code: the condition was not met.
const NOT_MET: i64 = 0;
/// Reply code: done.
const DONE: i64 = 1;
/// Reply code: deleted, the time had passed.
const DELETED: i64 = 2;

/// Parses an expiry time argument as Redis 8's `parseExpireTime`: an
/// integer ("ERR value is not an integer or out of range"), not negative
/// ([`ERR_NEGATIVE_TIME`]), in seconds when `seconds`, added to `base` ms
/// (0 for absolute times), at most [`MAX_FIELD_TTL_MS`] ("ERR invalid
/// expire time in '<cmd>' command"). Returns ms since the epoch.
fn parse_expire_time(
    ctx: &mut Ctx<'_>,
    arg: &[u8],
    seconds: bool,
    base: u64,
    name: &str,
) -> Option<u64> {
    let Some(mut v) = parse_i64(arg) else {
        ctx.not_int();
        return None;
    };
    if v < 0 {
        ctx.error(ERR_NEGATIVE_TIME);
        return None;
    }
    let bad =
        |ctx: &mut Ctx<'_>| ctx.error(&format!("ERR invalid expire time in '{name}' command"));
    if seconds {
        if v > MAX_FIELD_TTL_MS / 1000 {
            bad(ctx);
            return None;
        }
        v *= 1000;
    }
    if v > MAX_FIELD_TTL_MS - base as i64 {
        bad(ctx);
        return None;
    }
    Some(v as u64 + base)
}

/// Checks `FIELDS numfields field...` with `FIELDS` at argument `at`:
/// the keyword ([`ERR_FIELDS_MISSING`]), a count ≥ 1 (`count_err`), and
/// exactly that many fields after it ([`ERR_NUMFIELDS_MATCH`]). Returns the
/// index of the first field.
fn fields_block(ctx: &mut Ctx<'_>, args: &Args<'_>, at: usize, count_err: &str) -> Option<usize> {
    if at >= args.len() || !super::opt_is(args.get(at), b"fields") {
        ctx.error(ERR_FIELDS_MISSING);
        return None;
    }
    let n = (at + 1 < args.len())
        .then(|| parse_i64(args.get(at + 1)))
        .flatten()
        .filter(|&n| n >= 1);
    let Some(n) = n else {
        ctx.error(count_err);
        return None;
    };
    if n as u64 != (args.len() - at - 2) as u64 {
        ctx.error(ERR_NUMFIELDS_MATCH);
        return None;
    }
    Some(at + 2)
}

/// Looks `key` up for a write (Redis's `lookupKeyWrite` + `checkType`):
/// Some(true) for a hash, Some(false) when missing, None after replying
/// WRONGTYPE.
fn type_check(ctx: &mut Ctx<'_>, shard: &mut Shard, h: u64, key: &[u8]) -> Option<bool> {
    match lookup(ctx, shard, h, key, false) {
        Look::Wrong => {
            ctx.wrongtype();
            None
        }
        Look::Missing => Some(false),
        Look::Hash(_) => Some(true),
    }
}

/// Replies an array of `n` nils (the values of fields of a missing key).
fn reply_nulls(ctx: &mut Ctx<'_>, n: usize) {
    ctx.out.array(n);
    for _ in 0..n {
        ctx.out.null();
    }
}

/// Replies `n` times `code` (a missing key: every field is missing).
fn reply_codes(ctx: &mut Ctx<'_>, n: usize, code: i64) {
    ctx.out.array(n);
    for _ in 0..n {
        ctx.out.int(code);
    }
}

/// Deletes the key when its hash is empty, else records its earliest field
/// TTL for active expiry; true when deleted.
fn settle(shard: &mut Shard, h: u64, key: &[u8]) -> bool {
    let (empty, min) = match shard.peek_raw(h, key) {
        Some(Entry {
            value: Value::Hash(hv),
            ..
        }) => (hv.is_empty(), hv.min_field_ttl()),
        _ => return false,
    };
    if empty {
        shard.remove(h, key);
        true
    } else {
        shard.note_field_ttls(key, min);
        false
    }
}

/// Deletes field `field` whose new TTL `at` has already passed (Redis's
/// `checkAlreadyExpired`), recording `HDEL key field`.
fn delete_now(ctx: &Ctx<'_>, hv: &mut HashValue, key: &[u8], field: &[u8]) {
    if ctx.server.propagation.on() {
        crate::propagate::field_deleted(ctx.client.db, key, field);
    }
    hv.remove(field);
    ctx.server.keyspace.count_expired_fields(1);
}

/// A NX/XX/GT/LT condition of HEXPIRE and friends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cond {
    None,
    Nx,
    Xx,
    Gt,
    Lt,
}

/// Sets the TTL of one field as Redis 8's `hashTypeSetEx`: the reply code
/// ([`NO_FIELD`] for a missing or expired field, [`NOT_MET`],
/// [`DELETED`] when `at` has passed, else [`DONE`]).
fn set_ttl(
    ctx: &Ctx<'_>,
    hv: &mut HashValue,
    key: &[u8],
    field: &[u8],
    at: u64,
    cond: Cond,
) -> i64 {
    if hv.get(field).is_none() || hv.is_expired(field, ctx.now) {
        return NO_FIELD;
    }
    match hv.field_ttl(field) {
        None => {
            if matches!(cond, Cond::Xx | Cond::Gt) {
                return NOT_MET;
            }
        }
        Some(prev) => {
            if cond == Cond::Nx
                || (cond == Cond::Gt && prev >= at)
                || (cond == Cond::Lt && prev <= at)
            {
                return NOT_MET;
            }
        }
    }
    if at <= ctx.now {
        delete_now(ctx, hv, key, field);
        return DELETED;
    }
    hv.set_field_ttl(field, at);
    DONE
}

// ---------------------------------------------------------------- HEXPIRE

/// HEXPIRE / HPEXPIRE / HEXPIREAT / HPEXPIREAT key time [NX|XX|GT|LT]
/// FIELDS numfields field... → one code per field (Redis 8's
/// `hexpireGenericCommand`). WRONGTYPE first; then the time, the
/// condition, the FIELDS block ([`ERR_NUMFIELDS_HEXPIRE`]); a missing key
/// answers -2 for every field. Recorded as `HPEXPIREAT key ms [cond]
/// FIELDS n` with only the fields set (nothing when none was).
fn hexpire_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, seconds: bool, relative: bool, name: &str) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let Some(exists) = type_check(ctx, &mut shard, h, key) else {
        return;
    };
    let base = if relative { ctx.now } else { 0 };
    let Some(at) = parse_expire_time(ctx, args.get(2), seconds, base, name) else {
        return;
    };
    let o = args.get(3);
    let cond = if super::opt_is(o, b"nx") {
        Cond::Nx
    } else if super::opt_is(o, b"xx") {
        Cond::Xx
    } else if super::opt_is(o, b"gt") {
        Cond::Gt
    } else if super::opt_is(o, b"lt") {
        Cond::Lt
    } else {
        Cond::None
    };
    let fields_at = if cond == Cond::None { 3 } else { 4 };
    let Some(first) = fields_block(ctx, args, fields_at, ERR_NUMFIELDS_HEXPIRE) else {
        return;
    };
    let n = args.len() - first;
    if !exists {
        drop(shard);
        return reply_codes(ctx, n, NO_FIELD);
    }
    let Look::Hash(hv) = lookup(ctx, &mut shard, h, key, false) else {
        return reply_codes(ctx, n, NO_FIELD);
    };
    hv.make_volatile();
    ctx.out.array(n);
    let mut set: Vec<&[u8]> = Vec::new();
    let mut deleted = 0;
    for i in first..args.len() {
        let f = args.get(i);
        let code = set_ttl(ctx, hv, key, f, at, cond);
        match code {
            DONE => set.push(f),
            DELETED => deleted += 1,
            _ => {}
        }
        ctx.out.int(code);
    }
    let gone = settle(&mut shard, h, key);
    drop(shard);
    if !set.is_empty() || deleted > 0 {
        ctx.modified(key, HASH, if deleted > 0 { "hdel" } else { "hexpire" });
        ctx.dirty = Some((set.len() + deleted) as u64);
    }
    if gone {
        ctx.notify(key, GENERIC, "del");
    }
    if set.is_empty() {
        crate::propagate::prevent();
        return;
    }
    let mut ms = itoa::Buffer::new();
    let mut cnt = itoa::Buffer::new();
    let mut rec: Vec<&[u8]> = vec![b"HPEXPIREAT", key, ms.format(at).as_bytes()];
    if cond != Cond::None {
        rec.push(args.get(3));
    }
    rec.push(b"FIELDS");
    rec.push(cnt.format(set.len()).as_bytes());
    rec.extend(set);
    crate::propagate::rewrite(&rec);
}

fn hexpire(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    hexpire_generic(ctx, args, true, true, "hexpire");
}

fn hpexpire(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    hexpire_generic(ctx, args, false, true, "hpexpire");
}

fn hexpireat(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    hexpire_generic(ctx, args, true, false, "hexpireat");
}

fn hpexpireat(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    hexpire_generic(ctx, args, false, false, "hpexpireat");
}

// ---------------------------------------------------------------- HTTL

/// HTTL / HPTTL / HEXPIRETIME / HPEXPIRETIME key FIELDS numfields field...
/// → per field -2 (missing or expired), -1 (no TTL), else the remaining
/// time (`relative`) or the expiry time, in seconds (rounded up, as Redis's
/// `(expire + 999 - base) / 1000`) or ms (`httlGenericCommand`).
fn httl_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, seconds: bool, relative: bool) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let hv = match lookup(ctx, &mut shard, h, key, true) {
        Look::Wrong => {
            drop(shard);
            return ctx.wrongtype();
        }
        Look::Missing => None,
        Look::Hash(hv) => Some(&*hv),
    };
    let Some(first) = fields_block(ctx, args, 2, ERR_NUMFIELDS_POSITIVE) else {
        return;
    };
    let Some(hv) = hv else {
        drop(shard);
        return reply_codes(ctx, args.len() - first, NO_FIELD);
    };
    let now = ctx.now;
    let base = if relative { now } else { 0 };
    ctx.out.array(args.len() - first);
    for i in first..args.len() {
        let f = args.get(i);
        let code = if hv.get(f).is_none() || hv.is_expired(f, now) {
            NO_FIELD
        } else {
            match hv.field_ttl(f) {
                None => NO_TTL,
                Some(at) if seconds => ((at + 999).saturating_sub(base) / 1000) as i64,
                Some(at) => at.saturating_sub(base) as i64,
            }
        };
        ctx.out.int(code);
    }
}

fn httl(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    httl_generic(ctx, args, true, true);
}

fn hpttl(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    httl_generic(ctx, args, false, true);
}

fn hexpiretime(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    httl_generic(ctx, args, true, false);
}

fn hpexpiretime(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    httl_generic(ctx, args, false, false);
}

// ---------------------------------------------------------------- HPERSIST

/// HPERSIST key FIELDS numfields field... → per field -2 (missing or
/// expired), -1 (no TTL), 1 (TTL removed); notifies `hpersist` when a TTL
/// went (`hpersistCommand`).
fn hpersist(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let Some(exists) = type_check(ctx, &mut shard, h, key) else {
        return;
    };
    let Some(first) = fields_block(ctx, args, 2, ERR_NUMFIELDS_POSITIVE) else {
        return;
    };
    let n = args.len() - first;
    let hv = match lookup(ctx, &mut shard, h, key, false) {
        Look::Hash(hv) if exists => hv,
        _ => {
            drop(shard);
            return reply_codes(ctx, n, NO_FIELD);
        }
    };
    let now = ctx.now;
    ctx.out.array(n);
    let mut changed = false;
    for i in first..args.len() {
        let f = args.get(i);
        let code = if hv.get(f).is_none() || hv.is_expired(f, now) {
            NO_FIELD
        } else if hv.persist_field(f) {
            changed = true;
            DONE
        } else {
            NO_TTL
        };
        ctx.out.int(code);
    }
    settle(&mut shard, h, key);
    drop(shard);
    if changed {
        ctx.modified(key, HASH, "hpersist");
    }
}

// ---------------------------------------------------------------- HGETDEL

/// HGETDEL key FIELDS numfields field... → the value of each field (nil
/// when missing or expired), deleting those found; the key goes with its
/// last field (`hgetdelCommand`). Recorded as `HDEL key field...`.
fn hgetdel(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let Some(exists) = type_check(ctx, &mut shard, h, key) else {
        return;
    };
    let Some(first) = fields_block(ctx, args, 2, ERR_NUMFIELDS_POSITIVE) else {
        return;
    };
    let n = args.len() - first;
    let hv = match lookup(ctx, &mut shard, h, key, false) {
        Look::Hash(hv) if exists => hv,
        _ => {
            drop(shard);
            return reply_nulls(ctx, n);
        }
    };
    ctx.out.array(n);
    let (mut expired, mut deleted) = (false, 0u64);
    for i in first..args.len() {
        let f = args.get(i);
        let age = expire_field(ctx, hv, key, f);
        expired |= age == FieldAge::Deleted;
        match hv.get(f).filter(|_| age == FieldAge::Live) {
            Some(v) => {
                ctx.out.bulk(v);
                hv.remove(f);
                deleted += 1;
            }
            None => ctx.out.null(),
        }
    }
    if !expired && deleted == 0 {
        return;
    }
    let gone = settle(&mut shard, h, key);
    drop(shard);
    if expired {
        ctx.modified(key, HASH, "hexpired");
    }
    if deleted > 0 {
        ctx.modified(key, HASH, "hdel");
        ctx.dirty = Some(deleted);
        let mut rec: Vec<&[u8]> = vec![b"HDEL", key];
        rec.extend((first..args.len()).map(|i| args.get(i)));
        crate::propagate::rewrite(&rec);
    } else {
        crate::propagate::prevent();
    }
    if gone {
        ctx.notify(key, GENERIC, "del");
    }
}

// ---------------------------------------------------------------- HGETEX

/// The expiry option of HGETEX / HSETEX.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expiry {
    /// None given.
    Keep,
    /// EX / PX / EXAT / PXAT: the absolute time in ms, and whether it was
    /// given as PXAT.
    At(u64, bool),
    /// PERSIST (HGETEX).
    Persist,
    /// KEEPTTL (HSETEX).
    KeepTtl,
}

/// Parses one of EX/PX/EXAT/PXAT at `args[i]` with its time at `i + 1`.
/// Outer None: not one of them; inner None: an error was replied.
fn parse_time_option(
    ctx: &mut Ctx<'_>,
    args: &Args<'_>,
    i: usize,
    name: &str,
) -> Option<Option<Expiry>> {
    let o = args.get(i);
    let (seconds, relative, pxat) = if super::opt_is(o, b"ex") {
        (true, true, false)
    } else if super::opt_is(o, b"px") {
        (false, true, false)
    } else if super::opt_is(o, b"exat") {
        (true, false, false)
    } else if super::opt_is(o, b"pxat") {
        (false, false, true)
    } else {
        return None;
    };
    if i + 1 >= args.len() {
        ctx.error("ERR missing expire time");
        return Some(None);
    }
    let base = if relative { ctx.now } else { 0 };
    Some(
        parse_expire_time(ctx, args.get(i + 1), seconds, base, name).map(|at| Expiry::At(at, pxat)),
    )
}

/// HGETEX key [EX s|PX ms|EXAT ts|PXAT ms-ts|PERSIST] FIELDS numfields
/// field... → the value of each field (nil when missing or expired),
/// setting or removing the TTL of those found (`hgetexCommand`).
/// Recorded as `HPEXPIREAT key ms FIELDS ...` or `HPERSIST key FIELDS
/// ...`; fields a past time deleted as `HDEL`s.
fn hgetex(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let Some(exists) = type_check(ctx, &mut shard, h, key) else {
        return;
    };
    let (expiry, fields_at) = if super::opt_is(args.get(2), b"persist") {
        (Expiry::Persist, 3)
    } else {
        match parse_time_option(ctx, args, 2, "hgetex") {
            None => (Expiry::Keep, 2),
            Some(None) => return,
            Some(Some(e)) => (e, 4),
        }
    };
    let Some(first) = fields_block(ctx, args, fields_at, ERR_NUMFIELDS_POSITIVE) else {
        return;
    };
    let n = args.len() - first;
    let hv = match lookup(ctx, &mut shard, h, key, false) {
        Look::Hash(hv) if exists => hv,
        _ => {
            drop(shard);
            return reply_nulls(ctx, n);
        }
    };
    if matches!(expiry, Expiry::At(..)) {
        hv.make_volatile();
    }
    ctx.out.array(n);
    let (mut expired, mut updated, mut deleted) = (false, 0u64, 0u64);
    for i in first..args.len() {
        let f = args.get(i);
        let age = expire_field(ctx, hv, key, f);
        expired |= age == FieldAge::Deleted;
        let Some(v) = hv.get(f).filter(|_| age == FieldAge::Live) else {
            ctx.out.null();
            continue;
        };
        ctx.out.bulk(v);
        match expiry {
            Expiry::Persist => updated += hv.persist_field(f) as u64,
            Expiry::At(at, _) if at <= ctx.now => {
                delete_now(ctx, hv, key, f);
                deleted += 1;
            }
            Expiry::At(at, _) => {
                hv.set_field_ttl(f, at);
                updated += 1;
            }
            _ => {}
        }
    }
    let changed = expired || updated > 0 || deleted > 0;
    let gone = if changed {
        settle(&mut shard, h, key)
    } else {
        false
    };
    drop(shard);
    if !changed {
        return;
    }
    ctx.dirty = Some(updated + deleted);
    if expired {
        ctx.modified(key, HASH, "hexpired");
    }
    let mut ms = itoa::Buffer::new();
    if updated > 0 {
        let mut rec: Vec<&[u8]> = Vec::with_capacity(args.len() + 2);
        if let Expiry::At(at, _) = expiry {
            ctx.modified(key, HASH, "hexpire");
            rec.extend([b"HPEXPIREAT" as &[u8], key, ms.format(at).as_bytes()]);
        } else {
            ctx.modified(key, HASH, "hpersist");
            rec.extend([b"HPERSIST" as &[u8], key]);
        }
        rec.extend((fields_at..args.len()).map(|i| args.get(i)));
        crate::propagate::rewrite(&rec);
    } else {
        if deleted > 0 {
            ctx.modified(key, HASH, "hdel");
        }
        crate::propagate::prevent();
    }
    if gone {
        ctx.notify(key, GENERIC, "del");
    }
}

// ---------------------------------------------------------------- HSETEX

/// The parsed options of HSETEX.
struct SetexArgs {
    expiry: Expiry,
    /// Argument index of the expiry option's keyword, when one was given.
    expiry_at: usize,
    fxx: bool,
    fnx: bool,
    /// Index of the first field.
    first: usize,
}

/// Parses HSETEX's options as Redis 8's `hsetexParseArgs` (in any order
/// before `FIELDS`, which ends them).
fn parse_hsetex(ctx: &mut Ctx<'_>, args: &Args<'_>) -> Option<SetexArgs> {
    let arity = |ctx: &mut Ctx<'_>| ctx.error("ERR wrong number of arguments for 'hsetex' command");
    let mut p = SetexArgs {
        expiry: Expiry::Keep,
        expiry_at: 0,
        fxx: false,
        fnx: false,
        first: 0,
    };
    let mut i = 2;
    while i < args.len() {
        let o = args.get(i);
        if super::opt_is(o, b"fields") {
            if i + 3 >= args.len() {
                arity(ctx);
                return None;
            }
            let n = parse_i64(args.get(i + 1)).filter(|&n| (1..=i32::MAX as i64).contains(&n));
            let Some(n) = n else {
                ctx.error("ERR invalid number of fields");
                return None;
            };
            let remaining = args.len() - i - 2;
            if !remaining.is_multiple_of(2) || n as usize != remaining / 2 {
                arity(ctx);
                return None;
            }
            p.first = i + 2;
            return Some(p);
        }
        let is_keepttl = super::opt_is(o, b"keepttl");
        let is_time = [&b"ex"[..], b"px", b"exat", b"pxat"]
            .iter()
            .any(|w| super::opt_is(o, w));
        if is_keepttl || is_time {
            if p.expiry != Expiry::Keep {
                ctx.error(
                    "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified",
                );
                return None;
            }
            p.expiry_at = i;
            if is_keepttl {
                p.expiry = Expiry::KeepTtl;
            } else {
                match parse_time_option(ctx, args, i, "hsetex") {
                    Some(Some(e)) => p.expiry = e,
                    _ => return None,
                }
                i += 1;
            }
        } else if super::opt_is(o, b"fxx") || super::opt_is(o, b"fnx") {
            if p.fxx || p.fnx {
                ctx.error("ERR Only one of FXX or FNX arguments can be specified");
                return None;
            }
            if super::opt_is(o, b"fxx") {
                p.fxx = true;
            } else {
                p.fnx = true;
            }
        } else {
            ctx.error_with("ERR unknown argument: ", o, "");
            return None;
        }
        i += 1;
    }
    ctx.syntax();
    None
}

/// HSETEX key [FNX|FXX] [EX s|PX ms|EXAT ts|PXAT ms-ts|KEEPTTL] FIELDS
/// numfields field value... → 1 when the fields were set, 0 when FNX/FXX
/// failed (`hsetexCommand`). Without EX..PXAT/KEEPTTL the fields lose any
/// TTL; a time that has passed deletes them (recorded as `HDEL`s). Recorded
/// with the time as PXAT.
fn hsetex(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(p) = parse_hsetex(ctx, args) else {
        return;
    };
    let key = args.get(1);
    let lim = limits(ctx);
    let (h, mut shard) = ctx.lock(key);
    let exists = match lookup(ctx, &mut shard, h, key, false) {
        Look::Wrong => {
            drop(shard);
            return ctx.wrongtype();
        }
        Look::Missing => false,
        Look::Hash(_) => true,
    };
    if !exists {
        if p.fxx {
            drop(shard);
            return ctx.out.int(0);
        }
        shard.insert(
            h,
            key,
            Entry::new(
                Value::Hash(HashValue::new()),
                ctx.server.keyspace.lru.initial(ctx.now),
            ),
        );
    }
    let Look::Hash(hv) = lookup(ctx, &mut shard, h, key, false) else {
        return ctx.out.int(0);
    };
    let pairs = (p.first..args.len())
        .step_by(2)
        .map(|i| (args.get(i), args.get(i + 1)));
    let mut expired = false;
    if p.fxx || p.fnx {
        let mut found = 0;
        let mut fields = 0;
        for (f, _) in pairs.clone() {
            fields += 1;
            let age = expire_field(ctx, hv, key, f);
            expired |= age == FieldAge::Deleted;
            let present = age == FieldAge::Live && hv.get(f).is_some();
            found += present as usize;
            if (p.fxx && !present) || (p.fnx && present) {
                break;
            }
        }
        let ok = if p.fxx { found == fields } else { found == 0 };
        if !ok {
            let gone = settle(&mut shard, h, key);
            drop(shard);
            if expired {
                ctx.modified(key, HASH, "hexpired");
                crate::propagate::prevent();
            }
            if gone {
                ctx.notify(key, GENERIC, "del");
            }
            return ctx.out.int(0);
        }
    }
    hv.try_conversion(pairs.clone().flat_map(|(f, v)| [f, v]), lim);
    let (mut updated, mut deleted) = (0u64, 0u64);
    if let Expiry::At(..) = p.expiry {
        hv.make_volatile();
    }
    for (f, v) in pairs.clone() {
        match p.expiry {
            Expiry::Keep => {
                hv.set(f, v, lim);
            }
            Expiry::KeepTtl | Expiry::Persist => {
                hv.set_keep_ttl(f, v, lim);
            }
            Expiry::At(at, _) => {
                hv.set_keep_ttl(f, v, lim);
                if at <= ctx.now {
                    delete_now(ctx, hv, key, f);
                    deleted += 1;
                } else {
                    hv.set_field_ttl(f, at);
                    updated += 1;
                }
            }
        }
    }
    let gone = settle(&mut shard, h, key);
    drop(shard);
    if !exists && !gone {
        ctx.notify(key, NEW, "new");
    }
    ctx.dirty = Some(((args.len() - p.first) / 2) as u64);
    if expired {
        ctx.modified(key, HASH, "hexpired");
    }
    ctx.modified(key, HASH, "hset");
    if deleted > 0 || updated > 0 {
        ctx.modified(key, HASH, if deleted > 0 { "hdel" } else { "hexpire" });
    }
    if gone {
        ctx.notify(key, GENERIC, "del");
    }
    if deleted > 0 {
        crate::propagate::prevent();
    } else if let Expiry::At(at, false) = p.expiry {
        let mut ms = itoa::Buffer::new();
        let mut rec: Vec<&[u8]> = args.iter().collect();
        rec[p.expiry_at] = b"PXAT";
        rec[p.expiry_at + 1] = ms.format(at).as_bytes();
        crate::propagate::rewrite(&rec);
    }
    ctx.out.int(1);
}
