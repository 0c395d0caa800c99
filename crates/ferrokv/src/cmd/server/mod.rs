//! Server commands (redis.io/commands/?group=server), one file per seam:
//! `config` (CONFIG), `command` (COMMAND and its INFO / DOCS / GETKEYS /
//! LIST / COUNT), `info` (INFO), `debug` (DEBUG), `introspection` (TIME,
//! MONITOR, SLOWLOG, LATENCY), `memory` (MEMORY), `lolwut` (LOLWUT),
//! `module` (MODULE) and `shutdown` (SHUTDOWN). Each file keeps
//! its `COMMANDS` table next to its handlers; `cmd::table` gathers them.
//! This file holds what they share: the flag sets, the HELP entry and reply
//! layout, and the check of protected actions.
//!
//! Replies, error texts and INFO field names follow Redis 7.0 (server.c
//! `genRedisInfoString`, config.c, commands.c, slowlog.c, latency.c,
//! debug.c, object.c, lolwut*.c, module.c), written anew here. Where ferrokv
//! cannot do what Redis does (saving on SHUTDOWN, RDB-compressed lengths,
//! loading modules) the reply says so or the field is left out rather than
//! faked; the crate's report lists the differences.

pub mod command;
pub mod command_docs;
pub mod config;
pub mod debug;
pub mod digest;
pub mod info;
pub mod introspection;
pub mod lolwut;
pub mod memory;
pub mod module;
pub mod shutdown;

pub use info::{bytes_to_human, info_text};
pub use shutdown::shutdown_save;

use super::flags::*;
use super::{cmd, Command, Ctx};

/// Flags of commands allowed while loading and on a stale replica.
const LS: u64 = LOADING | STALE;
/// Flags of administrative commands (CONFIG, DEBUG, MONITOR, LATENCY...).
const ADMIN_CFG: u64 = ADMIN | NOSCRIPT | LOADING | STALE;
/// Tips of commands sent to every node of a cluster.
const ALL_NODES_OK: &[&str] = &["request_policy:all_nodes", "response_policy:all_succeeded"];

/// The `<container>|help` entry of a container command.
const fn help_cmd(name: &'static str, acl: u64, handler: super::Handler) -> Command {
    cmd(name, 2, LS, (0, 0, 0), acl, handler).doc(
        "server",
        "5.0.0",
        "Show helpful text about the different subcommands",
        "O(1)",
    )
}

/// Replies with Redis's HELP layout: an array of status lines, the first
/// naming the command, the last two describing HELP (`addReplyHelp`).
pub(crate) fn reply_help(ctx: &mut Ctx<'_>, name: &str, lines: &[&str]) {
    ctx.out.array(lines.len() + 3);
    ctx.out.simple(&format!(
        "{name} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ));
    for l in lines {
        ctx.out.simple(l);
    }
    ctx.out.simple("HELP");
    ctx.out.simple("    Prints this help.");
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Redis's LRU clock: seconds since the epoch in 24 bits.
fn lru_clock(now_ms: u64) -> u64 {
    (now_ms / 1000) & ((1 << 24) - 1)
}

/// True when the protected action governed by directive `name`
/// (`enable-debug-command`, `enable-protected-configs`) is allowed for the
/// calling client.
fn protected_allowed(ctx: &Ctx<'_>, name: &str) -> bool {
    let h = &ctx.client.handle;
    crate::config::protected_action_allowed(ctx.server.config.read().get(name), h.unix, &h.addr)
}

#[cfg(test)]
mod tests {
    #[test]
    fn table_has_help_for_every_container() {
        for fam in [
            super::config::COMMANDS,
            super::command::COMMANDS,
            super::info::COMMANDS,
            super::debug::COMMANDS,
            super::introspection::COMMANDS,
            super::shutdown::COMMANDS,
            super::memory::COMMANDS,
            super::lolwut::COMMANDS,
            super::module::COMMANDS,
        ] {
            for c in fam {
                if c.is_container() {
                    assert!(
                        c.subcommands.iter().any(|s| s.name.ends_with("|help")),
                        "{} has no HELP",
                        c.name
                    );
                }
            }
        }
    }
}
