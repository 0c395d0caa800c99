//! Lists (t_list.c): pushes, pops with counts, ranges, LPOS, LINSERT,
//! LMOVE, the listpack/quicklist conversion, blocking pops in their
//! non-blocking form, and lists with TTLs at a clock the test moves.

use crate::harness::Rig;

#[test]
fn push_pop_range_and_counts() {
    let mut r = Rig::new();
    assert_eq!(r.int("RPUSH l a b c"), 3);
    assert_eq!(r.int("LPUSH l z"), 4);
    assert_eq!(r.array("LRANGE l 0 -1"), ["z", "a", "b", "c"]);
    assert_eq!(r.array("LRANGE l -2 100"), ["b", "c"]);
    assert_eq!(r.array("LRANGE l 3 1"), Vec::<String>::new());
    assert_eq!(r.bulk("LPOP l"), Some("z".into()));
    assert_eq!(r.array("RPOP l 2"), ["c", "b"]);
    assert_eq!(r.array("LPOP l 10"), ["a"]);
    assert_eq!(r.int("EXISTS l"), 0, "the last pop deletes the key");
    assert_eq!(r.cmd("LPOP l"), "$-1\r\n");
    assert_eq!(r.cmd("LPOP l 2"), "*-1\r\n");
    r.cmd("RPUSH l a");
    assert_eq!(r.cmd("LPOP l 0"), "*0\r\n");
    assert_eq!(
        r.cmd("LPOP l -1"),
        "-ERR value is out of range, must be positive\r\n"
    );
    assert_eq!(r.int("LPUSHX nokey a"), 0);
    assert_eq!(r.int("RPUSHX l b c"), 3);
    assert_eq!(r.int("LLEN l"), 3);
    assert_eq!(r.bulk("LINDEX l -1"), Some("c".into()));
    assert_eq!(r.bulk("LINDEX l 5"), None);
    assert_eq!(r.cmd("LSET l 1 B"), "+OK\r\n");
    assert_eq!(r.cmd("LSET l 9 B"), "-ERR index out of range\r\n");
    assert_eq!(r.cmd("LSET nokey 0 B"), "-ERR no such key\r\n");
    r.cmd("SET s v");
    assert_eq!(
        r.cmd("LPUSH s a"),
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
}

#[test]
fn lpos_linsert_lrem_ltrim() {
    let mut r = Rig::new();
    r.cmd("RPUSH l a b c a b c a");
    assert_eq!(r.int("LPOS l a"), 0);
    assert_eq!(r.int("LPOS l a RANK 2"), 3);
    assert_eq!(r.int("LPOS l a RANK -1"), 6);
    assert_eq!(r.array("LPOS l a COUNT 0"), ["0", "3", "6"]);
    assert_eq!(r.array("LPOS l a COUNT 2 RANK -1"), ["6", "3"]);
    assert_eq!(r.array("LPOS l a COUNT 0 MAXLEN 4"), ["0", "3"]);
    assert_eq!(r.cmd("LPOS l x"), "$-1\r\n");
    assert_eq!(
        r.cmd("LPOS l a RANK 0"),
        "-ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list\r\n"
    );
    assert_eq!(r.int("LINSERT l BEFORE b X"), 8);
    assert_eq!(r.int("LINSERT l AFTER nothere X"), -1);
    assert_eq!(r.int("LINSERT nokey AFTER a X"), 0);
    assert_eq!(r.int("LREM l 2 a"), 2);
    assert_eq!(r.array("LRANGE l 0 -1"), ["X", "b", "c", "b", "c", "a"]);
    assert_eq!(r.int("LREM l -1 c"), 1);
    assert_eq!(r.int("LREM l 0 b"), 2);
    assert_eq!(r.array("LRANGE l 0 -1"), ["X", "c", "a"]);
    assert_eq!(r.cmd("LTRIM l 1 -1"), "+OK\r\n");
    assert_eq!(r.array("LRANGE l 0 -1"), ["c", "a"]);
    assert_eq!(r.cmd("LTRIM l 5 10"), "+OK\r\n");
    assert_eq!(r.int("EXISTS l"), 0);
}

#[test]
fn lmove_and_blocking_forms_without_blocking() {
    let mut r = Rig::new();
    r.cmd("RPUSH src 1 2 3");
    assert_eq!(r.bulk("LMOVE src dst LEFT RIGHT"), Some("1".into()));
    assert_eq!(r.bulk("RPOPLPUSH src dst"), Some("3".into()));
    assert_eq!(r.array("LRANGE dst 0 -1"), ["3", "1"]);
    assert_eq!(r.bulk("LMOVE src src LEFT RIGHT"), Some("2".into()));
    assert_eq!(r.cmd("LMOVE src dst UP DOWN"), "-ERR syntax error\r\n");
    // With nothing to pop, blocking pops reply null at once when the
    // client may not block (as inside MULTI).
    assert_eq!(r.cmd("BLPOP none 0"), "*-1\r\n");
    assert_eq!(r.cmd("BLMOVE none dst LEFT LEFT 0"), "$-1\r\n");
    assert_eq!(r.array("BLPOP none dst 0"), ["dst", "3"]);
    assert_eq!(r.array("LMPOP 2 none dst RIGHT COUNT 5"), ["dst", "[1]"]);
    assert_eq!(r.cmd("BLMPOP 0 1 none LEFT"), "*-1\r\n");
    assert_eq!(r.cmd("BLPOP none -1"), "-ERR timeout is negative\r\n");
    assert_eq!(
        r.cmd("LMPOP 0 a LEFT"),
        "-ERR numkeys should be greater than 0\r\n"
    );
}

#[test]
fn encoding_is_quicklist_at_any_size() {
    // Redis 7.0 reports every list as a quicklist (the listpack encoding of
    // small lists came with 7.2); list-max-listpack-size bounds each node.
    let mut r = Rig::with_config(&[("list-max-listpack-size", "4")]);
    r.cmd("RPUSH l a");
    assert_eq!(r.bulk("OBJECT ENCODING l"), Some("quicklist".into()));
    r.cmd("RPUSH l b c d e f g h i");
    assert_eq!(r.bulk("OBJECT ENCODING l"), Some("quicklist".into()));
    assert_eq!(
        r.array("LRANGE l 0 -1"),
        ["a", "b", "c", "d", "e", "f", "g", "h", "i"]
    );
    assert_eq!(r.bulk("LINDEX l 5"), Some("f".into()));
    assert_eq!(r.int("LINSERT l BEFORE e X"), 10);
    assert_eq!(r.array("LRANGE l 3 5"), ["d", "X", "e"]);
    let big = "x".repeat(9000);
    r.cmd(&format!("RPUSH l {big}"));
    assert_eq!(r.int("LLEN l"), 11);
    assert_eq!(r.bulk("RPOP l").map(|v| v.len()), Some(9000));
    assert!(r.cmd("STRLEN l").starts_with("-WRONGTYPE"));
}

#[test]
fn lists_with_ttls() {
    let mut r = Rig::new();
    r.cmd("RPUSH l a b c");
    r.cmd("PEXPIRE l 100");
    assert_eq!(r.int("RPUSH l d"), 4);
    assert_eq!(r.int("PTTL l"), 100, "pushes keep the TTL");
    r.advance_ms(101);
    assert_eq!(r.int("LLEN l"), 0);
    assert_eq!(r.int("RPUSHX l a"), 0, "an expired list is missing");
    assert_eq!(r.int("RPUSH l new"), 1);
    assert_eq!(r.int("TTL l"), -1);
    // LMOVE onto a list with a TTL keeps it; from an expired one moves
    // nothing.
    r.cmd("RPUSH dst x");
    r.cmd("PEXPIRE dst 1000");
    r.cmd("LMOVE l dst LEFT LEFT");
    assert_eq!(r.int("PTTL dst"), 1000);
    r.cmd("RPUSH gone y");
    r.cmd("PEXPIRE gone 10");
    r.advance_ms(11);
    assert_eq!(r.cmd("LMOVE gone dst LEFT LEFT"), "$-1\r\n");
    assert_eq!(r.array("LRANGE dst 0 -1"), ["new", "x"]);
}
