//! Small shared helpers: Redis's number parsing (`string2ll`, `string2ld`
//! rules), glob matching (`stringmatchlen`), clocks and a fast PRNG.

use std::cell::Cell;

/// Wall-clock time in milliseconds since the Unix epoch.
#[inline]
pub fn now_ms() -> u64 {
    now_us() / 1000
}

/// Wall-clock time in microseconds since the Unix epoch.
#[inline]
pub fn now_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_REALTIME
    // is always available (vDSO, no system call).
    unsafe {
        libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

/// Parses a signed 64-bit integer exactly as Redis's `string2ll` (util.c):
/// optional leading '-', no '+', no spaces, no leading zeros (except "0"),
/// at most 20 characters, no overflow. Returns `None` otherwise.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s.len() == 1 && s[0] == b'0' {
        return Some(0);
    }
    let (neg, digits) = if s[0] == b'-' {
        (true, &s[1..])
    } else {
        (false, s)
    };
    if digits.is_empty() || digits[0] < b'1' || digits[0] > b'9' {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    if neg {
        if v > (i64::MAX as u64) + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else if v > i64::MAX as u64 {
        None
    } else {
        Some(v as i64)
    }
}

/// Parses a non-negative length like Redis's protocol parser does (string2ll
/// then a sign check). Used by the RESP request parser.
#[inline]
pub fn parse_len(s: &[u8]) -> Option<i64> {
    parse_i64(s)
}

/// Parses a double as Redis's `string2d` / `getDoubleFromObject`: the whole
/// string must be consumed, no leading/trailing space, NaN refused;
/// "inf", "+inf", "-inf" (any case) and "infinity" accepted.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s.len() > 5120 {
        return None;
    }
    if s[0].is_ascii_whitespace() || s[s.len() - 1].is_ascii_whitespace() {
        return None;
    }
    let st = std::str::from_utf8(s).ok()?;
    // strtod accepts hex floats and "nan"; Rust's parser differs in a few
    // spellings, so normalise the ones Redis accepts.
    let lower = st.to_ascii_lowercase();
    let v = match lower.as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ => {
            if lower.contains("nan") || lower.contains("inf") {
                return None;
            }
            if lower.starts_with("0x") || lower.starts_with("-0x") || lower.starts_with("+0x") {
                return parse_hex_float(&lower);
            }
            st.parse::<f64>().ok()?
        }
    };
    if v.is_nan() {
        None
    } else {
        Some(v)
    }
}

fn parse_hex_float(s: &str) -> Option<f64> {
    let (neg, rest) = match s.as_bytes()[0] {
        b'-' => (true, &s[3..]),
        b'+' => (false, &s[3..]),
        _ => (false, &s[2..]),
    };
    let (mant, exp) = match rest.find('p') {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i32>().ok()?),
        None => (rest, 0),
    };
    let (int_part, frac_part) = match mant.find('.') {
        Some(i) => (&mant[..i], &mant[i + 1..]),
        None => (mant, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int_part.chars() {
        v = v * 16.0 + c.to_digit(16)? as f64;
    }
    let mut scale = 1.0 / 16.0;
    for c in frac_part.chars() {
        v += c.to_digit(16)? as f64 * scale;
        scale /= 16.0;
    }
    let v = v * 2f64.powi(exp);
    Some(if neg { -v } else { v })
}

/// Formats a double as C's `printf("%.17g")`, as Redis 7.0's `addReplyDouble`
/// does (RESP2 bulk string and RESP3 double alike). Infinities are "inf" and
/// "-inf".
pub fn fmt_double_17g(v: f64, out: &mut Vec<u8>) {
    if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"inf" } else { b"-inf" });
        return;
    }
    let mut buf = [0u8; 64];
    // SAFETY: buf is 64 bytes, the format takes one double; snprintf writes
    // at most buf.len() bytes including the terminating NUL.
    let n = unsafe {
        libc::snprintf(
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
            c"%.17g".as_ptr(),
            v,
        )
    };
    let n = (n.max(0) as usize).min(buf.len() - 1);
    out.extend_from_slice(&buf[..n]);
}

/// Formats a double the way Redis's `ld2string(..., LD_STR_HUMAN)` prints the
/// result of INCRBYFLOAT: fixed notation with 17 decimals, trailing zeros
/// (and a trailing dot) removed, "-0" normalised to "0".
pub fn fmt_double_human(v: f64) -> Vec<u8> {
    let mut buf = [0u8; 512];
    // SAFETY: see fmt_double_17g; %.17f of a finite double fits in 512 bytes
    // for |v| < 1e300, and snprintf truncates safely otherwise.
    let n = unsafe {
        libc::snprintf(
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
            c"%.17f".as_ptr(),
            v,
        )
    };
    let n = (n.max(0) as usize).min(buf.len() - 1);
    let mut s = buf[..n].to_vec();
    if s.contains(&b'.') {
        while s.last() == Some(&b'0') {
            s.pop();
        }
        if s.last() == Some(&b'.') {
            s.pop();
        }
    }
    if s == b"-0" {
        s = b"0".to_vec();
    }
    s
}

/// Glob-style matching with Redis's `stringmatchlen` rules (util.c,
/// 7.0.15), ported step by step: `*`, `?`, `[...]` classes with ranges
/// (bounds compared as C's signed `char`), `^` negation and `\` escapes; an
/// unterminated class still applies; `*` never matches an empty rest of
/// the string inside the loop. As in Redis, once the rest of the pattern
/// after a `*` has failed at every position, earlier stars do not retry
/// longer matches (`skipLongerMatches`), which keeps patterns such as
/// `*a*a*a*...*b` polynomial instead of exponential. `nocase` folds ASCII
/// case. Recursion (one level per non-consecutive `*`) stops at 1000
/// levels with "no match", so a huge pattern cannot overflow the stack.
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    let mut skip_longer = false;
    glob_inner(pattern, string, nocase, &mut skip_longer, 0)
}

fn glob_inner(
    mut p: &[u8],
    mut s: &[u8],
    nocase: bool,
    skip_longer: &mut bool,
    depth: usize,
) -> bool {
    if depth > 1000 {
        return false;
    }
    let lower = |c: u8| if nocase { c.to_ascii_lowercase() } else { c };
    while !p.is_empty() && !s.is_empty() {
        match p[0] {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                while !s.is_empty() {
                    if glob_inner(&p[1..], s, nocase, skip_longer, depth + 1) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    s = &s[1..];
                }
                *skip_longer = true;
                return false;
            }
            b'?' => s = &s[1..],
            b'[' => {
                p = &p[1..];
                let not = p.first() == Some(&b'^');
                if not {
                    p = &p[1..];
                }
                let mut matched = false;
                // `p` keeps at least one byte after the class so that the
                // common `p = &p[1..]` below can step over it (Redis steps
                // back one byte for an unterminated class).
                let mut at_end = false;
                loop {
                    if p.is_empty() {
                        at_end = true;
                        break;
                    }
                    if p[0] == b'\\' && p.len() >= 2 {
                        p = &p[1..];
                        if p[0] == s[0] {
                            matched = true;
                        }
                    } else if p[0] == b']' {
                        break;
                    } else if p.len() >= 3 && p[1] == b'-' {
                        // C's `int start = pattern[0]` sign-extends.
                        let (mut start, mut end) = (p[0] as i8 as i32, p[2] as i8 as i32);
                        let mut c = s[0] as i8 as i32;
                        if start > end {
                            std::mem::swap(&mut start, &mut end);
                        }
                        if nocase {
                            let lo = |v: i32| {
                                if (b'A' as i32..=b'Z' as i32).contains(&v) {
                                    v + 32
                                } else {
                                    v
                                }
                            };
                            start = lo(start);
                            end = lo(end);
                            c = lo(c);
                        }
                        p = &p[2..];
                        if c >= start && c <= end {
                            matched = true;
                        }
                    } else if lower(p[0]) == lower(s[0]) {
                        matched = true;
                    }
                    p = &p[1..];
                }
                if not {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                s = &s[1..];
                if at_end {
                    // Unterminated class: the pattern is used up.
                    return s.is_empty();
                }
            }
            c => {
                let c = if c == b'\\' && p.len() >= 2 {
                    p = &p[1..];
                    p[0]
                } else {
                    c
                };
                if lower(c) != lower(s[0]) {
                    return false;
                }
                s = &s[1..];
            }
        }
        p = &p[1..];
        if s.is_empty() {
            while p.first() == Some(&b'*') {
                p = &p[1..];
            }
            break;
        }
    }
    p.is_empty() && s.is_empty()
}

thread_local! {
    static RNG: Cell<u64> = Cell::new({
        let t = now_us();
        let addr = &t as *const u64 as u64;
        (t ^ addr.rotate_left(32)) | 1
    });
}

/// A fast thread-local pseudo-random 64-bit number (wyrand). Not for
/// cryptography; used for sampling keys (RANDOMKEY, active expiry).
#[inline]
pub fn rand_u64() -> u64 {
    RNG.with(|c| {
        let s = c.get().wrapping_add(0xa076_1d64_78bd_642f);
        c.set(s);
        let t = (s as u128).wrapping_mul((s ^ 0xe703_7ed1_a0b4_28db) as u128);
        ((t >> 64) as u64) ^ (t as u64)
    })
}

/// One step of Marsaglia's xorshift64 (shifts 13, 7, 17): the state after
/// `x`, never 0 when `x` is not. Deterministic: seeded test data and cheap
/// victim sampling (tracking's key-table eviction).
#[inline]
pub fn xorshift64(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// Lower-cases ASCII `src` into `buf`, returning the filled prefix, or `None`
/// when `src` is longer than `buf` (used for allocation-free command lookup).
#[inline]
pub fn lower_into<'a>(src: &[u8], buf: &'a mut [u8]) -> Option<&'a [u8]> {
    if src.len() > buf.len() {
        return None;
    }
    for (d, s) in buf.iter_mut().zip(src) {
        *d = s.to_ascii_lowercase();
    }
    Some(&buf[..src.len()])
}

/// Compares two byte strings in time that depends only on their lengths,
/// not on where they differ (password checks).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().max(b.len());
    let mut diff = (a.len() ^ b.len()) as u64;
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= (x ^ y) as u64;
    }
    std::hint::black_box(diff) == 0
}

/// Appends `s` quoted and escaped as Redis's `sdscatrepr`.
pub fn repr(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in s {
        match c {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            c if c.is_ascii_graphic() || c == b' ' => out.push(c),
            c => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

/// Binds one TCP address as a non-blocking `std` listener (`-` prefix =
/// optional, as Redis's bind syntax; `*` is every IPv4 address and `::*`
/// every IPv6 one, as in Redis 7.0's default `bind * -::*`). IPv6
/// listeners are IPV6_V6ONLY, as Redis's `anetV6Only`, so `*` and `::*`
/// can share a port. Returns None when an optional address is
/// unavailable. Errors as Redis's listenToPort: "Could not create server
/// TCP listening socket <host>:<port>: bind: <reason>". Used for the
/// client ports (`net::listener::bind_tcp`) and the cluster bus.
pub fn bind_tcp_std(
    addr: &str,
    port: u16,
    backlog: u32,
) -> std::io::Result<Option<std::net::TcpListener>> {
    let (optional, host) = match addr.strip_prefix('-') {
        Some(h) => (true, h),
        None => (false, addr),
    };
    let host = match host {
        "*" => "0.0.0.0",
        "::*" => "::",
        h => h,
    };
    let ip: std::net::IpAddr = match host.parse() {
        Ok(ip) => ip,
        Err(_) if optional => return Ok(None),
        Err(e) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("invalid bind address '{host}': {e}"),
            ))
        }
    };
    let sa = std::net::SocketAddr::new(ip, port);
    let attempt = || -> std::io::Result<std::net::TcpListener> {
        use socket2::{Domain, Socket, Type};
        let domain = if ip.is_ipv4() {
            Domain::IPV4
        } else {
            Domain::IPV6
        };
        let sock = Socket::new(domain, Type::STREAM, None)?;
        sock.set_reuse_address(true)?;
        if ip.is_ipv6() {
            sock.set_only_v6(true)?;
        }
        sock.bind(&sa.into())?;
        sock.listen(backlog.min(i32::MAX as u32) as i32)?;
        sock.set_nonblocking(true)?;
        Ok(sock.into())
    };
    match attempt() {
        Ok(l) => Ok(Some(l)),
        Err(_) if optional => Ok(None),
        Err(e) => Err(std::io::Error::new(
            e.kind(),
            format!(
                "Could not create server TCP listening socket {host}:{port}: bind: {}",
                os_reason(&e)
            ),
        )),
    }
}

/// An I/O error's text without Rust's " (os error N)" suffix, as
/// `strerror` gives it ("Address already in use").
pub fn os_reason(e: &std::io::Error) -> String {
    let t = e.to_string();
    match t.find(" (os error ") {
        Some(i) => t[..i].to_string(),
        None => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string2ll_rules() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"01"), None);
        assert_eq!(parse_i64(b"+1"), None);
        assert_eq!(parse_i64(b" 1"), None);
        assert_eq!(parse_i64(b"-0"), None);
        assert_eq!(parse_i64(b""), None);
        assert_eq!(parse_i64(b"-"), None);
    }

    #[test]
    fn glob() {
        assert!(glob_match(b"*", b"anything", false));
        assert!(glob_match(b"h?llo", b"hello", false));
        assert!(glob_match(b"h[ae]llo", b"hallo", false));
        assert!(!glob_match(b"h[^e]llo", b"hello", false));
        assert!(glob_match(b"h[a-b]llo", b"hbllo", false));
        assert!(glob_match(b"h\\*llo", b"h*llo", false));
        assert!(!glob_match(b"h\\*llo", b"hello", false));
        assert!(glob_match(b"foo*bar", b"foobazbar", false));
        assert!(!glob_match(b"foo*bar", b"foobazba", false));
        assert!(glob_match(b"FOO", b"foo", true));
        assert!(glob_match(b"a*", b"a", false));
        assert!(!glob_match(b"a?", b"a", false));
    }

    #[test]
    fn glob_redis_edge_cases() {
        // Answers of redis-server 7.0.15 (KEYS / stringmatchlen).
        // "[^a-]": the range runs from 'a' to ']' and eats the bracket.
        assert!(glob_match(b"[^a-]", b"z", false));
        assert!(!glob_match(b"[^a-]", b"a", false));
        assert!(!glob_match(b"[^a-]", b"zz", false));
        // Unterminated classes still apply.
        assert!(glob_match(b"[a", b"a", false));
        assert!(!glob_match(b"[a", b"b", false));
        assert!(!glob_match(b"[a", b"ab", false));
        // '*' does not match an empty string on its own (KEYS special-cases "*").
        assert!(!glob_match(b"**", b"", false));
        assert!(glob_match(b"a**", b"a", false));
        // Ranges compare signed chars: [a-\xff] is -1..97.
        assert!(glob_match(b"[a-\xff]", b"\xff", false));
        assert!(!glob_match(b"[a-\xff]", b"\xfe", false));
        assert!(glob_match(b"[a-\xff]", b"A", false));
        // Many stars before a failing tail: polynomial, not exponential.
        let s = vec![b'a'; 300];
        let mut pat = b"*a".repeat(40);
        pat.extend_from_slice(b"*b");
        let t = std::time::Instant::now();
        assert!(!glob_match(&pat, &s, false));
        assert!(glob_match(&b"*a".repeat(40), &s, false));
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        // Deep nesting is refused rather than overflowing the stack.
        let deep = b"*a".repeat(100_000);
        assert!(!glob_match(&deep, &vec![b'a'; 200_000], false));
    }

    #[test]
    fn doubles() {
        let mut v = Vec::new();
        fmt_double_17g(1.5, &mut v);
        assert_eq!(v, b"1.5");
        v.clear();
        fmt_double_17g(0.1, &mut v);
        assert_eq!(v, b"0.10000000000000001");
        assert_eq!(fmt_double_human(10.5), b"10.5");
        assert_eq!(fmt_double_human(3.0), b"3");
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b" 1"), None);
    }
}
