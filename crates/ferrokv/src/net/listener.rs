//! Listeners: TCP on every `bind` address and, when `unixsocket` is set, a
//! unix socket. Accepted TCP sockets get TCP_NODELAY and keepalive
//! (`tcp-keepalive` seconds), as Redis sets them. A connection beyond
//! `maxclients` gets "-ERR max number of clients reached" and is closed.

use super::connection::{new_handle, serve};
use crate::server::Server;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpSocket, UnixListener};

/// Binds one TCP address (`-` prefix = optional, as Redis's bind syntax).
/// Returns None when an optional address is unavailable.
pub fn bind_tcp(addr: &str, port: u16, backlog: u32) -> std::io::Result<Option<TcpListener>> {
    let (optional, host) = match addr.strip_prefix('-') {
        Some(h) => (true, h),
        None => (false, addr),
    };
    let host = if host == "*" { "0.0.0.0" } else { host };
    let ip: std::net::IpAddr = match host.parse() {
        Ok(ip) => ip,
        Err(_) if optional => return Ok(None),
        Err(e) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("invalid bind address '{host}': {e}"),
            ))
        }
    };
    let sa = std::net::SocketAddr::new(ip, port);
    let attempt = || -> std::io::Result<TcpListener> {
        let sock = if ip.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        sock.set_reuseaddr(true)?;
        sock.bind(sa)?;
        sock.listen(backlog)
    };
    match attempt() {
        Ok(l) => Ok(Some(l)),
        Err(_) if optional => Ok(None),
        Err(e) => Err(e),
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
    let protected = server.config.read().get("protected-mode") == "yes";
    protected && crate::acl::protected_mode_denies(true, server.acl.default_user().nopass, peer)
}

fn over_limit(server: &Server) -> bool {
    server.clients.len() as u64 >= server.live.maxclients.load(Ordering::Relaxed)
}

/// The I/O worker threads: one current-thread tokio runtime per thread,
/// each owning the connections handed to it (thread per core, no work
/// stealing: a connection's reads, commands and writes stay on one thread,
/// so no request costs a cross-thread wake-up). New connections are dealt
/// round-robin.
struct Workers {
    handles: Vec<tokio::runtime::Handle>,
    next: std::sync::atomic::AtomicUsize,
}

static WORKERS: std::sync::OnceLock<Workers> = std::sync::OnceLock::new();

/// Starts `n` I/O worker threads (`io-threads`). Call once before
/// accepting; later calls do nothing. Errors: a thread or runtime could not
/// be created.
pub fn start_workers(n: usize) -> std::io::Result<()> {
    if WORKERS.get().is_some() {
        return Ok(());
    }
    let mut handles = Vec::with_capacity(n.max(1));
    for i in 0..n.max(1) {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name(format!("ferrokv-io-{i}"))
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let _ = tx.send(Ok(rt.handle().clone()));
                rt.block_on(std::future::pending::<()>());
            })?;
        let h = rx
            .recv()
            .map_err(|_| std::io::Error::other("I/O worker thread exited"))??;
        handles.push(h);
    }
    let _ = WORKERS.set(Workers {
        handles,
        next: std::sync::atomic::AtomicUsize::new(0),
    });
    Ok(())
}

/// Handles of every I/O worker runtime (empty when none were started):
/// a task spawned on one runs between two of its batches (AOF barrier).
pub fn worker_handles() -> Vec<tokio::runtime::Handle> {
    WORKERS.get().map(|w| w.handles.clone()).unwrap_or_default()
}

/// The runtime of the next worker (round-robin), or the current runtime
/// when no workers were started (tests that embed the server).
fn next_worker() -> tokio::runtime::Handle {
    match WORKERS.get() {
        Some(w) => {
            let i = w.next.fetch_add(1, Ordering::Relaxed) % w.handles.len();
            w.handles[i].clone()
        }
        None => tokio::runtime::Handle::current(),
    }
}

/// Accepts TCP clients forever.
pub async fn accept_tcp(server: Arc<Server>, listener: TcpListener) {
    loop {
        let (sock, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        server.stats.connections.fetch_add(1, Ordering::Relaxed);
        let _ = sock.set_nodelay(true);
        let fd = sock.as_raw_fd();
        if over_limit(&server) {
            server
                .stats
                .rejected_connections
                .fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                let mut sock = sock;
                let _ = sock
                    .write_all(b"-ERR max number of clients reached\r\n")
                    .await;
            });
            continue;
        }
        if protected_mode_refuses(&server, peer.ip()) {
            server
                .stats
                .rejected_connections
                .fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                let mut sock = sock;
                let _ = sock
                    .write_all(crate::acl::PROTECTED_MODE_ERR.as_bytes())
                    .await;
            });
            continue;
        }
        set_keepalive(fd, server.live.tcp_keepalive.load(Ordering::Relaxed));
        let laddr = sock.local_addr().map(|a| a.to_string()).unwrap_or_default();
        let handle = new_handle(&server, peer.to_string(), laddr, fd, false);
        server.clients.add(handle.clone());
        let s = server.clone();
        // Hand the socket to a worker: it must be registered with that
        // worker's reactor, so move it as a std socket.
        let Ok(std_sock) = sock.into_std() else {
            server.clients.remove(handle.id);
            continue;
        };
        next_worker().spawn(async move {
            match tokio::net::TcpStream::from_std(std_sock) {
                Ok(sock) => serve(s, sock, handle).await,
                Err(_) => s.clients.remove(handle.id),
            }
        });
    }
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
    loop {
        let (sock, _) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("accept (unix): {e}");
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
                let _ = sock
                    .write_all(b"-ERR max number of clients reached\r\n")
                    .await;
            });
            continue;
        }
        let fd = sock.as_raw_fd();
        let handle = new_handle(&server, format!("{path}:0"), format!("{path}:0"), fd, true);
        server.clients.add(handle.clone());
        let s = server.clone();
        let Ok(std_sock) = sock.into_std() else {
            server.clients.remove(handle.id);
            continue;
        };
        next_worker().spawn(async move {
            match tokio::net::UnixStream::from_std(std_sock) {
                Ok(sock) => serve(s, sock, handle).await,
                Err(_) => s.clients.remove(handle.id),
            }
        });
    }
}
