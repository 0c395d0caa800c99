//! Connection commands (redis.io/commands/?group=connection): PING, ECHO,
//! QUIT, SELECT, HELLO, AUTH, RESET and CLIENT.
//!
//! Behaviour and reply texts follow Redis 7.0 (checked against
//! redis-server 7.0.15). AUTH and HELLO AUTH check credentials against the
//! ACL users (`crate::acl`); `requirepass` is the default user's password.
//! CLIENT SETINFO and CLIENT NO-TOUCH (7.2) and the CLIENT KILL MAXAGE
//! filter (7.4) are accepted as extensions because current clients send
//! them.

use super::behaviour;
use super::{acl, cmd, container, err, flags::*, Command, Ctx};
use crate::clients::{ClientHandle, LiveFields};
use crate::cmd::client::ReplyMode;
use crate::resp::Args;
use std::sync::atomic::Ordering;

/// Flags shared by HELLO, AUTH and RESET (Redis 7.0's COMMAND INFO).
const AUTH_FLAGS: u64 = NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY;
/// Flags of most CLIENT subcommands.
const CLIENT_FLAGS: u64 = NOSCRIPT | LOADING | STALE;
/// Flags of the administrative CLIENT subcommands.
const CLIENT_ADMIN: u64 = ADMIN | NOSCRIPT | LOADING | STALE;

/// A CLIENT subcommand: [`sub`], keeping a CLIENT CACHING choice.
const fn csub(name: &'static str, arity: i32, flags: u64, handler: super::Handler) -> Command {
    sub(name, arity, flags, handler).behaves(super::behaviour::KEEPS_CACHING)
}

const fn sub(name: &'static str, arity: i32, flags: u64, handler: super::Handler) -> Command {
    cmd(name, arity, flags, (0, 0, 0), acl::CONNECTION, handler)
}

/// CLIENT subcommands.
static CLIENT_SUBS: &[Command] = &[
    csub("client|id", 2, CLIENT_FLAGS, client_id).doc(
        "connection",
        "5.0.0",
        "Returns the client ID for the current connection",
        "O(1)",
    ),
    csub("client|setname", 3, CLIENT_FLAGS, client_setname).doc(
        "connection",
        "2.6.9",
        "Set the current connection name",
        "O(1)",
    ),
    csub("client|getname", 2, CLIENT_FLAGS, client_getname).doc(
        "connection",
        "2.6.9",
        "Get the current connection name",
        "O(1)",
    ),
    csub("client|list", -2, CLIENT_ADMIN, client_list)
        .doc(
            "connection",
            "2.4.0",
            "Get the list of client connections",
            "O(N) where N is the number of client connections",
        )
        .tips(&["nondeterministic_output"]),
    csub("client|info", 2, CLIENT_FLAGS, client_info)
        .doc(
            "connection",
            "6.2.0",
            "Returns information about the current client connection.",
            "O(1)",
        )
        .tips(&["nondeterministic_output"]),
    csub("client|kill", -3, CLIENT_ADMIN, client_kill).doc(
        "connection",
        "2.4.0",
        "Kill the connection of a client",
        "O(N) where N is the number of client connections",
    ),
    csub("client|setinfo", 4, CLIENT_FLAGS, client_setinfo)
        .doc(
            "connection",
            "7.2.0",
            "Set client or connection specific info",
            "O(1)",
        )
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"]),
    csub("client|reply", 3, CLIENT_FLAGS, client_reply).doc(
        "connection",
        "3.2.0",
        "Instruct the server whether to reply to commands",
        "O(1)",
    ),
    csub("client|no-evict", 3, CLIENT_ADMIN, client_no_evict).doc(
        "connection",
        "7.0.0",
        "Set client eviction mode for the current connection",
        "O(1)",
    ),
    csub("client|no-touch", 3, CLIENT_FLAGS, client_no_touch).doc(
        "connection",
        "7.2.0",
        "Controls whether commands sent by the client will alter the LRU/LFU of the keys they access.",
        "O(1)",
    ),
    csub("client|pause", -3, CLIENT_ADMIN, client_pause).doc(
        "connection",
        "3.0.0",
        "Stop processing commands from clients for some time",
        "O(1)",
    ),
    csub("client|unpause", 2, CLIENT_ADMIN, client_unpause).doc(
        "connection",
        "6.2.0",
        "Resume processing of clients that were paused",
        "O(N) Where N is the number of paused clients",
    ),
    csub("client|unblock", -3, CLIENT_ADMIN, client_unblock).doc(
        "connection",
        "5.0.0",
        "Unblock a client blocked in a blocking command from a different connection",
        "O(log N) where N is the number of client connections",
    ),
    csub("client|tracking", -3, CLIENT_FLAGS, client_tracking).doc(
        "connection",
        "6.0.0",
        "Enable or disable server assisted client side caching support",
        "O(1). Some options may introduce additional complexity.",
    ),
    csub("client|caching", 3, CLIENT_FLAGS, client_caching).doc(
        "connection",
        "6.0.0",
        "Instruct the server about tracking or not keys in the next request",
        "O(1)",
    ),
    csub("client|getredir", 2, CLIENT_FLAGS, client_getredir).doc(
        "connection",
        "6.0.0",
        "Get tracking notifications redirection client ID if any",
        "O(1)",
    ),
    csub("client|trackinginfo", 2, CLIENT_FLAGS, client_trackinginfo).doc(
        "connection",
        "6.2.0",
        "Return information about server assisted client side caching for the current connection",
        "O(1)",
    ),
    csub("client|help", 2, LOADING | STALE, client_help).doc(
        "connection",
        "5.0.0",
        "Show helpful text about the different subcommands",
        "O(1)",
    ),
];

/// The connection family's table entries.
pub static COMMANDS: &[Command] = &[
    cmd("ping", -1, FAST, (0, 0, 0), acl::CONNECTION, ping)
        .behaves(behaviour::SUBSCRIBED_OK | behaviour::MISCONF_REFUSED)
        .doc("connection", "1.0.0", "Ping the server", "O(1)")
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd(
        "echo",
        2,
        LOADING | STALE | FAST,
        (0, 0, 0),
        acl::CONNECTION,
        echo,
    )
    .doc("connection", "1.0.0", "Echo the given string", "O(1)"),
    cmd(
        "quit",
        -1,
        ALLOW_BUSY | NOSCRIPT | NO_AUTH | LOADING | STALE | FAST,
        (0, 0, 0),
        acl::CONNECTION,
        quit,
    )
    .behaves(behaviour::TX_CONTROL | behaviour::SUBSCRIBED_OK)
    .doc("connection", "1.0.0", "Close the connection", "O(1)"),
    cmd(
        "select",
        2,
        LOADING | STALE | FAST,
        (0, 0, 0),
        acl::CONNECTION,
        select,
    )
    .doc(
        "connection",
        "2.0.0",
        "Change the selected database for the current connection",
        "O(1)",
    ),
    cmd("hello", -1, AUTH_FLAGS, (0, 0, 0), acl::CONNECTION, hello).doc(
        "connection",
        "6.0.0",
        "Handshake with Redis",
        "O(1)",
    ),
    cmd("auth", -2, AUTH_FLAGS, (0, 0, 0), acl::CONNECTION, auth).doc(
        "connection",
        "1.0.0",
        "Authenticate to the server",
        "O(N) where N is the number of passwords defined for the user",
    ),
    cmd("reset", 1, AUTH_FLAGS, (0, 0, 0), acl::CONNECTION, reset)
        .behaves(behaviour::TX_CONTROL | behaviour::SUBSCRIBED_OK)
        .doc("connection", "6.2.0", "Reset the connection", "O(1)"),
    container("client", acl::SLOW, CLIENT_SUBS).doc(
        "connection",
        "2.4.0",
        "A container for client connection commands",
        "Depends on subcommand.",
    ),
];

/// PING [message]: +PONG, or the message as a bulk string.
fn ping(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if ctx.client.pubsub.is_some() && !ctx.out.resp3 && args.len() <= 2 {
        // RESP2 subscribed mode: [pong, message or ""] (Redis's pingCommand).
        ctx.out.array(2);
        ctx.out.bulk(b"pong");
        ctx.out
            .bulk(if args.len() == 2 { args.get(1) } else { b"" });
        return;
    }
    match args.len() {
        1 => ctx.out.simple("PONG"),
        2 => ctx.out.bulk(args.get(1)),
        _ => ctx.error("ERR wrong number of arguments for 'ping' command"),
    }
}

/// ECHO message.
fn echo(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    ctx.out.bulk(args.get(1));
}

/// QUIT: +OK, then the connection closes.
fn quit(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    ctx.out.ok();
    ctx.client.close_after_reply = true;
}

/// SELECT index.
fn select(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(i) = crate::util::parse_i64(args.get(1)) else {
        return ctx.not_int();
    };
    // getIntFromObjectOrReply: a 64-bit value outside int range.
    if i32::try_from(i).is_err() {
        return ctx.error(super::keys::INT_RANGE);
    }
    if ctx.server.cluster.enabled && i != 0 {
        return ctx.error("ERR SELECT is not allowed in cluster mode");
    }
    if i < 0 || i as usize >= ctx.server.keyspace.db_count() {
        return ctx.error(err::DB_RANGE);
    }
    ctx.client.db = i as usize;
    ctx.out.ok();
}

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// Authenticates the connection as `user` with `pass` (Redis's
/// `ACLAuthenticateUser`): on success the connection's user changes; on
/// failure the attempt is logged in ACL LOG (reason auth, object = the
/// command word as sent) and false is returned.
fn authenticate(ctx: &mut Ctx<'_>, args: &Args<'_>, user: &[u8], pass: &[u8]) -> bool {
    match ctx.server.acl.authenticate(user, pass) {
        Some(u) => {
            ctx.client.authenticated = true;
            ctx.client.acl.set_user(&u.name);
            ctx.client.handle.info.lock().user = String::from_utf8_lossy(&u.name).into_owned();
            true
        }
        None => {
            let c = super::table().all.get(ctx.client.last_cmd).copied();
            if let Some(c) = c {
                super::log_acl_denial(
                    ctx.server,
                    ctx.client,
                    c,
                    "auth",
                    args.get(0).to_vec(),
                    user.to_vec(),
                );
            }
            false
        }
    }
}

/// AUTH [username] password.
fn auth(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if args.len() > 3 {
        return ctx.syntax();
    }
    let (user, pass): (&[u8], &[u8]) = if args.len() == 2 {
        if ctx.server.acl.default_user().nopass {
            return ctx.error(
                "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
            );
        }
        (b"default", args.get(1))
    } else {
        (args.get(1), args.get(2))
    };
    if authenticate(ctx, args, user, pass) {
        ctx.out.ok();
    } else {
        ctx.error(WRONGPASS);
    }
}

/// Redis's rule for client names and SETINFO values: printable ASCII
/// without spaces ('!'..='~').
fn valid_attr(s: &[u8]) -> bool {
    s.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

/// Sets the connection name, or replies with Redis's error and returns false.
fn set_name(ctx: &mut Ctx<'_>, name: &[u8]) -> bool {
    if !valid_attr(name) {
        ctx.error("ERR Client names cannot contain spaces, newlines or special characters.");
        return false;
    }
    let mut i = ctx.client.handle.info.lock();
    i.name.clear();
    i.name.extend_from_slice(name);
    true
}

/// HELLO [protover [AUTH username password] [SETNAME clientname]].
fn hello(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let mut ver = 0;
    let mut next = 1;
    if args.len() >= 2 {
        match crate::util::parse_i64(args.get(1)) {
            Some(v) => ver = v,
            None => return ctx.error("ERR Protocol version is not an integer or out of range"),
        }
        if !(2..=3).contains(&ver) {
            return ctx.error("NOPROTO unsupported protocol version");
        }
        next = 2;
    }
    let mut creds = None;
    let mut name = None;
    let mut j = next;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let opt = args.get(j);
        if opt.eq_ignore_ascii_case(b"AUTH") && more >= 2 {
            creds = Some((args.get(j + 1), args.get(j + 2)));
            j += 3;
        } else if opt.eq_ignore_ascii_case(b"SETNAME") && more >= 1 {
            name = Some(args.get(j + 1));
            j += 2;
        } else {
            return ctx.error_with("ERR Syntax error in HELLO option '", opt, "'");
        }
    }
    if let Some((user, pass)) = creds {
        if !authenticate(ctx, args, user, pass) {
            return ctx.error(WRONGPASS);
        }
    }
    if !ctx.client.authenticated && ctx.server.acl.auth_required.load(Ordering::Relaxed) {
        return ctx.error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        );
    }
    if let Some(n) = name {
        if !set_name(ctx, n) {
            return;
        }
    }
    if ver != 0 {
        ctx.out.resp3 = ver == 3;
        ctx.client.handle.info.lock().resp = ver as u8;
    }
    let proto = if ctx.out.resp3 { 3 } else { 2 };
    ctx.out.map(7);
    ctx.out.bulk(b"server");
    let name = ctx.server.config.read().get("hello-server-name").to_owned();
    ctx.out.bulk(name.as_bytes());
    ctx.out.bulk(b"version");
    ctx.out.bulk(crate::REDIS_VERSION.as_bytes());
    ctx.out.bulk(b"proto");
    ctx.out.int(proto);
    ctx.out.bulk(b"id");
    ctx.out.int(ctx.client.handle.id as i64);
    ctx.out.bulk(b"mode");
    ctx.out.bulk(b"standalone");
    ctx.out.bulk(b"role");
    ctx.out.bulk(if ctx.server.repl.is_replica() {
        b"replica".as_slice()
    } else {
        b"master"
    });
    ctx.out.bulk(b"modules");
    ctx.out.array(0);
}

/// RESET: back to a fresh connection's state (RESP2, db 0, replies on, no
/// name, NO-EVICT/NO-TOUCH off, out of MONITOR, not authenticated when a
/// password is required), replying +RESET. Families with per-connection
/// state (MULTI, pub/sub, tracking) clear it here as they are added.
fn reset(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    let server = ctx.server;
    ctx.client.leave_monitor(server);
    ctx.client.multi = None;
    crate::tx::unwatch_all(&ctx.server.tx_env(), &mut ctx.client.watch);
    crate::pubsub::unsubscribe_all(
        &server.pubsub_env(),
        &ctx.client.handle,
        &mut ctx.client.pubsub,
    );
    crate::tracking::disable(
        &server.tracking_env(),
        &ctx.client.handle,
        &mut ctx.client.tracking,
    );
    ctx.client.db = 0;
    ctx.client.reply_mode = ReplyMode::On;
    ctx.client.no_touch = false;
    ctx.client.authenticated = !server.acl.auth_required.load(Ordering::Relaxed);
    ctx.client.acl.set_user(b"default");
    ctx.out.resp3 = false;
    {
        let mut i = ctx.client.handle.info.lock();
        i.resp = 2;
        i.name.clear();
        i.no_evict = false;
        i.no_touch = false;
        i.db = 0;
        i.user.clear();
    }
    ctx.out.simple("RESET");
}

/// CLIENT UNBLOCK client-id [TIMEOUT|ERROR]: wakes a client blocked on
/// keys (BLPOP...) as if its timeout expired (TIMEOUT, the default) or with
/// "-UNBLOCKED client unblocked via CLIENT UNBLOCK" (ERROR). :1 when the
/// client was blocked, else :0. Errors as Redis 7.0's clientCommand: a
/// non-integer id is "value is not an integer or out of range", another
/// reason "CLIENT UNBLOCK reason should be TIMEOUT or ERROR", checked in
/// Redis's order: the argument count, the reason, then the id.
fn client_unblock(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let error = if args.len() == 4 {
        let r = args.get(3);
        if r.eq_ignore_ascii_case(b"timeout") {
            false
        } else if r.eq_ignore_ascii_case(b"error") {
            true
        } else {
            return ctx.error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
        }
    } else if args.len() == 3 {
        false
    } else {
        // The subcommand as the client spelled it, as Redis's
        // addReplySubcommandSyntaxError does.
        return ctx.sub_syntax(args, "CLIENT");
    };
    let Some(id) = super::arg_i64(ctx, args.get(2)) else {
        return;
    };
    let target = u64::try_from(id)
        .ok()
        .and_then(|id| ctx.server.clients.get(id));
    let waiter = target.and_then(|h| h.blocked.lock().clone());
    match waiter {
        Some(w) if w.claim() => {
            use crate::db::blocking::Wake;
            if let Some(note) = w.take_note() {
                super::slowlog_unblocked(ctx.server, note);
            }
            w.wake(if error { Wake::Error } else { Wake::Timeout });
            ctx.out.int(1);
        }
        _ => ctx.out.int(0),
    }
}

/// CLIENT TRACKING on|off [REDIRECT id] [BCAST] [PREFIX p]... [OPTIN]
/// [OPTOUT] [NOLOOP]: +OK or Redis 7.0's errors (tracking.rs).
fn client_tracking(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let v: Vec<&[u8]> = (0..args.len()).map(|i| args.get(i)).collect();
    match crate::tracking::client_tracking(
        &ctx.server.tracking_env(),
        &ctx.client.handle,
        &mut ctx.client.tracking,
        &v,
    ) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.error(&e),
    }
}

/// CLIENT CACHING yes|no: tracks (OPTIN) or skips (OPTOUT) the keys of the
/// next command (or transaction).
fn client_caching(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    match crate::tracking::client_caching(&ctx.client.handle, args.get(2)) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.error(&e),
    }
}

/// CLIENT GETREDIR: the redirect client id, 0 without redirect, -1 when
/// tracking is off.
fn client_getredir(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    let r = crate::tracking::getredir(&ctx.client.handle);
    ctx.out.int(r);
}

/// CLIENT TRACKINGINFO: a map of `flags` (a set of words), `redirect` (-1
/// off, 0 none, else the id) and `prefixes` (BCAST prefixes, sorted).
fn client_trackinginfo(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    let h = ctx.client.handle.clone();
    let flags = h.tracking.info_flags();
    let out = &mut *ctx.out;
    out.map(3);
    out.bulk(b"flags");
    out.set(flags.len());
    for f in &flags {
        out.bulk(f.as_bytes());
    }
    out.bulk(b"redirect");
    out.int(crate::tracking::getredir(&ctx.client.handle));
    out.bulk(b"prefixes");
    let prefixes = h.tracking.prefixes.lock().clone();
    out.array(prefixes.len());
    for p in &prefixes {
        out.bulk(p);
    }
}

/// CLIENT ID.
fn client_id(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    ctx.out.int(ctx.client.handle.id as i64);
}

/// CLIENT SETNAME name (an empty name removes it).
fn client_setname(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if set_name(ctx, args.get(2)) {
        ctx.out.ok();
    }
}

/// CLIENT GETNAME: the name or null.
fn client_getname(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    let name = ctx.client.handle.info.lock().name.clone();
    if name.is_empty() {
        ctx.out.null();
    } else {
        ctx.out.bulk(&name);
    }
}

/// Client types of CLIENT LIST TYPE / CLIENT KILL TYPE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientType {
    Normal,
    Replica,
    Master,
    PubSub,
}

/// Redis's `getClientTypeByName` (case-insensitive; "slave" = "replica").
fn client_type_by_name(s: &[u8]) -> Option<ClientType> {
    let s = s.to_ascii_lowercase();
    match s.as_slice() {
        b"normal" => Some(ClientType::Normal),
        b"slave" | b"replica" => Some(ClientType::Replica),
        b"master" => Some(ClientType::Master),
        b"pubsub" => Some(ClientType::PubSub),
        _ => None,
    }
}

/// A client's type (Redis's getClientType): a replica's connection
/// (flag S), the master of a replica's link (M), a subscriber (P), else
/// normal; MONITOR clients count as normal, as in Redis.
fn client_type(h: &ClientHandle) -> ClientType {
    let i = h.info.lock();
    if i.flags.contains('M') {
        ClientType::Master
    } else if i.flags.contains('S') {
        ClientType::Replica
    } else if i.flags.contains('P') {
        ClientType::PubSub
    } else {
        ClientType::Normal
    }
}

fn unknown_type(ctx: &mut Ctx<'_>, t: &[u8]) {
    ctx.error_with("ERR Unknown client type '", t, "'");
}

/// Brings the calling client's shared info up to date, so that its own
/// CLIENT LIST / INFO line shows this command and its current state.
fn sync_self(ctx: &mut Ctx<'_>) {
    // Inside a transaction the command shown is EXEC (Redis's lastcmd).
    let name = if super::tx::in_exec() {
        "exec"
    } else {
        super::table()
            .all
            .get(ctx.client.last_cmd)
            .map(|c| c.name)
            .unwrap_or("")
    };
    let mut i = ctx.client.handle.info.lock();
    i.db = ctx.client.db;
    i.resp = if ctx.out.resp3 { 3 } else { 2 };
    if i.last_cmd != name {
        i.last_cmd.clear();
        i.last_cmd.push_str(name);
    }
}

/// The calling client's own CLIENT LIST fields as they are while this
/// command runs (see [`LiveFields`]).
fn live_fields(ctx: &Ctx<'_>, args: &Args<'_>) -> LiveFields {
    let (qbuf, qbuf_free) = ctx.client.qbuf;
    // Inside EXEC, Redis still has the transaction's state and EXEC's own
    // arguments ("exec", 4 bytes).
    let (argv_mem, multi, multi_mem) = match super::tx::exec_shape() {
        Some((n, mem)) => (4, Some(n), mem),
        None => (
            super::args_mem(args),
            ctx.client.multi.as_ref().map(|m| m.queued.len()),
            ctx.client.multi.as_ref().map_or(0, |m| m.argv_mem),
        ),
    };
    LiveFields {
        qbuf,
        qbuf_free,
        argv_mem,
        multi,
        multi_mem,
        obl: ctx.out.buf.len(),
        rbs: ctx.client.rbs.max(ctx.out.buf.capacity()),
    }
}

/// CLIENT LIST [TYPE type] | [ID id [id ...]].
fn client_list(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    sync_self(ctx);
    let now = ctx.now;
    let live = live_fields(ctx, args);
    let me = ctx.client.handle.id;
    let describe = |h: &ClientHandle| h.describe_with(now, (h.id == me).then_some(&live));
    let mut out = String::new();
    let live = |h: &ClientHandle| !h.killed.load(Ordering::Relaxed);
    if args.len() == 4 && args.get(2).eq_ignore_ascii_case(b"type") {
        let Some(t) = client_type_by_name(args.get(3)) else {
            return unknown_type(ctx, args.get(3));
        };
        for h in ctx.server.clients.all() {
            if live(&h) && client_type(&h) == t {
                out.push_str(&describe(&h));
                out.push('\n');
            }
        }
    } else if args.len() > 3 && args.get(2).eq_ignore_ascii_case(b"id") {
        let mut ids = Vec::with_capacity(args.len() - 3);
        for i in 3..args.len() {
            match crate::util::parse_i64(args.get(i)) {
                Some(id) => ids.push(id),
                None => return ctx.error("ERR Invalid client ID"),
            }
        }
        for id in ids {
            if id <= 0 {
                continue;
            }
            if let Some(h) = ctx.server.clients.get(id as u64).filter(|h| live(h)) {
                out.push_str(&describe(&h));
                out.push('\n');
            }
        }
    } else if args.len() != 2 {
        return ctx.syntax();
    } else {
        for h in ctx.server.clients.all() {
            if live(&h) {
                out.push_str(&describe(&h));
                out.push('\n');
            }
        }
    }
    ctx.out.verbatim(out.as_bytes());
}

/// CLIENT INFO: this connection's CLIENT LIST line.
fn client_info(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    sync_self(ctx);
    let live = live_fields(ctx, args);
    let mut line = ctx.client.handle.describe_with(ctx.now, Some(&live));
    line.push('\n');
    ctx.out.verbatim(line.as_bytes());
}

/// CLIENT KILL ip:port | CLIENT KILL <filter> <value> [...].
///
/// Filters: ID, ADDR, LADDR, TYPE, USER, SKIPME yes|no, and MAXAGE seconds
/// (Redis 7.4; Redis 7.0 answers it with a syntax error).
fn client_kill(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let mut addr: Option<&[u8]> = None;
    let mut laddr: Option<&[u8]> = None;
    let mut ctype = None;
    let mut id: u64 = 0;
    let mut maxage: Option<u64> = None;
    let old_form = args.len() == 3;
    let mut skipme = true;
    let mut user: Option<String> = None;
    if old_form {
        addr = Some(args.get(2));
        skipme = false;
    } else {
        let mut i = 2;
        while i < args.len() {
            let opt = args.get(i);
            if i + 1 >= args.len() {
                return ctx.syntax();
            }
            let val = args.get(i + 1);
            if opt.eq_ignore_ascii_case(b"id") {
                match crate::util::parse_i64(val) {
                    Some(v) if v >= 1 => id = v as u64,
                    _ => return ctx.error("ERR client-id should be greater than 0"),
                }
            } else if opt.eq_ignore_ascii_case(b"type") {
                match client_type_by_name(val) {
                    Some(t) => ctype = Some(t),
                    None => return unknown_type(ctx, val),
                }
            } else if opt.eq_ignore_ascii_case(b"addr") {
                addr = Some(val);
            } else if opt.eq_ignore_ascii_case(b"laddr") {
                laddr = Some(val);
            } else if opt.eq_ignore_ascii_case(b"user") {
                if ctx.server.acl.get(val).is_none() {
                    return ctx.error_with("ERR No such user '", val, "'");
                }
                user = Some(String::from_utf8_lossy(val).into_owned());
            } else if opt.eq_ignore_ascii_case(b"skipme") {
                if val.eq_ignore_ascii_case(b"yes") {
                    skipme = true;
                } else if val.eq_ignore_ascii_case(b"no") {
                    skipme = false;
                } else {
                    return ctx.syntax();
                }
            } else if opt.eq_ignore_ascii_case(b"maxage") {
                match crate::util::parse_i64(val) {
                    Some(v) if v >= 0 => maxage = Some(v as u64),
                    _ => return ctx.not_int(),
                }
            } else {
                return ctx.syntax();
            }
            i += 2;
        }
    }
    let me = ctx.client.handle.id;
    let now = ctx.now;
    let mut killed = 0i64;
    let mut kill_self = false;
    for h in ctx.server.clients.all() {
        if h.killed.load(Ordering::Relaxed) {
            continue;
        }
        if addr.is_some_and(|a| a != h.addr.as_bytes())
            || laddr.is_some_and(|a| a != h.laddr.as_bytes())
            || ctype.is_some_and(|t| client_type(&h) != t)
            || (id != 0 && h.id != id)
            || user.as_ref().is_some_and(|u| {
                let i = h.info.lock();
                let name = if i.user.is_empty() {
                    "default"
                } else {
                    i.user.as_str()
                };
                name != u
            })
            || maxage.is_some_and(|m| now.saturating_sub(h.created_ms) / 1000 < m)
            || (skipme && h.id == me)
        {
            continue;
        }
        if h.id == me {
            kill_self = true;
        } else {
            h.kill();
        }
        killed += 1;
    }
    if old_form {
        if killed == 0 {
            return ctx.error("ERR No such client");
        }
        ctx.out.ok();
    } else {
        ctx.out.int(killed);
    }
    if kill_self {
        ctx.client.close_after_reply = true;
    }
}

/// CLIENT SETINFO LIB-NAME|LIB-VER value (Redis 7.2).
fn client_setinfo(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let attr = args.get(2);
    let val = args.get(3);
    let lib_name = attr.eq_ignore_ascii_case(b"lib-name");
    if !lib_name && !attr.eq_ignore_ascii_case(b"lib-ver") {
        return ctx.error_with("ERR Unrecognized option '", attr, "'");
    }
    if !valid_attr(val) {
        let msg = format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            String::from_utf8_lossy(attr)
        );
        return ctx.error(&msg);
    }
    {
        let mut i = ctx.client.handle.info.lock();
        let dest = if lib_name {
            &mut i.lib_name
        } else {
            &mut i.lib_ver
        };
        dest.clear();
        dest.extend_from_slice(val);
    }
    ctx.out.ok();
}

/// CLIENT REPLY ON|OFF|SKIP. OFF and SKIP send no reply themselves.
fn client_reply(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let mode = args.get(2);
    if mode.eq_ignore_ascii_case(b"on") {
        ctx.client.reply_mode = ReplyMode::On;
        ctx.out.ok();
    } else if mode.eq_ignore_ascii_case(b"off") {
        ctx.client.reply_mode = ReplyMode::Off;
    } else if mode.eq_ignore_ascii_case(b"skip") {
        if ctx.client.reply_mode != ReplyMode::Off {
            ctx.client.reply_mode = ReplyMode::SkipNext;
        }
    } else {
        ctx.syntax();
    }
}

/// Parses ON|OFF (case-insensitive) or replies with a syntax error.
fn on_off(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<bool> {
    if a.eq_ignore_ascii_case(b"on") {
        Some(true)
    } else if a.eq_ignore_ascii_case(b"off") {
        Some(false)
    } else {
        ctx.syntax();
        None
    }
}

/// CLIENT NO-EVICT ON|OFF.
fn client_no_evict(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if let Some(on) = on_off(ctx, args.get(2)) {
        ctx.client.handle.info.lock().no_evict = on;
        if !on {
            // The client may now be the one to evict.
            ctx.server.clients.evict();
        }
        ctx.out.ok();
    }
}

/// CLIENT PAUSE timeout [WRITE|ALL]: holds back every command (ALL, the
/// default) or the writing ones (WRITE) of every client but replicas for
/// `timeout` milliseconds (see pause.rs). Errors in Redis 7.0's order:
/// more than four arguments ("unknown subcommand or wrong number of
/// arguments"), "CLIENT PAUSE mode must be WRITE or ALL", "timeout is not
/// an integer or out of range", "timeout is negative".
fn client_pause(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if args.len() > 4 {
        return ctx.sub_syntax(args, "CLIENT");
    }
    let mut kind = crate::pause::ALL;
    if args.len() == 4 {
        let m = args.get(3);
        if super::opt_is(m, b"write") {
            kind = crate::pause::WRITE;
        } else if !super::opt_is(m, b"all") {
            return ctx.error("ERR CLIENT PAUSE mode must be WRITE or ALL");
        }
    }
    let Some(ms) = crate::util::parse_i64(args.get(2)) else {
        return ctx.error("ERR timeout is not an integer or out of range");
    };
    if ms < 0 {
        return ctx.error("ERR timeout is negative");
    }
    // Redis adds the current time without an overflow check: a huge
    // timeout wraps into the past, a pause already over.
    let end = if ms > 0 {
        (ms as u64).wrapping_add(ctx.server.clock.now_ms()) as i64
    } else {
        0
    };
    if end > 0 {
        ctx.server.pause.pause(
            crate::pause::BY_CLIENT,
            kind,
            end as u64,
            ctx.server.clock.now_ms(),
        );
    }
    ctx.out.ok();
}

/// CLIENT UNPAUSE: ends a CLIENT PAUSE; the postponed commands run.
fn client_unpause(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    ctx.server.pause.unpause(crate::pause::BY_CLIENT);
    ctx.out.ok();
}

/// CLIENT NO-TOUCH ON|OFF (Redis 7.2).
fn client_no_touch(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if let Some(on) = on_off(ctx, args.get(2)) {
        ctx.client.no_touch = on;
        ctx.client.handle.info.lock().no_touch = on;
        ctx.out.ok();
    }
}

/// CLIENT HELP lines: Redis 7.0's text for the subcommands implemented
/// here, plus the 7.2 lines for SETINFO and NO-TOUCH.
const CLIENT_HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id>",
    "      Kill connections by client id.",
    "    * MAXAGE <maxage>",
    "      Kill connections older than the specified age.",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "SETINFO <option> <value>",
    "    Set client meta attr. Options are:",
    "    * LIB-NAME: the client lib name.",
    "    * LIB-VER: the client lib version.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "NO-TOUCH (ON|OFF)",
    "    Will not touch LRU/LFU stats when this mode is on.",
    "HELP",
    "    Prints this help.",
];

/// CLIENT HELP.
fn client_help(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    ctx.out.array(CLIENT_HELP.len());
    for l in CLIENT_HELP {
        ctx.out.simple(l);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_compare() {
        use crate::util::constant_time_eq;
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret1"));
        assert!(!constant_time_eq(b"", b"x"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn attr_validation() {
        assert!(valid_attr(b"abc-1.2"));
        assert!(valid_attr(b""));
        assert!(!valid_attr(b"a b"));
        assert!(!valid_attr(b"a\nb"));
        assert!(!valid_attr("é".as_bytes()));
    }
}
