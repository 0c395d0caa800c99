//! A small RESP decoder for the differential tests' normalisation: replies
//! whose element order depends on a hash table are compared as sorted
//! elements (or field/value pairs).

/// A decoded reply, enough for normalisation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resp {
    /// `+`, `-`, `:`, `,`, `#`, `_` and other one-line frames: type byte and
    /// the line.
    Line(u8, Vec<u8>),
    /// `$` bulk string (None = null bulk).
    Bulk(Option<Vec<u8>>),
    /// `*` / `~` / `%` (flattened to 2n) aggregate: type byte and elements.
    Agg(u8, Vec<Resp>),
}

/// Decodes one complete reply (the harness's raw reply bytes).
pub fn parse(b: &[u8]) -> Resp {
    fn line(b: &[u8], pos: &mut usize) -> Vec<u8> {
        let start = *pos;
        while b[*pos] != b'\r' {
            *pos += 1;
        }
        let l = b[start..*pos].to_vec();
        *pos += 2;
        l
    }
    fn go(b: &[u8], pos: &mut usize) -> Resp {
        let t = b[*pos];
        *pos += 1;
        let l = line(b, pos);
        let n: i64 = std::str::from_utf8(&l).unwrap_or("0").parse().unwrap_or(0);
        match t {
            b'$' => {
                if n < 0 {
                    return Resp::Bulk(None);
                }
                let v = b[*pos..*pos + n as usize].to_vec();
                *pos += n as usize + 2;
                Resp::Bulk(Some(v))
            }
            b'*' | b'~' | b'%' => {
                let k = if t == b'%' { 2 * n } else { n };
                Resp::Agg(t, (0..k.max(0)).map(|_| go(b, pos)).collect())
            }
            _ => Resp::Line(t, l),
        }
    }
    let mut pos = 0;
    go(b, &mut pos)
}

/// The elements of an aggregate reply; panics on any other frame.
pub fn elems(r: &Resp) -> &[Resp] {
    match r {
        Resp::Agg(_, v) => v,
        other => panic!("expected aggregate, got {other:?}"),
    }
}

/// Sorted elements (`pairs` false: HKEYS, SMEMBERS...) or sorted
/// field/value pairs (`pairs` true: HGETALL) of an aggregate reply.
pub fn sorted(r: &Resp, pairs: bool) -> Vec<Vec<Resp>> {
    let e = elems(r);
    let mut v: Vec<Vec<Resp>> = if pairs {
        e.chunks(2).map(|c| c.to_vec()).collect()
    } else {
        e.iter().map(|x| vec![x.clone()]).collect()
    };
    v.sort();
    v
}
