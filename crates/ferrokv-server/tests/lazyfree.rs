//! Lazy freeing as Redis 7.0 (lazyfree.c): the tests of Redis's
//! tests/unit/lazyfree.tcl run against both servers, INFO memory's
//! `lazyfree_pending_objects` / `lazyfreed_objects` compared with
//! redis-server 7.0 after the same commands (UNLINK, DEL, expiry, the
//! server's own deletions and overwrites, FLUSHALL / FLUSHDB, SCRIPT and
//! FUNCTION FLUSH, the tracking table, each `lazyfree-lazy-*` directive),
//! and a DEL of a 1,000,000-member set timed with and without
//! `lazyfree-lazy-user-del`.

mod common;
use common::*;
use std::time::{Duration, Instant};

fn info_u64(c: &mut Raw, field: &str) -> u64 {
    c.info_field("everything", field)
        .parse()
        .unwrap_or_else(|_| panic!("INFO {field}"))
}

/// Waits (up to 5 s) until nothing is pending, as lazyfree.tcl's
/// `wait_for_condition ... lazyfree_pending_objects == 0`.
fn wait_lazyfree_done(c: &mut Raw) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while info_u64(c, "lazyfree_pending_objects") != 0 {
        assert!(Instant::now() < deadline, "lazyfree isn't done");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits (up to 5 s, polling as the Tcl test does) until `used_memory`
/// is below both `peak` and `2 * orig`.
fn wait_reclaimed(c: &mut Raw, orig: u64, peak: u64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let used = info_u64(c, "used_memory");
        if used < peak && used < orig * 2 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "Memory is not reclaimed by {what}: used {used}, peak {peak}, orig {orig}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn sadd_100k(c: &mut Raw, key: &str) {
    let mut args: Vec<Vec<u8>> = vec![b"SADD".to_vec(), key.as_bytes().to_vec()];
    args.extend((0..100_000).map(|i: u32| i.to_string().into_bytes()));
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    assert_eq!(c.cmd(&refs), b":100000\r\n");
}

/// Both servers, the ferrokv one first.
fn both_servers() -> Vec<Server> {
    let mut v = vec![Server::start(&[])];
    match Server::start_redis(&[]) {
        Some(r) => v.push(r),
        None => eprintln!("redis-server not installed: ferrokv only"),
    }
    v
}

/// lazyfree.tcl "UNLINK can reclaim memory in background" and "FLUSHDB
/// ASYNC can reclaim memory in background", on both servers.
#[test]
fn unlink_and_flushdb_async_reclaim_memory_in_background() {
    for s in both_servers() {
        let mut c = s.raw();
        let orig = info_u64(&mut c, "used_memory");
        sadd_100k(&mut c, "myset");
        let peak = info_u64(&mut c, "used_memory");
        assert_eq!(c.cmds("UNLINK myset"), b":1\r\n");
        assert!(peak > orig + 1_000_000, "peak {peak} orig {orig}");
        wait_reclaimed(&mut c, orig, peak, "UNLINK");

        wait_lazyfree_done(&mut c);
        let orig = info_u64(&mut c, "used_memory");
        sadd_100k(&mut c, "myset");
        let peak = info_u64(&mut c, "used_memory");
        assert_eq!(c.cmds("FLUSHDB ASYNC"), b"+OK\r\n");
        assert!(peak > orig + 1_000_000, "peak {peak} orig {orig}");
        wait_reclaimed(&mut c, orig, peak, "FLUSHDB ASYNC");
    }
}

/// lazyfree.tcl "lazy free a stream with all types of metadata" and "lazy
/// free a stream with deleted cgroup", on both servers.
#[test]
fn lazy_free_streams_as_lazyfree_tcl() {
    for s in both_servers() {
        let mut c = s.raw();
        wait_lazyfree_done(&mut c);
        c.cmds("CONFIG RESETSTAT");
        c.cmds("CONFIG SET stream-node-max-entries 5");
        let mut seed = 7u64;
        for j in 0..1000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            let field = if (seed >> 33) % 10 < 9 { "foo" } else { "bar" };
            c.cmds(&format!("XADD stream * {field} {j}"));
        }
        assert_eq!(c.cmds("XGROUP CREATE stream mygroup 0"), b"+OK\r\n");
        let r = c.cmds("XREADGROUP GROUP mygroup Alice COUNT 2 STREAMS stream >");
        let ids: Vec<String> = frame_bulks(&r)
            .into_iter()
            .filter(|b| b.contains('-') && b.chars().all(|ch| ch.is_ascii_digit() || ch == '-'))
            .collect();
        assert_eq!(ids.len(), 2, "{}", String::from_utf8_lossy(&r));
        assert_eq!(c.cmds(&format!("XDEL stream {}", ids[1])), b":1\r\n");
        assert_eq!(
            c.cmds(&format!("XACK stream mygroup {}", ids[0])),
            b":1\r\n"
        );
        assert_eq!(c.cmds("UNLINK stream"), b":1\r\n");
        wait_lazyfree_done(&mut c);
        assert_eq!(info_u64(&mut c, "lazyfreed_objects"), 1);

        c.cmds("CONFIG RESETSTAT");
        c.cmds("XADD s * a b");
        c.cmds("XGROUP CREATE s bla $");
        c.cmds("XGROUP DESTROY s bla");
        assert_eq!(c.cmds("UNLINK s"), b":1\r\n");
        wait_lazyfree_done(&mut c);
        assert_eq!(info_u64(&mut c, "lazyfreed_objects"), 0);
    }
}

/// Runs `steps` (lines; `sleep N` pauses N ms) on both servers and
/// compares the replies, and `lazyfreed_objects` after each `check` line
/// once nothing is pending.
fn differential(steps: &[&str]) {
    let split: Vec<Vec<String>> = steps
        .iter()
        .map(|l| l.split(' ').map(String::from).collect())
        .collect();
    differential_args(&split);
}

/// [`differential`] with each step's arguments given apart.
fn differential_args(steps: &[Vec<String>]) {
    let Some(mut p) = Pair::start() else { return };
    let mut checks = 0;
    for (i, step) in steps.iter().enumerate() {
        if step[0] == "sleep" {
            std::thread::sleep(Duration::from_millis(step[1].parse().unwrap()));
            continue;
        }
        if step[0] == "check" {
            wait_lazyfree_done(&mut p.a);
            wait_lazyfree_done(&mut p.b);
            let a = info_u64(&mut p.a, "lazyfreed_objects");
            let b = info_u64(&mut p.b, "lazyfreed_objects");
            let before: Vec<String> = steps[i.saturating_sub(4)..i]
                .iter()
                .map(|s| s.join(" ").chars().take(60).collect())
                .collect();
            assert_eq!(a, b, "lazyfreed_objects after step {i} ({before:?})");
            checks += 1;
            continue;
        }
        // A leading `~` marks a reply in hash order: not compared.
        let unordered = step[0].starts_with('~');
        let args: Vec<&[u8]> = step
            .iter()
            .enumerate()
            .map(|(i, a)| {
                if i == 0 {
                    a.trim_start_matches('~').as_bytes()
                } else {
                    a.as_bytes()
                }
            })
            .collect();
        let (x, y) = p.both(&args);
        if unordered {
            assert_eq!(x.len(), y.len(), "reply to {}", step.join(" "));
            continue;
        }
        assert_eq!(
            String::from_utf8_lossy(&x),
            String::from_utf8_lossy(&y),
            "reply to {}",
            step.join(" ")
        );
    }
    assert!(checks > 0);
}

fn fill(cmd: &str, key: &str, n: usize, pairs: bool, ints: bool) -> String {
    let mut s = format!("{cmd} {key}");
    for i in 0..n {
        if pairs && cmd == "ZADD" {
            s.push_str(&format!(" {i} m{i}"));
        } else if pairs {
            s.push_str(&format!(" f{i} v{i}"));
        } else if ints {
            s.push_str(&format!(" {i}"));
        } else {
            s.push_str(&format!(" m{i}"));
        }
    }
    s
}

/// The free effort of each type and encoding decides, at Redis's threshold
/// (more than 64 allocations): UNLINK of values just below and just above
/// it, of every type, counted as redis-server 7.0 counts them.
#[test]
fn unlink_counts_as_redis_at_the_threshold() {
    let lines: Vec<String> = vec![
        "CONFIG RESETSTAT".into(),
        "SET str x".into(),
        "UNLINK str".into(),
        "check".into(),
        fill("SADD", "s64", 64, false, false),
        "UNLINK s64".into(),
        "check".into(),
        fill("SADD", "s65", 65, false, false),
        "UNLINK s65".into(),
        "check".into(),
        // intset: one allocation whatever its size.
        fill("SADD", "si", 500, false, true),
        "UNLINK si".into(),
        "check".into(),
        // listpack hash / zset: one allocation.
        fill("HSET", "hl", 100, true, false),
        "UNLINK hl".into(),
        fill("ZADD", "zl", 100, true, false),
        "UNLINK zl".into(),
        "check".into(),
        fill("HSET", "h129", 129, true, false),
        "UNLINK h129".into(),
        fill("ZADD", "z129", 129, true, false),
        "UNLINK z129".into(),
        "check".into(),
        // Lists count their quicklist nodes: 4 entries a node.
        "CONFIG SET list-max-listpack-size 4".into(),
        fill("RPUSH", "l256", 256, false, false),
        "UNLINK l256".into(),
        "check".into(),
        fill("RPUSH", "l257", 257, false, false),
        "UNLINK l257".into(),
        "check".into(),
        "CONFIG SET list-max-listpack-size -2".into(),
        fill("RPUSH", "lbig", 5000, false, false),
        "UNLINK lbig".into(),
        "check".into(),
        // A stream's radix tree and its groups' PELs.
        "CONFIG SET stream-node-max-entries 2".into(),
    ];
    let mut lines = lines;
    for i in 1..=70 {
        lines.push(format!("XADD st {i}-0 f v"));
    }
    lines.extend(
        [
            "UNLINK st",
            "check",
            "XADD st2 1-0 f v",
            "XGROUP CREATE st2 g1 0",
            "XGROUP CREATE st2 g2 0",
            "UNLINK st2",
            "check",
            "CONFIG SET stream-node-max-entries 100",
        ]
        .map(String::from),
    );
    // One node, one group whose PEL holds 70 entries: 1 * (1 + 70).
    for i in 1..=70 {
        lines.push(format!("XADD st3 {i}-0 f v"));
    }
    lines.extend(
        [
            "XGROUP CREATE st3 g 0",
            "XREADGROUP GROUP g alice COUNT 100 STREAMS st3 >",
            "UNLINK st3",
            "check",
            "CONFIG RESETSTAT",
            "check",
        ]
        .map(String::from),
    );
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    differential(&refs);
}

/// Each directive sends its deletions through the lazyfree thread when
/// on, and only then: DEL (lazyfree-lazy-user-del), overwrites and the
/// server's deletions (lazyfree-lazy-server-del), expiry
/// (lazyfree-lazy-expire), FLUSHALL/FLUSHDB without an option
/// (lazyfree-lazy-user-flush), counted as redis-server 7.0 counts them.
#[test]
fn directives_count_as_redis() {
    let big = |k: &str| fill("SADD", k, 100, false, false);
    let mut lines: Vec<String> = vec!["CONFIG RESETSTAT".into()];
    for on in ["no", "yes"] {
        lines.push(format!("CONFIG SET lazyfree-lazy-user-del {on}"));
        lines.extend([
            big("d1"),
            big("d2"),
            "DEL d1 d2 nosuch".into(),
            "check".into(),
        ]);
        lines.push(format!("CONFIG SET lazyfree-lazy-server-del {on}"));
        lines.extend([
            big("o1"),
            "SET o1 x".into(),
            "check".into(),
            big("r1"),
            big("r2"),
            "RENAME r1 r2".into(),
            "check".into(),
            big("u1"),
            "SADD u2 a".into(),
            "SUNIONSTORE u1 u2".into(),
            "check".into(),
            big("c1"),
            big("c2"),
            "COPY c1 c2 REPLACE".into(),
            "check".into(),
            // SUNION / SDIFF free their result set as a deleted value.
            big("p1"),
            "SADD p2 m1 m2".into(),
            "~SUNION p1 p2".into(),
            "~SDIFF p1 p2".into(),
            "~SUNION p2 p2".into(),
            "check".into(),
            // SORT ... STORE and ZUNIONSTORE over a large value.
            "RPUSH sl 3 1 2".into(),
            big("so"),
            "SORT sl STORE so".into(),
            "ZADD zz 1 a".into(),
            big("zu"),
            "ZUNIONSTORE zu 1 zz".into(),
            "check".into(),
        ]);
        lines.push(format!("CONFIG SET lazyfree-lazy-expire {on}"));
        lines.extend([
            big("e1"),
            "PEXPIRE e1 1".into(),
            "sleep 20".into(),
            "EXISTS e1".into(),
            "check".into(),
            // EXPIRE in the past deletes as an expiry.
            big("e2"),
            "EXPIRE e2 -1".into(),
            "check".into(),
        ]);
        lines.push(format!("CONFIG SET lazyfree-lazy-user-flush {on}"));
        lines.extend([
            "SET a 1".into(),
            "SET b 2".into(),
            "SELECT 1".into(),
            "SET c 3".into(),
            "SELECT 0".into(),
            "FLUSHALL".into(),
            "check".into(),
            "SET a 1".into(),
            "FLUSHDB".into(),
            "check".into(),
            "SET a 1".into(),
            "FLUSHALL SYNC".into(),
            "check".into(),
            "SET a 1".into(),
            "SET b 1".into(),
            "FLUSHALL ASYNC".into(),
            "check".into(),
            "FLUSHDB ASYNC".into(),
            "check".into(),
        ]);
    }
    lines.extend(["CONFIG RESETSTAT".into(), "check".into()]);
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    differential(&refs);
}

/// SCRIPT FLUSH and FUNCTION FLUSH free more than 64 scripts / functions
/// in the background (ASYNC, or lazyfree-lazy-user-flush without an
/// option), counting them, as redis-server 7.0.
#[test]
fn script_and_function_flush_count_as_redis() {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let mut steps: Vec<Vec<String>> = vec![v(&["CONFIG", "RESETSTAT"])];
    let load_scripts = |steps: &mut Vec<Vec<String>>, n: usize| {
        for i in 0..n {
            steps.push(vec!["SCRIPT".into(), "LOAD".into(), format!("return {i}")]);
        }
    };
    for (n, flush) in [
        (64, "SCRIPT FLUSH ASYNC"),
        (65, "SCRIPT FLUSH ASYNC"),
        (70, "SCRIPT FLUSH SYNC"),
        (70, "SCRIPT FLUSH"),
    ] {
        load_scripts(&mut steps, n);
        steps.push(flush.split(' ').map(String::from).collect());
        steps.push(v(&["check"]));
    }
    steps.push(v(&["CONFIG", "SET", "lazyfree-lazy-user-flush", "yes"]));
    load_scripts(&mut steps, 70);
    steps.push(v(&["SCRIPT", "FLUSH"]));
    steps.push(v(&["check"]));
    steps.push(v(&["CONFIG", "SET", "lazyfree-lazy-user-flush", "no"]));
    for (n, flush) in [
        (64, "FUNCTION FLUSH ASYNC"),
        (66, "FUNCTION FLUSH ASYNC"),
        (66, "FUNCTION FLUSH"),
    ] {
        for i in 0..n {
            steps.push(vec![
                "FUNCTION".into(),
                "LOAD".into(),
                format!(
                    "#!lua name=lib{i}\nredis.register_function('f{i}', function() return 1 end)"
                ),
            ]);
        }
        steps.push(flush.split(' ').map(String::from).collect());
        steps.push(v(&["check"]));
    }
    differential_args(&steps);
}

/// FLUSHALL / FLUSHDB ASYNC free the client tracking table in the
/// background when its radix tree has more than 64 nodes, counting its
/// keys; a small table or a SYNC flush is freed at once.
#[test]
fn flush_frees_the_tracking_table_as_redis() {
    let Some(mut p) = Pair::start() else { return };
    let mut ta = p.ours.raw();
    let mut tb = p.redis.raw();
    for t in [&mut ta, &mut tb] {
        t.cmds("HELLO 3");
        assert_eq!(t.cmds("CLIENT TRACKING on"), b"+OK\r\n");
    }
    for (keys, flush) in [
        (100, "FLUSHALL ASYNC"),
        (100, "FLUSHDB ASYNC"),
        (100, "FLUSHALL SYNC"),
        (10, "FLUSHALL ASYNC"),
        (30, "FLUSHALL ASYNC"),
        (64, "FLUSHALL ASYNC"),
    ] {
        let mget: String = (0..keys).map(|i| format!(" key:{i}")).collect();
        let mut counts = Vec::new();
        for (t, c) in [(&mut ta, &mut p.a), (&mut tb, &mut p.b)] {
            t.cmds(&format!("MGET{mget}"));
            assert_eq!(info_u64(c, "tracking_total_keys"), keys as u64);
            c.cmds("SET one 1");
            c.cmds("CONFIG RESETSTAT");
            c.cmds(flush);
            // The null invalidation the flush sends.
            let push = t.reply();
            assert!(
                push.starts_with(b">2\r\n"),
                "{}",
                String::from_utf8_lossy(&push)
            );
            wait_lazyfree_done(c);
            counts.push(info_u64(c, "lazyfreed_objects"));
        }
        assert_eq!(counts[0], counts[1], "{keys} tracked keys, {flush}");
    }
}

/// A DEL of a 1,000,000-member set returns, with lazyfree-lazy-user-del,
/// long before a synchronous free would (both times printed, not
/// asserted: the machine's load decides them); the counters and the
/// memory reclaimed are asserted.
#[test]
fn del_of_a_million_member_set_returns_before_the_free() {
    let s = Server::start(&[]);
    let mut c = s.raw();
    let fill = |c: &mut Raw| {
        for chunk in 0..100 {
            let mut args: Vec<Vec<u8>> = vec![b"SADD".to_vec(), b"big".to_vec()];
            args.extend(
                (0..10_000).map(|i: u32| format!("member:{}", chunk * 10_000 + i).into_bytes()),
            );
            let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
            assert_eq!(c.cmd(&refs), b":10000\r\n");
        }
    };
    fill(&mut c);
    let orig = info_u64(&mut c, "used_memory");
    let t = Instant::now();
    assert_eq!(c.cmds("DEL big"), b":1\r\n");
    let sync = t.elapsed();
    let after_sync = info_u64(&mut c, "used_memory");
    assert_eq!(info_u64(&mut c, "lazyfreed_objects"), 0);
    assert!(
        after_sync + 20_000_000 < orig,
        "sync DEL freed: {orig} -> {after_sync}"
    );

    fill(&mut c);
    let peak = info_u64(&mut c, "used_memory");
    c.cmds("CONFIG SET lazyfree-lazy-user-del yes");
    c.cmds("CONFIG RESETSTAT");
    let t = Instant::now();
    assert_eq!(c.cmds("DEL big"), b":1\r\n");
    let lazy = t.elapsed();
    wait_lazyfree_done(&mut c);
    assert_eq!(info_u64(&mut c, "lazyfreed_objects"), 1);
    let after_lazy = info_u64(&mut c, "used_memory");
    assert!(
        after_lazy + 20_000_000 < peak,
        "lazy DEL freed: {peak} -> {after_lazy}"
    );
    eprintln!(
        "DEL of a 1,000,000-member set: synchronous {sync:?}, lazyfree-lazy-user-del {lazy:?}"
    );
}

/// lazyfree-lazy-eviction: keys evicted under maxmemory go through the
/// lazyfree thread when large, on both servers (how many keys an eviction
/// takes depends on each server's memory use, so the counts are checked,
/// not compared); without the directive none does.
#[test]
fn lazy_eviction_frees_evicted_values_in_background() {
    for s in both_servers() {
        for lazy in ["no", "yes"] {
            let mut c = s.raw();
            c.cmds("FLUSHALL");
            c.cmds("CONFIG SET maxmemory 0");
            wait_lazyfree_done(&mut c);
            let used = info_u64(&mut c, "used_memory");
            c.cmds(&format!("CONFIG SET maxmemory {}", used + 2_000_000));
            c.cmds("CONFIG SET maxmemory-policy allkeys-random");
            c.cmds(&format!("CONFIG SET lazyfree-lazy-eviction {lazy}"));
            c.cmds("CONFIG RESETSTAT");
            for k in 0..400 {
                let mut args: Vec<Vec<u8>> = vec![b"SADD".to_vec(), format!("big{k}").into_bytes()];
                args.extend((0..1000).map(|i: u32| format!("member:{i}").into_bytes()));
                let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
                c.cmd(&refs);
            }
            wait_lazyfree_done(&mut c);
            let evicted = info_u64(&mut c, "evicted_keys");
            let freed = info_u64(&mut c, "lazyfreed_objects");
            eprintln!(
                "port {}: lazyfree-lazy-eviction {lazy}: evicted {evicted}, lazyfreed {freed}",
                s.port
            );
            assert!(evicted > 0, "nothing evicted");
            if lazy == "yes" {
                assert!(
                    freed > 0 && freed <= evicted,
                    "lazyfreed {freed}, evicted {evicted}"
                );
            } else {
                assert_eq!(freed, 0);
            }
            c.cmds("CONFIG SET maxmemory 0");
        }
    }
}

/// replica-lazy-flush: a replica's full synchronisation frees its old
/// dataset on the lazyfree thread, counting its keys, as redis-server 7.0
/// does (each server replicating from a master of its own kind); without
/// the directive nothing is counted.
#[test]
fn replica_lazy_flush_counts_the_old_keys_as_redis() {
    let mut results = Vec::new();
    for redis in [false, true] {
        let start = |extra: &[&str]| {
            if redis {
                Server::start_redis(extra)
            } else {
                Some(Server::start(extra))
            }
        };
        let Some(master) = start(&[]) else {
            eprintln!("redis-server not installed: ferrokv only");
            break;
        };
        let mut m = master.raw();
        m.cmds("SET from-master 1");
        let mut counts = Vec::new();
        for lazy in ["no", "yes"] {
            let replica = start(&[]).expect("replica");
            let mut r = replica.raw();
            for k in 0..100 {
                r.cmds(&format!("SET old{k} v"));
            }
            r.cmds(&format!("CONFIG SET replica-lazy-flush {lazy}"));
            r.cmds("CONFIG RESETSTAT");
            r.cmds(&format!("REPLICAOF 127.0.0.1 {}", master.port));
            let deadline = Instant::now() + Duration::from_secs(20);
            while r.info_field("replication", "master_link_status") != "up" {
                assert!(Instant::now() < deadline, "replica never synchronised");
                std::thread::sleep(Duration::from_millis(20));
            }
            wait_lazyfree_done(&mut r);
            assert_eq!(r.cmds("DBSIZE"), b":1\r\n");
            counts.push(info_u64(&mut r, "lazyfreed_objects"));
        }
        results.push(counts);
    }
    assert_eq!(results[0], vec![0, 100]);
    if results.len() == 2 {
        assert_eq!(results[0], results[1]);
    }
}
