//! RDB snapshots: Redis 7.0's file format (RDB version 10 by default),
//! saving (SAVE, BGSAVE, save points, shutdown), loading (start-up, DEBUG
//! RELOAD) and the DUMP / RESTORE payload, after Redis's rdb.c and
//! cluster.c.
//!
//! # File layout
//! `REDIS0010` (or `REDIS0011` / `REDIS0012` under `rdb-version`), AUX
//! fields (redis-ver, redis-bits, ctime, used-mem, aof-base), then per
//! non-empty database SELECTDB and RESIZEDB followed by its keys (each
//! optionally preceded by EXPIRETIME_MS), EOF and the CRC64 (Jones
//! polynomial, `crc::CRC_64_REDIS`) of everything before it, little
//! endian; 0 when `rdbchecksum no`. Value encodings written: see
//! `write.rs`. The loader reads every type Redis 7.0 to 8.x and Valkey 7.2
//! to 9.0 write that ferrokv can represent, and the older ones real dumps
//! hold:
//!
//! | type | accepted encodings |
//! |---|---|
//! | string | raw, int-encoded, LZF |
//! | list | QUICKLIST_2 (packed and plain nodes), QUICKLIST (ziplist nodes), LIST_ZIPLIST, LIST |
//! | set | SET, SET_INTSET, SET_LISTPACK (Redis 7.2) |
//! | sorted set | ZSET_2, ZSET, ZSET_ZIPLIST, ZSET_LISTPACK |
//! | hash | HASH, HASH_ZIPMAP, HASH_ZIPLIST, HASH_LISTPACK |
//! | hash with field TTLs | HASH_METADATA (24), HASH_LISTPACK_EX (25), their Redis 7.4 release-candidate forms (22, 23), Valkey 9's HASH_2 (22 in `VALKEY080` files) |
//! | stream | STREAM_LISTPACKS (Redis 5), _2 (7.0), _3 (7.2) |
//!
//! # Versions
//! Files `REDIS0001` to `REDIS0012` load (11: Redis 7.2, Valkey 7.2 to
//! 8.x; 12: Redis 7.4 to 8.x), and Valkey 9.0's `VALKEY080`; any other
//! version is refused with Redis's "Can't handle RDB format version N".
//! A type no version defines stops the load with an error naming the key
//! and the type; module values likewise. Opcodes AUX, RESIZEDB, SELECTDB,
//! EXPIRETIME(_MS), IDLE and FREQ are understood; SLOT_INFO (Redis 7.4+
//! cluster sizing hints) is skipped; FUNCTION2 records load function
//! libraries (and are written before the keys); MODULE_AUX and Valkey 9's
//! SLOT_IMPORT (a slot migration in progress) are errors. Keys whose TTL
//! has passed are skipped (and counted); so are hash fields whose TTL has
//! passed, and a hash whose fields all had (counted as an expired key) —
//! except for an AOF preamble and a replica's full sync, which keep them.
//!
//! # Field TTLs and the version written
//! A hash with field TTLs is written as HASH_LISTPACK_EX (25) when Redis
//! would hold it as a `listpackex`, else HASH_METADATA (24), which only
//! RDB version 12 defines. So a save (file, AOF preamble, full sync,
//! DEBUG RELOAD) that starts while some hash has field TTLs
//! ([`Keyspace::field_ttl_keys`](crate::db::Keyspace::field_ttl_keys))
//! writes version max(`rdb-version`, 12), logging it once
//! ([`save_version`]); DUMP of such a value writes a version-12 payload.
//! In a file of version 10 or 11 (a hash that got its first field TTL
//! after the save began), the hash is written without its TTLs.
//!
//! # BGSAVE without fork
//! A background thread walks the databases shard by shard; each shard is
//! serialised into a buffer under its lock (clients of the other 255
//! shards, and of this one once the lock is released, keep being served),
//! then the buffer is written out. Extra memory is about one shard's
//! serialised size. The snapshot is consistent per shard, not for the whole
//! dataset at one instant (a difference from Redis's fork snapshot).
//!
//! # API for other persistence code (AOF preamble)
//! [`write_snapshot`] writes a complete RDB (header to checksum) of the
//! whole server into any `Write`; [`load`] reads one from any `Read`,
//! consuming exactly its bytes (pass a `BufReader`: the bytes after the
//! checksum stay in its buffer for the caller).

pub mod blobs;
pub use crate::lzf;
pub mod read;
pub mod write;

use crate::db::keyspace::Shard;
use crate::db::keyspace::SHARDS as SHARDS_PER_DB;
use crate::db::{Entry, Value};
use crate::persist::Host;
use crate::util::now_ms;
use parking_lot::Mutex;
use read::{LoadLimits, Reader};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use write::{put_aux, put_key, put_len, WriteOpts};

/// RDB format version written by default (Redis 7.0; the `rdb-version`
/// directive chooses 11 or 12 instead).
pub const RDB_VERSION: u16 = 10;
/// Newest version of Redis's format read (12: Redis 7.4 to 8.x; 11:
/// Redis 7.2, Valkey 7.2 to 8.x).
pub const RDB_VERSION_MAX_READ: u16 = 12;
/// The versions the `rdb-version` directive may choose.
pub const RDB_VERSIONS_WRITTEN: [u16; 3] = [10, 11, 12];
/// Valkey 9.0's format version, read from files with the `VALKEY080`
/// signature and from DUMP payloads whose trailer says 80 (Valkey's rdb.h:
/// versions 12 to 79 are Redis's, Valkey's own start at 80). Its layout is
/// version 11's plus [`RDB_TYPE_VALKEY_HASH_2`] and
/// [`RDB_OPCODE_SLOT_IMPORT`]; Valkey 9.2's version 81 is refused.
pub const RDB_VERSION_VALKEY_9: u16 = 80;

/// Value type: string.
pub const RDB_TYPE_STRING: u8 = 0;
/// Value type: list as a sequence of strings (old).
pub const RDB_TYPE_LIST: u8 = 1;
/// Value type: set as a sequence of strings.
pub const RDB_TYPE_SET: u8 = 2;
/// Value type: sorted set with text scores (old).
pub const RDB_TYPE_ZSET: u8 = 3;
/// Value type: hash as a sequence of field, value.
pub const RDB_TYPE_HASH: u8 = 4;
/// Value type: sorted set with binary scores.
pub const RDB_TYPE_ZSET_2: u8 = 5;
/// Value type: module value (pre-GA).
pub const RDB_TYPE_MODULE_PRE_GA: u8 = 6;
/// Value type: module value.
pub const RDB_TYPE_MODULE_2: u8 = 7;
/// Value type: hash as a zipmap (Redis < 2.6).
pub const RDB_TYPE_HASH_ZIPMAP: u8 = 9;
/// Value type: list as one ziplist (Redis < 3.2).
pub const RDB_TYPE_LIST_ZIPLIST: u8 = 10;
/// Value type: set as an intset.
pub const RDB_TYPE_SET_INTSET: u8 = 11;
/// Value type: sorted set as a ziplist (Redis < 7.0).
pub const RDB_TYPE_ZSET_ZIPLIST: u8 = 12;
/// Value type: hash as a ziplist (Redis < 7.0).
pub const RDB_TYPE_HASH_ZIPLIST: u8 = 13;
/// Value type: quicklist of ziplists (Redis 3.2 to 6.2).
pub const RDB_TYPE_LIST_QUICKLIST: u8 = 14;
/// Value type: stream.
pub const RDB_TYPE_STREAM_LISTPACKS: u8 = 15;
/// Value type: hash as a listpack.
pub const RDB_TYPE_HASH_LISTPACK: u8 = 16;
/// Value type: sorted set as a listpack.
pub const RDB_TYPE_ZSET_LISTPACK: u8 = 17;
/// Value type: quicklist of listpack or plain nodes (Redis 7.0).
pub const RDB_TYPE_LIST_QUICKLIST_2: u8 = 18;
/// Value type: stream (Redis 7.0).
pub const RDB_TYPE_STREAM_LISTPACKS_2: u8 = 19;
/// Value type: set as a listpack (Redis 7.2).
pub const RDB_TYPE_SET_LISTPACK: u8 = 20;
/// Value type: stream (Redis 7.2): consumers carry their active time.
pub const RDB_TYPE_STREAM_LISTPACKS_3: u8 = 21;
/// Value type: hash with field expiration, metadata form, of the Redis 7.4
/// release candidates (absolute TTLs, no min expiry; read, never written).
pub const RDB_TYPE_HASH_METADATA_PRE_GA: u8 = 22;
/// Value type: hash with field expiration as a listpack, of the Redis 7.4
/// release candidates (no min expiry; read, never written).
pub const RDB_TYPE_HASH_LISTPACK_EX_PRE_GA: u8 = 23;
/// Value type: hash with field expiration, metadata form (Redis 7.4+, RDB
/// version 12): min expiry, then TTL (relative), field, value per field.
pub const RDB_TYPE_HASH_METADATA: u8 = 24;
/// Value type: hash with field expiration as a listpack (Redis 7.4+, RDB
/// version 12): min expiry, then a listpack of field, value, expiry.
pub const RDB_TYPE_HASH_LISTPACK_EX: u8 = 25;
/// Value type 22 in Valkey's own format (version 80+): a hash with field
/// expiration (Valkey 9.0's `RDB_TYPE_HASH_2`: field, value, expiry per
/// field; read, never written).
pub const RDB_TYPE_VALKEY_HASH_2: u8 = 22;

/// Opcode of Valkey 9.0 files (version 80+): an atomic slot migration in
/// progress (`RDB_OPCODE_SLOT_IMPORT`), which ferrokv cannot resume; a
/// load stops on it.
pub const RDB_OPCODE_SLOT_IMPORT: u8 = 243;
/// Opcode (Redis 7.4+, cluster mode): slot id, its key count and its
/// volatile key count, three lengths; a sizing hint, skipped.
pub const RDB_OPCODE_SLOT_INFO: u8 = 244;

/// Opcode: a function library (Redis 7.0).
pub const RDB_OPCODE_FUNCTION2: u8 = 245;
/// Opcode: function (pre-GA).
pub const RDB_OPCODE_FUNCTION_PRE_GA: u8 = 246;
/// Opcode: module auxiliary data.
pub const RDB_OPCODE_MODULE_AUX: u8 = 247;
/// Opcode: LRU idle time of the next key, seconds.
pub const RDB_OPCODE_IDLE: u8 = 248;
/// Opcode: LFU frequency of the next key.
pub const RDB_OPCODE_FREQ: u8 = 249;
/// Opcode: auxiliary field.
pub const RDB_OPCODE_AUX: u8 = 250;
/// Opcode: database size hints.
pub const RDB_OPCODE_RESIZEDB: u8 = 251;
/// Opcode: expiry of the next key, ms.
pub const RDB_OPCODE_EXPIRETIME_MS: u8 = 252;
/// Opcode: expiry of the next key, seconds (old).
pub const RDB_OPCODE_EXPIRETIME: u8 = 253;
/// Opcode: select database.
pub const RDB_OPCODE_SELECTDB: u8 = 254;
/// Opcode: end of file.
pub const RDB_OPCODE_EOF: u8 = 255;

/// Length marker: 32-bit big-endian length follows.
pub const RDB_32BITLEN: u8 = 0x80;
/// Length marker: 64-bit big-endian length follows.
pub const RDB_64BITLEN: u8 = 0x81;
/// String encoding: 8-bit integer.
pub const RDB_ENC_INT8: u8 = 0;
/// String encoding: 16-bit integer.
pub const RDB_ENC_INT16: u8 = 1;
/// String encoding: 32-bit integer.
pub const RDB_ENC_INT32: u8 = 2;
/// String encoding: LZF-compressed.
pub const RDB_ENC_LZF: u8 = 3;
/// Quicklist node holding one plain element.
pub const QUICKLIST_NODE_CONTAINER_PLAIN: u64 = 1;
/// Quicklist node holding a listpack (ziplist in type 14).
pub const QUICKLIST_NODE_CONTAINER_PACKED: u64 = 2;

/// CRC-64/REDIS (crc64.c: Jones polynomial, reflected, init 0).
pub static CRC64: crc::Crc<u64, crc::Table<16>> =
    crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_REDIS);

/// Whose numbering a file or payload follows for the types and opcodes
/// the two lines of servers assigned differently after version 11 (Valkey's
/// rdb.h: `RDB_FOREIGN_TYPE_MIN` 22 to `RDB_FOREIGN_TYPE_MAX` 243).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// `REDIS0001` to `REDIS0012` files, payloads of versions 1 to 12.
    #[default]
    Redis,
    /// `VALKEY080` files, payloads of version 80 (Valkey 9.0).
    Valkey,
}

impl Dialect {
    /// The dialect of a DUMP payload of RDB version `ver` (it carries no
    /// signature: Valkey's versions start at 80).
    pub fn of_payload(ver: u16) -> Dialect {
        if ver >= RDB_VERSION_VALKEY_9 {
            Dialect::Valkey
        } else {
            Dialect::Redis
        }
    }
}

/// Reads the 9-byte signature of an RDB file (rdbLoadRioWithLoadingCtx):
/// `REDIS` and four digits, or Valkey 9's `VALKEY` and three digits.
/// Returns the dialect and version, None when it is neither.
pub fn parse_signature(magic: &[u8; 9]) -> Option<(Dialect, u16)> {
    let (d, digits) = if &magic[..5] == b"REDIS" {
        (Dialect::Redis, &magic[5..])
    } else if &magic[..6] == b"VALKEY" {
        (Dialect::Valkey, &magic[6..])
    } else {
        return None;
    };
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let ver = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some((d, ver))
}

/// True when ferrokv reads files (or payloads) of version `ver` in
/// dialect `d`: Redis's 1 to 12, Valkey's 80.
pub fn version_readable(d: Dialect, ver: u16) -> bool {
    match d {
        Dialect::Redis => (1..=RDB_VERSION_MAX_READ).contains(&ver),
        Dialect::Valkey => ver == RDB_VERSION_VALKEY_9,
    }
}

/// A load error: what is wrong and the byte offset where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdbError {
    /// Description.
    pub msg: String,
    /// Offset in the input where the problem was detected.
    pub offset: u64,
}

impl std::fmt::Display for RdbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (at byte offset {})", self.msg, self.offset)
    }
}

impl std::error::Error for RdbError {}

/// Persistence state shown by INFO persistence and used by SAVE / BGSAVE /
/// the save-point cron.
#[derive(Debug)]
pub struct RdbState {
    /// rdb_bgsave_in_progress.
    pub bgsave_in_progress: AtomicBool,
    /// Unix ms when the running (or last) BGSAVE started.
    pub bgsave_start_ms: AtomicU64,
    /// rdb_last_bgsave_status is "err".
    pub last_bgsave_failed: AtomicBool,
    /// rdb_last_bgsave_time_sec (-1 = none yet).
    pub last_bgsave_time_sec: AtomicI64,
    /// Unix seconds of the last BGSAVE attempt (retry delay after errors).
    pub last_bgsave_try: AtomicU64,
    /// rdb_saves: successful saves since start.
    pub saves: AtomicU64,
    /// BGSAVE SCHEDULE pending.
    pub scheduled: AtomicBool,
    /// Set to stop a running BGSAVE (FLUSHALL, SHUTDOWN).
    pub cancel: AtomicBool,
    /// rdb_last_load_keys_loaded.
    pub keys_loaded: AtomicU64,
    /// rdb_last_load_keys_expired.
    pub keys_expired: AtomicU64,
    /// current_save_keys_processed of the running save.
    pub save_keys_processed: AtomicU64,
    /// current_save_keys_total of the running save.
    pub save_keys_total: AtomicU64,
    /// The dirty counter (absolute) when the running save started.
    dirty_at_start: AtomicU64,
    /// rdb_last_save_size... bytes of the last file written.
    pub last_save_bytes: AtomicU64,
    /// SHUTDOWN already saved (or chose not to): the exit path must not.
    pub shutdown_handled: AtomicBool,
    /// Serialises file writers (SAVE from several threads, BGSAVE).
    save_lock: Mutex<()>,
    /// DEBUG SET-SKIP-CHECKSUM-VALIDATION (Redis's
    /// `server.skip_checksum_validation`): loads of RDB files and DUMP
    /// payloads (RESTORE, FUNCTION RESTORE) do not compare checksums.
    pub skip_checksum_validation: AtomicBool,
}

impl Default for RdbState {
    fn default() -> Self {
        RdbState {
            bgsave_in_progress: AtomicBool::new(false),
            bgsave_start_ms: AtomicU64::new(0),
            last_bgsave_failed: AtomicBool::new(false),
            last_bgsave_time_sec: AtomicI64::new(-1),
            last_bgsave_try: AtomicU64::new(0),
            saves: AtomicU64::new(0),
            scheduled: AtomicBool::new(false),
            cancel: AtomicBool::new(false),
            keys_loaded: AtomicU64::new(0),
            keys_expired: AtomicU64::new(0),
            save_keys_processed: AtomicU64::new(0),
            save_keys_total: AtomicU64::new(0),
            skip_checksum_validation: AtomicBool::new(false),
            dirty_at_start: AtomicU64::new(0),
            last_save_bytes: AtomicU64::new(0),
            shutdown_handled: AtomicBool::new(false),
            save_lock: Mutex::new(()),
        }
    }
}

/// The MISCONF error of write commands after a failed BGSAVE.
pub const MISCONF: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";

/// True when write commands must be refused with [`MISCONF`]: the last
/// BGSAVE failed, save points are configured and
/// stop-writes-on-bgsave-error is yes (Redis's
/// writeCommandsDeniedByDiskError). One atomic load when saves succeed.
#[inline]
pub fn writes_denied(server: &impl Host) -> bool {
    server.rdb().last_bgsave_failed.load(Ordering::Relaxed) && {
        let c = server.config().read();
        c.get_bool("stop-writes-on-bgsave-error") && !c.get("save").trim().is_empty()
    }
}

/// Changes since the last successful save (rdb_changes_since_last_save).
pub fn dirty(server: &impl Host) -> u64 {
    server
        .stats()
        .totals()
        .dirty
        .saturating_sub(server.stats().dirty_base.load(Ordering::Relaxed))
}

/// Controls of one save run.
#[derive(Debug, Default, Clone, Copy)]
pub struct SaveCtl<'a> {
    /// Checked between shards: stop with an error when set.
    pub cancel: Option<&'a AtomicBool>,
    /// rdb-key-save-delay: microseconds to sleep per key written (after the
    /// shard's lock is released).
    pub key_delay_us: u64,
    /// Progress counter (INFO current_save_keys_processed).
    pub progress: Option<&'a AtomicU64>,
    /// Leave the keys out (a replica's REPLCONF rdb-filter-only).
    pub exclude_data: bool,
    /// Leave the function libraries out (rdb-filter-only without
    /// `functions`).
    pub exclude_functions: bool,
}

/// A `Write` adapter that keeps the CRC64 and the byte count.
struct CrcWriter<'w, W: Write> {
    w: &'w mut W,
    crc: crc::Digest<'static, u64, crc::Table<16>>,
    n: u64,
}

impl<W: Write> CrcWriter<'_, W> {
    fn put(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.crc.update(b);
        self.n += b.len() as u64;
        self.w.write_all(b)
    }
}

/// The RDB version of a save starting now (Redis 7.4's rdbSaveRio writes
/// 12 always): the `rdb-version` directive's, raised to 12 while some hash
/// has field TTLs (which only version 12 can carry), with a notice in the
/// log. Call once per save.
pub fn save_version(server: &impl Host) -> u16 {
    let v = rdb_version(&server.config().read());
    let n = server.keyspace().field_ttl_keys();
    if n > 0 && v < RDB_VERSION_HFE {
        tracing::info!(
            "Saving RDB version {RDB_VERSION_HFE} instead of {v} (rdb-version): {n} hash(es) hold field TTLs, which only version {RDB_VERSION_HFE} can carry"
        );
        return RDB_VERSION_HFE;
    }
    v
}

/// The first RDB version with hashes with field TTLs (types 24 and 25).
pub const RDB_VERSION_HFE: u16 = 12;

fn write_opts(server: &impl Host) -> (WriteOpts, bool) {
    let c = server.config().read();
    (
        WriteOpts {
            compress: c.get_bool("rdbcompression"),
            list_fill: c.get_i64("list-max-listpack-size"),
            version: rdb_version(&c),
        },
        c.get_bool("rdbchecksum"),
    )
}

/// The RDB version the `rdb-version` directive chooses (10, 11 or 12;
/// anything else, which the directive refuses, reads as 10).
pub fn rdb_version(c: &crate::config::Config) -> u16 {
    let v = c.get_i64("rdb-version") as u16;
    if RDB_VERSIONS_WRITTEN.contains(&v) {
        v
    } else {
        RDB_VERSION
    }
}

/// Serialises the keys of `shard` (locked) in RDB form into `b`, leaving
/// out keys whose TTL has passed; returns how many were written.
fn put_shard(b: &mut Vec<u8>, shard: &Shard, opts: &WriteOpts) -> u64 {
    let now = now_ms();
    let mut n = 0;
    for (k, e, expire_at) in shard.iter_with_expire() {
        if expire_at != 0 && expire_at < now {
            continue;
        }
        put_key(b, k, e, expire_at, opts);
        n += 1;
    }
    n
}

/// A serialiser of keys in RDB form with `server`'s options and RDB
/// version `version` (the one [`save_version`] chose for the file the keys
/// go to), for a point-in-time copy (persist/snapshot.rs): writes nothing
/// and returns false for a key whose TTL has passed at `now`.
pub fn key_serialiser(
    server: &impl Host,
    version: u16,
) -> Box<crate::persist::snapshot::Serialise> {
    let (mut opts, _) = write_opts(server);
    opts.version = version;
    Box::new(
        move |k: &[u8], e: &Entry, expire_at: u64, now: u64, b: &mut Vec<u8>| {
            if expire_at != 0 && expire_at < now {
                return false;
            }
            put_key(b, k, e, expire_at, &opts);
            true
        },
    )
}

/// Writes a complete RDB of every database of `server` into `w` (header,
/// AUX fields, keys, EOF, checksum) and returns (keys written, bytes
/// written). Each shard is serialised under its lock, then written with
/// the lock released. Keys whose TTL has passed are left out. `aof_base`
/// sets the aof-base AUX field (1 for an AOF preamble). The version is
/// [`save_version`]'s.
pub fn write_snapshot<W: Write>(
    server: &impl Host,
    w: &mut W,
    aof_base: bool,
    ctl: SaveCtl<'_>,
) -> std::io::Result<(u64, u64)> {
    let (mut opts, _) = write_opts(server);
    opts.version = save_version(server);
    let ks = &server.keyspace();
    write_snapshot_from(server, w, aof_base, ctl, opts.version, &mut |dbi, si, b| {
        let db = ks.db(dbi);
        if si == 0 && db.is_empty() {
            return None;
        }
        Some(put_shard(b, &db.shard_at(si).lock(), &opts))
    })
}

/// `src(db, shard, buf)` of [`write_snapshot_from`].
pub type ShardSource<'a> = dyn FnMut(usize, usize, &mut Vec<u8>) -> Option<u64> + 'a;

/// [`write_snapshot`] with the shards' keys from `src`: `src(db, shard,
/// buf)` appends the shard's serialised keys to `buf` and returns their
/// number, or None (asked for shard 0) to skip the database. Databases
/// whose shards hold nothing are left out. `version` is the RDB version in
/// the header (the one the keys were serialised for: [`save_version`]).
pub fn write_snapshot_from<W: Write>(
    server: &impl Host,
    w: &mut W,
    aof_base: bool,
    ctl: SaveCtl<'_>,
    version: u16,
    src: &mut ShardSource<'_>,
) -> std::io::Result<(u64, u64)> {
    let (mut opts, checksum) = write_opts(server);
    opts.version = version;
    let mut out = CrcWriter {
        w,
        crc: CRC64.digest(),
        n: 0,
    };
    let mut b = Vec::with_capacity(1 << 16);
    b.extend_from_slice(format!("REDIS{:04}", opts.version).as_bytes());
    put_aux(&mut b, "redis-ver", crate::REDIS_VERSION.as_bytes());
    put_aux(&mut b, "redis-bits", b"64");
    put_aux(&mut b, "ctime", (now_ms() / 1000).to_string().as_bytes());
    put_aux(
        &mut b,
        "used-mem",
        crate::memory::rss_bytes().to_string().as_bytes(),
    );
    if let Some((db, id, offset)) = server.repl().save_info() {
        // Redis's rdbSaveInfoAuxFields: a restarted server continues its
        // replication history from here.
        put_aux(&mut b, "repl-stream-db", db.to_string().as_bytes());
        put_aux(&mut b, "repl-id", id.as_bytes());
        put_aux(&mut b, "repl-offset", offset.to_string().as_bytes());
    }
    put_aux(&mut b, "aof-base", if aof_base { b"1" } else { b"0" });
    // Function libraries come before the keys (rdb.c `rdbSaveFunctions`).
    let libraries = if ctl.exclude_functions {
        Vec::new()
    } else {
        server.function_libraries()
    };
    for code in libraries {
        b.push(RDB_OPCODE_FUNCTION2);
        write::put_string(&mut b, &code, true);
    }
    out.put(&b)?;
    let ks = &server.keyspace();
    let mut keys = 0u64;
    let dbs = if ctl.exclude_data { 0 } else { ks.db_count() };
    for dbi in 0..dbs {
        let db = ks.db(dbi);
        let mut selected = false;
        for si in 0..SHARDS_PER_DB {
            if ctl.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(std::io::Error::other("save cancelled"));
            }
            b.clear();
            let Some(n) = src(dbi, si, &mut b) else {
                break;
            };
            if b.is_empty() {
                continue;
            }
            if !selected {
                // Sizes as a hint for the loader (Redis writes its dicts').
                let mut h = Vec::with_capacity(16);
                h.push(RDB_OPCODE_SELECTDB);
                put_len(&mut h, dbi as u64);
                h.push(RDB_OPCODE_RESIZEDB);
                put_len(&mut h, db.len() as u64);
                put_len(&mut h, db.volatile_len() as u64);
                out.put(&h)?;
                selected = true;
            }
            out.put(&b)?;
            keys += n;
            if let Some(p) = ctl.progress {
                p.fetch_add(n, Ordering::Relaxed);
            }
            if ctl.key_delay_us > 0 && n > 0 {
                std::thread::sleep(std::time::Duration::from_micros(ctl.key_delay_us * n));
            }
        }
        // Release the buffer of an unusually large shard.
        if b.capacity() > 1 << 24 {
            b = Vec::with_capacity(1 << 16);
        }
    }
    out.put(&[RDB_OPCODE_EOF])?;
    let crc = if checksum {
        out.crc.clone().finalize()
    } else {
        0
    };
    out.w.write_all(&crc.to_le_bytes())?;
    Ok((keys, out.n + 8))
}

/// Options of one load.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOpts {
    /// A key that exists already is replaced (DEBUG RELOAD MERGE); without
    /// it a duplicate is an error.
    pub allow_dup: bool,
    /// Keep keys (and hash fields) whose TTL has passed (AOF preamble: the
    /// AOF that follows decides; a replica's full sync: the master does).
    pub keep_expired: bool,
    /// Skip the checksum comparison.
    pub skip_checksum: bool,
}

/// What a load did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// The replication id, offset and stream database the file was saved
    /// with (aux fields repl-id, repl-offset, repl-stream-db), if any.
    pub repl: Option<([u8; 40], u64, i64)>,
    /// Keys added.
    pub loaded: u64,
    /// Keys skipped because their TTL had passed (or, for a hash with field
    /// TTLs, those of all its fields).
    pub expired: u64,
    /// Keys skipped because their collection was empty (each logged as
    /// Redis logs it: "rdbLoadObject skipping empty key: KEY").
    pub empty: u64,
    /// Bytes consumed.
    pub bytes: u64,
}

/// A key read from an RDB file, waiting to be inserted: (database, key
/// hash, key, entry, expiry time in ms or 0, file offset of its record).
type Pending = (usize, u64, Vec<u8>, Entry, u64, u64);

/// How many keys ahead of the insertion a load reads (and prefetches).
const LOAD_PREFETCH: usize = 16;

/// Most keys one load reserves table space for from RESIZEDB hints (2^20:
/// at most 16 MiB of buckets, whatever a corrupt file claims).
const RESIZE_HINT_MAX: u64 = 1 << 20;

/// Smallest RESIZEDB key count acted upon.
const RESIZE_HINT_MIN: u64 = 4096;

/// Reads a complete RDB from `r` into `server`'s keyspace (keys are added
/// to what is there). Consumes exactly the RDB's bytes through the
/// checksum. Errors name what is wrong and where; on error the keys read
/// before it stay loaded (the caller refuses to start, or empties).
pub fn load<R: Read>(server: &impl Host, r: R, opts: LoadOpts) -> Result<LoadStats, RdbError> {
    load_feeding(server, r, opts, &mut |_, _| {})
}

/// [`load`], calling `on_expired(db, key)` for each key skipped because
/// its TTL had passed, in file order (Redis's rdbLoad with
/// RDBFLAGS_FEED_REPL: a master restarting from its RDB puts their DELs
/// in its replication backlog).
pub fn load_feeding<R: Read>(
    server: &impl Host,
    r: R,
    opts: LoadOpts,
    on_expired: &mut dyn FnMut(usize, &[u8]),
) -> Result<LoadStats, RdbError> {
    let mut rd = Reader::new(r);
    let magic: [u8; 9] = rd.array().map_err(|e| RdbError {
        msg: format!("not an RDB file: {}", e.msg),
        ..e
    })?;
    let (dialect, ver) = parse_signature(&magic)
        .ok_or_else(|| rd.err("Wrong signature trying to load DB from file"))?;
    if !version_readable(dialect, ver) {
        return Err(rd.err(format!("Can't handle RDB format version {ver}")));
    }
    rd.dialect = dialect;
    let lim = LoadLimits::of(server);
    let ks = &server.keyspace();
    let now = now_ms();
    if !opts.keep_expired {
        // rdbLoadObject on a master: hash fields already expired are not
        // loaded (an AOF preamble or a replica keeps them: the commands
        // after it, or the master, delete them).
        rd.drop_fields_expired_before = Some(now);
    }
    let mut st = LoadStats::default();
    let mut db = 0usize;
    let mut expire: u64 = 0;
    let mut idle: Option<u64> = None;
    let mut freq: Option<u8> = None;
    let mut reserved = 0u64;
    // Keys read but not inserted yet: while the next ones are parsed, the
    // buckets they go to are prefetched (Db::prefetch), so each insertion
    // does not stall on a random bucket of a table larger than the cache.
    let mut pending: VecDeque<Pending> = VecDeque::with_capacity(LOAD_PREFETCH + 1);
    let insert = |p: Pending, st: &mut LoadStats| -> Result<(), RdbError> {
        let (db, h, key, e, exp, offset) = p;
        let mut g = ks.db(db).lock(h);
        // One lookup: a duplicate is found by the insertion replacing it
        // (the load then fails).
        if g.insert_with_expire(h, &key, e, exp).is_some() && !opts.allow_dup {
            return Err(RdbError {
                msg: format!(
                    "Duplicate key '{}' found in RDB file (database {db})",
                    String::from_utf8_lossy(&key)
                ),
                offset,
            });
        }
        st.loaded += 1;
        Ok(())
    };
    let read = (|| -> Result<(), RdbError> {
        loop {
            let at = rd.pos;
            let op = rd.u8()?;
            match op {
                RDB_OPCODE_EXPIRETIME_MS => {
                    expire = u64::from_le_bytes(rd.array()?);
                    continue;
                }
                RDB_OPCODE_EXPIRETIME => {
                    expire = (i32::from_le_bytes(rd.array()?) as i64 as u64).wrapping_mul(1000);
                    continue;
                }
                RDB_OPCODE_IDLE => {
                    idle = Some(rd.length()?);
                    continue;
                }
                RDB_OPCODE_FREQ => {
                    freq = Some(rd.u8()?);
                    continue;
                }
                RDB_OPCODE_EOF => break,
                RDB_OPCODE_SELECTDB => {
                    let n = rd.length()?;
                    if n >= ks.db_count() as u64 {
                        return Err(rd.err(format!(
                        "FATAL: Data file was created with a Redis server configured to handle more than {} databases (the file selects database {n})",
                        ks.db_count()
                    )));
                    }
                    db = n as usize;
                    continue;
                }
                RDB_OPCODE_RESIZEDB => {
                    // The database's key count: size its tables now rather than
                    // rehashing them as they fill. A corrupt file can claim
                    // any count, so at most RESIZE_HINT_MAX keys per load are
                    // reserved this way (beyond, tables grow as usual).
                    let keys = rd.length()?;
                    rd.length()?;
                    let keys = keys.min(RESIZE_HINT_MAX.saturating_sub(reserved));
                    // Small databases grow fast enough; a hint reserves a
                    // table in every shard, so tiny ones are not worth it.
                    if keys >= RESIZE_HINT_MIN {
                        reserved += keys;
                        ks.db(db).reserve(keys as usize);
                    }
                    continue;
                }
                RDB_OPCODE_AUX => {
                    let k = rd.string()?;
                    let v = rd.string()?;
                    let num = || {
                        std::str::from_utf8(&v)
                            .ok()
                            .and_then(|s| s.parse::<i64>().ok())
                    };
                    match k.as_slice() {
                        b"repl-id" if v.len() == 40 => {
                            let mut id = [0u8; 40];
                            id.copy_from_slice(&v);
                            let r = st.repl.get_or_insert(([b'0'; 40], 0, -1));
                            r.0 = id;
                        }
                        b"repl-offset" => {
                            if let Some(n) = num().filter(|n| *n >= 0) {
                                st.repl.get_or_insert(([b'0'; 40], 0, -1)).1 = n as u64;
                            }
                        }
                        b"repl-stream-db" => {
                            if let Some(n) = num() {
                                st.repl.get_or_insert(([b'0'; 40], 0, -1)).2 = n;
                            }
                        }
                        _ => {}
                    }
                    tracing::debug!(
                        "RDB aux field {}: {}",
                        String::from_utf8_lossy(&k),
                        String::from_utf8_lossy(&v)
                    );
                    continue;
                }
                RDB_OPCODE_FUNCTION2 => {
                    // A function library (rdb.c `rdbFunctionLoad`).
                    let code = rd.string()?;
                    if let Err(e) = server.load_function_library(&code, opts.allow_dup) {
                        return Err(rd.err(format!("Failed loading library: {e}")));
                    }
                    continue;
                }
                RDB_OPCODE_FUNCTION_PRE_GA => {
                    return Err(rd.err("pre-release function data (Redis 7.0 RC) is not supported"));
                }
                RDB_OPCODE_MODULE_AUX => {
                    let id = rd.length()?;
                    return Err(rd.err(format!(
                    "The RDB file contains AUX module data I can't load: no matching module (module id {id:#x})"
                )));
                }
                RDB_OPCODE_SLOT_INFO => {
                    // Slot id, its keys, its volatile keys: sizing hints of
                    // a cluster node (Redis 7.4+), not needed here.
                    rd.length()?;
                    rd.length()?;
                    rd.length()?;
                    continue;
                }
                RDB_OPCODE_SLOT_IMPORT if rd.dialect == Dialect::Valkey => {
                    return Err(rd.err(
                        "RDB: the file records an atomic slot migration in progress (Valkey 9.0's RDB_OPCODE_SLOT_IMPORT, opcode 243), which ferrokv cannot resume",
                    ));
                }
                242 | 243 => {
                    // Opcodes of later formats (Redis 8's KEY_META, Valkey's
                    // UPDATE): no key follows that could be named.
                    return Err(rd.err(format!(
                        "RDB: opcode {op} is not defined by RDB version {ver}, which ferrokv cannot load"
                    )));
                }
                _ => {}
            }
            let key = rd.string()?;
            let value = rd.value(op, &key, &lim)?;
            let exp = std::mem::take(&mut expire);
            let idl = idle.take();
            let frq = freq.take();
            let Some(value) = value else {
                if rd.take_expired_hash() {
                    // Every field had expired (RDB_LOAD_ERR_EXPIRED_HASH).
                    st.expired += 1;
                } else {
                    st.empty += 1;
                    tracing::warn!(
                        "rdbLoadObject skipping empty key: {}",
                        String::from_utf8_lossy(&key)
                    );
                }
                continue;
            };
            if exp != 0 && exp < now && !opts.keep_expired {
                st.expired += 1;
                on_expired(db, &key);
                continue;
            }
            let mut e = Entry::new(value, ks.lru.initial(now));
            // rdb.c objectSetLRUOrLFU: FREQ counts under LFU, IDLE otherwise.
            if ks.lru.lfu() {
                if let Some(f) = frq {
                    e.lru = crate::db::lru::with_freq(now, f);
                }
            } else if let Some(s) = idl {
                e.lru = crate::db::lru::clock_idle(now, s);
            }
            let h = ks.db(db).prefetch(&key);
            pending.push_back((db, h, key, e, exp, at));
            if pending.len() > LOAD_PREFETCH {
                if let Some(p) = pending.pop_front() {
                    insert(p, &mut st)?;
                }
            }
        }
        Ok(())
    })();
    // Keys read before an error stay loaded, as without the batch. The
    // error reported is the first problem in file order: a duplicate among
    // these keys precedes a read error found further on.
    let mut err = read.err();
    for p in pending.drain(..) {
        if let Err(e) = insert(p, &mut st) {
            if err.as_ref().is_none_or(|x| e.offset < x.offset) {
                err = Some(e);
            }
        }
    }
    if let Some(e) = err {
        return Err(e);
    }
    if ver >= 5 {
        let computed = rd.crc();
        let stored = rd.trailer()?;
        let skip = opts.skip_checksum
            || server
                .rdb()
                .skip_checksum_validation
                .load(Ordering::Relaxed);
        if skip {
            // Redis 7.0 rdbLoadRio: no check at all (nor its log line).
        } else if stored == 0 {
            tracing::info!("RDB file was saved with checksum disabled: no check performed.");
        } else if stored != computed {
            return Err(rd.err(format!(
                "Wrong RDB checksum expected: ({computed:x}) got ({stored:x}): RDB CRC error"
            )));
        }
    }
    st.bytes = rd.pos;
    tracing::warn!(
        "Done loading RDB, keys loaded: {}, keys expired: {}, empty keys skipped: {}.",
        st.loaded,
        st.expired,
        st.empty
    );
    Ok(st)
}

/// Path of the RDB file: `dbfilename` in the working directory (`dir`).
pub fn file_path(server: &impl Host) -> std::path::PathBuf {
    std::path::PathBuf::from(server.config().read().get("dbfilename"))
}

/// Saves to `dbfilename` through `temp-<pid>.rdb` (written, fsynced,
/// renamed over the target). Returns (keys, bytes).
pub fn save_file(server: &impl Host, ctl: SaveCtl<'_>) -> std::io::Result<(u64, u64)> {
    let _g = server.rdb().save_lock.lock();
    let target = file_path(server);
    let tmp = std::path::PathBuf::from(format!("temp-{}.rdb", std::process::id()));
    let res = (|| {
        let f = std::fs::File::create(&tmp)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        let r = write_snapshot(server, &mut w, false, ctl)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &target)?;
        Ok(r)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// Records a successful save that started when the dirty counter was
/// `dirty_at_start` (absolute).
fn save_succeeded(server: &impl Host, dirty_at_start: u64, bytes: u64) {
    let st = &server.rdb();
    server
        .stats()
        .dirty_base
        .store(dirty_at_start, Ordering::Relaxed);
    server.lastsave().store(now_ms() / 1000, Ordering::Relaxed);
    st.last_bgsave_failed.store(false, Ordering::Relaxed);
    st.saves.fetch_add(1, Ordering::Relaxed);
    st.last_save_bytes.store(bytes, Ordering::Relaxed);
}

/// SAVE: a synchronous save in the calling thread. Errors: a BGSAVE is
/// running ("Background save already in progress") or the write failed
/// (logged).
pub fn save(server: &impl Host) -> Result<(), String> {
    if server.rdb().bgsave_in_progress.load(Ordering::SeqCst) {
        return Err("Background save already in progress".into());
    }
    save_now(server)
}

/// Saves synchronously whatever else runs (SHUTDOWN, FLUSHALL, DEBUG
/// RELOAD); a running BGSAVE is cancelled first.
pub fn save_now(server: &impl Host) -> Result<(), String> {
    if server.rdb().bgsave_in_progress.load(Ordering::SeqCst) {
        server.rdb().cancel.store(true, Ordering::SeqCst);
    }
    let start = server.stats().totals().dirty;
    let t0 = std::time::Instant::now();
    match save_file(server, SaveCtl::default()) {
        Ok((keys, bytes)) => {
            save_succeeded(server, start, bytes);
            tracing::info!(
                "DB saved on disk ({keys} keys, {bytes} bytes, {} ms)",
                t0.elapsed().as_millis()
            );
            Ok(())
        }
        Err(e) => {
            tracing::warn!("Failed saving the DB: {e}");
            Err(format!("Failed saving the DB: {e}"))
        }
    }
}

/// BGSAVE: starts a background save thread. Errors: one is running.
pub fn bgsave(server: &Arc<impl Host>) -> Result<(), &'static str> {
    let st = &server.rdb();
    if st.bgsave_in_progress.swap(true, Ordering::SeqCst) {
        return Err("Background save already in progress");
    }
    server.stats().forks.fetch_add(1, Ordering::Relaxed);
    st.cancel.store(false, Ordering::SeqCst);
    let now = now_ms();
    st.bgsave_start_ms.store(now, Ordering::Relaxed);
    st.last_bgsave_try.store(now / 1000, Ordering::Relaxed);
    st.dirty_at_start
        .store(server.stats().totals().dirty, Ordering::Relaxed);
    st.save_keys_processed.store(0, Ordering::Relaxed);
    let total: usize = (0..server.keyspace().db_count())
        .map(|i| server.keyspace().db(i).len())
        .sum();
    st.save_keys_total.store(total as u64, Ordering::Relaxed);
    let delay = server.config().read().get_i64("rdb-key-save-delay").max(0) as u64;
    let srv = server.clone();
    let spawned = std::thread::Builder::new()
        .name("ferrokv-bgsave".into())
        .spawn(move || {
            let st = &srv.rdb();
            let ctl = SaveCtl {
                cancel: Some(&st.cancel),
                key_delay_us: delay,
                progress: Some(&st.save_keys_processed),
                ..Default::default()
            };
            let r = save_file(&srv, ctl);
            let secs =
                (now_ms().saturating_sub(st.bgsave_start_ms.load(Ordering::Relaxed)) + 500) / 1000;
            st.last_bgsave_time_sec
                .store(secs as i64, Ordering::Relaxed);
            match r {
                Ok((keys, bytes)) => {
                    save_succeeded(&srv, st.dirty_at_start.load(Ordering::Relaxed), bytes);
                    tracing::info!("Background saving terminated with success ({keys} keys)");
                }
                Err(_) if st.cancel.load(Ordering::SeqCst) => {
                    tracing::warn!("Background saving terminated (cancelled)");
                }
                Err(e) => {
                    st.last_bgsave_failed.store(true, Ordering::Relaxed);
                    tracing::warn!("Background saving error: {e}");
                }
            }
            st.bgsave_in_progress.store(false, Ordering::SeqCst);
        });
    if spawned.is_err() {
        st.bgsave_in_progress.store(false, Ordering::SeqCst);
        return Err("Can't start the background save thread");
    }
    tracing::info!("Background saving started");
    Ok(())
}

/// Cancels a running BGSAVE and waits (up to 5 s) until it has stopped
/// (FLUSHALL, as Redis kills its child; SHUTDOWN).
pub fn cancel_bgsave(server: &impl Host) {
    let st = &server.rdb();
    if !st.bgsave_in_progress.load(Ordering::SeqCst) {
        return;
    }
    st.cancel.store(true, Ordering::SeqCst);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while st.bgsave_in_progress.load(Ordering::SeqCst) && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// FLUSHALL's persistence part: cancels a running BGSAVE and, when save
/// points are configured, saves the (now empty) dataset. True when saved.
pub fn on_flushall(server: &impl Host) -> bool {
    cancel_bgsave(server);
    !save_points(server).is_empty() && save_now(server).is_ok()
}

/// Parsed `save` directive: (seconds, changes) pairs.
pub fn save_points(server: &impl Host) -> Vec<(u64, u64)> {
    let c = server.config().read();
    let w: Vec<u64> = c
        .get("save")
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    w.chunks_exact(2).map(|p| (p[0], p[1])).collect()
}

/// Once per cron tick (serverCron): starts a scheduled BGSAVE, or one due
/// by a save point (enough changes and enough seconds since the last save;
/// after a failure, retried no sooner than 5 seconds later).
pub fn cron(server: &Arc<impl Host>) {
    let st = &server.rdb();
    if st.bgsave_in_progress.load(Ordering::Relaxed) {
        return;
    }
    if st.scheduled.swap(false, Ordering::Relaxed) {
        let _ = bgsave(server);
        return;
    }
    let points = save_points(server);
    if points.is_empty() {
        return;
    }
    let d = dirty(server);
    let now = now_ms() / 1000;
    let last = server.lastsave().load(Ordering::Relaxed);
    let can_retry = now.saturating_sub(st.last_bgsave_try.load(Ordering::Relaxed)) > 5
        || !st.last_bgsave_failed.load(Ordering::Relaxed);
    for (secs, changes) in points {
        if d >= changes && now.saturating_sub(last) > secs && can_retry {
            tracing::info!("{changes} changes in {secs} seconds. Saving...");
            let _ = bgsave(server);
            return;
        }
    }
}

/// Loads `dbfilename` at start-up, before clients are accepted. A missing
/// file is an empty dataset; any other problem is an error naming the file
/// (the server refuses to start).
pub fn load_at_startup(server: &impl Host) -> Result<(), String> {
    let path = file_path(server);
    let shown = std::env::current_dir()
        .map(|d| d.join(&path))
        .unwrap_or_else(|_| path.clone());
    let f = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(format!(
                "Fatal error loading the DB ({}): {e}. Exiting.",
                shown.display()
            ))
        }
    };
    let t0 = std::time::Instant::now();
    // A master deletes the keys that expired while it was down and, when
    // the file continues a replication history, puts their DELs in its
    // backlog (Redis's loadDataFromDisk with RDBFLAGS_FEED_REPL), so its
    // replicas resynchronise partially and delete them too.
    let master = server.config().read().get("replicaof").is_empty();
    let lazy = server.config().read().get_bool("lazyfree-lazy-expire");
    let mut dels: Vec<u8> = Vec::new();
    let mut del_db: Option<usize> = None;
    let mut feed = |db: usize, key: &[u8]| {
        if !master {
            return;
        }
        if del_db != Some(db) {
            let mut b = itoa::Buffer::new();
            crate::propagate::encode(&mut dels, &[b"SELECT", b.format(db).as_bytes()]);
            del_db = Some(db);
        }
        let cmd: &[u8] = if lazy { b"UNLINK" } else { b"DEL" };
        crate::propagate::encode(&mut dels, &[cmd, key]);
    };
    let r = load_feeding(
        server,
        std::io::BufReader::with_capacity(1 << 20, f),
        LoadOpts::default(),
        &mut feed,
    );
    match r {
        Ok(st) => {
            record_load(server, &st);
            if let Some((id, offset, db)) = st.repl {
                if id != [b'0'; 40] {
                    let size = server.config().read().get_u64("repl-backlog-size") as usize;
                    let id = String::from_utf8_lossy(&id);
                    if master {
                        server
                            .repl()
                            .restore_master(&id, offset, &dels, del_db, size);
                    } else {
                        server.repl().restore(&id, offset, db, size);
                    }
                    server
                        .propagation()
                        .set_user(crate::propagate::USER_REPL, true);
                }
            }
            tracing::info!(
                "DB loaded from disk: {:.3} seconds ({} keys, {} expired keys skipped)",
                t0.elapsed().as_secs_f64(),
                st.loaded,
                st.expired
            );
            Ok(())
        }
        Err(e) => {
            report_load_failure(&path, &e);
            Err(format!(
                "Fatal error loading the DB from {}: {e}. Exiting.",
                shown.display()
            ))
        }
    }
}

/// Logs a failed start-up load as Redis's rdbReportError does before it
/// exits: the error, a report in the form of the redis-check-rdb run Redis
/// makes at that point (ferrokv's error already says where and what), and
/// "Terminating server after rdb file reading failure." (the caller
/// exits with status 1).
pub fn report_load_failure(path: &std::path::Path, e: &RdbError) {
    tracing::warn!(
        "Internal error in RDB reading offset {}, function at rdb.c -> {}",
        e.offset,
        e.msg
    );
    tracing::warn!("[offset 0] Checking RDB file {}", path.display());
    tracing::warn!("--- RDB ERROR DETECTED ---");
    tracing::warn!("[offset {}] {}", e.offset, e.msg);
    tracing::warn!("Terminating server after rdb file reading failure.");
}

fn record_load(server: &impl Host, st: &LoadStats) {
    server.rdb().keys_loaded.store(st.loaded, Ordering::Relaxed);
    server
        .rdb()
        .keys_expired
        .store(st.expired, Ordering::Relaxed);
}

/// Empties every database (DEBUG RELOAD, before loading).
pub fn empty_all(server: &impl Host) {
    empty_all_with(server, false);
}

/// Empties every database and removes the function libraries (Redis
/// 7.0's `emptyData` without EMPTYDB_NOFUNCTIONS: DEBUG RELOAD, a
/// replica's full synchronisation, an AOF reload, CLUSTER RESET; FLUSHALL
/// keeps the functions and does not come here); with `lazy` the old
/// contents are freed on the lazyfree thread, their keys counted by INFO
/// `lazyfreed_objects` (a replica's full synchronisation under
/// `replica-lazy-flush`, as Redis's `emptyData(-1, EMPTYDB_ASYNC, ...)`).
pub fn empty_all_with(server: &impl Host, lazy: bool) {
    server.clear_function_libraries();
    let ks = &server.keyspace();
    for i in 0..ks.db_count() {
        let db = ks.db(i);
        // Locked as writers lock (a rewrite's point-in-time copy copies
        // each shard before it is emptied).
        let old: Vec<Shard> = db.lock_all().iter_mut().map(|g| g.take()).collect();
        if lazy {
            let keys = old.iter().map(|s| s.len()).sum();
            crate::db::lazyfree::free_databases(old, keys);
        } else {
            drop(old);
        }
    }
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save (unless `nosave`), empty
/// (unless `noflush`), load the file back (`merge`: existing keys are
/// replaced instead of being an error).
pub fn debug_reload(
    server: &impl Host,
    merge: bool,
    noflush: bool,
    nosave: bool,
) -> Result<(), String> {
    if !nosave {
        save_now(server)?;
    }
    if !noflush {
        empty_all(server);
    }
    let path = file_path(server);
    let f = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let st = load(
        server,
        std::io::BufReader::with_capacity(1 << 20, f),
        LoadOpts {
            allow_dup: merge,
            ..Default::default()
        },
    )
    .map_err(|e| e.to_string())?;
    record_load(server, &st);
    tracing::warn!("DB reloaded by DEBUG RELOAD");
    Ok(())
}

// ------------------------------------------------------------ DUMP/RESTORE

/// A DUMP payload for `v` (dumpCommand / createDumpPayload): the value as
/// RDB (type byte + body), the RDB version (2 bytes LE) and the CRC64 of
/// everything before it (8 bytes LE). The version is `opts.version`,
/// raised to what the value needs ([`write::min_version`]: 12 for a hash
/// with field TTLs, so that they are kept).
pub fn dump_payload(v: &Value, opts: &WriteOpts) -> Vec<u8> {
    let mut o = *opts;
    o.version = o.version.max(write::min_version(v));
    let mut b = Vec::new();
    write::put_value(&mut b, v, &o);
    seal_payload(&mut b, o.version);
    b
}

/// Ends a DUMP-style payload: appends the RDB version `version` (2 bytes
/// LE) and the CRC64 of everything before it (8 bytes LE), as
/// createDumpPayload and FUNCTION DUMP do.
pub fn seal_payload(b: &mut Vec<u8>, version: u16) {
    b.extend_from_slice(&version.to_le_bytes());
    let crc = CRC64.checksum(b);
    b.extend_from_slice(&crc.to_le_bytes());
}

/// Why a RESTORE payload was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadError {
    /// "DUMP payload version or checksum are wrong".
    VersionOrChecksum,
    /// "Bad data format".
    BadFormat,
}

/// Checks a DUMP payload's footer (verifyDumpPayload): at least 10 bytes,
/// an RDB version ferrokv reads (1 to 12, or Valkey 9's 80: see
/// [`version_readable`]), a matching CRC64 unless `skip_crc`
/// (DEBUG SET-SKIP-CHECKSUM-VALIDATION 1, see
/// [`RdbState::skip_checksum_validation`]).
pub fn verify_payload(p: &[u8], skip_crc: bool) -> bool {
    if p.len() < 10 {
        return false;
    }
    let n = p.len();
    let ver = u16::from_le_bytes([p[n - 10], p[n - 9]]);
    // Version 0 is what the oldest payloads (Redis 2.6) carry.
    if ver != 0 && !version_readable(Dialect::of_payload(ver), ver) {
        return false;
    }
    if skip_crc {
        return true;
    }
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&p[n - 8..]);
    CRC64.checksum(&p[..n - 8]) == u64::from_le_bytes(crc)
}

/// Decodes the value of a verified DUMP payload with the server's encoding
/// limits; a hash with field TTLs keeps them, expired ones included.
pub fn restore_value(server: &impl Host, p: &[u8], key: &[u8]) -> Result<Value, PayloadError> {
    let skip = server
        .rdb()
        .skip_checksum_validation
        .load(Ordering::Relaxed);
    if !verify_payload(p, skip) {
        return Err(PayloadError::VersionOrChecksum);
    }
    let n = p.len();
    let ver = u16::from_le_bytes([p[n - 10], p[n - 9]]);
    let mut rd = Reader::new(&p[..n - 10]);
    rd.dialect = Dialect::of_payload(ver);
    let ty = rd.u8().map_err(|_| PayloadError::BadFormat)?;
    // Fields already expired are kept (Redis's restoreCommand registers the
    // hash for active expiry, which deletes them).
    let lim = LoadLimits::of(server);
    match rd.value(ty, key, &lim) {
        Ok(Some(v)) => Ok(v),
        // An empty collection (RDB_LOAD_ERR_EMPTY_KEY): refused unlogged.
        Ok(None) => Err(PayloadError::BadFormat),
        Err(e) => {
            // rdbReportError in a RESTORE context: logged at verbose level.
            tracing::info!(
                "Internal error in RDB reading offset {}, function at rdb.c -> {}",
                e.offset,
                e.msg
            );
            Err(PayloadError::BadFormat)
        }
    }
}

/// Write options from the live configuration (DUMP).
pub fn dump_opts(server: &impl Host) -> WriteOpts {
    write_opts(server).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_redis_test_vector() {
        // crc64.c's self-test: "123456789" -> e9c6d914c4b8d9ca.
        assert_eq!(CRC64.checksum(b"123456789"), 0xe9c6d914c4b8d9ca);
    }
}
