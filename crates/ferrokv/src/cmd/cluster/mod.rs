//! The cluster commands (Redis 7.0 cluster.c): CLUSTER and its
//! subcommands, ASKING, READONLY, READWRITE, MIGRATE and RESTORE-ASKING.
//! The state they read and change is in `cluster/`; every command but
//! MIGRATE replies "ERR This instance has cluster support disabled" when
//! cluster-enabled is no.

use super::flags::*;
use super::{acl, cmd, container, Command, Ctx};
pub mod bus;

use crate::cluster::{self, flag, key_hash_slot, State, MYSELF, NO_NODE, SLOTS};
use crate::resp::Args;
use crate::server::Server;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

const DISABLED: &str = "ERR This instance has cluster support disabled";
/// Flags of the CLUSTER subcommands that change the configuration.
const CFG: u64 = ADMIN | STALE | NO_ASYNC_LOADING;

const fn sub(
    name: &'static str,
    arity: i32,
    flags: u64,
    h: super::Handler,
    summary: &'static str,
) -> Command {
    cmd(name, arity, flags, (0, 0, 0), 0, h).doc("cluster", "3.0.0", summary, "O(1)")
}

/// Tip of the CLUSTER subcommands whose reply depends on the node and the
/// moment (Redis 7.0.15's COMMAND INFO).
const NONDETERMINISTIC: &[&str] = &["nondeterministic_output"];

static CLUSTER_SUBS: &[Command] = &[
    sub(
        "cluster|addslots",
        -3,
        CFG,
        addslots,
        "Assign new hash slots to receiving node",
    ),
    sub(
        "cluster|addslotsrange",
        -4,
        CFG,
        addslotsrange,
        "Assign new hash slots to receiving node",
    ),
    sub(
        "cluster|bumpepoch",
        2,
        CFG,
        bumpepoch,
        "Advance the cluster config epoch",
    )
    .tips(NONDETERMINISTIC),
    sub(
        "cluster|count-failure-reports",
        3,
        ADMIN | STALE,
        count_failure_reports,
        "Return the number of failure reports active for a given node",
    )
    .tips(NONDETERMINISTIC),
    sub(
        "cluster|countkeysinslot",
        3,
        STALE,
        countkeysinslot,
        "Return the number of local keys in the specified hash slot",
    ),
    sub(
        "cluster|delslots",
        -3,
        CFG,
        delslots,
        "Set hash slots as unbound in receiving node",
    ),
    sub(
        "cluster|delslotsrange",
        -4,
        CFG,
        delslotsrange,
        "Set hash slots as unbound in receiving node",
    ),
    sub(
        "cluster|failover",
        -2,
        CFG,
        failover,
        "Forces a replica to perform a manual failover of its master.",
    ),
    sub(
        "cluster|flushslots",
        2,
        CFG,
        flushslots,
        "Delete a node's own slots information",
    ),
    sub(
        "cluster|forget",
        3,
        CFG,
        forget,
        "Remove a node from the nodes table",
    ),
    sub(
        "cluster|getkeysinslot",
        4,
        STALE,
        getkeysinslot,
        "Return local key names in the specified hash slot",
    )
    .tips(NONDETERMINISTIC),
    sub(
        "cluster|help",
        2,
        LOADING | STALE,
        help,
        "Show helpful text about the different subcommands",
    ),
    sub(
        "cluster|info",
        2,
        STALE,
        info,
        "Provides info about Redis Cluster node state",
    )
    .tips(NONDETERMINISTIC),
    sub(
        "cluster|keyslot",
        3,
        STALE,
        keyslot,
        "Returns the hash slot of the specified key",
    ),
    sub(
        "cluster|links",
        2,
        STALE,
        links,
        "Returns a list of all TCP links to and from peer nodes in cluster",
    )
    .tips(NONDETERMINISTIC),
    sub(
        "cluster|meet",
        -4,
        CFG,
        meet,
        "Force a node cluster to handshake with another node",
    ),
    sub("cluster|myid", 2, STALE, myid, "Return the node id"),
    sub(
        "cluster|nodes",
        2,
        STALE,
        nodes,
        "Get Cluster config for the node",
    )
    .tips(NONDETERMINISTIC),
    sub(
        "cluster|replicas",
        3,
        ADMIN | STALE,
        replicas,
        "List replica nodes of the specified master node",
    )
    .tips(NONDETERMINISTIC),
    sub(
        "cluster|replicate",
        3,
        CFG,
        replicate,
        "Reconfigure a node as a replica of the specified master node",
    ),
    sub(
        "cluster|reset",
        -2,
        ADMIN | STALE | NOSCRIPT,
        reset,
        "Reset a Redis Cluster node",
    ),
    sub(
        "cluster|saveconfig",
        2,
        CFG,
        saveconfig,
        "Forces the node to save cluster state on disk",
    ),
    sub(
        "cluster|set-config-epoch",
        3,
        CFG,
        set_config_epoch,
        "Set the configuration epoch in a new node",
    ),
    sub(
        "cluster|setslot",
        -4,
        CFG,
        setslot,
        "Bind a hash slot to a specific node",
    ),
    sub(
        "cluster|shards",
        2,
        STALE,
        shards,
        "Get array of cluster slots to node mappings",
    )
    .tips(NONDETERMINISTIC),
    sub(
        "cluster|slaves",
        3,
        ADMIN | STALE,
        replicas,
        "List replica nodes of the specified master node",
    )
    .tips(NONDETERMINISTIC),
    sub(
        "cluster|slots",
        2,
        STALE,
        slots,
        "Get array of Cluster slot to node mappings",
    )
    .tips(NONDETERMINISTIC),
];

/// The cluster commands.
pub static COMMANDS: &[Command] = &[
    container("cluster", acl::SLOW, CLUSTER_SUBS).doc(
        "cluster",
        "3.0.0",
        "A container for cluster commands",
        "Depends on subcommand.",
    ),
    cmd("asking", 1, FAST, (0, 0, 0), acl::CONNECTION, asking).doc(
        "cluster",
        "3.0.0",
        "Sent by cluster clients after an -ASK redirect",
        "O(1)",
    ),
    cmd("readonly", 1, FAST | LOADING | STALE, (0, 0, 0), acl::CONNECTION, readonly).doc(
        "cluster",
        "3.0.0",
        "Enables read queries for a connection to a cluster replica node",
        "O(1)",
    ),
    cmd("readwrite", 1, FAST | LOADING | STALE, (0, 0, 0), acl::CONNECTION, readwrite).doc(
        "cluster",
        "3.0.0",
        "Disables read queries for a connection to a cluster replica node",
        "O(1)",
    ),
    cmd("migrate", -6, WRITE | MOVABLE_KEYS, (3, 3, 1), acl::KEYSPACE | acl::DANGEROUS, migrate)
        .key_specs(crate::keyspecs::MIGRATE)
        .key_finder(crate::keyspecs::migrate_keys)
        .doc(
            "generic",
            "2.6.0",
            "Atomically transfer a key from a Redis instance to another one.",
            "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance.",
        )
        .tips(&["nondeterministic_output"]),
    cmd("restore-asking", -4, WRITE | DENYOOM, (1, 1, 1), acl::KEYSPACE | acl::DANGEROUS, super::persist::restore)
        .key_specs(crate::keyspecs::PSETEX)
        .behaves(super::behaviour::ASKING)
        .doc(
            "server",
            "3.0.0",
            "An internal command for migrating keys in a cluster",
            "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value.",
        ),
];

fn enabled(ctx: &mut Ctx<'_>) -> bool {
    if ctx.server.cluster.enabled {
        return true;
    }
    ctx.error(DISABLED);
    false
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A slot argument (Redis's getSlotOrReply).
fn slot_arg(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<usize> {
    match crate::util::parse_i64(a) {
        Some(s) if (0..SLOTS as i64).contains(&s) => Some(s as usize),
        _ => {
            ctx.error("ERR Invalid or out of range slot");
            None
        }
    }
}

fn help(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    super::server::reply_help(
        ctx,
        "CLUSTER",
        &[
            "ADDSLOTS <slot> [<slot> ...]",
            "    Assign slots to current node.",
            "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
            "    Assign slots which are between <start-slot> and <end-slot> to current node.",
            "BUMPEPOCH",
            "    Advance the cluster config epoch.",
            "COUNT-FAILURE-REPORTS <node-id>",
            "    Return number of failure reports for <node-id>.",
            "COUNTKEYSINSLOT <slot>",
            "    Return the number of keys in <slot>.",
            "DELSLOTS <slot> [<slot> ...]",
            "    Delete slots information from current node.",
            "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
            "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
            "FAILOVER [FORCE|TAKEOVER]",
            "    Promote current replica node to being a master.",
            "FORGET <node-id>",
            "    Remove a node from the cluster.",
            "GETKEYSINSLOT <slot> <count>",
            "    Return key names stored by current node in a slot.",
            "FLUSHSLOTS",
            "    Delete current node own slots information.",
            "INFO",
            "    Return information about the cluster.",
            "KEYSLOT <key>",
            "    Return the hash slot for <key>.",
            "MEET <ip> <port> [<bus-port>]",
            "    Connect nodes into a working cluster.",
            "MYID",
            "    Return the node id.",
            "NODES",
            "    Return cluster configuration seen by node. Output format:",
            "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
            "REPLICATE <node-id>",
            "    Configure current node as replica to <node-id>.",
            "RESET [HARD|SOFT]",
            "    Reset current node (default: soft).",
            "SET-CONFIG-EPOCH <epoch>",
            "    Set config epoch of current node.",
            "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
            "    Set slot state.",
            "REPLICAS <node-id>",
            "    Return <node-id> replicas.",
            "SAVECONFIG",
            "    Force saving cluster configuration on disk.",
            "SLOTS",
            "    Return information about slots range mappings. Each range is made of:",
            "    start, end, master and replicas IP addresses, ports and ids",
            "SHARDS",
            "    Return information about slot range mappings and the nodes associated with them.",
            "LINKS",
            "    Return information about all network links between this node and its peers.",
            "    Output format is an array where each array element is a map containing attributes of a link",
        ],
    );
}

fn info(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let text = info_text(ctx.server);
    ctx.out.verbatim(text.as_bytes());
}

/// CLUSTER INFO's text (Redis's genClusterInfoString).
pub fn info_text(server: &crate::server::Server) -> String {
    let st = server.cluster.state.lock();
    let (mut assigned, mut ok, mut pfail, mut fail) = (0, 0, 0, 0);
    for s in 0..SLOTS {
        let o = st.slots[s];
        if o == NO_NODE {
            continue;
        }
        assigned += 1;
        let n = st.node(o as usize);
        if n.failed() {
            fail += 1;
        } else if n.timed_out() {
            pfail += 1;
        } else {
            ok += 1;
        }
    }
    let me = st.myself();
    let my_epoch = if me.is_replica() {
        me.master
            .and_then(|m| st.nodes.get(m).and_then(Option::as_ref))
            .map_or(0, |m| m.config_epoch)
    } else {
        me.config_epoch
    };
    let mut t = String::new();
    let _ = write!(
        t,
        "cluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{ok}\r\ncluster_slots_pfail:{pfail}\r\ncluster_slots_fail:{fail}\r\ncluster_known_nodes:{}\r\ncluster_size:{}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{my_epoch}\r\n",
        if st.state_ok { "ok" } else { "fail" },
        st.numbers().count(),
        st.size,
        st.current_epoch,
    );
    for (dir, counts) in [("sent", &st.stats_sent), ("received", &st.stats_received)] {
        for (name, n) in cluster::TYPE_NAMES.iter().zip(counts.iter()) {
            if *n > 0 {
                let _ = write!(t, "cluster_stats_messages_{name}_{dir}:{n}\r\n");
            }
        }
        let total: u64 = counts.iter().sum();
        let _ = write!(t, "cluster_stats_messages_{dir}:{total}\r\n");
    }
    let _ = write!(
        t,
        "total_cluster_links_buffer_limit_exceeded:{}\r\n",
        st.links_buffer_limit_exceeded
    );
    t
}

fn myid(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let name = ctx.server.cluster.state.lock().myself().name.clone();
    ctx.out.bulk(name.as_bytes());
}

/// False for a plaintext client of a TLS cluster, which is given the
/// nodes' plaintext ports (Redis 7.0: `use_pport = server.tls_cluster &&
/// connGetType(c->conn) != CONN_TYPE_TLS`); true otherwise.
fn is_tls(ctx: &Ctx<'_>) -> bool {
    !ctx.server.cluster.settings.lock().tls_cluster
        || ctx
            .client
            .handle
            .tls
            .load(std::sync::atomic::Ordering::Relaxed)
}

fn nodes(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let tls = is_tls(ctx);
    let text = {
        let st = ctx.server.cluster.state.lock();
        cluster::nodes_description(&st, &ctx.server.cluster.settings(), tls, true)
    };
    ctx.out.verbatim(text.as_bytes());
}

fn keyslot(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    ctx.out.int(key_hash_slot(args.get(2)) as i64);
}

fn countkeysinslot(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let slot = match crate::util::parse_i64(args.get(2)) {
        Some(s) => s,
        None => return ctx.not_int(),
    };
    if !(0..SLOTS as i64).contains(&slot) {
        return ctx.error("ERR Invalid slot");
    }
    let n = count_keys_in_slot(ctx.server, slot as u16);
    ctx.out.int(n as i64);
}

fn getkeysinslot(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let (Some(slot), Some(max)) = (
        crate::util::parse_i64(args.get(2)),
        crate::util::parse_i64(args.get(3)),
    ) else {
        return ctx.not_int();
    };
    if max < 0 || !(0..SLOTS as i64).contains(&slot) {
        return ctx.error("ERR Invalid slot or number of keys");
    }
    let keys = keys_in_slot(ctx.server, slot as u16, max as usize);
    ctx.out.array(keys.len());
    for k in &keys {
        ctx.out.bulk(k);
    }
}

/// Parses slot arguments of ADDSLOTS/DELSLOTS (ranges when `ranges`);
/// None after replying with the error.
fn parse_slots(ctx: &mut Ctx<'_>, args: &Args<'_>, ranges: bool) -> Option<Vec<usize>> {
    let mut seen = vec![false; SLOTS];
    let mut out = Vec::new();
    if ranges {
        if args.len() % 2 == 1 {
            ctx.error(&format!(
                "ERR wrong number of arguments for '{}' command",
                lossy(&[b"cluster|", &*args.get(1).to_ascii_lowercase()].concat())
            ));
            return None;
        }
        let mut i = 2;
        let mut pairs = Vec::new();
        while i + 1 < args.len() {
            let a = slot_arg(ctx, args.get(i))?;
            let b = slot_arg(ctx, args.get(i + 1))?;
            if a > b {
                ctx.error(&format!(
                    "ERR start slot number {a} is greater than end slot number {b}"
                ));
                return None;
            }
            pairs.push((a, b));
            i += 2;
        }
        for (a, b) in pairs {
            for (s, seen) in seen.iter_mut().enumerate().take(b + 1).skip(a) {
                if *seen {
                    ctx.error(&format!("ERR Slot {s} specified multiple times"));
                    return None;
                }
                *seen = true;
                out.push(s);
            }
        }
    } else {
        let mut parsed = Vec::new();
        for i in 2..args.len() {
            parsed.push(slot_arg(ctx, args.get(i))?);
        }
        for s in parsed {
            if seen[s] {
                ctx.error(&format!("ERR Slot {s} specified multiple times"));
                return None;
            }
            seen[s] = true;
            out.push(s);
        }
    }
    Some(out)
}

fn add_or_del_slots(ctx: &mut Ctx<'_>, args: &Args<'_>, add: bool, ranges: bool) {
    if !enabled(ctx) {
        return;
    }
    let Some(slots) = parse_slots(ctx, args, ranges) else {
        return;
    };
    {
        let mut st = ctx.server.cluster.state.lock();
        for &s in &slots {
            let owner = st.slots[s];
            if add && owner != NO_NODE {
                drop(st);
                return ctx.error(&format!("ERR Slot {s} is already busy"));
            }
            if !add && owner == NO_NODE {
                drop(st);
                return ctx.error(&format!("ERR Slot {s} is already unassigned"));
            }
        }
        for s in slots {
            if add {
                if st.importing_from.contains_key(&(s as u16)) {
                    let mig = st.migrating_to.get(&(s as u16)).copied();
                    st.set_open(s, mig, None);
                }
                st.add_slot(MYSELF, s);
            } else {
                st.del_slot(s);
            }
        }
    }
    ctx.server.cluster.changed();
    ctx.out.ok();
}

fn addslots(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    add_or_del_slots(ctx, args, true, false);
}
fn addslotsrange(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    add_or_del_slots(ctx, args, true, true);
}
fn delslots(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    add_or_del_slots(ctx, args, false, false);
}
fn delslotsrange(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    add_or_del_slots(ctx, args, false, true);
}

fn flushslots(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    if !ctx.server.keyspace.db(0).is_empty() {
        return ctx.error("ERR DB must be empty to perform CLUSTER FLUSHSLOTS.");
    }
    ctx.server.cluster.state.lock().del_node_slots(MYSELF);
    ctx.server.cluster.changed();
    ctx.out.ok();
}

fn bumpepoch(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let (bumped, epoch) = {
        let mut st = ctx.server.cluster.state.lock();
        let b = st.bump_epoch_without_consensus();
        st.todo_fsync = true;
        (b, st.myself().config_epoch)
    };
    ctx.server.cluster.changed();
    ctx.out.simple(&format!(
        "{} {epoch}",
        if bumped { "BUMPED" } else { "STILL" }
    ));
}

fn set_config_epoch(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let Some(epoch) = crate::util::parse_i64(args.get(2)) else {
        return ctx.not_int();
    };
    if epoch < 0 {
        return ctx.error(&format!("ERR Invalid config epoch specified: {epoch}"));
    }
    {
        let mut st = ctx.server.cluster.state.lock();
        if st.numbers().count() > 1 {
            drop(st);
            return ctx.error(
                "ERR The user can assign a config epoch only when the node does not know any other node.",
            );
        }
        if st.myself().config_epoch != 0 {
            drop(st);
            return ctx.error("ERR Node config epoch is already non-zero");
        }
        st.myself_mut().config_epoch = epoch as u64;
        if st.current_epoch < epoch as u64 {
            st.current_epoch = epoch as u64;
        }
    }
    ctx.server.cluster.changed();
    ctx.out.ok();
}

fn count_failure_reports(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let name = lossy(args.get(2));
    let timeout = ctx.server.cluster.settings().node_timeout;
    let mut st = ctx.server.cluster.state.lock();
    match st.lookup(&name) {
        Some(n) => {
            let c = st.failure_reports(n, timeout);
            drop(st);
            ctx.out.int(c as i64);
        }
        None => {
            drop(st);
            ctx.error(&format!("ERR Unknown node {name}"));
        }
    }
}

fn meet(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    if args.len() > 5 {
        return ctx.sub_syntax(args, "CLUSTER");
    }
    let port = match crate::util::parse_i64(args.get(3)) {
        Some(p) => p,
        None => {
            return ctx.error(&format!(
                "ERR Invalid TCP base port specified: {}",
                lossy(args.get(3))
            ))
        }
    };
    let cport = if args.len() == 5 {
        match crate::util::parse_i64(args.get(4)) {
            Some(p) => p,
            None => {
                return ctx.error(&format!(
                    "ERR Invalid TCP bus port specified: {}",
                    lossy(args.get(4))
                ))
            }
        }
    } else {
        port + 10000
    };
    let ip = lossy(args.get(2));
    let ok = (0..=65535).contains(&port)
        && (0..=65535).contains(&cport)
        && bus::start_handshake(
            &mut ctx.server.cluster.state.lock(),
            &ip,
            port as u16,
            cport as u16,
        );
    if !ok {
        return ctx.error(&format!(
            "ERR Invalid node address specified: {ip}:{}",
            lossy(args.get(3))
        ));
    }
    ctx.server.cluster.changed();
    ctx.out.ok();
}

fn forget(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let name = lossy(args.get(2));
    {
        let mut st = ctx.server.cluster.state.lock();
        let Some(n) = st.lookup(&name) else {
            drop(st);
            return ctx.error(&format!("ERR Unknown node {name}"));
        };
        if n == MYSELF {
            drop(st);
            return ctx.error("ERR I tried hard but I can't forget myself...");
        }
        if st.myself().is_replica() && st.my_master() == Some(n) {
            drop(st);
            return ctx.error("ERR Can't forget my master!");
        }
        let until = cluster::now_ms() / 1000 + cluster::BLACKLIST_TTL;
        st.blacklist.insert(name, until);
        st.del_node(n);
    }
    ctx.server.cluster.changed();
    ctx.out.ok();
}

fn replicate(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let name = lossy(args.get(2));
    let n = {
        let st = ctx.server.cluster.state.lock();
        let Some(n) = st.lookup(&name) else {
            drop(st);
            return ctx.error(&format!("ERR Unknown node {name}"));
        };
        if n == MYSELF {
            drop(st);
            return ctx.error("ERR Can't replicate myself");
        }
        if st.node(n).is_replica() {
            drop(st);
            return ctx.error("ERR I can only replicate a master, not a replica.");
        }
        if st.myself().is_master()
            && (st.myself().numslots != 0 || !ctx.server.keyspace.db(0).is_empty())
        {
            drop(st);
            return ctx
                .error("ERR To set a master the node must be empty and without assigned slots.");
        }
        n
    };
    bus::replicate(ctx.server, n);
    ctx.out.ok();
}

fn replicas(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let name = lossy(args.get(2));
    let tls = is_tls(ctx);
    let lines = {
        let st = ctx.server.cluster.state.lock();
        let Some(n) = st.lookup(&name) else {
            drop(st);
            return ctx.error(&format!("ERR Unknown node {name}"));
        };
        if st.node(n).is_replica() {
            drop(st);
            return ctx.error("ERR The specified node is not a master");
        }
        st.replicas_of(n)
            .into_iter()
            .map(|r| cluster::node_description(&st, r, tls, false))
            .collect::<Vec<_>>()
    };
    ctx.out.array(lines.len());
    for l in lines {
        ctx.out.bulk(l.as_bytes());
    }
}

fn failover(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let (mut force, mut takeover) = (false, false);
    if args.len() == 3 {
        let a = args.get(2);
        if a.eq_ignore_ascii_case(b"force") {
            force = true;
        } else if a.eq_ignore_ascii_case(b"takeover") {
            takeover = true;
            force = true;
        } else {
            return ctx.syntax();
        }
    } else if args.len() > 3 {
        return ctx.sub_syntax(args, "CLUSTER");
    }
    {
        let st = ctx.server.cluster.state.lock();
        if st.myself().is_master() {
            drop(st);
            return ctx.error("ERR You should send CLUSTER FAILOVER to a replica");
        }
        let Some(m) = st
            .my_master()
            .filter(|&m| st.nodes.get(m).is_some_and(Option::is_some))
        else {
            drop(st);
            return ctx.error("ERR I'm a replica but my master is unknown to me");
        };
        let node = st.node(m);
        if !force && (node.failed() || node.link.is_none()) {
            drop(st);
            return ctx.error("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE");
        }
    }
    bus::start_manual_failover(ctx.server, force, takeover);
    ctx.out.ok();
}

fn reset(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let hard = match args.len() {
        2 => false,
        3 if args.get(2).eq_ignore_ascii_case(b"hard") => true,
        3 if args.get(2).eq_ignore_ascii_case(b"soft") => false,
        3 => return ctx.syntax(),
        _ => return ctx.sub_syntax(args, "CLUSTER"),
    };
    {
        let st = ctx.server.cluster.state.lock();
        if st.myself().is_master() && !ctx.server.keyspace.db(0).is_empty() {
            drop(st);
            return ctx
                .error("ERR CLUSTER RESET can't be called with master nodes containing keys");
        }
    }
    let was_replica = {
        let mut st = ctx.server.cluster.state.lock();
        let was_replica = st.myself().is_replica();
        if was_replica {
            st.set_node_as_master(MYSELF);
        }
        st.migrating_to.clear();
        st.importing_from.clear();
        st.del_node_slots(MYSELF);
        st.refresh_open_routes();
        for n in st.numbers().collect::<Vec<_>>() {
            if n != MYSELF {
                st.del_node(n);
            }
        }
        if hard {
            st.current_epoch = 0;
            st.last_vote_epoch = 0;
            st.myself_mut().config_epoch = 0;
            let name = cluster::random_name();
            st.rename(MYSELF, name);
        }
        let me = st.myself_mut();
        me.flags = flag::MYSELF | flag::MASTER;
        me.master = None;
        was_replica
    };
    if was_replica {
        crate::cmd::repl::replica::promote(ctx.server);
        crate::persist::rdb::empty_all(&**ctx.server);
    }
    ctx.server.cluster.changed();
    ctx.out.ok();
}

fn saveconfig(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    match ctx.server.cluster.save_config() {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.error(&format!("ERR error saving the cluster node config: {e}")),
    }
}

fn setslot(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    if ctx.server.cluster.state.lock().myself().is_replica() {
        return ctx.error("ERR Please use SETSLOT only with masters.");
    }
    let Some(slot) = slot_arg(ctx, args.get(2)) else {
        return;
    };
    let action = args.get(3).to_ascii_lowercase();
    let node_arg = (args.len() == 5).then(|| lossy(args.get(4)));
    let mut st = ctx.server.cluster.state.lock();
    let lookup = |st: &State, name: &str| st.lookup(name);
    let res: Result<bool, String> = match (action.as_slice(), node_arg.as_deref()) {
        (b"migrating", Some(name)) => {
            if st.slots[slot] != MYSELF as u32 {
                Err(format!("ERR I'm not the owner of hash slot {slot}"))
            } else {
                match lookup(&st, name) {
                    None => Err(format!("ERR I don't know about node {name}")),
                    Some(n) if st.node(n).is_replica() => {
                        Err("ERR Target node is not a master".into())
                    }
                    Some(n) => {
                        let imp = st.importing_from.get(&(slot as u16)).copied();
                        st.set_open(slot, Some(n), imp);
                        Ok(false)
                    }
                }
            }
        }
        (b"importing", Some(name)) => {
            if st.slots[slot] == MYSELF as u32 {
                Err(format!("ERR I'm already the owner of hash slot {slot}"))
            } else {
                match lookup(&st, name) {
                    None => Err(format!("ERR I don't know about node {name}")),
                    Some(n) if st.node(n).is_replica() => {
                        Err("ERR Target node is not a master".into())
                    }
                    Some(n) => {
                        let mig = st.migrating_to.get(&(slot as u16)).copied();
                        st.set_open(slot, mig, Some(n));
                        Ok(false)
                    }
                }
            }
        }
        (b"stable", None) => {
            st.set_open(slot, None, None);
            Ok(false)
        }
        (b"node", Some(name)) => match lookup(&st, name) {
            None => Err(format!("ERR Unknown node {name}")),
            Some(n) if st.node(n).is_replica() => Err("ERR Target node is not a master".into()),
            Some(n) => {
                let keys = if st.slots[slot] == MYSELF as u32 {
                    count_keys_in_slot(ctx.server, slot as u16)
                } else {
                    0
                };
                if st.slots[slot] == MYSELF as u32 && n != MYSELF && keys != 0 {
                    Err(format!(
                        "ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot."
                    ))
                } else {
                    if keys == 0 && st.migrating_to.contains_key(&(slot as u16)) {
                        let imp = st.importing_from.get(&(slot as u16)).copied();
                        st.set_open(slot, None, imp);
                    }
                    let mut bumped = false;
                    if n == MYSELF && st.importing_from.contains_key(&(slot as u16)) {
                        let mig = st.migrating_to.get(&(slot as u16)).copied();
                        st.set_open(slot, mig, None);
                        if st.bump_epoch_without_consensus() {
                            tracing::info!("configEpoch updated after importing slot");
                        }
                        bumped = true;
                    }
                    st.del_slot(slot);
                    st.add_slot(n, slot);
                    Ok(bumped)
                }
            }
        },
        _ => Err(
            "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP".into(),
        ),
    };
    drop(st);
    match res {
        Ok(broadcast) => {
            if action.as_slice() == b"node" {
                ctx.server.cluster.changed();
            } else {
                ctx.server.cluster.changed_config();
            }
            if broadcast {
                bus::broadcast_config(ctx.server);
            }
            ctx.out.ok();
        }
        Err(e) => ctx.error(&e),
    }
}

/// One node entry of CLUSTER SLOTS (Redis's addNodeToNodeReply).
fn slots_node(ctx: &mut Ctx<'_>, n: &cluster::Node, s: &cluster::Settings, tls: bool) {
    ctx.out.array(4);
    ctx.out.bulk(cluster::preferred_endpoint(n, s).as_bytes());
    ctx.out.int(cluster::node_port(n, tls) as i64);
    ctx.out.bulk(n.name.as_bytes());
    let mut extra: Vec<(&str, &str)> = Vec::new();
    if s.endpoint_type != 0 {
        extra.push(("ip", &n.ip));
    }
    if s.endpoint_type != 1 && !n.hostname.is_empty() {
        extra.push(("hostname", &n.hostname));
    }
    ctx.out.map(extra.len());
    for (k, v) in extra {
        ctx.out.bulk(k.as_bytes());
        ctx.out.bulk(v.as_bytes());
    }
}

fn slots(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let tls = is_tls(ctx);
    let s = ctx.server.cluster.settings();
    let server = ctx.server.clone();
    let st = server.cluster.state.lock();
    // Ranges in slot order (Redis 7.0's clusterReplyMultiBulkSlots).
    let mut ranges: Vec<(usize, usize, usize)> = Vec::new();
    let mut start = 0;
    for i in 0..=SLOTS {
        if i == SLOTS || st.slots[i] != st.slots[start] {
            if st.slots[start] != NO_NODE {
                ranges.push((start, i - 1, st.slots[start] as usize));
            }
            start = i;
        }
    }
    ctx.out.array(ranges.len());
    for (a, b, n) in ranges {
        let reps: Vec<usize> = st
            .replicas_of(n)
            .into_iter()
            .filter(|&r| !st.node(r).failed())
            .collect();
        ctx.out.array(3 + reps.len());
        ctx.out.int(a as i64);
        ctx.out.int(b as i64);
        slots_node(ctx, st.node(n), &s, tls);
        for r in reps {
            slots_node(ctx, st.node(r), &s, tls);
        }
    }
}

fn shards(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let s = ctx.server.cluster.settings();
    let server = ctx.server.clone();
    let st = server.cluster.state.lock();
    // One shard per master (with its replicas); replicas of unknown
    // masters form shards of their own.
    let masters: Vec<usize> = st
        .numbers()
        .filter(|&n| {
            let node = st.node(n);
            node.is_master()
                || node
                    .master
                    .is_none_or(|m| st.nodes.get(m).is_none_or(Option::is_none))
        })
        .collect();
    ctx.out.array(masters.len());
    let offset_master = server.repl.backlog.end();
    let offset_replica = server.repl.processed.load(Ordering::Acquire);
    for m in masters {
        ctx.out.map(2);
        ctx.out.bulk(b"slots");
        let ranges = cluster::slot_ranges(|x| st.node(m).has_slot(x));
        ctx.out.array(ranges.len() * 2);
        for (a, b) in ranges {
            ctx.out.int(a as i64);
            ctx.out.int(b as i64);
        }
        ctx.out.bulk(b"nodes");
        let mut members = vec![m];
        members.extend(st.replicas_of(m));
        ctx.out.array(members.len());
        for n in members {
            let node = st.node(n);
            let mut fields: Vec<(&str, FieldV)> = vec![("id", FieldV::S(node.name.clone()))];
            // Redis's addNodeDetailsToShardReply: tls-cluster tells
            // whether a node's port is its TLS port; each port present is
            // listed, whatever the client's connection.
            let (plain, tls_port) = if s.tls_cluster {
                (node.pport, node.port)
            } else {
                (node.port, 0)
            };
            if plain != 0 {
                fields.push(("port", FieldV::I(plain as i64)));
            }
            if tls_port != 0 {
                fields.push(("tls-port", FieldV::I(tls_port as i64)));
            }
            fields.push(("ip", FieldV::S(node.ip.clone())));
            fields.push((
                "endpoint",
                FieldV::S(cluster::preferred_endpoint(node, &s).to_string()),
            ));
            if !node.hostname.is_empty() {
                fields.push(("hostname", FieldV::S(node.hostname.clone())));
            }
            fields.push((
                "role",
                FieldV::S(
                    if node.is_master() {
                        "master"
                    } else {
                        "replica"
                    }
                    .into(),
                ),
            ));
            let offset = if n == MYSELF {
                if node.is_replica() {
                    offset_replica
                } else {
                    offset_master
                }
            } else {
                node.repl_offset
            };
            fields.push(("replication-offset", FieldV::I(offset as i64)));
            let health = if node.failed() {
                "fail"
            } else if node.is_replica() && node.link.is_none() && n != MYSELF {
                "loading"
            } else {
                "online"
            };
            fields.push(("health", FieldV::S(health.into())));
            ctx.out.map(fields.len());
            for (k, v) in fields {
                ctx.out.bulk(k.as_bytes());
                match v {
                    FieldV::S(s) => ctx.out.bulk(s.as_bytes()),
                    FieldV::I(i) => ctx.out.int(i),
                }
            }
        }
    }
}

enum FieldV {
    S(String),
    I(i64),
}

fn links(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    let server = ctx.server.clone();
    let st = server.cluster.state.lock();
    let mut rows = Vec::new();
    for n in st.numbers() {
        let node = st.node(n);
        for (dir, l) in [("to", &node.link), ("from", &node.inbound)] {
            if let Some(l) = l {
                rows.push((
                    dir,
                    node.name.clone(),
                    l.ctime,
                    l.pending.load(Ordering::Relaxed),
                ));
            }
        }
    }
    drop(st);
    ctx.out.array(rows.len());
    for (dir, name, ctime, pending) in rows {
        ctx.out.map(6);
        ctx.out.bulk(b"direction");
        ctx.out.bulk(dir.as_bytes());
        ctx.out.bulk(b"node");
        ctx.out.bulk(name.as_bytes());
        ctx.out.bulk(b"create-time");
        ctx.out.int(ctime as i64);
        ctx.out.bulk(b"events");
        ctx.out.bulk(if pending > 0 { b"rw" } else { b"r" });
        ctx.out.bulk(b"send-buffer-allocated");
        ctx.out.int(pending as i64);
        ctx.out.bulk(b"send-buffer-used");
        ctx.out.int(pending as i64);
    }
}

fn asking(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    ctx.client.asking = true;
    ctx.out.ok();
}

fn readonly(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    ctx.client.cluster_readonly = true;
    ctx.out.ok();
}

fn readwrite(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if !enabled(ctx) {
        return;
    }
    ctx.client.cluster_readonly = false;
    ctx.out.ok();
}

pub use super::migrate::migrate;

/// Starts cluster mode at start-up: loads or creates nodes.conf (keys
/// are already sharded by slot: Server::new). Called before the dataset is loaded.
pub fn init(server: &Arc<Server>) -> Result<(), String> {
    if !server.cluster.enabled {
        return Ok(());
    }
    let dir = std::env::current_dir().unwrap_or_default();
    {
        let mut f = server.cluster.config_file.lock();
        let p = std::path::Path::new(f.as_str());
        if p.is_relative() {
            *f = dir.join(p).display().to_string();
        }
    }
    server.cluster.load_or_create()?;
    let me = server.cluster.state.lock().my_master();
    if me.is_some() {
        server.cluster.state.lock().todo_update_state = true;
    }
    server.cluster.before_sleep();
    Ok(())
}

/// Keys of `slot` in database 0, up to `max`, expired or not (CLUSTER
/// GETKEYSINSLOT, slot cleanup). In cluster mode every key of a slot lives
/// in the shard numbered by the slot's top 8 bits
/// ([`crate::db::dict::hash_key`]), whose slot index lists them
/// (db/slotindex.rs).
pub fn keys_in_slot(server: &Server, slot: u16, max: usize) -> Vec<Vec<u8>> {
    let db = server.keyspace.db(0);
    let shard = db.shard_at((slot >> 6) as usize).lock();
    shard.keys_in_slot(slot, max).unwrap_or_default()
}

/// Number of keys in `slot` (CLUSTER COUNTKEYSINSLOT), in O(1) from the
/// slot index.
pub fn count_keys_in_slot(server: &Server, slot: u16) -> usize {
    let db = server.keyspace.db(0);
    let shard = db.shard_at((slot >> 6) as usize).lock();
    shard.count_in_slot(slot).unwrap_or(0)
}

/// Deletes every key of `slot` from database 0 (Redis's delKeysInSlot:
/// slots lost to a newer owner, CLUSTER FLUSHSLOTS-like cleanups), each
/// DEL propagated to the AOF and replicas as a unit of its own, with the
/// `del` keyspace event. Returns the number of keys deleted.
pub fn del_keys_in_slot(server: &Server, slot: u16) -> usize {
    let gate = server.tx.gate_shared();
    let prop = server.propagation.on();
    if prop {
        server.propagation.begin_background();
    }
    let mut n = 0;
    loop {
        let keys = keys_in_slot(server, slot, 128);
        if keys.is_empty() {
            break;
        }
        for key in keys {
            if prop {
                server.propagation.cut();
            }
            let h = crate::db::hash_key(&key);
            let mut sh = server.keyspace.db(0).lock(h);
            let old = sh.remove(h, &key);
            if old.is_some() && prop {
                crate::propagate::deleted(0, &key);
            }
            drop(sh);
            if old.is_some() {
                n += 1;
                server
                    .keyspace
                    .events()
                    .modified(0, &key, crate::events::GENERIC, "del");
            }
        }
    }
    if prop {
        server.propagation.cut();
        server.propagation.end_background();
    }
    drop(gate);
    n
}
