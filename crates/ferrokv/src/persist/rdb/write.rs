//! RDB serialisation of keys and values (Redis 7.0's rdb.c layouts, RDB
//! version 10 by default), into byte buffers. The encodings chosen are
//! those Redis 7.0 itself writes, so redis-server 7.0 loads them and
//! redis-check-rdb accepts them. With `rdb-version` 11 or 12
//! ([`WriteOpts::version`]) the same types are written, except streams,
//! which become `STREAM_LISTPACKS_3` (Redis 7.2's, with each consumer's
//! active time), and, from 12 on, hashes with field TTLs, which become
//! `HASH_LISTPACK_EX` or `HASH_METADATA` (Redis 7.4's; in versions 10 and
//! 11 such a hash is written without its TTLs, which is why saves and DUMP
//! raise the version to 12 while one exists: see mod.rs). ferrokv has no
//! listpack sets, so that type is never needed:
//!
//! | value | RDB type |
//! |---|---|
//! | string | `STRING` (int-encoded when a canonical 32-bit integer, LZF when longer than 20 bytes and compression saves at least 4 bytes) |
//! | list | `LIST_QUICKLIST_2`, one packed listpack per node, nodes cut by `list-max-listpack-size`; elements of at least the packed threshold in PLAIN nodes; inner nodes of a list with a compress depth as LZF blobs |
//! | set, `intset` | `SET_INTSET` |
//! | set, `hashtable` | `SET` |
//! | sorted set, `listpack` | `ZSET_LISTPACK` (member, score pairs in rank order) |
//! | sorted set, `skiplist` | `ZSET_2` (binary little-endian doubles) |
//! | hash, `listpack` | `HASH_LISTPACK` (insertion order) |
//! | hash, `hashtable` | `HASH` |
//! | hash, `listpackex` (version 12) | `HASH_LISTPACK_EX`: min expiry (8 bytes LE, 0 = none), listpack of field, value, expiry (integer ms, 0 = none) triplets, fields with a TTL first by time, then the others |
//! | hash with field TTLs, `hashtable` (version 12) | `HASH_METADATA`: min expiry (8 bytes LE), count, then per field its TTL (length: 0 = none, else expiry - min + 1), field, value |
//! | stream | `STREAM_LISTPACKS_2` (version 10), `STREAM_LISTPACKS_3` (11, 12) |

use super::blobs::{intset_encode, ListpackWriter};
use super::lzf as rdb_lzf;
use super::*;
use crate::db::set::Member;
use crate::db::{Entry, SetValue, StrValue, Value};

/// Choices that shape the bytes written.
#[derive(Debug, Clone, Copy)]
pub struct WriteOpts {
    /// rdbcompression: LZF-compress strings longer than 20 bytes.
    pub compress: bool,
    /// list-max-listpack-size, for cutting lists into quicklist nodes.
    pub list_fill: i64,
    /// rdb-version: the RDB version written in the file header or DUMP
    /// trailer (10, 11 or 12); from 11 on, streams are written as type 21.
    pub version: u16,
}

impl Default for WriteOpts {
    fn default() -> Self {
        WriteOpts {
            compress: true,
            list_fill: -2,
            version: RDB_VERSION,
        }
    }
}

/// Appends an RDB length (rdbSaveLen): 6-bit, 14-bit, 32-bit or 64-bit.
pub fn put_len(b: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        b.push(n as u8);
    } else if n < 1 << 14 {
        b.push(0x40 | (n >> 8) as u8);
        b.push(n as u8);
    } else if n <= u32::MAX as u64 {
        b.push(RDB_32BITLEN);
        b.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        b.push(RDB_64BITLEN);
        b.extend_from_slice(&n.to_be_bytes());
    }
}

/// Appends `v` int-encoded when it fits 32 bits (rdbEncodeInteger); false
/// when it does not fit.
fn put_encoded_int(b: &mut Vec<u8>, v: i64) -> bool {
    if let Ok(x) = i8::try_from(v) {
        b.push(0xC0 | RDB_ENC_INT8);
        b.push(x as u8);
    } else if let Ok(x) = i16::try_from(v) {
        b.push(0xC0 | RDB_ENC_INT16);
        b.extend_from_slice(&x.to_le_bytes());
    } else if let Ok(x) = i32::try_from(v) {
        b.push(0xC0 | RDB_ENC_INT32);
        b.extend_from_slice(&x.to_le_bytes());
    } else {
        return false;
    }
    true
}

/// Appends a string as rdbSaveRawString: integer-encoded when it is a
/// canonical integer of at most 11 characters that fits 32 bits, LZF when
/// `compress` and longer than 20 bytes and compression saves at least 4
/// bytes, raw otherwise.
pub fn put_string(b: &mut Vec<u8>, s: &[u8], compress: bool) {
    if s.len() <= 11 {
        if let Some(v) = crate::util::parse_i64(s) {
            if put_encoded_int(b, v) {
                return;
            }
        }
    }
    if compress && s.len() > 20 {
        if let Some(c) = rdb_lzf::compress(s, s.len() - 4) {
            b.push(0xC0 | RDB_ENC_LZF);
            put_len(b, c.len() as u64);
            put_len(b, s.len() as u64);
            b.extend_from_slice(&c);
            return;
        }
    }
    put_len(b, s.len() as u64);
    b.extend_from_slice(s);
}

/// Appends a list as rdbSaveObject does a quicklist (RDB_TYPE_LIST_QUICKLIST_2):
/// the node count, then each node's container and bytes. Elements of at
/// least the packed threshold are PLAIN nodes holding the element; runs of
/// smaller ones are PACKED listpacks cut by `list-max-listpack-size`. When
/// the list has a compress depth N, the nodes beyond the first and last N
/// are written as LZF blobs (rdbSaveLzfBlob, whatever `rdbcompression`
/// says) when quicklist.c would keep them compressed: at least 48 bytes
/// and more than 8 bytes saved. Other nodes are rdbSaveRawString.
fn put_list(b: &mut Vec<u8>, l: &crate::db::list::ListValue, o: &WriteOpts) {
    use crate::db::list::{packed_threshold, MIN_COMPRESS_BYTES, MIN_COMPRESS_IMPROVE};
    let (max_bytes, max_count) = node_limits(o.list_fill);
    let threshold = packed_threshold();
    let mut nodes: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut cur = ListpackWriter::new();
    l.for_each(|e| {
        let len = e.byte_len();
        if len as u64 >= threshold {
            if cur.count() > 0 {
                nodes.push((
                    QUICKLIST_NODE_CONTAINER_PACKED,
                    std::mem::take(&mut cur).finish(),
                ));
            }
            nodes.push((QUICKLIST_NODE_CONTAINER_PLAIN, e.to_vec()));
            return;
        }
        let sz = len + 11;
        if cur.count() > 0 && (cur.count() >= max_count || cur.len_bytes() + sz > max_bytes) {
            nodes.push((
                QUICKLIST_NODE_CONTAINER_PACKED,
                std::mem::take(&mut cur).finish(),
            ));
        }
        e.with_bytes(|s| cur.push(s));
    });
    if cur.count() > 0 {
        nodes.push((QUICKLIST_NODE_CONTAINER_PACKED, cur.finish()));
    }
    let depth = l.compress_depth();
    let n = nodes.len();
    put_len(b, n as u64);
    for (i, (container, data)) in nodes.iter().enumerate() {
        put_len(b, *container);
        let inner = depth > 0 && n > 2 * depth && i >= depth && i < n - depth;
        if inner && data.len() >= MIN_COMPRESS_BYTES {
            if let Some(c) = rdb_lzf::compress(data, data.len()) {
                if c.len() + MIN_COMPRESS_IMPROVE < data.len() {
                    b.push(0xC0 | RDB_ENC_LZF);
                    put_len(b, c.len() as u64);
                    put_len(b, data.len() as u64);
                    b.extend_from_slice(&c);
                    continue;
                }
            }
        }
        put_string(b, data, o.compress);
    }
}

/// Appends an integer value as rdbSaveLongLongAsStringObject.
fn put_int_string(b: &mut Vec<u8>, v: i64) {
    if !put_encoded_int(b, v) {
        let mut t = itoa::Buffer::new();
        let s = t.format(v).as_bytes();
        put_len(b, s.len() as u64);
        b.extend_from_slice(s);
    }
}

fn put_str_value(b: &mut Vec<u8>, s: &StrValue, compress: bool) {
    match s {
        StrValue::Int(v) => put_int_string(b, *v),
        other => put_string(b, other.as_slice().unwrap_or_default(), compress),
    }
}

/// A score as text for a listpack (Redis's d2string then lpAppend): an
/// integral value in i64 range as its integer, otherwise the shortest text
/// that parses back to the same double, in exponent form when long (Redis
/// reads at most 127 characters of a listpack score).
pub fn score_text(s: f64) -> String {
    if s.is_infinite() {
        return if s > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if s == s.trunc() && s.abs() < 9.0e18 {
        if s == 0.0 && s.is_sign_negative() {
            return "-0".into();
        }
        return (s as i64).to_string();
    }
    let a = s.abs();
    if (1e-5..1e17).contains(&a) {
        format!("{s}")
    } else {
        format!("{s:e}")
    }
}

/// Bounds of one quicklist node for list-max-listpack-size `fill`:
/// (max bytes, max entries), as quicklist.c.
fn node_limits(fill: i64) -> (usize, usize) {
    const SIZE_CLASSES: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
    if fill >= 0 {
        (crate::db::list::SIZE_SAFETY_LIMIT, (fill as usize).max(1))
    } else {
        let i = ((-fill) as usize).clamp(1, 5) - 1;
        (SIZE_CLASSES[i], usize::MAX)
    }
}

/// The RDB type byte `v` is written with in RDB version `version`
/// (rdbSaveObjectType).
pub fn rdb_type(v: &Value, version: u16) -> u8 {
    match v {
        Value::Str(_) => RDB_TYPE_STRING,
        Value::List(_) => RDB_TYPE_LIST_QUICKLIST_2,
        Value::Set(s) => match &**s {
            SetValue::Int(_) => RDB_TYPE_SET_INTSET,
            SetValue::Table(_) => RDB_TYPE_SET,
        },
        Value::ZSet(z) if z.is_listpack() => RDB_TYPE_ZSET_LISTPACK,
        Value::ZSet(_) => RDB_TYPE_ZSET_2,
        Value::Hash(h) if h.is_listpack() => RDB_TYPE_HASH_LISTPACK,
        // rdbSaveObjectType: a listpackex always (even with no TTL left);
        // a hashtable when some field has a TTL.
        Value::Hash(h) if version >= RDB_VERSION_HFE && h.is_listpackex() => {
            RDB_TYPE_HASH_LISTPACK_EX
        }
        Value::Hash(h) if version >= RDB_VERSION_HFE && h.min_field_ttl().is_some() => {
            RDB_TYPE_HASH_METADATA
        }
        Value::Hash(_) => RDB_TYPE_HASH,
        // What Redis 7.0 writes (RDB version 10 has no type 21); 7.2's
        // type keeps the consumers' active time.
        Value::Stream(_) if version >= 11 => RDB_TYPE_STREAM_LISTPACKS_3,
        Value::Stream(_) => RDB_TYPE_STREAM_LISTPACKS_2,
    }
}

/// The lowest RDB version that carries `v` whole: 12 for a hash with field
/// TTLs (types 24 and 25), 10 otherwise.
pub fn min_version(v: &Value) -> u16 {
    match v {
        Value::Hash(h) if h.min_field_ttl().is_some() => RDB_VERSION_HFE,
        _ => RDB_VERSION,
    }
}

/// Appends the RDB type byte and the serialised value (rdbSaveObjectType +
/// rdbSaveObject). The same bytes form a DUMP payload's body.
pub fn put_value(b: &mut Vec<u8>, v: &Value, o: &WriteOpts) {
    b.push(rdb_type(v, o.version));
    put_body(b, v, o);
}

/// Appends the serialised value without its type byte (rdbSaveObject).
pub fn put_body(b: &mut Vec<u8>, v: &Value, o: &WriteOpts) {
    match v {
        Value::Str(s) => {
            put_str_value(b, s, o.compress);
        }
        Value::List(l) => put_list(b, l, o),
        Value::Set(s) => match &**s {
            SetValue::Int(is) => {
                let v: Vec<i64> = is.iter().collect();
                put_string(b, &intset_encode(&v), o.compress);
            }
            SetValue::Table(t) => {
                put_len(b, t.len() as u64);
                for m in s.iter() {
                    match m {
                        Member::Bytes(x) => put_string(b, x, o.compress),
                        other => put_string(b, &other.to_vec(), o.compress),
                    }
                }
            }
        },
        Value::ZSet(z) => {
            if z.is_listpack() {
                let mut w = ListpackWriter::new();
                z.range(0, z.len(), false, |m, s| {
                    w.push(m);
                    w.push(score_text(s).as_bytes());
                });
                put_string(b, &w.finish(), o.compress);
            } else {
                put_len(b, z.len() as u64);
                // Highest first, as Redis writes (its loader then inserts
                // each at the head).
                z.range(0, z.len(), true, |m, s| {
                    put_string(b, m, o.compress);
                    b.extend_from_slice(&s.to_le_bytes());
                });
            }
        }
        Value::Hash(h) => match rdb_type(v, o.version) {
            RDB_TYPE_HASH_LISTPACK_EX => put_listpack_ex(b, h, o),
            RDB_TYPE_HASH_METADATA => put_hash_metadata(b, h, o),
            _ => put_hash(b, h, o),
        },
        Value::Stream(s) => put_stream(b, s, o),
    }
}

/// A hash without field TTLs: one listpack of pairs (`HASH_LISTPACK`) or
/// count then pairs (`HASH`).
fn put_hash(b: &mut Vec<u8>, h: &crate::db::HashValue, o: &WriteOpts) {
    if h.is_listpack() {
        let mut w = ListpackWriter::new();
        for (f, v) in h.iter() {
            w.push(f);
            w.push(v);
        }
        put_string(b, &w.finish(), o.compress);
    } else {
        put_len(b, h.len() as u64);
        for (f, v) in h.iter() {
            put_string(b, f, o.compress);
            put_string(b, v, o.compress);
        }
    }
}

/// A `listpackex` hash (rdbSaveObject, `OBJ_ENCODING_LISTPACK_EX`): the
/// earliest field expiry (8 bytes LE, 0 when no field has a TTL), then the
/// listpack as Redis keeps it: field, value, expiry (ms, 0 = none)
/// triplets, the fields with a TTL first in expiry order
/// (listpackExAddNew's order), then the others.
fn put_listpack_ex(b: &mut Vec<u8>, h: &crate::db::HashValue, o: &WriteOpts) {
    b.extend_from_slice(&h.min_field_ttl().unwrap_or(0).to_le_bytes());
    let mut w = ListpackWriter::new();
    if let Some(t) = h.ttls() {
        for (f, at) in t.iter() {
            if let Some(v) = h.get(f) {
                w.push(f);
                w.push(v);
                w.push_int(at as i64);
            }
        }
    }
    for (f, v) in h.iter() {
        if h.field_ttl(f).is_none() {
            w.push(f);
            w.push(v);
            w.push_int(0);
        }
    }
    put_string(b, &w.finish(), o.compress);
}

/// A `hashtable` hash with field TTLs (rdbSaveObject's
/// `RDB_TYPE_HASH_METADATA`): the earliest field expiry (8 bytes LE), the
/// field count, then per field its TTL as a length (0 = none, otherwise
/// expiry - earliest + 1), the field and the value.
fn put_hash_metadata(b: &mut Vec<u8>, h: &crate::db::HashValue, o: &WriteOpts) {
    let min = h.min_field_ttl().unwrap_or(0);
    b.extend_from_slice(&min.to_le_bytes());
    put_len(b, h.len() as u64);
    for (f, v) in h.iter() {
        let ttl = h.field_ttl(f).map_or(0, |at| at.saturating_sub(min) + 1);
        put_len(b, ttl);
        put_string(b, f, o.compress);
        put_string(b, v, o.compress);
    }
}

/// A stream body as Redis 7.0's rdbSaveObject writes it (type
/// STREAM_LISTPACKS_2): nodes (16-byte big-endian master id, listpack),
/// length, last id, first id, max deleted id, entries added, then each
/// group (name order) with its last id, entries read, PEL (raw id,
/// delivery time ms LE, delivery count) and consumers (name, seen time,
/// pending raw ids). From RDB version 11 on (type STREAM_LISTPACKS_3,
/// Redis 7.2) each consumer's active time (ms LE, -1 = never) follows its
/// seen time.
fn put_stream(b: &mut Vec<u8>, s: &crate::db::StreamValue, o: &WriteOpts) {
    put_len(b, s.node_count() as u64);
    for (id, node) in s.nodes() {
        put_string(b, &id.to_be_bytes(), false);
        put_string(b, node, o.compress);
    }
    put_len(b, s.length);
    for id in [s.last_id, s.first_id, s.max_deleted_id] {
        put_len(b, id.ms);
        put_len(b, id.seq);
    }
    put_len(b, s.entries_added);
    put_len(b, s.groups.len() as u64);
    for (name, g) in &s.groups {
        put_string(b, name, o.compress);
        put_len(b, g.last_id.ms);
        put_len(b, g.last_id.seq);
        put_len(b, g.entries_read as u64);
        put_len(b, g.pel.len() as u64);
        for (id, n) in &g.pel {
            b.extend_from_slice(&id.to_be_bytes());
            b.extend_from_slice(&n.delivery_time.to_le_bytes());
            put_len(b, n.delivery_count);
        }
        put_len(b, g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            put_string(b, cname, o.compress);
            b.extend_from_slice(&c.seen_time.to_le_bytes());
            if o.version >= 11 {
                b.extend_from_slice(&c.active_time.to_le_bytes());
            }
            put_len(b, c.pel.len() as u64);
            for id in &c.pel {
                b.extend_from_slice(&id.to_be_bytes());
            }
        }
    }
}

/// Appends one key: its expiry (EXPIRETIME_MS, `expire_at` ms since the
/// epoch, 0 = none) when it has one, then type,
/// key and value (rdbSaveKeyValuePair; LRU/LFU fields are not written, as
/// Redis does under the default maxmemory-policy).
pub fn put_key(b: &mut Vec<u8>, key: &[u8], e: &Entry, expire_at: u64, o: &WriteOpts) {
    if expire_at != 0 {
        b.push(RDB_OPCODE_EXPIRETIME_MS);
        b.extend_from_slice(&expire_at.to_le_bytes());
    }
    b.push(rdb_type(&e.value, o.version));
    put_string(b, key, o.compress);
    put_body(b, &e.value, o);
}

/// Appends an AUX field (opcode, key, value).
pub fn put_aux(b: &mut Vec<u8>, k: &str, v: &[u8]) {
    b.push(RDB_OPCODE_AUX);
    put_string(b, k.as_bytes(), false);
    put_string(b, v, false);
}
