//! DEBUG DIGEST and DEBUG DIGEST-VALUE: Redis 7.0's dataset digest
//! (debug.c computeDatasetDigest / xorObjectDigest), so that the same
//! dataset gives the same 40-hex-digit digest on redis-server and
//! ferrokv (test suites compare servers, and a server before and after a
//! reload or a replication, this way).
//!
//! Per key: a 20-byte digest mixing the key, the type (32-bit big
//! endian), then the value: a string's bytes; a list's elements in order;
//! a set's members XORed (order-free); per sorted-set member the member
//! and its score as `%.17g`, XORed; per hash field the field and value,
//! XORed (with `!!hexpire!!` XORed into a field's part when it has a TTL,
//! as Redis 7.4); per stream entry `ms.seq` then each field and value; and
//! `!!expire!!` XORed in when the key has a TTL. The keys' digests are
//! XORed together per database, after mixing in the database number.
//! "Mix" is XOR of the SHA-1 of the data followed by the SHA-1 of the
//! result; the all-zero digest is the empty dataset's.

use crate::db::{hash_key, Entry, StrValue, Value};
use sha1::{Digest, Sha1};

/// A 20-byte digest.
pub type Digest20 = [u8; 20];

fn xor_digest(d: &mut Digest20, data: &[u8]) {
    let h = Sha1::digest(data);
    for (a, b) in d.iter_mut().zip(h.iter()) {
        *a ^= b;
    }
}

fn mix_digest(d: &mut Digest20, data: &[u8]) {
    xor_digest(d, data);
    let h = Sha1::digest(&d[..]);
    d.copy_from_slice(&h);
}

/// Redis's object type numbers (OBJ_STRING ... OBJ_STREAM).
fn type_number(v: &Value) -> u32 {
    match v {
        Value::Str(_) => 0,
        Value::List(_) => 1,
        Value::Set(_) => 2,
        Value::ZSet(_) => 3,
        Value::Hash(_) => 4,
        Value::Stream(_) => 6,
    }
}

/// Mixes one value (and its TTL mark) into `d` (`xorObjectDigest`).
pub fn value_digest(d: &mut Digest20, e: &Entry, has_ttl: bool) {
    mix_digest(d, &type_number(&e.value).to_be_bytes());
    match &e.value {
        Value::Str(s) => {
            let mut t = itoa::Buffer::new();
            mix_digest(d, StrValue::as_bytes(s, &mut t));
        }
        Value::List(l) => {
            l.for_each(|x| x.with_bytes(|b| mix_digest(d, b)));
        }
        Value::Set(s) => {
            for m in s.iter() {
                match m {
                    crate::db::set::Member::Int(i) => {
                        xor_digest(d, itoa::Buffer::new().format(i).as_bytes())
                    }
                    crate::db::set::Member::Bytes(b) => xor_digest(d, b),
                }
            }
        }
        Value::ZSet(z) => {
            let mut score = Vec::with_capacity(32);
            z.range(0, z.len(), false, |m, s| {
                let mut ele = [0u8; 20];
                mix_digest(&mut ele, m);
                score.clear();
                crate::util::fmt_double_17g(s, &mut score);
                mix_digest(&mut ele, &score);
                xor_digest(d, &ele);
            });
        }
        Value::Hash(h) => {
            let ttls = h.ttls().filter(|t| !t.is_empty());
            for (f, v) in h.iter() {
                let mut ele = [0u8; 20];
                mix_digest(&mut ele, f);
                mix_digest(&mut ele, v);
                // Redis 7.4's xorObjectDigest: a field with a TTL (expired
                // or not) has `!!hexpire!!` XORed in; the time is not.
                if ttls.is_some_and(|t| t.get(f).is_some()) {
                    xor_digest(&mut ele, b"!!hexpire!!");
                }
                xor_digest(d, &ele);
            }
        }
        Value::Stream(s) => {
            use crate::db::stream::StreamId;
            s.range(StreamId::MIN, StreamId::MAX, false, |id, entry| {
                mix_digest(d, format!("{}.{}", id.ms, id.seq).as_bytes());
                for (f, v) in entry.pairs() {
                    mix_digest(d, &f);
                    mix_digest(d, &v);
                }
                true
            });
        }
    }
    if has_ttl {
        xor_digest(d, b"!!expire!!");
    }
}

/// The digest of one key's value, expired or not (DEBUG DIGEST-VALUE):
/// all zeros for a missing key.
pub fn key_digest(db: &crate::db::Db, key: &[u8]) -> Digest20 {
    let mut d = [0u8; 20];
    let h = hash_key(key);
    let sh = db.lock(h);
    // At time 0 nothing counts as expired: the raw entry.
    if let Some(e) = sh.peek(h, key, 0) {
        value_digest(&mut d, e, sh.expire_at(h, key) != 0);
    }
    d
}

/// The digest of every database (DEBUG DIGEST), logically expired keys
/// included as Redis (which walks its dicts) does.
pub fn dataset_digest(ks: &crate::db::Keyspace) -> Digest20 {
    let mut fin = [0u8; 20];
    for j in 0..ks.db_count() {
        let db = ks.db(j);
        let mut mixed = false;
        for i in 0..crate::db::keyspace::SHARDS {
            let sh = db.shard_at(i).lock();
            for (k, e, at) in sh.iter_with_expire() {
                if !mixed {
                    mix_digest(&mut fin, &(j as u32).to_be_bytes());
                    mixed = true;
                }
                let mut d = [0u8; 20];
                mix_digest(&mut d, k);
                value_digest(&mut d, e, at != 0);
                xor_digest(&mut fin, &d);
            }
        }
    }
    fin
}

/// 40 lower-case hex digits.
pub fn hex(d: &Digest20) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}
