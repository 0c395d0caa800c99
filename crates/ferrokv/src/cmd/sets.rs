//! Set commands (redis.io/commands/?group=set), following Redis 7.0's
//! t_set.c: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER
//! SMOVE SINTER SINTERCARD SINTERSTORE SUNION SUNIONSTORE SDIFF SDIFFSTORE
//! SSCAN.
//!
//! Values are [`SetValue`]s (`intset` / `hashtable`, see `db/set.rs`).
//! Commands that build a set member by member (the *STORE commands, SMOVE
//! into a new key, SPOP's "keep the rest" strategy, SUNION/SDIFF replies)
//! start from an empty intset and add as Redis's `setTypeAdd` does, so the
//! resulting OBJECT ENCODING is Redis's.
//!
//! Keyspace statistics: Redis counts hits/misses in `lookupKeyRead`, used
//! by the read commands and by the sources of SINTERSTORE / SUNIONSTORE /
//! SDIFFSTORE; `lookupKeyWrite` (SADD, SREM, SPOP, SMOVE) counts nothing.
//! Every lookup refreshes the entry's access time unless the client set
//! CLIENT NO-TOUCH. Multi-key commands lock every shard they touch,
//! destination included, through `Keyspace::lock_keys`, so they are atomic.

use super::keyspecs;
use super::{acl, cmd, flags::*, Command, Ctx};
use crate::db::lru::Access;
use crate::db::set::Member;
use crate::db::{hash_key, Entry, KeyLocks, SetValue, Shard, Value};
use crate::events::{GENERIC, NEW, SET};
use crate::resp::{Args, Out};
use crate::server::Server;
use crate::util::{glob_match, parse_i64, rand_u64};
use std::sync::atomic::Ordering;
use std::sync::Arc;

const UNION_COMPLEXITY: &str = "O(N) where N is the total number of elements in all given sets.";
const INTER_COMPLEXITY: &str =
    "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.";

/// The sets family's table entries (arity, flags, key positions, ACL
/// categories, docs and tips as Redis 7.0's COMMAND INFO / COMMAND DOCS).
pub static COMMANDS: &[Command] = &[
    cmd("sadd", -3, WRITE | DENYOOM | FAST, (1, 1, 1), acl::SET, sadd).key_specs(keyspecs::APPEND).doc(
        "set",
        "1.0.0",
        "Add one or more members to a set",
        "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
    ),
    cmd("srem", -3, WRITE | FAST, (1, 1, 1), acl::SET, srem).key_specs(keyspecs::HDEL).doc(
        "set",
        "1.0.0",
        "Remove one or more members from a set",
        "O(N) where N is the number of members to be removed.",
    ),
    cmd("smembers", 2, READONLY, (1, 1, 1), acl::SET, smembers).key_specs(keyspecs::DUMP)
        .doc(
            "set",
            "1.0.0",
            "Get all the members in a set",
            "O(N) where N is the set cardinality.",
        )
        .tips(&["nondeterministic_output_order"]),
    cmd("sismember", 3, READONLY | FAST, (1, 1, 1), acl::SET, sismember).key_specs(keyspecs::HEXISTS).doc(
        "set",
        "1.0.0",
        "Determine if a given value is a member of a set",
        "O(1)",
    ),
    cmd("smismember", -3, READONLY | FAST, (1, 1, 1), acl::SET, smismember).key_specs(keyspecs::DUMP).doc(
        "set",
        "6.2.0",
        "Returns the membership associated with the given elements for a set",
        "O(N) where N is the number of elements being checked for membership",
    ),
    cmd("scard", 2, READONLY | FAST, (1, 1, 1), acl::SET, scard).key_specs(keyspecs::HEXISTS).doc(
        "set",
        "1.0.0",
        "Get the number of members in a set",
        "O(1)",
    ),
    cmd("spop", -2, WRITE | FAST, (1, 1, 1), acl::SET, spop).key_specs(keyspecs::GETDEL)
        .doc(
            "set",
            "1.0.0",
            "Remove and return one or multiple random members from a set",
            "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.",
        )
        .tips(&["nondeterministic_output"]),
    cmd("srandmember", -2, READONLY, (1, 1, 1), acl::SET, srandmember).key_specs(keyspecs::DUMP)
        .doc(
            "set",
            "1.0.0",
            "Get one or multiple random members from a set",
            "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.",
        )
        .tips(&["nondeterministic_output"]),
    cmd("smove", 4, WRITE | FAST, (1, 2, 1), acl::SET, smove).key_specs(keyspecs::BLMOVE).doc(
        "set",
        "1.0.0",
        "Move a member from one set to another",
        "O(1)",
    ),
    cmd("sinter", -2, READONLY, (1, -1, 1), acl::SET, sinter).key_specs(keyspecs::MGET)
        .doc("set", "1.0.0", "Intersect multiple sets", INTER_COMPLEXITY)
        .tips(&["nondeterministic_output_order"]),
    cmd("sintercard", -3, READONLY | MOVABLE_KEYS, (0, 0, 0), acl::SET, sintercard).key_specs(keyspecs::SINTERCARD).key_finder(keyspecs::numkeys_at_1).doc(
        "set",
        "7.0.0",
        "Intersect multiple sets and return the cardinality of the result",
        INTER_COMPLEXITY,
    ),
    cmd("sinterstore", -3, WRITE | DENYOOM, (1, -1, 1), acl::SET, sinterstore).key_specs(keyspecs::SINTERSTORE).doc(
        "set",
        "1.0.0",
        "Intersect multiple sets and store the resulting set in a key",
        INTER_COMPLEXITY,
    ),
    cmd("sunion", -2, READONLY, (1, -1, 1), acl::SET, sunion).key_specs(keyspecs::MGET)
        .doc("set", "1.0.0", "Add multiple sets", UNION_COMPLEXITY)
        .tips(&["nondeterministic_output_order"]),
    cmd("sunionstore", -3, WRITE | DENYOOM, (1, -1, 1), acl::SET, sunionstore).key_specs(keyspecs::SDIFFSTORE).doc(
        "set",
        "1.0.0",
        "Add multiple sets and store the resulting set in a key",
        UNION_COMPLEXITY,
    ),
    cmd("sdiff", -2, READONLY, (1, -1, 1), acl::SET, sdiff).key_specs(keyspecs::MGET)
        .doc("set", "1.0.0", "Subtract multiple sets", UNION_COMPLEXITY)
        .tips(&["nondeterministic_output_order"]),
    cmd("sdiffstore", -3, WRITE | DENYOOM, (1, -1, 1), acl::SET, sdiffstore).key_specs(keyspecs::SDIFFSTORE).doc(
        "set",
        "1.0.0",
        "Subtract multiple sets and store the resulting set in a key",
        UNION_COMPLEXITY,
    ),
    cmd("sscan", -3, READONLY, (1, 1, 1), acl::SET, sscan).key_specs(keyspecs::DUMP)
        .doc(
            "set",
            "2.8.0",
            "Incrementally iterate Set elements",
            "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
        )
        .tips(&["nondeterministic_output"]),
];

/// SPOP / SRANDMEMBER count out of range (`getPositiveLongFromObjectOrReply`).
pub const ERR_NOT_POSITIVE: &str = "ERR value is out of range, must be positive";
/// SRANDMEMBER count of i64::MIN (Redis 7.0 accepts -LONG_MAX..LONG_MAX).
pub const ERR_RAND_RANGE: &str =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
/// SINTERCARD numkeys not a positive integer.
pub const ERR_NUMKEYS: &str = "ERR numkeys should be greater than 0";
/// SINTERCARD numkeys above the number of arguments.
pub const ERR_NUMKEYS_ARGS: &str = "ERR Number of keys can't be greater than number of args";
/// SINTERCARD LIMIT not a non-negative integer.
pub const ERR_LIMIT: &str = "ERR LIMIT can't be negative";

/// SPOP_MOVE_STRATEGY_MUL (t_set.c).
const SPOP_MOVE_STRATEGY_MUL: u128 = 5;
/// SRANDMEMBER_SUB_STRATEGY_MUL (t_set.c).
const SRANDMEMBER_SUB_STRATEGY_MUL: u128 = 3;

// ---------------------------------------------------------------- helpers

/// The server, borrowed for the whole command (so shard guards can live
/// while `ctx` replies).
#[inline]
fn srv<'a>(ctx: &Ctx<'a>) -> &'a Arc<Server> {
    ctx.server
}

/// set-max-intset-entries.
#[inline]
fn max_intset(ctx: &Ctx<'_>) -> u64 {
    ctx.server
        .live
        .set_max_intset_entries
        .load(Ordering::Relaxed)
}

/// A key that holds another type.
#[derive(Clone, Copy, Debug)]
struct WrongType;

/// Looks `key` up (lazy expiry first), refreshing its access time:
/// Ok(None) when missing, Ok(Some(set)) for a set, Err for another type.
#[inline]
fn get_set<'s>(
    shard: &'s mut Shard,
    h: u64,
    key: &[u8],
    now: u64,
    touch: Option<Access<'_>>,
) -> Result<Option<&'s mut SetValue>, WrongType> {
    match shard.get(h, key, now) {
        None => Ok(None),
        Some(e) => {
            if let Some(t) = touch {
                t.record(&mut e.lru);
            }
            match &mut e.value {
                Value::Set(s) => Ok(Some(s)),
                _ => Err(WrongType),
            }
        }
    }
}

/// A set already looked up (and type-checked) through [`get_set`].
#[inline]
fn peek_set<'s>(shard: &'s Shard, h: u64, key: &[u8], now: u64) -> Option<&'s SetValue> {
    match shard.peek(h, key, now).map(|e| &e.value) {
        Some(Value::Set(s)) => Some(s),
        _ => None,
    }
}

/// Writes a member as a bulk string.
#[inline]
fn reply_member(out: &mut Out, m: Member<'_>) {
    match m {
        Member::Int(n) => out.bulk_int(n),
        Member::Bytes(b) => out.bulk(b),
    }
}

/// Writes a whole set as a RESP3 set (array in RESP2) in iteration order.
fn reply_set(out: &mut Out, s: &SetValue) {
    out.set(s.len());
    for m in s.iter() {
        reply_member(out, m);
    }
}

use super::opt_is;

/// Replaces or deletes `dst` with a computed set, as the *STORE commands
/// (`setKey` / `dbDelete`): a non-empty result is stored without TTL over
/// any previous value (events `new` when `dst` did not exist, then
/// `event`); an empty one deletes `dst` (event `del` when it existed).
/// Replies the size.
fn store_result(
    ctx: &mut Ctx<'_>,
    locks: KeyLocks<'_>,
    dst: &[u8],
    hd: u64,
    result: SetValue,
    event: &'static str,
) {
    let n = result.len();
    let value = (n > 0).then(|| Value::Set(Box::new(result)));
    super::store_or_delete(ctx, locks, dst, hd, value, SET, event);
    ctx.out.int(n as i64);
}

// ------------------------------------------------------------ SADD / SREM

/// SADD key member [member ...]: integer, the number of members added
/// (not counting those already present). Creates the key: an intset when
/// the first member is an integer, else a hashtable (`setTypeCreate`).
fn sadd(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let max = max_intset(ctx);
    let (now, touch) = (ctx.now, ctx.touch_time());
    let (h, mut shard) = ctx.lock(key);
    let added = match get_set(&mut shard, h, key, now, touch) {
        Err(WrongType) => {
            drop(shard);
            return ctx.wrongtype();
        }
        Ok(Some(s)) => args.iter().skip(2).filter(|m| s.add(m, max)).count(),
        Ok(None) => {
            let mut s = SetValue::for_member(args.get(2));
            let n = args.iter().skip(2).filter(|m| s.add(m, max)).count();
            shard.insert(
                h,
                key,
                Entry::new(
                    Value::Set(Box::new(s)),
                    ctx.server.keyspace.lru.initial(now),
                ),
            );
            ctx.notify(key, NEW, "new");
            n
        }
    };
    drop(shard);
    if added > 0 {
        ctx.modified(key, SET, "sadd");
    }
    ctx.out.int(added as i64);
}

/// SREM key member [member ...]: integer, the number of members removed;
/// the key is deleted when the set becomes empty. 0 for a missing key.
fn srem(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (now, touch) = (ctx.now, ctx.touch_time());
    let (h, mut shard) = ctx.lock(key);
    let (removed, empty) = match get_set(&mut shard, h, key, now, touch) {
        Err(WrongType) => {
            drop(shard);
            return ctx.wrongtype();
        }
        Ok(None) => (0, false),
        Ok(Some(s)) => {
            let mut n = 0i64;
            for m in args.iter().skip(2) {
                if s.remove(m) {
                    n += 1;
                    if s.is_empty() {
                        break;
                    }
                }
            }
            (n, s.is_empty())
        }
    };
    let old = if empty { shard.remove(h, key) } else { None };
    drop(shard);
    drop(old);
    if removed > 0 {
        ctx.modified(key, SET, "srem");
        if empty {
            ctx.notify(key, GENERIC, "del");
        }
    }
    ctx.out.int(removed);
}

// ------------------------------------------------ single-key read commands

/// Runs `f` on the set at `args[1]` for a read command (hit/miss counted,
/// access time refreshed), or `missing` when the key does not exist;
/// WRONGTYPE for another type.
fn read_set(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    missing: impl FnOnce(&mut Out),
    f: impl FnOnce(&mut Out, &SetValue),
) {
    let (now, touch) = (ctx.now, ctx.touch_time());
    let (h, mut shard) = ctx.lock(key);
    match get_set(&mut shard, h, key, now, touch) {
        Err(WrongType) => {
            drop(shard);
            ctx.hit(key, true);
            ctx.wrongtype();
        }
        Ok(None) => {
            drop(shard);
            ctx.hit(key, false);
            missing(ctx.out);
        }
        Ok(Some(s)) => {
            f(ctx.out, s);
            drop(shard);
            ctx.hit(key, true);
        }
    }
}

/// SMEMBERS key: every member, as a RESP3 set (array in RESP2); intsets in
/// ascending order. Empty set for a missing key.
fn smembers(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    read_set(ctx, args.get(1), |o| o.set(0), reply_set);
}

/// SISMEMBER key member: 1 or 0.
fn sismember(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let m = args.get(2);
    read_set(
        ctx,
        args.get(1),
        |o| o.int(0),
        |o, s| o.int(s.contains(m) as i64),
    );
}

/// SMISMEMBER key member [member ...]: array of 1/0, one per member (all
/// 0 for a missing key).
fn smismember(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let n = args.len() - 2;
    read_set(
        ctx,
        args.get(1),
        |o| {
            o.array(n);
            for _ in 0..n {
                o.int(0);
            }
        },
        |o, s| {
            o.array(n);
            for m in args.iter().skip(2) {
                o.int(s.contains(m) as i64);
            }
        },
    );
}

/// SCARD key: the number of members, 0 for a missing key.
fn scard(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    read_set(ctx, args.get(1), |o| o.int(0), |o, s| o.int(s.len() as i64));
}

// -------------------------------------------------------- SPOP / SRANDMEMBER

/// SPOP key [count]: without count, a random member removed from the set
/// (nil for a missing key); with count, up to `count` distinct random
/// members removed, as a RESP3 set (array in RESP2), empty for a missing
/// key or count 0. A set emptied is deleted. Errors: "ERR value is out of
/// range, must be positive" for a negative or non-integer count; syntax
/// error with more arguments. Follows `spopWithCountCommand`: count >= size
/// returns the whole set; when few members would remain
/// (remaining * 5 <= count) the remaining ones are moved into a new set,
/// built member by member (so it may be an intset again).
fn spop(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if args.len() > 3 {
        return ctx.syntax();
    }
    if args.len() == 3 {
        return spop_count(ctx, args);
    }
    let key = args.get(1);
    let (now, touch) = (ctx.now, ctx.touch_time());
    let (h, mut shard) = ctx.lock(key);
    let s = match get_set(&mut shard, h, key, now, touch) {
        Err(WrongType) => {
            drop(shard);
            return ctx.wrongtype();
        }
        Ok(None) => {
            drop(shard);
            return ctx.out.null();
        }
        Ok(Some(s)) => s,
    };
    let Some(m) = s.random(rand_u64).map(|m| m.to_vec()) else {
        drop(shard);
        return ctx.out.null();
    };
    s.remove(&m);
    let old = if s.is_empty() {
        shard.remove(h, key)
    } else {
        None
    };
    let emptied = old.is_some();
    drop(shard);
    drop(old);
    ctx.notify(key, SET, "spop");
    if emptied {
        ctx.notify(key, GENERIC, "del");
    }
    ctx.touch_key(key);
    crate::propagate::rewrite(&[b"SREM", key, &m]);
    ctx.out.bulk(&m);
}

/// SPOP's record of the members a count popped: SREM key m1 m2 ... in
/// commands of at most 1024 members (Redis's spopWithCountCommand).
struct SremRecords<'k> {
    key: &'k [u8],
    batch: Vec<Vec<u8>>,
    on: bool,
}

impl<'k> SremRecords<'k> {
    fn new(key: &'k [u8], on: bool) -> Self {
        SremRecords {
            key,
            batch: Vec::new(),
            on,
        }
    }

    fn push(&mut self, m: &[u8]) {
        if self.on {
            self.batch.push(m.to_vec());
            if self.batch.len() == 1024 {
                self.flush();
            }
        }
    }

    fn flush(&mut self) {
        if !self.batch.is_empty() {
            let mut argv: Vec<&[u8]> = vec![b"SREM", self.key];
            argv.extend(self.batch.iter().map(|m| m.as_slice()));
            crate::propagate::rewrite_more(&argv);
            self.batch.clear();
        }
    }
}

fn spop_count(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    // Redis 7.0.15 answers "must be positive" for a non-integer too.
    let count = match parse_i64(args.get(2)) {
        Some(c) if c >= 0 => c as u64,
        _ => return ctx.error(ERR_NOT_POSITIVE),
    };
    let key = args.get(1);
    let max = max_intset(ctx);
    let (now, touch) = (ctx.now, ctx.touch_time());
    let (h, mut shard) = ctx.lock(key);
    let s = match get_set(&mut shard, h, key, now, touch) {
        Err(WrongType) => {
            drop(shard);
            return ctx.wrongtype();
        }
        Ok(None) => {
            drop(shard);
            return ctx.out.set(0);
        }
        Ok(Some(s)) => s,
    };
    if count == 0 {
        drop(shard);
        return ctx.out.set(0);
    }
    let size = s.len() as u64;
    ctx.notify(key, SET, "spop");
    ctx.touch_key(key);
    if count >= size {
        // Redis replies through SUNION of the key (a read lookup: one hit)
        // and deletes it.
        reply_set(ctx.out, s);
        let old = shard.remove(h, key);
        drop(shard);
        crate::db::lazyfree::free_old(old, crate::db::lazyfree::Reason::ServerDel);
        ctx.notify(key, GENERIC, "del");
        ctx.hit(key, true);
        // Recorded as a DEL of the key (Redis: DEL, or UNLINK with
        // lazyfree-lazy-server-del).
        crate::propagate::rewrite(&[b"DEL", key]);
        return;
    }
    ctx.out.set(count as usize);
    let remaining = size - count;
    let mut rec = SremRecords::new(key, ctx.server.propagation.on());
    if remaining as u128 * SPOP_MOVE_STRATEGY_MUL > count as u128 {
        for _ in 0..count {
            let Some(m) = s.random(rand_u64).map(|m| m.to_vec()) else {
                break;
            };
            ctx.out.bulk(&m);
            rec.push(&m);
            s.remove(&m);
        }
    } else {
        let mut kept: Option<SetValue> = None;
        for _ in 0..remaining {
            let Some(m) = s.random(rand_u64).map(|m| m.to_vec()) else {
                break;
            };
            kept.get_or_insert_with(|| SetValue::for_member(&m))
                .add(&m, max);
            s.remove(&m);
        }
        let mut tmp = itoa::Buffer::new();
        for m in s.iter() {
            reply_member(ctx.out, m);
            rec.push(m.as_bytes(&mut tmp));
        }
        if let Some(k) = kept {
            *s = k;
        }
    }
    drop(shard);
    rec.flush();
}

/// SRANDMEMBER key [count]: without count, a random member (nil for a
/// missing key). With a count >= 0, up to `count` distinct members; with a
/// negative count, exactly |count| members that may repeat; both as arrays
/// (also in RESP3), empty for a missing key or count 0. Errors: not an
/// integer; i64::MIN is out of range (Redis 7.0 accepts
/// -9223372036854775807..9223372036854775807); syntax error with more
/// arguments. A negative count of more than
/// [`STREAM_ABOVE`](super::stream::STREAM_ABOVE) members is produced chunk
/// by chunk from a copy of the set (cmd/stream.rs), bounded by the output
/// buffer limits as Redis's reply is.
fn srandmember(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if args.len() > 3 {
        return ctx.syntax();
    }
    if args.len() == 3 {
        return srandmember_count(ctx, args);
    }
    read_set(
        ctx,
        args.get(1),
        |o| o.null(),
        |o, s| match s.random(rand_u64) {
            Some(m) => reply_member(o, m),
            None => o.null(),
        },
    );
}

fn srandmember_count(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(l) = super::arg_i64(ctx, args.get(2)) else {
        return;
    };
    if l == i64::MIN {
        return ctx.error(ERR_RAND_RANGE);
    }
    let uniq = l >= 0;
    let count = l.unsigned_abs();
    let mut stream = None;
    read_set(
        ctx,
        args.get(1),
        |o| o.array(0),
        |o, s| {
            if count == 0 {
                return o.array(0);
            }
            let size = s.len() as u64;
            if !uniq || count == 1 {
                o.array(count as usize);
                if count > super::stream::STREAM_ABOVE {
                    let mut picks =
                        super::stream::RandomPicks::new(super::stream::Shape::Members, count);
                    let mut tmp = itoa::Buffer::new();
                    for m in s.iter() {
                        picks.push(m.as_bytes(&mut tmp));
                    }
                    stream = Some(picks);
                    return;
                }
                for _ in 0..count {
                    match s.random(rand_u64) {
                        Some(m) => reply_member(o, m),
                        None => break,
                    }
                }
                return;
            }
            if count >= size {
                o.array(size as usize);
                for m in s.iter() {
                    reply_member(o, m);
                }
                return;
            }
            let count = count as usize;
            let mut picked: Vec<Member<'_>> = Vec::with_capacity(count);
            if count as u128 * SRANDMEMBER_SUB_STRATEGY_MUL > size as u128 {
                // Few members left out: shuffle a copy and keep a prefix.
                let mut all: Vec<Member<'_>> = s.iter().collect();
                for i in 0..count {
                    let j = i + (rand_u64() % (all.len() - i) as u64) as usize;
                    all.swap(i, j);
                }
                all.truncate(count);
                picked = all;
            } else {
                // Few members wanted: draw until enough distinct ones.
                let mut seen = std::collections::HashSet::with_capacity(count);
                while picked.len() < count {
                    let Some(m) = s.random(rand_u64) else {
                        break;
                    };
                    if seen.insert(m) {
                        picked.push(m);
                    }
                }
            }
            o.array(picked.len());
            for m in picked {
                reply_member(o, m);
            }
        },
    );
    if let Some(picks) = stream {
        ctx.stream_reply(picks);
    }
}

// ------------------------------------------------------------------ SMOVE

/// SMOVE source destination member: 1 when moved, 0 when `source` is
/// missing or does not hold `member`. WRONGTYPE when either key holds
/// another type (a missing source answers 0 first, as Redis). With
/// source == destination, 1 if `member` is in the set. An emptied source is
/// deleted; a missing destination is created (`setTypeCreate`).
fn smove(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let (src, dst, m) = (args.get(1), args.get(2), args.get(3));
    let db = ctx.client.db;
    let (hs, hd) = (hash_key(src), hash_key(dst));
    let max = max_intset(ctx);
    let (now, touch) = (ctx.now, ctx.touch_time());
    let mut locks = srv(ctx).keyspace.lock_keys(&[(db, hs), (db, hd)]);
    let src_state = match get_set(locks.shard(db, hs), hs, src, now, touch) {
        Err(WrongType) => Err(WrongType),
        Ok(s) => Ok(s.is_some()),
    };
    let dst_state = match get_set(locks.shard(db, hd), hd, dst, now, touch) {
        Err(WrongType) => Err(WrongType),
        Ok(s) => Ok(s.is_some()),
    };
    match (src_state, dst_state) {
        (Ok(false), _) => {
            drop(locks);
            return ctx.out.int(0);
        }
        (Err(_), _) | (_, Err(_)) => {
            drop(locks);
            return ctx.wrongtype();
        }
        _ => {}
    }
    let dst_exists = dst_state.unwrap_or(false);
    if src == dst {
        let r = peek_set(locks.shard_ref(db, hs), hs, src, now).is_some_and(|s| s.contains(m));
        drop(locks);
        return ctx.out.int(r as i64);
    }
    let shard = locks.shard(db, hs);
    let Ok(Some(s)) = get_set(shard, hs, src, now, None) else {
        drop(locks);
        return ctx.out.int(0);
    };
    if !s.remove(m) {
        drop(locks);
        return ctx.out.int(0);
    }
    let old = if s.is_empty() {
        shard.remove(hs, src)
    } else {
        None
    };
    let src_emptied = old.is_some();
    let shard = locks.shard(db, hd);
    let added = if dst_exists {
        match get_set(shard, hd, dst, now, None) {
            Ok(Some(d)) => d.add(m, max),
            _ => false,
        }
    } else {
        let mut d = SetValue::for_member(m);
        d.add(m, max);
        shard.insert(
            hd,
            dst,
            Entry::new(
                Value::Set(Box::new(d)),
                ctx.server.keyspace.lru.initial(now),
            ),
        );
        true
    };
    drop(locks);
    drop(old);
    // t_set.c smoveCommand's order of events.
    ctx.notify(src, SET, "srem");
    if src_emptied {
        ctx.notify(src, GENERIC, "del");
    }
    if !dst_exists {
        ctx.notify(dst, NEW, "new");
    }
    ctx.touch_key(src);
    if added {
        ctx.modified(dst, SET, "sadd");
    }
    ctx.out.int(1);
}

// ------------------------------------------------------ multi-key helpers

/// Looks up the source keys `keys` (read lookups: hits/misses counted,
/// access times refreshed) in the locked shards. Stops at the first key of
/// another type (Redis returns there) with Err; otherwise Ok with which
/// keys exist.
fn lookup_sources(
    ctx: &mut Ctx<'_>,
    locks: &mut KeyLocks<'_>,
    keys: &[(&[u8], u64)],
) -> Result<Vec<bool>, WrongType> {
    let db = ctx.client.db;
    let (now, touch) = (ctx.now, ctx.touch_time());
    let mut found = Vec::with_capacity(keys.len());
    let (mut hits, mut misses) = (0u64, 0u64);
    let mut res = Ok(());
    for &(k, h) in keys {
        match get_set(locks.shard(db, h), h, k, now, touch) {
            Ok(s) => {
                if s.is_some() {
                    hits += 1;
                } else {
                    misses += 1;
                    ctx.events().keymiss(db, k);
                }
                found.push(s.is_some());
            }
            Err(WrongType) => {
                hits += 1;
                res = Err(WrongType);
                break;
            }
        }
    }
    crate::stats::bump(&ctx.stats.hits, hits);
    crate::stats::bump(&ctx.stats.misses, misses);
    res.map(|_| found)
}

/// (key, hash) of `args[from..to]`.
fn keys_of<'a>(args: &Args<'a>, from: usize, to: usize) -> Vec<(&'a [u8], u64)> {
    (from..to)
        .map(|i| {
            let k = args.get(i);
            (k, hash_key(k))
        })
        .collect()
}

/// Locks the shards of `keys` plus `dst` (when given) in the client's
/// database.
fn lock_all<'a>(ctx: &Ctx<'a>, keys: &[(&[u8], u64)], dst: Option<u64>) -> KeyLocks<'a> {
    let db = ctx.client.db;
    let mut hs: Vec<(usize, u64)> = keys.iter().map(|&(_, h)| (db, h)).collect();
    if let Some(h) = dst {
        hs.push((db, h));
    }
    srv(ctx).keyspace.lock_keys(&hs)
}

/// The source sets (None for missing keys), after [`lookup_sources`].
fn sources<'l>(
    locks: &'l KeyLocks<'_>,
    db: usize,
    keys: &[(&[u8], u64)],
    now: u64,
) -> Vec<Option<&'l SetValue>> {
    keys.iter()
        .map(|&(k, h)| peek_set(locks.shard_ref(db, h), h, k, now))
        .collect()
}

// ------------------------------------------------------------ intersection

/// What an intersection produces.
enum InterMode {
    /// SINTER / SMEMBERS: reply the members.
    Reply,
    /// SINTERCARD: count up to a limit (0 = none).
    Card(u64),
    /// SINTERSTORE: build the result set.
    Store,
}

/// The intersection of `keys` (`sinterGenericCommand`): the smallest set
/// is iterated (stable order among equal sizes) and each member checked
/// against the others. Any missing key makes the result empty (after every
/// key's type was checked). Returns the built set for [`InterMode::Store`].
fn intersect(
    ctx: &mut Ctx<'_>,
    locks: &mut KeyLocks<'_>,
    keys: &[(&[u8], u64)],
    mode: InterMode,
) -> Result<Option<SetValue>, WrongType> {
    let found = lookup_sources(ctx, locks, keys)?;
    let db = ctx.client.db;
    let max = max_intset(ctx);
    if found.iter().any(|f| !f) {
        match mode {
            InterMode::Reply => ctx.out.set(0),
            InterMode::Card(_) => ctx.out.int(0),
            InterMode::Store => return Ok(Some(SetValue::new())),
        }
        return Ok(None);
    }
    let mut sets: Vec<&SetValue> = sources(locks, db, keys, ctx.now)
        .into_iter()
        .flatten()
        .collect();
    sets.sort_by_key(|s| s.len());
    let (first, rest) = sets.split_first().expect("at least one key");
    let members = first.iter().filter(|m| {
        rest.iter()
            .all(|o| std::ptr::eq(*o, *first) || o.contains_member(*m))
    });
    match mode {
        InterMode::Reply => {
            let mut out: Vec<Member<'_>> = Vec::new();
            out.extend(members);
            ctx.out.set(out.len());
            for m in out {
                reply_member(ctx.out, m);
            }
            Ok(None)
        }
        InterMode::Card(limit) => {
            let mut n = 0u64;
            for _ in members {
                n += 1;
                if limit != 0 && n >= limit {
                    break;
                }
            }
            ctx.out.int(n as i64);
            Ok(None)
        }
        InterMode::Store => {
            let mut r = SetValue::new();
            let mut tmp = itoa::Buffer::new();
            for m in members {
                r.add(m.as_bytes(&mut tmp), max);
            }
            Ok(Some(r))
        }
    }
}

/// SINTER key [key ...]: the members common to every set, as a RESP3 set
/// (array in RESP2); empty when any key is missing. WRONGTYPE when a key
/// holds another type (checked up to the first such key, before missing
/// keys matter).
fn sinter(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let keys = keys_of(args, 1, args.len());
    let mut locks = lock_all(ctx, &keys, None);
    let r = intersect(ctx, &mut locks, &keys, InterMode::Reply);
    drop(locks);
    if r.is_err() {
        ctx.wrongtype();
    }
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit]: integer, the size of
/// the intersection, counting stops at `limit` when non-zero. Errors:
/// "ERR numkeys should be greater than 0" (also for a non-integer), "ERR
/// Number of keys can't be greater than number of args", "ERR LIMIT can't
/// be negative" (also for a non-integer), syntax error for other options.
fn sintercard(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let numkeys = match parse_i64(args.get(1)) {
        Some(n) if n >= 1 => n as u64,
        _ => return ctx.error(ERR_NUMKEYS),
    };
    if numkeys > (args.len() - 2) as u64 {
        return ctx.error(ERR_NUMKEYS_ARGS);
    }
    let end = 2 + numkeys as usize;
    let mut limit = 0u64;
    let mut j = end;
    while j < args.len() {
        if opt_is(args.get(j), b"limit") && j + 1 < args.len() {
            match parse_i64(args.get(j + 1)) {
                Some(l) if l >= 0 => limit = l as u64,
                _ => return ctx.error(ERR_LIMIT),
            }
            j += 2;
        } else {
            return ctx.syntax();
        }
    }
    let keys = keys_of(args, 2, end);
    let mut locks = lock_all(ctx, &keys, None);
    let r = intersect(ctx, &mut locks, &keys, InterMode::Card(limit));
    drop(locks);
    if r.is_err() {
        ctx.wrongtype();
    }
}

/// SINTERSTORE destination key [key ...]: integer, the size of the
/// intersection stored at `destination` (replacing any value and TTL); an
/// empty result deletes `destination`.
fn sinterstore(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let dst = args.get(1);
    let hd = hash_key(dst);
    let keys = keys_of(args, 2, args.len());
    let mut locks = lock_all(ctx, &keys, Some(hd));
    match intersect(ctx, &mut locks, &keys, InterMode::Store) {
        Err(WrongType) => {
            drop(locks);
            ctx.wrongtype();
        }
        Ok(r) => store_result(ctx, locks, dst, hd, r.unwrap_or_default(), "sinterstore"),
    }
}

// --------------------------------------------------------- union and diff

/// SUNION (true) or SDIFF (false) of `keys`, built member by member into a
/// fresh intset as `sunionDiffGenericCommand` does, including its choice
/// of diff algorithm (which decides the result's encoding): algorithm 1
/// adds the members of the first set found in no other set; algorithm 2
/// adds the whole first set and removes the others' members.
fn union_diff(
    ctx: &mut Ctx<'_>,
    locks: &mut KeyLocks<'_>,
    keys: &[(&[u8], u64)],
    union: bool,
) -> Result<SetValue, WrongType> {
    lookup_sources(ctx, locks, keys)?;
    let db = ctx.client.db;
    let max = max_intset(ctx);
    let sets = sources(locks, db, keys, ctx.now);
    let mut r = SetValue::new();
    let mut tmp = itoa::Buffer::new();
    if union {
        for s in sets.iter().flatten() {
            for m in s.iter() {
                r.add(m.as_bytes(&mut tmp), max);
            }
        }
        return Ok(r);
    }
    let Some(first) = sets[0] else {
        return Ok(r);
    };
    let first_key = keys[0].0;
    if keys[1..]
        .iter()
        .zip(&sets[1..])
        .any(|(k, s)| s.is_some() && k.0 == first_key)
    {
        return Ok(r);
    }
    let (mut one, mut two) = (0u128, 0u128);
    for s in sets.iter().flatten() {
        one += first.len() as u128;
        two += s.len() as u128;
    }
    if one / 2 <= two {
        for m in first.iter() {
            if !sets[1..].iter().flatten().any(|o| o.contains_member(m)) {
                r.add(m.as_bytes(&mut tmp), max);
            }
        }
    } else {
        for m in first.iter() {
            r.add(m.as_bytes(&mut tmp), max);
        }
        for s in sets[1..].iter().flatten() {
            if r.is_empty() {
                break;
            }
            for m in s.iter() {
                r.remove(m.as_bytes(&mut tmp));
            }
        }
    }
    Ok(r)
}

fn union_diff_reply(ctx: &mut Ctx<'_>, args: &Args<'_>, union: bool) {
    let keys = keys_of(args, 1, args.len());
    let mut locks = lock_all(ctx, &keys, None);
    let r = union_diff(ctx, &mut locks, &keys, union);
    drop(locks);
    match r {
        Err(WrongType) => ctx.wrongtype(),
        Ok(s) => {
            reply_set(ctx.out, &s);
            // The result set is a temporary object that Redis frees like a
            // deleted key under lazyfree-lazy-server-del.
            if crate::db::lazyfree::lazy(crate::db::lazyfree::Reason::ServerDel) {
                crate::db::lazyfree::free_value_async(crate::db::Value::Set(Box::new(s)));
            }
        }
    }
}

fn union_diff_store(ctx: &mut Ctx<'_>, args: &Args<'_>, union: bool) {
    let dst = args.get(1);
    let hd = hash_key(dst);
    let keys = keys_of(args, 2, args.len());
    let mut locks = lock_all(ctx, &keys, Some(hd));
    match union_diff(ctx, &mut locks, &keys, union) {
        Err(WrongType) => {
            drop(locks);
            ctx.wrongtype();
        }
        Ok(r) => {
            let event = if union { "sunionstore" } else { "sdiffstore" };
            store_result(ctx, locks, dst, hd, r, event)
        }
    }
}

/// SUNION key [key ...]: every member of any set, as a RESP3 set (array in
/// RESP2); missing keys are empty sets. An all-integer result of at most
/// set-max-intset-entries members comes in ascending order (Redis builds
/// it as an intset).
fn sunion(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    union_diff_reply(ctx, args, true);
}

/// SUNIONSTORE destination key [key ...]: integer, the size of the union
/// stored at `destination` (an empty result deletes it).
fn sunionstore(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    union_diff_store(ctx, args, true);
}

/// SDIFF key [key ...]: the members of the first set found in none of the
/// others, as a RESP3 set (array in RESP2).
fn sdiff(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    union_diff_reply(ctx, args, false);
}

/// SDIFFSTORE destination key [key ...]: integer, the size of the
/// difference stored at `destination` (an empty result deletes it).
fn sdiffstore(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    union_diff_store(ctx, args, false);
}

// ------------------------------------------------------------------ SSCAN

/// SSCAN key cursor [MATCH pattern] [COUNT count]: a two-element array,
/// the next cursor and a batch of members. An intset is returned whole in
/// one call with cursor 0 (as Redis); a hashtable is walked with Redis's
/// reverse-binary cursor, visiting buckets until about COUNT members were
/// seen (at most 10×COUNT buckets), MATCH filtering afterwards. Order of
/// checks as Redis: the cursor ("ERR invalid cursor"), then the key
/// (missing: cursor 0 and no members; WRONGTYPE), then the options (COUNT
/// not an integer; COUNT < 1 or an unknown option: syntax error).
fn sscan(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(cursor) = super::keys::parse_scan_cursor(args.get(2)) else {
        return ctx.error("ERR invalid cursor");
    };
    let key = args.get(1);
    let (now, touch) = (ctx.now, ctx.touch_time());
    let (h, mut shard) = ctx.lock(key);
    let s = match get_set(&mut shard, h, key, now, touch) {
        Err(WrongType) => {
            drop(shard);
            ctx.hit(key, true);
            return ctx.wrongtype();
        }
        Ok(None) => {
            drop(shard);
            ctx.hit(key, false);
            ctx.out.array(2);
            ctx.out.bulk(b"0");
            return ctx.out.array(0);
        }
        Ok(Some(s)) => &*s,
    };
    let mut count: i64 = 10;
    let mut pat: Option<&[u8]> = None;
    let mut i = 3;
    while i < args.len() {
        let o = args.get(i);
        let has_arg = i + 1 < args.len();
        if opt_is(o, b"count") && has_arg {
            match parse_i64(args.get(i + 1)) {
                None => {
                    drop(shard);
                    ctx.hit(key, true);
                    return ctx.not_int();
                }
                Some(c) if c < 1 => {
                    drop(shard);
                    ctx.hit(key, true);
                    return ctx.syntax();
                }
                Some(c) => count = c,
            }
        } else if opt_is(o, b"match") && has_arg {
            let p = args.get(i + 1);
            pat = if p == b"*" { None } else { Some(p) };
        } else {
            drop(shard);
            ctx.hit(key, true);
            return ctx.syntax();
        }
        i += 2;
    }
    let keep = |m: &[u8]| pat.is_none_or(|p| glob_match(p, m, false));
    let mut tmp = itoa::Buffer::new();
    let mut batch: Vec<Vec<u8>> = Vec::new();
    let next = match s {
        SetValue::Int(is) => {
            for v in is.iter() {
                let b = tmp.format(v).as_bytes();
                if keep(b) {
                    batch.push(b.to_vec());
                }
            }
            0
        }
        SetValue::Table(t) => {
            let count = count as usize;
            let mut steps = count.saturating_mul(10).saturating_add(1);
            let mut seen = 0usize;
            let mut c = cursor;
            loop {
                c = t.scan_step(c, |m| {
                    seen += 1;
                    if keep(m) {
                        batch.push(m.to_vec());
                    }
                });
                steps -= 1;
                if c == 0 || steps == 0 || seen >= count {
                    break;
                }
            }
            c
        }
    };
    drop(shard);
    ctx.hit(key, true);
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.bulk_array(batch.iter().map(Vec::as_slice));
}
