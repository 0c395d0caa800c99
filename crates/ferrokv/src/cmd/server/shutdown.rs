//! SHUTDOWN (Redis 7.0 server.c `shutdownCommand`, `prepareForShutdown`):
//! the final save, the AOF's fsync and the stop of the server; also the
//! save of a shutdown by signal (`shutdown_save`).

use super::ADMIN_CFG;
use crate::cmd::{cmd, flags::*, Command, Ctx};
use crate::resp::Args;
use std::sync::atomic::Ordering;

/// The SHUTDOWN family's table entry.
pub static COMMANDS: &[Command] = &[
    cmd(
        "shutdown",
        -1,
        ADMIN_CFG | NO_MULTI | ALLOW_BUSY,
        (0, 0, 0),
        0,
        shutdown,
    )
    .doc(
        "server",
        "1.0.0",
        "Synchronously save the dataset to disk and then shut down the server",
        "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)",
    ),
];

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: stops the server; on
/// success no reply is sent and the process exits 0.
///
/// Saves the RDB first with SAVE, or without NOSAVE when save points are
/// configured (prepareForShutdown); when that save fails the server keeps
/// running and replies "Errors trying to SHUTDOWN" unless FORCE is given.
/// No shutdown is ever pending (there are no replicas to wait for), so ABORT
/// always answers "No shutdown in progress.".
fn shutdown(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let (mut nosave, mut save, mut force, mut abort) = (false, false, false, false);
    for i in 1..args.len() {
        let a = args.get(i);
        if a.eq_ignore_ascii_case(b"nosave") {
            nosave = true;
        } else if a.eq_ignore_ascii_case(b"save") {
            save = true;
        } else if a.eq_ignore_ascii_case(b"now") {
        } else if a.eq_ignore_ascii_case(b"force") {
            force = true;
        } else if a.eq_ignore_ascii_case(b"abort") {
            abort = true;
        } else {
            return ctx.syntax();
        }
    }
    if (nosave && save) || (abort && args.len() > 2) {
        return ctx.syntax();
    }
    if abort {
        ctx.error("ERR No shutdown in progress.");
        return;
    }
    if !shutdown_save(ctx.server, save, nosave) && !force {
        ctx.error("ERR Errors trying to SHUTDOWN. Check logs.");
        return;
    }
    ctx.server
        .rdb
        .shutdown_handled
        .store(true, Ordering::SeqCst);
    tracing::info!("User requested shutdown...");
    if ctx.server.propagation.on() {
        tracing::info!("Calling fsync() on the AOF file.");
        ctx.server.aof.flush_all();
    }
    ctx.client.close_after_reply = true;
    ctx.server.request_shutdown();
}

/// The save of a shutdown: done when `save`, or when save points are
/// configured and not `nosave`. Cancels a running BGSAVE first. True when
/// the shutdown may go on. Marks the shutdown as handled so the exit path
/// does not save again.
pub fn shutdown_save(server: &crate::server::Server, save: bool, nosave: bool) -> bool {
    use crate::persist::rdb;
    rdb::cancel_bgsave(server);
    let want = save || (!nosave && !rdb::save_points(server).is_empty());
    if want {
        tracing::info!("Saving the final RDB snapshot before exiting.");
        if let Err(e) = rdb::save_now(server) {
            tracing::warn!("Error trying to save the DB, can't exit. ({e})");
            return false;
        }
    }
    server.rdb.shutdown_handled.store(true, Ordering::SeqCst);
    true
}
