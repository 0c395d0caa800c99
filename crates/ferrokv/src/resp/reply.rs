//! RESP2 / RESP3 reply encoder writing straight into a connection's output
//! buffer (redis.io/docs/reference/protocol-spec). The same call produces the
//! right frame for the connection's protocol version: `null()` is `$-1` in
//! RESP2 and `_` in RESP3, `map(n)` is `*2n` in RESP2 and `%n` in RESP3, and
//! so on, mirroring Redis's `addReply*` family (networking.c).

use crate::util::fmt_double_17g;

/// A connection's output buffer plus its protocol version.
#[derive(Debug, Default)]
pub struct Out {
    /// Encoded replies waiting to be written, in bytes.
    pub buf: Vec<u8>,
    /// True after HELLO 3.
    pub resp3: bool,
}

impl Out {
    /// An empty RESP2 buffer.
    pub fn new() -> Self {
        Out {
            buf: Vec::with_capacity(16 * 1024),
            resp3: false,
        }
    }

    #[inline]
    fn crlf(&mut self) {
        self.buf.extend_from_slice(b"\r\n");
    }

    #[inline]
    fn prefixed_num(&mut self, prefix: u8, n: i64) {
        let mut b = itoa::Buffer::new();
        self.buf.push(prefix);
        self.buf.extend_from_slice(b.format(n).as_bytes());
        self.crlf();
    }

    /// `+OK`.
    #[inline]
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// A simple string (`+text`). `s` must not contain CR or LF.
    #[inline]
    pub fn simple(&mut self, s: &str) {
        self.buf.push(b'+');
        self.buf.extend_from_slice(s.as_bytes());
        self.crlf();
    }

    /// An error line (`-CODE message`); CR/LF in `msg` are replaced by spaces,
    /// as Redis's `addReplyErrorLength` does.
    pub fn error(&mut self, msg: &str) {
        self.buf.push(b'-');
        let start = self.buf.len();
        self.buf.extend_from_slice(msg.as_bytes());
        for b in &mut self.buf[start..] {
            if *b == b'\r' || *b == b'\n' {
                *b = b' ';
            }
        }
        self.crlf();
    }

    /// [`Self::error`] for a message that is not UTF-8 (it echoes client
    /// bytes as they are, as Redis's `%s` does).
    pub fn error_bytes(&mut self, msg: &[u8]) {
        self.buf.push(b'-');
        self.buf.extend(msg.iter().map(|&b| match b {
            b'\r' | b'\n' => b' ',
            b => b,
        }));
        self.crlf();
    }

    /// An integer (`:n`).
    #[inline]
    pub fn int(&mut self, n: i64) {
        self.prefixed_num(b':', n);
    }

    /// A bulk string (`$len\r\nbytes\r\n`).
    #[inline]
    pub fn bulk(&mut self, s: &[u8]) {
        self.prefixed_num(b'$', s.len() as i64);
        self.buf.extend_from_slice(s);
        self.crlf();
    }

    /// An integer sent as a bulk string (GET of an int-encoded value).
    #[inline]
    pub fn bulk_int(&mut self, n: i64) {
        let mut b = itoa::Buffer::new();
        self.bulk(b.format(n).as_bytes());
    }

    /// The null bulk string: `$-1` (RESP2) or `_` (RESP3).
    #[inline]
    pub fn null(&mut self) {
        if self.resp3 {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"$-1\r\n");
        }
    }

    /// The null array: `*-1` (RESP2) or `_` (RESP3).
    #[inline]
    pub fn null_array(&mut self) {
        if self.resp3 {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"*-1\r\n");
        }
    }

    /// An array header of `n` elements.
    #[inline]
    pub fn array(&mut self, n: usize) {
        self.prefixed_num(b'*', n as i64);
    }

    /// A map header of `n` key/value pairs (`*2n` in RESP2).
    #[inline]
    pub fn map(&mut self, n: usize) {
        if self.resp3 {
            self.prefixed_num(b'%', n as i64);
        } else {
            self.prefixed_num(b'*', 2 * n as i64);
        }
    }

    /// A set header (`~n` in RESP3, an array in RESP2).
    #[inline]
    pub fn set(&mut self, n: usize) {
        if self.resp3 {
            self.prefixed_num(b'~', n as i64);
        } else {
            self.prefixed_num(b'*', n as i64);
        }
    }

    /// A push header (`>n` in RESP3, an array in RESP2).
    #[inline]
    pub fn push(&mut self, n: usize) {
        if self.resp3 {
            self.prefixed_num(b'>', n as i64);
        } else {
            self.prefixed_num(b'*', n as i64);
        }
    }

    /// A double: RESP3 `,` frame, RESP2 bulk string, both with `%.17g` as
    /// Redis 7.0's `addReplyDouble`.
    pub fn double(&mut self, v: f64) {
        let mut tmp = Vec::with_capacity(32);
        fmt_double_17g(v, &mut tmp);
        if self.resp3 {
            self.buf.push(b',');
            self.buf.extend_from_slice(&tmp);
            self.crlf();
        } else {
            self.bulk(&tmp);
        }
    }

    /// A boolean: RESP3 `#t`/`#f`, RESP2 `:1`/`:0`.
    pub fn boolean(&mut self, b: bool) {
        if self.resp3 {
            self.buf
                .extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" });
        } else {
            self.int(b as i64);
        }
    }

    /// A verbatim string (`=len\r\ntxt:...`) in RESP3, a bulk string in
    /// RESP2 (INFO, CLIENT LIST, LATENCY DOCTOR...).
    pub fn verbatim(&mut self, s: &[u8]) {
        self.verbatim_as(b"txt", s);
    }

    /// A verbatim string with format `fmt` (three bytes, e.g. `txt`, `mkd`):
    /// `=len\r\nfmt:...` in RESP3, a bulk string of `s` alone in RESP2
    /// (Redis's `addReplyVerbatim`).
    pub fn verbatim_as(&mut self, fmt: &[u8; 3], s: &[u8]) {
        if self.resp3 {
            self.prefixed_num(b'=', s.len() as i64 + 4);
            self.buf.extend_from_slice(fmt);
            self.buf.push(b':');
            self.buf.extend_from_slice(s);
            self.crlf();
        } else {
            self.bulk(s);
        }
    }

    /// A big number given as its decimal digits: RESP3 `(digits`, a bulk
    /// string in RESP2 (Redis's `addReplyBigNum`). `digits` must not hold
    /// CR or LF.
    pub fn bignum(&mut self, digits: &[u8]) {
        if self.resp3 {
            self.buf.push(b'(');
            self.buf.extend_from_slice(digits);
            self.crlf();
        } else {
            self.bulk(digits);
        }
    }

    /// An attribute header of `n` key/value pairs (`|n`), RESP3 only: the
    /// caller writes the pairs and then the reply the attribute is about.
    /// Redis's `addReplyAttributeLen` asserts RESP3; in RESP2 this writes
    /// nothing, and the caller must not write the pairs either.
    pub fn attribute(&mut self, n: usize) {
        if self.resp3 {
            self.prefixed_num(b'|', n as i64);
        }
    }

    /// An array of bulk strings.
    pub fn bulk_array<'a>(&mut self, items: impl ExactSizeIterator<Item = &'a [u8]>) {
        self.array(items.len());
        for i in items {
            self.bulk(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames() {
        let mut o = Out::new();
        o.null();
        o.map(2);
        o.double(1.5);
        o.boolean(true);
        assert_eq!(o.buf, b"$-1\r\n*4\r\n$3\r\n1.5\r\n:1\r\n");
        let mut o = Out::new();
        o.resp3 = true;
        o.null();
        o.map(2);
        o.double(1.5);
        o.boolean(true);
        o.error("ERR a\r\nb");
        assert_eq!(o.buf, b"_\r\n%2\r\n,1.5\r\n#t\r\n-ERR a  b\r\n");
    }

    #[test]
    fn bignum_attribute_verbatim() {
        let mut o = Out::new();
        o.bignum(b"123");
        o.attribute(1);
        o.verbatim_as(b"mkd", b"x");
        assert_eq!(o.buf, b"$3\r\n123\r\n$1\r\nx\r\n");
        let mut o = Out::new();
        o.resp3 = true;
        o.bignum(b"123");
        o.attribute(1);
        o.verbatim_as(b"mkd", b"x");
        assert_eq!(o.buf, b"(123\r\n|1\r\n=5\r\nmkd:x\r\n");
    }
}
