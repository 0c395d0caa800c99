//! INCRBYFLOAT arithmetic in C `long double`, through the shim in
//! `csrc/longdouble.c` (compiled by build.rs with the `cc` crate).
//!
//! Redis parses both operands with `strtold`, adds them as `long double`
//! (80-bit extended precision on x86-64) and prints the sum with `"%.17Lf"`,
//! trailing zeros removed (`ld2string(..., LD_STR_HUMAN)`). Rust has no
//! `long double`; an f64 sum prints differently (0.1 + 0.2 would be
//! 0.30000000000000004 instead of Redis's "0.3"), so the three steps are done
//! by the C library, which is what the exact match requires. HINCRBYFLOAT
//! follows the same rules and can reuse [`incr_by_float`].

use std::os::raw::{c_char, c_long};

/// Longest operand text accepted and longest result produced, bytes
/// (Redis's MAX_LONG_DOUBLE_CHARS).
pub const MAX_LONG_DOUBLE_CHARS: usize = 5 * 1024;

extern "C" {
    fn ferrokv_incrbyfloat(
        value: *const c_char,
        vlen: usize,
        incr: *const c_char,
        ilen: usize,
        out: *mut c_char,
        cap: usize,
    ) -> c_long;
}

/// Why [`incr_by_float`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatError {
    /// The stored value is not a valid float ("ERR value is not a valid float").
    BadValue,
    /// The increment is not a valid float (same error text).
    BadIncrement,
    /// The sum is NaN or infinite ("ERR increment would produce NaN or Infinity").
    NanOrInf,
}

/// `value + incr` as INCRBYFLOAT computes and prints it.
///
/// Both operands are decimal/hex/`inf` texts as `strtold` reads them; each is
/// refused when empty, at least [`MAX_LONG_DOUBLE_CHARS`] long, starting with
/// whitespace, not consumed entirely (trailing space, embedded NUL), NaN, or
/// out of the `long double` range. The result is `"%.17Lf"` without trailing
/// zeros or dot, `-0` printed as `0`.
pub fn incr_by_float(value: &[u8], incr: &[u8]) -> Result<Vec<u8>, FloatError> {
    // The result is formatted into a stack buffer and copied out at its
    // exact length, so the stored value carries no spare capacity.
    let mut buf = [0u8; MAX_LONG_DOUBLE_CHARS];
    // SAFETY: pointers and lengths describe live slices; the shim copies the
    // operands into its own NUL-terminated buffers and writes at most
    // `buf.len()` bytes into `buf`.
    let n = unsafe {
        ferrokv_incrbyfloat(
            value.as_ptr() as *const c_char,
            value.len(),
            incr.as_ptr() as *const c_char,
            incr.len(),
            buf.as_mut_ptr() as *mut c_char,
            buf.len(),
        )
    };
    match n {
        -1 => Err(FloatError::BadValue),
        -2 => Err(FloatError::BadIncrement),
        n if n < 0 => Err(FloatError::NanOrInf),
        n => Ok(buf[..(n as usize).min(MAX_LONG_DOUBLE_CHARS)].to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(a: &str, b: &str) -> Result<String, FloatError> {
        incr_by_float(a.as_bytes(), b.as_bytes()).map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn sums_like_redis() {
        assert_eq!(add("0.1", "0.2").unwrap(), "0.3");
        assert_eq!(add("10.50", "0.1").unwrap(), "10.6");
        assert_eq!(add("5.0e3", "2.0e2").unwrap(), "5200");
        assert_eq!(add("0", "-0").unwrap(), "0");
        assert_eq!(add("1", "-1").unwrap(), "0");
        assert_eq!(add("0", "0x10").unwrap(), "16");
        assert_eq!(add("3", "1.5").unwrap(), "4.5");
        assert_eq!(incr_by_float(b"1", b"1").unwrap().capacity(), 1);
    }

    #[test]
    fn refuses_like_redis() {
        assert_eq!(add(" 1", "1"), Err(FloatError::BadValue));
        assert_eq!(add("1 ", "1"), Err(FloatError::BadValue));
        assert_eq!(add("", "1"), Err(FloatError::BadValue));
        assert_eq!(add("1", "nan"), Err(FloatError::BadIncrement));
        assert_eq!(add("1", "1e5000"), Err(FloatError::BadIncrement));
        assert_eq!(add("1", "1e-5000"), Err(FloatError::BadIncrement));
        assert_eq!(add("1", "1\u{0}"), Err(FloatError::BadIncrement));
        assert_eq!(add("1", "inf"), Err(FloatError::NanOrInf));
        assert_eq!(add("-inf", "inf"), Err(FloatError::NanOrInf));
        let long = "1".repeat(MAX_LONG_DOUBLE_CHARS);
        assert_eq!(add("0", &long), Err(FloatError::BadIncrement));
        assert_eq!(add("1e4000", "1").unwrap().len(), 4001 - 1);
    }
}
