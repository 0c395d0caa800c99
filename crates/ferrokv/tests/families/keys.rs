//! Keys and expiry (db.c, expire.c, object.c): the EXPIRE family with its
//! NX/XX/GT/LT rules, lazy and active expiry, OBJECT IDLETIME, and the key
//! commands that carry a TTL along, at a clock the test moves.

use crate::harness::{Rig, T0};

#[test]
fn expire_family_and_conditions() {
    let mut r = Rig::new();
    r.cmd("SET k v");
    assert_eq!(r.int("EXPIRE k 100 XX"), 0, "XX: no TTL yet");
    assert_eq!(r.int("EXPIRE k 100 GT"), 0, "GT: no TTL counts as infinite");
    assert_eq!(r.int("EXPIRE k 100 LT"), 1);
    assert_eq!(r.int("PTTL k"), 100_000);
    assert_eq!(r.int("EXPIRE k 50 NX"), 0);
    assert_eq!(r.int("EXPIRE k 50 GT"), 0);
    assert_eq!(r.int("EXPIRE k 200 GT"), 1);
    assert_eq!(r.int("PEXPIRE k 1500 LT"), 1);
    assert_eq!(r.int("PTTL k"), 1500);
    assert_eq!(r.int("EXPIRETIME k"), (T0 / 1000 + 2) as i64);
    assert_eq!(r.int("PEXPIRETIME k"), (T0 + 1500) as i64);
    assert_eq!(r.int(&format!("PEXPIREAT k {}", T0 + 10)), 1);
    assert_eq!(r.int("PTTL k"), 10);
    assert_eq!(r.int(&format!("EXPIREAT k {}", T0 / 1000 + 60)), 1);
    assert_eq!(r.int("TTL k"), 60);
    assert_eq!(
        r.cmd("EXPIRE k 10 NX XX"),
        "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"
    );
    assert_eq!(
        r.cmd("EXPIRE k 10 GT LT"),
        "-ERR GT and LT options at the same time are not compatible\r\n"
    );
    assert_eq!(r.cmd("EXPIRE k 10 FOO"), "-ERR Unsupported option FOO\r\n");
    assert_eq!(
        r.cmd("EXPIRE k abc"),
        "-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(
        r.cmd("EXPIRE k 9223372036854775807"),
        "-ERR invalid expire time in 'expire' command\r\n"
    );
    assert_eq!(r.int("PERSIST k"), 1);
    assert_eq!(r.int("PERSIST k"), 0);
    assert_eq!(r.int("TTL k"), -1);
    assert_eq!(r.int("EXPIRETIME k"), -1);
    assert_eq!(r.int("EXPIRETIME nokey"), -2);
    // A time in the past deletes the key and replies 1.
    assert_eq!(r.int("EXPIREAT k 1"), 1);
    assert_eq!(r.int("EXISTS k"), 0);
    assert_eq!(r.int("EXPIRE k 10"), 0);
}

#[test]
fn lazy_expiry_at_the_exact_millisecond() {
    // The end-to-end test slept 120 ms for this.
    let mut r = Rig::new();
    r.cmd("SET k v");
    assert_eq!(r.int("PEXPIRE k 50"), 1);
    r.advance_ms(50);
    assert_eq!(r.bulk("GET k"), Some("v".into()));
    r.advance_ms(1);
    assert_eq!(r.bulk("GET k"), None);
    assert_eq!(r.int("TTL k"), -2);
    assert_eq!(r.info("expired_keys"), "1");
    // Every kind of access sees an expired key as missing.
    r.cmd("MSET a 1 b 2 c 3");
    for k in ["a", "b", "c"] {
        r.cmd(&format!("PEXPIRE {k} 10"));
    }
    r.advance_ms(11);
    assert_eq!(r.int("EXISTS a b c"), 0);
    assert_eq!(r.cmd("TYPE a"), "+none\r\n");
    assert_eq!(r.cmd("RENAME b x"), "-ERR no such key\r\n");
    assert_eq!(r.array("KEYS *"), Vec::<String>::new());
    assert_eq!(r.cmd("RANDOMKEY"), "$-1\r\n");
}

#[test]
fn active_expiry_reclaims_keys_nobody_reads() {
    let mut r = Rig::with_config(&[("enable-debug-command", "yes")]);
    for i in 0..200 {
        r.cmd(&format!("SET v{i} x PX {}", 100 + i % 2));
    }
    for i in 0..50 {
        r.cmd(&format!("SET p{i} x"));
    }
    // DBSIZE counts keys not reclaimed yet.
    // The cycle samples keys with a TTL at random and stops once few of a
    // sample had expired (as Redis's), so some cycles reclaim them all: 20
    // left one key unsampled in a CI run, 200 make that vanishingly rare.
    let cycles = |r: &mut Rig| {
        for _ in 0..200 {
            r.active_expire();
        }
    };
    assert_eq!(r.int("DBSIZE"), 250);
    cycles(&mut r);
    assert_eq!(r.int("DBSIZE"), 250, "nothing has expired yet");
    r.advance_ms(100);
    cycles(&mut r);
    assert_eq!(r.int("DBSIZE"), 250, "a key lives through its last ms");
    r.advance_ms(1);
    cycles(&mut r);
    assert_eq!(r.int("DBSIZE"), 150);
    r.advance_ms(1);
    cycles(&mut r);
    assert_eq!(r.int("DBSIZE"), 50);
    assert_eq!(r.info("expired_keys"), "200");
    // DEBUG SET-ACTIVE-EXPIRE 0 stops the cycle.
    r.cmd("SET late x PX 1");
    r.advance_ms(2);
    assert_eq!(r.cmd("DEBUG SET-ACTIVE-EXPIRE 0"), "+OK\r\n");
    cycles(&mut r);
    assert_eq!(r.int("DBSIZE"), 51);
    r.cmd("DEBUG SET-ACTIVE-EXPIRE 1");
    cycles(&mut r);
    assert_eq!(r.int("DBSIZE"), 50);
}

#[test]
fn object_idletime_counts_seconds_without_access() {
    // The end-to-end test slept 2.1 s for this.
    let mut r = Rig::new();
    r.cmd("SET e v");
    assert_eq!(r.int("OBJECT IDLETIME e"), 0);
    r.advance_ms(2_000);
    assert_eq!(r.int("OBJECT IDLETIME e"), 2);
    // OBJECT, EXISTS, TTL and TYPE are not accesses.
    r.cmd("EXISTS e");
    r.cmd("TTL e");
    r.cmd("TYPE e");
    assert_eq!(r.int("OBJECT IDLETIME e"), 2);
    r.advance_ms(1_000);
    assert_eq!(r.int("OBJECT IDLETIME e"), 3);
    // TOUCH and GET are.
    assert_eq!(r.int("TOUCH e"), 1);
    assert_eq!(r.int("OBJECT IDLETIME e"), 0);
    r.advance_ms(5_000);
    r.cmd("GET e");
    assert_eq!(r.int("OBJECT IDLETIME e"), 0);
    // CLIENT NO-TOUCH: reads leave the access time alone, TOUCH still
    // counts.
    r.advance_ms(7_000);
    assert_eq!(r.cmd("CLIENT NO-TOUCH on"), "+OK\r\n");
    r.cmd("GET e");
    assert_eq!(r.int("OBJECT IDLETIME e"), 7);
    r.cmd("TOUCH e");
    assert_eq!(r.int("OBJECT IDLETIME e"), 0);
    assert_eq!(r.cmd("OBJECT IDLETIME nokey"), "$-1\r\n");
    // Values stored out of line keep their access time the same way.
    assert_eq!(r.cmd("CLIENT NO-TOUCH off"), "+OK\r\n");
    r.cmd(&format!("SET big {}", "x".repeat(100)));
    r.cmd("RPUSH list a b");
    r.advance_ms(3_000);
    assert_eq!(r.int("OBJECT IDLETIME big"), 3);
    assert_eq!(r.int("OBJECT IDLETIME list"), 3);
    r.cmd("GET big");
    r.cmd("LRANGE list 0 0");
    assert_eq!(r.int("OBJECT IDLETIME big"), 0);
    assert_eq!(r.int("OBJECT IDLETIME list"), 0);
}

#[test]
fn rename_copy_move_carry_the_ttl() {
    let mut r = Rig::new();
    r.cmd("SET a v PX 5000");
    assert_eq!(r.cmd("RENAME a b"), "+OK\r\n");
    assert_eq!(r.int("PTTL b"), 5000);
    assert_eq!(r.int("COPY b c"), 1);
    assert_eq!(r.int("PTTL c"), 5000);
    assert_eq!(r.int("MOVE c 1"), 1);
    r.cmd("SELECT 1");
    assert_eq!(r.int("PTTL c"), 5000);
    r.cmd("SELECT 0");
    r.cmd("SET d v");
    assert_eq!(r.int("RENAMENX b d"), 0);
    assert_eq!(r.cmd("RENAME b d"), "+OK\r\n");
    assert_eq!(r.int("PTTL d"), 5000, "RENAME takes the source's TTL");
    r.advance_ms(5001);
    assert_eq!(r.int("EXISTS d"), 0);
    r.cmd("SELECT 1");
    assert_eq!(r.int("EXISTS c"), 0);
}

#[test]
fn scan_and_dbsize_around_expired_keys() {
    let mut r = Rig::new();
    for i in 0..20 {
        r.cmd(&format!("SET k{i} v"));
    }
    for i in 0..10 {
        r.cmd(&format!("PEXPIRE k{i} 10"));
    }
    r.advance_ms(11);
    // SCAN never returns an expired key.
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    loop {
        let reply = r.cmd(&format!("SCAN {cursor} COUNT 7"));
        let (v, _) = crate::harness::decode(reply.as_bytes());
        let crate::harness::Value::Array(Some(parts)) = v else {
            panic!("{reply}");
        };
        cursor = parts[0].text();
        if let crate::harness::Value::Array(Some(keys)) = &parts[1] {
            seen.extend(keys.iter().map(|k| k.text()));
        }
        if cursor == "0" {
            break;
        }
    }
    seen.sort();
    let mut want: Vec<String> = (10..20).map(|i| format!("k{i}")).collect();
    want.sort();
    assert_eq!(seen, want);
    assert_eq!(r.int("DBSIZE"), 10);
}

#[test]
fn watch_sees_expiry_and_other_clients() {
    let mut r = Rig::new();
    let other = r.add_client();
    // A watched key that expires before EXEC fails the transaction
    // (multi.c isWatchedKeyExpired).
    r.cmd("SET k v PX 100");
    assert_eq!(r.cmd("WATCH k"), "+OK\r\n");
    r.advance_ms(101);
    r.cmd("MULTI");
    assert_eq!(r.cmd("GET k"), "+QUEUED\r\n");
    assert_eq!(r.cmd("EXEC"), "*-1\r\n");
    // One that had expired already when watched does not.
    r.cmd("SET k v PX 10");
    r.advance_ms(11);
    r.cmd("WATCH k");
    r.cmd("MULTI");
    r.cmd("GET k");
    assert_eq!(r.cmd("EXEC"), "*1\r\n$-1\r\n");
    // A write by another client fails it; a read does not.
    r.cmd("SET w 1");
    r.cmd("WATCH w");
    assert_eq!(r.cmd_on(other, "GET w"), "$1\r\n1\r\n");
    r.cmd("MULTI");
    r.cmd("INCR w");
    assert_eq!(r.cmd("EXEC"), "*1\r\n:2\r\n");
    r.cmd("WATCH w");
    assert_eq!(r.cmd_on(other, "SET w 5"), "+OK\r\n");
    r.cmd("MULTI");
    r.cmd("INCR w");
    assert_eq!(r.cmd("EXEC"), "*-1\r\n");
    assert_eq!(r.bulk("GET w"), Some("5".into()));
}

#[test]
fn lfu_counters_grow_and_decay_with_the_clock() {
    let mut r = Rig::new();
    r.cmd("SET k v");
    assert_eq!(
        r.cmd("OBJECT FREQ k"),
        "-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.\r\n"
    );
    assert_eq!(r.cmd("CONFIG SET maxmemory-policy allkeys-lfu"), "+OK\r\n");
    r.cmd("SET n v");
    // A new key starts at LFU_INIT_VAL; the first access from there is
    // certain (probability 1 / ((5 - 5) * lfu-log-factor + 1)).
    assert_eq!(r.int("OBJECT FREQ n"), 5);
    r.cmd("GET n");
    assert_eq!(r.int("OBJECT FREQ n"), 6);
    assert_eq!(
        r.cmd("OBJECT IDLETIME n"),
        "-ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.\r\n"
    );
    // One step down per lfu-decay-time minutes without access.
    r.advance_ms(2 * 60_000);
    assert_eq!(r.int("OBJECT FREQ n"), 4);
    r.cmd("CONFIG SET lfu-decay-time 0");
    assert_eq!(r.int("OBJECT FREQ n"), 6, "0 turns decay off");
    r.cmd("CONFIG SET lfu-decay-time 1");
    r.advance_ms(60 * 60_000);
    assert_eq!(r.int("OBJECT FREQ n"), 0);
    // Another server in the same process keeps its own policy.
    let mut other = Rig::new();
    other.cmd("SET k v");
    assert!(other.cmd("OBJECT FREQ k").starts_with("-ERR An LFU"));
    assert_eq!(other.int("OBJECT IDLETIME k"), 0);
}
