//! MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
//! [AUTH password | AUTH2 username password] [KEYS key ...]
//! (redis.io/commands/migrate; Redis 7.0's migrateCommand in cluster.c).
//!
//! The keys are serialised as DUMP payloads and sent to the target as
//! RESTORE (RESTORE-ASKING in cluster mode) with their remaining TTL, in
//! one pipelined write; on success they are deleted here (unless COPY),
//! and the deletion is propagated as one DEL. As Redis, the command
//! blocks its connection while it talks to the target, and keeps the
//! connection to each target for 10 seconds for the next MIGRATE
//! (MIGRATE_SOCKET_CACHE_TTL), remembering the database it selected.
//! With `tls-cluster yes` the connection is TLS (Redis: `connCreateTLS`
//! when server.tls_cluster), a failed handshake being a failed connect.

use super::Ctx;
use crate::resp::Args;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Cached connections: at most this many (MIGRATE_SOCKET_CACHE_ITEMS).
const CACHE_ITEMS: usize = 64;
/// Idle cached connections are closed after this long.
const CACHE_TTL: Duration = Duration::from_secs(10);

/// A connection to a MIGRATE target: plain TCP, or TLS in a TLS cluster.
enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Conn {
    fn tcp(&self) -> &TcpStream {
        match self {
            Conn::Plain(s) => s,
            Conn::Tls(s) => &s.sock,
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(buf),
            Conn::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(buf),
            Conn::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
        }
    }
}

struct Cached {
    reader: BufReader<Conn>,
    last_dbid: i64,
    last_use: Instant,
}

fn cache() -> &'static Mutex<HashMap<String, Cached>> {
    static C: OnceLock<Mutex<HashMap<String, Cached>>> = OnceLock::new();
    C.get_or_init(Default::default)
}

/// Connections cached for later MIGRATEs (INFO `migrate_cached_sockets`).
pub fn cached_sockets() -> usize {
    cache().lock().len()
}

/// Closes cached connections idle for longer than the TTL (called from
/// the server cron, as Redis's migrateCloseTimedoutSockets).
pub fn close_idle() {
    cache()
        .lock()
        .retain(|_, c| c.last_use.elapsed() <= CACHE_TTL);
}

/// Why a connection to the target could not be made, as Redis 7.0 tells
/// them apart.
enum ConnectError {
    /// The non-blocking connect() failed at once (unresolvable host, a
    /// negative port, an unreachable network): "error or timeout
    /// connecting to the client".
    Connecting,
    /// The connection was refused or timed out: Redis's
    /// connBlockingConnect does not notice, and its first write fails
    /// ("error or timeout writing to target instance").
    Writing,
}

/// Connects to `host`:`port`, the port read as Redis's atoi does (`abc`
/// is 0, `1.5` is 1, a number beyond an int wraps, then the low 16 bits
/// are the TCP port, as getaddrinfo's numeric service).
/// `tls`: the client configuration of a TLS cluster (the handshake runs
/// within `timeout`).
fn connect(
    host: &str,
    port: &[u8],
    timeout: Duration,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
) -> Result<Cached, ConnectError> {
    use std::net::ToSocketAddrs;
    let port = super::server::debug::atoi(port);
    if port < 0 {
        return Err(ConnectError::Connecting);
    }
    let addr = (host, port as u16)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or(ConnectError::Connecting)?;
    let s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| match e.kind() {
        std::io::ErrorKind::NetworkUnreachable | std::io::ErrorKind::HostUnreachable => {
            ConnectError::Connecting
        }
        _ => ConnectError::Writing,
    })?;
    let _ = s.set_nodelay(true);
    let conn = match tls {
        None => Conn::Plain(s),
        Some(cfg) => {
            let name = rustls_pki_types::ServerName::try_from(host.to_string())
                .map_err(|_| ConnectError::Connecting)?;
            let c =
                rustls::ClientConnection::new(cfg, name).map_err(|_| ConnectError::Connecting)?;
            let _ = s.set_read_timeout(Some(timeout));
            let _ = s.set_write_timeout(Some(timeout));
            let mut st = rustls::StreamOwned::new(c, s);
            while st.conn.is_handshaking() {
                st.conn
                    .complete_io(&mut st.sock)
                    .map_err(|_| ConnectError::Connecting)?;
            }
            Conn::Tls(Box::new(st))
        }
    };
    Ok(Cached {
        reader: BufReader::new(conn),
        last_dbid: -1,
        last_use: Instant::now(),
    })
}

/// Longest reply line read from the target (Redis's syncReadLine into a
/// 1024-byte buffer): a longer line is cut there.
const MAX_LINE: usize = 1024;

/// Reads one reply line (type byte included, at most [`MAX_LINE`] bytes,
/// without the CRLF). Bulk and array replies are not expected from
/// AUTH/SELECT/RESTORE. `deadline` bounds the whole read even when the
/// target keeps sending.
fn read_line(r: &mut BufReader<Conn>, deadline: Instant) -> std::io::Result<String> {
    let mut line = Vec::with_capacity(64);
    loop {
        if Instant::now() >= deadline {
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "timeout"));
        }
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        let room = MAX_LINE - line.len();
        let take = buf.len().min(room);
        match buf[..take].iter().position(|&b| b == b'\n') {
            Some(i) => {
                line.extend_from_slice(&buf[..i]);
                r.consume(i + 1);
                break;
            }
            None => {
                line.extend_from_slice(&buf[..take]);
                r.consume(take);
                if line.len() >= MAX_LINE {
                    break;
                }
            }
        }
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(String::from_utf8_lossy(&line).into_owned())
}

/// The MIGRATE command.
pub fn migrate(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let (mut copy, mut replace) = (false, false);
    let mut auth: Option<(Option<Vec<u8>>, Vec<u8>)> = None;
    let mut first_key = 3;
    let mut num_keys = 1;
    let mut j = 6;
    while j < args.len() {
        let a = args.get(j);
        let more = args.len() - j - 1;
        if a.eq_ignore_ascii_case(b"copy") {
            copy = true;
        } else if a.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if a.eq_ignore_ascii_case(b"auth") {
            if more == 0 {
                return ctx.syntax();
            }
            j += 1;
            auth = Some((None, args.get(j).to_vec()));
        } else if a.eq_ignore_ascii_case(b"auth2") {
            if more < 2 {
                return ctx.syntax();
            }
            auth = Some((Some(args.get(j + 1).to_vec()), args.get(j + 2).to_vec()));
            j += 2;
        } else if a.eq_ignore_ascii_case(b"keys") {
            if !args.get(3).is_empty() {
                return ctx.error(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                );
            }
            first_key = j + 1;
            num_keys = args.len() - j - 1;
            break;
        } else {
            return ctx.syntax();
        }
        j += 1;
    }
    let Some(mut timeout) = super::arg_i64(ctx, args.get(5)) else {
        return;
    };
    let Some(dbid) = super::arg_i64(ctx, args.get(4)) else {
        return;
    };
    if timeout <= 0 {
        timeout = 1000;
    }
    // The keys that exist, with their payloads and TTLs.
    let opts = crate::persist::rdb::dump_opts(ctx.server);
    let mut found: Vec<(Vec<u8>, Vec<u8>, i64)> = Vec::new();
    for i in 0..num_keys {
        let key = args.get(first_key + i);
        let (h, mut g) = ctx.lock(key);
        let now = ctx.now;
        if let Some(e) = g.get(h, key, now) {
            let payload = crate::persist::rdb::dump_payload(&e.value, &opts);
            let at = g.expire_at(h, key);
            let ttl = if at == 0 {
                0
            } else {
                (at as i64 - now as i64).max(1)
            };
            found.push((key.to_vec(), payload, ttl));
        }
    }
    if found.is_empty() {
        return ctx.out.simple("NOKEY");
    }
    let host = String::from_utf8_lossy(args.get(1)).into_owned();
    let port = String::from_utf8_lossy(args.get(2)).into_owned();
    let name = format!("{host}:{port}");
    let timeout = Duration::from_millis(timeout as u64);
    let restore_cmd: &[u8] = if ctx.server.cluster.enabled {
        b"RESTORE-ASKING"
    } else {
        b"RESTORE"
    };
    let tls = if ctx.server.config.read().get_bool("tls-cluster") {
        match ctx.server.tls.client_config() {
            Ok(c) => Some(c),
            Err(_) => return ctx.error("IOERR error or timeout connecting to the client"),
        }
    } else {
        None
    };
    let mut attempt = 0;
    loop {
        let cached = cache().lock().remove(&name);
        let had_cached = cached.is_some();
        let mut cs = match cached {
            Some(c) => c,
            None => match connect(&host, args.get(2), timeout, tls.clone()) {
                Ok(c) => c,
                Err(ConnectError::Writing) => {
                    return ctx.error("IOERR error or timeout writing to target instance")
                }
                Err(ConnectError::Connecting) => {
                    return ctx.error("IOERR error or timeout connecting to the client")
                }
            },
        };
        let _ = cs.reader.get_ref().tcp().set_read_timeout(Some(timeout));
        let _ = cs.reader.get_ref().tcp().set_write_timeout(Some(timeout));
        let mut buf = Vec::new();
        if let Some((user, pass)) = &auth {
            let mut a: Vec<&[u8]> = vec![b"AUTH"];
            if let Some(u) = user {
                a.push(u);
            }
            a.push(pass);
            crate::propagate::encode(&mut buf, &a);
        }
        let select = cs.last_dbid != dbid;
        if select {
            let d = dbid.to_string();
            crate::propagate::encode(&mut buf, &[b"SELECT", d.as_bytes()]);
        }
        for (key, payload, ttl) in &found {
            let t = ttl.to_string();
            let mut a: Vec<&[u8]> = vec![restore_cmd, key, t.as_bytes(), payload];
            if replace {
                a.push(b"REPLACE");
            }
            crate::propagate::encode(&mut buf, &a);
        }
        let write = cs.reader.get_mut().write_all(&buf);
        if write.is_err() {
            // A cached connection the target closed: retry once on a new one.
            if had_cached && attempt == 0 {
                attempt += 1;
                continue;
            }
            return ctx.error("IOERR error or timeout writing to target instance");
        }
        let deadline = Instant::now() + timeout;
        let mut read = || read_line(&mut cs.reader, deadline);
        let mut error: Option<String> = None;
        let mut io_error = false;
        if auth.is_some() {
            match read() {
                Ok(l) if l.starts_with('-') => error = Some(l[1..].to_string()),
                Ok(_) => {}
                Err(_) => io_error = true,
            }
        }
        if !io_error && select {
            match read() {
                Ok(l) if l.starts_with('-') => {
                    error.get_or_insert(l[1..].to_string());
                }
                Ok(_) => {}
                Err(_) => io_error = true,
            }
        }
        let mut moved: Vec<Vec<u8>> = Vec::new();
        if !io_error {
            for (key, _, _) in &found {
                match read() {
                    Ok(l) if l.starts_with('-') => {
                        error.get_or_insert(l[1..].to_string());
                    }
                    Ok(_) => moved.push(key.clone()),
                    Err(_) => {
                        io_error = true;
                        break;
                    }
                }
            }
        }
        if io_error {
            // Retry once on a fresh connection when nothing was restored
            // and the failure was not a timeout (Redis's socket_err path).
            if had_cached && attempt == 0 && moved.is_empty() {
                attempt += 1;
                continue;
            }
            return ctx.error("IOERR error or timeout reading to target instance");
        }
        if error.is_none() && select {
            cs.last_dbid = dbid;
        } else if select {
            cs.last_dbid = -1;
        }
        cs.last_use = Instant::now();
        {
            let mut c = cache().lock();
            if c.len() >= CACHE_ITEMS {
                if let Some(k) = c.keys().next().cloned() {
                    c.remove(&k);
                }
            }
            c.insert(name.clone(), cs);
        }
        if !copy && !moved.is_empty() {
            let mut del: Vec<&[u8]> = vec![b"DEL"];
            for key in &moved {
                let (h, mut g) = ctx.lock(key);
                if g.remove(h, key).is_some() {
                    drop(g);
                    ctx.modified(key, crate::events::GENERIC, "del");
                }
                del.push(key);
            }
            crate::propagate::rewrite(&del);
        } else {
            crate::propagate::prevent();
        }
        return match error {
            Some(e) => ctx.error(&format!("ERR Target instance replied with error: {e}")),
            None => ctx.out.ok(),
        };
    }
}
