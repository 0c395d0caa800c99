//! The append-only file end to end: round trips of every type and encoding
//! through restarts and rewrites, the exact records propagated, SIGKILL
//! crash tests (appendfsync always: no acknowledged write lost; everysec:
//! at most about a second), truncated and corrupted files, the legacy
//! single-file layout, CONFIG SET appendonly at run time, auto rewrite,
//! and interoperability with redis-server 7.0 and redis-check-aof.

mod common;

use common::{free_port, seed_from_env, which, Rng};
use redis::Connection;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ferrokv-server");

/// A server process started in a given directory (kept across restarts).
struct Proc {
    child: Child,
    port: u16,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut b = [0u8; 16];
    matches!(s.read(&mut b), Ok(n) if b[..n].starts_with(b"+PONG"))
}

fn spawn(bin: &str, dir: &Path, extra: &[&str]) -> Child {
    let port = free_port();
    spawn_on(bin, dir, port, extra)
}

fn spawn_on(bin: &str, dir: &Path, port: u16, extra: &[&str]) -> Child {
    Command::new(bin)
        .arg("--port")
        .arg(port.to_string())
        .arg("--dir")
        .arg(dir)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// Starts ferrokv in `dir` with the AOF on plus `extra`; waits for PING.
fn start(dir: &Path, extra: &[&str]) -> Proc {
    start_bin(BIN, dir, &[&["--appendonly", "yes"], extra].concat())
}

fn start_bin(bin: &str, dir: &Path, extra: &[&str]) -> Proc {
    for _ in 0..5 {
        let port = free_port();
        let mut child = spawn_on(bin, dir, port, extra);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            if ping(port) {
                // Drain output in the background so the pipes never fill.
                for r in [
                    child
                        .stdout
                        .take()
                        .map(|s| Box::new(s) as Box<dyn Read + Send>),
                    child
                        .stderr
                        .take()
                        .map(|s| Box::new(s) as Box<dyn Read + Send>),
                ]
                .into_iter()
                .flatten()
                {
                    std::thread::spawn(move || {
                        let mut r = r;
                        let mut sink = Vec::new();
                        let _ = r.read_to_end(&mut sink);
                    });
                }
                return Proc { child, port };
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("{bin} did not start in {}", dir.display());
}

/// Starts ferrokv expecting it to fail: returns (exit code, output).
fn start_failing(dir: &Path, extra: &[&str]) -> (i32, String) {
    let mut child = spawn(BIN, dir, &[&["--appendonly", "yes"], extra].concat());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            let mut out = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut out);
            }
            if let Some(mut o) = child.stdout.take() {
                let _ = o.read_to_string(&mut out);
            }
            return (st.code().unwrap_or(-1), out);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("server did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn conn(p: &Proc) -> Connection {
    redis::Client::open(format!("redis://127.0.0.1:{}/", p.port))
        .unwrap()
        .get_connection()
        .unwrap()
}

fn q<T: redis::FromRedisValue>(c: &mut Connection, args: &[&str]) -> T {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn info(c: &mut Connection, field: &str) -> String {
    let s: String = q(c, &["INFO", "persistence"]);
    s.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
        .unwrap_or_default()
}

fn wait_rewrite(c: &mut Connection) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while info(c, "aof_rewrite_in_progress") == "1" || info(c, "aof_rewrite_scheduled") == "1" {
        assert!(Instant::now() < deadline, "rewrite did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn shutdown(mut p: Proc) {
    let mut c = conn(&p);
    let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").query(&mut c);
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = p.child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = p.child.kill();
}

/// Every key of every database: type, encoding, content, absolute expiry.
fn dump(c: &mut Connection) -> BTreeMap<(u8, Vec<u8>), String> {
    let mut m = BTreeMap::new();
    for db in 0..16u8 {
        let _: () = q(c, &["SELECT", &db.to_string()]);
        let keys: Vec<Vec<u8>> = q(c, &["KEYS", "*"]);
        for k in keys {
            let ks = redis::cmd("TYPE").arg(&k).query::<String>(c).unwrap();
            let enc: String = redis::cmd("OBJECT")
                .arg("ENCODING")
                .arg(&k)
                .query(c)
                .unwrap();
            let val = match ks.as_str() {
                "string" => format!(
                    "{:?}",
                    redis::cmd("GET").arg(&k).query::<Vec<u8>>(c).unwrap()
                ),
                "list" => format!(
                    "{:?}",
                    redis::cmd("LRANGE")
                        .arg(&k)
                        .arg(0)
                        .arg(-1)
                        .query::<Vec<Vec<u8>>>(c)
                        .unwrap()
                ),
                "hash" => {
                    let mut v: Vec<(Vec<u8>, Vec<u8>)> =
                        redis::cmd("HGETALL").arg(&k).query(c).unwrap();
                    v.sort();
                    format!("{v:?}")
                }
                "set" => {
                    let mut v: Vec<Vec<u8>> = redis::cmd("SMEMBERS").arg(&k).query(c).unwrap();
                    v.sort();
                    format!("{v:?}")
                }
                "zset" => format!(
                    "{:?}",
                    redis::cmd("ZRANGE")
                        .arg(&k)
                        .arg(0)
                        .arg(-1)
                        .arg("WITHSCORES")
                        .query::<Vec<Vec<u8>>>(c)
                        .unwrap()
                ),
                t => panic!("type {t}"),
            };
            let at: i64 = redis::cmd("PEXPIRETIME").arg(&k).query(c).unwrap();
            m.insert((db, k), format!("{ks} {enc} {at} {val}"));
        }
    }
    let _: () = q(c, &["SELECT", "0"]);
    m
}

/// Asserts two dumps are equal, printing only the differing keys.
#[track_caller]
fn assert_same(
    got: &BTreeMap<(u8, Vec<u8>), String>,
    want: &BTreeMap<(u8, Vec<u8>), String>,
    what: &str,
) {
    let mut diffs = Vec::new();
    for (k, v) in want {
        match got.get(k) {
            Some(g) if g == v => {}
            g => diffs.push(format!(
                "{} {}: got {:.200} want {:.200}",
                k.0,
                String::from_utf8_lossy(&k.1),
                g.map(String::as_str).unwrap_or("(none)"),
                v
            )),
        }
    }
    for k in got.keys().filter(|k| !want.contains_key(*k)) {
        diffs.push(format!("{} {}: extra", k.0, String::from_utf8_lossy(&k.1)));
    }
    assert!(
        diffs.is_empty(),
        "{what}: {} differences:\n{}",
        diffs.len(),
        diffs[..diffs.len().min(10)].join("\n")
    );
}

/// The short strings `populate` builds with APPEND / SETRANGE are raw;
/// rewritten as SET they load as embstr (in Redis too).
fn rewritten_strings(m: &mut BTreeMap<(u8, Vec<u8>), String>) {
    for v in m.values_mut() {
        if v.starts_with("string raw -1 [0, 0") || v.starts_with("string raw -1 [97, 98") {
            *v = v.replacen("raw", "embstr", 1);
        }
    }
}

/// Builds values of every type and encoding, in several databases, some
/// with a TTL, with binary keys and values.
fn populate(c: &mut Connection, rng: &mut Rng) {
    let _: () = q(c, &["CONFIG", "SET", "list-max-listpack-size", "4"]);
    for db in [0u8, 3, 15] {
        let _: () = q(c, &["SELECT", &db.to_string()]);
        let _: () = q(c, &["SET", "int", "12345"]);
        let _: () = q(c, &["SET", "neg", "-9223372036854775808"]);
        let _: () = q(c, &["SET", "emb", "hello world"]);
        let big = "x".repeat(100);
        let _: () = q(c, &["SET", "raw", &big]);
        let _: () = redis::cmd("SET")
            .arg(b"bin\x00\r\nkey".as_slice())
            .arg(b"\x00\xff\r\n*3\r\n".as_slice())
            .query(c)
            .unwrap();
        let _: () = q(c, &["SET", "ttl", "v", "EX", "1000"]);
        let _: i64 = q(c, &["APPEND", "appended", "abc"]);
        let _: i64 = q(c, &["APPEND", "appended", "def"]);
        let _: i64 = q(c, &["INCRBY", "counter", "41"]);
        let _: String = q(c, &["INCRBYFLOAT", "float", "3.25"]);
        let _: i64 = q(c, &["SETRANGE", "range", "5", "xyz"]);
        let _: i64 = q(c, &["RPUSH", "smalllist", "a", "1", "b"]);
        for i in 0..300 {
            let _: i64 = q(
                c,
                &["RPUSH", "biglist", &format!("e{}", rng.below(1000) + i)],
            );
        }
        let _: i64 = q(c, &["LPUSH", "biglist", "head"]);
        let _: i64 = q(c, &["HSET", "smallhash", "f1", "v1", "f2", "2"]);
        for i in 0..600 {
            let _: i64 = q(
                c,
                &[
                    "HSET",
                    "bighash",
                    &format!("f{i}"),
                    &format!("v{}", rng.next()),
                ],
            );
        }
        let _: i64 = q(c, &["HSET", "longval", "f", &"y".repeat(100)]);
        let _: String = q(c, &["HINCRBYFLOAT", "smallhash", "fl", "1.5"]);
        let _: i64 = q(c, &["SADD", "intset", "1", "2", "-3", "100000"]);
        let _: i64 = q(c, &["SADD", "strset", "a", "b", "c"]);
        for i in 0..700 {
            let _: i64 = q(c, &["SADD", "bigintset", &i.to_string()]);
        }
        let _: i64 = q(
            c,
            &[
                "ZADD", "smallz", "1", "a", "2.5", "b", "-inf", "c", "inf", "d",
            ],
        );
        for i in 0..200 {
            let _: i64 = q(
                c,
                &[
                    "ZADD",
                    "bigz",
                    &format!("{}.125", rng.below(50)),
                    &format!("m{i}"),
                ],
            );
        }
        let _: f64 = q(c, &["ZINCRBY", "smallz", "0.1", "a"]);
        let _: i64 = q(c, &["EXPIRE", "bighash", "5000"]);
        let _: i64 = q(c, &["PEXPIREAT", "smalllist", "99999999999999"]);
    }
    let _: () = q(c, &["SELECT", "0"]);
}

#[test]
fn round_trip_every_type_and_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(7);
    let p = start(dir.path(), &["--appendfsync", "always"]);
    let mut c = conn(&p);
    populate(&mut c, &mut rng);
    let before = dump(&mut c);
    assert!(before.len() > 40, "{}", before.len());
    let encs: std::collections::BTreeSet<String> = before
        .values()
        .map(|v| v.split(' ').take(2).collect::<Vec<_>>().join(" "))
        .collect();
    for e in [
        "string int",
        "string embstr",
        "string raw",
        "list quicklist",
        "hash listpack",
        "hash hashtable",
        "set intset",
        "set hashtable",
        "zset listpack",
        "zset skiplist",
    ] {
        assert!(encs.contains(e), "missing {e} in {encs:?}");
    }
    // 1. Restart after SIGKILL: replays the incr file.
    drop(c);
    drop(p);
    let p = start(dir.path(), &["--list-max-listpack-size", "4"]);
    let mut c = conn(&p);
    assert_same(&dump(&mut c), &before, "after restart");
    // 2. Rewrite, restart: loads the new base.
    let r: String = q(&mut c, &["BGREWRITEAOF"]);
    assert_eq!(r, "Background append only file rewriting started");
    wait_rewrite(&mut c);
    assert_eq!(info(&mut c, "aof_rewrites"), "1");
    assert_eq!(info(&mut c, "aof_last_bgrewrite_status"), "ok");
    let files: Vec<String> = std::fs::read_dir(dir.path().join("appendonlydir"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files.len(), 3, "{files:?}");
    shutdown(p);
    let p = start(dir.path(), &["--list-max-listpack-size", "4"]);
    let mut c = conn(&p);
    // APPEND / SETRANGE made raw strings; rewritten as SET they load as
    // embstr (Redis behaves the same).
    let mut before = before;
    rewritten_strings(&mut before);
    assert_same(&dump(&mut c), &before, "after rewrite");
    // 3. More writes on top of the new base, SIGKILL, restart.
    let _: i64 = q(&mut c, &["RPUSH", "smalllist", "after"]);
    let _: i64 = q(&mut c, &["DEL", "int"]);
    let after = dump(&mut c);
    drop(c);
    drop(p);
    let p = start(dir.path(), &["--list-max-listpack-size", "4"]);
    let mut c = conn(&p);
    assert_same(&dump(&mut c), &after, "after restart");
    if let Some(check) = which("redis-check-aof") {
        let out = Command::new(check)
            .arg(dir.path().join("appendonlydir/appendonly.aof.manifest"))
            .output()
            .unwrap();
        let s = String::from_utf8_lossy(&out.stdout);
        assert!(s.contains("All AOF files and manifest are valid"), "{s}");
    }
}

fn incr_text(dir: &Path) -> String {
    let d = dir.join("appendonlydir");
    let m = std::fs::read_to_string(d.join("appendonly.aof.manifest")).unwrap();
    let last = m
        .lines()
        .rfind(|l| l.ends_with("type i"))
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .to_string();
    let b = std::fs::read(d.join(last)).unwrap();
    // One command per line: "SET k v".
    let mut out = String::new();
    let mut lines = b
        .split(|&c| c == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    while let Some(l) = lines.next() {
        if let Some(n) = l.strip_prefix(b"*") {
            let n: usize = std::str::from_utf8(n).unwrap().parse().unwrap();
            let mut args = Vec::new();
            for _ in 0..n {
                lines.next();
                args.push(String::from_utf8_lossy(lines.next().unwrap()).into_owned());
            }
            out.push_str(&args.join(" "));
            out.push('\n');
        }
    }
    out
}

/// RESTORE with a relative TTL is logged as Redis 7.0 propagates it (the
/// absolute time it became, with ABSTTL), so the key keeps its TTL across
/// a reload; an already-expired RESTORE ... REPLACE that deleted the old
/// key is logged as DEL. (Logged verbatim, the TTL was read relative to the
/// loader's clock and the key was lost.)
#[test]
fn restore_with_a_ttl_survives_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path(), &["--aof-use-rdb-preamble", "no"]);
    let mut c = conn(&p);
    let _: () = q(&mut c, &["SET", "a", "v"]);
    let payload: Vec<u8> = redis::cmd("DUMP").arg("a").query(&mut c).unwrap();
    let _: () = redis::cmd("RESTORE")
        .arg("k")
        .arg(600_000)
        .arg(&payload)
        .query(&mut c)
        .unwrap();
    let _: () = q(&mut c, &["SET", "gone", "x"]);
    let _: () = redis::cmd("RESTORE")
        .arg("gone")
        .arg(1_000)
        .arg(&payload)
        .arg("REPLACE")
        .arg("ABSTTL")
        .query(&mut c)
        .unwrap();
    // The incr file's raw bytes (the payload is binary).
    let mut raw = Vec::new();
    for e in std::fs::read_dir(dir.path().join("appendonlydir")).unwrap() {
        let path = e.unwrap().path();
        if path.to_string_lossy().ends_with(".incr.aof") {
            raw.extend(std::fs::read(path).unwrap());
        }
    }
    let has = |needle: &[u8]| raw.windows(needle.len()).any(|w| w == needle);
    assert!(
        has(b"$6\r\nABSTTL\r\n"),
        "{}",
        String::from_utf8_lossy(&raw)
    );
    assert!(
        !has(b"$6\r\n600000\r\n"),
        "{}",
        String::from_utf8_lossy(&raw)
    );
    assert!(has(b"*2\r\n$3\r\nDEL\r\n$4\r\ngone\r\n"));
    shutdown(p);
    let p = start(dir.path(), &[]);
    let mut c = conn(&p);
    let pttl: i64 = q(&mut c, &["PTTL", "k"]);
    assert!(
        (500_000..=600_000).contains(&pttl),
        "PTTL k after reload: {pttl}"
    );
    let v: String = q(&mut c, &["GET", "k"]);
    assert_eq!(v, "v");
    let n: i64 = q(&mut c, &["EXISTS", "gone"]);
    assert_eq!(n, 0);
    shutdown(p);
}

/// The records written for each kind of command (Redis 7.0's
/// propagation: absolute expiry, SET KEEPTTL for INCRBYFLOAT, SREM for
/// SPOP, non-blocking forms of served blocking pops, nothing for commands
/// that changed nothing, SELECT on database changes).
#[test]
fn propagated_records() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path(), &["--appendfsync", "always"]);
    let mut c = conn(&p);
    let _: () = q(&mut c, &["SET", "a", "1"]);
    let _: i64 = q(&mut c, &["EXPIRE", "a", "100"]);
    let _: i64 = q(&mut c, &["EXPIRE", "missing", "100"]);
    let _: () = q(&mut c, &["SETEX", "b", "100", "x"]);
    let _: () = q(&mut c, &["SET", "c", "v", "PX", "100000", "NX"]);
    let _: Option<String> = q(&mut c, &["SET", "c", "w", "NX"]);
    let _: String = q(&mut c, &["INCRBYFLOAT", "f", "1.5"]);
    let _: String = q(&mut c, &["HINCRBYFLOAT", "h", "x", "2"]);
    let _: i64 = q(&mut c, &["SADD", "s", "m"]);
    let _: i64 = q(&mut c, &["SADD", "s", "m"]);
    let _: String = q(&mut c, &["SPOP", "s"]);
    let _: i64 = q(&mut c, &["DEL", "nokey"]);
    let _: Option<String> = q(&mut c, &["LPOP", "nolist"]);
    let _: () = q(&mut c, &["SELECT", "2"]);
    let _: () = q(&mut c, &["SET", "x", "y"]);
    let _: () = q(&mut c, &["SELECT", "0"]);
    let _: Option<String> = q(&mut c, &["GETEX", "a", "PERSIST"]);
    let _: Option<String> = q(&mut c, &["GETDEL", "a"]);
    let _: i64 = q(&mut c, &["EXPIRE", "b", "-1"]);
    let _: Option<String> = q(&mut c, &["GET", "nothing"]);
    let _: i64 = q(&mut c, &["RPUSH", "l", "e1"]);
    let _: Vec<String> = q(&mut c, &["BLPOP", "l", "0"]);
    // A blocked client served by another connection's push.
    let mut waiter = conn(&p);
    let port = p.port;
    let t = std::thread::spawn(move || {
        let v: Vec<String> = q(&mut waiter, &["BRPOP", "q", "5"]);
        let _ = port;
        v
    });
    let mut raw = common::Raw::connect(p.port);
    raw.wait_blocked(1);
    let _: i64 = q(&mut c, &["LPUSH", "q", "item"]);
    assert_eq!(t.join().unwrap(), ["q", "item"]);
    let text = incr_text(dir.path());
    let lines: Vec<&str> = text.lines().collect();
    let mut want = vec![
        "SELECT 0".to_string(),
        "SET a 1".into(),
        "PEXPIREAT a ".into(),
        "SET b x PXAT ".into(),
        "SET c v PXAT ".into(),
        "SET f 1.5 KEEPTTL".into(),
        "HSET h x 2".into(),
        "SADD s m".into(),
        "SREM s m".into(),
        "SELECT 2".into(),
        "SET x y".into(),
        "SELECT 0".into(),
        "PERSIST a".into(),
        "DEL a".into(),
        "DEL b".into(),
        "RPUSH l e1".into(),
        "LPOP l".into(),
    ];
    // A push that serves a blocked client: the push, then the client's
    // pop, each its own unit without MULTI (Redis 7.0's
    // handleClientsBlockedOnKeys propagates per served client).
    want.push("LPUSH q item".into());
    want.push("RPOP q".into());
    assert_eq!(lines.len(), want.len(), "{text}");
    for (l, w) in lines.iter().zip(&want) {
        assert!(
            l.to_ascii_uppercase().starts_with(&w.to_ascii_uppercase()),
            "{l:?} vs {w:?} in\n{text}"
        );
    }
    // The absolute time is 100 s ahead of now.
    let at: u64 = lines[2].split(' ').nth(2).unwrap().parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(at > now + 90_000 && at <= now + 100_000, "{at} {now}");
}

/// Keys deleted by expiry are logged as DEL, in order with later writes:
/// a key that expired and was re-created replays to the new value only.
/// A read that meets an expired key deletes it and logs the DEL on its
/// own (Redis's lazy expiry); inside a write command the DEL and the
/// command are one unit (Redis 7.0 wraps them in MULTI/EXEC); the active
/// cycle logs the keys it deletes.
#[test]
fn expiry_is_logged_as_del() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(
        dir.path(),
        &[
            "--appendfsync",
            "always",
            "--hz",
            "100",
            "--enable-debug-command",
            "yes",
        ],
    );
    let mut c = conn(&p);
    let _: () = q(&mut c, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let _: i64 = q(&mut c, &["RPUSH", "lazy", "old"]);
    let _: i64 = q(&mut c, &["PEXPIRE", "lazy", "50"]);
    let _: i64 = q(&mut c, &["RPUSH", "read", "old"]);
    let _: i64 = q(&mut c, &["PEXPIRE", "read", "50"]);
    let _: () = q(&mut c, &["SET", "active", "v", "PX", "50"]);
    std::thread::sleep(Duration::from_millis(200));
    // A read deletes the key and logs the DEL alone.
    let n: i64 = q(&mut c, &["EXISTS", "read"]);
    assert_eq!(n, 0);
    let text = incr_text(dir.path());
    assert!(text.ends_with("\nDEL read\n"), "{text}");
    assert!(!text.contains("MULTI"), "{text}");
    // Lazy expiry inside a write command: DEL then RPUSH, as one unit.
    let _: i64 = q(&mut c, &["RPUSH", "lazy", "new"]);
    let text = incr_text(dir.path());
    assert!(
        text.ends_with("DEL read\nMULTI\nDEL lazy\nRPUSH lazy new\nEXEC\n"),
        "{text}"
    );
    assert!(!text.contains("DEL active"), "{text}");
    // The active cycle deletes and logs the other one.
    let _: () = q(&mut c, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !incr_text(dir.path()).contains("DEL active") {
        assert!(Instant::now() < deadline, "active expiry not logged");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(c);
    drop(p);
    let p = start(dir.path(), &[]);
    let mut c = conn(&p);
    let v: Vec<String> = q(&mut c, &["LRANGE", "lazy", "0", "-1"]);
    assert_eq!(v, ["new"]);
    let n: i64 = q(&mut c, &["PTTL", "lazy"]);
    assert_eq!(n, -1);
    let n: i64 = q(&mut c, &["EXISTS", "read", "active"]);
    assert_eq!(n, 0);
}

/// The writer of the kill tests: SET/INCR/RPUSH on one connection,
/// recording what was acknowledged.
#[derive(Default, Clone)]
struct Acked {
    sets: Vec<(String, String)>,
    incr: i64,
    pushed: Vec<String>,
    times: Vec<(Instant, usize)>,
}

fn writer(port: u16, cycle: usize, acked: Arc<Mutex<Acked>>, stop: Arc<AtomicBool>, seed: u64) {
    let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{port}/")) else {
        return;
    };
    let Ok(mut c) = client.get_connection() else {
        return;
    };
    let mut rng = Rng(seed);
    let mut i = 0usize;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let r = match rng.below(3) {
            0 => {
                let k = format!("k{cycle}:{i}");
                let v = format!("v{}", rng.next());
                redis::cmd("SET")
                    .arg(&k)
                    .arg(&v)
                    .query::<()>(&mut c)
                    .map(|_| {
                        acked.lock().unwrap().sets.push((k, v));
                    })
            }
            1 => redis::cmd("INCR")
                .arg("counter")
                .query::<i64>(&mut c)
                .map(|n| {
                    let mut a = acked.lock().unwrap();
                    a.incr = a.incr.max(n);
                }),
            _ => {
                let e = format!("{cycle}:{i}");
                redis::cmd("RPUSH")
                    .arg("list")
                    .arg(&e)
                    .query::<i64>(&mut c)
                    .map(|_| {
                        acked.lock().unwrap().pushed.push(e);
                    })
            }
        };
        if r.is_err() {
            return;
        }
        let mut a = acked.lock().unwrap();
        let n = a.sets.len() + a.pushed.len();
        a.times.push((Instant::now(), n));
    }
}

/// Runs `cycles` kill cycles in one directory: writers, SIGKILL at a
/// random moment, restart, check. Returns, per cycle, the number of
/// acknowledged SETs/RPUSHes missing after the restart and the time span
/// they cover.
fn kill_cycles(fsync: &str, cycles: usize, seed: u64) -> Vec<(usize, Duration)> {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(seed);
    let mut all = Acked::default();
    let mut losses = Vec::new();
    for cycle in 0..cycles {
        let p = start(dir.path(), &["--appendfsync", fsync]);
        let acked = Arc::new(Mutex::new(Acked::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut ws = Vec::new();
        for w in 0..3 {
            let (a, s, port) = (acked.clone(), stop.clone(), p.port);
            let sd = rng.next();
            ws.push(std::thread::spawn(move || {
                writer(port, cycle * 10 + w, a, s, sd)
            }));
        }
        std::thread::sleep(Duration::from_millis(50 + rng.below(400) as u64));
        let kill_at = Instant::now();
        drop(p); // SIGKILL
        stop.store(true, Ordering::Relaxed);
        for w in ws {
            w.join().unwrap();
        }
        let a = acked.lock().unwrap().clone();
        all.sets.extend(a.sets.iter().cloned());
        all.incr = all.incr.max(a.incr);
        let p = start(dir.path(), &["--appendfsync", fsync]);
        let mut c = conn(&p);
        // Every acknowledged SET of this cycle.
        let mut missing = Vec::new();
        for (k, v) in &a.sets {
            let got: Option<String> = q(&mut c, &["GET", k]);
            if got.as_deref() != Some(v.as_str()) {
                missing.push(k.clone());
            }
        }
        let list: Vec<String> = q(&mut c, &["LRANGE", "list", "0", "-1"]);
        let have: std::collections::HashSet<&String> = list.iter().collect();
        for e in &a.pushed {
            if !have.contains(e) {
                missing.push(e.clone());
            }
        }
        let counter: i64 = q::<Option<String>>(&mut c, &["GET", "counter"]).unwrap_or_default_i64();
        if counter < all.incr {
            missing.push(format!("counter {counter} < {}", all.incr));
        }
        // How long before the kill the oldest lost write was acknowledged.
        let span = if missing.is_empty() {
            Duration::ZERO
        } else {
            let total = a.sets.len() + a.pushed.len();
            let kept = total - missing.len().min(total);
            a.times
                .iter()
                .find(|(_, n)| *n > kept)
                .map(|(t, _)| kill_at.saturating_duration_since(*t))
                .unwrap_or_default()
        };
        if fsync == "always" {
            assert!(
                missing.is_empty(),
                "cycle {cycle} (seed {seed}): lost {missing:?}"
            );
        }
        losses.push((missing.len(), span));
        // Sometimes compact between cycles, so later cycles load a base.
        if rng.below(4) == 0 {
            let _: String = q(&mut c, &["BGREWRITEAOF"]);
            wait_rewrite(&mut c);
        }
        drop(c);
        drop(p);
    }
    // Everything acknowledged in earlier cycles survived too.
    let p = start(dir.path(), &[]);
    let mut c = conn(&p);
    if fsync == "always" {
        for (k, v) in &all.sets {
            let got: Option<String> = q(&mut c, &["GET", k]);
            assert_eq!(got.as_deref(), Some(v.as_str()), "{k}");
        }
    }
    losses
}

trait OrZero {
    fn unwrap_or_default_i64(self) -> i64;
}
impl OrZero for Option<String> {
    fn unwrap_or_default_i64(self) -> i64 {
        self.and_then(|s| s.parse().ok()).unwrap_or(0)
    }
}

fn seed() -> u64 {
    seed_from_env(20261130)
}

/// appendfsync always: SIGKILL during a write load never loses an
/// acknowledged write (FERROKV_AOF_KILL_CYCLES=n runs more cycles).
#[test]
fn kill_with_appendfsync_always_loses_nothing() {
    let cycles = std::env::var("FERROKV_AOF_KILL_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let losses = kill_cycles("always", cycles, seed());
    assert_eq!(losses.len(), cycles);
    eprintln!("kill cycles without a lost acknowledged write: {cycles}");
}

/// appendfsync everysec: at most about one second of acknowledged writes
/// is lost by a crash (with SIGKILL the page cache survives, so in
/// practice nothing is lost: records are written before replies).
#[test]
fn kill_with_appendfsync_everysec_loses_at_most_a_second() {
    for (n, span) in kill_cycles("everysec", 5, seed() ^ 1) {
        assert!(
            span <= Duration::from_millis(1500),
            "lost {n} writes over {span:?}"
        );
    }
}

fn write_dir(dir: &Path, files: &[(&str, &[u8])]) -> PathBuf {
    let d = dir.join("appendonlydir");
    std::fs::create_dir_all(&d).unwrap();
    for (n, b) in files {
        std::fs::write(d.join(n), b).unwrap();
    }
    d
}

const MANIFEST: &[u8] =
    b"file appendonly.aof.1.base.aof seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n";

fn resp(args: &[&str]) -> Vec<u8> {
    common::encode(&args.iter().map(|a| a.as_bytes()).collect::<Vec<_>>())
}

#[test]
fn truncated_tail_is_dropped_with_a_warning_or_refused() {
    let base = resp(&["SET", "foo", "hello"]);
    let mut incr = resp(&["SELECT", "0"]);
    incr.extend(resp(&["SET", "bar", "world"]));
    let good_len = incr.len();
    let tail = resp(&["SET", "baz", "lost"]);
    // Every possible cut inside the last command.
    for cut in [1, 3, 8, tail.len() - 1] {
        let dir = tempfile::tempdir().unwrap();
        let mut inc = incr.clone();
        inc.extend_from_slice(&tail[..cut]);
        write_dir(
            dir.path(),
            &[
                ("appendonly.aof.manifest", MANIFEST),
                ("appendonly.aof.1.base.aof", &base),
                ("appendonly.aof.1.incr.aof", &inc),
            ],
        );
        // aof-load-truncated no: refused, naming the file.
        let (code, out) = start_failing(dir.path(), &["--aof-load-truncated", "no"]);
        assert_eq!(code, 1, "{out}");
        assert!(
            out.contains(
                "Unexpected end of file reading the append only file appendonly.aof.1.incr.aof"
            ),
            "{out}"
        );
        // yes (the default): loaded, the tail dropped and the file cut.
        let p = start(dir.path(), &[]);
        let mut c = conn(&p);
        let v: Vec<Option<String>> = q(&mut c, &["MGET", "foo", "bar", "baz"]);
        assert_eq!(v, [Some("hello".into()), Some("world".into()), None]);
        let len = std::fs::metadata(dir.path().join("appendonlydir/appendonly.aof.1.incr.aof"))
            .unwrap()
            .len();
        assert_eq!(len as usize, good_len);
        // New writes append after the cut and load again.
        let _: () = q(&mut c, &["SET", "baz", "new"]);
        drop(c);
        drop(p);
        let p = start(dir.path(), &[]);
        let mut c = conn(&p);
        let v: Option<String> = q(&mut c, &["GET", "baz"]);
        assert_eq!(v.as_deref(), Some("new"));
    }
}

#[test]
fn unfinished_multi_is_reverted() {
    let dir = tempfile::tempdir().unwrap();
    let mut incr = resp(&["SET", "foo", "hello"]);
    incr.extend(resp(&["MULTI"]));
    incr.extend(resp(&["SET", "bar", "world"]));
    write_dir(
        dir.path(),
        &[
            (
                "appendonly.aof.manifest",
                b"file appendonly.aof.1.incr.aof seq 1 type i\n",
            ),
            ("appendonly.aof.1.incr.aof", &incr),
        ],
    );
    let (code, out) = start_failing(dir.path(), &["--aof-load-truncated", "no"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("Revert incomplete MULTI/EXEC transaction"),
        "{out}"
    );
    assert!(out.contains("Unexpected end of file"), "{out}");
    let p = start(dir.path(), &[]);
    let mut c = conn(&p);
    let v: Vec<Option<String>> = q(&mut c, &["MGET", "foo", "bar"]);
    assert_eq!(v, [Some("hello".into()), None]);
}

#[test]
fn corrupted_files_give_a_clear_error() {
    let good = resp(&["SET", "a", "1"]);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("garbage line", [good.clone(), b"hello\r\n".to_vec(), good.clone()].concat(), "Bad file format reading the append only file appendonly.aof.1.incr.aof at offset 27"),
        ("bad multibulk count", [good.clone(), b"*x\r\n".to_vec(), good.clone()].concat(), "at offset 27"),
        ("missing $", [good.clone(), b"*1\r\n+PING\r\n".to_vec(), good.clone()].concat(), "at offset 31"),
        ("bad bulk terminator", [good.clone(), b"*1\r\n$4\r\nPINGxx".to_vec(), good.clone()].concat(), "at offset 39"),
        ("unknown command", [good.clone(), resp(&["NOSUCHCMD", "x"]), good.clone()].concat(), "Unknown command 'NOSUCHCMD' reading the append only file appendonly.aof.1.incr.aof at offset 27"),
        ("wrong arity", [good.clone(), resp(&["GET"]), good.clone()].concat(), "wrong number of arguments"),
    ];
    for (what, incr, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        write_dir(
            dir.path(),
            &[
                (
                    "appendonly.aof.manifest",
                    b"file appendonly.aof.1.incr.aof seq 1 type i\n",
                ),
                ("appendonly.aof.1.incr.aof", &incr),
            ],
        );
        let (code, out) = start_failing(dir.path(), &[]);
        assert_eq!(code, 1, "{what}: {out}");
        assert!(out.contains(want), "{what}: want {want:?} in {out}");
    }
    // A truncated base (not the last file) is an error even with
    // aof-load-truncated yes.
    let dir = tempfile::tempdir().unwrap();
    write_dir(
        dir.path(),
        &[
            ("appendonly.aof.manifest", MANIFEST),
            ("appendonly.aof.1.base.aof", &good[..good.len() - 3]),
            ("appendonly.aof.1.incr.aof", &good),
        ],
    );
    let (code, out) = start_failing(dir.path(), &[]);
    assert_eq!(code, 1);
    assert!(
        out.contains("appendonly.aof.1.base.aof is not the last file"),
        "{out}"
    );
    // Manifest errors.
    for (m, want) in [
        (&b"file a seq 1\n"[..], "Invalid AOF manifest file format"),
        (
            b"file a.aof seq 2 type i\nfile b.aof seq 1 type i\n",
            "non-monotonic sequence number",
        ),
        (
            b"file x seq 1 type b\nfile y seq 2 type b\n",
            "duplicate base file",
        ),
        (
            b"file appendonly.aof.9.incr.aof seq 9 type i\n",
            "The AOF file appendonly.aof.9.incr.aof doesn't exist",
        ),
        (b"", "empty AOF manifest"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        write_dir(dir.path(), &[("appendonly.aof.manifest", m)]);
        let (code, out) = start_failing(dir.path(), &[]);
        assert_eq!(code, 1);
        assert!(out.contains(want), "want {want:?} in {out}");
    }
}

/// A Redis 6-style single appendonly.aof is loaded and moved into the
/// AOF directory as its base, as Redis 7.0 does.
#[test]
fn legacy_single_file_is_loaded_and_converted() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = resp(&["SELECT", "1"]);
    f.extend(resp(&["RPUSH", "l", "a", "b"]));
    f.extend(resp(&["EXPIREAT", "l", "1000"])); // long expired
    f.extend(resp(&["RPUSH", "l", "c"]));
    f.extend(resp(&["SADD", "s", "x", "y"]));
    f.extend(resp(&["SPOP", "s"]));
    std::fs::write(dir.path().join("appendonly.aof"), &f).unwrap();
    let p = start(dir.path(), &[]);
    let mut c = conn(&p);
    let _: () = q(&mut c, &["SELECT", "1"]);
    let n: i64 = q(&mut c, &["LLEN", "l"]);
    assert_eq!(n, 0);
    let n: i64 = q(&mut c, &["SCARD", "s"]);
    assert_eq!(n, 1);
    assert!(!dir.path().join("appendonly.aof").exists());
    let m =
        std::fs::read_to_string(dir.path().join("appendonlydir/appendonly.aof.manifest")).unwrap();
    assert!(m.starts_with("file appendonly.aof seq 1 type b\n"), "{m}");
    assert!(
        m.contains("file appendonly.aof.1.incr.aof seq 1 type i"),
        "{m}"
    );
    let _: () = q(&mut c, &["SELECT", "0"]);
    let _: () = q(&mut c, &["SET", "later", "1"]);
    drop(c);
    drop(p);
    let p = start(dir.path(), &[]);
    let mut c = conn(&p);
    let v: Option<String> = q(&mut c, &["GET", "later"]);
    assert_eq!(v.as_deref(), Some("1"));
}

/// CONFIG SET appendonly yes at run time writes a base of the current
/// dataset and logs from then on; no stops logging.
#[test]
fn config_set_appendonly_at_run_time() {
    let dir = tempfile::tempdir().unwrap();
    let p = start_bin(BIN, dir.path(), &[]);
    let mut c = conn(&p);
    assert_eq!(info(&mut c, "aof_enabled"), "0");
    let _: () = q(&mut c, &["SET", "before", "1"]);
    let _: () = q(&mut c, &["CONFIG", "SET", "appendonly", "yes"]);
    assert_eq!(info(&mut c, "aof_enabled"), "1");
    wait_rewrite(&mut c);
    let _: () = q(&mut c, &["SET", "during", "2"]);
    let v: Vec<String> = q(&mut c, &["CONFIG", "GET", "appendonly"]);
    assert_eq!(v, ["appendonly", "yes"]);
    let _: () = q(&mut c, &["CONFIG", "SET", "appendonly", "no"]);
    assert_eq!(info(&mut c, "aof_enabled"), "0");
    let _: () = q(&mut c, &["SET", "after", "3"]);
    drop(c);
    drop(p);
    let p = start(dir.path(), &[]);
    let mut c = conn(&p);
    let v: Vec<Option<String>> = q(&mut c, &["MGET", "before", "during", "after"]);
    assert_eq!(v, [Some("1".into()), Some("2".into()), None]);
}

/// BGREWRITEAOF while clients keep writing: nothing written during the
/// rewrite is lost or applied twice.
#[test]
fn rewrite_while_clients_write() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path(), &["--appendfsync", "everysec"]);
    let mut c = conn(&p);
    for i in 0..2000 {
        let _: () = q(&mut c, &["SET", &format!("pre{i}"), &"v".repeat(50)]);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut ws = Vec::new();
    for w in 0..3 {
        let (s, port) = (stop.clone(), p.port);
        ws.push(std::thread::spawn(move || {
            let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                .unwrap()
                .get_connection()
                .unwrap();
            let mut n = 0;
            while !s.load(Ordering::Relaxed) {
                let _: i64 = q(&mut c, &["RPUSH", &format!("l{w}"), &n.to_string()]);
                let _: i64 = q(&mut c, &["INCR", "shared"]);
                n += 1;
            }
            n
        }));
    }
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(100));
        let r: redis::RedisResult<String> = redis::cmd("BGREWRITEAOF").query(&mut c);
        if let Err(e) = r {
            assert!(e.to_string().contains("already in progress"), "{e}");
        }
        wait_rewrite(&mut c);
    }
    stop.store(true, Ordering::Relaxed);
    let counts: Vec<i64> = ws.into_iter().map(|w| w.join().unwrap()).collect();
    let before = dump(&mut c);
    shutdown(p);
    let p = start(dir.path(), &[]);
    let mut c = conn(&p);
    assert_same(&dump(&mut c), &before, "after restart");
    let shared: i64 = q::<Option<String>>(&mut c, &["GET", "shared"]).unwrap_or_default_i64();
    assert_eq!(shared, counts.iter().sum::<i64>());
    for (w, n) in counts.iter().enumerate() {
        let l: Vec<String> = q(&mut c, &["LRANGE", &format!("l{w}"), "0", "-1"]);
        let want: Vec<String> = (0..*n).map(|i| i.to_string()).collect();
        assert_eq!(l, want);
    }
}

#[test]
fn auto_rewrite_on_growth() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(
        dir.path(),
        &[
            "--auto-aof-rewrite-percentage",
            "100",
            "--auto-aof-rewrite-min-size",
            "10kb",
        ],
    );
    let mut c = conn(&p);
    for i in 0..400 {
        let _: () = q(&mut c, &["SET", "k", &format!("{i:0100}")]);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while info(&mut c, "aof_rewrites") == "0" {
        assert!(Instant::now() < deadline, "no automatic rewrite");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Once the writes stop, the AOF ends below the minimum size (the last
    // automatic rewrite compacts it to one SET).
    loop {
        wait_rewrite(&mut c);
        let size: u64 = info(&mut c, "aof_current_size").parse().unwrap();
        if size < 10 * 1024 {
            break;
        }
        assert!(Instant::now() < deadline, "{size}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let v: Option<String> = q(&mut c, &["GET", "k"]);
    assert_eq!(v, Some(format!("{:0100}", 399)));
}

#[test]
fn info_and_config() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path(), &[]);
    let mut c = conn(&p);
    for f in [
        "aof_enabled:1",
        "aof_rewrite_in_progress:0",
        "aof_rewrite_scheduled:0",
        "aof_last_bgrewrite_status:ok",
        "aof_last_write_status:ok",
        "aof_rewrites:0",
    ] {
        let (k, v) = f.split_once(':').unwrap();
        assert_eq!(info(&mut c, k), v, "{k}");
    }
    for (k, v) in [
        ("appendfsync", "everysec"),
        ("appendfilename", "appendonly.aof"),
        ("appenddirname", "appendonlydir"),
        ("aof-load-truncated", "yes"),
        ("aof-use-rdb-preamble", "yes"),
        ("auto-aof-rewrite-percentage", "100"),
        ("auto-aof-rewrite-min-size", "67108864"),
        ("no-appendfsync-on-rewrite", "no"),
    ] {
        let got: Vec<String> = q(&mut c, &["CONFIG", "GET", k]);
        assert_eq!(got, [k, v]);
    }
    let _: () = q(&mut c, &["CONFIG", "SET", "appendfsync", "always"]);
    let e: redis::RedisResult<()> = redis::cmd("CONFIG")
        .arg("SET")
        .arg("appendfsync")
        .arg("sometimes")
        .query(&mut c);
    assert!(e.is_err());
    let e: redis::RedisResult<()> = redis::cmd("CONFIG")
        .arg("SET")
        .arg("appenddirname")
        .arg("x")
        .query(&mut c);
    assert!(e.unwrap_err().to_string().contains("immutable"));
    let base: u64 = info(&mut c, "aof_base_size").parse().unwrap();
    let _: () = q(&mut c, &["SET", "k", "v"]);
    let cur: u64 = info(&mut c, "aof_current_size").parse().unwrap();
    assert!(cur > base, "{cur} {base}");
}

/// redis-server 7.0 loads an AOF directory written by ferrokv, and
/// ferrokv loads one written by redis-server (aof-use-rdb-preamble no and
/// yes: an RDB base file).
#[test]
fn interop_with_redis_server() {
    let Some(redis) = which("redis-server") else {
        assert!(
            std::env::var("FERROKV_REQUIRE_REDIS").is_err(),
            "redis-server missing"
        );
        eprintln!("redis-server not installed: skipped");
        return;
    };
    let mut rng = Rng(11);
    // ferrokv → redis (incr file only, then after a rewrite: base too).
    for rewrite in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let p = start(dir.path(), &["--list-max-listpack-size", "4"]);
        let mut c = conn(&p);
        populate(&mut c, &mut rng);
        if rewrite {
            let _: String = q(&mut c, &["BGREWRITEAOF"]);
            wait_rewrite(&mut c);
            let _: i64 = q(&mut c, &["RPUSH", "after", "x"]);
        }
        let mut want = dump(&mut c);
        shutdown(p);
        let r = start_bin(
            &redis,
            dir.path(),
            &[
                "--appendonly",
                "yes",
                "--aof-use-rdb-preamble",
                "no",
                "--save",
                "",
                "--list-max-listpack-size",
                "4",
            ],
        );
        let mut rc = conn(&r);
        let got = dump(&mut rc);
        // Encodings may legitimately differ after a reload (Redis
        // converts on its own thresholds): compare content and expiry.
        let strip = |m: &mut BTreeMap<(u8, Vec<u8>), String>| {
            for v in m.values_mut() {
                let mut parts: Vec<&str> = v.splitn(4, ' ').collect();
                parts.remove(1);
                *v = parts.join(" ");
            }
        };
        let mut got2 = got.clone();
        strip(&mut got2);
        strip(&mut want);
        assert_same(
            &got2,
            &want,
            &format!("ferrokv -> redis, rewrite={rewrite}"),
        );
        let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").arg("NOSAVE").query(&mut rc);
        drop(r);
    }
    // redis → ferrokv, with the base in command form and as RDB (Redis's
    // default).
    for preamble in ["no", "yes"] {
        let dir = tempfile::tempdir().unwrap();
        let r = start_bin(
            &redis,
            dir.path(),
            &[
                "--appendonly",
                "yes",
                "--aof-use-rdb-preamble",
                preamble,
                "--save",
                "",
                "--appendfsync",
                "always",
                "--list-max-listpack-size",
                "4",
            ],
        );
        let mut rc = conn(&r);
        populate(&mut rc, &mut rng);
        let _: Vec<String> = q(&mut rc, &["SPOP", "strset", "2"]);
        let _: String = q(&mut rc, &["BGREWRITEAOF"]);
        wait_rewrite(&mut rc);
        let _: i64 = q(&mut rc, &["RPUSH", "after", "x"]);
        let _: () = q(&mut rc, &["SETEX", "sx", "1000", "v"]);
        let mut want = dump(&mut rc);
        rewritten_strings(&mut want);
        let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").query(&mut rc);
        drop(r);
        let p = start(dir.path(), &["--list-max-listpack-size", "4"]);
        let mut c = conn(&p);
        assert_same(
            &dump(&mut c),
            &want,
            &format!("redis -> ferrokv, aof-use-rdb-preamble {preamble}"),
        );
    }
}

/// Writer `t` of a concurrent workload: its connection and its generator.
fn concurrent_writer(port: u16, t: u64) -> (Connection, Rng) {
    let c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    (c, Rng(seed() ^ (t + 1).wrapping_mul(0x9e37_79b9)))
}

/// A numeric field of INFO `section`.
fn info_u64(c: &mut Connection, section: &str, field: &str) -> u64 {
    let info: String = q(c, &["INFO", section]);
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("INFO {section} has {field}"))
        .trim()
        .parse()
        .unwrap()
}

/// Forgets string encodings, which the AOF does not keep (in Redis
/// neither): an INCRBYFLOAT result is embstr and its SET record loads as
/// int; APPEND makes raw strings.
fn forget_string_encodings(m: &mut BTreeMap<(u8, Vec<u8>), String>) {
    for v in m.values_mut() {
        if let Some(rest) = ["string int ", "string embstr ", "string raw "]
            .iter()
            .find_map(|p| v.strip_prefix(p))
        {
            *v = format!("string {rest}");
        }
    }
}

/// One random command of the concurrent workload: order-sensitive writes
/// on a few keys of every type, multi-key moves, moves and copies to
/// database 1 and SWAPDB 0 1, expiries (short ones
/// lapse during the run, so active and lazy expiry delete concurrently),
/// SPOP/INCRBYFLOAT (rewritten when propagated) and blocking pops.
fn concurrent_command(rng: &mut Rng) -> Vec<String> {
    let s = |rng: &mut Rng| format!("s{}", rng.below(6));
    let l = |rng: &mut Rng| format!("l{}", rng.below(4));
    let z = |rng: &mut Rng| format!("z{}", rng.below(3));
    let st = |rng: &mut Rng| format!("t{}", rng.below(3));
    let v = format!("{}", rng.below(1000));
    let c: Vec<String> = match rng.below(28) {
        0 => vec!["APPEND".into(), s(rng), v],
        1 => vec!["SET".into(), s(rng), v],
        2 => vec![
            "INCRBYFLOAT".into(),
            format!("f{}", rng.below(2)),
            "1.5".into(),
        ],
        3 => vec!["SETRANGE".into(), s(rng), rng.below(8).to_string(), v],
        4 => vec!["LPUSH".into(), l(rng), v],
        5 => vec!["RPUSH".into(), l(rng), v.clone(), v],
        6 => vec![
            "LMOVE".into(),
            l(rng),
            l(rng),
            "LEFT".into(),
            "RIGHT".into(),
        ],
        7 => vec!["RPOP".into(), l(rng)],
        8 => vec!["LTRIM".into(), l(rng), "0".into(), "20".into()],
        9 => vec!["ZADD".into(), z(rng), rng.below(50).to_string(), v],
        10 => vec![
            "ZINCRBY".into(),
            z(rng),
            "2".into(),
            rng.below(20).to_string(),
        ],
        11 => vec!["ZUNIONSTORE".into(), z(rng), "2".into(), z(rng), z(rng)],
        12 => vec!["SADD".into(), st(rng), rng.below(30).to_string()],
        13 => vec!["SPOP".into(), st(rng)],
        14 => vec!["SMOVE".into(), st(rng), st(rng), rng.below(30).to_string()],
        15 => vec!["SUNIONSTORE".into(), st(rng), st(rng), st(rng)],
        16 => vec!["HSET".into(), "h".into(), rng.below(10).to_string(), v],
        17 => vec!["HINCRBYFLOAT".into(), "h".into(), "n".into(), "0.25".into()],
        18 => vec!["RENAME".into(), s(rng), s(rng)],
        19 => vec!["COPY".into(), l(rng), l(rng), "REPLACE".into()],
        20 => vec!["MSET".into(), s(rng), v.clone(), s(rng), v],
        21 => vec!["PEXPIRE".into(), s(rng), (5 + rng.below(40)).to_string()],
        22 => vec!["EXPIRE".into(), l(rng), "100000".into()],
        // Counters never reset: an increment logged twice (or lost) stays
        // visible to the end.
        23 => vec!["INCR".into(), format!("c{}", rng.below(4))],
        // Keys moving between databases, and whole databases swapping
        // (the rewrite's copy saves each key, or each swapped shard, as it
        // was before the change).
        25 => vec!["MOVE".into(), s(rng), "1".into()],
        26 => vec![
            "COPY".into(),
            st(rng),
            st(rng),
            "DB".into(),
            "1".into(),
            "REPLACE".into(),
        ],
        27 if rng.below(8) == 0 => vec!["SWAPDB".into(), "0".into(), "1".into()],
        27 => vec!["INCR".into(), format!("c{}", rng.below(4))],
        _ => vec!["DEL".into(), s(rng), z(rng)],
    };
    c
}

/// Write commands run in parallel on every I/O thread while the AOF is on
/// (issue 14): eight clients pipelining order-sensitive writes on shared
/// keys, MULTI/EXEC blocks and blocked clients served by other clients'
/// pushes; after the load, the dataset loaded back from the AOF equals the
/// live one key for key (a propagation order that disagreed with the order
/// of execution on any key would show here).
///
/// A ninth client asks for BGREWRITEAOF every 300 ms: the base is a copy of
/// the keyspace at the switch to a new incr file, taken while the writers
/// go on (persist/snapshot.rs), so base plus incr must still equal it.
#[test]
fn concurrent_writers_reload_to_the_same_dataset() {
    concurrent_writers_reload(&[]);
}

/// The same with bases in command form.
#[test]
fn concurrent_writers_reload_to_the_same_dataset_command_base() {
    concurrent_writers_reload(&["--aof-use-rdb-preamble", "no"]);
}

fn concurrent_writers_reload(extra: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path(), &[&["--io-threads", "4"], extra].concat());
    let port = p.port;
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    // The rewriter stops first and waits for its last rewrite to end
    // while the writers still write: the base that counts is one copied
    // under load.
    let stop_rw = Arc::new(AtomicBool::new(false));
    let rewriter = {
        let stop = stop_rw.clone();
        std::thread::spawn(move || {
            let (mut c, _) = concurrent_writer(port, 99);
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(300));
                let r: redis::RedisResult<String> = redis::cmd("BGREWRITEAOF").query(&mut c);
                n += u64::from(r.is_ok());
            }
            while info_u64(&mut c, "persistence", "aof_rewrite_in_progress") == 1
                || info_u64(&mut c, "persistence", "aof_rewrite_scheduled") == 1
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            n
        })
    };
    for t in 0..8u64 {
        let stop = stop.clone();
        threads.push(std::thread::spawn(move || {
            let (mut c, mut rng) = concurrent_writer(port, t);
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if t == 7 {
                    // A client that blocks and is served by the others.
                    let src = format!("l{}", rng.below(4));
                    let dst = format!("l{}", rng.below(4));
                    let _: redis::Value = redis::cmd("BLMOVE")
                        .arg(&src)
                        .arg(&dst)
                        .arg("RIGHT")
                        .arg("LEFT")
                        .arg(0.02)
                        .query(&mut c)
                        .unwrap();
                    let _: redis::Value = redis::cmd("BZPOPMIN")
                        .arg(format!("z{}", rng.below(3)))
                        .arg(0.02)
                        .query(&mut c)
                        .unwrap();
                    continue;
                }
                let mut pipe = redis::pipe();
                if rng.below(5) == 0 {
                    pipe.atomic();
                }
                for _ in 0..(1 + rng.below(16)) {
                    let args = concurrent_command(&mut rng);
                    let mut cmd = redis::cmd(&args[0]);
                    for a in &args[1..] {
                        cmd.arg(a);
                    }
                    pipe.add_command(cmd);
                }
                // Errors (WRONGTYPE, a RENAME of a missing key) are part of
                // the workload.
                let _: redis::RedisResult<redis::Value> = pipe.query(&mut c);
                n += 1;
            }
            n
        }));
    }
    std::thread::sleep(Duration::from_secs(4));
    stop_rw.store(true, Ordering::Relaxed);
    let rewrites = rewriter.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let batches: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(rewrites >= 3, "rewrites started: {rewrites}");
    // Let the short expiries lapse: expired keys are absent from both.
    std::thread::sleep(Duration::from_millis(200));
    let mut c = conn(&p);
    let live = dump(&mut c);
    assert!(live.len() > 5, "the workload left keys: {live:?}");
    shutdown(p);
    let p = start(dir.path(), &[]);
    let mut c = conn(&p);
    let mut loaded = dump(&mut c);
    eprintln!(
        "{batches} batches, {rewrites} rewrites, {} keys",
        live.len()
    );
    let mut live = live;
    forget_string_encodings(&mut live);
    forget_string_encodings(&mut loaded);
    assert_same(&loaded, &live, "reloaded from the AOF");
}

/// Eviction with the AOF on while clients write in parallel: each evicted
/// key is a `DEL` in the stream at its place among the writes (a unit per
/// eviction, propagate.rs), the server never stalls, and the dataset loaded
/// back equals the live one.
#[test]
fn eviction_under_concurrent_writes_reloads_to_the_same_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(
        dir.path(),
        &["--io-threads", "4", "--maxmemory-policy", "allkeys-random"],
    );
    let port = p.port;
    let mut c = conn(&p);
    let used = info_u64(&mut c, "memory", "used_memory");
    let limit = (used + 1_000_000).to_string();
    let _: () = q(&mut c, &["CONFIG", "SET", "maxmemory", &limit]);
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for t in 0..4u64 {
        let stop = stop.clone();
        threads.push(std::thread::spawn(move || {
            let (mut c, mut rng) = concurrent_writer(port, t);
            let val = "v".repeat(2_000);
            while !stop.load(Ordering::Relaxed) {
                let mut pipe = redis::pipe();
                for _ in 0..(1 + rng.below(16)) {
                    let k = |rng: &mut Rng| format!("k{}", rng.below(1000));
                    match rng.below(4) {
                        0 => pipe
                            .cmd("MSET")
                            .arg(k(&mut rng))
                            .arg(&val)
                            .arg(k(&mut rng))
                            .arg(&val),
                        1 => pipe.cmd("APPEND").arg(k(&mut rng)).arg("x"),
                        2 => pipe.cmd("RENAME").arg(k(&mut rng)).arg(k(&mut rng)),
                        _ => pipe.cmd("SET").arg(k(&mut rng)).arg(&val),
                    };
                }
                let _: redis::RedisResult<redis::Value> = pipe.query(&mut c);
            }
        }));
    }
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let _: () = q(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    let evicted = info_u64(&mut c, "stats", "evicted_keys");
    assert!(evicted > 100, "keys were evicted: {evicted}");
    let live = dump(&mut c);
    shutdown(p);
    let p = start(dir.path(), &[]);
    let mut c = conn(&p);
    let mut loaded = dump(&mut c);
    let mut live = live;
    forget_string_encodings(&mut live);
    forget_string_encodings(&mut loaded);
    eprintln!("{evicted} evicted, {} keys", live.len());
    assert_same(&loaded, &live, "reloaded from the AOF after evictions");
}

/// BGREWRITEAOF under a stream of INCRs: the base is the keyspace at the
/// switch to the new incr file, copied while the writers go on
/// (persist/snapshot.rs), so no increment is in both the base and the incr
/// file (or in neither). Every rewrite but the first runs while writing.
#[test]
fn rewrite_under_load_counts_every_increment_once() {
    for preamble in ["yes", "no"] {
        let dir = tempfile::tempdir().unwrap();
        let p = start(
            dir.path(),
            &["--io-threads", "2", "--aof-use-rdb-preamble", preamble],
        );
        let port = p.port;
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..3)
            .map(|t| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let (mut c, _) = concurrent_writer(port, t);
                    while !stop.load(Ordering::Relaxed) {
                        let mut pipe = redis::pipe();
                        for i in 0..50 {
                            pipe.cmd("INCR").arg(format!("c{}", i % 4));
                        }
                        let _: Vec<i64> = pipe.query(&mut c).unwrap();
                    }
                })
            })
            .collect();
        let mut c = conn(&p);
        // At least 4 rewrites while the writers run, each asked for 150 ms
        // after the previous one (a request while one runs is refused, so
        // a slow machine needs more requests).
        let deadline = Instant::now() + Duration::from_secs(60);
        for n in 0.. {
            std::thread::sleep(Duration::from_millis(150));
            let _: redis::RedisResult<String> = redis::cmd("BGREWRITEAOF").query(&mut c);
            if n >= 7 && info_u64(&mut c, "persistence", "aof_rewrites") >= 4
                || Instant::now() > deadline
            {
                break;
            }
        }
        while info_u64(&mut c, "persistence", "aof_rewrite_in_progress") == 1 {
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
        let rewrites = info_u64(&mut c, "persistence", "aof_rewrites");
        assert!(rewrites >= 4, "rewrites done: {rewrites}");
        let live = dump(&mut c);
        shutdown(p);
        let p = start(dir.path(), &[]);
        let mut c = conn(&p);
        assert_same(&dump(&mut c), &live, "counters reloaded after rewrites");
        shutdown(p);
    }
}

/// The first line of the named file type ("i": last incr, "b": base).
fn first_line(dir: &Path, kind: &str) -> String {
    let d = dir.join("appendonlydir");
    let m = std::fs::read_to_string(d.join("appendonly.aof.manifest")).unwrap();
    let name = m
        .lines()
        .rfind(|l| l.ends_with(&format!("type {kind}")))
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .to_string();
    let t = std::fs::read(d.join(name)).unwrap();
    String::from_utf8_lossy(t.split(|&c| c == b'\n').next().unwrap()).into_owned()
}

/// `aof-timestamp-enabled yes` (CONFIG SET at run time, as
/// integration/aof.tcl does): the incr file starts with a `#TS:<unix
/// seconds>` annotation, a rewritten base in command form too, and
/// redis-server 7.0 and ferrokv each load the other's annotated files.
#[test]
fn timestamp_annotations() {
    let redis = which("redis-server");
    let mut bins = vec![BIN.to_string()];
    bins.extend(redis.clone());
    for bin in &bins {
        let dir = tempfile::tempdir().unwrap();
        let p = start_bin(
            bin,
            dir.path(),
            &["--appendonly", "yes", "--aof-use-rdb-preamble", "no"],
        );
        let mut c = conn(&p);
        let _: String = q(&mut c, &["CONFIG", "SET", "aof-timestamp-enabled", "yes"]);
        let _: String = q(&mut c, &["SET", "foo", "bar"]);
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let ts = first_line(dir.path(), "i");
        let secs: u64 = ts
            .strip_prefix("#TS:")
            .and_then(|s| s.trim_end_matches('\r').parse().ok())
            .unwrap_or_else(|| panic!("{bin}: incr starts with {ts:?}"));
        assert!(
            secs + 5 >= before && secs <= before,
            "{bin}: {secs} vs {before}"
        );
        let _: String = q(&mut c, &["BGREWRITEAOF"]);
        wait_rewrite(&mut c);
        let base = first_line(dir.path(), "b");
        assert!(base.starts_with("#TS:"), "{bin}: base starts with {base:?}");
        let _: String = q(&mut c, &["SET", "after", "1"]);
        shutdown(p);
        // Every server here loads the annotated directory.
        for other in &bins {
            let p = start_bin(other, dir.path(), &["--appendonly", "yes"]);
            let mut c = conn(&p);
            let v: Vec<Option<String>> = q(&mut c, &["MGET", "foo", "after"]);
            assert_eq!(
                v,
                [Some("bar".into()), Some("1".into())],
                "{other} loading {bin}'s"
            );
            drop(c);
            shutdown(p);
        }
    }
}
