//! Lazy freeing (Redis 7.0's lazyfree.c): values made of many allocations,
//! and whole databases emptied by `FLUSHALL ASYNC` / `FLUSHDB ASYNC`, are
//! dropped on one background thread (Redis's `BIO_LAZY_FREE` job queue)
//! instead of on the thread serving the request, so the reply does not
//! wait for the free.
//!
//! What is freed in the background, as Redis decides it:
//! - a value whose [`free_effort`] is above [`LAZYFREE_THRESHOLD`] (64),
//!   when the deletion is lazy: UNLINK always, DEL with
//!   `lazyfree-lazy-user-del`, expiry with `lazyfree-lazy-expire`,
//!   eviction with `lazyfree-lazy-eviction`, and the server's own
//!   deletions and overwrites with `lazyfree-lazy-server-del`
//!   ([`Reason`]); smaller values are dropped at once (freeing them
//!   elsewhere would only be slower);
//! - whole databases, whatever their size ([`free_databases`]), counting
//!   their keys.
//!
//! The counters are those of `INFO`: [`pending`] is
//! `lazyfree_pending_objects` (memory section: objects handed to the
//! thread and not freed yet), [`freed`] is `lazyfreed_objects` (also the
//! memory section, as 7.0 has it: objects the thread has freed since the start or the last
//! `CONFIG RESETSTAT`, [`reset_stats`]). Both are process-wide, as the
//! background thread is.
//!
//! The request path pays nothing for this: a deletion reads one relaxed
//! atomic (the directives) and, for a large value only, queues it.

use super::value::{Entry, Value};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::OnceLock;

/// Redis's `LAZYFREE_THRESHOLD`: a value whose free effort is above this
/// many allocations is freed in the background when the deletion is lazy.
pub const LAZYFREE_THRESHOLD: usize = 64;

/// Why a value is being deleted: selects the `lazyfree-lazy-*` directive
/// that decides whether the deletion is lazy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Maxmemory eviction (`lazyfree-lazy-eviction`).
    Eviction,
    /// A key reclaimed because its TTL passed, lazily or by the active
    /// cycle (`lazyfree-lazy-expire`).
    Expire,
    /// The server's own deletions: a value overwritten (SET, RENAME's
    /// destination, *STORE), a key emptied by a command (`lazyfree-lazy-server-del`).
    ServerDel,
    /// DEL (`lazyfree-lazy-user-del`).
    UserDel,
    /// UNLINK: always lazy.
    Unlink,
}

const EVICTION: u8 = 1;
const EXPIRE: u8 = 2;
const SERVER_DEL: u8 = 4;
const USER_DEL: u8 = 8;
const USER_FLUSH: u8 = 16;

/// The `lazyfree-lazy-*` directives, one bit each.
static FLAGS: AtomicU8 = AtomicU8::new(0);
/// `lazyfree_pending_objects`.
static PENDING: AtomicUsize = AtomicUsize::new(0);
/// `lazyfreed_objects`.
static FREED: AtomicUsize = AtomicUsize::new(0);

type Job = Box<dyn FnOnce() + Send>;

/// The background thread's queue, started on first use.
static QUEUE: OnceLock<Option<Sender<Job>>> = OnceLock::new();

/// Records the five `lazyfree-lazy-*` directives (called whenever the
/// configuration changes): eviction, expire, server-del, user-del and
/// user-flush, in that order.
pub fn configure(eviction: bool, expire: bool, server_del: bool, user_del: bool, user_flush: bool) {
    let mut f = 0;
    for (on, bit) in [
        (eviction, EVICTION),
        (expire, EXPIRE),
        (server_del, SERVER_DEL),
        (user_del, USER_DEL),
        (user_flush, USER_FLUSH),
    ] {
        if on {
            f |= bit;
        }
    }
    FLAGS.store(f, Ordering::Relaxed);
}

/// True when a deletion for `why` is lazy under the current directives.
#[inline]
pub fn lazy(why: Reason) -> bool {
    let bit = match why {
        Reason::Eviction => EVICTION,
        Reason::Expire => EXPIRE,
        Reason::ServerDel => SERVER_DEL,
        Reason::UserDel => USER_DEL,
        Reason::Unlink => return true,
    };
    FLAGS.load(Ordering::Relaxed) & bit != 0
}

/// `lazyfree-lazy-user-flush`: whether FLUSHALL / FLUSHDB without SYNC or
/// ASYNC (and SCRIPT FLUSH, FUNCTION FLUSH) free in the background.
#[inline]
pub fn lazy_user_flush() -> bool {
    FLAGS.load(Ordering::Relaxed) & USER_FLUSH != 0
}

/// `lazyfree_pending_objects`: objects queued and not yet freed.
pub fn pending() -> usize {
    PENDING.load(Ordering::Acquire)
}

/// `lazyfreed_objects`: objects freed in the background since the start
/// or the last [`reset_stats`].
pub fn freed() -> usize {
    FREED.load(Ordering::Acquire)
}

/// CONFIG RESETSTAT (Redis's `lazyfreeResetStats`): zeroes
/// `lazyfreed_objects`; the pending count is left alone.
pub fn reset_stats() {
    FREED.store(0, Ordering::Release);
}

/// Redis's `lazyfreeGetFreeEffort`: about how many allocations freeing `v`
/// takes. A list counts its nodes (quicklist nodes); a `hashtable` set or
/// hash and a `skiplist` sorted set count their elements; a stream counts
/// the nodes of its radix tree plus, when it has consumer groups, the
/// number of groups times (1 + the first group's pending entries); every
/// other value (strings, `listpack` and `intset` encodings) is 1.
///
/// For a stream with more than [`LAZYFREE_THRESHOLD`] entry nodes the
/// node count stands for the radix tree's (it is a lower bound of it and
/// already past the threshold), so the answer costs O(1) there as in
/// Redis.
pub fn free_effort(v: &Value) -> usize {
    match v {
        Value::Str(_) => 1,
        Value::List(l) => l.node_count(),
        Value::Set(s) => match &**s {
            super::set::SetValue::Table(t) => t.len(),
            super::set::SetValue::Int(_) => 1,
        },
        Value::Hash(h) => match h {
            super::hash::HashValue::Table(t) => t.len(),
            super::hash::HashValue::Listpack(_) => 1,
        },
        Value::ZSet(z) => {
            if z.encoding() == "skiplist" {
                z.len()
            } else {
                1
            }
        }
        Value::Stream(s) => {
            let nodes = s.node_count();
            let mut effort = if nodes > LAZYFREE_THRESHOLD {
                nodes
            } else {
                s.rax_nodes()
            };
            if let Some(first) = s.groups.values().next() {
                effort = effort.saturating_add(s.groups.len().saturating_mul(1 + first.pel.len()));
            }
            effort
        }
    }
}

/// Frees a deleted entry as Redis's `dbGenericDelete` does: in the
/// background (counted) when the deletion is lazy for `why` and the value
/// is large ([`free_effort`] above the threshold), else at once.
#[inline]
pub fn free_entry(e: Entry, why: Reason) {
    if lazy(why) {
        free_value_async(e.value);
    }
}

/// [`free_entry`] of an entry that may be absent (the value an insert
/// replaced, or a removal that found nothing).
#[inline]
pub fn free_old(e: Option<Entry>, why: Reason) {
    if let Some(e) = e {
        free_entry(e, why);
    }
}

/// Frees `v` as Redis's `freeObjAsync`: in the background when its
/// [`free_effort`] is above [`LAZYFREE_THRESHOLD`] (counting one pending
/// object until the thread has dropped it), else at once.
pub fn free_value_async(v: Value) {
    if free_effort(&v) <= LAZYFREE_THRESHOLD {
        return;
    }
    submit(1, Box::new(move || drop(v)));
}

/// Frees whole databases in the background (Redis's `emptyDbAsync`):
/// `keys` objects pending until the thread has dropped `dbs`, whatever
/// their number (an empty database is queued too, counting 0).
pub fn free_databases<T: Send + 'static>(dbs: T, keys: usize) {
    submit(keys, Box::new(move || drop(dbs)));
}

/// Frees `what`, which holds `objects` objects (cached scripts, library
/// functions, tracked keys), in the background when there are more than
/// [`LAZYFREE_THRESHOLD`] of them, else at once (Redis's
/// `freeLuaScriptsAsync` / `freeFunctionsAsync`).
pub fn free_many<T: Send + 'static>(what: T, objects: usize) {
    if objects <= LAZYFREE_THRESHOLD {
        return;
    }
    submit(objects, Box::new(move || drop(what)));
}

/// Nodes of the radix tree (Redis's rax) that would hold `keys`, which
/// must be sorted and distinct: the compressed trie counted as rax counts
/// nodes (the root; a run of single-child positions that no key ends
/// inside is one compressed node; a branching position is one node and
/// each of its children another; a key ending where nothing follows is a
/// leaf node). Redis compares this with [`LAZYFREE_THRESHOLD`] to decide
/// whether the client tracking table is freed in the background.
pub fn rax_node_count(keys: &[&[u8]]) -> usize {
    // `keys` share their first `depth` bytes; counts the node at `depth`
    // and everything below it.
    fn node(keys: &[&[u8]], depth: usize) -> usize {
        // A key ending here is this node's key flag, not a node.
        let rest = match keys.first() {
            Some(k) if k.len() == depth => &keys[1..],
            _ => keys,
        };
        if rest.is_empty() {
            return 1;
        }
        let (a, b) = (rest[0], rest[rest.len() - 1]);
        if a[depth] == b[depth] {
            // One child: a compressed run up to where the keys branch or
            // where one of them ends.
            let mut end = depth + 1;
            while end < a.len() && end < b.len() && a[end] == b[end] {
                if rest.iter().any(|k| k.len() == end) {
                    break;
                }
                end += 1;
            }
            return 1 + node(rest, end);
        }
        let mut n = 1;
        let mut i = 0;
        while i < rest.len() {
            let c = rest[i][depth];
            let mut j = i + 1;
            while j < rest.len() && rest[j][depth] == c {
                j += 1;
            }
            n += node(&rest[i..j], depth + 1);
            i = j;
        }
        n
    }
    node(keys, 0)
}

/// Counts `n` pending objects and queues `job`; the thread drops it, then
/// counts them freed and no longer pending (freed first, so that a reader
/// who sees nothing pending sees the freed count complete). Without a
/// thread (it could not be started) the job runs here.
fn submit(n: usize, job: Job) {
    PENDING.fetch_add(n, Ordering::AcqRel);
    let job: Job = Box::new(move || {
        job();
        FREED.fetch_add(n, Ordering::AcqRel);
        PENDING.fetch_sub(n, Ordering::AcqRel);
    });
    let q = QUEUE.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        let started = std::thread::Builder::new()
            .name("ferrokv-lazyfree".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job();
                }
            })
            .is_ok();
        started.then_some(tx)
    });
    let rejected = match q {
        Some(tx) => tx.send(job).err().map(|e| e.0),
        None => Some(job),
    };
    if let Some(job) = rejected {
        job();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::set::SetValue;

    #[test]
    fn effort_follows_redis() {
        assert_eq!(
            free_effort(&Value::Str(crate::db::StrValue::from_bytes(b"x"))),
            1
        );
        let mut s = SetValue::for_member(b"a");
        for i in 0..100 {
            s.add(format!("m{i}").as_bytes(), 512);
        }
        assert_eq!(free_effort(&Value::Set(Box::new(s))), 100);
    }

    #[test]
    fn rax_nodes_as_redis_builds_them() {
        // Empty rax: the root alone.
        assert_eq!(rax_node_count(&[]), 1);
        // "abc": root compressed "abc" -> leaf.
        assert_eq!(rax_node_count(&[b"abc"]), 2);
        // "a" and "abc": root "a" -> key node compressed "bc" -> leaf.
        assert_eq!(rax_node_count(&[b"a", b"abc"]), 3);
        // "ab", "ac": root "a" -> branch [b, c] -> two leaves.
        assert_eq!(rax_node_count(&[b"ab", b"ac"]), 4);
    }
}
