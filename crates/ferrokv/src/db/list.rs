//! The list type. Redis 7.0 stores every list as a quicklist (a linked list
//! of listpack nodes, t_list.c / quicklist.c) and OBJECT ENCODING always
//! reports `quicklist`; this module keeps the same shape with its own
//! layout.
//!
//! A [`ListValue`] is a `VecDeque` of [`Node`]s; each node is one packed
//! byte buffer of entries, so a list costs one heap allocation per node
//! (up to 8 KB at the default `list-max-listpack-size -2`), not one per
//! element. Node size follows `list-max-listpack-size` as Redis's
//! `quicklistNodeExceedsLimit`: a positive fill is a maximum entry count per
//! node (with an 8 KB safety limit on bytes), -1..-5 are 4/8/16/32/64 KB
//! byte limits. An element too large for any node gets a node of its own.
//!
//! Entry layout (ours, not listpack's): a tag byte, the payload, then the
//! entry's size (tag + payload) as a "back length" readable from its end,
//! so entries can be walked in both directions and popped at either end in
//! O(1) (plus a memmove of at most one node for pushes/pops at the head).
//!
//! | tag            | meaning                                          |
//! |----------------|--------------------------------------------------|
//! | `0x00..=0x7F`  | integer 0..127 (no payload)                      |
//! | `0x80..=0xBF`  | string of `tag & 0x3F` (0..63) bytes             |
//! | `0xC0..=0xDF`  | integer 0..8191: `(tag & 0x1F) << 8 | next byte`  |
//! | `0xE0..=0xE7`  | signed integer in `(tag & 7) + 1` bytes, LE       |
//! | `0xF0`         | string, u16 LE length                            |
//! | `0xF1`         | string, u32 LE length                            |
//! | `0xF2`         | string, u64 LE length                            |
//!
//! Integers are stored only for elements whose bytes are the canonical
//! decimal form of an i64 (Redis's `string2ll`), so every element reads
//! back byte-identical. The back length is the entry size in 7-bit groups,
//! least significant group last, high bit set on every group but the most
//! significant one.

use std::collections::VecDeque;

/// Byte limit applied to every node whatever the fill (Redis's
/// SIZE_SAFETY_LIMIT, quicklist.c).
pub const SIZE_SAFETY_LIMIT: usize = 8192;

/// Redis 7.0's default plain-node threshold (quicklist.c
/// `packed_threshold`, 1 GB).
pub const PACKED_THRESHOLD_DEFAULT: u64 = 1 << 30;

/// DEBUG QUICKLIST-PACKED-THRESHOLD's value (quicklist.c
/// `packed_threshold`, process-wide as there). Redis 7.0 stores an element
/// at least this large in a "plain" node of its own; ferrokv gives an
/// element a node of its own when it does not fit the node limit instead
/// (see the module documentation), so the value is kept and validated but
/// does not change how lists are laid out.
static PACKED_THRESHOLD: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(PACKED_THRESHOLD_DEFAULT);

/// Sets the plain-node threshold as Redis's
/// `quicklistisSetPackedThreshold`: false (unchanged) above 4 GB - 1 MB;
/// 0 restores the default.
pub fn set_packed_threshold(sz: u64) -> bool {
    if sz > (1u64 << 32) - (1 << 20) {
        return false;
    }
    let v = if sz == 0 {
        PACKED_THRESHOLD_DEFAULT
    } else {
        sz
    };
    PACKED_THRESHOLD.store(v, std::sync::atomic::Ordering::Relaxed);
    true
}

/// The plain-node threshold last set ([`set_packed_threshold`]).
pub fn packed_threshold() -> u64 {
    PACKED_THRESHOLD.load(std::sync::atomic::Ordering::Relaxed)
}

/// Byte limits of the negative fills -1..-5 (quicklist.c optimization_level).
const SIZE_CLASSES: [usize; 5] = [4096, 8192, 16384, 32768, 65536];

/// One element as stored: bytes or an integer (whose string form is the
/// element).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem<'a> {
    /// A string element.
    Bytes(&'a [u8]),
    /// An element that is the decimal form of this integer.
    Int(i64),
}

impl Elem<'_> {
    /// The element's bytes, owned.
    pub fn to_vec(&self) -> Vec<u8> {
        match *self {
            Elem::Bytes(b) => b.to_vec(),
            Elem::Int(n) => itoa::Buffer::new().format(n).as_bytes().to_vec(),
        }
    }

    /// True when the element's bytes equal `v`.
    pub fn eq_bytes(&self, v: &[u8]) -> bool {
        match *self {
            Elem::Bytes(b) => b == v,
            Elem::Int(n) => itoa::Buffer::new().format(n).as_bytes() == v,
        }
    }

    /// Calls `f` with the element's bytes (no allocation).
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match *self {
            Elem::Bytes(b) => f(b),
            Elem::Int(n) => f(itoa::Buffer::new().format(n).as_bytes()),
        }
    }

    /// Length of the element's bytes.
    pub fn byte_len(&self) -> usize {
        match *self {
            Elem::Bytes(b) => b.len(),
            Elem::Int(n) => itoa::Buffer::new().format(n).len(),
        }
    }
}

/// Which end of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Head (LEFT, index 0).
    Left,
    /// Tail (RIGHT, index -1).
    Right,
}

// ------------------------------------------------------------ entry codec

/// Integer value of `v` when `v` is the canonical decimal form of an i64.
#[inline]
fn as_int(v: &[u8]) -> Option<i64> {
    if v.is_empty() || v.len() > 20 {
        return None;
    }
    // parse_i64 is string2ll: canonical forms only, so the int round-trips.
    crate::util::parse_i64(v)
}

/// Size in bytes of the back length for an entry of `n` bytes.
#[inline]
fn backlen_size(n: usize) -> usize {
    let mut n = n >> 7;
    let mut s = 1;
    while n > 0 {
        s += 1;
        n >>= 7;
    }
    s
}

#[inline]
fn write_backlen(n: usize, out: &mut Vec<u8>) {
    let k = backlen_size(n);
    // Most significant group first; every group but the most significant
    // carries the continuation bit.
    for i in (0..k).rev() {
        let g = ((n >> (7 * i)) & 0x7F) as u8;
        out.push(if i == k - 1 { g } else { g | 0x80 });
    }
}

/// Reads the back length ending just before `end`: (entry size, back
/// length size).
#[inline]
fn read_backlen(buf: &[u8], end: usize) -> (usize, usize) {
    let mut v = 0usize;
    let mut shift = 0;
    let mut p = end;
    loop {
        p -= 1;
        let b = buf[p];
        v |= ((b & 0x7F) as usize) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            break;
        }
    }
    (v, end - p)
}

/// Size of the tag and payload of `v`.
#[inline]
fn body_size(v: &[u8]) -> usize {
    if let Some(n) = as_int(v) {
        return int_body_size(n);
    }
    let l = v.len();
    if l <= 63 {
        1 + l
    } else if l <= u16::MAX as usize {
        3 + l
    } else if l <= u32::MAX as usize {
        5 + l
    } else {
        9 + l
    }
}

#[inline]
fn int_body_size(n: i64) -> usize {
    if (0..=127).contains(&n) {
        1
    } else if (0..=8191).contains(&n) {
        2
    } else {
        1 + signed_width(n)
    }
}

/// Bytes needed to store `n` as a sign-extended little-endian integer.
#[inline]
fn signed_width(n: i64) -> usize {
    let mut w = 1;
    while w < 8 {
        let bits = 8 * w as u32;
        let min = -(1i64 << (bits - 1));
        let max = (1i64 << (bits - 1)) - 1;
        if n >= min && n <= max {
            return w;
        }
        w += 1;
    }
    8
}

/// Encoded size of `v` including its back length.
#[inline]
pub fn entry_size(v: &[u8]) -> usize {
    let b = body_size(v);
    b + backlen_size(b)
}

/// Appends the encoding of `v` to `out`.
fn encode(v: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    if let Some(n) = as_int(v) {
        if (0..=127).contains(&n) {
            out.push(n as u8);
        } else if (0..=8191).contains(&n) {
            out.push(0xC0 | (n >> 8) as u8);
            out.push(n as u8);
        } else {
            let w = signed_width(n);
            out.push(0xE0 | (w as u8 - 1));
            out.extend_from_slice(&n.to_le_bytes()[..w]);
        }
    } else {
        let l = v.len();
        if l <= 63 {
            out.push(0x80 | l as u8);
        } else if l <= u16::MAX as usize {
            out.push(0xF0);
            out.extend_from_slice(&(l as u16).to_le_bytes());
        } else if l <= u32::MAX as usize {
            out.push(0xF1);
            out.extend_from_slice(&(l as u32).to_le_bytes());
        } else {
            out.push(0xF2);
            out.extend_from_slice(&(l as u64).to_le_bytes());
        }
        out.extend_from_slice(v);
    }
    let body = out.len() - start;
    write_backlen(body, out);
}

/// Decodes the entry at `p`: (element, total entry size with back length).
#[inline]
fn decode(buf: &[u8], p: usize) -> (Elem<'_>, usize) {
    let t = buf[p];
    let (e, body) = match t {
        0x00..=0x7F => (Elem::Int(t as i64), 1),
        0x80..=0xBF => {
            let l = (t & 0x3F) as usize;
            (Elem::Bytes(&buf[p + 1..p + 1 + l]), 1 + l)
        }
        0xC0..=0xDF => (Elem::Int((((t & 0x1F) as i64) << 8) | buf[p + 1] as i64), 2),
        0xE0..=0xE7 => {
            let w = (t & 7) as usize + 1;
            let mut b = [0u8; 8];
            b[..w].copy_from_slice(&buf[p + 1..p + 1 + w]);
            // Sign-extend from w bytes.
            let shift = 64 - 8 * w as u32;
            let n = (i64::from_le_bytes(b) << shift) >> shift;
            (Elem::Int(n), 1 + w)
        }
        0xF0 => {
            let l = u16::from_le_bytes([buf[p + 1], buf[p + 2]]) as usize;
            (Elem::Bytes(&buf[p + 3..p + 3 + l]), 3 + l)
        }
        0xF1 => {
            let mut b = [0u8; 4];
            b.copy_from_slice(&buf[p + 1..p + 5]);
            let l = u32::from_le_bytes(b) as usize;
            (Elem::Bytes(&buf[p + 5..p + 5 + l]), 5 + l)
        }
        _ => {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[p + 1..p + 9]);
            let l = u64::from_le_bytes(b) as usize;
            (Elem::Bytes(&buf[p + 9..p + 9 + l]), 9 + l)
        }
    };
    (e, body + backlen_size(body))
}

// ------------------------------------------------------------ nodes

/// One packed node: `count` entries in `buf`.
#[derive(Debug, Clone, Default)]
struct Node {
    buf: Vec<u8>,
    count: u32,
}

impl Node {
    /// Byte offset of entry `i` (0 <= i <= count; count gives the end).
    fn offset_of(&self, i: usize) -> usize {
        let count = self.count as usize;
        if i >= count {
            return self.buf.len();
        }
        if i > count / 2 {
            // Walk back from the end.
            let mut p = self.buf.len();
            for _ in 0..count - i {
                let (s, bl) = read_backlen(&self.buf, p);
                p -= s + bl;
            }
            p
        } else {
            let mut p = 0;
            for _ in 0..i {
                p += decode(&self.buf, p).1;
            }
            p
        }
    }

    /// Offset of the last entry.
    fn last_offset(&self) -> usize {
        let (s, bl) = read_backlen(&self.buf, self.buf.len());
        self.buf.len() - s - bl
    }

    /// Grows capacity for `add` more bytes, doubling but never past
    /// `limit` unless the content itself needs more.
    fn reserve(&mut self, add: usize, limit: usize) {
        let need = self.buf.len() + add;
        if need <= self.buf.capacity() {
            return;
        }
        let cap = (self.buf.capacity() * 2).max(64).min(limit).max(need);
        self.buf.reserve_exact(cap - self.buf.len());
    }
}

/// The byte limit and entry limit of a node for a fill value.
#[inline]
fn limits(fill: i64) -> (usize, usize) {
    if fill >= 0 {
        (SIZE_SAFETY_LIMIT, (fill as usize).max(1))
    } else {
        let i = ((-fill) as usize).clamp(1, 5) - 1;
        (SIZE_CLASSES[i], usize::MAX)
    }
}

/// A list value: packed nodes (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct ListValue {
    nodes: VecDeque<Node>,
    len: usize,
}

impl PartialEq for ListValue {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl ListValue {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty (an empty list is deleted from the keyspace).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// OBJECT ENCODING name: always `quicklist`, as Redis 7.0.
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    /// Number of nodes (DEBUG OBJECT ql_nodes).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// (entries, bytes) of each node, head first (DEBUG QUICKLIST).
    pub fn node_shapes(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.nodes.iter().map(|n| (n.count as usize, n.buf.len()))
    }

    /// Bytes of packed entries (DEBUG OBJECT ql_uncompressed_size).
    pub fn packed_bytes(&self) -> usize {
        self.nodes.iter().map(|n| n.buf.len()).sum()
    }

    /// Approximate heap bytes used.
    pub fn mem_usage(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.nodes.iter().map(|n| n.buf.capacity()).sum::<usize>()
    }

    /// Heap bytes estimated from the first `samples` nodes, as Redis's
    /// `objectComputeSize` samples a quicklist (MEMORY USAGE ... SAMPLES):
    /// the node array plus the sampled nodes' average buffer capacity times
    /// the node count. Equals [`Self::mem_usage`] when `samples` covers
    /// every node.
    pub fn mem_usage_sampled(&self, samples: usize) -> usize {
        let fixed = self.nodes.capacity() * std::mem::size_of::<Node>();
        let n = self.nodes.len();
        let seen = samples.max(1).min(n);
        if seen == 0 {
            return fixed;
        }
        let bytes: usize = self.nodes.iter().take(seen).map(|x| x.buf.capacity()).sum();
        if seen == n {
            return fixed + bytes;
        }
        fixed + (bytes as f64 / seen as f64 * n as f64) as usize
    }

    /// Pushes `v` at `end`. `fill` is list-max-listpack-size.
    pub fn push(&mut self, end: End, v: &[u8], fill: i64) {
        let size = entry_size(v);
        let (max_bytes, max_count) = limits(fill);
        let fits = |n: &Node| (n.count as usize) < max_count && n.buf.len() + size <= max_bytes;
        let need_new = match end {
            End::Left => self.nodes.front().is_none_or(|n| !fits(n)),
            End::Right => self.nodes.back().is_none_or(|n| !fits(n)),
        };
        if need_new {
            // A list that already fills a node is likely to fill the next
            // one too: allocate it at the node limit at once (no growth by
            // doubling, which leaves freed blocks behind); a small list's
            // first node grows as needed.
            let cap = if self.nodes.is_empty() || max_count < usize::MAX {
                size.max(64)
            } else {
                size.max(max_bytes)
            };
            let node = Node {
                buf: Vec::with_capacity(cap),
                count: 0,
            };
            match end {
                End::Left => self.nodes.push_front(node),
                End::Right => self.nodes.push_back(node),
            }
        }
        let node = match end {
            End::Left => self.nodes.front_mut(),
            End::Right => self.nodes.back_mut(),
        }
        .expect("node present");
        node.reserve(size, max_bytes);
        match end {
            End::Right => encode(v, &mut node.buf),
            End::Left => {
                let mut tmp = Vec::with_capacity(size);
                encode(v, &mut tmp);
                node.buf.splice(0..0, tmp);
            }
        }
        node.count += 1;
        self.len += 1;
    }

    /// Pops the element at `end`, or None when empty.
    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        let node = match end {
            End::Left => self.nodes.front_mut()?,
            End::Right => self.nodes.back_mut()?,
        };
        let v = match end {
            End::Left => {
                let (e, s) = decode(&node.buf, 0);
                let v = e.to_vec();
                node.buf.drain(..s);
                v
            }
            End::Right => {
                let p = node.last_offset();
                let v = decode(&node.buf, p).0.to_vec();
                node.buf.truncate(p);
                v
            }
        };
        node.count -= 1;
        let empty = node.count == 0;
        if empty {
            match end {
                End::Left => self.nodes.pop_front(),
                End::Right => self.nodes.pop_back(),
            };
        }
        self.len -= 1;
        Some(v)
    }

    /// (node index, index inside the node) of element `i` (< len), walking
    /// from the nearer end.
    fn locate(&self, i: usize) -> (usize, usize) {
        if i < self.len / 2 {
            let mut rem = i;
            for (ni, n) in self.nodes.iter().enumerate() {
                if rem < n.count as usize {
                    return (ni, rem);
                }
                rem -= n.count as usize;
            }
        } else {
            let mut rem = self.len - 1 - i; // distance from the tail
            for (ni, n) in self.nodes.iter().enumerate().rev() {
                let c = n.count as usize;
                if rem < c {
                    return (ni, c - 1 - rem);
                }
                rem -= c;
            }
        }
        unreachable!("index checked by the caller")
    }

    /// Converts a Redis index (negative counts from the tail) into a
    /// position, None when out of range.
    pub fn resolve(&self, index: i64) -> Option<usize> {
        let len = self.len as i64;
        let i = if index < 0 {
            index.checked_add(len)?
        } else {
            index
        };
        (0..len).contains(&i).then_some(i as usize)
    }

    /// The element at position `i`.
    pub fn get(&self, i: usize) -> Option<Elem<'_>> {
        if i >= self.len {
            return None;
        }
        let (ni, k) = self.locate(i);
        let n = &self.nodes[ni];
        Some(decode(&n.buf, n.offset_of(k)).0)
    }

    /// Replaces the element at position `i` (< len).
    pub fn set(&mut self, i: usize, v: &[u8], fill: i64) {
        let (ni, k) = self.locate(i);
        let n = &mut self.nodes[ni];
        let p = n.offset_of(k);
        let old = decode(&n.buf, p).1;
        let mut tmp = Vec::with_capacity(entry_size(v));
        encode(v, &mut tmp);
        n.buf.splice(p..p + old, tmp);
        self.split_if_needed(ni, fill);
    }

    /// Inserts `v` so that it becomes element `i` (0 <= i <= len).
    pub fn insert(&mut self, i: usize, v: &[u8], fill: i64) {
        if i == 0 {
            return self.push(End::Left, v, fill);
        }
        if i >= self.len {
            return self.push(End::Right, v, fill);
        }
        let (ni, k) = self.locate(i);
        let n = &mut self.nodes[ni];
        let p = n.offset_of(k);
        let mut tmp = Vec::with_capacity(entry_size(v));
        encode(v, &mut tmp);
        n.buf.splice(p..p, tmp);
        n.count += 1;
        self.len += 1;
        self.split_if_needed(ni, fill);
    }

    /// Splits node `ni` in halves while it exceeds the fill limits and has
    /// more than one entry.
    fn split_if_needed(&mut self, ni: usize, fill: i64) {
        let (max_bytes, max_count) = limits(fill);
        let n = &self.nodes[ni];
        if n.count <= 1 || (n.buf.len() <= max_bytes && (n.count as usize) <= max_count) {
            return;
        }
        let half = n.count as usize / 2;
        let p = n.offset_of(half);
        let n = &mut self.nodes[ni];
        let tail = Node {
            buf: n.buf[p..].to_vec(),
            count: n.count - half as u32,
        };
        n.buf.truncate(p);
        n.buf.shrink_to_fit();
        n.count = half as u32;
        self.nodes.insert(ni + 1, tail);
        self.split_if_needed(ni + 1, fill);
        self.split_if_needed(ni, fill);
    }

    /// Keeps only positions `start..end` (end exclusive, clamped).
    pub fn retain_range(&mut self, start: usize, end: usize) {
        let end = end.min(self.len);
        if start >= end {
            self.nodes.clear();
            self.len = 0;
            return;
        }
        // Drop from the tail.
        let mut drop_back = self.len - end;
        while drop_back > 0 {
            let n = self.nodes.back_mut().expect("node");
            let c = n.count as usize;
            if c <= drop_back {
                self.nodes.pop_back();
                drop_back -= c;
                self.len -= c;
            } else {
                let p = n.offset_of(c - drop_back);
                n.buf.truncate(p);
                n.count -= drop_back as u32;
                self.len -= drop_back;
                drop_back = 0;
            }
        }
        let mut drop_front = start;
        while drop_front > 0 {
            let n = self.nodes.front_mut().expect("node");
            let c = n.count as usize;
            if c <= drop_front {
                self.nodes.pop_front();
                drop_front -= c;
                self.len -= c;
            } else {
                let p = n.offset_of(drop_front);
                n.buf.drain(..p);
                n.count -= drop_front as u32;
                self.len -= drop_front;
                drop_front = 0;
            }
        }
    }

    /// Removes up to `limit` elements equal to `v` (all when `limit` is 0),
    /// scanning from the head, or from the tail when `from_tail`. Returns the
    /// number removed (LREM).
    pub fn remove_matching(&mut self, v: &[u8], limit: usize, from_tail: bool) -> usize {
        let mut removed = 0;
        let order: Vec<usize> = if from_tail {
            (0..self.nodes.len()).rev().collect()
        } else {
            (0..self.nodes.len()).collect()
        };
        let enc = {
            let mut t = Vec::new();
            encode(v, &mut t);
            t
        };
        for ni in order {
            if limit != 0 && removed >= limit {
                break;
            }
            let n = &self.nodes[ni];
            // Entry offsets of this node.
            let mut offs = Vec::with_capacity(n.count as usize);
            let mut p = 0;
            while p < n.buf.len() {
                offs.push(p);
                p += decode(&n.buf, p).1;
            }
            let mut kill = vec![false; offs.len()];
            let mut any = false;
            let idx: Vec<usize> = if from_tail {
                (0..offs.len()).rev().collect()
            } else {
                (0..offs.len()).collect()
            };
            for k in idx {
                if limit != 0 && removed >= limit {
                    break;
                }
                let start = offs[k];
                let end = offs.get(k + 1).copied().unwrap_or(n.buf.len());
                // Encodings are canonical, so byte equality of encodings is
                // element equality.
                if n.buf[start..end] == enc[..] {
                    kill[k] = true;
                    removed += 1;
                    any = true;
                }
            }
            if any {
                let n = &mut self.nodes[ni];
                let mut nb = Vec::with_capacity(n.buf.len());
                let mut kept = 0u32;
                for (k, &start) in offs.iter().enumerate() {
                    if !kill[k] {
                        let end = offs.get(k + 1).copied().unwrap_or(n.buf.len());
                        nb.extend_from_slice(&n.buf[start..end]);
                        kept += 1;
                    }
                }
                n.buf = nb;
                n.count = kept;
            }
        }
        self.nodes.retain(|n| n.count > 0);
        self.len -= removed;
        removed
    }

    /// Iterates from the head.
    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0)
    }

    /// Iterates from position `i` towards the tail.
    pub fn iter_from(&self, i: usize) -> Iter<'_> {
        if i >= self.len {
            return Iter {
                list: self,
                node: self.nodes.len(),
                off: 0,
                left: 0,
            };
        }
        let (ni, k) = self.locate(i);
        Iter {
            list: self,
            node: ni,
            off: self.nodes[ni].offset_of(k),
            left: self.len - i,
        }
    }

    /// Iterates from position `i` towards the head.
    pub fn iter_rev_from(&self, i: usize) -> RevIter<'_> {
        if i >= self.len {
            return RevIter {
                list: self,
                node: 0,
                end: 0,
                left: 0,
            };
        }
        let (ni, k) = self.locate(i);
        let n = &self.nodes[ni];
        let start = n.offset_of(k);
        RevIter {
            list: self,
            node: ni,
            end: start + decode(&n.buf, start).1,
            left: i + 1,
        }
    }

    /// Iterates from the tail.
    pub fn iter_rev(&self) -> RevIter<'_> {
        self.iter_rev_from(self.len.saturating_sub(1))
    }
}

/// Forward iterator over a list's elements.
pub struct Iter<'a> {
    list: &'a ListValue,
    node: usize,
    off: usize,
    left: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Elem<'a>;
    #[inline]
    fn next(&mut self) -> Option<Elem<'a>> {
        if self.left == 0 {
            return None;
        }
        let mut n = &self.list.nodes[self.node];
        if self.off >= n.buf.len() {
            self.node += 1;
            self.off = 0;
            n = &self.list.nodes[self.node];
        }
        let (e, s) = decode(&n.buf, self.off);
        self.off += s;
        self.left -= 1;
        Some(e)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// Backward iterator over a list's elements.
pub struct RevIter<'a> {
    list: &'a ListValue,
    node: usize,
    end: usize,
    left: usize,
}

impl<'a> Iterator for RevIter<'a> {
    type Item = Elem<'a>;
    #[inline]
    fn next(&mut self) -> Option<Elem<'a>> {
        if self.left == 0 {
            return None;
        }
        if self.end == 0 {
            self.node -= 1;
            self.end = self.list.nodes[self.node].buf.len();
        }
        let n = &self.list.nodes[self.node];
        let (s, bl) = read_backlen(&n.buf, self.end);
        let start = self.end - bl - s;
        let e = decode(&n.buf, start).0;
        self.end = start;
        self.left -= 1;
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model_check(l: &ListValue, m: &VecDeque<Vec<u8>>) {
        assert_eq!(l.len(), m.len());
        let f: Vec<Vec<u8>> = l.iter().map(|e| e.to_vec()).collect();
        assert_eq!(f, m.iter().cloned().collect::<Vec<_>>());
        let r: Vec<Vec<u8>> = l.iter_rev().map(|e| e.to_vec()).collect();
        assert_eq!(r, m.iter().rev().cloned().collect::<Vec<_>>());
        let counted: usize = l.nodes.iter().map(|n| n.count as usize).sum();
        assert_eq!(counted, l.len());
        assert!(l.nodes.iter().all(|n| n.count > 0));
    }

    fn sample(r: u64) -> Vec<u8> {
        match r % 9 {
            0 => (r % 200).to_string().into_bytes(),
            1 => ((r % 20000) as i64 - 10000).to_string().into_bytes(),
            2 => (r as i64).to_string().into_bytes(),
            3 => vec![b'x'; (r % 300) as usize],
            4 => vec![b'y'; (r % 70_000) as usize],
            5 => b"-0".to_vec(),
            6 => b"007".to_vec(),
            7 => i64::MIN.to_string().into_bytes(),
            _ => format!("e{}", r % 50).into_bytes(),
        }
    }

    #[test]
    fn codec_roundtrip() {
        for v in [
            &b""[..],
            b"0",
            b"127",
            b"128",
            b"8191",
            b"8192",
            b"-1",
            b"-129",
            b"9223372036854775807",
            b"-9223372036854775808",
            b"01",
            b"+1",
            b"-0",
            b" 1",
        ] {
            let mut b = Vec::new();
            encode(v, &mut b);
            assert_eq!(b.len(), entry_size(v));
            let (e, s) = decode(&b, 0);
            assert_eq!(s, b.len());
            assert_eq!(e.to_vec(), v);
            assert_eq!(
                read_backlen(&b, b.len()).0 + read_backlen(&b, b.len()).1,
                b.len()
            );
        }
        let big = vec![7u8; 200_000];
        let mut b = Vec::new();
        encode(&big, &mut b);
        assert_eq!(decode(&b, 0).0.to_vec(), big);
        assert_eq!(
            read_backlen(&b, b.len()).0 + read_backlen(&b, b.len()).1,
            b.len()
        );
    }

    #[test]
    fn random_against_model() {
        let mut seed = 0x9e3779b97f4a7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for fill in [-2i64, -1, 1, 3, 128, -5] {
            let mut l = ListValue::new();
            let mut m: VecDeque<Vec<u8>> = VecDeque::new();
            for _ in 0..3000 {
                let r = rnd();
                let v = sample(rnd());
                match r % 10 {
                    0 | 1 => {
                        l.push(End::Left, &v, fill);
                        m.push_front(v);
                    }
                    2 | 3 => {
                        l.push(End::Right, &v, fill);
                        m.push_back(v);
                    }
                    4 => assert_eq!(l.pop(End::Left), m.pop_front()),
                    5 => assert_eq!(l.pop(End::Right), m.pop_back()),
                    6 if !m.is_empty() => {
                        let i = (rnd() % m.len() as u64) as usize;
                        l.set(i, &v, fill);
                        m[i] = v;
                    }
                    7 => {
                        let i = (rnd() % (m.len() as u64 + 1)) as usize;
                        l.insert(i, &v, fill);
                        m.insert(i, v);
                    }
                    8 if !m.is_empty() => {
                        let i = (rnd() % m.len() as u64) as usize;
                        assert_eq!(l.get(i).unwrap().to_vec(), m[i]);
                        let from: Vec<Vec<u8>> = l.iter_from(i).map(|e| e.to_vec()).collect();
                        assert_eq!(from, m.iter().skip(i).cloned().collect::<Vec<_>>());
                        let back: Vec<Vec<u8>> = l.iter_rev_from(i).map(|e| e.to_vec()).collect();
                        assert_eq!(
                            back,
                            m.iter().take(i + 1).rev().cloned().collect::<Vec<_>>()
                        );
                    }
                    9 if rnd() % 20 == 0 => {
                        let a = (rnd() % (m.len() as u64 + 2)) as usize;
                        let b = (rnd() % (m.len() as u64 + 2)) as usize;
                        l.retain_range(a, b);
                        let keep: VecDeque<Vec<u8>> = m
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| *i >= a && *i < b)
                            .map(|(_, v)| v.clone())
                            .collect();
                        m = keep;
                    }
                    _ => {
                        let lim = (rnd() % 3) as usize;
                        let tail = rnd() % 2 == 0;
                        let n = l.remove_matching(&v, lim, tail);
                        let mut removed = 0;
                        let idx: Vec<usize> = if tail {
                            (0..m.len()).rev().collect()
                        } else {
                            (0..m.len()).collect()
                        };
                        let mut kill = vec![false; m.len()];
                        for i in idx {
                            if lim != 0 && removed >= lim {
                                break;
                            }
                            if m[i] == v {
                                kill[i] = true;
                                removed += 1;
                            }
                        }
                        assert_eq!(n, removed);
                        m = m
                            .into_iter()
                            .enumerate()
                            .filter(|(i, _)| !kill[*i])
                            .map(|(_, v)| v)
                            .collect();
                    }
                }
                if rnd() % 50 == 0 {
                    model_check(&l, &m);
                }
            }
            model_check(&l, &m);
        }
    }

    #[test]
    fn node_sizes_follow_fill() {
        let mut l = ListValue::new();
        for i in 0..1000 {
            l.push(End::Right, format!("{i}").as_bytes(), 5);
        }
        assert_eq!(l.node_count(), 200);
        let mut l = ListValue::new();
        for _ in 0..1000 {
            l.push(End::Right, &[b'a'; 100], -2);
        }
        assert!(l.nodes.iter().all(|n| n.buf.len() <= 8192));
        assert!(l.node_count() <= 15);
    }
}
