//! Stored values: [`Entry`] (value + expiry + access metadata) and [`Value`],
//! one variant per Redis type. Strings keep Redis's three encodings visible
//! through OBJECT ENCODING: `int` (a 64-bit integer), `embstr` (up to 44
//! bytes, as created by SET) and `raw` (longer, or modified in place by
//! APPEND / SETRANGE), following `tryObjectEncoding` (object.c).

use super::hash::HashValue;
use super::list::ListValue;
use super::set::SetValue;
use super::zset::ZSetValue;
use crate::util::parse_i64;

/// Longest string Redis stores as `embstr` (OBJ_ENCODING_EMBSTR_SIZE_LIMIT).
pub const EMBSTR_SIZE_LIMIT: usize = 44;

/// A string value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrValue {
    /// `int` encoding.
    Int(i64),
    /// `embstr` (`raw == false`) or `raw` encoding.
    Bytes { data: Vec<u8>, raw: bool },
}

impl StrValue {
    /// Encodes `s` as SET does: `int` when it is a canonical integer of at
    /// most 20 characters, else `embstr` up to 44 bytes, else `raw`.
    pub fn from_bytes(s: &[u8]) -> Self {
        if s.len() <= 20 {
            if let Some(n) = parse_i64(s) {
                return StrValue::Int(n);
            }
        }
        StrValue::Bytes {
            data: s.to_vec(),
            raw: s.len() > EMBSTR_SIZE_LIMIT,
        }
    }

    /// A `raw` string (the result of APPEND / SETRANGE).
    pub fn raw(data: Vec<u8>) -> Self {
        StrValue::Bytes { data, raw: true }
    }

    /// Length in bytes of the string form.
    pub fn len(&self) -> usize {
        match self {
            StrValue::Int(n) => itoa::Buffer::new().format(*n).len(),
            StrValue::Bytes { data, .. } => data.len(),
        }
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The string form, borrowed when possible (`tmp` holds an int's digits).
    pub fn as_bytes<'a>(&'a self, tmp: &'a mut itoa::Buffer) -> &'a [u8] {
        match self {
            StrValue::Int(n) => tmp.format(*n).as_bytes(),
            StrValue::Bytes { data, .. } => data,
        }
    }

    /// An owned copy of the string form.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut t = itoa::Buffer::new();
        self.as_bytes(&mut t).to_vec()
    }

    /// Takes the bytes out for in-place modification (APPEND, SETRANGE).
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            StrValue::Int(n) => itoa::Buffer::new().format(n).as_bytes().to_vec(),
            StrValue::Bytes { data, .. } => data,
        }
    }

    /// Redis's OBJECT ENCODING name.
    pub fn encoding(&self) -> &'static str {
        match self {
            StrValue::Int(_) => "int",
            StrValue::Bytes { raw: false, .. } => "embstr",
            StrValue::Bytes { raw: true, .. } => "raw",
        }
    }
}

/// A value of any Redis type. Collection types arrive with the collections
/// issue; every command checks the variant and replies WRONGTYPE otherwise.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string (`string` type).
    Str(StrValue),
    /// A list (`list` type).
    List(ListValue),
    /// A hash (`hash` type).
    Hash(HashValue),
    /// A set (`set` type).
    Set(SetValue),
    /// A sorted set (`zset` type).
    ZSet(ZSetValue),
}

impl Value {
    /// The TYPE command's name for this value.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
        }
    }

    /// OBJECT ENCODING's name for this value.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding(),
            Value::List(l) => l.encoding(),
            Value::Hash(h) => h.encoding(),
            Value::Set(s) => s.encoding(),
            Value::ZSet(z) => z.encoding(),
        }
    }

    /// Approximate heap bytes used by the value (for INFO memory).
    pub fn mem_usage(&self) -> usize {
        match self {
            Value::Str(StrValue::Int(_)) => 0,
            Value::Str(StrValue::Bytes { data, .. }) => data.capacity(),
            Value::List(l) => l.mem_usage(),
            Value::Hash(h) => h.mem_usage(),
            Value::Set(s) => s.mem_usage(),
            Value::ZSet(z) => z.mem_usage(),
        }
    }
}

/// One key's record in a shard.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// Absolute expiry time in ms since the epoch; 0 = no TTL.
    pub expire_at: u64,
    /// Last access, in seconds since the epoch (OBJECT IDLETIME).
    pub lru: u32,
}

impl Entry {
    /// A fresh entry without TTL, accessed at `now_ms`.
    pub fn new(value: Value, now_ms: u64) -> Self {
        Entry {
            value,
            expire_at: 0,
            lru: (now_ms / 1000) as u32,
        }
    }

    /// True when the entry has a TTL that has passed at `now_ms`.
    #[inline]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at != 0 && self.expire_at <= now_ms
    }
}
