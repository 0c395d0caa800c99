//! Client-side caching: CLIENT TRACKING and the invalidation messages, as
//! Redis 7.0's tracking.c.
//!
//! Two modes, as in Redis:
//! - default: every key a tracking client reads (read-only commands, key
//!   positions from the key specs) is remembered in the tracking table
//!   (key → client ids; keys of every database share one table, as in
//!   Redis). When the key is modified, each of those clients gets one
//!   invalidation and the key leaves the table;
//! - BCAST: the client registers prefixes (the empty prefix = every key);
//!   each key modified during a batch of commands that matches a prefix is
//!   collected, and at the end of the batch (Redis: `beforeSleep`) every
//!   client of the prefix gets one message with the array of those keys.
//!
//! Messages: RESP3 clients get `>2 invalidate [keys]` pushes; with
//! `REDIRECT id` they go to that client instead, and a RESP2 receiver gets
//! them only while it is in Pub/Sub mode, as a `message` on
//! `__redis__:invalidate`. A redirect target that is gone marks the client
//! `broken_redirect` and sends it `>2 tracking-redir-broken id` (RESP3).
//! FLUSHDB / FLUSHALL send a null (all keys) to every tracking client and
//! empty the table.
//!
//! Hook: modifications reach [`key_modified`] through events.rs (`modified`,
//! `touch`, `expired`), after the handler returned and before the command
//! counts as finished. Cost while no client ever enabled tracking: nothing
//! beyond events.rs's one atomic load.
//!
//! Ordering: a message is appended to the receiver's outbox at once (from
//! any thread). While a tracking client executes a command its messages are
//! held in [`TrackState`]'s in-flight buffer and appended after that
//! command's reply (Redis 7.0's `tracking_pending_keys`: a client's own
//! write invalidates after its reply; EXEC's reply is not interleaved); a
//! tracking client's replies join its outbox, so messages and replies keep
//! their order. Keys are remembered before the read executes, so a write
//! racing with the read on another core is never missed: its invalidation
//! follows the read's reply. BCAST keys are sent at the end of the batch
//! that modified them, before its replies leave, even when another
//! thread's flush picked them up ([`flush_bcast`] waits for it).

use crate::clients::ClientHandle;
use indexmap::IndexMap;
use parking_lot::{Mutex, RwLock};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// What tracking works on: the parts of a server (built by
/// `Server::tracking_env`; the fields are named as the server's).
pub struct Env<'a> {
    /// The tracking tables.
    pub tracking: &'a Tracking,
    /// Connected clients (receivers, redirect targets).
    pub clients: &'a crate::clients::ClientRegistry,
    /// The keyspace, whose event hub is told when tracking starts/stops.
    pub keyspace: &'a crate::db::Keyspace,
    /// Output buffer limits of the receivers.
    pub live: &'a crate::config::LiveConfig,
}

pub use crate::clients::{TrackState, BCAST, BROKEN, CACHING, NOLOOP, ON, OPTIN, OPTOUT};

const SHARDS: usize = 64;
type Table = IndexMap<Box<[u8]>, Vec<u64>, foldhash::fast::RandomState>;

/// The server-wide tracking tables ([`Server::tracking`]).
pub struct Tracking {
    table: Box<[Mutex<Table>]>,
    /// Keys in the table (INFO tracking_total_keys).
    keys: AtomicU64,
    /// (key, client) pairs in the table (INFO tracking_total_items).
    items: AtomicU64,
    /// Clients with tracking on (INFO tracking_clients).
    clients: AtomicUsize,
    /// BCAST prefix → clients registered for it.
    prefixes: RwLock<BTreeMap<Vec<u8>, Vec<Arc<ClientHandle>>>>,
    /// Number of prefixes (one atomic load on the write path).
    prefix_count: AtomicUsize,
    /// tracking-table-max-keys (0 = no limit).
    max_keys: AtomicU64,
    /// Rounds the last eviction ended still above the limit (Redis's
    /// timeout_counter: effort is 100 keys per round more).
    rounds: AtomicU32,
    /// Keys modified while BCAST prefixes exist, with the client that
    /// modified them (0 = none: expiry), sent by the next
    /// [`flush_bcast`] (after the batch that modified them, as Redis
    /// sends them before its event loop sleeps).
    bcast_keys: Mutex<Vec<(Box<[u8]>, u64)>>,
    /// True while `bcast_keys` is not empty (one load per batch).
    bcast_pending: AtomicBool,
    /// Held by [`flush_bcast`] from taking `bcast_keys` until every
    /// message is sent: one flush at a time.
    bcast_flush: Mutex<()>,
    /// Flushes begun and not finished (counted before `bcast_pending` is
    /// cleared): a batch that finds no keys pending waits for these, as
    /// they may be sending its keys.
    bcast_flushing: AtomicUsize,
}

impl Default for Tracking {
    fn default() -> Self {
        Tracking {
            table: (0..SHARDS).map(|_| Mutex::new(Table::default())).collect(),
            keys: AtomicU64::new(0),
            items: AtomicU64::new(0),
            clients: AtomicUsize::new(0),
            prefixes: RwLock::new(BTreeMap::new()),
            prefix_count: AtomicUsize::new(0),
            max_keys: AtomicU64::new(1_000_000),
            rounds: AtomicU32::new(0),
            bcast_keys: Mutex::new(Vec::new()),
            bcast_pending: AtomicBool::new(false),
            bcast_flush: Mutex::new(()),
            bcast_flushing: AtomicUsize::new(0),
        }
    }
}

impl Tracking {
    /// Clients with tracking on (INFO clients `tracking_clients`).
    pub fn client_count(&self) -> usize {
        self.clients.load(Ordering::Relaxed)
    }
    /// Keys in the tracking table (INFO stats `tracking_total_keys`).
    pub fn total_keys(&self) -> u64 {
        self.keys.load(Ordering::Relaxed)
    }
    /// Client ids across the table (INFO stats `tracking_total_items`).
    pub fn total_items(&self) -> u64 {
        self.items.load(Ordering::Relaxed)
    }
    /// BCAST prefixes (INFO stats `tracking_total_prefixes`).
    pub fn total_prefixes(&self) -> usize {
        self.prefix_count.load(Ordering::Relaxed)
    }
    /// Sets tracking-table-max-keys (0 = unlimited).
    pub fn set_max_keys(&self, n: u64) {
        self.max_keys.store(n, Ordering::Relaxed);
    }

    fn shard(&self, key: &[u8]) -> &Mutex<Table> {
        &self.table[(crate::db::dict::hash_key(key) as usize) % SHARDS]
    }
}

thread_local! {
    /// Id of the client whose command runs on this thread (0 = none):
    /// Redis's server.current_client, for NOLOOP.
    static CURRENT: Cell<u64> = const { Cell::new(0) };
}

/// The client executing a command on this thread (0 = none).
#[inline]
pub fn current() -> u64 {
    CURRENT.with(Cell::get)
}

/// Records the client executing a command on this thread (NOLOOP).
#[inline]
pub fn set_current(id: u64) {
    CURRENT.with(|c| c.set(id));
}

/// Parsed CLIENT TRACKING options.
struct Options {
    on: bool,
    redirect: u64,
    flags: u32,
    prefixes: Vec<Vec<u8>>,
}

/// CLIENT TRACKING on|off [REDIRECT id] [BCAST] [PREFIX p]... [OPTIN]
/// [OPTOUT] [NOLOOP] (networking.c clientCommand): checks in Redis's order,
/// replies +OK or the error. `args[0..2]` are CLIENT TRACKING.
///
/// `h` is the client's handle; `tracking` its connection's "tracking on"
/// flag, set or cleared here.
pub fn client_tracking(
    server: &Env<'_>,
    h: &Arc<ClientHandle>,
    tracking: &mut bool,
    args: &[&[u8]],
) -> Result<(), String> {
    let mut o = Options {
        on: false,
        redirect: 0,
        flags: 0,
        prefixes: Vec::new(),
    };
    let mut j = 3;
    while j < args.len() {
        let a = args[j];
        let more = j + 1 < args.len();
        if a.eq_ignore_ascii_case(b"redirect") && more {
            j += 1;
            if o.redirect != 0 {
                return Err("ERR A client can only redirect to a single other client".into());
            }
            let id = crate::util::parse_i64(args[j])
                .ok_or_else(|| "ERR value is not an integer or out of range".to_string())?;
            let target = if id > 0 {
                server.clients.get(id as u64)
            } else {
                None
            };
            match target {
                Some(t) => {
                    o.redirect = id as u64;
                    t.tracking.target.store(true, Ordering::Relaxed);
                    t.outbox.notify.notify_one();
                }
                None => return Err("ERR The client ID you want redirect to does not exist".into()),
            }
        } else if a.eq_ignore_ascii_case(b"bcast") {
            o.flags |= BCAST;
        } else if a.eq_ignore_ascii_case(b"optin") {
            o.flags |= OPTIN;
        } else if a.eq_ignore_ascii_case(b"optout") {
            o.flags |= OPTOUT;
        } else if a.eq_ignore_ascii_case(b"noloop") {
            o.flags |= NOLOOP;
        } else if a.eq_ignore_ascii_case(b"prefix") && more {
            j += 1;
            o.prefixes.push(args[j].to_vec());
        } else {
            return Err("ERR syntax error".into());
        }
        j += 1;
    }
    if args[2].eq_ignore_ascii_case(b"on") {
        o.on = true;
    } else if args[2].eq_ignore_ascii_case(b"off") {
        disable(server, h, tracking);
        return Ok(());
    } else {
        return Err("ERR syntax error".into());
    }
    let _ = o.on;
    let st = &h.tracking;
    let cur = st.flags();
    if o.flags & BCAST == 0 && !o.prefixes.is_empty() {
        return Err("ERR PREFIX option requires BCAST mode to be enabled".into());
    }
    if cur & ON != 0 && (cur & BCAST != 0) != (o.flags & BCAST != 0) {
        return Err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.".into());
    }
    if o.flags & BCAST != 0 && o.flags & (OPTIN | OPTOUT) != 0 {
        return Err("ERR OPTIN and OPTOUT are not compatible with BCAST".into());
    }
    if o.flags & OPTIN != 0 && o.flags & OPTOUT != 0 {
        return Err("ERR You can't specify both OPTIN mode and OPTOUT mode".into());
    }
    if (o.flags & OPTIN != 0 && cur & OPTOUT != 0) || (o.flags & OPTOUT != 0 && cur & OPTIN != 0) {
        return Err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.".into());
    }
    if o.flags & BCAST != 0 {
        check_prefixes(&st.prefixes.lock(), &o.prefixes)?;
    }
    enable(server, h, tracking, o);
    Ok(())
}

/// checkPrefixCollisionsOrReply: a new prefix may not be a prefix of (or
/// have as prefix) an existing one or another new one.
fn check_prefixes(existing: &[Vec<u8>], new: &[Vec<u8>]) -> Result<(), String> {
    let overlap = |a: &[u8], b: &[u8]| {
        let n = a.len().min(b.len());
        a[..n] == b[..n]
    };
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    for (i, p) in new.iter().enumerate() {
        if let Some(e) = existing.iter().find(|e| overlap(e, p)) {
            return Err(format!(
                "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                s(p),
                s(e)
            ));
        }
        if let Some(q) = new[i + 1..].iter().find(|q| overlap(p, q)) {
            return Err(format!(
                "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                s(p),
                s(q)
            ));
        }
    }
    Ok(())
}

/// enableTracking: turns tracking on (or changes its options), keeping
/// CACHING and, in BCAST mode, the prefixes already registered.
fn enable(server: &Env<'_>, h: &Arc<ClientHandle>, tracking: &mut bool, o: Options) {
    let t = &server.tracking;
    let st = &h.tracking;
    let cur = st.flags();
    if cur & ON == 0 {
        t.clients.fetch_add(1, Ordering::AcqRel);
    }
    server.keyspace.events().set_tracking(true);
    st.redirect.store(o.redirect, Ordering::Release);
    let mut flags = (cur & CACHING) | ON | (o.flags & (BCAST | OPTIN | OPTOUT | NOLOOP));
    if o.flags & BCAST == 0 {
        flags &= !BCAST;
    }
    if o.flags & BCAST != 0 {
        let mut list: Vec<Vec<u8>> = o.prefixes;
        if list.is_empty() {
            list.push(Vec::new());
        }
        let mut mine = st.prefixes.lock();
        let mut g = t.prefixes.write();
        for p in list {
            if mine.contains(&p) {
                continue;
            }
            let e = g.entry(p.clone()).or_default();
            if e.is_empty() {
                t.prefix_count.fetch_add(1, Ordering::AcqRel);
            }
            e.push(h.clone());
            let at = mine.binary_search(&p).unwrap_or_else(|x| x);
            mine.insert(at, p);
        }
    }
    st.flags.store(flags, Ordering::Release);
    *tracking = true;
}

/// disableTracking: CLIENT TRACKING off, RESET and disconnection. Keys the
/// client read stay in the table (removed lazily, as in Redis).
/// `tracking` is the connection's "tracking on" flag, cleared here.
pub fn disable(server: &Env<'_>, h: &ClientHandle, tracking: &mut bool) {
    let st = &h.tracking;
    let cur = st.flags();
    let t = &server.tracking;
    if cur & BCAST != 0 {
        let mine = std::mem::take(&mut *st.prefixes.lock());
        let mut g = t.prefixes.write();
        for p in mine {
            if let Some(v) = g.get_mut(&p) {
                v.retain(|x| x.id != h.id);
                if v.is_empty() {
                    g.remove(&p);
                    t.prefix_count.fetch_sub(1, Ordering::AcqRel);
                }
            }
        }
    }
    if cur & ON != 0 {
        t.clients.fetch_sub(1, Ordering::AcqRel);
        st.flags.store(0, Ordering::Release);
    }
    *tracking = false;
    maybe_idle(server);
}

/// Clears the events.rs tracking bit when nothing is left to do.
fn maybe_idle(server: &Env<'_>) {
    let t = &server.tracking;
    if t.clients.load(Ordering::Acquire) == 0 && t.keys.load(Ordering::Acquire) == 0 {
        server.keyspace.events().set_tracking(false);
        // A client enabling tracking meanwhile sets the bit again after
        // its count: re-check.
        if t.clients.load(Ordering::Acquire) != 0 {
            server.keyspace.events().set_tracking(true);
        }
    }
}

/// CLIENT CACHING yes|no.
pub fn client_caching(h: &ClientHandle, arg: &[u8]) -> Result<(), String> {
    let st = &h.tracking;
    let f = st.flags();
    if f & ON == 0 {
        return Err("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled".into());
    }
    if arg.eq_ignore_ascii_case(b"yes") {
        if f & OPTIN == 0 {
            return Err(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
                    .into(),
            );
        }
    } else if arg.eq_ignore_ascii_case(b"no") {
        if f & OPTOUT == 0 {
            return Err(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
                    .into(),
            );
        }
    } else {
        return Err("ERR syntax error".into());
    }
    st.flags.fetch_or(CACHING, Ordering::AcqRel);
    Ok(())
}

/// CLIENT GETREDIR: the redirect id, 0 without one, -1 when tracking is
/// off.
pub fn getredir(h: &ClientHandle) -> i64 {
    let st = &h.tracking;
    if st.flags() & ON == 0 {
        -1
    } else {
        st.redirect.load(Ordering::Acquire) as i64
    }
}

/// trackingRememberKeys: after a read-only command of a tracking client
/// (called just before it runs), remembers its keys, unless BCAST or the
/// OPTIN / OPTOUT rules say no. `keys` are the command's keys.
pub fn remember<'k>(server: &Env<'_>, h: &ClientHandle, keys: impl Iterator<Item = &'k [u8]>) {
    let f = h.tracking.flags();
    if f & (ON | BCAST) != ON {
        return;
    }
    let caching = f & CACHING != 0;
    if (f & OPTIN != 0 && !caching) || (f & OPTOUT != 0 && caching) {
        return;
    }
    let id = h.id;
    let t = &server.tracking;
    for key in keys {
        let mut g = t.shard(key).lock();
        match g.get_mut(key) {
            Some(ids) => {
                if !ids.contains(&id) {
                    ids.push(id);
                    t.items.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => {
                g.insert(key.into(), vec![id]);
                t.keys.fetch_add(1, Ordering::Relaxed);
                t.items.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// What an invalidation says.
enum Payload<'a> {
    /// One key: `*1 $key`.
    Key(&'a [u8]),
    /// Pre-encoded array of keys (BCAST).
    Proto(&'a [u8]),
    /// All keys: a null in the tracking client's protocol (flush).
    Null,
}

/// sendTrackingMessage: sends `p` for tracking client `h`, to `h` or its
/// redirect target.
fn send(server: &Env<'_>, h: &ClientHandle, p: Payload<'_>) {
    let redirect = h.tracking.redirect.load(Ordering::Acquire);
    let tracker_resp3 = h.info.lock().resp >= 3;
    let null: &[u8] = if tracker_resp3 { b"_\r\n" } else { b"$-1\r\n" };
    let target;
    let (recv, redirected): (&ClientHandle, bool) = if redirect != 0 {
        match server.clients.get(redirect) {
            Some(t) => {
                target = t;
                (&target, true)
            }
            None => {
                h.tracking.flags.fetch_or(BROKEN, Ordering::AcqRel);
                if tracker_resp3 {
                    let mut idb = itoa::Buffer::new();
                    let ids = idb.format(redirect);
                    let parts: [&[u8]; 4] = [
                        b">2\r\n$21\r\ntracking-redir-broken\r\n:",
                        ids.as_bytes(),
                        b"\r\n",
                        b"",
                    ];
                    deliver(server, h, &parts);
                }
                return;
            }
        }
    } else {
        (h, false)
    };
    let head: &[u8] = if recv.info.lock().resp >= 3 {
        b">2\r\n$10\r\ninvalidate\r\n"
    } else if redirected && recv.outbox.subscriptions() > 0 {
        b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
    } else {
        return;
    };
    match p {
        Payload::Key(k) => {
            let mut len = Vec::with_capacity(24);
            len.extend_from_slice(b"*1\r\n$");
            len.extend_from_slice(itoa::Buffer::new().format(k.len()).as_bytes());
            len.extend_from_slice(b"\r\n");
            deliver(server, recv, &[head, &len, k, b"\r\n"]);
        }
        Payload::Proto(b) => deliver(server, recv, &[head, b, b"", b""]),
        Payload::Null => deliver(server, recv, &[head, null, b"", b""]),
    }
}

/// Appends one frame to `recv`: held while it runs a command, else to its
/// outbox (closing it past its output limit).
fn deliver(server: &Env<'_>, recv: &ClientHandle, parts: &[&[u8]; 4]) {
    let mut inf = recv.tracking.inflight.lock();
    if let Some(buf) = inf.as_mut() {
        for p in parts {
            buf.extend_from_slice(p);
        }
        return;
    }
    let limit = server.live.limit_for(recv);
    if !recv.outbox.push(parts, limit, crate::util::now_ms()) {
        recv.close_for_limits();
    } else if server.clients.eviction_limit() != 0 {
        // The receiver's memory grew without a command of its own
        // (tracking.c sendTrackingMessage updates it).
        recv.refresh_memory(server.clients);
        server.clients.evict();
    }
}

/// A tracking client starts a (top-level) command: messages for it wait
/// until [`end_command`].
pub fn begin_command(h: &ClientHandle) {
    let mut inf = h.tracking.inflight.lock();
    if inf.is_none() {
        *inf = Some(Vec::new());
    }
}

/// After the command's reply joined the outbox: appends the messages held
/// meanwhile, and clears CACHING unless `keep_caching` (the command was
/// a CLIENT subcommand or the client is in MULTI: Redis's resetClient).
pub fn end_command(server: &Env<'_>, h: &ClientHandle, keep_caching: bool) {
    let held = h.tracking.inflight.lock().take();
    if let Some(buf) = held {
        push_held(server, h, &buf);
    }
    if !keep_caching && h.tracking.flags() & CACHING != 0 {
        h.tracking.flags.fetch_and(!CACHING, Ordering::AcqRel);
    }
}

/// Sends the messages held since [`begin_command`] now, before the
/// command's reply, and keeps holding later ones: the keys evicted before
/// the command ran (server.c processCommand's performEvictions) are not
/// part of its execution, so Redis sends their invalidations first.
pub fn release_held(server: &Env<'_>, h: &ClientHandle) {
    let mut inf = h.tracking.inflight.lock();
    if let Some(buf) = inf.as_mut() {
        push_held(server, h, buf);
        buf.clear();
    }
}

fn push_held(server: &Env<'_>, h: &ClientHandle, buf: &[u8]) {
    if !buf.is_empty() {
        let limit = server.live.limit_for(h);
        if !h.outbox.push(&[buf], limit, crate::util::now_ms()) {
            h.close_for_limits();
        }
    }
}

/// trackingInvalidateKey: `key` was modified (`expired`: by expiry, which
/// no client caused, for BCAST's NOLOOP). Called from events.rs with no
/// shard lock held.
pub fn key_modified(server: &Env<'_>, key: &[u8], expired: bool) {
    invalidate(server, key, true, expired);
}

fn invalidate(server: &Env<'_>, key: &[u8], bcast: bool, expired: bool) {
    let t = &server.tracking;
    let current = CURRENT.with(Cell::get);
    if bcast && t.prefix_count.load(Ordering::Acquire) > 0 {
        let writer = if expired { 0 } else { current };
        t.bcast_keys.lock().push((key.into(), writer));
        t.bcast_pending.store(true, Ordering::Release);
    }
    if t.keys.load(Ordering::Acquire) == 0 {
        return;
    }
    let ids = {
        let mut g = t.shard(key).lock();
        match g.swap_remove(key) {
            Some(ids) => ids,
            None => return,
        }
    };
    t.keys.fetch_sub(1, Ordering::AcqRel);
    t.items.fetch_sub(ids.len() as u64, Ordering::AcqRel);
    for id in ids {
        let Some(h) = server.clients.get(id) else {
            continue;
        };
        let f = h.tracking.flags();
        if f & (ON | BCAST) != ON || (f & NOLOOP != 0 && id == current) {
            continue;
        }
        send(server, &h, Payload::Key(key));
    }
    if t.keys.load(Ordering::Acquire) == 0 {
        maybe_idle(server);
    }
}

/// trackingInvalidateKeysOnFlush: FLUSHDB / FLUSHALL. Every tracking client
/// gets a null (all keys); the table is emptied. With `lazy` (an ASYNC
/// flush) a table whose radix tree would have more than 64 nodes is freed
/// on the lazyfree thread, its keys counted by INFO `lazyfreed_objects`
/// (Redis's freeTrackingRadixTreeAsync).
pub fn flushed(server: &Env<'_>, lazy: bool) {
    let t = &server.tracking;
    if t.clients.load(Ordering::Acquire) > 0 {
        for h in server.clients.all() {
            if h.tracking.flags() & ON != 0 {
                send(server, &h, Payload::Null);
            }
        }
    }
    let mut old = Vec::new();
    let mut keys = 0;
    for s in t.table.iter() {
        let mut g = s.lock();
        let n = g.len() as u64;
        let items: u64 = g.values().map(|v| v.len() as u64).sum();
        let taken = std::mem::take(&mut *g);
        drop(g);
        t.keys.fetch_sub(n, Ordering::AcqRel);
        t.items.fetch_sub(items, Ordering::AcqRel);
        keys += taken.len();
        if !taken.is_empty() {
            old.push(taken);
        }
    }
    maybe_idle(server);
    if lazy && !old.is_empty() {
        // More than 64 keys make more than 64 nodes; below that the
        // tree's shape decides.
        let big = keys > crate::db::lazyfree::LAZYFREE_THRESHOLD || {
            let mut ks: Vec<&[u8]> = old.iter().flat_map(|t| t.keys().map(|k| &**k)).collect();
            ks.sort_unstable();
            crate::db::lazyfree::rax_node_count(&ks) > crate::db::lazyfree::LAZYFREE_THRESHOLD
        };
        if big {
            crate::db::lazyfree::free_databases(old, keys);
        }
    }
}

/// trackingBroadcastInvalidationMessages: sends this thread's BCAST keys
/// collected during the batch, one message per prefix (keys in byte
/// order), to each client of the prefix (NOLOOP clients without the keys
/// they modified themselves). Called at the end of each batch of commands
/// and after active expiry steps.
///
/// It returns only once the keys of the caller's batch are in their
/// receivers' outboxes, even when another thread's flush took them: the
/// batch's replies are written after this, and a client that reads a key
/// after seeing the write's reply must get the invalidation first (Redis
/// sends them in `beforeSleep` before any reply).
pub fn flush_bcast(server: &Env<'_>) {
    let t = &server.tracking;
    if !t.bcast_pending.load(Ordering::Acquire) && t.bcast_flushing.load(Ordering::Acquire) == 0 {
        return;
    }
    t.bcast_flushing.fetch_add(1, Ordering::AcqRel);
    let one_at_a_time = t.bcast_flush.lock();
    let pending = {
        let mut b = t.bcast_keys.lock();
        t.bcast_pending.store(false, Ordering::Release);
        std::mem::take(&mut *b)
    };
    send_bcast(server, &pending);
    drop(one_at_a_time);
    t.bcast_flushing.fetch_sub(1, Ordering::AcqRel);
}

/// Sends `pending` (key, writer) to the clients of each matching prefix.
fn send_bcast(server: &Env<'_>, pending: &[(Box<[u8]>, u64)]) {
    if pending.is_empty() {
        return;
    }
    let g = server.tracking.prefixes.read();
    for (prefix, clients) in g.iter() {
        let mut keys: BTreeMap<&[u8], u64> = BTreeMap::new();
        for (k, w) in pending {
            if k.starts_with(prefix) {
                keys.insert(k, *w);
            }
        }
        if keys.is_empty() {
            continue;
        }
        let all = encode_keys(keys.keys().copied(), keys.len());
        for h in clients {
            let f = h.tracking.flags();
            if f & NOLOOP != 0 {
                let mine: Vec<&[u8]> = keys
                    .iter()
                    .filter(|(_, w)| **w != h.id)
                    .map(|(k, _)| *k)
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                let n = mine.len();
                send(server, h, Payload::Proto(&encode_keys(mine.into_iter(), n)));
            } else {
                send(server, h, Payload::Proto(&all));
            }
        }
    }
}

fn encode_keys<'a>(keys: impl Iterator<Item = &'a [u8]>, n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(16 + n * 16);
    v.push(b'*');
    v.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    v.extend_from_slice(b"\r\n");
    for k in keys {
        v.push(b'$');
        v.extend_from_slice(itoa::Buffer::new().format(k.len()).as_bytes());
        v.extend_from_slice(b"\r\n");
        v.extend_from_slice(k);
        v.extend_from_slice(b"\r\n");
    }
    v
}

/// trackingLimitUsedSlots: while the table holds more keys than
/// tracking-table-max-keys, evicts random keys, invalidating them for
/// their clients as if modified; at most 100 keys per round times the
/// number of rounds that ended still above the limit. Called before each
/// command while clients track, and from the cron. True when keys were
/// invalidated.
pub fn limit_used_slots(server: &Env<'_>) -> bool {
    let t = &server.tracking;
    let max = t.max_keys.load(Ordering::Relaxed);
    if max == 0 || t.keys.load(Ordering::Acquire) <= max {
        t.rounds.store(0, Ordering::Relaxed);
        return false;
    }
    let mut effort = 100 * (t.rounds.load(Ordering::Relaxed) as u64 + 1);
    let mut seed = crate::util::now_us() ^ 0x9e37_79b9_7f4a_7c15;
    while effort > 0 {
        effort -= 1;
        seed = crate::util::xorshift64(seed);
        let start = (seed as usize) % SHARDS;
        let mut victim = None;
        for k in 0..SHARDS {
            let g = t.table[(start + k) % SHARDS].lock();
            if !g.is_empty() {
                let i = ((seed >> 8) as usize) % g.len();
                victim = g.get_index(i).map(|(k, _)| k.to_vec());
                break;
            }
        }
        let Some(key) = victim else {
            break;
        };
        // Not a modification: BCAST clients are not told.
        invalidate(server, &key, false, false);
        if t.keys.load(Ordering::Acquire) <= max {
            t.rounds.store(0, Ordering::Relaxed);
            return true;
        }
    }
    t.rounds.fetch_add(1, Ordering::Relaxed);
    true
}
