//! End-to-end tests: the benchmark binary against real servers
//! (ferrokv-server, redis-server, memcached when installed) and small fake
//! servers written here.

mod common;

use common::*;
use ferrokv_benchmark::cluster::slot;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[test]
fn basic_set_get_counts_requests() {
    let fk = ferrokv();
    let p = fk.port.to_string();
    let o = bench(&["-p", &p, "-t", "set,get", "-n", "500", "-c", "4", "-P", "8"]);
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    let s = out(&o);
    assert!(s.contains("====== SET ======"), "{s}");
    assert!(s.contains("====== GET ======"), "{s}");
    assert_eq!(s.matches("500 requests completed").count(), 2, "{s}");
    assert!(s.contains("p99.9"), "{s}");

    // Exact server-side counts from redis-server's INFO commandstats.
    if let Some((r, _)) = redis() {
        let p = r.port.to_string();
        let o = bench(&[
            "-p", &p, "-t", "set,get", "-n", "1000", "-c", "5", "-P", "10", "-q",
        ]);
        assert!(o.status.success(), "{}", err(&o));
        assert_eq!(calls(r.port, "set"), 1000);
        assert_eq!(calls(r.port, "get"), 1000);
        // --threads spreads the connections over runtimes; counts still exact.
        let o = bench(&[
            "-p",
            &p,
            "-t",
            "incr",
            "-n",
            "999",
            "-c",
            "6",
            "--threads",
            "3",
            "-q",
        ]);
        assert!(o.status.success(), "{}", err(&o));
        assert_eq!(calls(r.port, "incr"), 999);
    }
}

#[test]
fn csv_and_quiet_formats() {
    let fk = ferrokv();
    let p = fk.port.to_string();
    let o = bench(&["-p", &p, "-t", "set,get", "-n", "200", "-c", "2", "--csv"]);
    assert!(o.status.success(), "{}", err(&o));
    let s = out(&o);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[0],
        "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\""
    );
    assert_eq!(lines.len(), 3, "{s}");
    for (line, name) in lines[1..].iter().zip(["SET", "GET"]) {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), 8, "{line}");
        assert_eq!(fields[0], format!("\"{name}\""));
        for f in &fields[1..] {
            let v: f64 = f.trim_matches('"').parse().unwrap();
            assert!(v >= 0.0);
        }
        assert!(fields[1].trim_matches('"').parse::<f64>().unwrap() > 0.0);
    }

    let o = bench(&["-p", &p, "-t", "ping", "-n", "200", "-c", "2", "-q"]);
    assert!(o.status.success(), "{}", err(&o));
    let s = out(&o);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 2, "{s}");
    assert!(lines[0].starts_with("PING_INLINE: "), "{s}");
    assert!(lines[1].starts_with("PING_MBULK: "), "{s}");
    for l in lines {
        assert!(
            l.contains(" requests per second, p50=") && l.ends_with(" msec"),
            "{l}"
        );
    }
}

#[test]
fn ratio_mixes_sets_and_gets() {
    let Some((r, _)) = redis() else { return };
    let p = r.port.to_string();
    let o = bench(&[
        "-p", &p, "--ratio", "1:4", "-n", "1000", "-c", "4", "-P", "5",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let s = out(&o);
    assert!(s.contains("SET:GET 1:4"), "{s}");
    assert!(s.contains("Totals"), "{s}");
    assert_eq!(calls(r.port, "set") + calls(r.port, "get"), 1000);
    assert_eq!(calls(r.port, "set"), 200, "{s}");
    assert_eq!(calls(r.port, "get"), 800);
}

#[test]
fn key_patterns_shape_the_keyspace() {
    let Some((r, _)) = redis() else { return };
    let p = r.port.to_string();
    // Sequential over 0..99 with one connection: every key exactly once.
    let o = bench(&[
        "-p",
        &p,
        "-t",
        "set",
        "-n",
        "100",
        "-c",
        "1",
        "-r",
        "100",
        "--key-pattern",
        "S",
        "-q",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(dbsize(r.port), 100);
    assert!(cmd(r.port, &["EXISTS", "key:000000000000"]).starts_with(":1"));
    assert!(cmd(r.port, &["EXISTS", "key:000000000099"]).starts_with(":1"));
    assert!(cmd(r.port, &["EXISTS", "key:000000000100"]).starts_with(":0"));

    // Uniform random within -r.
    cmd(r.port, &["FLUSHALL"]);
    let o = bench(&["-p", &p, "-t", "set", "-n", "2000", "-r", "20", "-q"]);
    assert!(o.status.success());
    assert_eq!(dbsize(r.port), 20);

    // Gaussian with a small deviation stays near the median.
    cmd(r.port, &["FLUSHALL"]);
    let o = bench(&[
        "-p",
        &p,
        "-t",
        "set",
        "-n",
        "2000",
        "--key-pattern",
        "G",
        "--key-minimum",
        "0",
        "--key-maximum",
        "99999",
        "--key-stddev",
        "10",
        "-q",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let n = dbsize(r.port);
    assert!((20..=120).contains(&n), "gaussian keys: {n}");

    // Zipf concentrates on few keys, uniform spreads.
    cmd(r.port, &["FLUSHALL"]);
    let o = bench(&[
        "-p",
        &p,
        "-t",
        "set",
        "-n",
        "3000",
        "-r",
        "100000",
        "--key-pattern",
        "Z",
        "--key-zipf-exp",
        "1.2",
        "-q",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let zipf = dbsize(r.port);
    cmd(r.port, &["FLUSHALL"]);
    let o = bench(&[
        "-p",
        &p,
        "-t",
        "set",
        "-n",
        "3000",
        "-r",
        "100000",
        "--key-pattern",
        "R",
        // A fixed seed: with a clock seed, 3,000 uniform draws out of
        // 100,000 hit key 0 (checked below) about 3% of the time.
        "--seed",
        "1",
        "-q",
    ]);
    assert!(o.status.success());
    let uniform = dbsize(r.port);
    assert!(zipf * 2 < uniform, "zipf {zipf} uniform {uniform}");
    assert!(cmd(r.port, &["EXISTS", "key:000000000000"]).starts_with(":0"));
}

#[test]
fn test_time_runs_for_the_given_time() {
    let fk = ferrokv();
    let p = fk.port.to_string();
    let t0 = std::time::Instant::now();
    let o = bench(&[
        "-p",
        &p,
        "-t",
        "set",
        "--test-time",
        "1",
        "-c",
        "4",
        "-n",
        "10",
    ]);
    let took = t0.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", err(&o));
    assert!((0.9..6.0).contains(&took), "took {took}");
    let s = out(&o);
    let done: u64 = s
        .lines()
        .find(|l| l.contains(" requests completed"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(done > 10, "{s}");
}

#[test]
fn json_out_file_has_results() {
    let fk = ferrokv();
    let p = fk.port.to_string();
    let path = std::env::temp_dir().join(format!("fkb-{}.json", fk.port));
    let o = bench(&[
        "-p",
        &p,
        "-t",
        "set,get",
        "-n",
        "300",
        "-c",
        "3",
        "-q",
        "--json-out-file",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).ok();
    assert_eq!(doc["tool"], "ferrokv-benchmark");
    assert_eq!(doc["config"]["clients"], 3);
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["test"], "SET");
    assert_eq!(results[1]["test"], "GET");
    for r in results {
        assert_eq!(r["requests"], 300);
        assert_eq!(r["errors"], 0);
        assert!(r["rps"].as_f64().unwrap() > 0.0);
        let l = &r["latency_ms"];
        for k in ["avg", "min", "p50", "p90", "p95", "p99", "p99.9", "max"] {
            assert!(l[k].as_f64().is_some(), "{k}");
        }
        assert!(l["p50"].as_f64() <= l["max"].as_f64());
    }
}

#[test]
fn verify_passes_on_ferrokv_and_redis() {
    let fk = ferrokv();
    let p = fk.port.to_string();
    let o = bench(&["-p", &p, "--verify", "-n", "400", "-c", "4", "-P", "3"]);
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    assert!(out(&o).contains("1200 requests completed"), "{}", out(&o));
    assert!(!out(&o).contains("VERIFY FAILED"));
    if let Some((r, _)) = redis() {
        let p = r.port.to_string();
        let o = bench(&["-p", &p, "--verify", "-n", "300", "-c", "3", "-q"]);
        assert!(o.status.success(), "{}{}", out(&o), err(&o));
        assert_eq!(calls(r.port, "get"), 300);
        assert_eq!(dbsize(r.port), 0, "every key deleted again");
    }
}

#[test]
fn verify_fails_against_a_corrupting_server() {
    let corrupted = Arc::new(AtomicU64::new(0));
    let c = corrupted.clone();
    let port = fake_resp_server(Arc::new(move |args, _| {
        match args[0].to_ascii_uppercase().as_slice() {
            b"SET" => b"+OK\r\n".to_vec(),
            b"DEL" => b":1\r\n".to_vec(),
            b"GET" => {
                if c.fetch_add(1, Ordering::SeqCst) == 0 {
                    bulk(b"this is not the value that was set")
                } else {
                    // Echo nothing useful either: a wrong value of the right size.
                    bulk(&[b'z'; 256])
                }
            }
            _ => b"-ERR unknown\r\n".to_vec(),
        }
    }));
    let o = bench(&["-p", &port.to_string(), "--verify", "-n", "20", "-c", "2"]);
    assert!(!o.status.success());
    assert_eq!(o.status.code(), Some(2));
    let s = out(&o);
    assert!(s.contains("VERIFY FAILED: 20 mismatches"), "{s}");
    assert!(
        s.contains("GET: expected the 256-byte value just set"),
        "{s}"
    );
    assert!(s.contains("this is not the value"), "{s}");
    assert!(err(&o).contains("VERIFY FAILED"));
}

#[test]
fn memcached_protocol() {
    let port = fake_memcached().to_string();
    let o = bench(&[
        "--protocol",
        "memcached",
        "-p",
        &port,
        "-t",
        "set,get",
        "-n",
        "500",
        "-c",
        "3",
        "-P",
        "4",
        "-r",
        "50",
        "-q",
    ]);
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    let s = out(&o);
    assert!(s.contains("SET: ") && s.contains("GET: "), "{s}");
    assert!(!s.contains("error"), "{s}");
    let o = bench(&[
        "--protocol",
        "memcached",
        "-p",
        &port,
        "--ratio",
        "1:3",
        "-n",
        "400",
        "-c",
        "2",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("400 requests completed"));
    let o = bench(&[
        "--protocol",
        "memcached",
        "-p",
        &port,
        "--verify",
        "-n",
        "200",
        "-c",
        "2",
        "-P",
        "2",
    ]);
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    let o = bench(&["--protocol", "memcached", "-p", &port, "-t", "incr"]);
    assert!(!o.status.success());

    if have("memcached") {
        let mport = free_port();
        let child = std::process::Command::new("memcached")
            .args([
                "-p",
                &mport.to_string(),
                "-U",
                "0",
                "-l",
                "127.0.0.1",
                "-u",
                "root",
            ])
            .spawn()
            .unwrap();
        let _guard = Proc { child, port: mport };
        wait_port(mport);
        let mp = mport.to_string();
        let o = bench(&[
            "--protocol",
            "memcached",
            "-p",
            &mp,
            "--verify",
            "-n",
            "300",
            "-c",
            "3",
            "-P",
            "2",
            "-q",
        ]);
        assert!(o.status.success(), "{}{}", out(&o), err(&o));
        let o = bench(&[
            "--protocol",
            "memcached",
            "-p",
            &mp,
            "--ratio",
            "1:10",
            "-n",
            "1000",
            "-r",
            "100",
            "-q",
        ]);
        assert!(o.status.success(), "{}{}", out(&o), err(&o));
        assert!(!out(&o).contains("error replies"), "{}", out(&o));
    } else {
        eprintln!("memcached not installed: real-memcached part skipped");
    }
}

#[test]
fn cluster_follows_moved_and_ask() {
    // Node B: owns nothing per CLUSTER SLOTS but accepts whatever it gets.
    let b_sets = Arc::new(AtomicU64::new(0));
    let b_asked = Arc::new(AtomicU64::new(0));
    let (bs, ba) = (b_sets.clone(), b_asked.clone());
    let b_port = fake_resp_server(Arc::new(move |args, st| {
        match args[0].to_ascii_uppercase().as_slice() {
            b"ASKING" => {
                st.asking = true;
                b"+OK\r\n".to_vec()
            }
            b"SET" => {
                bs.fetch_add(1, Ordering::SeqCst);
                if std::mem::take(&mut st.asking) {
                    ba.fetch_add(1, Ordering::SeqCst);
                } else if slot(&args[1]) % 4 == 1 {
                    // ASK slots must not have been remapped to B.
                    return b"-ERR ask slot without ASKING\r\n".to_vec();
                }
                b"+OK\r\n".to_vec()
            }
            _ => b"-ERR unknown\r\n".to_vec(),
        }
    }));
    // Node A: claims every slot; MOVED for slot%4==0, ASK for slot%4==1.
    let a_ok = Arc::new(AtomicU64::new(0));
    let moved_slots = Arc::new(Mutex::new(Vec::<u16>::new()));
    let (aok, ms) = (a_ok.clone(), moved_slots.clone());
    let a_port = Arc::new(AtomicU64::new(0));
    let ap = a_port.clone();
    let port = fake_resp_server(Arc::new(move |args, _| {
        let a = ap.load(Ordering::SeqCst);
        match args[0].to_ascii_uppercase().as_slice() {
            b"CLUSTER" => format!(
                "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:{a}\r\n$4\r\nnode\r\n"
            )
            .into_bytes(),
            b"SET" => {
                let s = slot(&args[1]);
                match s % 4 {
                    0 => {
                        ms.lock().unwrap().push(s);
                        format!("-MOVED {s} 127.0.0.1:{b_port}\r\n").into_bytes()
                    }
                    1 => format!("-ASK {s} 127.0.0.1:{b_port}\r\n").into_bytes(),
                    _ => {
                        aok.fetch_add(1, Ordering::SeqCst);
                        b"+OK\r\n".to_vec()
                    }
                }
            }
            _ => b"-ERR unknown\r\n".to_vec(),
        }
    }));
    a_port.store(port as u64, Ordering::SeqCst);
    let o = bench(&[
        "--cluster",
        "-p",
        &port.to_string(),
        "-t",
        "set",
        "-n",
        "2000",
        "-r",
        "200",
        "-c",
        "1",
        "-P",
        "8",
    ]);
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    let s = out(&o);
    assert!(!s.contains("error replies"), "{s}");
    assert!(s.contains("2000 requests completed"), "{s}");
    assert!(s.contains("cluster redirects followed"), "{s}");
    let (aok, bs, ba) = (
        a_ok.load(Ordering::SeqCst),
        b_sets.load(Ordering::SeqCst),
        b_asked.load(Ordering::SeqCst),
    );
    assert_eq!(aok + bs, 2000, "every SET landed exactly once");
    assert!(ba > 0, "ASK was followed with ASKING");
    assert!(bs > ba, "MOVED keys went to B directly");
    // After a MOVED the client's slot map points at B: A sees a moved slot
    // again only for requests already in the same pipeline batch (-P 8,
    // one connection, so one slot map).
    let moved = moved_slots.lock().unwrap();
    let distinct: HashSet<_> = moved.iter().collect();
    assert!(!moved.is_empty());
    for s in &distinct {
        let n = moved.iter().filter(|m| m == s).count();
        assert!(n <= 8, "slot {s} sent to A {n} times after MOVED");
    }
    assert!(
        moved.len() < distinct.len() * 2,
        "{} vs {}",
        moved.len(),
        distinct.len()
    );
}

#[test]
fn compare_two_targets() {
    let fk = ferrokv();
    let Some((r, _)) = redis() else { return };
    let targets = format!("127.0.0.1:{},127.0.0.1:{}", fk.port, r.port);
    let o = bench(&[
        "--compare",
        &targets,
        "-t",
        "set,get",
        "-n",
        "300",
        "-c",
        "3",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let s = out(&o);
    assert!(s.contains("====== compare: SET ======"), "{s}");
    assert!(s.contains("====== compare: GET ======"), "{s}");
    assert!(s.contains("rps/first"), "{s}");
    assert!(s.contains(&format!("SET@127.0.0.1:{}", fk.port)), "{s}");
    assert!(s.contains(&format!("GET@127.0.0.1:{}", r.port)), "{s}");
    assert_eq!(calls(r.port, "set"), 300);
    // The first target's ratio to itself is exactly 1.
    let first_row = s
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with(&format!("127.0.0.1:{}", fk.port))
        })
        .unwrap();
    assert!(first_row.contains("1.000"), "{first_row}");
}

/// Counts of the SVG's elements `tag` whose `attr` is `value`.
fn svg_count(doc: &roxmltree::Document, tag: &str, attr: &str, value: &str) -> usize {
    doc.descendants()
        .filter(|n| n.has_tag_name(tag) && n.attribute(attr) == Some(value))
        .count()
}

#[test]
fn compare_report_draws_bars_and_curves_per_server() {
    let fk = ferrokv();
    let Some((r, _)) = redis() else { return };
    let dir = std::env::temp_dir().join(format!("fkb-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg_path = dir.join("report.svg");
    let json_path = dir.join("results.json");
    let targets = format!("ferrokv=127.0.0.1:{},redis-7=127.0.0.1:{}", fk.port, r.port);
    let o = bench(&[
        "--compare",
        &targets,
        "-t",
        "set,get",
        "-n",
        "2000",
        "-c",
        "4",
        "-P",
        "4",
        "-q",
        "--report",
        svg_path.to_str().unwrap(),
        "--json-out-file",
        json_path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    // The names stand for the addresses in the text output too.
    assert!(out(&o).contains("SET@ferrokv: "), "{}", out(&o));
    assert!(out(&o).contains("GET@redis-7: "), "{}", out(&o));

    let check = |svg: &str, workloads: &[&str]| {
        let doc = roxmltree::Document::parse(svg).expect("the report is XML");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let texts: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect();
        for (i, server) in ["ferrokv", "redis-7"].iter().enumerate() {
            let color = ferrokv_benchmark::chart::server_color(i);
            // One bar per workload, one legend dot and one latency curve
            // per workload, all in the server's colour.
            assert_eq!(
                svg_count(&doc, "rect", "fill", &color),
                workloads.len(),
                "bars of {server}"
            );
            assert_eq!(svg_count(&doc, "circle", "fill", &color), 1);
            assert_eq!(
                svg_count(&doc, "polyline", "stroke", &color),
                workloads.len(),
                "curves of {server}"
            );
            assert!(texts.contains(server), "{server} in {texts:?}");
        }
        for w in workloads {
            assert!(texts.contains(w), "{w} in {texts:?}");
        }
        assert!(texts.contains(&"99%"), "{texts:?}");
    };
    check(
        &std::fs::read_to_string(&svg_path).unwrap(),
        &["SET P4", "GET P4"],
    );

    // The saved results draw the same picture; two documents add up.
    let out_path = dir.join("again.svg");
    let j = json_path.to_str().unwrap();
    let o = bench(&["report", "--input", j, "--out", out_path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(
        std::fs::read_to_string(&out_path).unwrap(),
        std::fs::read_to_string(&svg_path).unwrap()
    );
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    doc["config"]["pipeline"] = 16.into();
    let j16 = dir.join("p16.json");
    std::fs::write(&j16, doc.to_string()).unwrap();
    let o = bench(&[
        "report",
        "--input",
        j,
        "--input",
        j16.to_str().unwrap(),
        "--out",
        out_path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    check(
        &std::fs::read_to_string(&out_path).unwrap(),
        &["SET P4", "GET P4", "SET P16", "GET P16"],
    );
    // A missing input is a clean error.
    let o = bench(&["report", "--input", "/nonexistent.json", "--out", "x.svg"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("--input /nonexistent.json: "),
        "{}",
        err(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unreachable_target_is_a_clean_error() {
    let port = free_port();
    let o = bench(&["-p", &port.to_string(), "-t", "set", "-n", "10"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        err(&o).trim(),
        format!("Could not connect to Redis at 127.0.0.1:{port}: Connection refused")
    );
    let o = bench(&["-s", "/nonexistent/fkb.sock", "-t", "set"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).starts_with("Could not connect to Redis at /nonexistent/fkb.sock: "));
}

#[test]
fn error_replies_are_counted_and_shown() {
    let Some((r, sock)) = redis() else { return };
    cmd(r.port, &["SET", "astring", "x"]);
    let o = bench(&[
        "-p",
        &r.port.to_string(),
        "-n",
        "50",
        "-c",
        "2",
        "-q",
        "LPUSH",
        "astring",
        "v",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let s = out(&o);
    assert!(s.contains("50 error replies"), "{s}");
    assert!(s.contains("-WRONGTYPE"), "{s}");
    assert!(err(&o).contains("50 error replies"), "{}", err(&o));
    // Unix socket and AUTH: a wrong password is reported per connection.
    let o = bench(&["-s", sock.to_str().unwrap(), "-t", "get", "-n", "100", "-q"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(calls(r.port, "get"), 100);
    let o = bench(&[
        "-p",
        &r.port.to_string(),
        "-a",
        "wrong",
        "-t",
        "get",
        "-n",
        "10",
        "-c",
        "1",
        "-q",
    ]);
    assert!(!o.status.success());
    assert!(out(&o).contains("AUTH failed"), "{}", out(&o));
}

#[test]
fn ctrl_c_prints_partial_results() {
    let fk = ferrokv();
    let child = std::process::Command::new(bench_bin())
        .args([
            "-p",
            &fk.port.to_string(),
            "-t",
            "set",
            "--test-time",
            "60",
            "-c",
            "2",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let st = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", err(&o));
    let s = out(&o);
    assert!(s.contains("(interrupted)"), "{s}");
    assert!(s.contains("throughput summary"), "{s}");
    assert!(err(&o).contains("partial results"));
}

#[test]
fn workload_modes_against_ferrokv() {
    let fk = ferrokv();
    let p = fk.port.to_string();
    // --ratio: exact SET:GET mix, counted by ferrokv's INFO commandstats.
    let o = bench(&[
        "-p", &p, "--ratio", "1:4", "-n", "1000", "-c", "4", "-P", "5", "-q",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(calls(fk.port, "set"), 200);
    assert_eq!(calls(fk.port, "get"), 800);
    // --threads: connections spread over runtimes, counts still exact.
    let o = bench(&[
        "-p",
        &p,
        "-t",
        "incr",
        "-n",
        "999",
        "-c",
        "6",
        "--threads",
        "3",
        "-q",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(calls(fk.port, "incr"), 999);
    // --key-pattern S: every key of the range exactly once.
    cmd(fk.port, &["FLUSHALL"]);
    let o = bench(&[
        "-p",
        &p,
        "-t",
        "set",
        "-n",
        "100",
        "-c",
        "1",
        "-r",
        "100",
        "--key-pattern",
        "S",
        "-q",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(dbsize(fk.port), 100);
    // Zipf and Gaussian run against ferrokv too and stay inside the range.
    for pat in ["Z", "G"] {
        cmd(fk.port, &["FLUSHALL"]);
        let o = bench(&[
            "-p",
            &p,
            "-t",
            "set",
            "-n",
            "500",
            "-r",
            "1000",
            "--key-pattern",
            pat,
            "-q",
        ]);
        assert!(o.status.success(), "{}", err(&o));
        let n = dbsize(fk.port);
        assert!((1..=500).contains(&n), "{pat}: {n}");
    }
    // Wrong type: every reply an error, counted, shown, non-zero exit.
    cmd(fk.port, &["SET", "astring", "x"]);
    let o = bench(&[
        "-p", &p, "-n", "40", "-c", "2", "-q", "LPUSH", "astring", "v",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(out(&o).contains("40 error replies"), "{}", out(&o));
    assert!(
        out(&o).contains("-WRONGTYPE Operation against a key holding the wrong kind of value"),
        "{}",
        out(&o)
    );
    // --cluster against a server without cluster support: a clean error.
    let o = bench(&["-p", &p, "--cluster", "-t", "set", "-n", "10", "-q"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).starts_with(&format!("CLUSTER SLOTS on 127.0.0.1:{p} failed: ERR ")),
        "{}",
        err(&o)
    );
    // --verify: per-command rows, each command its own round trip.
    let before = dbsize(fk.port);
    let o = bench(&["-p", &p, "--verify", "-n", "300", "-c", "3", "-P", "4"]);
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    let s = out(&o);
    for op in ["SET", "GET", "DEL", "Totals"] {
        let row = s
            .lines()
            .find(|l| l.trim_start().starts_with(op))
            .unwrap_or_else(|| panic!("no {op} row: {s}"));
        let count: u64 = row.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert_eq!(count, if op == "Totals" { 900 } else { 300 }, "{row}");
    }
    assert_eq!(dbsize(fk.port), before, "verify keys all deleted");
}

/// Median and p90 (ms) of the first result of a --json-out-file run.
fn json_latency(args: &[&str], tag: &str) -> (f64, f64, f64) {
    let path = std::env::temp_dir().join(format!("fkb-rate-{}-{tag}.json", std::process::id()));
    let mut a = args.to_vec();
    a.extend(["--json-out-file", path.to_str().unwrap()]);
    let t0 = std::time::Instant::now();
    let o = bench(&a);
    let took = t0.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).ok();
    let l = &doc["results"][0]["latency_ms"];
    (l["p50"].as_f64().unwrap(), l["p90"].as_f64().unwrap(), took)
}

#[test]
fn rate_is_kept_and_stalls_are_charged_to_late_requests() {
    // A server that stalls 400 ms once, on its 20th PING.
    let stalling = || {
        let n = Arc::new(AtomicU64::new(0));
        fake_resp_server(Arc::new(move |args, _| {
            if args[0].eq_ignore_ascii_case(b"PING") && n.fetch_add(1, Ordering::SeqCst) == 19 {
                std::thread::sleep(std::time::Duration::from_millis(400));
            }
            b"+PONG\r\n".to_vec()
        }))
    };
    // Against ferrokv: 100 requests at 200/s take about half a second.
    let fk = ferrokv();
    let p = fk.port.to_string();
    let (_, _, took) = json_latency(
        &[
            "-p",
            &p,
            "-t",
            "ping_mbulk",
            "-n",
            "100",
            "-c",
            "4",
            "--rate",
            "200",
            "-q",
        ],
        "fk",
    );
    assert!((0.4..3.0).contains(&took), "took {took}");
    // With --rate 100 on one connection, the requests due during the stall
    // (about 40 of 100) are charged from their intended send time.
    let port = stalling().to_string();
    let (p50, p90, took) = json_latency(
        &[
            "-p",
            &port,
            "-t",
            "ping_mbulk",
            "-n",
            "100",
            "-c",
            "1",
            "--rate",
            "100",
            "-q",
        ],
        "rate",
    );
    assert!(p90 >= 200.0, "p90 {p90} ms: stall not charged");
    assert!(p50 < 200.0, "p50 {p50}");
    assert!((0.9..4.0).contains(&took), "took {took}");
    // Without --rate only the stalled request itself is slow.
    let port = stalling().to_string();
    let (_, p90, _) = json_latency(
        &[
            "-p",
            &port,
            "-t",
            "ping_mbulk",
            "-n",
            "100",
            "-c",
            "1",
            "-q",
        ],
        "closed",
    );
    assert!(p90 < 100.0, "p90 {p90} ms without --rate");
}

#[test]
fn progress_bar_shows_live_rate() {
    let fk = ferrokv();
    let p = fk.port.to_string();
    let o = bench(&[
        "-p",
        &p,
        "-t",
        "set",
        "--test-time",
        "1.5",
        "-c",
        "2",
        "--progress",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let e = err(&o);
    assert!(
        e.contains("SET") && e.contains(" requests ") && e.contains(" ops/s"),
        "{e}"
    );
    let o = bench(&[
        "-p",
        &p,
        "-t",
        "get",
        "-n",
        "20000",
        "-c",
        "2",
        "--progress",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(err(&o).contains("/20000"), "{}", err(&o));
    // Without --progress and without a terminal, stderr stays clean.
    let o = bench(&["-p", &p, "-t", "get", "-n", "200", "-c", "2"]);
    assert!(err(&o).is_empty(), "{}", err(&o));
}
