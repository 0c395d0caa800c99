//! The Pub/Sub registry: which clients listen to which channels, patterns
//! and shard channels, and [`publish`], which delivers a message to them.
//!
//! The registry is one reader/writer lock over three maps (channel →
//! subscribers, pattern → subscribers, shard channel → subscribers), beside
//! the keyspace as in Redis's `server.pubsub_channels` /
//! `pubsub_patterns` / `pubsubshard_channels` (pubsub.c). Publishers take
//! the read lock and append the encoded frame to each subscriber's
//! [`Outbox`](crate::clients::Outbox); the subscriber's own connection
//! task, on whatever I/O thread it lives, writes the outbox to its socket.
//! Appending never waits for the subscriber, and a subscriber that falls
//! behind is closed by the output buffer limits.
//!
//! Ordering: frames from one publisher reach a subscriber in publish order
//! (one publisher appends sequentially). Subscribing and unsubscribing
//! change the registry under the write lock and queue their confirmation
//! under the same lock, so a message is either before a client's
//! "subscribe" confirmation (and not delivered) or after it. While a client
//! is subscribed, its own replies are queued in the same outbox after each
//! command, so a RESP3 client publishing to a channel it listens to gets the
//! push before its PUBLISH reply, as in Redis.
//!
//! Each connection keeps its own subscription sets in [`ClientSubs`]
//! (insertion order: UNSUBSCRIBE without arguments confirms in that order),
//! and mirrors their sizes into the handle for CLIENT LIST.

use crate::clients::ClientHandle;
use crate::resp::Out;
use indexmap::{IndexMap, IndexSet};
use parking_lot::RwLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// What Pub/Sub works on: the parts of a server (built by
/// `Server::pubsub_env`; the fields are named as the server's).
pub struct Env<'a> {
    /// The registry of subscriptions.
    pub pubsub: &'a PubSub,
    /// Output buffer limits of the receivers.
    pub live: &'a crate::config::LiveConfig,
}

type Subscribers = Vec<Arc<ClientHandle>>;
type Map = IndexMap<Vec<u8>, Subscribers, foldhash::fast::RandomState>;

/// The three kinds of subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// SUBSCRIBE: exact channel names.
    Channel,
    /// PSUBSCRIBE: glob patterns (Redis's stringmatchlen, case-sensitive).
    Pattern,
    /// SSUBSCRIBE: shard channels (SPUBLISH only; no patterns).
    Shard,
}

impl Kind {
    /// The confirmation word of (un)subscribing: `subscribe`, `psubscribe`,
    /// `ssubscribe`, or with `un` the unsubscribe forms.
    fn word(self, un: bool) -> &'static [u8] {
        match (self, un) {
            (Kind::Channel, false) => b"subscribe",
            (Kind::Channel, true) => b"unsubscribe",
            (Kind::Pattern, false) => b"psubscribe",
            (Kind::Pattern, true) => b"punsubscribe",
            (Kind::Shard, false) => b"ssubscribe",
            (Kind::Shard, true) => b"sunsubscribe",
        }
    }
}

#[derive(Default)]
struct Inner {
    channels: Map,
    patterns: Map,
    shard: Map,
}

impl Inner {
    fn map(&mut self, k: Kind) -> &mut Map {
        match k {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }
}

/// The server-wide registry ([`Server::pubsub`]).
#[derive(Default)]
pub struct PubSub {
    inner: RwLock<Inner>,
    /// Number of registry entries (channels + patterns + shard channels
    /// with at least one subscriber): [`publish`] returns at once when 0,
    /// with one atomic load.
    entries: AtomicUsize,
}

impl PubSub {
    /// Channels with at least one subscriber (INFO pubsub_channels).
    pub fn channel_count(&self) -> usize {
        self.inner.read().channels.len()
    }

    /// Patterns with at least one subscriber (INFO pubsub_patterns, PUBSUB
    /// NUMPAT).
    pub fn pattern_count(&self) -> usize {
        self.inner.read().patterns.len()
    }

    /// Shard channels with at least one subscriber (INFO
    /// pubsubshard_channels).
    pub fn shard_count(&self) -> usize {
        self.inner.read().shard.len()
    }

    /// Active channels (or shard channels) matching the glob `pat` (all
    /// when None): PUBSUB CHANNELS / SHARDCHANNELS.
    pub fn list(&self, shard: bool, pat: Option<&[u8]>) -> Vec<Vec<u8>> {
        let g = self.inner.read();
        let m = if shard { &g.shard } else { &g.channels };
        m.keys()
            .filter(|c| pat.is_none_or(|p| crate::util::glob_match(p, c, false)))
            .cloned()
            .collect()
    }

    /// Subscriber count of `channel` (patterns not counted): PUBSUB NUMSUB
    /// / SHARDNUMSUB.
    pub fn numsub(&self, shard: bool, channel: &[u8]) -> usize {
        let g = self.inner.read();
        let m = if shard { &g.shard } else { &g.channels };
        m.get(channel).map_or(0, Vec::len)
    }
}

/// One connection's subscriptions, in subscription order.
#[derive(Debug, Default)]
pub struct ClientSubs {
    /// SUBSCRIBE channels.
    pub channels: IndexSet<Vec<u8>, foldhash::fast::RandomState>,
    /// PSUBSCRIBE patterns.
    pub patterns: IndexSet<Vec<u8>, foldhash::fast::RandomState>,
    /// SSUBSCRIBE shard channels.
    pub shard: IndexSet<Vec<u8>, foldhash::fast::RandomState>,
}

impl ClientSubs {
    fn set(&mut self, k: Kind) -> &mut IndexSet<Vec<u8>, foldhash::fast::RandomState> {
        match k {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }

    /// The count a confirmation reports: channels + patterns for those
    /// kinds, shard channels alone for the shard kind (Redis's
    /// clientSubscriptionsCount / clientShardSubscriptionsCount).
    fn count(&self, k: Kind) -> usize {
        match k {
            Kind::Shard => self.shard.len(),
            _ => self.channels.len() + self.patterns.len(),
        }
    }

    fn total(&self) -> usize {
        self.channels.len() + self.patterns.len() + self.shard.len()
    }
}

fn bulk_header(v: &mut Vec<u8>, n: usize) {
    v.push(b'$');
    v.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    v.extend_from_slice(b"\r\n");
}

fn bulk(v: &mut Vec<u8>, s: &[u8]) {
    bulk_header(v, s.len());
    v.extend_from_slice(s);
    v.extend_from_slice(b"\r\n");
}

/// Appends one message frame to each of `subs`: `head` (array or push
/// header, chosen per subscriber's protocol), `mid` (the frame's bulk
/// strings before the payload), then the payload's bulk header and bytes.
/// Returns the number of subscribers reached (the one a message closes
/// counts, as in Redis).
fn deliver(
    server: &Env<'_>,
    subs: &Subscribers,
    n: usize,
    mid: &[u8],
    message: &[u8],
    now: u64,
) -> usize {
    let mut msg_head = Vec::with_capacity(24);
    bulk_header(&mut msg_head, message.len());
    let head2: [&[u8]; 2] = [b"*3\r\n", b">3\r\n"];
    let head3: [&[u8]; 2] = [b"*4\r\n", b">4\r\n"];
    let heads = if n == 3 { head2 } else { head3 };
    let mut count = 0;
    for h in subs {
        // A client already closed for its limits is leaving: not counted.
        if h.outbox.is_closed() {
            continue;
        }
        count += 1;
        let head = heads[usize::from(h.outbox.resp3())];
        let parts: [&[u8]; 5] = [head, mid, &msg_head, message, b"\r\n"];
        if !h.outbox.push(&parts, server.live.limit_for(h), now) {
            h.close_for_limits();
        }
    }
    count
}

/// Publishes `message` on `channel`: every client subscribed to the channel
/// gets `message` (or `>3` in RESP3) [message, channel, payload], every
/// client whose pattern matches it gets [pmessage, pattern, channel,
/// payload]. Returns the number of deliveries (a client subscribed through
/// both a channel and a pattern counts twice), as PUBLISH replies.
///
/// Callable from any thread and any command (keyspace notifications use
/// it): it takes the registry's read lock and each receiver's outbox lock
/// briefly, never waits for a receiver, and closes receivers that pass
/// their output buffer limit. Costs one atomic load when nobody is
/// subscribed to anything. Redis: pubsubPublishMessage (pubsub.c).
pub fn publish(server: &Env<'_>, channel: &[u8], message: &[u8]) -> usize {
    publish_kind(server, channel, message, false)
}

/// SPUBLISH: like [`publish`] for shard channels (`smessage` frames, no
/// pattern matching).
pub fn spublish(server: &Env<'_>, channel: &[u8], message: &[u8]) -> usize {
    publish_kind(server, channel, message, true)
}

fn publish_kind(server: &Env<'_>, channel: &[u8], message: &[u8], shard: bool) -> usize {
    let ps = &server.pubsub;
    if ps.entries.load(Ordering::Acquire) == 0 {
        return 0;
    }
    let now = crate::util::now_ms();
    let g = ps.inner.read();
    let mut receivers = 0;
    let map = if shard { &g.shard } else { &g.channels };
    if let Some(subs) = map.get(channel) {
        let mut mid = Vec::with_capacity(channel.len() + 32);
        bulk(&mut mid, if shard { b"smessage" } else { b"message" });
        bulk(&mut mid, channel);
        receivers += deliver(server, subs, 3, &mid, message, now);
    }
    if !shard {
        for (pat, subs) in g.patterns.iter() {
            if !crate::util::glob_match(pat, channel, false) {
                continue;
            }
            let mut mid = Vec::with_capacity(pat.len() + channel.len() + 40);
            bulk(&mut mid, b"pmessage");
            bulk(&mut mid, pat);
            bulk(&mut mid, channel);
            receivers += deliver(server, subs, 4, &mid, message, now);
        }
    }
    receivers
}

/// Redis 7.0's `ACLKillPubsubClientsIfNeeded` (acl.c), after ACL SETUSER
/// changed user `name` to `new`: every client authenticated as that user
/// with a subscription the new rules no longer allow is closed. A channel
/// (or shard channel) must match one of the channel patterns of any of the
/// user's selectors; a pattern subscription must equal one of them
/// literally; a selector with `allchannels` allows everything. Other
/// clients are killed at once (gone from CLIENT LIST); returns true when
/// the client `me` itself must close after its reply.
pub fn kill_revoked_subscribers(
    server: &Env<'_>,
    name: &[u8],
    new: &crate::acl::User,
    me: u64,
) -> bool {
    if server.pubsub.entries.load(Ordering::Acquire) == 0
        || new.selectors.iter().any(|s| s.allchannels)
    {
        return false;
    }
    let allowed = |ch: &[u8], literal: bool| {
        new.selectors.iter().any(|s| {
            s.channels.iter().any(|p| {
                if literal {
                    p.as_slice() == ch
                } else {
                    crate::util::glob_match(p, ch, false)
                }
            })
        })
    };
    let shown = String::from_utf8_lossy(name);
    let is_user = |h: &ClientHandle| {
        let i = h.info.lock();
        i.user == shown || (i.user.is_empty() && name == b"default")
    };
    let mut doomed: Vec<Arc<ClientHandle>> = Vec::new();
    {
        let g = server.pubsub.inner.read();
        for (map, literal) in [(&g.channels, false), (&g.shard, false), (&g.patterns, true)] {
            for (ch, subs) in map.iter() {
                if allowed(ch, literal) {
                    continue;
                }
                for h in subs {
                    if !doomed.iter().any(|d| d.id == h.id) && is_user(h) {
                        doomed.push(h.clone());
                    }
                }
            }
        }
    }
    let mut me_too = false;
    for h in doomed {
        if h.id == me {
            me_too = true;
        } else {
            h.kill();
        }
    }
    me_too
}

/// Mirrors the client's subscription counts into its handle (CLIENT LIST
/// sub= psub= ssub=, flag `P`) and drops its [`ClientSubs`] once empty
/// (the client leaves subscribed mode, Redis's CLIENT_PUBSUB flag).
fn sync_counts(h: &ClientHandle, mine: &mut Option<Box<ClientSubs>>) {
    let (c, p, s) = mine.as_ref().map_or((0, 0, 0), |x| {
        (x.channels.len(), x.patterns.len(), x.shard.len())
    });
    let o = &h.outbox;
    o.sub.store(c, Ordering::Relaxed);
    o.psub.store(p, Ordering::Relaxed);
    o.ssub.store(s, Ordering::Relaxed);
    let on = c + p + s > 0;
    if !on {
        *mine = None;
    }
    let mut i = h.info.lock();
    let has = i.flags.contains('P');
    if on && !has {
        // Redis's flag order: O/S (replica), M (master), then P.
        let at = i
            .flags
            .find(|ch: char| !matches!(ch, 'O' | 'S' | 'M'))
            .unwrap_or(i.flags.len());
        i.flags.insert(at, 'P');
    } else if !on && has {
        i.flags.retain(|ch| ch != 'P');
    }
}

/// Writes one (un)subscribe confirmation into `out`: [word, name or null,
/// count], a push frame in RESP3.
fn confirm(out: &mut Out, word: &[u8], name: Option<&[u8]>, count: usize) {
    out.push(3);
    out.bulk(word);
    match name {
        Some(n) => out.bulk(n),
        None => out.null(),
    }
    out.int(count as i64);
}

/// SUBSCRIBE / PSUBSCRIBE / SSUBSCRIBE `names` for the calling client: each
/// is registered and confirmed (even when already subscribed, as Redis).
/// The confirmations, with every reply before them in `out`, are queued in
/// the client's outbox atomically with the registration. Confirmations are
/// pushes: CLIENT REPLY OFF/SKIP does not drop them (as Redis 7.0's
/// CLIENT_PUSHING).
///
/// `h` is the client's handle, `mine` its connection's subscriptions.
pub fn subscribe(
    server: &Env<'_>,
    h: &Arc<ClientHandle>,
    mine: &mut Option<Box<ClientSubs>>,
    out: &mut Out,
    kind: Kind,
    names: &[&[u8]],
) {
    for &name in names {
        let subs = mine.get_or_insert_with(Default::default);
        let new = subs.set(kind).insert(name.to_vec());
        let count = subs.count(kind);
        confirm(out, kind.word(false), Some(name), count);
        let mut g = server.pubsub.inner.write();
        if new {
            let e = g.map(kind).entry(name.to_vec()).or_default();
            if e.is_empty() {
                server.pubsub.entries.fetch_add(1, Ordering::AcqRel);
            }
            e.push(h.clone());
        }
        // Counts first: limit_for must see the pubsub class for messages
        // that follow this confirmation.
        let o = &h.outbox;
        match kind {
            Kind::Channel => o.sub.store(subs.channels.len(), Ordering::Relaxed),
            Kind::Pattern => o.psub.store(subs.patterns.len(), Ordering::Relaxed),
            Kind::Shard => o.ssub.store(subs.shard.len(), Ordering::Relaxed),
        }
        o.append_own(&mut out.buf, out.resp3);
        drop(g);
    }
    sync_counts(h, mine);
}

/// Removes the client from the registry entry `name` of `kind` (under the
/// held write lock).
fn unregister(server: &Env<'_>, g: &mut Inner, kind: Kind, name: &[u8], id: u64) {
    let m = g.map(kind);
    if let Some(v) = m.get_mut(name) {
        v.retain(|h| h.id != id);
        if v.is_empty() {
            m.swap_remove(name);
            server.pubsub.entries.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// UNSUBSCRIBE / PUNSUBSCRIBE / SUNSUBSCRIBE: `names`, or every
/// subscription of `kind` when empty. Each name is confirmed, subscribed or
/// not; with no names and no subscriptions one confirmation with a null
/// name and the count (Redis's pubsubUnsubscribeAllChannels).
pub fn unsubscribe(
    server: &Env<'_>,
    h: &ClientHandle,
    mine: &mut Option<Box<ClientSubs>>,
    out: &mut Out,
    kind: Kind,
    names: &[&[u8]],
) {
    let all: Vec<Vec<u8>>;
    let list: Vec<&[u8]> = if names.is_empty() {
        all = mine
            .as_mut()
            .map(|s| s.set(kind).iter().cloned().collect())
            .unwrap_or_default();
        all.iter().map(Vec::as_slice).collect()
    } else {
        names.to_vec()
    };
    let id = h.id;
    for name in &list {
        let removed = mine
            .as_mut()
            .is_some_and(|s| s.set(kind).shift_remove(*name));
        let count = mine.as_ref().map_or(0, |s| s.count(kind));
        confirm(out, kind.word(true), Some(name), count);
        let mut g = server.pubsub.inner.write();
        if removed {
            unregister(server, &mut g, kind, name, id);
        }
        h.outbox.append_own(&mut out.buf, out.resp3);
        drop(g);
    }
    if list.is_empty() {
        let count = mine.as_ref().map_or(0, |s| s.count(kind));
        confirm(out, kind.word(true), None, count);
        h.outbox.append_own(&mut out.buf, out.resp3);
    }
    sync_counts(h, mine);
}

/// Drops every subscription of the client without confirmations (RESET,
/// connection close; Redis's clearClientConnectionState / freeClient).
pub fn unsubscribe_all(server: &Env<'_>, h: &ClientHandle, mine: &mut Option<Box<ClientSubs>>) {
    let Some(subs) = mine.take() else {
        return;
    };
    if subs.total() > 0 {
        let id = h.id;
        let mut g = server.pubsub.inner.write();
        for (kind, set) in [
            (Kind::Channel, &subs.channels),
            (Kind::Pattern, &subs.patterns),
            (Kind::Shard, &subs.shard),
        ] {
            for name in set {
                unregister(server, &mut g, kind, name, id);
            }
        }
    }
    sync_counts(h, mine);
}

/// The error for a command refused in RESP2 subscribed mode; `fullname` is
/// `container|sub` for subcommands, as Redis prints it.
pub fn refused_message(fullname: &str) -> String {
    format!(
        "ERR Can't execute '{fullname}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    )
}
