//! Regression tests for problems found by attacking the server with bad
//! input and concurrency (protocol fuzzing, differential command fuzzing
//! against redis-server 7.0.15, racing clients). Each test names the input
//! that used to crash, hang or diverge.

mod common;
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Resident memory of a process, KiB.
fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// An inline request with a NUL byte used to send `split_args` into an
/// endless loop of empty arguments (one core at 100% and memory growing
/// until the OOM killer: 24 GB in seconds). Redis finds the end of an
/// inline line with strchr(), which stops at the NUL, so the request stays
/// incomplete until the 64 KiB inline limit.
#[test]
fn inline_nul_byte_does_not_loop() {
    let srv = Server::start(&[]);
    let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    s.write_all(b"'' \x00 \"a b\"\r\nPING\r\n").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut b = [0u8; 64];
    assert!(
        matches!(s.read(&mut b), Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut),
        "no reply expected: the line is incomplete for Redis"
    );
    // The server still serves others and did not balloon.
    let mut r = srv.raw();
    assert_eq!(r.cmds("PING"), b"+PONG\r\n");
    assert!(
        rss_kib(srv.pid()) < 200 * 1024,
        "rss {} KiB",
        rss_kib(srv.pid())
    );
    // Past 64 KiB the pending line is refused, as in Redis.
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    s.write_all(&vec![b'a'; 70 * 1024]).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert_eq!(got, b"-ERR Protocol error: too big inline request\r\n");
}
