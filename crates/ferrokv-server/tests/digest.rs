//! DEBUG DIGEST and DEBUG DIGEST-VALUE against redis-server 7.0: the same
//! commands on both servers give the same dataset digest and the same
//! per-key digests, for every type and encoding, with TTLs, in several
//! databases (Redis's own test suite compares datasets this way).

mod common;
use common::*;

fn check(a: &mut Raw, b: &mut Raw, line: &str) {
    let x = String::from_utf8_lossy(&a.cmds(line)).into_owned();
    let y = String::from_utf8_lossy(&b.cmds(line)).into_owned();
    assert_eq!(x, y, "{line}");
}

#[test]
fn digests_match_redis() {
    let extra = ["--enable-debug-command", "yes"];
    let Some(redis) = Server::start_redis(&extra) else {
        return;
    };
    let ours = Server::start(&extra);
    let (mut a, mut b) = (ours.raw(), redis.raw());
    check(&mut a, &mut b, "DEBUG DIGEST");
    check(&mut a, &mut b, "DEBUG DIGEST-VALUE nothing");
    let script = [
        "SET s1 hello",
        "SET s2 12345",
        "SET s3 -7",
        "SET long aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "RPUSH l a b c 1 2 3",
        "SADD si 1 2 3 100",
        "SADD ss x y z 7",
        "ZADD zl 1 a 2.5 b -3 c 10 12",
        "ZADD zi 1e300 big -inf low inf high 0.1 tenth",
        "HSET h f1 v1 f2 2 3 v3",
        "XADD x 1-1 f v g 2",
        "XADD x 2-0 f w",
        "SET ttl v EX 1000",
        "HSET h2 a b",
        "PEXPIRE h2 100000",
        "SELECT 3",
        "SET other db3",
        "SELECT 0",
    ];
    for line in script {
        check(&mut a, &mut b, line);
    }
    // Big collections (skiplist, hashtable, quicklist encodings).
    for i in 0..300 {
        check(&mut a, &mut b, &format!("ZADD zbig {i}.5 m{i}"));
        check(&mut a, &mut b, &format!("HSET hbig f{i} v{i}"));
        check(&mut a, &mut b, &format!("SADD sbig e{i}"));
        check(&mut a, &mut b, &format!("RPUSH lbig item-{i}"));
    }
    check(&mut a, &mut b, "DEBUG DIGEST");
    check(
        &mut a,
        &mut b,
        "DEBUG DIGEST-VALUE s1 s2 l si ss zl zi h x ttl h2 zbig hbig sbig lbig missing",
    );
    // Changing one thing changes the digest on both alike.
    check(&mut a, &mut b, "HSET hbig f0 changed");
    check(&mut a, &mut b, "DEBUG DIGEST");
    check(&mut a, &mut b, "FLUSHALL");
    check(&mut a, &mut b, "DEBUG DIGEST");
}
