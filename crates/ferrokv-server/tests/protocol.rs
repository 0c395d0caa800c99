//! Protocol-level tests against the real binary: every protocol error with
//! its exact text (and the connection closed while others keep working),
//! requests split at every byte, long pipelines, inline quoting, empty
//! requests, the query buffer limit and the unauthenticated size limits.
//! Expected bytes were checked against redis-server 7.0.15; where
//! redis-server is installed, `differential_protocol_errors` compares the
//! two directly.

mod common;
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Sends `payload` on a fresh connection and returns everything received
/// until the server closes it (or 3 s pass).
fn send_until_close(port: u16, payload: &[u8]) -> (Vec<u8>, bool) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let _ = s.write_all(payload);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (got, true),
            Err(_) => return (got, false),
        }
    }
}

fn proto_err(detail: &str) -> Vec<u8> {
    format!("-ERR Protocol error: {detail}\r\n").into_bytes()
}

/// (request bytes, expected reply bytes before the close).
fn error_table() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (b"*x\r\n".to_vec(), proto_err("invalid multibulk length")),
        (b"*\r\n".to_vec(), proto_err("invalid multibulk length")),
        (b"*3x\r\n".to_vec(), proto_err("invalid multibulk length")),
        (
            b"*2147483648\r\n".to_vec(),
            proto_err("invalid multibulk length"),
        ),
        (
            b"*99999999999999999999\r\n".to_vec(),
            proto_err("invalid multibulk length"),
        ),
        (b"*1\r\n$\r\n".to_vec(), proto_err("invalid bulk length")),
        (b"*1\r\n$-1\r\n".to_vec(), proto_err("invalid bulk length")),
        (b"*1\r\n$ 3\r\n".to_vec(), proto_err("invalid bulk length")),
        (b"*1\r\n$+3\r\n".to_vec(), proto_err("invalid bulk length")),
        (b"*1\r\n$abc\r\n".to_vec(), proto_err("invalid bulk length")),
        (
            b"*1\r\n$536870913\r\n".to_vec(),
            proto_err("invalid bulk length"),
        ),
        (b"*1\r\nx3\r\n".to_vec(), proto_err("expected '$', got 'x'")),
        // A CR in an error text is sent as a space, as Redis does.
        (b"*1\r\n\r\n".to_vec(), proto_err("expected '$', got ' '")),
        (
            b"*1\r\n\xff\r\n".to_vec(),
            b"-ERR Protocol error: expected '$', got '\xff'\r\n".to_vec(),
        ),
        (
            b"*2\r\n$4\r\nECHO\r\n:1\r\n".to_vec(),
            proto_err("expected '$', got ':'"),
        ),
        (
            b"SET a \"b\"c\r\n".to_vec(),
            proto_err("unbalanced quotes in request"),
        ),
        (
            b"PING \"a\r\n".to_vec(),
            proto_err("unbalanced quotes in request"),
        ),
        (
            b"ECHO 'abc\r\n".to_vec(),
            proto_err("unbalanced quotes in request"),
        ),
    ];
    v.push((
        vec![b'a'; 64 * 1024 + 10],
        proto_err("too big inline request"),
    ));
    let mut mb = b"*".to_vec();
    mb.extend(vec![b'1'; 64 * 1024 + 10]);
    v.push((mb, proto_err("too big mbulk count string")));
    let mut b = b"*1\r\n$".to_vec();
    b.extend(vec![b'1'; 64 * 1024 + 10]);
    v.push((b, proto_err("too big bulk count string")));
    // Requests before the bad one in the same pipeline are answered first.
    v.push((
        b"PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$-5\r\nPING\r\n".to_vec(),
        [
            b"+PONG\r\n+PONG\r\n".to_vec(),
            proto_err("invalid bulk length"),
        ]
        .concat(),
    ));
    v
}

#[test]
fn protocol_errors_close_only_that_connection() {
    let s = Server::start(&[]);
    let mut other = s.raw();
    assert_eq!(other.cmds("SET k v"), b"+OK\r\n");
    for (req, want) in error_table() {
        let (got, closed) = send_until_close(s.port, &req);
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "reply to {:?}",
            String::from_utf8_lossy(&req[..req.len().min(40)])
        );
        assert!(
            closed,
            "connection not closed after {:?}",
            &req[..req.len().min(40)]
        );
        assert_eq!(other.cmds("GET k"), b"$1\r\nv\r\n");
    }
}

#[test]
fn differential_protocol_errors() {
    let Some(redis) = Server::start_redis(&[]) else {
        return;
    };
    let ours = Server::start(&[]);
    for (req, _) in error_table() {
        let a = send_until_close(ours.port, &req);
        let b = send_until_close(redis.port, &req);
        assert_eq!(
            (String::from_utf8_lossy(&a.0), a.1),
            (String::from_utf8_lossy(&b.0), b.1),
            "request {:?}",
            String::from_utf8_lossy(&req[..req.len().min(40)])
        );
    }
}

#[test]
fn lowered_proto_max_bulk_len() {
    let s = Server::start(&["--proto-max-bulk-len", "1mb"]);
    let (got, closed) = send_until_close(s.port, b"*2\r\n$4\r\nECHO\r\n$1048577\r\n");
    assert_eq!(got, proto_err("invalid bulk length"));
    assert!(closed);
    // Exactly the limit is accepted.
    let big = vec![b'z'; 1024 * 1024];
    let mut r = s.raw();
    let reply = r.cmd(&[b"ECHO", &big]);
    assert_eq!(reply.len(), big.len() + b"$1048576\r\n\r\n".len());
    assert_eq!(r.cmds("PING"), b"+PONG\r\n");
}

#[test]
fn huge_counts_are_not_allocated_up_front() {
    let s = Server::start(&[]);
    // Redis 7.0 accepts multibulk counts up to INT_MAX and waits for the
    // arguments; the server must not reserve memory for the claimed count.
    let mut a = s.raw();
    a.send(b"*2000000000\r\n$4\r\nPING\r\n");
    let mut b = s.raw();
    a.send(b"$3\r\nfoo\r\n");
    assert_eq!(b.cmds("PING"), b"+PONG\r\n");
    let info = b.cmds("CLIENT LIST");
    let text = String::from_utf8_lossy(&info);
    assert!(text.contains("cmd=client|list"), "{text}");
    // A bulk length claim is only reserved as data arrives past 32 KiB
    // steps; the connection keeps waiting for the rest.
    let mut c = s.raw();
    c.send(b"*2\r\n$4\r\nECHO\r\n$500000000\r\nabc");
    assert_eq!(b.cmds("PING"), b"+PONG\r\n");
}

#[test]
fn empty_and_null_requests_get_no_reply() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.send(b"*0\r\n*-1\r\n*-5\r\n\r\n   \r\n\n*1\r\n$4\r\nPING\r\n");
    assert_eq!(r.reply(), b"+PONG\r\n");
    r.send(b"*0\r\n");
    std::thread::sleep(Duration::from_millis(50));
    r.send(b"PING\r\n");
    assert_eq!(r.reply(), b"+PONG\r\n");
}

#[test]
fn bulk_terminator_is_not_checked() {
    // Redis skips the two bytes after a bulk payload without looking at them.
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.send(b"*1\r\n$4\r\nPINGxx*2\r\n$4\r\nECHO\r\n$1\r\na\r\n");
    assert_eq!(r.reply(), b"+PONG\r\n");
    assert_eq!(r.reply(), b"$1\r\na\r\n");
}

fn mixed_pipeline() -> (Vec<u8>, Vec<u8>) {
    let mut req = Vec::new();
    let mut want = Vec::new();
    req.extend(encode(&[b"SET", b"k\r\n1", b"a\r\nb\x00c"]));
    want.extend_from_slice(b"+OK\r\n");
    req.extend_from_slice(b"GET   k\\x\r\n");
    want.extend_from_slice(b"$-1\r\n");
    req.extend(encode(&[b"GET", b"k\r\n1"]));
    want.extend_from_slice(b"$6\r\na\r\nb\x00c\r\n");
    req.extend_from_slice(b"ECHO \"a b\\x41\\n\" \n");
    want.extend_from_slice(b"$5\r\na bA\n\r\n");
    req.extend_from_slice(b"*0\r\n");
    req.extend_from_slice(b"PING\n");
    want.extend_from_slice(b"+PONG\r\n");
    req.extend_from_slice(b"ECHO 'it\\'s'\r\n");
    want.extend_from_slice(b"$4\r\nit's\r\n");
    req.extend(encode(&[b"ECHO", b""]));
    want.extend_from_slice(b"$0\r\n\r\n");
    req.extend(encode(&[b"PING", &[b'p'; 300]]));
    want.extend_from_slice(b"$300\r\n");
    want.extend_from_slice(&[b'p'; 300]);
    want.extend_from_slice(b"\r\n");
    (req, want)
}

fn read_exact_bytes(r: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut got = vec![0u8; n];
    r.read_exact(&mut got).expect("read replies");
    got
}

#[test]
fn requests_split_at_every_byte() {
    let s = Server::start(&[]);
    let (req, want) = mixed_pipeline();
    // One byte per write, through a real socket (TCP_NODELAY: each write is
    // its own segment).
    let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    c.set_nodelay(true).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for (i, b) in req.iter().enumerate() {
        c.write_all(&[*b]).unwrap();
        if i % 97 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    assert_eq!(read_exact_bytes(&mut c, want.len()), want);
    // Every two-part split of the same pipeline, on fresh connections.
    for cut in 1..req.len() {
        let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        c.set_nodelay(true).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(&req[..cut]).unwrap();
        std::thread::sleep(Duration::from_millis(1));
        c.write_all(&req[cut..]).unwrap();
        assert_eq!(read_exact_bytes(&mut c, want.len()), want, "cut at {cut}");
    }
}

#[test]
fn pipeline_of_ten_thousand_in_order() {
    let s = Server::start(&[]);
    let mut req = Vec::new();
    let mut want = Vec::new();
    for i in 0..10_000 {
        let v = i.to_string();
        if i % 3 == 0 {
            req.extend_from_slice(format!("ECHO {v}\r\n").as_bytes());
        } else {
            req.extend(encode(&[b"ECHO", v.as_bytes()]));
        }
        want.extend_from_slice(format!("${}\r\n{v}\r\n", v.len()).as_bytes());
    }
    let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut w = c.try_clone().unwrap();
    let writer = std::thread::spawn(move || w.write_all(&req).unwrap());
    let got = read_exact_bytes(&mut c, want.len());
    writer.join().unwrap();
    assert!(got == want, "pipeline replies out of order or wrong");
}

#[test]
fn inline_quoting() {
    let s = Server::start(&[]);
    let mut r = s.raw();
    r.send(b"SET k \"a b\\x41\\n\"\r\n");
    assert_eq!(r.reply(), b"+OK\r\n");
    r.send(b"GET   k\r\n");
    assert_eq!(r.reply(), b"$5\r\na bA\n\r\n");
    r.send(b"ECHO 'x\\ny'\r\n");
    assert_eq!(r.reply(), b"$4\r\nx\\ny\r\n");
    r.send(b"ECHO \"\"\r\n");
    assert_eq!(r.reply(), b"$0\r\n\r\n");
    r.send(b"ECHO \"\\t\\r\\a\\b\\\\\\\"\"\n");
    assert_eq!(r.reply(), b"$6\r\n\t\r\x07\x08\\\"\r\n");
    r.send(b"ECHO \"\\xzz\"\n");
    assert_eq!(r.reply(), b"$3\r\nxzz\r\n");
    r.send(b"ECHO 'it''s'\r\n");
    assert_eq!(r.reply(), proto_err("unbalanced quotes in request"));
    assert!(r.is_closed());
}

#[test]
fn query_buffer_limit_disconnects() {
    let s = Server::start(&["--client-query-buffer-limit", "1mb"]);
    let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(b"*2\r\n$4\r\nECHO\r\n$10000000\r\n").unwrap();
    let chunk = vec![b'x'; 64 * 1024];
    let mut sent = 0;
    while sent < 3 * 1024 * 1024 {
        if c.write_all(&chunk).is_err() {
            break;
        }
        sent += chunk.len();
    }
    let mut buf = [0u8; 64];
    let closed = match c.read(&mut buf) {
        Ok(0) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        Ok(_) => false,
    };
    assert!(
        closed,
        "client over the query buffer limit not disconnected"
    );
    let mut r = s.raw();
    assert_eq!(r.cmds("PING"), b"+PONG\r\n");
}

#[test]
fn unauthenticated_request_size_limits() {
    let s = Server::start(&["--requirepass", "pw"]);
    let (got, closed) = send_until_close(s.port, b"*11\r\n");
    assert_eq!(got, proto_err("unauthenticated multibulk length"));
    assert!(closed);
    let (got, closed) = send_until_close(s.port, b"*1\r\n$16385\r\n");
    assert_eq!(got, proto_err("unauthenticated bulk length"));
    assert!(closed);
    // After AUTH (even within the same pipeline) the limits are lifted.
    let mut r = s.raw();
    let mut req = b"AUTH pw\r\n".to_vec();
    let mut args: Vec<&[u8]> = vec![b"DEL"];
    args.extend(std::iter::repeat_n(&b"a"[..], 11));
    let mut args2 = vec![&b"ECHO"[..]];
    let big = vec![b'q'; 20000];
    args2.push(&big);
    req.extend(encode(&args));
    req.extend(encode(&args2));
    r.send(&req);
    assert_eq!(r.reply(), b"+OK\r\n");
    assert_eq!(r.reply(), b":0\r\n");
    assert_eq!(r.reply().len(), b"$20000\r\n\r\n".len() + 20000);
}
