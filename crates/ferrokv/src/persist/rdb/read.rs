//! RDB parsing (Redis's rdbLoad / rdbLoadObject): a streaming reader over
//! any `Read` that keeps the running CRC64 and byte offset, and the decoder
//! of every value type Redis 7.0 can write plus the older encodings found
//! in real dumps (see the table in mod.rs). Every length is checked against
//! the data actually present before memory is committed to it: strings are
//! read in 1 MiB steps, collections never reserve more than a few thousand
//! slots ahead, an LZF length beyond what the compressed bytes can expand
//! to is refused.

use super::blobs::{intset_decode, listpack_elems, parse_score, ziplist_elems, zipmap_pairs, Elem};
use super::lzf as rdb_lzf;
use super::*;
use crate::db::list::End;
use crate::db::stream::{validate_node, Consumer, Group, Nack, StreamId};
use crate::db::{
    hash, zset, HashValue, ListValue, SetValue, StrValue, StreamValue, Value, ZSetValue,
};
use std::io::Read;

/// Encoding thresholds applied to loaded values (the live configuration),
/// so that a loaded key has the encoding Redis would give it.
#[derive(Debug, Clone, Copy)]
pub struct LoadLimits {
    /// list-max-listpack-size.
    pub list_fill: i64,
    /// list-compress-depth of loaded lists.
    pub list_compress: u64,
    /// hash-max-listpack-entries / -value.
    pub hash: hash::Limits,
    /// set-max-intset-entries.
    pub set_max_intset: u64,
    /// zset-max-listpack-entries / -value.
    pub zset: zset::Limits,
}

impl LoadLimits {
    /// The limits of the server's live configuration.
    pub fn of(server: &impl Host) -> Self {
        use std::sync::atomic::Ordering::Relaxed;
        let l = &server.live();
        LoadLimits {
            list_fill: l.list_max_listpack_size.load(Relaxed),
            list_compress: l.list_compress_depth.load(Relaxed),
            hash: hash::Limits {
                max_entries: l.hash_max_listpack_entries.load(Relaxed),
                max_value: l.hash_max_listpack_value.load(Relaxed),
            },
            set_max_intset: l.set_max_intset_entries.load(Relaxed),
            zset: zset::Limits {
                max_entries: l.zset_max_listpack_entries.load(Relaxed) as usize,
                max_value: l.zset_max_listpack_value.load(Relaxed) as usize,
            },
        }
    }
}

/// A reader of RDB primitives that tracks the CRC64 of everything read and
/// the offset (for error messages).
pub struct Reader<R> {
    r: R,
    crc: crc::Digest<'static, u64, crc::Table<16>>,
    /// Bytes consumed so far.
    pub pos: u64,
    /// Whose numbering of types beyond 21 applies (set from the file's
    /// signature or the payload's version; Redis's by default).
    pub dialect: Dialect,
    /// When Some(now): fields of a hash with field TTLs whose expiry time
    /// (ms) is before `now` are dropped as they are read (Redis's loader on
    /// a master, not for an AOF preamble nor a replica's full sync). None
    /// (the default) keeps every field.
    pub drop_fields_expired_before: Option<u64>,
    /// Set when the last value read was a hash all of whose fields had
    /// expired (dropped by `drop_fields_expired_before`): the key is then
    /// skipped as an expired one. Cleared by [`Reader::take_expired_hash`].
    expired_hash: bool,
}

/// Largest field expiry time a hash may carry, ms since the epoch
/// (Redis's `EB_EXPIRE_TIME_MAX`, 2^48 - 1): a larger one in a file is
/// corruption.
pub const FIELD_TTL_MAX: u64 = (1 << 48) - 1;

/// Cap on one string (a key, a value or a packed blob): 4 GiB.
const MAX_STRING: u64 = 1 << 32;

impl<R: Read> Reader<R> {
    /// Wraps `r` (pass a `BufReader` for files).
    pub fn new(r: R) -> Self {
        Reader {
            r,
            crc: CRC64.digest(),
            pos: 0,
            dialect: Dialect::Redis,
            drop_fields_expired_before: None,
            expired_hash: false,
        }
    }

    /// True (once) when the last value read was a hash whose fields had
    /// all expired, so that nothing was returned for it (Redis's
    /// `RDB_LOAD_ERR_EXPIRED_HASH`).
    pub fn take_expired_hash(&mut self) -> bool {
        std::mem::take(&mut self.expired_hash)
    }

    /// The CRC64 of everything read so far.
    pub fn crc(&self) -> u64 {
        self.crc.clone().finalize()
    }

    /// An error at the current offset.
    pub fn err(&self, msg: impl Into<String>) -> RdbError {
        RdbError {
            msg: msg.into(),
            offset: self.pos,
        }
    }

    /// A corrupt value: `reason` is the text Redis's rdbLoadObject reports
    /// for it (such as "Hash ziplist integrity check failed.", which logs
    /// and tests look for), `detail` what ferrokv found, `key` the key.
    pub fn corrupt(&self, reason: &str, detail: &str, key: &[u8]) -> RdbError {
        self.err(format!(
            "{reason} ({detail}; key '{}')",
            String::from_utf8_lossy(key)
        ))
    }

    /// Fills `buf` exactly; a short read is the "truncated" error.
    pub fn exact(&mut self, buf: &mut [u8]) -> Result<(), RdbError> {
        match self.r.read_exact(buf) {
            Ok(()) => {
                self.crc.update(buf);
                self.pos += buf.len() as u64;
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(self.err(
                "unexpected end of file (the file is truncated: Short read or OOM loading DB)",
            )),
            Err(e) => Err(self.err(format!("read error: {e}"))),
        }
    }

    /// Reads the 8-byte trailer without adding it to the CRC.
    pub fn trailer(&mut self) -> Result<u64, RdbError> {
        let mut b = [0u8; 8];
        match self.r.read_exact(&mut b) {
            Ok(()) => {
                self.pos += 8;
                Ok(u64::from_le_bytes(b))
            }
            Err(_) => {
                Err(self.err("unexpected end of file before the checksum (the file is truncated)"))
            }
        }
    }

    /// One byte.
    pub fn u8(&mut self) -> Result<u8, RdbError> {
        let mut b = [0u8; 1];
        self.exact(&mut b)?;
        Ok(b[0])
    }

    /// `n` fixed bytes.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], RdbError> {
        let mut b = [0u8; N];
        self.exact(&mut b)?;
        Ok(b)
    }

    /// `n` bytes, allocated as they arrive (a corrupt huge `n` fails at the
    /// end of the data, not at allocation).
    pub fn bytes(&mut self, n: u64) -> Result<Vec<u8>, RdbError> {
        if n > MAX_STRING {
            return Err(self.err(format!("string length {n} out of range")));
        }
        let n = n as usize;
        let mut v = Vec::with_capacity(n.min(1 << 20));
        while v.len() < n {
            let old = v.len();
            let step = (n - old).min(1 << 20);
            v.resize(old + step, 0);
            self.exact(&mut v[old..])?;
        }
        Ok(v)
    }

    /// An RDB length or special-encoding marker (rdbLoadLenByRef): (value,
    /// true) for an encoded string's marker.
    pub fn len_enc(&mut self) -> Result<(u64, bool), RdbError> {
        let b = self.u8()?;
        Ok(match b >> 6 {
            0 => ((b & 0x3f) as u64, false),
            1 => {
                let lo = self.u8()?;
                ((((b & 0x3f) as u64) << 8) | lo as u64, false)
            }
            2 => match b {
                RDB_32BITLEN => (u32::from_be_bytes(self.array()?) as u64, false),
                RDB_64BITLEN => (u64::from_be_bytes(self.array()?), false),
                _ => return Err(self.err(format!("unknown length encoding 0x{b:02x}"))),
            },
            _ => ((b & 0x3f) as u64, true),
        })
    }

    /// A plain length (an encoded marker here is an error).
    pub fn length(&mut self) -> Result<u64, RdbError> {
        match self.len_enc()? {
            (n, false) => Ok(n),
            _ => Err(self.err("unexpected string encoding where a length belongs")),
        }
    }

    /// A collection length that must fit in memory terms.
    fn count(&mut self) -> Result<usize, RdbError> {
        let n = self.length()?;
        usize::try_from(n).map_err(|_| self.err("length out of range"))
    }

    /// A string (rdbGenericLoadStringObject): raw, int-encoded or LZF.
    pub fn string(&mut self) -> Result<Vec<u8>, RdbError> {
        let (n, enc) = self.len_enc()?;
        if !enc {
            return self.bytes(n);
        }
        let v: i64 = match n as u8 {
            RDB_ENC_INT8 => self.u8()? as i8 as i64,
            RDB_ENC_INT16 => i16::from_le_bytes(self.array()?) as i64,
            RDB_ENC_INT32 => i32::from_le_bytes(self.array()?) as i64,
            RDB_ENC_LZF => {
                let clen = self.length()?;
                let len = self.length()?;
                let c = self.bytes(clen)?;
                // One control+offset pair expands to at most 264 bytes.
                if len > clen.saturating_mul(132).saturating_add(32) || len > MAX_STRING {
                    return Err(self.err("LZF uncompressed length out of range"));
                }
                return rdb_lzf::decompress(&c, len as usize)
                    .map_err(|e| self.err(format!("invalid LZF string: {e}")));
            }
            x => return Err(self.err(format!("unknown string encoding {x}"))),
        };
        Ok(itoa::Buffer::new().format(v).as_bytes().to_vec())
    }

    /// A score in the old text form (ZSET type): length byte, 253 = NaN,
    /// 254 = +inf, 255 = -inf.
    fn text_double(&mut self) -> Result<f64, RdbError> {
        let n = self.u8()?;
        match n {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            _ => {
                let b = self.bytes(n as u64)?;
                parse_score(&b).ok_or_else(|| self.err("invalid score"))
            }
        }
    }

    /// A stream body (rdbLoadObject's OBJ_STREAM part) of RDB type `ty`
    /// (STREAM_LISTPACKS 15, _2 19 or _3 21): nodes, counters, consumer
    /// groups with their PELs and consumers. Every node is validated and
    /// every consumer's pending entry must be in its group's PEL.
    fn stream(&mut self, ty: u8) -> Result<StreamValue, String> {
        let e = |x: RdbError| x.to_string();
        let mut s = StreamValue::new();
        let nodes = self.length().map_err(e)?;
        let mut prev_last: Option<StreamId> = None;
        let mut valid_total = 0u64;
        for _ in 0..nodes {
            let k = self.string().map_err(e)?;
            let mid = StreamId::from_be_bytes(&k)
                .ok_or("Stream node key entry is not the size of a stream ID")?;
            let node = self.string().map_err(e)?;
            let (valid, _first, last) = validate_node(&node, mid)
                .map_err(|m| format!("Stream listpack integrity check failed. ({m})"))?;
            if prev_last.is_some_and(|p| mid <= p) {
                return Err("Listpack re-added with existing key (or out of order)".into());
            }
            // Master ids ascend; entries may not (a deleted entry can be
            // larger than the ids after it, past an XSETID).
            let _ = last;
            prev_last = Some(mid);
            valid_total += valid;
            s.insert_node(mid, node);
        }
        s.length = self.length().map_err(e)?;
        if s.length != valid_total {
            return Err("Stream length inconsistent with rax entries".into());
        }
        s.last_id = StreamId::new(self.length().map_err(e)?, self.length().map_err(e)?);
        if ty >= RDB_TYPE_STREAM_LISTPACKS_2 {
            s.first_id = StreamId::new(self.length().map_err(e)?, self.length().map_err(e)?);
            s.max_deleted_id = StreamId::new(self.length().map_err(e)?, self.length().map_err(e)?);
            s.entries_added = self.length().map_err(e)?;
        } else {
            // Redis 7.0 takes the first entry's id, the largest id when
            // there is none (`streamGetEdgeID` on an empty stream).
            s.first_id = s.edge_id(false).unwrap_or(StreamId::MAX);
            s.entries_added = s.length;
        }
        let groups = self.length().map_err(e)?;
        for _ in 0..groups {
            let name = self.string().map_err(e)?;
            let last = StreamId::new(self.length().map_err(e)?, self.length().map_err(e)?);
            let entries_read = if ty >= RDB_TYPE_STREAM_LISTPACKS_2 {
                self.length().map_err(e)? as i64
            } else {
                s.estimate_distance(last)
            };
            let mut g = Group::new(last, entries_read);
            let pel = self.length().map_err(e)?;
            for _ in 0..pel {
                let raw: [u8; 16] = self.array().map_err(e)?;
                let id = StreamId::from_be_bytes(&raw).expect("16 bytes");
                let delivery_time = u64::from_le_bytes(self.array().map_err(e)?);
                let delivery_count = self.length().map_err(e)?;
                let nack = Nack {
                    delivery_time,
                    delivery_count,
                    consumer: Box::from(&b""[..]),
                };
                if g.pel.insert(id, nack).is_some() {
                    return Err("Duplicated global PEL entry loading stream consumer group".into());
                }
            }
            let consumers = self.length().map_err(e)?;
            let mut owned = std::collections::BTreeSet::new();
            for _ in 0..consumers {
                let cname = self.string().map_err(e)?;
                let seen = u64::from_le_bytes(self.array().map_err(e)?);
                let active = if ty >= RDB_TYPE_STREAM_LISTPACKS_3 {
                    u64::from_le_bytes(self.array().map_err(e)?) as i64
                } else {
                    seen as i64
                };
                let mut c = Consumer {
                    seen_time: seen,
                    active_time: active,
                    pel: Default::default(),
                };
                let n = self.length().map_err(e)?;
                for _ in 0..n {
                    let raw: [u8; 16] = self.array().map_err(e)?;
                    let id = StreamId::from_be_bytes(&raw).expect("16 bytes");
                    let Some(nack) = g.pel.get_mut(&id) else {
                        return Err("Consumer entry not found in group global PEL".into());
                    };
                    if !owned.insert(id) || !c.pel.insert(id) {
                        return Err(
                            "Duplicated consumer PEL entry loading a stream consumer group".into(),
                        );
                    }
                    nack.consumer = cname.clone().into();
                }
                if g.consumers.insert(cname.into(), c).is_some() {
                    return Err("Duplicate stream consumer detected.".into());
                }
            }
            if owned.len() != g.pel.len() {
                return Err("Stream CG PEL entry without consumer".into());
            }
            let shown = String::from_utf8_lossy(&name).into_owned();
            if s.groups.insert(name.into(), g).is_some() {
                return Err(format!("Duplicated consumer group name {shown}"));
            }
        }
        Ok(s)
    }

    /// A hash with field expiration (rdbLoadObject's
    /// `RDB_TYPE_HASH_METADATA*` and `RDB_TYPE_HASH_LISTPACK_EX*` parts,
    /// Valkey 9's `RDB_TYPE_HASH_2`), of type `ty` in the reader's dialect:
    ///
    /// * Redis 24: min expiry (8 bytes LE, ms), count, then per field its
    ///   TTL (an RDB length: 0 = none, else expiry - min + 1), field, value;
    /// * Redis 22 (7.4 release candidates): the same without the min expiry,
    ///   the TTL being the absolute expiry time (0 = none);
    /// * Redis 25: min expiry (8 bytes LE, unused), then a listpack of
    ///   field, value, expiry triplets (an integer, absolute ms, 0 = none);
    /// * Redis 23: the same listpack without the min expiry;
    /// * Valkey 22: count, then per field: field, value, expiry (8 bytes LE,
    ///   signed ms, -1 = none).
    ///
    /// The hash gets TTL metadata whatever its fields hold (reported as
    /// `listpackex` within the listpack limits, as Redis loads it). Fields
    /// expired before [`Reader::drop_fields_expired_before`] are dropped;
    /// when none is left, Ok(None) with [`Reader::take_expired_hash`] true.
    /// Errors: a duplicate field, an expiry beyond [`FIELD_TTL_MAX`] (or
    /// negative), a listpack that is not triplets, a truncated body.
    fn ttl_hash(
        &mut self,
        ty: u8,
        key: &[u8],
        lim: &LoadLimits,
    ) -> Result<Option<Value>, RdbError> {
        let bad = |r: &Self, what: &str| {
            r.err(format!("{what} (key '{}')", String::from_utf8_lossy(key)))
        };
        let valkey = self.dialect == Dialect::Valkey;
        let mut fields: Vec<(Vec<u8>, Vec<u8>, u64)> = Vec::new();
        if !valkey
            && matches!(
                ty,
                RDB_TYPE_HASH_LISTPACK_EX | RDB_TYPE_HASH_LISTPACK_EX_PRE_GA
            )
        {
            if ty == RDB_TYPE_HASH_LISTPACK_EX {
                // The min expiry: serialised for later use, not needed to
                // read the (absolute) times of the listpack.
                let _min: [u8; 8] = self.array()?;
            }
            let blob = self.string()?;
            let elems = listpack_elems(&blob).map_err(|e| bad(self, &e))?;
            if elems.len() % 3 != 0 {
                return Err(bad(
                    self,
                    "hash listpack with field TTLs is not made of triplets",
                ));
            }
            fields.reserve(elems.len() / 3);
            for t in elems.chunks_exact(3) {
                let at = match t[2] {
                    super::blobs::Elem::Int(v) => Some(v),
                    super::blobs::Elem::Str(s) => crate::util::parse_i64(s),
                };
                let at = match at {
                    Some(v) if (0..=FIELD_TTL_MAX as i64).contains(&v) => v as u64,
                    _ => return Err(bad(self, "invalid hash field expiry time")),
                };
                fields.push((t[0].to_vec(), t[1].to_vec(), at));
            }
        } else {
            let min = if !valkey && ty == RDB_TYPE_HASH_METADATA {
                let m = u64::from_le_bytes(self.array()?);
                if m > FIELD_TTL_MAX {
                    return Err(bad(self, "invalid hash min expiry time"));
                }
                Some(m)
            } else {
                None
            };
            let n = self.count()?;
            fields.reserve(n.min(4096));
            for _ in 0..n {
                if valkey {
                    let f = self.string()?;
                    let v = self.string()?;
                    let at = i64::from_le_bytes(self.array()?);
                    let at = match at {
                        -1 => 0,
                        x if (0..=FIELD_TTL_MAX as i64).contains(&x) => x as u64,
                        _ => return Err(bad(self, "invalid hash field expiry time")),
                    };
                    fields.push((f, v, at));
                } else {
                    let ttl = self.length()?;
                    let at = match (ttl, min) {
                        (0, _) => 0,
                        (t, Some(m)) => t.checked_add(m).map_or(u64::MAX, |x| x - 1),
                        (t, None) => t,
                    };
                    if at > FIELD_TTL_MAX {
                        return Err(bad(self, "invalid hash field expiry time"));
                    }
                    let f = self.string()?;
                    let v = self.string()?;
                    fields.push((f, v, at));
                }
            }
        }
        let mut h = HashValue::new();
        let mut timed: Vec<(usize, u64)> = Vec::new();
        let mut dropped = 0usize;
        let cut = self.drop_fields_expired_before;
        let mut seen = std::collections::HashSet::with_capacity(fields.len());
        for (i, (f, v, at)) in fields.iter().enumerate() {
            if !seen.insert(&f[..]) {
                return Err(bad(self, "duplicate hash field"));
            }
            if *at != 0 && cut.is_some_and(|now| *at < now) {
                dropped += 1;
                continue;
            }
            h.set(f, v, lim.hash);
            if *at != 0 {
                timed.push((i, *at));
            }
        }
        if h.is_empty() {
            self.expired_hash = dropped > 0;
            return Ok(None);
        }
        h.make_volatile();
        for (i, at) in timed {
            h.set_field_ttl(&fields[i].0, at);
        }
        Ok(Some(Value::Hash(h)))
    }

    /// Reads one value of RDB type `ty` (rdbLoadObject). Ok(None) for an
    /// empty collection, which Redis also skips. `key` names the key in
    /// errors.
    pub fn value(
        &mut self,
        ty: u8,
        key: &[u8],
        lim: &LoadLimits,
    ) -> Result<Option<Value>, RdbError> {
        let bad = |r: &Self, what: String| {
            r.err(format!("{what} (key '{}')", String::from_utf8_lossy(key)))
        };
        self.expired_hash = false;
        if self.dialect == Dialect::Valkey && ty == RDB_TYPE_VALKEY_HASH_2 {
            return self.ttl_hash(ty, key, lim);
        }
        if self.dialect == Dialect::Redis
            && matches!(
                ty,
                RDB_TYPE_HASH_METADATA_PRE_GA
                    | RDB_TYPE_HASH_LISTPACK_EX_PRE_GA
                    | RDB_TYPE_HASH_METADATA
                    | RDB_TYPE_HASH_LISTPACK_EX
            )
        {
            return self.ttl_hash(ty, key, lim);
        }
        Ok(Some(match ty {
            RDB_TYPE_STRING => Value::Str(StrValue::from_bytes(&self.string()?)),
            RDB_TYPE_LIST => {
                let n = self.count()?;
                let mut l = ListValue::with_compress_depth(lim.list_compress);
                for _ in 0..n {
                    l.push(End::Right, &self.string()?, lim.list_fill);
                }
                list(l)
            }
            RDB_TYPE_LIST_ZIPLIST => {
                let blob = self.string()?;
                let elems = ziplist_elems(&blob)
                    .map_err(|e| self.corrupt("List ziplist integrity check failed.", &e, key))?;
                let mut l = ListValue::with_compress_depth(lim.list_compress);
                push_elems(&mut l, &elems, lim.list_fill);
                list(l)
            }
            RDB_TYPE_LIST_QUICKLIST | RDB_TYPE_LIST_QUICKLIST_2 => {
                let nodes = self.count()?;
                let mut l = ListValue::with_compress_depth(lim.list_compress);
                for _ in 0..nodes {
                    let container = if ty == RDB_TYPE_LIST_QUICKLIST_2 {
                        self.length()?
                    } else {
                        QUICKLIST_NODE_CONTAINER_PACKED
                    };
                    let blob = self.string()?;
                    if blob.is_empty() {
                        // rdbLoadObject refuses a node of encoded_len 0.
                        return Err(bad(self, "quicklist node of length 0".into()));
                    }
                    match container {
                        // A plain node stays one, as quicklistAppendPlainNode.
                        QUICKLIST_NODE_CONTAINER_PLAIN => l.push_plain(&blob),
                        QUICKLIST_NODE_CONTAINER_PACKED => {
                            let elems = if ty == RDB_TYPE_LIST_QUICKLIST {
                                ziplist_elems(&blob).map_err(|e| {
                                    self.corrupt("Ziplist integrity check failed.", &e, key)
                                })
                            } else {
                                listpack_elems(&blob).map_err(|e| {
                                    self.corrupt("Listpack integrity check failed.", &e, key)
                                })
                            }?;
                            push_elems(&mut l, &elems, lim.list_fill);
                        }
                        c => {
                            return Err(self.corrupt(
                                "Quicklist integrity check failed.",
                                &format!("unknown quicklist container {c}"),
                                key,
                            ))
                        }
                    }
                }
                list(l)
            }
            RDB_TYPE_SET => {
                let n = self.count()?;
                let mut s = SetValue::new();
                for _ in 0..n {
                    let m = self.string()?;
                    if !s.add(&m, lim.set_max_intset) {
                        return Err(self.corrupt(
                            "Duplicate set members detected",
                            "a member appears twice",
                            key,
                        ));
                    }
                }
                set(s)
            }
            RDB_TYPE_SET_INTSET => {
                let blob = self.string()?;
                let v = intset_decode(&blob)
                    .map_err(|e| self.corrupt("Intset integrity check failed.", &e, key))?;
                let mut s = SetValue::new();
                let mut t = itoa::Buffer::new();
                for x in v {
                    s.add(t.format(x).as_bytes(), lim.set_max_intset);
                }
                set(s)
            }
            RDB_TYPE_SET_LISTPACK => {
                let blob = self.string()?;
                let reason = "Set listpack integrity check failed.";
                let elems = listpack_elems(&blob).map_err(|e| self.corrupt(reason, &e, key))?;
                let mut s = SetValue::new();
                for e in elems {
                    if !e.with(|m| s.add(m, lim.set_max_intset)) {
                        return Err(self.corrupt(reason, "listpack with dup elements", key));
                    }
                }
                set(s)
            }
            RDB_TYPE_ZSET | RDB_TYPE_ZSET_2 => {
                let n = self.count()?;
                let mut z = ZSetValue::new();
                for _ in 0..n {
                    let m = self.string()?;
                    let s = if ty == RDB_TYPE_ZSET_2 {
                        f64::from_le_bytes(self.array()?)
                    } else {
                        self.text_double()?
                    };
                    zadd(self, &mut z, &m, Some(s), lim, key, None)?;
                }
                zset_value(z)
            }
            RDB_TYPE_ZSET_ZIPLIST | RDB_TYPE_ZSET_LISTPACK => {
                let blob = self.string()?;
                let (reason, elems) = if ty == RDB_TYPE_ZSET_ZIPLIST {
                    ("Zset ziplist integrity check failed.", ziplist_elems(&blob))
                } else {
                    ("Zset listpack integrity check failed.", listpack_elems(&blob))
                };
                let elems = elems.map_err(|e| self.corrupt(reason, &e, key))?;
                if elems.len() % 2 != 0 {
                    return Err(self.corrupt(reason, "odd element count", key));
                }
                let mut z = ZSetValue::new();
                for p in elems.chunks_exact(2) {
                    let m = p[0].to_vec();
                    zadd(self, &mut z, &m, p[1].score(), lim, key, Some(reason))?;
                }
                zset_value(z)
            }
            RDB_TYPE_HASH => {
                let n = self.count()?;
                let mut h = HashValue::new();
                for _ in 0..n {
                    let f = self.string()?;
                    let v = self.string()?;
                    if !h.set(&f, &v, lim.hash) {
                        return Err(self.corrupt(
                            "Duplicate hash fields detected",
                            "a field appears twice",
                            key,
                        ));
                    }
                }
                hash_value(h)
            }
            RDB_TYPE_HASH_ZIPMAP => {
                let blob = self.string()?;
                let pairs = zipmap_pairs(&blob)
                    .map_err(|e| self.corrupt("Zipmap integrity check failed.", &e, key))?;
                let mut h = HashValue::new();
                for (f, v) in pairs {
                    if !h.set(f, v, lim.hash) {
                        return Err(self.corrupt(
                            &format!("Hash zipmap with dup elements, or big length ({})", f.len()),
                            "a field appears twice",
                            key,
                        ));
                    }
                }
                hash_value(h)
            }
            RDB_TYPE_HASH_ZIPLIST | RDB_TYPE_HASH_LISTPACK => {
                let blob = self.string()?;
                let (reason, elems) = if ty == RDB_TYPE_HASH_ZIPLIST {
                    ("Hash ziplist integrity check failed.", ziplist_elems(&blob))
                } else {
                    ("Hash listpack integrity check failed.", listpack_elems(&blob))
                };
                let elems = elems.map_err(|e| self.corrupt(reason, &e, key))?;
                if elems.len() % 2 != 0 {
                    return Err(self.corrupt(reason, "odd element count", key));
                }
                let mut h = HashValue::new();
                for p in elems.chunks_exact(2) {
                    let f = p[0].to_vec();
                    let new = p[1].with(|v| h.set(&f, v, lim.hash));
                    if !new {
                        // The words of Redis's hashTypeConvertListpack panic.
                        return Err(self.corrupt(reason, "listpack with dup elements", key));
                    }
                }
                hash_value(h)
            }
            RDB_TYPE_STREAM_LISTPACKS
            | RDB_TYPE_STREAM_LISTPACKS_2
            | RDB_TYPE_STREAM_LISTPACKS_3 => {
                let s = self.stream(ty).map_err(|e| bad(self, e))?;
                Value::Stream(Box::new(s))
            }
            RDB_TYPE_MODULE_PRE_GA | RDB_TYPE_MODULE_2 => {
                return Err(bad(
                    self,
                    "modules are not supported by ferrokv: cannot load a module value".into(),
                ))
            }
            t => {
                return Err(self.err(format!(
                    "RDB: key '{}' has type {t}, which no RDB version ferrokv reads defines (unknown RDB value type)",
                    String::from_utf8_lossy(key)
                )))
            }
        }))
        .map(|v: Option<Value>| v.filter(|v| !is_empty(v)))
    }
}

fn list(l: ListValue) -> Value {
    Value::List(Box::new(l))
}
fn set(s: SetValue) -> Value {
    Value::Set(Box::new(s))
}
fn zset_value(z: ZSetValue) -> Value {
    Value::ZSet(Box::new(z))
}
fn hash_value(h: HashValue) -> Value {
    Value::Hash(h)
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Str(_) => false,
        Value::List(l) => l.is_empty(),
        Value::Set(s) => s.is_empty(),
        Value::ZSet(z) => z.is_empty(),
        Value::Hash(h) => h.is_empty(),
        Value::Stream(_) => false,
    }
}

fn push_elems(l: &mut ListValue, elems: &[Elem<'_>], fill: i64) {
    for e in elems {
        e.with(|b| l.push(End::Right, b, fill));
    }
}

/// Adds one member read from an RDB to `z`. `packed` is the integrity
/// reason of a ziplist / listpack body (whose problems Redis reports as
/// that), None for the member-by-member types.
fn zadd<R: Read>(
    r: &Reader<R>,
    z: &mut ZSetValue,
    m: &[u8],
    score: Option<f64>,
    lim: &LoadLimits,
    key: &[u8],
    packed: Option<&str>,
) -> Result<(), RdbError> {
    let s = match score {
        Some(s) if !s.is_nan() => s,
        _ => {
            let reason = packed.unwrap_or("Zset with NAN score detected");
            return Err(r.corrupt(reason, "invalid or NaN score", key));
        }
    };
    if !z.insert(m, s, lim.zset) {
        let reason = packed.unwrap_or("Duplicate zset fields detected");
        return Err(r.corrupt(reason, "a member appears twice", key));
    }
    Ok(())
}
