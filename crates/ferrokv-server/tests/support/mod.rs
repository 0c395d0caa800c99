//! Starting `ferrokv-server` with a config file as its first argument (the
//! shared harness puts `--port` first, which suits only argument-only
//! start-ups) and waiting for the process to exit.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_ferrokv-server")
}

/// A server process started by [`Proc::start`], killed on drop.
pub struct Proc {
    /// The process.
    pub child: Child,
    /// Its TCP port on 127.0.0.1.
    pub port: u16,
}

impl Proc {
    /// Starts `ferrokv-server [file] --port <free> <extra...>` and waits
    /// until it answers PING (panics after 10 s).
    pub fn start(file: Option<&std::path::Path>, extra: &[&str]) -> Proc {
        let port = super::common::free_port();
        let mut cmd = Command::new(bin());
        if let Some(f) = file {
            cmd.arg(f);
        }
        cmd.arg("--port")
            .arg(port.to_string())
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut p = Proc {
            child: cmd.spawn().expect("spawn"),
            port,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(st)) = p.child.try_wait() {
                panic!("server exited at start: {st:?}");
            }
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let mut b = [0u8; 16];
                if s.write_all(b"PING\r\n").is_ok() && matches!(s.read(&mut b), Ok(n) if n > 0) {
                    return p;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("server did not start");
    }

    /// A `redis` crate connection.
    pub fn client(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .expect("url")
            .get_connection()
            .expect("connect")
    }

    /// Waits up to `secs` for the process to exit.
    pub fn wait_exit(&mut self, secs: u64) -> Option<ExitStatus> {
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

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
