//! The hash type: `listpack` while small (hash-max-listpack-entries /
//! -value), `hashtable` beyond, as Redis 7.0 (t_hash.c).
//!
//! This is the type's first representation; the hashes family owns it and
//! may replace the internals.

/// A hash value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HashValue {
    fields: Vec<(Vec<u8>, Vec<u8>)>,
}

impl HashValue {
    /// An empty hash.
    pub fn new() -> Self {
        Self::default()
    }
    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }
    /// True when empty (an empty hash is deleted from the keyspace).
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
    /// OBJECT ENCODING name.
    pub fn encoding(&self) -> &'static str {
        "listpack"
    }
    /// Approximate heap bytes used.
    pub fn mem_usage(&self) -> usize {
        self.fields
            .iter()
            .map(|(f, v)| f.capacity() + v.capacity() + 48)
            .sum()
    }
}
