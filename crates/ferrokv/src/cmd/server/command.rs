//! COMMAND and its subcommands COUNT, DOCS, GETKEYS, GETKEYSANDFLAGS,
//! HELP, INFO and LIST (Redis 7.0 server.c `commandCommand` and friends):
//! the command table described in Redis 7.0's reply shapes, and the keys
//! of a full command found through its key specs.

use super::{help_cmd, reply_help, LS};
use crate::cmd::{acl, cmd, flags, table, Command, Ctx};
use crate::keyspecs;
use crate::resp::Args;

/// COMMAND subcommands.
static COMMAND_SUBS: &[Command] = &[
    cmd(
        "command|count",
        2,
        LS,
        (0, 0, 0),
        acl::CONNECTION,
        command_count,
    )
    .doc(
        "server",
        "2.8.13",
        "Get total number of Redis commands",
        "O(1)",
    ),
    cmd(
        "command|docs",
        -2,
        LS,
        (0, 0, 0),
        acl::CONNECTION,
        command_docs,
    )
    .doc(
        "server",
        "7.0.0",
        "Get array of specific Redis command documentation",
        "O(N) where N is the number of commands to look up",
    )
    .tips(&["nondeterministic_output_order"]),
    cmd(
        "command|getkeys",
        -4,
        LS,
        (0, 0, 0),
        acl::CONNECTION,
        command_getkeys,
    )
    .doc(
        "server",
        "2.8.13",
        "Extract keys given a full Redis command",
        "O(N) where N is the number of arguments to the command",
    ),
    cmd(
        "command|getkeysandflags",
        -4,
        LS,
        (0, 0, 0),
        acl::CONNECTION,
        command_getkeysandflags,
    )
    .doc(
        "server",
        "7.0.0",
        "Extract keys and access flags given a full Redis command",
        "O(N) where N is the number of arguments to the command",
    ),
    help_cmd("command|help", acl::CONNECTION, command_help),
    cmd(
        "command|info",
        -2,
        LS,
        (0, 0, 0),
        acl::CONNECTION,
        command_info,
    )
    .doc(
        "server",
        "2.8.13",
        "Get array of specific Redis command details, or all when no argument is given.",
        "O(N) where N is the number of commands to look up",
    )
    .tips(&["nondeterministic_output_order"]),
    cmd(
        "command|list",
        -2,
        LS,
        (0, 0, 0),
        acl::CONNECTION,
        command_list,
    )
    .doc(
        "server",
        "7.0.0",
        "Get an array of Redis command names",
        "O(N) where N is the total number of Redis commands",
    )
    .tips(&["nondeterministic_output_order"]),
];

/// The COMMAND family's table entry.
pub static COMMANDS: &[Command] =
    &[
        cmd("command", -1, LS, (0, 0, 0), acl::CONNECTION, command_all)
            .subs(COMMAND_SUBS)
            .doc(
                "server",
                "2.8.13",
                "Get array of Redis command details",
                "O(N) where N is the total number of Redis commands",
            )
            .tips(&["nondeterministic_output_order"]),
    ];

/// Key-spec flags derived from the command flags: a read-only command's
/// keys are `RO access`, a write command's `RW update` (Redis declares them
/// per command; e.g. DEL's are `RM delete`).
fn key_spec_flags(c: &Command) -> &'static [&'static str] {
    if !c.key_flags.is_empty() {
        c.key_flags
    } else if c.flags & flags::WRITE != 0 {
        &["RW", "update"]
    } else {
        &["RO", "access"]
    }
}

/// One COMMAND INFO entry (Redis 7.0 shape): name, arity, flags, first key,
/// last key, step, ACL categories, tips, key specs, subcommands.
fn write_command_info(ctx: &mut Ctx<'_>, c: &Command) {
    let o = &mut *ctx.out;
    o.array(10);
    o.bulk(c.name.as_bytes());
    o.int(c.arity as i64);
    // Redis 7.0 does not list may_replicate.
    let mut fl: Vec<&str> = flags::NAMES
        .iter()
        .filter(|(b, _)| c.flags & b != 0 && *b != flags::MAY_REPLICATE)
        .map(|(_, n)| *n)
        .collect();
    if c.behaviour & crate::cmd::behaviour::ASKING != 0 {
        // Redis lists `asking` right before `fast`.
        let at = flags::NAMES
            .iter()
            .take_while(|(b, _)| *b != flags::FAST)
            .filter(|(b, _)| c.flags & b != 0)
            .count();
        fl.insert(at, "asking");
    }
    o.set(fl.len());
    for f in fl {
        o.simple(f);
    }
    o.int(c.first_key as i64);
    o.int(c.last_key as i64);
    o.int(c.step as i64);
    let cats = c.acl_categories();
    let names: Vec<&str> = acl::NAMES
        .iter()
        .filter(|(b, _)| cats & b != 0)
        .map(|(_, n)| *n)
        .collect();
    o.set(names.len());
    for n in names {
        o.simple(&format!("@{n}"));
    }
    o.array(c.tips.len());
    for t in c.tips {
        o.bulk(t.as_bytes());
    }
    if !c.key_specs.is_empty() {
        write_key_specs(o, c.key_specs);
    } else if c.first_key > 0 {
        o.array(1);
        o.map(3);
        o.bulk(b"flags");
        let kf = key_spec_flags(c);
        o.set(kf.len());
        for f in kf {
            o.simple(f);
        }
        o.bulk(b"begin_search");
        o.map(2);
        o.bulk(b"type");
        o.bulk(b"index");
        o.bulk(b"spec");
        o.map(1);
        o.bulk(b"index");
        o.int(c.first_key as i64);
        o.bulk(b"find_keys");
        o.map(2);
        o.bulk(b"type");
        o.bulk(b"range");
        o.bulk(b"spec");
        o.map(3);
        o.bulk(b"lastkey");
        o.int(if c.last_key < 0 {
            c.last_key as i64
        } else {
            (c.last_key - c.first_key) as i64
        });
        o.bulk(b"keystep");
        o.int(c.step as i64);
        o.bulk(b"limit");
        o.int(0);
    } else {
        o.array(0);
    }
    o.array(c.subcommands.len());
    for s in c.subcommands {
        write_command_info(ctx, s);
    }
}

/// The key specs of COMMAND INFO as Redis 7.0's
/// `addReplyCommandKeySpecs` writes them: per spec an optional `notes`,
/// the `flags` set, `begin_search` (index / keyword / unknown) and
/// `find_keys` (range / keynum / unknown).
fn write_key_specs(o: &mut crate::resp::Out, specs: &[keyspecs::KeySpec]) {
    use keyspecs::{Begin, Find};
    o.array(specs.len());
    for s in specs {
        o.map(3 + s.notes.is_some() as usize);
        if let Some(n) = s.notes {
            o.bulk(b"notes");
            o.bulk(n.as_bytes());
        }
        o.bulk(b"flags");
        let names: Vec<&str> = keyspecs::INFO_FLAG_NAMES
            .iter()
            .filter(|(b, _)| s.flags & b != 0)
            .map(|(_, n)| *n)
            .collect();
        o.set(names.len());
        for n in names {
            o.simple(n);
        }
        o.bulk(b"begin_search");
        o.map(2);
        o.bulk(b"type");
        match s.begin {
            Begin::Index(i) => {
                o.bulk(b"index");
                o.bulk(b"spec");
                o.map(1);
                o.bulk(b"index");
                o.int(i as i64);
            }
            Begin::Keyword(k, from) => {
                o.bulk(b"keyword");
                o.bulk(b"spec");
                o.map(2);
                o.bulk(b"keyword");
                o.bulk(k);
                o.bulk(b"startfrom");
                o.int(from as i64);
            }
            Begin::Unknown => {
                o.bulk(b"unknown");
                o.bulk(b"spec");
                o.map(0);
            }
        }
        o.bulk(b"find_keys");
        o.map(2);
        o.bulk(b"type");
        match s.find {
            Find::Range { last, step, limit } => {
                o.bulk(b"range");
                o.bulk(b"spec");
                o.map(3);
                o.bulk(b"lastkey");
                o.int(last as i64);
                o.bulk(b"keystep");
                o.int(step as i64);
                o.bulk(b"limit");
                o.int(limit as i64);
            }
            Find::Keynum { idx, first, step } => {
                o.bulk(b"keynum");
                o.bulk(b"spec");
                o.map(3);
                o.bulk(b"keynumidx");
                o.int(idx as i64);
                o.bulk(b"firstkey");
                o.int(first as i64);
                o.bulk(b"keystep");
                o.int(step as i64);
            }
            Find::Unknown => {
                o.bulk(b"unknown");
                o.bulk(b"spec");
                o.map(0);
            }
        }
    }
}

/// COMMAND: COMMAND INFO of every top-level command.
fn command_all(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    let all: Vec<&Command> = table().top_level().collect();
    ctx.out.array(all.len());
    for c in all {
        write_command_info(ctx, c);
    }
}

/// COMMAND COUNT: number of top-level commands.
fn command_count(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    ctx.out.int(table().top_level().count() as i64);
}

/// COMMAND INFO [name ...]: one entry per name (nil when unknown; names may
/// be `container|sub`); every command when no name is given.
fn command_info(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if args.len() == 2 {
        return command_all(ctx, args);
    }
    ctx.out.array(args.len() - 2);
    for i in 2..args.len() {
        match table().by_full_name(args.get(i)) {
            Some(c) => write_command_info(ctx, c),
            None => ctx.out.null(),
        }
    }
}

/// One command's documentation map: Redis 7.0's own (arguments, history
/// and doc flags included; [`super::command_docs`]) for the commands it
/// has, with the subcommands ferrokv has; the table's summary, since,
/// group and complexity for the newer commands.
fn write_command_docs(ctx: &mut Ctx<'_>, c: &Command) {
    if let Some(doc) = super::command_docs::docs().get(c.name.as_bytes()) {
        let has_subs = doc
            .iter()
            .any(|(k, _)| matches!(k, super::command_docs::Node::Bulk(b"subcommands")));
        let n = doc.len() + usize::from(!has_subs && c.is_container());
        ctx.out.map(n);
        for (k, v) in doc.iter() {
            if matches!(k, super::command_docs::Node::Bulk(b"subcommands")) {
                continue;
            }
            super::command_docs::write(ctx.out, k);
            super::command_docs::write(ctx.out, v);
        }
        if c.is_container() {
            write_subcommand_docs(ctx, c);
        }
        return;
    }
    let o = &mut *ctx.out;
    o.map(if c.is_container() { 5 } else { 4 });
    o.bulk(b"summary");
    o.bulk(c.summary.as_bytes());
    o.bulk(b"since");
    o.bulk(c.since.as_bytes());
    o.bulk(b"group");
    o.bulk(c.group.as_bytes());
    o.bulk(b"complexity");
    o.bulk(c.complexity.as_bytes());
    if c.is_container() {
        write_subcommand_docs(ctx, c);
    }
}

/// The `subcommands` entry of container `c`'s documentation: each of
/// ferrokv's subcommands by full name.
fn write_subcommand_docs(ctx: &mut Ctx<'_>, c: &Command) {
    ctx.out.bulk(b"subcommands");
    ctx.out.map(c.subcommands.len());
    let order = super::command_docs::order(Some(c.name.as_bytes()));
    for s in in_redis_order(c.subcommands.iter(), &order) {
        ctx.out.bulk(s.name.as_bytes());
        write_command_docs(ctx, s);
    }
}

/// `cmds` with those named in `order` first, in that order (Redis's
/// COMMAND DOCS order), then the others in table order.
fn in_redis_order<'a>(
    cmds: impl Iterator<Item = &'a Command>,
    order: &[&[u8]],
) -> Vec<&'a Command> {
    let mut v: Vec<&Command> = cmds.collect();
    v.sort_by_key(|c| {
        order
            .iter()
            .position(|n| *n == c.name.as_bytes())
            .unwrap_or(usize::MAX)
    });
    v
}

/// COMMAND DOCS [name ...]: a map of name → documentation (Redis 7.0's
/// for its commands: summary, since, group, complexity, doc flags,
/// history, arguments, subcommands; see [`write_command_docs`]); unknown
/// names are left out.
fn command_docs(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let list: Vec<&Command> = if args.len() == 2 {
        in_redis_order(table().top_level(), &super::command_docs::order(None))
    } else {
        (2..args.len())
            .filter_map(|i| table().by_full_name(args.get(i)))
            .collect()
    };
    ctx.out.map(list.len());
    for c in list {
        ctx.out.bulk(c.name.as_bytes());
        write_command_docs(ctx, c);
    }
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN glob]:
/// names of all commands and subcommands.
fn command_list(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let t = table();
    let all = t.all.iter().copied();
    let names: Vec<&str> = match args.len() {
        2 => all.map(|c| c.name).collect(),
        5 if args.get(2).eq_ignore_ascii_case(b"filterby") => {
            let kind = args.get(3);
            let val = args.get(4);
            if kind.eq_ignore_ascii_case(b"module") {
                Vec::new()
            } else if kind.eq_ignore_ascii_case(b"aclcat") {
                match acl::NAMES
                    .iter()
                    .find(|(_, n)| n.as_bytes().eq_ignore_ascii_case(val))
                {
                    Some((bit, _)) => all
                        .filter(|c| c.acl_categories() & bit != 0)
                        .map(|c| c.name)
                        .collect(),
                    None => Vec::new(),
                }
            } else if kind.eq_ignore_ascii_case(b"pattern") {
                all.filter(|c| crate::util::glob_match(val, c.name.as_bytes(), true))
                    .map(|c| c.name)
                    .collect()
            } else {
                return ctx.syntax();
            }
        }
        _ => return ctx.syntax(),
    };
    ctx.out.array(names.len());
    for n in names {
        ctx.out.bulk(n.as_bytes());
    }
}

/// Resolves the command of a COMMAND GETKEYS request and its keys, or
/// replies Redis 7.0's error (commandGetKeys: unknown command, no key specs,
/// arity, then no key found). Some(empty) = reply an empty array
/// (a command whose keys are optional).
fn getkeys_positions(ctx: &mut Ctx<'_>, args: &Args<'_>) -> Option<crate::cmd::keyspecs::Keys> {
    let t = table();
    let sub = args.tail(2);
    let mut c = t.lookup(sub.get(0)).map(|id| (id, t.all[id]));
    if let Some((id, top)) = c {
        if top.is_container() && sub.len() >= 2 {
            c = t.lookup_sub(id, sub.get(1)).map(|s| (s, t.all[s]));
        }
    }
    let Some((_, c)) = c else {
        ctx.error("ERR Invalid command specified");
        return None;
    };
    if !c.has_keys() {
        ctx.error("ERR The command has no key arguments");
        return None;
    }
    let argc = sub.len() as i32;
    if (c.arity > 0 && argc != c.arity) || argc < -c.arity {
        ctx.error("ERR Invalid number of arguments specified for command");
        return None;
    }
    let keys = c.keys(&sub);
    if keys.is_empty() && c.flags & flags::NO_MANDATORY_KEYS == 0 {
        ctx.error("ERR Invalid arguments specified for command");
        return None;
    }
    Some(keys)
}

/// COMMAND GETKEYS command [arg ...]: the key arguments of a request.
fn command_getkeys(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(keys) = getkeys_positions(ctx, args) else {
        return;
    };
    ctx.out.array(keys.len());
    for k in keys {
        ctx.out.bulk(args.get(k.pos + 2));
    }
}

/// COMMAND GETKEYSANDFLAGS command [arg ...]: [key, [flags]] pairs.
fn command_getkeysandflags(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(keys) = getkeys_positions(ctx, args) else {
        return;
    };
    ctx.out.array(keys.len());
    for k in keys {
        ctx.out.array(2);
        ctx.out.bulk(args.get(k.pos + 2));
        let names: Vec<&str> = crate::cmd::keyspecs::flag_names(k.flags).collect();
        ctx.out.set(names.len());
        for f in names {
            ctx.out.simple(f);
        }
    }
}

fn command_help(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    reply_help(
        ctx,
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
        ],
    );
}
