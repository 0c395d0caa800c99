//! SORT and SORT_RO (redis.io/commands/sort), following Redis 7.0's
//! t_sort.c as observed on redis-server 7.0.15.
//!
//! `SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
//! [ALPHA] [STORE destination]` over lists, sets and sorted sets; SORT_RO
//! is the same without STORE. What Redis does, and so what this file does:
//!
//! - Options are parsed first, left to right (a bad LIMIT number or an
//!   unknown word is reported before the key is looked up); then the key is
//!   looked up for reading (WRONGTYPE for strings and hashes, a missing key
//!   is an empty list).
//! - A BY pattern without `*` (`nosort`) means "do not sort": lists and
//!   sorted sets keep their order (reversed by DESC, LIMIT applied as a
//!   range walk), sets come in iteration order, except with STORE, where
//!   Redis sorts them ALPHA so that replicas agree.
//! - A sorted set is converted to the `skiplist` encoding by SORT and
//!   SORT_RO alike (Redis's `zsetConvert` at the top of the command).
//! - Numeric sorting parses each value as C's `strtod` over the
//!   NUL-terminated string (leading spaces, hex floats, "inf" accepted;
//!   trailing garbage, NaN, overflow and subnormal results refused with
//!   "ERR One or more scores can't be converted into double"); equal scores
//!   are ordered by the elements' bytes. A BY key that is missing scores 0.
//! - ALPHA compares with `strcoll` (the bytes up to the first NUL, in the C
//!   / C.UTF-8 collation, i.e. byte order), except with STORE where Redis
//!   compares whole strings bytewise; with BY, missing values sort first.
//! - Sorting is glibc's `qsort` (a stable merge sort) in general, and
//!   Redis's partial quicksort `pqsort` when BY is given with a LIMIT that
//!   does not cover everything; both are reproduced, so ties (possible only
//!   with ALPHA BY) come out in Redis's order for lists and intsets.
//! - Patterns: `#` is the element; otherwise the first `*` is replaced by
//!   the element, and `key->field` reads a hash field. A pattern without
//!   `*` reads nothing (GET replies nil). Every read counts a keyspace hit
//!   or miss as Redis's `lookupKeyRead`.
//! - BY with a `*` pattern and every GET are refused (`ERR BY option of
//!   SORT denied due to insufficient ACL permissions.`, `GET option ...`)
//!   unless a selector of the user allows the command and may read every
//!   key (`allkeys`, `~*`, `%R~*`): the keys they read are not arguments,
//!   so key patterns could not be checked (sort.c,
//!   `ACLUserCheckCmdWithUnrestrictedKeyAccess`).
//! - STORE writes a list (replacing the destination, TTL dropped), deletes
//!   the destination when the result is empty, and replies the count; GET
//!   of a missing key stores an empty string.
//!
//! Atomicity: the keys a SORT reads through BY/GET depend on the source's
//! elements, so they cannot be known before reading it. The command first
//! locks the source (and destination) shard, reads the elements and derives
//! the shards of every pattern key, then locks the source, the destination
//! and all those shards together with `Keyspace::lock_keys` and reads the
//! source again; if its elements now name a shard outside the locked set it
//! retries with the union (after a few rounds: every shard of the
//! database). The final pass runs entirely under one set of locks, so SORT
//! is atomic with respect to every key it reads or writes.
//!
//! Differences from Redis: a sorted set being sorted is walked in rank
//! order and a `hashtable` set in ferrokv's hash order (Redis walks both in
//! its dict's hash order), which only shows in the output order of a set
//! with BY nosort and of ties under ALPHA BY. COMMAND GETKEYS reports only
//! the source key (Redis also reports the STORE destination), and COMMAND
//! INFO shows one key spec (Redis: three). Redis checks `errno == ERANGE`
//! after `strtod` without clearing errno, so after one overflowing value
//! its numeric SORTs fail until some system call resets errno; ferrokv
//! judges each value on its own. STORE adds 1 to the dirty counter
//! (Redis: the number of stored elements). ALPHA comparison
//! assumes the C or C.UTF-8 collation (redis-server under another
//! LC_COLLATE orders ALPHA results differently).

use super::keyspecs;
use super::{acl, cmd, err, flags::*, Command, Ctx};
use crate::db::blocking::{self, Deferred};
use crate::db::keyspace::{SHARDS, SHARD_BITS};
use crate::db::list::{End, ListValue};
use crate::db::lru::Access;
use crate::db::zset::Limits as ZLimits;
use crate::db::{hash_key, Entry, KeyLocks, Value, ZSetValue};
use crate::resp::Args;
use crate::server::Server;
use crate::util::parse_i64;
use std::cmp::Ordering;
use std::sync::atomic::Ordering as AtOrd;
use std::sync::Arc;

const COMPLEXITY: &str = "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).";

/// The SORT family's table entries (as redis-server 7.0.15's COMMAND INFO
/// and COMMAND DOCS report them).
pub static COMMANDS: &[Command] = &[
    cmd(
        "sort",
        -2,
        WRITE | DENYOOM | MOVABLE_KEYS,
        (1, 1, 1),
        acl::SET | acl::SORTEDSET | acl::LIST | acl::DANGEROUS,
        sort,
    )
    .key_specs(keyspecs::SORT)
    .key_finder(keyspecs::sort_keys)
    .doc(
        "generic",
        "1.0.0",
        "Sort the elements in a list, set or sorted set",
        COMPLEXITY,
    )
    .key_flags(&["RO", "access"]),
    cmd(
        "sort_ro",
        -2,
        READONLY | MOVABLE_KEYS,
        (1, 1, 1),
        acl::SET | acl::SORTEDSET | acl::LIST | acl::DANGEROUS,
        sort_ro,
    )
    .key_specs(keyspecs::SORT_RO)
    .key_finder(keyspecs::sort_ro_keys)
    .doc(
        "generic",
        "7.0.0",
        "Sort the elements in a list, set or sorted set. Read-only variant of SORT.",
        COMPLEXITY,
    ),
];

/// The numeric conversion error.
pub const ERR_SCORE: &str = "ERR One or more scores can't be converted into double";

/// Lock rounds before SORT locks every shard of the database.
const MAX_ROUNDS: usize = 4;

fn sort(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    sort_generic(ctx, args, false);
}

fn sort_ro(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    sort_generic(ctx, args, true);
}

// ---------------------------------------------------------------- options

/// Parsed options.
struct Opts<'a> {
    desc: bool,
    alpha: bool,
    limit_start: i64,
    limit_count: i64,
    sortby: Option<&'a [u8]>,
    dontsort: bool,
    gets: Vec<&'a [u8]>,
    store: Option<&'a [u8]>,
}

/// The string as C sees it: up to the first NUL.
#[inline]
fn cstr(s: &[u8]) -> &[u8] {
    match s.iter().position(|&c| c == 0) {
        Some(i) => &s[..i],
        None => s,
    }
}

/// `strchr(p, '*') != NULL`.
#[inline]
fn has_star(p: &[u8]) -> bool {
    cstr(p).contains(&b'*')
}

/// Parses the options as `sortCommandGeneric`: left to right, replying
/// the first error.
fn parse<'a>(ctx: &mut Ctx<'_>, args: &Args<'a>, readonly: bool) -> Option<Opts<'a>> {
    let mut o = Opts {
        desc: false,
        alpha: false,
        limit_start: 0,
        limit_count: -1,
        sortby: None,
        dontsort: false,
        gets: Vec::new(),
        store: None,
    };
    let argc = args.len();
    // Whether the user may read every key (computed on first need): BY
    // and GET patterns name keys that are not arguments, so Redis 7.0
    // refuses them to users whose key patterns are restricted.
    let mut full_access: Option<bool> = None;
    let mut j = 2;
    while j < argc {
        let left = argc - j - 1;
        let a = args.get(j);
        if a.eq_ignore_ascii_case(b"asc") {
            o.desc = false;
        } else if a.eq_ignore_ascii_case(b"desc") {
            o.desc = true;
        } else if a.eq_ignore_ascii_case(b"alpha") {
            o.alpha = true;
        } else if a.eq_ignore_ascii_case(b"limit") && left >= 2 {
            let (Some(s), Some(c)) = (parse_i64(args.get(j + 1)), parse_i64(args.get(j + 2)))
            else {
                ctx.error(err::NOT_INT);
                return None;
            };
            o.limit_start = s;
            o.limit_count = c;
            j += 2;
        } else if !readonly && a.eq_ignore_ascii_case(b"store") && left >= 1 {
            o.store = Some(args.get(j + 1));
            j += 1;
        } else if a.eq_ignore_ascii_case(b"by") && left >= 1 {
            let p = args.get(j + 1);
            o.sortby = Some(p);
            if !has_star(p) {
                o.dontsort = true;
            } else if ctx.server.cluster.enabled {
                // The pattern's keys may live on other nodes.
                ctx.error("ERR BY option of SORT denied in Cluster mode.");
                return None;
            } else if !*full_access.get_or_insert_with(|| ctx.unrestricted_key_read(args)) {
                ctx.error("ERR BY option of SORT denied due to insufficient ACL permissions.");
                return None;
            }
            j += 1;
        } else if a.eq_ignore_ascii_case(b"get") && left >= 1 {
            if ctx.server.cluster.enabled {
                ctx.error("ERR GET option of SORT denied in Cluster mode.");
                return None;
            }
            if !*full_access.get_or_insert_with(|| ctx.unrestricted_key_read(args)) {
                ctx.error("ERR GET option of SORT denied due to insufficient ACL permissions.");
                return None;
            }
            o.gets.push(args.get(j + 1));
            j += 1;
        } else {
            ctx.syntax();
            return None;
        }
        j += 1;
    }
    Some(o)
}

// ---------------------------------------------------------------- patterns

/// What a pattern names for one element.
enum Target<'p> {
    /// `#`: the element itself.
    Elem,
    /// Nothing (no `*` in the pattern).
    Nothing,
    /// A key, and a hash field when the pattern has `->field`.
    Key(Vec<u8>, Option<&'p [u8]>),
}

/// The substitution of `lookupKeyByPattern`, with its C-string quirks:
/// `#` (or `#` followed by NUL) is the element; the first `*` before any
/// NUL is replaced by the element; a `->` after it (before any NUL) with
/// something after it selects a hash field (the rest of the pattern).
fn target<'p>(pat: &'p [u8], subst: &[u8]) -> Target<'p> {
    if pat.first() == Some(&b'#') && (pat.len() == 1 || pat[1] == 0) {
        return Target::Elem;
    }
    let c = cstr(pat);
    let Some(p) = c.iter().position(|&b| b == b'*') else {
        return Target::Nothing;
    };
    let mut fieldlen = 0;
    let mut field = None;
    if let Some(f) = c[p + 1..].windows(2).position(|w| w == b"->") {
        let f = p + 1 + f;
        if f + 2 < c.len() {
            fieldlen = pat.len() - f - 2;
            field = Some(&pat[f + 2..]);
        }
    }
    let postfix = pat.len() - (p + 1) - if fieldlen > 0 { fieldlen + 2 } else { 0 };
    let mut key = Vec::with_capacity(p + subst.len() + postfix);
    key.extend_from_slice(&pat[..p]);
    key.extend_from_slice(subst);
    key.extend_from_slice(&pat[p + 1..p + 1 + postfix]);
    Target::Key(key, field)
}

/// Marks the shard of every key `pat` names for the elements.
fn mark_shards(pat: &[u8], elems: &[Item], shards: &mut [bool; SHARDS]) {
    for it in elems {
        if let Target::Key(k, _) = target(pat, &it.obj) {
            shards[crate::db::keyspace::shard_index(hash_key(&k))] = true;
        }
    }
}

/// A hash that falls in shard `i` (for locking whole shards).
#[inline]
fn shard_hash(i: usize) -> u64 {
    (i as u64) << (64 - SHARD_BITS)
}

// ---------------------------------------------------------------- numbers

#[inline]
fn c_isspace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

#[inline]
fn starts_ci(s: &[u8], p: &[u8]) -> bool {
    s.len() >= p.len() && s[..p.len()].eq_ignore_ascii_case(p)
}

/// The score SORT gives a value: glibc `strtod` over the NUL-terminated
/// string, refused (None) when characters remain, the result is NaN or
/// strtod reports ERANGE (overflow, or a zero / subnormal result from
/// non-zero digits).
pub fn sort_score(s: &[u8]) -> Option<f64> {
    let s = cstr(s);
    let mut i = 0;
    while i < s.len() && c_isspace(s[i]) {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let rest = &s[i..];
    let sign = |v: f64| if neg { -v } else { v };
    if starts_ci(rest, b"inf") {
        let n = if starts_ci(rest, b"infinity") { 8 } else { 3 };
        return (i + n == s.len()).then(|| sign(f64::INFINITY));
    }
    if starts_ci(rest, b"nan") {
        return None;
    }
    let hexdig = |c: Option<&u8>| c.is_some_and(|c| c.is_ascii_hexdigit());
    if starts_ci(rest, b"0x")
        && (hexdig(rest.get(2)) || (rest.get(2) == Some(&b'.') && hexdig(rest.get(3))))
    {
        let (v, used, nonzero, exact) = parse_hex(&rest[2..]);
        if i + 2 + used != s.len() {
            return None;
        }
        return range_ok(v, nonzero && !exact).then(|| sign(v));
    }
    // Decimal: digits [. digits] [e [sign] digits].
    let mut k = 0;
    let mut digits = 0;
    let mut nonzero = false;
    while k < rest.len() && rest[k].is_ascii_digit() {
        nonzero |= rest[k] != b'0';
        k += 1;
        digits += 1;
    }
    if k < rest.len() && rest[k] == b'.' {
        k += 1;
        while k < rest.len() && rest[k].is_ascii_digit() {
            nonzero |= rest[k] != b'0';
            k += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        // No conversion: strtod's end pointer is the string's start.
        return s.is_empty().then_some(0.0);
    }
    if k < rest.len() && (rest[k] == b'e' || rest[k] == b'E') {
        let mut e = k + 1;
        if e < rest.len() && (rest[e] == b'+' || rest[e] == b'-') {
            e += 1;
        }
        if e < rest.len() && rest[e].is_ascii_digit() {
            while e < rest.len() && rest[e].is_ascii_digit() {
                e += 1;
            }
            k = e;
        }
    }
    if i + k != s.len() {
        return None;
    }
    let text = std::str::from_utf8(&rest[..k]).ok()?;
    let v: f64 = text.parse().ok()?;
    range_ok(v, nonzero).then(|| sign(v))
}

/// False when strtod would set ERANGE: overflow, or underflow (a result
/// below the normal range that is inexact, `inexact_tiny`: always so for
/// decimal input in practice).
#[inline]
fn range_ok(v: f64, inexact_tiny: bool) -> bool {
    if v.is_infinite() {
        return false;
    }
    !(inexact_tiny && v.abs() < f64::MIN_POSITIVE)
}

/// A hex float body after "0x": (value, bytes used, any non-zero digit,
/// a tiny value is exactly representable).
fn parse_hex(s: &[u8]) -> (f64, usize, bool, bool) {
    let mut mant: u128 = 0;
    let mut exp: i64 = 0;
    let mut k = 0;
    let mut nonzero = false;
    let mut dropped = false;
    let mut push = |d: u32, frac: bool, mant: &mut u128, exp: &mut i64| {
        if d != 0 {
            nonzero = true;
        }
        if *mant >> 120 != 0 && d != 0 {
            dropped = true;
        }
        if *mant >> 120 == 0 {
            *mant = *mant * 16 + d as u128;
            if frac {
                *exp -= 4;
            }
        } else if !frac {
            *exp += 4;
        }
    };
    while k < s.len() && s[k].is_ascii_hexdigit() {
        push(
            (s[k] as char).to_digit(16).unwrap_or(0),
            false,
            &mut mant,
            &mut exp,
        );
        k += 1;
    }
    if k < s.len() && s[k] == b'.' {
        k += 1;
        while k < s.len() && s[k].is_ascii_hexdigit() {
            push(
                (s[k] as char).to_digit(16).unwrap_or(0),
                true,
                &mut mant,
                &mut exp,
            );
            k += 1;
        }
    }
    if k < s.len() && (s[k] == b'p' || s[k] == b'P') {
        let mut e = k + 1;
        let mut eneg = false;
        if e < s.len() && (s[e] == b'+' || s[e] == b'-') {
            eneg = s[e] == b'-';
            e += 1;
        }
        if e < s.len() && s[e].is_ascii_digit() {
            let mut p: i64 = 0;
            while e < s.len() && s[e].is_ascii_digit() {
                p = (p * 10 + (s[e] - b'0') as i64).min(1 << 20);
                e += 1;
            }
            exp += if eneg { -p } else { p };
            k = e;
        }
    }
    let exact = !dropped && mant != 0 && mant.trailing_zeros() as i64 + exp >= -1074;
    let mut v = mant as f64;
    // Scale in steps that stay exact until the final one.
    let mut e = exp;
    while e > 0 && v.is_finite() {
        let step = e.min(1000);
        v *= 2f64.powi(step as i32);
        e -= step;
    }
    while e < 0 && v != 0.0 {
        let step = (-e).min(1000);
        v /= 2f64.powi(step as i32);
        e += step;
    }
    (v, k, nonzero, exact)
}

// ---------------------------------------------------------------- sorting

/// One element of the sort vector (Redis's `redisSortObject`).
struct Item {
    obj: Vec<u8>,
    score: f64,
    cmpobj: Option<Vec<u8>>,
}

/// How items compare (the globals `sortCompare` reads).
#[derive(Clone, Copy)]
struct How {
    desc: bool,
    alpha: bool,
    bypattern: bool,
    store: bool,
}

/// `strcoll` in the C / C.UTF-8 locale: byte order up to the first NUL.
#[inline]
fn strcoll(a: &[u8], b: &[u8]) -> Ordering {
    cstr(a).cmp(cstr(b))
}

/// Redis's `sortCompare`.
fn compare(h: How, a: &Item, b: &Item) -> Ordering {
    let c = if !h.alpha {
        if a.score > b.score {
            Ordering::Greater
        } else if a.score < b.score {
            Ordering::Less
        } else {
            a.obj.cmp(&b.obj)
        }
    } else if h.bypattern {
        match (&a.cmpobj, &b.cmpobj) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => {
                if h.store {
                    x.cmp(y)
                } else {
                    strcoll(x, y)
                }
            }
        }
    } else if h.store {
        a.obj.cmp(&b.obj)
    } else {
        strcoll(&a.obj, &b.obj)
    };
    if h.desc {
        c.reverse()
    } else {
        c
    }
}

/// Redis's `pqsort` (pqsort.c: NetBSD's Bentley-McIlroy quicksort that
/// only recurses into partitions overlapping the element range
/// `lrange..=rrange`), ported step by step so that ties end up where Redis
/// puts them. As in Redis 7.0, a partition pass that swapped nothing does
/// not switch to insertion sort (7.0 removed NetBSD's `swap_cnt` shortcut,
/// which made sorted inputs quadratic). Also used by the geo searches'
/// COUNT.
pub(crate) fn pqsort<T>(v: &mut [T], cmp: &dyn Fn(&T, &T) -> Ordering, lrange: i64, rrange: i64) {
    // pqsort works on byte addresses: lrange*es .. (rrange+1)*es-1.
    const ES: i64 = 16;
    let (lb, rb) = (lrange * ES, (rrange + 1) * ES - 1);
    pqsort_rec(v, 0, v.len(), cmp, lb, rb);
}

fn overlaps(a: usize, r: usize, lb: i64, rb: i64) -> bool {
    const ES: i64 = 16;
    let l = a as i64 * ES;
    let rr = l + r as i64 * ES - 1;
    !((lb < l && rb < l) || (lb > rr && rb > rr))
}

fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &dyn Fn(&T, &T) -> Ordering) -> usize {
    let lt = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Less;
    let gt = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Greater;
    if lt(a, b) {
        if lt(b, c) {
            b
        } else if lt(a, c) {
            c
        } else {
            a
        }
    } else if gt(b, c) {
        b
    } else if lt(a, c) {
        a
    } else {
        c
    }
}

fn insertion<T>(v: &mut [T], a: usize, n: usize, cmp: &dyn Fn(&T, &T) -> Ordering) {
    for pm in a + 1..a + n {
        let mut pl = pm;
        while pl > a && cmp(&v[pl - 1], &v[pl]) == Ordering::Greater {
            v.swap(pl, pl - 1);
            pl -= 1;
        }
    }
}

fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

fn pqsort_rec<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    cmp: &dyn Fn(&T, &T) -> Ordering,
    lb: i64,
    rb: i64,
) {
    loop {
        if n < 7 {
            insertion(v, a, n, cmp);
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(a, pm);
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                let c = cmp(&v[pb], &v[a]);
                if c == Ordering::Greater {
                    break;
                }
                if c == Ordering::Equal {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let c = cmp(&v[pc], &v[a]);
                if c == Ordering::Less {
                    break;
                }
                if c == Ordering::Equal {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = a + n;
        let r = (pa - a).min(pb - pa);
        vecswap(v, a, pb - r, r);
        let r = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - r, r);
        let r = pb - pa;
        if r > 1 && overlaps(a, r, lb, rb) {
            pqsort_rec(v, a, r, cmp, lb, rb);
        }
        let r = pd - pc;
        if r > 1 {
            a = pn - r;
            n = r;
            if overlaps(a, r, lb, rb) {
                continue;
            }
        }
        return;
    }
}

// ---------------------------------------------------------------- lookups

/// `lookupKeyByPattern` under the held locks: the value `pat` names for
/// `elem`, counting a keyspace hit or miss for the key read.
fn lookup(
    ctx: &Ctx<'_>,
    locks: &mut KeyLocks<'_>,
    pat: &[u8],
    elem: &[u8],
    touch: Option<Access<'_>>,
) -> Option<Vec<u8>> {
    let (key, field) = match target(pat, elem) {
        Target::Elem => return Some(elem.to_vec()),
        Target::Nothing => return None,
        Target::Key(k, f) => (k, f),
    };
    let db = ctx.client.db;
    let h = hash_key(&key);
    let e = locks.shard(db, h).get(h, &key, ctx.now);
    ctx.hit(&key, e.is_some());
    let e = e?;
    if let Some(t) = touch {
        t.record(&mut e.lru);
    }
    match (&e.value, field) {
        (Value::Hash(hv), Some(f)) => hv.get(f).map(<[u8]>::to_vec),
        (Value::Str(s), None) => Some(s.to_vec()),
        _ => None,
    }
}

// ---------------------------------------------------------------- loading

/// The type of the value being sorted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    List,
    Set,
    ZSet,
}

/// The sort vector and the effective parameters after loading.
struct Loaded {
    items: Vec<Item>,
    start: i64,
    end: i64,
    dontsort: bool,
    alpha: bool,
    bypattern: bool,
    found: bool,
}

fn item(obj: Vec<u8>) -> Item {
    Item {
        obj,
        score: 0.0,
        cmpobj: None,
    }
}

/// Looks the source up (lazy expiry, access time), converts a sorted set
/// to `skiplist` as Redis does, and builds the sort vector as
/// `sortCommandGeneric`: with range walks for lists and sorted sets when
/// nothing is sorted. Err(()) for a wrong type.
fn load(
    locks: &mut KeyLocks<'_>,
    db: usize,
    src: &[u8],
    hs: u64,
    o: &Opts<'_>,
    now: u64,
    touch: Option<Access<'_>>,
) -> Result<Loaded, ()> {
    let shard = locks.shard(db, hs);
    let mut entry = shard.get(hs, src, now);
    let found = entry.is_some();
    let kind = match entry.as_deref_mut() {
        None => Kind::List,
        Some(e) => {
            if let Some(t) = touch {
                t.record(&mut e.lru);
            }
            match &mut e.value {
                Value::List(_) => Kind::List,
                Value::Set(_) => Kind::Set,
                Value::ZSet(z) => {
                    if z.is_listpack() {
                        let mut all = Vec::with_capacity(z.len());
                        z.range(0, z.len(), false, |m, s| all.push((m.to_vec(), s)));
                        let lim = ZLimits {
                            max_entries: 0,
                            max_value: 0,
                        };
                        **z = ZSetValue::from_sorted(&all, lim);
                    }
                    Kind::ZSet
                }
                _ => return Err(()),
            }
        }
    };
    let (mut dontsort, mut alpha, mut bypattern) = (o.dontsort, o.alpha, o.sortby.is_some());
    // A set's order is not stable across replication: with STORE, or
    // called from a script, it is sorted (sort.c: CLIENT_SCRIPT).
    if dontsort && kind == Kind::Set && (o.store.is_some() || super::scripting::in_script()) {
        dontsort = false;
        alpha = true;
        bypattern = false;
    }
    let value = entry.map(|e| &e.value);
    let len = match value {
        None => 0,
        Some(Value::List(l)) => l.len(),
        Some(Value::Set(s)) => s.len(),
        Some(Value::ZSet(z)) => z.len(),
        Some(_) => 0,
    } as i64;
    let mut vectorlen = len;
    let mut start = o.limit_start.max(0);
    let mut end = if o.limit_count < 0 {
        vectorlen - 1
    } else {
        start.saturating_add(o.limit_count).saturating_sub(1)
    };
    if start >= vectorlen {
        start = vectorlen - 1;
        end = vectorlen - 2;
    }
    if end >= vectorlen {
        end = vectorlen - 1;
    }
    if kind != Kind::Set && dontsort && (start != 0 || end != vectorlen - 1) {
        vectorlen = end - start + 1;
    }
    let mut items: Vec<Item> = Vec::with_capacity(vectorlen.max(0) as usize);
    match value {
        None => {}
        // A list range walk; the output code then starts at 0. (An empty
        // range leaves start/end as they are, as Redis.)
        Some(Value::List(l)) if dontsort && end >= start => {
            let n = vectorlen as usize;
            if o.desc {
                let from = (len - start - 1) as usize;
                items.extend(l.iter_rev_from(from).take(n).map(|e| item(e.to_vec())));
            } else {
                items.extend(
                    l.iter_from(start as usize)
                        .take(n)
                        .map(|e| item(e.to_vec())),
                );
            }
            end -= start;
            start = 0;
        }
        Some(Value::List(_)) if dontsort => {}
        Some(Value::List(l)) => items.extend(l.iter().map(|e| item(e.to_vec()))),
        Some(Value::Set(s)) => items.extend(s.iter().map(|m| item(m.to_vec()))),
        Some(Value::ZSet(z)) if dontsort => {
            let n = vectorlen.max(0) as usize;
            if n > 0 {
                let st = start as usize;
                let (from, rev) = if o.desc {
                    (len as usize - st - n, true)
                } else {
                    (st, false)
                };
                z.range(from, from + n, rev, |m, _| items.push(item(m.to_vec())));
            }
            end -= start;
            start = 0;
        }
        Some(Value::ZSet(z)) => z.range(0, z.len(), false, |m, _| items.push(item(m.to_vec()))),
        Some(_) => {}
    }
    Ok(Loaded {
        items,
        start,
        end,
        dontsort,
        alpha,
        bypattern,
        found,
    })
}

// ---------------------------------------------------------------- command

/// The server, borrowed for the whole command.
#[inline]
fn srv<'a>(ctx: &Ctx<'a>) -> &'a Arc<Server> {
    ctx.server
}

fn sort_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, readonly: bool) {
    let Some(o) = parse(ctx, args, readonly) else {
        return;
    };
    let server = srv(ctx);
    let db = ctx.client.db;
    let (now, touch) = (ctx.now, ctx.touch_time());
    let src = args.get(1);
    let hs = hash_key(src);
    let hd = o.store.map(hash_key);

    // Lock rounds: see the module documentation.
    let mut extra = [false; SHARDS];
    let mut round = 0;
    let (mut locks, mut l) = loop {
        let mut keys = vec![(db, hs)];
        if let Some(h) = hd {
            keys.push((db, h));
        }
        keys.extend(
            (0..SHARDS)
                .filter(|&i| extra[i])
                .map(|i| (db, shard_hash(i))),
        );
        let mut locks = server.keyspace.lock_keys(&keys);
        let Ok(l) = load(&mut locks, db, src, hs, &o, now, touch) else {
            drop(locks);
            ctx.hit(src, true);
            return ctx.wrongtype();
        };
        let mut need = [false; SHARDS];
        if !l.dontsort && l.bypattern {
            if let Some(p) = o.sortby {
                mark_shards(p, &l.items, &mut need);
            }
        }
        for g in &o.gets {
            mark_shards(g, &l.items, &mut need);
        }
        let missing = (0..SHARDS).any(|i| need[i] && !locks.holds(db, shard_hash(i)));
        if !missing {
            break (locks, l);
        }
        drop(locks);
        round += 1;
        for i in 0..SHARDS {
            extra[i] |= need[i] || round >= MAX_ROUNDS;
        }
    };
    ctx.hit(src, l.found);

    // Scores.
    let mut conversion_error = false;
    let sortby = if l.bypattern { o.sortby } else { None };
    if !l.dontsort {
        for it in l.items.iter_mut() {
            let byval = match sortby {
                Some(p) => match lookup(ctx, &mut locks, p, &it.obj, touch) {
                    Some(v) => v,
                    None => continue,
                },
                None => {
                    if !l.alpha && !conversion_error {
                        match sort_score(&it.obj) {
                            Some(s) => it.score = s,
                            None => conversion_error = true,
                        }
                    }
                    continue;
                }
            };
            if l.alpha {
                it.cmpobj = Some(byval);
            } else if !conversion_error {
                match sort_score(&byval) {
                    Some(s) => it.score = s,
                    None => conversion_error = true,
                }
            }
        }
        if !conversion_error {
            let how = How {
                desc: o.desc,
                alpha: l.alpha,
                bypattern: sortby.is_some(),
                store: o.store.is_some(),
            };
            let cmp = move |a: &Item, b: &Item| compare(how, a, b);
            let n = l.items.len() as i64;
            if sortby.is_some() && (l.start != 0 || l.end != n - 1) {
                pqsort(&mut l.items, &cmp, l.start, l.end);
            } else {
                l.items.sort_by(cmp);
            }
        }
    }
    if conversion_error {
        drop(locks);
        return ctx.error(ERR_SCORE);
    }

    // Output.
    let count = (l.end - l.start + 1).max(0) as usize;
    let getop = o.gets.len();
    let outputlen = if getop > 0 { getop * count } else { count };
    let range = if count > 0 {
        &l.items[l.start as usize..=l.end as usize]
    } else {
        &l.items[..0]
    };
    let Some(dst) = o.store else {
        ctx.out.array(outputlen);
        for it in range {
            if getop == 0 {
                ctx.out.bulk(&it.obj);
            }
            for g in &o.gets {
                match lookup(ctx, &mut locks, g, &it.obj, touch) {
                    Some(v) => ctx.out.bulk(&v),
                    None => ctx.out.null(),
                }
            }
        }
        return;
    };
    let hd = hd.expect("store hash");
    let fill = server.live.list_max_listpack_size.load(AtOrd::Relaxed);
    let mut list =
        ListValue::with_compress_depth(server.live.list_compress_depth.load(AtOrd::Relaxed));
    for it in range {
        if getop == 0 {
            list.push(End::Right, &it.obj, fill);
        }
        for g in &o.gets {
            let v = lookup(ctx, &mut locks, g, &it.obj, touch).unwrap_or_default();
            list.push(End::Right, &v, fill);
        }
    }
    let shard = locks.shard(db, hd);
    // sort.c: setKey + "sortstore" (class l), or dbDelete + "del".
    let old = if outputlen > 0 {
        let existed = shard.get(hd, dst, now).is_some();
        let old = shard.insert(
            hd,
            dst,
            Entry::new(
                Value::List(Box::new(list)),
                ctx.server.keyspace.lru.initial(now),
            ),
        );
        if !existed {
            ctx.notify(dst, crate::events::NEW, "new");
        }
        ctx.modified(dst, crate::events::LIST, "sortstore");
        old
    } else {
        let old = shard.remove(hd, dst);
        if old.is_some() {
            ctx.modified(dst, crate::events::GENERIC, "del");
        }
        old
    };
    if outputlen > 0 && server.keyspace.any_waiters() {
        let mut deferred: Deferred = Vec::new();
        blocking::serve(&**server, &mut locks, db, dst, now, &mut deferred);
        drop(locks);
        if !deferred.is_empty() {
            blocking::serve_deferred(&**server, deferred, now);
        }
    } else {
        drop(locks);
    }
    crate::db::lazyfree::free_old(old, crate::db::lazyfree::Reason::ServerDel);
    ctx.out.int(outputlen as i64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_like_strtod() {
        let ok = |s: &[u8], v: f64| assert_eq!(sort_score(s), Some(v), "{:?}", s);
        let bad = |s: &[u8]| assert_eq!(sort_score(s), None, "{:?}", s);
        ok(b"1", 1.0);
        ok(b" 5", 5.0);
        ok(b"", 0.0);
        ok(b"\0x", 0.0);
        ok(b"5\0x", 5.0);
        ok(b"+5", 5.0);
        ok(b".5", 0.5);
        ok(b"5.", 5.0);
        ok(b"1e+2", 100.0);
        ok(b"0x10", 16.0);
        ok(b"0x1p3", 8.0);
        ok(b"0x1.8", 1.5);
        ok(b"-0x.8", -0.5);
        ok(b"inf", f64::INFINITY);
        ok(b"-Infinity", f64::NEG_INFINITY);
        ok(b"2.2250738585072014e-308", f64::MIN_POSITIVE);
        ok(b"1e308", 1e308);
        ok(b"0e-999", 0.0);
        ok(b"0x1p-1074", 5e-324);
        ok(b"0x1p-1030", f64::from_bits(1 << 44));
        bad(b"0x1.1p-1074");
        bad(b"0x1p-1080");
        bad(b"0x1p1024");
        bad(b"  ");
        bad(b"5 ");
        bad(b"1e");
        bad(b"0x");
        bad(b"nan");
        bad(b"-nan");
        bad(b"1e400");
        bad(b"1e-310");
        bad(b"4.9e-324");
        bad(b"1.7976931348623159e308");
        bad(b"1_0");
        bad(b"infx");
        bad(b".");
        bad(b"abc");
    }

    #[test]
    fn pattern_targets() {
        let key = |p: &[u8], e: &[u8]| match target(p, e) {
            Target::Key(k, f) => Some((k, f.map(<[u8]>::to_vec))),
            _ => None,
        };
        assert!(matches!(target(b"#", b"x"), Target::Elem));
        assert!(matches!(target(b"#\0y", b"x"), Target::Elem));
        assert!(matches!(target(b"nosort", b"x"), Target::Nothing));
        assert!(matches!(target(b"a\0*", b"x"), Target::Nothing));
        assert_eq!(key(b"w_*", b"1"), Some((b"w_1".to_vec(), None)));
        assert_eq!(
            key(b"h_*->f", b"1"),
            Some((b"h_1".to_vec(), Some(b"f".to_vec())))
        );
        assert_eq!(key(b"h_*->", b"1"), Some((b"h_1->".to_vec(), None)));
        assert_eq!(
            key(b"*-*->a->b", b"1"),
            Some((b"1-*".to_vec(), Some(b"a->b".to_vec())))
        );
        assert_eq!(key(b"a*\0->f", b"1"), Some((b"a1\0->f".to_vec(), None)));
    }

    #[test]
    fn pqsort_sorts_the_range() {
        let mut r = 0x1234_5678_u64;
        for n in [0usize, 1, 5, 7, 8, 40, 41, 100, 300] {
            let v: Vec<u64> = (0..n)
                .map(|_| {
                    r = crate::util::xorshift64(r);
                    r % 50
                })
                .collect();
            let mut full = v.clone();
            full.sort();
            for (l, h) in [(0i64, n as i64 - 1), (2, 5), (n as i64 / 2, n as i64 - 1)] {
                if h < l || l < 0 || h >= n as i64 {
                    continue;
                }
                let mut w = v.clone();
                pqsort(&mut w, &|a: &u64, b: &u64| a.cmp(b), l, h);
                assert_eq!(w[l as usize..=h as usize], full[l as usize..=h as usize]);
            }
        }
    }
}
