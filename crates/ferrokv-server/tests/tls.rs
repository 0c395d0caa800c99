//! TLS end to end: certificates made with the `openssl` CLI in a temporary
//! directory (a CA, a server certificate, a client certificate signed by
//! the CA and one signed by another CA), ferrokv started with `--port` and
//! `--tls-port`, then driven by `redis-cli --tls`, `openssl s_client`,
//! `redis-benchmark --tls` and the `redis` crate over rustls. Behaviour
//! follows Redis 7.0's tests/unit/tls.tcl (plain clients refused on the TLS
//! port, tls-auth-clients yes/no/optional, tls-protocols, switching ports).
//!
//! Without `openssl` or `redis-cli` on PATH the tests say so and pass,
//! unless `FERROKV_REQUIRE_REDIS` is set (CI), where they fail.

mod common;

use common::{free_port, which, Raw, Server};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Certificates for one test, in their own directory.
struct Certs {
    dir: tempfile::TempDir,
}

impl Certs {
    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

fn tools_present(tools: &[&str]) -> bool {
    for t in tools {
        if which(t).is_none() {
            if std::env::var_os("FERROKV_REQUIRE_REDIS").is_some() {
                panic!("{t} not installed but FERROKV_REQUIRE_REDIS is set");
            }
            eprintln!("skipping TLS test: {t} not installed");
            return false;
        }
    }
    true
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Signs `name`.csr made from `name`.key with `ca` (ca.crt/ca.key or
/// rogue.crt/rogue.key) into `name`.crt with extensions `ext` (none when
/// empty: `openssl x509 -req` then makes an X.509 version 1 certificate).
fn sign(dir: &Path, name: &str, cn: &str, ca: &str, ext: &str) {
    std::fs::write(dir.join(format!("{name}.ext")), ext).unwrap();
    let ext_file = format!("{name}.ext");
    let ext_args: &[&str] = if ext.is_empty() {
        &[]
    } else {
        &["-extfile", &ext_file]
    };
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-sha256",
            "-key",
            &format!("{name}.key"),
            "-subj",
            &format!("/O=ferrokv test/CN={cn}"),
            "-out",
            &format!("{name}.csr"),
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-sha256",
            "-days",
            "30",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            &format!("{ca}.crt"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-out",
            &format!("{name}.crt"),
        ]
        .iter()
        .chain(ext_args)
        .copied()
        .collect::<Vec<_>>(),
    );
}

const SERVER_EXT: &str = "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n";
const CLIENT_EXT: &str = "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n";

/// Makes ca, rogue (a second CA), server (RSA, PKCS#8), server-rsa1
/// (the same key as PKCS#1), server-ec (P-256 key in SEC1 form, its own
/// certificate), client (signed by ca) and rogue-client (signed by rogue).
fn make_certs() -> Certs {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    for ca in ["ca", "rogue"] {
        openssl(d, &["genrsa", "-out", &format!("{ca}.key"), "2048"]);
        openssl(
            d,
            &[
                "req",
                "-x509",
                "-new",
                "-nodes",
                "-sha256",
                "-days",
                "30",
                "-key",
                &format!("{ca}.key"),
                "-subj",
                &format!("/O=ferrokv test/CN={ca} Certificate Authority"),
                "-out",
                &format!("{ca}.crt"),
            ],
        );
    }
    openssl(d, &["genrsa", "-out", "server.key", "2048"]);
    sign(d, "server", "Server-only", "ca", SERVER_EXT);
    openssl(
        d,
        &[
            "rsa",
            "-in",
            "server.key",
            "-traditional",
            "-out",
            "server-rsa1.key",
        ],
    );
    openssl(
        d,
        &[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            "server-ec.key",
        ],
    );
    sign(d, "server-ec", "Server-EC", "ca", SERVER_EXT);
    openssl(d, &["genrsa", "-out", "client.key", "2048"]);
    sign(d, "client", "Client-only", "ca", CLIENT_EXT);
    openssl(d, &["genrsa", "-out", "rogue-client.key", "2048"]);
    sign(d, "rogue-client", "Rogue-client", "rogue", CLIENT_EXT);
    let k = std::fs::read_to_string(d.join("server-rsa1.key")).unwrap();
    assert!(k.starts_with("-----BEGIN RSA PRIVATE KEY-----"), "{k}");
    let k = std::fs::read_to_string(d.join("server-ec.key")).unwrap();
    assert!(k.starts_with("-----BEGIN EC PRIVATE KEY-----"), "{k}");
    Certs { dir }
}

/// A ferrokv with a plain port and a TLS port.
struct TlsServer {
    srv: Server,
    tls_port: u16,
    certs: Certs,
}

fn start(extra: &[&str]) -> Option<TlsServer> {
    if !tools_present(&["openssl", "redis-cli"]) {
        return None;
    }
    let certs = make_certs();
    let tls_port = free_port();
    let mut args = server_tls_args(&certs, tls_port);
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let srv = Server::start(&refs);
    Some(TlsServer {
        srv,
        tls_port,
        certs,
    })
}

/// Which client certificate redis-cli presents.
#[derive(Clone, Copy)]
enum Cert {
    None,
    Good,
    Rogue,
}

fn redis_cli(port: u16, certs: &Certs, cert: Cert, args: &[&str]) -> Output {
    let mut c = Command::new("redis-cli");
    c.args([
        "-p",
        &port.to_string(),
        "--tls",
        "--cacert",
        &certs.path("ca.crt"),
    ]);
    match cert {
        Cert::None => {}
        Cert::Good => {
            c.args(["--cert", &certs.path("client.crt")]);
            c.args(["--key", &certs.path("client.key")]);
        }
        Cert::Rogue => {
            c.args(["--cert", &certs.path("rogue-client.crt")]);
            c.args(["--key", &certs.path("rogue-client.key")]);
        }
    }
    c.args(args)
        .stdin(Stdio::null())
        .output()
        .expect("redis-cli")
}

/// redis-cli's stdout, trimmed ("" when it failed to connect).
fn cli(port: u16, certs: &Certs, cert: Cert, args: &[&str]) -> String {
    String::from_utf8_lossy(&redis_cli(port, certs, cert, args).stdout)
        .trim()
        .to_string()
}

/// `openssl s_client` against `port` with extra flags; returns (handshake
/// and a PING answered, combined output).
fn s_client(port: u16, certs: &Certs, flags: &[&str]) -> (bool, String) {
    let mut child = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &format!("127.0.0.1:{port}"),
            "-CAfile",
            &certs.path("ca.crt"),
            "-verify_return_error",
            "-ign_eof",
        ])
        .args(flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("openssl s_client");
    let mut stdin = child.stdin.take().unwrap();
    let _ = stdin.write_all(b"PING\r\nQUIT\r\n");
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("s_client output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (text.contains("+PONG"), text)
}

fn connected_clients(raw: &mut Raw) -> String {
    raw.info_field("clients", "connected_clients")
}

/// Waits until INFO connected_clients reads `n` (handshake tasks finish
/// asynchronously).
fn wait_clients(raw: &mut Raw, n: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while connected_clients(raw) != n {
        assert!(
            Instant::now() < deadline,
            "connected_clients never reached {n}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn redis_cli_over_tls_beside_plain_port() {
    let Some(t) = start(&[]) else { return };
    let c = &t.certs;
    assert_eq!(cli(t.tls_port, c, Cert::Good, &["PING"]), "PONG");
    assert_eq!(
        cli(t.tls_port, c, Cert::Good, &["SET", "k", "over tls"]),
        "OK"
    );
    assert_eq!(cli(t.tls_port, c, Cert::Good, &["GET", "k"]), "over tls");
    // The plain port serves the same data at the same time.
    let mut raw = t.srv.raw();
    assert_eq!(raw.cmds("GET k"), b"$8\r\nover tls\r\n");
    raw.cmds("SET k2 plain");
    assert_eq!(cli(t.tls_port, c, Cert::Good, &["GET", "k2"]), "plain");
    // CLIENT LIST over TLS shows the TLS port as laddr.
    let list = cli(t.tls_port, c, Cert::Good, &["CLIENT", "LIST"]);
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(
        list.contains(&format!("laddr=127.0.0.1:{}", t.tls_port)),
        "{list}"
    );
    // Directives read back with Redis's names and defaults.
    let g = cli(
        t.tls_port,
        c,
        Cert::Good,
        &["CONFIG", "GET", "tls-session-cache-*"],
    );
    assert_eq!(
        g.lines().collect::<Vec<_>>(),
        [
            "tls-session-cache-size",
            "20480",
            "tls-session-cache-timeout",
            "300"
        ]
    );
    assert_eq!(
        raw.cmds("CONFIG GET tls-auth-clients"),
        b"*2\r\n$16\r\ntls-auth-clients\r\n$3\r\nyes\r\n"
    );
    assert_eq!(
        raw.cmds("CONFIG GET tls-port"),
        format!(
            "*2\r\n$8\r\ntls-port\r\n${}\r\n{}\r\n",
            t.tls_port.to_string().len(),
            t.tls_port
        )
        .as_bytes()
    );
}

#[test]
fn plain_client_on_tls_port_is_refused_cleanly() {
    let Some(t) = start(&[]) else { return };
    let mut raw = t.srv.raw();
    for _ in 0..3 {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", t.tls_port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
        let mut buf = [0u8; 64];
        // Closed (reset) without any reply byte: no TLS alert, no RESP.
        match s.read(&mut buf) {
            Ok(n) => assert_eq!(n, 0, "unexpected bytes {:?}", &buf[..n]),
            Err(e) => assert_ne!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}"),
        }
    }
    // redis-cli without --tls fails, the server keeps running.
    let out = Command::new("redis-cli")
        .args(["-p", &t.tls_port.to_string(), "PING"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("PONG"));
    assert_eq!(raw.cmds("PING"), b"+PONG\r\n");
    assert_eq!(cli(t.tls_port, &t.certs, Cert::Good, &["PING"]), "PONG");
    // The refused connections left no client behind.
    wait_clients(&mut raw, "1");
    let total: u64 = raw
        .info_field("stats", "total_connections_received")
        .parse()
        .unwrap();
    assert!(total >= 6, "{total}");
}

#[test]
fn auth_clients_yes_no_optional() {
    let Some(t) = start(&[]) else { return };
    let (p, c) = (t.tls_port, &t.certs);
    let mut raw = t.srv.raw();
    // yes (the default): a certificate signed by the CA is required.
    assert_eq!(cli(p, c, Cert::Good, &["PING"]), "PONG");
    assert_eq!(cli(p, c, Cert::None, &["PING"]), "");
    assert_eq!(cli(p, c, Cert::Rogue, &["PING"]), "");
    // optional: no certificate is fine, a bad one is still refused.
    assert_eq!(raw.cmds("CONFIG SET tls-auth-clients optional"), b"+OK\r\n");
    assert_eq!(cli(p, c, Cert::None, &["PING"]), "PONG");
    assert_eq!(cli(p, c, Cert::Good, &["PING"]), "PONG");
    assert_eq!(cli(p, c, Cert::Rogue, &["PING"]), "");
    // no: certificates are not asked for.
    assert_eq!(raw.cmds("CONFIG SET tls-auth-clients no"), b"+OK\r\n");
    assert_eq!(cli(p, c, Cert::None, &["PING"]), "PONG");
    assert_eq!(cli(p, c, Cert::Good, &["PING"]), "PONG");
    // Back to yes.
    assert_eq!(raw.cmds("CONFIG SET tls-auth-clients YES"), b"+OK\r\n");
    assert_eq!(cli(p, c, Cert::None, &["PING"]), "");
    assert_eq!(cli(p, c, Cert::Good, &["PING"]), "PONG");
    assert_eq!(
        raw.cmds("CONFIG SET tls-auth-clients maybe"),
        b"-ERR CONFIG SET failed (possibly related to argument 'tls-auth-clients') - argument(s) must be one of the following: no, yes, optional\r\n"
    );
    wait_clients(&mut raw, "1");
}

#[test]
fn auth_clients_optional_at_start_up() {
    let Some(t) = start(&["--tls-auth-clients", "optional"]) else {
        return;
    };
    assert_eq!(cli(t.tls_port, &t.certs, Cert::None, &["PING"]), "PONG");
    assert_eq!(cli(t.tls_port, &t.certs, Cert::Good, &["PING"]), "PONG");
    assert_eq!(cli(t.tls_port, &t.certs, Cert::Rogue, &["PING"]), "");
}

fn rust_client(t: &TlsServer, with_cert: bool) -> redis::RedisResult<redis::Connection> {
    let read = |n: &str| std::fs::read(t.certs.path(n)).unwrap();
    let client_tls = with_cert.then(|| redis::ClientTlsConfig {
        client_cert: read("client.crt"),
        client_key: read("client.key"),
    });
    let client = redis::Client::build_with_tls(
        format!("rediss://127.0.0.1:{}/", t.tls_port),
        redis::TlsCertificates {
            client_tls,
            root_cert: Some(read("ca.crt")),
        },
    )?;
    let mut con = client.get_connection_with_timeout(Duration::from_secs(5))?;
    redis::cmd("PING").query::<String>(&mut con)?;
    Ok(con)
}

#[test]
fn rust_client_over_rustls() {
    let Some(t) = start(&[]) else { return };
    assert!(
        rust_client(&t, false).is_err(),
        "no client certificate must be refused"
    );
    let mut con = rust_client(&t, true).expect("TLS connection with a client cert");
    let _: () = redis::cmd("SET")
        .arg("greeting")
        .arg("hello")
        .query(&mut con)
        .unwrap();
    let v: String = redis::cmd("GET").arg("greeting").query(&mut con).unwrap();
    assert_eq!(v, "hello");
    // A pipeline of 2,000 commands with large values crosses many TLS
    // records in both directions.
    let big = "x".repeat(20_000);
    let mut pipe = redis::pipe();
    for i in 0..1000 {
        pipe.cmd("SET").arg(format!("k{i}")).arg(&big).ignore();
        pipe.cmd("STRLEN").arg(format!("k{i}"));
    }
    let lens: Vec<usize> = pipe.query(&mut con).unwrap();
    assert_eq!(lens.len(), 1000);
    assert!(lens.iter().all(|&n| n == 20_000));
    let n: usize = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(n, 1001);
    let all: Vec<String> = redis::cmd("MGET")
        .arg("k0")
        .arg("k999")
        .query(&mut con)
        .unwrap();
    assert_eq!(all, vec![big.clone(), big]);
    // RESP3 over TLS.
    let hello: redis::Value = redis::cmd("HELLO").arg(3).query(&mut con).unwrap();
    assert!(matches!(hello, redis::Value::Map(_)), "{hello:?}");
}

#[test]
fn tls_port_only_with_port_0() {
    if !tools_present(&["openssl", "redis-cli"]) {
        return;
    }
    let certs = make_certs();
    let dir = tempfile::tempdir().unwrap();
    let tls_port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferrokv-server"))
        .args(["--port", "0", "--tls-port", &tls_port.to_string()])
        .args(["--tls-cert-file", &certs.path("server.crt")])
        .args(["--tls-key-file", &certs.path("server-rsa1.key")])
        .args(["--tls-auth-clients", "no"])
        .args(["--dir", &dir.path().display().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while cli(tls_port, &certs, Cert::None, &["PING"]) != "PONG" {
        assert!(Instant::now() < deadline, "TLS-only server did not start");
        assert!(child.try_wait().unwrap().is_none(), "server exited");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The PKCS#1 key works; no plain listener exists.
    assert_eq!(
        cli(tls_port, &certs, Cert::None, &["CONFIG", "GET", "port"]),
        "port\n0"
    );
    let info = cli(tls_port, &certs, Cert::None, &["INFO", "server"]);
    assert!(info.contains("tcp_port:0"), "{info}");
    assert_eq!(cli(tls_port, &certs, Cert::None, &["SET", "a", "1"]), "OK");
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs ferrokv in the certificates' directory (relative paths, and no
/// `dir`: like Redis, ferrokv changes to `dir` before reading the files)
/// with a TLS port, expecting a start-up failure; returns its stderr.
fn start_fails(certs: &Certs, args: &[&str]) -> String {
    let tls_port = free_port().to_string();
    let mut all = vec!["--tls-port", &tls_port];
    all.extend_from_slice(args);
    common::start_fails(&all, Some(certs.dir.path()))
}

#[test]
fn start_up_errors() {
    if !tools_present(&["openssl"]) {
        return;
    }
    let c = make_certs();
    let e = start_fails(&c, &["--tls-key-file", "server.key"]);
    assert!(e.contains("No tls-cert-file configured!"), "{e}");
    let e = start_fails(&c, &["--tls-cert-file", "server.crt"]);
    assert!(e.contains("No tls-key-file configured!"), "{e}");
    let e = start_fails(
        &c,
        &[
            "--tls-cert-file",
            "server.crt",
            "--tls-key-file",
            "server.key",
        ],
    );
    assert!(
        e.contains("Either tls-ca-cert-file or tls-ca-cert-dir must be specified"),
        "{e}"
    );
    let base = [
        "--tls-cert-file",
        "server.crt",
        "--tls-key-file",
        "server.key",
        "--tls-ca-cert-file",
        "ca.crt",
    ];
    let with = |extra: &[&str]| -> String {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        start_fails(&c, &a)
    };
    let e = with(&["--tls-protocols", "TLSv1.1 TLSv1.2"]);
    assert!(
        e.contains("TLSv1.1 is specified in tls-protocols but not supported"),
        "{e}"
    );
    let e = with(&["--tls-protocols", "SSLv3"]);
    assert!(e.contains("Invalid tls-protocols specified"), "{e}");
    let e = with(&["--tls-key-file", "missing.key"]);
    assert!(
        e.contains("Failed to load private key: missing.key:"),
        "{e}"
    );
    // A key that does not belong to the certificate.
    let e = with(&["--tls-key-file", "client.key"]);
    assert!(e.contains("Failed to load private key: client.key:"), "{e}");
    let e = with(&["--tls-ca-cert-file", "server.key"]);
    assert!(
        e.contains("Failed to configure CA certificate(s) file/directory"),
        "{e}"
    );
    let e = with(&["--tls-ciphersuites", "TLS_NOT_A_SUITE"]);
    assert!(
        e.contains("Failed to configure ciphersuites: TLS_NOT_A_SUITE"),
        "{e}"
    );
    let e = with(&["--tls-dh-params-file", "missing.dh"]);
    assert!(e.contains("Failed to load missing.dh"), "{e}");
    let e = with(&["--tls-auth-clients", "sometimes"]);
    assert!(
        e.contains("argument(s) must be one of the following: no, yes, optional"),
        "{e}"
    );
}

#[test]
fn config_set_reloads_certificates() {
    let Some(t) = start(&["--tls-auth-clients", "no"]) else {
        return;
    };
    let (p, c) = (t.tls_port, &t.certs);
    let mut raw = t.srv.raw();
    let (ok, out) = s_client(p, c, &[]);
    assert!(ok, "{out}");
    assert!(
        out.contains("CN = Server-only") || out.contains("CN=Server-only"),
        "{out}"
    );
    // A broken file is refused and the old context stays.
    assert_eq!(
        raw.cmd(&[b"CONFIG", b"SET", b"tls-cert-file", b"/nonexistent.crt"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration. Check server logs.\r\n"
    );
    assert!(raw
        .cmd(&[b"CONFIG", b"GET", b"tls-cert-file"])
        .ends_with(format!("{}\r\n", c.path("server.crt")).as_bytes()));
    assert_eq!(cli(p, c, Cert::None, &["PING"]), "PONG");
    // Cert and key changed together (SEC1 EC key): new connections get it.
    let cert = c.path("server-ec.crt");
    let key = c.path("server-ec.key");
    assert_eq!(
        raw.cmd(&[
            b"CONFIG",
            b"SET",
            b"tls-cert-file",
            cert.as_bytes(),
            b"tls-key-file",
            key.as_bytes()
        ]),
        b"+OK\r\n"
    );
    let (ok, out) = s_client(p, c, &[]);
    assert!(ok, "{out}");
    assert!(
        out.contains("CN = Server-EC") || out.contains("CN=Server-EC"),
        "{out}"
    );
    // tls-protocols: TLSv1.2 only refuses a TLS 1.3-only client.
    assert_eq!(raw.cmds("CONFIG SET tls-protocols TLSv1.2"), b"+OK\r\n");
    let (ok, out) = s_client(p, c, &["-tls1_3"]);
    assert!(!ok, "{out}");
    let (ok, out) = s_client(p, c, &["-tls1_2"]);
    assert!(ok, "{out}");
    assert!(out.contains("TLSv1.2"), "{out}");
    assert_eq!(
        raw.cmds("CONFIG SET tls-protocols TLSv1.1"),
        b"-ERR CONFIG SET failed (possibly related to argument 'tls-protocols') - Unable to update TLS configuration. Check server logs.\r\n"
    );
    assert_eq!(
        raw.cmd(&[b"CONFIG", b"SET", b"tls-protocols", b""]),
        b"+OK\r\n"
    );
    let (ok, out) = s_client(p, c, &["-tls1_3"]);
    assert!(ok, "{out}");
    // tls-ciphers restricts the TLS 1.2 suites.
    assert_eq!(
        raw.cmds("CONFIG SET tls-ciphers ECDHE-ECDSA-CHACHA20-POLY1305"),
        b"+OK\r\n"
    );
    let (ok, out) = s_client(
        p,
        c,
        &["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256"],
    );
    assert!(!ok, "{out}");
    let (ok, out) = s_client(
        p,
        c,
        &["-tls1_2", "-cipher", "ECDHE-ECDSA-CHACHA20-POLY1305"],
    );
    assert!(ok, "{out}");
    wait_clients(&mut raw, "1");
}

#[test]
fn session_resumption() {
    let Some(t) = start(&["--tls-auth-clients", "no"]) else {
        return;
    };
    let sess = t.certs.path("session.pem");
    let (ok, out) = s_client(t.tls_port, &t.certs, &["-tls1_2", "-sess_out", &sess]);
    assert!(ok, "{out}");
    let (ok, out) = s_client(t.tls_port, &t.certs, &["-tls1_2", "-sess_in", &sess]);
    assert!(ok, "{out}");
    assert!(out.contains("Reused, TLSv1.2"), "{out}");
    // tls-session-caching no: nothing is resumed.
    let mut raw = t.srv.raw();
    assert_eq!(raw.cmds("CONFIG SET tls-session-caching no"), b"+OK\r\n");
    let (ok, out) = s_client(t.tls_port, &t.certs, &["-tls1_2", "-sess_out", &sess]);
    assert!(ok, "{out}");
    let (ok, out) = s_client(t.tls_port, &t.certs, &["-tls1_2", "-sess_in", &sess]);
    assert!(ok, "{out}");
    assert!(!out.contains("Reused"), "{out}");
}

/// Redis's "TLS: switch between tcp and tls ports": CONFIG SET tls-port
/// and port open and close listeners at run time.
#[test]
fn switch_between_tcp_and_tls_ports() {
    let Some(t) = start(&["--tls-auth-clients", "no"]) else {
        return;
    };
    let c = &t.certs;
    let plain = t.srv.port;
    let tls = t.tls_port;
    // TLS -> TCP: close the TLS port, move the plain one.
    let plain2 = free_port();
    assert_eq!(
        cli(tls, c, Cert::None, &["CONFIG", "SET", "tls-port", "0"]),
        "OK"
    );
    assert_eq!(cli(tls, c, Cert::None, &["PING"]), "");
    let mut raw = Raw::connect(plain);
    assert_eq!(
        raw.cmd(&[b"CONFIG", b"SET", b"port", plain2.to_string().as_bytes()]),
        b"+OK\r\n"
    );
    assert!(std::net::TcpStream::connect(("127.0.0.1", plain)).is_err());
    let mut raw2 = Raw::connect(plain2);
    assert_eq!(raw2.cmds("PING"), b"+PONG\r\n");
    assert_eq!(raw2.info_field("server", "tcp_port"), plain2.to_string());
    // The first connection survived the move.
    assert_eq!(raw.cmds("PING"), b"+PONG\r\n");
    // TCP -> TLS: plain port off, TLS port on.
    assert_eq!(
        raw2.cmd(&[
            b"CONFIG",
            b"SET",
            b"port",
            b"0",
            b"tls-port",
            tls.to_string().as_bytes()
        ]),
        b"+OK\r\n"
    );
    assert!(std::net::TcpStream::connect(("127.0.0.1", plain2)).is_err());
    assert_eq!(cli(tls, c, Cert::None, &["PING"]), "PONG");
    // A port that cannot be bound is refused and nothing changes.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port();
    assert_eq!(
        raw2.cmd(&[b"CONFIG", b"SET", b"port", busy_port.to_string().as_bytes()]),
        b"-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.\r\n"
    );
    assert_eq!(
        raw2.cmds("CONFIG GET port"),
        b"*2\r\n$4\r\nport\r\n$1\r\n0\r\n"
    );
}

#[test]
fn tls_port_enabled_at_run_time() {
    if !tools_present(&["openssl", "redis-cli"]) {
        return;
    }
    let certs = make_certs();
    let srv = Server::start(&[]);
    let mut raw = srv.raw();
    let port = free_port();
    // Without certificates the TLS context cannot be built.
    assert_eq!(
        raw.cmd(&[b"CONFIG", b"SET", b"tls-port", port.to_string().as_bytes()]),
        b"-ERR CONFIG SET failed (possibly related to argument 'tls-port') - Unable to update TLS configuration. Check server logs.\r\n"
    );
    let cert = certs.path("server.crt");
    let key = certs.path("server.key");
    let ca = certs.path("ca.crt");
    assert_eq!(
        raw.cmd(&[
            b"CONFIG",
            b"SET",
            b"tls-cert-file",
            cert.as_bytes(),
            b"tls-key-file",
            key.as_bytes(),
            b"tls-ca-cert-file",
            ca.as_bytes(),
            b"tls-port",
            port.to_string().as_bytes()
        ]),
        b"+OK\r\n"
    );
    assert_eq!(cli(port, &certs, Cert::Good, &["PING"]), "PONG");
    assert_eq!(cli(port, &certs, Cert::None, &["PING"]), "");
}

#[test]
fn redis_benchmark_over_tls() {
    let Some(t) = start(&["--tls-auth-clients", "no"]) else {
        return;
    };
    if !tools_present(&["redis-benchmark"]) {
        return;
    }
    let out = Command::new("redis-benchmark")
        .args(["-p", &t.tls_port.to_string(), "--tls", "--cacert"])
        .arg(PathBuf::from(t.certs.path("ca.crt")))
        .args(["-t", "set,get", "-n", "2000", "-c", "10", "-P", "4", "-q"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("SET: ") && text.contains("GET: "), "{text}");
    let mut raw = t.srv.raw();
    assert_eq!(raw.cmds("EXISTS key:__rand_int__"), b":1\r\n");
}

/// Signs a copy of `name`.key with ca, without extensions, as
/// `name`-v1.crt (and checks that it is version 1).
fn sign_v1(dir: &Path, name: &str, cn: &str) {
    std::fs::copy(
        dir.join(format!("{name}.key")),
        dir.join(format!("{name}-v1.key")),
    )
    .unwrap();
    sign(dir, &format!("{name}-v1"), cn, "ca", "");
    let text = Command::new("openssl")
        .args(["x509", "-noout", "-text", "-in"])
        .arg(dir.join(format!("{name}-v1.crt")))
        .output()
        .expect("openssl x509 -text");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Version: 1 (0x0)"), "{text}");
}

/// Certificates without v3 extensions (what `openssl x509 -req` makes by
/// default), which redis-server accepts: as the server's certificate they
/// work (its key checked against it: "key values mismatch" otherwise, as
/// Redis says); as a client certificate webpki refuses them, and the log
/// says why and how to reissue one.
#[test]
fn version1_certificates_without_extensions() {
    if !tools_present(&["openssl", "redis-cli"]) {
        return;
    }
    let c = make_certs();
    let d = c.dir.path();
    sign_v1(d, "server", "localhost");
    sign_v1(d, "client", "Client-v1");
    let e = start_fails(
        &c,
        &[
            "--tls-cert-file",
            "server-v1.crt",
            "--tls-key-file",
            "client.key",
            "--tls-ca-cert-file",
            "ca.crt",
        ],
    );
    assert!(
        e.contains("Failed to load private key: client.key: key values mismatch"),
        "{e}"
    );
    let tls_port = free_port();
    let log = c.path("v1.log");
    let srv = Server::start(&[
        "--tls-port",
        &tls_port.to_string(),
        "--tls-cert-file",
        &c.path("server-v1.crt"),
        "--tls-key-file",
        &c.path("server.key"),
        "--tls-ca-cert-file",
        &c.path("ca.crt"),
        "--logfile",
        &log,
    ]);
    assert_eq!(cli(tls_port, &c, Cert::Good, &["ping"]), "PONG");
    let out = Command::new("redis-cli")
        .args(["-p", &tls_port.to_string(), "--tls", "--cacert"])
        .arg(c.path("ca.crt"))
        .arg("--cert")
        .arg(c.path("client-v1.crt"))
        .arg("--key")
        .arg(c.path("client.key"))
        .arg("ping")
        .stdin(Stdio::null())
        .output()
        .expect("redis-cli");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("PONG"));
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("Client certificate refused: it is an X.509 version 1 certificate") {
            break;
        }
        assert!(Instant::now() < deadline, "no explanation logged:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(srv);
}

/// The `tls-*` arguments of a server in a TLS replication pair: its TLS
/// port, the server pair, the CA, and `client.crt` as the certificate of
/// its outgoing connections (`tls-client-cert-file`).
fn tls_args(certs: &Certs, tls_port: u16) -> Vec<String> {
    let mut args = server_tls_args(certs, tls_port);
    args.extend([
        "--tls-client-cert-file".to_string(),
        certs.path("client.crt"),
        "--tls-client-key-file".to_string(),
        certs.path("client.key"),
        "--tls-replication".to_string(),
        "yes".to_string(),
    ]);
    args
}

/// The TLS port, the server's certificate and key, and the CA.
fn server_tls_args(certs: &Certs, tls_port: u16) -> Vec<String> {
    vec![
        "--tls-port".into(),
        tls_port.to_string(),
        "--tls-cert-file".into(),
        certs.path("server.crt"),
        "--tls-key-file".into(),
        certs.path("server.key"),
        "--tls-ca-cert-file".into(),
        certs.path("ca.crt"),
    ]
}

/// Waits until `replica` reports its link up and `key` reads `value`.
fn wait_replicated(replica: &mut Raw, key: &str, value: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let up = replica.info_field("replication", "master_link_status") == "up";
        let got = replica.cmd(&[b"GET", key.as_bytes()]);
        if up && got == format!("${}\r\n{value}\r\n", value.len()).into_bytes() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "replica never synced over TLS (link {}, GET {key} = {:?})",
            replica.info_field("replication", "master_link_status"),
            String::from_utf8_lossy(&got)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One TLS replication pair: `master_redis` / `replica_redis` choose
/// redis-server 7.0 for that side. The replica follows the master's TLS
/// port (`tls-replication yes`, client authentication required by the
/// master); data written before (full sync) and after (the stream) the
/// link reach it, the master lists the replica with its TLS port (Redis's
/// REPLCONF listening-port under tls-replication), and a plain-TCP
/// replica (no tls-replication) cannot follow the TLS port.
fn replication_pair(master_redis: bool, replica_redis: bool) {
    if !tools_present(&["openssl", "redis-cli", "redis-server"]) {
        return;
    }
    let certs = make_certs();
    let start = |redis: bool, args: &[String]| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        if redis {
            Server::start_redis(&refs).expect("redis-server")
        } else {
            Server::start(&refs)
        }
    };
    let m_tls = free_port();
    let master = start(master_redis, &tls_args(&certs, m_tls));
    let r_tls = free_port();
    let replica = start(replica_redis, &tls_args(&certs, r_tls));
    let mut m = master.raw();
    let mut r = replica.raw();
    assert_eq!(m.cmds("SET before-sync v1"), b"+OK\r\n");
    assert_eq!(m.cmds("RPUSH list a b c"), b":3\r\n");
    assert_eq!(
        r.cmd(&[b"REPLICAOF", b"127.0.0.1", m_tls.to_string().as_bytes()]),
        b"+OK\r\n"
    );
    wait_replicated(&mut r, "before-sync", "v1");
    assert_eq!(m.cmds("SET after-sync v2"), b"+OK\r\n");
    wait_replicated(&mut r, "after-sync", "v2");
    assert_eq!(
        r.cmds("LRANGE list 0 -1"),
        b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
    );
    let slave0 = m.info_field("replication", "slave0");
    assert!(
        slave0.contains(&format!("port={r_tls},")),
        "the master lists the replica by its TLS port: {slave0}"
    );
    // A replica without tls-replication speaks plain RESP to the TLS port:
    // the handshake fails and it never links.
    let plain = start(replica_redis, &[]);
    let mut p = plain.raw();
    p.cmd(&[b"REPLICAOF", b"127.0.0.1", m_tls.to_string().as_bytes()]);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(p.info_field("replication", "master_link_status"), "down");
    assert_eq!(p.cmds("EXISTS before-sync"), b":0\r\n");
}

#[test]
fn ferrokv_replica_of_ferrokv_master_over_tls() {
    replication_pair(false, false);
}

#[test]
fn ferrokv_replica_of_redis_master_over_tls() {
    replication_pair(true, false);
}

#[test]
fn redis_replica_of_ferrokv_master_over_tls() {
    replication_pair(false, true);
}

/// redis-cli over plain TCP, its stdout.
fn plain_cli(port: u16, args: &[&str]) -> String {
    let o = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// The numbers among `text`'s lines that are ports of `ports`.
fn ports_in(text: &str, ports: &[u16]) -> Vec<u16> {
    text.lines()
        .filter_map(|l| l.trim().parse::<u16>().ok())
        .filter(|p| ports.contains(p))
        .collect()
}

/// A TLS cluster (`tls-cluster yes`) of three masters, redis-server 7.0
/// where `redis[i]`: created with `redis-cli --tls --cluster create` over
/// the TLS ports (so every bus link is TLS, both ways between the kinds),
/// then, as Redis 7.0 gives them: TLS clients see TLS ports in CLUSTER
/// SLOTS / NODES and MOVED, plaintext clients the plaintext ports; CLUSTER
/// SHARDS lists both; data written over TLS reads back over plain TCP.
fn tls_cluster(redis: [bool; 3]) {
    if !tools_present(&["openssl", "redis-cli", "redis-server"]) {
        return;
    }
    let certs = make_certs();
    let mut nodes = Vec::new();
    let mut tls_ports = Vec::new();
    for &r in &redis {
        let tls_port = free_port();
        let mut args = tls_args(&certs, tls_port);
        args.extend(
            [
                "--tls-cluster",
                "yes",
                "--cluster-enabled",
                "yes",
                "--cluster-port",
                &free_port().to_string(),
                "--cluster-node-timeout",
                "2000",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let n = if r {
            Server::start_redis(&refs).expect("redis-server")
        } else {
            Server::start(&refs)
        };
        nodes.push(n);
        tls_ports.push(tls_port);
    }
    let plain_ports: Vec<u16> = nodes.iter().map(|n| n.port).collect();
    let mut args: Vec<String> = vec!["--cluster".into(), "create".into()];
    args.extend(tls_ports.iter().map(|p| format!("127.0.0.1:{p}")));
    args.push("--cluster-yes".into());
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = redis_cli(tls_ports[0], &certs, Cert::Good, &a);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "cluster create over TLS: {text}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !plain_ports
        .iter()
        .all(|&p| plain_cli(p, &["CLUSTER", "INFO"]).contains("cluster_state:ok"))
    {
        assert!(Instant::now() < deadline, "the TLS cluster never became ok");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Every node knows every other's plaintext port (pport on the bus) by
    // the time each lists the others' addresses.
    let deadline = Instant::now() + Duration::from_secs(20);
    for (i, &p) in plain_ports.iter().enumerate() {
        loop {
            let slots = plain_cli(p, &["CLUSTER", "SLOTS"]);
            let seen = ports_in(&slots, &plain_ports);
            let tls_seen = ports_in(&slots, &tls_ports);
            if seen.len() == 3 && tls_seen.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "node {i} (redis: {}): CLUSTER SLOTS to a plaintext client: {slots}",
                redis[i]
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let slots = cli(tls_ports[i], &certs, Cert::Good, &["CLUSTER", "SLOTS"]);
        assert_eq!(ports_in(&slots, &tls_ports).len(), 3, "TLS client: {slots}");
        assert!(ports_in(&slots, &plain_ports).is_empty(), "{slots}");
        let nodes_text = plain_cli(p, &["CLUSTER", "NODES"]);
        for q in &plain_ports {
            assert!(nodes_text.contains(&format!(":{q}@")), "{nodes_text}");
        }
        let nodes_text = cli(tls_ports[i], &certs, Cert::Good, &["CLUSTER", "NODES"]);
        for q in &tls_ports {
            assert!(nodes_text.contains(&format!(":{q}@")), "{nodes_text}");
        }
        let shards = plain_cli(p, &["CLUSTER", "SHARDS"]);
        for (q, t) in plain_ports.iter().zip(&tls_ports) {
            assert!(
                shards.contains(&format!("port\n{q}\ntls-port\n{t}\n")),
                "CLUSTER SHARDS lists both ports: {shards}"
            );
        }
    }
    // Redirections: the port of the client's kind.
    let key = (0..1000)
        .map(|i| format!("k{i}"))
        .find(|k| plain_cli(plain_ports[0], &["GET", k]).starts_with("MOVED"))
        .expect("a key of another node");
    let moved = plain_cli(plain_ports[0], &["GET", &key]);
    assert!(
        plain_ports[1..]
            .iter()
            .any(|p| moved.ends_with(&format!(":{p}"))),
        "plaintext client: {moved}"
    );
    let moved = cli(tls_ports[0], &certs, Cert::Good, &["GET", &key]);
    assert!(
        tls_ports[1..]
            .iter()
            .any(|p| moved.ends_with(&format!(":{p}"))),
        "TLS client: {moved}"
    );
    // Data written through TLS with redirections followed reads back over
    // plaintext TCP.
    for i in 0..30 {
        let k = format!("key:{i}");
        assert_eq!(
            cli(
                tls_ports[0],
                &certs,
                Cert::Good,
                &["-c", "SET", &k, &format!("v{i}")]
            ),
            "OK"
        );
    }
    for i in 0..30 {
        let k = format!("key:{i}");
        assert_eq!(
            plain_cli(plain_ports[2], &["-c", "GET", &k]),
            format!("v{i}")
        );
    }
}

#[test]
fn tls_cluster_of_ferrokv_nodes() {
    tls_cluster([false, false, false]);
}

#[test]
fn tls_cluster_mixed_with_redis_server() {
    tls_cluster([false, true, false]);
}
