//! Server commands (redis.io/commands/?group=server): INFO, CONFIG, COMMAND,
//! TIME, DEBUG, MONITOR, SLOWLOG, LATENCY, SHUTDOWN, ...

use super::{acl, cmd, container, flags::*, Command, Ctx};
use crate::resp::Args;

/// CONFIG subcommands.
static CONFIG_SUBS: &[Command] = &[cmd(
    "config|get",
    -3,
    ADMIN | NOSCRIPT | LOADING | STALE,
    (0, 0, 0),
    0,
    config_get,
)
.doc(
    "server",
    "2.0.0",
    "Get the values of configuration parameters",
    "O(N) when N is the number of configuration parameters provided",
)];

/// The server family's table entries.
pub static COMMANDS: &[Command] = &[container("config", acl::SLOW, CONFIG_SUBS).doc(
    "server",
    "2.0.0",
    "A container for server configuration commands",
    "Depends on subcommand.",
)];

/// CONFIG GET pattern [pattern ...]: a map of matching directives.
fn config_get(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let mut pairs: Vec<(&'static str, String)> = Vec::new();
    {
        let c = ctx.server.config.read();
        for i in 2..args.len() {
            for (k, v) in c.matching(args.get(i)) {
                if !pairs.iter().any(|(n, _)| *n == k) {
                    pairs.push((k, v));
                }
            }
        }
    }
    ctx.out.map(pairs.len());
    for (k, v) in pairs {
        ctx.out.bulk(k.as_bytes());
        ctx.out.bulk(v.as_bytes());
    }
}
