//! The AOF writer: the stream's units appended to an in-memory buffer
//! (`SELECT` when the database changes, `MULTI`/`EXEC` around a unit of
//! more than one record), written to the current incr file before the
//! replies of their batch leave and, with `appendfsync always`, fsync'd
//! (group commit: one write and one fsync cover every record appended so
//! far, from any thread). The background tick writes what is buffered
//! every 100 ms and fsyncs once a second with `everysec`; it also starts
//! scheduled and automatic rewrites (see the `rewrite` module).

use super::{select_rec, Aof, Io, FSYNC_ALWAYS, FSYNC_EVERYSEC, STATE_OFF};
use crate::persist::Host;
use crate::propagate::encode as enc;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Before a batch's replies are written: the AOF position the batch's
/// records must reach (written; with `appendfsync always` also fsync'd)
/// and whether it is reached already. Pass a position not yet reached to
/// [`before_reply`].
pub fn reply_target(server: &impl Host) -> Option<u64> {
    let need = server.propagation().wait_durable();
    (need != 0 && !server.aof().reached(need)).then_some(need)
}

/// Makes the records up to `need` durable as `appendfsync` asks. The
/// connection calls it after letting its thread's other ready connections
/// run their batches, so that one write (and one fsync) covers them all:
/// Redis writes the AOF once per event-loop iteration (beforeSleep's
/// flushAppendOnlyFile), before any reply of that iteration.
pub fn before_reply(server: &impl Host, need: u64) {
    let a = &server.aof();
    a.flush_to(need, a.fsync.load(Ordering::Relaxed) == FSYNC_ALWAYS);
}

/// Before the reply of a blocked client served by another connection:
/// flushes everything appended so far (its pop's record included).
pub fn before_served_reply(server: &impl Host) {
    let a = &server.aof();
    let end = a.buf.lock().end;
    a.flush_to(end, a.fsync.load(Ordering::Relaxed) == FSYNC_ALWAYS);
}

impl Aof {
    /// Appends units of records (database, RESP bytes) to the buffer,
    /// emitting SELECT when the database changes and wrapping each group of
    /// more than one record in MULTI/EXEC (`Records::framed`). Returns the logical offset after them, for
    /// [`Aof::flush_to`]. (The entry point replication will share.)
    pub fn append_units(&self, recs: crate::propagate::Records<'_>) -> u64 {
        let mut stamp = self.timestamp_enabled.load(Ordering::Relaxed);
        let mut b = self.buf.lock();
        let start = b.data.len();
        for (db, r, open, close, repl_only) in recs.framed() {
            if stamp && !repl_only {
                // Once per call, before its first record: a unit's
                // records stay together.
                stamp = false;
                let now = super::unix_secs();
                if now > b.ts {
                    b.ts = now;
                    super::timestamp_annotation(&mut b.data, now);
                }
            }
            if b.db != db as i64 && !repl_only {
                select_rec(&mut b.data, db);
                b.db = db as i64;
            }
            if open {
                enc(&mut b.data, &[b"MULTI"]);
            }
            if !repl_only {
                b.data.extend_from_slice(r);
            }
            if close {
                enc(&mut b.data, &[b"EXEC"]);
            }
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

    pub(super) fn write_locked(&self, io: &mut Io) {
        let end = {
            let mut b = self.buf.lock();
            std::mem::swap(&mut b.data, &mut io.spare);
            b.end
        };
        if io.spare.is_empty() {
            self.written.store(end, Ordering::Release);
            return;
        }
        let nap = self.flush_sleep_us.load(Ordering::Relaxed);
        if nap > 0 {
            // DEBUG AOF-FLUSH-SLEEP (flushAppendOnlyFile's usleep).
            std::thread::sleep(std::time::Duration::from_micros(nap));
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

    pub(super) fn fsync_locked(&self, io: &mut Io) {
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
        let mut io = self.io.lock();
        self.write_locked(&mut io);
        self.fsync_locked(&mut io);
    }
}

/// Starts the background thread (once): writes buffered records every
/// 100 ms, fsyncs once a second with `everysec`, runs scheduled and
/// automatic rewrites (`auto-aof-rewrite-percentage` / `-min-size`).
pub fn start_tick(server: &Arc<impl Host>) {
    if server.aof().tick_started.swap(true, Ordering::AcqRel) {
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

fn tick(server: &Arc<impl Host>) {
    let a = &server.aof();
    if a.state.load(Ordering::Acquire) == STATE_OFF {
        // A BGREWRITEAOF scheduled with the AOF off still runs.
        super::rewrite::on_tick(server);
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
    super::rewrite::on_tick(server);
}
