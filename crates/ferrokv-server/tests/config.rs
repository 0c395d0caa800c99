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
    assert!(msg.contains("at line 2"), "{msg}");
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
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut ready = String::new();
    for l in lines.by_ref() {
        let l = l.unwrap();
        if l.contains("ready to accept connections") {
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
