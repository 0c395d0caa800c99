//! Replication state (Redis 7.0's replication.c, redis.io "Redis
//! replication"): the replication ids and offset, the backlog, the
//! replicas a master feeds and the link a replica keeps to its master.
//!
//! This module holds the state and the byte stream; the commands (PSYNC,
//! SYNC, REPLCONF, REPLICAOF, ROLE, WAIT), the feeding of a replica's
//! connection and the replica's link to its master are in `cmd/repl.rs`,
//! which can run commands.
//!
//! **The stream.** A master's replication stream is what the propagation
//! stream (propagate.rs) emits, as RESP commands with `SELECT` when the
//! database changes and `MULTI`/`EXEC` around a unit of more than one
//! record, plus the master's own `PING` every `repl-ping-replica-period`
//! and `REPLCONF GETACK *`. Every byte has an offset: the master's
//! `master_repl_offset` is the number of bytes it has produced. The
//! [`Backlog`] keeps the last `repl-backlog-size` bytes (more while a
//! replica still has to be sent older ones), for partial resynchronisation
//! and for the replicas being fed (Redis 7.0 also shares one buffer between
//! the backlog and the replicas' output).
//!
//! A replica proxies its master's stream byte for byte into its own backlog
//! (so its sub-replicas see the same offsets and replication id), and does
//! not put its own propagated effects there.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// A random 40-hex-character id (replication id, run id).
pub fn random_id() -> String {
    let mut id = String::with_capacity(48);
    while id.len() < 40 {
        id.push_str(&format!("{:016x}", crate::util::rand_u64()));
    }
    id.truncate(40);
    id
}

/// The replication ids (Redis's `replid`, `replid2`, `second_replid_offset`).
#[derive(Debug, Clone)]
pub struct Ids {
    /// The current replication id (INFO `master_replid`).
    pub replid: String,
    /// The previous master's id after a promotion ("0"×40 when none).
    pub replid2: String,
    /// Offset up to which `replid2` is valid (-1 when none): a replica of
    /// the former master may continue from up to this offset + 1.
    pub second_offset: i64,
}

/// The backlog and the replicas' shared stream buffer (see the module
/// docs). A sink of the propagation stream while this server is a master
/// and the backlog exists.
#[derive(Default)]
pub struct Backlog {
    inner: Mutex<Inner>,
    /// The backlog exists (Redis's `server.repl_backlog != NULL`).
    active: AtomicBool,
    /// This server is a replica: units of its own propagation are not
    /// appended (the master's stream is, verbatim).
    replica_mode: AtomicBool,
    /// Woken after an append while a feeder waits (see [`Backlog::wait`]).
    appended: tokio::sync::Notify,
    /// Feeders about to wait on `appended`.
    waiting: std::sync::atomic::AtomicUsize,
    /// Offset of the last byte (mirrors `Inner::end`, readable without the
    /// lock).
    end: AtomicU64,
}

#[derive(Default)]
struct Inner {
    /// The retained bytes: offsets `end - buf.len() + 1 ..= end`.
    buf: VecDeque<u8>,
    end: u64,
    /// Database the stream last selected (-1: none; the next unit
    /// selects).
    db: i64,
    /// `repl-backlog-size`.
    size: usize,
    /// Offsets that readers (feeders of replicas) have sent up to, by
    /// reader id: nothing after the smallest is dropped.
    readers: Vec<(u64, u64)>,
    next_reader: u64,
    /// Bytes held beyond `size` for lagging readers, as last published to
    /// [`crate::memory::set_repl_not_counted`].
    excess: u64,
}

/// Why a read from the backlog returned no bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadError {
    /// The offset is no longer (or not yet) in the backlog.
    OutOfRange,
}

impl Backlog {
    /// True while the backlog exists.
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Creates the backlog (if it does not exist) continuing from offset
    /// `end`, keeping `size` bytes (`repl-backlog-size`).
    pub fn create(&self, end: u64, size: usize) {
        let mut g = self.inner.lock();
        if !self.active() {
            g.buf.clear();
            g.end = end;
            g.db = -1;
            self.end.store(end, Ordering::Release);
        }
        g.size = size.max(1);
        self.active.store(true, Ordering::Release);
    }

    /// Frees the backlog (repl-backlog-ttl passed without replicas); the
    /// offset is kept.
    pub fn free(&self) {
        let mut g = self.inner.lock();
        g.buf = VecDeque::new();
        g.db = -1;
        Self::publish_excess(&mut g);
        self.active.store(false, Ordering::Release);
    }

    /// A future that completes after the next append; the caller
    /// registers with [`Backlog::waiting`] first, then reads, then awaits
    /// (an append between the read and the await is not missed).
    pub fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.appended.notified()
    }

    /// Marks a feeder as waiting (true) or not: appends wake waiters only
    /// while one is marked, so a busy stream costs no wake-up per unit.
    pub fn waiting(&self, on: bool) {
        if on {
            self.waiting.fetch_add(1, Ordering::SeqCst);
        } else {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn wake(&self) {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.appended.notify_waiters();
        }
    }

    /// Changes `repl-backlog-size`.
    pub fn resize(&self, size: usize) {
        let mut g = self.inner.lock();
        g.size = size.max(1);
        Self::trim(&mut g);
    }

    /// Marks the server as a replica (true) or a master (false).
    pub fn set_replica_mode(&self, v: bool) {
        self.replica_mode.store(v, Ordering::Release);
        crate::log::set_replica(v);
    }

    /// True while the server is a replica.
    pub fn replica_mode(&self) -> bool {
        self.replica_mode.load(Ordering::Acquire)
    }

    /// Offset of the last byte of the stream (`master_repl_offset`).
    pub fn end(&self) -> u64 {
        self.end.load(Ordering::Acquire)
    }

    /// Sets the offset (a replica after a full sync, the master's offset),
    /// emptying the backlog.
    pub fn reset_to(&self, end: u64) {
        let mut g = self.inner.lock();
        g.buf.clear();
        g.end = end;
        g.db = -1;
        for r in g.readers.iter_mut() {
            r.1 = end;
        }
        Self::publish_excess(&mut g);
        self.end.store(end, Ordering::Release);
    }

    /// (first byte offset, bytes held): INFO's
    /// `repl_backlog_first_byte_offset` and `repl_backlog_histlen`.
    pub fn span(&self) -> (u64, u64) {
        let g = self.inner.lock();
        (g.end - g.buf.len() as u64 + 1, g.buf.len() as u64)
    }

    /// The database the stream last selected (-1: none).
    pub fn db(&self) -> i64 {
        self.inner.lock().db
    }

    /// Forces the next unit to start with SELECT (a full sync begins: the
    /// replica's database is unknown).
    pub fn forget_db(&self) {
        self.inner.lock().db = -1;
    }

    /// Appends raw stream bytes (the master's PING, GETACK, a replica's
    /// copy of its master's stream).
    pub fn feed(&self, bytes: &[u8]) {
        if !self.active() || bytes.is_empty() {
            return;
        }
        let mut g = self.inner.lock();
        g.buf.extend(bytes.iter());
        g.end += bytes.len() as u64;
        self.end.store(g.end, Ordering::Release);
        Self::trim(&mut g);
        drop(g);
        self.wake();
    }

    /// The database the stream last selected, or -1 (a replica proxying
    /// its master's stream keeps it to know its master's database).
    pub fn set_db(&self, db: i64) {
        self.inner.lock().db = db;
    }

    fn trim(g: &mut Inner) {
        let keep_from = g
            .readers
            .iter()
            .map(|r| r.1)
            .min()
            .unwrap_or(u64::MAX)
            .min(g.end.saturating_sub(g.size as u64));
        let first = g.end - g.buf.len() as u64;
        if keep_from > first {
            let n = ((keep_from - first) as usize).min(g.buf.len());
            g.buf.drain(..n);
        }
        Self::publish_excess(g);
    }

    /// Updates [`crate::memory::repl_not_counted`] (only when it changed: an append within
    /// the backlog's size writes nothing shared).
    fn publish_excess(g: &mut Inner) {
        let excess = g.buf.len().saturating_sub(g.size) as u64;
        if excess != g.excess {
            g.excess = excess;
            crate::memory::set_repl_not_counted(excess);
        }
    }

    /// Registers a reader that has everything up to `from`; None when
    /// `from` is not in the backlog (older than its first byte - 1, or
    /// beyond its end).
    pub fn add_reader(&self, from: u64) -> Option<u64> {
        let mut g = self.inner.lock();
        let first = g.end - g.buf.len() as u64;
        if from < first || from > g.end {
            return None;
        }
        let id = g.next_reader;
        g.next_reader += 1;
        g.readers.push((id, from));
        Some(id)
    }

    /// Removes reader `id`.
    pub fn remove_reader(&self, id: u64) {
        let mut g = self.inner.lock();
        g.readers.retain(|r| r.0 != id);
        Self::trim(&mut g);
    }

    /// Copies up to `max` bytes after reader `id`'s position into `out`
    /// and moves the reader past them. Returns the reader's new position.
    pub fn read(&self, id: u64, out: &mut Vec<u8>, max: usize) -> Result<u64, ReadError> {
        let mut g = self.inner.lock();
        let Some(i) = g.readers.iter().position(|r| r.0 == id) else {
            return Err(ReadError::OutOfRange);
        };
        let pos = g.readers[i].1;
        let first = g.end - g.buf.len() as u64;
        if pos < first {
            return Err(ReadError::OutOfRange);
        }
        let skip = (pos - first) as usize;
        let n = (g.buf.len() - skip).min(max);
        let (a, b) = g.buf.as_slices();
        if skip < a.len() {
            let take_a = n.min(a.len() - skip);
            out.extend_from_slice(&a[skip..skip + take_a]);
            out.extend_from_slice(&b[..n - take_a]);
        } else {
            let s = skip - a.len();
            out.extend_from_slice(&b[s..s + n]);
        }
        let new = pos + n as u64;
        g.readers[i].1 = new;
        Self::trim(&mut g);
        Ok(new)
    }
}

impl crate::propagate::Sink for Backlog {
    fn append_unit(&self, recs: crate::propagate::Records<'_>) -> u64 {
        if !self.active() || self.replica_mode() {
            return 0;
        }
        let mut g = self.inner.lock();
        let start = g.buf.len();
        let mut tmp = Vec::new();
        for (db, r, open, close, _) in recs.framed() {
            if g.db != db as i64 {
                tmp.clear();
                let mut b = itoa::Buffer::new();
                crate::propagate::encode(&mut tmp, &[b"SELECT", b.format(db).as_bytes()]);
                g.buf.extend(tmp.iter());
                g.db = db as i64;
            }
            if open {
                g.buf.extend(b"*1\r\n$5\r\nMULTI\r\n".iter());
            }
            g.buf.extend(r.iter());
            if close {
                g.buf.extend(b"*1\r\n$4\r\nEXEC\r\n".iter());
            }
        }
        let added = (g.buf.len() - start) as u64;
        g.end += added;
        self.end.store(g.end, Ordering::Release);
        Self::trim(&mut g);
        drop(g);
        self.wake();
        0
    }
}

/// A replica's state as its master sees it (Redis's `slave` client
/// fields `replstate`, `repl_ack_off`, `repl_ack_time`,
/// `slave_listening_port`...).
#[derive(Debug, Default)]
pub struct ReplicaInfo {
    /// Client id of its connection.
    pub client_id: u64,
    /// Its IP (or `replica-announce-ip` it sent).
    pub ip: Mutex<String>,
    /// `REPLCONF listening-port`.
    pub port: AtomicU64,
    /// [`STATE_WAIT_BGSAVE`], [`STATE_SEND_BULK`] or [`STATE_ONLINE`].
    pub state: AtomicU64,
    /// Last offset it acknowledged (`REPLCONF ACK`).
    pub ack_offset: AtomicU64,
    /// When it last acknowledged (ms since the epoch).
    pub ack_ms: AtomicU64,
    /// It came with SYNC, not PSYNC (Redis's `CLIENT_PRE_PSYNC`): it sends
    /// no acknowledgements, so `repl-timeout` does not apply to its
    /// silence.
    pub pre_psync: bool,
}

/// [`ReplicaInfo::state`]: waiting for the snapshot to begin.
pub const STATE_WAIT_BGSAVE: u64 = 0;
/// [`ReplicaInfo::state`]: the RDB is being sent.
pub const STATE_SEND_BULK: u64 = 1;
/// [`ReplicaInfo::state`]: receiving the stream.
pub const STATE_ONLINE: u64 = 2;

impl ReplicaInfo {
    /// `ip:listening-port`, as Redis names a replica in its log
    /// (replicationGetSlaveName).
    pub fn name(&self) -> String {
        format!("{}:{}", self.ip.lock(), self.port.load(Ordering::Relaxed))
    }

    /// Redis's `replstateToString`.
    pub fn state_name(&self) -> &'static str {
        match self.state.load(Ordering::Relaxed) {
            STATE_WAIT_BGSAVE => "wait_bgsave",
            STATE_SEND_BULK => "send_bulk",
            _ => "online",
        }
    }
}

/// The replica side: the master this server follows and the link's state.
#[derive(Debug, Default)]
pub struct MasterLink {
    /// `REPLICAOF host port`.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// Set when this link is the last step of a FAILOVER of this server:
    /// the handshake asks `PSYNC <replid> <offset> FAILOVER`, which makes
    /// the target a master.
    pub failover: bool,
}

/// A FAILOVER of this master in progress (replication.c
/// failoverCommand / updateFailoverStatus).
#[derive(Debug, Clone)]
pub struct Failover {
    /// [`failover_state::WAIT_FOR_SYNC`] or [`failover_state::IN_PROGRESS`].
    pub state: u8,
    /// The replica chosen (TO host port, or the first caught up).
    pub target: Option<(String, u16)>,
    /// Deadline, ms since the epoch (0: none).
    pub end_ms: u64,
    /// FORCE: fail over at the deadline even if the target lags.
    pub force: bool,
}

/// FAILOVER states, as INFO `master_failover_state` shows them.
pub mod failover_state {
    /// Waiting for the target to acknowledge the whole stream.
    pub const WAIT_FOR_SYNC: u8 = 1;
    /// This server follows the target, asking it to become a master.
    pub const IN_PROGRESS: u8 = 2;
}

/// Link states (Redis's `repl_state`), for INFO `master_link_status` and
/// ROLE.
pub mod link {
    /// Must connect.
    pub const CONNECT: u64 = 0;
    /// Connecting / handshake.
    pub const CONNECTING: u64 = 1;
    /// Receiving the RDB.
    pub const TRANSFER: u64 = 2;
    /// Receiving the stream.
    pub const CONNECTED: u64 = 3;
}

/// All of a server's replication state.
pub struct Repl {
    /// The replication ids.
    pub ids: Mutex<Ids>,
    /// The backlog / stream buffer.
    pub backlog: Arc<Backlog>,
    /// Replicas being fed (master side).
    pub replicas: Mutex<Vec<Arc<ReplicaInfo>>>,
    /// The master followed, when this server is a replica.
    pub master: Mutex<Option<MasterLink>>,
    /// A FAILOVER in progress (master side).
    pub failover: Mutex<Option<Failover>>,
    /// REPLICAOF generations (see [`MasterLink::generation`]).
    pub generation: AtomicU64,
    /// The link's state ([`link`]).
    pub link_state: AtomicU64,
    /// When the link last received something (ms since the epoch).
    pub link_last_io_ms: AtomicU64,
    /// When the link went down (ms since the epoch; 0 never up).
    pub link_down_since_ms: AtomicU64,
    /// Bytes of the RDB received so far and its size (-1 unknown) while
    /// syncing.
    pub transfer_read: AtomicU64,
    /// See `transfer_read`.
    pub transfer_size: std::sync::atomic::AtomicI64,
    /// The replica's processed offset of its master's stream
    /// (`slave_repl_offset`).
    pub processed: AtomicU64,
    /// Bytes of the master's stream received but not applied yet (held
    /// back by a CLIENT PAUSE): INFO `slave_read_repl_offset` is
    /// `processed` plus these (Redis's `read_reploff` ahead of `reploff`).
    pub read_ahead: AtomicU64,
    /// INFO stats `sync_full`.
    pub sync_full: AtomicU64,
    /// INFO stats `sync_partial_ok`.
    pub sync_partial_ok: AtomicU64,
    /// INFO stats `sync_partial_err`.
    pub sync_partial_err: AtomicU64,
    /// When the last replica went away (ms; for repl-backlog-ttl).
    pub no_replicas_since_ms: AtomicU64,
    /// Client id of the link's master client (for CLIENT KILL TYPE
    /// master), 0 when none.
    pub master_client_id: AtomicU64,
    /// Set to close the current link (CLIENT KILL TYPE master).
    pub kill_link: AtomicBool,
    /// Woken when a replica acknowledges (WAIT).
    pub acked: tokio::sync::Notify,
    /// `min-replicas-to-write`.
    pub min_to_write: AtomicU64,
    /// `min-replicas-max-lag` (seconds).
    pub min_max_lag: AtomicU64,
    /// `replica-read-only`.
    pub read_only: AtomicBool,
    /// `replica-serve-stale-data`.
    pub serve_stale: AtomicBool,
    /// `replica-ignore-maxmemory`.
    pub ignore_maxmemory: AtomicBool,
    /// The database the master's stream has selected (a replica's master
    /// client's), kept across links for partial resynchronisations.
    pub master_db: AtomicU64,
    /// A replica is loading its master's RDB into the keyspace: commands
    /// without the `loading` flag get `-LOADING` (INFO `loading:1`).
    pub loading: AtomicBool,
    /// The snapshot of the last full synchronisation begun (master side),
    /// which replicas asking at about the same time share: joined while a
    /// diskless one waits out `repl-diskless-sync-delay`, attached to while
    /// a disk-backed one is being written (Redis's "Waiting for end of
    /// BGSAVE for SYNC"). Dangling once every replica it served is done.
    /// (Type-erased, as the snapshot job lives in cmd/repl/master.rs, a
    /// layer above; master.rs downcasts it.)
    pub sync_job: Mutex<Option<std::sync::Weak<dyn std::any::Any + Send + Sync>>>,
    /// Keys (database, name) that clients of a writable replica wrote
    /// with a TTL: the replica expires these itself, since its master
    /// never sends their DEL (Redis's `slaveKeysWithExpire`). Only
    /// touched on a replica with `replica-read-only no`.
    pub own_ttl_keys: Mutex<std::collections::HashSet<(u32, Box<[u8]>)>>,
    /// `repl-timeout` in seconds (at least 1): a master drops a replica
    /// silent (no `REPLCONF ACK`) or not reading for that long, a replica
    /// its master when nothing (data nor PING) arrived for that long.
    pub timeout_s: AtomicU64,
}

impl Default for Repl {
    fn default() -> Self {
        Repl {
            ids: Mutex::new(Ids {
                replid: random_id(),
                replid2: "0".repeat(40),
                second_offset: -1,
            }),
            backlog: Arc::default(),
            replicas: Mutex::default(),
            master: Mutex::default(),
            failover: Mutex::default(),
            generation: AtomicU64::new(0),
            link_state: AtomicU64::new(link::CONNECT),
            link_last_io_ms: AtomicU64::new(0),
            link_down_since_ms: AtomicU64::new(0),
            transfer_read: AtomicU64::new(0),
            transfer_size: std::sync::atomic::AtomicI64::new(-1),
            processed: AtomicU64::new(0),
            read_ahead: AtomicU64::new(0),
            sync_full: AtomicU64::new(0),
            sync_partial_ok: AtomicU64::new(0),
            sync_partial_err: AtomicU64::new(0),
            no_replicas_since_ms: AtomicU64::new(0),
            master_client_id: AtomicU64::new(0),
            kill_link: AtomicBool::new(false),
            acked: tokio::sync::Notify::new(),
            min_to_write: AtomicU64::new(0),
            min_max_lag: AtomicU64::new(10),
            read_only: AtomicBool::new(true),
            serve_stale: AtomicBool::new(true),
            ignore_maxmemory: AtomicBool::new(true),
            master_db: AtomicU64::new(0),
            loading: AtomicBool::new(false),
            sync_job: Mutex::new(None),
            own_ttl_keys: Mutex::new(Default::default()),
            timeout_s: AtomicU64::new(60),
        }
    }
}

impl Repl {
    /// True when this server is a replica.
    pub fn is_replica(&self) -> bool {
        self.master.lock().is_some()
    }

    /// Replicas whose last acknowledged offset is at least `offset`.
    pub fn acked_at_least(&self, offset: u64) -> usize {
        self.replicas
            .lock()
            .iter()
            .filter(|r| {
                r.state.load(Ordering::Relaxed) == STATE_ONLINE
                    && r.ack_offset.load(Ordering::Relaxed) >= offset
            })
            .count()
    }

    /// Online replicas whose last ACK is at most `max_lag_s` seconds old
    /// at `now_ms` (min-replicas-to-write's "good replicas").
    pub fn good_replicas(&self, now_ms: u64, max_lag_s: u64) -> usize {
        self.replicas
            .lock()
            .iter()
            .filter(|r| {
                r.state.load(Ordering::Relaxed) == STATE_ONLINE
                    && now_ms.saturating_sub(r.ack_ms.load(Ordering::Relaxed)) <= max_lag_s * 1000
            })
            .count()
    }

    /// What an RDB saves of replication (Redis's rdbPopulateSaveInfo):
    /// (stream database, replication id, offset) when there is a history
    /// to continue (a master with a backlog, or a replica).
    pub fn save_info(&self) -> Option<(i64, String, u64)> {
        let replica = self.backlog.replica_mode();
        if !replica && !self.backlog.active() {
            return None;
        }
        let id = self.ids.lock().replid.clone();
        if replica {
            Some((
                self.master_db.load(Ordering::Relaxed) as i64,
                id,
                self.processed.load(Ordering::Acquire),
            ))
        } else {
            Some((self.backlog.db().max(0), id, self.backlog.end()))
        }
    }

    /// Continues the history an RDB was saved with (at start-up): the id
    /// and offset become this server's, also as `replid2` (Redis's
    /// loadDataFromDisk), so replicas of the saved history, and this
    /// server as a replica of its former master, resynchronise partially.
    pub fn restore(&self, id: &str, offset: u64, db: i64, backlog_size: usize) {
        {
            let mut ids = self.ids.lock();
            ids.replid = id.to_string();
            ids.replid2 = id.to_string();
            ids.second_offset = offset as i64 + 1;
        }
        self.backlog.create(offset, backlog_size);
        self.backlog.reset_to(offset);
        self.processed.store(offset, Ordering::SeqCst);
        self.master_db.store(db.max(0) as u64, Ordering::Relaxed);
        self.no_replicas_since_ms
            .store(crate::util::now_ms(), Ordering::Relaxed);
    }

    /// A master continues the history its RDB was saved with (Redis 7.0's
    /// loadDataFromDisk for a master): a new random replication id, the
    /// saved one as `replid2` valid up to `offset` + 1, and a backlog that
    /// starts at `offset` + 1 holding `dels` (the DELs, with their
    /// SELECTs, of the keys that had expired in the file; `del_db` the
    /// database the last one selected), so the replicas of the saved
    /// history resynchronise partially and receive those deletions.
    pub fn restore_master(
        &self,
        id: &str,
        offset: u64,
        dels: &[u8],
        del_db: Option<usize>,
        backlog_size: usize,
    ) {
        {
            let mut ids = self.ids.lock();
            ids.replid = random_id();
            ids.replid2 = id.to_string();
            ids.second_offset = offset as i64 + 1;
        }
        self.backlog.create(offset, backlog_size);
        self.backlog.reset_to(offset);
        if !dels.is_empty() {
            self.backlog.feed(dels);
            if let Some(db) = del_db {
                self.backlog.set_db(db as i64);
            }
        }
        self.no_replicas_since_ms
            .store(crate::util::now_ms(), Ordering::Relaxed);
    }

    /// Starts a new history with `replid` (a random one when None) and no
    /// `replid2` (Redis's changeReplicationId + clearReplicationId2).
    pub fn new_history(&self, replid: Option<String>) {
        let mut ids = self.ids.lock();
        ids.replid = replid.unwrap_or_else(random_id);
        ids.replid2 = "0".repeat(40);
        ids.second_offset = -1;
    }

    /// A new replication id: the current one becomes `replid2`, valid up
    /// to `offset` (Redis's `shiftReplicationId`, on promotion).
    pub fn shift_id(&self, offset: u64) {
        let mut ids = self.ids.lock();
        ids.replid2 = std::mem::replace(&mut ids.replid, random_id());
        ids.second_offset = offset as i64 + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backlog_keeps_its_size_and_what_readers_need() {
        let b = Backlog::default();
        b.create(100, 8);
        b.feed(b"0123456789");
        assert_eq!(b.end(), 110);
        assert_eq!(b.span(), (103, 8));
        assert_eq!(b.add_reader(101), None);
        let r = b.add_reader(104).unwrap();
        b.feed(b"abcdefgh");
        // The reader at 104 pins bytes 105..
        assert_eq!(b.span(), (105, 14));
        let mut out = Vec::new();
        assert_eq!(b.read(r, &mut out, 3), Ok(107));
        assert_eq!(out, b"456");
        out.clear();
        assert_eq!(b.read(r, &mut out, 100), Ok(118));
        assert_eq!(out, b"789abcdefgh");
        assert_eq!(b.span(), (111, 8));
    }
}
