//! End-to-end tests of the SERVER command family (INFO, CONFIG, COMMAND,
//! TIME, LASTSAVE, DEBUG, MONITOR, SLOWLOG, LATENCY, SHUTDOWN) through the
//! real binary, with differential checks against redis-server 7.0 where the
//! replies are deterministic.

mod common;
mod support;
use common::*;
use std::time::Duration;

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// ferrokv and redis-server started with the same extra arguments.
fn pair_with(extra: &[&str]) -> Option<Pair> {
    let redis = Server::start_redis(extra)?;
    let ours = Server::start(extra);
    let a = ours.raw();
    let b = redis.raw();
    Some(Pair { ours, redis, a, b })
}

/// INFO's text as `field → value`.
fn info_fields(
    c: &mut redis::Connection,
    section: &str,
) -> std::collections::HashMap<String, String> {
    let text: String = redis::cmd("INFO").arg(section).query(c).unwrap();
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn differential_config() {
    let Some(mut p) = pair_with(&["--save", ""]) else {
        return;
    };
    for line in [
        "CONFIG GET hz",
        "CONFIG GET maxclients",
        "CONFIG GET timeout",
        "CONFIG GET slowlog-log-slower-than",
        "CONFIG GET slowlog-max-len",
        "CONFIG GET latency-monitor-threshold",
        "CONFIG GET tcp-keepalive",
        "CONFIG GET proto-max-bulk-len",
        "CONFIG GET client-query-buffer-limit",
        "CONFIG GET databases",
        "CONFIG GET loglevel",
        "CONFIG GET appendonly",
        "CONFIG GET save",
        "CONFIG GET requirepass",
        "CONFIG GET enable-debug-command",
        "CONFIG GET HZ",
        "CONFIG GET HZ hz",
        "CONFIG GET tcp-keep*",
        "CONFIG GET no-such-directive",
        "CONFIG GET",
        "CONFIG SET hz",
        "CONFIG SET hz 5 foo",
        "CONFIG SET hz 5 foo 1",
        "CONFIG SET daemonize yes",
        "CONFIG SET maxclients abc",
        "CONFIG SET hz 5 hz 6",
        "CONFIG SET hz 0",
        "CONFIG SET loglevel loud",
        "CONFIG SET protected-mode maybe",
        "CONFIG SET proto-max-bulk-len 1x",
        "CONFIG SET HZ 7 timeout 30",
        "CONFIG GET hz",
        "CONFIG GET timeout",
        "CONFIG SET proto-max-bulk-len 2mb",
        "CONFIG GET proto-max-bulk-len",
        // All-or-nothing: the valid hz is not applied.
        "CONFIG SET hz 20 maxclients abc",
        "CONFIG GET hz",
        "CONFIG SET save",
        "CONFIG REWRITE",
        "CONFIG RESETSTAT",
        "CONFIG RESETSTAT x",
        "CONFIG HELP",
        "CONFIG help x",
        "CONFIG FOO",
        "CONFIG",
    ] {
        p.check_line(line);
    }
    p.check(&[b"CONFIG", b"SET", b"save", b""]);
    p.check_line("CONFIG GET save");
    p.check(&[b"CONFIG", b"SET", b"save", b"100 10 60 1000"]);
    p.check_line("CONFIG GET save");
}

#[test]
fn differential_command() {
    let Some(mut p) = Pair::start() else { return };
    for line in [
        "COMMAND INFO get",
        "COMMAND INFO GET nosuch",
        "COMMAND INFO config|get",
        "COMMAND INFO config|set",
        "COMMAND INFO config|resetstat",
        "COMMAND INFO time",
        "COMMAND INFO info",
        "COMMAND INFO lastsave",
        "COMMAND INFO monitor",
        "COMMAND INFO slowlog|get",
        "COMMAND INFO slowlog|len",
        "COMMAND INFO latency|latest",
        "COMMAND INFO latency|reset",
        "COMMAND INFO command|count",
        "COMMAND GETKEYS",
        "COMMAND GETKEYS get",
        "COMMAND GETKEYS get k",
        "COMMAND GETKEYS set k v ex 10",
        "COMMAND GETKEYS get a b",
        "COMMAND GETKEYS foo x",
        "COMMAND GETKEYS ping x",
        "COMMAND GETKEYS config get x",
        "COMMAND GETKEYS config foo x",
        "COMMAND GETKEYSANDFLAGS get k",
        "COMMAND GETKEYSANDFLAGS nosuch k",
        "COMMAND LIST FILTERBY ACLCAT nosuchcat",
        "COMMAND LIST FILTERBY MODULE nosuchmodule",
        "COMMAND LIST FILTERBY",
        "COMMAND LIST FILTERBY foo x",
        "COMMAND LIST foo",
        "COMMAND DOCS nosuch",
        "COMMAND HELP",
        "COMMAND COUNT x",
        "COMMAND FOO",
    ] {
        p.check_line(line);
    }
    // COMMAND COUNT differs (ferrokv has fewer commands) but is an integer
    // equal to the number of COMMAND entries.
    let n = s(&p.a.cmds("COMMAND COUNT"));
    assert!(n.starts_with(':'), "{n}");
    let all = s(&p.a.cmds("COMMAND"));
    assert!(
        all.starts_with(&format!("*{}\r\n", &n[1..n.len() - 2])),
        "{}",
        &all[..20]
    );
}

#[test]
fn command_docs_and_list() {
    let srv = Server::start(&[]);
    let mut c = srv.client();
    let docs: redis::Value = redis::cmd("COMMAND")
        .arg("DOCS")
        .arg("get")
        .arg("config")
        .query(&mut c)
        .unwrap();
    let text = format!("{docs:?}");
    for want in [
        "get",
        "Get the value of a key",
        "summary",
        "since",
        "group",
        "complexity",
        "subcommands",
        "config|get",
    ] {
        assert!(text.contains(want), "{want} missing in {text}");
    }
    let list: Vec<String> = redis::cmd("COMMAND").arg("LIST").query(&mut c).unwrap();
    for want in [
        "get",
        "config",
        "config|get",
        "info",
        "command|docs",
        "slowlog|get",
    ] {
        assert!(list.iter().any(|x| x == want), "{want}");
    }
    let admin: Vec<String> = redis::cmd("COMMAND")
        .arg("LIST")
        .arg("FILTERBY")
        .arg("ACLCAT")
        .arg("admin")
        .query(&mut c)
        .unwrap();
    assert!(admin.contains(&"config|get".to_string()));
    assert!(!admin.contains(&"get".to_string()));
    let pat: Vec<String> = redis::cmd("COMMAND")
        .arg("LIST")
        .arg("FILTERBY")
        .arg("PATTERN")
        .arg("CONFIG*")
        .query(&mut c)
        .unwrap();
    assert_eq!(pat.len(), 6, "{pat:?}");
    // All commands with their subcommands, RESP3 maps too.
    let mut r = srv.raw();
    if !r.cmds("HELLO 3").starts_with(b"%") {
        return; // HELLO (connection family) not available yet
    }
    let d = s(&r.cmds("COMMAND DOCS config"));
    assert!(d.starts_with("%1\r\n$6\r\nconfig\r\n%5\r\n"), "{d}");
    let info = s(&r.cmds("COMMAND INFO get"));
    assert!(
        info.starts_with("*1\r\n*10\r\n$3\r\nget\r\n:2\r\n~2\r\n+readonly\r\n+fast\r\n"),
        "{info}"
    );
}

#[test]
fn differential_slowlog_latency_shutdown_errors() {
    let Some(mut p) = Pair::start() else { return };
    for line in [
        "SLOWLOG GET x",
        "SLOWLOG GET -2",
        "SLOWLOG GET 1 2",
        "SLOWLOG LEN 1",
        "SLOWLOG RESET",
        "SLOWLOG GET 0",
        "SLOWLOG HELP",
        "SLOWLOG FOO",
        "SLOWLOG",
        "LATENCY HISTORY",
        "LATENCY HISTORY foo",
        "LATENCY LATEST",
        "LATENCY RESET",
        "LATENCY RESET a b",
        "LATENCY FOO",
        "SHUTDOWN foo",
        "SHUTDOWN ABORT",
        "SHUTDOWN NOW ABORT",
        "SHUTDOWN NOSAVE SAVE",
        "DEBUG OBJECT k",
        "DEBUG SLEEP 0",
        "LASTSAVE x",
        "TIME x",
        "MONITOR x",
        "INFO nosuchsection",
    ] {
        p.check_line(line);
    }
}

#[test]
fn differential_debug() {
    let Some(mut p) = pair_with(&["--enable-debug-command", "yes"]) else {
        return;
    };
    for line in [
        "DEBUG OBJECT nokey",
        "SET k hello",
        "SET n 123",
        "SET big 1234567",
        "DEBUG OBJECT",
        "DEBUG OBJECT a b",
        "DEBUG SLEEP",
        "DEBUG SLEEP 0",
        "DEBUG SLEEP x",
        "DEBUG FOO",
        "DEBUG SET-ACTIVE-EXPIRE 0",
        "DEBUG SET-ACTIVE-EXPIRE 1",
        "DEBUG",
    ] {
        p.check_line(line);
    }
    // Addresses and clocks differ: compare the rest of the line.
    for key in ["k", "n", "big"] {
        let (x, y) = p.both(&[b"DEBUG", b"OBJECT", key.as_bytes()]);
        let norm = |v: &[u8]| {
            s(v).split(' ')
                .filter(|w| !w.starts_with("at:") && !w.starts_with("lru:"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(norm(&x), norm(&y), "DEBUG OBJECT {key}");
    }
}

#[test]
fn debug_needs_enable_debug_command() {
    let srv = Server::start(&["--enable-debug-command", "local"]);
    let mut r = srv.raw();
    assert_eq!(r.cmds("DEBUG SLEEP 0"), b"+OK\r\n");
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    assert!(s(&r.cmds("DEBUG SLEEP 0")).starts_with("-ERR DEBUG command not allowed."));
}

#[test]
fn debug_sleep_blocks_only_the_caller() {
    let srv = Server::start(&["--enable-debug-command", "yes", "--io-threads", "2"]);
    let mut a = srv.raw();
    let mut b = srv.raw();
    a.send_cmd(&[b"DEBUG", b"SLEEP", b"1.5"]);
    std::thread::sleep(Duration::from_millis(100));
    let t = std::time::Instant::now();
    assert_eq!(b.cmds("PING"), b"+PONG\r\n");
    assert!(
        t.elapsed() < Duration::from_millis(1000),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(a.reply(), b"+OK\r\n");
}

#[test]
fn debug_set_active_expire() {
    let srv = Server::start(&["--enable-debug-command", "yes", "--hz", "100"]);
    let mut c = srv.client();
    let _: () = redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(0)
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .arg("PX")
        .arg(10)
        .query(&mut c)
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let ks = info_fields(&mut c, "keyspace");
    assert_eq!(
        ks.get("db0").map(String::as_str),
        Some("keys=1,expires=1,avg_ttl=0")
    );
    let _: () = redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(1)
        .query(&mut c)
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let ks = info_fields(&mut c, "keyspace");
    assert!(!ks.contains_key("db0"), "{ks:?}");
    let st = info_fields(&mut c, "stats");
    assert_eq!(st["expired_keys"], "1");
}

#[test]
fn info_has_every_section_and_field() {
    let srv = Server::start(&[]);
    let mut c = srv.client();
    let _: () = redis::cmd("SET").arg("a").arg("1").query(&mut c).unwrap();
    let _: Option<String> = redis::cmd("GET").arg("a").query(&mut c).unwrap();
    let _: Option<String> = redis::cmd("GET").arg("nope").query(&mut c).unwrap();
    let _ = redis::cmd("NOSUCHCOMMAND").query::<()>(&mut c);
    let _: String = redis::cmd("CONFIG")
        .arg("GET")
        .arg("hz")
        .query::<Vec<String>>(&mut c)
        .map(|v| v.join(" "))
        .unwrap();
    let text: String = redis::cmd("INFO").arg("everything").query(&mut c).unwrap();
    assert!(
        text.starts_with("# Server\r\nredis_version:7.0.15\r\n"),
        "{text}"
    );
    assert!(text.ends_with("\r\n"));
    for sec in [
        "# Server",
        "# Clients",
        "# Memory",
        "# Persistence",
        "# Stats",
        "# Replication",
        "# CPU",
        "# Modules",
        "# Commandstats",
        "# Errorstats",
        "# Keyspace",
    ] {
        assert!(text.contains(&format!("{sec}\r\n")), "{sec}");
    }
    let f: std::collections::HashMap<&str, &str> =
        text.lines().filter_map(|l| l.split_once(':')).collect();
    for field in [
        "redis_version",
        "redis_git_sha1",
        "redis_mode",
        "os",
        "arch_bits",
        "multiplexing_api",
        "process_id",
        "run_id",
        "tcp_port",
        "server_time_usec",
        "uptime_in_seconds",
        "uptime_in_days",
        "hz",
        "configured_hz",
        "lru_clock",
        "executable",
        "config_file",
        "io_threads_active",
        "ferrokv_version",
        "connected_clients",
        "maxclients",
        "blocked_clients",
        "used_memory",
        "used_memory_human",
        "used_memory_rss",
        "used_memory_peak",
        "maxmemory",
        "maxmemory_policy",
        "mem_fragmentation_ratio",
        "loading",
        "rdb_changes_since_last_save",
        "rdb_bgsave_in_progress",
        "rdb_last_save_time",
        "aof_enabled",
        "total_connections_received",
        "total_commands_processed",
        "instantaneous_ops_per_sec",
        "total_net_input_bytes",
        "total_net_output_bytes",
        "rejected_connections",
        "expired_keys",
        "evicted_keys",
        "keyspace_hits",
        "keyspace_misses",
        "total_error_replies",
        "role",
        "connected_slaves",
        "master_replid",
        "master_repl_offset",
        "used_cpu_sys",
        "used_cpu_user",
        "cmdstat_get",
        "cmdstat_config|get",
        "errorstat_ERR",
        "db0",
    ] {
        assert!(f.contains_key(field), "INFO lacks {field}");
    }
    assert_eq!(f["redis_mode"], "standalone");
    assert_eq!(f["tcp_port"], srv.port.to_string());
    assert_eq!(f["process_id"], srv.pid().to_string());
    assert_eq!(f["run_id"].len(), 40);
    assert_eq!(f["role"], "master");
    assert_eq!(f["aof_enabled"], "0");
    assert_eq!(f["loading"], "0");
    assert_eq!(f["connected_clients"], "1");
    assert_eq!(f["keyspace_hits"], "1");
    assert_eq!(f["keyspace_misses"], "1");
    assert_eq!(f["rdb_changes_since_last_save"], "1");
    // Errors by code add up to the total (the client library's own set-up
    // commands may have failed too).
    let errs: u64 = f
        .iter()
        .filter(|(k, _)| k.starts_with("errorstat_"))
        .map(|(_, v)| v.trim_start_matches("count=").parse::<u64>().unwrap())
        .sum();
    assert!(errs >= 1);
    assert_eq!(f["total_error_replies"], errs.to_string());
    assert_eq!(f["db0"], "keys=1,expires=0,avg_ttl=0");
    assert!(f["used_memory"].parse::<u64>().unwrap() > 0);
    assert!(
        f["cmdstat_get"].starts_with("calls=2,usec="),
        "{}",
        f["cmdstat_get"]
    );
    assert!(f["cmdstat_get"].ends_with(",rejected_calls=0,failed_calls=0"));
    assert!(f["used_cpu_user"].contains('.'));
    // Default INFO has no commandstats; sections can be combined.
    let d: String = redis::cmd("INFO").query(&mut c).unwrap();
    assert!(d.contains("# Keyspace") && !d.contains("# Commandstats"));
    let two: String = redis::cmd("INFO")
        .arg("cpu")
        .arg("SERVER")
        .query(&mut c)
        .unwrap();
    assert!(
        two.starts_with("# Server\r\n") && two.contains("\r\n\r\n# CPU\r\n"),
        "{two}"
    );
    let all: String = redis::cmd("INFO").arg("all").query(&mut c).unwrap();
    assert!(all.contains("# Commandstats"));
    // RESP3: a verbatim string.
    let mut r = srv.raw();
    if r.cmds("HELLO 3").starts_with(b"%") {
        assert!(s(&r.cmds("INFO server")).starts_with("="));
    }
    // RESETSTAT zeroes the counters.
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut c).unwrap();
    let f = info_fields(&mut c, "everything");
    assert_eq!(f["keyspace_hits"], "0");
    assert_eq!(f["total_error_replies"], "0");
    assert!(!f.contains_key("errorstat_ERR"));
    assert!(!f.contains_key("cmdstat_get"));
}

#[test]
fn info_instantaneous_ops() {
    let srv = Server::start(&["--hz", "50"]);
    let mut c = srv.client();
    let t = std::time::Instant::now();
    while t.elapsed() < Duration::from_millis(400) {
        let _: () = redis::cmd("PING").query(&mut c).unwrap();
    }
    let f = info_fields(&mut c, "stats");
    assert!(
        f["instantaneous_ops_per_sec"].parse::<u64>().unwrap() > 0,
        "{f:?}"
    );
}

#[test]
fn config_set_then_get_and_apply() {
    let srv = Server::start(&[]);
    let mut c = srv.client();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxclients")
        .arg("1")
        .arg("slowlog-max-len")
        .arg("5")
        .query(&mut c)
        .unwrap();
    let v: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxclients")
        .arg("slowlog-max-*")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, ["maxclients", "1", "slowlog-max-len", "5"]);
    // maxclients 1 is live: a second client is refused.
    let mut r = srv.raw();
    assert!(s(&r.reply()).starts_with("-ERR max number of clients reached"));
    let f = info_fields(&mut c, "clients");
    assert_eq!(f["maxclients"], "1");
}

#[test]
fn slowlog_records_commands() {
    let srv = Server::start(&["--slowlog-log-slower-than", "0"]);
    let mut r = srv.raw();
    let named = r.cmds("CLIENT SETNAME logger") == b"+OK\r\n";
    r.cmds("SLOWLOG RESET");
    r.cmds("SET foo bar");
    let big = "x".repeat(200);
    r.cmd(&[b"GET", big.as_bytes()]);
    let got = s(&r.cmds("SLOWLOG GET 2"));
    // Newest first: GET with the cut argument, then SET.
    assert!(got.starts_with("*2\r\n*6\r\n:"), "{got}");
    assert!(got.contains("... (72 more bytes)"), "{got}");
    assert!(
        got.contains("$3\r\nSET\r\n$3\r\nfoo\r\n$3\r\nbar\r\n"),
        "{got}"
    );
    assert!(!named || got.contains("$6\r\nlogger\r\n"), "{got}");
    assert!(got.contains("127.0.0.1:"), "{got}");
    let mut c = srv.client();
    let len: i64 = redis::cmd("SLOWLOG").arg("LEN").query(&mut c).unwrap();
    assert!(len >= 4, "{len}");
    let all: Vec<redis::Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query(&mut c)
        .unwrap();
    assert_eq!(all.len() as i64, len + 1);
    let dflt: Vec<redis::Value> = redis::cmd("SLOWLOG").arg("GET").query(&mut c).unwrap();
    assert!(dflt.len() <= 10);
    // slowlog-max-len trims; -1 disables logging.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-max-len")
        .arg(2)
        .query(&mut c)
        .unwrap();
    let len: i64 = redis::cmd("SLOWLOG").arg("LEN").query(&mut c).unwrap();
    assert_eq!(len, 2);
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(-1)
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut c).unwrap();
    let _: () = redis::cmd("SET").arg("a").arg("b").query(&mut c).unwrap();
    let len: i64 = redis::cmd("SLOWLOG").arg("LEN").query(&mut c).unwrap();
    assert_eq!(len, 0);
}

#[test]
fn latency_monitor_records_debug_sleep() {
    let srv = Server::start(&[
        "--enable-debug-command",
        "yes",
        "--latency-monitor-threshold",
        "10",
    ]);
    let mut r = srv.raw();
    r.cmds("DEBUG SLEEP 0.05");
    let latest = s(&r.cmds("LATENCY LATEST"));
    assert!(
        latest.starts_with("*1\r\n*4\r\n$7\r\ncommand\r\n:"),
        "{latest}"
    );
    let hist = s(&r.cmds("LATENCY HISTORY command"));
    assert!(hist.starts_with("*1\r\n*2\r\n:"), "{hist}");
    let doc = s(&r.cmds("LATENCY DOCTOR"));
    assert!(doc.contains("command"), "{doc}");
    assert_eq!(r.cmds("LATENCY RESET command nosuch"), b":1\r\n");
    assert_eq!(r.cmds("LATENCY LATEST"), b"*0\r\n");
    let help = s(&r.cmds("LATENCY HELP"));
    assert!(help.contains("+LATENCY <subcommand>"));
}

#[test]
fn monitor_sees_other_clients() {
    let srv = Server::start(&[]);
    let mut m = srv.raw();
    assert_eq!(m.cmds("MONITOR"), b"+OK\r\n");
    let mut c = srv.raw();
    c.cmd(&[b"SET", b"k", b"a \"quoted\"\nvalue"]);
    c.cmds("SELECT 2");
    c.cmds("GET k");
    c.cmds("CONFIG GET hz"); // admin commands are not shown
    let l1 = s(&m.reply());
    let re = |l: &str| {
        // +<secs>.<6 digits> [<db> 127.0.0.1:<port>] ...
        let (ts, rest) = l[1..].split_once(' ').unwrap();
        let (secs, us) = ts.split_once('.').unwrap();
        assert!(secs.parse::<u64>().is_ok() && us.len() == 6, "{l}");
        rest.to_string()
    };
    assert!(l1.starts_with('+'));
    let rest = re(&l1);
    assert!(rest.starts_with("[0 127.0.0.1:"), "{rest}");
    assert!(
        rest.ends_with("] \"SET\" \"k\" \"a \\\"quoted\\\"\\nvalue\"\r\n"),
        "{rest}"
    );
    assert!(re(&s(&m.reply())).ends_with("] \"SELECT\" \"2\"\r\n"));
    let l3 = re(&s(&m.reply()));
    assert!(
        l3.starts_with("[2 ") && l3.ends_with("] \"GET\" \"k\"\r\n"),
        "{l3}"
    );
    c.cmds("PING");
    assert!(s(&m.reply()).ends_with("\"PING\"\r\n"));
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query(&mut srv.client())
        .unwrap_or_default();
    if !list.is_empty() {
        assert!(list.contains("flags=O"), "{list}");
    }
}

#[test]
fn time_and_lastsave() {
    let srv = Server::start(&[]);
    let mut c = srv.client();
    let t: Vec<String> = redis::cmd("TIME").query(&mut c).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let secs: u64 = t[0].parse().unwrap();
    let us: u64 = t[1].parse().unwrap();
    assert!(secs.abs_diff(now) <= 2 && us < 1_000_000);
    let ls: u64 = redis::cmd("LASTSAVE").query(&mut c).unwrap();
    assert!(ls <= now && now - ls < 60);
}

#[test]
fn config_rewrite_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ferrokv.conf");
    std::fs::write(&path, "# my config\nhz 15\ntimeout 0\n").unwrap();
    let srv = support::Proc::start(Some(&path), &[]);
    let mut c = srv.client();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("hz")
        .arg("25")
        .arg("slowlog-max-len")
        .arg("77")
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("CONFIG").arg("REWRITE").query(&mut c).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("# my config\nhz 25\ntimeout 0\n"),
        "{text}"
    );
    assert!(text.contains("slowlog-max-len 77"), "{text}");
    let f = info_fields(&mut c, "server");
    assert_eq!(
        f["config_file"],
        std::fs::canonicalize(&path).unwrap().display().to_string()
    );
    drop(c);
    drop(srv);
    // The rewritten file starts a server with the same values.
    let srv = support::Proc::start(Some(&path), &[]);
    let mut c = srv.client();
    let v: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("hz")
        .arg("slowlog-max-len")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, ["hz", "25", "slowlog-max-len", "77"]);
}

#[test]
fn redis_benchmark_works() {
    let Some(bench) = which("redis-benchmark") else {
        return;
    };
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    // What redis-benchmark asks at start.
    let save = s(&r.cmds("CONFIG GET save"));
    assert!(save.starts_with("*2\r\n$4\r\nsave\r\n"), "{save}");
    assert_eq!(
        r.cmds("CONFIG GET appendonly"),
        b"*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"
    );
    let out = std::process::Command::new(bench)
        .args([
            "-p",
            &srv.port.to_string(),
            "-n",
            "200",
            "-c",
            "2",
            "-t",
            "set,get",
            "-q",
        ])
        .output()
        .unwrap();
    let text = s(&out.stdout) + &s(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("SET:") && text.contains("GET:"), "{text}");
    assert!(!text.to_lowercase().contains("error"), "{text}");
}

#[test]
fn redis_cli_stat_and_info() {
    let Some(cli) = which("redis-cli") else {
        return;
    };
    let srv = Server::start(&[]);
    let port = srv.port.to_string();
    let out = std::process::Command::new(&cli)
        .args(["-p", &port, "INFO", "server"])
        .output()
        .unwrap();
    assert!(s(&out.stdout).contains("redis_version:7.0.15"));
    // What `redis-cli --stat` reads from INFO.
    let out = std::process::Command::new(&cli)
        .args(["-p", &port, "INFO"])
        .output()
        .unwrap();
    let text = s(&out.stdout);
    for f in [
        "used_memory:",
        "connected_clients:",
        "blocked_clients:",
        "total_commands_processed:",
        "total_connections_received:",
    ] {
        assert!(text.contains(f), "{f}");
    }
}

#[test]
fn shutdown_exits_zero() {
    let mut srv = Server::start(&[]);
    let mut r = srv.raw();
    assert_eq!(
        r.cmds("SHUTDOWN ABORT"),
        b"-ERR No shutdown in progress.\r\n"
    );
    r.send_cmd(&[b"SHUTDOWN", b"NOSAVE", b"NOW"]);
    assert!(r.try_reply().is_err(), "no reply after SHUTDOWN");
    let st = srv.wait_exit(10).expect("server exits");
    assert!(st.success(), "{st:?}");
}

/// `io-idle-poll-us`: an I/O worker polls for input after a batch only
/// while work keeps arriving, and an idle server uses no CPU. With a 1 s
/// ceiling and requests every millisecond the spin budget grows until the
/// worker polls through the whole pause after the last request (CPU time
/// accrues while no request arrives); with the default and with 0 a quiet
/// server does not spin.
#[test]
fn idle_poll_spins_only_while_work_keeps_coming() {
    let srv = Server::start(&["--io-threads", "1"]);
    let mut c = srv.raw();
    assert_eq!(
        c.cmd(&[b"CONFIG", b"GET", b"io-idle-poll-us"]),
        b"*2\r\n$15\r\nio-idle-poll-us\r\n$2\r\n50\r\n"
    );
    assert_eq!(
        s(&c.cmd(&[b"CONFIG", b"SET", b"io-idle-poll-us", b"-1"])),
        "-ERR CONFIG SET failed (possibly related to argument 'io-idle-poll-us') - argument must be between 0 and 1000000 inclusive\r\n"
    );
    let idle_cpu = |c: &mut Raw, pace: Duration, rounds: usize, window: Duration| -> u64 {
        for _ in 0..rounds {
            assert_eq!(c.cmd(&[b"PING"]), b"+PONG\r\n");
            std::thread::sleep(pace);
        }
        let t0 = cpu_ticks(srv.pid());
        std::thread::sleep(window);
        cpu_ticks(srv.pid()) - t0
    };
    // Default ceiling (50 µs): after the load stops the worker sleeps.
    let quiet = idle_cpu(
        &mut c,
        Duration::from_micros(100),
        2000,
        Duration::from_secs(1),
    );
    assert!(quiet <= 5, "idle server used {quiet} ticks in 1 s");
    // 1 s ceiling, a request every ms: the budget doubles on every catch,
    // so the pause after the last request is spent polling.
    assert_eq!(
        c.cmd(&[b"CONFIG", b"SET", b"io-idle-poll-us", b"1000000"]),
        b"+OK\r\n"
    );
    let spun = idle_cpu(
        &mut c,
        Duration::from_millis(1),
        300,
        Duration::from_millis(600),
    );
    assert!(
        spun >= 10,
        "no polling after the load stopped: {spun} ticks"
    );
    // Off: no polling at all.
    assert_eq!(
        c.cmd(&[b"CONFIG", b"SET", b"io-idle-poll-us", b"0"]),
        b"+OK\r\n"
    );
    std::thread::sleep(Duration::from_millis(1100));
    let off = idle_cpu(
        &mut c,
        Duration::from_millis(1),
        300,
        Duration::from_millis(600),
    );
    assert!(off <= 5, "polling while off: {off} ticks");
}

/// A port in use stops the start-up with Redis's message naming the
/// address, the port and the reason, before the dataset is loaded: with a
/// corrupt dump.rdb in `dir`, the bind error is what is reported.
#[test]
fn port_in_use_is_reported_before_loading() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("dump.rdb"), b"REDIS0010\xffgarbage").unwrap();
    let err = common::start_fails(
        &[
            "--port",
            &port,
            "--bind",
            "127.0.0.1",
            "--dir",
            dir.path().to_str().unwrap(),
        ],
        None,
    );
    assert!(
        err.contains(&format!(
            "Could not create server TCP listening socket 127.0.0.1:{port}: bind: Address already in use"
        )),
        "{err}"
    );
    assert!(!err.contains("RDB") && !err.contains("dump.rdb"), "{err}");
    // The log line Redis's test suite looks for to retry on another port.
    assert!(
        err.contains(&format!(
            "# Failed listening on port {port} (TCP), aborting."
        )),
        "{err}"
    );
}

/// The start-up log as Redis writes it (logfile "": standard output):
/// with `always-show-logo yes` a banner with ` Port: <port>` and
/// ` PID: <pid>` (what Redis's test suite waits for), then `<pid>:M <dd Mon
/// yyyy HH:MM:SS.mmm> * Server initialized` and `... * Ready to accept
/// connections`; a replica's lines carry `S`.
#[test]
fn startup_log_is_in_redis_format() {
    use std::io::{BufRead, BufReader};
    let port = common::free_port();
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ferrokv-server"))
        .args([
            "--port",
            &port.to_string(),
            "--always-show-logo",
            "yes",
            "--loglevel",
            "verbose",
        ])
        .args(["--dir", dir.path().to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for l in lines.by_ref() {
        let l = l.unwrap();
        let ready = l.contains("Ready to accept connections");
        seen.push(l);
        if ready {
            break;
        }
    }
    let text = seen.join("\n");
    assert!(text.contains(&format!(" PID: {pid}")), "{text}");
    assert!(text.contains(&format!(" Port: {port}")), "{text}");
    let line_re = |l: &str, what: &str| {
        // 4242:M 05 Dec 2026 20:33:42.440 * what
        let prefix = format!("{pid}:M ");
        let Some(rest) = l.strip_prefix(&prefix) else {
            return false;
        };
        let parts: Vec<&str> = rest.splitn(6, ' ').collect();
        parts.len() == 6
            && parts[0].len() == 2
            && parts[1].len() == 3
            && parts[2].len() == 4
            && parts[3].len() == 12
            && parts[3].as_bytes()[8] == b'.'
            && parts[4] == "*"
            && parts[5].starts_with(what)
    };
    assert!(
        seen.iter().any(|l| line_re(l, "Server initialized")),
        "{text}"
    );
    assert!(
        seen.iter()
            .any(|l| line_re(l, "Ready to accept connections")),
        "{text}"
    );
    // Keep reading the log in the background; a REPLICAOF turns the role
    // character into S.
    let rest = std::thread::spawn(move || {
        let mut out = Vec::new();
        for l in lines.map_while(Result::ok) {
            let done = l.contains("Connecting to MASTER");
            out.push(l);
            if done {
                break;
            }
        }
        out
    });
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    std::io::Write::write_all(&mut c, b"REPLICAOF 127.0.0.1 1\r\n").unwrap();
    let out = rest.join().unwrap();
    let last = out.last().cloned().unwrap_or_default();
    assert!(last.starts_with(&format!("{pid}:S ")), "{out:?}");
    let _ = child.kill();
    let _ = child.wait();
}

/// SHUTDOWN NOSAVE: once the client sees its connection close, the server
/// accepts no more connections (Redis exits inside the command; scripting.tcl
/// "SHUTDOWN NOSAVE can kill a timedout script anyway" connects right after
/// and expects "connection refused"). Same on redis-server.
#[test]
fn no_connection_after_shutdown_closed_the_client() {
    use std::io::{Read, Write};
    let servers = [
        Some((Server::start(&[]), "ferrokv")),
        Server::start_redis(&[]).map(|s| (s, "redis-server")),
    ];
    for (s, who) in servers.iter().flatten() {
        let mut c = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        c.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        c.write_all(b"SHUTDOWN NOSAVE\r\n").unwrap();
        let mut rest = Vec::new();
        let _ = c.read_to_end(&mut rest);
        assert!(rest.is_empty(), "{rest:?}");
        let again = std::net::TcpStream::connect(("127.0.0.1", s.port));
        assert!(
            again.is_err(),
            "{who}: a connection was accepted after SHUTDOWN"
        );
    }
}
