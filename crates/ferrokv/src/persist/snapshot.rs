//! Point-in-time copies of the keyspace while writers go on: what Redis
//! gets from fork() for BGREWRITEAOF (and BGSAVE and a replica's full
//! sync), without a fork.
//!
//! [`Snapshot::begin`], called while writes are paused
//! (`Stream::pause_writes`), arms a copier on every shard
//! (db/keyspace.rs `ShardCopier`). From then on a shard is serialised as
//! it was at that moment either by the first write context that locks it
//! (before it changes anything; the bytes wait in the snapshot) or by the
//! snapshot's own walk ([`Snapshot::shard`]), whichever comes first. Writers
//! pay once per shard they touch, a shard's worth of serialising (a
//! 256th of a database), instead of waiting for the whole walk. Memory:
//! the shards copied by writers are held until the walk reaches them, at
//! worst one serialised copy of the dataset (Redis's copy-on-write worst
//! case is one copy of every page).

use crate::db::keyspace::{Keyspace, Shard, ShardCopier};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Serialises a locked shard into the buffer; returns the keys written.
pub type Serialise = dyn Fn(&Shard, &mut Vec<u8>) -> u64 + Send + Sync;

/// A shard's serialised bytes and its number of keys.
type Copied = (Vec<u8>, u64);

/// The copier armed on the shards: serialises, and keeps what writers made
/// it copy until the walk takes it.
struct Copier {
    serialise: Box<Serialise>,
    /// (database, shard) -> (bytes, keys), copied and not yet walked.
    copied: Mutex<HashMap<(usize, usize), Copied>>,
}

impl ShardCopier for Copier {
    fn copy(&self, db: usize, idx: usize, shard: &Shard) {
        let mut b = Vec::new();
        let n = (self.serialise)(shard, &mut b);
        self.copied.lock().insert((db, idx), (b, n));
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
    /// Begins a copy of `ks` serialised by `serialise`. Call with writes
    /// paused: the copy is the keyspace as it is during the call.
    pub fn begin(ks: &'a Keyspace, serialise: Box<Serialise>) -> Snapshot<'a> {
        let copier = Arc::new(Copier {
            serialise,
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
        // Copies it now unless a writer did already; either way it is then
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
