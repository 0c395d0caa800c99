//! Hashes (t_hash.c): field commands, counters, random fields, the
//! listpack/hashtable conversion, and hashes with TTLs and the keyspace
//! hit/miss counters at a clock the test moves.

use crate::harness::Rig;

#[test]
fn fields_and_counters() {
    let mut r = Rig::new();
    assert_eq!(r.int("HSET h a 1 b 2"), 2);
    assert_eq!(r.int("HSET h a 10 c 3"), 1);
    assert_eq!(r.cmd("HMSET h d 4"), "+OK\r\n");
    assert_eq!(r.int("HSETNX h a 5"), 0);
    assert_eq!(r.bulk("HGET h a"), Some("10".into()));
    assert_eq!(r.array("HMGET h a nope c"), ["10", "(nil)", "3"]);
    assert_eq!(r.int("HLEN h"), 4);
    assert_eq!(r.int("HSTRLEN h a"), 2);
    assert_eq!(r.int("HEXISTS h b"), 1);
    assert_eq!(r.int("HDEL h b nope"), 1);
    assert_eq!(r.int("HINCRBY h a -3"), 7);
    assert_eq!(r.bulk("HINCRBYFLOAT h f 1.5"), Some("1.5".into()));
    assert_eq!(
        r.cmd("HINCRBY h f 1"),
        "-ERR hash value is not an integer\r\n"
    );
    assert_eq!(
        r.cmd("HINCRBYFLOAT h a abc"),
        "-ERR value is not a valid float\r\n"
    );
    r.cmd("HSET h big 9223372036854775807");
    assert_eq!(
        r.cmd("HINCRBY h big 1"),
        "-ERR increment or decrement would overflow\r\n"
    );
    assert_eq!(
        r.cmd("HSET h a"),
        "-ERR wrong number of arguments for 'hset' command\r\n"
    );
    let mut keys = r.array("HKEYS h");
    keys.sort();
    assert_eq!(keys, ["a", "big", "c", "d", "f"]);
    assert_eq!(r.int("HDEL h a big c d f"), 5);
    assert_eq!(r.int("EXISTS h"), 0, "the last HDEL deletes the key");
}

#[test]
fn hrandfield_counts() {
    let mut r = Rig::new();
    r.cmd("HSET h a 1 b 2 c 3");
    assert_eq!(r.array("HRANDFIELD h 5").len(), 3, "positive: distinct");
    assert_eq!(r.array("HRANDFIELD h -5").len(), 5, "negative: repeats");
    assert_eq!(r.array("HRANDFIELD h 2 WITHVALUES").len(), 4);
    assert_eq!(r.array("HRANDFIELD h 0"), Vec::<String>::new());
    assert_eq!(r.cmd("HRANDFIELD nokey"), "$-1\r\n");
    assert_eq!(r.cmd("HRANDFIELD nokey 3"), "*0\r\n");
    let f = r.bulk("HRANDFIELD h").unwrap();
    assert!(["a", "b", "c"].contains(&f.as_str()));
}

#[test]
fn encodings_follow_the_thresholds() {
    let mut r = Rig::with_config(&[
        ("hash-max-listpack-entries", "2"),
        ("hash-max-listpack-value", "8"),
    ]);
    r.cmd("HSET h a 1 b 2");
    assert_eq!(r.bulk("OBJECT ENCODING h"), Some("listpack".into()));
    r.cmd("HSET h c 3");
    assert_eq!(r.bulk("OBJECT ENCODING h"), Some("hashtable".into()));
    r.cmd("HSET v a 123456789");
    assert_eq!(r.bulk("OBJECT ENCODING v"), Some("hashtable".into()));
    r.cmd("HSET w 123456789 a");
    assert_eq!(r.bulk("OBJECT ENCODING w"), Some("hashtable".into()));
}

#[test]
fn expired_hashes_and_hit_counters() {
    // The end-to-end test slept 120 ms for this.
    let mut r = Rig::new();
    assert_eq!(r.int("HSET h a 1"), 1);
    let hits = |r: &mut Rig| r.info("keyspace_hits").parse::<i64>().unwrap();
    let misses = |r: &mut Rig| r.info("keyspace_misses").parse::<i64>().unwrap();
    let (h0, m0) = (hits(&mut r), misses(&mut r));
    r.cmd("HGET h a");
    r.cmd("HGET nokey a");
    r.cmd("HLEN h");
    r.cmd("HSET h b 2"); // writes do not count
    assert_eq!(hits(&mut r) - h0, 2);
    assert_eq!(misses(&mut r) - m0, 1);
    assert_eq!(r.int("PEXPIRE h 50"), 1);
    r.advance_ms(51);
    assert_eq!(r.cmd("HGET h a"), "$-1\r\n");
    assert_eq!(r.int("HSET h c 3"), 1);
    assert_eq!(r.int("HLEN h"), 1);
    assert_eq!(r.int("TTL h"), -1);
    // HINCRBY on a hash with a TTL keeps it.
    r.cmd("PEXPIRE h 500");
    r.cmd("HINCRBY h n 1");
    assert_eq!(r.int("PTTL h"), 500);
}
