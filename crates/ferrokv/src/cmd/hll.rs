//! HyperLogLog commands (redis.io/commands/?group=hyperloglog): PFADD,
//! PFCOUNT, PFMERGE, PFDEBUG and PFSELFTEST.
//!
//! The values are Redis's own HyperLogLog strings (hyperloglog.c), byte for
//! byte, so a key moves between redis-server and ferrokv (DUMP/RESTORE,
//! RDB, replication) and counts the same on both:
//!
//! - a 16-byte header: `HYLL`, the encoding (0 dense, 1 sparse), three
//!   unused bytes and the cached cardinality (64-bit little endian; the top
//!   bit of its last byte set means "stale");
//! - 16384 registers (P = 14) of 6 bits: dense, packed least significant
//!   bit first (12288 bytes), or sparse, as ZERO (`00xxxxxx`, 1..64 zero
//!   registers), XZERO (`01xxxxxx yyyyyyyy`, 1..16384) and VAL (`1vvvvvxx`,
//!   1..4 registers of value 1..32) opcodes, updated in place by the same
//!   split-and-merge steps as Redis's `hllSparseSet`, and turned dense
//!   when a register exceeds 32 or the string would exceed
//!   `hll-sparse-max-bytes`;
//! - elements hashed with MurmurHash64A (seed 0xadc83b19): the low 14 bits
//!   pick the register, the run of zero bits above them (plus one) is the
//!   candidate value;
//! - the cardinality estimated with Ertl's improved estimator from the
//!   register histogram (`hllCount`).

use super::{acl, cmd, flags::*, opt_is, Command, Ctx};
use crate::db::{Entry, StrValue, Value};
use crate::events::{NEW, STRING};
use crate::keyspecs;
use crate::resp::Args;
use std::sync::atomic::Ordering;

/// The HyperLogLog family's table entries (arity, flags, key positions,
/// ACL categories and docs as Redis 7.0's COMMAND INFO / COMMAND DOCS
/// report).
pub static COMMANDS: &[Command] = &[
    cmd("pfadd", -2, WRITE | DENYOOM | FAST, (1, 1, 1), acl::HYPERLOGLOG, pfadd)
        .key_specs(keyspecs::APPEND)
        .doc(
            "hyperloglog",
            "2.8.9",
            "Adds the specified elements to the specified HyperLogLog.",
            "O(1) to add every element.",
        ),
    cmd("pfcount", -2, READONLY | MAY_REPLICATE, (1, -1, 1), acl::HYPERLOGLOG, pfcount)
        .key_specs(keyspecs::PFCOUNT)
        .doc(
            "hyperloglog",
            "2.8.9",
            "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).",
            "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
        ),
    cmd("pfmerge", -2, WRITE | DENYOOM, (1, -1, 1), acl::HYPERLOGLOG, pfmerge)
        .key_specs(keyspecs::PFMERGE)
        .doc(
            "hyperloglog",
            "2.8.9",
            "Merge N different HyperLogLogs into a single one.",
            "O(N) to merge N HyperLogLogs, but with high constant times.",
        ),
    cmd(
        "pfdebug",
        3,
        WRITE | DENYOOM | ADMIN,
        (2, 2, 1),
        acl::HYPERLOGLOG | acl::DANGEROUS,
        pfdebug,
    )
    .key_specs(keyspecs::PFDEBUG)
    .doc(
        "hyperloglog",
        "2.8.9",
        "Internal commands for debugging HyperLogLog values",
        "N/A",
    ),
    cmd(
        "pfselftest",
        1,
        ADMIN,
        (0, 0, 0),
        acl::HYPERLOGLOG | acl::DANGEROUS,
        pfselftest,
    )
    .doc(
        "hyperloglog",
        "2.8.9",
        "An internal command for testing HyperLogLog values",
        "N/A",
    ),
];

/// Register index bits.
const P: u32 = 14;
/// Hash bits left for the zero run.
const Q: u32 = 64 - P;
/// Number of registers.
const REGISTERS: usize = 1 << P;
/// Bits per dense register.
const BITS: usize = 6;
/// Largest register value.
const REGISTER_MAX: u8 = (1 << BITS) - 1;
/// Header size in bytes.
const HDR: usize = 16;
/// Size of a dense value: header and packed registers.
pub const DENSE_SIZE: usize = HDR + (REGISTERS * BITS).div_ceil(8);
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
/// Largest value a sparse VAL opcode holds.
const VAL_MAX_VALUE: u8 = 32;
/// Longest run of a VAL opcode.
const VAL_MAX_LEN: usize = 4;
/// Longest run of a ZERO opcode.
const ZERO_MAX_LEN: usize = 64;
/// 0.5 / ln(2).
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

const ERR_INVALID: &str = "INVALIDOBJ Corrupted HLL object detected";
const ERR_NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";

/// A sparse or dense value that does not describe 16384 registers.
#[derive(Debug)]
pub struct Corrupt;

// ---------------------------------------------------------------- hashing

/// MurmurHash64A of `key` with `seed` (Austin Appleby's, as Redis's
/// hyperloglog.c has it: 8-byte little-endian words, then the tail).
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate().rev() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element goes to and its candidate value: the length of
/// the run of zero bits above the index bits, plus one (1..=Q+1)
/// (`hllPatLen`).
pub fn pat_len(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, 0xadc8_3b19);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

// ---------------------------------------------------------------- dense

/// Register `i` of packed dense registers `r`.
#[inline]
fn dense_get(r: &[u8], i: usize) -> u8 {
    let bit = i * BITS;
    let (byte, fb) = (bit / 8, bit & 7);
    let b0 = r[byte] as u32;
    let b1 = r.get(byte + 1).copied().unwrap_or(0) as u32;
    (((b0 >> fb) | (b1 << (8 - fb))) & REGISTER_MAX as u32) as u8
}

/// Sets register `i` of packed dense registers `r` to `v`.
#[inline]
fn dense_put(r: &mut [u8], i: usize, v: u8) {
    let bit = i * BITS;
    let (byte, fb) = (bit / 8, bit & 7);
    let (v, max) = (v as u32, REGISTER_MAX as u32);
    r[byte] &= !((max << fb) as u8);
    r[byte] |= (v << fb) as u8;
    if let Some(b) = r.get_mut(byte + 1) {
        *b &= !((max >> (8 - fb)) as u8);
        *b |= (v >> (8 - fb)) as u8;
    }
}

/// Raises register `i` to `count` if it is lower; true when it changed
/// (`hllDenseSet`).
fn dense_set(r: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(r, i) {
        dense_put(r, i, count);
        true
    } else {
        false
    }
}

// ---------------------------------------------------------------- sparse opcodes

#[inline]
fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}
#[inline]
fn is_xzero(b: u8) -> bool {
    b & 0xc0 == 0x40
}
#[inline]
fn is_val(b: u8) -> bool {
    b & 0x80 != 0
}
#[inline]
fn zero_len(b: u8) -> usize {
    (b & 0x3f) as usize + 1
}
/// XZERO run length; a missing second byte reads as 0 (the C string's
/// terminator).
#[inline]
fn xzero_len(d: &[u8], p: usize) -> usize {
    ((((d[p] & 0x3f) as usize) << 8) | d.get(p + 1).copied().unwrap_or(0) as usize) + 1
}
#[inline]
fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}
#[inline]
fn val_len(b: u8) -> usize {
    (b & 0x3) as usize + 1
}
#[inline]
fn val_op(value: u8, len: usize) -> u8 {
    ((value - 1) << 2 | (len as u8 - 1)) | 0x80
}
/// ZERO or XZERO opcode bytes for a run of `len` zero registers.
fn push_zero_run(seq: &mut Vec<u8>, len: usize) {
    if len > ZERO_MAX_LEN {
        let l = len - 1;
        seq.push((l >> 8) as u8 | 0x40);
        seq.push((l & 0xff) as u8);
    } else {
        seq.push(len as u8 - 1);
    }
}

/// One decoded opcode: (run length, register value, bytes).
fn opcode(d: &[u8], p: usize) -> (usize, u8, usize) {
    let b = d[p];
    if is_zero(b) {
        (zero_len(b), 0, 1)
    } else if is_xzero(b) {
        (xzero_len(d, p), 0, 2)
    } else {
        (val_len(b), val_value(b), 1)
    }
}

/// A new, empty HyperLogLog: sparse, one XZERO opcode covering every
/// register, cached cardinality 0 (`createHLLObject`).
pub fn new_sparse() -> Vec<u8> {
    let mut d = Vec::with_capacity(HDR + 2);
    d.extend_from_slice(b"HYLL");
    d.push(SPARSE);
    d.extend_from_slice(&[0; 11]);
    push_zero_run(&mut d, REGISTERS);
    d
}

/// The dense form of a sparse value (header copied, encoding changed), or
/// Corrupt when the opcodes do not cover exactly 16384 registers
/// (`hllSparseToDense`).
fn sparse_to_dense(d: &[u8]) -> Result<Vec<u8>, Corrupt> {
    let mut out = vec![0u8; DENSE_SIZE];
    out[..HDR].copy_from_slice(&d[..HDR]);
    out[4] = DENSE;
    let regs = &mut out[HDR..];
    let mut idx = 0;
    let mut p = HDR;
    while p < d.len() {
        let (run, v, n) = opcode(d, p);
        if run + idx > REGISTERS {
            // Opcodes past the last register (Redis's CVE-2025-32023
            // checks refuse these too).
            return Err(Corrupt);
        }
        if v > 0 {
            for i in idx..idx + run {
                dense_put(regs, i, v);
            }
        }
        idx += run;
        p += n;
    }
    if idx != REGISTERS {
        return Err(Corrupt);
    }
    Ok(out)
}

/// Raises register `index` of the sparse value `d` to `count` in place, as
/// `hllSparseSet` does (split the covering opcode, then merge adjacent
/// equal VAL opcodes from the previous opcode on); turns the value dense
/// when `count` exceeds 32 or the value would grow past `max_bytes`.
/// Ok(true) when a register changed.
fn sparse_set(d: &mut Vec<u8>, index: usize, count: u8, max_bytes: u64) -> Result<bool, Corrupt> {
    if count > VAL_MAX_VALUE {
        return promote(d, index, count);
    }
    // Step 1: the opcode covering `index`.
    let mut p = HDR;
    let mut first = 0;
    let mut prev = None;
    let mut span = 0;
    while p < d.len() {
        let (run, _, n) = opcode(d, p);
        span = run;
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += n;
        first += span;
    }
    if span == 0 || p >= d.len() {
        return Err(Corrupt);
    }
    let b = d[p];
    let (xzero, zero, val) = (is_xzero(b), is_zero(b), is_val(b));
    // Step 2: the trivial cases.
    let mut updated = false;
    if val {
        let old = val_value(b);
        if old >= count {
            return Ok(false);
        }
        if span == 1 {
            d[p] = val_op(count, 1);
            updated = true;
        }
    }
    if !updated && zero && span == 1 {
        d[p] = val_op(count, 1);
        updated = true;
    }
    if !updated {
        // The general case: split the opcode into up to three.
        let last = first + span - 1;
        let mut seq: Vec<u8> = Vec::with_capacity(5);
        if zero || xzero {
            if index != first {
                push_zero_run(&mut seq, index - first);
            }
            seq.push(val_op(count, 1));
            if index != last {
                push_zero_run(&mut seq, last - index);
            }
        } else {
            let cur = val_value(b);
            if index != first {
                seq.push(val_op(cur, index - first));
            }
            seq.push(val_op(count, 1));
            if index != last {
                seq.push(val_op(cur, last - index));
            }
        }
        let oldlen = if xzero { 2 } else { 1 };
        if seq.len() > oldlen && (d.len() + seq.len() - oldlen) as u64 > max_bytes {
            return promote(d, index, count);
        }
        // The string's new length is computed from the opcode's nominal
        // size, as Redis does: an XZERO cut short by the end of a
        // (corrupted) value loses the sequence's last byte there too.
        let new_len = d.len() + seq.len() - oldlen;
        let end = (p + oldlen).min(d.len());
        d.splice(p..end, seq);
        d.truncate(new_len);
    }
    // Step 4: merge adjacent VAL opcodes of the same value, scanning up to
    // five opcodes from the previous one.
    let mut p = prev.unwrap_or(HDR);
    let mut scan = 5;
    while p < d.len() && scan > 0 {
        scan -= 1;
        let b = d[p];
        if is_xzero(b) {
            p += 2;
            continue;
        }
        if is_zero(b) {
            p += 1;
            continue;
        }
        if p + 1 < d.len() && is_val(d[p + 1]) {
            let (v1, v2) = (val_value(b), val_value(d[p + 1]));
            let len = val_len(b) + val_len(d[p + 1]);
            if v1 == v2 && len <= VAL_MAX_LEN {
                d[p + 1] = val_op(v1, len);
                d.remove(p);
                continue;
            }
        }
        p += 1;
    }
    invalidate(d);
    Ok(true)
}

/// Turns the sparse value dense and raises register `index` to `count`.
fn promote(d: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    *d = sparse_to_dense(d)?;
    Ok(dense_set(&mut d[HDR..], index, count))
}

/// Marks the cached cardinality stale.
#[inline]
fn invalidate(d: &mut [u8]) {
    d[HDR - 1] |= 0x80;
}

/// Adds one element; Ok(true) when a register changed (`hllAdd`).
fn add(d: &mut Vec<u8>, ele: &[u8], max_bytes: u64) -> Result<bool, Corrupt> {
    let (index, count) = pat_len(ele);
    match d[4] {
        DENSE => Ok(dense_set(&mut d[HDR..], index, count)),
        SPARSE => sparse_set(d, index, count, max_bytes),
        _ => Err(Corrupt),
    }
}

/// Raises `max[i]` to each register of the value `d` (`hllMerge`).
fn merge(max: &mut [u8; REGISTERS], d: &[u8]) -> Result<(), Corrupt> {
    if d[4] == DENSE {
        let r = &d[HDR..];
        for (i, m) in max.iter_mut().enumerate() {
            *m = (*m).max(dense_get(r, i));
        }
        return Ok(());
    }
    let mut i = 0;
    let mut p = HDR;
    while p < d.len() {
        let (run, v, n) = opcode(d, p);
        if run + i > REGISTERS {
            return Err(Corrupt);
        }
        if v > 0 {
            for m in &mut max[i..i + run] {
                *m = (*m).max(v);
            }
        }
        i += run;
        p += n;
    }
    if i != REGISTERS {
        return Err(Corrupt);
    }
    Ok(())
}

// ---------------------------------------------------------------- estimate

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if before == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
        if before == z {
            return z / 3.0;
        }
    }
}

/// The cardinality estimate of a register histogram (`hllCount`'s
/// estimator: Ertl, "New cardinality estimation algorithms for
/// HyperLogLog sketches", arXiv:1702.01284).
fn estimate(h: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let q = Q as usize;
    let mut z = m * tau((m - h[q + 1] as f64) / m);
    for j in (1..=q).rev() {
        z += h[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(h[0] as f64 / m);
    (ALPHA_INF * m * m / z).round() as u64
}

/// The estimate of a value (dense or sparse); Corrupt when sparse opcodes
/// do not cover 16384 registers.
fn count(d: &[u8]) -> Result<u64, Corrupt> {
    let mut h = [0u32; 64];
    if d[4] == DENSE {
        let r = &d[HDR..];
        for i in 0..REGISTERS {
            h[dense_get(r, i) as usize] += 1;
        }
    } else {
        let mut idx = 0;
        let mut p = HDR;
        while p < d.len() {
            let (run, v, n) = opcode(d, p);
            idx += run;
            h[v as usize] += run as u32;
            p += n;
        }
        if idx != REGISTERS {
            return Err(Corrupt);
        }
    }
    Ok(estimate(&h))
}

/// The estimate of merged registers (one byte each).
fn count_raw(max: &[u8; REGISTERS]) -> u64 {
    let mut h = [0u32; 64];
    for &v in max.iter() {
        h[(v & 63) as usize] += 1;
    }
    estimate(&h)
}

/// True when a string value passes Redis's `isHLLObjectOrReply` checks:
/// not an integer, at least a header, the `HYLL` magic, a known encoding,
/// and the exact size when dense.
pub fn is_hll(s: &StrValue) -> bool {
    let Some(d) = s.as_slice() else {
        return false;
    };
    d.len() >= HDR
        && &d[..4] == b"HYLL"
        && d[4] <= SPARSE
        && (d[4] != DENSE || d.len() == DENSE_SIZE)
}

// ---------------------------------------------------------------- commands

/// The bytes of a HyperLogLog value, made `raw` (Redis's
/// `dbUnshareStringValue`), or the error of Redis's
/// `isHLLObjectOrReply`: WRONGTYPE for another type, "Key is not a valid
/// HyperLogLog string value." for a string that is not one.
fn hll_bytes(v: &mut Value) -> Result<&mut Vec<u8>, &'static str> {
    #[allow(unreachable_patterns)]
    match v {
        Value::Str(s) if is_hll(s) => Ok(s.make_raw()),
        Value::Str(_) => Err(ERR_NOT_HLL),
        _ => Err(crate::cmd::err::WRONGTYPE),
    }
}

fn max_bytes(ctx: &Ctx<'_>) -> u64 {
    ctx.server.live.hll_sparse_max_bytes.load(Ordering::Relaxed)
}

/// PFADD key [element ...]: 1 when a register changed or the key was
/// created, else 0. A key that is not a HyperLogLog string gets "WRONGTYPE
/// Key is not a valid HyperLogLog string value." (another type: the usual
/// WRONGTYPE), a corrupted one "-INVALIDOBJ Corrupted HLL object
/// detected". Event `pfadd` when it changed something.
fn pfadd(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let mb = max_bytes(ctx);
    let now = ctx.now;
    let t = ctx.touch_time();
    let (h, mut shard) = ctx.lock(key);
    let mut updated = 0;
    let mut created = false;
    if shard.get(h, key, now).is_none() {
        shard.insert(
            h,
            key,
            Entry::new(
                Value::Str(StrValue::raw(new_sparse())),
                ctx.server.keyspace.lru.initial(now),
            ),
        );
        created = true;
        updated += 1;
    }
    let e = shard.get(h, key, now).expect("present");
    if !created {
        if let Some(t) = t {
            t.record(&mut e.lru);
        }
    }
    let d = match hll_bytes(&mut e.value) {
        Ok(d) => d,
        Err(msg) => {
            drop(shard);
            return ctx.error(msg);
        }
    };
    let mut corrupt = false;
    for ele in args.iter().skip(2) {
        match add(d, ele, mb) {
            Ok(true) => updated += 1,
            Ok(false) => {}
            Err(Corrupt) => {
                corrupt = true;
                break;
            }
        }
    }
    if updated > 0 && !corrupt {
        invalidate(d);
    }
    drop(shard);
    if created {
        ctx.notify(key, NEW, "new");
    }
    if corrupt {
        return ctx.error(ERR_INVALID);
    }
    if updated > 0 {
        ctx.modified(key, STRING, "pfadd");
    }
    ctx.out.int((updated > 0) as i64);
}

/// PFCOUNT key [key ...]: the estimated cardinality of one HyperLogLog
/// (its cached value, or computed and cached), or of the union of
/// several (nothing cached); missing keys count as empty.
fn pfcount(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if args.len() > 2 {
        return pfcount_union(ctx, args);
    }
    let key = args.get(1);
    let now = ctx.now;
    let t = ctx.touch_time();
    let (h, mut shard) = ctx.lock(key);
    let Some(e) = shard.get(h, key, now) else {
        drop(shard);
        ctx.hit(key, false);
        return ctx.out.int(0);
    };
    if let Some(t) = t {
        t.record(&mut e.lru);
    }
    let d = match hll_bytes(&mut e.value) {
        Ok(d) => d,
        Err(msg) => {
            drop(shard);
            ctx.hit(key, true);
            return ctx.error(msg);
        }
    };
    let cached = d[HDR - 1] & 0x80 == 0;
    let r = if cached {
        Ok(u64::from_le_bytes(d[8..16].try_into().expect("8 bytes")))
    } else {
        count(d).inspect(|&c| d[8..16].copy_from_slice(&c.to_le_bytes()))
    };
    drop(shard);
    ctx.hit(key, true);
    match r {
        Ok(c) => {
            if !cached {
                // The value changed (its cache): watchers see it.
                ctx.touch_key(key);
            }
            ctx.out.int(c as i64)
        }
        Err(Corrupt) => ctx.error(ERR_INVALID),
    }
}

/// What reading one source HyperLogLog gave.
enum Source {
    Missing,
    Merged { dense: bool },
    WrongType,
    NotHll,
    Corrupt,
}

/// Merges the value of `key` (hash `h`, shard held in `locks`) into `max`.
fn merge_key(
    ctx: &Ctx<'_>,
    locks: &mut crate::db::KeyLocks<'_>,
    h: u64,
    key: &[u8],
    max: &mut [u8; REGISTERS],
) -> Source {
    let db = ctx.client.db;
    let t = ctx.touch_time();
    let Some(e) = locks.shard(db, h).get(h, key, ctx.now) else {
        return Source::Missing;
    };
    if let Some(t) = t {
        t.record(&mut e.lru);
    }
    #[allow(unreachable_patterns)]
    match &e.value {
        Value::Str(s) if is_hll(s) => {
            let d = s.as_slice().expect("checked");
            match merge(max, d) {
                Ok(()) => Source::Merged {
                    dense: d[4] == DENSE,
                },
                Err(Corrupt) => Source::Corrupt,
            }
        }
        Value::Str(_) => Source::NotHll,
        _ => Source::WrongType,
    }
}

/// Replies the error of a failed source, after counting the lookups.
fn source_error(ctx: &mut Ctx<'_>, s: &Source) {
    match s {
        Source::WrongType => ctx.wrongtype(),
        Source::NotHll => ctx.error(ERR_NOT_HLL),
        Source::Corrupt => ctx.error(ERR_INVALID),
        Source::Missing | Source::Merged { .. } => {}
    }
}

/// PFCOUNT of several keys: the estimate of the register-wise maximum.
fn pfcount_union(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let db = ctx.client.db;
    let hashes: Vec<(usize, u64)> = (1..args.len())
        .map(|i| (db, crate::db::hash_key(args.get(i))))
        .collect();
    let mut locks = ctx.server.keyspace.lock_keys(&hashes);
    let mut max = Box::new([0u8; REGISTERS]);
    let (mut hits, mut misses) = (0, 0);
    let mut failed = None;
    for (i, &(_, h)) in hashes.iter().enumerate() {
        let s = merge_key(ctx, &mut locks, h, args.get(i + 1), &mut max);
        match s {
            Source::Missing => misses += 1,
            Source::Merged { .. } => hits += 1,
            _ => {
                hits += 1;
                failed = Some(s);
                break;
            }
        }
    }
    drop(locks);
    crate::stats::bump(&ctx.stats.hits, hits);
    crate::stats::bump(&ctx.stats.misses, misses);
    if let Some(s) = failed {
        return source_error(ctx, &s);
    }
    ctx.out.int(count_raw(&max) as i64);
}

/// PFMERGE destkey [sourcekey ...]: merges the sources and the
/// destination itself into the destination (created sparse when missing,
/// made dense when any input is dense); +OK and event `pfadd`.
fn pfmerge(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let db = ctx.client.db;
    let hashes: Vec<(usize, u64)> = (1..args.len())
        .map(|i| (db, crate::db::hash_key(args.get(i))))
        .collect();
    let mut locks = ctx.server.keyspace.lock_keys(&hashes);
    let mut max = Box::new([0u8; REGISTERS]);
    let mut dense = false;
    let (mut hits, mut misses) = (0, 0);
    let mut failed = None;
    for (i, &(_, h)) in hashes.iter().enumerate() {
        let s = merge_key(ctx, &mut locks, h, args.get(i + 1), &mut max);
        match s {
            Source::Missing => misses += 1,
            Source::Merged { dense: d } => {
                hits += 1;
                dense |= d;
            }
            _ => {
                hits += 1;
                failed = Some(s);
                break;
            }
        }
    }
    if let Some(s) = failed {
        drop(locks);
        crate::stats::bump(&ctx.stats.hits, hits);
        crate::stats::bump(&ctx.stats.misses, misses);
        return source_error(ctx, &s);
    }
    let key = args.get(1);
    let h = hashes[0].1;
    let now = ctx.now;
    let mb = max_bytes(ctx);
    let shard = locks.shard(db, h);
    let created = shard.get(h, key, now).is_none();
    if created {
        shard.insert(
            h,
            key,
            Entry::new(
                Value::Str(StrValue::raw(new_sparse())),
                ctx.server.keyspace.lru.initial(now),
            ),
        );
    }
    let Some(Value::Str(s)) = shard.get(h, key, now).map(|e| &mut e.value) else {
        unreachable!("checked as a HyperLogLog or just created");
    };
    let d = s.make_raw();
    let mut corrupt = false;
    if dense && d[4] == SPARSE {
        match sparse_to_dense(d) {
            Ok(v) => *d = v,
            Err(Corrupt) => corrupt = true,
        }
    }
    if !corrupt {
        for (j, &m) in max.iter().enumerate() {
            if m == 0 {
                continue;
            }
            if d[4] == DENSE {
                dense_set(&mut d[HDR..], j, m);
            } else {
                let _ = sparse_set(d, j, m, mb);
            }
        }
        invalidate(d);
    }
    drop(locks);
    crate::stats::bump(&ctx.stats.hits, hits);
    crate::stats::bump(&ctx.stats.misses, misses);
    if created {
        ctx.notify(key, NEW, "new");
    }
    if corrupt {
        return ctx.error(ERR_INVALID);
    }
    ctx.modified(key, STRING, "pfadd");
    ctx.out.ok();
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key: the 16384 registers
/// (turning a sparse value dense), the sparse opcodes as text (`z:n`,
/// `Z:n`, `v:value,len`), `dense`/`sparse`, or 1/0 for a conversion made.
/// "The specified key does not exist" for a missing key (checked first),
/// "Unknown PFDEBUG subcommand '<sub>'".
fn pfdebug(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let sub = args.get(1);
    let key = args.get(2);
    let now = ctx.now;
    let (h, mut shard) = ctx.lock(key);
    let Some(e) = shard.get(h, key, now) else {
        drop(shard);
        return ctx.error("ERR The specified key does not exist");
    };
    let d = match hll_bytes(&mut e.value) {
        Ok(d) => d,
        Err(msg) => {
            drop(shard);
            return ctx.error(msg);
        }
    };
    if opt_is(sub, b"getreg") || opt_is(sub, b"todense") {
        let converted = d[4] == SPARSE;
        if converted {
            match sparse_to_dense(d) {
                Ok(v) => *d = v,
                Err(Corrupt) => {
                    drop(shard);
                    return ctx.error(ERR_INVALID);
                }
            }
        }
        if opt_is(sub, b"getreg") {
            ctx.out.array(REGISTERS);
            for i in 0..REGISTERS {
                ctx.out.int(dense_get(&d[HDR..], i) as i64);
            }
        } else {
            ctx.out.int(converted as i64);
        }
        drop(shard);
        if converted {
            // The encoding changed: propagated and seen by watchers.
            ctx.touch_key(key);
        }
    } else if opt_is(sub, b"decode") {
        if d[4] != SPARSE {
            drop(shard);
            return ctx.error("ERR HLL encoding is not sparse");
        }
        let mut text = String::new();
        let mut p = HDR;
        while p < d.len() {
            let (run, v, n) = opcode(d, p);
            let item = if v > 0 {
                format!("v:{v},{run} ")
            } else if n == 2 {
                format!("Z:{run} ")
            } else {
                format!("z:{run} ")
            };
            text.push_str(&item);
            p += n;
        }
        drop(shard);
        ctx.out.bulk(text.trim_matches(' ').as_bytes());
    } else if opt_is(sub, b"encoding") {
        let enc = if d[4] == DENSE { "dense" } else { "sparse" };
        drop(shard);
        ctx.out.simple(enc);
    } else {
        drop(shard);
        ctx.error_with("ERR Unknown PFDEBUG subcommand '", sub, "'");
    }
}

/// PFSELFTEST: checks the dense register packing (every register written
/// and read back with pseudo-random values) and that a sparse and a dense
/// HyperLogLog fed the same elements agree and stay within five standard
/// errors (5 × 1.04/√16384) of the true count; +OK, or "-TESTFAILED ...".
fn pfselftest(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    match selftest() {
        Ok(()) => ctx.out.ok(),
        Err(msg) => ctx.error(&format!("TESTFAILED {msg}")),
    }
}

fn selftest() -> Result<(), String> {
    let mut regs = vec![0u8; DENSE_SIZE - HDR];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut want = vec![0u8; REGISTERS];
    for round in 0..8 {
        for (i, w) in want.iter_mut().enumerate() {
            seed = crate::util::xorshift64(seed);
            *w = (seed % (REGISTER_MAX as u64 + 1)) as u8;
            dense_put(&mut regs, i, *w);
        }
        for (i, &w) in want.iter().enumerate() {
            if dense_get(&regs, i) != w {
                return Err(format!("Register error at {i} (round {round})"));
            }
        }
    }
    let mut sparse = new_sparse();
    let mut dense = sparse_to_dense(&sparse).map_err(|_| "conversion failed".to_string())?;
    let tolerance = 5.0 * 1.04 / (REGISTERS as f64).sqrt();
    let mut next_check = 10u64;
    for n in 1..=100_000u64 {
        let ele = n.to_string();
        add(&mut sparse, ele.as_bytes(), u64::MAX).map_err(|_| "sparse add failed")?;
        add(&mut dense, ele.as_bytes(), u64::MAX).map_err(|_| "dense add failed")?;
        if n == next_check {
            next_check *= 10;
            let a = count(&sparse).map_err(|_| "corrupt sparse")?;
            let b = count(&dense).map_err(|_| "corrupt dense")?;
            if a != b {
                return Err(format!("Sparse and dense counts differ at {n}: {a} vs {b}"));
            }
            let err = (a as f64 - n as f64).abs() / n as f64;
            if err > tolerance {
                return Err(format!(
                    "Approximation error {err} at {n} beyond {tolerance}"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selftest_passes() {
        selftest().unwrap();
    }

    #[test]
    fn empty_is_the_redis_bytes() {
        let d = new_sparse();
        assert_eq!(d.len(), 18);
        assert_eq!(&d[16..], &[0x7f, 0xff]);
        assert_eq!(count(&d).unwrap(), 0);
    }
}
