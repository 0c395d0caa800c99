//! One client connection's loop: read what the socket has, decode and
//! execute every complete request in the buffer, then send all replies with
//! one write (pipelining costs one read and one write per batch, not per
//! command). The loop does not know the wire protocol: a [`Codec`] frames
//! and executes the requests ([`super::resp::RespCodec`] for RESP). Protocol
//! errors are answered and the connection is closed, as Redis does; a query
//! buffer over client-query-buffer-limit closes it too.

use super::codec::{Codec, Decoded, Session};
use crate::clients::ClientHandle;
use crate::cmd;
use crate::cmd::client::{Blocked, Client};
use crate::resp::Out;
use crate::server::Server;
use crate::stats::{bump, ThreadStats};
use bytes::{Buf, BytesMut};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const READ_CHUNK: usize = 16 * 1024;

/// A read buffer larger than this (grown by a long pipeline or a large
/// multibulk of small arguments) is replaced by a [`READ_CHUNK`] one as
/// soon as it is empty.
const RBUF_KEEP: usize = 2 * READ_CHUNK;

/// A connection without input for this long gives its buffers back (Redis
/// resizes the query buffer of a client idle for 2 s and shrinks its reply
/// buffer in its client cron: `clientsCronResizeQueryBuffer`,
/// `clientsCronResizeOutputBuffer`).
const IDLE_SHRINK_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// Gives back the memory of an idle connection's buffers: the read buffer
/// keeps only the bytes of a partial request, the reply and outbox buffers
/// and the codec's per-request memory go (they are allocated again by the
/// next request).
fn shrink_idle_buffers<C: Codec>(
    rbuf: &mut BytesMut,
    out: &mut Out,
    spare: &mut Vec<u8>,
    codec: &mut C,
) {
    *rbuf = if rbuf.is_empty() {
        BytesMut::new()
    } else {
        BytesMut::from(&rbuf[..])
    };
    if out.buf.is_empty() {
        out.buf = Vec::new();
    }
    if spare.is_empty() {
        *spare = Vec::new();
    }
    codec.shrink();
}

/// Logs a client closed for client-query-buffer-limit as Redis does:
/// its CLIENT LIST line and the first 64 bytes of what it sent.
fn log_query_buffer_limit(handle: &ClientHandle, rbuf: &[u8], big: usize) {
    let head = &rbuf[..rbuf.len().min(64)];
    tracing::warn!(
        "Closing client that reached max query buffer length: {} (qbuf initial bytes: {}, {} bytes buffered)",
        handle.describe(crate::util::now_ms()),
        {
            let mut r = Vec::new();
            cmd::repr(head, &mut r);
            String::from_utf8_lossy(&r).into_owned()
        },
        rbuf.len() + big
    );
}

/// Serves one RESP connection until it closes. `stream` is a TCP or unix
/// socket, or a TLS session over one.
pub async fn serve<S>(server: Arc<Server>, stream: S, handle: Arc<ClientHandle>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    serve_with::<S, super::resp::RespCodec>(server, stream, handle).await
}

/// Serves one connection speaking codec `C`'s protocol until it closes:
/// the reads, the batches, the limits and the writes of [`serve`], with
/// `C` framing, executing and answering the requests.
pub async fn serve_with<S, C>(server: Arc<Server>, stream: S, handle: Arc<ClientHandle>)
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Codec,
{
    let (mut rd, mut wr) = tokio::io::split(stream);
    let mut client = Client::new(handle.clone());
    client.can_stream = true;
    client.authenticated = !server.acl.auth_required.load(Ordering::Relaxed);
    let mut codec = C::new(&server);
    let mut rbuf = BytesMut::with_capacity(READ_CHUNK);
    let mut out = Out::new();
    // Buffer the outbox is swapped into for writing (pub/sub).
    let mut spare = Vec::new();
    // Since when the normal class's soft output limit is exceeded.
    let soft_since = std::sync::atomic::AtomicU64::new(0);
    let ncmds = cmd::table().all.len();
    // Set after a blocked command was answered: commands already buffered
    // run before the next read.
    let mut resume = false;
    // Set when the read buffer grew past RBUF_KEEP: it is replaced by a
    // small one once empty.
    let mut rbuf_grown = false;
    // After IDLE_SHRINK_AFTER without input the buffers are given back
    // (`minimal`); the timer is re-armed only when it fires, so a busy
    // connection pays one timer event every two seconds, not one per read.
    let idle = tokio::time::sleep(IDLE_SHRINK_AFTER);
    tokio::pin!(idle);
    let mut minimal = false;
    let mut last_input_ms = crate::util::now_ms();
    // A connection runs on one worker thread for its whole life: its
    // counter block is found once.
    let thread_stats = server.stats.local(ncmds);
    'conn: loop {
        if !minimal && rbuf.capacity() - rbuf.len() < 1024 {
            rbuf.reserve(READ_CHUNK);
        }
        rbuf_grown |= rbuf.capacity() > RBUF_KEEP;
        let read = if std::mem::take(&mut resume) {
            Ok(1)
        } else if client.monitor_rx.is_some() {
            match monitor_wait(&mut rd, &mut wr, &mut client, &mut rbuf).await {
                MonitorEvent::Fed => continue,
                MonitorEvent::Gone => break,
                MonitorEvent::Read(r) => r,
            }
        } else if client.pubsub.is_some()
            || client.tracking
            || handle.tracking.target.load(Ordering::Relaxed)
        {
            match pubsub_wait(&server, &handle, &mut rd, &mut wr, &mut rbuf, &mut spare).await {
                MonitorEvent::Fed => continue,
                MonitorEvent::Gone => break,
                MonitorEvent::Read(r) => r,
            }
        } else if let Some(fill) = codec.read_target(rbuf.len()) {
            // A big argument goes straight into its own allocation.
            rd.read_buf(fill).await
        } else if minimal {
            // Nothing to give back: no timer.
            rd.read_buf(&mut rbuf).await
        } else {
            tokio::select! {
                biased;
                r = rd.read_buf(&mut rbuf) => r,
                () = &mut idle => {
                    let now = crate::util::now_ms();
                    let due = last_input_ms + IDLE_SHRINK_AFTER.as_millis() as u64;
                    if now >= due {
                        shrink_idle_buffers(&mut rbuf, &mut out, &mut spare, &mut codec);
                        rbuf_grown = false;
                        minimal = true;
                        // CLIENT LIST of other clients shows the freed
                        // query buffer (qbuf=0 qbuf-free=0), as Redis's
                        // clientsCronResizeQueryBuffer leaves it.
                        update_info(&server, &client, &out, query_sizes(&rbuf, &codec));
                    } else {
                        let wait = std::time::Duration::from_millis(due - now);
                        idle.as_mut().reset(tokio::time::Instant::now() + wait);
                    }
                    continue;
                }
            }
        };
        match read {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        minimal = false;
        // client-query-buffer-limit counts every byte received and not yet
        // executed, big arguments included, and is checked right after the
        // read, before anything runs (Redis's readQueryFromClient).
        let qlimit = server
            .live
            .client_query_buffer_limit
            .load(Ordering::Relaxed) as usize;
        if rbuf.len() + codec.buffered() > qlimit {
            log_query_buffer_limit(&handle, &rbuf, codec.buffered());
            break 'conn;
        }
        if handle.killed.load(Ordering::Relaxed) {
            break;
        }
        if server.clients.eviction_limit() != 0
            && publish_read(&server, &client, query_sizes(&rbuf, &codec))
        {
            break;
        }
        let stats: &ThreadStats = &thread_stats;
        client.qbuf = query_sizes(&rbuf, &codec);
        client.rbs = out.buf.capacity();
        client.clock_us = server.clock.now_us();
        let now = client.clock_us / 1000;
        last_input_ms = now;
        handle.last_ms.store(now, Ordering::Relaxed);
        let mut consumed = 0usize;
        let mut invalid = false;
        let normal_limit = server.live.obl_limit(crate::config::OblClass::Normal);
        let db = server
            .keyspace
            .db(client.db.min(server.keyspace.db_count() - 1));
        let mut s = Session {
            server: &server,
            client: &mut client,
            out: &mut out,
            stats,
            db,
        };
        codec.begin_batch(&s);
        loop {
            match codec.decode(&s, &rbuf[consumed..]) {
                Decoded::Request(n) => {
                    let tracked = s.client.tracking;
                    if tracked {
                        crate::tracking::begin_command(&handle);
                    }
                    if crate::script::yielding::available() && codec.may_run_script(&rbuf, consumed)
                    {
                        // A script past busy-reply-threshold suspends
                        // itself so that this thread's other connections
                        // are answered (script/yielding.rs).
                        let mut job = || codec.execute(&mut s, &rbuf, consumed, n);
                        // SAFETY: until the job finished, this task only
                        // yields and resumes it: nothing it borrows is used
                        // or dropped meanwhile (if the task is dropped while
                        // waiting, `_finish` drives the job to its end
                        // before the borrowed state goes).
                        let outcome = unsafe { crate::script::yielding::run(&mut job) };
                        if outcome == crate::script::yielding::Outcome::Suspended {
                            let _finish = crate::script::yielding::FinishOnDrop;
                            loop {
                                tokio::task::yield_now().await;
                                if crate::script::yielding::resume() {
                                    break;
                                }
                            }
                        }
                        #[allow(dropping_copy_types, clippy::drop_non_drop)]
                        drop(job);
                    } else {
                        codec.execute(&mut s, &rbuf, consumed, n);
                    }
                    consumed += n;
                    if (s.client.pubsub.is_some()
                        || tracked
                        || s.client.tracking
                        || normal_limit.hard | normal_limit.soft != 0)
                        && after_command(
                            &server,
                            s.client,
                            s.out,
                            normal_limit,
                            &soft_since,
                            tracked,
                        )
                    {
                        break 'conn;
                    }
                    if s.client.close_after_reply
                        || s.client.postponed.is_some()
                        || s.client.blocked.is_some()
                        || !s.client.streams.is_empty()
                        || s.client.repl_sync.is_some()
                        || s.client.repl_wait.is_some()
                    {
                        break;
                    }
                }
                Decoded::Incomplete => break,
                Decoded::Invalid => {
                    invalid = true;
                    break;
                }
            }
        }
        bump(&stats.net_in, consumed as u64);
        rbuf.advance(consumed);
        if rbuf.is_empty() && rbuf_grown {
            rbuf = BytesMut::with_capacity(READ_CHUNK);
            rbuf_grown = false;
        } else if rbuf.is_empty() && rbuf.capacity() < READ_CHUNK {
            // Advancing gave up the consumed bytes' room; an empty buffer
            // takes it back (no allocation: the bytes are still ours), so
            // CLIENT LIST shows the whole read buffer, as Redis's qbuf-free
            // does (PROTO_IOBUF_LEN).
            rbuf.reserve(READ_CHUNK);
        }
        crate::workers::spin::batch_done();
        // BCAST invalidations of the keys this batch modified.
        crate::tracking::flush_bcast(&server.tracking_env());
        if invalid {
            codec.reject(&server, &mut out);
            client.close_after_reply = true;
        } else if let Some(need) = codec.wanted() {
            // Grow toward the declared bulk as its bytes arrive (at least
            // doubling), rather than reserving it all at once: with
            // transparent huge pages on, a reservation becomes resident in
            // 2 MiB steps as soon as it is touched, so a client declaring
            // `$536870912` and sending a trickle would pin megabytes.
            // Redis reserves the declared length up front (its memory is
            // not THP-backed); memory here stays within twice what the
            // client actually sent.
            if need > rbuf.len() && rbuf.capacity() - rbuf.len() < READ_CHUNK {
                rbuf.reserve((need - rbuf.len()).min(rbuf.len().max(READ_CHUNK)));
            }
        }
        update_info(&server, &client, &out, query_sizes(&rbuf, &codec));
        if server.propagation.on() {
            // The batch's AOF records are written (and with appendfsync
            // always, fsync'd) before its replies leave.
            if let Some(need) = crate::persist::aof::reply_target(&server) {
                // Group commit: the other connections of this thread that
                // are ready run their batches first, and one write covers
                // all of them (whichever comes first writes).
                tokio::task::yield_now().await;
                crate::persist::aof::before_reply(&server, need);
            }
        }
        if handle.outbox.pending() > 0 && !drain_outbox(&server, &handle, &mut wr, &mut spare).await
        {
            break 'conn;
        }
        if !client.streams.is_empty() {
            // Replies produced chunk by chunk (cmd/stream.rs); the requests
            // still buffered run after them.
            if !drive_streams(
                &server,
                &mut client,
                &mut out,
                &mut wr,
                normal_limit,
                &soft_since,
            )
            .await
            {
                break 'conn;
            }
            resume = true;
        }
        if !out.buf.is_empty() {
            bump(&stats.net_out, out.buf.len() as u64);
            if !send(&mut wr, &out.buf).await {
                break 'conn;
            }
            if out.buf.capacity() > 1024 * 1024 {
                out.buf = Vec::with_capacity(READ_CHUNK);
            } else {
                out.buf.clear();
            }
        }
        if server.shutting_down.load(Ordering::Relaxed) {
            // The connection closes when the process exits, after the
            // listeners (Redis exits inside SHUTDOWN): a client that saw
            // its SHUTDOWN's connection close can no longer connect.
            std::future::pending::<()>().await;
        }
        if client.close_after_reply {
            break;
        }
        if client.postponed.is_some() {
            // CLIENT PAUSE: the request runs once the pause is over (held
            // back again if a new pause began); its reply leaves with the
            // next batch's, or below if it blocks or waits.
            while let Some(req) = client.postponed.take() {
                if !pause_wait(&server, &handle).await {
                    break 'conn;
                }
                client.clock_us = server.clock.now_us();
                cmd::execute(&server, &mut client, &mut out, &req.args(), &thread_stats);
            }
            resume = true;
        }
        if let Some(req) = client.repl_sync.take() {
            // The connection is a replica's from now on.
            cmd::repl::master::serve_replica(
                &server,
                &mut client,
                &mut rd,
                &mut wr,
                &mut rbuf,
                req,
            )
            .await;
            break;
        }
        if let Some(w) = client.repl_wait.take() {
            let n = wait_acks(&server, &handle, &mut rd, &mut rbuf, w).await;
            match n {
                Some(n) => {
                    out.int(n as i64);
                    bump(&thread_stats.net_out, out.buf.len() as u64);
                    if !send(&mut wr, &out.buf).await {
                        break 'conn;
                    }
                    out.buf.clear();
                    resume = true;
                }
                None => break 'conn,
            }
        }
        if let Some(b) = client.blocked.take() {
            let cmd_stat = thread_stats.cmds.get(client.last_cmd);
            match block_wait(&server, &handle, &mut rd, &mut rbuf, b, cmd_stat, &mut out).await {
                true => {
                    update_info(&server, &client, &out, query_sizes(&rbuf, &codec));
                    if server.propagation.on() {
                        crate::persist::aof::before_served_reply(&server);
                    }
                    bump(&thread_stats.net_out, out.buf.len() as u64);
                    if !send(&mut wr, &out.buf).await {
                        break 'conn;
                    }
                    out.buf.clear();
                    resume = true;
                }
                false => break 'conn,
            }
        }
    }
    if let Some(b) = client.blocked.take() {
        b.waiter.claim();
        finish_block(&server, &b.waiter);
    }
    let _ = wr.shutdown().await;
    client.leave_monitor(&server);
    crate::tx::unwatch_all(&server.tx_env(), &mut client.watch);
    crate::pubsub::unsubscribe_all(&server.pubsub_env(), &handle, &mut client.pubsub);
    crate::tracking::disable(&server.tracking_env(), &handle, &mut client.tracking);
    handle.outbox.clear();
    server.clients.remove(handle.id);
}

/// WAIT: until `w.replicas` replicas acknowledged `w.offset`, or the
/// deadline; the number that did. None when the client went away (input
/// that arrives meanwhile stays buffered for after the reply).
async fn wait_acks<R>(
    server: &Server,
    handle: &ClientHandle,
    rd: &mut R,
    rbuf: &mut BytesMut,
    w: cmd::repl::WaitRequest,
) -> Option<usize>
where
    R: AsyncRead + Unpin,
{
    let mut reading = true;
    loop {
        let acked = server.repl.acked.notified();
        tokio::pin!(acked);
        acked.as_mut().enable();
        let n = server.repl.acked_at_least(w.offset);
        if n >= w.replicas || w.deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Some(n);
        }
        let sleep = match w.deadline {
            Some(d) => tokio::time::Instant::from_std(d),
            None => tokio::time::Instant::now() + std::time::Duration::from_secs(3600),
        };
        tokio::select! {
            () = &mut acked => {}
            () = tokio::time::sleep_until(sleep) => {}
            r = rd.read_buf(rbuf), if reading => match r {
                Ok(0) | Err(_) => return None,
                Ok(_) => {
                    if rbuf.len() > 1 << 20 {
                        reading = false;
                    }
                }
            },
        }
        if handle.killed.load(Ordering::Relaxed) {
            return None;
        }
    }
}

/// Output bookkeeping after each command, when the client is subscribed,
/// tracks keys (`tracked`: it did when the command started) or the normal
/// class has an output limit: the replies of a subscribed or tracking
/// client join its outbox (keeping their place among messages, then the
/// invalidations held during the command follow); the output buffer is
/// checked against the client's class limit. True when the client passed
/// it and must be closed (Redis's closeClientOnOutputBufferLimitReached).
fn after_command(
    server: &Server,
    client: &Client,
    out: &mut Out,
    normal: crate::clients::BufLimit,
    soft_since: &std::sync::atomic::AtomicU64,
    tracked: bool,
) -> bool {
    let h = &client.handle;
    let now = crate::util::now_ms();
    let over = if client.pubsub.is_some() || tracked || client.tracking {
        h.outbox.append_own(&mut out.buf, out.resp3);
        if tracked {
            // The command table is consulted only when CLIENT CACHING was
            // given for this command (the flag end_command may reset).
            let keep = h.tracking.flags() & crate::clients::CACHING == 0
                || crate::cmd::keeps_caching(client);
            crate::tracking::end_command(&server.tracking_env(), h, keep);
        }
        h.outbox.over_limit(server.live.limit_for(h), now)
    } else {
        let used = normal_obuf_usage(out.buf.len()) + h.outbox.pending() as u64;
        normal.exceeded(used, soft_since, now)
    };
    if over {
        h.close_for_limits();
        out.buf = Vec::new();
        h.outbox.clear();
    }
    over
}

/// Size of Redis's per-client static reply buffer (PROTO_REPLY_CHUNK_BYTES):
/// replies that fit in it do not count toward the output buffer limits.
pub const REPLY_STATIC_BYTES: usize = 16 * 1024;

/// Bookkeeping bytes Redis adds per reply block (a list node and the
/// block header: `sizeof(listNode) + sizeof(clientReplyBlock)`).
const REPLY_BLOCK_OVERHEAD: u64 = 40;

/// What the output buffer limits of a normal client count for `len` bytes
/// of pending replies: Redis's `getClientOutputBufferMemoryUsage` counts
/// only the reply list, i.e. what overflows the 16 KiB static buffer, in
/// blocks of at least 16 KiB each with their bookkeeping (networking.c
/// `_addReplyProtoToList`). So `client-output-buffer-limit normal 1 1 1`
/// still lets a PING or a GET of a 2 KB value through, as in Redis.
pub fn normal_obuf_usage(len: usize) -> u64 {
    if len <= REPLY_STATIC_BYTES {
        return 0;
    }
    let over = (len - REPLY_STATIC_BYTES) as u64;
    let block = REPLY_STATIC_BYTES as u64;
    let blocks = over.div_ceil(block);
    blocks * (block + REPLY_BLOCK_OVERHEAD)
}

/// Produces the replies left in `client.streams` in order, with the
/// replies written after each of them, and sends them; what is left in
/// `out.buf` afterwards is sent by the caller. The normal class's limits
/// apply to each streamed reply as if all of it were buffered (Redis
/// builds it in memory): with a hard limit nothing is sent until the reply
/// is complete, and the client is closed as soon as the reply passes the
/// limit; without one, each chunk is sent as it is produced. Between chunks
/// the task yields, so other clients of this thread are served. False when
/// the client was closed or the socket failed.
async fn drive_streams<W>(
    server: &Server,
    client: &mut Client,
    out: &mut Out,
    wr: &mut W,
    limit: crate::clients::BufLimit,
    soft_since: &std::sync::atomic::AtomicU64,
) -> bool
where
    W: AsyncWrite + Unpin,
{
    use crate::cmd::stream::CHUNK;
    let streams = std::mem::take(&mut client.streams);
    let written = std::mem::take(&mut out.buf);
    let hold = limit.hard > 0;
    let mut pos = 0;
    for mut s in streams {
        out.buf.extend_from_slice(&written[pos..s.at]);
        pos = s.at;
        let mut produced = 0usize;
        loop {
            let before = out.buf.len();
            let done = s.picks.fill(out, CHUNK);
            produced += out.buf.len() - before;
            let used = normal_obuf_usage(produced + s.picks.copy_size());
            if limit.exceeded(used, soft_since, crate::util::now_ms())
                || client.handle.killed.load(Ordering::Relaxed)
            {
                client.handle.close_for_limits();
                out.buf = Vec::new();
                return false;
            }
            if done {
                break;
            }
            if !hold && out.buf.len() >= CHUNK {
                bump(
                    &server.stats.local(cmd::table().all.len()).net_out,
                    out.buf.len() as u64,
                );
                if !send(wr, &out.buf).await {
                    return false;
                }
                out.buf.clear();
            }
            tokio::task::yield_now().await;
        }
    }
    out.buf.extend_from_slice(&written[pos..]);
    true
}

/// Writes what the outbox holds (one take: messages arriving meanwhile
/// wait for the next wake-up). False when the socket failed or the client
/// was closed for its output limits.
async fn drain_outbox<W>(
    server: &Server,
    handle: &ClientHandle,
    wr: &mut W,
    spare: &mut Vec<u8>,
) -> bool
where
    W: AsyncWrite + Unpin,
{
    handle.outbox.take(spare);
    if spare.is_empty() {
        return !handle.outbox.is_closed();
    }
    let n = spare.len();
    let ok = send(wr, spare).await;
    handle.outbox.written(n);
    bump(
        &server.stats.local(cmd::table().all.len()).net_out,
        n as u64,
    );
    if spare.capacity() > 1024 * 1024 {
        *spare = Vec::new();
    } else {
        spare.clear();
    }
    ok && !handle.outbox.is_closed()
}

/// Subscribed mode: waits for either outbox bytes (written at once) or
/// input from the client, which is then parsed and executed as usual.
async fn pubsub_wait<R, W>(
    server: &Server,
    handle: &ClientHandle,
    rd: &mut R,
    wr: &mut W,
    rbuf: &mut BytesMut,
    spare: &mut Vec<u8>,
) -> MonitorEvent
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    tokio::select! {
        biased;
        _ = handle.outbox.notify.notified() => {
            if drain_outbox(server, handle, wr, spare).await {
                MonitorEvent::Fed
            } else {
                MonitorEvent::Gone
            }
        }
        // read_buf is cancel safe: bytes are either in rbuf or still in the socket.
        r = rd.read_buf(rbuf) => MonitorEvent::Read(r),
    }
}

/// Writes `buf` and flushes: a TLS stream keeps encrypted records it could
/// not send yet inside the TLS session until the next write or flush, so
/// without the flush a reply could wait forever while the connection waits
/// for the client's next request (a plain TCP flush does nothing).
/// False when the peer is gone.
async fn send<W: AsyncWrite + Unpin>(wr: &mut W, buf: &[u8]) -> bool {
    wr.write_all(buf).await.is_ok() && wr.flush().await.is_ok()
}

/// CLIENT LIST `qbuf` and `qbuf-free` as Redis reports them: the bytes
/// received and not yet executed (a big argument's own allocation
/// included, the request's bytes parsed before it not: Redis moved them
/// into the arguments), and the free room (a big argument's declared
/// bytes still to come included: Redis reserved them).
fn query_sizes<C: Codec>(rbuf: &BytesMut, codec: &C) -> (usize, usize) {
    let (before, expected) = codec.big_progress();
    (
        (rbuf.len() + codec.buffered()).saturating_sub(before),
        rbuf.capacity() - rbuf.len() + expected,
    )
}

/// Publishes the client's fields for CLIENT LIST and its memory for
/// maxmemory-clients, then evicts clients if the clients' memory is over it
/// (Redis's beforeNextClient / beforeSleep `evictClients`).
/// CLIENT LIST `qbuf` and `qbuf-free` (see [`query_sizes`]).
fn update_info(server: &Server, client: &Client, out: &Out, q: (usize, usize)) {
    let (live, watched) = update_fields(client, out, q);
    let h = &client.handle;
    h.publish_memory(&server.clients, h.memory_of(&live, watched));
    server.clients.evict();
}

/// Right after a read while maxmemory-clients is set: the bytes just read
/// count before any of them runs (Redis evicts before processCommand), so a
/// client sending an oversized argument is closed before it is executed.
/// True when this client was evicted.
fn publish_read(server: &Server, client: &Client, q: (usize, usize)) -> bool {
    let h = &client.handle;
    let (mut live, watched) = {
        let i = h.info.lock();
        (crate::clients::LiveFields::published(&i), i.watched)
    };
    (live.qbuf, live.qbuf_free) = q;
    h.publish_memory(&server.clients, h.memory_of(&live, watched));
    server.clients.evict();
    h.killed.load(Ordering::Relaxed)
}

fn update_fields(
    client: &Client,
    out: &Out,
    q: (usize, usize),
) -> (crate::clients::LiveFields, usize) {
    let mut i = client.handle.info.lock();
    i.db = client.db;
    (i.qbuf, i.qbuf_free) = q;
    // The batch's replies are written right after this: other clients see
    // the reply buffer empty (obl 0, as in Redis once a reply was sent);
    // rbp keeps the size of the last batch of replies.
    i.obl = 0;
    i.rbs = out.buf.capacity();
    i.rbp = out.buf.len();
    match client.multi.as_ref() {
        Some(m) => {
            i.multi = Some(m.queued.len());
            i.multi_mem = m.argv_mem;
        }
        None => {
            i.multi = None;
            i.multi_mem = 0;
        }
    }
    if client.blocked.is_none() {
        i.argv_mem = 0;
    }
    if let Some(c) = cmd::table().all.get(client.last_cmd) {
        if i.last_cmd != c.name {
            i.last_cmd.clear();
            i.last_cmd.push_str(c.name);
        }
    }
    i.watched = client.watch.as_ref().map_or(0, |w| w.len());
    (crate::clients::LiveFields::published(&i), i.watched)
}

/// Removes a finished waiter from its key queues and from the client
/// handle.
fn finish_block(server: &Server, w: &Arc<crate::db::blocking::Waiter>) {
    crate::db::blocking::unregister(&server.keyspace, w);
    let h = server.clients.get(w.client_id);
    if let Some(h) = h {
        h.blocked.lock().take();
    }
}

/// Waits while CLIENT PAUSE holds the connection's request back; false
/// when the client was killed meanwhile or the server shuts down.
async fn pause_wait(server: &Server, handle: &ClientHandle) -> bool {
    handle.postponed.store(true, Ordering::Relaxed);
    let ok = pause_wait_inner(server, handle).await;
    handle.postponed.store(false, Ordering::Relaxed);
    ok
}

async fn pause_wait_inner(server: &Server, handle: &ClientHandle) -> bool {
    loop {
        if handle.killed.load(Ordering::Relaxed) || server.shutting_down.load(Ordering::Relaxed) {
            return false;
        }
        let now = server.clock.now_ms();
        if server.pause.kind_at(now) == crate::pause::NONE {
            return true;
        }
        tokio::select! {
            () = server.pause.wait(now) => {}
            () = tokio::time::sleep(std::time::Duration::from_millis(100)) => {}
        }
    }
}

/// Waits while the client is blocked on keys: for the served reply (or a
/// CLIENT UNBLOCK), the deadline, or the socket closing. Input that arrives
/// meanwhile stays buffered in `rbuf`. Writes the reply into `out` and
/// returns true, or returns false when the connection is gone (the waiter
/// is then removed, leaving nothing behind). A CLIENT UNBLOCK ERROR or a
/// served error reply counts as a failed call of the blocked command
/// (`cmd_stat`), as Redis's afterErrorReply does for the unblocked client.
async fn block_wait<R>(
    server: &Server,
    handle: &ClientHandle,
    rd: &mut R,
    rbuf: &mut BytesMut,
    mut b: Blocked,
    cmd_stat: Option<&crate::stats::CmdStat>,
    out: &mut Out,
) -> bool
where
    R: AsyncRead + Unpin,
{
    use crate::db::blocking::Wake;
    let limit = server
        .live
        .client_query_buffer_limit
        .load(Ordering::Relaxed) as usize;
    let sleep = async {
        match b.deadline {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => std::future::pending::<()>().await,
        }
    };
    tokio::pin!(sleep);
    let wake = loop {
        if rbuf.capacity() - rbuf.len() < 1024 {
            rbuf.reserve(READ_CHUNK);
        }
        tokio::select! {
            w = &mut b.rx => break w.ok(),
            _ = &mut sleep => {
                if b.waiter.claim() {
                    break Some(Wake::Timeout);
                }
                // Served just before the deadline: the reply is on its way.
                break (&mut b.rx).await.ok();
            }
            r = rd.read_buf(rbuf) => {
                let gone = !matches!(r, Ok(n) if n > 0)
                    || handle.killed.load(Ordering::Relaxed)
                    || rbuf.len() > limit;
                if gone {
                    b.waiter.claim();
                    finish_block(server, &b.waiter);
                    return false;
                }
            }
        }
    };
    finish_block(server, &b.waiter);
    match wake {
        Some(Wake::Served(bytes)) => {
            // An error reply (a blocked XREADGROUP's group or key gone:
            // -NOGROUP / -UNBLOCKED) is a failed call of the command, as
            // Redis's afterErrorReply counts it; errorstats has it already.
            if bytes.first() == Some(&b'-') {
                if let Some(cs) = cmd_stat {
                    bump(&cs.failed, 1);
                }
            }
            out.buf.extend_from_slice(&bytes);
        }
        Some(w @ (Wake::Error | Wake::StateChanged)) => {
            let msg = if matches!(w, Wake::Error) {
                "UNBLOCKED client unblocked via CLIENT UNBLOCK"
            } else {
                // Closed once the reply is out (CLIENT_CLOSE_AFTER_REPLY):
                // the loop stops at its next turn.
                handle.killed.store(true, Ordering::Relaxed);
                "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"
            };
            out.error(msg);
            server.stats.record_error(msg);
            if let Some(cs) = cmd_stat {
                bump(&cs.failed, 1);
            }
        }
        Some(Wake::Timeout) | None => out.null_array(),
    }
    true
}

enum MonitorEvent {
    /// A feed line was written.
    Fed,
    /// The feed ended or the socket failed.
    Gone,
    /// The client sent something (or closed): process it as usual.
    Read(std::io::Result<usize>),
}

/// MONITOR mode: waits for either a feed line (written at once) or input
/// from the client, which is then parsed and executed as usual (QUIT, RESET
/// and other commands still work while monitoring, as in Redis).
async fn monitor_wait<R, W>(
    rd: &mut R,
    wr: &mut W,
    client: &mut Client,
    rbuf: &mut BytesMut,
) -> MonitorEvent
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let Some(rx) = client.monitor_rx.as_mut() else {
        return MonitorEvent::Fed;
    };
    tokio::select! {
        msg = rx.recv() => match msg {
            Some(line) if send(wr, &line).await => MonitorEvent::Fed,
            _ => MonitorEvent::Gone,
        },
        // read_buf is cancel safe: bytes are either in rbuf or still in the socket.
        r = rd.read_buf(rbuf) => MonitorEvent::Read(r),
    }
}

impl Client {
    /// Leaves MONITOR mode (RESET, connection close): unregisters the feed.
    pub fn leave_monitor(&mut self, server: &Server) {
        if self.monitor_rx.take().is_some() {
            server
                .monitors
                .lock()
                .retain(|(id, _)| *id != self.handle.id);
            server.monitor_count.fetch_sub(1, Ordering::Relaxed);
            self.handle.monitor.store(false, Ordering::Relaxed);
        }
    }
}
