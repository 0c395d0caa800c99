//! The client registry behind CLIENT LIST / INFO / KILL, maxclients and the
//! idle `timeout`. Each connection registers a [`ClientHandle`]; the parts
//! other clients may read (name, database, last command, ...) sit in a small
//! mutex that only the owning connection locks on the request path, once per
//! batch of requests.
//!
//! Killing a client (CLIENT KILL, timeout) shuts its socket down with
//! `shutdown(2)`, so the connection's pending read returns and it exits: the
//! request path needs no extra wake-up machinery.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Mutable, shared facts about one client (the fields of CLIENT LIST).
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    /// CLIENT SETNAME value.
    pub name: Vec<u8>,
    /// Selected database.
    pub db: usize,
    /// Last command, lower-case, `container|sub` for subcommands.
    pub last_cmd: String,
    /// Protocol version, 2 or 3.
    pub resp: u8,
    /// CLIENT SETINFO LIB-NAME.
    pub lib_name: Vec<u8>,
    /// CLIENT SETINFO LIB-VER.
    pub lib_ver: Vec<u8>,
    /// Flag letters of CLIENT LIST (`N` normal, `O` monitor, `x` MULTI...).
    pub flags: String,
    /// Query buffer length, bytes.
    pub qbuf: usize,
    /// Query buffer free space, bytes.
    pub qbuf_free: usize,
    /// Output buffer length, bytes.
    pub obl: usize,
    /// Authenticated user name.
    pub user: String,
    /// CLIENT NO-EVICT.
    pub no_evict: bool,
    /// CLIENT NO-TOUCH.
    pub no_touch: bool,
}

/// One connected client, as seen by other clients.
#[derive(Debug)]
pub struct ClientHandle {
    /// Unique, increasing id (CLIENT ID).
    pub id: u64,
    /// Peer address "ip:port" (or "path:0" for unix sockets).
    pub addr: String,
    /// Local address "ip:port".
    pub laddr: String,
    /// Socket file descriptor.
    pub fd: i32,
    /// True for unix-socket clients.
    pub unix: bool,
    /// Creation time, ms since the epoch.
    pub created_ms: u64,
    /// Last interaction, ms since the epoch (idle time, timeout).
    pub last_ms: AtomicU64,
    /// Set when killed; the connection closes on its next wake-up.
    pub killed: AtomicBool,
    /// True while a MONITOR client (exempt from CLIENT KILL TYPE normal).
    pub monitor: AtomicBool,
    /// Shared facts.
    pub info: Mutex<ClientInfo>,
    /// The client's registration while it is blocked on keys (BLPOP...):
    /// CLIENT UNBLOCK wakes it through this, CLIENT LIST shows flag `b`,
    /// INFO counts it in blocked_clients.
    pub blocked: Mutex<Option<Arc<crate::db::blocking::Waiter>>>,
}

impl ClientHandle {
    /// Closes the client: marks it killed and shuts its socket down so its
    /// pending read returns.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        // SAFETY: shutdown(2) on a descriptor number has no memory effects;
        // the descriptor stays owned by the connection, which closes it.
        unsafe {
            libc::shutdown(self.fd, libc::SHUT_RDWR);
        }
    }

    /// Idle seconds at `now_ms`.
    pub fn idle_secs(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.last_ms.load(Ordering::Relaxed)) / 1000
    }

    /// One CLIENT LIST / CLIENT INFO line (without newline), with Redis 7.0's
    /// fields in Redis's order (7.0 has no lib-name/lib-ver fields; CLIENT
    /// SETINFO values are kept but, as in 7.0's format, not listed).
    pub fn describe(&self, now_ms: u64) -> String {
        let i = self.info.lock();
        // Flag letters set by other families (O, P, x, b...), then the ones
        // known here, in Redis's order; N when none.
        let mut flags = i.flags.clone();
        if self.blocked.lock().is_some() {
            flags.push('b');
        }
        if self.unix {
            flags.push('U');
        }
        if i.no_evict {
            flags.push('e');
        }
        if i.no_touch {
            flags.push('T');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub=0 psub=0 ssub=0 multi=-1 qbuf={} qbuf-free={} argv-mem=0 multi-mem=0 rbs={} rbp={} obl={} oll=0 omem=0 tot-mem={} events=r cmd={} user={} redir=-1 resp={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            String::from_utf8_lossy(&i.name),
            now_ms.saturating_sub(self.created_ms) / 1000,
            self.idle_secs(now_ms),
            flags,
            i.db,
            i.qbuf,
            i.qbuf_free,
            i.qbuf + i.qbuf_free,
            i.qbuf,
            i.obl,
            i.qbuf + i.qbuf_free + i.obl + 1024,
            if i.last_cmd.is_empty() { "NULL" } else { &i.last_cmd },
            if i.user.is_empty() { "default" } else { &i.user },
            i.resp.max(2),
        )
    }
}

/// All connected clients.
#[derive(Debug, Default)]
pub struct ClientRegistry {
    clients: Mutex<BTreeMap<u64, Arc<ClientHandle>>>,
    next_id: AtomicU64,
}

impl ClientRegistry {
    /// Allocates the next client id (ids start at 1 and never repeat).
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Registers a connection.
    pub fn add(&self, h: Arc<ClientHandle>) {
        self.clients.lock().insert(h.id, h);
    }

    /// Unregisters a connection.
    pub fn remove(&self, id: u64) {
        self.clients.lock().remove(&id);
    }

    /// Number of connected clients.
    pub fn len(&self) -> usize {
        self.clients.lock().len()
    }

    /// True when no client is connected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A snapshot of all clients, by increasing id.
    pub fn all(&self) -> Vec<Arc<ClientHandle>> {
        self.clients.lock().values().cloned().collect()
    }

    /// The client with id `id`.
    pub fn get(&self, id: u64) -> Option<Arc<ClientHandle>> {
        self.clients.lock().get(&id).cloned()
    }
}
