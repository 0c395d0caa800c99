//! Strings (t_string.c): SET's expiry options, GETEX, SETEX/PSETEX, the
//! counters and what each does to a key's TTL, at a clock the test moves.

use crate::harness::{Rig, T0};

#[test]
fn set_expiry_options_are_exact() {
    let mut r = Rig::new();
    assert_eq!(r.cmd("SET a v EX 10"), "+OK\r\n");
    assert_eq!(r.int("PTTL a"), 10_000);
    assert_eq!(r.int("TTL a"), 10);
    assert_eq!(r.cmd("SET b v PX 1500"), "+OK\r\n");
    assert_eq!(r.int("PTTL b"), 1500);
    assert_eq!(r.int("TTL b"), 2, "TTL rounds to the nearest second");
    assert_eq!(
        r.cmd(&format!("SET c v EXAT {}", T0 / 1000 + 100)),
        "+OK\r\n"
    );
    assert_eq!(r.int("PEXPIRETIME c"), T0 as i64 + 100_000);
    assert_eq!(r.cmd(&format!("SET d v PXAT {}", T0 + 1234)), "+OK\r\n");
    assert_eq!(r.int("PTTL d"), 1234);
    r.advance_ms(1000);
    assert_eq!(r.int("PTTL d"), 234);
    assert_eq!(r.int("PTTL b"), 500);
    r.advance_ms(500);
    // PTTL 0 is the last instant the key lives: it expires once the clock
    // is past its time.
    assert_eq!(r.bulk("GET b"), Some("v".into()));
    r.advance_ms(1);
    assert_eq!(r.bulk("GET b"), None);
    assert_eq!(r.int("TTL b"), -2);
    assert_eq!(r.bulk("GET d"), None);
    assert_eq!(r.int("EXISTS a c"), 2);
    // An EXAT in the past deletes at once (the reply is still OK).
    assert_eq!(r.cmd("SET e v EXAT 1"), "+OK\r\n");
    assert_eq!(r.int("EXISTS e"), 0);
}

#[test]
fn keepttl_persist_and_overwrites() {
    // The scenario of the end-to-end test that slept 800 ms, now exact.
    let mut r = Rig::new();
    assert_eq!(r.cmd("SET a 1 PX 500"), "+OK\r\n");
    assert_eq!(r.cmd("SET b 1 PX 500"), "+OK\r\n");
    assert_eq!(r.cmd("SET b 2 KEEPTTL"), "+OK\r\n");
    assert_eq!(r.int("PTTL b"), 500);
    assert_eq!(r.cmd("SET p 1 PX 500"), "+OK\r\n");
    assert_eq!(r.bulk("GETEX p PERSIST"), Some("1".into()));
    assert_eq!(r.int("TTL p"), -1);
    assert_eq!(r.cmd("SET q 1 PX 500"), "+OK\r\n");
    assert_eq!(r.cmd("SET q 2"), "+OK\r\n");
    assert_eq!(r.int("TTL q"), -1, "a plain SET discards the TTL");
    assert_eq!(r.cmd("SET g 1"), "+OK\r\n");
    assert_eq!(r.bulk("GETEX g PX 500"), Some("1".into()));
    assert_eq!(r.cmd("PSETEX h 500 v"), "+OK\r\n");
    assert_eq!(r.cmd("SET i 1 PX 500"), "+OK\r\n");
    assert_eq!(r.int("INCR i"), 2);
    assert_eq!(r.int("PTTL i"), 500, "INCR keeps the TTL");
    r.advance_ms(499);
    assert_eq!(
        r.array("MGET a b p q g h i"),
        ["1", "2", "1", "2", "1", "v", "2"]
    );
    r.advance_ms(2);
    assert_eq!(
        r.array("MGET a b p q g h i"),
        ["(nil)", "(nil)", "1", "2", "(nil)", "(nil)", "(nil)"]
    );
}

#[test]
fn getex_forms_and_errors() {
    let mut r = Rig::new();
    r.cmd("SET k v");
    assert_eq!(r.bulk("GETEX k EX 100"), Some("v".into()));
    assert_eq!(r.int("PTTL k"), 100_000);
    assert_eq!(
        r.bulk(&format!("GETEX k PXAT {}", T0 + 5)),
        Some("v".into())
    );
    assert_eq!(r.int("PTTL k"), 5);
    assert_eq!(
        r.bulk(&format!("GETEX k EXAT {}", T0 / 1000 + 7)),
        Some("v".into())
    );
    assert_eq!(r.int("PTTL k"), 7000);
    assert_eq!(r.bulk("GETEX k"), Some("v".into()));
    assert_eq!(r.int("PTTL k"), 7000, "GETEX without options keeps the TTL");
    assert_eq!(r.bulk("GETEX missing EX 10"), None);
    assert_eq!(
        r.cmd("GETEX k EX 0"),
        "-ERR invalid expire time in 'getex' command\r\n"
    );
    assert_eq!(
        r.cmd("GETEX k EX -1"),
        "-ERR invalid expire time in 'getex' command\r\n"
    );
    assert_eq!(r.cmd("GETEX k EX 10 PX 10"), "-ERR syntax error\r\n");
    assert_eq!(r.cmd("GETEX k PERSIST EX 10"), "-ERR syntax error\r\n");
    // A time in the past deletes the key; the value is still returned.
    assert_eq!(r.bulk("GETEX k PXAT 1"), Some("v".into()));
    assert_eq!(r.int("EXISTS k"), 0);
    r.cmd("RPUSH l a");
    assert!(r.cmd("GETEX l").starts_with("-WRONGTYPE"));
}

#[test]
fn setex_and_counters_with_ttls() {
    let mut r = Rig::new();
    assert_eq!(r.cmd("SETEX s 10 v"), "+OK\r\n");
    assert_eq!(r.int("PTTL s"), 10_000);
    assert_eq!(
        r.cmd("SETEX s 0 v"),
        "-ERR invalid expire time in 'setex' command\r\n"
    );
    assert_eq!(
        r.cmd("PSETEX s -5 v"),
        "-ERR invalid expire time in 'psetex' command\r\n"
    );
    r.cmd("SET n 10 EX 100");
    assert_eq!(r.int("INCRBY n 5"), 15);
    assert_eq!(r.int("DECR n"), 14);
    assert_eq!(r.bulk("INCRBYFLOAT n 0.5"), Some("14.5".into()));
    assert_eq!(r.int("APPEND n 0"), 5);
    assert_eq!(r.int("SETRANGE n 0 2"), 5);
    assert_eq!(r.int("PTTL n"), 100_000, "in-place updates keep the TTL");
    assert_eq!(r.bulk("GETSET n 1"), Some("24.50".into()));
    assert_eq!(r.int("TTL n"), -1, "GETSET discards the TTL");
    r.cmd("SET m 1 PX 10");
    assert_eq!(r.bulk("GETDEL m"), Some("1".into()));
    assert_eq!(r.int("EXISTS m"), 0);
    // A counter on an expired key starts from 0.
    r.cmd("SET c 41 PX 10");
    r.advance_ms(11);
    assert_eq!(r.int("INCR c"), 1);
    assert_eq!(r.int("TTL c"), -1);
}

#[test]
fn set_nx_xx_get_see_expired_keys_as_missing() {
    let mut r = Rig::new();
    r.cmd("SET k old PX 100");
    assert_eq!(r.cmd("SET k new NX"), "$-1\r\n");
    r.advance_ms(101);
    assert_eq!(r.cmd("SET k new XX"), "$-1\r\n");
    assert_eq!(r.cmd("SET k new NX GET"), "$-1\r\n");
    assert_eq!(r.cmd("SET k newer XX GET"), "$3\r\nnew\r\n");
    assert_eq!(r.int("SETNX k x"), 0);
    r.cmd("SET k v PX 5");
    r.advance_ms(6);
    assert_eq!(r.int("SETNX k x"), 1);
    assert_eq!(r.int("MSETNX k y other z"), 0);
    r.cmd("PEXPIRE k 5");
    r.advance_ms(6);
    assert_eq!(r.int("MSETNX k y other z"), 1);
    assert_eq!(r.array("MGET k other"), ["y", "z"]);
    assert_eq!(r.int("STRLEN k"), 1);
}
