//! The set type: `intset` while every member is an integer and the set is
//! small (set-max-intset-entries), `hashtable` otherwise, as Redis 7.0
//! (t_set.c).
//!
//! This is the type's first representation; the sets family owns it and may
//! replace the internals.

/// A set value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SetValue {
    members: Vec<Vec<u8>>,
}

impl SetValue {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }
    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }
    /// True when empty (an empty set is deleted from the keyspace).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
    /// OBJECT ENCODING name.
    pub fn encoding(&self) -> &'static str {
        "hashtable"
    }
    /// Approximate heap bytes used.
    pub fn mem_usage(&self) -> usize {
        self.members.iter().map(|m| m.capacity() + 24).sum()
    }
}

/// A member as the set holds it (the sets family's API; the stub keeps
/// bytes only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Member<'a> {
    /// An intset member.
    Int(i64),
    /// A hashtable member.
    Bytes(&'a [u8]),
}

impl<'a> Member<'a> {
    /// The member's string form (`tmp` holds an integer's digits).
    #[inline]
    pub fn as_bytes<'b>(&'b self, tmp: &'b mut itoa::Buffer) -> &'b [u8]
    where
        'a: 'b,
    {
        match *self {
            Member::Int(n) => tmp.format(n).as_bytes(),
            Member::Bytes(b) => b,
        }
    }
}

impl SetValue {
    /// True when `m` is a member.
    pub fn contains(&self, m: &[u8]) -> bool {
        self.members.iter().any(|x| x == m)
    }

    /// The members.
    pub fn iter(&self) -> impl Iterator<Item = Member<'_>> + '_ {
        self.members.iter().map(|m| Member::Bytes(m))
    }
}
