//! End-to-end tests of the HASH command family against the real
//! `ferrokv-server` binary: exact reply bytes of every command and its edge
//! cases, encodings and their conversion (OBJECT ENCODING, CONFIG SET of the
//! thresholds), and differential tests that send the same commands to
//! redis-server 7.0 and compare the replies byte for byte, including a
//! seeded random command generator.
//!
//! Normalisation (only where a reply legitimately varies):
//! - HGETALL / HKEYS / HVALS of a `hashtable` hash: element order depends on
//!   the hash function, so fields (HGETALL: field/value pairs) are compared
//!   sorted, after checking both servers report the `hashtable` encoding;
//! - HSCAN of a `hashtable` hash: cursors and the split of elements between
//!   calls depend on the table, so a full iteration is run on each server and
//!   the sets of returned pairs are compared (errors and `listpack` replies
//!   are compared exactly);
//! - HRANDFIELD: which fields come back is random, so the reply's shape is
//!   compared (frame types, element count), each returned field (and value)
//!   is checked to belong to the hash, and a positive count's fields to be
//!   distinct; errors, nulls and empty replies are compared exactly.

mod common;
use common::resp::{elems, parse, sorted, Resp};
use common::*;
use std::collections::{BTreeMap, BTreeSet};

// ------------------------------------------------------------ RESP decoding

fn bulk(r: &Resp) -> Vec<u8> {
    match r {
        Resp::Bulk(Some(v)) => v.clone(),
        other => panic!("expected bulk, got {other:?}"),
    }
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ------------------------------------------------------------ helpers

/// Sends `line` and asserts the exact reply.
fn expect(c: &mut Raw, line: &str, want: &str) {
    let got = c.cmds(line);
    assert_eq!(s(&got), want, "reply to {line:?}");
}

/// Sends `args` and asserts the exact reply.
fn expect_args(c: &mut Raw, args: &[&[u8]], want: &str) {
    let got = c.cmd(args);
    assert_eq!(s(&got), want, "reply to {args:?}");
}

fn lines(p: &mut Pair, ls: &[&str]) {
    for l in ls {
        p.check_line(l);
    }
}

// ------------------------------------------------------------ ferrokv alone

#[test]
fn hset_hget_and_friends() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    expect(&mut c, "HSET h a 1 b 2 c 3", ":3\r\n");
    expect(&mut c, "HSET h b 20 d 4", ":1\r\n");
    expect(
        &mut c,
        "HGETALL h",
        "*8\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$2\r\n20\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n4\r\n",
    );
    expect(
        &mut c,
        "HKEYS h",
        "*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n",
    );
    expect(
        &mut c,
        "HVALS h",
        "*4\r\n$1\r\n1\r\n$2\r\n20\r\n$1\r\n3\r\n$1\r\n4\r\n",
    );
    expect(&mut c, "HGET h b", "$2\r\n20\r\n");
    expect(&mut c, "HGET h nope", "$-1\r\n");
    expect(&mut c, "HGET nokey a", "$-1\r\n");
    expect(
        &mut c,
        "HMGET h a nope d",
        "*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n4\r\n",
    );
    expect(&mut c, "HMGET nokey a b", "*2\r\n$-1\r\n$-1\r\n");
    expect(&mut c, "HLEN h", ":4\r\n");
    expect(&mut c, "HLEN nokey", ":0\r\n");
    expect(&mut c, "HEXISTS h a", ":1\r\n");
    expect(&mut c, "HEXISTS h z", ":0\r\n");
    expect(&mut c, "HEXISTS nokey z", ":0\r\n");
    expect(&mut c, "HSTRLEN h b", ":2\r\n");
    expect(&mut c, "HSTRLEN h z", ":0\r\n");
    expect(&mut c, "HSTRLEN nokey z", ":0\r\n");
    expect(&mut c, "HMSET h e 5 f 6", "+OK\r\n");
    expect(&mut c, "HSETNX h e 50", ":0\r\n");
    expect(&mut c, "HSETNX h g 7", ":1\r\n");
    expect(&mut c, "HGET h e", "$1\r\n5\r\n");
    expect(&mut c, "HSET h a 1 a 2 a 3", ":0\r\n");
    expect(&mut c, "HGET h a", "$1\r\n3\r\n");
    expect(&mut c, "HGETALL nokey", "*0\r\n");
    expect(&mut c, "HKEYS nokey", "*0\r\n");
    expect(&mut c, "HVALS nokey", "*0\r\n");
    // Arity and pairing.
    expect(
        &mut c,
        "HSET h a",
        "-ERR wrong number of arguments for 'hset' command\r\n",
    );
    expect(
        &mut c,
        "HSET h a 1 b",
        "-ERR wrong number of arguments for 'hset' command\r\n",
    );
    expect(
        &mut c,
        "HMSET h a 1 b",
        "-ERR wrong number of arguments for 'hmset' command\r\n",
    );
    expect(
        &mut c,
        "HGET h",
        "-ERR wrong number of arguments for 'hget' command\r\n",
    );
    expect(
        &mut c,
        "HDEL h",
        "-ERR wrong number of arguments for 'hdel' command\r\n",
    );
    // Binary-safe fields and values, empty strings.
    expect_args(
        &mut c,
        &[b"HSET", b"bin", b"\x00\r\n", b"", b"", b"\xff"],
        ":2\r\n",
    );
    expect_args(&mut c, &[b"HGET", b"bin", b"\x00\r\n"], "$0\r\n\r\n");
    assert_eq!(c.cmd(&[b"HGET", b"bin", b""]), b"$1\r\n\xff\r\n");
}

#[test]
fn hdel_deletes_emptied_keys() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    expect(&mut c, "HSET h a 1 b 2", ":2\r\n");
    expect(&mut c, "HDEL h a zz a", ":1\r\n");
    expect(&mut c, "EXISTS h", ":1\r\n");
    expect(&mut c, "HDEL h b", ":1\r\n");
    expect(&mut c, "EXISTS h", ":0\r\n");
    expect(&mut c, "HDEL h b", ":0\r\n");
    expect(&mut c, "TYPE h", "+none\r\n");
    // Same for a hashtable-encoded hash.
    let mut args: Vec<String> = vec!["HSET".into(), "big".into()];
    for i in 0..600 {
        args.push(format!("f{i}"));
        args.push(format!("v{i}"));
    }
    let a: Vec<&[u8]> = args.iter().map(|x| x.as_bytes()).collect();
    expect_args(&mut c, &a, ":600\r\n");
    expect(&mut c, "OBJECT ENCODING big", "$9\r\nhashtable\r\n");
    let mut del: Vec<String> = vec!["HDEL".into(), "big".into()];
    for i in 0..600 {
        del.push(format!("f{i}"));
    }
    let d: Vec<&[u8]> = del.iter().map(|x| x.as_bytes()).collect();
    expect_args(&mut c, &d, ":600\r\n");
    expect(&mut c, "EXISTS big", ":0\r\n");
}

#[test]
fn wrongtype_everywhere() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    expect(&mut c, "SET s x", "+OK\r\n");
    const W: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    for line in [
        "HSET s a 1",
        "HSETNX s a 1",
        "HMSET s a 1",
        "HGET s a",
        "HMGET s a",
        "HGETALL s",
        "HKEYS s",
        "HVALS s",
        "HDEL s a",
        "HLEN s",
        "HEXISTS s a",
        "HSTRLEN s a",
        "HINCRBY s a 1",
        "HINCRBYFLOAT s a 1",
        "HSCAN s 0",
        "HRANDFIELD s",
        "HRANDFIELD s 2",
        "HRANDFIELD s -2 WITHVALUES",
    ] {
        expect(&mut c, line, W);
    }
    expect(&mut c, "GET s", "$1\r\nx\r\n");
    expect(&mut c, "HSET h a 1", ":1\r\n");
    expect(&mut c, "GET h", W);
    expect(&mut c, "TYPE h", "+hash\r\n");
    // Argument errors found before the lookup win over WRONGTYPE.
    expect(
        &mut c,
        "HINCRBY s a x",
        "-ERR value is not an integer or out of range\r\n",
    );
    expect(
        &mut c,
        "HINCRBYFLOAT s a x",
        "-ERR value is not a valid float\r\n",
    );
    expect(&mut c, "HSCAN s x", "-ERR invalid cursor\r\n");
    expect(
        &mut c,
        "HRANDFIELD s x",
        "-ERR value is not an integer or out of range\r\n",
    );
    expect(
        &mut c,
        "HSET s a",
        "-ERR wrong number of arguments for 'hset' command\r\n",
    );
    // ...and HSCAN options are parsed after it.
    expect(&mut c, "HSCAN s 0 COUNT 0", W);
}

#[test]
fn counters() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    expect(&mut c, "HINCRBY h n 5", ":5\r\n");
    expect(&mut c, "HINCRBY h n -7", ":-2\r\n");
    expect(
        &mut c,
        "HINCRBY h n x",
        "-ERR value is not an integer or out of range\r\n",
    );
    expect(
        &mut c,
        "HINCRBY h n 01",
        "-ERR value is not an integer or out of range\r\n",
    );
    expect(&mut c, "HSET h s abc", ":1\r\n");
    expect(
        &mut c,
        "HINCRBY h s 1",
        "-ERR hash value is not an integer\r\n",
    );
    expect(
        &mut c,
        "HINCRBYFLOAT h s 1",
        "-ERR hash value is not a float\r\n",
    );
    expect(&mut c, "HSET h m 9223372036854775807", ":1\r\n");
    expect(
        &mut c,
        "HINCRBY h m 1",
        "-ERR increment or decrement would overflow\r\n",
    );
    expect(&mut c, "HSET h m -9223372036854775808", ":0\r\n");
    expect(
        &mut c,
        "HINCRBY h m -1",
        "-ERR increment or decrement would overflow\r\n",
    );
    expect(&mut c, "HINCRBY h m 9223372036854775807", ":-1\r\n");
    expect(&mut c, "HINCRBYFLOAT h f 0.1", "$3\r\n0.1\r\n");
    expect(&mut c, "HINCRBYFLOAT h f 0.2", "$3\r\n0.3\r\n");
    expect(
        &mut c,
        "HINCRBYFLOAT h f 5.0e3",
        "$22\r\n5000.29999999999999982\r\n",
    );
    expect(
        &mut c,
        "HINCRBYFLOAT h f inf",
        "-ERR value is NaN or Infinity\r\n",
    );
    expect(
        &mut c,
        "HINCRBYFLOAT h f nan",
        "-ERR value is not a valid float\r\n",
    );
    expect(
        &mut c,
        "HINCRBYFLOAT h f 1e5000",
        "-ERR value is not a valid float\r\n",
    );
    expect(&mut c, "HSET h big 1e308", ":1\r\n");
    expect(&mut c, "HINCRBYFLOAT h n 1.5", "$4\r\n-0.5\r\n");
    expect(&mut c, "HGET h n", "$4\r\n-0.5\r\n");
    expect(
        &mut c,
        "HINCRBYFLOAT nokey f inf",
        "-ERR value is NaN or Infinity\r\n",
    );
    expect(&mut c, "EXISTS nokey", ":0\r\n");
}

#[test]
fn hscan_and_hrandfield_basics() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    expect(&mut c, "HSCAN nokey 0", "*2\r\n$1\r\n0\r\n*0\r\n");
    expect(&mut c, "HSCAN nokey 0 COUNT x", "*2\r\n$1\r\n0\r\n*0\r\n");
    expect(&mut c, "HSET h a 1 b 2 ab 3", ":3\r\n");
    expect(
        &mut c,
        "HSCAN h 0",
        "*2\r\n$1\r\n0\r\n*6\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n$2\r\nab\r\n$1\r\n3\r\n",
    );
    expect(
        &mut c,
        "HSCAN h 123 MATCH a* COUNT 1",
        "*2\r\n$1\r\n0\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n$2\r\nab\r\n$1\r\n3\r\n",
    );
    expect(&mut c, "HSCAN h 0 COUNT 0", "-ERR syntax error\r\n");
    expect(
        &mut c,
        "HSCAN h 0 COUNT x",
        "-ERR value is not an integer or out of range\r\n",
    );
    expect(&mut c, "HSCAN h 0 TYPE string", "-ERR syntax error\r\n");
    expect(&mut c, "HSCAN h 0 MATCH", "-ERR syntax error\r\n");
    expect(&mut c, "HSCAN h 1x", "-ERR invalid cursor\r\n");
    expect(&mut c, "HRANDFIELD nokey", "$-1\r\n");
    expect(&mut c, "HRANDFIELD nokey 5", "*0\r\n");
    expect(&mut c, "HRANDFIELD h 0", "*0\r\n");
    expect(
        &mut c,
        "HRANDFIELD h 10 WITHVALUES",
        "*6\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n$2\r\nab\r\n$1\r\n3\r\n",
    );
    expect(&mut c, "HRANDFIELD h 1 WITHVALUE", "-ERR syntax error\r\n");
    expect(
        &mut c,
        "HRANDFIELD h 1 WITHVALUES x",
        "-ERR syntax error\r\n",
    );
    expect(
        &mut c,
        "HRANDFIELD h -9223372036854775808",
        "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n",
    );
    expect(
        &mut c,
        "HRANDFIELD h -4611686018427387904 WITHVALUES",
        "-ERR value is out of range\r\n",
    );
    expect(
        &mut c,
        "HRANDFIELD h 4611686018427387904 WITHVALUES",
        "-ERR value is out of range\r\n",
    );
    // Huge counts: positive ones are bounded by the hash size; negative
    // ones stream (tests/security.rs, huge_random_replies_*).
    let r = parse(&c.cmds("HRANDFIELD h 9223372036854775807"));
    assert_eq!(elems(&r).len(), 3);
    // Negative counts repeat; positive ones are distinct.
    let r = parse(&c.cmds("HRANDFIELD h -50"));
    assert_eq!(elems(&r).len(), 50);
    let r = parse(&c.cmds("HRANDFIELD h 2"));
    let got: BTreeSet<Vec<u8>> = elems(&r).iter().map(bulk).collect();
    assert_eq!(got.len(), 2);
    // RESP3 WITHVALUES: an array of [field, value] pairs.
    c.cmds("HELLO 3");
    let r = parse(&c.cmds("HRANDFIELD h -4 WITHVALUES"));
    assert_eq!(elems(&r).len(), 4);
    for pair in elems(&r) {
        let p = elems(pair);
        assert_eq!(p.len(), 2);
        let want: &[u8] = match bulk(&p[0]).as_slice() {
            b"a" => b"1",
            b"b" => b"2",
            b"ab" => b"3",
            other => panic!("unexpected field {other:?}"),
        };
        assert_eq!(bulk(&p[1]), want);
    }
    expect(&mut c, "HRANDFIELD nokey", "_\r\n");
    expect(&mut c, "HRANDFIELD nokey 2", "*0\r\n");
    expect(&mut c, "HGETALL nokey", "%0\r\n");
    expect(&mut c, "HMGET h a zz", "*2\r\n$1\r\n1\r\n_\r\n");
}

#[test]
fn hscan_hashtable_full_iteration() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let mut args: Vec<String> = vec!["HSET".into(), "h".into()];
    for i in 0..1000 {
        args.push(format!("field:{i}"));
        args.push(i.to_string());
    }
    let a: Vec<&[u8]> = args.iter().map(|x| x.as_bytes()).collect();
    expect_args(&mut c, &a, ":1000\r\n");
    expect(&mut c, "OBJECT ENCODING h", "$9\r\nhashtable\r\n");
    let mut seen = BTreeMap::new();
    let mut cursor = b"0".to_vec();
    let mut calls = 0;
    loop {
        let r = parse(&c.cmd(&[b"HSCAN", b"h", &cursor, b"COUNT", b"20"]));
        let parts = elems(&r);
        cursor = bulk(&parts[0]);
        let items = elems(&parts[1]);
        assert!(items.len().is_multiple_of(2));
        for kv in items.chunks(2) {
            seen.insert(bulk(&kv[0]), bulk(&kv[1]));
        }
        calls += 1;
        if cursor == b"0" {
            break;
        }
        assert!(calls < 1000, "HSCAN does not terminate");
    }
    assert_eq!(seen.len(), 1000);
    assert!(
        calls > 10,
        "COUNT should split the iteration ({calls} calls)"
    );
    for (k, v) in &seen {
        assert_eq!(s(k), format!("field:{}", s(v)));
    }
    // MATCH filters on the field.
    let r = parse(&c.cmds("HSCAN h 0 MATCH field:99* COUNT 100000"));
    let parts = elems(&r);
    assert_eq!(bulk(&parts[0]), b"0");
    let fields: BTreeSet<String> = elems(&parts[1])
        .chunks(2)
        .map(|kv| s(&bulk(&kv[0])))
        .collect();
    assert_eq!(fields.len(), 11);
}

#[test]
fn encodings_convert_and_stay() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    expect(&mut c, "CONFIG SET hash-max-listpack-entries 3", "+OK\r\n");
    expect(&mut c, "HSET h a 1 b 2 c 3", ":3\r\n");
    expect(&mut c, "OBJECT ENCODING h", "$8\r\nlistpack\r\n");
    expect(&mut c, "HSET h d 4", ":1\r\n");
    expect(&mut c, "OBJECT ENCODING h", "$9\r\nhashtable\r\n");
    // Never converts back.
    expect(&mut c, "HDEL h a b c", ":3\r\n");
    expect(&mut c, "OBJECT ENCODING h", "$9\r\nhashtable\r\n");
    expect(&mut c, "CONFIG SET hash-max-listpack-value 5", "+OK\r\n");
    expect(&mut c, "HSET v a 12345", ":1\r\n");
    expect(&mut c, "OBJECT ENCODING v", "$8\r\nlistpack\r\n");
    expect(&mut c, "HSET v a 123456", ":0\r\n");
    expect(&mut c, "OBJECT ENCODING v", "$9\r\nhashtable\r\n");
    expect(&mut c, "HSET w abcdef 1", ":1\r\n");
    expect(&mut c, "OBJECT ENCODING w", "$9\r\nhashtable\r\n");
    expect(&mut c, "HINCRBYFLOAT x f 1.2345", "$6\r\n1.2345\r\n");
    expect(&mut c, "OBJECT ENCODING x", "$9\r\nhashtable\r\n");
    expect(&mut c, "HSET y a 1", ":1\r\n");
    expect(&mut c, "HSETNX y a 1234567", ":0\r\n");
    expect(&mut c, "OBJECT ENCODING y", "$8\r\nlistpack\r\n");
    // The Redis 6 ziplist aliases set the same thresholds.
    expect(&mut c, "CONFIG SET hash-max-ziplist-entries 0", "+OK\r\n");
    expect(&mut c, "HSET z a 1", ":1\r\n");
    expect(&mut c, "OBJECT ENCODING z", "$9\r\nhashtable\r\n");
    // COPY / RENAME keep the value and its encoding.
    expect(&mut c, "COPY h h2", ":1\r\n");
    expect(&mut c, "OBJECT ENCODING h2", "$9\r\nhashtable\r\n");
    expect(&mut c, "HGETALL h2", "*2\r\n$1\r\nd\r\n$1\r\n4\r\n");
    expect(&mut c, "RENAME v v2", "+OK\r\n");
    expect(&mut c, "HGET v2 a", "$6\r\n123456\r\n");
    expect(&mut c, "TYPE v2", "+hash\r\n");
}

#[test]
fn keyspace_hits_and_expiry() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let stat = |c: &mut Raw, name: &str| -> i64 {
        let info = s(&c.cmds("INFO stats"));
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    expect(&mut c, "HSET h a 1", ":1\r\n");
    let (h0, m0) = (
        stat(&mut c, "keyspace_hits"),
        stat(&mut c, "keyspace_misses"),
    );
    c.cmds("HGET h a");
    c.cmds("HGET nokey a");
    c.cmds("HLEN h");
    c.cmds("HSET h b 2"); // writes do not count
    assert_eq!(stat(&mut c, "keyspace_hits") - h0, 2);
    assert_eq!(stat(&mut c, "keyspace_misses") - m0, 1);
    // An expired hash: crates/ferrokv/tests/families/hashes.rs
    // (in-process, clock moved instead of sleeping).
}

#[test]
fn redis_crate_roundtrip() {
    let srv = Server::start(&[]);
    let mut con = srv.client();
    let n: i64 = redis::cmd("HSET")
        .arg("h")
        .arg("x")
        .arg("1")
        .arg("y")
        .arg("2")
        .query(&mut con)
        .unwrap();
    assert_eq!(n, 2);
    let all: BTreeMap<String, String> = redis::cmd("HGETALL").arg("h").query(&mut con).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all["y"], "2");
    let v: f64 = redis::cmd("HINCRBYFLOAT")
        .arg("h")
        .arg("x")
        .arg("0.5")
        .query(&mut con)
        .unwrap();
    assert_eq!(v, 1.5);
}

// ------------------------------------------------------------ differential

#[test]
fn diff_directed() {
    let Some(mut p) = Pair::start() else { return };
    lines(
        &mut p,
        &[
            "HSET h a 1 b 2 c 3",
            "HSET h b 22 d 4",
            "HGETALL h",
            "HKEYS h",
            "HVALS h",
            "HMSET h x 1",
            "HMSET h x",
            "HSET h",
            "HSET h a",
            "HSET h a 1 b",
            "HGET h b",
            "HGET h zz",
            "HGET nokey zz",
            "HMGET h a zz b",
            "HMGET nokey a b",
            "HMGET h",
            "HLEN h",
            "HLEN nokey",
            "HEXISTS h a",
            "HEXISTS h zz",
            "HSTRLEN h b",
            "HSTRLEN h zz",
            "HDEL h a zz b",
            "HDEL nokey a",
            "HGETALL h",
            "HSETNX h c 9",
            "HSETNX h e 5",
            "HSETNX h e",
            "HINCRBY h c 10",
            "HINCRBY h c -100",
            "HINCRBY h c abc",
            "HINCRBY h c 9223372036854775808",
            "HINCRBY h zz 5",
            "HINCRBY h e 1 2",
            "HINCRBYFLOAT h zz 1.5",
            "HINCRBYFLOAT h zz 1e3",
            "HINCRBYFLOAT h e 0.1",
            "HINCRBYFLOAT h e inf",
            "HINCRBYFLOAT h e -inf",
            "HINCRBYFLOAT h e nan",
            "HINCRBYFLOAT h e abc",
            "HINCRBYFLOAT h e 0x10",
            "HINCRBYFLOAT h e 1e400",
            "HINCRBYFLOAT h e -1e400",
            "HSET h big 1e308",
            "HINCRBYFLOAT h big 1e308",
            "HSET h i 9223372036854775807",
            "HINCRBY h i 1",
            "HINCRBY h i -1",
            "HSET h j -9223372036854775808",
            "HINCRBY h j -1",
            "HINCRBYFLOAT h j -1",
            "OBJECT ENCODING h",
            "HLEN h",
            "HSET l a 1 b 2 c 3",
            "HSCAN l 0",
            "HSCAN l 0 MATCH b*",
            "HSCAN l 0 MATCH b* COUNT 1",
            "HSCAN l 77",
            "HSCAN l -1",
            "HSCAN l 18446744073709551616",
            "HSCAN l 0 COUNT 0",
            "HSCAN l 0 COUNT -1",
            "HSCAN l 0 COUNT x",
            "HSCAN l 0 TYPE string",
            "HSCAN l 0 MATCH",
            "HSCAN l 0 BOGUS 1",
            "HSCAN l abc",
            "HSCAN nokey 0 COUNT abc",
            "HSCAN l",
            "HRANDFIELD l 0",
            "HRANDFIELD l 0 WITHVALUES",
            "HRANDFIELD l 3",
            "HRANDFIELD l 3 WITHVALUES",
            "HRANDFIELD l 30 WITHVALUES",
            "HRANDFIELD l x",
            "HRANDFIELD l 1 WITHVALUE",
            "HRANDFIELD l 1 WITHVALUES x",
            "HRANDFIELD l -9223372036854775808",
            "HRANDFIELD l -9223372036854775808 WITHVALUES",
            "HRANDFIELD l -4611686018427387904 WITHVALUES",
            "HRANDFIELD l 4611686018427387904 WITHVALUES",
            "HRANDFIELD nokey",
            "HRANDFIELD nokey 0",
            "HRANDFIELD nokey -5 WITHVALUES",
            "HRANDFIELD nokey x",
            "SET s x",
            "HGET s a",
            "HSET s a 1",
            "HSETNX s a 1",
            "HGETALL s",
            "HSCAN s 0",
            "HSCAN s 0 COUNT 0",
            "HRANDFIELD s",
            "HRANDFIELD s 1",
            "HRANDFIELD s 0",
            "HRANDFIELD s x",
            "HDEL s a",
            "HINCRBY s a 1",
            "HINCRBY s a x",
            "HINCRBYFLOAT s a 1",
            "HINCRBYFLOAT s a inf",
            "HLEN s",
            "HSTRLEN s a",
            "HEXISTS s a",
            "HMGET s a",
            "HKEYS s",
            "HVALS s",
            "DEL h l s",
            "HSET h f v",
            "HDEL h f",
            "EXISTS h",
            "HSET h a 1",
            "TYPE h",
            "OBJECT ENCODING h",
            "HINCRBY h a 1 extra",
        ],
    );
    // Binary and empty fields.
    p.check(&[b"HSET", b"bin", b"\x00\r\n", b"", b"", b"\xff"]);
    p.check(&[b"HGETALL", b"bin"]);
    p.check(&[b"HGET", b"bin", b""]);
    p.check(&[b"HSTRLEN", b"bin", b"\x00\r\n"]);
    p.check(&[b"HSCAN", b"bin", b"0", b"MATCH", b"\x00*"]);
    // Long fields/values (multi-byte length prefixes), still listpack with a
    // big hash-max-listpack-value.
    lines(&mut p, &["CONFIG SET hash-max-listpack-value 100000"]);
    let long_v = "v".repeat(20000);
    let long_f = "f".repeat(300);
    p.check(&[
        b"HSET",
        b"long",
        long_f.as_bytes(),
        long_v.as_bytes(),
        b"x",
        b"y",
    ]);
    lines(
        &mut p,
        &["HGETALL long", "OBJECT ENCODING long", "HSTRLEN long x"],
    );
    p.check(&[b"HSTRLEN", b"long", long_f.as_bytes()]);
    p.check(&[b"HDEL", b"long", long_f.as_bytes()]);
    lines(&mut p, &["HGETALL long"]);
}

#[test]
fn diff_resp3() {
    let Some(mut p) = Pair::start() else { return };
    p.a.cmds("HELLO 3");
    p.b.cmds("HELLO 3");
    lines(
        &mut p,
        &[
            "HSET h a 1 b 2",
            "HGETALL h",
            "HGETALL nokey",
            "HKEYS h",
            "HKEYS nokey",
            "HVALS nokey",
            "HMGET h a zz",
            "HGET h zz",
            "HRANDFIELD nokey",
            "HRANDFIELD nokey 3",
            "HRANDFIELD h 5 WITHVALUES",
            "HRANDFIELD h 5",
            "HRANDFIELD h 0 WITHVALUES",
            "HSCAN h 0",
            "HSCAN nokey 0",
            "HINCRBYFLOAT h c 2.5",
            "HINCRBY h a 2",
            "HSET h2 x \"\"",
            "HGETALL h2",
        ],
    );
}

#[test]
fn diff_encodings_and_thresholds() {
    let Some(mut p) = Pair::start() else { return };
    for entries in ["0", "1", "2", "5"] {
        lines(
            &mut p,
            &[
                "FLUSHALL",
                &format!("CONFIG SET hash-max-listpack-entries {entries}"),
                "CONFIG GET hash-max-listpack-entries",
                "CONFIG GET hash-max-ziplist-entries",
                "HSET h a 1",
                "OBJECT ENCODING h",
                "HSET h b 2",
                "OBJECT ENCODING h",
                "HSETNX h c 3",
                "OBJECT ENCODING h",
                "HINCRBY h d 4",
                "OBJECT ENCODING h",
                "HINCRBYFLOAT h e 5",
                "OBJECT ENCODING h",
                "HMSET h f 1 g 2",
                "OBJECT ENCODING h",
                "HDEL h a b c d e",
                "OBJECT ENCODING h",
                "HLEN h",
            ],
        );
    }
    lines(&mut p, &["CONFIG SET hash-max-listpack-entries 128"]);
    for value in ["0", "1", "3", "8"] {
        lines(
            &mut p,
            &[
                "FLUSHALL",
                &format!("CONFIG SET hash-max-listpack-value {value}"),
                "CONFIG GET hash-max-listpack-value",
                "HSET h a 1",
                "OBJECT ENCODING h",
                "HSET h2 ab 12",
                "OBJECT ENCODING h2",
                "HSET h3 a 1 b 2 c 1234",
                "OBJECT ENCODING h3",
                "HSETNX h4 abcd 1",
                "OBJECT ENCODING h4",
                "HSET h5 a 1",
                "HSETNX h5 a 123456789",
                "OBJECT ENCODING h5",
                "HINCRBY h5 a 99999999",
                "OBJECT ENCODING h5",
                "HSET h6 a 1",
                "HINCRBYFLOAT h6 a 0.25",
                "OBJECT ENCODING h6",
                "HSET h7 a \"\"",
                "OBJECT ENCODING h7",
            ],
        );
    }
    // Explicit thresholds: 128 entries, 64 bytes.
    lines(
        &mut p,
        &[
            "CONFIG SET hash-max-listpack-entries 128",
            "CONFIG SET hash-max-listpack-value 64",
            "FLUSHALL",
        ],
    );
    let mut args: Vec<String> = vec!["HSET".into(), "h".into()];
    for i in 0..128 {
        args.push(format!("f{i}"));
        args.push(format!("{i}"));
    }
    let a: Vec<&[u8]> = args.iter().map(|x| x.as_bytes()).collect();
    p.check(&a);
    lines(&mut p, &["OBJECT ENCODING h", "HGETALL h", "HSCAN h 0"]);
    lines(
        &mut p,
        &["HSET h one-more x", "OBJECT ENCODING h", "HLEN h"],
    );
    let v64 = "x".repeat(64);
    let v65 = "x".repeat(65);
    p.check(&[b"HSET", b"v", b"f", v64.as_bytes()]);
    lines(&mut p, &["OBJECT ENCODING v"]);
    p.check(&[b"HSET", b"v", v64.as_bytes(), b"1"]);
    lines(&mut p, &["OBJECT ENCODING v"]);
    p.check(&[b"HSET", b"v", b"g", v65.as_bytes()]);
    lines(&mut p, &["OBJECT ENCODING v", "HLEN v"]);
}

#[test]
fn diff_command_info() {
    let Some(mut p) = Pair::start() else { return };
    for c in [
        "hset",
        "hsetnx",
        "hget",
        "hmset",
        "hmget",
        "hgetall",
        "hdel",
        "hlen",
        "hexists",
        "hkeys",
        "hvals",
        "hincrby",
        "hincrbyfloat",
        "hstrlen",
        "hscan",
        "hrandfield",
    ] {
        p.check_line(&format!("COMMAND INFO {c}"));
        p.check_line(&format!("COMMAND GETKEYS {c} k f v"));
        p.check_line(c);
    }
}

// ------------------------------------------------------------ random

const KEYS: &[&str] = &["h0", "h1", "h2", "s0"];
const FIELDS: &[&str] = &[
    "a",
    "b",
    "c",
    "d",
    "e",
    "f",
    "g",
    "n",
    "x",
    "y",
    "",
    "ab",
    "ba",
    "long-field-name-xyz",
];
const VALUES: &[&str] = &[
    "0",
    "1",
    "-1",
    "42",
    "9223372036854775807",
    "-9223372036854775808",
    "01",
    "-0",
    " 1",
    "abc",
    "",
    "3.5",
    "1e3",
    "0x10",
    "inf",
    "nan",
    "a value that is longer than sixteen bytes",
];
const INTS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "5",
    "-3",
    "100",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "x",
    "1.5",
    "",
    "01",
];
const FLOATS: &[&str] = &[
    "0.1", "-0.2", "1.5e2", "3", "-7", "0", "-0", "1e-3", "abc", " 1", "inf", "-inf", "nan",
    "1e400", "1e5000", "0x10",
];
const COUNTS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "5",
    "10",
    "100",
    "-1",
    "-2",
    "-7",
    "-30",
    "x",
    "-9223372036854775808",
    "4611686018427387904",
];

fn random_command(r: &mut Rng) -> Vec<String> {
    // The string key s0 is drawn less often than the hashes.
    let k = |r: &mut Rng| {
        r.pick(&["h0", "h1", "h2", "h0", "h1", "h2", "s0"])
            .to_string()
    };
    let f = |r: &mut Rng| r.pick(FIELDS).to_string();
    let v = |r: &mut Rng| r.pick(VALUES).to_string();
    let mut c: Vec<String> = match r.below(30) {
        0..=4 => {
            let mut c = vec![
                if r.below(4) == 0 { "HMSET" } else { "HSET" }.to_string(),
                k(r),
            ];
            for _ in 0..=r.below(4) {
                c.push(f(r));
                c.push(v(r));
            }
            if r.below(15) == 0 {
                c.pop();
            }
            c
        }
        5 => vec!["HSETNX".into(), k(r), f(r), v(r)],
        6 | 7 => vec!["HGET".into(), k(r), f(r)],
        8 => {
            let mut c = vec!["HMGET".into(), k(r)];
            for _ in 0..=r.below(4) {
                c.push(f(r));
            }
            c
        }
        9 => vec!["HGETALL".into(), k(r)],
        10 => vec!["HKEYS".into(), k(r)],
        11 => vec!["HVALS".into(), k(r)],
        12 | 13 => {
            let mut c = vec!["HDEL".into(), k(r)];
            for _ in 0..=r.below(4) {
                c.push(f(r));
            }
            c
        }
        14 => vec!["HLEN".into(), k(r)],
        15 => vec!["HEXISTS".into(), k(r), f(r)],
        16 => vec!["HSTRLEN".into(), k(r), f(r)],
        17 | 18 => vec!["HINCRBY".into(), k(r), f(r), r.pick(INTS).into()],
        19 | 20 => vec!["HINCRBYFLOAT".into(), k(r), f(r), r.pick(FLOATS).into()],
        21 => {
            let mut c = vec![
                "HSCAN".into(),
                k(r),
                r.pick(&["0", "0", "0", "5", "x", "-1"]).into(),
            ];
            for _ in 0..r.below(3) {
                match r.below(6) {
                    0 | 1 => c.extend([
                        "MATCH".into(),
                        r.pick(&["*", "a*", "?", "*b*", "[a-c]"]).into(),
                    ]),
                    2 | 3 => {
                        c.extend(["COUNT".into(), r.pick(&["1", "3", "100", "0", "x"]).into()])
                    }
                    4 => c.extend(["TYPE".into(), "hash".into()]),
                    _ => c.push("MATCH".into()),
                }
            }
            c
        }
        22 | 23 => {
            let mut c = vec!["HRANDFIELD".into(), k(r)];
            if r.below(5) != 0 {
                c.push(r.pick(COUNTS).into());
                if r.below(20) == 0 {
                    // Only with WITHVALUES: without it redis-server tries to
                    // build a 2^62-element reply.
                    c.pop();
                    c.push("-4611686018427387904".into());
                    c.push("WITHVALUES".into());
                    return c;
                }
                match r.below(6) {
                    0..=2 => c.push("WITHVALUES".into()),
                    3 => c.push(r.pick(&["withvalues", "WITHVALUE", "x"]).into()),
                    _ => {}
                }
            }
            c
        }
        // SET mostly on the string key, now and then over a hash (and DEL
        // as often) so WRONGTYPE and re-creation both happen without
        // drowning the run in WRONGTYPE replies.
        24 => {
            let key = if r.below(6) == 0 { k(r) } else { "s0".into() };
            vec!["SET".into(), key, v(r)]
        }
        25 => vec!["DEL".into(), k(r)],
        26 => vec!["TYPE".into(), k(r)],
        27 => vec!["OBJECT".into(), "ENCODING".into(), k(r)],
        28 => vec!["EXISTS".into(), k(r)],
        _ => vec![
            "CONFIG".into(),
            "SET".into(),
            r.pick(&["hash-max-listpack-entries", "hash-max-listpack-value"])
                .into(),
            r.pick(&["0", "1", "4", "8", "16", "128"]).into(),
        ],
    };
    if r.below(50) == 0 {
        if r.below(2) == 0 {
            c.pop();
        } else {
            c.push("extra".into());
        }
    }
    c
}

/// A hash's contents on `c` (via HGETALL), for membership checks.
fn snapshot(c: &mut Raw, key: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let r = parse(&c.cmd(&[b"HGETALL", key.as_bytes()]));
    match &r {
        Resp::Agg(_, v) => v.chunks(2).map(|kv| (bulk(&kv[0]), bulk(&kv[1]))).collect(),
        _ => BTreeMap::new(),
    }
}

/// Field/value pairs returned by a full HSCAN iteration.
type PairSet = BTreeSet<(Vec<u8>, Vec<u8>)>;

/// Runs a full HSCAN iteration (with the given options) on `c` and returns
/// every pair seen, or the first reply when it is an error.
fn full_scan(c: &mut Raw, key: &str, opts: &[String]) -> Result<PairSet, Vec<u8>> {
    let mut seen = BTreeSet::new();
    let mut cursor = b"0".to_vec();
    for _ in 0..100_000 {
        let mut args: Vec<&[u8]> = vec![b"HSCAN", key.as_bytes(), &cursor];
        args.extend(opts.iter().map(|o| o.as_bytes()));
        let raw = c.cmd(&args);
        if raw[0] == b'-' {
            return Err(raw);
        }
        let r = parse(&raw);
        let parts = elems(&r);
        let next = bulk(&parts[0]);
        for kv in elems(&parts[1]).chunks(2) {
            seen.insert((bulk(&kv[0]), bulk(&kv[1])));
        }
        if next == b"0" {
            return Ok(seen);
        }
        cursor = next;
    }
    panic!("HSCAN did not terminate");
}

/// Checks an HRANDFIELD reply of ferrokv against redis's for the same
/// request (see the module docs); panics with `ctx` on mismatch.
fn check_hrandfield(p: &mut Pair, c: &[String], ours: &[u8], theirs: &[u8], ctx: &str) {
    let key = &c[1];
    let (ro, rt) = (parse(ours), parse(theirs));
    let members = snapshot(&mut p.b, key);
    match (&ro, &rt) {
        (Resp::Bulk(Some(f)), Resp::Bulk(Some(_))) => {
            assert!(members.contains_key(f), "{ctx}: {f:?} not a field");
        }
        (Resp::Agg(ta, a), Resp::Agg(tb, b)) => {
            assert_eq!((ta, a.len()), (tb, b.len()), "{ctx}: reply shapes differ");
            let with_values = c.len() == 4;
            let count: i64 = c[2].parse().unwrap();
            let mut fields = Vec::new();
            if with_values {
                for kv in a.chunks(2) {
                    let (fa, va) = (bulk(&kv[0]), bulk(&kv[1]));
                    assert_eq!(members.get(&fa), Some(&va), "{ctx}: bad pair");
                    fields.push(fa);
                }
            } else {
                for f in a {
                    let f = bulk(f);
                    assert!(members.contains_key(&f), "{ctx}: {f:?} not a field");
                    fields.push(f);
                }
            }
            if count > 0 {
                let distinct: BTreeSet<_> = fields.iter().collect();
                assert_eq!(distinct.len(), fields.len(), "{ctx}: repeated fields");
            }
        }
        _ => assert_eq!(s(ours), s(theirs), "{ctx}"),
    }
}

#[test]
fn diff_random_commands() {
    let Some(mut p) = Pair::start() else { return };
    let seed = seed_from_env(0x4a5b_6c7d_1234_0001u64);
    let mut r = Rng(seed);
    let mut history: Vec<String> = Vec::new();
    let mut kinds = std::collections::HashMap::<u8, usize>::new();
    let mut normalised = 0;
    let mut errors = BTreeMap::<String, usize>::new();
    for n in 0..5000 {
        let c = random_command(&mut r);
        let args: Vec<&[u8]> = c.iter().map(|s| s.as_bytes()).collect();
        history.push(format!("{c:?}"));
        let ctx = || {
            let tail = history[history.len().saturating_sub(15)..].join("\n");
            format!("seed {seed:#x}, command #{n}\nlast commands:\n{tail}")
        };
        let (ours, theirs) = p.both(&args);
        *kinds.entry(ours[0]).or_default() += 1;
        if ours[0] == b'-' {
            *errors.entry(s(&ours)).or_default() += 1;
        }
        if ours == theirs {
            continue;
        }
        let name = c[0].to_ascii_uppercase();
        let ok_normalised = match name.as_str() {
            "HGETALL" | "HKEYS" | "HVALS" => {
                let enc_a = p.a.cmd(&[b"OBJECT", b"ENCODING", c[1].as_bytes()]);
                let enc_b = p.b.cmd(&[b"OBJECT", b"ENCODING", c[1].as_bytes()]);
                enc_a == enc_b
                    && enc_a.ends_with(b"hashtable\r\n")
                    && sorted(&parse(&ours), name == "HGETALL")
                        == sorted(&parse(&theirs), name == "HGETALL")
            }
            "HSCAN" => {
                let opts = &c[3..];
                full_scan(&mut p.a, &c[1], opts) == full_scan(&mut p.b, &c[1], opts)
            }
            "HRANDFIELD" => {
                check_hrandfield(&mut p, &c, &ours, &theirs, &ctx());
                true
            }
            _ => false,
        };
        if !ok_normalised {
            let key = c.get(1).map(String::as_bytes).unwrap_or(b"");
            let enc_a = p.a.cmd(&[b"OBJECT", b"ENCODING", key]);
            let enc_b = p.b.cmd(&[b"OBJECT", b"ENCODING", key]);
            panic!(
                "{}\nferrokv: {:?} ({:?})\nredis:   {:?} ({:?})",
                ctx(),
                s(&ours),
                s(&enc_a),
                s(&theirs),
                s(&enc_b)
            );
        }
        normalised += 1;
    }
    for k in [b'-', b':', b'$', b'*', b'+'] {
        assert!(
            kinds.get(&k).copied().unwrap_or(0) >= 50,
            "too few {:?} replies: {kinds:?}",
            k as char
        );
    }
    eprintln!("random: {normalised} replies compared after normalisation; kinds {kinds:?}");
    eprintln!("errors: {errors:#?}");
    // Final state identical.
    for k in KEYS {
        let (a, b) = (snapshot(&mut p.a, k), snapshot(&mut p.b, k));
        assert_eq!(a, b, "final contents of {k}");
        p.check_line(&format!("TYPE {k}"));
        p.check_line(&format!("OBJECT ENCODING {k}"));
    }
}
