//! Connection-level tests against the real binary: maxclients, timeout,
//! unix socket, HELLO / RESP3 shapes, CLIENT subcommands, AUTH / NOAUTH
//! flows, RESET, and differential checks of the connection commands
//! against redis-server 7.0 (when installed).

mod common;
use common::*;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Replaces the value after `$2\r\nid\r\n:` and the version string of a
/// HELLO reply, which legitimately differ between servers.
fn normalize_hello(b: &[u8]) -> String {
    let t = s(b);
    let mut out = String::new();
    let mut lines = t.split("\r\n").peekable();
    let mut prev = "";
    while let Some(l) = lines.next() {
        if prev == "id" && l.starts_with(':') {
            out.push_str(":<ID>\r\n");
        } else if prev == "version" && l.starts_with('$') {
            lines.next();
            out.push_str("<VERSION>\r\n");
        } else if !l.is_empty() || lines.peek().is_some() {
            out.push_str(l);
            out.push_str("\r\n");
        }
        prev = l;
    }
    out
}

fn hello_reply(proto: i64, id: u64) -> Vec<u8> {
    let head = if proto == 3 { "%7" } else { "*14" };
    format!(
        "{head}\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:{proto}\r\n$2\r\nid\r\n:{id}\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
    )
    .into_bytes()
}

fn client_id(r: &mut Raw) -> u64 {
    let v = r.cmds("CLIENT ID");
    s(&v[1..v.len() - 2]).parse().unwrap()
}

#[test]
fn hello_switches_protocol() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let id = client_id(&mut r);
    assert_eq!(r.cmds("HELLO"), hello_reply(2, id));
    assert_eq!(r.cmds("HELLO 3"), hello_reply(3, id));
    assert_eq!(r.cmds("GET nokey"), b"_\r\n");
    assert_eq!(r.cmds("CLIENT GETNAME"), b"_\r\n");
    // HELLO without a version keeps the current one.
    assert_eq!(r.cmds("HELLO"), hello_reply(3, id));
    let info = r.cmds("CLIENT INFO");
    assert!(info.starts_with(b"="), "RESP3 verbatim: {}", s(&info));
    assert!(s(&info).contains("txt:id="));
    assert!(s(&info).contains(" resp=3\n"));
    assert_eq!(
        r.cmds("HELLO 4"),
        b"-NOPROTO unsupported protocol version\r\n"
    );
    assert_eq!(
        r.cmds("HELLO x"),
        b"-ERR Protocol version is not an integer or out of range\r\n"
    );
    assert_eq!(r.cmds("HELLO 2 SETNAME conn1"), hello_reply(2, id));
    assert_eq!(r.cmds("GET nokey"), b"$-1\r\n");
    assert_eq!(r.cmds("CLIENT GETNAME"), b"$5\r\nconn1\r\n");
    assert_eq!(
        r.cmds("HELLO 3 SETNAME"),
        b"-ERR Syntax error in HELLO option 'SETNAME'\r\n"
    );
    assert_eq!(r.cmds("GET nokey"), b"$-1\r\n", "failed HELLO keeps RESP2");
}

#[test]
fn client_reply_off_and_skip() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    r.send(
        b"CLIENT REPLY OFF\r\nPING\r\nFOO\r\nCLIENT REPLY SKIP\r\nECHO a\r\nCLIENT REPLY ON\r\n",
    );
    assert_eq!(r.reply(), b"+OK\r\n");
    r.send(b"CLIENT REPLY SKIP\r\nECHO skipped\r\nECHO shown\r\n");
    assert_eq!(r.reply(), b"$5\r\nshown\r\n");
    // SKIP twice in a row: the second SKIP is itself skipped and skips the
    // next command.
    r.send(b"CLIENT REPLY SKIP\r\nCLIENT REPLY SKIP\r\nECHO a\r\nECHO b\r\n");
    assert_eq!(r.reply(), b"$1\r\nb\r\n");
    // ON right after SKIP is not skipped: it clears the skip and answers.
    r.send(b"CLIENT REPLY SKIP\r\nCLIENT REPLY ON\r\nPING\r\n");
    assert_eq!(r.reply(), b"+OK\r\n");
    assert_eq!(r.reply(), b"+PONG\r\n");
    // An error reply is dropped too.
    r.send(b"CLIENT REPLY SKIP\r\nNOSUCH\r\nPING\r\n");
    assert_eq!(r.reply(), b"+PONG\r\n");
    assert_eq!(r.cmds("CLIENT REPLY maybe"), b"-ERR syntax error\r\n");
    // RESET turns replies back on and answers.
    r.send(b"CLIENT REPLY OFF\r\nRESET\r\n");
    assert_eq!(r.reply(), b"+RESET\r\n");
}

#[test]
fn client_names_and_info() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    assert_eq!(r.cmds("CLIENT GETNAME"), b"$-1\r\n");
    assert_eq!(r.cmds("CLIENT SETNAME worker-1"), b"+OK\r\n");
    assert_eq!(r.cmds("CLIENT GETNAME"), b"$8\r\nworker-1\r\n");
    let bad = b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n";
    assert_eq!(r.cmd(&[b"CLIENT", b"SETNAME", b"a b"]), bad);
    assert_eq!(r.cmd(&[b"CLIENT", b"SETNAME", b"a\nb"]), bad);
    assert_eq!(r.cmd(&[b"CLIENT", b"SETNAME", "é".as_bytes()]), bad);
    assert_eq!(r.cmds("CLIENT GETNAME"), b"$8\r\nworker-1\r\n");
    let info = s(&r.cmds("CLIENT INFO"));
    assert!(info.contains(" name=worker-1 "), "{info}");
    assert!(info.contains(" cmd=client|info "), "{info}");
    assert!(info.contains(" flags=N "), "{info}");
    assert_eq!(r.cmd(&[b"CLIENT", b"SETNAME", b""]), b"+OK\r\n");
    assert_eq!(r.cmds("CLIENT GETNAME"), b"$-1\r\n");
    assert_eq!(r.cmds("CLIENT NO-EVICT on"), b"+OK\r\n");
    assert_eq!(r.cmds("CLIENT NO-TOUCH ON"), b"+OK\r\n");
    let info = s(&r.cmds("CLIENT INFO"));
    assert!(info.contains(" flags=eT "), "{info}");
    assert_eq!(r.cmds("CLIENT NO-TOUCH x"), b"-ERR syntax error\r\n");
    assert_eq!(r.cmds("CLIENT SETINFO LIB-NAME redis-py"), b"+OK\r\n");
    assert_eq!(r.cmds("CLIENT SETINFO lib-ver 5.0.1"), b"+OK\r\n");
    assert_eq!(
        r.cmds("CLIENT SETINFO LIB-FOO x"),
        b"-ERR Unrecognized option 'LIB-FOO'\r\n"
    );
    assert_eq!(
        r.cmd(&[b"CLIENT", b"SETINFO", b"lib-name", b"a b"]),
        b"-ERR lib-name cannot contain spaces, newlines or special characters.\r\n"
    );
    let help = r.cmds("CLIENT HELP");
    assert!(help.starts_with(b"*"));
    assert!(
        s(&help).contains("+CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n")
    );
    // SELECT shows in CLIENT LIST's db field.
    assert_eq!(r.cmds("SELECT 3"), b"+OK\r\n");
    let id = client_id(&mut r);
    let list = s(&r.cmds(&format!("CLIENT LIST ID {id} 999999 {id}")));
    assert_eq!(list.matches(&format!("id={id} ")).count(), 2, "{list}");
    assert!(list.contains(" db=3 "), "{list}");
}

/// The CLIENT LIST line has exactly Redis 7.0.15's fields, in its order.
#[test]
fn client_list_field_set_matches_redis() {
    fn fields(line: &[u8]) -> Vec<String> {
        let t = s(line);
        // The first client line (the readiness probe may still be listed).
        let body = t.split("\r\n").nth(1).unwrap_or("");
        let body = body.split('\n').next().unwrap_or("").to_string();
        body.split(' ')
            .map(|kv| kv.split('=').next().unwrap_or("").to_string())
            .collect()
    }
    let Some(mut p) = Pair::start() else { return };
    let (a, b) = p.both(&[b"CLIENT", b"LIST"]);
    assert_eq!(fields(&a), fields(&b));
    let (a, b) = p.both(&[b"CLIENT", b"INFO"]);
    assert_eq!(fields(&a), fields(&b));
    p.check_line("CLIENT LIST TYPE nope");
    p.check_line("CLIENT LIST TYPE replica");
    p.check_line("CLIENT LIST TYPE master");
    p.check_line("CLIENT LIST TYPE pubsub");
    p.check_line("CLIENT LIST ID x");
    p.check_line("CLIENT LIST ID 99999");
    p.check_line("CLIENT LIST ID");
    p.check_line("CLIENT LIST bogus");
}

#[test]
fn client_kill_forms() {
    let srv = Server::start(&[]);
    let mut me = srv.raw();
    let mut victim = srv.raw();
    let mut v2 = srv.raw();
    let vid = client_id(&mut victim);
    let _ = client_id(&mut v2);
    // The harness's readiness PING connection may still be closing: wait
    // until only these three clients are listed.
    let deadline = Instant::now() + Duration::from_secs(5);
    while s(&me.cmds("CLIENT LIST")).lines().count() != 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let list = s(&me.cmds("CLIENT LIST"));
    let addr = list
        .lines()
        .find(|l| l.contains(&format!("id={vid} ")))
        .and_then(|l| l.split(' ').find(|f| f.starts_with("addr=")))
        .map(|f| f[5..].to_string())
        .expect("victim in CLIENT LIST");
    // Old form.
    assert_eq!(me.cmds(&format!("CLIENT KILL {addr}")), b"+OK\r\n");
    assert!(victim.is_closed());
    assert_eq!(
        me.cmds(&format!("CLIENT KILL {addr}")),
        b"-ERR No such client\r\n"
    );
    assert!(!s(&me.cmds("CLIENT LIST")).contains(&format!("id={vid} ")));
    // New form: by ID, SKIPME defaults to yes.
    let my_id = client_id(&mut me);
    assert_eq!(me.cmds(&format!("CLIENT KILL ID {my_id}")), b":0\r\n");
    assert_eq!(me.cmds("CLIENT KILL TYPE normal"), b":1\r\n");
    assert!(v2.is_closed());
    assert_eq!(
        me.cmds("CLIENT KILL ID 0"),
        b"-ERR client-id should be greater than 0\r\n"
    );
    assert_eq!(
        me.cmds("CLIENT KILL TYPE x"),
        b"-ERR Unknown client type 'x'\r\n"
    );
    assert_eq!(
        me.cmds("CLIENT KILL USER bob"),
        b"-ERR No such user 'bob'\r\n"
    );
    assert_eq!(
        me.cmds("CLIENT KILL SKIPME maybe"),
        b"-ERR syntax error\r\n"
    );
    assert_eq!(me.cmds("CLIENT KILL ID 1 SKIPME"), b"-ERR syntax error\r\n");
    assert_eq!(me.cmds("CLIENT KILL MAXAGE 1000"), b":0\r\n");
    // LADDR filter and killing oneself with SKIPME no: the reply is sent,
    // then the connection closes.
    let mut other = srv.raw();
    assert_eq!(other.cmds("PING"), b"+PONG\r\n");
    let laddr = format!("127.0.0.1:{}", srv.port);
    assert_eq!(
        me.cmds(&format!("CLIENT KILL LADDR {laddr} USER default SKIPME no")),
        b":2\r\n"
    );
    assert!(me.is_closed());
    assert!(other.is_closed());
    let mut fresh = srv.raw();
    assert_eq!(fresh.cmds("PING"), b"+PONG\r\n");
}

#[test]
fn auth_and_noauth_flows() {
    let srv = Server::start(&["--requirepass", "s3cret"]);
    let mut r = srv.raw();
    let noauth = b"-NOAUTH Authentication required.\r\n";
    let wrongpass = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n";
    assert_eq!(r.cmds("PING"), noauth);
    assert_eq!(r.cmds("CLIENT ID"), noauth);
    assert_eq!(r.cmds("GET k"), noauth);
    // Unknown commands and arity errors come before the auth check.
    assert_eq!(
        r.cmds("NOSUCH"),
        b"-ERR unknown command 'NOSUCH', with args beginning with: \r\n"
    );
    assert!(s(&r.cmds("HELLO 3"))
        .starts_with("-NOAUTH HELLO must be called with the client already authenticated"));
    assert_eq!(r.cmds("AUTH wrong"), wrongpass);
    assert_eq!(r.cmds("AUTH default wrong"), wrongpass);
    assert_eq!(r.cmds("AUTH bob s3cret"), wrongpass);
    assert_eq!(r.cmds("AUTH a b c"), b"-ERR syntax error\r\n");
    assert_eq!(r.cmds("HELLO 2 AUTH default nope"), wrongpass);
    assert_eq!(r.cmds("PING"), noauth);
    assert_eq!(r.cmds("AUTH s3cret"), b"+OK\r\n");
    assert_eq!(r.cmds("PING"), b"+PONG\r\n");
    // RESET drops the authentication.
    assert_eq!(r.cmds("RESET"), b"+RESET\r\n");
    assert_eq!(r.cmds("PING"), noauth);
    assert_eq!(r.cmds("AUTH default s3cret"), b"+OK\r\n");
    assert_eq!(r.cmds("PING"), b"+PONG\r\n");
    // HELLO AUTH authenticates, sets the name and switches protocol at once.
    let mut h = srv.raw();
    let reply = h.cmds("HELLO 3 AUTH default s3cret SETNAME app");
    assert!(reply.starts_with(b"%7\r\n"), "{}", s(&reply));
    assert_eq!(h.cmds("CLIENT GETNAME"), b"$3\r\napp\r\n");
    assert_eq!(h.cmds("GET nokey"), b"_\r\n");
    // QUIT works without authentication.
    let mut q = srv.raw();
    assert_eq!(q.cmds("QUIT"), b"+OK\r\n");
    assert!(q.is_closed());
}

#[test]
fn auth_without_password() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    assert_eq!(
        r.cmds("AUTH foo"),
        b"-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n"
    );
    assert_eq!(r.cmds("AUTH default anything"), b"+OK\r\n");
    assert_eq!(
        r.cmds("AUTH other anything"),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
}

#[test]
fn reset_restores_defaults() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    assert_eq!(r.cmds("SELECT 5"), b"+OK\r\n");
    let _ = r.cmds("HELLO 3 SETNAME x");
    assert_eq!(r.cmds("CLIENT NO-EVICT on"), b"+OK\r\n");
    assert_eq!(r.cmds("RESET"), b"+RESET\r\n");
    assert_eq!(r.cmds("GET k"), b"$-1\r\n", "back to RESP2");
    assert_eq!(r.cmds("CLIENT GETNAME"), b"$-1\r\n");
    let info = s(&r.cmds("CLIENT INFO"));
    assert!(info.contains(" db=0 "), "{info}");
    assert!(info.contains(" flags=N "), "{info}");
    assert!(info.contains(" resp=2\n"), "{info}");
    assert_eq!(
        r.cmds("RESET x"),
        b"-ERR wrong number of arguments for 'reset' command\r\n"
    );
}

#[test]
fn maxclients_refuses_extra_connections() {
    let srv = Server::start(&["--maxclients", "2"]);
    // Let the readiness probe's connection go away.
    std::thread::sleep(Duration::from_millis(200));
    let mut a = srv.raw();
    let mut b = srv.raw();
    assert_eq!(a.cmds("PING"), b"+PONG\r\n");
    assert_eq!(b.cmds("PING"), b"+PONG\r\n");
    let mut c = srv.raw();
    assert_eq!(c.reply(), b"-ERR max number of clients reached\r\n");
    assert!(c.is_closed());
    drop(a);
    std::thread::sleep(Duration::from_millis(200));
    let mut d = srv.raw();
    assert_eq!(d.cmds("PING"), b"+PONG\r\n");
}

#[test]
fn idle_timeout_closes_clients() {
    let srv = Server::start(&["--timeout", "1"]);
    let mut r = srv.raw();
    assert_eq!(r.cmds("PING"), b"+PONG\r\n");
    let start = Instant::now();
    r.set_timeout(Duration::from_secs(6));
    assert!(r.try_reply().is_err(), "idle client should be closed");
    let took = start.elapsed();
    assert!(took < Duration::from_millis(3500), "closed after {took:?}");
    assert!(
        took >= Duration::from_millis(900),
        "closed too early: {took:?}"
    );
}

#[test]
fn unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ferrokv.sock");
    let p = path.display().to_string();
    let srv = Server::start(&["--unixsocket", &p]);
    let mut u = std::os::unix::net::UnixStream::connect(&path).unwrap();
    u.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    u.write_all(b"PING\r\nCLIENT INFO\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !s(&got).contains("resp=2\n\r\n") {
        let n = u.read(&mut buf).unwrap();
        assert!(n > 0, "closed: {}", s(&got));
        got.extend_from_slice(&buf[..n]);
    }
    let t = s(&got);
    assert!(t.starts_with("+PONG\r\n"), "{t}");
    assert!(t.contains(&format!(" addr={p}:0 laddr={p}:0 ")), "{t}");
    assert!(t.contains(" flags=U "), "{t}");
    drop(srv);
}

#[test]
fn differential_connection_commands() {
    let Some(mut p) = Pair::start() else { return };
    for line in [
        "PING",
        "PING hello",
        "PING a b",
        "ECHO",
        "ECHO a b",
        "ECHO x",
        "SELECT 16",
        "SELECT -1",
        "SELECT abc",
        "SELECT 1.5",
        "SELECT 99999999999999999999",
        "SELECT 15",
        "SELECT 0",
        "CLIENT GETNAME",
        "CLIENT SETNAME",
        "CLIENT SETNAME a b",
        "CLIENT SETNAME n1",
        "CLIENT GETNAME",
        "CLIENT GETNAME x",
        "CLIENT ID x",
        "CLIENT",
        "CLIENT foo",
        "client Foo bar",
        "CLIENT REPLY",
        "CLIENT REPLY bad",
        "CLIENT NO-EVICT",
        "CLIENT NO-EVICT bad",
        "CLIENT NO-EVICT off",
        "CLIENT KILL",
        "CLIENT KILL 1.1.1.1:1",
        "CLIENT KILL ID abc",
        "CLIENT KILL ID -3",
        "CLIENT KILL ID 9999",
        "CLIENT KILL TYPE bogus",
        "CLIENT KILL TYPE pubsub",
        "CLIENT KILL TYPE master",
        "CLIENT KILL ADDR 1.1.1.1:1 SKIPME no",
        "CLIENT KILL USER nobody",
        "CLIENT KILL SKIPME perhaps",
        "CLIENT KILL BOGUS x",
        "CLIENT KILL ID 1 TYPE",
        "CLIENT INFO x",
        "CLIENT HELP x",
        "AUTH",
        "AUTH x",
        "AUTH a b c",
        "AUTH nobody pw",
        "AUTH default pw",
        "HELLO 1",
        "HELLO 4",
        "HELLO -1",
        "HELLO abc",
        "HELLO 3.0",
        "HELLO 2 foo",
        "HELLO 2 AUTH",
        "HELLO 2 AUTH default",
        "HELLO 2 AUTH nobody pw",
        "HELLO 2 SETNAME",
        "HELLO 2 SETNAME a\tb",
        "RESET x",
    ] {
        p.check_line(line);
    }
    for line in [
        "HELLO",
        "HELLO 3",
        "HELLO",
        "HELLO 2 AUTH default pw SETNAME nm",
        "HELLO 3 setname a setname b",
    ] {
        let (a, b) = p.both(
            &line
                .split_whitespace()
                .map(str::as_bytes)
                .collect::<Vec<_>>(),
        );
        assert_eq!(normalize_hello(&a), normalize_hello(&b), "{line}");
    }
    // Now in RESP3 on both.
    p.check(&[b"CLIENT", b"SETNAME", b""]);
    for line in [
        "CLIENT GETNAME",
        "GET nokey",
        "ECHO x",
        "RESET",
        "GET nokey",
        "CLIENT GETNAME",
        "QUIT x y",
    ] {
        p.check_line(line);
    }
    assert!(p.a.is_closed() && p.b.is_closed());
}
