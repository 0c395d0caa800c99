//! Sorted set commands (redis.io/commands/?group=sorted-set), following
//! Redis 7.0's t_zset.c as documented and as observed on redis-server
//! 7.0.15: ZADD/ZINCRBY, ZREM, ZCARD, ZSCORE, ZMSCORE, ZRANK/ZREVRANK,
//! ZCOUNT/ZLEXCOUNT, the ZRANGE family (ZRANGE with BYSCORE/BYLEX/REV/LIMIT,
//! ZRANGESTORE, ZREVRANGE, Z[REV]RANGEBYSCORE, Z[REV]RANGEBYLEX), the
//! ZREMRANGEBY* commands, ZPOPMIN/ZPOPMAX/ZMPOP, the set operations
//! (ZUNION/ZINTER/ZDIFF, their STORE forms, ZINTERCARD; plain sets are
//! accepted as inputs with score 1), ZRANDMEMBER and ZSCAN.
//!
//! Each handler keeps Redis's order of checks (argument parsing, then the
//! key's type), because that order decides which error a request gets.
//! Scores are parsed as Redis's `getDoubleFromObject` (strict: the whole
//! string, no leading space, no overflow, no NaN) and ranges as
//! `zslParseRange` (C `strtod`, a leading "(" for exclusive) and
//! `zslParseLexRangeItem` ("-", "+", "[x", "(x"). Scores are replied with
//! `%.17g` (RESP3 double, RESP2 bulk string).
//!
//! Reads count keyspace hits and misses where Redis's `lookupKeyRead` does;
//! writes look keys up without counting. An emptied sorted set is deleted.
//! The blocking pops BZPOPMIN/BZPOPMAX/BZMPOP use the generic machinery of
//! `db::blocking` (as BLPOP does): every command that gives a key members
//! (ZADD, ZINCRBY, ZUNIONSTORE/ZINTERSTORE/ZDIFFSTORE, ZRANGESTORE) serves
//! the key's waiters FIFO before releasing its shard lock.

use super::keyspecs;
use super::{acl, arg_i64, cmd, err, flags::*, Command, Ctx};
use crate::db::blocking::{self, Attempt, BlockOp, ServeCx};
use crate::db::set::SetValue;
use crate::db::zset::{cmp_entry, Limits, ZSetValue};
use crate::db::{hash_key, Entry, KeyLocks, Shard, Value};
use crate::events::{self, GENERIC, NEW};
use crate::resp::{Args, Out};
use crate::server::Server;
use crate::util::{fmt_double_17g, glob_match, rand_u64};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

const ZSET: u64 = acl::SORTEDSET;

/// The sorted-set family's table entries (arity, flags, key positions and
/// ACL categories as Redis 7.0's COMMAND INFO reports them).
pub static COMMANDS: &[Command] = &[
    cmd("zadd", -4, WRITE | DENYOOM | FAST, (1, 1, 1), ZSET, zadd).key_specs(keyspecs::EXPIRE).doc(
        "sorted-set",
        "1.2.0",
        "Add one or more members to a sorted set, or update its score if it already exists",
        "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
    ),
    cmd("zincrby", 4, WRITE | DENYOOM | FAST, (1, 1, 1), ZSET, zincrby).key_specs(keyspecs::DECR).doc(
        "sorted-set",
        "1.2.0",
        "Increment the score of a member in a sorted set",
        "O(log(N)) where N is the number of elements in the sorted set.",
    ),
    cmd("zrem", -3, WRITE | FAST, (1, 1, 1), ZSET, zrem).key_specs(keyspecs::HDEL).doc(
        "sorted-set",
        "1.2.0",
        "Remove one or more members from a sorted set",
        "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.",
    ),
    cmd("zcard", 2, READONLY | FAST, (1, 1, 1), ZSET, zcard).key_specs(keyspecs::HEXISTS).doc(
        "sorted-set",
        "1.2.0",
        "Get the number of members in a sorted set",
        "O(1)",
    ),
    cmd("zscore", 3, READONLY | FAST, (1, 1, 1), ZSET, zscore).key_specs(keyspecs::DUMP).doc(
        "sorted-set",
        "1.2.0",
        "Get the score associated with the given member in a sorted set",
        "O(1)",
    ),
    cmd("zmscore", -3, READONLY | FAST, (1, 1, 1), ZSET, zmscore).key_specs(keyspecs::DUMP).doc(
        "sorted-set",
        "6.2.0",
        "Get the score associated with the given members in a sorted set",
        "O(N) where N is the number of members being requested.",
    ),
    cmd("zrank", 3, READONLY | FAST, (1, 1, 1), ZSET, zrank).key_specs(keyspecs::DUMP).doc(
        "sorted-set",
        "2.0.0",
        "Determine the index of a member in a sorted set",
        "O(log(N))",
    ),
    cmd("zrevrank", 3, READONLY | FAST, (1, 1, 1), ZSET, zrevrank).key_specs(keyspecs::DUMP).doc(
        "sorted-set",
        "2.0.0",
        "Determine the index of a member in a sorted set, with scores ordered from high to low",
        "O(log(N))",
    ),
    cmd("zcount", 4, READONLY | FAST, (1, 1, 1), ZSET, zcount).key_specs(keyspecs::DUMP).doc(
        "sorted-set",
        "2.0.0",
        "Count the members in a sorted set with scores within the given values",
        "O(log(N)) with N being the number of elements in the sorted set.",
    ),
    cmd("zlexcount", 4, READONLY | FAST, (1, 1, 1), ZSET, zlexcount).key_specs(keyspecs::DUMP).doc(
        "sorted-set",
        "2.8.9",
        "Count the number of members in a sorted set between a given lexicographical range",
        "O(log(N)) with N being the number of elements in the sorted set.",
    ),
    cmd("zrange", -4, READONLY, (1, 1, 1), ZSET, zrange).key_specs(keyspecs::DUMP).doc(
        "sorted-set",
        "1.2.0",
        "Return a range of members in a sorted set",
        "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
    ),
    cmd("zrangestore", -5, WRITE | DENYOOM, (1, 2, 1), ZSET, zrangestore).key_specs(keyspecs::ZRANGESTORE).doc(
        "sorted-set",
        "6.2.0",
        "Store a range of members from sorted set into another key",
        "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.",
    ),
    cmd("zrevrange", -4, READONLY, (1, 1, 1), ZSET, zrevrange).key_specs(keyspecs::DUMP).doc(
        "sorted-set",
        "1.2.0",
        "Return a range of members in a sorted set, by index, with scores ordered from high to low",
        "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
    ),
    cmd("zrangebyscore", -4, READONLY, (1, 1, 1), ZSET, zrangebyscore).key_specs(keyspecs::DUMP).doc(
        "sorted-set",
        "1.0.5",
        "Return a range of members in a sorted set, by score",
        "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
    ),
    cmd("zrevrangebyscore", -4, READONLY, (1, 1, 1), ZSET, zrevrangebyscore).key_specs(keyspecs::DUMP).doc(
        "sorted-set",
        "2.2.0",
        "Return a range of members in a sorted set, by score, with scores ordered from high to low",
        "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
    ),
    cmd("zrangebylex", -4, READONLY, (1, 1, 1), ZSET, zrangebylex).key_specs(keyspecs::DUMP).doc(
        "sorted-set",
        "2.8.9",
        "Return a range of members in a sorted set, by lexicographical range",
        "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
    ),
    cmd("zrevrangebylex", -4, READONLY, (1, 1, 1), ZSET, zrevrangebylex).key_specs(keyspecs::DUMP).doc(
        "sorted-set",
        "2.8.9",
        "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.",
        "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
    ),
    cmd("zremrangebyrank", 4, WRITE, (1, 1, 1), ZSET, zremrangebyrank).key_specs(keyspecs::HDEL).doc(
        "sorted-set",
        "2.0.0",
        "Remove all members in a sorted set within the given indexes",
        "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
    ),
    cmd("zremrangebyscore", 4, WRITE, (1, 1, 1), ZSET, zremrangebyscore).key_specs(keyspecs::HDEL).doc(
        "sorted-set",
        "1.2.0",
        "Remove all members in a sorted set within the given scores",
        "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
    ),
    cmd("zremrangebylex", 4, WRITE, (1, 1, 1), ZSET, zremrangebylex).key_specs(keyspecs::HDEL).doc(
        "sorted-set",
        "2.8.9",
        "Remove all members in a sorted set between the given lexicographical range",
        "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
    ),
    cmd("zpopmin", -2, WRITE | FAST, (1, 1, 1), ZSET, zpopmin).key_specs(keyspecs::GETDEL).doc(
        "sorted-set",
        "5.0.0",
        "Remove and return members with the lowest scores in a sorted set",
        "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
    ),
    cmd("zpopmax", -2, WRITE | FAST, (1, 1, 1), ZSET, zpopmax).key_specs(keyspecs::GETDEL).doc(
        "sorted-set",
        "5.0.0",
        "Remove and return members with the highest scores in a sorted set",
        "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
    ),
    cmd("zmpop", -4, WRITE | MOVABLE_KEYS, (0, 0, 0), ZSET, zmpop).key_specs(keyspecs::LMPOP).key_finder(keyspecs::numkeys_at_1).doc(
        "sorted-set",
        "7.0.0",
        "Remove and return members with scores in a sorted set",
        "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
    ),
    cmd(
        "bzpopmin",
        -3,
        WRITE | NOSCRIPT | BLOCKING | FAST,
        (1, -2, 1),
        ZSET,
        bzpopmin,
    ).key_specs(keyspecs::BLPOP)
    .doc(
        "sorted-set",
        "5.0.0",
        "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available",
        "O(log(N)) with N being the number of elements in the sorted set.",
    )
    .key_flags(&["RW", "access", "delete"]),
    cmd(
        "bzpopmax",
        -3,
        WRITE | NOSCRIPT | BLOCKING | FAST,
        (1, -2, 1),
        ZSET,
        bzpopmax,
    ).key_specs(keyspecs::BLPOP)
    .doc(
        "sorted-set",
        "5.0.0",
        "Remove and return the member with the highest score from one or more sorted sets, or block until one is available",
        "O(log(N)) with N being the number of elements in the sorted set.",
    )
    .key_flags(&["RW", "access", "delete"]),
    cmd(
        "bzmpop",
        -5,
        WRITE | BLOCKING | MOVABLE_KEYS,
        (0, 0, 0),
        ZSET,
        bzmpop,
    ).key_specs(keyspecs::BLMPOP).key_finder(keyspecs::numkeys_at_2)
    .doc(
        "sorted-set",
        "7.0.0",
        "Remove and return members with scores in a sorted set or block until one is available",
        "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
    ),
    cmd("zunion", -3, READONLY | MOVABLE_KEYS, (0, 0, 0), ZSET, zunion).key_specs(keyspecs::SINTERCARD).key_finder(keyspecs::numkeys_at_1).doc(
        "sorted-set",
        "6.2.0",
        "Add multiple sorted sets",
        "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
    ),
    cmd("zinter", -3, READONLY | MOVABLE_KEYS, (0, 0, 0), ZSET, zinter).key_specs(keyspecs::SINTERCARD).key_finder(keyspecs::numkeys_at_1).doc(
        "sorted-set",
        "6.2.0",
        "Intersect multiple sorted sets",
        "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
    ),
    cmd("zdiff", -3, READONLY | MOVABLE_KEYS, (0, 0, 0), ZSET, zdiff).key_specs(keyspecs::SINTERCARD).key_finder(keyspecs::numkeys_at_1).doc(
        "sorted-set",
        "6.2.0",
        "Subtract multiple sorted sets",
        "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
    ),
    cmd("zunionstore", -4, WRITE | DENYOOM | MOVABLE_KEYS, (1, 1, 1), ZSET, zunionstore).key_specs(keyspecs::ZDIFFSTORE).key_finder(keyspecs::store_numkeys_at_2).doc(
        "sorted-set",
        "2.0.0",
        "Add multiple sorted sets and store the resulting sorted set in a new key",
        "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
    ),
    cmd("zinterstore", -4, WRITE | DENYOOM | MOVABLE_KEYS, (1, 1, 1), ZSET, zinterstore).key_specs(keyspecs::ZDIFFSTORE).key_finder(keyspecs::store_numkeys_at_2).doc(
        "sorted-set",
        "2.0.0",
        "Intersect multiple sorted sets and store the resulting sorted set in a new key",
        "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
    ),
    cmd("zdiffstore", -4, WRITE | DENYOOM | MOVABLE_KEYS, (1, 1, 1), ZSET, zdiffstore).key_specs(keyspecs::ZDIFFSTORE).key_finder(keyspecs::store_numkeys_at_2).doc(
        "sorted-set",
        "6.2.0",
        "Subtract multiple sorted sets and store the resulting sorted set in a new key",
        "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
    ),
    cmd("zintercard", -3, READONLY | MOVABLE_KEYS, (0, 0, 0), ZSET, zintercard).key_specs(keyspecs::SINTERCARD).key_finder(keyspecs::numkeys_at_1).doc(
        "sorted-set",
        "7.0.0",
        "Intersect multiple sorted sets and return the cardinality of the result",
        "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.",
    ),
    cmd("zrandmember", -2, READONLY, (1, 1, 1), ZSET, zrandmember).key_specs(keyspecs::DUMP)
        .doc(
            "sorted-set",
            "6.2.0",
            "Get one or multiple random elements from a sorted set",
            "O(N) where N is the number of elements returned",
        )
        .tips(&["nondeterministic_output"]),
    cmd("zscan", -3, READONLY, (1, 1, 1), ZSET, zscan).key_specs(keyspecs::DUMP)
        .doc(
            "sorted-set",
            "2.8.0",
            "Incrementally iterate sorted sets elements and associated scores",
            "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        )
        .tips(&["nondeterministic_output"]),
];

// ------------------------------------------------------------ parsing

const NAN_RESULT: &str = "ERR resulting score is not a number (NaN)";
const MINMAX_FLOAT: &str = "ERR min or max is not a float";
const MINMAX_LEX: &str = "ERR min or max not valid string range item";

/// C `strtod` over `s` up to its first NUL byte (Redis's arguments are
/// NUL-terminated sds strings): (value, bytes consumed, ERANGE was set).
fn c_strtod(s: &[u8]) -> (f64, usize, bool) {
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    let mut buf = Vec::with_capacity(end + 1);
    buf.extend_from_slice(&s[..end]);
    buf.push(0);
    let start = buf.as_ptr() as *const libc::c_char;
    let mut eptr: *mut libc::c_char = std::ptr::null_mut();
    // SAFETY: `buf` is NUL-terminated and outlives the call; strtod reads up
    // to the NUL and stores in `eptr` a pointer into `buf`. errno is this
    // thread's; it is cleared first so ERANGE is known to come from strtod.
    unsafe {
        *libc::__errno_location() = 0;
        let v = libc::strtod(start, &mut eptr);
        let erange = *libc::__errno_location() == libc::ERANGE;
        let used = eptr.offset_from(start).max(0) as usize;
        (v, used, erange)
    }
}

/// Parses a score as Redis's `getDoubleFromObject`: the whole string, no
/// leading space, no overflow to ±inf or underflow to 0 (ERANGE), no NaN.
/// "inf", "+inf", "-inf" are accepted.
pub fn parse_score(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s[0].is_ascii_whitespace() || s[0] == 0x0b {
        return None;
    }
    let (v, used, erange) = c_strtod(s);
    if used != s.len() || v.is_nan() || (erange && (v.is_infinite() || v == 0.0)) {
        return None;
    }
    Some(v)
}

/// A score interval (Redis's `zrangespec`).
#[derive(Clone, Copy, Debug)]
struct ScoreRange {
    min: f64,
    max: f64,
    minex: bool,
    maxex: bool,
}

/// Parses one bound as `zslParseRange`: optional "(" for exclusive, then C
/// `strtod` which must consume the rest (up to a NUL); NaN refused.
fn parse_bound(s: &[u8]) -> Option<(f64, bool)> {
    let (ex, body) = match s.first() {
        Some(b'(') => (true, &s[1..]),
        _ => (false, s),
    };
    let (v, used, _) = c_strtod(body);
    let cstr_len = body.iter().position(|&b| b == 0).unwrap_or(body.len());
    if used != cstr_len || v.is_nan() {
        return None;
    }
    Some((v, ex))
}

fn parse_score_range(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
    let (min, minex) = parse_bound(min)?;
    let (max, maxex) = parse_bound(max)?;
    Some(ScoreRange {
        min,
        max,
        minex,
        maxex,
    })
}

impl ScoreRange {
    /// Ascending ranks `lo..hi` of the members inside the range.
    fn ranks(&self, z: &ZSetValue) -> (usize, usize) {
        let r = *self;
        let lo = z.partition(&|s, _| if r.minex { s <= r.min } else { s < r.min });
        let hi = z.partition(&|s, _| if r.maxex { s < r.max } else { s <= r.max });
        (lo, hi.max(lo))
    }
}

/// One end of a lex range (`zslParseLexRangeItem`).
#[derive(Clone, Copy, Debug)]
enum Lex<'a> {
    /// "-": below every string.
    Min,
    /// "+": above every string.
    Max,
    /// "[x" (false) or "(x" (true).
    Str(&'a [u8], bool),
}

fn parse_lex_item(s: &[u8]) -> Option<Lex<'_>> {
    // A C string ends at its first NUL: "+\0..." is "+".
    let second_is_end = s.len() == 1 || s.get(1) == Some(&0);
    match s.first()? {
        b'+' if second_is_end => Some(Lex::Max),
        b'-' if second_is_end => Some(Lex::Min),
        b'(' => Some(Lex::Str(&s[1..], true)),
        b'[' => Some(Lex::Str(&s[1..], false)),
        _ => None,
    }
}

/// Redis's `sdscmplex` on range ends: "-" below and "+" above every string.
fn lex_cmp(a: Lex<'_>, b: Lex<'_>) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    match (a, b) {
        (Lex::Min, Lex::Min) | (Lex::Max, Lex::Max) => Equal,
        (Lex::Min, _) | (_, Lex::Max) => Less,
        (Lex::Max, _) | (_, Lex::Min) => Greater,
        (Lex::Str(x, _), Lex::Str(y, _)) => x.cmp(y),
    }
}

fn parse_lex_range<'a>(min: &'a [u8], max: &'a [u8]) -> Option<(Lex<'a>, Lex<'a>)> {
    Some((parse_lex_item(min)?, parse_lex_item(max)?))
}

/// Ascending ranks `lo..hi` of the members inside a lex range (meaningful
/// when all scores are equal, as Redis documents). On a `listpack` set
/// whose scores differ, Redis's linear scans decide the result: forward
/// from the first member >= min while members are <= max, or (`rev`)
/// backward from the last member <= max while members are >= min; that is
/// reproduced here. A `skiplist` set uses the binary search.
fn lex_ranks(z: &ZSetValue, min: Lex<'_>, max: Lex<'_>, rev: bool) -> (usize, usize) {
    let below_min = move |m: &[u8]| match min {
        Lex::Min => false,
        Lex::Max => true,
        Lex::Str(x, ex) => {
            if ex {
                m <= x
            } else {
                m < x
            }
        }
    };
    let upto_max = move |m: &[u8]| match max {
        Lex::Min => false,
        Lex::Max => true,
        Lex::Str(x, ex) => {
            if ex {
                m < x
            } else {
                m <= x
            }
        }
    };
    // zslIsInLexRange / zzlIsInLexRange: an empty interval, a last member
    // below min or a first member above max make the result empty.
    let ends_ex = |l: Lex<'_>| match l {
        Lex::Min | Lex::Max => true,
        Lex::Str(_, ex) => ex,
    };
    let c = lex_cmp(min, max);
    if c == std::cmp::Ordering::Greater
        || (c == std::cmp::Ordering::Equal && (ends_ex(min) || ends_ex(max)))
    {
        return (0, 0);
    }
    let len = z.len();
    if len == 0 {
        return (0, 0);
    }
    let mut first_ok = false;
    let mut last_ok = false;
    z.entry_at(0, |m, _| first_ok = upto_max(m));
    z.entry_at(len - 1, |m, _| last_ok = !below_min(m));
    if !first_ok || !last_ok {
        return (0, 0);
    }
    if z.is_listpack() {
        let mut members: Vec<Vec<u8>> = Vec::with_capacity(z.len());
        z.range(0, z.len(), false, |m, _| members.push(m.to_vec()));
        let n = members.len();
        let empty = (0, 0);
        if rev {
            let Some(hi) = members.iter().rposition(|m| upto_max(m)) else {
                return empty;
            };
            if below_min(&members[hi]) {
                return empty;
            }
            let mut lo = hi;
            while lo > 0 && !below_min(&members[lo - 1]) {
                lo -= 1;
            }
            return (lo, hi + 1);
        }
        let Some(lo) = members.iter().position(|m| !below_min(m)) else {
            return empty;
        };
        if !upto_max(&members[lo]) {
            return empty;
        }
        let mut hi = lo + 1;
        while hi < n && upto_max(&members[hi]) {
            hi += 1;
        }
        return (lo, hi);
    }
    let lo = z.partition(&|_, m| below_min(m));
    let hi = z.partition(&|_, m| upto_max(m));
    (lo, hi.max(lo))
}

/// Parses a `long` as `getLongFromObjectOrReply` (replies on error).
fn arg_long(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<i64> {
    arg_i64(ctx, a)
}

/// `getRangeLongFromObjectOrReply` with a custom message for both a
/// non-integer and an out-of-range value.
fn arg_range(ctx: &mut Ctx<'_>, a: &[u8], min: i64, msg: &str) -> Option<i64> {
    match crate::util::parse_i64(a) {
        Some(v) if v >= min => Some(v),
        _ => {
            ctx.error(msg);
            None
        }
    }
}

fn limits(ctx: &Ctx<'_>) -> Limits {
    let l = &ctx.server.live;
    Limits {
        max_entries: l.zset_max_listpack_entries.load(Ordering::Relaxed) as usize,
        max_value: l.zset_max_listpack_value.load(Ordering::Relaxed) as usize,
    }
}

// ------------------------------------------------------------ replies

/// Array header for `n` results, with scores: RESP2 flat (2n), RESP3 an
/// array of [member, score] pairs (Redis's zrange result handler).
fn items_header(out: &mut Out, n: usize, ws: bool) {
    if ws && !out.resp3 {
        out.array(n * 2);
    } else {
        out.array(n);
    }
}

fn item(out: &mut Out, m: &[u8], s: f64, ws: bool) {
    if ws && out.resp3 {
        out.array(2);
    }
    out.bulk(m);
    if ws {
        out.double(s);
    }
}

/// Replies the members at ascending ranks `start..start+n` (or, when
/// `rev`, the `n` ranks going down from `start`).
fn reply_ranks(out: &mut Out, z: &ZSetValue, start: usize, n: usize, rev: bool, ws: bool) {
    items_header(out, n, ws);
    if rev {
        z.range(start + 1 - n, start + 1, true, |m, s| item(out, m, s, ws));
    } else {
        z.range(start, start + n, false, |m, s| item(out, m, s, ws));
    }
}

/// Replies popped entries as `genericZpopCommand`: `key` (ZMPOP/BZMPOP,
/// BZPOPMIN/MAX) and `nested` ([member, score] pairs) select the shape.
pub fn pop_reply(out: &mut Out, key: Option<&[u8]>, items: &[(Vec<u8>, f64)], nested: bool) {
    match (key, nested) {
        (None, false) => out.array(items.len() * 2),
        (None, true) => out.array(items.len()),
        (Some(k), false) => {
            out.array(items.len() * 2 + 1);
            out.bulk(k);
        }
        (Some(k), true) => {
            out.array(2);
            out.bulk(k);
            out.array(items.len());
        }
    }
    for (m, s) in items {
        if nested {
            out.array(2);
        }
        out.bulk(m);
        out.double(*s);
    }
}

// ------------------------------------------------------------ key access

/// Looks `key` up for reading (`lookupKeyRead`: counts a hit or miss,
/// refreshes the LRU clock) and runs `f` on the sorted set. Ok(None) when
/// the key is missing; Err(()) after replying WRONGTYPE.
pub(super) fn read<R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    f: impl FnOnce(&ZSetValue, &mut Out) -> R,
) -> Result<Option<R>, ()> {
    let (h, mut shard) = ctx.lock(key);
    let t = ctx.touch_time();
    let r = match shard.get(h, key, ctx.now) {
        None => {
            drop(shard);
            ctx.hit(key, false);
            return Ok(None);
        }
        Some(e) => {
            if let Some(t) = t {
                t.record(&mut e.lru);
            }
            match &e.value {
                Value::ZSet(z) => f(z, ctx.out),
                _ => {
                    drop(shard);
                    ctx.hit(key, true);
                    ctx.wrongtype();
                    return Err(());
                }
            }
        }
    };
    drop(shard);
    ctx.hit(key, true);
    Ok(Some(r))
}

/// Looks `key` up for writing (`lookupKeyWrite`), creating it with
/// `create()` when missing (if given, keyspace event `new`), runs `f`,
/// reports the change (`event(&result)`: the event name when the set
/// changed, touching WATCH and notifying class `z`), and deletes the key
/// when `f` left the set empty (event `del`). Ok(None) when missing and not
/// created; Err(()) after replying WRONGTYPE.
fn modify<R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    create: Option<&dyn Fn() -> ZSetValue>,
    f: impl FnOnce(&mut ZSetValue) -> R,
    event: impl FnOnce(&R) -> Option<&'static str>,
) -> Result<Option<R>, ()> {
    let (h, mut shard) = ctx.lock(key);
    let t = ctx.touch_time();
    let now = ctx.now;
    let exists = match shard.get(h, key, now) {
        Some(e) => {
            if !matches!(e.value, Value::ZSet(_)) {
                drop(shard);
                ctx.wrongtype();
                return Err(());
            }
            true
        }
        None => false,
    };
    if !exists {
        let Some(create) = create else {
            return Ok(None);
        };
        shard.insert(
            h,
            key,
            Entry::new(
                Value::ZSet(Box::new(create())),
                ctx.server.keyspace.lru.initial(now),
            ),
        );
        ctx.notify(key, NEW, "new");
    }
    let Some(e) = shard.get(h, key, now) else {
        return Ok(None);
    };
    if let Some(t) = t {
        t.record(&mut e.lru);
    }
    let Value::ZSet(z) = &mut e.value else {
        return Ok(None);
    };
    let r = f(z);
    let changed = event(&r);
    if let Some(ev) = changed {
        ctx.modified(key, events::ZSET, ev);
    }
    if z.is_empty() {
        let old = shard.remove(h, key);
        drop(shard);
        drop(old);
        if changed.is_some() {
            ctx.notify(key, GENERIC, "del");
        }
    } else if ctx.server.keyspace.any_waiters() && shard.blocked.has(key) {
        // Members added (ZADD, ZINCRBY): serve BZPOP* waiters atomically.
        let server: &Server = ctx.server;
        let db = ctx.client.db;
        let locks = server.keyspace.adopt(db, h, shard);
        blocking::serve_and_release(server, locks, db, &[key], now);
    }
    Ok(Some(r))
}

/// Releases `locks` after a write to `dst`; when `added` (the key now holds
/// a non-empty sorted set), first serves its blocked BZPOP* clients under
/// the same locks.
fn release_serving<'a>(
    server: &'a Server,
    locks: KeyLocks<'a>,
    db: usize,
    dst: &[u8],
    added: bool,
    now: u64,
) {
    if added {
        blocking::serve_and_release(server, locks, db, &[dst], now);
    } else {
        drop(locks);
    }
}

// ------------------------------------------------------------ ZADD / ZINCRBY

/// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]:
/// integer, the members added (plus updated with CH); with INCR the new
/// score, or null when the update was not applied (`zaddGenericCommand`).
fn zadd(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    zadd_generic(ctx, args, false);
}

/// ZINCRBY key increment member: the new score (ZADD INCR).
fn zincrby(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    zadd_generic(ctx, args, true);
}

fn zadd_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, zincrby: bool) {
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
        (false, false, false, false, false, zincrby);
    // Redis parses the ZADD flags for ZINCRBY too (zaddGenericCommand):
    // `ZINCRBY key GT member` is a syntax error, not a bad float.
    let mut idx = 2;
    while idx < args.len() {
        let a = args.get(idx);
        if a.eq_ignore_ascii_case(b"nx") {
            nx = true;
        } else if a.eq_ignore_ascii_case(b"xx") {
            xx = true;
        } else if a.eq_ignore_ascii_case(b"ch") {
            ch = true;
        } else if a.eq_ignore_ascii_case(b"incr") {
            incr = true;
        } else if a.eq_ignore_ascii_case(b"gt") {
            gt = true;
        } else if a.eq_ignore_ascii_case(b"lt") {
            lt = true;
        } else {
            break;
        }
        idx += 1;
    }
    let elements = args.len() - idx;
    if !elements.is_multiple_of(2) || elements == 0 {
        return ctx.syntax();
    }
    let elements = elements / 2;
    if nx && xx {
        return ctx.error("ERR XX and NX options at the same time are not compatible");
    }
    if (nx && (gt || lt)) || (gt && lt) {
        return ctx.error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if incr && elements > 1 {
        return ctx.error("ERR INCR option supports a single increment-element pair");
    }
    let mut scores = Vec::with_capacity(elements);
    for j in 0..elements {
        match parse_score(args.get(idx + 2 * j)) {
            Some(s) => scores.push(s),
            None => return ctx.error(err::NOT_FLOAT),
        }
    }
    let key = args.get(1);
    let lim = limits(ctx);
    let first_len = args.get(idx + 1).len();
    let create = move || ZSetValue::for_first_member(first_len, lim);
    let res = modify(
        ctx,
        key,
        if xx { None } else { Some(&create) },
        |z| {
            let (mut added, mut updated, mut processed) = (0i64, 0i64, 0i64);
            let mut last = 0.0;
            for (j, &score) in scores.iter().enumerate() {
                let m = args.get(idx + 2 * j + 1);
                match z.score(m) {
                    Some(cur) => {
                        if nx {
                            continue;
                        }
                        let mut s = score;
                        if incr {
                            s += cur;
                            if s.is_nan() {
                                return Err(NAN_RESULT);
                            }
                        }
                        if (lt && s >= cur) || (gt && s <= cur) {
                            continue;
                        }
                        if s != cur {
                            z.insert(m, s, lim);
                            updated += 1;
                        }
                        last = s;
                        processed += 1;
                    }
                    None => {
                        if xx {
                            continue;
                        }
                        z.insert(m, score, lim);
                        added += 1;
                        processed += 1;
                        last = score;
                    }
                }
            }
            Ok((added, updated, processed, last))
        },
        |r| match r {
            Ok((a, u, _, _)) if a + u > 0 => Some(if incr { "zincr" } else { "zadd" }),
            _ => None,
        },
    );
    let (added, updated, processed, last) = match res {
        Err(()) => return,
        Ok(None) => (0, 0, 0, 0.0),
        Ok(Some(Err(e))) => return ctx.error(e),
        Ok(Some(Ok(r))) => r,
    };
    if incr {
        if processed > 0 {
            ctx.out.double(last);
        } else {
            ctx.out.null();
        }
    } else {
        ctx.out.int(if ch { added + updated } else { added });
    }
}

// ------------------------------------------------------------ simple reads

/// ZREM key member [member ...]: integer, the members removed.
fn zrem(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let r = modify(
        ctx,
        args.get(1),
        None,
        |z| {
            let mut n = 0;
            for i in 2..args.len() {
                if z.remove(args.get(i)).is_some() {
                    n += 1;
                    if z.is_empty() {
                        break;
                    }
                }
            }
            n
        },
        |n| (*n > 0).then_some("zrem"),
    );
    match r {
        Err(()) => {}
        Ok(n) => ctx.out.int(n.unwrap_or(0)),
    }
}

/// ZCARD key: integer, the number of members (0 for a missing key).
fn zcard(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if let Ok(n) = read(ctx, args.get(1), |z, _| z.len()) {
        ctx.out.int(n.unwrap_or(0) as i64);
    }
}

/// ZSCORE key member: the score (double), or null.
fn zscore(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if let Ok(s) = read(ctx, args.get(1), |z, _| z.score(args.get(2))) {
        match s.flatten() {
            Some(s) => ctx.out.double(s),
            None => ctx.out.null(),
        }
    }
}

/// ZMSCORE key member [member ...]: an array of scores / nulls.
fn zmscore(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let n = args.len() - 2;
    let r = read(ctx, args.get(1), |z, out| {
        out.array(n);
        for i in 2..args.len() {
            match z.score(args.get(i)) {
                Some(s) => out.double(s),
                None => out.null(),
            }
        }
    });
    if let Ok(None) = r {
        ctx.out.array(n);
        for _ in 0..n {
            ctx.out.null();
        }
    }
}

/// ZRANK key member: the 0-based rank by ascending score, or null.
fn zrank(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    rank_generic(ctx, args, false);
}

/// ZREVRANK key member: the 0-based rank by descending score, or null.
fn zrevrank(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    rank_generic(ctx, args, true);
}

fn rank_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, rev: bool) {
    let r = read(ctx, args.get(1), |z, _| {
        z.rank(args.get(2))
            .map(|r| if rev { z.len() - 1 - r } else { r })
    });
    if let Ok(r) = r {
        match r.flatten() {
            Some(r) => ctx.out.int(r as i64),
            None => ctx.out.null(),
        }
    }
}

/// ZCOUNT key min max: integer, the members with scores in the range.
fn zcount(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(range) = parse_score_range(args.get(2), args.get(3)) else {
        return ctx.error(MINMAX_FLOAT);
    };
    if let Ok(n) = read(ctx, args.get(1), |z, _| {
        let (lo, hi) = range.ranks(z);
        hi - lo
    }) {
        ctx.out.int(n.unwrap_or(0) as i64);
    }
}

/// ZLEXCOUNT key min max: integer, the members in the lex range.
fn zlexcount(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some((min, max)) = parse_lex_range(args.get(2), args.get(3)) else {
        return ctx.error(MINMAX_LEX);
    };
    if let Ok(n) = read(ctx, args.get(1), |z, _| {
        let (lo, hi) = lex_ranks(z, min, max, false);
        hi - lo
    }) {
        ctx.out.int(n.unwrap_or(0) as i64);
    }
}

// ------------------------------------------------------------ ZRANGE family

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum RangeType {
    Auto,
    Rank,
    Score,
    Lex,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dir {
    Auto,
    Forward,
    Reverse,
}

/// The parsed range of a ZRANGE-family request.
enum Spec<'a> {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(Lex<'a>, Lex<'a>),
}

/// The result of a range request: ascending ranks to visit, as (first rank
/// visited, count, reverse).
fn resolve(z: &ZSetValue, spec: &Spec<'_>, rev: bool, offset: i64, limit: i64) -> (usize, usize) {
    let len = z.len() as i64;
    let (lo, hi) = match spec {
        Spec::Rank(start, end) => {
            let (mut start, mut end) = (*start, *end);
            if start < 0 {
                start += len;
            }
            if end < 0 {
                end += len;
            }
            if start < 0 {
                start = 0;
            }
            if start > end || start >= len {
                return (0, 0);
            }
            if end >= len {
                end = len - 1;
            }
            let n = (end - start + 1) as usize;
            return if rev {
                ((len - 1 - start) as usize, n)
            } else {
                (start as usize, n)
            };
        }
        Spec::Score(r) => r.ranks(z),
        Spec::Lex(min, max) => lex_ranks(z, *min, *max, rev),
    };
    let avail = hi - lo;
    if avail == 0 || offset < 0 || offset as u64 >= avail as u64 {
        return (0, 0);
    }
    let off = offset as usize;
    let mut n = avail - off;
    if limit >= 0 && (limit as u64) < n as u64 {
        n = limit as usize;
    }
    if rev {
        (hi - 1 - off, n)
    } else {
        (lo + off, n)
    }
}

/// Redis 7.0's `zrangeGenericCommand`: ZRANGE, ZRANGESTORE (`store`),
/// ZREVRANGE and the BYSCORE / BYLEX variants. `start` is the index of the
/// source key.
fn zrange_generic(
    ctx: &mut Ctx<'_>,
    args: &Args<'_>,
    start: usize,
    store: bool,
    mut rtype: RangeType,
    mut dir: Dir,
) {
    let (mut minidx, mut maxidx) = (start + 1, start + 2);
    let mut withscores = false;
    let (mut offset, mut limit) = (0i64, -1i64);
    let mut j = start + 3;
    while j < args.len() {
        let a = args.get(j);
        let left = args.len() - j - 1;
        if !store && a.eq_ignore_ascii_case(b"withscores") {
            withscores = true;
        } else if a.eq_ignore_ascii_case(b"limit") && left >= 2 {
            let Some(o) = arg_long(ctx, args.get(j + 1)) else {
                return;
            };
            let Some(l) = arg_long(ctx, args.get(j + 2)) else {
                return;
            };
            offset = o;
            limit = l;
            j += 2;
        } else if dir == Dir::Auto && a.eq_ignore_ascii_case(b"rev") {
            dir = Dir::Reverse;
        } else if rtype == RangeType::Auto && a.eq_ignore_ascii_case(b"bylex") {
            rtype = RangeType::Lex;
        } else if rtype == RangeType::Auto && a.eq_ignore_ascii_case(b"byscore") {
            rtype = RangeType::Score;
        } else {
            return ctx.syntax();
        }
        j += 1;
    }
    if dir == Dir::Auto {
        dir = Dir::Forward;
    }
    if rtype == RangeType::Auto {
        rtype = RangeType::Rank;
    }
    if limit != -1 && rtype == RangeType::Rank {
        return ctx.error(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    if withscores && rtype == RangeType::Lex {
        return ctx.error("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    let rev = dir == Dir::Reverse;
    if rev && rtype != RangeType::Rank {
        std::mem::swap(&mut minidx, &mut maxidx);
    }
    let spec = match rtype {
        RangeType::Score => match parse_score_range(args.get(minidx), args.get(maxidx)) {
            Some(r) => Spec::Score(r),
            None => return ctx.error(MINMAX_FLOAT),
        },
        RangeType::Lex => match parse_lex_range(args.get(minidx), args.get(maxidx)) {
            Some((a, b)) => Spec::Lex(a, b),
            None => return ctx.error(MINMAX_LEX),
        },
        _ => {
            let Some(a) = arg_long(ctx, args.get(minidx)) else {
                return;
            };
            let Some(b) = arg_long(ctx, args.get(maxidx)) else {
                return;
            };
            Spec::Rank(a, b)
        }
    };
    if store {
        return range_store(ctx, args, &spec, rev, offset, limit);
    }
    let r = read(ctx, args.get(start), |z, out| {
        let (first, n) = resolve(z, &spec, rev, offset, limit);
        reply_ranks(out, z, first, n, rev, withscores);
    });
    if let Ok(None) = r {
        ctx.out.array(0);
    }
}

/// Stores `items` (sorted) at `dst` as the *STORE commands do (`setKey`,
/// an expired destination is expired first), or deletes `dst` when there
/// are none (`dbDelete`). Returns the previous entry (to drop after the
/// locks) and whether `dst` existed.
fn store_zset(
    shard: &mut Shard,
    hd: u64,
    dst: &[u8],
    items: &[(Vec<u8>, f64)],
    lim: Limits,
    now: u64,
    lru: &crate::db::lru::LruPolicy,
) -> (Option<Entry>, bool) {
    if items.is_empty() {
        let old = shard.remove(hd, dst);
        let existed = old.is_some();
        return (old, existed);
    }
    let existed = shard.get(hd, dst, now).is_some();
    let z = ZSetValue::from_sorted(items, lim);
    let old = shard.insert(
        hd,
        dst,
        Entry::new(Value::ZSet(Box::new(z)), lru.initial(now)),
    );
    (old, existed)
}

/// The events of a *STORE into `dst` of `n` members: `new` (when created)
/// and `event`, or `del` when an empty result deleted an existing key
/// (t_zset.c `zunionInterDiffGenericCommand`, `zrangeResultFinalizeStore`).
fn store_events(ctx: &Ctx<'_>, dst: &[u8], n: usize, existed: bool, event: &'static str) {
    if n > 0 {
        if !existed {
            ctx.notify(dst, NEW, "new");
        }
        ctx.modified(dst, events::ZSET, event);
    } else if existed {
        ctx.modified(dst, GENERIC, "del");
    }
}

/// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]:
/// stores the range (deleting `dst` when it is empty) and replies its size.
fn range_store(
    ctx: &mut Ctx<'_>,
    args: &Args<'_>,
    spec: &Spec<'_>,
    rev: bool,
    offset: i64,
    limit: i64,
) {
    let db = ctx.client.db;
    let (dst, src) = (args.get(1), args.get(2));
    let (hd, hs) = (hash_key(dst), hash_key(src));
    let now = ctx.now;
    let t = ctx.touch_time();
    let lim = limits(ctx);
    let mut locks = ctx.server.keyspace.lock_keys(&[(db, hd), (db, hs)]);
    let mut items: Vec<(Vec<u8>, f64)> = Vec::new();
    let found = match locks.shard(db, hs).get(hs, src, now) {
        None => {
            // Announced at lookup time, before the store's events.
            ctx.events().keymiss(db, src);
            false
        }
        Some(e) => {
            if let Some(t) = t {
                t.record(&mut e.lru);
            }
            match &e.value {
                Value::ZSet(z) => {
                    let (first, n) = resolve(z, spec, rev, offset, limit);
                    items.reserve_exact(n);
                    if rev {
                        z.range(first + 1 - n, first + 1, false, |m, s| {
                            items.push((m.to_vec(), s))
                        });
                    } else {
                        z.range(first, first + n, false, |m, s| items.push((m.to_vec(), s)));
                    }
                    true
                }
                _ => {
                    drop(locks);
                    ctx.hit(src, true);
                    return ctx.wrongtype();
                }
            }
        }
    };
    let n = items.len();
    let shard = locks.shard(db, hd);
    let (old, existed) = store_zset(shard, hd, dst, &items, lim, now, &ctx.server.keyspace.lru);
    store_events(ctx, dst, n, existed, "zrangestore");
    release_serving(ctx.server, locks, db, dst, n > 0, now);
    crate::db::lazyfree::free_old(old, crate::db::lazyfree::Reason::ServerDel);
    ctx.count_lookup(found);
    ctx.out.int(n as i64);
}

/// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count]
/// [WITHSCORES]: the members in the range.
fn zrange(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    zrange_generic(ctx, args, 1, false, RangeType::Auto, Dir::Auto);
}

/// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count].
fn zrangestore(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    zrange_generic(ctx, args, 2, true, RangeType::Auto, Dir::Auto);
}

/// ZREVRANGE key start stop [WITHSCORES].
fn zrevrange(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    zrange_generic(ctx, args, 1, false, RangeType::Rank, Dir::Reverse);
}

/// ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count].
fn zrangebyscore(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    zrange_generic(ctx, args, 1, false, RangeType::Score, Dir::Forward);
}

/// ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count].
fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    zrange_generic(ctx, args, 1, false, RangeType::Score, Dir::Reverse);
}

/// ZRANGEBYLEX key min max [LIMIT offset count].
fn zrangebylex(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    zrange_generic(ctx, args, 1, false, RangeType::Lex, Dir::Forward);
}

/// ZREVRANGEBYLEX key max min [LIMIT offset count].
fn zrevrangebylex(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    zrange_generic(ctx, args, 1, false, RangeType::Lex, Dir::Reverse);
}

// ------------------------------------------------------------ ZREMRANGEBY*

/// ZREMRANGEBYRANK key start stop: integer, the members removed.
fn zremrangebyrank(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(a) = arg_long(ctx, args.get(2)) else {
        return;
    };
    let Some(b) = arg_long(ctx, args.get(3)) else {
        return;
    };
    remrange(ctx, args, Spec::Rank(a, b));
}

/// ZREMRANGEBYSCORE key min max: integer, the members removed.
fn zremrangebyscore(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    match parse_score_range(args.get(2), args.get(3)) {
        Some(r) => remrange(ctx, args, Spec::Score(r)),
        None => ctx.error(MINMAX_FLOAT),
    }
}

/// ZREMRANGEBYLEX key min max: integer, the members removed.
fn zremrangebylex(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    match parse_lex_range(args.get(2), args.get(3)) {
        Some((a, b)) => remrange(ctx, args, Spec::Lex(a, b)),
        None => ctx.error(MINMAX_LEX),
    }
}

fn remrange(ctx: &mut Ctx<'_>, args: &Args<'_>, spec: Spec<'_>) {
    let event = match spec {
        Spec::Rank(..) => "zremrangebyrank",
        Spec::Score(..) => "zremrangebyscore",
        _ => "zremrangebylex",
    };
    let r = modify(
        ctx,
        args.get(1),
        None,
        |z| {
            let (first, n) = resolve(z, &spec, false, 0, -1);
            z.remove_range(first, first + n)
        },
        |n| (*n > 0).then_some(event),
    );
    if let Ok(n) = r {
        ctx.out.int(n.unwrap_or(0) as i64);
    }
}

// ------------------------------------------------------------ pops

/// ZPOPMIN key [count]: the lowest-scored members with their scores.
fn zpopmin(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    zpop_cmd(ctx, args, false);
}

/// ZPOPMAX key [count]: the highest-scored members with their scores.
fn zpopmax(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    zpop_cmd(ctx, args, true);
}

fn zpop_cmd(ctx: &mut Ctx<'_>, args: &Args<'_>, max: bool) {
    if args.len() > 3 {
        return ctx.syntax();
    }
    let mut count = -1i64;
    if args.len() == 3 {
        // getPositiveLongFromObjectOrReply: one message for both failures.
        count = match crate::util::parse_i64(args.get(2)) {
            Some(c) if c >= 0 => c,
            _ => return ctx.error("ERR value is out of range, must be positive"),
        };
    }
    // RESP3 with an explicit count: [member, score] pairs.
    let nested = ctx.out.resp3 && count != -1;
    let keys = [args.get(1)];
    generic_pop(ctx, &keys, max, false, count, nested, false);
}

/// The events of a pop from `key` (t_zset.c `genericZpopCommand`):
/// `zpopmin` / `zpopmax`, then `del` when the set was emptied; the key is
/// touched for WATCH.
fn pop_events(events: &crate::events::Gate, db: usize, key: &[u8], max: bool, emptied: bool) {
    events.notify(
        db,
        key,
        events::ZSET,
        if max { "zpopmax" } else { "zpopmin" },
    );
    if emptied {
        events.notify(db, key, GENERIC, "del");
    }
    events.touch(db, key);
}

/// Redis's `genericZpopCommand`: pops from the first existing key of
/// `keys` (WRONGTYPE stops the search), `count` = -1 for a single pop
/// without COUNT. `emit_key` adds the key to the reply (ZMPOP), `nested`
/// selects [member, score] pairs, `nil_when_empty` replies a null array
/// instead of an empty one when no key exists.
fn generic_pop(
    ctx: &mut Ctx<'_>,
    keys: &[&[u8]],
    max: bool,
    emit_key: bool,
    count: i64,
    nested: bool,
    nil_when_empty: bool,
) {
    let db = ctx.client.db;
    let hashes: Vec<(usize, u64)> = keys.iter().map(|k| (db, hash_key(k))).collect();
    let now = ctx.now;
    let t = ctx.touch_time();
    let mut locks = ctx.server.keyspace.lock_keys(&hashes);
    for (i, key) in keys.iter().enumerate() {
        let h = hashes[i].1;
        let shard = locks.shard(db, h);
        let Some(e) = shard.get(h, key, now) else {
            continue;
        };
        if let Some(t) = t {
            t.record(&mut e.lru);
        }
        let Value::ZSet(z) = &mut e.value else {
            drop(locks);
            return ctx.wrongtype();
        };
        if count == 0 {
            drop(locks);
            return ctx.out.array(0);
        }
        let n = if count < 0 { 1 } else { count as u64 as usize };
        let items = z.pop(max, n);
        let old = if z.is_empty() {
            shard.remove(h, key)
        } else {
            None
        };
        pop_events(ctx.events(), db, key, max, old.is_some());
        drop(locks);
        drop(old);
        if emit_key {
            // ZMPOP is recorded as ZPOPMIN/ZPOPMAX key <popped> (Redis's
            // genericZpopCommand).
            crate::propagate::rewrite(&argv(&zpop_record(max, key, Some(items.len()))));
        }
        pop_reply(
            ctx.out,
            if emit_key { Some(key) } else { None },
            &items,
            nested,
        );
        return;
    }
    drop(locks);
    if nil_when_empty {
        ctx.out.null_array();
    } else {
        ctx.out.array(0);
    }
}

/// Parses ZMPOP / BZMPOP arguments from `numkeys_idx`: (keys, max, count),
/// or None after replying the error (`zmpopGenericCommand`).
pub fn parse_mpop<'a>(
    ctx: &mut Ctx<'_>,
    args: &'a Args<'_>,
    numkeys_idx: usize,
) -> Option<(Vec<&'a [u8]>, bool, i64)> {
    let numkeys = arg_range(
        ctx,
        args.get(numkeys_idx),
        1,
        "ERR numkeys should be greater than 0",
    )?;
    let where_idx = (numkeys_idx as u64 + 1).saturating_add(numkeys as u64);
    if where_idx >= args.len() as u64 {
        ctx.syntax();
        return None;
    }
    let where_idx = where_idx as usize;
    let w = args.get(where_idx);
    let max = if w.eq_ignore_ascii_case(b"min") {
        false
    } else if w.eq_ignore_ascii_case(b"max") {
        true
    } else {
        ctx.syntax();
        return None;
    };
    let mut count = -1i64;
    let mut j = where_idx + 1;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if count == -1 && args.get(j).eq_ignore_ascii_case(b"count") && more > 0 {
            j += 1;
            count = arg_range(ctx, args.get(j), 1, "ERR count should be greater than 0")?;
        } else {
            ctx.syntax();
            return None;
        }
        j += 1;
    }
    if count == -1 {
        count = 1;
    }
    let keys = (numkeys_idx + 1..where_idx).map(|i| args.get(i)).collect();
    Some((keys, max, count))
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]: [key, [[member,
/// score], ...]] from the first non-empty key, or a null array.
fn zmpop(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some((keys, max, count)) = parse_mpop(ctx, args, 1) else {
        return;
    };
    generic_pop(ctx, &keys, max, true, count, true, true);
}

// ------------------------------------------------------------ blocking pops

/// BZPOPMIN key [key ...] timeout: `[key, member, score]` from the first
/// non-empty key, else blocks (timeout parsed first).
fn bzpopmin(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    bzpop_cmd(ctx, args, false);
}

/// BZPOPMAX key [key ...] timeout: as BZPOPMIN, highest score.
fn bzpopmax(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    bzpop_cmd(ctx, args, true);
}

fn bzpop_cmd(ctx: &mut Ctx<'_>, args: &Args<'_>, max: bool) {
    let Some(ms) = super::lists::parse_timeout(ctx, args.get(args.len() - 1)) else {
        return;
    };
    let keys: Vec<&[u8]> = (1..args.len() - 1).map(|i| args.get(i)).collect();
    bzpop_generic(ctx, &keys, max, None, ms);
}

/// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]: the ZMPOP
/// arguments are parsed before the timeout (Redis 7.0's
/// `zmpopGenericCommand` checks the timeout in the blocking part).
fn bzmpop(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some((keys, max, count)) = parse_mpop(ctx, args, 2) else {
        return;
    };
    let Some(ms) = super::lists::parse_timeout(ctx, args.get(1)) else {
        return;
    };
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    bzpop_generic(ctx, &keys, max, Some(count), ms);
}

/// Redis's `blockingGenericZpopCommand`: pops from the first existing key
/// (a key of another type met first is WRONGTYPE), replying `[key, member,
/// score]` (`count` None: BZPOPMIN/BZPOPMAX) or `[key, [[member, score],
/// ...]]` (`count` Some: BZMPOP). When every key is missing the client
/// blocks on all of them, or, inside MULTI / a script (`deny_blocking`),
/// gets a null array.
fn bzpop_generic(ctx: &mut Ctx<'_>, keys: &[&[u8]], max: bool, count: Option<usize>, ms: u64) {
    let db = ctx.client.db;
    let hashes: Vec<(usize, u64)> = keys.iter().map(|k| (db, hash_key(k))).collect();
    let now = ctx.now;
    let t = ctx.touch_time();
    let server: &Server = ctx.server;
    let mut locks = server.keyspace.lock_keys(&hashes);
    for (i, key) in keys.iter().enumerate() {
        let h = hashes[i].1;
        let shard = locks.shard(db, h);
        let Some(e) = shard.get(h, key, now) else {
            continue;
        };
        if let Some(t) = t {
            t.record(&mut e.lru);
        }
        let Value::ZSet(z) = &mut e.value else {
            drop(locks);
            return ctx.wrongtype();
        };
        let items = z.pop(max, count.unwrap_or(1));
        let old = if z.is_empty() {
            shard.remove(h, key)
        } else {
            None
        };
        pop_events(ctx.events(), db, key, max, old.is_some());
        drop(locks);
        drop(old);
        // Recorded in non-blocking form: ZPOPMIN/ZPOPMAX key [<popped>].
        crate::propagate::rewrite(&argv(&zpop_record(max, key, count.map(|_| items.len()))));
        return pop_reply(ctx.out, Some(key), &items, count.is_some());
    }
    if ctx.client.deny_blocking {
        drop(locks);
        return ctx.out.null_array();
    }
    let ks = keys.iter().map(|k| Box::from(*k)).collect();
    let op = Box::new(ZPopOp { max, count });
    super::lists::block_on_keys(ctx, &mut locks, ks, op, ms);
}

/// The non-blocking pop a ZMPOP / BZPOPMIN / BZMPOP is recorded as:
/// ZPOPMIN or ZPOPMAX of `key`, with the number popped for the MPOP forms.
fn zpop_record(max: bool, key: &[u8], count: Option<usize>) -> Vec<Vec<u8>> {
    let c: &[u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
    let mut v = vec![c.to_vec(), key.to_vec()];
    if let Some(n) = count {
        v.push(itoa::Buffer::new().format(n).as_bytes().to_vec());
    }
    v
}

/// Borrowed view of a record built by [`zpop_record`].
fn argv(v: &[Vec<u8>]) -> Vec<&[u8]> {
    v.iter().map(|a| a.as_slice()).collect()
}

/// Serves a client blocked in BZPOPMIN/BZPOPMAX (`count` None) or BZMPOP
/// (`count` Some) from a key that received members, with the reply of the
/// immediate form (Redis 7.0's serveClientBlockedOnSortedSet).
struct ZPopOp {
    max: bool,
    count: Option<usize>,
}

impl BlockOp for ZPopOp {
    fn serve(&self, cx: &mut ServeCx<'_, '_>, key: &[u8]) -> Attempt {
        let h = hash_key(key);
        let shard = cx.locks.shard(cx.db, h);
        let Some(e) = shard.get(h, key, cx.now) else {
            return Attempt::NotReady;
        };
        let Value::ZSet(z) = &mut e.value else {
            return Attempt::Skip;
        };
        if z.is_empty() {
            return Attempt::NotReady;
        }
        let items = z.pop(self.max, self.count.unwrap_or(1));
        let emptied = z.is_empty();
        if emptied {
            shard.remove(h, key);
        }
        pop_events(cx.host.keyspace().events(), cx.db, key, self.max, emptied);
        let rec = zpop_record(self.max, key, self.count.map(|_| items.len()));
        crate::propagate::also(cx.db, &argv(&rec));
        let mut out = Out {
            buf: Vec::new(),
            resp3: cx.resp3,
        };
        pop_reply(&mut out, Some(key), &items, self.count.is_some());
        Attempt::Served(out.buf)
    }
}

// ------------------------------------------------------------ set operations

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

/// One input of a set operation: a sorted set, a plain set (score 1) or a
/// missing key (empty).
#[derive(Clone, Copy)]
enum Src<'a> {
    Missing,
    Z(&'a ZSetValue),
    S(&'a SetValue),
}

impl<'a> Src<'a> {
    fn len(&self) -> usize {
        match self {
            Src::Missing => 0,
            Src::Z(z) => z.len(),
            Src::S(s) => s.len(),
        }
    }

    fn score(&self, m: &[u8]) -> Option<f64> {
        match self {
            Src::Missing => None,
            Src::Z(z) => z.score(m),
            Src::S(s) => s.contains(m).then_some(1.0),
        }
    }

    fn for_each(&self, mut f: impl FnMut(&[u8], f64)) {
        match self {
            Src::Missing => {}
            Src::Z(z) => z.range(0, z.len(), false, f),
            Src::S(s) => {
                let mut tmp = itoa::Buffer::new();
                for m in s.iter() {
                    f(m.as_bytes(&mut tmp), 1.0);
                }
            }
        }
    }

    /// True when both are the same stored value (the same key twice).
    fn same(&self, o: &Src<'_>) -> bool {
        match (self, o) {
            (Src::Z(a), Src::Z(b)) => std::ptr::eq(*a, *b),
            (Src::S(a), Src::S(b)) => std::ptr::eq(*a, *b),
            _ => false,
        }
    }
}

/// `zunionInterAggregate`: SUM turns NaN (inf + -inf) into 0.
#[inline]
fn aggregate(target: &mut f64, v: f64, agg: Aggregate) {
    match agg {
        Aggregate::Sum => {
            *target += v;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if v < *target {
                *target = v;
            }
        }
        Aggregate::Max => {
            if v > *target {
                *target = v;
            }
        }
    }
}

/// Computes a set operation over `srcs` (with `weights`); the result is
/// sorted by (score, member). `card_limit` (ZINTERCARD) stops an
/// intersection early and skips collecting scores.
fn compute(srcs: &[Src<'_>], weights: &[f64], op: SetOp, agg: Aggregate) -> Vec<(Vec<u8>, f64)> {
    let mut order: Vec<usize> = (0..srcs.len()).collect();
    if op != SetOp::Diff {
        // Redis sorts the inputs by cardinality (qsort; glibc's is a stable
        // merge sort), which decides the order scores are aggregated in.
        order.sort_by_key(|&i| srcs[i].len());
    }
    let mut out: Vec<(Vec<u8>, f64)> = Vec::new();
    match op {
        SetOp::Inter => {
            let first = order[0];
            let s0 = srcs[first];
            if s0.len() == 0 {
                return out;
            }
            s0.for_each(|m, s| {
                let mut score = weights[first] * s;
                if score.is_nan() {
                    score = 0.0;
                }
                for &j in &order[1..] {
                    let v = if srcs[j].same(&s0) {
                        s * weights[j]
                    } else {
                        match srcs[j].score(m) {
                            Some(v) => v * weights[j],
                            None => return,
                        }
                    };
                    aggregate(&mut score, v, agg);
                }
                out.push((m.to_vec(), score));
            });
        }
        SetOp::Union => {
            let mut acc: HashMap<Vec<u8>, f64, foldhash::fast::RandomState> = HashMap::default();
            for &i in &order {
                srcs[i].for_each(|m, s| {
                    let mut score = weights[i] * s;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    match acc.get_mut(m) {
                        Some(t) => aggregate(t, score, agg),
                        None => {
                            acc.insert(m.to_vec(), score);
                        }
                    }
                });
            }
            out = acc.into_iter().collect();
        }
        SetOp::Diff => {
            let s0 = srcs[0];
            s0.for_each(|m, s| {
                if srcs[1..].iter().all(|o| o.score(m).is_none()) {
                    out.push((m.to_vec(), s));
                }
            });
        }
    }
    out.sort_by(|a, b| cmp_entry(a.1, &a.0, b.1, &b.0));
    out
}

/// Size of the intersection of `srcs`, stopping at `limit` (0 = no limit).
fn inter_card(srcs: &[Src<'_>], limit: usize) -> usize {
    let mut order: Vec<usize> = (0..srcs.len()).collect();
    order.sort_by_key(|&i| srcs[i].len());
    let s0 = srcs[order[0]];
    let mut n = 0usize;
    if s0.len() == 0 {
        return 0;
    }
    let mut done = false;
    s0.for_each(|m, _| {
        if done {
            return;
        }
        if order[1..]
            .iter()
            .all(|&j| srcs[j].same(&s0) || srcs[j].score(m).is_some())
        {
            n += 1;
            if limit > 0 && n >= limit {
                done = true;
            }
        }
    });
    n
}

/// Redis 7.0's `zunionInterDiffGenericCommand` for ZUNION, ZINTER, ZDIFF,
/// their STORE forms (`store`) and ZINTERCARD (`card`).
fn set_op(ctx: &mut Ctx<'_>, args: &Args<'_>, name: &str, op: SetOp, store: bool, card: bool) {
    let numkeys_idx = if store { 2 } else { 1 };
    let Some(setnum) = arg_long(ctx, args.get(numkeys_idx)) else {
        return;
    };
    if setnum < 1 {
        return ctx.error(&format!(
            "ERR at least 1 input key is needed for '{name}' command"
        ));
    }
    if setnum as u64 > (args.len() - numkeys_idx - 1) as u64 {
        return ctx.syntax();
    }
    let setnum = setnum as usize;
    let first = numkeys_idx + 1;
    let db = ctx.client.db;
    let mut hashes: Vec<(usize, u64)> = (first..first + setnum)
        .map(|i| (db, hash_key(args.get(i))))
        .collect();
    let dst = store.then(|| args.get(1));
    let hd = dst.map(hash_key);
    if let Some(hd) = hd {
        hashes.push((db, hd));
    }
    let now = ctx.now;
    let t = ctx.touch_time();
    let lim = limits(ctx);
    let mut locks = ctx.server.keyspace.lock_keys(&hashes);
    // Pass 1: lazy expiry, LRU, type check, hit/miss (lookupKeyRead).
    let (mut hits, mut misses) = (0u64, 0u64);
    for (i, &(_, h)) in hashes.iter().take(setnum).enumerate() {
        match locks.shard(db, h).get(h, args.get(first + i), now) {
            None => {
                misses += 1;
                ctx.events().keymiss(db, args.get(first + i));
            }
            Some(e) => {
                hits += 1;
                if let Some(t) = t {
                    t.record(&mut e.lru);
                }
                if !matches!(e.value, Value::ZSet(_) | Value::Set(_)) {
                    drop(locks);
                    crate::stats::bump(&ctx.stats.hits, hits);
                    crate::stats::bump(&ctx.stats.misses, misses);
                    return ctx.wrongtype();
                }
            }
        }
    }
    crate::stats::bump(&ctx.stats.hits, hits);
    crate::stats::bump(&ctx.stats.misses, misses);
    // Options.
    let mut weights = vec![1.0f64; setnum];
    let mut agg = Aggregate::Sum;
    let mut withscores = false;
    let mut limit = 0usize;
    let mut j = first + setnum;
    while j < args.len() {
        let remaining = args.len() - j;
        let a = args.get(j);
        if op != SetOp::Diff && !card && remaining > setnum && a.eq_ignore_ascii_case(b"weights") {
            j += 1;
            for w in weights.iter_mut() {
                match parse_score(args.get(j)) {
                    Some(v) => *w = v,
                    None => {
                        drop(locks);
                        return ctx.error("ERR weight value is not a float");
                    }
                }
                j += 1;
            }
        } else if op != SetOp::Diff
            && !card
            && remaining >= 2
            && a.eq_ignore_ascii_case(b"aggregate")
        {
            let v = args.get(j + 1);
            agg = if v.eq_ignore_ascii_case(b"sum") {
                Aggregate::Sum
            } else if v.eq_ignore_ascii_case(b"min") {
                Aggregate::Min
            } else if v.eq_ignore_ascii_case(b"max") {
                Aggregate::Max
            } else {
                drop(locks);
                return ctx.syntax();
            };
            j += 2;
        } else if !store && !card && a.eq_ignore_ascii_case(b"withscores") {
            withscores = true;
            j += 1;
        } else if card && remaining >= 2 && a.eq_ignore_ascii_case(b"limit") {
            // getPositiveLongFromObjectOrReply with a message: used for a
            // non-integer too.
            match crate::util::parse_i64(args.get(j + 1)) {
                Some(v) if v >= 0 => limit = usize::try_from(v).unwrap_or(usize::MAX),
                _ => {
                    drop(locks);
                    return ctx.error("ERR LIMIT can't be negative");
                }
            }
            j += 2;
        } else {
            drop(locks);
            return ctx.syntax();
        }
    }
    // Pass 2: compute over shared references.
    let result = {
        let srcs: Vec<Src<'_>> = (0..setnum)
            .map(|i| {
                let h = hashes[i].1;
                match locks
                    .shard_ref(db, h)
                    .peek(h, args.get(first + i), now)
                    .map(|e| &e.value)
                {
                    Some(Value::ZSet(z)) => Src::Z(z),
                    Some(Value::Set(s)) => Src::S(s),
                    _ => Src::Missing,
                }
            })
            .collect();
        if card {
            let n = inter_card(&srcs, limit);
            drop(srcs);
            drop(locks);
            return ctx.out.int(n as i64);
        }
        compute(&srcs, &weights, op, agg)
    };
    if let (Some(dst), Some(hd)) = (dst, hd) {
        let n = result.len();
        let shard = locks.shard(db, hd);
        let (old, existed) =
            store_zset(shard, hd, dst, &result, lim, now, &ctx.server.keyspace.lru);
        let event = match op {
            SetOp::Union => "zunionstore",
            SetOp::Inter => "zinterstore",
            SetOp::Diff => "zdiffstore",
        };
        store_events(ctx, dst, n, existed, event);
        release_serving(ctx.server, locks, db, dst, n > 0, now);
        crate::db::lazyfree::free_old(old, crate::db::lazyfree::Reason::ServerDel);
        return ctx.out.int(n as i64);
    }
    drop(locks);
    items_header(ctx.out, result.len(), withscores);
    for (m, s) in &result {
        item(ctx.out, m, *s, withscores);
    }
}

/// ZUNION numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX]
/// [WITHSCORES].
fn zunion(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    set_op(ctx, args, "zunion", SetOp::Union, false, false);
}

/// ZINTER numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX]
/// [WITHSCORES].
fn zinter(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    set_op(ctx, args, "zinter", SetOp::Inter, false, false);
}

/// ZDIFF numkeys key [key ...] [WITHSCORES].
fn zdiff(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    set_op(ctx, args, "zdiff", SetOp::Diff, false, false);
}

/// ZUNIONSTORE dst numkeys key [key ...] [WEIGHTS ...] [AGGREGATE ...].
fn zunionstore(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    set_op(ctx, args, "zunionstore", SetOp::Union, true, false);
}

/// ZINTERSTORE dst numkeys key [key ...] [WEIGHTS ...] [AGGREGATE ...].
fn zinterstore(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    set_op(ctx, args, "zinterstore", SetOp::Inter, true, false);
}

/// ZDIFFSTORE dst numkeys key [key ...].
fn zdiffstore(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    set_op(ctx, args, "zdiffstore", SetOp::Diff, true, false);
}

/// ZINTERCARD numkeys key [key ...] [LIMIT limit]: integer.
fn zintercard(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    set_op(ctx, args, "zintercard", SetOp::Inter, false, true);
}

// ------------------------------------------------------------ ZRANDMEMBER

/// ZRANDMEMBER key [count [WITHSCORES]]: without count a random member
/// (or null); with count as Redis's `zrandmemberWithCountCommand`: a
/// negative count allows repetitions, a count at least the size returns
/// the whole set (in descending order, as Redis 7.0), otherwise distinct
/// random members.
fn zrandmember(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if args.len() >= 3 {
        let l = match crate::util::parse_i64(args.get(2)) {
            None => return ctx.not_int(),
            Some(i64::MIN) => {
                return ctx.error(
                    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
                )
            }
            Some(v) => v,
        };
        let withscores = if args.len() > 4
            || (args.len() == 4 && !args.get(3).eq_ignore_ascii_case(b"withscores"))
        {
            return ctx.syntax();
        } else if args.len() == 4 {
            if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
                return ctx.error("ERR value is out of range");
            }
            true
        } else {
            false
        };
        let r = read(ctx, args.get(1), |z, out| {
            rand_with_count(out, z, l, withscores)
        });
        match r {
            Ok(None) => ctx.out.array(0),
            Ok(Some(Some(picks))) => ctx.stream_reply(picks),
            _ => {}
        }
        return;
    }
    let r = read(ctx, args.get(1), |z, out| {
        let rank = (rand_u64() % z.len() as u64) as usize;
        z.entry_at(rank, |m, _| out.bulk(m));
    });
    if let Ok(None) = r {
        ctx.out.null();
    }
}

/// ZRANDMEMBER with a count (`zrandmemberWithCountCommand`); a
/// negative count of more than [`STREAM_ABOVE`](super::stream::STREAM_ABOVE)
/// members returns the copy to produce the reply from (cmd/stream.rs).
fn rand_with_count(
    out: &mut Out,
    z: &ZSetValue,
    l: i64,
    ws: bool,
) -> Option<super::stream::RandomPicks> {
    let size = z.len();
    if l == 0 {
        out.array(0);
        return None;
    }
    let (count, uniq) = if l < 0 {
        (l.unsigned_abs(), false)
    } else {
        (l as u64, true)
    };
    if !uniq || count == 1 {
        items_header(out, count as usize, ws);
        if count > super::stream::STREAM_ABOVE {
            let shape = super::stream::Shape::Scored { scores: ws };
            let mut picks = super::stream::RandomPicks::new(shape, count);
            z.range(0, size, true, |m, s| picks.push_scored(m, s));
            return Some(picks);
        }
        for _ in 0..count {
            let rank = (rand_u64() % size as u64) as usize;
            z.entry_at(rank, |m, s| item(out, m, s, ws));
        }
        return None;
    }
    if count >= size as u64 {
        items_header(out, size, ws);
        z.range(0, size, true, |m, s| item(out, m, s, ws));
        return None;
    }
    // Distinct ranks: a partial Fisher-Yates shuffle when many are wanted,
    // else rejection sampling; either way at most `size` entries.
    let count = count as usize;
    let ranks: Vec<usize> = if count * 3 > size {
        let mut all: Vec<usize> = (0..size).collect();
        for i in 0..count {
            let j = i + (rand_u64() % (size - i) as u64) as usize;
            all.swap(i, j);
        }
        all.truncate(count);
        all
    } else {
        let mut seen = std::collections::HashSet::with_capacity(count);
        let mut v = Vec::with_capacity(count);
        while v.len() < count {
            let r = (rand_u64() % size as u64) as usize;
            if seen.insert(r) {
                v.push(r);
            }
        }
        v
    };
    items_header(out, count, ws);
    for r in ranks {
        z.entry_at(r, |m, s| item(out, m, s, ws));
    }
    None
}

// ------------------------------------------------------------ ZSCAN

/// Formats a score as Redis's listpack stores it (`zzlInsertAt`): an
/// integer when the score is integral within ±2^62 (`double2ll`), else
/// `%.17g` ("inf", "-inf" for infinities). Used by ZSCAN of a listpack.
fn listpack_score(v: f64, out: &mut Vec<u8>) {
    const LIM: f64 = 4611686018427387904.0;
    if v.is_finite() && (-LIM..=LIM).contains(&v) && v.trunc() == v {
        out.extend_from_slice(itoa::Buffer::new().format(v as i64).as_bytes());
    } else {
        fmt_double_17g(v, out);
    }
}

/// ZSCAN key cursor [MATCH pattern] [COUNT count]: [next cursor, [member,
/// score, ...]]. A `listpack` set comes whole with cursor 0; a `skiplist`
/// set is walked by slot (see [`ZSetValue::scan`]).
fn zscan(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(cursor) = super::keys::parse_scan_cursor(args.get(2)) else {
        return ctx.error("ERR invalid cursor");
    };
    let r = read(
        ctx,
        args.get(1),
        |z, _| -> Result<(u64, Vec<Vec<u8>>), &'static str> {
            let mut count = 10i64;
            let mut pat: Option<&[u8]> = None;
            let mut i = 3;
            while i < args.len() {
                let o = args.get(i);
                let has_arg = i + 1 < args.len();
                if o.eq_ignore_ascii_case(b"count") && has_arg {
                    count = crate::util::parse_i64(args.get(i + 1)).ok_or(err::NOT_INT)?;
                    if count < 1 {
                        return Err(err::SYNTAX);
                    }
                } else if o.eq_ignore_ascii_case(b"match") && has_arg {
                    let p = args.get(i + 1);
                    pat = if p == b"*" { None } else { Some(p) };
                } else {
                    return Err(err::SYNTAX);
                }
                i += 2;
            }
            let mut items = Vec::new();
            let next = z.scan(cursor, count as usize, |m, s, packed| {
                if pat.is_some_and(|p| !glob_match(p, m, false)) {
                    return;
                }
                items.push(m.to_vec());
                let mut sb = Vec::with_capacity(24);
                if packed {
                    listpack_score(s, &mut sb);
                } else {
                    fmt_double_17g(s, &mut sb);
                }
                items.push(sb);
            });
            Ok((next, items))
        },
    );
    match r {
        Err(()) => {}
        Ok(None) => {
            ctx.out.array(2);
            ctx.out.bulk(b"0");
            ctx.out.array(0);
        }
        Ok(Some(Err(e))) => ctx.error(e),
        Ok(Some(Ok((next, items)))) => {
            ctx.out.array(2);
            ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
            ctx.out.array(items.len());
            for i in &items {
                ctx.out.bulk(i);
            }
        }
    }
}
