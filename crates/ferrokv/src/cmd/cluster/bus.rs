//! The cluster bus: Redis 7.0's binary `clusterMsg` protocol on the bus
//! port (client port + 10000 unless cluster-port says otherwise), so
//! redis-server 7.0 nodes and ferrokv nodes share one cluster.
//!
//! Wire format (cluster.h; every integer in network byte order): a
//! 2256-byte header — signature `RCmb`, total length, version 1, client
//! port, type, count, currentEpoch, configEpoch, replication offset,
//! sender name, the 2048-byte slot bitmap, master name, announced IP,
//! extension count, reserved bytes, plaintext port, bus port, flags,
//! cluster state, message flags — then the type's data: gossip entries
//! of 104 bytes (PING, PONG, MEET) followed by 8-byte aligned
//! extensions, a node name (FAIL), channel and message (PUBLISH,
//! PUBLISHSHARD), a config epoch, name and slot bitmap (UPDATE).
//!
//! The bus runs on one thread ("ferrokv-cluster") with its own
//! current-thread tokio runtime: the listener, one reader and one writer
//! task per link, and the cron (every 100 ms: connect, ping, detect
//! failures, elect, Redis's clusterCron). Handling a message locks the
//! cluster state once; work outside the cluster (following a new master,
//! publishing, deleting keys of lost slots) is done after unlocking.

use super::{count_keys_in_slot, del_keys_in_slot};
use crate::cluster::*;
use crate::server::Server;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Message types (CLUSTERMSG_TYPE_*).
pub mod msg {
    /// PING.
    pub const PING: u16 = 0;
    /// PONG (reply to PING / MEET, or a broadcast of our config).
    pub const PONG: u16 = 1;
    /// MEET: PING that makes the receiver add us.
    pub const MEET: u16 = 2;
    /// A node is failing.
    pub const FAIL: u16 = 3;
    /// Pub/Sub PUBLISH.
    pub const PUBLISH: u16 = 4;
    /// A replica asks for a vote.
    pub const AUTH_REQUEST: u16 = 5;
    /// A master votes.
    pub const AUTH_ACK: u16 = 6;
    /// Another node's slot configuration.
    pub const UPDATE: u16 = 7;
    /// A replica starts a manual failover.
    pub const MFSTART: u16 = 8;
    /// Module message (ignored).
    pub const MODULE: u16 = 9;
    /// Sharded Pub/Sub SPUBLISH.
    pub const PUBLISHSHARD: u16 = 10;
}

/// Header length (offsetof(clusterMsg, data)).
pub const HDR_LEN: usize = 2256;
/// One gossip entry.
pub const GOSSIP_LEN: usize = 104;
/// sizeof(clusterMsg): the header and the largest data (UPDATE).
pub const FULL_LEN: usize = HDR_LEN + 8 + NAMELEN + SLOTS / 8;
/// Largest message accepted (bytes).
pub const MAX_MSG: usize = 1 << 30;
/// Message flag 0: the master is paused for a manual failover.
pub const MF_PAUSED: u8 = 1;
/// How long after pausing writes for a manual failover a master waits
/// before announcing its offset as final (ms).
const MF_SETTLE_MS: u64 = 20;
/// Message flag 0: vote even if the master is up (manual failover).
pub const MF_FORCEACK: u8 = 2;
/// Message flag 0: extensions follow the gossip.
pub const MF_EXT_DATA: u8 = 4;
/// Extension type: hostname.
pub const EXT_HOSTNAME: u16 = 0;
/// Extension type: a forgotten node (name + TTL).
pub const EXT_FORGOTTEN_NODE: u16 = 2;

const O_TOTLEN: usize = 4;
const O_VER: usize = 8;
const O_PORT: usize = 10;
const O_TYPE: usize = 12;
const O_COUNT: usize = 14;
const O_CUR_EPOCH: usize = 16;
const O_CFG_EPOCH: usize = 24;
const O_OFFSET: usize = 32;
const O_SENDER: usize = 40;
const O_SLOTS: usize = 80;
const O_SLAVEOF: usize = 2128;
const O_MYIP: usize = 2168;
const O_EXTENSIONS: usize = 2214;
const O_PPORT: usize = 2246;
const O_CPORT: usize = 2248;
const O_FLAGS: usize = 2250;
const O_STATE: usize = 2252;
const O_MFLAGS: usize = 2253;
const IP_LEN: usize = 46;

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}
fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}
fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}
fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}
fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}
/// A NUL-terminated C string field.
fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}
fn name_at(b: &[u8], at: usize) -> String {
    String::from_utf8_lossy(&b[at..at + NAMELEN]).into_owned()
}
fn is_null_name(b: &[u8], at: usize) -> bool {
    b[at..at + NAMELEN].iter().all(|&c| c == 0)
}

/// What the bus needs from the server beyond the cluster state.
struct Ctx<'a> {
    server: &'a Arc<Server>,
    settings: Settings,
}

impl Ctx<'_> {
    fn my_offset(&self, st: &State) -> u64 {
        let r = &self.server.repl;
        if st.myself().is_replica() {
            r.processed.load(Ordering::Acquire)
        } else {
            r.backlog.end()
        }
    }
}

/// Builds a message header of type `typ` for this node (Redis's
/// clusterBuildMessageHdr); the caller appends data and sets the length.
fn header(ctx: &Ctx<'_>, st: &State, typ: u16) -> Vec<u8> {
    let mut b = vec![0u8; HDR_LEN];
    b[0..4].copy_from_slice(b"RCmb");
    put16(&mut b, O_VER, 1);
    put16(&mut b, O_TYPE, typ);
    let me = st.myself();
    let master = match me.master {
        Some(m) if me.is_replica() && st.nodes.get(m).is_some_and(Option::is_some) => st.node(m),
        _ => me,
    };
    b[O_SENDER..O_SENDER + NAMELEN].copy_from_slice(me.name.as_bytes());
    let s = &ctx.settings;
    if !s.announce_ip.is_empty() {
        let ip = s.announce_ip.as_bytes();
        let n = ip.len().min(IP_LEN - 1);
        b[O_MYIP..O_MYIP + n].copy_from_slice(&ip[..n]);
    }
    b[O_SLOTS..O_SLOTS + SLOTS / 8].copy_from_slice(&master.slots[..]);
    if let Some(m) = me.master {
        if let Some(Some(mn)) = st.nodes.get(m) {
            b[O_SLAVEOF..O_SLAVEOF + NAMELEN].copy_from_slice(mn.name.as_bytes());
        }
    }
    let (port, pport, cport) = s.announced();
    put16(&mut b, O_PORT, port);
    put16(&mut b, O_PPORT, pport);
    put16(&mut b, O_CPORT, cport);
    put16(&mut b, O_FLAGS, me.flags);
    b[O_STATE] = if st.state_ok { 0 } else { 1 };
    put64(&mut b, O_CUR_EPOCH, st.current_epoch);
    put64(&mut b, O_CFG_EPOCH, master.config_epoch);
    put64(&mut b, O_OFFSET, ctx.my_offset(st));
    // Paused (and its offset final) once the writes that were running
    // when the pause began have landed: commands run on several threads
    // here, so one may have passed the pause check just before it.
    if me.is_master() && st.mf_end != 0 && crate::util::now_ms() >= st.mf_paused_ms + MF_SETTLE_MS {
        b[O_MFLAGS] |= MF_PAUSED;
    }
    b
}

fn finish(mut b: Vec<u8>) -> Vec<u8> {
    let len = b.len() as u32;
    put32(&mut b, O_TOTLEN, len);
    b
}

fn gossip_entry(b: &mut Vec<u8>, n: &Node) {
    let start = b.len();
    b.resize(start + GOSSIP_LEN, 0);
    let g = &mut b[start..];
    g[..NAMELEN].copy_from_slice(n.name.as_bytes());
    put32(g, 40, (n.ping_sent / 1000) as u32);
    put32(g, 44, (n.pong_received / 1000) as u32);
    let ip = n.ip.as_bytes();
    let k = ip.len().min(IP_LEN - 1);
    g[48..48 + k].copy_from_slice(&ip[..k]);
    put16(g, 94, n.port);
    put16(g, 96, n.cport);
    put16(g, 98, n.flags);
    put16(g, 100, n.pport);
}

/// A PING, PONG or MEET with gossip about some nodes and every PFAIL one,
/// plus the hostname and forgotten-node extensions (Redis's
/// clusterSendPing). `to`: the node it goes to (skipped in the gossip).
fn ping_message(ctx: &Ctx<'_>, st: &mut State, typ: u16, to: Option<usize>) -> Vec<u8> {
    let mut b = header(ctx, st, typ);
    let all: Vec<usize> = st.numbers().collect();
    let fresh = all.len().saturating_sub(2);
    let wanted = (all.len() / 10).max(3).min(fresh);
    let mut chosen: Vec<usize> = Vec::new();
    let mut tries = wanted * 3;
    while chosen.len() < wanted && tries > 0 && !all.is_empty() {
        tries -= 1;
        let n = all[(crate::util::rand_u64() % all.len() as u64) as usize];
        let node = st.node(n);
        if n == MYSELF || Some(n) == to || node.timed_out() {
            continue;
        }
        if node.flags & (flag::HANDSHAKE | flag::NOADDR) != 0
            || (node.link.is_none() && node.numslots == 0)
        {
            continue;
        }
        if chosen.contains(&n) {
            continue;
        }
        chosen.push(n);
    }
    for &n in &all {
        let node = st.node(n);
        if n != MYSELF
            && node.timed_out()
            && node.flags & (flag::HANDSHAKE | flag::NOADDR) == 0
            && !chosen.contains(&n)
        {
            chosen.push(n);
        }
    }
    for &n in &chosen {
        gossip_entry(&mut b, st.node(n));
    }
    put16(&mut b, O_COUNT, chosen.len() as u16);
    let mut exts = 0u16;
    let hostname = st.myself().hostname.clone();
    if !hostname.is_empty() {
        let body = hostname.len() + 1;
        let len = 8 + body.div_ceil(8) * 8;
        let start = b.len();
        b.resize(start + len, 0);
        put32(&mut b, start, len as u32);
        put16(&mut b, start + 4, EXT_HOSTNAME);
        b[start + 8..start + 8 + hostname.len()].copy_from_slice(hostname.as_bytes());
        exts += 1;
    }
    let now_s = now_ms() / 1000;
    for (name, until) in &st.blacklist {
        if *until < now_s {
            continue;
        }
        let start = b.len();
        b.resize(start + 8 + NAMELEN + 8, 0);
        put32(&mut b, start, (8 + NAMELEN + 8) as u32);
        put16(&mut b, start + 4, EXT_FORGOTTEN_NODE);
        b[start + 8..start + 8 + NAMELEN].copy_from_slice(name.as_bytes());
        put64(&mut b, start + 8 + NAMELEN, until - now_s);
        exts += 1;
    }
    if exts > 0 {
        put16(&mut b, O_EXTENSIONS, exts);
        b[O_MFLAGS] |= MF_EXT_DATA;
    }
    finish(b)
}

fn count_sent(st: &mut State, typ: u16) {
    if let Some(c) = st.stats_sent.get_mut(typ as usize) {
        *c += 1;
    }
}

/// Sends a PING/PONG/MEET on node `n`'s outbound link; a PING records
/// the time it was sent.
fn send_ping(ctx: &Ctx<'_>, st: &mut State, n: usize, typ: u16) {
    if st.node(n).link.is_none() {
        return;
    }
    let m = ping_message(ctx, st, typ, Some(n));
    count_sent(st, typ);
    let node = st.node_mut(n);
    if typ == msg::PING && node.ping_sent == 0 {
        node.ping_sent = now_ms();
    }
    if let Some(l) = &node.link {
        l.send(m);
    }
}

/// Sends `m` to every node with an outbound link (not in handshake).
fn broadcast(st: &mut State, m: &[u8], typ: u16) {
    let targets: Vec<usize> = st
        .numbers()
        .filter(|&n| n != MYSELF && !st.node(n).in_handshake() && st.node(n).link.is_some())
        .collect();
    for n in targets {
        if let Some(l) = &st.node(n).link {
            l.send(m.to_vec());
        }
        count_sent(st, typ);
    }
}

/// Which nodes a PONG broadcast reaches.
#[derive(PartialEq)]
enum PongTarget {
    All,
    LocalReplicas,
}

/// Broadcasts a PONG with our configuration (Redis's clusterBroadcastPong).
fn broadcast_pong(ctx: &Ctx<'_>, st: &mut State, target: PongTarget) {
    let me_master = if st.myself().is_master() {
        Some(MYSELF)
    } else {
        st.my_master()
    };
    let targets: Vec<usize> = st
        .numbers()
        .filter(|&n| n != MYSELF && !st.node(n).in_handshake() && st.node(n).link.is_some())
        .filter(|&n| {
            target == PongTarget::All
                || (st.node(n).is_replica()
                    && st.node(n).master.is_some()
                    && st.node(n).master == me_master)
        })
        .collect();
    for n in targets {
        let m = ping_message(ctx, st, msg::PONG, Some(n));
        count_sent(st, msg::PONG);
        if let Some(l) = &st.node(n).link {
            l.send(m);
        }
    }
}

/// Broadcasts FAIL about `name` (Redis's clusterSendFail).
fn send_fail(ctx: &Ctx<'_>, st: &mut State, name: &str) {
    let mut b = header(ctx, st, msg::FAIL);
    b.extend_from_slice(name.as_bytes());
    let m = finish(b);
    broadcast(st, &m, msg::FAIL);
}

/// An UPDATE about node `about` sent to `to` (Redis's clusterSendUpdate).
fn send_update(ctx: &Ctx<'_>, st: &mut State, to: usize, about: usize) {
    if st.node(to).link.is_none() {
        return;
    }
    let mut b = header(ctx, st, msg::UPDATE);
    let a = st.node(about);
    b.extend_from_slice(&a.config_epoch.to_be_bytes());
    b.extend_from_slice(a.name.as_bytes());
    b.extend_from_slice(&a.slots[..]);
    let m = finish(b);
    count_sent(st, msg::UPDATE);
    if let Some(l) = &st.node(to).link {
        l.send(m);
    }
}

/// Builds a PUBLISH / PUBLISHSHARD message (Redis's clusterSendPublish).
fn publish_message(
    ctx: &Ctx<'_>,
    st: &State,
    channel: &[u8],
    message: &[u8],
    shard: bool,
) -> Vec<u8> {
    let typ = if shard {
        msg::PUBLISHSHARD
    } else {
        msg::PUBLISH
    };
    let mut b = header(ctx, st, typ);
    b.extend_from_slice(&(channel.len() as u32).to_be_bytes());
    b.extend_from_slice(&(message.len() as u32).to_be_bytes());
    b.extend_from_slice(channel);
    b.extend_from_slice(message);
    // The data struct is 16 bytes with 8 of placeholder: pad like Redis.
    let min = HDR_LEN + 16;
    if b.len() < min {
        b.resize(min, 0);
    }
    finish(b)
}

/// Propagates a PUBLISH to every node (Redis's clusterPropagatePublish).
pub fn propagate_publish(server: &Arc<Server>, channel: &[u8], message: &[u8]) {
    let ctx = Ctx {
        server,
        settings: server.cluster.settings(),
    };
    let mut st = server.cluster.state.lock();
    let m = publish_message(&ctx, &st, channel, message, false);
    broadcast(&mut st, &m, msg::PUBLISH);
}

/// Propagates an SPUBLISH to this node's shard: its master and replicas
/// (Redis's clusterPropagatePublishShard).
pub fn propagate_publish_shard(server: &Arc<Server>, channel: &[u8], message: &[u8]) {
    let ctx = Ctx {
        server,
        settings: server.cluster.settings(),
    };
    let mut st = server.cluster.state.lock();
    let m = publish_message(&ctx, &st, channel, message, true);
    let master = if st.myself().is_master() {
        Some(MYSELF)
    } else {
        st.my_master()
    };
    let Some(master) = master else { return };
    let mut targets = st.replicas_of(master);
    targets.push(master);
    for n in targets {
        if n == MYSELF {
            continue;
        }
        if let Some(l) = &st.node(n).link {
            l.send(m.clone());
        }
        count_sent(&mut st, msg::PUBLISHSHARD);
    }
}

/// Work a message leaves for after the state is unlocked.
#[derive(Default)]
struct After {
    /// Follow this (ip, port) as our master.
    follow: Option<(String, u16)>,
    /// Stop replicating (we were promoted).
    promote: bool,
    /// Delete the keys of these slots (lost to a newer owner).
    del_slots: Vec<u16>,
    /// Deliver a published message: (channel, message, shard).
    publish: Option<(Vec<u8>, Vec<u8>, bool)>,
    /// The manual failover this master paused for is over: writes resume
    /// (Redis's resetManualFailover).
    unpause: bool,
}

/// What a link's reader knows about its link.
struct LinkInfo {
    id: u64,
    inbound: bool,
    /// The node of an outbound link.
    node: Option<usize>,
    /// Our address on this connection (for learning our own IP).
    local_ip: String,
    /// The peer's address.
    peer_ip: String,
}

/// Checks a message's length for its type (Redis's clusterIsValidPacket).
fn valid_length(b: &[u8]) -> bool {
    let totlen = b.len();
    if totlen < HDR_LEN {
        return false;
    }
    let typ = be16(b, O_TYPE);
    let count = be16(b, O_COUNT) as usize;
    let expected = match typ {
        msg::PING | msg::PONG | msg::MEET => {
            let mut explen = HDR_LEN + GOSSIP_LEN * count;
            if b[O_MFLAGS] & MF_EXT_DATA != 0 {
                let exts = be16(b, O_EXTENSIONS);
                let mut at = explen;
                for _ in 0..exts {
                    if at + 8 > totlen {
                        return false;
                    }
                    let l = be32(b, at) as usize;
                    if l < 8 || !l.is_multiple_of(8) {
                        return false;
                    }
                    at += l;
                }
                explen = at;
            }
            explen
        }
        msg::FAIL => HDR_LEN + NAMELEN,
        msg::PUBLISH | msg::PUBLISHSHARD => {
            if totlen < HDR_LEN + 8 {
                return false;
            }
            HDR_LEN + 8 + be32(b, HDR_LEN) as usize + be32(b, HDR_LEN + 4) as usize
        }
        msg::AUTH_REQUEST | msg::AUTH_ACK | msg::MFSTART => HDR_LEN,
        msg::UPDATE => FULL_LEN,
        msg::MODULE => {
            if totlen < HDR_LEN + 16 {
                return false;
            }
            HDR_LEN + 13 + be32(b, HDR_LEN + 8) as usize
        }
        _ => return true,
    };
    // PUBLISH pads to the struct size; accept the padded form too.
    totlen == expected
        || (matches!(typ, msg::PUBLISH | msg::PUBLISHSHARD | msg::MODULE)
            && totlen >= expected
            && totlen <= expected.max(HDR_LEN + 16))
}

/// Updates node `n`'s address from a message when it changed (Redis's
/// nodeUpdateAddressIfNeeded); true when it did.
fn update_address(st: &mut State, n: usize, li: &LinkInfo, b: &[u8]) -> bool {
    if n == MYSELF {
        return false;
    }
    let myip = cstr(&b[O_MYIP..O_MYIP + IP_LEN]);
    let ip = if myip.is_empty() {
        li.peer_ip.clone()
    } else {
        myip
    };
    let port = be16(b, O_PORT);
    let cport = be16(b, O_CPORT);
    let pport = be16(b, O_PPORT);
    let node = st.node_mut(n);
    if node.ip == ip && node.port == port && node.cport == cport && node.pport == pport {
        return false;
    }
    node.ip = ip;
    node.port = port;
    node.cport = cport;
    node.pport = pport;
    node.link = None;
    node.flags &= !flag::NOADDR;
    true
}

/// Adds or removes failure reports and marks nodes FAIL from a gossip
/// section (Redis's clusterProcessGossipSection).
fn process_gossip(ctx: &Ctx<'_>, st: &mut State, b: &[u8], sender: Option<usize>) {
    let count = be16(b, O_COUNT) as usize;
    let now = now_ms();
    for i in 0..count {
        let g = &b[HDR_LEN + i * GOSSIP_LEN..HDR_LEN + (i + 1) * GOSSIP_LEN];
        let name = name_at(g, 0);
        let gflags = be16(g, 98);
        let gip = cstr(&g[48..48 + IP_LEN]);
        let (gport, gcport, gpport) = (be16(g, 94), be16(g, 96), be16(g, 100));
        match st.lookup(&name) {
            Some(n) => {
                if let Some(s) = sender {
                    if st.node(s).is_master() && n != MYSELF {
                        if gflags & (flag::FAIL | flag::PFAIL) != 0 {
                            let node = st.node_mut(n);
                            match node.fail_reports.iter_mut().find(|(r, _)| *r == s) {
                                Some(r) => r.1 = now,
                                None => node.fail_reports.push((s, now)),
                            }
                            mark_failing_if_needed(ctx, st, n);
                        } else {
                            st.node_mut(n).fail_reports.retain(|(r, _)| *r != s);
                        }
                    }
                }
                let timeout = ctx.settings.node_timeout;
                if gflags & (flag::FAIL | flag::PFAIL) == 0
                    && st.node(n).ping_sent == 0
                    && st.failure_reports(n, timeout) == 0
                {
                    let pong = be32(g, 44) as u64 * 1000;
                    let node = st.node_mut(n);
                    if pong <= now + 500 && pong > node.pong_received {
                        node.pong_received = pong;
                    }
                }
                let node = st.node_mut(n);
                if node.flags & (flag::FAIL | flag::PFAIL) != 0
                    && gflags & (flag::NOADDR | flag::FAIL | flag::PFAIL) == 0
                    && (!node.ip.eq_ignore_ascii_case(&gip)
                        || node.port != gport
                        || node.cport != gcport)
                {
                    node.link = None;
                    node.ip = gip;
                    node.port = gport;
                    node.cport = gcport;
                    node.pport = gpport;
                    node.flags &= !flag::NOADDR;
                }
            }
            None => {
                if sender.is_some()
                    && gflags & flag::NOADDR == 0
                    && !st.blacklist.contains_key(&name)
                    && name.len() == NAMELEN
                    && name.bytes().all(|c| c.is_ascii_hexdigit())
                {
                    let n = st.create_node(name, gflags & !(flag::MYSELF | flag::MEET));
                    let node = st.node_mut(n);
                    node.ip = gip;
                    node.port = gport;
                    node.cport = gcport;
                    node.pport = gpport;
                    st.todo_save = true;
                }
            }
        }
    }
}

/// Flags node `n` FAIL when it is PFAIL for us and a majority of masters
/// reported it (Redis's markNodeAsFailingIfNeeded), and broadcasts FAIL.
fn mark_failing_if_needed(ctx: &Ctx<'_>, st: &mut State, n: usize) {
    let quorum = st.size / 2 + 1;
    if !st.node(n).timed_out() || st.node(n).failed() {
        return;
    }
    let mut failures = st.failure_reports(n, ctx.settings.node_timeout);
    if st.myself().is_master() {
        failures += 1;
    }
    if failures < quorum {
        return;
    }
    tracing::info!(
        "Marking node {} as failing (quorum reached).",
        st.node(n).name
    );
    let node = st.node_mut(n);
    node.flags &= !flag::PFAIL;
    node.flags |= flag::FAIL;
    node.fail_time = now_ms();
    let name = node.name.clone();
    send_fail(ctx, st, &name);
    st.todo_update_state = true;
    st.todo_save = true;
}

/// Clears FAIL from a node we can reach again (Redis's
/// clearNodeFailureIfNeeded).
fn clear_failure_if_needed(ctx: &Ctx<'_>, st: &mut State, n: usize) {
    let now = now_ms();
    let node = st.node_mut(n);
    if node.is_replica() || node.numslots == 0 {
        node.flags &= !flag::FAIL;
        st.todo_update_state = true;
        st.todo_save = true;
        return;
    }
    if now.saturating_sub(node.fail_time) > ctx.settings.node_timeout * FAIL_UNDO_TIME_MULT {
        node.flags &= !flag::FAIL;
        st.todo_update_state = true;
        st.todo_save = true;
    }
}

/// Applies a master's slot claims (Redis's clusterUpdateSlotsConfigWith).
fn update_slots_with(
    ctx: &Ctx<'_>,
    st: &mut State,
    after: &mut After,
    sender: usize,
    epoch: u64,
    slots: &[u8],
) {
    if sender == MYSELF {
        return;
    }
    let cur_master = if st.myself().is_master() {
        Some(MYSELF)
    } else {
        st.my_master()
    };
    let mut new_master: Option<usize> = None;
    let mut sender_slots = 0;
    let mut migrated_ours = 0;
    let mut dirty: Vec<u16> = Vec::new();
    for j in 0..SLOTS {
        if slots[j / 8] & (1 << (j % 8)) == 0 {
            continue;
        }
        sender_slots += 1;
        let owner = st.slots[j];
        if owner == sender as u32 {
            continue;
        }
        if st.importing_from.contains_key(&(j as u16)) {
            continue;
        }
        let replace = owner == NO_NODE
            || st
                .nodes
                .get(owner as usize)
                .and_then(Option::as_ref)
                .is_some_and(|o| o.config_epoch < epoch);
        if replace {
            if owner == MYSELF as u32 && count_keys_in_slot(ctx.server, j as u16) > 0 {
                dirty.push(j as u16);
            }
            if Some(owner as usize) == cur_master && owner != NO_NODE {
                new_master = Some(sender);
                migrated_ours += 1;
            }
            st.del_slot(j);
            st.add_slot(sender, j);
            st.todo_save = true;
            st.todo_fsync = true;
            st.todo_update_state = true;
        }
    }
    let cur_empty = cur_master.is_some_and(|m| st.node(m).numslots == 0);
    if let Some(nm) = new_master {
        if cur_empty && (ctx.settings.allow_replica_migration || sender_slots == migrated_ours) {
            tracing::warn!(
                "Configuration change detected. Reconfiguring myself as a replica of {}",
                st.node(nm).name
            );
            set_master(st, after, nm);
            return;
        }
    }
    if !dirty.is_empty() {
        after.del_slots.extend(dirty);
    }
}

/// Makes this node a replica of node `n` (Redis's clusterSetMaster).
fn set_master(st: &mut State, after: &mut After, n: usize) {
    let me = st.myself_mut();
    if me.is_master() {
        me.flags &= !(flag::MASTER | flag::MIGRATE_TO);
        me.flags |= flag::SLAVE;
        st.migrating_to.clear();
        st.importing_from.clear();
        st.refresh_open_routes();
    }
    st.add_replica(n, MYSELF);
    let node = st.node(n);
    after.follow = Some((node.ip.clone(), node.port));
    after.unpause |= st.mf_replica.take().is_some();
    st.mf_end = 0;
    st.mf_can_start = false;
    st.mf_master_offset = None;
    st.todo_save = true;
    st.todo_update_state = true;
}

/// Handles one message from a link (Redis's clusterProcessPacket).
/// Returns false when the link must be closed.
fn process(ctx: &Ctx<'_>, st: &mut State, li: &mut LinkInfo, b: &[u8], after: &mut After) -> bool {
    if be16(b, O_VER) != 1 {
        return true;
    }
    let typ = be16(b, O_TYPE);
    if let Some(c) = st.stats_received.get_mut(typ as usize) {
        *c += 1;
    }
    if ctx
        .server
        .cluster
        .drop_packet_filter
        .load(Ordering::Relaxed)
        == typ as i64
    {
        tracing::warn!("Dropping packet that matches debug drop filter");
        return true;
    }
    if !valid_length(b) {
        tracing::warn!("Received an invalid cluster bus message of type {typ}, ignored");
        return true;
    }
    let now = now_ms();
    let sender_name = name_at(b, O_SENDER);
    let flags = be16(b, O_FLAGS);
    // A message carrying our own name has no sender we know.
    let mut sender = st.lookup(&sender_name).filter(|&n| n != MYSELF);
    let sender_cur_epoch = be64(b, O_CUR_EPOCH);
    let sender_cfg_epoch = be64(b, O_CFG_EPOCH);
    if let Some(s) = sender {
        st.node_mut(s).data_received = now;
        if li.inbound {
            let id = li.id;
            let node = st.node_mut(s);
            if node.inbound.as_ref().is_none_or(|l| l.id != id) {
                // Identified: the link's handle is registered by the reader.
                li.node = Some(s);
            }
        }
        if !st.node(s).in_handshake() {
            if sender_cur_epoch > st.current_epoch {
                st.current_epoch = sender_cur_epoch;
                st.todo_save = true;
            }
            let node = st.node_mut(s);
            if sender_cfg_epoch > node.config_epoch {
                node.config_epoch = sender_cfg_epoch;
                st.todo_save = true;
                st.todo_fsync = true;
            }
            let node = st.node_mut(s);
            node.repl_offset = be64(b, O_OFFSET);
            node.repl_offset_time = now;
            if st.mf_end != 0
                && st.myself().is_replica()
                && st.my_master() == Some(s)
                && b[O_MFLAGS] & MF_PAUSED != 0
                && st.mf_master_offset.is_none()
            {
                st.mf_master_offset = Some(be64(b, O_OFFSET));
            }
        }
    }
    match typ {
        msg::PING | msg::MEET => {
            if (typ == msg::MEET || st.myself().ip.is_empty())
                && ctx.settings.announce_ip.is_empty()
                && !li.local_ip.is_empty()
                && st.myself().ip != li.local_ip
            {
                st.myself_mut().ip = li.local_ip.clone();
                st.todo_save = true;
            }
            if sender.is_none() && typ == msg::MEET {
                let n = st.create_node(random_name(), flag::HANDSHAKE);
                let myip = cstr(&b[O_MYIP..O_MYIP + IP_LEN]);
                let node = st.node_mut(n);
                node.ip = if myip.is_empty() {
                    li.peer_ip.clone()
                } else {
                    myip
                };
                node.port = be16(b, O_PORT);
                node.pport = be16(b, O_PPORT);
                node.cport = be16(b, O_CPORT);
                st.todo_save = true;
                process_gossip(ctx, st, b, None);
            }
            // Anyway reply with a PONG, on the link the message came on.
            let m = ping_message(ctx, st, msg::PONG, li.node);
            count_sent(st, msg::PONG);
            REPLY.with(|r| *r.borrow_mut() = Some(m));
        }
        _ => {}
    }
    if matches!(typ, msg::PING | msg::PONG | msg::MEET) {
        if !li.inbound {
            if let Some(ln) = li.node {
                if st.nodes.get(ln).is_none_or(Option::is_none) {
                    return false;
                }
                if st.node(ln).in_handshake() {
                    if let Some(s) = sender {
                        if s != ln {
                            update_address(st, s, li, b);
                            st.del_node(ln);
                            return false;
                        }
                    }
                    // The handshake node gets its real name.
                    if st.lookup(&sender_name).is_some()
                        || !sender_name.bytes().all(|c| c.is_ascii_hexdigit())
                    {
                        st.del_node(ln);
                        return false;
                    }
                    st.rename(ln, sender_name.clone());
                    let node = st.node_mut(ln);
                    node.flags &= !flag::HANDSHAKE;
                    node.flags |= flags & (flag::MASTER | flag::SLAVE);
                    sender = Some(ln);
                    st.todo_save = true;
                } else if st.node(ln).name != sender_name {
                    let node = st.node_mut(ln);
                    node.flags |= flag::NOADDR;
                    node.ip.clear();
                    node.port = 0;
                    node.cport = 0;
                    node.pport = 0;
                    st.todo_save = true;
                    return false;
                }
            }
        }
        if let Some(s) = sender {
            let node = st.node_mut(s);
            node.flags &= !flag::NOFAILOVER;
            node.flags |= flags & flag::NOFAILOVER;
        }
        if let Some(s) = sender {
            if typ == msg::PING && !st.node(s).in_handshake() && update_address(st, s, li, b) {
                st.todo_save = true;
                st.todo_update_state = true;
            }
        }
        if !li.inbound && typ == msg::PONG {
            if let Some(ln) = li.node {
                let node = st.node_mut(ln);
                node.pong_received = now;
                node.ping_sent = 0;
                if node.timed_out() {
                    node.flags &= !flag::PFAIL;
                    st.todo_update_state = true;
                } else if node.failed() {
                    clear_failure_if_needed(ctx, st, ln);
                }
            }
        }
        let Some(s) = sender else {
            return true;
        };
        if st.node(s).in_handshake() {
            return true;
        }
        // Role switch.
        if is_null_name(b, O_SLAVEOF) {
            st.set_node_as_master(s);
        } else {
            let master = st.lookup(&name_at(b, O_SLAVEOF));
            if st.node(s).is_master() {
                st.del_node_slots(s);
                let node = st.node_mut(s);
                node.flags &= !(flag::MASTER | flag::MIGRATE_TO);
                node.flags |= flag::SLAVE;
                st.todo_save = true;
                st.todo_update_state = true;
            }
            if let Some(m) = master {
                if st.node(s).master != Some(m) && m != s {
                    st.add_replica(m, s);
                    st.todo_save = true;
                }
            }
        }
        let sender_master = if st.node(s).is_master() {
            Some(s)
        } else {
            st.node(s).master
        };
        let claimed = &b[O_SLOTS..O_SLOTS + SLOTS / 8];
        let dirty_slots = sender_master
            .and_then(|m| st.nodes.get(m).and_then(Option::as_ref))
            .is_some_and(|m| &m.slots[..] != claimed);
        if st.node(s).is_master() && dirty_slots {
            update_slots_with(ctx, st, after, s, sender_cfg_epoch, claimed);
        }
        if dirty_slots {
            for j in 0..SLOTS {
                if claimed[j / 8] & (1 << (j % 8)) == 0 {
                    continue;
                }
                let o = st.slots[j];
                if o == s as u32 || o == NO_NODE {
                    continue;
                }
                if st.node(o as usize).config_epoch > sender_cfg_epoch {
                    send_update(ctx, st, s, o as usize);
                    break;
                }
            }
        }
        if st.myself().is_master()
            && st.node(s).is_master()
            && sender_cfg_epoch == st.myself().config_epoch
        {
            handle_epoch_collision(st, s);
        }
        process_gossip(ctx, st, b, Some(s));
        process_extensions(st, b, s);
        return true;
    }
    match typ {
        msg::FAIL if sender.is_some() => {
            let about = name_at(b, HDR_LEN);
            if let Some(f) = st.lookup(&about) {
                let node = st.node_mut(f);
                if node.flags & (flag::FAIL | flag::MYSELF) == 0 {
                    tracing::info!("FAIL message received from {sender_name} about {about}");
                    node.flags |= flag::FAIL;
                    node.fail_time = now;
                    node.flags &= !flag::PFAIL;
                    st.todo_update_state = true;
                    st.todo_save = true;
                }
            }
        }
        msg::PUBLISH | msg::PUBLISHSHARD if sender.is_some() => {
            let cl = be32(b, HDR_LEN) as usize;
            let ml = be32(b, HDR_LEN + 4) as usize;
            let at = HDR_LEN + 8;
            if at + cl + ml <= b.len() {
                after.publish = Some((
                    b[at..at + cl].to_vec(),
                    b[at + cl..at + cl + ml].to_vec(),
                    typ == msg::PUBLISHSHARD,
                ));
            }
        }
        msg::AUTH_REQUEST => {
            if let Some(s) = sender {
                send_auth_if_needed(ctx, st, s, b);
            }
        }
        msg::AUTH_ACK => {
            if let Some(s) = sender {
                let node = st.node(s);
                if node.is_master()
                    && node.numslots > 0
                    && sender_cur_epoch >= st.failover_auth_epoch
                {
                    st.failover_auth_count += 1;
                }
            }
        }
        msg::MFSTART => {
            if let Some(s) = sender {
                if st.node(s).master == Some(MYSELF) && st.myself().is_master() {
                    st.mf_end = now + MF_TIMEOUT;
                    st.mf_replica = Some(s);
                    // Writes stop now (not after the state is unlocked),
                    // before any header announces the offset as paused.
                    ctx.server.pause.pause(
                        crate::pause::BY_FAILOVER,
                        crate::pause::WRITE,
                        now + MF_TIMEOUT * 2,
                        ctx.server.clock.now_ms(),
                    );
                    st.mf_paused_ms = crate::util::now_ms();
                    tracing::warn!("Manual failover requested by replica {}.", st.node(s).name);
                    let m = ping_message(ctx, st, msg::PING, Some(s));
                    count_sent(st, msg::PING);
                    REPLY.with(|r| *r.borrow_mut() = Some(m));
                }
            }
        }
        msg::UPDATE if sender.is_some() => {
            let epoch = be64(b, HDR_LEN);
            let about = name_at(b, HDR_LEN + 8);
            if let Some(n) = st.lookup(&about) {
                if st.node(n).config_epoch < epoch {
                    if st.node(n).is_replica() {
                        st.set_node_as_master(n);
                    }
                    st.node_mut(n).config_epoch = epoch;
                    st.todo_save = true;
                    st.todo_fsync = true;
                    let slots =
                        b[HDR_LEN + 8 + NAMELEN..HDR_LEN + 8 + NAMELEN + SLOTS / 8].to_vec();
                    update_slots_with(ctx, st, after, n, epoch, &slots);
                }
            }
        }
        _ => {}
    }
    true
}

thread_local! {
    /// A reply to send on the link the message came on (PONG to PING /
    /// MEET, PING to MFSTART), set by [`process`].
    static REPLY: std::cell::RefCell<Option<Vec<u8>>> = const { std::cell::RefCell::new(None) };
}

/// Manual failover timeout, ms (CLUSTER_MF_TIMEOUT).
pub const MF_TIMEOUT: u64 = 5000;

/// Reads the hostname and forgotten-node extensions of a PING/PONG/MEET
/// (Redis's clusterProcessPingExt).
fn process_extensions(st: &mut State, b: &[u8], sender: usize) {
    let mut hostname = String::new();
    if b[O_MFLAGS] & MF_EXT_DATA != 0 {
        let exts = be16(b, O_EXTENSIONS);
        let mut at = HDR_LEN + GOSSIP_LEN * be16(b, O_COUNT) as usize;
        for _ in 0..exts {
            if at + 8 > b.len() {
                break;
            }
            let len = be32(b, at) as usize;
            let typ = be16(b, at + 4);
            if len < 8 || at + len > b.len() {
                break;
            }
            let body = &b[at + 8..at + len];
            match typ {
                EXT_HOSTNAME => hostname = cstr(body),
                EXT_FORGOTTEN_NODE if body.len() >= NAMELEN + 8 => {
                    let name = String::from_utf8_lossy(&body[..NAMELEN]).into_owned();
                    let ttl = be64(body, NAMELEN);
                    if let Some(n) = st.lookup(&name) {
                        if n != MYSELF && n != sender && st.myself().master != Some(n) {
                            st.blacklist.insert(name, now_ms() / 1000 + ttl);
                            st.del_node(n);
                        }
                    }
                }
                _ => {}
            }
            at += len;
        }
    }
    let node = st.node_mut(sender);
    if node.hostname != hostname {
        node.hostname = hostname;
        st.todo_save = true;
    }
}

/// Two masters with the same config epoch: the one with the smaller name
/// takes a new epoch (Redis's clusterHandleConfigEpochCollision).
fn handle_epoch_collision(st: &mut State, sender: usize) {
    if st.node(sender).name.as_str() <= st.myself().name.as_str() {
        return;
    }
    st.current_epoch += 1;
    let e = st.current_epoch;
    st.myself_mut().config_epoch = e;
    st.todo_save = true;
    tracing::info!(
        "WARNING: configEpoch collision with node {}. configEpoch set to {e}",
        st.node(sender).name
    );
}

/// A master decides whether to vote for a replica (Redis's
/// clusterSendFailoverAuthIfNeeded).
fn send_auth_if_needed(ctx: &Ctx<'_>, st: &mut State, node: usize, b: &[u8]) {
    let req_cur = be64(b, O_CUR_EPOCH);
    let req_cfg = be64(b, O_CFG_EPOCH);
    let force = b[O_MFLAGS] & MF_FORCEACK != 0;
    if st.myself().is_replica() || st.myself().numslots == 0 {
        return;
    }
    if req_cur < st.current_epoch || st.last_vote_epoch == st.current_epoch {
        return;
    }
    let n = st.node(node);
    let Some(master) = n.master else { return };
    if n.is_master() || st.nodes.get(master).is_none_or(Option::is_none) {
        return;
    }
    if !st.node(master).failed() && !force {
        return;
    }
    let now = now_ms();
    if now.saturating_sub(st.node(master).voted_time) < ctx.settings.node_timeout * 2 {
        return;
    }
    let claimed = &b[O_SLOTS..O_SLOTS + SLOTS / 8];
    for j in 0..SLOTS {
        if claimed[j / 8] & (1 << (j % 8)) == 0 {
            continue;
        }
        let o = st.slots[j];
        if o == NO_NODE || st.node(o as usize).config_epoch <= req_cfg {
            continue;
        }
        return;
    }
    st.last_vote_epoch = st.current_epoch;
    st.node_mut(master).voted_time = now;
    st.todo_save = true;
    st.todo_fsync = true;
    tracing::info!(
        "Failover auth granted to {} for epoch {}",
        st.node(node).name,
        st.current_epoch
    );
    if st.node(node).link.is_some() {
        let m = finish(header(ctx, st, msg::AUTH_ACK));
        count_sent(st, msg::AUTH_ACK);
        if let Some(l) = &st.node(node).link {
            l.send(m);
        }
    }
}

/// This replica's rank among its master's replicas by replication offset
/// (Redis's clusterGetSlaveRank).
fn replica_rank(ctx: &Ctx<'_>, st: &State) -> usize {
    let Some(m) = st.my_master() else { return 0 };
    let mine = ctx.my_offset(st);
    st.replicas_of(m)
        .into_iter()
        .filter(|&r| r != MYSELF && st.node(r).flags & flag::NOFAILOVER == 0)
        .filter(|&r| st.node(r).repl_offset > mine)
        .count()
}

/// Replaces our failed master (Redis's clusterFailoverReplaceYourMaster).
fn replace_master(ctx: &Ctx<'_>, st: &mut State, after: &mut After) {
    let Some(old) = st.my_master() else { return };
    if st.myself().is_master() {
        return;
    }
    st.set_node_as_master(MYSELF);
    after.promote = true;
    for j in 0..SLOTS {
        if st.node(old).has_slot(j) {
            st.del_slot(j);
            st.add_slot(MYSELF, j);
        }
    }
    let settings = ctx.settings.clone();
    let ok = st.update_state(&settings);
    ctx.server.cluster.ok.store(ok, Ordering::Relaxed);
    st.todo_save = true;
    st.todo_fsync = true;
    broadcast_pong(ctx, st, PongTarget::All);
    st.mf_end = 0;
    st.mf_can_start = false;
    st.mf_master_offset = None;
    st.mf_replica = None;
}

/// The replica's side of an election (Redis's clusterHandleSlaveFailover).
fn handle_replica_failover(ctx: &Ctx<'_>, st: &mut State, after: &mut After) {
    let now = now_ms();
    let manual = st.mf_end != 0 && st.mf_can_start;
    let Some(master) = st.my_master() else { return };
    if st.myself().is_master()
        || st.nodes.get(master).is_none_or(Option::is_none)
        || (!st.node(master).failed() && !manual)
        || (ctx.settings.replica_no_failover && !manual)
        || st.node(master).numslots == 0
    {
        return;
    }
    let timeout = ctx.settings.node_timeout;
    let auth_timeout = (timeout * 2).max(2000);
    let retry = auth_timeout * 2;
    let auth_age = now.saturating_sub(st.failover_auth_time);
    // Data age: how long since we heard from the master.
    let r = &ctx.server.repl;
    let mut data_age = if r.link_state.load(Ordering::Relaxed) == crate::repl::link::CONNECTED {
        now.saturating_sub(r.link_last_io_ms.load(Ordering::Relaxed))
    } else {
        now.saturating_sub(r.link_down_since_ms.load(Ordering::Relaxed))
    };
    if data_age > timeout {
        data_age -= timeout;
    }
    let ping_period = 10_000;
    if ctx.settings.replica_validity_factor > 0
        && data_age > ping_period + timeout * ctx.settings.replica_validity_factor
        && !manual
    {
        return;
    }
    if auth_age > retry {
        st.failover_auth_time = now + 500 + crate::util::rand_u64() % 500;
        st.failover_auth_count = 0;
        st.failover_auth_sent = false;
        st.failover_auth_rank = replica_rank(ctx, st);
        st.failover_auth_time += st.failover_auth_rank as u64 * 1000;
        if st.mf_end != 0 {
            st.failover_auth_time = now;
            st.failover_auth_rank = 0;
        }
        broadcast_pong(ctx, st, PongTarget::LocalReplicas);
        return;
    }
    if !st.failover_auth_sent && st.mf_end == 0 {
        let rank = replica_rank(ctx, st);
        if rank > st.failover_auth_rank {
            st.failover_auth_time += (rank - st.failover_auth_rank) as u64 * 1000;
            st.failover_auth_rank = rank;
        }
    }
    if now < st.failover_auth_time || auth_age > auth_timeout {
        return;
    }
    if !st.failover_auth_sent {
        st.current_epoch += 1;
        st.failover_auth_epoch = st.current_epoch;
        tracing::warn!(
            "Starting a failover election for epoch {}.",
            st.current_epoch
        );
        let mut m = header(ctx, st, msg::AUTH_REQUEST);
        if st.mf_end != 0 {
            m[O_MFLAGS] |= MF_FORCEACK;
        }
        let m = finish(m);
        broadcast(st, &m, msg::AUTH_REQUEST);
        st.failover_auth_sent = true;
        st.todo_save = true;
        st.todo_fsync = true;
        st.todo_update_state = true;
        return;
    }
    let quorum = st.size / 2 + 1;
    if st.failover_auth_count >= quorum {
        tracing::warn!("Failover election won: I'm the new master.");
        if st.myself().config_epoch < st.failover_auth_epoch {
            let e = st.failover_auth_epoch;
            st.myself_mut().config_epoch = e;
        }
        replace_master(ctx, st, after);
    }
}

/// Delay before a replica migrates to an orphaned master, ms
/// (CLUSTER_SLAVE_MIGRATION_DELAY).
pub const REPLICA_MIGRATION_DELAY: u64 = 5000;

/// Replica migration (Redis's orphaned-master check in clusterCron and
/// clusterHandleSlaveMigration): when a master that used to have replicas
/// has none working, the replica with the smallest name among the
/// masters with the most working replicas moves to it, provided its own
/// master keeps more than cluster-migration-barrier working replicas and
/// the master has been orphaned for 5 s.
fn handle_replica_migration(ctx: &Ctx<'_>, st: &mut State, after: &mut After) {
    if !ctx.settings.allow_replica_migration || !st.state_ok {
        return;
    }
    let Some(my_master) = st.my_master() else {
        return;
    };
    let masters: Vec<usize> = st
        .numbers()
        .filter(|&n| st.node(n).is_master() && !st.node(n).failed())
        .collect();
    let mut orphaned = 0;
    let mut max_replicas = 0;
    let mut mine = 0;
    for &m in &masters {
        let ok = st.ok_replicas(m);
        if ok == 0 && st.node(m).numslots > 0 && st.node(m).flags & flag::MIGRATE_TO != 0 {
            orphaned += 1;
        }
        max_replicas = max_replicas.max(ok);
        if m == my_master {
            mine = ok;
        }
    }
    if orphaned == 0 || max_replicas < 2 || mine != max_replicas {
        return;
    }
    let ok_mine = st
        .replicas_of(my_master)
        .into_iter()
        .filter(|&r| st.node(r).flags & (flag::FAIL | flag::PFAIL) == 0)
        .count();
    if ok_mine <= ctx.settings.migration_barrier {
        return;
    }
    let now = now_ms();
    let mut target: Option<usize> = None;
    let mut candidate = MYSELF;
    for n in st.numbers().collect::<Vec<_>>() {
        let is_master = st.node(n).is_master();
        let ok = if is_master { st.ok_replicas(n) } else { 0 };
        let node = st.node(n);
        let orphan = is_master && !node.failed() && node.flags & flag::MIGRATE_TO != 0 && ok == 0;
        let has_slots = node.numslots > 0;
        let node = st.node_mut(n);
        if orphan {
            if target.is_none() && has_slots {
                target = Some(n);
            }
            if node.orphaned_time == 0 {
                node.orphaned_time = now;
            }
        } else {
            node.orphaned_time = 0;
        }
        if is_master && ok == max_replicas {
            for r in st.replicas_of(n) {
                if st.node(r).name < st.node(candidate).name {
                    candidate = r;
                }
            }
        }
    }
    if let Some(t) = target {
        if candidate == MYSELF
            && now.saturating_sub(st.node(t).orphaned_time) > REPLICA_MIGRATION_DELAY
        {
            tracing::warn!("Migrating to orphaned master {}", st.node(t).name);
            set_master(st, after, t);
        }
    }
}

/// The replica's side of a manual failover: start once our offset
/// reaches the paused master's (Redis's clusterHandleManualFailover).
fn handle_manual_failover(ctx: &Ctx<'_>, st: &mut State) {
    if st.mf_end == 0 || st.mf_can_start {
        return;
    }
    if let Some(off) = st.mf_master_offset {
        if ctx.my_offset(st) >= off {
            st.mf_can_start = true;
            tracing::warn!("All master replication stream processed, manual failover can start.");
        }
    }
}

/// Starts a manual failover from this replica (CLUSTER FAILOVER):
/// `force` skips the master's handshake, `takeover` also skips the vote.
pub fn start_manual_failover(server: &Arc<Server>, force: bool, takeover: bool) {
    let ctx = Ctx {
        server,
        settings: server.cluster.settings(),
    };
    let mut after = After::default();
    {
        let mut st = server.cluster.state.lock();
        let now = now_ms();
        st.mf_end = now + MF_TIMEOUT;
        st.mf_can_start = false;
        st.mf_master_offset = None;
        if takeover {
            tracing::warn!("Taking over the master (user request).");
            st.bump_epoch_without_consensus();
            replace_master(&ctx, &mut st, &mut after);
        } else if force {
            tracing::warn!("Forced failover user request accepted.");
            st.mf_can_start = true;
            st.failover_auth_time = 0;
        } else {
            tracing::warn!("Manual failover user request accepted.");
            if let Some(m) = st.my_master() {
                if st.node(m).link.is_some() {
                    let mm = finish(header(&ctx, &st, msg::MFSTART));
                    count_sent(&mut st, msg::MFSTART);
                    if let Some(l) = &st.node(m).link {
                        l.send(mm);
                    }
                }
            }
            st.failover_auth_time = 0;
        }
    }
    run_after(server, after);
    server.cluster.before_sleep();
}

/// Work left by message handling or the cron, done without the lock.
fn run_after(server: &Arc<Server>, after: After) {
    if let Some((ip, port)) = after.follow {
        crate::cmd::repl::replica::follow(server, ip, port);
    }
    if after.promote {
        crate::cmd::repl::replica::promote(server);
    }
    for slot in after.del_slots {
        del_keys_in_slot(server, slot);
    }
    if let Some((ch, m, shard)) = after.publish {
        let env = server.pubsub_env();
        if shard {
            crate::pubsub::spublish(&env, &ch, &m);
        } else {
            crate::pubsub::publish(&env, &ch, &m);
        }
    }
    if after.unpause {
        server.pause.unpause(crate::pause::BY_FAILOVER);
    }
}

/// An outbound link created by the cron, to connect once the state is
/// unlocked: node, IP, bus port, the link, its queue.
type PendingConnect = (
    usize,
    String,
    u16,
    Link,
    tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>,
);

/// One cron tick (Redis's clusterCron, every 100 ms).
fn cron(server: &Arc<Server>, iteration: u64) {
    let ctx = Ctx {
        server,
        settings: server.cluster.settings(),
    };
    let mut after = After::default();
    let mut connect: Vec<PendingConnect> = Vec::new();
    {
        let mut st = server.cluster.state.lock();
        let now = now_ms();
        let timeout = ctx.settings.node_timeout;
        let handshake_timeout = timeout.max(1000);
        let now_s = now / 1000;
        st.blacklist.retain(|_, until| *until >= now_s);
        for n in st.numbers().collect::<Vec<_>>() {
            if n == MYSELF || st.node(n).flags & flag::NOADDR != 0 {
                continue;
            }
            if st.node(n).in_handshake() && now.saturating_sub(st.node(n).ctime) > handshake_timeout
            {
                st.del_node(n);
                continue;
            }
            if st.node(n).link.is_none() {
                let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                let link = Link {
                    id: server.cluster.next_link_id.fetch_add(1, Ordering::Relaxed),
                    tx,
                    ctime: now,
                    pending: Arc::default(),
                };
                let node = st.node_mut(n);
                let (ip, cport) = (node.ip.clone(), node.cport);
                let typ = if node.flags & flag::MEET != 0 {
                    msg::MEET
                } else {
                    msg::PING
                };
                node.flags &= !flag::MEET;
                let first = ping_message(&ctx, &mut st, typ, Some(n));
                count_sent(&mut st, typ);
                link.send(first);
                let node = st.node_mut(n);
                if node.ping_sent == 0 {
                    node.ping_sent = now;
                }
                let clone = Link {
                    id: link.id,
                    tx: link.tx.clone(),
                    ctime: link.ctime,
                    pending: link.pending.clone(),
                };
                node.link = Some(link);
                connect.push((n, ip, cport, clone, rx));
            }
        }
        if iteration.is_multiple_of(10) {
            let all: Vec<usize> = st.numbers().filter(|&n| n != MYSELF).collect();
            let mut best: Option<usize> = None;
            for _ in 0..5 {
                if all.is_empty() {
                    break;
                }
                let n = all[(crate::util::rand_u64() % all.len() as u64) as usize];
                let node = st.node(n);
                if node.link.is_none()
                    || node.ping_sent != 0
                    || node.flags & (flag::HANDSHAKE | flag::NOADDR) != 0
                {
                    continue;
                }
                if best.is_none_or(|b| st.node(b).pong_received > node.pong_received) {
                    best = Some(n);
                }
            }
            if let Some(n) = best {
                send_ping(&ctx, &mut st, n, msg::PING);
            }
        }
        let limit = ctx.settings.link_sendbuf_limit;
        for n in st.numbers().collect::<Vec<_>>() {
            if n == MYSELF || st.node(n).flags & (flag::NOADDR | flag::HANDSHAKE) != 0 {
                continue;
            }
            if limit > 0 {
                let over = |l: &Option<Link>| {
                    l.as_ref()
                        .is_some_and(|l| l.pending.load(Ordering::Relaxed) > limit)
                };
                let node = st.node(n);
                let (o, i) = (over(&node.link), over(&node.inbound));
                if o || i {
                    let node = st.node_mut(n);
                    if o {
                        node.link = None;
                    }
                    if i {
                        node.inbound = None;
                    }
                    st.links_buffer_limit_exceeded += 1;
                }
            }
            let node = st.node(n);
            let ping_delay = now.saturating_sub(node.ping_sent);
            let data_delay = now.saturating_sub(node.data_received);
            if node
                .link
                .as_ref()
                .is_some_and(|l| now.saturating_sub(l.ctime) > timeout)
                && node.ping_sent != 0
                && ping_delay > timeout / 2
                && data_delay > timeout / 2
            {
                st.node_mut(n).link = None;
                continue;
            }
            let node = st.node(n);
            if node.link.is_some()
                && node.ping_sent == 0
                && now.saturating_sub(node.pong_received) > timeout / 2
            {
                send_ping(&ctx, &mut st, n, msg::PING);
                continue;
            }
            if st.mf_end != 0
                && st.myself().is_master()
                && st.mf_replica == Some(n)
                && node.link.is_some()
            {
                send_ping(&ctx, &mut st, n, msg::PING);
                continue;
            }
            let node = st.node(n);
            if node.ping_sent == 0 {
                continue;
            }
            let delay = ping_delay.min(data_delay);
            if delay > timeout && node.flags & (flag::PFAIL | flag::FAIL) == 0 {
                tracing::info!("*** NODE {} possibly failing", node.name);
                st.node_mut(n).flags |= flag::PFAIL;
                st.todo_update_state = true;
            }
        }
        // Manual failover timeout.
        if st.mf_end != 0 && st.mf_end < now {
            tracing::warn!("Manual failover timed out.");
            after.unpause |= st.mf_replica.is_some();
            st.mf_end = 0;
            st.mf_can_start = false;
            st.mf_master_offset = None;
            st.mf_replica = None;
        }
        if st.myself().is_replica() {
            // Keep replicating from our master's current address.
            if let Some(m) = st.my_master() {
                let node = st.node(m);
                if node.flags & flag::NOADDR == 0 && !node.ip.is_empty() {
                    let want = (node.ip.clone(), node.port);
                    let have = server
                        .repl
                        .master
                        .lock()
                        .as_ref()
                        .map(|l| (l.host.clone(), l.port));
                    if have.as_ref() != Some(&want) {
                        after.follow = Some(want);
                    }
                }
            }
            handle_manual_failover(&ctx, &mut st);
            handle_replica_failover(&ctx, &mut st, &mut after);
            handle_replica_migration(&ctx, &mut st, &mut after);
        }
        if !st.state_ok {
            st.todo_update_state = true;
        }
    }
    for (n, ip, cport, link, rx) in connect {
        tokio::spawn(outbound(server.clone(), n, ip, cport, link, rx));
    }
    run_after(server, after);
    server.cluster.before_sleep();
}

/// Reads frames from `r` and handles them until the link closes.
async fn read_loop<R: tokio::io::AsyncRead + Unpin>(
    server: &Arc<Server>,
    mut r: R,
    mut li: LinkInfo,
    reply: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
    pending: Arc<AtomicU64>,
) {
    let mut head = [0u8; 8];
    loop {
        if r.read_exact(&mut head).await.is_err() {
            break;
        }
        let totlen = u32::from_be_bytes([head[4], head[5], head[6], head[7]]) as usize;
        if &head[..4] != b"RCmb" || !(HDR_LEN..=MAX_MSG).contains(&totlen) {
            tracing::warn!("Bad message length or signature received on the cluster bus.");
            break;
        }
        // The buffer grows as bytes arrive: a peer announcing a huge
        // length gets no memory until it sends the data.
        let mut buf = Vec::with_capacity(totlen.min(1 << 16));
        buf.extend_from_slice(&head);
        let want = (totlen - 8) as u64;
        match (&mut r).take(want).read_to_end(&mut buf).await {
            Ok(n) if n as u64 == want => {}
            _ => break,
        }
        let ctx = Ctx {
            server,
            settings: server.cluster.settings(),
        };
        let mut after = After::default();
        let keep = {
            let mut st = server.cluster.state.lock();
            let keep = process(&ctx, &mut st, &mut li, &buf, &mut after);
            // Register an identified inbound link with its node.
            if li.inbound {
                if let Some(n) = li.node {
                    if let Some(Some(node)) = st.nodes.get_mut(n) {
                        if node.inbound.as_ref().is_none_or(|l| l.id != li.id) {
                            node.inbound = Some(Link {
                                id: li.id,
                                tx: reply.clone(),
                                ctime: now_ms(),
                                pending: pending.clone(),
                            });
                        }
                    }
                }
            }
            keep
        };
        if let Some(m) = REPLY.with(|r| r.borrow_mut().take()) {
            pending.fetch_add(m.len() as u64, Ordering::Relaxed);
            let _ = reply.send(m);
        }
        run_after(server, after);
        server.cluster.before_sleep();
        if !keep {
            break;
        }
    }
    // Unregister the link.
    let mut st = server.cluster.state.lock();
    let id = li.id;
    for n in st.numbers().collect::<Vec<_>>() {
        let node = st.node_mut(n);
        if node.link.as_ref().is_some_and(|l| l.id == id) {
            node.link = None;
        }
        if node.inbound.as_ref().is_some_and(|l| l.id == id) {
            node.inbound = None;
        }
    }
}

/// Writes queued frames until the channel closes or a write fails.
async fn write_loop<W: tokio::io::AsyncWrite + Unpin>(
    mut w: W,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>,
    pending: Arc<AtomicU64>,
) {
    while let Some(m) = rx.recv().await {
        let mut batch = m;
        while let Ok(more) = rx.try_recv() {
            batch.extend_from_slice(&more);
            if batch.len() > 1 << 20 {
                break;
            }
        }
        if w.write_all(&batch).await.is_err() {
            break;
        }
        pending.fetch_sub(batch.len() as u64, Ordering::Relaxed);
    }
}

/// An outbound link to node `n`: connect, then write queued messages and
/// read the replies.
async fn outbound(
    server: Arc<Server>,
    n: usize,
    ip: String,
    cport: u16,
    link: Link,
    rx: tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>,
) {
    let addr = if ip.contains(':') {
        format!("[{ip}]:{cport}")
    } else {
        format!("{ip}:{cport}")
    };
    let timeout =
        std::time::Duration::from_millis(server.cluster.settings().node_timeout.max(1000));
    let stream = match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(&addr)).await {
        Ok(Ok(s)) => s,
        _ => {
            let mut st = server.cluster.state.lock();
            if let Some(Some(node)) = st.nodes.get_mut(n) {
                if node.link.as_ref().is_some_and(|l| l.id == link.id) {
                    node.link = None;
                }
            }
            return;
        }
    };
    let _ = stream.set_nodelay(true);
    let (local_ip, peer_ip) = link_addrs(&stream);
    let pending = link.pending.clone();
    let li = LinkInfo {
        id: link.id,
        inbound: false,
        node: Some(n),
        local_ip,
        peer_ip,
    };
    if server.cluster.settings().tls_cluster {
        // tls-cluster: the link is a TLS session (Redis's connCreateTLS in
        // clusterCron); a failed handshake drops the link like a failed
        // connect, and the cron tries again.
        let connected = match server.tls.connector() {
            Ok(c) => {
                let name =
                    rustls_pki_types::ServerName::try_from(ip.clone()).unwrap_or_else(|_| {
                        rustls_pki_types::ServerName::try_from("localhost").expect("name")
                    });
                tokio::time::timeout(timeout, c.connect(name, stream))
                    .await
                    .ok()
                    .and_then(Result::ok)
            }
            Err(e) => {
                tracing::warn!("cluster bus: cannot connect over TLS: {e}");
                None
            }
        };
        let Some(tls) = connected else {
            let mut st = server.cluster.state.lock();
            if let Some(Some(node)) = st.nodes.get_mut(n) {
                if node.link.as_ref().is_some_and(|l| l.id == link.id) {
                    node.link = None;
                }
            }
            return;
        };
        let (r, w) = tokio::io::split(tls);
        let writer = tokio::spawn(write_loop(w, rx, pending.clone()));
        read_loop(&server, r, li, link.tx.clone(), pending).await;
        writer.abort();
        return;
    }
    let (r, w) = stream.into_split();
    let writer = tokio::spawn(write_loop(w, rx, pending.clone()));
    read_loop(&server, r, li, link.tx.clone(), pending).await;
    writer.abort();
}

/// Our address and the peer's on a bus connection ("" when unknown).
fn link_addrs(stream: &tokio::net::TcpStream) -> (String, String) {
    let ip = |a: std::io::Result<std::net::SocketAddr>| {
        a.map(|a| a.ip().to_string()).unwrap_or_default()
    };
    (ip(stream.local_addr()), ip(stream.peer_addr()))
}

/// An inbound link: a node connected to our bus port.
async fn inbound(server: Arc<Server>, stream: tokio::net::TcpStream) {
    let _ = stream.set_nodelay(true);
    let (local_ip, peer_ip) = link_addrs(&stream);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let pending: Arc<AtomicU64> = Arc::default();
    let li = LinkInfo {
        id: server.cluster.next_link_id.fetch_add(1, Ordering::Relaxed),
        inbound: true,
        node: None,
        local_ip: local_ip.trim_start_matches("::ffff:").to_string(),
        peer_ip: peer_ip.trim_start_matches("::ffff:").to_string(),
    };
    if server.cluster.settings().tls_cluster {
        // tls-cluster: nodes must present a certificate of a trusted CA
        // (Redis: connCreateAcceptedTLS(cfd, TLS_CLIENT_AUTH_YES)).
        let acceptor = match server.tls.acceptor(crate::tls::AuthClients::Yes) {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!("Error accepting cluster node connection: {e}");
                return;
            }
        };
        let timeout =
            std::time::Duration::from_millis(server.cluster.settings().node_timeout.max(1000));
        let tls = match tokio::time::timeout(timeout, acceptor.accept(stream)).await {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                tracing::info!("Error accepting cluster node connection: {e}");
                return;
            }
            Err(_) => return,
        };
        let (r, w) = tokio::io::split(tls);
        let writer = tokio::spawn(write_loop(w, rx, pending.clone()));
        read_loop(&server, r, li, tx, pending).await;
        writer.abort();
        return;
    }
    let (r, w) = stream.into_split();
    let writer = tokio::spawn(write_loop(w, rx, pending.clone()));
    read_loop(&server, r, li, tx, pending).await;
    writer.abort();
}

/// Binds the bus port on the `bind` addresses and starts the bus thread.
/// Errors when no address can be bound.
pub fn start(server: &Arc<Server>, binds: &[String]) -> std::io::Result<()> {
    let cport = server.cluster.settings().cport;
    let backlog = server.config.read().get_i64("tcp-backlog").max(1) as u32;
    let mut listeners = Vec::new();
    let addrs: Vec<String> = if binds.is_empty() {
        vec!["0.0.0.0".into()]
    } else {
        binds.to_vec()
    };
    // The same address syntax as the client port (`*`, `::*`, a `-`
    // prefix for an optional address).
    for a in addrs {
        if let Some(l) = crate::util::bind_tcp_std(&a, cport, backlog)? {
            listeners.push(l);
        }
    }
    if listeners.is_empty() {
        return Err(std::io::Error::other("could not bind the cluster bus port"));
    }
    let server = server.clone();
    std::thread::Builder::new()
        .name("ferrokv-cluster".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::warn!("cluster bus runtime: {e}");
                    return;
                }
            };
            rt.block_on(async move {
                server.cluster.bus_running.store(true, Ordering::Relaxed);
                let s = server.clone();
                tokio::spawn(async move { s.cluster.saver().await });
                for l in listeners {
                    let Ok(l) = tokio::net::TcpListener::from_std(l) else {
                        continue;
                    };
                    let s = server.clone();
                    tokio::spawn(async move {
                        loop {
                            match l.accept().await {
                                Ok((stream, _)) => {
                                    tokio::spawn(inbound(s.clone(), stream));
                                }
                                Err(_) => {
                                    tokio::time::sleep(std::time::Duration::from_millis(10)).await
                                }
                            }
                        }
                    });
                }
                let mut tick = tokio::time::interval(std::time::Duration::from_millis(100));
                let mut iteration = 0u64;
                loop {
                    tick.tick().await;
                    if server.shutting_down.load(Ordering::Relaxed) {
                        break;
                    }
                    cron(&server, iteration);
                    iteration += 1;
                }
            });
        })?;
    Ok(())
}

/// Starts a handshake with a node at `ip`:`port` (Redis's
/// clusterStartHandshake, for CLUSTER MEET): false for an invalid
/// address. A handshake already under way with the same address is not
/// started twice.
pub fn start_handshake(st: &mut State, ip: &str, port: u16, cport: u16) -> bool {
    let Ok(addr) = ip.parse::<std::net::IpAddr>() else {
        return false;
    };
    if port == 0 || cport == 0 {
        return false;
    }
    let norm = addr.to_string();
    let dup = st.numbers().any(|n| {
        let node = st.node(n);
        node.in_handshake()
            && node.ip.eq_ignore_ascii_case(&norm)
            && node.port == port
            && node.cport == cport
    });
    if dup {
        return true;
    }
    let n = st.create_node(random_name(), flag::HANDSHAKE | flag::MEET);
    let node = st.node_mut(n);
    node.ip = norm;
    node.port = port;
    node.cport = cport;
    true
}

/// Broadcasts a PONG to every node now (after a configuration change a
/// command made: SETSLOT NODE, FAILOVER TAKEOVER...).
pub fn broadcast_config(server: &Arc<Server>) {
    let ctx = Ctx {
        server,
        settings: server.cluster.settings(),
    };
    let mut st = server.cluster.state.lock();
    broadcast_pong(&ctx, &mut st, PongTarget::All);
}

/// Makes this node a replica of node `n` (CLUSTER REPLICATE).
pub fn replicate(server: &Arc<Server>, n: usize) {
    let mut after = After::default();
    {
        let mut st = server.cluster.state.lock();
        set_master(&mut st, &mut after, n);
    }
    run_after(server, after);
    server.cluster.before_sleep();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_redis() {
        assert_eq!(O_MFLAGS + 3, HDR_LEN);
        assert_eq!(FULL_LEN, 4352);
        assert_eq!(48 + IP_LEN + 2 * 5, GOSSIP_LEN);
    }

    #[test]
    fn lengths_are_checked() {
        let mut b = vec![0u8; HDR_LEN];
        put16(&mut b, O_TYPE, msg::PING);
        assert!(valid_length(&b));
        put16(&mut b, O_COUNT, 1);
        assert!(!valid_length(&b));
        b.resize(HDR_LEN + GOSSIP_LEN, 0);
        assert!(valid_length(&b));
        b[O_MFLAGS] = MF_EXT_DATA;
        put16(&mut b, O_EXTENSIONS, 1);
        assert!(!valid_length(&b));
        put16(&mut b, O_TYPE, msg::FAIL);
        b.truncate(HDR_LEN + NAMELEN);
        assert!(valid_length(&b));
    }
}
