//! Per-client resources as Redis 7.0 reports and manages them, run the
//! same way against redis-server 7.0 and ferrokv: the query buffer of an
//! idle client in CLIENT LIST (the read buffer's size, then freed after
//! two idle seconds as Redis's clientsCronResizeQueryBuffer does),
//! `oom-score-adj` written to /proc/<pid>/oom_score_adj (relative,
//! absolute, restored when turned off), the default `bind`, a replica
//! connecting from `bind-source-addr`, and client eviction by
//! `maxmemory-clients` (client-eviction.tcl).

mod common;
use common::*;
use std::time::{Duration, Instant};

fn both(f: impl Fn(&Server, &str)) {
    if let Some(r) = Server::start_redis(&[]) {
        f(&r, "redis-server");
    }
    let o = Server::start(&[]);
    f(&o, "ferrokv");
}

/// qbuf + qbuf-free of the client named `name`, from another connection's
/// CLIENT LIST (the test suite's `client_query_buffer`).
fn query_buffer(c: &mut Raw, name: &str) -> Option<(usize, u64)> {
    let list = String::from_utf8_lossy(&c.cmds("CLIENT LIST")).into_owned();
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={name} ")))?;
    let field = |f: &str| -> u64 {
        line.split(' ')
            .find_map(|kv| kv.strip_prefix(&format!("{f}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or(u64::MAX)
    };
    Some(((field("qbuf") + field("qbuf-free")) as usize, field("idle")))
}

/// An idle client's query buffer is the read buffer (at least 16 KiB,
/// below the 32 KiB resize threshold: Redis's PROTO_IOBUF_LEN and
/// PROTO_RESIZE_THRESHOLD), and is freed once the client has been idle
/// for more than two seconds (querybuf.tcl "query buffer resized
/// correctly").
#[test]
fn idle_query_buffer_is_reported_then_freed() {
    both(|s, who| {
        let mut c = Raw::connect(s.port);
        let mut t = Raw::connect(s.port);
        assert_eq!(t.cmds("CLIENT SETNAME qb"), b"+OK\r\n");
        let (size, _) = query_buffer(&mut c, "qb").expect("listed");
        assert!(
            (16384..32768).contains(&size),
            "{who}: query buffer of an idle client: {size}"
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (size, idle) = query_buffer(&mut c, "qb").expect("listed");
            if idle >= 3 && size == 0 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{who}: query buffer not freed: {size} after {idle} s idle"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        // The client still works, and reads into a fresh buffer.
        assert_eq!(t.cmds("PING"), b"+PONG\r\n");
    });
}

fn oom_score_adj(pid: u32) -> i32 {
    std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj"))
        .expect("read oom_score_adj")
        .trim()
        .parse()
        .expect("number")
}

fn set_oom_score_adj(pid: u32, v: i32) {
    std::fs::write(format!("/proc/{pid}/oom_score_adj"), format!("{v}\n"))
        .expect("write oom_score_adj");
}

/// oom-score-adj as oom-score-adj.tcl checks it: relative to the score
/// found, absolute, the replica class after REPLICAOF, restored when
/// turned off, untouched while off; CONFIG GET reports what was set.
#[test]
fn oom_score_adj_is_written_to_proc() {
    both(|s, who| {
        let pid = s.pid();
        let mut c = Raw::connect(s.port);
        let base = oom_score_adj(pid);
        assert_eq!(
            c.cmd(&[b"CONFIG", b"SET", b"oom-score-adj-values", b"10 20 30"]),
            b"+OK\r\n"
        );
        assert_eq!(oom_score_adj(pid), base, "{who}: written while off");
        assert_eq!(c.cmds("CONFIG SET oom-score-adj yes"), b"+OK\r\n");
        assert_eq!(oom_score_adj(pid), base + 10, "{who}: yes");
        c.cmd(&[b"CONFIG", b"SET", b"oom-score-adj-values", b"15 20 30"]);
        assert_eq!(oom_score_adj(pid), base + 15, "{who}: new master value");
        assert_eq!(c.cmds("REPLICAOF localhost 1"), b"+OK\r\n");
        assert_eq!(oom_score_adj(pid), base + 20, "{who}: replica class");
        assert_eq!(c.cmds("REPLICAOF NO ONE"), b"+OK\r\n");
        assert_eq!(oom_score_adj(pid), base + 15, "{who}: master again");
        assert_eq!(c.cmds("CONFIG SET oom-score-adj no"), b"+OK\r\n");
        assert_eq!(oom_score_adj(pid), base, "{who}: restored");
        // Off: an outside change stays, new values are not written.
        set_oom_score_adj(pid, 22);
        c.cmd(&[b"CONFIG", b"SET", b"oom-score-adj-values", b"9 9 9"]);
        assert_eq!(oom_score_adj(pid), 22, "{who}: touched while off");
        assert_eq!(c.cmds("CONFIG SET oom-score-adj relative"), b"+OK\r\n");
        assert_eq!(oom_score_adj(pid), 31, "{who}: relative");
        assert_eq!(c.cmds("CONFIG SET oom-score-adj absolute"), b"+OK\r\n");
        assert_eq!(oom_score_adj(pid), 9, "{who}: absolute");
        assert_eq!(c.cmds("CONFIG SET oom-score-adj no"), b"+OK\r\n");
        assert_eq!(
            oom_score_adj(pid),
            22,
            "{who}: restored to the outside value"
        );
        // (Pairs in any order: redis-server's follow its dict.)
        let got = String::from_utf8_lossy(&c.cmds("CONFIG GET oom-score-adj*")).into_owned();
        assert!(got.starts_with("*4\r\n"), "{who}: {got}");
        for pair in [
            "$13\r\noom-score-adj\r\n$2\r\nno\r\n",
            "$20\r\noom-score-adj-values\r\n$5\r\n9 9 9\r\n",
        ] {
            assert!(got.contains(pair), "{who}: {got}");
        }
    });
}

/// Without a bind directive the server listens on every address as Redis
/// 7.0's compiled default `* -::*` (protected mode keeps non-loopback
/// clients out); an empty bind listens on no TCP address.
#[test]
fn default_bind_matches_redis() {
    let Some(mut p) = Pair::start() else { return };
    p.check_line("CONFIG GET bind");
    p.check_line("CONFIG GET protected-mode");
    p.check(&[b"CONFIG", b"SET", b"bind", b""]);
    p.check_line("CONFIG GET bind");
    for port in [p.ours.port, p.redis.port] {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port} still accepts with an empty bind"
        );
    }
    p.check_line("CONFIG SET bind *");
    for port in [p.ours.port, p.redis.port] {
        let mut c = Raw::connect(port);
        assert_eq!(c.cmds("PING"), b"+PONG\r\n");
    }
}

/// A replica with bind-source-addr connects to its master from that
/// address: the master's INFO replication shows it (networking.tcl
/// "CONFIG SET bind-source-addr").
#[test]
fn replica_connects_from_bind_source_addr() {
    // 127.0.0.2 is a loopback address on Linux; skip where it is not.
    if std::net::TcpListener::bind("127.0.0.2:0").is_err() {
        eprintln!("127.0.0.2 not usable here: skipped");
        return;
    }
    let mk = |redis: bool, extra: &[&str]| {
        if redis {
            Server::start_redis(extra)
        } else {
            Some(Server::start(extra))
        }
    };
    for redis in [true, false] {
        let Some(master) = mk(redis, &["--protected-mode", "no"]) else {
            continue;
        };
        let Some(replica) = mk(redis, &[]) else {
            continue;
        };
        let mut r = Raw::connect(replica.port);
        assert_eq!(r.cmds("CONFIG SET bind-source-addr 127.0.0.2"), b"+OK\r\n");
        r.cmds(&format!("REPLICAOF 127.0.0.1 {}", master.port));
        let mut m = Raw::connect(master.port);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let slave0 = m.info_field("replication", "slave0");
            if slave0.contains("state=online") {
                assert!(slave0.contains("ip=127.0.0.2,"), "redis {redis}: {slave0}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "redis {redis}: link not up: {slave0}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A field of the client named `name` in CLIENT LIST (None: not listed).
fn client_field(c: &mut Raw, name: &str, f: &str) -> Option<u64> {
    let list = String::from_utf8_lossy(&c.cmds("CLIENT LIST")).into_owned();
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={name} ")))?;
    line.split(' ')
        .find_map(|kv| kv.strip_prefix(&format!("{f}=")))
        .and_then(|v| v.parse().ok())
}

/// A client named `name` with `n` bytes of an unfinished `n`-byte argument
/// in its query buffer (client-eviction.tcl's way of making a client big).
fn big_client(port: u16, name: &str, n: usize) -> Raw {
    let mut c = Raw::connect(port);
    c.cmds(&format!("CLIENT SETNAME {name}"));
    c.send(format!("*2\r\n${n}\r\n").as_bytes());
    c.send(&vec![b'v'; n]);
    c
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// maxmemory-clients (client-eviction.tcl): the client's query buffer
/// counts in `tot-mem` once the argument's header arrived (`qbuf` is the
/// argument's bytes); lowering the limit evicts the largest clients first
/// and only until the rest fits, never a CLIENT NO-EVICT one; a client
/// whose own argument passes the limit is closed before the command runs;
/// INFO `evicted_clients` counts them. Same assertions on redis-server.
#[test]
fn maxmemory_clients_evicts_largest_first() {
    both(|s, who| {
        let mut ctl = Raw::connect(s.port);
        ctl.cmds("CLIENT SETNAME control");
        ctl.cmds("CLIENT NO-EVICT on");
        let sizes = [
            (256 * 1024, "small"),
            (1024 * 1024, "mid"),
            (3 * 1024 * 1024, "big"),
        ];
        let mut conns = Vec::new();
        for (n, name) in sizes {
            conns.push(big_client(s.port, name, n));
            wait_until("the query buffer to fill", || {
                client_field(&mut ctl, name, "qbuf") == Some(n as u64)
            });
            let tot = client_field(&mut ctl, name, "tot-mem").unwrap();
            assert!(
                tot >= n as u64 && tot < 2 * n as u64 + 65536,
                "{who}: {name} tot-mem {tot}"
            );
        }
        let mem = |c: &mut Raw, name| client_field(c, name, "tot-mem").unwrap();
        let (small, mid) = (mem(&mut ctl, "small"), mem(&mut ctl, "mid"));
        let ctl_mem = mem(&mut ctl, "control");
        // Room for everyone but "big": only it goes.
        ctl.cmds(&format!(
            "CONFIG SET maxmemory-clients {}",
            small + mid + ctl_mem + 65536
        ));
        let names = |c: &mut Raw| -> Vec<&str> {
            ["small", "mid", "big"]
                .into_iter()
                .filter(|n| client_field(c, n, "tot-mem").is_some())
                .collect()
        };
        assert_eq!(names(&mut ctl), ["small", "mid"], "{who}");
        assert_eq!(ctl.info_field("stats", "evicted_clients"), "1", "{who}");
        // A limit below what the no-evict control client uses alone evicts
        // every other client and keeps it.
        ctl.cmds("CONFIG SET maxmemory-clients 1");
        assert_eq!(names(&mut ctl), Vec::<&str>::new(), "{who}");
        assert!(client_field(&mut ctl, "control", "tot-mem").is_some());
        assert_eq!(ctl.info_field("stats", "evicted_clients"), "3", "{who}");
        // An argument past the limit: the client is closed, the command
        // does not run.
        ctl.cmds("CONFIG SET maxmemory-clients 1000000");
        let mut c = Raw::connect(s.port);
        let big = vec![b'x'; 1_200_000];
        let r = c.try_cmd(&[b"SET", b"evicted-key", &big]);
        assert!(r.is_err(), "{who}: {r:?}");
        assert_eq!(ctl.cmds("EXISTS evicted-key"), b":0\r\n", "{who}");
        ctl.cmds("CONFIG SET maxmemory-clients 0");
        drop(conns);
    });
}
