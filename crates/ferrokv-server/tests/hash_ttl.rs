//! Hash-field expiration (issue 21 part 1), end to end on the real server:
//! HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT, HTTL, HPTTL, HEXPIRETIME,
//! HPEXPIRETIME, HPERSIST (Redis 7.4) and HGETEX, HSETEX, HGETDEL (Redis
//! 8.0): reply codes and errors as the redis.io pages and Redis 8's
//! t_hash.c give them, lazy and active expiry of fields (HLEN counting
//! expired fields until they are deleted, the key going with its last
//! field, `hexpired`/`del` notifications, INFO `expired_subkeys` and
//! `subexpiry`), the hash commands skipping expired fields, what the AOF
//! records (absolute `HPEXPIREAT`, `HDEL` of expired fields, `HSETEX ...
//! PXAT`), a restart from the AOF and a ferrokv replica keeping the TTLs.

mod common;
use common::*;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// One command's reply as text.
fn r(c: &mut Raw, line: &str) -> String {
    String::from_utf8_lossy(&c.cmds(line)).into_owned()
}

/// The integers of an array-of-integers reply.
fn ints(c: &mut Raw, line: &str) -> Vec<i64> {
    let t = r(c, line);
    assert!(t.starts_with('*'), "{line}: {t}");
    t.lines()
        .skip(1)
        .map(|l| {
            l.strip_prefix(':')
                .unwrap_or_else(|| panic!("{line}: {t}"))
                .parse()
                .unwrap()
        })
        .collect()
}

fn start() -> (Server, Raw) {
    let s = Server::start(&["--enable-debug-command", "yes", "--save", ""]);
    let c = s.raw();
    (s, c)
}

#[test]
fn reply_codes_and_conditions() {
    let (_s, mut c) = start();
    assert_eq!(r(&mut c, "HSET h f1 v1 f2 v2 f3 v3"), ":3\r\n");
    assert_eq!(r(&mut c, "OBJECT ENCODING h"), "$8\r\nlistpack\r\n");
    // -2 for a missing field, 1 when set; the hash becomes listpackex.
    assert_eq!(ints(&mut c, "HEXPIRE h 100 FIELDS 2 f1 nope"), [1, -2]);
    assert_eq!(r(&mut c, "OBJECT ENCODING h"), "$10\r\nlistpackex\r\n");
    // NX: only fields without a TTL; XX: only fields with one.
    assert_eq!(ints(&mut c, "HEXPIRE h 200 NX FIELDS 2 f1 f2"), [0, 1]);
    assert_eq!(ints(&mut c, "HEXPIRE h 300 XX FIELDS 2 f2 f3"), [1, 0]);
    // GT: a field without TTL is infinite (never set); LT always sets it.
    assert_eq!(ints(&mut c, "HEXPIRE h 50 GT FIELDS 2 f1 f3"), [0, 0]);
    assert_eq!(ints(&mut c, "HEXPIRE h 500 GT FIELDS 1 f1"), [1]);
    assert_eq!(ints(&mut c, "HEXPIRE h 400 LT FIELDS 2 f1 f3"), [1, 1]);
    assert_eq!(ints(&mut c, "HEXPIRE h 450 LT FIELDS 1 f1"), [0]);
    // TTLs in seconds (rounded up) and ms; -1 without TTL; -2 missing.
    assert_eq!(ints(&mut c, "HTTL h FIELDS 3 f1 f2 nope"), [400, 300, -2]);
    let ms = ints(&mut c, "HPTTL h FIELDS 1 f2")[0];
    assert!((299_000..=300_000).contains(&ms), "{ms}");
    let at = ints(&mut c, "HPEXPIRETIME h FIELDS 1 f2")[0] as u64;
    let now = now_ms();
    assert!(at > now + 299_000 && at <= now + 300_000, "{at} {now}");
    let secs = ints(&mut c, "HEXPIRETIME h FIELDS 1 f2")[0] as u64;
    assert_eq!(secs, at.div_ceil(1000));
    // HPERSIST: 1 removed, -1 no TTL, -2 missing.
    assert_eq!(ints(&mut c, "HPERSIST h FIELDS 3 f2 f2 nope"), [1, -1, -2]);
    assert_eq!(ints(&mut c, "HTTL h FIELDS 1 f2"), [-1]);
    // 0 seconds / a past time deletes the field: 2.
    assert_eq!(ints(&mut c, "HEXPIRE h 0 FIELDS 1 f2"), [2]);
    assert_eq!(ints(&mut c, "HPEXPIREAT h 1 FIELDS 1 f3"), [2]);
    assert_eq!(r(&mut c, "HKEYS h"), "*1\r\n$2\r\nf1\r\n");
    // Absolute times.
    let future = now_ms() / 1000 + 1000;
    assert_eq!(
        ints(&mut c, &format!("HEXPIREAT h {future} FIELDS 1 f1")),
        [1]
    );
    assert_eq!(ints(&mut c, "HEXPIRETIME h FIELDS 1 f1"), [future as i64]);
    assert_eq!(
        ints(&mut c, "HPEXPIRETIME h FIELDS 1 f1"),
        [future as i64 * 1000]
    );
    // The last field deleted deletes the key.
    assert_eq!(ints(&mut c, "HEXPIRE h 0 FIELDS 1 f1"), [2]);
    assert_eq!(r(&mut c, "EXISTS h"), ":0\r\n");
    // A missing key: -2 for every field.
    assert_eq!(ints(&mut c, "HEXPIRE nokey 10 FIELDS 2 a b"), [-2, -2]);
    assert_eq!(ints(&mut c, "HTTL nokey FIELDS 1 a"), [-2]);
    assert_eq!(ints(&mut c, "HPERSIST nokey FIELDS 1 a"), [-2]);
    // HSET of a field discards its TTL; HINCRBY keeps it.
    r(&mut c, "HSET k a 1 b 2");
    ints(&mut c, "HEXPIRE k 100 FIELDS 2 a b");
    r(&mut c, "HSET k a 5");
    assert_eq!(r(&mut c, "HINCRBY k b 3"), ":5\r\n");
    assert_eq!(ints(&mut c, "HTTL k FIELDS 2 a b"), [-1, 100]);
    assert_eq!(r(&mut c, "HINCRBYFLOAT k b 0.5"), "$3\r\n5.5\r\n");
    assert_eq!(ints(&mut c, "HTTL k FIELDS 1 b"), [100]);
}

#[test]
fn errors_in_every_position() {
    let (_s, mut c) = start();
    r(&mut c, "HSET h a 1");
    r(&mut c, "SET s x");
    for (line, want) in [
        // Arity.
        (
            "HEXPIRE h 10 FIELDS 1",
            "-ERR wrong number of arguments for 'hexpire' command\r\n",
        ),
        (
            "HTTL h FIELDS 1",
            "-ERR wrong number of arguments for 'httl' command\r\n",
        ),
        (
            "HGETDEL h FIELDS 1",
            "-ERR wrong number of arguments for 'hgetdel' command\r\n",
        ),
        (
            "HSETEX h FIELDS 1 a",
            "-ERR wrong number of arguments for 'hsetex' command\r\n",
        ),
        // WRONGTYPE wins over argument errors (lookup first in Redis 8).
        (
            "HEXPIRE s x FIELDS 1 a",
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        ),
        (
            "HTTL s FIELDS 0 a",
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        ),
        (
            "HGETEX s EX x FIELDS 1 a",
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        ),
        // The time.
        (
            "HEXPIRE h x FIELDS 1 a",
            "-ERR value is not an integer or out of range\r\n",
        ),
        (
            "HEXPIRE h -1 FIELDS 1 a",
            "-ERR invalid expire time, must be >= 0\r\n",
        ),
        (
            "HEXPIRE h 70368744178 FIELDS 1 a",
            "-ERR invalid expire time in 'hexpire' command\r\n",
        ),
        (
            "HPEXPIREAT h 70368744177664 FIELDS 1 a",
            "-ERR invalid expire time in 'hpexpireat' command\r\n",
        ),
        // FIELDS, numfields, the fields.
        (
            "HEXPIRE h 10 FIELD 1 a",
            "-ERR Mandatory argument FIELDS is missing or not at the right position\r\n",
        ),
        (
            "HEXPIRE h 10 NX NX 1 a",
            "-ERR Mandatory argument FIELDS is missing or not at the right position\r\n",
        ),
        (
            "HEXPIRE h 10 FIELDS 0 a",
            "-ERR Parameter `numFields` should be greater than 0\r\n",
        ),
        (
            "HEXPIRE h 10 FIELDS x a",
            "-ERR Parameter `numFields` should be greater than 0\r\n",
        ),
        (
            "HEXPIRE h 10 FIELDS 2 a",
            "-ERR The `numfields` parameter must match the number of arguments\r\n",
        ),
        (
            "HEXPIRE h 10 FIELDS 1 a b",
            "-ERR The `numfields` parameter must match the number of arguments\r\n",
        ),
        (
            "HTTL h FIELD 1 a",
            "-ERR Mandatory argument FIELDS is missing or not at the right position\r\n",
        ),
        (
            "HTTL h FIELDS -1 a",
            "-ERR Number of fields must be a positive integer\r\n",
        ),
        (
            "HPTTL h FIELDS 3 a b",
            "-ERR The `numfields` parameter must match the number of arguments\r\n",
        ),
        (
            "HPERSIST h FIELDS 0 a",
            "-ERR Number of fields must be a positive integer\r\n",
        ),
        (
            "HGETDEL h FIELDZ 1 a",
            "-ERR Mandatory argument FIELDS is missing or not at the right position\r\n",
        ),
        (
            "HGETDEL h FIELDS 2 a",
            "-ERR The `numfields` parameter must match the number of arguments\r\n",
        ),
        (
            "HGETEX h EX -5 FIELDS 1 a",
            "-ERR invalid expire time, must be >= 0\r\n",
        ),
        (
            "HGETEX h PERSIST FIELDS 0 a",
            "-ERR Number of fields must be a positive integer\r\n",
        ),
        (
            "HGETEX h KEEPTTL FIELDS 1 a",
            "-ERR Mandatory argument FIELDS is missing or not at the right position\r\n",
        ),
        // HSETEX parses its options before the lookup.
        (
            "HSETEX s EX 10 PX 5 FIELDS 1 a b",
            "-ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified\r\n",
        ),
        (
            "HSETEX h KEEPTTL EX 10 FIELDS 1 a b",
            "-ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified\r\n",
        ),
        (
            "HSETEX h FNX FXX FIELDS 1 a b",
            "-ERR Only one of FXX or FNX arguments can be specified\r\n",
        ),
        ("HSETEX h NX FIELDS 1 a b", "-ERR unknown argument: NX\r\n"),
        ("HSETEX h FIELDS 0 a b", "-ERR invalid number of fields\r\n"),
        (
            "HSETEX h FIELDS 2 a b",
            "-ERR wrong number of arguments for 'hsetex' command\r\n",
        ),
        (
            "HSETEX h FIELDS 1 a b c",
            "-ERR wrong number of arguments for 'hsetex' command\r\n",
        ),
        (
            "HSETEX h EX x FIELDS 1 a b",
            "-ERR value is not an integer or out of range\r\n",
        ),
        (
            "HSETEX s FIELDS 1 a b",
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        ),
    ] {
        assert_eq!(r(&mut c, line), want, "{line}");
    }
    // Nothing changed.
    assert_eq!(r(&mut c, "HGETALL h"), "*2\r\n$1\r\na\r\n$1\r\n1\r\n");
    assert_eq!(ints(&mut c, "HTTL h FIELDS 1 a"), [-1]);
}

#[test]
fn lazy_expiry_of_fields() {
    let (_s, mut c) = start();
    assert_eq!(r(&mut c, "DEBUG SET-ACTIVE-EXPIRE 0"), "+OK\r\n");
    r(&mut c, "HSET h f1 v1 f2 v2 f3 v3 f4 v4");
    assert_eq!(ints(&mut c, "HPEXPIRE h 1 FIELDS 3 f1 f2 f3"), [1, 1, 1]);
    std::thread::sleep(Duration::from_millis(20));
    // Still stored: HLEN counts expired fields, as Redis's does.
    assert_eq!(r(&mut c, "HLEN h"), ":4\r\n");
    // Whole-hash reads skip them.
    assert_eq!(r(&mut c, "HGETALL h"), "*2\r\n$2\r\nf4\r\n$2\r\nv4\r\n");
    assert_eq!(r(&mut c, "HVALS h"), "*1\r\n$2\r\nv4\r\n");
    assert_eq!(
        r(&mut c, "HSCAN h 0"),
        "*2\r\n$1\r\n0\r\n*2\r\n$2\r\nf4\r\n$2\r\nv4\r\n"
    );
    assert_eq!(ints(&mut c, "HTTL h FIELDS 2 f1 f4"), [-2, -1]);
    // Naming a field deletes it.
    assert_eq!(r(&mut c, "HEXISTS h f1"), ":0\r\n");
    assert_eq!(r(&mut c, "HLEN h"), ":3\r\n");
    assert_eq!(r(&mut c, "HGET h f2"), "$-1\r\n");
    assert_eq!(r(&mut c, "HSTRLEN h f3"), ":0\r\n");
    assert_eq!(r(&mut c, "HLEN h"), ":1\r\n");
    assert!(r(&mut c, "INFO stats").contains("expired_subkeys:3"));
    // The last field going deletes the key.
    ints(&mut c, "HPEXPIRE h 1 FIELDS 1 f4");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(r(&mut c, "HMGET h f4 zz"), "*2\r\n$-1\r\n$-1\r\n");
    assert_eq!(r(&mut c, "EXISTS h"), ":0\r\n");
    // HRANDFIELD deletes every expired field first.
    r(&mut c, "HSET r a 1 b 2 c 3");
    ints(&mut c, "HPEXPIRE r 1 FIELDS 2 a b");
    std::thread::sleep(Duration::from_millis(20));
    for _ in 0..20 {
        assert_eq!(r(&mut c, "HRANDFIELD r"), "$1\r\nc\r\n");
    }
    assert_eq!(r(&mut c, "HLEN r"), ":1\r\n");
    assert_eq!(
        r(&mut c, "HRANDFIELD r -5"),
        "*5\r\n$1\r\nc\r\n$1\r\nc\r\n$1\r\nc\r\n$1\r\nc\r\n$1\r\nc\r\n"
    );
    // HSET over an expired field counts as an update (Redis: the field is
    // still stored) and clears the TTL.
    ints(&mut c, "HPEXPIRE r 1 FIELDS 1 c");
    r(&mut c, "HSET r d 4");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(r(&mut c, "HSET r c 9"), ":0\r\n");
    assert_eq!(ints(&mut c, "HTTL r FIELDS 1 c"), [-1]);
    // HINCRBY of an expired field starts from 0 without TTL.
    ints(&mut c, "HPEXPIRE r 1 FIELDS 1 d");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(r(&mut c, "HINCRBY r d 2"), ":2\r\n");
    assert_eq!(ints(&mut c, "HTTL r FIELDS 1 d"), [-1]);
}

#[test]
fn active_expiry_and_notifications() {
    let (s, mut c) = start();
    r(&mut c, "CONFIG SET notify-keyspace-events KEA");
    let mut sub = s.raw();
    sub.cmds("PSUBSCRIBE __keyevent@0__:*");
    r(&mut c, "HSET h a 1 b 2");
    r(&mut c, "HSET g a 1 b 2");
    ints(&mut c, "HPEXPIRE h 50 FIELDS 1 a");
    ints(&mut c, "HPEXPIRE g 50 FIELDS 2 a b");
    assert!(r(&mut c, "INFO keyspace").contains("db0:keys=2,expires=0,avg_ttl=0,subexpiry=2"));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while r(&mut c, "EXISTS g") != ":0\r\n" || r(&mut c, "HLEN h") != ":1\r\n" {
        assert!(std::time::Instant::now() < deadline, "fields never expired");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(r(&mut c, "HGETALL h"), "*2\r\n$1\r\nb\r\n$1\r\n2\r\n");
    let info = r(&mut c, "INFO stats");
    assert!(info.contains("expired_subkeys:3"), "{info}");
    assert!(r(&mut c, "INFO keyspace").contains("db0:keys=1,expires=0,avg_ttl=0\r\n"));
    // Events: hset x2, hexpire x2, then hexpired for each hash and del
    // for g.
    let mut events = Vec::new();
    sub.set_timeout(Duration::from_secs(2));
    while let Ok(m) = sub.try_reply() {
        let t = String::from_utf8_lossy(&m).into_owned();
        if let Some(ev) = t.split("__keyevent@0__:").nth(2) {
            let ev = ev.split("\r\n").next().unwrap().to_string();
            let key = t.trim_end().rsplit("\r\n").next().unwrap().to_string();
            events.push(format!("{ev} {key}"));
        }
        if events.len() >= 7 {
            break;
        }
    }
    for want in [
        "hexpire h",
        "hexpire g",
        "hexpired h",
        "hexpired g",
        "del g",
    ] {
        assert!(
            events.iter().any(|e| e == want),
            "{want} missing in {events:?}"
        );
    }
    // CONFIG RESETSTAT zeroes the count.
    r(&mut c, "CONFIG RESETSTAT");
    assert!(r(&mut c, "INFO stats").contains("expired_subkeys:0"));
}

#[test]
fn hgetex_hsetex_hgetdel() {
    let (_s, mut c) = start();
    // HSETEX creates with a TTL; FNX/FXX are all-or-nothing.
    assert_eq!(r(&mut c, "HSETEX h EX 100 FIELDS 2 a 1 b 2"), ":1\r\n");
    assert_eq!(ints(&mut c, "HTTL h FIELDS 2 a b"), [100, 100]);
    assert_eq!(r(&mut c, "HSETEX h FNX FIELDS 2 a 9 c 3"), ":0\r\n");
    assert_eq!(r(&mut c, "HSETEX h FXX FIELDS 2 a 9 c 3"), ":0\r\n");
    assert_eq!(r(&mut c, "HSETEX nokey FXX FIELDS 1 a 1"), ":0\r\n");
    assert_eq!(r(&mut c, "EXISTS nokey"), ":0\r\n");
    // KEEPTTL keeps, no option discards.
    assert_eq!(r(&mut c, "HSETEX h FXX KEEPTTL FIELDS 1 a 5"), ":1\r\n");
    assert_eq!(r(&mut c, "HSETEX h FIELDS 1 b 6"), ":1\r\n");
    assert_eq!(ints(&mut c, "HTTL h FIELDS 2 a b"), [100, -1]);
    assert_eq!(r(&mut c, "HMGET h a b"), "*2\r\n$1\r\n5\r\n$1\r\n6\r\n");
    // A past time deletes (and the key with its last field).
    assert_eq!(r(&mut c, "HSETEX h PXAT 1 FIELDS 1 c 3"), ":1\r\n");
    assert_eq!(r(&mut c, "HEXISTS h c"), ":0\r\n");
    // HGETEX: values, then TTL changes on the fields found.
    assert_eq!(
        r(&mut c, "HGETEX h PX 50000 FIELDS 3 a b zz"),
        "*3\r\n$1\r\n5\r\n$1\r\n6\r\n$-1\r\n"
    );
    let t = ints(&mut c, "HPTTL h FIELDS 2 a b");
    assert!(t.iter().all(|&ms| (49_000..=50_000).contains(&ms)), "{t:?}");
    assert_eq!(
        r(&mut c, "HGETEX h PERSIST FIELDS 1 a"),
        "*1\r\n$1\r\n5\r\n"
    );
    assert_eq!(ints(&mut c, "HTTL h FIELDS 2 a b"), [-1, 50]);
    assert_eq!(r(&mut c, "HGETEX h FIELDS 1 b"), "*1\r\n$1\r\n6\r\n");
    assert_eq!(r(&mut c, "HGETEX h EX 0 FIELDS 1 b"), "*1\r\n$1\r\n6\r\n");
    assert_eq!(r(&mut c, "HEXISTS h b"), ":0\r\n");
    assert_eq!(
        r(&mut c, "HGETEX nokey EX 5 FIELDS 2 a b"),
        "*2\r\n$-1\r\n$-1\r\n"
    );
    // HGETDEL: values and deletion; the key goes with its last field.
    r(&mut c, "HSET h x 1 y 2");
    assert_eq!(
        r(&mut c, "HGETDEL h FIELDS 3 x zz x"),
        "*3\r\n$1\r\n1\r\n$-1\r\n$-1\r\n"
    );
    assert_eq!(
        r(&mut c, "HGETDEL h FIELDS 2 a y"),
        "*2\r\n$1\r\n5\r\n$1\r\n2\r\n"
    );
    assert_eq!(r(&mut c, "EXISTS h"), ":0\r\n");
    assert_eq!(r(&mut c, "HGETDEL h FIELDS 1 a"), "*1\r\n$-1\r\n");
}

/// The records in an AOF's increment files, one command per line.
fn aof_commands(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let aof = dir.join("appendonlydir");
    let mut files: Vec<_> = std::fs::read_dir(&aof)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".incr.aof"))
        .collect();
    files.sort();
    for f in files {
        let text = String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned();
        let mut lines = text.split("\r\n").peekable();
        while let Some(l) = lines.next() {
            let Some(n) = l.strip_prefix('*') else {
                continue;
            };
            let n: usize = n.parse().unwrap();
            let mut args = Vec::new();
            for _ in 0..n {
                lines.next();
                args.push(lines.next().unwrap().to_string());
            }
            out.push(args.join(" "));
        }
    }
    out
}

#[test]
fn propagation_aof_restart_and_replica() {
    let s = Server::start(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut c = s.raw();
    let replica = Server::start(&[]);
    let mut rc = replica.raw();
    r(&mut rc, &format!("REPLICAOF 127.0.0.1 {}", s.port));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while rc.info_field("replication", "master_link_status") != "up" {
        assert!(std::time::Instant::now() < deadline, "replica never synced");
        std::thread::sleep(Duration::from_millis(50));
    }
    r(&mut c, "HSET h a 1 b 2 c 3 d 4");
    assert_eq!(
        ints(&mut c, "HEXPIRE h 1000 NX FIELDS 3 a b nope"),
        [1, 1, -2]
    );
    assert_eq!(ints(&mut c, "HEXPIRE h 0 FIELDS 1 c"), [2]);
    assert_eq!(r(&mut c, "HSETEX g EX 2000 FIELDS 1 x 1"), ":1\r\n");
    assert_eq!(
        r(&mut c, "HGETEX g PERSIST FIELDS 1 x"),
        "*1\r\n$1\r\n1\r\n"
    );
    assert_eq!(
        r(&mut c, "HGETEX g PX 3000000 FIELDS 1 x"),
        "*1\r\n$1\r\n1\r\n"
    );
    assert_eq!(r(&mut c, "HINCRBYFLOAT h a 1.5"), "$3\r\n2.5\r\n");
    assert_eq!(r(&mut c, "HGETDEL h FIELDS 1 d"), "*1\r\n$1\r\n4\r\n");
    ints(&mut c, "HPEXPIRE h 30 FIELDS 1 b");
    // Active expiry deletes b, recorded as HDEL.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while r(&mut c, "HLEN h") != ":1\r\n" {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    let want_h = ints(&mut c, "HPEXPIRETIME h FIELDS 2 a b");
    let want_g = ints(&mut c, "HPEXPIRETIME g FIELDS 1 x");
    assert_eq!(want_h[1], -2);
    assert!(want_h[0] > 0 && want_g[0] > 0);
    // The background expiry's HDEL reaches the file shortly after.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let cmds = loop {
        let cmds = aof_commands(s.dir.path());
        if cmds.iter().any(|l| l == "HDEL h b") || std::time::Instant::now() > deadline {
            break cmds;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let find = |p: &str| cmds.iter().any(|l| l.starts_with(p));
    assert!(find("HPEXPIREAT h "), "{cmds:#?}");
    assert!(find("HDEL h c"), "{cmds:#?}");
    assert!(find("HDEL h b"), "{cmds:#?}");
    assert!(find("HDEL h d"), "{cmds:#?}");
    assert!(find("HSETEX g PXAT "), "{cmds:#?}");
    assert!(find("HPERSIST g FIELDS 1 x"), "{cmds:#?}");
    assert!(find("HSETEX h KEEPTTL FIELDS 1 a 2.5"), "{cmds:#?}");
    // No relative time reaches the AOF.
    assert!(
        !cmds
            .iter()
            .any(|l| l.starts_with("HEXPIRE ") || l.contains(" EX ")),
        "{cmds:#?}"
    );
    // The replica has the same fields and times.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let h = ints(&mut rc, "HPEXPIRETIME h FIELDS 2 a b");
        let g = ints(&mut rc, "HPEXPIRETIME g FIELDS 1 x");
        if h == want_h && g == want_g {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "replica: {h:?} {g:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(r(&mut rc, "HGETALL h"), "*2\r\n$1\r\na\r\n$3\r\n2.5\r\n");
    // A restart from the AOF keeps the TTLs.
    let dir = s.dir.path().to_path_buf();
    drop(c);
    let (_keep, port) = (s, 0);
    let _ = port;
    let s2 = Server::start(&["--appendonly", "yes", "--dir", dir.to_str().unwrap()]);
    let mut c2 = s2.raw();
    assert_eq!(ints(&mut c2, "HPEXPIRETIME h FIELDS 2 a b"), want_h);
    assert_eq!(ints(&mut c2, "HPEXPIRETIME g FIELDS 1 x"), want_g);
}

#[test]
fn memory_cost_of_field_ttls() {
    let (_s, mut c) = start();
    let usage = |c: &mut Raw, k: &str| -> i64 {
        r(c, &format!("MEMORY USAGE {k}"))
            .trim_start_matches(':')
            .trim()
            .parse()
            .unwrap()
    };
    let mut args = String::from("HSET big");
    for i in 0..1000 {
        args.push_str(&format!(" field:{i} value:{i}"));
    }
    r(&mut c, &args);
    r(&mut c, &args.replacen("big", "ttl", 1));
    let plain = usage(&mut c, "big");
    let mut e = String::from("HEXPIRE ttl 1000 FIELDS 1000");
    for i in 0..1000 {
        e.push_str(&format!(" field:{i}"));
    }
    assert!(ints(&mut c, &e).iter().all(|&x| x == 1));
    let with = usage(&mut c, "ttl");
    // Each field TTL costs a bounded number of bytes (the index holds the
    // field name twice plus two entries).
    let per_field = (with - plain) / 1000;
    assert!(
        per_field > 0 && per_field <= 120,
        "{plain} {with} {per_field}"
    );
    // A hash whose TTLs all went keeps only the (empty) metadata.
    let mut p = String::from("HPERSIST ttl FIELDS 1000");
    for i in 0..1000 {
        p.push_str(&format!(" field:{i}"));
    }
    ints(&mut c, &p);
    let after = usage(&mut c, "ttl");
    assert!(after - plain < 200, "{plain} {after}");
}
