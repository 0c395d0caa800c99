//! CLIENT PAUSE and CLIENT UNPAUSE, run the same way against redis-server
//! 7.0 and ferrokv: which commands wait under WRITE and ALL, that a held
//! command runs (in order with the ones pipelined after it) when the pause
//! ends or is lifted, that active expiry stops meanwhile, and the errors.

mod common;
use common::*;
use std::time::{Duration, Instant};

/// Sends `line` on a new connection and returns (reply, time it took).
fn timed(port: u16, line: &str) -> (String, Duration) {
    let mut c = Raw::connect(port);
    let t = Instant::now();
    let r = c.cmds(line);
    (String::from_utf8_lossy(&r).into_owned(), t.elapsed())
}

fn both(f: impl Fn(u16, &str)) {
    if let Some(r) = Server::start_redis(&[]) {
        f(r.port, "redis-server");
    }
    let o = Server::start(&[]);
    f(o.port, "ferrokv");
}

const HELD: Duration = Duration::from_millis(250);

#[test]
fn write_pause_holds_writes_only() {
    both(|port, who| {
        let mut c = Raw::connect(port);
        c.cmds("SET k 1");
        c.cmds("CLIENT PAUSE 600 WRITE");
        for read in [
            "GET k",
            "EXISTS k",
            "PING",
            "TTL k",
            "EVAL_RO \"return 1\" 0",
        ] {
            let (_, t) = timed(port, read);
            assert!(t < HELD, "{who}: {read} waited {t:?}");
        }
        // EVAL of a script without a shebang waits (EVAL is
        // may-replicate); scripts with flags: see scripts_under_write_pause.
        for write in ["SET k 2", "PUBLISH ch m", "EVAL \"return 1\" 0", "INCR n"] {
            c.cmds("CLIENT PAUSE 400 WRITE");
            let (r, t) = timed(port, write);
            assert!(
                t >= HELD,
                "{who}: {write} ran during the pause ({t:?}, {r:?})"
            );
        }
        // A transaction: its writes queue during the pause only after it.
        c.cmds("CLIENT PAUSE 400 WRITE");
        let mut m = Raw::connect(port);
        assert_eq!(m.cmds("MULTI"), b"+OK\r\n");
        let t = Instant::now();
        assert_eq!(m.cmds("SET t 1"), b"+QUEUED\r\n");
        assert!(
            t.elapsed() >= HELD,
            "{who}: queued a write during the pause"
        );
        c.cmds("CLIENT PAUSE 400 WRITE");
        let t = Instant::now();
        assert_eq!(m.cmds("EXEC"), b"*1\r\n+OK\r\n");
        assert!(
            t.elapsed() >= HELD,
            "{who}: EXEC of a write ran during the pause"
        );
    });
}

#[test]
fn all_pause_holds_everything_and_unpause_releases() {
    both(|port, who| {
        let mut c = Raw::connect(port);
        c.cmds("CLIENT PAUSE 500 ALL");
        let (_, t) = timed(port, "PING");
        assert!(t >= HELD, "{who}: PING ran during ALL ({t:?})");
        // Even CLIENT UNPAUSE waits under ALL.
        c.cmds("CLIENT PAUSE 500 ALL");
        let (_, t) = timed(port, "CLIENT UNPAUSE");
        assert!(t >= HELD, "{who}: CLIENT UNPAUSE ran during ALL ({t:?})");
        // A WRITE pause lifted early releases the held command at once.
        c.cmds("CLIENT PAUSE 10000 WRITE");
        let h = std::thread::spawn(move || timed(port, "SET k v"));
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(c.cmds("CLIENT UNPAUSE"), b"+OK\r\n");
        let (r, t) = h.join().unwrap();
        assert_eq!(r, "+OK\r\n", "{who}");
        assert!(t < Duration::from_secs(3), "{who}: released after {t:?}");
        // A second pause keeps the stronger kind and the later end.
        c.cmds("CLIENT PAUSE 500 ALL");
        let mut d = Raw::connect(port);
        let t = Instant::now();
        assert_eq!(d.cmds("CLIENT PAUSE 100 WRITE"), b"+OK\r\n");
        assert!(t.elapsed() >= HELD, "{who}");
    });
}

#[test]
fn held_command_keeps_pipeline_order() {
    both(|port, who| {
        let mut c = Raw::connect(port);
        c.cmds("DEL l");
        c.cmds("CLIENT PAUSE 300 WRITE");
        let mut p = Raw::connect(port);
        p.send(b"RPUSH l a\r\nLRANGE l 0 -1\r\nRPUSH l b\r\nLRANGE l 0 -1\r\n");
        let mut got = Vec::new();
        for _ in 0..4 {
            got.push(String::from_utf8_lossy(&p.reply()).into_owned());
        }
        assert_eq!(
            got,
            [
                ":1\r\n",
                "*1\r\n$1\r\na\r\n",
                ":2\r\n",
                "*2\r\n$1\r\na\r\n$1\r\nb\r\n"
            ],
            "{who}"
        );
    });
}

#[test]
fn active_expiry_stops_during_a_pause() {
    both(|port, who| {
        let mut c = Raw::connect(port);
        c.cmds("FLUSHALL");
        c.cmds("SET e 1 PX 50");
        c.cmds("CLIENT PAUSE 700 WRITE");
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(c.cmds("DBSIZE"), b":1\r\n", "{who}: expired while paused");
        std::thread::sleep(Duration::from_millis(900));
        assert_eq!(c.cmds("DBSIZE"), b":0\r\n", "{who}: not expired after");
    });
}

/// A read of an expired key during a write pause answers nil but deletes
/// nothing (expired_keys and DBSIZE stay); after UNPAUSE the read deletes
/// it. With the AOF on too (reads then delete after the command, to record
/// the DEL).
#[test]
fn lazy_expiry_stops_during_a_pause() {
    for aof in [false, true] {
        let args: &[&str] = if aof { &["--appendonly", "yes"] } else { &[] };
        let run = |port: u16, who: &str| {
            let mut c = Raw::connect(port);
            let expired = |c: &mut Raw| c.info_field("stats", "expired_keys");
            c.cmds("FLUSHALL");
            c.cmds("DEBUG SET-ACTIVE-EXPIRE 0");
            let before = expired(&mut c);
            c.cmds("SET e 1 PX 20");
            c.cmds("CLIENT PAUSE 60000 WRITE");
            std::thread::sleep(Duration::from_millis(100));
            assert_eq!(c.cmds("GET e"), b"$-1\r\n", "{who}");
            assert_eq!(c.cmds("EXISTS e"), b":0\r\n", "{who}");
            assert_eq!(
                c.cmds("DBSIZE"),
                b":1\r\n",
                "{who} aof={aof}: deleted while paused"
            );
            assert_eq!(expired(&mut c), before, "{who} aof={aof}");
            c.cmds("CLIENT UNPAUSE");
            assert_eq!(c.cmds("GET e"), b"$-1\r\n", "{who}");
            assert_eq!(
                c.cmds("DBSIZE"),
                b":0\r\n",
                "{who} aof={aof}: not deleted after"
            );
            c.cmds("DEBUG SET-ACTIVE-EXPIRE 1");
        };
        let mut with: Vec<&str> = vec!["--enable-debug-command", "yes"];
        with.extend_from_slice(args);
        if let Some(r) = Server::start_redis(&with) {
            run(r.port, "redis-server");
        }
        let o = Server::start(&with);
        run(o.port, "ferrokv");
    }
}

#[test]
fn errors_match_redis() {
    let Some(mut p) = Pair::start() else { return };
    for line in [
        "CLIENT PAUSE",
        "CLIENT PAUSE abc",
        "CLIENT PAUSE -1",
        "CLIENT PAUSE 10 sometimes",
        "CLIENT PAUSE abc sometimes",
        "CLIENT PAUSE 10 write extra",
        "CLIENT PAUSE 0",
        "CLIENT PAUSE 0 WRITE",
        "CLIENT PAUSE 9223372036854775807",
        "CLIENT UNPAUSE",
        "CLIENT UNPAUSE now",
        "COMMAND INFO client|pause client|unpause",
    ] {
        p.check_line(line);
    }
}

/// Sends `args` on a new connection from another thread; the reply and the
/// time it took arrive on the handle.
fn spawn_cmd(port: u16, args: Vec<Vec<u8>>) -> std::thread::JoinHandle<(Vec<u8>, Duration)> {
    std::thread::spawn(move || {
        let mut c = Raw::connect(port);
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let t = Instant::now();
        let r = c.cmd(&refs);
        (r, t.elapsed())
    })
}

fn argv(a: &[&str]) -> Vec<Vec<u8>> {
    a.iter().map(|s| s.as_bytes().to_vec()).collect()
}

/// Under CLIENT PAUSE WRITE (Redis 7.0's processCommand with the command
/// flags getCommandFlags gives): a script declaring no-writes runs, EVAL
/// without a shebang and a shebang without no-writes wait, PFCOUNT and
/// PUBLISH (may-replicate) wait, EXEC of a transaction that queued a write
/// before the pause waits. A held client counts in INFO blocked_clients
/// (Redis's BLOCKED_POSTPONE), which is what the suite's
/// wait_for_blocked_clients_count looks at.
#[test]
fn scripts_under_write_pause() {
    both(|port, who| {
        let mut c = Raw::connect(port);
        c.cmds("FLUSHALL");
        c.cmds("PFADD hll a");
        c.cmds("CLIENT PAUSE 20000 WRITE");
        let mut r = Raw::connect(port);
        let ro = r.cmd(&[b"EVAL", b"#!lua flags=no-writes\nreturn 7", b"0"]);
        assert_eq!(ro, b":7\r\n", "{who}: no-writes script under WRITE pause");
        let ro = r.cmd(&[b"EVAL_RO", b"return 8", b"0"]);
        assert_eq!(ro, b":8\r\n", "{who}: EVAL_RO under WRITE pause");
        let mut m = Raw::connect(port);
        c.cmds("CLIENT UNPAUSE");
        assert_eq!(m.cmds("MULTI"), b"+OK\r\n");
        assert_eq!(m.cmds("SET t 1"), b"+QUEUED\r\n");
        c.cmds("CLIENT PAUSE 20000 WRITE");
        m.send(&encode(&[b"EXEC"]));
        let held = [
            spawn_cmd(port, argv(&["EVAL", "return 1", "0"])),
            spawn_cmd(port, argv(&["EVAL", "#!lua\nreturn 2", "0"])),
            spawn_cmd(port, argv(&["PFCOUNT", "hll"])),
            spawn_cmd(port, argv(&["PUBLISH", "ch", "m"])),
        ];
        c.wait_blocked(5);
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(c.cmds("CLIENT UNPAUSE"), b"+OK\r\n");
        let replies: Vec<Vec<u8>> = held.into_iter().map(|h| h.join().unwrap().0).collect();
        assert_eq!(
            replies,
            [
                b":1\r\n".to_vec(),
                b":2\r\n".to_vec(),
                b":1\r\n".to_vec(),
                b":0\r\n".to_vec()
            ],
            "{who}"
        );
        assert_eq!(m.reply(), b"*1\r\n+OK\r\n", "{who}");
        assert_eq!(c.info_field("clients", "blocked_clients"), "0", "{who}");
    });
}

/// A read-only script (EVAL_RO, a `no-writes` shebang) refuses
/// may-replicate commands such as PUBLISH as writes, which is what lets
/// it run during CLIENT PAUSE WRITE; a plain EVAL may publish (pause.tcl
/// "Test may-replicate commands are rejected in RO scripts").
#[test]
fn read_only_scripts_refuse_may_replicate_commands() {
    let Some(mut p) = Pair::start() else { return };
    p.check(&[b"EVAL_RO", b"return redis.call('publish','ch','msg')", b"0"]);
    p.check(&[
        b"EVAL",
        b"#!lua flags=no-writes\nreturn redis.call('publish','ch','msg')",
        b"0",
    ]);
    p.check(&[b"EVAL", b"return redis.call('publish','ch','msg')", b"0"]);
    p.check(&[b"EVAL_RO", b"return redis.call('pfcount','h')", b"0"]);
}
