//! `ferrokv-noop`: a bench-only RESP server that stores nothing. It answers
//! `+OK` to SET/MSET-like requests, a null bulk string to everything else,
//! `+PONG` to PING, and an empty map to CONFIG (so redis-benchmark starts),
//! with ferrokv's runtime (its I/O worker threads, connections dealt
//! round-robin, idle polling), parser and write batching (one write per
//! batch of pipelined replies). `bench/compare` runs it as the ceiling this machine
//! and client allow: the distance between it and ferrokv is the cost of
//! ferrokv's own work.
//!
//! Usage: `ferrokv-noop [--port N] [--io-threads N]`.

use bytes::{Buf, BytesMut};
use ferrokv::resp::{Out, Parsed, RequestParser};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn answer(args: &ferrokv::resp::Args<'_>, out: &mut Out) {
    let name = args.get(0);
    if name.eq_ignore_ascii_case(b"ping") {
        out.simple("PONG");
    } else if name.eq_ignore_ascii_case(b"config") {
        out.map(0);
    } else if name.len() >= 3 && name[..3].eq_ignore_ascii_case(b"set")
        || name.eq_ignore_ascii_case(b"mset")
    {
        out.ok();
    } else {
        out.null();
    }
}

async fn serve(mut sock: tokio::net::TcpStream) {
    let _ = sock.set_nodelay(true);
    let mut parser = RequestParser::default();
    let mut rbuf = BytesMut::with_capacity(16 * 1024);
    let mut out = Out::new();
    loop {
        if rbuf.capacity() - rbuf.len() < 1024 {
            rbuf.reserve(16 * 1024);
        }
        match sock.read_buf(&mut rbuf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut consumed = 0;
        loop {
            match parser.parse(&rbuf[consumed..]) {
                Ok(Parsed::Request(n)) => {
                    let args = parser.args(&rbuf[consumed..]);
                    if !args.is_empty() {
                        answer(&args, &mut out);
                    }
                    consumed += n;
                }
                Ok(Parsed::Incomplete) => break,
                Err(_) => return,
            }
        }
        rbuf.advance(consumed);
        ferrokv::workers::spin::batch_done();
        if !out.buf.is_empty() {
            if sock.write_all(&out.buf).await.is_err() {
                return;
            }
            out.buf.clear();
        }
    }
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let mut port = 6399u16;
    let mut threads = ferrokv::default_io_threads();
    let mut i = 1;
    while i + 1 < args.len() {
        match args[i].as_str() {
            "--port" => port = args[i + 1].parse().unwrap_or(port),
            "--io-threads" => threads = args[i + 1].parse().unwrap_or(threads),
            _ => {}
        }
        i += 2;
    }
    let workers = ferrokv::workers::Workers::start(threads, 50)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let l = TcpListener::bind(("127.0.0.1", port)).await?;
        loop {
            let (s, _) = l.accept().await?;
            let s = s.into_std()?;
            workers.next().spawn(async move {
                if let Ok(s) = tokio::net::TcpStream::from_std(s) {
                    serve(s).await;
                }
            });
        }
    })
}
