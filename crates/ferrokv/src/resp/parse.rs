//! Incremental, zero-copy parser for client requests: RESP multibulk
//! (`*N\r\n$len\r\n...`) and inline commands (`SET k "v"\n`), following
//! Redis's `processMultibulkBuffer` / `processInlineBuffer` (networking.c).
//!
//! The parser is fed the unconsumed part of the connection's read buffer. It
//! returns [`Parsed::Request`] with the number of bytes the request used; the
//! arguments are then available as [`Args`], which borrow either the read
//! buffer (multibulk, no copy) or a per-connection scratch buffer (inline,
//! where quotes and escapes must be decoded). A request cut at any byte makes
//! the parser return [`Parsed::Incomplete`] and remember how far it got, so
//! a multibulk of a million arguments arriving in small reads is not re-parsed
//! from the start every time.
//!
//! A bulk string of at least [`BIG_ARG`] bytes is received into an
//! allocation of its own, reserved at its declared length as soon as its
//! header is parsed (Redis's big-argument handling in
//! `processMultibulkBuffer`): the read buffer stays small, nothing is
//! copied twice, and SET keeps that allocation as the stored value.
//!
//! Limits, as in Redis 7.0: a multibulk count above INT_MAX is "invalid
//! multibulk length" (7.0 accepts any count up to INT_MAX; only the
//! argument slots actually received are allocated); a bulk length above
//! `proto-max-bulk-len` is "invalid bulk length"; before authentication a
//! count above 10 or a bulk length above 16384 is refused with
//! "unauthenticated multibulk/bulk length" (Redis 7.0.13+); an inline line
//! or a length line longer than 64 KiB without
//! its newline is "too big inline request" / "too big mbulk count string" /
//! "too big bulk count string". Nothing is allocated for a length before it
//! has been checked against its limit.

use bytes::Bytes;

/// Longest inline request or length line without a newline (Redis's
/// PROTO_INLINE_MAX_SIZE), in bytes.
pub const PROTO_INLINE_MAX_SIZE: usize = 64 * 1024;
/// Largest multibulk argument count accepted (Redis 7.0: INT_MAX; older
/// versions refused counts above 1024*1024).
pub const PROTO_MAX_MULTIBULK: i64 = i32::MAX as i64;
/// Largest multibulk count accepted before authentication.
pub const UNAUTH_MAX_MULTIBULK: i64 = 10;
/// Largest bulk length accepted before authentication.
pub const UNAUTH_MAX_BULK: i64 = 16384;

/// A protocol error; the text is what follows "-ERR Protocol error: ".
/// After replying with it the connection is closed, as Redis does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    /// `*` count unparsable or above [`PROTO_MAX_MULTIBULK`].
    InvalidMultibulkLength,
    /// `$` length unparsable, negative or above proto-max-bulk-len.
    InvalidBulkLength,
    /// A byte other than `$` where a bulk string header was expected.
    ExpectedDollar(u8),
    /// Inline request with unbalanced quotes.
    UnbalancedQuotes,
    /// Inline request over 64 KiB without a newline.
    TooBigInline,
    /// `*` line over 64 KiB without CRLF.
    TooBigMbulkCount,
    /// `$` line over 64 KiB without CRLF.
    TooBigBulkCount,
    /// `*` count above 10 before authentication.
    UnauthenticatedMultibulkLength,
    /// `$` length above 16384 before authentication.
    UnauthenticatedBulkLength,
}

impl ProtocolError {
    /// The full error reply line as bytes, without the trailing CRLF: as
    /// [`Self::message`], except that the byte of `ExpectedDollar` is sent
    /// raw (Redis formats it with `%c`; a byte >= 0x80 is not UTF-8).
    pub fn message_bytes(&self) -> Vec<u8> {
        match self {
            ProtocolError::ExpectedDollar(c) => {
                let mut v = b"ERR Protocol error: expected '$', got '".to_vec();
                v.push(*c);
                v.push(b'\'');
                v
            }
            other => other.message().into_bytes(),
        }
    }

    /// The full error reply line, without the trailing CRLF.
    pub fn message(&self) -> String {
        let detail = match self {
            ProtocolError::InvalidMultibulkLength => "invalid multibulk length".to_string(),
            ProtocolError::InvalidBulkLength => "invalid bulk length".to_string(),
            ProtocolError::ExpectedDollar(c) => format!("expected '$', got '{}'", *c as char),
            ProtocolError::UnbalancedQuotes => "unbalanced quotes in request".to_string(),
            ProtocolError::TooBigInline => "too big inline request".to_string(),
            ProtocolError::TooBigMbulkCount => "too big mbulk count string".to_string(),
            ProtocolError::TooBigBulkCount => "too big bulk count string".to_string(),
            ProtocolError::UnauthenticatedMultibulkLength => {
                "unauthenticated multibulk length".to_string()
            }
            ProtocolError::UnauthenticatedBulkLength => "unauthenticated bulk length".to_string(),
        };
        format!("ERR Protocol error: {detail}")
    }
}

/// Outcome of one parse attempt.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A complete request used this many bytes; its arguments are in the
    /// parser (see [`RequestParser::args`]). Zero arguments means an empty
    /// request (`*0`, `*-1`, a blank inline line) that gets no reply.
    Request(usize),
    /// More bytes are needed.
    Incomplete,
}

/// Where the arguments of the last request live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    ReadBuffer,
    Scratch,
}

/// Per-connection request parser state. Reused across requests, so a
/// connection allocates only when a request has more arguments than any
/// before it.
#[derive(Debug)]
pub struct RequestParser {
    /// (start, end) of each argument: in the read buffer (relative to the
    /// request's first byte) or in `scratch`.
    ranges: Vec<(u32, u32)>,
    scratch: Vec<u8>,
    source: Source,
    /// In-progress multibulk: arguments still expected; 0 = none in progress.
    remaining: usize,
    /// In-progress multibulk: offset of the next unparsed byte.
    offset: usize,
    /// Length of the bulk string whose header was parsed, if any.
    bulk_len: Option<usize>,
    /// Big bulk strings of the request being parsed (or just parsed), each
    /// in its own allocation.
    big: Vec<Bytes>,
    /// The big bulk string being received, allocated at its exact length
    /// when its header was parsed: bytes found in the read buffer are
    /// copied in (and skipped there), and the connection reads straight
    /// into it when the read buffer holds nothing more
    /// ([`RequestParser::big_read_target`]).
    fill: Vec<u8>,
    /// Length of the bulk string in `fill` (0 = none in progress).
    fill_len: usize,
    /// Bytes of the current request's big bulk strings that were copied
    /// out of the read buffer and are still there (skipped), so that
    /// [`RequestParser::big_buffered`] does not count them twice.
    copied: usize,
    /// Largest reservation made for a big bulk string (a declared length,
    /// bounded by proto-max-bulk-len): what a fuzz harness may allow beyond
    /// the input's own size.
    big_reserved_peak: usize,
    /// proto-max-bulk-len in bytes.
    pub max_bulk_len: u64,
    /// True while the connection must still authenticate: request sizes are
    /// then capped (see [`UNAUTH_MAX_MULTIBULK`], [`UNAUTH_MAX_BULK`]).
    pub unauthenticated: bool,
}

impl Default for RequestParser {
    fn default() -> Self {
        Self::new(512 * 1024 * 1024)
    }
}

/// The arguments of one request: argv[0] is the command name.
///
/// Most arguments are `(start, end)` ranges of one buffer (the read buffer,
/// the inline scratch or a MULTI copy); a big bulk string (at least
/// [`BIG_ARG`] bytes) lives in its own allocation ([`Args::shared`]), marked
/// by a range starting at `u32::MAX` whose end is its index in `big`.
#[derive(Clone, Copy)]
pub struct Args<'a> {
    base: &'a [u8],
    ranges: &'a [(u32, u32)],
    big: &'a [Bytes],
}

/// A bulk string at least this long is received into an allocation of its
/// own, of exactly its size, which a command can keep as the stored value
/// without copying it (Redis's PROTO_MBULK_BIG_ARG, networking.c).
pub const BIG_ARG: usize = 32 * 1024;

/// First reservation of a big bulk string when transparent huge pages are
/// allowed (see [`RequestParser::big_read_target`]).
const SLOW_FILL_START: usize = 64 * 1024;

/// The range marker of an argument held in [`Args::shared`] storage.
const BIG_MARK: u32 = u32::MAX;

impl<'a> Args<'a> {
    /// Builds arguments over `base` with explicit ranges (tests, MULTI queue).
    pub fn new(base: &'a [u8], ranges: &'a [(u32, u32)]) -> Self {
        Args {
            base,
            ranges,
            big: &[],
        }
    }

    /// Argument `i` as a shared handle on its own allocation, when it is a
    /// big bulk string (at least [`BIG_ARG`] bytes received on its own);
    /// None for the others, which live inside a shared buffer.
    pub fn shared(&self, i: usize) -> Option<Bytes> {
        let (s, e) = self.ranges[i];
        (s == BIG_MARK).then(|| self.big[e as usize].clone())
    }

    /// Number of arguments including the command name.
    #[inline]
    pub fn len(&self) -> usize {
        self.ranges.len()
    }
    /// True for an empty request.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
    /// Argument `i` (panics when out of range; dispatch checks arity first).
    #[inline]
    pub fn get(&self, i: usize) -> &'a [u8] {
        let (s, e) = self.ranges[i];
        if s == BIG_MARK {
            return &self.big[e as usize];
        }
        &self.base[s as usize..e as usize]
    }
    /// The arguments from index `from` on (at most [`Self::len`]), as a
    /// request of their own: ACL DRYRUN and COMMAND GETKEYS inspect the
    /// request given as their arguments.
    pub fn tail(&self, from: usize) -> Args<'a> {
        Args {
            base: self.base,
            ranges: &self.ranges[from.min(self.ranges.len())..],
            big: self.big,
        }
    }
    /// The first `n` arguments (at most [`Self::len`]), as a request of
    /// their own (a script's keys).
    pub fn head(&self, n: usize) -> Args<'a> {
        Args {
            base: self.base,
            ranges: &self.ranges[..n.min(self.ranges.len())],
            big: self.big,
        }
    }
    /// Iterates over all arguments.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + Clone + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }
    /// Copies the arguments into owned vectors (MULTI queue, MONITOR).
    pub fn to_vec(&self) -> Vec<Vec<u8>> {
        self.iter().map(|a| a.to_vec()).collect()
    }
}

/// Owned request arguments, for requests that must outlive the read buffer.
#[derive(Debug, Clone, Default)]
pub struct OwnedArgs {
    data: Vec<u8>,
    ranges: Vec<(u32, u32)>,
    big: Vec<Bytes>,
}

impl OwnedArgs {
    /// Copies `args` (big bulk strings are shared, not copied).
    pub fn from_args(args: &Args<'_>) -> Self {
        let mut o = OwnedArgs::default();
        for i in 0..args.len() {
            match args.shared(i) {
                Some(b) => {
                    o.ranges.push((BIG_MARK, o.big.len() as u32));
                    o.big.push(b);
                }
                None => o.push(args.get(i)),
            }
        }
        o
    }
    /// Appends one argument.
    pub fn push(&mut self, a: &[u8]) {
        let s = self.data.len() as u32;
        self.data.extend_from_slice(a);
        self.ranges.push((s, self.data.len() as u32));
    }
    /// Borrowed view.
    pub fn args(&self) -> Args<'_> {
        Args {
            base: &self.data,
            ranges: &self.ranges,
            big: &self.big,
        }
    }
}

impl RequestParser {
    /// A parser enforcing `max_bulk_len` (proto-max-bulk-len, bytes).
    pub fn new(max_bulk_len: u64) -> Self {
        RequestParser {
            ranges: Vec::with_capacity(8),
            scratch: Vec::new(),
            source: Source::ReadBuffer,
            remaining: 0,
            offset: 0,
            bulk_len: None,
            big: Vec::new(),
            fill: Vec::new(),
            fill_len: 0,
            copied: 0,
            big_reserved_peak: 0,
            max_bulk_len,
            unauthenticated: false,
        }
    }

    /// The arguments of the request last returned by [`Self::parse`]; `buf`
    /// must be the same slice that was passed to `parse`.
    #[inline]
    pub fn args<'a>(&'a self, buf: &'a [u8]) -> Args<'a> {
        match self.source {
            Source::ReadBuffer => Args {
                base: buf,
                ranges: &self.ranges,
                big: &self.big,
            },
            Source::Scratch => Args {
                base: &self.scratch,
                ranges: &self.ranges,
                big: &[],
            },
        }
    }

    /// Drops the parser's handles on the last request's big bulk strings
    /// (call once the request has been executed: a command that stored one
    /// keeps the only reference).
    #[inline]
    pub fn release_big(&mut self) {
        if !self.big.is_empty() {
            self.big.clear();
        }
    }

    /// Gives back the memory of large argument tables (an idle
    /// connection; a request in progress keeps its state).
    pub fn shrink(&mut self) {
        if self.remaining == 0 {
            if self.ranges.capacity() > 64 {
                self.ranges = Vec::with_capacity(8);
            }
            self.scratch = Vec::new();
        }
    }

    /// The largest length reserved for a big bulk string so far: Redis
    /// reserves a big argument's declared length (at most
    /// proto-max-bulk-len) when its header arrives, and so does this
    /// parser; everything else it allocates is bounded by its input.
    pub fn big_reserved_peak(&self) -> usize {
        self.big_reserved_peak
    }

    /// Bytes of the request in progress held outside the read buffer (big
    /// bulk strings received so far), for client-query-buffer-limit and
    /// CLIENT LIST `qbuf`.
    pub fn big_buffered(&self) -> usize {
        (self.fill.len() + self.big.iter().map(|b| b.len()).sum::<usize>())
            .saturating_sub(self.copied)
    }

    /// While a big bulk string is being received: (bytes of the read buffer
    /// parsed before its data, which Redis has moved out of the query
    /// buffer into the arguments; bytes it still expects, its declared
    /// length less what arrived, which Redis reserved when the header was
    /// read). (0, 0) otherwise. For CLIENT LIST `qbuf` / `qbuf-free` and the
    /// client's memory.
    pub fn big_progress(&self) -> (usize, usize) {
        if self.fill_len == 0 {
            return (0, 0);
        }
        (
            self.offset.saturating_sub(self.copied),
            self.fill_len.saturating_sub(self.fill.len()),
        )
    }

    /// Where the next read should go: the big bulk string being received,
    /// when the read buffer holds nothing past what was parsed
    /// (`unparsed` = bytes of the read buffer from the request's start) and
    /// the string still needs bytes. Reading there moves each byte once.
    pub fn big_read_target(&mut self, unparsed: usize) -> Option<&mut Vec<u8>> {
        if self.fill_len > 0 && self.fill.len() < self.fill_len && unparsed <= self.offset {
            self.reserve_fill(self.fill.len() + 1);
            Some(&mut self.fill)
        } else {
            None
        }
    }

    /// Makes room for `total` bytes of the big bulk string being received,
    /// never beyond its length. Reserved in full when its header arrived,
    /// except with transparent huge pages allowed, where it starts at
    /// [`SLOW_FILL_START`] and at least doubles up to its length (a client
    /// trickling a declared 512 MB would otherwise pin a 2 MiB page).
    fn reserve_fill(&mut self, total: usize) {
        let cap = self.fill.capacity();
        if total > cap {
            let want = total.max(cap.saturating_mul(2)).min(self.fill_len);
            self.fill.reserve_exact(want - self.fill.len());
        }
    }

    /// Bytes the in-progress request still needs in the buffer, when a large
    /// bulk string is being received (so the caller can reserve once).
    pub fn pending_bulk_bytes(&self) -> Option<usize> {
        self.bulk_len
            .map(|l| self.offset + l + 2)
            .filter(|&n| n >= 32 * 1024)
    }

    /// Parses one request from `buf`, which starts at the first unconsumed
    /// byte (the start of the request in progress, if any).
    pub fn parse(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        if self.remaining == 0 {
            if buf.is_empty() {
                return Ok(Parsed::Incomplete);
            }
            if buf[0] != b'*' {
                return self.parse_inline(buf);
            }
            // Multibulk header.
            let Some(cr) = find_cr(buf) else {
                if buf.len() > PROTO_INLINE_MAX_SIZE {
                    return Err(ProtocolError::TooBigMbulkCount);
                }
                return Ok(Parsed::Incomplete);
            };
            if cr + 2 > buf.len() {
                return Ok(Parsed::Incomplete);
            }
            let n = match parse_len(&buf[1..cr]) {
                Some(n) if n <= PROTO_MAX_MULTIBULK => n,
                _ => return Err(ProtocolError::InvalidMultibulkLength),
            };
            if n > UNAUTH_MAX_MULTIBULK && self.unauthenticated {
                return Err(ProtocolError::UnauthenticatedMultibulkLength);
            }
            self.ranges.clear();
            self.release_big();
            self.source = Source::ReadBuffer;
            if n <= 0 {
                return Ok(Parsed::Request(cr + 2));
            }
            self.remaining = n as usize;
            self.offset = cr + 2;
            self.bulk_len = None;
            // Reserve for small requests only; a huge count could be a lie.
            self.ranges.reserve((n as usize).min(1024));
        }
        if self.fill_len > 0 && !self.continue_fill(buf) {
            return Ok(Parsed::Incomplete);
        }
        while self.remaining > 0 {
            let len = match self.bulk_len {
                Some(l) => l,
                None => {
                    let rest = &buf[self.offset..];
                    let Some(cr) = find_cr(rest) else {
                        if rest.len() > PROTO_INLINE_MAX_SIZE {
                            return Err(ProtocolError::TooBigBulkCount);
                        }
                        return Ok(Parsed::Incomplete);
                    };
                    if cr + 2 > rest.len() {
                        return Ok(Parsed::Incomplete);
                    }
                    if rest[0] != b'$' {
                        return Err(ProtocolError::ExpectedDollar(rest[0]));
                    }
                    let l = match parse_len(&rest[1..cr]) {
                        Some(l) if l >= 0 && (l as u64) <= self.max_bulk_len => l as usize,
                        _ => return Err(ProtocolError::InvalidBulkLength),
                    };
                    if l as i64 > UNAUTH_MAX_BULK && self.unauthenticated {
                        return Err(ProtocolError::UnauthenticatedBulkLength);
                    }
                    self.offset += cr + 2;
                    if l >= BIG_ARG {
                        // Its own allocation, reserved in full as Redis
                        // does; when the system refuses it, the string
                        // grows in the read buffer instead.
                        let mut v = Vec::new();
                        let first = if crate::memory::thp_allowed() {
                            l.min(SLOW_FILL_START)
                        } else {
                            l
                        };
                        if v.try_reserve_exact(first).is_ok() {
                            self.big_reserved_peak = self.big_reserved_peak.max(l);
                            self.fill = v;
                            self.fill_len = l;
                            if !self.continue_fill(buf) {
                                return Ok(Parsed::Incomplete);
                            }
                            continue;
                        }
                    }
                    self.bulk_len = Some(l);
                    l
                }
            };
            if buf.len() < self.offset + len + 2 {
                return Ok(Parsed::Incomplete);
            }
            let start = self.offset;
            self.ranges.push((start as u32, (start + len) as u32));
            self.offset += len + 2;
            self.bulk_len = None;
            self.remaining -= 1;
        }
        let used = self.offset;
        self.offset = 0;
        self.copied = 0;
        Ok(Parsed::Request(used))
    }

    /// Moves what `buf` holds of the big bulk string being received into
    /// its allocation; true once it is complete with its CRLF (the
    /// argument is then added), false when more bytes are needed.
    fn continue_fill(&mut self, buf: &[u8]) -> bool {
        let need = self.fill_len - self.fill.len();
        let n = need.min(buf.len().saturating_sub(self.offset));
        self.reserve_fill(self.fill.len() + n);
        self.fill
            .extend_from_slice(&buf[self.offset..self.offset + n]);
        self.offset += n;
        self.copied += n;
        if self.fill.len() < self.fill_len || buf.len() < self.offset + 2 {
            return false;
        }
        self.offset += 2;
        self.fill_len = 0;
        self.ranges.push((BIG_MARK, self.big.len() as u32));
        self.big.push(Bytes::from(std::mem::take(&mut self.fill)));
        self.remaining -= 1;
        true
    }

    fn parse_inline(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        // Redis finds the end of the line with strchr(), which stops at a NUL
        // byte: a NUL before the newline makes the request look incomplete,
        // so it waits for more bytes until the 64 KiB inline limit.
        let nl = memchr(b'\n', buf).filter(|&nl| memchr::memchr(0, &buf[..nl]).is_none());
        let Some(nl) = nl else {
            if buf.len() > PROTO_INLINE_MAX_SIZE {
                return Err(ProtocolError::TooBigInline);
            }
            return Ok(Parsed::Incomplete);
        };
        let mut line = &buf[..nl];
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        self.ranges.clear();
        self.scratch.clear();
        self.source = Source::Scratch;
        split_args(line, &mut self.scratch, &mut self.ranges)?;
        Ok(Parsed::Request(nl + 1))
    }
}

/// Finds the second argument (the key of most commands) of the multibulk
/// request at the start of `buf`, without validating or storing anything:
/// returns `(key start, key end, request length)` in bytes, or None when
/// the request is incomplete, has fewer than two arguments, or departs from
/// the plain `*N\r\n` + `$len\r\n<bytes>\r\n` shape (the real parser
/// then decides). The connection uses it to prefetch the keys of the
/// requests that follow the one being executed in a pipelined batch.
pub fn peek_key(buf: &[u8]) -> Option<(usize, usize, usize)> {
    // A decimal of at most 10 digits after `tag`, ending in CRLF: (value,
    // position after the CRLF).
    fn line(buf: &[u8], at: usize, tag: u8) -> Option<(usize, usize)> {
        if *buf.get(at)? != tag {
            return None;
        }
        let mut v = 0usize;
        let mut i = at + 1;
        loop {
            let c = *buf.get(i)?;
            if c == b'\r' {
                break;
            }
            let d = c.wrapping_sub(b'0');
            if d > 9 || i - at > 10 {
                return None;
            }
            v = v * 10 + d as usize;
            i += 1;
        }
        (i > at + 1 && *buf.get(i + 1)? == b'\n').then_some((v, i + 2))
    }
    let (n, mut at) = line(buf, 0, b'*')?;
    if !(2..=1024).contains(&n) {
        return None;
    }
    let mut key = (0, 0);
    for i in 0..n {
        let (len, start) = line(buf, at, b'$')?;
        let end = start.checked_add(len)?;
        if end + 2 > buf.len() {
            return None;
        }
        if i == 1 {
            key = (start, end);
        }
        at = end + 2;
    }
    Some((key.0, key.1, at))
}

/// The CR ending a `*` or `$` length line. Redis finds it with strchr(),
/// which stops at a NUL byte: a NUL before the CR leaves the line
/// "incomplete" (None), up to the 64 KiB limit.
#[inline]
fn find_cr(s: &[u8]) -> Option<usize> {
    let head = s.len().min(24);
    for (i, &b) in s[..head].iter().enumerate() {
        if b == b'\r' {
            return Some(i);
        }
        if b == 0 {
            return None;
        }
    }
    let i = memchr::memchr2(b'\r', 0, &s[head..])? + head;
    (s[i] == b'\r').then_some(i)
}

#[inline]
fn memchr(c: u8, s: &[u8]) -> Option<usize> {
    // Length lines ("$3\r\n") are short: a plain scan of the first bytes
    // beats the SIMD search's set-up; longer inputs use memchr.
    let head = s.len().min(24);
    for (i, &b) in s[..head].iter().enumerate() {
        if b == c {
            return Some(i);
        }
    }
    memchr::memchr(c, &s[head..]).map(|i| i + head)
}

/// A `*` or `$` length with string2ll's rules; the common case (1 to 18
/// digits, no sign, no leading zero) takes a short loop without overflow
/// checks.
#[inline]
fn parse_len(s: &[u8]) -> Option<i64> {
    if !s.is_empty() && s.len() <= 18 && (s[0] != b'0' || s.len() == 1) {
        let mut v: i64 = 0;
        let mut ok = true;
        for &c in s {
            let d = c.wrapping_sub(b'0');
            ok &= d < 10;
            v = v.wrapping_mul(10).wrapping_add(d as i64);
        }
        if ok {
            return Some(v);
        }
    }
    crate::util::parse_len(s)
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c)
}

fn hex_val(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Splits an inline request line into arguments with the quoting rules of
/// Redis's `sdssplitargs` (sds.c): double quotes take `\xHH`, `\n`, `\r`,
/// `\t`, `\b`, `\a` and `\<char>` escapes; single quotes are literal except
/// `\'`; a closing quote must be followed by a space or the end.
pub fn split_args(
    line: &[u8],
    out: &mut Vec<u8>,
    ranges: &mut Vec<(u32, u32)>,
) -> Result<(), ProtocolError> {
    // sdssplitargs reads a C string: a NUL byte ends the input.
    let line = match memchr::memchr(0, line) {
        Some(z) => &line[..z],
        None => line,
    };
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && is_space(line[i]) {
            i += 1;
        }
        if i >= n {
            return Ok(());
        }
        let start = out.len();
        let (mut inq, mut insq) = (false, false);
        loop {
            if inq {
                if i >= n {
                    return Err(ProtocolError::UnbalancedQuotes);
                }
                let c = line[i];
                if c == b'\\'
                    && i + 3 < n
                    && line[i + 1] == b'x'
                    && hex_val(line[i + 2]).is_some()
                    && hex_val(line[i + 3]).is_some()
                {
                    out.push(
                        hex_val(line[i + 2]).unwrap_or(0) * 16 + hex_val(line[i + 3]).unwrap_or(0),
                    );
                    i += 3;
                } else if c == b'\\' && i + 1 < n {
                    i += 1;
                    out.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return Err(ProtocolError::UnbalancedQuotes);
                    }
                    i += 1;
                    break;
                } else {
                    out.push(c);
                }
            } else if insq {
                if i >= n {
                    return Err(ProtocolError::UnbalancedQuotes);
                }
                let c = line[i];
                if c == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                    i += 1;
                    out.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return Err(ProtocolError::UnbalancedQuotes);
                    }
                    i += 1;
                    break;
                } else {
                    out.push(c);
                }
            } else {
                if i >= n {
                    break;
                }
                match line[i] {
                    b' ' | b'\n' | b'\r' | b'\t' => {
                        break;
                    }
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    c => out.push(c),
                }
            }
            i += 1;
        }
        ranges.push((start as u32, out.len() as u32));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        let mut p = RequestParser::default();
        let mut pos = 0;
        let mut out = Vec::new();
        loop {
            match p.parse(&input[pos..])? {
                Parsed::Request(n) => {
                    let args = p.args(&input[pos..]);
                    if !args.is_empty() {
                        out.push(args.to_vec());
                    }
                    pos += n;
                }
                Parsed::Incomplete => return Ok(out),
            }
        }
    }

    /// Feeds `input` split at `cut`, the way a connection does: the buffer
    /// grows, consumed requests are removed from its front.
    fn parse_split(input: &[u8], cuts: &[usize]) -> Vec<Vec<Vec<u8>>> {
        let mut p = RequestParser::default();
        let mut buf: Vec<u8> = Vec::new();
        let mut out = Vec::new();
        let mut last = 0;
        for &c in cuts.iter().chain(std::iter::once(&input.len())) {
            buf.extend_from_slice(&input[last..c]);
            last = c;
            while let Parsed::Request(n) = p.parse(&buf).expect("valid") {
                let args = p.args(&buf);
                if !args.is_empty() {
                    out.push(args.to_vec());
                }
                buf.drain(..n);
            }
        }
        out
    }

    #[test]
    fn multibulk_and_inline() {
        let r = parse_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n*0\r\n*-1\r\n").unwrap();
        assert_eq!(
            r,
            vec![vec![b"GET".to_vec(), b"k".to_vec()], vec![b"PING".to_vec()]]
        );
    }

    #[test]
    fn every_split_point() {
        let input: &[u8] =
            b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$10\r\nabc\r\n\r\nxyz\r\nPING\r\n*1\r\n$4\r\nPING\r\n";
        let whole = parse_split(input, &[]);
        assert_eq!(whole.len(), 3);
        for i in 0..input.len() {
            assert_eq!(parse_split(input, &[i]), whole, "split at {i}");
            for j in i..input.len() {
                assert_eq!(parse_split(input, &[i, j]), whole, "split at {i},{j}");
            }
        }
    }

    /// Big bulk strings (BIG_ARG bytes or more) arrive in their own
    /// allocation whatever the split, whether their bytes come through the
    /// read buffer or are read straight into it, and are counted once.
    #[test]
    fn big_bulk_strings_own_their_allocation() {
        let big: Vec<u8> = (0..BIG_ARG + 7).map(|i| (i % 251) as u8).collect();
        let mut input = format!("*4\r\n$4\r\nMSET\r\n$1\r\nk\r\n${}\r\n", big.len()).into_bytes();
        input.extend_from_slice(&big);
        input.extend_from_slice(b"\r\n$2\r\nxy\r\nPING\r\n");
        let want = vec![
            vec![b"MSET".to_vec(), b"k".to_vec(), big.clone(), b"xy".to_vec()],
            vec![b"PING".to_vec()],
        ];
        let header = input.len() - big.len() - 16;
        for cut in [
            1,
            header - 1,
            header,
            header + 1,
            header + 5000,
            input.len() - 12,
            input.len() - 11,
        ] {
            assert_eq!(parse_split(&input, &[cut]), want, "split at {cut}");
        }
        // Straight into the allocation: the connection's path.
        let mut p = RequestParser::default();
        let mut buf = input[..header + 100].to_vec();
        assert_eq!(p.parse(&buf), Ok(Parsed::Incomplete));
        assert_eq!(
            p.big_buffered(),
            0,
            "the 100 bytes are counted in the buffer"
        );
        let fill = p
            .big_read_target(buf.len())
            .expect("reads go to the big string");
        let rest = &input[header + 100..header + big.len()];
        fill.extend_from_slice(rest);
        assert_eq!(p.big_buffered(), big.len() - 100);
        assert!(p.big_read_target(buf.len()).is_none(), "complete");
        assert_eq!(p.parse(&buf), Ok(Parsed::Incomplete), "CRLF not here yet");
        buf.extend_from_slice(&input[header + big.len()..]);
        let Ok(Parsed::Request(n)) = p.parse(&buf) else {
            panic!("request")
        };
        let args = p.args(&buf);
        assert_eq!(args.get(2), &big[..]);
        assert_eq!(args.shared(2).as_deref(), Some(&big[..]));
        assert!(args.shared(1).is_none());
        assert_eq!(args.get(3), b"xy");
        let owned = OwnedArgs::from_args(&args);
        assert_eq!(owned.args().to_vec(), want[0]);
        assert!(owned.args().shared(2).is_some());
        p.release_big();
        assert_eq!(p.big_buffered(), 0);
        assert_eq!(p.parse(&buf[n..]), Ok(Parsed::Request(6)));
    }

    #[test]
    fn protocol_errors() {
        assert_eq!(
            parse_all(b"*x\r\n"),
            Err(ProtocolError::InvalidMultibulkLength)
        );
        assert_eq!(
            parse_all(b"*2147483648\r\n"),
            Err(ProtocolError::InvalidMultibulkLength)
        );
        // Redis 7.0 accepts large counts (up to INT_MAX) and waits for them.
        assert_eq!(parse_all(b"*1048577\r\n"), Ok(vec![]));
        assert_eq!(
            parse_all(b"*1\r\n$-1\r\n"),
            Err(ProtocolError::InvalidBulkLength)
        );
        assert_eq!(
            parse_all(b"*1\r\n$536870913\r\n"),
            Err(ProtocolError::InvalidBulkLength)
        );
        assert_eq!(
            parse_all(b"*1\r\nx3\r\n"),
            Err(ProtocolError::ExpectedDollar(b'x'))
        );
        assert_eq!(
            parse_all(b"SET a \"b\"c\r\n"),
            Err(ProtocolError::UnbalancedQuotes)
        );
        let big = vec![b'a'; PROTO_INLINE_MAX_SIZE + 1];
        assert_eq!(parse_all(&big), Err(ProtocolError::TooBigInline));
        let mut mb = b"*".to_vec();
        mb.extend(vec![b'1'; PROTO_INLINE_MAX_SIZE + 1]);
        assert_eq!(parse_all(&mb), Err(ProtocolError::TooBigMbulkCount));
    }

    #[test]
    fn unauthenticated_limits() {
        let unauth = || RequestParser {
            unauthenticated: true,
            ..Default::default()
        };
        let mut p = unauth();
        assert_eq!(
            p.parse(b"*11\r\n"),
            Err(ProtocolError::UnauthenticatedMultibulkLength)
        );
        let mut p = unauth();
        assert_eq!(p.parse(b"*10\r\n$16384\r\n"), Ok(Parsed::Incomplete));
        let mut p = unauth();
        assert_eq!(
            p.parse(b"*1\r\n$16385\r\n"),
            Err(ProtocolError::UnauthenticatedBulkLength)
        );
    }

    #[test]
    fn inline_nul_byte() {
        // A NUL before the newline: incomplete, as Redis's strchr() sees it
        // (this used to loop forever pushing empty arguments).
        let mut p = RequestParser::default();
        assert_eq!(
            p.parse(b"'' \x00 \"a b\"\r\nPING\r\n"),
            Ok(Parsed::Incomplete)
        );
        let mut big = b"PING \x00\n".to_vec();
        big.extend(vec![b'a'; PROTO_INLINE_MAX_SIZE]);
        assert_eq!(p.parse(&big), Err(ProtocolError::TooBigInline));
        // split_args (also used for config lines) stops at a NUL.
        let (mut out, mut ranges) = (Vec::new(), Vec::new());
        split_args(b"a \x00 b", &mut out, &mut ranges).unwrap();
        assert_eq!(ranges.len(), 1);
        assert_eq!(
            split_args(b"\"a\x00\"", &mut out, &mut ranges),
            Err(ProtocolError::UnbalancedQuotes)
        );
    }

    #[test]
    fn nul_in_length_line_waits() {
        let mut p = RequestParser::default();
        assert_eq!(p.parse(b"*\x00\r\n$1\r\n"), Ok(Parsed::Incomplete));
        let mut p = RequestParser::default();
        assert_eq!(p.parse(b"*1\r\n$\x001\r\na\r\n"), Ok(Parsed::Incomplete));
        let mut big = b"*1\r\n$\x00".to_vec();
        big.extend(vec![b'1'; PROTO_INLINE_MAX_SIZE + 1]);
        let mut p = RequestParser::default();
        assert_eq!(p.parse(&big), Err(ProtocolError::TooBigBulkCount));
        // A NUL after the CR (in the data) is fine.
        assert_eq!(
            parse_all(b"*1\r\n$3\r\n\x00\r\n\r\n").unwrap(),
            vec![vec![b"\x00\r\n".to_vec()]]
        );
    }

    #[test]
    fn inline_quoting() {
        let r = parse_all(b"SET k \"a b\\x41\\n\"\r\nECHO 'x\\ny'\nECHO \"\"\n").unwrap();
        assert_eq!(
            r[0],
            vec![b"SET".to_vec(), b"k".to_vec(), b"a bA\n".to_vec()]
        );
        assert_eq!(r[1], vec![b"ECHO".to_vec(), b"x\\ny".to_vec()]);
        assert_eq!(r[2], vec![b"ECHO".to_vec(), b"".to_vec()]);
    }

    /// peek_key agrees with the real parser whenever both accept a request
    /// (never claims a complete request the parser finds incomplete), and never
    /// panics on mangled input (seeded random truncations and byte flips of
    /// pipelines).
    #[test]
    fn peek_key_agrees_with_the_parser() {
        let base = b"*2\r\n$3\r\nGET\r\n$5\r\nkey:1\r\n*3\r\n$3\r\nSET\r\n$2\r\nkk\r\n$0\r\n\r\n*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINCR\r\n$0\r\n\r\nPING\r\n";
        assert_eq!(peek_key(base), Some((17, 22, 24)));
        assert_eq!(peek_key(&base[..23]), None);
        assert_eq!(peek_key(b"*1\r\n$4\r\nPING\r\n"), None);
        assert_eq!(peek_key(b"PING\r\n"), None);
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = move || {
            seed = crate::util::xorshift64(seed);
            seed
        };
        for _ in 0..20_000 {
            let mut buf = base.to_vec();
            let start = (rnd() % buf.len() as u64) as usize;
            let mut buf = buf.split_off(start);
            for _ in 0..rnd() % 3 {
                if buf.is_empty() {
                    break;
                }
                let i = (rnd() % buf.len() as u64) as usize;
                buf[i] = b"*$\r\n0123456789x"[(rnd() % 15) as usize];
            }
            buf.truncate((rnd() % (buf.len() as u64 + 1)) as usize);
            if let Some((ks, ke, len)) = peek_key(&buf) {
                let mut p = RequestParser::default();
                match p.parse(&buf) {
                    Ok(Parsed::Request(n)) => {
                        assert_eq!(n, len, "{:?}", String::from_utf8_lossy(&buf));
                        assert_eq!(p.args(&buf).get(1), &buf[ks..ke]);
                    }
                    // A length the real parser refuses (leading zero...):
                    // the prefetch was only a hint.
                    Err(_) => {}
                    other => panic!("{other:?} for {:?}", String::from_utf8_lossy(&buf)),
                }
            }
        }
    }
}
