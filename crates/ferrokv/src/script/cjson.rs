//! The `cjson` library of Redis's Lua: the lua-cjson 2.1.0 API that Redis
//! 7.0 bundles (deps/lua/src/lua_cjson.c, opened as global `cjson`),
//! rewritten from its documented and observed behaviour.
//!
//! * `cjson.encode(value)`: JSON text of a string, number, boolean, nil or
//!   `cjson.null` (`null`), or table. Strings are escaped as lua-cjson does
//!   (`"`, `\`, `/`, the control characters and DEL; other bytes are copied
//!   raw); numbers are printed with `%.<precision>g`. A table whose keys are
//!   all positive integers is an array (missing entries are `null`) unless
//!   it is excessively sparse; any other table is an object whose keys,
//!   which must be strings or numbers, come in `lua_next` order; an empty
//!   table is `{}`.
//! * `cjson.decode(text)`: a Lua value of JSON text, with lua-cjson's
//!   parser: `\uXXXX` escapes (surrogate pairs included) become UTF-8,
//!   numbers are read by `strtod` (so hexadecimal, `inf` and `nan` are
//!   accepted unless `decode_invalid_numbers` is off), `null` is
//!   `cjson.null`, and errors read "Expected <what> but found <token> at
//!   character <n>".
//! * Settings, each returning the settings in force: `encode_sparse_array
//!   ([convert [, ratio [, safe]]])` (false, 2, 10), `encode_max_depth([n])`
//!   and `decode_max_depth([n])` (1000), `encode_number_precision([n])`
//!   (1..14, 14), `encode_keep_buffer([on])` (true; only remembered),
//!   `encode_invalid_numbers([on|"null"])` (false) and
//!   `decode_invalid_numbers([on])` (true). Booleans or "on"/"off" are
//!   accepted where lua-cjson accepts them.
//! * `cjson.new()`: another `cjson` table with settings of its own; `null`
//!   (a NULL light userdata), `_NAME` ("cjson") and `_VERSION` ("2.1.0").
//!
//! The settings of a table live in a userdata shared as upvalue by its
//! functions, as in lua-cjson. Errors are raised as `luaL_error` raises
//! them (prefixed by the caller's position), with lua-cjson's texts; nesting
//! is bounded both by the depth settings and by the C stack of the call
//! (`lua_checkstack`), as in lua-cjson. Encoding and decoding run in loops
//! over an explicit stack, so deep documents do not use Rust stack.

use super::ffi::{self, lua_fn, push_bytes, LuaResult, Raise};
use mlua_sys as lua;
use mlua_sys::lua_State;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr;

/// The settings of one `cjson` table (lua-cjson's `json_config_t`).
#[derive(Clone, Copy)]
struct Config {
    /// `encode_sparse_array` convert: encode sparse arrays as objects.
    sparse_convert: c_int,
    /// `encode_sparse_array` ratio (0: never sparse).
    sparse_ratio: c_int,
    /// `encode_sparse_array` safe: arrays up to this index are never sparse.
    sparse_safe: c_int,
    encode_max_depth: c_int,
    decode_max_depth: c_int,
    /// 0: error, 1: `inf`/`nan` as printed, 2: `null`.
    encode_invalid_numbers: c_int,
    decode_invalid_numbers: c_int,
    encode_keep_buffer: c_int,
    encode_number_precision: c_int,
}

impl Config {
    const DEFAULT: Config = Config {
        sparse_convert: 0,
        sparse_ratio: 2,
        sparse_safe: 10,
        encode_max_depth: 1000,
        decode_max_depth: 1000,
        encode_invalid_numbers: 0,
        decode_invalid_numbers: 1,
        encode_keep_buffer: 1,
        encode_number_precision: 14,
    };
}

/// The settings of the running function's table (its upvalue).
unsafe fn config(l: *mut lua_State) -> Result<*mut Config, Raise> {
    unsafe {
        let cfg = lua::lua_touserdata(l, lua::lua_upvalueindex(1)) as *mut Config;
        if cfg.is_null() {
            return Err(ffi::error_at(
                l,
                1,
                b"BUG: Unable to fetch CJSON configuration",
            ));
        }
        Ok(cfg)
    }
}

/// Drops all but the argument before an error message is pushed: the error
/// may come when nesting has used every slot `lua_checkstack` allows.
unsafe fn clear_stack(l: *mut lua_State) {
    unsafe { lua::lua_settop(l, 1) };
}

/// Prefixes the message on top of the stack with the caller's position and
/// returns it to raise (what `luaL_error` does).
unsafe fn raise_pushed(l: *mut lua_State) -> Raise {
    unsafe {
        lua::luaL_where(l, 1);
        lua::lua_insert(l, -2);
        lua::lua_concat(l, 2);
    }
    Raise::Pushed
}

// ---------------------------------------------------------------------------
// Settings

/// Checks that at most `args` arguments were given and pads them with nils
/// (lua-cjson's `json_arg_init`).
unsafe fn arg_init(l: *mut lua_State, args: c_int) -> Result<*mut Config, Raise> {
    unsafe {
        if lua::lua_gettop(l) > args {
            return Err(Raise::Arg(args + 1, c"found too many arguments"));
        }
        while lua::lua_gettop(l) < args {
            lua::lua_pushnil(l);
        }
        config(l)
    }
}

/// Applies an enumerated setting at `idx` unless it is nil: a boolean, or
/// "off", "on" or (`with_null`) "null", stored as 0, 1 or 2. Pushes the
/// setting in force: a boolean for off/on, else "null" (lua-cjson's
/// `json_enum_option`).
///
/// An unknown option is raised here by `luaL_checkoption`: the caller must
/// own nothing with a destructor.
unsafe fn enum_option(l: *mut lua_State, idx: c_int, setting: &mut c_int, with_null: bool) {
    const NAMES: [&CStr; 3] = [c"off", c"on", c"null"];
    unsafe {
        if lua::lua_isnoneornil(l, idx) == 0 {
            if lua::lua_isboolean(l, idx) != 0 {
                *setting = lua::lua_toboolean(l, idx);
            } else {
                let mut options = [ptr::null::<c_char>(); 4];
                let n = if with_null { 3 } else { 2 };
                for (slot, name) in options.iter_mut().zip(&NAMES[..n]) {
                    *slot = name.as_ptr();
                }
                *setting = lua::luaL_checkoption(l, idx, ptr::null(), options.as_ptr());
            }
        }
        if *setting == 0 || *setting == 1 {
            lua::lua_pushboolean(l, *setting);
        } else {
            lua::lua_pushstring(l, NAMES[*setting as usize].as_ptr());
        }
    }
}

/// Applies an integer setting at `idx` unless it is nil, checking that it
/// lies in `min..=max` (else argument error `range`, always reported as
/// argument #1 as lua-cjson does), and pushes the setting in force.
unsafe fn integer_option(
    l: *mut lua_State,
    idx: c_int,
    setting: &mut c_int,
    min: c_int,
    max: c_int,
    range: &'static CStr,
) -> Result<(), Raise> {
    unsafe {
        if lua::lua_isnil(l, idx) == 0 {
            // luaL_checkinteger: truncated to lua_Integer, then to int.
            let n = lua::lua_tointeger_(l, idx);
            if n == 0 && lua::lua_isnumber(l, idx) == 0 {
                return Err(Raise::Type(idx, c"number"));
            }
            let v = n as c_int;
            if v < min || v > max {
                return Err(Raise::Arg(1, range));
            }
            *setting = v;
        }
        lua::lua_pushinteger(l, *setting as lua::lua_Integer);
    }
    Ok(())
}

const RANGE_0_MAX: &CStr = c"expected integer between 0 and 2147483647";
const RANGE_1_MAX: &CStr = c"expected integer between 1 and 2147483647";
const RANGE_1_14: &CStr = c"expected integer between 1 and 14";

unsafe fn cfg_encode_sparse_array(l: *mut lua_State) -> LuaResult {
    unsafe {
        let cfg = &mut *arg_init(l, 3)?;
        enum_option(l, 1, &mut cfg.sparse_convert, false);
        integer_option(l, 2, &mut cfg.sparse_ratio, 0, c_int::MAX, RANGE_0_MAX)?;
        integer_option(l, 3, &mut cfg.sparse_safe, 0, c_int::MAX, RANGE_0_MAX)?;
    }
    Ok(3)
}

unsafe fn cfg_encode_max_depth(l: *mut lua_State) -> LuaResult {
    unsafe {
        let cfg = &mut *arg_init(l, 1)?;
        integer_option(l, 1, &mut cfg.encode_max_depth, 1, c_int::MAX, RANGE_1_MAX)?;
    }
    Ok(1)
}

unsafe fn cfg_decode_max_depth(l: *mut lua_State) -> LuaResult {
    unsafe {
        let cfg = &mut *arg_init(l, 1)?;
        integer_option(l, 1, &mut cfg.decode_max_depth, 1, c_int::MAX, RANGE_1_MAX)?;
    }
    Ok(1)
}

unsafe fn cfg_encode_number_precision(l: *mut lua_State) -> LuaResult {
    unsafe {
        let cfg = &mut *arg_init(l, 1)?;
        integer_option(l, 1, &mut cfg.encode_number_precision, 1, 14, RANGE_1_14)?;
    }
    Ok(1)
}

unsafe fn cfg_encode_keep_buffer(l: *mut lua_State) -> LuaResult {
    unsafe {
        let cfg = &mut *arg_init(l, 1)?;
        enum_option(l, 1, &mut cfg.encode_keep_buffer, false);
    }
    Ok(1)
}

unsafe fn cfg_encode_invalid_numbers(l: *mut lua_State) -> LuaResult {
    unsafe {
        let cfg = &mut *arg_init(l, 1)?;
        enum_option(l, 1, &mut cfg.encode_invalid_numbers, true);
    }
    Ok(1)
}

unsafe fn cfg_decode_invalid_numbers(l: *mut lua_State) -> LuaResult {
    unsafe {
        let cfg = &mut *arg_init(l, 1)?;
        enum_option(l, 1, &mut cfg.decode_invalid_numbers, false);
    }
    Ok(1)
}

// ---------------------------------------------------------------------------
// Encoding

/// Raises "Cannot serialise <type of value at idx>: <reason>".
unsafe fn encode_error(l: *mut lua_State, idx: c_int, reason: &CStr) -> Raise {
    unsafe {
        let tname = lua::lua_typename(l, lua::lua_type(l, idx));
        clear_stack(l);
        lua::lua_pushfstring(
            l,
            c"Cannot serialise %s: %s".as_ptr(),
            tname,
            reason.as_ptr(),
        );
        raise_pushed(l)
    }
}

/// Appends `s` as a JSON string.
fn append_string(out: &mut Vec<u8>, s: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(s.len() + 2);
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=0x1f | 0x7f => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(c >> 4) as usize]);
                out.push(HEX[(c & 15) as usize]);
            }
            _ => out.push(c),
        }
    }
    out.push(b'"');
}

/// Appends the number at `idx` (a value or a key) as `%.<precision>g`, or
/// handles NaN and infinities as `encode_invalid_numbers` says.
unsafe fn append_number(
    l: *mut lua_State,
    cfg: &Config,
    out: &mut Vec<u8>,
    idx: c_int,
) -> Result<(), Raise> {
    let num = unsafe { lua::lua_tonumber(l, idx) };
    match cfg.encode_invalid_numbers {
        0 if !num.is_finite() => {
            return Err(unsafe { encode_error(l, idx, c"must not be NaN or Inf") });
        }
        1 if num.is_nan() => {
            // Not "-nan": the sign of a NaN is not printed.
            out.extend_from_slice(b"nan");
            return Ok(());
        }
        2 if !num.is_finite() => {
            out.extend_from_slice(b"null");
            return Ok(());
        }
        _ => {}
    }
    let mut buf = [0u8; 32];
    // SAFETY: the format takes an int and a double; snprintf writes at most
    // buf.len() bytes.
    let n = unsafe {
        libc::snprintf(
            buf.as_mut_ptr() as *mut c_char,
            buf.len(),
            c"%.*g".as_ptr(),
            cfg.encode_number_precision,
            num,
        )
    };
    out.extend_from_slice(&buf[..(n.max(0) as usize).min(buf.len() - 1)]);
    Ok(())
}

/// The array length of the table on top of the stack, or -1 when it must be
/// encoded as an object (lua-cjson's `lua_array_length`): the largest key
/// when every key is a positive integer, unless the array is excessively
/// sparse (then -1 when `sparse_convert` is on, else an error). As in
/// lua-cjson, a key of 2^31 or more makes the largest key negative (the C
/// double-to-int conversion), hence an object.
unsafe fn array_length(l: *mut lua_State, cfg: &Config) -> Result<c_int, Raise> {
    let mut max: c_int = 0;
    let mut items: c_int = 0;
    unsafe {
        lua::lua_pushnil(l);
        while lua::lua_next(l, -2) != 0 {
            if lua::lua_type(l, -2) == lua::LUA_TNUMBER {
                let k = lua::lua_tonumber(l, -2);
                if k >= 1.0 && k.floor() == k {
                    if k > max as f64 {
                        max = if k < 2147483648.0 {
                            k as c_int
                        } else {
                            c_int::MIN
                        };
                    }
                    items = items.wrapping_add(1);
                    lua::lua_pop(l, 1);
                    continue;
                }
            }
            lua::lua_pop(l, 2);
            return Ok(-1);
        }
        if cfg.sparse_ratio > 0
            && max > items.wrapping_mul(cfg.sparse_ratio)
            && max > cfg.sparse_safe
        {
            if cfg.sparse_convert == 0 {
                return Err(encode_error(l, -1, c"excessively sparse array"));
            }
            return Ok(-1);
        }
    }
    Ok(max)
}

/// A table being encoded.
enum Level {
    /// An array of `len` items, `next` the index of the next one.
    Array { len: c_int, next: i64 },
    /// An object; its last key is on top of the stack.
    Object { first: bool },
}

/// Appends the value on top of the stack, which it pops.
///
/// The stack holds what lua-cjson's recursion holds: each enclosing array
/// its table, each enclosing object its table and current key, so that
/// `lua_checkstack` gives out at the same depth.
unsafe fn encode_value(l: *mut lua_State, cfg: &Config, out: &mut Vec<u8>) -> Result<(), Raise> {
    let mut levels: Vec<Level> = Vec::new();
    unsafe {
        loop {
            // The value to append is on top of the stack: append a scalar
            // and pop it, or open a table, which stays for its items.
            match lua::lua_type(l, -1) {
                lua::LUA_TTABLE => {
                    let depth = levels.len() as c_int + 1;
                    if depth > cfg.encode_max_depth || lua::lua_checkstack(l, 3) == 0 {
                        clear_stack(l);
                        lua::lua_pushfstring(
                            l,
                            c"Cannot serialise, excessive nesting (%d)".as_ptr(),
                            depth,
                        );
                        return Err(raise_pushed(l));
                    }
                    let len = array_length(l, cfg)?;
                    if len > 0 {
                        out.push(b'[');
                        levels.push(Level::Array { len, next: 1 });
                    } else {
                        out.push(b'{');
                        lua::lua_pushnil(l);
                        levels.push(Level::Object { first: true });
                    }
                }
                t => {
                    match t {
                        lua::LUA_TSTRING => {
                            append_string(out, ffi::to_bytes(l, -1).unwrap_or_default())
                        }
                        lua::LUA_TNUMBER => append_number(l, cfg, out, -1)?,
                        lua::LUA_TBOOLEAN if lua::lua_toboolean(l, -1) != 0 => {
                            out.extend_from_slice(b"true")
                        }
                        lua::LUA_TBOOLEAN => out.extend_from_slice(b"false"),
                        lua::LUA_TNIL => out.extend_from_slice(b"null"),
                        lua::LUA_TLIGHTUSERDATA if lua::lua_touserdata(l, -1).is_null() => {
                            out.extend_from_slice(b"null")
                        }
                        _ => return Err(encode_error(l, -1, c"type not supported")),
                    }
                    lua::lua_pop(l, 1);
                }
            }
            // Find the next value, closing the tables that are done.
            loop {
                let Some(level) = levels.last_mut() else {
                    return Ok(());
                };
                match level {
                    Level::Array { len, next } => {
                        if *next <= *len as i64 {
                            if *next > 1 {
                                out.push(b',');
                            }
                            lua::lua_rawgeti_(l, -1, *next as c_int);
                            *next += 1;
                            break;
                        }
                        out.push(b']');
                    }
                    Level::Object { first } => {
                        if lua::lua_next(l, -2) != 0 {
                            if !*first {
                                out.push(b',');
                            }
                            *first = false;
                            match lua::lua_type(l, -2) {
                                lua::LUA_TNUMBER => {
                                    out.push(b'"');
                                    append_number(l, cfg, out, -2)?;
                                    out.extend_from_slice(b"\":");
                                }
                                lua::LUA_TSTRING => {
                                    append_string(out, ffi::to_bytes(l, -2).unwrap_or_default());
                                    out.push(b':');
                                }
                                _ => {
                                    return Err(encode_error(
                                        l,
                                        -2,
                                        c"table key must be a number or string",
                                    ))
                                }
                            }
                            break;
                        }
                        out.push(b'}');
                    }
                }
                levels.pop();
                lua::lua_pop(l, 1);
            }
        }
    }
}

unsafe fn encode(l: *mut lua_State) -> LuaResult {
    unsafe {
        let cfg = *config(l)?;
        if lua::lua_gettop(l) != 1 {
            return Err(Raise::Arg(1, c"expected 1 argument"));
        }
        let mut out = Vec::new();
        encode_value(l, &cfg, &mut out)?;
        push_bytes(l, &out);
    }
    Ok(1)
}

// ---------------------------------------------------------------------------
// Decoding

/// A JSON token (lua-cjson's `json_token_type_t`, with its value).
#[derive(Clone, Copy, PartialEq)]
enum Token {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    /// A string; its bytes are in [`Parser::tmp`].
    Str,
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    /// A lexical error, with its description.
    Error(&'static CStr),
}

impl Token {
    /// How an error message names the token.
    fn name(self) -> &'static CStr {
        match self {
            Token::ObjBegin => c"T_OBJ_BEGIN",
            Token::ObjEnd => c"T_OBJ_END",
            Token::ArrBegin => c"T_ARR_BEGIN",
            Token::ArrEnd => c"T_ARR_END",
            Token::Str => c"T_STRING",
            Token::Number(_) => c"T_NUMBER",
            Token::Boolean(_) => c"T_BOOLEAN",
            Token::Null => c"T_NULL",
            Token::Colon => c"T_COLON",
            Token::Comma => c"T_COMMA",
            Token::End => c"T_END",
            Token::Error(what) => what,
        }
    }
}

/// The value of a hex digit.
fn hex_value(c: u8) -> Option<u32> {
    (c as char).to_digit(16)
}

/// Appends code point `cp` (at most 0x10FFFF) as UTF-8.
fn push_utf8(out: &mut Vec<u8>, cp: u32) {
    match cp {
        0..=0x7F => out.push(cp as u8),
        0x80..=0x7FF => out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]),
        0x800..=0xFFFF => out.extend_from_slice(&[
            0xE0 | (cp >> 12) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]),
        _ => out.extend_from_slice(&[
            0xF0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]),
    }
}

/// The JSON text being decoded and the position in it.
struct Parser<'a> {
    /// The text; in memory it is followed by a NUL (a Lua string), which
    /// `strtod` relies on. A NUL byte ends the text, as in lua-cjson.
    data: &'a [u8],
    /// Where the next token starts.
    pos: usize,
    /// How many objects and arrays are open.
    depth: c_int,
    cfg: Config,
    /// The bytes of the last string token.
    tmp: Vec<u8>,
}

impl Parser<'_> {
    /// The byte at `i`, 0 past the end.
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    /// Whether the text at the position starts with `word`.
    fn looking_at(&self, word: &[u8]) -> bool {
        word.iter()
            .enumerate()
            .all(|(i, &c)| self.at(self.pos + i) == c)
    }

    /// Whether the text at the position is a number that JSON does not
    /// allow but `strtod` reads: a leading `+`, a hex number, a leading
    /// zero, `inf` or `nan` (lua-cjson's `json_is_invalid_number`).
    fn invalid_number(&self) -> bool {
        let mut p = self.pos;
        match self.at(p) {
            b'+' => return true,
            b'-' => p += 1,
            _ => {}
        }
        let c = self.at(p);
        if c == b'0' {
            let c2 = self.at(p + 1);
            return c2 | 0x20 == b'x' || c2.is_ascii_digit();
        }
        // lua-cjson compares a signed char: bytes >= 0x80 count as digits.
        if c <= b'9' || c >= 0x80 {
            return false;
        }
        let word = [c, self.at(p + 1), self.at(p + 2)].map(|b| b.to_ascii_lowercase());
        &word == b"inf" || &word == b"nan"
    }

    /// The next token and the index where it starts (or where its error
    /// lies).
    fn next_token(&mut self) -> (Token, usize) {
        while matches!(self.at(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let start = self.pos;
        let single = match self.at(start) {
            b'{' => Token::ObjBegin,
            b'}' => Token::ObjEnd,
            b'[' => Token::ArrBegin,
            b']' => Token::ArrEnd,
            b',' => Token::Comma,
            b':' => Token::Colon,
            0 => return (Token::End, start),
            b'"' => return self.string_token(),
            b'-' | b'0'..=b'9' => {
                if self.cfg.decode_invalid_numbers == 0 && self.invalid_number() {
                    return (Token::Error(c"invalid number"), start);
                }
                return self.number_token();
            }
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'+' => {
                for (word, token) in [
                    (&b"true"[..], Token::Boolean(true)),
                    (b"false", Token::Boolean(false)),
                    (b"null", Token::Null),
                ] {
                    if self.looking_at(word) {
                        self.pos += word.len();
                        return (token, start);
                    }
                }
                if self.cfg.decode_invalid_numbers != 0 && self.invalid_number() {
                    return self.number_token();
                }
                return (Token::Error(c"invalid token"), start);
            }
            _ => return (Token::Error(c"invalid token"), start),
        };
        self.pos += 1;
        (single, start)
    }

    /// A number read by `strtod`.
    fn number_token(&mut self) -> (Token, usize) {
        let start = self.pos;
        // SAFETY: `data` is a Lua string, NUL-terminated in memory, so
        // strtod stops within it or at its terminator.
        let (value, used) = unsafe {
            let s = self.data.as_ptr().add(start) as *const c_char;
            let mut end: *mut c_char = ptr::null_mut();
            let v = libc::strtod(s, &mut end);
            (v, end.offset_from(s) as usize)
        };
        if used == 0 {
            return (Token::Error(c"invalid number"), start);
        }
        self.pos += used;
        (Token::Number(value), start)
    }

    /// A string, decoded into `tmp`; the position is at its opening quote.
    fn string_token(&mut self) -> (Token, usize) {
        let start = self.pos;
        self.pos += 1;
        self.tmp.clear();
        loop {
            let c = self.at(self.pos);
            match c {
                b'"' => break,
                0 => return (Token::Error(c"unexpected end of string"), self.pos),
                b'\\' => {
                    let unescaped = match self.at(self.pos + 1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => b'\x08',
                        b't' => b'\t',
                        b'n' => b'\n',
                        b'f' => b'\x0c',
                        b'r' => b'\r',
                        b'u' => {
                            if !self.unicode_escape() {
                                return (Token::Error(c"invalid unicode escape code"), self.pos);
                            }
                            continue;
                        }
                        _ => return (Token::Error(c"invalid escape code"), self.pos),
                    };
                    self.tmp.push(unescaped);
                    self.pos += 2;
                }
                _ => {
                    self.tmp.push(c);
                    self.pos += 1;
                }
            }
        }
        self.pos += 1;
        (Token::Str, start)
    }

    /// The four hex digits at `i` as a UTF-16 code unit.
    fn hex4(&self, i: usize) -> Option<u32> {
        (i..i + 4).try_fold(0, |acc, j| Some(acc << 4 | hex_value(self.at(j))?))
    }

    /// Decodes the `\uXXXX` escape at the position (a surrogate pair takes
    /// two) into `tmp` and moves past it; false when it is invalid.
    fn unicode_escape(&mut self) -> bool {
        let Some(mut cp) = self.hex4(self.pos + 2) else {
            return false;
        };
        let mut len = 6;
        if cp & 0xF800 == 0xD800 {
            // A surrogate: it must be a high one followed by a low one.
            if cp & 0x400 != 0 || self.at(self.pos + 6) != b'\\' || self.at(self.pos + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.pos + 8) else {
                return false;
            };
            if low & 0xFC00 != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            len = 12;
        }
        push_utf8(&mut self.tmp, cp);
        self.pos += len;
        true
    }

    /// Raises "Expected <expected> but found <token> at character <n>".
    unsafe fn unexpected(
        &self,
        l: *mut lua_State,
        expected: &CStr,
        token: (Token, usize),
    ) -> Raise {
        unsafe {
            clear_stack(l);
            lua::lua_pushfstring(
                l,
                c"Expected %s but found %s at character %d".as_ptr(),
                expected.as_ptr(),
                token.0.name().as_ptr(),
                (token.1 as c_int).wrapping_add(1),
            );
            raise_pushed(l)
        }
    }

    /// Enters an object or array, which needs `slots` stack slots: checks
    /// the depth and the stack (lua-cjson's `json_decode_descend`).
    unsafe fn descend(&mut self, l: *mut lua_State, slots: c_int) -> Result<(), Raise> {
        self.depth += 1;
        unsafe {
            if self.depth <= self.cfg.decode_max_depth && lua::lua_checkstack(l, slots) != 0 {
                return Ok(());
            }
            clear_stack(l);
            lua::lua_pushfstring(
                l,
                c"Found too many nested data structures (%d) at character %d".as_ptr(),
                self.depth,
                self.pos as c_int,
            );
            Err(raise_pushed(l))
        }
    }

    /// Pushes the key of an object member whose first token is `token`,
    /// reads its colon and returns the first token of its value.
    unsafe fn member_key(
        &mut self,
        l: *mut lua_State,
        token: (Token, usize),
    ) -> Result<(Token, usize), Raise> {
        unsafe {
            if token.0 != Token::Str {
                return Err(self.unexpected(l, c"object key string", token));
            }
            push_bytes(l, &self.tmp);
            let colon = self.next_token();
            if colon.0 != Token::Colon {
                return Err(self.unexpected(l, c"colon", colon));
            }
        }
        Ok(self.next_token())
    }

    /// Decodes the whole text and pushes its value.
    ///
    /// The stack holds what lua-cjson's recursion holds: each open array
    /// its table, each open object its table and the current key, so that
    /// `lua_checkstack` gives out at the same depth.
    unsafe fn parse(&mut self, l: *mut lua_State) -> Result<(), Raise> {
        /// An open container: an array and the index of its next item, or
        /// an object.
        enum Open {
            Array(c_int),
            Object,
        }
        let mut open: Vec<Open> = Vec::new();
        let mut token = self.next_token();
        unsafe {
            'value: loop {
                // `token` starts a value: push it, or open its container.
                match token.0 {
                    Token::Str => push_bytes(l, &self.tmp),
                    Token::Number(n) => lua::lua_pushnumber(l, n),
                    Token::Boolean(b) => lua::lua_pushboolean(l, b as c_int),
                    Token::Null => lua::lua_pushlightuserdata(l, ptr::null_mut()),
                    Token::ObjBegin => {
                        self.descend(l, 3)?;
                        lua::lua_newtable(l);
                        token = self.next_token();
                        if token.0 == Token::ObjEnd {
                            self.depth -= 1;
                        } else {
                            token = self.member_key(l, token)?;
                            open.push(Open::Object);
                            continue 'value;
                        }
                    }
                    Token::ArrBegin => {
                        self.descend(l, 2)?;
                        lua::lua_newtable(l);
                        token = self.next_token();
                        if token.0 == Token::ArrEnd {
                            self.depth -= 1;
                        } else {
                            open.push(Open::Array(1));
                            continue 'value;
                        }
                    }
                    _ => return Err(self.unexpected(l, c"value", token)),
                }
                // A value is complete on top of the stack: store it in its
                // container and go on to the next one, closing containers.
                loop {
                    match open.last_mut() {
                        None => break 'value,
                        Some(Open::Array(i)) => {
                            lua::lua_rawseti_(l, -2, *i);
                            token = self.next_token();
                            if token.0 != Token::ArrEnd {
                                if token.0 != Token::Comma {
                                    return Err(self.unexpected(l, c"comma or array end", token));
                                }
                                *i = i.wrapping_add(1);
                                token = self.next_token();
                                continue 'value;
                            }
                        }
                        Some(Open::Object) => {
                            lua::lua_rawset(l, -3);
                            token = self.next_token();
                            if token.0 != Token::ObjEnd {
                                if token.0 != Token::Comma {
                                    return Err(self.unexpected(l, c"comma or object end", token));
                                }
                                let key = self.next_token();
                                token = self.member_key(l, key)?;
                                continue 'value;
                            }
                        }
                    }
                    self.depth -= 1;
                    open.pop();
                }
            }
            let end = self.next_token();
            if end.0 != Token::End {
                return Err(self.unexpected(l, c"the end", end));
            }
        }
        Ok(())
    }
}

unsafe fn decode(l: *mut lua_State) -> LuaResult {
    unsafe {
        if lua::lua_gettop(l) != 1 {
            return Err(Raise::Arg(1, c"expected 1 argument"));
        }
        let cfg = *config(l)?;
        let data = ffi::check_bytes(l, 1)?;
        if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
            return Err(ffi::error_at(
                l,
                1,
                b"JSON parser does not support UTF-16 or UTF-32",
            ));
        }
        let mut parser = Parser {
            data,
            pos: 0,
            depth: 0,
            cfg,
            tmp: Vec::new(),
        };
        parser.parse(l)?;
    }
    Ok(1)
}

// ---------------------------------------------------------------------------
// The table

lua_fn!(json_encode, encode);
lua_fn!(json_decode, decode);
lua_fn!(json_cfg_encode_sparse_array, cfg_encode_sparse_array);
lua_fn!(json_cfg_encode_max_depth, cfg_encode_max_depth);
lua_fn!(json_cfg_decode_max_depth, cfg_decode_max_depth);
lua_fn!(
    json_cfg_encode_number_precision,
    cfg_encode_number_precision
);
lua_fn!(json_cfg_encode_keep_buffer, cfg_encode_keep_buffer);
lua_fn!(json_cfg_encode_invalid_numbers, cfg_encode_invalid_numbers);
lua_fn!(json_cfg_decode_invalid_numbers, cfg_decode_invalid_numbers);
lua_fn!(json_new, new);

/// The functions of a `cjson` table, in lua-cjson's order (which decides
/// the order `pairs` gives).
const FUNCTIONS: [(&CStr, lua::lua_CFunction); 10] = [
    (c"encode", json_encode),
    (c"decode", json_decode),
    (c"encode_sparse_array", json_cfg_encode_sparse_array),
    (c"encode_max_depth", json_cfg_encode_max_depth),
    (c"decode_max_depth", json_cfg_decode_max_depth),
    (c"encode_number_precision", json_cfg_encode_number_precision),
    (c"encode_keep_buffer", json_cfg_encode_keep_buffer),
    (c"encode_invalid_numbers", json_cfg_encode_invalid_numbers),
    (c"decode_invalid_numbers", json_cfg_decode_invalid_numbers),
    (c"new", json_new),
];

/// Pushes a new `cjson` table with default settings (lua-cjson's
/// `lua_cjson_new`).
unsafe fn push_table(l: *mut lua_State) {
    unsafe {
        lua::lua_newtable(l);
        let cfg = lua::lua_newuserdata(l, std::mem::size_of::<Config>()) as *mut Config;
        cfg.write(Config::DEFAULT);
        for (name, f) in FUNCTIONS {
            lua::lua_pushvalue(l, -1);
            lua::lua_pushcclosure(l, f, 1);
            lua::lua_setfield(l, -3, name.as_ptr());
        }
        lua::lua_pop(l, 1);
        lua::lua_pushlightuserdata(l, ptr::null_mut::<c_void>());
        lua::lua_setfield(l, -2, c"null".as_ptr());
        ffi::set_str(l, c"_NAME", b"cjson");
        ffi::set_str(l, c"_VERSION", b"2.1.0");
    }
}

unsafe fn new(l: *mut lua_State) -> LuaResult {
    unsafe { push_table(l) };
    Ok(1)
}

/// Opens the library: creates the `cjson` table and sets it as global
/// `cjson`. Called as a Lua C function; its argument (the library name) is
/// ignored.
///
/// # Safety
/// `l` is a valid Lua state, and this runs as a C function called by Lua
/// (for example through `lua_call`).
pub unsafe extern "C-unwind" fn open(l: *mut lua_State) -> c_int {
    unsafe {
        push_table(l);
        lua::lua_setglobal(l, c"cjson".as_ptr());
    }
    0
}

#[cfg(test)]
mod tests {
    use mlua_sys as lua;

    /// Runs `body`, the body of a Lua function, in a fresh state with
    /// `cjson` opened, the way redis-server 7.0 was asked for the expected
    /// results (`EVAL` of a chunk named `@user_script`): "OK:" followed by
    /// `tostring` of its result, or "ERR:" followed by its error.
    fn run(body: &str) -> Vec<u8> {
        let chunk = format!(
            "local ok, v = pcall(function() {body} end) \
             if ok then return 'OK:'..tostring(v) else return 'ERR:'..tostring(v) end"
        );
        // SAFETY: a private state, used by this thread only.
        unsafe {
            let l = lua::luaL_newstate();
            lua::luaL_openlibs(l);
            lua::lua_pushcfunction(l, super::open);
            lua::lua_pushstring(l, c"cjson".as_ptr());
            lua::lua_call(l, 1, 0);
            let loaded = lua::luaL_loadbuffer(
                l,
                chunk.as_ptr().cast(),
                chunk.len(),
                c"@user_script".as_ptr(),
            );
            assert_eq!(loaded, 0, "{body}");
            assert_eq!(lua::lua_pcall(l, 0, 1, 0), 0, "{body}");
            let mut len = 0;
            let p = lua::lua_tolstring(l, -1, &mut len);
            let out = std::slice::from_raw_parts(p.cast::<u8>(), len).to_vec();
            lua::lua_close(l);
            out
        }
    }

    #[test]
    fn matches_redis() {
        let mut failures = Vec::new();
        for &(body, expected) in CASES {
            let got = run(body);
            if got != expected {
                failures.push(format!(
                    "{body}\n  expected {}\n  got      {}",
                    String::from_utf8_lossy(expected),
                    String::from_utf8_lossy(&got)
                ));
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} cases differ:\n{}",
            failures.len(),
            CASES.len(),
            failures.join("\n")
        );
    }

    /// (body, what redis-server 7.0.15 returned for it).
    const CASES: &[(&str, &[u8])] = &[
        (
            r##"return cjson._NAME .. " " .. cjson._VERSION"##,
            b"OK:cjson 2.1.0",
        ),
        (
            r##"local t = {} for k, v in pairs(cjson) do t[#t + 1] = k .. "=" .. type(v) end return table.concat(t, ",")"##,
            b"OK:_NAME=string,encode=function,decode_max_depth=function,_VERSION=string,decode_invalid_numbers=function,encode_keep_buffer=function,null=userdata,encode_number_precision=function,new=function,encode_max_depth=function,encode_invalid_numbers=function,decode=function,encode_sparse_array=function",
        ),
        (
            r##"return type(cjson.null) .. " " .. tostring(cjson.null == cjson.decode("null"))"##,
            b"OK:userdata true",
        ),
        (
            r##"return cjson.encode({1, 2, {a = 1}})"##,
            b"OK:[1,2,{\"a\":1}]",
        ),
        (
            r##"return cjson.encode({})"##,
            b"OK:{}",
        ),
        (
            r##"return cjson.encode("a/b\"c\\d\1\2\8\9\10\11\12\13\14\31\127\128\255 é")"##,
            b"OK:\"a\\/b\\\"c\\\\d\\u0001\\u0002\\b\\t\\n\\u000b\\f\\r\\u000e\\u001f\\u007f\x80\xff \xc3\xa9\"",
        ),
        (
            r##"return cjson.encode("\0x\0")"##,
            b"OK:\"\\u0000x\\u0000\"",
        ),
        (
            r##"return cjson.encode("")"##,
            b"OK:\"\"",
        ),
        (
            r##"return cjson.encode(1e300)"##,
            b"OK:1e+300",
        ),
        (
            r##"return cjson.encode(-0)"##,
            b"OK:-0",
        ),
        (
            r##"return cjson.encode(0.1)"##,
            b"OK:0.1",
        ),
        (
            r##"return cjson.encode(1/3)"##,
            b"OK:0.33333333333333",
        ),
        (
            r##"return cjson.encode(-1/3)"##,
            b"OK:-0.33333333333333",
        ),
        (
            r##"return cjson.encode(123456789012345678)"##,
            b"OK:1.2345678901235e+17",
        ),
        (
            r##"return cjson.encode({2^53, 1e-300, 5e-324, 123.456, -1.5, 1e15, 1e14, 12345678901234, 0.1 + 0.2, -1e-7, 100, 1e21, 2^63, -2^31})"##,
            b"OK:[9.007199254741e+15,1e-300,4.9406564584125e-324,123.456,-1.5,1e+15,1e+14,12345678901234,0.3,-1e-07,100,1e+21,9.2233720368548e+18,-2147483648]",
        ),
        (
            r##"return cjson.encode(1/0)"##,
            b"ERR:user_script:1: Cannot serialise number: must not be NaN or Inf",
        ),
        (
            r##"return cjson.encode(-1/0)"##,
            b"ERR:user_script:1: Cannot serialise number: must not be NaN or Inf",
        ),
        (
            r##"return cjson.encode(0/0)"##,
            b"ERR:user_script:1: Cannot serialise number: must not be NaN or Inf",
        ),
        (
            r##"return cjson.encode({[1/0] = 1})"##,
            b"ERR:user_script:1: Cannot serialise number: must not be NaN or Inf",
        ),
        (
            r##"return cjson.encode(tostring)"##,
            b"ERR:user_script:1: Cannot serialise function: type not supported",
        ),
        (
            r##"return cjson.encode({f = tostring})"##,
            b"ERR:user_script:1: Cannot serialise function: type not supported",
        ),
        (
            r##"return cjson.encode({tostring})"##,
            b"ERR:user_script:1: Cannot serialise function: type not supported",
        ),
        (
            r##"return cjson.encode(coroutine.create(function() end))"##,
            b"ERR:user_script:1: Cannot serialise thread: type not supported",
        ),
        (
            r##"return cjson.encode({[true] = 1})"##,
            b"ERR:user_script:1: Cannot serialise boolean: table key must be a number or string",
        ),
        (
            r##"return cjson.encode({[{}] = 1})"##,
            b"ERR:user_script:1: Cannot serialise table: table key must be a number or string",
        ),
        (
            r##"return cjson.encode({[1000] = 1})"##,
            b"ERR:user_script:1: Cannot serialise table: excessively sparse array",
        ),
        (
            r##"return cjson.encode({[2^31] = 1})"##,
            b"OK:{\"2147483648\":1}",
        ),
        (
            r##"return cjson.encode({[2^31] = 1, [2] = 2})"##,
            b"OK:[null,2]",
        ),
        (
            r##"return cjson.encode({[2^32 + 1] = 1})"##,
            b"OK:{\"4294967297\":1}",
        ),
        (
            r##"return cjson.encode({[1/0] = 1, [2] = 1})"##,
            b"OK:[null,1]",
        ),
        (
            r##"return cjson.encode({[1e300] = 1})"##,
            b"OK:{\"1e+300\":1}",
        ),
        (
            r##"return cjson.encode({1, nil, 3})"##,
            b"OK:[1,null,3]",
        ),
        (
            r##"return cjson.encode({[1] = 1, [2] = 2, [10] = 1})"##,
            b"OK:[1,2,null,null,null,null,null,null,null,1]",
        ),
        (
            r##"return cjson.encode({[1] = 1, [20] = 1})"##,
            b"ERR:user_script:1: Cannot serialise table: excessively sparse array",
        ),
        (
            r##"return cjson.encode({[11] = 1})"##,
            b"ERR:user_script:1: Cannot serialise table: excessively sparse array",
        ),
        (
            r##"return cjson.encode({[1.5] = 1})"##,
            b"OK:{\"1.5\":1}",
        ),
        (
            r##"return cjson.encode({[0] = 1})"##,
            b"OK:{\"0\":1}",
        ),
        (
            r##"return cjson.encode({[-1] = 1})"##,
            b"OK:{\"-1\":1}",
        ),
        (
            r##"return cjson.encode({[-0.0] = 1})"##,
            b"OK:{\"-0\":1}",
        ),
        (
            r##"return cjson.encode({[0.5] = 1, [1] = 2})"##,
            b"OK:{\"0.5\":1,\"1\":2}",
        ),
        (
            r##"return cjson.encode({["1"] = 1})"##,
            b"OK:{\"1\":1}",
        ),
        (
            r##"return cjson.encode(cjson.null)"##,
            b"OK:null",
        ),
        (
            r##"return cjson.encode(nil)"##,
            b"OK:null",
        ),
        (
            r##"return cjson.encode()"##,
            b"ERR:user_script:1: bad argument #1 to 'encode' (expected 1 argument)",
        ),
        (
            r##"return cjson.encode(1, 2)"##,
            b"ERR:user_script:1: bad argument #1 to 'encode' (expected 1 argument)",
        ),
        (
            r##"return cjson.encode(true)"##,
            b"OK:true",
        ),
        (
            r##"return cjson.encode(false)"##,
            b"OK:false",
        ),
        (
            r##"return cjson.encode({true, false, cjson.null})"##,
            b"OK:[true,false,null]",
        ),
        (
            r##"return cjson.encode({a = 1, b = 2, c = 3, d = {1, 2}, e = "x", f = true})"##,
            b"OK:{\"a\":1,\"c\":3,\"b\":2,\"e\":\"x\",\"d\":[1,2],\"f\":true}",
        ),
        (
            r##"return cjson.encode({x = 1, [1] = 2})"##,
            b"OK:{\"1\":2,\"x\":1}",
        ),
        (
            r##"return cjson.encode({1, 2, 3, x = 1})"##,
            b"OK:{\"1\":1,\"2\":2,\"3\":3,\"x\":1}",
        ),
        (
            r##"return cjson.encode(setmetatable({}, {__index = function() return 1 end, __len = function() return 5 end}))"##,
            b"OK:{}",
        ),
        (
            r##"return cjson.encode(setmetatable({a = 1}, {__pairs = function() error("no") end}))"##,
            b"OK:{\"a\":1}",
        ),
        (
            r##"return cjson.encode({{}, {{}}, {a = {}}})"##,
            b"OK:[{},[{}],{\"a\":{}}]",
        ),
        (
            r##"return cjson.encode({"a", {b = {c = {"d"}}}})"##,
            b"OK:[\"a\",{\"b\":{\"c\":[\"d\"]}}]",
        ),
        (
            r##"return cjson.encode({["a\"b"] = "c/d", [5] = false})"##,
            b"OK:{\"a\\\"b\":\"c\\/d\",\"5\":false}",
        ),
        (
            r##"return cjson.encode({[3] = "c", [1] = "a", [2] = "b"})"##,
            b"OK:[\"a\",\"b\",\"c\"]",
        ),
        (
            r##"return cjson.encode(12)"##,
            b"OK:12",
        ),
        (
            r##"return cjson.encode("12")"##,
            b"OK:\"12\"",
        ),
        (
            r##"local t = {} local c = t for i = 1, 1001 do c[1] = {} c = c[1] end return cjson.encode(t)"##,
            b"ERR:user_script:1: Cannot serialise, excessive nesting (1001)",
        ),
        (
            r##"local t = {} local c = t for i = 1, 999 do c[1] = {} c = c[1] end return #cjson.encode(t)"##,
            b"OK:2000",
        ),
        (
            r##"local t = {} local c = t for i = 1, 1000 do c[1] = {} c = c[1] end return cjson.encode(t)"##,
            b"ERR:user_script:1: Cannot serialise, excessive nesting (1001)",
        ),
        (
            r##"local t = {} local c = t for i = 1, 1000 do c.k = {} c = c.k end return cjson.encode(t)"##,
            b"ERR:user_script:1: Cannot serialise, excessive nesting (1001)",
        ),
        (
            r##"local t = {} t[1] = t return cjson.encode(t)"##,
            b"ERR:user_script:1: Cannot serialise, excessive nesting (1001)",
        ),
        (
            r##"cjson.encode_max_depth(100000) local t = {} local c = t for i = 1, 10000 do c[1] = {} c = c[1] end local ok, e = pcall(cjson.encode, t) local t2 = {} c = t2 for i = 1, 10000 do c.a = {} c = c.a end local ok2, e2 = pcall(cjson.encode, t2) return e .. " | " .. e2"##,
            b"OK:Cannot serialise, excessive nesting (7998) | Cannot serialise, excessive nesting (4000)",
        ),
        (
            r##"cjson.encode_max_depth(100000) local t = {} local c = t for i = 1, 10000 do c[1] = {} c = c[1] end return cjson.encode(t)"##,
            b"ERR:user_script:1: Cannot serialise, excessive nesting (7998)",
        ),
        (
            r##"local ok, e = pcall(cjson.encode) return e"##,
            b"OK:bad argument #1 to '?' (expected 1 argument)",
        ),
        (
            r##"local ok, e = pcall(cjson.encode, {[true] = 1}) return e"##,
            b"OK:Cannot serialise boolean: table key must be a number or string",
        ),
        (
            r##"return cjson.decode("")"##,
            b"ERR:user_script:1: Expected value but found T_END at character 1",
        ),
        (
            r##"return cjson.decode(" ")"##,
            b"ERR:user_script:1: Expected value but found T_END at character 2",
        ),
        (
            r##"return cjson.decode("x")"##,
            b"ERR:user_script:1: Expected value but found invalid token at character 1",
        ),
        (
            r##"return cjson.decode("[1,2")"##,
            b"ERR:user_script:1: Expected comma or array end but found T_END at character 5",
        ),
        (
            r##"return cjson.decode("[1,2,3")"##,
            b"ERR:user_script:1: Expected comma or array end but found T_END at character 7",
        ),
        (
            r##"return cjson.decode("[1 2]")"##,
            b"ERR:user_script:1: Expected comma or array end but found T_NUMBER at character 4",
        ),
        (
            r##"return cjson.decode('{"a" 1}')"##,
            b"ERR:user_script:1: Expected colon but found T_NUMBER at character 6",
        ),
        (
            r##"return cjson.decode("{1:2}")"##,
            b"ERR:user_script:1: Expected object key string but found T_NUMBER at character 2",
        ),
        (
            r##"return cjson.decode('{"a":1,}')"##,
            b"ERR:user_script:1: Expected object key string but found T_OBJ_END at character 8",
        ),
        (
            r##"return cjson.decode("[1,]")"##,
            b"ERR:user_script:1: Expected value but found T_ARR_END at character 4",
        ),
        (
            r##"return cjson.decode('{"a":1 "b"}')"##,
            b"ERR:user_script:1: Expected comma or object end but found T_STRING at character 8",
        ),
        (
            r##"return cjson.decode("1 2")"##,
            b"ERR:user_script:1: Expected the end but found T_NUMBER at character 3",
        ),
        (
            r##"return cjson.decode('"abc')"##,
            b"ERR:user_script:1: Expected value but found unexpected end of string at character 5",
        ),
        (
            r##"return cjson.decode('"a\\qb"')"##,
            b"ERR:user_script:1: Expected value but found invalid escape code at character 3",
        ),
        (
            r##"return cjson.decode('"\\u12"')"##,
            b"ERR:user_script:1: Expected value but found invalid unicode escape code at character 2",
        ),
        (
            r##"return cjson.decode('"\\u')"##,
            b"ERR:user_script:1: Expected value but found invalid unicode escape code at character 2",
        ),
        (
            r##"return cjson.decode('"\\')"##,
            b"ERR:user_script:1: Expected value but found invalid escape code at character 2",
        ),
        (
            r##"return cjson.decode('"\\uzzzz"')"##,
            b"ERR:user_script:1: Expected value but found invalid unicode escape code at character 2",
        ),
        (
            r##"return cjson.decode('"\\ud800"')"##,
            b"ERR:user_script:1: Expected value but found invalid unicode escape code at character 2",
        ),
        (
            r##"return cjson.decode('"\\udc00\\ud800"')"##,
            b"ERR:user_script:1: Expected value but found invalid unicode escape code at character 2",
        ),
        (
            r##"return cjson.decode('"\\ud800\\u0041"')"##,
            b"ERR:user_script:1: Expected value but found invalid unicode escape code at character 2",
        ),
        (
            r##"return cjson.decode('"\\ud800x"')"##,
            b"ERR:user_script:1: Expected value but found invalid unicode escape code at character 2",
        ),
        (
            r##"return cjson.decode('"\\ud83d\\ude00"')"##,
            b"OK:\xf0\x9f\x98\x80",
        ),
        (
            r##"return cjson.decode('"\\uD83D\\uDE00"')"##,
            b"OK:\xf0\x9f\x98\x80",
        ),
        (
            r##"return cjson.decode('"\\udbff\\udfff"')"##,
            b"OK:\xf4\x8f\xbf\xbf",
        ),
        (
            r##"return cjson.decode('"\\u00e9\\u0041\\u20ac\\u007f\\u0080\\u07ff\\u0800\\uffff"')"##,
            b"OK:\xc3\xa9A\xe2\x82\xac\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf",
        ),
        (
            r##"return #cjson.decode('"\\u0000"')"##,
            b"OK:1",
        ),
        (
            r##"return cjson.decode('"a\\/b\\"\\\\\\b\\f\\n\\r\\t"')"##,
            b"OK:a/b\"\\\x08\x0c\x0a\x0d\x09",
        ),
        (
            r##"return cjson.decode('"\1\31\127\255"')"##,
            b"OK:\x01\x1f\x7f\xff",
        ),
        (
            r##"return cjson.decode('["a", "\\x"]')"##,
            b"ERR:user_script:1: Expected value but found invalid escape code at character 8",
        ),
        (
            r##"return cjson.decode("0x10")"##,
            b"OK:16",
        ),
        (
            r##"return cjson.decode("0X1f")"##,
            b"OK:31",
        ),
        (
            r##"return cjson.decode("-0x10")"##,
            b"OK:-16",
        ),
        (
            r##"return cjson.decode("+5")"##,
            b"OK:5",
        ),
        (
            r##"return cjson.decode("+")"##,
            b"ERR:user_script:1: Expected value but found invalid number at character 1",
        ),
        (
            r##"return cjson.decode("-inf")"##,
            b"OK:-inf",
        ),
        (
            r##"return cjson.decode("+inf")"##,
            b"OK:inf",
        ),
        (
            r##"return cjson.decode("nan")"##,
            b"OK:nan",
        ),
        (
            r##"return cjson.decode("-nan")"##,
            b"OK:-nan",
        ),
        (
            r##"return cjson.decode("Infinity")"##,
            b"OK:inf",
        ),
        (
            r##"return cjson.decode("infinity")"##,
            b"OK:inf",
        ),
        (
            r##"return cjson.decode("INF")"##,
            b"OK:inf",
        ),
        (
            r##"return cjson.decode("NaN")"##,
            b"OK:nan",
        ),
        (
            r##"return cjson.decode("nan(123)")"##,
            b"OK:nan",
        ),
        (
            r##"return cjson.decode("[nan(123)]")[1] ~= cjson.decode("[nan(123)]")[1]"##,
            b"OK:true",
        ),
        (
            r##"return cjson.decode("iNfx")"##,
            b"ERR:user_script:1: Expected the end but found invalid token at character 4",
        ),
        (
            r##"return cjson.decode("[infinit]")"##,
            b"ERR:user_script:1: Expected comma or array end but found invalid token at character 5",
        ),
        (
            r##"return cjson.decode("Inx")"##,
            b"ERR:user_script:1: Expected value but found invalid token at character 1",
        ),
        (
            r##"return cjson.decode("01")"##,
            b"OK:1",
        ),
        (
            r##"return cjson.decode("00")"##,
            b"OK:0",
        ),
        (
            r##"return cjson.decode("0")"##,
            b"OK:0",
        ),
        (
            r##"return cjson.decode("1e400")"##,
            b"OK:inf",
        ),
        (
            r##"return cjson.decode("-1e400")"##,
            b"OK:-inf",
        ),
        (
            r##"return cjson.decode("1e-400")"##,
            b"OK:0",
        ),
        (
            r##"return cjson.decode("0x1.8p1")"##,
            b"OK:3",
        ),
        (
            r##"return cjson.decode("1.")"##,
            b"OK:1",
        ),
        (
            r##"return cjson.decode(".5")"##,
            b"ERR:user_script:1: Expected value but found invalid token at character 1",
        ),
        (
            r##"return cjson.decode("1e")"##,
            b"ERR:user_script:1: Expected the end but found invalid token at character 2",
        ),
        (
            r##"return cjson.decode("1e+")"##,
            b"ERR:user_script:1: Expected the end but found invalid token at character 2",
        ),
        (
            r##"return cjson.decode("0x")"##,
            b"ERR:user_script:1: Expected the end but found invalid token at character 2",
        ),
        (
            r##"return cjson.decode("-")"##,
            b"ERR:user_script:1: Expected value but found invalid number at character 1",
        ),
        (
            r##"return cjson.decode("- 1")"##,
            b"ERR:user_script:1: Expected value but found invalid number at character 1",
        ),
        (
            r##"return cjson.decode("-1.5E3")"##,
            b"OK:-1500",
        ),
        (
            r##"return cjson.decode("1E+2")"##,
            b"OK:100",
        ),
        (
            r##"return cjson.decode("123456789012345678901234567890")"##,
            b"OK:1.2345678901235e+29",
        ),
        (
            r##"return cjson.decode("0.1")"##,
            b"OK:0.1",
        ),
        (
            r##"return cjson.decode("2.2250738585072014e-308")"##,
            b"OK:2.2250738585072e-308",
        ),
        (
            r##"return cjson.decode("4.9406564584124654e-324")"##,
            b"OK:4.9406564584125e-324",
        ),
        (
            r##"return cjson.decode("-0")"##,
            b"OK:-0",
        ),
        (
            r##"return 1/cjson.decode("-0")"##,
            b"OK:-inf",
        ),
        (
            r##"return cjson.decode("truex")"##,
            b"ERR:user_script:1: Expected the end but found invalid token at character 5",
        ),
        (
            r##"return cjson.decode("tru")"##,
            b"ERR:user_script:1: Expected value but found invalid token at character 1",
        ),
        (
            r##"return cjson.decode("nul")"##,
            b"ERR:user_script:1: Expected value but found invalid token at character 1",
        ),
        (
            r##"return cjson.decode("false")"##,
            b"OK:false",
        ),
        (
            r##"return cjson.decode("true")"##,
            b"OK:true",
        ),
        (
            r##"return cjson.decode("True")"##,
            b"ERR:user_script:1: Expected value but found invalid token at character 1",
        ),
        (
            r##"return cjson.decode("a\0")"##,
            b"ERR:user_script:1: JSON parser does not support UTF-16 or UTF-32",
        ),
        (
            r##"return cjson.decode("\0a")"##,
            b"ERR:user_script:1: JSON parser does not support UTF-16 or UTF-32",
        ),
        (
            r##"return cjson.decode("\0")"##,
            b"ERR:user_script:1: Expected value but found T_END at character 1",
        ),
        (
            r##"return cjson.decode("\0\0")"##,
            b"ERR:user_script:1: JSON parser does not support UTF-16 or UTF-32",
        ),
        (
            r##"return cjson.decode("12\0x")"##,
            b"OK:12",
        ),
        (
            r##"return cjson.decode('"a\0b"')"##,
            b"ERR:user_script:1: Expected value but found unexpected end of string at character 3",
        ),
        (
            r##"return cjson.decode(123)"##,
            b"OK:123",
        ),
        (
            r##"return cjson.decode(1e300)"##,
            b"OK:1e+300",
        ),
        (
            r##"return cjson.decode({})"##,
            b"ERR:user_script:1: bad argument #1 to 'decode' (string expected, got table)",
        ),
        (
            r##"return cjson.decode(true)"##,
            b"ERR:user_script:1: bad argument #1 to 'decode' (string expected, got boolean)",
        ),
        (
            r##"return cjson.decode()"##,
            b"ERR:user_script:1: bad argument #1 to 'decode' (expected 1 argument)",
        ),
        (
            r##"return cjson.decode("1", 2)"##,
            b"ERR:user_script:1: bad argument #1 to 'decode' (expected 1 argument)",
        ),
        (
            r##"return cjson.decode(nil)"##,
            b"ERR:user_script:1: bad argument #1 to 'decode' (string expected, got nil)",
        ),
        (
            r##"return cjson.decode(string.rep("[", 1001))"##,
            b"ERR:user_script:1: Found too many nested data structures (1001) at character 1001",
        ),
        (
            r##"return cjson.decode(string.rep("[", 1000))"##,
            b"ERR:user_script:1: Expected value but found T_END at character 1001",
        ),
        (
            r##"return cjson.encode(cjson.decode(string.rep("[", 1000) .. string.rep("]", 1000))) == string.rep("[", 999) .. "{}" .. string.rep("]", 999)"##,
            b"OK:true",
        ),
        (
            r##"return cjson.decode(string.rep('{"a":', 1001))"##,
            b"ERR:user_script:1: Found too many nested data structures (1001) at character 5001",
        ),
        (
            r##"return cjson.decode(string.rep('{"a":', 1000))"##,
            b"ERR:user_script:1: Expected value but found T_END at character 5001",
        ),
        (
            r##"cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep("[", 10000)) local ok2, e2 = pcall(cjson.decode, string.rep('{"a":', 10000)) local ok3, e3 = pcall(cjson.decode, string.rep('[{"a":', 10000)) return e .. " | " .. e2 .. " | " .. e3"##,
            b"OK:Found too many nested data structures (7999) at character 7999 | Found too many nested data structures (4000) at character 19996 | Found too many nested data structures (5333) at character 15997",
        ),
        (
            r##"return cjson.decode("[1,2,3]")[3]"##,
            b"OK:3",
        ),
        (
            r##"return #cjson.decode("[1,2,3]")"##,
            b"OK:3",
        ),
        (
            r##"return cjson.decode('{"a":{"b":[true,false,null]}}').a.b[2]"##,
            b"OK:false",
        ),
        (
            r##"return cjson.decode('{"a":{"b":[true,false,null]}}').a.b[3] == cjson.null"##,
            b"OK:true",
        ),
        (
            r##"return cjson.decode("  \t\n\r 5 \n")"##,
            b"OK:5",
        ),
        (
            r##"return cjson.decode("\f5")"##,
            b"ERR:user_script:1: Expected value but found invalid token at character 1",
        ),
        (
            r##"return cjson.decode('{"a":1,"a":2}').a"##,
            b"OK:2",
        ),
        (
            r##"return cjson.decode('""')"##,
            b"OK:",
        ),
        (
            r##"return cjson.encode(cjson.decode("{}"))"##,
            b"OK:{}",
        ),
        (
            r##"return cjson.encode(cjson.decode("[]"))"##,
            b"OK:{}",
        ),
        (
            r##"return cjson.encode(cjson.decode('[1,"a",null,true,{"k":[]}]'))"##,
            b"OK:[1,\"a\",null,true,{\"k\":{}}]",
        ),
        (
            r##"return cjson.encode(cjson.decode('{"k":null}'))"##,
            b"OK:{\"k\":null}",
        ),
        (
            r##"return cjson.encode(cjson.decode('[1, 2.5, -3e2, "x\\u00e9y", [[], {}], {"n": null}]'))"##,
            b"OK:[1,2.5,-300,\"x\xc3\xa9y\",[{},{}],{\"n\":null}]",
        ),
        (
            r##"return cjson.encode(cjson.decode('{"b":2,"a":1,"c":{"d":[1,2,{"e":"f"}]}}'))"##,
            b"OK:{\"a\":1,\"c\":{\"d\":[1,2,{\"e\":\"f\"}]},\"b\":2}",
        ),
        (
            r##"return cjson.decode("[")"##,
            b"ERR:user_script:1: Expected value but found T_END at character 2",
        ),
        (
            r##"return cjson.decode("{")"##,
            b"ERR:user_script:1: Expected object key string but found T_END at character 2",
        ),
        (
            r##"return cjson.decode('{"a"')"##,
            b"ERR:user_script:1: Expected colon but found T_END at character 5",
        ),
        (
            r##"return cjson.decode('{"a":')"##,
            b"ERR:user_script:1: Expected value but found T_END at character 6",
        ),
        (
            r##"return cjson.decode('{"a":1')"##,
            b"ERR:user_script:1: Expected comma or object end but found T_END at character 7",
        ),
        (
            r##"return cjson.decode("]")"##,
            b"ERR:user_script:1: Expected value but found T_ARR_END at character 1",
        ),
        (
            r##"return cjson.decode(":")"##,
            b"ERR:user_script:1: Expected value but found T_COLON at character 1",
        ),
        (
            r##"return cjson.decode(",")"##,
            b"ERR:user_script:1: Expected value but found T_COMMA at character 1",
        ),
        (
            r##"return cjson.decode("}")"##,
            b"ERR:user_script:1: Expected value but found T_OBJ_END at character 1",
        ),
        (
            r##"return cjson.decode('{"a":1}}')"##,
            b"ERR:user_script:1: Expected the end but found T_OBJ_END at character 8",
        ),
        (
            r##"return cjson.decode("[1]]")"##,
            b"ERR:user_script:1: Expected the end but found T_ARR_END at character 4",
        ),
        (
            r##"return cjson.decode("\255")"##,
            b"ERR:user_script:1: Expected value but found invalid token at character 1",
        ),
        (
            r##"return cjson.decode("[-\255]")"##,
            b"ERR:user_script:1: Expected value but found invalid number at character 2",
        ),
        (
            r##"return cjson.decode("[1,2,]")"##,
            b"ERR:user_script:1: Expected value but found T_ARR_END at character 6",
        ),
        (
            r##"return cjson.decode('[1,"\\')"##,
            b"ERR:user_script:1: Expected value but found invalid escape code at character 5",
        ),
        (
            r##"return cjson.decode('{"a":1,"b"}')"##,
            b"ERR:user_script:1: Expected colon but found T_OBJ_END at character 11",
        ),
        (
            r##"return cjson.decode('{"a":1,"b":}')"##,
            b"ERR:user_script:1: Expected value but found T_OBJ_END at character 12",
        ),
        (
            r##"return cjson.decode('{"a" : [1, {"b" : x}]}')"##,
            b"ERR:user_script:1: Expected value but found invalid token at character 19",
        ),
        (
            r##"local ok, e = pcall(cjson.decode, "[1,") return e"##,
            b"OK:Expected value but found T_END at character 4",
        ),
        (
            r##"local a, b, c = cjson.encode_sparse_array() return tostring(a) .. "," .. tostring(b) .. "," .. tostring(c)"##,
            b"OK:false,2,10",
        ),
        (
            r##"local a, b, c = cjson.encode_sparse_array(true) local r = cjson.encode({[1000] = 1}) return tostring(a) .. "," .. tostring(b) .. "," .. tostring(c) .. " " .. r"##,
            b"OK:true,2,10 {\"1000\":1}",
        ),
        (
            r##"local a, b, c = cjson.encode_sparse_array("on", 3, 5) local d, e, f = cjson.encode_sparse_array("off") return tostring(a) .. "," .. tostring(b) .. "," .. tostring(c) .. "," .. tostring(d) .. "," .. tostring(e) .. "," .. tostring(f)"##,
            b"OK:true,3,5,false,3,5",
        ),
        (
            r##"local a, b, c = cjson.encode_sparse_array(nil, 0) local r = cjson.encode({[1000] = 1}) return tostring(a) .. "," .. tostring(b) .. "," .. tostring(c) .. " " .. #r"##,
            b"OK:false,0,10 4998",
        ),
        (
            r##"cjson.encode_sparse_array(false, 1, 0) return cjson.encode({[2] = 1, [3] = 1})"##,
            b"ERR:user_script:1: Cannot serialise table: excessively sparse array",
        ),
        (
            r##"cjson.encode_sparse_array(false, 1, 0) return cjson.encode({[2] = 1})"##,
            b"ERR:user_script:1: Cannot serialise table: excessively sparse array",
        ),
        (
            r##"cjson.encode_sparse_array(false, 3, 1) return cjson.encode({[3] = 1, [6] = 2})"##,
            b"OK:[null,null,1,null,null,2]",
        ),
        (
            r##"cjson.encode_sparse_array(false, 3, 1) return cjson.encode({[3] = 1, [7] = 2})"##,
            b"ERR:user_script:1: Cannot serialise table: excessively sparse array",
        ),
        (
            r##"cjson.encode_sparse_array(true, 3, 1) return cjson.encode({[3] = 1, [7] = 2, x = {[1] = 1, [100] = 2}})"##,
            b"OK:{\"3\":1,\"x\":{\"1\":1,\"100\":2},\"7\":2}",
        ),
        (
            r##"return cjson.encode_sparse_array("yes")"##,
            b"ERR:user_script:1: bad argument #1 to 'encode_sparse_array' (invalid option 'yes')",
        ),
        (
            r##"return cjson.encode_sparse_array(1)"##,
            b"ERR:user_script:1: bad argument #1 to 'encode_sparse_array' (invalid option '1')",
        ),
        (
            r##"return cjson.encode_sparse_array({})"##,
            b"ERR:user_script:1: bad argument #1 to 'encode_sparse_array' (string expected, got table)",
        ),
        (
            r##"return cjson.encode_sparse_array(nil, -1)"##,
            b"ERR:user_script:1: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)",
        ),
        (
            r##"return cjson.encode_sparse_array(nil, nil, -1)"##,
            b"ERR:user_script:1: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)",
        ),
        (
            r##"return cjson.encode_sparse_array(nil, "x")"##,
            b"ERR:user_script:1: bad argument #2 to 'encode_sparse_array' (number expected, got string)",
        ),
        (
            r##"return select("#", cjson.encode_sparse_array(nil, "3")) .. " " .. select(2, cjson.encode_sparse_array(nil, "3"))"##,
            b"OK:3 3",
        ),
        (
            r##"return cjson.encode_sparse_array(1, 2, 3, 4)"##,
            b"ERR:user_script:1: bad argument #4 to 'encode_sparse_array' (found too many arguments)",
        ),
        (
            r##"local ok = pcall(cjson.encode_sparse_array, true, -1) local a = cjson.encode_sparse_array() return tostring(a)"##,
            b"OK:true",
        ),
        (
            r##"return cjson.encode_max_depth()"##,
            b"OK:1000",
        ),
        (
            r##"return cjson.encode_max_depth(0)"##,
            b"ERR:user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)",
        ),
        (
            r##"return cjson.encode_max_depth(1, 2)"##,
            b"ERR:user_script:1: bad argument #2 to 'encode_max_depth' (found too many arguments)",
        ),
        (
            r##"return cjson.encode_max_depth(true)"##,
            b"ERR:user_script:1: bad argument #1 to 'encode_max_depth' (number expected, got boolean)",
        ),
        (
            r##"return cjson.encode_max_depth("5")"##,
            b"OK:5",
        ),
        (
            r##"return cjson.encode_max_depth(2^32 + 7)"##,
            b"OK:7",
        ),
        (
            r##"return cjson.encode_max_depth(2.7)"##,
            b"OK:2",
        ),
        (
            r##"local a = cjson.encode_max_depth(2) local ok, e = pcall(cjson.encode, {{{}}}) local r2 = cjson.encode({{}}) return a .. " " .. e .. " " .. r2"##,
            b"OK:2 Cannot serialise, excessive nesting (3) [{}]",
        ),
        (
            r##"local a = cjson.decode_max_depth(2) local ok, e = pcall(cjson.decode, "[[[]]]") local ok2, e2 = pcall(cjson.decode, '[{"a":[]}]') local r = cjson.encode(cjson.decode("[[1]]")) return a .. " " .. e .. " | " .. e2 .. " | " .. r"##,
            b"OK:2 Found too many nested data structures (3) at character 3 | Found too many nested data structures (3) at character 7 | [[1]]",
        ),
        (
            r##"return cjson.decode_max_depth()"##,
            b"OK:1000",
        ),
        (
            r##"return cjson.decode_max_depth(0)"##,
            b"ERR:user_script:1: bad argument #1 to 'decode_max_depth' (expected integer between 1 and 2147483647)",
        ),
        (
            r##"return cjson.decode_max_depth(nil)"##,
            b"OK:1000",
        ),
        (
            r##"return cjson.encode_number_precision()"##,
            b"OK:14",
        ),
        (
            r##"return cjson.encode_number_precision(15)"##,
            b"ERR:user_script:1: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)",
        ),
        (
            r##"return cjson.encode_number_precision(0)"##,
            b"ERR:user_script:1: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)",
        ),
        (
            r##"local a = cjson.encode_number_precision(3) local r = cjson.encode({1/3, 12345, 1e300, 0.5, {[1/3] = 1}}) return a .. " " .. r"##,
            b"OK:3 [0.333,1.23e+04,1e+300,0.5,{\"0.333\":1}]",
        ),
        (
            r##"local a = cjson.encode_number_precision(1) return a .. " " .. cjson.encode({1/3, 15, 0.05, 99})"##,
            b"OK:1 [0.3,2e+01,0.05,1e+02]",
        ),
        (
            r##"return cjson.encode_keep_buffer()"##,
            b"OK:true",
        ),
        (
            r##"local a = cjson.encode_keep_buffer(false) local b = cjson.encode_keep_buffer() local r = cjson.encode({1}) local c = cjson.encode_keep_buffer(true) return tostring(a) .. tostring(b) .. r .. tostring(c)"##,
            b"OK:falsefalse[1]true",
        ),
        (
            r##"return cjson.encode_keep_buffer("maybe")"##,
            b"ERR:user_script:1: bad argument #1 to 'encode_keep_buffer' (invalid option 'maybe')",
        ),
        (
            r##"return tostring(cjson.encode_keep_buffer("off")) .. tostring(cjson.encode_keep_buffer("on"))"##,
            b"OK:falsetrue",
        ),
        (
            r##"return cjson.encode_invalid_numbers()"##,
            b"OK:false",
        ),
        (
            r##"return cjson.decode_invalid_numbers()"##,
            b"OK:true",
        ),
        (
            r##"local a = cjson.encode_invalid_numbers(true) local r = cjson.encode({1/0, -1/0, 0/0, -(0/0)}) return tostring(a) .. " " .. r"##,
            b"OK:true [inf,-inf,nan,nan]",
        ),
        (
            r##"local a = cjson.encode_invalid_numbers("null") local r = cjson.encode({1/0, -1/0, 0/0}) local b = cjson.encode_invalid_numbers() return tostring(a) .. " " .. r .. " " .. tostring(b)"##,
            b"OK:null [null,null,null] null",
        ),
        (
            r##"local a = cjson.encode_invalid_numbers("on") return tostring(a)"##,
            b"OK:true",
        ),
        (
            r##"local a = cjson.encode_invalid_numbers("off") return tostring(a)"##,
            b"OK:false",
        ),
        (
            r##"return cjson.encode_invalid_numbers("bad")"##,
            b"ERR:user_script:1: bad argument #1 to 'encode_invalid_numbers' (invalid option 'bad')",
        ),
        (
            r##"return cjson.encode_invalid_numbers(2)"##,
            b"ERR:user_script:1: bad argument #1 to 'encode_invalid_numbers' (invalid option '2')",
        ),
        (
            r##"return cjson.encode_invalid_numbers(nil, 1)"##,
            b"ERR:user_script:1: bad argument #2 to 'encode_invalid_numbers' (found too many arguments)",
        ),
        (
            r##"local a = cjson.decode_invalid_numbers(false) local r = {} for _, s in ipairs({"0x10", "+5", "-inf", "nan", "01", "1e400", "-0x1", "Infinity", "NaN", "1", "-1.5e3", "0", "-0", "0.5", "00", "-", "-a", "[0x1]"}) do local ok, e = pcall(cjson.decode, s) r[#r + 1] = s .. "=" .. tostring(e) end return tostring(a) .. " " .. table.concat(r, " ; ")"##,
            b"OK:false 0x10=Expected value but found invalid number at character 1 ; +5=Expected value but found invalid token at character 1 ; -inf=Expected value but found invalid number at character 1 ; nan=Expected value but found invalid token at character 1 ; 01=Expected value but found invalid number at character 1 ; 1e400=inf ; -0x1=Expected value but found invalid number at character 1 ; Infinity=Expected value but found invalid token at character 1 ; NaN=Expected value but found invalid token at character 1 ; 1=1 ; -1.5e3=-1500 ; 0=0 ; -0=-0 ; 0.5=0.5 ; 00=Expected value but found invalid number at character 1 ; -=Expected value but found invalid number at character 1 ; -a=Expected value but found invalid number at character 1 ; [0x1]=Expected value but found invalid number at character 2",
        ),
        (
            r##"return cjson.decode_invalid_numbers("null")"##,
            b"ERR:user_script:1: bad argument #1 to 'decode_invalid_numbers' (invalid option 'null')",
        ),
        (
            r##"return tostring(cjson.decode_invalid_numbers("off")) .. tostring(cjson.decode_invalid_numbers("on"))"##,
            b"OK:falsetrue",
        ),
        (
            r##"cjson.encode_invalid_numbers(true) return cjson.encode({[1/0] = 1})"##,
            b"OK:{\"inf\":1}",
        ),
        (
            r##"cjson.encode_invalid_numbers("null") return cjson.encode({[1/0] = 1})"##,
            b"OK:{\"null\":1}",
        ),
        (
            r##"local c = cjson.new() c.encode_max_depth(1) local ok, e = pcall(c.encode, {{}}) return tostring(rawequal(c, cjson)) .. " " .. e .. " " .. cjson.encode_max_depth() .. " " .. tostring(c.null == cjson.null) .. " " .. c._VERSION .. " " .. type(c.new)"##,
            b"OK:false Cannot serialise, excessive nesting (2) 1000 true 2.1.0 function",
        ),
        (
            r##"local c = cjson.new() return c.encode({1, "x", {y = false}}) .. " " .. c.decode("[2]")[1]"##,
            b"OK:[1,\"x\",{\"y\":false}] 2",
        ),
        (
            r##"local t = {} for i = 0, 255 do t[#t + 1] = string.char(i) end return cjson.encode(table.concat(t))"##,
            b"OK:\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f !\\\"#$%&'()*+,-.\\/0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\\\]^_`abcdefghijklmnopqrstuvwxyz{|}~\\u007f\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f\xa0\xa1\xa2\xa3\xa4\xa5\xa6\xa7\xa8\xa9\xaa\xab\xac\xad\xae\xaf\xb0\xb1\xb2\xb3\xb4\xb5\xb6\xb7\xb8\xb9\xba\xbb\xbc\xbd\xbe\xbf\xc0\xc1\xc2\xc3\xc4\xc5\xc6\xc7\xc8\xc9\xca\xcb\xcc\xcd\xce\xcf\xd0\xd1\xd2\xd3\xd4\xd5\xd6\xd7\xd8\xd9\xda\xdb\xdc\xdd\xde\xdf\xe0\xe1\xe2\xe3\xe4\xe5\xe6\xe7\xe8\xe9\xea\xeb\xec\xed\xee\xef\xf0\xf1\xf2\xf3\xf4\xf5\xf6\xf7\xf8\xf9\xfa\xfb\xfc\xfd\xfe\xff\"",
        ),
        (
            r##"local t = {} for i = 0, 255 do t[#t + 1] = string.char(i) end local s = table.concat(t) return cjson.decode(cjson.encode(s)) == s"##,
            b"OK:true",
        ),
        (
            r##"return cjson.encode({[cjson.null] = 1})"##,
            b"ERR:user_script:1: Cannot serialise userdata: table key must be a number or string",
        ),
        (
            r##"return cjson.encode({[1] = 1, [2] = 2, [4] = 4})"##,
            b"OK:[1,2,null,4]",
        ),
        (
            r##"cjson.encode_sparse_array(true) return cjson.encode({[1] = 1, [11] = 1, [3] = "x"})"##,
            b"OK:{\"1\":1,\"3\":\"x\",\"11\":1}",
        ),
        (
            r##"return cjson.encode({1e16, 123456789012345, -0.0, 2^-1074, 1.7976931348623157e308, 0.000001, 0.0000001, 1234567.5})"##,
            b"OK:[1e+16,1.2345678901234e+14,-0,4.9406564584125e-324,1.7976931348623e+308,1e-06,1e-07,1234567.5]",
        ),
        (
            r##"return cjson.encode(1, nil)"##,
            b"ERR:user_script:1: bad argument #1 to 'encode' (expected 1 argument)",
        ),
        (
            r##"return cjson.decode(0)"##,
            b"OK:0",
        ),
        (
            r##"return cjson.decode(-1.5)"##,
            b"OK:-1.5",
        ),
        (
            r##"return cjson.decode('{ "a" : 1 , "b" : [ 1 , 2 ] }').b[2]"##,
            b"OK:2",
        ),
        (
            r##"return cjson.decode("1true")"##,
            b"ERR:user_script:1: Expected the end but found T_BOOLEAN at character 2",
        ),
        (
            r##"return cjson.decode("[1,2]x")"##,
            b"ERR:user_script:1: Expected the end but found invalid token at character 6",
        ),
        (
            r##"return cjson.decode("[true false]")"##,
            b"ERR:user_script:1: Expected comma or array end but found T_BOOLEAN at character 7",
        ),
        (
            r##"return cjson.decode("[1,\n2,\n x]")"##,
            b"ERR:user_script:1: Expected value but found invalid token at character 9",
        ),
        (
            r##"return cjson.decode("0x1P-2")"##,
            b"OK:0.25",
        ),
        (
            r##"return cjson.decode("-0x1p4")"##,
            b"OK:-16",
        ),
        (
            r##"return cjson.decode("0x.8")"##,
            b"OK:0.5",
        ),
        (
            r##"return cjson.decode("1e5x")"##,
            b"ERR:user_script:1: Expected the end but found invalid token at character 4",
        ),
        (
            r##"return cjson.decode("1.5.5")"##,
            b"ERR:user_script:1: Expected the end but found invalid token at character 4",
        ),
        (
            r##"return cjson.decode("--1")"##,
            b"ERR:user_script:1: Expected value but found invalid number at character 1",
        ),
        (
            r##"return cjson.decode("1 \0 x")"##,
            b"OK:1",
        ),
        (
            r##"return cjson.decode('"\\u00"')"##,
            b"ERR:user_script:1: Expected value but found invalid unicode escape code at character 2",
        ),
        (
            r##"return cjson.decode('"\\u00e"')"##,
            b"ERR:user_script:1: Expected value but found invalid unicode escape code at character 2",
        ),
        (
            r##"return cjson.decode('"ab\\u0041\\u"')"##,
            b"ERR:user_script:1: Expected value but found invalid unicode escape code at character 10",
        ),
        (
            r##"return cjson.decode('{"1":2}')[1]"##,
            b"OK:nil",
        ),
        (
            r##"return cjson.decode('{"1":2}')["1"]"##,
            b"OK:2",
        ),
        (
            r##"return #cjson.decode("[1,null,3]")"##,
            b"OK:3",
        ),
        (
            r##"return cjson.encode(cjson.decode("[null,null]"))"##,
            b"OK:[null,null]",
        ),
        (
            r##"return cjson.encode(cjson.decode('{"a\\u0000b":"\\u0000"}'))"##,
            b"OK:{\"a\\u0000b\":\"\\u0000\"}",
        ),
        (
            r##"return cjson.encode(cjson.decode('[1e2, 0.5e-3, -0.0, 1E400, 0x10]'))"##,
            b"ERR:user_script:1: Cannot serialise number: must not be NaN or Inf",
        ),
        (
            r##"return cjson.encode_keep_buffer(nil)"##,
            b"OK:true",
        ),
        (
            r##"return cjson.encode_number_precision("3")"##,
            b"OK:3",
        ),
        (
            r##"return cjson.encode_number_precision(3.9)"##,
            b"OK:3",
        ),
        (
            r##"return cjson.encode_max_depth(1e300)"##,
            b"ERR:user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)",
        ),
        (
            r##"return cjson.encode_max_depth(2^31)"##,
            b"ERR:user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)",
        ),
        (
            r##"return cjson.encode_max_depth(-0.5)"##,
            b"ERR:user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)",
        ),
        (
            r##"return cjson.encode_sparse_array(nil, nil, nil)"##,
            b"OK:false",
        ),
        (
            r##"local a, b, c = cjson.encode_sparse_array(false, 2^31 - 1, 0) return tostring(a) .. b .. c"##,
            b"OK:false21474836470",
        ),
        (
            r##"return cjson.encode_invalid_numbers(true, nil)"##,
            b"ERR:user_script:1: bad argument #2 to 'encode_invalid_numbers' (found too many arguments)",
        ),
        (
            r##"cjson.encode_invalid_numbers(true) return cjson.encode({[0/0 ~= 0/0 and 1 or 2] = -(0/0)})"##,
            b"OK:[nan]",
        ),
        (
            r##"cjson.encode_invalid_numbers(true) cjson.encode_number_precision(3) return cjson.encode({1/0, 1/3})"##,
            b"OK:[inf,0.333]",
        ),
        (
            r##"return cjson.encode({[1] = {[1] = {[1] = {[2] = 5}}}})"##,
            b"OK:[[[[null,5]]]]",
        ),
        (
            r##"return cjson.encode({a = {b = {c = {}}}, [1.25] = {d = {1, {e = cjson.null}}}})"##,
            b"OK:{\"a\":{\"b\":{\"c\":{}}},\"1.25\":{\"d\":[1,{\"e\":null}]}}",
        ),
        (
            r##"return cjson.encode({["\0"] = "\0", ["/"] = "\\"})"##,
            b"OK:{\"\\/\":\"\\\\\",\"\\u0000\":\"\\u0000\"}",
        ),
        (
            r##"return cjson.decode(string.rep(" ", 100) .. "[" .. string.rep(" ", 100) .. "]" .. string.rep(" ", 100)) ~= nil"##,
            b"OK:true",
        ),
        (
            r##"return #cjson.encode(string.rep("\1", 100000))"##,
            b"OK:600002",
        ),
        (
            r##"return #cjson.decode('"' .. string.rep("\\u00e9", 100000) .. '"')"##,
            b"OK:200000",
        ),
        (
            r##"local t = {} for i = 1, 1000 do t[i] = i * 1.5 end return #cjson.encode(t) .. " " .. cjson.decode(cjson.encode(t))[999]"##,
            b"OK:5263 1498.5",
        ),
        (
            r##"local t = {} for i = 1, 100 do t["k" .. i] = i end return cjson.encode(t)"##,
            b"OK:{\"k16\":16,\"k32\":32,\"k71\":71,\"k75\":75,\"k39\":39,\"k31\":31,\"k79\":79,\"k96\":96,\"k72\":72,\"k98\":98,\"k67\":67,\"k10\":10,\"k58\":58,\"k1\":1,\"k63\":63,\"k27\":27,\"k34\":34,\"k23\":23,\"k74\":74,\"k50\":50,\"k81\":81,\"k45\":45,\"k85\":85,\"k41\":41,\"k66\":66,\"k49\":49,\"k42\":42,\"k28\":28,\"k20\":20,\"k37\":37,\"k8\":8,\"k77\":77,\"k73\":73,\"k44\":44,\"k33\":33,\"k60\":60,\"k4\":4,\"k84\":84,\"k12\":12,\"k91\":91,\"k55\":55,\"k19\":19,\"k95\":95,\"k51\":51,\"k69\":69,\"k99\":99,\"k59\":59,\"k36\":36,\"k76\":76,\"k52\":52,\"k97\":97,\"k46\":46,\"k30\":30,\"k38\":38,\"k14\":14,\"k47\":47,\"k87\":87,\"k43\":43,\"k3\":3,\"k93\":93,\"k92\":92,\"k90\":90,\"k89\":89,\"k54\":54,\"k94\":94,\"k7\":7,\"k56\":56,\"k83\":83,\"k82\":82,\"k80\":80,\"k78\":78,\"k22\":22,\"k70\":70,\"k61\":61,\"k100\":100,\"k68\":68,\"k21\":21,\"k29\":29,\"k25\":25,\"k65\":65,\"k11\":11,\"k86\":86,\"k62\":62,\"k35\":35,\"k57\":57,\"k88\":88,\"k48\":48,\"k24\":24,\"k53\":53,\"k18\":18,\"k5\":5,\"k2\":2,\"k26\":26,\"k17\":17,\"k64\":64,\"k15\":15,\"k6\":6,\"k9\":9,\"k40\":40,\"k13\":13}",
        ),
        (
            r##"return cjson.encode(cjson.decode('{"z":1,"y":2,"x":3,"w":4,"v":5,"u":6,"t":7,"s":8,"r":9}'))"##,
            b"OK:{\"s\":8,\"r\":9,\"u\":6,\"t\":7,\"w\":4,\"v\":5,\"y\":2,\"x\":3,\"z\":1}",
        ),
        (
            r##"local ok, e = pcall(cjson.decode) return e"##,
            b"OK:bad argument #1 to '?' (expected 1 argument)",
        ),
        (
            r##"local ok, e = pcall(cjson.encode_max_depth, 0) return e"##,
            b"OK:bad argument #1 to '?' (expected integer between 1 and 2147483647)",
        ),
        (
            r##"local ok, e = pcall(cjson.encode_sparse_array, "x") return e"##,
            b"OK:bad argument #1 to '?' (invalid option 'x')",
        ),
        (
            r##"return cjson.encode(cjson)"##,
            b"ERR:user_script:1: Cannot serialise function: type not supported",
        ),
        (
            r##"return cjson.encode({cjson.encode})"##,
            b"ERR:user_script:1: Cannot serialise function: type not supported",
        ),
    ];
}
