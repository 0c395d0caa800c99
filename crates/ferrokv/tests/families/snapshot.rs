//! Point-in-time copies (persist/snapshot.rs), the base of an AOF rewrite:
//! whatever writes do after the copy begins, the copy holds every key as
//! it was at that moment (copy-on-write per key, whole shards for SWAPDB
//! and FLUSH*), and leaves out keys already expired then.

use crate::harness::Rig;
use ferrokv::db::keyspace::SHARDS;
use ferrokv::db::{Entry, Value};
use ferrokv::persist::snapshot::Snapshot;
use ferrokv::server::Server;
use std::collections::BTreeSet;

/// Serialises a key as one `db:key=value` line (value: a string's bytes,
/// a list's items joined by `,`, else the type's name).
fn line(k: &[u8], e: &Entry, at: u64, now: u64, out: &mut Vec<u8>) -> bool {
    if at != 0 && at < now {
        return false;
    }
    out.extend_from_slice(k);
    out.push(b'=');
    match &e.value {
        Value::Str(s) => out.extend_from_slice(&s.to_vec()),
        Value::List(l) => {
            let items: Vec<Vec<u8>> = l.iter().map(|x| x.to_vec()).collect();
            out.extend_from_slice(&items.join(&b","[..]));
        }
        v => out.extend_from_slice(v.type_name().as_bytes()),
    }
    out.push(b'\n');
    true
}

/// Everything the snapshot holds, as `db:key=value` strings.
fn contents(server: &Server, snap: &Snapshot<'_>) -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    for db in 0..server.keyspace.db_count() {
        for idx in 0..SHARDS {
            let mut b = Vec::new();
            snap.shard(db, idx, &mut b);
            for l in String::from_utf8(b).unwrap().lines() {
                all.insert(format!("{db}:{l}"));
            }
        }
    }
    all
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_copy_keeps_the_keyspace_as_it_was_when_it_began() {
    let mut r = Rig::new();
    // Writes run in write contexts, as with the AOF on.
    r.server
        .propagation
        .set_user(ferrokv::propagate::USER_AOF, true);
    r.cmd("MSET a 1 b 2 c 3");
    r.cmd("RPUSH l x y");
    r.cmd("SET gone v PX 100");
    r.cmd("SELECT 1");
    r.cmd("SET other 9");
    r.cmd("SELECT 0");
    r.advance_ms(200);
    let server = r.server.clone();
    let snap = Snapshot::begin(&server.keyspace, server.clock.now_ms(), Box::new(line));
    let before = set(&["0:a=1", "0:b=2", "0:c=3", "0:l=x,y", "1:other=9"]);
    // Changes of every kind after the copy began.
    r.cmd("SET a 10");
    r.cmd("INCR a");
    r.cmd("DEL b");
    r.cmd("SET new 1");
    r.cmd("RPUSH l z");
    r.cmd("LPOP l");
    r.cmd("RENAME c c2");
    r.cmd("MOVE new 1");
    r.cmd("SWAPDB 0 1");
    r.cmd("SET after-swap 1");
    r.cmd("FLUSHDB");
    r.cmd("SELECT 1");
    r.cmd("APPEND a x");
    assert_eq!(r.bulk("GET a"), Some("11x".into()));
    assert_eq!(contents(&server, &snap), before);
    drop(snap);
    r.server
        .propagation
        .set_user(ferrokv::propagate::USER_AOF, false);
}

#[test]
fn reads_outside_write_contexts_copy_nothing_and_a_later_copy_sees_the_changes() {
    let mut r = Rig::new();
    r.server
        .propagation
        .set_user(ferrokv::propagate::USER_AOF, true);
    r.cmd("SET k v1");
    let server = r.server.clone();
    let first = Snapshot::begin(&server.keyspace, server.clock.now_ms(), Box::new(line));
    assert_eq!(r.bulk("GET k"), Some("v1".into()));
    r.cmd("SET k v2");
    assert_eq!(contents(&server, &first), set(&["0:k=v1"]));
    drop(first);
    let second = Snapshot::begin(&server.keyspace, server.clock.now_ms(), Box::new(line));
    r.cmd("SET k v3");
    assert_eq!(contents(&server, &second), set(&["0:k=v2"]));
    drop(second);
    r.server
        .propagation
        .set_user(ferrokv::propagate::USER_AOF, false);
}
