//! Persistence of hash field TTLs (Redis 7.4's hash-field expiration):
//! RDB types 24 (HASH_METADATA) and 25 (HASH_LISTPACK_EX) written and
//! read, the RDB version raised to 12 while a hash has field TTLs, the
//! Redis 7.4 release-candidate forms (22, 23) and Valkey 9's HASH_2 read,
//! expired fields dropped on load, DUMP / RESTORE, the AOF's command form
//! (HPEXPIREAT), DEBUG RELOAD and a replica's full sync. Every check of a
//! TTL is of the exact expiry time (HPEXPIRETIME).

mod common;
use common::*;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Starts ferrokv with its working directory at `dir`.
fn start_in(dir: &Path, extra: &[&str]) -> Server {
    let mut args = vec![
        "--dir",
        dir.to_str().unwrap(),
        "--enable-debug-command",
        "yes",
    ];
    args.extend_from_slice(extra);
    Server::start(&args)
}

/// HPEXPIRETIME key FIELDS n f...: the raw reply.
fn hpexpiretime(r: &mut Raw, key: &str, fields: &[&str]) -> String {
    let n = fields.len().to_string();
    let mut args: Vec<&[u8]> = vec![b"HPEXPIRETIME", key.as_bytes(), b"FIELDS", n.as_bytes()];
    args.extend(fields.iter().map(|f| f.as_bytes()));
    s(&r.cmd(&args))
}

/// The reply HPEXPIRETIME gives for these times (-1: no TTL, -2: no field).
fn times(ts: &[i64]) -> String {
    let mut o = format!("*{}\r\n", ts.len());
    for t in ts {
        o.push_str(&format!(":{t}\r\n"));
    }
    o
}

/// Sets field TTLs as absolute ms times (HPEXPIREAT key at FIELDS n f...).
fn hpexpireat(r: &mut Raw, key: &str, at: u64, fields: &[&str]) {
    let at = at.to_string();
    let n = fields.len().to_string();
    let mut args: Vec<&[u8]> = vec![
        b"HPEXPIREAT",
        key.as_bytes(),
        at.as_bytes(),
        b"FIELDS",
        n.as_bytes(),
    ];
    args.extend(fields.iter().map(|f| f.as_bytes()));
    let rep = s(&r.cmd(&args));
    assert_eq!(rep, times(&vec![1; fields.len()]), "HPEXPIREAT {key}");
}

/// The type byte of `key`'s record in an RDB file (the byte before the
/// key's 6-bit length and name), if found.
fn record_type(file: &[u8], key: &str) -> Option<u8> {
    let mut pat = vec![key.len() as u8];
    pat.extend_from_slice(key.as_bytes());
    file.windows(pat.len())
        .position(|w| w == pat.as_slice())
        .filter(|&i| i > 0)
        .map(|i| file[i - 1])
}

/// Builds the dataset the round trips check: `lpx`, a small hash that is
/// a `listpackex` (two fields at `t1`, one at `t2`, one without TTL);
/// `big`, a `hashtable` with TTLs (a long value); `plain`, a hash without
/// TTLs. Returns (t1, t2).
fn populate(r: &mut Raw) -> (u64, u64) {
    let t1 = now_ms() + 3_600_000;
    let t2 = t1 + 12_345;
    assert_eq!(r.cmds("HSET lpx a 1 b 2 c 3 d 4"), b":4\r\n");
    hpexpireat(r, "lpx", t1, &["a", "b"]);
    hpexpireat(r, "lpx", t2, &["c"]);
    let long = "x".repeat(100);
    assert_eq!(
        r.cmd(&[
            b"HSET",
            b"big",
            b"f1",
            b"v1",
            b"f2",
            long.as_bytes(),
            b"f3",
            b"v3"
        ]),
        b":3\r\n"
    );
    hpexpireat(r, "big", t2, &["f1", "f3"]);
    assert_eq!(r.cmds("HSET plain p 1"), b":1\r\n");
    assert_eq!(r.cmds("OBJECT ENCODING lpx"), b"$10\r\nlistpackex\r\n");
    assert_eq!(r.cmds("OBJECT ENCODING big"), b"$9\r\nhashtable\r\n");
    (t1, t2)
}

/// Checks the dataset of [`populate`] field by field and TTL by TTL.
fn check(r: &mut Raw, t1: u64, t2: u64, what: &str) {
    let (t1, t2) = (t1 as i64, t2 as i64);
    assert_eq!(
        hpexpiretime(r, "lpx", &["a", "b", "c", "d", "zz"]),
        times(&[t1, t1, t2, -1, -2]),
        "{what}: lpx TTLs"
    );
    assert_eq!(r.cmds("HGET lpx d"), b"$1\r\n4\r\n", "{what}");
    assert_eq!(r.cmds("HLEN lpx"), b":4\r\n", "{what}");
    assert_eq!(
        r.cmds("OBJECT ENCODING lpx"),
        b"$10\r\nlistpackex\r\n",
        "{what}"
    );
    assert_eq!(
        hpexpiretime(r, "big", &["f1", "f2", "f3"]),
        times(&[t2, -1, t2]),
        "{what}: big TTLs"
    );
    assert_eq!(r.cmds("HSTRLEN big f2"), b":100\r\n", "{what}");
    assert_eq!(
        r.cmds("OBJECT ENCODING big"),
        b"$9\r\nhashtable\r\n",
        "{what}"
    );
    assert_eq!(
        hpexpiretime(r, "plain", &["p"]),
        times(&[-1]),
        "{what}: plain"
    );
}

#[test]
fn save_and_restart_keep_field_ttls_in_a_version_12_file() {
    let dir = tempfile::tempdir().unwrap();
    let (t1, t2);
    {
        let srv = start_in(dir.path(), &[]);
        let mut r = srv.raw();
        (t1, t2) = populate(&mut r);
        assert_eq!(
            r.cmds("CONFIG GET rdb-version"),
            b"*2\r\n$11\r\nrdb-version\r\n$2\r\n10\r\n"
        );
        assert_eq!(r.cmds("SAVE"), b"+OK\r\n");
    }
    let file = std::fs::read(dir.path().join("dump.rdb")).unwrap();
    assert_eq!(&file[..9], b"REDIS0012", "raised from rdb-version 10");
    assert_eq!(
        record_type(&file, "lpx"),
        Some(25),
        "listpackex: HASH_LISTPACK_EX"
    );
    assert_eq!(
        record_type(&file, "big"),
        Some(24),
        "hashtable: HASH_METADATA"
    );
    assert_eq!(
        record_type(&file, "plain"),
        Some(16),
        "listpack: HASH_LISTPACK"
    );
    let srv = start_in(dir.path(), &[]);
    let mut r = srv.raw();
    check(&mut r, t1, t2, "after restart");
    assert_eq!(
        r.info_field("persistence", "rdb_last_load_keys_loaded"),
        "3"
    );
    // Field TTLs loaded are expired actively too (the keys are indexed).
    let soon = now_ms() + 150;
    hpexpireat(&mut r, "plain", soon, &["p"]);
    assert_eq!(r.cmds("HSET plain q 2"), b":1\r\n");
    // With every TTL gone the file is version 10 again, the hashes plain.
    assert_eq!(
        r.cmds("HPERSIST lpx FIELDS 3 a b c"),
        b"*3\r\n:1\r\n:1\r\n:1\r\n"
    );
    assert_eq!(r.cmds("HPERSIST big FIELDS 2 f1 f3"), b"*2\r\n:1\r\n:1\r\n");
    let deadline = Instant::now() + Duration::from_secs(5);
    while r.cmds("HEXISTS plain p") != b":0\r\n" {
        assert!(Instant::now() < deadline, "field p not expired");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(r.cmds("SAVE"), b"+OK\r\n");
    let file = std::fs::read(dir.path().join("dump.rdb")).unwrap();
    assert_eq!(&file[..9], b"REDIS0010", "no field TTL left");
    assert_eq!(record_type(&file, "lpx"), Some(4));
    assert_eq!(record_type(&file, "big"), Some(4));
    // rdb-version 12 keeps a listpackex without TTLs as type 25.
    assert_eq!(r.cmds("CONFIG SET rdb-version 12"), b"+OK\r\n");
    assert_eq!(r.cmds("SAVE"), b"+OK\r\n");
    let file = std::fs::read(dir.path().join("dump.rdb")).unwrap();
    assert_eq!(&file[..9], b"REDIS0012");
    assert_eq!(record_type(&file, "lpx"), Some(25));
    assert_eq!(record_type(&file, "big"), Some(4), "no TTL: plain HASH");
    drop(r);
    drop(srv);
    let srv = start_in(dir.path(), &[]);
    let mut r = srv.raw();
    assert_eq!(hpexpiretime(&mut r, "lpx", &["a", "d"]), times(&[-1, -1]));
    assert_eq!(r.cmds("HLEN lpx"), b":4\r\n");
}

#[test]
fn debug_reload_keeps_field_ttls() {
    let srv = Server::start(&["--enable-debug-command", "yes"]);
    let mut r = srv.raw();
    let (t1, t2) = populate(&mut r);
    let before = s(&r.cmds("DEBUG DIGEST"));
    assert_eq!(r.cmds("DEBUG RELOAD"), b"+OK\r\n");
    check(&mut r, t1, t2, "after DEBUG RELOAD");
    assert_eq!(s(&r.cmds("DEBUG DIGEST")), before);
}

#[test]
fn digest_marks_fields_with_a_ttl() {
    let srv = Server::start(&["--enable-debug-command", "yes"]);
    let mut r = srv.raw();
    r.cmds("HSET a f 1 g 2");
    r.cmds("HSET b f 1 g 2");
    let da = s(&r.cmds("DEBUG DIGEST-VALUE a"));
    assert_eq!(da, s(&r.cmds("DEBUG DIGEST-VALUE b")));
    let at = now_ms() + 100_000;
    hpexpireat(&mut r, "b", at, &["g"]);
    let db = s(&r.cmds("DEBUG DIGEST-VALUE b"));
    assert_ne!(da, db, "a field TTL changes the digest");
    // Only its presence counts, not the time.
    hpexpireat(&mut r, "b", at + 5000, &["g"]);
    assert_eq!(s(&r.cmds("DEBUG DIGEST-VALUE b")), db);
    assert_eq!(r.cmds("HPERSIST b FIELDS 1 g"), b"*1\r\n:1\r\n");
    assert_eq!(s(&r.cmds("DEBUG DIGEST-VALUE b")), da);
}

#[test]
fn dump_restore_round_trip_keeps_field_ttls() {
    let srv = Server::start(&["--enable-debug-command", "yes"]);
    let mut r = srv.raw();
    let (t1, t2) = populate(&mut r);
    let dump = |r: &mut Raw, key: &str| -> Vec<u8> {
        let rep = r.cmd(&[b"DUMP", key.as_bytes()]);
        // $<len>\r\n<payload>\r\n
        let nl = rep.iter().position(|&b| b == b'\n').unwrap();
        rep[nl + 1..rep.len() - 2].to_vec()
    };
    let version = |p: &[u8]| u16::from_le_bytes([p[p.len() - 10], p[p.len() - 9]]);
    let lpx = dump(&mut r, "lpx");
    let big = dump(&mut r, "big");
    let plain = dump(&mut r, "plain");
    assert_eq!((lpx[0], version(&lpx)), (25, 12));
    assert_eq!((big[0], version(&big)), (24, 12));
    assert_eq!((plain[0], version(&plain)), (16, 10), "no TTL: version 10");
    let digest_before: Vec<String> = ["lpx", "big", "plain"]
        .iter()
        .map(|k| s(&r.cmd(&[b"DEBUG", b"DIGEST-VALUE", k.as_bytes()])))
        .collect();
    r.cmds("DEL lpx big plain");
    for (k, p) in [("lpx", &lpx), ("big", &big), ("plain", &plain)] {
        assert_eq!(
            r.cmd(&[b"RESTORE", k.as_bytes(), b"0", p]),
            b"+OK\r\n",
            "{k}"
        );
    }
    check(&mut r, t1, t2, "after RESTORE");
    for (k, d) in ["lpx", "big", "plain"].iter().zip(&digest_before) {
        assert_eq!(&s(&r.cmd(&[b"DEBUG", b"DIGEST-VALUE", k.as_bytes()])), d);
    }
    // COPY keeps them too, and the copy's fields expire.
    assert_eq!(r.cmds("COPY lpx lpx2"), b":1\r\n");
    assert_eq!(
        hpexpiretime(&mut r, "lpx2", &["a", "c", "d"]),
        times(&[t1 as i64, t2 as i64, -1])
    );
    // COPY, RENAME and MOVE keep the key indexed for active expiry: the
    // copies vanish with their only field, with no command touching them.
    r.cmds("FLUSHALL");
    r.cmds("HSET one x 1");
    let soon = now_ms() + 500;
    hpexpireat(&mut r, "one", soon, &["x"]);
    assert_eq!(r.cmds("COPY one two"), b":1\r\n");
    assert_eq!(r.cmds("RENAME two three"), b"+OK\r\n");
    assert_eq!(r.cmds("MOVE one 1"), b":1\r\n");
    assert_eq!(r.cmds("DBSIZE"), b":1\r\n");
    assert_eq!(hpexpiretime(&mut r, "three", &["x"]), times(&[soon as i64]));
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let db0 = r.cmds("DBSIZE");
        r.cmds("SELECT 1");
        let db1 = r.cmds("DBSIZE");
        r.cmds("SELECT 0");
        if db0 == b":0\r\n" && db1 == b":0\r\n" {
            break;
        }
        assert!(Instant::now() < deadline, "copies not expired actively");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn aof_rewrite_without_preamble_writes_hpexpireat() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--appendonly", "yes", "--aof-use-rdb-preamble", "no"];
    let (t1, t2);
    {
        let srv = start_in(dir.path(), &args);
        let mut r = srv.raw();
        (t1, t2) = populate(&mut r);
        assert_eq!(
            r.cmds("BGREWRITEAOF"),
            b"+Background append only file rewriting started\r\n"
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while r.info_field("persistence", "aof_rewrite_in_progress") == "1"
            || r.info_field("persistence", "aof_rewrite_scheduled") == "1"
        {
            assert!(Instant::now() < deadline, "rewrite did not finish");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let d = dir.path().join("appendonlydir");
    let base = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".base.aof"))
        .expect("a base file");
    let text = s(&std::fs::read(&base).unwrap());
    assert!(!text.starts_with("REDIS"), "command form");
    let grouped =
        format!("$10\r\nHPEXPIREAT\r\n$3\r\nlpx\r\n$13\r\n{t1}\r\n$6\r\nFIELDS\r\n$1\r\n2\r\n");
    assert!(
        text.contains(&grouped),
        "fields a and b share one HPEXPIREAT: {text}"
    );
    assert!(text.contains(&format!(
        "$3\r\nbig\r\n$13\r\n{t2}\r\n$6\r\nFIELDS\r\n$1\r\n2\r\n"
    )));
    assert_eq!(text.matches("HPEXPIREAT").count(), 3, "{text}");
    let srv = start_in(dir.path(), &args);
    let mut r = srv.raw();
    check(&mut r, t1, t2, "after AOF load");
}

#[test]
fn aof_preamble_is_version_12_while_fields_have_ttls() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--appendonly", "yes"];
    let (t1, t2);
    {
        let srv = start_in(dir.path(), &args);
        let mut r = srv.raw();
        (t1, t2) = populate(&mut r);
        r.cmds("BGREWRITEAOF");
        let deadline = Instant::now() + Duration::from_secs(30);
        while r.info_field("persistence", "aof_rewrite_in_progress") == "1"
            || r.info_field("persistence", "aof_rewrite_scheduled") == "1"
        {
            assert!(Instant::now() < deadline, "rewrite did not finish");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let d = dir.path().join("appendonlydir");
    let base = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".base.rdb"))
        .expect("an RDB base file");
    let file = std::fs::read(&base).unwrap();
    assert_eq!(&file[..9], b"REDIS0012");
    assert_eq!(record_type(&file, "lpx"), Some(25));
    let srv = start_in(dir.path(), &args);
    let mut r = srv.raw();
    check(&mut r, t1, t2, "after AOF preamble load");
}

#[test]
fn full_sync_to_a_replica_keeps_field_ttls() {
    let master = Server::start(&["--repl-diskless-sync-delay", "0"]);
    let mut m = master.raw();
    let (t1, t2) = populate(&mut m);
    let replica = Server::start(&[]);
    let mut r = replica.raw();
    let port = master.port.to_string();
    assert_eq!(
        r.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]),
        b"+OK\r\n"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while r.info_field("replication", "master_link_status") != "up" || r.cmds("DBSIZE") != b":3\r\n"
    {
        assert!(Instant::now() < deadline, "replica did not sync");
        std::thread::sleep(Duration::from_millis(20));
    }
    check(&mut r, t1, t2, "on the replica");
    // The master's later field changes reach it too.
    let t3 = t2 + 1000;
    hpexpireat(&mut m, "plain", t3, &["p"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while hpexpiretime(&mut r, "plain", &["p"]) != times(&[t3 as i64]) {
        assert!(Instant::now() < deadline, "HPEXPIREAT not replicated");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ------------------------------------------------- hand-built files

/// CRC-64/Jones as rdb.c checks it (reflected, init 0).
fn crc64(data: &[u8]) -> u64 {
    let mut crc = 0u64;
    for &b in data {
        crc ^= b as u64;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x95AC_9329_AC4B_C9B5
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// An RDB length (rdbSaveLen): 6-, 14-, 32- or 64-bit.
fn len(b: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        b.push(n as u8);
    } else if n < 1 << 14 {
        b.push(0x40 | (n >> 8) as u8);
        b.push(n as u8);
    } else if n <= u32::MAX as u64 {
        b.push(0x80);
        b.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        b.push(0x81);
        b.extend_from_slice(&n.to_be_bytes());
    }
}

/// A raw RDB string.
fn string(b: &mut Vec<u8>, v: &[u8]) {
    len(b, v.len() as u64);
    b.extend_from_slice(v);
}

/// One listpack element: a short string or a 64-bit integer.
enum Lp<'a> {
    S(&'a str),
    I(u64),
}

/// A listpack (listpack.c): strings of < 64 bytes in the 6-bit string
/// encoding, integers in the 64-bit integer encoding (0xF4), each entry
/// followed by its 1-byte back-length.
fn listpack(elems: &[Lp<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for e in elems {
        let start = body.len();
        match e {
            Lp::S(t) => {
                assert!(t.len() < 64);
                body.push(0x80 | t.len() as u8);
                body.extend_from_slice(t.as_bytes());
            }
            Lp::I(v) => {
                body.push(0xF4);
                body.extend_from_slice(&v.to_le_bytes());
            }
        }
        let n = body.len() - start;
        assert!(n < 128);
        body.push(n as u8);
    }
    let total = 6 + body.len() + 1;
    let mut lp = Vec::with_capacity(total);
    lp.extend_from_slice(&(total as u32).to_le_bytes());
    lp.extend_from_slice(&(elems.len() as u16).to_le_bytes());
    lp.extend_from_slice(&body);
    lp.push(0xFF);
    lp
}

/// A complete file: signature, database 0 with `keys` (records from their
/// type byte on), EOF and the CRC64.
fn rdb_file(magic: &[u8; 9], keys: &[u8]) -> Vec<u8> {
    let mut f = magic.to_vec();
    f.push(250);
    string(&mut f, b"redis-ver");
    string(&mut f, b"7.4.0");
    f.push(254);
    len(&mut f, 0);
    f.extend_from_slice(keys);
    f.push(255);
    let crc = crc64(&f);
    f.extend_from_slice(&crc.to_le_bytes());
    f
}

/// Type 24 (HASH_METADATA, rdb.c rdbSaveObject): min expiry (8 bytes LE),
/// count, then per field: TTL as a length (0 = none, else expiry - min +
/// 1), field, value. `fields`: (field, value, expiry or 0).
fn hash_metadata(key: &str, fields: &[(&str, &str, u64)]) -> Vec<u8> {
    let min = fields
        .iter()
        .map(|f| f.2)
        .filter(|&t| t != 0)
        .min()
        .unwrap();
    let mut r = vec![24];
    string(&mut r, key.as_bytes());
    r.extend_from_slice(&min.to_le_bytes());
    len(&mut r, fields.len() as u64);
    for (f, v, at) in fields {
        len(&mut r, if *at == 0 { 0 } else { at - min + 1 });
        string(&mut r, f.as_bytes());
        string(&mut r, v.as_bytes());
    }
    r
}

/// Type 22 (HASH_METADATA_PRE_GA, Redis 7.4 RCs): count, then per field the
/// absolute expiry as a length (0 = none), field, value.
fn hash_metadata_pre_ga(key: &str, fields: &[(&str, &str, u64)]) -> Vec<u8> {
    let mut r = vec![22];
    string(&mut r, key.as_bytes());
    len(&mut r, fields.len() as u64);
    for (f, v, at) in fields {
        len(&mut r, *at);
        string(&mut r, f.as_bytes());
        string(&mut r, v.as_bytes());
    }
    r
}

/// Type 25 (HASH_LISTPACK_EX; with `pre_ga` type 23, without the min
/// expiry): listpack of field, value, expiry triplets.
fn listpack_ex(key: &str, fields: &[(&str, &str, u64)], pre_ga: bool) -> Vec<u8> {
    let mut r = vec![if pre_ga { 23 } else { 25 }];
    string(&mut r, key.as_bytes());
    if !pre_ga {
        let min = fields
            .iter()
            .map(|f| f.2)
            .filter(|&t| t != 0)
            .min()
            .unwrap_or(0);
        r.extend_from_slice(&min.to_le_bytes());
    }
    let mut elems = Vec::new();
    for (f, v, at) in fields {
        elems.push(Lp::S(f));
        elems.push(Lp::S(v));
        elems.push(Lp::I(*at));
    }
    string(&mut r, &listpack(&elems));
    r
}

/// Valkey 9's type 22 (RDB_TYPE_HASH_2): count, then per field: field,
/// value, expiry (8 bytes LE, signed, -1 = none).
fn valkey_hash_2(key: &str, fields: &[(&str, &str, i64)]) -> Vec<u8> {
    let mut r = vec![22];
    string(&mut r, key.as_bytes());
    len(&mut r, fields.len() as u64);
    for (f, v, at) in fields {
        string(&mut r, f.as_bytes());
        string(&mut r, v.as_bytes());
        r.extend_from_slice(&at.to_le_bytes());
    }
    r
}

fn load_file(file: &[u8]) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("dump.rdb"), file).unwrap();
    (start_in(dir.path(), &[]), dir)
}

#[test]
fn hand_built_files_of_every_form_load_with_exact_ttls() {
    let t = now_ms() + 86_400_000;
    let past = 1_000_000; // 1970: expired
    let mut recs = Vec::new();
    recs.extend(hash_metadata(
        "m24",
        &[
            ("a", "1", t),
            ("b", "2", 0),
            ("old", "x", past),
            ("c", "3", t + 777),
        ],
    ));
    recs.extend(listpack_ex(
        "l25",
        &[("a", "1", t + 5), ("b", "2", t + 9), ("c", "3", 0)],
        false,
    ));
    // Every field expired: the key is skipped as an expired key.
    recs.extend(listpack_ex("gone", &[("a", "1", past)], false));
    recs.extend(hash_metadata_pre_ga(
        "m22",
        &[("a", "1", t + 1), ("b", "2", 0)],
    ));
    recs.extend(listpack_ex(
        "l23",
        &[("a", "1", 0), ("b", "2", t + 2)],
        true,
    ));
    let (srv, _dir) = load_file(&rdb_file(b"REDIS0012", &recs));
    let mut r = srv.raw();
    let t = t as i64;
    assert_eq!(
        hpexpiretime(&mut r, "m24", &["a", "b", "c", "old"]),
        times(&[t, -1, t + 777, -2])
    );
    assert_eq!(r.cmds("HGET m24 c"), b"$1\r\n3\r\n");
    assert_eq!(r.cmds("HLEN m24"), b":3\r\n");
    assert_eq!(
        hpexpiretime(&mut r, "l25", &["a", "b", "c"]),
        times(&[t + 5, t + 9, -1])
    );
    assert_eq!(r.cmds("OBJECT ENCODING l25"), b"$10\r\nlistpackex\r\n");
    assert_eq!(r.cmds("EXISTS gone"), b":0\r\n");
    assert_eq!(
        hpexpiretime(&mut r, "m22", &["a", "b"]),
        times(&[t + 1, -1])
    );
    assert_eq!(
        hpexpiretime(&mut r, "l23", &["a", "b"]),
        times(&[-1, t + 2])
    );
    assert_eq!(r.cmds("DBSIZE"), b":4\r\n");
    assert_eq!(
        r.info_field("persistence", "rdb_last_load_keys_expired"),
        "1"
    );
    assert_eq!(
        r.info_field("persistence", "rdb_last_load_keys_loaded"),
        "4"
    );
    // Valkey 9.0's HASH_2 in a VALKEY080 file.
    let recs = valkey_hash_2(
        "v",
        &[("a", "1", t + 3), ("b", "2", -1), ("o", "x", past as i64)],
    );
    let (srv, _dir) = load_file(&rdb_file(b"VALKEY080", &recs));
    let mut r = srv.raw();
    assert_eq!(
        hpexpiretime(&mut r, "v", &["a", "b", "o"]),
        times(&[t + 3, -1, -2])
    );
}

#[test]
fn corrupt_field_ttl_records_are_errors_not_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let fails = |file: Vec<u8>| -> String {
        std::fs::write(dir.path().join("dump.rdb"), file).unwrap();
        start_fails(&["--dir", dir.path().to_str().unwrap()], None)
    };
    // An expiry beyond 2^48 - 1.
    let big = 1u64 << 50;
    let err = fails(rdb_file(
        b"REDIS0012",
        &listpack_ex("k", &[("a", "1", big)], false),
    ));
    assert!(
        err.contains("invalid hash field expiry time (key 'k')"),
        "{err}"
    );
    // A listpack of pairs under type 25.
    let mut r = vec![25];
    string(&mut r, b"k");
    r.extend_from_slice(&0u64.to_le_bytes());
    string(&mut r, &listpack(&[Lp::S("a"), Lp::S("b")]));
    let err = fails(rdb_file(b"REDIS0012", &r));
    assert!(err.contains("not made of triplets"), "{err}");
    // A duplicate field.
    let t = now_ms() + 100_000;
    let err = fails(rdb_file(
        b"REDIS0012",
        &hash_metadata("k", &[("a", "1", t), ("a", "2", 0)]),
    ));
    assert!(err.contains("duplicate hash field (key 'k')"), "{err}");
    // Truncated in the middle of the record.
    let rec = hash_metadata("k", &[("a", "1", t), ("b", "2", 0)]);
    let mut f = rdb_file(b"REDIS0012", &[]);
    f.truncate(f.len() - 9);
    f.extend_from_slice(&rec[..rec.len() - 3]);
    let err = fails(f);
    assert!(err.contains("truncated"), "{err}");
    // A RESTORE payload with a bad body is "Bad data format".
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let mut p = hash_metadata("k", &[("a", "1", t)]);
    p.drain(1..3); // type byte kept, key removed
    p.truncate(p.len() - 2);
    p.extend_from_slice(&12u16.to_le_bytes());
    let crc = crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(
        c.cmd(&[b"RESTORE", b"k", b"0", &p]),
        b"-ERR Bad data format\r\n"
    );
}
