//! MODULE LIST / LOAD / LOADEX / UNLOAD / HELP. ferrokv cannot load Redis
//! modules (they are shared objects written against Redis's internals), so
//! it answers as redis-server 7.0 does when loading fails (module.c
//! `moduleCommand`): LIST is empty, LOAD and LOADEX reply `ERR Error
//! loading the extension. Please check the server logs.` and log why at
//! warning level, UNLOAD finds no module with that name. LOAD, LOADEX and
//! UNLOAD are protected as in 7.0: refused unless `enable-module-command`
//! (`no` by default, `yes`, `local`) allows the caller.

use super::{help_cmd, protected_allowed, reply_help};
use crate::cmd::{acl, cmd, container, flags::*, Command, Ctx};
use crate::resp::Args;

/// Flags of MODULE LOAD / LOADEX / UNLOAD.
const LOADING_FLAGS: u64 = ADMIN | NOSCRIPT | NO_ASYNC_LOADING;

/// MODULE subcommands (Redis 7.0's flags, categories and tips).
static MODULE_SUBS: &[Command] = &[
    help_cmd("module|help", acl::SLOW, module_help),
    cmd(
        "module|list",
        2,
        ADMIN | NOSCRIPT,
        (0, 0, 0),
        0,
        module_list,
    )
    .doc(
        "server",
        "4.0.0",
        "List all modules loaded by the server",
        "O(N) where N is the number of loaded modules.",
    )
    .tips(&["nondeterministic_output_order"]),
    cmd("module|load", -3, LOADING_FLAGS, (0, 0, 0), 0, module_load).doc(
        "server",
        "4.0.0",
        "Load a module",
        "O(1)",
    ),
    cmd(
        "module|loadex",
        -3,
        LOADING_FLAGS,
        (0, 0, 0),
        0,
        module_loadex,
    )
    .doc(
        "server",
        "7.0.0",
        "Load a module with extended parameters",
        "O(1)",
    ),
    cmd(
        "module|unload",
        3,
        LOADING_FLAGS,
        (0, 0, 0),
        0,
        module_unload,
    )
    .doc("server", "4.0.0", "Unload a module", "O(1)"),
];

/// The MODULE family's table entry.
pub static COMMANDS: &[Command] = &[container("module", acl::SLOW, MODULE_SUBS).doc(
    "server",
    "4.0.0",
    "A container for module commands",
    "Depends on subcommand.",
)];

/// Redis's reply when a module cannot be loaded.
const LOAD_ERROR: &str = "ERR Error loading the extension. Please check the server logs.";

/// False (after replying Redis 7.0's refusal) when `enable-module-command`
/// does not allow this client to load or unload modules.
fn allowed(ctx: &mut Ctx<'_>) -> bool {
    if protected_allowed(ctx, "enable-module-command") {
        return true;
    }
    ctx.error("ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.");
    false
}

/// MODULE LIST: an empty array (no module is ever loaded).
fn module_list(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    ctx.out.array(0);
}

/// Logs why the module at `path` was not loaded, in Redis's words where
/// Redis has them: a file without execute permission, a file that does
/// not exist, and otherwise that ferrokv does not run Redis modules.
fn log_load_failure(path: &[u8]) {
    let p = String::from_utf8_lossy(path);
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(&*p) {
        Ok(m) if m.permissions().mode() & 0o111 == 0 => {
            tracing::warn!("Module {p} failed to load: It does not have execute permissions.");
        }
        Ok(_) => tracing::warn!(
            "Module {p} failed to load: ferrokv cannot load Redis modules (shared objects built against Redis's internals)."
        ),
        Err(e) => tracing::warn!("Module {p} failed to load: {p}: {e}"),
    }
}

/// MODULE LOAD path [arg ...]: always `ERR Error loading the extension.
/// Please check the server logs.`, the reason logged.
fn module_load(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !allowed(ctx) {
        return;
    }
    log_load_failure(args.get(2));
    ctx.error(LOAD_ERROR);
}

/// MODULE LOADEX path [CONFIG name value ...] [ARGS arg ...]: the
/// arguments are checked as Redis's `parseLoadexArguments` does (a CONFIG
/// without its name and value, or a word other than CONFIG and ARGS, is
/// logged as a syntax error), then the load fails as MODULE LOAD's.
fn module_loadex(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    if !allowed(ctx) {
        return;
    }
    let mut i = 3;
    while i < args.len() {
        let a = args.get(i);
        if a.eq_ignore_ascii_case(b"config") {
            if i + 2 >= args.len() {
                tracing::info!("CONFIG specified without name value pair");
                return ctx.error(LOAD_ERROR);
            }
            i += 3;
        } else if a.eq_ignore_ascii_case(b"args") {
            break;
        } else {
            tracing::info!(
                "Syntax Error from arguments to loadex around {}.",
                String::from_utf8_lossy(a)
            );
            return ctx.error(LOAD_ERROR);
        }
    }
    log_load_failure(args.get(2));
    ctx.error(LOAD_ERROR);
}

/// MODULE UNLOAD name: `ERR Error unloading module: no such module with
/// that name` (no module is loaded).
fn module_unload(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    if !allowed(ctx) {
        return;
    }
    ctx.error("ERR Error unloading module: no such module with that name");
}

/// MODULE HELP: Redis 7.0's help lines.
fn module_help(ctx: &mut Ctx<'_>, _: &Args<'_>) {
    reply_help(
        ctx,
        "MODULE",
        &[
            "LIST",
            "    Return a list of loaded modules.",
            "LOAD <path> [<arg> ...]",
            "    Load a module library from <path>, passing to it any optional arguments.",
            "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
            "    Load a module library from <path>, while passing it module configurations and optional arguments.",
            "UNLOAD <name>",
            "    Unload a module.",
        ],
    );
}
