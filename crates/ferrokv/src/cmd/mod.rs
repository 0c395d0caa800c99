//! The command table and dispatch.
//!
//! Every command family (one file each: `strings`, `keys`, `connection`;
//! the server commands are a folder, `server/`, of one file per seam:
//! `config`, `command`, `info`, `debug`, `introspection`, `shutdown`)
//! declares its commands in a `COMMANDS` table next to their
//! handlers: name, arity, flags, first/last/step key positions, ACL
//! categories, documentation and, for container commands such as CONFIG or
//! CLIENT, subcommands. [`table`] gathers them once at start-up; [`execute`]
//! looks a request's command up (ASCII case-insensitive, no allocation),
//! checks arity and authentication, runs the handler and records statistics,
//! slow log and MONITOR output. Arity and flag facts follow Redis 7.0's
//! command documentation (redis.io/commands); the table is ours.

pub mod acl_cmd;
pub mod bitops;
pub mod cas;
pub mod client;
pub mod cluster;
pub mod connection;
pub mod geo;
pub mod hash_ttl;
pub mod hashes;
pub mod hll;
pub mod keys;
pub use crate::keyspecs;
pub mod lists;
pub mod memcache;
pub mod migrate;
pub mod persist;
pub mod pubsub;
pub mod repl;
pub mod replay;
pub mod scripting;
pub mod server;
pub mod sets;
pub mod sort;
pub mod stream;
pub mod streams;
pub mod strings;
pub mod tx;
pub mod zsets;

use crate::cmd::client::Client;
use crate::db::{hash_key, Db, Shard};
use crate::resp::{Args, Out};
use crate::server::{Server, SlowlogEntry};
use crate::stats::{bump, ThreadStats};
use parking_lot::MutexGuard;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

/// A command handler: reads `args` (argv[0] is the command name) and writes
/// exactly one reply into `ctx.out` (through `ctx` for errors).
pub type Handler = fn(&mut Ctx<'_>, &Args<'_>);

/// Command flags (COMMAND INFO's flag names, Redis's CMD_* constants).
pub mod flags {
    /// Modifies the keyspace.
    pub const WRITE: u64 = 1 << 0;
    /// Only reads.
    pub const READONLY: u64 = 1 << 1;
    /// May grow memory: refused when over maxmemory.
    pub const DENYOOM: u64 = 1 << 2;
    /// Administrative.
    pub const ADMIN: u64 = 1 << 3;
    /// Pub/Sub.
    pub const PUBSUB: u64 = 1 << 4;
    /// Not allowed in scripts.
    pub const NOSCRIPT: u64 = 1 << 5;
    /// May block the client.
    pub const BLOCKING: u64 = 1 << 6;
    /// Allowed while loading the dataset.
    pub const LOADING: u64 = 1 << 7;
    /// Allowed on a replica with stale data.
    pub const STALE: u64 = 1 << 8;
    /// Not shown to MONITOR.
    pub const SKIP_MONITOR: u64 = 1 << 9;
    /// Not recorded in the slow log.
    pub const SKIP_SLOWLOG: u64 = 1 << 10;
    /// O(1) or O(log N).
    pub const FAST: u64 = 1 << 11;
    /// Allowed before authentication.
    pub const NO_AUTH: u64 = 1 << 12;
    /// May be replicated.
    pub const MAY_REPLICATE: u64 = 1 << 13;
    /// Keys are optional.
    pub const NO_MANDATORY_KEYS: u64 = 1 << 14;
    /// Not allowed while loading asynchronously.
    pub const NO_ASYNC_LOADING: u64 = 1 << 15;
    /// Not allowed inside MULTI.
    pub const NO_MULTI: u64 = 1 << 16;
    /// Key positions depend on the arguments.
    pub const MOVABLE_KEYS: u64 = 1 << 17;
    /// Allowed while a script is busy.
    pub const ALLOW_BUSY: u64 = 1 << 18;

    /// (bit, name) for COMMAND INFO, in Redis's order.
    pub const NAMES: &[(u64, &str)] = &[
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (PUBSUB, "pubsub"),
        (NOSCRIPT, "noscript"),
        (BLOCKING, "blocking"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        (MAY_REPLICATE, "may_replicate"),
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
        (NO_MULTI, "no_multi"),
        (MOVABLE_KEYS, "movablekeys"),
        (ALLOW_BUSY, "allow_busy"),
    ];
}

/// What the request path needs to know of a command beyond Redis's flags
/// (Redis tests these by comparing `c->proc` with a handler in
/// processCommand and friends; here they are facts of the table entry).
pub mod behaviour {
    /// Runs at once inside MULTI instead of being queued, and is not
    /// refused there when over maxmemory: EXEC, DISCARD, MULTI, WATCH,
    /// QUIT, RESET (server.c processCommand).
    pub const TX_CONTROL: u32 = 1 << 0;
    /// Allowed in RESP2 subscribed context: PING, QUIT, RESET and the
    /// (P|S)(UN)SUBSCRIBE family.
    pub const SUBSCRIBED_OK: u32 = 1 << 1;
    /// Refused like a write command after a failed background save
    /// (MISCONF): PING (processCommand's `c->cmd->proc == pingCommand`).
    pub const MISCONF_REFUSED: u32 = 1 << 2;
    /// May make keys appear in (or vanish from) another database, so the
    /// clients blocked in every database are signalled after it: MOVE,
    /// SWAPDB, COPY, FLUSHDB, FLUSHALL (a blocked XREADGROUP whose key was
    /// flushed gets "-UNBLOCKED", db.c scanDatabaseForDeletedKeys).
    pub const OTHER_DBS: u32 = 1 << 3;
    /// Runs the queued transaction: EXEC, dispatched without the shared
    /// gate (it takes the whole of it).
    pub const RUNS_QUEUE: u32 = 1 << 4;
    /// Some of its forms take the whole gate (DEBUG RELOAD, LOADAOF): dispatched
    /// without the shared gate when they do.
    pub const STOPS_THE_WORLD: u32 = 1 << 5;
    /// Its first argument is a channel (PUBLISH, SPUBLISH): checked
    /// against the user's channel permissions (acl.rs `channel_args`).
    pub const CHANNEL_ARG1: u32 = 1 << 6;
    /// Every argument is a channel (SUBSCRIBE, SSUBSCRIBE).
    pub const CHANNEL_ARGS: u32 = 1 << 7;
    /// Every argument is a channel pattern (PSUBSCRIBE).
    pub const PATTERN_ARGS: u32 = 1 << 8;
    /// Does not end a CLIENT CACHING yes|no window: the CLIENT
    /// subcommands (networking.c resetClient's `prevcmd != clientCommand`).
    pub const KEEPS_CACHING: u32 = 1 << 9;
    /// Runs as if the client had sent ASKING (RESTORE-ASKING, Redis's
    /// CMD_ASKING flag).
    pub const ASKING: u32 = 1 << 10;
    /// Runs a script or function (EVAL, FCALL...): dispatched without the
    /// shared gate; the handler takes the whole of it while the script
    /// runs (cmd/scripting.rs).
    pub const RUNS_SCRIPT: u32 = 1 << 11;
}

/// True when `client` is in RESP2 subscribed mode and the top-level
/// command `c` is not one of those allowed there (PING, QUIT, RESET and
/// the (P|S)(UN)SUBSCRIBE family, Redis's processCommand: the table's
/// `SUBSCRIBED_OK`).
#[inline]
pub fn refused_in_context(client: &client::Client, resp3: bool, c: &Command) -> bool {
    client.pubsub.is_some() && !resp3 && c.behaviour & behaviour::SUBSCRIBED_OK == 0
}

/// True when the command `client` just ran leaves its CLIENT CACHING
/// choice for the next command: inside MULTI, or a CLIENT subcommand.
pub fn keeps_caching(client: &client::Client) -> bool {
    client.multi.is_some()
        || table()
            .all
            .get(client.last_cmd)
            .is_some_and(|c| c.behaviour & behaviour::KEEPS_CACHING != 0)
}

/// ACL categories (acl.rs).
pub use crate::acl::categories as acl;

/// One command (or subcommand) of the table.
#[derive(Debug)]
pub struct Command {
    /// Lower-case name; subcommands are `container|sub`.
    pub name: &'static str,
    /// Redis arity: N = exactly N arguments (with the name), -N = at least N.
    pub arity: i32,
    /// [`flags`] bits.
    pub flags: u64,
    /// First key position (0 = no keys).
    pub first_key: i32,
    /// Last key position (-1 = last argument, -2 = the one before...).
    pub last_key: i32,
    /// Step between keys.
    pub step: i32,
    /// Explicit [`acl`] categories (flag-derived ones are added by
    /// [`Command::acl_categories`]).
    pub acl: u64,
    /// COMMAND DOCS group (string, generic, server, connection, ...).
    pub group: &'static str,
    /// Redis version that introduced the command.
    pub since: &'static str,
    /// One-line summary.
    pub summary: &'static str,
    /// Time complexity.
    pub complexity: &'static str,
    /// Command tips (nondeterministic_output, request_policy:..., ...).
    pub tips: &'static [&'static str],
    /// The handler; containers dispatch to subcommands instead.
    pub handler: Handler,
    /// Subcommands (CONFIG GET, CLIENT LIST, ...).
    pub subcommands: &'static [Command],
    /// Key-spec flags COMMAND INFO reports (`RW`, `insert`, ...); empty =
    /// derived from the command flags.
    pub key_flags: &'static [&'static str],
    /// Redis 7.0's key specs (begin_search / find_keys) of the command:
    /// ACL key checks, COMMAND GETKEYS, tracking and blocked-client
    /// signalling read the keys from them (cmd/keyspecs.rs).
    pub key_specs: &'static [keyspecs::KeySpec],
    /// The command's own key finder, used when its specs do not resolve
    /// (Redis's `getkeys_proc`: SORT's STORE, SET's GET, key counts).
    pub key_finder: Option<keyspecs::KeyFinder>,
    /// [`behaviour`] bits.
    pub behaviour: u32,
}

fn no_handler(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    ctx.error("ERR internal: container command without subcommand");
}

/// Builds a table entry (use the `doc`, `tips` and `subs` methods to add the
/// rest).
pub const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    keys: (i32, i32, i32),
    acl: u64,
    handler: Handler,
) -> Command {
    Command {
        name,
        arity,
        flags,
        first_key: keys.0,
        last_key: keys.1,
        step: keys.2,
        acl,
        group: "generic",
        since: "1.0.0",
        summary: "",
        complexity: "",
        tips: &[],
        handler,
        subcommands: &[],
        key_flags: &[],
        key_specs: &[],
        key_finder: None,
        behaviour: 0,
    }
}

/// A container command (CONFIG, CLIENT, ...) whose work is done by `subs`.
pub const fn container(name: &'static str, acl: u64, subs: &'static [Command]) -> Command {
    let mut c = cmd(name, -2, 0, (0, 0, 0), acl, no_handler);
    c.subcommands = subs;
    c
}

impl Command {
    /// Adds documentation (COMMAND DOCS): group, version, summary, complexity.
    pub const fn doc(
        mut self,
        group: &'static str,
        since: &'static str,
        summary: &'static str,
        complexity: &'static str,
    ) -> Self {
        self.group = group;
        self.since = since;
        self.summary = summary;
        self.complexity = complexity;
        self
    }

    /// Adds subcommands to a command that also has its own handler for the
    /// call without a subcommand (COMMAND).
    pub const fn subs(mut self, subs: &'static [Command]) -> Self {
        self.subcommands = subs;
        self
    }

    /// Sets the key-spec flags COMMAND INFO reports (Redis declares them
    /// per command, e.g. HSETNX's key is `RW insert`).
    pub const fn key_flags(mut self, f: &'static [&'static str]) -> Self {
        self.key_flags = f;
        self
    }

    /// Sets the key specs (Redis 7.0.15's, as COMMAND INFO shows them).
    pub const fn key_specs(mut self, s: &'static [keyspecs::KeySpec]) -> Self {
        self.key_specs = s;
        self
    }

    /// Sets the command's own key finder (see [`Command::key_finder`]).
    pub const fn key_finder(mut self, f: keyspecs::KeyFinder) -> Self {
        self.key_finder = Some(f);
        self
    }

    /// Adds [`behaviour`] bits.
    pub const fn behaves(mut self, b: u32) -> Self {
        self.behaviour |= b;
        self
    }

    /// Adds command tips.
    pub const fn tips(mut self, tips: &'static [&'static str]) -> Self {
        self.tips = tips;
        self
    }

    /// True for a container command.
    pub fn is_container(&self) -> bool {
        !self.subcommands.is_empty()
    }

    /// ACL categories including those Redis derives from the flags
    /// (`setImplicitACLCategories` in server.c).
    pub fn acl_categories(&self) -> u64 {
        let mut c = self.acl;
        if self.flags & flags::WRITE != 0 {
            c |= acl::WRITE;
        }
        if self.flags & flags::READONLY != 0 && c & acl::SCRIPTING == 0 {
            c |= acl::READ;
        }
        if self.flags & flags::ADMIN != 0 {
            c |= acl::ADMIN | acl::DANGEROUS;
        }
        if self.flags & flags::PUBSUB != 0 {
            c |= acl::PUBSUB;
        }
        if self.flags & flags::FAST != 0 {
            c |= acl::FAST;
        }
        if self.flags & flags::BLOCKING != 0 {
            c |= acl::BLOCKING;
        }
        if c & acl::FAST == 0 {
            c |= acl::SLOW;
        }
        c
    }

    /// Key positions of request `args` for this command, from Redis 7.0's
    /// key specs (numkeys-style commands, SORT ... STORE included; see
    /// [`keyspecs::get_keys`]), in order, without allocating.
    pub fn key_positions(&self, args: &Args<'_>) -> impl Iterator<Item = usize> {
        self.keys(args).into_iter().map(|k| k.pos)
    }

    /// True when the command has keys (Redis's `doesCommandHaveKeys`).
    pub fn has_keys(&self) -> bool {
        keyspecs::has_keys(self.key_specs)
    }

    /// The keys of request `args` and how each is used
    /// ([`keyspecs::get_keys`]), without allocating.
    pub fn keys(&self, args: &Args<'_>) -> keyspecs::Keys {
        keyspecs::get_keys(self.key_specs, self.key_finder, args)
    }

    /// The keys cluster routing checks (Redis's getKeysFromCommand, as
    /// getNodeByQuery calls it): the command's own key finder when it has
    /// one, else its legacy (first, last, step) range, which also covers
    /// the shard channels of SPUBLISH / SSUBSCRIBE; commands with movable
    /// keys and no finder use their key specs.
    pub fn routing_keys(&self, args: &Args<'_>) -> keyspecs::Keys {
        if let Some(f) = self.key_finder {
            return f(args);
        }
        if self.flags & flags::MOVABLE_KEYS != 0 {
            return self.keys(args);
        }
        keyspecs::legacy_range(self.first_key, self.last_key, self.step, args.len())
    }

    /// The channel arguments of a Pub/Sub command: (first index, count,
    /// literal). PUBLISH/SPUBLISH: the channel; SUBSCRIBE/SSUBSCRIBE: every
    /// channel; PSUBSCRIBE: every pattern, compared literally with the
    /// user's channel patterns (Redis 7.0's `ACLDoesCommandHaveChannels`;
    /// the unsubscribe commands are not checked).
    pub fn channel_args(&self, argc: usize) -> Option<(usize, usize, bool)> {
        if self.flags & flags::PUBSUB == 0 && self.acl & acl::PUBSUB == 0 {
            return None;
        }
        use behaviour as b;
        if self.behaviour & b::CHANNEL_ARG1 != 0 {
            Some((1, 1.min(argc.saturating_sub(1)), false))
        } else if self.behaviour & b::CHANNEL_ARGS != 0 {
            Some((1, argc.saturating_sub(1), false))
        } else if self.behaviour & b::PATTERN_ARGS != 0 {
            Some((1, argc.saturating_sub(1), true))
        } else {
            None
        }
    }
}

impl crate::acl::Checked for Command {
    #[inline]
    fn no_auth(&self) -> bool {
        self.flags & flags::NO_AUTH != 0
    }
    #[inline]
    fn has_keys(&self) -> bool {
        Command::has_keys(self)
    }
    #[inline]
    fn keys(&self, args: &Args<'_>) -> keyspecs::Keys {
        Command::keys(self, args)
    }
    #[inline]
    fn channel_args(&self, argc: usize) -> Option<(usize, usize, bool)> {
        Command::channel_args(self, argc)
    }
}

impl crate::acl::CommandCatalog for Table {
    fn len(&self) -> usize {
        self.all.len()
    }
    fn name(&self, id: usize) -> &'static str {
        self.all[id].name
    }
    fn is_container(&self, id: usize) -> bool {
        self.all[id].is_container()
    }
    fn sub_ids(&self, id: usize) -> &[usize] {
        Table::sub_ids(self, id)
    }
    fn categories(&self, id: usize) -> u64 {
        self.all[id].acl_categories()
    }
    fn lookup(&self, name: &[u8]) -> Option<usize> {
        Table::lookup(self, name)
    }
    fn lookup_sub(&self, id: usize, sub: &[u8]) -> Option<usize> {
        Table::lookup_sub(self, id, sub)
    }
}

/// Builds the command table (once) and hands it to the ACL as its
/// catalog of commands. Call before the first [`crate::server::Server`]
/// or configuration with `user` lines is made (the server binary does at
/// start; tests that build a server in-process do too).
pub fn init() {
    crate::acl::set_catalog(table());
}

/// The assembled command table.
pub struct Table {
    /// Every command and subcommand; the index is the command id used for
    /// statistics.
    pub all: Vec<&'static Command>,
    /// Top-level commands by lower-case name → id.
    by_name: HashMap<&'static [u8], usize, foldhash::fast::RandomState>,
    /// For each id, the ids of its subcommands.
    subs: Vec<Vec<usize>>,
    /// Longest top-level name, bytes.
    max_name: usize,
}

impl Table {
    /// Looks up a top-level command, ASCII case-insensitively, without
    /// allocating. Returns its id.
    #[inline]
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        let mut buf = [0u8; 32];
        if name.len() > self.max_name {
            return None;
        }
        let lower = crate::util::lower_into(name, &mut buf)?;
        self.by_name.get(lower).copied()
    }

    /// Looks up subcommand `sub` of command `id`.
    pub fn lookup_sub(&self, id: usize, sub: &[u8]) -> Option<usize> {
        self.subs[id].iter().copied().find(|&s| {
            let n = self.all[s].name;
            let short = n.split('|').nth(1).unwrap_or(n);
            short.as_bytes().eq_ignore_ascii_case(sub)
        })
    }

    /// The ids of the subcommands of command `id` (empty when none).
    pub fn sub_ids(&self, id: usize) -> &[usize] {
        self.subs.get(id).map_or(&[], Vec::as_slice)
    }

    /// Top-level commands, in table order.
    pub fn top_level(&self) -> impl Iterator<Item = &'static Command> + '_ {
        self.by_name.values().map(|&i| self.all[i])
    }

    /// A command by its full name (`get`, `config|get`), case-insensitive.
    pub fn by_full_name(&self, name: &[u8]) -> Option<&'static Command> {
        let s = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
        let mut parts = s.splitn(2, '|');
        let top = self.lookup(parts.next()?.as_bytes())?;
        match parts.next() {
            None => Some(self.all[top]),
            Some(sub) => self.lookup_sub(top, sub.as_bytes()).map(|i| self.all[i]),
        }
    }

    /// The id of a command (linear; for rare paths such as INFO).
    pub fn id_of(&self, c: &Command) -> Option<usize> {
        self.all.iter().position(|x| std::ptr::eq(*x, c))
    }
}

/// The command table, built on first use from every family's `COMMANDS`.
pub fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        let families: [&'static [Command]; 30] = [
            connection::COMMANDS,
            tx::COMMANDS,
            acl_cmd::COMMANDS,
            strings::COMMANDS,
            cas::COMMANDS,
            bitops::COMMANDS,
            hll::COMMANDS,
            keys::COMMANDS,
            lists::COMMANDS,
            hashes::COMMANDS,
            hash_ttl::COMMANDS,
            sets::COMMANDS,
            zsets::COMMANDS,
            geo::COMMANDS,
            sort::COMMANDS,
            server::config::COMMANDS,
            server::command::COMMANDS,
            server::info::COMMANDS,
            server::introspection::COMMANDS,
            server::debug::COMMANDS,
            server::shutdown::COMMANDS,
            server::memory::COMMANDS,
            server::lolwut::COMMANDS,
            server::module::COMMANDS,
            pubsub::COMMANDS,
            persist::COMMANDS,
            repl::COMMANDS,
            cluster::COMMANDS,
            scripting::COMMANDS,
            streams::COMMANDS,
        ];
        let mut t = Table {
            all: Vec::new(),
            by_name: HashMap::default(),
            subs: Vec::new(),
            max_name: 0,
        };
        for fam in families {
            for c in fam {
                let id = t.all.len();
                t.all.push(c);
                t.subs.push(Vec::new());
                t.by_name.insert(c.name.as_bytes(), id);
                t.max_name = t.max_name.max(c.name.len());
                for s in c.subcommands {
                    let sid = t.all.len();
                    t.all.push(s);
                    t.subs.push(Vec::new());
                    t.subs[id].push(sid);
                }
            }
        }
        t
    })
}

/// Error replies shared by many commands (Redis's shared.* objects).
pub mod err {
    /// Wrong type.
    pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
    /// Syntax error.
    pub const SYNTAX: &str = "ERR syntax error";
    /// Not an integer.
    pub const NOT_INT: &str = "ERR value is not an integer or out of range";
    /// Not a float.
    pub const NOT_FLOAT: &str = "ERR value is not a valid float";
    /// Integer overflow.
    pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
    /// No such key.
    pub const NO_SUCH_KEY: &str = "ERR no such key";
    /// DB index out of range.
    pub const DB_RANGE: &str = "ERR DB index is out of range";
    /// Authentication required.
    pub const NOAUTH: &str = "NOAUTH Authentication required.";
}

/// Everything a handler needs.
pub struct Ctx<'a> {
    /// Shared server state.
    pub server: &'a Arc<Server>,
    /// The calling connection's state.
    pub client: &'a mut Client,
    /// Where replies go.
    pub out: &'a mut Out,
    /// Time of this command, ms since the epoch (Redis's cached mstime:
    /// one clock reading per command, so a command sees one "now").
    pub now: u64,
    /// This thread's counters.
    pub stats: &'a ThreadStats,
    /// Set when the handler replied with an error.
    pub failed: bool,
    /// Changes made, for the dirty counter (INFO
    /// rdb_changes_since_last_save, save points): set by handlers that
    /// count as Redis's `server.dirty` does; when None, a write command
    /// that did not fail counts 1.
    pub dirty: Option<u64>,
}

/// Argument `i` encoded as SET stores a string
/// ([`StrValue::from_bytes`](crate::db::value::StrValue::from_bytes)); a big
/// bulk string ([`crate::resp::parse::BIG_ARG`] bytes or more, received in
/// its own allocation) becomes the stored value without a copy, as Redis
/// stores the argument object itself.
#[inline]
pub fn arg_str_value(args: &Args<'_>, i: usize) -> crate::db::value::StrValue {
    match args.shared(i) {
        Some(b) => crate::db::value::StrValue::shared(b),
        None => crate::db::value::StrValue::from_bytes(args.get(i)),
    }
}

impl<'a> Ctx<'a> {
    /// Hands a repeated-sampling reply whose header was just written to
    /// the connection, which produces it chunk by chunk ([`stream`]); where
    /// the client cannot stream (subscribed or tracking clients, internal
    /// clients) the reply is built here, up to the output buffer limit of
    /// the client's class or, without one, `proto-max-bulk-len` bytes:
    /// past it the client is closed, as Redis closes it at its limit.
    pub fn stream_reply(&mut self, mut picks: stream::RandomPicks) {
        if self.client.streams_replies() {
            let at = self.out.buf.len();
            self.client
                .streams
                .push(stream::PendingStream { at, picks });
            return;
        }
        let class = if self.client.pubsub.is_some() {
            crate::config::OblClass::PubSub
        } else {
            crate::config::OblClass::Normal
        };
        let mut bound = self.server.live.obl_limit(class).hard;
        if bound == 0 {
            bound = self.server.live.proto_max_bulk_len.load(Ordering::Relaxed);
        }
        let start = self.out.buf.len();
        while !picks.fill(self.out, stream::CHUNK) {
            if (self.out.buf.len() - start + picks.copy_size()) as u64 > bound {
                self.out.buf.clear();
                self.client.handle.close_for_limits();
                self.client.close_after_reply = true;
                return;
            }
        }
    }

    /// True when the connection's user may run the current command with
    /// `args` through a selector that can also read every key (`allkeys`,
    /// `~*` or `%R~*`): Redis's `ACLUserCheckCmdWithUnrestrictedKeyAccess`
    /// with `CMD_KEY_ACCESS`, which guards the options that read keys not
    /// named as arguments (SORT's BY and GET patterns). Always true while no
    /// user is restricted.
    pub fn unrestricted_key_read(&mut self, args: &Args<'_>) -> bool {
        if !self.server.acl.restricted.load(Ordering::Relaxed) {
            return true;
        }
        let Some(user) = self.client.acl.user(&self.server.acl) else {
            return false;
        };
        let id = self.client.last_cmd;
        let Some(c) = table().all.get(id) else {
            return false;
        };
        user.check_with_unrestricted_read(*c, id, args)
    }

    /// Redis's addReplySubcommandSyntaxError: "ERR unknown subcommand or
    /// wrong number of arguments for '<sub>'. Try <CONTAINER> HELP."
    pub fn sub_syntax(&mut self, args: &Args<'_>, container: &str) {
        let mut msg = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
        msg.extend_from_slice(c_str(args.get(1), 128));
        msg.extend_from_slice(format!("'. Try {container} HELP.").as_bytes());
        self.out.error_bytes(&msg);
        self.server.stats.record_error("ERR");
        self.failed = true;
    }

    /// Replies with an error (`CODE message`) and counts it in errorstats.
    pub fn error(&mut self, msg: &str) {
        self.out.error(msg);
        self.server.stats.record_error(msg);
        self.failed = true;
    }

    /// An error quoting a client argument the way Redis's `%s` does: the
    /// bytes as they are (not UTF-8-replaced), up to the first NUL byte.
    pub fn error_with(&mut self, prefix: &str, arg: &[u8], suffix: &str) {
        let mut msg = prefix.as_bytes().to_vec();
        msg.extend_from_slice(c_str(arg, usize::MAX));
        msg.extend_from_slice(suffix.as_bytes());
        self.out.error_bytes(&msg);
        self.server.stats.record_error(prefix);
        self.failed = true;
    }

    /// WRONGTYPE error.
    pub fn wrongtype(&mut self) {
        self.error(err::WRONGTYPE);
    }

    /// "ERR syntax error".
    pub fn syntax(&mut self) {
        self.error(err::SYNTAX);
    }

    /// "ERR value is not an integer or out of range".
    pub fn not_int(&mut self) {
        self.error(err::NOT_INT);
    }

    /// The selected database.
    #[inline]
    pub fn db(&self) -> &'a Db {
        let s: &'a Arc<Server> = self.server;
        s.keyspace.db(self.client.db)
    }

    /// Hashes `key` and locks its shard in the selected database.
    #[inline]
    pub fn lock(&self, key: &[u8]) -> (u64, MutexGuard<'a, Shard>) {
        let h = hash_key(key);
        (h, self.db().lock(h))
    }

    /// `key` of the selected database was modified: touches its watchers
    /// and emits keyspace event `event` of `class` (Redis's
    /// `signalModifiedKey` + `notifyKeyspaceEvent`; see events.rs). One
    /// atomic load when nothing is watched and notifications are off.
    #[inline]
    pub fn modified(&self, key: &[u8], class: u32, event: &'static str) {
        self.events().modified(self.client.db, key, class, event);
    }

    /// Emits keyspace event `event` of `class` for `key` of the selected
    /// database, without touching watchers (`notifyKeyspaceEvent` alone).
    #[inline]
    pub fn notify(&self, key: &[u8], class: u32, event: &'static str) {
        self.events().notify(self.client.db, key, class, event);
    }

    /// Touches the watchers of `key` of the selected database without a
    /// notification (`signalModifiedKey` alone).
    #[inline]
    pub fn touch_key(&self, key: &[u8]) {
        self.events().touch(self.client.db, key);
    }

    /// A read lookup of `key` (Redis's `lookupKeyRead*`): counts a keyspace
    /// hit or miss (INFO keyspace_hits / keyspace_misses) and, on a miss,
    /// emits the `keymiss` event (class `m`, db.c `lookupKey`). One atomic
    /// load when notifications are off; no allocation.
    #[inline]
    pub fn hit(&self, key: &[u8], found: bool) {
        self.count_lookup(found);
        if !found {
            self.events().keymiss(self.client.db, key);
        }
    }

    /// Counts a keyspace hit or miss without a `keymiss` event (Redis's
    /// `LOOKUP_NONOTIFY` lookups, e.g. OBJECT).
    #[inline]
    pub fn count_lookup(&self, found: bool) {
        if found {
            bump(&self.stats.hits, 1);
        } else {
            bump(&self.stats.misses, 1);
        }
    }

    /// The key-event gate of the server's keyspace (events.rs), borrowed
    /// for the server's lifetime (not the context's).
    #[inline]
    pub fn events(&self) -> &'a crate::events::Gate {
        let server: &'a Server = self.server;
        server.keyspace.events()
    }

    /// The access to record in an entry's LRU field (db/lru.rs), or None
    /// when the client asked for CLIENT NO-TOUCH.
    #[inline]
    pub fn touch_time(&self) -> Option<crate::db::lru::Access<'a>> {
        if self.client.no_touch {
            None
        } else {
            Some(crate::db::lru::Access::at(
                &self.server.keyspace.lru,
                self.now,
            ))
        }
    }
}

/// Replaces or deletes `dst` (hash `hd`, its shard held in `locks`) with a
/// computed value, as Redis's *STORE commands do (`setKey` /
/// `dbDelete`): `Some` is stored without TTL over any previous value of
/// any type (event `new` when `dst` did not exist, then `event` of
/// `class`); `None` deletes `dst` (event `del` when it existed). The locks
/// are released, and the old value freed, before the events.
pub fn store_or_delete(
    ctx: &mut Ctx<'_>,
    mut locks: crate::db::KeyLocks<'_>,
    dst: &[u8],
    hd: u64,
    value: Option<crate::db::Value>,
    class: u32,
    event: &'static str,
) {
    let db = ctx.client.db;
    let now = ctx.now;
    let shard = locks.shard(db, hd);
    let stored = value.is_some();
    let (old, existed) = match value {
        Some(v) => {
            // setKey's lookupKeyWrite: an expired destination goes first.
            let existed = shard.get(hd, dst, now).is_some();
            let e = crate::db::Entry::new(v, ctx.server.keyspace.lru.initial(now));
            (shard.insert(hd, dst, e), existed)
        }
        None => {
            let old = shard.remove(hd, dst);
            let existed = old.is_some();
            (old, existed)
        }
    };
    drop(locks);
    crate::db::lazyfree::free_old(old, crate::db::lazyfree::Reason::ServerDel);
    if stored {
        if !existed {
            ctx.notify(dst, crate::events::NEW, "new");
        }
        ctx.modified(dst, class, event);
    } else if existed {
        ctx.modified(dst, crate::events::GENERIC, "del");
    }
}

/// Compares an option argument with a lower-case keyword the way Redis's
/// `strcasecmp` on the C string does: ASCII case-insensitive, and the
/// argument ends at its first NUL byte.
#[inline]
pub fn opt_is(arg: &[u8], kw: &[u8]) -> bool {
    let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len());
    arg[..end].eq_ignore_ascii_case(kw)
}

/// Parses an integer argument or replies "value is not an integer or out of
/// range" and returns None.
pub fn arg_i64(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<i64> {
    let v = crate::util::parse_i64(a);
    if v.is_none() {
        ctx.not_int();
    }
    v
}

/// An argument as C's `%.Ns` prints it: up to the first NUL byte, at most
/// `max` bytes.
pub fn c_str(a: &[u8], max: usize) -> &[u8] {
    let a = match a.iter().position(|&b| b == 0) {
        Some(z) => &a[..z],
        None => a,
    };
    &a[..a.len().min(max)]
}

/// Redis's "unknown command" error (server.c processCommand), byte for
/// byte: the name and the arguments are printed with `%.128s` / `%.*s`, so
/// they end at a NUL byte and non-UTF-8 bytes are echoed unchanged.
fn unknown_command(args: &Args<'_>) -> Vec<u8> {
    let mut list = Vec::new();
    for a in args.iter().skip(1) {
        if list.len() >= 128 {
            break;
        }
        let room = 128 - list.len();
        list.push(b'\'');
        list.extend_from_slice(c_str(a, room));
        list.extend_from_slice(b"' ");
    }
    let mut msg = b"ERR unknown command '".to_vec();
    msg.extend_from_slice(c_str(args.get(0), 128));
    msg.extend_from_slice(b"', with args beginning with: ");
    msg.extend_from_slice(&list);
    msg
}

/// True when a CLIENT PAUSE in force holds this command back: every
/// command under ALL; under WRITE the ones the command table flags `write`
/// or `may-replicate` (EVAL and FCALL even with a `no-writes` script, as
/// Redis 7.0) and EXEC of a transaction queuing one (`cflags` of EXEC are
/// [`exec_queue_flags`]).
fn paused(server: &Server, client: &Client, cflags: u64) -> bool {
    let kind = server.pause.kind_at(now_ms_of(client));
    if kind == crate::pause::NONE {
        return false;
    }
    if kind == crate::pause::ALL {
        return true;
    }
    // EXEC's flags include its queue's (exec_queue_flags).
    cflags & (flags::WRITE | flags::MAY_REPLICATE) != 0
}

/// Executes one request and writes its reply into `out`.
///
/// Order of checks as Redis's `processCommand` (server.c): lookup (unknown
/// command / unknown subcommand), arity, authentication; then, inside
/// MULTI, the `no-multi` flag and queuing (a rejected command flags the
/// transaction; a rejected EXEC aborts it); then the handler, inside the
/// exec gate (tx.rs).
pub fn execute(
    server: &Arc<Server>,
    client: &mut Client,
    out: &mut Out,
    args: &Args<'_>,
    stats: &ThreadStats,
) {
    let t = table();
    let reply_start = out.buf.len();
    // Pipelines usually repeat one command: try the connection's previous
    // top-level command before the table lookup.
    let name = args.get(0);
    let cached = t.all.get(client.last_top).is_some_and(|c| {
        c.name.len() == name.len() && c.name.as_bytes().eq_ignore_ascii_case(name)
    });
    let found = if cached {
        Some(client.last_top)
    } else {
        t.lookup(name)
    };
    let Some(mut id) = found else {
        let msg = unknown_command(args);
        out.error_bytes(&msg);
        server.stats.record_error("ERR");
        flag_transaction(client);
        finish_reply(client, out, reply_start);
        return;
    };
    client.last_top = id;
    let mut c = t.all[id];
    // A container called without a subcommand fails the arity check below
    // (containers have arity -2), except COMMAND (arity -1), whose own
    // handler runs.
    if c.is_container() && args.len() >= 2 {
        match t.lookup_sub(id, args.get(1)) {
            Some(s) => {
                id = s;
                c = t.all[s];
            }
            None => {
                let mut msg = b"ERR unknown subcommand '".to_vec();
                msg.extend_from_slice(c_str(args.get(1), 128));
                msg.extend_from_slice(b"'. Try ");
                msg.extend_from_slice(c.name.to_ascii_uppercase().as_bytes());
                msg.extend_from_slice(b" HELP.");
                out.error_bytes(&msg);
                server.stats.record_error("ERR");
                flag_transaction(client);
                finish_reply(client, out, reply_start);
                return;
            }
        }
    }
    let is_exec = c.behaviour & behaviour::RUNS_QUEUE != 0;
    let argc = args.len() as i32;
    if (c.arity > 0 && argc != c.arity) || argc < -c.arity {
        let msg = format!("ERR wrong number of arguments for '{}' command", c.name);
        reject_in_multi(server, client, out, stats, id, &msg, is_exec);
        finish_reply(client, out, reply_start);
        return;
    }
    if !client.authenticated
        && c.flags & flags::NO_AUTH == 0
        && server.acl.auth_required.load(Ordering::Relaxed)
    {
        reject_in_multi(server, client, out, stats, id, err::NOAUTH, is_exec);
        finish_reply(client, out, reply_start);
        return;
    }
    if server.acl.restricted.load(Ordering::Relaxed) {
        if let Err(msg) = acl_check(server, client, c, id, args) {
            reject_in_multi(server, client, out, stats, id, &msg, is_exec);
            finish_reply(client, out, reply_start);
            return;
        }
    }
    if server.cluster.enabled {
        // ASKING applies to the next command only (inside MULTI: until
        // EXEC), as Redis's resetClient.
        let asking = client.asking;
        if client.multi.is_none() {
            client.asking = false;
        }
        // Commands with key specs, channel ones included (SPUBLISH,
        // SSUBSCRIBE), or movable keys, and EXEC (server.c processCommand).
        if !client.is_master
            && (is_exec || !c.key_specs.is_empty() || c.flags & flags::MOVABLE_KEYS != 0)
        {
            if let Err(r) = cluster_route(server, client, c, args, is_exec, asking) {
                let msg = server
                    .cluster
                    .redirect_message(&r, client.handle.tls.load(Ordering::Relaxed));
                if is_exec {
                    // EXEC discards the transaction and replies with the
                    // redirection itself (not EXECABORT).
                    client.multi = None;
                    crate::tx::unwatch_all(&server.tx_env(), &mut client.watch);
                } else {
                    flag_transaction(client);
                }
                reject(server, out, stats, id, &msg);
                finish_reply(client, out, reply_start);
                return;
            }
        }
    }
    // A script's declared flags replace the command's (script.c
    // `scriptFlagsToCmdFlags`): denyoom unless allow-oom / no-writes,
    // write unless no-writes, stale with allow-stale.
    let cflags = if c.behaviour & behaviour::RUNS_SCRIPT != 0 {
        scripting::effective_flags(server, c, args)
    } else {
        c.flags
    };
    // EXEC is checked as the commands it will run (server.c
    // processCommand: `is_write_command` and `is_denystale_command` look at
    // the queue's accumulated flags), so a state change after queuing
    // (min-replicas-to-write, a replica's link going down) aborts it.
    let cflags = if is_exec {
        exec_queue_flags(server, client, cflags)
    } else {
        cflags
    };
    if server.evict.maxmemory() != 0 && oom_refused(server, client, c, cflags, is_exec) {
        reject_in_multi(server, client, out, stats, id, crate::evict::OOM, is_exec);
        finish_reply(client, out, reply_start);
        return;
    }
    // The tracking table is kept within tracking-table-max-keys before
    // every command, queued ones included (server.c processCommand's
    // trackingLimitUsedSlots); the invalidations precede the reply.
    if server.tracking.client_count() > 0
        && crate::tracking::limit_used_slots(&server.tracking_env())
        && client.tracking
    {
        crate::tracking::release_held(&server.tracking_env(), &client.handle);
    }
    if crate::persist::rdb::writes_denied(server)
        && (cflags & flags::WRITE != 0 || c.behaviour & behaviour::MISCONF_REFUSED != 0)
    {
        reject_in_multi(
            server,
            client,
            out,
            stats,
            id,
            crate::persist::rdb::MISCONF,
            is_exec,
        );
        finish_reply(client, out, reply_start);
        return;
    }
    if cflags & flags::WRITE != 0 {
        if let Some(msg) = refused_by_replication(server, client, now_ms_of(client)) {
            reject_in_multi(server, client, out, stats, id, msg, is_exec);
            finish_reply(client, out, reply_start);
            return;
        }
    }
    if cflags & flags::STALE == 0 && server.repl.backlog.replica_mode() && stale_refused(server) {
        reject_in_multi(server, client, out, stats, id, MASTERDOWN, is_exec);
        finish_reply(client, out, reply_start);
        return;
    }
    if c.flags & flags::LOADING == 0
        && !client.is_master
        && server.repl.loading.load(Ordering::Relaxed)
    {
        let msg = "LOADING Redis is loading the dataset in memory";
        reject_in_multi(server, client, out, stats, id, msg, is_exec);
        finish_reply(client, out, reply_start);
        return;
    }
    if client.pubsub.is_some() && refused_in_context(client, out.resp3, t.all[client.last_top]) {
        let msg = crate::pubsub::refused_message(c.name);
        reject_in_multi(server, client, out, stats, id, &msg, is_exec);
        finish_reply(client, out, reply_start);
        return;
    }
    // While a script runs past busy-reply-threshold only the allow-busy
    // commands run; the others, the commands of a MULTI included, are
    // refused -BUSY, and EXEC aborts its transaction (server.c
    // processCommand, isInsideYieldingLongCommand; rejectCommand). Our master's stream waits
    // instead: Redis does not read it meanwhile.
    if c.flags & flags::ALLOW_BUSY == 0 && !client.is_master && server.scripts.busy() {
        let msg = server.scripts.busy_error();
        reject_in_multi(server, client, out, stats, id, msg, is_exec);
        finish_reply(client, out, reply_start);
        return;
    }
    // CLIENT PAUSE holds the command back: the connection (for the master
    // client, the replica's stream loop) runs it once the pause is over
    // (server.c processCommand, blockPostponeClient).
    if paused(server, client, cflags) {
        client.postponed = Some(crate::resp::parse::OwnedArgs::from_args(args));
        return;
    }
    if client.multi.is_some() && t.all[client.last_top].behaviour & behaviour::TX_CONTROL == 0 {
        if c.flags & flags::NO_MULTI != 0 {
            let msg = "ERR Command not allowed inside a transaction";
            reject_in_multi(server, client, out, stats, id, msg, false);
        } else if let Some(m) = client.multi.as_mut() {
            // Redis's lastcmd names the queued command (CLIENT LIST cmd=).
            client.last_cmd = id;
            m.argv_mem += args_mem(args) + 8 * args.len();
            m.queued
                .push((id, crate::resp::parse::OwnedArgs::from_args(args)));
            out.simple("QUEUED");
        }
        finish_reply(client, out, reply_start);
        return;
    }
    if is_exec {
        // EXEC takes the whole gate itself.
        let mode = client.reply_mode;
        run(server, client, out, args, stats, id);
        finish_exec_reply(client, out, reply_start, mode);
        return;
    }
    // DEBUG RELOAD and LOADAOF stop the world themselves
    // (cmd/server/debug.rs), scripts
    // take the whole gate while they run (cmd/scripting.rs), and the
    // commands allowed during a busy script run beside it; every other
    // command runs inside the shared gate, or gets -BUSY when a script has
    // run past busy-reply-threshold (server.c processCommand).
    let gate = if c.behaviour & behaviour::RUNS_SCRIPT != 0
        || (c.behaviour & behaviour::STOPS_THE_WORLD != 0 && server::debug::stops_the_world(args))
        || (c.flags & flags::ALLOW_BUSY != 0 && server.scripts.busy())
    {
        None
    } else {
        let master = client.is_master;
        match server
            .tx
            .gate_shared_unless(|| !master && server.scripts.busy())
        {
            Some(g) => Some(g),
            None => {
                reject(server, out, stats, id, server.scripts.busy_error());
                finish_reply(client, out, reply_start);
                return;
            }
        }
    };
    run(server, client, out, args, stats, id);
    drop(gate);
    if EVICT_AFTER.with(|e| e.replace(false)) {
        evict_now(server, client);
    }
    finish_reply(client, out, reply_start);
}

thread_local! {
    static EVICT_AFTER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// False for a replica ignoring maxmemory (replica-ignore-maxmemory yes,
/// the default), which evicts nothing: its master's DELs keep it in step
/// (Redis's performEvictions); and for the master's own writes, never
/// refused.
fn evicts_for(server: &Server, client: &Client) -> bool {
    !(client.is_master
        || (server.repl.backlog.replica_mode()
            && server.repl.ignore_maxmemory.load(Ordering::Relaxed)))
}

/// Asks for an eviction on this thread once the running command is over
/// and its gate released (CONFIG SET maxmemory below the memory in use:
/// Redis's updateMaxmemory runs performEvictions at once), so the evictions
/// precede the client's next command.
pub fn evict_after_command() {
    EVICT_AFTER.with(|e| e.set(true));
}

/// Evicts now, as before a command ([`oom_refused`]'s rules: not on a
/// replica ignoring maxmemory, not while a script is busy); what the time
/// budget leaves goes on in the background.
fn evict_now(server: &Arc<Server>, client: &Client) {
    if !evicts_for(server, client) || server.scripts.busy() {
        return;
    }
    if crate::evict::perform(&server.evict_env()) == crate::evict::Outcome::Running {
        crate::server::evict_in_background(server);
    }
    if crate::events::pending() {
        crate::events::drain(&**server);
    }
}

/// The cluster routing check of a request (cluster/mod.rs `route`): the
/// command, or for EXEC every queued command.
fn cluster_route(
    server: &Server,
    client: &Client,
    c: &'static Command,
    args: &Args<'_>,
    is_exec: bool,
    asking: bool,
) -> Result<(), crate::cluster::Redirect> {
    use crate::cluster::Routed;
    let now = client.clock_us / 1000;
    let db = server.keyspace.db(0);
    let exists = |key: &[u8]| {
        let h = crate::db::hash_key(key);
        db.lock(h).peek(h, key, now).is_some()
    };
    let asking = asking || c.behaviour & behaviour::ASKING != 0;
    let readonly = client.cluster_readonly;
    if is_exec {
        let Some(m) = client.multi.as_ref() else {
            return Ok(());
        };
        let t = table();
        let cmds: Vec<Routed<'_>> = m
            .queued
            .iter()
            .map(|(qid, a)| routed(t.all[*qid], a.args()))
            .collect();
        return server.cluster.route(&cmds, asking, readonly, &exists);
    }
    server
        .cluster
        .route(&[routed(c, *args)], asking, readonly, &exists)
}

/// A command as cluster routing sees it.
fn routed<'a>(c: &'static Command, args: Args<'a>) -> crate::cluster::Routed<'a> {
    crate::cluster::Routed {
        write: c.flags & flags::WRITE != 0,
        pubsub: c.flags & flags::PUBSUB != 0,
        migrate: c.name == "migrate",
        keys: c.routing_keys(&args),
        args,
    }
}

/// The flags EXEC is checked with (server.c processCommand, which reads
/// `mstate.cmd_flags`): EXEC's own, plus `write` / `may-replicate` when a
/// queued command has them, minus `stale` when a queued command may not
/// run on a stale replica. Queued scripts count with their
/// declared flags (`getCommandFlags`). Outside MULTI: EXEC's own flags.
fn exec_queue_flags(server: &Server, client: &Client, own: u64) -> u64 {
    let Some(m) = client.multi.as_ref() else {
        return own;
    };
    let t = table();
    let mut out = own;
    for (qid, qargs) in m.queued.iter() {
        let Some(q) = t.all.get(*qid) else { continue };
        let qf = if q.behaviour & behaviour::RUNS_SCRIPT != 0 {
            scripting::effective_flags(server, q, &qargs.args())
        } else {
            q.flags
        };
        out |= qf & (flags::WRITE | flags::MAY_REPLICATE);
        if qf & flags::STALE == 0 {
            out &= !flags::STALE;
        }
    }
    out
}

/// `-MASTERDOWN` of a replica whose link is down with
/// `replica-serve-stale-data no` (server.c processCommand).
const MASTERDOWN: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

fn now_ms_of(client: &Client) -> u64 {
    client.clock_us / 1000
}

/// Why replication refuses a write command now: `-NOREPLICAS` on a
/// master short of good replicas (min-replicas-to-write), `-READONLY` on
/// a read-only replica unless the command comes from its master
/// (server.c processCommand).
fn refused_by_replication(server: &Server, client: &Client, now_ms: u64) -> Option<&'static str> {
    if client.is_master {
        return None;
    }
    if server.repl.backlog.replica_mode() {
        if server.repl.read_only.load(Ordering::Relaxed) {
            return Some("READONLY You can't write against a read only replica.");
        }
        return None;
    }
    if repl::not_enough_replicas(server, now_ms) {
        return Some("NOREPLICAS Not enough good replicas to write.");
    }
    None
}

/// True when a replica whose link is down must refuse commands not flagged
/// `stale` (`replica-serve-stale-data no`).
pub(crate) fn stale_refused(server: &Server) -> bool {
    !server.repl.serve_stale.load(Ordering::Relaxed)
        && server.repl.link_state.load(Ordering::Relaxed) != crate::repl::link::CONNECTED
}

/// Runs command `id` (looked up and checked by [`execute`], or queued by
/// MULTI): the handler, blocked-client signalling, key events,
/// statistics, slow log and latency, then the MONITOR feed. The caller
/// holds the exec gate.
///
/// MONITOR sees a command after it ran, in the database it left selected
/// (Redis 7.0's `call`): EXEC after the commands it ran, SELECT with its
/// new database.
pub fn run(
    server: &Arc<Server>,
    client: &mut Client,
    out: &mut Out,
    args: &Args<'_>,
    stats: &ThreadStats,
    id: usize,
) {
    run_command(server, client, out, args, stats, id);
    if server.monitor_count.load(Ordering::Relaxed) > 0
        && table().all[id].flags & (flags::SKIP_MONITOR | flags::ADMIN) == 0
    {
        feed_monitors(server, client, args);
    }
}

/// After a command that read expired keys while effects are recorded
/// (it reported them absent without deleting them, see
/// `propagate::hidden_expired`): deletes those still expired at `now`,
/// each recorded as a `DEL` unit of its own, as Redis's read path deletes
/// and propagates them (db.c `expireIfNeeded`); on a replica (nothing
/// recorded) they stay for the master's DEL.
fn delete_hidden_expired(server: &Arc<Server>, now: u64) {
    let keys = crate::propagate::take_hidden_expired();
    // Not while writes are paused: Redis skips lazy expiry then too (the
    // keys are deleted by a read after the pause, or the active cycle).
    if !server.propagation.on() || now == 0 || server.pause.writes_paused(now) {
        return;
    }
    server.propagation.begin_background();
    for (db, key) in &keys {
        let _ = server.keyspace.expire_key_if_due(*db, key, now);
        server.propagation.cut();
    }
    server.propagation.end_background();
}

/// [`run`] without the MONITOR feed.
fn run_command(
    server: &Arc<Server>,
    client: &mut Client,
    out: &mut Out,
    args: &Args<'_>,
    stats: &ThreadStats,
    id: usize,
) {
    let c = table().all[id];
    client.last_cmd = id;
    // One clock reading per command: the end of one command is the start of
    // the next in the same batch (the connection refreshes `clock_us` when a
    // batch begins). Redis also times commands with the wall clock (ustime).
    let start_us = client.clock_us;
    // A replica's master client sees no key as expired (Redis's
    // expireIfNeeded for `server.master`): keys expire when the master's
    // DEL arrives, and its absolute expiry times need no clock.
    let now = if client.is_master { 0 } else { start_us / 1000 };
    // AOF propagation (persist/aof/): one relaxed load when it is off.
    let prop = c.flags & flags::WRITE != 0 && server.propagation.on();
    let db_at_start = client.db;
    if prop {
        server.propagation.begin_command();
    }
    if server.keyspace.events().tracking() {
        track_before(server, client, c, args);
    }
    let mut ctx = Ctx {
        server,
        client,
        out,
        now,
        stats,
        failed: false,
        dirty: None,
    };
    (c.handler)(&mut ctx, args);
    let failed = ctx.failed;
    let dirty = ctx.dirty;
    // A writable replica remembers the keys its clients gave a TTL, to
    // expire them itself (the master never DELs them).
    if c.flags & flags::WRITE != 0
        && !failed
        && !ctx.client.is_master
        && server.repl.backlog.replica_mode()
    {
        repl::replica::remember_own_ttl_keys(
            server,
            db_at_start,
            c.key_positions(args).map(|i| args.get(i)),
        );
    }
    let end_us = server.clock.now_us();
    ctx.client.clock_us = end_us;
    // Blocked clients are served at the time the command ended (Redis's
    // handleClientsBlockedOnKeys updates the cached time first): a key a
    // transaction made ready but that expired meanwhile (EXEC with DEBUG
    // SLEEP) no longer serves its waiters.
    let now = if now == 0 { 0 } else { end_us / 1000 };
    // Keys created by commands outside the list, sorted-set and stream
    // families (which serve their waiters themselves): RENAME, COPY,
    // MOVE, SWAPDB... may serve blocked clients (db/blocking.rs).
    let signal = !failed
        && c.flags & flags::WRITE != 0
        && c.acl & (acl::LIST | acl::SORTEDSET | acl::STREAM) == 0
        && server.keyspace.any_waiters();
    let signal_keys = || {
        let keys: Vec<&[u8]> = c.key_positions(args).map(|i| args.get(i)).collect();
        (keys, c.behaviour & behaviour::OTHER_DBS != 0)
    };
    if signal && !prop {
        let (keys, all) = signal_keys();
        crate::db::blocking::signal_after_command(&**server, client.db, &keys, all, now);
    }
    // Stream readers woken by a transaction's or a script's XADDs are
    // served once it is over (Redis's handleClientsBlockedOnKeys).
    let wakes = streams::has_wakes() && !tx::in_exec() && !scripting::in_script();
    if wakes && !prop {
        streams::flush_wakes(server, now);
    }
    // Keys with waiters that expired during the command: their blocked
    // XREADGROUP clients learn the key is gone (db.c
    // signalDeletedKeyAsReady).
    let mut expired = if tx::in_exec() || scripting::in_script() {
        Vec::new()
    } else {
        server.keyspace.take_expired_waited()
    };
    if !expired.is_empty() && !prop {
        crate::db::blocking::serve_deferred(&**server, std::mem::take(&mut expired), now);
    }
    // Keys made ready inside a transaction or a script (held by
    // db::blocking::set_hold) are served now that it is over.
    // EXEC and EVAL are not write commands themselves: the clients they
    // serve are recorded as background units (a unit of their own each).
    if !prop && server.keyspace.any_waiters() && !tx::in_exec() && !scripting::in_script() {
        let held = crate::db::blocking::take_stashed();
        if !held.is_empty() {
            let own = server.propagation.on() && !crate::propagate::Stream::in_write_context();
            if own {
                server.propagation.begin_background();
            }
            crate::db::blocking::serve_deferred(&**server, held, now);
            if own {
                server.propagation.end_background();
            }
        }
    }
    if prop {
        server.propagation.end_command(db_at_start, args);
        // Blocked clients served after the command (keys locked again)
        // form units of their own.
        let mut stashed = crate::db::blocking::take_stashed();
        stashed.extend(expired);
        if signal || wakes || !stashed.is_empty() {
            let own = !crate::propagate::Stream::in_write_context();
            if own {
                server.propagation.begin_background();
            }
            if !stashed.is_empty() {
                crate::db::blocking::serve_deferred(&**server, stashed, now);
            }
            if signal {
                let (keys, all) = signal_keys();
                crate::db::blocking::signal_after_command(&**server, client.db, &keys, all, now);
            }
            if wakes {
                streams::flush_wakes(server, now);
            }
            if own {
                server.propagation.end_background();
            }
        }
    }
    if crate::propagate::has_hidden_expired()
        && !crate::propagate::Stream::in_write_context()
        && !tx::in_exec()
        && !scripting::in_script()
    {
        delete_hidden_expired(server, now);
    }
    if crate::events::pending() {
        crate::events::drain(&**server);
    }
    let us = end_us.saturating_sub(start_us);
    let cs = &stats.cmds[id];
    bump(&cs.calls, 1);
    bump(&cs.usec, us);
    if server.live.latency_tracking.load(Ordering::Relaxed) {
        cs.record_latency(us);
    }
    if failed {
        bump(&cs.failed, 1);
    }
    bump(&stats.commands, 1);
    match dirty {
        Some(n) => bump(&stats.dirty, n),
        None if !failed && c.flags & flags::WRITE != 0 => bump(&stats.dirty, 1),
        None => {}
    }
    if client.blocked.is_some() {
        // A blocked client keeps its arguments (CLIENT LIST argv-mem).
        client.handle.info.lock().argv_mem = args_mem(args);
    }
    let slower = server.live.slowlog_slower_than.load(Ordering::Relaxed);
    if slower >= 0 && us >= slower as u64 && c.flags & flags::SKIP_SLOWLOG == 0 {
        let entry = slowlog_entry(server, client, args, us);
        match client.blocked.as_ref() {
            None => slowlog_insert(server, entry),
            // A command that blocked is logged once its client is served
            // (blocking.rs notes), its time not counting the wait, and not
            // at all when it times out (Redis 7.0's updateStatsOnUnblock).
            Some(b) => {
                if let Some(back) = b.waiter.set_note(Box::new(entry)) {
                    slowlog_insert_note(server, back);
                }
            }
        }
    }
    // Clients this command served are logged after it, as Redis's
    // handleClientsBlockedOnKeys runs after `call` (after EXEC and scripts
    // as a whole, which hold the serving back).
    if crate::db::blocking::has_served_notes() && !tx::in_exec() && !scripting::in_script() {
        for n in crate::db::blocking::take_served_notes() {
            slowlog_insert_note(server, n);
        }
    }
    if us >= 1000 {
        // Redis's latency events: "fast-command" for O(1)/O(log N)
        // commands, "command" for the rest (server.c `call`).
        let event = if c.flags & flags::FAST != 0 {
            "fast-command"
        } else {
            "command"
        };
        server.latency_sample(event, us / 1000);
    }
}

/// Client-side caching before a command runs (tracking.rs): records the
/// client for NOLOOP and, for a read-only
/// command of a tracking client, remembers its keys (Redis's call(); done
/// before the read so that a concurrent write's invalidation is not lost).
/// The read-only script commands (EVAL_RO, EVALSHA_RO, FCALL_RO) are
/// skipped, as Redis skips them: the keys their commands read are
/// remembered instead (scripting.rs).
fn track_before(server: &Arc<Server>, client: &Client, c: &Command, args: &Args<'_>) {
    // A script's commands keep its caller as the current client (Redis's
    // server.current_client during scriptCall), so NOLOOP skips the
    // caller's own script writes.
    if !scripting::in_script() {
        crate::tracking::set_current(client.handle.id);
    }
    if client.tracking
        && c.flags & flags::READONLY != 0
        && !matches!(c.name, "eval_ro" | "evalsha_ro" | "fcall_ro")
    {
        crate::tracking::remember(
            &server.tracking_env(),
            &client.handle,
            c.key_positions(args).map(|i| args.get(i)),
        );
    }
}

/// Marks the transaction of a client inside MULTI as failed (multi.c
/// `flagTransaction`): its EXEC will reply EXECABORT.
#[inline]
fn flag_transaction(client: &mut Client) {
    if let Some(m) = client.multi.as_mut() {
        m.dirty_exec = true;
    }
}

/// A command refused before running (server.c `rejectCommand`): inside
/// MULTI it flags the transaction; a refused EXEC (inside MULTI or not, as
/// Redis) aborts with "EXECABORT Transaction discarded because of:
/// <reason>".
/// server.c processCommand's maxmemory step: evicts keys as needed
/// (evict.rs) and returns true when the command must be refused with the
/// OOM error: memory is still over the limit with nothing evictable and the
/// command is denyoom, an EXEC whose queue holds a denyoom command, or any
/// command queued inside MULTI (except EXEC, DISCARD, MULTI, WATCH, QUIT,
/// RESET). Called only when maxmemory is set, with no lock held.
fn oom_refused(
    server: &Arc<Server>,
    client: &Client,
    c: &Command,
    cflags: u64,
    is_exec: bool,
) -> bool {
    if !evicts_for(server, client) {
        return false;
    }
    // No eviction while a script is past busy-reply-threshold (evict.c
    // isSafeToPerformEvictions): the command is refused -BUSY next.
    if server.scripts.busy() {
        return false;
    }
    let outcome = crate::evict::perform(&server.evict_env());
    if crate::events::pending() {
        // Evictions before the command: their events and invalidations
        // (also to this client) precede its reply.
        crate::events::drain(&**server);
        if client.tracking {
            crate::tracking::release_held(&server.tracking_env(), &client.handle);
        }
    }
    match outcome {
        crate::evict::Outcome::Ok => return false,
        // The time budget ran out: the rest is evicted in the background.
        crate::evict::Outcome::Running => {
            crate::server::evict_in_background(server);
            return false;
        }
        crate::evict::Outcome::Fail => {}
    }
    if cflags & flags::DENYOOM != 0 {
        return true;
    }
    let t = table();
    match client.multi.as_ref() {
        Some(m) if is_exec => m.queued.iter().any(|(qid, _)| {
            t.all
                .get(*qid)
                .is_some_and(|q| q.flags & flags::DENYOOM != 0)
        }),
        Some(_) => c.behaviour & behaviour::TX_CONTROL == 0,
        None => false,
    }
}

fn reject_in_multi(
    server: &Server,
    client: &mut Client,
    out: &mut Out,
    stats: &ThreadStats,
    id: usize,
    msg: &str,
    is_exec: bool,
) {
    if is_exec {
        client.multi = None;
        crate::tx::unwatch_all(&server.tx_env(), &mut client.watch);
        let reason = msg.strip_prefix("ERR ").unwrap_or(msg);
        let full = format!("EXECABORT Transaction discarded because of: {reason}");
        reject(server, out, stats, id, &full);
        return;
    }
    flag_transaction(client);
    reject(server, out, stats, id, msg);
}

/// CLIENT REPLY around EXEC: the mode in force when EXEC started decides
/// whether its reply is sent; a CLIENT REPLY SKIP inside the transaction
/// skips the command after EXEC (Redis resets the skip flags once per
/// top-level command).
fn finish_exec_reply(client: &mut Client, out: &mut Out, reply_start: usize, before: ReplyModeT) {
    use crate::cmd::client::ReplyMode;
    let after = client.reply_mode;
    match before {
        ReplyMode::On => {
            if after == ReplyMode::SkipNext {
                client.reply_mode = ReplyMode::Skip;
            }
        }
        ReplyMode::Off => drop_reply(client, out, reply_start),
        ReplyMode::Skip | ReplyMode::SkipNext => {
            drop_reply(client, out, reply_start);
            client.reply_mode = match after {
                ReplyMode::SkipNext => ReplyMode::Skip,
                ReplyMode::Skip => ReplyMode::On,
                m => m,
            };
        }
    }
}

type ReplyModeT = crate::cmd::client::ReplyMode;

/// The ACL check of a request (Redis's `ACLCheckAllPerm` in
/// processCommand): Err(NOPERM text) after logging the denial in ACL LOG.
/// Only called when some user is restricted (one atomic load otherwise).
fn acl_check(
    server: &Arc<Server>,
    client: &mut Client,
    c: &'static Command,
    id: usize,
    args: &Args<'_>,
) -> Result<(), String> {
    acl_check_kind(server, client, c, id, args).map_err(|d| crate::acl::denied_message(d, c.name))
}

/// [`acl_check`] returning the kind of denial.
pub(crate) fn acl_check_kind(
    server: &Arc<Server>,
    client: &mut Client,
    c: &'static Command,
    id: usize,
    args: &Args<'_>,
) -> Result<(), crate::acl::Denied> {
    let Some(user) = client.acl.user(&server.acl) else {
        // The user was deleted: the connection is being closed.
        return Err(crate::acl::Denied::Command);
    };
    if user.unrestricted() {
        return Ok(());
    }
    let Err(d) = user.check(c, id, args) else {
        return Ok(());
    };
    let object = match d {
        crate::acl::Denied::Command => c.name.as_bytes().to_vec(),
        crate::acl::Denied::Key(i) | crate::acl::Denied::Channel(i) => args.get(i).to_vec(),
    };
    let reason = match d {
        crate::acl::Denied::Command => "command",
        crate::acl::Denied::Key(_) => "key",
        crate::acl::Denied::Channel(_) => "channel",
    };
    log_acl_denial(server, client, c, reason, object, user.name.clone());
    Err(d)
}

/// The ACL re-check of a queued command when EXEC runs it (multi.c
/// execCommand: permissions may have changed since queuing). None when
/// allowed; else the error to put in the EXEC reply array in place of the
/// command's reply, after logging the denial in ACL LOG (context "multi").
pub fn exec_acl_check(
    server: &Arc<Server>,
    client: &mut Client,
    id: usize,
    args: &Args<'_>,
) -> Option<String> {
    if !server.acl.restricted.load(Ordering::Relaxed) {
        return None;
    }
    let c = table().all[id];
    let reason = match acl_check_kind(server, client, c, id, args).err()? {
        crate::acl::Denied::Key(_) => "no permission to touch the specified keys",
        crate::acl::Denied::Channel(_) => {
            "no permission to access one of the channels used as arguments"
        }
        crate::acl::Denied::Command => "no permission to execute the command or subcommand",
    };
    Some(format!(
        "NOPERM ACLs rules changed between the moment the transaction was accumulated \
         and the EXEC call. This command is no longer allowed for the following reason: {reason}"
    ))
}

/// Adds an ACL LOG entry for `client` (reason command/key/channel/auth),
/// with its CLIENT LIST line showing `c` as the current command.
pub fn log_acl_denial(
    server: &Server,
    client: &Client,
    c: &Command,
    reason: &'static str,
    object: Vec<u8>,
    username: Vec<u8>,
) {
    let now = crate::util::now_ms();
    {
        let mut i = client.handle.info.lock();
        i.db = client.db;
        if i.last_cmd != c.name {
            i.last_cmd.clear();
            i.last_cmd.push_str(c.name);
        }
    }
    let client_info = client.handle.describe(now);
    // Redis 7.0: "multi" while the client is queuing or running EXEC.
    let context = if scripting::in_script() {
        "lua"
    } else if client.multi.is_some() || tx::in_exec() {
        "multi"
    } else {
        "toplevel"
    };
    server.acl.log_event(crate::acl::LogEntry {
        count: 1,
        reason,
        context,
        object,
        username,
        ctime_ms: now,
        client_info,
    });
}

fn reject(server: &Server, out: &mut Out, stats: &ThreadStats, id: usize, msg: &str) {
    out.error(msg);
    server.stats.record_error(msg);
    bump(&stats.cmds[id].rejected, 1);
}

/// Applies CLIENT REPLY OFF / SKIP: drops the reply just written.
#[inline]
fn finish_reply(client: &mut Client, out: &mut Out, reply_start: usize) {
    use crate::cmd::client::ReplyMode;
    match client.reply_mode {
        ReplyMode::On => {}
        ReplyMode::Off => drop_reply(client, out, reply_start),
        ReplyMode::SkipNext => {
            // Set by CLIENT REPLY SKIP itself: its own reply is dropped and
            // the next command's reply too.
            drop_reply(client, out, reply_start);
            client.reply_mode = ReplyMode::Skip;
        }
        ReplyMode::Skip => {
            drop_reply(client, out, reply_start);
            client.reply_mode = ReplyMode::On;
        }
    }
}

/// Drops the reply written from `reply_start` on, with the streamed
/// replies that belong to it.
pub(crate) fn drop_reply(client: &mut Client, out: &mut Out, reply_start: usize) {
    out.buf.truncate(reply_start);
    client.streams.retain(|s| s.at <= reply_start);
}

/// Total length of a request's arguments, bytes (Redis's `argv_len_sum`,
/// CLIENT LIST `argv-mem`).
pub(crate) fn args_mem(args: &Args<'_>) -> usize {
    args.iter().map(|a| a.len()).sum()
}

/// The SLOWLOG entry of a command (Redis's slowlogCreateEntry): at most
/// 32 arguments, the last saying how many more there were, each cut to 128
/// bytes with "... (N more bytes)", secrets as `(redacted)`. Its id and
/// time are given by [`slowlog_insert`].
fn slowlog_entry(server: &Server, client: &Client, args: &Args<'_>, us: u64) -> SlowlogEntry {
    const MAX_ARGS: usize = 32;
    const MAX_ARG_LEN: usize = 128;
    let n = args.len();
    let keep = if server.live.slowlog_max_len.load(Ordering::Relaxed) == 0 {
        0
    } else {
        n.min(MAX_ARGS)
    };
    let mut v = Vec::with_capacity(keep);
    let secret = secret_args(args);
    for i in 0..keep {
        if keep != n && i == keep - 1 {
            v.push(format!("... ({} more arguments)", n - keep + 1).into_bytes());
            break;
        }
        if secret.contains(&i) {
            v.push(b"(redacted)".to_vec());
            continue;
        }
        let a = args.get(i);
        if a.len() > MAX_ARG_LEN {
            let mut s = a[..MAX_ARG_LEN].to_vec();
            s.extend_from_slice(format!("... ({} more bytes)", a.len() - MAX_ARG_LEN).as_bytes());
            v.push(s);
        } else {
            v.push(a.to_vec());
        }
    }
    SlowlogEntry {
        id: 0,
        time: 0,
        duration_us: us,
        args: v,
        // A client without a connection (the scripting engine's) is
        // "?:0", as Redis's getClientPeerId names it.
        addr: if client.handle.addr.is_empty() {
            "?:0".to_string()
        } else {
            client.handle.addr.clone()
        },
        name: client.handle.info.lock().name.clone(),
    }
}

/// Adds `e` as the newest SLOWLOG entry (next id, time now), dropping the
/// oldest past slowlog-max-len (nothing is kept when it is 0).
fn slowlog_insert(server: &Server, mut e: SlowlogEntry) {
    let max = server.live.slowlog_max_len.load(Ordering::Relaxed) as usize;
    if max == 0 {
        return;
    }
    let mut sl = server.slowlog.lock();
    e.id = sl.next_id;
    e.time = server.clock.now_ms() / 1000;
    sl.next_id += 1;
    sl.entries.push_front(e);
    while sl.entries.len() > max {
        sl.entries.pop_back();
    }
}

/// [`slowlog_insert`] of an entry a blocked command left on its waiter.
pub(crate) fn slowlog_insert_note(server: &Server, note: Box<dyn std::any::Any + Send>) {
    if let Ok(e) = note.downcast::<SlowlogEntry>() {
        slowlog_insert(server, *e);
    }
}

/// CLIENT UNBLOCK of a client whose blocked command waits to be logged:
/// Redis 7.0 logs it then, with its arguments already gone (an entry with
/// an empty argument list, the blocked client's address and name).
pub(crate) fn slowlog_unblocked(server: &Server, note: Box<dyn std::any::Any + Send>) {
    if let Ok(mut e) = note.downcast::<SlowlogEntry>() {
        e.args.clear();
        slowlog_insert(server, *e);
    }
}

/// Positions of the arguments MONITOR and SLOWLOG show as `(redacted)`
/// (Redis 7.0's `redactClientCommandArgument` callers): every argument of
/// AUTH (when it has at most two); every argument of ACL SETUSER from the
/// user name on; the username and password after HELLO's AUTH; MIGRATE's AUTH
/// password and AUTH2 username and password (options before KEYS); the
/// value of CONFIG SET masterauth / masteruser / requirepass.
fn secret_args(args: &Args<'_>) -> Vec<usize> {
    let name = args.get(0);
    let n = args.len();
    let mut v = Vec::new();
    if name.eq_ignore_ascii_case(b"auth") {
        // authCommand redacts only once past its syntax check (at most
        // two arguments): `AUTH a b c` is shown as sent.
        if n <= 3 {
            v.extend(1..n);
        }
    } else if name.eq_ignore_ascii_case(b"acl") {
        // ACL SETUSER: every argument from the user name on (aclCommand);
        // ACL is an admin command, so this only shows in SLOWLOG.
        if n >= 3 && args.get(1).eq_ignore_ascii_case(b"setuser") {
            v.extend(2..n);
        }
    } else if name.eq_ignore_ascii_case(b"hello") {
        let mut j = 2;
        while j < n {
            let a = args.get(j);
            if a.eq_ignore_ascii_case(b"auth") && j + 2 < n {
                v.extend([j + 1, j + 2]);
                j += 3;
            } else if a.eq_ignore_ascii_case(b"setname") && j + 1 < n {
                j += 2;
            } else {
                break;
            }
        }
    } else if name.eq_ignore_ascii_case(b"migrate") {
        let mut j = 6;
        while j < n {
            let a = args.get(j);
            if a.eq_ignore_ascii_case(b"auth") && j + 1 < n {
                v.push(j + 1);
                j += 2;
            } else if a.eq_ignore_ascii_case(b"auth2") && j + 2 < n {
                v.extend([j + 1, j + 2]);
                j += 3;
            } else if a.eq_ignore_ascii_case(b"keys") {
                break;
            } else {
                j += 1;
            }
        }
    } else if name.eq_ignore_ascii_case(b"config")
        && n > 1
        && args.get(1).eq_ignore_ascii_case(b"set")
    {
        for j in (2..n.saturating_sub(1)).step_by(2) {
            let d = args.get(j);
            if [&b"masterauth"[..], b"masteruser", b"requirepass"]
                .iter()
                .any(|s| d.eq_ignore_ascii_case(s))
            {
                v.push(j + 1);
            }
        }
    }
    v
}

/// Formats a request as MONITOR shows it:
/// `+<unix.micros> [<db> <addr>] "arg" "arg"` with Redis's escaping
/// (`sdscatrepr`) and secrets as `"(redacted)"` ([`secret_args`]).
pub(crate) fn feed_monitors(server: &Server, client: &Client, args: &Args<'_>) {
    let us = server.clock.now_us();
    let mut line = format!(
        "+{}.{:06} [{} {}]",
        us / 1_000_000,
        us % 1_000_000,
        client.db,
        // Commands a script or function runs come from its client, which
        // has no address: Redis shows them as `lua`.
        if client.handle.addr.is_empty() {
            "lua"
        } else {
            &client.handle.addr
        }
    )
    .into_bytes();
    let secret = secret_args(args);
    for (i, a) in args.iter().enumerate() {
        line.push(b' ');
        if secret.contains(&i) {
            repr(b"(redacted)", &mut line);
        } else {
            repr(a, &mut line);
        }
    }
    line.extend_from_slice(b"\r\n");
    let mons = server.monitors.lock();
    for (_, tx) in mons.iter() {
        let _ = tx.send(line.clone());
    }
}

pub use crate::util::repr;
