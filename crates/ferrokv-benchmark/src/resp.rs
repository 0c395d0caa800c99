//! RESP (Redis serialization protocol) encoding and reply handling.
//!
//! The hot path only needs to know where a reply ends, whether it is an
//! error, and (for `--verify`) what its top-level payload is, so
//! [`skip_reply`] walks a complete frame, nested aggregates included,
//! without allocating. [`parse_value`] builds a full [`Value`] tree and is
//! used only for setup commands such as `CLUSTER SLOTS`.

use std::ops::Range;

/// Appends `args` to `out` as a RESP multi-bulk command.
pub fn encode_command<A: AsRef<[u8]>>(out: &mut Vec<u8>, args: &[A]) {
    out.push(b'*');
    push_int(out, args.len() as i64);
    out.extend_from_slice(b"\r\n");
    for a in args {
        let a = a.as_ref();
        out.push(b'$');
        push_int(out, a.len() as i64);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

fn push_int(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(v.to_string().as_bytes());
}

/// What the first (top-level) element of a reply was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `+...`: the body is the status text.
    Simple,
    /// `-...` or `!...`: the body is the error text.
    Error,
    /// `:...`: the body is the digits.
    Integer,
    /// `$n` / `=n` with `n >= 0`: the body is the payload.
    Bulk,
    /// `$-1`, `*-1` or `_`: no body.
    Nil,
    /// Array, set, map or push: the body is empty.
    Aggregate,
    /// Any other RESP3 scalar (double, boolean, big number).
    Other,
}

/// One complete reply found at the start of a buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Total length of the reply in bytes.
    pub len: usize,
    /// Type of the top-level element.
    pub kind: Kind,
    /// Byte range of the top-level element's text or payload.
    pub body: Range<usize>,
}

impl Frame {
    /// True for error replies.
    pub fn is_error(&self) -> bool {
        self.kind == Kind::Error
    }
}

/// A malformed reply: the connection cannot be trusted any further.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "protocol error: {}", self.0)
    }
}

impl std::error::Error for ProtocolError {}

fn parse_len(line: &[u8]) -> Result<i64, ProtocolError> {
    let (neg, digits) = match line.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, line),
    };
    if digits.is_empty() || digits.len() > 18 {
        return Err(ProtocolError(format!(
            "bad length {:?}",
            String::from_utf8_lossy(line)
        )));
    }
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return Err(ProtocolError(format!(
                "bad length {:?}",
                String::from_utf8_lossy(line)
            )));
        }
        v = v * 10 + (c - b'0') as i64;
    }
    Ok(if neg { -v } else { v })
}

/// Finds the `\r\n` ending the line that starts at `from`; returns the index
/// of the `\r`.
#[inline]
fn line_end(buf: &[u8], from: usize) -> Result<Option<usize>, ProtocolError> {
    match buf[from..].iter().position(|&c| c == b'\n') {
        None => Ok(None),
        Some(i) => {
            let nl = from + i;
            if nl == from || buf[nl - 1] != b'\r' {
                return Err(ProtocolError("line not terminated by CRLF".into()));
            }
            Ok(Some(nl - 1))
        }
    }
}

/// Skips one complete reply at the start of `buf` without allocating.
///
/// Returns `Ok(None)` when `buf` holds only part of a reply (read more and
/// call again), `Ok(Some(frame))` when a whole reply is there.
pub fn skip_reply(buf: &[u8]) -> Result<Option<Frame>, ProtocolError> {
    let mut pos = 0usize;
    let mut pending: u64 = 1;
    let mut top: Option<(Kind, Range<usize>)> = None;
    while pending > 0 {
        if pos >= buf.len() {
            return Ok(None);
        }
        let t = buf[pos];
        let Some(cr) = line_end(buf, pos + 1)? else {
            return Ok(None);
        };
        let line = pos + 1..cr;
        let next = cr + 2;
        pending -= 1;
        let (kind, body) = match t {
            b'+' => (Kind::Simple, line),
            b'-' => (Kind::Error, line),
            b':' => (Kind::Integer, line),
            b'_' => (Kind::Nil, next..next),
            b'#' | b',' | b'(' => (Kind::Other, line),
            b'$' | b'!' | b'=' => {
                let n = parse_len(&buf[line])?;
                if n < 0 {
                    (Kind::Nil, next..next)
                } else {
                    let end = next + n as usize;
                    if buf.len() < end + 2 {
                        return Ok(None);
                    }
                    if &buf[end..end + 2] != b"\r\n" {
                        return Err(ProtocolError("bulk not terminated by CRLF".into()));
                    }
                    let kind = if t == b'!' { Kind::Error } else { Kind::Bulk };
                    pos = end + 2;
                    if top.is_none() {
                        top = Some((kind, next..end));
                    }
                    continue;
                }
            }
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let n = parse_len(&buf[line])?;
                if n > 0 {
                    let n = n as u64;
                    pending += match t {
                        b'%' => 2 * n,
                        b'|' => 2 * n + 1,
                        _ => n,
                    };
                } else if t == b'|' {
                    pending += 1;
                }
                if n < 0 {
                    (Kind::Nil, next..next)
                } else {
                    (Kind::Aggregate, next..next)
                }
            }
            other => {
                return Err(ProtocolError(format!(
                    "unexpected reply type byte {:?}",
                    other as char
                )))
            }
        };
        pos = next;
        if top.is_none() {
            top = Some((kind, body));
        }
    }
    let (kind, body) = top.expect("at least one element");
    Ok(Some(Frame {
        len: pos,
        kind,
        body,
    }))
}

/// A fully parsed RESP value (setup paths only).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `+...`
    Simple(String),
    /// `-...`
    Error(String),
    /// `:...`
    Int(i64),
    /// `$...`
    Bulk(Vec<u8>),
    /// Null bulk or array.
    Nil,
    /// Any aggregate.
    Array(Vec<Value>),
}

/// Parses one complete reply from `buf` into a [`Value`]; `Ok(None)` when
/// more bytes are needed. Returns the value and its length.
pub fn parse_value(buf: &[u8]) -> Result<Option<(Value, usize)>, ProtocolError> {
    let Some(frame) = skip_reply(buf)? else {
        return Ok(None);
    };
    let mut pos = 0;
    let v = parse_at(buf, &mut pos)?;
    debug_assert_eq!(pos, frame.len);
    Ok(Some((v, frame.len)))
}

fn parse_at(buf: &[u8], pos: &mut usize) -> Result<Value, ProtocolError> {
    let t = buf[*pos];
    let cr = line_end(buf, *pos + 1)?.ok_or_else(|| ProtocolError("truncated".into()))?;
    let line = &buf[*pos + 1..cr];
    *pos = cr + 2;
    let text = || String::from_utf8_lossy(line).into_owned();
    Ok(match t {
        b'+' => Value::Simple(text()),
        b'-' => Value::Error(text()),
        b':' => Value::Int(parse_len(line)?),
        b'_' => Value::Nil,
        b'#' | b',' | b'(' => Value::Simple(text()),
        b'$' | b'!' | b'=' => {
            let n = parse_len(line)?;
            if n < 0 {
                Value::Nil
            } else {
                let start = *pos;
                *pos += n as usize + 2;
                let data = buf[start..start + n as usize].to_vec();
                if t == b'!' {
                    Value::Error(String::from_utf8_lossy(&data).into_owned())
                } else {
                    Value::Bulk(data)
                }
            }
        }
        _ => {
            let n = parse_len(line)?;
            if n < 0 {
                Value::Nil
            } else {
                let count = if t == b'%' { 2 * n } else { n };
                let mut items = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    items.push(parse_at(buf, pos)?);
                }
                Value::Array(items)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLES: &[&[u8]] = &[
        b"+OK\r\n",
        b"-ERR unknown command\r\n",
        b":12345\r\n",
        b"$5\r\nhello\r\n",
        b"$0\r\n\r\n",
        b"$-1\r\n",
        b"*-1\r\n",
        b"*0\r\n",
        b"*3\r\n$3\r\nfoo\r\n:1\r\n*2\r\n+a\r\n$-1\r\n",
        b"%2\r\n+k\r\n:1\r\n+k2\r\n*1\r\n$1\r\nx\r\n",
        b"_\r\n",
        b"#t\r\n",
        b",1.5\r\n",
        b"$6\r\nab\r\ncd\r\n",
        b"|1\r\n+ttl\r\n:3\r\n$2\r\nhi\r\n",
    ];

    #[test]
    fn whole_frames_are_skipped() {
        for s in SAMPLES {
            let f = skip_reply(s).unwrap().unwrap();
            assert_eq!(f.len, s.len(), "{:?}", String::from_utf8_lossy(s));
        }
        let f = skip_reply(b"$5\r\nhello\r\n+OK\r\n").unwrap().unwrap();
        assert_eq!((f.len, f.kind), (11, Kind::Bulk));
        assert_eq!(&b"$5\r\nhello\r\n"[f.body], b"hello");
        let f = skip_reply(b"-WRONGTYPE x\r\n").unwrap().unwrap();
        assert!(f.is_error());
        assert_eq!(&b"-WRONGTYPE x\r\n"[f.body], b"WRONGTYPE x");
    }

    #[test]
    fn split_at_every_byte() {
        let mut all = Vec::new();
        for s in SAMPLES {
            all.extend_from_slice(s);
        }
        for s in SAMPLES {
            for cut in 0..s.len() {
                assert_eq!(skip_reply(&s[..cut]).unwrap(), None, "{s:?} cut {cut}");
            }
        }
        // A stream cut anywhere yields exactly the frames wholly before the cut.
        for cut in 0..=all.len() {
            let mut pos = 0;
            let mut n = 0;
            while let Some(f) = skip_reply(&all[pos..cut]).unwrap() {
                pos += f.len;
                n += 1;
            }
            let mut expect = 0;
            let mut acc = 0;
            for s in SAMPLES {
                if acc + s.len() <= cut {
                    acc += s.len();
                    expect += 1;
                } else {
                    break;
                }
            }
            assert_eq!((n, pos), (expect, acc), "cut {cut}");
        }
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(skip_reply(b"?x\r\n").is_err());
        assert!(skip_reply(b"$3\r\nabcde\r\n").is_err());
        assert!(skip_reply(b"+OK\n").is_err());
        assert!(skip_reply(b"*x\r\n").is_err());
    }

    #[test]
    fn encode_and_parse_value() {
        let mut out = Vec::new();
        encode_command(&mut out, &["SET", "k", "v"]);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
        let (v, n) = parse_value(b"*2\r\n:1\r\n*1\r\n$1\r\nx\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(n, 19);
        assert_eq!(
            v,
            Value::Array(vec![
                Value::Int(1),
                Value::Array(vec![Value::Bulk(b"x".to_vec())])
            ])
        );
    }
}
