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

/// lpDecodeBacklen: the back-length whose last byte is `b[at]`, read
/// backwards; None past 5 bytes or the start of the blob.
fn decode_backlen(b: &[u8], mut at: usize) -> Option<usize> {
    let mut v = 0usize;
    let mut shift = 0;
    loop {
        let x = *b.get(at)?;
        v |= ((x & 127) as usize) << shift;
        if x & 128 == 0 {
            return Some(v);
        }
        shift += 7;
        if shift > 28 || at == 0 {
            return None;
        }
        at -= 1;
    }
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
        take(b, p + len, bl)?;
        // The back-length, read backwards from the entry's last byte as
        // lpDecodeBacklen does (7 bits a byte, high bit = more), must be
        // the entry's size.
        if decode_backlen(b, p + len + bl - 1) != Some(len) {
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

/// Decodes every element of a ziplist (ziplist.c), with the checks of
/// Redis's deep `ziplistValidateIntegrity`: `zlbytes` equals the blob's
/// size, the last byte is the terminator, `zltail` points at the last
/// entry, each entry's prevlen equals the previous entry's size, each
/// encoding is valid and each entry lies inside the blob, and `zllen`
/// (unless 65535) equals the number of entries.
pub fn ziplist_elems(b: &[u8]) -> Result<Vec<Elem<'_>>, String> {
    if b.len() < 11 {
        return Err("ziplist too short".into());
    }
    let total = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
    if total != b.len() {
        return Err("ziplist size header mismatch".into());
    }
    // Index of the terminator: every entry must end at or before it.
    let last = b.len() - 1;
    if b[last] != 0xFF {
        return Err("ziplist without terminator".into());
    }
    let tail = u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as usize;
    if tail > last {
        return Err("ziplist tail offset out of range".into());
    }
    let declared = u16::from_le_bytes([b[8], b[9]]) as usize;
    let mut out = Vec::with_capacity(declared.min(4096));
    let mut p = 10;
    let mut prev_size = 0usize;
    let mut prev_at: Option<usize> = None;
    let past = || "ziplist entry reaches outside the ziplist".to_string();
    while b[p] != 0xFF {
        // prevlen: 1 byte, or 0xFE and 4 bytes LE.
        let pls = if b[p] < 254 { 1 } else { 5 };
        if p + pls > last {
            return Err(past());
        }
        let prevlen = if pls == 1 {
            b[p] as usize
        } else {
            u32::from_le_bytes([b[p + 1], b[p + 2], b[p + 3], b[p + 4]]) as usize
        };
        let q = p + pls;
        let e = b[q];
        // (header bytes after prevlen, payload bytes)
        let (lensize, len): (usize, usize) = match e >> 6 {
            0 => (1, (e & 0x3f) as usize),
            1 => {
                if q + 2 > last {
                    return Err(past());
                }
                (2, (((e & 0x3f) as usize) << 8) | b[q + 1] as usize)
            }
            // 0x80..0xBF: ZIP_ENTRY_ENCODING masks the low bits away.
            2 => {
                if q + 5 > last {
                    return Err(past());
                }
                let n = u32::from_be_bytes([b[q + 1], b[q + 2], b[q + 3], b[q + 4]]);
                (5, n as usize)
            }
            _ => match e {
                0xC0 => (1, 2),
                0xD0 => (1, 4),
                0xE0 => (1, 8),
                0xF0 => (1, 3),
                0xFE => (1, 1),
                0xF1..=0xFD => (1, 0),
                _ => return Err(format!("invalid ziplist entry encoding 0x{e:02x}")),
            },
        };
        let size = pls
            .checked_add(lensize)
            .and_then(|x| x.checked_add(len))
            .ok_or_else(past)?;
        if p.checked_add(size).is_none_or(|end| end > last) {
            return Err(past());
        }
        if prevlen != prev_size {
            return Err("ziplist entry prevlen does not match the previous entry".into());
        }
        let data = &b[q + lensize..p + size];
        let elem = if e >> 6 != 3 {
            Elem::Str(data)
        } else if (0xF1..=0xFD).contains(&e) {
            Elem::Int((e & 0x0f) as i64 - 1)
        } else {
            let mut u = 0u64;
            for (i, &x) in data.iter().enumerate() {
                u |= (x as u64) << (8 * i);
            }
            Elem::Int(sign_extend(u, 8 * len as u32))
        };
        out.push(elem);
        prev_size = size;
        prev_at = Some(p);
        p += size;
    }
    if p != last {
        return Err("data after the ziplist terminator".into());
    }
    if prev_at.is_some_and(|t| t != tail) {
        return Err("ziplist tail offset does not point at the last entry".into());
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
/// (field, value) pairs, with the checks of Redis's deep
/// `zipmapValidateIntegrity`: the last byte is the terminator, every entry
/// lies inside the blob, at least one entry, and the count byte (unless
/// 254, "unknown") equals the number of entries. As in Redis, the pairs
/// end at the first terminator.
pub fn zipmap_pairs(b: &[u8]) -> Result<Vec<Pair<'_>>, String> {
    // A length: one byte below 254, else the 4 bytes LE after it.
    fn len_at(b: &[u8], p: usize, last: usize) -> Result<(usize, usize), String> {
        let s = if b[p] < 254 { 1 } else { 5 };
        if p + s > last {
            return Err("zipmap entry reaches outside the zipmap".into());
        }
        let n = if s == 1 {
            b[p] as usize
        } else {
            u32::from_le_bytes([b[p + 1], b[p + 2], b[p + 3], b[p + 4]]) as usize
        };
        Ok((n, s))
    }
    if b.len() < 2 {
        return Err("zipmap too short".into());
    }
    let last = b.len() - 1;
    if b[last] != 255 {
        return Err("zipmap without terminator".into());
    }
    let past = || "zipmap entry reaches outside the zipmap".to_string();
    let mut out = Vec::new();
    let mut p = 1;
    while b[p] != 255 {
        let (kl, s) = len_at(b, p, last)?;
        let k0 = p + s;
        p = k0.checked_add(kl).filter(|&x| x <= last).ok_or_else(past)?;
        let (vl, s) = len_at(b, p, last)?;
        p += s;
        let free = b[p] as usize;
        let v0 = p + 1;
        p = v0
            .checked_add(vl)
            .and_then(|x| x.checked_add(free))
            .filter(|&x| x <= last)
            .ok_or_else(past)?;
        if v0 + vl > last {
            return Err(past());
        }
        out.push((&b[k0..k0 + kl], &b[v0..v0 + vl]));
    }
    if out.is_empty() {
        return Err("empty zipmap".into());
    }
    if b[0] != 254 && b[0] as usize != out.len() {
        return Err("zipmap element count mismatch".into());
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

/// Decodes an intset, checking its width, size, that it is not empty and
/// strictly ascending order (Redis's deep `intsetValidateIntegrity`).
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
    if n == 0 {
        return Err("empty intset".into());
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
        z[4] = 16; // zltail: the third entry
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
