//! Fuzz harnesses for ferrokv, shared by the cargo-fuzz targets
//! (`fuzz_targets/*.rs`, run with `cargo fuzz run <name>`) and by the stable
//! replay test (`tests/replay.rs`: every committed corpus file plus a
//! time-bounded random run, used in CI).
//!
//! Each harness takes arbitrary bytes and panics only on a bug: a panic in
//! ferrokv, a broken invariant (resumable parsing disagreeing with one-shot
//! parsing, an RDB that loads but does not survive a save/load round trip),
//! or an allocation beyond what the input and the configured limits allow
//! (measured by the counting global allocator below).

use arbitrary::{Arbitrary, Unstructured};
use ferrokv::clients::new_handle;
use ferrokv::cmd::client::{Client, ReplyMode};
use ferrokv::config::Config;
use ferrokv::resp::parse::{Parsed, ProtocolError, RequestParser, PROTO_INLINE_MAX_SIZE};
use ferrokv::resp::reply::Out;
use ferrokv::resp::OwnedArgs;
use ferrokv::server::Server;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::{Arc, OnceLock};

// ---------------------------------------------------------------------------
// Allocation accounting.

/// The global allocator of every harness binary: the system allocator plus
/// per-thread counters of live bytes, the peak since the last
/// [`measure_start`] and the largest single request.
pub struct CountingAlloc;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn account(delta: isize, request: usize) {
    // try_with: the thread-local may already be gone while a thread exits.
    let _ = LIVE.try_with(|l| {
        let v = l.get() + delta;
        l.set(v);
        let _ = PEAK.try_with(|p| {
            if v > p.get() {
                p.set(v)
            }
        });
    });
    let _ = LARGEST.try_with(|m| {
        if request > m.get() {
            m.set(request)
        }
    });
}

// SAFETY: every method forwards to System with the same layout and only
// updates plain thread-local counters (const-initialised, no allocation).
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            account(l.size() as isize, l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(l);
        if !p.is_null() {
            account(l.size() as isize, l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        account(-(l.size() as isize), 0);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = System.realloc(p, l, new);
        if !q.is_null() {
            account(new as isize - l.size() as isize, new);
        }
        q
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Resets this thread's peak and largest-request counters.
pub fn measure_start() {
    let live = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(live));
    LARGEST.with(|m| m.set(0));
}

/// (peak live bytes above the live bytes at [`measure_start`], largest
/// single allocation) of this thread since [`measure_start`].
pub fn measure_end(start_live: isize) -> (usize, usize) {
    let peak = PEAK.with(Cell::get) - start_live;
    (peak.max(0) as usize, LARGEST.with(Cell::get))
}

fn live_now() -> isize {
    LIVE.with(Cell::get)
}

/// Panics when the measured allocation exceeded `bound` bytes.
fn check_bound(what: &str, start_live: isize, bound: usize) {
    let (peak, largest) = measure_end(start_live);
    assert!(
        peak <= bound && largest <= bound,
        "{what}: allocation not bounded by the input: peak {peak} B, largest {largest} B, bound {bound} B"
    );
}

// ---------------------------------------------------------------------------
// resp_parse.

/// One parse outcome, owned: a request's arguments, or a protocol error.
#[derive(Debug, PartialEq, Eq)]
enum Event {
    Request(Vec<Vec<u8>>),
    Error(ProtocolError),
}

/// Parses `stream` as a connection would if it arrived all at once.
fn parse_one_shot(p: &mut RequestParser, stream: &[u8]) -> (Vec<Event>, usize) {
    let mut events = Vec::new();
    let mut pos = 0;
    loop {
        match p.parse(&stream[pos..]) {
            Ok(Parsed::Request(n)) => {
                assert!(n > 0 && pos + n <= stream.len(), "bad request length {n}");
                events.push(Event::Request(p.args(&stream[pos..]).to_vec()));
                pos += n;
            }
            Ok(Parsed::Incomplete) => return (events, pos),
            Err(e) => {
                events.push(Event::Error(e));
                return (events, pos);
            }
        }
    }
}

/// Parses `stream` arriving in reads whose sizes come from `sizes` (cycled):
/// the parser sees the unconsumed part of a growing buffer, as in
/// net/connection.rs.
fn parse_split(p: &mut RequestParser, stream: &[u8], sizes: &[u8]) -> (Vec<Event>, usize) {
    let mut events = Vec::new();
    let mut pos = 0;
    let mut avail = 0;
    let mut i = 0;
    loop {
        match p.parse(&stream[pos..avail]) {
            Ok(Parsed::Request(n)) => {
                assert!(n > 0 && pos + n <= avail, "bad request length {n}");
                events.push(Event::Request(p.args(&stream[pos..avail]).to_vec()));
                pos += n;
            }
            Ok(Parsed::Incomplete) => {
                if avail == stream.len() {
                    return (events, pos);
                }
                let step = sizes.get(i % sizes.len().max(1)).copied().unwrap_or(1);
                i += 1;
                avail = (avail + 1 + step as usize % 64).min(stream.len());
            }
            Err(e) => {
                events.push(Event::Error(e));
                return (events, pos);
            }
        }
    }
}

/// Harness `resp_parse`. Input: a control byte (bit 0: unauthenticated
/// limits; bits 1-2: proto-max-bulk-len of 16 B, 1 KiB, 1 MiB or 512 MiB),
/// a length byte `k` and `k` read sizes, then the byte stream. Checks: no
/// panic; parsing the stream in those reads gives the same requests, error
/// and consumed length as parsing it at once (streams up to 64 KiB, where
/// the inline limit cannot apply to one and not the other); the parser
/// allocates no more than a small multiple of the input.
pub fn resp_parse(data: &[u8]) {
    let (ctl, rest) = data.split_first().unwrap_or((&0, &[]));
    let (k, rest) = rest.split_first().unwrap_or((&0, &[]));
    let k = (*k as usize % 16).min(rest.len());
    let (sizes, stream) = rest.split_at(k);
    let max_bulk = [16u64, 1024, 1 << 20, 512 << 20][(*ctl as usize >> 1) & 3];
    let new_parser = || {
        let mut p = RequestParser::new(max_bulk);
        p.unauthenticated = ctl & 1 == 1;
        p
    };
    let live = live_now();
    measure_start();
    let mut a = new_parser();
    let (one, used_one) = parse_one_shot(&mut a, stream);
    let mut b = new_parser();
    let (split, used_split) = parse_split(&mut b, stream, sizes);
    // Only the parser's own allocations are bounded: the owned copies of
    // the events are at most the input size each. A big bulk string is
    // reserved at its declared length, as Redis does (bounded by
    // proto-max-bulk-len), by each of the two parsers.
    let reserved = a.big_reserved_peak() + b.big_reserved_peak();
    assert!(reserved as u64 <= 2 * max_bulk);
    check_bound(
        "resp_parse",
        live,
        64 * stream.len() + 256 * 1024 + reserved,
    );
    if stream.len() <= PROTO_INLINE_MAX_SIZE {
        assert_eq!(one, split, "split parsing differs from one-shot parsing");
        assert_eq!(used_one, used_split, "consumed lengths differ");
    }
    // A pending bulk reservation never exceeds the configured limit.
    if let Some(n) = b.pending_bulk_bytes() {
        assert!(n as u64 <= max_bulk + stream.len() as u64 + 2);
    }
}

// ---------------------------------------------------------------------------
// command_exec.

/// Keywords and values that reach option parsing in many commands.
const WORDS: &[&str] = &[
    "NX",
    "XX",
    "GT",
    "LT",
    "CH",
    "INCR",
    "EX",
    "PX",
    "EXAT",
    "PXAT",
    "KEEPTTL",
    "GET",
    "PERSIST",
    "WITHSCORES",
    "WITHSCORE",
    "LIMIT",
    "BYSCORE",
    "BYLEX",
    "REV",
    "COUNT",
    "MATCH",
    "TYPE",
    "LEFT",
    "RIGHT",
    "BEFORE",
    "AFTER",
    "RANK",
    "MAXLEN",
    "IDX",
    "LEN",
    "MINMATCHLEN",
    "WITHMATCHLEN",
    "WEIGHTS",
    "AGGREGATE",
    "SUM",
    "MIN",
    "MAX",
    "STORE",
    "BY",
    "GET",
    "ASC",
    "DESC",
    "ALPHA",
    "WITHVALUES",
    "ABSTTL",
    "REPLACE",
    "IDLETIME",
    "FREQ",
    "DB",
    "SYNC",
    "ASYNC",
    "STRING",
    "LIST",
    "SET",
    "ZSET",
    "HASH",
    "OBJECT",
    "ENCODING",
    "HELP",
    "RESET",
    "ON",
    "OFF",
    "SKIP",
    "YES",
    "NO",
    "NOSAVE",
    "MERGE",
    "BIT",
    "BYTE",
    "AND",
    "XOR",
    "NOT",
    "OVERFLOW",
    "WRAP",
    "SAT",
    "FAIL",
    "INCRBY",
    "u8",
    "i64",
    "u63",
    "#3",
    "*",
    "?",
    "[a-z]*",
    "h*llo",
    "\\",
    "#",
    "-",
    "+",
    "[a",
    "(a",
    "[z",
    "(",
    "[",
    "inf",
    "-inf",
    "+inf",
    "(1",
    "(-1",
    "nan",
    "1e308",
    "-0",
    "0.5",
    "-1.5",
    "3.0e-2",
    "0x10",
    " 1",
    "1 ",
    "",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "4294967296",
    "2147483648",
    "18446744073709551615",
    "maxmemory",
    "maxmemory-policy",
    "allkeys-lru",
    "hash-max-listpack-entries",
    "hash-max-listpack-value",
    "list-max-listpack-size",
    "set-max-intset-entries",
    "set-max-listpack-entries",
    "zset-max-listpack-entries",
    "zset-max-listpack-value",
    "proto-max-bulk-len",
    "lazyfree-lazy-user-del",
    "notify-keyspace-events",
    "KEA",
    "1mb",
    "default",
    "alice",
    ">pw",
    "nopass",
    "+@all",
    "~*",
    "&*",
    "allkeys",
    "resetkeys",
    "client-output-buffer-limit",
    "slowlog-log-slower-than",
    "timeout",
    "databases",
    "hz",
];

/// Commands the harness never runs: they stop the process, sleep, write
/// files in the working directory or replace the dataset from disk.
fn denied(argv: &[Vec<u8>]) -> bool {
    let lc = |i: usize| {
        argv.get(i)
            .map(|a| a.to_ascii_lowercase())
            .unwrap_or_default()
    };
    let name = lc(0);
    let sub = lc(1);
    match name.as_slice() {
        b"shutdown" | b"save" | b"bgsave" | b"bgrewriteaof" | b"failover" | b"replicaof"
        | b"slaveof" | b"sync" | b"psync" | b"monitor" | b"wait" => true,
        b"debug" => !matches!(
            sub.as_slice(),
            b"object"
                | b"help"
                | b"set-active-expire"
                | b"change-repl-id"
                | b"quicklist-packed-threshold"
        ),
        b"config" => match sub.as_slice() {
            b"rewrite" => true,
            b"set" => argv.iter().skip(2).step_by(2).any(|p| {
                let p = p.to_ascii_lowercase();
                [
                    &b"dir"[..],
                    b"dbfilename",
                    b"appendonly",
                    b"appendfilename",
                    b"appenddirname",
                    b"save",
                    b"logfile",
                    b"pidfile",
                    b"aclfile",
                    b"unixsocket",
                    b"port",
                    b"bind",
                    b"io-threads",
                    b"tls-port",
                ]
                .iter()
                .any(|d| p == *d)
            }),
            _ => false,
        },
        b"acl" => matches!(sub.as_slice(), b"save" | b"load"),
        _ => false,
    }
}

/// Command names from ferrokv's table: each top-level command, and each
/// container with each of its subcommands.
fn names() -> &'static [Vec<Vec<u8>>] {
    static NAMES: OnceLock<Vec<Vec<Vec<u8>>>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let t = ferrokv::cmd::table();
        let mut v = Vec::new();
        for c in t.top_level() {
            let name = c.name.as_bytes().to_vec();
            let id = t.id_of(c).unwrap_or(0);
            let subs = t.sub_ids(id);
            if subs.is_empty() {
                v.push(vec![name]);
            } else {
                for &s in subs {
                    let full = t.all[s].name;
                    let sub = full.rsplit('|').next().unwrap_or(full);
                    v.push(vec![name.clone(), sub.as_bytes().to_vec()]);
                }
            }
        }
        v
    })
}

/// A command name: mostly a real one.
#[derive(Debug)]
enum Name {
    Known(u16),
    Raw(Vec<u8>),
}

impl<'a> Arbitrary<'a> for Name {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(if u.ratio(1, 16)? {
            Name::Raw(Vec::arbitrary(u)?)
        } else {
            Name::Known(u16::arbitrary(u)?)
        })
    }
}

/// An argument, biased toward values commands interpret.
#[derive(Debug, Arbitrary)]
enum Arg {
    /// One of 8 keys (`k0`..`k7`), shared by all commands of a script.
    Key(u8),
    /// A small integer.
    Small(i8),
    /// Any integer.
    Wide(i64),
    /// A keyword or special value from [`WORDS`].
    Word(u8),
    /// Arbitrary bytes.
    Bytes(Vec<u8>),
    /// `len` copies of `byte` (large values: encoding conversions).
    Long(u16, u8),
    /// A float.
    Float(f64),
}

impl Arg {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Arg::Key(k) => format!("k{}", k % 8).into_bytes(),
            Arg::Small(n) => n.to_string().into_bytes(),
            Arg::Wide(n) => n.to_string().into_bytes(),
            Arg::Word(w) => WORDS[*w as usize % WORDS.len()].as_bytes().to_vec(),
            Arg::Bytes(b) => b.clone(),
            Arg::Long(n, b) => vec![*b; *n as usize],
            Arg::Float(f) => f.to_string().into_bytes(),
        }
    }
}

/// One command of a script.
#[derive(Debug, Arbitrary)]
struct Command {
    name: Name,
    args: Vec<Arg>,
}

/// A script: commands run in order by one client (`resp3`: after HELLO 3),
/// sometimes a second client interleaved (`second`: which commands).
#[derive(Debug, Arbitrary)]
struct Script {
    resp3: bool,
    second: u32,
    cmds: Vec<Command>,
}

/// Maximum commands per script (keeps one input fast).
const MAX_CMDS: usize = 64;

fn new_server() -> Arc<Server> {
    let mut config = Config::default();
    // Small limits, so no command may legitimately allocate much.
    for (k, v) in [
        ("proto-max-bulk-len", "1mb"),
        ("save", ""),
        ("appendonly", "no"),
    ] {
        config.set(k, v).expect("config");
    }
    ferrokv::cmd::init();
    Server::new(config, 1)
}

fn new_client(server: &Arc<Server>) -> Client {
    let h = new_handle(
        &server.clients,
        server.clock.now_ms(),
        "fuzz:1".into(),
        "fuzz:0".into(),
        -1,
        false,
    );
    server.clients.add(h.clone());
    let mut c = Client::new(h);
    c.authenticated = true;
    // No event loop here: blocking commands act as their non-blocking forms.
    c.deny_blocking = true;
    c
}

/// Harness `command_exec`. Input: a [`Script`] built with `arbitrary`,
/// executed through `cmd::execute` against a fresh in-process server
/// (proto-max-bulk-len 1mb) by up to two clients. Checks: no
/// panic; every command writes a reply (or queues it) unless CLIENT REPLY
/// turned replies off or CLIENT PAUSE held it back; no command allocates
/// more than 64 MiB.
pub fn command_exec(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(script) = Script::arbitrary(&mut u) else {
        return;
    };
    run_script(&script);
}

fn run_script(script: &Script) {
    let server = new_server();
    let mut clients = [new_client(&server), new_client(&server)];
    let stats = server.stats.local(ferrokv::cmd::table().all.len());
    let names = names();
    for (i, c) in script.cmds.iter().take(MAX_CMDS).enumerate() {
        let mut argv: Vec<Vec<u8>> = match &c.name {
            Name::Known(n) => names[*n as usize % names.len()].clone(),
            Name::Raw(b) => vec![b.clone()],
        };
        argv.extend(c.args.iter().take(16).map(Arg::bytes));
        if denied(&argv) {
            continue;
        }
        let mut o = OwnedArgs::default();
        for a in &argv {
            o.push(a);
        }
        let who = (script.second >> (i % 32)) & 1;
        let client = &mut clients[who as usize];
        let mut out = Out::new();
        out.resp3 = script.resp3;
        client.clock_us = ferrokv::util::now_us();
        let live = live_now();
        measure_start();
        let mode_before = client.reply_mode;
        ferrokv::cmd::execute(&server, client, &mut out, &o.args(), &stats);
        check_bound("command_exec", live, 64 << 20);
        check_replies(&out.buf, &argv);
        // Pub/sub confirmations and messages go to the client's outbox.
        let mut outbox = Vec::new();
        client.handle.outbox.take(&mut outbox);
        client.handle.outbox.written(outbox.len());
        check_replies(&outbox, &argv);
        // CLIENT PAUSE holds a command back unanswered until the pause
        // ends (the connection would run it then); drop it here.
        let postponed = client.postponed.take().is_some();
        if mode_before == ReplyMode::On && client.reply_mode == ReplyMode::On && !postponed {
            assert!(
                !out.buf.is_empty() || !outbox.is_empty(),
                "no reply to {:?}",
                printable(&argv)
            );
        }
        // Blocking is denied; a subscribed client's replies go to its outbox.
        client.handle.outbox.clear();
    }
    for mut c in clients {
        ferrokv::tx::unwatch_all(&server.tx_env(), &mut c.watch);
        let h = c.handle.clone();
        ferrokv::pubsub::unsubscribe_all(&server.pubsub_env(), &h, &mut c.pubsub);
        c.leave_monitor(&server);
        server.clients.remove(c.handle.id);
    }
}

fn printable(argv: &[Vec<u8>]) -> Vec<String> {
    argv.iter()
        .map(|a| String::from_utf8_lossy(&a[..a.len().min(64)]).into_owned())
        .collect()
}

/// Panics unless `buf` is a sequence of complete, well-formed RESP2/RESP3
/// values (the encoder's counts and lengths match what follows).
fn check_replies(buf: &[u8], argv: &[Vec<u8>]) {
    let mut pos = 0;
    while pos < buf.len() {
        match resp_value(buf, pos, 0) {
            Some(end) => pos = end,
            None => panic!(
                "malformed reply to {:?} at byte {pos}: {:?}",
                printable(argv),
                String::from_utf8_lossy(&buf[pos..buf.len().min(pos + 200)])
            ),
        }
    }
}

/// The end of the RESP value starting at `pos`, or None when it is
/// malformed or incomplete.
fn resp_value(buf: &[u8], pos: usize, depth: usize) -> Option<usize> {
    if depth > 64 {
        return None;
    }
    let t = *buf.get(pos)?;
    let nl = pos + memchr_crlf(&buf[pos..])?;
    let line = &buf[pos + 1..nl];
    let after = nl + 2;
    let num = || -> Option<i64> { std::str::from_utf8(line).ok()?.parse().ok() };
    match t {
        b'+' | b'-' | b':' | b',' | b'(' | b'#' | b'_' => {
            if t == b':' {
                num()?;
            }
            Some(after)
        }
        b'$' | b'=' | b'!' => {
            let n = num()?;
            if n == -1 && t == b'$' {
                return Some(after);
            }
            let n = usize::try_from(n).ok()?;
            let end = after.checked_add(n)?;
            (buf.get(end..end + 2)? == b"\r\n").then_some(end + 2)
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = num()?;
            if n == -1 && t == b'*' {
                return Some(after);
            }
            let mut n = usize::try_from(n).ok()?;
            if t == b'%' || t == b'|' {
                n = n.checked_mul(2)?;
            }
            let mut p = after;
            for _ in 0..n {
                p = resp_value(buf, p, depth + 1)?;
            }
            if t == b'|' {
                // An attribute precedes the value it describes.
                p = resp_value(buf, p, depth + 1)?;
            }
            Some(p)
        }
        _ => None,
    }
}

fn memchr_crlf(b: &[u8]) -> Option<usize> {
    b.windows(2).position(|w| w == b"\r\n")
}

// ---------------------------------------------------------------------------
// rdb_load.

fn crc64(b: &[u8]) -> u64 {
    ferrokv::persist::rdb::CRC64.checksum(b)
}

/// Harness `rdb_load`. Input: a control byte, then the payload. Control bit
/// 0 clear: the payload is an RDB file, loaded with `rdb::load` (checksum
/// skipped so the fuzzer reaches the body; duplicates allowed when bit 1
/// is set); a file that loads must save and load into a fresh server with
/// the same keys, values (DUMP payloads) and TTL flags. Bit 0 set: the payload is the body of a DUMP
/// value, completed with an RDB version and a valid CRC64 footer, and given
/// to RESTORE's decoder. Checks: no panic, allocation bounded by 128 times
/// the input plus 16 MiB (a length field must not make the loader reserve
/// memory the data cannot fill).
pub fn rdb_load(data: &[u8]) {
    let (ctl, body) = data.split_first().unwrap_or((&0, &[]));
    let server = new_server();
    let bound = 128 * data.len() + (16 << 20);
    if ctl & 1 == 1 {
        let mut p = body.to_vec();
        p.extend_from_slice(&[10, 0]);
        let crc = crc64(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        let live = live_now();
        measure_start();
        let _ = ferrokv::persist::rdb::restore_value(&server, &p, b"k");
        check_bound("restore", live, bound);
        return;
    }
    let opts = ferrokv::persist::rdb::LoadOpts {
        allow_dup: ctl & 2 != 0,
        keep_expired: ctl & 4 != 0,
        skip_checksum: true,
    };
    let live = live_now();
    measure_start();
    let r = ferrokv::persist::rdb::load(&server, body, opts);
    check_bound("rdb load", live, bound);
    if r.is_ok() {
        let mut first = Vec::new();
        ferrokv::persist::rdb::write_snapshot(&server, &mut first, false, Default::default())
            .expect("saving a loaded dataset");
        let again = new_server();
        ferrokv::persist::rdb::load(&again, &first[..], Default::default())
            .expect("a saved RDB must load");
        assert_eq!(
            dataset(&server),
            dataset(&again),
            "save/load round trip changed the dataset"
        );
    }
}

/// Runs one command on `server` as a fresh client; the reply bytes.
fn run_cmd(server: &Arc<Server>, client: &mut Client, argv: &[&[u8]]) -> Vec<u8> {
    let mut o = OwnedArgs::default();
    for a in argv {
        o.push(a);
    }
    let mut out = Out::new();
    let stats = server.stats.local(ferrokv::cmd::table().all.len());
    ferrokv::cmd::execute(server, client, &mut out, &o.args(), &stats);
    out.buf
}

/// The bulk strings of a RESP2 array of bulk strings (KEYS reply).
fn bulks(reply: &[u8]) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    let mut p = match reply.windows(2).position(|w| w == b"\r\n") {
        Some(i) => i + 2,
        None => return v,
    };
    while p < reply.len() && reply[p] == b'$' {
        let Some(nl) = reply[p..].windows(2).position(|w| w == b"\r\n") else {
            break;
        };
        let n: usize = std::str::from_utf8(&reply[p + 1..p + nl])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let start = p + nl + 2;
        v.push(reply[start..start + n].to_vec());
        p = start + n + 2;
    }
    v
}

/// Every key of every database with its DUMP payload and whether it has a
/// TTL, sorted (order in the keyspace is not part of the dataset).
fn dataset(server: &Arc<Server>) -> Vec<(usize, Vec<u8>, Vec<u8>, bool)> {
    let mut c = new_client(server);
    let mut all = Vec::new();
    for db in 0..server.keyspace.db_count() {
        run_cmd(server, &mut c, &[b"SELECT", db.to_string().as_bytes()]);
        for k in bulks(&run_cmd(server, &mut c, &[b"KEYS", b"*"])) {
            let dump = run_cmd(server, &mut c, &[b"DUMP", &k]);
            let ttl = !run_cmd(server, &mut c, &[b"PTTL", &k]).starts_with(b":-");
            all.push((db, k, dump, ttl));
        }
    }
    server.clients.remove(c.handle.id);
    all.sort();
    all
}

// ---------------------------------------------------------------------------
// aof_load.

/// Harness `aof_load`. Input: an AOF file (RESP commands, MULTI/EXEC
/// blocks, possibly truncated), written to a temporary file and loaded
/// with `aof::load_file` into a fresh server, as the last file of the set
/// (control: the first byte's bit 0 allows a truncated tail). Checks: no
/// panic; allocation bounded by 128 times the input plus 64 MiB.
pub fn aof_load(data: &[u8]) {
    let (ctl, body) = data.split_first().unwrap_or((&0, &[]));
    let server = new_server();
    let path = std::env::temp_dir().join(format!("ferrokv-fuzz-{}.aof", std::process::id()));
    std::fs::write(&path, body).expect("write temp AOF");
    let live = live_now();
    measure_start();
    let _ = ferrokv::persist::aof::load_file(
        &server,
        &mut ferrokv::cmd::replay::AofReplay::new(&server),
        &path,
        true,
        ctl & 1 == 1,
    );
    check_bound("aof load", live, 128 * data.len() + (64 << 20));
    let _ = std::fs::remove_file(&path);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(words: &[&str]) -> Command {
        Command {
            name: Name::Raw(words[0].as_bytes().to_vec()),
            args: words[1..]
                .iter()
                .map(|w| Arg::Bytes(w.as_bytes().to_vec()))
                .collect(),
        }
    }

    /// A command that CLIENT PAUSE holds back has no reply yet: the
    /// harness must not take that for a lost reply (a CI failure on
    /// `bitfield 107 39 39 k0` after a pause).
    #[test]
    fn paused_command_is_not_a_missing_reply() {
        let script = Script {
            resp3: false,
            second: 0,
            cmds: vec![
                cmd(&["client", "pause", "100000", "write"]),
                cmd(&["bitfield", "107", "39", "39", "k0"]),
                cmd(&["get", "k0"]),
            ],
        };
        run_script(&script);
    }
}
