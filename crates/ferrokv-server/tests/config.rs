//! Start-up configuration of the `ferrokv-server` binary: config file and
//! `--directive value` arguments, refused directives (exit code 1 with a
//! message naming the line and the directive), `--version`, `--help`, the
//! start-up log line, and clean exits on SHUTDOWN and SIGTERM.

mod common;
mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use support::{bin, Proc};

fn config_get(c: &mut redis::Connection, name: &str) -> String {
    let v: Vec<String> = redis::cmd("CONFIG").arg("GET").arg(name).query(c).unwrap();
    v.get(1).cloned().unwrap_or_default()
}

#[test]
fn config_file_and_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.conf");
    std::fs::write(
        &path,
        "# comment\n\nhz 33\nmaxclients 123\nsave 900 1\nsave 300 10\nproto-max-bulk-len 2mb\n  timeout   7  \nloglevel warning\n",
    )
    .unwrap();
    // Arguments come after the file and override it.
    let p = Proc::start(Some(&path), &["--timeout", "9", "--slowlog-max-len", "11"]);
    let mut c = p.client();
    assert_eq!(config_get(&mut c, "hz"), "33");
    assert_eq!(config_get(&mut c, "maxclients"), "123");
    assert_eq!(config_get(&mut c, "save"), "900 1 300 10");
    assert_eq!(config_get(&mut c, "proto-max-bulk-len"), "2097152");
    assert_eq!(config_get(&mut c, "timeout"), "9");
    assert_eq!(config_get(&mut c, "slowlog-max-len"), "11");
    assert_eq!(config_get(&mut c, "loglevel"), "warning");
    let info: String = redis::cmd("INFO").arg("server").query(&mut c).unwrap();
    assert!(info.contains("hz:33\r\n"), "{info}");
    assert!(info.contains(&format!(
        "config_file:{}\r\n",
        std::fs::canonicalize(&path).unwrap().display()
    )));
}

#[test]
fn arguments_only() {
    let p = Proc::start(None, &["--hz", "20", "--save", "", "--maxclients", "50"]);
    let mut c = p.client();
    assert_eq!(config_get(&mut c, "hz"), "20");
    assert_eq!(config_get(&mut c, "save"), "");
    assert_eq!(config_get(&mut c, "maxclients"), "50");
    let info: String = redis::cmd("INFO").arg("server").query(&mut c).unwrap();
    assert!(info.contains("config_file:\r\n"));
    // No file: CONFIG REWRITE refuses.
    let r: redis::RedisResult<()> = redis::cmd("CONFIG").arg("REWRITE").query(&mut c);
    assert!(r
        .unwrap_err()
        .to_string()
        .contains("The server is running without a config file"));
}

fn run_fail(args: &[&str]) -> (i32, String) {
    let out = Command::new(bin()).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout),
    )
}

#[test]
fn bad_directive_in_file_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.conf");
    std::fs::write(&path, "hz 10\n# fine so far\nno-such-directive yes\n").unwrap();
    let (code, msg) = run_fail(&[path.to_str().unwrap()]);
    assert_eq!(code, 1, "{msg}");
    assert!(msg.contains("FATAL CONFIG FILE ERROR"), "{msg}");
    assert!(msg.contains("at line 3"), "{msg}");
    assert!(msg.contains("'no-such-directive yes'"), "{msg}");
    assert!(
        msg.contains("Bad directive or wrong number of arguments"),
        "{msg}"
    );

    std::fs::write(&path, "port 7000\nhz abc\n").unwrap();
    let (code, msg) = run_fail(&[path.to_str().unwrap()]);
    assert_eq!(code, 1, "{msg}");
    assert!(
        msg.contains("at line 2") && msg.contains("'hz abc'"),
        "{msg}"
    );
    assert!(
        msg.contains("argument couldn't be parsed into an integer"),
        "{msg}"
    );
}

#[test]
fn bad_argument_exits_1() {
    let (code, msg) = run_fail(&["--port", "0", "--frobnicate", "3"]);
    assert_eq!(code, 1, "{msg}");
    assert!(
        msg.contains("'frobnicate \"3\"'") || msg.contains("'frobnicate 3'"),
        "{msg}"
    );
    assert!(msg.contains("at line 3"), "{msg}");
    let (code, msg) = run_fail(&["--maxclients", "0"]);
    assert_eq!(code, 1, "{msg}");
    assert!(msg.contains("maxclients"), "{msg}");
    let (code, msg) = run_fail(&["/nonexistent/ferrokv.conf"]);
    assert_eq!(code, 1, "{msg}");
    assert!(msg.contains("can't open config file"), "{msg}");
}

#[test]
fn version_and_help() {
    for flag in ["--version", "-v"] {
        let out = Command::new(bin()).arg(flag).output().unwrap();
        assert!(out.status.success());
        let s = String::from_utf8_lossy(&out.stdout);
        assert!(s.contains("v=") && s.contains("7.0.15"), "{s}");
    }
    for flag in ["--help", "-h"] {
        let out = Command::new(bin()).arg(flag).output().unwrap();
        assert!(out.status.success());
        let s = String::from_utf8_lossy(&out.stderr);
        assert!(s.contains("Usage:") && s.contains("--port"), "{s}");
    }
}

#[test]
fn startup_log_line_and_pidfile() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("f.pid");
    let port = common::free_port();
    let mut child = Command::new(bin())
        .args([
            "--port",
            &port.to_string(),
            "--io-threads",
            "2",
            "--pidfile",
        ])
        .arg(&pidfile)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The log goes to standard output in Redis's format (logfile ""):
    // `<pid>:M <date> * Ready to accept connections`, after the banner with
    // ` PID: <pid>` that Redis's test suite waits for.
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ready = String::new();
    let mut banner_pid = false;
    for l in lines.by_ref() {
        let l = l.unwrap();
        banner_pid |= l.contains(&format!(" PID: {}", child.id()));
        if l.contains("Ready to accept connections") {
            assert!(
                l.starts_with(&format!("{}:M ", child.id())) && l.contains(" * Ready"),
                "{l}"
            );
            ready = l;
            break;
        }
    }
    for want in [
        format!("version={}", env!("CARGO_PKG_VERSION")),
        format!("port={port}"),
        format!("pid={}", child.id()),
        "threads=2".to_string(),
    ] {
        assert!(ready.contains(&want), "{want} not in {ready}");
    }
    assert!(
        !banner_pid,
        "no banner without always-show-logo or a terminal"
    );
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    assert_eq!(pid.trim(), child.id().to_string());
    // SIGTERM: clean exit, status 0, pidfile removed.
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let st = child.wait().unwrap();
    assert!(st.success(), "{st:?}");
    assert!(!pidfile.exists());
}

#[test]
fn shutdown_exits_zero() {
    let mut p = Proc::start(None, &[]);
    let mut c = p.client();
    let _ = redis::cmd("SHUTDOWN").query::<()>(&mut c);
    let st = p.wait_exit(10).expect("exits");
    assert!(st.success(), "{st:?}");
}

#[test]
fn sigterm_exits_zero() {
    let mut p = Proc::start(None, &["--save", ""]);
    let _c = p.client();
    let st = Command::new("kill")
        .args(["-TERM", &p.child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let st = p.wait_exit(10).expect("exits");
    assert!(st.success(), "{st:?}");
}

/// The directive names of `CONFIG GET <pattern>` (every other element).
fn names(c: &mut common::Raw, pattern: &str) -> std::collections::BTreeSet<String> {
    common::frame_bulks(&c.cmd(&[b"CONFIG", b"GET", pattern.as_bytes()]))
        .into_iter()
        .step_by(2)
        .collect()
}

/// CONFIG GET/SET as Redis 7.0 (issue 23): the same directives for `*`
/// (ferrokv's own aside), hidden testing directives answered by name only,
/// every directive set back to its own value with Redis's reply (OK, or
/// "can't set immutable config"), `bind` changed at run time, several
/// patterns in one CONFIG GET, and the error texts of the directives
/// ferrokv parses without acting on them.
#[test]
fn config_get_set_parity_with_redis() {
    let Some(mut p) = common::Pair::start() else {
        return;
    };
    let ours_only = [
        "hello-server-name",
        "io-idle-poll-us",
        "item-size-max",
        "memcached-port",
        "memcached-unixsocket",
        "memcached-unixsocketperm",
        "metrics-bind",
        "metrics-port",
        "rdb-version",
    ];
    let mut ours = names(&mut p.a, "*");
    let theirs = names(&mut p.b, "*");
    for n in ours_only {
        assert!(ours.remove(n), "{n}");
    }
    assert_eq!(ours, theirs, "CONFIG GET * names");
    for hidden in [
        "key-load-delay",
        "loading-process-events-interval-bytes",
        "rdb-key-save-delay",
        "use-exit-on-panic",
        "watchdog-period",
    ] {
        assert!(!theirs.contains(hidden));
        p.check(&[b"CONFIG", b"GET", hidden.as_bytes()]);
        let (x, _) = p.both(&[b"CONFIG", b"GET", format!("{hidden}*").as_bytes()]);
        assert_eq!(x, b"*0\r\n", "{hidden} matched a pattern");
    }
    for name in &theirs {
        let value = |c: &mut common::Raw| {
            common::frame_bulks(&c.cmd(&[b"CONFIG", b"GET", name.as_bytes()]))
                .get(1)
                .cloned()
                .unwrap_or_default()
        };
        let (va, vb) = (value(&mut p.a), value(&mut p.b));
        let x =
            p.a.cmd(&[b"CONFIG", b"SET", name.as_bytes(), va.as_bytes()]);
        let y =
            p.b.cmd(&[b"CONFIG", b"SET", name.as_bytes(), vb.as_bytes()]);
        assert_eq!(
            String::from_utf8_lossy(&x),
            String::from_utf8_lossy(&y),
            "CONFIG SET {name} to its own value ({va:?} / {vb:?})"
        );
    }
    for line in [
        "CONFIG SET bind 127.0.0.1",
        "PING",
        "CONFIG SET bind 10.255.255.1",
        "PING",
        "CONFIG GET bind",
        "CONFIG SET bind 127.0.0.1 -::1",
        "CONFIG SET shutdown-on-sigint nosave now",
        "CONFIG GET shutdown-on-sigint",
        "CONFIG SET shutdown-on-sigterm save nosave",
        "CONFIG SET latency-tracking-info-percentiles abc",
        "CONFIG SET latency-tracking-info-percentiles 101",
        "CONFIG SET oom-score-adj-values 1 2",
        "CONFIG SET maxmemory-clients 101%",
        "CONFIG SET maxmemory-clients 5%",
        "CONFIG GET maxmemory-clients",
        "CONFIG SET active-expire-effort 11",
        "CONFIG SET supervised no",
        "CONFIG SET list-compress-depth 2",
        "CONFIG GET list-compress-depth",
        "CONFIG SET key-load-delay 10 watchdog-period -1",
        "CONFIG GET key-load-delay",
    ] {
        // These directives take their words as one argument.
        let one_arg = [
            "bind",
            "shutdown-on-sigint",
            "shutdown-on-sigterm",
            "oom-score-adj-values",
        ]
        .into_iter()
        .find_map(|n| {
            line.strip_prefix(&format!("CONFIG SET {n} "))
                .map(|v| (n, v))
        });
        if let Some((n, v)) = one_arg {
            p.check(&[b"CONFIG", b"SET", n.as_bytes(), v.as_bytes()]);
            continue;
        }
        p.check_line(line);
    }
    // Several patterns: the same pairs (Redis replies them in its dict's
    // order).
    let pairs = |c: &mut common::Raw| {
        let v = common::frame_bulks(&c.cmds("CONFIG GET maxmemory-policy hash* timeout hz"));
        let mut v: Vec<(String, String)> =
            v.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect();
        v.sort();
        v
    };
    assert_eq!(pairs(&mut p.a), pairs(&mut p.b));
    // A bind change moves the listener: new connections reach it.
    let _ = common::Raw::connect(p.ours.port).cmd(&[b"PING"]);
}

/// CONFIG REWRITE as Redis 7.0's: directives at their default are left out
/// (io-threads, picked by the server when left at 0, counts as default),
/// memory directives keep units (`maxmemory 50mb` stays so, CONFIG SET
/// 60mb is written `60mb`, a value that is not a multiple of a unit in
/// bytes), and the file restarts to the same values.
#[test]
fn config_rewrite_leaves_defaults_out_and_keeps_units() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.conf");
    std::fs::write(
        &path,
        "maxmemory 50mb\nsave \"\"\nproto-max-bulk-len 512mb\n",
    )
    .unwrap();
    let p = Proc::start(Some(&path), &[]);
    let mut c = p.client();
    let _: () = redis::cmd("CONFIG").arg("REWRITE").query(&mut c).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("maxmemory 50mb\n"), "{text}");
    assert!(text.contains("proto-max-bulk-len 512mb\n"), "{text}");
    assert!(!text.contains("io-threads"), "{text}");
    assert!(!text.contains("hz "), "{text}");
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("60mb")
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("client-query-buffer-limit")
        .arg("1234567")
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("CONFIG").arg("REWRITE").query(&mut c).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("maxmemory 60mb\n"), "{text}");
    assert!(
        text.contains("client-query-buffer-limit 1234567\n"),
        "{text}"
    );
    drop(c);
    drop(p);
    let p = Proc::start(Some(&path), &[]);
    let mut c = p.client();
    assert_eq!(config_get(&mut c, "maxmemory"), "62914560");
    assert_eq!(config_get(&mut c, "client-query-buffer-limit"), "1234567");
    assert_eq!(config_get(&mut c, "proto-max-bulk-len"), "536870912");
}

/// Command-line errors as redis-server 7.0 reports them (Redis's
/// introspection.tcl "command line arguments - error cases"): an option
/// without a value takes the next argument even when it starts with `--`,
/// values are shown quoted, options start at line 2, reasons are Redis's.
#[test]
fn command_line_errors_as_redis() {
    let cases: &[(&[&str], &str, &str)] = &[
        (&["--port"], "'port'", "wrong number of arguments"),
        (
            &["--port", "6379", "6380"],
            "'port \"6379\" \"6380\"'",
            "wrong number of arguments",
        ),
        (
            &["--port", "--loglevel", "verbose"],
            "'port \"--loglevel\" \"verbose\"'",
            "wrong number of arguments",
        ),
        (
            &["--port", "--bla", "--loglevel", "verbose"],
            "'port \"--bla\"'",
            "argument couldn't be parsed into an integer",
        ),
        (
            &["--logfile", "--my--log--file", "--loglevel", "--bla"],
            "'loglevel \"--bla\"'",
            "argument(s) must be one of the following",
        ),
        (
            &["--shutdown-on-sigint"],
            "'shutdown-on-sigint'",
            "argument(s) must be one of the following",
        ),
        (
            &["--replicaof", "127.0.0.1", "abc"],
            "'replicaof \"127.0.0.1\" \"abc\"'",
            "Invalid master port",
        ),
        (
            &["--replicaof", "--127.0.0.1", "--abc"],
            "'replicaof \"--127.0.0.1\"'",
            "wrong number of arguments",
        ),
    ];
    for (args, line, reason) in cases {
        let (code, msg) = run_fail(args);
        assert_eq!(code, 1, "{args:?}: {msg}");
        assert!(msg.contains(&format!(">>> {line}")), "{args:?}: {msg}");
        assert!(msg.contains(reason), "{args:?}: {msg}");
    }
    let (_, msg) = run_fail(&["--port"]);
    assert!(msg.contains("at line 2"), "{msg}");
}

/// Redis 7.0 splits the one quoted value of a MULTI_ARG_CONFIG directive
/// (`--replicaof "host port"`, `--save "900 1 300 10"`) by spaces, and
/// takes several words for it in a config line (`shutdown-on-sigterm
/// nosave force`): the same start-up gives the same CONFIG GET in both.
#[test]
fn multi_arg_directives_as_redis() {
    let args = [
        "--replicaof",
        "127.0.0.1 1",
        "--shutdown-on-sigterm",
        "nosave force",
        "--shutdown-on-sigint",
        "now",
        "--latency-tracking-info-percentiles",
        "50 99.9",
        "--oom-score-adj-values",
        "0 200 800",
    ];
    let names = [
        "replicaof",
        "shutdown-on-sigterm",
        "shutdown-on-sigint",
        "latency-tracking-info-percentiles",
        "oom-score-adj-values",
    ];
    let ours = common::Server::start(&args);
    let mut c = ours.client();
    let got: Vec<String> = names.iter().map(|n| config_get(&mut c, n)).collect();
    assert_eq!(
        got,
        ["127.0.0.1 1", "nosave force", "now", "50 99.9", "0 200 800"]
    );
    if let Some(redis) = common::Server::start_redis(&args) {
        let mut r = redis.client();
        let want: Vec<String> = names.iter().map(|n| config_get(&mut r, n)).collect();
        assert_eq!(got, want);
    }
    // (The harness turns redis-server's persistence off, so `save` is
    // checked here only: redis-server shows the same "100 10 200 20".)
    let saves = common::Server::start(&["--save", "100 10 200 20"]);
    assert_eq!(config_get(&mut saves.client(), "save"), "100 10 200 20");
    // Several words in a config file line.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.conf");
    std::fs::write(
        &path,
        "shutdown-on-sigterm nosave force\nlatency-tracking-info-percentiles 50 90 99\n",
    )
    .unwrap();
    let p = Proc::start(Some(&path), &[]);
    let mut c = p.client();
    assert_eq!(config_get(&mut c, "shutdown-on-sigterm"), "nosave force");
    assert_eq!(
        config_get(&mut c, "latency-tracking-info-percentiles"),
        "50 90 99"
    );
}
