//! LZF compression as liblzf 3.6 (the format Redis uses for compressed RDB
//! strings, `RDB_ENC_LZF`): a stream of literal runs (control byte
//! `len - 1` < 32, then the bytes) and back references (control byte with
//! the length in its top 3 bits, 7 meaning "one more length byte follows",
//! and the high 5 bits of the distance, then the low 8 bits of the
//! distance). Distances reach 8 KB back, matches are 3..=264 bytes.
//! Written from the format description; any valid LZF stream decodes.

/// Longest back reference distance (distance - 1 fits in 13 bits).
const MAX_OFF: usize = 1 << 13;
/// Longest match: 2 + 7 + 255.
const MAX_REF: usize = (1 << 8) + (1 << 3);
/// Longest literal run.
const MAX_LIT: usize = 1 << 5;
const HLOG: u32 = 14;

#[inline]
fn hash3(a: u8, b: u8, c: u8) -> usize {
    let v = ((a as u32) << 16) | ((b as u32) << 8) | c as u32;
    (v.wrapping_mul(0x9E37_79B1) >> (32 - HLOG)) as usize
}

fn flush_literals(out: &mut Vec<u8>, lit: &[u8]) {
    for chunk in lit.chunks(MAX_LIT) {
        out.push((chunk.len() - 1) as u8);
        out.extend_from_slice(chunk);
    }
}

/// Compresses `input`; None when the result would be longer than `max_out`
/// bytes (the caller then stores the string uncompressed, as Redis does
/// when LZF does not save at least 4 bytes).
pub fn compress(input: &[u8], max_out: usize) -> Option<Vec<u8>> {
    let n = input.len();
    if n < 4 {
        return None;
    }
    let mut out = Vec::with_capacity(max_out.min(n + n / 16 + 64));
    let mut htab = vec![0u32; 1 << HLOG];
    let mut lit_start = 0;
    let mut i = 0;
    while i + 2 < n {
        let h = hash3(input[i], input[i + 1], input[i + 2]);
        let cand = htab[h] as usize;
        htab[h] = (i + 1) as u32;
        if cand > 0 {
            let r = cand - 1;
            let dist = i - r;
            if dist <= MAX_OFF && input[r..r + 3] == input[i..i + 3] {
                let maxlen = MAX_REF.min(n - i);
                let mut len = 3;
                while len < maxlen && input[r + len] == input[i + len] {
                    len += 1;
                }
                flush_literals(&mut out, &input[lit_start..i]);
                let l = len - 2;
                let o = dist - 1;
                if l < 7 {
                    out.push(((l << 5) | (o >> 8)) as u8);
                } else {
                    out.push(((7 << 5) | (o >> 8)) as u8);
                    out.push((l - 7) as u8);
                }
                out.push(o as u8);
                // Index the positions inside the match (cheaply: the last
                // two), so later repeats find it.
                let end = i + len;
                for p in end.saturating_sub(2)..end {
                    if p + 2 < n {
                        htab[hash3(input[p], input[p + 1], input[p + 2])] = (p + 1) as u32;
                    }
                }
                i = end;
                lit_start = i;
                if out.len() > max_out {
                    return None;
                }
                continue;
            }
        }
        i += 1;
    }
    flush_literals(&mut out, &input[lit_start..]);
    (out.len() <= max_out).then_some(out)
}

/// Decompresses `input`, which must expand to exactly `out_len` bytes.
/// Errors (as text) on any malformed stream: a reference before the start,
/// a run past the end of either buffer, or a different length.
pub fn decompress(input: &[u8], out_len: usize) -> Result<Vec<u8>, &'static str> {
    let mut out: Vec<u8> = Vec::with_capacity(out_len);
    let mut ip = 0;
    while ip < input.len() {
        let ctrl = input[ip] as usize;
        ip += 1;
        if ctrl < MAX_LIT {
            let len = ctrl + 1;
            if ip + len > input.len() || out.len() + len > out_len {
                return Err("invalid LZF literal run");
            }
            out.extend_from_slice(&input[ip..ip + len]);
            ip += len;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                let Some(&b) = input.get(ip) else {
                    return Err("truncated LZF back reference");
                };
                len += b as usize;
                ip += 1;
            }
            len += 2;
            let Some(&lo) = input.get(ip) else {
                return Err("truncated LZF back reference");
            };
            ip += 1;
            let back = ((ctrl & 0x1f) << 8) + lo as usize + 1;
            if back > out.len() || out.len() + len > out_len {
                return Err("invalid LZF back reference");
            }
            let start = out.len() - back;
            for k in 0..len {
                let b = out[start + k];
                out.push(b);
            }
        }
    }
    if out.len() != out_len {
        return Err("LZF length mismatch");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let mut seed = 7u64;
        let mut rnd = || {
            seed = crate::util::xorshift64(seed);
            seed
        };
        for n in [4usize, 21, 100, 1000, 70_000] {
            for alphabet in [1u64, 2, 4, 26, 256] {
                let v: Vec<u8> = (0..n).map(|_| (rnd() % alphabet) as u8).collect();
                if let Some(c) = compress(&v, n + n / 16 + 64) {
                    assert_eq!(decompress(&c, n).unwrap(), v);
                }
            }
        }
        let v = vec![b'a'; 1000];
        let c = compress(&v, 996).unwrap();
        assert!(c.len() < 40);
        assert_eq!(decompress(&c, 1000).unwrap(), v);
    }

    #[test]
    fn rejects_garbage() {
        assert!(decompress(&[0x20, 0x00], 3).is_err());
        assert!(decompress(&[5, b'a'], 6).is_err());
        assert!(decompress(&[0, b'a'], 2).is_err());
        assert!(decompress(&[0xe0], 10).is_err());
    }
}
