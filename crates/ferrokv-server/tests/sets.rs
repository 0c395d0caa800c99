//! End-to-end tests of the set command family against the real binary:
//! exact replies over raw sockets, encodings (intset / hashtable) and their
//! conversions, SSCAN's guarantees, differential comparison with
//! redis-server 7.0 (directed lines and a seeded random generator), and the
//! shared case 024.
//!
//! Normalisation in differential tests: the members of a `hashtable` set
//! come in hash order, which differs between ferrokv and Redis (different
//! hash functions), so replies of SINTER / SUNION / SDIFF / SSCAN /
//! SRANDMEMBER with a count >= size, and SMEMBERS of a hashtable, are
//! compared after sorting their elements ([`sorted`]); SMEMBERS of an
//! intset and every other reply are compared byte for byte. Random picks
//! (SPOP, SRANDMEMBER) are compared by shape (reply type and length) and by
//! membership.

mod common;
use common::*;
use std::collections::BTreeSet;

// ----------------------------------------------------------------- helpers

/// Length of the RESP frame at the start of `b`.
fn frame_len(b: &[u8]) -> usize {
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
                at += frame_len(&b[at..]);
            }
            at
        }
        _ => eol,
    }
}

/// Splits an aggregate reply into (header line, child frames).
fn children(b: &[u8]) -> Option<(&[u8], Vec<&[u8]>)> {
    if !matches!(b.first(), Some(b'*') | Some(b'~')) {
        return None;
    }
    let eol = b.windows(2).position(|w| w == b"\r\n")? + 2;
    let n: i64 = std::str::from_utf8(&b[1..eol - 2]).ok()?.parse().ok()?;
    let mut at = eol;
    let mut v = Vec::new();
    for _ in 0..n.max(0) {
        let l = frame_len(&b[at..]);
        v.push(&b[at..at + l]);
        at += l;
    }
    Some((&b[..eol], v))
}

/// The reply with the elements of its (flat) aggregate sorted; for a
/// two-element SSCAN-shaped reply, the inner member array is sorted.
fn sorted(b: &[u8]) -> Vec<u8> {
    let Some((head, mut kids)) = children(b) else {
        return b.to_vec();
    };
    if kids.len() == 2 && kids[1].first() == Some(&b'*') && kids[0].first() == Some(&b'$') {
        let mut out = head.to_vec();
        out.extend_from_slice(kids[0]);
        out.extend_from_slice(&sorted(kids[1]));
        return out;
    }
    kids.sort();
    let mut out = head.to_vec();
    for k in kids {
        out.extend_from_slice(k);
    }
    out
}

/// Bulk-string elements of a flat aggregate reply.
fn members(b: &[u8]) -> Vec<Vec<u8>> {
    let (_, kids) = children(b).expect("aggregate");
    kids.iter()
        .map(|k| {
            let eol = k.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
            k[eol..k.len() - 2].to_vec()
        })
        .collect()
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn lines(p: &mut Pair, ls: &[&str]) {
    for l in ls {
        p.check_line(l);
    }
}

/// Sends `line` to both and compares the replies after [`sorted`].
fn check_sorted(p: &mut Pair, line: &str) {
    let parts: Vec<&[u8]> = line.split_whitespace().map(str::as_bytes).collect();
    let (a, b) = p.both(&parts);
    assert_eq!(s(&sorted(&a)), s(&sorted(&b)), "reply differs for {line}");
}

/// OBJECT ENCODING on both, asserted equal and to `want`.
fn enc(p: &mut Pair, key: &str, want: &str) {
    let (a, b) = p.both(&[b"OBJECT", b"ENCODING", key.as_bytes()]);
    assert_eq!(s(&a), s(&b), "encoding of {key} differs");
    assert_eq!(
        s(&a),
        format!("${}\r\n{want}\r\n", want.len()),
        "encoding of {key}"
    );
}

// ----------------------------------------------------------- e2e (ours)

#[test]
fn basic_replies() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmds("SADD s 3 1 2 2"), b":3\r\n");
    assert_eq!(
        c.cmds("SMEMBERS s"),
        b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n"
    );
    assert_eq!(c.cmds("OBJECT ENCODING s"), b"$6\r\nintset\r\n");
    assert_eq!(c.cmds("TYPE s"), b"+set\r\n");
    assert_eq!(c.cmds("SISMEMBER s 2"), b":1\r\n");
    assert_eq!(c.cmds("SISMEMBER s 02"), b":0\r\n");
    assert_eq!(c.cmds("SMISMEMBER s 1 x 3"), b"*3\r\n:1\r\n:0\r\n:1\r\n");
    assert_eq!(c.cmds("SCARD s"), b":3\r\n");
    assert_eq!(c.cmds("SREM s 1 2 3 4"), b":3\r\n");
    assert_eq!(c.cmds("EXISTS s"), b":0\r\n");
    assert_eq!(c.cmds("SMEMBERS s"), b"*0\r\n");
    assert_eq!(c.cmds("SPOP s"), b"$-1\r\n");
    assert_eq!(c.cmds("SPOP s 2"), b"*0\r\n");
    assert_eq!(c.cmds("SRANDMEMBER s"), b"$-1\r\n");
    assert_eq!(c.cmds("SRANDMEMBER s 2"), b"*0\r\n");
    assert_eq!(c.cmds("SSCAN s 0"), b"*2\r\n$1\r\n0\r\n*0\r\n");
    // RESP3: sets for SMEMBERS/SINTER/SUNION/SDIFF/SPOP count, arrays for
    // SRANDMEMBER count.
    c.cmds("HELLO 3");
    assert_eq!(c.cmds("SMEMBERS nokey"), b"~0\r\n");
    assert_eq!(c.cmds("SPOP nokey 1"), b"~0\r\n");
    assert_eq!(c.cmds("SADD t a"), b":1\r\n");
    assert_eq!(c.cmds("SUNION t"), b"~1\r\n$1\r\na\r\n");
    assert_eq!(c.cmds("SINTER t"), b"~1\r\n$1\r\na\r\n");
    assert_eq!(c.cmds("SDIFF t"), b"~1\r\n$1\r\na\r\n");
    assert_eq!(c.cmds("SRANDMEMBER t 5"), b"*1\r\n$1\r\na\r\n");
    assert_eq!(c.cmds("SRANDMEMBER t -2"), b"*2\r\n$1\r\na\r\n$1\r\na\r\n");
    assert_eq!(c.cmds("SPOP t 5"), b"~1\r\n$1\r\na\r\n");
    assert_eq!(c.cmds("EXISTS t"), b":0\r\n");
}

#[test]
fn ttl_kept_by_writes_dropped_by_store() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmds("SADD s a b c");
    c.cmds("EXPIRE s 1000");
    c.cmds("SADD s d");
    c.cmds("SREM s a");
    c.cmds("SPOP s");
    assert_eq!(c.cmds("TTL s"), b":1000\r\n");
    c.cmds("SADD d x");
    c.cmds("EXPIRE d 1000");
    assert_eq!(c.cmds("SUNIONSTORE d s"), b":2\r\n");
    assert_eq!(c.cmds("TTL d"), b":-1\r\n");
    // An expired set is gone for every command.
    c.cmds("SADD e 1");
    c.cmds("PEXPIRE e 1");
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(c.cmds("SCARD e"), b":0\r\n");
    assert_eq!(c.cmds("SINTERCARD 1 e"), b":0\r\n");
}

#[test]
fn huge_counts_do_not_panic() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmds("SADD s 1 2 3 a");
    for n in ["9223372036854775807", "4294967296", "1000000"] {
        assert_eq!(members(&c.cmds(&format!("SRANDMEMBER s {n}"))).len(), 4);
    }
    assert_eq!(
        c.cmds("SRANDMEMBER s -9223372036854775808"),
        b"-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n"
    );
    assert_eq!(members(&c.cmds("SRANDMEMBER s -1000")).len(), 1000);
    assert_eq!(
        c.cmds("SPOP s -9223372036854775808"),
        b"-ERR value is out of range, must be positive\r\n"
    );
    let r = c.cmds("SSCAN s 0 COUNT 9223372036854775807");
    assert_eq!(members(children(&r).unwrap().1[1]).len(), 4);
    assert_eq!(members(&c.cmds("SPOP s 9223372036854775807")).len(), 4);
    assert_eq!(c.cmds("EXISTS s"), b":0\r\n");
    assert_eq!(
        c.cmds("SINTERCARD 9223372036854775807 a"),
        b"-ERR Number of keys can't be greater than number of args\r\n"
    );
    assert_eq!(c.cmds("PING"), b"+PONG\r\n");
}

#[test]
fn sscan_returns_every_member_of_a_large_set() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let n = 3000;
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let mut args: Vec<Vec<u8>> = vec![b"SADD".to_vec(), b"big".to_vec()];
        args.extend(chunk.iter().map(|i| format!("m{i}").into_bytes()));
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        c.cmd(&refs);
    }
    let mut seen = BTreeSet::new();
    let mut cursor = "0".to_string();
    let mut calls = 0;
    loop {
        let r = c.cmd(&[b"SSCAN", b"big", cursor.as_bytes(), b"COUNT", b"50"]);
        let (_, kids) = children(&r).unwrap();
        let cur = kids[0];
        cursor = s(&cur[cur.iter().position(|&b| b == b'\n').unwrap() + 1..cur.len() - 2]);
        for m in members(kids[1]) {
            seen.insert(m);
        }
        calls += 1;
        // Members removed and added during the scan must not hide the
        // others.
        if calls == 5 {
            c.cmds("SADD big extra1 extra2 extra3");
            c.cmds("SREM big extra1");
        }
        if cursor == "0" {
            break;
        }
    }
    assert!(calls > 10, "COUNT honoured: {calls} calls");
    for i in 0..n {
        assert!(seen.contains(format!("m{i}").as_bytes()), "m{i} missing");
    }
    // MATCH filters after the bucket walk.
    let r = c.cmds("SSCAN big 0 MATCH m1? COUNT 100000");
    let ms = members(children(&r).unwrap().1[1]);
    assert_eq!(ms.len(), 10);
}

#[test]
fn srandmember_and_spop_pick_members() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    for (key, first) in [("ints", 0), ("strs", 1)] {
        let mut args: Vec<Vec<u8>> = vec![b"SADD".to_vec(), key.as_bytes().to_vec()];
        for i in 0..100 {
            args.push(
                if first == 0 {
                    format!("{i}")
                } else {
                    format!("s{i}")
                }
                .into_bytes(),
            );
        }
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        c.cmd(&refs);
        let all: BTreeSet<Vec<u8>> = args[2..].iter().cloned().collect();
        for count in [1usize, 5, 40, 90, 99] {
            let r = c.cmd(&[b"SRANDMEMBER", key.as_bytes(), count.to_string().as_bytes()]);
            let ms = members(&r);
            let distinct: BTreeSet<_> = ms.iter().cloned().collect();
            assert_eq!(ms.len(), count);
            assert_eq!(distinct.len(), count, "distinct for {count}");
            assert!(distinct.is_subset(&all));
        }
        let ms = members(&c.cmd(&[b"SRANDMEMBER", key.as_bytes(), b"-300"]));
        assert_eq!(ms.len(), 300);
        assert!(ms.iter().all(|m| all.contains(m)));
        // SPOP removes what it returns: case 2 (few) then case 3 (most).
        let mut left = all.clone();
        for count in ["3", "90"] {
            let popped = members(&c.cmd(&[b"SPOP", key.as_bytes(), count.as_bytes()]));
            assert_eq!(popped.len(), count.parse::<usize>().unwrap());
            for m in popped {
                assert!(left.remove(&m), "popped twice or foreign");
            }
            let rest: BTreeSet<Vec<u8>> = members(&c.cmd(&[b"SMEMBERS", key.as_bytes()]))
                .into_iter()
                .collect();
            assert_eq!(rest, left);
        }
    }
}

#[test]
fn shared_case_024() {
    // The shared case runs in tests/cases.rs; this is its RESP2 core.
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmds("SADD s a"), b":1\r\n");
    assert_eq!(
        c.cmds("SRANDMEMBER s -3"),
        b"*3\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n"
    );
    assert_eq!(c.cmds("SRANDMEMBER s 3"), b"*1\r\n$1\r\na\r\n");
    assert_eq!(c.cmds("SRANDMEMBER nokey -2"), b"*0\r\n");
}

// ---------------------------------------------------------- differential

#[test]
fn diff_errors_and_edges() {
    let Some(mut p) = Pair::start() else { return };
    lines(
        &mut p,
        &[
            "SADD s 1 2 3",
            "SET str x",
            "SADD",
            "SADD s",
            "SREM s",
            "SMEMBERS",
            "SMEMBERS s x",
            "SISMEMBER s",
            "SMISMEMBER s",
            "SCARD",
            "SPOP",
            "SPOP s 1 2",
            "SPOP s x",
            "SPOP s -1",
            "SPOP s 1.5",
            "SPOP nokey -1",
            "SPOP nokey x",
            "SPOP str 1",
            "SPOP str",
            "SPOP str 0",
            "SPOP s 0",
            "SRANDMEMBER",
            "SRANDMEMBER s 1 2",
            "SRANDMEMBER s x",
            "SRANDMEMBER s -9223372036854775808",
            "SRANDMEMBER s 9223372036854775808",
            "SRANDMEMBER nokey x",
            "SRANDMEMBER nokey 0",
            "SRANDMEMBER s 0",
            "SRANDMEMBER str",
            "SRANDMEMBER str 2",
            "SRANDMEMBER str -2",
            "SMOVE s",
            "SMOVE s d",
            "SMOVE s d 1 2",
            "SMOVE nokey str 1",
            "SMOVE str s 1",
            "SMOVE s str 1",
            "SMOVE s str 99",
            "SMOVE s s 1",
            "SMOVE s s 9",
            "SMOVE str str 1",
            "SINTER",
            "SINTERCARD",
            "SINTERCARD 1",
            "SINTERCARD 0 s",
            "SINTERCARD -1 s",
            "SINTERCARD x s",
            "SINTERCARD 2 s",
            "SINTERCARD 9223372036854775807 s",
            "SINTERCARD 1 s LIMIT",
            "SINTERCARD 1 s LIMIT -1",
            "SINTERCARD 1 s LIMIT x",
            "SINTERCARD 1 s LIMIT 0",
            "SINTERCARD 1 s LIMIT 2",
            "SINTERCARD 1 s limit 1 LIMIT 2",
            "SINTERCARD 1 s FOO 1",
            "SINTERCARD 2 s str",
            "SINTERCARD 2 nokey str",
            "SINTERCARD 2 nokey s",
            "SINTERSTORE d",
            "SINTERSTORE d str",
            "SUNIONSTORE d",
            "SDIFFSTORE d",
            "SINTER s str",
            "SINTER nokey str",
            "SINTER str nokey",
            "SUNION s str",
            "SUNION nokey str",
            "SDIFF s str",
            "SDIFF nokey str",
            "SDIFF str nokey",
            "SINTERSTORE str s",
            "TYPE str",
            "SET str x",
            "SUNIONSTORE str s",
            "TYPE str",
            "SET str x",
            "SDIFFSTORE str nokey",
            "EXISTS str",
            "SET str x",
            "SINTERSTORE str nokey s",
            "EXISTS str",
            "SET str x",
            "SSCAN",
            "SSCAN s",
            "SSCAN s x",
            "SSCAN s -1",
            "SSCAN s 18446744073709551616",
            "SSCAN s 0 COUNT",
            "SSCAN s 0 COUNT 0",
            "SSCAN s 0 COUNT -1",
            "SSCAN s 0 COUNT x",
            "SSCAN s 0 MATCH",
            "SSCAN s 0 TYPE set",
            "SSCAN s 0 FOO bar",
            "SSCAN s 0 MATCH 1 COUNT 5",
            "SSCAN s 0 MATCH * COUNT 5",
            "SSCAN s 0 match [13]",
            "SSCAN nokey 0 COUNT 0",
            "SSCAN nokey x",
            "SSCAN str 0",
            "SSCAN str x",
            "SSCAN str 0 COUNT 0",
            "SSCAN s 7",
            "SADD str a",
            "SREM str a",
            "SMEMBERS str",
            "SISMEMBER str a",
            "SMISMEMBER str a",
            "SCARD str",
            "SISMEMBER nokey a",
            "SMISMEMBER nokey a b",
            "SCARD nokey",
            "SREM nokey a",
            "SMEMBERS s",
        ],
    );
}

#[test]
fn diff_int_members_and_orders() {
    let Some(mut p) = Pair::start() else { return };
    lines(
        &mut p,
        &[
            // string2ll canonical integers only.
            "SADD i 0 -0 01 +1 1 -1 9223372036854775807 -9223372036854775808 9223372036854775808",
            "OBJECT ENCODING i",
            "SADD n 5 -3 70000 -70000 4294967296 -4294967296 0",
            "OBJECT ENCODING n",
            "SMEMBERS n",
            "SISMEMBER n 70000",
            "SISMEMBER n 070000",
            "SISMEMBER n 4294967296",
            "SMISMEMBER n -4294967296 x 0 -0",
            "SREM n 70000 -70000 4294967296",
            "SMEMBERS n",
            "SADD n 3 2 1",
            "SMEMBERS n",
            "SSCAN n 0",
            "SSCAN n 0 MATCH -*",
            "SSCAN n 123 COUNT 1",
            "SADD m 2 4 6 8 10 12",
            "SINTER m n",
            "SINTER n m",
            "SUNION m n",
            "SUNION n m nokey",
            "SDIFF n m",
            "SDIFF m n",
            "SDIFF m nokey n",
            "SDIFF m m",
            "SDIFF m n m",
            "SINTERCARD 2 m n",
            "SINTERCARD 2 m n LIMIT 1",
            "SINTERSTORE d m n",
            "OBJECT ENCODING d",
            "SMEMBERS d",
            "SUNIONSTORE d m n",
            "OBJECT ENCODING d",
            "SMEMBERS d",
            "SDIFFSTORE d m n",
            "SMEMBERS d",
            "SDIFFSTORE d n n",
            "EXISTS d",
            "SINTERSTORE d m nokey",
            "EXISTS d",
            "SUNIONSTORE d nokey",
            "EXISTS d",
            "SPOP m 100",
            "EXISTS m",
            "SRANDMEMBER n 100",
            "SMOVE n newdst 0",
            "OBJECT ENCODING newdst",
            "SMOVE n newdst2 -3",
            "SMEMBERS newdst2",
            "SMEMBERS n",
        ],
    );
    check_sorted(&mut p, "SMEMBERS i");
    // RESP3 for the same shapes.
    p.both(&[b"HELLO", b"3"]);
    lines(
        &mut p,
        &[
            "SMEMBERS n",
            "SINTER n n",
            "SUNION n",
            "SDIFF n",
            "SPOP nokey 2",
            "SPOP n 0",
            "SRANDMEMBER n 100",
            "SRANDMEMBER nokey 1",
            "SRANDMEMBER nokey",
            "SMISMEMBER n 1 2",
            "SSCAN n 0",
            "SINTERCARD 1 n",
        ],
    );
}

#[test]
fn diff_strings_sorted() {
    let Some(mut p) = Pair::start() else { return };
    lines(
        &mut p,
        &[
            "SADD a x y z 1 2 3",
            "SADD b y z w 3 4",
            "SADD c z 3 q",
            "SADD bin \"\" \u{1}",
        ],
    );
    for l in [
        "SMEMBERS a",
        "SINTER a b",
        "SINTER a b c",
        "SINTER c b a",
        "SUNION a b c",
        "SDIFF a b",
        "SDIFF a b c",
        "SDIFF b a",
        "SSCAN a 0 COUNT 1000",
        "SSCAN a 0 MATCH [xy] COUNT 1000",
        "SRANDMEMBER a 6",
        "SRANDMEMBER a 60",
        "SPOP c 3",
    ] {
        check_sorted(&mut p, l);
    }
    lines(
        &mut p,
        &[
            "EXISTS c",
            "SINTERSTORE d a b",
            "OBJECT ENCODING d",
            "SCARD d",
            "SUNIONSTORE d a b",
            "OBJECT ENCODING d",
            "SCARD d",
            "SDIFFSTORE d a b",
            "SCARD d",
            "OBJECT ENCODING d",
            "SINTERCARD 3 a b d",
            "SMOVE a b x",
            "SMOVE a b y",
            "SISMEMBER b x",
            "SMOVE a b 1",
            "SCARD a",
            "SCARD b",
            "SREM a 2 3 z",
            "SMOVE a newkey x",
            "SMOVE a newkey x",
            "EXISTS a",
            "OBJECT ENCODING newkey",
            "SMEMBERS newkey",
        ],
    );
    check_sorted(&mut p, "SMEMBERS b");
}

#[test]
fn diff_encoding_conversions() {
    let Some(mut p) = Pair::start() else { return };
    // Default threshold: 512 integers stay an intset, the 513th converts.
    let mut args: Vec<String> = vec!["SADD".into(), "big".into()];
    args.extend((0..512).map(|i| i.to_string()));
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    p.check(&refs);
    enc(&mut p, "big", "intset");
    p.check_line("SADD big 511");
    enc(&mut p, "big", "intset");
    p.check_line("SADD big 512");
    enc(&mut p, "big", "hashtable");
    // Never back: shrinking keeps the hashtable.
    let mut args: Vec<String> = vec!["SREM".into(), "big".into()];
    args.extend((0..510).map(|i| i.to_string()));
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    p.check(&refs);
    enc(&mut p, "big", "hashtable");
    check_sorted(&mut p, "SMEMBERS big");
    // A non-integer converts; so does a non-canonical integer.
    p.check_line("SADD t 1 2");
    enc(&mut p, "t", "intset");
    p.check_line("SADD t 03");
    enc(&mut p, "t", "hashtable");
    p.check_line("SADD u 1 2 x");
    enc(&mut p, "u", "hashtable");
    p.check_line("SADD v x");
    enc(&mut p, "v", "hashtable");
    p.check_line("SREM v x");
    p.check_line("SADD v 1");
    enc(&mut p, "v", "intset");
    // CONFIG SET of the threshold; 0 converts at the first member.
    lines(
        &mut p,
        &[
            "CONFIG SET set-max-intset-entries 3",
            "CONFIG GET set-max-intset-entries",
            "SADD w 1 2 3",
        ],
    );
    enc(&mut p, "w", "intset");
    p.check_line("SADD w 4");
    enc(&mut p, "w", "hashtable");
    p.check_line("SADD x 1 2 3 4 5");
    enc(&mut p, "x", "hashtable");
    // Built results follow the content: intset when all integers and at
    // most the threshold.
    p.check_line("SADD y 1 2 3");
    p.check_line("SUNIONSTORE d y");
    enc(&mut p, "d", "intset");
    p.check_line("SUNIONSTORE d y x");
    enc(&mut p, "d", "hashtable");
    p.check_line("SINTERSTORE d x y");
    enc(&mut p, "d", "intset");
    // SDIFF algorithm 1 (first set small) builds only the result...
    p.check_line("SADD big2 a b c d e f g h i j k l");
    p.check_line("SADD f 1 2 a");
    p.check_line("SDIFFSTORE d f big2");
    enc(&mut p, "d", "intset");
    // ...algorithm 2 (first set large against many small ones) copies
    // the first set then removes, so the all-integer result is a hashtable.
    lines(
        &mut p,
        &[
            "SADD g 1 a b",
            "SADD h1 a",
            "SADD h2 b",
            "SADD h3 z1",
            "SADD h4 z2",
            "SADD h5 z3",
            "SDIFFSTORE d g h1 h2 h3 h4",
        ],
    );
    enc(&mut p, "d", "intset");
    p.check_line("SDIFFSTORE d g h1 h2 h3 h4 h5");
    enc(&mut p, "d", "hashtable");
    p.check_line("SMEMBERS d");
    p.check_line("SADD g 2 c d e f g h i j");
    // SMOVE into a new key: setTypeCreate by the member.
    p.check_line("SMOVE g newi 1");
    enc(&mut p, "newi", "intset");
    p.check_line("SMOVE g news a");
    enc(&mut p, "news", "hashtable");
    // SPOP keeping few members builds a new set (intset again here).
    p.check_line("CONFIG SET set-max-intset-entries 4");
    p.check_line("SADD z 1 2 3 4 5 6 7 8 9 10");
    enc(&mut p, "z", "hashtable");
    p.check_line("CONFIG SET set-max-intset-entries 512");
    let (a, b) = p.both(&[b"SPOP", b"z", b"9"]);
    assert_eq!(members(&a).len(), 9);
    assert_eq!(members(&b).len(), 9);
    enc(&mut p, "z", "intset");
    p.check_line("SCARD z");
    // COPY keeps the encoding.
    p.check_line("COPY big bigcopy");
    enc(&mut p, "bigcopy", "hashtable");
    p.check_line("COPY y ycopy");
    enc(&mut p, "ycopy", "intset");
    p.check_line("SMEMBERS ycopy");
    p.check_line("CONFIG SET set-max-intset-entries 0");
    p.check_line("SADD zero 1");
    enc(&mut p, "zero", "hashtable");
}

#[test]
fn diff_keyspace_stats() {
    let Some(mut p) = Pair::start() else { return };
    lines(
        &mut p,
        &[
            "CONFIG RESETSTAT",
            "SADD s 1 2",
            "SADD t a",
            "SET str x",
            "SCARD s",
            "SCARD nokey",
            "SISMEMBER s 1",
            "SMISMEMBER nokey 1",
            "SMEMBERS s",
            "SINTER s nokey t",
            "SINTER str s",
            "SDIFFSTORE d s nokey",
            "SINTERCARD 2 s t",
            "SRANDMEMBER t",
            "SRANDMEMBER nokey 3",
            "SSCAN s 0",
            "SSCAN nokey 0",
            "SPOP t 5",
            "SMOVE s t 1",
            "SREM s 2",
        ],
    );
    let grab = |r: &[u8]| {
        let t = s(r);
        t.lines()
            .filter(|l| l.starts_with("keyspace_"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let (a, b) = p.both(&[b"INFO", b"stats"]);
    assert_eq!(grab(&a), grab(&b));
}

// ------------------------------------------------------- random commands

const KEYS: &[&str] = &["s0", "s1", "s2", "s3"];
const MEMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "7",
    "100",
    "70000",
    "-70000",
    "5000000000",
    "9223372036854775807",
    "-9223372036854775808",
    "01",
    "+1",
    "-0",
    "a",
    "b",
    "c",
    "hello",
    "",
    "x y",
];
const COUNTS: &[&str] = &["0", "1", "2", "3", "5", "100", "-1", "-3", "x", "1.5", ""];

/// How a reply is compared.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Cmp {
    /// Byte for byte.
    Exact,
    /// After sorting the aggregate's elements.
    Sorted,
    /// SMEMBERS: exact for an intset (ascending), sorted otherwise.
    Members,
    /// Random picks: same shape; then the key is resynchronised.
    Random,
}

fn random_command(r: &mut Rng) -> (Vec<String>, Cmp) {
    let k = |r: &mut Rng| r.pick(KEYS).to_string();
    let m = |r: &mut Rng| r.pick(MEMBERS).to_string();
    let many = |r: &mut Rng, c: &mut Vec<String>, f: &dyn Fn(&mut Rng) -> String| {
        for _ in 0..=r.below(4) {
            c.push(f(r));
        }
    };
    match r.below(30) {
        0..=5 => {
            let mut c = vec!["SADD".into(), k(r)];
            many(r, &mut c, &m);
            (c, Cmp::Exact)
        }
        6 | 7 => {
            let mut c = vec!["SREM".into(), k(r)];
            many(r, &mut c, &m);
            (c, Cmp::Exact)
        }
        8 => (vec!["SMEMBERS".into(), k(r)], Cmp::Members),
        9 => (vec!["SISMEMBER".into(), k(r), m(r)], Cmp::Exact),
        10 => {
            let mut c = vec!["SMISMEMBER".into(), k(r)];
            many(r, &mut c, &m);
            (c, Cmp::Exact)
        }
        11 => (vec!["SCARD".into(), k(r)], Cmp::Exact),
        12 => {
            let c = r.pick(COUNTS).to_string();
            // Deterministic unless the count is below the size.
            (vec!["SPOP".into(), k(r), c], Cmp::Random)
        }
        13 => (vec!["SPOP".into(), k(r)], Cmp::Random),
        14 => (
            vec!["SRANDMEMBER".into(), k(r), r.pick(COUNTS).into()],
            Cmp::Random,
        ),
        15 => (vec!["SMOVE".into(), k(r), k(r), m(r)], Cmp::Exact),
        16 | 17 => {
            let op = r.pick(&["SINTER", "SUNION", "SDIFF"]);
            let mut c = vec![op.to_string()];
            many(r, &mut c, &k);
            (c, Cmp::Sorted)
        }
        18 | 19 => {
            let op = r.pick(&["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]);
            let mut c = vec![op.to_string(), k(r)];
            many(r, &mut c, &k);
            (c, Cmp::Exact)
        }
        20 => {
            let n = r.below(4);
            let mut c = vec![
                "SINTERCARD".into(),
                r.pick(&["1", "2", "3", "0", "x"]).into(),
            ];
            for _ in 0..n {
                c.push(k(r));
            }
            if r.below(2) == 0 {
                c.push("LIMIT".into());
                c.push(r.pick(&["0", "1", "2", "-1", "x"]).into());
            }
            (c, Cmp::Exact)
        }
        21 => {
            let mut c = vec!["SSCAN".into(), k(r), r.pick(&["0", "0", "x"]).into()];
            match r.below(5) {
                0 => c.extend([
                    "MATCH".into(),
                    r.pick(&["*", "1*", "[ab]", "-*"]).into(),
                    "COUNT".into(),
                    "1000".into(),
                ]),
                1 => c.extend(["COUNT".into(), r.pick(&["1000", "0", "x"]).into()]),
                2 => c.push("COUNT".into()),
                3 => c.push("MATCH".into()),
                // Without COUNT a hashtable's batch depends on the hash
                // function: only full iterations are compared.
                _ => c.extend(["COUNT".into(), "1000".into()]),
            }
            (c, Cmp::Sorted)
        }
        22 => (vec!["SET".into(), k(r), m(r)], Cmp::Exact),
        23 => (vec!["DEL".into(), k(r)], Cmp::Exact),
        24 => (vec!["TYPE".into(), k(r)], Cmp::Exact),
        25 | 26 => (vec!["OBJECT".into(), "ENCODING".into(), k(r)], Cmp::Exact),
        27 => (vec!["EXISTS".into(), k(r)], Cmp::Exact),
        28 => (
            vec![
                "CONFIG".into(),
                "SET".into(),
                "set-max-intset-entries".into(),
                r.pick(&["512", "3", "5", "0"]).into(),
            ],
            Cmp::Exact,
        ),
        _ => (
            vec!["COPY".into(), k(r), k(r), "REPLACE".into()],
            Cmp::Exact,
        ),
    }
}

#[test]
fn diff_random_commands() {
    let Some(mut p) = Pair::start() else { return };
    let seed = seed_from_env(0x5e75_0000_2024_0001u64);
    let mut r = Rng(seed);
    let mut history: Vec<String> = Vec::new();
    let mut kinds = std::collections::HashMap::<u8, usize>::new();
    for n in 0..4000 {
        let (c, how) = random_command(&mut r);
        let args: Vec<&[u8]> = c.iter().map(|s| s.as_bytes()).collect();
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
        let same = match how {
            Cmp::Exact => ours == theirs,
            Cmp::Sorted => sorted(&ours) == sorted(&theirs),
            Cmp::Members => {
                let e = p.b.cmd(&[b"OBJECT", b"ENCODING", args[1]]);
                let _ = p.a.cmd(&[b"OBJECT", b"ENCODING", args[1]]);
                if e.starts_with(b"$6\r\nintset") {
                    ours == theirs
                } else {
                    sorted(&ours) == sorted(&theirs)
                }
            }
            Cmp::Random => {
                let shape = |x: &[u8]| match children(x) {
                    Some((h, _)) => h.to_vec(),
                    None if x.starts_with(b"$") && !x.starts_with(b"$-1") => b"$".to_vec(),
                    None => x.to_vec(),
                };
                let same_shape = shape(&ours) == shape(&theirs);
                // Resynchronise the key: a pick that removed members at
                // random leaves the two sets different.
                if same_shape
                    && c[0] == "SPOP"
                    && (ours.starts_with(b"$") && !ours.starts_with(b"$-1")
                        || ours.starts_with(b"*") && ours != b"*0\r\n")
                {
                    let (x, y) = p.both(&[b"SCARD", args[1]]);
                    if x != y {
                        fail("SCARD after SPOP differs", &x, &y);
                    }
                    p.both(&[b"DEL", args[1]]);
                }
                same_shape
            }
        };
        if !same {
            fail("differs", &ours, &theirs);
        }
        *kinds.entry(ours[0]).or_default() += 1;
    }
    for k in [b'+', b'-', b':', b'$', b'*'] {
        assert!(
            kinds.get(&k).copied().unwrap_or(0) >= 50,
            "too few {:?} replies: {kinds:?}",
            k as char
        );
    }
    // Final state: every key identical.
    for k in KEYS {
        let (a, b) = p.both(&[b"TYPE", k.as_bytes()]);
        assert_eq!(a, b);
        if a == b"+set\r\n" {
            let (a, b) = p.both(&[b"SMEMBERS", k.as_bytes()]);
            assert_eq!(sorted(&a), sorted(&b), "final {k}");
        }
    }
}

#[test]
fn diff_arity_and_command_info() {
    let Some(mut p) = Pair::start() else { return };
    for c in [
        "sadd",
        "srem",
        "smembers",
        "sismember",
        "smismember",
        "scard",
        "spop",
        "srandmember",
        "smove",
        "sinter",
        "sintercard",
        "sinterstore",
        "sunion",
        "sunionstore",
        "sdiff",
        "sdiffstore",
        "sscan",
    ] {
        p.check_line(c);
        let (a, b) = p.both(&[b"COMMAND", b"INFO", c.as_bytes()]);
        // Compare the legacy part (name, arity, flags, keys, categories);
        // key specs are not modelled.
        let (_, ka) = children(&a).unwrap();
        let (_, kb) = children(&b).unwrap();
        let (_, fa) = children(ka[0]).unwrap();
        let (_, fb) = children(kb[0]).unwrap();
        for i in 0..7 {
            let (x, y) = (fa[i], fb[i]);
            if i == 2 || i == 6 {
                assert_eq!(s(&sorted(x)), s(&sorted(y)), "{c} field {i}");
            } else {
                assert_eq!(s(x), s(y), "{c} field {i}");
            }
        }
    }
}
