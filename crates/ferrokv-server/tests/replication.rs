//! Replication end to end, with real processes on loopback ports, each in
//! its own directory and stopped by its PID: ferrokv → ferrokv,
//! ferrokv → redis-server 7.0 and redis-server 7.0 → ferrokv under a
//! write load of every data type (TTLs, expiries, blocking pops,
//! transactions), the datasets compared key by key once the offsets
//! match; partial resynchronisation after a killed link, promotion with
//! PSYNC2, a chain of three, the replica output-buffer limit, kill -9 of a
//! replica, READONLY / NOREPLICAS / WAIT / ROLE / INFO.

mod common;

use common::{free_port, which, Rng};
use redis::{Commands, Connection};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ferrokv-server");

/// One server process: its binary, directory, port and arguments, so it
/// can be killed and started again in place.
struct Node {
    bin: String,
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
    args: Vec<String>,
}

impl Node {
    fn ferrokv(extra: &[&str]) -> Node {
        Node::start(BIN.to_string(), extra)
    }

    /// redis-server 7.0, or None (skip) when not installed and
    /// FERROKV_REQUIRE_REDIS is unset.
    fn redis(extra: &[&str]) -> Option<Node> {
        match which("redis-server") {
            Some(b) => {
                let mut a = vec!["--save", "", "--appendonly", "no", "--daemonize", "no"];
                a.extend_from_slice(extra);
                Some(Node::start(b, &a))
            }
            None => {
                assert!(
                    std::env::var_os("FERROKV_REQUIRE_REDIS").is_none(),
                    "redis-server not installed but FERROKV_REQUIRE_REDIS is set"
                );
                eprintln!("redis-server not installed: interop test skipped");
                None
            }
        }
    }

    fn start(bin: String, extra: &[&str]) -> Node {
        let mut n = Node {
            bin,
            child: None,
            port: free_port(),
            dir: tempfile::tempdir().expect("tempdir"),
            args: extra.iter().map(|s| s.to_string()).collect(),
        };
        n.run();
        n
    }

    fn run(&mut self) {
        let child = Command::new(&self.bin)
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--dir")
            .arg(self.dir.path())
            .arg("--logfile")
            .arg(self.dir.path().join("server.log"))
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(c) = redis::Client::open(self.url()) {
                if let Ok(mut c) = c.get_connection() {
                    if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                        return;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let log = std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(15).collect();
        panic!(
            "{} did not start; its log ends:\n{}",
            self.bin,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn conn(&self) -> Connection {
        redis::Client::open(self.url())
            .expect("url")
            .get_connection()
            .expect("connect")
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().map(|c| c.id() as i32).unwrap_or(0)
    }

    fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.pid(), sig);
        }
    }

    fn replicaof(&self, master: &Node) {
        let _: String = redis::cmd("REPLICAOF")
            .arg("127.0.0.1")
            .arg(master.port)
            .query(&mut self.conn())
            .expect("REPLICAOF");
    }

    fn info(&self, field: &str) -> String {
        let s: String = redis::cmd("INFO").query(&mut self.conn()).expect("INFO");
        s.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
            .unwrap_or_default()
    }

    fn info_u64(&self, field: &str) -> u64 {
        self.info(field).trim().parse().unwrap_or(0)
    }

    /// The server's log file so far.
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Lines of the log containing `text`.
    fn log_count(&self, text: &str) -> usize {
        self.log().lines().filter(|l| l.contains(text)).count()
    }

    fn is_redis(&self) -> bool {
        self.bin != BIN
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn dir_of(n: &Node) -> &Path {
    n.dir.path()
}

/// Waits until `cond` holds (up to `secs`).
fn wait_for(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

/// DEBUG SET-ACTIVE-EXPIRE 0|1 (the server needs enable-debug-command).
fn set_active_expire(c: &mut Connection, on: bool) {
    let _: () = redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(on as i32)
        .query(c)
        .unwrap();
}

fn link_up(replica: &Node) -> bool {
    replica.info("master_link_status") == "up"
}

/// Every key of every database as (type, value, has a TTL), read with
/// ordinary commands (the helper the tests compare datasets with).
fn dataset(n: &Node) -> BTreeMap<(i64, Vec<u8>), (String, String, bool)> {
    let mut c = n.conn();
    let mut out = BTreeMap::new();
    for db in 0..16i64 {
        let _: () = redis::cmd("SELECT").arg(db).query(&mut c).unwrap();
        let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
        for k in keys {
            let t: String = redis::cmd("TYPE").arg(&k).query(&mut c).unwrap();
            let v = match t.as_str() {
                "string" => {
                    let v: Option<Vec<u8>> = c.get(&k).unwrap();
                    format!("{v:?}")
                }
                "list" => {
                    let v: Vec<Vec<u8>> = c.lrange(&k, 0, -1).unwrap();
                    format!("{v:?}")
                }
                "hash" => {
                    let v: BTreeMap<Vec<u8>, Vec<u8>> = c.hgetall(&k).unwrap();
                    format!("{v:?}")
                }
                "set" => {
                    let mut v: Vec<Vec<u8>> = c.smembers(&k).unwrap();
                    v.sort();
                    format!("{v:?}")
                }
                "zset" => {
                    let v: Vec<(Vec<u8>, String)> = c.zrange_withscores(&k, 0, -1).unwrap();
                    format!("{v:?}")
                }
                "none" => continue,
                other => other.to_string(),
            };
            let pttl: i64 = c.pttl(&k).unwrap();
            if pttl == -2 {
                continue;
            }
            out.insert((db, k), (t, v, pttl >= 0));
        }
    }
    out
}

/// Waits until the replica has applied everything the master produced,
/// then compares the datasets.
fn assert_converged(master: &Node, replica: &Node) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let m = master.info_u64("master_repl_offset");
        let r = replica.info_u64("slave_repl_offset");
        let link = replica.info("master_link_status");
        if link == "up" && r == m {
            break;
        }
        // DUMP_STACKS=1: the master's threads are written to
        // /tmp/stacks.txt (gdb) when the replica does not catch up.
        if Instant::now() >= deadline && std::env::var_os("DUMP_STACKS").is_some() {
            let out = Command::new("gdb")
                .args([
                    "-p",
                    &master.pid().to_string(),
                    "-batch",
                    "-ex",
                    "thread apply all bt 25",
                ])
                .output()
                .unwrap();
            std::fs::write("/tmp/stacks.txt", out.stdout).unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "replica did not catch up: master offset {m}, replica offset {r}, link {link}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let a = dataset(master);
    let b = dataset(replica);
    if a != b {
        let only_a: Vec<_> = a
            .iter()
            .filter(|(k, v)| b.get(*k) != Some(v))
            .take(5)
            .collect();
        let only_b: Vec<_> = b
            .iter()
            .filter(|(k, v)| a.get(*k) != Some(v))
            .take(5)
            .collect();
        panic!(
            "datasets differ ({} vs {} keys): master has {only_a:?}, replica has {only_b:?}",
            a.len(),
            b.len()
        );
    }
    assert!(!a.is_empty());
}

/// Writes `n` commands of every type to `node` (seeded): strings with
/// TTLs (some expiring during the run), lists, hashes, sets, sorted sets,
/// MULTI/EXEC blocks, blocking pops served by pushes, several databases.
fn load(node: &Node, seed: u64, n: usize) {
    let mut c = node.conn();
    let mut rng = Rng(seed | 1);
    // A client blocked in BLPOP, served by a later push.
    let port = node.port;
    let popper = std::thread::spawn(move || {
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .unwrap()
            .get_connection()
            .unwrap();
        let _: Option<(String, String)> =
            redis::cmd("BLPOP").arg("bq").arg(5).query(&mut c).unwrap();
    });
    std::thread::sleep(Duration::from_millis(100));
    for i in 0..n {
        let k = format!("k{}", rng.below(200));
        let v = format!("v{}", rng.next() % 1000);
        let db = rng.below(3) as i64;
        let _: () = redis::cmd("SELECT").arg(db).query(&mut c).unwrap();
        let r: redis::RedisResult<redis::Value> = match rng.below(14) {
            0 => redis::cmd("SET").arg(&k).arg(&v).query(&mut c),
            1 => redis::cmd("SET")
                .arg(&k)
                .arg(&v)
                .arg("EX")
                .arg(100)
                .query(&mut c),
            2 => redis::cmd("SET")
                .arg(&k)
                .arg(&v)
                .arg("PX")
                .arg(30)
                .query(&mut c),
            3 => redis::cmd("INCRBYFLOAT")
                .arg(format!("f{}", rng.below(5)))
                .arg("1.5")
                .query(&mut c),
            4 => redis::cmd("RPUSH")
                .arg(format!("l{}", rng.below(10)))
                .arg(&v)
                .arg(&k)
                .query(&mut c),
            5 => redis::cmd("LPOP")
                .arg(format!("l{}", rng.below(10)))
                .query(&mut c),
            6 => redis::cmd("HSET")
                .arg(format!("h{}", rng.below(10)))
                .arg(&k)
                .arg(&v)
                .query(&mut c),
            7 => redis::cmd("SADD")
                .arg(format!("s{}", rng.below(10)))
                .arg(&v)
                .query(&mut c),
            8 => redis::cmd("SPOP")
                .arg(format!("s{}", rng.below(10)))
                .query(&mut c),
            9 => redis::cmd("ZADD")
                .arg(format!("z{}", rng.below(10)))
                .arg(rng.below(100))
                .arg(&v)
                .query(&mut c),
            10 => redis::cmd("DEL").arg(&k).query(&mut c),
            11 => redis::cmd("EXPIRE")
                .arg(format!("h{}", rng.below(10)))
                .arg(1000)
                .query(&mut c),
            12 => redis::pipe()
                .atomic()
                .cmd("INCR")
                .arg(format!("ctr{}", rng.below(3)))
                .cmd("LPUSH")
                .arg("txl")
                .arg(&v)
                .query(&mut c),
            _ => redis::cmd("GETEX").arg(&k).arg("PX").arg(50).query(&mut c),
        };
        // WRONGTYPE and the like are part of the load.
        let _ = r;
        if i == n / 2 {
            let _: () = redis::cmd("SELECT").arg(0).query(&mut c).unwrap();
            let _: i64 = c.rpush("bq", "served").unwrap();
        }
    }
    let _ = popper.join();
    // Let the short TTLs pass: their keys are deleted on the master (DEL
    // propagated) and must be gone on the replica too.
    std::thread::sleep(Duration::from_millis(120));
    for db in 0..3 {
        let _: () = redis::cmd("SELECT").arg(db).query(&mut c).unwrap();
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
        for k in keys {
            let _: i64 = c.exists(&k).unwrap();
        }
    }
}

#[test]
fn ferrokv_master_ferrokv_replica_converge_under_load() {
    let m = Node::ferrokv(&["--repl-diskless-sync-delay", "0"]);
    load(&m, 1, 300);
    let r = Node::ferrokv(&[]);
    r.replicaof(&m);
    wait_for(20, "link up", || link_up(&r));
    load(&m, 2, 1500);
    assert_converged(&m, &r);
    // ROLE and INFO read as Redis's.
    let role: (String, String, u16, String, i64) = redis::cmd("ROLE").query(&mut r.conn()).unwrap();
    assert_eq!(
        (role.0.as_str(), role.2, role.3.as_str()),
        ("slave", m.port, "connected")
    );
    assert_eq!(m.info("connected_slaves"), "1");
    assert!(
        m.info("slave0").contains("state=online"),
        "{}",
        m.info("slave0")
    );
    assert_eq!(m.info_u64("sync_full"), 1);
    // Writes to a read-only replica are refused with Redis's error.
    let e = r.conn().set::<_, _, ()>("x", "1").unwrap_err();
    assert_eq!(e.code(), Some("READONLY"));
    // WAIT counts the replicas that acknowledged.
    let n: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(5000)
        .query(&mut m.conn())
        .unwrap();
    assert_eq!(n, 1);
    let n: i64 = redis::cmd("WAIT")
        .arg(2)
        .arg(300)
        .query(&mut m.conn())
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn disk_backed_transfer_and_sync_command() {
    // repl-diskless-sync no: the RDB goes through a file ($<len>).
    let m = Node::ferrokv(&["--repl-diskless-sync", "no"]);
    load(&m, 3, 300);
    let r = Node::ferrokv(&[]);
    r.replicaof(&m);
    assert_converged(&m, &r);
    assert!(std::fs::read_dir(dir_of(&m)).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with("temp-repl")));
}

#[test]
fn partial_resync_after_the_link_is_killed() {
    let m = Node::ferrokv(&["--repl-diskless-sync-delay", "0"]);
    let r = Node::ferrokv(&[]);
    r.replicaof(&m);
    load(&m, 4, 300);
    assert_converged(&m, &r);
    let _: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("master")
        .query(&mut r.conn())
        .unwrap();
    load(&m, 5, 300);
    assert_converged(&m, &r);
    assert_eq!(m.info_u64("sync_full"), 1);
    assert!(m.info_u64("sync_partial_ok") >= 1);
    // The replica side lists its master client.
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("TYPE")
        .arg("master")
        .query(&mut r.conn())
        .unwrap();
    assert!(list.contains("flags=M"), "{list}");
}

#[test]
fn promotion_keeps_the_other_replicas_with_psync2_and_chains_work() {
    let a = Node::ferrokv(&["--repl-diskless-sync-delay", "0"]);
    let b = Node::ferrokv(&["--repl-diskless-sync-delay", "0"]);
    let c = Node::ferrokv(&[]);
    b.replicaof(&a);
    c.replicaof(&a);
    load(&a, 6, 400);
    assert_converged(&a, &b);
    assert_converged(&a, &c);
    // B becomes the master; C follows it and continues partially.
    let _: String = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut b.conn())
        .unwrap();
    assert_eq!(b.info("role"), "master");
    assert_ne!(b.info("master_replid2"), "0".repeat(40));
    c.replicaof(&b);
    load(&b, 7, 300);
    assert_converged(&b, &c);
    assert_eq!(b.info_u64("sync_full"), 0, "C had to resync fully");
    assert!(b.info_u64("sync_partial_ok") >= 1);
    // A chain of three: A follows C (which follows B): B -> C -> A.
    a.replicaof(&c);
    load(&b, 8, 300);
    assert_converged(&b, &c);
    wait_for(30, "end of chain caught up", || {
        link_up(&a) && a.info_u64("slave_repl_offset") == b.info_u64("master_repl_offset")
    });
    assert_eq!(dataset(&a), dataset(&b));
}

#[test]
fn replica_over_its_output_buffer_limit_is_dropped_and_resyncs() {
    let m = Node::ferrokv(&[
        "--repl-diskless-sync-delay",
        "0",
        "--client-output-buffer-limit",
        "replica 256kb 0 0",
        "--repl-backlog-size",
        "16kb",
    ]);
    let r = Node::ferrokv(&[]);
    r.replicaof(&m);
    load(&m, 9, 100);
    assert_converged(&m, &r);
    r.signal(libc::SIGSTOP);
    let mut c = m.conn();
    let big = "x".repeat(10_000);
    // More than the socket buffers hold, so the backlog keeps the rest.
    for i in 0..2000 {
        let _: () = c.set(format!("big{}", i % 300), &big).unwrap();
    }
    wait_for(20, "master dropping the stalled replica", || {
        m.info("connected_slaves") == "0"
    });
    r.signal(libc::SIGCONT);
    assert_converged(&m, &r);
    assert!(
        m.info_u64("sync_full") >= 2,
        "the dropped replica resynchronised"
    );
}

#[test]
fn replica_killed_under_load_restarts_and_converges() {
    let m = Node::ferrokv(&["--repl-diskless-sync-delay", "0"]);
    let mut r = Node::ferrokv(&[]);
    r.replicaof(&m);
    load(&m, 10, 200);
    assert_converged(&m, &r);
    let port = m.port;
    let writer = std::thread::spawn(move || {
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .unwrap()
            .get_connection()
            .unwrap();
        for i in 0..3000 {
            let _: () = c.set(format!("w{i}"), i).unwrap();
        }
    });
    std::thread::sleep(Duration::from_millis(50));
    r.kill9();
    // Restarted with the directive form: replicaof <host> <port>.
    r.args = vec!["--replicaof".into(), format!("127.0.0.1 {}", m.port)];
    r.run();
    writer.join().unwrap();
    assert_converged(&m, &r);
}

#[test]
fn min_replicas_to_write_refuses_writes_without_good_replicas() {
    let m = Node::ferrokv(&[
        "--min-replicas-to-write",
        "1",
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let e = m.conn().set::<_, _, ()>("k", "v").unwrap_err();
    assert_eq!(e.code(), Some("NOREPLICAS"));
    let r = Node::ferrokv(&[]);
    r.replicaof(&m);
    wait_for(20, "a good replica", || {
        m.conn().set::<_, _, ()>("k", "v").is_ok()
    });
    assert_converged(&m, &r);
}

#[test]
fn redis_server_replica_of_ferrokv_master() {
    let m = Node::ferrokv(&["--repl-diskless-sync-delay", "0"]);
    load(&m, 11, 300);
    let Some(r) = Node::redis(&[]) else { return };
    r.replicaof(&m);
    load(&m, 12, 1000);
    assert_converged(&m, &r);
    // Partial resynchronisation after the link is killed on the replica.
    let _: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("master")
        .query(&mut r.conn())
        .unwrap();
    load(&m, 13, 300);
    assert_converged(&m, &r);
    assert!(m.info_u64("sync_partial_ok") >= 1);
    assert_eq!(m.info_u64("sync_full"), 1);
    // Disk-backed transfer to a stock replica.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("repl-diskless-sync")
        .arg("no")
        .query(&mut m.conn())
        .unwrap();
    let Some(r2) = Node::redis(&[]) else { return };
    r2.replicaof(&m);
    assert_converged(&m, &r2);
}

#[test]
fn ferrokv_replica_of_redis_server_master() {
    let Some(m) = Node::redis(&["--repl-diskless-sync-delay", "0"]) else {
        return;
    };
    load(&m, 14, 300);
    let r = Node::ferrokv(&[]);
    r.replicaof(&m);
    load(&m, 15, 1000);
    assert_converged(&m, &r);
    let _: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("master")
        .query(&mut r.conn())
        .unwrap();
    load(&m, 16, 300);
    assert_converged(&m, &r);
    assert!(
        m.info_u64("sync_partial_ok") >= 1,
        "ferrokv continued partially"
    );
    assert_eq!(m.info_u64("sync_full"), 1);
    // A disk-backed ($<len>) transfer from redis-server.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("repl-diskless-sync")
        .arg("no")
        .query(&mut m.conn())
        .unwrap();
    let r2 = Node::ferrokv(&[]);
    r2.replicaof(&m);
    assert_converged(&m, &r2);
    // redis-server's WAIT counts the ferrokv replica's acknowledgements.
    let n: i64 = redis::cmd("WAIT")
        .arg(2)
        .arg(5000)
        .query(&mut m.conn())
        .unwrap();
    assert_eq!(n, 2);
}

#[test]
fn restarts_with_the_rdb_continue_partially() {
    let mut m = Node::ferrokv(&["--repl-diskless-sync-delay", "0"]);
    let mut r = Node::ferrokv(&[]);
    r.replicaof(&m);
    load(&m, 17, 300);
    assert_converged(&m, &r);
    // The master saves, dies (kill -9) and comes back with its RDB: the
    // replica continues with PSYNC, not a full resynchronisation.
    let _: () = redis::cmd("SAVE").query(&mut m.conn()).unwrap();
    m.kill9();
    m.run();
    assert_converged(&m, &r);
    assert_eq!(m.info_u64("sync_full"), 0);
    assert_eq!(m.info_u64("sync_partial_ok"), 1);
    load(&m, 18, 200);
    assert_converged(&m, &r);
    // The replica saves, dies and restarts with the replicaof directive:
    // it continues partially too.
    let _: () = redis::cmd("SAVE").query(&mut r.conn()).unwrap();
    r.kill9();
    r.args = vec!["--replicaof".into(), format!("127.0.0.1 {}", m.port)];
    r.run();
    assert_converged(&m, &r);
    assert_eq!(m.info_u64("sync_full"), 0);
    assert_eq!(m.info_u64("sync_partial_ok"), 2);
}

#[test]
fn replica_keys_expire_when_the_master_says_del() {
    let m = Node::ferrokv(&[
        "--repl-diskless-sync-delay",
        "0",
        "--enable-debug-command",
        "yes",
    ]);
    let r = Node::ferrokv(&[]);
    r.replicaof(&m);
    let mut mc = m.conn();
    set_active_expire(&mut mc, false);
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .arg("PX")
        .arg(50)
        .query(&mut mc)
        .unwrap();
    let _: () = mc.set("keep", "1").unwrap();
    assert_converged(&m, &r);
    std::thread::sleep(Duration::from_millis(120));
    let mut rc = r.conn();
    // Logically expired: a read reports it missing, without deleting it.
    let v: Option<String> = rc.get("k").unwrap();
    assert_eq!(v, None);
    let n: i64 = redis::cmd("DBSIZE").query(&mut rc).unwrap();
    assert_eq!(n, 2, "the replica deleted the key itself");
    // The master's active expiry deletes it and propagates DEL: now it is
    // gone from the replica too.
    set_active_expire(&mut mc, true);
    wait_for(10, "the DEL to arrive", || {
        redis::cmd("DBSIZE").query::<i64>(&mut r.conn()).unwrap() == 1
    });
}

#[test]
fn evictions_reach_the_replicas_as_del() {
    let m = Node::ferrokv(&[
        "--repl-diskless-sync-delay",
        "0",
        "--maxmemory",
        "4mb",
        "--maxmemory-policy",
        "allkeys-lru",
    ]);
    let r = Node::ferrokv(&["--maxmemory", "1mb"]);
    r.replicaof(&m);
    let stock = Node::redis(&[]);
    if let Some(s) = &stock {
        s.replicaof(&m);
    }
    let mut c = m.conn();
    let v = "e".repeat(1000);
    for i in 0..12_000 {
        let _: () = c.set(format!("ev{i}"), &v).unwrap();
    }
    let evicted: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
    assert!(
        !evicted.contains("evicted_keys:0\r"),
        "no eviction happened"
    );
    // No more evictions while the datasets are read: the master evicts
    // before any command at its limit (as Redis's processCommand does), so
    // reading it key by key could evict a key already read, and the
    // replica, compared next, would rightly lack it.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("0")
        .query(&mut c)
        .unwrap();
    // The replica ignores its own (smaller) maxmemory: it follows the
    // master's DELs only.
    assert_converged(&m, &r);
    if let Some(s) = &stock {
        assert_converged(&m, s);
    }
}

#[test]
fn diskless_load_from_the_socket_on_an_empty_replica() {
    // repl-diskless-load on-empty-db: the RDB is parsed as it arrives,
    // both for $EOF: and for $<len> transfers.
    let m = Node::ferrokv(&["--repl-diskless-sync-delay", "0"]);
    load(&m, 19, 400);
    let r = Node::ferrokv(&["--repl-diskless-load", "on-empty-db"]);
    r.replicaof(&m);
    load(&m, 20, 300);
    assert_converged(&m, &r);
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("repl-diskless-sync")
        .arg("no")
        .query(&mut m.conn())
        .unwrap();
    let r2 = Node::ferrokv(&["--repl-diskless-load", "on-empty-db"]);
    r2.replicaof(&m);
    assert_converged(&m, &r2);
}

#[test]
fn replication_command_errors_match_redis() {
    let Some(mut p) = common::Pair::start() else {
        return;
    };
    for line in [
        "replconf foo bar",
        "replconf listening-port abc",
        "replconf listening-port 99999",
        "replconf ack",
        "replconf capa",
        "replconf",
        "replconf rdb-only 2",
        "replconf rdb-only x",
        "replicaof localhost abc",
        "replicaof localhost 70000",
        "replicaof no",
        "replicaof no one",
        "slaveof no one",
        "wait 1",
        "wait a 1",
        "wait 1 a",
        "wait 1 -1",
        "wait 0 0",
        "wait 1 1",
        "role x",
        "role",
        "psync",
        "psync a b",
        "sync x",
    ] {
        p.check_line(line);
    }
}

/// While a replica loads its master's RDB, commands without the `loading`
/// flag get `-LOADING Redis is loading the dataset in memory` and INFO
/// says `loading:1`, as Redis (an attack found reads served from a
/// half-loaded keyspace); the load then completes with every key.
#[test]
fn replica_replies_loading_while_it_loads() {
    let master = Node::ferrokv(&[
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let replica = Node::ferrokv(&[]);
    let _: String = redis::cmd("DEBUG")
        .arg("POPULATE")
        .arg(3_000_000)
        .query(&mut master.conn())
        .expect("populate");
    replica.replicaof(&master);
    let mut raw = common::Raw::connect(replica.port);
    let mut saw_loading = false;
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let r = raw.cmds("GET key:1");
        if r == b"-LOADING Redis is loading the dataset in memory\r\n" {
            saw_loading = true;
        } else if r == b"$7\r\nvalue:1\r\n" {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(saw_loading, "never saw -LOADING during the load");
    wait_for(60, "link up", || link_up(&replica));
    let n: i64 = redis::cmd("DBSIZE").query(&mut replica.conn()).unwrap();
    assert_eq!(n, 3_000_000);
    assert_eq!(replica.info("loading").trim(), "0");
}

/// A fake master on a thread: answers the replica's handshake, then
/// replies to PSYNC with `psync_reply` and keeps the link open; returns
/// its port.
fn fake_master(psync_reply: &'static [u8]) -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(c) = conn else { return };
            let mut w = c.try_clone().unwrap();
            let mut r = BufReader::new(c);
            loop {
                // One RESP array command: *N, then N bulk strings.
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let n: usize = line.trim().trim_start_matches('*').parse().unwrap_or(0);
                let mut parts = Vec::new();
                for _ in 0..n {
                    let mut len = String::new();
                    let mut arg = String::new();
                    let _ = r.read_line(&mut len);
                    let _ = r.read_line(&mut arg);
                    parts.push(arg.trim().to_ascii_uppercase());
                }
                let reply: &[u8] = match parts.first().map(String::as_str) {
                    Some("PING") => b"+PONG\r\n",
                    Some("PSYNC") | Some("SYNC") => psync_reply,
                    _ => b"+OK\r\n",
                };
                if w.write_all(reply).is_err() {
                    break;
                }
            }
        }
    });
    port
}

/// Malformed full-resynchronisation replies (a replication id that is not
/// 40 characters, an EOF mark shorter than 40 bytes) are refused: the
/// replica keeps its data and its link stays down (an attack found them
/// accepted).
#[test]
fn malformed_fullresync_and_eof_mark_are_refused() {
    for reply in [
        // An empty RDB (checksum 0: not checked) between valid marks.
        &b"+FULLRESYNC short 0\r\n$EOF:0123456789012345678901234567890123456789\r\nREDIS0009\xff\x00\x00\x00\x00\x00\x00\x00\x000123456789012345678901234567890123456789"[..],
        // A 3-byte mark found at once: a truncated RDB would be loaded.
        &b"+FULLRESYNC 0123456789012345678901234567890123456789 0\r\n$EOF:abc\r\nREDIS0009abcdef"[..],
    ] {
        let port = fake_master(reply);
        let replica = Node::ferrokv(&[]);
        let mut c = replica.conn();
        let _: () = redis::cmd("SET")
            .arg("mine")
            .arg("1")
            .query(&mut c)
            .unwrap();
        let _: String = redis::cmd("REPLICAOF")
            .arg("127.0.0.1")
            .arg(port)
            .query(&mut c)
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(replica.info("master_link_status").trim(), "down");
        let v: Option<String> = redis::cmd("GET").arg("mine").query(&mut c).unwrap();
        assert_eq!(v.as_deref(), Some("1"), "data kept after {reply:?}");
    }
}

// ------------------------------------------------------------------ FAILOVER

/// FAILOVER from `m` to its replica `r` (TO its address when `to`): `r`
/// becomes the master, `m` its replica by a partial resynchronisation,
/// writes on `r` reach `m`, and both report no failover in progress.
fn failover_between(m: &Node, r: &Node, to: bool) {
    r.replicaof(m);
    wait_for(20, "replica link up", || link_up(r));
    load(m, 77, 300);
    let mut c = m.conn();
    let mut cmd = redis::cmd("FAILOVER");
    if to {
        cmd.arg("TO").arg("127.0.0.1").arg(r.port);
    }
    let ok: String = cmd
        .arg("TIMEOUT")
        .arg(10_000)
        .query(&mut c)
        .expect("FAILOVER");
    assert_eq!(ok, "OK");
    wait_for(20, "roles switched", || {
        r.info("role") == "master" && m.info("role") == "slave" && link_up(m)
    });
    wait_for(10, "failover state cleared", || {
        m.info("master_failover_state") == "no-failover"
    });
    assert_eq!(r.info("master_failover_state"), "no-failover");
    // The old master continued the history (no full resync on r's side).
    assert!(
        r.info_u64("sync_partial_ok") >= 1,
        "no partial resync on the new master"
    );
    let _: () = redis::cmd("SET")
        .arg("after-failover")
        .arg("1")
        .query(&mut r.conn())
        .unwrap();
    assert_converged(r, m);
    // Writes on the old master are refused now (it is a read-only replica).
    let e = redis::cmd("SET")
        .arg("x")
        .arg("1")
        .query::<()>(&mut c)
        .unwrap_err();
    assert!(format!("{e}").contains("read only replica"), "{e}");
}

#[test]
fn failover_between_ferrokv_nodes() {
    let m = Node::ferrokv(&["--repl-diskless-sync-delay", "0"]);
    let r = Node::ferrokv(&[]);
    failover_between(&m, &r, false);
    // And back, naming the target.
    failover_between(&r, &m, true);
}

#[test]
fn failover_with_redis_server_both_ways() {
    let Some(stock) = Node::redis(&["--repl-diskless-sync-delay", "0"]) else {
        return;
    };
    let ours = Node::ferrokv(&["--repl-diskless-sync-delay", "0"]);
    // ferrokv master hands over to a redis-server replica...
    failover_between(&ours, &stock, true);
    // ...and redis-server hands back to ferrokv.
    failover_between(&stock, &ours, true);
}

#[test]
fn failover_times_out_or_is_aborted() {
    let m = Node::ferrokv(&["--repl-diskless-sync-delay", "0"]);
    let r = Node::ferrokv(&[]);
    r.replicaof(&m);
    wait_for(20, "replica link up", || link_up(&r));
    let mut c = m.conn();
    // TO an address that is not a replica is refused.
    let e = redis::cmd("FAILOVER")
        .arg("TO")
        .arg("127.0.0.1")
        .arg(1)
        .query::<()>(&mut c)
        .unwrap_err();
    assert!(format!("{e}").contains("is not a replica"), "{e}");
    let e = redis::cmd("FAILOVER")
        .arg("FORCE")
        .query::<()>(&mut c)
        .unwrap_err();
    assert!(format!("{e}").contains("requires both a timeout"), "{e}");
    let e = redis::cmd("FAILOVER")
        .query::<()>(&mut r.conn())
        .unwrap_err();
    assert!(
        format!("{e}").contains("not valid when server is a replica"),
        "{e}"
    );
    // A replica that cannot acknowledge: a redis-server replica asleep in
    // DEBUG SLEEP. Without FORCE the failover is aborted at its timeout,
    // and writes held meanwhile run afterwards.
    if let Some(stock) = Node::redis(&["--enable-debug-command", "yes"]) {
        stock.replicaof(&m);
        wait_for(20, "redis replica link up", || link_up(&stock));
        let mut s = stock.conn();
        let sleeper = std::thread::spawn(move || {
            let _: () = redis::cmd("DEBUG")
                .arg("SLEEP")
                .arg("2")
                .query(&mut s)
                .unwrap();
        });
        std::thread::sleep(Duration::from_millis(200));
        // Something the sleeping replica has not acknowledged.
        let _: () = redis::cmd("SET").arg("lag").arg("1").query(&mut c).unwrap();
        let ok: String = redis::cmd("FAILOVER")
            .arg("TO")
            .arg("127.0.0.1")
            .arg(stock.port)
            .arg("TIMEOUT")
            .arg(500)
            .query(&mut c)
            .unwrap();
        assert_eq!(ok, "OK");
        assert_eq!(m.info("master_failover_state"), "waiting-for-sync");
        let e = redis::cmd("FAILOVER")
            .query::<()>(&mut m.conn())
            .unwrap_err();
        assert!(format!("{e}").contains("already in progress"), "{e}");
        let t = Instant::now();
        let _: () = redis::cmd("SET")
            .arg("held")
            .arg("1")
            .query(&mut m.conn())
            .unwrap();
        assert!(t.elapsed() >= Duration::from_millis(200), "write not held");
        wait_for(5, "failover aborted", || {
            m.info("master_failover_state") == "no-failover"
        });
        assert_eq!(m.info("role"), "master");
        sleeper.join().unwrap();
        // ABORT by hand, while the replica sleeps again.
        let mut s = stock.conn();
        let sleeper = std::thread::spawn(move || {
            let _: () = redis::cmd("DEBUG")
                .arg("SLEEP")
                .arg("1")
                .query(&mut s)
                .unwrap();
        });
        std::thread::sleep(Duration::from_millis(200));
        let _: () = redis::cmd("SET").arg("lag").arg("2").query(&mut c).unwrap();
        let ok: String = redis::cmd("FAILOVER")
            .arg("TO")
            .arg("127.0.0.1")
            .arg(stock.port)
            .arg("TIMEOUT")
            .arg(60_000)
            .query(&mut c)
            .unwrap();
        assert_eq!(ok, "OK");
        let ok: String = redis::cmd("FAILOVER")
            .arg("ABORT")
            .query(&mut m.conn())
            .unwrap();
        assert_eq!(ok, "OK");
        assert_eq!(m.info("master_failover_state"), "no-failover");
        assert_eq!(m.info("role"), "master");
        let _: () = redis::cmd("SET")
            .arg("free")
            .arg("1")
            .query(&mut c)
            .unwrap();
        sleeper.join().unwrap();
    }
}

#[test]
fn failover_errors_match_redis() {
    let Some(mut p) = common::Pair::start() else {
        return;
    };
    for line in [
        "failover",
        "failover abort",
        "failover abort x",
        "failover timeout 0",
        "failover timeout -5",
        "failover timeout x",
        "failover to h",
        "failover to h x",
        "failover force",
        "failover force timeout 10",
        "failover to h 1 force",
        "failover timeout 10 timeout 10",
        "failover to h 1 to h 2",
        "failover force force",
        "failover bogus",
        "psync abc 1 failover",
        "command info failover",
    ] {
        p.check_line(line);
    }
}

/// A ferrokv master and, when installed, a redis-server 7.0 one (the
/// differential half), both started with `extra`.
fn both_masters(extra: &[&str]) -> Vec<Node> {
    let mut v = vec![Node::ferrokv(extra)];
    v.extend(Node::redis(extra));
    v
}

/// A ferrokv replica and, when installed, a redis-server 7.0 one.
fn both_replicas(extra: &[&str]) -> Vec<Node> {
    let mut v = vec![Node::ferrokv(extra)];
    v.extend(Node::redis(extra));
    v
}

fn name(n: &Node) -> &'static str {
    if n.is_redis() {
        "redis-server"
    } else {
        "ferrokv"
    }
}

/// A master silent (SIGSTOP) for longer than its replicas' `repl-timeout`:
/// each replica drops the link with Redis's log line, INFO says
/// `master_link_status:down`, and after SIGCONT it continues with a partial
/// resynchronisation. With a ferrokv and a redis-server master, each
/// followed by a ferrokv and a redis-server replica (which must behave
/// alike).
#[test]
fn replica_drops_a_silent_master_and_resyncs_partially() {
    let conf = [
        "--repl-ping-replica-period",
        "1",
        "--repl-diskless-sync-delay",
        "0",
    ];
    for m in &both_masters(&conf) {
        let replicas = both_replicas(&["--repl-timeout", "2"]);
        for r in &replicas {
            r.replicaof(m);
        }
        load(m, 41, 200);
        for r in &replicas {
            assert_converged(m, r);
        }
        m.signal(libc::SIGSTOP);
        let stopped = Instant::now();
        for r in &replicas {
            wait_for(20, "the link to go down", || {
                r.info("master_link_status") == "down"
            });
            wait_for(5, "the timeout in the log", || {
                r.log_count("MASTER timeout: no data nor PING received...") >= 1
            });
        }
        // Not before repl-timeout (2 s) of silence, which began up to a
        // ping period (1 s) before the stop.
        assert!(stopped.elapsed() >= Duration::from_secs(1));
        m.signal(libc::SIGCONT);
        load(m, 42, 200);
        for r in &replicas {
            assert_converged(m, r);
            assert_eq!(
                r.log_count("MASTER timeout: no data nor PING received..."),
                1,
                "{} replica of {}",
                name(r),
                name(m)
            );
        }
        assert_eq!(
            m.info_u64("sync_full"),
            replicas.len() as u64,
            "{}",
            name(m)
        );
        assert!(
            m.info_u64("sync_partial_ok") >= replicas.len() as u64,
            "{}: {}",
            name(m),
            m.info("sync_partial_ok")
        );
    }
}

/// A replica silent (SIGSTOP: no REPLCONF ACK, nothing read) for longer
/// than its master's `repl-timeout`, while writes go on: the master drops
/// it with Redis's log line naming it by ip:listening-port; after SIGCONT
/// it continues with a partial resynchronisation. Differential: the same
/// against a redis-server master.
#[test]
fn master_drops_a_silent_replica_and_it_resyncs_partially() {
    let conf = ["--repl-timeout", "2", "--repl-diskless-sync-delay", "0"];
    for m in &both_masters(&conf) {
        let replicas = both_replicas(&[]);
        for r in &replicas {
            r.replicaof(m);
        }
        load(m, 43, 200);
        for r in &replicas {
            assert_converged(m, r);
        }
        assert_eq!(
            m.info_u64("connected_slaves"),
            replicas.len() as u64,
            "{}",
            name(m)
        );
        for r in &replicas {
            r.signal(libc::SIGSTOP);
        }
        let stopped = Instant::now();
        let mut c = m.conn();
        let mut i = 0u64;
        while m.info_u64("connected_slaves") > 0 {
            // A stream that keeps flowing: the timeout must not wait for a
            // quiet moment.
            for _ in 0..20 {
                let _: () = c.set(format!("busy{}", i % 50), i).unwrap();
                i += 1;
            }
            std::thread::sleep(Duration::from_millis(20));
            assert!(
                stopped.elapsed() < Duration::from_secs(20),
                "{} kept its silent replicas",
                name(m)
            );
        }
        // Not at once (the last ACK may be up to a second older than the
        // stop, and Redis counts in whole seconds).
        assert!(
            stopped.elapsed() >= Duration::from_millis(500),
            "{}: dropped after {:?}",
            name(m),
            stopped.elapsed()
        );
        for r in &replicas {
            let line = format!(
                "Disconnecting timedout replica (streaming sync): 127.0.0.1:{}",
                r.port
            );
            assert_eq!(m.log_count(&line), 1, "{}: {}", name(m), m.log());
        }
        for r in &replicas {
            r.signal(libc::SIGCONT);
        }
        load(m, 44, 100);
        for r in &replicas {
            assert_converged(m, r);
        }
        assert_eq!(
            m.info_u64("sync_full"),
            replicas.len() as u64,
            "{}",
            name(m)
        );
        assert!(m.info_u64("sync_partial_ok") >= replicas.len() as u64);
    }
}

/// Two ferrokv replicas and a redis-server one, told REPLICAOF one right
/// after the other.
fn replicas_together(m: &Node) -> Vec<Node> {
    let mut v = vec![Node::ferrokv(&[]), Node::ferrokv(&[])];
    v.extend(Node::redis(&[]));
    for r in &v {
        r.replicaof(m);
    }
    v
}

/// `n` string keys, written in MSET batches.
fn fill(m: &Node, n: usize) {
    let mut c = m.conn();
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let mut cmd = redis::cmd("MSET");
        for i in chunk {
            cmd.arg(format!("key:{i}")).arg(format!("value:{i}"));
        }
        let _: () = cmd.query(&mut c).unwrap();
    }
}

/// Diskless full synchronisations of replicas arriving within
/// `repl-diskless-sync-delay` are served by one snapshot (one "Starting
/// BGSAVE for SYNC" in the log, as redis-server's), all converge; with
/// `repl-diskless-sync-max-replicas` the snapshot starts as soon as that
/// many replicas wait, long before the delay.
#[test]
fn replicas_syncing_together_share_one_diskless_snapshot() {
    for (i, m) in both_masters(&["--repl-diskless-sync-delay", "3"])
        .iter()
        .enumerate()
    {
        fill(m, 5000);
        load(m, 45 + i as u64, 100);
        let replicas = replicas_together(m);
        load(m, 47 + i as u64, 200);
        for r in &replicas {
            assert_converged(m, r);
        }
        let n = replicas.len();
        assert_eq!(m.info_u64("sync_full"), n as u64, "{}", name(m));
        assert_eq!(
            m.log_count("Starting BGSAVE for SYNC with target: replicas sockets"),
            1,
            "{}: {}",
            name(m),
            m.log()
        );
        assert_eq!(
            m.log_count("Delay next BGSAVE for diskless SYNC"),
            n,
            "{}",
            name(m)
        );
        // max-replicas: a 60 s delay cut short by the replicas' number.
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("repl-diskless-sync-delay")
            .arg(60)
            .arg("repl-diskless-sync-max-replicas")
            .arg(n)
            .query(&mut m.conn())
            .unwrap();
        let started = Instant::now();
        let more = replicas_together(m);
        for r in &more {
            assert_converged(m, r);
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{}: max-replicas did not start the sync early",
            name(m)
        );
        assert_eq!(
            m.log_count("Starting BGSAVE for SYNC with target: replicas sockets"),
            2,
            "{}",
            name(m)
        );
    }
}

/// Disk-backed: replicas arriving while the RDB for the first one is being
/// written (slowed by rdb-key-save-delay) attach to it ("Waiting for end
/// of BGSAVE for SYNC", as redis-server logs): one save (INFO `rdb_saves`
/// 1), every replica converges.
#[test]
fn replicas_syncing_together_share_one_disk_snapshot() {
    let conf = ["--repl-diskless-sync", "no", "--rdb-key-save-delay", "200"];
    for m in &both_masters(&conf) {
        fill(m, 10000);
        let replicas = replicas_together(m);
        load(m, 49, 200);
        for r in &replicas {
            assert_converged(m, r);
        }
        let n = replicas.len();
        assert_eq!(m.info_u64("sync_full"), n as u64, "{}", name(m));
        assert_eq!(m.info_u64("rdb_saves"), 1, "{}", name(m));
        assert_eq!(
            m.log_count("Starting BGSAVE for SYNC with target: disk"),
            1,
            "{}: {}",
            name(m),
            m.log()
        );
        assert_eq!(
            m.log_count("Waiting for end of BGSAVE for SYNC"),
            n - 1,
            "{}",
            name(m)
        );
        if !m.is_redis() {
            // The shared file is gone once every replica has it.
            let left: Vec<_> = std::fs::read_dir(dir_of(m))
                .unwrap()
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|f| f.starts_with("temp-repl"))
                .collect();
            assert!(left.is_empty(), "{left:?}");
        }
    }
}

/// A shared diskless transfer is not held up by a member that stops
/// reading (SIGSTOP): after `repl-timeout` seconds without progress the
/// master drops it ("Disconnecting timedout replica (full sync)", Redis's
/// text) and the other replica (a redis-server one when installed)
/// completes its synchronisation; the stopped one resumes after SIGCONT.
#[test]
fn a_stopped_member_does_not_hold_up_a_shared_diskless_sync() {
    let m = Node::ferrokv(&["--repl-diskless-sync-delay", "1", "--repl-timeout", "3"]);
    // About 40 MB of RDB (random values: LZF cannot shrink them): more
    // than the socket buffers and the fan-out's queue hold for a replica
    // that does not read.
    let mut c = m.conn();
    let mut rng = Rng(77);
    for chunk in (0..200_000).collect::<Vec<_>>().chunks(1000) {
        let mut cmd = redis::cmd("MSET");
        for i in chunk {
            let value: String = (0..13).map(|_| format!("{:016x}", rng.next())).collect();
            cmd.arg(format!("key:{i}")).arg(value);
        }
        let _: () = cmd.query(&mut c).unwrap();
    }
    let stopped = Node::ferrokv(&[]);
    let other = Node::redis(&[]).unwrap_or_else(|| Node::ferrokv(&[]));
    stopped.replicaof(&m);
    other.replicaof(&m);
    wait_for(10, "the transfer to start", || {
        m.log_count("Starting BGSAVE for SYNC with target: replicas sockets") == 1
    });
    stopped.signal(libc::SIGSTOP);
    wait_for(60, "the other replica's link", || link_up(&other));
    assert_eq!(
        m.log_count(&format!(
            "Disconnecting timedout replica (full sync): 127.0.0.1:{}",
            stopped.port
        )),
        1,
        "{}",
        m.log()
    );
    stopped.signal(libc::SIGCONT);
    // 200,000 keys: the offsets, the key counts and a sample of values
    // are compared (the key-by-key helper would take minutes).
    let mut mc = m.conn();
    for r in [&other, &stopped] {
        wait_for(60, "the replica to catch up", || {
            link_up(r) && r.info_u64("slave_repl_offset") == m.info_u64("master_repl_offset")
        });
        let mut rc = r.conn();
        let n: u64 = redis::cmd("DBSIZE").query(&mut rc).unwrap();
        assert_eq!(n, 200_000, "{}", name(r));
        for i in (0..200_000).step_by(997) {
            let k = format!("key:{i}");
            let a: String = mc.get(&k).unwrap();
            let b: String = rc.get(&k).unwrap();
            assert_eq!(a, b, "{k} on the {} replica", name(r));
        }
    }
}

/// A writable replica (`replica-read-only no`) expires the keys its own
/// clients gave a TTL (Redis's expireSlaveKeys), while the keys its master
/// gave a TTL wait for the master's DEL: with a ferrokv and, when
/// installed, a redis-server 7.0 replica of a ferrokv master whose active
/// expiry is off.
#[test]
fn a_writable_replica_expires_the_keys_its_clients_wrote() {
    let m = Node::ferrokv(&[
        "--repl-diskless-sync-delay",
        "0",
        "--enable-debug-command",
        "yes",
    ]);
    let mut mc = m.conn();
    set_active_expire(&mut mc, false);
    for r in both_replicas(&["--replica-read-only", "no"]) {
        r.replicaof(&m);
        wait_for(20, "the link", || link_up(&r));
        // (A full sync leaves out keys already expired: the master's key is
        // written once the link is up.)
        let key = format!("from-master-{}", r.port);
        let _: () = redis::cmd("SET")
            .arg(&key)
            .arg("v")
            .arg("PX")
            .arg(100)
            .query(&mut mc)
            .unwrap();
        let mut rc = r.conn();
        wait_for(10, "the master's key", || {
            redis::cmd("DBSIZE").query::<i64>(&mut r.conn()).unwrap() == 1
        });
        let _: () = redis::cmd("SET")
            .arg("own")
            .arg("v")
            .arg("PX")
            .arg(100)
            .query(&mut rc)
            .unwrap();
        let _: () = rc.set("plain", "v").unwrap();
        // PEXPIRE on a key without a TTL remembers it too.
        let _: () = rc.pexpire("plain", 100).unwrap();
        wait_for(10, "the replica's own keys to expire", || {
            redis::cmd("DBSIZE").query::<i64>(&mut r.conn()).unwrap() == 1
        });
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut rc).unwrap();
        // KEYS skips the logically expired master key on both servers.
        assert!(keys.is_empty(), "{}: {keys:?}", name(&r));
        let n: i64 = redis::cmd("DBSIZE").query(&mut rc).unwrap();
        assert_eq!(n, 1, "{}: the master's key waits for its DEL", name(&r));
    }
}

/// A command of the master's stream that fails on the replica (here a
/// writable replica's own value of another type) is logged as
/// `== CRITICAL == This replica is sending an error to its master: ...`
/// and counted in INFO `unexpected_error_replies`, by a ferrokv replica
/// as by a redis-server 7.0 one.
#[test]
fn a_master_command_failing_on_the_replica_is_logged_critical() {
    let m = Node::ferrokv(&["--repl-diskless-sync-delay", "0"]);
    for r in both_replicas(&["--replica-read-only", "no"]) {
        r.replicaof(&m);
        wait_for(20, "the link", || link_up(&r));
        let key = format!("k-{}", r.port);
        let _: () = r.conn().set(&key, "string").unwrap();
        let _: () = m.conn().lpush(&key, "x").unwrap();
        wait_for(10, "the error to be counted", || {
            r.info_u64("unexpected_error_replies") == 1
        });
        let line = "== CRITICAL == This replica is sending an error to its master: \
                    '-WRONGTYPE Operation against a key holding the wrong kind of value' \
                    after processing the command 'lpush'";
        wait_for(10, "the CRITICAL line", || r.log_count(line) == 1);
        assert!(link_up(&r), "{}", name(&r));
    }
}

/// The commands an AOF (the propagation stream) holds for SET's expiry
/// options: every one (EX, PX, EXAT, PXAT, with GET or NX) becomes
/// `SET key value PXAT <ms>`, as Redis 7.0's setGenericCommand rewrites
/// it, in ferrokv and redis-server alike.
#[test]
fn set_with_an_expiry_propagates_as_pxat() {
    let far = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 1000)
        .to_string();
    let far_ms = format!("{far}000");
    let cmds: Vec<Vec<&str>> = vec![
        vec!["SET", "a", "1", "EX", "100"],
        vec!["SET", "b", "1", "PX", "100000"],
        vec!["SET", "c", "1", "EXAT", &far],
        vec!["SET", "d", "1", "PXAT", &far_ms],
        vec!["SET", "e", "1", "PXAT", &far_ms, "GET"],
        vec!["SET", "f", "1", "NX", "EX", "100"],
    ];
    let mut shapes = Vec::new();
    let mut nodes = vec![Node::ferrokv(&["--appendonly", "yes"])];
    if let Some(mut r) = Node::redis(&[]) {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("appendonly")
            .arg("yes")
            .query(&mut r.conn())
            .unwrap();
        wait_for(10, "the AOF rewrite", || {
            r.info_u64("aof_rewrite_in_progress") == 0 && r.info_u64("aof_enabled") == 1
        });
        nodes.push(std::mem::replace(&mut r, Node::ferrokv(&[])));
    }
    for n in &nodes {
        let mut c = n.conn();
        for cmd in &cmds {
            let mut q = redis::cmd(cmd[0]);
            for a in &cmd[1..] {
                q.arg(*a);
            }
            let _: redis::Value = q.query(&mut c).unwrap();
        }
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("appendfsync")
            .arg("always")
            .query(&mut c)
            .unwrap();
        // The incremental file holds the commands after the base.
        let dir = dir_of(n).join("appendonlydir");
        let mut text = String::new();
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.to_string_lossy().ends_with(".incr.aof") {
                text += &String::from_utf8_lossy(&std::fs::read(&p).unwrap());
            }
        }
        // Each SET as its words, the PXAT time replaced by its length.
        let words: Vec<&str> = text
            .split("\r\n")
            .filter(|l| !l.starts_with('*') && !l.starts_with('$'))
            .collect();
        let mut shape = Vec::new();
        let mut i = 0;
        while i < words.len() {
            if words[i] == "SET" {
                let set: Vec<String> = words[i..(i + 5).min(words.len())]
                    .iter()
                    .map(|w| {
                        if w.len() == 13 && w.bytes().all(|b| b.is_ascii_digit()) {
                            "<ms>".to_string()
                        } else {
                            w.to_string()
                        }
                    })
                    .collect();
                shape.push(set.join(" "));
            }
            i += 1;
        }
        assert_eq!(
            shape,
            ["a", "b", "c", "d", "e", "f"].map(|k| format!("SET {k} 1 PXAT <ms>")),
            "{}: {text}",
            name(n)
        );
        shapes.push(shape);
    }
}

/// A master restarted from its RDB continues the saved history as Redis
/// 7.0's loadDataFromDisk: a new replication id, the saved one as
/// `master_replid2`, and the DELs of the keys that expired while it was
/// down in its backlog, so its replica continues with PSYNC and deletes
/// them. For a ferrokv and, when installed, a redis-server 7.0 master,
/// each with a ferrokv replica.
#[test]
fn a_master_restarted_from_its_rdb_takes_a_new_id_and_feeds_expired_dels() {
    for mut m in both_masters(&["--repl-diskless-sync-delay", "0"]) {
        let r = Node::ferrokv(&[]);
        r.replicaof(&m);
        let mut mc = m.conn();
        let _: () = redis::cmd("SET")
            .arg("short")
            .arg("v")
            .arg("PX")
            .arg(1500)
            .query(&mut mc)
            .unwrap();
        let _: () = mc.set("long", "v").unwrap();
        wait_for(20, "the replica to have both keys", || {
            link_up(&r) && redis::cmd("DBSIZE").query::<i64>(&mut r.conn()).unwrap() == 2
        });
        let old = m.info("master_replid");
        let _: () = redis::cmd("SAVE").query(&mut mc).unwrap();
        m.kill9();
        std::thread::sleep(Duration::from_millis(1700));
        m.run();
        let new = m.info("master_replid");
        assert_ne!(new, old, "{}", name(&m));
        assert_eq!(m.info("master_replid2"), old, "{}", name(&m));
        wait_for(
            20,
            "the replica to continue and delete the expired key",
            || link_up(&r) && redis::cmd("DBSIZE").query::<i64>(&mut r.conn()).unwrap() == 1,
        );
        assert_eq!(m.info_u64("sync_partial_ok"), 1, "{}", name(&m));
        assert_eq!(m.info_u64("sync_full"), 0, "{}", name(&m));
        assert_eq!(r.info("master_replid"), new, "{}", name(&m));
    }
}

/// What a client that sent SYNC to `port` reads of the replication stream
/// while `cmds` run on another connection (the RDB payload skipped).
fn sync_stream(port: u16, cmds: &[&[&str]]) -> Vec<u8> {
    use std::io::{BufRead, BufReader, Read, Write};
    let s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    (&s).write_all(b"SYNC\r\n").unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    // Newlines while the snapshot is prepared, then `$<len>\r\n<payload>`.
    let mut line = String::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line.starts_with('$') {
            break;
        }
    }
    let len: usize = line[1..].trim().parse().unwrap();
    let mut rdb = vec![0u8; len];
    r.read_exact(&mut rdb).unwrap();
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    for cmd in cmds {
        let mut q = redis::cmd(cmd[0]);
        for a in &cmd[1..] {
            q.arg(*a);
        }
        let _: redis::Value = q.query(&mut c).unwrap();
    }
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    common::read_until_idle(&mut r)
}

/// A master sends PUBLISH and SPUBLISH to its replicas (pubsub.c:
/// `forceCommandPropagation(c, PROPAGATE_REPL)`), alone, inside MULTI/EXEC
/// (one record: no MULTI; with a SET: wrapped) and from a script: the
/// stream is byte for byte redis-server 7.0's (multi.tcl "MULTI
/// propagation of PUBLISH"), a subscriber on a replica gets the message,
/// and the AOF has none of them (only the SET's transaction).
#[test]
fn publish_reaches_the_replicas_as_redis() {
    let cmds: &[&[&str]] = &[
        &["MULTI"],
        &["PUBLISH", "bla", "bla"],
        &["EXEC"],
        &["PUBLISH", "x", "y"],
        &["MULTI"],
        &["SET", "a", "1"],
        &["PUBLISH", "c", "d"],
        &["EXEC"],
        &["SPUBLISH", "q", "r"],
        &[
            "EVAL",
            "redis.call('publish','e','f') redis.call('set','b','2')",
            "0",
        ],
    ];
    let m = Node::ferrokv(&["--appendonly", "yes"]);
    let ours = sync_stream(m.port, cmds);
    if let Some(r) = Node::redis(&[]) {
        let theirs = sync_stream(r.port, cmds);
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs)
        );
    }
    assert!(String::from_utf8_lossy(&ours).contains("PUBLISH"));
    // The AOF: the two transactions' SETs, no PUBLISH.
    let mut aof = String::new();
    for e in std::fs::read_dir(dir_of(&m).join("appendonlydir")).unwrap() {
        let p = e.unwrap().path();
        if p.to_string_lossy().ends_with(".incr.aof") {
            aof.push_str(&String::from_utf8_lossy(&std::fs::read(p).unwrap()));
        }
    }
    assert!(aof.contains("SET") || aof.contains("set"), "{aof:?}");
    assert!(!aof.to_ascii_lowercase().contains("publish"), "{aof:?}");
    // A subscriber on a replica.
    let rep = Node::ferrokv(&[]);
    rep.replicaof(&m);
    wait_for(10, "the link", || link_up(&rep));
    let mut sc = rep.conn();
    let mut ps = sc.as_pubsub();
    ps.subscribe("news").unwrap();
    ps.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n: i64 = m.conn().publish("news", "hello").unwrap();
    assert_eq!(n, 0, "no subscriber on the master");
    let msg = ps.get_message().unwrap();
    assert_eq!(msg.get_channel_name(), "news");
    assert_eq!(msg.get_payload::<String>().unwrap(), "hello");
}

/// XREADGROUP inside MULTI propagates one XCLAIM per delivered entry (with
/// LASTID) and no XGROUP SETID; with NOACK it propagates XGROUP SETID
/// (multi.tcl "MULTI propagation of XREADGROUP"): the stream is
/// redis-server 7.0's, delivery times aside.
#[test]
fn xreadgroup_propagation_as_redis() {
    let cmds: &[&[&str]] = &[
        &["XADD", "mystream", "1-1", "foo", "bar"],
        &["XADD", "mystream", "1-2", "foo2", "bar2"],
        &["XADD", "mystream", "1-3", "foo3", "bar3"],
        &["XGROUP", "CREATE", "mystream", "mygroup", "0"],
        &["MULTI"],
        &[
            "XREADGROUP",
            "GROUP",
            "mygroup",
            "consumer1",
            "COUNT",
            "2",
            "STREAMS",
            "mystream",
            ">",
        ],
        &[
            "XREADGROUP",
            "GROUP",
            "mygroup",
            "consumer1",
            "STREAMS",
            "mystream",
            ">",
        ],
        &["EXEC"],
        &["XADD", "mystream", "1-4", "a", "b"],
        &[
            "XREADGROUP",
            "GROUP",
            "mygroup",
            "c2",
            "NOACK",
            "STREAMS",
            "mystream",
            ">",
        ],
    ];
    // XCLAIM's TIME argument is the delivery time in ms (13 digits).
    let normalise = |b: Vec<u8>| {
        let s = String::from_utf8_lossy(&b).into_owned();
        let mut out = String::new();
        let mut rest = s.as_str();
        while let Some(i) = rest.find("TIME\r\n$13\r\n") {
            let j = i + "TIME\r\n$13\r\n".len();
            out.push_str(&rest[..j]);
            out.push_str("<ms>");
            rest = &rest[(j + 13).min(rest.len())..];
        }
        out.push_str(rest);
        out
    };
    let m = Node::ferrokv(&[]);
    let ours = normalise(sync_stream(m.port, cmds));
    assert!(
        ours.contains("XCLAIM") && ours.contains("SETID"),
        "{ours:?}"
    );
    if let Some(r) = Node::redis(&[]) {
        assert_eq!(ours, normalise(sync_stream(r.port, cmds)));
    }
}

/// A client blocked on a master that becomes a replica is answered
/// "-UNBLOCKED force unblock ... (master -> replica?)" and disconnected
/// (replication.tcl "BLPOP followed by role change, issue #2473"): the
/// new master's pushes are not popped on the replica, the datasets stay
/// equal. Same assertions with redis-server nodes.
#[test]
fn blocked_clients_leave_when_the_master_becomes_a_replica() {
    use std::io::{Read, Write};
    let mut pairs = vec![(Node::ferrokv(&[]), Node::ferrokv(&[]))];
    if let (Some(a), Some(b)) = (Node::redis(&[]), Node::redis(&[])) {
        pairs.push((a, b));
    }
    for (a, b) in &pairs {
        let mut rd = std::net::TcpStream::connect(("127.0.0.1", b.port)).unwrap();
        rd.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        rd.write_all(b"*3\r\n$5\r\nBLPOP\r\n$3\r\nfoo\r\n$1\r\n0\r\n")
            .unwrap();
        wait_for(10, "the client to block", || {
            b.info_u64("blocked_clients") == 1
        });
        b.replicaof(a);
        let mut reply = Vec::new();
        let _ = rd.read_to_end(&mut reply);
        assert_eq!(
            String::from_utf8_lossy(&reply),
            "-UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)\r\n",
            "{}",
            a.is_redis()
        );
        wait_for(10, "the link", || link_up(b));
        let _: i64 = a.conn().rpush("foo", &["a", "b", "c"]).unwrap();
        wait_for(10, "the push", || {
            b.conn().lrange::<_, Vec<String>>("foo", 0, -1).unwrap() == ["a", "b", "c"]
        });
        assert_eq!(b.info_u64("blocked_clients"), 0);
    }
}

/// A paused replica (CLIENT PAUSE WRITE) keeps reading its master's stream
/// but applies no write until the pause ends (Redis 7.0 postpones its
/// master client as any other): `slave_read_repl_offset` runs ahead of
/// `slave_repl_offset`, the key stays absent, and after CLIENT UNPAUSE the
/// held commands apply without waiting for more data from the master. The
/// same against a redis-server replica.
#[test]
fn paused_replica_reads_but_holds_the_masters_writes() {
    let check = |m: &Node, r: &Node, who: &str| {
        r.replicaof(m);
        wait_for(10, "link up", || link_up(r));
        let _: () = redis::cmd("SET")
            .arg("a")
            .arg("1")
            .query(&mut m.conn())
            .unwrap();
        let at = m.info_u64("master_repl_offset");
        wait_for(5, "offset caught up", || {
            r.info_u64("slave_repl_offset") == at
        });
        let _: () = redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(100_000)
            .arg("WRITE")
            .query(&mut r.conn())
            .unwrap();
        let _: () = redis::cmd("SET")
            .arg("b")
            .arg("2")
            .query(&mut m.conn())
            .unwrap();
        let now = m.info_u64("master_repl_offset");
        wait_for(5, "bytes read", || {
            r.info_u64("slave_read_repl_offset") == now
        });
        assert_eq!(
            r.info_u64("slave_repl_offset"),
            at,
            "{who}: applied while paused"
        );
        let b: Option<String> = redis::cmd("GET").arg("b").query(&mut r.conn()).unwrap();
        assert_eq!(b, None, "{who}");
        let _: () = redis::cmd("CLIENT")
            .arg("UNPAUSE")
            .query(&mut r.conn())
            .unwrap();
        wait_for(3, "applied after the pause", || {
            r.info_u64("slave_repl_offset") == now
        });
        let b: Option<String> = redis::cmd("GET").arg("b").query(&mut r.conn()).unwrap();
        assert_eq!(b.as_deref(), Some("2"), "{who}");
    };
    if let (Some(m), Some(r)) = (
        Node::redis(&["--repl-diskless-sync-delay", "0"]),
        Node::redis(&[]),
    ) {
        check(&m, &r, "redis-server");
    }
    let m = Node::ferrokv(&["--repl-diskless-sync-delay", "0"]);
    let r = Node::ferrokv(&[]);
    check(&m, &r, "ferrokv");
}

/// A failover whose target refuses the PSYNC (its default user lost
/// `psync`) is aborted: the old master stays a master, its held writes
/// run, and its log names the reason once, as Redis's abortFailover
/// (failover.tcl "failover aborts if target rejects sync request"); the
/// nodes sync up again once PSYNC is allowed.
#[test]
fn failover_aborts_when_the_target_rejects_psync() {
    let m = Node::ferrokv(&["--repl-diskless-sync-delay", "0"]);
    let r = Node::ferrokv(&[]);
    r.replicaof(&m);
    wait_for(20, "replica link up", || link_up(&r));
    let _: String = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("default")
        .arg("-psync")
        .query(&mut r.conn())
        .unwrap();
    let ok: String = redis::cmd("FAILOVER")
        .arg("TO")
        .arg("127.0.0.1")
        .arg(r.port)
        .query(&mut m.conn())
        .unwrap();
    assert_eq!(ok, "OK");
    let _: () = redis::cmd("SET")
        .arg("held")
        .arg("1")
        .query(&mut m.conn())
        .unwrap();
    wait_for(10, "failover aborted", || {
        m.info("master_failover_state") == "no-failover"
    });
    assert_eq!(m.info("role"), "master");
    assert_eq!(
        m.log_count("Failover target rejected psync request"),
        1,
        "{}",
        m.log()
    );
    let _: String = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("default")
        .arg("+psync")
        .query(&mut r.conn())
        .unwrap();
    wait_for(20, "replica link up again", || link_up(&r));
    assert_eq!(r.info("role"), "slave");
    wait_for(5, "held write replicated", || {
        redis::cmd("GET")
            .arg("held")
            .query::<Option<String>>(&mut r.conn())
            .unwrap()
            .is_some()
    });
}
