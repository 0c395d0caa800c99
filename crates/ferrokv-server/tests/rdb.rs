//! End-to-end tests of RDB persistence: round trips of every type and
//! encoding through SAVE / restart and DEBUG RELOAD, interoperability with
//! redis-server 7.0 in both directions (its dump loaded by ferrokv, ours
//! loaded by redis-server and accepted by redis-check-rdb), corrupted and
//! truncated files (the server refuses to start and names the file),
//! BGSAVE while serving clients, save points, FLUSHALL aborting a BGSAVE,
//! MISCONF after a failed BGSAVE, SHUTDOWN SAVE / NOSAVE and SIGTERM, and
//! keys already expired at load.

mod common;
#[path = "support/dataset.rs"]
mod dataset;
use common::*;
use dataset::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn seed() -> u64 {
    seed_from_env_or_time()
}

fn redis_or_skip() -> Option<Server> {
    match Server::start_redis(&["--enable-debug-command", "yes"]) {
        Some(r) => Some(r),
        None => {
            if std::env::var_os("FERROKV_REQUIRE_REDIS").is_some() {
                panic!("redis-server not installed but FERROKV_REQUIRE_REDIS is set");
            }
            eprintln!("redis-server not installed: interop test skipped");
            None
        }
    }
}

fn info(srv: &Server, field: &str) -> String {
    srv.raw().info_field("persistence", field)
}

fn wait_until(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn dump_path(srv: &Server) -> PathBuf {
    srv.dir.path().join("dump.rdb")
}

/// Compares two snapshots key by key with a readable failure.
fn assert_same(a: &Snapshot, b: &Snapshot, what: &str) {
    for (k, v) in a {
        match b.get(k) {
            None => panic!(
                "{what}: key {:?} missing",
                (k.0, String::from_utf8_lossy(&k.1))
            ),
            Some(w) => {
                if v != w {
                    let short = |s: &KeyState| {
                        format!(
                            "{} {} ttl {} {} items, first {:?}",
                            s.ty,
                            s.enc,
                            s.ttl,
                            s.data.len(),
                            s.data
                                .first()
                                .map(|x| String::from_utf8_lossy(x).into_owned())
                        )
                    };
                    panic!(
                        "{what}: key {:?} differs:\n  {}\n  {}",
                        (k.0, String::from_utf8_lossy(&k.1)),
                        short(v),
                        short(w)
                    );
                }
            }
        }
    }
    assert_eq!(a.len(), b.len(), "{what}: key counts differ");
}

/// Starts ferrokv with its working directory at `dir` (loading its dump).
fn start_in(dir: &Path, extra: &[&str]) -> Server {
    let mut args = vec!["--dir", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    Server::start(&args)
}

// ------------------------------------------------------------ round trips

#[test]
fn every_type_survives_save_and_restart() {
    let srv = Server::start(&[]);
    let mut c = srv.client();
    populate(&mut c);
    let mut rng = Rng(seed());
    eprintln!("seed {}", rng.0);
    populate_random(&mut c, 300, || rng.next());
    let before = snapshot(&mut c);
    assert!(before.len() > 330);
    let mut r = srv.raw();
    assert_eq!(r.cmds("SAVE"), b"+OK\r\n");
    assert_eq!(info(&srv, "rdb_changes_since_last_save"), "0");
    assert_eq!(info(&srv, "rdb_saves"), "1");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(dump_path(&srv), dir.path().join("dump.rdb")).unwrap();
    let again = start_in(dir.path(), &[]);
    let after = snapshot(&mut again.client());
    assert_same(&before, &after, "after restart");
    assert_eq!(
        info(&again, "rdb_last_load_keys_loaded"),
        before.len().to_string()
    );
    // DEBUG RELOAD keeps everything too, with compression off as well.
    drop(again);
    let srv2 = start_in(dir.path(), &["--enable-debug-command", "yes"]);
    let mut r2 = srv2.raw();
    assert_eq!(r2.cmds("DEBUG RELOAD"), b"+OK\r\n");
    assert_same(&before, &snapshot(&mut srv2.client()), "after DEBUG RELOAD");
    assert_eq!(r2.cmds("CONFIG SET rdbcompression no"), b"+OK\r\n");
    assert_eq!(r2.cmds("DEBUG RELOAD"), b"+OK\r\n");
    assert_same(&before, &snapshot(&mut srv2.client()), "uncompressed");
    assert_eq!(
        r2.cmds("DEBUG RELOAD BOGUS"),
        b"-ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.\r\n"
    );
    // NOFLUSH without MERGE: duplicates are an error; with MERGE, fine.
    assert!(r2
        .cmds("DEBUG RELOAD NOSAVE NOFLUSH")
        .starts_with(b"-ERR Error trying to load"));
    assert_eq!(r2.cmds("DEBUG RELOAD NOSAVE NOFLUSH MERGE"), b"+OK\r\n");
    assert_same(&before, &snapshot(&mut srv2.client()), "merge");
}

#[test]
fn redis_dump_loads_into_ferrokv() {
    let Some(redis) = redis_or_skip() else {
        return;
    };
    let mut rc = redis.client();
    populate(&mut rc);
    let mut rng = Rng(seed());
    eprintln!("seed {}", rng.0);
    populate_random(&mut rc, 300, || rng.next());
    // Small quicklist nodes and a list with plain-sized elements, as
    // redis-server writes them.
    run(
        &mut rc,
        &[b"CONFIG", b"SET", b"list-max-listpack-size", b"3"],
    );
    let mut args: Vec<Vec<u8>> = vec![b"RPUSH".to_vec(), b"l:nodes".to_vec()];
    args.extend((0..50).map(|i| i.to_string().into_bytes()));
    let a: Vec<&[u8]> = args.iter().map(|x| x.as_slice()).collect();
    run(&mut rc, &a);
    run(
        &mut rc,
        &[b"CONFIG", b"SET", b"list-max-listpack-size", b"-2"],
    );
    // Keys already expired when ferrokv loads the file are skipped.
    run(&mut rc, &[b"DEBUG", b"SET-ACTIVE-EXPIRE", b"0"]);
    for i in 0..20 {
        run(
            &mut rc,
            &[b"SET", format!("gone:{i}").as_bytes(), b"x", b"PX", b"30"],
        );
    }
    std::thread::sleep(Duration::from_millis(60));
    run(&mut rc, &[b"SAVE"]);
    let mut want = snapshot(&mut rc);
    want.retain(|k, _| !k.1.starts_with(b"gone:"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(dump_path(&redis), dir.path().join("dump.rdb")).unwrap();
    let ours = start_in(dir.path(), &[]);
    let got = snapshot(&mut ours.client());
    assert_same(&want, &got, "redis dump in ferrokv");
    assert_eq!(info(&ours, "rdb_last_load_keys_expired"), "20");
}

#[test]
fn ferrokv_dump_loads_into_redis_and_passes_check() {
    let Some(redis) = redis_or_skip() else {
        return;
    };
    drop(redis);
    let srv = Server::start(&[]);
    let mut c = srv.client();
    populate(&mut c);
    let mut rng = Rng(seed());
    eprintln!("seed {}", rng.0);
    populate_random(&mut c, 300, || rng.next());
    let want = snapshot(&mut c);
    for compression in ["yes", "no"] {
        let mut r = srv.raw();
        r.cmd(&[b"CONFIG", b"SET", b"rdbcompression", compression.as_bytes()]);
        assert_eq!(r.cmds("BGSAVE"), b"+Background saving started\r\n");
        assert!(wait_until(20, || info(&srv, "rdb_bgsave_in_progress") == "0"));
        assert_eq!(info(&srv, "rdb_last_bgsave_status"), "ok");
        if let Some(check) = which("redis-check-rdb") {
            let out = Command::new(check).arg(dump_path(&srv)).output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("RDB looks OK"), "redis-check-rdb:\n{text}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(dump_path(&srv), dir.path().join("dump.rdb")).unwrap();
        let redis = Server::start_redis(&["--dir", dir.path().to_str().unwrap()]).unwrap();
        let got = snapshot(&mut redis.client());
        assert_same(&want, &got, "ferrokv dump in redis-server");
    }
}

// ------------------------------------------------------- bad files refused

#[test]
fn truncated_and_corrupted_files_stop_the_start() {
    let srv = Server::start(&[]);
    let mut c = srv.client();
    populate(&mut c);
    assert_eq!(srv.raw().cmds("SAVE"), b"+OK\r\n");
    let good = std::fs::read(dump_path(&srv)).unwrap();
    drop(srv);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dump.rdb");
    let name = file.display().to_string();
    let mut cases: Vec<(String, Vec<u8>, &str)> = Vec::new();
    for cut in [
        0usize,
        5,
        9,
        40,
        good.len() / 3,
        good.len() / 2,
        good.len() - 9,
        good.len() - 1,
    ] {
        cases.push((
            format!("truncated at {cut}"),
            good[..cut].to_vec(),
            "truncated",
        ));
    }
    let mut bad_crc = good.clone();
    let n = bad_crc.len();
    bad_crc[n - 8..].copy_from_slice(b"foobar00");
    cases.push(("checksum".into(), bad_crc, "CRC error"));
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x55;
    cases.push(("flipped byte".into(), flipped, "loading the DB"));
    cases.push((
        "garbage".into(),
        b"hello world, not an rdb".to_vec(),
        "Wrong signature",
    ));
    let mut future = good.clone();
    future[5..9].copy_from_slice(b"0099");
    cases.push((
        "version".into(),
        future,
        "Can't handle RDB format version 99",
    ));
    // A malformed stream value (type 15, a node key that is not a 16-byte
    // id) is refused with the key named.
    let mut stream = b"REDIS0010".to_vec();
    stream.extend_from_slice(&[0xFE, 0, 15, 3, b's', b't', b'r', 1, 3, b'a', b'b', b'c']);
    cases.push((
        "stream".into(),
        stream,
        "Stream node key entry is not the size of a stream ID (key 'str')",
    ));
    // A huge declared length must not allocate: 64-bit length of 2^60.
    let mut huge = b"REDIS0010".to_vec();
    huge.extend_from_slice(&[0xFE, 0, 0, 1, b'k', 0x81]);
    huge.extend_from_slice(&(1u64 << 60).to_be_bytes());
    cases.push(("huge length".into(), huge, "out of range"));
    // The same key twice (the second 20 keys later, past the keys a load
    // reads ahead), after a RESIZEDB hint claiming 2^60 keys (honoured
    // only up to a bound: no huge table). EOF, then a zero checksum.
    let mut dup = b"REDIS0010".to_vec();
    dup.extend_from_slice(&[0xFE, 0, 0xFB, 0x81]);
    dup.extend_from_slice(&(1u64 << 60).to_be_bytes());
    dup.push(0);
    for i in 0..22u8 {
        let k = if i == 21 { b'a' } else { b'a' + i };
        dup.extend_from_slice(&[0, 1, k, 1, b'v']);
    }
    dup.push(0xFF);
    dup.extend_from_slice(&[0u8; 8]);
    cases.push((
        "duplicate key".into(),
        dup,
        "Duplicate key 'a' found in RDB file (database 0)",
    ));
    // A duplicate then a truncation within the keys a load reads ahead:
    // the duplicate, first in the file, is the error reported (at the
    // offset of its record), as Redis reports it.
    let mut dup_cut = b"REDIS0010".to_vec();
    dup_cut.extend_from_slice(&[0xFE, 0, 0, 1, b'a', 1, b'1', 0, 1, b'a', 1, b'2', 0, 1]);
    cases.push((
        "duplicate then truncated".into(),
        dup_cut,
        "Duplicate key 'a' found in RDB file (database 0) (at byte offset 16)",
    ));
    for (what, bytes, needle) in cases {
        std::fs::write(&file, &bytes).unwrap();
        let err = common::start_fails(&["--dir", dir.path().to_str().unwrap()], None);
        assert!(
            err.contains(&name),
            "{what}: error does not name the file:\n{err}"
        );
        assert!(
            err.contains(needle),
            "{what}: expected {needle:?} in:\n{err}"
        );
        assert!(!err.contains("panicked"), "{what}: panic:\n{err}");
    }
    // A file saved with rdbchecksum no (CRC 0) loads.
    let srv = Server::start(&["--rdbchecksum", "no"]);
    run(&mut srv.client(), &[b"SET", b"k", b"v"]);
    assert_eq!(srv.raw().cmds("SAVE"), b"+OK\r\n");
    let bytes = std::fs::read(dump_path(&srv)).unwrap();
    assert_eq!(&bytes[bytes.len() - 8..], &[0u8; 8]);
    std::fs::write(&file, &bytes).unwrap();
    let again = start_in(dir.path(), &[]);
    assert_eq!(again.raw().cmds("GET k"), b"$1\r\nv\r\n");
}

#[test]
fn every_corruption_of_a_small_file_is_an_error_never_a_panic() {
    let srv = Server::start(&["--enable-debug-command", "yes"]);
    let mut c = srv.client();
    run(&mut c, &[b"RPUSH", b"l", b"a", b"1", b"bb"]);
    run(&mut c, &[b"HSET", b"h", b"f", b"v"]);
    run(&mut c, &[b"ZADD", b"z", b"1.5", b"m"]);
    run(&mut c, &[b"SADD", b"s", b"1", b"2"]);
    run(&mut c, &[b"SET", b"str", &b"x".repeat(30)]);
    let mut r = srv.raw();
    assert_eq!(r.cmds("CONFIG SET rdbchecksum no"), b"-ERR CONFIG SET failed (possibly related to argument 'rdbchecksum') - can't set immutable config\r\n");
    assert_eq!(r.cmds("SAVE"), b"+OK\r\n");
    let good = std::fs::read(dump_path(&srv)).unwrap();
    // Every single-byte change with the checksum zeroed (so the parser
    // itself must cope): the server answers (loads or refuses), never dies.
    let mut changed = good.clone();
    let n = changed.len();
    changed[n - 8..].copy_from_slice(&[0; 8]);
    for i in 9..n - 9 {
        for x in [0x00u8, 0xff, 0x7f, 0x80, 0x41] {
            let mut b = changed.clone();
            b[i] = x;
            std::fs::write(dump_path(&srv), &b).unwrap();
            let rep = r.cmds("DEBUG RELOAD NOSAVE");
            assert!(
                rep == b"+OK\r\n" || rep.starts_with(b"-ERR Error trying to load"),
                "byte {i} = {x:#x}: {}",
                String::from_utf8_lossy(&rep)
            );
        }
    }
    assert_eq!(r.cmds("PING"), b"+PONG\r\n");
}

// ------------------------------------------------------------ BGSAVE & co

#[test]
fn bgsave_serves_clients_and_reports_progress() {
    let srv = Server::start(&["--save", ""]);
    let mut c = srv.client();
    for i in 0..2000 {
        run(&mut c, &[b"SET", format!("k{i}").as_bytes(), b"v"]);
    }
    assert_eq!(info(&srv, "rdb_changes_since_last_save"), "2000");
    let mut r = srv.raw();
    assert_eq!(r.cmds("BGSAVE x"), b"-ERR syntax error\r\n");
    // 2000 keys at 1 ms each: about 2 s of saving.
    assert_eq!(r.cmds("CONFIG SET rdb-key-save-delay 1000"), b"+OK\r\n");
    let ls0 = r.cmds("LASTSAVE");
    assert_eq!(r.cmds("BGSAVE"), b"+Background saving started\r\n");
    assert_eq!(info(&srv, "rdb_bgsave_in_progress"), "1");
    assert_eq!(
        r.cmds("BGSAVE"),
        b"-ERR Background save already in progress\r\n"
    );
    assert_eq!(
        r.cmds("BGSAVE SCHEDULE"),
        b"-ERR Background save already in progress\r\n"
    );
    assert_eq!(
        r.cmds("SAVE"),
        b"-ERR Background save already in progress\r\n"
    );
    // Clients keep being served, writes included, quickly.
    let t = Instant::now();
    for i in 0..200 {
        assert_eq!(
            r.cmd(&[b"SET", format!("k{i}").as_bytes(), b"w"]),
            b"+OK\r\n"
        );
        assert_eq!(r.cmd(&[b"GET", format!("k{i}").as_bytes()]), b"$1\r\nw\r\n");
    }
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(info(&srv, "rdb_bgsave_in_progress"), "1");
    let total: u64 = info(&srv, "current_save_keys_total").parse().unwrap();
    assert_eq!(total, 2000);
    assert!(wait_until(30, || info(&srv, "rdb_bgsave_in_progress") == "0"));
    assert_eq!(info(&srv, "rdb_last_bgsave_status"), "ok");
    assert_eq!(info(&srv, "rdb_saves"), "1");
    // Changes made during the save stay counted.
    assert_eq!(info(&srv, "rdb_changes_since_last_save"), "200");
    assert!(
        info(&srv, "rdb_last_bgsave_time_sec")
            .parse::<i64>()
            .unwrap()
            >= 1
    );
    assert_eq!(info(&srv, "rdb_current_bgsave_time_sec"), "-1");
    assert!(r.cmds("LASTSAVE") >= ls0);
    assert!(dump_path(&srv).exists());
}

#[test]
fn flushall_aborts_bgsave() {
    let srv = Server::start(&["--save", ""]);
    let mut c = srv.client();
    for i in 0..3000 {
        run(&mut c, &[b"SET", format!("k{i}").as_bytes(), b"v"]);
    }
    let mut r = srv.raw();
    r.cmds("CONFIG SET rdb-key-save-delay 1000");
    assert_eq!(r.cmds("BGSAVE"), b"+Background saving started\r\n");
    assert_eq!(r.cmds("FLUSHALL"), b"+OK\r\n");
    assert!(wait_until(2, || info(&srv, "rdb_bgsave_in_progress") == "0"));
    let d: u64 = info(&srv, "rdb_changes_since_last_save").parse().unwrap();
    assert!(d > 999, "{d}");
    assert_eq!(info(&srv, "rdb_last_bgsave_status"), "ok");
    assert_eq!(r.cmds("SET x xx"), b"+OK\r\n");
    assert!(!dump_path(&srv).exists());
}

#[test]
fn save_points_trigger_a_background_save() {
    let srv = Server::start(&["--save", "1 2"]);
    let mut r = srv.raw();
    r.cmds("SET a 1");
    std::thread::sleep(Duration::from_millis(2300));
    assert_eq!(
        info(&srv, "rdb_saves"),
        "0",
        "one change is below the point"
    );
    r.cmds("SET b 2");
    assert!(wait_until(5, || info(&srv, "rdb_saves") == "1"));
    assert_eq!(info(&srv, "rdb_changes_since_last_save"), "0");
    assert!(dump_path(&srv).exists());
    // save "" turns save points off.
    assert_eq!(r.cmd(&[b"CONFIG", b"SET", b"save", b""]), b"+OK\r\n");
    r.cmds("SET c 3");
    r.cmds("SET d 4");
    std::thread::sleep(Duration::from_millis(2300));
    assert_eq!(info(&srv, "rdb_saves"), "1");
}

#[test]
fn failed_bgsave_denies_writes_with_misconf() {
    let srv = Server::start(&["--save", "900 1", "--enable-protected-configs", "yes"]);
    let mut r = srv.raw();
    r.cmds("SET x x");
    let gone = tempfile::tempdir().unwrap();
    let p = gone.path().to_str().unwrap().to_string();
    assert_eq!(
        r.cmd(&[b"CONFIG", b"SET", b"dir", p.as_bytes()]),
        b"+OK\r\n"
    );
    drop(gone); // the directory disappears: the save cannot create its file
    assert_eq!(r.cmds("BGSAVE"), b"+Background saving started\r\n");
    assert!(wait_until(5, || info(&srv, "rdb_bgsave_in_progress") == "0"));
    assert_eq!(info(&srv, "rdb_last_bgsave_status"), "err");
    assert_eq!(r.cmds("GET x"), b"$1\r\nx\r\n");
    let e = r.cmds("SET x y");
    assert!(
        e.starts_with(b"-MISCONF Redis is configured to save RDB snapshots"),
        "{}",
        String::from_utf8_lossy(&e)
    );
    assert!(r.cmds("PING").starts_with(b"-MISCONF"));
    assert_eq!(r.cmds("SAVE"), b"-ERR\r\n");
    // Writes come back once saving works again, or the check is off.
    assert_eq!(
        r.cmds("CONFIG SET stop-writes-on-bgsave-error no"),
        b"+OK\r\n"
    );
    assert_eq!(r.cmds("SET x y"), b"+OK\r\n");
    assert_eq!(
        r.cmds("CONFIG SET stop-writes-on-bgsave-error yes"),
        b"+OK\r\n"
    );
    assert!(r.cmds("SET x z").starts_with(b"-MISCONF"));
    let d = srv.dir.path().to_str().unwrap().to_string();
    assert_eq!(
        r.cmd(&[b"CONFIG", b"SET", b"dir", d.as_bytes()]),
        b"+OK\r\n"
    );
    assert_eq!(r.cmds("BGSAVE"), b"+Background saving started\r\n");
    assert!(wait_until(5, || info(&srv, "rdb_bgsave_in_progress") == "0"));
    assert_eq!(info(&srv, "rdb_last_bgsave_status"), "ok");
    assert_eq!(r.cmds("SET x y"), b"+OK\r\n");
    assert_eq!(
        r.cmds("CONFIG SET dir /nonexistent/ferrokv"),
        b"-ERR CONFIG SET failed (possibly related to argument 'dir') - No such file or directory\r\n"
    );
    assert_eq!(
        r.cmds("CONFIG SET dbfilename a/b.rdb"),
        b"-ERR CONFIG SET failed (possibly related to argument 'dbfilename') - dbfilename can't be a path, just a filename\r\n"
    );
}

#[test]
fn shutdown_saves_as_redis() {
    // SHUTDOWN SAVE saves even without save points.
    let mut srv = Server::start(&["--save", ""]);
    srv.raw().cmds("SET a 1");
    let mut r = srv.raw();
    r.send_cmd(&[b"SHUTDOWN", b"SAVE"]);
    assert!(srv.wait_exit(10).expect("exits").success());
    let again = start_in(srv.dir.path(), &["--save", ""]);
    assert_eq!(again.raw().cmds("GET a"), b"$1\r\n1\r\n");
    // With save points, a plain SHUTDOWN saves; NOSAVE does not.
    let mut s2 = start_in(srv.dir.path(), &["--save", "3600 1"]);
    drop(again);
    s2.raw().cmds("SET b 2");
    s2.raw().send_cmd(&[b"SHUTDOWN"]);
    assert!(s2.wait_exit(10).unwrap().success());
    let mut s3 = start_in(srv.dir.path(), &["--save", "3600 1"]);
    assert_eq!(s3.raw().cmds("GET b"), b"$1\r\n2\r\n");
    s3.raw().cmds("SET c 3");
    s3.raw().send_cmd(&[b"SHUTDOWN", b"NOSAVE"]);
    assert!(s3.wait_exit(10).unwrap().success());
    // SIGTERM saves when save points are configured.
    let mut s4 = start_in(srv.dir.path(), &["--save", "3600 1"]);
    assert_eq!(s4.raw().cmds("GET c"), b"$-1\r\n");
    s4.raw().cmds("SET d 4");
    unsafe_kill_term(s4.pid());
    assert!(s4.wait_exit(10).unwrap().success());
    let s5 = start_in(srv.dir.path(), &["--save", ""]);
    assert_eq!(s5.raw().cmds("GET d"), b"$1\r\n4\r\n");
    // LASTSAVE is the time of that save.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let ls = String::from_utf8(s5.raw().cmds("LASTSAVE")).unwrap();
    let ls: u64 = ls.trim_start_matches(':').trim().parse().unwrap();
    assert!(ls <= now && ls + 30 >= now);
}

fn unsafe_kill_term(pid: u32) {
    let st = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

/// DEBUG RELOAD holds every other client back while it saves, empties and
/// loads (as Redis's single thread does): writers on another I/O thread
/// neither lose the dataset nor make the load see a duplicate key.
#[test]
fn debug_reload_under_concurrent_writes() {
    let srv = Server::start(&["--io-threads", "2", "--enable-debug-command", "yes"]);
    let mut c = srv.raw();
    let mut pipe = Vec::new();
    for i in 0..20_000 {
        let k = format!("key:{i}");
        pipe.extend_from_slice(&encode(&[b"SET", k.as_bytes(), b"v"]));
    }
    c.send(&pipe);
    for _ in 0..20_000 {
        assert_eq!(c.reply(), b"+OK\r\n");
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let stop = stop.clone();
            let mut wc = srv.raw();
            std::thread::spawn(move || {
                let mut i = w;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let k = format!("key:{}", i % 20_000);
                    assert_eq!(wc.cmd(&[b"SET", k.as_bytes(), b"w"]), b"+OK\r\n");
                    i += 7;
                }
            })
        })
        .collect();
    for round in 0..5 {
        assert_eq!(c.cmds("DEBUG RELOAD"), b"+OK\r\n", "round {round}");
        assert_eq!(c.cmds("DBSIZE"), b":20000\r\n", "round {round}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
}

/// FLUSHALL with save points saves at once, and the change counter is 0
/// afterwards (other.tcl "FLUSHALL should reset the dirty counter to 0 if
/// we enable save"); without save points it counts the removed keys plus
/// one. INFO `rdb_changes_since_last_save` as redis-server 7.0's.
#[test]
fn flushall_change_counter_as_redis() {
    let Some(mut p) = Pair::start() else { return };
    let steps: [&[&str]; 10] = [
        &["CONFIG", "SET", "save", ""],
        &["FLUSHALL"],
        &["SET", "a", "1"],
        &["SET", "b", "2"],
        &["FLUSHALL"],
        &["CONFIG", "SET", "save", "3600 1 300 100"],
        &["SET", "key", "value"],
        &["FLUSHALL"],
        &["SET", "key", "value"],
        &["CONFIG", "SET", "save", ""],
    ];
    for step in steps {
        let args: Vec<&[u8]> = step.iter().map(|a| a.as_bytes()).collect();
        p.check(&args);
        let ours = p.a.info_field("persistence", "rdb_changes_since_last_save");
        let redis = p.b.info_field("persistence", "rdb_changes_since_last_save");
        assert_eq!(ours, redis, "after {step:?}");
    }
}

/// BGREWRITEAOF inside MULTI, or while a BGSAVE runs, is scheduled ("...
/// rewriting scheduled", INFO `aof_rewrite_scheduled` 1) and started by
/// the cron once the BGSAVE is over; CONFIG SET appendonly yes inside
/// MULTI likewise; INFO `total_forks` counts the background saves and
/// rewrites (multi.tcl "MULTI with BGREWRITEAOF", aofrw.tcl "BGREWRITEAOF
/// is delayed if BGSAVE is in progress"). Same assertions on redis-server.
#[test]
fn bgrewriteaof_is_scheduled_as_redis() {
    let servers = [Some(Server::start(&[])), Server::start_redis(&[])];
    for s in servers.iter().flatten() {
        let mut c = Raw::connect(s.port);
        let mut num = |c: &mut Raw, f: &str| -> u64 {
            c.info_field("persistence", f).parse().unwrap_or(u64::MAX)
        };
        let forks = |c: &mut Raw| -> u64 { c.info_field("stats", "total_forks").parse().unwrap() };
        let settle = |c: &mut Raw, num: &mut dyn FnMut(&mut Raw, &str) -> u64| {
            let end = Instant::now() + Duration::from_secs(20);
            while num(c, "aof_rewrite_scheduled") != 0 || num(c, "aof_rewrite_in_progress") != 0 {
                assert!(Instant::now() < end, "the rewrite did not run");
                std::thread::sleep(Duration::from_millis(50));
            }
        };
        let f0 = forks(&mut c);
        c.cmds("MULTI");
        c.cmds("SET foo bar");
        c.cmds("BGREWRITEAOF");
        let r = String::from_utf8_lossy(&c.cmds("EXEC")).into_owned();
        assert!(
            r.contains("+Background append only file rewriting scheduled"),
            "{r:?}"
        );
        settle(&mut c, &mut num);
        assert_eq!(forks(&mut c), f0 + 1);
        c.cmds("CONFIG SET rdb-key-save-delay 200000");
        assert_eq!(c.cmds("BGSAVE"), b"+Background saving started\r\n");
        assert_eq!(
            c.cmds("BGREWRITEAOF"),
            b"+Background append only file rewriting scheduled\r\n"
        );
        assert_eq!(num(&mut c, "aof_rewrite_scheduled"), 1);
        c.cmds("CONFIG SET rdb-key-save-delay 0");
        settle(&mut c, &mut num);
        assert_eq!(forks(&mut c), f0 + 3);
        let end = Instant::now() + Duration::from_secs(20);
        while num(&mut c, "rdb_bgsave_in_progress") != 0 {
            assert!(Instant::now() < end);
            std::thread::sleep(Duration::from_millis(50));
        }
        c.cmds("MULTI");
        c.cmds("CONFIG SET appendonly yes");
        assert_eq!(c.cmds("EXEC"), b"*1\r\n+OK\r\n");
        settle(&mut c, &mut num);
        assert_eq!(num(&mut c, "aof_enabled"), 1);
        assert_eq!(forks(&mut c), f0 + 4);
    }
}
