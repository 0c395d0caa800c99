//! The `cmsgpack` Lua library of Redis 7.0 scripts (lua-cmsgpack 0.4.0,
//! `deps/lua/src/lua_cmsgpack.c`), reimplemented over the Lua 5.1 C API
//! from its documented and observed behaviour.
//!
//! - `cmsgpack.pack(v1, ...)` encodes each argument and returns the
//!   concatenation: nil, booleans, numbers (integral values in the `i64`
//!   range as the smallest integer format, others as float 32 when that
//!   is exact, else float 64), strings (fixstr, str 8, str 16, str 32),
//!   tables as arrays when their keys are exactly `1..n` (fixarray,
//!   array 16, array 32), else as maps (fixmap, map 16, map 32, in
//!   `next` order), and every other value as nil. A table inside
//!   [`MAX_NESTING`] (16) enclosing tables encodes as nil, which also
//!   ends cycles.
//! - `cmsgpack.unpack(s)` returns every value encoded in `s`;
//!   `cmsgpack.unpack_one(s[, offset])` and
//!   `cmsgpack.unpack_limit(s, limit[, offset])` decode at most one or
//!   `limit` values from byte `offset` and return first the offset of the
//!   next value, or -1 once the input is consumed. bin, ext and 0xc1 are
//!   "Bad data format in input."; truncated input is "Missing bytes in
//!   input.". `uint 64` decodes through a signed 64-bit integer, as in
//!   Redis (`0xffffffffffffffff` is -1).
//! - The library table also holds `_NAME`, `_VERSION`, `_COPYRIGHT` and
//!   `_DESCRIPTION`.
//!
//! The Lua stack is used as Redis's C code uses it, with the same
//! `luaL_checkstack` sizes and messages, so the "stack overflow (...)"
//! errors of very many arguments, results or nesting levels match too.

use super::ffi::{
    check_bytes, error_at, error_str, lua_fn, push_bytes, set_fn, set_str, LuaResult, Raise,
};
use mlua_sys as lua;
use std::ffi::c_int;

/// `LUACMSGPACK_MAX_NESTING`: a table inside this many enclosing tables
/// (at this level, the packed argument being level 0) encodes as nil.
pub const MAX_NESTING: u32 = 16;

/// Opens the library: creates the `cmsgpack` table and sets it as global
/// `cmsgpack`.
///
/// # Safety
/// `l` is a valid Lua state; called through `lua_call` like a `luaopen_*`
/// function (its argument is ignored).
pub unsafe extern "C-unwind" fn open(l: *mut lua::lua_State) -> c_int {
    unsafe {
        lua::lua_newtable(l);
        set_fn(l, c"pack", pack);
        set_fn(l, c"unpack", unpack);
        set_fn(l, c"unpack_one", unpack_one);
        set_fn(l, c"unpack_limit", unpack_limit);
        set_str(l, c"_NAME", b"cmsgpack");
        set_str(l, c"_VERSION", b"lua-cmsgpack 0.4.0");
        set_str(
            l,
            c"_COPYRIGHT",
            b"Copyright (C) 2012, Salvatore Sanfilippo",
        );
        set_str(l, c"_DESCRIPTION", b"MessagePack C implementation for Lua");
        lua::lua_setglobal(l, c"cmsgpack".as_ptr());
    }
    0
}

/// `luaL_checkstack(l, n, what)`: grows the stack by `n` slots or fails
/// with "stack overflow (what)" (raised by the caller).
unsafe fn check_stack(l: *mut lua::lua_State, n: c_int, what: &str) -> Result<(), Raise> {
    unsafe {
        if lua::lua_checkstack(l, n) == 0 {
            return Err(fail_at(l, format!("stack overflow ({what})").as_bytes()));
        }
    }
    Ok(())
}

/// `luaL_error(l, msg)`: pushes the caller's position and `msg`.
///
/// The stack may be full (every slot that was checked is in use), so the
/// values pushed so far are dropped first (all but argument 1, the input
/// that decoding borrows): the error discards them anyway.
unsafe fn fail_at(l: *mut lua::lua_State, msg: &[u8]) -> Raise {
    unsafe {
        lua::lua_settop(l, 1);
        error_at(l, 1, msg)
    }
}

/// A Lua runtime error without position (as `luaG_runerror` raises from
/// a C function), on a stack that may be full.
unsafe fn fail(l: *mut lua::lua_State, msg: &[u8]) -> Raise {
    unsafe {
        lua::lua_settop(l, 1);
        error_str(l, msg)
    }
}

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

lua_fn!(pack, pack_inner);

/// `cmsgpack.pack(v1, ...)`.
unsafe fn pack_inner(l: *mut lua::lua_State) -> LuaResult {
    unsafe {
        let nargs = lua::lua_gettop(l);
        if nargs == 0 {
            return Err(Raise::Arg(0, c"MessagePack pack needs input."));
        }
        if lua::lua_checkstack(l, nargs) == 0 {
            return Err(Raise::Arg(0, c"Too many arguments for MessagePack pack."));
        }
        // Like Redis, push each argument's encoding, then concatenate
        // them: the stack depth (and so any overflow) is the same.
        let mut buf = Vec::new();
        for i in 1..=nargs {
            check_stack(l, 1, "in function mp_check")?;
            lua::lua_pushvalue(l, i);
            encode_top(l, &mut buf, 0)?;
            push_bytes(l, &buf);
            buf.clear();
        }
        drop(buf);
        lua::lua_concat(l, nargs);
        Ok(1)
    }
}

/// Appends the encoding of the value on top of the stack, at nesting
/// `level`, and pops it.
unsafe fn encode_top(l: *mut lua::lua_State, buf: &mut Vec<u8>, level: u32) -> Result<(), Raise> {
    unsafe {
        match lua::lua_type(l, -1) {
            lua::LUA_TSTRING => {
                let mut len = 0usize;
                let p = lua::lua_tolstring(l, -1, &mut len);
                encode_bytes(buf, std::slice::from_raw_parts(p as *const u8, len));
            }
            lua::LUA_TBOOLEAN => buf.push(if lua::lua_toboolean(l, -1) != 0 {
                0xc3
            } else {
                0xc2
            }),
            lua::LUA_TNUMBER => encode_number(buf, lua::lua_tonumber(l, -1)),
            lua::LUA_TTABLE if level < MAX_NESTING => encode_table(l, buf, level)?,
            _ => buf.push(0xc0),
        }
        lua::lua_pop(l, 1);
    }
    Ok(())
}

/// A string: fixstr, str 8, str 16 or str 32 header, then the bytes.
fn encode_bytes(buf: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        buf.push(0xa0 | len as u8);
    } else if len <= 0xff {
        buf.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        buf.push(0xda);
        buf.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        buf.push(0xdb);
        buf.extend_from_slice(&(len as u32).to_be_bytes());
    }
    buf.extend_from_slice(s);
}

/// A number: an integer format when `n` is integral and converts to `i64`
/// (`IS_INT64_EQUIVALENT`), else float 32 when exact, else float 64.
fn encode_number(buf: &mut Vec<u8>, n: f64) {
    // -2^63 <= n < 2^63: C's (int64_t)n is exact only there (NaN fails).
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if (-TWO_63..TWO_63).contains(&n) && n.trunc() == n {
        encode_int(buf, n as i64);
    } else {
        let f = n as f32;
        if f as f64 == n {
            buf.push(0xca);
            buf.extend_from_slice(&f.to_be_bytes());
        } else {
            buf.push(0xcb);
            buf.extend_from_slice(&n.to_be_bytes());
        }
    }
}

/// An integer in the smallest format (fixint, uint 8..64, int 8..64).
fn encode_int(buf: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 0x7f {
            buf.push(n as u8);
        } else if n <= 0xff {
            buf.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            buf.push(0xcd);
            buf.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            buf.push(0xce);
            buf.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            buf.push(0xcf);
            buf.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        buf.push(n as u8);
    } else if n >= -128 {
        buf.extend_from_slice(&[0xd0, n as u8]);
    } else if n >= -32768 {
        buf.push(0xd1);
        buf.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        buf.push(0xd2);
        buf.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        buf.push(0xd3);
        buf.extend_from_slice(&n.to_be_bytes());
    }
}

/// An array header (fixarray, array 16, array 32).
fn encode_array_header(buf: &mut Vec<u8>, n: usize) {
    if n <= 15 {
        buf.push(0x90 | n as u8);
    } else if n <= 0xffff {
        buf.push(0xdc);
        buf.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        buf.push(0xdd);
        buf.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// A map header (fixmap, map 16, map 32).
fn encode_map_header(buf: &mut Vec<u8>, n: usize) {
    if n <= 15 {
        buf.push(0x80 | n as u8);
    } else if n <= 0xffff {
        buf.push(0xde);
        buf.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        buf.push(0xdf);
        buf.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// Appends the table on top of the stack (left there) at nesting `level`.
unsafe fn encode_table(l: *mut lua::lua_State, buf: &mut Vec<u8>, level: u32) -> Result<(), Raise> {
    unsafe {
        if table_is_an_array(l)? {
            // The keys are exactly 1..n, so the length is n.
            let len = lua::lua_objlen(l, -1);
            encode_array_header(buf, len);
            check_stack(l, 1, "in function mp_encode_lua_table_as_array")?;
            for j in 1..=len {
                lua::lua_rawgeti_(l, -1, j as c_int);
                encode_top(l, buf, level + 1)?;
            }
        } else {
            check_stack(l, 3, "in function mp_encode_lua_table_as_map")?;
            let mut len = 0usize;
            lua::lua_pushnil(l);
            while lua::lua_next(l, -2) != 0 {
                lua::lua_pop(l, 1);
                len += 1;
            }
            encode_map_header(buf, len);
            lua::lua_pushnil(l);
            while lua::lua_next(l, -2) != 0 {
                // Stack: table key value; encode a copy of the key, then
                // the value, leaving the key for `lua_next`.
                lua::lua_pushvalue(l, -2);
                encode_top(l, buf, level + 1)?;
                encode_top(l, buf, level + 1)?;
            }
        }
    }
    Ok(())
}

/// Whether the keys of the table on top of the stack are exactly `1..n`
/// (numbers that convert to positive C `int`s, as many as the largest).
unsafe fn table_is_an_array(l: *mut lua::lua_State) -> Result<bool, Raise> {
    unsafe {
        check_stack(l, 2, "in function table_is_an_array")?;
        let top = lua::lua_gettop(l);
        let (mut count, mut max) = (0i32, 0i32);
        lua::lua_pushnil(l);
        while lua::lua_next(l, -2) != 0 {
            lua::lua_pop(l, 1);
            // A number n > 0 with (int)n == n: an integer in 1..=INT_MAX.
            let n = if lua::lua_type(l, -1) == lua::LUA_TNUMBER {
                lua::lua_tonumber(l, -1)
            } else {
                0.0
            };
            if n <= 0.0 || n > i32::MAX as f64 || n.trunc() != n {
                lua::lua_settop(l, top);
                return Ok(false);
            }
            max = max.max(n as i32);
            count = count.wrapping_add(1);
        }
        lua::lua_settop(l, top);
        Ok(max == count)
    }
}

// ---------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------

lua_fn!(unpack, unpack_inner);
lua_fn!(unpack_one, unpack_one_inner);
lua_fn!(unpack_limit, unpack_limit_inner);

/// `cmsgpack.unpack(s)`: every value of `s`.
unsafe fn unpack_inner(l: *mut lua::lua_State) -> LuaResult {
    unsafe { unpack_full(l, 0, 0) }
}

/// `cmsgpack.unpack_one(s[, offset])`: the next offset and one value.
unsafe fn unpack_one_inner(l: *mut lua::lua_State) -> LuaResult {
    unsafe {
        let offset = opt_integer(l, 2, 0)?;
        keep_first_arg(l);
        unpack_full(l, 1, offset)
    }
}

/// `cmsgpack.unpack_limit(s, limit[, offset])`: the next offset and up to
/// `limit` values (every value, without an offset, when both are 0).
unsafe fn unpack_limit_inner(l: *mut lua::lua_State) -> LuaResult {
    unsafe {
        let limit = check_integer(l, 2)?;
        let offset = opt_integer(l, 3, 0)?;
        keep_first_arg(l);
        unpack_full(l, limit, offset)
    }
}

/// `lua_pop(l, lua_gettop(l) - 1)`: leaves only the first argument (and
/// no value at all when there was none).
unsafe fn keep_first_arg(l: *mut lua::lua_State) {
    unsafe {
        if lua::lua_gettop(l) > 0 {
            lua::lua_settop(l, 1);
        }
    }
}

/// `luaL_checkinteger`: C's `(lua_Integer)` conversion of a number.
unsafe fn check_integer(l: *mut lua::lua_State, idx: c_int) -> Result<i64, Raise> {
    unsafe {
        let d = lua::lua_tointeger_(l, idx);
        if d == 0 && lua::lua_isnumber(l, idx) == 0 {
            return Err(Raise::Type(idx, c"number"));
        }
        Ok(d as i64)
    }
}

/// `luaL_optinteger`.
unsafe fn opt_integer(l: *mut lua::lua_State, idx: c_int, def: i64) -> Result<i64, Raise> {
    unsafe {
        if lua::lua_isnoneornil(l, idx) != 0 {
            Ok(def)
        } else {
            check_integer(l, idx)
        }
    }
}

/// Decodes up to `limit` values of argument 1 from byte `offset` (all of
/// them, without the offset result, when both are 0).
unsafe fn unpack_full(l: *mut lua::lua_State, limit: i64, offset: i64) -> LuaResult {
    unsafe {
        let decode_all = limit == 0 && offset == 0;
        let s = check_bytes(l, 1)?;
        let len = s.len();
        // Redis prints the values as C ints (and the length as the limit).
        if offset < 0 || limit < 0 {
            let msg = format!(
                "Invalid request to unpack with offset of {} and limit of {}.",
                offset as i32, len as i32
            );
            return Err(error_at(l, 1, msg.as_bytes()));
        }
        if offset as u64 > len as u64 {
            let msg = format!(
                "Start offset {} greater than input length {}.",
                offset as i32, len as i32
            );
            return Err(error_at(l, 1, msg.as_bytes()));
        }
        let limit = if decode_all { i32::MAX as i64 } else { limit };
        let mut cur = Cursor {
            s,
            pos: offset as usize,
        };
        let mut frames = Vec::new();
        let mut cnt: c_int = 0;
        while cur.left() > 0 && (cnt as i64) < limit {
            match decode_value(l, &mut cur, &mut frames) {
                Ok(()) => {}
                Err(Fail::Eof) => return Err(fail_at(l, b"Missing bytes in input.")),
                Err(Fail::BadFormat) => return Err(fail_at(l, b"Bad data format in input.")),
                Err(Fail::Raise(r)) => return Err(r),
            }
            cnt += 1;
        }
        drop(frames);
        if !decode_all {
            check_stack(l, 1, "in function mp_unpack_full")?;
            let next = if cur.left() == 0 { -1 } else { cur.pos as i64 };
            lua::lua_pushinteger(l, next);
            lua::lua_insert(l, 2);
            cnt += 1;
        }
        Ok(cnt)
    }
}

/// Why decoding stopped.
enum Fail {
    /// The input ends inside a value.
    Eof,
    /// A byte that starts no supported type.
    BadFormat,
    /// A Lua error, already pushed.
    Raise(Raise),
}

impl From<Raise> for Fail {
    fn from(r: Raise) -> Fail {
        Fail::Raise(r)
    }
}

/// A read position in the input.
struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    /// Bytes left.
    fn left(&self) -> usize {
        self.s.len() - self.pos
    }

    /// The next `n` bytes, consumed; [`Fail::Eof`] when fewer are left.
    fn take(&mut self, n: usize) -> Result<&[u8], Fail> {
        if self.left() < n {
            return Err(Fail::Eof);
        }
        let b = &self.s[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }

    /// A big-endian unsigned integer of `N` bytes, after a 1-byte type.
    fn uint<const N: usize>(&mut self) -> Result<u64, Fail> {
        let b = self.take(1 + N)?;
        Ok(b[1..].iter().fold(0u64, |acc, &x| acc << 8 | x as u64))
    }
}

/// A table being filled by [`decode_value`].
enum Frame {
    /// An array with `left` elements still to decode, the next at `index`.
    Array { left: u64, index: c_int },
    /// A map with `left` pairs still to start; `value` when its key is on
    /// the stack and its value is being decoded.
    Map { left: u64, value: bool },
}

/// The stack overflow of `unpack` (checked before every value).
const TOO_MANY: &str = "too many return values at once; use unpack_one or unpack_limit instead.";

/// Decodes one value (with everything it contains) onto the stack.
///
/// Iterative, the tables being built held in `frames`, but the Lua stack
/// is used exactly as Redis's recursive decoder uses it.
unsafe fn decode_value(
    l: *mut lua::lua_State,
    cur: &mut Cursor,
    frames: &mut Vec<Frame>,
) -> Result<(), Fail> {
    frames.clear();
    unsafe {
        'value: loop {
            let mut done = decode_start(l, cur, frames)?;
            loop {
                let Some(frame) = frames.last_mut() else {
                    return Ok(());
                };
                match frame {
                    Frame::Array { left, index } => {
                        if done {
                            // Stack: table index value.
                            lua::lua_rawset(l, -3);
                        }
                        if *left == 0 {
                            frames.pop();
                            done = true;
                            continue;
                        }
                        *left -= 1;
                        lua::lua_pushnumber(l, *index as f64);
                        *index = index.wrapping_add(1);
                        continue 'value;
                    }
                    Frame::Map { left, value } => {
                        if done {
                            if !*value {
                                *value = true;
                                continue 'value;
                            }
                            // Stack: table key value.
                            match lua::lua_type(l, -2) {
                                lua::LUA_TNIL => {
                                    return Err(fail(l, b"table index is nil").into());
                                }
                                lua::LUA_TNUMBER if lua::lua_tonumber(l, -2).is_nan() => {
                                    return Err(fail(l, b"table index is NaN").into());
                                }
                                _ => lua::lua_rawset(l, -3),
                            }
                            *value = false;
                        }
                        if *left == 0 {
                            frames.pop();
                            done = true;
                            continue;
                        }
                        *left -= 1;
                        continue 'value;
                    }
                }
            }
        }
    }
}

/// Decodes the start of a value: pushes a complete scalar (true), or
/// pushes a new table and its [`Frame`] (false).
unsafe fn decode_start(
    l: *mut lua::lua_State,
    cur: &mut Cursor,
    frames: &mut Vec<Frame>,
) -> Result<bool, Fail> {
    unsafe {
        if cur.left() < 1 {
            return Err(Fail::Eof);
        }
        check_stack(l, 1, TOO_MANY)?;
        let t = cur.s[cur.pos];
        match t {
            0xc0 => {
                cur.pos += 1;
                lua::lua_pushnil(l);
            }
            0xc2 | 0xc3 => {
                cur.pos += 1;
                lua::lua_pushboolean(l, (t == 0xc3) as c_int);
            }
            0xcc => push_int(l, cur.uint::<1>()? as i64),
            0xcd => push_int(l, cur.uint::<2>()? as i64),
            0xce => push_int(l, cur.uint::<4>()? as i64),
            // Redis pushes uint 64 as a lua_Integer: 2^63 and up wrap.
            0xcf => push_int(l, cur.uint::<8>()? as i64),
            0xd0 => push_int(l, cur.uint::<1>()? as u8 as i8 as i64),
            0xd1 => push_int(l, cur.uint::<2>()? as u16 as i16 as i64),
            0xd2 => push_int(l, cur.uint::<4>()? as u32 as i32 as i64),
            0xd3 => push_int(l, cur.uint::<8>()? as i64),
            0xca => {
                let f = f32::from_bits(cur.uint::<4>()? as u32);
                lua::lua_pushnumber(l, f as f64);
            }
            0xcb => lua::lua_pushnumber(l, f64::from_bits(cur.uint::<8>()?)),
            0xd9 => {
                let n = cur.uint::<1>()? as usize;
                push_bytes(l, cur.take(n)?);
            }
            0xda => {
                let n = cur.uint::<2>()? as usize;
                push_bytes(l, cur.take(n)?);
            }
            0xdb => {
                let n = cur.uint::<4>()? as usize;
                push_bytes(l, cur.take(n)?);
            }
            0xdc => {
                let n = cur.uint::<2>()?;
                open_array(l, frames, n)?;
                return Ok(false);
            }
            0xdd => {
                let n = cur.uint::<4>()?;
                open_array(l, frames, n)?;
                return Ok(false);
            }
            0xde => {
                let n = cur.uint::<2>()?;
                open_map(l, frames, n);
                return Ok(false);
            }
            0xdf => {
                let n = cur.uint::<4>()?;
                open_map(l, frames, n);
                return Ok(false);
            }
            0x00..=0x7f | 0xe0..=0xff => {
                cur.pos += 1;
                // Positive and negative fixint: the byte as an i8.
                push_int(l, t as i8 as i64);
            }
            0xa0..=0xbf => {
                let n = (t & 0x1f) as usize;
                push_bytes(l, &cur.take(1 + n)?[1..]);
            }
            0x90..=0x9f => {
                cur.pos += 1;
                open_array(l, frames, (t & 0x0f) as u64)?;
                return Ok(false);
            }
            0x80..=0x8f => {
                cur.pos += 1;
                open_map(l, frames, (t & 0x0f) as u64);
                return Ok(false);
            }
            _ => return Err(Fail::BadFormat),
        }
    }
    Ok(true)
}

/// Pushes an integer as a Lua number.
unsafe fn push_int(l: *mut lua::lua_State, n: i64) {
    unsafe { lua::lua_pushnumber(l, n as f64) }
}

/// Starts an array of `n` elements: a new table and its frame.
unsafe fn open_array(l: *mut lua::lua_State, frames: &mut Vec<Frame>, n: u64) -> Result<(), Raise> {
    unsafe {
        lua::lua_newtable(l);
        check_stack(l, 1, "in function mp_decode_to_lua_array")?;
    }
    frames.push(Frame::Array { left: n, index: 1 });
    Ok(())
}

/// Starts a map of `n` pairs: a new table and its frame.
unsafe fn open_map(l: *mut lua::lua_State, frames: &mut Vec<Frame>, n: u64) {
    unsafe { lua::lua_newtable(l) };
    frames.push(Frame::Map {
        left: n,
        value: false,
    });
}

#[cfg(test)]
mod tests {
    //! Every expected result below was produced by redis-server 7.0.15
    //! running the same Lua code through `EVAL` (chunk `@user_script`).

    use mlua_sys as lua;
    use std::ffi::{c_char, CStr};

    /// A Lua state with the libraries Redis scripts see (those used here).
    struct State(*mut lua::lua_State);

    impl Drop for State {
        fn drop(&mut self) {
            unsafe { lua::lua_close(self.0) }
        }
    }

    impl State {
        fn new() -> State {
            unsafe {
                let l = lua::luaL_newstate();
                assert!(!l.is_null());
                let libs: [(&CStr, lua::lua_CFunction); 5] = [
                    (c"", lua::luaopen_base),
                    (c"table", lua::luaopen_table),
                    (c"string", lua::luaopen_string),
                    (c"math", lua::luaopen_math),
                    (c"cmsgpack", super::open),
                ];
                for (name, f) in libs {
                    lua::lua_pushcfunction(l, f);
                    lua::lua_pushstring(l, name.as_ptr());
                    lua::lua_call(l, 1, 0);
                }
                State(l)
            }
        }

        /// Runs chunk `code` named `@user_script` and returns its string
        /// result (or the error).
        fn run(&self, code: &str) -> String {
            unsafe {
                let l = self.0;
                let mut r = lua::luaL_loadbuffer(
                    l,
                    code.as_ptr() as *const c_char,
                    code.len(),
                    c"@user_script".as_ptr(),
                );
                if r == 0 {
                    r = lua::lua_pcall(l, 0, 1, 0);
                }
                let mut len = 0usize;
                let p = lua::lua_tolstring(l, -1, &mut len);
                let s = if p.is_null() {
                    String::from("(no string)")
                } else {
                    String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len))
                        .into_owned()
                };
                lua::lua_settop(l, 0);
                if r == 0 {
                    s
                } else {
                    format!("LUA ERROR: {s}")
                }
            }
        }
    }

    /// Formats the results of `pcall(f)` on one line: strings as
    /// `s:<hex>`, numbers as `%.17g`, tables with sorted entries, or
    /// `ERR:<message>`.
    const SHOW: &str = r#"local function hex(s) return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end)) end local function ser(v) if type(v) == 'table' then local t = {} for k, x in pairs(v) do t[#t + 1] = ser(k) .. '=' .. ser(x) end table.sort(t) return '{' .. table.concat(t, ',') .. '}' elseif type(v) == 'string' then return 's:' .. hex(v) elseif type(v) == 'number' then return string.format('%.17g', v) else return tostring(v) end end local function show(ok, ...) if not ok then return 'ERR:' .. tostring((...)) end local t = {} for i = 1, select('#', ...) do t[#t + 1] = ser((select(i, ...))) end return table.concat(t, ' ') end return show(pcall(function() return "#;

    /// (Lua expression list, its results as [`SHOW`] prints them).
    const CASES: &[(&str, &str)] = &[
        (
            r#"cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION"#,
            r#"s:636d73677061636b s:6c75612d636d73677061636b20302e342e30 s:436f707972696768742028432920323031322c2053616c7661746f72652053616e66696c6970706f s:4d6573736167655061636b204320696d706c656d656e746174696f6e20666f72204c7561"#,
        ),
        (
            r#"(function() local t = {} for k, v in pairs(cmsgpack) do t[#t+1] = k .. ':' .. type(v) end return table.concat(t, ',') end)()"#,
            r#"s:5f4445534352495054494f4e3a737472696e672c7061636b3a66756e6374696f6e2c5f4e414d453a737472696e672c756e7061636b3a66756e6374696f6e2c5f434f505952494748543a737472696e672c5f56455253494f4e3a737472696e672c756e7061636b5f6f6e653a66756e6374696f6e2c756e7061636b5f6c696d69743a66756e6374696f6e"#,
        ),
        (r#"cmsgpack.pack(nil)"#, r#"s:c0"#),
        (r#"cmsgpack.pack(true, false)"#, r#"s:c3c2"#),
        (r#"cmsgpack.pack(nil, nil, 1)"#, r#"s:c0c001"#),
        (
            r#"cmsgpack.pack(string.len, coroutine.create(function() end))"#,
            r#"s:c0c0"#,
        ),
        (r#"cmsgpack.pack({f = string.len})"#, r#"s:81a166c0"#),
        (r#"cmsgpack.pack(0, 1, 127)"#, r#"s:00017f"#),
        (r#"cmsgpack.pack(128, 255)"#, r#"s:cc80ccff"#),
        (r#"cmsgpack.pack(256, 65535)"#, r#"s:cd0100cdffff"#),
        (
            r#"cmsgpack.pack(65536, 4294967295)"#,
            r#"s:ce00010000ceffffffff"#,
        ),
        (
            r#"cmsgpack.pack(4294967296, 2^53, 2^53 + 2)"#,
            r#"s:cf0000000100000000cf0020000000000000cf0020000000000002"#,
        ),
        (r#"cmsgpack.pack(2^63 - 1024)"#, r#"s:cf7ffffffffffffc00"#),
        (r#"cmsgpack.pack(-1, -31, -32)"#, r#"s:ffe1e0"#),
        (r#"cmsgpack.pack(-33, -127, -128)"#, r#"s:d0dfd081d080"#),
        (
            r#"cmsgpack.pack(-129, -32767, -32768)"#,
            r#"s:d1ff7fd18001d18000"#,
        ),
        (
            r#"cmsgpack.pack(-32769, -2147483647, -2147483648)"#,
            r#"s:d2ffff7fffd280000001d280000000"#,
        ),
        (
            r#"cmsgpack.pack(-2147483649, -2^53)"#,
            r#"s:d3ffffffff7fffffffd3ffe0000000000000"#,
        ),
        (r#"cmsgpack.pack(-2^63)"#, r#"s:d38000000000000000"#),
        (
            r#"cmsgpack.pack(2^63, 2^64, -2^63 - 2048)"#,
            r#"s:ca5f000000ca5f800000cbc3e0000000000001"#,
        ),
        (
            r#"cmsgpack.pack(0.5, -0.25, 1.5, 3.25)"#,
            r#"s:ca3f000000cabe800000ca3fc00000ca40500000"#,
        ),
        (
            r#"cmsgpack.pack(0.1, 1/3, -1e300, 1e-300)"#,
            r#"s:cb3fb999999999999acb3fd5555555555555cbfe37e43c8800759ccb01a56e1fc2f8f359"#,
        ),
        (
            r#"cmsgpack.pack(3.4028234663852886e38, 3.4028235677973366e38)"#,
            r#"s:ca7f7fffffcb47effffff0000000"#,
        ),
        (
            r#"cmsgpack.pack(2^-149, 2^-150, 1e-45)"#,
            r#"s:ca00000001cb3690000000000000cb3696d601ad376ab9"#,
        ),
        (
            r#"cmsgpack.pack(math.huge, -math.huge)"#,
            r#"s:ca7f800000caff800000"#,
        ),
        (
            r#"(function() local z = 0 return cmsgpack.pack(-z, 0/z) end)()"#,
            r#"s:00cbfff8000000000000"#,
        ),
        (r#"cmsgpack.pack(-0.0)"#, r#"s:00"#),
        (
            r#"cmsgpack.pack(16777217, 16777217.5, 1e15 + 0.5)"#,
            r#"s:ce01000001cb4170000018000000cb430c6bf526340004"#,
        ),
        (r#"cmsgpack.pack('12', 12)"#, r#"s:a231320c"#),
        (r#"cmsgpack.pack('')"#, r#"s:a0"#),
        (r#"cmsgpack.pack('a', '\0\255\128')"#, r#"s:a161a300ff80"#),
        (
            r#"cmsgpack.pack(string.rep('a', 31))"#,
            r#"s:bf61616161616161616161616161616161616161616161616161616161616161"#,
        ),
        (
            r#"string.sub(cmsgpack.pack(string.rep('b', 32)), 1, 4), #cmsgpack.pack(string.rep('b', 32))"#,
            r#"s:d9206262 34"#,
        ),
        (
            r#"string.sub(cmsgpack.pack(string.rep('c', 255)), 1, 4), #cmsgpack.pack(string.rep('c', 255))"#,
            r#"s:d9ff6363 257"#,
        ),
        (
            r#"string.sub(cmsgpack.pack(string.rep('d', 256)), 1, 4), #cmsgpack.pack(string.rep('d', 256))"#,
            r#"s:da010064 259"#,
        ),
        (
            r#"string.sub(cmsgpack.pack(string.rep('e', 65535)), 1, 4), #cmsgpack.pack(string.rep('e', 65535))"#,
            r#"s:daffff65 65538"#,
        ),
        (
            r#"string.sub(cmsgpack.pack(string.rep('f', 65536)), 1, 6), #cmsgpack.pack(string.rep('f', 65536))"#,
            r#"s:db0001000066 65541"#,
        ),
        (
            r#"string.sub(cmsgpack.pack(string.rep('g', 100000)), -3), #cmsgpack.pack(string.rep('g', 100000))"#,
            r#"s:676767 100005"#,
        ),
        (r#"cmsgpack.pack({})"#, r#"s:90"#),
        (r#"cmsgpack.pack({1, 2, 3})"#, r#"s:93010203"#),
        (
            r#"cmsgpack.pack({'a', {true, false}, {}})"#,
            r#"s:93a16192c3c290"#,
        ),
        (
            r#"(function() local t = {} for i = 1, 15 do t[i] = i end return cmsgpack.pack(t) end)()"#,
            r#"s:9f0102030405060708090a0b0c0d0e0f"#,
        ),
        (
            r#"(function() local t = {} for i = 1, 16 do t[i] = i end return cmsgpack.pack(t) end)()"#,
            r#"s:dc00100102030405060708090a0b0c0d0e0f10"#,
        ),
        (
            r#"(function() local t = {} for i = 1, 65535 do t[i] = i % 7 end local p = cmsgpack.pack(t) return string.sub(p, 1, 6), #p end)()"#,
            r#"s:dcffff010203 65538"#,
        ),
        (
            r#"(function() local t = {} for i = 1, 65536 do t[i] = i % 7 end local p = cmsgpack.pack(t) return string.sub(p, 1, 8), #p end)()"#,
            r#"s:dd00010000010203 65541"#,
        ),
        (
            r#"cmsgpack.pack({[1] = 'x', [2] = 'y'})"#,
            r#"s:92a178a179"#,
        ),
        (r#"cmsgpack.pack({n = 1, 10, 20})"#, r#"s:83010a0214a16e01"#),
        (r#"cmsgpack.pack({a = 1})"#, r#"s:81a16101"#),
        (
            r#"cmsgpack.pack({a = 1, b = 2, c = 3, d = 4, e = 5, f = 6})"#,
            r#"s:86a16101a16303a16202a16505a16404a16606"#,
        ),
        (
            r#"cmsgpack.pack({1, 2, 3, x = 'y', [10] = true})"#,
            r#"s:850101020203030ac3a178a179"#,
        ),
        (r#"cmsgpack.pack({1, nil, 3})"#, r#"s:8201010303"#),
        (r#"cmsgpack.pack({nil, nil, 3})"#, r#"s:810303"#),
        (
            r#"cmsgpack.pack({[1] = 1, [2] = 2, [4] = 4})"#,
            r#"s:83010102020404"#,
        ),
        (r#"cmsgpack.pack({[0] = 'z'})"#, r#"s:8100a17a"#),
        (r#"cmsgpack.pack({[-1] = 'z'})"#, r#"s:81ffa17a"#),
        (r#"cmsgpack.pack({[1.5] = 'z'})"#, r#"s:81ca3fc00000a17a"#),
        (
            r#"cmsgpack.pack({[2^31] = 1}, {[2^31 - 1] = 1})"#,
            r#"s:81ce800000000181ce7fffffff01"#,
        ),
        (
            r#"cmsgpack.pack({[true] = 1, [false] = 0})"#,
            r#"s:82c200c301"#,
        ),
        (r#"cmsgpack.pack({['1'] = 1})"#, r#"s:81a13101"#),
        (
            r#"(function() local t = {} for i = 1, 15 do t['k' .. i] = i end return #cmsgpack.pack(t), string.sub(cmsgpack.pack(t), 1, 1) end)()"#,
            r#"67 s:8f"#,
        ),
        (
            r#"(function() local t = {} for i = 1, 16 do t['k' .. i] = i end return cmsgpack.pack(t) end)()"#,
            r#"s:de0010a36b31320ca36b313610a26b3909a26b3808a26b3101a36b31350fa26b3303a26b3202a36b31340ea36b31330da36b31300aa36b31310ba26b3606a26b3707a26b3404a26b3505"#,
        ),
        (
            r#"(function() local t = {} for i = 1, 65536 do t['k' .. i] = 0 end local p = cmsgpack.pack(t) return string.sub(p, 1, 5), #p end)()"#,
            r#"s:df00010000 513187"#,
        ),
        (
            r#"(function() local t = {} for i = 1, 40 do t[i * 3] = i end return cmsgpack.pack(t) end)()"#,
            r#"s:de00281b094b190301361206026c24270d0c043f154e1a180830106f256020210b511b39134216150772262a0e6321541c451733110f05120666221e0a240c571d3c14481878282d0f692375275d1f5a1e0903"#,
        ),
        (
            r#"(function() local t = 1 for i = 1, 16 do t = {t} end return cmsgpack.pack(t) end)()"#,
            r#"s:9191919191919191919191919191919101"#,
        ),
        (
            r#"(function() local t = 1 for i = 1, 17 do t = {t} end return cmsgpack.pack(t) end)()"#,
            r#"s:91919191919191919191919191919191c0"#,
        ),
        (
            r#"(function() local t = {} for i = 1, 16 do t = {a = t} end return cmsgpack.pack(t) end)()"#,
            r#"s:81a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a161c0"#,
        ),
        (
            r#"(function() local t = {} t[1] = t return cmsgpack.pack(t) end)()"#,
            r#"s:91919191919191919191919191919191c0"#,
        ),
        (
            r#"(function() local t = {} t.x = t return cmsgpack.pack(t) end)()"#,
            r#"s:81a17881a17881a17881a17881a17881a17881a17881a17881a17881a17881a17881a17881a17881a17881a17881a178c0"#,
        ),
        (
            r#"(function() local t = {} t[t] = 1 return cmsgpack.pack(t) end)()"#,
            r#"s:81818181818181818181818181818181c001010101010101010101010101010101"#,
        ),
        (
            r#"(function() local t = 1 for i = 1, 15 do t = {t} end return cmsgpack.pack(t, {t}, {{t}}) end)()"#,
            r#"s:91919191919191919191919191919101919191919191919191919191919191910191919191919191919191919191919191c0"#,
        ),
        (
            r#"cmsgpack.pack()"#,
            r#"ERR:user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.)"#,
        ),
        (
            r#"cmsgpack.pack(1, 'two', {3}, nil, false)"#,
            r#"s:01a374776f9103c0c2"#,
        ),
        (
            r#"#cmsgpack.pack(unpack((function() local t = {} for i = 1, 4000 do t[i] = i end return t end)()))"#,
            r#"11618"#,
        ),
        (
            r#"cmsgpack.pack(unpack((function() local t = {} for i = 1, 4001 do t[i] = i end return t end)()))"#,
            r#"ERR:user_script:1: bad argument #0 to 'pack' (Too many arguments for MessagePack pack.)"#,
        ),
        (
            r#"#cmsgpack.pack(unpack((function() local t = {} for i = 1, 4000 do t[i] = i end t[3998] = {} return t end)()))"#,
            r#"11616"#,
        ),
        (
            r#"cmsgpack.pack(unpack((function() local t = {} for i = 1, 4000 do t[i] = i end t[3999] = {} return t end)()))"#,
            r#"ERR:user_script:1: stack overflow (in function table_is_an_array)"#,
        ),
        (
            r#"cmsgpack.pack(unpack((function() local t = {} for i = 1, 4000 do t[i] = i end t[3998] = {{}} return t end)()))"#,
            r#"ERR:user_script:1: stack overflow (in function table_is_an_array)"#,
        ),
        (
            r#"cmsgpack.pack(unpack((function() local t = {} for i = 1, 4000 do t[i] = {a = 1} end return t end)()))"#,
            r#"ERR:user_script:1: stack overflow (in function mp_encode_lua_table_as_map)"#,
        ),
        (
            r#"#cmsgpack.pack(unpack((function() local t = {} for i = 1, 3998 do t[i] = {a = 1} end return t end)()))"#,
            r#"15992"#,
        ),
        (
            r#"cmsgpack.unpack('\0\127\204\255\205\1\0\206\255\255\255\255')"#,
            r#"0 127 255 256 4294967295"#,
        ),
        (
            r#"cmsgpack.unpack('\207\0\0\0\1\0\0\0\0\207\0\32\0\0\0\0\0\1')"#,
            r#"4294967296 9007199254740992"#,
        ),
        (
            r#"cmsgpack.unpack('\207\255\255\255\255\255\255\255\255\207\128\0\0\0\0\0\0\0\207\127\255\255\255\255\255\255\255')"#,
            r#"-1 -9.2233720368547758e+18 9.2233720368547758e+18"#,
        ),
        (
            r#"cmsgpack.unpack('\255\224\208\128\208\127\209\128\0\210\128\0\0\0')"#,
            r#"-1 -32 -128 127 -32768 -2147483648"#,
        ),
        (
            r#"cmsgpack.unpack('\211\128\0\0\0\0\0\0\0\211\255\255\255\255\255\255\255\255\211\0\0\0\0\0\0\0\5')"#,
            r#"-9.2233720368547758e+18 -1 5"#,
        ),
        (r#"cmsgpack.unpack('\192\194\195')"#, r#"nil false true"#),
        (
            r#"cmsgpack.unpack('\202\63\192\0\0\203\63\185\153\153\153\153\153\154')"#,
            r#"1.5 0.10000000000000001"#,
        ),
        (
            r#"cmsgpack.unpack('\202\255\128\0\0\202\0\0\0\1\203\0\0\0\0\0\0\0\1')"#,
            r#"-inf 1.4012984643248171e-45 4.9406564584124654e-324"#,
        ),
        (r#"cmsgpack.unpack('\202\127\192\0\0')"#, r#"nan"#),
        (
            r#"cmsgpack.pack(cmsgpack.unpack('\202\127\128\0\1'))"#,
            r#"s:cb7ff8000020000000"#,
        ),
        (
            r#"cmsgpack.pack(cmsgpack.unpack('\203\127\240\0\0\0\0\0\1'))"#,
            r#"s:cb7ff0000000000001"#,
        ),
        (
            r#"cmsgpack.unpack('\160\161a\163abc')"#,
            r#"s: s:61 s:616263"#,
        ),
        (
            r#"cmsgpack.unpack('\217\3abc\218\0\3abc\219\0\0\0\3abc')"#,
            r#"s:616263 s:616263 s:616263"#,
        ),
        (
            r#"cmsgpack.unpack('\217\0\218\0\0\219\0\0\0\0')"#,
            r#"s: s: s:"#,
        ),
        (
            r#"#cmsgpack.unpack(cmsgpack.pack(string.rep('x', 70000)))"#,
            r#"70000"#,
        ),
        (r#"cmsgpack.unpack('\147\1\2\3')"#, r#"{1=1,2=2,3=3}"#),
        (r#"cmsgpack.unpack('\147\1\192\3')"#, r#"{1=1,3=3}"#),
        (
            r#"(function() local t = cmsgpack.unpack('\147\1\192\3') return #t end)()"#,
            r#"1"#,
        ),
        (
            r#"cmsgpack.unpack('\220\0\2\1\2\221\0\0\0\2\3\4')"#,
            r#"{1=1,2=2} {1=3,2=4}"#,
        ),
        (
            r#"cmsgpack.unpack('\130\161a\1\161b\2')"#,
            r#"{s:61=1,s:62=2}"#,
        ),
        (
            r#"cmsgpack.unpack('\222\0\1\1\2\223\0\0\0\1\3\4')"#,
            r#"{1=2} {3=4}"#,
        ),
        (
            r#"cmsgpack.unpack('\144\128\220\0\0\221\0\0\0\0\222\0\0\223\0\0\0\0')"#,
            r#"{} {} {} {} {} {}"#,
        ),
        (r#"cmsgpack.unpack('\129\1\192')"#, r#"{}"#),
        (r#"cmsgpack.unpack('\130\1\2\1\3')"#, r#"{1=3}"#),
        (r#"cmsgpack.unpack('\129\145\1\2')"#, r#"{{1=1}=2}"#),
        (r#"cmsgpack.unpack('\129\194\195')"#, r#"{false=true}"#),
        (
            r#"cmsgpack.unpack('\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\1')"#,
            r#"{1={1={1={1={1={1={1={1={1={1={1={1={1={1={1={1={1={1={1={1=1}}}}}}}}}}}}}}}}}}}}"#,
        ),
        (
            r#"cmsgpack.unpack('\193')"#,
            r#"ERR:user_script:1: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack('\196\1a')"#,
            r#"ERR:user_script:1: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack('\197\0\1a')"#,
            r#"ERR:user_script:1: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack('\198\0\0\0\1a')"#,
            r#"ERR:user_script:1: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack('\199\1\1a')"#,
            r#"ERR:user_script:1: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack('\200\0\1\1a')"#,
            r#"ERR:user_script:1: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack('\201\0\0\0\1\1a')"#,
            r#"ERR:user_script:1: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack('\212\1a')"#,
            r#"ERR:user_script:1: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack('\216\1aaaaaaaaaaaaaaaa')"#,
            r#"ERR:user_script:1: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack('\1\2\196')"#,
            r#"ERR:user_script:1: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack('\204')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\205\1')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\206\1\2\3')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\207\1\2\3\4\5\6\7')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\211\1')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\202\1\2\3')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\203\1\2\3\4\5\6\7')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\163ab')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\217')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\217\5ab')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\218\0')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\219\0\0\0')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\219\0\0\0\5ab')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\146\1')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\146\1\193')"#,
            r#"ERR:user_script:1: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack('\130\1')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\220\0')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\221\0\0\0')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\222\0')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\223\0\0\0')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\220\0\1')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\221\255\255\255\255')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\129\192\1')"#,
            r#"ERR:table index is nil"#,
        ),
        (
            r#"cmsgpack.unpack('\129\192\1\193')"#,
            r#"ERR:table index is nil"#,
        ),
        (
            r#"cmsgpack.unpack('\129\192\204')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack('\129\203\127\248\0\0\0\0\0\0\1')"#,
            r#"ERR:table index is NaN"#,
        ),
        (
            r#"cmsgpack.unpack('\129\1\193')"#,
            r#"ERR:user_script:1: Bad data format in input."#,
        ),
        (
            r#"pcall(cmsgpack.unpack, '\204')"#,
            r#"false s:4d697373696e6720627974657320696e20696e7075742e"#,
        ),
        (
            r#"pcall(cmsgpack.unpack, '\129\192\1')"#,
            r#"false s:7461626c6520696e646578206973206e696c"#,
        ),
        (
            r#"select('#', cmsgpack.unpack(string.rep('\0', 7999)))"#,
            r#"7999"#,
        ),
        (
            r#"select('#', cmsgpack.unpack(string.rep('\0', 8000)))"#,
            r#"ERR:user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"#,
        ),
        (
            r#"select('#', cmsgpack.unpack_limit(string.rep('\0', 8000), 7998))"#,
            r#"7999"#,
        ),
        (
            r#"select('#', cmsgpack.unpack_limit(string.rep('\0', 8000), 7999))"#,
            r#"ERR:user_script:1: stack overflow (in function mp_unpack_full)"#,
        ),
        (
            r#"select('#', cmsgpack.unpack_limit(string.rep('\0', 8000), 8000))"#,
            r#"ERR:user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"#,
        ),
        (
            r#"select('#', cmsgpack.unpack(string.rep('\145', 3999) .. '\0'))"#,
            r#"1"#,
        ),
        (
            r#"select('#', cmsgpack.unpack(string.rep('\145', 4000) .. '\0'))"#,
            r#"ERR:user_script:1: stack overflow (in function mp_decode_to_lua_array)"#,
        ),
        (
            r#"select('#', cmsgpack.unpack(string.rep('\145', 100000) .. '\0'))"#,
            r#"ERR:user_script:1: stack overflow (in function mp_decode_to_lua_array)"#,
        ),
        (
            r#"select('#', cmsgpack.unpack(string.rep('\129\0', 3990) .. '\0'))"#,
            r#"1"#,
        ),
        (
            r#"select('#', cmsgpack.unpack(string.rep('\129\0', 4000) .. '\0'))"#,
            r#"ERR:user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"#,
        ),
        (
            r#"select('#', cmsgpack.unpack(string.rep('\129', 3990) .. '\0'))"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"select('#', cmsgpack.unpack(string.rep('\129', 100000) .. '\0'))"#,
            r#"ERR:user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"#,
        ),
        (r#"cmsgpack.unpack('')"#, r#""#),
        (
            r#"cmsgpack.unpack()"#,
            r#"ERR:user_script:1: bad argument #1 to 'unpack' (string expected, got no value)"#,
        ),
        (
            r#"cmsgpack.unpack(nil)"#,
            r#"ERR:user_script:1: bad argument #1 to 'unpack' (string expected, got nil)"#,
        ),
        (
            r#"cmsgpack.unpack({})"#,
            r#"ERR:user_script:1: bad argument #1 to 'unpack' (string expected, got table)"#,
        ),
        (r#"cmsgpack.unpack(123)"#, r#"49 50 51"#),
        (r#"cmsgpack.unpack('\1', 5, 6)"#, r#"1"#),
        (
            r#"cmsgpack:unpack()"#,
            r#"ERR:user_script:1: calling 'unpack' on bad self (string expected, got table)"#,
        ),
        (
            r#"cmsgpack:unpack_one()"#,
            r#"ERR:user_script:1: calling 'unpack_one' on bad self (string expected, got table)"#,
        ),
        (r#"cmsgpack.unpack_one('\1\2\3')"#, r#"1 1"#),
        (r#"cmsgpack.unpack_one('\1\2\3', 1)"#, r#"2 2"#),
        (r#"cmsgpack.unpack_one('\1\2\3', 2)"#, r#"-1 3"#),
        (r#"cmsgpack.unpack_one('\1\2\3', 3)"#, r#"-1"#),
        (
            r#"cmsgpack.unpack_one('\1\2\3', 4)"#,
            r#"ERR:user_script:1: Start offset 4 greater than input length 3."#,
        ),
        (
            r#"cmsgpack.unpack_one('\1\2\3', -1)"#,
            r#"ERR:user_script:1: Invalid request to unpack with offset of -1 and limit of 3."#,
        ),
        (r#"cmsgpack.unpack_one('')"#, r#"-1"#),
        (
            r#"cmsgpack.unpack_one('', 1)"#,
            r#"ERR:user_script:1: Start offset 1 greater than input length 0."#,
        ),
        (r#"cmsgpack.unpack_one('\1\2\3', '1')"#, r#"2 2"#),
        (
            r#"cmsgpack.unpack_one('\1\2\3', 'x')"#,
            r#"ERR:user_script:1: bad argument #2 to 'unpack_one' (number expected, got string)"#,
        ),
        (r#"cmsgpack.unpack_one('\1\2\3', 1.9)"#, r#"2 2"#),
        (r#"cmsgpack.unpack_one('\1\2\3', -0.5)"#, r#"1 1"#),
        (r#"cmsgpack.unpack_one('\1\2\3', nil)"#, r#"1 1"#),
        (r#"cmsgpack.unpack_one('\1\2\3', 1, 2, 3)"#, r#"2 2"#),
        (
            r#"cmsgpack.unpack_one()"#,
            r#"ERR:user_script:1: bad argument #1 to 'unpack_one' (string expected, got no value)"#,
        ),
        (
            r#"cmsgpack.unpack_one(nil, 1)"#,
            r#"ERR:user_script:1: bad argument #1 to 'unpack_one' (string expected, got nil)"#,
        ),
        (
            r#"cmsgpack.unpack_one('\204')"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (r#"cmsgpack.unpack_one('\1\204')"#, r#"1 1"#),
        (
            r#"cmsgpack.unpack_one('\1\204', 1)"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (
            r#"cmsgpack.unpack_one('\147\1\2\3\4')"#,
            r#"4 {1=1,2=2,3=3}"#,
        ),
        (
            r#"cmsgpack.unpack_one(cmsgpack.pack({a = {1, 2}}, 'next'), 0)"#,
            r#"6 {s:61={1=1,2=2}}"#,
        ),
        (
            r#"(function() local s = cmsgpack.pack(1, 'two', {3}, nil, false) local out, off = {}, 0 while off ~= -1 do local o, v = cmsgpack.unpack_one(s, off) out[#out+1] = tostring(o) .. '/' .. type(v) off = o end return table.concat(out, ' ') end)()"#,
            r#"s:312f6e756d62657220352f737472696e6720372f7461626c6520382f6e696c202d312f626f6f6c65616e"#,
        ),
        (r#"cmsgpack.unpack_limit('\1\2\3', 2)"#, r#"2 1 2"#),
        (r#"cmsgpack.unpack_limit('\1\2\3', 2, 1)"#, r#"-1 2 3"#),
        (r#"cmsgpack.unpack_limit('\1\2\3', 3)"#, r#"-1 1 2 3"#),
        (r#"cmsgpack.unpack_limit('\1\2\3', 5)"#, r#"-1 1 2 3"#),
        (r#"cmsgpack.unpack_limit('\1\2\3', 0)"#, r#"1 2 3"#),
        (r#"cmsgpack.unpack_limit('\1\2\3', 0, 0)"#, r#"1 2 3"#),
        (r#"cmsgpack.unpack_limit('\1\2\3', 0, 1)"#, r#"1"#),
        (r#"cmsgpack.unpack_limit('\1\2\3', 0, 3)"#, r#"-1"#),
        (r#"cmsgpack.unpack_limit('\1\2\3', 1, 3)"#, r#"-1"#),
        (r#"cmsgpack.unpack_limit('', 1)"#, r#"-1"#),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', -1)"#,
            r#"ERR:user_script:1: Invalid request to unpack with offset of 0 and limit of 3."#,
        ),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', -1, 2)"#,
            r#"ERR:user_script:1: Invalid request to unpack with offset of 2 and limit of 3."#,
        ),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', 1, -2)"#,
            r#"ERR:user_script:1: Invalid request to unpack with offset of -2 and limit of 3."#,
        ),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', 1, 7)"#,
            r#"ERR:user_script:1: Start offset 7 greater than input length 3."#,
        ),
        (
            r#"cmsgpack.unpack_limit('\1\2\3')"#,
            r#"ERR:user_script:1: bad argument #2 to 'unpack_limit' (number expected, got no value)"#,
        ),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', 'a')"#,
            r#"ERR:user_script:1: bad argument #2 to 'unpack_limit' (number expected, got string)"#,
        ),
        (r#"cmsgpack.unpack_limit('\1\2\3', '2')"#, r#"2 1 2"#),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', 1, 'a')"#,
            r#"ERR:user_script:1: bad argument #3 to 'unpack_limit' (number expected, got string)"#,
        ),
        (
            r#"cmsgpack.unpack_limit(nil, 'a')"#,
            r#"ERR:user_script:1: bad argument #2 to 'unpack_limit' (number expected, got string)"#,
        ),
        (
            r#"cmsgpack.unpack_limit(nil, 1)"#,
            r#"ERR:user_script:1: bad argument #1 to 'unpack_limit' (string expected, got nil)"#,
        ),
        (r#"cmsgpack.unpack_limit(123, 1)"#, r#"1 49"#),
        (r#"cmsgpack.unpack_limit(123, 1, 2)"#, r#"-1 51"#),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', 2^32 + 1)"#,
            r#"-1 1 2 3"#,
        ),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', 2^32 + 1, 2^32 + 1)"#,
            r#"ERR:user_script:1: Start offset 1 greater than input length 3."#,
        ),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', 1, 2^31)"#,
            r#"ERR:user_script:1: Start offset -2147483648 greater than input length 3."#,
        ),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', 1, 2^32 + 3)"#,
            r#"ERR:user_script:1: Start offset 3 greater than input length 3."#,
        ),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', 1, 4294967295)"#,
            r#"ERR:user_script:1: Start offset -1 greater than input length 3."#,
        ),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', 1e300)"#,
            r#"ERR:user_script:1: Invalid request to unpack with offset of 0 and limit of 3."#,
        ),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', 1, 1e300)"#,
            r#"ERR:user_script:1: Invalid request to unpack with offset of 0 and limit of 3."#,
        ),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', 1, -1e300)"#,
            r#"ERR:user_script:1: Invalid request to unpack with offset of 0 and limit of 3."#,
        ),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', 1, 2^63)"#,
            r#"ERR:user_script:1: Invalid request to unpack with offset of 0 and limit of 3."#,
        ),
        (r#"cmsgpack.unpack_limit('\1\2\3', 2^31)"#, r#"-1 1 2 3"#),
        (
            r#"cmsgpack.unpack_limit('\1\2\3', 1, 0/0)"#,
            r#"ERR:user_script:1: Invalid request to unpack with offset of 0 and limit of 3."#,
        ),
        (
            r#"cmsgpack.unpack_limit('\1\204', 5)"#,
            r#"ERR:user_script:1: Missing bytes in input."#,
        ),
        (r#"cmsgpack.unpack_limit('\1\204\1', 1, 1)"#, r#"-1 1"#),
        (r#"cmsgpack.unpack_limit('\1\193', 1)"#, r#"1 1"#),
        (
            r#"cmsgpack.unpack_limit('\1\193', 2)"#,
            r#"ERR:user_script:1: Bad data format in input."#,
        ),
        (
            r#"cmsgpack.unpack(cmsgpack.pack(1.5, -2^63, 2^63, 'x', true, false, nil, 0.1, -7))"#,
            r#"1.5 -9.2233720368547758e+18 9.2233720368547758e+18 s:78 true false nil 0.10000000000000001 -7"#,
        ),
        (
            r#"cmsgpack.unpack(cmsgpack.pack({1, 2, {3, {4}}}, {x = {y = 'z'}}, {}))"#,
            r#"{1=1,2=2,3={1=3,2={1=4}}} {s:78={s:79=s:7a}} {}"#,
        ),
        (
            r#"cmsgpack.unpack(cmsgpack.pack({1, nil, 3}, {[1] = 'a', [3] = 'c'}))"#,
            r#"{1=1,3=3} {1=s:61,3=s:63}"#,
        ),
        (
            r#"cmsgpack.unpack(cmsgpack.pack(string.rep('q', 40), string.rep('r', 300)))"#,
            r#"s:71717171717171717171717171717171717171717171717171717171717171717171717171717171 s:727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272"#,
        ),
        (
            r#"(function() local t = {} for i = 1, 300 do t[i] = i * 1000 - 150000 end local u = cmsgpack.unpack(cmsgpack.pack(t)) for i = 1, 300 do if u[i] ~= t[i] then return i end end return #u end)()"#,
            r#"300"#,
        ),
        (
            r#"(function() local t = {} for i = 1, 100 do t['key' .. i] = {i, tostring(i)} end local u = cmsgpack.unpack(cmsgpack.pack(t)) return cmsgpack.pack(u) == cmsgpack.pack(t) end)()"#,
            r#"false"#,
        ),
        (
            r#"(function() local t = 1 for i = 1, 20 do t = {t} end return cmsgpack.unpack(cmsgpack.pack(t)) end)()"#,
            r#"{1={1={1={1={1={1={1={1={1={1={1={1={1={1={1={}}}}}}}}}}}}}}}}"#,
        ),
    ];

    #[test]
    fn matches_redis() {
        let state = State::new();
        let mut failed = Vec::new();
        for (expr, want) in CASES {
            let got = state.run(&format!("{SHOW}{expr} end))"));
            if got != *want {
                failed.push(format!("{expr}\n   got: {got}\n  want: {want}"));
            }
        }
        assert!(
            failed.is_empty(),
            "{} cases differ:\n{}",
            failed.len(),
            failed.join("\n")
        );
    }

    /// Random values packed and unpacked, random and mutated input
    /// unpacked: a digest of every result.
    const FUZZ: &str = r#"local function hex(s)
  return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end))
end
local function ser(v)
  if type(v) == 'table' then
    local t = {}
    for k, x in pairs(v) do t[#t + 1] = ser(k) .. '=' .. ser(x) end
    table.sort(t)
    return '{' .. table.concat(t, ',') .. '}'
  elseif type(v) == 'string' then return 's:' .. hex(v)
  elseif type(v) == 'number' then return string.format('%.17g', v)
  else return tostring(v) end
end
local function show(ok, ...)
  if not ok then return 'ERR:' .. tostring((...)) end
  local t = {}
  for i = 1, select('#', ...) do t[#t + 1] = ser((select(i, ...))) end
  return table.concat(t, ' ')
end
local seed = 1
local function rnd(n) seed = (seed * 16807) % 2147483647 return seed % n end
local palette = {0, 1, 5, 127, 128, 255, 0x81, 0x8f, 0x90, 0x91, 0x92, 0x9f, 0xa0, 0xa1,
  0xa3, 0xbf, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc7, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0,
  0xd1, 0xd2, 0xd3, 0xd4, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff, 0x3f, 0x40}
local function rbytes(n)
  local t = {}
  for i = 1, n do
    if rnd(3) == 0 then t[i] = string.char(rnd(256))
    else t[i] = string.char(palette[rnd(#palette) + 1]) end
  end
  return table.concat(t)
end
local nums = {0, 1, -1, 127, 128, -32, -33, 255, 256, -128, -129, 65535, 65536, -32768,
  -32769, 4294967295, 4294967296, -2147483648, -2147483649, 2^53, 2^63, -2^63, 2^64, 0.5,
  -0.25, 0.1, 1e300, -1e-300, 2^-149, math.huge, -math.huge, 3.5, 1e10 + 0.5}
-- Random values; map keys are no tables (ordered by address) and no strings
-- of 32 bytes or more (Redis's Lua hashes those differently), and no key is
-- assigned nil (its dead node would make the layout depend on GC timing).
local function rval(d)
  local w = rnd(10)
  if d > 2 and rnd(d) > 1 then w = rnd(6) end
  if w == 0 then return nil
  elseif w == 1 then return rnd(2) == 0
  elseif w == 2 then return nums[rnd(#nums) + 1]
  elseif w == 3 then return rnd(100000) - 50000
  elseif w == 4 then return rbytes(rnd(40))
  elseif w == 5 then return string.rep('x', rnd(300))
  elseif w <= 7 then
    local t = {}
    for i = 1, rnd(d < 2 and 20 or 4) do t[i] = rval(d + 1) end
    return t
  else
    local t = {}
    for i = 1, rnd(d < 2 and 20 or 4) do
      local k = rval(d + 1)
      if type(k) == 'string' then k = string.sub(k, 1, 31) end
      if k ~= nil and k == k and type(k) ~= 'table' then
        local x = rval(d + 1)
        if x ~= nil then t[k] = x end
      end
    end
    return t
  end
end
local function fuzz_pack(s0, n)
  seed = s0
  local out = {}
  for i = 1, n do
    local ok, p = pcall(cmsgpack.pack, rval(0))
    if ok then out[i] = hex(p) .. ' ' .. show(pcall(cmsgpack.unpack, p))
    else out[i] = 'ERR:' .. tostring(p) end
  end
  return table.concat(out, '\n')
end
local function fuzz_unpack(s0, n)
  seed = s0
  local out = {}
  for i = 1, n do
    local s, w = rbytes(rnd(14)), rnd(3)
    if w == 0 then out[i] = show(pcall(cmsgpack.unpack, s))
    elseif w == 1 then out[i] = show(pcall(cmsgpack.unpack_one, s, rnd(4)))
    else out[i] = show(pcall(cmsgpack.unpack_limit, s, rnd(4), rnd(3))) end
  end
  return table.concat(out, '\n')
end
local function fuzz_mut(s0, n)
  seed = s0
  local out = {}
  for i = 1, n do
    local p, w = cmsgpack.pack(rval(0)), rnd(3)
    if w == 0 then p = string.sub(p, 1, rnd(#p + 1))
    elseif w == 1 then
      local j = rnd(#p) + 1
      p = string.sub(p, 1, j - 1) .. string.char(palette[rnd(#palette) + 1]) .. string.sub(p, j + 1)
    else p = p .. rbytes(rnd(4)) end
    out[i] = show(pcall(cmsgpack.unpack, p)) .. ' | '
      .. show(pcall(cmsgpack.unpack_limit, p, rnd(3), rnd(#p + 2)))
  end
  return table.concat(out, '\n')
end
local function digest(s)
  local h = 0
  for i = 1, #s do h = (h * 31 + string.byte(s, i)) % 4294967296 end
  return #s .. ':' .. h
end
"#;

    #[test]
    fn fuzz_matches_redis() {
        let cases: &[(&str, &str)] = &[
            (r#"digest(fuzz_pack(1, 200))"#, r#"386314:3207123817"#),
            (r#"digest(fuzz_pack(2, 200))"#, r#"264534:2239798829"#),
            (r#"digest(fuzz_unpack(1, 3000))"#, r#"62574:2013571316"#),
            (r#"digest(fuzz_unpack(2, 3000))"#, r#"62348:1736889127"#),
            (r#"digest(fuzz_mut(1, 300))"#, r#"110419:2193056795"#),
            (r#"digest(fuzz_mut(2, 300))"#, r#"90071:653562562"#),
        ];
        let state = State::new();
        for (expr, want) in cases {
            let got = state.run(&format!("{FUZZ}\nreturn {expr}"));
            assert_eq!(got, *want, "{expr}");
        }
    }
}
