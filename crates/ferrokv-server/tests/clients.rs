//! Client-compatibility suite (issue 22): the scenario an application
//! runs — connect with a password, SET/GET with TTLs, a pipeline of 1,000
//! commands, WATCH/MULTI/EXEC (one aborted by a concurrent write), BLPOP
//! with a timeout and served by another connection's push, SCAN of 10,000
//! keys, pub/sub across a server restart on the same port — run by each
//! mainstream client library against redis-server 7.0 and then ferrokv in
//! the same test, every result checked by the script.
//!
//! The scripts live in `tests/clients/` and speak the line protocol of
//! `tests/clients/harness.py`: `ok NAME`, `FAIL NAME: why`, `skip NAME:
//! why`, and `RESTART` (the test restarts the server and answers with a
//! line on the script's stdin). A scenario that fails on ferrokv but
//! passes on Redis is a ferrokv bug; one that fails on Redis is a broken
//! test. Both fail the test.

mod common;

use common::{which, Server};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The `requirepass` of every server of the suite.
const PASSWORD: &str = "clients-s3cret";

/// How long one script may run against one server.
const SCRIPT_LIMIT: Duration = Duration::from_secs(60);

/// The scenarios every client runs.
const CORE: &[&str] = &[
    "auth",
    "ttl",
    "pipeline",
    "transaction",
    "blpop",
    "scan",
    "pubsub_restart",
];

fn require() -> bool {
    std::env::var_os("FERROKV_REQUIRE_REDIS").is_some()
}

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// Results of one script run: scenario name to "ok", "skip: why" or the
/// failure text. None when the script reported a missing package.
fn run_script(
    server: &mut Server,
    program: &str,
    script: &str,
    mode: &[&str],
) -> Option<BTreeMap<String, String>> {
    let mut child = Command::new(program)
        .arg(clients_dir().join(script))
        .arg(server.port.to_string())
        .arg(PASSWORD)
        .args(mode)
        .current_dir(clients_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {program} {script}: {e}"));
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + SCRIPT_LIMIT;
    let mut results = BTreeMap::new();
    let mut transcript = String::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                transcript.push_str(&line);
                transcript.push('\n');
                if line == "RESTART" {
                    server.restart();
                    let _ = stdin.write_all(b"\n").and_then(|_| stdin.flush());
                } else if let Some(name) = line.strip_prefix("ok ") {
                    results.insert(name.to_string(), "ok".to_string());
                } else if let Some(rest) = line.strip_prefix("FAIL ") {
                    let (name, why) = rest.split_once(": ").unwrap_or((rest, ""));
                    results.insert(name.to_string(), why.to_string());
                } else if let Some(rest) = line.strip_prefix("skip ") {
                    let (name, why) = rest.split_once(": ").unwrap_or((rest, ""));
                    results.insert(name.to_string(), format!("skip: {why}"));
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{script} {mode:?} did not finish in {SCRIPT_LIMIT:?}; output:\n{transcript}"
                );
            }
        }
    }
    let status = child.wait().expect("wait for the script");
    let errors = err_reader.join().unwrap_or_default();
    if status.code() == Some(3) {
        assert!(!require(), "{script}: a client package is missing (FERROKV_REQUIRE_REDIS is set):\n{transcript}{errors}");
        eprintln!("{script}: client package missing, skipped:\n{transcript}");
        return None;
    }
    assert!(
        status.success(),
        "{script} {mode:?} exited with {status}:\n{transcript}{errors}"
    );
    if results
        .values()
        .any(|v| v != "ok" && !v.starts_with("skip"))
    {
        eprintln!("{script} {mode:?} stderr:\n{errors}");
    }
    Some(results)
}

/// Runs `script` with `program` against redis-server 7.0 and then ferrokv
/// (both with `requirepass`), prints both result columns and fails unless
/// every scenario of `expected` passed on both (a scenario the client
/// itself cannot run may be skipped, on both alike).
fn compare(client: &str, program: Option<String>, script: &str, mode: &[&str], expected: &[&str]) {
    let Some(program) = program else {
        return;
    };
    on_both(client, expected, |server| {
        run_script(server, &program, script, mode)
    });
}

/// Runs `scenario` against redis-server 7.0 and then ferrokv (both with
/// `requirepass`) and checks the results with [`check_results`]; stops
/// quietly when `scenario` reports its client missing (None) on Redis.
fn on_both(
    client: &str,
    expected: &[&str],
    mut scenario: impl FnMut(&mut Server) -> Option<BTreeMap<String, String>>,
) {
    let auth = ["--requirepass", PASSWORD];
    let Some(mut redis) = Server::start_redis(&auth) else {
        assert!(
            !require(),
            "redis-server not installed but FERROKV_REQUIRE_REDIS is set"
        );
        eprintln!("redis-server not installed: {client} skipped");
        return;
    };
    let Some(on_redis) = scenario(&mut redis) else {
        return;
    };
    drop(redis);
    let mut ours = Server::start(&auth);
    let on_ours = scenario(&mut ours).expect("client vanished between the runs");
    check_results(client, expected, &on_redis, &on_ours);
}

/// Prints the table of one client and panics on any difference from
/// "ok on both".
fn check_results(
    client: &str,
    expected: &[&str],
    on_redis: &BTreeMap<String, String>,
    on_ours: &BTreeMap<String, String>,
) {
    let mut problems = Vec::new();
    eprintln!("{client}: scenario | redis-server 7.0 | ferrokv");
    for name in expected {
        let r = on_redis.get(*name).map_or("missing", String::as_str);
        let o = on_ours.get(*name).map_or("missing", String::as_str);
        eprintln!("{client}: {name} | {r} | {o}");
        let skipped_alike = r.starts_with("skip") && o.starts_with("skip");
        if r != "ok" && !skipped_alike {
            problems.push(format!(
                "{name} on redis-server (test or client problem): {r}"
            ));
        }
        if o != "ok" && !skipped_alike {
            problems.push(format!("{name} on ferrokv: {o}"));
        }
    }
    assert!(
        problems.is_empty(),
        "{client}:\n  {}",
        problems.join("\n  ")
    );
}

/// python3 when it is installed (required under FERROKV_REQUIRE_REDIS).
fn python() -> Option<String> {
    let py = which("python3");
    assert!(
        py.is_some() || !require(),
        "python3 missing but FERROKV_REQUIRE_REDIS is set"
    );
    py
}

/// node when it and `package` (tests/node/node_modules, installed by
/// .ci/run) are there; required under FERROKV_REQUIRE_REDIS.
fn node_with(package: &str) -> Option<String> {
    let installed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/node/node_modules")
        .join(package)
        .is_dir();
    match which("node") {
        Some(n) if installed => Some(n),
        _ => {
            assert!(!require(), "node with {package} (npm install in tests/node) is required when FERROKV_REQUIRE_REDIS is set");
            eprintln!("node or {package} not installed: skipped");
            None
        }
    }
}

fn with(extra: &[&'static str]) -> Vec<&'static str> {
    CORE.iter().chain(extra).copied().collect()
}

#[test]
fn redis_py_sync() {
    compare(
        "redis-py",
        python(),
        "redis_py.py",
        &["resp2"],
        &with(&["lock", "health_check"]),
    );
}

#[test]
fn redis_py_resp3() {
    compare(
        "redis-py protocol=3",
        python(),
        "redis_py.py",
        &["resp3"],
        &with(&["client_cache", "health_check"]),
    );
}

#[test]
fn redis_py_asyncio() {
    compare(
        "redis-py asyncio",
        python(),
        "redis_py_async.py",
        &[],
        &with(&["lock"]),
    );
}

#[test]
fn ioredis() {
    compare(
        "ioredis",
        node_with("ioredis"),
        "ioredis.js",
        &[],
        &with(&["lua"]),
    );
}

#[test]
fn node_redis_resp2() {
    compare(
        "node-redis RESP2",
        node_with("redis"),
        "node_redis.js",
        &["resp2"],
        CORE,
    );
}

#[test]
fn node_redis_resp3() {
    compare(
        "node-redis RESP3",
        node_with("redis"),
        "node_redis.js",
        &["resp3"],
        &with(&["client_cache"]),
    );
}

#[test]
fn valkey_glide() {
    compare(
        "valkey-glide (Python)",
        python(),
        "valkey_glide.py",
        &[],
        &with(&["client_cache"]),
    );
}

// The `redis` crate (tokio, multiplexed connections, pipelines, async
// pub/sub), driven from this process: it restarts the server itself.

/// Err(`what: expected .., got ..`) unless `got == want`.
fn eq<T: PartialEq + std::fmt::Debug>(got: T, want: T, what: &str) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: expected {want:?}, got {got:?}"))
    }
}

/// Err(`what`) unless `cond`.
fn ok_if(cond: bool, what: &str) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(what.to_string())
    }
}

/// A redis-crate error as a scenario failure.
fn e(err: redis::RedisError) -> String {
    format!("redis error: {err}")
}

fn crate_client(port: u16, password: Option<&str>, resp3: bool) -> redis::Client {
    let auth = password.map_or(String::new(), |p| format!(":{p}@"));
    let proto = if resp3 { "?protocol=resp3" } else { "" };
    redis::Client::open(format!("redis://{auth}127.0.0.1:{port}/{proto}")).expect("url")
}

async fn rs_auth(port: u16, resp3: bool) -> Result<(), String> {
    let mut c = crate_client(port, Some(PASSWORD), resp3)
        .get_multiplexed_async_connection()
        .await
        .map_err(e)?;
    let pong: String = redis::cmd("PING").query_async(&mut c).await.map_err(e)?;
    eq(pong.as_str(), "PONG", "PING with the password")?;
    let wrong = crate_client(port, Some("wrong-password"), resp3)
        .get_multiplexed_async_connection()
        .await;
    // RESP2 connects with AUTH (the crate reports AuthenticationFailed),
    // RESP3 with HELLO 3 AUTH (the server's WRONGPASS code comes through).
    let refused = wrong
        .as_ref()
        .err()
        .map(|x| (x.kind(), x.code().map(str::to_string)));
    ok_if(
        refused.as_ref().is_some_and(|(k, c)| {
            *k == redis::ErrorKind::AuthenticationFailed || c.as_deref() == Some("WRONGPASS")
        }),
        &format!("wrong password: {refused:?}"),
    )?;
    let none = crate_client(port, None, resp3)
        .get_multiplexed_async_connection()
        .await;
    let err = match none {
        Ok(mut c) => redis::cmd("GET")
            .arg("x")
            .query_async::<Option<String>>(&mut c)
            .await
            .err(),
        Err(x) => Some(x),
    };
    let err = err.map(|x| x.to_string()).unwrap_or_default();
    ok_if(err.contains("NOAUTH"), &format!("no password: {err:?}"))
}

async fn rs_ttl(c: &mut redis::aio::MultiplexedConnection) -> Result<(), String> {
    use redis::AsyncCommands;
    let _: () = c.set_ex("t:ex", "v1", 100).await.map_err(e)?;
    let ttl: i64 = c.ttl("t:ex").await.map_err(e)?;
    ok_if(
        (98..=100).contains(&ttl),
        &format!("TTL after SET EX 100 is {ttl}"),
    )?;
    let _: () = redis::cmd("SET")
        .arg("t:px")
        .arg("v2")
        .arg("PX")
        .arg(5000)
        .query_async(c)
        .await
        .map_err(e)?;
    let pttl: i64 = c.pttl("t:px").await.map_err(e)?;
    ok_if(
        pttl > 4000 && pttl <= 5000,
        &format!("PTTL after SET PX 5000 is {pttl}"),
    )?;
    eq(
        c.get::<_, Option<String>>("t:px").await.map_err(e)?,
        Some("v2".into()),
        "GET",
    )?;
    let _: () = c.pset_ex("t:short", "x", 100).await.map_err(e)?;
    tokio::time::sleep(Duration::from_millis(250)).await;
    eq(
        c.get::<_, Option<String>>("t:short").await.map_err(e)?,
        None,
        "GET after the TTL passed",
    )?;
    eq(
        c.ttl::<_, i64>("t:short").await.map_err(e)?,
        -2,
        "TTL of an expired key",
    )?;
    let _: () = c.set("t:plain", "y").await.map_err(e)?;
    eq(
        c.pttl::<_, i64>("t:plain").await.map_err(e)?,
        -1,
        "PTTL without expiry",
    )
}

async fn rs_pipeline(c: &mut redis::aio::MultiplexedConnection) -> Result<(), String> {
    let mut p = redis::pipe();
    for i in 0..500 {
        p.cmd("SET").arg(format!("pl:{i}")).arg(i);
    }
    for i in 0..500 {
        p.cmd("INCRBY").arg(format!("pl:{i}")).arg(i);
    }
    let res: Vec<redis::Value> = p.query_async(c).await.map_err(e)?;
    eq(res.len(), 1000, "number of replies")?;
    let okv = redis::Value::Okay;
    ok_if(res[..500].iter().all(|v| *v == okv), "SET replies are OK")?;
    let incrs: Vec<redis::Value> = (0..500).map(|i| redis::Value::Int(2 * i)).collect();
    eq(&res[500..], &incrs[..], "INCRBY replies")?;
    let (a, b): (String, i64) = redis::pipe()
        .cmd("GET")
        .arg("pl:7")
        .cmd("STRLEN")
        .arg("pl:499")
        .query_async(c)
        .await
        .map_err(e)?;
    eq((a.as_str(), b), ("14", 3), "values after the pipeline")
}

async fn rs_transaction(port: u16, resp3: bool) -> Result<(), String> {
    let client = crate_client(port, Some(PASSWORD), resp3);
    let mut c = client.get_multiplexed_async_connection().await.map_err(e)?;
    let mut other = client.get_multiplexed_async_connection().await.map_err(e)?;
    let _: () = redis::cmd("SET")
        .arg("tx:n")
        .arg(10)
        .query_async(&mut c)
        .await
        .map_err(e)?;
    let _: () = redis::cmd("WATCH")
        .arg("tx:n")
        .query_async(&mut c)
        .await
        .map_err(e)?;
    let v: i64 = redis::cmd("GET")
        .arg("tx:n")
        .query_async(&mut c)
        .await
        .map_err(e)?;
    let res: Option<(String, i64)> = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg("tx:n")
        .arg(v + 1)
        .cmd("INCR")
        .arg("tx:count")
        .query_async(&mut c)
        .await
        .map_err(e)?;
    eq(res, Some(("OK".into(), 1)), "EXEC replies")?;
    let _: () = redis::cmd("WATCH")
        .arg("tx:n")
        .query_async(&mut c)
        .await
        .map_err(e)?;
    let _: () = redis::cmd("SET")
        .arg("tx:n")
        .arg(100)
        .query_async(&mut other)
        .await
        .map_err(e)?;
    let res: Option<(String,)> = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg("tx:n")
        .arg(1)
        .query_async(&mut c)
        .await
        .map_err(e)?;
    eq(
        res,
        None,
        "EXEC after a concurrent write to the WATCHed key",
    )?;
    let v: String = redis::cmd("GET")
        .arg("tx:n")
        .query_async(&mut c)
        .await
        .map_err(e)?;
    eq(v.as_str(), "100", "value after the aborted EXEC")
}

async fn rs_blpop(port: u16, resp3: bool) -> Result<(), String> {
    let client = crate_client(port, Some(PASSWORD), resp3);
    let mut c = client.get_multiplexed_async_connection().await.map_err(e)?;
    let mut pusher = client.get_multiplexed_async_connection().await.map_err(e)?;
    let t0 = Instant::now();
    let r: Option<(String, String)> = redis::cmd("BLPOP")
        .arg("bl:empty")
        .arg(0.3)
        .query_async(&mut c)
        .await
        .map_err(e)?;
    let el = t0.elapsed();
    eq(r, None, "BLPOP on an empty list")?;
    ok_if(
        el >= Duration::from_millis(250) && el < Duration::from_secs(2),
        &format!("BLPOP timeout 0.3 returned after {el:?}"),
    )?;
    let push = async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        redis::cmd("RPUSH")
            .arg("bl:q")
            .arg("job1")
            .query_async::<i64>(&mut pusher)
            .await
    };
    let mut blpop = redis::cmd("BLPOP");
    blpop.arg("bl:empty").arg("bl:q").arg(5);
    let pop = blpop.query_async::<Option<(String, String)>>(&mut c);
    let (popped, pushed) = tokio::join!(pop, push);
    eq(
        popped.map_err(e)?,
        Some(("bl:q".into(), "job1".into())),
        "BLPOP served by a push",
    )?;
    eq(pushed.map_err(e)?, 1, "RPUSH reply")
}

async fn rs_scan(c: &mut redis::aio::MultiplexedConnection) -> Result<(), String> {
    let mut p = redis::pipe();
    for i in 0..10_000 {
        p.cmd("SET").arg(format!("sc:{i}")).arg(i).ignore();
    }
    let _: () = p.query_async(c).await.map_err(e)?;
    let mut seen = std::collections::HashSet::new();
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg("sc:*")
            .arg("COUNT")
            .arg(250)
            .query_async(c)
            .await
            .map_err(e)?;
        seen.extend(keys);
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    eq(seen.len(), 10_000, "keys seen by SCAN")?;
    ok_if(
        (0..10_000).all(|i| seen.contains(&format!("sc:{i}"))),
        "every sc:N key seen",
    )
}

/// Receives the next pub/sub message as (pattern, channel, payload).
async fn rs_next(ps: &mut redis::aio::PubSub) -> Result<(Option<String>, String, String), String> {
    use futures_util::StreamExt;
    let mut stream = ps.on_message();
    let m = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .map_err(|_| "no message within 5 s".to_string())?
        .ok_or("pub/sub stream ended")?;
    let payload: String = m.get_payload().map_err(e)?;
    let pattern: Option<String> = m.get_pattern().ok();
    Ok((pattern, m.get_channel_name().to_string(), payload))
}

/// Subscribes to `news` and `ev:*` on a new pub/sub connection.
async fn rs_subscribe(client: &redis::Client) -> Result<redis::aio::PubSub, String> {
    let mut ps = client.get_async_pubsub().await.map_err(e)?;
    ps.subscribe("news").await.map_err(e)?;
    ps.psubscribe("ev:*").await.map_err(e)?;
    Ok(ps)
}

/// Pub/sub across a restart of `server`: the application sees its
/// subscription's stream end, reconnects (retrying until the server is
/// back), resubscribes, and gets a message published after the restart.
fn rs_pubsub_restart(
    rt: &tokio::runtime::Runtime,
    server: &mut Server,
    resp3: bool,
) -> Result<(), String> {
    let client = crate_client(server.port, Some(PASSWORD), resp3);
    let mut ps = rt.block_on(async {
        let mut ps = rs_subscribe(&client).await?;
        let mut c = client.get_multiplexed_async_connection().await.map_err(e)?;
        rs_roundtrip(&mut c, &mut ps, "news", "hello", None, "before restart").await?;
        rs_roundtrip(&mut c, &mut ps, "ev:1", "x", Some("ev:*"), "before restart").await?;
        Ok::<_, String>(ps)
    })?;
    server.restart();
    rt.block_on(async {
        use futures_util::StreamExt;
        let ended = tokio::time::timeout(Duration::from_secs(5), ps.on_message().next()).await;
        ok_if(
            matches!(ended, Ok(None)),
            "the subscription's stream ends when the server goes away",
        )?;
        drop(ps);
        let deadline = Instant::now() + Duration::from_secs(10);
        let (mut ps, mut c) = loop {
            ok_if(Instant::now() < deadline, "reconnection after the restart")?;
            if let (Ok(ps), Ok(c)) = (
                rs_subscribe(&client).await,
                client.get_multiplexed_async_connection().await,
            ) {
                break (ps, c);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        rs_roundtrip(&mut c, &mut ps, "news", "after", None, "after restart").await?;
        rs_roundtrip(&mut c, &mut ps, "ev:2", "y", Some("ev:*"), "after restart").await
    })
}

/// Publishes `payload` on `channel` and checks that it reached one
/// subscriber, `ps`, which receives it (through `pattern` when given).
async fn rs_roundtrip(
    c: &mut redis::aio::MultiplexedConnection,
    ps: &mut redis::aio::PubSub,
    channel: &str,
    payload: &str,
    pattern: Option<&str>,
    when: &str,
) -> Result<(), String> {
    let n: i64 = redis::cmd("PUBLISH")
        .arg(channel)
        .arg(payload)
        .query_async(c)
        .await
        .map_err(e)?;
    eq(n, 1, &format!("PUBLISH {channel} receivers {when}"))?;
    let want = (
        pattern.map(str::to_string),
        channel.to_string(),
        payload.to_string(),
    );
    eq(
        rs_next(ps).await?,
        want,
        &format!("message on {channel} {when}"),
    )
}

/// The scenario with the `redis` crate against `server`.
fn redis_crate_scenario(server: &mut Server, resp3: bool) -> BTreeMap<String, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let port = server.port;
    let mut out = BTreeMap::new();
    let mut put = |name: &str, r: Result<(), String>| {
        out.insert(
            name.to_string(),
            r.err().unwrap_or_else(|| "ok".to_string()),
        );
    };
    put("auth", rt.block_on(rs_auth(port, resp3)));
    let client = crate_client(port, Some(PASSWORD), resp3);
    let mut c = rt
        .block_on(client.get_multiplexed_async_connection())
        .expect("connect");
    put("ttl", rt.block_on(rs_ttl(&mut c)));
    put("pipeline", rt.block_on(rs_pipeline(&mut c)));
    put("transaction", rt.block_on(rs_transaction(port, resp3)));
    put("blpop", rt.block_on(rs_blpop(port, resp3)));
    put("scan", rt.block_on(rs_scan(&mut c)));
    put("pubsub_restart", rs_pubsub_restart(&rt, server, resp3));
    out
}

/// The `redis` crate scenario on both servers, over RESP2 or RESP3.
fn redis_crate(resp3: bool) {
    let name = if resp3 {
        "redis crate RESP3"
    } else {
        "redis crate"
    };
    on_both(name, CORE, |server| {
        Some(redis_crate_scenario(server, resp3))
    });
}

#[test]
fn redis_crate_tokio() {
    redis_crate(false);
}

#[test]
fn redis_crate_tokio_resp3() {
    redis_crate(true);
}
