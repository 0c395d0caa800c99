"""redis-py asyncio client (redis.asyncio) scenario for tests/clients.rs:
auth, TTLs, a pipeline of 1,000 commands, WATCH/MULTI/EXEC, BLPOP with a
concurrent push, SCAN of 10,000 keys, redis.asyncio.lock.Lock, pub/sub
across a server restart.

Usage: redis_py_async.py PORT PASSWORD
"""

import asyncio
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Check, args, arun_all, ensure, expect, restart_server  # noqa: E402

try:
    import redis.asyncio as aredis
    from redis.backoff import NoBackoff
    from redis.exceptions import (
        AuthenticationError,
        ConnectionError as RConnectionError,
        ResponseError,
        WatchError,
    )
    from redis.asyncio.retry import Retry
except ImportError as e:
    print(f"redis-py missing: {e}")
    sys.exit(3)

PORT, PASSWORD, _ = args()


def client(**kw):
    """An asyncio client as an application configures it."""
    kw.setdefault("password", PASSWORD)
    return aredis.Redis(host="127.0.0.1", port=PORT, decode_responses=True, **kw)


async def s_auth():
    r = client()
    expect(await r.ping(), True, "PING with the password")
    for pw, text in ((None, "auth"), ("wrong-password", "invalid username-password pair")):
        bad = client(password=pw, retry=Retry(NoBackoff(), 0))
        try:
            await bad.ping()
            raise Check(f"PING with password {pw!r} succeeded")
        except AuthenticationError as e:
            ensure(text in str(e).lower(), f"error text for password {pw!r}: {e}")
        await bad.aclose()
    await r.aclose()


async def s_ttl():
    r = client()
    expect(await r.set("t:ex", "v1", ex=100), True, "SET EX")
    ttl = await r.ttl("t:ex")
    ensure(98 <= ttl <= 100, f"TTL after SET EX 100 is {ttl}")
    expect(await r.set("t:px", "v2", px=5000), True, "SET PX")
    pttl = await r.pttl("t:px")
    ensure(4000 < pttl <= 5000, f"PTTL after SET PX 5000 is {pttl}")
    expect(await r.get("t:px"), "v2", "GET")
    await r.set("t:short", "x", px=100)
    await asyncio.sleep(0.25)
    expect(await r.get("t:short"), None, "GET after the TTL passed")
    expect(await r.pttl("t:short"), -2, "PTTL of an expired key")
    await r.set("t:plain", "y")
    expect(await r.ttl("t:plain"), -1, "TTL without expiry")
    await r.aclose()


async def s_pipeline():
    r = client()
    async with r.pipeline(transaction=False) as p:
        for i in range(500):
            p.set(f"pl:{i}", f"v{i}")
        for i in range(500):
            p.get(f"pl:{i}")
        res = await p.execute()
    expect(len(res), 1000, "number of replies")
    expect(res[:500], [True] * 500, "SET replies")
    expect(res[500:], [f"v{i}" for i in range(500)], "GET replies")
    async with r.pipeline(transaction=False) as p:
        p.lpush("pl:l", "a")
        p.incr("pl:l")
        res = await p.execute(raise_on_error=False)
    ensure(isinstance(res[1], ResponseError) and "WRONGTYPE" in str(res[1]), f"INCR of a list gave {res[1]!r}")
    await r.aclose()


async def s_transaction():
    r, other = client(), client()
    await r.set("tx:n", 10)
    async with r.pipeline() as p:
        await p.watch("tx:n")
        v = int(await p.get("tx:n"))
        p.multi()
        p.set("tx:n", v + 1)
        p.get("tx:n")
        expect(await p.execute(), [True, "11"], "EXEC replies")
    async with r.pipeline() as p:
        await p.watch("tx:n")
        v = int(await p.get("tx:n"))
        await other.set("tx:n", 100)
        p.multi()
        p.set("tx:n", v + 1)
        try:
            await p.execute()
            raise Check("EXEC ran after a concurrent write to the WATCHed key")
        except WatchError:
            pass
    expect(await r.get("tx:n"), "100", "value after the aborted EXEC")
    await r.aclose()
    await other.aclose()


async def s_blpop():
    r, pusher = client(), client()
    t0 = time.monotonic()
    expect(await r.blpop(["bl:empty"], timeout=0.3), None, "BLPOP on an empty list")
    el = time.monotonic() - t0
    ensure(0.25 <= el < 2.0, f"BLPOP timeout 0.3 returned after {el:.3f}s")

    async def push():
        await asyncio.sleep(0.2)
        return await pusher.rpush("bl:q", "job1")

    res, pushed = await asyncio.gather(r.blpop(["bl:q"], timeout=5), push())
    expect(list(res), ["bl:q", "job1"], "BLPOP served by a push")
    expect(pushed, 1, "RPUSH reply")
    await r.aclose()
    await pusher.aclose()


async def s_scan():
    r = client()
    async with r.pipeline(transaction=False) as p:
        for i in range(10000):
            p.set(f"sc:{i}", i)
        await p.execute()
    seen = {k async for k in r.scan_iter(match="sc:*", count=300)}
    expect(seen, {f"sc:{i}" for i in range(10000)}, "scan_iter key set")
    await r.aclose()


async def s_lock():
    r = client()
    l1 = r.lock("lk:res", timeout=5)
    expect(await l1.acquire(), True, "first acquire")
    l2 = r.lock("lk:res", timeout=5, blocking_timeout=0.2)
    expect(await l2.acquire(), False, "second acquire while held")
    await l1.release()
    expect(await l2.acquire(), True, "acquire after release")
    await l2.release()
    expect(await r.exists("lk:res"), 0, "key after release")
    await r.aclose()


async def s_pubsub_restart():
    r = client()
    p = r.pubsub()
    await p.subscribe("news")
    m = await p.get_message(timeout=2)
    expect((m or {}).get("type"), "subscribe", "subscribe confirmation")
    expect(await r.publish("news", "hello"), 1, "PUBLISH receivers")
    m = await p.get_message(timeout=2)
    expect((m or {}).get("data"), "hello", "message before restart")
    await asyncio.get_running_loop().run_in_executor(None, restart_server)
    end = time.monotonic() + 10
    while True:
        ensure(time.monotonic() < end, "resubscription after the restart")
        try:
            await p.get_message(timeout=0.05)
        except (RConnectionError, OSError):
            await asyncio.sleep(0.05)
        try:
            if await r.publish("news", "after") >= 1:
                break
        except (RConnectionError, OSError):
            await asyncio.sleep(0.05)
    end = time.monotonic() + 5
    while True:
        ensure(time.monotonic() < end, "message after the restart")
        m = await p.get_message(timeout=0.1)
        if m and m["type"] == "message":
            expect((m["channel"], m["data"]), ("news", "after"), "message after restart")
            break
    await p.aclose()
    await r.aclose()


asyncio.run(arun_all(globals()))
