//! The seam between the connection loop and a wire protocol.
//!
//! [`super::connection::serve_with`] owns everything a connection does
//! that does not depend on the protocol: the reads, the batch of requests
//! found in one read, client-query-buffer-limit, the output buffers and
//! their limits, one write per batch, idle buffer shrinking, the blocked,
//! subscribed and MONITOR states, and the transport (TCP, unix socket or
//! TLS). A [`Codec`] owns what does: how requests are framed in the read
//! buffer, what a malformed one is answered, and how a request reaches the
//! command layer and its reply the output buffer. RESP is the codec of
//! every listener today ([`super::resp::RespCodec`]); a memcached codec can
//! plug into the same loop by implementing this trait. The loop is generic
//! over its codec, so every call below is static and inlined: a second
//! protocol costs the RESP path nothing.

use crate::db::keyspace::Db;
use crate::resp::Out;
use crate::server::Server;
use crate::stats::ThreadStats;
use std::sync::Arc;

use crate::cmd::client::Client;

/// What a codec sees of its connection while it decodes and executes the
/// requests of one batch (one read's worth of input). Built once per batch
/// by the loop; the codec writes replies into `out`.
pub struct Session<'a> {
    /// The server.
    pub server: &'a Arc<Server>,
    /// The connection's private state (selected database, authentication,
    /// reply mode...).
    pub client: &'a mut Client,
    /// The connection's output buffer: replies are appended to `out.buf`
    /// and sent with one write after the batch.
    pub out: &'a mut Out,
    /// This thread's command statistics.
    pub stats: &'a ThreadStats,
    /// The database selected when the batch started: where the keys of the
    /// requests waiting in the read buffer are prefetched
    /// ([`Db::prefetch`]).
    pub db: &'a Db,
}

/// The result of [`Codec::decode`] on the unconsumed part of the read
/// buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// A complete request of this many bytes (from the start of the
    /// buffer) is ready for [`Codec::execute`].
    Request(usize),
    /// More input is needed (what was seen is remembered by the codec).
    Incomplete,
    /// The input breaks the protocol: the batch stops, the loop calls
    /// [`Codec::reject`] after the replies already produced, and the
    /// connection is closed once they are written (Redis's protocol errors
    /// in `processInputBuffer`).
    Invalid,
}

/// A wire protocol on the connection loop: request framing, protocol
/// errors, dispatch to the command layer and reply encoding.
///
/// For each batch the loop calls [`Self::begin_batch`], then [`Self::decode`]
/// on the unconsumed input and, for every complete request,
/// [`Self::execute`], until the input is incomplete, invalid or the
/// connection must stop executing (blocked client, close, streamed reply,
/// output limits). Offsets are bytes of the read buffer.
pub trait Codec {
    /// A codec for a new connection of `server`.
    fn new(server: &Server) -> Self;

    /// Called after a read, before the batch's first request: picks up
    /// settings that may have changed (limits of the protocol) and resets
    /// per-batch state.
    fn begin_batch(&mut self, s: &Session<'_>);

    /// Frames the next request at the start of `buf` (the read buffer from
    /// the first unconsumed byte). A request spread over several reads is
    /// continued where the previous call stopped.
    fn decode(&mut self, s: &Session<'_>, buf: &[u8]) -> Decoded;

    /// Executes the request [`Self::decode`] just framed: it occupies
    /// `buf[at..at + len]` (`buf` is the whole read buffer, whose bytes past
    /// the request may be used for lookahead such as prefetching keys). Its
    /// reply, if any, goes into `s.out`.
    fn execute(&mut self, s: &mut Session<'_>, buf: &[u8], at: usize, len: usize);

    /// True when the request [`Self::decode`] just framed at `buf[at..]`
    /// may run a script (EVAL, FCALL...): the loop then executes it where a
    /// script past busy-reply-threshold can suspend itself
    /// (script/yielding.rs). False by default.
    fn may_run_script(&self, _buf: &[u8], _at: usize) -> bool {
        false
    }

    /// Answers the protocol error [`Self::decode`] reported with
    /// [`Decoded::Invalid`] (writes the reply into `out`, counts the error).
    fn reject(&mut self, server: &Server, out: &mut Out);

    /// Where the next read should go instead of the read buffer (a large
    /// argument received into its own allocation), given the bytes of the
    /// read buffer not yet consumed. None: the read buffer.
    fn read_target(&mut self, unconsumed: usize) -> Option<&mut Vec<u8>>;

    /// Bytes of the request in progress held outside the read buffer
    /// (counted by client-query-buffer-limit and CLIENT LIST `qbuf`).
    fn buffered(&self) -> usize;

    /// While a big argument is being received: (bytes before it in the
    /// read buffer, already parsed; bytes it declared and has not sent
    /// yet, which Redis would have reserved). For CLIENT LIST `qbuf` and
    /// `qbuf-free` and the client's memory (maxmemory-clients).
    fn big_progress(&self) -> (usize, usize) {
        (0, 0)
    }

    /// How many bytes the read buffer should hold to complete the request
    /// in progress, when it is large enough for the loop to grow the buffer
    /// toward it ahead of the reads. None: normal reads.
    fn wanted(&self) -> Option<usize>;

    /// Gives back memory held for past requests (an idle connection).
    fn shrink(&mut self);
}
