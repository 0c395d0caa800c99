//! Stored values: [`Entry`] (value + expiry + access metadata) and [`Value`],
//! one variant per Redis type. Strings keep Redis's three encodings visible
//! through OBJECT ENCODING: `int` (a 64-bit integer), `embstr` (up to 44
//! bytes, as created by SET) and `raw` (longer, or modified in place by
//! APPEND / SETRANGE), following `tryObjectEncoding` (object.c).

use super::hash::HashValue;
use super::list::ListValue;
use super::set::SetValue;
use super::stream::StreamValue;
use super::zset::ZSetValue;
use crate::util::parse_i64;
use std::sync::atomic::{AtomicU64, Ordering};

/// Longest string Redis stores as `embstr` (OBJ_ENCODING_EMBSTR_SIZE_LIMIT).
pub const EMBSTR_SIZE_LIMIT: usize = 44;

/// Longest `embstr` kept inline in the value itself, in bytes.
pub const INLINE_STR_CAP: usize = 22;

/// A string value, 24 bytes. Short strings live inside the value (no heap
/// allocation), as Redis embeds them in the object header (embstr).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrValue {
    /// `int` encoding.
    Int(i64),
    /// `embstr` of at most [`INLINE_STR_CAP`] bytes, stored in place.
    Inline {
        /// Bytes used in `buf`.
        len: u8,
        /// The bytes.
        buf: [u8; INLINE_STR_CAP],
    },
    /// `embstr` of 23..=44 bytes.
    Emb(Box<[u8]>),
    /// `raw` as created (longer than 44 bytes), not yet modified in place.
    RawFixed(Box<[u8]>),
    /// `raw` modified in place (APPEND / SETRANGE), with spare capacity.
    Raw(Box<Vec<u8>>),
    /// `raw` kept in the allocation it was received in (a big bulk string
    /// of a request, see `cmd::arg_str_value`): stored without a copy.
    Shared(Box<bytes::Bytes>),
    /// A string stored through the memcached protocol with a client flags
    /// word or a CAS unique (cmd/memcache.rs): boxed, so strings that never
    /// had either keep their size. Any change through RESP turns it back
    /// into a plain string (flags and CAS gone, as the item was replaced).
    Item(Box<Item>),
}

/// The memcached metadata of a string ([`StrValue::Item`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// memcached's client flags (32 bits, opaque to the server).
    pub flags: u32,
    /// The CAS unique (0 = none assigned yet; one is assigned when a client
    /// first asks for it).
    pub cas: u64,
    /// The bytes: never [`StrValue::Int`] nor another `Item`.
    pub data: StrValue,
    /// memcached's item state bits for the meta protocol:
    /// [`Item::STALE`], [`Item::TOKEN_SENT`], [`Item::FETCHED`].
    pub bits: u8,
}

/// Server-wide memcached item state (`Server::memcache`, used by
/// cmd/memcache.rs): the CAS counter and the items stored.
#[derive(Debug)]
pub struct ItemState {
    /// The last CAS unique handed out (memcached's `get_cas_id`).
    cas: AtomicU64,
    /// total_items: items stored since start.
    pub total_items: AtomicU64,
    /// When a delayed `flush_all` empties database 0, ms since the epoch
    /// (0: none pending).
    pub flush_at: AtomicU64,
    /// A timer task waits for `flush_at`.
    pub flush_timer: std::sync::atomic::AtomicBool,
}

impl Default for ItemState {
    fn default() -> Self {
        ItemState {
            cas: AtomicU64::new(0),
            total_items: AtomicU64::new(0),
            flush_at: AtomicU64::new(0),
            flush_timer: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl ItemState {
    /// A new CAS unique, larger than every one handed out before.
    pub fn next_cas(&self) -> u64 {
        self.cas.fetch_add(1, Ordering::Relaxed) + 1
    }
}

impl Item {
    /// Invalidated (`md ... I`, `ms ... I`): served with the X flag.
    pub const STALE: u8 = 1;
    /// A client was handed the W (win) flag for it.
    pub const TOKEN_SENT: u8 = 2;
    /// Fetched since it was stored (the meta `h` flag).
    pub const FETCHED: u8 = 4;
    /// Stored by a meta command with a base64 key (`b`): its key is
    /// returned in base64 with the `b` flag.
    pub const KEY_BINARY: u8 = 8;
}

impl StrValue {
    /// Encodes `s` as SET does: `int` when it is a canonical integer of at
    /// most 20 characters, else `embstr` up to 44 bytes, else `raw`.
    #[inline]
    pub fn from_bytes(s: &[u8]) -> Self {
        if s.len() <= 20 {
            if let Some(n) = parse_i64(s) {
                return StrValue::Int(n);
            }
        }
        Self::plain(s)
    }

    /// An `embstr` (up to 44 bytes) or `raw` string holding `s`, never `int`
    /// (Redis's `createStringObject`).
    #[inline]
    pub fn plain(s: &[u8]) -> Self {
        if s.len() <= INLINE_STR_CAP {
            let mut buf = [0u8; INLINE_STR_CAP];
            buf[..s.len()].copy_from_slice(s);
            StrValue::Inline {
                len: s.len() as u8,
                buf,
            }
        } else if s.len() <= EMBSTR_SIZE_LIMIT {
            StrValue::Emb(s.into())
        } else {
            StrValue::RawFixed(s.into())
        }
    }

    /// A string held in `b`'s allocation (no copy): `raw`, or for a value
    /// short enough to be `embstr` or `int`, the usual encoding (copied).
    pub fn shared(b: bytes::Bytes) -> Self {
        if b.len() <= EMBSTR_SIZE_LIMIT {
            return Self::from_bytes(&b);
        }
        StrValue::Shared(Box::new(b))
    }

    /// A memcached item: `data` with `flags` and `cas`, plain when both
    /// are 0.
    pub fn item(data: &[u8], flags: u32, cas: u64) -> Self {
        if flags == 0 && cas == 0 {
            return Self::from_bytes(data);
        }
        StrValue::Item(Box::new(Item {
            flags,
            cas,
            data: Self::plain(data),
            bits: 0,
        }))
    }

    /// The string as a memcached item, converted in place when it is not
    /// one yet (flags 0, no CAS).
    pub fn to_item(&mut self) -> &mut Item {
        if !matches!(self, StrValue::Item(_)) {
            let mut t = itoa::Buffer::new();
            let data = Self::plain(self.as_bytes(&mut t));
            *self = StrValue::Item(Box::new(Item {
                flags: 0,
                cas: 0,
                data,
                bits: 0,
            }));
        }
        match self {
            StrValue::Item(i) => i,
            _ => unreachable!("converted to Item above"),
        }
    }

    /// The memcached state bits of a string (0 for a plain one).
    #[inline]
    pub fn item_bits(&self) -> u8 {
        match self {
            StrValue::Item(i) => i.bits,
            _ => 0,
        }
    }

    /// The memcached (flags, CAS) of a string: (0, 0) for a plain one.
    #[inline]
    pub fn item_meta(&self) -> (u32, u64) {
        match self {
            StrValue::Item(i) => (i.flags, i.cas),
            _ => (0, 0),
        }
    }

    /// A `raw` string (the result of APPEND / SETRANGE).
    pub fn raw(data: Vec<u8>) -> Self {
        StrValue::Raw(Box::new(data))
    }

    /// The bytes of a non-integer string; None for `int`.
    #[inline]
    pub fn as_slice(&self) -> Option<&[u8]> {
        match self {
            StrValue::Int(_) => None,
            StrValue::Inline { len, buf } => Some(&buf[..*len as usize]),
            StrValue::Emb(b) | StrValue::RawFixed(b) => Some(b),
            StrValue::Raw(v) => Some(v),
            StrValue::Shared(b) => Some(b),
            StrValue::Item(i) => i.data.as_slice(),
        }
    }

    /// Length in bytes of the string form.
    pub fn len(&self) -> usize {
        match self.as_slice() {
            Some(s) => s.len(),
            None => {
                let StrValue::Int(n) = self else { return 0 };
                itoa::Buffer::new().format(*n).len()
            }
        }
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The string form, borrowed when possible (`tmp` holds an int's digits).
    #[inline]
    pub fn as_bytes<'a>(&'a self, tmp: &'a mut itoa::Buffer) -> &'a [u8] {
        match self {
            StrValue::Int(n) => tmp.format(*n).as_bytes(),
            other => other.as_slice().unwrap_or_default(),
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
            StrValue::Raw(v) => *v,
            // The allocation itself when no other handle shares it.
            StrValue::Shared(b) => Vec::from(*b),
            StrValue::Item(i) => i.data.into_vec(),
            other => other.to_vec(),
        }
    }

    /// The bytes as a growable `raw` string, converting in place (APPEND,
    /// SETRANGE: Redis turns the object into a raw sds first).
    pub fn make_raw(&mut self) -> &mut Vec<u8> {
        if !matches!(self, StrValue::Raw(_)) {
            let v = std::mem::replace(self, StrValue::Int(0)).into_vec();
            *self = StrValue::Raw(Box::new(v));
        }
        match self {
            StrValue::Raw(v) => v,
            _ => unreachable!("converted to Raw above"),
        }
    }

    /// Redis's OBJECT ENCODING name.
    pub fn encoding(&self) -> &'static str {
        match self {
            StrValue::Int(_) => "int",
            StrValue::Inline { .. } | StrValue::Emb(_) => "embstr",
            StrValue::RawFixed(_) | StrValue::Raw(_) | StrValue::Shared(_) => "raw",
            StrValue::Item(i) => i.data.encoding(),
        }
    }

    /// Heap bytes owned by the value.
    pub fn heap_size(&self) -> usize {
        match self {
            StrValue::Int(_) | StrValue::Inline { .. } => 0,
            StrValue::Emb(b) | StrValue::RawFixed(b) => b.len(),
            StrValue::Raw(v) => v.capacity() + 24,
            StrValue::Shared(b) => b.len() + 56,
            StrValue::Item(i) => i.data.heap_size() + std::mem::size_of::<Item>(),
        }
    }
}

/// A value of any Redis type. Collection types arrive with the collections
/// issue; every command checks the variant and replies WRONGTYPE otherwise.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string (`string` type).
    Str(StrValue),
    /// A list (`list` type). Collections are boxed so that a string key's
    /// value stays 24 bytes.
    List(Box<ListValue>),
    /// A hash (`hash` type), unboxed: a `listpack` hash is one boxed slice
    /// held right here, so a small hash costs one allocation besides its key.
    Hash(HashValue),
    /// A set (`set` type).
    Set(Box<SetValue>),
    /// A sorted set (`zset` type).
    ZSet(Box<ZSetValue>),
    /// A stream (`stream` type).
    Stream(Box<StreamValue>),
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
            Value::Stream(_) => "stream",
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
            Value::Stream(_) => "stream",
        }
    }

    /// Bytes MEMORY USAGE counts for the value, beyond the 24 bytes it
    /// takes inside its key's node: the heap it owns (strings longer than
    /// 22 bytes, the box of a collection and everything the collection
    /// allocated). Large hashes, sets and sorted sets, lists and streams
    /// are estimated from `samples` elements (nodes for lists and streams)
    /// as Redis's `objectComputeSize` does; `usize::MAX` counts everything
    /// (MEMORY USAGE ... SAMPLES 0). Sizes are the requested sizes the
    /// counting allocator adds to `used_memory` (memory.rs).
    pub fn memory_usage(&self, samples: usize) -> usize {
        use std::mem::size_of;
        match self {
            Value::Str(s) => s.heap_size(),
            Value::List(l) => size_of::<ListValue>() + l.mem_usage_sampled(samples),
            Value::Hash(h) => h.mem_usage_sampled(samples),
            Value::Set(s) => size_of::<SetValue>() + s.mem_usage_sampled(samples),
            Value::ZSet(z) => size_of::<ZSetValue>() + z.mem_usage_sampled(samples),
            Value::Stream(s) => s.mem_usage_sampled(samples),
        }
    }

    /// Approximate heap bytes used by the value (for INFO memory).
    pub fn mem_usage(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_size(),
            Value::List(l) => l.mem_usage(),
            Value::Hash(h) => h.mem_usage(),
            Value::Set(s) => s.mem_usage(),
            Value::ZSet(z) => z.mem_usage(),
            Value::Stream(s) => s.mem_usage(),
        }
    }
}

/// One key's record in a shard: 32 bytes. The TTL is not here: most keys
/// have none, so it lives in the shard's index of volatile keys (see
/// [`super::keyspace::Shard::expire_at`]), the way Redis keeps it in the
/// separate `expires` dict.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// Access metadata: last access in seconds since the epoch (OBJECT
    /// IDLETIME; Redis's 24-bit `lru` clock fits in it), or the LFU counter
    /// and decrement time under an LFU policy.
    pub lru: u32,
}

impl Entry {
    /// A fresh entry whose access record is `lru` (a new key's comes from
    /// the keyspace's [`LruPolicy::initial`](super::lru::LruPolicy::initial)).
    #[inline]
    pub fn new(value: Value, lru: u32) -> Self {
        Entry { value, lru }
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;

    #[test]
    fn compact_layout() {
        assert_eq!(std::mem::size_of::<StrValue>(), 24);
        assert_eq!(std::mem::size_of::<Value>(), 24);
        assert_eq!(std::mem::size_of::<Entry>(), 32);
        assert_eq!(std::mem::size_of::<HashValue>(), 16);
        for n in [0usize, 5, 22, 23, 44, 45, 100] {
            let v = vec![b'x'; n];
            let s = StrValue::from_bytes(&v);
            assert_eq!(s.as_slice(), Some(&v[..]));
            assert_eq!(s.encoding(), if n <= 44 { "embstr" } else { "raw" });
        }
        let mut s = StrValue::from_bytes(b"12");
        assert_eq!(s.encoding(), "int");
        s.make_raw().extend_from_slice(b"3");
        assert_eq!(s.to_vec(), b"123");
        assert_eq!(s.encoding(), "raw");
    }
}
