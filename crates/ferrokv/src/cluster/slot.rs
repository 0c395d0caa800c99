//! Hash slots: which of the 16384 slots of Redis Cluster a key belongs to.
//!
//! The slot is CRC16 (XMODEM: polynomial 0x1021, initial value 0) of the
//! key modulo 16384, or of its *hash tag*: when the key contains `{` and a
//! later `}` with at least one byte between them, only the bytes between
//! the first `{` and the first `}` after it are hashed, so `{user1}:a` and
//! `{user1}:b` share a slot (redis.io cluster specification, "Hash tags";
//! Redis's `keyHashSlot` in cluster.c).

pub use crate::db::slotindex::{crc16, key_hash_slot, SLOTS};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis() {
        // Values from redis-server 7.0's CLUSTER KEYSLOT.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(key_hash_slot(b"foo"), 12182);
        assert_eq!(key_hash_slot(b"bar"), 5061);
        assert_eq!(
            key_hash_slot(b"{user1000}.following"),
            key_hash_slot(b"user1000")
        );
        assert_eq!(key_hash_slot(b"foo{}{bar}"), key_hash_slot(b"foo{}{bar}"));
        // An empty tag hashes the whole key; only the first tag counts.
        assert_ne!(key_hash_slot(b"foo{}{bar}"), key_hash_slot(b"bar"));
        assert_eq!(key_hash_slot(b"foo{{bar}}zap"), key_hash_slot(b"{bar"));
        assert_eq!(key_hash_slot(b"foo{bar}{zap}"), key_hash_slot(b"bar"));
        assert_eq!(key_hash_slot(b""), 0);
    }
}
