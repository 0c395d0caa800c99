//! memcached's binary protocol (memcached 1.6 `proto_bin.c`, the
//! "Memcache Binary Protocol" specification): a connection whose first
//! byte is 0x80 speaks it for its whole life, as memcached decides.
//!
//! A request is a 24-byte header (magic 0x80, opcode, key length u16,
//! extras length u8, data type u8, vbucket u16, total body length u32,
//! opaque u32, CAS u64, all big-endian) and a body of extras, key and
//! value. A response has the same header with magic 0x81 and a status in
//! place of the vbucket; the opaque is echoed. The quiet opcodes (GETQ,
//! SETQ, ...) send nothing on success (GETQ nothing on a miss); errors are
//! always sent, with memcached's error text as the value.
//!
//! The commands run on the same keyspace and item state as the text and
//! meta protocols (cmd/memcache.rs): flags, CAS, expiry, counters, ACL
//! checks as the equivalent RESP command, propagation.

use super::{
    acl_denied, add_delta, cas_of, count, counter, ctx, delete_key, store_item, write_command,
    Conn, Delta, Store, KEY_MAX_LENGTH, MEMCACHED_VERSION,
};
use crate::db::{Entry, Value};
use crate::resp::Out;

/// Size of a request or response header.
pub const HEADER: usize = 24;
/// Request magic.
pub const REQUEST: u8 = 0x80;
const RESPONSE: u8 = 0x81;

const OK: u16 = 0x00;
const KEY_ENOENT: u16 = 0x01;
const KEY_EEXISTS: u16 = 0x02;
const E2BIG: u16 = 0x03;
const EINVAL: u16 = 0x04;
const NOT_STORED: u16 = 0x05;
const DELTA_BADVAL: u16 = 0x06;
const AUTH_ERROR: u16 = 0x20;
const UNKNOWN_COMMAND: u16 = 0x81;
const ENOMEM: u16 = 0x82;
const EBUSY: u16 = 0x85;

/// memcached's text for an error status (`write_bin_error`).
fn error_text(status: u16) -> &'static [u8] {
    match status {
        ENOMEM => b"Out of memory",
        UNKNOWN_COMMAND => b"Unknown command",
        KEY_ENOENT => b"Not found",
        EINVAL => b"Invalid arguments",
        KEY_EEXISTS => b"Data exists for key.",
        E2BIG => b"Too large.",
        DELTA_BADVAL => b"Non-numeric server-side value for incr or decr",
        NOT_STORED => b"Not stored.",
        AUTH_ERROR => b"Auth failure.",
        _ => b"UNHANDLED ERROR",
    }
}

/// A parsed request header.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    /// The opcode.
    pub opcode: u8,
    /// Key length.
    pub keylen: usize,
    /// Extras length.
    pub extlen: usize,
    /// Data type (ignored, as memcached does).
    pub datatype: u8,
    /// Body length (extras + key + value).
    pub bodylen: usize,
    /// Echoed in the response.
    pub opaque: u32,
    /// Request CAS.
    pub cas: u64,
}

impl Header {
    /// Reads a header from at least [`HEADER`] bytes.
    pub fn parse(b: &[u8]) -> Header {
        Header {
            opcode: b[1],
            keylen: u16::from_be_bytes([b[2], b[3]]) as usize,
            extlen: b[4] as usize,
            datatype: b[5],
            bodylen: u32::from_be_bytes([b[8], b[9], b[10], b[11]]) as usize,
            opaque: u32::from_be_bytes([b[12], b[13], b[14], b[15]]),
            cas: u64::from_be_bytes([b[16], b[17], b[18], b[19], b[20], b[21], b[22], b[23]]),
        }
    }
}

/// Writes a response: header, extras, key, value.
fn respond(
    out: &mut Out,
    h: &Header,
    status: u16,
    cas: u64,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
) {
    let b = &mut out.buf;
    b.push(RESPONSE);
    b.push(h.opcode);
    b.extend_from_slice(&(key.len() as u16).to_be_bytes());
    b.push(extras.len() as u8);
    b.push(0);
    b.extend_from_slice(&status.to_be_bytes());
    b.extend_from_slice(&((extras.len() + key.len() + value.len()) as u32).to_be_bytes());
    b.extend_from_slice(&h.opaque.to_be_bytes());
    b.extend_from_slice(&cas.to_be_bytes());
    b.extend_from_slice(extras);
    b.extend_from_slice(key);
    b.extend_from_slice(value);
}

/// An error response with memcached's text.
fn error(out: &mut Out, h: &Header, status: u16) {
    respond(out, h, status, 0, &[], &[], error_text(status));
}

/// The response to a request refused for the whole connection (a busy
/// script): memcached's EBUSY status with the reason as its value.
pub fn busy(out: &mut Out, req: &[u8], reason: &[u8]) {
    let h = Header::parse(req);
    respond(out, &h, EBUSY, 0, &[], &[], reason);
}

/// The response to a request whose body is larger than an item may be
/// (its body is discarded by the codec).
pub fn too_large(out: &mut Out, req: &[u8]) {
    let h = Header::parse(req);
    error(out, &h, E2BIG);
}

/// What the connection does after a binary request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Go on.
    Continue,
    /// Close after the replies written so far (QUIT / QUITQ).
    Close,
    /// Discard this many bytes of what follows (memcached's swallow).
    Swallow(usize),
}

/// True for the opcodes the quiet variant of which is `op`, with the loud
/// opcode: (loud opcode, quiet).
fn loud(op: u8) -> (u8, bool) {
    match op {
        0x09 => (0x00, true),
        0x0d => (0x0c, true),
        0x11 => (0x01, true),
        0x12 => (0x02, true),
        0x13 => (0x03, true),
        0x14 => (0x04, true),
        0x15 => (0x05, true),
        0x16 => (0x06, true),
        0x17 => (0x07, true),
        0x18 => (0x08, true),
        0x19 => (0x0e, true),
        0x1a => (0x0f, true),
        0x1e => (0x1d, true),
        0x24 => (0x23, true),
        x => (x, false),
    }
}

/// Checks the lengths a command takes (extras exactly `ext`, a key
/// required or forbidden, a value allowed or not), as memcached's
/// `dispatch_bin_command` does: false means "Invalid arguments".
fn shape(h: &Header, ext: &[usize], key: bool, value: bool) -> bool {
    let vlen = h.bodylen.saturating_sub(h.extlen + h.keylen);
    ext.contains(&h.extlen)
        && (h.keylen > 0) == key
        && (value || vlen == 0)
        && h.extlen + h.keylen <= h.bodylen
}

/// Runs one binary request (`req`: header and body). Replies go to
/// `s.out`.
pub fn execute(s: &mut Conn<'_>, req: &[u8]) -> Next {
    let h = Header::parse(req);
    let body = &req[HEADER..];
    let (op, quiet) = loud(h.opcode);
    let now = s.server.clock.now_ms();
    if h.extlen + h.keylen > h.bodylen || h.keylen > KEY_MAX_LENGTH {
        error(s.out, &h, EINVAL);
        return Next::Close;
    }
    let extras = &body[..h.extlen];
    let key = &body[h.extlen..h.extlen + h.keylen];
    let value = &body[h.extlen + h.keylen..];
    let auth_on = s
        .server
        .acl
        .auth_required
        .load(std::sync::atomic::Ordering::Relaxed);
    let needs_auth = auth_on && !s.client.authenticated;
    if needs_auth && !matches!(op, 0x20..=0x22) {
        error(s.out, &h, AUTH_ERROR);
        return Next::Continue;
    }
    match op {
        // GET, GETK (and quiet forms)
        0x00 | 0x0c => {
            if !shape(&h, &[0], true, false) {
                error(s.out, &h, EINVAL);
                return Next::Close;
            }
            if denied(s, &h, &[b"GET", key]) {
                return Next::Continue;
            }
            get(s, &h, key, op == 0x0c, quiet, None, now);
        }
        // GAT, GATK (and quiet forms)
        0x1d | 0x23 => {
            if !shape(&h, &[4], true, false) {
                error(s.out, &h, EINVAL);
                return Next::Close;
            }
            if denied(s, &h, &[b"GETEX", key]) {
                return Next::Continue;
            }
            let exp = u32::from_be_bytes([extras[0], extras[1], extras[2], extras[3]]);
            get(s, &h, key, op == 0x23, quiet, Some(exp as i32 as i64), now);
        }
        // SET, ADD, REPLACE
        0x01..=0x03 => {
            if !shape(&h, &[8], true, true) {
                error(s.out, &h, EINVAL);
                return Next::Close;
            }
            let flags = u32::from_be_bytes([extras[0], extras[1], extras[2], extras[3]]);
            let exp = u32::from_be_bytes([extras[4], extras[5], extras[6], extras[7]]) as i32;
            let kind = match op {
                _ if h.cas != 0 => Store::Cas,
                0x01 => Store::Set,
                0x02 => Store::Add,
                _ => Store::Replace,
            };
            update(s, &h, kind, op, key, flags, exp as i64, value, quiet, now);
        }
        // APPEND, PREPEND
        0x0e | 0x0f => {
            if !shape(&h, &[0], true, true) {
                error(s.out, &h, EINVAL);
                return Next::Close;
            }
            let kind = if op == 0x0e {
                Store::Append
            } else {
                Store::Prepend
            };
            update(s, &h, kind, op, key, 0, 0, value, quiet, now);
        }
        // DELETE
        0x04 => {
            if !shape(&h, &[0], true, false) {
                error(s.out, &h, EINVAL);
                return Next::Close;
            }
            if denied(s, &h, &[b"DEL", key]) {
                return Next::Continue;
            }
            if h.cas != 0 && current_cas(s, key, now).is_some_and(|c| c != h.cas) {
                error(s.out, &h, KEY_EEXISTS);
                return Next::Continue;
            }
            if write_command(s, |s| delete_key(s, key, now)) {
                count(s, counter::DELETE_HITS);
                if !quiet {
                    respond(s.out, &h, OK, 0, &[], &[], &[]);
                }
            } else {
                count(s, counter::DELETE_MISSES);
                error(s.out, &h, KEY_ENOENT);
            }
        }
        // INCREMENT, DECREMENT
        0x05 | 0x06 => {
            if !shape(&h, &[20], true, false) {
                error(s.out, &h, EINVAL);
                return Next::Close;
            }
            if denied(s, &h, &[b"INCRBY", key, b"1"]) {
                return Next::Continue;
            }
            arith(s, &h, key, extras, op == 0x05, quiet, now);
        }
        // QUIT
        0x07 => {
            if !quiet {
                respond(s.out, &h, OK, 0, &[], &[], &[]);
            }
            return Next::Close;
        }
        // FLUSH
        0x08 => {
            if !shape(&h, &[0, 4], false, false) {
                error(s.out, &h, EINVAL);
                return Next::Close;
            }
            if denied(s, &h, &[b"FLUSHDB"]) {
                return Next::Continue;
            }
            let delay = if h.extlen == 4 {
                u32::from_be_bytes([extras[0], extras[1], extras[2], extras[3]])
            } else {
                0
            };
            let line = format!("flush_all {delay}");
            let mut scratch = Out::new();
            let mut c = Conn {
                server: s.server,
                client: s.client,
                out: &mut scratch,
                stats: s.stats,
                db: s.db,
            };
            super::execute_line(&mut c, line.as_bytes(), None);
            if !quiet {
                respond(s.out, &h, OK, 0, &[], &[], &[]);
            }
        }
        // NOOP
        0x0a => {
            if !shape(&h, &[0], false, false) {
                error(s.out, &h, EINVAL);
                return Next::Close;
            }
            respond(s.out, &h, OK, 0, &[], &[], &[]);
        }
        // VERSION
        0x0b => {
            if !shape(&h, &[0], false, false) {
                error(s.out, &h, EINVAL);
                return Next::Close;
            }
            respond(s.out, &h, OK, 0, &[], &[], MEMCACHED_VERSION.as_bytes());
        }
        // STAT
        0x10 => {
            if !shape(&h, &[0], !key.is_empty(), false) {
                error(s.out, &h, EINVAL);
                return Next::Close;
            }
            stats(s, &h, key);
        }
        // TOUCH
        0x1c => {
            if !shape(&h, &[4], true, false) {
                error(s.out, &h, EINVAL);
                return Next::Close;
            }
            if denied(s, &h, &[b"EXPIRE", key, b"1"]) {
                return Next::Continue;
            }
            let exp = u32::from_be_bytes([extras[0], extras[1], extras[2], extras[3]]) as i32;
            count(s, counter::CMD_TOUCH);
            let found = write_command(s, |s| {
                let c = ctx(s, now);
                let (hk, mut shard) = c.lock(key);
                let found = match shard.get(hk, key, now) {
                    Some(Entry {
                        value: Value::Str(v),
                        ..
                    }) => {
                        let (flags, _) = v.item_meta();
                        let cas = cas_of(&c.server.memcache, v);
                        v.to_item().bits |= crate::db::value::Item::FETCHED;
                        Some((flags, cas))
                    }
                    _ => None,
                };
                if found.is_some() {
                    super::apply_expiry(&c, &mut shard, hk, key, exp as i64, now);
                }
                found
            });
            if let Some((flags, cas)) = found {
                count(s, counter::TOUCH_HITS);
                // Like GAT without the value: flags and CAS.
                respond(s.out, &h, OK, cas, &flags.to_be_bytes(), &[], &[]);
            } else {
                count(s, counter::TOUCH_MISSES);
                error(s.out, &h, KEY_ENOENT);
            }
        }
        // SASL LIST MECHS (only when a password is required, as memcached
        // speaks SASL only when started with it)
        0x20 if auth_on => respond(s.out, &h, OK, 0, &[], &[], b"PLAIN"),
        // SASL AUTH / STEP (PLAIN: [authzid] NUL user NUL password)
        0x21 | 0x22 if auth_on => {
            let mut parts = value.split(|&b| b == 0);
            let _authz = parts.next();
            let (Some(user), Some(pass)) = (parts.next(), parts.next()) else {
                error(s.out, &h, AUTH_ERROR);
                return Next::Continue;
            };
            crate::stats::bump(&s.stats.mc[counter::AUTH_CMDS], 1);
            match s.server.acl.authenticate(user, pass) {
                Some(u) => {
                    s.client.authenticated = true;
                    s.client.acl.set_user(&u.name);
                    s.client.handle.info.lock().user =
                        String::from_utf8_lossy(&u.name).into_owned();
                    respond(s.out, &h, OK, 0, &[], &[], b"Authenticated");
                }
                None => {
                    crate::stats::bump(&s.stats.mc[counter::AUTH_ERRORS], 1);
                    error(s.out, &h, AUTH_ERROR);
                }
            }
        }
        _ => {
            error(s.out, &h, UNKNOWN_COMMAND);
            // memcached discards the body after it has read the extras
            // and key, so it skips that many bytes of what follows too.
            if h.extlen + h.keylen > 0 {
                return Next::Swallow(h.extlen + h.keylen);
            }
        }
    }
    Next::Continue
}

/// Answers an ACL refusal (the RESP command `argv` is not allowed): EACCESS
/// in memcached's terms, sent as an auth error.
fn denied(s: &mut Conn<'_>, h: &Header, argv: &[&[u8]]) -> bool {
    match acl_denied(s, argv) {
        Some(_) => {
            error(s.out, h, AUTH_ERROR);
            true
        }
        None => false,
    }
}

/// The CAS of `key`'s item (assigned when it has none); None when
/// missing.
fn current_cas(s: &mut Conn<'_>, key: &[u8], now: u64) -> Option<u64> {
    let c = ctx(s, now);
    let (h, mut shard) = c.lock(key);
    match shard.get(h, key, now) {
        Some(Entry {
            value: Value::Str(v),
            ..
        }) => Some(cas_of(&c.server.memcache, v)),
        _ => None,
    }
}

/// GET / GETK / GAT / GATK and their quiet forms: flags as extras, the key
/// for the K forms, the value; a miss is "Not found" (GETK: the key), or
/// nothing for the quiet forms.
#[allow(clippy::too_many_arguments)]
fn get(
    s: &mut Conn<'_>,
    h: &Header,
    key: &[u8],
    with_key: bool,
    quiet: bool,
    touch: Option<i64>,
    now: u64,
) {
    count(s, counter::CMD_GET);
    if touch.is_some() {
        count(s, counter::CMD_TOUCH);
    }
    let found = {
        let c = ctx(s, now);
        let (hk, mut shard) = c.lock(key);
        let t = c.touch_time();
        let hit = match shard.get(hk, key, now) {
            Some(e) => {
                if let Some(t) = t {
                    t.record(&mut e.lru);
                }
                match &mut e.value {
                    Value::Str(v) => {
                        let (flags, _) = v.item_meta();
                        let cas = cas_of(&c.server.memcache, v);
                        v.to_item().bits |= crate::db::value::Item::FETCHED;
                        let mut tmp = itoa::Buffer::new();
                        let data = v.as_bytes(&mut tmp).to_vec();
                        Some((flags, cas, data))
                    }
                    _ => None,
                }
            }
            None => None,
        };
        if let (Some(exp), Some(_)) = (touch, &hit) {
            super::apply_expiry(&c, &mut shard, hk, key, exp, now);
        }
        drop(shard);
        c.hit(key, hit.is_some());
        hit
    };
    match found {
        Some((flags, cas, data)) => {
            count(s, counter::GET_HITS);
            if touch.is_some() {
                count(s, counter::TOUCH_HITS);
            }
            let k: &[u8] = if with_key { key } else { &[] };
            respond(s.out, h, OK, cas, &flags.to_be_bytes(), k, &data);
        }
        None => {
            count(s, counter::GET_MISSES);
            if touch.is_some() {
                count(s, counter::TOUCH_MISSES);
            }
            if quiet {
                return;
            }
            if with_key {
                respond(s.out, h, KEY_ENOENT, 0, &[], key, &[]);
            } else {
                error(s.out, h, KEY_ENOENT);
            }
        }
    }
}

/// SET / ADD / REPLACE / APPEND / PREPEND (a non-zero request CAS makes
/// the first three a compare-and-swap; append and prepend check it too).
#[allow(clippy::too_many_arguments)]
fn update(
    s: &mut Conn<'_>,
    h: &Header,
    kind: Store,
    op: u8,
    key: &[u8],
    flags: u32,
    exptime: i64,
    value: &[u8],
    quiet: bool,
    now: u64,
) {
    count(s, counter::CMD_SET);
    if denied(s, h, &[b"SET", key, value]) {
        return;
    }
    let item_max = s
        .server
        .live
        .item_size_max
        .load(std::sync::atomic::Ordering::Relaxed) as usize;
    if 48 + 8 + 4 + key.len() + 1 + value.len() + 2 > item_max {
        if kind == Store::Set {
            write_command(s, |s| delete_key(s, key, now));
        }
        error(s.out, h, E2BIG);
        return;
    }
    if matches!(kind, Store::Append | Store::Prepend)
        && h.cas != 0
        && current_cas(s, key, now).is_some_and(|c| c != h.cas)
    {
        error(s.out, h, KEY_EEXISTS);
        return;
    }
    if s.server.evict.maxmemory() != 0
        && !s.server.scripts.busy()
        && crate::evict::perform(&s.server.evict_env()) == crate::evict::Outcome::Fail
    {
        error(s.out, h, ENOMEM);
        return;
    }
    let text = write_command(s, |s| {
        store_item(s, kind, key, flags, exptime, h.cas, value, now)
    });
    let status = match text {
        b"STORED" => OK,
        b"EXISTS" => KEY_EEXISTS,
        b"NOT_FOUND" => KEY_ENOENT,
        // NOT_STORED: add of an existing key, replace of a missing one.
        _ => match op {
            0x02 => KEY_EEXISTS,
            0x03 => KEY_ENOENT,
            _ => NOT_STORED,
        },
    };
    if status != OK {
        error(s.out, h, status);
        return;
    }
    if !quiet {
        let cas = current_cas(s, key, now).unwrap_or(0);
        respond(s.out, h, OK, cas, &[], &[], &[]);
    }
}

/// INCREMENT / DECREMENT: extras are the delta, the initial value and an
/// expiration (0xffffffff: a missing key is not created); the new value as
/// a 64-bit big-endian body.
#[allow(clippy::too_many_arguments)]
fn arith(s: &mut Conn<'_>, h: &Header, key: &[u8], ext: &[u8], incr: bool, quiet: bool, now: u64) {
    let delta = u64::from_be_bytes(ext[0..8].try_into().expect("8 bytes"));
    let initial = u64::from_be_bytes(ext[8..16].try_into().expect("8 bytes"));
    let exp = u32::from_be_bytes(ext[16..20].try_into().expect("4 bytes"));
    let (hits, misses) = if incr {
        (counter::INCR_HITS, counter::INCR_MISSES)
    } else {
        (counter::DECR_HITS, counter::DECR_MISSES)
    };
    let r = write_command(s, |s| add_delta(s, key, incr, delta, now));
    let value = match r {
        Delta::Ok(text, _) => {
            count(s, hits);
            crate::util::parse_i64(&text)
                .map(|v| v as u64)
                .or_else(|| std::str::from_utf8(&text).ok()?.parse::<u64>().ok())
                .unwrap_or(0)
        }
        Delta::NonNumeric => {
            count(s, hits);
            error(s.out, h, DELTA_BADVAL);
            return;
        }
        Delta::NotFound => {
            count(s, misses);
            if exp == 0xffff_ffff {
                error(s.out, h, KEY_ENOENT);
                return;
            }
            let text = initial.to_string();
            let stored = write_command(s, |s| {
                store_item(
                    s,
                    Store::Add,
                    key,
                    0,
                    exp as i32 as i64,
                    0,
                    text.as_bytes(),
                    now,
                )
            });
            if stored != b"STORED" {
                error(s.out, h, NOT_STORED);
                return;
            }
            initial
        }
    };
    if !quiet {
        let cas = current_cas(s, key, now).unwrap_or(0);
        respond(s.out, h, OK, cas, &[], &[], &value.to_be_bytes());
    }
}

/// STAT [group]: one response per statistic (key = name, value = value),
/// then an empty one; from the text protocol's `stats` lines.
fn stats(s: &mut Conn<'_>, h: &Header, group: &[u8]) {
    let mut line = b"stats".to_vec();
    if !group.is_empty() {
        line.push(b' ');
        line.extend_from_slice(group);
    }
    let mut scratch = Out::new();
    {
        let mut c = Conn {
            server: s.server,
            client: s.client,
            out: &mut scratch,
            stats: s.stats,
            db: s.db,
        };
        super::execute_line(&mut c, &line, None);
    }
    if !scratch.buf.starts_with(b"STAT ") && !scratch.buf.starts_with(b"END") {
        error(s.out, h, KEY_ENOENT);
        return;
    }
    for l in scratch.buf.split(|&b| b == b'\n') {
        let l = l.strip_suffix(b"\r").unwrap_or(l);
        let Some(rest) = l.strip_prefix(b"STAT ") else {
            continue;
        };
        let (name, val) = match rest.iter().position(|&b| b == b' ') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &b""[..]),
        };
        respond(s.out, h, OK, 0, &[], name, val);
    }
    respond(s.out, h, OK, 0, &[], &[], &[]);
}
