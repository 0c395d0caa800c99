//! End-to-end tests of SORT and SORT_RO against the real binary: exact
//! replies, STORE, encodings, blocked clients woken by STORE, and
//! differential comparison with redis-server 7.0 (every option combination
//! over lists, sets and sorted sets, pattern and LIMIT edge cases, errors,
//! keyspace statistics, and a seeded random generator).
//!
//! Normalisation in differential tests: Redis walks a `hashtable` set and
//! a sorted set being sorted in its dict's hash order, ferrokv in its own
//! order, so where that order shows in the reply it is compared loosely:
//! - a hashtable set with BY nosort (no STORE): elements compared after
//!   sorting, or only the reply length when LIMIT cuts the set;
//! - ALPHA with BY where several elements have the same (or a missing)
//!   BY value, on a hashtable set or a sorted set: reply length only.
//!
//! Lists and intsets (walked in the same order by both) and every other
//! reply are compared byte for byte.

mod common;
use common::*;

// ----------------------------------------------------------------- helpers

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Length of the RESP frame at the start of `b`.
fn frame_len(b: &[u8]) -> usize {
    let eol = b.windows(2).position(|w| w == b"\r\n").expect("CRLF") + 2;
    let n: i64 = std::str::from_utf8(&b[1..eol - 2])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    match b[0] {
        b'$' if n >= 0 => eol + n as usize + 2,
        b'*' => {
            let mut at = eol;
            for _ in 0..n.max(0) {
                at += frame_len(&b[at..]);
            }
            at
        }
        _ => eol,
    }
}

/// The reply with its (flat) aggregate's elements sorted.
fn sorted(b: &[u8]) -> Vec<u8> {
    if b.first() != Some(&b'*') {
        return b.to_vec();
    }
    let eol = b.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    let n: i64 = s(&b[1..eol - 2]).parse().unwrap_or(0);
    let mut at = eol;
    let mut kids = Vec::new();
    for _ in 0..n.max(0) {
        let l = frame_len(&b[at..]);
        kids.push(&b[at..at + l]);
        at += l;
    }
    kids.sort();
    let mut out = b[..eol].to_vec();
    for k in kids {
        out.extend_from_slice(k);
    }
    out
}

/// The header line of a reply (the length of an array).
fn head(b: &[u8]) -> Vec<u8> {
    let eol = b.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    b[..eol].to_vec()
}

fn lines(p: &mut Pair, ls: &[&str]) {
    for l in ls {
        p.check_line(l);
    }
}

fn args_of(v: &[Vec<u8>]) -> Vec<&[u8]> {
    v.iter().map(|a| a.as_slice()).collect()
}

fn words(line: &str) -> Vec<Vec<u8>> {
    line.split_whitespace()
        .map(|w| w.as_bytes().to_vec())
        .collect()
}

/// How a reply is compared.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Cmp {
    /// Byte for byte.
    Exact,
    /// After sorting the aggregate's elements.
    Sorted,
    /// Only the first line (error, integer, or array length).
    Head,
}

fn same(how: Cmp, a: &[u8], b: &[u8]) -> bool {
    match how {
        Cmp::Exact => a == b,
        Cmp::Sorted => sorted(a) == sorted(b),
        Cmp::Head => head(a) == head(b),
    }
}

/// Runs `args` on both and compares them `how`; with STORE, also compares
/// the destination afterwards (exactly: a stored result is always
/// deterministic unless `how` says otherwise).
fn check_sort(p: &mut Pair, args: &[&[u8]], how: Cmp, store: Option<&[u8]>) {
    let (a, b) = p.both(args);
    assert!(
        same(how, &a, &b),
        "reply differs ({how:?}) for {:?}\nferrokv: {:?}\nredis:   {:?}",
        args.iter().map(|x| s(x)).collect::<Vec<_>>(),
        s(&a),
        s(&b)
    );
    if let Some(d) = store {
        let (a, b) = p.both(&[b"LRANGE", d, b"0", b"-1"]);
        assert!(
            same(how, &a, &b),
            "stored list differs for {:?}\nferrokv: {:?}\nredis:   {:?}",
            args.iter().map(|x| s(x)).collect::<Vec<_>>(),
            s(&a),
            s(&b)
        );
        p.check(&[b"TYPE", d]);
        p.check(&[b"TTL", d]);
    }
}

/// The shared data set: sources of every type and encoding, BY weights
/// (strings and hash fields, unique per element) and GET targets.
fn load_data(p: &mut Pair) {
    lines(
        p,
        &[
            "FLUSHALL",
            "RPUSH lnum 3 10 -2 7 0 1.5 10 -inf 2e3 0x10",
            "RPUSH lalpha banana apple Cherry apple date 10 9 _x",
            "SADD sint 5 -3 12 0 99 7 1000000 -70000",
            "SADD shash 5 -3 12 0 99 7 a1 2.5",
            "ZADD zsmall 3 c 1 a 2 b 2 bb 10 j 5 e",
            "ZADD zbig 1 m01 2 m02 3 m03 4 m04 5 m05 6 m06 7 m07 8 m08 9 m09 10 m10 11 m11 12 m12 13 m13 14 m14 15 m15 16 m16 17 m17 18 m18 19 m19 20 m20 21 m21 22 m22 23 m23 24 m24 25 m25 26 m26 27 m27 28 m28 29 m29 30 m30 31 m31 32 m32 33 m33 34 m34 35 m35 36 m36 37 m37 38 m38 39 m39 40 m40 41 m41 42 m42 43 m43 44 m44 45 m45 46 m46 47 m47 48 m48 49 m49 50 m50 51 m51 52 m52 53 m53 54 m54 55 m55 56 m56 57 m57 58 m58 59 m59 60 m60 61 m61 62 m62 63 m63 64 m64 65 m65 66 m66 67 m67 68 m68 69 m69 70 m70 71 m71 72 m72 73 m73 74 m74 75 m75 76 m76 77 m77 78 m78 79 m79 80 m80 81 m81 82 m82 83 m83 84 m84 85 m85 86 m86 87 m87 88 m88 89 m89 90 m90 91 m91 92 m92 93 m93 94 m94 95 m95 96 m96 97 m97 98 m98 99 m99 100 m100 101 m101 102 m102 103 m103 104 m104 105 m105 106 m106 107 m107 108 m108 109 m109 110 m110 111 m111 112 m112 113 m113 114 m114 115 m115 116 m116 117 m117 118 m118 119 m119 120 m120 121 m121 122 m122 123 m123 124 m124 125 m125 126 m126 127 m127 128 m128 129 m129 130 m130",
            "SET str x",
            "HSET hashkey f v",
        ],
    );
    // Every element of every source gets a unique numeric weight w_<e>
    // (a string) and f field of h_<e> (a hash); g_<e> and field g of h_<e>
    // exist for some; p_<e> for about half (partial BY).
    let mut elems: Vec<String> = Vec::new();
    for e in "3 10 -2 7 0 1.5 -inf 2e3 0x10 banana apple Cherry date 9 _x 5 -3 12 99 1000000 -70000 a1 2.5 c a b bb j e".split(' ') {
        elems.push(e.to_string());
    }
    for i in 1..=130 {
        elems.push(format!("m{i:02}"));
    }
    for (i, e) in elems.iter().enumerate() {
        let w = (i * 7919 % 1009) as i64 - 500;
        p.check(&[
            b"SET",
            format!("w_{e}").as_bytes(),
            w.to_string().as_bytes(),
        ]);
        let f = format!("{}.{}", (i * 31) % 97, i);
        p.check(&[b"HSET", format!("h_{e}").as_bytes(), b"f", f.as_bytes()]);
        if i % 3 != 0 {
            p.check(&[
                b"SET",
                format!("g_{e}").as_bytes(),
                format!("G{i}").as_bytes(),
            ]);
            p.check(&[
                b"HSET",
                format!("h_{e}").as_bytes(),
                b"g",
                format!("HG{i}").as_bytes(),
            ]);
        }
        if i % 2 == 0 {
            p.check(&[
                b"SET",
                format!("p_{e}").as_bytes(),
                (i as i64 % 13).to_string().as_bytes(),
            ]);
        }
    }
}

// ----------------------------------------------------------- e2e (ours)

#[test]
fn basic_replies() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmds("RPUSH l 3 1 2"), b":3\r\n");
    assert_eq!(c.cmds("SORT l"), b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n");
    assert_eq!(
        c.cmds("SORT_RO l DESC LIMIT 0 2"),
        b"*2\r\n$1\r\n3\r\n$1\r\n2\r\n"
    );
    assert_eq!(c.cmds("SORT nokey"), b"*0\r\n");
    assert_eq!(c.cmds("SORT l GET nokey_*"), b"*3\r\n$-1\r\n$-1\r\n$-1\r\n");
    assert_eq!(c.cmds("SET str x"), b"+OK\r\n");
    assert_eq!(
        c.cmds("SORT str"),
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
    assert_eq!(c.cmds("SORT l STORE d"), b":3\r\n");
    assert_eq!(c.cmds("OBJECT ENCODING d"), b"$9\r\nquicklist\r\n");
    assert_eq!(c.cmds("SORT_RO l STORE d"), b"-ERR syntax error\r\n");
    // STORE replaces any value and drops its TTL; an empty result deletes.
    c.cmds("EXPIRE str 100");
    assert_eq!(c.cmds("SORT l STORE str"), b":3\r\n");
    assert_eq!(c.cmds("TYPE str"), b"+list\r\n");
    assert_eq!(c.cmds("TTL str"), b":-1\r\n");
    assert_eq!(c.cmds("SORT nokey STORE str"), b":0\r\n");
    assert_eq!(c.cmds("EXISTS str"), b":0\r\n");
    // GET of missing keys stores empty strings.
    assert_eq!(c.cmds("SORT l GET # GET nokey_* STORE d"), b":6\r\n");
    assert_eq!(
        c.cmds("LRANGE d 0 -1"),
        b"*6\r\n$1\r\n1\r\n$0\r\n\r\n$1\r\n2\r\n$0\r\n\r\n$1\r\n3\r\n$0\r\n\r\n"
    );
    // SORT converts a small sorted set to skiplist, SORT_RO too.
    c.cmds("ZADD z 1 a 2 b");
    assert_eq!(c.cmds("OBJECT ENCODING z"), b"$8\r\nlistpack\r\n");
    assert_eq!(
        c.cmds("SORT_RO z BY nosort"),
        b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    );
    assert_eq!(c.cmds("OBJECT ENCODING z"), b"$8\r\nskiplist\r\n");
    // RESP3: nil is `_`.
    c.cmds("HELLO 3");
    assert_eq!(c.cmds("SORT l LIMIT 0 1 GET nokey_*"), b"*1\r\n_\r\n");
}

#[test]
fn sort_store_serves_blocked_clients() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let mut w = srv.raw();
    c.cmds("RPUSH src 2 1 3");
    w.send_cmd(&[b"BLPOP", b"dst", b"5"]);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(c.cmds("SORT src STORE dst"), b":3\r\n");
    assert_eq!(w.reply(), b"*2\r\n$3\r\ndst\r\n$1\r\n1\r\n");
    assert_eq!(c.cmds("LRANGE dst 0 -1"), b"*2\r\n$1\r\n2\r\n$1\r\n3\r\n");
}

#[test]
fn sort_is_atomic_with_pattern_keys() {
    // A writer keeps every weight equal to its element's value negated
    // (MSET, atomic); a concurrent SORT BY must always see a consistent
    // state, i.e. the reverse order.
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let elems: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    let mut rp = vec![b"RPUSH".to_vec(), b"l".to_vec()];
    rp.extend(elems.iter().map(|e| e.as_bytes().to_vec()));
    c.cmd(&args_of(&rp));
    let mut m = vec![b"MSET".to_vec()];
    for i in 0..40i64 {
        m.push(format!("w_{i}").into_bytes());
        m.push(i.to_string().into_bytes());
    }
    c.cmd(&args_of(&m));
    let port = srv.port;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let st = stop.clone();
    let writer = std::thread::spawn(move || {
        let mut w = Raw::connect(port);
        let mut k = 0i64;
        while !st.load(std::sync::atomic::Ordering::Relaxed) {
            let mut m = vec![b"MSET".to_vec()];
            for i in 0..40i64 {
                m.push(format!("w_{i}").into_bytes());
                m.push(((k % 2 * 2 - 1) * i).to_string().into_bytes());
            }
            w.cmd(&args_of(&m));
            k += 1;
        }
    });
    let asc: Vec<u8> = {
        let mut v = b"*40\r\n".to_vec();
        for i in 0..40 {
            let e = i.to_string();
            v.extend_from_slice(format!("${}\r\n{e}\r\n", e.len()).as_bytes());
        }
        v
    };
    let desc: Vec<u8> = {
        let mut v = b"*40\r\n".to_vec();
        for i in (0..40).rev() {
            let e = i.to_string();
            v.extend_from_slice(format!("${}\r\n{e}\r\n", e.len()).as_bytes());
        }
        v
    };
    for _ in 0..300 {
        let r = c.cmds("SORT l BY w_*");
        assert!(r == asc || r == desc, "torn read: {}", s(&r));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
}

// ------------------------------------------------------- differential

#[test]
fn diff_errors_and_parsing() {
    let Some(mut p) = Pair::start() else { return };
    lines(
        &mut p,
        &[
            "RPUSH l 3 1 2",
            "SET str x",
            "HSET h f v",
            "RPUSH la a b",
            "SORT",
            "SORT_RO",
            "SORT l foo",
            "SORT l LIMIT",
            "SORT l LIMIT 1",
            "SORT l LIMIT x 1",
            "SORT l LIMIT 1 x",
            "SORT l LIMIT 1.5 1",
            "SORT l LIMIT 9223372036854775808 1",
            "SORT l LIMIT 0 1 extra",
            "SORT l BY",
            "SORT l GET",
            "SORT l STORE",
            "SORT_RO l STORE d",
            "SORT_RO l store",
            "SORT str",
            "SORT h",
            "SORT_RO str",
            "SORT str BY nosort",
            "SORT str foo",
            "SORT str LIMIT x 1",
            "SORT la",
            "SORT la STORE d",
            "EXISTS d",
            "SORT la BY nosort",
            "SORT la ALPHA",
            "SORT la GET # LIMIT 0 1",
            "SORT la DESC",
            "SORT l BY w_*",
            "SET w_1 abc",
            "SORT l BY w_*",
            "SORT l BY w_* ALPHA",
            "SORT l BY w_* LIMIT 0 1",
            "SORT l BY w_* STORE d",
            "EXISTS d",
            "sort l limit 0 1 desc alpha by nosort get # asc",
            "SORT l BY h->f",
            "SORT l LIMIT 0 -1",
        ],
    );
    for c in ["sort", "sort_ro"] {
        let (a, b) = p.both(&[b"COMMAND", b"INFO", c.as_bytes()]);
        // Compare the legacy part: name, arity, flags, first/last/step, ACL
        // categories (key specs are not modelled).
        let fa = &a[..];
        let fb = &b[..];
        let cut = |x: &[u8]| {
            // Stop before the tips array (8th field of the inner array).
            let mut at = x.windows(2).position(|w| w == b"\r\n").unwrap() + 2; // *1
            at += x[at..].windows(2).position(|w| w == b"\r\n").unwrap() + 2; // *10
            for _ in 0..7 {
                at += frame_len_any(&x[at..]);
            }
            x[..at].to_vec()
        };
        assert_eq!(s(&cut(fa)), s(&cut(fb)), "COMMAND INFO {c}");
    }
}

/// Frame length including RESP3 set/simple types.
fn frame_len_any(b: &[u8]) -> usize {
    let eol = b.windows(2).position(|w| w == b"\r\n").expect("CRLF") + 2;
    let n: i64 = std::str::from_utf8(&b[1..eol - 2])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    match b[0] {
        b'$' if n >= 0 => eol + n as usize + 2,
        b'*' | b'~' => {
            let mut at = eol;
            for _ in 0..n.max(0) {
                at += frame_len_any(&b[at..]);
            }
            at
        }
        _ => eol,
    }
}

/// Sources and whether their walk order is shared with Redis.
const SOURCES: &[(&str, bool)] = &[
    ("lnum", true),
    ("lalpha", true),
    ("sint", true),
    ("shash", false),
    ("zsmall", false),
    ("zbig", false),
    ("nokey", true),
];

/// BY patterns: (pattern, unique values for every element).
const BYS: &[(&str, bool)] = &[
    ("", true),
    ("nosort", true),
    ("w_*", true),
    ("h_*->f", true),
    ("p_*", false),
    ("missing_*", false),
    ("h_*->nofield", false),
];

fn how_for(
    src: &str,
    shared_order: bool,
    by: &str,
    by_unique: bool,
    alpha: bool,
    limit: &str,
    store: bool,
) -> Cmp {
    let is_hash_set = src == "shash";
    if by == "nosort" && is_hash_set && !store {
        return if limit.is_empty() {
            Cmp::Sorted
        } else {
            Cmp::Head
        };
    }
    if alpha && !by.is_empty() && by != "nosort" && !by_unique && !shared_order {
        return Cmp::Head;
    }
    Cmp::Exact
}

#[test]
fn diff_every_option_combination() {
    let Some(mut p) = Pair::start() else { return };
    load_data(&mut p);
    let gets: &[&[&str]] = &[
        &[],
        &["#"],
        &["g_*"],
        &["#", "h_*->g", "w_*"],
        &["nopattern"],
    ];
    let orders = ["", "ASC", "DESC"];
    let limits = ["", "0 3", "1 -1", "-2 4", "2 0", "100 5", "3 1000", "0 1"];
    let mut n = 0;
    for &(src, shared) in SOURCES {
        for &(by, uniq) in BYS {
            for get in gets {
                for order in orders {
                    for alpha in [false, true] {
                        for limit in limits {
                            for store in [false, true] {
                                // Keep the matrix affordable: STORE with
                                // every second LIMIT.
                                if store && n % 2 == 1 {
                                    n += 1;
                                    continue;
                                }
                                let mut line = format!("SORT {src}");
                                if !by.is_empty() {
                                    line += &format!(" BY {by}");
                                }
                                if !limit.is_empty() {
                                    line += &format!(" LIMIT {limit}");
                                }
                                for g in get.iter() {
                                    line += &format!(" GET {g}");
                                }
                                if !order.is_empty() {
                                    line += &format!(" {order}");
                                }
                                if alpha {
                                    line += " ALPHA";
                                }
                                if store {
                                    line += " STORE dst";
                                }
                                let how = how_for(src, shared, by, uniq, alpha, limit, store);
                                let w = words(&line);
                                check_sort(&mut p, &args_of(&w), how, store.then_some(&b"dst"[..]));
                                n += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    // Sorting converted the sorted sets to skiplist in both.
    for k in ["zsmall", "zbig", "sint", "shash"] {
        p.check_line(&format!("OBJECT ENCODING {k}"));
    }
}

#[test]
fn diff_limit_edges() {
    let Some(mut p) = Pair::start() else { return };
    lines(&mut p, &["RPUSH l 5 3 1 4 2", "ZADD z 1 a 2 b 3 c 4 d 5 e"]);
    let limits = [
        "0 0",
        "0 -1",
        "-1 -1",
        "-5 2",
        "-9223372036854775808 2",
        "4 1",
        "4 2",
        "5 1",
        "6 1",
        "2 9223372036854775807",
        "3 9223372036854775807",
        "9223372036854775807 9223372036854775807",
        "9223372036854775807 1",
        "1 -9223372036854775808",
        "0 5",
        "0 6",
    ];
    for k in ["l", "z", "nokey"] {
        for lim in limits {
            for extra in [
                "",
                " DESC",
                " BY nosort",
                " BY nosort DESC",
                " ALPHA DESC",
                " BY w_* DESC",
                " GET # GET x_*",
                " STORE d",
                " BY nosort DESC STORE d",
            ] {
                let line = format!("SORT {k} LIMIT {lim}{extra}");
                p.check_line(&line);
                if extra.contains("STORE") {
                    p.check_line("LRANGE d 0 -1");
                }
            }
        }
    }
}

/// Redis's SORT tests `errno == ERANGE` after `strtod` without clearing
/// errno first, so after a value that overflowed, every later numeric SORT
/// fails until some system call in redis-server sets errno again (ferrokv
/// does not reproduce this stale state). Opening a connection does: the
/// accept loop ends with EAGAIN.
fn reset_errno(p: &mut Pair) {
    let mut c = p.redis.raw();
    assert_eq!(c.cmds("PING"), b"+PONG\r\n");
}

#[test]
fn diff_numbers_and_strings() {
    let Some(mut p) = Pair::start() else { return };
    let values: &[&[u8]] = &[
        b"1e-310",
        b"1e-400",
        b" 5",
        b"",
        b"0x10",
        b"1e400",
        b"5 ",
        b"inf",
        b"-inf",
        b"+inf",
        b"Infinity",
        b"nan",
        b"-nan",
        b"+5",
        b".5",
        b"5.",
        b"1e",
        b"0x",
        b"0x1p3",
        b"0x1.8p1",
        b"  ",
        b"2.2250738585072014e-308",
        b"4.9e-324",
        b"1e308",
        b"1.7976931348623159e308",
        b"-0",
        b"0",
        b"1_0",
        b"1e+2",
        b"\t7",
        b"\n8",
        b"9\x00junk",
        b"\x00",
        b"9223372036854775807",
        b"9223372036854775808",
        b"-9223372036854775808",
        b"12345678901234567890123",
        b"0.1",
        b"0.10",
        b"abc",
        b".",
        b"-",
        b"0e5",
        b"0x1p-1074",
        b"0x1p99999",
        b"infx",
        b"1.5e3x",
    ];
    // Each value alone with a plain number (numeric sort of the element),
    // then as a BY weight.
    for v in values {
        reset_errno(&mut p);
        p.check(&[b"DEL", b"n", b"wl"]);
        p.check(&[b"RPUSH", b"n", v, b"3"]);
        p.check(&[b"SORT", b"n"]);
        p.check(&[b"SORT", b"n", b"DESC"]);
        p.check(&[b"SORT", b"n", b"ALPHA"]);
        reset_errno(&mut p);
        p.check(&[b"RPUSH", b"wl", b"a", b"b"]);
        p.check(&[b"SET", b"w_a", v]);
        p.check(&[b"SET", b"w_b", b"3"]);
        p.check(&[b"SORT", b"wl", b"BY", b"w_*"]);
        reset_errno(&mut p);
        p.check(&[b"HSET", b"h_a", b"f", v]);
        p.check(&[b"SORT", b"wl", b"BY", b"h_*->f", b"GET", b"h_*->f"]);
    }
    // Binary elements: ALPHA compares strcoll-like up to the first NUL,
    // except with STORE (bytewise).
    let elems: &[&[u8]] = &[
        b"a\x00b",
        b"a\x00a",
        b"a",
        b"\xff",
        b"\xc3\xa9",
        b"B",
        b"b",
        b"",
        b"\x00z",
        b"\x00",
        b"a\x00",
        b"ab",
        b"\x7f",
        b"\x80",
    ];
    let mut cmd: Vec<&[u8]> = vec![b"RPUSH", b"bin"];
    cmd.extend_from_slice(elems);
    p.check(&cmd);
    for extra in [
        &[][..],
        &[&b"DESC"[..]][..],
        &[&b"LIMIT"[..], b"2", b"5"][..],
        &[&b"BY"[..], b"x_*"][..],
    ] {
        let mut c: Vec<&[u8]> = vec![b"SORT", b"bin", b"ALPHA"];
        c.extend_from_slice(extra);
        p.check(&c);
        c.extend_from_slice(&[b"STORE", b"bd"]);
        p.check(&c);
        p.check(&[b"LRANGE", b"bd", b"0", b"-1"]);
    }
    // Binary BY values (ties through NUL truncation, with and without
    // LIMIT, i.e. merge sort and pqsort).
    let mut long: Vec<Vec<u8>> = vec![b"RPUSH".to_vec(), b"big".to_vec()];
    for i in 0..60 {
        long.push(format!("e{i}").into_bytes());
        let w: Vec<u8> = match i % 5 {
            0 => format!("k{}", i % 7).into_bytes(),
            1 => format!("k\x00{i}").into_bytes(),
            2 => b"k".to_vec(),
            3 => format!("{}", 60 - i).into_bytes(),
            _ => continue,
        };
        p.check(&[b"SET", format!("bw_e{i}").as_bytes(), &w]);
    }
    p.check(&args_of(&long));
    for extra in [
        "",
        " DESC",
        " LIMIT 0 10",
        " LIMIT 5 20 DESC",
        " LIMIT 30 100",
        " LIMIT 59 1",
        " STORE bd",
        " LIMIT 3 17 STORE bd",
    ] {
        p.check_line(&format!("SORT big BY bw_* ALPHA{extra}"));
        p.check_line(&format!("SORT big BY bw_*{extra}"));
        p.check_line("LRANGE bd 0 -1");
    }
}

#[test]
fn diff_patterns() {
    let Some(mut p) = Pair::start() else { return };
    lines(
        &mut p,
        &[
            "RPUSH l 1 2 3",
            "SET k_1 x",
            "SET k_2 y",
            "HSET hk_1 f a -> b",
            "HSET hk_2 f c",
            "SET hk_3 notahash",
            "RPUSH k_3 alist",
            "SET 1-> arrow",
            "SET k_1->f literal",
            "SET 1k 1a",
            "SET *_1 star",
            "SORT l GET k_*",
            "SORT l GET hk_*->f",
            "SORT l GET hk_*->",
            "SORT l GET hk_*->->",
            "SORT l GET *->",
            "SORT l GET k_*->f",
            "SORT l GET *k",
            "SORT l GET *",
            "SORT l GET #",
            "SORT l GET ##",
            "SORT l GET k_**",
            "SORT l GET *_*",
            "SORT l GET nostar",
            "SORT l GET -> GET ->f",
            "SORT l BY hk_*->f ALPHA GET #",
            "SORT l BY hk_*->f GET hk_*->f",
            "SORT l BY k_* ALPHA",
            "SORT l BY k_* ALPHA DESC",
            "SORT l BY k_3",
            "SORT l BY #",
            "SORT l BY nosort BY k_* DESC",
            "SORT l BY k_* BY nosort DESC",
            "SORT l BY k_* ALPHA LIMIT 1 1",
        ],
    );
    // NUL inside patterns.
    for pat in [
        &b"#\x00x"[..],
        b"k_\x00*",
        b"hk_*\x00->f",
        b"hk_*->f\x00g",
        b"k_*\x00",
    ] {
        p.check(&[b"SORT", b"l", b"GET", pat]);
        p.check(&[b"SORT", b"l", b"BY", pat, b"ALPHA"]);
    }
    // Field values stored as integers in a listpack hash.
    lines(
        &mut p,
        &[
            "HSET hn_1 w 30 v 100",
            "HSET hn_2 w 20 v -5",
            "HSET hn_3 w 10",
            "SORT l BY hn_*->w GET hn_*->v GET hn_*->w",
            "SORT l BY hn_*->v DESC GET # STORE d",
            "LRANGE d 0 -1",
        ],
    );
}

#[test]
fn diff_sets_and_zsets() {
    let Some(mut p) = Pair::start() else { return };
    lines(
        &mut p,
        &[
            "SADD si 9 -1 100 7 42",
            "SADD sh x 9 -1 100 y 42 z",
            "ZADD zl 5 e 1 a 3 c 2 b 4 d",
            "ZADD zl2 1 x 1 y 1 z 2 w",
            // intsets keep their (sorted) order with nosort.
            "SORT si BY nosort",
            "SORT si BY nosort DESC",
            "SORT si BY nosort LIMIT 1 2",
            "SORT si",
            "SORT si DESC ALPHA",
            // nosort with STORE: sorted ALPHA (replication-safe).
            "SORT si BY nosort STORE d",
            "LRANGE d 0 -1",
            "SORT sh BY nosort STORE d",
            "LRANGE d 0 -1",
            "SORT sh BY nosort DESC LIMIT 1 3 STORE d",
            "LRANGE d 0 -1",
            "SORT sh BY nosort GET # GET w_* STORE d",
            "LRANGE d 0 -1",
            "SORT sh ALPHA",
            "SORT sh",
            "SORT sh ALPHA LIMIT 2 2 DESC",
            // Sorted sets keep their order with nosort (ties by member).
            "SORT zl BY nosort",
            "SORT zl BY nosort DESC",
            "SORT zl BY nosort LIMIT 1 3",
            "SORT zl BY nosort LIMIT 1 3 DESC",
            "SORT zl BY nosort LIMIT 4 10 DESC",
            "SORT zl BY nosort LIMIT 0 0",
            "SORT zl BY nosort STORE d",
            "LRANGE d 0 -1",
            "SORT zl BY nosort DESC LIMIT 1 2 STORE d",
            "LRANGE d 0 -1",
            "SORT zl2 BY nosort",
            "SORT zl2 BY nosort DESC",
            "SORT zl ALPHA DESC",
            "OBJECT ENCODING zl",
            "SORT zl",
        ],
    );
    check_sort(
        &mut p,
        &args_of(&words("SORT sh BY nosort")),
        Cmp::Sorted,
        None,
    );
    check_sort(
        &mut p,
        &args_of(&words("SORT sh BY nosort GET #")),
        Cmp::Sorted,
        None,
    );
    check_sort(
        &mut p,
        &args_of(&words("SORT sh BY nosort LIMIT 0 2")),
        Cmp::Head,
        None,
    );
}

#[test]
fn diff_keyspace_stats() {
    let Some(mut p) = Pair::start() else { return };
    lines(
        &mut p,
        &[
            "RPUSH l 1 2 3",
            "SET w_1 3",
            "HSET h_2 f 1",
            "CONFIG RESETSTAT",
            "SORT l",
            "SORT nokey",
            "SORT l BY w_*",
            "SORT l BY h_*->f GET # GET w_* GET h_*->f",
            "SORT l BY nosort GET w_* LIMIT 0 1",
            "SORT l BY w_* STORE d",
            "SORT l BY w_* ALPHA GET nostar",
            "SORT_RO l BY nosort",
            "SET str x",
            "SORT str",
            "SORT l LIMIT x 1",
            "SORT l BY str GET str GET #",
            "SET w_2 abc",
            "SORT l BY w_* GET w_*",
        ],
    );
    let grab = |r: &[u8]| {
        s(r).lines()
            .filter(|l| l.starts_with("keyspace_"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let (a, b) = p.both(&[b"INFO", b"stats"]);
    assert_eq!(grab(&a), grab(&b));
}

// ------------------------------------------------------- random commands

const RKEYS: &[&str] = &["k0", "k1", "k2", "k3"];
const RELEMS: &[&str] = &["1", "2", "3", "10", "-1", "0", "a", "b", "B", "1.5", "x y"];
const RPATTERNS: &[&str] = &[
    "#",
    "w_*",
    "v_*",
    "h_*->f",
    "h_*->g",
    "nosort",
    "*",
    "k*",
    "w_*->f",
    "h_*",
    "missing_*",
];

/// One random SORT / SORT_RO (and how to compare it), or a write that
/// changes the data set.
fn random_command(r: &mut Rng) -> (Vec<String>, Cmp, Option<String>) {
    let k = |r: &mut Rng| r.pick(RKEYS).to_string();
    let e = |r: &mut Rng| r.pick(RELEMS).to_string();
    match r.below(20) {
        0 => {
            let mut c = vec!["RPUSH".into(), k(r)];
            for _ in 0..=r.below(4) {
                c.push(e(r));
            }
            (c, Cmp::Exact, None)
        }
        1 => {
            // Sets hold integers only (intset: same order in both).
            let mut c = vec!["SADD".into(), k(r)];
            for _ in 0..=r.below(4) {
                c.push(r.pick(&["1", "2", "3", "10", "-1", "0", "77"]).to_string());
            }
            (c, Cmp::Exact, None)
        }
        2 => {
            let mut c = vec!["ZADD".into(), k(r)];
            for _ in 0..=r.below(3) {
                c.push(r.pick(&["1", "2", "2", "-1", "0"]).to_string());
                c.push(e(r));
            }
            (c, Cmp::Exact, None)
        }
        3 => {
            let key = format!("{}_{}", r.pick(&["w", "v"]), e(r));
            let val = r.pick(&["1", "2", "5", "-3", "abc", "", "1e2", "0x8", "inf"]);
            (vec!["SET".into(), key, val.into()], Cmp::Exact, None)
        }
        4 => {
            let key = format!("h_{}", e(r));
            let f = r.pick(&["f", "g"]);
            let val = r.pick(&["1", "2", "7", "-3", "zz", "", "3.25"]);
            (
                vec!["HSET".into(), key, f.into(), val.into()],
                Cmp::Exact,
                None,
            )
        }
        5 => {
            let key = if r.below(2) == 0 {
                k(r)
            } else {
                format!("{}_{}", r.pick(&["w", "v", "h"]), e(r))
            };
            (vec!["DEL".into(), key], Cmp::Exact, None)
        }
        _ => {
            let ro = r.below(4) == 0;
            let mut c: Vec<String> = vec![if ro { "SORT_RO" } else { "SORT" }.into(), k(r)];
            let mut store = None;
            let mut alpha = false;
            let mut by: Option<String> = None;
            for _ in 0..r.below(6) {
                match r.below(9) {
                    0 => c.push(r.pick(&["ASC", "desc"]).into()),
                    1 | 2 => {
                        c.push("GET".into());
                        c.push(r.pick(RPATTERNS).into());
                    }
                    3 => {
                        c.push("BY".into());
                        let p = r.pick(RPATTERNS).to_string();
                        by = Some(p.clone());
                        c.push(p);
                    }
                    4 => {
                        c.push("LIMIT".into());
                        c.push(r.pick(&["0", "1", "2", "-1", "5", "x"]).into());
                        c.push(r.pick(&["0", "1", "3", "-1", "100"]).into());
                    }
                    5 => {
                        c.push("ALPHA".into());
                        alpha = true;
                    }
                    6 if !ro => {
                        c.push("STORE".into());
                        let d = r.pick(&["dst", "k3"]).to_string();
                        store = Some(d.clone());
                        c.push(d);
                    }
                    7 => {
                        if r.below(4) == 0 {
                            c.push(r.pick(&["bogus", "LIMIT", "STORE", "GET"]).into());
                        }
                    }
                    _ => {
                        let w = r.pick(&["alpha", "DESC"]);
                        alpha |= w == "alpha";
                        c.push(w.into());
                    }
                }
            }
            // Ties under ALPHA BY on a sorted set come in Redis's hash
            // order: compare the shape only.
            let how = if alpha && by.as_deref().is_some_and(|b| b.contains('*') && b != "#") {
                Cmp::Head
            } else {
                Cmp::Exact
            };
            (c, how, store)
        }
    }
}

#[test]
fn diff_random_sorts() {
    let Some(mut p) = Pair::start() else { return };
    let seed = seed_from_env(0x5047_0000_2024_0001u64);
    let mut r = Rng(seed);
    let mut history: Vec<String> = Vec::new();
    let mut kinds = std::collections::HashMap::<u8, usize>::new();
    for n in 0..5000 {
        let (c, mut how, store) = random_command(&mut r);
        let args: Vec<&[u8]> = c.iter().map(|s| s.as_bytes()).collect();
        if how == Cmp::Head {
            // Exact unless the source is a sorted set.
            let (t, _) = p.both(&[b"TYPE", args[1]]);
            if t != b"+zset\r\n" {
                how = Cmp::Exact;
            }
        }
        history.push(format!("{c:?}"));
        let (ours, theirs) = p.both(&args);
        let fail = |what: &str, a: &[u8], b: &[u8]| -> ! {
            let tail = history[history.len().saturating_sub(15)..].join("\n");
            panic!(
                "seed {seed:#x}, command #{n} {what}\nferrokv: {:?}\nredis:   {:?}\nlast commands:\n{tail}",
                s(a),
                s(b)
            );
        };
        if !same(how, &ours, &theirs) {
            let (ta, tb) = p.both(&[b"TYPE", args[1]]);
            let (da, db) = p.both(&[b"SORT", args[1], b"BY", b"nosort"]);
            fail(
                &format!(
                    "differs (type {} / {}, contents {} / {})",
                    s(&ta),
                    s(&tb),
                    s(&da),
                    s(&db)
                ),
                &ours,
                &theirs,
            );
        }
        if let Some(d) = store {
            if ours.starts_with(b":") {
                let (a, b) = p.both(&[b"LRANGE", d.as_bytes(), b"0", b"-1"]);
                if !same(how, &a, &b) {
                    fail("stored list differs", &a, &b);
                }
                if how == Cmp::Head {
                    // Resynchronise the destination.
                    p.both(&[b"DEL", d.as_bytes()]);
                }
            }
        }
        *kinds.entry(ours[0]).or_default() += 1;
    }
    for k in [b'-', b':', b'*'] {
        assert!(
            kinds.get(&k).copied().unwrap_or(0) >= 100,
            "too few {:?} replies: {kinds:?}",
            k as char
        );
    }
    let (a, b) = p.both(&[b"DBSIZE"]);
    assert_eq!(a, b);
}

#[test]
fn diff_large_sources_with_ties() {
    // Many ties in the BY values: glibc's merge sort (no LIMIT) and Redis's
    // pqsort (BY with LIMIT) must put them where Redis does, for lists and
    // intsets (walked in the same order by both).
    let Some(mut p) = Pair::start() else { return };
    let mut r = Rng(0x7135_0000_0000_0042);
    let mut rp: Vec<Vec<u8>> = vec![b"RPUSH".to_vec(), b"big".to_vec()];
    let mut sa: Vec<Vec<u8>> = vec![b"SADD".to_vec(), b"ints".to_vec()];
    for i in 0..600 {
        let e = format!("{}", r.below(400) as i64 - 150);
        rp.push(e.clone().into_bytes());
        if i < 400 {
            sa.push(e.clone().into_bytes());
        }
        let w = format!("{}", r.below(9));
        p.check(&[b"SET", format!("w_{e}").as_bytes(), w.as_bytes()]);
        let a = r.pick(&["x", "y", "z", "xx", ""]);
        p.check(&[b"HSET", format!("h_{e}").as_bytes(), b"a", a.as_bytes()]);
    }
    p.check(&args_of(&rp));
    p.check(&args_of(&sa));
    p.check_line("OBJECT ENCODING ints");
    for src in ["big", "ints"] {
        for by in ["w_*", "h_*->a", "nosort"] {
            for alpha in ["", " ALPHA"] {
                for order in ["", " DESC"] {
                    for limit in [
                        "",
                        " LIMIT 0 10",
                        " LIMIT 100 50",
                        " LIMIT 590 100",
                        " LIMIT 7 1",
                        " LIMIT 250 0",
                    ] {
                        for get in ["", " GET # GET w_*"] {
                            let line = format!("SORT {src} BY {by}{alpha}{order}{limit}{get}");
                            p.check_line(&line);
                            p.check_line(&format!("{line} STORE dst"));
                            p.check_line("LRANGE dst 0 -1");
                        }
                    }
                }
            }
        }
    }
}
