//! The list type. Redis 7.0 stores every list as a quicklist (a linked list
//! of listpack nodes); OBJECT ENCODING always reports `quicklist`.
//!
//! This is the type's first representation; the lists family owns it and
//! may replace the internals (packed nodes sized by list-max-listpack-size).

use std::collections::VecDeque;

/// A list value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListValue {
    items: VecDeque<Vec<u8>>,
}

impl ListValue {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.items.len()
    }
    /// True when empty (an empty list is deleted from the keyspace).
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    /// OBJECT ENCODING name.
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }
    /// Approximate heap bytes used.
    pub fn mem_usage(&self) -> usize {
        self.items.iter().map(|i| i.capacity() + 24).sum()
    }
}
