//! Test helpers: spawn real servers (ferrokv-server, redis-server,
//! memcached) on free ports, tiny in-process fake servers, and a way to run
//! the benchmark binary.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The benchmark binary under test.
pub fn bench_bin() -> &'static str {
    env!("CARGO_BIN_EXE_ferrokv-benchmark")
}

/// Runs the benchmark with `args`, with a 120 s safety timeout.
pub fn bench(args: &[&str]) -> Output {
    let mut child = Command::new(bench_bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ferrokv-benchmark");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// stdout of an output as text.
pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// stderr of an output as text.
pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process killed on drop.
pub struct Proc {
    pub child: Child,
    pub port: u16,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until something accepts connections on `port`.
pub fn wait_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("nothing listening on port {port}");
}

fn ferrokv_server_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let dir = PathBuf::from(bench_bin()).parent().unwrap().to_path_buf();
        let bin = dir.join("ferrokv-server");
        if !bin.exists() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let st = Command::new(cargo)
                .args(["build", "-p", "ferrokv-server"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("cargo build -p ferrokv-server");
            assert!(st.success());
        }
        bin
    })
    .clone()
}

/// Starts ferrokv-server on a free port.
pub fn ferrokv() -> Proc {
    start_on_free_port(|port| {
        Command::new(ferrokv_server_bin())
            .args(["--port", &port.to_string(), "--save", ""])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn ferrokv-server")
    })
}

/// Starts a server with `spawn(port)` on a port that was free a moment
/// ago, and makes sure the process answering there is that server (its
/// INFO `process_id`): another test may take the same port between
/// `free_port` and the server's bind (the server then exits, and whoever
/// holds the port answers). Tries again on a new port when that happens.
pub fn start_on_free_port(mut spawn: impl FnMut(u16) -> Child) -> Proc {
    for _ in 0..20 {
        let port = free_port();
        let mut child = spawn(port);
        if wait_own(port, &mut child) {
            return Proc { child, port };
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("could not start a server on a free port");
}

/// True once `child` answers on `port`; false when it exited or someone
/// else answers there.
fn wait_own(port: u16, child: &mut Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    let want = format!("process_id:{}", child.id());
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if let Some(info) = try_cmd(port, &["INFO", "server"]) {
            if info.lines().any(|l| l.trim() == want) {
                return true;
            }
            if info.contains("process_id:") {
                // Another server holds the port: ours failed to bind.
                return false;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// True when a program is on the PATH.
pub fn have(prog: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {prog}")])
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Starts redis-server on a free port (and a Unix socket), or `None` when
/// it is not installed.
pub fn redis() -> Option<(Proc, PathBuf)> {
    if !have("redis-server") {
        eprintln!("redis-server not installed: skipping that part");
        return None;
    }
    let mut sock = PathBuf::new();
    let proc = start_on_free_port(|port| {
        sock = std::env::temp_dir().join(format!("fkb-redis-{port}.sock"));
        Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
                "--unixsocket",
                sock.to_str().unwrap(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server")
    });
    Some((proc, sock))
}

/// Sends one command over a fresh connection, returns the raw reply text.
pub fn cmd(port: u16, args: &[&str]) -> String {
    try_cmd(port, args).expect("no reply")
}

/// [`cmd`], or None when the connection or the reply fails.
pub fn try_cmd(port: u16, args: &[&str]) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        let n = s.read(&mut chunk).ok()?;
        buf.extend_from_slice(&chunk[..n]);
        if n == 0 || ferrokv_benchmark::resp::skip_reply(&buf).ok()?.is_some() {
            break;
        }
    }
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// `calls=` of one command in `INFO commandstats`.
pub fn calls(port: u16, command: &str) -> u64 {
    let info = cmd(port, &["INFO", "commandstats"]);
    let key = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(&key))
        .map(|rest| rest.split(',').next().unwrap().parse().unwrap())
        .unwrap_or(0)
}

/// DBSIZE as a number.
pub fn dbsize(port: u16) -> u64 {
    cmd(port, &["DBSIZE"])
        .trim()
        .trim_start_matches(':')
        .parse()
        .unwrap()
}

/// Per-connection state handed to fake RESP server handlers.
#[derive(Default)]
pub struct ConnState {
    pub asking: bool,
}

type Handler = dyn Fn(&[Vec<u8>], &mut ConnState) -> Vec<u8> + Send + Sync;

/// A tiny RESP server: each connection on its own thread, each command
/// answered by `handler`. Lives as long as the test process.
pub fn fake_resp_server(handler: Arc<Handler>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let h = handler.clone();
            std::thread::spawn(move || serve_resp(s, h));
        }
    });
    port
}

fn serve_resp(s: TcpStream, h: Arc<Handler>) {
    s.set_nodelay(true).unwrap();
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let mut st = ConnState::default();
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let args: Vec<Vec<u8>> = if let Some(n) = line.strip_prefix('*') {
            let n: usize = n.trim().parse().unwrap();
            let mut args = Vec::new();
            for _ in 0..n {
                line.clear();
                r.read_line(&mut line).unwrap();
                let len: usize = line.trim()[1..].parse().unwrap();
                let mut b = vec![0u8; len + 2];
                r.read_exact(&mut b).unwrap();
                b.truncate(len);
                args.push(b);
            }
            args
        } else {
            line.split_whitespace()
                .map(|a| a.as_bytes().to_vec())
                .collect()
        };
        if args.is_empty() {
            continue;
        }
        let reply = h(&args, &mut st);
        if w.write_all(&reply).is_err() {
            return;
        }
    }
}

/// A tiny memcached text-protocol server backed by a shared map.
pub fn fake_memcached() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let store: Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>> = Arc::default();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let store = store.clone();
            std::thread::spawn(move || {
                s.set_nodelay(true).unwrap();
                let mut w = s.try_clone().unwrap();
                let mut r = BufReader::new(s);
                let mut line = String::new();
                loop {
                    line.clear();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let parts: Vec<&str> = line.split_whitespace().collect();
                    let reply: Vec<u8> = match parts.as_slice() {
                        ["set", key, _flags, _exp, len] => {
                            let len: usize = len.parse().unwrap();
                            let mut b = vec![0u8; len + 2];
                            r.read_exact(&mut b).unwrap();
                            b.truncate(len);
                            store.lock().unwrap().insert(key.as_bytes().to_vec(), b);
                            b"STORED\r\n".to_vec()
                        }
                        ["get", key] => match store.lock().unwrap().get(key.as_bytes()) {
                            Some(v) => {
                                let mut o = format!("VALUE {key} 0 {}\r\n", v.len()).into_bytes();
                                o.extend_from_slice(v);
                                o.extend_from_slice(b"\r\nEND\r\n");
                                o
                            }
                            None => b"END\r\n".to_vec(),
                        },
                        ["delete", key] => match store.lock().unwrap().remove(key.as_bytes()) {
                            Some(_) => b"DELETED\r\n".to_vec(),
                            None => b"NOT_FOUND\r\n".to_vec(),
                        },
                        _ => b"ERROR\r\n".to_vec(),
                    };
                    if w.write_all(&reply).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// A RESP bulk string reply.
pub fn bulk(b: &[u8]) -> Vec<u8> {
    let mut o = format!("${}\r\n", b.len()).into_bytes();
    o.extend_from_slice(b);
    o.extend_from_slice(b"\r\n");
    o
}
