//! DEBUG (Redis 7.0 debug.c, as redis-server 7.0.15 answers), refused
//! unless `enable-debug-command` allows the caller. Every subcommand of a
//! Redis 7.0 build without jemalloc is here, with its replies and errors;
//! where ferrokv lacks the machinery a subcommand acts on, it says so on
//! the function that implements it. Subcommands Redis 7.0 does not have
//! (JMAP, DICT-RESIZING, ZIPLIST, HTSTATS's FULL argument...) and MALLCTL /
//! MALLCTL-STR (jemalloc builds only) get the unknown-subcommand error, as
//! from such a build.

use super::{lru_clock, protected_allowed, reply_help, ADMIN_CFG};
use crate::cmd::{behaviour, cmd, Command, Ctx};
use crate::db::TableStats;
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

/// DEBUG HELP's lines: Redis 7.0's, in its order and wording, without
/// MALLCTL and MALLCTL-STR (listed by jemalloc builds only).
const HELP: &[&str] = &[
    "AOF-FLUSH-SLEEP <microsec>",
    "    Server will sleep before flushing the AOF, this is used for testing.",
    "ASSERT",
    "    Crash by assertion failed.",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "CONFIG-REWRITE-FORCE-ALL",
    "    Like CONFIG REWRITE but writes all configuration options, including",
    "    keywords not listed in original configuration file or default values.",
    "CRASH-AND-RECOVER [<milliseconds>]",
    "    Hard crash and restart after a <milliseconds> delay (default 0).",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "LEAK <string>",
    "    Create a memory leak of the input string.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "HTSTATS <dbid>",
    "    Return hash table statistics of the specified Redis database.",
    "HTSTATS-KEY <key>",
    "    Like HTSTATS but for the hash table stored at <key>'s value.",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory.",
    "REPLICATE <string>",
    "    Replicates the provided string to replicas, allowing data divergence.",
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "DROP-CLUSTER-PACKET-FILTER <packet-type>",
    "    Drop all packets that match the filtered type. Set to -1 allow all packets.",
    "OOM",
    "    Crash the server simulating an out-of-memory error.",
    "PANIC",
    "    Crash the server simulating a panic.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix. These are not propagated to",
    "    replicas. Cluster slots are not respected so keys not belonging to the",
    "    current node can be created in cluster mode.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
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
    "RESTART [<milliseconds>]",
    "    Graceful restart: save config, db, restart after a <milliseconds> delay (default 0).",
    "SDSLEN <key>",
    "    Show low level SDS string info representing `key` and value.",
    "SEGFAULT",
    "    Crash the server with sigsegv.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the stringmatchlen() function.",
    "STRUCTSIZE",
    "    Return the size of different Redis core C structures.",
    "LISTPACK <key>",
    "    Show low level info about the listpack encoding of <key>.",
    "QUICKLIST <key> [<0|1>]",
    "    Show low level info about the quicklist encoding of <key>.",
    "    The optional argument (0 by default) sets the level of detail",
    "CLIENT-EVICTION",
    "    Show low level client eviction pools info (maxmemory-clients).",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
    "    In case NEVER is provided the last observed peak will never be reset",
    "    In case RESET is provided the peak reset time will be restored to the default value",
    "REPLYBUFFER RESIZING <0|1>",
    "    Enable or disable the reply buffer resize cron job",
    "CLUSTERLINK KILL <to|from|all> <node-id>",
    "    Kills the link based on the direction to/from (both) with the provided node.",
];

/// True for the DEBUG forms that take the whole exec gate themselves
/// (RELOAD, LOADAOF): `cmd::execute` dispatches them without the shared
/// gate.
pub fn stops_the_world(args: &Args<'_>) -> bool {
    args.len() >= 2
        && (args.get(1).eq_ignore_ascii_case(b"reload")
            || args.get(1).eq_ignore_ascii_case(b"loadaof"))
}

/// C's `atoi`, which debug.c uses for its switches (SET-ACTIVE-EXPIRE,
/// PAUSE-CRON, ...): leading blanks, an optional sign, then as many digits
/// as there are; anything else reads as 0 ("on", "x" are 0; "1x" is 1);
/// beyond the range of a long it saturates, then keeps the low 32 bits, as
/// glibc's `(int)strtol` (so 9223372036854775808 is -1). Also MIGRATE's port, which migrate.c reads with atoi.
pub(crate) fn atoi(b: &[u8]) -> i64 {
    let mut i = 0;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let neg = i < b.len() && b[i] == b'-';
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let mut v: i64 = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        let d = (b[i] - b'0') as i64;
        // glibc's atoi is (int)strtol: strtol saturates at LONG_MIN/MAX.
        v = if neg {
            v.saturating_mul(10).saturating_sub(d)
        } else {
            v.saturating_mul(10).saturating_add(d)
        };
        i += 1;
    }
    // atoi returns an int: the low 32 bits.
    v as i32 as i64
}

/// Redis 7.0's `memtoull` (util.c): decimal digits (none reads as 0) and
/// an optional unit b, k, kb, m, mb, g, gb, case-insensitive (k = 1000,
/// kb = 1024); None for anything else, more than 127 digits or a number
/// past u64. The product wraps as C's does.
fn memtoull(b: &[u8]) -> Option<u64> {
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let unit = &b[digits..];
    let mul: u64 = if unit.is_empty() || unit.eq_ignore_ascii_case(b"b") {
        1
    } else if unit.eq_ignore_ascii_case(b"k") {
        1000
    } else if unit.eq_ignore_ascii_case(b"kb") {
        1024
    } else if unit.eq_ignore_ascii_case(b"m") {
        1000 * 1000
    } else if unit.eq_ignore_ascii_case(b"mb") {
        1024 * 1024
    } else if unit.eq_ignore_ascii_case(b"g") {
        1000 * 1000 * 1000
    } else if unit.eq_ignore_ascii_case(b"gb") {
        1024 * 1024 * 1024
    } else {
        return None;
    };
    if digits > 127 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in &b[..digits] {
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(v.wrapping_mul(mul))
}

/// DEBUG <subcommand> ...: dispatches as debug.c's chain of `strcasecmp`
/// tests, with the same argument counts (a subcommand given the wrong
/// count falls through to "ERR unknown subcommand or wrong number of
/// arguments for '<sub>'. Try DEBUG HELP."). Refused unless
/// `enable-debug-command` allows it, as Redis 7.0.
fn debug(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !debug_allowed(ctx) {
        ctx.error("ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.");
        return;
    }
    let sub = args.get(1);
    let n = args.len();
    let is = |name: &str| sub.eq_ignore_ascii_case(name.as_bytes());
    if is("help") && n == 2 {
        reply_help(ctx, "DEBUG", HELP);
    } else if is("segfault") {
        crash_segfault();
    } else if is("panic") {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        crash_panic(&format!("DEBUG PANIC called at Unix time {now}"), line!());
    } else if is("restart") || is("crash-and-recover") {
        debug_restart(ctx, args, is("restart"));
    } else if is("oom") {
        crash_panic(
            &format!(
                "Redis aborting for OUT OF MEMORY. Allocating {} bytes!",
                u64::MAX
            ),
            line!(),
        );
    } else if is("assert") {
        crash_assert(ctx, args, line!());
    } else if is("log") && n == 3 {
        // serverLog(LL_WARNING, "DEBUG LOG: %s"): the text up to a NUL.
        let msg = crate::cmd::c_str(args.get(2), usize::MAX);
        tracing::warn!("DEBUG LOG: {}", String::from_utf8_lossy(msg));
        ctx.out.ok();
    } else if is("leak") && n == 3 {
        // Redis leaks a copy of the string on purpose (for the leak
        // checkers of its test suite); ferrokv has none to feed.
        ctx.out.ok();
    } else if is("reload") {
        debug_reload(ctx, args);
    } else if is("loadaof") {
        debug_loadaof(ctx);
    } else if is("drop-cluster-packet-filter") && n == 3 {
        match crate::util::parse_i64(args.get(2)) {
            Some(v) => {
                ctx.server
                    .cluster
                    .drop_packet_filter
                    .store(v, Ordering::Relaxed);
                ctx.out.ok();
            }
            None => ctx.not_int(),
        }
    } else if is("object") && n == 3 {
        debug_object(ctx, args.get(2));
    } else if is("sdslen") && n == 3 {
        debug_sdslen(ctx, args.get(2));
    } else if is("listpack") && n == 3 {
        debug_listpack(ctx, args.get(2));
    } else if is("quicklist") && (n == 3 || n == 4) {
        let full = n == 4 && atoi(args.get(3)) != 0;
        debug_quicklist(ctx, args.get(2), full);
    } else if is("populate") && (3..=5).contains(&n) {
        debug_populate(ctx, args);
    } else if is("digest") && n == 2 {
        let d = super::digest::dataset_digest(&ctx.server.keyspace);
        ctx.out.simple(&super::digest::hex(&d));
    } else if is("digest-value") {
        ctx.out.array(n - 2);
        for i in 2..n {
            let d = super::digest::key_digest(ctx.db(), args.get(i));
            ctx.out.simple(&super::digest::hex(&d));
        }
    } else if is("protocol") && n == 3 {
        debug_protocol(ctx, args.get(2));
    } else if is("sleep") && n == 3 {
        let secs = crate::util::parse_f64(args.get(2))
            .filter(|v| v.is_finite() && *v > 0.0)
            .unwrap_or(0.0);
        sleep_blocking(std::time::Duration::from_secs_f64(secs.min(1e9)));
        ctx.out.ok();
    } else if is("set-active-expire") && n == 3 {
        ctx.server
            .keyspace
            .active_expire_enabled
            .store(atoi(args.get(2)) != 0, Ordering::Relaxed);
        ctx.out.ok();
    } else if is("quicklist-packed-threshold") && n == 3 {
        match memtoull(args.get(2)) {
            Some(sz) if crate::db::list::set_packed_threshold(sz) => ctx.out.ok(),
            _ => {
                ctx.error("ERR argument must be a memory value bigger than 1 and smaller than 4gb")
            }
        }
    } else if is("set-skip-checksum-validation") && n == 3 {
        ctx.server
            .rdb
            .skip_checksum_validation
            .store(atoi(args.get(2)) != 0, Ordering::Relaxed);
        ctx.out.ok();
    } else if is("aof-flush-sleep") && n == 3 {
        // An int in Redis; a negative one is no sleep.
        let us = atoi(args.get(2)).max(0) as u64;
        ctx.server.aof.flush_sleep_us.store(us, Ordering::Relaxed);
        ctx.out.ok();
    } else if is("replicate") && n >= 3 {
        debug_replicate(ctx, args);
    } else if is("error") && n == 3 {
        // The text as given, CR/LF turned to spaces, without "ERR " and not
        // counted in errorstats (debug.c builds the reply with addReplySds).
        ctx.out.error_bytes(args.get(2));
    } else if is("structsize") && n == 2 {
        debug_structsize(ctx);
    } else if is("htstats") && n == 3 {
        debug_htstats(ctx, args.get(2));
    } else if is("htstats-key") && n == 3 {
        debug_htstats_key(ctx, args.get(2));
    } else if is("change-repl-id") && n == 2 {
        tracing::info!("Changing replication IDs after receiving DEBUG change-repl-id");
        // A new history: partial resynchronisations are refused after it.
        ctx.server.repl.new_history(None);
        ctx.out.ok();
    } else if is("stringmatch-test") && n == 2 {
        stringmatch_fuzz_test();
        ctx.out
            .simple("Apparently Redis did not crash: test passed");
    } else if is("set-disable-deny-scripts") && n == 3 {
        ctx.server
            .scripts
            .disable_deny_script
            .store(atoi(args.get(2)) != 0, Ordering::Relaxed);
        ctx.out.ok();
    } else if is("config-rewrite-force-all") && n == 2 {
        debug_config_rewrite_force_all(ctx);
    } else if is("client-eviction") && n == 2 {
        debug_client_eviction(ctx);
    } else if is("pause-cron") && n == 3 {
        ctx.server
            .debug
            .pause_cron
            .store(atoi(args.get(2)) != 0, Ordering::Relaxed);
        ctx.out.ok();
    } else if is("replybuffer") && n == 4 {
        debug_replybuffer(ctx, args);
    } else if is("clusterlink") && n == 5 && args.get(2).eq_ignore_ascii_case(b"kill") {
        debug_clusterlink_kill(ctx, args.get(3), args.get(4));
    } else {
        ctx.sub_syntax(args, "DEBUG");
    }
}

/// DEBUG PROTOCOL <type> (debug.c): one test value of each RESP type,
/// encoded for the connection's protocol as Redis's `addReply*` do
/// (RESP2: a double and a big number are bulk strings, a set and a map
/// arrays, booleans integers, null `$-1`; an attribute is left out and
/// `push` is refused with "ERR RESP2 is not supported by this command").
/// An unknown type: "ERR Wrong protocol type name. Please use one of the
/// following: string|integer|...".
fn debug_protocol(ctx: &mut Ctx<'_>, name: &[u8]) {
    let is = |t: &str| name.eq_ignore_ascii_case(t.as_bytes());
    let out = &mut *ctx.out;
    if is("string") {
        out.bulk(b"Hello World");
    } else if is("integer") {
        out.int(12345);
    } else if is("double") {
        // Redis's test value, not an approximation of pi.
        #[allow(clippy::approx_constant)]
        out.double(3.141);
    } else if is("bignum") {
        out.bignum(b"1234567999999999999999999999999999999");
    } else if is("null") {
        out.null();
    } else if is("array") {
        out.array(3);
        (0..3).for_each(|j| out.int(j));
    } else if is("set") {
        out.set(3);
        (0..3).for_each(|j| out.int(j));
    } else if is("map") {
        out.map(3);
        for j in 0..3 {
            out.int(j);
            out.boolean(j == 1);
        }
    } else if is("attrib") {
        if out.resp3 {
            out.attribute(1);
            out.bulk(b"key-popularity");
            out.array(2);
            out.bulk(b"key:123");
            out.int(90);
        }
        // An attribute is not a reply: a real one follows it.
        out.bulk(b"Some real reply following the attribute");
    } else if is("push") {
        if !out.resp3 {
            return ctx.error("ERR RESP2 is not supported by this command");
        }
        out.push(2);
        out.bulk(b"server-cpu-usage");
        out.int(42);
        // A push is not the command's reply: a real one follows it.
        out.bulk(b"Some real reply following the push reply");
    } else if is("true") {
        out.boolean(true);
    } else if is("false") {
        out.boolean(false);
    } else if is("verbatim") {
        out.verbatim_as(b"txt", b"This is a verbatim\nstring");
    } else {
        ctx.error("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false");
    }
}

/// Chain lengths at or past this are counted but not listed (dict.c's
/// DICT_STATS_VECTLEN - 1).
const STATS_VECTLEN: usize = 50;

/// dict.c `_dictGetStatsHt` for table `idx` (0: "main hash table", 1:
/// "rehashing target"; ferrokv rehashes in one step, so only 0 is shown):
/// size, elements, non-empty buckets, longest chain, average chain length
/// over the non-empty buckets (counted and computed, equal here), and the
/// buckets of each chain length with their share of the table, as
/// Redis's C floats print them (`%.02f`).
fn table_stats_text(out: &mut String, idx: usize, t: &TableStats) {
    use std::fmt::Write as _;
    let name = if idx == 0 {
        "main hash table"
    } else {
        "rehashing target"
    };
    let _ = writeln!(out, "Hash table {idx} stats ({name}):");
    if t.used == 0 {
        out.push_str("No stats available for empty dictionaries\n");
        return;
    }
    let slots: usize = t.chains.iter().skip(1).sum();
    let max = t.chains.iter().rposition(|&c| c > 0).unwrap_or(0);
    let avg = t.used as f32 / slots as f32;
    let _ = write!(
        out,
        " table size: {}\n number of elements: {}\n different slots: {}\n max chain length: {}\n avg chain length (counted): {:.2}\n avg chain length (computed): {:.2}\n Chain length distribution:\n",
        t.size, t.used, slots, max, avg as f64, avg as f64
    );
    for (len, &count) in t.chains.iter().enumerate().take(STATS_VECTLEN - 1) {
        if count == 0 {
            continue;
        }
        let share = (count as f32 / t.size as f32) * 100.0;
        let _ = writeln!(out, "   {len}: {count} ({:.2}%)", share as f64);
    }
}

/// Keeps `s` to dict.c's 4096-byte stats buffer (4095 bytes and its NUL).
fn stats_buffer(mut s: String) -> String {
    if s.len() > 4095 {
        let mut cut = 4095;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

/// DEBUG HTSTATS <dbid> (debug.c): "[Dictionary HT]" then the shape of
/// the database's key table, "[Expires HT]" then that of its TTL index,
/// as a verbatim string. Computed from ferrokv's own tables: a database is
/// split into shards, each with its chained key table and its
/// open-addressing TTL index, and the figures add all shards up
/// ([`crate::db::Db::table_stats`]); no rehashing target is ever shown.
/// Errors: "ERR value is not an integer or out of range", "ERR Out of
/// range database".
fn debug_htstats(ctx: &mut Ctx<'_>, dbid: &[u8]) {
    let Some(id) = crate::util::parse_i64(dbid) else {
        return ctx.not_int();
    };
    if id < 0 || id as usize >= ctx.server.keyspace.db_count() {
        return ctx.error("ERR Out of range database");
    }
    let (keys, ttls) = ctx.server.keyspace.db(id as usize).table_stats();
    let mut main = String::new();
    table_stats_text(&mut main, 0, &keys);
    let mut exp = String::new();
    table_stats_text(&mut exp, 0, &ttls);
    let text = format!(
        "[Dictionary HT]\n{}[Expires HT]\n{}",
        stats_buffer(main),
        stats_buffer(exp)
    );
    ctx.out.verbatim(text.as_bytes());
}

/// DEBUG HTSTATS-KEY <key> (debug.c): the shape of the hash table of the
/// value at `key` as a verbatim string: a `hashtable` set or hash (chained
/// tables), or a `skiplist` sorted set's member index (open addressing,
/// see [`crate::db::ZSetValue::table_stats`]). Errors: "ERR no such key";
/// "ERR The value stored at the specified key is not represented using an
/// hash table" for every other encoding.
fn debug_htstats_key(ctx: &mut Ctx<'_>, key: &[u8]) {
    use crate::db::value::Value;
    let now = ctx.now;
    let (h, shard) = ctx.lock(key);
    let Some(e) = shard.peek(h, key, now) else {
        drop(shard);
        return ctx.error(crate::cmd::err::NO_SUCH_KEY);
    };
    let stats = match &e.value {
        Value::Set(s) => match &**s {
            crate::db::SetValue::Table(t) => Some(t.table_stats()),
            _ => None,
        },
        Value::Hash(crate::db::HashValue::Table(t)) => Some(t.table_stats()),
        Value::ZSet(z) => z.table_stats(),
        _ => None,
    };
    drop(shard);
    match stats {
        Some(t) => {
            let mut text = String::new();
            table_stats_text(&mut text, 0, &t);
            ctx.out.verbatim(stats_buffer(text).as_bytes());
        }
        None => ctx.error(
            "ERR The value stored at the specified key is not represented using an hash table",
        ),
    }
}

/// DEBUG SDSLEN <key> (debug.c): "key_sds_len:.., key_sds_avail:..,
/// key_zmalloc: .., val_sds_len:.., val_sds_avail:.., val_zmalloc: .."
/// for a string value not stored as an integer. ferrokv has no SDS
/// strings: lengths are the bytes, `avail` the spare capacity of a string
/// grown in place (APPEND, SETRANGE), `zmalloc` the heap bytes (0 for a
/// key or value kept inline). Errors: "ERR no such key", "ERR Not an sds
/// encoded string." (other types, `int` encoding). Expired keys are still
/// found (`dictFind`).
fn debug_sdslen(ctx: &mut Ctx<'_>, key: &[u8]) {
    use crate::db::value::{StrValue, Value};
    let (h, shard) = ctx.lock(key);
    let Some(e) = shard.peek_raw(h, key) else {
        drop(shard);
        return ctx.error(crate::cmd::err::NO_SUCH_KEY);
    };
    let sv = match &e.value {
        Value::Str(StrValue::Item(i)) => Some(&i.data),
        Value::Str(StrValue::Int(_)) => None,
        Value::Str(sv) => Some(sv),
        _ => None,
    };
    let line = sv.map(|sv| {
        let mut tmp = itoa::Buffer::new();
        let len = sv.as_bytes(&mut tmp).len();
        let avail = match sv {
            StrValue::Raw(v) => v.capacity() - v.len(),
            _ => 0,
        };
        let key_heap = if key.len() > crate::db::smallbytes::INLINE_CAP {
            key.len()
        } else {
            0
        };
        format!(
            "key_sds_len:{}, key_sds_avail:0, key_zmalloc: {}, val_sds_len:{}, val_sds_avail:{}, val_zmalloc: {}",
            key.len(),
            key_heap,
            len,
            avail,
            sv.heap_size()
        )
    });
    drop(shard);
    match line {
        Some(l) => ctx.out.simple(&l),
        None => ctx.error("ERR Not an sds encoded string."),
    }
}

/// Writes `text` to standard output, where Redis's lpRepr and
/// quicklistRepr print.
fn print_stdout(text: &str) {
    use std::io::Write as _;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes());
    let _ = o.flush();
}

/// One element as lpRepr shows it: `[str]bytes` or `[int]n`.
fn repr_elem(out: &mut String, b: &[u8]) {
    match crate::util::parse_i64(b) {
        Some(n) => out.push_str(&format!("[int]{n}")),
        None => {
            out.push_str("[str]");
            out.push_str(&String::from_utf8_lossy(b));
        }
    }
}

/// DEBUG LISTPACK <key> (debug.c): prints the entries of a `listpack`
/// value (a small hash or sorted set) on standard output and replies
/// "+Listpack structure printed on stdout". ferrokv's packed encodings
/// are its own, so the printout lists the total heap bytes, the entry
/// count (two per field or member, as in a listpack) and each entry, not
/// Redis's byte-level dump. Errors: "ERR no such key", "ERR Not a listpack
/// encoded object.".
fn debug_listpack(ctx: &mut Ctx<'_>, key: &[u8]) {
    use crate::db::value::Value;
    let now = ctx.now;
    let (h, shard) = ctx.lock(key);
    let Some(e) = shard.peek(h, key, now) else {
        drop(shard);
        return ctx.error(crate::cmd::err::NO_SUCH_KEY);
    };
    if e.value.encoding() != "listpack" {
        drop(shard);
        return ctx.error("ERR Not a listpack encoded object.");
    }
    let mut entries: Vec<Vec<u8>> = Vec::new();
    match &e.value {
        Value::Hash(hv) => {
            for (f, v) in hv.iter() {
                entries.push(f.to_vec());
                entries.push(v.to_vec());
            }
        }
        Value::ZSet(z) if !z.is_empty() => {
            z.range(0, z.len() - 1, false, |m, s| {
                entries.push(m.to_vec());
                let mut b = Vec::new();
                crate::util::fmt_double_17g(s, &mut b);
                entries.push(b);
            });
        }
        _ => {}
    }
    let bytes = e.value.mem_usage();
    drop(shard);
    let mut text = format!(
        "{{total bytes {bytes}}} {{num entries {}}}\n",
        entries.len()
    );
    for (i, en) in entries.iter().enumerate() {
        text.push_str(&format!("{{\n\tindex: {i:3},\n\t"));
        repr_elem(&mut text, en);
        text.push_str("\n}\n");
    }
    text.push_str("{end}\n\n");
    print_stdout(&text);
    ctx.out.simple("Listpack structure printed on stdout");
}

/// DEBUG QUICKLIST <key> [<0|1>] (debug.c): prints the list's layout on
/// standard output as quicklistRepr (count, nodes, fill, then each node's
/// entry count and bytes; with a non-zero second argument, C `atoi`, each
/// node's entries too) and replies "+Quicklist structure printed on
/// stdout". Nodes are ferrokv's nodes: container PLAIN or PACKED, encoding
/// LZF or RAW, size the uncompressed bytes. Errors: "ERR no such key",
/// "ERR Not a quicklist encoded object.".
fn debug_quicklist(ctx: &mut Ctx<'_>, key: &[u8], full: bool) {
    use crate::db::value::Value;
    let now = ctx.now;
    let (h, shard) = ctx.lock(key);
    let Some(e) = shard.peek(h, key, now) else {
        drop(shard);
        return ctx.error(crate::cmd::err::NO_SUCH_KEY);
    };
    let Value::List(l) = &e.value else {
        drop(shard);
        return ctx.error("ERR Not a quicklist encoded object.");
    };
    let fill = ctx
        .server
        .live
        .list_max_listpack_size
        .load(Ordering::Relaxed);
    let mut text = format!(
        "{{count : {}}}\n{{len : {}}}\n{{fill : {fill}}}\n{{compress : {}}}\n{{bookmark_count : 0}}\n",
        l.len(),
        l.node_count(),
        l.compress_depth()
    );
    let mut elems = l.iter();
    for (i, s) in l.node_shapes().enumerate() {
        let count = s.count;
        text.push_str(&format!(
            "{{quicklist node({i})\n{{container : {}, encoding: {}, size: {}, count: {count}, recompress: 0, attempted_compress: {}}}\n",
            if s.plain { "PLAIN" } else { "PACKED" },
            if s.compressed { "LZF" } else { "RAW" },
            s.raw_bytes,
            u8::from(s.compressed)
        ));
        if full {
            text.push_str("{ listpack:\n");
            for j in 0..count {
                let Some(el) = elems.next() else { break };
                text.push_str(&format!("{{\n\tindex: {j:3},\n\t"));
                el.with_bytes(|b| repr_elem(&mut text, b));
                text.push_str("\n}\n");
            }
            text.push_str("}\n");
        }
        text.push_str("}\n");
    }
    drop(shard);
    print_stdout(&text);
    ctx.out.simple("Quicklist structure printed on stdout");
}

/// DEBUG STRUCTSIZE (debug.c): a bulk string "bits:64 name:bytes ..."
/// with a trailing space. Redis lists its C structures (robj, dictentry,
/// sdshdr*); ferrokv lists its own: a key's table entry (`entry`), a
/// value (`value`), a string value (`strvalue`), an inline key
/// (`smallbytes`) and a key table node (`dictnode`).
fn debug_structsize(ctx: &mut Ctx<'_>) {
    use std::mem::size_of;
    let sizes = format!(
        "bits:{} entry:{} value:{} strvalue:{} smallbytes:{} dictnode:{} ",
        usize::BITS,
        size_of::<crate::db::Entry>(),
        size_of::<crate::db::Value>(),
        size_of::<crate::db::StrValue>(),
        size_of::<crate::db::smallbytes::SmallBytes>(),
        crate::db::Dict::<crate::db::Entry>::NODE_BYTES,
    );
    ctx.out.bulk(sizes.as_bytes());
}

/// DEBUG STRINGMATCH-TEST (debug.c `stringmatchlen_fuzz_test`): matches
/// ten million random patterns against random strings (each up to 31
/// bytes of 0..127) with the glob matcher KEYS, SCAN and PSUBSCRIBE use,
/// to show it neither crashes nor hangs; replies "+Apparently Redis did
/// not crash: test passed". The other connections keep being served.
fn stringmatch_fuzz_test() {
    let run = || {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64);
        let mut rnd = move || {
            // xorshift64*
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32
        };
        let (mut s, mut p) = ([0u8; 32], [0u8; 32]);
        let mut matches = 0u64;
        for _ in 0..10_000_000u32 {
            let sl = (rnd() % 32) as usize;
            let pl = (rnd() % 32) as usize;
            s[..sl].iter_mut().for_each(|c| *c = (rnd() % 128) as u8);
            p[..pl].iter_mut().for_each(|c| *c = (rnd() % 128) as u8);
            matches += crate::util::glob_match(&p[..pl], &s[..sl], false) as u64;
        }
        tracing::debug!("DEBUG STRINGMATCH-TEST total matches: {matches}");
    };
    in_place(run);
}

/// DEBUG CONFIG-REWRITE-FORCE-ALL (debug.c): CONFIG REWRITE writing every
/// directive, default values too. Errors as Redis's `"CONFIG-REWRITE-
/// FORCE-ALL failed: %s", strerror(errno)`: without a config file Redis
/// fails opening a NULL path ("Bad address"); otherwise the system's
/// error text.
fn debug_config_rewrite_force_all(ctx: &mut Ctx<'_>) {
    use super::config::{rewrite_config, RewriteError};
    match rewrite_config(ctx.server, true) {
        Ok(()) => ctx.out.ok(),
        Err(RewriteError::NoFile) => ctx.error("ERR CONFIG-REWRITE-FORCE-ALL failed: Bad address"),
        Err(RewriteError::Io(e)) => ctx.error(&format!(
            "ERR CONFIG-REWRITE-FORCE-ALL failed: {}",
            strerror(&e)
        )),
    }
}

/// An I/O error as C's `strerror` words it (Rust's text without its
/// " (os error N)" suffix).
fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// DEBUG REPLYBUFFER PEAK-RESET-TIME <never|reset|ms> | RESIZING <0|1>
/// (debug.c): stores the values ([`crate::server::DebugState`]; ferrokv
/// has no reply-buffer resize job they would steer) and replies OK.
/// Errors: "ERR value is not an integer or out of range" for a time that
/// is not one; the unknown-subcommand error for another option.
fn debug_replybuffer(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let d = &ctx.server.debug;
    let opt = args.get(2);
    let v = args.get(3);
    if opt.eq_ignore_ascii_case(b"peak-reset-time") {
        let t = if v.eq_ignore_ascii_case(b"never") {
            -1
        } else if v.eq_ignore_ascii_case(b"reset") {
            crate::server::REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME
        } else {
            match crate::util::parse_i64(v) {
                Some(t) => t,
                None => return ctx.not_int(),
            }
        };
        d.reply_buffer_peak_reset_time.store(t, Ordering::Relaxed);
    } else if opt.eq_ignore_ascii_case(b"resizing") {
        d.reply_buffer_resizing
            .store(atoi(v) != 0, Ordering::Relaxed);
    } else {
        return ctx.sub_syntax(args, "DEBUG");
    }
    ctx.out.ok();
}

/// DEBUG CLUSTERLINK KILL <to|from|all> <node-id> (debug.c): drops our
/// outbound link to the node (`to`), its inbound link (`from`) or both;
/// the cluster cron reconnects. Errors: "ERR Debug option only available
/// for cluster mode enabled setup!", "ERR Unknown node <id>", "ERR Unknown
/// direction <dir>" (Redis 7.0 follows that error with a stray +OK, a
/// second reply to one command; ferrokv sends the error alone).
fn debug_clusterlink_kill(ctx: &mut Ctx<'_>, dir: &[u8], node: &[u8]) {
    if !ctx.server.cluster.enabled {
        return ctx.error("ERR Debug option only available for cluster mode enabled setup!");
    }
    let name = String::from_utf8_lossy(node);
    let mut st = ctx.server.cluster.state.lock();
    let Some(n) = st.lookup(&name) else {
        drop(st);
        return ctx.error_with("ERR Unknown node ", node, "");
    };
    let nd = st.node_mut(n);
    if dir.eq_ignore_ascii_case(b"from") {
        nd.inbound = None;
    } else if dir.eq_ignore_ascii_case(b"to") {
        nd.link = None;
    } else if dir.eq_ignore_ascii_case(b"all") {
        nd.link = None;
        nd.inbound = None;
    } else {
        drop(st);
        return ctx.error_with("ERR Unknown direction ", dir, "");
    }
    drop(st);
    ctx.out.ok();
}

/// DEBUG REPLICATE <arg> ... (debug.c, `replicationFeedSlaves` with
/// database -1): appends the arguments as a command to the replication
/// stream (backlog and replicas) only, not to the AOF, so replicas may
/// diverge. As Redis, the stream first gets "SELECT -1" unless its last
/// SELECT was -1, and the next command propagated selects its database
/// again. Nothing is sent when there is no backlog or this server is a
/// replica. Replies OK.
fn debug_replicate(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let b = &ctx.server.repl.backlog;
    if !b.replica_mode() {
        let mut bytes = Vec::new();
        if b.db() != -1 {
            bytes.extend_from_slice(b"*2\r\n$6\r\nSELECT\r\n$2\r\n-1\r\n");
        }
        let mut num = itoa::Buffer::new();
        bytes.push(b'*');
        bytes.extend_from_slice(num.format(args.len() - 2).as_bytes());
        bytes.extend_from_slice(b"\r\n");
        for i in 2..args.len() {
            let a = args.get(i);
            bytes.push(b'$');
            bytes.extend_from_slice(num.format(a.len()).as_bytes());
            bytes.extend_from_slice(b"\r\n");
            bytes.extend_from_slice(a);
            bytes.extend_from_slice(b"\r\n");
        }
        b.feed(&bytes);
        b.forget_db();
    }
    ctx.out.ok();
}

/// DEBUG LOADAOF (debug.c of 7.0.15): writes out and fsyncs the AOF's
/// buffer, empties every database and loads the AOF files back
/// ([`crate::persist::aof::reload`]) with every other command held back;
/// logs "Append Only File loaded by DEBUG LOADAOF" and replies OK. When
/// the load fails, or no AOF exists (as with `appendonly no` and no AOF
/// directory), Redis 7.0.15 exits with status 1 without a reply, and so
/// does ferrokv (after logging why).
fn debug_loadaof(ctx: &mut Ctx<'_>) {
    let _world = (!crate::cmd::tx::gate_held()).then(|| ctx.server.tx.gate_exclusive());
    // The replayed EVALs and FCALLs find the gate held.
    let _held = crate::cmd::tx::hold_gate();
    let mut replay = crate::cmd::replay::AofReplay::new(ctx.server);
    match crate::persist::aof::reload(ctx.server, &mut replay) {
        Ok(true) => {
            tracing::warn!("Append Only File loaded by DEBUG LOADAOF");
            ctx.out.ok();
        }
        Ok(false) => {
            tracing::warn!("DEBUG LOADAOF: no AOF file to load. Exiting.");
            std::process::exit(1);
        }
        Err(e) => {
            tracing::warn!("DEBUG LOADAOF: {e}. Exiting.");
            std::process::exit(1);
        }
    }
}

/// DEBUG RESTART | CRASH-AND-RECOVER [<ms>] (debug.c, server.c
/// `restartServer`): RESTART first rewrites the config file (when there
/// is one) and saves as a shutdown does (save points, AOF fsync);
/// CRASH-AND-RECOVER does neither. Both then wait `ms` and execute the
/// server's executable again with the original arguments in this process
/// (every descriptor ferrokv opens is close-on-exec, so the ports are
/// free for the new image). No reply is sent when it works. Errors: "ERR
/// value is not an integer or out of range"; "ERR failed to restart the
/// server. Check server logs." when the executable is missing or not
/// executable, or the rewrite or the save failed; a failed exec exits
/// with status 1, as Redis.
fn debug_restart(ctx: &mut Ctx<'_>, args: &Args<'_>, graceful: bool) {
    let mut delay: i64 = 0;
    if args.len() >= 3 {
        match crate::util::parse_i64(args.get(2)) {
            Some(v) => delay = v.max(0),
            None => return ctx.not_int(),
        }
    }
    if restart_server(ctx.server, graceful, delay as u64).is_err() {
        ctx.error("ERR failed to restart the server. Check server logs.");
    }
}

/// [`debug_restart`]'s work; returns only on failure.
fn restart_server(server: &crate::server::Server, graceful: bool, delay_ms: u64) -> Result<(), ()> {
    use std::os::unix::fs::PermissionsExt as _;
    use std::os::unix::process::CommandExt as _;
    let exe = &server.executable;
    let runnable = std::fs::metadata(exe)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false);
    if !runnable {
        tracing::warn!("Can't restart: this process has no permissions to execute {exe}");
        return Err(());
    }
    if graceful {
        let has_file = server.config.read().file.is_some();
        if has_file {
            if let Err(super::config::RewriteError::Io(e)) =
                super::config::rewrite_config(server, false)
            {
                tracing::warn!(
                    "Can't restart: configuration rewrite process failed: {}",
                    strerror(&e)
                );
                return Err(());
            }
        }
        if !super::shutdown_save(server, false, false) {
            tracing::warn!("Can't restart: error preparing for shutdown");
            return Err(());
        }
        if server.propagation.on() {
            server.aof.flush_all();
        }
    }
    if delay_ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
    }
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .exec();
    tracing::warn!("Can't restart: exec of {exe} failed: {err}");
    std::process::exit(1);
}

/// Redis's bug report around a crash (debug.c `bugReportStart` /
/// `bugReportEnd`), logged line by line; then the process aborts
/// (SIGABRT, as Redis's `abort()` after a panic or a failed assertion).
fn crash_abort(lines: &[String]) -> ! {
    tracing::warn!("\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===");
    for l in lines {
        tracing::warn!("{l}");
    }
    tracing::warn!("=== REDIS BUG REPORT END. Make sure to include from START to END. ===");
    std::process::abort();
}

/// DEBUG PANIC and DEBUG OOM (`serverPanic`): logs "!!! Software
/// Failure..." and "Guru Meditation: <msg> #debug.rs:<line>", then aborts.
fn crash_panic(msg: &str, line: u32) -> ! {
    crash_abort(&[
        "------------------------------------------------".to_string(),
        "!!! Software Failure. Press left mouse button to continue".to_string(),
        format!("Guru Meditation: {msg} #debug.rs:{line}"),
    ])
}

/// DEBUG ASSERT (`serverAssertWithInfo(c, argv[0], 1 == 2)`): logs the
/// client context and "==> debug.rs:<line> '1 == 2' is not true", then
/// aborts.
fn crash_assert(ctx: &Ctx<'_>, args: &Args<'_>, line: u32) -> ! {
    let mut lines = vec![
        "=== ASSERTION FAILED CLIENT CONTEXT ===".to_string(),
        format!("client->argc = {}", args.len()),
    ];
    for (j, a) in args.iter().enumerate() {
        lines.push(format!(
            "client->argv[{j}] = \"{}\"",
            String::from_utf8_lossy(a)
        ));
    }
    lines.push(format!("client->id = {}", ctx.client.handle.id));
    lines.push("=== ASSERTION FAILED ===".to_string());
    lines.push(format!("==> debug.rs:{line} '1 == 2' is not true"));
    crash_abort(&lines)
}

/// DEBUG SEGFAULT: the process dies by SIGSEGV, as Redis writing to a
/// read-only page (its crash log is not reproduced; one line says why).
fn crash_segfault() -> ! {
    tracing::warn!("DEBUG SEGFAULT: crashing with SIGSEGV");
    // SAFETY: restoring the default action and raising the signal in this
    // process; the default action ends the process.
    unsafe {
        libc::signal(libc::SIGSEGV, libc::SIG_DFL);
        libc::raise(libc::SIGSEGV);
    }
    std::process::abort();
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
    let _world = (!crate::cmd::tx::gate_held()).then(|| ctx.server.tx.gate_exclusive());
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
/// server; ferrokv stops only the calling connection (see [`in_place`]).
fn sleep_blocking(d: std::time::Duration) {
    in_place(|| std::thread::sleep(d));
}

/// Runs the long blocking `f` on this thread: on the multi-thread runtime
/// `block_in_place` hands this worker's other tasks to another thread
/// first, so other clients keep being served.
fn in_place(f: impl FnOnce()) {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
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
    // The key as stored, even if logically expired (Redis's dictFind on
    // the main dict): a replica's expired key awaiting its master's DEL.
    let Some(e) = shard.peek_raw(h, key) else {
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
            " ql_nodes:{} ql_avg_node:{:.2} ql_listpack_max:{} ql_compressed:{} ql_uncompressed_size:{}",
            nodes,
            l.len() as f64 / nodes.max(1) as f64,
            ctx.server.live.list_max_listpack_size.load(Ordering::Relaxed),
            u8::from(l.compress_depth() != 0),
            l.packed_bytes()
        ));
    }
    drop(shard);
    ctx.out.simple(&line);
}

/// DEBUG CLIENT-EVICTION (debug.c): the evictable clients by memory bucket
/// (powers of two from 32 KiB to 4 GiB, as Redis's
/// `client_mem_usage_buckets`), with their summed `tot-mem`; an error
/// while maxmemory-clients is 0.
fn debug_client_eviction(ctx: &mut Ctx<'_>) {
    const MIN_LOG: u32 = 15;
    const MAX_LOG: u32 = 33;
    const BUCKETS: usize = (1 + MAX_LOG - MIN_LOG) as usize;
    // Off for 0 and 0% alike (Redis keeps the buckets while the directive
    // is not 0, a percentage included even without maxmemory).
    if ctx
        .server
        .config
        .read()
        .get("maxmemory-clients")
        .trim_end_matches('%')
        == "0"
    {
        ctx.error("ERR maxmemory-clients is disabled.");
        return;
    }
    let mut sums = [(0u64, 0u64); BUCKETS];
    for h in ctx.server.clients.all() {
        if h.exempt.load(Ordering::Relaxed) || h.info.lock().no_evict {
            continue;
        }
        let mem = h.mem.load(Ordering::Relaxed);
        let bits = 64 - mem.leading_zeros();
        let i = (bits.clamp(MIN_LOG, MAX_LOG) - MIN_LOG) as usize;
        sums[i].0 += mem;
        sums[i].1 += 1;
    }
    let mut text = String::new();
    for (j, (mem, n)) in sums.iter().enumerate() {
        if j == 0 {
            text.push_str("bucket          0");
        } else {
            text.push_str(&format!("bucket {:>10}", 1u64 << (j as u32 - 1 + MIN_LOG)));
        }
        if j == BUCKETS - 1 {
            text.push_str("+            : ");
        } else {
            text.push_str(&format!(" - {:>10}: ", (1u64 << (j as u32 + MIN_LOG)) - 1));
        }
        text.push_str(&format!("tot-mem: {mem:>10}, clients: {n}\n"));
    }
    ctx.out.verbatim(text.as_bytes());
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

    #[test]
    fn c_atoi() {
        assert_eq!(atoi(b"1"), 1);
        assert_eq!(atoi(b" 12x"), 12);
        assert_eq!(atoi(b"x"), 0);
        assert_eq!(atoi(b"-3"), -3);
        assert_eq!(atoi(b""), 0);
    }

    #[test]
    fn memtoull_as_redis() {
        assert_eq!(memtoull(b"1K"), Some(1000));
        assert_eq!(memtoull(b"1kb"), Some(1024));
        assert_eq!(memtoull(b"1b"), Some(1));
        assert_eq!(memtoull(b"kb"), Some(0));
        assert_eq!(memtoull(b""), Some(0));
        assert_eq!(memtoull(b"-1"), None);
        assert_eq!(memtoull(b"5 "), None);
        assert_eq!(memtoull(b"99999999999999999999"), None);
    }

    #[test]
    fn stats_layout() {
        let mut t = TableStats::default();
        t.add_buckets(0, 2);
        t.add_buckets(1, 1);
        t.add_buckets(2, 1);
        let mut s = String::new();
        table_stats_text(&mut s, 0, &t);
        assert_eq!(
            s,
            "Hash table 0 stats (main hash table):\n table size: 4\n number of elements: 3\n different slots: 2\n max chain length: 2\n avg chain length (counted): 1.50\n avg chain length (computed): 1.50\n Chain length distribution:\n   0: 2 (50.00%)\n   1: 1 (25.00%)\n   2: 1 (25.00%)\n"
        );
        let mut s = String::new();
        table_stats_text(&mut s, 0, &TableStats::default());
        assert_eq!(
            s,
            "Hash table 0 stats (main hash table):\nNo stats available for empty dictionaries\n"
        );
    }
}
