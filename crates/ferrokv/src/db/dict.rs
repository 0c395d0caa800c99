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
//! command hashes its key once, for shard selection and lookup alike.

use super::smallbytes::SmallBytes;
use std::hash::BuildHasher;
use std::sync::OnceLock;

/// The process-wide seeded hasher for keys (foldhash, randomly seeded at start,
/// so hash flooding needs the seed).
fn hasher() -> &'static foldhash::quality::RandomState {
    static H: OnceLock<foldhash::quality::RandomState> = OnceLock::new();
    H.get_or_init(foldhash::quality::RandomState::default)
}

/// 64-bit hash of a key, used both for shard selection (high bits) and for the
/// bucket inside a shard's [`Dict`] (low bits).
#[inline]
pub fn hash_key(key: &[u8]) -> u64 {
    hasher().hash_one(key)
}

struct Node<V> {
    key: SmallBytes,
    hash: u64,
    val: V,
    next: Option<Box<Node<V>>>,
}

/// A chained hash table from byte-string keys to `V`, with Redis's SCAN cursor
/// semantics and O(1) random sampling.
pub struct Dict<V> {
    table: Vec<Option<Box<Node<V>>>>,
    len: usize,
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
        }
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

    #[inline]
    fn mask(&self) -> usize {
        self.table.len().wrapping_sub(1)
    }

    /// Looks up `key` (whose hash is `hash`).
    #[inline]
    pub fn get(&self, hash: u64, key: &[u8]) -> Option<&V> {
        if self.table.is_empty() {
            return None;
        }
        let mut cur = self.table[hash as usize & self.mask()].as_deref();
        while let Some(n) = cur {
            if n.hash == hash && n.key.as_slice() == key {
                return Some(&n.val);
            }
            cur = n.next.as_deref();
        }
        None
    }

    /// Mutable lookup.
    #[inline]
    pub fn get_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut V> {
        if self.table.is_empty() {
            return None;
        }
        let idx = hash as usize & self.mask();
        let mut cur = self.table[idx].as_deref_mut();
        while let Some(n) = cur {
            if n.hash == hash && n.key.as_slice() == key {
                return Some(&mut n.val);
            }
            cur = n.next.as_deref_mut();
        }
        None
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, hash: u64, key: &[u8], val: V) -> Option<V> {
        if let Some(v) = self.get_mut(hash, key) {
            return Some(std::mem::replace(v, val));
        }
        self.insert_small(hash, SmallBytes::new(key), val);
        None
    }

    /// Inserts a key known to be absent (the caller checked with `get`).
    pub fn insert_new(&mut self, hash: u64, key: Box<[u8]>, val: V) {
        self.insert_small(hash, SmallBytes::from_box(key), val);
    }

    fn insert_small(&mut self, hash: u64, key: SmallBytes, val: V) {
        if self.len >= self.table.len() {
            self.resize((self.len + 1).next_power_of_two().max(MIN_SIZE));
        }
        let idx = hash as usize & self.mask();
        let next = self.table[idx].take();
        self.table[idx] = Some(Box::new(Node {
            key,
            hash,
            val,
            next,
        }));
        self.len += 1;
    }

    /// Removes `key`, returning its owned key and value.
    pub fn remove_entry(&mut self, hash: u64, key: &[u8]) -> Option<(Box<[u8]>, V)> {
        if self.table.is_empty() {
            return None;
        }
        let idx = hash as usize & self.mask();
        let mut link = &mut self.table[idx];
        loop {
            match link {
                None => return None,
                Some(n) if n.hash == hash && n.key.as_slice() == key => {
                    let mut node = link.take().expect("checked");
                    *link = node.next.take();
                    self.len -= 1;
                    let out = (node.key.into_box(), node.val);
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
        self.remove_entry(hash, key).map(|(_, v)| v)
    }

    fn maybe_shrink(&mut self) {
        let size = self.table.len();
        if size > MIN_SIZE && self.len * 8 < size {
            self.resize(self.len.next_power_of_two().max(MIN_SIZE));
        }
    }

    fn resize(&mut self, new_size: usize) {
        let old = std::mem::take(&mut self.table);
        let mut table: Vec<Option<Box<Node<V>>>> = Vec::with_capacity(new_size);
        table.resize_with(new_size, || None);
        let mask = new_size - 1;
        for mut bucket in old {
            while let Some(mut n) = bucket {
                bucket = n.next.take();
                let idx = n.hash as usize & mask;
                n.next = table[idx].take();
                table[idx] = Some(n);
            }
        }
        self.table = table;
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
    }

    /// Iterates over all entries in bucket order.
    pub fn iter(&self) -> Iter<'_, V> {
        Iter {
            table: &self.table,
            idx: 0,
            cur: None,
        }
    }

    /// One SCAN step: calls `f` for every entry of the bucket(s) at `cursor`
    /// and returns the next cursor (0 when the iteration is complete).
    /// Follows the reverse-binary increment of Redis's `dictScan`.
    pub fn scan_step(&self, cursor: u64, mut f: impl FnMut(&[u8], &V)) -> u64 {
        if self.table.is_empty() {
            return 0;
        }
        let mask = self.mask() as u64;
        let mut cur = self.table[(cursor & mask) as usize].as_deref();
        while let Some(n) = cur {
            f(&n.key, &n.val);
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
        loop {
            let idx = (rnd() & mask) as usize;
            if let Some(head) = self.table[idx].as_deref() {
                let mut n = 0usize;
                let mut cur = Some(head);
                while let Some(x) = cur {
                    n += 1;
                    cur = x.next.as_deref();
                }
                let pick = (rnd() % n as u64) as usize;
                let mut x = head;
                for _ in 0..pick {
                    x = x.next.as_deref().expect("counted");
                }
                return Some((&x.key, &x.val));
            }
        }
    }
}

impl<V> Drop for Dict<V> {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Iterator over `(key, value)` pairs of a [`Dict`].
pub struct Iter<'a, V> {
    table: &'a [Option<Box<Node<V>>>],
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
            self.cur = self.table[self.idx].as_deref();
            self.idx += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

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
