//! Soak test: 1,000 clients send a random mix of valid, invalid, garbage and
//! oversized traffic to one live server for a bounded time (20 s by default;
//! `FERROKV_SOAK_SECS` for longer runs, `FERROKV_SOAK_CLIENTS` to change the
//! number of clients, `FERROKV_SEED` to replay the random choices).
//!
//! Traffic per session (a client reconnects after each): commands of every
//! family, pipelined; unknown commands, wrong arity, wrong type; protocol
//! garbage (bad bulk lengths, huge declared multibulk counts, unterminated
//! lines, binary noise); requests over proto-max-bulk-len (1mb) and over
//! client-query-buffer-limit (4mb); clients that never read their replies
//! (closed by client-output-buffer-limit normal 4mb 2mb 1); clients that
//! disconnect mid-request; MULTI/EXEC/DISCARD with WATCH;
//! SUBSCRIBE/PSUBSCRIBE/PUBLISH; BLPOP/BRPOP/BZPOPMIN with short timeouts.
//!
//! Checked: the server answers PING afterwards; "sentinel" keys of every
//! type in database 9 (which no soak client selects) and keys with a prefix
//! no client generates in database 0 are byte-identical (DUMP and PTTL)
//! before and after; resident memory (VmRSS, sampled every 100 ms) stays
//! below 512 MB; connected_clients returns to 1 after the clients leave;
//! the server's stderr holds no panic.

mod common;
use common::*;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Resident memory bound for the server, KiB.
const RSS_BOUND_KIB: u64 = 512 * 1024;
/// Database holding the sentinel keys; soak clients select only 0..=7.
const SENTINEL_DB: &str = "9";

/// Counters shared by all client threads.
#[derive(Default)]
struct Stats {
    sessions: AtomicU64,
    requests: AtomicU64,
    replies: AtomicU64,
    error_replies: AtomicU64,
    /// Sessions the server ended (EOF or reset where a reply was expected).
    server_closed: AtomicU64,
    /// Sessions the client abandoned on purpose (mid-request, garbage).
    client_dropped: AtomicU64,
    connect_failures: AtomicU64,
    /// Sessions the server should have closed (protocol error, limit) but
    /// left open past the read timeout.
    not_closed: AtomicU64,
    bytes_sent: AtomicU64,
    /// Sessions and server-closed sessions per kind (see [`KINDS`]).
    by_kind: [(AtomicU64, AtomicU64); 9],
}

/// Session kinds, in the order of `Stats::by_kind`.
const KINDS: [&str; 9] = [
    "commands",
    "multi",
    "pubsub",
    "blocking",
    "garbage",
    "mid-request",
    "oversized",
    "never-read",
    "other",
];

/// One parsed reply, reduced to what the soak needs.
enum Reply {
    Error,
    Other,
}

/// Reads one RESP2/RESP3 reply. Errors: EOF, reset, timeout, bad framing.
fn read_reply(r: &mut impl BufRead) -> std::io::Result<Reply> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)?;
    if line.len() < 3 || !line.ends_with(b"\r\n") {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let body = &line[1..line.len() - 2];
    let num = || -> std::io::Result<i64> {
        std::str::from_utf8(body)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::ErrorKind::InvalidData.into())
    };
    match line[0] {
        b'-' => Ok(Reply::Error),
        b'+' | b':' | b'_' | b'#' | b',' | b'(' => Ok(Reply::Other),
        b'$' | b'=' | b'!' => {
            let n = num()?;
            if n >= 0 {
                let mut skip = vec![0u8; n as usize + 2];
                r.read_exact(&mut skip)?;
            }
            Ok(if line[0] == b'!' {
                Reply::Error
            } else {
                Reply::Other
            })
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let mut n = num()?;
            if matches!(line[0], b'%' | b'|') {
                n *= 2;
            }
            for _ in 0..n.max(0) {
                read_reply(r)?;
            }
            if line[0] == b'|' {
                return read_reply(r);
            }
            Ok(Reply::Other)
        }
        _ => Err(std::io::ErrorKind::InvalidData.into()),
    }
}

/// A client's connection.
struct Conn {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

/// A session's result: Ok, or the server closed the connection.
type Session = Result<(), ()>;

fn connect(port: u16) -> Option<Conn> {
    let s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(10))).ok()?;
    let _ = s.set_nodelay(true);
    let r = BufReader::with_capacity(16 * 1024, s.try_clone().ok()?);
    Some(Conn { w: s, r })
}

/// The per-thread traffic generator.
struct Client<'a> {
    id: usize,
    port: u16,
    rng: Rng,
    st: &'a Stats,
}

fn enc(args: &[Vec<u8>]) -> Vec<u8> {
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    encode(&refs)
}

fn words(s: &str) -> Vec<Vec<u8>> {
    s.split_whitespace()
        .map(|w| w.as_bytes().to_vec())
        .collect()
}

impl Client<'_> {
    fn key(&mut self) -> String {
        // Shared keys (contention between clients) and private ones.
        if self.rng.below(2) == 0 {
            format!("soak:{}", self.rng.below(64))
        } else {
            format!("soak:c{}:{}", self.id, self.rng.below(8))
        }
    }

    fn val(&mut self) -> String {
        match self.rng.below(4) {
            0 => self.rng.below(1000).to_string(),
            1 => "x".repeat(self.rng.below(200)),
            2 => format!("{}.5", self.rng.below(100)),
            _ => format!("v{}", self.rng.next()),
        }
    }

    /// A valid command of a random family (some fail with WRONGTYPE on
    /// shared keys, which is fine).
    fn valid(&mut self) -> Vec<Vec<u8>> {
        let k = self.key();
        let k2 = self.key();
        let v = self.val();
        let n = self.rng.below(20);
        let line = match self.rng.below(40) {
            0 => format!("SET {k} {v}"),
            1 => format!("GET {k}"),
            2 => format!("INCR {k}"),
            3 => format!("APPEND {k} {v}"),
            4 => format!("SET {k} {v} EX {}", 1 + n),
            5 => format!("MSET {k} {v} {k2} {v}"),
            6 => format!("MGET {k} {k2} soak:none"),
            7 => format!("GETRANGE {k} 0 {n}"),
            8 => format!("LPUSH {k} {v} {v} {n}"),
            9 => format!("RPUSH {k} {v}"),
            10 => format!("LRANGE {k} 0 -1"),
            11 => format!("LPOP {k} 2"),
            12 => format!("LMOVE {k} {k2} LEFT RIGHT"),
            13 => format!("HSET {k} f{n} {v} g {v}"),
            14 => format!("HGETALL {k}"),
            15 => format!("HINCRBY {k} c {n}"),
            16 => format!("SADD {k} {v} {n} m{n}"),
            17 => format!("SMEMBERS {k}"),
            18 => format!("SINTERSTORE {k} {k} {k2}"),
            19 => format!("SPOP {k}"),
            20 => format!("ZADD {k} {n} {v} {} m", n * 2),
            21 => format!("ZRANGE {k} 0 -1 WITHSCORES"),
            22 => format!("ZUNIONSTORE {k} 2 {k} {k2}"),
            23 => format!("ZRANGEBYSCORE {k} -inf +inf LIMIT 0 5"),
            24 => format!("DEL {k} {k2}"),
            25 => format!("EXPIRE {k} {}", 1 + n),
            26 => format!("TTL {k}"),
            27 => format!("TYPE {k}"),
            28 => format!("RENAME {k} {k2}"),
            29 => format!("COPY {k} {k2} REPLACE"),
            30 => format!("SCAN 0 MATCH soak:* COUNT {}", 1 + n),
            31 => format!("SORT {k} ALPHA LIMIT 0 10"),
            32 => format!("SELECT {}", self.rng.below(8)),
            33 => "PING".into(),
            34 => format!("EXISTS {k} {k2}"),
            35 => format!("PUBLISH soak:ch:{} {v}", self.rng.below(10)),
            36 => format!("DUMP {k}"),
            37 => "INFO stats".into(),
            38 => format!("OBJECT ENCODING {k}"),
            _ => format!("LPUSH soak:q:{} {v}", self.rng.below(10)),
        };
        words(&line)
    }

    fn invalid(&mut self) -> Vec<Vec<u8>> {
        let k = self.key();
        match self.rng.below(5) {
            0 => words(&format!("NOSUCHCMD{} a b", self.rng.below(100))),
            1 => words("GET"),
            2 => words(&format!("SET {k}")),
            3 => words(&format!("LPUSH soak:str{} x", self.rng.below(4))),
            _ => words(&format!("ZADD {k} notafloat m")),
        }
    }

    /// Pipelined valid and invalid commands; every reply is read.
    fn session_commands(&mut self, c: &mut Conn) -> Session {
        if self.rng.below(10) == 0 {
            // String keys so LPUSH on them is a WRONGTYPE error.
            let n = self.rng.below(4);
            self.send(c, &enc(&words(&format!("SET soak:str{n} s"))))?;
            self.expect(c, 1)?;
        }
        if self.rng.below(8) == 0 {
            self.send(c, &enc(&words("HELLO 3")))?;
            self.expect(c, 1)?;
        }
        for _ in 0..1 + self.rng.below(20) {
            let batch = 1 + self.rng.below(10);
            let mut buf = Vec::new();
            for _ in 0..batch {
                let cmd = if self.rng.below(5) == 0 {
                    self.invalid()
                } else {
                    self.valid()
                };
                buf.extend_from_slice(&enc(&cmd));
            }
            self.st
                .requests
                .fetch_add(batch as u64 - 1, Ordering::Relaxed);
            self.send(c, &buf)?;
            self.expect(c, batch)?;
        }
        Ok(())
    }

    fn send(&self, c: &mut Conn, b: &[u8]) -> Session {
        self.st.requests.fetch_add(1, Ordering::Relaxed);
        self.st
            .bytes_sent
            .fetch_add(b.len() as u64, Ordering::Relaxed);
        c.w.write_all(b).map_err(|_| ())
    }

    fn expect(&self, c: &mut Conn, n: usize) -> Session {
        for _ in 0..n {
            match read_reply(&mut c.r) {
                Ok(Reply::Error) => {
                    self.st.error_replies.fetch_add(1, Ordering::Relaxed);
                    self.st.replies.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Reply::Other) => {
                    self.st.replies.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => return Err(()),
            }
        }
        Ok(())
    }

    /// Reads replies until the server closes the connection (after a
    /// protocol error or a limit): Err(()) then, as for every session the
    /// server ended. Ok: it did not close within the read timeout.
    fn expect_close(&self, c: &mut Conn) -> Session {
        loop {
            match read_reply(&mut c.r) {
                Ok(_) => {
                    self.st.replies.fetch_add(1, Ordering::Relaxed);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(());
                }
                Err(_) => return Err(()),
            }
        }
    }

    /// [`Self::expect_close`], counting a connection left open.
    fn must_close(&self, c: &mut Conn) -> Session {
        let r = self.expect_close(c);
        if r.is_ok() {
            self.st.not_closed.fetch_add(1, Ordering::Relaxed);
        }
        r
    }

    /// Protocol garbage: the server answers with a protocol error and
    /// closes (or waits for more, for an unterminated prefix).
    fn session_garbage(&mut self, c: &mut Conn) -> Session {
        let kind = self.rng.below(7);
        let b: Vec<u8> = match kind {
            0 => b"*2\r\n$-5\r\nxx\r\n".to_vec(),
            1 => b"*abc\r\n".to_vec(),
            2 => b"*2147483647\r\n$4\r\nPING\r\n$1\r\nx\r\n".to_vec(),
            3 => b"*1\r\n+PING\r\n".to_vec(),
            4 => {
                // An unterminated inline line over 64 KiB.
                vec![b'a'; 70 * 1024]
            }
            5 => b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$99999999999999999999\r\n".to_vec(),
            _ => (0..self.rng.below(4096))
                .map(|_| self.rng.next() as u8)
                .collect(),
        };
        if self.send(c, &b).is_err() {
            return Err(());
        }
        if self.rng.below(2) == 0 || kind == 2 || kind == 6 {
            // Leave without waiting (the server waits for the rest of a
            // huge multibulk; noise may or may not be a protocol error).
            self.st.client_dropped.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        // The server replies with a protocol error and closes: waiting
        // longer than the read timeout is a failure of the soak.
        self.must_close(c)
    }

    /// Over proto-max-bulk-len or client-query-buffer-limit: the server
    /// refuses and closes. Only a few clients do this at a time, so the
    /// bytes in flight stay small.
    fn session_oversized(&mut self, c: &mut Conn) -> Session {
        let b = if self.rng.below(2) == 0 {
            // Declared bulk above proto-max-bulk-len (1mb): refused at once.
            let mut b = b"*2\r\n$4\r\nECHO\r\n$2000000\r\n".to_vec();
            b.extend(std::iter::repeat_n(b'z', 64 * 1024));
            b
        } else {
            // Many 512 KiB arguments of a request that never completes:
            // the query buffer passes 4mb.
            let mut b = b"*100\r\n$5\r\nRPUSH\r\n$8\r\nsoak:big\r\n".to_vec();
            for _ in 0..12 {
                b.extend_from_slice(b"$524288\r\n");
                b.extend(std::iter::repeat_n(b'q', 524288));
                b.extend_from_slice(b"\r\n");
            }
            b
        };
        let _ = self.send(c, &b);
        self.must_close(c)
    }

    /// Sends commands with large replies and never reads them: the server
    /// closes the client at the output buffer limit.
    fn session_never_read(&mut self, c: &mut Conn) -> Session {
        let big = "y".repeat(100 * 1024);
        self.send(
            c,
            &enc(&words(&format!("SET soak:bigval{} {big}", self.id))),
        )?;
        let get = enc(&words(&format!("GET soak:bigval{}", self.id)));
        let mut batch = Vec::new();
        for _ in 0..20 {
            batch.extend_from_slice(&get);
        }
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            // The write fails once the server has closed the connection.
            if self.send(c, &batch).is_err() {
                return Err(());
            }
        }
        Ok(())
    }

    /// Half a request, then the connection is dropped.
    fn session_mid_request(&mut self, c: &mut Conn) -> Session {
        let k = self.key();
        let full = enc(&words(&format!("SET {k} {}", "m".repeat(100))));
        let cut = 1 + self.rng.below(full.len() - 1);
        self.send(c, &full[..cut])?;
        self.st.client_dropped.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn session_multi(&mut self, c: &mut Conn) -> Session {
        let k = self.key();
        let mut cmds = vec![words(&format!("WATCH {k}")), words("MULTI")];
        for _ in 0..1 + self.rng.below(6) {
            let cmd = if self.rng.below(8) == 0 {
                self.invalid()
            } else {
                self.valid()
            };
            cmds.push(cmd);
        }
        cmds.push(words(if self.rng.below(5) == 0 {
            "DISCARD"
        } else {
            "EXEC"
        }));
        let mut buf = Vec::new();
        for c in &cmds {
            buf.extend_from_slice(&enc(c));
        }
        self.send(c, &buf)?;
        self.expect(c, cmds.len())
    }

    fn session_pubsub(&mut self, c: &mut Conn) -> Session {
        let ch = self.rng.below(10);
        let sub = if self.rng.below(2) == 0 {
            format!("SUBSCRIBE soak:ch:{ch} soak:ch:{}", (ch + 1) % 10)
        } else {
            "PSUBSCRIBE soak:ch:*".into()
        };
        let n = enc(&words(&sub));
        self.send(c, &n)?;
        self.expect(c, if sub.starts_with("SUB") { 2 } else { 1 })?;
        // Read whatever is published for a short while.
        let _ = c.w.set_read_timeout(Some(Duration::from_millis(50)));
        let end = Instant::now() + Duration::from_millis(200 + self.rng.below(800) as u64);
        while Instant::now() < end {
            match read_reply(&mut c.r) {
                Ok(_) => {
                    self.st.replies.fetch_add(1, Ordering::Relaxed);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return Err(()),
            }
        }
        Ok(())
    }

    fn session_blocking(&mut self, c: &mut Conn) -> Session {
        let q = self.rng.below(10);
        let t = ["0.1", "0.2", "0.5"][self.rng.below(3)];
        let cmd = match self.rng.below(3) {
            0 => format!("BLPOP soak:q:{q} soak:q:{} {t}", (q + 1) % 10),
            1 => format!("BRPOP soak:q:{q} {t}"),
            _ => format!("BZPOPMIN soak:z{q} {t}"),
        };
        self.send(c, &enc(&words(&cmd)))?;
        self.expect(c, 1)
    }

    fn run(&mut self, deadline: Instant) {
        while Instant::now() < deadline {
            let Some(mut c) = connect(self.port) else {
                self.st.connect_failures.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
                continue;
            };
            self.st.sessions.fetch_add(1, Ordering::Relaxed);
            // Heavy behaviours only on a few clients, so memory in flight
            // is bounded by design (20 x 4 MiB, not 1000 x).
            let heavy = self.id % 50;
            let (kind, r) = match self.rng.below(100) {
                0..=44 => (0, self.session_commands(&mut c)),
                45..=54 => (1, self.session_multi(&mut c)),
                55..=64 => (2, self.session_pubsub(&mut c)),
                65..=74 => (3, self.session_blocking(&mut c)),
                75..=82 => (4, self.session_garbage(&mut c)),
                83..=89 => (5, self.session_mid_request(&mut c)),
                90..=94 if heavy == 0 => (6, self.session_oversized(&mut c)),
                95..=99 if heavy == 1 => (7, self.session_never_read(&mut c)),
                _ => (8, self.session_commands(&mut c)),
            };
            self.st.by_kind[kind].0.fetch_add(1, Ordering::Relaxed);
            if r.is_err() {
                self.st.server_closed.fetch_add(1, Ordering::Relaxed);
                self.st.by_kind[kind].1.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Raises this process's open-file limit to its hard limit (1,000 client
/// sockets need more than the usual soft limit of 1024).
fn raise_nofile() {
    // SAFETY: getrlimit/setrlimit with a valid struct.
    unsafe {
        let mut l = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}

/// The sentinel keys: (db, key) and the commands that create them.
fn sentinel_setup() -> Vec<(&'static str, String, Vec<Vec<u8>>)> {
    let mut v = Vec::new();
    let mut bin: Vec<u8> = (0..=255u8).collect();
    bin.extend_from_slice(b"\r\n*1\r\n$0\r\n");
    for db in [SENTINEL_DB, "0"] {
        for i in 0..40 {
            let k = format!("sentinel:{i}");
            let cmd: Vec<Vec<u8>> = match i % 6 {
                0 => vec![b"SET".to_vec(), k.clone().into_bytes(), bin.clone()],
                1 => words(&format!("RPUSH {k} a b c {i} {}", "l".repeat(i * 10))),
                2 => words(&format!("HSET {k} f1 v1 f2 {i} f3 {}", "h".repeat(i * 20))),
                3 => words(&format!("SADD {k} 1 2 3 {i} x{i}")),
                4 => words(&format!("ZADD {k} 1 a 2.5 b -3 c {i} d")),
                _ => words(&format!("SET {k} {i} PX 100000000")),
            };
            v.push((db, k, cmd));
        }
    }
    v
}

/// DUMP payload and PTTL of every sentinel key.
fn sentinel_snapshot(r: &mut Raw) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    for db in [SENTINEL_DB, "0"] {
        r.cmd(&[b"SELECT", db.as_bytes()]);
        for i in 0..40 {
            let k = format!("sentinel:{i}");
            let dump = r.cmd(&[b"DUMP", k.as_bytes()]);
            let pttl = r.cmd(&[b"PTTL", k.as_bytes()]);
            // PTTL decreases; keep only whether a TTL is set.
            let ttl_kind = if pttl.starts_with(b":-") {
                pttl
            } else {
                b":ttl".to_vec()
            };
            out.push((format!("{db}/{k}"), dump, ttl_kind));
        }
    }
    r.cmd(&[b"SELECT", b"0"]);
    out
}

#[test]
fn soak_thousand_clients() {
    raise_nofile();
    let secs: u64 = std::env::var("FERROKV_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let nclients: usize = std::env::var("FERROKV_SOAK_CLIENTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let seed: u64 = seed_from_env_or_time();
    eprintln!("soak: {nclients} clients, {secs} s, FERROKV_SEED={seed}");

    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let stderr_path = dir.path().join("stderr.log");
    let stderr = std::fs::File::create(&stderr_path).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferrokv-server"))
        .args(["--port", &port.to_string()])
        .args(["--dir", dir.path().to_str().unwrap()])
        .args(["--save", "", "--appendonly", "no"])
        .args(["--maxclients", "4000"])
        .args(["--proto-max-bulk-len", "1mb"])
        .args(["--client-query-buffer-limit", "4mb"])
        .args(["--client-output-buffer-limit", "normal 4mb 2mb 1"])
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("spawn ferrokv-server");
    let pid = child.id();
    let ready = Instant::now() + Duration::from_secs(10);
    let mut admin = loop {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            drop(s);
            break Raw::connect(port);
        }
        assert!(Instant::now() < ready, "server did not start");
        std::thread::sleep(Duration::from_millis(20));
    };

    // Sentinels.
    for (db, _k, cmd) in sentinel_setup() {
        admin.cmd(&[b"SELECT", db.as_bytes()]);
        let refs: Vec<&[u8]> = cmd.iter().map(|a| a.as_slice()).collect();
        let r = admin.cmd(&refs);
        assert!(
            !r.starts_with(b"-"),
            "sentinel setup: {:?}",
            String::from_utf8_lossy(&r)
        );
    }
    admin.cmd(&[b"SELECT", b"0"]);
    let before = sentinel_snapshot(&mut admin);
    let rss_start = rss_kib(pid);

    // RSS sampler.
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kib(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };

    let stats = Arc::new(Stats::default());
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let mut threads = Vec::new();
    for id in 0..nclients {
        let st = stats.clone();
        let t = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let mut c = Client {
                    id,
                    port,
                    rng: Rng(seed ^ (id as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
                    st: &st,
                };
                c.run(deadline);
            })
            .expect("spawn client thread");
        threads.push(t);
    }
    // Meanwhile the server must keep answering a well-behaved client.
    let mut max_ping_ms = 0u128;
    while Instant::now() < deadline {
        let t = Instant::now();
        assert_eq!(
            admin.cmd(&[b"PING"]),
            b"+PONG\r\n",
            "server stopped answering"
        );
        max_ping_ms = max_ping_ms.max(t.elapsed().as_millis());
        assert!(
            child.try_wait().unwrap().is_none(),
            "server exited during the soak"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    for t in threads {
        t.join().expect("client thread panicked");
    }
    let elapsed = started.elapsed();

    // Clients gone: connected_clients returns to 1 (this connection).
    let settle = Instant::now() + Duration::from_secs(15);
    let mut connected;
    loop {
        connected = admin.info_field("clients", "connected_clients");
        if connected == "1" || Instant::now() > settle {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let peak_kib = peak.load(Ordering::Relaxed);
    let rss_end = rss_kib(pid);
    assert_eq!(admin.cmd(&[b"PING"]), b"+PONG\r\n");
    let after = sentinel_snapshot(&mut admin);
    let total_conn = admin.info_field("stats", "total_connections_received");
    let _ = child.kill();
    let _ = child.wait();
    let log = std::fs::read_to_string(&stderr_path).unwrap_or_default();

    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    eprintln!(
        "soak: {} clients for {:.1} s: {} sessions ({} connections), {} requests ({} MB), {} replies \
         ({} errors), {} closed by the server ({} left open that should have been), {} dropped by \
         the client, {} connect failures; \
         RSS start {} MB, peak {} MB, end {} MB; slowest PING {} ms",
        nclients,
        elapsed.as_secs_f64(),
        g(&stats.sessions),
        total_conn,
        g(&stats.requests),
        g(&stats.bytes_sent) >> 20,
        g(&stats.replies),
        g(&stats.error_replies),
        g(&stats.server_closed),
        g(&stats.not_closed),
        g(&stats.client_dropped),
        g(&stats.connect_failures),
        rss_start >> 10,
        peak_kib >> 10,
        rss_end >> 10,
        max_ping_ms,
    );
    for (i, k) in KINDS.iter().enumerate() {
        eprintln!(
            "soak:   {k:12} {:7} sessions, {:6} closed by the server",
            g(&stats.by_kind[i].0),
            g(&stats.by_kind[i].1)
        );
    }
    assert!(!log.contains("panicked"), "server panicked:\n{log}");
    assert_eq!(connected, "1", "clients still connected after the soak");
    assert_eq!(
        g(&stats.not_closed),
        0,
        "connections with a protocol error or over a limit were not closed"
    );
    assert_eq!(g(&stats.connect_failures), 0, "connections refused");
    assert!(
        peak_kib < RSS_BOUND_KIB,
        "server RSS peaked at {} MB (bound {} MB)",
        peak_kib >> 10,
        RSS_BOUND_KIB >> 10
    );
    assert_eq!(before.len(), after.len());
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(b, a, "sentinel key {} changed", b.0);
    }
    assert!(g(&stats.replies) > 0, "no replies at all");
}
