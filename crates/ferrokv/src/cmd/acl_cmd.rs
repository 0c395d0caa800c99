//! The ACL container command (redis.io/commands/acl): SETUSER, GETUSER,
//! DELUSER, USERS, LIST, WHOAMI, CAT, LOG, GENPASS, DRYRUN, SAVE, LOAD,
//! HELP. Replies and error texts follow Redis 7.0.15's `aclCommand`
//! (acl.c); the rules themselves are in `crate::acl`.

use super::{acl, cmd, container, flags::*, Command, Ctx};
use crate::acl::{merge_selector_args, Denied, Selector};
use crate::resp::Args;

const ADMIN_FLAGS: u64 = ADMIN | NOSCRIPT | LOADING | STALE;
const PLAIN: u64 = NOSCRIPT | LOADING | STALE;

const fn sub(
    name: &'static str,
    arity: i32,
    flags: u64,
    h: super::Handler,
    summary: &'static str,
    complexity: &'static str,
) -> Command {
    cmd(name, arity, flags, (0, 0, 0), 0, h).doc("server", "6.0.0", summary, complexity)
}

static ACL_SUBS: &[Command] = &[
    sub(
        "acl|cat",
        -2,
        PLAIN,
        acl_cat,
        "List the ACL categories or the commands inside a category",
        "O(1) since the categories and commands are a fixed set.",
    ),
    sub(
        "acl|deluser",
        -3,
        ADMIN_FLAGS,
        acl_deluser,
        "Remove the specified ACL users and the associated rules",
        "O(1) amortized time considering the typical user.",
    ),
    {
        let mut c = sub(
            "acl|dryrun",
            -4,
            ADMIN_FLAGS,
            acl_dryrun,
            "Returns whether the user can execute the given command without executing the command.",
            "O(1).",
        );
        c.since = "7.0.0";
        c
    },
    sub(
        "acl|genpass",
        -2,
        PLAIN,
        acl_genpass,
        "Generate a pseudorandom secure password to use for ACL users",
        "O(1)",
    ),
    sub(
        "acl|getuser",
        3,
        ADMIN_FLAGS,
        acl_getuser,
        "Get the rules for a specific ACL user",
        "O(N). Where N is the number of password, command and pattern rules that the user has.",
    ),
    sub(
        "acl|help",
        2,
        LOADING | STALE,
        acl_help,
        "Show helpful text about the different subcommands",
        "O(1)",
    ),
    sub(
        "acl|list",
        2,
        ADMIN_FLAGS,
        acl_list,
        "List the current ACL rules in ACL config file format",
        "O(N). Where N is the number of configured users.",
    ),
    sub(
        "acl|load",
        2,
        ADMIN_FLAGS,
        acl_load,
        "Reload the ACLs from the configured ACL file",
        "O(N). Where N is the number of configured users.",
    ),
    sub(
        "acl|log",
        -2,
        ADMIN_FLAGS,
        acl_log,
        "List latest events denied because of ACLs in place",
        "O(N) with N being the number of entries shown.",
    ),
    sub(
        "acl|save",
        2,
        ADMIN_FLAGS,
        acl_save,
        "Save the current ACL rules in the configured ACL file",
        "O(N). Where N is the number of configured users.",
    ),
    sub(
        "acl|setuser",
        -3,
        ADMIN_FLAGS,
        acl_setuser,
        "Modify or create the rules for a specific ACL user",
        "O(N). Where N is the number of rules provided.",
    ),
    sub(
        "acl|users",
        2,
        ADMIN_FLAGS,
        acl_users,
        "List the username of all the configured ACL rules",
        "O(N). Where N is the number of configured users.",
    ),
    sub(
        "acl|whoami",
        2,
        PLAIN,
        acl_whoami,
        "Return the name of the user associated to the current connection",
        "O(1)",
    ),
];

/// The ACL command's table entry.
pub static COMMANDS: &[Command] = &[container("acl", acl::SLOW, ACL_SUBS).doc(
    "server",
    "6.0.0",
    "A container for Access List Control commands ",
    "Depends on subcommand.",
)];

fn subcommand_syntax(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    ctx.error_with(
        "ERR unknown subcommand or wrong number of arguments for '",
        args.get(1),
        "'. Try ACL HELP.",
    );
}

/// ACL SETUSER username [rule ...]: all rules or none.
fn acl_setuser(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let name = args.get(2);
    if crate::acl::has_spaces(name) {
        return ctx.error("ERR Usernames can't contain spaces or null characters");
    }
    let rules: Vec<&[u8]> = (3..args.len()).map(|i| args.get(i)).collect();
    let ops = match merge_selector_args(&rules) {
        Ok(o) => o,
        Err(j) => {
            return ctx.error_with(
                "ERR Unmatched parenthesis in acl selector starting at '",
                rules[j],
                "'.",
            )
        }
    };
    match ctx.server.acl.set_user(name, &ops) {
        Ok(()) => {
            if let Some(u) = ctx.server.acl.get(name) {
                let me = ctx.client.handle.id;
                if crate::pubsub::kill_revoked_subscribers(&ctx.server.pubsub_env(), name, &u, me) {
                    ctx.client.close_after_reply = true;
                }
            }
            ctx.out.ok()
        }
        Err((op, e)) => {
            let msg = format!(
                "ERR Error in ACL SETUSER modifier '{}': {}",
                String::from_utf8_lossy(super::c_str(&op, usize::MAX)),
                e.message()
            );
            ctx.error(&msg);
        }
    }
}

/// ACL DELUSER username [username ...]: the number deleted; clients
/// authenticated as a deleted user are disconnected.
fn acl_deluser(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if (2..args.len()).any(|i| args.get(i) == b"default") {
        return ctx.error("ERR The 'default' user cannot be removed");
    }
    let mut n = 0;
    for i in 2..args.len() {
        let name = args.get(i);
        if ctx.server.acl.del_user(name) {
            n += 1;
            let shown = String::from_utf8_lossy(name);
            let me = ctx.client.handle.id;
            for h in ctx.server.clients.all() {
                if h.info.lock().user == shown {
                    if h.id == me {
                        ctx.client.close_after_reply = true;
                        ctx.client.authenticated = false;
                    } else {
                        h.kill();
                    }
                }
            }
        }
    }
    ctx.out.int(n);
}

fn selector_fields(ctx: &mut Ctx<'_>, s: &Selector) {
    ctx.out.bulk(b"commands");
    ctx.out.bulk(s.describe_commands().as_bytes());
    ctx.out.bulk(b"keys");
    ctx.out.bulk(s.describe_keys().as_bytes());
    ctx.out.bulk(b"channels");
    ctx.out.bulk(s.describe_channels().as_bytes());
}

/// ACL GETUSER username: flags, passwords, commands, keys, channels,
/// selectors; null for an unknown user.
fn acl_getuser(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(u) = ctx.server.acl.get(args.get(2)) else {
        return ctx.out.null();
    };
    ctx.out.map(6);
    ctx.out.bulk(b"flags");
    let f = u.flag_names();
    ctx.out.set(f.len());
    for x in f {
        ctx.out.bulk(x.as_bytes());
    }
    ctx.out.bulk(b"passwords");
    ctx.out.array(u.passwords.len());
    for p in &u.passwords {
        ctx.out.bulk(p.as_bytes());
    }
    selector_fields(ctx, &u.selectors[0]);
    ctx.out.bulk(b"selectors");
    ctx.out.array(u.selectors.len() - 1);
    for s in &u.selectors[1..] {
        ctx.out.map(3);
        selector_fields(ctx, s);
    }
}

/// ACL LIST: `user <name> <rules>` per user, sorted by name.
fn acl_list(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    let users = ctx.server.acl.users();
    ctx.out.array(users.len());
    for u in users {
        let mut line = b"user ".to_vec();
        line.extend_from_slice(&u.name);
        line.push(b' ');
        line.extend_from_slice(u.describe().as_bytes());
        ctx.out.bulk(&line);
    }
}

/// ACL USERS: the user names, sorted.
fn acl_users(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    let users = ctx.server.acl.users();
    ctx.out.array(users.len());
    for u in users {
        ctx.out.bulk(&u.name);
    }
}

/// ACL WHOAMI.
fn acl_whoami(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    let name = ctx.client.acl.user_name().to_vec();
    ctx.out.bulk(&name);
}

const NO_ACLFILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

fn aclfile(ctx: &Ctx<'_>) -> String {
    ctx.server.config.read().get("aclfile").to_string()
}

/// ACL LOAD: replaces every user with the ACL file's (all or nothing).
/// As Redis 7.0 (which frees every old user object but `default`), every
/// client authenticated as a user other than `default` is disconnected,
/// whether or not the file still defines that user.
fn acl_load(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    let path = aclfile(ctx);
    if path.is_empty() {
        return ctx.error(NO_ACLFILE);
    }
    match ctx.server.acl.load_file(&path) {
        Ok(()) => {
            let me = ctx.client.handle.id;
            for h in ctx.server.clients.all() {
                let user = h.info.lock().user.clone();
                if !user.is_empty() && user != "default" {
                    if h.id == me {
                        ctx.client.close_after_reply = true;
                    } else {
                        h.kill();
                    }
                }
            }
            ctx.out.ok()
        }
        Err(e) => ctx.error(&format!("ERR {e}")),
    }
}

/// ACL SAVE: writes every user to the ACL file.
fn acl_save(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    let path = aclfile(ctx);
    if path.is_empty() {
        return ctx.error(NO_ACLFILE);
    }
    match ctx.server.acl.save_file(&path) {
        Ok(()) => ctx.out.ok(),
        Err(e) => {
            tracing::warn!("ACL SAVE to {path}: {e}");
            ctx.error("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
        }
    }
}

/// ACL CAT [category]: the categories, or the commands of one (table
/// order; subcommands as `container|sub`).
fn acl_cat(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    match args.len() {
        2 => {
            ctx.out.array(acl::NAMES.len());
            for (_, n) in acl::NAMES {
                ctx.out.bulk(n.as_bytes());
            }
        }
        3 => {
            let Some(flag) = crate::acl::category(args.get(2)) else {
                return ctx.error_with(
                    "ERR Unknown category '",
                    super::c_str(args.get(2), 128),
                    "'",
                );
            };
            let names: Vec<&str> = super::table()
                .all
                .iter()
                .filter(|c| c.acl_categories() & flag != 0)
                .map(|c| c.name)
                .collect();
            ctx.out.array(names.len());
            for n in names {
                ctx.out.bulk(n.as_bytes());
            }
        }
        _ => subcommand_syntax(ctx, args),
    }
}

/// ACL GENPASS [bits]: a random password of bits/4 hex characters (256
/// bits by default), from the operating system's random source.
fn acl_genpass(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if args.len() > 3 {
        return subcommand_syntax(ctx, args);
    }
    let mut bits = 256i64;
    if args.len() == 3 {
        let Some(b) = super::arg_i64(ctx, args.get(2)) else {
            return;
        };
        bits = b;
    }
    if bits <= 0 || bits > 4096 {
        return ctx.error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096");
    }
    let chars = ((bits + 3) / 4) as usize;
    let mut raw = vec![0u8; chars.div_ceil(2)];
    let ok = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut raw))
        .is_ok();
    if !ok {
        for chunk in raw.chunks_mut(8) {
            let r = crate::util::rand_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }
    let mut hex = String::with_capacity(raw.len() * 2);
    for b in raw {
        hex.push_str(&format!("{b:02x}"));
    }
    hex.truncate(chars);
    ctx.out.bulk(hex.as_bytes());
}

/// ACL LOG [count | RESET]: the newest `count` (default 10) entries.
fn acl_log(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if args.len() > 3 {
        return subcommand_syntax(ctx, args);
    }
    let mut count = 10i64;
    if args.len() == 3 {
        if args.get(2).eq_ignore_ascii_case(b"reset") {
            ctx.server.acl.log.lock().clear();
            return ctx.out.ok();
        }
        let Some(n) = super::arg_i64(ctx, args.get(2)) else {
            return;
        };
        count = n.max(0);
    }
    let now = crate::util::now_ms();
    let entries: Vec<crate::acl::LogEntry> = ctx
        .server
        .acl
        .log
        .lock()
        .iter()
        .take(count as usize)
        .cloned()
        .collect();
    ctx.out.array(entries.len());
    for e in entries {
        ctx.out.map(7);
        ctx.out.bulk(b"count");
        ctx.out.int(e.count as i64);
        ctx.out.bulk(b"reason");
        ctx.out.bulk(e.reason.as_bytes());
        ctx.out.bulk(b"context");
        ctx.out.bulk(e.context.as_bytes());
        ctx.out.bulk(b"object");
        ctx.out.bulk(&e.object);
        ctx.out.bulk(b"username");
        ctx.out.bulk(&e.username);
        ctx.out.bulk(b"age-seconds");
        ctx.out
            .double(now.saturating_sub(e.ctime_ms) as f64 / 1000.0);
        ctx.out.bulk(b"client-info");
        ctx.out.bulk(e.client_info.as_bytes());
    }
}

/// ACL DRYRUN username command [arg ...]: +OK, or a bulk string saying why
/// the user could not run it. Nothing is executed or logged.
fn acl_dryrun(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(u) = ctx.server.acl.get(args.get(2)) else {
        return ctx.error_with("ERR User '", args.get(2), "' not found");
    };
    let t = super::table();
    let mut found = t.lookup(args.get(3));
    if let Some(id) = found {
        if t.all[id].is_container() && args.len() > 4 {
            found = t.lookup_sub(id, args.get(4));
        }
    }
    let Some(id) = found else {
        return ctx.error_with("ERR Command '", args.get(3), "' not found");
    };
    let c = t.all[id];
    let argv = args.tail(3);
    let argc = argv.len() as i32;
    if (c.arity > 0 && argc != c.arity) || argc < -c.arity {
        return ctx.error(&format!(
            "ERR wrong number of arguments for '{}' command",
            c.name
        ));
    }
    match u.check(c, id, &argv) {
        Ok(()) => ctx.out.ok(),
        Err(d) => {
            let mut msg = Vec::new();
            match d {
                Denied::Command => msg.extend_from_slice(
                    format!(
                        "This user has no permissions to run the '{}' command",
                        c.name
                    )
                    .as_bytes(),
                ),
                Denied::Key(i) => {
                    msg.extend_from_slice(b"This user has no permissions to access the '");
                    msg.extend_from_slice(argv.get(i));
                    msg.extend_from_slice(b"' key");
                }
                Denied::Channel(i) => {
                    msg.extend_from_slice(b"This user has no permissions to access the '");
                    msg.extend_from_slice(argv.get(i));
                    msg.extend_from_slice(b"' channel");
                }
            }
            ctx.out.bulk(&msg);
        }
    }
}

const ACL_HELP: &[&str] = &[
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Prints this help.",
];

/// ACL HELP.
fn acl_help(ctx: &mut Ctx<'_>, _args: &Args<'_>) {
    ctx.out.array(ACL_HELP.len());
    for l in ACL_HELP {
        ctx.out.simple(l);
    }
}
