//! End-to-end tests of DUMP and RESTORE: the payload format (identical
//! bytes to redis-server 7.0 for deterministic encodings), cross-restores
//! in both directions for every type and encoding (differential), and
//! RESTORE's options and errors compared reply for reply with redis-server.

mod common;
#[path = "support/dataset.rs"]
mod dataset;
use common::*;
use dataset::*;

fn dump(c: &mut redis::Connection, k: &[u8]) -> Option<Vec<u8>> {
    redis::cmd("DUMP").arg(k).query(c).unwrap()
}

/// Every key of `from` (database 0) restored into `to` under the same
/// name, with its TTL; then the keyspaces compared.
fn cross(from: &Server, to: &Server, what: &str) {
    let mut a = from.client();
    let mut b = to.client();
    populate(&mut a);
    let want = snapshot(&mut a);
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut a).unwrap();
    for k in &keys {
        let p = dump(&mut a, k).expect("key exists");
        let pttl: i64 = redis::cmd("PTTL").arg(k).query(&mut a).unwrap();
        let ttl = pttl.max(0).to_string();
        let r: redis::RedisResult<()> =
            redis::cmd("RESTORE").arg(k).arg(&ttl).arg(&p).query(&mut b);
        r.unwrap_or_else(|e| panic!("{what}: RESTORE {}: {e}", String::from_utf8_lossy(k)));
    }
    let got = snapshot(&mut b);
    let want: Snapshot = want.into_iter().filter(|(k, _)| k.0 == 0).collect();
    assert_eq!(got.len(), want.len(), "{what}");
    for (k, v) in &want {
        assert_eq!(
            Some(v),
            got.get(k),
            "{what}: key {}",
            String::from_utf8_lossy(&k.1)
        );
    }
}

#[test]
fn redis_payloads_restore_into_ferrokv_and_back() {
    let Some(redis) = Server::start_redis(&[]) else {
        assert!(std::env::var_os("FERROKV_REQUIRE_REDIS").is_none());
        return;
    };
    let ours = Server::start(&[]);
    cross(&redis, &ours, "redis -> ferrokv");
    let ours2 = Server::start(&[]);
    let redis2 = Server::start_redis(&[]).unwrap();
    cross(&ours2, &redis2, "ferrokv -> redis");
}

#[test]
fn payload_bytes_match_redis_for_deterministic_encodings() {
    let Some(mut p) = Pair::start() else {
        return;
    };
    for line in [
        "SET s hello",
        "SET i 12345",
        "SET neg -7",
        "SET big 123456789012345",
        "RPUSH l a b 1 -1 300 70000 5000000000 x",
        "SADD si 3 1 2 -100000",
        "HSET h f v n 12 e x",
        "ZADD z 1 a 2.5 b -3 c 100 d",
    ] {
        p.check_line(line);
    }
    // (LZF-compressed strings are valid but not byte-identical: the
    // compressor's match choices differ from liblzf's.)
    p.check(&[b"SET", b"emb", "q".repeat(20).as_bytes()]);
    for k in [
        "s", "i", "neg", "big", "l", "si", "h", "z", "emb", "missing",
    ] {
        p.check_line(&format!("DUMP {k}"));
    }
}

#[test]
fn restore_options_and_errors_match_redis() {
    let Some(mut p) = Pair::start() else {
        return;
    };
    p.check_line("SET src value");
    let (pa, pb) = p.both(&[b"DUMP", b"src"]);
    assert_eq!(pa, pb, "payloads differ");
    // The bulk body of the DUMP reply.
    let start = pa.iter().position(|&b| b == b'\n').unwrap() + 1;
    let payload = pa[start..pa.len() - 2].to_vec();
    let pl = payload.as_slice();
    let mut corrupt = payload.clone();
    corrupt[1] ^= 1;
    let mut badver = payload.clone();
    let n = badver.len();
    badver[n - 10] = 99;
    let mut truncated = payload[..payload.len() - 1].to_vec();
    truncated[0] = 0;
    let cases: Vec<Vec<&[u8]>> = vec![
        vec![b"RESTORE", b"k", b"0", pl],
        vec![b"GET", b"k"],
        vec![b"RESTORE", b"k", b"0", pl],
        vec![b"RESTORE", b"k", b"0", pl, b"REPLACE"],
        vec![b"RESTORE", b"k2", b"-1", pl],
        vec![b"RESTORE", b"k2", b"abc", pl],
        vec![b"RESTORE", b"k2", b"0", &corrupt],
        vec![b"RESTORE", b"k2", b"0", &badver],
        vec![b"RESTORE", b"k2", b"0", &truncated],
        vec![b"RESTORE", b"k2", b"0", b"short"],
        vec![b"RESTORE", b"k2", b"0", b""],
        vec![b"RESTORE", b"k2", b"0", pl, b"IDLETIME", b"-1"],
        vec![b"RESTORE", b"k2", b"0", pl, b"IDLETIME", b"x"],
        vec![b"RESTORE", b"k2", b"0", pl, b"IDLETIME"],
        vec![b"RESTORE", b"k2", b"0", pl, b"FREQ", b"256"],
        vec![b"RESTORE", b"k2", b"0", pl, b"FREQ", b"-1"],
        vec![
            b"RESTORE",
            b"k2",
            b"0",
            pl,
            b"FREQ",
            b"1",
            b"IDLETIME",
            b"1",
        ],
        vec![b"RESTORE", b"k2", b"0", pl, b"BOGUS"],
        vec![b"RESTORE", b"k", b"0", pl, b"BOGUS"],
        vec![b"RESTORE", b"k", b"-5", pl],
        vec![b"RESTORE", b"k2", b"0", pl, b"IDLETIME", b"1000"],
        vec![b"OBJECT", b"IDLETIME", b"k2"],
        vec![b"RESTORE", b"k3", b"0", pl, b"FREQ", b"10"],
        vec![b"EXISTS", b"k3"],
        // ABSTTL in the past: OK, but no key (and a replaced key is gone).
        vec![b"RESTORE", b"k4", b"1000", pl, b"ABSTTL"],
        vec![b"EXISTS", b"k4"],
        vec![b"RESTORE", b"k", b"1000", pl, b"ABSTTL", b"REPLACE"],
        vec![b"EXISTS", b"k"],
        vec![b"RESTORE", b"k5", b"4000000000000", pl, b"ABSTTL"],
        vec![b"PEXPIRETIME", b"k5"],
        vec![b"RESTORE", b"k6", b"100000", pl],
        vec![b"TTL", b"k6"],
        vec![b"RESTORE"],
        vec![b"RESTORE", b"k"],
        vec![b"DUMP"],
        vec![b"DUMP", b"a", b"b"],
        vec![b"SET", b"k7", b"x"],
        vec![
            b"RESTORE", b"k7", b"0", pl, b"REPLACE", b"REPLACE", b"ABSTTL",
        ],
        vec![b"GET", b"k7"],
    ];
    for c in cases {
        p.check(&c);
    }
}

#[test]
fn restore_counts_as_a_change_and_wakes_blocked_clients() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    r.cmds("RPUSH src a b");
    let payload = r.cmds("DUMP src");
    let start = payload.iter().position(|&b| b == b'\n').unwrap() + 1;
    let pl = payload[start..payload.len() - 2].to_vec();
    let mut w = srv.raw();
    w.send_cmd(&[b"BLPOP", b"dst", b"5"]);
    r.wait_blocked(1);
    let before: u64 = r
        .info_field("persistence", "rdb_changes_since_last_save")
        .parse()
        .unwrap();
    assert_eq!(r.cmd(&[b"RESTORE", b"dst", b"0", &pl]), b"+OK\r\n");
    assert_eq!(w.reply(), b"*2\r\n$3\r\ndst\r\n$1\r\na\r\n");
    let after: u64 = r
        .info_field("persistence", "rdb_changes_since_last_save")
        .parse()
        .unwrap();
    assert!(after > before);
    assert_eq!(r.cmds("LRANGE dst 0 -1"), b"*1\r\n$1\r\nb\r\n");
}
