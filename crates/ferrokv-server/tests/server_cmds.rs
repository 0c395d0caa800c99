//! The remaining server commands of Redis 7.0 (MEMORY, LOLWUT, MODULE,
//! LATENCY GRAPH / HISTOGRAM) end to end against the real `ferrokv-server`
//! binary, differential against redis-server 7.0:
//!
//! - byte-identical replies (RESP2 and RESP3) wherever Redis's output is
//!   deterministic: help texts, every error, MODULE, LOLWUT's version line
//!   and its Schotter drawings that use no random number, the top rows of
//!   every Schotter, the empty-instance MEMORY DOCTOR text, MEMORY STATS'
//!   field names and order;
//! - shapes where it is not: LOLWUT 6, LATENCY GRAPH (digits normalised),
//!   LATENCY HISTOGRAM (call counts exact, buckets from the valid set);
//! - MEMORY USAGE against redis-server's figure per type within the bands
//!   documented in README.md (ferrokv's structures differ, so its bytes
//!   differ: see [`BANDS`]), growing with the value, and adding up with the
//!   bucket arrays to the growth of INFO used_memory.

mod common;
use common::resp::{elems, parse, Resp};
use common::*;
use std::time::Duration;

/// Runs `line` on both servers in RESP2 and RESP3 and asserts identical
/// bytes.
fn check_both_protocols(p: &mut Pair, lines: &[&str]) {
    for proto in ["2", "3"] {
        p.a.cmds(&format!("HELLO {proto}"));
        p.b.cmds(&format!("HELLO {proto}"));
        for l in lines {
            p.check_line(l);
        }
    }
    p.a.cmds("HELLO 2");
    p.b.cmds("HELLO 2");
}

#[test]
fn help_texts_and_errors_match_redis() {
    let Some(mut p) = Pair::start() else { return };
    p.check_line("SET k v");
    check_both_protocols(
        &mut p,
        &[
            "MEMORY HELP",
            "MODULE HELP",
            "LATENCY HELP",
            "MEMORY",
            "MEMORY FOO",
            "MEMORY HELP x",
            "MEMORY STATS x",
            "MEMORY DOCTOR x",
            "MEMORY PURGE x",
            "MEMORY MALLOC-STATS x",
            "MEMORY USAGE",
            "MEMORY USAGE nokey",
            "MEMORY USAGE nokey FOO",
            "MEMORY USAGE k SAMPLES",
            "MEMORY USAGE k SAMPLES -1",
            "MEMORY USAGE k SAMPLES x",
            "MEMORY USAGE k SAMPLES 99999999999999999999",
            "MEMORY USAGE k FOO",
            "MEMORY USAGE k SAMPLES 1 FOO",
            "MEMORY PURGE",
            "MEMORY DOCTOR",
            "MODULE",
            "MODULE FOO",
            "MODULE LIST",
            "MODULE LIST x",
            "MODULE LOAD",
            "MODULE LOAD /nonexistent/mod.so",
            "MODULE LOADEX /nonexistent/mod.so",
            "MODULE UNLOAD",
            "MODULE UNLOAD foo",
            "MODULE UNLOAD foo bar",
            "LATENCY GRAPH",
            "LATENCY GRAPH nosuchevent",
            "LATENCY GRAPH a b",
            "LATENCY HISTOGRAM nosuchcommand",
            "LATENCY HISTOGRAM nosuch|sub get|x config|nosuch",
            "LOLWUT",
            "LOLWUT 10 20",
            "LOLWUT foo",
            "LOLWUT VERSION",
            "LOLWUT version x",
            "LOLWUT VERSION 1.5",
            "LOLWUT VERSION 7",
            "LOLWUT VERSION 8 1 2 3",
            "LOLWUT VERSION -1",
            "LOLWUT VERSION 4",
            "LOLWUT VERSION 59",
            "LOLWUT VERSION 4294967301 10 2 2",
            "LOLWUT VERSION 5 x",
            "LOLWUT VERSION 5 10 x",
            "LOLWUT VERSION 5 10 2 x",
            "LOLWUT VERSION 6 x",
            "LOLWUT VERSION 6 10 x",
        ],
    );
    // Nothing was loaded: INFO modules and HELLO agree too.
    p.check_line("INFO modules");
}

#[test]
fn module_commands_when_allowed() {
    let Some(redis) = Server::start_redis(&["--enable-module-command", "yes"]) else {
        return;
    };
    // The log file is opened before the server changes to its directory.
    let logdir = tempfile::tempdir().unwrap();
    let logfile = logdir.path().join("ferrokv.log");
    let ours = Server::start(&[
        "--enable-module-command",
        "yes",
        "--logfile",
        logfile.to_str().unwrap(),
    ]);
    let (mut a, mut b) = (ours.raw(), redis.raw());
    let exe = std::env::current_exe().unwrap();
    let exe = exe.to_str().unwrap();
    let noexec = ours.dir.path().join("plain.so");
    std::fs::write(&noexec, b"not a module").unwrap();
    let noexec = noexec.to_str().unwrap().to_string();
    for line in [
        "MODULE LIST".to_string(),
        "MODULE LOAD /nonexistent/mod.so".into(),
        "MODULE LOAD /nonexistent/mod.so a b c".into(),
        format!("MODULE LOAD {noexec}"),
        format!("MODULE LOAD {exe}"),
        "MODULE LOADEX /nonexistent/mod.so".into(),
        "MODULE LOADEX /nonexistent/mod.so CONFIG a".into(),
        "MODULE LOADEX /nonexistent/mod.so CONFIG a b".into(),
        "MODULE LOADEX /nonexistent/mod.so CONFIG a b ARGS x y".into(),
        "MODULE LOADEX /nonexistent/mod.so ARGS".into(),
        "MODULE LOADEX /nonexistent/mod.so BOGUS".into(),
        "MODULE UNLOAD foo".into(),
        "MODULE LIST".into(),
        "CONFIG GET enable-module-command".into(),
        "CONFIG SET enable-module-command no".into(),
    ] {
        let (x, y) = (a.cmds(&line), b.cmds(&line));
        assert_eq!(
            String::from_utf8_lossy(&x),
            String::from_utf8_lossy(&y),
            "{line}"
        );
    }
    // The reason is in ferrokv's log.
    let log = std::fs::read_to_string(&logfile).unwrap_or_default();
    assert!(
        log.contains("Module /nonexistent/mod.so failed to load"),
        "log: {log}"
    );
    assert!(
        log.contains("It does not have execute permissions."),
        "log: {log}"
    );
    assert!(log.contains("Syntax Error from arguments to loadex around BOGUS."));
}

/// The lines of a LOLWUT reply's text (RESP2 bulk).
fn bulk_text(reply: &[u8]) -> String {
    match parse(reply) {
        Resp::Bulk(Some(b)) => String::from_utf8(b).expect("utf-8"),
        other => panic!("expected a bulk string, got {other:?}"),
    }
}

#[test]
fn lolwut_matches_redis() {
    let Some(mut p) = Pair::start() else { return };
    // Schotter without random rows: byte for byte, in both protocols.
    let mut lines = Vec::new();
    for cols in [1, 2, 3, 4, 5, 7, 10, 33, 66, 120] {
        for per_row in [1, 2, 3, 5, 8, 13] {
            for per_col in [-3, 1, 2] {
                lines.push(format!("LOLWUT VERSION 5 {cols} {per_row} {per_col}"));
            }
        }
    }
    lines.push("LOLWUT VERSION 5 5000 300 2".into());
    lines.push("LOLWUT VERSION 5 -10 -10 -10".into());
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    check_both_protocols(&mut p, &refs);
    // Random Schotter: the two top rows of squares are never moved, so the
    // first text lines are identical; the rest has the same frame.
    for args in ["", " 66 8 12", " 40 5 9", " 100 20 30"] {
        let line = format!("LOLWUT VERSION 5{args}");
        let (x, y) = p.both(
            &line
                .split_whitespace()
                .map(str::as_bytes)
                .collect::<Vec<_>>(),
        );
        let (x, y) = (bulk_text(&x), bulk_text(&y));
        let (lx, ly): (Vec<&str>, Vec<&str>) = (x.lines().collect(), y.lines().collect());
        assert_eq!(lx.len(), ly.len(), "{line}");
        for (a, b) in lx.iter().zip(&ly) {
            assert_eq!(a.chars().count(), b.chars().count(), "{line}");
        }
        let (cols, per_row): (usize, usize) = match args.split_whitespace().collect::<Vec<_>>()[..]
        {
            [c, r, _] => (c.parse().unwrap(), r.parse().unwrap()),
            _ => (66, 8),
        };
        // Rows of squares 0 and 1 span 2 * side + padding pixels; a moved
        // square of row 2 reaches at most side / 3 higher.
        let side = (cols * 2 - 4) as f64 / per_row as f64;
        let fixed_lines = ((2.0 * side + 2.0 - side / 2.0) / 4.0).floor() as usize;
        assert!(fixed_lines >= 1);
        assert_eq!(lx[..fixed_lines], ly[..fixed_lines], "{line}");
        assert_eq!(lx.last(), ly.last());
        assert_eq!(
            *lx.last().unwrap(),
            "Georg Nees - schotter, plotter on paper, 1968. Redis ver. 7.0.15"
        );
    }
    // LOLWUT 6: random buildings; same size, palette and dedication.
    for (args, cols, rows) in [("", 80, 20), (" 30 7", 30, 7), (" 1 1", 1, 1)] {
        let line = format!("LOLWUT VERSION 6{args}");
        let (x, y) = p.both(
            &line
                .split_whitespace()
                .map(str::as_bytes)
                .collect::<Vec<_>>(),
        );
        let (x, y) = (bulk_text(&x), bulk_text(&y));
        for t in [&x, &y] {
            let lines: Vec<&str> = t.lines().collect();
            assert_eq!(lines.len(), rows + 2, "{line}");
            for l in &lines[..rows] {
                assert_eq!(l.matches("\x1b[0m").count(), cols, "{line}");
                let cells = l.split("\x1b[0m").filter(|c| !c.is_empty());
                for c in cells {
                    assert!(
                        [
                            "\x1b[0;30;40m ",
                            "\x1b[0;90;100m ",
                            "\x1b[0;37;47m ",
                            "\x1b[0;97;107m "
                        ]
                        .contains(&c),
                        "cell {c:?}"
                    );
                }
            }
        }
        let tail = |t: &str| t.lines().skip(rows).map(str::to_string).collect::<Vec<_>>();
        assert_eq!(tail(&x), tail(&y));
        // The top-left corner is sky on both (buildings are at most
        // rows / 2 + rows / 2 tall... and the foreground keeps a roof gap).
        assert!(x.ends_with("Redis ver. 7.0.15\n"));
    }
    // RESP3: a verbatim string.
    p.a.cmds("HELLO 3");
    let r = p.a.cmds("LOLWUT VERSION 6 3 2");
    assert!(r.starts_with(b"="), "{}", String::from_utf8_lossy(&r));
    assert!(r[r.iter().position(|&c| c == b'\n').unwrap() + 1..].starts_with(b"txt:"));
}

/// Runs `cmds` pipelined on a fresh connection to `port` and waits for
/// every reply.
fn load(port: u16, cmds: &[Vec<String>]) {
    let mut c = Raw::connect(port);
    for chunk in cmds.chunks(500) {
        let mut buf = Vec::new();
        for cmd in chunk {
            let parts: Vec<&[u8]> = cmd.iter().map(String::as_bytes).collect();
            buf.extend_from_slice(&encode(&parts));
        }
        c.send(&buf);
        for _ in chunk {
            let r = c.reply();
            assert!(!r.starts_with(b"-"), "{}", String::from_utf8_lossy(&r));
        }
    }
}

/// Commands building one value of `kind` with `n` elements under `key`.
fn value_cmds(kind: &str, key: &str, n: usize) -> Vec<Vec<String>> {
    let s = |x: &str| x.to_string();
    let mut out = Vec::new();
    match kind {
        "string" => out.push(vec![s("SET"), s(key), "x".repeat(n)]),
        "int" => out.push(vec![
            s("SET"),
            s(key),
            (1_000_000_007 * n as u64).to_string(),
        ]),
        "stream" => {
            for i in 0..n {
                out.push(vec![
                    s("XADD"),
                    s(key),
                    format!("{}-1", i + 1),
                    s("field"),
                    format!("value{i}"),
                ]);
            }
        }
        _ => {
            for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
                let mut c = vec![
                    s(match kind {
                        "list" => "RPUSH",
                        "hash" => "HSET",
                        "set" | "intset" => "SADD",
                        _ => "ZADD",
                    }),
                    s(key),
                ];
                for &i in chunk {
                    match kind {
                        "list" => c.push(format!("element:{i}")),
                        "hash" => {
                            c.push(format!("field:{i}"));
                            c.push(format!("value:{i}"));
                        }
                        "set" => c.push(format!("member:{i}")),
                        "intset" => c.push(i.to_string()),
                        _ => {
                            c.push(i.to_string());
                            c.push(format!("member:{i}"));
                        }
                    }
                }
                out.push(c);
            }
        }
    }
    out
}

/// ferrokv's MEMORY USAGE over redis-server 7.0's, per type: the allowed
/// range (README.md, "Differences"). Strings cost ferrokv a 64-byte node
/// where Redis has a 24-byte dictEntry, a 16-byte object and the key's sds
/// (small integers: +33%); lists keep spare capacity in their packed nodes
/// (up to about twice Redis's exact-size listpacks); large hashes, sets and
/// sorted sets pack their members into per-bucket buffers, where Redis
/// pays a dictEntry and an sds (or a skiplist node) per element (about a
/// third to two thirds of Redis's figure); Redis's estimate for a stream
/// adds a fixed radix-tree constant (over 4 KB for a one-entry stream), so
/// streams are compared from 1000 entries.
const BANDS: &[(&str, f64, f64)] = &[
    ("int", 0.9, 1.4),
    ("string", 0.7, 1.4),
    ("list", 0.8, 2.2),
    ("hash", 0.4, 1.3),
    ("set", 0.25, 1.1),
    ("intset", 0.9, 1.5),
    ("zset", 0.4, 1.6),
    ("stream", 0.4, 1.5),
];

/// Element counts tried per type.
fn sizes(kind: &str) -> &'static [usize] {
    match kind {
        "int" => &[1, 1000],
        "string" => &[5, 40, 100, 1000, 10000, 100000],
        "intset" => &[10, 100, 500],
        "stream" => &[1000, 3000, 10000],
        _ => &[10, 100, 1000, 10000],
    }
}

fn int_reply(r: &[u8]) -> i64 {
    let s = String::from_utf8_lossy(r);
    s.trim()
        .strip_prefix(':')
        .unwrap_or_else(|| panic!("not an integer: {s}"))
        .parse()
        .unwrap()
}

#[test]
fn memory_usage_within_documented_bands_of_redis() {
    let Some(mut p) = Pair::start() else { return };
    let mut report = Vec::new();
    for &(kind, lo, hi) in BANDS {
        let mut last = 0;
        for &n in sizes(kind) {
            let key = format!("{kind}:{n}");
            let cmds = value_cmds(kind, &key, n);
            load(p.ours.port, &cmds);
            load(p.redis.port, &cmds);
            let line = format!("MEMORY USAGE {key} SAMPLES 0");
            let ours = int_reply(&p.a.cmds(&line));
            let theirs = int_reply(&p.b.cmds(&line));
            let ratio = ours as f64 / theirs as f64;
            report.push(format!(
                "{key}: ferrokv {ours} redis {theirs} ratio {ratio:.2}"
            ));
            assert!(
                (lo..=hi).contains(&ratio),
                "{key}: ferrokv {ours}, redis {theirs} (ratio {ratio:.2} outside {lo}..{hi})\n{}",
                report.join("\n")
            );
            // Grows with the value (an integer's size is fixed).
            assert!(ours > last || kind == "int", "{key}: {ours} after {last}");
            last = ours;
            // The default 5 samples estimate the same value closely.
            let sampled = int_reply(&p.a.cmds(&format!("MEMORY USAGE {key}")));
            let err = (sampled - ours).abs() as f64 / ours as f64;
            assert!(err < 0.15, "{key}: sampled {sampled} vs {ours}");
        }
    }
    eprintln!("{}", report.join("\n"));
}

#[test]
fn memory_usage_adds_up_to_used_memory() {
    let s = Server::start(&[]);
    let mut c = s.raw();
    let used = |c: &mut Raw| -> i64 { c.info_field("memory", "used_memory").parse().unwrap() };
    let stat = |c: &mut Raw, name: &str| -> i64 {
        let r = parse(&c.cmds("MEMORY STATS"));
        let e = elems(&r);
        let mut i = 0;
        while i < e.len() {
            if let Resp::Bulk(Some(k)) = &e[i] {
                if k == name.as_bytes() {
                    if let Resp::Line(b':', v) = &e[i + 1] {
                        return String::from_utf8_lossy(v).parse().unwrap();
                    }
                }
                if k == b"db.0" && name.starts_with("overhead.hashtable.") {
                    let inner = elems(&e[i + 1]);
                    for j in (0..inner.len()).step_by(2) {
                        if inner[j] == Resp::Bulk(Some(name.as_bytes().to_vec())) {
                            if let Resp::Line(_, v) = &inner[j + 1] {
                                return String::from_utf8_lossy(v).parse().unwrap();
                            }
                        }
                    }
                }
            }
            i += 2;
        }
        0
    };
    for (kind, keys, n) in [
        ("string", 3000, 10),
        ("string", 2000, 300),
        ("int", 2000, 7),
        ("list", 1000, 20),
        ("hash", 1000, 8),
        ("hash", 1, 20000),
        ("set", 1, 20000),
        ("intset", 1, 20000),
        ("zset", 1000, 10),
        ("zset", 1, 20000),
        ("list", 1, 50000),
        ("stream", 1, 10000),
    ] {
        c.cmds("FLUSHALL");
        std::thread::sleep(Duration::from_millis(100));
        let before = used(&mut c);
        let mut cmds = Vec::new();
        for k in 0..keys {
            cmds.extend(value_cmds(kind, &format!("{kind}:{k}:{n}"), n));
        }
        load(s.port, &cmds);
        drop(cmds);
        std::thread::sleep(Duration::from_millis(100));
        let after = used(&mut c);
        let mut sum = 0;
        let mut cursor = "0".to_string();
        loop {
            let r = parse(&c.cmds(&format!("SCAN {cursor} COUNT 1000")));
            let e = elems(&r);
            let Resp::Bulk(Some(next)) = &e[0] else {
                panic!()
            };
            for k in elems(&e[1]) {
                let Resp::Bulk(Some(k)) = k else { panic!() };
                let args: Vec<&[u8]> = vec![b"MEMORY", b"USAGE", k.as_slice(), b"SAMPLES", b"0"];
                sum += int_reply(&c.cmd(&args));
            }
            cursor = String::from_utf8_lossy(next).into_owned();
            if cursor == "0" {
                break;
            }
        }
        // The key nodes are in MEMORY USAGE; the bucket arrays are not.
        let buckets = stat(&mut c, "overhead.hashtable.main") - 64 * keys as i64;
        let delta = after - before;
        let expected = sum + buckets;
        let diff = (delta - expected).abs();
        assert!(
            diff as f64 <= delta as f64 * 0.05 + 8192.0,
            "{kind} x{keys} n={n}: used_memory grew {delta}, MEMORY USAGE sum {sum} + buckets {buckets}"
        );
    }
}

/// The keys of a MEMORY STATS reply, nested maps as `db.N/field`, with the
/// frame type of each value.
fn stats_keys(reply: &[u8]) -> Vec<(String, u8)> {
    fn walk(e: &[Resp], prefix: &str, out: &mut Vec<(String, u8)>) {
        for pair in e.chunks(2) {
            let Resp::Bulk(Some(k)) = &pair[0] else {
                panic!("key {:?}", pair[0])
            };
            let k = format!("{prefix}{}", String::from_utf8_lossy(k));
            match &pair[1] {
                Resp::Agg(t, inner) => {
                    out.push((k.clone(), *t));
                    walk(inner, &format!("{k}/"), out);
                }
                Resp::Line(t, _) => out.push((k, *t)),
                Resp::Bulk(_) => out.push((k, b'$')),
            }
        }
    }
    let mut out = Vec::new();
    walk(elems(&parse(reply)), "", &mut out);
    out
}

#[test]
fn memory_stats_fields_match_redis() {
    let Some(mut p) = Pair::start() else { return };
    for line in [
        "SET a 1",
        "SELECT 3",
        "SET b 2",
        "EXPIRE b 1000",
        "SELECT 0",
    ] {
        p.check_line(line);
    }
    for proto in ["2", "3"] {
        p.a.cmds(&format!("HELLO {proto}"));
        p.b.cmds(&format!("HELLO {proto}"));
        let (x, y) = p.both(&[b"MEMORY", b"STATS"]);
        assert_eq!(stats_keys(&x), stats_keys(&y), "RESP{proto}");
    }
    p.a.cmds("HELLO 2");
    // The figures are consistent with each other and with INFO.
    let r = parse(&p.a.cmds("MEMORY STATS"));
    let e = elems(&r);
    let get = |name: &str| -> f64 {
        let i = e
            .iter()
            .position(|x| *x == Resp::Bulk(Some(name.as_bytes().to_vec())))
            .unwrap_or_else(|| panic!("{name}"));
        match &e[i + 1] {
            Resp::Line(_, v) | Resp::Bulk(Some(v)) => String::from_utf8_lossy(v).parse().unwrap(),
            other => panic!("{name}: {other:?}"),
        }
    };
    assert_eq!(get("keys.count"), 2.0);
    let total = get("total.allocated");
    assert!(get("peak.allocated") >= total);
    assert!(get("startup.allocated") > 0.0 && get("startup.allocated") < total);
    assert!(get("overhead.total") >= get("startup.allocated"));
    assert_eq!(get("dataset.bytes"), total - get("overhead.total"));
    assert!(get("allocator.allocated") > 0.0);
    assert!(get("fragmentation") > 0.0);
    let used: f64 = p.a.info_field("memory", "used_memory").parse().unwrap();
    assert!((used - total).abs() < total * 0.1, "{used} vs {total}");
}

#[test]
fn memory_doctor_and_allocator_reports() {
    let Some(mut p) = Pair::start() else { return };
    // Little memory: Redis's "empty instance" text, byte for byte.
    p.check_line("MEMORY DOCTOR");
    // With data: one of Redis's reports.
    let value = "v".repeat(1000);
    let cmds: Vec<Vec<String>> = (0..8000)
        .map(|i| vec!["SET".into(), format!("key:{i}"), value.clone()])
        .collect();
    load(p.ours.port, &cmds);
    let r = bulk_text(&p.a.cmds("MEMORY DOCTOR"));
    assert!(
        r.starts_with("Hi Sam, I can't find any memory issue in your instance.")
            || (r.starts_with(
                "Sam, I detected a few issues in this Redis instance memory implants:\n\n"
            ) && r.ends_with("I'm here to keep you safe, Sam. I want to help you.\n")),
        "{r}"
    );
    // MALLOC-STATS: the allocator's report; verbatim in RESP3.
    let r = bulk_text(&p.a.cmds("MEMORY MALLOC-STATS"));
    assert!(!r.is_empty());
    p.a.cmds("HELLO 3");
    let r = p.a.cmds("MEMORY MALLOC-STATS");
    assert!(r.starts_with(b"="));
    let r = p.a.cmds("MEMORY DOCTOR");
    assert!(r.starts_with(b"="));
    p.a.cmds("HELLO 2");
    // PURGE gives memory back: RSS does not grow, used_memory unchanged.
    p.a.cmds("FLUSHALL");
    assert_eq!(p.a.cmds("MEMORY PURGE"), b"+OK\r\n");
}

/// LATENCY GRAPH's text with every number replaced by `N`.
fn normalise_digits(s: &str) -> String {
    let mut out = String::new();
    let mut in_num = false;
    for ch in s.chars() {
        if ch.is_ascii_digit() {
            if !in_num {
                out.push('N');
            }
            in_num = true;
        } else {
            in_num = false;
            out.push(ch);
        }
    }
    out
}

#[test]
fn latency_graph_matches_redis() {
    let args = [
        "--enable-debug-command",
        "yes",
        "--latency-monitor-threshold",
        "1",
    ];
    let Some(redis) = Server::start_redis(&args) else {
        return;
    };
    let ours = Server::start(&args);
    let (mut a, mut b) = (ours.raw(), redis.raw());
    // Samples of about 30, 250 and 95 ms, each in its own second.
    for (i, secs) in ["0.03", "0.25", "0.095"].iter().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(1000));
        }
        a.cmds(&format!("DEBUG SLEEP {secs}"));
        b.cmds(&format!("DEBUG SLEEP {secs}"));
    }
    for proto in ["2", "3"] {
        a.cmds(&format!("HELLO {proto}"));
        b.cmds(&format!("HELLO {proto}"));
        let (x, y) = (
            a.cmds("LATENCY GRAPH command"),
            b.cmds("LATENCY GRAPH command"),
        );
        let (x, y) = (String::from_utf8_lossy(&x), String::from_utf8_lossy(&y));
        assert_eq!(normalise_digits(&x), normalise_digits(&y), "RESP{proto}");
        let text = x.split_once('\n').unwrap().1;
        let text = text.strip_prefix("txt:").unwrap_or(text);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("command - high 25"), "{x}");
        assert_eq!(lines[1], "-".repeat(80));
        // 4 rows scaled between 30 and 250 ms (12 steps: 0, 11 and 3);
        // a blank line; the labels ("2s", "1s", "0s") downwards.
        assert_eq!(lines[2..6], [" # ", " | ", " |_", "_||"], "{x}");
        assert_eq!(lines[6], "   ");
        assert_eq!(lines[8], "sss");
    }
    a.cmds("HELLO 2");
    b.cmds("HELLO 2");
    // Events are case-sensitive; LATENCY RESET drops the graph.
    for line in [
        "LATENCY GRAPH COMMAND",
        "LATENCY RESET command",
        "LATENCY GRAPH command",
    ] {
        assert_eq!(a.cmds(line), b.cmds(line), "{line}");
    }
}

/// One command of a LATENCY HISTOGRAM reply: (command, calls, [(usec,
/// cumulative calls)]).
type Histogram = (String, i64, Vec<(i64, i64)>);

/// LATENCY HISTOGRAM reply, command by command.
fn histogram(reply: &[u8]) -> Vec<Histogram> {
    let r = parse(reply);
    let num = |x: &Resp| match x {
        Resp::Line(b':', v) => String::from_utf8_lossy(v).parse::<i64>().unwrap(),
        other => panic!("{other:?}"),
    };
    elems(&r)
        .chunks(2)
        .map(|pair| {
            let Resp::Bulk(Some(name)) = &pair[0] else {
                panic!()
            };
            let m = elems(&pair[1]);
            assert_eq!(m[0], Resp::Bulk(Some(b"calls".to_vec())));
            assert_eq!(m[2], Resp::Bulk(Some(b"histogram_usec".to_vec())));
            let buckets = elems(&m[3])
                .chunks(2)
                .map(|kv| (num(&kv[0]), num(&kv[1])))
                .collect();
            (
                String::from_utf8_lossy(name).into_owned(),
                num(&m[1]),
                buckets,
            )
        })
        .collect()
}

#[test]
fn latency_histogram_matches_redis() {
    let Some(mut p) = Pair::start() else { return };
    const KEYS: &[i64] = &[
        1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2113, 4227, 8454, 16908, 33816, 67633, 135266,
        270532, 541065,
    ];
    for proto in ["2", "3"] {
        for line in [
            format!("HELLO {proto}"),
            "CONFIG RESETSTAT".into(),
            "SET k 1".into(),
            "SET k 2".into(),
            "SET k 3".into(),
            "GET k".into(),
            "CONFIG GET maxmemory".into(),
            "CONFIG GET hz".into(),
            "CLIENT ID".into(),
        ] {
            p.a.cmds(&line);
            p.b.cmds(&line);
        }
        for line in [
            "LATENCY HISTOGRAM set get config nosuch",
            "LATENCY HISTOGRAM SET config|get set",
            "LATENCY HISTOGRAM client|id",
            "LATENCY HISTOGRAM",
        ] {
            let (x, y) = (p.a.cmds(line), p.b.cmds(line));
            assert_eq!(x[0], y[0], "{line}: frame type");
            let mut hx = histogram(&x);
            let mut hy = histogram(&y);
            if line == "LATENCY HISTOGRAM" || line.contains("config ") {
                // Redis lists in its dict's order.
                hx.sort();
                hy.sort();
            }
            let names = |h: &[Histogram]| {
                h.iter()
                    .map(|(n, c, _)| (n.clone(), *c))
                    .collect::<Vec<_>>()
            };
            assert_eq!(names(&hx), names(&hy), "{line}");
            for (name, calls, buckets) in &hx {
                let mut last = 0;
                for (us, cum) in buckets {
                    assert!(KEYS.contains(us), "{name}: bucket {us}");
                    assert!(*cum > last, "{name}: cumulative {cum} after {last}");
                    last = *cum;
                }
                assert_eq!(last, *calls, "{name}");
            }
        }
    }
    // latency-tracking no: nothing more is recorded.
    for c in [&mut p.a, &mut p.b] {
        c.cmds("HELLO 2");
        c.cmds("CONFIG SET latency-tracking no");
        c.cmds("SET k 4");
    }
    let (x, y) = (
        p.a.cmds("LATENCY HISTOGRAM set"),
        p.b.cmds("LATENCY HISTOGRAM set"),
    );
    assert_eq!(histogram(&x)[0].1, 3);
    assert_eq!(histogram(&x)[0].1, histogram(&y)[0].1);
    p.check_line("CONFIG GET latency-tracking");
}

/// The active expiry cycle that frees a big value (a set of a million
/// members, freed at once with `lazyfree-lazy-expire no`) records the
/// "expire-cycle" latency event, as redis-server's activeExpireCycle
/// does (latency-monitor.tcl "LATENCY of expire events are correctly
/// collected"). The members are longer than ferrokv stores inline: a set
/// of short members is freed in far less than the suite's 20 ms
/// threshold (5 ms here, for a margin).
#[test]
fn expire_cycle_latency_event_as_redis() {
    let args = ["--latency-monitor-threshold", "5"];
    let run = |port: u16, who: &str| {
        let mut c = Raw::connect(port);
        let members: Vec<String> = (0..10_000).map(|i| i.to_string()).collect();
        for batch in 0..100 {
            let mut argv: Vec<Vec<u8>> = vec![b"SADD".to_vec(), b"big".to_vec()];
            argv.extend(
                members
                    .iter()
                    .map(|m| format!("{batch}:{m}:a-member-longer-than-inline").into_bytes()),
            );
            let refs: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
            c.cmd(&refs);
        }
        assert_eq!(c.cmds("SCARD big"), b":1000000\r\n", "{who}");
        c.cmds("PEXPIRE big 50");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while c.cmds("DBSIZE") != b":0\r\n" {
            assert!(std::time::Instant::now() < deadline, "{who}: not expired");
            std::thread::sleep(Duration::from_millis(50));
        }
        let latest = String::from_utf8_lossy(&c.cmds("LATENCY LATEST")).into_owned();
        assert!(latest.contains("expire-cycle"), "{who}: {latest}");
    };
    if let Some(redis) = Server::start_redis(&args) {
        run(redis.port, "redis-server");
    }
    let ours = Server::start(&args);
    run(ours.port, "ferrokv");
}
