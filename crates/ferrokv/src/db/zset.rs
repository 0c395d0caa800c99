//! The sorted set type: `listpack` while small (zset-max-listpack-entries /
//! -value), `skiplist` beyond, ordered by (score, member) with O(log n) rank,
//! as Redis 7.0 (t_zset.c).
//!
//! This is the type's first representation; the sorted-sets family owns it
//! and may replace the internals.

/// A sorted set value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ZSetValue {
    entries: Vec<(f64, Vec<u8>)>,
}

impl ZSetValue {
    /// An empty sorted set.
    pub fn new() -> Self {
        Self::default()
    }
    /// Number of members.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    /// True when empty (an empty sorted set is deleted from the keyspace).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    /// OBJECT ENCODING name.
    pub fn encoding(&self) -> &'static str {
        "listpack"
    }
    /// Approximate heap bytes used.
    pub fn mem_usage(&self) -> usize {
        self.entries.iter().map(|(_, m)| m.capacity() + 32).sum()
    }
}
