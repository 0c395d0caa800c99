//! Hash slots: which of the 16384 slots of Redis Cluster a key belongs to.
//!
//! The slot is CRC16 (XMODEM: polynomial 0x1021, initial value 0) of the
//! key modulo 16384, or of its *hash tag*: when the key contains `{` and a
//! later `}` with at least one byte between them, only the bytes between
//! the first `{` and the first `}` after it are hashed, so `{user1}:a` and
//! `{user1}:b` share a slot (redis.io cluster specification, "Hash tags";
//! Redis's `keyHashSlot` in cluster.c).

use crc::{Crc, CRC_16_XMODEM};

/// Number of hash slots.
pub const SLOTS: usize = 16384;

const CRC16: Crc<u16> = Crc::<u16>::new(&CRC_16_XMODEM);

/// CRC16/XMODEM of `bytes` (the checksum Redis Cluster hashes keys with).
#[inline]
pub fn crc16(bytes: &[u8]) -> u16 {
    CRC16.checksum(bytes)
}

/// The hash slot of `key`, 0..16384 (Redis's `keyHashSlot`).
#[inline]
pub fn key_hash_slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        rest.iter()
            .position(|&b| b == b'}')
            .filter(|&close| close > 0)
            .map(|close| &rest[..close])
    });
    crc16(tagged.unwrap_or(key)) & (SLOTS as u16 - 1)
}

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
