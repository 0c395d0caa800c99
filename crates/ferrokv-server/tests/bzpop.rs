//! End-to-end tests of the blocking sorted-set pops BZPOPMIN, BZPOPMAX and
//! BZMPOP against the real `ferrokv-server` binary: immediate pops and
//! reply shapes (RESP2 and RESP3), blocking with several connections (FIFO
//! order, wake-ups by ZADD, ZINCRBY, the *STORE commands, RENAME, COPY,
//! MOVE, SWAPDB), timeouts, disconnects, CLIENT UNBLOCK, a threaded
//! producer/consumer stress test, and differential tests that send the same
//! commands to redis-server 7.0 and compare every reply byte for byte
//! (including the replies of served blocked clients).

mod common;
use common::*;
use std::time::{Duration, Instant};

fn s(r: &[u8]) -> String {
    String::from_utf8_lossy(r).into_owned()
}

fn client_id(c: &mut Raw) -> String {
    s(&c.cmds("CLIENT ID"))
        .trim_start_matches(':')
        .trim()
        .to_string()
}

const WRONGTYPE: &[u8] = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";

// ------------------------------------------------------------------ directed

#[test]
fn immediate_pops_and_shapes() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmds("ZADD z 1 a 2 b 3 c 4 d");
    assert_eq!(
        c.cmds("BZPOPMIN nokey z 0"),
        b"*3\r\n$1\r\nz\r\n$1\r\na\r\n$1\r\n1\r\n"
    );
    assert_eq!(
        c.cmds("BZPOPMAX z 0"),
        b"*3\r\n$1\r\nz\r\n$1\r\nd\r\n$1\r\n4\r\n"
    );
    assert_eq!(
        c.cmds("BZMPOP 0 2 nokey z MIN COUNT 10"),
        b"*2\r\n$1\r\nz\r\n*2\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n"
    );
    assert_eq!(c.cmds("EXISTS z"), b":0\r\n", "an emptied zset is deleted");
    // WRONGTYPE for the first existing key of another type, even after a
    // missing key; a zset before it is popped.
    c.cmds("SET str v");
    assert_eq!(c.cmds("BZPOPMIN nokey str 0"), WRONGTYPE);
    assert_eq!(c.cmds("BZMPOP 0 2 nokey str MAX"), WRONGTYPE);
    c.cmds("ZADD z2 5 e");
    assert_eq!(
        c.cmds("BZPOPMAX z2 str 0"),
        b"*3\r\n$2\r\nz2\r\n$1\r\ne\r\n$1\r\n5\r\n"
    );
    // RESP3: scores as doubles, null as `_`.
    c.cmds("HELLO 3");
    c.cmds("ZADD z 1.5 a 2 b inf c");
    assert_eq!(
        c.cmds("BZPOPMIN z 0"),
        b"*3\r\n$1\r\nz\r\n$1\r\na\r\n,1.5\r\n"
    );
    assert_eq!(
        c.cmds("BZPOPMAX z 0"),
        b"*3\r\n$1\r\nz\r\n$1\r\nc\r\n,inf\r\n"
    );
    assert_eq!(
        c.cmds("BZMPOP 0 1 z MIN"),
        b"*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\nb\r\n,2\r\n"
    );
    assert_eq!(c.cmds("BZPOPMIN nokey 0.01"), b"_\r\n");
    assert_eq!(c.cmds("BZMPOP 0.01 1 nokey MAX"), b"_\r\n");
    // The table entries.
    let info = s(&c.cmds("COMMAND INFO bzpopmin bzmpop"));
    assert!(info.contains("blocking"), "{info}");
}

#[test]
fn errors_and_timeouts() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    for (cmd, t) in [
        ("BZPOPMIN nokey 0.1", 0.1),
        ("BZPOPMAX a b 0.15", 0.15),
        ("BZMPOP 0.1 2 a b MAX COUNT 3", 0.1),
        ("BZPOPMIN nokey .05", 0.05),
    ] {
        let start = Instant::now();
        assert_eq!(c.cmds(cmd), b"*-1\r\n", "{cmd}");
        let el = start.elapsed().as_secs_f64();
        assert!(el >= t && el < t + 1.0, "{cmd} took {el}");
    }
    assert_eq!(c.cmds("BZPOPMIN k -1"), b"-ERR timeout is negative\r\n");
    assert_eq!(c.cmds("BZPOPMAX k 1e400"), b"-ERR timeout is negative\r\n");
    assert_eq!(
        c.cmds("BZPOPMIN k abc"),
        b"-ERR timeout is not a float or out of range\r\n"
    );
    assert_eq!(
        c.cmds("BZMPOP abc 0 k MIN"),
        b"-ERR numkeys should be greater than 0\r\n",
        "BZMPOP parses numkeys before the timeout"
    );
    assert_eq!(
        c.cmds("BZMPOP -1 1 k MIN COUNT 0"),
        b"-ERR count should be greater than 0\r\n"
    );
    assert_eq!(c.cmds("BZMPOP -1 1 k MIN"), b"-ERR timeout is negative\r\n");
    assert_eq!(
        c.cmds("BZPOPMIN k"),
        b"-ERR wrong number of arguments for 'bzpopmin' command\r\n"
    );
    assert_eq!(c.cmds("EXISTS nokey a b k"), b":0\r\n");
    c.wait_blocked(0);
}

#[test]
fn blocked_clients_are_served_fifo() {
    let srv = Server::start(&[]);
    let mut ctl = srv.raw();
    let mut w: Vec<Raw> = (0..3).map(|_| srv.raw()).collect();
    for (i, c) in w.iter_mut().enumerate() {
        match i {
            0 => c.send_cmd(&[b"BZPOPMIN", b"other", b"z", b"0"]),
            1 => c.send_cmd(&[b"BZPOPMAX", b"z", b"0"]),
            _ => c.send_cmd(&[b"BZMPOP", b"0", b"1", b"z", b"MIN"]),
        }
        ctl.wait_blocked(i + 1);
    }
    let flagged = s(&ctl.cmds("CLIENT LIST")).matches("flags=b").count();
    assert_eq!(flagged, 3, "CLIENT LIST shows flag b");
    for (i, c) in w.iter_mut().enumerate() {
        let m = format!("m{i}");
        assert_eq!(ctl.cmd(&[b"ZADD", b"z", b"7", m.as_bytes()]), b":1\r\n");
        let want = if i < 2 {
            format!("*3\r\n$1\r\nz\r\n$2\r\n{m}\r\n$1\r\n7\r\n")
        } else {
            format!("*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$2\r\n{m}\r\n$1\r\n7\r\n")
        };
        assert_eq!(s(&c.reply()), want, "waiter {i}");
        assert_eq!(ctl.cmds("EXISTS z"), b":0\r\n");
    }
    ctl.wait_blocked(0);
    // One ZADD of several members serves several waiters in order, each
    // with its own direction and count.
    for (i, c) in w.iter_mut().enumerate() {
        match i {
            0 => c.send_cmd(&[b"BZPOPMAX", b"z", b"5"]),
            1 => c.send_cmd(&[b"BZMPOP", b"5", b"1", b"z", b"MIN", b"COUNT", b"2"]),
            _ => c.send_cmd(&[b"BZPOPMIN", b"z", b"5"]),
        }
        ctl.wait_blocked(i + 1);
    }
    assert_eq!(ctl.cmds("ZADD z 1 a 2 b 3 c 4 d 5 e"), b":5\r\n");
    assert_eq!(w[0].reply(), b"*3\r\n$1\r\nz\r\n$1\r\ne\r\n$1\r\n5\r\n");
    assert_eq!(
        w[1].reply(),
        b"*2\r\n$1\r\nz\r\n*2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n"
    );
    assert_eq!(w[2].reply(), b"*3\r\n$1\r\nz\r\n$1\r\nc\r\n$1\r\n3\r\n");
    assert_eq!(ctl.cmds("ZRANGE z 0 -1"), b"*1\r\n$1\r\nd\r\n");
    ctl.wait_blocked(0);
}

#[test]
fn wake_ups_by_writes_of_other_commands() {
    let srv = Server::start(&[]);
    let mut ctl = srv.raw();
    let mut a = srv.raw();
    let check = |a: &mut Raw, ctl: &mut Raw, setup: &[&str], key: &str, want: &str| {
        a.send_cmd(&[b"BZPOPMIN", key.as_bytes(), b"0"]);
        ctl.wait_blocked(1);
        for l in setup {
            let r = ctl.cmds(l);
            assert!(!r.starts_with(b"-"), "{l}: {}", s(&r));
        }
        assert_eq!(s(&a.reply()), want, "{setup:?}");
        ctl.wait_blocked(0);
    };
    let r = |k: &str, m: &str, sc: &str| {
        format!(
            "*3\r\n${}\r\n{k}\r\n${}\r\n{m}\r\n${}\r\n{sc}\r\n",
            k.len(),
            m.len(),
            sc.len()
        )
    };
    check(&mut a, &mut ctl, &["ZADD w 3 x"], "w", &r("w", "x", "3"));
    check(
        &mut a,
        &mut ctl,
        &["ZINCRBY w 2.5 y"],
        "w",
        &r("w", "y", "2.5"),
    );
    ctl.cmds("ZADD s1 1 a 2 b");
    ctl.cmds("ZADD s2 10 b 20 c");
    check(
        &mut a,
        &mut ctl,
        &["ZUNIONSTORE w 2 s1 s2"],
        "w",
        &r("w", "a", "1"),
    );
    ctl.cmds("DEL w");
    check(
        &mut a,
        &mut ctl,
        &["ZINTERSTORE w 2 s1 s2"],
        "w",
        &r("w", "b", "12"),
    );
    check(
        &mut a,
        &mut ctl,
        &["ZDIFFSTORE w 2 s2 s1"],
        "w",
        &r("w", "c", "20"),
    );
    check(
        &mut a,
        &mut ctl,
        &["ZRANGESTORE w s2 1 1"],
        "w",
        &r("w", "c", "20"),
    );
    check(
        &mut a,
        &mut ctl,
        &["ZADD tmp 4 t", "RENAME tmp w"],
        "w",
        &r("w", "t", "4"),
    );
    check(&mut a, &mut ctl, &["COPY s1 w"], "w", &r("w", "a", "1"));
    ctl.cmds("DEL w");
    check(
        &mut a,
        &mut ctl,
        &["SELECT 1", "ZADD w 9 mv", "MOVE w 0", "SELECT 0"],
        "w",
        &r("w", "mv", "9"),
    );
    check(
        &mut a,
        &mut ctl,
        &["SELECT 1", "ZADD w 8 sw", "SWAPDB 0 1", "SELECT 0"],
        "w",
        &r("w", "sw", "8"),
    );
    // An empty *STORE result does not wake anyone; writes of other types
    // do not serve the zset waiter.
    a.send_cmd(&[b"BZPOPMIN", b"e", b"0.3"]);
    ctl.wait_blocked(1);
    assert_eq!(ctl.cmds("ZINTERSTORE e 2 s1 nokey"), b":0\r\n");
    assert_eq!(ctl.cmds("SET e v"), b"+OK\r\n");
    assert_eq!(ctl.cmds("DEL e"), b":1\r\n");
    assert_eq!(a.reply(), b"*-1\r\n");
}

/// A list waiter ahead of a zset waiter on the same key does not hold it up
/// when the key becomes a sorted set (Redis serves by type), and keeps
/// waiting for a list.
#[test]
fn waiters_of_another_type_are_skipped() {
    let srv = Server::start(&[]);
    let mut ctl = srv.raw();
    let mut l = srv.raw();
    let mut z = srv.raw();
    l.send_cmd(&[b"BLPOP", b"k", b"0"]);
    ctl.wait_blocked(1);
    z.send_cmd(&[b"BZPOPMIN", b"k", b"0"]);
    ctl.wait_blocked(2);
    assert_eq!(ctl.cmds("ZADD k 1 a"), b":1\r\n");
    assert_eq!(z.reply(), b"*3\r\n$1\r\nk\r\n$1\r\na\r\n$1\r\n1\r\n");
    ctl.wait_blocked(1);
    assert_eq!(ctl.cmds("EXISTS k"), b":0\r\n");
    z.send_cmd(&[b"BZPOPMAX", b"k", b"0"]);
    ctl.wait_blocked(2);
    assert_eq!(ctl.cmds("RPUSH k x"), b":1\r\n");
    assert_eq!(l.reply(), b"*2\r\n$1\r\nk\r\n$1\r\nx\r\n");
    ctl.wait_blocked(1);
    assert_eq!(ctl.cmds("ZADD k 2 b"), b":1\r\n");
    assert_eq!(z.reply(), b"*3\r\n$1\r\nk\r\n$1\r\nb\r\n$1\r\n2\r\n");
    ctl.wait_blocked(0);
}

#[test]
fn resp3_served_replies() {
    let srv = Server::start(&[]);
    let mut ctl = srv.raw();
    let mut a = srv.raw();
    let mut b = srv.raw();
    a.cmds("HELLO 3");
    b.cmds("HELLO 3");
    a.send_cmd(&[b"BZPOPMAX", b"r", b"0"]);
    ctl.wait_blocked(1);
    b.send_cmd(&[b"BZMPOP", b"0", b"2", b"x", b"r", b"MAX", b"COUNT", b"5"]);
    ctl.wait_blocked(2);
    ctl.cmds("ZADD r 1 a -2.25 b 3 c");
    assert_eq!(a.reply(), b"*3\r\n$1\r\nr\r\n$1\r\nc\r\n,3\r\n");
    assert_eq!(
        b.reply(),
        b"*2\r\n$1\r\nr\r\n*2\r\n*2\r\n$1\r\na\r\n,1\r\n*2\r\n$1\r\nb\r\n,-2.25\r\n"
    );
    assert_eq!(ctl.cmds("EXISTS r"), b":0\r\n");
}

#[test]
fn disconnect_while_blocked_leaves_nothing() {
    let srv = Server::start(&[]);
    let mut ctl = srv.raw();
    {
        let mut a = srv.raw();
        a.send_cmd(&[b"BZPOPMIN", b"q", b"q2", b"0"]);
        ctl.wait_blocked(1);
        let mut b = srv.raw();
        b.send_cmd(&[b"BZMPOP", b"0", b"1", b"q", b"MAX"]);
        ctl.wait_blocked(2);
    }
    ctl.wait_blocked(0);
    assert_eq!(ctl.cmds("ZADD q 1 keep"), b":1\r\n");
    assert_eq!(ctl.cmds("ZADD q2 1 keep"), b":1\r\n");
    assert_eq!(ctl.cmds("ZCARD q"), b":1\r\n");
    assert_eq!(ctl.cmds("ZCARD q2"), b":1\r\n");
    // CLIENT KILL of a blocked client also cleans up.
    let mut b = srv.raw();
    let id = client_id(&mut b);
    b.send_cmd(&[b"BZPOPMAX", b"q3", b"0"]);
    ctl.wait_blocked(1);
    assert_eq!(
        ctl.cmd(&[b"CLIENT", b"KILL", b"ID", id.as_bytes()]),
        b":1\r\n"
    );
    ctl.wait_blocked(0);
    assert_eq!(ctl.cmds("ZADD q3 1 keep"), b":1\r\n");
    assert_eq!(ctl.cmds("ZCARD q3"), b":1\r\n");
}

#[test]
fn client_unblock() {
    let srv = Server::start(&[]);
    let mut ctl = srv.raw();
    let mut a = srv.raw();
    let id = client_id(&mut a);
    a.send_cmd(&[b"BZPOPMIN", b"q", b"0"]);
    ctl.wait_blocked(1);
    assert_eq!(ctl.cmd(&[b"CLIENT", b"UNBLOCK", id.as_bytes()]), b":1\r\n");
    assert_eq!(a.reply(), b"*-1\r\n");
    assert_eq!(ctl.cmd(&[b"CLIENT", b"UNBLOCK", id.as_bytes()]), b":0\r\n");
    a.send_cmd(&[b"BZMPOP", b"0", b"1", b"q", b"MIN"]);
    ctl.wait_blocked(1);
    assert_eq!(
        ctl.cmd(&[b"CLIENT", b"UNBLOCK", id.as_bytes(), b"ERROR"]),
        b":1\r\n"
    );
    assert_eq!(
        a.reply(),
        b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
    );
    a.cmds("HELLO 3");
    a.send_cmd(&[b"BZPOPMAX", b"q", b"0"]);
    ctl.wait_blocked(1);
    assert_eq!(
        ctl.cmd(&[b"CLIENT", b"UNBLOCK", id.as_bytes(), b"TIMEOUT"]),
        b":1\r\n"
    );
    assert_eq!(a.reply(), b"_\r\n");
    ctl.wait_blocked(0);
    assert_eq!(ctl.cmds("ZADD q 1 v"), b":1\r\n");
    assert_eq!(ctl.cmds("ZCARD q"), b":1\r\n");
}

/// Several producers ZADD unique members to several keys while consumers
/// BZPOPMIN/BZPOPMAX/BZMPOP: every member is received exactly once.
#[test]
fn stress_every_member_received_once() {
    let srv = Server::start(&[]);
    let port = srv.port;
    let producers = 4;
    let per_producer = 1500;
    let consumers = 6;
    let total = producers * per_producer;
    let keys = ["z0", "z1", "z2"];
    let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut handles = Vec::new();
    for ci in 0..consumers {
        let received = received.clone();
        let done = done.clone();
        handles.push(std::thread::spawn(move || {
            let mut c = Raw::connect(port);
            loop {
                let r = match ci % 3 {
                    0 => c.cmd(&[b"BZPOPMIN", b"z0", b"z1", b"z2", b"0.2"]),
                    1 => c.cmd(&[b"BZPOPMAX", b"z2", b"z1", b"z0", b"0.2"]),
                    _ => c.cmd(&[
                        b"BZMPOP", b"0.2", b"3", b"z1", b"z0", b"z2", b"MIN", b"COUNT", b"3",
                    ]),
                };
                if r == b"*-1\r\n" {
                    if done.load(std::sync::atomic::Ordering::SeqCst) {
                        return;
                    }
                    continue;
                }
                let t = s(&r);
                let parts: Vec<&str> = t.split("\r\n").collect();
                let mut got = received.lock().unwrap();
                if ci % 3 == 2 {
                    // *2 $k key *n (*2 $m member $s score)...
                    let n: usize = parts[3][1..].parse().unwrap();
                    assert!((1..=3).contains(&n), "{t}");
                    for i in 0..n {
                        got.push(parts[6 + i * 5].to_string());
                    }
                } else {
                    got.push(parts[4].to_string());
                }
            }
        }));
    }
    let mut prods = Vec::new();
    for p in 0..producers {
        prods.push(std::thread::spawn(move || {
            let mut c = Raw::connect(port);
            let mut i = 0;
            while i < per_producer {
                let key = keys[(i + p) % keys.len()];
                let n = 1 + (i % 3).min(per_producer - i - 1);
                let mut args: Vec<Vec<u8>> = vec![b"ZADD".to_vec(), key.as_bytes().to_vec()];
                for k in 0..n {
                    args.push(format!("{}", (i + k) % 17).into_bytes());
                    args.push(format!("p{p}-{}", i + k).into_bytes());
                }
                let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
                let r = c.cmd(&refs);
                assert!(r.starts_with(b":"), "{}", s(&r));
                i += n;
            }
        }));
    }
    for p in prods {
        p.join().unwrap();
    }
    let mut ctl = srv.raw();
    let deadline = Instant::now() + Duration::from_secs(60);
    while received.lock().unwrap().len() < total {
        assert!(Instant::now() < deadline, "consumers stalled");
        std::thread::sleep(Duration::from_millis(20));
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    for h in handles {
        h.join().unwrap();
    }
    let mut got = received.lock().unwrap().clone();
    assert_eq!(got.len(), total, "no member duplicated");
    got.sort();
    got.dedup();
    assert_eq!(got.len(), total, "every member received once");
    assert_eq!(ctl.cmds("EXISTS z0 z1 z2"), b":0\r\n");
    ctl.wait_blocked(0);
}

// ------------------------------------------------------------------ differential

#[test]
fn diff_non_blocking_paths_and_errors() {
    let Some(mut p) = Pair::start() else { return };
    for l in [
        "ZADD z 1 a 2 b 3 c 4 d 5 e 6 f 7 g 8 h",
        "BZPOPMIN z 0",
        "BZPOPMAX z 0",
        "BZPOPMIN nokey z 0.01",
        "BZPOPMAX nokey1 nokey2 z 1",
        "BZMPOP 0 1 z MIN",
        "BZMPOP 0 2 nokey z MAX COUNT 1",
        "BZMPOP 0 1 z min count 100",
        "EXISTS z",
        "ZADD z 1.5 a -inf b +inf c 0 d",
        "BZMPOP 0 1 z MAX COUNT 2",
        "BZPOPMIN z 0",
        "BZPOPMIN z 0",
        "SET str v",
        "BZPOPMIN str 0",
        "BZPOPMIN nokey str 0",
        "BZPOPMAX str nokey 0",
        "BZMPOP 0 2 nokey str MIN",
        "BZMPOP 0 1 str MIN COUNT 0",
        "ZADD z2 1 x",
        "BZPOPMIN z2 str 0",
        // timeout errors
        "BZPOPMIN k -1",
        "BZPOPMIN k -0.002",
        "BZPOPMIN k abc",
        "BZPOPMIN k nan",
        "BZPOPMIN k inf",
        "BZPOPMIN k 1e400",
        "BZPOPMIN k 9223372036854775807",
        "BZPOPMAX k ''",
        "BZPOPMAX k 1e",
        "BZMPOP -1 1 k MIN",
        "BZMPOP abc 1 k MIN",
        "BZMPOP nan 1 k MAX",
        // numkeys / where / count errors as ZMPOP, before the timeout
        "BZMPOP abc 0 k MIN",
        "BZMPOP 0 -1 k MIN",
        "BZMPOP 0 x k MIN",
        "BZMPOP 0 9223372036854775807 k MIN",
        "BZMPOP 0 2 k MIN",
        "BZMPOP 0 1 k FOO",
        "BZMPOP 0 1 k LEFT",
        "BZMPOP abc 1 k MIN COUNT 0",
        "BZMPOP 0 1 k MIN COUNT -1",
        "BZMPOP 0 1 k MIN COUNT x",
        "BZMPOP 0 1 k MIN COUNT",
        "BZMPOP 0 1 k MIN COUNT 1 COUNT 1",
        "BZMPOP 0 1 k MIN FOO",
        "BZMPOP 0 1 str MIN COUNT 1 extra",
        // arity
        "BZPOPMIN",
        "BZPOPMIN k",
        "BZPOPMAX k",
        "BZMPOP 0 1 k",
        "BZMPOP 0 1",
        // The table entries (RESP2; BZMPOP's movable-key spec is not
        // reported by ferrokv's COMMAND INFO, as for ZMPOP/BLMPOP).
        "COMMAND INFO bzpopmin bzpopmax",
        // RESP3
        "HELLO 3",
        "ZADD z 1 a 2.5 b 3 c",
        "BZPOPMIN z 0",
        "BZPOPMAX z 0",
        "BZMPOP 0 1 z MIN COUNT 5",
        "BZPOPMIN nokey 0.01",
        "BZMPOP 0.01 1 nokey MIN",
    ] {
        let parts: Vec<&[u8]> = l
            .split_whitespace()
            .map(|w| if w == "''" { &b""[..] } else { w.as_bytes() })
            .collect();
        if l.starts_with("HELLO") {
            p.both(&parts);
            continue;
        }
        p.check(&parts);
    }
}

/// The replies of served blocked clients, compared with redis-server.
#[test]
fn diff_served_replies() {
    let Some(p) = Pair::start() else { return };
    let cases: &[(&[&str], &str, &[&str])] = &[
        (&[], "BZPOPMIN k 0", &["ZADD k 2 b 1 a"]),
        (&[], "BZPOPMAX x k 0", &["ZADD k 2 b 1 a 3.5 c"]),
        (&[], "BZMPOP 0 2 x k MIN COUNT 2", &["ZADD k 2 b 1 a 3 c"]),
        (&[], "BZMPOP 0 1 k MAX COUNT 10", &["ZADD k 2 b 1 a 3 c"]),
        (&[], "BZPOPMIN k 0", &["ZINCRBY k 1e3 m"]),
        (&["HELLO 3"], "BZPOPMIN k 0", &["ZADD k -0.5 a"]),
        (&["HELLO 3"], "BZMPOP 0 1 k MAX", &["ZADD k 7 a 8 b"]),
        (
            &[],
            "BZPOPMIN k 0",
            &["ZADD s 1 a 2 b", "ZUNIONSTORE k 1 s"],
        ),
        (
            &[],
            "BZPOPMAX k 0",
            &["ZADD s 1 a 2 b", "ZRANGESTORE k s 0 0"],
        ),
        (&[], "BZPOPMIN k 0", &["ZADD t 1 a", "RENAME t k"]),
    ];
    let mut outs: Vec<Vec<String>> = Vec::new();
    for port in [p.ours.port, p.redis.port] {
        let mut ctl = Raw::connect(port);
        let mut res = Vec::new();
        for (pre, block, writes) in cases {
            ctl.cmds("FLUSHALL");
            let mut c = Raw::connect(port);
            for l in pre.iter() {
                c.cmds(l);
            }
            let parts: Vec<&[u8]> = block.split_whitespace().map(str::as_bytes).collect();
            c.send_cmd(&parts);
            ctl.wait_blocked(1);
            let mut line = String::new();
            for w in writes.iter() {
                line.push_str(&s(&ctl.cmds(w)));
            }
            line.push_str(&s(&c.reply()));
            line.push_str(&s(&ctl.cmds("ZRANGE k 0 -1 WITHSCORES")));
            res.push(line);
            ctl.wait_blocked(0);
        }
        outs.push(res);
    }
    for (i, (a, b)) in outs[0].iter().zip(&outs[1]).enumerate() {
        assert_eq!(a, b, "case {i}: {:?}", cases[i]);
    }
}
