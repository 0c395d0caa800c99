//! DEBUG subcommands against redis-server 7.0: every deterministic reply
//! and error is compared byte for byte in RESP2 and RESP3 (PROTOCOL's
//! values, ERROR, the switches, argument-count and unknown-subcommand
//! errors, HTSTATS of an empty database...), and the subcommands with
//! effects are checked by those effects: PAUSE-CRON stops active expiry,
//! SET-SKIP-CHECKSUM-VALIDATION lets a RESTORE payload and an RDB file
//! with a wrong checksum through, SET-DISABLE-DENY-SCRIPTS lets scripts
//! call `noscript` commands, LOG writes to the log file, LOADAOF reloads
//! the AOF (and exits when there is none), PANIC / ASSERT / OOM /
//! SEGFAULT end the process by the signal Redis dies of, RESTART and
//! CRASH-AND-RECOVER come back on the same port.

mod common;
use common::*;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

const DEBUG_ON: &[&str] = &["--enable-debug-command", "yes"];

/// Both servers with DEBUG enabled plus `extra`; None without
/// redis-server.
fn servers(extra: &[&str]) -> Option<(Server, Server)> {
    let mut args: Vec<&str> = DEBUG_ON.to_vec();
    args.extend_from_slice(extra);
    let redis = Server::start_redis(&args)?;
    // Redis's crash report runs a memory test unless told not to.
    Some((Server::start(&args), redis))
}

/// A raw connection, switched to RESP3 when `resp3`.
fn conn(s: &Server, resp3: bool) -> Raw {
    let mut c = s.raw();
    if resp3 {
        c.cmds("HELLO 3");
    }
    c
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Sends `args` to both and asserts the same reply bytes; `extra` more
/// frames are read after the first (PROTOCOL push / attrib).
fn same(a: &mut Raw, b: &mut Raw, args: &[&[u8]], extra: usize) {
    let mut x = a.cmd(args);
    let mut y = b.cmd(args);
    for _ in 0..extra {
        x.extend(a.reply());
        y.extend(b.reply());
    }
    assert_eq!(
        show(&x),
        show(&y),
        "{:?}",
        args.iter().map(|a| show(a)).collect::<Vec<_>>()
    );
}

fn same_line(a: &mut Raw, b: &mut Raw, line: &str) {
    let parts: Vec<&[u8]> = line.split_whitespace().map(str::as_bytes).collect();
    same(a, b, &parts, 0);
}

/// Every deterministic reply, in both protocols.
#[test]
fn replies_match_redis() {
    let Some((ours, redis)) = servers(&[]) else {
        return;
    };
    for resp3 in [false, true] {
        let (mut a, mut b) = (conn(&ours, resp3), conn(&redis, resp3));
        for t in [
            "string", "integer", "double", "bignum", "null", "array", "set", "map", "true",
            "false", "verbatim", "STRING", "nope", "",
        ] {
            same(&mut a, &mut b, &[b"DEBUG", b"PROTOCOL", t.as_bytes()], 0);
        }
        // An attribute and a push are followed by the real reply.
        same(
            &mut a,
            &mut b,
            &[b"DEBUG", b"PROTOCOL", b"attrib"],
            resp3 as usize,
        );
        same(
            &mut a,
            &mut b,
            &[b"DEBUG", b"PROTOCOL", b"push"],
            resp3 as usize,
        );
        same(&mut a, &mut b, &[b"DEBUG", b"ERROR", b"ERR custom"], 0);
        same(
            &mut a,
            &mut b,
            &[b"DEBUG", b"ERROR", b"NOCODE two\r\nlines"],
            0,
        );
        same(&mut a, &mut b, &[b"DEBUG", b"ERROR", b""], 0);
        same(&mut a, &mut b, &[b"DEBUG", b"LOG", b"hello log"], 0);
        for line in [
            // Arity and unknown subcommands (7.0 has no JMAP, DICT-RESIZING,
            // ZIPLIST, HTSTATS FULL).
            "DEBUG PROTOCOL",
            "DEBUG PROTOCOL a b",
            "DEBUG LOG",
            "DEBUG LOG a b",
            "DEBUG LEAK",
            "DEBUG LEAK x",
            "DEBUG ERROR",
            "DEBUG JMAP",
            "DEBUG DICT-RESIZING 1",
            "DEBUG ZIPLIST k",
            "DEBUG NOSUCHTHING",
            "DEBUG HELP extra",
            "DEBUG SLEEP 0",
            "DEBUG SLEEP",
            "DEBUG SET-ACTIVE-EXPIRE 1",
            "DEBUG SET-ACTIVE-EXPIRE",
            "DEBUG SET-ACTIVE-EXPIRE x",
            "DEBUG QUICKLIST-PACKED-THRESHOLD 1K",
            "DEBUG QUICKLIST-PACKED-THRESHOLD 1b",
            "DEBUG QUICKLIST-PACKED-THRESHOLD 1",
            "DEBUG QUICKLIST-PACKED-THRESHOLD kb",
            "DEBUG QUICKLIST-PACKED-THRESHOLD 4293918720",
            "DEBUG QUICKLIST-PACKED-THRESHOLD 4293918721",
            "DEBUG QUICKLIST-PACKED-THRESHOLD 4gb",
            "DEBUG QUICKLIST-PACKED-THRESHOLD 5GB",
            "DEBUG QUICKLIST-PACKED-THRESHOLD -1",
            "DEBUG QUICKLIST-PACKED-THRESHOLD abc",
            "DEBUG QUICKLIST-PACKED-THRESHOLD 99999999999999999999",
            "DEBUG QUICKLIST-PACKED-THRESHOLD 0",
            "DEBUG QUICKLIST-PACKED-THRESHOLD",
            "DEBUG SET-SKIP-CHECKSUM-VALIDATION 0",
            "DEBUG SET-SKIP-CHECKSUM-VALIDATION",
            "DEBUG AOF-FLUSH-SLEEP 0",
            "DEBUG AOF-FLUSH-SLEEP",
            "DEBUG REPLICATE SET x y",
            "DEBUG REPLICATE",
            "DEBUG DROP-CLUSTER-PACKET-FILTER -1",
            "DEBUG DROP-CLUSTER-PACKET-FILTER x",
            "DEBUG DROP-CLUSTER-PACKET-FILTER",
            "DEBUG STRUCTSIZE x",
            "DEBUG HTSTATS 0",
            "DEBUG HTSTATS 15",
            "DEBUG HTSTATS 16",
            "DEBUG HTSTATS -1",
            "DEBUG HTSTATS x",
            "DEBUG HTSTATS 0 full",
            "DEBUG HTSTATS",
            "DEBUG HTSTATS-KEY nokey",
            "DEBUG HTSTATS-KEY",
            "DEBUG HTSTATS-KEY k full",
            "DEBUG CHANGE-REPL-ID x",
            "DEBUG STRINGMATCH-TEST x",
            "DEBUG SET-DISABLE-DENY-SCRIPTS 0",
            "DEBUG SET-DISABLE-DENY-SCRIPTS",
            "DEBUG CONFIG-REWRITE-FORCE-ALL",
            "DEBUG CONFIG-REWRITE-FORCE-ALL x",
            "DEBUG CLIENT-EVICTION",
            "DEBUG CLIENT-EVICTION x",
            "DEBUG PAUSE-CRON 0",
            "DEBUG PAUSE-CRON",
            "DEBUG REPLYBUFFER PEAK-RESET-TIME never",
            "DEBUG REPLYBUFFER PEAK-RESET-TIME reset",
            "DEBUG REPLYBUFFER PEAK-RESET-TIME 100",
            "DEBUG REPLYBUFFER PEAK-RESET-TIME x",
            "DEBUG REPLYBUFFER RESIZING 0",
            "DEBUG REPLYBUFFER RESIZING 1",
            "DEBUG REPLYBUFFER OTHER 1",
            "DEBUG REPLYBUFFER RESIZING",
            "DEBUG CLUSTERLINK KILL to abc",
            "DEBUG CLUSTERLINK KILL",
            "DEBUG RESTART x",
            "DEBUG CRASH-AND-RECOVER x",
            "DEBUG SDSLEN nokey",
            "DEBUG SDSLEN",
            "DEBUG LISTPACK nokey",
            "DEBUG LISTPACK",
            "DEBUG QUICKLIST nokey",
            "DEBUG QUICKLIST",
            "DEBUG QUICKLIST a b c",
            "DEBUG OBJECT",
            "DEBUG DIGEST x",
        ] {
            same_line(&mut a, &mut b, line);
        }
        // Values of each encoding: the text replies that do not show
        // addresses or sizes, and the errors.
        for line in [
            "FLUSHALL",
            "SET str hello",
            "SET int 12345",
            "RPUSH list a b 3",
            "HSET smallhash f v",
            "ZADD smallzset 1 a",
            "SADD intset 1 2 3",
            "SADD smallset a b c",
            "DEBUG HTSTATS-KEY str",
            "DEBUG HTSTATS-KEY list",
            "DEBUG HTSTATS-KEY smallhash",
            "DEBUG HTSTATS-KEY smallzset",
            "DEBUG HTSTATS-KEY intset",
            "DEBUG SDSLEN int",
            "DEBUG SDSLEN list",
            "DEBUG LISTPACK smallhash",
            "DEBUG LISTPACK smallzset",
            "DEBUG LISTPACK list",
            "DEBUG LISTPACK str",
            "DEBUG LISTPACK intset",
            "DEBUG QUICKLIST list",
            "DEBUG QUICKLIST list 1",
            "DEBUG QUICKLIST list x",
            "DEBUG QUICKLIST smallhash",
            "DEBUG QUICKLIST str 1",
        ] {
            same_line(&mut a, &mut b, line);
        }
        // The stats of a populated database: the same elements (the table
        // layouts are each server's own).
        same_line(&mut a, &mut b, "DEBUG POPULATE 1000");
        same_line(&mut a, &mut b, "SET volatile v EX 1000");
        // Elements in the key table and in the TTL table.
        let elements = |r: &[u8]| -> (u64, u64) {
            let t = show(r);
            let (keys, ttls) = t.split_once("[Expires HT]").expect("two sections");
            let sum = |s: &str| -> u64 {
                s.lines()
                    .filter_map(|l| l.strip_prefix(" number of elements: "))
                    .map(|v| v.parse::<u64>().unwrap())
                    .sum()
            };
            (sum(keys), sum(ttls))
        };
        let (x, y) = (a.cmds("DEBUG HTSTATS 0"), b.cmds("DEBUG HTSTATS 0"));
        assert_eq!(
            elements(&x),
            elements(&y),
            "{}\n---\n{}",
            show(&x),
            show(&y)
        );
        assert_eq!(elements(&x), (1008, 1));
        assert!(show(&x)
            .contains("[Dictionary HT]\nHash table 0 stats (main hash table):\n table size: "));
        assert!(
            show(&x).contains("[Expires HT]\nHash table 0 stats (main hash table):\n table size: ")
        );
        assert!(show(&x).contains(" Chain length distribution:\n   0: "));
        let members: Vec<String> = (0..300).map(|i| format!("m{i}")).collect();
        let mut sadd: Vec<&[u8]> = vec![b"SADD", b"bigset"];
        sadd.extend(members.iter().map(|m| m.as_bytes()));
        same(&mut a, &mut b, &sadd, 0);
        let mut zadd: Vec<Vec<u8>> = vec![b"ZADD".to_vec(), b"bigzset".to_vec()];
        for (i, m) in members.iter().enumerate() {
            zadd.push(i.to_string().into_bytes());
            zadd.push(m.clone().into_bytes());
        }
        let zadd: Vec<&[u8]> = zadd.iter().map(|v| v.as_slice()).collect();
        same(&mut a, &mut b, &zadd, 0);
        same_line(&mut a, &mut b, "CONFIG SET hash-max-listpack-entries 128");
        let mut hset: Vec<Vec<u8>> = vec![b"HSET".to_vec(), b"bighash".to_vec()];
        for m in &members {
            hset.push(m.clone().into_bytes());
            hset.push(b"v".to_vec());
        }
        let hset: Vec<&[u8]> = hset.iter().map(|v| v.as_slice()).collect();
        same(&mut a, &mut b, &hset, 0);
        same_line(&mut a, &mut b, "OBJECT ENCODING bighash");
        for key in ["bigset", "bigzset", "bighash"] {
            let x = show(&a.cmds(&format!("DEBUG HTSTATS-KEY {key}")));
            let y = show(&b.cmds(&format!("DEBUG HTSTATS-KEY {key}")));
            for r in [&x, &y] {
                assert!(
                    r.contains("Hash table 0 stats (main hash table):\n"),
                    "{key}: {r}"
                );
            }
            assert!(x.contains(" number of elements: 300\n"), "{key}: {x}");
            let size: usize = x
                .lines()
                .find_map(|l| l.strip_prefix(" table size: "))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            assert!(size >= 300, "{key}: {x}");
        }
        // STRUCTSIZE names ferrokv's own structures.
        let s = show(&a.cmds("DEBUG STRUCTSIZE"));
        assert!(s.contains("bits:64 entry:"), "{s}");
        // MALLCTL: jemalloc builds only; ferrokv answers as a build without.
        let s = show(&a.cmds("DEBUG MALLCTL x"));
        assert_eq!(
            s,
            "-ERR unknown subcommand or wrong number of arguments for 'MALLCTL'. Try DEBUG HELP.\r\n"
        );
        let s = show(&a.cmds("DEBUG MALLCTL-STR x"));
        assert!(s.starts_with("-ERR unknown subcommand"), "{s}");
        same_line(&mut a, &mut b, "FLUSHALL");
    }
    // The fuzz test takes a couple of seconds: once.
    let (mut a, mut b) = (conn(&ours, false), conn(&redis, false));
    a.set_timeout(Duration::from_secs(60));
    b.set_timeout(Duration::from_secs(60));
    same_line(&mut a, &mut b, "DEBUG STRINGMATCH-TEST");
}

/// DEBUG HELP: Redis 7.0's text without the jemalloc-only MALLCTL lines.
#[test]
fn help_matches_redis_without_jemalloc_lines() {
    let Some((ours, redis)) = servers(&[]) else {
        return;
    };
    let x = show(&ours.raw().cmds("DEBUG HELP"));
    let y = show(&redis.raw().cmds("DEBUG HELP"));
    let lines = |s: &str| -> Vec<String> {
        let mut v: Vec<String> = s.split("\r\n").skip(1).map(str::to_string).collect();
        v.retain(|l| !l.is_empty());
        v
    };
    let mut want = lines(&y);
    if let Some(i) = want.iter().position(|l| l.starts_with("+MALLCTL <key>")) {
        want.drain(i..i + 4);
    }
    assert_eq!(lines(&x), want);
}

fn dbsize(c: &mut Raw) -> String {
    show(&c.cmds("DBSIZE"))
}

/// PAUSE-CRON 1 stops active expiry (keys past their TTL stay counted);
/// PAUSE-CRON 0 lets it run again.
#[test]
fn pause_cron_stops_active_expiry() {
    let Some((ours, redis)) = servers(&[]) else {
        return;
    };
    for s in [&ours, &redis] {
        let mut c = s.raw();
        assert_eq!(show(&c.cmds("DEBUG PAUSE-CRON 1")), "+OK\r\n");
        c.cmds("SET k v PX 50");
        std::thread::sleep(Duration::from_millis(600));
        assert_eq!(dbsize(&mut c), ":1\r\n", "port {}", s.port);
        assert_eq!(show(&c.cmds("DEBUG PAUSE-CRON 0")), "+OK\r\n");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while dbsize(&mut c) != ":0\r\n" {
            assert!(std::time::Instant::now() < deadline, "not expired");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A RESTORE payload with a wrong CRC is refused, then accepted after
/// SET-SKIP-CHECKSUM-VALIDATION 1; an RDB file with a wrong checksum
/// loads with it too.
#[test]
fn skip_checksum_validation() {
    let Some((ours, redis)) = servers(&[]) else {
        return;
    };
    let (mut a, mut b) = (ours.raw(), redis.raw());
    same_line(&mut a, &mut b, "SET src hello");
    let dump = |c: &mut Raw| {
        let r = c.cmds("DUMP src");
        let body = r.splitn(2, |&x| x == b'\n').nth(1).unwrap().to_vec();
        body[..body.len() - 2].to_vec()
    };
    let (mut pa, mut pb) = (dump(&mut a), dump(&mut b));
    assert_eq!(pa, pb);
    let n = pa.len();
    pa[n - 1] ^= 0xff;
    pb[n - 1] ^= 0xff;
    let x = a.cmd(&[b"RESTORE", b"dst", b"0", &pa]);
    let y = b.cmd(&[b"RESTORE", b"dst", b"0", &pb]);
    assert_eq!(show(&x), show(&y));
    assert_eq!(
        show(&x),
        "-ERR DUMP payload version or checksum are wrong\r\n"
    );
    same_line(&mut a, &mut b, "DEBUG SET-SKIP-CHECKSUM-VALIDATION 1");
    let x = a.cmd(&[b"RESTORE", b"dst", b"0", &pa]);
    let y = b.cmd(&[b"RESTORE", b"dst", b"0", &pb]);
    assert_eq!(show(&x), show(&y));
    assert_eq!(show(&x), "+OK\r\n");
    same_line(&mut a, &mut b, "GET dst");
    // An RDB file whose trailing CRC is wrong.
    for (s, c) in [(&ours, &mut a), (&redis, &mut b)] {
        assert_eq!(show(&c.cmds("SAVE")), "+OK\r\n");
        let path = s.dir.path().join("dump.rdb");
        let mut f = std::fs::read(&path).unwrap();
        let n = f.len();
        f[n - 1] ^= 0xff;
        std::fs::write(&path, f).unwrap();
        c.cmds("SET extra 1");
        assert_eq!(
            show(&c.cmds("DEBUG RELOAD NOSAVE")),
            "+OK\r\n",
            "port {}",
            s.port
        );
        assert_eq!(show(&c.cmds("GET extra")), "$-1\r\n");
        assert_eq!(show(&c.cmds("GET dst")), "$5\r\nhello\r\n");
    }
}

/// Scripts may call `noscript` commands (DEBUG itself) after
/// SET-DISABLE-DENY-SCRIPTS 1, and no longer after 0.
#[test]
fn disable_deny_scripts() {
    let Some((ours, redis)) = servers(&[]) else {
        return;
    };
    let (mut a, mut b) = (ours.raw(), redis.raw());
    let eval: &[&[u8]] = &[
        b"EVAL",
        b"return redis.call('debug','set-active-expire','1')",
        b"0",
    ];
    let (x, y) = (a.cmd(eval), b.cmd(eval));
    assert!(
        show(&x).starts_with("-ERR This Redis command is not allowed from script"),
        "{}",
        show(&x)
    );
    assert!(
        show(&y).starts_with("-ERR This Redis command is not allowed from script"),
        "{}",
        show(&y)
    );
    same_line(&mut a, &mut b, "DEBUG SET-DISABLE-DENY-SCRIPTS 1");
    same(&mut a, &mut b, eval, 0);
    same_line(&mut a, &mut b, "DEBUG SET-DISABLE-DENY-SCRIPTS 0");
    let x = a.cmd(eval);
    assert!(show(&x).starts_with("-ERR This Redis command is not allowed from script"));
}

/// DEBUG LOG writes "DEBUG LOG: <message>" to the log file.
#[test]
fn log_goes_to_the_log_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.log");
    let p = path.to_str().unwrap();
    let ours = Server::start(&["--enable-debug-command", "yes", "--logfile", p]);
    let mut c = ours.raw();
    assert_eq!(
        show(&c.cmds("DEBUG LOG marker-1234 and more")),
        "-ERR unknown subcommand or wrong number of arguments for 'LOG'. Try DEBUG HELP.\r\n"
    );
    assert_eq!(
        show(&c.cmd(&[b"DEBUG", b"LOG", b"marker-1234 here"])),
        "+OK\r\n"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if text.contains("DEBUG LOG: marker-1234 here") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not logged: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// LOADAOF reloads the AOF with appendonly yes; with no AOF, 7.0.15 (and
/// ferrokv) exit with status 1.
#[test]
fn loadaof() {
    let Some((ours, redis)) = servers(&["--appendonly", "yes"]) else {
        return;
    };
    let (mut a, mut b) = (ours.raw(), redis.raw());
    for line in [
        "SET a 1",
        "RPUSH l x y z",
        "INCR a",
        "DEBUG LOADAOF",
        "GET a",
        "LRANGE l 0 -1",
        "DEBUG LOADAOF x",
        "DBSIZE",
    ] {
        same_line(&mut a, &mut b, line);
    }
    // Writes after a reload go to the AOF once: a second reload sees them.
    same_line(&mut a, &mut b, "SET c 3");
    same_line(&mut a, &mut b, "DEBUG LOADAOF");
    same_line(&mut a, &mut b, "MGET a c");
    same_line(&mut a, &mut b, "DBSIZE");
    // An AOF holding EVAL and MULTI/EXEC (as older servers wrote them)
    // replays under DEBUG LOADAOF: the script runs inside the reload
    // (ferrokv used to wait forever on the gate the reload held).
    for s in [&ours, &redis] {
        let dir = s.dir.path().join("appendonlydir");
        let incr = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".incr.aof"))
            .max()
            .expect("an incr file");
        let mut f = std::fs::OpenOptions::new().append(true).open(incr).unwrap();
        use std::io::Write;
        for rec in [
            &[
                &b"EVAL"[..],
                b"redis.call('set',KEYS[1],'e'); return 1",
                b"1",
                b"e",
            ][..],
            &[b"MULTI"],
            &[b"INCR", b"a"],
            &[b"EXEC"],
        ] {
            f.write_all(&encode(rec)).unwrap();
        }
    }
    a.set_timeout(Duration::from_secs(10));
    same_line(&mut a, &mut b, "DEBUG LOADAOF");
    same_line(&mut a, &mut b, "MGET a c e");
    drop((a, b));
    let Some((mut ours, mut redis)) = servers(&[]) else {
        return;
    };
    for s in [&mut ours, &mut redis] {
        let mut c = s.raw();
        c.send_cmd(&[b"DEBUG", b"LOADAOF"]);
        assert!(c.try_reply().is_err());
        let st = s.wait_exit(10).expect("exited");
        assert_eq!(st.code(), Some(1), "port {}", s.port);
    }
}

/// The crash subcommands end the process by the signal Redis dies of, and
/// PANIC / ASSERT leave their report in the log.
#[test]
fn crashes_kill_the_process() {
    let dir = tempfile::tempdir().unwrap();
    for (sub, sig, text) in [
        (
            "PANIC",
            libc::SIGABRT,
            "Guru Meditation: DEBUG PANIC called at Unix time",
        ),
        ("ASSERT", libc::SIGABRT, "'1 == 2' is not true"),
        ("OOM", libc::SIGABRT, "OUT OF MEMORY"),
        ("SEGFAULT", libc::SIGSEGV, "DEBUG SEGFAULT"),
    ] {
        let log = dir.path().join(format!("{sub}.log"));
        let p = log.to_str().unwrap();
        let mut ours = Server::start(&["--enable-debug-command", "yes", "--logfile", p]);
        let mut c = ours.raw();
        c.send_cmd(&[b"DEBUG", sub.as_bytes()]);
        assert!(c.try_reply().is_err(), "{sub} replied");
        let st = ours.wait_exit(10).expect("exited");
        assert_eq!(st.signal(), Some(sig), "{sub}: {st:?}");
        let text_logged = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(text_logged.contains(text), "{sub}: {text_logged}");
        if let Some(mut redis) = Server::start_redis(&[
            "--enable-debug-command",
            "yes",
            "--crash-memcheck-enabled",
            "no",
            "--crash-log-enabled",
            "no",
        ]) {
            let mut c = redis.raw();
            c.send_cmd(&[b"DEBUG", sub.as_bytes()]);
            assert!(c.try_reply().is_err(), "redis {sub} replied");
            let st = redis.wait_exit(10).expect("redis exited");
            assert_eq!(st.signal(), Some(sig), "redis {sub}: {st:?}");
        }
    }
}

/// RESTART saves and comes back on the same port with the data;
/// CRASH-AND-RECOVER comes back without saving.
#[test]
fn restart_and_crash_and_recover() {
    let ours = Server::start(&["--enable-debug-command", "yes", "--save", "3600 1"]);
    let mut c = ours.raw();
    c.cmds("SET kept 1");
    c.send_cmd(&[b"DEBUG", b"RESTART", b"50"]);
    assert!(c.try_reply().is_err());
    let back = |port: u16| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                drop(s);
                let mut c = Raw::connect(port);
                c.set_timeout(Duration::from_secs(20));
                c.send_cmd(&[b"PING"]);
                if c.try_reply().is_ok_and(|r| r == b"+PONG\r\n") {
                    return c;
                }
            }
            assert!(std::time::Instant::now() < deadline, "not back");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let mut c = back(ours.port);
    assert_eq!(show(&c.cmds("GET kept")), "$1\r\n1\r\n");
    c.cmds("SET lost 1");
    c.send_cmd(&[b"DEBUG", b"CRASH-AND-RECOVER"]);
    assert!(c.try_reply().is_err());
    let mut c = back(ours.port);
    assert_eq!(show(&c.cmds("GET lost")), "$-1\r\n");
    assert_eq!(show(&c.cmds("GET kept")), "$1\r\n1\r\n");
}
