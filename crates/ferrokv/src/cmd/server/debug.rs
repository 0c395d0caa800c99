//! DEBUG (Redis 7.0 debug.c), the subset ferrokv has: OBJECT, RELOAD,
//! SLEEP, SET-ACTIVE-EXPIRE and HELP, refused unless
//! `enable-debug-command` allows the caller.

use super::{lru_clock, protected_allowed, reply_help, ADMIN_CFG};
use crate::cmd::{behaviour, cmd, Command, Ctx};
use crate::resp::Args;
use std::sync::atomic::Ordering;

/// The DEBUG family's table entry.
pub static COMMANDS: &[Command] = &[cmd("debug", -2, ADMIN_CFG, (0, 0, 0), 0, debug)
    .behaves(behaviour::STOPS_THE_WORLD)
    .doc(
        "server",
        "1.0.0",
        "A container for debugging commands",
        "Depends on subcommand.",
    )];

/// True when DEBUG may run for this client under `enable-debug-command`
/// (`no`, `yes`, or `local`: loopback and unix-socket clients only).
fn debug_allowed(ctx: &Ctx<'_>) -> bool {
    protected_allowed(ctx, "enable-debug-command")
}

/// DEBUG OBJECT | SLEEP | SET-ACTIVE-EXPIRE | HELP (the subset ferrokv has).
/// Refused unless `enable-debug-command` allows it, as Redis 7.0.
fn debug(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !debug_allowed(ctx) {
        ctx.error("ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.");
        return;
    }
    let sub = args.get(1);
    let n = args.len();
    if sub.eq_ignore_ascii_case(b"help") && n == 2 {
        reply_help(
            ctx,
            "DEBUG",
            &[
                "CHANGE-REPL-ID",
                "    Change the replication IDs of the instance.",
                "    Dangerous: should be used only for testing the replication subsystem.",
                "DIGEST",
                "    Output a hex signature representing the current DB content.",
                "DIGEST-VALUE <key> [<key> ...]",
                "    Output a hex signature of the values of all the specified keys.",
                "OBJECT <key>",
                "    Show low level info about `key` and associated value.",
                "POPULATE <count> [<prefix>] [<size>]",
                "    Create <count> string keys named key:<num>. If <prefix> is specified then",
                "    it is used instead of the 'key' prefix. These are not propagated to",
                "    replicas. Cluster slots are not respected so keys not belonging to the",
                "    current node can be created in cluster mode.",
                "RELOAD [option ...]",
                "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
                "    * MERGE: conflicting keys will be loaded from RDB.",
                "    * NOFLUSH: the existing database will not be removed before load, but",
                "      conflicting keys will generate an exception and kill the server.",
                "    * NOSAVE: the database will be loaded from an existing RDB file.",
                "    Examples:",
                "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
                "      the database.",
                "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
                "      existing RDB file.",
                "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
                "      file to the database.",
                "SET-ACTIVE-EXPIRE <0|1>",
                "    Setting it to 0 disables expiring keys in background when they are not",
                "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
                "    default.",
                "SLEEP <seconds>",
                "    Stop the server for <seconds>. Decimals allowed.",
            ],
        );
    } else if sub.eq_ignore_ascii_case(b"populate") && (3..=5).contains(&n) {
        debug_populate(ctx, args);
    } else if sub.eq_ignore_ascii_case(b"change-repl-id") && n == 2 {
        // A new history: partial resynchronisations are refused after it.
        ctx.server.repl.new_history(None);
        tracing::info!("Changing replication IDs after receiving DEBUG change-repl-id");
        ctx.out.ok();
    } else if sub.eq_ignore_ascii_case(b"digest") && n == 2 {
        let d = super::digest::dataset_digest(&ctx.server.keyspace);
        ctx.out.simple(&super::digest::hex(&d));
    } else if sub.eq_ignore_ascii_case(b"digest-value") {
        ctx.out.array(n - 2);
        for i in 2..n {
            let d = super::digest::key_digest(ctx.db(), args.get(i));
            ctx.out.simple(&super::digest::hex(&d));
        }
    } else if sub.eq_ignore_ascii_case(b"object") && n == 3 {
        debug_object(ctx, args.get(2));
    } else if sub.eq_ignore_ascii_case(b"reload") {
        debug_reload(ctx, args);
    } else if sub.eq_ignore_ascii_case(b"sleep") && n == 3 {
        let secs = crate::util::parse_f64(args.get(2))
            .filter(|v| v.is_finite() && *v > 0.0)
            .unwrap_or(0.0);
        sleep_blocking(std::time::Duration::from_secs_f64(secs.min(1e9)));
        ctx.out.ok();
    } else if sub.eq_ignore_ascii_case(b"set-active-expire") && n == 3 {
        let on = crate::util::parse_i64(args.get(2)).unwrap_or(0) != 0;
        ctx.server
            .keyspace
            .active_expire_enabled
            .store(on, Ordering::Relaxed);
        ctx.out.ok();
    } else {
        ctx.error_with(
            "ERR unknown subcommand or wrong number of arguments for '",
            sub,
            "'. Try DEBUG HELP.",
        );
    }
}

/// DEBUG POPULATE count [prefix] [size] (debug.c): string keys
/// `<prefix>:<n>` for n in 0..count, valued `value:<n>` (with `size`:
/// that many bytes, the text cut or padded with zero bytes); existing keys
/// are left alone. Not propagated, as in Redis. Errors: a count or size
/// that is not a positive integer ("value is out of range, must be
/// positive").
fn debug_populate(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let positive = |b: &[u8]| crate::util::parse_i64(b).filter(|v| *v >= 0);
    let Some(count) = positive(args.get(2)) else {
        return ctx.error("ERR value is out of range, must be positive");
    };
    let prefix = if args.len() >= 4 {
        args.get(3)
    } else {
        b"key".as_slice()
    };
    let size = if args.len() == 5 {
        match positive(args.get(4)) {
            Some(v) => Some(v as usize),
            None => return ctx.error("ERR value is out of range, must be positive"),
        }
    } else {
        None
    };
    let now = ctx.now;
    let db = ctx.server.keyspace.db(ctx.client.db);
    let mut key = Vec::with_capacity(prefix.len() + 21);
    let mut val = Vec::new();
    let mut num = itoa::Buffer::new();
    let mut dirty = 0u64;
    for i in 0..count as u64 {
        key.clear();
        key.extend_from_slice(prefix);
        key.push(b':');
        key.extend_from_slice(num.format(i).as_bytes());
        let h = crate::db::hash_key(&key);
        let mut shard = db.lock(h);
        if shard.contains(h, &key, now) {
            continue;
        }
        val.clear();
        val.extend_from_slice(b"value:");
        val.extend_from_slice(num.format(i).as_bytes());
        if let Some(n) = size {
            val.resize(n, 0);
        }
        let entry = crate::db::Entry::new(
            crate::db::Value::Str(crate::db::value::StrValue::from_bytes(&val)),
            ctx.server.keyspace.lru.initial(now),
        );
        shard.insert(h, &key, entry);
        dirty += 1;
    }
    ctx.dirty = Some(dirty);
    ctx.out.ok();
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE] (debug.c): save, empty, load
/// the RDB back, with every other command on every core held back for the
/// duration (the exclusive exec gate; inside EXEC it is held already), as
/// Redis's single thread does: a write arriving between the save and the
/// load would otherwise be lost, or be taken for a duplicate key of the
/// file and fail the load.
fn debug_reload(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let (mut merge, mut noflush, mut nosave) = (false, false, false);
    for i in 2..args.len() {
        let o = args.get(i);
        if o.eq_ignore_ascii_case(b"merge") {
            merge = true;
        } else if o.eq_ignore_ascii_case(b"noflush") {
            noflush = true;
        } else if o.eq_ignore_ascii_case(b"nosave") {
            nosave = true;
        } else {
            return ctx
                .error("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.");
        }
    }
    // Dispatched without the shared gate (cmd::execute), so this thread
    // may take the whole of it.
    let _world = (!crate::cmd::tx::in_exec()).then(|| ctx.server.tx.gate_exclusive());
    if !nosave {
        if let Err(e) = crate::persist::rdb::save_now(ctx.server) {
            tracing::warn!("DEBUG RELOAD: {e}");
            return ctx.error("ERR");
        }
    }
    match crate::persist::rdb::debug_reload(ctx.server, merge, noflush, true) {
        Ok(()) => ctx.out.ok(),
        Err(e) => {
            tracing::warn!("DEBUG RELOAD: {e}");
            ctx.error("ERR Error trying to load the RDB dump, check server logs.")
        }
    }
}

/// Sleeps this connection for `d`. Redis's DEBUG SLEEP stops the whole
/// server; ferrokv stops only the calling connection: on the multi-thread
/// runtime `block_in_place` hands this worker's other tasks to another
/// thread first, so other clients keep being served.
fn sleep_blocking(d: std::time::Duration) {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| std::thread::sleep(d))
        }
        _ => std::thread::sleep(d),
    }
}

/// Bytes of an RDB length prefix for `len` (rdbSaveLen).
fn rdb_len_bytes(len: u64) -> u64 {
    match len {
        0..=63 => 1,
        64..=16383 => 2,
        16384..=0xFFFF_FFFF => 5,
        _ => 9,
    }
}

/// RDB size of a string value without compression: integers that fit 32
/// bits use the compact integer encodings, anything else a length prefix.
fn rdb_string_len(v: &crate::db::value::StrValue) -> u64 {
    use crate::db::value::StrValue;
    let mut tmp = itoa::Buffer::new();
    if let StrValue::Int(i) = v {
        if i8::try_from(*i).is_ok() {
            return 2;
        }
        if i16::try_from(*i).is_ok() {
            return 3;
        }
        if i32::try_from(*i).is_ok() {
            return 5;
        }
    }
    let len = v.as_bytes(&mut tmp).len() as u64;
    rdb_len_bytes(len) + len
}

/// DEBUG OBJECT key: Redis's one-line summary. `serializedlength` is the
/// uncompressed RDB size (Redis LZF-compresses strings over 20 bytes, so
/// its number is smaller for compressible values).
fn debug_object(ctx: &mut Ctx<'_>, key: &[u8]) {
    let now = ctx.now;
    let (h, shard) = ctx.lock(key);
    let Some(e) = shard.peek(h, key, now) else {
        drop(shard);
        ctx.error(crate::cmd::err::NO_SUCH_KEY);
        return;
    };
    use crate::db::value::{StrValue, Value};
    // Shared integers (0..10000) have Redis's OBJ_SHARED_REFCOUNT.
    let (refcount, serialized): (u64, u64) = match &e.value {
        Value::Str(StrValue::Int(i)) if (0..10000).contains(i) => (2147483647, 2),
        Value::Str(sv) => (1, rdb_string_len(sv)),
        Value::Hash(hv) => (1, hv.serialized_len() as u64),
        Value::List(l) => (1, l.packed_bytes() as u64),
        #[allow(unreachable_patterns)]
        _ => (1, e.value.mem_usage() as u64),
    };
    // Redis's 24-bit LRU clock (seconds) of the last access.
    let idle = crate::db::lru::idle_secs(e.lru, now);
    let lru = lru_clock(now).wrapping_sub(idle) & ((1 << 24) - 1);
    let mut line = format!(
        "Value at:{:p} refcount:{} encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{}",
        e as *const _,
        refcount,
        e.value.encoding(),
        serialized,
        lru,
        idle
    );
    if let Value::List(l) = &e.value {
        // Redis 7.0's quicklist details (debug.c); node sizes are ours.
        let nodes = l.node_count();
        line.push_str(&format!(
            " ql_nodes:{} ql_avg_node:{:.2} ql_listpack_max:{} ql_compressed:0 ql_uncompressed_size:{}",
            nodes,
            l.len() as f64 / nodes.max(1) as f64,
            ctx.server.live.list_max_listpack_size.load(Ordering::Relaxed),
            l.packed_bytes()
        ));
    }
    drop(shard);
    ctx.out.simple(&line);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rdb_lengths() {
        use crate::db::value::StrValue;
        assert_eq!(rdb_string_len(&StrValue::Int(123)), 2);
        assert_eq!(rdb_string_len(&StrValue::Int(1000)), 3);
        assert_eq!(rdb_string_len(&StrValue::Int(100000)), 5);
        assert_eq!(rdb_string_len(&StrValue::from_bytes(b"hello")), 6);
        assert_eq!(rdb_len_bytes(64), 2);
    }
}
