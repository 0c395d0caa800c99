//! Lua scripting: the interpreter (Lua 5.1 with Redis's libraries and
//! protected globals, [`lua`]), the EVAL script cache, and the state of the
//! script running now (for `-BUSY`, SCRIPT KILL and FUNCTION KILL).
//!
//! This layer knows Lua, not commands: `redis.call` reaches the command
//! layer through the [`lua::Host`] that `cmd/scripting.rs` installs for a
//! run. Behaviour follows Redis 7.0's eval.c, script.c and script_lua.c
//! (redis.io "Scripting with Lua").
//!
//! **Atomicity.** A script runs while its caller holds the whole exec gate
//! (tx.rs), as EXEC does: no command of another connection runs on any core
//! until it ends, whether or not its keys were declared. The interpreter
//! itself is behind a mutex, which the gate makes uncontended.

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
pub mod ffi;
pub mod functions;
pub mod lua;
pub mod structlib;
pub mod yielding;

use parking_lot::Mutex;
use sha1::{Digest, Sha1};
/// The maps of this module: looked up on every EVALSHA / FCALL, so with
/// the fast hash the keyspace uses rather than SipHash.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Script flags (`#!lua flags=...`; script.c `scripts_flags_def`).
pub mod flags {
    /// `no-writes`.
    pub const NO_WRITES: u32 = 1 << 0;
    /// `allow-oom`.
    pub const ALLOW_OOM: u32 = 1 << 1;
    /// `allow-stale`.
    pub const ALLOW_STALE: u32 = 1 << 2;
    /// `no-cluster`.
    pub const NO_CLUSTER: u32 = 1 << 3;
    /// `allow-cross-slot-keys`.
    pub const ALLOW_CROSS_SLOT: u32 = 1 << 4;
    /// No shebang: an EVAL script in Redis 6 compatibility mode.
    pub const EVAL_COMPAT: u32 = 1 << 5;

    /// (flag, name) in Redis's order.
    pub const NAMES: &[(u32, &str)] = &[
        (NO_WRITES, "no-writes"),
        (ALLOW_OOM, "allow-oom"),
        (ALLOW_STALE, "allow-stale"),
        (NO_CLUSTER, "no-cluster"),
        (ALLOW_CROSS_SLOT, "allow-cross-slot-keys"),
    ];

    /// The flag called `name`.
    pub fn by_name(name: &[u8]) -> Option<u32> {
        NAMES
            .iter()
            .find(|(_, n)| n.as_bytes() == name)
            .map(|(f, _)| *f)
    }
}

/// The 40 lower-case hex digits of the SHA1 of `data` (eval.c `sha1hex`).
pub fn sha1_hex(data: &[u8]) -> [u8; 40] {
    let digest = Sha1::digest(data);
    let hex = b"0123456789abcdef";
    let mut out = [0u8; 40];
    for (i, b) in digest.iter().enumerate() {
        out[2 * i] = hex[(b >> 4) as usize];
        out[2 * i + 1] = hex[(b & 15) as usize];
    }
    out
}

/// A shebang line split as `sdssplitargs` splits it; None when it does not
/// split (unbalanced quotes) or is empty.
pub fn split_shebang(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut buf = Vec::new();
    let mut ranges = Vec::new();
    if crate::resp::parse::split_args(line, &mut buf, &mut ranges).is_err() || ranges.is_empty() {
        return None;
    }
    Some(
        ranges
            .iter()
            .map(|&(s, e)| buf[s as usize..e as usize].to_vec())
            .collect(),
    )
}

/// Parses a script's shebang line (eval.c `evalExtractShebangFlags`):
/// `(flags, length of the shebang line without its newline)`. Without a
/// shebang: `(EVAL_COMPAT, 0)`. Err: Redis's error text ("Invalid script
/// shebang", "Unexpected engine in script shebang: X", "Unexpected flag in
/// script shebang: X", "Unknown lua shebang option: X").
pub fn parse_shebang(body: &[u8]) -> Result<(u32, usize), Vec<u8>> {
    if !body.starts_with(b"#!") {
        return Ok((flags::EVAL_COMPAT, 0));
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err(b"Invalid script shebang".to_vec());
    };
    let Some(parts) = split_shebang(&body[..end]) else {
        return Err(b"Invalid engine in script shebang".to_vec());
    };
    if parts[0] != b"#!lua" {
        let mut e = b"Unexpected engine in script shebang: ".to_vec();
        e.extend_from_slice(&parts[0]);
        return Err(e);
    }
    let mut f = 0;
    for p in &parts[1..] {
        let Some(list) = p.strip_prefix(b"flags=") else {
            let mut e = b"Unknown lua shebang option: ".to_vec();
            e.extend_from_slice(p);
            return Err(e);
        };
        for name in list.split(|&b| b == b',') {
            if name.is_empty() && list.is_empty() {
                continue;
            }
            match flags::by_name(name) {
                Some(x) => f |= x,
                None => {
                    let mut e = b"Unexpected flag in script shebang: ".to_vec();
                    e.extend_from_slice(name);
                    return Err(e);
                }
            }
        }
    }
    Ok((f, end))
}

/// One cached EVAL script.
pub struct CachedScript {
    /// Its source.
    pub body: Vec<u8>,
    /// Its [`flags`].
    pub flags: u32,
}

/// The EVAL interpreter and its script cache (eval.c `lctx`).
pub struct Eval {
    /// The interpreter.
    pub lua: lua::State,
    /// SHA1 (hex) -> script.
    pub cache: FastMap<[u8; 40], CachedScript>,
    /// Bytes of the cached bodies and their keys (`used_memory_scripts`).
    pub cache_bytes: u64,
}

impl Default for Eval {
    fn default() -> Self {
        Eval {
            lua: lua::State::new(lua::Kind::Eval),
            cache: FastMap::default(),
            cache_bytes: 0,
        }
    }
}

/// The registry key of cached script `sha` (`f_<sha>`, NUL-terminated).
pub fn function_key(sha: &[u8; 40]) -> [u8; 43] {
    let mut k = [0u8; 43];
    k[0] = b'f';
    k[1] = b'_';
    k[2..42].copy_from_slice(sha);
    k
}

impl Eval {
    /// Compiles and caches `body` unless cached (eval.c
    /// `luaCreateFunction`): its SHA1. Err: the error reply text
    /// (shebang errors; "Error compiling script (new function): ...").
    pub fn create(&mut self, body: &[u8]) -> Result<[u8; 40], Vec<u8>> {
        let sha = sha1_hex(body);
        if self.cache.contains_key(&sha) {
            return Ok(sha);
        }
        let (flags, shebang) = parse_shebang(body).map_err(|mut e| {
            e.splice(0..0, b"ERR ".iter().copied());
            e
        })?;
        let key = function_key(&sha);
        let key = std::ffi::CStr::from_bytes_with_nul(&key).expect("NUL-terminated key");
        // The shebang line is skipped but its newline kept, so line numbers
        // stay the user's.
        if let Err(msg) = self.lua.compile(key, &body[shebang..], c"@user_script") {
            let mut e = b"ERR Error compiling script (new function): ".to_vec();
            e.extend_from_slice(&msg);
            return Err(e);
        }
        self.cache_bytes += body.len() as u64 + 40;
        self.cache.insert(
            sha,
            CachedScript {
                body: body.to_vec(),
                flags,
            },
        );
        Ok(sha)
    }

    /// SCRIPT FLUSH: a new interpreter and an empty cache.
    pub fn reset(&mut self) {
        *self = Eval::default();
    }
}

/// The state of the script running now (script.c `curr_run_ctx`), shared
/// with the other connections: they answer `-BUSY` once it has run longer
/// than `busy-reply-threshold`, and SCRIPT KILL / FUNCTION KILL flag it.
#[derive(Default)]
pub struct RunState {
    /// A script or function is running.
    pub running: AtomicBool,
    /// It ran past `busy-reply-threshold` (other clients get -BUSY).
    pub timed_out: AtomicBool,
    /// SCRIPT KILL / FUNCTION KILL asked it to stop.
    pub killed: AtomicBool,
    /// It already ran a write command (then it cannot be killed).
    pub write_dirty: AtomicBool,
    /// It is an EVAL script (not a function).
    pub eval_mode: AtomicBool,
    /// It was sent by our master (replication): not killable.
    pub from_master: AtomicBool,
    /// When it started, µs on the server clock.
    pub start_us: AtomicU64,
}

/// A script that ran past the busy threshold: its name (SHA1 or function
/// name) and the request that runs it.
pub type RunningScript = (Vec<u8>, Vec<Vec<u8>>);

/// Scripting state of a server (`Server::scripts`).
#[derive(Default)]
pub struct Scripts {
    /// The EVAL interpreter and script cache.
    pub eval: Mutex<Eval>,
    /// The function libraries and their interpreter.
    pub functions: Mutex<functions::Functions>,
    /// The running script.
    pub run: RunState,
    /// The name and request of a script that ran past the busy threshold
    /// (FUNCTION STATS `running_script`).
    pub current: Mutex<Option<RunningScript>>,
    /// SHA1 -> flags of the cached scripts that declared flags, read by
    /// the request path without the interpreter's lock.
    pub script_flag_index: parking_lot::RwLock<FastMap<[u8; 40], u32>>,
    /// Function name -> flags, likewise.
    pub function_flag_index: parking_lot::RwLock<FastMap<Vec<u8>, u32>>,
    /// Number of function libraries (FUNCTION STATS, INFO).
    pub library_count: AtomicU64,
    /// Number of functions.
    pub function_count: AtomicU64,
    /// `busy-reply-threshold` (alias `lua-time-limit`), ms; 0 = never busy.
    pub busy_threshold_ms: AtomicU64,
    /// DEBUG SET-DISABLE-DENY-SCRIPTS (Redis's
    /// `server.script_disable_deny_script`): scripts may call commands
    /// flagged `noscript`.
    pub disable_deny_script: AtomicBool,
}

impl Scripts {
    /// Records the flags of cached script `sha` when it declared some.
    pub fn note_script(&self, eval: &Eval, sha: &[u8; 40]) {
        if let Some(s) = eval.cache.get(sha) {
            if s.flags & flags::EVAL_COMPAT == 0 {
                self.script_flag_index.write().insert(*sha, s.flags);
            }
        }
    }

    /// The declared flags of cached script `sha` (None: unknown or no
    /// shebang).
    pub fn script_flags(&self, sha: &[u8; 40]) -> Option<u32> {
        self.script_flag_index.read().get(sha).copied()
    }

    /// The flags of function `name`.
    pub fn function_flags(&self, name: &[u8]) -> Option<u32> {
        // Names are case-insensitive, as FCALL's lookup (functions.rs).
        self.function_flag_index
            .read()
            .get(&name.to_ascii_lowercase())
            .copied()
    }

    /// Publishes the library and function counts and the functions' flags
    /// after a change of the libraries.
    pub fn sync_functions(&self, f: &functions::Functions) {
        self.library_count
            .store(f.libraries.len() as u64, Ordering::Relaxed);
        self.function_count
            .store(f.function_count() as u64, Ordering::Relaxed);
        let mut idx = self.function_flag_index.write();
        idx.clear();
        for lib in &f.libraries {
            for func in &lib.functions {
                idx.insert(func.name.to_ascii_lowercase(), func.flags);
            }
        }
    }

    /// True while a script runs past the busy threshold: other clients'
    /// commands get -BUSY (server.c processCommand).
    #[inline]
    pub fn busy(&self) -> bool {
        self.run.timed_out.load(Ordering::Relaxed)
    }

    /// The `-BUSY` error for the running script (shared.slowevalerr /
    /// slowscripterr).
    pub fn busy_error(&self) -> &'static str {
        if self.run.eval_mode.load(Ordering::Relaxed) {
            "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
        } else {
            "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_of_empty_and_known() {
        assert_eq!(&sha1_hex(b""), b"da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(
            &sha1_hex(b"return 1"),
            b"e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
        );
    }

    #[test]
    fn shebangs() {
        assert_eq!(parse_shebang(b"return 1").unwrap(), (flags::EVAL_COMPAT, 0));
        assert_eq!(parse_shebang(b"#!lua\nreturn 1").unwrap(), (0, 5));
        assert_eq!(
            parse_shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap(),
            (flags::NO_WRITES | flags::ALLOW_OOM, 31)
        );
        assert_eq!(
            parse_shebang(b"#!lua").unwrap_err(),
            b"Invalid script shebang"
        );
        assert_eq!(
            parse_shebang(b"#!python\n").unwrap_err(),
            b"Unexpected engine in script shebang: #!python"
        );
        assert_eq!(
            parse_shebang(b"#!lua flags=bad\n").unwrap_err(),
            b"Unexpected flag in script shebang: bad"
        );
        assert_eq!(
            parse_shebang(b"#!lua name=x\n").unwrap_err(),
            b"Unknown lua shebang option: name=x"
        );
    }
}
