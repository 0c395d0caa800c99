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

use crate::cmd::{self, Ctx};
use crate::db::keyspace::SHARDS;
use crate::net::connection::Client;
use crate::propagate::encode as enc;
use crate::resp::{Args, Out, OwnedArgs};
use crate::server::Server;
use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// Items per command in a rewritten base (Redis's AOF_REWRITE_ITEMS_PER_CMD).
const ITEMS_PER_CMD: usize = 64;

// ------------------------------------------------------------ manifest

/// One line of the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// File name inside the AOF directory.
    pub name: String,
    /// Sequence number.
    pub seq: i64,
    /// `b` base, `i` incr, `h` history.
    pub kind: u8,
}

/// The manifest: which files make up the AOF, in load order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The base file, if any.
    pub base: Option<FileInfo>,
    /// Incr files, ascending sequence.
    pub incrs: Vec<FileInfo>,
    /// History files (to delete).
    pub history: Vec<FileInfo>,
    /// Highest base sequence used.
    pub base_seq: i64,
    /// Highest incr sequence used.
    pub incr_seq: i64,
}

impl Manifest {
    /// Parses manifest text with Redis 7.0's rules (`aofLoadManifestFromFile`).
    /// Errors: Redis's message, with the line number and text when known.
    pub fn parse(text: &[u8]) -> Result<Manifest, String> {
        let mut m = Manifest::default();
        let mut maxseq = 0;
        if text.is_empty() {
            return Err("Found an empty AOF manifest".into());
        }
        for (i, raw) in text.split_inclusive(|&b| b == b'\n').enumerate() {
            let linenum = i + 1;
            if raw.first() == Some(&b'#') {
                continue;
            }
            let fail = |why: &str| {
                format!(
                    "Reading the manifest file, at line {linenum}: '{}': {why}",
                    String::from_utf8_lossy(raw).trim()
                )
            };
            if raw.last() != Some(&b'\n') {
                return Err(fail("Invalid AOF manifest file format (no newline)"));
            }
            let line = String::from_utf8_lossy(raw);
            let line = line.trim_matches(|c| c == ' ' || c == '\t' || c == '\r' || c == '\n');
            if line.is_empty() {
                return Err(fail("Invalid AOF manifest file format"));
            }
            let (mut data, mut ranges) = (Vec::new(), Vec::new());
            crate::resp::parse::split_args(line.as_bytes(), &mut data, &mut ranges)
                .map_err(|_| fail("Invalid AOF manifest file format"))?;
            let argv: Vec<Vec<u8>> = Args::new(&data, &ranges).to_vec();
            if argv.len() < 6 || !argv.len().is_multiple_of(2) {
                return Err(fail("Invalid AOF manifest file format"));
            }
            let (mut name, mut seq, mut kind) = (None, 0i64, 0u8);
            for kv in argv.chunks(2) {
                let k = String::from_utf8_lossy(&kv[0]).to_ascii_lowercase();
                match k.as_str() {
                    "file" => {
                        let n = String::from_utf8_lossy(&kv[1]).into_owned();
                        if n.contains('/') {
                            return Err(fail("File can't be a path, just a filename"));
                        }
                        name = Some(n);
                    }
                    "seq" => {
                        seq = std::str::from_utf8(&kv[1])
                            .ok()
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(0)
                    }
                    "type" => kind = kv[1].first().copied().unwrap_or(0),
                    _ => {}
                }
            }
            let (Some(name), true, true) = (name, seq != 0, kind != 0) else {
                return Err(fail("Invalid AOF manifest file format"));
            };
            let fi = FileInfo { name, seq, kind };
            match kind {
                b'b' => {
                    if m.base.is_some() {
                        return Err(fail("Found duplicate base file information"));
                    }
                    m.base_seq = seq;
                    m.base = Some(fi);
                }
                b'h' => m.history.push(fi),
                b'i' => {
                    if seq <= maxseq {
                        return Err(fail("Found a non-monotonic sequence number"));
                    }
                    maxseq = seq;
                    m.incr_seq = seq;
                    m.incrs.push(fi);
                }
                _ => return Err(fail("Unknown AOF file type")),
            }
        }
        Ok(m)
    }

    /// The manifest text (base first, then history, then incr files).
    pub fn format(&self) -> String {
        let mut s = String::new();
        let line = |s: &mut String, f: &FileInfo| {
            let name = if f.name.bytes().all(|b| b.is_ascii_graphic() && b != b'"') {
                f.name.clone()
            } else {
                let mut q = Vec::new();
                cmd::repr(f.name.as_bytes(), &mut q);
                String::from_utf8_lossy(&q).into_owned()
            };
            s.push_str(&format!(
                "file {} seq {} type {}\n",
                name, f.seq, f.kind as char
            ));
        };
        if let Some(b) = &self.base {
            line(&mut s, b);
        }
        for f in &self.history {
            line(&mut s, f);
        }
        for f in &self.incrs {
            line(&mut s, f);
        }
        s
    }
}

// ------------------------------------------------------------ durability of replies

/// Before a batch's replies are written: the AOF position the batch's
/// records must reach (written; with `appendfsync always` also fsync'd)
/// and whether it is reached already. Pass a position not yet reached to
/// [`before_reply`].
pub fn reply_target(server: &Server) -> Option<u64> {
    let need = server.propagation.wait_durable();
    (need != 0 && !server.aof.reached(need)).then_some(need)
}

/// Makes the records up to `need` durable as `appendfsync` asks. The
/// connection calls it after letting its thread's other ready connections
/// run their batches, so that one write (and one fsync) covers them all:
/// Redis writes the AOF once per event-loop iteration (beforeSleep's
/// flushAppendOnlyFile), before any reply of that iteration.
pub fn before_reply(server: &Server, need: u64) {
    let a = &server.aof;
    a.flush_to(need, a.fsync.load(Ordering::Relaxed) == FSYNC_ALWAYS);
}

/// Before the reply of a blocked client served by another connection:
/// flushes everything appended so far (its pop's record included).
pub fn before_served_reply(server: &Server) {
    let a = &server.aof;
    let end = a.buf.lock().end;
    a.flush_to(end, a.fsync.load(Ordering::Relaxed) == FSYNC_ALWAYS);
}

// ------------------------------------------------------------ the AOF state

struct Buf {
    data: Vec<u8>,
    /// Logical offset after the last byte appended.
    end: u64,
    /// Database of the last record (-1: emit SELECT first).
    db: i64,
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
}

impl Default for Aof {
    fn default() -> Self {
        Aof {
            buf: Mutex::new(Buf {
                data: Vec::new(),
                end: 0,
                db: -1,
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
        }
    }
}

/// The AOF is a sink of the propagation stream: each unit is appended to
/// its buffer (written before the replies of its batch leave).
impl crate::propagate::Sink for Aof {
    fn append_unit(&self, recs: crate::propagate::Records<'_>) -> u64 {
        self.append_units(recs)
    }
}

fn select_rec(out: &mut Vec<u8>, db: usize) {
    let mut b = itoa::Buffer::new();
    enc(out, &[b"SELECT", b.format(db).as_bytes()]);
}

struct Paths {
    dir: PathBuf,
    fname: String,
}

fn paths(server: &Server) -> Paths {
    let c = server.config.read();
    Paths {
        dir: PathBuf::from(c.get("appenddirname")),
        fname: c.get("appendfilename").to_string(),
    }
}

fn fsync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

fn write_manifest(p: &Paths, m: &Manifest) -> std::io::Result<()> {
    let tmp = p.dir.join(format!("temp-{}.manifest", p.fname));
    let dst = p.dir.join(format!("{}.manifest", p.fname));
    {
        let mut f = File::create(&tmp)?;
        f.write_all(m.format().as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, &dst)?;
    fsync_dir(&p.dir);
    Ok(())
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

impl Aof {
    /// Appends units of records (database, RESP bytes) to the buffer,
    /// emitting SELECT when the database changes and wrapping more than one
    /// record in MULTI/EXEC. Returns the logical offset after them, for
    /// [`Aof::flush_to`]. (The entry point replication will share.)
    pub fn append_units(&self, recs: crate::propagate::Records<'_>) -> u64 {
        let mut b = self.buf.lock();
        let start = b.data.len();
        let wrap = recs.len() > 1;
        for (i, (db, r)) in recs.iter().enumerate() {
            if b.db != db as i64 {
                select_rec(&mut b.data, db);
                b.db = db as i64;
            }
            if wrap && i == 0 {
                enc(&mut b.data, &[b"MULTI"]);
            }
            b.data.extend_from_slice(r);
        }
        if wrap {
            enc(&mut b.data, &[b"EXEC"]);
        }
        b.end += (b.data.len() - start) as u64;
        b.end
    }

    /// True when the records up to `target` are written (with
    /// `appendfsync always`: fsync'd).
    pub fn reached(&self, target: u64) -> bool {
        if self.fsync.load(Ordering::Relaxed) == FSYNC_ALWAYS {
            self.synced.load(Ordering::Acquire) >= target
        } else {
            self.written.load(Ordering::Acquire) >= target
        }
    }

    /// Writes the buffer to the current incr file when less than `target`
    /// (logical offset) was written, and fsyncs it when `fsync` and less
    /// was synced. Group commit: a caller finding its target already
    /// covered by another's write (or fsync) returns at once.
    pub fn flush_to(&self, target: u64, fsync: bool) {
        let done = |s: &Self| {
            if fsync {
                s.synced.load(Ordering::Acquire) >= target
            } else {
                s.written.load(Ordering::Acquire) >= target
            }
        };
        if done(self) {
            return;
        }
        let mut io = self.io.lock();
        if done(self) {
            return;
        }
        self.write_locked(&mut io);
        if fsync {
            self.fsync_locked(&mut io);
        }
    }

    fn write_locked(&self, io: &mut Io) {
        let end = {
            let mut b = self.buf.lock();
            std::mem::swap(&mut b.data, &mut io.spare);
            b.end
        };
        if io.spare.is_empty() {
            self.written.store(end, Ordering::Release);
            return;
        }
        let Some(f) = io.file.as_mut() else {
            // No file (AOF being switched off): drop the records.
            io.spare.clear();
            self.written.store(end, Ordering::Release);
            self.synced.store(end, Ordering::Release);
            return;
        };
        match f.write_all(&io.spare) {
            Ok(()) => {
                self.current_size
                    .fetch_add(io.spare.len() as u64, Ordering::Relaxed);
                io.spare.clear();
                self.written.store(end, Ordering::Release);
                if !self.last_write_ok.swap(true, Ordering::Relaxed) {
                    tracing::warn!("AOF write error looks solved, Redis can write again.");
                }
            }
            Err(e) => {
                self.last_write_ok.store(false, Ordering::Relaxed);
                if self.fsync.load(Ordering::Relaxed) == FSYNC_ALWAYS {
                    tracing::error!(
                        "Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting...: {e}"
                    );
                    std::process::exit(1);
                }
                tracing::warn!("Error writing to the AOF file: {e}");
                // Keep the records for the next attempt, in order.
                let mut b = self.buf.lock();
                let newer = std::mem::take(&mut b.data);
                b.data = std::mem::take(&mut io.spare);
                b.data.extend_from_slice(&newer);
            }
        }
    }

    fn fsync_locked(&self, io: &mut Io) {
        let w = self.written.load(Ordering::Acquire);
        if let Some(f) = io.file.as_ref() {
            if let Err(e) = f.sync_data() {
                tracing::warn!("AOF fsync failed: {e}");
                self.last_write_ok.store(false, Ordering::Relaxed);
                if self.fsync.load(Ordering::Relaxed) == FSYNC_ALWAYS {
                    tracing::error!("Can't recover from AOF fsync error when the AOF fsync policy is 'always'. Exiting...");
                    std::process::exit(1);
                }
                return;
            }
        }
        io.last_fsync = Instant::now();
        self.synced.store(w, Ordering::Release);
    }

    /// Writes and fsyncs everything buffered (SHUTDOWN, SIGTERM, turning
    /// the AOF off).
    pub fn flush_all(&self) {
        let end = self.buf.lock().end;
        let mut io = self.io.lock();
        let _ = end;
        self.write_locked(&mut io);
        self.fsync_locked(&mut io);
    }

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
/// (starts a rewrite that produces the base, as Redis's startAppendOnly)
/// or off (flushes, fsyncs and closes the file, as stopAppendOnly).
pub fn config_changed(server: &Arc<Server>) {
    let (want, pol) = {
        let c = server.config.read();
        (c.get("appendonly") == "yes", policy(c.get("appendfsync")))
    };
    let a = &server.aof;
    a.fsync.store(pol, Ordering::Relaxed);
    let st = a.state.load(Ordering::Acquire);
    if want && st == STATE_OFF {
        a.state.store(STATE_WAIT_REWRITE, Ordering::Release);
        crate::propagate::set_on(true);
        start_tick(server);
        if !start_rewrite(server, true) {
            a.rewrite_scheduled.store(true, Ordering::Relaxed);
        }
    } else if !want && st != STATE_OFF {
        crate::propagate::set_on(false);
        a.rewrite_cancel.store(true, Ordering::SeqCst);
        // Wait for write commands in flight, then close the file (inside
        // an EXEC block this thread already holds the gate).
        let nested = crate::propagate::Stream::in_write_context();
        let _g = (!nested).then(|| server.propagation.pause_writes());
        a.flush_all();
        a.io.lock().file = None;
        a.buf.lock().db = -1;
        a.state.store(STATE_OFF, Ordering::Release);
        a.rewrite_scheduled.store(false, Ordering::Relaxed);
        tracing::info!("Background append only file rewriting stopped: AOF turned off");
    }
}

/// Waits until every I/O thread has finished the batch it was executing
/// (a task queued on each worker runs only between batches), so that
/// commands started before a change of [`PROPAGATE`] are over.
fn io_barrier() {
    for h in crate::net::listener::worker_handles() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        h.spawn(async move {
            let _ = tx.send(());
        });
        let _ = rx.recv_timeout(Duration::from_secs(10));
    }
}

/// Starts a background rewrite (BGREWRITEAOF). Returns false when one is
/// already running. `barrier`: first wait for commands that may have run
/// unpropagated (the AOF was just turned on).
pub fn start_rewrite(server: &Arc<Server>, barrier: bool) -> bool {
    let a = &server.aof;
    if a.rewriting.swap(true, Ordering::AcqRel) {
        return false;
    }
    a.rewrite_scheduled.store(false, Ordering::Relaxed);
    a.rewrite_cancel.store(false, Ordering::SeqCst);
    *a.rewrite_started.lock() = Some(Instant::now());
    let s = server.clone();
    let spawned = std::thread::Builder::new()
        .name("ferrokv-aofrw".into())
        .spawn(move || {
            if barrier {
                io_barrier();
            }
            let t0 = Instant::now();
            let r = rewrite(&s);
            let a = &s.aof;
            match r {
                Ok(()) => {
                    a.last_rewrite_ok.store(true, Ordering::Relaxed);
                    a.rewrites.fetch_add(1, Ordering::Relaxed);
                    tracing::info!("Background AOF rewrite finished successfully");
                }
                Err(e) => {
                    a.last_rewrite_ok.store(false, Ordering::Relaxed);
                    tracing::warn!("Background AOF rewrite failed: {e}");
                }
            }
            a.last_rewrite_secs
                .store(t0.elapsed().as_secs() as i64, Ordering::Relaxed);
            *a.rewrite_started.lock() = None;
            a.rewriting.store(false, Ordering::Release);
        });
    if spawned.is_err() {
        a.rewriting.store(false, Ordering::Release);
        *a.rewrite_started.lock() = None;
        return false;
    }
    true
}

/// The rewrite itself (see the module documentation).
fn rewrite(server: &Arc<Server>) -> std::io::Result<()> {
    let a = &server.aof;
    let p = paths(server);
    std::fs::create_dir_all(&p.dir)?;
    let gate = server.propagation.pause_writes();
    let st = a.state.load(Ordering::Acquire);
    let propagating = st != STATE_OFF;
    let mut new_incr = None;
    let mut old_file = None;
    if propagating {
        let mut io = a.io.lock();
        if st == STATE_WAIT_REWRITE {
            // Records so far are part of the snapshot taken below.
            let mut b = a.buf.lock();
            b.data.clear();
            a.written.store(b.end, Ordering::Release);
            a.synced.store(b.end, Ordering::Release);
        } else {
            a.write_locked(&mut io);
            // With `always` every acknowledged record is fsync'd already
            // but for the last batch; otherwise the old file is fsync'd
            // once writers run again.
            if a.fsync.load(Ordering::Relaxed) == FSYNC_ALWAYS {
                a.fsync_locked(&mut io);
            }
        }
        let mut m = a.manifest.lock().clone();
        m.incr_seq += 1;
        let fi = FileInfo {
            name: format!("{}.{}.incr.aof", p.fname, m.incr_seq),
            seq: m.incr_seq,
            kind: b'i',
        };
        let f = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(p.dir.join(&fi.name))?;
        m.incrs.push(fi.clone());
        write_manifest(&p, &m)?;
        *a.manifest.lock() = m;
        old_file = io.file.replace(f);
        a.buf.lock().db = -1;
        new_incr = Some(fi);
    }
    // The base is the keyspace as it is now, copied while writers go on
    // (persist/snapshot.rs): writes resume at once.
    let preamble = use_preamble(server);
    let snap = crate::persist::snapshot::Snapshot::begin(
        &server.keyspace,
        base_serialiser(server, preamble),
    );
    drop(gate);
    if let Some(f) = old_file {
        if let Err(e) = f.sync_data() {
            tracing::warn!("AOF fsync failed: {e}");
        }
    }
    let tmp = p
        .dir
        .join(format!("temp-rewriteaof-bg-{}.aof", std::process::id()));
    let res = (|| {
        let mut w = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
        write_base(server, &mut w, preamble, &snap, &a.rewrite_cancel)?;
        w.flush()?;
        w.into_inner().map_err(|e| e.into_error())
    })();
    drop(snap);
    let f = match res {
        Ok(f) => f,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    f.sync_all()?;
    drop(f);
    if a.rewrite_cancel.load(Ordering::SeqCst) {
        let _ = std::fs::remove_file(&tmp);
        return Err(std::io::Error::other("rewrite cancelled (AOF turned off)"));
    }
    let _io = a.io.lock();
    let mut m = a.manifest.lock().clone();
    m.base_seq += 1;
    let base = FileInfo {
        name: base_name(&p.fname, m.base_seq, preamble),
        seq: m.base_seq,
        kind: b'b',
    };
    std::fs::rename(&tmp, p.dir.join(&base.name))?;
    let mut history = std::mem::take(&mut m.history);
    if let Some(mut old) = m.base.take() {
        old.kind = b'h';
        history.push(old);
    }
    for mut f in std::mem::take(&mut m.incrs) {
        if Some(&f) != new_incr.as_ref() {
            f.kind = b'h';
            history.push(f);
        }
    }
    m.base = Some(base.clone());
    if let Some(fi) = new_incr.clone() {
        m.incrs.push(fi);
    }
    m.history = history.clone();
    write_manifest(&p, &m)?;
    for h in &history {
        let _ = std::fs::remove_file(p.dir.join(&h.name));
    }
    m.history.clear();
    write_manifest(&p, &m)?;
    let base_size = file_len(&p.dir.join(&base.name));
    let incr_size = new_incr
        .as_ref()
        .map(|f| file_len(&p.dir.join(&f.name)))
        .unwrap_or(0);
    *a.manifest.lock() = m;
    a.base_size.store(base_size, Ordering::Relaxed);
    a.current_size
        .store(base_size + incr_size, Ordering::Relaxed);
    a.rewrite_base_size
        .store(base_size + incr_size, Ordering::Relaxed);
    if a.state.load(Ordering::Acquire) == STATE_WAIT_REWRITE {
        a.state.store(STATE_ON, Ordering::Release);
    }
    Ok(())
}

/// Serialises the keys of `shard` (locked) in command form (SET / RPUSH /
/// SADD / HMSET / ZADD in batches of 64 items, PEXPIREAT), skipping keys
/// already expired, as Redis's rewriteAppendOnlyFileRio; returns the keys
/// written.
pub fn put_shard_commands(buf: &mut Vec<u8>, g: &crate::db::keyspace::Shard) -> u64 {
    use crate::db::Value;
    let now = crate::util::now_ms();
    let mut ib = itoa::Buffer::new();
    let mut n = 0;
    for (k, e, expire_at) in g.iter_with_expire() {
        if expire_at != 0 && expire_at < now {
            continue;
        }
        n += 1;
        match &e.value {
            Value::Str(s) => {
                let mut t = itoa::Buffer::new();
                enc(buf, &[b"SET", k, s.as_bytes(&mut t)]);
            }
            Value::List(l) => {
                let items: Vec<Vec<u8>> = l.iter().map(|x| x.to_vec()).collect();
                batched(buf, b"RPUSH", k, items.iter().map(|x| vec![x.as_slice()]));
            }
            Value::Set(s) => {
                let items: Vec<Vec<u8>> = s
                    .iter()
                    .map(|m| match m {
                        crate::db::set::Member::Int(i) => {
                            itoa::Buffer::new().format(i).as_bytes().to_vec()
                        }
                        crate::db::set::Member::Bytes(b) => b.to_vec(),
                    })
                    .collect();
                batched(buf, b"SADD", k, items.iter().map(|x| vec![x.as_slice()]));
            }
            Value::Hash(h) => {
                batched(buf, b"HMSET", k, h.iter().map(|(f, v)| vec![f, v]));
            }
            Value::ZSet(z) => {
                let mut items: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(z.len());
                z.range(0, z.len(), false, |m, s| {
                    let mut sb = Vec::new();
                    crate::util::fmt_double_17g(s, &mut sb);
                    items.push((sb, m.to_vec()));
                });
                batched(
                    buf,
                    b"ZADD",
                    k,
                    items.iter().map(|(s, m)| vec![s.as_slice(), m.as_slice()]),
                );
            }
        }
        if expire_at != 0 {
            enc(buf, &[b"PEXPIREAT", k, ib.format(expire_at).as_bytes()]);
        }
    }
    n
}

/// Writes a whole keyspace in command form: SELECT before each database's
/// first key, then each shard's keys from `src(db, shard, buf)` (which
/// appends [`put_shard_commands`]' output and returns the keys written).
fn write_commands_from(
    server: &Server,
    w: &mut impl Write,
    src: &mut dyn FnMut(usize, usize, &mut Vec<u8>) -> u64,
) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut shard = Vec::new();
    for dbi in 0..server.keyspace.db_count() {
        let mut selected = false;
        for si in 0..SHARDS {
            shard.clear();
            src(dbi, si, &mut shard);
            if shard.is_empty() {
                continue;
            }
            if !selected {
                select_rec(&mut buf, dbi);
                selected = true;
            }
            buf.extend_from_slice(&shard);
            if buf.len() >= 64 * 1024 {
                w.write_all(&buf)?;
                buf.clear();
            }
        }
    }
    w.write_all(&buf)
}

fn batched<'a>(
    buf: &mut Vec<u8>,
    cmd: &[u8],
    key: &[u8],
    items: impl Iterator<Item = Vec<&'a [u8]>>,
) {
    let mut argv: Vec<&[u8]> = vec![cmd, key];
    let mut count = 0;
    for it in items {
        argv.extend(it);
        count += 1;
        if count == ITEMS_PER_CMD {
            enc(buf, &argv);
            argv.truncate(2);
            count = 0;
        }
    }
    if count > 0 {
        enc(buf, &argv);
    }
}

// ------------------------------------------------------------ background tick

/// Starts the background thread (once): writes buffered records every
/// 100 ms, fsyncs once a second with `everysec`, runs scheduled and
/// automatic rewrites (`auto-aof-rewrite-percentage` / `-min-size`).
pub fn start_tick(server: &Arc<Server>) {
    if server.aof.tick_started.swap(true, Ordering::AcqRel) {
        return;
    }
    let s = server.clone();
    let _ = std::thread::Builder::new()
        .name("ferrokv-aof".into())
        .spawn(move || loop {
            std::thread::sleep(Duration::from_millis(100));
            tick(&s);
        });
}

fn tick(server: &Arc<Server>) {
    let a = &server.aof;
    if a.state.load(Ordering::Acquire) == STATE_OFF {
        return;
    }
    let pol = a.fsync.load(Ordering::Relaxed);
    {
        let end = a.buf.lock().end;
        a.flush_to(end, false);
        if pol == FSYNC_EVERYSEC {
            let mut io = a.io.lock();
            if io.last_fsync.elapsed() >= Duration::from_secs(1)
                && a.synced.load(Ordering::Acquire) < a.written.load(Ordering::Acquire)
            {
                // fsync a duplicate of the descriptor without holding the
                // lock, so writers are not stalled behind the disk.
                let w = a.written.load(Ordering::Acquire);
                let dup = io.file.as_ref().and_then(|f| f.try_clone().ok());
                io.last_fsync = Instant::now();
                drop(io);
                if let Some(f) = dup {
                    if f.sync_data().is_ok() {
                        a.synced.fetch_max(w, Ordering::AcqRel);
                    }
                }
            }
        }
    }
    if a.rewriting.load(Ordering::Acquire) {
        return;
    }
    if a.rewrite_scheduled.load(Ordering::Relaxed) {
        let barrier = a.state.load(Ordering::Acquire) == STATE_WAIT_REWRITE;
        start_rewrite(server, barrier);
        return;
    }
    if a.state.load(Ordering::Acquire) != STATE_ON {
        return;
    }
    let (pct, min) = {
        let c = server.config.read();
        (
            c.get_i64("auto-aof-rewrite-percentage"),
            c.get("auto-aof-rewrite-min-size")
                .parse::<u64>()
                .unwrap_or(0),
        )
    };
    let cur = a.current_size.load(Ordering::Relaxed);
    if pct > 0 && cur > min {
        let base = a.rewrite_base_size.load(Ordering::Relaxed).max(1);
        let growth = (cur * 100 / base) as i64 - 100;
        if growth >= pct {
            tracing::info!("Starting automatic rewriting of AOF on {growth}% growth");
            start_rewrite(server, false);
        }
    }
}

// ------------------------------------------------------------ loading

/// A failed load: the message to print before exiting with status 1.
pub type LoadError = String;

/// Loads the AOF at start-up when `appendonly yes` (Redis's
/// `loadDataFromDisk` + `aofOpenIfNeededOnServerStart`): manifest, base,
/// incr files; a legacy single file is loaded and moved into the AOF
/// directory. Then opens the last incr file for appending (creating the
/// first base and incr files on a fresh start) and turns propagation on.
/// Returns Ok(true) when the AOF is on (the caller must not load an RDB
/// file then), Ok(false) when `appendonly no`.
pub fn load_at_startup(server: &Arc<Server>) -> Result<bool, LoadError> {
    let (enabled, truncated_ok, pol) = {
        let c = server.config.read();
        (
            c.get("appendonly") == "yes",
            c.get("aof-load-truncated") == "yes",
            policy(c.get("appendfsync")),
        )
    };
    let a = &server.aof;
    a.fsync.store(pol, Ordering::Relaxed);
    if !enabled {
        return Ok(false);
    }
    let p = paths(server);
    let mpath = p.dir.join(format!("{}.manifest", p.fname));
    let legacy = PathBuf::from(&p.fname);
    let t0 = Instant::now();
    let mut legacy_loaded = false;
    let mut m = if mpath.exists() {
        let text = std::fs::read(&mpath).map_err(|e| {
            format!(
                "Fatal error: can't open the AOF manifest file {}: {e}",
                mpath.display()
            )
        })?;
        Manifest::parse(&text).map_err(|e| format!("*** FATAL AOF MANIFEST FILE ERROR *** {e}"))?
    } else if legacy.is_file() {
        // Redis 7.0 aofUpgradePrepare: the old file becomes the base.
        load_file(server, &legacy, true, truncated_ok)?;
        std::fs::create_dir_all(&p.dir)
            .map_err(|e| format!("Can't create the AOF directory {}: {e}", p.dir.display()))?;
        let m = Manifest {
            base: Some(FileInfo {
                name: p.fname.clone(),
                seq: 1,
                kind: b'b',
            }),
            base_seq: 1,
            ..Default::default()
        };
        std::fs::rename(&legacy, p.dir.join(&p.fname)).map_err(|e| {
            format!(
                "Error moving the AOF file {} into {}: {e}",
                p.fname,
                p.dir.display()
            )
        })?;
        write_manifest(&p, &m).map_err(|e| format!("Can't persist the AOF manifest: {e}"))?;
        tracing::info!("Successfully migrated an old-style AOF into the AOF directory");
        legacy_loaded = true;
        m
    } else {
        Manifest::default()
    };
    if !legacy_loaded {
        let mut files: Vec<&FileInfo> = Vec::new();
        if let Some(b) = &m.base {
            files.push(b);
        }
        files.extend(m.incrs.iter());
        for (i, f) in files.iter().enumerate() {
            let path = p.dir.join(&f.name);
            if !path.is_file() {
                return Err(format!("The AOF file {} doesn't exist", f.name));
            }
            load_file(server, &path, i + 1 == files.len(), truncated_ok)?;
        }
        if !files.is_empty() {
            tracing::info!(
                "DB loaded from append only file: {:.3} seconds",
                t0.elapsed().as_secs_f64()
            );
        }
    }
    // Open for appending.
    std::fs::create_dir_all(&p.dir)
        .map_err(|e| format!("Can't create the AOF directory {}: {e}", p.dir.display()))?;
    let fresh = m.base.is_none() && m.incrs.is_empty();
    if m.incrs.is_empty() {
        m.incr_seq += 1;
        m.incrs.push(FileInfo {
            name: format!("{}.{}.incr.aof", p.fname, m.incr_seq),
            seq: m.incr_seq,
            kind: b'i',
        });
    }
    let last = m.incrs.last().cloned().expect("one incr file");
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(p.dir.join(&last.name))
        .map_err(|e| format!("Can't open the append-only file {}: {e}", last.name))?;
    if fresh {
        // Redis 7.0 creates the first base at start-up (the dataset loaded
        // from RDB, or empty).
        m.base_seq += 1;
        let preamble = use_preamble(server);
        let base = FileInfo {
            name: base_name(&p.fname, m.base_seq, preamble),
            seq: m.base_seq,
            kind: b'b',
        };
        let bpath = p.dir.join(&base.name);
        (|| {
            let mut w = BufWriter::new(File::create(&bpath)?);
            // Start-up: no writer runs yet.
            let snap = crate::persist::snapshot::Snapshot::begin(
                &server.keyspace,
                base_serialiser(server, preamble),
            );
            write_base(server, &mut w, preamble, &snap, &AtomicBool::new(false))?;
            w.flush()?;
            w.get_ref().sync_all()
        })()
        .map_err(|e| format!("Can't write the AOF base file {}: {e}", base.name))?;
        m.base = Some(base);
    }
    for h in std::mem::take(&mut m.history) {
        let _ = std::fs::remove_file(p.dir.join(&h.name));
    }
    write_manifest(&p, &m).map_err(|e| format!("Can't persist the AOF manifest: {e}"))?;
    let base_size = m
        .base
        .as_ref()
        .map(|b| file_len(&p.dir.join(&b.name)))
        .unwrap_or(0);
    let total: u64 = base_size
        + m.incrs
            .iter()
            .map(|f| file_len(&p.dir.join(&f.name)))
            .sum::<u64>();
    a.base_size.store(base_size, Ordering::Relaxed);
    a.current_size.store(total, Ordering::Relaxed);
    a.rewrite_base_size.store(total, Ordering::Relaxed);
    *a.manifest.lock() = m;
    a.io.lock().file = Some(f);
    a.buf.lock().db = -1;
    a.state.store(STATE_ON, Ordering::Release);
    crate::propagate::set_on(true);
    Ok(true)
}

/// True when new base files are written in RDB format
/// (`aof-use-rdb-preamble yes`, Redis's default).
fn use_preamble(server: &Server) -> bool {
    server.config.read().get("aof-use-rdb-preamble") == "yes"
}

/// A base file's name: `<appendfilename>.<seq>.base.rdb` in RDB format,
/// `.base.aof` in command form (Redis 7.0's getNewBaseFileNameAndMarkPreAsHistory).
fn base_name(fname: &str, seq: i64, preamble: bool) -> String {
    let ext = if preamble { "rdb" } else { "aof" };
    format!("{fname}.{seq}.base.{ext}")
}

/// The serialiser of a base's shards: RDB form when `preamble`, else
/// commands.
fn base_serialiser(server: &Server, preamble: bool) -> Box<crate::persist::snapshot::Serialise> {
    if preamble {
        crate::persist::rdb::shard_serialiser(server)
    } else {
        Box::new(|g, b| put_shard_commands(b, g))
    }
}

/// Writes a base of the dataset as `snap` copied it: an RDB snapshot (with
/// the `aof-base` aux field) when `preamble`, else commands.
fn write_base(
    server: &Server,
    w: &mut impl Write,
    preamble: bool,
    snap: &crate::persist::snapshot::Snapshot<'_>,
    cancel: &AtomicBool,
) -> std::io::Result<()> {
    if preamble {
        let ctl = crate::persist::rdb::SaveCtl {
            cancel: Some(cancel),
            ..Default::default()
        };
        crate::persist::rdb::write_snapshot_from(server, w, true, ctl, &mut |d, i, b| {
            Some(snap.shard(d, i, b))
        })
        .map(|_| ())
    } else {
        write_commands_from(server, w, &mut |d, i, b| snap.shard(d, i, b))
    }
}

/// Reads the RDB part of a base file (or of a legacy AOF with an RDB
/// preamble) from `data`: keys whose TTL has passed are kept, the AOF
/// that follows decides (Redis's loadSingleAppendOnlyFile). Returns the
/// bytes consumed, so the command part (if any) is read after it.
fn read_rdb_base(server: &Arc<Server>, data: &[u8]) -> Result<usize, String> {
    let mut cur = std::io::Cursor::new(data);
    let opts = crate::persist::rdb::LoadOpts {
        allow_dup: false,
        keep_expired: true,
        skip_checksum: false,
    };
    crate::persist::rdb::load(server, &mut cur, opts).map_err(|e| e.to_string())?;
    Ok(cur.position() as usize)
}

/// Loads one AOF file (base or incr) by executing its commands. `last`:
/// the last file of the set (only its tail may be truncated).
pub fn load_file(
    server: &Arc<Server>,
    path: &Path,
    last: bool,
    truncated_ok: bool,
) -> Result<(), LoadError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let data = std::fs::read(path)
        .map_err(|e| format!("Unrecoverable error reading the append only file {name}: {e}"))?;
    let mut pos = 0usize;
    if data.starts_with(b"REDIS") {
        tracing::info!("Reading RDB base file on AOF loading...");
        pos = read_rdb_base(server, &data).map_err(|e| {
            format!("Error reading the RDB base file {name}, AOF loading aborted: {e}")
        })?;
    }
    let handle = crate::net::connection::new_handle(server, "aof".into(), String::new(), -1, false);
    let mut client = Client::new(handle);
    client.authenticated = true;
    client.deny_blocking = true;
    let mut out = Out::new();
    let ncmds = cmd::table().all.len();
    let stats = server.stats.local(ncmds);
    let mut valid_up_to = pos;
    let mut valid_before_multi = pos;
    let mut multi: Option<Vec<OwnedArgs>> = None;
    let fmterr = |off: usize, why: &str| {
        let msg = format!(
            "Bad file format reading the append only file {name} at offset {off} ({why}): make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"
        );
        tracing::error!("{msg}");
        msg
    };
    let truncated = loop {
        if pos >= data.len() {
            break false;
        }
        let start = pos;
        if data[pos] == b'#' {
            // Annotation (aof-timestamp-enabled).
            match memchr::memchr(b'\n', &data[pos..]) {
                Some(nl) => {
                    pos += nl + 1;
                    valid_up_to = pos;
                    continue;
                }
                None => break true,
            }
        }
        if data[pos] != b'*' {
            return Err(fmterr(pos, "expected '*'"));
        }
        let Some((argc, p2)) = read_num(&data, pos + 1) else {
            if memchr::memchr(b'\n', &data[pos..]).is_none() {
                break true;
            }
            return Err(fmterr(pos, "invalid multibulk length"));
        };
        if argc < 1 {
            return Err(fmterr(pos, "invalid multibulk length"));
        }
        pos = p2;
        let mut argv = OwnedArgs::default();
        let mut short = false;
        for _ in 0..argc {
            if pos >= data.len() {
                short = true;
                break;
            }
            if data[pos] != b'$' {
                return Err(fmterr(pos, "expected '$'"));
            }
            let Some((len, p3)) = read_num(&data, pos + 1) else {
                if memchr::memchr(b'\n', &data[pos..]).is_none() {
                    short = true;
                    break;
                }
                return Err(fmterr(pos, "invalid bulk length"));
            };
            if len < 0 {
                return Err(fmterr(pos, "invalid bulk length"));
            }
            let end = p3 + len as usize;
            if end + 2 > data.len() {
                short = true;
                break;
            }
            if &data[end..end + 2] != b"\r\n" {
                return Err(fmterr(end, "bulk string not terminated by CRLF"));
            }
            argv.push(&data[p3..end]);
            pos = end + 2;
        }
        if short {
            break true;
        }
        let args = argv.args();
        let cname = args.get(0);
        if cname.eq_ignore_ascii_case(b"multi") {
            valid_before_multi = start;
            multi = Some(Vec::new());
        } else if cname.eq_ignore_ascii_case(b"exec") {
            if let Some(q) = multi.take() {
                for a in &q {
                    run_loaded(
                        server,
                        &mut client,
                        &mut out,
                        &stats,
                        &a.args(),
                        &name,
                        start,
                    )?;
                }
            }
        } else if let Some(q) = multi.as_mut() {
            q.push(argv.clone());
        } else {
            run_loaded(server, &mut client, &mut out, &stats, &args, &name, start)?;
        }
        valid_up_to = pos;
    };
    let mut truncated = truncated;
    if multi.is_some() {
        tracing::warn!("Revert incomplete MULTI/EXEC transaction in AOF file {name}");
        valid_up_to = valid_before_multi;
        truncated = true;
    }
    if truncated {
        if truncated_ok && last {
            tracing::warn!("!!! Warning: short read while loading the AOF file {name}!!!");
            tracing::warn!("!!! Truncating the AOF {name} at offset {valid_up_to} !!!");
            let f = OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|f| f.set_len(valid_up_to as u64).map(|_| f))
                .and_then(|f| f.sync_all());
            if let Err(e) = f {
                return Err(format!("Error truncating the AOF file {name}: {e}"));
            }
            tracing::warn!("AOF {name} loaded anyway because aof-load-truncated is enabled");
            return Ok(());
        }
        if !last {
            return Err(format!(
                "Fatal error: the truncated file {name} is not the last file (unexpected end of file at offset {})",
                data.len()
            ));
        }
        let msg = format!(
            "Unexpected end of file reading the append only file {name} (last valid command ends at offset {valid_up_to}, file size {}). You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server.",
            data.len()
        );
        tracing::error!("{msg}");
        return Err(msg);
    }
    Ok(())
}

fn read_num(data: &[u8], from: usize) -> Option<(i64, usize)> {
    let nl = memchr::memchr(b'\n', data.get(from..)?)? + from;
    if nl == from || data[nl - 1] != b'\r' {
        return None;
    }
    let n = crate::util::parse_i64(&data[from..nl - 1])?;
    Some((n, nl + 1))
}

/// A command replayed from the AOF replied with an error (`reply`, the
/// RESP error frame): logged as Redis's `afterErrorReply` does for its
/// AOF-loading client (`== CRITICAL == This server is sending an error to
/// its AOF-loading-client: '<error>' after processing the command
/// '<name>'`), counted in INFO `unexpected_error_replies`, and loading
/// stops when `propagation-error-behavior` is `panic` (Redis panics;
/// `ignore` and `panic-on-replicas` go on with the next command).
fn loaded_command_failed(server: &Server, name: &str, reply: &[u8]) -> Result<(), LoadError> {
    // Redis logs the text its handler passed: without "ERR " for plain
    // errors, with the leading "-CODE" for errors that carry their own code.
    let line = reply.split(|&b| b == b'\r').next().unwrap_or_default();
    let text = line.strip_prefix(b"-ERR ").unwrap_or(line);
    let text = String::from_utf8_lossy(&text[..text.len().min(4096)]);
    tracing::warn!(
        "== CRITICAL == This server is sending an error to its AOF-loading-client: '{text}' after processing the command '{name}'"
    );
    server
        .stats
        .unexpected_error_replies
        .fetch_add(1, Ordering::Relaxed);
    if server.config.read().get("propagation-error-behavior") == "panic" {
        let msg = format!(
            "This server panicked sending an error to its AOF-loading-client after processing the command '{name}'"
        );
        tracing::error!("{msg}");
        return Err(msg);
    }
    Ok(())
}

fn run_loaded(
    server: &Arc<Server>,
    client: &mut Client,
    out: &mut Out,
    stats: &crate::stats::ThreadStats,
    args: &Args<'_>,
    file: &str,
    offset: usize,
) -> Result<(), LoadError> {
    let t = cmd::table();
    let name = args.get(0);
    let Some(mut id) = t.lookup(name) else {
        let msg = format!(
            "Unknown command '{}' reading the append only file {file} at offset {offset}",
            String::from_utf8_lossy(name)
        );
        tracing::error!("{msg}");
        return Err(msg);
    };
    let mut c = t.all[id];
    if c.is_container() && args.len() >= 2 {
        if let Some(s) = t.lookup_sub(id, args.get(1)) {
            id = s;
            c = t.all[id];
        }
    }
    let argc = args.len() as i32;
    if (c.arity > 0 && argc != c.arity) || argc < -c.arity {
        let msg = format!(
            "Bad file format reading the append only file {file} at offset {offset}: wrong number of arguments for '{}'",
            c.name
        );
        tracing::error!("{msg}");
        return Err(msg);
    }
    // A clock of 0: no key expires while loading (Redis's keyIsExpired
    // returns 0 while loading); absolute expiry times are kept as logged.
    let mut ctx = Ctx {
        server,
        client,
        out,
        now: 0,
        stats,
        failed: false,
        dirty: None,
    };
    (c.handler)(&mut ctx, args);
    if ctx.failed {
        loaded_command_failed(server, c.name, &out.buf)?;
    }
    out.buf.clear();
    if crate::events::pending() {
        // Key events of loaded commands (no subscriber exists yet).
        crate::events::drain(server);
    }
    if let Some(b) = client.blocked.take() {
        b.waiter.claim();
        crate::db::blocking::unregister(&server.keyspace, &b.waiter);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trip() {
        let text = b"file appendonly.aof.1.base.aof seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\nfile appendonly.aof.2.incr.aof seq 2 type i\n";
        let m = Manifest::parse(text).unwrap();
        assert_eq!(m.incrs.len(), 2);
        assert_eq!(m.base_seq, 1);
        assert_eq!(m.incr_seq, 2);
        assert_eq!(m.format().as_bytes(), text);
    }

    #[test]
    fn manifest_errors() {
        assert!(Manifest::parse(b"").is_err());
        assert!(Manifest::parse(b"file a seq 1\n").is_err());
        assert!(Manifest::parse(b"file a seq 2 type i\nfile b seq 1 type i\n").is_err());
        assert!(Manifest::parse(b"file a seq 1 type b\nfile b seq 2 type b\n").is_err());
        assert!(Manifest::parse(b"file x/a seq 1 type b\n").is_err());
        assert!(Manifest::parse(b"file a seq 1 type z\n").is_err());
    }
}
