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
//! Plain nodes: an element of at least the packed threshold
//! ([`set_packed_threshold`], DEBUG QUICKLIST-PACKED-THRESHOLD, 1 GB by
//! default) is stored in a node of its own that nothing else joins, as
//! 7.0's quicklist "plain" container; the RDB writer saves such nodes as
//! container PLAIN.
//!
//! Compression: a list made while `list-compress-depth` is N > 0 keeps its
//! nodes beyond the first and last N LZF-compressed, as quicklist.c does:
//! a node is compressed only when it has at least [`MIN_COMPRESS_BYTES`]
//! and LZF saves more than [`MIN_COMPRESS_IMPROVE`] bytes; a change
//! decompresses the node it touches and compresses it again afterwards;
//! a reader holding the list shared gets a decompressed copy of each
//! compressed node it visits, dropped by the next change or by
//! [`ListValue::recompress`] (which the list commands call after reading).
//! Lists without compression never take those branches beyond one test.
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
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;

/// Byte limit applied to every node whatever the fill (Redis's
/// SIZE_SAFETY_LIMIT, quicklist.c).
pub const SIZE_SAFETY_LIMIT: usize = 8192;

/// Redis 7.0's default plain-node threshold (quicklist.c
/// `packed_threshold`, 1 GB).
pub const PACKED_THRESHOLD_DEFAULT: u64 = 1 << 30;

/// DEBUG QUICKLIST-PACKED-THRESHOLD's value (quicklist.c
/// `packed_threshold`, process-wide as there): an element of at least this
/// many bytes is stored in a plain node of its own.
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

/// Smallest node worth compressing (quicklist.c MIN_COMPRESS_BYTES), bytes.
pub const MIN_COMPRESS_BYTES: usize = 48;

/// A node is kept compressed only when LZF saves more than this many bytes
/// (quicklist.c MIN_COMPRESS_IMPROVE).
pub const MIN_COMPRESS_IMPROVE: usize = 8;

/// True when `v` goes into a plain node of its own (quicklist.c
/// `isLargeElement`: at least [`packed_threshold`] bytes).
#[inline]
pub fn is_large(v: &[u8]) -> bool {
    v.len() as u64 >= packed_threshold()
}

/// One node: `count` entries in `buf`, or their LZF compression when
/// `lzf_raw` is non-zero (then the uncompressed size). A plain node holds
/// one element of at least the packed threshold (quicklist.c
/// QUICKLIST_NODE_CONTAINER_PLAIN), encoded as any entry.
#[derive(Debug, Clone, Default)]
struct Node {
    buf: Vec<u8>,
    count: u32,
    plain: bool,
    lzf_raw: usize,
    /// Decompressed copy made by a reader holding the list shared (`&`);
    /// dropped by the next write or [`ListValue::recompress`].
    cache: OnceLock<Box<[u8]>>,
}

impl Node {
    fn with_capacity(cap: usize, plain: bool) -> Node {
        Node {
            buf: Vec::with_capacity(cap),
            plain,
            ..Node::default()
        }
    }

    /// The packed entries, decompressed into the shared copy when the node
    /// is compressed.
    #[inline]
    fn data(&self) -> &[u8] {
        if self.lzf_raw == 0 {
            &self.buf
        } else {
            self.inflated()
        }
    }

    #[cold]
    fn inflated(&self) -> &[u8] {
        self.cache
            .get_or_init(|| inflate(&self.buf, self.lzf_raw).into_boxed_slice())
    }

    /// Bytes of the packed entries, uncompressed (quicklistNode `sz`).
    #[inline]
    fn raw_len(&self) -> usize {
        if self.lzf_raw == 0 {
            self.buf.len()
        } else {
            self.lzf_raw
        }
    }

    /// Byte offset of entry `i` (0 <= i <= count; count gives the end).
    fn offset_of(&self, i: usize) -> usize {
        let buf = self.data();
        let count = self.count as usize;
        if i >= count {
            return buf.len();
        }
        if i > count / 2 {
            // Walk back from the end.
            let mut p = buf.len();
            for _ in 0..count - i {
                let (s, bl) = read_backlen(buf, p);
                p -= s + bl;
            }
            p
        } else {
            let mut p = 0;
            for _ in 0..i {
                p += decode(buf, p).1;
            }
            p
        }
    }

    /// Offset of the last entry.
    fn last_offset(&self) -> usize {
        let buf = self.data();
        let (s, bl) = read_backlen(buf, buf.len());
        buf.len() - s - bl
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

    /// Makes `buf` the raw entries again (quicklist.c
    /// `__quicklistDecompressNode`). True when it was compressed.
    fn unpack(&mut self) -> bool {
        if self.lzf_raw == 0 {
            return false;
        }
        self.buf = match self.cache.take() {
            Some(b) => b.into_vec(),
            None => inflate(&self.buf, self.lzf_raw),
        };
        self.lzf_raw = 0;
        true
    }

    /// Compresses the node as quicklist.c `__quicklistCompressNode`: not
    /// below [`MIN_COMPRESS_BYTES`], and only when LZF saves more than
    /// [`MIN_COMPRESS_IMPROVE`] bytes. True when it became compressed. A
    /// compressed node only loses its decompressed copy.
    fn pack(&mut self) -> bool {
        if self.lzf_raw != 0 {
            self.cache.take();
            return false;
        }
        let sz = self.buf.len();
        if sz < MIN_COMPRESS_BYTES {
            return false;
        }
        match crate::lzf::compress(&self.buf, sz) {
            Some(c) if c.len() + MIN_COMPRESS_IMPROVE < sz => {
                self.buf = c;
                self.buf.shrink_to_fit();
                self.lzf_raw = sz;
                true
            }
            _ => false,
        }
    }
}

/// Decompresses a node compressed by [`Node::pack`].
fn inflate(lzf: &[u8], raw: usize) -> Vec<u8> {
    // The data was compressed by this module from `raw` bytes: failing to
    // decompress is a broken invariant, not bad input.
    crate::lzf::decompress(lzf, raw).expect("list node LZF data is intact")
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

/// Shape of one node as DEBUG QUICKLIST shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeShape {
    /// Entries in the node.
    pub count: usize,
    /// Uncompressed bytes of the node's entries (quicklistNode `sz`).
    pub raw_bytes: usize,
    /// Bytes stored: the LZF size when compressed, else `raw_bytes`.
    pub stored_bytes: usize,
    /// Container PLAIN (one large element) rather than PACKED.
    pub plain: bool,
    /// Encoding LZF rather than RAW.
    pub compressed: bool,
}

/// A list value: packed nodes (see the module documentation).
#[derive(Debug, Default)]
pub struct ListValue {
    nodes: VecDeque<Node>,
    len: usize,
    /// list-compress-depth when the list was made (quicklist `compress`):
    /// nodes beyond this many from either end are kept LZF-compressed.
    depth: u32,
    /// Number of compressed nodes.
    compressed: usize,
    /// Decompressed copies made by shared readers since the last write.
    inflated: AtomicUsize,
}

impl Clone for ListValue {
    fn clone(&self) -> Self {
        ListValue {
            nodes: self.nodes.clone(),
            len: self.len,
            depth: self.depth,
            compressed: self.compressed,
            inflated: AtomicUsize::new(self.inflated.load(Relaxed)),
        }
    }
}

impl PartialEq for ListValue {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl ListValue {
    /// An empty list without compression.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty list whose inner nodes are compressed beyond `depth` nodes
    /// from each end (list-compress-depth; 0 = never), as quicklistCreate.
    pub fn with_compress_depth(depth: u64) -> Self {
        ListValue {
            depth: depth.min(u32::MAX as u64) as u32,
            ..Self::default()
        }
    }

    /// The list's compress depth (0 = uncompressed).
    #[inline]
    pub fn compress_depth(&self) -> usize {
        self.depth as usize
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

    /// Number of LZF-compressed nodes.
    pub fn compressed_nodes(&self) -> usize {
        self.compressed
    }

    /// Each node's shape, head first (DEBUG QUICKLIST).
    pub fn node_shapes(&self) -> impl Iterator<Item = NodeShape> + '_ {
        self.nodes.iter().map(|n| NodeShape {
            count: n.count as usize,
            raw_bytes: n.raw_len(),
            stored_bytes: n.buf.len(),
            plain: n.plain,
            compressed: n.lzf_raw != 0,
        })
    }

    /// Bytes of packed entries, uncompressed (DEBUG OBJECT
    /// ql_uncompressed_size).
    pub fn packed_bytes(&self) -> usize {
        self.nodes.iter().map(|n| n.raw_len()).sum()
    }

    /// Approximate heap bytes used (compressed nodes count their LZF
    /// size).
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

    // -------------------------------------------------- compression

    /// Decompresses node `i` for a change (quicklistDecompressNode).
    #[inline]
    fn unpack_node(&mut self, i: usize) {
        if self.nodes[i].unpack() {
            self.compressed -= 1;
        }
    }

    /// Tries to compress node `i` (quicklistCompressNode).
    fn pack_node(&mut self, i: usize) {
        if self.nodes[i].pack() {
            self.compressed += 1;
        }
    }

    /// Drops the decompressed copies that shared readers (iterators,
    /// [`Self::get`]) made of compressed nodes, as Redis recompresses a
    /// node after reading it. Cheap when there are none.
    pub fn recompress(&mut self) {
        if *self.inflated.get_mut() == 0 {
            return;
        }
        *self.inflated.get_mut() = 0;
        for n in self.nodes.iter_mut() {
            n.cache.take();
        }
    }

    /// Restores the compression invariant after a change, as quicklist.c
    /// `__quicklistCompress`: the `depth` nodes at each end are raw, the
    /// nodes just inside them and the changed nodes `lo..hi` are
    /// compressed when that pays. With fewer than `2 * depth + 1` nodes
    /// nothing is compressed.
    fn settle(&mut self, lo: usize, hi: usize) {
        let d = self.depth as usize;
        if d == 0 {
            return;
        }
        self.recompress();
        let n = self.nodes.len();
        if n <= 2 * d {
            if self.compressed > 0 {
                for i in 0..n {
                    self.unpack_node(i);
                }
            }
            return;
        }
        for i in 0..d {
            self.unpack_node(i);
            self.unpack_node(n - 1 - i);
        }
        self.pack_node(d);
        self.pack_node(n - 1 - d);
        for i in lo.max(d)..hi.min(n - d) {
            self.pack_node(i);
        }
    }

    /// Makes sure a shared reader's copy is counted for [`Self::recompress`].
    #[inline]
    fn data_of(&self, ni: usize) -> &[u8] {
        let n = &self.nodes[ni];
        if n.lzf_raw != 0 && n.cache.get().is_none() {
            self.inflated.fetch_add(1, Relaxed);
        }
        n.data()
    }

    // -------------------------------------------------- changes

    /// Pushes `v` at `end`. `fill` is list-max-listpack-size. An element of
    /// at least the packed threshold gets a plain node of its own, as
    /// quicklistPushHead/Tail.
    pub fn push(&mut self, end: End, v: &[u8], fill: i64) {
        let size = entry_size(v);
        let large = is_large(v);
        let (max_bytes, max_count) = limits(fill);
        let fits = |n: &Node| {
            !n.plain && (n.count as usize) < max_count && n.raw_len() + size <= max_bytes
        };
        let need_new = large
            || match end {
                End::Left => self.nodes.front().is_none_or(|n| !fits(n)),
                End::Right => self.nodes.back().is_none_or(|n| !fits(n)),
            };
        if need_new {
            // A list that already fills a node is likely to fill the next
            // one too: allocate it at the node limit at once (no growth by
            // doubling, which leaves freed blocks behind); a small list's
            // first node grows as needed.
            let cap = if large || self.nodes.is_empty() || max_count < usize::MAX {
                size.max(if large { 0 } else { 64 })
            } else {
                size.max(max_bytes)
            };
            let node = Node::with_capacity(cap, large);
            match end {
                End::Left => self.nodes.push_front(node),
                End::Right => self.nodes.push_back(node),
            }
        }
        let ni = match end {
            End::Left => 0,
            End::Right => self.nodes.len() - 1,
        };
        if self.compressed != 0 {
            self.unpack_node(ni);
        }
        let node = &mut self.nodes[ni];
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
        if need_new && self.depth != 0 {
            self.settle(0, 0);
        }
    }

    /// Appends `v` as a plain node whatever its size (the RDB loader's
    /// quicklistAppendPlainNode for container PLAIN).
    pub fn push_plain(&mut self, v: &[u8]) {
        let mut node = Node::with_capacity(entry_size(v), true);
        encode(v, &mut node.buf);
        node.count = 1;
        self.nodes.push_back(node);
        self.len += 1;
        self.settle(0, 0);
    }

    /// Pops the element at `end`, or None when empty.
    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        let ni = match end {
            End::Left if !self.nodes.is_empty() => 0,
            End::Right if !self.nodes.is_empty() => self.nodes.len() - 1,
            _ => return None,
        };
        if self.compressed != 0 {
            self.unpack_node(ni);
        }
        let node = &mut self.nodes[ni];
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
        if empty && self.depth != 0 {
            self.settle(0, 0);
        }
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
        let buf = self.data_of(ni);
        Some(decode(buf, self.nodes[ni].offset_of(k)).0)
    }

    /// Replaces the element at position `i` (< len). A large element, or
    /// one replacing a plain node's, takes the old one's place as a node of
    /// its own or in a packed neighbour, as quicklistReplaceEntry.
    pub fn set(&mut self, i: usize, v: &[u8], fill: i64) {
        let (ni, k) = self.locate(i);
        let large = is_large(v);
        if self.nodes[ni].plain || large {
            if self.nodes[ni].plain && large {
                self.unpack_node(ni);
                let n = &mut self.nodes[ni];
                n.buf.clear();
                encode(v, &mut n.buf);
                n.buf.shrink_to_fit();
                self.settle(ni, ni + 1);
            } else {
                self.remove_at(i);
                self.insert(i, v, fill);
            }
            return;
        }
        self.unpack_node(ni);
        let n = &mut self.nodes[ni];
        let p = n.offset_of(k);
        let old = decode(&n.buf, p).1;
        let mut tmp = Vec::with_capacity(entry_size(v));
        encode(v, &mut tmp);
        n.buf.splice(p..p + old, tmp);
        let before = self.nodes.len();
        self.split_if_needed(ni, fill);
        let after = self.nodes.len();
        self.settle(ni, ni + 1 + after - before);
    }

    /// Removes the element at position `i` (< len).
    pub fn remove_at(&mut self, i: usize) {
        let (ni, k) = self.locate(i);
        self.unpack_node(ni);
        let n = &mut self.nodes[ni];
        let p = n.offset_of(k);
        let s = decode(&n.buf, p).1;
        n.buf.drain(p..p + s);
        n.count -= 1;
        if n.count == 0 {
            self.nodes.remove(ni);
        }
        self.len -= 1;
        self.settle(ni, ni + 1);
    }

    /// Splits node `ni` (packed, raw) before its entry `k` (0 < k < count).
    fn split_at(&mut self, ni: usize, k: usize) {
        let n = &mut self.nodes[ni];
        let p = n.offset_of(k);
        let tail = Node {
            buf: n.buf[p..].to_vec(),
            count: n.count - k as u32,
            ..Node::default()
        };
        n.buf.truncate(p);
        n.buf.shrink_to_fit();
        n.count = k as u32;
        self.nodes.insert(ni + 1, tail);
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
        let large = is_large(v);
        if large || self.nodes[ni].plain {
            // The new element sits between nodes: split a packed node at
            // the position, then give a large element its own node, or put
            // a small one at the end of a packed predecessor that has room
            // (else in a new packed node), as _quicklistInsert.
            let mut t = ni;
            if k > 0 {
                self.unpack_node(ni);
                self.split_at(ni, k);
                t = ni + 1;
            }
            let size = entry_size(v);
            let (max_bytes, max_count) = limits(fill);
            let prev_fits = !large
                && t > 0
                && !self.nodes[t - 1].plain
                && (self.nodes[t - 1].count as usize) < max_count
                && self.nodes[t - 1].raw_len() + size <= max_bytes;
            if prev_fits {
                self.unpack_node(t - 1);
                let n = &mut self.nodes[t - 1];
                encode(v, &mut n.buf);
                n.count += 1;
            } else {
                let mut node = Node::with_capacity(size, large);
                encode(v, &mut node.buf);
                node.count = 1;
                self.nodes.insert(t, node);
            }
            self.len += 1;
            self.settle(ni, t + 2);
            return;
        }
        self.unpack_node(ni);
        let n = &mut self.nodes[ni];
        let p = n.offset_of(k);
        let mut tmp = Vec::with_capacity(entry_size(v));
        encode(v, &mut tmp);
        n.buf.splice(p..p, tmp);
        n.count += 1;
        self.len += 1;
        let before = self.nodes.len();
        self.split_if_needed(ni, fill);
        let after = self.nodes.len();
        self.settle(ni, ni + 1 + after - before);
    }

    /// Splits node `ni` (raw) in halves while it exceeds the fill limits
    /// and has more than one entry.
    fn split_if_needed(&mut self, ni: usize, fill: i64) {
        let (max_bytes, max_count) = limits(fill);
        let n = &self.nodes[ni];
        if n.count <= 1 || (n.buf.len() <= max_bytes && (n.count as usize) <= max_count) {
            return;
        }
        let half = n.count as usize / 2;
        self.split_at(ni, half);
        self.split_if_needed(ni + 1, fill);
        self.split_if_needed(ni, fill);
    }

    /// Keeps only positions `start..end` (end exclusive, clamped).
    pub fn retain_range(&mut self, start: usize, end: usize) {
        let end = end.min(self.len);
        if start >= end {
            self.nodes.clear();
            self.len = 0;
            self.compressed = 0;
            return;
        }
        // Drop from the tail.
        let mut drop_back = self.len - end;
        while drop_back > 0 {
            let last = self.nodes.len() - 1;
            let c = self.nodes[last].count as usize;
            if c <= drop_back {
                if self.nodes[last].lzf_raw != 0 {
                    self.compressed -= 1;
                }
                self.nodes.pop_back();
                drop_back -= c;
                self.len -= c;
            } else {
                self.unpack_node(last);
                let n = &mut self.nodes[last];
                let p = n.offset_of(c - drop_back);
                n.buf.truncate(p);
                n.count -= drop_back as u32;
                self.len -= drop_back;
                drop_back = 0;
            }
        }
        let mut drop_front = start;
        while drop_front > 0 {
            let c = self.nodes[0].count as usize;
            if c <= drop_front {
                if self.nodes[0].lzf_raw != 0 {
                    self.compressed -= 1;
                }
                self.nodes.pop_front();
                drop_front -= c;
                self.len -= c;
            } else {
                self.unpack_node(0);
                let n = &mut self.nodes[0];
                let p = n.offset_of(drop_front);
                n.buf.drain(..p);
                n.count -= drop_front as u32;
                self.len -= drop_front;
                drop_front = 0;
            }
        }
        self.settle(0, 0);
    }

    /// Removes up to `limit` elements equal to `v` (all when `limit` is 0),
    /// scanning from the head, or from the tail when `from_tail`. Returns the
    /// number removed (LREM). Compressed nodes are read through their
    /// decompressed copy and only those that lose elements are rewritten.
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
        let mut changed = false;
        for ni in order {
            if limit != 0 && removed >= limit {
                break;
            }
            let buf = self.data_of(ni);
            // Entry offsets of this node.
            let mut offs = Vec::with_capacity(self.nodes[ni].count as usize);
            let mut p = 0;
            while p < buf.len() {
                offs.push(p);
                p += decode(buf, p).1;
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
                let end = offs.get(k + 1).copied().unwrap_or(buf.len());
                // Encodings are canonical, so byte equality of encodings is
                // element equality.
                if buf[start..end] == enc[..] {
                    kill[k] = true;
                    removed += 1;
                    any = true;
                }
            }
            if any {
                changed = true;
                self.unpack_node(ni);
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
        if changed {
            self.nodes.retain(|n| n.count > 0);
            self.len -= removed;
            // The rewritten nodes are raw; compress every inner one again.
            let n = self.nodes.len();
            self.settle(0, n);
        } else {
            self.recompress();
        }
        removed
    }

    // -------------------------------------------------- reading

    /// Calls `f` with every element, head first, for whole-list readers
    /// that hold the list shared (the RDB writer behind SAVE, BGSAVE, DUMP
    /// and full synchronisation; AOF rewrite; DEBUG DIGEST): a compressed
    /// node is decompressed into a temporary buffer that is dropped at once,
    /// so a snapshot does not leave decompressed copies behind, as Redis's
    /// rdbSaveObject writes compressed nodes without decompressing them.
    pub fn for_each(&self, mut f: impl FnMut(Elem<'_>)) {
        let mut tmp: Vec<u8>;
        for n in &self.nodes {
            let buf: &[u8] = if n.lzf_raw == 0 {
                &n.buf
            } else if let Some(c) = n.cache.get() {
                c
            } else {
                tmp = inflate(&n.buf, n.lzf_raw);
                &tmp
            };
            let mut p = 0;
            while p < buf.len() {
                let (e, s) = decode(buf, p);
                f(e);
                p += s;
            }
        }
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
                cur: &[],
                off: 0,
                left: 0,
            };
        }
        let (ni, k) = self.locate(i);
        Iter {
            list: self,
            node: ni,
            cur: self.data_of(ni),
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
                cur: &[],
                end: 0,
                left: 0,
            };
        }
        let (ni, k) = self.locate(i);
        let cur = self.data_of(ni);
        let start = self.nodes[ni].offset_of(k);
        RevIter {
            list: self,
            node: ni,
            cur,
            end: start + decode(cur, start).1,
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
    cur: &'a [u8],
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
        if self.off >= self.cur.len() {
            self.node += 1;
            self.off = 0;
            self.cur = self.list.data_of(self.node);
        }
        let (e, s) = decode(self.cur, self.off);
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
    cur: &'a [u8],
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
            self.cur = self.list.data_of(self.node);
            self.end = self.cur.len();
        }
        let (s, bl) = read_backlen(self.cur, self.end);
        let start = self.end - bl - s;
        let e = decode(self.cur, start).0;
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
        // Compression invariant: the counter is right, the `depth` nodes at
        // each end are raw, nothing is compressed in a short list.
        let c = l.nodes.iter().filter(|n| n.lzf_raw != 0).count();
        assert_eq!(c, l.compressed);
        let d = l.depth as usize;
        let n = l.nodes.len();
        if d == 0 || n <= 2 * d {
            assert_eq!(c, 0);
        } else {
            for i in (0..d).chain(n - d..n) {
                assert_eq!(l.nodes[i].lzf_raw, 0, "node {i} of {n} within depth {d}");
            }
        }
        // Plain nodes hold one element.
        assert!(l.nodes.iter().all(|n| !n.plain || n.count == 1));
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
            seed = crate::util::xorshift64(seed);
            seed
        };
        for (fill, depth) in [
            (-2i64, 0u64),
            (-1, 0),
            (1, 0),
            (3, 0),
            (128, 0),
            (-5, 0),
            (-2, 1),
            (3, 1),
            (5, 2),
            (-1, 3),
            (1, 2),
        ] {
            let mut l = ListValue::with_compress_depth(depth);
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
    fn compression_shrinks_inner_nodes_and_reads_back() {
        let mut l = ListValue::with_compress_depth(1);
        for i in 0..5000 {
            l.push(End::Right, format!("element-{}", i % 10).as_bytes(), -2);
        }
        let n = l.node_count();
        assert!(n > 3);
        // Every inner node is repetitive enough to compress.
        assert_eq!(l.compressed_nodes(), n - 2);
        assert!(l.mem_usage() < l.packed_bytes() / 2);
        // Shared readers see every element and leave copies behind that
        // recompress drops.
        assert_eq!(l.get(2500).unwrap().to_vec(), b"element-0");
        assert_eq!(l.iter().count(), 5000);
        assert!(l.nodes.iter().any(|x| x.cache.get().is_some()));
        l.recompress();
        assert!(l.nodes.iter().all(|x| x.cache.get().is_none()));
        // Whole-list readers leave no copies behind.
        let mut seen = 0;
        l.for_each(|e| {
            assert_eq!(e.to_vec(), format!("element-{}", seen % 10).into_bytes());
            seen += 1;
        });
        assert_eq!(seen, 5000);
        assert!(l.nodes.iter().all(|x| x.cache.get().is_none()));
        // Small or incompressible nodes stay raw.
        let mut s = ListValue::with_compress_depth(1);
        for i in 0..3u64 {
            s.push(End::Right, &[b'a' + i as u8; 40], 1);
        }
        assert_eq!(s.compressed_nodes(), 0);
        let mut r = ListValue::with_compress_depth(1);
        let mut x = 0x12345678u64;
        for _ in 0..3 {
            let v: Vec<u8> = (0..200)
                .map(|_| {
                    x = crate::util::xorshift64(x);
                    x as u8
                })
                .collect();
            r.push(End::Right, &v, 1);
        }
        assert_eq!(r.compressed_nodes(), 0);
    }

    #[test]
    fn large_elements_get_plain_nodes() {
        // Elements of 300 bytes or more are plain (other tests here use
        // smaller elements, so the process-wide threshold does not change
        // their layout).
        assert!(set_packed_threshold(300));
        let mut l = ListValue::with_compress_depth(1);
        let big = vec![b'z'; 300];
        for i in 0..20 {
            l.push(End::Right, format!("{i}").as_bytes(), -2);
            l.push(End::Left, &big, -2);
        }
        l.insert(5, &big, -2);
        l.insert(6, b"small", -2);
        l.set(0, b"now small", -2);
        l.set(7, &big, -2);
        let plain = l.nodes.iter().filter(|n| n.plain).count();
        assert!(l.iter().filter(|e| e.byte_len() >= 300).count() == plain);
        assert!(l.nodes.iter().all(|n| !n.plain || n.count == 1));
        assert_eq!(l.get(0).unwrap().to_vec(), b"now small");
        assert_eq!(l.get(6).unwrap().to_vec(), b"small");
        assert_eq!(l.get(7).unwrap().to_vec(), big);
        assert!(set_packed_threshold(0));
        assert_eq!(packed_threshold(), PACKED_THRESHOLD_DEFAULT);
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
