//! Authentication: requirepass and the default user, AUTH (password and
//! username + password), HELLO AUTH, NOAUTH before authentication, RESET,
//! WRONGPASS, compared byte for byte with redis-server 7.0 where both can
//! run the same script.

mod common;
use common::*;

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Normalises the client id in a HELLO reply.
fn norm(b: &[u8]) -> String {
    let t = s(b);
    match t.find("$2\r\nid\r\n:") {
        Some(i) => {
            let rest = &t[i + 9..];
            let end = rest.find("\r\n").unwrap_or(0);
            format!("{}ID{}", &t[..i + 9], &rest[end..])
        }
        None => t,
    }
}

fn check(p: &mut Pair, a: &mut Raw, b: &mut Raw, l: &str) {
    let (x, y) = (a.cmds(l), b.cmds(l));
    assert_eq!(norm(&x), norm(&y), "{l}");
    let _ = p;
}

#[test]
fn auth_flows_match_redis() {
    let Some(mut p) = Pair::start() else { return };
    let script = [
        "AUTH x",
        "AUTH default x",
        "AUTH nosuch x",
        "AUTH a b c",
        "HELLO 3 AUTH default anything",
        "HELLO 2",
        "CONFIG SET requirepass foo",
    ];
    for l in script {
        let parts: Vec<&[u8]> = l.split(' ').map(str::as_bytes).collect();
        let (x, y) = p.both(&parts);
        assert_eq!(norm(&x), norm(&y), "{l}");
    }
    let mut a = p.ours.raw();
    let mut b = p.redis.raw();
    for l in [
        "PING",
        "GET x",
        "ACL WHOAMI",
        "HELLO 3",
        "HELLO 2 SETNAME n",
        "AUTH bar",
        "AUTH default bar",
        "HELLO 2 AUTH default bar",
        "AUTH foo",
        "PING",
        "RESET",
        "PING",
        "HELLO 2 AUTH default foo",
        "ACL LIST",
        "ACL SETUSER default resetpass nopass",
        "AUTH foo",
        "CONFIG SET requirepass bar",
        "ACL LIST",
        "AUTH bar",
        "ACL SETUSER default off",
        "ACL SETUSER alice on >apw +@all ~*",
        "AUTH alice apw",
        "ACL WHOAMI",
        "ACL SETUSER alice off",
        "PING",
        "AUTH alice apw",
        "ACL SETUSER default on",
        "CONFIG SET requirepass \"\"",
        "AUTH x",
    ] {
        check(&mut p, &mut a, &mut b, l);
    }
    // A new connection needs no AUTH again.
    let mut a2 = p.ours.raw();
    let mut b2 = p.redis.raw();
    check(&mut p, &mut a2, &mut b2, "PING");
}

#[test]
fn requirepass_from_command_line() {
    let srv = Server::start(&["--requirepass", "s3cret"]);
    let mut r = srv.raw();
    assert_eq!(s(&r.cmds("GET a")), "-NOAUTH Authentication required.\r\n");
    assert_eq!(
        s(&r.cmds("HELLO 3")),
        "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n"
    );
    assert_eq!(
        s(&r.cmds("AUTH wrong")),
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(s(&r.cmds("AUTH s3cret")), "+OK\r\n");
    assert_eq!(s(&r.cmds("GET a")), "$-1\r\n");
    assert_eq!(
        s(&r.cmds("CONFIG GET requirepass")),
        "*2\r\n$11\r\nrequirepass\r\n$6\r\ns3cret\r\n"
    );
    // CLIENT LIST shows the user.
    assert!(s(&r.cmds("CLIENT INFO")).contains(" user=default "));
    // The failed attempt is in the ACL log.
    let log = s(&r.cmds("ACL LOG"));
    assert!(
        log.contains("$4\r\nauth\r\n") && log.contains("$4\r\nAUTH\r\n"),
        "{log}"
    );
}

#[test]
fn protected_mode_is_off_for_loopback() {
    // The server binds all interfaces with protected mode on and no
    // password: loopback clients are served. (The refusal of non-loopback
    // peers is unit-tested in acl::tests::protected_mode_decision; this
    // sandbox has no second address to connect from.)
    let srv = Server::start(&["--bind", "0.0.0.0", "--protected-mode", "yes"]);
    let mut r = srv.raw();
    assert_eq!(s(&r.cmds("PING")), "+PONG\r\n");
}
