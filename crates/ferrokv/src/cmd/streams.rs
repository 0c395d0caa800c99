//! Stream commands (redis.io/commands/?group=stream): XADD XLEN XRANGE
//! XREVRANGE XDEL XTRIM XSETID XREAD XREADGROUP XGROUP XACK XPENDING
//! XCLAIM XAUTOCLAIM XINFO.
//!
//! Behaviour follows Redis 7.0's t_stream.c as observed on redis-server
//! 7.0.15: argument parsing order (which error a request gets), id parsing
//! (`streamGenericParseIDOrReply`: `-`, `+`, `ms`, `ms-seq`, `ms-*`, the
//! strict forms), trimming (`streamTrim`: whole nodes first, `~` stops at a
//! node boundary, LIMIT caps the work), consumer groups with their pending
//! entries lists and the logical read counter behind XINFO's `lag`.
//! XINFO CONSUMERS adds Redis 7.2's `inactive` and XINFO STREAM FULL its
//! `active-time` (the issue asks for them).
//!
//! Effects are propagated as Redis propagates them: XADD with the id it
//! generated, `~` trimming as the exact trim it did (`=` and the resulting
//! threshold), XREADGROUP / XCLAIM / XAUTOCLAIM as XCLAIM ... JUSTID FORCE
//! LASTID and XGROUP SETID ... ENTRIESREAD, never as themselves.
//!
//! Blocking XREAD / XREADGROUP use `db::blocking`: the waiter is served
//! after a write to one of its keys (XADD, or for XREADGROUP the deletion
//! of the key or of its group, which ends the wait with Redis's error).

use super::keyspecs;
use super::{acl, arg_i64, cmd, container, flags::*, Command, Ctx};
use crate::db::blocking::{Attempt, BlockOp, ServeCx};
use crate::db::stream::{
    Consumer, EntryView, Group, IdBuf, Nack, StreamId, StreamValue, Trim, INVALID_ENTRIES_READ,
};
use crate::db::{hash_key, Entry, Value};
use crate::events::{NEW, STREAM};
use crate::resp::{Args, Out};
use std::sync::atomic::Ordering;

const XGROUP_HELP: &[&str] = &[
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
];

const XINFO_HELP: &[&str] = &[
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
];

const K1_RW_UPDATE: &[keyspecs::KeySpec] = keyspecs::XADD;

static XGROUP_SUBS: &[Command] = &[
    cmd(
        "xgroup|create",
        -5,
        WRITE | DENYOOM,
        (2, 2, 1),
        acl::STREAM,
        xgroup,
    )
    .key_specs(keyspecs::XGROUP_INSERT)
    .doc("stream", "5.0.0", "Create a consumer group.", "O(1)"),
    cmd(
        "xgroup|delconsumer",
        5,
        WRITE,
        (2, 2, 1),
        acl::STREAM,
        xgroup,
    )
    .key_specs(keyspecs::XGROUP_DELETE)
    .doc(
        "stream",
        "5.0.0",
        "Delete a consumer from a consumer group.",
        "O(1)",
    ),
    cmd(
        "xgroup|createconsumer",
        5,
        WRITE | DENYOOM,
        (2, 2, 1),
        acl::STREAM,
        xgroup,
    )
    .key_specs(keyspecs::XGROUP_INSERT)
    .doc(
        "stream",
        "6.2.0",
        "Create a consumer in a consumer group.",
        "O(1)",
    ),
    cmd("xgroup|destroy", 4, WRITE, (2, 2, 1), acl::STREAM, xgroup)
        .key_specs(keyspecs::XGROUP_DELETE)
        .doc(
            "stream",
            "5.0.0",
            "Destroy a consumer group.",
            "O(N) where N is the number of entries in the group's pending entries list (PEL).",
        ),
    cmd(
        "xgroup|help",
        2,
        LOADING | STALE,
        (0, 0, 0),
        acl::STREAM,
        xgroup_help,
    )
    .doc(
        "stream",
        "5.0.0",
        "Show helpful text about the different subcommands",
        "O(1)",
    ),
    cmd("xgroup|setid", -5, WRITE, (2, 2, 1), acl::STREAM, xgroup)
        .key_specs(keyspecs::XGROUP_UPDATE)
        .doc(
            "stream",
            "5.0.0",
            "Set a consumer group to an arbitrary last delivered ID value.",
            "O(1)",
        ),
];

static XINFO_SUBS: &[Command] = &[
    cmd(
        "xinfo|help",
        2,
        LOADING | STALE,
        (0, 0, 0),
        acl::STREAM,
        xinfo_help,
    )
    .doc(
        "stream",
        "5.0.0",
        "Show helpful text about the different subcommands",
        "O(1)",
    ),
    cmd("xinfo|groups", 3, READONLY, (2, 2, 1), acl::STREAM, xinfo)
        .key_specs(keyspecs::XINFO)
        .doc(
            "stream",
            "5.0.0",
            "List the consumer groups of a stream",
            "O(1)",
        ),
    cmd("xinfo|stream", -3, READONLY, (2, 2, 1), acl::STREAM, xinfo)
        .key_specs(keyspecs::XINFO)
        .doc("stream", "5.0.0", "Get information about a stream", "O(1)"),
    cmd(
        "xinfo|consumers",
        4,
        READONLY,
        (2, 2, 1),
        acl::STREAM,
        xinfo,
    )
    .key_specs(keyspecs::XINFO)
    .tips(&["nondeterministic_output"])
    .doc(
        "stream",
        "5.0.0",
        "List the consumers in a consumer group",
        "O(1)",
    ),
];

/// The stream family's table entries (arity, flags, key specs and docs as
/// Redis 7.0's COMMAND INFO / COMMAND DOCS report).
pub static COMMANDS: &[Command] = &[
    cmd("xadd", -5, WRITE | DENYOOM | FAST, (1, 1, 1), acl::STREAM, xadd)
        .key_specs(keyspecs::XADD_NOTED)
        .tips(&["nondeterministic_output"])
        .doc(
            "stream",
            "5.0.0",
            "Appends a new entry to a stream",
            "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.",
        ),
    cmd("xlen", 2, READONLY | FAST, (1, 1, 1), acl::STREAM, xlen)
        .key_specs(keyspecs::XLEN)
        .doc("stream", "5.0.0", "Return the number of entries in a stream", "O(1)"),
    cmd("xrange", -4, READONLY, (1, 1, 1), acl::STREAM, xrange)
        .key_specs(keyspecs::XRANGE)
        .doc(
            "stream",
            "5.0.0",
            "Return a range of elements in a stream, with IDs matching the specified IDs interval",
            "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
        ),
    cmd("xrevrange", -4, READONLY, (1, 1, 1), acl::STREAM, xrevrange)
        .key_specs(keyspecs::XRANGE)
        .doc(
            "stream",
            "5.0.0",
            "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE",
            "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
        ),
    cmd("xdel", -3, WRITE | FAST, (1, 1, 1), acl::STREAM, xdel)
        .key_specs(keyspecs::XDEL)
        .doc(
            "stream",
            "5.0.0",
            "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.",
            "O(1) for each single item to delete in the stream, regardless of the stream size.",
        ),
    cmd("xtrim", -4, WRITE, (1, 1, 1), acl::STREAM, xtrim)
        .key_specs(keyspecs::XDEL)
        .tips(&["nondeterministic_output"])
        .doc(
            "stream",
            "5.0.0",
            "Trims the stream to (approximately if '~' is passed) a certain size",
            "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.",
        ),
    cmd("xread", -4, READONLY | BLOCKING | MOVABLE_KEYS, (0, 0, 0), acl::STREAM, xread)
        .key_specs(keyspecs::XREAD)
        .doc(
            "stream",
            "5.0.0",
            "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.",
            "For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.",
        ),
    cmd("xreadgroup", -7, WRITE | BLOCKING | MOVABLE_KEYS, (0, 0, 0), acl::STREAM, xreadgroup)
        .key_specs(keyspecs::XREADGROUP)
        .doc(
            "stream",
            "5.0.0",
            "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.",
            "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.",
        ),
    cmd("xack", -4, WRITE | FAST, (1, 1, 1), acl::STREAM, xack)
        .key_specs(K1_RW_UPDATE)
        .doc(
            "stream",
            "5.0.0",
            "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.",
            "O(1) for each message ID processed.",
        ),
    cmd("xpending", -3, READONLY, (1, 1, 1), acl::STREAM, xpending)
        .key_specs(keyspecs::XRANGE)
        .tips(&["nondeterministic_output"])
        .doc(
            "stream",
            "5.0.0",
            "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.",
            "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.",
        ),
    cmd("xclaim", -6, WRITE | FAST, (1, 1, 1), acl::STREAM, xclaim)
        .key_specs(K1_RW_UPDATE)
        .tips(&["nondeterministic_output"])
        .doc(
            "stream",
            "5.0.0",
            "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.",
            "O(log N) with N being the number of messages in the PEL of the consumer group.",
        ),
    cmd("xautoclaim", -6, WRITE | FAST, (1, 1, 1), acl::STREAM, xautoclaim)
        .key_specs(keyspecs::XDEL)
        .tips(&["nondeterministic_output"])
        .doc(
            "stream",
            "6.2.0",
            "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.",
            "O(1) if COUNT is small.",
        ),
    cmd("xsetid", -3, WRITE | DENYOOM | FAST, (1, 1, 1), acl::STREAM, xsetid)
        .key_specs(K1_RW_UPDATE)
        .doc("stream", "5.0.0", "An internal command for replicating stream values", "O(1)"),
    container("xgroup", acl::SLOW, XGROUP_SUBS).doc(
        "stream",
        "5.0.0",
        "A container for consumer groups commands",
        "Depends on subcommand.",
    ),
    container("xinfo", acl::SLOW, XINFO_SUBS).doc(
        "stream",
        "5.0.0",
        "A container for stream introspection commands",
        "Depends on subcommand.",
    ),
];

// ---------------------------------------------------------------- errors

const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";
const NO_KEY: &str = "ERR no such key";

// ---------------------------------------------------------------- ids

/// C's `strtoull` over a whole string as Redis's `string2ull` uses it:
/// canonical integers first (negative ones refused), then leading
/// whitespace, an optional sign (a minus wraps, as strtoull does) and
/// digits with nothing after; None on overflow or garbage.
fn string2ull(s: &[u8]) -> Option<u64> {
    if let Some(v) = crate::util::parse_i64(s) {
        return (v >= 0).then_some(v as u64);
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    if i >= s.len() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in &s[i..] {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// How an id argument was written.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ParsedId {
    id: StreamId,
    /// False for `ms-*` (the sequence is to be generated).
    seq_given: bool,
}

/// Parses a stream id as `streamGenericParseIDOrReply`: `-` (0-0) and `+`
/// (max) unless `strict`, `ms` (sequence `missing_seq`), `ms-seq`, and with
/// `allow_star` `ms-*`. The argument is read as a C string (up to a NUL)
/// and may be at most 127 bytes.
fn parse_id(a: &[u8], missing_seq: u64, strict: bool, allow_star: bool) -> Option<ParsedId> {
    if a.len() > 127 {
        return None;
    }
    let a = match a.iter().position(|&c| c == 0) {
        Some(n) => &a[..n],
        None => a,
    };
    if a == b"-" || a == b"+" {
        if strict {
            return None;
        }
        let id = if a == b"-" {
            StreamId::MIN
        } else {
            StreamId::MAX
        };
        return Some(ParsedId {
            id,
            seq_given: true,
        });
    }
    let (ms_part, seq_part) = match a.iter().position(|&c| c == b'-') {
        Some(i) => (&a[..i], Some(&a[i + 1..])),
        None => (a, None),
    };
    let ms = string2ull(ms_part)?;
    let (seq, seq_given) = match seq_part {
        Some(b"*") if allow_star => (0, false),
        Some(s) => (string2ull(s)?, true),
        None => (missing_seq, true),
    };
    Some(ParsedId {
        id: StreamId::new(ms, seq),
        seq_given,
    })
}

/// A strict id (no `-` / `+`) or the "Invalid stream ID" error.
fn strict_id(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<StreamId> {
    match parse_id(a, 0, true, false) {
        Some(p) => Some(p.id),
        None => {
            ctx.error(INVALID_ID);
            None
        }
    }
}

/// An interval bound (`streamParseIntervalIDOrReply`): `(id` excludes the
/// id (strict form); otherwise `-`, `+` and incomplete ids are allowed.
/// Returns (id, exclusive) or replies the error.
fn interval_id(ctx: &mut Ctx<'_>, a: &[u8], missing_seq: u64) -> Option<(StreamId, bool)> {
    let excl = a.len() > 1 && a[0] == b'(';
    let r = if excl {
        parse_id(&a[1..], missing_seq, true, false)
    } else {
        parse_id(a, missing_seq, false, false)
    };
    match r {
        Some(p) => Some((p.id, excl)),
        None => {
            ctx.error(INVALID_ID);
            None
        }
    }
}

/// A range's start (exclusive start moved to the next id, "invalid start
/// ID for the interval" past the largest).
fn range_start(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<StreamId> {
    let (id, excl) = interval_id(ctx, a, 0)?;
    if excl {
        match id.incr() {
            Some(n) => Some(n),
            None => {
                ctx.error("ERR invalid start ID for the interval");
                None
            }
        }
    } else {
        Some(id)
    }
}

/// A range's end (exclusive end moved to the previous id).
fn range_end(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<StreamId> {
    let (id, excl) = interval_id(ctx, a, u64::MAX)?;
    if excl {
        match id.decr() {
            Some(n) => Some(n),
            None => {
                ctx.error("ERR invalid end ID for the interval");
                None
            }
        }
    } else {
        Some(id)
    }
}

// ---------------------------------------------------------------- replies

/// Writes an id as a bulk string.
#[inline]
fn put_id(out: &mut Out, id: StreamId) {
    let mut b = IdBuf::default();
    out.bulk(id.fmt(&mut b));
}

/// Writes one element of a listpack entry as a bulk string.
#[inline]
fn put_elem(out: &mut Out, e: crate::db::listpack::Elem<'_>) {
    match e {
        crate::db::listpack::Elem::Int(v) => out.bulk_int(v),
        crate::db::listpack::Elem::Str(s) => out.bulk(s),
    }
}

/// Writes an entry: `[id, [field, value, ...]]`.
fn put_entry(out: &mut Out, id: StreamId, e: &EntryView<'_>) {
    out.array(2);
    put_id(out, id);
    out.array(e.fields * 2);
    e.for_each(|f, v| {
        put_elem(out, f);
        put_elem(out, v);
    });
}

/// Writes the entries of `[start, end]` (at most `count`, 0 = all) as an
/// array; returns how many.
fn put_range(
    out: &mut Out,
    s: &StreamValue,
    start: StreamId,
    end: StreamId,
    count: u64,
    rev: bool,
) -> u64 {
    // Counted first (the header comes before the entries), then written:
    // two walks of the range cost less than a buffer per reply.
    let mut n = 0u64;
    s.range(start, end, rev, |_, _| {
        n += 1;
        count == 0 || n < count
    });
    out.array(n as usize);
    let mut left = n;
    if left > 0 {
        s.range(start, end, rev, |id, e| {
            put_entry(out, id, &e);
            left -= 1;
            left > 0
        });
    }
    n
}

/// Writes one entry (`[id, fields]`) when `id` exists; false otherwise.
fn put_one(out: &mut Out, s: &StreamValue, id: StreamId) -> bool {
    let mut found = false;
    s.range(id, id, false, |id, e| {
        put_entry(out, id, &e);
        found = true;
        false
    });
    found
}

// ---------------------------------------------------------------- lookups

/// What a lookup found.
enum Found<'s> {
    Missing,
    Stream(&'s mut Entry),
    WrongType,
}

fn find<'s>(shard: &'s mut crate::db::Shard, h: u64, key: &[u8], now: u64) -> Found<'s> {
    match shard.get(h, key, now) {
        None => Found::Missing,
        Some(e) if matches!(e.value, Value::Stream(_)) => Found::Stream(e),
        Some(_) => Found::WrongType,
    }
}

fn stream_mut(e: &mut Entry) -> &mut StreamValue {
    match &mut e.value {
        Value::Stream(s) => s,
        _ => unreachable!("checked by find"),
    }
}

fn touch(e: &mut Entry, t: Option<crate::db::lru::Access<'_>>) {
    if let Some(t) = t {
        t.record(&mut e.lru);
    }
}

/// stream-node-max-bytes and stream-node-max-entries.
fn node_limits(ctx: &Ctx<'_>) -> (usize, usize) {
    let l = &ctx.server.live;
    (
        l.stream_node_max_bytes.load(Ordering::Relaxed) as usize,
        l.stream_node_max_entries.load(Ordering::Relaxed) as usize,
    )
}

/// Serves the clients blocked on `key` (after new entries, or a group's
/// destruction), as Redis's `signalKeyAsReady`: only these stream
/// commands wake stream readers (the generic after-command signal skips
/// the family, so a reader's own XREADGROUP does not wake it).
///
/// Inside EXEC or a script the key is noted and served once the
/// transaction or script is over ([`flush_wakes`], from `cmd::run`), so a
/// reader sees all it added (and nothing it added then deleted).
fn wake(ctx: &Ctx<'_>, key: &[u8]) {
    if super::tx::in_exec() || super::scripting::in_script() {
        WAKES.with(|w| w.borrow_mut().push((ctx.client.db, key.into())));
        return;
    }
    let server: &crate::server::Server = ctx.server;
    crate::db::blocking::signal_after_command(server, ctx.client.db, &[key], false, ctx.now);
}

thread_local! {
    /// Keys (database, key) whose stream readers wait for the end of the
    /// running transaction or script.
    static WAKES: std::cell::RefCell<Vec<(usize, Box<[u8]>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// True when a transaction or script of this thread left stream readers
/// to serve.
pub fn has_wakes() -> bool {
    WAKES.with(|w| !w.borrow().is_empty())
}

/// Serves the stream readers noted by [`wake`] during a transaction or a
/// script (called when it is over).
pub fn flush_wakes(server: &crate::server::Server, now: u64) {
    let keys = WAKES.with(|w| std::mem::take(&mut *w.borrow_mut()));
    for (db, key) in keys {
        crate::db::blocking::signal_after_command(server, db, &[&key], false, now);
    }
}

/// The time stamps of consumer groups (delivery, seen and active times),
/// ms since the epoch: the wall clock, also for the AOF loader and the
/// master link, whose commands run with a zero command time (no lazy
/// expiry) but must record real times as Redis does.
fn stream_clock(ctx: &Ctx<'_>) -> u64 {
    if ctx.now != 0 {
        ctx.now
    } else {
        ctx.server.clock.now_ms()
    }
}

/// True for a client whose commands must be obeyed as sent (the master
/// link, the AOF loader: Redis's `mustObeyClient`).
fn must_obey(ctx: &Ctx<'_>) -> bool {
    ctx.client.is_master || ctx.client.aof_loading
}

// ---------------------------------------------------------------- XADD / XTRIM

/// The trimming part of XADD / XTRIM and, for XADD, the id
/// (`streamAddTrimArgs`).
struct AddTrimArgs {
    trim: Option<Trim>,
    approx: bool,
    limit: u64,
    /// Index of the threshold argument (the `~` / `=` is the one before).
    trim_arg: usize,
    /// True when `~` / `=` was written.
    marker: bool,
    /// XADD: the id argument's index, and the parsed id (None: `*`).
    id_at: usize,
    id: Option<ParsedId>,
    nomkstream: bool,
}

/// Parses XADD's options and id, or XTRIM's options
/// (`streamParseAddOrTrimArgsOrReply`), replying errors as Redis 7.0.
fn parse_add_trim(ctx: &mut Ctx<'_>, args: &Args<'_>, xadd: bool) -> Option<AddTrimArgs> {
    let mut a = AddTrimArgs {
        trim: None,
        approx: false,
        limit: 0,
        trim_arg: 0,
        marker: false,
        id_at: 0,
        id: None,
        nomkstream: false,
    };
    let mut limit: i64 = 0;
    let mut limit_given = false;
    let argc = args.len();
    let mut i = 2;
    while i < argc {
        let more = argc - 1 - i;
        let opt = args.get(i);
        if xadd && opt == b"*" {
            break;
        } else if (opt.eq_ignore_ascii_case(b"maxlen") || opt.eq_ignore_ascii_case(b"minid"))
            && more > 0
        {
            if a.trim.is_some() {
                ctx.error(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                );
                return None;
            }
            let maxlen = opt.eq_ignore_ascii_case(b"maxlen");
            a.approx = false;
            a.marker = false;
            let next = args.get(i + 1);
            if more >= 2 && next == b"~" {
                a.approx = true;
                a.marker = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                a.marker = true;
                i += 1;
            }
            let t = args.get(i + 1);
            if maxlen {
                let n = arg_i64(ctx, t)?;
                if n < 0 {
                    ctx.error("ERR The MAXLEN argument must be >= 0.");
                    return None;
                }
                a.trim = Some(Trim::MaxLen(n as u64));
            } else {
                a.trim = Some(Trim::MinId(strict_id(ctx, t)?));
            }
            i += 1;
            a.trim_arg = i;
        } else if opt.eq_ignore_ascii_case(b"limit") && more > 0 {
            limit = arg_i64(ctx, args.get(i + 1))?;
            if limit < 0 {
                ctx.error("ERR The LIMIT argument must be >= 0.");
                return None;
            }
            limit_given = true;
            i += 1;
        } else if xadd && opt.eq_ignore_ascii_case(b"nomkstream") {
            a.nomkstream = true;
        } else if xadd {
            match parse_id(opt, 0, true, true) {
                Some(p) => a.id = Some(p),
                None => {
                    ctx.error(INVALID_ID);
                    return None;
                }
            }
            break;
        } else {
            ctx.syntax();
            return None;
        }
        i += 1;
    }
    a.id_at = i;
    if limit != 0 && a.trim.is_none() {
        ctx.error("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy");
        return None;
    }
    if !xadd && a.trim.is_none() {
        ctx.error("ERR syntax error, XTRIM must be called with a trimming strategy");
        return None;
    }
    if must_obey(ctx) {
        a.limit = 0;
    } else if limit_given {
        if !a.approx {
            ctx.error("ERR syntax error, LIMIT cannot be used without the special ~ option");
            return None;
        }
        a.limit = limit as u64;
    } else if a.approx {
        let per = ctx
            .server
            .live
            .stream_node_max_entries
            .load(Ordering::Relaxed);
        let l = per.saturating_mul(100);
        a.limit = if l == 0 { 10_000 } else { l.min(1_000_000) };
    }
    Some(a)
}

/// The propagated form of an approximate trim: `=` for `~` and the
/// threshold actually reached (the length, or the first id left), as
/// `streamRewriteApproxSpecifier` / `streamRewriteTrimArgument`.
fn trim_rewrite(a: &AddTrimArgs, s: &StreamValue) -> Vec<u8> {
    match a.trim {
        Some(Trim::MaxLen(_)) => itoa::Buffer::new().format(s.length).as_bytes().to_vec(),
        _ => s.first_id_with_deleted().to_vec(),
    }
}

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]]
/// *|id field value [field value ...] (redis.io/commands/xadd).
fn xadd(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(a) = parse_add_trim(ctx, args, true) else {
        return;
    };
    let field_at = a.id_at + 1;
    let nfv = args.len().saturating_sub(field_at);
    if nfv < 2 || nfv % 2 == 1 {
        return ctx.error("ERR wrong number of arguments for 'xadd' command");
    }
    if let Some(p) = a.id {
        if p.seq_given && p.id.is_zero() {
            return ctx.error("ERR The ID specified in XADD must be greater than 0-0");
        }
    }
    let key = args.get(1);
    let (max_bytes, max_entries) = node_limits(ctx);
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now;
    let t = ctx.touch_time();
    let created = match find(&mut shard, h, key, now) {
        Found::WrongType => {
            drop(shard);
            return ctx.wrongtype();
        }
        Found::Missing if a.nomkstream => {
            drop(shard);
            return ctx.out.null();
        }
        Found::Missing => true,
        Found::Stream(e) => {
            touch(e, t);
            false
        }
    };
    if created {
        let lru = ctx.server.keyspace.lru.initial(now);
        shard.insert(h, key, Entry::new(Value::Stream(Box::default()), lru));
        ctx.notify(key, NEW, "new");
    }
    let Found::Stream(e) = find(&mut shard, h, key, now) else {
        unreachable!("present")
    };
    let s = stream_mut(e);
    if s.last_id == StreamId::MAX {
        drop(shard);
        return ctx
            .error("ERR The stream has exhausted the last possible ID, unable to add more items");
    }
    let id = match a.id {
        None => {
            let ms = now;
            if ms > s.last_id.ms {
                Some(StreamId::new(ms, 0))
            } else {
                s.last_id.incr()
            }
        }
        Some(p) if p.seq_given => Some(p.id),
        Some(p) => {
            if s.last_id.ms == p.id.ms {
                if s.last_id.seq == u64::MAX {
                    None
                } else {
                    Some(StreamId::new(p.id.ms, s.last_id.seq + 1))
                }
            } else {
                Some(p.id)
            }
        }
    };
    let id = match id {
        Some(id) if id > s.last_id => id,
        _ => {
            drop(shard);
            // A stream created for this call stays (Redis leaves it too
            // only when the id is 0-0, refused above; any other id is
            // greater than a new stream's 0-0).
            return ctx.error(
                "ERR The ID specified in XADD is equal or smaller than the target stream top item",
            );
        }
    };
    let fv = |i: usize| args.get(field_at + i);
    if (0..nfv).map(|i| fv(i).len()).sum::<usize>() > crate::db::stream::NODE_MAX_SIZE {
        drop(shard);
        return ctx.error("ERR Elements are too large to be stored");
    }
    s.append_with(id, nfv, fv, max_bytes, max_entries);
    put_id(ctx.out, id);
    ctx.modified(key, STREAM, "xadd");
    let mut trim_arg = None;
    if let Some(how) = a.trim {
        if s.trim(how, a.approx, a.limit) > 0 {
            ctx.notify(key, STREAM, "xtrim");
        }
        if a.approx {
            trim_arg = Some(trim_rewrite(&a, s));
        }
    }
    drop(shard);
    wake(ctx, key);
    let id_generated = a.id.is_none_or(|p| !p.seq_given);
    if (id_generated || trim_arg.is_some()) && crate::propagate::Stream::in_write_context() {
        let idt = id.to_vec();
        let mut argv: Vec<&[u8]> = args.iter().collect();
        if id_generated {
            argv[a.id_at] = &idt;
        }
        if let Some(t) = &trim_arg {
            argv[a.trim_arg - 1] = b"=";
            argv[a.trim_arg] = t;
        }
        crate::propagate::rewrite(&argv);
    }
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]: entries removed
/// (options parsed first; 0 for a missing key).
fn xtrim(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let Some(a) = parse_add_trim(ctx, args, false) else {
        return;
    };
    let (h, mut shard) = ctx.lock(key);
    let e = match find(&mut shard, h, key, ctx.now) {
        Found::Missing => {
            drop(shard);
            ctx.dirty = Some(0);
            return ctx.out.int(0);
        }
        Found::WrongType => {
            drop(shard);
            return ctx.wrongtype();
        }
        Found::Stream(e) => e,
    };
    let s = stream_mut(e);
    let deleted = s.trim(a.trim.expect("checked"), a.approx, a.limit);
    let mut rewrite = None;
    if deleted > 0 {
        ctx.notify(key, STREAM, "xtrim");
        if a.approx {
            rewrite = Some(trim_rewrite(&a, s));
        }
        ctx.touch_key(key);
        crate::propagate::mark_dirty();
    }
    drop(shard);
    ctx.dirty = Some(deleted);
    ctx.out.int(deleted as i64);
    if let Some(t) = rewrite {
        let mut argv: Vec<&[u8]> = args.iter().collect();
        argv[a.trim_arg - 1] = b"=";
        argv[a.trim_arg] = &t;
        crate::propagate::rewrite(&argv);
    }
}

// ---------------------------------------------------------------- reads

/// Runs `f` on the stream at `key` for a read command (hit/miss counted,
/// LRU refreshed); `missing` replies for a missing key.
fn read_stream(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    missing: impl FnOnce(&mut Ctx<'_>),
    f: impl FnOnce(&mut Ctx<'_>, &mut StreamValue),
) {
    let (h, mut shard) = ctx.lock(key);
    let t = ctx.touch_time();
    match shard.get(h, key, ctx.now) {
        None => {
            drop(shard);
            ctx.hit(key, false);
            missing(ctx);
        }
        Some(e) => {
            touch(e, t);
            match &mut e.value {
                Value::Stream(s) => {
                    ctx.hit(key, true);
                    f(ctx, s);
                }
                _ => {
                    drop(shard);
                    ctx.hit(key, true);
                    ctx.wrongtype();
                }
            }
        }
    }
}

/// XLEN key.
fn xlen(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    read_stream(
        ctx,
        args.get(1),
        |c| c.out.int(0),
        |c, s| c.out.int(s.length as i64),
    );
}

/// XRANGE / XREVRANGE key start end [COUNT count]: bounds parsed first,
/// then COUNT (negative = 0; COUNT 0 replies a null array), then the key.
fn range_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, rev: bool) {
    let (sa, ea) = if rev {
        (args.get(3), args.get(2))
    } else {
        (args.get(2), args.get(3))
    };
    let Some(start) = range_start(ctx, sa) else {
        return;
    };
    let Some(end) = range_end(ctx, ea) else {
        return;
    };
    let mut count: i64 = -1;
    let mut j = 4;
    while j < args.len() {
        if args.get(j).eq_ignore_ascii_case(b"count") && j + 1 < args.len() {
            let Some(n) = arg_i64(ctx, args.get(j + 1)) else {
                return;
            };
            count = n.max(0);
            j += 2;
        } else {
            return ctx.syntax();
        }
    }
    read_stream(
        ctx,
        args.get(1),
        |c| c.out.array(0),
        |c, s| {
            if count == 0 {
                c.out.null_array();
            } else {
                put_range(c.out, s, start, end, count.max(0) as u64, rev);
            }
        },
    );
}

fn xrange(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    range_generic(ctx, args, false)
}

fn xrevrange(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    range_generic(ctx, args, true)
}

// ---------------------------------------------------------------- XDEL / XSETID

/// XDEL key id [id ...]: the key is looked up first, then every id is
/// checked before any is deleted.
fn xdel(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let e = match find(&mut shard, h, key, ctx.now) {
        Found::Missing => {
            drop(shard);
            ctx.dirty = Some(0);
            return ctx.out.int(0);
        }
        Found::WrongType => {
            drop(shard);
            return ctx.wrongtype();
        }
        Found::Stream(e) => e,
    };
    let mut ids = Vec::with_capacity(args.len() - 2);
    for i in 2..args.len() {
        match parse_id(args.get(i), 0, true, false) {
            Some(p) => ids.push(p.id),
            None => {
                drop(shard);
                return ctx.error(INVALID_ID);
            }
        }
    }
    let s = stream_mut(e);
    let mut deleted = 0u64;
    let mut first = false;
    for id in ids {
        if s.delete(id) {
            if id == s.first_id {
                first = true;
            }
            if id > s.max_deleted_id {
                s.max_deleted_id = id;
            }
            deleted += 1;
        }
    }
    if deleted > 0 {
        if s.length == 0 {
            s.first_id = StreamId::MIN;
        } else if first {
            s.first_id = s.edge_id(false).unwrap_or(StreamId::MIN);
        }
    }
    drop(shard);
    if deleted > 0 {
        ctx.modified(key, STREAM, "xdel");
    }
    ctx.dirty = Some(deleted);
    ctx.out.int(deleted as i64);
}

/// XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id].
fn xsetid(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(id) = strict_id(ctx, args.get(2)) else {
        return;
    };
    let mut entries_added: i64 = -1;
    let mut max_del = StreamId::MIN;
    let mut i = 3;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = args.get(i);
        if opt.eq_ignore_ascii_case(b"entriesadded") && more > 0 {
            let Some(n) = arg_i64(ctx, args.get(i + 1)) else {
                return;
            };
            if n < 0 {
                return ctx.error("ERR entries_added must be positive");
            }
            entries_added = n;
            i += 2;
        } else if opt.eq_ignore_ascii_case(b"maxdeletedid") && more > 0 {
            let Some(m) = strict_id(ctx, args.get(i + 1)) else {
                return;
            };
            if id < m {
                return ctx.error(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                );
            }
            max_del = m;
            i += 2;
        } else {
            return ctx.syntax();
        }
    }
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let e = match find(&mut shard, h, key, ctx.now) {
        Found::Missing => {
            drop(shard);
            return ctx.error(NO_KEY);
        }
        Found::WrongType => {
            drop(shard);
            return ctx.wrongtype();
        }
        Found::Stream(e) => e,
    };
    let s = stream_mut(e);
    if s.length > 0 {
        let maxid = s.edge_id(true).unwrap_or(StreamId::MIN);
        if id < maxid {
            drop(shard);
            return ctx.error(
                "ERR The ID specified in XSETID is smaller than the target stream top item",
            );
        }
        if entries_added != -1 && s.length > entries_added as u64 {
            drop(shard);
            return ctx.error(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            );
        }
    }
    s.last_id = id;
    if entries_added != -1 {
        s.entries_added = entries_added as u64;
    }
    if !max_del.is_zero() {
        s.max_deleted_id = max_del;
    }
    drop(shard);
    ctx.modified(key, STREAM, "xsetid");
    ctx.out.ok();
}

// ---------------------------------------------------------------- XREAD / XREADGROUP

/// XREAD without COUNT served after blocking returns at most this many
/// entries (XREAD_BLOCKED_DEFAULT_COUNT).
const BLOCKED_DEFAULT_COUNT: u64 = 1000;

/// XREADGROUP's group and consumer names.
type GroupConsumer = (Box<[u8]>, Box<[u8]>);

/// Parsed XREAD / XREADGROUP options.
struct ReadArgs {
    block_ms: Option<u64>,
    count: u64,
    streams_at: usize,
    nstreams: usize,
    group: Option<GroupConsumer>,
    noack: bool,
}

/// Parses XREAD [COUNT n] [BLOCK ms] STREAMS ... or XREADGROUP GROUP g c
/// [COUNT n] [BLOCK ms] [NOACK] STREAMS ..., replying errors in Redis's
/// order.
fn parse_read(ctx: &mut Ctx<'_>, args: &Args<'_>, group_cmd: bool) -> Option<ReadArgs> {
    let mut r = ReadArgs {
        block_ms: None,
        count: 0,
        streams_at: 0,
        nstreams: 0,
        group: None,
        noack: false,
    };
    let argc = args.len();
    let mut i = 1;
    while i < argc {
        let more = argc - i - 1;
        let o = args.get(i);
        if o.eq_ignore_ascii_case(b"block") && more > 0 {
            if crate::cmd::scripting::in_script() {
                let mut msg = super::c_str(args.get(0), usize::MAX).to_vec();
                msg.extend_from_slice(b" command is not allowed with BLOCK option from scripts");
                let mut m = b"ERR ".to_vec();
                m.extend_from_slice(&msg);
                ctx.out.error_bytes(&m);
                ctx.server.stats.record_error("ERR");
                ctx.failed = true;
                return None;
            }
            i += 1;
            let t = match crate::util::parse_i64(args.get(i)) {
                Some(t) => t,
                None => {
                    ctx.error("ERR timeout is not an integer or out of range");
                    return None;
                }
            };
            if t < 0 {
                ctx.error("ERR timeout is negative");
                return None;
            }
            if t > 0 && t > i64::MAX - ctx.now as i64 {
                ctx.error("ERR timeout is out of range");
                return None;
            }
            r.block_ms = Some(t as u64);
        } else if o.eq_ignore_ascii_case(b"count") && more > 0 {
            i += 1;
            let n = arg_i64(ctx, args.get(i))?;
            r.count = n.max(0) as u64;
        } else if o.eq_ignore_ascii_case(b"streams") && more > 0 {
            r.streams_at = i + 1;
            let n = argc - r.streams_at;
            if !n.is_multiple_of(2) {
                // Redis 7.0 names XREAD (and `$`) for both commands.
                ctx.error("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.");
                return None;
            }
            r.nstreams = n / 2;
            break;
        } else if o.eq_ignore_ascii_case(b"group") && more >= 2 {
            if !group_cmd {
                ctx.error("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.");
                return None;
            }
            r.group = Some((args.get(i + 1).into(), args.get(i + 2).into()));
            i += 2;
        } else if o.eq_ignore_ascii_case(b"noack") {
            if !group_cmd {
                ctx.error("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.");
                return None;
            }
            r.noack = true;
        } else {
            ctx.syntax();
            return None;
        }
        i += 1;
    }
    if r.streams_at == 0 {
        ctx.syntax();
        return None;
    }
    if group_cmd && r.group.is_none() {
        ctx.error("ERR Missing GROUP option for XREADGROUP");
        return None;
    }
    Some(r)
}

/// The id a read asks entries after: `$` (resolved), `>` (XREADGROUP's
/// new entries) or an id.
#[derive(Debug, Clone, Copy, PartialEq)]
enum After {
    Id(StreamId),
    New,
}

/// Context needed to record a consumer group's effects.
struct GroupFx<'k> {
    db: usize,
    key: &'k [u8],
    group: &'k [u8],
    consumer: &'k [u8],
}

/// Records `XCLAIM key group consumer 0 id TIME t RETRYCOUNT n FORCE JUSTID
/// LASTID last` (`streamPropagateXCLAIM`).
fn propagate_xclaim(db: usize, key: &[u8], group: &[u8], last: StreamId, id: StreamId, n: &Nack) {
    let (a, b, c) = (id.to_vec(), last.to_vec(), n.delivery_time.to_string());
    let d = n.delivery_count.to_string();
    crate::propagate::also(
        db,
        &[
            b"XCLAIM",
            key,
            group,
            &n.consumer,
            b"0",
            &a,
            b"TIME",
            c.as_bytes(),
            b"RETRYCOUNT",
            d.as_bytes(),
            b"FORCE",
            b"JUSTID",
            b"LASTID",
            &b,
        ],
    );
    crate::propagate::mark_dirty();
}

/// Records `XGROUP SETID key group last ENTRIESREAD n`
/// (`streamPropagateGroupID`).
fn propagate_group_id(db: usize, key: &[u8], group: &[u8], g: &Group) {
    let last = g.last_id.to_vec();
    let er = g.entries_read.to_string();
    crate::propagate::also(
        db,
        &[
            b"XGROUP",
            b"SETID",
            key,
            group,
            &last,
            b"ENTRIESREAD",
            er.as_bytes(),
        ],
    );
    crate::propagate::mark_dirty();
}

/// Serves new entries (after `after`) of `s` to a group's consumer
/// (`streamReplyWithRange` with a group): advances the group's last id
/// and read counter, adds pending entries unless `noack`, records the
/// effects. Writes the entries array.
#[allow(clippy::too_many_arguments)]
fn serve_group_new(
    out: &mut Out,
    s: &mut StreamValue,
    gname: &[u8],
    cname: &[u8],
    count: u64,
    noack: bool,
    now: u64,
    fx: &GroupFx<'_>,
) {
    let start = {
        let g = &s.groups[gname];
        match g.last_id.incr() {
            Some(x) => x,
            None => {
                out.array(0);
                return;
            }
        }
    };
    // Collect first (the walk borrows the stream), then update the group.
    let mut body = Out {
        buf: Vec::new(),
        resp3: out.resp3,
    };
    let mut ids = Vec::new();
    s.range(start, StreamId::MAX, false, |id, e| {
        put_entry(&mut body, id, &e);
        ids.push(id);
        count == 0 || (ids.len() as u64) < count
    });
    out.array(ids.len());
    out.buf.extend_from_slice(&body.buf);
    let mut propagate_last = false;
    for id in &ids {
        let id = *id;
        let g = s.groups.get(gname).expect("group");
        if id > g.last_id {
            let tomb = s.range_has_tombstones(Some(id), None);
            let valid = g.entries_read != INVALID_ENTRIES_READ && !tomb;
            let est = if valid || s.entries_added == 0 {
                None
            } else {
                Some(s.estimate_distance(id))
            };
            let g = s.groups.get_mut(gname).expect("group");
            if valid {
                g.entries_read += 1;
            } else if let Some(e) = est {
                g.entries_read = e;
            }
            g.last_id = id;
            // Without NOACK the XCLAIMs carry the last id (LASTID):
            // t_stream.c propagates the group's id only with NOACK.
            propagate_last |= noack;
        }
        let g = s.groups.get_mut(gname).expect("group");
        if !noack {
            let nack = Nack {
                delivery_time: now,
                delivery_count: 1,
                consumer: cname.into(),
            };
            if let Some(old) = g.pel.insert(id, nack) {
                if let Some(c) = g.consumers.get_mut(&old.consumer) {
                    c.pel.remove(&id);
                }
            }
            let (c, _) = g.consumer(cname, now);
            c.pel.insert(id);
            c.active_time = now as i64;
            let last = g.last_id;
            propagate_xclaim(fx.db, fx.key, fx.group, last, id, &g.pel[&id]);
        }
    }
    if propagate_last {
        propagate_group_id(fx.db, fx.key, fx.group, &s.groups[gname]);
    }
}

/// Serves a consumer's own pending entries from `start`
/// (`streamReplyWithRangeFromConsumerPEL`): each entry, or `[id, nil]`
/// for one deleted since; the delivery count and time are updated.
fn serve_group_history(
    out: &mut Out,
    s: &mut StreamValue,
    gname: &[u8],
    cname: &[u8],
    start: StreamId,
    count: u64,
    now: u64,
) {
    let ids: Vec<StreamId> = {
        let g = &s.groups[gname];
        match g.consumers.get(cname) {
            Some(c) => c
                .pel
                .range(start..)
                .take(if count == 0 {
                    usize::MAX
                } else {
                    count as usize
                })
                .copied()
                .collect(),
            None => Vec::new(),
        }
    };
    out.array(ids.len());
    for id in ids {
        if put_one(out, s, id) {
            let g = s.groups.get_mut(gname).expect("group");
            if let Some(n) = g.pel.get_mut(&id) {
                n.delivery_time = now;
                n.delivery_count += 1;
            }
        } else {
            out.array(2);
            put_id(out, id);
            out.null_array();
        }
    }
}

/// The waiter of a blocked XREAD / XREADGROUP: per key the id to read
/// after (XREAD) or the group, consumer and NOACK (XREADGROUP).
struct ReadOp {
    keys: Vec<Box<[u8]>>,
    after: Vec<StreamId>,
    count: u64,
    group: Option<GroupConsumer>,
    noack: bool,
}

impl BlockOp for ReadOp {
    fn serve(&self, cx: &mut ServeCx<'_, '_>, key: &[u8]) -> Attempt {
        let h = hash_key(key);
        let now = cx.now;
        let db = cx.db;
        let resp3 = cx.resp3;
        let events = cx.host.keyspace().events();
        let shard = cx.locks.shard(db, h);
        let err = |msg: &str, host: &dyn crate::db::blocking::Host| {
            host.record_error(msg);
            let mut o = Out {
                buf: Vec::new(),
                resp3,
            };
            o.error(msg);
            Attempt::Served(o.buf)
        };
        let e = match find(shard, h, key, now) {
            Found::Stream(e) => e,
            Found::Missing | Found::WrongType if self.group.is_some() => {
                return err("UNBLOCKED the stream key no longer exists", cx.host);
            }
            Found::Missing => return Attempt::NotReady,
            Found::WrongType => return Attempt::Skip,
        };
        let s = stream_mut(e);
        let idx = self.keys.iter().position(|k| &**k == key).unwrap_or(0);
        let gt =
            match &self.group {
                Some((g, _)) => match s.groups.get(&**g) {
                    None => return err(
                        "NOGROUP the consumer group this client was blocked on no longer exists",
                        cx.host,
                    ),
                    Some(g) => g.last_id,
                },
                None => self.after[idx],
            };
        if s.last_id <= gt {
            return Attempt::NotReady;
        }
        let mut out = Out {
            buf: Vec::new(),
            resp3,
        };
        if resp3 {
            out.map(1);
        } else {
            out.array(1);
            out.array(2);
        }
        out.bulk(key);
        match &self.group {
            None => {
                let start = gt.incr().unwrap_or(StreamId::MAX);
                put_range(&mut out, s, start, StreamId::MAX, self.count, false);
            }
            Some((g, c)) => {
                let created = {
                    let grp = s.groups.get_mut(&**g).expect("checked");
                    let (cons, created) = grp.consumer(c, now);
                    cons.seen_time = now;
                    created
                };
                if created {
                    events.notify(db, key, STREAM, "xgroup-createconsumer");
                    if self.noack {
                        crate::propagate::also(db, &[b"XGROUP", b"CREATECONSUMER", key, g, c]);
                        crate::propagate::mark_dirty();
                    }
                }
                let fx = GroupFx {
                    db,
                    key,
                    group: g,
                    consumer: c,
                };
                serve_group_new(&mut out, s, g, c, self.count, self.noack, now, &fx);
                let _ = fx.consumer;
            }
        }
        Attempt::Served(out.buf)
    }
}

/// XREAD / XREADGROUP after parsing.
fn read_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, group_cmd: bool) {
    let Some(r) = parse_read(ctx, args, group_cmd) else {
        return;
    };
    let db = ctx.client.db;
    let keys: Vec<&[u8]> = (0..r.nstreams)
        .map(|i| args.get(r.streams_at + i))
        .collect();
    let hashes: Vec<(usize, u64)> = keys.iter().map(|k| (db, hash_key(k))).collect();
    let server = ctx.server;
    let mut locks = server.keyspace.lock_keys(&hashes);
    let now = ctx.now;
    let clock = stream_clock(ctx);
    let t = ctx.touch_time();
    // Resolve ids and check keys / groups, in argument order.
    let mut after: Vec<After> = Vec::with_capacity(r.nstreams);
    for (i, key) in keys.iter().enumerate() {
        let h = hashes[i].1;
        let ida = args.get(r.streams_at + r.nstreams + i);
        let shard = locks.shard(db, h);
        let found = find(shard, h, key, now);
        let s = match found {
            Found::WrongType => {
                drop(locks);
                ctx.hit(key, true);
                return ctx.wrongtype();
            }
            Found::Missing => None,
            Found::Stream(e) => {
                touch(e, t);
                Some(stream_mut(e))
            }
        };
        if let Some((g, _)) = &r.group {
            let ok = s.as_ref().is_some_and(|s| s.groups.contains_key(&**g));
            if !ok {
                drop(locks);
                return no_key_or_group(ctx, key, g, b" in XREADGROUP with GROUP option");
            }
        }
        if ida == b"$" {
            if group_cmd {
                drop(locks);
                return ctx.error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.");
            }
            after.push(After::Id(s.map(|s| s.last_id).unwrap_or(StreamId::MIN)));
            continue;
        }
        if ida == b">" {
            if !group_cmd {
                drop(locks);
                return ctx.error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.");
            }
            after.push(After::New);
            continue;
        }
        match parse_id(ida, 0, true, false) {
            // Redis marks `>` with the largest id, so XREADGROUP takes an
            // explicit largest id as `>` too.
            Some(p) if group_cmd && p.id == StreamId::MAX => after.push(After::New),
            Some(p) => after.push(After::Id(p.id)),
            None => {
                drop(locks);
                return ctx.error(INVALID_ID);
            }
        }
    }
    // Serve synchronously what can be served.
    let mut body = Out {
        buf: Vec::new(),
        resp3: ctx.out.resp3,
    };
    let mut served = 0usize;
    for (i, key) in keys.iter().enumerate() {
        let h = hashes[i].1;
        let shard = locks.shard(db, h);
        let Found::Stream(e) = find(shard, h, key, now) else {
            ctx.hit(key, false);
            continue;
        };
        ctx.hit(key, true);
        let s = stream_mut(e);
        match &r.group {
            None => {
                let After::Id(gt) = after[i] else { continue };
                let last_valid = if s.length > 0 { s.edge_id(true) } else { None };
                if last_valid.is_some_and(|m| m > gt) {
                    served += 1;
                    if !body.resp3 {
                        body.array(2);
                    }
                    body.bulk(key);
                    let start = gt.incr().unwrap_or(StreamId::MAX);
                    put_range(&mut body, s, start, StreamId::MAX, r.count, false);
                }
            }
            Some((g, c)) => {
                let history = after[i] != After::New;
                let mut sync = history;
                if !history && s.length > 0 {
                    let last = s.groups[&**g].last_id;
                    if s.edge_id(true).is_some_and(|m| m > last) {
                        sync = true;
                    }
                }
                if sync {
                    let created = {
                        let grp = s.groups.get_mut(&**g).expect("checked");
                        let (cons, created) = grp.consumer(c, clock);
                        cons.seen_time = clock;
                        created
                    };
                    if created {
                        ctx.notify(key, STREAM, "xgroup-createconsumer");
                        crate::propagate::mark_dirty();
                        if r.noack {
                            crate::propagate::also(db, &[b"XGROUP", b"CREATECONSUMER", key, g, c]);
                        }
                    }
                    served += 1;
                    if !body.resp3 {
                        body.array(2);
                    }
                    body.bulk(key);
                    if history {
                        let After::Id(gt) = after[i] else {
                            unreachable!()
                        };
                        let start = gt.incr().unwrap_or(StreamId::MAX);
                        serve_group_history(&mut body, s, g, c, start, r.count, clock);
                    } else {
                        let fx = GroupFx {
                            db,
                            key,
                            group: g,
                            consumer: c,
                        };
                        serve_group_new(&mut body, s, g, c, r.count, r.noack, clock, &fx);
                    }
                    crate::propagate::mark_dirty();
                }
            }
        }
    }
    if group_cmd {
        crate::propagate::prevent();
    }
    if served > 0 {
        drop(locks);
        if ctx.out.resp3 {
            ctx.out.map(served);
        } else {
            ctx.out.array(served);
        }
        ctx.out.buf.extend_from_slice(&body.buf);
        return;
    }
    let Some(ms) = r.block_ms else {
        drop(locks);
        return ctx.out.null_array();
    };
    if ctx.client.deny_blocking {
        drop(locks);
        return ctx.out.null_array();
    }
    let op = ReadOp {
        keys: keys.iter().map(|k| Box::from(*k)).collect(),
        after: after
            .iter()
            .map(|a| match a {
                After::Id(x) => *x,
                After::New => StreamId::MAX,
            })
            .collect(),
        count: if r.count == 0 {
            BLOCKED_DEFAULT_COUNT
        } else {
            r.count
        },
        group: r.group,
        noack: r.noack,
    };
    let ks = op.keys.clone();
    super::lists::block_on_keys(ctx, &mut locks, ks, Box::new(op), ms);
}

/// XREAD [COUNT count] [BLOCK ms] STREAMS key [key ...] id [id ...].
fn xread(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    read_generic(ctx, args, false)
}

/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK ms] [NOACK]
/// STREAMS key [key ...] id [id ...].
fn xreadgroup(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    read_generic(ctx, args, true)
}

// ---------------------------------------------------------------- XGROUP

fn xgroup_help(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    ctx.out.array(XGROUP_HELP.len());
    for l in XGROUP_HELP {
        ctx.out.simple(l);
    }
}

fn xinfo_help(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    ctx.out.array(XINFO_HELP.len());
    for l in XINFO_HELP {
        ctx.out.simple(l);
    }
}

/// The NOGROUP error of XGROUP / XINFO CONSUMERS.
fn no_such_group(ctx: &mut Ctx<'_>, group: &[u8], key: &[u8]) {
    let mut m = b"NOGROUP No such consumer group '".to_vec();
    m.extend_from_slice(super::c_str(group, usize::MAX));
    m.extend_from_slice(b"' for key name '");
    m.extend_from_slice(super::c_str(key, usize::MAX));
    m.push(b'\'');
    ctx.out.error_bytes(&m);
    ctx.server.stats.record_error("NOGROUP");
    ctx.failed = true;
}

/// XGROUP CREATE | SETID | DESTROY | CREATECONSUMER | DELCONSUMER, in
/// Redis 7.0's order: CREATE / SETID options, the key (its type, its
/// existence unless MKSTREAM), the group for the subcommands that need it,
/// then the subcommand's own arity.
fn xgroup(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let sub = args.get(1).to_ascii_lowercase();
    let argc = args.len();
    let mut mkstream = false;
    let mut entries_read = INVALID_ENTRIES_READ;
    if sub == b"create" || sub == b"setid" {
        let mut i = 5;
        while i < argc {
            let o = args.get(i);
            if sub == b"create" && o.eq_ignore_ascii_case(b"mkstream") {
                mkstream = true;
                i += 1;
            } else if o.eq_ignore_ascii_case(b"entriesread") && i + 1 < argc {
                let Some(n) = arg_i64(ctx, args.get(i + 1)) else {
                    return;
                };
                if n < 0 && n != INVALID_ENTRIES_READ {
                    return ctx.error("ERR value for ENTRIESREAD must be positive or -1");
                }
                entries_read = n;
                i += 2;
            } else {
                return ctx.sub_syntax(args, "XGROUP");
            }
        }
    }
    let key = args.get(2);
    let gname = args.get(3);
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now;
    let clock = stream_clock(ctx);
    let exists = match find(&mut shard, h, key, now) {
        Found::WrongType => {
            drop(shard);
            return ctx.wrongtype();
        }
        Found::Missing => false,
        Found::Stream(_) => true,
    };
    if !mkstream {
        if !exists {
            drop(shard);
            return ctx.error("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.");
        }
        let Found::Stream(e) = find(&mut shard, h, key, now) else {
            unreachable!()
        };
        let has = stream_mut(e).groups.contains_key(gname);
        if !has && (sub == b"setid" || sub == b"createconsumer" || sub == b"delconsumer") {
            drop(shard);
            return no_such_group(ctx, gname, key);
        }
    }
    match &sub[..] {
        b"create" if (5..=8).contains(&argc) => {
            let ida = args.get(4);
            let id = if ida == b"$" {
                match find(&mut shard, h, key, now) {
                    Found::Stream(e) => stream_mut(e).last_id,
                    _ => StreamId::MIN,
                }
            } else {
                match parse_id(ida, 0, true, false) {
                    Some(p) => p.id,
                    None => {
                        drop(shard);
                        return ctx.error(INVALID_ID);
                    }
                }
            };
            if !exists {
                let lru = ctx.server.keyspace.lru.initial(now);
                shard.insert(h, key, Entry::new(Value::Stream(Box::default()), lru));
                ctx.notify(key, NEW, "new");
                ctx.touch_key(key);
            }
            let Found::Stream(e) = find(&mut shard, h, key, now) else {
                unreachable!()
            };
            let s = stream_mut(e);
            if s.groups.contains_key(gname) {
                drop(shard);
                return ctx.error("BUSYGROUP Consumer Group name already exists");
            }
            s.groups.insert(gname.into(), Group::new(id, entries_read));
            drop(shard);
            crate::propagate::mark_dirty();
            ctx.notify(key, STREAM, "xgroup-create");
            ctx.out.ok();
        }
        b"setid" if argc == 5 || argc == 7 => {
            let Found::Stream(e) = find(&mut shard, h, key, now) else {
                unreachable!()
            };
            let s = stream_mut(e);
            let ida = args.get(4);
            let id = if ida == b"$" {
                s.last_id
            } else {
                match parse_id(ida, 0, false, false) {
                    Some(p) => p.id,
                    None => {
                        drop(shard);
                        return ctx.error(INVALID_ID);
                    }
                }
            };
            let g = s.groups.get_mut(gname).expect("checked");
            g.last_id = id;
            g.entries_read = entries_read;
            drop(shard);
            crate::propagate::mark_dirty();
            ctx.notify(key, STREAM, "xgroup-setid");
            ctx.out.ok();
        }
        b"destroy" if argc == 4 => {
            let Found::Stream(e) = find(&mut shard, h, key, now) else {
                unreachable!()
            };
            let removed = stream_mut(e).groups.remove(gname).is_some();
            drop(shard);
            if removed {
                crate::propagate::mark_dirty();
                ctx.notify(key, STREAM, "xgroup-destroy");
                ctx.out.int(1);
                // Its blocked readers get NOGROUP.
                wake(ctx, key);
            } else {
                ctx.dirty = Some(0);
                ctx.out.int(0);
            }
        }
        b"createconsumer" if argc == 5 => {
            let Found::Stream(e) = find(&mut shard, h, key, now) else {
                unreachable!()
            };
            let g = stream_mut(e).groups.get_mut(gname).expect("checked");
            let cname = args.get(4);
            let created = !g.consumers.contains_key(cname);
            if created {
                g.consumers.insert(
                    cname.into(),
                    Consumer {
                        seen_time: clock,
                        active_time: -1,
                        pel: Default::default(),
                    },
                );
            }
            drop(shard);
            if created {
                crate::propagate::mark_dirty();
                ctx.notify(key, STREAM, "xgroup-createconsumer");
            } else {
                ctx.dirty = Some(0);
            }
            ctx.out.int(created as i64);
        }
        b"delconsumer" if argc == 5 => {
            let Found::Stream(e) = find(&mut shard, h, key, now) else {
                unreachable!()
            };
            let g = stream_mut(e).groups.get_mut(gname).expect("checked");
            let cname = args.get(4);
            let pending = match g.consumers.remove(cname) {
                Some(c) => {
                    for id in &c.pel {
                        g.pel.remove(id);
                    }
                    Some(c.pel.len())
                }
                None => None,
            };
            drop(shard);
            if pending.is_some() {
                crate::propagate::mark_dirty();
                ctx.notify(key, STREAM, "xgroup-delconsumer");
            } else {
                ctx.dirty = Some(0);
            }
            ctx.out.int(pending.unwrap_or(0) as i64);
        }
        _ => {
            drop(shard);
            ctx.sub_syntax(args, "XGROUP")
        }
    }
}

// ---------------------------------------------------------------- XACK / XPENDING

/// XACK key group id [id ...]: 0 for a missing key or group; ids checked
/// before any is acknowledged.
fn xack(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let e = match find(&mut shard, h, key, ctx.now) {
        Found::WrongType => {
            drop(shard);
            return ctx.wrongtype();
        }
        Found::Missing => {
            drop(shard);
            ctx.dirty = Some(0);
            return ctx.out.int(0);
        }
        Found::Stream(e) => e,
    };
    let Some(g) = stream_mut(e).groups.get_mut(args.get(2)) else {
        drop(shard);
        ctx.dirty = Some(0);
        return ctx.out.int(0);
    };
    let mut ids = Vec::with_capacity(args.len() - 3);
    for i in 3..args.len() {
        match parse_id(args.get(i), 0, true, false) {
            Some(p) => ids.push(p.id),
            None => {
                drop(shard);
                return ctx.error(INVALID_ID);
            }
        }
    }
    let mut acked = 0u64;
    for id in ids {
        if let Some(n) = g.pel.remove(&id) {
            if let Some(c) = g.consumers.get_mut(&n.consumer) {
                c.pel.remove(&id);
            }
            acked += 1;
        }
    }
    drop(shard);
    if acked > 0 {
        crate::propagate::mark_dirty();
    }
    ctx.dirty = Some(acked);
    ctx.out.int(acked as i64);
}

/// XPENDING key group [[IDLE min-idle] start end count [consumer]].
fn xpending(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let argc = args.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return ctx.syntax();
    }
    let mut minidle: i64 = 0;
    let mut range = None;
    let mut consumer: Option<&[u8]> = None;
    if argc >= 6 {
        let mut at = 3;
        if args.get(3).eq_ignore_ascii_case(b"idle") {
            let Some(n) = arg_i64(ctx, args.get(4)) else {
                return;
            };
            minidle = n;
            if argc < 8 {
                return ctx.syntax();
            }
            at += 2;
        }
        let Some(count) = arg_i64(ctx, args.get(at + 2)) else {
            return;
        };
        let Some(start) = range_start(ctx, args.get(at)) else {
            return;
        };
        let Some(end) = range_end(ctx, args.get(at + 1)) else {
            return;
        };
        if at + 3 < argc {
            consumer = Some(args.get(at + 3));
        }
        range = Some((start, end, count.max(0) as u64));
    }
    let key = args.get(1);
    let gname = args.get(2);
    let now = ctx.now;
    let clock = stream_clock(ctx);
    let (h, mut shard) = ctx.lock(key);
    let found = shard.get(h, key, now);
    let g = match found.map(|e| &e.value) {
        Some(Value::Stream(s)) => s.groups.get(gname),
        Some(_) => {
            drop(shard);
            ctx.hit(key, true);
            return ctx.wrongtype();
        }
        None => None,
    };
    let Some(g) = g else {
        drop(shard);
        return no_key_or_group(ctx, key, gname, b"");
    };
    let out = &mut *ctx.out;
    match range {
        None => {
            out.array(4);
            out.int(g.pel.len() as i64);
            if g.pel.is_empty() {
                out.null();
                out.null();
                out.null_array();
            } else {
                put_id(out, *g.pel.keys().next().expect("non-empty"));
                put_id(out, *g.pel.keys().next_back().expect("non-empty"));
                let with: Vec<(&Box<[u8]>, usize)> = g
                    .consumers
                    .iter()
                    .filter(|(_, c)| !c.pel.is_empty())
                    .map(|(n, c)| (n, c.pel.len()))
                    .collect();
                out.array(with.len());
                for (n, l) in with {
                    out.array(2);
                    out.bulk(n);
                    out.bulk_int(l as i64);
                }
            }
        }
        Some((start, end, mut count)) => {
            let ids: Vec<StreamId> = match consumer {
                Some(c) => match g.consumers.get(c) {
                    Some(c) => c.pel.range(start..).copied().collect(),
                    None => {
                        out.array(0);
                        return;
                    }
                },
                None => g.pel.range(start..).map(|(k, _)| *k).collect(),
            };
            let mut body = Out {
                buf: Vec::new(),
                resp3: out.resp3,
            };
            let mut n = 0;
            for id in ids {
                if count == 0 || id > end {
                    break;
                }
                let nack = &g.pel[&id];
                if minidle != 0 && (clock as i64 - nack.delivery_time as i64) < minidle {
                    continue;
                }
                n += 1;
                count -= 1;
                body.array(4);
                put_id(&mut body, id);
                body.bulk(&nack.consumer);
                body.int((clock as i64 - nack.delivery_time as i64).max(0));
                body.int(nack.delivery_count as i64);
            }
            out.array(n);
            out.buf.extend_from_slice(&body.buf);
        }
    }
}

// ---------------------------------------------------------------- XCLAIM / XAUTOCLAIM

/// The NOGROUP error of XCLAIM / XAUTOCLAIM.
fn no_key_or_group(ctx: &mut Ctx<'_>, key: &[u8], group: &[u8], tail: &[u8]) {
    let mut m = b"NOGROUP No such key '".to_vec();
    m.extend_from_slice(super::c_str(key, usize::MAX));
    m.extend_from_slice(b"' or consumer group '");
    m.extend_from_slice(super::c_str(group, usize::MAX));
    m.push(b'\'');
    m.extend_from_slice(tail);
    ctx.out.error_bytes(&m);
    ctx.server.stats.record_error("NOGROUP");
    ctx.failed = true;
}

/// The shared work of XCLAIM and XAUTOCLAIM: claimed entries written to
/// `body`, each change recorded as an XCLAIM.
struct Claimer<'k> {
    db: usize,
    key: &'k [u8],
    group: &'k [u8],
    consumer: &'k [u8],
    now: u64,
    justid: bool,
    body: Out,
    claimed: usize,
    /// The consumer was looked up (and created when missing).
    seen: bool,
    created: bool,
}

impl Claimer<'_> {
    /// Drops pending entry `id`, whose entry was deleted (recorded as an
    /// XCLAIM, which drops it on replicas too); true when it was pending.
    fn drop_deleted(&mut self, s: &mut StreamValue, id: StreamId) -> bool {
        let g = s.groups.get_mut(self.group).expect("checked");
        let Some(nack) = g.pel.remove(&id) else {
            return false;
        };
        if let Some(c) = g.consumers.get_mut(&nack.consumer) {
            c.pel.remove(&id);
        }
        propagate_xclaim(self.db, self.key, self.group, g.last_id, id, &nack);
        true
    }

    /// Gives pending entry `id` to the consumer (`fresh`: a PEL entry FORCE
    /// just created, owned by no one), sets its delivery time and count
    /// (`retry` >= 0 sets it, else JUSTID keeps it, else it grows) and
    /// writes the reply element.
    fn claim(&mut self, s: &mut StreamValue, id: StreamId, fresh: bool, time: u64, retry: i64) {
        let (cname, now) = (self.consumer, self.now);
        let g = s.groups.get_mut(self.group).expect("checked");
        if !self.seen {
            self.seen = true;
            let (c, created) = g.consumer(cname, now);
            c.seen_time = now;
            self.created = created;
        }
        let old = g.pel.get(&id).map(|n| n.consumer.clone());
        if let Some(old) = old.filter(|o| !fresh && &**o != cname) {
            if let Some(c) = g.consumers.get_mut(&old) {
                c.pel.remove(&id);
            }
        }
        let (c, _) = g.consumer(cname, now);
        c.pel.insert(id);
        c.active_time = now as i64;
        let last = g.last_id;
        let nack = g.pel.get_mut(&id).expect("pending");
        nack.consumer = cname.into();
        nack.delivery_time = time;
        if retry >= 0 {
            nack.delivery_count = retry as u64;
        } else if !self.justid {
            nack.delivery_count += 1;
        }
        propagate_xclaim(self.db, self.key, self.group, last, id, nack);
        if self.justid {
            put_id(&mut self.body, id);
        } else if !put_one(&mut self.body, s, id) {
            self.body.null();
        }
        self.claimed += 1;
    }
}

/// The stream at `key` and whether it has group `group`, for the group
/// commands that refuse a missing key or group with NOGROUP.
enum WithGroup<'s> {
    Found(&'s mut StreamValue),
    WrongType,
    NoGroup,
}

fn with_group<'s>(
    shard: &'s mut crate::db::Shard,
    h: u64,
    key: &[u8],
    group: &[u8],
    now: u64,
) -> WithGroup<'s> {
    match find(shard, h, key, now) {
        Found::WrongType => WithGroup::WrongType,
        Found::Missing => WithGroup::NoGroup,
        Found::Stream(e) => {
            let s = stream_mut(e);
            if s.groups.contains_key(group) {
                WithGroup::Found(s)
            } else {
                WithGroup::NoGroup
            }
        }
    }
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms]
/// [TIME unix-ms] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id].
fn xclaim(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let gname = args.get(2);
    let cname = args.get(3);
    let now = ctx.now;
    let clock = stream_clock(ctx);
    let db = ctx.client.db;
    let (h, mut shard) = ctx.lock(key);
    let s = match with_group(&mut shard, h, key, gname, now) {
        WithGroup::Found(s) => s,
        WithGroup::WrongType => {
            drop(shard);
            return ctx.wrongtype();
        }
        WithGroup::NoGroup => {
            drop(shard);
            return no_key_or_group(ctx, key, gname, b"");
        }
    };
    let minidle = match crate::util::parse_i64(args.get(4)) {
        Some(v) => v.max(0),
        None => {
            drop(shard);
            return ctx.error("ERR Invalid min-idle-time argument for XCLAIM");
        }
    };
    let mut j = 5;
    while j < args.len() && parse_id(args.get(j), 0, true, false).is_some() {
        j += 1;
    }
    let last_id_arg = j;
    let (mut force, mut justid) = (false, false);
    let mut retrycount: i64 = -1;
    let mut deliverytime: i64 = -1;
    let mut last_id = StreamId::MIN;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let o = args.get(j);
        let num = |ctx: &mut Ctx<'_>, what: &str| -> Option<i64> {
            match crate::util::parse_i64(args.get(j + 1)) {
                Some(v) => Some(v),
                None => {
                    ctx.error(&format!("ERR Invalid {what} option argument for XCLAIM"));
                    None
                }
            }
        };
        if o.eq_ignore_ascii_case(b"force") {
            force = true;
        } else if o.eq_ignore_ascii_case(b"justid") {
            justid = true;
        } else if o.eq_ignore_ascii_case(b"idle") && more > 0 {
            let Some(v) = num(ctx, "IDLE") else {
                drop(shard);
                return;
            };
            deliverytime = (clock as i64).wrapping_sub(v);
            j += 1;
        } else if o.eq_ignore_ascii_case(b"time") && more > 0 {
            let Some(v) = num(ctx, "TIME") else {
                drop(shard);
                return;
            };
            deliverytime = v;
            j += 1;
        } else if o.eq_ignore_ascii_case(b"retrycount") && more > 0 {
            let Some(v) = num(ctx, "RETRYCOUNT") else {
                drop(shard);
                return;
            };
            retrycount = v;
            j += 1;
        } else if o.eq_ignore_ascii_case(b"lastid") && more > 0 {
            match parse_id(args.get(j + 1), 0, true, false) {
                Some(p) => last_id = p.id,
                None => {
                    drop(shard);
                    return ctx.error(INVALID_ID);
                }
            }
            j += 1;
        } else {
            drop(shard);
            let mut m = b"ERR Unrecognized XCLAIM option '".to_vec();
            m.extend_from_slice(super::c_str(o, usize::MAX));
            m.push(b'\'');
            ctx.out.error_bytes(&m);
            ctx.server.stats.record_error("ERR");
            ctx.failed = true;
            return;
        }
        j += 1;
    }
    let mut propagate_last = false;
    {
        let g = s.groups.get_mut(gname).expect("checked");
        if last_id > g.last_id {
            g.last_id = last_id;
            propagate_last = true;
        }
    }
    let deliverytime: u64 = if deliverytime != -1 {
        if deliverytime < 0 || deliverytime > clock as i64 {
            clock
        } else {
            deliverytime as u64
        }
    } else {
        clock
    };
    let mut cl = Claimer {
        db,
        key,
        group: gname,
        consumer: cname,
        now: clock,
        justid,
        body: Out {
            buf: Vec::new(),
            resp3: ctx.out.resp3,
        },
        claimed: 0,
        seen: false,
        created: false,
    };
    for i in 5..last_id_arg {
        let id = parse_id(args.get(i), 0, true, false).expect("checked").id;
        if !s.contains(id) {
            if cl.drop_deleted(s, id) {
                propagate_last = false;
            }
            continue;
        }
        let g = s.groups.get_mut(gname).expect("checked");
        let fresh = force && !g.pel.contains_key(&id);
        if fresh {
            g.pel.insert(
                id,
                Nack {
                    delivery_time: clock,
                    delivery_count: 1,
                    consumer: Box::from(&b""[..]),
                },
            );
        }
        let Some(nack) = g.pel.get(&id) else { continue };
        if !fresh && minidle > 0 && (clock as i64 - nack.delivery_time as i64) < minidle {
            continue;
        }
        cl.claim(s, id, fresh, deliverytime, retrycount);
        propagate_last = false;
    }
    if propagate_last {
        propagate_group_id(db, key, gname, &s.groups[gname]);
    }
    drop(shard);
    if cl.created {
        ctx.notify(key, STREAM, "xgroup-createconsumer");
    }
    crate::propagate::prevent();
    ctx.out.array(cl.claimed);
    ctx.out.buf.extend_from_slice(&cl.body.buf);
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count]
/// [JUSTID]: `[next-start, [claimed...], [deleted ids]]`.
fn xautoclaim(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let minidle = match crate::util::parse_i64(args.get(4)) {
        Some(v) => v.max(0),
        None => return ctx.error("ERR Invalid min-idle-time argument for XAUTOCLAIM"),
    };
    let Some(start) = range_start(ctx, args.get(5)) else {
        return;
    };
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let o = args.get(j);
        if o.eq_ignore_ascii_case(b"count") && more > 0 {
            let max = i64::MAX / 16;
            match crate::util::parse_i64(args.get(j + 1)) {
                Some(v) if (1..=max).contains(&v) => count = v,
                _ => return ctx.error("ERR COUNT must be > 0"),
            }
            j += 1;
        } else if o.eq_ignore_ascii_case(b"justid") {
            justid = true;
        } else {
            return ctx.syntax();
        }
        j += 1;
    }
    let key = args.get(1);
    let gname = args.get(2);
    let cname = args.get(3);
    let now = ctx.now;
    let clock = stream_clock(ctx);
    let db = ctx.client.db;
    let (h, mut shard) = ctx.lock(key);
    let s = match with_group(&mut shard, h, key, gname, now) {
        WithGroup::Found(s) => s,
        WithGroup::WrongType => {
            drop(shard);
            return ctx.wrongtype();
        }
        WithGroup::NoGroup => {
            drop(shard);
            return no_key_or_group(ctx, key, gname, b"");
        }
    };
    let mut attempts = count.saturating_mul(10);
    let mut cl = Claimer {
        db,
        key,
        group: gname,
        consumer: cname,
        now: clock,
        justid,
        body: Out {
            buf: Vec::new(),
            resp3: ctx.out.resp3,
        },
        claimed: 0,
        seen: false,
        created: false,
    };
    let mut deleted: Vec<StreamId> = Vec::new();
    let mut cursor = Some(start);
    let next = loop {
        let next = cursor.and_then(|c| {
            let g = &s.groups[gname];
            g.pel.range(c..).next().map(|(k, _)| *k)
        });
        if attempts == 0 || count == 0 {
            break next;
        }
        attempts -= 1;
        let Some(id) = next else { break None };
        // The largest id has no successor: nothing follows it.
        cursor = id.incr();
        if !s.contains(id) {
            cl.drop_deleted(s, id);
            deleted.push(id);
            count -= 1;
            continue;
        }
        let nack = &s.groups[gname].pel[&id];
        if minidle > 0 && (clock as i64 - nack.delivery_time as i64) < minidle {
            continue;
        }
        cl.claim(s, id, false, clock, -1);
        count -= 1;
    };
    drop(shard);
    if cl.created {
        ctx.notify(key, STREAM, "xgroup-createconsumer");
    }
    crate::propagate::prevent();
    let out = &mut *ctx.out;
    out.array(3);
    put_id(out, next.unwrap_or(StreamId::MIN));
    out.array(cl.claimed);
    out.buf.extend_from_slice(&cl.body.buf);
    out.array(deleted.len());
    for id in deleted {
        put_id(out, id);
    }
}

// ---------------------------------------------------------------- XINFO

/// XINFO STREAM | GROUPS | CONSUMERS (HELP has its own handler).
fn xinfo(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let sub = args.get(1).to_ascii_lowercase();
    let key = args.get(2);
    let now = ctx.now;
    let (h, mut shard) = ctx.lock(key);
    let found = shard.get(h, key, now).map(|e| &e.value);
    let s = match found {
        None => {
            drop(shard);
            ctx.hit(key, false);
            return ctx.error(NO_KEY);
        }
        Some(Value::Stream(s)) => {
            ctx.hit(key, true);
            s
        }
        Some(_) => {
            drop(shard);
            ctx.hit(key, true);
            return ctx.wrongtype();
        }
    };
    match &sub[..] {
        b"consumers" if args.len() == 4 => {
            let gname = args.get(3);
            let Some(g) = s.groups.get(gname) else {
                drop(shard);
                return no_such_group(ctx, gname, key);
            };
            let wall = ctx.server.clock.now_ms();
            let out = &mut *ctx.out;
            out.array(g.consumers.len());
            for (name, c) in &g.consumers {
                out.map(4);
                out.bulk(b"name");
                out.bulk(name);
                out.bulk(b"pending");
                out.int(c.pel.len() as i64);
                out.bulk(b"idle");
                out.int((wall as i64 - c.seen_time as i64).max(0));
                out.bulk(b"inactive");
                if c.active_time < 0 {
                    out.int(-1);
                } else {
                    out.int((wall as i64 - c.active_time).max(0));
                }
            }
        }
        b"groups" if args.len() == 3 => {
            let out = &mut *ctx.out;
            out.array(s.groups.len());
            for (name, g) in &s.groups {
                out.map(6);
                out.bulk(b"name");
                out.bulk(name);
                out.bulk(b"consumers");
                out.int(g.consumers.len() as i64);
                out.bulk(b"pending");
                out.int(g.pel.len() as i64);
                out.bulk(b"last-delivered-id");
                put_id(out, g.last_id);
                out.bulk(b"entries-read");
                if g.entries_read != INVALID_ENTRIES_READ {
                    out.int(g.entries_read);
                } else {
                    out.null();
                }
                out.bulk(b"lag");
                match s.group_lag(g) {
                    Some(l) => out.int(l),
                    None => out.null(),
                }
            }
        }
        b"stream" => {
            let opts = args.len() - 3;
            let mut full = false;
            let mut count: i64 = 10;
            if opts > 0 {
                if (opts != 1 && opts != 3) || !args.get(3).eq_ignore_ascii_case(b"full") {
                    drop(shard);
                    return ctx.sub_syntax(args, "XINFO");
                }
                full = true;
                if opts == 3 {
                    if !args.get(4).eq_ignore_ascii_case(b"count") {
                        drop(shard);
                        return ctx.sub_syntax(args, "XINFO");
                    }
                    let Some(c) = arg_i64(ctx, args.get(5)) else {
                        return;
                    };
                    count = if c < 0 { 10 } else { c };
                }
            }
            stream_info(ctx.out, s, full, count as u64);
        }
        _ => {
            drop(shard);
            ctx.sub_syntax(args, "XINFO")
        }
    }
}

/// XINFO STREAM key [FULL [COUNT n]] (`xinfoReplyWithStreamInfo`).
fn stream_info(out: &mut Out, s: &StreamValue, full: bool, count: u64) {
    out.map(if full { 9 } else { 10 });
    out.bulk(b"length");
    out.int(s.length as i64);
    out.bulk(b"radix-tree-keys");
    out.int(s.node_count() as i64);
    out.bulk(b"radix-tree-nodes");
    out.int(s.rax_nodes() as i64);
    out.bulk(b"last-generated-id");
    put_id(out, s.last_id);
    out.bulk(b"max-deleted-entry-id");
    put_id(out, s.max_deleted_id);
    out.bulk(b"entries-added");
    out.int(s.entries_added as i64);
    out.bulk(b"recorded-first-entry-id");
    put_id(out, s.first_id);
    if !full {
        out.bulk(b"groups");
        out.int(s.groups.len() as i64);
        out.bulk(b"first-entry");
        if !first_or_last(out, s, false) {
            out.null();
        }
        out.bulk(b"last-entry");
        if !first_or_last(out, s, true) {
            out.null();
        }
        return;
    }
    out.bulk(b"entries");
    put_range(out, s, StreamId::MIN, StreamId::MAX, count, false);
    out.bulk(b"groups");
    out.array(s.groups.len());
    for (name, g) in &s.groups {
        out.map(7);
        out.bulk(b"name");
        out.bulk(name);
        out.bulk(b"last-delivered-id");
        put_id(out, g.last_id);
        out.bulk(b"entries-read");
        if g.entries_read != INVALID_ENTRIES_READ {
            out.int(g.entries_read);
        } else {
            out.null();
        }
        out.bulk(b"lag");
        match s.group_lag(g) {
            Some(l) => out.int(l),
            None => out.null(),
        }
        out.bulk(b"pel-count");
        out.int(g.pel.len() as i64);
        out.bulk(b"pending");
        let take = if count == 0 {
            usize::MAX
        } else {
            count as usize
        };
        let pend: Vec<_> = g.pel.iter().take(take).collect();
        out.array(pend.len());
        for (id, n) in pend {
            out.array(4);
            put_id(out, *id);
            out.bulk(&n.consumer);
            out.int(n.delivery_time as i64);
            out.int(n.delivery_count as i64);
        }
        out.bulk(b"consumers");
        out.array(g.consumers.len());
        for (cname, c) in &g.consumers {
            out.map(5);
            out.bulk(b"name");
            out.bulk(cname);
            out.bulk(b"seen-time");
            out.int(c.seen_time as i64);
            out.bulk(b"active-time");
            out.int(c.active_time);
            out.bulk(b"pel-count");
            out.int(c.pel.len() as i64);
            out.bulk(b"pending");
            let ids: Vec<_> = c.pel.iter().take(take).collect();
            out.array(ids.len());
            for id in ids {
                let n = &g.pel[id];
                out.array(3);
                put_id(out, *id);
                out.int(n.delivery_time as i64);
                out.int(n.delivery_count as i64);
            }
        }
    }
}

/// Writes the first (or last) entry; false when the stream has none.
fn first_or_last(out: &mut Out, s: &StreamValue, last: bool) -> bool {
    let mut found = false;
    s.range(StreamId::MIN, StreamId::MAX, last, |id, e| {
        put_entry(out, id, &e);
        found = true;
        false
    });
    found
}
