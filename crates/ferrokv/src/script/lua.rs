//! The Lua 5.1 interpreter as Redis 7.0 sets it up for scripts
//! (script_lua.c, eval.c `scriptingInit`): the libraries, the `redis` API,
//! the protected globals, the conversions between Lua values and RESP
//! replies in both directions, and running a script or function with an
//! error handler and the busy-script hook.
//!
//! **Protected globals.** Redis's Lua is patched with read-only tables: the
//! globals and every table reachable from them refuse writes ("Attempt to
//! modify a readonly table") and reading a missing global is an error
//! ("Script attempted to access nonexistent global variable"). Stock Lua
//! 5.1 has no such flag, so the same behaviour is built from metatables:
//! scripts see a globals table that is an empty proxy whose `__index` is the
//! real globals and whose `__newindex` raises; every library table is
//! replaced by a proxy of the same kind. The base functions that bypass
//! metatables (`rawset`, `rawget`, `next`, `pairs`, `ipairs`,
//! `setmetatable`, `table.insert/remove/sort`) see through or
//! refuse proxies, so a script can neither change what the next script sees
//! nor tell the difference except by `getmetatable` (which answers `false`
//! for the protected tables).
//!
//! **Calling into the server.** `redis.call` and friends reach the command
//! layer through the [`Host`] of the script being run, installed for the
//! duration of [`State::run`] (a thread-local pointer: one script runs on a
//! thread at a time).

use super::ffi::{self, lua_fn, push_bytes, to_bytes, LuaResult, Raise};
use crate::resp::{Args, Out};
use mlua_sys as lua;
use mlua_sys::lua_State;
use std::cell::Cell;
use std::ffi::{c_int, CStr};

/// The command layer's side of a running script (`redis.*` calls).
pub trait Host {
    /// Runs `args` as the script's client (Redis's `scriptCall`). Ok: the
    /// reply in RESP, in the protocol [`Host::resp`] names. Err: a refusal
    /// before the command ran ("Unknown Redis command called from script",
    /// ACL, write in a read-only script...), without its `ERR` code.
    fn call(&mut self, args: &Args<'_>) -> Result<&[u8], Vec<u8>>;
    /// The script client's protocol (2 or 3, `redis.setresp`).
    fn resp(&self) -> u8;
    /// `redis.setresp(n)`.
    fn set_resp(&mut self, resp: u8);
    /// `redis.set_repl(flags)`: [`REPL_AOF`] | [`REPL_REPLICA`].
    fn set_repl(&mut self, flags: u8);
    /// `redis.acl_check_cmd(...)`: None for an unknown command.
    fn acl_check(&mut self, args: &Args<'_>) -> Option<bool>;
    /// `redis.log(level, msg)`: level 0..=3 (debug..warning).
    fn log(&mut self, level: u8, msg: &[u8]);
    /// Called every 100,000 Lua instructions: true when the script must be
    /// stopped (SCRIPT KILL / FUNCTION KILL).
    fn interrupt(&mut self) -> bool;
    /// Called by the same hook when [`Host::interrupt`] said go on: lets
    /// the other clients in while the script is past busy-reply-threshold
    /// (Redis's `processEventsWhileBlocked`), by suspending the script
    /// (script/yielding.rs) when it runs where it can be suspended. True
    /// when it was suspended (and has been resumed).
    fn let_others_in(&mut self) -> bool;
}

/// `redis.REPL_AOF`.
pub const REPL_AOF: u8 = 1;
/// `redis.REPL_REPLICA` / `REPL_SLAVE`.
pub const REPL_REPLICA: u8 = 2;

/// What a finished run wrote (into the caller's reply buffer).
#[derive(Debug, PartialEq, Eq)]
pub enum Ran {
    /// A reply that is not an error.
    Reply,
    /// An error reply (written); `counted` when the error was already
    /// counted in errorstats by the command that raised it.
    Error { code: String, counted: bool },
}

/// Which API a state offers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// EVAL's state: `redis.breakpoint`, `redis.debug`, `redis.replicate_commands`.
    Eval,
    /// The functions' state.
    Function,
}

thread_local! {
    static HOST: Cell<Option<*mut (dyn Host + 'static)>> = const { Cell::new(None) };
}

/// Installs `host` for the duration of `f` on this thread.
fn with_host<R>(host: &mut dyn Host, f: impl FnOnce() -> R) -> R {
    // SAFETY: the pointer is only dereferenced by the C functions Lua calls
    // during `f`, while `host` is mutably borrowed here; it is cleared
    // before this function returns (also on unwinding, by the guard).
    let ptr: *mut (dyn Host + '_) = host;
    let ptr: *mut (dyn Host + 'static) = unsafe { std::mem::transmute(ptr) };
    struct Reset(Option<*mut (dyn Host + 'static)>);
    impl Drop for Reset {
        fn drop(&mut self) {
            HOST.with(|h| h.set(self.0));
        }
    }
    let _reset = Reset(HOST.with(|h| h.replace(Some(ptr))));
    f()
}

/// The host of the script running on this thread.
fn current_host<'a>() -> Option<&'a mut dyn Host> {
    // SAFETY: see `with_host`; one C function uses it at a time.
    HOST.with(|h| h.get()).map(|p| unsafe { &mut *p })
}

/// Registry keys.
const REG_REAL: &CStr = c"ferrokv.real";
const REG_GLOBALS: &CStr = c"ferrokv.globals";
const REG_ERRH: &CStr = c"ferrokv.errh";
const REG_LIBAPI: &CStr = c"ferrokv.libapi";

/// A Lua state set up as Redis's (owned; closed on drop).
pub struct State {
    l: *mut lua_State,
    kind: Kind,
    /// Runs since the last incremental GC step.
    gc_count: u32,
}

// SAFETY: the state is only used by one thread at a time (callers keep it
// behind a mutex); Lua states have no thread affinity.
unsafe impl Send for State {}

impl Drop for State {
    fn drop(&mut self) {
        // SAFETY: the state is ours and not in use.
        unsafe { lua::lua_close(self.l) }
    }
}

/// The error handler scripts run under: it turns any error into a table
/// with the error text (`err`, prefixed `ERR ` unless it is already a
/// `{err=...}` table) and where the script was (`source`, `line`),
/// skipping a C function at the top (redis.call). It keeps `debug` to
/// itself and removes it from the globals, as Redis does.
/// `loadstring` and `load` that never load bytecode: a chunk starting with
/// the binary signature (ESC) is parsed as source, which fails as in
/// Redis's Lua; `load`'s pieces are joined and go through `loadstring`.
const TEXT_ONLY_LOADERS: &str = "\
local loadstring_ = loadstring
local concat = table.concat
loadstring = function(s, name)
  if type(s) == 'string' and s:byte(1) == 27 then
    return loadstring_(' ' .. s, name or s)
  end
  return loadstring_(s, name)
end
load = function(f, name)
  local parts = {}
  while true do
    local p = f()
    if p == nil or p == '' then break end
    parts[#parts + 1] = p
  end
  return loadstring(concat(parts), name or '=(load)')
end
";

const ERR_HANDLER: &str = "\
local info = debug.getinfo
debug = nil
return function(e)
  local at = info(2, 'nSl')
  if at and at.what == 'C' then
    at = info(3, 'nSl')
  end
  if type(e) ~= 'table' then
    e = {err = 'ERR ' .. tostring(e)}
  end
  if at then
    e['source'] = at.source
    e['line'] = at.currentline
  end
  return e
end
";

impl State {
    /// A new state of `kind` with Redis's libraries and API, globals
    /// protected.
    pub fn new(kind: Kind) -> State {
        // SAFETY: a fresh state, used only here until returned.
        unsafe {
            let l = lua::luaL_newstate();
            assert!(!l.is_null(), "Lua state allocation failed");
            let s = State {
                l,
                kind,
                gc_count: 0,
            };
            s.setup();
            s
        }
    }

    unsafe fn setup(&self) {
        let l = self.l;
        unsafe {
            for (name, f) in [
                (c"", lua::luaopen_base as lua::lua_CFunction),
                (c"table", lua::luaopen_table),
                (c"string", lua::luaopen_string),
                (c"math", lua::luaopen_math),
                (c"debug", lua::luaopen_debug),
                (c"cjson", super::cjson::open),
                (c"struct", super::structlib::open),
                (c"cmsgpack", super::cmsgpack::open),
                (c"bit", super::bit::open),
            ] {
                lua::lua_pushcfunction(l, f);
                lua::lua_pushstring(l, name.as_ptr());
                lua::lua_call(l, 1, 0);
            }
            // Not available to scripts (script_lua.c deny list). setfenv,
            // getfenv and newproxy are absent too, as in the redis-server
            // 7.0.15 the differential tests run against: setfenv(0, t)
            // would swap the globals of every later script of every user,
            // and a newproxy `__gc` would run inside other users' scripts.
            for name in [
                c"dofile",
                c"loadfile",
                c"print",
                c"setfenv",
                c"getfenv",
                c"newproxy",
            ] {
                lua::lua_pushnil(l);
                lua::lua_setglobal(l, name.as_ptr());
            }
            lua::lua_pushcfunction(l, lua_pcall_fn);
            lua::lua_setglobal(l, c"pcall".as_ptr());

            self.register_redis_api();

            // math.random / math.randomseed: Redis's own generator, the same
            // sequence on every platform.
            lua::lua_getglobal(l, c"math".as_ptr());
            ffi::set_fn(l, c"random", math_random);
            ffi::set_fn(l, c"randomseed", math_randomseed);
            lua::lua_pop(l, 1);

            // The error handler (removes `debug`).
            let rc = lua::luaL_loadbuffer(
                l,
                ERR_HANDLER.as_ptr() as *const _,
                ERR_HANDLER.len(),
                c"@err_handler_def".as_ptr(),
            );
            assert_eq!(rc, 0, "error handler compiles");
            lua::lua_call(l, 0, 1);
            lua::lua_pushvalue(l, -1);
            lua::lua_setfield(l, lua::LUA_REGISTRYINDEX, REG_ERRH.as_ptr());
            lua::lua_setglobal(l, c"__redis__err__handler".as_ptr());

            self.protect_globals();
            if self.kind == Kind::Function {
                self.build_library_api();
            }
        }
    }

    /// The globals FUNCTION LOAD's code sees (function_lua.c
    /// `LIBRARY_API_NAME`): only `redis`, with `register_function`, `log`
    /// and the version fields; anything else is a missing global.
    unsafe fn build_library_api(&self) {
        let l = self.l;
        unsafe {
            lua::lua_newtable(l); // the load-time globals
            lua::lua_newtable(l); // their `redis`
            ffi::set_fn(l, c"register_function", register_function);
            set_log_and_version(l);
            set_missing_metatable(l);
            lua::lua_setfield(l, -2, c"redis".as_ptr());
            set_missing_metatable(l);
            self.push_proxy_of_top();
            lua::lua_setfield(l, lua::LUA_REGISTRYINDEX, REG_LIBAPI.as_ptr());
        }
    }

    unsafe fn register_redis_api(&self) {
        let l = self.l;
        unsafe {
            lua::lua_newtable(l);
            ffi::set_fn(l, c"call", redis_call);
            ffi::set_fn(l, c"pcall", redis_pcall);
            set_log_and_version(l);
            ffi::set_fn(l, c"setresp", redis_setresp);
            ffi::set_fn(l, c"sha1hex", redis_sha1hex);
            ffi::set_fn(l, c"error_reply", redis_error_reply);
            ffi::set_fn(l, c"status_reply", redis_status_reply);
            ffi::set_fn(l, c"set_repl", redis_set_repl);
            ffi::set_num(l, c"REPL_NONE", 0.0);
            ffi::set_num(l, c"REPL_AOF", REPL_AOF as f64);
            ffi::set_num(l, c"REPL_SLAVE", REPL_REPLICA as f64);
            ffi::set_num(l, c"REPL_REPLICA", REPL_REPLICA as f64);
            ffi::set_num(l, c"REPL_ALL", (REPL_AOF | REPL_REPLICA) as f64);
            ffi::set_fn(l, c"acl_check_cmd", redis_acl_check_cmd);
            if self.kind == Kind::Eval {
                ffi::set_fn(l, c"breakpoint", redis_breakpoint);
                ffi::set_fn(l, c"debug", redis_debug);
                ffi::set_fn(l, c"replicate_commands", redis_replicate_commands);
            }
            lua::lua_setglobal(l, c"redis".as_ptr());
        }
    }

    /// Replaces every table reachable from the globals by a read-only
    /// proxy and the globals by a proxy whose misses are errors (see the
    /// module documentation).
    unsafe fn protect_globals(&self) {
        let l = self.l;
        unsafe {
            // proxy -> real table (weak keys).
            lua::lua_newtable(l);
            lua::lua_newtable(l);
            ffi::set_str(l, c"__mode", b"k");
            lua::lua_setmetatable(l, -2);
            lua::lua_setfield(l, lua::LUA_REGISTRYINDEX, REG_REAL.as_ptr());

            // Base functions that would bypass the proxies.
            for (name, f) in [
                (c"rawset", lua_rawset_fn as lua::lua_CFunction),
                (c"rawget", lua_rawget_fn),
                (c"setmetatable", lua_setmetatable_fn),
                (c"next", lua_next_fn),
                (c"pairs", lua_pairs_fn),
                (c"ipairs", lua_ipairs_fn),
            ] {
                lua::lua_getglobal(l, name.as_ptr());
                lua::lua_pushcclosure(l, f, 1);
                lua::lua_setglobal(l, name.as_ptr());
            }
            lua::lua_getglobal(l, c"unpack".as_ptr());
            lua::lua_pushcclosure(l, lua_unpack_fn, 1);
            lua::lua_setglobal(l, c"unpack".as_ptr());
            // Binary chunks are refused as Redis's Lua refuses them: the
            // bytes are parsed as source ("unexpected symbol near
            // 'char(27)'"), so crafted bytecode never runs.
            let rc = lua::luaL_loadbuffer(
                l,
                TEXT_ONLY_LOADERS.as_ptr() as *const _,
                TEXT_ONLY_LOADERS.len(),
                c"@loaders_def".as_ptr(),
            );
            assert_eq!(rc, 0, "loader wrappers compile");
            lua::lua_call(l, 0, 0);
            lua::lua_getglobal(l, c"table".as_ptr());
            for name in [c"insert", c"remove", c"sort", c"setn"] {
                lua::lua_getfield(l, -1, name.as_ptr());
                if lua::lua_isnil(l, -1) != 0 {
                    lua::lua_pop(l, 1);
                    continue;
                }
                lua::lua_pushcclosure(l, lua_table_write_fn, 1);
                lua::lua_setfield(l, -2, name.as_ptr());
            }
            lua::lua_pop(l, 1);

            // Every table value of the globals becomes a proxy.
            let g = lua::LUA_GLOBALSINDEX;
            let mut names: Vec<Vec<u8>> = Vec::new();
            lua::lua_pushnil(l);
            while lua::lua_next(l, g) != 0 {
                if lua::lua_type(l, -2) == lua::LUA_TSTRING && lua::lua_istable(l, -1) != 0 {
                    if let Some(k) = ffi::string_at(l, -2) {
                        if k != b"_G" {
                            names.push(k.to_vec());
                        }
                    }
                }
                lua::lua_pop(l, 1);
            }
            for k in &names {
                push_bytes(l, k);
                push_bytes(l, k);
                lua::lua_rawget(l, g);
                self.push_proxy_of_top();
                lua::lua_rawset(l, g);
            }
            // The string metatable's __index is the (proxied) string table.
            push_bytes(l, b"");
            if lua::lua_getmetatable(l, -1) != 0 {
                lua::lua_getglobal(l, c"string".as_ptr());
                lua::lua_setfield(l, -2, c"__index".as_ptr());
                lua::lua_pushboolean(l, 0);
                lua::lua_setfield(l, -2, c"__metatable".as_ptr());
                lua::lua_pop(l, 1);
            }
            lua::lua_pop(l, 1);

            // The real globals: misses are errors.
            lua::lua_pushvalue(l, g);
            lua::lua_newtable(l);
            lua::lua_pushcfunction(l, global_missing);
            lua::lua_setfield(l, -2, c"__index".as_ptr());
            lua::lua_setmetatable(l, -2);
            lua::lua_setfield(l, lua::LUA_REGISTRYINDEX, REG_GLOBALS.as_ptr());

            // The proxy scripts see as their globals.
            lua::lua_pushvalue(l, g);
            self.push_proxy_of_top();
            // getmetatable(_G) answers a read-only table, as Redis's
            // protected globals metatable (writing to it fails with
            // "Attempt to modify a readonly table").
            if lua::lua_getmetatable(l, -1) != 0 {
                lua::lua_newtable(l);
                lua::lua_pushcfunction(l, global_missing);
                lua::lua_setfield(l, -2, c"__index".as_ptr());
                lua::lua_pushcfunction(l, readonly_newindex);
                lua::lua_setfield(l, -2, c"__newindex".as_ptr());
                self.push_proxy_of_top();
                lua::lua_setfield(l, -2, c"__metatable".as_ptr());
                lua::lua_pop(l, 1);
            }
            lua::lua_pushvalue(l, -1);
            lua::lua_setfield(l, g, c"_G".as_ptr());
            lua::lua_replace(l, g);
        }
    }

    /// Replaces the table at the top of the stack by a read-only proxy of
    /// it (its nested tables proxied too).
    unsafe fn push_proxy_of_top(&self) {
        let l = self.l;
        unsafe {
            // Nested tables first.
            let t = lua::lua_gettop(l);
            let mut keys: Vec<Vec<u8>> = Vec::new();
            lua::lua_pushnil(l);
            while lua::lua_next(l, t) != 0 {
                if lua::lua_istable(l, -1) != 0 && lua::lua_type(l, -2) == lua::LUA_TSTRING {
                    if let Some(k) = ffi::string_at(l, -2) {
                        keys.push(k.to_vec());
                    }
                }
                lua::lua_pop(l, 1);
            }
            // Mark this table as being proxied, so a table reachable from
            // itself is proxied once.
            lua::lua_getfield(l, lua::LUA_REGISTRYINDEX, REG_REAL.as_ptr());
            lua::lua_pushvalue(l, t);
            lua::lua_pushboolean(l, 1);
            lua::lua_rawset(l, -3);
            lua::lua_pop(l, 1);
            for k in &keys {
                push_bytes(l, k);
                push_bytes(l, k);
                lua::lua_rawget(l, t);
                // Skip proxies and tables being proxied (cycles).
                lua::lua_getfield(l, lua::LUA_REGISTRYINDEX, REG_REAL.as_ptr());
                lua::lua_pushvalue(l, -2);
                lua::lua_rawget(l, -2);
                let seen = lua::lua_isnil(l, -1) == 0;
                lua::lua_pop(l, 2);
                if seen {
                    lua::lua_pop(l, 2);
                    continue;
                }
                self.push_proxy_of_top();
                lua::lua_rawset(l, t);
            }
            lua::lua_newtable(l); // proxy
            lua::lua_newtable(l); // its metatable
            lua::lua_pushvalue(l, t);
            lua::lua_setfield(l, -2, c"__index".as_ptr());
            lua::lua_pushcfunction(l, readonly_newindex);
            lua::lua_setfield(l, -2, c"__newindex".as_ptr());
            lua::lua_pushboolean(l, 0);
            lua::lua_setfield(l, -2, c"__metatable".as_ptr());
            lua::lua_setmetatable(l, -2);
            // registry.real[proxy] = table
            lua::lua_getfield(l, lua::LUA_REGISTRYINDEX, REG_REAL.as_ptr());
            lua::lua_pushvalue(l, -2);
            lua::lua_pushvalue(l, t);
            lua::lua_rawset(l, -3);
            lua::lua_pop(l, 1);
            lua::lua_replace(l, t);
        }
    }

    /// Memory used by the interpreter, bytes (`used_memory_lua`).
    pub fn memory(&self) -> u64 {
        // SAFETY: the state is valid.
        let kb = unsafe { lua::lua_gc(self.l, lua::LUA_GCCOUNT, 0) } as u64;
        let b = unsafe { lua::lua_gc(self.l, lua::LUA_GCCOUNTB, 0) } as u64;
        kb * 1024 + b
    }

    /// Compiles `body` (chunk name `chunkname`, e.g. `@user_script`) and
    /// keeps the function in the registry under `key`. Err: Lua's message
    /// ("user_script:1: ...").
    pub fn compile(&mut self, key: &CStr, body: &[u8], chunkname: &CStr) -> Result<(), Vec<u8>> {
        let l = self.l;
        // SAFETY: the state is ours; the stack is balanced on return.
        unsafe {
            if lua::luaL_loadbuffer(l, body.as_ptr() as *const _, body.len(), chunkname.as_ptr())
                != 0
            {
                let msg = to_bytes(l, -1).unwrap_or(b"").to_vec();
                lua::lua_pop(l, 1);
                return Err(msg);
            }
            lua::lua_setfield(l, lua::LUA_REGISTRYINDEX, key.as_ptr());
        }
        Ok(())
    }

    /// Runs a library's code (FUNCTION LOAD, function_lua.c
    /// `luaEngineCreate`) with the load-time globals, so that it registers
    /// its functions: each callback is kept in the registry under
    /// `fn:<library>:<function>`. Stopped after 500 ms ("FUNCTION LOAD
    /// timeout"). Err: the error text ("Error compiling function: ...",
    /// "Error registering functions: ..."); the callbacks registered so far
    /// are then forgotten.
    pub fn load_library(
        &mut self,
        library: &[u8],
        code: &[u8],
    ) -> Result<Vec<Registered>, Vec<u8>> {
        let l = self.l;
        let mut load = LoadCtx {
            library: library.to_vec(),
            functions: Vec::new(),
            start: std::time::Instant::now(),
        };
        // SAFETY: the state is ours; the stack is balanced on return.
        let r = unsafe {
            // The globals proxy always has its metatable (scripts cannot
            // replace the globals: setfenv is absent).
            if lua::lua_getmetatable(l, lua::LUA_GLOBALSINDEX) == 0 {
                return Err(b"Error registering functions: ERR globals were replaced".to_vec());
            }
            lua::lua_getfield(l, lua::LUA_REGISTRYINDEX, REG_LIBAPI.as_ptr());
            lua::lua_setfield(l, -2, c"__index".as_ptr());
            lua::lua_pop(l, 1);
            let r = if lua::luaL_loadbuffer(
                l,
                code.as_ptr() as *const _,
                code.len(),
                c"@user_function".as_ptr(),
            ) != 0
            {
                let mut e = b"Error compiling function: ".to_vec();
                e.extend_from_slice(to_bytes(l, -1).unwrap_or_default());
                Err(e)
            } else {
                LOAD.with(|c| c.set(&mut load as *mut LoadCtx));
                lua::lua_sethook(l, Some(load_hook), lua::LUA_MASKCOUNT, 100_000);
                let rc = lua::lua_pcall(l, 0, 0, 0);
                lua::lua_sethook(l, None, 0, 0);
                LOAD.with(|c| c.set(std::ptr::null_mut()));
                if rc != 0 {
                    let mut e = b"Error registering functions: ".to_vec();
                    if lua::lua_type(l, -1) == lua::LUA_TSTRING {
                        e.extend_from_slice(b"ERR ");
                        e.extend_from_slice(to_bytes(l, -1).unwrap_or_default());
                    } else if lua::lua_istable(l, -1) != 0 {
                        lua::lua_getfield(l, -1, c"err".as_ptr());
                        e.extend_from_slice(to_bytes(l, -1).unwrap_or_default());
                        lua::lua_pop(l, 1);
                    }
                    Err(e)
                } else {
                    Ok(())
                }
            };
            lua::lua_settop(l, 0);
            lua::lua_getmetatable(l, lua::LUA_GLOBALSINDEX);
            lua::lua_getfield(l, lua::LUA_REGISTRYINDEX, REG_GLOBALS.as_ptr());
            lua::lua_setfield(l, -2, c"__index".as_ptr());
            lua::lua_settop(l, 0);
            r
        };
        match r {
            Ok(()) => Ok(load.functions),
            Err(e) => {
                for f in &load.functions {
                    self.forget(&function_key(library, &f.name));
                }
                Err(e)
            }
        }
    }

    /// Forgets the function kept under `key`.
    pub fn forget(&mut self, key: &CStr) {
        // SAFETY: the state is ours.
        unsafe {
            lua::lua_pushnil(self.l);
            lua::lua_setfield(self.l, lua::LUA_REGISTRYINDEX, key.as_ptr());
        }
    }

    /// Runs the function kept under `key` (eval mode: `KEYS` and `ARGV` are
    /// globals and the function takes no argument; function mode: it takes
    /// the keys and the arguments as two tables) under the error handler,
    /// with the busy-script hook when `hook`. Writes the reply (or the
    /// error, ending with ` script: <name>, on <source>:<line>.`) into
    /// `out` (Redis's `luaCallFunction`).
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &mut self,
        key: &CStr,
        name: &[u8],
        keys: &Args<'_>,
        argv: &Args<'_>,
        eval_mode: bool,
        hook: bool,
        host: &mut dyn Host,
        out: &mut Out,
    ) -> Ran {
        let l = self.l;
        with_host(host, || {
            // SAFETY: the state is ours; the stack is balanced on return.
            unsafe {
                lua::lua_getfield(l, lua::LUA_REGISTRYINDEX, REG_ERRH.as_ptr());
                lua::lua_getfield(l, lua::LUA_REGISTRYINDEX, key.as_ptr());
                if hook {
                    lua::lua_sethook(l, Some(count_hook), lua::LUA_MASKCOUNT, 100_000);
                }
                push_array(l, keys);
                if eval_mode {
                    lua::lua_getfield(l, lua::LUA_REGISTRYINDEX, REG_GLOBALS.as_ptr());
                    lua::lua_pushvalue(l, -2);
                    lua::lua_setfield(l, -2, c"KEYS".as_ptr());
                    lua::lua_pop(l, 2);
                }
                push_array(l, argv);
                if eval_mode {
                    lua::lua_getfield(l, lua::LUA_REGISTRYINDEX, REG_GLOBALS.as_ptr());
                    lua::lua_pushvalue(l, -2);
                    lua::lua_setfield(l, -2, c"ARGV".as_ptr());
                    lua::lua_pop(l, 2);
                }
                let rc = if eval_mode {
                    lua::lua_pcall(l, 0, 1, -2)
                } else {
                    lua::lua_pcall(l, 2, 1, -4)
                };
                self.gc_count += 1;
                if self.gc_count == 50 {
                    lua::lua_gc(l, lua::LUA_GCSTEP, 50);
                    self.gc_count = 0;
                }
                let resp = current_host().map_or(2, |h| h.resp());
                let ran = if rc != 0 {
                    error_reply(l, name, out)
                } else {
                    let mut counted_error = None;
                    write_reply(l, resp, out, 0, &mut counted_error);
                    match counted_error {
                        Some((code, counted)) => Ran::Error { code, counted },
                        None => Ran::Reply,
                    }
                };
                if hook {
                    lua::lua_sethook(l, None, 0, 0);
                }
                lua::lua_settop(l, 0);
                ran
            }
        })
    }
}

/// C's `(long long)` cast of a double as x86-64 performs it: truncation,
/// and `LLONG_MIN` for NaN and out-of-range values (Rust's `as`
/// saturates instead).
pub fn c_long_long(d: f64) -> i64 {
    // 2^63: the first double past i64::MAX.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if d.is_nan() || !(-LIMIT..LIMIT).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

/// Sets `log`, the `LOG_*` levels, `REDIS_VERSION` and
/// `REDIS_VERSION_NUM` in the table at the top of the stack (script_lua.c
/// `luaRegisterLogFunction` + `luaRegisterVersion`).
unsafe fn set_log_and_version(l: *mut lua_State) {
    unsafe {
        ffi::set_fn(l, c"log", redis_log);
        ffi::set_num(l, c"LOG_DEBUG", 0.0);
        ffi::set_num(l, c"LOG_VERBOSE", 1.0);
        ffi::set_num(l, c"LOG_NOTICE", 2.0);
        ffi::set_num(l, c"LOG_WARNING", 3.0);
        ffi::set_num(l, c"REDIS_VERSION_NUM", version_num() as f64);
        ffi::set_str(l, c"REDIS_VERSION", crate::REDIS_VERSION.as_bytes());
    }
}

/// Gives the table at the top of the stack a metatable whose misses are
/// "Script attempted to access nonexistent global variable" errors
/// (script_lua.c `luaSetErrorMetatable`).
unsafe fn set_missing_metatable(l: *mut lua_State) {
    unsafe {
        lua::lua_newtable(l);
        lua::lua_pushcfunction(l, global_missing);
        lua::lua_setfield(l, -2, c"__index".as_ptr());
        lua::lua_setmetatable(l, -2);
    }
}

/// C's `(int)` of a Lua number as `luaL_checkint` does it on x86-64:
/// `(long long)` then truncation to the low 32 bits.
pub fn c_int_of(d: f64) -> c_int {
    c_long_long(d) as c_int
}

/// `REDIS_VERSION_NUM`: 0x00MMmmpp.
fn version_num() -> u32 {
    let mut parts = crate::REDIS_VERSION
        .split('.')
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (a, b, c) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    (a << 16) | (b << 8) | c
}

/// Pushes `args` as a Lua array of strings.
unsafe fn push_array(l: *mut lua_State, args: &Args<'_>) {
    unsafe {
        lua::lua_createtable(l, args.len() as c_int, 0);
        for (i, a) in args.iter().enumerate() {
            push_bytes(l, a);
            lua::lua_rawseti(l, -2, i as lua::lua_Integer + 1);
        }
    }
}

/// The error a failed run left at the top of the stack, written to `out`
/// as `-<err> script: <name>, on <source>:<line>.` (luaCallFunction).
unsafe fn error_reply(l: *mut lua_State, name: &[u8], out: &mut Out) -> Ran {
    unsafe {
        if lua::lua_istable(l, -1) == 0 {
            let msg = to_bytes(l, -1).unwrap_or(b"execution failure");
            let mut line = b"ERR Error running script ".to_vec();
            line.extend_from_slice(name);
            line.extend_from_slice(b", ");
            line.extend_from_slice(&msg[..msg.len().min(100)]);
            out.error_bytes(&line);
            return Ran::Error {
                code: "ERR".into(),
                counted: false,
            };
        }
        let field = |k: &CStr| -> Option<Vec<u8>> {
            lua::lua_getfield(l, -1, k.as_ptr());
            let v = if lua::lua_isstring(l, -1) != 0 {
                to_bytes(l, -1).map(<[u8]>::to_vec)
            } else {
                None
            };
            lua::lua_pop(l, 1);
            v
        };
        let msg = field(c"err").unwrap_or_default();
        let source = field(c"source");
        let line = field(c"line");
        lua::lua_getfield(l, -1, c"ignore_error_stats_update".as_ptr());
        let counted = lua::lua_toboolean(l, -1) != 0;
        lua::lua_pop(l, 1);
        let mut text = msg.clone();
        if let (Some(source), Some(line)) = (source, line) {
            text.extend_from_slice(b" script: ");
            text.extend_from_slice(name);
            text.extend_from_slice(b", on ");
            text.extend_from_slice(&source);
            text.push(b':');
            text.extend_from_slice(&line);
            text.push(b'.');
        }
        out.error_bytes(&text);
        Ran::Error {
            code: error_code(&msg),
            counted,
        }
    }
}

/// The code of an error text (its first word).
fn error_code(msg: &[u8]) -> String {
    let end = msg.iter().position(|&b| b == b' ').unwrap_or(msg.len());
    String::from_utf8_lossy(&msg[..end]).into_owned()
}

/// Raw field `k` of the table at `idx` pushed; returns its type.
unsafe fn raw_field(l: *mut lua_State, idx: c_int, k: &CStr) -> c_int {
    unsafe {
        let idx = if idx < 0 {
            lua::lua_gettop(l) + idx + 1
        } else {
            idx
        };
        lua::lua_pushstring(l, k.as_ptr());
        lua::lua_rawget(l, idx);
        lua::lua_type(l, -1)
    }
}

/// Converts the value at the top of the stack to a reply in `out` and pops
/// it (script_lua.c `luaReplyToRedisReply`; raw table reads, so no
/// metamethod runs outside the protected call). `resp` is the script
/// client's protocol (booleans). The first error written at depth 0 is
/// reported in `err`.
unsafe fn write_reply(
    l: *mut lua_State,
    resp: u8,
    out: &mut Out,
    depth: usize,
    err: &mut Option<(String, bool)>,
) {
    unsafe {
        if lua::lua_checkstack(l, 4) == 0 {
            out.error("ERR reached lua stack limit");
            lua::lua_pop(l, 1);
            return;
        }
        match lua::lua_type(l, -1) {
            lua::LUA_TSTRING => out.bulk(to_bytes(l, -1).unwrap_or_default()),
            lua::LUA_TBOOLEAN => {
                let b = lua::lua_toboolean(l, -1) != 0;
                if resp == 2 {
                    if b {
                        out.int(1);
                    } else {
                        out.null();
                    }
                } else {
                    out.boolean(b);
                }
            }
            lua::LUA_TNUMBER => out.int(c_long_long(lua::lua_tonumber(l, -1))),
            lua::LUA_TTABLE => {
                write_table(l, resp, out, depth, err);
                return;
            }
            _ => out.null(),
        }
        lua::lua_pop(l, 1);
    }
}

/// The number of entries of the table at `t` (`lua_next` count).
unsafe fn count_entries(l: *mut lua_State, t: c_int) -> usize {
    let mut n = 0;
    unsafe {
        lua::lua_pushnil(l);
        while lua::lua_next(l, t) != 0 {
            n += 1;
            lua::lua_pop(l, 1);
        }
    }
    n
}

unsafe fn write_table(
    l: *mut lua_State,
    resp: u8,
    out: &mut Out,
    depth: usize,
    err: &mut Option<(String, bool)>,
) {
    unsafe {
        // Error reply.
        if raw_field(l, -1, c"err") == lua::LUA_TSTRING {
            let msg = to_bytes(l, -1).unwrap_or_default().to_vec();
            lua::lua_pop(l, 1);
            let counted = raw_field(l, -1, c"ignore_error_stats_update") == lua::LUA_TBOOLEAN
                && lua::lua_toboolean(l, -1) != 0;
            lua::lua_pop(l, 1);
            out.error_bytes(&msg);
            if depth == 0 && err.is_none() {
                *err = Some((error_code(&msg), counted));
            }
            lua::lua_pop(l, 1);
            return;
        }
        lua::lua_pop(l, 1);
        // Status reply.
        if raw_field(l, -1, c"ok") == lua::LUA_TSTRING {
            let s = to_bytes(l, -1).unwrap_or_default();
            out.buf.push(b'+');
            out.buf.extend(s.iter().map(|&b| match b {
                b'\r' | b'\n' => b' ',
                b => b,
            }));
            out.buf.extend_from_slice(b"\r\n");
            lua::lua_pop(l, 2);
            return;
        }
        lua::lua_pop(l, 1);
        // Double.
        if raw_field(l, -1, c"double") == lua::LUA_TNUMBER {
            out.double(lua::lua_tonumber(l, -1));
            lua::lua_pop(l, 2);
            return;
        }
        lua::lua_pop(l, 1);
        // Big number.
        if raw_field(l, -1, c"big_number") == lua::LUA_TSTRING {
            let s: Vec<u8> = to_bytes(l, -1)
                .unwrap_or_default()
                .iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
                .collect();
            if out.resp3 {
                out.buf.push(b'(');
                out.buf.extend_from_slice(&s);
                out.buf.extend_from_slice(b"\r\n");
            } else {
                out.bulk(&s);
            }
            lua::lua_pop(l, 2);
            return;
        }
        lua::lua_pop(l, 1);
        // Verbatim string.
        if raw_field(l, -1, c"verbatim_string") == lua::LUA_TTABLE {
            if raw_field(l, -1, c"format") == lua::LUA_TSTRING {
                if raw_field(l, -2, c"string") == lua::LUA_TSTRING {
                    let fmt = to_bytes(l, -2).unwrap_or_default();
                    let s = to_bytes(l, -1).unwrap_or_default();
                    if out.resp3 {
                        let mut b = itoa::Buffer::new();
                        out.buf.push(b'=');
                        out.buf.extend_from_slice(b.format(s.len() + 4).as_bytes());
                        out.buf.extend_from_slice(b"\r\n");
                        let mut f = [b' '; 3];
                        for (i, c) in fmt.iter().take(3).enumerate() {
                            f[i] = *c;
                        }
                        out.buf.extend_from_slice(&f);
                        out.buf.push(b':');
                        out.buf.extend_from_slice(s);
                        out.buf.extend_from_slice(b"\r\n");
                    } else {
                        out.bulk(s);
                    }
                    lua::lua_pop(l, 4);
                    return;
                }
                lua::lua_pop(l, 1);
            }
            lua::lua_pop(l, 1);
        }
        lua::lua_pop(l, 1);
        // Map.
        if raw_field(l, -1, c"map") == lua::LUA_TTABLE {
            let t = lua::lua_gettop(l);
            out.map(count_entries(l, t));
            lua::lua_pushnil(l);
            while lua::lua_next(l, t) != 0 {
                lua::lua_pushvalue(l, -2);
                write_reply(l, resp, out, depth + 1, err);
                write_reply(l, resp, out, depth + 1, err);
            }
            lua::lua_pop(l, 2);
            return;
        }
        lua::lua_pop(l, 1);
        // Set.
        if raw_field(l, -1, c"set") == lua::LUA_TTABLE {
            let t = lua::lua_gettop(l);
            out.set(count_entries(l, t));
            lua::lua_pushnil(l);
            while lua::lua_next(l, t) != 0 {
                lua::lua_pop(l, 1);
                lua::lua_pushvalue(l, -1);
                write_reply(l, resp, out, depth + 1, err);
            }
            lua::lua_pop(l, 2);
            return;
        }
        lua::lua_pop(l, 1);
        // Array: up to the first nil.
        let t = lua::lua_gettop(l);
        let mut n = 0;
        loop {
            lua::lua_rawgeti(l, t, n as lua::lua_Integer + 1);
            let nil = lua::lua_isnil(l, -1) != 0;
            lua::lua_pop(l, 1);
            if nil {
                break;
            }
            n += 1;
        }
        out.array(n);
        for i in 0..n {
            lua::lua_rawgeti(l, t, i as lua::lua_Integer + 1);
            write_reply(l, resp, out, depth + 1, err);
        }
        lua::lua_pop(l, 1);
    }
}

/// Pushes the error table of error text `text` (script_lua.c
/// `luaPushErrorBuff`): "-CODE msg" keeps its code, anything else gets
/// `ERR`; trailing CR/LF trimmed.
unsafe fn push_error_table(l: *mut lua_State, text: &[u8], counted: bool) {
    let (code, msg): (&[u8], &[u8]) = match text.strip_prefix(b"-") {
        Some(rest) => match rest.iter().position(|&b| b == b' ') {
            Some(sp) => (&rest[..sp], &rest[sp + 1..]),
            None => (b"ERR", rest),
        },
        None => (b"ERR", text),
    };
    let mut end = msg.len();
    while end > 0 && (msg[end - 1] == b'\r' || msg[end - 1] == b'\n') {
        end -= 1;
    }
    let mut start = 0;
    while start < end && (msg[start] == b'\r' || msg[start] == b'\n') {
        start += 1;
    }
    let mut full = Vec::with_capacity(code.len() + 1 + end - start);
    full.extend_from_slice(code);
    full.push(b' ');
    full.extend_from_slice(&msg[start..end]);
    // Lua's lua_pushstring stops at a NUL byte, as Redis's does.
    if let Some(z) = full.iter().position(|&b| b == 0) {
        full.truncate(z);
    }
    unsafe {
        lua::lua_createtable(l, 0, 2);
        push_bytes(l, &full);
        lua::lua_setfield(l, -2, c"err".as_ptr());
        if counted {
            lua::lua_pushboolean(l, 1);
            lua::lua_setfield(l, -2, c"ignore_error_stats_update".as_ptr());
        }
    }
}

/// Parses one RESP reply at `*pos` of `buf` and pushes it as Lua values
/// (script_lua.c `redisProtocolToLuaType`): statuses `{ok=}`, errors
/// `{err=}`, nulls `false` (RESP3 null: nil), RESP3 maps `{map={}}`, sets
/// `{set={}}`, doubles `{double=}`, big numbers, verbatim strings;
/// attributes are skipped.
unsafe fn push_reply(l: *mut lua_State, buf: &[u8], pos: &mut usize) {
    fn line<'a>(buf: &'a [u8], pos: &mut usize) -> &'a [u8] {
        let start = *pos;
        let end = memchr::memchr(b'\r', &buf[start..]).map_or(buf.len(), |i| start + i);
        *pos = (end + 2).min(buf.len());
        &buf[start..end]
    }
    fn num(s: &[u8]) -> i64 {
        crate::util::parse_i64(s).unwrap_or(0)
    }
    unsafe {
        if *pos >= buf.len() {
            lua::lua_pushnil(l);
            return;
        }
        if lua::lua_checkstack(l, 5) == 0 {
            lua::lua_pushnil(l);
            return;
        }
        let t = buf[*pos];
        *pos += 1;
        match t {
            b'+' => {
                let s = line(buf, pos);
                lua::lua_createtable(l, 0, 1);
                push_bytes(l, s);
                lua::lua_setfield(l, -2, c"ok".as_ptr());
            }
            b'-' => {
                let s = line(buf, pos);
                let mut e = Vec::with_capacity(s.len() + 1);
                e.push(b'-');
                e.extend_from_slice(s);
                push_error_table(l, &e, true);
            }
            b':' => {
                let n = num(line(buf, pos));
                lua::lua_pushnumber(l, n as f64);
            }
            b'$' | b'=' => {
                let n = num(line(buf, pos));
                if n < 0 {
                    lua::lua_pushboolean(l, 0);
                    return;
                }
                let n = n as usize;
                let s = &buf[*pos..(*pos + n).min(buf.len())];
                *pos = (*pos + n + 2).min(buf.len());
                if t == b'$' {
                    push_bytes(l, s);
                } else {
                    let (fmt, body) = if s.len() >= 4 {
                        (&s[..3], &s[4..])
                    } else {
                        (s, &[][..])
                    };
                    lua::lua_createtable(l, 0, 1);
                    lua::lua_createtable(l, 0, 2);
                    push_bytes(l, body);
                    lua::lua_setfield(l, -2, c"string".as_ptr());
                    push_bytes(l, fmt);
                    lua::lua_setfield(l, -2, c"format".as_ptr());
                    lua::lua_setfield(l, -2, c"verbatim_string".as_ptr());
                }
            }
            b'*' | b'>' => {
                let n = num(line(buf, pos));
                if n < 0 {
                    lua::lua_pushboolean(l, 0);
                    return;
                }
                lua::lua_createtable(l, n.min(1024) as c_int, 0);
                for i in 0..n {
                    push_reply(l, buf, pos);
                    lua::lua_rawseti(l, -2, i as lua::lua_Integer + 1);
                }
            }
            b'%' => {
                let n = num(line(buf, pos));
                lua::lua_createtable(l, 0, 1);
                lua::lua_createtable(l, 0, n.min(1024) as c_int);
                for _ in 0..n {
                    push_reply(l, buf, pos);
                    push_reply(l, buf, pos);
                    lua::lua_settable(l, -3);
                }
                lua::lua_setfield(l, -2, c"map".as_ptr());
            }
            b'~' => {
                let n = num(line(buf, pos));
                lua::lua_createtable(l, 0, 1);
                lua::lua_createtable(l, 0, n.min(1024) as c_int);
                for _ in 0..n {
                    push_reply(l, buf, pos);
                    lua::lua_pushboolean(l, 1);
                    lua::lua_settable(l, -3);
                }
                lua::lua_setfield(l, -2, c"set".as_ptr());
            }
            b'_' => {
                line(buf, pos);
                lua::lua_pushnil(l);
            }
            b'#' => {
                let s = line(buf, pos);
                lua::lua_pushboolean(l, (s == b"t") as c_int);
            }
            b',' => {
                let s = line(buf, pos);
                let d = match s {
                    b"inf" => f64::INFINITY,
                    b"-inf" => f64::NEG_INFINITY,
                    b"nan" | b"-nan" => f64::NAN,
                    _ => crate::util::parse_f64(s).unwrap_or(0.0),
                };
                lua::lua_createtable(l, 0, 1);
                lua::lua_pushnumber(l, d);
                lua::lua_setfield(l, -2, c"double".as_ptr());
            }
            b'(' => {
                let s = line(buf, pos);
                lua::lua_createtable(l, 0, 1);
                push_bytes(l, s);
                lua::lua_setfield(l, -2, c"big_number".as_ptr());
            }
            b'|' => {
                let n = num(line(buf, pos));
                let top = lua::lua_gettop(l);
                for _ in 0..n * 2 {
                    push_reply(l, buf, pos);
                }
                lua::lua_settop(l, top);
                push_reply(l, buf, pos);
            }
            _ => {
                *pos = buf.len();
                lua::lua_pushnil(l);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// redis.* functions

/// Copies the call's arguments into `buf`/`ranges` (numbers as `%.17g`,
/// as Redis's `luaArgsToRedisArgv`). Err: the error text.
unsafe fn collect_args(
    l: *mut lua_State,
    buf: &mut Vec<u8>,
    ranges: &mut Vec<(u32, u32)>,
) -> Result<(), &'static [u8]> {
    unsafe {
        let argc = lua::lua_gettop(l);
        if argc == 0 {
            return Err(b"Please specify at least one argument for this redis lib call");
        }
        for j in 1..=argc {
            let start = buf.len() as u32;
            if lua::lua_type(l, j) == lua::LUA_TNUMBER {
                crate::util::fmt_double_17g(lua::lua_tonumber(l, j), buf);
            } else {
                match to_bytes(l, j) {
                    Some(s) => buf.extend_from_slice(s),
                    None => {
                        return Err(b"Lua redis lib command arguments must be strings or integers")
                    }
                }
            }
            ranges.push((start, buf.len() as u32));
        }
        Ok(())
    }
}

unsafe fn redis_generic(l: *mut lua_State, raise: bool) -> LuaResult {
    unsafe {
        let Some(h) = current_host() else {
            push_error_table(
                l,
                b"redis.call/pcall can only be called inside a script invocation",
                false,
            );
            return Err(Raise::Pushed);
        };
        // The argument buffers are reused from call to call (they go back
        // to ARGS before this function returns, also on errors).
        let (mut buf, mut ranges) = ARGS.with(|a| std::mem::take(&mut *a.borrow_mut()));
        buf.clear();
        ranges.clear();
        let r = redis_call_with(l, raise, h, &mut buf, &mut ranges);
        ARGS.with(|a| *a.borrow_mut() = (buf, ranges));
        r
    }
}

/// Argument bytes and their ranges (an [`Args`] in the making).
type ArgBuffers = (Vec<u8>, Vec<(u32, u32)>);

thread_local! {
    /// Reused argument buffers of `redis.call`.
    static ARGS: std::cell::RefCell<ArgBuffers> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

unsafe fn redis_call_with(
    l: *mut lua_State,
    raise: bool,
    h: &mut dyn Host,
    buf: &mut Vec<u8>,
    ranges: &mut Vec<(u32, u32)>,
) -> LuaResult {
    unsafe {
        if let Err(msg) = collect_args(l, buf, ranges) {
            lua::lua_settop(l, 0);
            push_error_table(l, msg, false);
            return if raise { Err(Raise::Pushed) } else { Ok(1) };
        }
        lua::lua_settop(l, 0);
        let args = Args::new(buf, ranges);
        let failed = match h.call(&args) {
            Err(msg) => {
                push_error_table(l, &msg, true);
                true
            }
            Ok(reply) => {
                let mut pos = 0;
                push_reply(l, reply, &mut pos);
                reply.first() == Some(&b'-')
            }
        };
        if raise && failed {
            Err(Raise::Pushed)
        } else {
            Ok(1)
        }
    }
}

lua_fn!(redis_call, |l| redis_generic(l, true));
lua_fn!(redis_pcall, |l| redis_generic(l, false));

/// Redis's `pcall`: a `{err=...}` error object becomes its text (Redis 7's
/// error objects are tables; scripts written for older versions compare
/// strings).
unsafe fn pcall_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        let argc = lua::lua_gettop(l);
        if argc == 0 {
            return Err(Raise::Arg(1, c"value expected"));
        }
        lua::lua_pushboolean(l, 1);
        lua::lua_insert(l, 1);
        if lua::lua_pcall(l, argc - 1, lua::LUA_MULTRET, 0) != 0 {
            lua::lua_remove(l, 1);
            if lua::lua_istable(l, -1) != 0 {
                lua::lua_getfield(l, -1, c"err".as_ptr());
                if lua::lua_isstring(l, -1) != 0 {
                    lua::lua_replace(l, -2);
                } else {
                    lua::lua_pop(l, 1);
                }
            }
            lua::lua_pushboolean(l, 0);
            lua::lua_insert(l, 1);
        }
        Ok(lua::lua_gettop(l))
    }
}
lua_fn!(lua_pcall_fn, pcall_impl);

unsafe fn sha1hex_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        if lua::lua_gettop(l) != 1 {
            push_error_table(l, b"wrong number of arguments", false);
            return Err(Raise::Pushed);
        }
        let s = to_bytes(l, 1).unwrap_or_default();
        let hex = super::sha1_hex(s);
        push_bytes(l, &hex);
        Ok(1)
    }
}
lua_fn!(redis_sha1hex, sha1hex_impl);

unsafe fn error_reply_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        if lua::lua_gettop(l) != 1 || lua::lua_type(l, -1) != lua::LUA_TSTRING {
            push_error_table(l, b"wrong number or type of arguments", false);
            return Ok(1);
        }
        let s = to_bytes(l, -1).unwrap_or_default();
        let s = &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())];
        let mut e = Vec::with_capacity(s.len() + 1);
        if s.first() != Some(&b'-') {
            e.push(b'-');
        }
        e.extend_from_slice(s);
        push_error_table(l, &e, false);
        Ok(1)
    }
}
lua_fn!(redis_error_reply, error_reply_impl);

unsafe fn status_reply_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        if lua::lua_gettop(l) != 1 || lua::lua_type(l, -1) != lua::LUA_TSTRING {
            push_error_table(l, b"wrong number or type of arguments", false);
            return Ok(1);
        }
        lua::lua_createtable(l, 0, 1);
        lua::lua_pushvalue(l, -2);
        lua::lua_setfield(l, -2, c"ok".as_ptr());
        Ok(1)
    }
}
lua_fn!(redis_status_reply, status_reply_impl);

/// Raises `{err="ERR <msg>"}` as `luaPushError` + `luaError` do.
unsafe fn raise_table(l: *mut lua_State, msg: &[u8]) -> LuaResult {
    unsafe { push_error_table(l, msg, false) };
    Err(Raise::Pushed)
}

unsafe fn setresp_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        let Some(h) = current_host() else {
            return raise_table(
                l,
                b"redis.setresp can only be called inside a script invocation",
            );
        };
        if lua::lua_gettop(l) != 1 {
            return raise_table(l, b"redis.setresp() requires one argument.");
        }
        let resp = lua::lua_tonumber(l, -1) as c_int;
        if resp != 2 && resp != 3 {
            return raise_table(l, b"RESP version must be 2 or 3.");
        }
        h.set_resp(resp as u8);
        Ok(0)
    }
}
lua_fn!(redis_setresp, setresp_impl);

unsafe fn set_repl_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        let Some(h) = current_host() else {
            return raise_table(
                l,
                b"redis.set_repl can only be called inside a script invocation",
            );
        };
        if lua::lua_gettop(l) != 1 {
            return raise_table(l, b"redis.set_repl() requires two arguments.");
        }
        let flags = lua::lua_tonumber(l, -1) as c_int;
        if flags & !((REPL_AOF | REPL_REPLICA) as c_int) != 0 {
            return raise_table(
                l,
                b"Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
            );
        }
        h.set_repl(flags as u8);
        Ok(0)
    }
}
lua_fn!(redis_set_repl, set_repl_impl);

unsafe fn acl_check_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        let Some(h) = current_host() else {
            return raise_table(
                l,
                b"redis.acl_check_cmd can only be called inside a script invocation",
            );
        };
        let mut buf = Vec::new();
        let mut ranges = Vec::new();
        if let Err(msg) = collect_args(l, &mut buf, &mut ranges) {
            lua::lua_settop(l, 0);
            return raise_table(l, msg);
        }
        lua::lua_settop(l, 0);
        match h.acl_check(&Args::new(&buf, &ranges)) {
            None => raise_table(l, b"Invalid command passed to redis.acl_check_cmd()"),
            Some(ok) => {
                lua::lua_pushboolean(l, ok as c_int);
                Ok(1)
            }
        }
    }
}
lua_fn!(redis_acl_check_cmd, acl_check_impl);

unsafe fn log_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        let argc = lua::lua_gettop(l);
        if argc < 2 {
            return raise_table(l, b"redis.log() requires two arguments or more.");
        }
        if lua::lua_isnumber(l, 1) == 0 {
            return raise_table(l, b"First argument must be a number (log level).");
        }
        let level = lua::lua_tonumber(l, 1) as c_int;
        if !(0..=3).contains(&level) {
            return raise_table(l, b"Invalid debug level.");
        }
        let mut msg = Vec::new();
        for j in 2..=argc {
            if let Some(s) = to_bytes(l, j) {
                if j != 2 {
                    msg.push(b' ');
                }
                msg.extend_from_slice(s);
            }
        }
        if let Some(h) = current_host() {
            h.log(level as u8, &msg);
        }
        Ok(0)
    }
}
lua_fn!(redis_log, log_impl);

unsafe fn false_impl(l: *mut lua_State) -> LuaResult {
    unsafe { lua::lua_pushboolean(l, 0) };
    Ok(1)
}
lua_fn!(redis_breakpoint, false_impl);

unsafe fn nothing_impl(_l: *mut lua_State) -> LuaResult {
    Ok(0)
}
lua_fn!(redis_debug, nothing_impl);

unsafe fn true_impl(l: *mut lua_State) -> LuaResult {
    unsafe { lua::lua_pushboolean(l, 1) };
    Ok(1)
}
lua_fn!(redis_replicate_commands, true_impl);

// ---------------------------------------------------------------------------
// math.random: Redis's rand48 (rand.c), one sequence per process.

static RAND48: parking_lot::Mutex<u64> = parking_lot::Mutex::new(0x1234_ABCD_330E);

fn lrand48() -> i32 {
    let mut x = RAND48.lock();
    *x = (x.wrapping_mul(0x5_DEEC_E66D).wrapping_add(0xB)) & ((1 << 48) - 1);
    (*x >> 17) as i32
}

unsafe fn random_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        if current_host().is_none() {
            return Err(ffi::error_at(
                l,
                1,
                b"math.random can only be called inside a script invocation",
            ));
        }
        const MAX: i64 = i32::MAX as i64;
        let r = (lrand48() as i64 % MAX) as f64 / MAX as f64;
        match lua::lua_gettop(l) {
            0 => lua::lua_pushnumber(l, r),
            1 => {
                let u = c_int_of(ffi::check_number(l, 1)?);
                if u < 1 {
                    return Err(Raise::Arg(1, c"interval is empty"));
                }
                lua::lua_pushnumber(l, (r * u as f64).floor() + 1.0);
            }
            2 => {
                let lo = c_int_of(ffi::check_number(l, 1)?);
                let u = c_int_of(ffi::check_number(l, 2)?);
                if lo > u {
                    return Err(Raise::Arg(2, c"interval is empty"));
                }
                lua::lua_pushnumber(l, (r * (u as f64 - lo as f64 + 1.0)).floor() + lo as f64);
            }
            _ => return Err(ffi::error_at(l, 1, b"wrong number of arguments")),
        }
        Ok(1)
    }
}
lua_fn!(math_random, random_impl);

unsafe fn randomseed_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        if current_host().is_none() {
            return Err(ffi::error_at(
                l,
                1,
                b"math.randomseed can only be called inside a script invocation",
            ));
        }
        let seed = c_int_of(ffi::check_number(l, 1)?) as u32 as u64;
        *RAND48.lock() = (seed << 16) | 0x330E;
        Ok(0)
    }
}
lua_fn!(math_randomseed, randomseed_impl);

// ---------------------------------------------------------------------------
// FUNCTION LOAD.

/// A function registered by a library's code.
#[derive(Debug, Clone)]
pub struct Registered {
    /// Its name.
    pub name: Vec<u8>,
    /// Its description, when given.
    pub description: Option<Vec<u8>>,
    /// Its script flags (`flags = {...}`).
    pub flags: u32,
}

/// The registry key of function `name` of `library`:
/// `fn:<library>:<name>` (names are letters, digits and `_`).
pub fn function_key(library: &[u8], name: &[u8]) -> std::ffi::CString {
    let mut k = b"fn:".to_vec();
    k.extend_from_slice(library);
    k.push(b':');
    k.extend_from_slice(name);
    std::ffi::CString::new(k).unwrap_or_default()
}

/// True for a valid function or library name: `[A-Za-z0-9_]+`
/// (functions.c `functionsVerifyName`).
pub fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The library being loaded (function_lua.c `loadCtx`).
struct LoadCtx {
    library: Vec<u8>,
    functions: Vec<Registered>,
    start: std::time::Instant,
}

thread_local! {
    static LOAD: Cell<*mut LoadCtx> = const { Cell::new(std::ptr::null_mut()) };
}

/// Stops a library's code that runs longer than 500 ms.
unsafe extern "C-unwind" fn load_hook(l: *mut lua_State, _ar: *mut lua::lua_Debug) {
    // SAFETY: called by Lua; nothing with a destructor is alive when
    // lua_error leaves.
    unsafe {
        let p = LOAD.with(Cell::get);
        if !p.is_null() && (*p).start.elapsed() > std::time::Duration::from_millis(500) {
            lua::lua_sethook(l, Some(load_hook), lua::LUA_MASKLINE, 0);
            push_error_table(l, b"FUNCTION LOAD timeout", false);
            lua::lua_error(l);
        }
    }
}

/// Reads `flags = {...}` at the top of the stack: Err when a flag is
/// unknown or not a string.
unsafe fn read_flags(l: *mut lua_State) -> Result<u32, ()> {
    let mut f = 0;
    unsafe {
        let mut i = 1;
        loop {
            lua::lua_rawgeti(l, -1, i);
            i += 1;
            if lua::lua_isnil(l, -1) != 0 {
                lua::lua_pop(l, 1);
                return Ok(f);
            }
            let flag = if lua::lua_isstring(l, -1) != 0 {
                to_bytes(l, -1).and_then(|s| {
                    super::flags::NAMES
                        .iter()
                        .find(|(_, n)| n.as_bytes().eq_ignore_ascii_case(s))
                        .map(|(x, _)| *x)
                })
            } else {
                None
            };
            lua::lua_pop(l, 1);
            f |= flag.ok_or(())?;
        }
    }
}

/// `redis.register_function(name, callback)` or
/// `redis.register_function{function_name=, callback=, flags=, description=}`
/// (function_lua.c `luaRegisterFunction`).
unsafe fn register_function_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        let p = LOAD.with(Cell::get);
        if p.is_null() {
            return raise_table(
                l,
                b"redis.register_function can only be called on FUNCTION LOAD command",
            );
        }
        let load = &mut *p;
        let argc = lua::lua_gettop(l);
        if !(1..=2).contains(&argc) {
            return raise_table(l, b"wrong number of arguments to redis.register_function");
        }
        let mut name: Option<Vec<u8>> = None;
        let mut description = None;
        let mut flags = 0;
        // The callback is left at stack index `cb` once found.
        let cb;
        if argc == 2 {
            match (lua::lua_isstring(l, 1) != 0)
                .then(|| to_bytes(l, 1))
                .flatten()
            {
                Some(n) => name = Some(n.to_vec()),
                None => {
                    return raise_table(
                        l,
                        b"first argument to redis.register_function must be a string",
                    )
                }
            }
            if lua::lua_isfunction(l, 2) == 0 {
                return raise_table(
                    l,
                    b"second argument to redis.register_function must be a function",
                );
            }
            cb = 2;
        } else {
            if lua::lua_istable(l, 1) == 0 {
                return raise_table(l, b"calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).");
            }
            let mut found = false;
            // Slot 2 receives the callback.
            lua::lua_settop(l, 2);
            lua::lua_pushnil(l);
            while lua::lua_next(l, 1) != 0 {
                if lua::lua_isstring(l, -2) == 0 {
                    return raise_table(
                        l,
                        b"named argument key given to redis.register_function is not a string",
                    );
                }
                // Copy the key: tolstring may not convert it in place
                // during the traversal.
                lua::lua_pushvalue(l, -2);
                let key = to_bytes(l, -1).unwrap_or_default().to_ascii_lowercase();
                lua::lua_pop(l, 1);
                match key.as_slice() {
                    b"function_name" => match (lua::lua_isstring(l, -1) != 0).then(|| to_bytes(l, -1)).flatten() {
                        Some(n) => name = Some(n.to_vec()),
                        None => return raise_table(l, b"function_name argument given to redis.register_function must be a string"),
                    },
                    b"description" => match (lua::lua_isstring(l, -1) != 0).then(|| to_bytes(l, -1)).flatten() {
                        Some(d) => description = Some(d.to_vec()),
                        None => return raise_table(l, b"description argument given to redis.register_function must be a string"),
                    },
                    b"callback" => {
                        if lua::lua_isfunction(l, -1) == 0 {
                            return raise_table(l, b"callback argument given to redis.register_function must be a function");
                        }
                        found = true;
                        lua::lua_pushvalue(l, -1);
                        lua::lua_replace(l, 2);
                    }
                    b"flags" => {
                        if lua::lua_istable(l, -1) == 0 {
                            return raise_table(l, b"flags argument to redis.register_function must be a table representing function flags");
                        }
                        match read_flags(l) {
                            Ok(f) => flags = f,
                            Err(()) => return raise_table(l, b"unknown flag given"),
                        }
                    }
                    _ => return raise_table(l, b"unknown argument given to redis.register_function"),
                }
                lua::lua_pop(l, 1);
            }
            let Some(_) = name else {
                return raise_table(
                    l,
                    b"redis.register_function must get a function name argument",
                );
            };
            if !found {
                return raise_table(l, b"redis.register_function must get a callback argument");
            }
            cb = 2;
        }
        let name = name.unwrap_or_default();
        if !valid_name(&name) {
            // Redis 7.0 reports an invalid function name with the library text.
            return raise_table(l, b"Library names can only contain letters, numbers, or underscores(_) and must be at least one character long");
        }
        if load.functions.iter().any(|f| f.name == name) {
            return raise_table(l, b"Function already exists in the library");
        }
        let key = function_key(&load.library, &name);
        lua::lua_pushvalue(l, cb);
        lua::lua_setfield(l, lua::LUA_REGISTRYINDEX, key.as_ptr());
        load.functions.push(Registered {
            name,
            description,
            flags,
        });
        Ok(0)
    }
}
lua_fn!(register_function, register_function_impl);

// ---------------------------------------------------------------------------
// Protection.

/// Pushes the real table behind the proxy at `idx`, or nothing (returns
/// false) when it is not a proxy.
unsafe fn push_real(l: *mut lua_State, idx: c_int) -> bool {
    unsafe {
        if lua::lua_istable(l, idx) == 0 {
            return false;
        }
        let idx = if idx < 0 {
            lua::lua_gettop(l) + idx + 1
        } else {
            idx
        };
        lua::lua_getfield(l, lua::LUA_REGISTRYINDEX, REG_REAL.as_ptr());
        lua::lua_pushvalue(l, idx);
        lua::lua_rawget(l, -2);
        lua::lua_remove(l, -2);
        if lua::lua_istable(l, -1) == 0 {
            lua::lua_pop(l, 1);
            return false;
        }
        true
    }
}

unsafe fn is_protected(l: *mut lua_State, idx: c_int) -> bool {
    unsafe {
        if push_real(l, idx) {
            lua::lua_pop(l, 1);
            return true;
        }
        false
    }
}

const READONLY: &[u8] = b"Attempt to modify a readonly table";

unsafe fn newindex_impl(l: *mut lua_State) -> LuaResult {
    // Level 1: the Lua code that assigned (level 0 is this function).
    Err(unsafe { ffi::error_at(l, 1, READONLY) })
}
lua_fn!(readonly_newindex, newindex_impl);

unsafe fn missing_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        let name = to_bytes(l, 2).unwrap_or_default();
        let mut msg = b"Script attempted to access nonexistent global variable '".to_vec();
        msg.extend_from_slice(name);
        msg.push(b'\'');
        Err(ffi::error_at(l, 1, &msg))
    }
}
lua_fn!(global_missing, missing_impl);

/// Calls upvalue 1 (the original function) with every argument.
unsafe fn call_original(l: *mut lua_State) -> c_int {
    unsafe {
        let n = lua::lua_gettop(l);
        lua::lua_pushvalue(l, lua::lua_upvalueindex(1));
        lua::lua_insert(l, 1);
        lua::lua_call(l, n, lua::LUA_MULTRET);
        lua::lua_gettop(l)
    }
}

/// rawset, setmetatable, table.insert/remove/sort/setn: refused on a
/// protected table (Redis's read-only tables), else the original.
unsafe fn rawset_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        if is_protected(l, 1) {
            return Err(ffi::error_str(l, READONLY));
        }
        Ok(call_original(l))
    }
}
lua_fn!(lua_rawset_fn, rawset_impl);

lua_fn!(lua_setmetatable_fn, rawset_impl);
lua_fn!(lua_table_write_fn, rawset_impl);

/// rawget / next on a proxy act on the real table.
unsafe fn see_through_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        if push_real(l, 1) {
            lua::lua_replace(l, 1);
        }
        Ok(call_original(l))
    }
}
lua_fn!(lua_rawget_fn, see_through_impl);
lua_fn!(lua_next_fn, see_through_impl);

/// pairs(t): the protected `next` (global), t, nil.
unsafe fn pairs_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        if !is_protected(l, 1) {
            return Ok(call_original(l));
        }
        lua::lua_getfield(l, lua::LUA_GLOBALSINDEX, c"next".as_ptr());
        lua::lua_pushvalue(l, 1);
        lua::lua_pushnil(l);
        Ok(3)
    }
}
lua_fn!(lua_pairs_fn, pairs_impl);

unsafe fn ipairs_iter_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        let i = lua::lua_tonumber(l, 2) as lua::lua_Integer + 1;
        if !push_real(l, 1) {
            lua::lua_pushvalue(l, 1);
        }
        lua::lua_pushnumber(l, i as f64);
        lua::lua_rawgeti(l, -2, i);
        if lua::lua_isnil(l, -1) != 0 {
            return Ok(0);
        }
        Ok(2)
    }
}
lua_fn!(ipairs_iter, ipairs_iter_impl);

unsafe fn ipairs_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        if !is_protected(l, 1) {
            return Ok(call_original(l));
        }
        lua::lua_pushcfunction(l, ipairs_iter);
        lua::lua_pushvalue(l, 1);
        lua::lua_pushnumber(l, 0.0);
        Ok(3)
    }
}
lua_fn!(lua_ipairs_fn, ipairs_impl);

/// unpack(t [, i [, j]]): stock Lua 5.1 computes the result count in a C
/// int, which overflows for far-apart bounds (`unpack({}, 2^31)` runs off
/// the stack); such counts get Redis's "too many results to unpack"
/// before the original runs.
unsafe fn unpack_impl(l: *mut lua_State) -> LuaResult {
    unsafe {
        let bound = |idx: c_int, def: i64| -> i64 {
            if lua::lua_isnoneornil(l, idx) != 0 || lua::lua_isnumber(l, idx) == 0 {
                def
            } else {
                c_int_of(lua::lua_tonumber(l, idx)) as i64
            }
        };
        if lua::lua_istable(l, 1) != 0 {
            let i = bound(2, 1);
            let e = bound(3, lua::lua_objlen(l, 1) as i64);
            if i <= e && e - i + 1 >= 8000 {
                return Err(ffi::error_at(l, 1, b"too many results to unpack"));
            }
        }
        Ok(call_original(l))
    }
}
lua_fn!(lua_unpack_fn, unpack_impl);

/// The busy-script hook: asks the host whether to stop; once stopped, it
/// fires on every line so `pcall` cannot swallow the kill.
unsafe extern "C-unwind" fn count_hook(l: *mut lua_State, _ar: *mut lua::lua_Debug) {
    // SAFETY: called by Lua with a valid state; nothing with a destructor
    // is alive when lua_error leaves.
    unsafe {
        let Some(host) = current_host() else {
            return;
        };
        let mut kill = host.interrupt();
        if !kill {
            // The host pointer is this run's: other scripts cannot run on
            // this thread while it is suspended (they are refused -BUSY),
            // but nothing outside the run may see it meanwhile.
            let saved = HOST.with(|h| h.take());
            let suspended = host.let_others_in();
            HOST.with(|h| h.set(saved));
            // A SCRIPT KILL may have come meanwhile.
            kill = suspended && host.interrupt();
        }
        if kill {
            lua::lua_sethook(l, Some(count_hook), lua::LUA_MASKLINE, 0);
            push_error_table(l, b"Script killed by user with SCRIPT KILL...", false);
            lua::lua_error(l);
        }
    }
}
