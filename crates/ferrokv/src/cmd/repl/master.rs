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

/// Writes `bytes`, giving up when the replica is killed, falls behind
/// its output limit, stays silent past `repl-timeout` (see [`timed_out`])
/// or reads nothing for `repl-timeout` seconds while the write waits.
/// False when the replica must go.
async fn send_checked<W: AsyncWrite + Unpin>(
    server: &Server,
    client: &Client,
    info: &ReplicaInfo,
    wr: &mut W,
    bytes: &[u8],
    pos: u64,
    soft_since: &AtomicU64,
) -> bool {
    let mut off = 0;
    let mut progress = tokio::time::Instant::now();
    while off < bytes.len() {
        tokio::select! {
            r = wr.write(&bytes[off..]) => match r {
                Ok(0) | Err(_) => return false,
                Ok(n) => {
                    off += n;
                    progress = tokio::time::Instant::now();
                }
            },
            () = tokio::time::sleep(Duration::from_millis(100)) => {
                if over_limit(server, client, pos, soft_since) || timed_out(server, info) {
                    return false;
                }
                let timeout = server.repl.timeout_s.load(Ordering::Relaxed);
                if progress.elapsed() > Duration::from_secs(timeout) {
                    // A replica that reads nothing (Redis: no partial
                    // write for repl-timeout seconds during a diskless
                    // transfer, which would hold up the others).
                    tracing::warn!(
                        "Disconnecting timedout replica ({}): {}",
                        if info.state.load(Ordering::Relaxed) == STATE_ONLINE {
                            "streaming sync"
                        } else {
                            "full sync"
                        },
                        info.name()
                    );
                    return false;
                }
            }
        }
    }
    true
}

/// True (and logged as Redis's replicationCron does) when an online
/// replica has not acknowledged for more than `repl-timeout` seconds; a
/// replica that came with SYNC never acknowledges and is exempt.
fn timed_out(server: &Server, info: &ReplicaInfo) -> bool {
    if info.pre_psync || info.state.load(Ordering::Relaxed) != STATE_ONLINE {
        return false;
    }
    let timeout_ms = server.repl.timeout_s.load(Ordering::Relaxed) * 1000;
    if crate::util::now_ms().saturating_sub(info.ack_ms.load(Ordering::Relaxed)) > timeout_ms {
        tracing::warn!(
            "Disconnecting timedout replica (streaming sync): {}",
            info.name()
        );
        return true;
    }
    false
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
    // A replica is not subject to maxmemory-clients (Redis counts only the
    // normal and pub/sub classes).
    client.handle.exempt.store(true, Ordering::Relaxed);
    client.handle.publish_memory(&server.clients, 0);
    let r = &server.repl;
    let info = Arc::new(ReplicaInfo {
        client_id: client.handle.id,
        pre_psync: req.replid.is_none(),
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
        if !send_checked(server, client, &info, wr, line.as_bytes(), pos, &soft_since).await {
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
    let (diskless_conf, delay, max) = {
        let c = server.config.read();
        (
            c.get_bool("repl-diskless-sync") && conf.capa_eof,
            c.get_u64("repl-diskless-sync-delay"),
            c.get_u64("repl-diskless-sync-max-replicas"),
        )
    };
    // A filtered RDB always goes over the socket (Redis's
    // startBgsaveForReplication); the delay is diskless sync's own.
    let diskless = diskless_conf || (conf.filtered() && conf.capa_eof);
    let delay = if diskless_conf { delay } else { 0 };
    let filter = (conf.exclude_data, conf.exclude_functions);
    let Some((job, start_rx, mut rx)) = join_sync(server, diskless, filter, delay, max) else {
        leave_unregistered(server, &info);
        return;
    };
    // Newlines keep the link alive until the snapshot begins (Redis's
    // replicationCron, for replicas in WAIT_BGSAVE_START).
    let Some(Ok((offset, guard))) =
        keepalive_while(server, client, &info, wr, u64::MAX, &soft_since, start_rx).await
    else {
        leave_unregistered(server, &info);
        return;
    };
    let id = guard.into_id();
    let pos = offset;
    let replid = r.ids.lock().replid.clone();
    if diskless {
        info.state.store(STATE_SEND_BULK, Ordering::Relaxed);
    }
    // A replica that came with the old SYNC gets no +FULLRESYNC line
    // (Redis's CLIENT_PRE_PSYNC): the payload's header comes first, as
    // redis-cli --rdb expects.
    let mut ok = req.replid.is_none() || {
        let line = format!("+FULLRESYNC {replid} {offset}\r\n");
        send_checked(server, client, &info, wr, line.as_bytes(), pos, &soft_since).await
    };
    if ok && diskless {
        let mark = crate::repl::random_id();
        ok = send_checked(
            server,
            client,
            &info,
            wr,
            format!("$EOF:{mark}\r\n").as_bytes(),
            pos,
            &soft_since,
        )
        .await;
        let rx = rx.as_mut().expect("a diskless member has a chunk channel");
        while ok {
            match rx.recv().await {
                Some(chunk) => {
                    ok = send_checked(server, client, &info, wr, &chunk, pos, &soft_since).await;
                }
                None => break,
            }
        }
        ok = ok && send_checked(server, client, &info, wr, mark.as_bytes(), pos, &soft_since).await;
    } else if ok {
        ok = send_file(server, client, wr, &job, &info, pos, &soft_since).await;
    }
    drop(rx);
    drop(job);
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

/// Awaits `fut`, writing a newline to the replica every second meanwhile
/// (Redis's keep-alive to replicas waiting for their RDB). None when the
/// replica went (or is over its output limit at `pos`).
async fn keepalive_while<W: AsyncWrite + Unpin, T>(
    server: &Server,
    client: &Client,
    info: &ReplicaInfo,
    wr: &mut W,
    pos: u64,
    soft_since: &AtomicU64,
    fut: impl std::future::Future<Output = T>,
) -> Option<T> {
    tokio::pin!(fut);
    loop {
        tokio::select! {
            v = &mut fut => return Some(v),
            () = tokio::time::sleep(KEEPALIVE) => {
                if !send_checked(server, client, info, wr, b"\n", pos, soft_since).await {
                    return None;
                }
            }
        }
    }
}

/// The disk-backed transfer: waits for the job's file (newlines meanwhile),
/// then sends `$<len>` and its bytes.
async fn send_file<W: AsyncWrite + Unpin>(
    server: &Server,
    client: &Client,
    wr: &mut W,
    job: &SyncJob,
    info: &ReplicaInfo,
    pos: u64,
    soft_since: &AtomicU64,
) -> bool {
    let mut written = job.written.subscribe();
    let waited = keepalive_while(server, client, info, wr, pos, soft_since, async {
        written
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|v| *v)
    })
    .await;
    let (Some(Some(Ok(len))), Some(path)) = (waited, job.file.as_ref()) else {
        return false;
    };
    info.state.store(STATE_SEND_BULK, Ordering::Relaxed);
    if !send_checked(
        server,
        client,
        info,
        wr,
        format!("${len}\r\n").as_bytes(),
        pos,
        soft_since,
    )
    .await
    {
        return false;
    }
    let Ok(mut f) = tokio::fs::File::open(path).await else {
        return false;
    };
    let mut buf = vec![0u8; 256 * 1024];
    let mut sent = 0u64;
    while sent < len {
        let n = match f.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => n.min((len - sent) as usize),
        };
        if !send_checked(server, client, info, wr, &buf[..n], pos, soft_since).await {
            return false;
        }
        sent += n as u64;
    }
    true
}

/// One snapshot serving the full synchronisations of the replicas that
/// asked for one at about the same time (Redis 7.0's single BGSAVE for
/// several replicas, replication.c syncCommand / startBgsaveForReplication):
///
/// - **diskless** (`repl-diskless-sync yes`): replicas arriving within
///   `repl-diskless-sync-delay` seconds of the first one join it; the
///   snapshot starts at the end of the delay, or as soon as
///   `repl-diskless-sync-max-replicas` (when not 0) have joined, and one
///   serialisation feeds every member's socket (the slowest sets the
///   pace, as Redis's RDB pipe). A replica arriving after the start waits
///   for the next snapshot ("Waiting for next BGSAVE for SYNC").
/// - **disk-backed**: the RDB is written once into a file; replicas
///   arriving while it is being written attach to it at the same stream
///   offset ("Waiting for end of BGSAVE for SYNC"), and every member is
///   sent the file once it is complete. It counts in INFO `rdb_saves`, as
///   Redis's BGSAVE for replication does.
///
/// Only replicas asking for the same kind of RDB (`rdb-filter-only`)
/// share one. The file is removed when the last member is done.
pub struct SyncJob {
    diskless: bool,
    filter: (bool, bool),
    state: parking_lot::Mutex<JobState>,
    /// Signalled when a member joins (max-replicas may be reached).
    joined: parking_lot::Condvar,
    /// The file of a disk-backed job.
    file: Option<std::path::PathBuf>,
    /// A disk-backed job's file length once written (Err: failed).
    written: tokio::sync::watch::Sender<Option<Result<u64, ()>>>,
}

struct JobState {
    /// The stream offset of the snapshot, once begun.
    offset: Option<u64>,
    /// Members waiting for the snapshot to begin.
    members: Vec<Member>,
    /// Keeps the stream after `offset` for late attachers of a disk job.
    pin: Option<ReaderGuard>,
    /// No more members (the file is complete, or the job ended).
    closed: bool,
}

/// A replica waiting for a job's snapshot to begin.
struct Member {
    start: tokio::sync::oneshot::Sender<(u64, ReaderGuard)>,
    chunks: Option<tokio::sync::mpsc::Sender<Arc<Vec<u8>>>>,
}

impl Drop for SyncJob {
    fn drop(&mut self) {
        if let Some(p) = &self.file {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A backlog reader, removed when dropped unless taken with
/// [`ReaderGuard::into_id`].
struct ReaderGuard {
    backlog: Arc<crate::repl::Backlog>,
    id: Option<u64>,
}

impl ReaderGuard {
    fn into_id(mut self) -> u64 {
        self.id.take().unwrap_or(0)
    }
}

impl Drop for ReaderGuard {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.backlog.remove_reader(id);
        }
    }
}

/// The job, the receiver of (stream offset, backlog reader) when its
/// snapshot begins, and for a diskless job the receiver of the RDB's
/// chunks.
type Joined = (
    Arc<SyncJob>,
    tokio::sync::oneshot::Receiver<(u64, ReaderGuard)>,
    Option<tokio::sync::mpsc::Receiver<Arc<Vec<u8>>>>,
);

/// Joins the current snapshot when the replica can share it, or begins a
/// new one (see [`SyncJob`]).
fn join_sync(
    server: &Arc<Server>,
    diskless: bool,
    filter: (bool, bool),
    delay: u64,
    max: u64,
) -> Option<Joined> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let r = &server.repl;
    let (stx, srx) = tokio::sync::oneshot::channel();
    let (ctx, crx) = if diskless {
        let (a, b) = tokio::sync::mpsc::channel(8);
        (Some(a), Some(b))
    } else {
        (None, None)
    };
    let mut slot = r.sync_job.lock();
    if let Some(job) = slot
        .as_ref()
        .and_then(std::sync::Weak::upgrade)
        .and_then(|a| a.downcast::<SyncJob>().ok())
    {
        let mut st = job.state.lock();
        let same = job.diskless == diskless && job.filter == filter;
        if same && st.offset.is_none() && !st.closed {
            if diskless && delay > 0 {
                tracing::info!("Delay next BGSAVE for diskless SYNC");
            } else if !diskless {
                // Redis's BGSAVE would already be running for the first
                // replica: this one attaches to it.
                tracing::info!("Waiting for end of BGSAVE for SYNC");
            }
            st.members.push(Member {
                start: stx,
                chunks: ctx,
            });
            job.joined.notify_all();
            drop(st);
            return Some((job, srx, crx));
        }
        if same && !diskless && !st.closed {
            if let Some(offset) = st.offset {
                if let Some(id) = r.backlog.add_reader(offset) {
                    tracing::info!("Waiting for end of BGSAVE for SYNC");
                    let guard = ReaderGuard {
                        backlog: r.backlog.clone(),
                        id: Some(id),
                    };
                    let _ = stx.send((offset, guard));
                    drop(st);
                    return Some((job, srx, crx));
                }
            }
        }
        if !st.closed {
            tracing::info!(
                "Can't attach the replica to the current BGSAVE. Waiting for next BGSAVE for SYNC"
            );
        }
    }
    let file = (!diskless).then(|| {
        std::path::PathBuf::from(format!(
            "temp-repl-{}-{}.rdb",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ))
    });
    let job = Arc::new(SyncJob {
        diskless,
        filter,
        state: parking_lot::Mutex::new(JobState {
            offset: None,
            members: vec![Member {
                start: stx,
                chunks: ctx,
            }],
            pin: None,
            closed: false,
        }),
        joined: parking_lot::Condvar::new(),
        file,
        written: tokio::sync::watch::channel(None).0,
    });
    if delay > 0 {
        tracing::info!("Delay next BGSAVE for diskless SYNC");
    }
    let erased: Arc<dyn std::any::Any + Send + Sync> = job.clone();
    *slot = Some(Arc::downgrade(&erased));
    drop(slot);
    let (srv, j) = (server.clone(), job.clone());
    std::thread::Builder::new()
        .name("ferrokv-replsync".into())
        .spawn(move || produce_rdb(&srv, &j, delay, max))
        .ok()?;
    Some((job, srx, crx))
}

/// An `io::Write` that hands 256 KiB chunks to every member of a
/// diskless job; a member that went is dropped, the write fails when none
/// is left.
struct FanOut {
    txs: Vec<tokio::sync::mpsc::Sender<Arc<Vec<u8>>>>,
    buf: Vec<u8>,
}

const CHUNK: usize = 256 * 1024;

impl std::io::Write for FanOut {
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
        let chunk = Arc::new(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.txs
            .retain(|tx| tx.blocking_send(chunk.clone()).is_ok());
        if self.txs.is_empty() {
            return Err(std::io::Error::other("replicas gone"));
        }
        Ok(())
    }
}

/// The snapshot thread of a job: waits out the diskless delay (or until
/// `max` members), pauses writes, begins the point-in-time copy, gives
/// every member its place in the stream (a backlog reader at the same
/// offset), then serialises the copy as an RDB to the members' sockets or
/// into the job's file.
fn produce_rdb(server: &Arc<Server>, job: &SyncJob, delay: u64, max: u64) {
    let r = &server.repl;
    let mut st = job.state.lock();
    if delay > 0 {
        let until = std::time::Instant::now() + Duration::from_secs(delay);
        loop {
            st.members.retain(|m| !m.start.is_closed());
            if max > 0 && st.members.len() as u64 >= max {
                break;
            }
            if job.joined.wait_until(&mut st, until).timed_out() {
                break;
            }
        }
    }
    st.members.retain(|m| !m.start.is_closed());
    if st.members.is_empty() {
        st.closed = true;
        return;
    }
    tracing::info!(
        "Starting BGSAVE for SYNC with target: {}",
        if job.diskless {
            "replicas sockets"
        } else {
            "disk"
        }
    );
    server.stats.forks.fetch_add(1, Ordering::Relaxed);
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
    let reader = || {
        r.backlog.add_reader(offset).map(|id| ReaderGuard {
            backlog: r.backlog.clone(),
            id: Some(id),
        })
    };
    let mut txs = Vec::new();
    for m in std::mem::take(&mut st.members) {
        let Some(g) = reader() else { continue };
        if m.start.send((offset, g)).is_ok() {
            txs.extend(m.chunks);
        }
    }
    if !job.diskless {
        st.pin = reader();
    }
    st.offset = Some(offset);
    drop(paused);
    drop(st);
    // rdb-key-save-delay slows every save, a replication one too (Redis's
    // rdbSaveKeyValuePair; its tests rely on it).
    let key_delay_us = server.config.read().get_i64("rdb-key-save-delay").max(0) as u64;
    let ctl = crate::persist::rdb::SaveCtl {
        key_delay_us,
        exclude_data: job.filter.0,
        exclude_functions: job.filter.1,
        ..Default::default()
    };
    let mut src = |d: usize, i: usize, b: &mut Vec<u8>| Some(snap.shard(d, i, b));
    if job.diskless {
        let mut w = FanOut {
            txs,
            buf: Vec::with_capacity(CHUNK),
        };
        let res = crate::persist::rdb::write_snapshot_from(
            &**server, &mut w, false, ctl, version, &mut src,
        )
        .and_then(|_| std::io::Write::flush(&mut w));
        if let Err(e) = res {
            tracing::warn!("Background transfer of the RDB to replicas stopped: {e}");
        }
        job.state.lock().closed = true;
        return;
    }
    let path = job.file.as_ref().expect("a disk-backed job has a file");
    let res = (|| {
        let f = std::fs::File::create(path)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        crate::persist::rdb::write_snapshot_from(&**server, &mut w, false, ctl, version, &mut src)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        Ok::<u64, std::io::Error>(f.metadata()?.len())
    })();
    match &res {
        Ok(_) => {
            tracing::info!("Background saving terminated with success");
            crate::persist::Host::rdb(&**server)
                .saves
                .fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => tracing::warn!("Background RDB save for replication failed: {e}"),
    }
    {
        let mut st = job.state.lock();
        st.closed = true;
        st.pin = None;
    }
    job.written.send_replace(Some(res.map_err(|_| ())));
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
                    if !send_checked(server, client, info, wr, &buf, pos, soft_since).await {
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
        if timed_out(server, info) {
            backlog.waiting(false);
            return;
        }
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
            () = tokio::time::sleep(Duration::from_secs(1)) => false,
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
