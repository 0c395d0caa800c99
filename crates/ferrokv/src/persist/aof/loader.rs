//! Loading the AOF at start-up (Redis 7.0 aof.c `loadAppendOnlyFiles`,
//! `loadSingleAppendOnlyFile`): the manifest, then the base (an RDB
//! preamble and/or commands), then the incr files in order, each command
//! run through its handler with a clock of 0; a legacy single
//! `appendonly.aof` is loaded and moved into the directory. A truncated
//! tail of the last file (or an unfinished MULTI) is dropped with a warning
//! and the file truncated when `aof-load-truncated yes`; any other damage
//! is an error naming the file and the byte offset.

use super::manifest::{base_name, file_len, paths, write_manifest, FileInfo, Manifest};
use super::policy;
use super::rewrite::{base_form, base_serialiser, write_base};
use super::STATE_ON;
use crate::persist::Host;
use crate::resp::{Args, OwnedArgs};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A failed load: the message to print before exiting with status 1.
pub type LoadError = String;

/// Runs the commands read from AOF files: the command layer implements it
/// (cmd/replay.rs), so loading here only reads and checks the files.
pub trait Replay {
    /// A new file begins: a fresh loading client (Redis's
    /// `createAOFClient` per file: database 0, no transaction).
    fn begin_file(&mut self);
    /// Runs `args`, read from file `file` at byte `offset`. Err stops
    /// loading with that message.
    fn run(&mut self, args: &Args<'_>, file: &str, offset: usize) -> Result<(), LoadError>;
}

/// Loads the AOF at start-up when `appendonly yes` (Redis's
/// `loadDataFromDisk` + `aofOpenIfNeededOnServerStart`): manifest, base,
/// incr files; a legacy single file is loaded and moved into the AOF
/// directory. Then opens the last incr file for appending (creating the
/// first base and incr files on a fresh start) and turns propagation on.
/// Returns Ok(true) when the AOF is on (the caller must not load an RDB
/// file then), Ok(false) when `appendonly no`.
///
/// `replay` runs the commands the files hold.
pub fn load_at_startup(
    server: &Arc<impl Host>,
    replay: &mut dyn Replay,
) -> Result<bool, LoadError> {
    let (enabled, truncated_ok, pol) = {
        let c = server.config().read();
        (
            c.get_bool("appendonly"),
            c.get_bool("aof-load-truncated"),
            policy(c.get("appendfsync")),
        )
    };
    let a = &server.aof();
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
        load_file(server, replay, &legacy, true, truncated_ok)?;
        std::fs::create_dir_all(&p.dir)
            .map_err(|e| format!("Can't create the AOF directory {}: {e}", p.dir.display()))?;
        let m = Manifest {
            base: Some(FileInfo {
                name: p.fname.clone(),
                seq: 1,
                kind: b'b',
                ..Default::default()
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
            load_file(server, replay, &path, i + 1 == files.len(), truncated_ok)?;
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
            ..Default::default()
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
        let form = base_form(server);
        let base = FileInfo {
            name: base_name(&p.fname, m.base_seq, form.is_some()),
            seq: m.base_seq,
            kind: b'b',
            ..Default::default()
        };
        let bpath = p.dir.join(&base.name);
        (|| {
            let mut w = BufWriter::new(File::create(&bpath)?);
            // Start-up: no writer runs yet.
            let snap = crate::persist::snapshot::Snapshot::begin(
                server.keyspace(),
                server.clock().now_ms(),
                base_serialiser(server, form),
            );
            write_base(server, &mut w, form, &snap, &AtomicBool::new(false))?;
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
    server
        .propagation()
        .set_user(crate::propagate::USER_AOF, true);
    Ok(true)
}

/// DEBUG LOADAOF (Redis 7.0 debug.c): writes out the buffered records
/// and fsyncs them (when the AOF is on), empties every database, then
/// loads the files the manifest on disk names, base first, then the incr
/// files in order, as at start-up. Ok(false) when the manifest is missing
/// or names no file (Redis's `AOF_NOT_EXIST`); Err names what failed. The
/// caller holds every other command off for the duration and runs the
/// commands through `replay` outside any write context, so nothing loaded
/// is appended to the AOF again.
pub fn reload(server: &Arc<impl Host>, replay: &mut dyn Replay) -> Result<bool, LoadError> {
    let a = server.aof();
    if a.state.load(Ordering::Acquire) != super::STATE_OFF {
        a.flush_all();
    }
    crate::persist::rdb::empty_all(server);
    let truncated_ok = server.config().read().get_bool("aof-load-truncated");
    let p = paths(server);
    let mpath = p.dir.join(format!("{}.manifest", p.fname));
    if !mpath.is_file() {
        return Ok(false);
    }
    let text = std::fs::read(&mpath).map_err(|e| {
        format!(
            "Fatal error: can't open the AOF manifest file {}: {e}",
            mpath.display()
        )
    })?;
    let m =
        Manifest::parse(&text).map_err(|e| format!("*** FATAL AOF MANIFEST FILE ERROR *** {e}"))?;
    let files: Vec<&FileInfo> = m.base.iter().chain(m.incrs.iter()).collect();
    if files.is_empty() {
        return Ok(false);
    }
    for (i, f) in files.iter().enumerate() {
        let path = p.dir.join(&f.name);
        if !path.is_file() {
            return Err(format!("The AOF file {} doesn't exist", f.name));
        }
        load_file(server, replay, &path, i + 1 == files.len(), truncated_ok)?;
    }
    Ok(true)
}

/// Reads the RDB part of a base file (or of a legacy AOF with an RDB
/// preamble) from `data`: keys whose TTL has passed are kept, the AOF
/// that follows decides (Redis's loadSingleAppendOnlyFile). Returns the
/// bytes consumed, so the command part (if any) is read after it.
fn read_rdb_base(server: &Arc<impl Host>, data: &[u8]) -> Result<usize, String> {
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
    server: &Arc<impl Host>,
    replay: &mut dyn Replay,
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
    // Valkey 9 writes its preambles as `VALKEY080`.
    if data.starts_with(b"REDIS") || data.starts_with(b"VALKEY") {
        tracing::info!("Reading RDB base file on AOF loading...");
        pos = read_rdb_base(server, &data).map_err(|e| {
            format!("Error reading the RDB base file {name}, AOF loading aborted: {e}")
        })?;
    }
    replay.begin_file();
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
                    replay.run(&a.args(), &name, start)?;
                }
            }
        } else if let Some(q) = multi.as_mut() {
            q.push(argv.clone());
        } else {
            replay.run(&args, &name, start)?;
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
