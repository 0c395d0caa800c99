//! A dataset of every type and encoding, written the same way into any
//! server (ferrokv or redis-server), and a canonical snapshot of a server's
//! whole keyspace to compare two servers (or one server before and after a
//! save and load). Shared by tests/rdb.rs and tests/dump.rs.

#![allow(dead_code)]

use std::collections::BTreeMap;

/// One key's observable state.
#[derive(Debug, Clone)]
pub struct KeyState {
    /// TYPE.
    pub ty: String,
    /// OBJECT ENCODING.
    pub enc: String,
    /// Contents in a canonical order (sets and hashes sorted).
    pub data: Vec<Vec<u8>>,
    /// PTTL (-1 = no TTL); two states compare equal within 60 s.
    pub ttl: i64,
}

impl PartialEq for KeyState {
    fn eq(&self, o: &Self) -> bool {
        let ttl_eq = if self.ttl < 0 || o.ttl < 0 {
            self.ttl == o.ttl
        } else {
            (self.ttl - o.ttl).abs() <= 60_000
        };
        self.ty == o.ty && self.enc == o.enc && self.data == o.data && ttl_eq
    }
}

/// The whole keyspace: (db, key) -> state.
pub type Snapshot = BTreeMap<(u32, Vec<u8>), KeyState>;

fn q<T: redis::FromRedisValue>(c: &mut redis::Connection, args: &[&[u8]]) -> T {
    let mut cmd = redis::cmd(std::str::from_utf8(args[0]).unwrap());
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c)
        .unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(args[0])))
}

/// Reads one key's state in the current database.
pub fn key_state(c: &mut redis::Connection, k: &[u8]) -> KeyState {
    let ty: String = q(c, &[b"TYPE", k]);
    let enc: String = q(c, &[b"OBJECT", b"ENCODING", k]);
    let mut data: Vec<Vec<u8>> = match ty.as_str() {
        "string" => vec![q(c, &[b"GET", k])],
        "list" => q(c, &[b"LRANGE", k, b"0", b"-1"]),
        "set" => q(c, &[b"SMEMBERS", k]),
        "zset" => q(c, &[b"ZRANGE", k, b"0", b"-1", b"WITHSCORES"]),
        "hash" => q(c, &[b"HGETALL", k]),
        t => panic!("unexpected type {t}"),
    };
    match ty.as_str() {
        "set" => data.sort(),
        "hash" => {
            let mut pairs: Vec<Vec<u8>> = data
                .chunks(2)
                .map(|p| [p[0].clone(), vec![0], p[1].clone()].concat())
                .collect();
            pairs.sort();
            data = pairs;
        }
        _ => {}
    }
    let pttl: i64 = q(c, &[b"PTTL", k]);
    KeyState {
        ty,
        enc,
        data,
        ttl: pttl,
    }
}

/// Every key of databases 0..16.
pub fn snapshot(c: &mut redis::Connection) -> Snapshot {
    let mut out = Snapshot::new();
    for db in 0..16u32 {
        let _: () = q(c, &[b"SELECT", db.to_string().as_bytes()]);
        let keys: Vec<Vec<u8>> = q(c, &[b"KEYS", b"*"]);
        for k in keys {
            let st = key_state(c, &k);
            out.insert((db, k), st);
        }
    }
    let _: () = q(c, &[b"SELECT", b"0"]);
    out
}

/// Runs one command, ignoring its reply.
pub fn run(c: &mut redis::Connection, args: &[&[u8]]) {
    let _: redis::Value = q(c, args);
}

fn run_s(c: &mut redis::Connection, args: &[String]) {
    let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    run(c, &a);
}

/// Writes the fixed dataset: every type in each of its encodings, with
/// integers of every width, binary and long (LZF-compressible) strings,
/// special scores, TTLs, and keys in databases 0, 3 and 15. Works the same
/// on redis-server and ferrokv (the encodings depend only on the
/// default thresholds, which both share).
pub fn populate(c: &mut redis::Connection) {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    // Strings.
    for (k, v) in [
        ("s:empty", String::new()),
        ("s:short", "hello".into()),
        ("s:i8", "-100".into()),
        ("s:i16", "30000".into()),
        ("s:i32", "-2000000000".into()),
        ("s:i64", "9223372036854775807".into()),
        ("s:imin", "-9223372036854775808".into()),
        ("s:lead0", "007".into()),
        ("s:float", "3.14".into()),
        ("s:emb", "x".repeat(40)),
        ("s:raw", "y".repeat(100)),
        ("s:lzf", "abcdefgh".repeat(500)),
        (
            "s:big",
            (0..100_000)
                .map(|i| (b'a' + (i % 26) as u8) as char)
                .collect(),
        ),
    ] {
        run(c, &[b"SET", k.as_bytes(), v.as_bytes()]);
    }
    run(c, &[b"SET", b"s:bin", b"\x00\x01\xff\r\n\x80zero"]);
    run(c, &[b"SET", b"\x00bin\xffkey", b"v"]);
    run(c, &[b"APPEND", b"s:appended", b"12"]);
    // Lists: one small, one of many nodes, one with long elements.
    run_s(
        c,
        &s(&[
            "RPUSH",
            "l:small",
            "a",
            "1",
            "-1",
            "128",
            "-4096",
            "70000",
            "5000000000",
            "x",
        ]),
    );
    let mut many = vec!["RPUSH".to_string(), "l:many".to_string()];
    for i in 0..2000 {
        many.push(if i % 3 == 0 {
            i.to_string()
        } else {
            format!("elem-{i}")
        });
    }
    run_s(c, &many);
    run_s(
        c,
        &[
            "RPUSH".into(),
            "l:long".into(),
            "z".repeat(5000),
            "q".repeat(70_000),
            "short".into(),
        ],
    );
    // Sets.
    run_s(c, &s(&["SADD", "set:int16", "1", "2", "3", "-5"]));
    run_s(c, &s(&["SADD", "set:int32", "100000", "-100000"]));
    run_s(c, &s(&["SADD", "set:int64", "5000000000", "1"]));
    run_s(c, &s(&["SADD", "set:str", "a", "b", "c", "1"]));
    let mut big: Vec<String> = vec!["SADD".into(), "set:bigint".into()];
    big.extend((0..600).map(|i| i.to_string()));
    run_s(c, &big);
    // Sorted sets.
    run_s(
        c,
        &s(&[
            "ZADD", "z:lp", "1", "a", "2.5", "b", "-inf", "c", "inf", "d", "0.1", "e", "1e300",
            "f", "-3", "g", "1e-10", "h",
        ]),
    );
    let mut zs: Vec<String> = vec!["ZADD".into(), "z:skip".into()];
    for i in 0..300 {
        zs.push(format!("{}", i as f64 / 7.0));
        zs.push(format!("m{i}"));
    }
    run_s(c, &zs);
    run_s(
        c,
        &[
            "ZADD".into(),
            "z:longmember".into(),
            "1".into(),
            "m".repeat(100),
        ],
    );
    // Hashes.
    run_s(
        c,
        &s(&[
            "HSET", "h:lp", "f1", "v1", "n", "12", "neg", "-7000", "e", "",
        ]),
    );
    let mut hs: Vec<String> = vec!["HSET".into(), "h:table".into()];
    for i in 0..700 {
        hs.push(format!("field{i}"));
        hs.push(format!("value{i}"));
    }
    run_s(c, &hs);
    run_s(
        c,
        &[
            "HSET".into(),
            "h:longval".into(),
            "f".into(),
            "v".repeat(100),
        ],
    );
    // TTLs.
    run(c, &[b"SET", b"ttl:s", b"v", b"EX", b"100000"]);
    run_s(c, &s(&["RPUSH", "ttl:l", "a", "b"]));
    run(c, &[b"PEXPIRE", b"ttl:l", b"50000000"]);
    run_s(c, &s(&["HSET", "ttl:h", "a", "b"]));
    run(c, &[b"EXPIREAT", b"ttl:h", b"4000000000"]);
    // Other databases.
    run(c, &[b"SELECT", b"3"]);
    run(c, &[b"SET", b"db3key", b"three"]);
    run_s(c, &s(&["SADD", "db3set", "x", "y"]));
    run(c, &[b"SELECT", b"15"]);
    run(c, &[b"SET", b"db15key", b"fifteen"]);
    run(c, &[b"SELECT", b"0"]);
}

/// Writes `n` random keys (types, sizes and TTLs drawn from `next`).
pub fn populate_random(c: &mut redis::Connection, n: usize, mut next: impl FnMut() -> u64) {
    for i in 0..n {
        let r = next();
        let len = (next() % 40) as usize;
        let ty = r % 5;
        let k = format!("rnd:{i}");
        let word = |x: u64| -> String {
            match x % 4 {
                0 => (x as i64 % 100_000).to_string(),
                1 => format!("w{}", x % 1000),
                2 => "p".repeat((x % 90) as usize),
                _ => (x as i64).to_string(),
            }
        };
        let mut args: Vec<String> = Vec::new();
        match ty {
            0 => {
                args.extend(["SET".into(), k.clone(), word(next())]);
            }
            1 => {
                args.extend(["RPUSH".into(), k.clone()]);
                for _ in 0..=len * 5 {
                    args.push(word(next()));
                }
            }
            2 => {
                args.extend(["SADD".into(), k.clone()]);
                let ints = next().is_multiple_of(2);
                for _ in 0..=len * 20 {
                    let x = next();
                    args.push(if ints {
                        (x % 1_000_000).to_string()
                    } else {
                        word(x)
                    });
                }
            }
            3 => {
                args.extend(["ZADD".into(), k.clone()]);
                for _ in 0..=len * 6 {
                    args.push(format!("{}", (next() % 2000) as f64 / 8.0 - 100.0));
                    args.push(word(next()));
                }
            }
            _ => {
                args.extend(["HSET".into(), k.clone()]);
                for _ in 0..=len * 30 {
                    args.push(word(next()));
                    args.push(word(next()));
                }
            }
        }
        run_s(c, &args);
        if next().is_multiple_of(4) {
            run_s(
                c,
                &[
                    "PEXPIRE".into(),
                    k,
                    (10_000_000 + next() % 1_000_000).to_string(),
                ],
            );
        }
    }
}
