//! Small helpers over the Lua 5.1 C API (the `mlua-sys` crate, which
//! builds Lua 5.1 from the `lua-src` crate): pushing and reading byte
//! strings, raising errors without leaving Rust values behind, and the
//! calling convention every C function of the engine follows.
//!
//! **Raising errors.** `lua_error` leaves the C function by `longjmp`, which
//! skips Rust destructors. Every Lua-callable function here is therefore a
//! thin `extern "C-unwind"` shell around an inner Rust function that returns
//! `Result<c_int, Raise>`: the inner function owns every value with a
//! destructor and drops it on return; the shell, which owns nothing, then
//! raises ([`lua_fn!`]).
//!
//! **Safety contract** (shared by every `unsafe fn` here, so not repeated
//! on each): `l` is a valid Lua state used by this thread only, with room
//! on its stack for what the function pushes; returned slices borrow Lua
//! strings and are valid while those stay on the stack.
#![allow(clippy::missing_safety_doc)]

use mlua_sys as lua;
pub use mlua_sys::lua_State;
use std::ffi::{c_char, c_int, CStr};

/// How an inner function failed; the shell raises it.
pub enum Raise {
    /// The error value is already on top of the stack.
    Pushed,
    /// `luaL_argerror(n, msg)`: "bad argument #n to 'f' (msg)".
    Arg(c_int, &'static CStr),
    /// `luaL_typerror(n, tname)`: "bad argument #n to 'f' (tname expected,
    /// got x)".
    Type(c_int, &'static CStr),
}

/// What an inner function returns: the number of results it pushed.
pub type LuaResult = Result<c_int, Raise>;

/// Declares the `extern "C-unwind"` shell `$name` of inner function
/// `$inner: unsafe fn(*mut lua_State) -> LuaResult`.
macro_rules! lua_fn {
    ($name:ident, $inner:expr) => {
        unsafe extern "C-unwind" fn $name(
            l: *mut $crate::script::ffi::lua_State,
        ) -> std::ffi::c_int {
            // SAFETY: called by Lua with a valid state; the inner function
            // has dropped everything it owned when it returns. A panic is
            // stopped here and raised as a Lua error: unwinding through
            // Lua's C frames would leave the state inconsistent.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { $inner(l) }));
            unsafe {
                $crate::script::ffi::finish(
                    l,
                    r.unwrap_or_else(|_| Err($crate::script::ffi::internal_error(l))),
                )
            }
        }
    };
}
pub(crate) use lua_fn;

/// Turns an inner function's result into the C function's return, raising
/// its error.
///
/// # Safety
/// `l` is the state the inner function ran on; nothing with a destructor
/// may be alive in the caller.
#[inline]
pub unsafe fn finish(l: *mut lua_State, r: LuaResult) -> c_int {
    unsafe {
        match r {
            Ok(n) => n,
            Err(Raise::Pushed) => lua::lua_error(l),
            Err(Raise::Arg(n, msg)) => lua::luaL_argerror(l, n, msg.as_ptr()),
            Err(Raise::Type(n, t)) => lua::luaL_typerror(l, n, t.as_ptr()),
        }
    }
}

/// Pushes the error of a Rust panic inside a Lua-callable function.
pub unsafe fn internal_error(l: *mut lua_State) -> Raise {
    unsafe { error_str(l, b"internal error in a library function") }
}

/// Pushes `b` as a Lua string.
#[inline]
pub unsafe fn push_bytes(l: *mut lua_State, b: &[u8]) {
    unsafe { lua::lua_pushlstring_(l, b.as_ptr() as *const c_char, b.len()) }
}

/// The string (or number, converted in place) at `idx`, or None.
///
/// # Safety
/// The slice borrows Lua memory: it is valid while the value stays on the
/// stack.
#[inline]
pub unsafe fn to_bytes<'a>(l: *mut lua_State, idx: c_int) -> Option<&'a [u8]> {
    unsafe {
        let mut len = 0usize;
        let p = lua::lua_tolstring(l, idx, &mut len);
        if p.is_null() {
            None
        } else {
            Some(std::slice::from_raw_parts(p as *const u8, len))
        }
    }
}

/// The string at `idx` when it is a Lua string (not a number), or None.
#[inline]
pub unsafe fn string_at<'a>(l: *mut lua_State, idx: c_int) -> Option<&'a [u8]> {
    unsafe {
        if lua::lua_type(l, idx) == lua::LUA_TSTRING {
            to_bytes(l, idx)
        } else {
            None
        }
    }
}

/// Pushes `msg` and returns [`Raise::Pushed`] (a plain string error).
#[inline]
pub unsafe fn error_str(l: *mut lua_State, msg: &[u8]) -> Raise {
    unsafe { push_bytes(l, msg) };
    Raise::Pushed
}

/// Pushes `where` (`luaL_where(level)`) followed by `msg`, as `luaL_error`
/// does at that level.
pub unsafe fn error_at(l: *mut lua_State, level: c_int, msg: &[u8]) -> Raise {
    unsafe {
        lua::luaL_where(l, level);
        push_bytes(l, msg);
        lua::lua_concat(l, 2);
    }
    Raise::Pushed
}

/// Sets field `k` of the table at the top of the stack to C function `f`.
pub unsafe fn set_fn(l: *mut lua_State, k: &CStr, f: lua::lua_CFunction) {
    unsafe {
        lua::lua_pushcfunction(l, f);
        lua::lua_setfield(l, -2, k.as_ptr());
    }
}

/// Sets field `k` of the table at the top of the stack to number `v`.
pub unsafe fn set_num(l: *mut lua_State, k: &CStr, v: f64) {
    unsafe {
        lua::lua_pushnumber(l, v);
        lua::lua_setfield(l, -2, k.as_ptr());
    }
}

/// Sets field `k` of the table at the top of the stack to string `v`.
pub unsafe fn set_str(l: *mut lua_State, k: &CStr, v: &[u8]) {
    unsafe {
        push_bytes(l, v);
        lua::lua_setfield(l, -2, k.as_ptr());
    }
}

/// A Lua number argument at `idx`, or [`Raise::Type`] "number expected".
#[inline]
pub unsafe fn check_number(l: *mut lua_State, idx: c_int) -> Result<f64, Raise> {
    unsafe {
        let n = lua::lua_tonumber(l, idx);
        if n == 0.0 && lua::lua_isnumber(l, idx) == 0 {
            return Err(Raise::Type(idx, c"number"));
        }
        Ok(n)
    }
}

/// A Lua string argument at `idx` (numbers converted), or [`Raise::Type`]
/// "string expected".
#[inline]
pub unsafe fn check_bytes<'a>(l: *mut lua_State, idx: c_int) -> Result<&'a [u8], Raise> {
    unsafe { to_bytes(l, idx).ok_or(Raise::Type(idx, c"string")) }
}

/// An optional integer argument (`luaL_optint`).
pub unsafe fn opt_int(l: *mut lua_State, idx: c_int, def: i64) -> Result<i64, Raise> {
    unsafe {
        if lua::lua_isnoneornil(l, idx) != 0 {
            Ok(def)
        } else {
            Ok(check_number(l, idx)? as i64)
        }
    }
}
