//! Scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT, and
//! the command side of a running script (`redis.call`), Redis 7.0's eval.c
//! and script.c (redis.io "Scripting with Lua", the EVAL and SCRIPT pages).
//!
//! **Atomicity.** A script runs while its caller holds the whole exec gate
//! (tx.rs): every command in flight on every core finishes first and none
//! starts until the script ends, so no client observes part of a script's
//! effects, whether or not the script declared its keys. Inside MULTI/EXEC
//! the EXEC already holds the gate. The script's effects reach the AOF and
//! the replicas as one MULTI/EXEC unit (Redis 7.0's effects replication).
//!
//! **The script's client.** Commands called from a script run through
//! [`super::run`] as a client of their own (Redis's `lua_client`): the
//! caller's database and user, RESP2 unless `redis.setresp(3)`, never
//! blocking, and a clock frozen at the script's start (keys do not expire
//! in the middle of a script).
//!
//! **Busy scripts.** Past `busy-reply-threshold` milliseconds, commands of
//! other connections answer `-BUSY` (except those flagged `allow-busy`:
//! SCRIPT KILL, FUNCTION KILL, SHUTDOWN NOSAVE, AUTH...), and SCRIPT KILL
//! stops a script that has not written. Connections served by the same I/O
//! thread as the script wait for it instead (see README, Differences).

use super::client::Client;
use super::flags::*;
use super::{acl, behaviour, table, Command, Ctx};
use crate::resp::{Args, Out};
use crate::script::flags as sflags;
use crate::script::lua::{self, Host, Ran};
use crate::server::Server;
use crate::stats::ThreadStats;
use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::sync::Arc;

const EVAL_FLAGS: u64 = NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLE_KEYS;
/// EVAL, EVALSHA, FCALL: [`EVAL_FLAGS`] and Redis 7.0's (unlisted)
/// may-replicate flag (CLIENT PAUSE WRITE holds them back).
const EVAL_RW_FLAGS: u64 = EVAL_FLAGS | MAY_REPLICATE;
const EVAL_DOC: &str = "Depends on the script that is executed.";

/// Scripting commands.
pub static COMMANDS: &[Command] = &[
    super::cmd("eval", -3, EVAL_RW_FLAGS, (0, 0, 0), acl::SCRIPTING, eval)
        .key_specs(crate::keyspecs::EVAL_NOTED)
        .key_finder(crate::keyspecs::numkeys_at_2)
        .behaves(behaviour::RUNS_SCRIPT)
        .doc(
            "scripting",
            "2.6.0",
            "Execute a Lua script server side",
            EVAL_DOC,
        ),
    super::cmd(
        "evalsha",
        -3,
        EVAL_RW_FLAGS,
        (0, 0, 0),
        acl::SCRIPTING,
        evalsha,
    )
    .key_specs(crate::keyspecs::EVAL)
    .key_finder(crate::keyspecs::numkeys_at_2)
    .behaves(behaviour::RUNS_SCRIPT)
    .doc(
        "scripting",
        "2.6.0",
        "Execute a Lua script server side",
        EVAL_DOC,
    ),
    super::cmd(
        "eval_ro",
        -3,
        READONLY | EVAL_FLAGS,
        (0, 0, 0),
        acl::SCRIPTING,
        eval_ro,
    )
    .key_specs(crate::keyspecs::EVAL_RO_NOTED)
    .key_finder(crate::keyspecs::numkeys_at_2)
    .behaves(behaviour::RUNS_SCRIPT)
    .doc(
        "scripting",
        "7.0.0",
        "Execute a read-only Lua script server side",
        EVAL_DOC,
    ),
    super::cmd(
        "evalsha_ro",
        -3,
        READONLY | EVAL_FLAGS,
        (0, 0, 0),
        acl::SCRIPTING,
        evalsha_ro,
    )
    .key_specs(crate::keyspecs::EVAL_RO)
    .key_finder(crate::keyspecs::numkeys_at_2)
    .behaves(behaviour::RUNS_SCRIPT)
    .doc(
        "scripting",
        "7.0.0",
        "Execute a read-only Lua script server side",
        EVAL_DOC,
    ),
    super::cmd("fcall", -3, EVAL_RW_FLAGS, (0, 0, 0), acl::SCRIPTING, fcall)
        .key_specs(crate::keyspecs::EVAL_NOTED)
        .key_finder(crate::keyspecs::numkeys_at_2)
        .behaves(behaviour::RUNS_SCRIPT)
        .doc("scripting", "7.0.0", "Invoke a function", EVAL_DOC),
    super::cmd(
        "fcall_ro",
        -3,
        READONLY | EVAL_FLAGS,
        (0, 0, 0),
        acl::SCRIPTING,
        fcall_ro,
    )
    .key_specs(crate::keyspecs::EVAL_RO_NOTED)
    .key_finder(crate::keyspecs::numkeys_at_2)
    .behaves(behaviour::RUNS_SCRIPT)
    .doc(
        "scripting",
        "7.0.0",
        "Invoke a read-only function",
        EVAL_DOC,
    ),
    super::container("function", 0, FUNCTION_SUBS).doc(
        "scripting",
        "7.0.0",
        "A container for function commands",
        "Depends on subcommand.",
    ),
    super::container("script", 0, SCRIPT_SUBS).doc(
        "scripting",
        "2.6.0",
        "A container for Lua scripts management commands",
        "Depends on subcommand.",
    ),
];

static FUNCTION_SUBS: &[Command] = &[
    super::cmd(
        "function|delete",
        3,
        WRITE | NOSCRIPT,
        (0, 0, 0),
        acl::SCRIPTING,
        function_delete,
    )
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .doc("scripting", "7.0.0", "Delete a function by name", "O(1)"),
    super::cmd(
        "function|dump",
        2,
        NOSCRIPT,
        (0, 0, 0),
        acl::SCRIPTING,
        function_dump,
    )
    .doc(
        "scripting",
        "7.0.0",
        "Dump all functions into a serialized binary payload",
        "O(N) where N is the number of functions",
    ),
    super::cmd(
        "function|flush",
        -2,
        WRITE | NOSCRIPT,
        (0, 0, 0),
        acl::SCRIPTING,
        function_flush,
    )
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .doc(
        "scripting",
        "7.0.0",
        "Deleting all functions",
        "O(N) where N is the number of functions deleted",
    ),
    super::cmd(
        "function|help",
        2,
        LOADING | STALE,
        (0, 0, 0),
        acl::SCRIPTING,
        function_help,
    )
    .doc(
        "scripting",
        "7.0.0",
        "Show helpful text about the different subcommands",
        "O(1)",
    ),
    super::cmd(
        "function|kill",
        2,
        NOSCRIPT | ALLOW_BUSY,
        (0, 0, 0),
        acl::SCRIPTING,
        function_kill,
    )
    .tips(&["request_policy:all_shards", "response_policy:one_succeeded"])
    .doc(
        "scripting",
        "7.0.0",
        "Kill the function currently in execution.",
        "O(1)",
    ),
    super::cmd(
        "function|list",
        -2,
        NOSCRIPT,
        (0, 0, 0),
        acl::SCRIPTING,
        function_list,
    )
    .tips(&["nondeterministic_output_order"])
    .doc(
        "scripting",
        "7.0.0",
        "List information about all the functions",
        "O(N) where N is the number of functions",
    ),
    super::cmd(
        "function|load",
        -3,
        WRITE | DENYOOM | NOSCRIPT,
        (0, 0, 0),
        acl::SCRIPTING,
        function_load,
    )
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .doc(
        "scripting",
        "7.0.0",
        "Create a function with the given arguments (name, code, description)",
        "O(1) (considering compilation time is redundant)",
    ),
    super::cmd(
        "function|restore",
        -3,
        WRITE | DENYOOM | NOSCRIPT,
        (0, 0, 0),
        acl::SCRIPTING,
        function_restore,
    )
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .doc(
        "scripting",
        "7.0.0",
        "Restore all the functions on the given payload",
        "O(N) where N is the number of functions on the payload",
    ),
    super::cmd(
        "function|stats",
        2,
        NOSCRIPT | ALLOW_BUSY,
        (0, 0, 0),
        acl::SCRIPTING,
        function_stats,
    )
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_shards",
        "response_policy:special",
    ])
    .doc(
        "scripting",
        "7.0.0",
        "Return information about the function currently running (name, description, duration)",
        "O(1)",
    ),
];

static SCRIPT_SUBS: &[Command] = &[
    super::cmd("script|debug", 3, NOSCRIPT, (0, 0, 0), acl::SCRIPTING, script_debug).doc(
        "scripting",
        "3.2.0",
        "Set the debug mode for executed scripts.",
        "O(1)",
    ),
    super::cmd("script|exists", -3, NOSCRIPT, (0, 0, 0), acl::SCRIPTING, script_exists)
        .tips(&["request_policy:all_shards", "response_policy:agg_logical_and"])
        .doc(
            "scripting",
            "2.6.0",
            "Check existence of scripts in the script cache.",
            "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).",
        ),
    super::cmd("script|flush", -2, NOSCRIPT, (0, 0, 0), acl::SCRIPTING, script_flush)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc(
            "scripting",
            "2.6.0",
            "Remove all the scripts from the script cache.",
            "O(N) with N being the number of scripts in cache",
        ),
    super::cmd("script|help", 2, LOADING | STALE, (0, 0, 0), acl::SCRIPTING, script_help).doc(
        "scripting",
        "5.0.0",
        "Show helpful text about the different subcommands",
        "O(1)",
    ),
    super::cmd("script|kill", 2, NOSCRIPT | ALLOW_BUSY, (0, 0, 0), acl::SCRIPTING, script_kill)
        .tips(&["request_policy:all_shards", "response_policy:one_succeeded"])
        .doc(
            "scripting",
            "2.6.0",
            "Kill the script currently in execution.",
            "O(1)",
        ),
    super::cmd("script|load", 3, NOSCRIPT | STALE, (0, 0, 0), acl::SCRIPTING, script_load)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc(
            "scripting",
            "2.6.0",
            "Load the specified Lua script into the script cache.",
            "O(N) with N being the length in bytes of the script body.",
        ),
];

thread_local! {
    /// True while this thread runs a script's command (ACL LOG context
    /// "lua").
    static IN_SCRIPT: Cell<bool> = const { Cell::new(false) };
    /// The script client of this thread: (server it belongs to, client,
    /// its reply buffer).
    static SCRIPT_CLIENT: RefCell<Option<(usize, Box<Client>, Out)>> = const { RefCell::new(None) };
}

/// True when `name` is a command that runs a script or function (EVAL,
/// EVALSHA, EVAL_RO, EVALSHA_RO, FCALL, FCALL_RO), any case. Cheap: the
/// connection loop asks it of every request.
#[inline]
pub fn is_script_command(name: &[u8]) -> bool {
    if !(4..=10).contains(&name.len()) || !matches!(name[0] | 0x20, b'e' | b'f') {
        return false;
    }
    [
        "eval",
        "evalsha",
        "eval_ro",
        "evalsha_ro",
        "fcall",
        "fcall_ro",
    ]
    .iter()
    .any(|c| c.as_bytes().eq_ignore_ascii_case(name))
}

/// True while the current thread runs a command called by a script.
pub fn in_script() -> bool {
    IN_SCRIPT.with(Cell::get)
}

/// `-NOSCRIPT` (shared.noscripterr).
const NOSCRIPT_ERR: &str = "NOSCRIPT No matching script. Please use EVAL.";

fn eval(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    eval_generic(ctx, args, false, false);
}

fn evalsha(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    eval_generic(ctx, args, true, false);
}

fn eval_ro(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    eval_generic(ctx, args, false, true);
}

fn evalsha_ro(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    eval_generic(ctx, args, true, true);
}

/// The lower-case form of a 40-character SHA1 argument, or None.
fn sha_arg(a: &[u8]) -> Option<[u8; 40]> {
    let mut sha = [0u8; 40];
    if a.len() != 40 {
        return None;
    }
    for (d, s) in sha.iter_mut().zip(a) {
        *d = s.to_ascii_lowercase();
    }
    Some(sha)
}

/// Parses EVAL's numkeys (eval.c evalGenericCommand): Some(n) or an error
/// reply.
pub(crate) fn numkeys_arg(ctx: &mut Ctx<'_>, args: &Args<'_>) -> Option<usize> {
    let Some(n) = crate::util::parse_i64(args.get(2)) else {
        ctx.not_int();
        return None;
    };
    if n > args.len() as i64 - 3 {
        ctx.error("ERR Number of keys can't be greater than number of args");
        return None;
    }
    if n < 0 {
        ctx.error("ERR Number of keys can't be negative");
        return None;
    }
    Some(n as usize)
}

/// EVAL, EVALSHA and their _RO forms (eval.c `evalGenericCommand`).
fn eval_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, evalsha: bool, ro: bool) {
    if ctx.server.monitor_count.load(Ordering::Relaxed) > 0 {
        super::feed_monitors(ctx.server, ctx.client, args);
    }
    if evalsha && args.get(1).len() != 40 {
        return ctx.error(NOSCRIPT_ERR);
    }
    let Some(numkeys) = numkeys_arg(ctx, args) else {
        return;
    };
    // Every other command on every core finishes first (unless EXEC
    // already holds the whole gate).
    let _gate = (!super::tx::gate_held()).then(|| ctx.server.tx.gate_exclusive());
    let server = ctx.server.clone();
    let mut eval = server.scripts.eval.lock();
    let sha = if evalsha {
        match sha_arg(args.get(1)) {
            Some(s) if eval.cache.contains_key(&s) => s,
            _ => return ctx.error(NOSCRIPT_ERR),
        }
    } else {
        match eval.create(args.get(1)) {
            Ok(s) => {
                server.scripts.note_script(&eval, &s);
                s
            }
            Err(e) => {
                ctx.out.error_bytes(&e);
                ctx.server.stats.record_error("ERR");
                ctx.failed = true;
                return;
            }
        }
    };
    let flags = eval
        .cache
        .get(&sha)
        .map_or(sflags::EVAL_COMPAT, |s| s.flags);
    let key = crate::script::function_key(&sha);
    let key = std::ffi::CStr::from_bytes_with_nul(&key).expect("NUL-terminated key");
    run_in(
        ctx,
        &mut eval.lua,
        RunSpec {
            key,
            name: &sha,
            flags,
            ro,
            eval_mode: true,
        },
        args,
        numkeys,
    );
}

/// What to run: a cached script or a function.
pub(crate) struct RunSpec<'a> {
    /// Registry key of the Lua function.
    pub key: &'a std::ffi::CStr,
    /// Name in error messages (the SHA1 or the function name).
    pub name: &'a [u8],
    /// Script flags.
    pub flags: u32,
    /// Called through a `_RO` command.
    pub ro: bool,
    /// EVAL (KEYS/ARGV globals) rather than FCALL.
    pub eval_mode: bool,
}

/// scriptPrepareForRun's refusals: an error reply or Ok.
fn prepare(ctx: &mut Ctx<'_>, flags: u32, ro: bool, oom: bool) -> Result<(), String> {
    let server = ctx.server;
    let from_master = ctx.client.is_master;
    let running_stale = server.repl.backlog.replica_mode() && super::stale_refused(server);
    if flags & sflags::EVAL_COMPAT == 0 {
        if flags & sflags::NO_CLUSTER != 0 && server.cluster.enabled {
            return Err("ERR Can not run script on cluster, 'no-cluster' flag is set.".into());
        }
        // no-writes implies allow-oom (as redis-server 7.0.15 runs it).
        if flags & (sflags::ALLOW_OOM | sflags::NO_WRITES) == 0 && oom && !from_master {
            return Err("OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'".into());
        }
        if running_stale && flags & sflags::ALLOW_STALE == 0 {
            return Err("MASTERDOWN Link with MASTER is down, replica-serve-stale-data is set to 'no' and 'allow-stale' flag is not set on the script.".into());
        }
        if flags & sflags::NO_WRITES == 0 {
            if server.repl.backlog.replica_mode()
                && server.repl.read_only.load(Ordering::Relaxed)
                && !from_master
            {
                return Err("ERR Can not run script with write flag on readonly replica".into());
            }
            if crate::persist::rdb::writes_denied(server) && !from_master {
                return Err("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts.".into());
            }
            if ro {
                return Err(
                    "ERR Can not execute a script with write flag using *_ro command.".into(),
                );
            }
            if !server.repl.backlog.replica_mode()
                && super::repl::not_enough_replicas(server, ctx.now.max(server.clock.now_ms()))
            {
                return Err("NOREPLICAS Not enough good replicas to write.".into());
            }
        }
    } else if running_stale {
        return Err(
            "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
                .into(),
        );
    }
    Ok(())
}

/// True when memory is over maxmemory with nothing left to evict (Redis's
/// `server.script_oom`, computed when the script starts).
fn script_oom(server: &Server) -> bool {
    crate::evict::perform(&server.evict_env()) == crate::evict::Outcome::Fail
}

/// Runs a script or function on `state` (EVAL's interpreter or the
/// functions') for the caller in `ctx` (script.c `scriptPrepareForRun` +
/// `luaCallFunction` + `scriptResetRun`), with the gate already held. The
/// first `numkeys` arguments after argv[2] are the keys, the rest the
/// arguments.
pub(crate) fn run_in(
    ctx: &mut Ctx<'_>,
    state: &mut lua::State,
    spec: RunSpec<'_>,
    args: &Args<'_>,
    numkeys: usize,
) {
    // Over maxmemory with nothing left to evict (Redis's
    // `server.script_oom`, computed once as the script starts).
    let oom = ctx.server.evict.maxmemory() != 0 && script_oom(ctx.server);
    if let Err(e) = prepare(ctx, spec.flags, spec.ro, oom) {
        return ctx.error(&e);
    }
    let server = ctx.server.clone();
    let compat = spec.flags & sflags::EVAL_COMPAT != 0;
    let read_only = spec.ro || (!compat && spec.flags & sflags::NO_WRITES != 0);
    let allow_oom = !compat && spec.flags & sflags::ALLOW_OOM != 0;
    let allow_cross_slot = compat || spec.flags & sflags::ALLOW_CROSS_SLOT != 0;
    let oom = oom && !allow_oom;
    let run = &server.scripts.run;
    let start_us = server.clock.now_us();
    run.start_us.store(start_us, Ordering::Relaxed);
    run.killed.store(false, Ordering::Relaxed);
    run.write_dirty.store(false, Ordering::Relaxed);
    run.timed_out.store(false, Ordering::Relaxed);
    run.eval_mode.store(spec.eval_mode, Ordering::Relaxed);
    run.from_master
        .store(ctx.client.is_master, Ordering::Relaxed);
    run.running.store(true, Ordering::Release);
    let hook = server.scripts.busy_threshold_ms.load(Ordering::Relaxed) > 0;
    let key_args = args.tail(3);
    let (keys, argv) = split_at(&key_args, numkeys);
    // The script's effects are one unit of the propagation stream.
    let block = server.propagation.begin_block();
    let server_id = Arc::as_ptr(&server) as usize;
    let ran = SCRIPT_CLIENT.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.as_ref().is_none_or(|(id, _, _)| *id != server_id) {
            *slot = Some((server_id, Box::new(script_client(&server)), Out::new()));
        }
        let Some((_, sclient, sout)) = slot.as_mut() else {
            unreachable!("script client just made")
        };
        sclient.db = ctx.client.db;
        if sclient.acl.name != ctx.client.acl.name {
            let name = if ctx.client.acl.name.is_empty() {
                b"default".to_vec()
            } else {
                ctx.client.acl.name.clone()
            };
            sclient.acl.set_user(&name);
        }
        sclient.is_master = ctx.client.is_master;
        sclient.asking = ctx.client.asking;
        sclient.cluster_readonly = ctx.client.cluster_readonly;
        sclient.no_touch = ctx.client.no_touch;
        sout.resp3 = false;
        sout.buf.clear();
        let mut host = ScriptHost {
            server: &server,
            client: sclient,
            out: sout,
            stats: ctx.stats,
            start_us,
            read_only,
            allow_oom,
            allow_cross_slot,
            oom,
            // The slot of the declared keys (Redis: the caller's c->slot,
            // set when the EVAL/FCALL itself was routed): the script's
            // commands must agree with it too.
            slot: (server.cluster.enabled && !ctx.client.is_master && !keys.is_empty())
                .then(|| crate::db::slotindex::key_hash_slot(keys.get(0))),
            timed_out_logged: false,
            kill_logged: false,
            eval_mode: spec.eval_mode,
            name: spec.name,
            caller_args: args,
            tracking_caller: ctx.client.tracking.then(|| ctx.client.handle.clone()),
        };
        let ran = state.run(
            spec.key,
            spec.name,
            &keys,
            &argv,
            spec.eval_mode,
            hook,
            &mut host,
            ctx.out,
        );
        crate::propagate::set_suppressed(false);
        ran
    });
    server.propagation.end_block(block);
    if run.timed_out.load(Ordering::Relaxed) {
        tracing::warn!("Slow script finished, clients may resume");
    }
    run.timed_out.store(false, Ordering::Relaxed);
    run.running.store(false, Ordering::Release);
    if let Ran::Error { code, counted } = ran {
        ctx.failed = true;
        if !counted {
            ctx.server.stats.record_error(&code);
        }
    }
}

/// Splits `args` into its first `n` and the rest.
fn split_at<'a>(args: &Args<'a>, n: usize) -> (Args<'a>, Args<'a>) {
    (args.head(n), args.tail(n))
}

/// A new script client for `server` (Redis's `lua_client`): authenticated,
/// never blocking.
fn script_client(server: &Server) -> Client {
    let handle = crate::clients::new_handle(
        &server.clients,
        server.clock.now_ms(),
        String::new(),
        String::new(),
        -1,
        false,
    );
    let mut c = Client::new(handle);
    c.authenticated = true;
    c.deny_blocking = true;
    c
}

/// The command layer's side of a running script.
struct ScriptHost<'a> {
    server: &'a Arc<Server>,
    client: &'a mut Client,
    out: &'a mut Out,
    stats: &'a ThreadStats,
    start_us: u64,
    read_only: bool,
    allow_oom: bool,
    allow_cross_slot: bool,
    /// Memory was over maxmemory when the script started.
    oom: bool,
    /// The hash slot the script's commands used so far (cluster mode).
    slot: Option<u16>,
    timed_out_logged: bool,
    /// The kill was logged (the hook asks again on every line after it).
    kill_logged: bool,
    eval_mode: bool,
    /// The script's SHA1 or the function's name.
    name: &'a [u8],
    /// The EVAL / FCALL request (FUNCTION STATS shows it).
    caller_args: &'a Args<'a>,
    /// The calling client when it has CLIENT TRACKING on, until the script
    /// runs a read-only command: the script's declared keys are then
    /// remembered for it (Redis's call() with `server.script_caller`).
    tracking_caller: Option<Arc<crate::clients::ClientHandle>>,
}

impl ScriptHost<'_> {
    /// scriptCall's checks before the command runs: Err(error text).
    fn check(&mut self, c: &'static Command, id: usize, args: &Args<'_>) -> Result<(), Vec<u8>> {
        let server = self.server;
        let from_master = self.client.is_master;
        if c.flags & NOSCRIPT != 0 && !server.scripts.disable_deny_script.load(Ordering::Relaxed) {
            return Err(b"This Redis command is not allowed from script".to_vec());
        }
        if c.flags & STALE == 0
            && server.repl.backlog.replica_mode()
            && super::stale_refused(server)
        {
            return Err(b"Can not execute the command on a stale replica".to_vec());
        }
        if server.acl.restricted.load(Ordering::Relaxed) {
            IN_SCRIPT.with(|s| s.set(true));
            let r = super::acl_check_kind(server, self.client, c, id, args);
            IN_SCRIPT.with(|s| s.set(false));
            if let Err(d) = r {
                let why: &[u8] = match d {
                    crate::acl::Denied::Command => b"can't run this command or subcommand",
                    crate::acl::Denied::Key(_) => {
                        b"can't access at least one of the keys mentioned in the command arguments"
                    }
                    crate::acl::Denied::Channel(_) => {
                        b"can't publish to the channel mentioned in the command"
                    }
                };
                let mut e = b"The user executing the script ".to_vec();
                e.extend_from_slice(why);
                return Err(e);
            }
        }
        // A read-only script refuses may-replicate commands (PUBLISH...)
        // as writes, so that it can run during CLIENT PAUSE WRITE (Redis's
        // scriptVerifyWriteCommandAllow).
        if self.read_only && c.flags & (WRITE | MAY_REPLICATE) != 0 {
            return Err(b"Write commands are not allowed from read-only scripts.".to_vec());
        }
        if c.flags & WRITE != 0 {
            if server.repl.backlog.replica_mode()
                && server.repl.read_only.load(Ordering::Relaxed)
                && !from_master
            {
                return Err(b"-READONLY You can't write against a read only replica.".to_vec());
            }
            if crate::persist::rdb::writes_denied(server) {
                let mut e = b"-".to_vec();
                e.extend_from_slice(crate::persist::rdb::MISCONF.as_bytes());
                return Err(e);
            }
            if !from_master
                && !server.repl.backlog.replica_mode()
                && super::repl::not_enough_replicas(server, server.clock.now_ms())
            {
                return Err(b"-NOREPLICAS Not enough good replicas to write.".to_vec());
            }
        }
        if !self.allow_oom
            && self.oom
            && !from_master
            && !server.scripts.run.write_dirty.load(Ordering::Relaxed)
            && c.flags & DENYOOM != 0
        {
            let mut e = b"-".to_vec();
            e.extend_from_slice(crate::evict::OOM.as_bytes());
            return Err(e);
        }
        if c.flags & WRITE != 0 {
            server
                .scripts
                .run
                .write_dirty
                .store(true, Ordering::Relaxed);
        }
        if server.cluster.enabled && !from_master {
            self.check_cluster(c, args)?;
        }
        Ok(())
    }

    /// scriptVerifyClusterState: the keys must be served here, and in one
    /// slot unless the script allows cross-slot keys.
    fn check_cluster(&mut self, c: &'static Command, args: &Args<'_>) -> Result<(), Vec<u8>> {
        let server = self.server;
        let now = self.start_us / 1000;
        let db = server.keyspace.db(0);
        let exists = |key: &[u8]| {
            let h = crate::db::hash_key(key);
            db.lock(h).peek(h, key, now).is_some()
        };
        let routed = super::routed(c, *args);
        let slot = routed
            .keys
            .iter()
            .next()
            .map(|k| crate::db::slotindex::key_hash_slot(args.get(k.pos)));
        if let Err(r) = server.cluster.route(
            &[routed],
            self.client.asking,
            self.client.cluster_readonly,
            &exists,
        ) {
            use crate::cluster::Redirect;
            return Err(match r {
                Redirect::DownRoState => {
                    b"Script attempted to execute a write command while the cluster is down and readonly".to_vec()
                }
                Redirect::DownState | Redirect::DownUnbound => {
                    b"Script attempted to execute a command while the cluster is down".to_vec()
                }
                _ => b"Script attempted to access a non local key in a cluster node".to_vec(),
            });
        }
        if let Some(slot) = slot {
            if !self.allow_cross_slot {
                match self.slot {
                    None => self.slot = Some(slot),
                    Some(s) if s != slot => {
                        return Err(
                            b"Script attempted to access keys that do not hash to the same slot"
                                .to_vec(),
                        )
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

impl Host for ScriptHost<'_> {
    fn call(&mut self, args: &Args<'_>) -> Result<&[u8], Vec<u8>> {
        self.out.buf.clear();
        let t = table();
        let Some(mut id) = t.lookup(args.get(0)) else {
            return Err(b"Unknown Redis command called from script".to_vec());
        };
        let mut c = t.all[id];
        if c.is_container() {
            match (args.len() >= 2)
                .then(|| t.lookup_sub(id, args.get(1)))
                .flatten()
            {
                Some(s) => {
                    id = s;
                    c = t.all[s];
                }
                None => return Err(b"Unknown Redis command called from script".to_vec()),
            }
        }
        let argc = args.len() as i32;
        if (c.arity > 0 && argc != c.arity) || argc < -c.arity {
            return Err(b"Wrong number of args calling Redis command from script".to_vec());
        }
        if let Err(e) = self.check(c, id, args) {
            let code = match e.strip_prefix(b"-") {
                Some(rest) => {
                    String::from_utf8_lossy(rest.split(|&b| b == b' ').next().unwrap_or(b"ERR"))
                        .into_owned()
                }
                None => "ERR".to_string(),
            };
            self.server.stats.record_error(&code);
            crate::stats::bump(&self.stats.cmds[id].rejected, 1);
            return Err(e);
        }
        // Redis 7.0's call() remembers the keys of the caller's command
        // (trackingRememberKeys(server.script_caller)) when a script runs a
        // read-only command: the EVAL / FCALL's declared keys, not the keys
        // the command read. Once is enough: they stay tracked.
        if c.flags & READONLY != 0 && self.server.keyspace.events().tracking() {
            if let Some(h) = self.tracking_caller.take() {
                let ca = self.caller_args;
                let t = super::table();
                if let Some(cc) = t.lookup(ca.get(0)).map(|i| &t.all[i]) {
                    crate::tracking::remember(
                        &self.server.tracking_env(),
                        &h,
                        cc.key_positions(ca).map(|i| ca.get(i)),
                    );
                }
            }
        }
        // Time stands still during a script (scriptTimeSnapshot).
        self.client.clock_us = self.start_us;
        IN_SCRIPT.with(|s| s.set(true));
        // Blocked clients are served after the script (cmd/mod.rs `run`).
        let hold = crate::db::blocking::set_hold(true);
        super::run(self.server, self.client, self.out, args, self.stats, id);
        crate::db::blocking::set_hold(hold);
        IN_SCRIPT.with(|s| s.set(false));
        Ok(&self.out.buf)
    }

    fn resp(&self) -> u8 {
        if self.out.resp3 {
            3
        } else {
            2
        }
    }

    fn set_resp(&mut self, resp: u8) {
        self.out.resp3 = resp == 3;
    }

    fn set_repl(&mut self, flags: u8) {
        // One stream feeds both the AOF and the replicas: a script that
        // turns either off stops recording (see README, Differences).
        crate::propagate::set_suppressed(flags != lua::REPL_AOF | lua::REPL_REPLICA);
    }

    fn acl_check(&mut self, args: &Args<'_>) -> Option<bool> {
        let t = table();
        let mut id = t.lookup(args.get(0))?;
        let mut c = t.all[id];
        // As Redis's lookupCommand: a container alone is itself, arity is
        // not checked (ACLCheckAllUserCommandPerm).
        if c.is_container() && args.len() >= 2 {
            id = t.lookup_sub(id, args.get(1))?;
            c = t.all[id];
        }
        let Some(user) = self.client.acl.user(&self.server.acl) else {
            return Some(false);
        };
        Some(user.unrestricted() || user.check(c, id, args).is_ok())
    }

    fn log(&mut self, level: u8, msg: &[u8]) {
        let msg = String::from_utf8_lossy(msg);
        match level {
            0 => tracing::debug!("{msg}"),
            1 => tracing::debug!("{msg}"),
            2 => tracing::info!("{msg}"),
            _ => tracing::warn!("{msg}"),
        }
    }

    fn interrupt(&mut self) -> bool {
        let run = &self.server.scripts.run;
        if !self.timed_out_logged {
            let threshold = self
                .server
                .scripts
                .busy_threshold_ms
                .load(Ordering::Relaxed);
            let elapsed_ms = self.server.clock.now_us().saturating_sub(self.start_us) / 1000;
            if threshold > 0 && elapsed_ms >= threshold {
                tracing::warn!(
                    "Slow script detected: still in execution after {elapsed_ms} milliseconds. You can try killing the script using the {} command.",
                    if self.eval_mode { "SCRIPT KILL" } else { "FUNCTION KILL" }
                );
                self.timed_out_logged = true;
                *self.server.scripts.current.lock() =
                    Some((self.name.to_vec(), self.caller_args.to_vec()));
                run.timed_out.store(true, Ordering::Relaxed);
            }
        }
        if run.killed.load(Ordering::Relaxed) {
            if !std::mem::replace(&mut self.kill_logged, true) {
                tracing::warn!("Lua script killed by user with SCRIPT KILL.");
            }
            return true;
        }
        false
    }

    fn let_others_in(&mut self) -> bool {
        // Past the threshold, outside EXEC (whose queue cannot be
        // suspended), as a request of an I/O thread's connection.
        if !self.timed_out_logged || super::tx::in_exec() || !crate::script::yielding::can_suspend()
        {
            return false;
        }
        // The other connections of this thread run on this thread's
        // per-command state: the script's is set aside meanwhile.
        let recording = crate::propagate::take_thread_state();
        let queued = crate::events::take_queued();
        let stashed = crate::db::blocking::take_stashed();
        let current = crate::tracking::current();
        let in_script = IN_SCRIPT.with(|c| c.replace(false));
        crate::script::yielding::suspend();
        IN_SCRIPT.with(|c| c.set(in_script));
        crate::tracking::set_current(current);
        crate::db::blocking::restore_stashed(stashed);
        crate::events::restore_queued(queued);
        crate::propagate::restore_thread_state(recording);
        true
    }
}

fn script_exists(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let eval = ctx.server.scripts.eval.lock();
    ctx.out.array(args.len() - 2);
    for a in args.iter().skip(2) {
        let found = sha_arg(a).is_some_and(|s| eval.cache.contains_key(&s));
        ctx.out.int(found as i64);
    }
}

fn script_flush(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let ok = args.len() == 2
        || (args.len() == 3
            && (args.get(2).eq_ignore_ascii_case(b"sync")
                || args.get(2).eq_ignore_ascii_case(b"async")));
    if !ok {
        return ctx.error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    }
    // Without SYNC|ASYNC lazyfree-lazy-user-flush decides; more than 64
    // cached scripts are freed in the background (Redis's
    // freeLuaScriptsAsync), counted by INFO lazyfreed_objects.
    let lazy = match args.len() {
        3 => args.get(2).eq_ignore_ascii_case(b"async"),
        _ => crate::db::lazyfree::lazy_user_flush(),
    };
    let old = std::mem::take(&mut *ctx.server.scripts.eval.lock());
    if lazy {
        let n = old.cache.len();
        crate::db::lazyfree::free_many(old, n);
    } else {
        drop(old);
    }
    ctx.server.scripts.script_flag_index.write().clear();
    ctx.out.ok();
}

fn script_load(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let mut eval = ctx.server.scripts.eval.lock();
    let r = eval.create(args.get(2));
    if let Ok(sha) = &r {
        ctx.server.scripts.note_script(&eval, sha);
    }
    drop(eval);
    match r {
        Ok(sha) => ctx.out.bulk(&sha),
        Err(e) => {
            ctx.out.error_bytes(&e);
            ctx.server.stats.record_error("ERR");
            ctx.failed = true;
        }
    }
}

fn script_kill(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    kill(ctx, true);
}

/// SCRIPT KILL / FUNCTION KILL (script.c `scriptKill`).
pub(crate) fn kill(ctx: &mut Ctx<'_>, is_eval: bool) {
    let run = &ctx.server.scripts.run;
    if !run.running.load(Ordering::Acquire) {
        return ctx.error("NOTBUSY No scripts in execution right now.");
    }
    if run.from_master.load(Ordering::Relaxed) {
        return ctx.error("UNKILLABLE The busy script was sent by a master instance in the context of replication and cannot be killed.");
    }
    if run.write_dirty.load(Ordering::Relaxed) {
        return ctx.error("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.");
    }
    let eval_mode = run.eval_mode.load(Ordering::Relaxed);
    if is_eval && !eval_mode {
        return ctx.error(
            "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.",
        );
    }
    if !is_eval && eval_mode {
        return ctx.error(
            "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
        );
    }
    run.killed.store(true, Ordering::Relaxed);
    ctx.out.ok();
}

fn script_debug(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let mode = args.get(2);
    if mode.eq_ignore_ascii_case(b"no") {
        ctx.out.ok();
    } else if mode.eq_ignore_ascii_case(b"yes") || mode.eq_ignore_ascii_case(b"sync") {
        ctx.error(
            "ERR SCRIPT DEBUG is not supported: ferrokv has no Lua debugger (use SCRIPT DEBUG NO)",
        );
    } else {
        ctx.error("ERR Use SCRIPT DEBUG YES/SYNC/NO");
    }
}

fn script_help(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    super::server::reply_help(
        ctx,
        "SCRIPT",
        &[
            "DEBUG (YES|SYNC|NO)",
            "    Set the debug mode for subsequent scripts executed.",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
        ],
    );
}

fn fcall(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    fcall_generic(ctx, args, false);
}

fn fcall_ro(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    fcall_generic(ctx, args, true);
}

/// FCALL and FCALL_RO (functions.c `fcallCommandGeneric`).
fn fcall_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, ro: bool) {
    if ctx.server.monitor_count.load(Ordering::Relaxed) > 0 {
        super::feed_monitors(ctx.server, ctx.client, args);
    }
    let _gate = (!super::tx::gate_held()).then(|| ctx.server.tx.gate_exclusive());
    let server = ctx.server.clone();
    let mut functions = server.scripts.functions.lock();
    let Some((lib, f)) = functions.find(args.get(1)) else {
        return ctx.error("ERR Function not found");
    };
    let (key, name, flags) = (lib.key(&f.name), f.name.clone(), f.flags);
    let Some(n) = crate::util::parse_i64(args.get(2)) else {
        return ctx.error("ERR Bad number of keys provided");
    };
    if n > args.len() as i64 - 3 {
        return ctx.error("ERR Number of keys can't be greater than number of args");
    }
    if n < 0 {
        return ctx.error("ERR Number of keys can't be negative");
    }
    run_in(
        ctx,
        &mut functions.lua,
        RunSpec {
            key: &key,
            name: &name,
            flags,
            ro,
            eval_mode: false,
        },
        args,
        n as usize,
    );
}

/// Publishes the library and function counts (FUNCTION STATS reads them
/// without the functions' lock, also while a function is busy).
fn publish_counts(server: &Server, f: &crate::script::functions::Functions) {
    server.scripts.sync_functions(f);
}

/// A change of the function libraries: replicated and counted like a
/// write (functions.c `server.dirty++`).
fn functions_changed(ctx: &mut Ctx<'_>) {
    crate::propagate::mark_dirty();
    ctx.dirty = Some(1);
}

fn function_load(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let mut replace = false;
    let last = args.len() - 1;
    for a in args.iter().take(last).skip(2) {
        if a.eq_ignore_ascii_case(b"replace") {
            replace = true;
            continue;
        }
        return ctx.error_with("ERR Unknown option given: ", a, "");
    }
    let server = ctx.server.clone();
    let mut f = server.scripts.functions.lock();
    match f.load(args.get(last), replace) {
        Ok(name) => {
            publish_counts(&server, &f);
            functions_changed(ctx);
            ctx.out.bulk(&name);
        }
        Err(e) => error_text(ctx, &e),
    }
}

/// Replies `-ERR <text>` (addReplyErrorSds of an error without a code).
fn error_text(ctx: &mut Ctx<'_>, text: &[u8]) {
    ctx.error_with("ERR ", text, "");
}

fn function_delete(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let server = ctx.server.clone();
    let mut f = server.scripts.functions.lock();
    if !f.delete(args.get(2)) {
        return ctx.error("ERR Library not found");
    }
    publish_counts(&server, &f);
    functions_changed(ctx);
    ctx.out.ok();
}

fn function_flush(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if args.len() > 3 {
        return ctx.sub_syntax(args, "FUNCTION");
    }
    if args.len() == 3
        && !args.get(2).eq_ignore_ascii_case(b"sync")
        && !args.get(2).eq_ignore_ascii_case(b"async")
    {
        return ctx.error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    }
    // Without SYNC|ASYNC lazyfree-lazy-user-flush decides; more than 64
    // functions are freed in the background (Redis's freeFunctionsAsync),
    // counted by INFO lazyfreed_objects.
    let lazy = match args.len() {
        3 => args.get(2).eq_ignore_ascii_case(b"async"),
        _ => crate::db::lazyfree::lazy_user_flush(),
    };
    let server = ctx.server.clone();
    let mut f = server.scripts.functions.lock();
    let old = std::mem::take(&mut *f);
    if lazy {
        let n = old.function_count();
        crate::db::lazyfree::free_many(old, n);
    } else {
        drop(old);
    }
    publish_counts(&server, &f);
    functions_changed(ctx);
    ctx.out.ok();
}

fn function_dump(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    let version = crate::persist::rdb::dump_opts(ctx.server).version;
    let payload = ctx.server.scripts.functions.lock().dump(version);
    ctx.out.bulk(&payload);
}

fn function_restore(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    use crate::script::functions::RestorePolicy;
    if args.len() > 4 {
        return ctx.sub_syntax(args, "FUNCTION");
    }
    let policy = if args.len() == 4 {
        let p = args.get(3);
        if p.eq_ignore_ascii_case(b"append") {
            RestorePolicy::Append
        } else if p.eq_ignore_ascii_case(b"replace") {
            RestorePolicy::Replace
        } else if p.eq_ignore_ascii_case(b"flush") {
            RestorePolicy::Flush
        } else {
            return ctx.error(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            );
        }
    } else {
        RestorePolicy::Append
    };
    let server = ctx.server.clone();
    let skip_crc = server.rdb.skip_checksum_validation.load(Ordering::Relaxed);
    let mut f = server.scripts.functions.lock();
    match f.restore(args.get(2), policy, skip_crc) {
        Ok(()) => {
            publish_counts(&server, &f);
            functions_changed(ctx);
            ctx.out.ok();
        }
        Err(e) => error_text(ctx, &e),
    }
}

fn function_list(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let mut with_code = false;
    let mut pattern: Option<&[u8]> = None;
    let mut i = 2;
    while i < args.len() {
        let a = args.get(i);
        if !with_code && a.eq_ignore_ascii_case(b"withcode") {
            with_code = true;
        } else if pattern.is_none() && a.eq_ignore_ascii_case(b"libraryname") {
            if i >= args.len() - 1 {
                return ctx.error("ERR library name argument was not given");
            }
            i += 1;
            pattern = Some(args.get(i));
        } else {
            return ctx.error_with("ERR Unknown argument ", a, "");
        }
        i += 1;
    }
    let f = ctx.server.scripts.functions.lock();
    let libs: Vec<_> = f
        .libraries
        .iter()
        .filter(|l| pattern.is_none_or(|p| crate::util::glob_match(p, &l.name, true)))
        .collect();
    ctx.out.array(libs.len());
    for lib in libs {
        ctx.out.map(if with_code { 4 } else { 3 });
        ctx.out.bulk(b"library_name");
        ctx.out.bulk(&lib.name);
        ctx.out.bulk(b"engine");
        ctx.out.bulk(b"LUA");
        ctx.out.bulk(b"functions");
        ctx.out.array(lib.functions.len());
        for func in &lib.functions {
            ctx.out.map(3);
            ctx.out.bulk(b"name");
            ctx.out.bulk(&func.name);
            ctx.out.bulk(b"description");
            match &func.description {
                Some(d) => ctx.out.bulk(d),
                None => ctx.out.null(),
            }
            ctx.out.bulk(b"flags");
            let names: Vec<&str> = sflags::NAMES
                .iter()
                .filter(|(b, _)| func.flags & b != 0)
                .map(|(_, n)| *n)
                .collect();
            ctx.out.set(names.len());
            for n in names {
                ctx.out.simple(n);
            }
        }
        if with_code {
            ctx.out.bulk(b"library_code");
            ctx.out.bulk(&lib.code);
        }
    }
}

fn function_stats(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    let scripts = &ctx.server.scripts;
    let run = &scripts.run;
    let running = run.running.load(Ordering::Acquire);
    if running && run.eval_mode.load(Ordering::Relaxed) {
        return ctx.error(
            "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
        );
    }
    ctx.out.map(2);
    ctx.out.bulk(b"running_script");
    let current = scripts.current.lock().clone();
    match current.filter(|_| running) {
        None => ctx.out.null(),
        Some((name, argv)) => {
            ctx.out.map(3);
            ctx.out.bulk(b"name");
            ctx.out.bulk(&name);
            ctx.out.bulk(b"command");
            ctx.out.array(argv.len());
            for a in &argv {
                ctx.out.bulk(a);
            }
            ctx.out.bulk(b"duration_ms");
            let start = run.start_us.load(Ordering::Relaxed);
            ctx.out
                .int((ctx.server.clock.now_us().saturating_sub(start) / 1000) as i64);
        }
    }
    ctx.out.bulk(b"engines");
    ctx.out.map(1);
    ctx.out.bulk(b"LUA");
    ctx.out.map(2);
    ctx.out.bulk(b"libraries_count");
    ctx.out
        .int(scripts.library_count.load(Ordering::Relaxed) as i64);
    ctx.out.bulk(b"functions_count");
    ctx.out
        .int(scripts.function_count.load(Ordering::Relaxed) as i64);
}

fn function_kill(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    kill(ctx, false);
}

fn function_help(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    super::server::reply_help(
        ctx,
        "FUNCTION",
        &[
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            "    control how to handle existing libraries (default APPEND):",
            "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            "      libraries with the new libraries (notice that even on this option there is a chance of failure",
            "      in case of functions name collision with another library).",
        ],
    );
}

/// The flags the request path applies to a script command (script.c
/// `evalGetCommandFlags` / `fcallGetCommandFlags` with
/// `scriptFlagsToCmdFlags`): a script or function that declared flags
/// replaces `stale`, `denyoom` and `write` (denyoom unless `allow-oom` or
/// `no-writes`, write unless `no-writes`, stale with `allow-stale`); an
/// unknown script or a script without shebang keeps the command's.
pub fn effective_flags(server: &Server, c: &Command, args: &Args<'_>) -> u64 {
    let declared = if c.name.starts_with("fcall") {
        server.scripts.function_flags(args.get(1))
    } else if c.name.starts_with("evalsha") {
        sha_arg(args.get(1)).and_then(|sha| server.scripts.script_flags(&sha))
    } else {
        // Only a shebang declares flags.
        let body = args.get(1);
        if !body.starts_with(b"#!") {
            return c.flags;
        }
        crate::script::parse_shebang(body)
            .ok()
            .map(|(f, _)| f)
            .filter(|f| f & sflags::EVAL_COMPAT == 0)
    };
    let Some(f) = declared else {
        return c.flags;
    };
    let mut flags = c.flags & !(STALE | DENYOOM | WRITE | MAY_REPLICATE);
    if f & (sflags::ALLOW_OOM | sflags::NO_WRITES) == 0 {
        flags |= DENYOOM;
    }
    if f & sflags::NO_WRITES == 0 {
        flags |= WRITE;
    }
    if f & sflags::ALLOW_STALE != 0 {
        flags |= STALE;
    }
    flags
}
