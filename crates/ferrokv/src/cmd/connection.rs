//! Connection commands (redis.io/commands/?group=connection): PING, ECHO,
//! QUIT, SELECT, HELLO, AUTH, RESET and CLIENT.

use super::{acl, cmd, err, flags::*, Command, Ctx};
use crate::resp::Args;

/// The connection family's table entries.
pub static COMMANDS: &[Command] = &[
    cmd("ping", -1, FAST, (0, 0, 0), acl::CONNECTION, ping).doc(
        "connection",
        "1.0.0",
        "Ping the server",
        "O(1)",
    ),
    cmd("echo", 2, FAST, (0, 0, 0), acl::CONNECTION, echo).doc(
        "connection",
        "1.0.0",
        "Echo the given string",
        "O(1)",
    ),
    cmd(
        "quit",
        -1,
        ALLOW_BUSY | NO_AUTH | LOADING | STALE | FAST,
        (0, 0, 0),
        acl::CONNECTION,
        quit,
    )
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
];

/// PING [message]: +PONG, or the message as a bulk string.
fn ping(ctx: &mut Ctx<'_>, args: &Args<'_>) {
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
    if i < 0 || i as usize >= ctx.server.keyspace.db_count() {
        return ctx.error(err::DB_RANGE);
    }
    ctx.client.db = i as usize;
    ctx.out.ok();
}
