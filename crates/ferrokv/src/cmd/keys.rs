//! Keyspace commands (redis.io/commands/?group=generic), following db.c and
//! expire.c.

use super::{acl, cmd, flags::*, Command, Ctx};
use crate::db::hash_key;
use crate::resp::Args;

/// The generic (keyspace) family's table entries.
pub static COMMANDS: &[Command] = &[
    cmd("del", -2, WRITE, (1, -1, 1), acl::KEYSPACE, del).doc(
        "generic",
        "1.0.0",
        "Delete a key",
        "O(N) where N is the number of keys that will be removed.",
    ),
    cmd(
        "exists",
        -2,
        READONLY | FAST,
        (1, -1, 1),
        acl::KEYSPACE,
        exists,
    )
    .doc(
        "generic",
        "1.0.0",
        "Determine if a key exists",
        "O(N) where N is the number of keys to check.",
    ),
];

/// DEL key [key ...]: number of keys removed (atomic across shards).
fn del(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let db = ctx.client.db;
    let hashes: Vec<(usize, u64)> = (1..args.len())
        .map(|i| (db, hash_key(args.get(i))))
        .collect();
    let mut locks = ctx.server.keyspace.lock_keys(&hashes);
    let mut n = 0;
    for (i, &(_, h)) in hashes.iter().enumerate() {
        let key = args.get(i + 1);
        let shard = locks.shard(db, h);
        if shard.get(h, key, ctx.now).is_some() {
            shard.remove(h, key);
            n += 1;
        }
    }
    drop(locks);
    ctx.out.int(n);
}

/// EXISTS key [key ...]: how many of the keys exist (repeats count).
fn exists(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let db = ctx.client.db;
    let hashes: Vec<(usize, u64)> = (1..args.len())
        .map(|i| (db, hash_key(args.get(i))))
        .collect();
    let mut locks = ctx.server.keyspace.lock_keys(&hashes);
    let mut n = 0;
    for (i, &(_, h)) in hashes.iter().enumerate() {
        if locks
            .shard(db, h)
            .get(h, args.get(i + 1), ctx.now)
            .is_some()
        {
            n += 1;
        }
    }
    drop(locks);
    ctx.out.int(n);
}
