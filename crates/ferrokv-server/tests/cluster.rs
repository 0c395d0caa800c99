//! Redis Cluster end to end, with real processes on loopback ports (each
//! node in its own directory, stopped by its PID): clusters built with
//! `redis-cli --cluster create`, cluster clients (the `redis` crate's,
//! redis-py's RedisCluster with pipelines), redirections, resharding,
//! failover, nodes.conf across restarts, and mixed clusters of
//! redis-server 7.0 and ferrokv nodes: created together, resharded from
//! the redis-server nodes to the ferrokv nodes while a client writes and
//! reads, the redis-server nodes removed, every key still there; replicas
//! of either kind failing over for masters of the other.

mod common;

use common::{free_port, which, Raw};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ferrokv-server");

/// One cluster node process.
struct Node {
    bin: String,
    child: Option<Child>,
    port: u16,
    cport: u16,
    dir: tempfile::TempDir,
    extra: Vec<String>,
}

impl Node {
    fn start(bin: &str, extra: &[&str]) -> Node {
        let mut n = Node {
            bin: bin.to_string(),
            child: None,
            port: free_port(),
            cport: free_port(),
            dir: tempfile::tempdir().expect("tempdir"),
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        n.run();
        n
    }

    fn ferrokv() -> Node {
        Node::start(BIN, &[])
    }

    fn redis() -> Option<Node> {
        match which("redis-server") {
            Some(b) => Some(Node::start(
                &b,
                &["--appendonly", "no", "--daemonize", "no"],
            )),
            None => {
                assert!(
                    std::env::var_os("FERROKV_REQUIRE_REDIS").is_none(),
                    "redis-server not installed but FERROKV_REQUIRE_REDIS is set"
                );
                eprintln!("redis-server not installed: interop test skipped");
                None
            }
        }
    }

    fn is_redis(&self) -> bool {
        self.bin != BIN
    }

    fn run(&mut self) {
        let child = Command::new(&self.bin)
            .args(["--port", &self.port.to_string()])
            .args(["--cluster-port", &self.cport.to_string()])
            .args(["--cluster-enabled", "yes"])
            .args(["--cluster-node-timeout", "2000"])
            .args(["--save", ""])
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                use std::io::{Read, Write};
                let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
                if s.write_all(b"PING\r\n").is_ok() {
                    let mut b = [0u8; 16];
                    if matches!(s.read(&mut b), Ok(n) if n > 0) {
                        return;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("{} did not start", self.bin);
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }

    /// A command's reply as text (simple strings, bulk strings, integers;
    /// errors as "-..."), through redis-cli-like parsing of the raw reply.
    fn cmd(&self, line: &str) -> String {
        let mut r = self.raw();
        let b = r.cmds(line);
        String::from_utf8_lossy(&b).into_owned()
    }

    /// A bulk/verbatim reply's payload.
    fn text(&self, line: &str) -> String {
        let s = self.cmd(line);
        match s.find("\r\n") {
            Some(i) if s.starts_with('$') || s.starts_with('=') => {
                let body = &s[i + 2..s.len().saturating_sub(2)];
                body.strip_prefix("txt:").unwrap_or(body).to_string()
            }
            _ => s,
        }
    }

    fn myid(&self) -> String {
        self.text("CLUSTER MYID")
    }

    fn info_field(&self, field: &str) -> String {
        let t = self.text("CLUSTER INFO");
        t.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")))
            .unwrap_or("")
            .trim()
            .to_string()
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

fn redis_cli() -> Option<String> {
    let r = which("redis-cli");
    if r.is_none() {
        assert!(
            std::env::var_os("FERROKV_REQUIRE_REDIS").is_none(),
            "redis-cli not installed but FERROKV_REQUIRE_REDIS is set"
        );
        eprintln!("redis-cli not installed: cluster test skipped");
    }
    r
}

fn cli(args: &[&str]) -> Output {
    Command::new(which("redis-cli").expect("redis-cli"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("redis-cli")
}

fn out_text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `redis-cli --cluster create` over `nodes` (masters first), waiting
/// until every node reports cluster_state:ok.
fn create(nodes: &[&Node], replicas: usize) {
    let mut args: Vec<String> = vec!["--cluster".into(), "create".into()];
    args.extend(nodes.iter().map(|n| n.addr()));
    args.push("--cluster-replicas".into());
    args.push(replicas.to_string());
    args.push("--cluster-yes".into());
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = cli(&a);
    let t = out_text(&o);
    assert!(o.status.success(), "cluster create failed: {t}");
    assert!(t.contains("[OK] All 16384 slots covered"), "{t}");
    wait_ok(nodes);
}

fn wait_until(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting for {what}");
}

fn wait_ok(nodes: &[&Node]) {
    wait_until("cluster_state:ok on every node", 30, || {
        nodes.iter().all(|n| n.info_field("cluster_state") == "ok")
    });
}

/// `redis-cli --cluster check` from `n`: no errors, every slot covered,
/// every node agreeing.
fn check_clean(n: &Node) {
    let mut last = String::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let o = cli(&["--cluster", "check", &n.addr()]);
        last = out_text(&o);
        if o.status.success()
            && last.contains("[OK] All nodes agree about slots configuration.")
            && last.contains("[OK] All 16384 slots covered.")
            && !last.contains("[ERR]")
            && !last.contains("[WARNING]")
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("cluster check not clean from {}: {last}", n.addr());
}

fn python_redis() -> Option<String> {
    let py = which("python3")?;
    let ok = Command::new(&py)
        .args(["-c", "import redis.cluster"])
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Some(py)
    } else {
        assert!(
            std::env::var_os("FERROKV_REQUIRE_REDIS").is_none(),
            "python3 with redis-py is required when FERROKV_REQUIRE_REDIS is set"
        );
        None
    }
}

/// `node` when ioredis is installed in tests/node (`npm install --prefix
/// crates/ferrokv-server/tests/node`, as .ci/run does); required when
/// FERROKV_REQUIRE_REDIS is set.
fn node_with_ioredis() -> Option<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/node_modules/ioredis");
    match which("node") {
        Some(n) if dir.exists() => Some(n),
        _ => {
            assert!(
                std::env::var_os("FERROKV_REQUIRE_REDIS").is_none(),
                "node with ioredis (tests/node) is required when FERROKV_REQUIRE_REDIS is set"
            );
            eprintln!("node or ioredis not installed: ioredis cluster test skipped");
            None
        }
    }
}

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn create_route_and_clients() {
    if redis_cli().is_none() {
        return;
    }
    let nodes: Vec<Node> = (0..6).map(|_| Node::ferrokv()).collect();
    let refs: Vec<&Node> = nodes.iter().collect();
    create(&refs, 1);
    check_clean(&nodes[0]);
    // Roles: three masters with a replica each.
    wait_until("three replicas", 20, || {
        let t = nodes[0].text("CLUSTER NODES");
        t.lines().filter(|l| l.contains("slave")).count() == 3
    });
    // The redis crate's cluster client.
    let urls: Vec<String> = nodes
        .iter()
        .map(|n| format!("redis://{}/", n.addr()))
        .collect();
    let client = redis::cluster::ClusterClient::new(urls).expect("cluster client");
    let mut c = client.get_connection().expect("cluster connection");
    for i in 0..500 {
        let _: () = redis::cmd("SET")
            .arg(format!("k{i}"))
            .arg(i)
            .query(&mut c)
            .expect("set");
    }
    for i in 0..500 {
        let v: i64 = redis::cmd("GET")
            .arg(format!("k{i}"))
            .query(&mut c)
            .expect("get");
        assert_eq!(v, i);
    }
    // Keys land on the masters owning their slots.
    let total: i64 = nodes
        .iter()
        .filter(|n| n.text("ROLE").contains("master"))
        .map(|n| n.cmd("DBSIZE")[1..].trim().parse::<i64>().unwrap_or(0))
        .sum();
    assert_eq!(total, 500);
    // Redirections, from a master that does not own the key's slot.
    let slot_foo = 12182;
    let owner = nodes
        .iter()
        .find(|n| {
            n.text("CLUSTER NODES").lines().any(|l| {
                l.contains("myself,master")
                    && l.split_whitespace().skip(8).any(|r| {
                        let (a, b) = r.split_once('-').unwrap_or((r, r));
                        let (a, b): (u32, u32) =
                            (a.parse().unwrap_or(99999), b.parse().unwrap_or(0));
                        (a..=b).contains(&slot_foo)
                    })
            })
        })
        .expect("owner of foo's slot");
    let other = nodes
        .iter()
        .find(|n| n.port != owner.port && n.text("ROLE").contains("master"))
        .expect("another master");
    assert_eq!(
        other.cmd("SET foo bar"),
        format!("-MOVED {slot_foo} {}\r\n", owner.addr())
    );
    assert_eq!(
        owner.cmd("MSET foo 1 bar 2"),
        "-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    );
    assert_eq!(owner.cmd("MSET {foo}x 1 {foo}y 2"), "+OK\r\n");
    assert!(key_on(owner, "{foo}x"));
    // A replica redirects reads unless READONLY.
    let rep = nodes
        .iter()
        .find(|n| {
            n.text("CLUSTER NODES")
                .lines()
                .any(|l| l.contains("myself,slave") && l.contains(&owner.myid()))
        })
        .expect("replica of the owner");
    assert_eq!(owner.cmd("SET foo bar"), "+OK\r\n");
    wait_until("foo replicated", 10, || {
        let mut r = rep.raw();
        r.cmds("READONLY");
        r.cmds("GET foo") == b"$3\r\nbar\r\n"
    });
    assert!(rep.cmd("GET foo").starts_with("-MOVED 12182 "));
    let mut r = rep.raw();
    assert_eq!(r.cmds("READONLY"), b"+OK\r\n");
    assert_eq!(r.cmds("SET foo x")[..7], *b"-MOVED ");
    assert_eq!(r.cmds("READWRITE"), b"+OK\r\n");
    assert_eq!(r.cmds("GET foo")[..7], *b"-MOVED ");
    // Cluster-mode restrictions.
    assert_eq!(
        owner.cmd("SELECT 1"),
        "-ERR SELECT is not allowed in cluster mode\r\n"
    );
    assert_eq!(owner.cmd("SELECT 0"), "+OK\r\n");
    assert_eq!(
        owner.cmd("SWAPDB 0 1"),
        "-ERR SWAPDB is not allowed in cluster mode\r\n"
    );
    // redis-py's RedisCluster, commands and pipelines.
    if let Some(py) = python_redis() {
        let o = Command::new(py)
            .arg(script("cluster_client.py"))
            .arg(nodes[0].port.to_string())
            .output()
            .expect("python");
        assert!(o.status.success(), "cluster_client.py: {}", out_text(&o));
    }
    // ioredis's Cluster (npm), when installed next to the test scripts.
    if let Some(node) = node_with_ioredis() {
        let o = Command::new(node)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/cluster_client.js"))
            .arg(nodes[0].port.to_string())
            .output()
            .expect("node");
        assert!(o.status.success(), "cluster_client.js: {}", out_text(&o));
    }
    // COUNTKEYSINSLOT / GETKEYSINSLOT on the owner.
    let n: i64 = owner.cmd(&format!("CLUSTER COUNTKEYSINSLOT {slot_foo}"))[1..]
        .trim()
        .parse()
        .unwrap();
    assert!(n >= 1);
    assert!(owner
        .cmd(&format!("CLUSTER GETKEYSINSLOT {slot_foo} 10"))
        .contains("foo"));
}

/// True when `n`'s own line in its CLUSTER NODES lists `slot`.
fn owns(n: &Node, slot: u32) -> bool {
    n.text("CLUSTER NODES").lines().any(|l| {
        l.contains("myself")
            && l.split_whitespace().skip(8).any(|r| {
                let (a, b) = r.split_once('-').unwrap_or((r, r));
                match (a.parse::<u32>(), b.parse::<u32>()) {
                    (Ok(a), Ok(b)) => (a..=b).contains(&slot),
                    _ => false,
                }
            })
    })
}

fn key_on(n: &Node, key: &str) -> bool {
    !n.cmd(&format!("EXISTS {key}")).starts_with("-MOVED")
}

#[test]
fn nodes_conf_survives_restart() {
    if redis_cli().is_none() {
        return;
    }
    let mut nodes: Vec<Node> = (0..3).map(|_| Node::ferrokv()).collect();
    {
        let refs: Vec<&Node> = nodes.iter().collect();
        create(&refs, 0);
    }
    let id = nodes[1].myid();
    let before: Vec<String> = nodes[1]
        .text("CLUSTER NODES")
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            format!("{} {} {}", f[0], f[1], f[8..].join(" "))
        })
        .collect();
    let conf = std::fs::read_to_string(nodes[1].dir.path().join("nodes.conf")).expect("nodes.conf");
    assert!(conf.contains("myself,master"), "{conf}");
    assert!(conf.contains("vars currentEpoch"), "{conf}");
    nodes[1].kill();
    nodes[1].run();
    assert_eq!(nodes[1].myid(), id);
    let refs: Vec<&Node> = nodes.iter().collect();
    wait_ok(&refs);
    let mut after: Vec<String> = nodes[1]
        .text("CLUSTER NODES")
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            format!("{} {} {}", f[0], f[1], f[8..].join(" "))
        })
        .collect();
    let mut b = before.clone();
    b.sort();
    after.sort();
    assert_eq!(b, after);
    check_clean(&nodes[0]);
}

/// The same commands to a redis-server 7.0 cluster node and a ferrokv one,
/// replies compared (node names replaced).
#[test]
fn errors_match_redis() {
    let Some(r) = Node::redis() else { return };
    let f = Node::ferrokv();
    let (rid, fid) = (r.myid(), f.myid());
    let mut ra = r.raw();
    let mut fa = f.raw();
    // Sends `line` (with <ME> replaced by each node's own name) to both
    // and compares the replies with the names replaced back.
    let mut check = |line: &str| {
        let x = fa.cmds(&line.replace("<ME>", &fid));
        let y = ra.cmds(&line.replace("<ME>", &rid));
        let x = String::from_utf8_lossy(&x).replace(&fid, "<ID>");
        let y = String::from_utf8_lossy(&y).replace(&rid, "<ID>");
        assert_eq!(x, y, "reply differs for {line:?}");
    };
    for line in [
        "SET foo bar",
        "GET foo",
        "MSET a 1 b 2",
        "CLUSTER KEYSLOT foo",
        "CLUSTER KEYSLOT {user1000}.following",
        "CLUSTER KEYSLOT",
        "CLUSTER COUNTKEYSINSLOT 0",
        "CLUSTER COUNTKEYSINSLOT -1",
        "CLUSTER COUNTKEYSINSLOT 16384",
        "CLUSTER COUNTKEYSINSLOT abc",
        "CLUSTER GETKEYSINSLOT 0 10",
        "CLUSTER GETKEYSINSLOT 0 -1",
        "CLUSTER GETKEYSINSLOT 16384 1",
        "CLUSTER GETKEYSINSLOT x 1",
        "CLUSTER ADDSLOTS",
        "CLUSTER ADDSLOTS 16384",
        "CLUSTER ADDSLOTS -1",
        "CLUSTER ADDSLOTS abc",
        "CLUSTER ADDSLOTS 1 1",
        "CLUSTER ADDSLOTSRANGE 1",
        "CLUSTER ADDSLOTSRANGE 1 2 3",
        "CLUSTER ADDSLOTSRANGE 5 1",
        "CLUSTER ADDSLOTSRANGE 1 5 3 7",
        "CLUSTER DELSLOTS 5",
        "CLUSTER DELSLOTSRANGE 5 6",
        "CLUSTER SETSLOT 5 MIGRATING abc",
        "CLUSTER SETSLOT 5 IMPORTING abc",
        "CLUSTER SETSLOT 5 NODE abc",
        "CLUSTER SETSLOT 5 STABLE",
        "CLUSTER SETSLOT 5 BOGUS",
        "CLUSTER SETSLOT 99999 STABLE",
        "CLUSTER SETSLOT 5",
        "CLUSTER FORGET abc",
        "CLUSTER REPLICATE abc",
        "CLUSTER REPLICAS abc",
        "CLUSTER SLAVES abc",
        "CLUSTER COUNT-FAILURE-REPORTS abc",
        "CLUSTER FAILOVER",
        "CLUSTER FAILOVER bogus",
        "CLUSTER SET-CONFIG-EPOCH -1",
        "CLUSTER SET-CONFIG-EPOCH x",
        "CLUSTER MEET 127.0.0.1 abc",
        "CLUSTER MEET 127.0.0.1 1 abc",
        "CLUSTER MEET nothost 7000",
        "CLUSTER MEET 127.0.0.1 70000",
        "CLUSTER RESET bogus",
        "CLUSTER RESET HARD extra",
        "CLUSTER MEET 127.0.0.1 7000 17000 extra",
        "CLUSTER FAILOVER FORCE TAKEOVER",
        "CLUSTER BOGUS",
        "CLUSTER",
        "SELECT 1",
        "SELECT 0",
        "SELECT x",
        "MOVE foo 1",
        "SWAPDB 0 1",
        "COPY foo bar DB 1",
        "READONLY",
        "READWRITE",
        "ASKING",
        "MIGRATE 127.0.0.1 1 foo 0 10",
        "MIGRATE 127.0.0.1 1 foo 0 10 KEYS a",
        "MIGRATE 127.0.0.1 1 foo x 10",
        "MIGRATE 127.0.0.1 1 foo 0 10 BOGUS",
        "MIGRATE 127.0.0.1 1 foo 0 10 AUTH",
    ] {
        check(line);
    }
    // Own slot 0..=8191: keys of those slots run, others are unserved.
    check("CLUSTER ADDSLOTSRANGE 0 8191");
    check("CLUSTER ADDSLOTS 100");
    check("CLUSTER ADDSLOTSRANGE 8000 8200");
    check("CLUSTER DELSLOTS 9000");
    for line in [
        "SET bar 1",
        "GET bar",
        "SET foo 1",
        "MSET bar 1 {bar}x 2",
        "MSET bar 1 foo 2",
        "CLUSTER COUNTKEYSINSLOT 5061",
        "RPUSH {bar}l 3 1 2",
        "SORT {bar}l BY w_*",
        "SORT {bar}l GET #",
        "SORT {bar}l GET w_*",
        "SORT_RO {bar}l BY w_*",
        "SORT {bar}l BY nosort",
        "DEL {bar}l",
        "CLUSTER GETKEYSINSLOT 5061 5",
        "CLUSTER SETSLOT 5061 IMPORTING <ME>",
        "CLUSTER SETSLOT 9000 MIGRATING <ME>",
        "CLUSTER SETSLOT 5061 NODE <ME>",
        "CLUSTER REPLICATE <ME>",
        "CLUSTER FORGET <ME>",
        "CLUSTER FLUSHSLOTS",
        "CLUSTER SET-CONFIG-EPOCH 5",
        "CLUSTER RESET",
        "MIGRATE 127.0.0.1 1 nokey 0 10",
        "MIGRATE 127.0.0.1 1 bar 0 10",
        "DEL bar",
        "CLUSTER DELSLOTSRANGE 0 8191",
        "GET bar",
    ] {
        check(line);
    }
    let empty_key: &[&[u8]] = &[
        b"MIGRATE",
        b"127.0.0.1",
        b"1",
        b"",
        b"0",
        b"10",
        b"KEYS",
        b"a",
    ];
    assert_eq!(fa.cmd(empty_key), ra.cmd(empty_key));
}

#[test]
fn mixed_cluster_migrates_to_ferrokv() {
    if redis_cli().is_none() {
        return;
    }
    let Some(py) = python_redis() else {
        eprintln!("python3 with redis-py not installed: mixed cluster test skipped");
        return;
    };
    let Some(r1) = Node::redis() else { return };
    let (Some(r2), Some(r3)) = (Node::redis(), Node::redis()) else {
        return;
    };
    let (f1, f2, f3) = (Node::ferrokv(), Node::ferrokv(), Node::ferrokv());
    create(&[&r1, &f1, &r2, &f2, &r3, &f3], 0);
    check_clean(&r1);
    check_clean(&f1);
    // The migration runs in Python: a redis-py RedisCluster client writes
    // and reads the whole time while redis-cli reshards every slot of the
    // redis-server nodes to the ferrokv nodes, then removes them.
    let o = Command::new(py)
        .arg(script("cluster_migrate.py"))
        .args([r1.port, r2.port, r3.port, f1.port, f2.port, f3.port].map(|p| p.to_string()))
        .output()
        .expect("python");
    assert!(o.status.success(), "cluster_migrate.py: {}", out_text(&o));
    // The redis-server nodes are gone from the cluster; ferrokv holds all.
    for f in [&f1, &f2, &f3] {
        let t = f.text("CLUSTER NODES");
        assert_eq!(t.lines().count(), 3, "{t}");
        for r in [&r1, &r2, &r3] {
            assert!(!t.contains(&r.myid()), "{t}");
        }
    }
    check_clean(&f1);
    assert!(r1.is_redis());
}

#[test]
fn mixed_failover_both_ways() {
    if redis_cli().is_none() {
        return;
    }
    let Some(mut r1) = Node::redis() else { return };
    let (Some(r2), Some(r3)) = (Node::redis(), Node::redis()) else {
        return;
    };
    let mut f1 = Node::ferrokv();
    let (f2, f3) = (Node::ferrokv(), Node::ferrokv());
    let Some(rrep) = Node::redis() else { return };
    let frep = Node::ferrokv();
    create(&[&r1, &f1, &r2, &f2, &r3, &f3], 0);
    // A ferrokv replica of a redis-server master, and the reverse.
    for (rep, master) in [(&frep, &r1), (&rrep, &f1)] {
        let o = cli(&[
            "--cluster",
            "add-node",
            &rep.addr(),
            &r2.addr(),
            "--cluster-slave",
            "--cluster-master-id",
            &master.myid(),
        ]);
        assert!(o.status.success(), "{}", out_text(&o));
    }
    wait_until("replicas in sync", 30, || {
        frep.cmd("INFO replication")
            .contains("master_link_status:up")
            && rrep
                .cmd("INFO replication")
                .contains("master_link_status:up")
    });
    // Data on both masters reaches the replicas.
    let fill = |m: &Node| {
        let mut n = 0;
        for i in 0..3000 {
            let r = m.cmd(&format!("SET key:{i} v{i}"));
            if r == "+OK\r\n" {
                n += 1;
            }
        }
        n
    };
    let (n1, n2) = (fill(&r1), fill(&f1));
    assert!(n1 > 0 && n2 > 0);
    let dbsize = |n: &Node| n.cmd("DBSIZE")[1..].trim().parse::<i64>().unwrap_or(-1);
    wait_until("replicas caught up", 20, || {
        dbsize(&frep) == n1 && dbsize(&rrep) == n2
    });
    // Kill the redis-server master: the ferrokv replica takes over.
    let id1 = r1.myid();
    r1.kill();
    wait_until("ferrokv replica promoted", 30, || {
        frep.text("ROLE").contains("master")
    });
    wait_until("others see the new master", 30, || {
        f2.text("CLUSTER NODES").lines().any(|l| {
            l.starts_with(&frep.myid()) && l.contains("master") && l.split_whitespace().count() > 8
        }) && f2
            .text("CLUSTER NODES")
            .lines()
            .any(|l| l.starts_with(&id1) && l.contains("fail"))
    });
    // Kill the ferrokv master: the redis-server replica takes over.
    f1.kill();
    wait_until("redis-server replica promoted", 30, || {
        rrep.text("ROLE").contains("master")
    });
    for n in [&r2, &f2, &r3, &f3, &frep, &rrep] {
        wait_until("cluster ok after failovers", 30, || {
            n.info_field("cluster_state") == "ok"
        });
    }
    // Every key written before is readable from the new masters.
    for (m, n) in [(&frep, n1), (&rrep, n2)] {
        assert_eq!(dbsize(m), n);
    }
}

/// A master left without a working replica gets one from the master with
/// the most (cluster-migration-barrier 1): Redis's replica migration.
#[test]
fn replica_migration_to_orphaned_master() {
    if redis_cli().is_none() {
        return;
    }
    let mut nodes: Vec<Node> = (0..7).map(|_| Node::ferrokv()).collect();
    {
        let refs: Vec<&Node> = nodes[..6].iter().collect();
        create(&refs, 1);
    }
    let view = |n: &Node| n.text("CLUSTER NODES");
    wait_until("three masters with a replica each", 20, || {
        view(&nodes[0])
            .lines()
            .filter(|l| l.contains("slave"))
            .count()
            == 3
    });
    let masters: Vec<String> = view(&nodes[0])
        .lines()
        .filter(|l| l.split_whitespace().count() > 8)
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(masters.len(), 3);
    // A second replica for the first master.
    let o = cli(&[
        "--cluster",
        "add-node",
        &nodes[6].addr(),
        &nodes[0].addr(),
        "--cluster-slave",
        "--cluster-master-id",
        &masters[0],
    ]);
    assert!(o.status.success(), "{}", out_text(&o));
    let replicas_of = |n: &Node, m: &str| {
        view(n)
            .lines()
            .filter(|l| {
                l.contains("slave") && !l.contains("fail") && l.split_whitespace().nth(3) == Some(m)
            })
            .count()
    };
    wait_until("two replicas for the first master", 20, || {
        replicas_of(&nodes[0], &masters[0]) == 2
    });
    // Kill the only replica of the third master.
    let victim = nodes
        .iter()
        .position(|n| {
            view(n)
                .lines()
                .any(|l| l.contains("myself,slave") && l.contains(&masters[2]))
        })
        .expect("replica of the third master");
    let victim_id = nodes[victim].myid();
    nodes[victim].kill();
    let watcher = if victim == 0 { 1 } else { 0 };
    wait_until("the third master's replica flagged fail", 30, || {
        view(&nodes[watcher])
            .lines()
            .any(|l| l.starts_with(&victim_id) && l.contains("fail") && !l.contains("fail?"))
    });
    // One replica of the first master moves to the orphaned one.
    wait_until("a replica migrated to the orphaned master", 40, || {
        replicas_of(&nodes[watcher], &masters[2]) == 1
            && replicas_of(&nodes[watcher], &masters[0]) == 1
    });
}

/// redis-cli's other cluster tools against ferrokv: info, call, fix (an
/// open slot left by an interrupted migration), add-node of an empty
/// master and rebalance onto it; keys survive, the check stays clean;
/// sharded Pub/Sub is routed by slot.
#[test]
fn cli_tools_info_call_fix_rebalance() {
    if redis_cli().is_none() {
        return;
    }
    let nodes: Vec<Node> = (0..4).map(|_| Node::ferrokv()).collect();
    create(&[&nodes[0], &nodes[1], &nodes[2]], 0);
    let urls: Vec<String> = nodes[..3]
        .iter()
        .map(|n| format!("redis://{}/", n.addr()))
        .collect();
    let client = redis::cluster::ClusterClient::new(urls).expect("cluster client");
    let mut c = client.get_connection().expect("cluster connection");
    for i in 0..3000 {
        let _: () = redis::cmd("SET")
            .arg(format!("t{i}"))
            .arg(i)
            .query(&mut c)
            .expect("set");
    }
    let o = cli(&["--cluster", "info", &nodes[0].addr()]);
    let t = out_text(&o);
    assert!(
        o.status.success() && t.contains("[OK] 3000 keys in 3 masters."),
        "{t}"
    );
    let o = cli(&["--cluster", "call", &nodes[0].addr(), "DBSIZE"]);
    assert!(o.status.success(), "{}", out_text(&o));
    // An interrupted migration leaves slot 0 open; fix closes it.
    let owner0 = nodes
        .iter()
        .take(3)
        .find(|n| owns(n, 0))
        .expect("owner of slot 0");
    let other = nodes
        .iter()
        .take(3)
        .find(|n| n.port != owner0.port)
        .unwrap();
    assert_eq!(
        owner0.cmd(&format!("CLUSTER SETSLOT 0 MIGRATING {}", other.myid())),
        "+OK\r\n"
    );
    let o = cli(&["--cluster", "check", &nodes[0].addr()]);
    assert!(out_text(&o).contains("open slot"), "{}", out_text(&o));
    let o = Command::new(which("redis-cli").unwrap())
        .args(["--cluster", "fix", &nodes[0].addr()])
        .stdin(Stdio::null())
        .output()
        .expect("fix");
    assert!(o.status.success(), "{}", out_text(&o));
    check_clean(&nodes[0]);
    // An empty master joins and takes its share.
    let o = cli(&["--cluster", "add-node", &nodes[3].addr(), &nodes[0].addr()]);
    assert!(o.status.success(), "{}", out_text(&o));
    wait_until("the new node known everywhere", 20, || {
        nodes[..3]
            .iter()
            .all(|n| n.text("CLUSTER NODES").contains(&nodes[3].myid()))
    });
    // A node that joins waits out the rejoin delay before it serves (as
    // Redis's clusterUpdateState).
    wait_ok(&[&nodes[3]]);
    let o = cli(&[
        "--cluster",
        "rebalance",
        &nodes[0].addr(),
        "--cluster-use-empty-masters",
    ]);
    assert!(o.status.success(), "{}", out_text(&o));
    check_clean(&nodes[0]);
    let n3: i64 = nodes[3].cmd("DBSIZE")[1..].trim().parse().unwrap();
    assert!(n3 > 300, "rebalance moved only {n3} keys");
    let mut c = client.get_connection().expect("cluster connection");
    for i in 0..3000 {
        let v: i64 = redis::cmd("GET")
            .arg(format!("t{i}"))
            .query(&mut c)
            .expect("get");
        assert_eq!(v, i);
    }
    // Sharded Pub/Sub: SPUBLISH and SSUBSCRIBE are routed by the
    // channel's slot.
    let ch_slot = nodes[0].cmd("CLUSTER KEYSLOT ch");
    let slot: u16 = ch_slot[1..].trim().parse().unwrap();
    let owner = nodes
        .iter()
        .find(|n| !n.cmd("SPUBLISH ch m").starts_with("-MOVED"))
        .expect("owner of ch");
    for n in nodes.iter().filter(|n| n.port != owner.port) {
        assert_eq!(
            n.cmd("SPUBLISH ch m"),
            format!("-MOVED {slot} {}\r\n", owner.addr())
        );
        assert!(n.cmd("SSUBSCRIBE ch").starts_with("-MOVED"));
    }
}

/// MIGRATE to a target that never stops sending: the reply line is cut at
/// 1024 bytes as Redis's, the server keeps answering and its memory stays
/// bounded (an attack found it reading without limit).
#[test]
fn migrate_to_a_flooding_target() {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        if let Ok((mut c, _)) = l.accept() {
            let mut b = [0u8; 65536];
            let _ = c.read(&mut b);
            let chunk = [b'A'; 65536];
            let _ = c.write_all(b"+");
            while c.write_all(&chunk).is_ok() {}
        }
    });
    let n = Node::ferrokv();
    assert_eq!(n.cmd("CLUSTER ADDSLOTSRANGE 0 16383"), "+OK\r\n");
    wait_ok(&[&n]);
    assert_eq!(n.cmd("SET b hello"), "+OK\r\n");
    let t = Instant::now();
    let r = n.cmd(&format!("MIGRATE 127.0.0.1 {port} b 0 300"));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "MIGRATE took {:?}",
        t.elapsed()
    );
    assert!(r.starts_with('+') || r.starts_with('-'), "{r}");
    assert_eq!(n.cmd("PING"), "+PONG\r\n");
}

/// A manual CLUSTER FAILOVER (no FORCE) loses no acknowledged write: the
/// master pauses writes once its replica asks (MFSTART), the replica
/// catches up with the paused offset and takes over, and the writes held
/// meanwhile are answered afterwards (redirected), never acknowledged and
/// lost.
#[test]
fn manual_failover_loses_no_acknowledged_write() {
    if redis_cli().is_none() {
        return;
    }
    let nodes: Vec<Node> = (0..6).map(|_| Node::ferrokv()).collect();
    let refs: Vec<&Node> = nodes.iter().collect();
    create(&refs, 1);
    let master = &nodes[0];
    let mid = master.myid();
    let replica = nodes[3..]
        .iter()
        .find(|n| {
            n.text("CLUSTER NODES")
                .lines()
                .any(|l| l.contains("myself") && l.contains(&mid))
        })
        .expect("a replica of the first master");
    wait_until("replica link up", 30, || {
        replica
            .cmd("INFO replication")
            .contains("master_link_status:up")
    });
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let port = master.port;
    let s2 = stop.clone();
    let writer = std::thread::spawn(move || {
        let mut c = Raw::connect(port);
        let mut acked = Vec::new();
        let mut i = 0u64;
        while !s2.load(std::sync::atomic::Ordering::Relaxed) {
            let key = format!("mf:{i}");
            let r = c.cmd(&[b"SET", key.as_bytes(), b"v"]);
            if r == b"+OK\r\n" {
                acked.push(key);
            }
            i += 1;
        }
        acked
    });
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(replica.cmd("CLUSTER FAILOVER"), "+OK\r\n");
    wait_until("replica took over", 30, || {
        replica.cmd("ROLE").starts_with("*3\r\n$6\r\nmaster")
    });
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let acked = writer.join().unwrap();
    assert!(acked.len() > 10, "too few writes: {}", acked.len());
    let mut c = replica.raw();
    let lost: Vec<&String> = acked
        .iter()
        .filter(|k| {
            let r = c.cmd(&[b"GET", k.as_bytes()]);
            // Keys of other masters' slots are redirected (never written
            // here): only this master's keys count.
            !(r == b"$1\r\nv\r\n" || r.starts_with(b"-MOVED"))
        })
        .collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged writes lost: {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
    // The old master is a replica now, writes resumed (redirected).
    let r = master.cmd("SET mf:after v");
    assert!(r.starts_with("-MOVED") || r == "+OK\r\n", "{r}");
}

/// cluster-scripting.tcl: in cluster mode a script with a shebang (and a
/// function) may not touch keys of different slots, counting the slot of
/// its declared keys; old-style EVAL and `allow-cross-slot-keys` may.
/// Replies compared with a one-node redis-server 7.0 cluster.
#[test]
fn script_cross_slot_rules_as_redis() {
    let Some(redis) = Node::redis() else { return };
    let ours = Node::ferrokv();
    let scripts: [&[&str]; 5] = [
        &["EVAL", "#!lua\nredis.call('set', 'foo', 'bar')\nredis.call('set', 'bar', 'foo')\nreturn 'OK'", "0"],
        &["EVAL", "#!lua\nredis.call('set', 'foo', 'bar')\nreturn 'OK'", "1", "bar"],
        &["EVAL", "#!lua\nredis.call('set', 'foo', 'bar')\nreturn 'OK'", "1", "foo"],
        &["EVAL", "redis.call('set', 'foo', 'bar'); redis.call('set', 'bar', 'foo')", "0"],
        &["EVAL", "#!lua flags=allow-cross-slot-keys\nredis.call('set', 'foo', 'bar'); redis.call('set', 'bar', 'foo')", "1", "bar"],
    ];
    let mut replies: Vec<Vec<Vec<u8>>> = Vec::new();
    for n in [&redis, &ours] {
        n.cmd("CLUSTER ADDSLOTSRANGE 0 16383");
        wait_ok(&[n]);
        let mut r = n.raw();
        replies.push(
            scripts
                .iter()
                .map(|a| {
                    let a: Vec<&[u8]> = a.iter().map(|s| s.as_bytes()).collect();
                    r.cmd(&a)
                })
                .collect(),
        );
    }
    for (i, (w, g)) in replies[0].iter().zip(&replies[1]).enumerate() {
        assert_eq!(
            String::from_utf8_lossy(g),
            String::from_utf8_lossy(w),
            "script {i}: ferrokv, then redis-server"
        );
    }
    assert!(replies[1][1].starts_with(b"-ERR Script attempted to access keys that do not hash"));
}
