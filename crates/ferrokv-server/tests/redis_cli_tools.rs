//! redis-cli 7.0's tool modes against the real ferrokv-server binary:
//! `--bigkeys`, `--memkeys`, `--hotkeys`, `--latency`,
//! `--latency-history`, `--latency-dist`, `--stat`, `--scan`, `--pipe`
//! and `--rdb`. Each test fills keys of every type, runs the tool (modes
//! that never end are read line by line through `stdbuf -oL` and killed by
//! PID once enough was seen, or after a deadline) and checks what it
//! printed; where the output is deterministic the same run against
//! redis-server 7.0 filled with the same data must print the same. Tests
//! are skipped, with a notice, when redis-cli is not installed.

mod common;

use common::{encode, which, Raw, Server};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// redis-cli's path, or None (with a notice) when it is not installed.
fn cli() -> Option<String> {
    let p = which("redis-cli");
    if p.is_none() {
        assert!(
            std::env::var_os("FERROKV_REQUIRE_REDIS").is_none(),
            "redis-cli not installed but FERROKV_REQUIRE_REDIS is set"
        );
        eprintln!("redis-cli not installed: test skipped");
    }
    p
}

/// What one redis-cli run gave.
struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `redis-cli -p <port> args...` with `stdin` as its input, killing it
/// (by PID) if it has not exited within `secs` seconds (the test fails).
fn run(cli: &str, port: u16, args: &[&str], stdin: &[u8], secs: u64) -> Out {
    let mut child = Command::new(cli)
        .args(["-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn redis-cli");
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let ro = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = so.read_to_end(&mut s);
        s
    });
    let re = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = se.read_to_end(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(secs);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("redis-cli {args:?} did not finish within {secs} s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = writer.join();
    Out {
        code: status.code(),
        stdout: String::from_utf8_lossy(&ro.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&re.join().unwrap()).into_owned(),
    }
}

/// Runs a redis-cli mode that never ends by itself, line-buffered through
/// `stdbuf -oL`, collecting its output lines (stdout's and stderr's, as
/// they come) until `enough` says so or `secs` pass, then kills it by
/// PID. None (with a notice) when stdbuf is missing.
fn run_endless(
    cli: &str,
    port: u16,
    args: &[&str],
    secs: u64,
    mut enough: impl FnMut(&[String]) -> bool,
) -> Option<Vec<String>> {
    let Some(stdbuf) = which("stdbuf") else {
        eprintln!("stdbuf (coreutils) not installed: test skipped");
        return None;
    };
    let mut child = Command::new(stdbuf)
        .args(["-oL", cli, "-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn redis-cli");
    let (tx, rx) = mpsc::channel();
    let forward = |r: Box<dyn Read + Send>, tx: mpsc::Sender<String>| {
        std::thread::spawn(move || {
            for line in BufReader::new(r).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        })
    };
    let readers = [
        forward(Box::new(child.stdout.take().unwrap()), tx.clone()),
        forward(Box::new(child.stderr.take().unwrap()), tx),
    ];
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut lines = Vec::new();
    while !enough(&lines) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match rx.recv_timeout(left) {
            Ok(l) => lines.push(l),
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    for r in readers {
        let _ = r.join();
    }
    Some(lines)
}

/// Sends `cmds` pipelined and reads every reply.
fn pipeline(r: &mut Raw, cmds: &[Vec<Vec<u8>>]) {
    for chunk in cmds.chunks(500) {
        let mut buf = Vec::new();
        for c in chunk {
            let parts: Vec<&[u8]> = c.iter().map(Vec::as_slice).collect();
            buf.extend_from_slice(&encode(&parts));
        }
        r.send(&buf);
        for _ in chunk {
            let rep = r.reply();
            assert!(!rep.starts_with(b"-"), "{}", String::from_utf8_lossy(&rep));
        }
    }
}

fn cmd(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

/// The commands that fill a server with keys of every type, each type's
/// biggest key unique: strings `str:i` of 7i bytes, lists `list:i` of i
/// items, sets `set:i` of 2i members, hashes `hash:i` of i fields, sorted
/// sets `zset:i` of i+3 members, streams `stream:i` of one entry (i =
/// 1..=20), `stream:3` with 6 entries, and one big key of each type in
/// the other encodings (`big:*`, 1000 elements, a 10000-byte string).
fn fill_cmds() -> Vec<Vec<Vec<u8>>> {
    let mut v = Vec::new();
    for i in 1..=20usize {
        v.push(cmd(&["SET", &format!("str:{i}"), &"x".repeat(i * 7)]));
        let mut c = cmd(&["RPUSH", &format!("list:{i}")]);
        c.extend((1..=i).map(|j| j.to_string().into_bytes()));
        v.push(c);
        let mut c = cmd(&["SADD", &format!("set:{i}")]);
        c.extend((1..=2 * i).map(|j| j.to_string().into_bytes()));
        v.push(c);
        let mut c = cmd(&["HSET", &format!("hash:{i}")]);
        for j in 1..=i {
            c.push(format!("f{j}").into_bytes());
            c.push(format!("v{j}").into_bytes());
        }
        v.push(c);
        let mut c = cmd(&["ZADD", &format!("zset:{i}")]);
        for j in 1..=i + 3 {
            c.push(j.to_string().into_bytes());
            c.push(format!("m{j}").into_bytes());
        }
        v.push(c);
        v.push(cmd(&["XADD", &format!("stream:{i}"), "*", "a", "1"]));
    }
    for j in 0..5 {
        v.push(cmd(&["XADD", "stream:3", "*", "b", &j.to_string()]));
    }
    v.push(cmd(&["SET", "big:str", &"y".repeat(10000)]));
    let mut l = cmd(&["RPUSH", "big:list"]);
    let mut s = cmd(&["SADD", "big:set"]);
    let mut h = cmd(&["HSET", "big:hash"]);
    let mut z = cmd(&["ZADD", "big:zset"]);
    for j in 0..1000 {
        l.push(format!("element-{j}").into_bytes());
        s.push(format!("member-{j}").into_bytes());
        h.push(format!("field-{j}").into_bytes());
        h.push(format!("value-{j}").into_bytes());
        z.push(j.to_string().into_bytes());
        z.push(format!("member-{j}").into_bytes());
    }
    v.extend([l, s, h, z]);
    for j in 0..100 {
        v.push(cmd(&["XADD", "big:stream", "*", "n", &j.to_string()]));
    }
    v.push(cmd(&["EXPIRE", "str:4", "1000"]));
    v.push(cmd(&["PEXPIRE", "big:hash", "5000000"]));
    v
}

/// Keys [`fill_cmds`] makes.
const FILLED_KEYS: usize = 126;

/// The lines after redis-cli's `-------- summary -------`, blank lines
/// dropped, sorted (the order of the per-type lines follows redis-cli's
/// own hash table of type names).
fn summary(out: &str) -> Vec<String> {
    let at = out
        .find("-------- summary -------")
        .unwrap_or_else(|| panic!("no summary in:\n{out}"));
    let mut v: Vec<String> = out[at..]
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// redis-server 7.0 with `extra`, or None (with a notice).
fn redis(extra: &[&str]) -> Option<Server> {
    let r = Server::start_redis(extra);
    if r.is_none() {
        assert!(
            std::env::var_os("FERROKV_REQUIRE_REDIS").is_none(),
            "redis-server not installed but FERROKV_REQUIRE_REDIS is set"
        );
        eprintln!("redis-server not installed: differential part skipped");
    }
    r
}

#[test]
fn bigkeys_names_each_types_biggest_key_as_against_redis() {
    let Some(cli) = cli() else { return };
    let ours = Server::start(&[]);
    pipeline(&mut ours.raw(), &fill_cmds());
    let out = run(&cli, ours.port, &["--bigkeys"], b"", 60);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    let sum = summary(&out.stdout);
    for want in [
        "Sampled 126 keys in the keyspace!",
        "Biggest string found '\"big:str\"' has 10000 bytes",
        "Biggest   list found '\"big:list\"' has 1000 items",
        "Biggest    set found '\"big:set\"' has 1000 members",
        "Biggest   hash found '\"big:hash\"' has 1000 fields",
        "Biggest   zset found '\"big:zset\"' has 1000 members",
        "Biggest stream found '\"big:stream\"' has 100 entries",
        "21 strings with 11470 bytes (16.67% of keys, avg size 546.19)",
        "21 lists with 1210 items (16.67% of keys, avg size 57.62)",
        "21 sets with 1420 members (16.67% of keys, avg size 67.62)",
        "21 hashs with 1210 fields (16.67% of keys, avg size 57.62)",
        "21 zsets with 1270 members (16.67% of keys, avg size 60.48)",
        "21 streams with 125 entries (16.67% of keys, avg size 5.95)",
    ] {
        assert!(sum.iter().any(|l| l == want), "no {want:?} in {sum:#?}");
    }
    // The progress lines name only real keys with their real sizes.
    let mut r = ours.raw();
    for l in out.stdout.lines().filter(|l| l.contains("found so far")) {
        let key = l.split("'\"").nth(1).unwrap().split("\"'").next().unwrap();
        let n: i64 = l
            .split(" with ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let ty = String::from_utf8(r.cmds(&format!("TYPE {key}"))).unwrap();
        let size_cmd = match ty.trim() {
            "+string" => "STRLEN",
            "+list" => "LLEN",
            "+set" => "SCARD",
            "+hash" => "HLEN",
            "+zset" => "ZCARD",
            "+stream" => "XLEN",
            t => panic!("{key}: {t}"),
        };
        assert_eq!(
            r.cmds(&format!("{size_cmd} {key}")),
            format!(":{n}\r\n").into_bytes(),
            "{l}"
        );
    }
    if let Some(red) = redis(&[]) {
        pipeline(&mut red.raw(), &fill_cmds());
        let theirs = run(&cli, red.port, &["--bigkeys"], b"", 60);
        assert_eq!(theirs.code, Some(0));
        assert_eq!(sum, summary(&theirs.stdout));
    }
    // An empty database: the same summary as Redis's.
    let empty = Server::start(&[]);
    let e = run(&cli, empty.port, &["--bigkeys"], b"", 20);
    assert_eq!(e.code, Some(0));
    assert!(
        e.stdout.contains("Sampled 0 keys in the keyspace!"),
        "{}",
        e.stdout
    );
    if let Some(red) = redis(&[]) {
        let t = run(&cli, red.port, &["--bigkeys"], b"", 20);
        assert_eq!(summary(&e.stdout), summary(&t.stdout));
    }
}

/// Checks a `--memkeys` run against MEMORY USAGE (with `samples`, None
/// for the command's default) of every key of the server.
fn check_memkeys(cli: &str, srv: &Server, extra: &[&str], samples: Option<usize>) {
    let mut args = vec!["--memkeys"];
    args.extend_from_slice(extra);
    let out = run(cli, srv.port, &args, b"", 60);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    let sum = summary(&out.stdout);
    let mut r = srv.raw();
    // (type, count, total, max) from MEMORY USAGE of each key.
    let mut per: std::collections::BTreeMap<String, (usize, u64, u64)> = Default::default();
    let keys = String::from_utf8(r.cmds("KEYS *")).unwrap();
    let keys: Vec<&str> = keys
        .lines()
        .filter(|l| !l.starts_with(['*', '$']))
        .collect();
    assert_eq!(keys.len(), FILLED_KEYS);
    let mut usage = std::collections::HashMap::new();
    for k in &keys {
        let ty = String::from_utf8(r.cmds(&format!("TYPE {k}"))).unwrap();
        let q = match samples {
            Some(n) => format!("MEMORY USAGE {k} SAMPLES {n}"),
            None => format!("MEMORY USAGE {k}"),
        };
        let n: u64 = String::from_utf8(r.cmds(&q)).unwrap()[1..]
            .trim()
            .parse()
            .unwrap();
        usage.insert(k.to_string(), n);
        let e = per.entry(ty.trim()[1..].to_string()).or_default();
        e.0 += 1;
        e.1 += n;
        e.2 = e.2.max(n);
    }
    for (ty, (count, total, max)) in &per {
        let line = sum
            .iter()
            .find(|l| l.starts_with(&format!("Biggest {ty:>6} found ")))
            .unwrap_or_else(|| panic!("no biggest {ty} in {sum:#?}"));
        let key = line
            .split("'\"")
            .nth(1)
            .unwrap()
            .split("\"'")
            .next()
            .unwrap();
        assert!(
            line.ends_with(&format!(" has {max} bytes")),
            "{extra:?} {line}: max {max}"
        );
        assert_eq!(usage[key], *max, "{line}");
        let want = format!(
            "{count} {ty}s with {total} bytes ({:.2}% of keys, avg size {:.2})",
            *count as f64 * 100.0 / keys.len() as f64,
            *total as f64 / *count as f64
        );
        assert!(sum.contains(&want), "no {want:?} in {sum:#?}");
    }
    assert!(sum.contains(&format!("Sampled {} keys in the keyspace!", keys.len())));
}

#[test]
fn memkeys_reports_memory_usage_sizes() {
    let Some(cli) = cli() else { return };
    let ours = Server::start(&[]);
    pipeline(&mut ours.raw(), &fill_cmds());
    // redis-cli sends MEMORY USAGE key (5 samples) by default and with
    // --memkeys-samples 0, and MEMORY USAGE key SAMPLES n with
    // --memkeys-samples n.
    check_memkeys(&cli, &ours, &[], None);
    check_memkeys(&cli, &ours, &["--memkeys-samples", "0"], None);
    check_memkeys(&cli, &ours, &["--memkeys-samples", "2"], Some(2));
    // The same check holds against redis-server (byte counts differ: each
    // server reports its own allocations).
    if let Some(red) = redis(&[]) {
        pipeline(&mut red.raw(), &fill_cmds());
        // Redis's MEMORY USAGE counts both tables of a dict being rehashed:
        // its cron's active rehashing finishes them first.
        std::thread::sleep(Duration::from_millis(500));
        check_memkeys(&cli, &red, &[], None);
    }
}

/// Fills and then reads `hot:i` 10i times (i = 1..=20).
fn heat(srv: &Server) {
    let mut r = srv.raw();
    pipeline(&mut r, &fill_cmds());
    let mut cmds = Vec::new();
    for i in 1..=20 {
        cmds.push(cmd(&["SET", &format!("hot:{i}"), "v"]));
    }
    for i in 1..=20 {
        for _ in 0..10 * i {
            cmds.push(cmd(&["GET", &format!("hot:{i}")]));
        }
    }
    pipeline(&mut r, &cmds);
}

#[test]
fn hotkeys_lists_the_most_accessed_keys_under_lfu() {
    let Some(cli) = cli() else { return };
    // A log factor of 0 makes every access count and a decay time of 0
    // keeps the counters: the result is exact.
    let lfu = [
        "--maxmemory-policy",
        "allkeys-lfu",
        "--lfu-log-factor",
        "0",
        "--lfu-decay-time",
        "0",
    ];
    let ours = Server::start(&lfu);
    heat(&ours);
    let out = run(&cli, ours.port, &["--hotkeys"], b"", 60);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    let tail = &out.stdout[out.stdout.find("-------- summary").unwrap()..];
    let mut want = format!(
        "-------- summary -------\n\nSampled {} keys in the keyspace!\n",
        FILLED_KEYS + 20
    );
    // The 16 hottest, hottest first: a new key starts at LFU_INIT_VAL 5
    // and each access adds one (big:stream had 99 XADDs after the first).
    let mut hot: Vec<(u32, String)> = (1..=20).map(|i| (5 + 10 * i, format!("hot:{i}"))).collect();
    hot.push((104, "big:stream".into()));
    hot.sort_by(|a, b| b.cmp(a));
    for (n, k) in &hot[..16] {
        want += &format!("hot key found with counter: {n}\tkeyname: \"{k}\"\n");
    }
    assert_eq!(tail, want);
    let red = redis(&lfu);
    if let Some(red) = &red {
        heat(red);
        let t = run(&cli, red.port, &["--hotkeys"], b"", 60);
        assert_eq!(t.code, Some(0));
        assert_eq!(
            &t.stdout[t.stdout.find("-------- summary").unwrap()..],
            tail
        );
    }
    // Under a policy that is not LFU, OBJECT FREQ fails and redis-cli
    // prints the error and exits with 1.
    let mut r = ours.raw();
    assert_eq!(
        r.cmds("CONFIG SET maxmemory-policy allkeys-lru"),
        b"+OK\r\n"
    );
    let e = run(&cli, ours.port, &["--hotkeys"], b"", 20);
    assert_eq!(e.code, Some(1));
    let text = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. \
                Please note that when switching between policies at runtime LRU and LFU data \
                will take some time to adjust.";
    assert!(e.stderr.contains(text), "{}{}", e.stdout, e.stderr);
    if let Some(red) = &red {
        let mut b = red.raw();
        assert_eq!(
            b.cmds("CONFIG SET maxmemory-policy allkeys-lru"),
            b"+OK\r\n"
        );
        let t = run(&cli, red.port, &["--hotkeys"], b"", 20);
        assert_eq!(
            (t.code, &t.stdout, &t.stderr),
            (e.code, &e.stdout, &e.stderr)
        );
    }
}

/// Parses a `min max avg samples` line of `--latency --raw` or
/// `--latency-history` (not a terminal).
fn latency_line(l: &str) -> (u64, u64, f64, u64) {
    let f: Vec<&str> = l.split_whitespace().collect();
    assert_eq!(f.len(), 4, "{l:?}");
    let (min, max, avg, n) = (
        f[0].parse().unwrap(),
        f[1].parse().unwrap(),
        f[2].parse().unwrap(),
        f[3].parse().unwrap(),
    );
    assert!(
        min as f64 <= avg + 0.005 && avg <= max as f64 + 0.005,
        "{l:?}"
    );
    assert!(n >= 1, "{l:?}");
    (min, max, avg, n)
}

#[test]
fn latency_modes_sample_pings() {
    let Some(cli) = cli() else { return };
    let ours = Server::start(&[]);
    // --latency with --raw runs for one -i interval and prints one line.
    let out = run(&cli, ours.port, &["--latency", "--raw", "-i", "1"], b"", 20);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stdout);
    let (_, max, _, n) = latency_line(lines[0]);
    // One PING each 10 ms for a second.
    assert!(n >= 20, "{}", lines[0]);
    assert!(max < 1000, "{}", lines[0]);

    // --latency-history (not a terminal): a line per sample; every -i
    // seconds a " -- <secs> seconds range" line ends the window and the
    // count starts again.
    let ends = |ls: &[String]| ls.iter().position(|l| l.starts_with(" -- "));
    let Some(lines) = run_endless(
        &cli,
        ours.port,
        &["--latency-history", "-i", "1"],
        10,
        |ls| ends(ls).is_some_and(|i| ls.len() > i + 1),
    ) else {
        return;
    };
    let end = ends(&lines).unwrap_or_else(|| panic!("no window end in {lines:#?}"));
    let secs = lines[end]
        .strip_prefix(" -- ")
        .and_then(|r| r.strip_suffix(" seconds range"))
        .unwrap_or_else(|| panic!("{:?}", lines[end]));
    let secs: f64 = secs.parse().unwrap();
    assert!((1.0..1.5).contains(&secs), "{}", lines[end]);
    let parsed: Vec<_> = lines[..end].iter().map(|l| latency_line(l)).collect();
    assert!(parsed.len() >= 20, "{lines:#?}");
    for (i, p) in parsed.iter().enumerate() {
        assert_eq!(p.3, i as u64 + 1, "{lines:#?}");
    }
    assert_eq!(latency_line(&lines[end + 1]).3, 1, "{lines:#?}");

    // --latency-dist: the legend, then a spectrum line per interval.
    let Some(lines) = run_endless(&cli, ours.port, &["--latency-dist", "-i", "1"], 10, |ls| {
        ls.iter().filter(|l| l.ends_with("?\x1b[0m")).count() >= 2
    }) else {
        return;
    };
    assert!(lines.iter().any(|l| l.starts_with(". - * #")), "{lines:#?}");
    assert!(
        lines.iter().any(|l| l.starts_with("From 0 to 100%:")),
        "{lines:#?}"
    );
    let spectra: Vec<&String> = lines.iter().filter(|l| l.ends_with("?\x1b[0m")).collect();
    assert_eq!(spectra.len(), 2, "{lines:#?}");
    for s in spectra {
        // Every bucket is drawn; at least one is coloured (not 0: black).
        assert!(
            s.contains("m.") && s.contains("m#") && s.contains("mQ"),
            "{s:?}"
        );
        let shades: Vec<&str> = s
            .split("\x1b[48;5;")
            .skip(1)
            .map(|p| p.split('m').next().unwrap())
            .collect();
        assert_eq!(shades.len(), 31, "{s:?}");
        assert!(shades.iter().any(|c| *c != "0"), "{s:?}");
    }
}

#[test]
fn stat_shows_keys_mem_clients_blocked_requests() {
    let Some(cli) = cli() else { return };
    let ours = Server::start(&[]);
    let mut r = ours.raw();
    pipeline(&mut r, &fill_cmds());
    // One more client, blocked in BLPOP.
    let mut blocked = ours.raw();
    blocked.send_cmd(&[b"BLPOP", b"nothing", b"0"]);
    r.wait_blocked(1);
    let Some(lines) = run_endless(&cli, ours.port, &["--stat", "-i", "0.2"], 15, |ls| {
        ls.len() >= 5
    }) else {
        return;
    };
    assert!(lines.len() >= 5, "{lines:#?}");
    assert!(
        lines[0].starts_with("------- data ------ --------------------- load"),
        "{lines:#?}"
    );
    let head: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        head,
        [
            "keys",
            "mem",
            "clients",
            "blocked",
            "requests",
            "connections"
        ]
    );
    let mut last_req = None;
    for l in &lines[2..] {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(f[0], FILLED_KEYS.to_string(), "{l}");
        // used_memory, formatted as redis-cli does (B, K, M, G).
        let m = f[1];
        let (num, unit) = m.split_at(m.len() - 1);
        assert!(
            ["B", "K", "M", "G"].contains(&unit) && num.parse::<f64>().is_ok(),
            "{l}"
        );
        // r, the blocked client and redis-cli itself.
        assert_eq!(f[2], "3", "{l}");
        assert_eq!(f[3], "1", "{l}");
        let req: u64 = f[4].parse().unwrap();
        assert!(f[5].starts_with("(+") && f[5].ends_with(')'), "{l}");
        if let Some(prev) = last_req {
            // Each sample counts the INFO of the one before.
            assert_eq!(f[5], format!("(+{})", req - prev), "{l}");
            assert!(req > prev, "{l}");
        }
        last_req = Some(req);
        let conns: u64 = f[6].parse().unwrap();
        assert!(conns >= 3, "{l}");
    }
    let used: f64 = r.info_field("memory", "used_memory").parse().unwrap();
    let m = lines[2].split_whitespace().nth(1).unwrap();
    if let Some(mb) = m.strip_suffix('M') {
        let mb: f64 = mb.parse().unwrap();
        assert!((mb - used / 1024.0 / 1024.0).abs() < 1.0, "{m} vs {used}");
    }
    // The child column says SAVE while a BGSAVE runs (slowed down by
    // rdb-key-save-delay: 20 ms a key).
    assert_eq!(r.cmds("CONFIG SET rdb-key-save-delay 20000"), b"+OK\r\n");
    assert_eq!(r.cmds("BGSAVE"), b"+Background saving started\r\n");
    let Some(lines) = run_endless(&cli, ours.port, &["--stat", "-i", "0.2"], 15, |ls| {
        ls.len() >= 4
    }) else {
        return;
    };
    for l in &lines[2..] {
        assert!(l.trim_end().ends_with(" SAVE"), "{lines:#?}");
    }
    assert_eq!(r.cmds("CONFIG SET rdb-key-save-delay 0"), b"+OK\r\n");
}

#[test]
fn scan_lists_exactly_the_matching_keys() {
    let Some(cli) = cli() else { return };
    let ours = Server::start(&[]);
    let red = redis(&[]);
    let mut servers = vec![&ours];
    if let Some(r) = &red {
        servers.push(r);
    }
    let mut extra = Vec::new();
    for i in 0..3000 {
        extra.push(cmd(&["SET", &format!("many:{i}"), "1"]));
    }
    extra.push(cmd(&["SELECT", "2"]));
    extra.push(cmd(&["SET", "in:db2", "1"]));
    extra.push(cmd(&["SET", "list:1x", "1"]));
    let mut results = Vec::new();
    for s in &servers {
        let mut r = s.raw();
        pipeline(&mut r, &fill_cmds());
        pipeline(&mut r, &extra);
        let set = |args: &[&str]| -> BTreeSet<String> {
            let out = run(&cli, s.port, args, b"", 30);
            assert_eq!(out.code, Some(0), "{args:?}: {}", out.stderr);
            let v: Vec<String> = out.stdout.lines().map(str::to_string).collect();
            let set: BTreeSet<String> = v.iter().cloned().collect();
            assert_eq!(set.len(), v.len(), "{args:?}: a key listed twice");
            set
        };
        let all = set(&["--scan"]);
        assert_eq!(all.len(), FILLED_KEYS + 3000);
        let want: BTreeSet<String> = std::iter::once("list:1".to_string())
            .chain((10..=19).map(|i| format!("list:{i}")))
            .collect();
        assert_eq!(set(&["--scan", "--pattern", "list:1*"]), want);
        assert_eq!(set(&["--scan", "--quoted-pattern", "\"list:1*\""]), want);
        let two: BTreeSet<String> = ["hash", "list", "set", "str", "stream", "zset"]
            .iter()
            .map(|t| format!("{t}:20"))
            .collect();
        let mut two = two;
        two.extend((20..30).map(|i| format!("many:{i}")));
        assert_eq!(set(&["--scan", "--pattern", "*:2?"]), two);
        assert_eq!(set(&["--scan", "--pattern", "many:12??"]).len(), 100);
        assert!(set(&["--scan", "--pattern", "nomatch*"]).is_empty());
        let db2 = set(&["-n", "2", "--scan", "--pattern", "*1*"]);
        assert_eq!(db2, ["list:1x".to_string()].into_iter().collect());
        // --count (redis-cli 7.2 and later): SCAN's COUNT hint.
        let probe = run(
            &cli,
            s.port,
            &["--scan", "--count", "5", "--pattern", "list:1*"],
            b"",
            30,
        );
        if probe.stderr.contains("Unrecognized option") {
            eprintln!("this redis-cli has no --count: that part skipped");
        } else {
            assert_eq!(
                set(&["--scan", "--count", "5", "--pattern", "list:1*"]),
                want
            );
            assert_eq!(
                set(&["--scan", "--count", "1000", "--pattern", "many:*"]).len(),
                3000
            );
        }
        results.push(all);
    }
    if results.len() == 2 {
        assert_eq!(results[0], results[1]);
    }
}

#[test]
fn pipe_loads_a_million_commands() {
    let Some(cli) = cli() else { return };
    let ours = Server::start(&[]);
    let mut input = Vec::new();
    for i in 0..1_000_000u32 {
        let k = format!("k:{i}");
        let parts: Vec<Vec<u8>> = match i % 5 {
            0 => cmd(&["SET", &k, &format!("value-{i}")]),
            1 => cmd(&["RPUSH", "plist", &i.to_string()]),
            2 => cmd(&["HSET", "phash", &k, &i.to_string()]),
            3 => cmd(&["SADD", "pset", &i.to_string()]),
            _ => cmd(&["ZADD", "pzset", &i.to_string(), &k]),
        };
        let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        input.extend_from_slice(&encode(&refs));
    }
    let out = run(&cli, ours.port, &["--pipe"], &input, 120);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("All data transferred. Waiting for the last reply..."),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("Last reply received from server."),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("errors: 0, replies: 1000000"),
        "{}",
        out.stdout
    );
    let mut r = ours.raw();
    assert_eq!(r.cmds("DBSIZE"), b":200004\r\n");
    assert_eq!(r.cmds("GET k:999995"), b"$12\r\nvalue-999995\r\n");
    assert_eq!(r.cmds("LLEN plist"), b":200000\r\n");
    assert_eq!(r.cmds("LINDEX plist -1"), b"$6\r\n999996\r\n");
    assert_eq!(r.cmds("HLEN phash"), b":200000\r\n");
    assert_eq!(r.cmds("HGET phash k:7"), b"$1\r\n7\r\n");
    assert_eq!(r.cmds("SCARD pset"), b":200000\r\n");
    assert_eq!(r.cmds("ZCARD pzset"), b":200000\r\n");
    assert_eq!(r.cmds("ZSCORE pzset k:999999"), b"$6\r\n999999\r\n");

    // Errors are counted and printed (to stderr) as Redis's are.
    let bad = b"SET a 1\r\nSET n abc\r\nINCR n\r\nLPUSH n x\r\n*2\r\n$4\r\nLLEN\r\n$1\r\nn\r\n";
    let e = run(&cli, ours.port, &["--pipe"], bad, 20);
    assert_eq!(e.code, Some(1));
    assert!(e.stdout.contains("errors: 3, replies: 5"), "{}", e.stdout);
    if let Some(red) = redis(&[]) {
        let t = run(&cli, red.port, &["--pipe"], bad, 20);
        assert_eq!(
            (t.code, &t.stdout, &t.stderr),
            (e.code, &e.stdout, &e.stderr)
        );
    }
}

/// `redis-check-rdb` of `path` when installed: it must find the file
/// sound with `keys` keys.
fn check_rdb(path: &std::path::Path, keys: usize) {
    let Some(check) = which("redis-check-rdb") else {
        eprintln!("redis-check-rdb not installed: that check skipped");
        return;
    };
    let out = Command::new(check).arg(path).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("RDB looks OK!"), "{text}");
    assert!(text.contains(&format!("[info] {keys} keys read")), "{text}");
}

#[test]
fn rdb_writes_a_loadable_snapshot() {
    let Some(cli) = cli() else { return };
    let dbg = ["--enable-debug-command", "yes"];
    for diskless in ["yes", "no"] {
        let ours = Server::start(&[
            "--enable-debug-command",
            "yes",
            "--repl-diskless-sync",
            diskless,
            "--repl-diskless-sync-delay",
            "1",
        ]);
        let mut r = ours.raw();
        pipeline(&mut r, &fill_cmds());
        pipeline(
            &mut r,
            &[cmd(&["SELECT", "3"]), cmd(&["SET", "other", "db"])],
        );
        let digest = r.cmds("DEBUG DIGEST");
        let out_dir = tempfile::tempdir().unwrap();
        let file = out_dir.path().join("cli.rdb");
        let out = run(&cli, ours.port, &["--rdb", file.to_str().unwrap()], b"", 60);
        assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
        assert!(
            out.stderr.contains("sending REPLCONF rdb-only 1"),
            "{}",
            out.stderr
        );
        let done = if diskless == "yes" {
            "Transfer finished with success after "
        } else {
            "Transfer finished with success."
        };
        assert!(out.stderr.contains(done), "{}", out.stderr);
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            bytes.starts_with(b"REDIS0010"),
            "{:?}",
            &bytes[..bytes.len().min(60)]
        );
        check_rdb(&file, FILLED_KEYS + 1);
        // The connection was a replica's only for the transfer.
        let deadline = Instant::now() + Duration::from_secs(5);
        while r.info_field("replication", "connected_slaves") != "0" {
            assert!(Instant::now() < deadline, "the --rdb replica stayed");
            std::thread::sleep(Duration::from_millis(20));
        }
        // A fresh ferrokv loads it with every key equal.
        let dir = out_dir.path().to_str().unwrap();
        let again = Server::start(&[&dbg[..], &["--dir", dir, "--dbfilename", "cli.rdb"]].concat());
        let mut a = again.raw();
        assert_eq!(a.cmds("DEBUG DIGEST"), digest);
        assert_eq!(a.cmds("DBSIZE"), format!(":{FILLED_KEYS}\r\n").into_bytes());
        let ttl = String::from_utf8(a.cmds("TTL str:4")).unwrap();
        let ttl: i64 = ttl[1..].trim().parse().unwrap();
        assert!((990..=1000).contains(&ttl), "{ttl}");
        drop(again);
        // And so does redis-server 7.0.
        if let Some(red) =
            Server::start_redis(&[&dbg[..], &["--dir", dir, "--dbfilename", "cli.rdb"]].concat())
        {
            assert_eq!(red.raw().cmds("DEBUG DIGEST"), digest);
        }
    }
}

#[test]
fn functions_rdb_writes_only_the_libraries() {
    let Some(cli) = cli() else { return };
    let ours = Server::start(&["--repl-diskless-sync-delay", "0"]);
    let mut r = ours.raw();
    pipeline(&mut r, &fill_cmds());
    let lib = b"#!lua name=clilib\nredis.register_function('hello', function() return 1 end)";
    assert_eq!(r.cmd(&[b"FUNCTION", b"LOAD", lib]), b"$6\r\nclilib\r\n");
    let out_dir = tempfile::tempdir().unwrap();
    let file = out_dir.path().join("fn.rdb");
    let out = run(
        &cli,
        ours.port,
        &["--functions-rdb", file.to_str().unwrap()],
        b"",
        60,
    );
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("sending REPLCONF rdb-filter-only functions"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("Transfer finished with success after "),
        "{}",
        out.stderr
    );
    check_rdb(&file, 0);
    let dir = out_dir.path().to_str().unwrap();
    let again = Server::start(&["--dir", dir, "--dbfilename", "fn.rdb"]);
    let mut a = again.raw();
    assert_eq!(a.cmds("DBSIZE"), b":0\r\n");
    assert_eq!(a.cmds("FCALL hello 0"), b":1\r\n");

    // REPLCONF rdb-filter-only's replies, and SYNC refused without
    // `capa eof`, as redis-server's.
    let Some(mut p) = common::Pair::start() else {
        return;
    };
    for v in [
        "functions",
        "",
        "FUNCTIONS",
        "functions foo",
        "\"unbalanced",
        "'a' 'b'",
    ] {
        p.check(&[b"REPLCONF", b"rdb-filter-only", v.as_bytes()]);
    }
    p.check_line("REPLCONF rdb-filter-only functions");
    p.check_line("SYNC");
    p.check_line("PSYNC ? -1");
    p.check_line("PING");
}

/// `redis-cli --replica` against `srv`: SYNC (with an empty
/// rdb-filter-only), then the commands written once it has sent its first
/// ACK, as it prints them. redis-cli reads a reply to that ACK, which the
/// master never gives: the stream's first value (the SELECT before the
/// first write, the keep-alive PING being put off for the test) goes
/// there, with redis-server too.
fn replica_log(cli: &str, srv: &Server) -> Option<Vec<String>> {
    let mut r = srv.raw();
    assert_eq!(r.cmds("CONFIG SET repl-diskless-sync-delay 0"), b"+OK\r\n");
    assert_eq!(
        r.cmds("CONFIG SET repl-ping-replica-period 3600"),
        b"+OK\r\n"
    );
    pipeline(&mut r, &[cmd(&["SET", "before", "sync"])]);
    let mut sent = false;
    run_endless(cli, srv.port, &["--replica"], 20, |ls| {
        if !sent && ls.iter().any(|l| l == "sending REPLCONF ACK 0") {
            // Until the master has read the ACK.
            std::thread::sleep(Duration::from_millis(300));
            pipeline(
                &mut r,
                &[
                    cmd(&["SET", "k", "v"]),
                    cmd(&["RPUSH", "l", "a b", "c"]),
                    cmd(&["SELECT", "4"]),
                    cmd(&["HSET", "h", "f", "v"]),
                    cmd(&["DEL", "h"]),
                ],
            );
            sent = true;
        }
        ls.last().is_some_and(|l| l.starts_with("\"DEL\""))
    })
}

#[test]
fn replica_mode_logs_the_stream() {
    let Some(cli) = cli() else { return };
    let ours = Server::start(&[]);
    let Some(lines) = replica_log(&cli, &ours) else {
        return;
    };
    let want = [
        "sending REPLCONF capa eof",
        "sending REPLCONF rdb-filter-only ",
        "SYNC with master, discarding bytes of bulk transfer until EOF marker...",
    ];
    for w in want {
        assert!(lines.iter().any(|l| l == w), "no {w:?} in {lines:#?}");
    }
    let done = lines
        .iter()
        .find(|l| l.starts_with("SYNC done after "))
        .unwrap();
    assert!(
        done.ends_with(" bytes. Logging commands from master."),
        "{done}"
    );
    let stream: Vec<&String> = lines.iter().filter(|l| l.starts_with('"')).collect();
    let expected = [
        r#""SET","k","v""#,
        r#""RPUSH","l","a b","c""#,
        r#""SELECT","4""#,
        r#""HSET","h","f","v""#,
        r#""DEL","h""#,
    ];
    assert_eq!(stream, expected, "{lines:#?}");
    if let Some(red) = redis(&[]) {
        let theirs = replica_log(&cli, &red).unwrap();
        let theirs: Vec<&String> = theirs.iter().filter(|l| l.starts_with('"')).collect();
        assert_eq!(theirs, stream);
    }
}

#[test]
fn replica_mode_shows_the_keepalive_ping_as_redis_writes_it() {
    let Some(cli) = cli() else { return };
    let ours = Server::start(&[
        "--repl-ping-replica-period",
        "1",
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let Some(lines) = run_endless(&cli, ours.port, &["--replica"], 15, |ls| {
        ls.iter().any(|l| l.starts_with('"'))
    }) else {
        return;
    };
    // Redis propagates its keep-alive as a lower-case "ping".
    assert_eq!(
        lines.iter().find(|l| l.starts_with('"')).unwrap(),
        "\"ping\"",
        "{lines:#?}"
    );
    if let Some(red) = redis(&[
        "--repl-ping-replica-period",
        "1",
        "--repl-diskless-sync-delay",
        "0",
    ]) {
        let theirs = run_endless(&cli, red.port, &["--replica"], 15, |ls| {
            ls.iter().any(|l| l.starts_with('"'))
        })
        .unwrap();
        assert_eq!(
            theirs.iter().find(|l| l.starts_with('"')).unwrap(),
            "\"ping\"",
            "{theirs:#?}"
        );
    }
}

/// Commands read by redis-cli from stdin (one per line, redis-cli's
/// quoting) covering every reply type: strings with newlines and binary
/// bytes, integers, doubles, nil, empty and nested arrays, maps and sets in
/// RESP3, errors.
const REPLY_KINDS: &str = r#"flushall
set k "a\nb"
get k
incr n
incrbyfloat f 1.5
get missing
rpush l a b "c d"
lrange l 0 -1
lrange empty 0 -1
hset h f1 v1 f2 2
hgetall h
hget h nope
sadd s 3 1 2
smembers s
zadd z 1.5 a 2 b
zrange z 0 -1 withscores
zscore z a
zrandmember nokey 2
lpush k x
exists k n missing
type l
config get maxmemory-policy
echo ""
set bin "\x00\xff\t"
get bin
strlen bin
lpos l b
lmpop 1 l left count 2
zpopmin z 5
"#;

/// The output modes of redis-cli (`--raw`, `--no-raw`, `--csv`, `-3`
/// RESP3, and their mixes) print every reply type byte for byte as they
/// print redis-server 7.0's.
#[test]
fn output_modes_print_as_against_redis() {
    let Some(cli) = cli() else { return };
    let ours = Server::start(&[]);
    let Some(red) = redis(&[]) else { return };
    let modes: [&[&str]; 7] = [
        &[],
        &["--raw"],
        &["--no-raw"],
        &["--csv"],
        &["-3"],
        &["-3", "--no-raw"],
        &["-3", "--raw"],
    ];
    for mode in modes {
        let a = run(&cli, red.port, mode, REPLY_KINDS.as_bytes(), 20);
        let b = run(&cli, ours.port, mode, REPLY_KINDS.as_bytes(), 20);
        assert_eq!(a.code, Some(0), "{mode:?}: {}", a.stderr);
        assert_eq!(
            (b.code, &b.stdout, &b.stderr),
            (a.code, &a.stdout, &a.stderr),
            "redis-cli {mode:?}"
        );
    }
}

/// `-x` reads the last argument from stdin (bytes as they are, newlines
/// included), as with redis-server.
#[test]
fn x_takes_the_last_argument_from_stdin() {
    let Some(cli) = cli() else { return };
    let ours = Server::start(&[]);
    let value = b"first line\nsecond\x00\xfe line\n";
    let out = run(&cli, ours.port, &["-x", "set", "kx"], value, 20);
    assert_eq!((out.code, out.stdout.as_str()), (Some(0), "OK\n"));
    let mut r = ours.raw();
    let mut want = format!("${}\r\n", value.len()).into_bytes();
    want.extend_from_slice(value);
    want.extend_from_slice(b"\r\n");
    assert_eq!(r.cmds("GET kx"), want);
    let out = run(&cli, ours.port, &["-x", "append", "kx"], b"+", 20);
    assert_eq!(out.stdout, format!("{}\n", value.len() + 1));
    if let Some(red) = redis(&[]) {
        let a = run(&cli, red.port, &["-x", "set", "kx"], value, 20);
        assert_eq!(a.stdout, "OK\n");
        let a = run(&cli, red.port, &["-x", "append", "kx"], b"+", 20);
        assert_eq!(a.stdout, out.stdout);
        let a = run(&cli, red.port, &["--no-raw", "get", "kx"], b"", 20);
        let b = run(&cli, ours.port, &["--no-raw", "get", "kx"], b"", 20);
        assert_eq!(b.stdout, a.stdout);
    }
}

/// `--intrinsic-latency` (measured on the client's machine, no server
/// needed) runs for the given seconds and prints its summary.
#[test]
fn intrinsic_latency_runs_and_summarises() {
    let Some(cli) = cli() else { return };
    let out = run(&cli, 1, &["--intrinsic-latency", "1"], b"", 20);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("Max latency so far:"), "{}", out.stdout);
    assert!(
        out.stdout.contains("total runs (avg latency:"),
        "{}",
        out.stdout
    );
}

/// Waits (up to 10 s) until CLIENT LIST shows a client whose line has
/// `what` (e.g. `cmd=monitor`).
fn wait_for_client(r: &mut Raw, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !String::from_utf8_lossy(&r.cmds("CLIENT LIST")).contains(what) {
        assert!(Instant::now() < deadline, "no client with {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `monitor` and `subscribe` in redis-cli: the stream of commands another
/// client runs, and the messages published to the channel, printed as with
/// redis-server 7.0 (MONITOR's timestamps and client ports aside).
#[test]
fn monitor_and_subscribe_stream_as_against_redis() {
    let Some(cli) = cli() else { return };
    let ours = Server::start(&[]);
    let red = redis(&[]);
    let mut seen = Vec::new();
    for srv in std::iter::once(&ours).chain(red.as_ref()) {
        let port = srv.port;
        let driver = std::thread::spawn(move || {
            let mut r = Raw::connect(port);
            wait_for_client(&mut r, "cmd=monitor");
            r.cmd(&[b"SET", b"mk", b"two words"]);
            r.cmds("HSET mh f 1");
            r.cmds("PUBLISH ch hello");
            r.cmd(&[b"PUBLISH", b"ch", b"x y"]);
            std::thread::sleep(Duration::from_millis(300));
            r.cmds("PUBLISH ch last");
        });
        let mon = run_endless(&cli, port, &["monitor"], 10, |l| {
            l.iter().any(|x| x.contains("\"last\""))
        });
        driver.join().unwrap();
        let Some(mon) = mon else { return };
        let lines: Vec<String> = mon
            .iter()
            .map(|l| match l.find("] ") {
                // `1733400000.123456 [0 127.0.0.1:40000] "set" ...`
                Some(i) if l.starts_with(|c: char| c.is_ascii_digit()) => {
                    let head = &l[..i];
                    assert!(head.contains(" [0 127.0.0.1:"), "{l}");
                    l[i + 2..].to_string()
                }
                _ => l.clone(),
            })
            .collect();
        let driver = std::thread::spawn(move || {
            let mut r = Raw::connect(port);
            wait_for_client(&mut r, "cmd=subscribe");
            r.cmds("PUBLISH ch hello");
            r.cmds("PUBLISH other no");
            r.cmd(&[b"PUBLISH", b"ch", b"x y"]);
        });
        let sub = run_endless(&cli, port, &["subscribe", "ch"], 10, |l| {
            l.iter().any(|x| x == "x y")
        });
        driver.join().unwrap();
        let Some(sub) = sub else { return };
        seen.push((lines, sub));
    }
    let (mon, sub) = &seen[0];
    assert_eq!(
        mon,
        &[
            "OK",
            "\"SET\" \"mk\" \"two words\"",
            "\"HSET\" \"mh\" \"f\" \"1\"",
            "\"PUBLISH\" \"ch\" \"hello\"",
            "\"PUBLISH\" \"ch\" \"x y\"",
            "\"PUBLISH\" \"ch\" \"last\"",
        ]
    );
    assert_eq!(
        sub,
        &[
            "subscribe",
            "ch",
            "1",
            "message",
            "ch",
            "hello",
            "message",
            "ch",
            "x y"
        ]
    );
    if let Some(theirs) = seen.get(1) {
        assert_eq!(&seen[0], theirs);
    }
}

/// Interactive hints: redis-cli at a terminal (a pseudo-terminal driven
/// by `tests/python/cli_hints.py`) draws, while a command is typed, the
/// same argument hints as against redis-server 7.0 — built from COMMAND
/// DOCS' arguments.
#[test]
fn interactive_hints_as_against_redis() {
    let Some(_cli) = cli() else { return };
    let ours = Server::start(&[]);
    let Some(got) = common::run_python("cli_hints.py", &[ours.port.to_string()]) else {
        return;
    };
    assert!(
        got.contains(
            "'set ' -> key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]"
        ),
        "{got}"
    );
    assert!(
        got.contains("'hset k ' -> field value [field value ...]"),
        "{got}"
    );
    if let Some(red) = redis(&[]) {
        let want = common::run_python("cli_hints.py", &[red.port.to_string()]).unwrap();
        assert_eq!(got, want);
    }
}
