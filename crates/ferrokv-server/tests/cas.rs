//! Compare-and-set on strings (issue 21): `SET ... IFEQ` against
//! valkey-server 8.1 (differential, generated sequences), Redis 8.4's
//! `IFNE`/`IFDEQ`/`IFDNE`, `DIGEST`, `DELEX` and `MSETEX`, Valkey 9.0's
//! `DELIFEQ` against their documented replies, and their recording as
//! Redis 7.0 commands (a redis-server 7.0 replica follows them).

mod common;
use common::{Pair, Raw, Rng, Server};
use std::time::{Duration, Instant};

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A reply with positive integers shown as `:+` (TTLs that tick).
fn ttl_shape(r: &[u8]) -> String {
    let t = s(r);
    match t.strip_prefix(':') {
        Some(n) if n.trim().parse::<i64>().is_ok_and(|n| n > 0) => ":+".into(),
        _ => t,
    }
}

/// Generated SET/GET sequences with IFEQ (and every other SET option,
/// valid or not) give the same replies on ferrokv and valkey-server 8.1.
#[test]
fn set_ifeq_matches_valkey() {
    let Some(valkey) = Server::start_valkey(&[]) else {
        return;
    };
    let ours = Server::start(&[]);
    let (a, b) = (ours.raw(), valkey.raw());
    let mut p = Pair {
        ours,
        redis: valkey,
        a,
        b,
    };
    let mut r = Rng(common::seed_from_env(0xca5_0001));
    let keys = ["k1", "k2", "l"];
    let vals = ["a", "b", "1", "01", ""];
    let opts = [
        "NX",
        "XX",
        "GET",
        "KEEPTTL",
        "EX 100",
        "PX 100000",
        "EXAT 1",
        "EX 0",
        "EX x",
        "IFEQ a",
        "IFEQ b",
        "IFEQ 1",
        "IFEQ",
        "ifeq 01",
        "IfEq",
    ];
    let mut kinds = [0usize; 4];
    for _ in 0..3000 {
        let key = r.pick(&keys);
        let line = match r.below(10) {
            0 => format!("GET {key}"),
            1 => format!("TTL {key}"),
            2 => format!("LPUSH {key} x"),
            3 => format!("DEL {key}"),
            _ => {
                let mut l = format!("SET {key} {}", r.pick(&vals));
                for _ in 0..r.below(4) {
                    l.push(' ');
                    l.push_str(r.pick(&opts));
                }
                l
            }
        };
        let args: Vec<&[u8]> = line.split_whitespace().map(str::as_bytes).collect();
        // An empty value would vanish in the split: send it explicitly.
        let mut args = args;
        if line.starts_with("SET") && line.split(' ').nth(2) == Some("") {
            args.insert(2, b"");
        }
        let (x, y) = p.both(&args);
        assert_eq!(ttl_shape(&x), ttl_shape(&y), "{line}");
        kinds[match x.first() {
            Some(b'+') => 0,
            Some(b'-') => 1,
            Some(b'$') if x.starts_with(b"$-1") => 2,
            _ => 3,
        }] += 1;
    }
    assert!(kinds.iter().all(|&n| n > 100), "reply mix {kinds:?}");
}

/// Redis 8.4's DIGEST, DELEX and SET IFNE/IFDEQ/IFDNE, Valkey 9.0's
/// DELIFEQ and MSETEX, as their pages and Redis's tests describe them.
#[test]
fn documented_replies() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let mut check = |line: &str, want: &str| {
        let parts: Vec<&[u8]> = line.split_whitespace().map(str::as_bytes).collect();
        assert_eq!(s(&c.cmd(&parts)), want, "{line}");
    };
    // DIGEST: 16 lowercase hex digits of XXH3-64, leading zeros kept.
    check("SET key1 Hello", "+OK\r\n");
    check("SET v8 v8", "+OK\r\n");
    check("DIGEST v8", "$16\r\n0cc76dbb41381419\r\n");
    check("SET n 123", "+OK\r\n");
    check("DIGEST n", "$16\r\n404a763b3f4c8c9a\r\n");
    check("DIGEST nosuch", "$-1\r\n");
    check("RPUSH list a", ":1\r\n");
    check(
        "DIGEST list",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    check(
        "DIGEST a b",
        "-ERR wrong number of arguments for 'digest' command\r\n",
    );
    // SET conditions.
    check("SET h hello IFDEQ 0000000000000000", "$-1\r\n");
    check("SET h hello IFDNE 0000000000000000", "+OK\r\n");
    check("SET h world IFDEQ 9555E8555C62DCFD", "+OK\r\n");
    check("GET h", "$5\r\nworld\r\n");
    check(
        "SET h x IFDEQ 0123",
        "-ERR must be exactly 16 hexadecimal characters\r\n",
    );
    // A missing key is not compared: no length check, IFDNE creates it.
    check("SET m x IFDEQ 0123", "$-1\r\n");
    check("SET m x IFDNE 0123", "+OK\r\n");
    check("SET m y IFNE x", "$-1\r\n");
    check("SET m y IFNE z GET", "$1\r\nx\r\n");
    check("GET m", "$1\r\ny\r\n");
    check("SET new v IFNE z", "+OK\r\n");
    check("SET m y IFNE z NX", "-ERR syntax error\r\n");
    check("SET m y IFEQ y IFNE z", "-ERR syntax error\r\n");
    check(
        "SET list y IFNE z",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    check(
        "COMMAND GETKEYSANDFLAGS SET k v IFEQ x",
        "*1\r\n*2\r\n$1\r\nk\r\n*3\r\n+RW\r\n+access\r\n+update\r\n",
    );
    // DELEX.
    check("DELEX nosuch", ":0\r\n");
    check("DELEX nosuch FOO bar", ":0\r\n");
    check("SET foo hello", "+OK\r\n");
    check("DELEX foo IFEQ other", ":0\r\n");
    check("DELEX foo ifne hello", ":0\r\n");
    check("DELEX foo IFDNE 9555e8555c62dcfd", ":0\r\n");
    check("DELEX foo IFDEQ zzzzzzzzzzzzzzzz", ":0\r\n");
    check(
        "DELEX foo IFDEQ 9555e8555c62dcf",
        "-ERR must be exactly 16 hexadecimal characters\r\n",
    );
    check(
        "DELEX foo FOO hello",
        "-ERR Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE\r\n",
    );
    check(
        "DELEX foo IFEQ",
        "-ERR wrong number of arguments for 'delex' command\r\n",
    );
    check(
        "DELEX nosuch IFEQ a b",
        "-ERR wrong number of arguments for 'delex' command\r\n",
    );
    check(
        "DELEX list IFEQ a",
        "-ERR Key should be of string type if conditions are specified\r\n",
    );
    check("DELEX foo IFEQ hello", ":1\r\n");
    check("EXISTS foo", ":0\r\n");
    check("SET foo 0123", "+OK\r\n");
    check("DELEX foo IFEQ 123", ":0\r\n");
    check("DELEX foo IFNE 123", ":1\r\n");
    check("DELEX list", ":1\r\n");
    check(
        "COMMAND GETKEYSANDFLAGS DELEX k IFEQ x",
        "*1\r\n*2\r\n$1\r\nk\r\n*3\r\n+RW\r\n+access\r\n+delete\r\n",
    );
    check(
        "COMMAND GETKEYSANDFLAGS DELEX k",
        "*1\r\n*2\r\n$1\r\nk\r\n*2\r\n+RM\r\n+delete\r\n",
    );
    // DELIFEQ (Valkey 9.0).
    check("SET mykey abc123", "+OK\r\n");
    check("DELIFEQ mykey abc123", ":1\r\n");
    check("DELIFEQ mykey abc123", ":0\r\n");
    check("SET mykey xyz789", "+OK\r\n");
    check("DELIFEQ mykey abc123", ":0\r\n");
    check("SADD set somevalue", ":1\r\n");
    check(
        "DELIFEQ set somevalue",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    // MSETEX.
    check("MSETEX 2 a 1 b 2 EX 100", ":1\r\n");
    check("MSETEX 2 a 3 c 4 NX", ":0\r\n");
    check("EXISTS c", ":0\r\n");
    check("MSETEX 2 a 3 c 4 XX", ":0\r\n");
    check("MSETEX 2 a 5 b 6 XX KEEPTTL", ":1\r\n");
    check("MGET a b", "*2\r\n$1\r\n5\r\n$1\r\n6\r\n");
    check("MSETEX 1 a 7", ":1\r\n");
    check("TTL a", ":-1\r\n");
    check("MSETEX 0 a 1", "-ERR invalid numkeys value\r\n");
    check("MSETEX x a 1", "-ERR invalid numkeys value\r\n");
    check(
        "MSETEX 3 a 1 b 2",
        "-ERR wrong number of key-value pairs\r\n",
    );
    check("MSETEX 1 a 1 GET", "-ERR syntax error\r\n");
    check("MSETEX 1 a 1 NX XX", "-ERR syntax error\r\n");
    check("MSETEX 1 a 1 EX 10 KEEPTTL", "-ERR syntax error\r\n");
    check(
        "MSETEX 1 a 1 PX 0",
        "-ERR invalid expire time in 'msetex' command\r\n",
    );
    check(
        "MSETEX 1 a",
        "-ERR wrong number of arguments for 'msetex' command\r\n",
    );
    check(
        "COMMAND GETKEYS MSETEX 3 k1 v1 k2 v2 k3 v3 KEEPTTL",
        "*3\r\n$2\r\nk1\r\n$2\r\nk2\r\n$2\r\nk3\r\n",
    );
    let ttl = s(&c.cmd(&[b"TTL", b"b"]));
    assert_eq!(ttl, ":100\r\n", "KEEPTTL kept b's TTL");
}

/// The new commands are recorded as Redis 7.0 commands: a redis-server
/// 7.0 replica of ferrokv ends with the same keys, values and TTLs.
#[test]
fn redis_7_0_replica_follows() {
    let Some(replica) = Server::start_redis(&[]) else {
        return;
    };
    let master = Server::start(&[]);
    let mut m = master.raw();
    let mut r = replica.raw();
    r.cmds(&format!("REPLICAOF 127.0.0.1 {}", master.port));
    let deadline = Instant::now() + Duration::from_secs(20);
    while r.info_field("replication", "master_link_status") != "up" {
        assert!(Instant::now() < deadline, "replica did not sync");
        std::thread::sleep(Duration::from_millis(50));
    }
    for line in [
        "MSETEX 3 a 1 b 2 c 3 PX 500000",
        "MSETEX 2 d 4 e 5",
        "MSETEX 1 a 9 XX KEEPTTL",
        "SET b 20 IFEQ 2 EX 400",
        "SET c 30 IFDEQ 0000000000000000",
        "SET c 31 IFDNE 0000000000000000 KEEPTTL",
        "SET f 6 IFNE x",
        "SET d 40 IFEQ 4 GET",
        "DELEX e IFEQ 5",
        "DELEX d IFDNE 0000000000000000",
        "SET g 7",
        "DELIFEQ g 7",
        "SET h 8",
        "DELEX h",
    ] {
        m.cmds(line);
    }
    let mut keys = vec![];
    for k in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        keys.push(k);
    }
    // Wait until the replica has what the master has.
    let snapshot = |c: &mut Raw| -> Vec<String> {
        keys.iter()
            .flat_map(|k| {
                let v = s(&c.cmd(&[b"GET", k.as_bytes()]));
                let t = s(&c.cmd(&[b"PTTL", k.as_bytes()]));
                let t = match t.trim_start_matches(':').trim().parse::<i64>() {
                    Ok(n) if n > 0 => format!("~{}", (n + 5000) / 10000),
                    _ => t,
                };
                [v, t]
            })
            .collect()
    };
    let want = snapshot(&mut m);
    assert!(want.contains(&"$2\r\n31\r\n".to_string()), "{want:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = snapshot(&mut r);
        if got == want {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "replica {got:?} != master {want:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// INFO names the server; HELLO says `redis` unless `hello-server-name`
/// asks for `ferrokv`.
#[test]
fn identity() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.info_field("server", "redis_version"), "7.0.15");
    assert_eq!(c.info_field("server", "server_name"), "ferrokv");
    assert!(!c.info_field("server", "ferrokv_version").is_empty());
    let hello = s(&c.cmds("HELLO 3"));
    assert!(hello.contains("$6\r\nserver\r\n$5\r\nredis\r\n"), "{hello}");
    assert_eq!(
        s(&c.cmds("CONFIG SET hello-server-name ferrokv")),
        "+OK\r\n"
    );
    let hello = s(&c.cmds("HELLO 2"));
    assert!(
        hello.contains("$6\r\nserver\r\n$7\r\nferrokv\r\n"),
        "{hello}"
    );
    assert!(s(&c.cmds("CONFIG SET hello-server-name valkey")).starts_with("-ERR"));
}
