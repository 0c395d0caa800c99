//! The Prometheus endpoint (`metrics-port`, `metrics-bind`): `GET /metrics`
//! over HTTP/1.1 in the Prometheus text exposition format (0.0.4), encoded
//! by the `prometheus-client` crate.
//!
//! Metric names, types and labels are those of oliver006/redis_exporter
//! (`redis_commands_total{cmd="get"}`, `redis_db_keys{db="db0"}`, ...), so
//! dashboards and alerts written for it work unchanged; `ferrokv_*`
//! metrics are ferrokv's own (per-thread CPU time, per-command latency
//! histograms). Every value is read at scrape time from the counters INFO
//! reads (cmd/server/info.rs): nothing is added to the command path.
//!
//! The HTTP side is a small HTTP/1.1 responder on tokio: requests are
//! parsed by `httparse`, bounded to [`MAX_REQUEST`] bytes; a malformed or
//! oversized request gets `400 Bad Request` and the connection is closed.
//! `GET` and `HEAD` of `/metrics` answer 200, any other path 404, any
//! other method 405. Connections are kept alive (HTTP/1.1) unless the
//! client asks otherwise.

use crate::cmd::server::info::{rusage, uname};
use crate::server::Server;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The largest request accepted (request line and headers), bytes.
pub const MAX_REQUEST: usize = 8192;
/// Most headers a request may have.
const MAX_HEADERS: usize = 64;
/// Most connections served at once; more are closed at accept.
const MAX_CONNECTIONS: usize = 64;
/// How long a connection may take to send a request, or stay idle
/// between two.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a refused connection's further input is read and dropped.
const LINGER: Duration = Duration::from_millis(500);

/// The `Content-Type` of a scrape (Prometheus text format 0.0.4).
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Starts the endpoint when `metrics-port` is set (on `metrics-bind`), on
/// the current runtime. Errors: the address is invalid or cannot be bound
/// (the message names it).
pub fn listen(server: &Arc<Server>, backlog: u32) -> std::io::Result<()> {
    let (bind, port) = {
        let c = server.config.read();
        (
            c.get("metrics-bind").to_string(),
            c.get_i64("metrics-port") as u16,
        )
    };
    if port == 0 {
        return Ok(());
    }
    // bind_tcp's error already names the address, port and reason.
    let l = super::listener::bind_tcp(&bind, port, backlog)?.ok_or_else(|| {
        std::io::Error::other(format!(
            "Could not create metrics listening socket {bind}:{port}"
        ))
    })?;
    tracing::info!("Prometheus metrics on http://{bind}:{port}/metrics");
    tokio::spawn(accept(server.clone(), l));
    Ok(())
}

async fn accept(server: Arc<Server>, l: TcpListener) {
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        let sock = match l.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                server.net.accept_log.failed(&e);
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        if open.fetch_add(1, Ordering::Relaxed) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::Relaxed);
            continue;
        }
        let (s, open) = (server.clone(), open.clone());
        tokio::spawn(async move {
            let _ = serve(&s, sock).await;
            open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// What to answer to one parsed request.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    head: bool,
    status: u16,
    keep_alive: bool,
}

/// Parses one request at the start of `buf`: Ok(Some((request, its
/// length))) when complete, Ok(None) when more bytes are needed, Err for
/// a malformed request.
fn parse(buf: &[u8]) -> Result<Option<(Request, usize)>, ()> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(()),
    };
    let (Some(method), Some(path), Some(version)) = (req.method, req.path, req.version) else {
        return Err(());
    };
    let header = |name: &str| {
        req.headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
            .collect::<Vec<_>>()
    };
    let conn = header("connection").join(",");
    let mut keep_alive = if version == 1 {
        !conn.split(',').any(|t| t.trim() == "close")
    } else {
        conn.split(',').any(|t| t.trim() == "keep-alive")
    };
    // A request body is not read: the connection closes after the answer.
    let body = !header("transfer-encoding").is_empty()
        || header("content-length").iter().any(|v| v != "0");
    if body {
        keep_alive = false;
    }
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let status = match (method, path) {
        ("GET" | "HEAD", "/metrics") => 200,
        ("GET" | "HEAD", _) => 404,
        _ => 405,
    };
    Ok(Some((
        Request {
            head: method == "HEAD",
            status,
            keep_alive,
        },
        len,
    )))
}

fn response(status: u16, body: &[u8], head: bool, keep_alive: bool, content_type: &str) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Error",
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n",
        body.len()
    );
    if status == 405 {
        out.push_str("Allow: GET, HEAD\r\n");
    }
    out.push_str(if keep_alive {
        "Connection: keep-alive\r\n\r\n"
    } else {
        "Connection: close\r\n\r\n"
    });
    let mut out = out.into_bytes();
    if !head {
        out.extend_from_slice(body);
    }
    out
}

async fn serve(server: &Arc<Server>, mut sock: TcpStream) -> std::io::Result<()> {
    let _ = sock.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let text = "text/plain; charset=utf-8";
    loop {
        // Read until one request is complete.
        let (req, len) = loop {
            match parse(&buf) {
                Ok(Some(r)) => break r,
                Ok(None) if buf.len() < MAX_REQUEST => {}
                _ => {
                    let out = response(400, b"Bad Request\n", false, false, text);
                    sock.write_all(&out).await?;
                    sock.shutdown().await?;
                    // Read (and drop) what the client still sends for a
                    // moment, so closing with unread input does not reset
                    // the connection before the answer is read.
                    let mut sink = [0u8; 4096];
                    let mut left: usize = 64 * 1024;
                    while left > 0 {
                        let r = tokio::time::timeout(LINGER, sock.read(&mut sink)).await;
                        match r {
                            Ok(Ok(n)) if n > 0 => left = left.saturating_sub(n),
                            _ => break,
                        }
                    }
                    return Ok(());
                }
            }
            let mut chunk = [0u8; 2048];
            let room = (MAX_REQUEST + 1 - buf.len()).min(chunk.len());
            let n = match tokio::time::timeout(READ_TIMEOUT, sock.read(&mut chunk[..room])).await {
                Ok(r) => r?,
                Err(_) => return Ok(()),
            };
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        buf.drain(..len);
        let out = match req.status {
            200 => {
                let body = render(server);
                response(200, body.as_bytes(), req.head, req.keep_alive, CONTENT_TYPE)
            }
            404 => response(404, b"Not Found\n", req.head, req.keep_alive, text),
            s => response(s, b"Method Not Allowed\n", req.head, req.keep_alive, text),
        };
        sock.write_all(&out).await?;
        if !req.keep_alive {
            return sock.shutdown().await;
        }
    }
}

/// One command's counters (INFO commandstats) and latency histogram.
#[derive(Debug)]
struct CommandSample {
    name: &'static str,
    calls: u64,
    usec: u64,
    latency: Option<[u64; crate::stats::LATENCY_BUCKETS]>,
}

/// A sample's value: integers are printed without a fraction.
#[derive(Debug, Clone, Copy)]
enum Value {
    Int(u64),
    Float(f64),
}

use Value::{Float, Int};

/// The values of one scrape, read from the server at once.
#[derive(Debug, Default)]
struct Snapshot {
    counters: Vec<(&'static str, &'static str, Value)>,
    gauges: Vec<(&'static str, &'static str, Value)>,
    /// (db label, keys, keys with a TTL), every database.
    dbs: Vec<(String, u64, u64)>,
    commands: Vec<CommandSample>,
    /// CPU seconds of each I/O worker thread, by thread name.
    threads: Vec<(String, f64)>,
    /// redis_instance_info labels.
    info: Vec<(&'static str, String)>,
}

impl Snapshot {
    fn take(server: &Arc<Server>) -> Snapshot {
        let st = &server.stats;
        let t = st.totals();
        let ks = &server.keyspace;
        let mut s = Snapshot::default();
        let expired = ks
            .expired_keys()
            .saturating_sub(st.expired_base.load(Ordering::Relaxed));
        let (cpu_sys, cpu_user) = rusage(libc::RUSAGE_SELF);
        let counters = [
            (
                "redis_connections_received",
                "Total number of connections received (INFO total_connections_received)",
                Int(st.connections.load(Ordering::Relaxed)),
            ),
            (
                "redis_commands_processed",
                "Total number of commands processed (INFO total_commands_processed)",
                Int(t.commands),
            ),
            (
                "redis_rejected_connections",
                "Connections rejected because of maxclients (INFO rejected_connections)",
                Int(st.rejected_connections.load(Ordering::Relaxed)),
            ),
            (
                "redis_net_input_bytes",
                "Total bytes read from clients (INFO total_net_input_bytes)",
                Int(t.net_in),
            ),
            (
                "redis_net_output_bytes",
                "Total bytes written to clients (INFO total_net_output_bytes)",
                Int(t.net_out),
            ),
            (
                "redis_expired_keys",
                "Keys deleted because their TTL passed (INFO expired_keys)",
                Int(expired),
            ),
            (
                "redis_evicted_keys",
                "Keys evicted because of maxmemory (INFO evicted_keys)",
                Int(server.evict.evicted_keys()),
            ),
            (
                "redis_keyspace_hits",
                "Successful key lookups (INFO keyspace_hits)",
                Int(t.hits),
            ),
            (
                "redis_keyspace_misses",
                "Failed key lookups (INFO keyspace_misses)",
                Int(t.misses),
            ),
            (
                "redis_cpu_sys_seconds",
                "System CPU used by the server, seconds (INFO used_cpu_sys)",
                Float(cpu_sys),
            ),
            (
                "redis_cpu_user_seconds",
                "User CPU used by the server, seconds (INFO used_cpu_user)",
                Float(cpu_user),
            ),
        ];
        s.counters.extend(counters);

        let clients = server.clients.all();
        let blocked = clients
            .iter()
            .filter(|c| c.blocked.lock().is_some())
            .count();
        let repl = crate::cmd::repl::info_fields(server, server.clock.now_ms());
        let field = |fields: &[(String, String)], k: &str| {
            fields
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let num = |v: String| Int(v.parse::<u64>().unwrap_or(0));
        let aof: Vec<(String, String)> = server
            .aof
            .info_fields()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let gauges = [
            (
                "redis_up",
                "Whether the server answers (always 1 here)",
                Int(1),
            ),
            (
                "redis_uptime_in_seconds",
                "Seconds since the server started (INFO uptime_in_seconds)",
                Int(server.uptime_secs()),
            ),
            (
                "redis_connected_clients",
                "Connected clients (INFO connected_clients)",
                Int(clients.len() as u64),
            ),
            (
                "redis_blocked_clients",
                "Clients blocked in a blocking command (INFO blocked_clients)",
                Int(blocked as u64),
            ),
            (
                "redis_memory_used_bytes",
                "Bytes allocated by the server (INFO used_memory)",
                Int(crate::evict::used_memory()),
            ),
            (
                "redis_memory_used_rss_bytes",
                "Resident set size of the process (INFO used_memory_rss)",
                Int(crate::memory::rss_bytes()),
            ),
            (
                "redis_memory_max_bytes",
                "The maxmemory limit, 0 = none (INFO maxmemory)",
                Int(server.evict.maxmemory()),
            ),
            (
                "redis_connected_slaves",
                "Connected replicas (INFO connected_slaves)",
                num(field(&repl, "connected_slaves")),
            ),
            (
                "redis_master_repl_offset",
                "The replication offset (INFO master_repl_offset)",
                num(field(&repl, "master_repl_offset")),
            ),
            (
                "redis_rdb_changes_since_last_save",
                "Changes since the last save (INFO rdb_changes_since_last_save)",
                Int(crate::persist::rdb::dirty(&**server)),
            ),
            (
                "redis_rdb_last_save_timestamp_seconds",
                "Unix time of the last successful save (INFO rdb_last_save_time)",
                Int(server.lastsave.load(Ordering::Relaxed)),
            ),
            (
                "redis_aof_enabled",
                "Whether the AOF is on (INFO aof_enabled)",
                num(field(&aof, "aof_enabled")),
            ),
        ];
        s.gauges.extend(gauges);

        for i in 0..ks.db_count() {
            let db = ks.db(i);
            s.dbs
                .push((format!("db{i}"), db.len() as u64, db.volatile_len() as u64));
        }
        let table = crate::cmd::table();
        for (id, c) in table.all.iter().enumerate() {
            let (calls, usec, _, _) = st.command(id);
            if calls == 0 {
                continue;
            }
            s.commands.push(CommandSample {
                name: c.name,
                calls,
                usec,
                latency: st.latency(id),
            });
        }
        if let Some(w) = server.net.workers.get() {
            for (i, cpu) in w.cpu_seconds().into_iter().enumerate() {
                if let Some(cpu) = cpu {
                    s.threads.push((format!("ferrokv-io-{i}"), cpu));
                }
            }
        }
        let policy = server.evict.policy().name().to_string();
        let port = server.bound_port.load(Ordering::Relaxed).to_string();
        s.info = vec![
            ("role", field(&repl, "role")),
            ("redis_version", crate::REDIS_VERSION.to_string()),
            ("redis_build_id", "0".into()),
            (
                "redis_mode",
                if server.cluster.enabled {
                    "cluster"
                } else {
                    "standalone"
                }
                .into(),
            ),
            ("os", {
                let (sys, rel, mach) = uname();
                format!("{sys} {rel} {mach}")
            }),
            ("maxmemory_policy", policy),
            ("tcp_port", port),
            ("run_id", server.run_id.to_string()),
            ("process_id", std::process::id().to_string()),
        ];
        s
    }
}

impl Collector for Snapshot {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for (name, help, v) in &self.counters {
            let m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
            match *v {
                Int(n) => ConstCounter::new(n).encode(m)?,
                Float(x) => ConstCounter::new(x).encode(m)?,
            }
        }
        for (name, help, v) in &self.gauges {
            let m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
            match *v {
                Int(n) => ConstGauge::new(n).encode(m)?,
                Float(x) => ConstGauge::new(x).encode(m)?,
            }
        }
        {
            let mut m = enc.encode_descriptor(
                "redis_instance_info",
                "Information about the server",
                None,
                MetricType::Gauge,
            )?;
            let labels: Vec<(&str, &str)> =
                self.info.iter().map(|(k, v)| (*k, v.as_str())).collect();
            ConstGauge::new(1i64).encode(m.encode_family(&labels)?)?;
        }
        {
            let mut m = enc.encode_descriptor(
                "redis_db_keys",
                "Keys by database (INFO keyspace keys)",
                None,
                MetricType::Gauge,
            )?;
            for (db, keys, _) in &self.dbs {
                ConstGauge::new(*keys).encode(m.encode_family(&[("db", db.as_str())])?)?;
            }
        }
        {
            let mut m = enc.encode_descriptor(
                "redis_db_keys_expiring",
                "Keys with a TTL by database (INFO keyspace expires)",
                None,
                MetricType::Gauge,
            )?;
            for (db, _, expiring) in &self.dbs {
                ConstGauge::new(*expiring).encode(m.encode_family(&[("db", db.as_str())])?)?;
            }
        }
        {
            let mut m = enc.encode_descriptor(
                "redis_commands",
                "Calls per command (INFO commandstats calls)",
                None,
                MetricType::Counter,
            )?;
            for c in &self.commands {
                ConstCounter::new(c.calls).encode(m.encode_family(&[("cmd", c.name)])?)?;
            }
        }
        {
            let mut m = enc.encode_descriptor(
                "redis_commands_duration_seconds",
                "Seconds spent per command (INFO commandstats usec)",
                None,
                MetricType::Counter,
            )?;
            for c in &self.commands {
                ConstCounter::new(c.usec as f64 / 1e6)
                    .encode(m.encode_family(&[("cmd", c.name)])?)?;
            }
        }
        {
            let mut m = enc.encode_descriptor(
                "ferrokv_command_duration_seconds",
                "Latency of each command (LATENCY HISTOGRAM's buckets); the sum is \
                 commandstats' time of all calls",
                None,
                MetricType::Histogram,
            )?;
            for c in &self.commands {
                let Some(h) = &c.latency else { continue };
                let buckets: Vec<(f64, u64)> = crate::stats::LATENCY_REPORT_US
                    .iter()
                    .map(|&us| us as f64 / 1e6)
                    .chain(std::iter::once(f64::INFINITY))
                    .zip(h.iter().copied())
                    .collect();
                let count = h.iter().sum();
                let labels = [("cmd", c.name)];
                let mut fam = m.encode_family(&labels)?;
                fam.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                    c.usec as f64 / 1e6,
                    count,
                    &buckets,
                    None,
                )?;
            }
        }
        if !self.threads.is_empty() {
            let mut m = enc.encode_descriptor(
                "ferrokv_io_thread_busy_seconds",
                "CPU time (user + system) of each I/O worker thread, seconds, \
                 including its idle polling (io-idle-poll-us)",
                None,
                MetricType::Counter,
            )?;
            for (name, cpu) in &self.threads {
                ConstCounter::new(*cpu).encode(m.encode_family(&[("thread", name.as_str())])?)?;
            }
        }
        Ok(())
    }
}

/// The body of a scrape: every metric, in the Prometheus text format.
pub fn render(server: &Arc<Server>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Snapshot::take(server)));
    let mut out = String::with_capacity(16 * 1024);
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &registry);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(s: &str) -> Result<Option<(Request, usize)>, ()> {
        parse(s.as_bytes())
    }

    #[test]
    fn parses_requests() {
        let (r, n) = req("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(n, 34);
        assert_eq!(
            r,
            Request {
                head: false,
                status: 200,
                keep_alive: true
            }
        );
        let (r, _) = req("HEAD /metrics?x=1 HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(r.head && !r.keep_alive && r.status == 200);
        let (r, _) = req("GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(r.status == 404 && !r.keep_alive);
        let (r, _) = req("POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc")
            .unwrap()
            .unwrap();
        assert!(r.status == 405 && !r.keep_alive);
        assert!(req("GET /metrics HTTP/1.1\r\nHost").unwrap().is_none());
        assert!(req("GET /metrics HTTP/1.1\r\n\0\r\n\r\n").is_err());
        assert!(parse(b"\x16\x03\x01\x02\0\x01\0\x01\xfc\x03\x03").is_err());
        let many = format!(
            "GET /metrics HTTP/1.1\r\n{}\r\n",
            "a: b\r\n".repeat(MAX_HEADERS + 1)
        );
        assert!(req(&many).is_err());
    }

    #[test]
    fn responses_carry_length_and_connection() {
        let r =
            String::from_utf8(response(404, b"Not Found\n", false, true, "text/plain")).unwrap();
        assert!(r.starts_with("HTTP/1.1 404 Not Found\r\n"));
        assert!(r.contains("Content-Length: 10\r\n"));
        assert!(r.contains("Connection: keep-alive\r\n\r\nNot Found\n"));
        let r = String::from_utf8(response(200, b"abc", true, false, CONTENT_TYPE)).unwrap();
        assert!(r.ends_with("Connection: close\r\n\r\n"));
        assert!(r.contains("Content-Length: 3\r\n"));
    }
}
