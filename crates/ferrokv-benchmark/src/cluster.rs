//! Redis Cluster routing: hash slots, the slot map from `CLUSTER SLOTS`,
//! and `-MOVED` / `-ASK` redirect parsing.

use crate::resp::Value;
use crc::{Crc, CRC_16_XMODEM};

/// Number of hash slots in a Redis Cluster.
pub const SLOTS: usize = 16384;

const CRC16: Crc<u16> = Crc::<u16>::new(&CRC_16_XMODEM);

/// The hash slot of `key`: CRC16 (XMODEM) of the key, or of its `{hashtag}`
/// when the key holds a non-empty one, modulo 16384.
pub fn slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|&c| c == b'{') {
        Some(open) => match key[open + 1..].iter().position(|&c| c == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    CRC16.checksum(hashed) % SLOTS as u16
}

/// Slot ranges and their master's address, from a `CLUSTER SLOTS` reply.
/// An empty host in the reply means "the node you asked", `default_host`.
pub fn parse_cluster_slots(
    v: &Value,
    default_host: &str,
) -> anyhow::Result<Vec<(u16, u16, String)>> {
    let Value::Array(ranges) = v else {
        anyhow::bail!("CLUSTER SLOTS: unexpected reply {v:?}");
    };
    let mut out = Vec::new();
    for r in ranges {
        let Value::Array(items) = r else {
            anyhow::bail!("CLUSTER SLOTS: bad range {r:?}");
        };
        match items.as_slice() {
            [Value::Int(start), Value::Int(end), Value::Array(master), ..] if master.len() >= 2 => {
                let host = match &master[0] {
                    Value::Bulk(h) if !h.is_empty() && h != b"?" => {
                        String::from_utf8_lossy(h).into_owned()
                    }
                    _ => default_host.to_string(),
                };
                let Value::Int(port) = master[1] else {
                    anyhow::bail!("CLUSTER SLOTS: bad port {:?}", master[1]);
                };
                if *start < 0 || *end >= SLOTS as i64 || start > end {
                    anyhow::bail!("CLUSTER SLOTS: bad range {start}-{end}");
                }
                out.push((*start as u16, *end as u16, join_host_port(&host, port)));
            }
            _ => anyhow::bail!("CLUSTER SLOTS: bad range {r:?}"),
        }
    }
    Ok(out)
}

/// `host:port`, bracketing IPv6 literals.
pub fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A cluster redirection carried by an error reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Redirect {
    /// `-MOVED <slot> <addr>`: the slot now lives at `addr`.
    Moved(u16, String),
    /// `-ASK <slot> <addr>`: send `ASKING` then this one command to `addr`.
    Ask(u16, String),
}

/// Parses a redirect from an error reply's text (without the leading `-`).
pub fn parse_redirect(err: &[u8]) -> Option<Redirect> {
    let s = std::str::from_utf8(err).ok()?;
    let mut it = s.split_ascii_whitespace();
    let word = it.next()?;
    let slot: u16 = it.next()?.parse().ok()?;
    let addr = it.next()?.to_string();
    match word {
        "MOVED" => Some(Redirect::Moved(slot, addr)),
        "ASK" => Some(Redirect::Ask(slot, addr)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_slots() {
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"bar"), 5061);
        assert_eq!(slot(b"123456789"), 0x31C3);
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        assert_eq!(slot(b"{user1000}.followers"), slot(b"user1000"));
        // Empty tag: the whole key is hashed.
        assert_eq!(slot(b"foo{}{bar}"), CRC16.checksum(b"foo{}{bar}") % 16384);
        assert_eq!(slot(b"foo{{bar}}zap"), slot(b"{bar"));
    }

    #[test]
    fn redirects() {
        assert_eq!(
            parse_redirect(b"MOVED 3999 127.0.0.1:6381"),
            Some(Redirect::Moved(3999, "127.0.0.1:6381".into()))
        );
        assert_eq!(
            parse_redirect(b"ASK 1 h:2"),
            Some(Redirect::Ask(1, "h:2".into()))
        );
        assert_eq!(parse_redirect(b"ERR nope"), None);
    }

    #[test]
    fn cluster_slots_reply() {
        let v = Value::Array(vec![
            Value::Array(vec![
                Value::Int(0),
                Value::Int(8191),
                Value::Array(vec![Value::Bulk(b"".to_vec()), Value::Int(7000)]),
            ]),
            Value::Array(vec![
                Value::Int(8192),
                Value::Int(16383),
                Value::Array(vec![
                    Value::Bulk(b"10.0.0.2".to_vec()),
                    Value::Int(7001),
                    Value::Bulk(b"id".to_vec()),
                ]),
            ]),
        ]);
        let r = parse_cluster_slots(&v, "127.0.0.1").unwrap();
        assert_eq!(
            r,
            vec![
                (0, 8191, "127.0.0.1:7000".to_string()),
                (8192, 16383, "10.0.0.2:7001".to_string())
            ]
        );
    }
}
