//! Two servers in one process: each keeps its own keyspace, clock,
//! configuration, notifications, WATCH registry and eviction state (no
//! process-wide statics between them).

use crate::harness::{Rig, T0};

#[test]
fn two_servers_keep_their_own_state() {
    let mut a = Rig::new();
    let mut b = Rig::new();
    // Keyspaces and clocks.
    a.cmd("SET k a PX 1000");
    b.cmd("SET k b PX 1000");
    a.advance_ms(2000);
    assert_eq!(a.bulk("GET k"), None);
    assert_eq!(b.bulk("GET k"), Some("b".into()));
    assert_eq!(b.server.clock.now_ms(), T0);
    // Keyspace notifications: on in a only.
    let sub = a.add_client();
    assert_eq!(a.cmd("CONFIG SET notify-keyspace-events KEA"), "+OK\r\n");
    a.cmd_on(sub, "SUBSCRIBE __keyevent@0__:set");
    assert!(a.server.keyspace.events().on());
    assert!(!b.server.keyspace.events().on());
    b.cmd("SET x 1");
    a.cmd("SET x 1");
    let pushed = a.cmd_on(sub, "PING");
    assert!(
        pushed.contains("__keyevent@0__:set") && pushed.contains("$1\r\nx\r\n"),
        "{pushed:?}"
    );
    // WATCH: a watched key in b does not touch a's registry.
    b.cmd("WATCH x");
    assert!(b.server.keyspace.events().watching());
    assert!(!a.server.keyspace.events().watching());
    a.cmd("SET x 2");
    b.cmd("MULTI");
    b.cmd("GET x");
    assert_eq!(b.cmd("EXEC"), "*1\r\n$1\r\n1\r\n");
    // maxmemory and its policy.
    assert_eq!(a.cmd("CONFIG SET maxmemory-policy allkeys-lru"), "+OK\r\n");
    assert_eq!(a.cmd("CONFIG SET maxmemory 1"), "+OK\r\n");
    assert_eq!(b.server.evict.maxmemory(), 0);
    assert_eq!(b.cmd("SET y 1"), "+OK\r\n");
    assert_eq!(
        b.array("CONFIG GET maxmemory-policy"),
        ["maxmemory-policy", "noeviction"]
    );
    a.cmd("CONFIG SET maxmemory 0");
}

#[test]
fn bcast_invalidations_stay_with_their_server() {
    let mut a = Rig::new();
    let mut b = Rig::new();
    let ta = a.add_client();
    let tb = b.add_client();
    a.cmd_on(ta, "HELLO 3");
    b.cmd_on(tb, "HELLO 3");
    assert_eq!(
        a.cmd_on(ta, "CLIENT TRACKING on BCAST PREFIX foo"),
        "+OK\r\n"
    );
    assert_eq!(
        b.cmd_on(tb, "CLIENT TRACKING on BCAST PREFIX foo"),
        "+OK\r\n"
    );
    a.cmd("SET foo1 x");
    b.active_expire();
    let got_b = b.cmd_on(tb, "PING");
    let got_a = a.cmd_on(ta, "PING");
    assert!(
        !got_b.contains("foo1"),
        "b's client told about a's key: {got_b:?}"
    );
    assert!(
        got_a.contains("invalidate") && got_a.contains("foo1"),
        "a's client: {got_a:?}"
    );
}
