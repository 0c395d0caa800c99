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
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
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
    /// Commands queued by MULTI (CLIENT LIST `multi`); None outside MULTI.
    pub multi: Option<usize>,
    /// Memory of the queued commands' arguments, bytes (`multi-mem`: for
    /// each, its arguments' lengths plus 8 bytes per argument, as Redis's
    /// `mstate.argv_len_sums`).
    pub multi_mem: usize,
    /// Arguments of the command the client is blocked in, bytes (`argv-mem`
    /// of another client: Redis keeps a blocked client's argv).
    pub argv_mem: usize,
    /// Reply buffer capacity, bytes (`rbs`).
    pub rbs: usize,
    /// Reply bytes of the client's last batch (`rbp`).
    pub rbp: usize,
    /// Authenticated user name.
    pub user: String,
    /// CLIENT NO-EVICT.
    pub no_evict: bool,
    /// CLIENT NO-TOUCH.
    pub no_touch: bool,
    /// Keys under WATCH (each counted in `tot-mem` as Redis's list node
    /// and `watchedKey`).
    pub watched: usize,
}

/// The CLIENT LIST fields of the client running CLIENT LIST / CLIENT INFO,
/// as its own connection knows them while the command runs (Redis's
/// `catClientInfoString` reads the live client): the query buffer still
/// holds the bytes of the current read, the current command's arguments
/// are counted, earlier replies of the same batch are in the reply buffer.
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveFields {
    /// Bytes of the read buffer, the current command included (`qbuf`).
    pub qbuf: usize,
    /// Free space of the read buffer (`qbuf-free`).
    pub qbuf_free: usize,
    /// Lengths of the current command's arguments (`argv-mem`).
    pub argv_mem: usize,
    /// Queued commands while in MULTI (`multi`).
    pub multi: Option<usize>,
    /// `multi-mem` (see [`ClientInfo::multi_mem`]).
    pub multi_mem: usize,
    /// Reply bytes not yet written (`obl`).
    pub obl: usize,
    /// Reply buffer capacity (`rbs`).
    pub rbs: usize,
}

impl LiveFields {
    /// The fields as the client last published them in its [`ClientInfo`].
    pub fn published(i: &ClientInfo) -> LiveFields {
        LiveFields {
            qbuf: i.qbuf,
            qbuf_free: i.qbuf_free,
            argv_mem: i.argv_mem,
            multi: i.multi,
            multi_mem: i.multi_mem,
            obl: i.obl,
            rbs: i.rbs,
        }
    }
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
    /// True for clients on the TLS port (set once at accept): in a TLS
    /// cluster they are sent to TLS ports, the others to plaintext ones
    /// (Redis's `connGetType(c->conn) == CONN_TYPE_TLS`).
    pub tls: std::sync::atomic::AtomicBool,
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
    /// True while a command of this client is held back by CLIENT PAUSE
    /// (Redis's BLOCKED_POSTPONE): INFO counts it in blocked_clients and
    /// CLIENT LIST shows flag `b`, as Redis's blockPostponeClient does.
    pub postponed: AtomicBool,
    /// Bytes pushed to this client by other connections (pub/sub messages)
    /// and, while it is subscribed, its own replies, in delivery order.
    pub outbox: Outbox,
    /// CLIENT TRACKING state (tracking.rs).
    pub tracking: TrackState,
    /// The client's memory (`tot-mem`) as last published to
    /// [`ClientRegistry::memory`] by [`ClientHandle::publish_memory`], bytes.
    pub mem: AtomicU64,
    /// True for a client maxmemory-clients never evicts besides CLIENT
    /// NO-EVICT: a replica's link to its master, a replica.
    pub exempt: AtomicBool,
}

/// A client's outbox: a byte queue any thread may append to (publishers),
/// drained into the socket by the client's own connection task, which waits
/// on [`Outbox::notify`] beside socket readability.
///
/// Memory is bounded by client-output-buffer-limit: [`Outbox::push`] counts
/// queued bytes plus bytes taken for writing but not yet written, and closes
/// the client (freeing the queue) when its class's hard limit is passed, or
/// its soft limit for soft-seconds in a row, as Redis's
/// `checkClientOutputBufferLimits` (networking.c). Publishing never waits
/// for a slow reader.
#[derive(Debug, Default)]
pub struct Outbox {
    buf: Mutex<Vec<u8>>,
    /// Wakes the connection task when bytes arrive in an empty queue.
    pub notify: tokio::sync::Notify,
    /// Bytes queued plus bytes being written (the output buffer size the
    /// limits apply to, CLIENT LIST omem).
    pending: AtomicUsize,
    /// True when the client speaks RESP3: messages are push frames (`>`).
    resp3: AtomicBool,
    /// Unix ms when the soft limit was first exceeded (0 = it is not).
    soft_since: AtomicU64,
    /// Set once the limits closed the client: later pushes are dropped.
    closed: AtomicBool,
    /// Channel subscriptions (CLIENT LIST sub=).
    pub sub: AtomicUsize,
    /// Pattern subscriptions (CLIENT LIST psub=).
    pub psub: AtomicUsize,
    /// Shard channel subscriptions (CLIENT LIST ssub=).
    pub ssub: AtomicUsize,
}

/// Output buffer limit of one client class (client-output-buffer-limit):
/// hard and soft limits in bytes (0 = none) and soft-seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufLimit {
    /// Close at once above this many bytes (0 = no hard limit).
    pub hard: u64,
    /// Close when above this many bytes for `soft_secs` (0 = no soft limit).
    pub soft: u64,
    /// Seconds the soft limit may be exceeded continuously.
    pub soft_secs: u64,
}

impl BufLimit {
    /// Checks `pending` bytes against the limit, tracking when the soft
    /// limit was first exceeded in `since` (unix ms, 0 = not exceeded).
    /// True when the client must be closed. Redis's
    /// `checkClientOutputBufferLimits`: the soft limit counts as reached
    /// only after soft-seconds of continuous excess; a zero soft-seconds
    /// closes at once.
    pub fn exceeded(&self, pending: u64, since: &AtomicU64, now_ms: u64) -> bool {
        if self.hard != 0 && pending >= self.hard {
            return true;
        }
        if self.soft != 0 && pending >= self.soft {
            let s = since.load(Ordering::Relaxed);
            if s == 0 {
                since.store(now_ms.max(1), Ordering::Relaxed);
                return self.soft_secs == 0;
            }
            return now_ms.saturating_sub(s) / 1000 >= self.soft_secs;
        }
        since.store(0, Ordering::Relaxed);
        false
    }
}

impl Outbox {
    /// Bytes queued or being written.
    #[inline]
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// True when messages for this client are RESP3 push frames.
    #[inline]
    pub fn resp3(&self) -> bool {
        self.resp3.load(Ordering::Relaxed)
    }

    /// True once the output buffer limits closed the client.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Appends the concatenation of `parts` (one frame), then enforces
    /// `limit`. Returns false when the client was (or already is) closed
    /// for passing it; the caller then closes the connection with
    /// [`ClientHandle::close_for_limits`].
    pub fn push(&self, parts: &[&[u8]], limit: BufLimit, now_ms: u64) -> bool {
        if self.closed.load(Ordering::Relaxed) {
            return false;
        }
        let n: usize = parts.iter().map(|p| p.len()).sum();
        let mut b = self.buf.lock();
        if self.closed.load(Ordering::Relaxed) {
            return false;
        }
        let was_empty = b.is_empty();
        for p in parts {
            b.extend_from_slice(p);
        }
        let total = self.pending.fetch_add(n, Ordering::AcqRel) + n;
        if limit.exceeded(total as u64, &self.soft_since, now_ms) {
            self.closed.store(true, Ordering::Relaxed);
            self.pending.fetch_sub(b.len(), Ordering::AcqRel);
            *b = Vec::new();
            drop(b);
            self.notify.notify_one();
            return false;
        }
        drop(b);
        if was_empty {
            self.notify.notify_one();
        }
        true
    }

    /// Moves all of `bytes` to the end of the queue (the connection's own
    /// replies while subscribed, so they keep their place among messages)
    /// and records the protocol. No limit check: the connection checks its
    /// own buffer after each command.
    pub fn append_own(&self, bytes: &mut Vec<u8>, resp3: bool) {
        let mut b = self.buf.lock();
        self.resp3.store(resp3, Ordering::Relaxed);
        if bytes.is_empty() {
            return;
        }
        self.pending.fetch_add(bytes.len(), Ordering::AcqRel);
        if b.is_empty() {
            std::mem::swap(&mut *b, bytes);
        } else {
            b.extend_from_slice(bytes);
            bytes.clear();
        }
    }

    /// Checks the bytes pending against `limit` (after the connection queued
    /// its own replies). True when the client must be closed.
    pub fn over_limit(&self, limit: BufLimit, now_ms: u64) -> bool {
        limit.exceeded(self.pending() as u64, &self.soft_since, now_ms)
    }

    /// Takes everything queued, swapping it with `spare` (which must be
    /// empty). The taken bytes stay counted as pending until
    /// [`Outbox::written`].
    pub fn take(&self, spare: &mut Vec<u8>) {
        let mut b = self.buf.lock();
        std::mem::swap(&mut *b, spare);
    }

    /// Records that `n` taken bytes were written to the socket (or
    /// dropped).
    pub fn written(&self, n: usize) {
        let _ = self
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                Some(p.saturating_sub(n))
            });
    }

    /// Drops everything queued (the connection is closing).
    pub fn clear(&self) {
        let mut b = self.buf.lock();
        self.pending
            .fetch_sub(b.len().min(self.pending()), Ordering::AcqRel);
        *b = Vec::new();
    }

    /// Total subscriptions (channels, patterns and shard channels).
    pub fn subscriptions(&self) -> usize {
        self.sub.load(Ordering::Relaxed)
            + self.psub.load(Ordering::Relaxed)
            + self.ssub.load(Ordering::Relaxed)
    }
}

impl ClientHandle {
    /// Closes a client that passed its output buffer limit, logging Redis's
    /// line ("Client ... scheduled to be closed ASAP for overcoming of
    /// output buffer limits.").
    pub fn close_for_limits(&self) {
        if self.killed.swap(true, Ordering::SeqCst) {
            return;
        }
        let line = self.describe(crate::util::now_ms());
        tracing::warn!(
            "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
            line
        );
        self.kill();
    }

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

    /// The client's memory, bytes, as Redis 7.0's `getClientMemoryUsage`
    /// counts it (networking.c) from the published fields `i` and the
    /// outbox: the read buffer's allocation (`qbuf` + `qbuf-free`), the
    /// reply buffer (`rbs`), the current arguments (`argv-mem`), the queued
    /// MULTI commands (`multi-mem`), 56 bytes per watched key (a list node
    /// and a `watchedKey`), 24 per pattern and 32 per channel subscription
    /// (list node; dict entry and slot), 32 per BCAST prefix (a rax node),
    /// pending output (`omem`) and [`CLIENT_OVERHEAD`].
    pub fn memory_of(&self, i: &LiveFields, watched: usize) -> u64 {
        let o = &self.outbox;
        let channels = o.sub.load(Ordering::Relaxed) + o.ssub.load(Ordering::Relaxed);
        let patterns = o.psub.load(Ordering::Relaxed);
        let prefixes = if self.tracking.flags() & BCAST != 0 {
            self.tracking.prefixes.lock().len()
        } else {
            0
        };
        (i.qbuf
            + i.qbuf_free
            + i.rbs
            + i.argv_mem
            + i.multi_mem
            + watched * 56
            + channels * 32
            + patterns * 24
            + prefixes * 32
            + self.outbox.pending()
            + CLIENT_OVERHEAD) as u64
    }

    /// Records the client's memory `bytes` (Redis's
    /// `updateClientMemUsageAndBucket`): the registry's total changes by the
    /// difference, so the total is written only when a client's memory
    /// changed.
    /// Exempt clients count 0.
    pub fn publish_memory(&self, registry: &ClientRegistry, bytes: u64) {
        let bytes = if self.exempt.load(Ordering::Relaxed) {
            0
        } else {
            bytes
        };
        let old = self.mem.swap(bytes, Ordering::Relaxed);
        if old != bytes {
            registry
                .memory
                .fetch_add(bytes.wrapping_sub(old), Ordering::Relaxed);
        }
    }

    /// Recomputes the memory of a client from what it last published and
    /// its outbox now (a client whose outbox another connection filled).
    pub fn refresh_memory(&self, registry: &ClientRegistry) {
        let (l, watched) = {
            let i = self.info.lock();
            (LiveFields::published(&i), i.watched)
        };
        self.publish_memory(registry, self.memory_of(&l, watched));
    }

    /// True while the client has a channel, pattern or shard-channel
    /// subscription (Redis's CLIENT_PUBSUB flag).
    pub fn subscribed(&self) -> bool {
        let o = &self.outbox;
        o.sub.load(Ordering::Relaxed)
            + o.psub.load(Ordering::Relaxed)
            + o.ssub.load(Ordering::Relaxed)
            > 0
    }

    /// Idle seconds at `now_ms`.
    pub fn idle_secs(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.last_ms.load(Ordering::Relaxed)) / 1000
    }

    /// One CLIENT LIST / CLIENT INFO line (without newline), with Redis 7.0's
    /// fields in Redis's order (7.0 has no lib-name/lib-ver fields; CLIENT
    /// SETINFO values are kept but, as in 7.0's format, not listed).
    pub fn describe(&self, now_ms: u64) -> String {
        self.describe_with(now_ms, None)
    }

    /// [`ClientHandle::describe`], with the fields only the calling
    /// connection knows exactly taken from `live` when it is this client's
    /// own line.
    ///
    /// `tot-mem` approximates Redis's `getClientMemoryUsage`: read buffer
    /// and reply buffer capacities, arguments (with 8 bytes per argument
    /// pointer), queued MULTI commands, the outbox, and a fixed per-client
    /// overhead of [`CLIENT_OVERHEAD`] bytes (Redis's `client` struct and
    /// allocator rounding differ).
    pub fn describe_with(&self, now_ms: u64, live: Option<&LiveFields>) -> String {
        let omem = self.outbox.pending();
        let i = self.info.lock();
        let l = match live {
            Some(l) => *l,
            None => LiveFields::published(&i),
        };
        let rbp = if live.is_some() {
            l.obl.max(i.rbp)
        } else {
            i.rbp
        };
        // Flag letters set by other families (O, P, x, b...), then the ones
        // known here, in Redis's order; N when none.
        let mut flags = i.flags.clone();
        // Redis's order: O/S M P x, then b t R B, then the rest.
        let at = flags
            .find(|ch: char| !matches!(ch, 'O' | 'S' | 'M' | 'P' | 'x'))
            .unwrap_or(flags.len());
        let (track, redir) = self.tracking.list_fields();
        flags.insert_str(at, track);
        if self.blocked.lock().is_some() || self.postponed.load(Ordering::Relaxed) {
            flags.insert(at, 'b');
        }
        if l.multi.is_some() && !flags.contains('x') {
            flags.insert(at, 'x');
        }
        if self.subscribed() && !flags.contains('P') {
            let p = flags
                .find(|ch: char| !matches!(ch, 'O' | 'S' | 'M'))
                .unwrap_or(flags.len());
            flags.insert(p, 'P');
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
        let argv_mem = l.argv_mem;
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl={} oll={} omem={} tot-mem={} events=r cmd={} user={} redir={} resp={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            String::from_utf8_lossy(&i.name),
            now_ms.saturating_sub(self.created_ms) / 1000,
            self.idle_secs(now_ms),
            flags,
            i.db,
            self.outbox.sub.load(Ordering::Relaxed),
            self.outbox.psub.load(Ordering::Relaxed),
            self.outbox.ssub.load(Ordering::Relaxed),
            l.multi.map_or(-1, |n| n as i64),
            l.qbuf,
            l.qbuf_free,
            argv_mem,
            l.multi_mem,
            l.rbs,
            rbp,
            l.obl,
            usize::from(omem > 0),
            omem,
            self.memory_of(&l, i.watched),
            if i.last_cmd.is_empty() { "NULL" } else { &i.last_cmd },
            if i.user.is_empty() { "default" } else { &i.user },
            redir,
            i.resp.max(2),
        )
    }
}

/// Fixed per-client memory counted in CLIENT LIST `tot-mem`, bytes (the
/// connection's state and registry entry; Redis counts its `client`
/// struct, about 1.9 KB in 7.0).
pub const CLIENT_OVERHEAD: usize = 1024;

/// All connected clients.
#[derive(Debug, Default)]
pub struct ClientRegistry {
    clients: Mutex<BTreeMap<u64, Arc<ClientHandle>>>,
    next_id: AtomicU64,
    /// Sum of the clients' published memory, bytes (Redis's
    /// `stat_clients_type_memory` of the normal and pub/sub classes; the
    /// exempt clients' is not counted).
    memory: AtomicU64,
    /// The bound maxmemory-clients sets on `memory`, bytes (0: off).
    eviction_limit: AtomicU64,
    /// Clients closed by maxmemory-clients (INFO `evicted_clients`).
    pub evicted: AtomicU64,
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
        if let Some(h) = self.clients.lock().remove(&id) {
            h.exempt.store(true, Ordering::Relaxed);
            h.publish_memory(self, 0);
        }
    }

    /// Sets the bound of maxmemory-clients (`mc`: bytes, or minus a
    /// percentage of `maxmemory`; 0 off), as networking.c
    /// `getClientEvictionLimit` resolves it: a percentage counts only while
    /// maxmemory is set, and no bound is below 128 KiB, so that the server
    /// can still be reached.
    pub fn set_eviction_limit(&self, mc: i64, maxmemory: u64) {
        let bytes = match mc {
            0 => 0,
            _ if mc < 0 && maxmemory == 0 => 0,
            _ if mc < 0 => ((maxmemory as f64 * (-mc) as f64 / 100.0) as u64).max(128 * 1024),
            _ => (mc as u64).max(128 * 1024),
        };
        self.eviction_limit.store(bytes, Ordering::Relaxed);
    }

    /// The bound set by [`ClientRegistry::set_eviction_limit`] (0: off).
    pub fn eviction_limit(&self) -> u64 {
        self.eviction_limit.load(Ordering::Relaxed)
    }

    /// Closes the largest clients while the clients' memory is at or over
    /// maxmemory-clients (networking.c `evictClients`): largest first,
    /// never a CLIENT NO-EVICT client, a replica or a master link; each
    /// logged as "Evicting client: <CLIENT LIST line>" and counted in
    /// [`ClientRegistry::evicted`]. Two loads when off or under the bound.
    pub fn evict(&self) {
        let limit = self.eviction_limit();
        if limit == 0 || self.memory() < limit {
            return;
        }
        let mut victims: Vec<_> = self
            .all()
            .into_iter()
            .filter(|h| {
                !h.killed.load(Ordering::Relaxed)
                    && !h.exempt.load(Ordering::Relaxed)
                    && !h.info.lock().no_evict
            })
            .map(|h| (h.mem.load(Ordering::Relaxed), h))
            .collect();
        victims.sort_by_key(|v| std::cmp::Reverse(v.0));
        for (_, h) in victims {
            if self.memory() < limit {
                return;
            }
            let line = h.describe(crate::util::now_ms());
            tracing::info!("Evicting client: {}", line);
            h.kill();
            h.exempt.store(true, Ordering::Relaxed);
            h.publish_memory(self, 0);
            self.evicted.fetch_add(1, Ordering::Relaxed);
        }
        if self.memory() >= limit {
            tracing::warn!("Over client maxmemory after evicting all evictable clients");
        }
    }

    /// Memory of the connected normal and pub/sub clients, bytes (the
    /// figure maxmemory-clients bounds; INFO `mem_clients_normal`).
    pub fn memory(&self) -> u64 {
        self.memory.load(Ordering::Relaxed)
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

/// Creates the shared part of a new client (its registry entry, not yet
/// added): `addr` and `laddr` as CLIENT LIST shows them, `fd` -1 for a
/// client without a socket; `now_ms` is the server clock's time.
pub fn new_handle(
    registry: &ClientRegistry,
    now_ms: u64,
    addr: String,
    laddr: String,
    fd: i32,
    unix: bool,
) -> Arc<ClientHandle> {
    let now = now_ms;
    Arc::new(ClientHandle {
        id: registry.next_id(),
        addr,
        laddr,
        fd,
        unix,
        tls: false.into(),
        created_ms: now,
        last_ms: now.into(),
        killed: false.into(),
        monitor: false.into(),
        blocked: parking_lot::Mutex::new(None),
        postponed: false.into(),
        outbox: Default::default(),
        tracking: Default::default(),
        mem: 0.into(),
        exempt: false.into(),
        info: parking_lot::Mutex::new(ClientInfo {
            resp: 2,
            ..Default::default()
        }),
    })
}

// ---- CLIENT TRACKING state of one client (tracking.rs works on it) ----

/// Tracking is on (CLIENT_TRACKING).
pub const ON: u32 = 1;
/// BCAST mode.
pub const BCAST: u32 = 1 << 1;
/// OPTIN mode.
pub const OPTIN: u32 = 1 << 2;
/// OPTOUT mode.
pub const OPTOUT: u32 = 1 << 3;
/// NOLOOP: no messages about the client's own writes.
pub const NOLOOP: u32 = 1 << 4;
/// CLIENT CACHING yes (OPTIN) / no (OPTOUT) was given for the next command.
pub const CACHING: u32 = 1 << 5;
/// The redirect target is gone.
pub const BROKEN: u32 = 1 << 6;

/// One client's tracking state, shared (in its [`ClientHandle`]) so that
/// writers on other threads can address it.
#[derive(Debug, Default)]
pub struct TrackState {
    /// [`ON`], [`BCAST`], ... bits.
    pub flags: AtomicU32,
    /// REDIRECT client id (0 = none).
    pub redirect: AtomicU64,
    /// Set once some client redirects its messages here: the connection
    /// then waits on its outbox while idle.
    pub target: std::sync::atomic::AtomicBool,
    /// Some while the client executes a command: messages for it wait here
    /// until its reply is queued.
    pub inflight: parking_lot::Mutex<Option<Vec<u8>>>,
    /// BCAST prefixes, sorted.
    pub prefixes: parking_lot::Mutex<Vec<Vec<u8>>>,
}

impl TrackState {
    /// The flag bits.
    #[inline]
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Acquire)
    }

    /// CLIENT TRACKINGINFO's flag words, in Redis's order.
    pub fn info_flags(&self) -> Vec<&'static str> {
        let f = self.flags();
        if f & ON == 0 {
            return vec!["off"];
        }
        let mut v = vec!["on"];
        for (bit, word) in [(BCAST, "bcast"), (OPTIN, "optin")] {
            if f & bit != 0 {
                v.push(word);
            }
        }
        if f & OPTIN != 0 && f & CACHING != 0 {
            v.push("caching-yes");
        }
        if f & OPTOUT != 0 {
            v.push("optout");
            if f & CACHING != 0 {
                v.push("caching-no");
            }
        }
        if f & NOLOOP != 0 {
            v.push("noloop");
        }
        if f & BROKEN != 0 {
            v.push("broken_redirect");
        }
        v
    }

    /// CLIENT LIST flag letters of tracking (`t`, `R`, `B`) and the `redir`
    /// field value (-1 when off).
    pub fn list_fields(&self) -> (&'static str, i64) {
        let f = self.flags();
        if f & ON == 0 {
            return ("", -1);
        }
        let letters = match (f & BROKEN != 0, f & BCAST != 0) {
            (false, false) => "t",
            (true, false) => "tR",
            (false, true) => "tB",
            (true, true) => "tRB",
        };
        (letters, self.redirect.load(Ordering::Acquire) as i64)
    }
}
