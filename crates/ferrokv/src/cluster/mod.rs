//! Redis Cluster (cluster-enabled yes): the node table, slot ownership,
//! epochs, the routing check every keyed command passes, and the
//! `nodes.conf` file (Redis 7.0's cluster.c, cluster.h and the redis.io
//! cluster specification).
//!
//! - [`slot`]: CRC16 hash slots and hash tags.
//! - The cluster bus (byte-compatible with Redis 7.0's `clusterMsg`, on
//!   its own listener, with the cron that pings, detects failures and
//!   runs replica elections) and the CLUSTER commands live in
//!   `cmd/cluster/`, above the command table, as replication's I/O lives in
//!   `cmd/repl/` above `repl/`.
//! - This module: [`Cluster`] (per server), its [`State`] (behind one
//!   mutex: the bus and the CLUSTER commands change it; both are rare next
//!   to commands) and the lock-free slot table the request path reads.
//!
//! Nodes are numbered in [`State::nodes`]; number 0 is always this node
//! ("myself"). The request path reads each slot's owner number from
//! [`Cluster::routes`] (one relaxed atomic load per key) and only takes
//! the state's lock to build a redirection.

pub mod slot;

use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

pub use slot::{key_hash_slot, SLOTS};

/// Length of a node name (40 hex characters).
pub const NAMELEN: usize = 40;

/// Node flags, as Redis's CLUSTER_NODE_* (sent on the bus as they are).
pub mod flag {
    /// A master.
    pub const MASTER: u16 = 1;
    /// A replica.
    pub const SLAVE: u16 = 2;
    /// Possibly failing (no reply within the node timeout).
    pub const PFAIL: u16 = 4;
    /// Failing (agreed by a majority of masters).
    pub const FAIL: u16 = 8;
    /// This node.
    pub const MYSELF: u16 = 16;
    /// First contact not yet finished.
    pub const HANDSHAKE: u16 = 32;
    /// Address unknown.
    pub const NOADDR: u16 = 64;
    /// Send a MEET (not a PING) on the first connection.
    pub const MEET: u16 = 128;
    /// A master eligible for replica migration.
    pub const MIGRATE_TO: u16 = 256;
    /// The replica does not fail over (cluster-replica-no-failover).
    pub const NOFAILOVER: u16 = 512;
}

/// Number of bus message types (CLUSTERMSG_TYPE_COUNT).
pub const MSG_TYPES: usize = 11;

/// Names of the bus message types in CLUSTER INFO's stats, by type.
pub const TYPE_NAMES: [&str; MSG_TYPES] = [
    "ping",
    "pong",
    "meet",
    "fail",
    "publish",
    "auth-req",
    "auth-ack",
    "update",
    "mfstart",
    "module",
    "publishshard",
];

/// "No node" in the slot table.
pub const NO_NODE: u32 = 0xffff;
/// Route bit: this node owns the slot and migrates it (SETSLOT MIGRATING).
pub const ROUTE_MIGRATING: u32 = 1 << 16;
/// Route bit: this node imports the slot (SETSLOT IMPORTING).
pub const ROUTE_IMPORTING: u32 = 1 << 17;
/// The number of "myself" in [`State::nodes`].
pub const MYSELF: usize = 0;

/// Multiplier of the node timeout after which a FAIL flag of a master that
/// still serves slots is cleared (CLUSTER_FAIL_UNDO_TIME_MULT).
pub const FAIL_UNDO_TIME_MULT: u64 = 2;
/// Multiplier of the node timeout for failure report validity
/// (CLUSTER_FAIL_REPORT_VALIDITY_MULT).
pub const FAIL_REPORT_VALIDITY_MULT: u64 = 2;
/// How long a master waits after its first state computation before it
/// may turn OK, ms (CLUSTER_WRITABLE_DELAY).
pub const WRITABLE_DELAY: u64 = 2000;
/// How long a forgotten node is kept from coming back, in seconds
/// (CLUSTER_BLACKLIST_TTL).
pub const BLACKLIST_TTL: u64 = 60;

/// One link on the cluster bus (to or from a node).
#[derive(Debug)]
pub struct Link {
    /// Process-unique id.
    pub id: u64,
    /// Frames queued for the link's writer task.
    pub tx: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
    /// When it was created (ms since the epoch).
    pub ctime: u64,
    /// Bytes queued and not yet written.
    pub pending: Arc<AtomicU64>,
}

impl Link {
    /// Queues one message; false when the link's task is gone.
    pub fn send(&self, msg: Vec<u8>) -> bool {
        self.pending.fetch_add(msg.len() as u64, Ordering::Relaxed);
        self.tx.send(msg).is_ok()
    }
}

/// One node as this node sees it (Redis's `clusterNode`).
#[derive(Debug)]
pub struct Node {
    /// 40 hex characters.
    pub name: String,
    /// [`flag`] bits.
    pub flags: u16,
    /// Last known IP ("" when unknown).
    pub ip: String,
    /// Client port.
    pub port: u16,
    /// Cluster bus port.
    pub cport: u16,
    /// Plaintext port when `port` is the TLS one (0 otherwise).
    pub pport: u16,
    /// Announced hostname ("" when none).
    pub hostname: String,
    /// The master of a replica (node number).
    pub master: Option<usize>,
    /// Its config epoch (of a master; replicas announce their master's).
    pub config_epoch: u64,
    /// Slots it serves (bitmap, bit j of byte j/8 is slot j as in Redis).
    pub slots: Box<[u8; SLOTS / 8]>,
    /// Number of slots set in `slots`.
    pub numslots: usize,
    /// Created (ms).
    pub ctime: u64,
    /// When the pending PING was sent (0: none pending), ms.
    pub ping_sent: u64,
    /// Last PONG received, ms.
    pub pong_received: u64,
    /// Last data received from it, ms.
    pub data_received: u64,
    /// When it was flagged FAIL, ms.
    pub fail_time: u64,
    /// Last time we voted for one of its replicas, ms.
    pub voted_time: u64,
    /// Replication offset it last announced.
    pub repl_offset: u64,
    /// When that offset arrived, ms.
    pub repl_offset_time: u64,
    /// When a master became orphaned (no working replica), ms.
    pub orphaned_time: u64,
    /// Failure reports from masters: (reporter, time ms).
    pub fail_reports: Vec<(usize, u64)>,
    /// Our outbound link.
    pub link: Option<Link>,
    /// Its inbound link to us, once identified.
    pub inbound: Option<Link>,
}

impl Node {
    fn new(name: String, flags: u16, now: u64) -> Node {
        Node {
            name,
            flags,
            ip: String::new(),
            port: 0,
            cport: 0,
            pport: 0,
            hostname: String::new(),
            master: None,
            config_epoch: 0,
            slots: Box::new([0; SLOTS / 8]),
            numslots: 0,
            ctime: now,
            ping_sent: 0,
            pong_received: 0,
            data_received: 0,
            fail_time: 0,
            voted_time: 0,
            repl_offset: 0,
            repl_offset_time: 0,
            orphaned_time: 0,
            fail_reports: Vec::new(),
            link: None,
            inbound: None,
        }
    }

    /// True when it serves `slot`.
    pub fn has_slot(&self, slot: usize) -> bool {
        self.slots[slot / 8] & (1 << (slot % 8)) != 0
    }

    /// True for a master.
    pub fn is_master(&self) -> bool {
        self.flags & flag::MASTER != 0
    }

    /// True for a replica.
    pub fn is_replica(&self) -> bool {
        self.flags & flag::SLAVE != 0
    }

    /// True while the first contact is not finished.
    pub fn in_handshake(&self) -> bool {
        self.flags & flag::HANDSHAKE != 0
    }

    /// True when flagged FAIL.
    pub fn failed(&self) -> bool {
        self.flags & flag::FAIL != 0
    }

    /// True when flagged PFAIL.
    pub fn timed_out(&self) -> bool {
        self.flags & flag::PFAIL != 0
    }
}

/// The cluster's state as this node sees it (Redis's `clusterState`).
#[derive(Debug)]
pub struct State {
    /// Nodes by number; [`MYSELF`] is this node. Forgotten numbers are None.
    pub nodes: Vec<Option<Node>>,
    /// Node number by name.
    pub by_name: HashMap<String, usize>,
    /// The cluster's current epoch.
    pub current_epoch: u64,
    /// Epoch of the last vote we gave.
    pub last_vote_epoch: u64,
    /// Owner of each slot ([`NO_NODE`] = unassigned), mirrored into the
    /// route table.
    pub slots: Vec<u32>,
    /// Slots this node migrates, to which node.
    pub migrating_to: HashMap<u16, usize>,
    /// Slots this node imports, from which node.
    pub importing_from: HashMap<u16, usize>,
    /// The cluster is OK (all slots served, or full coverage not
    /// required) from our point of view.
    pub state_ok: bool,
    /// Number of masters serving at least one slot.
    pub size: usize,
    /// Forgotten nodes: name -> until when (unix s) they may not come back.
    pub blacklist: HashMap<String, u64>,
    /// Messages sent and received per type.
    pub stats_sent: [u64; MSG_TYPES],
    /// Messages received per type.
    pub stats_received: [u64; MSG_TYPES],
    /// Links closed for exceeding cluster-link-sendbuf-limit.
    pub links_buffer_limit_exceeded: u64,
    /// The configuration must be saved.
    pub todo_save: bool,
    /// ... and flushed to disk (epochs and votes changed: Redis's
    /// CLUSTER_TODO_FSYNC_CONFIG).
    pub todo_fsync: bool,
    /// The state must be recomputed.
    pub todo_update_state: bool,
    /// Election: when it may start (0 = none planned), ms.
    pub failover_auth_time: u64,
    /// Votes received.
    pub failover_auth_count: usize,
    /// The request was sent.
    pub failover_auth_sent: bool,
    /// This replica's rank among its master's replicas.
    pub failover_auth_rank: usize,
    /// Epoch of the election.
    pub failover_auth_epoch: u64,
    /// Manual failover deadline (0: none), ms.
    pub mf_end: u64,
    /// Master side: the replica doing a manual failover.
    pub mf_replica: Option<usize>,
    /// Master side: when writes were paused for it (ms): the offset is
    /// announced as paused once the writes already running have landed.
    pub mf_paused_ms: u64,
    /// Replica side: the master's offset when it paused.
    pub mf_master_offset: Option<u64>,
    /// Replica side: the failover may start.
    pub mf_can_start: bool,
    /// When the state last changed to FAIL/OK is decided (rejoin delay).
    pub among_minority_time: u64,
    /// When the state was first computed (ms; 0 = never).
    pub first_update: u64,
    /// The route table (shared with [`Cluster::routes`]).
    routes: Arc<[AtomicU32]>,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A random node name (40 hex characters).
pub fn random_name() -> String {
    crate::repl::random_id()
}

impl State {
    fn new(routes: Arc<[AtomicU32]>) -> State {
        let now = now_ms();
        let me = Node::new(random_name(), flag::MYSELF | flag::MASTER, now);
        let mut by_name = HashMap::new();
        by_name.insert(me.name.clone(), MYSELF);
        State {
            nodes: vec![Some(me)],
            by_name,
            current_epoch: 0,
            last_vote_epoch: 0,
            slots: vec![NO_NODE; SLOTS],
            migrating_to: HashMap::new(),
            importing_from: HashMap::new(),
            state_ok: false,
            size: 0,
            blacklist: HashMap::new(),
            stats_sent: [0; MSG_TYPES],
            stats_received: [0; MSG_TYPES],
            links_buffer_limit_exceeded: 0,
            todo_save: false,
            todo_fsync: false,
            todo_update_state: true,
            failover_auth_time: 0,
            failover_auth_count: 0,
            failover_auth_sent: false,
            failover_auth_rank: 0,
            failover_auth_epoch: 0,
            mf_end: 0,
            mf_paused_ms: 0,
            mf_replica: None,
            mf_master_offset: None,
            mf_can_start: false,
            among_minority_time: 0,
            first_update: 0,
            routes,
        }
    }

    /// This node.
    pub fn myself(&self) -> &Node {
        self.nodes[MYSELF].as_ref().expect("myself")
    }

    /// This node, mutably.
    pub fn myself_mut(&mut self) -> &mut Node {
        self.nodes[MYSELF].as_mut().expect("myself")
    }

    /// Node `n` (must exist).
    pub fn node(&self, n: usize) -> &Node {
        self.nodes[n].as_ref().expect("node")
    }

    /// Node `n`, mutably (must exist).
    pub fn node_mut(&mut self, n: usize) -> &mut Node {
        self.nodes[n].as_mut().expect("node")
    }

    /// The number of the node called `name`.
    pub fn lookup(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Live node numbers.
    pub fn numbers(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.as_ref().map(|_| i))
    }

    /// Adds a node; returns its number.
    pub fn add_node(&mut self, node: Node) -> usize {
        let name = node.name.clone();
        let n = match self.nodes.iter().skip(1).position(Option::is_none) {
            Some(i) if i + 1 < NO_NODE as usize => {
                self.nodes[i + 1] = Some(node);
                i + 1
            }
            _ => {
                self.nodes.push(Some(node));
                self.nodes.len() - 1
            }
        };
        self.by_name.insert(name, n);
        n
    }

    /// Creates a node with `name` and `flags` (Redis's createClusterNode +
    /// clusterAddNode).
    pub fn create_node(&mut self, name: String, flags: u16) -> usize {
        let node = Node::new(name, flags, now_ms());
        self.add_node(node)
    }

    /// Removes node `n` (Redis's clusterDelNode): its slots become
    /// unassigned, open slots pointing at it are closed, its failure
    /// reports are dropped everywhere, its replicas lose their master.
    pub fn del_node(&mut self, n: usize) {
        if n == MYSELF {
            return;
        }
        for s in 0..SLOTS {
            if self.slots[s] == n as u32 {
                self.del_slot(s);
            }
        }
        self.migrating_to.retain(|_, v| *v != n);
        self.importing_from.retain(|_, v| *v != n);
        self.refresh_open_routes();
        for m in self.numbers().collect::<Vec<_>>() {
            let node = self.node_mut(m);
            node.fail_reports.retain(|&(r, _)| r != n);
            if node.master == Some(n) {
                node.master = None;
            }
        }
        if let Some(node) = self.nodes[n].take() {
            self.by_name.remove(&node.name);
        }
        self.todo_save = true;
        self.todo_update_state = true;
    }

    /// Renames node `n` (a handshake node whose real name just arrived).
    pub fn rename(&mut self, n: usize, name: String) {
        let old = std::mem::replace(&mut self.node_mut(n).name, name.clone());
        self.by_name.remove(&old);
        self.by_name.insert(name, n);
    }

    fn write_route(&self, slot: usize) {
        let owner = self.slots[slot];
        let mut r = owner;
        if self.migrating_to.contains_key(&(slot as u16)) {
            r |= ROUTE_MIGRATING;
        }
        if self.importing_from.contains_key(&(slot as u16)) {
            r |= ROUTE_IMPORTING;
        }
        self.routes[slot].store(r, Ordering::Release);
    }

    /// Rewrites the route words of every open (migrating/importing) slot
    /// and of every slot whose flags were cleared.
    pub fn refresh_open_routes(&self) {
        for s in 0..SLOTS {
            self.write_route(s);
        }
    }

    /// Assigns `slot` to node `n` (Redis's clusterAddSlot); false when it
    /// already has an owner.
    pub fn add_slot(&mut self, n: usize, slot: usize) -> bool {
        if self.slots[slot] != NO_NODE {
            return false;
        }
        let node = self.node_mut(n);
        node.slots[slot / 8] |= 1 << (slot % 8);
        node.numslots += 1;
        self.slots[slot] = n as u32;
        self.write_route(slot);
        true
    }

    /// Unassigns `slot` (Redis's clusterDelSlot); false when unassigned.
    pub fn del_slot(&mut self, slot: usize) -> bool {
        let owner = self.slots[slot];
        if owner == NO_NODE {
            return false;
        }
        if let Some(Some(node)) = self.nodes.get_mut(owner as usize) {
            if node.has_slot(slot) {
                node.slots[slot / 8] &= !(1 << (slot % 8));
                node.numslots -= 1;
            }
        }
        self.slots[slot] = NO_NODE;
        self.write_route(slot);
        true
    }

    /// Unassigns every slot of node `n`; returns how many.
    pub fn del_node_slots(&mut self, n: usize) -> usize {
        let mut k = 0;
        for s in 0..SLOTS {
            if self.slots[s] == n as u32 {
                self.del_slot(s);
                k += 1;
            }
        }
        k
    }

    /// Sets or clears the migrating/importing state of `slot`.
    pub fn set_open(&mut self, slot: usize, migrating: Option<usize>, importing: Option<usize>) {
        match migrating {
            Some(n) => self.migrating_to.insert(slot as u16, n),
            None => self.migrating_to.remove(&(slot as u16)),
        };
        match importing {
            Some(n) => self.importing_from.insert(slot as u16, n),
            None => self.importing_from.remove(&(slot as u16)),
        };
        self.write_route(slot);
    }

    /// The master this node replicates, if any.
    pub fn my_master(&self) -> Option<usize> {
        self.myself().master
    }

    /// Replicas of node `n`, in number order.
    pub fn replicas_of(&self, n: usize) -> Vec<usize> {
        self.numbers()
            .filter(|&m| self.node(m).master == Some(n) && self.node(m).is_replica())
            .collect()
    }

    /// The largest epoch known (Redis's clusterGetMaxEpoch).
    pub fn max_epoch(&self) -> u64 {
        self.numbers()
            .map(|n| self.node(n).config_epoch)
            .max()
            .unwrap_or(0)
            .max(self.current_epoch)
    }

    /// Gives this node a new config epoch without agreement when it does
    /// not already hold the greatest one (Redis's
    /// clusterBumpConfigEpochWithoutConsensus); true when bumped.
    pub fn bump_epoch_without_consensus(&mut self) -> bool {
        let max = self.max_epoch();
        let mine = self.myself().config_epoch;
        if mine == 0 || mine != max {
            self.current_epoch += 1;
            let e = self.current_epoch;
            self.myself_mut().config_epoch = e;
            self.todo_save = true;
            true
        } else {
            false
        }
    }

    /// Makes node `n` a master (Redis's clusterSetNodeAsMaster).
    pub fn set_node_as_master(&mut self, n: usize) {
        let node = self.node_mut(n);
        if node.is_master() {
            return;
        }
        node.flags &= !flag::SLAVE;
        node.flags |= flag::MASTER;
        // A replica turned master was supposed to have replicas
        // (clusterSetNodeAsMaster).
        if node.master.is_some() && n != MYSELF {
            node.flags |= flag::MIGRATE_TO;
        }
        node.master = None;
        self.todo_save = true;
        self.todo_update_state = true;
    }

    /// Records that node `r` replicates master `m` (Redis's
    /// clusterNodeAddSlave: the master becomes a target for replica
    /// migration).
    pub fn add_replica(&mut self, m: usize, r: usize) {
        self.node_mut(r).master = Some(m);
        self.node_mut(m).flags |= flag::MIGRATE_TO;
    }

    /// Replicas of master `m` not flagged FAIL (Redis's
    /// clusterCountNonFailingSlaves).
    pub fn ok_replicas(&self, m: usize) -> usize {
        self.replicas_of(m)
            .into_iter()
            .filter(|&r| !self.node(r).failed())
            .count()
    }

    /// Valid failure reports about node `n` after dropping old ones
    /// (Redis's clusterNodeFailureReportsCount).
    pub fn failure_reports(&mut self, n: usize, node_timeout: u64) -> usize {
        let now = now_ms();
        let max_age = node_timeout * FAIL_REPORT_VALIDITY_MULT;
        let node = self.node_mut(n);
        node.fail_reports
            .retain(|&(_, t)| now.saturating_sub(t) <= max_age);
        node.fail_reports.len()
    }

    /// Recomputes the cluster state (Redis's clusterUpdateState): FAIL
    /// when a slot is unserved or served by a FAIL node
    /// (cluster-require-full-coverage yes) or when this master cannot
    /// reach a majority of the masters serving slots.
    pub fn update_state(&mut self, cfg: &Settings) -> bool {
        let now = now_ms();
        // A master waits a little after its first check before it turns
        // OK, to give the cluster a chance to reconfigure it after a
        // restart (CLUSTER_WRITABLE_DELAY, counted from the first call).
        if self.first_update == 0 {
            self.first_update = now;
        }
        if self.myself().is_master() && !self.state_ok && now - self.first_update < WRITABLE_DELAY {
            return self.state_ok;
        }
        let mut ok = true;
        if cfg.require_full_coverage {
            // One flag per node number, then one pass over the slot table.
            let failed: Vec<bool> = self
                .nodes
                .iter()
                .map(|n| n.as_ref().is_none_or(Node::failed))
                .collect();
            ok = self
                .slots
                .iter()
                .all(|&o| o != NO_NODE && !failed.get(o as usize).copied().unwrap_or(true));
        }
        let mut size = 0;
        let mut reachable = 0;
        for n in self.numbers() {
            let node = self.node(n);
            if node.is_master() && node.numslots > 0 {
                size += 1;
                if node.flags & (flag::FAIL | flag::PFAIL) == 0 {
                    reachable += 1;
                }
            }
        }
        self.size = size;
        let quorum = size / 2 + 1;
        if reachable < quorum {
            ok = false;
            self.among_minority_time = now;
        }
        // A master that was in the minority waits before accepting writes
        // again (CLUSTER_MAX_REJOIN_DELAY, bounded by the node timeout).
        if ok && !self.state_ok && self.myself().is_master() && self.among_minority_time != 0 {
            let delay = cfg.node_timeout.clamp(500, 5000);
            if now.saturating_sub(self.among_minority_time) < delay {
                return self.state_ok;
            }
        }
        self.state_ok = ok;
        ok
    }
}

/// Configuration values the cluster code reads (refreshed from the
/// server's configuration on every cron tick and command).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// cluster-node-timeout, ms.
    pub node_timeout: u64,
    /// cluster-require-full-coverage.
    pub require_full_coverage: bool,
    /// cluster-allow-reads-when-down.
    pub allow_reads_when_down: bool,
    /// cluster-allow-pubsubshard-when-down.
    pub allow_pubsubshard_when_down: bool,
    /// cluster-allow-replica-migration.
    pub allow_replica_migration: bool,
    /// cluster-migration-barrier.
    pub migration_barrier: usize,
    /// cluster-replica-validity-factor.
    pub replica_validity_factor: u64,
    /// cluster-replica-no-failover.
    pub replica_no_failover: bool,
    /// cluster-announce-ip ("" = discover).
    pub announce_ip: String,
    /// cluster-announce-port (0 = port).
    pub announce_port: u16,
    /// cluster-announce-bus-port (0 = cluster port).
    pub announce_bus_port: u16,
    /// cluster-announce-tls-port.
    pub announce_tls_port: u16,
    /// cluster-announce-hostname.
    pub announce_hostname: String,
    /// cluster-preferred-endpoint-type: 0 ip, 1 hostname, 2 unknown-endpoint.
    pub endpoint_type: u8,
    /// cluster-link-sendbuf-limit, bytes (0 = none).
    pub link_sendbuf_limit: u64,
    /// The client port.
    pub port: u16,
    /// The bus port.
    pub cport: u16,
    /// tls-cluster: bus links are TLS, the announced port is `tls-port`.
    pub tls_cluster: bool,
    /// tls-port (0 = none).
    pub tls_port: u16,
}

impl Settings {
    /// Reads the directives from `config`.
    pub fn from_config(c: &crate::config::Config, port: u16) -> Settings {
        let tls_cluster = c.get_bool("tls-cluster");
        let tls_port = c.get_i64("tls-port") as u16;
        // Redis's clusterInit: the bus port defaults to the port clients
        // use in the cluster (tls-port in a TLS cluster) + 10000.
        let base = if tls_cluster { tls_port } else { port };
        let cport = match c.get_i64("cluster-port") {
            0 => base.wrapping_add(10000),
            p => p as u16,
        };
        Settings {
            node_timeout: c.get_i64("cluster-node-timeout").max(1) as u64,
            require_full_coverage: c.get_bool("cluster-require-full-coverage"),
            allow_reads_when_down: c.get_bool("cluster-allow-reads-when-down"),
            allow_pubsubshard_when_down: c.get_bool("cluster-allow-pubsubshard-when-down"),
            allow_replica_migration: c.get_bool("cluster-allow-replica-migration"),
            migration_barrier: c.get_i64("cluster-migration-barrier").max(0) as usize,
            replica_validity_factor: c.get_i64("cluster-replica-validity-factor").max(0) as u64,
            replica_no_failover: c.get_bool("cluster-replica-no-failover"),
            announce_ip: c.get("cluster-announce-ip").to_string(),
            announce_port: c.get_i64("cluster-announce-port") as u16,
            announce_bus_port: c.get_i64("cluster-announce-bus-port") as u16,
            announce_tls_port: c.get_i64("cluster-announce-tls-port") as u16,
            announce_hostname: c.get("cluster-announce-hostname").to_string(),
            endpoint_type: match c.get("cluster-preferred-endpoint-type") {
                "hostname" => 1,
                "unknown-endpoint" => 2,
                _ => 0,
            },
            link_sendbuf_limit: c.get_u64("cluster-link-sendbuf-limit"),
            port,
            cport,
            tls_cluster,
            tls_port,
        }
    }
}

/// A server's cluster part. `enabled` is fixed at start-up
/// (cluster-enabled is immutable); when false nothing else is used.
pub struct Cluster {
    /// cluster-enabled yes.
    pub enabled: bool,
    /// Per slot: owner number (low 16 bits, [`NO_NODE`] when unassigned)
    /// and the [`ROUTE_MIGRATING`] / [`ROUTE_IMPORTING`] bits.
    pub routes: Arc<[AtomicU32]>,
    /// The cluster state is OK (mirror of [`State::state_ok`]).
    pub ok: AtomicBool,
    /// Number of this node's master when it is a replica ([`NO_NODE`]
    /// otherwise), for READONLY reads.
    pub my_master: AtomicU32,
    /// The state.
    pub state: Mutex<State>,
    /// Settings read from the configuration.
    pub settings: Mutex<Settings>,
    /// Absolute path of cluster-config-file.
    pub config_file: Mutex<String>,
    /// Serialises saves of the config file.
    save_lock: Mutex<()>,
    /// Next link id.
    pub next_link_id: AtomicU64,
    /// The bus thread runs (deferred saves go to it).
    pub bus_running: AtomicBool,
    /// A save without fsync is pending for the bus thread.
    save_pending: AtomicBool,
    /// Wakes the bus thread's saver.
    save_wakeup: tokio::sync::Notify,
    /// DEBUG DROP-CLUSTER-PACKET-FILTER (Redis's
    /// `server.cluster_drop_packet_filter`): bus messages of this type are
    /// dropped on receipt (after being counted); -1 drops none.
    pub drop_packet_filter: AtomicI64,
}

impl Default for Cluster {
    fn default() -> Self {
        let routes: Arc<[AtomicU32]> = (0..SLOTS).map(|_| AtomicU32::new(NO_NODE)).collect();
        Cluster {
            enabled: false,
            state: Mutex::new(State::new(routes.clone())),
            routes,
            ok: AtomicBool::new(false),
            my_master: AtomicU32::new(NO_NODE),
            settings: Mutex::new(Settings::default()),
            config_file: Mutex::new(String::new()),
            save_lock: Mutex::new(()),
            next_link_id: AtomicU64::new(1),
            bus_running: AtomicBool::new(false),
            save_pending: AtomicBool::new(false),
            save_wakeup: tokio::sync::Notify::new(),
            drop_packet_filter: AtomicI64::new(-1),
        }
    }
}

/// Why a command is not executed here (Redis's CLUSTER_REDIR_*).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirect {
    /// `-CROSSSLOT`.
    CrossSlot,
    /// `-TRYAGAIN` (multi-key request on a slot being migrated).
    Unstable,
    /// `-MOVED slot endpoint:port`.
    Moved(u16, usize),
    /// `-ASK slot endpoint:port`.
    Ask(u16, usize),
    /// `-CLUSTERDOWN The cluster is down`.
    DownState,
    /// `-CLUSTERDOWN The cluster is down and only accepts read commands`.
    DownRoState,
    /// `-CLUSTERDOWN Hash slot not served`.
    DownUnbound,
}

/// One command of a request to route, as the command table describes it
/// (cmd/ builds it: this layer sits below the command table).
pub struct Routed<'a> {
    /// The command writes (CMD_WRITE).
    pub write: bool,
    /// A Pub/Sub command (CMD_PUBSUB: SPUBLISH, SSUBSCRIBE...).
    pub pubsub: bool,
    /// MIGRATE (runs on the local node while its slot is open).
    pub migrate: bool,
    /// Its keys, as Redis's getKeysFromCommand finds them.
    pub keys: crate::keyspecs::Keys,
    /// Its arguments.
    pub args: crate::resp::Args<'a>,
}

impl Cluster {
    /// Applies the configuration at start-up: cluster-enabled, the config
    /// file name and the settings.
    pub fn configure(&mut self, c: &crate::config::Config) {
        self.enabled = c.get_bool("cluster-enabled");
        *self.settings.get_mut() = Settings::from_config(c, c.get_i64("port") as u16);
        *self.config_file.get_mut() = c.get("cluster-config-file").to_string();
    }

    /// Refreshes the settings after CONFIG SET, and myself's announced
    /// ports with them (Redis's clusterUpdateMyselfAnnouncedPorts).
    pub fn refresh_settings(&self, c: &crate::config::Config, port: u16) {
        let mut s = Settings::from_config(c, port);
        let old = self.settings.lock().cport;
        if old != 0 {
            s.cport = old;
        }
        let (p, pp, cp) = s.announced();
        *self.settings.lock() = s;
        if self.enabled {
            let mut st = self.state.lock();
            if st.nodes.get(MYSELF).is_some_and(Option::is_some) {
                let me = st.myself_mut();
                (me.port, me.pport, me.cport) = (p, pp, cp);
            }
        }
    }

    /// A copy of the settings.
    pub fn settings(&self) -> Settings {
        self.settings.lock().clone()
    }

    /// The hot-path check of a request in cluster mode (Redis's
    /// getNodeByQuery in cluster.c): Ok when it runs here, else why not.
    /// `cmds` is the command, or for EXEC the queued commands (an EXEC
    /// outside MULTI passes none). `asking`/`readonly` are the client's
    /// ASKING and READONLY flags; `lookup` tells whether a key exists
    /// (only asked for slots being migrated or imported).
    pub fn route(
        &self,
        cmds: &[Routed<'_>],
        asking: bool,
        readonly: bool,
        exists: &dyn Fn(&[u8]) -> bool,
    ) -> Result<(), Redirect> {
        let mut first: Option<&[u8]> = None;
        let mut slot = 0u16;
        let mut route = NO_NODE;
        let mut multiple_keys = false;
        let (mut missing, mut existing) = (0usize, 0usize);
        let mut any_write = false;
        let mut pubsub_shard = false;
        let mut is_migrate = false;
        for rc in cmds {
            any_write |= rc.write;
            pubsub_shard |= rc.pubsub;
            is_migrate |= rc.migrate;
            for k in rc.keys.iter() {
                let key = rc.args.get(k.pos);
                let this = key_hash_slot(key);
                match first {
                    None => {
                        first = Some(key);
                        slot = this;
                        route = self.routes[this as usize].load(Ordering::Acquire);
                        if route & 0xffff == NO_NODE {
                            return Err(Redirect::DownUnbound);
                        }
                    }
                    Some(f) => {
                        if f != key {
                            if this != slot {
                                return Err(Redirect::CrossSlot);
                            }
                            multiple_keys = true;
                        }
                    }
                }
                if route & (ROUTE_MIGRATING | ROUTE_IMPORTING) != 0 && !pubsub_shard {
                    if exists(key) {
                        existing += 1;
                    } else {
                        missing += 1;
                    }
                }
            }
        }
        if first.is_none() {
            return Ok(());
        }
        let owner = route & 0xffff;
        let mine = owner == MYSELF as u32;
        let migrating = mine && route & ROUTE_MIGRATING != 0;
        let importing = !mine && route & ROUTE_IMPORTING != 0;
        if !self.ok.load(Ordering::Relaxed) {
            let s = self.settings.lock();
            if pubsub_shard {
                if !s.allow_pubsubshard_when_down {
                    return Err(Redirect::DownState);
                }
            } else if !s.allow_reads_when_down {
                return Err(Redirect::DownState);
            } else if any_write {
                return Err(Redirect::DownRoState);
            }
        }
        if (migrating || importing) && is_migrate {
            return Ok(());
        }
        if migrating && missing > 0 {
            if existing > 0 {
                return Err(Redirect::Unstable);
            }
            let to = self
                .state
                .lock()
                .migrating_to
                .get(&slot)
                .copied()
                .unwrap_or(MYSELF);
            return Err(Redirect::Ask(slot, to));
        }
        if asking && importing {
            if multiple_keys && missing > 0 {
                return Err(Redirect::Unstable);
            }
            return Ok(());
        }
        if (readonly || pubsub_shard)
            && !any_write
            && self.my_master.load(Ordering::Relaxed) == owner
        {
            return Ok(());
        }
        if !mine {
            return Err(Redirect::Moved(slot, owner as usize));
        }
        Ok(())
    }

    /// The error text of a redirection (Redis's clusterRedirectClient),
    /// without the leading `-`, for a client on TLS (`tls`) or not: a
    /// plaintext client of a TLS cluster is sent to plaintext ports.
    pub fn redirect_message(&self, r: &Redirect, tls: bool) -> String {
        match r {
            Redirect::CrossSlot => "CROSSSLOT Keys in request don't hash to the same slot".into(),
            Redirect::Unstable => "TRYAGAIN Multiple keys request during rehashing of slot".into(),
            Redirect::DownState => "CLUSTERDOWN The cluster is down".into(),
            Redirect::DownRoState => {
                "CLUSTERDOWN The cluster is down and only accepts read commands".into()
            }
            Redirect::DownUnbound => "CLUSTERDOWN Hash slot not served".into(),
            Redirect::Moved(slot, n) | Redirect::Ask(slot, n) => {
                let kind = if matches!(r, Redirect::Moved(..)) {
                    "MOVED"
                } else {
                    "ASK"
                };
                let st = self.state.lock();
                let s = self.settings.lock();
                let tls = tls || !s.tls_cluster;
                let (endpoint, port) = match st.nodes.get(*n).and_then(Option::as_ref) {
                    Some(node) => (
                        preferred_endpoint(node, &s).to_string(),
                        node_port(node, tls),
                    ),
                    None => ("?".to_string(), 0),
                };
                format!("{kind} {slot} {endpoint}:{port}")
            }
        }
    }

    /// Marks the configuration to be saved (no ownership changed: the
    /// state need not be recomputed).
    pub fn changed_config(&self) {
        self.state.lock().todo_save = true;
        self.before_sleep();
    }

    /// Marks the configuration to be saved and the state recomputed, and
    /// does both now (commands call this after changing the state).
    pub fn changed(&self) {
        {
            let mut st = self.state.lock();
            st.todo_save = true;
            st.todo_update_state = true;
        }
        self.before_sleep();
    }

    /// The deferred work of a state change (Redis's clusterBeforeSleep):
    /// recompute the state, mirror it, save the config file.
    pub fn before_sleep(&self) {
        let settings = self.settings();
        let save = {
            let mut st = self.state.lock();
            if st.todo_update_state {
                st.todo_update_state = false;
                let ok = st.update_state(&settings);
                self.ok.store(ok, Ordering::Relaxed);
            }
            let m = st.my_master().map(|m| m as u32).unwrap_or(NO_NODE);
            self.my_master.store(m, Ordering::Relaxed);
            let fsync = std::mem::take(&mut st.todo_fsync);
            (std::mem::take(&mut st.todo_save) || fsync, fsync)
        };
        if save.1 || (save.0 && !self.bus_running.load(Ordering::Relaxed)) {
            // Epochs or votes changed: on disk before anyone hears of it.
            if let Err(e) = self.write_config(save.1) {
                tracing::warn!("Could not save the cluster config file: {e}");
            }
        } else if save.0 {
            // Other changes are written by the bus thread, coalesced
            // (a rename costs about half a millisecond here; resharding
            // changes the configuration several times per slot).
            self.save_pending.store(true, Ordering::Release);
            self.save_wakeup.notify_one();
        }
    }

    /// The bus thread's side of deferred saves: writes the file whenever
    /// a save is pending.
    pub async fn saver(&self) {
        loop {
            self.save_wakeup.notified().await;
            if self.save_pending.swap(false, Ordering::AcqRel) {
                if let Err(e) = self.write_config(false) {
                    tracing::warn!("Could not save the cluster config file: {e}");
                }
            }
        }
    }

    /// Writes `nodes.conf` atomically and flushes it to disk (CLUSTER
    /// SAVECONFIG, start-up).
    pub fn save_config(&self) -> std::io::Result<()> {
        self.write_config(true)
    }

    /// Writes `nodes.conf` atomically (temp file + rename), as Redis's
    /// clusterSaveConfig; `fsync` also flushes it to disk (Redis does so
    /// only when epochs or votes changed).
    pub fn write_config(&self, fsync: bool) -> std::io::Result<()> {
        let _g = self.save_lock.lock();
        let text = {
            let st = self.state.lock();
            let mut t = nodes_description(&st, &self.settings(), false, true);
            let _ = writeln!(
                t,
                "vars currentEpoch {} lastVoteEpoch {}",
                st.current_epoch, st.last_vote_epoch
            );
            t
        };
        let path = self.config_file.lock().clone();
        let tmp = format!("{path}.tmp-{}", std::process::id());
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            if fsync {
                f.sync_all()?;
            }
        }
        std::fs::rename(&tmp, &path)
    }

    /// Loads `nodes.conf` at start-up, or creates this node and writes the
    /// file when there is none (Redis's clusterLoadConfig + clusterInit).
    /// Errors name the file and the problem; the server does not start.
    pub fn load_or_create(&self) -> Result<(), String> {
        let path = self.config_file.lock().clone();
        match std::fs::read_to_string(&path) {
            Ok(text) if !text.trim().is_empty() => {
                let mut st = self.state.lock();
                load_config(&mut st, &text).map_err(|e| {
                    format!("Unrecoverable error: corrupted cluster config file \"{path}\": {e}")
                })?;
                st.todo_update_state = true;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("Can't open the cluster config file {path}: {e}")),
        }
        {
            let s = self.settings();
            let mut st = self.state.lock();
            let me = st.myself_mut();
            (me.port, me.pport, me.cport) = s.announced();
            me.hostname = s.announce_hostname.clone();
            if !s.announce_ip.is_empty() {
                me.ip = s.announce_ip.clone();
            }
            tracing::info!("Node configuration loaded, I'm {}", me.name);
        }
        self.save_config()
            .map_err(|e| format!("Can't write the cluster config file {path}: {e}"))
    }
}

impl Settings {
    /// The ports announced on the bus: (client port, plaintext client
    /// port, bus port), Redis 7.0's deriveAnnouncedPorts. In a TLS cluster
    /// the client port is `tls-port` (or `cluster-announce-tls-port`) and
    /// the plaintext one `port` (or `cluster-announce-port`); otherwise
    /// the plaintext port is 0.
    pub fn announced(&self) -> (u16, u16, u16) {
        let (mut port, mut pport) = if self.tls_cluster {
            (self.tls_port, self.port)
        } else {
            (self.port, 0)
        };
        if self.tls_cluster && self.announce_tls_port != 0 {
            port = self.announce_tls_port;
            pport = self.announce_port;
        } else if self.announce_port != 0 {
            port = self.announce_port;
        }
        let cport = if self.announce_bus_port != 0 {
            self.announce_bus_port
        } else {
            self.cport
        };
        (port, pport, cport)
    }
}

/// The endpoint clients are sent to for `node` (Redis's
/// getPreferredEndpoint): its IP, its hostname (`?` when it has none) or
/// `?` (unknown-endpoint).
pub fn preferred_endpoint<'a>(node: &'a Node, s: &Settings) -> &'a str {
    match s.endpoint_type {
        1 if !node.hostname.is_empty() => &node.hostname,
        1 | 2 => "?",
        _ => &node.ip,
    }
}

/// The client port of `node` given to a client: its announced port, or
/// its plaintext port when `tls` is false and it has one (Redis 7.0's
/// `use_pport && node->pport ? node->pport : node->port`; callers pass
/// `tls` false only for a plaintext client of a TLS cluster).
pub fn node_port(node: &Node, tls: bool) -> u16 {
    if tls || node.pport == 0 {
        node.port
    } else {
        node.pport
    }
}

/// Flag names of CLUSTER NODES, in Redis's order (Redis's
/// representClusterNodeFlags).
pub fn flags_string(flags: u16) -> String {
    const NAMES: &[(u16, &str)] = &[
        (flag::MYSELF, "myself"),
        (flag::MASTER, "master"),
        (flag::SLAVE, "slave"),
        (flag::PFAIL, "fail?"),
        (flag::FAIL, "fail"),
        (flag::HANDSHAKE, "handshake"),
        (flag::NOADDR, "noaddr"),
        (flag::NOFAILOVER, "nofailover"),
    ];
    let v: Vec<&str> = NAMES
        .iter()
        .filter(|(b, _)| flags & b != 0)
        .map(|(_, n)| *n)
        .collect();
    if v.is_empty() {
        "noflags".into()
    } else {
        v.join(",")
    }
}

/// Slot ranges of a slot bitmap (bit j of byte j/8 is slot j) as
/// (start, end) pairs; whole bytes of 0x00 or 0xff are stepped over at
/// once.
pub fn bitmap_ranges(bits: &[u8; SLOTS / 8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, &byte) in bits.iter().enumerate() {
        match (byte, start) {
            (0xff, Some(_)) | (0, None) => continue,
            (0xff, None) => {
                start = Some(i * 8);
                continue;
            }
            (0, Some(b)) => {
                out.push((b, i * 8 - 1));
                start = None;
                continue;
            }
            _ => {}
        }
        for bit in 0..8 {
            let s = i * 8 + bit;
            let set = byte & (1 << bit) != 0;
            match (set, start) {
                (true, None) => start = Some(s),
                (false, Some(b)) => {
                    out.push((b, s - 1));
                    start = None;
                }
                _ => {}
            }
        }
    }
    if let Some(b) = start {
        out.push((b, SLOTS - 1));
    }
    out
}

/// Slot ranges of a bitmap as (start, end) pairs.
pub fn slot_ranges(has: impl Fn(usize) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for s in 0..=SLOTS {
        let set = s < SLOTS && has(s);
        match (set, start) {
            (true, None) => start = Some(s),
            (false, Some(b)) => {
                out.push((b, s - 1));
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// One line of CLUSTER NODES for node `n` (Redis's
/// clusterGenNodeDescription), without the newline. `open_slots` adds
/// this node's migrating/importing slots (`[slot->-node]`,
/// `[slot-<-node]`) when `n` is myself.
pub fn node_description(st: &State, n: usize, tls: bool, open_slots: bool) -> String {
    let node = st.node(n);
    let mut s = String::with_capacity(128);
    let port = node_port(node, tls);
    let _ = write!(s, "{} {}:{}@{}", node.name, node.ip, port, node.cport);
    if !node.hostname.is_empty() {
        let _ = write!(s, ",{}", node.hostname);
    }
    let _ = write!(s, " {} ", flags_string(node.flags));
    match node.master {
        Some(m) if st.nodes.get(m).is_some_and(Option::is_some) => s.push_str(&st.node(m).name),
        _ => s.push('-'),
    }
    let connected = n == MYSELF || node.link.is_some();
    let _ = write!(
        s,
        " {} {} {} {}",
        node.ping_sent,
        node.pong_received,
        node.config_epoch,
        if connected {
            "connected"
        } else {
            "disconnected"
        }
    );
    if node.is_master() {
        for (a, b) in bitmap_ranges(&node.slots) {
            if a == b {
                let _ = write!(s, " {a}");
            } else {
                let _ = write!(s, " {a}-{b}");
            }
        }
    }
    if open_slots && n == MYSELF {
        let mut mig: Vec<_> = st.migrating_to.iter().collect();
        mig.sort();
        for (slot, to) in mig {
            if let Some(Some(t)) = st.nodes.get(*to) {
                let _ = write!(s, " [{slot}->-{}]", t.name);
            }
        }
        let mut imp: Vec<_> = st.importing_from.iter().collect();
        imp.sort();
        for (slot, from) in imp {
            if let Some(Some(f)) = st.nodes.get(*from) {
                let _ = write!(s, " [{slot}-<-{}]", f.name);
            }
        }
    }
    s
}

/// CLUSTER NODES (and the body of nodes.conf): one line per node, myself
/// first then in number order (Redis walks its node dict, whose order is
/// not defined).
pub fn nodes_description(st: &State, _s: &Settings, tls: bool, with_handshake: bool) -> String {
    let mut out = String::new();
    for n in st.numbers() {
        if !with_handshake && st.node(n).in_handshake() {
            continue;
        }
        out.push_str(&node_description(st, n, tls, true));
        out.push('\n');
    }
    out
}

/// Parses nodes.conf into `st` (Redis's clusterLoadConfig).
fn load_config(st: &mut State, text: &str) -> Result<(), String> {
    let now = now_ms();
    let mut myself_seen = false;
    // Masters may be named before their own line: create on demand.
    let get_or_create = |st: &mut State, name: &str| -> usize {
        match st.lookup(name) {
            Some(n) => n,
            None => st.create_node(name.to_string(), 0),
        }
    };
    for line in text.lines() {
        let argv: Vec<&str> = line.split_whitespace().collect();
        if argv.is_empty() {
            continue;
        }
        if argv[0] == "vars" {
            let mut i = 1;
            while i + 1 < argv.len() {
                let v: u64 = argv[i + 1].parse().map_err(|_| "bad vars line")?;
                match argv[i] {
                    "currentEpoch" => st.current_epoch = v,
                    "lastVoteEpoch" => st.last_vote_epoch = v,
                    _ => {}
                }
                i += 2;
            }
            continue;
        }
        if argv.len() < 8 {
            return Err("a node line has fewer than 8 fields".into());
        }
        let name = argv[0];
        if name.len() != NAMELEN {
            return Err(format!("bad node name {name}"));
        }
        let is_me = argv[2].split(',').any(|f| f == "myself");
        let n = if is_me {
            if myself_seen {
                return Err("more than one myself".into());
            }
            myself_seen = true;
            if let Some(old) = st.lookup(name) {
                if old != MYSELF {
                    // Created earlier as someone's master: move it.
                    st.nodes[old] = None;
                    st.by_name.remove(name);
                    for m in st.numbers().collect::<Vec<_>>() {
                        if st.node(m).master == Some(old) {
                            st.node_mut(m).master = Some(MYSELF);
                        }
                    }
                }
            }
            st.rename(MYSELF, name.to_string());
            MYSELF
        } else {
            get_or_create(st, name)
        };
        // Address: ip:port@cport[,hostname]
        let (addr, hostname) = match argv[1].split_once(',') {
            Some((a, h)) => (a, h),
            None => (argv[1], ""),
        };
        let (ipport, cport) = addr.split_once('@').ok_or("address without @cport")?;
        let colon = ipport.rfind(':').ok_or("address without port")?;
        let ip = &ipport[..colon];
        let port: u16 = ipport[colon + 1..].parse().map_err(|_| "bad port")?;
        let cport: u16 = cport.parse().map_err(|_| "bad bus port")?;
        let mut flags = 0u16;
        for f in argv[2].split(',') {
            flags |= match f {
                "myself" => flag::MYSELF,
                "master" => flag::MASTER,
                "slave" => flag::SLAVE,
                "fail?" => flag::PFAIL,
                "fail" => flag::FAIL,
                "handshake" => flag::HANDSHAKE,
                "noaddr" => flag::NOADDR,
                "nofailover" => flag::NOFAILOVER,
                "noflags" => 0,
                _ => return Err(format!("unknown flag {f}")),
            };
        }
        let master = if argv[3] != "-" {
            Some(get_or_create(st, argv[3]))
        } else {
            None
        };
        let ping_sent: u64 = argv[4].parse().unwrap_or(0);
        let pong: u64 = argv[5].parse().unwrap_or(0);
        let epoch: u64 = argv[6].parse().map_err(|_| "bad config epoch")?;
        {
            let node = st.node_mut(n);
            node.ip = ip.to_string();
            node.port = port;
            node.cport = cport;
            node.hostname = hostname.to_string();
            node.flags = flags;
            node.master = master;
            node.ping_sent = if ping_sent != 0 { now } else { 0 };
            node.pong_received = if pong != 0 { now } else { 0 };
            node.config_epoch = epoch;
            if n == MYSELF {
                node.flags |= flag::MYSELF;
            }
        }
        for spec in &argv[8..] {
            if let Some(inner) = spec.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
                if let Some((slot, to)) = inner.split_once("->-") {
                    let slot: usize = slot.parse().map_err(|_| "bad open slot")?;
                    let t = get_or_create(st, to);
                    st.migrating_to.insert(slot as u16, t);
                } else if let Some((slot, from)) = inner.split_once("-<-") {
                    let slot: usize = slot.parse().map_err(|_| "bad open slot")?;
                    let f = get_or_create(st, from);
                    st.importing_from.insert(slot as u16, f);
                }
                continue;
            }
            let (a, b) = match spec.split_once('-') {
                Some((a, b)) => (a, b),
                None => (*spec, *spec),
            };
            let a: usize = a.parse().map_err(|_| format!("bad slot {spec}"))?;
            let b: usize = b.parse().map_err(|_| format!("bad slot {spec}"))?;
            if a > b || b >= SLOTS {
                return Err(format!("bad slot range {spec}"));
            }
            for s in a..=b {
                st.add_slot(n, s);
            }
        }
    }
    if !myself_seen {
        return Err("no myself line".into());
    }
    // Masters with replicas are replica-migration targets.
    for n in st.numbers().collect::<Vec<_>>() {
        if let Some(m) = st.node(n).master {
            if st.nodes.get(m).is_some_and(Option::is_some) {
                st.node_mut(m).flags |= flag::MIGRATE_TO;
            }
        }
    }
    st.refresh_open_routes();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_ranges_match_bit_by_bit() {
        let mut bits = Box::new([0u8; SLOTS / 8]);
        let mut set = |s: usize| bits[s / 8] |= 1 << (s % 8);
        for s in [0, 1, 2, 7, 8, 9, 100, 5000, 16383] {
            set(s);
        }
        for s in 200..=1000 {
            set(s);
        }
        for s in 16000..16383 {
            set(s);
        }
        let slow = slot_ranges(|x| bits[x / 8] & (1 << (x % 8)) != 0);
        assert_eq!(bitmap_ranges(&bits), slow);
        assert_eq!(
            bitmap_ranges(&Box::new([0xff; SLOTS / 8])),
            vec![(0, SLOTS - 1)]
        );
        assert!(bitmap_ranges(&Box::new([0; SLOTS / 8])).is_empty());
    }
}
