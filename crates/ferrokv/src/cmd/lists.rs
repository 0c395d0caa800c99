//! List commands (redis.io/commands/?group=list): LPUSH RPUSH LPUSHX
//! RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LINSERT LREM LTRIM LPOS LMOVE
//! RPOPLPUSH LMPOP and the blocking BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP.
//!
//! Behaviour follows Redis 7.0's t_list.c as observed on redis-server
//! 7.0.15: the order of argument parsing and key lookups decides which
//! error a request gets (e.g. LRANGE parses its indexes before looking the
//! key up, LINDEX after), and each handler says which order it keeps. Read
//! commands (LLEN, LRANGE, LINDEX, LPOS) count keyspace hits/misses as
//! `lookupKeyRead` does; the others look keys up for writing, which counts
//! nothing. A list emptied by a command is deleted.
//!
//! Blocking commands use the generic machinery of `db::blocking`: when
//! every key is empty the handler registers a waiter under the keys' shard
//! locks and sets `client.blocked`; the connection then waits. Commands that
//! add elements (pushes, LMOVE's destination, a served BLMOVE's
//! destination) serve the key's waiters before releasing their locks.
//! [`parse_timeout`] and [`block_on_keys`] are public for the other
//! families with blocking commands (BZPOPMIN, BZPOPMAX, BZMPOP).

use super::keyspecs;
use crate::db::lru::Access;
use crate::db::Keyspace;
use crate::events::{GENERIC, LIST, NEW};

/// The keyspace event of a push at `end` ("lpush" / "rpush").
fn push_event(end: End) -> &'static str {
    if end == End::Left {
        "lpush"
    } else {
        "rpush"
    }
}

/// The keyspace event of a pop at `end` ("lpop" / "rpop").
fn pop_event(end: End) -> &'static str {
    if end == End::Left {
        "lpop"
    } else {
        "rpop"
    }
}

use super::{acl, cmd, err, flags::*, Command, Ctx};
use crate::db::blocking::{self, serve_and_release, Attempt, BlockOp, ServeCx, Waiter};
use crate::db::list::{Elem, End, ListValue};
use crate::db::{hash_key, Entry, KeyLocks, Value};
use crate::resp::{Args, Out};
use crate::server::Server;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const PUSH_COMPLEXITY: &str = "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.";
const MPOP_COMPLEXITY: &str =
    "O(N+M) where N is the number of provided keys and M is the number of elements returned.";
const MOVE_SUMMARY: &str =
    "Pop an element from a list, push it to another list and return it; or block until one is available";

/// The lists family's table entries (arity, flags, key positions and docs
/// as Redis 7.0's COMMAND INFO / COMMAND DOCS report).
pub static COMMANDS: &[Command] = &[
    cmd("lpush", -3, WRITE | DENYOOM | FAST, (1, 1, 1), acl::LIST, lpush).key_specs(keyspecs::APPEND).doc(
        "list",
        "1.0.0",
        "Prepend one or multiple elements to a list",
        PUSH_COMPLEXITY,
    ),
    cmd("rpush", -3, WRITE | DENYOOM | FAST, (1, 1, 1), acl::LIST, rpush).key_specs(keyspecs::APPEND).doc(
        "list",
        "1.0.0",
        "Append one or multiple elements to a list",
        PUSH_COMPLEXITY,
    ),
    cmd("lpushx", -3, WRITE | DENYOOM | FAST, (1, 1, 1), acl::LIST, lpushx).key_specs(keyspecs::APPEND).doc(
        "list",
        "2.2.0",
        "Prepend an element to a list, only if the list exists",
        PUSH_COMPLEXITY,
    ),
    cmd("rpushx", -3, WRITE | DENYOOM | FAST, (1, 1, 1), acl::LIST, rpushx).key_specs(keyspecs::APPEND).doc(
        "list",
        "2.2.0",
        "Append an element to a list, only if the list exists",
        PUSH_COMPLEXITY,
    ),
    cmd("lpop", -2, WRITE | FAST, (1, 1, 1), acl::LIST, lpop).key_specs(keyspecs::GETDEL).doc(
        "list",
        "1.0.0",
        "Remove and get the first elements in a list",
        "O(N) where N is the number of elements returned",
    ),
    cmd("rpop", -2, WRITE | FAST, (1, 1, 1), acl::LIST, rpop).key_specs(keyspecs::GETDEL).doc(
        "list",
        "1.0.0",
        "Remove and get the last elements in a list",
        "O(N) where N is the number of elements returned",
    ),
    cmd("llen", 2, READONLY | FAST, (1, 1, 1), acl::LIST, llen).key_specs(keyspecs::HEXISTS).doc(
        "list",
        "1.0.0",
        "Get the length of a list",
        "O(1)",
    ),
    cmd("lrange", 4, READONLY, (1, 1, 1), acl::LIST, lrange).key_specs(keyspecs::DUMP).doc(
        "list",
        "1.0.0",
        "Get a range of elements from a list",
        "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.",
    ),
    cmd("lindex", 3, READONLY, (1, 1, 1), acl::LIST, lindex).key_specs(keyspecs::DUMP).doc(
        "list",
        "1.0.0",
        "Get an element from a list by its index",
        "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).",
    ),
    cmd("lset", 4, WRITE | DENYOOM, (1, 1, 1), acl::LIST, lset).key_specs(keyspecs::EXPIRE).doc(
        "list",
        "1.0.0",
        "Set the value of an element in a list by its index",
        "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).",
    ),
    cmd("linsert", 5, WRITE | DENYOOM, (1, 1, 1), acl::LIST, linsert).key_specs(keyspecs::APPEND).doc(
        "list",
        "2.2.0",
        "Insert an element before or after another element in a list",
        "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).",
    ),
    cmd("lrem", 4, WRITE, (1, 1, 1), acl::LIST, lrem).key_specs(keyspecs::HDEL).doc(
        "list",
        "1.0.0",
        "Remove elements from a list",
        "O(N+M) where N is the length of the list and M is the number of elements removed.",
    ),
    cmd("ltrim", 4, WRITE, (1, 1, 1), acl::LIST, ltrim).key_specs(keyspecs::HDEL).doc(
        "list",
        "1.0.0",
        "Trim a list to the specified range",
        "O(N) where N is the number of elements to be removed by the operation.",
    ),
    cmd("lpos", -3, READONLY, (1, 1, 1), acl::LIST, lpos).key_specs(keyspecs::DUMP).doc(
        "list",
        "6.0.6",
        "Return the index of matching elements on a list",
        "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.",
    ),
    cmd("lmove", 5, WRITE | DENYOOM, (1, 2, 1), acl::LIST, lmove).key_specs(keyspecs::BLMOVE).doc(
        "list",
        "6.2.0",
        "Pop an element from a list, push it to another list and return it",
        "O(1)",
    ),
    cmd("rpoplpush", 3, WRITE | DENYOOM, (1, 2, 1), acl::LIST, rpoplpush).key_specs(keyspecs::BLMOVE).doc(
        "list",
        "1.2.0",
        "Remove the last element in a list, prepend it to another list and return it",
        "O(1)",
    ),
    cmd("lmpop", -4, WRITE | MOVABLE_KEYS, (0, 0, 0), acl::LIST, lmpop).key_specs(keyspecs::LMPOP).key_finder(keyspecs::numkeys_at_1).doc(
        "list",
        "7.0.0",
        "Pop elements from a list",
        MPOP_COMPLEXITY,
    ),
    cmd("blpop", -3, WRITE | NOSCRIPT | BLOCKING, (1, -2, 1), acl::LIST, blpop).key_specs(keyspecs::BLPOP).doc(
        "list",
        "2.0.0",
        "Remove and get the first element in a list, or block until one is available",
        "O(N) where N is the number of provided keys.",
    ),
    cmd("brpop", -3, WRITE | NOSCRIPT | BLOCKING, (1, -2, 1), acl::LIST, brpop).key_specs(keyspecs::BLPOP).doc(
        "list",
        "2.0.0",
        "Remove and get the last element in a list, or block until one is available",
        "O(N) where N is the number of provided keys.",
    ),
    cmd(
        "blmove",
        6,
        WRITE | DENYOOM | NOSCRIPT | BLOCKING,
        (1, 2, 1),
        acl::LIST,
        blmove,
    ).key_specs(keyspecs::BLMOVE)
    .doc("list", "6.2.0", MOVE_SUMMARY, "O(1)"),
    cmd(
        "brpoplpush",
        4,
        WRITE | DENYOOM | NOSCRIPT | BLOCKING,
        (1, 2, 1),
        acl::LIST,
        brpoplpush,
    ).key_specs(keyspecs::BLMOVE)
    .doc("list", "2.2.0", MOVE_SUMMARY, "O(1)"),
    cmd(
        "blmpop",
        -5,
        WRITE | BLOCKING | MOVABLE_KEYS,
        (0, 0, 0),
        acl::LIST,
        blmpop,
    ).key_specs(keyspecs::BLMPOP).key_finder(keyspecs::numkeys_at_2)
    .doc(
        "list",
        "7.0.0",
        "Pop elements from a list, or block until one is available",
        MPOP_COMPLEXITY,
    ),
];

// ---------------------------------------------------------------- helpers

/// list-max-listpack-size, read per command.
#[inline]
fn fill(server: &Server) -> i64 {
    server.live.list_max_listpack_size.load(Ordering::Relaxed)
}

/// A new empty list with the server's list-compress-depth.
#[inline]
fn new_list(server: &Server) -> ListValue {
    ListValue::with_compress_depth(server.live.list_compress_depth.load(Ordering::Relaxed))
}

/// Refreshes an entry's LRU clock (`t` is [`Ctx::touch_time`]).
#[inline]
fn touch(e: &mut Entry, t: Option<Access<'_>>) {
    if let Some(t) = t {
        t.record(&mut e.lru);
    }
}

/// Writes one element as a bulk string.
#[inline]
fn bulk_elem(out: &mut Out, e: Elem<'_>) {
    match e {
        Elem::Bytes(b) => out.bulk(b),
        Elem::Int(n) => out.bulk_int(n),
    }
}

/// Parses LEFT / RIGHT (ASCII case-insensitive) as Redis's
/// `getListPositionFromObjectOrReply`.
fn parse_end(a: &[u8]) -> Option<End> {
    if a.eq_ignore_ascii_case(b"left") {
        Some(End::Left)
    } else if a.eq_ignore_ascii_case(b"right") {
        Some(End::Right)
    } else {
        None
    }
}

/// Parses an i64 argument as `getLongFromObjectOrReply` (error "value is
/// not an integer or out of range").
#[inline]
fn arg_long(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<i64> {
    super::arg_i64(ctx, a)
}

/// What a lookup for writing found.
enum Found<'s> {
    Missing,
    List(&'s mut Entry),
    WrongType,
}

/// Looks `key` up in `shard` for a list command (lazy expiry applies).
#[inline]
fn find<'s>(shard: &'s mut crate::db::Shard, h: u64, key: &[u8], now: u64) -> Found<'s> {
    match shard.get(h, key, now) {
        None => Found::Missing,
        Some(e) if matches!(e.value, Value::List(_)) => Found::List(e),
        Some(_) => Found::WrongType,
    }
}

/// The list inside an entry known to hold one.
#[inline]
fn list_mut(e: &mut Entry) -> &mut ListValue {
    match &mut e.value {
        Value::List(l) => l,
        _ => unreachable!("checked by find"),
    }
}

/// Parses a blocking timeout in seconds (decimals allowed) as Redis 7.0's
/// `getTimeoutFromObjectOrReply` with UNIT_SECONDS: a value that is not a
/// float (spaces, NaN, garbage) is "ERR timeout is not a float or out of
/// range"; the milliseconds are rounded up, and a negative result (which
/// includes values too large for a 64-bit millisecond count, as in 7.0) is
/// "ERR timeout is negative". Returns the timeout in ms (0 = forever), or
/// None after replying the error. Shared with the sorted-set family.
pub fn parse_timeout(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<u64> {
    let Some(secs) = crate::util::parse_f64(a) else {
        ctx.error("ERR timeout is not a float or out of range");
        return None;
    };
    let ms = (secs * 1000.0).ceil();
    // (long long) of an out-of-range long double is LLONG_MIN on x86-64.
    let ms = if ms.is_finite() && ms < 9.223_372_036_854_775e18 && ms > -9.223_372_036_854_775e18 {
        ms as i64
    } else {
        i64::MIN
    };
    if ms < 0 {
        ctx.error("ERR timeout is negative");
        return None;
    }
    Some(ms as u64)
}

/// Blocks the calling client on `keys` (database `ctx.client.db`): the
/// caller holds every key's shard in `locks` and found nothing to serve.
/// Registers a [`Waiter`] running `op` in each key's queue, marks the client
/// blocked (CLIENT LIST flag `b`, CLIENT UNBLOCK) and writes no reply: the
/// connection waits for the wake-up or `timeout_ms` (0 = forever) and then
/// replies. Shared with the sorted-set family.
pub fn block_on_keys(
    ctx: &mut Ctx<'_>,
    locks: &mut KeyLocks<'_>,
    keys: Vec<Box<[u8]>>,
    op: Box<dyn BlockOp>,
    timeout_ms: u64,
) {
    let (w, rx) = Waiter::new(ctx.client.handle.id, ctx.client.db, keys, ctx.out.resp3, op);
    blocking::register(locks, &w);
    *ctx.client.handle.blocked.lock() = Some(w.clone());
    let deadline = if timeout_ms == 0 {
        None
    } else {
        Instant::now().checked_add(Duration::from_millis(timeout_ms))
    };
    ctx.client.blocked = Some(crate::cmd::client::Blocked {
        waiter: w,
        rx,
        deadline,
    });
}

// ---------------------------------------------------------------- pushes

/// LPUSH / RPUSH / LPUSHX / RPUSHX key element [element ...]: the length
/// after the push; the X forms reply :0 and create nothing when the key is
/// missing. WRONGTYPE for another type. Waiters on the key are served
/// atomically after the push (Redis serves them after the command too, so
/// the reply is the length before serving).
fn push_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, end: End, xx: bool) {
    let key = args.get(1);
    let db = ctx.client.db;
    let h = hash_key(key);
    let server: &Server = ctx.server;
    let mut locks = server.keyspace.lock_keys(&[(db, h)]);
    let fill = fill(server);
    let now = ctx.now;
    let t = ctx.touch_time();
    let shard = locks.shard(db, h);
    let len = match find(shard, h, key, now) {
        Found::WrongType => {
            drop(locks);
            return ctx.wrongtype();
        }
        Found::List(e) => {
            touch(e, t);
            let l = list_mut(e);
            for v in args.iter().skip(2) {
                l.push(end, v, fill);
            }
            l.len()
        }
        Found::Missing => {
            if xx {
                drop(locks);
                return ctx.out.int(0);
            }
            let mut l = new_list(server);
            for v in args.iter().skip(2) {
                l.push(end, v, fill);
            }
            let n = l.len();
            shard.insert(
                h,
                key,
                Entry::new(
                    Value::List(Box::new(l)),
                    ctx.server.keyspace.lru.initial(now),
                ),
            );
            ctx.notify(key, NEW, "new");
            n
        }
    };
    ctx.modified(key, LIST, push_event(end));
    ctx.out.int(len as i64);
    serve_and_release(server, locks, db, &[key], now);
}

fn lpush(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    push_generic(ctx, args, End::Left, false)
}
fn rpush(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    push_generic(ctx, args, End::Right, false)
}
fn lpushx(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    push_generic(ctx, args, End::Left, true)
}
fn rpushx(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    push_generic(ctx, args, End::Right, true)
}

// ---------------------------------------------------------------- pops

/// LPOP / RPOP key [count]. Without count: the element or a null bulk.
/// With count (parsed first: "value is out of range, must be positive"
/// when negative or not an integer): an array of up to count elements, a null array when the
/// key is missing (`*-1` / RESP3 `_`) and an empty array for count 0 on an
/// existing list, as Redis 7.0's popGenericCommand. More than one extra
/// argument is a wrong-number-of-arguments error.
fn pop_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, end: End) {
    if args.len() > 3 {
        let name = if end == End::Left { "lpop" } else { "rpop" };
        return ctx.error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
    }
    let count = if args.len() == 3 {
        match crate::util::parse_i64(args.get(2)) {
            Some(n) if n >= 0 => Some(n as u64),
            _ => return ctx.error("ERR value is out of range, must be positive"),
        }
    } else {
        None
    };
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let t = ctx.touch_time();
    match find(&mut shard, h, key, ctx.now) {
        Found::Missing => {
            drop(shard);
            if count.is_some() {
                ctx.out.null_array();
            } else {
                ctx.out.null();
            }
        }
        Found::WrongType => {
            drop(shard);
            ctx.wrongtype()
        }
        Found::List(e) => {
            touch(e, t);
            let l = list_mut(e);
            let mut popped = true;
            match count {
                None => {
                    let v = l.pop(end).expect("lists are never empty");
                    ctx.out.bulk(&v);
                }
                Some(n) => {
                    let n = (n as usize).min(l.len());
                    popped = n > 0;
                    ctx.out.array(n);
                    for _ in 0..n {
                        let v = l.pop(end).expect("counted");
                        ctx.out.bulk(&v);
                    }
                }
            }
            if popped {
                ctx.notify(key, LIST, pop_event(end));
            }
            if l.is_empty() {
                shard.remove(h, key);
                ctx.notify(key, GENERIC, "del");
            }
            if popped {
                ctx.touch_key(key);
            }
        }
    }
}

fn lpop(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    pop_generic(ctx, args, End::Left)
}
fn rpop(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    pop_generic(ctx, args, End::Right)
}

// ---------------------------------------------------------------- reads

/// Runs `f` on the list at `key` for a read command: counts a hit or miss,
/// refreshes the LRU clock. `missing` writes the reply for a missing key.
/// WRONGTYPE for another type.
fn read_list(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    missing: impl FnOnce(&mut Out),
    f: impl FnOnce(&mut Ctx<'_>, &ListValue),
) {
    let (h, mut shard) = ctx.lock(key);
    let t = ctx.touch_time();
    match shard.get(h, key, ctx.now) {
        None => {
            drop(shard);
            ctx.hit(key, false);
            missing(ctx.out);
        }
        Some(e) => {
            touch(e, t);
            match &mut e.value {
                Value::List(l) => {
                    ctx.hit(key, true);
                    f(ctx, l);
                    // Redis recompresses each node after reading it.
                    l.recompress();
                }
                _ => {
                    drop(shard);
                    ctx.hit(key, true);
                    ctx.wrongtype();
                }
            }
        }
    }
}

/// LLEN key: the length, 0 when missing.
fn llen(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    read_list(
        ctx,
        args.get(1),
        |o| o.int(0),
        |ctx, l| ctx.out.int(l.len() as i64),
    );
}

/// Redis's range normalisation (LRANGE/LTRIM): negative indexes count
/// from the end; returns the inclusive range or None when empty.
fn norm_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut s = if start < 0 {
        start.saturating_add(len)
    } else {
        start
    };
    let mut e = if end < 0 {
        end.saturating_add(len)
    } else {
        end
    };
    if s < 0 {
        s = 0;
    }
    if s > e || s >= len {
        return None;
    }
    if e >= len {
        e = len - 1;
    }
    Some((s as usize, e as usize))
}

/// LRANGE key start stop: the elements in the inclusive range (indexes
/// parsed before the lookup, as Redis), an empty array when missing.
fn lrange(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(start) = arg_long(ctx, args.get(2)) else {
        return;
    };
    let Some(stop) = arg_long(ctx, args.get(3)) else {
        return;
    };
    read_list(
        ctx,
        args.get(1),
        |o| o.array(0),
        |ctx, l| match norm_range(start, stop, l.len()) {
            None => ctx.out.array(0),
            Some((s, e)) => {
                ctx.out.array(e - s + 1);
                for el in l.iter_from(s).take(e - s + 1) {
                    bulk_elem(ctx.out, el);
                }
            }
        },
    );
}

/// LINDEX key index: the element or null. The key is looked up before the
/// index is parsed (a missing key with a bad index is null), as Redis.
fn lindex(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let idx = args.get(2);
    read_list(
        ctx,
        args.get(1),
        |o| o.null(),
        |ctx, l| {
            let Some(i) = arg_long(ctx, idx) else {
                return;
            };
            match l.resolve(i).and_then(|p| l.get(p)) {
                Some(e) => bulk_elem(ctx.out, e),
                None => ctx.out.null(),
            }
        },
    );
}

/// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]: options
/// parsed first with Redis's errors (RANK 0; "COUNT can't be negative" /
/// "MAXLEN can't be negative" for a negative or non-integer value; a
/// missing value or unknown option is a syntax error). Without COUNT: the
/// first matching index or null; with COUNT: an array of up to COUNT
/// indexes (0 = all), an empty array when the key is missing. A negative
/// RANK scans from the tail; MAXLEN bounds the elements compared.
fn lpos(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let mut rank: i64 = 1;
    let mut count: Option<i64> = None;
    let mut maxlen: i64 = 0;
    let mut j = 3;
    while j < args.len() {
        let opt = args.get(j);
        let has_next = j + 1 < args.len();
        if opt.eq_ignore_ascii_case(b"rank") && has_next {
            let Some(r) = arg_long(ctx, args.get(j + 1)) else {
                return;
            };
            if r == 0 {
                return ctx.error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list");
            }
            rank = r;
        } else if opt.eq_ignore_ascii_case(b"count") && has_next {
            match crate::util::parse_i64(args.get(j + 1)) {
                Some(c) if c >= 0 => count = Some(c),
                _ => return ctx.error("ERR COUNT can't be negative"),
            }
        } else if opt.eq_ignore_ascii_case(b"maxlen") && has_next {
            match crate::util::parse_i64(args.get(j + 1)) {
                Some(m) if m >= 0 => maxlen = m,
                _ => return ctx.error("ERR MAXLEN can't be negative"),
            }
        } else {
            return ctx.syntax();
        }
        j += 2;
    }
    let elem = args.get(2);
    read_list(
        ctx,
        args.get(1),
        |o| {
            if count.is_some() {
                o.array(0)
            } else {
                o.null()
            }
        },
        |ctx, l| {
            let want = match count {
                Some(0) => usize::MAX,
                Some(c) => c as usize,
                None => 1,
            };
            // Matches to skip before reporting (RANK), from the chosen end.
            // RANK i64::MIN negates to itself in Redis (signed overflow) and
            // then acts as -1.
            let mut skip = if rank == i64::MIN {
                0
            } else {
                rank.unsigned_abs() - 1
            };
            let limit = if maxlen == 0 {
                usize::MAX
            } else {
                maxlen as usize
            };
            let mut found: Vec<usize> = Vec::new();
            let len = l.len();
            let mut check = |pos: usize, e: Elem<'_>| -> bool {
                if e.eq_bytes(elem) {
                    if skip > 0 {
                        skip -= 1;
                    } else {
                        found.push(pos);
                        if found.len() >= want {
                            return false;
                        }
                    }
                }
                true
            };
            if rank > 0 {
                for (i, e) in l.iter().take(limit).enumerate() {
                    if !check(i, e) {
                        break;
                    }
                }
            } else {
                for (i, e) in l.iter_rev().take(limit).enumerate() {
                    if !check(len - 1 - i, e) {
                        break;
                    }
                }
            }
            if count.is_some() {
                ctx.out.array(found.len());
                for p in found {
                    ctx.out.int(p as i64);
                }
            } else if let Some(&p) = found.first() {
                ctx.out.int(p as i64);
            } else {
                ctx.out.null();
            }
        },
    );
}

// ---------------------------------------------------------------- in-place writes

/// LSET key index element: +OK; "ERR no such key" when missing (checked
/// before the index is parsed), "ERR index out of range".
fn lset(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let fill = fill(ctx.server);
    let (h, mut shard) = ctx.lock(key);
    let t = ctx.touch_time();
    match find(&mut shard, h, key, ctx.now) {
        Found::Missing => {
            drop(shard);
            ctx.error(err::NO_SUCH_KEY)
        }
        Found::WrongType => {
            drop(shard);
            ctx.wrongtype()
        }
        Found::List(e) => {
            touch(e, t);
            let l = list_mut(e);
            let Some(i) = crate::util::parse_i64(args.get(2)) else {
                drop(shard);
                return ctx.not_int();
            };
            match l.resolve(i) {
                Some(p) => {
                    l.set(p, args.get(3), fill);
                    drop(shard);
                    ctx.modified(key, LIST, "lset");
                    ctx.out.ok();
                }
                None => {
                    drop(shard);
                    ctx.error("ERR index out of range")
                }
            }
        }
    }
}

/// LINSERT key BEFORE|AFTER pivot element: the new length, -1 when the
/// pivot is absent, 0 when the key is missing. The position keyword is
/// checked first (syntax error), as Redis.
fn linsert(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let after = if args.get(2).eq_ignore_ascii_case(b"after") {
        true
    } else if args.get(2).eq_ignore_ascii_case(b"before") {
        false
    } else {
        return ctx.syntax();
    };
    let key = args.get(1);
    let fill = fill(ctx.server);
    let (h, mut shard) = ctx.lock(key);
    let t = ctx.touch_time();
    match find(&mut shard, h, key, ctx.now) {
        Found::Missing => {
            drop(shard);
            ctx.out.int(0)
        }
        Found::WrongType => {
            drop(shard);
            ctx.wrongtype()
        }
        Found::List(e) => {
            touch(e, t);
            let l = list_mut(e);
            let pivot = args.get(3);
            match l.iter().position(|e| e.eq_bytes(pivot)) {
                Some(p) => {
                    l.insert(if after { p + 1 } else { p }, args.get(4), fill);
                    let n = l.len();
                    drop(shard);
                    ctx.modified(key, LIST, "linsert");
                    ctx.out.int(n as i64);
                }
                None => {
                    drop(shard);
                    ctx.out.int(-1)
                }
            }
        }
    }
}

/// LREM key count element: the number removed (count > 0 from the head,
/// < 0 from the tail, 0 all); count parsed before the lookup; 0 when the
/// key is missing.
fn lrem(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(count) = arg_long(ctx, args.get(2)) else {
        return;
    };
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let t = ctx.touch_time();
    match find(&mut shard, h, key, ctx.now) {
        Found::Missing => {
            drop(shard);
            ctx.out.int(0)
        }
        Found::WrongType => {
            drop(shard);
            ctx.wrongtype()
        }
        Found::List(e) => {
            touch(e, t);
            let l = list_mut(e);
            let limit = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
            let n = l.remove_matching(args.get(3), limit, count < 0);
            let emptied = l.is_empty();
            if emptied {
                shard.remove(h, key);
            }
            if n > 0 {
                ctx.notify(key, LIST, "lrem");
                if emptied {
                    ctx.notify(key, GENERIC, "del");
                }
                ctx.touch_key(key);
            }
            drop(shard);
            ctx.out.int(n as i64);
        }
    }
}

/// LTRIM key start stop: +OK (also when the key is missing); indexes parsed
/// first; a list trimmed to nothing is deleted.
fn ltrim(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(start) = arg_long(ctx, args.get(2)) else {
        return;
    };
    let Some(stop) = arg_long(ctx, args.get(3)) else {
        return;
    };
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let t = ctx.touch_time();
    match find(&mut shard, h, key, ctx.now) {
        Found::Missing => {
            drop(shard);
            ctx.out.ok()
        }
        Found::WrongType => {
            drop(shard);
            ctx.wrongtype()
        }
        Found::List(e) => {
            touch(e, t);
            let l = list_mut(e);
            let before = l.len();
            match norm_range(start, stop, l.len()) {
                Some((s, e)) => l.retain_range(s, e + 1),
                None => l.retain_range(0, 0),
            }
            if l.len() == before {
                // Redis signals the key but adds nothing to server.dirty:
                // nothing is propagated.
                crate::propagate::prevent();
            }
            ctx.notify(key, LIST, "ltrim");
            if l.is_empty() {
                shard.remove(h, key);
                ctx.notify(key, GENERIC, "del");
            }
            ctx.touch_key(key);
            drop(shard);
            ctx.out.ok();
        }
    }
}

// ---------------------------------------------------------------- moves

/// Outcome of [`move_locked`].
enum MoveResult {
    /// The source is missing.
    Missing,
    /// Source or destination of another type.
    WrongType,
    /// Moved this element.
    Moved(Vec<u8>),
}

/// LMOVE's core with both shards held: checks the source (missing, type),
/// then the destination's type, pops from `from` of `src` and pushes to
/// `to` of `dst` (creating it), deleting an emptied source. Works for
/// `src == dst` (rotation).
#[allow(clippy::too_many_arguments)]
fn move_locked(
    locks: &mut KeyLocks<'_>,
    db: usize,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
    now: u64,
    (fill, depth): (i64, u64),
    t: Option<Access<'_>>,
    ks: &Keyspace,
) -> MoveResult {
    let events = ks.events();
    let hs = hash_key(src);
    let hd = hash_key(dst);
    match find(locks.shard(db, hs), hs, src, now) {
        Found::Missing => return MoveResult::Missing,
        Found::WrongType => return MoveResult::WrongType,
        Found::List(e) => touch(e, t),
    }
    if let Found::WrongType = find(locks.shard(db, hd), hd, dst, now) {
        return MoveResult::WrongType;
    }
    let shard = locks.shard(db, hs);
    let Found::List(e) = find(shard, hs, src, now) else {
        unreachable!("checked above")
    };
    let l = list_mut(e);
    let v = l.pop(from).expect("lists are never empty");
    let emptied = l.is_empty();
    if emptied {
        shard.remove(hs, src);
    }
    let shard = locks.shard(db, hd);
    match find(shard, hd, dst, now) {
        Found::List(e) => {
            touch(e, t);
            list_mut(e).push(to, &v, fill);
        }
        _ => {
            let mut l = ListValue::with_compress_depth(depth);
            l.push(to, &v, fill);
            shard.insert(
                hd,
                dst,
                Entry::new(Value::List(Box::new(l)), ks.lru.initial(now)),
            );
            events.notify(db, dst, NEW, "new");
        }
    }
    // Redis's lmoveGenericCommand order: the push, then the pop, then the
    // deletion of an emptied source.
    events.modified(db, dst, LIST, push_event(to));
    events.notify(db, src, LIST, pop_event(from));
    if emptied {
        events.notify(db, src, GENERIC, "del");
    }
    events.touch(db, src);
    MoveResult::Moved(v)
}

/// LMOVE / RPOPLPUSH / non-blocking BLMOVE with both shards locked: the
/// moved element, null when the source is missing, WRONGTYPE. Serves the
/// destination's waiters before unlocking.
fn lmove_generic(ctx: &mut Ctx<'_>, src: &[u8], dst: &[u8], from: End, to: End) {
    let db = ctx.client.db;
    let server: &Server = ctx.server;
    let mut locks = server
        .keyspace
        .lock_keys(&[(db, hash_key(src)), (db, hash_key(dst))]);
    let t = ctx.touch_time();
    match move_locked(
        &mut locks,
        db,
        src,
        dst,
        from,
        to,
        ctx.now,
        (
            fill(server),
            server.live.list_compress_depth.load(Ordering::Relaxed),
        ),
        t,
        &server.keyspace,
    ) {
        MoveResult::Missing => {
            drop(locks);
            ctx.out.null()
        }
        MoveResult::WrongType => {
            drop(locks);
            ctx.wrongtype()
        }
        MoveResult::Moved(v) => {
            ctx.out.bulk(&v);
            serve_and_release(server, locks, db, &[dst], ctx.now);
        }
    }
}

/// LMOVE source destination LEFT|RIGHT LEFT|RIGHT (positions checked
/// first: syntax error).
fn lmove(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let (Some(from), Some(to)) = (parse_end(args.get(3)), parse_end(args.get(4))) else {
        return ctx.syntax();
    };
    lmove_generic(ctx, args.get(1), args.get(2), from, to);
}

/// RPOPLPUSH source destination = LMOVE source destination RIGHT LEFT.
fn rpoplpush(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    lmove_generic(ctx, args.get(1), args.get(2), End::Right, End::Left);
}

// ---------------------------------------------------------------- LMPOP

/// Parsed `numkeys key... LEFT|RIGHT [COUNT n]` (LMPOP / BLMPOP).
struct MpopArgs {
    keys: std::ops::Range<usize>,
    end: End,
    count: usize,
}

/// Parses from `args[at]` (numkeys) as Redis's lmpopGenericCommand:
/// numkeys must be 1..LONG_MAX ("numkeys should be greater than 0"), fit in
/// the arguments (else syntax error); then LEFT|RIGHT; then an optional
/// single COUNT n with n >= 1 ("count should be greater than 0"); anything
/// else is a syntax error.
fn parse_mpop(ctx: &mut Ctx<'_>, args: &Args<'_>, at: usize) -> Option<MpopArgs> {
    let numkeys = match crate::util::parse_i64(args.get(at)) {
        Some(n) if n > 0 => n as u64,
        _ => {
            ctx.error("ERR numkeys should be greater than 0");
            return None;
        }
    };
    let avail = (args.len() - at - 1) as u64;
    if numkeys >= avail {
        ctx.syntax();
        return None;
    }
    let first = at + 1;
    let after = first + numkeys as usize;
    let Some(end) = parse_end(args.get(after)) else {
        ctx.syntax();
        return None;
    };
    let mut count = 1usize;
    let mut j = after + 1;
    let mut seen_count = false;
    while j < args.len() {
        if !seen_count && args.get(j).eq_ignore_ascii_case(b"count") && j + 1 < args.len() {
            match crate::util::parse_i64(args.get(j + 1)) {
                Some(n) if n > 0 => count = usize::try_from(n).unwrap_or(usize::MAX),
                _ => {
                    ctx.error("ERR count should be greater than 0");
                    return None;
                }
            }
            seen_count = true;
            j += 2;
        } else {
            ctx.syntax();
            return None;
        }
    }
    Some(MpopArgs {
        keys: first..after,
        end,
        count,
    })
}

/// Pops up to `count` from the list at `key` and writes the LMPOP reply
/// `[key, [elements]]`, deleting an emptied list. The caller checked that
/// the key holds a list.
#[allow(clippy::too_many_arguments)]
fn mpop_from(
    events: &crate::events::Gate,
    db: usize,
    shard: &mut crate::db::Shard,
    h: u64,
    key: &[u8],
    end: End,
    count: usize,
    now: u64,
    out: &mut Out,
) -> usize {
    let Found::List(e) = find(shard, h, key, now) else {
        unreachable!("checked by the caller")
    };
    let l = list_mut(e);
    let n = count.min(l.len());
    out.array(2);
    out.bulk(key);
    out.array(n);
    for _ in 0..n {
        let v = l.pop(end).expect("counted");
        out.bulk(&v);
    }
    events.notify(db, key, LIST, pop_event(end));
    if l.is_empty() {
        shard.remove(h, key);
        events.notify(db, key, GENERIC, "del");
    }
    events.touch(db, key);
    n
}

/// The non-blocking pop an (B)LMPOP / BLPOP / BRPOP is recorded as: LPOP
/// or RPOP of `key`, with the number popped for the MPOP forms (Redis's
/// listPopRangeAndReplyWithKey and serveClientBlockedOnList).
fn pop_record(end: End, key: &[u8], count: Option<usize>) -> Vec<Vec<u8>> {
    let c: &[u8] = if end == End::Left { b"LPOP" } else { b"RPOP" };
    let mut v = vec![c.to_vec(), key.to_vec()];
    if let Some(n) = count {
        v.push(itoa::Buffer::new().format(n).as_bytes().to_vec());
    }
    v
}

fn argv(v: &[Vec<u8>]) -> Vec<&[u8]> {
    v.iter().map(|a| a.as_slice()).collect()
}

/// The first key among `keys` holding a list, or Err(()) after the first
/// key of another type (WRONGTYPE comes first in key order, as Redis).
fn first_list(
    locks: &mut KeyLocks<'_>,
    db: usize,
    keys: &[&[u8]],
    now: u64,
) -> Result<Option<usize>, ()> {
    for (i, k) in keys.iter().enumerate() {
        let h = hash_key(k);
        match find(locks.shard(db, h), h, k, now) {
            Found::Missing => {}
            Found::WrongType => return Err(()),
            Found::List(_) => return Ok(Some(i)),
        }
    }
    Ok(None)
}

/// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]: `[key,
/// [elements]]` from the first non-empty list, a null array when none.
fn lmpop(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(m) = parse_mpop(ctx, args, 1) else {
        return;
    };
    mpop_generic(ctx, args, m, None);
}

/// LMPOP and BLMPOP after parsing; `timeout` is Some(ms) for BLMPOP.
fn mpop_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, m: MpopArgs, timeout: Option<u64>) {
    let db = ctx.client.db;
    let keys: Vec<&[u8]> = m.keys.clone().map(|i| args.get(i)).collect();
    let hashes: Vec<(usize, u64)> = keys.iter().map(|k| (db, hash_key(k))).collect();
    let server: &Server = ctx.server;
    let mut locks = server.keyspace.lock_keys(&hashes);
    match first_list(&mut locks, db, &keys, ctx.now) {
        Err(()) => {
            drop(locks);
            ctx.wrongtype()
        }
        Ok(Some(i)) => {
            let h = hashes[i].1;
            let n = mpop_from(
                ctx.events(),
                db,
                locks.shard(db, h),
                h,
                keys[i],
                m.end,
                m.count,
                ctx.now,
                ctx.out,
            );
            crate::propagate::rewrite(&argv(&pop_record(m.end, keys[i], Some(n))));
        }
        Ok(None) => match timeout {
            Some(ms) if !ctx.client.deny_blocking => {
                let ks = keys.iter().map(|k| Box::from(*k)).collect();
                let op = Box::new(PopOp {
                    end: m.end,
                    count: Some(m.count),
                });
                block_on_keys(ctx, &mut locks, ks, op, ms);
            }
            _ => {
                drop(locks);
                ctx.out.null_array()
            }
        },
    }
}

// ---------------------------------------------------------------- blocking

/// Serves BLPOP / BRPOP (`count` None: reply `[key, element]`) and BLMPOP
/// (`count` Some: reply `[key, [elements]]`).
struct PopOp {
    end: End,
    count: Option<usize>,
}

impl BlockOp for PopOp {
    fn serve(&self, cx: &mut ServeCx<'_, '_>, key: &[u8]) -> Attempt {
        let h = hash_key(key);
        let shard = cx.locks.shard(cx.db, h);
        match find(shard, h, key, cx.now) {
            Found::List(_) => {}
            Found::Missing => return Attempt::NotReady,
            Found::WrongType => return Attempt::Skip,
        }
        let mut out = Out {
            buf: Vec::new(),
            resp3: cx.resp3,
        };
        match self.count {
            Some(n) => {
                let n = mpop_from(
                    cx.host.keyspace().events(),
                    cx.db,
                    shard,
                    h,
                    key,
                    self.end,
                    n,
                    cx.now,
                    &mut out,
                );
                crate::propagate::also(cx.db, &argv(&pop_record(self.end, key, Some(n))));
            }
            None => {
                let Found::List(e) = find(shard, h, key, cx.now) else {
                    unreachable!()
                };
                let l = list_mut(e);
                let v = l.pop(self.end).expect("lists are never empty");
                let events = cx.host.keyspace().events();
                events.notify(cx.db, key, LIST, pop_event(self.end));
                if l.is_empty() {
                    shard.remove(h, key);
                    events.notify(cx.db, key, GENERIC, "del");
                }
                events.touch(cx.db, key);
                crate::propagate::also(cx.db, &argv(&pop_record(self.end, key, None)));
                out.array(2);
                out.bulk(key);
                out.bulk(&v);
            }
        }
        Attempt::Served(out.buf)
    }
}

/// Serves BLMOVE / BRPOPLPUSH: pops from the key that became ready and
/// pushes to the destination, both under lock. A destination of another
/// type gets the waiter a WRONGTYPE reply and leaves the element in place,
/// as Redis 7.0's serveClientBlockedOnList.
struct MoveOp {
    dst: Box<[u8]>,
    from: End,
    to: End,
    /// BRPOPLPUSH (recorded as RPOPLPUSH) rather than BLMOVE (LMOVE).
    rpoplpush: bool,
}

impl BlockOp for MoveOp {
    fn serve(&self, cx: &mut ServeCx<'_, '_>, key: &[u8]) -> Attempt {
        let h = hash_key(key);
        match find(cx.locks.shard(cx.db, h), h, key, cx.now) {
            Found::List(_) => {}
            Found::Missing => return Attempt::NotReady,
            Found::WrongType => return Attempt::Skip,
        }
        if !cx.locks.acquire(cx.db, hash_key(&self.dst)) {
            return Attempt::Retry;
        }
        let fill = (cx.host.list_fill(), cx.host.list_compress_depth());
        let mut out = Out {
            buf: Vec::new(),
            resp3: cx.resp3,
        };
        let ks = cx.host.keyspace();
        let t = Some(Access::at(&ks.lru, cx.now));
        match move_locked(
            cx.locks, cx.db, key, &self.dst, self.from, self.to, cx.now, fill, t, ks,
        ) {
            MoveResult::Missing => return Attempt::NotReady,
            MoveResult::WrongType => {
                out.error(err::WRONGTYPE);
                cx.host.record_error(err::WRONGTYPE);
            }
            MoveResult::Moved(v) => {
                out.bulk(&v);
                let db = cx.db;
                cx.signal(db, &self.dst);
                let word = |e: End| -> &[u8] {
                    if e == End::Left {
                        b"LEFT"
                    } else {
                        b"RIGHT"
                    }
                };
                if self.rpoplpush {
                    crate::propagate::also(db, &[b"RPOPLPUSH", key, &self.dst]);
                } else {
                    crate::propagate::also(
                        db,
                        &[b"LMOVE", key, &self.dst, word(self.from), word(self.to)],
                    );
                }
            }
        }
        Attempt::Served(out.buf)
    }
}

/// BLPOP / BRPOP key [key ...] timeout: timeout parsed first; the first
/// non-empty list in key order is popped at once (`[key, element]`), a key
/// of another type met first is WRONGTYPE; else the client blocks (inside
/// MULTI: null array).
fn bpop_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, end: End) {
    let Some(ms) = parse_timeout(ctx, args.get(args.len() - 1)) else {
        return;
    };
    let db = ctx.client.db;
    let keys: Vec<&[u8]> = (1..args.len() - 1).map(|i| args.get(i)).collect();
    let hashes: Vec<(usize, u64)> = keys.iter().map(|k| (db, hash_key(k))).collect();
    let server: &Server = ctx.server;
    let mut locks = server.keyspace.lock_keys(&hashes);
    match first_list(&mut locks, db, &keys, ctx.now) {
        Err(()) => {
            drop(locks);
            ctx.wrongtype()
        }
        Ok(Some(i)) => {
            let (h, key) = (hashes[i].1, keys[i]);
            let shard = locks.shard(db, h);
            let Found::List(e) = find(shard, h, key, ctx.now) else {
                unreachable!()
            };
            let l = list_mut(e);
            let v = l.pop(end).expect("lists are never empty");
            ctx.notify(key, LIST, pop_event(end));
            if l.is_empty() {
                shard.remove(h, key);
                ctx.notify(key, GENERIC, "del");
            }
            ctx.touch_key(key);
            drop(locks);
            crate::propagate::rewrite(&argv(&pop_record(end, key, None)));
            ctx.out.array(2);
            ctx.out.bulk(key);
            ctx.out.bulk(&v);
        }
        Ok(None) if ctx.client.deny_blocking => {
            drop(locks);
            ctx.out.null_array()
        }
        Ok(None) => {
            let ks = keys.iter().map(|k| Box::from(*k)).collect();
            let op = Box::new(PopOp { end, count: None });
            block_on_keys(ctx, &mut locks, ks, op, ms);
        }
    }
}

fn blpop(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    bpop_generic(ctx, args, End::Left)
}
fn brpop(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    bpop_generic(ctx, args, End::Right)
}

/// BLMOVE / BRPOPLPUSH after parsing: LMOVE when the source has elements
/// (destination type checked then), else block on the source (the
/// destination's type is checked when served). Inside MULTI a missing
/// source replies a null bulk, as Redis.
fn bmove_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, from: End, to: End, ms: u64) {
    let (src, dst) = (args.get(1), args.get(2));
    let rpoplpush = args.len() == 4;
    let db = ctx.client.db;
    let server: &Server = ctx.server;
    let hs = hash_key(src);
    let mut locks = server.keyspace.lock_keys(&[(db, hs), (db, hash_key(dst))]);
    let t = ctx.touch_time();
    match move_locked(
        &mut locks,
        db,
        src,
        dst,
        from,
        to,
        ctx.now,
        (
            fill(server),
            server.live.list_compress_depth.load(Ordering::Relaxed),
        ),
        t,
        &server.keyspace,
    ) {
        MoveResult::WrongType => {
            drop(locks);
            ctx.wrongtype()
        }
        MoveResult::Moved(v) => {
            ctx.out.bulk(&v);
            serve_and_release(server, locks, db, &[dst], ctx.now);
            // Recorded in its non-blocking form (Redis's blmoveGenericCommand).
            if rpoplpush {
                crate::propagate::rewrite(&[b"RPOPLPUSH", src, dst]);
            } else {
                crate::propagate::rewrite(&[b"LMOVE", src, dst, args.get(3), args.get(4)]);
            }
        }
        MoveResult::Missing if ctx.client.deny_blocking => {
            drop(locks);
            ctx.out.null()
        }
        MoveResult::Missing => {
            let op = Box::new(MoveOp {
                dst: dst.into(),
                from,
                to,
                rpoplpush,
            });
            block_on_keys(ctx, &mut locks, vec![src.into()], op, ms);
        }
    }
}

/// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout (positions
/// checked before the timeout, as Redis).
fn blmove(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let (Some(from), Some(to)) = (parse_end(args.get(3)), parse_end(args.get(4))) else {
        return ctx.syntax();
    };
    let Some(ms) = parse_timeout(ctx, args.get(5)) else {
        return;
    };
    bmove_generic(ctx, args, from, to, ms);
}

/// BRPOPLPUSH source destination timeout = BLMOVE ... RIGHT LEFT.
fn brpoplpush(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(ms) = parse_timeout(ctx, args.get(3)) else {
        return;
    };
    bmove_generic(ctx, args, End::Right, End::Left, ms);
}

/// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]: the
/// arguments checked as LMPOP's, then the timeout (Redis 7.0's
/// `lmpopGenericCommand` parses numkeys, the direction and COUNT before
/// `blockingPopGenericCommand` reads the timeout); blocks when every list
/// is empty.
fn blmpop(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(m) = parse_mpop(ctx, args, 2) else {
        return;
    };
    let Some(ms) = parse_timeout(ctx, args.get(1)) else {
        return;
    };
    mpop_generic(ctx, args, m, Some(ms));
}
