//! The memcached text protocol: request encoders and an allocation-free
//! reply skipper with the same shape as [`crate::resp::skip_reply`].

use crate::resp::ProtocolError;
use std::ops::Range;

/// Appends `set <key> 0 0 <len>\r\n<value>\r\n`.
pub fn encode_set(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    out.extend_from_slice(b"set ");
    out.extend_from_slice(key);
    out.extend_from_slice(format!(" 0 0 {}\r\n", value.len()).as_bytes());
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Appends `get <key>\r\n`.
pub fn encode_get(out: &mut Vec<u8>, key: &[u8]) {
    out.extend_from_slice(b"get ");
    out.extend_from_slice(key);
    out.extend_from_slice(b"\r\n");
}

/// Appends `delete <key>\r\n`.
pub fn encode_delete(out: &mut Vec<u8>, key: &[u8]) {
    out.extend_from_slice(b"delete ");
    out.extend_from_slice(key);
    out.extend_from_slice(b"\r\n");
}

/// The kind of a memcached reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McKind {
    /// `STORED`
    Stored,
    /// `DELETED`
    Deleted,
    /// `NOT_FOUND`
    NotFound,
    /// `NOT_STORED` / `EXISTS` / `TOUCHED` / other single-line status.
    Status,
    /// `VALUE ... END`: body is the first value's data.
    Value,
    /// `END` alone: a get miss.
    Miss,
    /// `ERROR`, `CLIENT_ERROR ...`, `SERVER_ERROR ...`: body is the line.
    Error,
}

/// One complete memcached reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McFrame {
    /// Total length in bytes.
    pub len: usize,
    /// What the reply was.
    pub kind: McKind,
    /// Data of the first value (for [`McKind::Value`]) or the error line.
    pub body: Range<usize>,
}

fn find_crlf(buf: &[u8], from: usize) -> Result<Option<usize>, ProtocolError> {
    match buf[from..].iter().position(|&c| c == b'\n') {
        None => Ok(None),
        Some(i) => {
            let nl = from + i;
            if nl == from || buf[nl - 1] != b'\r' {
                return Err(ProtocolError(
                    "memcached line not terminated by CRLF".into(),
                ));
            }
            Ok(Some(nl - 1))
        }
    }
}

/// Skips one complete reply at the start of `buf`; `Ok(None)` when more
/// bytes are needed.
pub fn skip_reply(buf: &[u8]) -> Result<Option<McFrame>, ProtocolError> {
    let mut pos = 0;
    let mut first_value: Option<Range<usize>> = None;
    loop {
        let Some(cr) = find_crlf(buf, pos)? else {
            return Ok(None);
        };
        let line = &buf[pos..cr];
        let next = cr + 2;
        if let Some(rest) = line.strip_prefix(b"VALUE ") {
            // VALUE <key> <flags> <bytes> [<cas>]
            let bytes = rest
                .split(|&c| c == b' ')
                .nth(2)
                .and_then(|b| std::str::from_utf8(b).ok())
                .and_then(|b| b.parse::<usize>().ok())
                .ok_or_else(|| ProtocolError("bad VALUE line".into()))?;
            let end = next + bytes;
            if buf.len() < end + 2 {
                return Ok(None);
            }
            if &buf[end..end + 2] != b"\r\n" {
                return Err(ProtocolError(
                    "memcached data not terminated by CRLF".into(),
                ));
            }
            if first_value.is_none() {
                first_value = Some(next..end);
            }
            pos = end + 2;
            continue;
        }
        let (kind, body) = match line {
            b"END" => match first_value.take() {
                Some(r) => (McKind::Value, r),
                None => (McKind::Miss, next..next),
            },
            _ if first_value.is_some() => {
                return Err(ProtocolError("VALUE not followed by END".into()))
            }
            b"STORED" => (McKind::Stored, next..next),
            b"DELETED" => (McKind::Deleted, next..next),
            b"NOT_FOUND" => (McKind::NotFound, next..next),
            b"ERROR" => (McKind::Error, pos..cr),
            l if l.starts_with(b"CLIENT_ERROR") || l.starts_with(b"SERVER_ERROR") => {
                (McKind::Error, pos..cr)
            }
            _ => (McKind::Status, pos..cr),
        };
        return Ok(Some(McFrame {
            len: next,
            kind,
            body,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes() {
        let mut b = Vec::new();
        encode_set(&mut b, b"k", b"abc");
        encode_get(&mut b, b"k");
        encode_delete(&mut b, b"k");
        assert_eq!(b, b"set k 0 0 3\r\nabc\r\nget k\r\ndelete k\r\n");
    }

    #[test]
    fn skips_every_reply_split_anywhere() {
        let samples: &[(&[u8], McKind)] = &[
            (b"STORED\r\n", McKind::Stored),
            (b"VALUE k 0 5\r\nhe\r\no\r\nEND\r\n", McKind::Value),
            (b"END\r\n", McKind::Miss),
            (b"DELETED\r\n", McKind::Deleted),
            (b"NOT_FOUND\r\n", McKind::NotFound),
            (b"SERVER_ERROR out of memory\r\n", McKind::Error),
            (b"ERROR\r\n", McKind::Error),
            (
                b"VALUE a 0 1 7\r\nx\r\nVALUE b 0 0\r\n\r\nEND\r\n",
                McKind::Value,
            ),
        ];
        for (s, kind) in samples {
            let f = skip_reply(s).unwrap().unwrap();
            assert_eq!((f.len, f.kind), (s.len(), *kind));
            for cut in 0..s.len() {
                assert_eq!(skip_reply(&s[..cut]).unwrap(), None);
            }
        }
        let s = b"VALUE k 0 5\r\nhe\r\no\r\nEND\r\n";
        let f = skip_reply(s).unwrap().unwrap();
        assert_eq!(&s[f.body], b"he\r\no");
    }
}
