"""redis-py (sync client) scenario for tests/clients.rs: auth, TTLs, a
pipeline of 1,000 commands, WATCH/MULTI/EXEC, BLPOP, SCAN of 10,000
keys, redis.lock.Lock, health_check_interval (pool and pub/sub), pub/sub
across a server restart; with mode `resp3` all of it over RESP3
(protocol=3) plus client-side caching.

Usage: redis_py.py PORT PASSWORD [resp2|resp3]
"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Check, Skip, args, ensure, expect, restart_server, run, until  # noqa: E402

try:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry
    from redis.exceptions import (
        AuthenticationError,
        ConnectionError as RConnectionError,
        LockNotOwnedError,
        ResponseError,
        WatchError,
    )
except ImportError as e:
    print(f"redis-py missing: {e}")
    sys.exit(3)

PORT, PASSWORD, MODE = args()
PROTO = 3 if MODE == "resp3" else 2


def client(**kw):
    """A client as an application configures it."""
    kw.setdefault("password", PASSWORD)
    return redis.Redis(
        host="127.0.0.1", port=PORT, protocol=PROTO, decode_responses=True, **kw
    )


def s_auth():
    r = client()
    expect(r.ping(), True, "PING with the password")
    expect(client(username="default").ping(), True, "PING as user default")
    try:
        client(password=None, retry=Retry(NoBackoff(), 0)).ping()
        raise Check("a command without the password succeeded")
    except AuthenticationError as e:
        ensure("auth" in str(e).lower(), f"no-password error text: {e}")
    try:
        client(password="wrong-password", retry=Retry(NoBackoff(), 0)).ping()
        raise Check("a wrong password was accepted")
    except AuthenticationError as e:
        ensure("invalid username-password pair" in str(e), f"wrong-password error: {e}")
    if PROTO == 3:
        hello = r.execute_command("HELLO", "3")
        expect(hello.get("proto"), 3, "HELLO 3 proto field")
        expect(r.hgetall("no:such:hash"), {}, "HGETALL of a missing key")
        r.hset("h:resp3", mapping={"a": "1", "b": "2"})
        expect(r.hgetall("h:resp3"), {"a": "1", "b": "2"}, "HGETALL map")
        r.zadd("z:resp3", {"m": 1.5})
        expect(r.zscore("z:resp3", "m"), 1.5, "ZSCORE double")


def s_ttl():
    r = client()
    expect(r.set("t:ex", "v1", ex=100), True, "SET EX")
    ttl = r.ttl("t:ex")
    ensure(98 <= ttl <= 100, f"TTL after SET EX 100 is {ttl}")
    expect(r.set("t:px", "v2", px=5000), True, "SET PX")
    pttl = r.pttl("t:px")
    ensure(4000 < pttl <= 5000, f"PTTL after SET PX 5000 is {pttl}")
    expect(r.get("t:ex"), "v1", "GET t:ex")
    expect(r.get("t:px"), "v2", "GET t:px")
    expect(r.set("t:short", "x", px=100), True, "SET PX 100")
    time.sleep(0.25)
    expect(r.get("t:short"), None, "GET after the TTL passed")
    expect(r.ttl("t:short"), -2, "TTL of an expired key")
    r.set("t:plain", "y")
    expect(r.ttl("t:plain"), -1, "TTL without expiry")
    expect(r.pttl("t:plain"), -1, "PTTL without expiry")
    expect(r.expire("t:plain", 50), True, "EXPIRE")
    ensure(48 <= r.ttl("t:plain") <= 50, "TTL after EXPIRE 50")
    expect(r.persist("t:plain"), True, "PERSIST")
    expect(r.ttl("t:plain"), -1, "TTL after PERSIST")
    expect(r.set("t:ex", "v3", keepttl=True), True, "SET KEEPTTL")
    ensure(98 <= r.ttl("t:ex") <= 100, "TTL kept by KEEPTTL")
    expect(r.set("t:ex", "v4", get=True), "v3", "SET GET")
    expect(r.ttl("t:ex"), -1, "SET without KEEPTTL clears the TTL")
    expect(r.setex("t:setex", 30, "z"), True, "SETEX")
    ensure(28 <= r.ttl("t:setex") <= 30, "TTL after SETEX")
    expect(r.getex("t:setex", px=1500), "z", "GETEX PX")
    ensure(1000 < r.pttl("t:setex") <= 1500, "PTTL after GETEX PX")


def s_pipeline():
    r = client()
    p = r.pipeline(transaction=False)
    for i in range(250):
        p.set(f"pl:{i}", i)
    for i in range(250):
        p.incrby(f"pl:{i}", i)
    for i in range(250):
        p.get(f"pl:{i}")
    for i in range(250):
        p.rpush("pl:list", i)
    res = p.execute()
    expect(len(res), 1000, "number of replies")
    expect(res[:250], [True] * 250, "SET replies")
    expect(res[250:500], [2 * i for i in range(250)], "INCRBY replies")
    expect(res[500:750], [str(2 * i) for i in range(250)], "GET replies")
    expect(res[750:], list(range(1, 251)), "RPUSH replies")
    expect(r.lrange("pl:list", 0, -1), [str(i) for i in range(250)], "list content")
    p = r.pipeline(transaction=False)
    p.set("pl:s", "x")
    p.incr("pl:s")
    p.get("pl:s")
    res = p.execute(raise_on_error=False)
    ensure(isinstance(res[1], ResponseError), f"INCR of a non-integer gave {res[1]!r}")
    expect(str(res[1]), "value is not an integer or out of range", "INCR error text")
    expect([res[0], res[2]], [True, "x"], "replies around the error")


def s_transaction():
    r, other = client(), client()
    r.set("tx:n", 10)
    with r.pipeline() as p:
        p.watch("tx:n")
        v = int(p.get("tx:n"))
        p.multi()
        p.set("tx:n", v + 1)
        p.incr("tx:count")
        expect(p.execute(), [True, 1], "EXEC replies")
    expect(r.get("tx:n"), "11", "value after EXEC")
    with r.pipeline() as p:
        p.watch("tx:n")
        v = int(p.get("tx:n"))
        other.set("tx:n", 100)
        p.multi()
        p.set("tx:n", v + 1)
        try:
            p.execute()
            raise Check("EXEC ran after a concurrent write to the WATCHed key")
        except WatchError:
            pass
    expect(r.get("tx:n"), "100", "value after the aborted EXEC")

    def double(pipe):
        v = int(pipe.get("tx:n"))
        pipe.multi()
        pipe.set("tx:n", v * 2)

    r.transaction(double, "tx:n")
    expect(r.get("tx:n"), "200", "value after Redis.transaction")
    p = r.pipeline()
    p.set("tx:s", "a")
    p.incr("tx:s")
    p.get("tx:s")
    res = p.execute(raise_on_error=False)
    ensure(isinstance(res[1], ResponseError), f"runtime error inside EXEC gave {res[1]!r}")
    expect([res[0], res[2]], [True, "a"], "other replies of the EXEC")


def s_blpop():
    r = client()
    t0 = time.monotonic()
    expect(r.blpop(["bl:empty"], timeout=0.3), None, "BLPOP on an empty list")
    el = time.monotonic() - t0
    ensure(0.25 <= el < 2.0, f"BLPOP timeout 0.3 returned after {el:.3f}s")

    def push():
        time.sleep(0.2)
        client().rpush("bl:q", "job1")

    th = threading.Thread(target=push)
    th.start()
    t0 = time.monotonic()
    res = r.blpop(["bl:empty", "bl:q"], timeout=5)
    el = time.monotonic() - t0
    th.join()
    expect(list(res) if res else res, ["bl:q", "job1"], "BLPOP served by a push")
    ensure(0.1 <= el < 3.0, f"BLPOP woke after {el:.3f}s")
    expect(r.llen("bl:q"), 0, "list emptied")


def s_scan():
    r = client()
    p = r.pipeline(transaction=False)
    for i in range(10000):
        p.set(f"sc:{i}", i)
    p.sadd("sc-other", "x")
    p.execute()
    want = {f"sc:{i}" for i in range(10000)}
    seen = set(r.scan_iter(match="sc:*", count=200))
    expect(len(seen), 10000, "keys seen by scan_iter")
    expect(seen, want, "scan_iter key set")
    cursor, typed, calls = 0, set(), 0
    while True:
        cursor, keys = r.scan(cursor, count=1000, _type="set")
        typed.update(keys)
        calls += 1
        if cursor == 0:
            break
    expect(typed, {"sc-other"}, "SCAN TYPE set")


def s_lock():
    r = client()
    l1 = r.lock("lk:res", timeout=5, blocking_timeout=0.5)
    expect(l1.acquire(), True, "first acquire")
    ensure(l1.owned() and l1.locked(), "lock owned and locked")
    l2 = r.lock("lk:res", timeout=5, blocking_timeout=0.3)
    t0 = time.monotonic()
    expect(l2.acquire(), False, "second acquire while held")
    ensure(time.monotonic() - t0 >= 0.15, "second acquire waited for blocking_timeout")
    expect(l1.extend(10), True, "extend")
    ensure(14000 < r.pttl("lk:res") <= 15000, f"PTTL after extend is {r.pttl('lk:res')}")
    expect(l1.reacquire(), True, "reacquire")
    ensure(4000 < r.pttl("lk:res") <= 5000, "PTTL after reacquire")
    l1.release()
    expect(r.exists("lk:res"), 0, "key after release")
    expect(l2.acquire(), True, "acquire after release")
    thief = r.lock("lk:res")
    thief.local.token = b"not-the-owner"
    try:
        thief.release()
        raise Check("a lock held by another token was released")
    except LockNotOwnedError:
        pass
    expect(r.exists("lk:res"), 1, "lock survives a foreign release")
    l2.release()
    short = r.lock("lk:short", timeout=0.2)
    expect(short.acquire(), True, "acquire with timeout 0.2")
    time.sleep(0.35)
    expect(r.lock("lk:short", blocking=False).acquire(), True, "acquire after expiry")
    with r.lock("lk:ctx", timeout=2):
        expect(r.exists("lk:ctx"), 1, "held inside with")
    expect(r.exists("lk:ctx"), 0, "released by with")


def s_cache():
    from redis.cache import CacheConfig

    try:
        r = client(cache_config=CacheConfig())
        r.ping()
    except RConnectionError as e:
        if "supported by Redis 7.4 or later" in str(e):
            raise Skip(f"redis-py {redis.__version__} caches only for servers reporting 7.4+") from e
        raise
    other = client()
    other.set("cc:k", "v1")
    expect(r.get("cc:k"), "v1", "first GET")
    expect(r.get("cc:k"), "v1", "second GET")
    ensure(r.get_cache().size() >= 1, "GET reply kept in the client cache")
    other.set("cc:k", "v2")
    until(3, lambda: r.get("cc:k") == "v2", "invalidation of the cached GET")
    other.delete("cc:k")
    until(3, lambda: r.get("cc:k") is None, "invalidation after DEL")


def s_health_check():
    # health_check_interval: an idle pooled connection is PINGed before
    # use; in pub/sub mode the PING carries an argument and its reply must
    # come back as the ["pong", arg] message the client swallows.
    r = client(health_check_interval=1)
    expect(r.set("hc:k", "v"), True, "SET")
    time.sleep(1.2)
    expect(r.get("hc:k"), "v", "GET on a connection idle past the interval")
    p = r.pubsub()
    p.subscribe("hc:chan")
    m = p.get_message(timeout=2)
    expect((m or {}).get("type"), "subscribe", "subscribe confirmation")
    time.sleep(1.2)
    expect(r.publish("hc:chan", "after-idle"), 1, "PUBLISH receivers")
    got = []
    until(3, lambda: got.append(p.get_message(timeout=0.1)) or any(x and x["type"] == "message" for x in got), "message")
    msgs = [(x["type"], x["data"]) for x in got if x]
    expect(msgs, [("message", "after-idle")], "messages after an idle pub/sub connection")
    p.close()


def s_pubsub_restart():
    r = client()
    p = r.pubsub()
    p.subscribe("news")
    p.psubscribe("ev:*")
    kinds = []
    while len(kinds) < 2:
        m = p.get_message(timeout=2)
        ensure(m is not None, f"subscribe confirmations: {kinds}")
        kinds.append((m["type"], m["channel"]))
    expect(sorted(kinds), [("psubscribe", "ev:*"), ("subscribe", "news")], "confirmations")
    expect(r.publish("news", "hello"), 1, "PUBLISH receivers")
    m = until(3, lambda: p.get_message(timeout=0.1), "message before restart")
    expect((m["type"], m["channel"], m["data"]), ("message", "news", "hello"), "message")
    expect(r.publish("ev:1", "x"), 1, "PUBLISH to the pattern")
    m = until(3, lambda: p.get_message(timeout=0.1), "pmessage before restart")
    expect((m["type"], m["pattern"], m["channel"], m["data"]), ("pmessage", "ev:*", "ev:1", "x"), "pmessage")

    restart_server()

    def resubscribed():
        try:
            p.get_message(timeout=0.05)
        except (RConnectionError, OSError):
            time.sleep(0.05)
        return r.publish("news", "after") >= 1 and r.publish("ev:2", "y") >= 1

    until(10, resubscribed, "resubscription after the restart")
    got = []

    def collect():
        m = p.get_message(timeout=0.1)
        if m and m["type"] in ("message", "pmessage"):
            got.append((m["channel"], m["data"]))
        return ("news", "after") in got and ("ev:2", "y") in got

    until(5, collect, f"messages after the restart (got {got})")
    p.close()


run("auth", s_auth)
run("ttl", s_ttl)
run("pipeline", s_pipeline)
run("transaction", s_transaction)
run("blpop", s_blpop)
run("scan", s_scan)
if MODE != "resp3":
    run("lock", s_lock)
else:
    run("client_cache", s_cache)
run("health_check", s_health_check)
run("pubsub_restart", s_pubsub_restart)
