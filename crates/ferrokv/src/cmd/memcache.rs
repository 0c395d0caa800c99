//! memcached's text protocol on the keyspace (memcached 1.6's
//! doc/protocol.txt and proto_text.c): the commands of a memcached
//! connection (net/memcache.rs frames them) run here, on database 0 of the
//! same keyspace RESP clients use. An item is a string key: a value stored
//! with `set` is a string `GET` returns, and the other way round. The
//! item's client flags and CAS unique live in the string itself
//! ([`StrValue::Item`]) only when a client used them, so a plain key costs
//! nothing more. Writes are propagated (AOF, replicas) as the RESP commands
//! with the same effect (`SET key value [PXAT ms]`, `DEL`, `PEXPIREAT`...),
//! touch WATCHers, invalidate tracking clients and emit keyspace events as
//! the equivalent RESP commands do.

pub mod binary;

use super::Ctx;
use crate::db::{Entry, StrValue, Value};
use crate::events::{GENERIC, NEW, STRING};
use crate::resp::{Args, Out};
use std::sync::atomic::Ordering;

/// The memcached version reported by `version` and `stats`: the release
/// whose behaviour ferrokv follows.
pub const MEMCACHED_VERSION: &str = "1.6.18";

/// Longest key memcached accepts (KEY_MAX_LENGTH).
pub const KEY_MAX_LENGTH: usize = 250;

/// exptime values up to this many seconds are relative to now; larger
/// ones are absolute Unix times (REALTIME_MAXDELTA, 30 days).
const REALTIME_MAXDELTA: i64 = 60 * 60 * 24 * 30;

/// What a memcached command works on: its connection's parts (built by
/// the memcached codec, net/memcache.rs, from its session).
pub struct Conn<'a> {
    /// The server.
    pub server: &'a std::sync::Arc<crate::server::Server>,
    /// The connection's client state (database 0, authentication).
    pub client: &'a mut crate::cmd::client::Client,
    /// The connection's output buffer.
    pub out: &'a mut Out,
    /// This thread's statistics.
    pub stats: &'a crate::stats::ThreadStats,
    /// Database 0.
    pub db: &'a crate::db::keyspace::Db,
}

/// Server-wide memcached state (`Server::memcache`): defined with the
/// items it numbers (db/value.rs), below the server.
pub use crate::db::value::ItemState as State;

/// Per-thread counters of `stats` (ThreadStats::mc), by index.
pub mod counter {
    /// cmd_get: keys looked up by get/gets/gat/gats.
    pub const CMD_GET: usize = 0;
    /// cmd_set: storage commands.
    pub const CMD_SET: usize = 1;
    /// cmd_flush.
    pub const CMD_FLUSH: usize = 2;
    /// cmd_touch.
    pub const CMD_TOUCH: usize = 3;
    /// get_hits.
    pub const GET_HITS: usize = 4;
    /// get_misses.
    pub const GET_MISSES: usize = 5;
    /// delete_misses.
    pub const DELETE_MISSES: usize = 6;
    /// delete_hits.
    pub const DELETE_HITS: usize = 7;
    /// incr_misses.
    pub const INCR_MISSES: usize = 8;
    /// incr_hits.
    pub const INCR_HITS: usize = 9;
    /// decr_misses.
    pub const DECR_MISSES: usize = 10;
    /// decr_hits.
    pub const DECR_HITS: usize = 11;
    /// cas_misses.
    pub const CAS_MISSES: usize = 12;
    /// cas_hits.
    pub const CAS_HITS: usize = 13;
    /// cas_badval.
    pub const CAS_BADVAL: usize = 14;
    /// touch_hits.
    pub const TOUCH_HITS: usize = 15;
    /// touch_misses.
    pub const TOUCH_MISSES: usize = 16;
    /// store_too_large.
    pub const STORE_TOO_LARGE: usize = 17;
    /// store_no_memory.
    pub const STORE_NO_MEMORY: usize = 18;
    /// auth_cmds.
    pub const AUTH_CMDS: usize = 19;
    /// auth_errors.
    pub const AUTH_ERRORS: usize = 20;
    /// cmd_meta: meta commands.
    pub const CMD_META: usize = 21;
    /// get_expired: gets that found an item expired.
    pub const GET_EXPIRED: usize = 22;
    /// Number of counters (the size of `ThreadStats::mc`).
    pub const COUNT: usize = crate::stats::MC_COUNTERS;
}

/// What the connection must do after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum After {
    /// Go on.
    #[default]
    Continue,
    /// Discard this many bytes of input: the data block of a refused
    /// storage command (memcached's conn_swallow).
    Swallow(usize),
    /// Close the connection (quit).
    Close,
}

/// Storage commands (memcached's NREAD_*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// set.
    Set,
    /// add: only when absent.
    Add,
    /// replace: only when present.
    Replace,
    /// append: data after the item's.
    Append,
    /// prepend: data before the item's.
    Prepend,
    /// cas: set when the item's CAS unique matches.
    Cas,
}

impl Store {
    /// The storage command named `w`.
    pub fn of(w: &[u8]) -> Option<Store> {
        Some(match w {
            b"set" => Store::Set,
            b"add" => Store::Add,
            b"replace" => Store::Replace,
            b"append" => Store::Append,
            b"prepend" => Store::Prepend,
            b"cas" => Store::Cas,
            _ => return None,
        })
    }
}

/// Splits a command line into tokens on spaces (memcached's
/// `tokenize_command`: runs of spaces separate, nothing else does).
pub fn tokens(line: &[u8]) -> impl Iterator<Item = &[u8]> + Clone {
    line.split(|&b| b == b' ').filter(|t| !t.is_empty())
}

/// memcached's `safe_strtoul` on a 32-bit value: decimal digits only
/// (leading whitespace and a `+` as strtoul allows), within u32.
pub fn parse_u32(t: &[u8]) -> Option<u32> {
    parse_u64(t).and_then(|v| u32::try_from(v).ok())
}

/// memcached's `safe_strtoul` into a 32-bit flags word on a 64-bit host:
/// an unsigned long (below 2^63), truncated to its low 32 bits.
pub fn parse_flags(t: &[u8]) -> Option<u32> {
    parse_u64(t).filter(|v| *v < 1 << 63).map(|v| v as u32)
}

/// C's `isspace` in the "C" locale.
#[inline]
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// C's `strtoll`/`strtoull` as memcached's `safe_strto*` use them: leading
/// whitespace, a sign, decimal digits; the number must be followed by the
/// end of the token or whitespace (what comes after is ignored). Returns
/// (negative, magnitude); None when there are no digits, something else
/// follows, or the magnitude exceeds u64 (ERANGE).
fn c_strto(t: &[u8]) -> Option<(bool, u64)> {
    let lead = t.iter().take_while(|b| is_c_space(**b)).count();
    let t = &t[lead..];
    let (neg, d) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let end = d
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(d.len());
    if end == 0 || (end < d.len() && !is_c_space(d[end])) {
        return None;
    }
    let mut v: u64 = 0;
    for &c in &d[..end] {
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some((neg, v))
}

/// memcached's `safe_strtoull`: an unsigned 64-bit value; a negative one
/// is refused (except -0).
pub fn parse_u64(t: &[u8]) -> Option<u64> {
    match c_strto(t)? {
        (false, v) => Some(v),
        (true, 0) => Some(0),
        (true, _) => None,
    }
}

/// memcached's `safe_strtol` as 1.6.18 has it: a `long` (64-bit) stored
/// into an `int32_t` (so 4294967296 reads as 0 and 2147483648 as
/// -2147483648).
pub fn parse_i32(t: &[u8]) -> Option<i32> {
    let (neg, v) = c_strto(t)?;
    if v > i64::MAX as u64 + neg as u64 {
        return None;
    }
    let v = if neg {
        (v as i64).wrapping_neg()
    } else {
        v as i64
    };
    Some(v as i32)
}

/// An item's expiry from memcached's `exptime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// Never (exptime 0).
    Never,
    /// At this time, ms since the epoch.
    At(u64),
    /// Expired at once (negative, or an absolute time not in the future).
    Now,
}

/// The expiry of memcached's `exptime` (seconds): up to 30 days it is
/// relative to `now_ms`, beyond an absolute Unix time (memcached's
/// `realtime`).
pub fn expiry(exptime: i64, now_ms: u64) -> Expiry {
    if exptime == 0 {
        return Expiry::Never;
    }
    if exptime < 0 {
        return Expiry::Now;
    }
    if exptime > REALTIME_MAXDELTA {
        let at = exptime as u64 * 1000;
        if at <= now_ms {
            return Expiry::Now;
        }
        return Expiry::At(at);
    }
    Expiry::At(now_ms + exptime as u64 * 1000)
}

/// The command layer's view of a memcached connection's command: a
/// [`Ctx`] on database 0.
fn ctx<'a>(s: &'a mut Conn<'_>, now: u64) -> Ctx<'a> {
    Ctx {
        server: s.server,
        client: s.client,
        out: s.out,
        now,
        stats: s.stats,
        failed: false,
        dirty: None,
    }
}

/// The ACL check of a memcached command, as the RESP command with the
/// same effect (`argv`: GET, SET, DEL, INCRBY, EXPIRE, FLUSHDB, INFO...)
/// would be checked for the connection's user. Some(error line) when the
/// user may not run it; None without ACL restrictions.
fn acl_denied(s: &mut Conn<'_>, argv: &[&[u8]]) -> Option<Vec<u8>> {
    if !s.server.acl.restricted.load(Ordering::Relaxed) {
        return None;
    }
    let t = super::table();
    let id = t.lookup(argv[0])?;
    let c = t.all[id];
    let (base, ranges) = flatten(argv);
    let args = Args::new(&base, &ranges);
    match super::acl_check(s.server, s.client, c, id, &args) {
        Ok(()) => None,
        Err(msg) => {
            let mut line = b"CLIENT_ERROR ".to_vec();
            line.extend_from_slice(msg.as_bytes());
            Some(line)
        }
    }
}

/// `argv` as one buffer and the (start, end) of each argument in it, the
/// shape [`Args::new`] takes.
fn flatten(argv: &[&[u8]]) -> (Vec<u8>, Vec<(u32, u32)>) {
    let mut base = Vec::new();
    let mut ranges = Vec::with_capacity(argv.len());
    for a in argv {
        let start = base.len() as u32;
        base.extend_from_slice(a);
        ranges.push((start, base.len() as u32));
    }
    (base, ranges)
}

/// Answers an ACL refusal ([`acl_denied`]): true when refused.
fn refused(s: &mut Conn<'_>, argv: &[&[u8]]) -> bool {
    match acl_denied(s, argv) {
        Some(line) => {
            reply(s.out, false, &line);
            true
        }
        None => false,
    }
}

/// Bumps counter `i` of this thread.
#[inline]
pub fn count(s: &Conn<'_>, i: usize) {
    crate::stats::bump(&s.stats.mc[i], 1);
}

/// Writes `text` and CRLF, unless the command said `noreply`.
#[inline]
fn reply(out: &mut Out, noreply: bool, text: &[u8]) {
    if !noreply {
        out.buf.extend_from_slice(text);
        out.buf.extend_from_slice(b"\r\n");
    }
}

/// Runs one write command: inside a propagation command context (its
/// records stated with `propagate::rewrite`).
fn write_command<R>(s: &mut Conn<'_>, f: impl FnOnce(&mut Conn<'_>) -> R) -> R {
    let prop = s.server.propagation.on();
    if prop {
        s.server.propagation.begin_command();
    }
    let r = f(s);
    if prop {
        s.server.propagation.end_command(0, &Args::new(&[], &[]));
    }
    if crate::events::pending() {
        crate::events::drain(&**s.server);
    }
    r
}

/// Executes one text-protocol command line (`line`, without its line end)
/// and, for a storage command, its data block (`data`, with its CRLF).
/// Replies go to `s.out`. Returns what the connection must do next.
pub fn execute_line(s: &mut Conn<'_>, line: &[u8], data: Option<&[u8]>) -> After {
    let mut toks = tokens(line);
    let Some(cmd) = toks.next() else {
        reply(s.out, false, b"ERROR");
        return After::Continue;
    };
    let now = s.server.clock.now_ms();
    if s.server.acl.restricted.load(Ordering::Relaxed) && !text_acl_ok(s, cmd, line) {
        return After::Continue;
    }
    match cmd {
        b"get" | b"gets" => {
            let cas = cmd == b"gets";
            retrieve(s, toks, None, cas, now);
        }
        b"gat" | b"gats" => {
            let cas = cmd == b"gats";
            let Some(exp) = toks.next() else {
                reply(s.out, false, b"ERROR");
                return After::Continue;
            };
            let Some(exptime) = parse_i32(exp) else {
                reply(s.out, false, b"CLIENT_ERROR invalid exptime argument");
                return After::Continue;
            };
            if toks.clone().next().is_none() {
                s.out.buf.extend_from_slice(b"END\r\n");
                return After::Continue;
            }
            retrieve(s, toks, Some(exptime as i64), cas, now);
        }
        _ if Store::of(cmd).is_some() => {
            let kind = Store::of(cmd).unwrap_or(Store::Set);
            return store(s, kind, line, data, now);
        }
        b"delete" => delete(s, toks, now),
        b"incr" | b"decr" => arith(s, cmd == b"incr", toks, now),
        b"touch" => touch_cmd(s, toks, now),
        b"flush_all" => flush_all(s, toks, now),
        b"version" => {
            s.out.buf.extend_from_slice(b"VERSION ");
            s.out.buf.extend_from_slice(MEMCACHED_VERSION.as_bytes());
            s.out.buf.extend_from_slice(b"\r\n");
        }
        b"verbosity" => {
            let args: Vec<&[u8]> = toks.collect();
            let noreply = args.last() == Some(&&b"noreply"[..]);
            match args.first() {
                None => reply(s.out, false, b"ERROR"),
                Some(_) if args.len() > 2 => reply(s.out, false, b"ERROR"),
                Some(level) if parse_u32(level).is_some() => reply(s.out, noreply, b"OK"),
                Some(_) => reply(s.out, noreply, b"CLIENT_ERROR bad command line format"),
            }
        }
        b"quit" => return After::Close,
        b"stats" => stats(s, toks, now),
        b"mg" | b"ms" | b"md" | b"ma" | b"mn" | b"me" => return execute_meta(s, line, data),
        _ => reply(s.out, false, b"ERROR"),
    }
    After::Continue
}

/// The ACL check of a text command line for a restricted user (each key
/// as the RESP command of the same effect); false once refused.
fn text_acl_ok(s: &mut Conn<'_>, cmd: &[u8], line: &[u8]) -> bool {
    let toks: Vec<&[u8]> = tokens(line).collect();
    let keyed = |s: &mut Conn<'_>, verb: &[u8], keys: &[&[u8]], extra: &[&[u8]]| {
        keys.iter().all(|k| {
            let mut argv: Vec<&[u8]> = vec![verb, k];
            argv.extend_from_slice(extra);
            !refused(s, &argv)
        })
    };
    match cmd {
        b"get" | b"gets" => keyed(s, b"GET", &toks[1..], &[]),
        b"gat" | b"gats" => {
            let keys = toks.get(2..).unwrap_or_default();
            keyed(s, b"GETEX", keys, &[b"PERSIST"])
        }
        b"set" | b"add" | b"replace" | b"cas" => {
            keyed(s, b"SET", &toks[1..toks.len().min(2)], &[b"v"])
        }
        b"append" | b"prepend" => keyed(s, b"APPEND", &toks[1..toks.len().min(2)], &[b"v"]),
        b"delete" => keyed(s, b"DEL", &toks[1..toks.len().min(2)], &[]),
        b"incr" | b"decr" => keyed(s, b"INCRBY", &toks[1..toks.len().min(2)], &[b"1"]),
        b"touch" => keyed(s, b"EXPIRE", &toks[1..toks.len().min(2)], &[b"1"]),
        b"flush_all" => !refused(s, &[b"FLUSHDB"]),
        b"stats" => !refused(s, &[b"INFO"]),
        b"mg" | b"me" | b"ms" | b"md" | b"ma" => {
            let Some(raw) = toks.get(1) else {
                return true;
            };
            // A base64 key is checked as the key it names.
            let b = toks[2..].iter().any(|t| t.first() == Some(&b'b'));
            let Ok(key) = meta_key(raw, b) else {
                return true;
            };
            let (verb, extra): (&[u8], &[&[u8]]) = match cmd {
                b"ms" => (b"SET", &[b"v"]),
                b"md" => (b"DEL", &[]),
                b"ma" => (b"INCRBY", &[b"1"]),
                _ => (b"GET", &[]),
            };
            // mg may create the key (N): it needs SET too.
            let vivify = cmd == b"mg" && toks[2..].iter().any(|t| t.first() == Some(&b'N'));
            keyed(s, verb, &[&key], extra) && (!vivify || keyed(s, b"SET", &[&key], &[b"v"]))
        }
        _ => true,
    }
}

/// get / gets / gat / gats (memcached's process_get_command).
fn retrieve<'t>(
    s: &mut Conn<'_>,
    keys: impl Iterator<Item = &'t [u8]> + Clone,
    touch: Option<i64>,
    cas: bool,
    now: u64,
) {
    if keys.clone().next().is_none() {
        reply(s.out, false, b"ERROR");
        return;
    }
    let start = s.out.buf.len();
    for key in keys {
        if key.len() > KEY_MAX_LENGTH {
            s.out.buf.truncate(start);
            reply(s.out, false, b"CLIENT_ERROR bad command line format");
            return;
        }
        count(s, counter::CMD_GET);
        if touch.is_some() {
            count(s, counter::CMD_TOUCH);
        }
        let found = match touch {
            None => get_one(s, key, cas, now),
            Some(exptime) => write_command(s, |s| gat_one(s, key, exptime, cas, now)),
        };
        if found {
            count(s, counter::GET_HITS);
            if touch.is_some() {
                count(s, counter::TOUCH_HITS);
            }
        } else {
            count(s, counter::GET_MISSES);
            if touch.is_some() {
                count(s, counter::TOUCH_MISSES);
            }
        }
    }
    s.out.buf.extend_from_slice(b"END\r\n");
}

/// Writes `VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n`.
fn value_line(out: &mut Out, key: &[u8], v: &StrValue, flags: u32, cas: Option<u64>) {
    let mut t = itoa::Buffer::new();
    let data = v.as_bytes(&mut t);
    let mut n = itoa::Buffer::new();
    let b = &mut out.buf;
    b.reserve(data.len() + key.len() + 48);
    b.extend_from_slice(b"VALUE ");
    b.extend_from_slice(key);
    b.push(b' ');
    b.extend_from_slice(n.format(flags).as_bytes());
    b.push(b' ');
    b.extend_from_slice(n.format(data.len()).as_bytes());
    if let Some(c) = cas {
        b.push(b' ');
        b.extend_from_slice(n.format(c).as_bytes());
    }
    b.extend_from_slice(b"\r\n");
    b.extend_from_slice(data);
    b.extend_from_slice(b"\r\n");
}

/// The CAS unique of a string, assigned (and stored) when it has none.
pub fn cas_of(state: &State, v: &mut StrValue) -> u64 {
    let (_, cas) = v.item_meta();
    if cas != 0 {
        return cas;
    }
    let it = v.to_item();
    it.cas = state.next_cas();
    it.cas
}

/// One key of get / gets: true when found (a string).
fn get_one(s: &mut Conn<'_>, key: &[u8], cas: bool, now: u64) -> bool {
    let c = ctx(s, now);
    let (h, mut shard) = c.lock(key);
    let t = c.touch_time();
    match shard.get(h, key, now) {
        Some(e) => {
            if let Some(t) = t {
                t.record(&mut e.lru);
            }
            let Value::Str(v) = &mut e.value else {
                drop(shard);
                c.hit(key, false);
                return false;
            };
            let (flags, _) = v.item_meta();
            let unique = cas.then(|| cas_of(&c.server.memcache, v));
            value_line(c.out, key, v, flags, unique);
            // Recorded for the meta `h` flag of later fetches.
            v.to_item().bits |= crate::db::value::Item::FETCHED;
            drop(shard);
            c.hit(key, true);
            true
        }
        None => {
            drop(shard);
            c.hit(key, false);
            false
        }
    }
}

/// One key of gat / gats: found items get the new expiry.
fn gat_one(s: &mut Conn<'_>, key: &[u8], exptime: i64, cas: bool, now: u64) -> bool {
    let c = ctx(s, now);
    let (h, mut shard) = c.lock(key);
    let t = c.touch_time();
    let Some(e) = shard.get(h, key, now) else {
        drop(shard);
        c.hit(key, false);
        return false;
    };
    if let Some(t) = t {
        t.record(&mut e.lru);
    }
    let Value::Str(v) = &mut e.value else {
        drop(shard);
        c.hit(key, false);
        return false;
    };
    let (flags, _) = v.item_meta();
    let unique = cas.then(|| cas_of(&c.server.memcache, v));
    value_line(c.out, key, v, flags, unique);
    // Recorded for the meta `h` flag of later fetches (a plain string
    // becomes an item, as memcached marks every item it serves).
    v.to_item().bits |= crate::db::value::Item::FETCHED;
    apply_expiry(&c, &mut shard, h, key, exptime, now);
    drop(shard);
    c.hit(key, true);
    true
}

/// Sets the expiry of an existing key from memcached's `exptime`
/// (deleting it when that is in the past), with its propagation and
/// events, as PEXPIREAT / PERSIST / DEL.
fn apply_expiry(
    c: &Ctx<'_>,
    shard: &mut crate::db::Shard,
    h: u64,
    key: &[u8],
    exptime: i64,
    now: u64,
) {
    set_expiry(c, shard, h, key, expiry(exptime, now));
}

/// [`apply_expiry`] with the expiry already worked out.
fn set_expiry(c: &Ctx<'_>, shard: &mut crate::db::Shard, h: u64, key: &[u8], exp: Expiry) {
    match exp {
        Expiry::Never => {
            if shard.expire_at(h, key) != 0 {
                shard.set_expire(h, key, 0);
                crate::propagate::rewrite(&[b"PERSIST", key]);
                c.modified(key, GENERIC, "persist");
            }
        }
        Expiry::At(at) => {
            shard.set_expire(h, key, at);
            let ms = itoa::Buffer::new().format(at).to_string();
            crate::propagate::rewrite(&[b"PEXPIREAT", key, ms.as_bytes()]);
            c.modified(key, GENERIC, "expire");
        }
        Expiry::Now => {
            shard.remove(h, key);
            crate::propagate::rewrite(&[b"DEL", key]);
            c.modified(key, GENERIC, "del");
        }
    }
}

/// set / add / replace / append / prepend / cas (memcached's
/// process_update_command + complete_nread_ascii + do_store_item).
fn store(s: &mut Conn<'_>, kind: Store, line: &[u8], data: Option<&[u8]>, now: u64) -> After {
    let toks: Vec<&[u8]> = tokens(line).collect();
    let want = if kind == Store::Cas { 6 } else { 5 };
    if toks.len() != want && toks.len() != want + 1 {
        reply(s.out, false, b"ERROR");
        return After::Continue;
    }
    let noreply = toks.last() == Some(&&b"noreply"[..]);
    let key = toks[1];
    if key.len() > KEY_MAX_LENGTH {
        reply(s.out, noreply, b"CLIENT_ERROR bad command line format");
        return After::Continue;
    }
    let (Some(flags), Some(exptime), Some(vlen)) =
        (parse_flags(toks[2]), parse_i32(toks[3]), parse_i32(toks[4]))
    else {
        reply(s.out, noreply, b"CLIENT_ERROR bad command line format");
        return After::Continue;
    };
    let req_cas = if kind == Store::Cas {
        match parse_u64(toks[5]) {
            Some(c) => c,
            None => {
                reply(s.out, noreply, b"CLIENT_ERROR bad command line format");
                return After::Continue;
            }
        }
    } else {
        0
    };
    if vlen < 0 {
        reply(s.out, noreply, b"CLIENT_ERROR bad command line format");
        return After::Continue;
    }
    let Some(data) = data else {
        // Too large: the codec did not collect the data block.
        count(s, counter::CMD_SET);
        count(s, counter::STORE_TOO_LARGE);
        reply(s.out, noreply, b"SERVER_ERROR object too large for cache");
        if kind == Store::Set {
            // memcached unlinks the old item so no stale value remains.
            write_command(s, |s| delete_key(s, key, now));
        }
        return After::Swallow(vlen as usize + 2);
    };
    count(s, counter::CMD_SET);
    if data.len() < 2 || &data[data.len() - 2..] != b"\r\n" {
        reply(s.out, noreply, b"CLIENT_ERROR bad data chunk");
        return After::Continue;
    }
    let value = &data[..data.len() - 2];
    if s.server.evict.maxmemory() != 0
        && !s.server.scripts.busy()
        && crate::evict::perform(&s.server.evict_env()) == crate::evict::Outcome::Fail
    {
        count(s, counter::STORE_NO_MEMORY);
        reply(s.out, noreply, b"SERVER_ERROR out of memory storing object");
        return After::Continue;
    }
    let text = write_command(s, |s| {
        store_item(s, kind, key, flags, exptime as i64, req_cas, value, now)
    });
    reply(s.out, noreply, text);
    After::Continue
}

/// Stores one item; the reply line.
#[allow(clippy::too_many_arguments)]
fn store_item(
    s: &mut Conn<'_>,
    kind: Store,
    key: &[u8],
    flags: u32,
    exptime: i64,
    req_cas: u64,
    value: &[u8],
    now: u64,
) -> &'static [u8] {
    let c = ctx(s, now);
    let (h, mut shard) = c.lock(key);
    let expires = expiry(exptime, now);
    let existing = shard.get(h, key, now);
    let found = existing.is_some();
    let mut old: Option<Vec<u8>> = None;
    let mut old_flags = 0;
    match existing {
        Some(e) => match &mut e.value {
            Value::Str(v) => {
                let (f, cas) = v.item_meta();
                old_flags = f;
                if kind == Store::Cas {
                    if cas == 0 || cas != req_cas {
                        drop(shard);
                        count_of(&c, counter::CAS_BADVAL);
                        return b"EXISTS";
                    }
                    count_of(&c, counter::CAS_HITS);
                }
                if matches!(kind, Store::Append | Store::Prepend) {
                    old = Some(v.to_vec());
                }
            }
            _ => {
                if matches!(kind, Store::Append | Store::Prepend | Store::Cas) {
                    drop(shard);
                    return b"NOT_STORED";
                }
            }
        },
        None => {
            if kind == Store::Cas {
                drop(shard);
                count_of(&c, counter::CAS_MISSES);
                return b"NOT_FOUND";
            }
        }
    }
    match kind {
        Store::Add if found => {
            // memcached bumps the existing item's access time.
            drop(shard);
            return b"NOT_STORED";
        }
        Store::Replace | Store::Append | Store::Prepend if !found => {
            drop(shard);
            return b"NOT_STORED";
        }
        _ => {}
    }
    let joined;
    let (bytes, flags): (&[u8], u32) = match (kind, &old) {
        (Store::Append, Some(o)) => {
            joined = [o.as_slice(), value].concat();
            (&joined, old_flags)
        }
        (Store::Prepend, Some(o)) => {
            joined = [value, o.as_slice()].concat();
            (&joined, old_flags)
        }
        _ => (value, flags),
    };
    c.server
        .memcache
        .total_items
        .fetch_add(1, Ordering::Relaxed);
    if matches!(kind, Store::Append | Store::Prepend) {
        // The item keeps its flags and expiry; a new CAS.
        let Some(e) = shard.get(h, key, now) else {
            return b"NOT_STORED";
        };
        e.value = Value::Str(StrValue::item(bytes, flags, 0));
        drop(shard);
        crate::propagate::rewrite(&[b"SET", key, bytes, b"KEEPTTL"]);
        c.modified(
            key,
            STRING,
            if kind == Store::Append {
                "append"
            } else {
                "setrange"
            },
        );
        return b"STORED";
    }
    let at = match expires {
        Expiry::Never => 0,
        Expiry::At(at) => at,
        Expiry::Now => {
            // Stored and expired at once: nothing remains.
            if found {
                shard.remove(h, key);
                drop(shard);
                crate::propagate::rewrite(&[b"DEL", key]);
                c.modified(key, GENERIC, "del");
            }
            return b"STORED";
        }
    };
    let entry = Entry::new(
        Value::Str(StrValue::item(bytes, flags, 0)),
        c.server.keyspace.lru.initial(now),
    );
    shard.insert_with_expire(h, key, entry, at);
    drop(shard);
    propagate_set(key, bytes, at);
    if !found {
        c.notify(key, NEW, "new");
    }
    c.modified(key, STRING, "set");
    if at != 0 {
        c.notify(key, GENERIC, "expire");
    }
    b"STORED"
}

/// States a store's record: `SET key value`, with `PXAT at` when `at`
/// (ms since the epoch) is not 0.
fn propagate_set(key: &[u8], value: &[u8], at: u64) {
    if at != 0 {
        let ms = itoa::Buffer::new().format(at).to_string();
        crate::propagate::rewrite(&[b"SET", key, value, b"PXAT", ms.as_bytes()]);
    } else {
        crate::propagate::rewrite(&[b"SET", key, value]);
    }
}

/// Bumps counter `i` of the context's thread.
#[inline]
fn count_of(c: &Ctx<'_>, i: usize) {
    crate::stats::bump(&c.stats.mc[i], 1);
}

/// Deletes `key`: true when it existed.
fn delete_key(s: &mut Conn<'_>, key: &[u8], now: u64) -> bool {
    let c = ctx(s, now);
    let (h, mut shard) = c.lock(key);
    let found = shard.get(h, key, now).is_some();
    if found {
        shard.remove(h, key);
    }
    drop(shard);
    if found {
        crate::propagate::rewrite(&[b"DEL", key]);
        c.modified(key, GENERIC, "del");
    }
    found
}

/// delete <key> [0] [noreply] (memcached's process_delete_command).
fn delete<'t>(s: &mut Conn<'_>, toks: impl Iterator<Item = &'t [u8]>, now: u64) {
    let args: Vec<&[u8]> = toks.collect();
    let Some(&key) = args.first().filter(|_| args.len() <= 3) else {
        reply(s.out, false, b"ERROR");
        return;
    };
    let noreply = args.len() > 1 && args.last() == Some(&&b"noreply"[..]);
    let extra = args.len() - 1 - noreply as usize;
    // "delete <key> 0" is accepted (an old form); any other extra word is
    // refused with the usage line.
    if extra > 1 || (extra == 1 && args[1] != b"0") {
        reply(
            s.out,
            noreply,
            b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]",
        );
        return;
    }
    if key.len() > KEY_MAX_LENGTH {
        reply(s.out, noreply, b"CLIENT_ERROR bad command line format");
        return;
    }
    let found = write_command(s, |s| delete_key(s, key, now));
    if found {
        count(s, counter::DELETE_HITS);
        reply(s.out, noreply, b"DELETED");
    } else {
        count(s, counter::DELETE_MISSES);
        reply(s.out, noreply, b"NOT_FOUND");
    }
}

/// The result of incr / decr on an item.
pub enum Delta {
    /// The new value (its text), and whether it outgrew the old value
    /// (memcached then stores a new item instead of rewriting in place).
    Ok(Vec<u8>, bool),
    /// No such item.
    NotFound,
    /// The item is not a number.
    NonNumeric,
}

/// incr / decr on `key` by `delta` (memcached's do_add_delta): incr wraps
/// around at 2^64, decr stops at 0. A result shorter than the old value is
/// padded with spaces to the old length, as memcached rewrites the item in
/// place. The item keeps its flags and expiry.
pub fn add_delta(s: &mut Conn<'_>, key: &[u8], incr: bool, delta: u64, now: u64) -> Delta {
    let c = ctx(s, now);
    let (h, mut shard) = c.lock(key);
    let Some(e) = shard.get(h, key, now) else {
        return Delta::NotFound;
    };
    let Value::Str(v) = &mut e.value else {
        return Delta::NonNumeric;
    };
    let mut t = itoa::Buffer::new();
    let cur = v.as_bytes(&mut t);
    let Some(n) = strtoull(cur) else {
        return Delta::NonNumeric;
    };
    let new = if incr {
        n.wrapping_add(delta)
    } else {
        n.saturating_sub(delta)
    };
    let mut text = itoa::Buffer::new().format(new).as_bytes().to_vec();
    let reply = text.clone();
    // A result that fits is written over the old value, padded with
    // spaces to its length (memcached rewrites the item in place).
    let grew = text.len() > cur.len();
    if text.len() < cur.len() {
        text.resize(cur.len(), b' ');
    }
    let (flags, _) = v.item_meta();
    // Rewritten in place, the item keeps its state bits (stale...); a
    // longer result is a new item. Either way a new CAS.
    let bits = if grew { 0 } else { v.item_bits() };
    *v = StrValue::item(&text, flags, 0);
    if bits != 0 {
        v.to_item().bits = bits;
    }
    drop(shard);
    crate::propagate::rewrite(&[b"SET", key, &text, b"KEEPTTL"]);
    c.modified(key, STRING, if incr { "incrby" } else { "decrby" });
    Delta::Ok(reply, grew)
}

/// memcached's `safe_strtoull` on an item's data (which ends at a NUL as
/// a C string does).
fn strtoull(d: &[u8]) -> Option<u64> {
    let d = match d.iter().position(|&b| b == 0) {
        Some(z) => &d[..z],
        None => d,
    };
    parse_u64(d)
}

/// incr / decr <key> <value> [noreply].
fn arith<'t>(s: &mut Conn<'_>, incr: bool, toks: impl Iterator<Item = &'t [u8]>, now: u64) {
    let args: Vec<&[u8]> = toks.collect();
    if args.len() != 2 && args.len() != 3 {
        reply(s.out, false, b"ERROR");
        return;
    }
    let noreply = args.last() == Some(&&b"noreply"[..]);
    let key = args[0];
    if key.len() > KEY_MAX_LENGTH {
        reply(s.out, noreply, b"CLIENT_ERROR bad command line format");
        return;
    }
    let Some(delta) = parse_u64(args[1]) else {
        reply(
            s.out,
            noreply,
            b"CLIENT_ERROR invalid numeric delta argument",
        );
        return;
    };
    match write_command(s, |s| add_delta(s, key, incr, delta, now)) {
        Delta::Ok(v, _) => {
            count(
                s,
                if incr {
                    counter::INCR_HITS
                } else {
                    counter::DECR_HITS
                },
            );
            reply(s.out, noreply, &v);
        }
        Delta::NotFound => {
            count(
                s,
                if incr {
                    counter::INCR_MISSES
                } else {
                    counter::DECR_MISSES
                },
            );
            reply(s.out, noreply, b"NOT_FOUND");
        }
        Delta::NonNumeric => reply(
            s.out,
            noreply,
            b"CLIENT_ERROR cannot increment or decrement non-numeric value",
        ),
    }
}

/// touch <key> <exptime> [noreply].
fn touch_cmd<'t>(s: &mut Conn<'_>, toks: impl Iterator<Item = &'t [u8]>, now: u64) {
    let args: Vec<&[u8]> = toks.collect();
    if args.len() != 2 && args.len() != 3 {
        reply(s.out, false, b"ERROR");
        return;
    }
    let noreply = args.last() == Some(&&b"noreply"[..]);
    let key = args[0];
    if key.len() > KEY_MAX_LENGTH {
        reply(s.out, noreply, b"CLIENT_ERROR bad command line format");
        return;
    }
    let Some(exptime) = parse_i32(args[1]) else {
        reply(s.out, noreply, b"CLIENT_ERROR invalid exptime argument");
        return;
    };
    count(s, counter::CMD_TOUCH);
    let found = write_command(s, |s| {
        let c = ctx(s, now);
        let (h, mut shard) = c.lock(key);
        let found = match shard.get(h, key, now) {
            Some(Entry {
                value: Value::Str(v),
                ..
            }) => {
                // A touch counts as a fetch (the meta `h` flag).
                v.to_item().bits |= crate::db::value::Item::FETCHED;
                true
            }
            _ => false,
        };
        if found {
            apply_expiry(&c, &mut shard, h, key, exptime as i64, now);
        }
        found
    });
    if found {
        count(s, counter::TOUCH_HITS);
        reply(s.out, noreply, b"TOUCHED");
    } else {
        count(s, counter::TOUCH_MISSES);
        reply(s.out, noreply, b"NOT_FOUND");
    }
}

/// flush_all [delay] [noreply]: empties database 0 now or after `delay`
/// seconds (memcached's settings.oldest_live).
fn flush_all<'t>(s: &mut Conn<'_>, toks: impl Iterator<Item = &'t [u8]>, now: u64) {
    let args: Vec<&[u8]> = toks.collect();
    if args.len() > 2 {
        reply(s.out, false, b"ERROR");
        return;
    }
    let noreply = args.last() == Some(&&b"noreply"[..]);
    let delay = match args.first() {
        Some(&d) if !(noreply && args.len() == 1) => match parse_i32(d) {
            Some(d) => d as i64,
            None => {
                reply(s.out, noreply, b"CLIENT_ERROR invalid exptime argument");
                return;
            }
        },
        _ => 0,
    };
    count(s, counter::CMD_FLUSH);
    let state = &s.server.memcache;
    match expiry(delay, now) {
        Expiry::At(at) if delay > 0 => {
            // One pending flush at a time, as memcached's oldest_live: a
            // later flush_all replaces the time.
            state.flush_at.store(at, Ordering::Relaxed);
            if !state.flush_timer.swap(true, Ordering::AcqRel) {
                tokio::spawn(delayed_flush(s.server.clone()));
            }
        }
        _ => {
            state.flush_at.store(0, Ordering::Relaxed);
            let mut out = Out::new();
            run_resp(s.server, s.client, &mut out, s.stats, &[b"FLUSHDB"]);
        }
    }
    reply(s.out, noreply, b"OK");
}

/// The timer of a delayed flush_all: sleeps until the pending time
/// (re-read when it wakes: a later flush_all may have moved or cancelled
/// it), then empties database 0 on a blocking thread (it waits for the
/// exec gate, which a busy script may hold).
async fn delayed_flush(server: std::sync::Arc<crate::server::Server>) {
    let state = &server.memcache;
    loop {
        let at = state.flush_at.load(Ordering::Relaxed);
        if at == 0 {
            state.flush_timer.store(false, Ordering::Release);
            // A flush_all that came between the load and the store.
            if state.flush_at.load(Ordering::Relaxed) == 0
                || state.flush_timer.swap(true, Ordering::AcqRel)
            {
                return;
            }
            continue;
        }
        let now = server.clock.now_ms();
        if now < at {
            // At most a second at a time: a later flush_all may have moved
            // the time earlier (memcached's clock has seconds too).
            let wait = (at - now).min(1000);
            tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
            continue;
        }
        if state
            .flush_at
            .compare_exchange(at, 0, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        let s = server.clone();
        let _ = tokio::task::spawn_blocking(move || {
            let mut client = crate::cmd::client::Client::new(crate::clients::new_handle(
                &s.clients,
                s.clock.now_ms(),
                String::new(),
                String::new(),
                -1,
                false,
            ));
            client.authenticated = true;
            let stats = s.stats.local(crate::cmd::table().all.len());
            let mut out = Out::new();
            let _gate = s.tx.gate_shared();
            run_resp(&s, &mut client, &mut out, &stats, &[b"FLUSHDB"]);
        })
        .await;
    }
}

/// Runs a RESP command (looked up in the command table, no checks) on
/// database 0 for a memcached connection, inside the exec gate the caller
/// holds; its reply goes to `out`.
fn run_resp(
    server: &std::sync::Arc<crate::server::Server>,
    client: &mut crate::cmd::client::Client,
    out: &mut Out,
    stats: &crate::stats::ThreadStats,
    argv: &[&[u8]],
) {
    let Some(id) = crate::cmd::table().lookup(argv[0]) else {
        return;
    };
    let (base, ranges) = flatten(argv);
    let args = Args::new(&base, &ranges);
    let db = client.db;
    client.db = 0;
    crate::cmd::run(server, client, out, &args, stats, id);
    client.db = db;
}

/// stats [settings] (memcached's server_stats / process_stat_settings).
fn stats<'t>(s: &mut Conn<'_>, mut toks: impl Iterator<Item = &'t [u8]>, now: u64) {
    let sub = toks.next();
    let mut lines: Vec<(String, String)> = Vec::new();
    let srv = s.server;
    match sub {
        None => {
            let sum = |i: usize| -> u64 { srv.stats.sum_mc(i) };
            let uptime = srv.started.elapsed().as_secs();
            lines.push(("pid".into(), std::process::id().to_string()));
            lines.push(("uptime".into(), uptime.to_string()));
            lines.push(("time".into(), (now / 1000).to_string()));
            lines.push(("version".into(), MEMCACHED_VERSION.into()));
            lines.push(("pointer_size".into(), "64".into()));
            lines.push((
                "max_connections".into(),
                srv.live.maxclients.load(Ordering::Relaxed).to_string(),
            ));
            lines.push(("curr_connections".into(), srv.clients.len().to_string()));
            lines.push((
                "total_connections".into(),
                srv.stats.connections.load(Ordering::Relaxed).to_string(),
            ));
            lines.push((
                "rejected_connections".into(),
                srv.stats
                    .rejected_connections
                    .load(Ordering::Relaxed)
                    .to_string(),
            ));
            for (name, i) in [
                ("cmd_get", counter::CMD_GET),
                ("cmd_set", counter::CMD_SET),
                ("cmd_flush", counter::CMD_FLUSH),
                ("cmd_touch", counter::CMD_TOUCH),
                ("cmd_meta", counter::CMD_META),
                ("get_hits", counter::GET_HITS),
                ("get_misses", counter::GET_MISSES),
                ("get_expired", counter::GET_EXPIRED),
                ("delete_misses", counter::DELETE_MISSES),
                ("delete_hits", counter::DELETE_HITS),
                ("incr_misses", counter::INCR_MISSES),
                ("incr_hits", counter::INCR_HITS),
                ("decr_misses", counter::DECR_MISSES),
                ("decr_hits", counter::DECR_HITS),
                ("cas_misses", counter::CAS_MISSES),
                ("cas_hits", counter::CAS_HITS),
                ("cas_badval", counter::CAS_BADVAL),
                ("touch_hits", counter::TOUCH_HITS),
                ("touch_misses", counter::TOUCH_MISSES),
                ("store_too_large", counter::STORE_TOO_LARGE),
                ("store_no_memory", counter::STORE_NO_MEMORY),
                ("auth_cmds", counter::AUTH_CMDS),
                ("auth_errors", counter::AUTH_ERRORS),
            ] {
                lines.push((name.into(), sum(i).to_string()));
            }
            let totals = srv.stats.totals();
            lines.push(("bytes_read".into(), totals.net_in.to_string()));
            lines.push(("bytes_written".into(), totals.net_out.to_string()));
            lines.push(("limit_maxbytes".into(), srv.evict.maxmemory().to_string()));
            lines.push(("threads".into(), srv.threads.to_string()));
            lines.push(("bytes".into(), crate::evict::used_memory().to_string()));
            lines.push(("curr_items".into(), srv.keyspace.db(0).len().to_string()));
            lines.push((
                "total_items".into(),
                srv.memcache.total_items.load(Ordering::Relaxed).to_string(),
            ));
            lines.push(("expired_unfetched".into(), "0".into()));
            lines.push(("evictions".into(), srv.evict.evicted_keys().to_string()));
        }
        Some(b"settings") => {
            let cfg = srv.config.read();
            lines.push(("maxbytes".into(), srv.evict.maxmemory().to_string()));
            lines.push((
                "maxconns".into(),
                srv.live.maxclients.load(Ordering::Relaxed).to_string(),
            ));
            lines.push(("tcpport".into(), cfg.get("memcached-port").to_string()));
            lines.push(("evictions".into(), "on".into()));
            lines.push(("num_threads".into(), srv.threads.to_string()));
            lines.push(("cas_enabled".into(), "yes".into()));
            lines.push(("item_size_max".into(), cfg.get("item-size-max").to_string()));
            lines.push(("binding_protocol".into(), "ascii".into()));
            lines.push(("idle_timeout".into(), cfg.get("timeout").to_string()));
        }
        Some(_) => {
            reply(s.out, false, b"ERROR");
            return;
        }
    }
    for (k, v) in lines {
        s.out.buf.extend_from_slice(b"STAT ");
        s.out.buf.extend_from_slice(k.as_bytes());
        s.out.buf.push(b' ');
        s.out.buf.extend_from_slice(v.as_bytes());
        s.out.buf.extend_from_slice(b"\r\n");
    }
    s.out.buf.extend_from_slice(b"END\r\n");
}

// ---------------------------------------------------------------------------
// The meta protocol (memcached 1.6 doc/protocol.txt "Meta Commands",
// proto_text.c process_mget/mset/mdelete/marithmetic_command).

/// Longest opaque token (`O`) memcached accepts, in bytes.
const MAX_OPAQUE: usize = 31;

/// A meta command line with this many tokens or more is refused
/// ("options flags too long"), and an `ms` data block is then not read.
pub const MAX_META_TOKENS: usize = 20;

/// The flags of one meta command: which were given (in order) and their
/// tokens.
struct MetaFlags<'a> {
    /// (flag, token) in request order.
    list: Vec<(u8, &'a [u8])>,
}

impl<'a> MetaFlags<'a> {
    fn has(&self, f: u8) -> bool {
        self.list.iter().any(|(c, _)| *c == f)
    }

    fn token(&self, f: u8) -> Option<&'a [u8]> {
        self.list.iter().find(|(c, _)| *c == f).map(|(_, t)| *t)
    }

    /// The unsigned token of flag `f` (C, J, D, F: checked by
    /// [`meta_flags`]).
    fn unsigned(&self, f: u8) -> Option<u64> {
        self.token(f).and_then(parse_u64)
    }

    /// The time token of flag `f` (N, R, T: checked by [`meta_flags`]).
    fn time(&self, f: u8) -> Option<i64> {
        self.token(f).and_then(parse_i32).map(i64::from)
    }

    /// The opaque (`O`) is longer than memcached returns: mg, ms and md
    /// refuse it before they act, ma after ("opaque token too long").
    fn opaque_too_long(&self) -> bool {
        self.token(b'O').is_some_and(|t| t.len() > MAX_OPAQUE)
    }
}

/// The error for [`MetaFlags::opaque_too_long`].
const OPAQUE_ERR: &[u8] = b"CLIENT_ERROR opaque token too long";

/// Parses meta flags as memcached 1.6.18's `_meta_flag_preparse`, shared
/// by mg, ms, md and ma: each token is a flag character followed by its
/// argument; every command accepts every known flag (and ignores those
/// it has no use for). Err: the error line mg and ms answer (md and ma
/// answer `CLIENT_ERROR invalid or duplicate flag` instead).
fn meta_flags<'a>(toks: impl Iterator<Item = &'a [u8]>) -> Result<MetaFlags<'a>, &'static [u8]> {
    let mut list: Vec<(u8, &[u8])> = Vec::new();
    // A bad argument is reported once every flag was read: a duplicate
    // flag anywhere wins over it, as in memcached.
    let mut bad: Option<&'static [u8]> = None;
    for t in toks {
        let f = t[0];
        let arg = &t[1..];
        if f >= 0x7f || list.iter().any(|(c, _)| *c == f) {
            return Err(b"CLIENT_ERROR duplicate flag");
        }
        match f {
            b'b' | b'c' | b'f' | b'h' | b'k' | b'l' | b'q' | b's' | b't' | b'u' | b'v' | b'I'
            | b'L' | b'P' => {}
            b'N' | b'R' | b'T' => {
                if parse_i32(arg).is_none() {
                    bad = bad.or(Some(b"CLIENT_ERROR bad token in command line format"));
                }
            }
            b'C' => {
                if parse_u64(arg).is_none() {
                    bad = bad.or(Some(b"CLIENT_ERROR bad token in command line format"));
                }
            }
            b'F' => {
                if parse_u64(arg).is_none() {
                    bad = bad.or(Some(b"CLIENT_ERROR bad command line format"));
                }
            }
            b'D' => {
                if parse_u64(arg).is_none() {
                    bad = bad.or(Some(b"CLIENT_ERROR invalid numeric delta value"));
                }
            }
            b'J' => {
                if parse_u64(arg).is_none() {
                    bad = bad.or(Some(b"CLIENT_ERROR invalid numeric initial value"));
                }
            }
            b'M' => {
                if arg.len() != 1 {
                    bad = bad.or(Some(b"CLIENT_ERROR incorrect length for M token"));
                }
            }
            // Its length is checked where the command returns it
            // ([`MetaFlags::opaque_too_long`]).
            b'O' => {}
            _ => return Err(b"CLIENT_ERROR invalid flag"),
        }
        list.push((f, arg));
    }
    if let Some(e) = bad {
        return Err(e);
    }
    Ok(MetaFlags { list })
}

/// The key of a meta command: base64-decoded with the `b` flag.
fn meta_key(raw: &[u8], b: bool) -> Result<Vec<u8>, &'static [u8]> {
    if raw.len() > KEY_MAX_LENGTH {
        return Err(b"CLIENT_ERROR bad command line format");
    }
    if !b {
        return Ok(raw.to_vec());
    }
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(raw)
        .map_err(|_| &b"CLIENT_ERROR error decoding key"[..])
}

/// Appends ` <flag><value>` to a meta reply.
fn ret(out: &mut Vec<u8>, f: u8, v: &[u8]) {
    out.push(b' ');
    out.push(f);
    out.extend_from_slice(v);
}

/// Appends the return flags common to the meta commands that were asked
/// for: `k` (the key as `key`, followed by ` b` when it is shown in
/// base64) and `O` (the opaque).
fn ret_common(out: &mut Vec<u8>, f: u8, tok: &[u8], key: &[u8], binary: bool) {
    match f {
        b'k' => {
            ret(out, b'k', key);
            if binary {
                out.extend_from_slice(b" b");
            }
        }
        b'O' => ret(out, b'O', tok),
        _ => {}
    }
}

/// A meta status line (`NF`, `EX`, `NS`...) with the `k` and `O` flags
/// asked for.
fn meta_status(out: &mut Out, code: &[u8], fl: &MetaFlags<'_>, key_raw: &[u8]) {
    if fl.opaque_too_long() {
        return reply(out, false, OPAQUE_ERR);
    }
    out.buf.extend_from_slice(code);
    for &(f, tok) in &fl.list {
        ret_common(&mut out.buf, f, tok, key_raw, fl.has(b'b'));
    }
    out.buf.extend_from_slice(b"\r\n");
}

/// The key as an item's `k` flag shows it: in base64 with ` b` when the
/// item was stored with a base64 key (memcached 1.6.18's ITEM_KEY_BINARY).
fn shown_key(key: &[u8], item_bits: u8) -> (Vec<u8>, bool) {
    if item_bits & crate::db::value::Item::KEY_BINARY != 0 {
        use base64::Engine as _;
        (
            base64::engine::general_purpose::STANDARD
                .encode(key)
                .into_bytes(),
            true,
        )
    } else {
        (key.to_vec(), false)
    }
}

/// An expiry as the meta `t` flag shows it: seconds left, -1 for none, a
/// past one as memcached prints it (an unsigned wrap-around).
fn shown_ttl(exp: Expiry, now: u64) -> i64 {
    match exp {
        Expiry::Never => -1,
        Expiry::At(at) => (at.saturating_sub(now)).div_ceil(1000) as i64,
        Expiry::Now => u32::MAX as i64,
    }
}

/// Remaining TTL in seconds of `key` (-1 without one), as the `t` flag.
fn ttl_secs(shard: &crate::db::Shard, h: u64, key: &[u8], now: u64) -> i64 {
    match shard.expire_at(h, key) {
        0 => -1,
        at => (at.saturating_sub(now)).div_ceil(1000) as i64,
    }
}

/// Executes one meta command line (mg ms md ma mn me) with its data block
/// for ms. Returns what the connection must do next.
pub fn execute_meta(s: &mut Conn<'_>, line: &[u8], data: Option<&[u8]>) -> After {
    let mut toks = tokens(line);
    let cmd = toks.next().unwrap_or_default();
    count(s, counter::CMD_META);
    let now = s.server.clock.now_ms();
    if cmd == b"mn" {
        s.out.buf.extend_from_slice(b"MN\r\n");
        return After::Continue;
    }
    let Some(key_raw) = toks.next() else {
        reply(s.out, false, b"ERROR");
        return After::Continue;
    };
    // MFLAG_MAX_OPT_LENGTH: 20 tokens at most, the command's own included.
    if tokens(line).count() >= MAX_META_TOKENS && cmd != b"me" {
        let msg: &[u8] = if cmd == b"mg" {
            b"CLIENT_ERROR options flags are too long"
        } else {
            b"CLIENT_ERROR options flags too long"
        };
        reply(s.out, false, msg);
        return After::Continue;
    }
    match cmd {
        b"mg" => meta_get(s, key_raw, toks, now),
        b"ms" => return meta_set(s, key_raw, toks, data, now),
        b"md" => meta_delete(s, key_raw, toks, now),
        b"ma" => meta_arith(s, key_raw, toks, now),
        b"me" => {
            let b = toks.any(|t| t.first() == Some(&b'b'));
            match meta_key(key_raw, b) {
                Ok(k) => meta_debug(s, &k, now),
                Err(e) => reply(s.out, false, e),
            }
        }
        _ => reply(s.out, false, b"ERROR"),
    }
    After::Continue
}

/// mg <key> <flags>*.
fn meta_get<'t>(s: &mut Conn<'_>, key_raw: &[u8], toks: impl Iterator<Item = &'t [u8]>, now: u64) {
    let fl = match meta_flags(toks) {
        Ok(f) => f,
        Err(e) => return reply(s.out, false, e),
    };
    let key = match meta_key(key_raw, fl.has(b'b')) {
        Ok(k) => k,
        Err(e) => return reply(s.out, false, e),
    };
    if fl.opaque_too_long() {
        return reply(s.out, false, OPAQUE_ERR);
    }
    let (vivify, recache, new_ttl) = (fl.time(b'N'), fl.time(b'R'), fl.time(b'T'));
    let quiet = fl.has(b'q');
    count(s, counter::CMD_GET);
    let writes = vivify.is_some() || new_ttl.is_some();
    let state = &s.server.memcache;
    let mut line = Vec::with_capacity(64);
    let mut value: Option<Vec<u8>> = None;
    let hit = {
        let mut run = |s: &mut Conn<'_>| -> bool {
            let c = ctx(s, now);
            let (h, mut shard) = c.lock(&key);
            let lru_now = c.server.keyspace.lru.initial(now);
            let mut created = false;
            if shard.get(h, &key, now).is_none() {
                if vivify.is_none() {
                    drop(shard);
                    c.hit(&key, false);
                    return false;
                }
                // Vivify: an empty item the caller is told to fill (W),
                // without expiry until its N (or a later T) sets one.
                let mut v = StrValue::item(b"", 0, 0);
                v.to_item();
                shard.insert(h, &key, Entry::new(Value::Str(v), lru_now));
                created = true;
            }
            // The item's expiry as the flags are read in order: N (on a
            // vivify) and T set it, t shows it where it stands (memcached
            // 1.6.18's process_mget_command).
            let start_exp = match shard.expire_at(h, &key) {
                0 => Expiry::Never,
                at => Expiry::At(at),
            };
            let mut exp = start_exp;
            let Some(e) = shard.get(h, &key, now) else {
                return false;
            };
            let idle = crate::db::lru::idle_secs(e.lru, now);
            let Value::Str(v) = &mut e.value else {
                drop(shard);
                c.hit(&key, false);
                return false;
            };
            let bits = v.item_bits();
            let (flags, _) = v.item_meta();
            let mut win = created;
            let mut tokens_after = Vec::new();
            if !created {
                if bits & crate::db::value::Item::TOKEN_SENT != 0 {
                    tokens_after.push(b'Z');
                }
                if bits & crate::db::value::Item::STALE != 0 {
                    tokens_after.push(b'X');
                    if bits & crate::db::value::Item::TOKEN_SENT == 0 {
                        win = true;
                    }
                }
            }
            let stale = bits & crate::db::value::Item::STALE != 0;
            for &(f, tok) in &fl.list {
                match f {
                    // R: a win when the TTL left (as it stands here) is
                    // below its token and nobody holds one.
                    b'R' if !created
                        && !stale
                        && bits & crate::db::value::Item::TOKEN_SENT == 0 =>
                    {
                        let left = match exp {
                            Expiry::Never => None,
                            Expiry::At(at) => Some((at - now).div_ceil(1000) as i64),
                            Expiry::Now => Some(0),
                        };
                        if left.is_some_and(|l| l < recache.unwrap_or(0)) {
                            win = true;
                        }
                    }
                    b'c' => {
                        let cas = cas_of(state, v);
                        ret(&mut line, b'c', itoa::Buffer::new().format(cas).as_bytes());
                    }
                    b'f' => ret(
                        &mut line,
                        b'f',
                        itoa::Buffer::new().format(flags).as_bytes(),
                    ),
                    b'h' => ret(
                        &mut line,
                        b'h',
                        if bits & crate::db::value::Item::FETCHED != 0 {
                            b"1"
                        } else {
                            b"0"
                        },
                    ),
                    b'l' => ret(&mut line, b'l', itoa::Buffer::new().format(idle).as_bytes()),
                    b's' => ret(
                        &mut line,
                        b's',
                        itoa::Buffer::new().format(v.len()).as_bytes(),
                    ),
                    b'T' => exp = expiry(new_ttl.unwrap_or(0), now),
                    b'N' if created => exp = expiry(vivify.unwrap_or(0), now),
                    b't' => {
                        let t = shown_ttl(exp, now);
                        ret(&mut line, b't', itoa::Buffer::new().format(t).as_bytes());
                    }
                    b'k' | b'O' => {
                        let (shown, binary) = shown_key(&key, bits);
                        ret_common(&mut line, f, tok, &shown, binary);
                    }
                    _ => {}
                }
            }
            // A fetch is recorded (the `h` flag of later fetches).
            let it = v.to_item();
            if win {
                it.bits |= crate::db::value::Item::TOKEN_SENT;
            }
            // Every fetch counts, one that created the item (N) too, but
            // not one with `u` (no bump), as memcached 1.6.
            if !fl.has(b'u') {
                it.bits |= crate::db::value::Item::FETCHED;
            }
            if fl.has(b'v') {
                value = Some(v.to_vec());
            }
            for t in tokens_after {
                line.push(b' ');
                line.push(t);
            }
            if win {
                line.extend_from_slice(b" W");
            }
            if !fl.has(b'u') {
                if let Some(t) = c.touch_time() {
                    t.record(&mut e.lru);
                }
            }
            let gone = exp == Expiry::Now;
            if created && !gone {
                let at = match exp {
                    Expiry::At(at) => at,
                    _ => 0,
                };
                shard.set_expire(h, &key, at);
                propagate_set(&key, b"", at);
                c.modified(&key, STRING, "set");
            } else if created {
                shard.remove(h, &key);
            } else if exp != start_exp {
                set_expiry(&c, &mut shard, h, &key, exp);
            }
            drop(shard);
            c.hit(&key, !created);
            true
        };
        if writes {
            write_command(s, run)
        } else {
            run(s)
        }
    };
    if !hit {
        count(s, counter::GET_MISSES);
        if !quiet {
            // A miss still returns the k and O flags asked for.
            let out = &mut s.out.buf;
            out.extend_from_slice(b"EN");
            for &(f, tok) in &fl.list {
                ret_common(out, f, tok, key_raw, fl.has(b'b'));
            }
            out.extend_from_slice(b"\r\n");
        }
        return;
    }
    count(s, counter::GET_HITS);
    let out = &mut s.out.buf;
    match value {
        Some(v) => {
            out.extend_from_slice(b"VA ");
            out.extend_from_slice(itoa::Buffer::new().format(v.len()).as_bytes());
            out.extend_from_slice(&line);
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(&v);
            out.extend_from_slice(b"\r\n");
        }
        None => {
            out.extend_from_slice(b"HD");
            out.extend_from_slice(&line);
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// ms <key> <datalen> <flags>* and its data block.
fn meta_set<'t>(
    s: &mut Conn<'_>,
    key_raw: &[u8],
    mut toks: impl Iterator<Item = &'t [u8]>,
    data: Option<&[u8]>,
    now: u64,
) -> After {
    let Some(len_tok) = toks.next() else {
        reply(s.out, false, b"CLIENT_ERROR bad command line format");
        return After::Continue;
    };
    let Some(vlen) = parse_i32(len_tok).filter(|v| *v >= 0) else {
        reply(s.out, false, b"CLIENT_ERROR bad command line format");
        return After::Continue;
    };
    let Some(data) = data else {
        if key_raw.len() > KEY_MAX_LENGTH {
            reply(s.out, false, b"CLIENT_ERROR bad command line format");
            return After::Continue;
        }
        count(s, counter::STORE_TOO_LARGE);
        reply(s.out, false, b"SERVER_ERROR object too large for cache");
        // As for set: no stale value stays behind (in any ms mode).
        let b = toks.any(|t| t.first() == Some(&b'b'));
        if let Ok(key) = meta_key(key_raw, b) {
            write_command(s, |s| delete_key(s, &key, now));
        }
        return After::Swallow(vlen as usize + 2);
    };
    count(s, counter::CMD_SET);
    if data.len() < 2 || &data[data.len() - 2..] != b"\r\n" {
        reply(s.out, false, b"CLIENT_ERROR bad data chunk");
        return After::Continue;
    }
    let value = &data[..data.len() - 2];
    let fl = match meta_flags(toks) {
        Ok(f) => f,
        Err(e) => {
            reply(s.out, false, e);
            return After::Continue;
        }
    };
    let key = match meta_key(key_raw, fl.has(b'b')) {
        Ok(k) => k,
        Err(e) => {
            reply(s.out, false, e);
            return After::Continue;
        }
    };
    if fl.opaque_too_long() {
        reply(s.out, false, OPAQUE_ERR);
        return After::Continue;
    }
    let flags = fl.unsigned(b'F').unwrap_or(0) as u32;
    let ttl = fl.time(b'T').unwrap_or(0);
    let cmp_cas = fl.unsigned(b'C');
    let mode = match fl.token(b'M') {
        None => Store::Set,
        Some(t) => match t.first() {
            Some(b'S') => Store::Set,
            Some(b'E') => Store::Add,
            Some(b'A') => Store::Append,
            Some(b'P') => Store::Prepend,
            Some(b'R') => Store::Replace,
            _ => {
                reply(s.out, false, b"CLIENT_ERROR invalid mode for ms M token");
                return After::Continue;
            }
        },
    };
    let invalidate = fl.has(b'I');
    let quiet = fl.has(b'q');
    let kind = if cmp_cas.is_some() && mode == Store::Set {
        Store::Cas
    } else {
        mode
    };
    let state_cas = s.server.memcache.next_cas();
    let (code, cas_now) = write_command(s, |s| {
        meta_store(
            s,
            kind,
            &key,
            flags,
            ttl,
            cmp_cas,
            invalidate,
            fl.has(b'b'),
            value,
            state_cas,
            now,
        )
    });
    if quiet && code == b"HD" {
        return After::Continue;
    }
    let out = &mut s.out.buf;
    out.extend_from_slice(code);
    for &(f, tok) in &fl.list {
        match f {
            b'c' => ret(out, b'c', itoa::Buffer::new().format(cas_now).as_bytes()),
            b'k' | b'O' => ret_common(out, f, tok, key_raw, fl.has(b'b')),
            _ => {}
        }
    }
    out.extend_from_slice(b"\r\n");
    After::Continue
}

/// Stores an item for ms: (reply code, the item's CAS after it or 0).
#[allow(clippy::too_many_arguments)]
fn meta_store(
    s: &mut Conn<'_>,
    kind: Store,
    key: &[u8],
    flags: u32,
    ttl: i64,
    cmp_cas: Option<u64>,
    invalidate: bool,
    binary_key: bool,
    value: &[u8],
    new_cas: u64,
    now: u64,
) -> (&'static [u8], u64) {
    let c = ctx(s, now);
    let (h, mut shard) = c.lock(key);
    let mut stale = false;
    let (found, old) = match shard.get(h, key, now) {
        Some(e) => match &mut e.value {
            Value::Str(v) => {
                // An item always has a CAS for the comparisons below.
                let cas = if cmp_cas.is_some() {
                    cas_of(&c.server.memcache, v)
                } else {
                    v.item_meta().1
                };
                // C0 compares nothing for append and prepend.
                let checks = |w: &u64| match kind {
                    Store::Cas | Store::Replace => true,
                    Store::Append | Store::Prepend => *w != 0,
                    _ => false,
                };
                if let Some(want) = cmp_cas.filter(checks) {
                    if cas == 0 || cas != want {
                        // With I, an older CAS still stores, as stale.
                        if invalidate
                            && matches!(kind, Store::Cas | Store::Replace)
                            && want != 0
                            && want < cas
                        {
                            stale = true;
                        } else {
                            return (b"EX", 0);
                        }
                    }
                }
                let old = matches!(kind, Store::Append | Store::Prepend).then(|| v.to_vec());
                (true, old)
            }
            _ => (true, None),
        },
        None => {
            // With C: set and replace answer NF (append and prepend NS).
            if kind == Store::Cas || (kind == Store::Replace && cmp_cas.is_some()) {
                return (b"NF", 0);
            }
            (false, None)
        }
    };
    match kind {
        Store::Add if found => return (b"NS", 0),
        Store::Replace | Store::Append | Store::Prepend if !found => return (b"NS", 0),
        _ => {}
    }
    let bytes = match (kind, &old) {
        (Store::Append, Some(o)) => [o.as_slice(), value].concat(),
        (Store::Prepend, Some(o)) => [value, o.as_slice()].concat(),
        _ => value.to_vec(),
    };
    c.server
        .memcache
        .total_items
        .fetch_add(1, Ordering::Relaxed);
    let mut v = StrValue::item(&bytes, flags, new_cas);
    if stale {
        v.to_item().bits |= crate::db::value::Item::STALE;
    }
    if binary_key {
        v.to_item().bits |= crate::db::value::Item::KEY_BINARY;
    }
    if matches!(kind, Store::Append | Store::Prepend) {
        let Some(e) = shard.get(h, key, now) else {
            return (b"NS", 0);
        };
        let flags0 = match &e.value {
            Value::Str(s) => s.item_meta().0,
            _ => 0,
        };
        e.value = Value::Str(StrValue::item(&bytes, flags0, new_cas));
        drop(shard);
        crate::propagate::rewrite(&[b"SET", key, &bytes, b"KEEPTTL"]);
        c.modified(key, STRING, "append");
        return (b"HD", new_cas);
    }
    // A stale store keeps the old expiry (its T is ignored).
    let old_at = shard.expire_at(h, key);
    let exp = if stale {
        match old_at {
            0 => Expiry::Never,
            at => Expiry::At(at),
        }
    } else {
        expiry(ttl, now)
    };
    let at = match exp {
        Expiry::Never => 0,
        Expiry::At(at) => at,
        Expiry::Now => {
            if found {
                shard.remove(h, key);
                drop(shard);
                crate::propagate::rewrite(&[b"DEL", key]);
                c.modified(key, GENERIC, "del");
            }
            return (b"HD", new_cas);
        }
    };
    shard.insert_with_expire(
        h,
        key,
        Entry::new(Value::Str(v), c.server.keyspace.lru.initial(now)),
        at,
    );
    drop(shard);
    propagate_set(key, &bytes, at);
    if !found {
        c.notify(key, NEW, "new");
    }
    c.modified(key, STRING, "set");
    (b"HD", new_cas)
}

/// md <key> <flags>*.
fn meta_delete<'t>(
    s: &mut Conn<'_>,
    key_raw: &[u8],
    toks: impl Iterator<Item = &'t [u8]>,
    now: u64,
) {
    const FLAG_ERR: &[u8] = b"CLIENT_ERROR invalid or duplicate flag";
    let fl = match meta_flags(toks) {
        Ok(f) => f,
        Err(_) => return reply(s.out, false, FLAG_ERR),
    };
    let key = match meta_key(key_raw, fl.has(b'b')) {
        Ok(k) => k,
        Err(e) if key_raw.len() > KEY_MAX_LENGTH => return reply(s.out, false, e),
        Err(_) => return reply(s.out, false, FLAG_ERR),
    };
    if fl.opaque_too_long() {
        return reply(s.out, false, OPAQUE_ERR);
    }
    let cmp_cas = fl.unsigned(b'C');
    let ttl = fl.time(b'T');
    let invalidate = fl.has(b'I');
    let code: &'static [u8] = write_command(s, |s| {
        let c = ctx(s, now);
        let (h, mut shard) = c.lock(&key);
        let Some(e) = shard.get(h, &key, now) else {
            return b"NF";
        };
        if let Some(want) = cmp_cas {
            let cas = match &e.value {
                Value::Str(v) => v.item_meta().1,
                _ => 0,
            };
            // An item without an assigned CAS has one no client knows.
            if cas == 0 || cas != want {
                return b"EX";
            }
        }
        if invalidate {
            // Marked stale instead of removed; with T its TTL changes.
            if let Value::Str(v) = &mut e.value {
                let it = v.to_item();
                it.bits |= crate::db::value::Item::STALE;
                it.bits &= !crate::db::value::Item::TOKEN_SENT;
                it.cas = c.server.memcache.next_cas();
            }
            if let Some(t) = ttl {
                apply_expiry(&c, &mut shard, h, &key, t, now);
            }
            return b"HD";
        }
        shard.remove(h, &key);
        drop(shard);
        crate::propagate::rewrite(&[b"DEL", &key]);
        c.modified(&key, GENERIC, "del");
        b"HD"
    });
    if code == b"HD" {
        count(s, counter::DELETE_HITS);
        if fl.has(b'q') {
            return;
        }
    } else if code == b"NF" {
        count(s, counter::DELETE_MISSES);
    }
    let out = &mut s.out.buf;
    out.extend_from_slice(code);
    for &(f, tok) in &fl.list {
        ret_common(out, f, tok, key_raw, fl.has(b'b'));
    }
    out.extend_from_slice(b"\r\n");
}

/// ma <key> <flags>*.
fn meta_arith<'t>(
    s: &mut Conn<'_>,
    key_raw: &[u8],
    toks: impl Iterator<Item = &'t [u8]>,
    now: u64,
) {
    const FLAG_ERR: &[u8] = b"CLIENT_ERROR invalid or duplicate flag";
    let fl = match meta_flags(toks) {
        Ok(f) => f,
        Err(_) => return reply(s.out, false, FLAG_ERR),
    };
    let key = match meta_key(key_raw, fl.has(b'b')) {
        Ok(k) => k,
        Err(e) if key_raw.len() > KEY_MAX_LENGTH => return reply(s.out, false, e),
        Err(_) => return reply(s.out, false, FLAG_ERR),
    };
    let (cmp_cas, initial, delta) = (fl.unsigned(b'C'), fl.unsigned(b'J'), fl.unsigned(b'D'));
    let (vivify, ttl) = (fl.time(b'N'), fl.time(b'T'));
    let incr = match fl.token(b'M') {
        None => true,
        Some(t) => match t.first() {
            Some(b'I' | b'+') => true,
            Some(b'D' | b'-') => false,
            _ => return reply(s.out, false, b"CLIENT_ERROR invalid mode for ma M token"),
        },
    };
    let delta = delta.unwrap_or(1);
    let state = &s.server.memcache;
    enum R {
        Ok(Vec<u8>, i64, u64),
        Created(Vec<u8>, i64, u64),
        NotFound,
        NonNumeric,
        Exists,
    }
    let r = write_command(s, |s| {
        let c = ctx(s, now);
        let (h, mut shard) = c.lock(&key);
        if shard.get(h, &key, now).is_none() {
            let Some(n) = vivify else {
                return R::NotFound;
            };
            let init = initial.unwrap_or(0);
            let text = itoa::Buffer::new().format(init).as_bytes().to_vec();
            // N and T both set the new item's expiry: the later wins; t
            // shows it where it stands among the flags.
            let mut exp = Expiry::Never;
            let mut t_shown = -1;
            for &(f, _) in &fl.list {
                match f {
                    b'N' => exp = expiry(n, now),
                    b'T' => exp = expiry(ttl.unwrap_or(0), now),
                    b't' => t_shown = shown_ttl(exp, now),
                    _ => {}
                }
            }
            let at = match exp {
                Expiry::At(at) => at,
                Expiry::Now => {
                    // Answered as created, then gone at once.
                    return R::Created(text, t_shown, state.next_cas());
                }
                Expiry::Never => 0,
            };
            let cas = state.next_cas();
            shard.insert_with_expire(
                h,
                &key,
                Entry::new(
                    Value::Str(StrValue::item(&text, 0, cas)),
                    c.server.keyspace.lru.initial(now),
                ),
                at,
            );
            propagate_set(&key, &text, at);
            c.modified(&key, STRING, "set");
            drop(shard);
            return R::Created(text, t_shown, cas);
        }
        // An empty value is refused before the CAS check, other values
        // that are not numbers after it (do_add_delta's order).
        let empty = match shard.get(h, &key, now).map(|e| &e.value) {
            Some(Value::Str(v)) => v.is_empty(),
            _ => false,
        };
        if empty {
            return R::NonNumeric;
        }
        if let Some(want) = cmp_cas.filter(|c| *c != 0) {
            let cur = match shard.get(h, &key, now).map(|e| &e.value) {
                Some(Value::Str(v)) => v.item_meta().1,
                _ => 0,
            };
            if cur != want {
                return R::Exists;
            }
        }
        drop(shard);
        let mut sess = Conn {
            server: c.server,
            client: c.client,
            out: c.out,
            stats: c.stats,
            db: c.server.keyspace.db(0),
        };
        match add_delta(&mut sess, &key, incr, delta, now) {
            Delta::Ok(v, grew) => {
                let c = ctx(&mut sess, now);
                let (h, mut shard) = c.lock(&key);
                // `t` shows the TTL where it stands among the flags: the
                // new one only after a T.
                let t_pos = fl.list.iter().position(|(f, _)| *f == b't');
                let big_t_pos = fl.list.iter().position(|(f, _)| *f == b'T');
                let before = ttl_secs(&shard, h, &key, now);
                let cas = match shard.get(h, &key, now) {
                    Some(e) => match &mut e.value {
                        Value::Str(v) => cas_of(&c.server.memcache, v),
                        _ => 0,
                    },
                    None => 0,
                };
                // T reaches the item only when the result was written in
                // place: a longer one is a new item with the old expiry
                // (memcached 1.6.18's do_add_delta).
                // (Nor when the reply fails on a long opaque: memcached
                // applies T after writing the return flags.)
                if let Some(t) = ttl.filter(|_| !grew && !fl.opaque_too_long()) {
                    apply_expiry(&c, &mut shard, h, &key, t, now);
                }
                let t = match (big_t_pos, t_pos) {
                    (Some(a), Some(b)) if a < b => ttl_secs(&shard, h, &key, now),
                    _ => before,
                };
                R::Ok(v, t, cas)
            }
            Delta::NotFound => R::NotFound,
            Delta::NonNumeric => R::NonNumeric,
        }
    });
    let (v, t, cas, created) = match r {
        R::Ok(v, t, cas) => (v, t, cas, false),
        R::Created(v, t, cas) => (v, t, cas, true),
        R::NotFound => {
            count(
                s,
                if incr {
                    counter::INCR_MISSES
                } else {
                    counter::DECR_MISSES
                },
            );
            return meta_status(s.out, b"NF", &fl, key_raw);
        }
        R::Exists => return meta_status(s.out, b"EX", &fl, key_raw),
        R::NonNumeric => {
            return reply(
                s.out,
                false,
                b"CLIENT_ERROR cannot increment or decrement non-numeric value",
            )
        }
    };
    count(
        s,
        if incr {
            counter::INCR_HITS
        } else {
            counter::DECR_HITS
        },
    );
    if fl.opaque_too_long() {
        return reply(s.out, false, OPAQUE_ERR);
    }
    // q hides the success reply (HD or VA), but not after a vivify (as
    // memcached 1.6.18).
    if fl.has(b'q') && !created {
        return;
    }
    let mut line = Vec::new();
    for &(f, tok) in &fl.list {
        match f {
            b't' => ret(&mut line, b't', itoa::Buffer::new().format(t).as_bytes()),
            b'c' => ret(&mut line, b'c', itoa::Buffer::new().format(cas).as_bytes()),
            b'k' | b'O' => ret_common(&mut line, f, tok, key_raw, fl.has(b'b')),
            _ => {}
        }
    }
    let out = &mut s.out.buf;
    if fl.has(b'v') {
        out.extend_from_slice(b"VA ");
        out.extend_from_slice(itoa::Buffer::new().format(v.len()).as_bytes());
        out.extend_from_slice(&line);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&v);
        out.extend_from_slice(b"\r\n");
    } else {
        out.extend_from_slice(b"HD");
        out.extend_from_slice(&line);
        out.extend_from_slice(b"\r\n");
    }
}

/// The slab class memcached 1.6 would store an item of `size` bytes in
/// (chunk sizes from 96 bytes growing by 1.25, 8-byte aligned).
fn slab_class(size: usize) -> usize {
    let mut chunk = 96usize;
    let mut class = 1;
    while chunk < size && class < 63 {
        chunk = ((chunk as f64 * 1.25) as usize).div_ceil(8) * 8;
        class += 1;
    }
    class
}

/// me <key>: memcached's debug line for an item.
fn meta_debug(s: &mut Conn<'_>, key_raw: &[u8], now: u64) {
    if key_raw.len() > KEY_MAX_LENGTH {
        return reply(s.out, false, b"CLIENT_ERROR bad command line format");
    }
    let c = ctx(s, now);
    let (h, mut shard) = c.lock(key_raw);
    let exp = ttl_secs(&shard, h, key_raw, now);
    let Some(e) = shard.get(h, key_raw, now) else {
        drop(shard);
        return reply(c.out, false, b"EN");
    };
    let la = crate::db::lru::idle_secs(e.lru, now);
    let Value::Str(v) = &mut e.value else {
        drop(shard);
        return reply(c.out, false, b"EN");
    };
    let cas = cas_of(&c.server.memcache, v);
    let (flags, _) = v.item_meta();
    let fetched = v.item_bits() & crate::db::value::Item::FETCHED != 0;
    let size = 48 + 8 + if flags != 0 { 4 } else { 0 } + key_raw.len() + 1 + v.len() + 2;
    drop(shard);
    let line = format!(
        "ME {} exp={exp} la={la} cas={cas} fetch={} cls={} size={size}\r\n",
        String::from_utf8_lossy(key_raw),
        if fetched { "yes" } else { "no" },
        slab_class(size)
    );
    c.out.buf.extend_from_slice(line.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_memcached_parses_them() {
        assert_eq!(parse_u32(b"4294967295"), Some(u32::MAX));
        assert_eq!(parse_u32(b"4294967296"), None);
        assert_eq!(parse_u32(b"-1"), None);
        assert_eq!(parse_u32(b"1x"), None);
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_i32(b"-5"), Some(-5));
        assert_eq!(parse_i32(b"2147483648"), Some(i32::MIN));
        assert_eq!(parse_i32(b"4294967296"), Some(0));
    }

    #[test]
    fn exptime_rules() {
        let now = 1_700_000_000_000;
        assert_eq!(expiry(0, now), Expiry::Never);
        assert_eq!(expiry(-1, now), Expiry::Now);
        assert_eq!(expiry(10, now), Expiry::At(now + 10_000));
        assert_eq!(
            expiry(REALTIME_MAXDELTA, now),
            Expiry::At(now + REALTIME_MAXDELTA as u64 * 1000)
        );
        assert_eq!(expiry(REALTIME_MAXDELTA + 1, now), Expiry::Now);
        assert_eq!(expiry(1_800_000_000, now), Expiry::At(1_800_000_000_000));
    }
}
