//! The master side: a replica's connection after its PSYNC / SYNC
//! (Redis's syncCommand, masterTryPartialResynchronization,
//! replicationSetupSlaveForFullResync, the replica's output buffer and
//! REPLCONF ACK handling).
//!
//! **Full synchronisation without fork.** A point-in-time copy of the
//! keyspace (persist/snapshot.rs: copy-on-write per key) is begun while
//! writes are paused, at the same instant as the replica's position in the
//! stream is taken, so the RDB and the stream that follows it meet exactly.
//! A thread serialises the copy shard by shard into a bounded channel;
//! the connection sends the chunks as they come (`$EOF:<mark>` framing,
//! `repl-diskless-sync yes`) or, for replicas that cannot read that, or
//! with `repl-diskless-sync no`, first into a file whose length then
//! frames the transfer (`$<len>`). Writers go on meanwhile; the master's
//! memory grows by the keys they change before the walk reaches them, not
//! by a copy of the dataset.
//!
//! **The stream.** The replica is then a reader of the backlog
//! (repl/mod.rs): bytes after its position are sent as they are appended;
//! a replica further behind than the `client-output-buffer-limit replica`
//! class allows is disconnected (it will resynchronise).

use super::SyncRequest;
use crate::cmd::client::Client;
use crate::repl::{ReplicaInfo, STATE_ONLINE, STATE_SEND_BULK, STATE_WAIT_BGSAVE};
use crate::server::Server;
use bytes::BytesMut;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// What a connection told with REPLCONF before its PSYNC.
#[derive(Debug, Default, Clone)]
pub struct ReplConf {
    /// `listening-port`.
    pub port: u16,
    /// `ip-address` (replica-announce-ip).
    pub ip: Option<String>,
    /// `capa eof`.
    pub capa_eof: bool,
    /// `capa psync2`.
    pub capa_psync2: bool,
    /// `rdb-only 1`: only the RDB, no stream (redis-cli --rdb).
    pub rdb_only: bool,
    /// `rdb-filter-only`: the RDB leaves the keys out.
    pub exclude_data: bool,
    /// `rdb-filter-only` without `functions`: the RDB leaves the function
    /// libraries out.
    pub exclude_functions: bool,
}

impl ReplConf {
    /// True when the RDB is filtered (REPLCONF rdb-filter-only), which is
    /// then always sent over the socket, as Redis forces.
    pub fn filtered(&self) -> bool {
        self.exclude_data || self.exclude_functions
    }
}

/// How often a replica waiting for its RDB to start gets a newline to keep
/// the link alive (Redis's replicationCron writes one a second to replicas
/// waiting for a BGSAVE, and to disk-based ones while the file is written).
const KEEPALIVE: Duration = Duration::from_secs(1);

/// The GETACK request every replica answers with its offset.
const GETACK: &[u8] = b"*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n";
/// The master's keep-alive in the stream, in lower case as Redis writes
/// it (its shared `ping` object).
const PING: &[u8] = b"*1\r\n$4\r\nping\r\n";

/// Asks every replica for an acknowledgement (WAIT).
pub fn request_acks(server: &Server) {
    if !server.repl.replicas.lock().is_empty() {
        server.repl.backlog.feed(GETACK);
    }
}

/// Replication's part of the once-a-second cron (Redis's
/// replicationCron): a PING into the stream every
/// `repl-ping-replica-period` seconds while replicas are attached, and the
/// backlog freed after `repl-backlog-ttl` seconds without replicas.
pub fn cron(server: &Arc<Server>, tick_s: u64) {
    let r = &server.repl;
    if r.backlog.replica_mode() {
        return;
    }
    let (period, ttl) = {
        let c = server.config.read();
        (
            c.get_u64("repl-ping-replica-period").max(1),
            c.get_u64("repl-backlog-ttl"),
        )
    };
    let n = r.replicas.lock().len();
    if n > 0 {
        if tick_s.is_multiple_of(period) {
            r.backlog.feed(PING);
        }
        return;
    }
    if r.backlog.active() && ttl > 0 {
        let since = r.no_replicas_since_ms.load(Ordering::Relaxed);
        if since != 0 && server.clock.now_ms().saturating_sub(since) > ttl * 1000 {
            // A new history starts: the old id cannot be continued.
            r.backlog.free();
            server
                .propagation
                .set_user(crate::propagate::USER_REPL, false);
            r.new_history(None);
            tracing::info!(
                "Replication backlog freed after {ttl} seconds without connected replicas."
            );
        }
    }
}

/// Writes `bytes`, giving up when the replica is killed or falls behind
/// its output limit while the write waits. False when the replica must
/// go.
async fn send_checked<W: AsyncWrite + Unpin>(
    server: &Server,
    client: &Client,
    wr: &mut W,
    bytes: &[u8],
    pos: u64,
    soft_since: &AtomicU64,
) -> bool {
    let mut off = 0;
    while off < bytes.len() {
        tokio::select! {
            r = wr.write(&bytes[off..]) => match r {
                Ok(0) | Err(_) => return false,
                Ok(n) => off += n,
            },
            () = tokio::time::sleep(Duration::from_millis(100)) => {
                if over_limit(server, client, pos, soft_since) {
                    return false;
                }
            }
        }
    }
    true
}

/// True when the replica at `pos` is behind by more than its output
/// buffer class allows (or was killed).
fn over_limit(server: &Server, client: &Client, pos: u64, soft_since: &AtomicU64) -> bool {
    if client.handle.killed.load(Ordering::Relaxed) || server.shutting_down.load(Ordering::Relaxed)
    {
        return true;
    }
    let lag = server.repl.backlog.end().saturating_sub(pos);
    let limit = server.live.obl_limit(crate::config::OblClass::Replica);
    if limit.exceeded(lag, soft_since, crate::util::now_ms()) {
        tracing::warn!(
            "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
            client.handle.describe(crate::util::now_ms())
        );
        return true;
    }
    false
}

/// Serves a replica's connection after its PSYNC/SYNC until it goes.
pub async fn serve_replica<R, W>(
    server: &Arc<Server>,
    client: &mut Client,
    rd: &mut R,
    wr: &mut W,
    rbuf: &mut BytesMut,
    req: SyncRequest,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let conf = client.repl_conf.take().map(|b| *b).unwrap_or_default();
    let r = &server.repl;
    let info = Arc::new(ReplicaInfo {
        client_id: client.handle.id,
        ..Default::default()
    });
    let ip = conf.ip.clone().unwrap_or_else(|| {
        let a = &client.handle.addr;
        a.rsplit_once(':')
            .map(|(h, _)| h.trim_matches(|c| c == '[' || c == ']').to_string())
            .unwrap_or_else(|| a.clone())
    });
    *info.ip.lock() = ip;
    info.port.store(conf.port as u64, Ordering::Relaxed);
    info.ack_ms.store(crate::util::now_ms(), Ordering::Relaxed);
    {
        let mut i = client.handle.info.lock();
        if !i.flags.contains('S') {
            i.flags.insert(0, 'S');
        }
    }
    // Partial resynchronisation when the id and offset allow it.
    let mut reader = None;
    if let Some(id) = req.replid.as_deref() {
        if id != "?" {
            let ids = r.ids.lock().clone();
            let id_ok = id == ids.replid || (id == ids.replid2 && req.offset <= ids.second_offset);
            if id_ok && r.backlog.active() && req.offset >= 1 {
                reader = r.backlog.add_reader(req.offset as u64 - 1);
            }
            if reader.is_none() {
                r.sync_partial_err.fetch_add(1, Ordering::Relaxed);
                tracing::info!(
                    "Partial resynchronization not accepted: replid {id} offset {} (mine {} {})",
                    req.offset,
                    ids.replid,
                    r.backlog.end()
                );
            }
        }
    }
    let soft_since = AtomicU64::new(0);
    if let Some(id) = reader {
        let replid = r.ids.lock().replid.clone();
        let line = if conf.capa_psync2 {
            format!("+CONTINUE {replid}\r\n")
        } else {
            "+CONTINUE\r\n".to_string()
        };
        r.sync_partial_ok.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            "Partial resynchronization request from {} accepted. Sending {} bytes of backlog starting from offset {}.",
            client.handle.addr,
            r.backlog.end() + 1 - req.offset as u64,
            req.offset
        );
        let pos = req.offset as u64 - 1;
        info.state.store(STATE_ONLINE, Ordering::Relaxed);
        info.ack_offset.store(pos, Ordering::Relaxed);
        r.replicas.lock().push(info.clone());
        if !send_checked(server, client, wr, line.as_bytes(), pos, &soft_since).await {
            leave(server, &info, id);
            return;
        }
        stream(server, client, rd, wr, rbuf, &info, id, pos, &soft_since).await;
        leave(server, &info, id);
        return;
    }
    // Full resynchronisation.
    r.sync_full.fetch_add(1, Ordering::Relaxed);
    if !r.backlog.active() {
        // A new backlog starts a new history (syncCommand).
        r.new_history(None);
        let size = server.config.read().get_u64("repl-backlog-size") as usize;
        r.backlog.create(r.backlog.end(), size);
        // A replica's backlog holds its master's bytes, not its own records.
        server
            .propagation
            .set_user(crate::propagate::USER_REPL, !r.backlog.replica_mode());
        let ids = r.ids.lock().clone();
        tracing::info!(
            "Replication backlog created, my new replication IDs are '{}' and '{}'",
            ids.replid,
            ids.replid2
        );
    }
    info.state.store(STATE_WAIT_BGSAVE, Ordering::Relaxed);
    r.replicas.lock().push(info.clone());
    let (diskless_conf, delay) = {
        let c = server.config.read();
        (
            c.get_bool("repl-diskless-sync") && conf.capa_eof,
            c.get_u64("repl-diskless-sync-delay"),
        )
    };
    // A filtered RDB always goes over the socket (Redis's
    // startBgsaveForReplication); the delay is diskless sync's own.
    let diskless = diskless_conf || (conf.filtered() && conf.capa_eof);
    if diskless_conf && delay > 0 {
        tracing::info!("Delay next BGSAVE for diskless SYNC");
        let until = tokio::time::Instant::now() + Duration::from_secs(delay);
        while tokio::time::Instant::now() < until {
            let tick = (tokio::time::Instant::now() + KEEPALIVE).min(until);
            tokio::time::sleep_until(tick).await;
            if tick < until && (wr.write_all(b"\n").await.is_err() || wr.flush().await.is_err()) {
                leave_unregistered(server, &info);
                return;
            }
        }
    }
    tracing::info!(
        "Starting BGSAVE for SYNC with target: {}",
        if diskless { "replicas sockets" } else { "disk" }
    );
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(8);
    let (otx, orx) = tokio::sync::oneshot::channel::<(u64, u64)>();
    let srv = server.clone();
    let filter = (conf.exclude_data, conf.exclude_functions);
    let spawned = std::thread::Builder::new()
        .name("ferrokv-replsync".into())
        .spawn(move || produce_rdb(&srv, tx, otx, filter));
    if spawned.is_err() {
        leave_unregistered(server, &info);
        return;
    }
    let Ok((offset, id)) = orx.await else {
        leave_unregistered(server, &info);
        return;
    };
    let pos = offset;
    let replid = r.ids.lock().replid.clone();
    info.state.store(STATE_SEND_BULK, Ordering::Relaxed);
    // A replica that came with the old SYNC gets no +FULLRESYNC line
    // (Redis's CLIENT_PRE_PSYNC): the payload's header comes first, as
    // redis-cli --rdb expects.
    let mut ok = req.replid.is_none() || {
        let line = format!("+FULLRESYNC {replid} {offset}\r\n");
        send_checked(server, client, wr, line.as_bytes(), pos, &soft_since).await
    };
    if ok && diskless {
        let mark = crate::repl::random_id();
        ok = send_checked(
            server,
            client,
            wr,
            format!("$EOF:{mark}\r\n").as_bytes(),
            pos,
            &soft_since,
        )
        .await;
        while ok {
            match rx.recv().await {
                Some(chunk) => {
                    ok = send_checked(server, client, wr, &chunk, pos, &soft_since).await;
                }
                None => break,
            }
        }
        ok = ok && send_checked(server, client, wr, mark.as_bytes(), pos, &soft_since).await;
    } else if ok {
        ok = send_via_file(server, client, wr, &mut rx, pos, &soft_since).await;
    }
    drop(rx);
    if !ok {
        tracing::warn!(
            "Replica {} lost during the transfer of the RDB",
            client.handle.addr
        );
        leave(server, &info, id);
        return;
    }
    tracing::info!(
        "Synchronization with replica {} succeeded",
        client.handle.addr
    );
    if conf.rdb_only {
        leave(server, &info, id);
        return;
    }
    if diskless {
        // The stream starts after the replica's first ACK (Redis's
        // repl_start_cmd_stream_on_ack): a replica finds the end of an
        // $EOF: transfer by the mark being the last bytes it read, so
        // nothing may follow the mark until it has loaded.
        let timeout = Duration::from_secs(server.config.read().get_u64("repl-timeout").max(1));
        let mut parser = crate::resp::parse::RequestParser::default();
        let acked = tokio::time::timeout(timeout, async {
            while info.state.load(Ordering::Relaxed) != STATE_ONLINE {
                match rd.read_buf(rbuf).await {
                    Ok(0) | Err(_) => return false,
                    Ok(_) => {
                        if !read_acks(server, &info, &mut parser, rbuf) {
                            return false;
                        }
                    }
                }
            }
            true
        })
        .await;
        if acked != Ok(true) {
            tracing::warn!(
                "Replica {} did not acknowledge the RDB transfer",
                client.handle.addr
            );
            leave(server, &info, id);
            return;
        }
    }
    info.state.store(STATE_ONLINE, Ordering::Relaxed);
    info.ack_ms.store(crate::util::now_ms(), Ordering::Relaxed);
    stream(server, client, rd, wr, rbuf, &info, id, pos, &soft_since).await;
    leave(server, &info, id);
}

/// The disk-backed transfer: the RDB into a file in the working
/// directory, then `$<len>` and its bytes.
async fn send_via_file<W: AsyncWrite + Unpin>(
    server: &Server,
    client: &Client,
    wr: &mut W,
    rx: &mut tokio::sync::mpsc::Receiver<Vec<u8>>,
    pos: u64,
    soft_since: &AtomicU64,
) -> bool {
    let path = std::path::PathBuf::from(format!(
        "temp-repl-{}-{}.rdb",
        std::process::id(),
        client.handle.id
    ));
    let res = async {
        let mut f = tokio::fs::File::create(&path).await.ok()?;
        let mut len = 0u64;
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + KEEPALIVE, KEEPALIVE);
        loop {
            tokio::select! {
                chunk = rx.recv() => match chunk {
                    Some(chunk) => {
                        f.write_all(&chunk).await.ok()?;
                        len += chunk.len() as u64;
                    }
                    None => break,
                },
                _ = tick.tick() => {
                    // Redis's newline to a replica waiting for a disk BGSAVE.
                    if !send_checked(server, client, wr, b"\n", pos, soft_since).await {
                        return None;
                    }
                }
            }
        }
        f.flush().await.ok()?;
        drop(f);
        if !send_checked(
            server,
            client,
            wr,
            format!("${len}\r\n").as_bytes(),
            pos,
            soft_since,
        )
        .await
        {
            return None;
        }
        let mut f = tokio::fs::File::open(&path).await.ok()?;
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = f.read(&mut buf).await.ok()?;
            if n == 0 {
                break;
            }
            if !send_checked(server, client, wr, &buf[..n], pos, soft_since).await {
                return None;
            }
        }
        Some(())
    }
    .await;
    let _ = tokio::fs::remove_file(&path).await;
    res.is_some()
}

/// An `io::Write` that hands 256 KiB chunks to the connection.
struct ChunkWriter {
    tx: tokio::sync::mpsc::Sender<Vec<u8>>,
    buf: Vec<u8>,
}

const CHUNK: usize = 256 * 1024;

impl std::io::Write for ChunkWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= CHUNK {
            self.flush()?;
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        self.tx
            .blocking_send(chunk)
            .map_err(|_| std::io::Error::other("replica gone"))
    }
}

/// The snapshot thread: pauses writes, begins the point-in-time copy,
/// takes the stream position (a reader of the backlog, registered at
/// once so the bytes after it stay), reports (offset, reader id), then
/// serialises the copy as an RDB into `tx`.
fn produce_rdb(
    server: &Arc<Server>,
    tx: tokio::sync::mpsc::Sender<Vec<u8>>,
    otx: tokio::sync::oneshot::Sender<(u64, u64)>,
    (exclude_data, exclude_functions): (bool, bool),
) {
    let r = &server.repl;
    let paused = server.propagation.pause_writes();
    // Chosen with writes paused: the copy and the header agree on it.
    let version = crate::persist::rdb::save_version(&**server);
    let snap = crate::persist::snapshot::Snapshot::begin(
        &server.keyspace,
        server.clock.now_ms(),
        crate::persist::rdb::key_serialiser(&**server, version),
    );
    let offset = r.backlog.end();
    r.backlog.forget_db();
    let Some(id) = r.backlog.add_reader(offset) else {
        return;
    };
    drop(paused);
    if otx.send((offset, id)).is_err() {
        r.backlog.remove_reader(id);
        return;
    }
    let mut w = ChunkWriter {
        tx,
        buf: Vec::with_capacity(CHUNK),
    };
    let res = crate::persist::rdb::write_snapshot_from(
        &**server,
        &mut w,
        false,
        crate::persist::rdb::SaveCtl {
            exclude_data,
            exclude_functions,
            ..Default::default()
        },
        version,
        &mut |d, i, b| Some(snap.shard(d, i, b)),
    )
    .and_then(|_| std::io::Write::flush(&mut w));
    if let Err(e) = res {
        tracing::warn!("Background transfer of the RDB to a replica stopped: {e}");
    }
}

/// Removes a replica that never got a reader.
fn leave_unregistered(server: &Server, info: &Arc<ReplicaInfo>) {
    let r = &server.repl;
    let mut v = r.replicas.lock();
    v.retain(|x| !Arc::ptr_eq(x, info));
    if v.is_empty() {
        r.no_replicas_since_ms
            .store(server.clock.now_ms(), Ordering::Relaxed);
    }
}

/// The replica went: its reader and its entry are removed.
fn leave(server: &Server, info: &Arc<ReplicaInfo>, reader: u64) {
    server.repl.backlog.remove_reader(reader);
    leave_unregistered(server, info);
    server.repl.acked.notify_waiters();
    tracing::info!(
        "Connection with replica {}:{} lost.",
        info.ip.lock(),
        info.port.load(Ordering::Relaxed)
    );
}

/// Sends the stream from `pos` on and reads the replica's
/// acknowledgements, until it goes, falls too far behind or times out.
#[allow(clippy::too_many_arguments)]
async fn stream<R, W>(
    server: &Arc<Server>,
    client: &mut Client,
    rd: &mut R,
    wr: &mut W,
    rbuf: &mut BytesMut,
    info: &Arc<ReplicaInfo>,
    reader: u64,
    mut pos: u64,
    soft_since: &AtomicU64,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let backlog = server.repl.backlog.clone();
    let mut parser = crate::resp::parse::RequestParser::default();
    let mut buf = Vec::with_capacity(64 * 1024);
    // Acknowledgements already buffered (sent right after PSYNC).
    if !read_acks(server, info, &mut parser, rbuf) {
        return;
    }
    loop {
        backlog.waiting(true);
        let notified = backlog.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        buf.clear();
        match backlog.read(reader, &mut buf, 1 << 20) {
            Ok(p) => {
                if !buf.is_empty() {
                    backlog.waiting(false);
                    if !send_checked(server, client, wr, &buf, pos, soft_since).await {
                        return;
                    }
                    pos = p;
                    if buf.capacity() > 4 << 20 {
                        buf = Vec::with_capacity(64 * 1024);
                    }
                    continue;
                }
            }
            Err(_) => {
                backlog.waiting(false);
                return;
            }
        }
        if over_limit(server, client, pos, soft_since) {
            backlog.waiting(false);
            return;
        }
        let timeout_ms = server.config.read().get_u64("repl-timeout") * 1000;
        let woken = tokio::select! {
            () = &mut notified => true,
            res = rd.read_buf(rbuf) => {
                match res {
                    Ok(0) | Err(_) => {
                        backlog.waiting(false);
                        return;
                    }
                    Ok(_) => {
                        if !read_acks(server, info, &mut parser, rbuf) {
                            backlog.waiting(false);
                            return;
                        }
                    }
                }
                false
            }
            () = tokio::time::sleep(Duration::from_secs(1)) => {
                let now = crate::util::now_ms();
                if now.saturating_sub(info.ack_ms.load(Ordering::Relaxed)) > timeout_ms {
                    tracing::warn!("Disconnecting timedout replica (streaming sync): {}", client.handle.addr);
                    backlog.waiting(false);
                    return;
                }
                false
            }
        };
        backlog.waiting(false);
        if woken {
            // The other connections of this thread run their batches
            // first: one write then carries all their units (Redis writes
            // to replicas once per event-loop iteration).
            tokio::task::yield_now().await;
        }
    }
}

/// Handles the replica's complete requests in `rbuf` (REPLCONF ACK
/// offset [FACK offset]; anything else is ignored). False on a protocol
/// error.
fn read_acks(
    server: &Server,
    info: &ReplicaInfo,
    parser: &mut crate::resp::parse::RequestParser,
    rbuf: &mut BytesMut,
) -> bool {
    use crate::resp::parse::Parsed;
    let mut consumed = 0;
    loop {
        match parser.parse(&rbuf[consumed..]) {
            Ok(Parsed::Request(n)) => {
                let args = parser.args(&rbuf[consumed..]);
                if args.len() >= 3
                    && args.get(0).eq_ignore_ascii_case(b"replconf")
                    && args.get(1).eq_ignore_ascii_case(b"ack")
                {
                    if let Some(off) = crate::util::parse_i64(args.get(2)) {
                        if off >= 0 {
                            info.ack_offset.fetch_max(off as u64, Ordering::Relaxed);
                        }
                        info.ack_ms.store(crate::util::now_ms(), Ordering::Relaxed);
                        info.state.store(STATE_ONLINE, Ordering::Relaxed);
                        server.repl.acked.notify_waiters();
                    }
                }
                parser.release_big();
                consumed += n;
            }
            Ok(Parsed::Incomplete) => break,
            Err(_) => return false,
        }
    }
    bytes::Buf::advance(rbuf, consumed);
    true
}
