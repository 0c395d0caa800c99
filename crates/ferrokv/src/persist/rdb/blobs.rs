//! The packed blobs Redis stores inside RDB strings: listpack (written and
//! read), ziplist and zipmap (read only: Redis 7.0 no longer writes them,
//! older dumps hold them) and intset (written and read). Layouts follow
//! Redis's listpack.c, ziplist.c, zipmap.c and intset.c; every read is
//! bounds-checked and a malformed blob is an error, never a panic.

/// One element of a listpack or ziplist.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Elem<'a> {
    /// An integer-encoded element.
    Int(i64),
    /// A string element.
    Str(&'a [u8]),
}

impl Elem<'_> {
    /// The element's bytes (an integer's decimal form).
    pub fn to_vec(self) -> Vec<u8> {
        match self {
            Elem::Int(v) => itoa::Buffer::new().format(v).as_bytes().to_vec(),
            Elem::Str(s) => s.to_vec(),
        }
    }

    /// Calls `f` with the element's bytes without allocating.
    pub fn with<R>(self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Elem::Int(v) => f(itoa::Buffer::new().format(v).as_bytes()),
            Elem::Str(s) => f(s),
        }
    }

    /// The element as a sorted-set score (strtod of the string form).
    pub fn score(self) -> Option<f64> {
        match self {
            Elem::Int(v) => Some(v as f64),
            Elem::Str(s) => parse_score(s),
        }
    }
}

/// Parses a score written as text in an RDB (strtod syntax, including
/// `inf`/`-inf`); NaN is refused.
pub fn parse_score(s: &[u8]) -> Option<f64> {
    let t = std::str::from_utf8(s).ok()?.trim();
    let v: f64 = match t {
        "inf" | "+inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        _ => t.parse().ok()?,
    };
    (!v.is_nan()).then_some(v)
}

// ------------------------------------------------------------- listpack

/// Builds a Redis listpack (listpack.c) for an RDB string: the encoder of
/// [`crate::db::listpack`] (strings that are canonical integers are stored
/// integer-encoded, as `lpAppend` does), counting as it goes.
#[derive(Debug)]
pub struct ListpackWriter {
    buf: Vec<u8>,
    count: usize,
}

impl Default for ListpackWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl ListpackWriter {
    /// An empty listpack.
    pub fn new() -> Self {
        ListpackWriter {
            buf: crate::db::listpack::new(),
            count: 0,
        }
    }

    /// Bytes so far (terminator included).
    pub fn len_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Elements so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Appends an integer element in the smallest encoding.
    pub fn push_int(&mut self, v: i64) {
        crate::db::listpack::append(&mut self.buf, &[crate::db::listpack::Elem::Int(v)]);
        self.count += 1;
    }

    /// Appends a string element (integer-encoded when canonical).
    pub fn push(&mut self, s: &[u8]) {
        crate::db::listpack::append_bytes(&mut self.buf, &[s]);
        self.count += 1;
    }

    /// The listpack's bytes.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

fn take(b: &[u8], pos: usize, n: usize) -> Result<&[u8], String> {
    b.get(pos..pos.checked_add(n).ok_or("length overflow")?)
        .ok_or_else(|| "entry runs past the end of the blob".to_string())
}

fn sign_extend(u: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((u << shift) as i64) >> shift
}

/// Decodes every element of a listpack, validating the header, each
/// entry's bounds and back-length, and the terminator.
pub fn listpack_elems(b: &[u8]) -> Result<Vec<Elem<'_>>, String> {
    if b.len() < 7 {
        return Err("listpack too short".into());
    }
    let total = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
    if total != b.len() {
        return Err("listpack size header mismatch".into());
    }
    let declared = u16::from_le_bytes([b[4], b[5]]) as usize;
    let mut out = Vec::with_capacity(declared.min(4096));
    let mut p = 6;
    loop {
        let Some(&e) = b.get(p) else {
            return Err("listpack without terminator".into());
        };
        if e == 0xFF {
            break;
        }
        let (elem, len) = if e & 0x80 == 0 {
            (Elem::Int(e as i64), 1)
        } else if e & 0xC0 == 0x80 {
            let n = (e & 0x3f) as usize;
            (Elem::Str(take(b, p + 1, n)?), 1 + n)
        } else if e & 0xE0 == 0xC0 {
            let lo = *take(b, p + 1, 1)?.first().unwrap_or(&0) as u64;
            let u = (((e & 0x1f) as u64) << 8) | lo;
            (Elem::Int(sign_extend(u, 13)), 2)
        } else if e & 0xF0 == 0xE0 {
            let lo = take(b, p + 1, 1)?[0] as usize;
            let n = (((e & 0x0f) as usize) << 8) | lo;
            (Elem::Str(take(b, p + 2, n)?), 2 + n)
        } else {
            match e {
                0xF0 => {
                    let h = take(b, p + 1, 4)?;
                    let n = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
                    (Elem::Str(take(b, p + 5, n)?), 5 + n)
                }
                0xF1..=0xF4 => {
                    let w = match e {
                        0xF1 => 2,
                        0xF2 => 3,
                        0xF3 => 4,
                        _ => 8,
                    };
                    let d = take(b, p + 1, w)?;
                    let mut u = 0u64;
                    for (i, &x) in d.iter().enumerate() {
                        u |= (x as u64) << (8 * i);
                    }
                    (Elem::Int(sign_extend(u, 8 * w as u32)), 1 + w)
                }
                _ => return Err(format!("invalid listpack entry encoding 0x{e:02x}")),
            }
        };
        let bl = crate::db::listpack::backlen_size(len);
        let back = take(b, p + len, bl)?;
        // The back-length must decode (read backwards) to the entry size.
        let mut v = 0usize;
        for (i, &x) in back.iter().rev().enumerate() {
            v |= ((x & 127) as usize) << (7 * i);
        }
        if v != len {
            return Err("listpack back-length mismatch".into());
        }
        out.push(elem);
        p += len + bl;
    }
    if p + 1 != b.len() {
        return Err("data after the listpack terminator".into());
    }
    if declared != 65535 && declared != out.len() {
        return Err("listpack element count mismatch".into());
    }
    Ok(out)
}

// -------------------------------------------------------------- ziplist

/// Decodes every element of a ziplist (ziplist.c), validating the header,
/// each entry's bounds and the terminator.
pub fn ziplist_elems(b: &[u8]) -> Result<Vec<Elem<'_>>, String> {
    if b.len() < 11 {
        return Err("ziplist too short".into());
    }
    let total = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
    if total != b.len() {
        return Err("ziplist size header mismatch".into());
    }
    let declared = u16::from_le_bytes([b[8], b[9]]) as usize;
    let mut out = Vec::with_capacity(declared.min(4096));
    let mut p = 10;
    loop {
        let Some(&first) = b.get(p) else {
            return Err("ziplist without terminator".into());
        };
        if first == 0xFF {
            break;
        }
        // prevlen: 1 byte, or 0xFE and 4 bytes.
        p += if first < 254 { 1 } else { 5 };
        let Some(&e) = b.get(p) else {
            return Err("ziplist entry past the end".into());
        };
        let (elem, len) = match e >> 6 {
            0 => {
                let n = (e & 0x3f) as usize;
                (Elem::Str(take(b, p + 1, n)?), 1 + n)
            }
            1 => {
                let lo = take(b, p + 1, 1)?[0] as usize;
                let n = (((e & 0x3f) as usize) << 8) | lo;
                (Elem::Str(take(b, p + 2, n)?), 2 + n)
            }
            2 => {
                if e != 0x80 {
                    return Err("invalid ziplist string encoding".into());
                }
                let h = take(b, p + 1, 4)?;
                let n = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize;
                (Elem::Str(take(b, p + 5, n)?), 5 + n)
            }
            _ => {
                let (w, imm) = match e {
                    0xC0 => (2, None),
                    0xD0 => (4, None),
                    0xE0 => (8, None),
                    0xF0 => (3, None),
                    0xFE => (1, None),
                    0xF1..=0xFD => (0, Some((e & 0x0f) as i64 - 1)),
                    _ => return Err(format!("invalid ziplist entry encoding 0x{e:02x}")),
                };
                if let Some(v) = imm {
                    (Elem::Int(v), 1)
                } else {
                    let d = take(b, p + 1, w)?;
                    let mut u = 0u64;
                    for (i, &x) in d.iter().enumerate() {
                        u |= (x as u64) << (8 * i);
                    }
                    (Elem::Int(sign_extend(u, 8 * w as u32)), 1 + w)
                }
            }
        };
        out.push(elem);
        p += len;
    }
    if p + 1 != b.len() {
        return Err("data after the ziplist terminator".into());
    }
    if declared != 65535 && declared != out.len() {
        return Err("ziplist element count mismatch".into());
    }
    Ok(out)
}

// --------------------------------------------------------------- zipmap

/// A (field, value) pair borrowed from a blob.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// Decodes a zipmap (zipmap.c, Redis < 2.6 small hashes) into
/// (field, value) pairs.
pub fn zipmap_pairs(b: &[u8]) -> Result<Vec<Pair<'_>>, String> {
    fn len_at(b: &[u8], p: usize) -> Result<(usize, usize), String> {
        match b.get(p) {
            Some(&x) if x < 254 => Ok((x as usize, 1)),
            Some(&254) => {
                let h = take(b, p + 1, 4)?;
                Ok((u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize, 5))
            }
            _ => Err("invalid zipmap length".into()),
        }
    }
    if b.is_empty() {
        return Err("zipmap too short".into());
    }
    let mut out = Vec::new();
    let mut p = 1;
    loop {
        match b.get(p) {
            None => return Err("zipmap without terminator".into()),
            Some(&255) => break,
            _ => {}
        }
        let (kl, s) = len_at(b, p)?;
        p += s;
        let k = take(b, p, kl)?;
        p += kl;
        let (vl, s) = len_at(b, p)?;
        p += s;
        let free = *b.get(p).ok_or("zipmap entry past the end")? as usize;
        p += 1;
        let v = take(b, p, vl)?;
        p += vl + free;
        out.push((k, v));
    }
    if p + 1 != b.len() {
        return Err("data after the zipmap terminator".into());
    }
    Ok(out)
}

// --------------------------------------------------------------- intset

/// Encodes sorted, distinct integers as an intset (intset.c): encoding
/// width u32 LE (2, 4 or 8), count u32 LE, members LE ascending.
pub fn intset_encode(sorted: &[i64]) -> Vec<u8> {
    let w: usize = sorted.iter().fold(2, |w, &v| {
        w.max(if i16::try_from(v).is_ok() {
            2
        } else if i32::try_from(v).is_ok() {
            4
        } else {
            8
        })
    });
    let mut b = Vec::with_capacity(8 + w * sorted.len());
    b.extend_from_slice(&(w as u32).to_le_bytes());
    b.extend_from_slice(&(sorted.len() as u32).to_le_bytes());
    for &v in sorted {
        b.extend_from_slice(&v.to_le_bytes()[..w]);
    }
    b
}

/// Decodes an intset, checking its width, size and strictly ascending order.
pub fn intset_decode(b: &[u8]) -> Result<Vec<i64>, String> {
    if b.len() < 8 {
        return Err("intset too short".into());
    }
    let w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let n = u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as usize;
    if !matches!(w, 2 | 4 | 8) {
        return Err("invalid intset encoding".into());
    }
    if n.checked_mul(w).and_then(|x| x.checked_add(8)) != Some(b.len()) {
        return Err("intset size mismatch".into());
    }
    let mut out = Vec::with_capacity(n);
    for c in b[8..].chunks_exact(w) {
        let mut u = 0u64;
        for (i, &x) in c.iter().enumerate() {
            u |= (x as u64) << (8 * i);
        }
        let v = sign_extend(u, 8 * w as u32);
        if out.last().is_some_and(|&l| l >= v) {
            return Err("intset not sorted or has duplicates".into());
        }
        out.push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_round_trip() {
        let long = vec![b'x'; 5000];
        let mid = vec![b'y'; 300];
        let ints = [
            0i64,
            127,
            128,
            -1,
            -4096,
            4095,
            4096,
            -32768,
            32767,
            40000,
            -(1 << 23),
            (1 << 23) - 1,
            1 << 23,
            i32::MIN as i64,
            i32::MAX as i64,
            i64::MIN,
            i64::MAX,
        ];
        let mut w = ListpackWriter::new();
        for v in ints {
            w.push(v.to_string().as_bytes());
        }
        w.push(b"hello");
        w.push(&mid);
        w.push(&long);
        w.push(b"007");
        let b = w.finish();
        let e = listpack_elems(&b).unwrap();
        assert_eq!(e.len(), ints.len() + 4);
        for (i, v) in ints.iter().enumerate() {
            assert_eq!(e[i], Elem::Int(*v));
        }
        assert_eq!(e[ints.len()], Elem::Str(b"hello"));
        assert_eq!(e[ints.len() + 1], Elem::Str(&mid));
        assert_eq!(e[ints.len() + 2], Elem::Str(&long));
        assert_eq!(e[ints.len() + 3], Elem::Str(b"007"));
        // Any truncation or flipped header byte is an error, not a panic.
        for cut in 0..b.len() {
            assert!(listpack_elems(&b[..cut]).is_err());
        }
    }

    #[test]
    fn intset_round_trip() {
        let v = vec![-5, 1, 70000];
        let b = intset_encode(&v);
        assert_eq!(&b[..4], &4u32.to_le_bytes());
        assert_eq!(intset_decode(&b).unwrap(), v);
        assert!(intset_decode(&intset_encode(&[2, 1])).is_err());
        assert!(intset_decode(&b[..b.len() - 1]).is_err());
    }

    #[test]
    fn ziplist_decodes() {
        // zlbytes, zltail, zllen=3; entries "ab", 12 (imm), 1000 (int16).
        let mut z = vec![0u8; 10];
        z.extend_from_slice(&[0, 0x02, b'a', b'b']);
        z.extend_from_slice(&[4, 0xFD]);
        z.extend_from_slice(&[2, 0xC0, 0xE8, 0x03]);
        z.push(0xFF);
        let n = z.len() as u32;
        z[0..4].copy_from_slice(&n.to_le_bytes());
        z[8..10].copy_from_slice(&3u16.to_le_bytes());
        let e = ziplist_elems(&z).unwrap();
        assert_eq!(e, vec![Elem::Str(b"ab"), Elem::Int(12), Elem::Int(1000)]);
        for cut in 0..z.len() {
            assert!(ziplist_elems(&z[..cut]).is_err());
        }
    }
}
