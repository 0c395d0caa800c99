//! Transaction commands: MULTI, EXEC, DISCARD, WATCH, UNWATCH (Redis 7.0
//! multi.c). Queuing itself happens in [`super::execute`]: inside MULTI
//! every command except EXEC, DISCARD, MULTI, WATCH, QUIT and RESET is
//! checked (unknown command, arity, authentication, `no-multi` flag: a
//! failure flags the transaction so EXEC replies EXECABORT) and queued with
//! +QUEUED. EXEC runs the queue under the exclusive exec gate (tx.rs), so
//! the transaction is atomic for every other connection on every core;
//! a runtime error of one queued command does not stop the others.

use super::behaviour;
use super::keyspecs;
use super::{acl, cmd, flags::*, Command, Ctx};
use crate::cmd::client::ReplyMode;
use crate::resp::Args;

thread_local! {
    /// True while this thread runs the queue of an EXEC.
    static IN_EXEC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// True while this thread holds the whole gate outside an EXEC (DEBUG
    /// LOADAOF replaying the AOF, whose EVALs must not take it again).
    static GATE_HELD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The running EXEC's queue: commands and their `multi-mem`.
    static EXEC_SHAPE: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

/// While an EXEC runs on this thread: how many commands it queued and
/// their `multi-mem` (CLIENT LIST / INFO run inside the transaction show
/// them, as Redis keeps the MULTI state until EXEC is over).
pub fn exec_shape() -> Option<(usize, usize)> {
    in_exec().then(|| EXEC_SHAPE.with(|c| c.get()))
}

/// True while the current thread runs an EXEC's queued commands (ACL LOG
/// entries made then have context "multi", as Redis's CLIENT_MULTI).
pub fn in_exec() -> bool {
    IN_EXEC.with(|c| c.get())
}

/// True when this thread already holds the whole gate (an EXEC's queue,
/// or a replay under DEBUG LOADAOF): commands that take it
/// (`Transactions::gate_exclusive`) must not take it again.
pub fn gate_held() -> bool {
    in_exec() || GATE_HELD.with(|c| c.get())
}

/// Marks this thread as holding the whole gate until the returned guard
/// drops (see [`gate_held`]).
pub fn hold_gate() -> impl Drop {
    struct Held(bool);
    impl Drop for Held {
        fn drop(&mut self) {
            GATE_HELD.with(|c| c.set(self.0));
        }
    }
    Held(GATE_HELD.with(|c| c.replace(true)))
}

const TX_FLAGS: u64 = NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY;

/// Transaction commands.
pub static COMMANDS: &[Command] = &[
    cmd("multi", 1, TX_FLAGS, (0, 0, 0), acl::TRANSACTION, multi)
        .behaves(behaviour::TX_CONTROL)
        .doc(
            "transactions",
            "1.2.0",
            "Mark the start of a transaction block",
            "O(1)",
        ),
    cmd(
        "exec",
        1,
        NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG,
        (0, 0, 0),
        acl::TRANSACTION,
        exec,
    )
    .behaves(behaviour::TX_CONTROL | behaviour::RUNS_QUEUE)
    .doc(
        "transactions",
        "1.2.0",
        "Execute all commands issued after MULTI",
        "Depends on commands in the transaction",
    ),
    cmd("discard", 1, TX_FLAGS, (0, 0, 0), acl::TRANSACTION, discard)
        .behaves(behaviour::TX_CONTROL)
        .doc(
            "transactions",
            "2.0.0",
            "Discard all commands issued after MULTI",
            "O(N), when N is the number of queued commands",
        ),
    cmd("watch", -2, TX_FLAGS, (1, -1, 1), acl::TRANSACTION, watch)
        .behaves(behaviour::TX_CONTROL)
        .key_specs(keyspecs::EXISTS)
        .doc(
            "transactions",
            "2.2.0",
            "Watch the given keys to determine execution of the MULTI/EXEC block",
            "O(1) for every key.",
        )
        .key_flags(&["RO"]),
    cmd("unwatch", 1, TX_FLAGS, (0, 0, 0), acl::TRANSACTION, unwatch).doc(
        "transactions",
        "2.2.0",
        "Forget about all watched keys",
        "O(1)",
    ),
];

/// MULTI: +OK and start queuing; "ERR MULTI calls can not be nested".
fn multi(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    if ctx.client.multi.is_some() {
        return ctx.error("ERR MULTI calls can not be nested");
    }
    ctx.client.multi = Some(Default::default());
    ctx.out.ok();
}

/// DISCARD: drops the queue and every watched key; "ERR DISCARD without
/// MULTI".
fn discard(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    if ctx.client.multi.take().is_none() {
        return ctx.error("ERR DISCARD without MULTI");
    }
    crate::tx::unwatch_all(&ctx.server.tx_env(), &mut ctx.client.watch);
    ctx.out.ok();
}

/// WATCH key [key ...]: +OK; "ERR WATCH inside MULTI is not allowed".
fn watch(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if ctx.client.multi.is_some() {
        return ctx.error("ERR WATCH inside MULTI is not allowed");
    }
    let keys: Vec<&[u8]> = args.iter().skip(1).collect();
    let db = ctx.client.db;
    crate::tx::watch(
        &ctx.server.tx_env(),
        &mut ctx.client.watch,
        db,
        &keys,
        ctx.now,
    );
    ctx.out.ok();
}

/// UNWATCH: +OK, forgets every watched key.
fn unwatch(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    crate::tx::unwatch_all(&ctx.server.tx_env(), &mut ctx.client.watch);
    ctx.out.ok();
}

/// EXEC: runs the queued commands atomically and replies with an array of
/// their replies; a null array when a watched key changed (or expired);
/// "EXECABORT Transaction discarded because of previous errors." when
/// queuing failed; "ERR EXEC without MULTI".
///
/// Blocking commands inside behave as their non-blocking forms (Redis's
/// CLIENT_DENY_BLOCKING). CLIENT REPLY inside the transaction acts as in
/// Redis: OFF drops the replies that follow (the array header stays), SKIP
/// applies to the command after EXEC.
fn exec(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    let Some(m) = ctx.client.multi.take() else {
        return ctx.error("ERR EXEC without MULTI");
    };
    if m.dirty_exec {
        crate::tx::unwatch_all(&ctx.server.tx_env(), &mut ctx.client.watch);
        return ctx.error("EXECABORT Transaction discarded because of previous errors.");
    }
    // Every other command on every core finishes before this line returns
    // and none starts until `gate` drops.
    let gate = ctx.server.tx.gate_exclusive();
    let now = ctx.server.clock.now_ms();
    if crate::tx::watch_failed(&ctx.server.tx_env(), &ctx.client.watch, now) {
        crate::tx::unwatch_all(&ctx.server.tx_env(), &mut ctx.client.watch);
        drop(gate);
        ctx.out.null_array();
        return;
    }
    crate::tx::unwatch_all(&ctx.server.tx_env(), &mut ctx.client.watch);
    ctx.out.array(m.queued.len());
    let deny = std::mem::replace(&mut ctx.client.deny_blocking, true);
    let mut skip_after = false;
    // The AOF logs the transaction as one MULTI ... EXEC unit.
    let block = ctx.server.propagation.begin_block();
    IN_EXEC.with(|c| c.set(true));
    EXEC_SHAPE.with(|c| c.set((m.queued.len(), m.argv_mem)));
    // Blocked clients are served after the whole transaction (cmd/mod.rs
    // `run` serves what was stashed), from the state it left.
    let hold = crate::db::blocking::set_hold(true);
    for (id, args) in m.queued.iter() {
        let start = ctx.out.buf.len();
        let argv = args.args();
        // ACL rules may have changed since the command was queued.
        if let Some(msg) = super::exec_acl_check(ctx.server, ctx.client, *id, &argv) {
            ctx.out.error(&msg);
            ctx.server.stats.record_error(&msg);
        } else {
            super::run(ctx.server, ctx.client, ctx.out, &argv, ctx.stats, *id);
        }
        match ctx.client.reply_mode {
            ReplyMode::Off => super::drop_reply(ctx.client, ctx.out, start),
            ReplyMode::SkipNext => {
                super::drop_reply(ctx.client, ctx.out, start);
                ctx.client.reply_mode = ReplyMode::On;
                skip_after = true;
            }
            _ => {}
        }
    }
    IN_EXEC.with(|c| c.set(false));
    crate::db::blocking::set_hold(hold);
    ctx.server.propagation.end_block(block);
    ctx.client.deny_blocking = deny;
    if skip_after && ctx.client.reply_mode == ReplyMode::On {
        ctx.client.reply_mode = ReplyMode::SkipNext;
    }
    drop(gate);
}
