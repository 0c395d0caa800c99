//! The hash type, with Redis 7.0's two encodings (t_hash.c):
//!
//! - `listpack`: every field/value pair packed into one byte buffer, in
//!   insertion order (a new field goes to the end, an updated field keeps its
//!   place, as in Redis's listpack), so HGETALL/HKEYS/HVALS of a small hash
//!   reply in exactly Redis's order. Each string is a LEB128 length (one byte
//!   up to 127 bytes) followed by its bytes: one byte of overhead per string
//!   where Redis's listpack spends two (encoding byte and back-length).
//! - `hashtable`: [`PackedTable`], a chained hash table whose buckets are
//!   themselves packed buffers of the same pair format, so a field and its
//!   value cost their bytes plus two length bytes, with one heap allocation
//!   per non-empty bucket instead of Redis's three per field (dictEntry,
//!   field sds, value sds). Positions depend only on the field's hash and the
//!   table size, so HSCAN's reverse-binary cursor (Redis's `dictScan`) keeps
//!   its guarantee across growth and shrinking.
//!
//! A hash starts as `listpack` and becomes `hashtable` when it would hold
//! more than hash-max-listpack-entries fields or a field or value longer
//! than hash-max-listpack-value bytes ([`Limits`]); it never converts back,
//! as in Redis.
//!
//! A hash whose fields were given a TTL (Redis 7.4's hash-field expiration:
//! HEXPIRE, HSETEX, HGETEX...) is held as a [`PackedTable`] with a
//! [`TtlMeta`]: the [`FieldTtls`] index of the fields' expiry times, and
//! whether Redis would still call it `listpackex` (it reports so while the
//! hash is within the listpack limits, as Redis's listpack with TTLs). A
//! hash that never had a field TTL pays nothing (and `HashValue` keeps its
//! 16 bytes). Expired fields stay stored until a write or the active expiry
//! cycle deletes them; reads skip them (`*_live` methods take the time).

use super::dict::hash_bytes;
use std::collections::{BTreeSet, HashMap};

/// The conversion thresholds (hash-max-listpack-entries and
/// hash-max-listpack-value), read from the live configuration per command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most fields a `listpack` hash may hold.
    pub max_entries: u64,
    /// Longest field or value, in bytes, a `listpack` hash may hold.
    pub max_value: u64,
}

/// Largest total size of a listpack, bytes (Redis's `LISTPACK_MAX_SAFETY_SIZE`
/// check in `lpSafeToAdd`): a listpack that would grow beyond converts.
pub const LISTPACK_MAX_SAFE: usize = 1 << 30;

// ------------------------------------------------------------ packed pairs

/// Bytes used by the LEB128 length prefix of an `n`-byte string.
#[inline]
fn len_size(mut n: usize) -> usize {
    let mut s = 1;
    while n >= 0x80 {
        n >>= 7;
        s += 1;
    }
    s
}

/// Appends the LEB128 length prefix of `n`.
#[inline]
fn put_len(buf: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        buf.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    buf.push(n as u8);
}

/// Appends one string (length prefix + bytes).
#[inline]
fn put_str(buf: &mut Vec<u8>, s: &[u8]) {
    put_len(buf, s.len());
    buf.extend_from_slice(s);
}

/// Bytes one packed pair takes.
#[inline]
fn pair_size(f: &[u8], v: &[u8]) -> usize {
    len_size(f.len()) + f.len() + len_size(v.len()) + v.len()
}

/// Reads the string at `pos`: (start of its bytes, its length).
#[inline]
fn read_str(buf: &[u8], mut pos: usize) -> (usize, usize) {
    let mut n = 0usize;
    let mut shift = 0;
    loop {
        let b = buf[pos];
        pos += 1;
        n |= ((b & 0x7f) as usize) << shift;
        if b & 0x80 == 0 {
            return (pos, n);
        }
        shift += 7;
    }
}

/// One pair's location inside a packed buffer.
#[derive(Debug, Clone, Copy)]
struct PairPos {
    /// First byte of the pair (the field's length prefix).
    start: usize,
    /// First byte of the value's length prefix.
    value_hdr: usize,
    /// First byte of the value.
    value: usize,
    /// Value length.
    value_len: usize,
    /// One past the pair's last byte.
    end: usize,
}

/// Iterator over the pairs of a packed buffer.
#[derive(Debug, Clone)]
pub struct Pairs<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Pairs<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Pairs { buf, pos: 0 }
    }

    /// Next pair with its location.
    #[inline]
    fn next_pos(&mut self) -> Option<(&'a [u8], PairPos)> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let start = self.pos;
        let (fs, fl) = read_str(self.buf, start);
        let value_hdr = fs + fl;
        let (vs, vl) = read_str(self.buf, value_hdr);
        self.pos = vs + vl;
        Some((
            &self.buf[fs..fs + fl],
            PairPos {
                start,
                value_hdr,
                value: vs,
                value_len: vl,
                end: self.pos,
            },
        ))
    }
}

impl<'a> Iterator for Pairs<'a> {
    type Item = (&'a [u8], &'a [u8]);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let buf = self.buf;
        self.next_pos()
            .map(|(f, p)| (f, &buf[p.value..p.value + p.value_len]))
    }
}

/// Finds `field` in a packed buffer.
#[inline]
fn find(buf: &[u8], field: &[u8]) -> Option<PairPos> {
    let mut it = Pairs::new(buf);
    while let Some((f, p)) = it.next_pos() {
        if f == field {
            return Some(p);
        }
    }
    None
}

/// Sets `field` to `value` in a packed listpack buffer: an existing field
/// keeps its place (its value is replaced in place), a new pair is appended.
/// Grows the buffer by exactly what is needed. Returns true when new.
fn lp_set(b: &mut Vec<u8>, field: &[u8], value: &[u8]) -> bool {
    match find(b, field) {
        Some(p) => {
            let new_len = len_size(value.len()) + value.len();
            let old_len = p.end - p.value_hdr;
            if new_len > old_len {
                b.reserve_exact(new_len - old_len);
            }
            let mut enc = Vec::with_capacity(new_len);
            put_str(&mut enc, value);
            b.splice(p.value_hdr..p.end, enc);
            false
        }
        None => {
            b.reserve_exact(pair_size(field, value));
            put_str(b, field);
            put_str(b, value);
            true
        }
    }
}

/// Number of pairs in a packed buffer.
fn count_pairs(buf: &[u8]) -> usize {
    let mut it = Pairs::new(buf);
    let mut n = 0;
    while it.next_pos().is_some() {
        n += 1;
    }
    n
}

// ------------------------------------------------------------ packed table

/// Smallest table size (Redis's DICT_HT_INITIAL_SIZE).
const MIN_BUCKETS: usize = 4;

/// A chained hash table of field → value whose buckets are packed pair
/// buffers (one exact-size allocation per non-empty bucket).
///
/// Growth and shrinking follow Redis's dict for hashes: the table doubles
/// when an insert finds it full (load factor 1), and shrinks to the next
/// power of two above the number of fields when it is less than 10% full
/// after a deletion (`htNeedsResize`, HASHTABLE_MIN_FILL). Resizing is done
/// in one step (Redis rehashes incrementally).
#[derive(Debug, Clone, Default)]
pub struct PackedTable {
    buckets: Vec<Option<Box<[u8]>>>,
    len: usize,
    /// Field TTLs, once a field of this hash was given one.
    meta: Option<Box<TtlMeta>>,
}

/// Bucket index of a field hash for a table of `size` buckets.
#[inline]
fn bucket_of(h: u64, size: usize) -> usize {
    h as usize & (size - 1)
}

impl PackedTable {
    /// An empty table with room for `n` fields before it grows.
    pub fn with_capacity(n: usize) -> Self {
        let size = n.next_power_of_two().max(MIN_BUCKETS);
        let mut buckets = Vec::with_capacity(size);
        buckets.resize(size, None);
        PackedTable {
            buckets,
            len: 0,
            meta: None,
        }
    }

    /// Number of fields.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the table holds no field.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The table's shape: its buckets and the fields each chain holds
    /// (DEBUG HTSTATS-KEY).
    pub fn table_stats(&self) -> super::TableStats {
        let mut t = super::TableStats::default();
        for b in &self.buckets {
            t.add_bucket(b.as_deref().map_or(0, |b| Pairs::new(b).count()));
        }
        t
    }

    /// Number of buckets.
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }

    #[inline]
    fn bucket(&self, field: &[u8]) -> Option<usize> {
        if self.buckets.is_empty() {
            return None;
        }
        Some(bucket_of(hash_bytes(field), self.buckets.len()))
    }

    /// The value of `field`.
    #[inline]
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        let b = self.buckets[self.bucket(field)?].as_deref()?;
        let p = find(b, field)?;
        Some(&b[p.value..p.value + p.value_len])
    }

    /// Sets `field` to `value`; true when the field is new.
    pub fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        if let Some(i) = self.bucket(field) {
            if let Some(b) = self.buckets[i].as_mut() {
                if let Some(p) = find(b, field) {
                    if p.value_len == value.len() {
                        // Same length: overwrite in place (HINCRBY's usual case).
                        b[p.value..p.end].copy_from_slice(value);
                    } else {
                        let mut nb = Vec::with_capacity(
                            b.len() - (p.end - p.value_hdr) + len_size(value.len()) + value.len(),
                        );
                        nb.extend_from_slice(&b[..p.value_hdr]);
                        put_str(&mut nb, value);
                        nb.extend_from_slice(&b[p.end..]);
                        *b = nb.into_boxed_slice();
                    }
                    return false;
                }
            }
        }
        if self.len >= self.buckets.len() {
            self.resize((self.len + 1).next_power_of_two().max(MIN_BUCKETS));
        }
        let i = bucket_of(hash_bytes(field), self.buckets.len());
        let old = self.buckets[i].take();
        let old: &[u8] = old.as_deref().unwrap_or(&[]);
        let mut nb = Vec::with_capacity(old.len() + pair_size(field, value));
        nb.extend_from_slice(old);
        put_str(&mut nb, field);
        put_str(&mut nb, value);
        self.buckets[i] = Some(nb.into_boxed_slice());
        self.len += 1;
        true
    }

    /// Removes `field`; true when it was present.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let Some(i) = self.bucket(field) else {
            return false;
        };
        let Some(b) = self.buckets[i].as_ref() else {
            return false;
        };
        let Some(p) = find(b, field) else {
            return false;
        };
        if p.start == 0 && p.end == b.len() {
            self.buckets[i] = None;
        } else {
            let mut nb = Vec::with_capacity(b.len() - (p.end - p.start));
            nb.extend_from_slice(&b[..p.start]);
            nb.extend_from_slice(&b[p.end..]);
            self.buckets[i] = Some(nb.into_boxed_slice());
        }
        self.len -= 1;
        let size = self.buckets.len();
        if size > MIN_BUCKETS && self.len * 100 / size < 10 {
            self.resize(self.len.next_power_of_two().max(MIN_BUCKETS));
        }
        true
    }

    /// Rebuilds the table with `new_size` (a power of two) buckets.
    fn resize(&mut self, new_size: usize) {
        let old_size = self.buckets.len();
        if new_size == old_size {
            return;
        }
        let mut old = std::mem::take(&mut self.buckets);
        let mut table: Vec<Option<Box<[u8]>>> = Vec::with_capacity(new_size);
        table.resize(new_size, None);
        if new_size < old_size {
            // Shrinking: new bucket j gathers the old buckets whose index
            // has the same low bits, no rehashing needed.
            for (j, slot) in table.iter_mut().enumerate() {
                let total: usize = (j..old_size)
                    .step_by(new_size)
                    .map(|i| old[i].as_ref().map_or(0, |b| b.len()))
                    .sum();
                if total == 0 {
                    continue;
                }
                let mut nb = Vec::with_capacity(total);
                for i in (j..old_size).step_by(new_size) {
                    if let Some(b) = old[i].take() {
                        nb.extend_from_slice(&b);
                    }
                }
                *slot = Some(nb.into_boxed_slice());
            }
        } else {
            // Growing: every pair of an old bucket lands in a new bucket
            // with the same low bits; group them by rehashing.
            let mut scratch: Vec<(usize, usize, usize)> = Vec::new();
            for slot in old.iter_mut() {
                let Some(b) = slot.take() else {
                    continue;
                };
                scratch.clear();
                let mut it = Pairs::new(&b);
                while let Some((f, p)) = it.next_pos() {
                    scratch.push((bucket_of(hash_bytes(f), new_size), p.start, p.end));
                }
                scratch.sort_by_key(|e| e.0);
                let mut k = 0;
                while k < scratch.len() {
                    let idx = scratch[k].0;
                    let mut e = k;
                    let mut total = 0;
                    while e < scratch.len() && scratch[e].0 == idx {
                        total += scratch[e].2 - scratch[e].1;
                        e += 1;
                    }
                    let mut nb = Vec::with_capacity(total);
                    for &(_, s, t) in &scratch[k..e] {
                        nb.extend_from_slice(&b[s..t]);
                    }
                    table[idx] = Some(nb.into_boxed_slice());
                    k = e;
                }
            }
        }
        self.buckets = table;
    }

    /// Iterates over all pairs in bucket order.
    pub fn iter(&self) -> TableIter<'_> {
        TableIter {
            buckets: &self.buckets,
            idx: 0,
            cur: Pairs::new(&[]),
        }
    }

    /// One HSCAN step: calls `f` for every pair of the bucket at `cursor`
    /// and returns the next cursor (0 when the iteration is complete), with
    /// the reverse-binary increment of Redis's `dictScan`.
    pub fn scan_step<'a>(&'a self, cursor: u64, mut f: impl FnMut(&'a [u8], &'a [u8])) -> u64 {
        if self.buckets.is_empty() {
            return 0;
        }
        let mask = (self.buckets.len() - 1) as u64;
        if let Some(b) = self.buckets[(cursor & mask) as usize].as_deref() {
            for (k, v) in Pairs::new(b) {
                f(k, v);
            }
        }
        let mut v = cursor | !mask;
        v = v.reverse_bits();
        v = v.wrapping_add(1);
        v.reverse_bits()
    }

    /// A random pair, every pair equally likely: a random bucket and a
    /// random position below a chain-length bound (see
    /// [`super::dict::fair_pick`]). `rnd` supplies random numbers.
    pub fn random_pair(&self, mut rnd: impl FnMut() -> u64) -> Option<(&[u8], &[u8])> {
        if self.len == 0 {
            return None;
        }
        let mask = (self.buckets.len() - 1) as u64;
        let (idx, pick) = super::dict::fair_pick(&mut rnd, mask, |i| {
            self.buckets[i].as_deref().map_or(0, count_pairs)
        });
        self.buckets[idx]
            .as_deref()
            .and_then(|b| Pairs::new(b).nth(pick))
    }

    /// Approximate heap bytes: the bucket array plus every bucket buffer.
    pub fn mem_usage(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<Option<Box<[u8]>>>()
            + self
                .buckets
                .iter()
                .map(|b| b.as_ref().map_or(0, |b| b.len()))
                .sum::<usize>()
    }

    /// Heap bytes estimated from about `samples` fields, as Redis's
    /// `objectComputeSize` samples a hash's dict: the bucket array plus the
    /// average bytes per field of the first non-empty buckets (walked in
    /// table order until `samples` fields were seen) times the field
    /// count. Equals [`Self::mem_usage`] when every field is sampled.
    pub fn mem_usage_sampled(&self, samples: usize) -> usize {
        let fixed = self.buckets.capacity() * std::mem::size_of::<Option<Box<[u8]>>>();
        let (mut bytes, mut seen) = (0usize, 0usize);
        for b in self.buckets.iter().flatten() {
            if seen >= samples.max(1) {
                break;
            }
            bytes += b.len();
            seen += count_pairs(b);
        }
        if seen == 0 || seen >= self.len {
            return fixed + bytes;
        }
        fixed + (bytes as f64 / seen as f64 * self.len as f64) as usize
    }
}

/// Iterator over the pairs of a [`PackedTable`].
pub struct TableIter<'a> {
    buckets: &'a [Option<Box<[u8]>>],
    idx: usize,
    cur: Pairs<'a>,
}

impl<'a> Iterator for TableIter<'a> {
    type Item = (&'a [u8], &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(p) = self.cur.next() {
                return Some(p);
            }
            let b = self.buckets.get(self.idx)?;
            self.idx += 1;
            if let Some(b) = b.as_deref() {
                self.cur = Pairs::new(b);
            }
        }
    }
}

// ------------------------------------------------------------ the value

/// A hash value: `listpack` (packed pairs in insertion order) or
/// `hashtable` ([`PackedTable`]).
#[derive(Debug, Clone)]
pub enum HashValue {
    /// `listpack` encoding: packed pairs, insertion order, in an exactly
    /// sized boxed slice (16 bytes inline, no spare capacity), so that
    /// `Value::Hash` holds it without another box.
    Listpack(Box<[u8]>),
    /// `hashtable` encoding (also every hash with field TTLs).
    Table(Box<PackedTable>),
}

/// What a hash with field TTLs carries besides its fields (Redis 7.4's
/// expiration metadata). Stays once added (as Redis's `listpackex` stays so
/// when its last TTL goes).
#[derive(Debug, Clone, Default)]
pub struct TtlMeta {
    /// Expiry times of the fields that have one.
    pub ttls: FieldTtls,
    /// Reported as `listpackex` (it would be a listpack in Redis: made
    /// volatile as a listpack, and not grown past the listpack limits
    /// since).
    pub listpackex: bool,
}

/// Expiry times (ms since the epoch) of the fields of a hash that have one,
/// indexed both by field and by time (the earliest first, for active
/// expiry and the hash's next expiry).
#[derive(Debug, Clone, Default)]
pub struct FieldTtls {
    by_field: HashMap<Box<[u8]>, u64, foldhash::fast::RandomState>,
    by_time: BTreeSet<(u64, Box<[u8]>)>,
}

impl FieldTtls {
    /// Number of fields with a TTL.
    pub fn len(&self) -> usize {
        self.by_field.len()
    }

    /// True when no field has a TTL.
    pub fn is_empty(&self) -> bool {
        self.by_field.is_empty()
    }

    /// The expiry time of `field`, if it has one.
    #[inline]
    pub fn get(&self, field: &[u8]) -> Option<u64> {
        self.by_field.get(field).copied()
    }

    /// Sets `field`'s expiry time to `at` (ms).
    pub fn set(&mut self, field: &[u8], at: u64) {
        if let Some(old) = self.by_field.get_mut(field) {
            let prev = std::mem::replace(old, at);
            let k = self
                .by_time
                .take(&(prev, Box::<[u8]>::from(field)))
                .map(|(_, f)| f)
                .unwrap_or_else(|| field.into());
            self.by_time.insert((at, k));
        } else {
            self.by_field.insert(field.into(), at);
            self.by_time.insert((at, field.into()));
        }
    }

    /// Removes `field`'s TTL; its former expiry time, if it had one.
    pub fn remove(&mut self, field: &[u8]) -> Option<u64> {
        let at = self.by_field.remove(field)?;
        self.by_time.remove(&(at, Box::<[u8]>::from(field)));
        Some(at)
    }

    /// The earliest expiry time.
    pub fn min(&self) -> Option<u64> {
        self.by_time.first().map(|(t, _)| *t)
    }

    /// Fields whose expiry time is before `now` (expired), earliest first.
    pub fn expired(&self, now: u64) -> impl Iterator<Item = &[u8]> {
        self.by_time
            .iter()
            .take_while(move |(t, _)| *t < now)
            .map(|(_, f)| &f[..])
    }

    /// (field, expiry time) pairs, earliest first.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.by_time.iter().map(|(t, f)| (&f[..], *t))
    }

    /// Approximate heap bytes: each TTL'd field's name twice plus the two
    /// index entries.
    pub fn mem_usage(&self) -> usize {
        self.by_field.keys().map(|f| 2 * f.len() + 72).sum()
    }
}

impl Default for HashValue {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for HashValue {
    /// Same fields with the same values (encoding and order ignored).
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(f, v)| other.get(f) == Some(v))
    }
}

impl HashValue {
    /// An empty `listpack` hash (allocates nothing).
    pub fn new() -> Self {
        HashValue::Listpack(Box::default())
    }

    /// Number of fields (O(n) for `listpack`, which is small).
    pub fn len(&self) -> usize {
        match self {
            HashValue::Listpack(b) => count_pairs(b),
            HashValue::Table(t) => t.len(),
        }
    }

    /// True when empty (an empty hash is deleted from the keyspace).
    pub fn is_empty(&self) -> bool {
        match self {
            HashValue::Listpack(b) => b.is_empty(),
            HashValue::Table(t) => t.is_empty(),
        }
    }

    /// OBJECT ENCODING name: `listpack`, `hashtable`, or `listpackex` for
    /// a listpack with field TTLs (Redis 7.4).
    pub fn encoding(&self) -> &'static str {
        match self {
            HashValue::Listpack(_) => "listpack",
            HashValue::Table(t) if t.meta.as_ref().is_some_and(|m| m.listpackex) => "listpackex",
            HashValue::Table(_) => "hashtable",
        }
    }

    /// True for the `listpack` encoding.
    pub fn is_listpack(&self) -> bool {
        matches!(self, HashValue::Listpack(_))
    }

    /// The value of `field`, if present.
    #[inline]
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            HashValue::Listpack(b) => find(b, field).map(|p| &b[p.value..p.value + p.value_len]),
            HashValue::Table(t) => t.get(field),
        }
    }

    /// True when `field` is present.
    #[inline]
    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Converts a `listpack` hash to `hashtable` (Redis's `hashTypeConvert`);
    /// no-op for a `hashtable`.
    pub fn convert(&mut self) {
        if let HashValue::Listpack(b) = self {
            let mut t = PackedTable::with_capacity(count_pairs(b));
            for (f, v) in Pairs::new(b) {
                t.set(f, v);
            }
            *self = HashValue::Table(Box::new(t));
        }
    }

    /// Redis's `hashTypeTryConversion`: before a write of the strings in
    /// `args`, converts a `listpack` hash when any of them is longer than
    /// `limits.max_value` or the listpack would pass [`LISTPACK_MAX_SAFE`].
    pub fn try_conversion<'a>(&mut self, args: impl Iterator<Item = &'a [u8]>, limits: Limits) {
        let b = match self {
            HashValue::Listpack(b) => b,
            HashValue::Table(t) => {
                if let Some(m) = t.meta.as_mut().filter(|m| m.listpackex) {
                    let mut sum = 0usize;
                    for a in args {
                        sum = sum.saturating_add(a.len());
                        if a.len() as u64 > limits.max_value {
                            m.listpackex = false;
                            return;
                        }
                    }
                    // The listpack Redis would hold: about the pairs' bytes.
                    if sum > LISTPACK_MAX_SAFE {
                        m.listpackex = false;
                    }
                }
                return;
            }
        };
        let mut sum = 0usize;
        for a in args {
            if a.len() as u64 > limits.max_value {
                self.convert();
                return;
            }
            sum = sum.saturating_add(a.len());
        }
        if b.len().saturating_add(sum) > LISTPACK_MAX_SAFE {
            self.convert();
        }
    }

    /// Sets `field` to `value` (Redis's `hashTypeSet`): an existing field
    /// keeps its position in a `listpack`, a new one is appended. A
    /// `listpack` converts first when the field or value is longer than
    /// `limits.max_value`, and after the write (insert or update) when it
    /// holds more than `limits.max_entries` fields. Returns true when the
    /// field is new. A TTL the field had is discarded (Redis's
    /// `hashTypeSet` without `HASH_SET_KEEP_TTL`): see
    /// [`set_keep_ttl`](Self::set_keep_ttl).
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: Limits) -> bool {
        if let HashValue::Table(t) = self {
            if let Some(m) = t.meta.as_mut() {
                m.ttls.remove(field);
            }
            return table_set(t, field, value, limits);
        }
        if self.is_listpack()
            && (field.len() as u64 > limits.max_value || value.len() as u64 > limits.max_value)
        {
            self.convert();
        }
        match self {
            HashValue::Table(t) => t.set(field, value),
            HashValue::Listpack(b) => {
                let mut v = std::mem::take(b).into_vec();
                let is_new = lp_set(&mut v, field, value);
                // Checked after updates too (the threshold may have been
                // lowered by CONFIG SET since the hash was built).
                let over = count_pairs(&v) as u64 > limits.max_entries;
                *b = v.into_boxed_slice();
                if over {
                    self.convert();
                }
                is_new
            }
        }
    }

    /// Sets several pairs as HSET does: [`try_conversion`](Self::try_conversion)
    /// over all of them, then [`set`](Self::set) each in order. A `listpack`
    /// reserves room for all of them at once (and gives back what updates
    /// did not use), so a multi-field HSET reallocates once instead of once
    /// per field. Returns how many fields were new.
    pub fn set_many<'a, I>(&mut self, pairs: I, limits: Limits) -> usize
    where
        I: Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
    {
        if let HashValue::Table(t) = self {
            if let Some(m) = t.meta.as_mut() {
                for (f, _) in pairs.clone() {
                    m.ttls.remove(f);
                }
            }
        }
        self.try_conversion(pairs.clone().flat_map(|(f, v)| [f, v]), limits);
        let mut created = 0;
        let mut pairs = pairs;
        let mut convert = false;
        if let HashValue::Listpack(b) = self {
            // try_conversion checked every length, so only the entry count
            // can force a conversion from here on.
            let add: usize = pairs.clone().map(|(f, v)| pair_size(f, v)).sum();
            let mut buf = std::mem::take(b).into_vec();
            buf.reserve_exact(add);
            let mut n = count_pairs(&buf) as u64;
            for (f, v) in pairs.by_ref() {
                let new = lp_set(&mut buf, f, v);
                created += new as usize;
                n += new as u64;
                if n > limits.max_entries {
                    convert = true;
                    break;
                }
            }
            // into_boxed_slice gives back what updates did not use.
            *b = buf.into_boxed_slice();
            if !convert {
                return created;
            }
        }
        if convert {
            self.convert();
        }
        for (f, v) in pairs {
            created += self.set(f, v, limits) as usize;
        }
        created
    }

    /// Removes `field`; true when it was present. The caller deletes the key
    /// when the hash becomes empty.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            HashValue::Listpack(b) => match find(b, field) {
                Some(p) => {
                    let mut v = std::mem::take(b).into_vec();
                    v.drain(p.start..p.end);
                    *b = v.into_boxed_slice();
                    true
                }
                None => false,
            },
            HashValue::Table(t) => {
                if let Some(m) = t.meta.as_mut() {
                    m.ttls.remove(field);
                }
                t.remove(field)
            }
        }
    }

    /// Iterates over (field, value) pairs: insertion order for `listpack`,
    /// bucket order for `hashtable`.
    pub fn iter(&self) -> Iter<'_> {
        match self {
            HashValue::Listpack(b) => Iter::Listpack(Pairs::new(b)),
            HashValue::Table(t) => Iter::Table(t.iter()),
        }
    }

    /// A random pair (None when empty). `rnd` supplies random numbers.
    pub fn random_pair(&self, mut rnd: impl FnMut() -> u64) -> Option<(&[u8], &[u8])> {
        match self {
            HashValue::Listpack(b) => {
                let n = count_pairs(b);
                if n == 0 {
                    return None;
                }
                Pairs::new(b).nth((rnd() % n as u64) as usize)
            }
            HashValue::Table(t) => t.random_pair(rnd),
        }
    }

    /// Approximate heap bytes used.
    pub fn mem_usage(&self) -> usize {
        match self {
            HashValue::Listpack(b) => b.len(),
            HashValue::Table(t) => {
                std::mem::size_of::<PackedTable>() + t.mem_usage() + meta_usage(t)
            }
        }
    }

    /// Heap bytes with a `hashtable` sampled over about `samples` fields
    /// (see [`PackedTable::mem_usage_sampled`]); a `listpack` is exact.
    pub fn mem_usage_sampled(&self, samples: usize) -> usize {
        match self {
            HashValue::Listpack(b) => b.len(),
            HashValue::Table(t) => {
                std::mem::size_of::<PackedTable>() + t.mem_usage_sampled(samples) + meta_usage(t)
            }
        }
    }

    /// Bytes of the RDB serialization (DEBUG OBJECT serializedlength):
    /// a listpack blob for `listpack`, length-prefixed strings otherwise.
    pub fn serialized_len(&self) -> usize {
        fn rdb_len(n: usize) -> usize {
            if n < 1 << 6 {
                1
            } else if n < 1 << 14 {
                2
            } else if n <= u32::MAX as usize {
                5
            } else {
                9
            }
        }
        match self {
            HashValue::Listpack(b) => {
                // Redis's listpack: 6-byte header, end byte, per string an
                // encoding byte (+ up to 4 more for long strings) and a
                // back-length of 1..5 bytes.
                let mut n = 7;
                for (f, v) in Pairs::new(b) {
                    for s in [f, v] {
                        let hdr = if s.len() < 64 {
                            1
                        } else if s.len() < 4096 {
                            2
                        } else {
                            5
                        };
                        let body = hdr + s.len();
                        n += body + len_size(body);
                    }
                }
                rdb_len(n) + n
            }
            HashValue::Table(t) => {
                rdb_len(t.len())
                    + t.iter()
                        .map(|(f, v)| rdb_len(f.len()) + f.len() + rdb_len(v.len()) + v.len())
                        .sum::<usize>()
            }
        }
    }
}

/// Heap bytes of a table's TTL metadata.
fn meta_usage(t: &PackedTable) -> usize {
    t.meta
        .as_ref()
        .map_or(0, |m| std::mem::size_of::<TtlMeta>() + m.ttls.mem_usage())
}

/// Sets a pair in a table, clearing its `listpackex` mark when the hash
/// passes the listpack limits (Redis converts a `listpackex` then).
fn table_set(t: &mut PackedTable, field: &[u8], value: &[u8], limits: Limits) -> bool {
    let new = t.set(field, value);
    if let Some(m) = t.meta.as_mut().filter(|m| m.listpackex) {
        if field.len() as u64 > limits.max_value
            || value.len() as u64 > limits.max_value
            || t.len as u64 > limits.max_entries
        {
            m.listpackex = false;
        }
    }
    new
}

impl HashValue {
    /// The field TTLs, when a field of the hash was ever given one.
    #[inline]
    pub fn ttls(&self) -> Option<&FieldTtls> {
        match self {
            HashValue::Table(t) => t.meta.as_ref().map(|m| &m.ttls),
            _ => None,
        }
    }

    /// True when the hash carries TTL metadata (Redis's `listpackex`, or a
    /// hashtable with expiration metadata).
    pub fn is_volatile(&self) -> bool {
        matches!(self, HashValue::Table(t) if t.meta.is_some())
    }

    /// Adds TTL metadata (Redis's conversion to `listpackex`, or the
    /// attachment of expiration metadata to a hashtable): a `listpack`
    /// becomes a table reported as `listpackex`.
    pub fn make_volatile(&mut self) {
        let was_listpack = self.is_listpack();
        self.convert();
        if let HashValue::Table(t) = self {
            if t.meta.is_none() {
                t.meta = Some(Box::new(TtlMeta {
                    ttls: FieldTtls::default(),
                    listpackex: was_listpack,
                }));
            }
        }
    }

    /// True for a hash Redis would hold as `listpackex` (RDB type
    /// `HASH_LISTPACK_EX`).
    pub fn is_listpackex(&self) -> bool {
        matches!(self, HashValue::Table(t) if t.meta.as_ref().is_some_and(|m| m.listpackex))
    }

    /// `field`'s expiry time (ms since the epoch), if it has one.
    #[inline]
    pub fn field_ttl(&self, field: &[u8]) -> Option<u64> {
        self.ttls().and_then(|t| t.get(field))
    }

    /// Sets the expiry time of the (present) field `field` to `at` ms,
    /// adding TTL metadata when needed.
    pub fn set_field_ttl(&mut self, field: &[u8], at: u64) {
        self.make_volatile();
        if let HashValue::Table(t) = self {
            if let Some(m) = t.meta.as_mut() {
                m.ttls.set(field, at);
            }
        }
    }

    /// Removes `field`'s TTL; true when it had one.
    pub fn persist_field(&mut self, field: &[u8]) -> bool {
        match self {
            HashValue::Table(t) => t
                .meta
                .as_mut()
                .is_some_and(|m| m.ttls.remove(field).is_some()),
            _ => false,
        }
    }

    /// The earliest expiry time of a field, if any has a TTL.
    #[inline]
    pub fn min_field_ttl(&self) -> Option<u64> {
        self.ttls().and_then(FieldTtls::min)
    }

    /// True when `field` has a TTL before `now` (ms): it is logically gone
    /// though still stored (Redis's `hashTypeIsExpired`).
    #[inline]
    pub fn is_expired(&self, field: &[u8], now: u64) -> bool {
        self.ttls()
            .is_some_and(|t| t.get(field).is_some_and(|at| at < now))
    }

    /// True when some field has expired at `now`.
    #[inline]
    pub fn any_expired(&self, now: u64) -> bool {
        self.min_field_ttl().is_some_and(|t| t < now)
    }

    /// Sets `field` to `value` keeping the TTL it has (Redis's
    /// `HASH_SET_KEEP_TTL`: HINCRBY, HINCRBYFLOAT, HSETEX KEEPTTL).
    pub fn set_keep_ttl(&mut self, field: &[u8], value: &[u8], limits: Limits) -> bool {
        match self {
            HashValue::Table(t) if t.meta.is_some() => table_set(t, field, value, limits),
            _ => self.set(field, value, limits),
        }
    }

    /// The value of `field` unless it is missing or expired at `now`.
    #[inline]
    pub fn get_live(&self, field: &[u8], now: u64) -> Option<&[u8]> {
        if self.is_expired(field, now) {
            return None;
        }
        self.get(field)
    }

    /// Pairs whose field has not expired at `now`.
    pub fn iter_live(&self, now: u64) -> impl Iterator<Item = (&[u8], &[u8])> {
        let ttls = self.ttls().filter(|t| t.min().is_some_and(|m| m < now));
        self.iter()
            .filter(move |(f, _)| ttls.is_none_or(|t| t.get(f).is_none_or(|at| at >= now)))
    }

    /// Number of fields not expired at `now`.
    pub fn live_len(&self, now: u64) -> usize {
        match self.ttls() {
            Some(t) => self.len() - t.expired(now).count(),
            None => self.len(),
        }
    }

    /// Fields expired at `now` (copies, earliest first).
    pub fn expired_fields(&self, now: u64) -> Vec<Box<[u8]>> {
        match self.ttls() {
            Some(t) => t.expired(now).map(Box::from).collect(),
            None => Vec::new(),
        }
    }
}

/// Iterator over a [`HashValue`]'s pairs.
pub enum Iter<'a> {
    /// Over a `listpack`.
    Listpack(Pairs<'a>),
    /// Over a `hashtable`.
    Table(TableIter<'a>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Listpack(p) => p.next(),
            Iter::Table(t) => t.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    const BIG: Limits = Limits {
        max_entries: u64::MAX,
        max_value: u64::MAX,
    };
    const SMALL: Limits = Limits {
        max_entries: 4,
        max_value: 8,
    };

    #[test]
    fn sizes_stay_small() {
        assert!(std::mem::size_of::<HashValue>() <= 24);
    }

    #[test]
    fn varint_lengths() {
        for n in [
            0usize,
            1,
            127,
            128,
            300,
            16383,
            16384,
            1 << 20,
            usize::MAX >> 1,
        ] {
            let mut b = Vec::new();
            put_len(&mut b, n);
            assert_eq!(b.len(), len_size(n));
            assert_eq!(read_str(&b, 0), (b.len(), n));
        }
    }

    #[test]
    fn listpack_keeps_insertion_order() {
        let mut h = HashValue::new();
        assert!(h.set(b"b", b"1", BIG));
        assert!(h.set(b"a", b"2", BIG));
        assert!(h.set(b"c", b"3", BIG));
        assert!(!h.set(b"a", b"a much longer value than before", BIG));
        let v: Vec<_> = h.iter().collect();
        assert_eq!(
            v,
            vec![
                (&b"b"[..], &b"1"[..]),
                (b"a", b"a much longer value than before"),
                (b"c", b"3")
            ]
        );
        assert!(h.remove(b"b"));
        assert!(!h.remove(b"b"));
        assert_eq!(h.len(), 2);
        assert_eq!(h.get(b"c"), Some(&b"3"[..]));
        assert_eq!(h.encoding(), "listpack");
        assert!(h.remove(b"a") && h.remove(b"c"));
        assert!(h.is_empty());
    }

    #[test]
    fn converts_on_thresholds() {
        let mut h = HashValue::new();
        for i in 0..4 {
            h.set(format!("f{i}").as_bytes(), b"v", SMALL);
        }
        assert_eq!(h.encoding(), "listpack");
        h.set(b"f4", b"v", SMALL);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), 5);

        let mut h = HashValue::new();
        h.set(b"f", b"12345678", SMALL);
        assert_eq!(h.encoding(), "listpack");
        h.set(b"f", b"123456789", SMALL);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.get(b"f"), Some(&b"123456789"[..]));

        let mut h = HashValue::new();
        h.try_conversion([&b"short"[..], b"longer than eight"].into_iter(), SMALL);
        assert_eq!(h.encoding(), "hashtable");
    }

    #[test]
    fn table_matches_a_model() {
        let mut t = PackedTable::default();
        let mut model: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
        let mut seed = 7u64;
        let mut rnd = || {
            seed = crate::util::xorshift64(seed);
            seed
        };
        for step in 0..20000 {
            let k = format!("k{}", rnd() % 3000).into_bytes();
            match rnd() % 4 {
                0 | 1 => {
                    let v = vec![b'x'; (rnd() % 200) as usize];
                    assert_eq!(t.set(&k, &v), model.insert(k.clone(), v).is_none());
                }
                2 => assert_eq!(t.remove(&k), model.remove(&k).is_some()),
                _ => assert_eq!(t.get(&k), model.get(&k).map(Vec::as_slice)),
            }
            if step % 5000 == 0 {
                // Drain most of it to exercise shrinking.
                let keys: Vec<_> = model.keys().cloned().collect();
                for k in keys.iter().skip(10) {
                    assert!(t.remove(k));
                    model.remove(k);
                }
                assert!(t.buckets() <= 64);
            }
            assert_eq!(t.len(), model.len());
        }
        let all: HashMap<Vec<u8>, Vec<u8>> =
            t.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        assert_eq!(all, model);
    }

    #[test]
    fn scan_returns_everything_across_resizes() {
        let mut t = PackedTable::default();
        for i in 0..500 {
            t.set(format!("stable:{i}").as_bytes(), b"v");
        }
        let mut seen = HashSet::new();
        let mut cursor = 0;
        let mut step = 0;
        loop {
            cursor = t.scan_step(cursor, |k, _| {
                seen.insert(k.to_vec());
            });
            step += 1;
            if step % 3 == 0 {
                for j in 0..300 {
                    t.set(format!("churn:{step}:{j}").as_bytes(), b"v");
                }
            } else if step % 3 == 1 {
                let victims: Vec<Vec<u8>> = t
                    .iter()
                    .filter(|(k, _)| k.starts_with(b"churn"))
                    .map(|(k, _)| k.to_vec())
                    .collect();
                for k in victims {
                    t.remove(&k);
                }
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..500 {
            assert!(seen.contains(format!("stable:{i}").as_bytes()));
        }
    }

    #[test]
    fn random_pairs_cover_all() {
        let mut h = HashValue::new();
        for i in 0..50 {
            h.set(format!("f{i}").as_bytes(), b"v", SMALL);
        }
        let mut seen = HashSet::new();
        for _ in 0..5000 {
            seen.insert(h.random_pair(crate::util::rand_u64).unwrap().0.to_vec());
        }
        assert_eq!(seen.len(), 50);
        assert!(HashValue::new()
            .random_pair(crate::util::rand_u64)
            .is_none());
    }

    #[test]
    fn equality_ignores_encoding() {
        let mut a = HashValue::new();
        let mut b = HashValue::new();
        a.set(b"x", b"1", BIG);
        a.set(b"y", b"2", BIG);
        b.set(b"y", b"2", BIG);
        b.set(b"x", b"1", BIG);
        b.convert();
        assert_eq!(a, b);
        b.set(b"x", b"3", BIG);
        assert_ne!(a, b);
    }
}
