//! The stream type (Redis 7.0's t_stream.c, redis.io/docs/data-types/streams).
//!
//! Entries live in nodes: each node is a Redis listpack ([`super::listpack`])
//! keyed by its *master id* (the id of the first entry ever appended to it)
//! in an ordered map, the way Redis keeps listpacks in a radix tree keyed by
//! the 128-bit big-endian id. A node starts with a master entry
//!
//! ```text
//! count | deleted | num-fields | field_1 ... field_N | 0
//! ```
//!
//! followed by the entries, each delta-encoded against the master:
//!
//! ```text
//! flags | ms-diff | seq-diff | [num-fields field_1 ...] value_1 ... | lp-count
//! ```
//!
//! where `flags` holds [`FLAG_DELETED`] and [`FLAG_SAMEFIELDS`] (the fields
//! are the master's and are omitted), and `lp-count` is the number of
//! elements of the entry before it, so the node can be walked backwards.
//! A deleted entry stays in its node, flagged, until every entry of the
//! node is deleted and the node goes. A node is closed when it reaches
//! `stream-node-max-bytes` or `stream-node-max-entries` (`streamAppendItem`).
//! The bytes are exactly Redis's, so the RDB form of a node is the node.
//!
//! Consumer groups ([`Group`]) keep the last delivered id, the logical read
//! counter (`entries_read`, for the lag of XINFO GROUPS), the pending
//! entries list (PEL) and the consumers with their own PELs.

use super::listpack::{self as lp, Elem};
use std::collections::{BTreeMap, BTreeSet};

/// Entry flag: deleted (XDEL / trimming inside a node).
pub const FLAG_DELETED: i64 = 1;
/// Entry flag: the entry's fields are the master entry's.
pub const FLAG_SAMEFIELDS: i64 = 2;
/// Largest node Redis builds whatever `stream-node-max-bytes` says
/// (STREAM_LISTPACK_MAX_SIZE).
pub const NODE_MAX_SIZE: usize = 1 << 30;
/// `entries_read` of a group whose position is unknown
/// (SCG_INVALID_ENTRIES_READ).
pub const INVALID_ENTRIES_READ: i64 = -1;

/// A stream entry id: milliseconds and sequence, ordered as a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct StreamId {
    /// Milliseconds part.
    pub ms: u64,
    /// Sequence part.
    pub seq: u64,
}

impl StreamId {
    /// 0-0.
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// The largest id.
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// An id.
    pub const fn new(ms: u64, seq: u64) -> Self {
        StreamId { ms, seq }
    }

    /// The next id, None past [`StreamId::MAX`] (`streamIncrID`).
    pub fn incr(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                None
            } else {
                Some(StreamId::new(self.ms + 1, 0))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq + 1))
        }
    }

    /// The previous id, None before 0-0 (`streamDecrID`).
    pub fn decr(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                None
            } else {
                Some(StreamId::new(self.ms - 1, u64::MAX))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq - 1))
        }
    }

    /// True for 0-0.
    pub fn is_zero(self) -> bool {
        self.ms == 0 && self.seq == 0
    }

    /// The 16-byte big-endian key Redis uses for nodes and PEL entries.
    pub fn to_be_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    /// Reads a 16-byte big-endian id.
    pub fn from_be_bytes(b: &[u8]) -> Option<StreamId> {
        if b.len() != 16 {
            return None;
        }
        let mut ms = [0u8; 8];
        let mut seq = [0u8; 8];
        ms.copy_from_slice(&b[..8]);
        seq.copy_from_slice(&b[8..]);
        Some(StreamId::new(
            u64::from_be_bytes(ms),
            u64::from_be_bytes(seq),
        ))
    }

    /// Writes `ms-seq` into `buf` and returns the text.
    pub fn fmt<'a>(&self, buf: &'a mut IdBuf) -> &'a [u8] {
        let mut t = itoa::Buffer::new();
        let a = t.format(self.ms).as_bytes();
        let mut n = a.len();
        buf.0[..n].copy_from_slice(a);
        buf.0[n] = b'-';
        n += 1;
        let b = t.format(self.seq).as_bytes();
        buf.0[n..n + b.len()].copy_from_slice(b);
        n += b.len();
        &buf.0[..n]
    }

    /// `ms-seq` as an owned string.
    pub fn to_vec(self) -> Vec<u8> {
        let mut b = IdBuf::default();
        self.fmt(&mut b).to_vec()
    }
}

/// Room for the text of an id (two u64 and a dash).
#[derive(Debug)]
pub struct IdBuf(pub [u8; 41]);

impl Default for IdBuf {
    fn default() -> Self {
        IdBuf([0; 41])
    }
}

/// A pending entry: delivered to a consumer of a group, not yet
/// acknowledged (`streamNACK`).
#[derive(Debug, Clone, PartialEq)]
pub struct Nack {
    /// Last delivery, ms since the epoch.
    pub delivery_time: u64,
    /// Times delivered.
    pub delivery_count: u64,
    /// The consumer that owns it.
    pub consumer: Box<[u8]>,
}

/// A consumer of a group (`streamConsumer`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Consumer {
    /// Last interaction (read or claim attempt), ms since the epoch.
    pub seen_time: u64,
    /// Last successful interaction (entries read or claimed), ms since the
    /// epoch; -1 never (Redis 7.2's active-time).
    pub active_time: i64,
    /// Its pending entries.
    pub pel: BTreeSet<StreamId>,
}

/// A consumer group (`streamCG`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Group {
    /// Last id delivered to a consumer.
    pub last_id: StreamId,
    /// Logical read counter ([`INVALID_ENTRIES_READ`] when unknown).
    pub entries_read: i64,
    /// Pending entries of all consumers.
    pub pel: BTreeMap<StreamId, Nack>,
    /// Consumers by name.
    pub consumers: BTreeMap<Box<[u8]>, Consumer>,
}

impl Group {
    /// A group positioned at `last_id`.
    pub fn new(last_id: StreamId, entries_read: i64) -> Self {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// The consumer `name`, created (seen now) when missing; the bool says
    /// whether it was created.
    pub fn consumer(&mut self, name: &[u8], now: u64) -> (&mut Consumer, bool) {
        let created = !self.consumers.contains_key(name);
        let c = self
            .consumers
            .entry(name.into())
            .or_insert_with(|| Consumer {
                seen_time: now,
                active_time: -1,
                pel: BTreeSet::new(),
            });
        (c, created)
    }
}

/// A stream value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamValue {
    nodes: BTreeMap<StreamId, Vec<u8>>,
    /// Entries (not deleted).
    pub length: u64,
    /// The largest id ever added (or set by XSETID).
    pub last_id: StreamId,
    /// The first entry's id (0-0 when empty).
    pub first_id: StreamId,
    /// The largest id deleted by XDEL (or set by XSETID).
    pub max_deleted_id: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    /// Consumer groups by name.
    pub groups: BTreeMap<Box<[u8]>, Group>,
}

/// One entry met while walking a stream: its id and a view of its fields.
#[derive(Debug, Clone, Copy)]
pub struct EntryView<'a> {
    lp: &'a [u8],
    /// Position of the master's first field (for SAMEFIELDS entries).
    master_fields: usize,
    /// Position of the entry's first field (or value, for SAMEFIELDS).
    at: usize,
    /// Number of field/value pairs.
    pub fields: usize,
    same: bool,
}

impl<'a> EntryView<'a> {
    /// Calls `f` for each field and value, in order.
    pub fn for_each(&self, mut f: impl FnMut(Elem<'a>, Elem<'a>)) {
        let lpb = self.lp;
        let mut p = self.at;
        let mut m = self.master_fields;
        for _ in 0..self.fields {
            if self.same {
                let field = lp::get(lpb, m);
                let value = lp::get(lpb, p);
                f(field, value);
                m = lp::end_of(lpb, m);
                p = lp::end_of(lpb, p);
            } else {
                let field = lp::get(lpb, p);
                p = lp::end_of(lpb, p);
                let value = lp::get(lpb, p);
                p = lp::end_of(lpb, p);
                f(field, value);
            }
        }
    }

    /// The fields and values as owned pairs.
    pub fn pairs(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut v = Vec::with_capacity(self.fields);
        self.for_each(|f, x| v.push((f.to_vec(), x.to_vec())));
        v
    }
}

/// The master entry of a node: its counters and where things are.
struct Master {
    count: i64,
    deleted: i64,
    nfields: usize,
    /// Position of the first master field.
    fields_at: usize,
    /// Position of the first entry (None: no entry, never the case for a
    /// node in the map).
    first_entry: Option<usize>,
}

fn master(node: &[u8]) -> Master {
    let p0 = lp::first(node).expect("a node has a master entry");
    let count = lp::get(node, p0).int();
    let p1 = lp::end_of(node, p0);
    let deleted = lp::get(node, p1).int();
    let p2 = lp::end_of(node, p1);
    let nfields = lp::get(node, p2).int().max(0) as usize;
    let fields_at = lp::end_of(node, p2);
    let mut p = fields_at;
    for _ in 0..nfields {
        p = lp::end_of(node, p);
    }
    // p is the master terminator.
    let first_entry = lp::next(node, p);
    Master {
        count,
        deleted,
        nfields,
        fields_at,
        first_entry,
    }
}

/// Decodes the entry whose flags element is at `p`: (flags, id, view,
/// position of the next entry's flags or None).
fn decode_entry<'a>(
    node: &'a [u8],
    m: &Master,
    master_id: StreamId,
    p: usize,
) -> (i64, StreamId, EntryView<'a>, Option<usize>) {
    let flags = lp::get(node, p).int();
    let p = lp::end_of(node, p);
    let ms = lp::get(node, p).int();
    let p = lp::end_of(node, p);
    let seq = lp::get(node, p).int();
    let mut p = lp::end_of(node, p);
    let id = StreamId::new(
        master_id.ms.wrapping_add(ms as u64),
        master_id.seq.wrapping_add(seq as u64),
    );
    let same = flags & FLAG_SAMEFIELDS != 0;
    let fields = if same {
        m.nfields
    } else {
        let n = lp::get(node, p).int().max(0) as usize;
        p = lp::end_of(node, p);
        n
    };
    let view = EntryView {
        lp: node,
        master_fields: m.fields_at,
        at: p,
        fields,
        same,
    };
    let skip = if same { fields } else { fields * 2 };
    for _ in 0..skip {
        p = lp::end_of(node, p);
    }
    // p: lp-count.
    let next = lp::next(node, p);
    (flags, id, view, next)
}

/// Position of the flags of the entry whose lp-count element is at `p`.
fn entry_start_from_count(node: &[u8], p: usize) -> usize {
    let n = lp::get(node, p).int();
    let mut q = p;
    for _ in 0..n {
        q = lp::prev(node, q).unwrap_or(q);
    }
    q
}

/// How a trim is bounded (XADD / XTRIM's MAXLEN | MINID).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trim {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Drop entries with a smaller id.
    MinId(StreamId),
}

impl StreamValue {
    /// An empty stream.
    pub fn new() -> Self {
        StreamValue::default()
    }

    /// Number of nodes (XINFO STREAM radix-tree-keys).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The nodes (master id, listpack) in order: the RDB form.
    pub fn nodes(&self) -> impl DoubleEndedIterator<Item = (&StreamId, &Vec<u8>)> {
        self.nodes.iter()
    }

    /// Adds a node read from an RDB (already validated by the caller).
    pub fn insert_node(&mut self, master_id: StreamId, node: Vec<u8>) {
        self.nodes.insert(master_id, node);
    }

    /// Nodes of the radix tree Redis would hold for these node keys
    /// (XINFO STREAM radix-tree-nodes): the compressed trie of the 16-byte
    /// master ids, counted as rax counts nodes (a chain of single-child
    /// positions is one node, a branching position and each of its
    /// children are nodes, the keys are leaves; 1 for an empty tree).
    pub fn rax_nodes(&self) -> usize {
        fn count(keys: &[[u8; 16]], depth: usize) -> usize {
            if keys.len() == 1 {
                return if depth == 16 { 1 } else { 2 };
            }
            let (a, b) = (&keys[0], &keys[keys.len() - 1]);
            let mut l = depth;
            while l < 16 && a[l] == b[l] {
                l += 1;
            }
            if l > depth {
                return 1 + count_branch(keys, l);
            }
            count_branch(keys, depth)
        }
        fn count_branch(keys: &[[u8; 16]], depth: usize) -> usize {
            let mut n = 1;
            let mut i = 0;
            while i < keys.len() {
                let c = keys[i][depth];
                let mut j = i + 1;
                while j < keys.len() && keys[j][depth] == c {
                    j += 1;
                }
                n += count(&keys[i..j], depth + 1);
                i = j;
            }
            n
        }
        let keys: Vec<[u8; 16]> = self.nodes.keys().map(|k| k.to_be_bytes()).collect();
        if keys.is_empty() {
            return 1;
        }
        count(&keys, 0)
    }

    /// Approximate heap bytes.
    pub fn mem_usage(&self) -> usize {
        self.mem_usage_sampled(usize::MAX)
    }

    /// Approximate heap bytes with the entry nodes sampled as Redis's
    /// `objectComputeSize` samples a stream's listpacks: the first
    /// `samples` nodes give an average applied to all nodes but the last,
    /// whose real size is added; consumer groups, their PELs and consumers
    /// are always counted in full. Exact when `samples` covers every node.
    pub fn mem_usage_sampled(&self, samples: usize) -> usize {
        let mut n = 96;
        let count = self.nodes.len();
        let seen = samples.max(1).min(count);
        let sampled: usize = self
            .nodes
            .values()
            .take(seen)
            .map(|v| v.capacity() + 48)
            .sum();
        if seen == count {
            n += sampled;
        } else {
            n += sampled / seen * (count - 1);
            n += self
                .nodes
                .values()
                .next_back()
                .map_or(0, |v| v.capacity() + 48);
        }
        for (name, g) in &self.groups {
            n += name.len() + 80 + g.pel.len() * 80;
            for (c, cons) in &g.consumers {
                n += c.len() + 64 + cons.pel.len() * 24;
            }
        }
        n
    }

    /// Appends an entry with id `id` (greater than [`Self::last_id`], the
    /// caller checked) and `fv` (field, value, field, value...; an even,
    /// non-zero count). `max_bytes` / `max_entries` are
    /// `stream-node-max-bytes` / `stream-node-max-entries` (0: no limit).
    pub fn append(&mut self, id: StreamId, fv: &[&[u8]], max_bytes: usize, max_entries: usize) {
        self.append_with(id, fv.len(), |i| fv[i], max_bytes, max_entries)
    }

    /// [`Self::append`] with the fields and values read through `fv(i)`
    /// for `i < n` (no slice to build per XADD).
    pub fn append_with<'a>(
        &mut self,
        id: StreamId,
        n: usize,
        fv: impl Fn(usize) -> &'a [u8],
        max_bytes: usize,
        max_entries: usize,
    ) {
        let nfields = n / 2;
        let totelelen: usize = (0..n).map(|i| fv(i).len()).sum();
        let max_bytes = if max_bytes == 0 || max_bytes > NODE_MAX_SIZE {
            NODE_MAX_SIZE
        } else {
            max_bytes
        };
        let mut new_node = true;
        if let Some((_, node)) = self.nodes.iter().next_back() {
            new_node = false;
            if node.len() + totelelen >= max_bytes {
                new_node = true;
            } else if max_entries > 0 {
                let m = master(node);
                if (m.count + m.deleted) as usize >= max_entries {
                    new_node = true;
                }
            }
        }
        if new_node {
            if let Some(mut last) = self.nodes.last_entry() {
                // A closed node is copied into an allocation of its exact
                // size: shrinking in place would keep the grown block (an
                // allocator may not move a block shrunk by less than half).
                let full = last.get_mut();
                if full.capacity() > full.len() {
                    *full = full.as_slice().to_vec();
                }
            }
            let mut node = lp::new();
            let master = [Elem::Int(1), Elem::Int(0), Elem::Int(nfields as i64)];
            lp::append(&mut node, &master);
            for i in (0..n).step_by(2) {
                lp::append_bytes(&mut node, &[fv(i)]);
            }
            // The master terminator, then flags, ms-diff, seq-diff, the
            // values and lp-count.
            let head = [
                Elem::Int(0),
                Elem::Int(FLAG_SAMEFIELDS),
                Elem::Int(0),
                Elem::Int(0),
            ];
            lp::append(&mut node, &head);
            for i in (1..n).step_by(2) {
                lp::append_bytes(&mut node, &[fv(i)]);
            }
            lp::append(&mut node, &[Elem::Int(nfields as i64 + 3)]);
            self.nodes.insert(id, node);
        } else {
            let mut last = self.nodes.last_entry().expect("checked");
            let master_id = *last.key();
            let node = last.get_mut();
            let m = master(node);
            let p0 = lp::first(node).expect("master");
            lp::replace_int(node, p0, m.count + 1);
            // Re-read: the replacement may have moved the fields.
            let m = master(node);
            let mut same = m.nfields == nfields;
            if same {
                let mut p = m.fields_at;
                for i in (0..n).step_by(2) {
                    if !lp::get(node, p).eq_bytes(fv(i)) {
                        same = false;
                        break;
                    }
                    p = lp::end_of(node, p);
                }
            }
            let ms = Elem::Int(id.ms.wrapping_sub(master_id.ms) as i64);
            let seq = Elem::Int(id.seq.wrapping_sub(master_id.seq) as i64);
            if same {
                lp::append(node, &[Elem::Int(FLAG_SAMEFIELDS), ms, seq]);
                for i in (1..n).step_by(2) {
                    lp::append_bytes(node, &[fv(i)]);
                }
                lp::append(node, &[Elem::Int(nfields as i64 + 3)]);
            } else {
                lp::append(node, &[Elem::Int(0), ms, seq, Elem::Int(nfields as i64)]);
                for i in 0..n {
                    lp::append_bytes(node, &[fv(i)]);
                }
                lp::append(node, &[Elem::Int(2 * nfields as i64 + 4)]);
            }
        }
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
    }

    /// Walks the entries with ids in `[start, end]`, ascending (or
    /// descending when `rev`), skipping deleted ones; `f` returns false to
    /// stop. Deleted entries are not shown to `f`.
    pub fn range<'s>(
        &'s self,
        start: StreamId,
        end: StreamId,
        rev: bool,
        mut f: impl FnMut(StreamId, EntryView<'s>) -> bool,
    ) {
        if start > end || self.nodes.is_empty() {
            return;
        }
        if !rev {
            // The node that may hold `start`: the last one whose master id
            // is <= start, then the following ones.
            let from = self
                .nodes
                .range(..=start)
                .next_back()
                .map(|(k, _)| *k)
                .unwrap_or(StreamId::MIN);
            for (mid, node) in self.nodes.range(from..) {
                if *mid > end {
                    return;
                }
                let m = master(node);
                let mut p = m.first_entry;
                while let Some(at) = p {
                    let (flags, id, view, next) = decode_entry(node, &m, *mid, at);
                    p = next;
                    if id < start || flags & FLAG_DELETED != 0 {
                        continue;
                    }
                    if id > end {
                        return;
                    }
                    if !f(id, view) {
                        return;
                    }
                }
            }
        } else {
            for (mid, node) in self.nodes.range(..=end).rev() {
                let m = master(node);
                let Some(first) = m.first_entry else { continue };
                let mut p = lp::last(node);
                while let Some(at) = p {
                    let s = entry_start_from_count(node, at);
                    p = if s > first { lp::prev(node, s) } else { None };
                    let (flags, id, view, _) = decode_entry(node, &m, *mid, s);
                    if id > end || flags & FLAG_DELETED != 0 {
                        continue;
                    }
                    if id < start {
                        return;
                    }
                    if !f(id, view) {
                        return;
                    }
                }
                if *mid < start {
                    return;
                }
            }
        }
    }

    /// The first (or last, `last`) entry's id, including or not deleted
    /// ones (`streamGetEdgeID`); None when there is none.
    pub fn edge_id(&self, last: bool) -> Option<StreamId> {
        let mut found = None;
        self.range(StreamId::MIN, StreamId::MAX, last, |id, _| {
            found = Some(id);
            false
        });
        found
    }

    /// True when an entry `id` exists (not deleted).
    pub fn contains(&self, id: StreamId) -> bool {
        let mut found = false;
        self.range(id, id, false, |_, _| {
            found = true;
            false
        });
        found
    }

    /// Deletes entry `id` (XDEL's `streamDeleteItem`): true when it existed.
    /// A node left with no entry goes. Does not touch first_id /
    /// max_deleted_id (the caller does, as xdelCommand).
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&mid, _)) = self.nodes.range(..=id).next_back() else {
            return false;
        };
        let node = self.nodes.get_mut(&mid).expect("found");
        let m = master(node);
        let mut p = m.first_entry;
        while let Some(at) = p {
            let (flags, eid, _, next) = decode_entry(node, &m, mid, at);
            // Deleted entries are skipped before comparing: after XSETID
            // below a deleted id, a later entry may follow a larger
            // deleted one (Redis's iterator skips them too).
            if flags & FLAG_DELETED != 0 {
                p = next;
                continue;
            }
            if eid == id {
                if m.count == 1 {
                    self.nodes.remove(&mid);
                } else {
                    lp::replace_int(node, at, flags | FLAG_DELETED);
                    let p0 = lp::first(node).expect("master");
                    lp::replace_int(node, p0, m.count - 1);
                    let p1 = lp::end_of(node, lp::first(node).expect("master"));
                    lp::replace_int(node, p1, m.deleted + 1);
                }
                self.length -= 1;
                return true;
            }
            if eid > id {
                return false;
            }
            p = next;
        }
        false
    }

    /// Trims as `streamTrim`: whole nodes from the front while that keeps
    /// the bound; then, unless `approx`, entries inside the first node
    /// left. `limit` (0: none) caps the entries removed, counted per node
    /// before the node is removed. Returns the entries removed; updates
    /// first_id.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted: u64 = 0;
        loop {
            if let Trim::MaxLen(max) = how {
                if self.length <= max {
                    break;
                }
            }
            let Some(mut first) = self.nodes.first_entry() else {
                break;
            };
            let mid = *first.key();
            let node = first.get_mut();
            let m = master(node);
            let entries = m.count.max(0) as u64;
            if limit > 0 && deleted + entries > limit {
                break;
            }
            let remove = match how {
                Trim::MaxLen(max) => self.length - entries >= max,
                Trim::MinId(min) => {
                    let last_at = lp::last(node).expect("entries");
                    let s = entry_start_from_count(node, last_at);
                    let (_, last_id, _, _) = decode_entry(node, &m, mid, s);
                    last_id < min
                }
            };
            if remove {
                first.remove();
                self.length -= entries;
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            let mut from_node: i64 = 0;
            let mut p = m.first_entry;
            while let Some(at) = p {
                let (flags, id, _, next) = decode_entry(node, &m, mid, at);
                let stop = match how {
                    Trim::MaxLen(max) => self.length <= max,
                    Trim::MinId(min) => id >= min,
                };
                if stop {
                    break;
                }
                let mut next = next;
                if flags & FLAG_DELETED == 0 {
                    // A loaded node may hold the flags in a wider encoding
                    // than needed: the rewrite can move what follows.
                    let before = node.len();
                    lp::replace_int(node, at, flags | FLAG_DELETED);
                    let shift = node.len() as isize - before as isize;
                    next = next.map(|x| (x as isize + shift) as usize);
                    from_node += 1;
                    self.length -= 1;
                }
                p = next;
            }
            deleted += from_node as u64;
            let p0 = lp::first(node).expect("master");
            lp::replace_int(node, p0, m.count - from_node);
            let p1 = lp::end_of(node, lp::first(node).expect("master"));
            lp::replace_int(node, p1, m.deleted + from_node);
            break;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if let Some(f) = self.edge_id(false) {
            self.first_id = f;
        }
        deleted
    }

    /// The id of the first entry, deleted ones included, or `first_id`'s
    /// fallback for MINID trimming rewrite (`streamGetEdgeID(s,1,0,..)`).
    pub fn first_id_with_deleted(&self) -> StreamId {
        let Some((mid, node)) = self.nodes.iter().next() else {
            return StreamId::MIN;
        };
        let m = master(node);
        match m.first_entry {
            Some(at) => decode_entry(node, &m, *mid, at).1,
            None => StreamId::MIN,
        }
    }

    /// Estimated logical position of `id` since the first entry ever
    /// (`streamEstimateDistanceFromFirstEverEntry`), or
    /// [`INVALID_ENTRIES_READ`].
    pub fn estimate_distance(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        if self.length == 0 && id <= self.last_id {
            return self.entries_added as i64;
        }
        if id == self.last_id {
            return self.entries_added as i64;
        }
        if id > self.last_id {
            return INVALID_ENTRIES_READ;
        }
        if self.max_deleted_id.is_zero() || self.max_deleted_id < self.first_id {
            if id < self.first_id {
                return (self.entries_added - self.length) as i64;
            }
            if id == self.first_id {
                return (self.entries_added - self.length + 1) as i64;
            }
        }
        INVALID_ENTRIES_READ
    }

    /// True when `[start, end]` (None: unbounded) may hold a deleted entry
    /// (`streamRangeHasTombstones`).
    pub fn range_has_tombstones(&self, start: Option<StreamId>, end: Option<StreamId>) -> bool {
        if self.length == 0 || self.max_deleted_id.is_zero() {
            return false;
        }
        if self.first_id > self.max_deleted_id {
            return false;
        }
        let s = start.unwrap_or(StreamId::MIN);
        let e = end.unwrap_or(StreamId::MAX);
        s <= self.max_deleted_id && self.max_deleted_id <= e
    }

    /// The lag of a group as XINFO GROUPS reports it
    /// (`streamReplyWithCGLag`), None when it cannot be known.
    pub fn group_lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != INVALID_ENTRIES_READ
            && !self.range_has_tombstones(Some(g.last_id), None)
        {
            return Some(self.entries_added as i64 - g.entries_read);
        }
        let r = self.estimate_distance(g.last_id);
        (r != INVALID_ENTRIES_READ).then(|| self.entries_added as i64 - r)
    }
}

/// Checks a node read from an RDB or a DUMP payload before it is used
/// (`streamValidateListpackIntegrity` with deep checking): a valid
/// listpack whose master entry and entries are well formed, with ids
/// ascending from `master_id`, and whose counters agree with its entries.
/// Returns (valid entries, first valid id, last id). A malformed node is an
/// error, never a panic.
pub fn validate_node(
    node: &[u8],
    master_id: StreamId,
) -> Result<(u64, Option<StreamId>, StreamId), &'static str> {
    lp::validate(node)?;
    let int = |p: Option<usize>| -> Result<(i64, usize), &'static str> {
        let at = p.ok_or("stream node truncated")?;
        match lp::get(node, at) {
            Elem::Int(v) => Ok((v, at)),
            Elem::Str(s) => crate::util::parse_i64(s)
                .map(|v| (v, at))
                .ok_or("stream node: integer expected"),
        }
    };
    let (count, p) = int(lp::first(node))?;
    let (deleted, p) = int(lp::next(node, p))?;
    let (nfields, mut p) = int(lp::next(node, p))?;
    if count < 0 || deleted < 0 || nfields < 0 {
        return Err("stream node: negative master counter");
    }
    for _ in 0..nfields {
        p = lp::next(node, p).ok_or("stream node truncated")?;
    }
    let (zero, p) = int(lp::next(node, p))?;
    if zero != 0 {
        return Err("stream node: bad master terminator");
    }
    let mut cur = lp::next(node, p);
    if cur.is_none() {
        return Err("stream node without entries");
    }
    let (mut valid, mut dels) = (0i64, 0i64);
    let mut first = None;
    let mut last = StreamId::MIN;
    let mut prev_id: Option<StreamId> = None;
    while cur.is_some() {
        let (flags, p) = int(cur)?;
        let (ms, p) = int(lp::next(node, p))?;
        let (seq, mut p) = int(lp::next(node, p))?;
        let id = StreamId::new(
            master_id.ms.wrapping_add(ms as u64),
            master_id.seq.wrapping_add(seq as u64),
        );
        if prev_id.is_none() && id != master_id {
            return Err("stream node: first entry is not the master id");
        }
        prev_id = Some(id);
        let mut elems = 3i64;
        let same = flags & FLAG_SAMEFIELDS != 0;
        let n = if same {
            nfields
        } else {
            let (n, q) = int(lp::next(node, p))?;
            p = q;
            elems += 1;
            // Bounded by the elements the node holds (no overflow).
            if !(0..=1 << 30).contains(&n) {
                return Err("stream node: bad field count");
            }
            n * 2
        };
        for _ in 0..n {
            p = lp::next(node, p).ok_or("stream node truncated")?;
        }
        elems += n;
        let (lpcount, p) = int(lp::next(node, p))?;
        if lpcount != elems {
            return Err("stream node: bad lp-count");
        }
        if flags & FLAG_DELETED != 0 {
            dels += 1;
        } else {
            valid += 1;
            if first.is_none() {
                first = Some(id);
            }
        }
        last = id;
        cur = lp::next(node, p);
    }
    if valid != count || dels != deleted {
        return Err("stream node: master counters do not match its entries");
    }
    Ok((valid as u64, first, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(s: &StreamValue, rev: bool) -> Vec<StreamId> {
        let mut v = Vec::new();
        s.range(StreamId::MIN, StreamId::MAX, rev, |id, _| {
            v.push(id);
            true
        });
        v
    }

    #[test]
    fn append_range_delete_trim() {
        let mut s = StreamValue::new();
        for i in 1..=25u64 {
            let v = i.to_string();
            if i % 3 == 0 {
                s.append(StreamId::new(i, 0), &[b"g", v.as_bytes()], 4096, 10);
            } else {
                s.append(
                    StreamId::new(i, 0),
                    &[b"f", v.as_bytes(), b"x", b"y"],
                    4096,
                    10,
                );
            }
        }
        assert_eq!(s.node_count(), 3);
        assert_eq!(ids(&s, false).len(), 25);
        let mut r = ids(&s, true);
        r.reverse();
        assert_eq!(r, ids(&s, false));
        let mut got = Vec::new();
        s.range(StreamId::new(5, 0), StreamId::new(5, 0), false, |_, e| {
            got = e.pairs();
            true
        });
        assert_eq!(
            got,
            vec![
                (b"f".to_vec(), b"5".to_vec()),
                (b"x".to_vec(), b"y".to_vec())
            ]
        );
        assert!(s.delete(StreamId::new(5, 0)));
        assert!(!s.delete(StreamId::new(5, 0)));
        assert_eq!(s.length, 24);
        assert!(!s.contains(StreamId::new(5, 0)));
        assert_eq!(s.trim(Trim::MaxLen(20), true, 0), 0);
        assert_eq!(s.trim(Trim::MaxLen(20), false, 0), 4);
        assert_eq!(s.length, 20);
        assert_eq!(s.first_id, StreamId::new(6, 0));
        assert_eq!(s.trim(Trim::MinId(StreamId::new(21, 0)), true, 0), 15);
        assert_eq!(s.length, 5);
        assert_eq!(s.trim(Trim::MinId(StreamId::new(23, 0)), false, 0), 2);
        assert_eq!(ids(&s, false).first(), Some(&StreamId::new(23, 0)));
        for n in s.nodes.values() {
            assert!(lp::validate(n).is_ok());
        }
    }

    /// XDEL of an id that sorts between a deleted entry and the next live
    /// one (reachable after XSETID below a deleted id): the deleted entry
    /// is skipped, the live one found (redis-server 7.0 answers 1).
    #[test]
    fn delete_skips_deleted_entries() {
        let mut s = StreamValue::new();
        s.append(StreamId::new(1, 0), &[b"a", b"1"], 4096, 100);
        s.append(StreamId::new(5, 0), &[b"a", b"1"], 4096, 100);
        assert!(s.delete(StreamId::new(5, 0)));
        s.append(StreamId::new(4, 0), &[b"a", b"1"], 4096, 100);
        assert!(s.delete(StreamId::new(4, 0)));
        assert_eq!(s.length, 1);
        assert_eq!(ids(&s, false), vec![StreamId::new(1, 0)]);
    }
}
