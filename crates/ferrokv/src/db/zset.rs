//! The sorted set type, with Redis 7.0's two encodings (t_zset.c):
//!
//! - `listpack`: one packed byte buffer of `[score][len: LEB128][member]`
//!   entries sorted by (score, member) (a score is a tagged zigzag varint
//!   when integral, else 4 bytes when exact in `f32`, else 8 bytes), used while the set has at most
//!   `zset-max-listpack-entries` members and every member is at most
//!   `zset-max-listpack-value` bytes. Operations scan it linearly, as Redis
//!   does its listpack. Like Redis's listpack (which stores scores with
//!   `d2string`), it does not keep the sign of a zero score.
//! - `skiplist`: a slab of (score, member) slots with stable `u32` ids, a
//!   hash index member → id ([`hashbrown::HashTable`] of ids, so members are
//!   stored once), and an order-statistic B+tree of ids ordered by (score,
//!   member) whose inner nodes keep per-child counts: insert, delete, rank,
//!   select-by-rank and search-by-bound are O(log n). Redis uses a skiplist
//!   plus a dict; the name is kept for OBJECT ENCODING.
//!
//! A set converts from `listpack` to `skiplist` when an insertion would pass
//! either threshold, and never converts back (as Redis). Ties between equal
//! scores are broken by member bytes (memcmp), as `zslInsert`.
//!
//! Size limit: a set holds at most `u32::MAX - 1` members (ids are `u32`).

use super::dict::hash_bytes;
use hashbrown::HashTable;
use std::cmp::Ordering;

/// The total order of sorted-set entries: score (`<` on doubles, so -0 and
/// 0 are equal), then member bytes (memcmp), as Redis's `zslInsert`.
#[inline]
pub fn cmp_entry(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> Ordering {
    if s1 < s2 {
        Ordering::Less
    } else if s1 > s2 {
        Ordering::Greater
    } else {
        m1.cmp(m2)
    }
}

/// Encoding thresholds (zset-max-listpack-entries / -value).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most members a `listpack` set may hold.
    pub max_entries: usize,
    /// Longest member, in bytes, a `listpack` set may hold.
    pub max_value: usize,
}

// ------------------------------------------------------------------ listpack

fn put_varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

#[inline]
fn get_varint(b: &[u8], mut off: usize) -> (usize, usize) {
    let mut v = 0usize;
    let mut shift = 0;
    loop {
        let x = b[off];
        off += 1;
        v |= ((x & 0x7f) as usize) << shift;
        if x < 0x80 {
            return (v, off);
        }
        shift += 7;
    }
}

/// Score tags of a packed entry: an integral score as a zigzag varint, a
/// score exact in `f32` (including ±inf) in 4 bytes, any other in 8.
const TAG_INT: u8 = 0;
const TAG_F32: u8 = 1;
const TAG_F64: u8 = 2;
/// Integral scores below this magnitude are stored as integers.
const INT_LIMIT: f64 = 9007199254740992.0; // 2^53

/// Reads the entry at `off`: (score, member, offset of the next entry).
#[inline]
fn pack_entry(buf: &[u8], off: usize) -> (f64, &[u8], usize) {
    let (score, p) = match buf[off] {
        TAG_INT => {
            let (z, p) = get_varint(buf, off + 1);
            let z = z as u64;
            (((z >> 1) as i64 ^ -((z & 1) as i64)) as f64, p)
        }
        TAG_F32 => {
            let mut b = [0u8; 4];
            b.copy_from_slice(&buf[off + 1..off + 5]);
            (f32::from_le_bytes(b) as f64, off + 5)
        }
        _ => {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[off + 1..off + 9]);
            (f64::from_le_bytes(b), off + 9)
        }
    };
    let (len, p) = get_varint(buf, p);
    (score, &buf[p..p + len], p + len)
}

fn encode_entry(score: f64, member: &[u8], out: &mut Vec<u8>) {
    // Redis's listpack stores an integral score as an integer, so -0 comes
    // back as 0.
    let score = if score == 0.0 { 0.0 } else { score };
    if score.trunc() == score && score.abs() < INT_LIMIT {
        let n = score as i64;
        out.push(TAG_INT);
        put_varint(out, ((n << 1) ^ (n >> 63)) as u64 as usize);
    } else if (score as f32) as f64 == score {
        out.push(TAG_F32);
        out.extend_from_slice(&(score as f32).to_le_bytes());
    } else {
        out.push(TAG_F64);
        out.extend_from_slice(&score.to_le_bytes());
    }
    put_varint(out, member.len());
    out.extend_from_slice(member);
}

#[derive(Clone, Default)]
struct Pack {
    buf: Vec<u8>,
    len: usize,
}

struct PackIter<'a> {
    buf: &'a [u8],
    off: usize,
}

impl<'a> Iterator for PackIter<'a> {
    /// (offset, score, member)
    type Item = (usize, f64, &'a [u8]);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.off >= self.buf.len() {
            return None;
        }
        let at = self.off;
        let (s, m, next) = pack_entry(self.buf, at);
        self.off = next;
        Some((at, s, m))
    }
}

impl Pack {
    fn iter(&self) -> PackIter<'_> {
        PackIter {
            buf: &self.buf,
            off: 0,
        }
    }

    /// (offset, score, rank) of `member`.
    fn find(&self, member: &[u8]) -> Option<(usize, f64, usize)> {
        self.iter()
            .enumerate()
            .find(|(_, (_, _, m))| *m == member)
            .map(|(rank, (off, s, _))| (off, s, rank))
    }

    fn insert(&mut self, score: f64, member: &[u8]) {
        let off = self
            .iter()
            .find(|&(_, s, m)| cmp_entry(s, m, score, member) == Ordering::Greater)
            .map(|(o, _, _)| o)
            .unwrap_or(self.buf.len());
        let mut e = Vec::with_capacity(9 + 5 + member.len());
        encode_entry(score, member, &mut e);
        self.buf.reserve_exact(e.len());
        self.buf.splice(off..off, e);
        self.len += 1;
    }

    fn remove_at(&mut self, off: usize) {
        let (_, _, end) = pack_entry(&self.buf, off);
        self.buf.drain(off..end);
        self.len -= 1;
        if self.buf.capacity() > 2 * self.buf.len() + 64 {
            self.buf.shrink_to_fit();
        }
    }

    /// Offsets of the entries with ranks in `start..end`.
    fn offsets(&self, start: usize, end: usize) -> Vec<usize> {
        self.iter()
            .skip(start)
            .take(end.saturating_sub(start))
            .map(|(o, _, _)| o)
            .collect()
    }
}

// ------------------------------------------------------------------ skiplist

const INLINE: usize = 22;

/// A member's bytes: inline up to 22 bytes, else on the heap.
#[derive(Clone)]
enum Member {
    Inline { len: u8, buf: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl Member {
    const EMPTY: Member = Member::Inline {
        len: 0,
        buf: [0; INLINE],
    };

    fn new(m: &[u8]) -> Member {
        if m.len() <= INLINE {
            let mut buf = [0u8; INLINE];
            buf[..m.len()].copy_from_slice(m);
            Member::Inline {
                len: m.len() as u8,
                buf,
            }
        } else {
            Member::Heap(m.into())
        }
    }

    #[inline]
    fn as_slice(&self) -> &[u8] {
        match self {
            Member::Inline { len, buf } => &buf[..*len as usize],
            Member::Heap(b) => b,
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Member::Inline { .. } => 0,
            Member::Heap(b) => b.len(),
        }
    }
}

/// One slab slot; a free slot has a NaN score (no live score is NaN).
#[derive(Clone)]
struct Slot {
    score: f64,
    member: Member,
}

#[inline]
fn key(slots: &[Slot], id: u32) -> (f64, &[u8]) {
    let s = &slots[id as usize];
    (s.score, s.member.as_slice())
}

const NIL: u32 = u32::MAX;
const LEAF_CAP: usize = 64;
const INNER_CAP: usize = 64;
/// A node with fewer items than this is merged into a neighbour when both fit.
const MERGE_BELOW: usize = 16;

/// A separator: every key of the child on its left is smaller, every key
/// of the child on its right is greater or equal.
#[derive(Clone)]
struct Sep {
    score: f64,
    member: Box<[u8]>,
}

#[derive(Clone)]
enum Node {
    Leaf {
        ids: Vec<u32>,
        prev: u32,
        next: u32,
    },
    Inner {
        kids: Vec<u32>,
        counts: Vec<u32>,
        seps: Vec<Sep>,
    },
}

fn empty_leaf() -> Node {
    Node::Leaf {
        ids: Vec::new(),
        prev: NIL,
        next: NIL,
    }
}

/// Order-statistic B+tree of slot ids; leaves are linked both ways.
#[derive(Clone)]
struct Tree {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
}

impl Tree {
    fn new() -> Tree {
        Tree {
            nodes: vec![Node::Leaf {
                ids: Vec::with_capacity(LEAF_CAP + 1),
                prev: NIL,
                next: NIL,
            }],
            free: Vec::new(),
            root: 0,
        }
    }

    fn alloc(&mut self, n: Node) -> u32 {
        if let Some(i) = self.free.pop() {
            self.nodes[i as usize] = n;
            i
        } else {
            self.nodes.push(n);
            (self.nodes.len() - 1) as u32
        }
    }

    fn release(&mut self, i: u32) {
        self.nodes[i as usize] = empty_leaf();
        self.free.push(i);
    }

    fn count(&self, n: u32) -> u32 {
        match &self.nodes[n as usize] {
            Node::Leaf { ids, .. } => ids.len() as u32,
            Node::Inner { counts, .. } => counts.iter().sum(),
        }
    }

    fn width(&self, n: u32) -> usize {
        match &self.nodes[n as usize] {
            Node::Leaf { ids, .. } => ids.len(),
            Node::Inner { kids, .. } => kids.len(),
        }
    }

    fn set_prev(&mut self, n: u32, p: u32) {
        if n != NIL {
            if let Node::Leaf { prev, .. } = &mut self.nodes[n as usize] {
                *prev = p;
            }
        }
    }

    fn set_next(&mut self, n: u32, x: u32) {
        if n != NIL {
            if let Node::Leaf { next, .. } = &mut self.nodes[n as usize] {
                *next = x;
            }
        }
    }

    fn insert(&mut self, slots: &[Slot], id: u32) {
        let (s, m) = key(slots, id);
        if let Some((sep, right)) = self.ins(self.root, slots, id, s, m, (true, true)) {
            let left = self.root;
            let (lc, rc) = (self.count(left), self.count(right));
            self.root = self.alloc(Node::Inner {
                kids: vec![left, right],
                counts: vec![lc, rc],
                seps: vec![sep],
            });
        }
    }

    /// Inserts into the subtree `n`; returns the separator and new right
    /// sibling when `n` split. `edge` says whether `n` is on the leftmost /
    /// rightmost path (inserts at the very ends split unevenly there, so
    /// sequential inserts leave full nodes).
    fn ins(
        &mut self,
        n: u32,
        slots: &[Slot],
        id: u32,
        s: f64,
        m: &[u8],
        edge: (bool, bool),
    ) -> Option<(Sep, u32)> {
        let (ci, child, last) = match &mut self.nodes[n as usize] {
            Node::Leaf { ids, .. } => {
                let pos = ids.partition_point(|&x| {
                    let (xs, xm) = key(slots, x);
                    cmp_entry(xs, xm, s, m) == Ordering::Less
                });
                ids.insert(pos, id);
                if ids.len() <= LEAF_CAP {
                    return None;
                }
                let len = ids.len();
                let at = if pos == len - 1 && edge.1 {
                    len - 1
                } else if pos == 0 && edge.0 {
                    1
                } else {
                    len / 2
                };
                return Some(self.split_leaf(n, slots, at));
            }
            Node::Inner { kids, counts, seps } => {
                let i = seps.partition_point(|sp| {
                    cmp_entry(sp.score, &sp.member, s, m) != Ordering::Greater
                });
                counts[i] += 1;
                (i, kids[i], kids.len() - 1)
            }
        };
        let child_edge = (edge.0 && ci == 0, edge.1 && ci == last);
        let (sep, right) = self.ins(child, slots, id, s, m, child_edge)?;
        let rc = self.count(right);
        let Node::Inner { kids, counts, seps } = &mut self.nodes[n as usize] else {
            unreachable!("inner node")
        };
        counts[ci] -= rc;
        kids.insert(ci + 1, right);
        counts.insert(ci + 1, rc);
        seps.insert(ci, sep);
        let len = kids.len();
        if len <= INNER_CAP {
            return None;
        }
        let at = if ci + 1 == len - 1 && edge.1 {
            len - 1
        } else if ci == 0 && edge.0 {
            1
        } else {
            len / 2
        };
        let rkids = kids.split_off(at);
        let rcounts = counts.split_off(at);
        let rseps = seps.split_off(at);
        let up = seps.pop().expect("separator");
        let r = self.alloc(Node::Inner {
            kids: rkids,
            counts: rcounts,
            seps: rseps,
        });
        Some((up, r))
    }

    fn split_leaf(&mut self, n: u32, slots: &[Slot], at: usize) -> (Sep, u32) {
        let Node::Leaf { ids, next, .. } = &mut self.nodes[n as usize] else {
            unreachable!("leaf")
        };
        let mut rids = Vec::with_capacity(LEAF_CAP + 1);
        rids.extend_from_slice(&ids[at..]);
        ids.truncate(at);
        let old_next = *next;
        let first = rids[0];
        let r = self.alloc(Node::Leaf {
            ids: rids,
            prev: n,
            next: old_next,
        });
        self.set_next(n, r);
        self.set_prev(old_next, r);
        let (fs, fm) = key(slots, first);
        (
            Sep {
                score: fs,
                member: fm.into(),
            },
            r,
        )
    }

    fn remove(&mut self, slots: &[Slot], id: u32) {
        let (s, m) = key(slots, id);
        self.del(self.root, slots, id, s, m);
        loop {
            let r = self.root;
            match &self.nodes[r as usize] {
                Node::Inner { kids, .. } if kids.len() == 1 => {
                    self.root = kids[0];
                    self.release(r);
                }
                _ => break,
            }
        }
    }

    fn del(&mut self, n: u32, slots: &[Slot], id: u32, s: f64, m: &[u8]) {
        let (ci, child) = match &mut self.nodes[n as usize] {
            Node::Leaf { ids, .. } => {
                let pos = ids.partition_point(|&x| {
                    let (xs, xm) = key(slots, x);
                    cmp_entry(xs, xm, s, m) == Ordering::Less
                });
                debug_assert_eq!(ids.get(pos), Some(&id));
                if ids.get(pos) == Some(&id) {
                    ids.remove(pos);
                }
                return;
            }
            Node::Inner { kids, counts, seps } => {
                let i = seps.partition_point(|sp| {
                    cmp_entry(sp.score, &sp.member, s, m) != Ordering::Greater
                });
                counts[i] -= 1;
                (i, kids[i])
            }
        };
        self.del(child, slots, id, s, m);
        self.rebalance(n, ci);
    }

    /// After a deletion below child `i` of `n`: drops an empty leaf, or
    /// merges a small child with a neighbour when both fit in one node.
    fn rebalance(&mut self, n: u32, i: usize) {
        let Node::Inner { kids, .. } = &self.nodes[n as usize] else {
            return;
        };
        let nk = kids.len();
        let child = kids[i];
        let w = self.width(child);
        if w >= MERGE_BELOW || nk < 2 {
            return;
        }
        let is_leaf = matches!(self.nodes[child as usize], Node::Leaf { .. });
        if w == 0 && is_leaf {
            let (p, nx) = match &self.nodes[child as usize] {
                Node::Leaf { prev, next, .. } => (*prev, *next),
                Node::Inner { .. } => unreachable!("leaf"),
            };
            self.set_next(p, nx);
            self.set_prev(nx, p);
            self.release(child);
            let Node::Inner { kids, counts, seps } = &mut self.nodes[n as usize] else {
                unreachable!("inner")
            };
            kids.remove(i);
            counts.remove(i);
            seps.remove(i.saturating_sub(1));
            return;
        }
        let a = i.saturating_sub(1);
        let Node::Inner { kids, .. } = &self.nodes[n as usize] else {
            unreachable!("inner")
        };
        let (ka, kb) = (kids[a], kids[a + 1]);
        let cap = if is_leaf { LEAF_CAP } else { INNER_CAP };
        if self.width(ka) + self.width(kb) > cap {
            return;
        }
        let sep = {
            let Node::Inner { kids, counts, seps } = &mut self.nodes[n as usize] else {
                unreachable!("inner")
            };
            let cb = counts.remove(a + 1);
            counts[a] += cb;
            kids.remove(a + 1);
            seps.remove(a)
        };
        let b_node = std::mem::replace(&mut self.nodes[kb as usize], empty_leaf());
        self.free.push(kb);
        let mut relink = NIL;
        match (b_node, &mut self.nodes[ka as usize]) {
            (
                Node::Leaf {
                    ids: bids,
                    next: bnext,
                    ..
                },
                Node::Leaf { ids, next, .. },
            ) => {
                ids.extend_from_slice(&bids);
                *next = bnext;
                relink = bnext;
            }
            (
                Node::Inner {
                    kids: bk,
                    counts: bc,
                    seps: bs,
                },
                Node::Inner { kids, counts, seps },
            ) => {
                seps.push(sep);
                seps.extend(bs);
                kids.extend(bk);
                counts.extend(bc);
            }
            _ => unreachable!("siblings have the same height"),
        }
        self.set_prev(relink, ka);
    }

    /// The leaf and position holding rank `r` (< len).
    fn select(&self, mut r: usize) -> (u32, usize) {
        let mut n = self.root;
        loop {
            match &self.nodes[n as usize] {
                Node::Leaf { .. } => return (n, r),
                Node::Inner { kids, counts, .. } => {
                    let mut j = 0;
                    while j + 1 < kids.len() && r >= counts[j] as usize {
                        r -= counts[j] as usize;
                        j += 1;
                    }
                    n = kids[j];
                }
            }
        }
    }

    /// Number of leading entries for which `pred(score, member)` holds
    /// (`pred` must be true on a prefix of the order).
    fn partition(&self, slots: &[Slot], pred: &dyn Fn(f64, &[u8]) -> bool) -> usize {
        let mut n = self.root;
        let mut acc = 0usize;
        loop {
            match &self.nodes[n as usize] {
                Node::Leaf { ids, .. } => {
                    return acc
                        + ids.partition_point(|&x| {
                            let (s, m) = key(slots, x);
                            pred(s, m)
                        })
                }
                Node::Inner { kids, counts, seps } => {
                    let i = seps.partition_point(|sp| pred(sp.score, &sp.member));
                    acc += counts[..i].iter().map(|&c| c as usize).sum::<usize>();
                    n = kids[i];
                }
            }
        }
    }

    /// Calls `f` with `n` ids from rank `start` (the caller checked they
    /// exist), ascending or (`rev`) descending.
    fn walk(&self, start: usize, n: usize, rev: bool, mut f: impl FnMut(u32)) {
        if n == 0 {
            return;
        }
        let (mut leaf, pos) = self.select(start);
        let mut pos = pos as isize;
        let mut left = n;
        loop {
            let Node::Leaf { ids, prev, next } = &self.nodes[leaf as usize] else {
                unreachable!("leaf")
            };
            while pos >= 0 && (pos as usize) < ids.len() {
                f(ids[pos as usize]);
                left -= 1;
                if left == 0 {
                    return;
                }
                pos += if rev { -1 } else { 1 };
            }
            leaf = if rev { *prev } else { *next };
            if leaf == NIL {
                return;
            }
            pos = if rev {
                self.width(leaf) as isize - 1
            } else {
                0
            };
        }
    }

    fn heap_bytes(&self) -> usize {
        let mut b = self.nodes.capacity() * std::mem::size_of::<Node>() + self.free.capacity() * 4;
        for n in &self.nodes {
            match n {
                Node::Leaf { ids, .. } => b += ids.capacity() * 4,
                Node::Inner { kids, counts, seps } => {
                    b += (kids.capacity() + counts.capacity()) * 4;
                    b += seps.capacity() * std::mem::size_of::<Sep>();
                    b += seps.iter().map(|s| s.member.len()).sum::<usize>();
                }
            }
        }
        b
    }
}

/// The `skiplist` encoding: slab + hash index + counted B+tree.
#[derive(Clone)]
struct Big {
    slots: Vec<Slot>,
    free: Vec<u32>,
    index: HashTable<u32>,
    tree: Tree,
    len: usize,
}

impl Big {
    fn new() -> Big {
        Big {
            slots: Vec::new(),
            free: Vec::new(),
            index: HashTable::new(),
            tree: Tree::new(),
            len: 0,
        }
    }

    fn find(&self, m: &[u8]) -> Option<u32> {
        let slots = &self.slots;
        self.index
            .find(hash_bytes(m), |&id| {
                slots[id as usize].member.as_slice() == m
            })
            .copied()
    }

    fn add(&mut self, m: &[u8], score: f64) {
        let slot = Slot {
            score,
            member: Member::new(m),
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = slot;
                id
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        let Big {
            slots, index, tree, ..
        } = self;
        index.insert_unique(hash_bytes(m), id, |&x| {
            hash_bytes(slots[x as usize].member.as_slice())
        });
        tree.insert(slots, id);
        self.len += 1;
    }

    fn set_score(&mut self, id: u32, score: f64) {
        self.tree.remove(&self.slots, id);
        self.slots[id as usize].score = score;
        self.tree.insert(&self.slots, id);
    }

    fn remove_id(&mut self, id: u32) {
        self.tree.remove(&self.slots, id);
        let h = hash_bytes(self.slots[id as usize].member.as_slice());
        if let Ok(e) = self.index.find_entry(h, |&x| x == id) {
            e.remove();
        }
        self.slots[id as usize] = Slot {
            score: f64::NAN,
            member: Member::EMPTY,
        };
        self.free.push(id);
        self.len -= 1;
    }
}

// ------------------------------------------------------------------ value

#[derive(Clone)]
enum Repr {
    Pack(Pack),
    Big(Box<Big>),
}

/// A sorted set value (see the module documentation for the encodings).
#[derive(Clone)]
pub struct ZSetValue {
    repr: Repr,
}

impl Default for ZSetValue {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ZSetValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ZSetValue({}, {} members)", self.encoding(), self.len())
    }
}

impl PartialEq for ZSetValue {
    fn eq(&self, other: &Self) -> bool {
        if self.len() != other.len() {
            return false;
        }
        let mut a = Vec::with_capacity(self.len());
        self.range(0, self.len(), false, |m, s| a.push((m.to_vec(), s)));
        let mut i = 0;
        let mut same = true;
        other.range(0, other.len(), false, |m, s| {
            same &= a[i].0 == m && a[i].1 == s;
            i += 1;
        });
        same
    }
}

impl ZSetValue {
    /// An empty `listpack` sorted set.
    pub fn new() -> Self {
        ZSetValue {
            repr: Repr::Pack(Pack::default()),
        }
    }

    /// An empty `skiplist` sorted set.
    pub fn new_skiplist() -> Self {
        ZSetValue {
            repr: Repr::Big(Box::new(Big::new())),
        }
    }

    /// An empty set in the encoding Redis 7.0's ZADD creates for a new key
    /// whose first member is `first_len` bytes (`zaddGenericCommand`):
    /// `skiplist` when zset-max-listpack-entries is 0 or that member is
    /// longer than zset-max-listpack-value.
    pub fn for_first_member(first_len: usize, lim: Limits) -> Self {
        if lim.max_entries == 0 || first_len > lim.max_value {
            Self::new_skiplist()
        } else {
            Self::new()
        }
    }

    /// Builds a set from entries already sorted by (score, member) and
    /// unique: `listpack` when it fits the limits, else `skiplist` (Redis's
    /// `zsetConvertToListpackIfNeeded` after ZUNIONSTORE and friends).
    pub fn from_sorted(entries: &[(Vec<u8>, f64)], lim: Limits) -> Self {
        let fits = entries.len() <= lim.max_entries
            && entries.iter().all(|(m, _)| m.len() <= lim.max_value);
        if fits {
            let mut p = Pack::default();
            let total: usize = entries.iter().map(|(m, _)| m.len() + 10).sum();
            p.buf.reserve_exact(total);
            for (m, s) in entries {
                encode_entry(*s, m, &mut p.buf);
            }
            p.len = entries.len();
            p.buf.shrink_to_fit();
            ZSetValue {
                repr: Repr::Pack(p),
            }
        } else {
            let mut b = Big::new();
            b.slots.reserve_exact(entries.len());
            for (m, s) in entries {
                b.add(m, *s);
            }
            ZSetValue {
                repr: Repr::Big(Box::new(b)),
            }
        }
    }

    /// Number of members (ZCARD).
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Pack(p) => p.len,
            Repr::Big(b) => b.len,
        }
    }

    /// True when empty (an empty sorted set is deleted from the keyspace).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// OBJECT ENCODING name: `listpack` or `skiplist`.
    pub fn encoding(&self) -> &'static str {
        match &self.repr {
            Repr::Pack(_) => "listpack",
            Repr::Big(_) => "skiplist",
        }
    }

    /// The shape of the member index of the `skiplist` encoding (DEBUG
    /// HTSTATS-KEY), None in the `listpack` encoding. The index is an
    /// open-addressing table ([`HashTable`]): its slot count is derived
    /// from its capacity (7/8 of the slots, or slots - 1 below 8 slots,
    /// hashbrown's load factor) and each occupied slot counts as a chain of
    /// one ([`super::TableStats::open_addressing`]).
    pub fn table_stats(&self) -> Option<super::TableStats> {
        match &self.repr {
            Repr::Pack(_) => None,
            Repr::Big(b) => {
                let cap = b.index.capacity();
                let slots = match cap {
                    0 => 0,
                    c if c < 7 => c + 1,
                    c => c / 7 * 8,
                };
                Some(super::TableStats::open_addressing(slots, b.index.len()))
            }
        }
    }

    /// True in the `listpack` encoding.
    pub fn is_listpack(&self) -> bool {
        matches!(self.repr, Repr::Pack(_))
    }

    /// Approximate heap bytes used.
    pub fn mem_usage(&self) -> usize {
        match &self.repr {
            Repr::Pack(p) => p.buf.capacity(),
            Repr::Big(b) => {
                std::mem::size_of::<Big>()
                    + b.slots.capacity() * std::mem::size_of::<Slot>()
                    + b.slots.iter().map(|s| s.member.heap_bytes()).sum::<usize>()
                    + b.free.capacity() * 4
                    + b.index.capacity() * 5
                    + b.tree.heap_bytes()
            }
        }
    }

    /// Heap bytes with the members of a `skiplist` sampled: the first
    /// `samples` live members' heap bytes, averaged and multiplied by the
    /// member count (Redis's `objectComputeSize` samples the skiplist the
    /// same way); the slab, index and tree are counted exactly (their size
    /// follows from their capacities and node count). A `listpack` is
    /// exact. Equals [`Self::mem_usage`] when every member is sampled.
    pub fn mem_usage_sampled(&self, samples: usize) -> usize {
        let Repr::Big(b) = &self.repr else {
            return self.mem_usage();
        };
        let (mut bytes, mut seen) = (0usize, 0usize);
        for s in b.slots.iter().filter(|s| !s.score.is_nan()) {
            if seen >= samples.max(1) {
                break;
            }
            bytes += s.member.heap_bytes();
            seen += 1;
        }
        let members = if seen == 0 || seen >= b.len {
            bytes
        } else {
            (bytes as f64 / seen as f64 * b.len as f64) as usize
        };
        std::mem::size_of::<Big>()
            + b.slots.capacity() * std::mem::size_of::<Slot>()
            + members
            + b.free.capacity() * 4
            + b.index.capacity() * 5
            + b.tree.heap_bytes()
    }

    /// The score of `member` (ZSCORE).
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.repr {
            Repr::Pack(p) => p.find(member).map(|(_, s, _)| s),
            Repr::Big(b) => b.find(member).map(|id| b.slots[id as usize].score),
        }
    }

    /// The 0-based ascending rank of `member` (ZRANK).
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match &self.repr {
            Repr::Pack(p) => p.find(member).map(|(_, _, r)| r),
            Repr::Big(b) => {
                let id = b.find(member)?;
                let s = b.slots[id as usize].score;
                Some(b.tree.partition(&b.slots, &|xs, xm| {
                    cmp_entry(xs, xm, s, member) == Ordering::Less
                }))
            }
        }
    }

    fn convert_to_skiplist(&mut self) {
        if let Repr::Pack(p) = &self.repr {
            let mut b = Big::new();
            b.slots.reserve_exact(p.len + 1);
            for (_, s, m) in p.iter() {
                b.add(m, s);
            }
            self.repr = Repr::Big(Box::new(b));
        }
    }

    /// Sets `member`'s score, adding it when absent (converting to
    /// `skiplist` first when the addition would pass `lim`, as `zsetAdd`).
    /// Returns true when the member was added. The caller guarantees
    /// `score` is not NaN. An existing member whose score compares equal
    /// keeps its old score (so 0 does not replace -0), as Redis.
    pub fn insert(&mut self, member: &[u8], score: f64, lim: Limits) -> bool {
        match &mut self.repr {
            Repr::Pack(p) => {
                if let Some((off, cur, _)) = p.find(member) {
                    if cur != score {
                        p.remove_at(off);
                        p.insert(score, member);
                    }
                    return false;
                }
                if p.len + 1 > lim.max_entries || member.len() > lim.max_value {
                    self.convert_to_skiplist();
                    return self.insert(member, score, lim);
                }
                p.insert(score, member);
                true
            }
            Repr::Big(b) => {
                if let Some(id) = b.find(member) {
                    if b.slots[id as usize].score != score {
                        b.set_score(id, score);
                    }
                    return false;
                }
                b.add(member, score);
                true
            }
        }
    }

    /// Removes `member`, returning its score (ZREM).
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match &mut self.repr {
            Repr::Pack(p) => {
                let (off, s, _) = p.find(member)?;
                p.remove_at(off);
                Some(s)
            }
            Repr::Big(b) => {
                let id = b.find(member)?;
                let s = b.slots[id as usize].score;
                b.remove_id(id);
                Some(s)
            }
        }
    }

    /// Number of leading members (in rank order) for which
    /// `pred(score, member)` holds; `pred` must hold on a prefix of the
    /// (score, member) order (a lower bound), as for score and lex ranges.
    pub fn partition(&self, pred: &dyn Fn(f64, &[u8]) -> bool) -> usize {
        match &self.repr {
            Repr::Pack(p) => p.iter().take_while(|&(_, s, m)| pred(s, m)).count(),
            Repr::Big(b) => b.tree.partition(&b.slots, pred),
        }
    }

    /// Calls `f(member, score)` for the members with ascending ranks in
    /// `start..end` (clamped to the length), in ascending order, or in
    /// descending order when `rev`.
    pub fn range(&self, start: usize, end: usize, rev: bool, mut f: impl FnMut(&[u8], f64)) {
        let end = end.min(self.len());
        if start >= end {
            return;
        }
        match &self.repr {
            Repr::Pack(p) => {
                if rev {
                    for off in p.offsets(start, end).into_iter().rev() {
                        let (s, m, _) = pack_entry(&p.buf, off);
                        f(m, s);
                    }
                } else {
                    for (_, s, m) in p.iter().skip(start).take(end - start) {
                        f(m, s);
                    }
                }
            }
            Repr::Big(b) => {
                let from = if rev { end - 1 } else { start };
                b.tree.walk(from, end - start, rev, |id| {
                    let (s, m) = key(&b.slots, id);
                    f(m, s);
                });
            }
        }
    }

    /// Calls `f(member, score)` for the member at ascending rank `rank`
    /// (nothing when out of range).
    pub fn entry_at(&self, rank: usize, mut f: impl FnMut(&[u8], f64)) {
        self.range(rank, rank.saturating_add(1), false, &mut f);
    }

    /// Removes the members with ascending ranks in `start..end` (clamped);
    /// returns how many were removed (ZREMRANGEBYRANK/SCORE/LEX).
    pub fn remove_range(&mut self, start: usize, end: usize) -> usize {
        let end = end.min(self.len());
        if start >= end {
            return 0;
        }
        match &mut self.repr {
            Repr::Pack(p) => {
                let offs = p.offsets(start, end);
                let (a, last) = (offs[0], offs[offs.len() - 1]);
                let (_, _, z) = pack_entry(&p.buf, last);
                p.buf.drain(a..z);
                p.len -= end - start;
                if p.buf.capacity() > 2 * p.buf.len() + 64 {
                    p.buf.shrink_to_fit();
                }
            }
            Repr::Big(b) => {
                let mut ids = Vec::with_capacity(end - start);
                b.tree.walk(start, end - start, false, |id| ids.push(id));
                for id in ids {
                    b.remove_id(id);
                }
            }
        }
        end - start
    }

    /// Pops up to `count` members from the low end (or the high end when
    /// `max`), in pop order, as Redis's `genericZpopCommand`: the building
    /// block of ZPOPMIN/ZPOPMAX/ZMPOP and their blocking forms. The result
    /// holds at most `len()` entries whatever `count` is.
    pub fn pop(&mut self, max: bool, count: usize) -> Vec<(Vec<u8>, f64)> {
        let n = count.min(self.len());
        let mut out = Vec::with_capacity(n);
        if n == 0 {
            return out;
        }
        let len = self.len();
        if max {
            self.range(len - n, len, true, |m, s| out.push((m.to_vec(), s)));
            self.remove_range(len - n, len);
        } else {
            self.range(0, n, false, |m, s| out.push((m.to_vec(), s)));
            self.remove_range(0, n);
        }
        out
    }

    /// One ZSCAN step. A `listpack` set is returned whole (`f(member,
    /// score, true)`) with next cursor 0, as Redis. A `skiplist` set is
    /// scanned by slot id (`f(member, score, false)`): the cursor is the
    /// next slot to visit, so a member present for the whole iteration is
    /// returned exactly once. Visits at most `count` members (and
    /// `10 * count` slots) per call; returns the next cursor, 0 at the end.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], f64, bool)) -> u64 {
        match &self.repr {
            Repr::Pack(p) => {
                for (_, s, m) in p.iter() {
                    f(m, s, true);
                }
                0
            }
            Repr::Big(b) => {
                let n = b.slots.len();
                if cursor >= n as u64 {
                    return 0;
                }
                let mut i = cursor as usize;
                let (mut found, mut visited) = (0usize, 0usize);
                let max_visit = count.saturating_mul(10);
                while i < n && found < count && visited < max_visit {
                    let s = &b.slots[i];
                    if !s.score.is_nan() {
                        f(s.member.as_slice(), s.score, false);
                        found += 1;
                    }
                    i += 1;
                    visited += 1;
                }
                if i >= n {
                    0
                } else {
                    i as u64
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn all(z: &ZSetValue) -> Vec<(Vec<u8>, f64)> {
        let mut v = Vec::new();
        z.range(0, z.len(), false, |m, s| v.push((m.to_vec(), s)));
        v
    }

    fn sorted(model: &BTreeMap<Vec<u8>, f64>) -> Vec<(Vec<u8>, f64)> {
        let mut v: Vec<(Vec<u8>, f64)> = model.iter().map(|(m, s)| (m.clone(), *s)).collect();
        v.sort_by(|a, b| cmp_entry(a.1, &a.0, b.1, &b.0));
        v
    }

    #[test]
    fn sizes() {
        assert_eq!(std::mem::size_of::<Member>(), 24);
        assert_eq!(std::mem::size_of::<Slot>(), 32);
    }

    /// Random operations on both encodings against a BTreeMap model.
    #[test]
    fn model_check() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut rnd = move || {
            seed = crate::util::xorshift64(seed);
            seed
        };
        for big in [false, true] {
            let lim = Limits {
                max_entries: if big { 0 } else { 100_000 },
                max_value: 64,
            };
            let mut z = if big {
                ZSetValue::new_skiplist()
            } else {
                ZSetValue::new()
            };
            let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
            let steps = if big { 60_000u32 } else { 8_000 };
            for step in 0..steps {
                let mut m = format!("m{}", rnd() % 3000).into_bytes();
                if rnd() % 7 == 0 {
                    m.extend_from_slice(&[b'x'; 30]);
                }
                match rnd() % 10 {
                    0..=5 => {
                        let s = (rnd() % 50) as f64 / 4.0;
                        let added = z.insert(&m, s, lim);
                        assert_eq!(added, model.insert(m, s).is_none());
                    }
                    6 | 7 => {
                        assert_eq!(z.remove(&m), model.remove(&m));
                    }
                    8 => {
                        if rnd() % 50 == 0 {
                            let n = (rnd() % 300) as usize;
                            let a = (rnd() % (z.len() as u64 + 1)) as usize;
                            let removed = z.remove_range(a, a + n);
                            for (k, _) in sorted(&model).iter().skip(a).take(removed) {
                                model.remove(k);
                            }
                        }
                    }
                    _ => {
                        let want = model.get(&m).map(|&s| {
                            model
                                .iter()
                                .filter(|(mm, ss)| cmp_entry(**ss, mm, s, &m) == Ordering::Less)
                                .count()
                        });
                        assert_eq!(z.rank(&m), want);
                    }
                }
                if step % 2000 == 0 || step == steps - 1 {
                    let want = sorted(&model);
                    assert_eq!(all(&z), want);
                    let mut rev = Vec::new();
                    z.range(0, z.len(), true, |m, s| rev.push((m.to_vec(), s)));
                    rev.reverse();
                    assert_eq!(rev, want);
                    assert_eq!(z.len(), model.len());
                    for (i, (m, s)) in want.iter().enumerate().step_by(37) {
                        assert_eq!(z.score(m), Some(*s));
                        let lo = z.partition(&|xs, _| xs < *s);
                        assert_eq!(lo, want.iter().filter(|e| e.1 < *s).count());
                        assert!(lo <= i);
                        let mut got = None;
                        z.entry_at(i, |mm, ss| got = Some((mm.to_vec(), ss)));
                        assert_eq!(got.as_ref(), Some(&(m.clone(), *s)));
                        let mut part = Vec::new();
                        z.range(i, i + 50, true, |mm, _| part.push(mm.to_vec()));
                        let exp: Vec<Vec<u8>> = want[i..(i + 50).min(want.len())]
                            .iter()
                            .rev()
                            .map(|e| e.0.clone())
                            .collect();
                        assert_eq!(part, exp);
                    }
                }
            }
            assert_eq!(z.encoding(), if big { "skiplist" } else { "listpack" });
        }
    }

    #[test]
    fn sequential_scan_and_pops() {
        let lim = Limits {
            max_entries: 128,
            max_value: 64,
        };
        let mut z = ZSetValue::new();
        for i in 0..100_000u32 {
            z.insert(format!("k{i:06}").as_bytes(), i as f64, lim);
        }
        assert_eq!(z.encoding(), "skiplist");
        assert_eq!(z.rank(b"k000500"), Some(500));
        let mut cursor = 0;
        let mut seen = 0;
        loop {
            cursor = z.scan(cursor, 100, |_, _, _| seen += 1);
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(seen, 100_000);
        let low = z.pop(false, 3);
        assert_eq!(low[0], (b"k000000".to_vec(), 0.0));
        let high = z.pop(true, 2);
        assert_eq!(high[0], (b"k099999".to_vec(), 99999.0));
        assert_eq!(z.len(), 99_995);
        for i in (0..100_000u32).rev() {
            z.remove(format!("k{i:06}").as_bytes());
        }
        assert!(z.is_empty());
        let mut d = ZSetValue::new();
        for i in (0..5000u32).rev() {
            d.insert(format!("k{i}").as_bytes(), i as f64, lim);
        }
        assert_eq!(d.rank(b"k0"), Some(0));
        assert_eq!(d.rank(b"k4999"), Some(4999));
        assert_eq!(d.pop(false, usize::MAX).len(), 5000);
        assert!(d.is_empty());
    }

    #[test]
    fn listpack_zero_sign() {
        let lim = Limits {
            max_entries: 128,
            max_value: 64,
        };
        let mut z = ZSetValue::new();
        z.insert(b"a", -0.0, lim);
        assert!(z.score(b"a").unwrap().is_sign_positive());
        let mut s = ZSetValue::new_skiplist();
        s.insert(b"a", -0.0, lim);
        assert!(s.score(b"a").unwrap().is_sign_negative());
    }
}

#[cfg(test)]
mod pack_tests {
    use super::*;

    #[test]
    fn score_encodings_round_trip() {
        for v in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            1.5,
            0.1,
            -2.5e-5,
            1e17,
            -9007199254740991.0,
            9007199254740992.0,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            5e-324,
            i64::MAX as f64,
            i64::MIN as f64,
        ] {
            let mut b = Vec::new();
            encode_entry(v, b"member", &mut b);
            let (s, m, end) = pack_entry(&b, 0);
            assert_eq!(end, b.len());
            assert_eq!(m, b"member");
            let want = if v == 0.0 { 0.0 } else { v };
            assert_eq!(s.to_bits(), want.to_bits(), "{v}");
        }
        let mut b = Vec::new();
        encode_entry(3.0, b"m0", &mut b);
        assert_eq!(b.len(), 5);
    }
}
