//! AOF rewrites (Redis 7.0 aof.c `rewriteAppendOnlyFileBackground`):
//! BGREWRITEAOF, the automatic rewrite on growth
//! (`auto-aof-rewrite-percentage` / `-min-size`) and the first base after
//! CONFIG SET appendonly yes. Write contexts pause for a moment while a new
//! incr file is opened and added to the manifest and a point-in-time copy
//! of the keyspace begins (persist/snapshot.rs); the copy is written as the
//! new base (RDB form with `aof-use-rdb-preamble yes`, else commands)
//! while writers go on into the new incr file, then the manifest switches
//! to the new base and the old files are deleted.

use super::manifest::{base_name, file_len, paths, write_manifest, FileInfo};
use super::{select_rec, FSYNC_ALWAYS, STATE_OFF, STATE_ON, STATE_WAIT_REWRITE};
use crate::db::keyspace::SHARDS;
use crate::persist::Host;
use crate::propagate::encode as enc;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Items per command in a rewritten base (Redis's AOF_REWRITE_ITEMS_PER_CMD).
const ITEMS_PER_CMD: usize = 64;

/// Waits until every I/O thread has finished the batch it was executing
/// (a task queued on each worker runs only between batches), so that
/// commands started before recording was turned on are over.
fn io_barrier(server: &impl Host) {
    for h in server.worker_handles() {
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
pub fn start_rewrite(server: &Arc<impl Host>, barrier: bool) -> bool {
    let a = &server.aof();
    if a.rewriting.swap(true, Ordering::AcqRel) {
        return false;
    }
    a.rewrite_scheduled.store(false, Ordering::Relaxed);
    a.rewrite_cancel.store(false, Ordering::SeqCst);
    server.stats().forks.fetch_add(1, Ordering::Relaxed);
    *a.rewrite_started.lock() = Some(Instant::now());
    let s = server.clone();
    let spawned = std::thread::Builder::new()
        .name("ferrokv-aofrw".into())
        .spawn(move || {
            if barrier {
                io_barrier(&s);
            }
            let t0 = Instant::now();
            let r = rewrite(&s);
            let a = &s.aof();
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
fn rewrite(server: &Arc<impl Host>) -> std::io::Result<()> {
    let a = &server.aof();
    let p = paths(server);
    std::fs::create_dir_all(&p.dir)?;
    let gate = server.propagation().pause_writes();
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
            ..Default::default()
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
    let form = base_form(server);
    let snap = crate::persist::snapshot::Snapshot::begin(
        server.keyspace(),
        server.clock().now_ms(),
        base_serialiser(server, form),
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
        write_base(server, &mut w, form, &snap, &a.rewrite_cancel)?;
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
        name: base_name(&p.fname, m.base_seq, form.is_some()),
        seq: m.base_seq,
        kind: b'b',
        ..Default::default()
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

/// Serialises one key in command form (SET / RPUSH / SADD / HMSET / ZADD
/// in batches of [`ITEMS_PER_CMD`], then PEXPIREAT), as Redis's
/// rewriteAppendOnlyFileRio; a key already expired at `now` is left out
/// (returns false).
fn put_key_commands(
    buf: &mut Vec<u8>,
    k: &[u8],
    e: &crate::db::Entry,
    expire_at: u64,
    now: u64,
) -> bool {
    use crate::db::Value;
    if expire_at != 0 && expire_at < now {
        return false;
    }
    let mut ib = itoa::Buffer::new();
    match &e.value {
        Value::Str(s) => {
            let mut t = itoa::Buffer::new();
            enc(buf, &[b"SET", k, s.as_bytes(&mut t)]);
        }
        Value::List(l) => {
            let mut items: Vec<Vec<u8>> = Vec::with_capacity(l.len());
            l.for_each(|x| items.push(x.to_vec()));
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
        Value::Hash(h) if h.ttls().is_some_and(|t| !t.is_empty()) => {
            if !put_ttl_hash_commands(buf, k, h, now) {
                return false;
            }
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
        Value::Stream(s) => put_stream_commands(buf, k, s),
    }
    if expire_at != 0 {
        enc(buf, &[b"PEXPIREAT", k, ib.format(expire_at).as_bytes()]);
    }
    true
}

/// A hash with field TTLs in command form: HMSET of its fields not
/// expired at `now` (batches of [`ITEMS_PER_CMD`]), then `HPEXPIREAT key
/// ms FIELDS n field...` per expiry time, the fields sharing it grouped
/// (batches of [`ITEMS_PER_CMD`]). Redis 7.4's rewriteHashObject writes an
/// HMSET and an HPEXPIREAT per field, expired ones included; this form
/// loads into the same hash. False, writing nothing, when every field has
/// expired.
fn put_ttl_hash_commands(buf: &mut Vec<u8>, k: &[u8], h: &crate::db::HashValue, now: u64) -> bool {
    let mut live = h.iter_live(now).peekable();
    if live.peek().is_none() {
        return false;
    }
    batched(buf, b"HMSET", k, live.map(|(f, v)| vec![f, v]));
    let Some(ttls) = h.ttls() else {
        return true;
    };
    // (time, fields) in time order: FieldTtls iterates earliest first.
    let mut groups: Vec<(u64, Vec<&[u8]>)> = Vec::new();
    for (f, at) in ttls.iter() {
        if at < now {
            continue;
        }
        match groups.last_mut() {
            Some((t, fs)) if *t == at && fs.len() < ITEMS_PER_CMD => fs.push(f),
            _ => groups.push((at, vec![f])),
        }
    }
    let mut ib = itoa::Buffer::new();
    let mut nb = itoa::Buffer::new();
    for (at, fs) in &groups {
        let mut argv: Vec<&[u8]> = vec![
            b"HPEXPIREAT",
            k,
            ib.format(*at).as_bytes(),
            b"FIELDS",
            nb.format(fs.len()).as_bytes(),
        ];
        argv.extend(fs.iter().copied());
        enc(buf, &argv);
    }
    true
}

/// A stream in command form, as Redis 7.0's rewriteStreamObject: one XADD
/// per entry (an empty stream: `XADD key MAXLEN 0 0-1 x y`), XSETID with
/// the last id, entries added and max deleted id, then per group XGROUP
/// CREATE ... ENTRIESREAD, an XCLAIM ... JUSTID FORCE per pending entry
/// (with its delivery time and count) and XGROUP CREATECONSUMER for
/// consumers without pending entries.
fn put_stream_commands(buf: &mut Vec<u8>, k: &[u8], s: &crate::db::StreamValue) {
    use crate::db::stream::StreamId;
    if s.length > 0 {
        s.range(StreamId::MIN, StreamId::MAX, false, |id, e| {
            let idt = id.to_vec();
            let pairs = e.pairs();
            let mut argv: Vec<&[u8]> = vec![b"XADD", k, &idt];
            for (f, v) in &pairs {
                argv.push(f);
                argv.push(v);
            }
            enc(buf, &argv);
            true
        });
    } else {
        enc(buf, &[b"XADD", k, b"MAXLEN", b"0", b"0-1", b"x", b"y"]);
    }
    let mut ib = itoa::Buffer::new();
    enc(
        buf,
        &[
            b"XSETID",
            k,
            &s.last_id.to_vec(),
            b"ENTRIESADDED",
            ib.format(s.entries_added).as_bytes(),
            b"MAXDELETEDID",
            &s.max_deleted_id.to_vec(),
        ],
    );
    for (name, g) in &s.groups {
        enc(
            buf,
            &[
                b"XGROUP",
                b"CREATE",
                k,
                name,
                &g.last_id.to_vec(),
                b"ENTRIESREAD",
                ib.format(g.entries_read).as_bytes(),
            ],
        );
        for (cname, c) in &g.consumers {
            if c.pel.is_empty() {
                enc(buf, &[b"XGROUP", b"CREATECONSUMER", k, name, cname]);
                continue;
            }
            for id in &c.pel {
                let n = &g.pel[id];
                let mut t = itoa::Buffer::new();
                let mut t2 = itoa::Buffer::new();
                enc(
                    buf,
                    &[
                        b"XCLAIM",
                        k,
                        name,
                        cname,
                        b"0",
                        &id.to_vec(),
                        b"TIME",
                        t.format(n.delivery_time).as_bytes(),
                        b"RETRYCOUNT",
                        t2.format(n.delivery_count).as_bytes(),
                        b"JUSTID",
                        b"FORCE",
                    ],
                );
            }
        }
    }
}

/// Writes a whole keyspace in command form: SELECT before each database's
/// first key, then each shard's keys from `src(db, shard, buf)` (which
/// appends keys in command form ([`put_key_commands`]) and returns the keys written).
fn write_commands_from(
    server: &impl Host,
    w: &mut impl Write,
    src: &mut dyn FnMut(usize, usize, &mut Vec<u8>) -> u64,
) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    if server.aof().timestamp_enabled.load(Ordering::Relaxed) {
        // rewriteAppendOnlyFileRio starts with a forced annotation.
        super::timestamp_annotation(&mut buf, super::unix_secs());
    }
    // Function libraries first, as FUNCTION LOAD (aof.c `rewriteFunctions`).
    for code in server.function_libraries() {
        buf.extend_from_slice(b"*3\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n$");
        buf.extend_from_slice(code.len().to_string().as_bytes());
        buf.extend_from_slice(b"\r\n");
        buf.extend_from_slice(&code);
        buf.extend_from_slice(b"\r\n");
    }
    let mut shard = Vec::new();
    for dbi in 0..server.keyspace().db_count() {
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

/// The background tick's part: starts a scheduled rewrite, or an
/// automatic one when the AOF grew by `auto-aof-rewrite-percentage` since
/// the last rewrite (or load) and is larger than `auto-aof-rewrite-min-size`
/// (Redis's serverCron).
pub(super) fn on_tick(server: &Arc<impl Host>) {
    let a = &server.aof();
    if a.rewriting.load(Ordering::Acquire) {
        return;
    }
    if a.rewrite_scheduled.load(Ordering::Relaxed) {
        // As Redis's serverCron: not while a BGSAVE runs.
        if server.rdb().bgsave_in_progress.load(Ordering::Relaxed) {
            return;
        }
        let barrier = a.state.load(Ordering::Acquire) == STATE_WAIT_REWRITE;
        start_rewrite(server, barrier);
        return;
    }
    if a.state.load(Ordering::Acquire) != STATE_ON {
        return;
    }
    let (pct, min) = {
        let c = server.config().read();
        (
            c.get_i64("auto-aof-rewrite-percentage"),
            c.get_u64("auto-aof-rewrite-min-size"),
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

/// True when new base files are written in RDB format
/// (`aof-use-rdb-preamble yes`, Redis's default).
pub(super) fn use_preamble(server: &impl Host) -> bool {
    server.config().read().get_bool("aof-use-rdb-preamble")
}

/// The form of a new base: Some(RDB version) for an RDB preamble
/// (`aof-use-rdb-preamble yes`; the version as
/// [`save_version`](crate::persist::rdb::save_version) chooses it, 12
/// while a hash has field TTLs), None for commands. Call once per base.
pub(super) fn base_form(server: &impl Host) -> Option<u16> {
    use_preamble(server).then(|| crate::persist::rdb::save_version(server))
}

/// The serialiser of a base's shards: RDB form of version `v` when `form`
/// is Some(v), else commands.
pub(super) fn base_serialiser(
    server: &impl Host,
    form: Option<u16>,
) -> Box<crate::persist::snapshot::Serialise> {
    match form {
        Some(v) => crate::persist::rdb::key_serialiser(server, v),
        None => Box::new(|k, e, at, now, b| put_key_commands(b, k, e, at, now)),
    }
}

/// Writes a base of the dataset as `snap` copied it: an RDB snapshot of
/// version `v` (with the `aof-base` aux field) when `form` is Some(v),
/// else commands.
pub(super) fn write_base(
    server: &impl Host,
    w: &mut impl Write,
    form: Option<u16>,
    snap: &crate::persist::snapshot::Snapshot<'_>,
    cancel: &AtomicBool,
) -> std::io::Result<()> {
    if let Some(version) = form {
        let ctl = crate::persist::rdb::SaveCtl {
            cancel: Some(cancel),
            ..Default::default()
        };
        crate::persist::rdb::write_snapshot_from(server, w, true, ctl, version, &mut |d, i, b| {
            Some(snap.shard(d, i, b))
        })
        .map(|_| ())
    } else {
        write_commands_from(server, w, &mut |d, i, b| snap.shard(d, i, b))
    }
}
