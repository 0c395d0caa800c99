//! `Dict`: the chained hash table behind every database shard (and, later,
//! behind large hashes and sets).
//!
//! Why not `hashbrown`? SCAN's contract (redis.io/commands/scan: "a full
//! iteration always retrieves all the elements that were present in the
//! collection from the start to the end of a full iteration") needs a table
//! whose element positions depend only on the hash and the table size, so
//! that the reverse-binary cursor of Redis's `dictScan` (dict.c) survives
//! growth and shrinking between calls. An open-addressing table moves
//! elements on probe collisions and deletions; a chained table does not.
//!
//! The table is a power-of-two vector of singly linked buckets. It grows when
//! the load factor passes 1 and shrinks below 1/8, rehashing in one step:
//! shards keep each table small (a database is split into many shards), so a
//! rehash costs well under a millisecond even for millions of keys.
//!
//! The caller passes the key's 64-bit hash (see [`hash_key`]) so that a
//! command hashes its key once, for shard selection and lookup alike. Nodes
//! do not cache it (a node is 64 bytes for the keyspace: see [`Dict`]'s
//! node layout); growing or shrinking the table hashes every key again.

use super::smallbytes::SmallBytes;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The process-wide seeded hasher for keys (foldhash, randomly seeded at start,
/// so hash flooding needs the seed).
fn hasher() -> &'static foldhash::quality::RandomState {
    static H: OnceLock<foldhash::quality::RandomState> = OnceLock::new();
    H.get_or_init(foldhash::quality::RandomState::default)
}

/// 64-bit hash of any byte string (hash fields, set and sorted-set
/// members; and the low 56 bits of [`hash_key`]).
#[inline]
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    hasher().hash_one(bytes)
}

/// Set once at start-up, before any key is hashed, when the server runs
/// in cluster mode (`cluster-enabled yes`): [`hash_key`] then puts the
/// key's hash slot in the top bits.
static SLOT_SHARDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes [`hash_key`] shard keys by hash slot from now on (cluster mode).
/// Must be called before any key is stored: hashes already taken would no
/// longer match. Process-wide.
pub fn enable_slot_sharding() {
    SLOT_SHARDING.store(true, Ordering::Relaxed);
}

/// True once [`enable_slot_sharding`] was called (cluster mode).
pub fn slot_sharding() -> bool {
    SLOT_SHARDING.load(Ordering::Relaxed)
}

/// 64-bit hash of a key, used both for shard selection (high 8 bits) and
/// for the bucket inside a shard's [`Dict`] (low bits).
///
/// In cluster mode the top 14 bits are the key's hash slot
/// (db/slotindex.rs, Redis's keyHashSlot), so the shard is the slot's top 8 bits: every key of
/// a slot lives in one shard, and the shard's slot index
/// (db/slotindex.rs) reads the slot from the hash. The low 50 bits are
/// [`hash_bytes`]'s in both modes, so bucket positions never depend on the
/// mode.
#[inline]
pub fn hash_key(key: &[u8]) -> u64 {
    let h = hasher().hash_one(key);
    if SLOT_SHARDING.load(Ordering::Relaxed) {
        let slot = super::slotindex::key_hash_slot(key) as u64;
        (h & ((1 << 50) - 1)) | (slot << 50)
    } else {
        h
    }
}

/// One entry: 64 bytes for the keyspace's `Dict<Entry>` (8-byte link,
/// 32-byte entry, 24-byte key with up to 22 bytes inline). The key's hash is
/// not stored: lookups compare keys directly and a resize hashes each key
/// again, which costs a few nanoseconds per key and only when the table
/// doubles or halves.
/// Key equality tuned for chains without cached hashes: keys of 8..=16
/// bytes (most keys) compare as two 64-bit words, and longer keys compare
/// their last 8 bytes first (keys sharing a prefix such as `user:` differ at
/// the end), so a mismatch rarely reaches `memcmp`.
#[inline(always)]
fn key_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        let word = |s: &[u8], at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&s[at..at + 8]);
            u64::from_ne_bytes(w)
        };
        if word(a, n - 8) != word(b, n - 8) {
            return false;
        }
        if n <= 16 {
            return word(a, 0) == word(b, 0);
        }
    }
    a == b
}

struct Node<V> {
    next: Link<V>,
    val: V,
    key: SmallBytes,
}

type Link<V> = Option<Box<Node<V>>>;

/// The outcome of [`Dict::get_mut_or_remove`].
pub enum Lookup<'a, V> {
    /// The key is absent.
    Missing,
    /// The key is present and was kept.
    Found(&'a mut V),
    /// The key was present and the predicate asked for its removal.
    Removed(V),
}

/// A chained hash table from byte-string keys to `V`, with Redis's SCAN cursor
/// semantics and O(1) random sampling. Every key carries one caller-defined
/// bit, the *mark* (the keyspace uses it for "has a TTL").
pub struct Dict<V> {
    table: Vec<Link<V>>,
    len: usize,
    /// Where the bucket array is published for lock-free prefetching (the
    /// keyspace's shards; None for collection dicts).
    hint: Option<Arc<BucketHint>>,
}

/// The address and mask of a [`Dict`]'s bucket array, published (relaxed
/// atomics) each time the array is replaced, so a connection can prefetch
/// the bucket of a key it is about to look up without taking the shard's
/// lock (net/connection.rs prefetches the keys of the next requests of a
/// pipelined batch while executing the current one). The pair may be stale
/// or torn: a prefetch never faults and never changes program state, so a
/// wrong address only wastes the prefetch.
#[derive(Default)]
pub struct BucketHint {
    base: AtomicUsize,
    mask: AtomicUsize,
}

impl BucketHint {
    /// Starts loading the cache line of `hash`'s bucket (no-op before the
    /// first insert, or on targets without a prefetch instruction).
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        let base = self.base.load(Ordering::Relaxed);
        if base == 0 {
            return;
        }
        let mask = self.mask.load(Ordering::Relaxed);
        let at = base.wrapping_add((hash as usize & mask) * std::mem::size_of::<usize>());
        prefetch_line(at);
    }
}

/// Issues a prefetch of the cache line holding address `at`. The address is
/// never dereferenced: x86's PREFETCHT0 has no architectural effect and
/// does not fault on an unmapped address.
#[inline(always)]
pub fn prefetch_line(at: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads no memory in the abstract machine and cannot
    // fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// The shape of a hash table, for DEBUG HTSTATS and HTSTATS-KEY (Redis's
/// dict.c `dictGetStats`): its buckets, its entries, and how many buckets
/// hold each chain length. Tables made of several parts (a database's
/// shards) add their parts' shapes up with [`TableStats::merge`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableStats {
    /// Buckets (slots) of the table.
    pub size: usize,
    /// Entries stored.
    pub used: usize,
    /// `chains[n]`: buckets whose chain holds `n` entries (`chains[0]`
    /// counts the empty buckets).
    pub chains: Vec<usize>,
}

impl TableStats {
    /// Counts one bucket holding a chain of `n` entries.
    #[inline]
    pub fn add_bucket(&mut self, n: usize) {
        self.add_buckets(n, 1);
    }

    /// Counts `count` buckets holding a chain of `n` entries each.
    pub fn add_buckets(&mut self, n: usize, count: usize) {
        if count == 0 {
            return;
        }
        if self.chains.len() <= n {
            self.chains.resize(n + 1, 0);
        }
        self.chains[n] += count;
        self.size += count;
        self.used += n * count;
    }

    /// An open-addressing table of `size` slots holding `used` entries:
    /// each occupied slot holds one entry, so every chain is of length 0 or
    /// 1 (the probe sequences are not shown).
    pub fn open_addressing(size: usize, used: usize) -> TableStats {
        let mut t = TableStats::default();
        t.add_buckets(0, size.saturating_sub(used));
        t.add_buckets(1, used);
        t
    }

    /// Adds the buckets of `o` to these.
    pub fn merge(&mut self, o: &TableStats) {
        for (n, &c) in o.chains.iter().enumerate() {
            self.add_buckets(n, c);
        }
    }
}

impl<V> Default for Dict<V> {
    fn default() -> Self {
        Self::new()
    }
}

const MIN_SIZE: usize = 4;

impl<V> Dict<V> {
    /// An empty dict; allocates nothing until the first insert.
    pub const fn new() -> Self {
        Dict {
            table: Vec::new(),
            len: 0,
            hint: None,
        }
    }

    /// Publishes this dict's bucket array in `hint` from now on (see
    /// [`BucketHint`]).
    pub fn attach_hint(&mut self, hint: Arc<BucketHint>) {
        self.hint = Some(hint);
        self.publish();
    }

    /// Stops publishing; returns the hint that was attached.
    pub fn detach_hint(&mut self) -> Option<Arc<BucketHint>> {
        self.hint.take()
    }

    fn publish(&self) {
        if let Some(h) = &self.hint {
            let base = if self.table.is_empty() {
                0
            } else {
                self.table.as_ptr() as usize
            };
            h.base.store(base, Ordering::Relaxed);
            h.mask.store(self.mask(), Ordering::Relaxed);
        }
    }

    /// The keys of the bucket of `hash` (the slot index finds a key from
    /// its hash this way).
    pub fn bucket_keys(&self, hash: u64) -> impl Iterator<Item = &[u8]> {
        let mut cur = if self.table.is_empty() {
            None
        } else {
            self.table[hash as usize & self.mask()].as_deref()
        };
        std::iter::from_fn(move || {
            let n = cur?;
            cur = n.next.as_deref();
            Some(&n.key[..])
        })
    }

    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no entries.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of buckets (for INFO / DEBUG HTSTATS-like reporting).
    pub fn buckets(&self) -> usize {
        self.table.len()
    }

    /// Bytes of one entry's node (link, value, inline key): the per-entry
    /// cost MEMORY USAGE and MEMORY STATS count.
    pub const NODE_BYTES: usize = std::mem::size_of::<Node<V>>();

    #[inline]
    fn mask(&self) -> usize {
        self.table.len().wrapping_sub(1)
    }

    /// Prefetches the first node of `hash`'s bucket (see [`BucketHint`]).
    #[inline]
    pub fn prefetch_head(&self, hash: u64) {
        if let Some(Some(n)) = self.table.get(hash as usize & self.mask()) {
            prefetch_line(&**n as *const Node<V> as usize);
        }
    }

    #[inline(always)]
    fn node(&self, hash: u64, key: &[u8]) -> Option<&Node<V>> {
        if self.table.is_empty() {
            return None;
        }
        let mut cur = self.table[hash as usize & self.mask()].as_deref();
        while let Some(n) = cur {
            if key_eq(n.key.as_slice(), key) {
                return Some(n);
            }
            cur = n.next.as_deref();
        }
        None
    }

    #[inline(always)]
    fn node_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut Node<V>> {
        if self.table.is_empty() {
            return None;
        }
        let idx = hash as usize & self.mask();
        let mut cur = self.table[idx].as_deref_mut();
        while let Some(n) = cur {
            if key_eq(n.key.as_slice(), key) {
                return Some(n);
            }
            cur = n.next.as_deref_mut();
        }
        None
    }

    /// Looks up `key` (whose hash is `hash`).
    #[inline]
    pub fn get(&self, hash: u64, key: &[u8]) -> Option<&V> {
        self.node(hash, key).map(|n| &n.val)
    }

    /// Looks up `key`, with its mark.
    #[inline]
    pub fn get_marked(&self, hash: u64, key: &[u8]) -> Option<(&V, bool)> {
        self.node(hash, key).map(|n| (&n.val, n.key.mark()))
    }

    /// Mutable lookup.
    #[inline]
    pub fn get_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut V> {
        self.node_mut(hash, key).map(|n| &mut n.val)
    }

    /// The mark of `key`, or None when absent.
    #[inline]
    pub fn mark(&self, hash: u64, key: &[u8]) -> Option<bool> {
        self.node(hash, key).map(|n| n.key.mark())
    }

    /// Sets the mark of `key`; returns false when the key is absent.
    #[inline]
    pub fn set_mark(&mut self, hash: u64, key: &[u8], on: bool) -> bool {
        match self.node_mut(hash, key) {
            Some(n) => {
                n.key.set_mark(on);
                true
            }
            None => false,
        }
    }

    /// One walk down the chain of `key`: when present, asks `dead(value,
    /// mark)` whether to remove it (lazy expiry) and either removes it or
    /// hands out the value mutably.
    #[inline]
    pub fn get_mut_or_remove(
        &mut self,
        hash: u64,
        key: &[u8],
        dead: impl FnOnce(&V, bool) -> bool,
    ) -> Lookup<'_, V> {
        let p: *mut Node<V> = match self.node_mut(hash, key) {
            Some(n) => n,
            None => return Lookup::Missing,
        };
        // SAFETY: `p` points to a node owned by `self` (boxed, so its address
        // is stable), and `self` is borrowed mutably for the whole call; the
        // shared reference below ends before `self` is touched again, and the
        // node is only removed on the path that no longer uses `p`.
        let kill = {
            let n = unsafe { &*p };
            dead(&n.val, n.key.mark())
        };
        if kill {
            return match self.remove(hash, key) {
                Some(v) => Lookup::Removed(v),
                None => Lookup::Missing,
            };
        }
        // SAFETY: as above; the returned borrow is tied to `&mut self`.
        Lookup::Found(unsafe { &mut (*p).val })
    }

    /// Inserts or replaces; returns the previous value. A new key starts
    /// unmarked; a replaced key keeps its mark.
    pub fn insert(&mut self, hash: u64, key: &[u8], val: V) -> Option<V> {
        if let Some(v) = self.get_mut(hash, key) {
            return Some(std::mem::replace(v, val));
        }
        self.insert_small(hash, SmallBytes::new(key), val);
        None
    }

    /// Inserts or replaces, setting the key's mark to `mark`; returns the
    /// previous value and its mark.
    pub fn insert_marked(
        &mut self,
        hash: u64,
        key: &[u8],
        val: V,
        mark: bool,
    ) -> Option<(V, bool)> {
        if let Some(n) = self.node_mut(hash, key) {
            let was = n.key.mark();
            n.key.set_mark(mark);
            return Some((std::mem::replace(&mut n.val, val), was));
        }
        let mut k = SmallBytes::new(key);
        k.set_mark(mark);
        self.insert_small(hash, k, val);
        None
    }

    fn insert_small(&mut self, hash: u64, key: SmallBytes, val: V) {
        if self.len >= self.table.len() {
            self.resize((self.len + 1).next_power_of_two().max(MIN_SIZE));
        }
        let idx = hash as usize & self.mask();
        let next = self.table[idx].take();
        self.table[idx] = Some(Box::new(Node { next, val, key }));
        self.len += 1;
    }

    /// Removes `key`, returning its owned key, value and mark.
    pub fn remove_marked(&mut self, hash: u64, key: &[u8]) -> Option<(Box<[u8]>, V, bool)> {
        if self.table.is_empty() {
            return None;
        }
        let idx = hash as usize & self.mask();
        let mut link = &mut self.table[idx];
        loop {
            match link {
                None => return None,
                Some(n) if key_eq(n.key.as_slice(), key) => {
                    let mut node = link.take()?;
                    *link = node.next.take();
                    self.len -= 1;
                    let mark = node.key.mark();
                    let out = (node.key.into_box(), node.val, mark);
                    self.maybe_shrink();
                    return Some(out);
                }
                Some(n) => link = &mut n.next,
            }
        }
    }

    /// Removes `key`, returning its value.
    #[inline]
    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<V> {
        self.remove_marked(hash, key).map(|(_, v, _)| v)
    }

    /// Grows the bucket array to at least `n` buckets (a power of two)
    /// at once, so that inserting about `n` entries rehashes nothing (RDB
    /// loading, from the file's RESIZEDB hint). Never shrinks.
    pub fn reserve(&mut self, n: usize) {
        let want = n.next_power_of_two().max(MIN_SIZE);
        if want > self.table.len() {
            self.resize(want);
        }
    }

    fn maybe_shrink(&mut self) {
        let size = self.table.len();
        if size > MIN_SIZE && self.len * 8 < size {
            self.resize(self.len.next_power_of_two().max(MIN_SIZE));
        }
    }

    fn resize(&mut self, new_size: usize) {
        let mut old = std::mem::take(&mut self.table);
        let mut table: Vec<Link<V>> = Vec::with_capacity(new_size);
        table.resize_with(new_size, || None);
        let mask = new_size - 1;
        for i in 0..old.len() {
            // Every node is a cache miss (nodes are scattered over the
            // heap): prefetch the head of the bucket 8 ahead while
            // relinking this one.
            if let Some(Some(n)) = old.get(i + 8) {
                prefetch_line(&**n as *const Node<V> as usize);
            }
            let mut bucket = old[i].take();
            while let Some(mut n) = bucket {
                bucket = n.next.take();
                let idx = hash_bytes(&n.key) as usize & mask;
                n.next = table[idx].take();
                table[idx] = Some(n);
            }
        }
        self.table = table;
        self.publish();
    }

    /// Drops every entry and the table.
    pub fn clear(&mut self) {
        // Unlink iteratively so that long chains cannot overflow the stack.
        for bucket in self.table.iter_mut() {
            let mut cur = bucket.take();
            while let Some(mut n) = cur {
                cur = n.next.take();
            }
        }
        self.table = Vec::new();
        self.len = 0;
        self.publish();
    }

    /// The table's shape: its buckets and the length of each chain
    /// (DEBUG HTSTATS).
    pub fn table_stats(&self) -> TableStats {
        let mut t = TableStats::default();
        for bucket in &self.table {
            let mut n = 0;
            let mut cur = bucket.as_deref();
            while let Some(node) = cur {
                n += 1;
                cur = node.next.as_deref();
            }
            t.add_bucket(n);
        }
        t
    }

    /// Iterates over all entries in bucket order.
    pub fn iter(&self) -> Iter<'_, V> {
        Iter {
            table: &self.table,
            idx: 0,
            cur: None,
        }
    }

    /// Iterates over all entries in bucket order, with their marks.
    pub fn iter_marked(&self) -> impl Iterator<Item = (&[u8], &V, bool)> {
        IterNodes {
            table: &self.table,
            idx: 0,
            cur: None,
        }
        .map(|n| (n.key.as_slice(), &n.val, n.key.mark()))
    }

    /// One SCAN step: calls `f` for every entry of the bucket(s) at `cursor`
    /// and returns the next cursor (0 when the iteration is complete).
    /// Follows the reverse-binary increment of Redis's `dictScan`.
    pub fn scan_step(&self, cursor: u64, mut f: impl FnMut(&[u8], &V)) -> u64 {
        self.scan_step_marked(cursor, |k, v, _| f(k, v))
    }

    /// [`Dict::scan_step`] that also passes each key's mark.
    pub fn scan_step_marked(&self, cursor: u64, mut f: impl FnMut(&[u8], &V, bool)) -> u64 {
        if self.table.is_empty() {
            return 0;
        }
        let mask = self.mask() as u64;
        let mut cur = self.table[(cursor & mask) as usize].as_deref();
        while let Some(n) = cur {
            f(&n.key, &n.val, n.key.mark());
            cur = n.next.as_deref();
        }
        let mut v = cursor | !mask;
        v = v.reverse_bits();
        v = v.wrapping_add(1);
        v.reverse_bits()
    }

    /// A random entry, chosen as Redis's `dictGetRandomKey` does: a random
    /// non-empty bucket, then a random element of its chain. `rnd` supplies
    /// random 64-bit numbers.
    pub fn random_entry(&self, mut rnd: impl FnMut() -> u64) -> Option<(&[u8], &V)> {
        if self.len == 0 {
            return None;
        }
        let mask = self.mask() as u64;
        let chain = |i: usize| {
            let mut n = 0usize;
            let mut cur = self.table[i].as_deref();
            while let Some(x) = cur {
                n += 1;
                cur = x.next.as_deref();
            }
            n
        };
        let (idx, pick) = fair_pick(&mut rnd, mask, chain);
        let mut x = self.table[idx].as_deref()?;
        for _ in 0..pick {
            x = x.next.as_deref()?;
        }
        Some((&x.key, &x.val))
    }
}

/// Draws an entry of a chained hash table, every entry equally likely:
/// a random bucket (`rnd() & mask`) and a random position below a bound on
/// the chain lengths; a position past the bucket's chain draws again (so
/// an entry of a long chain is no likelier than one alone in its bucket,
/// unlike Redis's `dictGetRandomKey` / `dictGetFairRandomKey`). The bound
/// starts at 8 (longer chains are very rare at load factor 1) and rises
/// to any longer chain met. `chain(i)` is the length of bucket `i`; the
/// table must not be empty. Returns (bucket, position in its chain).
pub fn fair_pick(
    rnd: &mut impl FnMut() -> u64,
    mask: u64,
    chain: impl Fn(usize) -> usize,
) -> (usize, usize) {
    let mut bound = 8usize;
    loop {
        let idx = (rnd() & mask) as usize;
        let n = chain(idx);
        if n > bound {
            bound = n;
            continue;
        }
        let pick = (rnd() % bound as u64) as usize;
        if pick < n {
            return (idx, pick);
        }
    }
}

impl<V> Drop for Dict<V> {
    fn drop(&mut self) {
        self.clear();
    }
}

struct IterNodes<'a, V> {
    table: &'a [Link<V>],
    idx: usize,
    cur: Option<&'a Node<V>>,
}

/// How many buckets ahead of a whole-table walk the first node of a bucket
/// is prefetched. A walk's cost is the cache miss of each node (98% of an
/// AOF rewrite's serialising time sat on the first load of the node before
/// this): with the node requested this far ahead it has arrived by the time
/// the walk reaches it.
const WALK_PREFETCH: usize = 16;

/// Moves a walk to bucket `idx`, prefetching the first node of the bucket
/// [`WALK_PREFETCH`] further on.
#[inline(always)]
fn walk_bucket<V>(table: &[Link<V>], idx: usize) -> Option<&Node<V>> {
    if let Some(Some(ahead)) = table.get(idx + WALK_PREFETCH) {
        prefetch_line(&**ahead as *const Node<V> as usize);
    }
    table[idx].as_deref()
}

impl<'a, V> Iterator for IterNodes<'a, V> {
    type Item = &'a Node<V>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(n) = self.cur {
                self.cur = n.next.as_deref();
                return Some(n);
            }
            if self.idx >= self.table.len() {
                return None;
            }
            self.cur = walk_bucket(self.table, self.idx);
            self.idx += 1;
        }
    }
}

/// Iterator over `(key, value)` pairs of a [`Dict`].
pub struct Iter<'a, V> {
    table: &'a [Link<V>],
    idx: usize,
    cur: Option<&'a Node<V>>,
}

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (&'a [u8], &'a V);
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(n) = self.cur {
                self.cur = n.next.as_deref();
                return Some((&n.key, &n.val));
            }
            if self.idx >= self.table.len() {
                return None;
            }
            self.cur = walk_bucket(self.table, self.idx);
            self.idx += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn key_equality() {
        let keys: Vec<Vec<u8>> = (0..40usize)
            .flat_map(|n| {
                [vec![b'a'; n], {
                    let mut v = vec![b'a'; n];
                    if n > 0 {
                        v[n / 2] = b'b';
                    }
                    v
                }]
            })
            .collect();
        for a in &keys {
            for b in &keys {
                assert_eq!(key_eq(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn keyspace_node_is_64_bytes() {
        assert_eq!(std::mem::size_of::<Node<crate::db::value::Entry>>(), 64);
    }

    #[test]
    fn marks_follow_keys_through_resizes() {
        let mut d = Dict::new();
        for i in 0..2000u32 {
            let k = format!("key:{i:030}");
            d.insert_marked(hash_key(k.as_bytes()), k.as_bytes(), i, i % 3 == 0);
        }
        for i in 0..2000u32 {
            let k = format!("key:{i:030}");
            let h = hash_key(k.as_bytes());
            assert_eq!(d.get_marked(h, k.as_bytes()), Some((&i, i % 3 == 0)));
            match d.get_mut_or_remove(h, k.as_bytes(), |_, m| m && i % 2 == 0) {
                Lookup::Removed(v) => assert!(i % 6 == 0 && v == i),
                Lookup::Found(v) => assert!(i % 6 != 0 && *v == i),
                Lookup::Missing => panic!("missing {i}"),
            }
        }
        assert_eq!(d.len(), 2000 - 334);
        assert_eq!(d.iter_marked().filter(|x| x.2).count(), 667 - 334);
    }

    #[test]
    fn insert_get_remove() {
        let mut d = Dict::new();
        for i in 0..1000u32 {
            let k = i.to_string();
            assert!(d.insert(hash_key(k.as_bytes()), k.as_bytes(), i).is_none());
        }
        assert_eq!(d.len(), 1000);
        for i in 0..1000u32 {
            let k = i.to_string();
            assert_eq!(d.get(hash_key(k.as_bytes()), k.as_bytes()), Some(&i));
        }
        for i in 0..990u32 {
            let k = i.to_string();
            assert_eq!(d.remove(hash_key(k.as_bytes()), k.as_bytes()), Some(i));
        }
        assert_eq!(d.len(), 10);
        assert!(d.buckets() <= 64);
        assert_eq!(d.iter().count(), 10);
    }

    #[test]
    fn scan_survives_resizes() {
        // Keys present for the whole scan must be returned, while other keys
        // are added and removed between steps so the table grows and shrinks.
        let mut d = Dict::new();
        for i in 0..500u32 {
            let k = format!("stable:{i}");
            d.insert(hash_key(k.as_bytes()), k.as_bytes(), ());
        }
        let mut seen = HashSet::new();
        let mut cursor = 0;
        let mut step = 0u32;
        loop {
            cursor = d.scan_step(cursor, |k, _| {
                seen.insert(k.to_vec());
            });
            step += 1;
            if step.is_multiple_of(3) {
                for j in 0..200 {
                    let k = format!("churn:{step}:{j}");
                    d.insert(hash_key(k.as_bytes()), k.as_bytes(), ());
                }
            } else if step % 3 == 1 {
                let victims: Vec<Vec<u8>> = d
                    .iter()
                    .filter(|(k, _)| k.starts_with(b"churn"))
                    .map(|(k, _)| k.to_vec())
                    .collect();
                for k in victims {
                    d.remove(hash_key(&k), &k);
                }
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..500u32 {
            assert!(seen.contains(format!("stable:{i}").as_bytes()));
        }
    }
}
