//! The memcached codec of the connection loop: memcached 1.6's text
//! protocol (doc/protocol.txt) on [`super::codec::Codec`], for the
//! `memcached-port` and `memcached-unixsocket` listeners.
//!
//! A request is a command line ending in `\n` (a `\r` before it is
//! dropped), followed for the storage commands by a data block of the
//! declared length and `\r\n`. The line is framed here; the command runs
//! in `cmd::memcache` on database 0 of the shared keyspace. As memcached
//! (proto_text.c `try_read_command_ascii`): a line not ended within 2048
//! bytes closes the connection unless it is a `get`/`gets` (large
//! multi-gets); a storage command whose header is invalid is answered
//! without reading a data block (the next line is then a command); one
//! whose data exceeds `item-size-max` is answered `SERVER_ERROR object too
//! large for cache` and its data is discarded as it arrives, never
//! buffered.
//!
//! A connection whose first byte is 0x80 speaks memcached's binary
//! protocol instead (cmd/memcache/binary.rs): 24-byte headers with a body
//! length, framed here.
//!
//! Authentication (memcached's `-Y` text-protocol scheme): when the server
//! requires a password (`requirepass` or ACL users), a new connection must
//! first send a `set` whose data is `<user> <password>`, checked against
//! the ACL users; before that every command is answered
//! `CLIENT_ERROR unauthenticated`.

use super::codec::{Codec, Decoded, Session};
use crate::cmd::memcache::{self as mc, After, Store};
use crate::resp::Out;
use crate::server::Server;
use std::sync::atomic::Ordering;

/// The longest command line memcached reads without finding its end
/// before it closes the connection (non-get commands).
const MAX_LINE: usize = 2048;

/// What [`Codec::decode`] framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framed {
    /// A command line of `line` bytes (without its line end).
    Line { line: usize },
    /// A storage command line and its data block (with its CRLF) starting
    /// at `data`.
    Store { line: usize, data: usize },
    /// Bytes of a refused data block, discarded.
    Skip,
    /// A binary-protocol request (header and body).
    Binary,
    /// A binary-protocol header whose body is too large (the body is then
    /// discarded).
    BinaryTooLarge,
}

/// The memcached codec of one connection.
pub struct MemcacheCodec {
    framed: Framed,
    /// Data bytes still to discard (memcached's conn_swallow).
    swallow: usize,
    /// Bytes the read buffer must hold for the storage command in progress.
    wanted: Option<usize>,
    /// `item-size-max`, read when a batch starts.
    item_size_max: usize,
    /// No byte of the connection has been decoded yet.
    first: bool,
    /// The connection speaks the binary protocol (its first byte was 0x80).
    binary: bool,
}

/// How a storage command line's data block is read.
enum DataBlock {
    /// No data block follows (the header is refused).
    None,
    /// `n` bytes and CRLF follow.
    Read(usize),
    /// `n` bytes and CRLF follow, to be discarded (too large).
    TooLarge,
}

/// memcached's checks on a storage command's header that decide whether
/// its data block is read (process_update_command): token count, key
/// length, numbers, negative length, then the size limit.
fn data_block(line: &[u8], kind: Store, item_size_max: usize) -> DataBlock {
    let toks: Vec<&[u8]> = mc::tokens(line).collect();
    let want = if kind == Store::Cas { 6 } else { 5 };
    if toks.len() != want && toks.len() != want + 1 {
        return DataBlock::None;
    }
    let key = toks[1];
    if key.len() > mc::KEY_MAX_LENGTH {
        return DataBlock::None;
    }
    let (Some(flags), Some(_), Some(vlen)) = (
        mc::parse_flags(toks[2]),
        mc::parse_i32(toks[3]),
        mc::parse_i32(toks[4]),
    ) else {
        return DataBlock::None;
    };
    if kind == Store::Cas && mc::parse_u64(toks[5]).is_none() {
        return DataBlock::None;
    }
    if vlen < 0 {
        return DataBlock::None;
    }
    let vlen = vlen as usize;
    // The item as memcached sizes it: header (48 bytes), CAS (8), client
    // flags when not 0 (4), key and its NUL, data and CRLF.
    let total = 48 + 8 + if flags != 0 { 4 } else { 0 } + key.len() + 1 + vlen + 2;
    if total > item_size_max {
        return DataBlock::TooLarge;
    }
    DataBlock::Read(vlen)
}

/// The data block of an `ms` line: `ms <key> <datalen> <flags>*` with a
/// valid length (proto_text.c process_mset_command's checks before the
/// data is read).
fn meta_data_block(line: &[u8], item_size_max: usize) -> DataBlock {
    if mc::tokens(line).count() >= mc::MAX_META_TOKENS {
        return DataBlock::None;
    }
    let mut t = mc::tokens(line).skip(1);
    let (Some(key), Some(len)) = (t.next(), t.next()) else {
        return DataBlock::None;
    };
    if key.len() > mc::KEY_MAX_LENGTH {
        return DataBlock::None;
    }
    let Some(vlen) = mc::parse_i32(len).filter(|v| *v >= 0) else {
        return DataBlock::None;
    };
    let vlen = vlen as usize;
    if 48 + 8 + 4 + key.len() + 1 + vlen + 2 > item_size_max {
        return DataBlock::TooLarge;
    }
    DataBlock::Read(vlen)
}

impl MemcacheCodec {
    /// Frames one binary request: a 24-byte header and its body. A wrong
    /// magic closes the connection (as memcached); a body larger than an
    /// item may be is answered "Too large." and discarded as it arrives.
    fn decode_binary(&mut self, buf: &[u8]) -> Decoded {
        use mc::binary::{Header, HEADER, REQUEST};
        if buf.len() < HEADER {
            self.wanted = (!buf.is_empty()).then_some(HEADER);
            return Decoded::Incomplete;
        }
        if buf[0] != REQUEST {
            return Decoded::Invalid;
        }
        let h = Header::parse(buf);
        // Key and extras are small; the value is bounded by the item size.
        if h.bodylen > self.item_size_max + 1024 {
            self.wanted = None;
            self.swallow = h.bodylen;
            self.framed = Framed::BinaryTooLarge;
            return Decoded::Request(HEADER);
        }
        let need = HEADER + h.bodylen;
        if buf.len() < need {
            self.wanted = Some(need);
            return Decoded::Incomplete;
        }
        self.wanted = None;
        self.framed = Framed::Binary;
        Decoded::Request(need)
    }

    /// Runs a framed binary request (authentication and the busy-script
    /// gate as for text requests).
    fn execute_binary(&mut self, s: &mut Session<'_>, req: &[u8]) {
        if self.framed == Framed::BinaryTooLarge {
            mc::binary::too_large(s.out, req);
            return;
        }
        let server = s.server;
        let Some(gate) = server.tx.gate_shared_unless(|| server.scripts.busy()) else {
            let reason = server.scripts.busy_error();
            mc::binary::busy(s.out, req, reason.as_bytes());
            return;
        };
        let mut conn = mc::Conn {
            server: s.server,
            client: s.client,
            out: s.out,
            stats: s.stats,
            db: s.db,
        };
        let next = mc::binary::execute(&mut conn, req);
        drop(gate);
        match next {
            mc::binary::Next::Continue => {}
            mc::binary::Next::Close => s.client.close_after_reply = true,
            mc::binary::Next::Swallow(n) => self.swallow = n,
        }
    }
}

impl Codec for MemcacheCodec {
    fn new(server: &Server) -> Self {
        MemcacheCodec {
            framed: Framed::Skip,
            swallow: 0,
            wanted: None,
            item_size_max: server.config.read().get_u64("item-size-max") as usize,
            first: true,
            binary: false,
        }
    }

    fn begin_batch(&mut self, s: &Session<'_>) {
        self.item_size_max = s.server.live.item_size_max.load(Ordering::Relaxed) as usize;
    }

    fn decode(&mut self, _s: &Session<'_>, buf: &[u8]) -> Decoded {
        // memcached's binary protocol: chosen by the connection's first
        // byte (0x80), for the connection's whole life.
        if self.first && buf.first() == Some(&mc::binary::REQUEST) {
            self.binary = true;
        }
        if !buf.is_empty() {
            self.first = false;
        }
        if self.binary && self.swallow == 0 {
            return self.decode_binary(buf);
        }
        if self.swallow > 0 {
            if buf.is_empty() {
                return Decoded::Incomplete;
            }
            let n = self.swallow.min(buf.len());
            self.swallow -= n;
            self.framed = Framed::Skip;
            return Decoded::Request(n);
        }
        let Some(nl) = memchr::memchr(b'\n', buf) else {
            self.wanted = None;
            if buf.len() > MAX_LINE {
                let lead = buf.iter().take_while(|&&b| b == b' ').count();
                let rest = &buf[lead..];
                if lead > 100 || !(rest.starts_with(b"get ") || rest.starts_with(b"gets ")) {
                    return Decoded::Invalid;
                }
            }
            return Decoded::Incomplete;
        };
        let line = if nl > 0 && buf[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        // A NUL ends the line for parsing, as in memcached's C strings.
        let parsed = c_line(&buf[..line]);
        let first = mc::tokens(parsed).next();
        let block = match first {
            Some(b"ms") => Some(meta_data_block(parsed, self.item_size_max)),
            Some(w) => Store::of(w).map(|kind| data_block(parsed, kind, self.item_size_max)),
            None => None,
        };
        if let Some(DataBlock::Read(n)) = block {
            let need = nl + 1 + n + 2;
            if buf.len() < need {
                self.wanted = Some(need);
                return Decoded::Incomplete;
            }
            self.wanted = None;
            self.framed = Framed::Store { line, data: nl + 1 };
            return Decoded::Request(need);
        }
        self.wanted = None;
        self.framed = Framed::Line { line };
        Decoded::Request(nl + 1)
    }

    fn execute(&mut self, s: &mut Session<'_>, buf: &[u8], at: usize, len: usize) {
        let req = &buf[at..at + len];
        let (line, data) = match self.framed {
            Framed::Skip => return,
            Framed::Binary | Framed::BinaryTooLarge => return self.execute_binary(s, req),
            Framed::Line { line } => (c_line(&req[..line]), None),
            Framed::Store { line, data } => (c_line(&req[..line]), Some(&req[data..])),
        };
        if !s.client.authenticated && s.server.acl.auth_required.load(Ordering::Relaxed) {
            authenticate(s, line, data, &mut self.swallow);
            return;
        }
        let server = s.server;
        let Some(gate) = server.tx.gate_shared_unless(|| server.scripts.busy()) else {
            // Refused while a script is busy, but framed as usual: a
            // too-large block is still discarded, quit still closes.
            let first = mc::tokens(line).next().unwrap_or_default();
            if first == b"quit" {
                s.client.close_after_reply = true;
                return;
            }
            let block = match Store::of(first) {
                Some(kind) => data_block(line, kind, self.item_size_max),
                None if first == b"ms" => meta_data_block(line, self.item_size_max),
                None => DataBlock::None,
            };
            if matches!(block, DataBlock::TooLarge) {
                self.swallow = too_large_len(line, first == b"ms");
            }
            s.out.buf.extend_from_slice(b"SERVER_ERROR ");
            s.out
                .buf
                .extend_from_slice(server.scripts.busy_error().as_bytes());
            s.out.buf.extend_from_slice(b"\r\n");
            return;
        };
        let mut conn = mc::Conn {
            server: s.server,
            client: s.client,
            out: s.out,
            stats: s.stats,
            db: s.db,
        };
        let after = mc::execute_line(&mut conn, line, data);
        drop(gate);
        match after {
            After::Continue => {}
            After::Swallow(n) => self.swallow = n,
            After::Close => s.client.close_after_reply = true,
        }
    }

    fn reject(&mut self, _server: &Server, _out: &mut Out) {
        // memcached closes a connection whose line is too long without a
        // reply.
    }

    fn read_target(&mut self, _unconsumed: usize) -> Option<&mut Vec<u8>> {
        None
    }

    fn buffered(&self) -> usize {
        0
    }

    fn wanted(&self) -> Option<usize> {
        self.wanted
    }

    fn shrink(&mut self) {}
}

/// The bytes to discard after a too-large storage line: its declared
/// length and CRLF.
fn too_large_len(line: &[u8], meta: bool) -> usize {
    let tok = mc::tokens(line).nth(if meta { 2 } else { 4 });
    tok.and_then(mc::parse_i32)
        .map_or(0, |n| n.max(0) as usize + 2)
}

/// A command line up to its first NUL byte (memcached parses the line as
/// a C string).
fn c_line(line: &[u8]) -> &[u8] {
    match memchr::memchr(0, line) {
        Some(z) => &line[..z],
        None => line,
    }
}

/// The first command of a connection that must authenticate: a `set`
/// whose data is `<user> <password>` (memcached's `-Y` authfile scheme,
/// proto_text.c `process_sasl...`/`authfile`), checked against the ACL
/// users. Anything else is answered `CLIENT_ERROR unauthenticated`.
fn authenticate(s: &mut Session<'_>, line: &[u8], data: Option<&[u8]>, swallow: &mut usize) {
    let first = mc::tokens(line).next();
    let is_set = first == Some(b"set".as_slice());
    crate::stats::bump(&s.stats.mc[mc::counter::AUTH_CMDS], 1);
    let Some(data) = data.filter(|_| is_set) else {
        if is_set {
            // A refused header: memcached answers as for any set; the
            // client is still unauthenticated.
            if let After::Swallow(n) = refused_set_header(line) {
                *swallow = n;
            }
        }
        crate::stats::bump(&s.stats.mc[mc::counter::AUTH_ERRORS], 1);
        s.out
            .buf
            .extend_from_slice(b"CLIENT_ERROR unauthenticated\r\n");
        return;
    };
    let Some(body) = data.strip_suffix(b"\r\n") else {
        crate::stats::bump(&s.stats.mc[mc::counter::AUTH_ERRORS], 1);
        s.out
            .buf
            .extend_from_slice(b"CLIENT_ERROR bad data chunk\r\n");
        return;
    };
    let mut parts = body.splitn(2, |&b| b == b' ');
    let (user, pass) = (parts.next().unwrap_or_default(), parts.next());
    match pass.and_then(|p| s.server.acl.authenticate(user, p)) {
        Some(u) => {
            s.client.authenticated = true;
            s.client.acl.set_user(&u.name);
            s.client.handle.info.lock().user = String::from_utf8_lossy(&u.name).into_owned();
            s.out.buf.extend_from_slice(b"STORED\r\n");
        }
        None => {
            crate::stats::bump(&s.stats.mc[mc::counter::AUTH_ERRORS], 1);
            s.out
                .buf
                .extend_from_slice(b"CLIENT_ERROR authentication failure\r\n");
        }
    }
}

/// The data to discard after a refused `set` header during
/// authentication (a too-large one).
fn refused_set_header(line: &[u8]) -> After {
    match data_block(line, Store::Set, usize::MAX) {
        DataBlock::Read(n) => After::Swallow(n + 2),
        _ => After::Continue,
    }
}
