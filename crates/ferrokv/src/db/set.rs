//! The set type, with Redis 7.0's two encodings (t_set.c, intset.c):
//!
//! - `intset` ([`IntSet`]): while every member is an integer in
//!   `string2ll`-canonical form and the set has at most
//!   `set-max-intset-entries` members. A sorted array of integers in one
//!   allocation, each stored with the smallest width that fits every member
//!   (16, 32 or 64 bits), upgraded in place when a wider member arrives and
//!   never downgraded, as Redis's intset. Iteration is in ascending order,
//!   which Redis's replies (SMEMBERS, SSCAN...) expose.
//! - `hashtable` ([`SetTable`]): anything else. A chained hash table whose
//!   bucket count is a power of two, so that SSCAN can use Redis's
//!   reverse-binary cursor (see [`super::dict`]); unlike [`super::Dict`] a
//!   bucket is not a linked list of boxed nodes but a single allocation
//!   holding its whole chain packed as `varint length, bytes` entries behind
//!   a thin 8-byte pointer. With at most one bucket per member that costs
//!   about `len + 2` bytes of heap per member (rounded up by the allocator)
//!   plus 8 to 16 bytes of bucket array, where Redis pays a 24-byte
//!   `dictEntry`, an sds string (3-byte header + NUL) and 8 bytes of bucket.
//!
//! Conversion goes only from `intset` to `hashtable` (when a non-integer
//! member arrives or the count passes the threshold), never back, except
//! where Redis itself builds a fresh set (SPOP with a large count, the
//! *STORE commands), which the command layer reproduces.

use super::dict::hash_bytes;
use crate::util::parse_i64;
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

/// Redis 7.0 caps `set-max-intset-entries` at 2^30 ("limit to 1G entries
/// due to intset internals", `setTypeAdd`).
pub const MAX_INTSET_ENTRIES_CAP: u64 = 1 << 30;

/// A member as the set holds it: an integer (intset) or bytes (hashtable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Member<'a> {
    /// An intset member.
    Int(i64),
    /// A hashtable member.
    Bytes(&'a [u8]),
}

impl<'a> Member<'a> {
    /// The member's string form (`tmp` holds an integer's digits).
    #[inline]
    pub fn as_bytes<'b>(&'b self, tmp: &'b mut itoa::Buffer) -> &'b [u8]
    where
        'a: 'b,
    {
        match *self {
            Member::Int(n) => tmp.format(n).as_bytes(),
            Member::Bytes(b) => b,
        }
    }

    /// An owned copy of the string form.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut t = itoa::Buffer::new();
        self.as_bytes(&mut t).to_vec()
    }
}

// ------------------------------------------------------------------ intset

/// Smallest intset width (bytes) that holds `v` (`_intsetValueEncoding`).
#[inline]
fn width_for(v: i64) -> usize {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

/// A sorted set of distinct integers packed little-endian with one width
/// for all (2, 4 or 8 bytes). Layout of `data`: the width byte, then the
/// items. Exactly sized: every insert or removal reallocates, as Redis's
/// `intsetResize` does.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct IntSet {
    data: Box<[u8]>,
}

impl Default for IntSet {
    fn default() -> Self {
        IntSet {
            data: Box::new([2]),
        }
    }
}

impl IntSet {
    #[inline]
    fn width(&self) -> usize {
        self.data[0] as usize
    }

    /// Number of members.
    #[inline]
    pub fn len(&self) -> usize {
        (self.data.len() - 1) / self.width()
    }

    /// True when empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.data.len() == 1
    }

    /// The member at position `i` (ascending order); `i < len()`.
    #[inline]
    pub fn get(&self, i: usize) -> i64 {
        let w = self.width();
        let s = &self.data[1 + i * w..1 + (i + 1) * w];
        match w {
            2 => i16::from_le_bytes([s[0], s[1]]) as i64,
            4 => i32::from_le_bytes([s[0], s[1], s[2], s[3]]) as i64,
            _ => i64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]),
        }
    }

    fn search(&self, v: i64) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0usize, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.get(mid).cmp(&v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// True when `v` is a member.
    #[inline]
    pub fn contains(&self, v: i64) -> bool {
        width_for(v) <= self.width() && self.search(v).is_ok()
    }

    /// Adds `v`; false when already present. A value wider than the
    /// current width upgrades every item first (`intsetUpgradeAndAdd`).
    pub fn insert(&mut self, v: i64) -> bool {
        let w = self.width();
        let nw = width_for(v);
        if nw > w {
            let n = self.len();
            let mut d = Vec::with_capacity(1 + (n + 1) * nw);
            d.push(nw as u8);
            let put = |d: &mut Vec<u8>, x: i64| d.extend_from_slice(&x.to_le_bytes()[..nw]);
            // A value needing a wider encoding is below or above every
            // current member.
            if v < 0 {
                put(&mut d, v);
            }
            for i in 0..n {
                put(&mut d, self.get(i));
            }
            if v >= 0 {
                put(&mut d, v);
            }
            self.data = d.into_boxed_slice();
            return true;
        }
        let pos = match self.search(v) {
            Ok(_) => return false,
            Err(p) => p,
        };
        let mut d = std::mem::take(&mut self.data).into_vec();
        let at = 1 + pos * w;
        let old_len = d.len();
        d.reserve_exact(w);
        d.resize(old_len + w, 0);
        d.copy_within(at..old_len, at + w);
        d[at..at + w].copy_from_slice(&v.to_le_bytes()[..w]);
        self.data = d.into_boxed_slice();
        true
    }

    /// Removes `v`; false when absent.
    pub fn remove(&mut self, v: i64) -> bool {
        if width_for(v) > self.width() {
            return false;
        }
        let Ok(pos) = self.search(v) else {
            return false;
        };
        self.remove_at(pos);
        true
    }

    /// Removes the member at position `i`.
    pub fn remove_at(&mut self, i: usize) {
        let w = self.width();
        let mut d = std::mem::take(&mut self.data).into_vec();
        let at = 1 + i * w;
        d.copy_within(at + w.., at);
        d.truncate(d.len() - w);
        self.data = d.into_boxed_slice();
    }

    /// Members in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// Heap bytes.
    pub fn mem_usage(&self) -> usize {
        self.data.len()
    }
}

// --------------------------------------------------------------- hashtable

/// Appends `v` as LEB128.
#[inline]
fn put_varint(out: &mut [u8], mut v: usize) -> usize {
    let mut i = 0;
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = b;
            return i + 1;
        }
        out[i] = b | 0x80;
        i += 1;
    }
}

/// Bytes LEB128 needs for `v`.
#[inline]
fn varint_len(mut v: usize) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Reads a LEB128 number at the start of `s`: (value, bytes used).
#[inline]
fn get_varint(s: &[u8]) -> (usize, usize) {
    let mut v = 0usize;
    let mut shift = 0;
    for (i, &b) in s.iter().enumerate() {
        v |= ((b & 0x7f) as usize) << shift;
        if b & 0x80 == 0 {
            return (v, i + 1);
        }
        shift += 7;
    }
    (v, s.len())
}

/// Iterates the `varint length, bytes` entries of a bucket payload.
struct Entries<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Entries<'a> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        let (n, h) = get_varint(self.rest);
        let e = &self.rest[h..h + n];
        self.rest = &self.rest[h + n..];
        Some(e)
    }
}

/// Encoded size of one entry.
#[inline]
fn entry_len(m: &[u8]) -> usize {
    varint_len(m.len()) + m.len()
}

/// Writes one entry at the start of `out`; returns the bytes written.
#[inline]
fn put_entry(out: &mut [u8], m: &[u8]) -> usize {
    let h = put_varint(out, m.len());
    out[h..h + m.len()].copy_from_slice(m);
    h + m.len()
}

/// One bucket: an owned allocation `varint payload_len, payload` behind a
/// thin pointer, or nothing when empty. The payload is the chain's entries.
struct Bucket(Option<NonNull<u8>>);

// SAFETY: a Bucket exclusively owns its allocation (like Box<[u8]>) and has
// no interior mutability.
unsafe impl Send for Bucket {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for Bucket {}

impl Bucket {
    const EMPTY: Bucket = Bucket(None);

    /// (payload length, header length) of a live allocation.
    #[inline]
    fn header(p: NonNull<u8>) -> (usize, usize) {
        let (mut v, mut shift, mut i) = (0usize, 0, 0);
        loop {
            // SAFETY: the allocation starts with a complete varint written
            // by `rebuild`; reading stops at its last byte.
            let b = unsafe { *p.as_ptr().add(i) };
            v |= ((b & 0x7f) as usize) << shift;
            i += 1;
            if b & 0x80 == 0 {
                return (v, i);
            }
            shift += 7;
        }
    }

    /// The chain's packed entries.
    #[inline]
    fn payload(&self) -> &[u8] {
        match self.0 {
            None => &[],
            Some(p) => {
                let (len, h) = Self::header(p);
                // SAFETY: the allocation holds h header bytes followed by
                // len initialised payload bytes; it lives as long as self.
                unsafe { std::slice::from_raw_parts(p.as_ptr().add(h), len) }
            }
        }
    }

    #[inline]
    fn entries(&self) -> Entries<'_> {
        Entries {
            rest: self.payload(),
        }
    }

    /// Allocated bytes.
    fn alloc_size(&self) -> usize {
        match self.0 {
            None => 0,
            Some(p) => {
                let (len, h) = Self::header(p);
                len + h
            }
        }
    }

    /// Replaces the payload with `len` bytes written by `fill(old, new)`,
    /// which may read the old payload while writing the new one.
    fn rebuild(&mut self, len: usize, fill: impl FnOnce(&[u8], &mut [u8])) {
        let new = if len == 0 {
            fill(self.payload(), &mut []);
            None
        } else {
            let h = varint_len(len);
            let layout = Layout::from_size_align(h + len, 1).expect("bucket layout");
            // SAFETY: layout has a non-zero size.
            let raw = unsafe { alloc(layout) };
            let Some(p) = NonNull::new(raw) else {
                handle_alloc_error(layout)
            };
            // SAFETY: p points to h + len writable bytes owned by us, zeroed
            // here so the slice is initialised; the old payload is a distinct
            // allocation.
            let buf = unsafe {
                std::ptr::write_bytes(p.as_ptr(), 0, h + len);
                std::slice::from_raw_parts_mut(p.as_ptr(), h + len)
            };
            put_varint(&mut buf[..h], len);
            fill(self.payload(), &mut buf[h..]);
            Some(p)
        };
        self.free();
        self.0 = new;
    }

    fn free(&mut self) {
        if let Some(p) = self.0.take() {
            let size = {
                let (len, h) = Self::header(p);
                len + h
            };
            let layout = Layout::from_size_align(size, 1).expect("bucket layout");
            // SAFETY: p was allocated by `rebuild` with exactly this layout.
            unsafe { dealloc(p.as_ptr(), layout) };
        }
    }

    /// Appends entries (already encoded) to the chain.
    fn append_encoded(&mut self, enc: &[u8]) {
        let old = self.payload().len();
        self.rebuild(old + enc.len(), |o, n| {
            n[..old].copy_from_slice(o);
            n[old..].copy_from_slice(enc);
        });
    }
}

impl Drop for Bucket {
    fn drop(&mut self) {
        self.free();
    }
}

impl Clone for Bucket {
    fn clone(&self) -> Self {
        let mut b = Bucket::EMPTY;
        let p = self.payload();
        if !p.is_empty() {
            b.rebuild(p.len(), |_, n| n.copy_from_slice(p));
        }
        b
    }
}

/// Smallest non-empty table (Redis's DICT_HT_INITIAL_SIZE).
const MIN_BUCKETS: usize = 4;

/// The `hashtable` encoding: a chained hash table of byte strings with
/// packed, thin-pointer buckets. Grows when the member count reaches the
/// bucket count, shrinks below 1/8 load (as [`super::Dict`]), rehashing in
/// one step.
#[derive(Clone, Default)]
pub struct SetTable {
    buckets: Box<[Bucket]>,
    len: usize,
}

impl std::fmt::Debug for SetTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set()
            .entries(self.iter().map(String::from_utf8_lossy))
            .finish()
    }
}

impl PartialEq for SetTable {
    fn eq(&self, o: &Self) -> bool {
        self.len == o.len && self.iter().all(|m| o.contains(m))
    }
}

impl SetTable {
    /// An empty table sized for `n` members.
    pub fn with_capacity(n: usize) -> Self {
        let mut t = SetTable::default();
        if n > 0 {
            t.resize(n.next_power_of_two().max(MIN_BUCKETS));
        }
        t
    }

    /// Number of members.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The table's shape: its buckets and the members each chain holds
    /// (DEBUG HTSTATS-KEY).
    pub fn table_stats(&self) -> super::TableStats {
        let mut t = super::TableStats::default();
        for b in self.buckets.iter() {
            t.add_bucket(b.entries().count());
        }
        t
    }

    /// Number of buckets.
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }

    #[inline]
    fn slot(&self, m: &[u8]) -> usize {
        hash_bytes(m) as usize & (self.buckets.len() - 1)
    }

    /// True when `m` is a member.
    #[inline]
    pub fn contains(&self, m: &[u8]) -> bool {
        if self.buckets.is_empty() {
            return false;
        }
        self.buckets[self.slot(m)].entries().any(|e| e == m)
    }

    /// Adds `m`; false when already present.
    pub fn insert(&mut self, m: &[u8]) -> bool {
        let h = hash_bytes(m) as usize;
        if !self.buckets.is_empty()
            && self.buckets[h & (self.buckets.len() - 1)]
                .entries()
                .any(|e| e == m)
        {
            return false;
        }
        if self.len >= self.buckets.len() {
            self.resize((self.len + 1).next_power_of_two().max(MIN_BUCKETS));
        }
        let b = &mut self.buckets[h & (self.buckets.len() - 1)];
        let old = b.payload().len();
        b.rebuild(old + entry_len(m), |o, n| {
            n[..old].copy_from_slice(o);
            put_entry(&mut n[old..], m);
        });
        self.len += 1;
        true
    }

    /// Removes `m`; false when absent.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        if self.buckets.is_empty() {
            return false;
        }
        let i = self.slot(m);
        let b = &mut self.buckets[i];
        let p = b.payload();
        let mut off = 0;
        let mut found = None;
        for e in b.entries() {
            let el = entry_len(e);
            if e == m {
                found = Some((off, el));
                break;
            }
            off += el;
        }
        let Some((off, el)) = found else {
            return false;
        };
        let total = p.len();
        b.rebuild(total - el, |o, n| {
            n[..off].copy_from_slice(&o[..off]);
            n[off..].copy_from_slice(&o[off + el..]);
        });
        self.len -= 1;
        let size = self.buckets.len();
        if self.len == 0 {
            self.buckets = Box::new([]);
        } else if size > MIN_BUCKETS && self.len * 8 < size {
            self.resize(self.len.next_power_of_two().max(MIN_BUCKETS));
        }
        true
    }

    /// Rehashes into `new_size` buckets (a power of two).
    fn resize(&mut self, new_size: usize) {
        let mut old = std::mem::take(&mut self.buckets);
        let mut table: Vec<Bucket> = Vec::with_capacity(new_size);
        table.resize_with(new_size, || Bucket::EMPTY);
        let mask = new_size - 1;
        if new_size < old.len() {
            // Shrinking: bucket j receives old buckets j, j + new, ... whole.
            for (i, b) in old.iter().enumerate() {
                let p = b.payload();
                if !p.is_empty() {
                    table[i & mask].append_encoded(p);
                }
            }
        } else {
            // Growing: new bucket j only receives entries of old bucket
            // j & (old - 1), so a chain whose entries all land in one new
            // bucket moves without copying (the common case); a chain that
            // splits is rebuilt per target.
            let mut scratch: Vec<(usize, &[u8])> = Vec::new();
            for b in old.iter_mut() {
                let first = match b.entries().next() {
                    None => continue,
                    Some(e) => hash_bytes(e) as usize & mask,
                };
                if b.entries()
                    .skip(1)
                    .all(|e| hash_bytes(e) as usize & mask == first)
                {
                    table[first] = std::mem::replace(b, Bucket::EMPTY);
                    continue;
                }
                scratch.clear();
                scratch.extend(b.entries().map(|e| (hash_bytes(e) as usize & mask, e)));
                scratch.sort_by_key(|x| x.0);
                let mut k = 0;
                while k < scratch.len() {
                    let t = scratch[k].0;
                    let mut end = k;
                    let mut bytes = 0;
                    while end < scratch.len() && scratch[end].0 == t {
                        bytes += entry_len(scratch[end].1);
                        end += 1;
                    }
                    let group = &scratch[k..end];
                    table[t].rebuild(bytes, |_, n| {
                        let mut off = 0;
                        for (_, e) in group {
                            off += put_entry(&mut n[off..], e);
                        }
                    });
                    k = end;
                }
            }
        }
        drop(old);
        self.buckets = table.into_boxed_slice();
    }

    /// Members in bucket order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.buckets.iter().flat_map(|b| b.entries())
    }

    /// A random member: a random non-empty bucket, then a random member of
    /// its chain (Redis's `dictGetRandomKey`). None when empty.
    pub fn random(&self, mut rnd: impl FnMut() -> u64) -> Option<&[u8]> {
        if self.len == 0 {
            return None;
        }
        let mask = self.buckets.len() as u64 - 1;
        let (idx, pick) =
            super::dict::fair_pick(&mut rnd, mask, |i| self.buckets[i].entries().count());
        self.buckets[idx].entries().nth(pick)
    }

    /// One SSCAN step: calls `f` for each member of the bucket at `cursor`
    /// and returns the next cursor (0 at the end), with the reverse-binary
    /// increment of Redis's `dictScan`.
    pub fn scan_step(&self, cursor: u64, mut f: impl FnMut(&[u8])) -> u64 {
        if self.buckets.is_empty() {
            return 0;
        }
        let mask = self.buckets.len() as u64 - 1;
        for e in self.buckets[(cursor & mask) as usize].entries() {
            f(e);
        }
        let mut v = cursor | !mask;
        v = v.reverse_bits();
        v = v.wrapping_add(1);
        v.reverse_bits()
    }

    /// Heap bytes (bucket array plus bucket allocations).
    pub fn mem_usage(&self) -> usize {
        self.buckets.len() * std::mem::size_of::<Bucket>()
            + self.buckets.iter().map(Bucket::alloc_size).sum::<usize>()
    }

    /// Heap bytes estimated from about `samples` members, as Redis's
    /// `objectComputeSize` samples a set's dict: the bucket array plus the
    /// average bytes per member of the first non-empty buckets (walked in
    /// table order until `samples` members were seen) times the member
    /// count. Equals [`Self::mem_usage`] when every member is sampled.
    pub fn mem_usage_sampled(&self, samples: usize) -> usize {
        let fixed = self.buckets.len() * std::mem::size_of::<Bucket>();
        let (mut bytes, mut seen) = (0usize, 0usize);
        for b in self.buckets.iter() {
            if seen >= samples.max(1) {
                break;
            }
            if b.0.is_some() {
                bytes += b.alloc_size();
                seen += b.entries().count();
            }
        }
        if seen == 0 || seen >= self.len {
            return fixed + bytes;
        }
        fixed + (bytes as f64 / seen as f64 * self.len as f64) as usize
    }
}

// -------------------------------------------------------------------- set

/// A set value: [`IntSet`] (`intset`) or [`SetTable`] (`hashtable`).
#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    /// `intset` encoding.
    Int(IntSet),
    /// `hashtable` encoding.
    Table(SetTable),
}

impl Default for SetValue {
    fn default() -> Self {
        SetValue::Int(IntSet::default())
    }
}

impl SetValue {
    /// An empty `intset` (Redis's `createIntsetObject`, used by the
    /// commands that build a result set member by member).
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty set of the encoding Redis's `setTypeCreate` picks for a set
    /// whose first member is `first`: `intset` for an integer, else
    /// `hashtable`.
    pub fn for_member(first: &[u8]) -> Self {
        if parse_i64(first).is_some() {
            SetValue::Int(IntSet::default())
        } else {
            SetValue::Table(SetTable::default())
        }
    }

    /// Number of members.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            SetValue::Int(i) => i.len(),
            SetValue::Table(t) => t.len(),
        }
    }

    /// True when empty (an empty set is deleted from the keyspace).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// OBJECT ENCODING name.
    pub fn encoding(&self) -> &'static str {
        match self {
            SetValue::Int(_) => "intset",
            SetValue::Table(_) => "hashtable",
        }
    }

    /// Converts an intset to a hashtable (`setTypeConvert`), presized.
    fn convert(&mut self) {
        if let SetValue::Int(is) = self {
            let mut t = SetTable::with_capacity(is.len());
            let mut b = itoa::Buffer::new();
            for v in is.iter() {
                t.insert(b.format(v).as_bytes());
            }
            *self = SetValue::Table(t);
        }
    }

    /// Adds `m` as Redis's `setTypeAdd`: an intset takes integers until it
    /// holds more than `max_intset` members (capped at 2^30), and converts
    /// to a hashtable for a non-integer or on overflow. True when added.
    pub fn add(&mut self, m: &[u8], max_intset: u64) -> bool {
        match self {
            SetValue::Table(t) => t.insert(m),
            SetValue::Int(is) => match parse_i64(m) {
                Some(v) => {
                    if !is.insert(v) {
                        return false;
                    }
                    if is.len() as u64 > max_intset.min(MAX_INTSET_ENTRIES_CAP) {
                        self.convert();
                    }
                    true
                }
                None => {
                    self.convert();
                    match self {
                        SetValue::Table(t) => t.insert(m),
                        SetValue::Int(_) => unreachable!("converted"),
                    }
                }
            },
        }
    }

    /// Removes `m`; true when it was a member.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        match self {
            SetValue::Table(t) => t.remove(m),
            SetValue::Int(is) => parse_i64(m).is_some_and(|v| is.remove(v)),
        }
    }

    /// True when `m` is a member.
    #[inline]
    pub fn contains(&self, m: &[u8]) -> bool {
        match self {
            SetValue::Table(t) => t.contains(m),
            SetValue::Int(is) => parse_i64(m).is_some_and(|v| is.contains(v)),
        }
    }

    /// True when `m` is a member (same as [`SetValue::contains`] without
    /// formatting an intset member first).
    #[inline]
    pub fn contains_member(&self, m: Member<'_>) -> bool {
        match (self, m) {
            (SetValue::Int(is), Member::Int(v)) => is.contains(v),
            (_, Member::Bytes(b)) => self.contains(b),
            (SetValue::Table(t), Member::Int(v)) => {
                t.contains(itoa::Buffer::new().format(v).as_bytes())
            }
        }
    }

    /// Members: ascending for an intset, bucket order for a hashtable.
    pub fn iter(&self) -> SetIter<'_> {
        match self {
            SetValue::Int(is) => SetIter::Int(is, 0),
            SetValue::Table(t) => SetIter::Table(Box::new(t.iter())),
        }
    }

    /// A random member (uniform for an intset, Redis's bucket-then-chain
    /// choice for a hashtable). None when empty.
    pub fn random(&self, mut rnd: impl FnMut() -> u64) -> Option<Member<'_>> {
        match self {
            SetValue::Int(is) => {
                if is.is_empty() {
                    None
                } else {
                    Some(Member::Int(is.get((rnd() % is.len() as u64) as usize)))
                }
            }
            SetValue::Table(t) => t.random(rnd).map(Member::Bytes),
        }
    }

    /// Approximate heap bytes used.
    pub fn mem_usage(&self) -> usize {
        match self {
            SetValue::Int(is) => is.mem_usage(),
            SetValue::Table(t) => t.mem_usage(),
        }
    }

    /// Heap bytes with a `hashtable` sampled over about `samples` members
    /// (see [`SetTable::mem_usage_sampled`]); an `intset` is exact.
    pub fn mem_usage_sampled(&self, samples: usize) -> usize {
        match self {
            SetValue::Int(is) => is.mem_usage(),
            SetValue::Table(t) => t.mem_usage_sampled(samples),
        }
    }
}

/// Iterator over a set's members (see [`SetValue::iter`]).
pub enum SetIter<'a> {
    /// Over an intset, at a position.
    Int(&'a IntSet, usize),
    /// Over a hashtable.
    Table(Box<dyn Iterator<Item = &'a [u8]> + 'a>),
}

impl<'a> Iterator for SetIter<'a> {
    type Item = Member<'a>;
    #[inline]
    fn next(&mut self) -> Option<Member<'a>> {
        match self {
            SetIter::Int(is, i) => {
                if *i < is.len() {
                    *i += 1;
                    Some(Member::Int(is.get(*i - 1)))
                } else {
                    None
                }
            }
            SetIter::Table(it) => it.next().map(Member::Bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn intset_widths_and_order() {
        let mut s = IntSet::default();
        for v in [5i64, -3, 100, 5, 0] {
            s.insert(v);
        }
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![-3, 0, 5, 100]);
        assert_eq!(s.mem_usage(), 1 + 4 * 2);
        assert!(s.insert(70000));
        assert_eq!(s.mem_usage(), 1 + 5 * 4);
        assert!(s.insert(i64::MIN));
        assert_eq!(s.mem_usage(), 1 + 6 * 8);
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            vec![i64::MIN, -3, 0, 5, 100, 70000]
        );
        assert!(s.contains(i64::MIN));
        assert!(!s.contains(i64::MAX));
        assert!(s.remove(0));
        assert!(!s.remove(0));
        assert_eq!(s.len(), 5);
        let mut small = IntSet::default();
        small.insert(1);
        assert!(!small.contains(1 << 40));
        assert!(!small.remove(1 << 40));
    }

    #[test]
    fn table_insert_remove_resize() {
        let mut t = SetTable::default();
        let mut model = BTreeSet::new();
        for i in 0..5000u32 {
            let m = format!("member:{i}").repeat((i % 7) as usize + 1);
            assert_eq!(t.insert(m.as_bytes()), model.insert(m.clone()));
        }
        // A member longer than 127 bytes needs a two-byte varint.
        let long = vec![b'x'; 300];
        assert!(t.insert(&long));
        model.insert(String::from_utf8(long.clone()).unwrap());
        assert_eq!(t.len(), model.len());
        for m in &model {
            assert!(t.contains(m.as_bytes()));
        }
        let got: BTreeSet<String> = t
            .iter()
            .map(|m| String::from_utf8(m.to_vec()).unwrap())
            .collect();
        assert_eq!(got, model);
        let c = t.clone();
        assert_eq!(c, t);
        for (n, m) in model.iter().enumerate() {
            if n % 10 != 0 {
                assert!(t.remove(m.as_bytes()));
                assert!(!t.remove(m.as_bytes()));
            }
        }
        assert_eq!(t.len(), model.len().div_ceil(10));
        assert!(t.buckets() <= 1024);
        for (n, m) in model.iter().enumerate() {
            assert_eq!(t.contains(m.as_bytes()), n % 10 == 0);
        }
        assert!(t.random(crate::util::rand_u64).is_some());
    }

    #[test]
    fn table_scan_covers_all() {
        let mut t = SetTable::default();
        for i in 0..1000 {
            t.insert(format!("{i}x").as_bytes());
        }
        let mut seen = BTreeSet::new();
        let mut c = 0;
        loop {
            c = t.scan_step(c, |m| {
                seen.insert(m.to_vec());
            });
            if c == 0 {
                break;
            }
        }
        assert_eq!(seen.len(), 1000);
    }

    #[test]
    fn set_conversion() {
        let mut s = SetValue::for_member(b"1");
        assert_eq!(s.encoding(), "intset");
        assert!(s.add(b"1", 3));
        assert!(s.add(b"2", 3));
        assert!(!s.add(b"2", 3));
        assert!(s.add(b"3", 3));
        assert_eq!(s.encoding(), "intset");
        assert!(s.add(b"4", 3));
        assert_eq!(s.encoding(), "hashtable");
        let mut s = SetValue::for_member(b"1");
        s.add(b"1", 512);
        s.add(b"01", 512);
        assert_eq!(s.encoding(), "hashtable");
        assert!(s.contains(b"1") && s.contains(b"01"));
        assert!(s.contains_member(Member::Int(1)));
        assert_eq!(SetValue::for_member(b"a").encoding(), "hashtable");
    }
}
