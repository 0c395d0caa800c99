//! The Prometheus endpoint (`metrics-port`): scraped every 100 ms while a
//! client runs SET/GET, each scrape parsed by the Prometheus Python
//! client's text parser (tests/python/prom_parse.py); counters never
//! decrease, the last scrape agrees with INFO commandstats and DBSIZE;
//! other paths, methods and malformed requests; off by default.

mod common;

use redis::Commands;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One HTTP exchange on a new connection: `request` is sent as is, the
/// answer read until the server closes. Returns (status, head, body).
fn http(port: u16, request: &[u8]) -> (u16, String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect metrics port");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).expect("read until close");
    let text = String::from_utf8(out).expect("utf-8 answer");
    let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status code");
    (status, head.to_string(), body.to_string())
}

fn scrape(port: u16) -> String {
    let (status, head, body) = http(
        port,
        b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200, "{head}");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .and_then(|v| v.parse().ok())
        .expect("Content-Length");
    assert_eq!(len, body.len());
    body
}

/// Ports the process `pid` listens on over TCP (from /proc).
fn listening_ports(pid: u32) -> BTreeSet<u16> {
    let mut inodes = BTreeSet::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap() {
        let Ok(link) = std::fs::read_link(e.unwrap().path()) else {
            continue;
        };
        let l = link.to_string_lossy().into_owned();
        if let Some(n) = l.strip_prefix("socket:[") {
            inodes.insert(n.trim_end_matches(']').to_string());
        }
    }
    let mut ports = BTreeSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local_address, st (0A = LISTEN), inode.
            if f.len() > 9 && f[3] == "0A" && inodes.contains(f[9]) {
                let port = f[1].rsplit(':').next().unwrap();
                ports.insert(u16::from_str_radix(port, 16).unwrap());
            }
        }
    }
    ports
}

#[test]
fn endpoint_is_off_by_default() {
    let srv = common::Server::start(&[]);
    let mut c = srv.client();
    let get = |c: &mut redis::Connection, name: &str| -> Vec<String> {
        redis::cmd("CONFIG").arg("GET").arg(name).query(c).unwrap()
    };
    assert_eq!(get(&mut c, "metrics-port"), ["metrics-port", "0"]);
    assert_eq!(get(&mut c, "metrics-bind"), ["metrics-bind", "127.0.0.1"]);
    for (name, value) in [("metrics-port", "9121"), ("metrics-bind", "0.0.0.0")] {
        let e = redis::cmd("CONFIG")
            .arg("SET")
            .arg(name)
            .arg(value)
            .query::<()>(&mut c)
            .unwrap_err();
        assert!(e.to_string().contains("can't set immutable config"), "{e}");
    }
    let ports = listening_ports(srv.pid());
    assert_eq!(ports, BTreeSet::from([srv.port]), "only the RESP port");
}

/// (family, type, sample name, labels, value) of every sample, by scrape.
type Samples = Vec<Vec<(String, String, String, String, f64)>>;

/// Parses the scrapes with the Prometheus Python client; None (skipped)
/// when it is not installed.
fn parse_all(bodies: &[String]) -> Option<Samples> {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for (i, b) in bodies.iter().enumerate() {
        let p = dir.path().join(format!("scrape{i}.txt"));
        std::fs::write(&p, b).unwrap();
        paths.push(p.display().to_string());
    }
    let text = common::run_python("prom_parse.py", &paths)?;
    let mut out: Samples = vec![Vec::new(); bodies.len()];
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 6, "{line}");
        let i: usize = f[0].parse().unwrap();
        let v: f64 = f[5].parse().unwrap_or_else(|_| panic!("value in {line}"));
        out[i].push((f[1].into(), f[2].into(), f[3].into(), f[4].into(), v));
    }
    Some(out)
}

#[test]
fn scraped_under_load_with_a_prometheus_parser() {
    let mport = common::free_port();
    let srv = common::Server::start(&["--metrics-port", &mport.to_string()]);
    assert!(listening_ports(srv.pid()).contains(&mport));
    // At least N SET/GET rounds over N keys (every tenth with a TTL),
    // going on until 20 scrapes (2 s) have been taken.
    const N: usize = 3000;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut load = srv.client();
    let loader = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut i = 0;
            while i < N || !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let k = format!("key:{}", i % N);
                if i % 10 == 0 {
                    let _: () = load.set_ex(&k, i, 1000).unwrap();
                } else {
                    let _: () = load.set(&k, i).unwrap();
                }
                let v: usize = load.get(&k).unwrap();
                assert_eq!(v, i);
                let _: Option<String> = load.get(format!("missing:{i}")).unwrap();
                i += 1;
            }
            i
        })
    };
    let mut bodies = Vec::new();
    while bodies.len() < 20 || !loader.is_finished() {
        bodies.push(scrape(mport));
        std::thread::sleep(Duration::from_millis(100));
        if bodies.len() >= 20 {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let rounds = loader.join().unwrap();
    bodies.push(scrape(mport));
    let mut c = srv.client();
    let dbsize: u64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut c)
        .unwrap();
    let set_calls: f64 = info
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_set:calls="))
        .and_then(|v| v.split(',').next())
        .and_then(|v| v.parse().ok())
        .expect("cmdstat_set");
    assert_eq!(set_calls, rounds as f64 - (rounds as f64 / 10.0).ceil());
    assert_eq!(dbsize, N as u64);
    eprintln!("{} scrapes during {rounds} rounds", bodies.len());
    assert!(bodies.len() >= 2);

    let Some(scrapes) = parse_all(&bodies) else {
        return;
    };
    // Types as redis_exporter declares them (the Python parser names a
    // counter family without `_total`).
    let kinds: BTreeMap<&str, &str> = scrapes
        .last()
        .unwrap()
        .iter()
        .map(|(fam, kind, ..)| (fam.as_str(), kind.as_str()))
        .collect();
    for (fam, kind) in [
        ("redis_up", "gauge"),
        ("redis_uptime_in_seconds", "gauge"),
        ("redis_connected_clients", "gauge"),
        ("redis_blocked_clients", "gauge"),
        ("redis_commands", "counter"),
        ("redis_commands_duration_seconds", "counter"),
        ("redis_keyspace_hits", "counter"),
        ("redis_keyspace_misses", "counter"),
        ("redis_memory_used_bytes", "gauge"),
        ("redis_memory_max_bytes", "gauge"),
        ("redis_db_keys", "gauge"),
        ("redis_db_keys_expiring", "gauge"),
        ("redis_expired_keys", "counter"),
        ("redis_evicted_keys", "counter"),
        ("redis_net_input_bytes", "counter"),
        ("redis_net_output_bytes", "counter"),
        ("redis_connections_received", "counter"),
        ("redis_rejected_connections", "counter"),
        ("redis_connected_slaves", "gauge"),
        ("redis_master_repl_offset", "gauge"),
        ("redis_rdb_changes_since_last_save", "gauge"),
        ("redis_rdb_last_save_timestamp_seconds", "gauge"),
        ("redis_aof_enabled", "gauge"),
        ("redis_instance_info", "gauge"),
        ("ferrokv_io_thread_busy_seconds", "counter"),
        ("ferrokv_command_duration_seconds", "histogram"),
    ] {
        assert_eq!(kinds.get(fam).copied(), Some(kind), "{fam}");
    }
    // Counters (and histogram series) never decrease between scrapes.
    let mut last: BTreeMap<(String, String), f64> = BTreeMap::new();
    for (i, samples) in scrapes.iter().enumerate() {
        assert!(!samples.is_empty(), "scrape {i} parsed to nothing");
        for (_, kind, name, labels, v) in samples {
            if kind != "counter" && kind != "histogram" {
                continue;
            }
            let key = (name.clone(), labels.clone());
            if let Some(prev) = last.get(&key) {
                assert!(
                    v >= prev,
                    "{name}{{{labels}}} went from {prev} to {v} at scrape {i}"
                );
            }
            last.insert(key, *v);
        }
    }
    let end = scrapes.last().unwrap();
    let value = |name: &str, labels: &str| {
        end.iter()
            .find(|s| s.2 == name && s.3 == labels)
            .map(|s| s.4)
            .unwrap_or_else(|| panic!("{name}{{{labels}}} missing"))
    };
    assert_eq!(value("redis_commands_total", "cmd=set"), set_calls);
    assert_eq!(
        value("redis_commands_total", "cmd=get"),
        (2 * rounds) as f64
    );
    assert_eq!(value("redis_db_keys", "db=db0"), dbsize as f64);
    assert_eq!(value("redis_db_keys_expiring", "db=db0"), (N / 10) as f64);
    assert_eq!(value("redis_db_keys", "db=db15"), 0.0);
    assert_eq!(value("redis_keyspace_hits_total", ""), rounds as f64);
    assert_eq!(value("redis_keyspace_misses_total", ""), rounds as f64);
    assert_eq!(value("redis_up", ""), 1.0);
    assert!(value("redis_commands_duration_seconds_total", "cmd=get") > 0.0);
    assert!(value("redis_net_input_bytes_total", "") > 0.0);
    // The latency histogram of SET: every call in a bucket.
    assert_eq!(
        value("ferrokv_command_duration_seconds_count", "cmd=set"),
        set_calls
    );
    assert_eq!(
        value("ferrokv_command_duration_seconds_bucket", "cmd=set,le=+Inf"),
        set_calls
    );
    assert!(end
        .iter()
        .any(|s| s.2 == "ferrokv_io_thread_busy_seconds_total" && s.3.starts_with("thread=")));
}

#[test]
fn other_paths_methods_and_bad_requests() {
    let mport = common::free_port();
    let srv = common::Server::start(&["--metrics-port", &mport.to_string()]);
    let (status, _, body) = http(mport, b"GET /other HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 404, "{body}");
    let (status, _, _) = http(mport, b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(status, 404);
    let (status, head, _) = http(
        mport,
        b"POST /metrics HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi",
    );
    assert_eq!(status, 405);
    assert!(head.contains("Allow: GET, HEAD"), "{head}");
    let (status, head, body) = http(mport, b"HEAD /metrics HTTP/1.0\r\n\r\n");
    assert_eq!(status, 200);
    assert!(
        body.is_empty() && head.contains("Content-Length: "),
        "{head}"
    );
    // Malformed: 400 and closed (http() reads until the close).
    for bad in [
        &b"GARBAGE\r\n\r\n"[..],
        b"GET /metrics HTTP/1.1\r\nBad Header\r\n\r\n",
        b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
    ] {
        let (status, _, _) = http(mport, bad);
        assert_eq!(status, 400, "{}", String::from_utf8_lossy(bad));
    }
    // A request larger than the bound: 400 without waiting for its end.
    let mut big = b"GET /metrics HTTP/1.1\r\n".to_vec();
    while big.len() < 20_000 {
        big.extend_from_slice(b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    }
    let (status, _, _) = http(mport, &big);
    assert_eq!(status, 400);
    // Keep-alive: two requests on one connection.
    let mut s = TcpStream::connect(("127.0.0.1", mport)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\n\r\nGET /nope HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut all = String::new();
    s.read_to_string(&mut all).unwrap();
    assert!(all.starts_with("HTTP/1.1 200 OK\r\n"), "{all}");
    assert!(all.contains("HTTP/1.1 404 Not Found\r\n"));
    // The RESP port still answers.
    let mut c = srv.client();
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
}
