//! The append-only file (AOF), in Redis 7.0's multi-part layout.
//!
//! **Layout** (Redis 7.0 aof.c): a directory (`appenddirname`, default
//! `appendonlydir`) holding a manifest (`appendonly.aof.manifest`, lines
//! `file <name> seq <n> type b|i|h`), at most one *base* file (a snapshot in
//! command form, `appendonly.aof.<n>.base.aof`) and one or more *incr*
//! files (`appendonly.aof.<n>.incr.aof`) with every write executed since.
//! The manifest is always replaced atomically (temp file + rename).
//!
//! **Propagation**: the AOF is a sink of the stream of effects
//! (propagate.rs, `Server::propagation`): each unit of records arrives in
//! execution order; [`Aof::append_units`] emits `SELECT` when the database
//! changes and wraps a unit of more than one record in `MULTI`/`EXEC`, as
//! Redis 7.0 does. The loader does not expire keys while loading (it runs
//! commands with a clock of 0), exactly as Redis does, so the logged
//! `DEL`s of expired keys matter.
//!
//! **Durability**: the records of a batch are written to the file before
//! the batch's replies are sent (`appendfsync everysec|no`, as Redis's
//! `beforeSleep` does) and, with `appendfsync always`, fsync'd too (group
//! commit: one fsync covers every record appended so far, from any
//! thread). With `everysec` a background thread fsyncs once a second.
//!
//! **Rewrite** (BGREWRITEAOF, auto rewrite, CONFIG SET appendonly yes):
//! write contexts are paused for a moment (`Stream::pause_writes`) while a
//! new incr file is opened and added to the manifest and a point-in-time
//! copy of the keyspace begins (persist/snapshot.rs: what Redis gets from
//! fork); writes then go on into the new incr file while the copy is
//! written as the new base, then the manifest is switched to the new base
//! plus the new incr file and the old files are deleted.
//!
//! **Loading** ([`load_at_startup`]): manifest, then base, then incr files
//! in order; a legacy single `appendonly.aof` is loaded and moved into the
//! directory as Redis 7.0 does. A truncated tail of the last file is
//! dropped with a warning (and the file truncated) when
//! `aof-load-truncated yes`; any other damage stops start-up with an error
//! naming the file and the byte offset.
//!
//! **Modules**: `manifest` (the manifest file: parse, format, paths,
//! atomic replacement), `writer` (appending the stream's units, writing
//! and fsyncing them as `appendfsync` asks, group commit, the background
//! tick), `rewrite` (BGREWRITEAOF, automatic rewrites, base files) and
//! `loader` (loading at start-up, truncated and corrupt files). This
//! file holds the shared [`Aof`] state, its INFO fields and the switching
//! on and off at run time.

mod loader;
mod manifest;
mod rewrite;
mod writer;

pub use loader::{load_at_startup, load_file, reload, LoadError, Replay};
pub use manifest::{FileInfo, Manifest};
pub use rewrite::start_rewrite;
pub use writer::{before_reply, before_served_reply, reply_target, start_tick};

use crate::persist::Host;
use crate::propagate::encode as enc;
use parking_lot::Mutex;
use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// `appendfsync always`.
pub const FSYNC_ALWAYS: u8 = 0;
/// `appendfsync everysec`.
pub const FSYNC_EVERYSEC: u8 = 1;
/// `appendfsync no`.
pub const FSYNC_NO: u8 = 2;

/// AOF off (Redis's AOF_OFF).
pub const STATE_OFF: u8 = 0;
/// AOF on (AOF_ON).
pub const STATE_ON: u8 = 1;
/// Turned on at run time, waiting for the first rewrite (AOF_WAIT_REWRITE).
pub const STATE_WAIT_REWRITE: u8 = 2;

struct Buf {
    data: Vec<u8>,
    /// Logical offset after the last byte appended.
    end: u64,
    /// Database of the last record (-1: emit SELECT first).
    db: i64,
    /// Unix time, seconds, of the last `#TS:` annotation written
    /// (`aof-timestamp-enabled`; Redis's `server.aof_cur_timestamp`).
    ts: i64,
}

struct Io {
    file: Option<File>,
    spare: Vec<u8>,
    last_fsync: Instant,
}

/// The AOF's shared state (a field of [`Server`]).
pub struct Aof {
    buf: Mutex<Buf>,
    io: Mutex<Io>,
    manifest: Mutex<Manifest>,
    written: AtomicU64,
    synced: AtomicU64,
    /// STATE_OFF / STATE_ON / STATE_WAIT_REWRITE.
    pub state: AtomicU8,
    /// FSYNC_ALWAYS / FSYNC_EVERYSEC / FSYNC_NO.
    pub fsync: AtomicU8,
    /// A rewrite is running.
    pub rewriting: AtomicBool,
    /// A rewrite was requested while one could not start yet.
    pub rewrite_scheduled: AtomicBool,
    rewrite_cancel: AtomicBool,
    rewrite_started: Mutex<Option<Instant>>,
    /// Duration of the last rewrite, seconds (-1: none yet).
    pub last_rewrite_secs: AtomicI64,
    /// Status of the last rewrite.
    pub last_rewrite_ok: AtomicBool,
    /// Rewrites done since start.
    pub rewrites: AtomicU64,
    /// Status of the last write to the AOF.
    pub last_write_ok: AtomicBool,
    /// Size of the base file, bytes.
    pub base_size: AtomicU64,
    /// Size of base plus incr files, bytes.
    pub current_size: AtomicU64,
    /// Size after the last rewrite or load (auto rewrite's reference).
    rewrite_base_size: AtomicU64,
    tick_started: AtomicBool,
    /// DEBUG AOF-FLUSH-SLEEP, µs (Redis's `server.aof_flush_sleep`): each
    /// write of buffered records to the file sleeps this long first (0:
    /// not at all), to widen race windows in tests.
    pub flush_sleep_us: AtomicU64,
    /// `aof-timestamp-enabled`: records are preceded by a `#TS:<unix
    /// seconds>` annotation line whenever the second changed since the
    /// last one (Redis's genAofTimestampAnnotationIfNeeded), and a base
    /// in command form starts with one.
    pub timestamp_enabled: AtomicBool,
}

impl Default for Aof {
    fn default() -> Self {
        Aof {
            buf: Mutex::new(Buf {
                data: Vec::new(),
                end: 0,
                db: -1,
                ts: 0,
            }),
            io: Mutex::new(Io {
                file: None,
                spare: Vec::new(),
                last_fsync: Instant::now(),
            }),
            manifest: Mutex::new(Manifest::default()),
            written: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            state: AtomicU8::new(STATE_OFF),
            fsync: AtomicU8::new(FSYNC_EVERYSEC),
            rewriting: AtomicBool::new(false),
            rewrite_scheduled: AtomicBool::new(false),
            rewrite_cancel: AtomicBool::new(false),
            rewrite_started: Mutex::new(None),
            last_rewrite_secs: AtomicI64::new(-1),
            last_rewrite_ok: AtomicBool::new(true),
            rewrites: AtomicU64::new(0),
            last_write_ok: AtomicBool::new(true),
            base_size: AtomicU64::new(0),
            current_size: AtomicU64::new(0),
            rewrite_base_size: AtomicU64::new(0),
            tick_started: AtomicBool::new(false),
            flush_sleep_us: AtomicU64::new(0),
            timestamp_enabled: AtomicBool::new(false),
        }
    }
}

/// The AOF is a sink of the propagation stream: each unit is appended to
/// its buffer (written before the replies of its batch leave).
impl crate::propagate::Sink for Aof {
    fn append_unit(&self, recs: crate::propagate::Records<'_>) -> u64 {
        // The stream also runs for the replication backlog: with the AOF
        // off its units are not kept here.
        if self.state.load(Ordering::Acquire) == STATE_OFF {
            return 0;
        }
        self.append_units(recs)
    }
}

/// Unix time now, whole seconds (the annotation's clock).
fn unix_secs() -> i64 {
    (crate::util::now_ms() / 1000) as i64
}

/// Appends the annotation line `#TS:<secs>\r\n` (Redis's
/// genAofTimestampAnnotationIfNeeded; the loader skips lines starting
/// with `#`, and `redis-check-aof --truncate-to-timestamp` cuts at them).
fn timestamp_annotation(out: &mut Vec<u8>, secs: i64) {
    let mut b = itoa::Buffer::new();
    out.extend_from_slice(b"#TS:");
    out.extend_from_slice(b.format(secs).as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn select_rec(out: &mut Vec<u8>, db: usize) {
    let mut b = itoa::Buffer::new();
    enc(out, &[b"SELECT", b.format(db).as_bytes()]);
}

impl Aof {
    /// The `INFO persistence` aof_* fields, in Redis 7.0's order.
    pub fn info_fields(&self) -> Vec<(&'static str, String)> {
        let st = self.state.load(Ordering::Relaxed);
        let rewriting = self.rewriting.load(Ordering::Relaxed);
        let cur = self
            .rewrite_started
            .lock()
            .map(|t| t.elapsed().as_secs() as i64)
            .unwrap_or(-1);
        let mut v = vec![
            ("aof_enabled", ((st != STATE_OFF) as u8).to_string()),
            ("aof_rewrite_in_progress", (rewriting as u8).to_string()),
            (
                "aof_rewrite_scheduled",
                (self.rewrite_scheduled.load(Ordering::Relaxed) as u8).to_string(),
            ),
            (
                "aof_last_rewrite_time_sec",
                self.last_rewrite_secs.load(Ordering::Relaxed).to_string(),
            ),
            (
                "aof_current_rewrite_time_sec",
                if rewriting { cur } else { -1 }.to_string(),
            ),
            (
                "aof_last_bgrewrite_status",
                ok_err(self.last_rewrite_ok.load(Ordering::Relaxed)),
            ),
            (
                "aof_rewrites",
                self.rewrites.load(Ordering::Relaxed).to_string(),
            ),
            ("aof_rewrites_consecutive_failures", "0".into()),
            (
                "aof_last_write_status",
                ok_err(self.last_write_ok.load(Ordering::Relaxed)),
            ),
            ("aof_last_cow_size", "0".into()),
        ];
        if st != STATE_OFF {
            let pending = self.buf.lock().data.len();
            v.extend([
                (
                    "aof_current_size",
                    self.current_size.load(Ordering::Relaxed).to_string(),
                ),
                (
                    "aof_base_size",
                    self.base_size.load(Ordering::Relaxed).to_string(),
                ),
                (
                    "aof_pending_rewrite",
                    (self.rewrite_scheduled.load(Ordering::Relaxed) as u8).to_string(),
                ),
                ("aof_buffer_length", pending.to_string()),
                ("aof_pending_bio_fsync", "0".into()),
                ("aof_delayed_fsync", "0".into()),
            ]);
        }
        v
    }
}

fn ok_err(ok: bool) -> String {
    if ok { "ok" } else { "err" }.to_string()
}

fn policy(s: &str) -> u8 {
    match s {
        "always" => FSYNC_ALWAYS,
        "no" => FSYNC_NO,
        _ => FSYNC_EVERYSEC,
    }
}

// ------------------------------------------------------------ start / stop at run time

/// After CONFIG SET: applies `appendfsync`, and `appendonly` turned on
/// (starts a rewrite that produces the base, as Redis's startAppendOnly;
/// scheduled for the cron instead inside a transaction, `in_exec`, or while
/// a BGSAVE runs) or off (flushes, fsyncs and closes the file, as
/// stopAppendOnly, stopping a running rewrite).
pub fn config_changed(server: &Arc<impl Host>, in_exec: bool) {
    let (want, pol) = {
        let c = server.config().read();
        (c.get_bool("appendonly"), policy(c.get("appendfsync")))
    };
    let a = &server.aof();
    a.fsync.store(pol, Ordering::Relaxed);
    let st = a.state.load(Ordering::Acquire);
    if want && st == STATE_OFF {
        a.state.store(STATE_WAIT_REWRITE, Ordering::Release);
        server
            .propagation()
            .set_user(crate::propagate::USER_AOF, true);
        start_tick(server);
        if server.rdb().bgsave_in_progress.load(Ordering::Relaxed) {
            a.rewrite_scheduled.store(true, Ordering::Relaxed);
            tracing::warn!("AOF was enabled but there is already another background operation. An AOF background was scheduled to start when possible.");
        } else if in_exec {
            a.rewrite_scheduled.store(true, Ordering::Relaxed);
            tracing::warn!("AOF was enabled during a transaction. An AOF background was scheduled to start when possible.");
        } else if !start_rewrite(server, true) {
            a.rewrite_scheduled.store(true, Ordering::Relaxed);
        }
    } else if !want && st != STATE_OFF {
        server
            .propagation()
            .set_user(crate::propagate::USER_AOF, false);
        if a.rewriting.load(Ordering::Acquire) {
            // Redis kills its rewrite child; the rewrite thread stops.
            tracing::info!("Killing running AOF rewrite child (the rewrite thread)");
        }
        a.rewrite_cancel.store(true, Ordering::SeqCst);
        // Wait for write commands in flight, then close the file (inside
        // an EXEC block this thread already holds the gate).
        let nested = crate::propagate::Stream::in_write_context();
        let _g = (!nested).then(|| server.propagation().pause_writes());
        a.flush_all();
        a.io.lock().file = None;
        a.buf.lock().db = -1;
        a.state.store(STATE_OFF, Ordering::Release);
        a.rewrite_scheduled.store(false, Ordering::Relaxed);
        tracing::info!("Background append only file rewriting stopped: AOF turned off");
    }
}
