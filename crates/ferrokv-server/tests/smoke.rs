//! Smoke test: the binary starts, answers, and matches redis-server on a few
//! basic replies.

mod common;
use common::*;

#[test]
fn get_set_roundtrip() {
    let s = Server::start(&[]);
    let mut c = s.client();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut c).unwrap();
    let v: String = redis::cmd("GET").arg("k").query(&mut c).unwrap();
    assert_eq!(v, "v");
}

#[test]
fn differential_basics() {
    let Some(mut p) = Pair::start() else { return };
    for line in [
        "PING",
        "SET k v",
        "GET k",
        "GET missing",
        "SET k v NX",
        "SET k v2 XX GET",
        "SET k v EX 0",
        "SET k v PX -1",
        "SET k v NX XX",
        "SET k v EX",
        "DEL k k2",
        "EXISTS k",
        "FOOBAR a b",
        "GeT",
    ] {
        p.check_line(line);
    }
}
