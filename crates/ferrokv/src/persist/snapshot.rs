//! Point-in-time copies of the keyspace while writers go on: what Redis
//! gets from fork() for BGREWRITEAOF (and BGSAVE and a replica's full
//! sync), without a fork.
//!
//! [`Snapshot::begin`], called while writes are paused
//! (`Stream::pause_writes`), arms a copier on every shard
//! (db/keyspace.rs `ShardCopier`), copy-on-write per key as fork() is per
//! page: until the snapshot's walk ([`Snapshot::shard`]) reaches a shard, a
//! write about to change one of its keys first saves that key as it is
//! (once per key, under the shard's lock); the walk then serialises the
//! shard's other keys as they are and adds the saved ones. Writers pay for
//! the keys they change while the copy runs, not for whole shards. A write
//! that changes a whole shard (FLUSHALL, FLUSHDB, SWAPDB) copies it first;
//! those bytes wait in the snapshot until the walk takes them. Memory: the
//! saved keys and the shards copied ahead of the walk, at worst one
//! serialised copy of the dataset (Redis's copy-on-write worst case is one
//! copy of every page).

use crate::db::keyspace::{Keyspace, SavedKeys, Shard, ShardCopier};
use crate::db::Entry;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Serialises one key: (key, entry, expiry time in ms since the epoch or 0,
/// the snapshot's time in ms, output). Returns false, writing nothing, for a
/// key left out (its TTL had passed when the snapshot began).
pub type Serialise = dyn Fn(&[u8], &Entry, u64, u64, &mut Vec<u8>) -> bool + Send + Sync;

/// A shard's serialised bytes and its number of keys.
type Copied = (Vec<u8>, u64);

/// The copier armed on the shards: serialises, and keeps the shards that
/// writes made it copy until the walk takes them.
struct Copier {
    serialise: Box<Serialise>,
    /// When the snapshot began (ms since the epoch): keys expired by then
    /// are left out.
    at_ms: u64,
    /// (database, shard) -> (bytes, keys), copied and not yet walked.
    copied: Mutex<HashMap<(usize, usize), Copied>>,
}

impl Copier {
    /// Serialises `shard`'s keys but those in `saved`, then the saved ones.
    fn serialise_shard(&self, shard: &Shard, saved: Option<&SavedKeys>, b: &mut Vec<u8>) -> u64 {
        let mut n = 0;
        for (k, e, at) in shard.iter_with_expire() {
            if saved.is_some_and(|s| s.contains_key(k)) {
                continue;
            }
            n += u64::from((self.serialise)(k, e, at, self.at_ms, b));
        }
        for bytes in saved.into_iter().flat_map(|s| s.values().flatten()) {
            b.extend_from_slice(bytes);
            n += 1;
        }
        n
    }
}

impl ShardCopier for Copier {
    fn copy(&self, db: usize, idx: usize, shard: &Shard, saved: Option<&SavedKeys>) {
        let mut b = Vec::new();
        let n = self.serialise_shard(shard, saved, &mut b);
        self.copied.lock().insert((db, idx), (b, n));
    }

    fn save_key(&self, key: &[u8], entry: &Entry, expire_at: u64, out: &mut Vec<u8>) -> bool {
        (self.serialise)(key, entry, expire_at, self.at_ms, out)
    }
}

/// One point-in-time copy in progress; dropping it disarms the shards it
/// has not copied.
pub struct Snapshot<'a> {
    ks: &'a Keyspace,
    copier: Arc<Copier>,
    armed: Arc<dyn ShardCopier>,
}

impl<'a> Snapshot<'a> {
    /// Begins a copy of `ks` at `at_ms` (the server's clock, ms since the
    /// epoch) serialised by `serialise`. Call with writes paused: the copy
    /// is the keyspace as it is during the call.
    pub fn begin(ks: &'a Keyspace, at_ms: u64, serialise: Box<Serialise>) -> Snapshot<'a> {
        let copier = Arc::new(Copier {
            serialise,
            at_ms,
            copied: Mutex::new(HashMap::new()),
        });
        let armed: Arc<dyn ShardCopier> = copier.clone();
        ks.arm_copier(&armed);
        Snapshot { ks, copier, armed }
    }

    /// Shard `idx` of database `db` serialised as it was when the copy
    /// began, appended to `out`; returns its number of keys. Each shard is
    /// to be asked for once.
    pub fn shard(&self, db: usize, idx: usize, out: &mut Vec<u8>) -> u64 {
        // Copies it now unless a write did already; either way it is then
        // in `copied`.
        self.ks.copy_shard(&self.armed, db, idx);
        match self.copier.copied.lock().remove(&(db, idx)) {
            Some((b, n)) => {
                if out.is_empty() {
                    *out = b;
                } else {
                    out.extend_from_slice(&b);
                }
                n
            }
            None => 0,
        }
    }
}

impl Drop for Snapshot<'_> {
    fn drop(&mut self) {
        self.ks.disarm_copier(&self.armed);
    }
}
