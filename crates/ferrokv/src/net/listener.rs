//! Listeners: TCP on every `bind` address and, when `unixsocket` is set, a
//! unix socket. Accepted TCP sockets get TCP_NODELAY and keepalive
//! (`tcp-keepalive` seconds), as Redis sets them. A connection beyond
//! `maxclients` gets "-ERR max number of clients reached" and is closed.

use super::connection::serve;
use crate::clients::new_handle;
use crate::server::Server;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, UnixListener};

/// Binds one TCP address (`-` prefix = optional, as Redis's bind syntax;
/// `*` is every IPv4 address and `::*` every IPv6 one, as in Redis 7.0's
/// default `bind * -::*`). IPv6 listeners are IPV6_V6ONLY, as Redis's
/// `anetV6Only`, so `*` and `::*` can share a port. Returns None when an
/// optional address is unavailable. Needs a Tokio runtime.
pub fn bind_tcp(addr: &str, port: u16, backlog: u32) -> std::io::Result<Option<TcpListener>> {
    match crate::util::bind_tcp_std(addr, port, backlog)? {
        Some(l) => TcpListener::from_std(l).map(Some),
        None => Ok(None),
    }
}

fn set_keepalive(fd: i32, secs: u64) {
    if secs == 0 {
        return;
    }
    let on: libc::c_int = 1;
    let idle = secs as libc::c_int;
    let intvl = ((secs / 3).max(1)) as libc::c_int;
    let cnt: libc::c_int = 3;
    let sz = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: setsockopt with pointers to live c_ints of the given size.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_KEEPALIVE,
            &on as *const _ as *const _,
            sz,
        );
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_KEEPIDLE,
            &idle as *const _ as *const _,
            sz,
        );
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_KEEPINTVL,
            &intvl as *const _ as *const _,
            sz,
        );
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_KEEPCNT,
            &cnt as *const _ as *const _,
            sz,
        );
    }
}

/// Protected mode (Redis 7.0): `protected-mode yes` and a default user
/// without password refuse TCP clients from non-loopback addresses.
fn protected_mode_refuses(server: &Server, peer: std::net::IpAddr) -> bool {
    let protected = server.config.read().get_bool("protected-mode");
    protected && crate::acl::protected_mode_denies(true, server.acl.default_user().nopass, peer)
}

/// The rate limit of the "Accepting client connection" log line: when
/// descriptors run out (EMFILE), the pending connection stays queued and
/// every retry fails again, so at most one line a second is logged.
fn over_limit(server: &Server) -> bool {
    server.clients.len() as u64 >= server.live.maxclients.load(Ordering::Relaxed)
}

/// Counts an accepted TCP socket, sets TCP_NODELAY and keepalive, and
/// registers its client; None (socket closed, with Redis's error text)
/// when `maxclients` is reached. Returns the socket as a std socket (to be
/// registered with a worker's reactor) and the client's handle.
fn admit_tcp(
    server: &Arc<Server>,
    sock: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    tls: bool,
) -> Option<(std::net::TcpStream, Arc<crate::clients::ClientHandle>)> {
    admit_tcp_as(server, sock, peer, tls, Refusals::RESP)
}

/// The lines a refused connection gets, in its protocol.
#[derive(Clone, Copy)]
pub struct Refusals {
    /// Over `maxclients`.
    pub maxclients: &'static [u8],
    /// Refused by protected mode.
    pub protected: &'static [u8],
}

impl Refusals {
    /// Redis's.
    pub const RESP: Refusals = Refusals {
        maxclients: b"-ERR max number of clients reached\r\n",
        protected: crate::acl::PROTECTED_MODE_ERR.as_bytes(),
    };
    /// memcached's (its "Too many open connections"; protected mode as a
    /// server error).
    pub const MEMCACHED: Refusals = Refusals {
        maxclients: b"ERROR Too many open connections\r\n",
        protected: b"SERVER_ERROR DENIED Redis is running in protected mode: connect from the loopback interface or set a password\r\n",
    };
}

/// [`admit_tcp`] answering refusals with `refusals`.
fn admit_tcp_as(
    server: &Arc<Server>,
    sock: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    tls: bool,
    refusals: Refusals,
) -> Option<(std::net::TcpStream, Arc<crate::clients::ClientHandle>)> {
    server.stats.connections.fetch_add(1, Ordering::Relaxed);
    let _ = sock.set_nodelay(true);
    let fd = sock.as_raw_fd();
    if over_limit(server) {
        server
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        if !tls {
            tokio::spawn(async move {
                let mut sock = sock;
                let _ = sock.write_all(refusals.maxclients).await;
            });
        }
        // Over TLS the handshake has not happened, so the error cannot be
        // sent: Redis's write fails the same way and the socket is closed.
        return None;
    }
    if protected_mode_refuses(server, peer.ip()) {
        server
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        if !tls {
            tokio::spawn(async move {
                let mut sock = sock;
                let _ = sock.write_all(refusals.protected).await;
            });
        }
        return None;
    }
    set_keepalive(fd, server.live.tcp_keepalive.load(Ordering::Relaxed));
    let laddr = sock.local_addr().map(|a| a.to_string()).unwrap_or_default();
    let handle = new_handle(
        &server.clients,
        server.clock.now_ms(),
        peer.to_string(),
        laddr,
        fd,
        false,
    );
    handle.tls.store(tls, Ordering::Relaxed);
    server.clients.add(handle.clone());
    // Hand the socket to a worker: it must be registered with that
    // worker's reactor, so move it as a std socket.
    match sock.into_std() {
        Ok(s) => Some((s, handle)),
        Err(_) => {
            server.clients.remove(handle.id);
            None
        }
    }
}

/// Accepts TCP clients forever.
pub async fn accept_tcp(server: Arc<Server>, listener: TcpListener) {
    accept_tcp_as::<super::resp::RespCodec>(server, listener, Refusals::RESP).await
}

/// Accepts TCP clients forever, served with codec `C`, refusals answered
/// with `refusals` (RESP's, or memcached's for `memcached-port`).
pub async fn accept_tcp_as<C: super::codec::Codec + Send + 'static>(
    server: Arc<Server>,
    listener: TcpListener,
    refusals: Refusals,
) {
    loop {
        let (sock, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                server.net.accept_log.failed(&e);
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let Some((std_sock, handle)) = admit_tcp_as(&server, sock, peer, false, refusals) else {
            continue;
        };
        let s = server.clone();
        server.net.next_worker().spawn(async move {
            match tokio::net::TcpStream::from_std(std_sock) {
                Ok(sock) => super::connection::serve_with::<_, C>(s, sock, handle).await,
                Err(_) => s.clients.remove(handle.id),
            }
        });
    }
}

/// Accepts TLS clients forever (`tls-port`): the client is registered at
/// accept, as in Redis; the handshake runs on the client's worker thread
/// with the TLS context current at accept time and the `tls-auth-clients`
/// mode read then; the stream is then served by the same connection loop
/// as plain TCP. A failed handshake is logged as Redis logs it ("Error
/// accepting a client connection: ...") and closes the socket.
pub async fn accept_tls(server: Arc<Server>, listener: TcpListener) {
    loop {
        let (sock, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                server.net.accept_log.failed(&e);
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let Some((std_sock, handle)) = admit_tcp(&server, sock, peer, true) else {
            continue;
        };
        let mode = crate::tls::AuthClients::parse(server.config.read().get("tls-auth-clients"));
        let acceptor = match server.tls.acceptor(mode) {
            Ok(a) => a,
            Err(why) => {
                tracing::warn!("Error accepting a client connection: {why}");
                server.clients.remove(handle.id);
                continue;
            }
        };
        let s = server.clone();
        server.net.next_worker().spawn(async move {
            let Ok(sock) = tokio::net::TcpStream::from_std(std_sock) else {
                s.clients.remove(handle.id);
                return;
            };
            // A TLS connection opens with a handshake record (content type
            // 22). Anything else (a plain RESP client) is closed without a
            // TLS alert, as OpenSSL does for "wrong version number": the
            // client sees the connection reset, not stray bytes.
            let mut first = [0u8; 1];
            let fail = match sock.peek(&mut first).await {
                Ok(1) if first[0] == 0x16 => None,
                Ok(1) => Some("wrong version number (not a TLS handshake)".to_string()),
                _ => Some("connection closed before the TLS handshake".to_string()),
            };
            let fail = match fail {
                Some(f) => f,
                None => match acceptor.accept(sock).await {
                    Ok(tls) => return serve(s, tls, handle).await,
                    Err(e) => e.to_string(),
                },
            };
            tracing::warn!(
                "Error accepting a client connection: {fail} (conn: fd={} addr={})",
                handle.fd,
                handle.addr
            );
            s.clients.remove(handle.id);
        });
    }
}

/// Binds `port` on every bind address; an empty `bind` listens on no TCP
/// address (Redis's listenToPort with `bindaddr_count == 0`). Errors: a
/// mandatory address failed, or no address could be bound ("Failed
/// listening on any bind address").
fn bind_all(binds: &[String], port: u16, backlog: u32) -> std::io::Result<Vec<TcpListener>> {
    let mut out = Vec::new();
    if binds.is_empty() {
        return Ok(out);
    }
    for b in binds {
        if let Some(l) = bind_tcp(b, port, backlog)? {
            out.push(l);
        }
    }
    if out.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AddrNotAvailable,
            "Failed listening on any bind address",
        ));
    }
    Ok(out)
}

fn spawn_loops(
    server: &Arc<Server>,
    main: &tokio::runtime::Handle,
    listeners: Vec<TcpListener>,
    tls: bool,
) -> std::io::Result<Vec<crate::workers::AcceptLoop>> {
    use std::os::fd::AsFd;
    let mut out = Vec::with_capacity(listeners.len());
    for l in listeners {
        let fd = l.as_fd().try_clone_to_owned()?;
        let s = server.clone();
        let task = if tls {
            main.spawn(accept_tls(s, l)).abort_handle()
        } else {
            main.spawn(accept_tcp(s, l)).abort_handle()
        };
        out.push(crate::workers::AcceptLoop { task, fd });
    }
    Ok(out)
}

/// The start-up TCP sockets, bound and listening but not accepting yet
/// ([`bind_startup`], then [`listen`]).
pub struct Bound {
    tcp: Vec<TcpListener>,
    tls: Vec<TcpListener>,
    /// The plain port actually bound (0 when none).
    pub port: u16,
}

/// Binds the start-up TCP sockets before the dataset is loaded, so a port
/// in use stops the start-up at once ("Could not create server TCP
/// listening socket 127.0.0.1:6379: bind: Address already in use", as
/// Redis's `listenToPort`) instead of after a long load; connections wait
/// in the backlog until [`listen`] accepts them, so none sees a partial
/// keyspace. The plain `port` and, when `tls_port` is not 0, the TLS port;
/// `port 0` disables plain TCP when a unix socket or a TLS port is
/// configured, as in Redis, otherwise it binds a free port (ferrokv's
/// convenience for tests). Errors: binding failed.
pub fn bind_startup(
    binds: &[String],
    port: u16,
    tls_port: u16,
    backlog: u32,
    unixsocket: bool,
) -> std::io::Result<Bound> {
    let mut b = Bound {
        tcp: Vec::new(),
        tls: Vec::new(),
        port: 0,
    };
    if port != 0 || (!unixsocket && tls_port == 0) {
        b.tcp = bind_all(binds, port, backlog)?;
        b.port = b
            .tcp
            .first()
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.port())
            .unwrap_or(port);
    }
    if tls_port != 0 {
        b.tls = bind_all(binds, tls_port, backlog)?;
    }
    Ok(b)
}

/// Starts accepting on the sockets of [`bind_startup`], on the current
/// (main) runtime (the TLS context must be installed first). Returns the
/// plain port bound (0 when none).
pub fn listen(
    server: &Arc<Server>,
    binds: &[String],
    sockets: Bound,
    backlog: u32,
) -> std::io::Result<u16> {
    let main = tokio::runtime::Handle::current();
    let mut state = crate::workers::Listening {
        main: Some(main.clone()),
        binds: binds.to_vec(),
        backlog,
        ..Default::default()
    };
    let bound = sockets.port;
    if !sockets.tcp.is_empty() {
        state.tcp = spawn_loops(server, &main, sockets.tcp, false)?;
    }
    if !sockets.tls.is_empty() {
        state.tls = spawn_loops(server, &main, sockets.tls, true)?;
    }
    *server.net.listening.lock() = Some(state);
    let weak = Arc::downgrade(server);
    let _ = server
        .net
        .reconfigure
        .set(Box::new(move |old, new| match weak.upgrade() {
            Some(s) => apply_config_set(&s, old, new),
            None => Ok(()),
        }));
    Ok(bound)
}

/// Moves the plain (`tls` false) or TLS listeners to `port` at run time
/// (CONFIG SET port / tls-port): binds the new port on every bind address
/// first, then closes the old listeners; `port` 0 only closes them.
/// Connected clients stay. Errors: binding failed (old listeners kept) or
/// the server was not started by [`listen`].
pub fn change_port(server: &Arc<Server>, tls: bool, port: u16) -> std::io::Result<()> {
    let mut guard = server.net.listening.lock();
    let Some(state) = guard.as_mut() else {
        return Err(std::io::Error::other("listeners not started"));
    };
    let Some(main) = state.main.clone() else {
        return Err(std::io::Error::other("listeners not started"));
    };
    let new = if port == 0 {
        Vec::new()
    } else {
        let _enter = main.enter();
        let ls = bind_all(&state.binds, port, state.backlog)?;
        spawn_loops(server, &main, ls, tls)?
    };
    let old = if tls {
        std::mem::replace(&mut state.tls, new)
    } else {
        std::mem::replace(&mut state.tcp, new)
    };
    for l in old {
        l.close();
    }
    if !tls {
        server.bound_port.store(port as u64, Ordering::Relaxed);
    }
    Ok(())
}

/// Closes every TCP and TLS listener (shutdown: new connections are
/// refused from here on, before the connections still open close with the
/// process, as Redis's closeListeningSockets in prepareForShutdown).
pub fn close_all(server: &Server) {
    let mut guard = server.net.listening.lock();
    if let Some(state) = guard.as_mut() {
        for l in std::mem::take(&mut state.tcp)
            .into_iter()
            .chain(std::mem::take(&mut state.tls))
        {
            l.close();
        }
    }
}

/// Moves every TCP and TLS listener to the addresses `binds` at run time
/// (CONFIG SET bind, Redis 7.0's `changeBindAddr`): the old listeners close
/// first, then the new addresses are bound on the current plain port
/// (when plain TCP is on) and on `tls_port` (when not 0); when binding
/// fails the old addresses are bound again. Connected clients stay.
/// Errors: binding failed, or the server was not started by [`listen`].
pub fn change_binds(server: &Arc<Server>, binds: &[String], tls_port: u16) -> std::io::Result<()> {
    let mut guard = server.net.listening.lock();
    let Some(state) = guard.as_mut() else {
        return Err(std::io::Error::other("listeners not started"));
    };
    let Some(main) = state.main.clone() else {
        return Err(std::io::Error::other("listeners not started"));
    };
    // The plain port (0: none), also when an empty bind left no listener.
    let port = server.bound_port.load(Ordering::Relaxed) as u16;
    for l in std::mem::take(&mut state.tcp) {
        l.close();
    }
    for l in std::mem::take(&mut state.tls) {
        l.close();
    }
    let _enter = main.enter();
    let open = |binds: &[String]| -> std::io::Result<(Vec<_>, Vec<_>)> {
        let tcp = if port == 0 {
            Vec::new()
        } else {
            spawn_loops(server, &main, bind_all(binds, port, state.backlog)?, false)?
        };
        let tls = if tls_port == 0 {
            Vec::new()
        } else {
            spawn_loops(
                server,
                &main,
                bind_all(binds, tls_port, state.backlog)?,
                true,
            )?
        };
        Ok((tcp, tls))
    };
    match open(binds) {
        Ok((tcp, tls)) => {
            state.tcp = tcp;
            state.tls = tls;
            state.binds = binds.to_vec();
            Ok(())
        }
        Err(e) => {
            if let Ok((tcp, tls)) = open(&state.binds) {
                state.tcp = tcp;
                state.tls = tls;
            }
            Err(e)
        }
    }
}

/// CONFIG SET's hook for the listeners and TLS (Redis 7.0's apply functions
/// of `port`, `tls-port` and the `tls-*` file/protocol directives), run
/// before `new` replaces `old`: rebuilds the TLS context when TLS is on and
/// a TLS directive changed (or TLS was not configured yet, or the TLS port
/// opens), then moves the
/// ports that changed, then installs the new context. Nothing changes on
/// error, which is (directive name, Redis's reason text).
pub fn apply_config_set(
    server: &Arc<Server>,
    old: &crate::config::Config,
    new: &crate::config::Config,
) -> Result<(), (&'static str, &'static str)> {
    use crate::tls;
    const TLS_ERR: &str = "Unable to update TLS configuration. Check server logs.";
    const PORT_ERR: &str = "Unable to listen on this port. Check server logs.";
    let changed_tls = tls::RELOAD_DIRECTIVES
        .iter()
        .find(|d| old.get(d) != new.get(d))
        .copied();
    let old_tls_port = old.get_i64("tls-port") as u16;
    let new_tls_port = new.get_i64("tls-port") as u16;
    let mut ctx = None;
    // Opening the TLS port always rebuilds: files may have changed while
    // it was closed.
    let opening = old_tls_port == 0 && new_tls_port != 0;
    if tls::enabled(new) && (changed_tls.is_some() || opening || !server.tls.is_configured()) {
        match tls::build(new) {
            Ok(c) => ctx = Some(c),
            Err(e) => {
                tracing::warn!("{e}");
                let name = changed_tls.unwrap_or("tls-port");
                tracing::warn!(
                    "Failed applying new configuration. Possibly related to new {name} setting. Restoring previous settings."
                );
                return Err((name, TLS_ERR));
            }
        }
    }
    // Accept loops read the context at each accept, after this CONFIG SET
    // released the configuration lock, so installing it last is in time.
    if new_tls_port != old_tls_port {
        if let Err(e) = change_port(server, true, new_tls_port) {
            tracing::warn!("Failed to bind TLS port {new_tls_port}: {e}");
            return Err(("tls-port", PORT_ERR));
        }
    }
    if old.get("bind") != new.get("bind") {
        let binds: Vec<String> = new
            .get("bind")
            .split_whitespace()
            .map(String::from)
            .collect();
        if let Err(e) = change_binds(server, &binds, new_tls_port) {
            tracing::warn!("Failed to bind to {}: {e}", new.get("bind"));
            if new_tls_port != old_tls_port {
                let _ = change_port(server, true, old_tls_port);
            }
            return Err(("bind", "Failed to bind to specified addresses."));
        }
    }
    let old_port = old.get_i64("port") as u16;
    let new_port = new.get_i64("port") as u16;
    if new_port != old_port {
        if let Err(e) = change_port(server, false, new_port) {
            tracing::warn!("Failed to bind port {new_port}: {e}");
            if new_tls_port != old_tls_port {
                let _ = change_port(server, true, old_tls_port);
            }
            return Err(("port", PORT_ERR));
        }
    }
    if let Some(c) = ctx {
        server.tls.install(c);
    }
    Ok(())
}

/// Binds the unix socket at `path` with permissions `perm` (0 = default).
pub fn bind_unix(path: &str, perm: u32) -> std::io::Result<UnixListener> {
    let _ = std::fs::remove_file(path);
    let l = UnixListener::bind(path)?;
    if perm != 0 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm))?;
    }
    Ok(l)
}

/// Accepts unix-socket clients forever.
pub async fn accept_unix(server: Arc<Server>, listener: UnixListener, path: String) {
    accept_unix_as::<super::resp::RespCodec>(server, listener, path, Refusals::RESP).await
}

/// Accepts unix-socket clients forever, served with codec `C`, refusals
/// answered with `refusals`.
pub async fn accept_unix_as<C: super::codec::Codec + Send + 'static>(
    server: Arc<Server>,
    listener: UnixListener,
    path: String,
    refusals: Refusals,
) {
    loop {
        let (sock, _) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                server.net.accept_log.failed(&e);
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        server.stats.connections.fetch_add(1, Ordering::Relaxed);
        if over_limit(&server) {
            server
                .stats
                .rejected_connections
                .fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                let mut sock = sock;
                let _ = sock.write_all(refusals.maxclients).await;
            });
            continue;
        }
        let fd = sock.as_raw_fd();
        let handle = new_handle(
            &server.clients,
            server.clock.now_ms(),
            format!("{path}:0"),
            format!("{path}:0"),
            fd,
            true,
        );
        server.clients.add(handle.clone());
        let s = server.clone();
        let Ok(std_sock) = sock.into_std() else {
            server.clients.remove(handle.id);
            continue;
        };
        server.net.next_worker().spawn(async move {
            match tokio::net::UnixStream::from_std(std_sock) {
                Ok(sock) => super::connection::serve_with::<_, C>(s, sock, handle).await,
                Err(_) => s.clients.remove(handle.id),
            }
        });
    }
}

/// Starts the memcached listeners configured (`memcached-port` on every
/// `bind` address, `memcached-unixsocket`), on the current runtime.
/// Errors: binding failed.
pub fn listen_memcached(
    server: &Arc<Server>,
    binds: &[String],
    backlog: u32,
) -> std::io::Result<()> {
    let (port, path, perm) = {
        let c = server.config.read();
        (
            c.get_i64("memcached-port") as u16,
            c.get("memcached-unixsocket").to_string(),
            c.get_octal("memcached-unixsocketperm"),
        )
    };
    if port != 0 {
        for l in bind_all(binds, port, backlog)? {
            tokio::spawn(accept_tcp_as::<super::memcache::MemcacheCodec>(
                server.clone(),
                l,
                Refusals::MEMCACHED,
            ));
        }
    }
    if !path.is_empty() {
        let l = bind_unix(&path, perm)?;
        tokio::spawn(accept_unix_as::<super::memcache::MemcacheCodec>(
            server.clone(),
            l,
            path,
            Refusals::MEMCACHED,
        ));
    }
    Ok(())
}
