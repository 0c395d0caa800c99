//! `SmallBytes`: a byte string stored inline when it is at most
//! [`INLINE_CAP`] bytes (no heap allocation) and in a boxed slice
//! otherwise. Keys of the keyspace are stored this way: typical keys such as
//! `key:000000012345` or `user:1000:session` cost no allocation of their
//! own, the way Redis embeds short strings (embstr) in their object.
//!
//! Besides the bytes, a `SmallBytes` carries one spare bit, the *mark*
//! (kept in the length byte of the inline form and in the padding of the
//! heap form), so that the keyspace can flag "this key has a TTL" inside its
//! 64-byte node without growing it.

use std::ops::Deref;

/// Longest byte string kept inline, in bytes.
pub const INLINE_CAP: usize = 22;

/// A byte string, inline up to [`INLINE_CAP`] bytes. 24 bytes in size.
#[derive(Clone)]
pub enum SmallBytes {
    /// Up to 22 bytes stored in place.
    Inline {
        /// Number of bytes used in `buf` (low 7 bits) and the mark (bit 7).
        len: u8,
        /// The bytes.
        buf: [u8; INLINE_CAP],
    },
    /// Longer strings on the heap.
    Heap {
        /// The mark (bit 7); other bits zero.
        mark: u8,
        /// The bytes.
        bytes: Box<[u8]>,
    },
}

const MARK: u8 = 0x80;

impl SmallBytes {
    /// Copies `s`.
    #[inline]
    pub fn new(s: &[u8]) -> Self {
        if s.len() <= INLINE_CAP {
            let mut buf = [0u8; INLINE_CAP];
            buf[..s.len()].copy_from_slice(s);
            SmallBytes::Inline {
                len: s.len() as u8,
                buf,
            }
        } else {
            SmallBytes::Heap {
                mark: 0,
                bytes: s.into(),
            }
        }
    }

    /// Takes ownership of a boxed slice (kept on the heap when long, moved
    /// inline when short).
    pub fn from_box(b: Box<[u8]>) -> Self {
        if b.len() <= INLINE_CAP {
            Self::new(&b)
        } else {
            SmallBytes::Heap { mark: 0, bytes: b }
        }
    }

    /// The spare bit (see the module docs).
    #[inline]
    pub fn mark(&self) -> bool {
        match self {
            SmallBytes::Inline { len, .. } => len & MARK != 0,
            SmallBytes::Heap { mark, .. } => mark & MARK != 0,
        }
    }

    /// Sets or clears the spare bit.
    #[inline]
    pub fn set_mark(&mut self, on: bool) {
        let m = match self {
            SmallBytes::Inline { len, .. } => len,
            SmallBytes::Heap { mark, .. } => mark,
        };
        if on {
            *m |= MARK;
        } else {
            *m &= !MARK;
        }
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match self {
            SmallBytes::Inline { len, buf } => &buf[..(*len & !MARK) as usize],
            SmallBytes::Heap { bytes, .. } => bytes,
        }
    }

    /// An owned boxed copy (or the box itself).
    pub fn into_box(self) -> Box<[u8]> {
        match self {
            SmallBytes::Inline { len, buf } => buf[..(len & !MARK) as usize].into(),
            SmallBytes::Heap { bytes, .. } => bytes,
        }
    }
}

impl Deref for SmallBytes {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::fmt::Debug for SmallBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_heap() {
        assert_eq!(std::mem::size_of::<SmallBytes>(), 24);
        for n in [0, 1, 21, 22, 23, 100] {
            let v: Vec<u8> = (0..n as u8).collect();
            let s = SmallBytes::new(&v);
            assert_eq!(&*s, &v[..]);
            assert_eq!(matches!(s, SmallBytes::Inline { .. }), n <= INLINE_CAP);
            assert_eq!(&*s.clone().into_box(), &v[..]);
            assert_eq!(&*SmallBytes::from_box(v.clone().into()), &v[..]);
            let mut m = SmallBytes::new(&v);
            assert!(!m.mark());
            m.set_mark(true);
            assert!(m.mark());
            assert_eq!(&*m, &v[..]);
            m.set_mark(false);
            assert!(!m.mark());
            assert_eq!(&*m, &v[..]);
        }
    }
}
