//! The RESP codec of the connection loop: Redis's request protocol (RESP2
//! multibulk and inline requests, replies in RESP2 or RESP3 as HELLO
//! chose) on [`super::codec::Codec`].
//!
//! Requests are framed by [`RequestParser`] in place in the read buffer
//! (large bulk strings are received into their own allocations), executed
//! with [`cmd::execute`], and answered into the connection's output buffer.
//! While a pipelined batch runs, the keys of the requests after the one
//! executing are prefetched so that their cache misses overlap with the
//! work before them. A protocol error is answered with Redis's message and
//! closes the connection (networking.c `processMultibulkBuffer`,
//! `processInlineBuffer`).

use super::codec::{Codec, Decoded, Session};
use crate::cmd;
use crate::resp::parse::peek_key;
use crate::resp::{Out, Parsed, ProtocolError, RequestParser};
use crate::server::Server;
use std::sync::atomic::Ordering;

/// How many requests ahead of the executing one a pipelined batch's keys
/// are prefetched (about the number of cache misses a core keeps in
/// flight).
const PREFETCH_AHEAD: usize = 8;

/// The RESP codec of one connection: the request parser, the protocol
/// error being answered, and the prefetch ring of the current batch.
pub struct RespCodec {
    parser: RequestParser,
    /// Set by [`Codec::decode`] returning [`Decoded::Invalid`].
    error: Option<ProtocolError>,
    /// Where the next request not yet prefetched starts (set after the
    /// batch's first request, None once the scan stopped).
    ahead: Option<usize>,
    /// No request of the batch has executed yet.
    first: bool,
    /// Hashes of the prefetched requests not yet executed (a ring, oldest
    /// at `front`).
    hashes: [u64; PREFETCH_AHEAD],
    front: usize,
    queued: usize,
}

impl Codec for RespCodec {
    fn new(server: &Server) -> Self {
        RespCodec {
            parser: RequestParser::new(server.live.proto_max_bulk_len.load(Ordering::Relaxed)),
            error: None,
            ahead: None,
            first: true,
            hashes: [0; PREFETCH_AHEAD],
            front: 0,
            queued: 0,
        }
    }

    #[inline]
    fn begin_batch(&mut self, s: &Session<'_>) {
        self.parser.max_bulk_len = s.server.live.proto_max_bulk_len.load(Ordering::Relaxed);
        self.ahead = None;
        self.first = true;
        self.front = 0;
        self.queued = 0;
    }

    #[inline(always)]
    fn decode(&mut self, s: &Session<'_>, buf: &[u8]) -> Decoded {
        self.parser.unauthenticated =
            !s.client.authenticated && s.server.acl.auth_required.load(Ordering::Relaxed);
        match self.parser.parse(buf) {
            Ok(Parsed::Request(n)) => Decoded::Request(n),
            Ok(Parsed::Incomplete) => Decoded::Incomplete,
            Err(e) => {
                self.error = Some(e);
                Decoded::Invalid
            }
        }
    }

    // Inlined into the loop's batch: one call per request less, and the
    // prefetch ring stays in registers across the batch.
    #[inline(always)]
    fn execute(&mut self, s: &mut Session<'_>, buf: &[u8], at: usize, len: usize) {
        {
            let args = self.parser.args(&buf[at..]);
            if !args.is_empty() {
                cmd::execute(s.server, s.client, s.out, &args, s.stats);
            }
        }
        self.parser.release_big();
        let consumed = at + len;
        // Keys of the requests after the one executing are prefetched
        // (Db::prefetch), PREFETCH_AHEAD requests ahead: a lookup's cache
        // misses then overlap with the work of the requests before it.
        if std::mem::take(&mut self.first) {
            self.ahead = Some(consumed);
        }
        if self.queued > 0 {
            self.front = (self.front + 1) % PREFETCH_AHEAD;
            self.queued -= 1;
        }
        while let Some(at) = self.ahead.filter(|_| self.queued < PREFETCH_AHEAD) {
            match peek_key(&buf[at.max(consumed)..]) {
                Some((ks, ke, len)) if at >= consumed => {
                    let h = s.db.prefetch(&buf[at + ks..at + ke]);
                    self.hashes[(self.front + self.queued) % PREFETCH_AHEAD] = h;
                    self.ahead = Some(at + len);
                    self.queued += 1;
                }
                _ => self.ahead = None,
            }
        }
        // Halfway: the bucket has arrived, fetch its entry.
        if self.queued >= PREFETCH_AHEAD / 2 {
            let h = self.hashes[(self.front + PREFETCH_AHEAD / 2 - 1) % PREFETCH_AHEAD];
            s.db.prefetch_entry(h);
        }
    }

    #[inline(always)]
    fn may_run_script(&self, buf: &[u8], at: usize) -> bool {
        let args = self.parser.args(&buf[at..]);
        !args.is_empty() && cmd::scripting::is_script_command(args.get(0))
    }

    fn reject(&mut self, server: &Server, out: &mut Out) {
        let Some(e) = self.error.take() else {
            return;
        };
        // Written as raw bytes: the offending byte is echoed as is.
        let msg = e.message_bytes();
        out.buf.push(b'-');
        out.buf.extend(msg.iter().map(|&b| match b {
            b'\r' | b'\n' => b' ',
            b => b,
        }));
        out.buf.extend_from_slice(b"\r\n");
        server.stats.record_error(&e.message());
    }

    #[inline]
    fn read_target(&mut self, unconsumed: usize) -> Option<&mut Vec<u8>> {
        self.parser.big_read_target(unconsumed)
    }

    #[inline]
    fn buffered(&self) -> usize {
        self.parser.big_buffered()
    }

    fn big_progress(&self) -> (usize, usize) {
        self.parser.big_progress()
    }

    #[inline]
    fn wanted(&self) -> Option<usize> {
        self.parser.pending_bulk_bytes()
    }

    fn shrink(&mut self) {
        self.parser.shrink();
    }
}
