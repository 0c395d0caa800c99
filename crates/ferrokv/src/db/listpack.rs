//! A Redis listpack held in memory and edited in place (listpack.c): the
//! node format of streams, whose RDB form is the same bytes.
//!
//! Layout: a 6-byte header (total bytes as u32 LE, element count as u16 LE,
//! 65535 when the count does not fit), the elements, a 0xFF terminator.
//! Each element is an encoding byte (with the length or the integer), its
//! data, and a back-length (the size of encoding + data in 1..=5 bytes,
//! 7 bits per byte, read from the right) so the listpack can be walked in
//! both directions. Strings that are canonical integers are stored as
//! integers, as `lpAppend` does, so the element reads back as the same
//! decimal text.
//!
//! Positions are byte offsets of an element's first byte. Every function
//! here works on a listpack this module built or [`validate`] accepted;
//! on anything else the results are unspecified but never a panic beyond
//! slice bounds checks.

use crate::util::parse_i64;

/// Size of the header.
pub const HEADER: usize = 6;
/// The terminator byte.
pub const EOF: u8 = 0xFF;

/// One element read from a listpack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem<'a> {
    /// Integer-encoded.
    Int(i64),
    /// String-encoded.
    Str(&'a [u8]),
}

impl Elem<'_> {
    /// The element as an integer: integer-encoded ones, and strings that
    /// are canonical integers (0 otherwise, as `lpGetInteger` asserts).
    #[inline]
    pub fn int(self) -> i64 {
        match self {
            Elem::Int(v) => v,
            Elem::Str(s) => parse_i64(s).unwrap_or(0),
        }
    }

    /// Calls `f` with the element's bytes (an integer's decimal form).
    #[inline]
    pub fn with<R>(self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Elem::Int(v) => f(itoa::Buffer::new().format(v).as_bytes()),
            Elem::Str(s) => f(s),
        }
    }

    /// An owned copy of the element's bytes.
    pub fn to_vec(self) -> Vec<u8> {
        self.with(|b| b.to_vec())
    }

    /// True when the element reads as `b`.
    #[inline]
    pub fn eq_bytes(self, b: &[u8]) -> bool {
        match self {
            Elem::Str(s) => s == b,
            Elem::Int(v) => parse_i64(b) == Some(v),
        }
    }
}

/// An empty listpack.
pub fn new() -> Vec<u8> {
    let mut v = Vec::with_capacity(64);
    v.extend_from_slice(&[7, 0, 0, 0, 0, 0, EOF]);
    v
}

/// Total bytes as recorded in the header.
#[inline]
pub fn total_bytes(lp: &[u8]) -> usize {
    u32::from_le_bytes([lp[0], lp[1], lp[2], lp[3]]) as usize
}

fn set_header(lp: &mut [u8], count: usize) {
    let total = lp.len() as u32;
    lp[0..4].copy_from_slice(&total.to_le_bytes());
    let c = if count < 65535 { count as u16 } else { 65535 };
    lp[4..6].copy_from_slice(&c.to_le_bytes());
}

fn header_count(lp: &[u8]) -> usize {
    u16::from_le_bytes([lp[4], lp[5]]) as usize
}

/// Encoding bytes (encoding byte + data) of an integer.
fn encode_int(v: i64, out: &mut Vec<u8>) {
    if (0..=127).contains(&v) {
        out.push(v as u8);
    } else if (-4096..=4095).contains(&v) {
        let u = (v as u64) & 0x1FFF;
        out.push(0xC0 | (u >> 8) as u8);
        out.push(u as u8);
    } else if (-32768..=32767).contains(&v) {
        out.push(0xF1);
        out.extend_from_slice(&(v as i16).to_le_bytes());
    } else if (-8_388_608..=8_388_607).contains(&v) {
        out.push(0xF2);
        out.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
    } else if (i32::MIN as i64..=i32::MAX as i64).contains(&v) {
        out.push(0xF3);
        out.extend_from_slice(&(v as i32).to_le_bytes());
    } else {
        out.push(0xF4);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Encoding bytes of a string (as a string, whatever it holds).
fn encode_str(s: &[u8], out: &mut Vec<u8>) {
    let l = s.len();
    if l < 64 {
        out.push(0x80 | l as u8);
    } else if l < 4096 {
        out.push(0xE0 | (l >> 8) as u8);
        out.push(l as u8);
    } else {
        out.push(0xF0);
        out.extend_from_slice(&(l as u32).to_le_bytes());
    }
    out.extend_from_slice(s);
}

/// Appends the back-length of an element of `l` encoding bytes.
fn push_backlen(l: usize, out: &mut Vec<u8>) {
    if l <= 127 {
        out.push(l as u8);
    } else if l < 16383 {
        out.push((l >> 7) as u8);
        out.push(((l & 127) | 128) as u8);
    } else if l < 2_097_151 {
        out.push((l >> 14) as u8);
        out.push((((l >> 7) & 127) | 128) as u8);
        out.push(((l & 127) | 128) as u8);
    } else if l < 268_435_455 {
        out.push((l >> 21) as u8);
        out.push((((l >> 14) & 127) | 128) as u8);
        out.push((((l >> 7) & 127) | 128) as u8);
        out.push(((l & 127) | 128) as u8);
    } else {
        out.push((l >> 28) as u8);
        out.push((((l >> 21) & 127) | 128) as u8);
        out.push((((l >> 14) & 127) | 128) as u8);
        out.push((((l >> 7) & 127) | 128) as u8);
        out.push(((l & 127) | 128) as u8);
    }
}

/// Bytes a back-length of `l` (encoding + data bytes) takes.
pub fn backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

/// Encodes one element (encoding, data, back-length) onto `out`.
fn encode_elem(e: Elem<'_>, out: &mut Vec<u8>) {
    let start = out.len();
    match e {
        Elem::Int(v) => encode_int(v, out),
        Elem::Str(s) => match parse_i64(s) {
            Some(v) => encode_int(v, out),
            None => encode_str(s, out),
        },
    }
    let l = out.len() - start;
    push_backlen(l, out);
}

/// Bytes an element of `s` takes once encoded (including back-length).
pub fn encoded_size(s: &[u8]) -> usize {
    let l = match parse_i64(s) {
        Some(v) if (0..=127).contains(&v) => 1,
        Some(v) if (-4096..=4095).contains(&v) => 2,
        Some(v) if (-32768..=32767).contains(&v) => 3,
        Some(v) if (-8_388_608..=8_388_607).contains(&v) => 4,
        Some(v) if (i32::MIN as i64..=i32::MAX as i64).contains(&v) => 5,
        Some(_) => 9,
        None if s.len() < 64 => 1 + s.len(),
        None if s.len() < 4096 => 2 + s.len(),
        None => 5 + s.len(),
    };
    l + backlen_size(l)
}

/// Appends elements at the end, updating the header.
pub fn append(lp: &mut Vec<u8>, elems: &[Elem<'_>]) {
    let count = header_count(lp);
    lp.pop(); // terminator
    for e in elems {
        encode_elem(*e, lp);
    }
    lp.push(EOF);
    let count = if count == 65535 {
        count_slow(lp)
    } else {
        count + elems.len()
    };
    set_header(lp, count);
}

/// Appends one string element (stored as an integer when canonical).
pub fn append_bytes(lp: &mut Vec<u8>, items: &[&[u8]]) {
    let count = header_count(lp);
    lp.pop();
    for s in items {
        encode_elem(Elem::Str(s), lp);
    }
    lp.push(EOF);
    let count = if count == 65535 {
        count_slow(lp)
    } else {
        count + items.len()
    };
    set_header(lp, count);
}

fn count_slow(lp: &[u8]) -> usize {
    let mut n = 0;
    let mut p = first(lp);
    while let Some(at) = p {
        n += 1;
        p = next(lp, at);
    }
    n
}

/// Length of the encoding + data of the element at `p`.
#[inline]
fn elem_len(lp: &[u8], p: usize) -> usize {
    let b = lp[p];
    if b & 0x80 == 0 {
        1
    } else if b & 0xC0 == 0x80 {
        1 + (b & 0x3F) as usize
    } else if b & 0xE0 == 0xC0 {
        2
    } else if b & 0xF0 == 0xE0 {
        2 + (((b & 0x0F) as usize) << 8 | lp[p + 1] as usize)
    } else {
        match b {
            0xF0 => 5 + u32::from_le_bytes([lp[p + 1], lp[p + 2], lp[p + 3], lp[p + 4]]) as usize,
            0xF1 => 3,
            0xF2 => 4,
            0xF3 => 5,
            0xF4 => 9,
            _ => 1,
        }
    }
}

/// Position of the first element, None when empty.
#[inline]
pub fn first(lp: &[u8]) -> Option<usize> {
    (lp.get(HEADER) != Some(&EOF) && lp.len() > HEADER).then_some(HEADER)
}

/// Position of the element after the one at `p`, None at the end.
#[inline]
pub fn next(lp: &[u8], p: usize) -> Option<usize> {
    let l = elem_len(lp, p);
    let n = p + l + backlen_size(l);
    (n < lp.len() && lp[n] != EOF).then_some(n)
}

/// Position of the last element, None when empty.
#[inline]
pub fn last(lp: &[u8]) -> Option<usize> {
    let end = lp.len() - 1; // the terminator
    if end <= HEADER {
        return None;
    }
    Some(end - entry_size_before(lp, end))
}

/// Size (encoding + data + back-length) of the element that ends at `end`.
#[inline]
fn entry_size_before(lp: &[u8], end: usize) -> usize {
    let mut p = end - 1;
    let mut v = 0usize;
    let mut shift = 0;
    let mut n = 0;
    loop {
        v |= ((lp[p] & 127) as usize) << shift;
        n += 1;
        if lp[p] & 128 == 0 || p == 0 || n == 5 {
            break;
        }
        p -= 1;
        shift += 7;
    }
    v + n
}

/// Position of the element before the one at `p`, None at the start.
#[inline]
pub fn prev(lp: &[u8], p: usize) -> Option<usize> {
    if p <= HEADER {
        return None;
    }
    Some(p - entry_size_before(lp, p))
}

/// The element at `p`.
#[inline]
pub fn get(lp: &[u8], p: usize) -> Elem<'_> {
    let b = lp[p];
    if b & 0x80 == 0 {
        return Elem::Int(b as i64);
    }
    if b & 0xC0 == 0x80 {
        let l = (b & 0x3F) as usize;
        return Elem::Str(&lp[p + 1..p + 1 + l]);
    }
    if b & 0xE0 == 0xC0 {
        let u = ((b & 0x1F) as u64) << 8 | lp[p + 1] as u64;
        let v = ((u << 51) as i64) >> 51;
        return Elem::Int(v);
    }
    if b & 0xF0 == 0xE0 {
        let l = ((b & 0x0F) as usize) << 8 | lp[p + 1] as usize;
        return Elem::Str(&lp[p + 2..p + 2 + l]);
    }
    match b {
        0xF0 => {
            let l = u32::from_le_bytes([lp[p + 1], lp[p + 2], lp[p + 3], lp[p + 4]]) as usize;
            Elem::Str(&lp[p + 5..p + 5 + l])
        }
        0xF1 => Elem::Int(i16::from_le_bytes([lp[p + 1], lp[p + 2]]) as i64),
        0xF2 => {
            let u = u32::from_le_bytes([lp[p + 1], lp[p + 2], lp[p + 3], 0]);
            Elem::Int(((u << 8) as i32 >> 8) as i64)
        }
        0xF3 => Elem::Int(i32::from_le_bytes([lp[p + 1], lp[p + 2], lp[p + 3], lp[p + 4]]) as i64),
        0xF4 => {
            let mut b8 = [0u8; 8];
            b8.copy_from_slice(&lp[p + 1..p + 9]);
            Elem::Int(i64::from_le_bytes(b8))
        }
        _ => Elem::Int(0),
    }
}

/// Replaces the integer at `p` by `v`, moving the rest of the listpack
/// when the encoding changes size (`lpReplaceInteger`). The element count
/// is unchanged.
pub fn replace_int(lp: &mut Vec<u8>, p: usize, v: i64) {
    let old_l = elem_len(lp, p);
    let old = old_l + backlen_size(old_l);
    let mut enc = Vec::with_capacity(12);
    encode_int(v, &mut enc);
    let l = enc.len();
    push_backlen(l, &mut enc);
    if enc.len() == old {
        lp[p..p + old].copy_from_slice(&enc);
        return;
    }
    lp.splice(p..p + old, enc);
    let count = header_count(lp);
    set_header(lp, count);
}

/// Removes the elements in `[from, to)` (positions of elements, `to` may
/// be the terminator's position), `n` elements in all.
pub fn delete_range(lp: &mut Vec<u8>, from: usize, to: usize, n: usize) {
    lp.drain(from..to);
    let count = header_count(lp);
    let count = if count == 65535 {
        count_slow(lp)
    } else {
        count - n
    };
    set_header(lp, count);
}

/// Position just past the element at `p` (the next element or the
/// terminator).
#[inline]
pub fn end_of(lp: &[u8], p: usize) -> usize {
    let l = elem_len(lp, p);
    p + l + backlen_size(l)
}

/// Checks that `lp` is a well-formed listpack (header, every element's
/// encoding and back-length within bounds, terminator), as
/// `lpValidateIntegrity` with deep checking. Returns the element count.
pub fn validate(lp: &[u8]) -> Result<usize, &'static str> {
    if lp.len() < HEADER + 1 {
        return Err("listpack too short");
    }
    if total_bytes(lp) != lp.len() {
        return Err("listpack size mismatch");
    }
    if lp[lp.len() - 1] != EOF {
        return Err("listpack not terminated");
    }
    let mut p = HEADER;
    let mut n = 0usize;
    let end = lp.len() - 1;
    while p < end {
        let b = lp[p];
        if b == EOF {
            return Err("listpack terminated early");
        }
        // Bounds of the encoding's own length bytes.
        let need = match b {
            _ if b & 0xF0 == 0xE0 => 2,
            0xF0 => 5,
            _ => 1,
        };
        if p + need > end {
            return Err("listpack element out of bounds");
        }
        if b & 0xF0 == 0xF0 && b > 0xF4 {
            return Err("listpack bad encoding");
        }
        let l = elem_len(lp, p);
        let bl = backlen_size(l);
        if p + l + bl > end {
            return Err("listpack element out of bounds");
        }
        if entry_size_before(lp, p + l + bl) != l + bl {
            return Err("listpack bad back-length");
        }
        p += l + bl;
        n += 1;
    }
    if p != end {
        return Err("listpack overrun");
    }
    let hc = header_count(lp);
    if hc != 65535 && hc != n {
        return Err("listpack count mismatch");
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_encoding() {
        let long = vec![b'x'; 5000];
        let mid = vec![b'y'; 300];
        let items: Vec<Vec<u8>> = vec![
            b"0".to_vec(),
            b"127".to_vec(),
            b"128".to_vec(),
            b"-1".to_vec(),
            b"-4096".to_vec(),
            b"4095".to_vec(),
            b"32767".to_vec(),
            b"-32768".to_vec(),
            b"8388607".to_vec(),
            b"-8388608".to_vec(),
            b"2147483647".to_vec(),
            b"-2147483648".to_vec(),
            b"9223372036854775807".to_vec(),
            b"-9223372036854775808".to_vec(),
            b"007".to_vec(),
            b"".to_vec(),
            b"hello".to_vec(),
            mid,
            long,
        ];
        let mut lp = new();
        for it in &items {
            append_bytes(&mut lp, &[it]);
        }
        assert_eq!(validate(&lp), Ok(items.len()));
        let mut p = first(&lp);
        for it in &items {
            let at = p.unwrap();
            assert!(
                get(&lp, at).eq_bytes(it),
                "{:?}",
                String::from_utf8_lossy(it)
            );
            assert_eq!(get(&lp, at).to_vec(), *it);
            p = next(&lp, at);
        }
        assert!(p.is_none());
        let mut p = last(&lp);
        for it in items.iter().rev() {
            let at = p.unwrap();
            assert_eq!(get(&lp, at).to_vec(), *it);
            p = prev(&lp, at);
        }
        assert!(p.is_none());
        for s in &items {
            let mut one = new();
            append_bytes(&mut one, &[s]);
            assert_eq!(one.len() - 7, encoded_size(s));
        }
    }

    #[test]
    fn replace_grows_and_shrinks() {
        let mut lp = new();
        append(&mut lp, &[Elem::Int(1), Elem::Str(b"a"), Elem::Int(5)]);
        let p = first(&lp).unwrap();
        for v in [127, 128, 5000, 40000, 1 << 40, 3] {
            replace_int(&mut lp, p, v);
            assert_eq!(validate(&lp), Ok(3));
            assert_eq!(get(&lp, p), Elem::Int(v));
            let q = next(&lp, p).unwrap();
            assert_eq!(get(&lp, q), Elem::Str(b"a"));
        }
    }
}
