//! The per-slot key index of cluster mode (Redis keeps a per-slot list
//! of keys for CLUSTER COUNTKEYSINSLOT / GETKEYSINSLOT and slot
//! migration: `slots_to_keys` in 7.0's db.c).
//!
//! In cluster mode a key's 64-bit hash carries its hash slot in the top
//! 14 bits ([`super::dict::hash_key`]), and the shard is the slot's top 8
//! bits, so a shard holds the keys of 64 consecutive slots. Each shard then
//! keeps, for each of its 64 slots, the set of its keys' hashes: an
//! open-addressing table of 8-byte hashes, kept between 1/2 and 4/5 full
//! (10 to 16 bytes per key). A slot is counted in O(1) and listed without
//! scanning the rest of the keyspace; the key of a hash is found in its
//! dict bucket (see [`super::dict::Dict::find_key`]).
//!
//! Two keys of one shard with the same 64-bit hash (about 2^-64 per pair;
//! the hash is seeded) share one entry plus a count in `dups`, so removing
//! one does not lose the other.

use crc::{Crc, CRC_16_XMODEM};
use std::collections::HashMap;

/// Number of hash slots.
pub const SLOTS: usize = 16384;

const CRC16: Crc<u16> = Crc::<u16>::new(&CRC_16_XMODEM);

/// CRC16/XMODEM of `bytes` (the checksum Redis Cluster hashes keys with).
#[inline]
pub fn crc16(bytes: &[u8]) -> u16 {
    CRC16.checksum(bytes)
}

/// The hash slot of `key`, 0..16384 (Redis's `keyHashSlot`).
#[inline]
pub fn key_hash_slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        rest.iter()
            .position(|&b| b == b'}')
            .filter(|&close| close > 0)
            .map(|close| &rest[..close])
    });
    crc16(tagged.unwrap_or(key)) & (SLOTS as u16 - 1)
}

/// Slots per shard (16384 slots over 256 shards).
pub const SLOTS_PER_SHARD: usize = 64;

/// The slot of a cluster-mode key hash.
#[inline]
pub fn slot_of(h: u64) -> u16 {
    (h >> 50) as u16
}

/// A set of u64 values (0 kept aside in a flag), open addressing
/// with linear probing over a capacity that is not a power of two (the
/// home slot is a multiply-shift of the value), so growth by 3/2 keeps
/// the load between 1/2 and 4/5.
#[derive(Default, Debug)]
struct HashSet64 {
    slots: Vec<u64>,
    len: usize,
    has_zero: bool,
}

impl HashSet64 {
    #[inline]
    fn home(&self, v: u64) -> usize {
        let m = v.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((m as u128 * self.slots.len() as u128) >> 64) as usize
    }

    fn len(&self) -> usize {
        self.len + self.has_zero as usize
    }

    fn find(&self, v: u64) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let n = self.slots.len();
        let mut i = self.home(v);
        loop {
            let s = self.slots[i];
            if s == 0 {
                return None;
            }
            if s == v {
                return Some(i);
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
    }

    fn contains(&self, v: u64) -> bool {
        if v == 0 {
            return self.has_zero;
        }
        self.find(v).is_some()
    }

    /// Adds `v`; false when it was present.
    fn insert(&mut self, v: u64) -> bool {
        if v == 0 {
            let was = self.has_zero;
            self.has_zero = true;
            return !was;
        }
        if self.find(v).is_some() {
            return false;
        }
        if (self.len + 1) * 5 > self.slots.len() * 4 {
            let cap = (self.slots.len() * 3 / 2).max(8);
            self.resize(cap);
        }
        self.place(v);
        self.len += 1;
        true
    }

    fn place(&mut self, v: u64) {
        let n = self.slots.len();
        let mut i = self.home(v);
        while self.slots[i] != 0 {
            i += 1;
            if i == n {
                i = 0;
            }
        }
        self.slots[i] = v;
    }

    /// Removes `v`; false when absent.
    fn remove(&mut self, v: u64) -> bool {
        if v == 0 {
            let was = self.has_zero;
            self.has_zero = false;
            return was;
        }
        let Some(mut hole) = self.find(v) else {
            return false;
        };
        let n = self.slots.len();
        let mut j = hole;
        loop {
            j += 1;
            if j == n {
                j = 0;
            }
            let s = self.slots[j];
            if s == 0 {
                break;
            }
            let k = self.home(s);
            // The entry at j moves back to the hole unless its home lies
            // cyclically in (hole, j].
            let stays = if hole <= j {
                hole < k && k <= j
            } else {
                hole < k || k <= j
            };
            if !stays {
                self.slots[hole] = s;
                hole = j;
            }
        }
        self.slots[hole] = 0;
        self.len -= 1;
        if self.slots.len() > 8 && self.len * 5 < self.slots.len() {
            self.resize((self.len * 2).max(8));
        }
        true
    }

    fn resize(&mut self, cap: usize) {
        let old = std::mem::replace(&mut self.slots, vec![0; cap]);
        for v in old {
            if v != 0 {
                self.place(v);
            }
        }
    }

    fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.has_zero
            .then_some(0)
            .into_iter()
            .chain(self.slots.iter().copied().filter(|&v| v != 0))
    }

    fn bytes(&self) -> usize {
        self.slots.capacity() * 8
    }
}

/// One shard's index: the key hashes of each of its 64 slots.
#[derive(Debug)]
pub struct SlotIndex {
    sets: Vec<HashSet64>,
    /// Extra keys per hash for the (rare) hashes shared by two keys.
    dups: HashMap<u64, u32>,
}

impl Default for SlotIndex {
    fn default() -> Self {
        SlotIndex {
            sets: (0..SLOTS_PER_SHARD).map(|_| HashSet64::default()).collect(),
            dups: HashMap::new(),
        }
    }
}

impl SlotIndex {
    #[inline]
    fn set(&mut self, h: u64) -> &mut HashSet64 {
        &mut self.sets[slot_of(h) as usize % SLOTS_PER_SHARD]
    }

    /// A key with hash `h` was added.
    #[inline]
    pub fn insert(&mut self, h: u64) {
        if !self.set(h).insert(h) {
            *self.dups.entry(h).or_insert(0) += 1;
        }
    }

    /// A key with hash `h` was removed.
    #[inline]
    pub fn remove(&mut self, h: u64) {
        if !self.dups.is_empty() {
            if let Some(c) = self.dups.get_mut(&h) {
                *c -= 1;
                if *c == 0 {
                    self.dups.remove(&h);
                }
                return;
            }
        }
        self.set(h).remove(h);
    }

    /// Number of keys in `slot` (one of this shard's).
    pub fn count(&self, slot: u16) -> usize {
        let s = &self.sets[slot as usize % SLOTS_PER_SHARD];
        let dups: usize = if self.dups.is_empty() {
            0
        } else {
            self.dups
                .iter()
                .filter(|(h, _)| slot_of(**h) == slot)
                .map(|(_, c)| *c as usize)
                .sum()
        };
        s.len() + dups
    }

    /// The distinct key hashes of `slot`.
    pub fn hashes(&self, slot: u16) -> impl Iterator<Item = u64> + '_ {
        self.sets[slot as usize % SLOTS_PER_SHARD].iter()
    }

    /// True when hash `h` is indexed.
    pub fn contains(&self, h: u64) -> bool {
        self.sets[slot_of(h) as usize % SLOTS_PER_SHARD].contains(h)
    }

    /// Heap bytes used (for memory reporting).
    pub fn bytes(&self) -> usize {
        self.sets.iter().map(HashSet64::bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_behaves_like_a_set() {
        let mut s = HashSet64::default();
        let mut model = std::collections::HashSet::new();
        let mut x: u64 = 1;
        for i in 0..20000u64 {
            x = crate::util::xorshift64(x);
            let v = if i % 97 == 0 { 0 } else { x % 3000 };
            if i % 3 == 0 {
                assert_eq!(s.remove(v), model.remove(&v));
            } else {
                assert_eq!(s.insert(v), model.insert(v));
            }
            assert_eq!(s.len(), model.len());
        }
        let mut got: Vec<u64> = s.iter().collect();
        got.sort();
        let mut want: Vec<u64> = model.into_iter().collect();
        want.sort();
        assert_eq!(got, want);
        // Load stays between the bounds once grown.
        assert!(s.slots.len() <= 8 || s.len * 5 >= s.slots.len());
    }

    #[test]
    fn duplicate_hashes_are_counted() {
        let mut idx = SlotIndex::default();
        let h = (5u64 << 50) | 42;
        idx.insert(h);
        idx.insert(h);
        assert_eq!(idx.count(5), 2);
        idx.remove(h);
        assert!(idx.contains(h));
        assert_eq!(idx.count(5), 1);
        idx.remove(h);
        assert!(!idx.contains(h));
        assert_eq!(idx.count(5), 0);
    }
}
