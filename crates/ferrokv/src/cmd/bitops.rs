//! Bitmap commands (redis.io/commands/?group=bitmap): SETBIT, GETBIT,
//! BITCOUNT, BITPOS, BITOP, BITFIELD and BITFIELD_RO, on the string type.
//!
//! Behaviour follows Redis 7.0's bitops.c as observed on redis-server
//! 7.0.15: bits are numbered from the most significant bit of the first
//! byte; a string is zero-padded (never beyond `proto-max-bulk-len` bytes:
//! "bit offset is not an integer or out of range") by SETBIT and the
//! writing BITFIELD operations, which leave the value `raw` encoded
//! (`dbUnshareStringValue`). As in 7.0, BITCOUNT and BITPOS look the key
//! up before they parse their range arguments, so a missing key answers
//! 0 (BITPOS: -1 for a 1 bit) whatever the range says.

use super::keyspecs;
use super::{acl, cmd, flags::*, Command, Ctx};
use crate::db::{Entry, StrValue, Value};
use crate::events::{NEW, STRING};
use crate::resp::Args;
use crate::util::parse_i64;
use std::sync::atomic::Ordering;

/// The bitmap family's table entries (arity, flags, key positions, ACL
/// categories and docs as Redis 7.0's COMMAND INFO / COMMAND DOCS report).
pub static COMMANDS: &[Command] = &[
    cmd("setbit", 4, WRITE | DENYOOM, (1, 1, 1), acl::BITMAP, setbit)
        .key_specs(keyspecs::DECR)
        .doc(
            "bitmap",
            "2.2.0",
            "Sets or clears the bit at offset in the string value stored at key",
            "O(1)",
        ),
    cmd("getbit", 3, READONLY | FAST, (1, 1, 1), acl::BITMAP, getbit)
        .key_specs(keyspecs::DUMP)
        .doc(
            "bitmap",
            "2.2.0",
            "Returns the bit value at offset in the string value stored at key",
            "O(1)",
        ),
    cmd("bitcount", -2, READONLY, (1, 1, 1), acl::BITMAP, bitcount)
        .key_specs(keyspecs::DUMP)
        .doc("bitmap", "2.6.0", "Count set bits in a string", "O(N)"),
    cmd("bitpos", -3, READONLY, (1, 1, 1), acl::BITMAP, bitpos)
        .key_specs(keyspecs::DUMP)
        .doc(
            "bitmap",
            "2.8.7",
            "Find first bit set or clear in a string",
            "O(N)",
        ),
    cmd("bitop", -4, WRITE | DENYOOM, (2, -1, 1), acl::BITMAP, bitop)
        .key_specs(keyspecs::BITOP)
        .doc(
            "bitmap",
            "2.6.0",
            "Perform bitwise operations between strings",
            "O(N)",
        ),
    cmd(
        "bitfield",
        -2,
        WRITE | DENYOOM,
        (1, 1, 1),
        acl::BITMAP,
        bitfield,
    )
    .key_specs(keyspecs::BITFIELD)
    .key_finder(keyspecs::bitfield_keys)
    .doc(
        "bitmap",
        "3.2.0",
        "Perform arbitrary bitfield integer operations on strings",
        "O(1) for each subcommand specified",
    ),
    cmd(
        "bitfield_ro",
        -2,
        READONLY | FAST,
        (1, 1, 1),
        acl::BITMAP,
        bitfield_ro,
    )
    .key_specs(keyspecs::DUMP)
    .doc(
        "bitmap",
        "6.0.0",
        "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD",
        "O(1) for each subcommand specified",
    ),
];

const ERR_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const ERR_BIT: &str = "ERR bit is not an integer or out of range";
const ERR_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

use super::opt_is;

/// Redis's `getBitOffsetFromArgument`: a bit offset, or `#n` (n times
/// `bits`) when `hash` (BITFIELD). Refused ("bit offset is not an integer
/// or out of range") when negative or when its byte is at or beyond
/// proto-max-bulk-len, except for the master link and the AOF loader
/// (`mustObeyClient`).
fn bit_offset(ctx: &mut Ctx<'_>, a: &[u8], hash: bool, bits: u32) -> Option<u64> {
    let usehash = hash && bits > 0 && a.first() == Some(&b'#');
    let digits = if usehash { &a[1..] } else { a };
    let Some(mut v) = parse_i64(digits) else {
        ctx.error(ERR_OFFSET);
        return None;
    };
    if usehash {
        v = v.wrapping_mul(bits as i64);
    }
    let max = ctx.server.live.proto_max_bulk_len.load(Ordering::Relaxed);
    let obey = ctx.client.is_master || ctx.client.aof_loading;
    if v < 0 || (!obey && (v as u64 >> 3) >= max) {
        ctx.error(ERR_OFFSET);
        return None;
    }
    Some(v as u64)
}

/// The bit at `off` (0 beyond the end).
#[inline]
fn bit_at(p: &[u8], off: u64) -> bool {
    let byte = (off >> 3) as usize;
    byte < p.len() && p[byte] & (0x80 >> (off & 7)) != 0
}

// ---------------------------------------------------------------- SETBIT / GETBIT

/// SETBIT key offset value: the bit's previous value. A missing key is
/// created zero-filled up to the offset's byte, a shorter one zero-padded;
/// the value becomes `raw`. Event `setbit` (and `new`) only when something
/// changed (t_string.c setbitCommand). Errors in Redis's order: offset,
/// bit ("bit is not an integer or out of range"), WRONGTYPE.
fn setbit(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(off) = bit_offset(ctx, args.get(2), false, 0) else {
        return;
    };
    let on = match parse_i64(args.get(3)) {
        Some(v) if v & !1 == 0 => v != 0,
        _ => return ctx.error(ERR_BIT),
    };
    let key = args.get(1);
    let byte = (off >> 3) as usize;
    let mask = 0x80u8 >> (off & 7);
    let now = ctx.now;
    let t = ctx.touch_time();
    let (h, mut shard) = ctx.lock(key);
    let Some(e) = shard.get(h, key, now) else {
        let mut data = vec![0u8; byte + 1];
        if on {
            data[byte] = mask;
        }
        shard.insert(
            h,
            key,
            Entry::new(
                Value::Str(StrValue::raw(data)),
                ctx.server.keyspace.lru.initial(now),
            ),
        );
        drop(shard);
        ctx.notify(key, NEW, "new");
        ctx.modified(key, STRING, "setbit");
        return ctx.out.int(0);
    };
    if let Some(t) = t {
        t.record(&mut e.lru);
    }
    #[allow(unreachable_patterns)]
    let s = match &mut e.value {
        Value::Str(s) => s,
        _ => {
            drop(shard);
            return ctx.wrongtype();
        }
    };
    let data = s.make_raw();
    let grown = data.len() < byte + 1;
    if grown {
        data.resize(byte + 1, 0);
    }
    let old = data[byte] & mask != 0;
    let changed = grown || old != on;
    if old != on {
        data[byte] ^= mask;
    }
    drop(shard);
    // Only a change counts as one (bitops.c setbitCommand: a new key, a
    // longer string or the bit flipped); the same bit again is not dirty.
    if changed {
        ctx.modified(key, STRING, "setbit");
    } else {
        ctx.dirty = Some(0);
    }
    ctx.out.int(old as i64);
}

/// GETBIT key offset: the bit (0 beyond the end or for a missing key).
fn getbit(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(off) = bit_offset(ctx, args.get(2), false, 0) else {
        return;
    };
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
    let mut digits = itoa::Buffer::new();
    #[allow(unreachable_patterns)]
    let bit = match &e.value {
        Value::Str(s) => Some(bit_at(s.as_bytes(&mut digits), off)),
        _ => None,
    };
    drop(shard);
    ctx.hit(key, true);
    match bit {
        Some(b) => ctx.out.int(b as i64),
        None => ctx.wrongtype(),
    }
}

// ---------------------------------------------------------------- BITCOUNT / BITPOS

/// Number of set bits of `p`: with the CPU's POPCNT instruction when it
/// has one (checked once at run time), else the portable count; four
/// independent sums per 32 bytes keep the instruction pipelined.
fn popcount(p: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU supports POPCNT (checked just above), the
            // only feature the function is compiled for.
            return unsafe { popcount_popcnt(p) };
        }
    }
    popcount_words(p)
}

/// [`popcount_words`] compiled with POPCNT.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn popcount_popcnt(p: &[u8]) -> u64 {
    popcount_words(p)
}

/// The portable count, 32 bytes (four words) at a time.
#[inline(always)]
fn popcount_words(p: &[u8]) -> u64 {
    let word = |c: &[u8]| u64::from_ne_bytes(c.try_into().expect("8 bytes")).count_ones() as u64;
    let mut blocks = p.chunks_exact(32);
    let (mut a, mut b, mut c, mut d) = (0u64, 0u64, 0u64, 0u64);
    for x in &mut blocks {
        a += word(&x[0..8]);
        b += word(&x[8..16]);
        c += word(&x[16..24]);
        d += word(&x[24..32]);
    }
    let rest = blocks.remainder();
    let mut words = rest.chunks_exact(8);
    for x in &mut words {
        a += word(x);
    }
    a + b
        + c
        + d
        + words
            .remainder()
            .iter()
            .map(|x| x.count_ones() as u64)
            .sum::<u64>()
}

/// Set bits of `p` in the inclusive bit range [s, e] (both inside `p`).
fn count_bits(p: &[u8], s: u64, e: u64) -> u64 {
    let (a, b) = ((s >> 3) as usize, (e >> 3) as usize);
    let mut n = popcount(&p[a..=b]);
    // Bits of the first byte before `s` and of the last byte after `e`.
    let before = !(0xffu8 >> (s & 7));
    let after = (0xffu16 >> ((e & 7) + 1)) as u8;
    n -= (p[a] & before).count_ones() as u64;
    n -= (p[b] & after).count_ones() as u64;
    n
}

/// The position of the first bit equal to `bit` in the inclusive bit range
/// [s, e] of `p` (both inside `p`), skipping whole words of the other
/// value.
fn find_bit(p: &[u8], s: u64, e: u64, bit: bool) -> Option<u64> {
    let mut i = s;
    while i <= e && i & 7 != 0 {
        if bit_at(p, i) == bit {
            return Some(i);
        }
        i += 1;
    }
    if i > e {
        return None;
    }
    let skip: u8 = if bit { 0 } else { 0xff };
    let skip_word = if bit { 0u64 } else { u64::MAX };
    let end = ((e + 1) >> 3) as usize;
    let mut byte = (i >> 3) as usize;
    while byte < end {
        if byte + 8 <= end
            && u64::from_ne_bytes(p[byte..byte + 8].try_into().expect("8 bytes")) == skip_word
        {
            byte += 8;
            continue;
        }
        if p[byte] != skip {
            let b = if bit { p[byte] } else { !p[byte] };
            return Some(byte as u64 * 8 + b.leading_zeros() as u64);
        }
        byte += 1;
    }
    i = byte as u64 * 8;
    while i <= e {
        if bit_at(p, i) == bit {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// A BITCOUNT / BITPOS range: start and end (byte or bit indexes, negative
/// from the end) clamped as Redis does, converted to an inclusive bit
/// range; None when it is empty.
fn bit_range(len: usize, start: i64, end: i64, isbit: bool) -> Option<(u64, u64)> {
    let mut total = len as i64;
    if isbit {
        total <<= 3;
    }
    let mut start = if start < 0 { total + start } else { start };
    let mut end = if end < 0 { total + end } else { end };
    start = start.max(0);
    end = end.max(0);
    if end >= total {
        end = total - 1;
    }
    if start > end {
        return None;
    }
    let (s, e) = (start as u64, end as u64);
    Some(if isbit { (s, e) } else { (s * 8, e * 8 + 7) })
}

/// The BYTE|BIT unit of BITCOUNT / BITPOS: Some(true) for BIT, or None
/// after a syntax error reply.
fn unit_is_bit(ctx: &mut Ctx<'_>, u: &[u8]) -> Option<bool> {
    if opt_is(u, b"bit") {
        Some(true)
    } else if opt_is(u, b"byte") {
        Some(false)
    } else {
        ctx.syntax();
        None
    }
}

/// Reads a string key for BITCOUNT / BITPOS: Err(()) after a WRONGTYPE
/// reply, Ok(None) for a missing key, else calls `f` with the bytes.
fn with_string<R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    f: impl FnOnce(&mut Ctx<'_>, &[u8]) -> R,
) -> Result<Option<R>, ()> {
    let now = ctx.now;
    let t = ctx.touch_time();
    let (h, mut shard) = ctx.lock(key);
    let Some(e) = shard.get(h, key, now) else {
        drop(shard);
        ctx.hit(key, false);
        return Ok(None);
    };
    if let Some(t) = t {
        t.record(&mut e.lru);
    }
    let mut digits = itoa::Buffer::new();
    #[allow(unreachable_patterns)]
    match &e.value {
        Value::Str(s) => {
            let r = f(ctx, s.as_bytes(&mut digits));
            drop(shard);
            ctx.hit(key, true);
            Ok(Some(r))
        }
        _ => {
            drop(shard);
            ctx.hit(key, true);
            ctx.wrongtype();
            Err(())
        }
    }
}

/// BITCOUNT key [start end [BYTE|BIT]]: the number of set bits in the
/// range (the whole string by default); 0 for a missing key. Redis 7.0
/// order: key and type first, then start, end, the unit (syntax error),
/// and a wrong argument count is a syntax error.
fn bitcount(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let r = with_string(ctx, args.get(1), |ctx, p| -> Option<u64> {
        let n = args.len();
        if n == 2 {
            return Some(if p.is_empty() {
                0
            } else {
                count_bits(p, 0, p.len() as u64 * 8 - 1)
            });
        }
        if n != 4 && n != 5 {
            ctx.syntax();
            return None;
        }
        let start = super::arg_i64(ctx, args.get(2))?;
        let end = super::arg_i64(ctx, args.get(3))?;
        if start < 0 && end < 0 && start > end {
            return Some(0);
        }
        let isbit = if n == 5 {
            unit_is_bit(ctx, args.get(4))?
        } else {
            false
        };
        Some(match bit_range(p.len(), start, end, isbit) {
            Some((s, e)) => count_bits(p, s, e),
            None => 0,
        })
    });
    match r {
        Ok(None) => ctx.out.int(0),
        Ok(Some(Some(n))) => ctx.out.int(n as i64),
        Ok(Some(None)) | Err(()) => {}
    }
}

/// BITPOS key bit [start [end [BYTE|BIT]]]: the position of the first bit
/// equal to `bit` in the range, -1 when there is none. Without an explicit
/// end, a search for 0 in all-ones bytes answers the first position past
/// the string (it reads as zero-padded). A missing key answers 0 for 0 and
/// -1 for 1. "The bit argument must be 1 or 0." comes before the lookup.
fn bitpos(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let bit = match parse_i64(args.get(2)) {
        None => return ctx.not_int(),
        Some(b @ (0 | 1)) => b == 1,
        Some(_) => return ctx.error("ERR The bit argument must be 1 or 0."),
    };
    let r = with_string(ctx, args.get(1), |ctx, p| -> Option<i64> {
        let n = args.len();
        let (range, end_given) = if n == 3 {
            (bit_range(p.len(), 0, -1, false), false)
        } else if n <= 6 {
            let start = super::arg_i64(ctx, args.get(3))?;
            let isbit = if n == 6 {
                unit_is_bit(ctx, args.get(5))?
            } else {
                false
            };
            let (end, given) = if n >= 5 {
                (super::arg_i64(ctx, args.get(4))?, true)
            } else {
                (-1, false)
            };
            (bit_range(p.len(), start, end, isbit), given)
        } else {
            ctx.syntax();
            return None;
        };
        let Some((s, e)) = range else {
            return Some(-1);
        };
        Some(match find_bit(p, s, e, bit) {
            Some(pos) => pos as i64,
            None if !bit && !end_given => (e + 1) as i64,
            None => -1,
        })
    });
    match r {
        Ok(None) => ctx.out.int(if bit { -1 } else { 0 }),
        Ok(Some(Some(n))) => ctx.out.int(n),
        Ok(Some(None)) | Err(()) => {}
    }
}

// ---------------------------------------------------------------- BITOP

#[derive(Clone, Copy, PartialEq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// BITOP AND|OR|XOR|NOT destkey key [key ...]: stores the bitwise
/// combination of the sources (missing keys and shorter strings read as
/// zero bytes; NOT takes exactly one source) at `destkey` as a `raw`
/// string without TTL, over a value of any type, and replies its length.
/// An empty result deletes `destkey`. Events `set` (and `new`), or `del`.
fn bitop(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let name = args.get(1);
    let op = if opt_is(name, b"and") {
        BitOp::And
    } else if opt_is(name, b"or") {
        BitOp::Or
    } else if opt_is(name, b"xor") {
        BitOp::Xor
    } else if opt_is(name, b"not") {
        BitOp::Not
    } else {
        return ctx.syntax();
    };
    if op == BitOp::Not && args.len() != 4 {
        return ctx.error("ERR BITOP NOT must be called with a single source key.");
    }
    let db = ctx.client.db;
    let hashes: Vec<(usize, u64)> = (2..args.len())
        .map(|i| (db, crate::db::hash_key(args.get(i))))
        .collect();
    let mut locks = ctx.server.keyspace.lock_keys(&hashes);
    let now = ctx.now;
    let t = ctx.touch_time();
    let mut res: Vec<u8> = Vec::new();
    let mut digits = itoa::Buffer::new();
    let (mut hits, mut misses) = (0u64, 0u64);
    let mut wrong = false;
    for (k, &(_, h)) in hashes.iter().enumerate().skip(1) {
        let key = args.get(k + 2);
        let first = k == 1;
        let shard = locks.shard(db, h);
        let src: Option<&[u8]> = match shard.get(h, key, now) {
            None => {
                misses += 1;
                Some(&[])
            }
            Some(e) => {
                hits += 1;
                if let Some(t) = t {
                    t.record(&mut e.lru);
                }
                #[allow(unreachable_patterns)]
                match &e.value {
                    Value::Str(s) => Some(s.as_bytes(&mut digits)),
                    _ => None,
                }
            }
        };
        let Some(src) = src else {
            wrong = true;
            break;
        };
        if first {
            res.extend_from_slice(src);
            if op == BitOp::Not {
                res.iter_mut().for_each(|b| *b = !*b);
            }
            continue;
        }
        let common = res.len().min(src.len());
        match op {
            BitOp::And => {
                res[..common].iter_mut().zip(src).for_each(|(r, s)| *r &= s);
                // Beyond the shorter of the two, one side is zero.
                res[common..].iter_mut().for_each(|r| *r = 0);
                res.resize(res.len().max(src.len()), 0);
            }
            BitOp::Or | BitOp::Xor => {
                let xor = op == BitOp::Xor;
                res[..common].iter_mut().zip(src).for_each(
                    |(r, s)| {
                        if xor {
                            *r ^= s
                        } else {
                            *r |= s
                        }
                    },
                );
                if src.len() > res.len() {
                    res.extend_from_slice(&src[common..]);
                }
            }
            BitOp::Not => {}
        }
    }
    if wrong {
        drop(locks);
        crate::stats::bump(&ctx.stats.hits, hits);
        crate::stats::bump(&ctx.stats.misses, misses);
        return ctx.wrongtype();
    }
    crate::stats::bump(&ctx.stats.hits, hits);
    crate::stats::bump(&ctx.stats.misses, misses);
    let n = res.len();
    let value = (n > 0).then(|| Value::Str(StrValue::raw(res)));
    super::store_or_delete(ctx, locks, args.get(2), hashes[0].1, value, STRING, "set");
    ctx.out.int(n as i64);
}

// ---------------------------------------------------------------- BITFIELD

/// What a BITFIELD operation does.
#[derive(Clone, Copy, PartialEq)]
enum FieldOp {
    Get,
    Set,
    IncrBy,
}

/// BITFIELD's OVERFLOW behaviour.
#[derive(Clone, Copy, PartialEq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// One parsed BITFIELD operation.
#[derive(Clone, Copy)]
struct Field {
    op: FieldOp,
    offset: u64,
    bits: u32,
    signed: bool,
    value: i64,
    overflow: Overflow,
}

/// Redis's `getBitfieldTypeFromArgument`: `i1`..`i64` or `u1`..`u63`
/// (lower-case letter; the width read up to the first NUL).
fn field_type(a: &[u8]) -> Option<(bool, u32)> {
    let signed = match a.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return None,
    };
    let rest = &a[1..];
    let rest = &rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())];
    let bits = parse_i64(rest)?;
    if bits < 1 || (signed && bits > 64) || (!signed && bits > 63) {
        return None;
    }
    Some((signed, bits as u32))
}

/// The unsigned integer of `bits` bits at bit `off` of `p`, most
/// significant bit first (zero beyond the end; `getUnsignedBitfield`).
fn get_unsigned(p: &[u8], off: u64, bits: u32) -> u64 {
    let mut v: u64 = 0;
    for i in 0..bits as u64 {
        v = (v << 1) | bit_at(p, off + i) as u64;
    }
    v
}

/// The signed (two's complement) integer of `bits` bits at `off`.
fn get_signed(p: &[u8], off: u64, bits: u32) -> i64 {
    let mut v = get_unsigned(p, off, bits);
    if bits < 64 && v & (1u64 << (bits - 1)) != 0 {
        v |= u64::MAX << bits;
    }
    v as i64
}

/// Writes the low `bits` bits of `v` at bit `off` of `p` (inside `p`).
fn set_bits(p: &mut [u8], off: u64, bits: u32, v: u64) {
    for j in 0..bits as u64 {
        let on = v >> (bits as u64 - 1 - j) & 1 != 0;
        let o = off + j;
        let byte = (o >> 3) as usize;
        let mask = 0x80u8 >> (o & 7);
        if on {
            p[byte] |= mask;
        } else {
            p[byte] &= !mask;
        }
    }
}

/// `checkUnsignedBitfieldOverflow`: whether `value + incr` leaves the
/// range of a `bits`-bit unsigned integer, and the value to store under
/// WRAP / SAT.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> (bool, u64) {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = (value as i64).wrapping_neg();
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX.checked_shl(bits).unwrap_or(0));
    if value > max || (incr > 0 && incr > maxincr) {
        return (
            true,
            match ow {
                Overflow::Wrap => wrap(),
                _ => max,
            },
        );
    }
    if incr < 0 && incr < minincr {
        return (
            true,
            match ow {
                Overflow::Wrap => wrap(),
                _ => 0,
            },
        );
    }
    (false, 0)
}

/// `checkSignedBitfieldOverflow`: the same for a `bits`-bit signed integer.
fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> (bool, i64) {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let wrap = || {
        let mut c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1u64 << (bits - 1)) != 0 {
                c |= mask;
            } else {
                c &= !mask;
            }
        }
        c as i64
    };
    if value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
        return (
            true,
            match ow {
                Overflow::Wrap => wrap(),
                _ => max,
            },
        );
    }
    if value < min || (bits != 64 && incr < minincr) || (value < 0 && incr < 0 && incr < minincr) {
        return (
            true,
            match ow {
                Overflow::Wrap => wrap(),
                _ => min,
            },
        );
    }
    (false, 0)
}

/// BITFIELD key [GET type offset] [SET type offset value] [INCRBY type
/// offset increment] [OVERFLOW WRAP|SAT|FAIL] ...
fn bitfield(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    bitfield_generic(ctx, args, false);
}

/// BITFIELD_RO key [GET type offset] ...: GET only ("BITFIELD_RO only
/// supports the GET subcommand" once the whole request parsed).
fn bitfield_ro(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    bitfield_generic(ctx, args, true);
}

/// Redis's `bitfieldGeneric`: parses every operation first (syntax error,
/// "Invalid OVERFLOW type specified", the type and offset errors, "value
/// is not an integer or out of range"), then runs them in order and
/// replies one integer per GET / SET / INCRBY (SET: the previous value,
/// INCRBY: the new one; nil when OVERFLOW FAIL refused it). Writing
/// requests create or zero-pad the string up to their farthest bit first;
/// event `setbit` when any SET / INCRBY wrote.
fn bitfield_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, ro: bool) {
    let mut ops: Vec<Field> = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut readonly = true;
    let mut highest: u64 = 0;
    let n = args.len();
    let mut j = 2;
    while j < n {
        let rem = n - j - 1;
        let sub = args.get(j);
        let op = if opt_is(sub, b"get") && rem >= 2 {
            FieldOp::Get
        } else if opt_is(sub, b"set") && rem >= 3 {
            FieldOp::Set
        } else if opt_is(sub, b"incrby") && rem >= 3 {
            FieldOp::IncrBy
        } else if opt_is(sub, b"overflow") && rem >= 1 {
            let t = args.get(j + 1);
            overflow = if opt_is(t, b"wrap") {
                Overflow::Wrap
            } else if opt_is(t, b"sat") {
                Overflow::Sat
            } else if opt_is(t, b"fail") {
                Overflow::Fail
            } else {
                return ctx.error("ERR Invalid OVERFLOW type specified");
            };
            j += 2;
            continue;
        } else {
            return ctx.syntax();
        };
        let Some((signed, bits)) = field_type(args.get(j + 1)) else {
            return ctx.error(ERR_TYPE);
        };
        let Some(offset) = bit_offset(ctx, args.get(j + 2), true, bits) else {
            return;
        };
        let mut value = 0;
        if op != FieldOp::Get {
            readonly = false;
            highest = highest.max(offset + bits as u64 - 1);
            let Some(v) = super::arg_i64(ctx, args.get(j + 3)) else {
                return;
            };
            value = v;
        }
        ops.push(Field {
            op,
            offset,
            bits,
            signed,
            value,
            overflow,
        });
        j += if op == FieldOp::Get { 3 } else { 4 };
    }
    let key = args.get(1);
    let now = ctx.now;
    let t = ctx.touch_time();
    if readonly {
        let r = with_string(ctx, key, |ctx, p| reply_gets(ctx, &ops, p));
        if let Ok(None) = r {
            reply_gets(ctx, &ops, &[]);
        }
        return;
    }
    if ro {
        return ctx.error("ERR BITFIELD_RO only supports the GET subcommand");
    }
    let byte = (highest >> 3) as usize;
    let (h, mut shard) = ctx.lock(key);
    let mut created = false;
    // The string was created or lengthened: every write op counts as a
    // change, even one storing the value already there (bitops.c
    // lookupStringForBitCommand's `dirty`).
    let mut grew = false;
    let data = match shard.get(h, key, now) {
        None => {
            created = true;
            shard.insert(
                h,
                key,
                Entry::new(
                    Value::Str(StrValue::raw(vec![0u8; byte + 1])),
                    ctx.server.keyspace.lru.initial(now),
                ),
            );
            match shard.get(h, key, now).map(|e| &mut e.value) {
                Some(Value::Str(s)) => s.make_raw(),
                _ => unreachable!("just inserted"),
            }
        }
        Some(e) => {
            if let Some(t) = t {
                t.record(&mut e.lru);
            }
            #[allow(unreachable_patterns)]
            match &mut e.value {
                Value::Str(s) => {
                    let d = s.make_raw();
                    if d.len() < byte + 1 {
                        d.resize(byte + 1, 0);
                        grew = true;
                    }
                    d
                }
                _ => {
                    drop(shard);
                    return ctx.wrongtype();
                }
            }
        }
    };
    let mut changes = 0;
    ctx.out.array(ops.len());
    for f in &ops {
        match f.op {
            FieldOp::Get => get_field(ctx, f, data),
            FieldOp::Set | FieldOp::IncrBy => {
                let incr = f.op == FieldOp::IncrBy;
                let (ok, reply, store, same) = if f.signed {
                    let old = get_signed(data, f.offset, f.bits);
                    let (over, lim) = if incr {
                        signed_overflow(old, f.value, f.bits, f.overflow)
                    } else {
                        signed_overflow(f.value, 0, f.bits, f.overflow)
                    };
                    let new = if over {
                        lim
                    } else if incr {
                        old.wrapping_add(f.value)
                    } else {
                        f.value
                    };
                    let ok = !(over && f.overflow == Overflow::Fail);
                    (ok, if incr { new } else { old }, new as u64, old == new)
                } else {
                    let old = get_unsigned(data, f.offset, f.bits);
                    let (over, lim) = if incr {
                        unsigned_overflow(old, f.value, f.bits, f.overflow)
                    } else {
                        unsigned_overflow(f.value as u64, 0, f.bits, f.overflow)
                    };
                    let new = if over {
                        lim
                    } else if incr {
                        old.wrapping_add(f.value as u64)
                    } else {
                        f.value as u64
                    };
                    let ok = !(over && f.overflow == Overflow::Fail);
                    (
                        ok,
                        if incr { new as i64 } else { old as i64 },
                        new,
                        old == new,
                    )
                };
                if ok {
                    ctx.out.int(reply);
                    set_bits(data, f.offset, f.bits, store);
                    if created || grew || !same {
                        changes += 1;
                    }
                } else {
                    ctx.out.null();
                }
            }
        }
    }
    drop(shard);
    if created {
        ctx.notify(key, NEW, "new");
    }
    // Only the writes done count (an OVERFLOW FAIL refusal does not, even
    // when the request created the key, as in Redis 7.0).
    if changes > 0 {
        ctx.modified(key, STRING, "setbit");
    }
    // server.dirty += changes (bitops.c bitfieldGeneric).
    ctx.dirty = Some(changes);
}

/// The replies of a read-only BITFIELD over the string `p`.
fn reply_gets(ctx: &mut Ctx<'_>, ops: &[Field], p: &[u8]) {
    ctx.out.array(ops.len());
    for f in ops {
        get_field(ctx, f, p);
    }
}

/// One GET: the field read from `p` (zero-padded).
fn get_field(ctx: &mut Ctx<'_>, f: &Field, p: &[u8]) {
    if f.signed {
        ctx.out.int(get_signed(p, f.offset, f.bits));
    } else {
        ctx.out.int(get_unsigned(p, f.offset, f.bits) as i64);
    }
}
