//! The `bit` library of Redis's Lua (the LuaBitOp 1.0 API): bitwise
//! operations on 32-bit integers. Arguments are normalised as LuaBitOp
//! does: a number is reduced modulo 2^32 by adding 2^52 + 2^51 and taking
//! the low 32 bits of the double (so fractions round to nearest even), and
//! results are signed 32-bit numbers.
//!
//! Functions: `tobit`, `tohex(x [, n])` (n hex digits, default 8; negative
//! n for upper case), `bnot`, `band`, `bor`, `bxor` (one or more
//! arguments), `lshift`, `rshift`, `arshift`, `rol`, `ror` (shift counts
//! taken modulo 32), `bswap`.

use super::ffi::{self, lua_fn, push_bytes, LuaResult};
use mlua_sys as lua;
use mlua_sys::lua_State;
use std::ffi::c_int;

/// The argument at `i` reduced to 32 bits (LuaBitOp's `barg`).
unsafe fn arg(l: *mut lua_State, i: c_int) -> Result<u32, ffi::Raise> {
    let n = unsafe { ffi::check_number(l, i)? };
    Ok((n + 6755399441055744.0).to_bits() as u32)
}

unsafe fn ret(l: *mut lua_State, v: u32) -> LuaResult {
    unsafe { lua::lua_pushnumber(l, v as i32 as f64) };
    Ok(1)
}

unsafe fn tobit(l: *mut lua_State) -> LuaResult {
    unsafe { ret(l, arg(l, 1)?) }
}

unsafe fn bnot(l: *mut lua_State) -> LuaResult {
    unsafe { ret(l, !arg(l, 1)?) }
}

unsafe fn fold(l: *mut lua_State, f: fn(u32, u32) -> u32) -> LuaResult {
    unsafe {
        let mut v = arg(l, 1)?;
        for i in 2..=lua::lua_gettop(l) {
            v = f(v, arg(l, i)?);
        }
        ret(l, v)
    }
}

unsafe fn band(l: *mut lua_State) -> LuaResult {
    unsafe { fold(l, |a, b| a & b) }
}

unsafe fn bor(l: *mut lua_State) -> LuaResult {
    unsafe { fold(l, |a, b| a | b) }
}

unsafe fn bxor(l: *mut lua_State) -> LuaResult {
    unsafe { fold(l, |a, b| a ^ b) }
}

unsafe fn shift(l: *mut lua_State, f: fn(u32, u32) -> u32) -> LuaResult {
    unsafe {
        let v = arg(l, 1)?;
        let n = arg(l, 2)? & 31;
        ret(l, f(v, n))
    }
}

unsafe fn lshift(l: *mut lua_State) -> LuaResult {
    unsafe { shift(l, |v, n| v << n) }
}

unsafe fn rshift(l: *mut lua_State) -> LuaResult {
    unsafe { shift(l, |v, n| v >> n) }
}

unsafe fn arshift(l: *mut lua_State) -> LuaResult {
    unsafe { shift(l, |v, n| ((v as i32) >> n) as u32) }
}

unsafe fn rol(l: *mut lua_State) -> LuaResult {
    unsafe { shift(l, |v, n| v.rotate_left(n)) }
}

unsafe fn ror(l: *mut lua_State) -> LuaResult {
    unsafe { shift(l, |v, n| v.rotate_right(n)) }
}

unsafe fn bswap(l: *mut lua_State) -> LuaResult {
    unsafe { ret(l, arg(l, 1)?.swap_bytes()) }
}

unsafe fn tohex(l: *mut lua_State) -> LuaResult {
    unsafe {
        let mut v = arg(l, 1)?;
        let n = if lua::lua_isnone(l, 2) != 0 {
            8
        } else {
            arg(l, 2)? as i32
        };
        let digits: &[u8; 16] = if n < 0 {
            b"0123456789ABCDEF"
        } else {
            b"0123456789abcdef"
        };
        // |n| digits, at most 8 (|i32::MIN| too, as LuaBitOp answers).
        let n = n.unsigned_abs().min(8) as usize;
        let mut buf = [0u8; 8];
        for i in (0..n).rev() {
            buf[i] = digits[(v & 15) as usize];
            v >>= 4;
        }
        push_bytes(l, &buf[..n]);
        Ok(1)
    }
}

lua_fn!(f_tobit, tobit);
lua_fn!(f_bnot, bnot);
lua_fn!(f_band, band);
lua_fn!(f_bor, bor);
lua_fn!(f_bxor, bxor);
lua_fn!(f_lshift, lshift);
lua_fn!(f_rshift, rshift);
lua_fn!(f_arshift, arshift);
lua_fn!(f_rol, rol);
lua_fn!(f_ror, ror);
lua_fn!(f_bswap, bswap);
lua_fn!(f_tohex, tohex);

/// Opens the library: creates the `bit` table and sets it as global `bit`.
///
/// # Safety
/// Called by Lua (through `lua_call`) on a valid state.
pub unsafe extern "C-unwind" fn open(l: *mut lua_State) -> c_int {
    unsafe {
        lua::lua_newtable(l);
        for (name, f) in [
            (c"tobit", f_tobit as lua::lua_CFunction),
            (c"bnot", f_bnot),
            (c"band", f_band),
            (c"bor", f_bor),
            (c"bxor", f_bxor),
            (c"lshift", f_lshift),
            (c"rshift", f_rshift),
            (c"arshift", f_arshift),
            (c"rol", f_rol),
            (c"ror", f_ror),
            (c"bswap", f_bswap),
            (c"tohex", f_tohex),
        ] {
            ffi::set_fn(l, name, f);
        }
        lua::lua_setglobal(l, c"bit".as_ptr());
    }
    0
}
