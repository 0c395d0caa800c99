//! The replica side: following a master (Redis's replicationSetMaster,
//! connectWithMaster, syncWithMaster, readSyncBulkPayload, the master
//! client and replicationSendAck).
//!
//! One thread per link ("ferrokv-repl"), with blocking sockets: it
//! connects, does the handshake (PING, AUTH with `masteruser` /
//! `masterauth`, `REPLCONF listening-port`, `ip-address`, `capa eof capa
//! psync2`), asks `PSYNC <replid> <offset+1>` (or `PSYNC ? -1` with
//! nothing to continue), loads the RDB of a full resynchronisation
//! straight from the socket (`$<len>` or `$EOF:<mark>` framing), then
//! applies the command stream through a master client (flag `M`, exempt
//! from `replica-read-only`), counting the bytes it applied
//! (`slave_repl_offset`), copying them into its own backlog for its
//! sub-replicas, and acknowledging once a second and on `REPLCONF GETACK`.
//! A lost link is retried every second, with a partial resynchronisation
//! when the master still has the bytes.

use crate::cmd::client::Client;
use crate::repl::link;
use crate::resp::parse::{Parsed, RequestParser};
use crate::resp::Out;
use crate::server::Server;
use std::cell::RefCell;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Makes the server a replica of `host:port` (REPLICAOF, the `replicaof`
/// directive): its own replicas are disconnected (they resynchronise with
/// the new history), a link thread starts.
pub fn follow(server: &Arc<Server>, host: String, port: u16) {
    follow_with(server, host, port, false);
}

/// Clients blocked on keys while the server was a master are answered
/// "-UNBLOCKED force unblock ..." and disconnected when it starts following
/// a master (replication.c replicationSetMaster's
/// `disconnectAllBlockedClients`): otherwise the master's writes would
/// serve them on the replica and the datasets would part (Redis issue
/// #2473). Clients held by CLIENT PAUSE stay.
fn disconnect_blocked_clients(server: &Server) {
    for h in server.clients.all() {
        let w = h.blocked.lock().clone();
        if let Some(w) = w {
            if w.claim() {
                w.wake(crate::db::blocking::Wake::StateChanged);
            }
        }
    }
}

/// [`follow`], as the last step of a FAILOVER when `failover` (the
/// handshake then asks the target to become a master).
pub fn follow_with(server: &Arc<Server>, host: String, port: u16, failover: bool) {
    disconnect_blocked_clients(server);
    let r = &server.repl;
    let gen = r.generation.fetch_add(1, Ordering::SeqCst) + 1;
    let was_master = {
        let mut m = r.master.lock();
        let was = m.is_none();
        *m = Some(crate::repl::MasterLink {
            host,
            port,
            failover,
        });
        was
    };
    if was_master {
        // What this server has is what it can continue from (PSYNC2:
        // a former master continues with the new master's stream).
        r.processed.store(r.backlog.end(), Ordering::SeqCst);
    }
    r.backlog.set_replica_mode(true);
    r.own_ttl_keys.lock().clear();
    // Reads report a logically expired key missing without deleting it
    // (the master's DEL does), as Redis 7.0 replicas; nothing of this
    // server's own is recorded for the backlog (it gets the master's
    // bytes).
    server
        .propagation
        .set_user(crate::propagate::USER_REPLICA, true);
    server
        .propagation
        .set_user(crate::propagate::USER_REPL, false);
    kill_link(server);
    disconnect_replicas(server);
    r.link_state.store(link::CONNECT, Ordering::SeqCst);
    r.link_down_since_ms.store(0, Ordering::Relaxed);
    let s = server.clone();
    let _ = std::thread::Builder::new()
        .name("ferrokv-repl".into())
        .spawn(move || link_loop(&s, gen));
}

/// REPLICAOF NO ONE: the replica becomes a master. Its history continues
/// under a new replication id; the old one stays valid up to the current
/// offset (`master_replid2`), so the replicas of the former master can
/// continue from this server with a partial resynchronisation.
pub fn promote(server: &Arc<Server>) {
    let r = &server.repl;
    r.generation.fetch_add(1, Ordering::SeqCst);
    *r.master.lock() = None;
    kill_link(server);
    let offset = r.processed.load(Ordering::SeqCst);
    if !r.backlog.active() {
        let size = server.config.read().get_u64("repl-backlog-size") as usize;
        r.backlog.create(offset, size);
    }
    r.shift_id(offset);
    r.backlog.set_db(-1);
    r.backlog.set_replica_mode(false);
    // Active expiry covers every key again.
    r.own_ttl_keys.lock().clear();
    server
        .propagation
        .set_user(crate::propagate::USER_REPL, true);
    server
        .propagation
        .set_user(crate::propagate::USER_REPLICA, false);
    r.link_state.store(link::CONNECT, Ordering::SeqCst);
    // Our replicas learn the new id by reconnecting (+CONTINUE <new id>).
    disconnect_replicas(server);
}

/// Closes the current link to the master, if any.
fn kill_link(server: &Server) {
    let id = server.repl.master_client_id.swap(0, Ordering::SeqCst);
    if id != 0 {
        if let Some(h) = server.clients.get(id) {
            h.kill();
        }
    }
}

/// Disconnects every replica of this server.
fn disconnect_replicas(server: &Server) {
    let ids: Vec<u64> = server
        .repl
        .replicas
        .lock()
        .iter()
        .map(|x| x.client_id)
        .collect();
    for id in ids {
        if let Some(h) = server.clients.get(id) {
            h.kill();
        }
    }
}

/// True while generation `gen` is the current REPLICAOF.
fn current(server: &Server, gen: u64) -> bool {
    server.repl.generation.load(Ordering::SeqCst) == gen
        && !server.shutting_down.load(Ordering::Relaxed)
}

fn link_loop(server: &Arc<Server>, gen: u64) {
    let mut first = true;
    while current(server, gen) {
        if !first {
            // Reconnect once a second (replicationCron).
            std::thread::sleep(Duration::from_secs(1));
            if !current(server, gen) {
                break;
            }
        }
        first = false;
        let (host, port) = match server.repl.master.lock().as_ref() {
            Some(m) => (m.host.clone(), m.port),
            None => return,
        };
        tracing::info!("Connecting to MASTER {host}:{port}");
        match run_link(server, gen, &host, port) {
            Ok(()) => {}
            Err(e) => {
                let r = &server.repl;
                let silent_ms =
                    crate::util::now_ms().saturating_sub(r.link_last_io_ms.load(Ordering::Relaxed));
                if r.link_state.load(Ordering::SeqCst) == link::TRANSFER
                    && silent_ms >= r.timeout_s.load(Ordering::Relaxed) * 1000
                {
                    // Redis's replicationCron texts.
                    tracing::warn!("Timeout receiving bulk data from MASTER... If the problem persists try to set the 'repl-timeout' parameter in redis.conf to a larger value.");
                } else if e.starts_with("MASTER timeout") || e.starts_with("Timeout connecting") {
                    tracing::warn!("{e}");
                } else {
                    tracing::warn!("Replication link with {host}:{port}: {e}");
                }
                if server
                    .repl
                    .master
                    .lock()
                    .as_ref()
                    .is_some_and(|m| m.failover)
                {
                    // The target could not be made a master: this server
                    // stays the master (replication.c abortFailover).
                    super::failover::abort(server, "Failover target rejected psync request");
                    return;
                }
            }
        }
        let r = &server.repl;
        r.master_client_id.store(0, Ordering::SeqCst);
        if current(server, gen) {
            r.link_state.store(link::CONNECT, Ordering::SeqCst);
            r.link_down_since_ms
                .store(crate::util::now_ms(), Ordering::Relaxed);
        }
    }
}

type LinkResult = Result<(), String>;

fn io_err(what: &str) -> impl Fn(std::io::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Sends a command as a RESP multibulk.
fn send_cmd(w: &mut LinkStream, args: &[&[u8]]) -> std::io::Result<()> {
    let mut b = Vec::new();
    crate::propagate::encode(&mut b, args);
    w.write_all(&b)
}

/// Reads one reply line (without CRLF), skipping the empty lines a
/// master sends as keep-alives while it prepares the RDB.
fn read_line(r: &mut BufReader<LinkStream>) -> Result<String, String> {
    loop {
        let mut line = Vec::new();
        let n = r.read_until(b'\n', &mut line).map_err(|e| {
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) {
                "Timeout connecting to the MASTER...".to_string()
            } else {
                format!("reading from master: {e}")
            }
        })?;
        if n == 0 {
            return Err("connection closed by master".into());
        }
        while line.last().is_some_and(|&b| b == b'\n' || b == b'\r') {
            line.pop();
        }
        if !line.is_empty() {
            return Ok(String::from_utf8_lossy(&line).into_owned());
        }
    }
}

/// The replica's link to its master: a TCP socket, or a TLS session over
/// one (`tls-replication yes`, Redis's `connCreateTLS` in
/// connectWithMaster). The link thread reads and writes from one thread,
/// so the reader and the writer share the stream through `Rc<RefCell>`.
#[derive(Clone)]
pub struct LinkStream {
    inner: Rc<RefCell<LinkInner>>,
    tcp: Rc<TcpStream>,
}

enum LinkInner {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl LinkStream {
    fn plain(sock: TcpStream) -> Result<LinkStream, String> {
        let tcp = Rc::new(sock.try_clone().map_err(io_err("socket"))?);
        Ok(LinkStream {
            inner: Rc::new(RefCell::new(LinkInner::Plain(sock))),
            tcp,
        })
    }

    /// Completes a TLS handshake with the master over `sock`. Errors: the
    /// TLS configuration or the handshake failed (the text Redis logs
    /// after "Error condition on socket for SYNC").
    fn tls(server: &Server, sock: TcpStream, host: &str) -> Result<LinkStream, String> {
        let cfg = server
            .tls
            .client_config()
            .map_err(|e| format!("TLS: {e}"))?;
        let name = rustls_pki_types::ServerName::try_from(host.to_string())
            .map_err(|e| format!("TLS: master name {host}: {e}"))?;
        let conn = rustls::ClientConnection::new(cfg, name).map_err(|e| format!("TLS: {e}"))?;
        let tcp = Rc::new(sock.try_clone().map_err(io_err("socket"))?);
        let mut s = rustls::StreamOwned::new(conn, sock);
        while s.conn.is_handshaking() {
            s.conn
                .complete_io(&mut s.sock)
                .map_err(|e| format!("Error condition on socket for SYNC: TLS handshake: {e}"))?;
        }
        Ok(LinkStream {
            inner: Rc::new(RefCell::new(LinkInner::Tls(Box::new(s)))),
            tcp,
        })
    }

    /// True for a TLS link.
    pub fn is_tls(&self) -> bool {
        matches!(&*self.inner.borrow(), LinkInner::Tls(_))
    }

    /// The underlying socket (timeouts, addresses, shutdown).
    pub fn tcp(&self) -> &TcpStream {
        &self.tcp
    }
}

impl Read for LinkStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut *self.inner.borrow_mut() {
            LinkInner::Plain(s) => s.read(buf),
            LinkInner::Tls(s) => s.read(buf),
        }
    }
}

impl Write for LinkStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut *self.inner.borrow_mut() {
            LinkInner::Plain(s) => s.write(buf),
            LinkInner::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut *self.inner.borrow_mut() {
            LinkInner::Plain(s) => s.flush(),
            LinkInner::Tls(s) => s.flush(),
        }
    }
}

/// Connects to the master at `addr` within `timeout`, from `source` when
/// it is a valid local address (`bind-source-addr`); when binding to it
/// fails the connection is made from any address, as Redis's
/// `anetTcpNonBlockBestEffortBindConnect` does.
fn connect_from(
    addr: &std::net::SocketAddr,
    source: &str,
    timeout: Duration,
) -> std::io::Result<TcpStream> {
    let Ok(ip) = source.parse::<std::net::IpAddr>() else {
        return TcpStream::connect_timeout(addr, timeout);
    };
    let domain = socket2::Domain::for_address(*addr);
    let sock = socket2::Socket::new(domain, socket2::Type::STREAM, None)?;
    if sock.bind(&std::net::SocketAddr::new(ip, 0).into()).is_err() {
        return TcpStream::connect_timeout(addr, timeout);
    }
    sock.connect_timeout(&(*addr).into(), timeout)?;
    Ok(sock.into())
}

fn run_link(server: &Arc<Server>, gen: u64, host: &str, port: u16) -> LinkResult {
    let r = &server.repl;
    let timeout = Duration::from_secs(server.config.read().get_u64("repl-timeout").max(1));
    r.link_state.store(link::CONNECTING, Ordering::SeqCst);
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .map_err(io_err("resolving master"))?
        .next()
        .ok_or("master address not found")?;
    let source = server.config.read().get("bind-source-addr").to_string();
    let sock = connect_from(&addr, &source, timeout).map_err(|e| {
        if e.kind() == std::io::ErrorKind::TimedOut {
            "Timeout connecting to the MASTER...".to_string()
        } else {
            format!("connecting: {e}")
        }
    })?;
    let _ = sock.set_nodelay(true);
    sock.set_read_timeout(Some(timeout))
        .map_err(io_err("socket"))?;
    let tls = server.config.read().get_bool("tls-replication");
    let mut w = if tls {
        LinkStream::tls(server, sock, host)?
    } else {
        LinkStream::plain(sock)?
    };
    let mut rd = BufReader::with_capacity(256 * 1024, w.clone());
    tracing::info!("MASTER <-> REPLICA sync started");
    // The master client: in CLIENT LIST (flag M), killable.
    let handle = {
        use std::os::fd::AsRawFd;
        let laddr = w
            .tcp()
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        let h = crate::clients::new_handle(
            &server.clients,
            server.clock.now_ms(),
            addr.to_string(),
            laddr,
            w.tcp().as_raw_fd(),
            false,
        );
        h.info.lock().flags.insert(0, 'M');
        server.clients.add(h.clone());
        h
    };
    r.master_client_id.store(handle.id, Ordering::SeqCst);
    let res = handshake_and_stream(server, gen, &mut w, &mut rd, &handle);
    server.clients.remove(handle.id);
    let _ = w.tcp().shutdown(std::net::Shutdown::Both);
    res
}

fn handshake_and_stream(
    server: &Arc<Server>,
    gen: u64,
    w: &mut LinkStream,
    rd: &mut BufReader<LinkStream>,
    handle: &Arc<crate::clients::ClientHandle>,
) -> LinkResult {
    let r = &server.repl;
    send_cmd(w, &[b"PING"]).map_err(io_err("PING"))?;
    let pong = read_line(rd)?;
    if pong.starts_with('-')
        && !pong.starts_with("-NOAUTH")
        && !pong.starts_with("-NOPERM")
        && !pong.starts_with("-ERR operation not permitted")
    {
        return Err(format!("Error reply to PING from master: '{pong}'"));
    }
    tracing::info!("Master replied to PING, replication can continue...");
    let (user, pass, announce_ip, announce_port) = {
        let c = server.config.read();
        (
            c.get("masteruser").to_string(),
            c.get("masterauth").to_string(),
            c.get("replica-announce-ip").to_string(),
            c.get_u64("replica-announce-port"),
        )
    };
    if !pass.is_empty() {
        if user.is_empty() {
            send_cmd(w, &[b"AUTH", pass.as_bytes()])
        } else {
            send_cmd(w, &[b"AUTH", user.as_bytes(), pass.as_bytes()])
        }
        .map_err(io_err("AUTH"))?;
        let ok = read_line(rd)?;
        if ok.starts_with('-') {
            return Err(format!("Unable to AUTH to MASTER: {ok}"));
        }
    }
    // Redis's syncWithMaster: the TLS port when the link is TLS.
    let tls_port = server.config.read().get_u64("tls-port");
    let port = if announce_port != 0 {
        announce_port
    } else if w.is_tls() && tls_port != 0 {
        tls_port
    } else {
        server.bound_port.load(Ordering::Relaxed)
    };
    send_cmd(
        w,
        &[b"REPLCONF", b"listening-port", port.to_string().as_bytes()],
    )
    .map_err(io_err("REPLCONF"))?;
    let reply = read_line(rd)?;
    if reply.starts_with('-') {
        tracing::info!(
            "(Non critical) Master does not understand REPLCONF listening-port: {reply}"
        );
    }
    if !announce_ip.is_empty() {
        send_cmd(w, &[b"REPLCONF", b"ip-address", announce_ip.as_bytes()])
            .map_err(io_err("REPLCONF"))?;
        let reply = read_line(rd)?;
        if reply.starts_with('-') {
            tracing::info!(
                "(Non critical) Master does not understand REPLCONF ip-address: {reply}"
            );
        }
    }
    send_cmd(w, &[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"]).map_err(io_err("REPLCONF"))?;
    let reply = read_line(rd)?;
    if reply.starts_with('-') {
        tracing::info!("(Non critical) Master does not understand REPLCONF capa: {reply}");
    }
    // PSYNC with what this server has, if anything.
    let (replid, offset) = {
        let ids = r.ids.lock();
        (ids.replid.clone(), r.processed.load(Ordering::SeqCst))
    };
    let have_history = r.backlog.active() || offset > 0;
    let failover = r.master.lock().as_ref().is_some_and(|m| m.failover);
    let mut psync: Vec<Vec<u8>> = if have_history {
        tracing::info!(
            "Trying a partial resynchronization (request {replid}:{}).",
            offset + 1
        );
        vec![
            b"PSYNC".to_vec(),
            replid.clone().into_bytes(),
            (offset + 1).to_string().into_bytes(),
        ]
    } else {
        tracing::info!("Partial resynchronization not possible (no cached master)");
        vec![b"PSYNC".to_vec(), b"?".to_vec(), b"-1".to_vec()]
    };
    if failover {
        // A master failing over asks its target to become a master.
        psync.push(b"FAILOVER".to_vec());
    }
    let parts: Vec<&[u8]> = psync.iter().map(Vec::as_slice).collect();
    send_cmd(w, &parts).map_err(io_err("PSYNC"))?;
    let reply = read_line(rd)?;
    if failover {
        if reply.starts_with("+CONTINUE") || reply.starts_with("+FULLRESYNC") {
            super::failover::finished(server);
        } else {
            // Logged with Redis's text; the failover is then aborted
            // ("FAILOVER to .. aborted: Failover target rejected psync
            // request", once, as replication.c's abortFailover).
            return Err(format!("Unexpected reply to PSYNC from master: {reply}"));
        }
    }
    let db;
    if let Some(rest) = reply.strip_prefix("+FULLRESYNC") {
        let mut it = rest.split_whitespace();
        let id = it.next().unwrap_or_default().to_string();
        let off: u64 = it
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad FULLRESYNC reply: {reply}"))?;
        if id.len() != 40 {
            // Redis blanks its replid and goes on; a reply this broken
            // is not worth trusting: the link retries.
            return Err("Master replied with wrong +FULLRESYNC syntax.".into());
        }
        tracing::info!("Full resync from master: {id}:{off}");
        full_sync(server, gen, rd, id, off)?;
        db = 0;
    } else if let Some(rest) = reply.strip_prefix("+CONTINUE") {
        let new_id = rest.trim();
        if !new_id.is_empty() && new_id != replid {
            // The master changed id (a promoted replica): our history
            // continues under the new one.
            let mut ids = r.ids.lock();
            ids.replid2 = std::mem::replace(&mut ids.replid, new_id.to_string());
            ids.second_offset = offset as i64 + 1;
            drop(ids);
            disconnect_replicas(server);
        }
        tracing::info!("Successful partial resynchronization with master.");
        db = r.master_db.load(Ordering::Relaxed) as usize;
        if !r.backlog.active() {
            let size = server.config.read().get_u64("repl-backlog-size") as usize;
            r.backlog.create(offset, size);
        }
    } else if reply.starts_with("-NOMASTERLINK") || reply.starts_with("-LOADING") {
        return Err(format!(
            "Master is currently unable to PSYNC but should be in the future: {reply}"
        ));
    } else {
        return Err(format!("Unexpected reply to PSYNC from master: {reply}"));
    }
    r.link_state.store(link::CONNECTED, Ordering::SeqCst);
    r.link_last_io_ms
        .store(crate::util::now_ms(), Ordering::Relaxed);
    tracing::info!("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization or Finished with success.");
    apply_stream(server, gen, w, rd, handle, db)
}

/// Receives and loads the RDB of a full resynchronisation at `offset` of
/// the master's history `replid`.
fn full_sync(
    server: &Arc<Server>,
    gen: u64,
    rd: &mut BufReader<LinkStream>,
    replid: String,
    offset: u64,
) -> LinkResult {
    let r = &server.repl;
    r.link_state.store(link::TRANSFER, Ordering::SeqCst);
    r.link_last_io_ms
        .store(crate::util::now_ms(), Ordering::Relaxed);
    let header = read_line(rd)?;
    let Some(spec) = header.strip_prefix('$') else {
        return Err(format!("Bad protocol from MASTER, the first byte is not '$' (we received '{header}'), are you sure the host and port are right?"));
    };
    // A mark is 40 bytes (CONFIG_RUN_ID_SIZE); a shorter one would make a
    // few bytes of the payload end the transfer.
    let eof_mark = match spec.strip_prefix("EOF:") {
        Some(m) if m.len() >= 40 => Some(m.as_bytes()[..40].to_vec()),
        Some(_) => return Err(format!("Bad EOF mark from MASTER: '{header}'")),
        None => None,
    };
    let len: i64 = if eof_mark.is_some() {
        -1
    } else {
        spec.parse()
            .map_err(|_| format!("bad bulk length '{spec}'"))?
    };
    r.transfer_size.store(len, Ordering::Relaxed);
    r.transfer_read.store(0, Ordering::Relaxed);
    // repl-diskless-load: `disabled` (the default) and `swapdb` first
    // receive the whole RDB into a file, so a transfer that fails keeps
    // the old dataset; `on-empty-db` loads straight from the socket when
    // there is nothing to lose.
    let mode = server.config.read().get("repl-diskless-load").to_string();
    let empty = (0..server.keyspace.db_count()).all(|i| server.keyspace.db(i).is_empty());
    let from_socket = mode == "on-empty-db" && empty;
    tracing::info!(
        "MASTER <-> REPLICA sync: receiving {}",
        match (len < 0, from_socket) {
            (true, true) => "streamed RDB from master with EOF to parser".to_string(),
            (true, false) => "streamed RDB from master with EOF to disk".to_string(),
            (false, true) => format!("{len} bytes from master to parser"),
            (false, false) => format!("{len} bytes from master to disk"),
        }
    );
    let opts = crate::persist::rdb::LoadOpts {
        keep_expired: true,
        ..Default::default()
    };
    let mut counted = Counted {
        inner: rd,
        n: 0,
        server,
    };
    let mark = eof_mark.unwrap_or_default();
    // From the flush on until the load ends, clients get -LOADING; a load
    // that fails leaves an empty dataset, not a half-loaded one (Redis's
    // readSyncBulkPayload: emptyData after a failed rdbLoad).
    let started = std::cell::Cell::new(false);
    let _loading = LoadingFlag(server);
    let start_load = |server: &Arc<Server>| {
        started.set(true);
        start_load(server);
    };
    let loaded: Result<_, String> = if from_socket {
        (|| {
            start_load(server);
            if len >= 0 {
                let mut t = (&mut counted).take(len as u64);
                let st = crate::persist::rdb::load(&**server, &mut t, opts)
                    .map_err(|e| e.to_string())?;
                // Bytes after the RDB's checksum inside the bulk (none expected).
                std::io::copy(&mut t, &mut std::io::sink()).map_err(io_err("reading RDB"))?;
                Ok(st)
            } else {
                let st = crate::persist::rdb::load(&**server, &mut counted, opts)
                    .map_err(|e| e.to_string())?;
                let mut got = vec![0u8; mark.len()];
                counted
                    .read_exact(&mut got)
                    .map_err(io_err("reading EOF mark"))?;
                if got != mark {
                    return Err("RDB transfer ended without its EOF mark".into());
                }
                Ok(st)
            }
        })()
    } else {
        let path = std::path::PathBuf::from(format!("temp-{}.{}.rdb", std::process::id(), offset));
        let res = receive_to_file(&mut counted, &path, len, &mark).and_then(|()| {
            // A REPLICAOF (NO ONE or another master) during the transfer
            // cancels it: the dataset and the ids stay this server's.
            if !current(server, gen) {
                return Err("transfer cancelled by REPLICAOF".into());
            }
            start_load(server);
            let f = std::fs::File::open(&path).map_err(io_err("opening the received RDB"))?;
            crate::persist::rdb::load(&**server, BufReader::with_capacity(1 << 20, f), opts)
                .map_err(|e| e.to_string())
        });
        let _ = std::fs::remove_file(&path);
        res
    };
    let loaded = match loaded {
        Ok(l) => l,
        Err(e) => {
            if started.get() {
                tracing::warn!(
                    "Failed trying to load the MASTER synchronization DB from socket or disk: {e}"
                );
                crate::persist::rdb::empty_all(&**server);
            }
            return Err(e);
        }
    };
    if !current(server, gen) {
        // Promoted (or pointed elsewhere) while loading from the socket:
        // the ids and offset are not the old master's.
        return Err("load finished after REPLICAOF changed the master".into());
    }
    tracing::info!(
        "Done loading RDB, keys loaded: {}, keys expired: {}.",
        loaded.loaded,
        loaded.expired
    );
    r.new_history(Some(replid));
    let size = server.config.read().get_u64("repl-backlog-size") as usize;
    if r.backlog.active() {
        r.backlog.reset_to(offset);
    } else {
        r.backlog.create(offset, size);
        r.backlog.reset_to(offset);
    }
    r.processed.store(offset, Ordering::SeqCst);
    r.master_db.store(0, Ordering::Relaxed);
    Ok(())
}

/// Sets `repl.loading` for its lifetime.
struct LoadingFlag<'a>(&'a Arc<Server>);

impl Drop for LoadingFlag<'_> {
    fn drop(&mut self) {
        self.0.repl.loading.store(false, Ordering::Relaxed);
    }
}

/// The received RDB replaces the dataset: the replica's own replicas go
/// (they cannot follow a new history) and the databases are emptied.
fn start_load(server: &Arc<Server>) {
    server.repl.loading.store(true, Ordering::Relaxed);
    disconnect_replicas(server);
    tracing::info!("MASTER <-> REPLICA sync: Flushing old data");
    let lazy = server.config.read().get_bool("replica-lazy-flush");
    crate::persist::rdb::empty_all_with(&**server, lazy);
    tracing::info!("MASTER <-> REPLICA sync: Loading DB in memory");
}

/// Receives the RDB payload into `path`: `len` bytes, or (len < 0) up to
/// the EOF `mark`, leaving what follows the mark (the stream) unread.
fn receive_to_file(
    rd: &mut Counted<'_>,
    path: &std::path::Path,
    len: i64,
    mark: &[u8],
) -> LinkResult {
    let f = std::fs::File::create(path).map_err(io_err("creating the RDB file"))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    if len >= 0 {
        let n = std::io::copy(&mut rd.take(len as u64), &mut w).map_err(io_err("reading RDB"))?;
        if n != len as u64 {
            return Err("connection lost during the RDB transfer".into());
        }
    } else {
        let finder = memchr::memmem::Finder::new(mark);
        let mut carry: Vec<u8> = Vec::new();
        loop {
            let avail = rd.fill()?;
            let fresh = avail.len();
            let mut combined = std::mem::take(&mut carry);
            let old = combined.len();
            combined.extend_from_slice(avail);
            if let Some(i) = finder.find(&combined) {
                w.write_all(&combined[..i]).map_err(io_err("writing RDB"))?;
                rd.consume(i + mark.len() - old);
                break;
            }
            let keep = combined.len().min(mark.len().saturating_sub(1));
            w.write_all(&combined[..combined.len() - keep])
                .map_err(io_err("writing RDB"))?;
            carry = combined[combined.len() - keep..].to_vec();
            rd.consume(fresh);
        }
    }
    let f = w
        .into_inner()
        .map_err(|e| format!("writing RDB: {}", e.error()))?;
    f.sync_all().map_err(io_err("syncing RDB"))?;
    Ok(())
}

/// Counts the RDB bytes received (INFO master_sync_read_bytes).
struct Counted<'a> {
    inner: &'a mut BufReader<LinkStream>,
    n: u64,
    server: &'a Server,
}

impl Counted<'_> {
    /// The buffered bytes, reading more when there are none (EOF is an
    /// error: the transfer is incomplete).
    fn fill(&mut self) -> Result<&[u8], String> {
        loop {
            match self.inner.fill_buf() {
                Ok([]) => return Err("connection lost during the RDB transfer".into()),
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("reading RDB: {e}")),
            }
        }
        self.server
            .repl
            .link_last_io_ms
            .store(crate::util::now_ms(), Ordering::Relaxed);
        Ok(self.inner.buffer())
    }

    fn consume(&mut self, n: usize) {
        self.inner.consume(n);
        self.n += n as u64;
        self.server
            .repl
            .transfer_read
            .store(self.n, Ordering::Relaxed);
    }
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.n += n as u64;
        self.server
            .repl
            .transfer_read
            .store(self.n, Ordering::Relaxed);
        self.server
            .repl
            .link_last_io_ms
            .store(crate::util::now_ms(), Ordering::Relaxed);
        Ok(n)
    }
}

/// Applies the master's stream until the link fails or is replaced.
/// `db`: the database the stream has selected (usize::MAX: unknown
/// after a partial resynchronisation; the master client keeps 0 until
/// the stream selects).
fn apply_stream(
    server: &Arc<Server>,
    gen: u64,
    w: &mut LinkStream,
    rd: &mut BufReader<LinkStream>,
    handle: &Arc<crate::clients::ClientHandle>,
    db: usize,
) -> LinkResult {
    let r = &server.repl;
    let timeout_ms = server.config.read().get_u64("repl-timeout").max(1) * 1000;
    rd.get_ref()
        .tcp()
        .set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(io_err("socket"))?;
    let mut client = Client::new(handle.clone());
    client.authenticated = true;
    client.deny_blocking = true;
    client.is_master = true;
    if db != usize::MAX {
        client.db = db;
    }
    let mut out = Out::new();
    let stats = server.stats.local(crate::cmd::table().all.len());
    let mut parser = RequestParser::default();
    let mut buf: Vec<u8> = Vec::with_capacity(256 * 1024);
    let mut last_ack = Instant::now() - Duration::from_secs(2);
    r.read_ahead.store(0, Ordering::Release);
    loop {
        if !current(server, gen) || handle.killed.load(Ordering::Relaxed) {
            return Ok(());
        }
        if last_ack.elapsed() >= Duration::from_secs(1) {
            send_ack(w, r.processed.load(Ordering::SeqCst)).map_err(io_err("ACK"))?;
            last_ack = Instant::now();
        }
        let avail = match rd.fill_buf() {
            Ok([]) => return Err("connection closed by master".into()),
            Ok(b) => b.len(),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                let last = r.link_last_io_ms.load(Ordering::Relaxed);
                if crate::util::now_ms().saturating_sub(last) > timeout_ms {
                    return Err("MASTER timeout: no data nor PING received...".into());
                }
                if buf.is_empty() {
                    continue;
                }
                // Requests held back by a pause: try them again.
                0
            }
            Err(e) => return Err(format!("reading from master: {e}")),
        };
        if avail > 0 {
            buf.extend_from_slice(&rd.buffer()[..avail]);
            rd.consume(avail);
            r.link_last_io_ms
                .store(crate::util::now_ms(), Ordering::Relaxed);
        }
        let mut consumed = 0;
        client.clock_us = server.clock.now_us();
        // Keys of the requests ahead are prefetched, as a connection does
        // for a pipelined batch (net/resp.rs).
        let mut ahead = 0usize;
        let mut hashes = [0u64; PREFETCH_AHEAD];
        let (mut front, mut queued) = (0usize, 0usize);
        loop {
            if queued > 0 {
                front = (front + 1) % PREFETCH_AHEAD;
                queued -= 1;
            }
            let db = server
                .keyspace
                .db(client.db.min(server.keyspace.db_count() - 1));
            while queued < PREFETCH_AHEAD {
                let at = ahead.max(consumed);
                match crate::resp::parse::peek_key(&buf[at..]) {
                    Some((ks, ke, len)) => {
                        hashes[(front + queued) % PREFETCH_AHEAD] =
                            db.prefetch(&buf[at + ks..at + ke]);
                        ahead = at + len;
                        queued += 1;
                    }
                    None => break,
                }
            }
            // Halfway: the bucket has arrived, fetch its entry.
            if queued >= PREFETCH_AHEAD / 2 {
                db.prefetch_entry(hashes[(front + PREFETCH_AHEAD / 2 - 1) % PREFETCH_AHEAD]);
            }
            let n = match parser.parse(&buf[consumed..]) {
                Ok(Parsed::Request(n)) => n,
                Ok(Parsed::Incomplete) => break,
                Err(e) => return Err(format!("protocol error from master: {}", e.message())),
            };
            let bytes_at = consumed;
            consumed += n;
            let args = parser.args(&buf[bytes_at..]);
            if args.is_empty() {
                r.processed.fetch_add(n as u64, Ordering::SeqCst);
                continue;
            }
            let name = args.get(0);
            let getack = name.eq_ignore_ascii_case(b"replconf")
                && args.len() >= 2
                && args.get(1).eq_ignore_ascii_case(b"getack");
            let ping = name.eq_ignore_ascii_case(b"ping");
            // CLIENT PAUSE holds the master client back as any other
            // (Redis 7.0's processCommand; only replicas are never
            // paused): `execute` postpones a command the pause holds, and
            // the two requests answered here wait under ALL. Held requests
            // stay in `buf` (the read offset runs ahead of the applied
            // one) and are tried again after the next read or timeout.
            let held = (getack || ping)
                && server.pause.kind_at(client.clock_us / 1000) == crate::pause::ALL;
            if held {
                consumed = bytes_at;
                parser.release_big();
                break;
            }
            if getack {
                // The offset before this request (Redis updates the
                // master client's offset after the command).
                send_ack(w, r.processed.load(Ordering::SeqCst)).map_err(io_err("ACK"))?;
                last_ack = Instant::now();
            } else if !ping {
                crate::cmd::execute(server, &mut client, &mut out, &args, &stats);
                if client.postponed.take().is_some() {
                    consumed = bytes_at;
                    parser.release_big();
                    break;
                }
                if out.buf.first() == Some(&b'-') {
                    master_command_failed(server, name, &out.buf);
                }
                out.buf.clear();
            }
            parser.release_big();
            r.processed.fetch_add(n as u64, Ordering::SeqCst);
        }
        // Sub-replicas get the master's bytes as they are, once per read.
        r.backlog.feed(&buf[..consumed]);
        r.master_db.store(client.db as u64, Ordering::Relaxed);
        buf.drain(..consumed);
        r.read_ahead.store(buf.len() as u64, Ordering::Release);
    }
}

/// A command of the master's stream replied with an error (`reply`, the
/// RESP error frame): the replica's copy may now differ from the master's.
/// Logged as Redis 7.0's `afterErrorReply` does for its master client
/// (`== CRITICAL == This replica is sending an error to its master:
/// '<error>' after processing the command '<name>'`), counted in INFO
/// `unexpected_error_replies`; with `propagation-error-behavior` `panic`
/// or `panic-on-replicas` the replica stops, as Redis's serverPanic does.
fn master_command_failed(server: &Server, name: &[u8], reply: &[u8]) {
    let text = crate::cmd::replay::logged_error_text(reply);
    let cmd = if crate::cmd::table().lookup(name).is_some() {
        String::from_utf8_lossy(name).to_ascii_lowercase()
    } else {
        "<unknown>".to_string()
    };
    tracing::warn!(
        "== CRITICAL == This replica is sending an error to its master: '{text}' after processing the command '{cmd}'"
    );
    server
        .stats
        .unexpected_error_replies
        .fetch_add(1, Ordering::Relaxed);
    let behaviour = server
        .config
        .read()
        .get("propagation-error-behavior")
        .to_string();
    if behaviour == "panic" || behaviour == "panic-on-replicas" {
        tracing::error!(
            "Guru Meditation: This replica panicked sending an error to its master after processing the command '{cmd}'"
        );
        std::process::abort();
    }
}

/// Requests whose keys are prefetched ahead of the one applied.
const PREFETCH_AHEAD: usize = 8;

fn send_ack(w: &mut LinkStream, offset: u64) -> std::io::Result<()> {
    send_cmd(w, &[b"REPLCONF", b"ACK", offset.to_string().as_bytes()])
}

/// A write command of a client of a writable replica (`replica-read-only
/// no`) ran on database `db`: those of its keys `keys` that now have a TTL
/// are remembered, so the replica expires them itself (Redis's
/// `rememberSlaveKeyWithExpire`, which `setExpire` calls for clients other
/// than the master). Redis remembers a key when the command set its TTL;
/// here a key the command touched that has a TTL at all is remembered.
pub fn remember_own_ttl_keys<'a>(server: &Server, db: usize, keys: impl Iterator<Item = &'a [u8]>) {
    if db >= server.keyspace.db_count() {
        return;
    }
    let d = server.keyspace.db(db);
    for key in keys {
        let h = crate::db::dict::hash_key(key);
        if d.lock(h).expire_at(h, key) != 0 {
            server
                .repl
                .own_ttl_keys
                .lock()
                .insert((db as u32, key.into()));
        }
    }
}

/// The active expiry of a replica (Redis's `expireSlaveKeys`, run by
/// `databasesCron` where a master runs `activeExpireCycle`): the keys its
/// own clients wrote with a TTL ([`remember_own_ttl_keys`]) are deleted
/// once expired; keys from the master wait for the master's DEL. Forgets
/// keys that are gone or no longer have a TTL.
pub fn expire_own_keys(server: &Arc<Server>) {
    let keys: Vec<(u32, Box<[u8]>)> = {
        let set = server.repl.own_ttl_keys.lock();
        if set.is_empty() {
            return;
        }
        set.iter().cloned().collect()
    };
    if !server
        .keyspace
        .active_expire_enabled
        .load(Ordering::Relaxed)
    {
        return;
    }
    let now = server.clock.now_ms();
    let mut forget = Vec::new();
    crate::tx::background_step(&server.tx_env(), &**server, &mut || {
        for (db, key) in &keys {
            match server.keyspace.expire_key_if_due(*db as usize, key, now) {
                Some(false) => {}
                _ => forget.push((*db, key.clone())),
            }
        }
    });
    let mut set = server.repl.own_ttl_keys.lock();
    for k in forget {
        set.remove(&k);
    }
}
