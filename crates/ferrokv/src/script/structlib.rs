//! The `struct` library of Redis's Lua (Roberto Ierusalimschy's lstruct,
//! as bundled in Redis 7.0): conversion between Lua values and C structs
//! packed in binary strings.
//!
//! Functions: `struct.pack(fmt, v1, ...)` returns the binary string;
//! `struct.unpack(fmt, s [, init])` returns the values and then the
//! position after the last byte read; `struct.size(fmt)` returns the size
//! of a fixed-size format.
//!
//! The format is a sequence of options, spaces ignored:
//! `>` / `<` big / little endian (the default is native), `![n]` maximum
//! alignment `n` (default 8, must be a power of 2; the default before any
//! `!` is 1, no alignment), `x` one zero byte, `b`/`B` signed / unsigned
//! char, `h`/`H` short, `l`/`L` long (8 bytes), `T` `size_t`, `i[n]` /
//! `I[n]` integer of `n` bytes (default 4, at most 32), `c[n]` string of
//! `n` bytes (default 1), `s` zero-terminated string, `f` float, `d`
//! double. `c0` packs a whole string and unpacks as many bytes as the
//! previous unpacked value says (which is replaced by the string).
//!
//! Everything follows the x86-64 build of Redis 7.0 byte for byte,
//! including its corner cases:
//! - a number is packed through a C cast to a 64-bit integer, with the
//!   x86-64 results where C leaves it undefined (NaN and values at or
//!   above 2^64 give 0x8000000000000000 and 0, values below -2^63 give
//!   0x8000000000000000); integers wider than 8 bytes are zero-extended;
//! - an unpacked signed integer wider than 8 bytes is sign-extended from
//!   bit `(8n - 1) mod 64` of its low 8 bytes (the C shift count is
//!   reduced modulo 64 by the hardware); other bytes are ignored;
//! - alignment pads to `min(size, maxalign)` with C's formula even when
//!   the size is not a power of 2 (`!i3`);
//! - `unpack` positions use unsigned C arithmetic (`init` -1 wraps, and
//!   so does the returned position);
//! - the format stops at an embedded zero byte; `size` ignores unknown
//!   letters and digits;
//! - every error message is Redis's, down to `pack` reporting a missing
//!   value as `got nil` (the C code pushes a nil after the arguments) and
//!   its "string too short" naming the argument after the string.

use super::ffi::{self, check_bytes, check_number, error_at, push_bytes, Raise};
use mlua_sys as lua;
use mlua_sys::lua_State;
use std::ffi::{c_int, c_long};
use std::io::Write;
use std::mem::ManuallyDrop;

/// Largest size of an `i`/`I` option.
const MAXINTSIZE: c_int = 32;

/// Default maximum alignment of `!` (the alignment of a double in a C
/// struct, at least that of an int).
const MAXALIGN: c_int = 8;

/// Byte order of the packed data.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Endian {
    Big,
    Little,
}

/// The byte order of the machine (`=` is not an option; this is only the
/// initial setting).
const NATIVE: Endian = if cfg!(target_endian = "big") {
    Endian::Big
} else {
    Endian::Little
};

/// The options in force while a format is read.
struct Header {
    endian: Endian,
    /// Maximum alignment (1: none).
    align: usize,
}

impl Header {
    fn new() -> Self {
        Header {
            endian: NATIVE,
            align: 1,
        }
    }
}

/// An error message, built without allocating (they are all short).
#[derive(Clone, Copy)]
struct Msg {
    buf: [u8; 80],
    len: usize,
}

impl Msg {
    fn new(args: std::fmt::Arguments<'_>) -> Self {
        let mut buf = [0u8; 80];
        let mut w = &mut buf[..];
        // A longer message would only be cut.
        let _ = w.write_fmt(args);
        let len = 80 - w.len();
        Msg { buf, len }
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// How a function of the library failed. Nothing is pushed until its
/// shell raises it: `unpack` first drops the values it pushed, so that
/// the message always has stack room.
enum Fail {
    /// An argument error of [`ffi`]'s kinds.
    Raise(Raise),
    /// `luaL_error(msg)`.
    Error(Msg),
    /// `luaL_argerror(1, "invalid format option 'c'")`.
    BadOption(u8),
}

impl From<Raise> for Fail {
    fn from(r: Raise) -> Self {
        Fail::Raise(r)
    }
}

type Ret = Result<c_int, Fail>;

/// `luaL_error(fmt, ...)`, deferred.
fn error(args: std::fmt::Arguments<'_>) -> Fail {
    Fail::Error(Msg::new(args))
}

/// Raises `fail` as the C library does.
///
/// # Safety
/// Nothing with a destructor may be alive in the caller.
unsafe fn raise(l: *mut lua_State, fail: Fail) -> c_int {
    unsafe {
        match fail {
            Fail::Raise(r) => ffi::finish(l, Err(r)),
            Fail::Error(msg) => {
                error_at(l, 1, msg.bytes());
                lua::lua_error(l)
            }
            Fail::BadOption(opt) => {
                const HEAD: &[u8] = b"invalid format option '";
                let mut msg = [0u8; HEAD.len() + 2];
                msg[..HEAD.len()].copy_from_slice(HEAD);
                msg[HEAD.len()] = opt;
                msg[HEAD.len() + 1] = b'\'';
                push_bytes(l, &msg);
                lua::luaL_argerror(l, 1, lua::lua_tostring(l, -1))
            }
        }
    }
}

/// Declares the `extern "C-unwind"` shell `$name` of `$inner`, which owns
/// everything with a destructor and has dropped it when it returns.
macro_rules! struct_fn {
    ($name:ident, $inner:ident) => {
        unsafe extern "C-unwind" fn $name(l: *mut lua_State) -> c_int {
            // SAFETY: called by Lua with a valid state; nothing with a
            // destructor is alive when the error is raised.
            unsafe {
                match $inner(l) {
                    Ok(n) => n,
                    Err(fail) => raise(l, fail),
                }
            }
        }
    };
}

/// The format string at argument 1, up to its first zero byte (the C
/// library reads it as a C string).
unsafe fn format_arg<'a>(l: *mut lua_State) -> Result<&'a [u8], Raise> {
    let fmt = unsafe { check_bytes(l, 1)? };
    Ok(match fmt.iter().position(|&c| c == 0) {
        Some(end) => &fmt[..end],
        None => fmt,
    })
}

/// Reads the decimal number at the start of `fmt`, or returns `df` when
/// there is none; errors when it does not fit in a C int.
fn getnum(fmt: &mut &[u8], df: c_int) -> Result<c_int, Fail> {
    if !fmt.first().is_some_and(u8::is_ascii_digit) {
        return Ok(df);
    }
    let mut a: c_int = 0;
    while let Some(&c) = fmt.first().filter(|c| c.is_ascii_digit()) {
        let d = c_int::from(c - b'0');
        if a > c_int::MAX / 10 || a * 10 > c_int::MAX - d {
            return Err(error(format_args!("integral size overflow")));
        }
        a = a * 10 + d;
        *fmt = &fmt[1..];
    }
    Ok(a)
}

/// The size of option `opt` (reading its count from `fmt`); 0 for the
/// options that take no room or no fixed room.
fn optsize(opt: u8, fmt: &mut &[u8]) -> Result<usize, Fail> {
    Ok(match opt {
        b'B' | b'b' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' => std::mem::size_of::<c_long>(),
        b'T' => std::mem::size_of::<usize>(),
        b'f' => 4,
        b'd' => 8,
        b'x' => 1,
        b'c' => getnum(fmt, 1)? as usize,
        b'i' | b'I' => {
            let sz = getnum(fmt, 4)?;
            if sz > MAXINTSIZE {
                return Err(error(format_args!(
                    "integral size {sz} is larger than limit of {MAXINTSIZE}"
                )));
            }
            sz as usize
        }
        _ => 0,
    })
}

/// Padding before an option of `size` bytes at offset `len`: C's
/// `(size - (len & (size - 1))) & (size - 1)` with `size` capped by the
/// maximum alignment (not required to be a power of 2).
fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size - (len & (size - 1))) & (size - 1)
}

/// Applies a control option (endianness, alignment, space), or fails for
/// an invalid option.
fn controloptions(opt: u8, fmt: &mut &[u8], h: &mut Header) -> Result<(), Fail> {
    match opt {
        b' ' => {}
        b'>' => h.endian = Endian::Big,
        b'<' => h.endian = Endian::Little,
        b'!' => {
            let a = getnum(fmt, MAXALIGN)?;
            if a <= 0 || a & (a - 1) != 0 {
                return Err(error(format_args!("alignment {a} is not a power of 2")));
            }
            h.align = a as usize;
        }
        _ => return Err(Fail::BadOption(opt)),
    }
    Ok(())
}

/// C's `(long)x` on x86-64 (`cvttsd2si`): NaN and out-of-range values
/// give `i64::MIN`.
fn c_f64_to_i64(x: f64) -> i64 {
    if x.is_nan() || x >= 9223372036854775808.0 {
        i64::MIN
    } else {
        x as i64
    }
}

/// C's `(unsigned long)x` as GCC compiles it on x86-64: values from 2^63
/// are converted after subtracting 2^63 (so 2^64 and above give 0), the
/// others (negative ones and NaN included) as `(long)x`.
fn c_f64_to_u64(x: f64) -> u64 {
    const TWO63: f64 = 9223372036854775808.0;
    if x >= TWO63 {
        c_f64_to_i64(x - TWO63) as u64 ^ (1 << 63)
    } else {
        c_f64_to_i64(x) as u64
    }
}

/// `(float)x`: rounds to nearest; a NaN keeps its sign and the top of its
/// payload and becomes quiet, as `cvtsd2ss` does.
fn f64_to_f32_bits(x: f64) -> u32 {
    if x.is_nan() {
        let b = x.to_bits();
        ((b >> 32) as u32 & 0x8000_0000) | 0x7fc0_0000 | ((b >> 29) as u32 & 0x003f_ffff)
    } else {
        (x as f32).to_bits()
    }
}

/// `(double)f` for the bits of a float; a NaN keeps its sign and payload
/// and becomes quiet, as `cvtss2sd` does.
fn f32_bits_to_f64(b: u32) -> f64 {
    let f = f32::from_bits(b);
    if f.is_nan() {
        f64::from_bits(
            (u64::from(b & 0x8000_0000) << 32)
                | 0x7ff8_0000_0000_0000
                | (u64::from(b & 0x003f_ffff) << 29),
        )
    } else {
        f64::from(f)
    }
}

/// Appends the integer `n` in `size` bytes (more than 8: zero-extended).
fn putinteger(out: &mut Vec<u8>, n: f64, endian: Endian, size: usize) {
    let mut value = if n < 0.0 {
        c_f64_to_i64(n) as u64
    } else {
        c_f64_to_u64(n)
    };
    let mut buf = [0u8; MAXINTSIZE as usize];
    let buf = &mut buf[..size];
    for i in 0..size {
        let at = if endian == Endian::Little {
            i
        } else {
            size - 1 - i
        };
        buf[at] = value as u8;
        value >>= 8;
    }
    out.extend_from_slice(buf);
}

/// The integer in `buf`: its low 8 bytes, sign-extended (when `signed`)
/// from bit `(8 * len - 1) mod 64`.
fn getinteger(buf: &[u8], endian: Endian, signed: bool) -> f64 {
    let fold = |v: u64, &b: &u8| (v << 8) | u64::from(b);
    let v = if endian == Endian::Big {
        buf.iter().fold(0, fold)
    } else {
        buf.iter().rev().fold(0, fold)
    };
    if !signed {
        return v as f64;
    }
    let shift = (buf.len() as u32).wrapping_mul(8).wrapping_sub(1) & 63;
    let mask = !0u64 << shift;
    if v & mask != 0 {
        (v | mask) as i64 as f64
    } else {
        v as i64 as f64
    }
}

/// The `N` bytes of a float or double in `endian` order, as native ones.
fn native<const N: usize>(b: &[u8], endian: Endian) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    if endian != NATIVE {
        a.reverse();
    }
    a
}

/// `struct.pack(fmt, v1, v2, ...)`.
unsafe fn pack(l: *mut lua_State) -> Ret {
    unsafe {
        let mut fmt = format_arg(l)?;
        // The C library pushes a nil here to mark the end of the values:
        // a missing value is reported as "got nil", not "got no value".
        lua::lua_pushnil(l);
        let mut h = Header::new();
        let mut arg: c_int = 2;
        let mut out: Vec<u8> = Vec::new();
        while let Some((&opt, rest)) = fmt.split_first() {
            fmt = rest;
            let size = optsize(opt, &mut fmt)?;
            let pad = gettoalign(out.len(), &h, opt, size);
            out.resize(out.len() + pad, 0);
            match opt {
                b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                    let n = check_number(l, arg)?;
                    arg += 1;
                    putinteger(&mut out, n, h.endian, size);
                }
                b'x' => out.push(0),
                b'f' => {
                    let bits = f64_to_f32_bits(check_number(l, arg)?);
                    arg += 1;
                    out.extend_from_slice(&match h.endian {
                        Endian::Big => bits.to_be_bytes(),
                        Endian::Little => bits.to_le_bytes(),
                    });
                }
                b'd' => {
                    let bits = check_number(l, arg)?.to_bits();
                    arg += 1;
                    out.extend_from_slice(&match h.endian {
                        Endian::Big => bits.to_be_bytes(),
                        Endian::Little => bits.to_le_bytes(),
                    });
                }
                b'c' | b's' => {
                    let s = check_bytes(l, arg)?;
                    arg += 1;
                    let size = if size == 0 { s.len() } else { size };
                    if s.len() < size {
                        // Redis names the argument after this one.
                        return Err(Raise::Arg(arg, c"string too short").into());
                    }
                    out.extend_from_slice(&s[..size]);
                    if opt == b's' {
                        out.push(0);
                    }
                }
                _ => controloptions(opt, &mut fmt, &mut h)?,
            }
        }
        // Pushing can only fail for lack of memory; should it, the buffer
        // leaks rather than being skipped by the longjmp with its
        // destructor pending.
        let out = ManuallyDrop::new(out);
        push_bytes(l, &out);
        drop(ManuallyDrop::into_inner(out));
        Ok(1)
    }
}

/// `struct.unpack(fmt, s [, init])`.
unsafe fn unpack(l: *mut lua_State) -> Ret {
    unsafe {
        let top = lua::lua_gettop(l);
        let r = unpack_values(l);
        if r.is_err() {
            // Drop the values unpacked so far: the error message needs
            // room even when they filled the stack.
            lua::lua_settop(l, top);
        }
        r
    }
}

/// [`unpack`], leaving the values it unpacked on the stack on errors.
unsafe fn unpack_values(l: *mut lua_State) -> Ret {
    unsafe {
        let mut fmt = format_arg(l)?;
        let data = check_bytes(l, 2)?;
        let ld = data.len();
        // luaL_optinteger, then C's size_t.
        let mut pos = if lua::lua_isnoneornil(l, 3) != 0 {
            1
        } else {
            let init = lua::lua_tointeger_(l, 3);
            if init == 0 && lua::lua_isnumber(l, 3) == 0 {
                return Err(Raise::Type(3, c"number").into());
            }
            init as usize
        };
        if pos == 0 {
            return Err(Raise::Arg(3, c"offset must be 1 or greater").into());
        }
        pos -= 1;
        let mut h = Header::new();
        let mut n: c_int = 0;
        while let Some((&opt, rest)) = fmt.split_first() {
            fmt = rest;
            let mut size = optsize(opt, &mut fmt)?;
            pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
            if size > ld || pos > ld - size {
                return Err(Raise::Arg(2, c"data string too short").into());
            }
            if lua::lua_checkstack(l, 2) == 0 {
                return Err(error(format_args!("stack overflow (too many results)")));
            }
            match opt {
                b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                    let v = getinteger(&data[pos..pos + size], h.endian, opt.is_ascii_lowercase());
                    lua::lua_pushnumber(l, v);
                    n += 1;
                }
                b'x' => {}
                b'f' => {
                    let bits = u32::from_ne_bytes(native(&data[pos..], h.endian));
                    lua::lua_pushnumber(l, f32_bits_to_f64(bits));
                    n += 1;
                }
                b'd' => {
                    let d = f64::from_ne_bytes(native(&data[pos..], h.endian));
                    lua::lua_pushnumber(l, d);
                    n += 1;
                }
                b'c' => {
                    if size == 0 {
                        if n == 0 || lua::lua_isnumber(l, -1) == 0 {
                            return Err(error(format_args!("format 'c0' needs a previous size")));
                        }
                        size = c_f64_to_u64(lua::lua_tonumber(l, -1)) as usize;
                        lua::lua_pop(l, 1);
                        n -= 1;
                        if size > ld || pos > ld - size {
                            return Err(Raise::Arg(2, c"data string too short").into());
                        }
                    }
                    push_bytes(l, &data[pos..pos + size]);
                    n += 1;
                }
                b's' => {
                    let Some(len) = data[pos..].iter().position(|&c| c == 0) else {
                        return Err(error(format_args!("unfinished string in data")));
                    };
                    push_bytes(l, &data[pos..pos + len]);
                    n += 1;
                    size = len + 1;
                }
                _ => controloptions(opt, &mut fmt, &mut h)?,
            }
            pos += size;
        }
        lua::lua_pushinteger(l, pos.wrapping_add(1) as lua::lua_Integer);
        Ok(n + 1)
    }
}

/// `struct.size(fmt)`.
unsafe fn size(l: *mut lua_State) -> Ret {
    unsafe {
        let mut fmt = format_arg(l)?;
        let mut h = Header::new();
        let mut pos: usize = 0;
        while let Some((&opt, rest)) = fmt.split_first() {
            fmt = rest;
            let size = optsize(opt, &mut fmt)?;
            pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
            if opt == b's' {
                return Err(Raise::Arg(1, c"option 's' has no fixed size").into());
            } else if opt == b'c' && size == 0 {
                return Err(Raise::Arg(1, c"option 'c0' has no fixed size").into());
            }
            // Letters and digits that are no option count for nothing.
            if !opt.is_ascii_alphanumeric() {
                controloptions(opt, &mut fmt, &mut h)?;
            }
            pos = pos.wrapping_add(size);
        }
        lua::lua_pushinteger(l, pos as lua::lua_Integer);
        Ok(1)
    }
}

struct_fn!(f_pack, pack);
struct_fn!(f_unpack, unpack);
struct_fn!(f_size, size);

/// Opens the library: creates the `struct` table and sets it as global
/// `struct`.
///
/// # Safety
/// Called by Lua (through `lua_call`) on a valid state.
pub unsafe extern "C-unwind" fn open(l: *mut lua_State) -> c_int {
    unsafe {
        lua::lua_newtable(l);
        for (name, f) in [
            (c"pack", f_pack as lua::lua_CFunction),
            (c"unpack", f_unpack),
            (c"size", f_size),
        ] {
            ffi::set_fn(l, name, f);
        }
        lua::lua_setglobal(l, c"struct".as_ptr());
    }
    0
}

#[cfg(test)]
mod tests {
    use super::open;
    use mlua_sys as lua;

    /// Lua helpers formatting what an expression returns: `s:` and the
    /// hex of a string, `n:` and a number as `%.17g`, or `ERR:` and the
    /// error message (other than printable ASCII as `\decimal`).
    const PRELUDE: &str = "\
        local function hex(s) return (string.gsub(s, '.', function(c) \
        return string.format('%02x', string.byte(c)) end)) end \
        local function show(ok, ...) \
        if not ok then return 'ERR:' .. (string.gsub(tostring((...)), \
        '[^%w%p ]', function(c) return '\\\\' .. string.byte(c) end)) end \
        local t = {} \
        for i=1,select('#',...) do \
        local v = select(i,...) \
        if type(v)=='string' then t[#t+1]='s:'..hex(v) \
        elseif type(v)=='number' then t[#t+1]='n:'..string.format('%.17g', v) \
        else t[#t+1]=type(v)..':'..tostring(v) end \
        end \
        return table.concat(t, ' ') \
        end\n";

    /// Expressions and what they give on redis-server 7.0.15 (x86-64),
    /// evaluated as line 2 of a script named `@user_script`.
    const CASES: &[(&str, &str)] = &[
        (r#"struct.pack('>I2', 258)"#, r#"s:0102"#),
        (
            r#"struct.pack('<bBhH', -2, 254, -300, 65000)"#,
            r#"s:fefed4fee8fd"#,
        ),
        (
            r#"struct.pack('>bBhH', -2, 254, -300, 65000)"#,
            r#"s:fefefed4fde8"#,
        ),
        (
            r#"struct.pack('<lLT', -5, 2^40 + 7, 123456789)"#,
            r#"s:fbffffffffffffff070000000001000015cd5b0700000000"#,
        ),
        (
            r#"struct.pack('>iI', -70000, 4000000000)"#,
            r#"s:fffeee90ee6b2800"#,
        ),
        (r#"struct.pack('<f>f', 1.5, 1.5)"#, r#"s:0000c03f3fc00000"#),
        (
            r#"struct.pack('<d>d', -0.0, 1/3)"#,
            r#"s:00000000000000803fd5555555555555"#,
        ),
        (
            r#"struct.pack('<i3>i3<I5>I5', -2, -2, 0x123456789a, 0x123456789a)"#,
            r#"s:fefffffffffe9a78563412123456789a"#,
        ),
        (
            r#"struct.pack('<i16', -2)"#,
            r#"s:feffffffffffffff0000000000000000"#,
        ),
        (
            r#"struct.pack('>i12', -2)"#,
            r#"s:00000000fffffffffffffffe"#,
        ),
        (r#"struct.pack('>I9', -2^70)"#, r#"s:008000000000000000"#),
        (
            r#"struct.pack('i32', -1)"#,
            r#"s:ffffffffffffffff000000000000000000000000000000000000000000000000"#,
        ),
        (r#"struct.pack('i0', 5)"#, r#"s:"#),
        (r#"struct.pack('B', 256)"#, r#"s:00"#),
        (r#"struct.pack('b', 200)"#, r#"s:c8"#),
        (r#"struct.pack('b', -1.9)"#, r#"s:ff"#),
        (r#"struct.pack('b', -0.5)"#, r#"s:00"#),
        (r#"struct.pack('<L', 2^64)"#, r#"s:0000000000000000"#),
        (r#"struct.pack('<L', 2^63)"#, r#"s:0000000000000080"#),
        (
            r#"struct.pack('<l', -2^63 - 4096)"#,
            r#"s:0000000000000080"#,
        ),
        (r#"struct.pack('<L', 1/0)"#, r#"s:0000000000000000"#),
        (r#"struct.pack('<L', -1/0)"#, r#"s:0000000000000080"#),
        (r#"struct.pack('<L', 0/0)"#, r#"s:0000000000000080"#),
        (r#"struct.pack('f', 1e300)"#, r#"s:0000807f"#),
        (r#"struct.pack('f', 0/0)"#, r#"s:0000c0ff"#),
        (
            r#"struct.pack('<f', 1.401298464324817e-45 * 0.75)"#,
            r#"s:01000000"#,
        ),
        (
            r#"struct.pack('f', (struct.unpack('d', '\1\0\0\32\0\0\240\255')))"#,
            r#"s:0100c0ff"#,
        ),
        (
            r#"struct.pack('d', (struct.unpack('<f', '\1\0\128\255')))"#,
            r#"s:000000200000f8ff"#,
        ),
        (r#"struct.pack('b', '12')"#, r#"s:0c"#),
        (r#"struct.pack('d', ' 0x10 ')"#, r#"s:0000000000003040"#),
        (r#"struct.pack('c0', 12.5)"#, r#"s:31322e35"#),
        (r#"struct.pack('c3', 'abcdef')"#, r#"s:616263"#),
        (r#"struct.pack('s', 'a\0b')"#, r#"s:61006200"#),
        (r#"struct.pack('xxbx', 7)"#, r#"s:00000700"#),
        (r#"struct.pack(' b  h ', 1, 2)"#, r#"s:010200"#),
        (r#"struct.pack('b\0b', 1, 2)"#, r#"s:01"#),
        (
            r#"struct.pack('!4bsi', 1, 'hi', 2)"#,
            r#"s:0168690002000000"#,
        ),
        (
            r#"struct.pack('!4bc0i', 1, 'hi', 2)"#,
            r#"s:0168690002000000"#,
        ),
        (
            r#"struct.pack('!bd', 1, 2)"#,
            r#"s:01000000000000000000000000000040"#,
        ),
        (
            r#"struct.pack('!2bhbibd', 1, 2, 3, 4, 5, 6)"#,
            r#"s:0100020003000400000005000000000000001840"#,
        ),
        (
            r#"struct.pack('!>blbT', 1, 2, 3, 4)"#,
            r#"s:0100000000000000000000000000000203000000000000000000000000000004"#,
        ),
        (r#"struct.pack('!i3i3', 1, 2)"#, r#"s:00000100000000020000"#),
        (
            r#"struct.pack('!8bi6', 1, 2)"#,
            r#"s:010000000000020000000000"#,
        ),
        (r#"struct.pack('!001bi', 1, 2)"#, r#"s:0102000000"#),
        (r#"struct.pack('i02c00', 7, 'xyz')"#, r#"s:070078797a"#),
        (
            r#"struct.unpack('<bBhH', '\254\254\212\254\232\253')"#,
            r#"n:-2 n:254 n:-300 n:65000 n:7"#,
        ),
        (
            r#"struct.unpack('>lLT', string.rep('\255', 8) .. string.rep('\128', 8) .. '\0\0\0\0\0\0\1\0')"#,
            r#"n:-1 n:9.259542123273814e+18 n:256 n:25"#,
        ),
        (
            r#"struct.unpack('<f>f', struct.pack('<f>f', 1.1, 1.1))"#,
            r#"n:1.1000000238418579 n:1.1000000238418579 n:9"#,
        ),
        (
            r#"struct.unpack('<d>d', struct.pack('<d>d', 1.1, -1e300))"#,
            r#"n:1.1000000000000001 n:-1.0000000000000001e+300 n:17"#,
        ),
        (r#"struct.unpack('f', '\0\0\192\127')"#, r#"n:nan n:5"#),
        (
            r#"struct.unpack('>i3<I3', '\255\0\1\255\0\1')"#,
            r#"n:-65535 n:65791 n:7"#,
        ),
        (
            r#"struct.unpack('<i9', '\128\0\0\0\0\0\0\0\0')"#,
            r#"n:-128 n:10"#,
        ),
        (
            r#"struct.unpack('<i10', '\1\2\3\4\5\6\7\8\9\10')"#,
            r#"n:-32255 n:11"#,
        ),
        (
            r#"struct.unpack('>i16', '\1\2\3\4\5\6\7\8\9\10\1\2\3\4\5\255')"#,
            r#"n:6.5133420426061568e+17 n:17"#,
        ),
        (
            r#"struct.unpack('<I9', '\255\255\255\255\255\255\255\255\255')"#,
            r#"n:1.8446744073709552e+19 n:10"#,
        ),
        (
            r#"struct.unpack('<i8<I8', '\0\0\0\0\0\0\0\128\0\0\0\0\0\0\0\128')"#,
            r#"n:-9.2233720368547758e+18 n:9.2233720368547758e+18 n:17"#,
        ),
        (r#"struct.unpack('i0i0b', '\5')"#, r#"n:0 n:0 n:5 n:2"#),
        (
            r#"struct.unpack('ss', 'xab\0cd\0', 2)"#,
            r#"s:6162 s:6364 n:8"#,
        ),
        (
            r#"struct.unpack('s', 'xab\0cd\0', 8)"#,
            r#"ERR:user_script:2: unfinished string in data"#,
        ),
        (r#"struct.unpack('bc0', '\002abc')"#, r#"s:6162 n:4"#),
        (r#"struct.unpack('c3c0', ' 2 abc')"#, r#"s:6162 n:6"#),
        (
            r#"struct.unpack('dc0', struct.pack('d', 2^64) .. 'abc')"#,
            r#"s: n:9"#,
        ),
        (
            r#"struct.unpack('Bc0Bc0 s', struct.pack('Bc0Bc0 s', 1, 'a', 2, 'bc', 'de'))"#,
            r#"s:61 s:6263 s:6465 n:9"#,
        ),
        (r#"struct.unpack('b', 'ab', 2.5)"#, r#"n:98 n:3"#),
        (r#"struct.unpack('b', 'ab', ' 2 ')"#, r#"n:98 n:3"#),
        (r#"struct.unpack('', 'ab', 4)"#, r#"n:4"#),
        (r#"struct.unpack('', 'ab', -1)"#, r#"n:-1"#),
        (
            r#"struct.unpack('', 'ab', 2^64)"#,
            r#"n:-9.2233720368547758e+18"#,
        ),
        (
            r#"struct.unpack('!4bi', 'za\0\0\0\1\0\0\0', 2)"#,
            r#"n:97 n:256 n:9"#,
        ),
        (
            r#"struct.unpack('!4xi3i3', 'abcdefghijklmnop')"#,
            r#"n:6710628 n:6908007 n:10"#,
        ),
        (
            r#"struct.unpack('<!2 b h b l', '\1\0\2\0\3\0\4\0\0\0\0\0\0\0')"#,
            r#"n:1 n:2 n:3 n:4 n:15"#,
        ),
        (r#"struct.unpack('b', 5.5, 2)"#, r#"n:46 n:3"#),
        (
            r#"select('#', struct.unpack(string.rep('b', 7997), string.rep('a', 8000)))"#,
            r#"n:7998"#,
        ),
        (r#"struct.size('!8bdbhbT')"#, r#"n:32"#),
        (r#"struct.size('!4bi3i3')"#, r#"n:9"#),
        (r#"struct.size('bhlLTfdiI')"#, r#"n:47"#),
        (r#"struct.size('Q9z')"#, r#"n:0"#),
        (r#"struct.size(' > < ')"#, r#"n:0"#),
        (
            r#"struct.pack('q')"#,
            r#"ERR:user_script:2: bad argument #1 to 'pack' (invalid format option 'q')"#,
        ),
        (
            r#"struct.pack('\200')"#,
            r#"ERR:user_script:2: bad argument #1 to 'pack' (invalid format option '\200')"#,
        ),
        (
            r#"struct.pack('=i', 1)"#,
            r#"ERR:user_script:2: bad argument #1 to 'pack' (invalid format option '=')"#,
        ),
        (
            r#"struct.pack('bx5', 1, 2)"#,
            r#"ERR:user_script:2: bad argument #1 to 'pack' (invalid format option '5')"#,
        ),
        (
            r#"struct.pack('b', 'x')"#,
            r#"ERR:user_script:2: bad argument #2 to 'pack' (number expected, got string)"#,
        ),
        (
            r#"struct.pack('bbb', 1, 2)"#,
            r#"ERR:user_script:2: bad argument #4 to 'pack' (number expected, got nil)"#,
        ),
        (
            r#"struct.pack('c')"#,
            r#"ERR:user_script:2: bad argument #2 to 'pack' (string expected, got nil)"#,
        ),
        (
            r#"struct.pack('bc5', 1, 'ab')"#,
            r#"ERR:user_script:2: bad argument #4 to 'pack' (string too short)"#,
        ),
        (
            r#"struct.pack('i33', 1)"#,
            r#"ERR:user_script:2: integral size 33 is larger than limit of 32"#,
        ),
        (
            r#"struct.pack('i99999999999', 1)"#,
            r#"ERR:user_script:2: integral size overflow"#,
        ),
        (
            r#"struct.pack('!3i', 1)"#,
            r#"ERR:user_script:2: alignment 3 is not a power of 2"#,
        ),
        (
            r#"struct.pack('!0i', 1)"#,
            r#"ERR:user_script:2: alignment 0 is not a power of 2"#,
        ),
        (
            r#"struct.pack(nil)"#,
            r#"ERR:user_script:2: bad argument #1 to 'pack' (string expected, got nil)"#,
        ),
        (
            r#"struct.unpack('b', '')"#,
            r#"ERR:user_script:2: bad argument #2 to 'unpack' (data string too short)"#,
        ),
        (
            r#"struct.unpack('!4bi', 'a')"#,
            r#"ERR:user_script:2: bad argument #2 to 'unpack' (data string too short)"#,
        ),
        (
            r#"struct.unpack('c2147483647', 'a')"#,
            r#"ERR:user_script:2: bad argument #2 to 'unpack' (data string too short)"#,
        ),
        (
            r#"struct.unpack('bc0', '\255abc')"#,
            r#"ERR:user_script:2: bad argument #2 to 'unpack' (data string too short)"#,
        ),
        (
            r#"struct.unpack('dc0', struct.pack('d', 0/0) .. 'abc')"#,
            r#"ERR:user_script:2: bad argument #2 to 'unpack' (data string too short)"#,
        ),
        (
            r#"struct.unpack('s', 'abc')"#,
            r#"ERR:user_script:2: unfinished string in data"#,
        ),
        (
            r#"struct.unpack('c0', 'a')"#,
            r#"ERR:user_script:2: format 'c0' needs a previous size"#,
        ),
        (
            r#"struct.unpack('c2c0', '0x2abc')"#,
            r#"ERR:user_script:2: format 'c0' needs a previous size"#,
        ),
        (
            r#"struct.unpack('b', 'a', 0)"#,
            r#"ERR:user_script:2: bad argument #3 to 'unpack' (offset must be 1 or greater)"#,
        ),
        (
            r#"struct.unpack('b', 'ab', -1)"#,
            r#"ERR:user_script:2: bad argument #2 to 'unpack' (data string too short)"#,
        ),
        (
            r#"struct.unpack('b', 'a', 'x')"#,
            r#"ERR:user_script:2: bad argument #3 to 'unpack' (number expected, got string)"#,
        ),
        (
            r#"struct.unpack('b')"#,
            r#"ERR:user_script:2: bad argument #2 to 'unpack' (string expected, got no value)"#,
        ),
        (
            r#"struct.unpack('b q', 'abc')"#,
            r#"ERR:user_script:2: bad argument #1 to 'unpack' (invalid format option 'q')"#,
        ),
        (
            r#"struct.unpack(string.rep('b', 7997) .. 'i33', string.rep('a', 8000))"#,
            r#"ERR:user_script:2: integral size 33 is larger than limit of 32"#,
        ),
        (
            r#"struct.unpack(string.rep('b', 7997) .. 'q', string.rep('a', 8000))"#,
            r#"ERR:user_script:2: stack overflow (too many results)"#,
        ),
        (
            r#"select('#', struct.unpack(string.rep('b', 7998), string.rep('a', 8000)))"#,
            r#"ERR:user_script:2: stack overflow (too many results)"#,
        ),
        (
            r#"struct.size('s')"#,
            r#"ERR:user_script:2: bad argument #1 to 'size' (option 's' has no fixed size)"#,
        ),
        (
            r#"struct.size('bc0')"#,
            r#"ERR:user_script:2: bad argument #1 to 'size' (option 'c0' has no fixed size)"#,
        ),
        (
            r#"struct.size('$')"#,
            r#"ERR:user_script:2: bad argument #1 to 'size' (invalid format option '$')"#,
        ),
        (
            r#"struct.size('i33')"#,
            r#"ERR:user_script:2: integral size 33 is larger than limit of 32"#,
        ),
        (
            r#"struct.size('!3')"#,
            r#"ERR:user_script:2: alignment 3 is not a power of 2"#,
        ),
        (
            r#"struct.size()"#,
            r#"ERR:user_script:2: bad argument #1 to 'size' (string expected, got no value)"#,
        ),
        (
            r#"struct:pack('b')"#,
            r#"ERR:user_script:2: calling 'pack' on bad self (string expected, got table)"#,
        ),
        (
            r#"select(2, pcall(struct.pack, 'q'))"#,
            r#"s:62616420617267756d656e7420233120746f20273f272028696e76616c696420666f726d6174206f7074696f6e2027712729"#,
        ),
    ];

    /// Evaluates `expr` (through [`PRELUDE`]) on `l`.
    unsafe fn eval(l: *mut lua::lua_State, expr: &str) -> String {
        let chunk = format!("{PRELUDE}return show(pcall(function() return {expr} end))");
        unsafe {
            let rc = lua::luaL_loadbuffer(
                l,
                chunk.as_ptr().cast(),
                chunk.len(),
                c"@user_script".as_ptr(),
            );
            assert_eq!(rc, 0, "{expr} does not compile");
            assert_eq!(lua::lua_pcall(l, 0, 1, 0), 0, "{expr} failed");
            let mut len = 0;
            let p = lua::lua_tolstring(l, -1, &mut len);
            let out = std::slice::from_raw_parts(p.cast::<u8>(), len).to_vec();
            lua::lua_pop(l, 1);
            String::from_utf8(out).expect("ASCII result")
        }
    }

    #[test]
    fn matches_redis() {
        unsafe {
            let l = lua::luaL_newstate();
            for (name, f) in [
                (c"", lua::luaopen_base as lua::lua_CFunction),
                (c"table", lua::luaopen_table),
                (c"string", lua::luaopen_string),
                (c"math", lua::luaopen_math),
                (c"struct", open),
            ] {
                lua::lua_pushcfunction(l, f);
                lua::lua_pushstring(l, name.as_ptr());
                lua::lua_call(l, 1, 0);
            }
            let failures: Vec<String> = CASES
                .iter()
                .filter_map(|&(expr, want)| {
                    let got = eval(l, expr);
                    (got != want).then(|| format!("{expr}\n  want {want}\n  got  {got}"))
                })
                .collect();
            lua::lua_close(l);
            assert!(failures.is_empty(), "{}", failures.join("\n"));
        }
    }
}
