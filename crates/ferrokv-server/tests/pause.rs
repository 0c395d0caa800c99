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
        // EVAL waits even for a no-writes script (Redis 7.0 looks at the
        // command's may-replicate flag).
        for write in [
            "SET k 2",
            "PUBLISH ch m",
            "EVAL \"return 1\" 0",
            "EVAL \"#!lua flags=no-writes\nreturn 1\" 0",
            "INCR n",
        ] {
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
