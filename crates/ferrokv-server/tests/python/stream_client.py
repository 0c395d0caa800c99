"""redis-py's stream API against ferrokv (argv[1]: port on 127.0.0.1):
xadd (maxlen / minid / approximate / nomkstream), xlen, xrange, xrevrange,
xread (blocking, woken by another client), xgroup_create (mkstream,
entries_read), xgroup_createconsumer / delconsumer / setid / destroy,
xreadgroup (noack, blocking), xack, xpending, xpending_range (idle,
consumer), xclaim (justid, idle, retrycount), xautoclaim (justid, deleted
entries), xtrim, xdel, xinfo_stream (full), xinfo_groups, xinfo_consumers,
pipelines, in RESP2 and RESP3.

Exit 3 when redis-py is not installed; non-zero on any failure; prints
"ok" at the end.
"""

import sys
import threading
import time

try:
    import redis
except ImportError as e:  # pragma: no cover - environment
    print(f"missing python package: {e}")
    sys.exit(3)

port = int(sys.argv[1])


def check(protocol):
    r = redis.Redis(host="127.0.0.1", port=port, decode_responses=True, protocol=protocol)
    r.flushall()
    k = "events"

    # XADD, XLEN, XRANGE, XREVRANGE.
    ids = [r.xadd(k, {"n": str(i), "kind": "even" if i % 2 == 0 else "odd"}) for i in range(10)]
    assert r.xlen(k) == 10
    assert [e[0] for e in r.xrange(k)] == ids
    assert r.xrange(k, min=ids[2], max=ids[4]) == [
        (ids[i], {"n": str(i), "kind": "even" if i % 2 == 0 else "odd"}) for i in (2, 3, 4)
    ], r.xrange(k, min=ids[2], max=ids[4])
    assert [e[0] for e in r.xrevrange(k, count=3)] == ids[::-1][:3]
    assert r.xadd(k, {"x": "1"}, id="99999999999999-5") == "99999999999999-5"
    try:
        r.xadd(k, {"x": "1"}, id="1-1")
        raise AssertionError("a smaller id was accepted")
    except redis.ResponseError as e:
        assert "equal or smaller than the target stream top item" in str(e), e
    assert r.xadd("nope", {"a": "b"}, nomkstream=True) is None
    assert r.exists("nope") == 0
    r.xadd("capped", {"a": "1"}, id="1-1")
    for i in range(2, 30):
        r.xadd("capped", {"a": str(i)}, id=f"{i}-1", maxlen=5, approximate=False)
    assert r.xlen("capped") == 5
    r.xadd("capped", {"a": "m"}, id="40-1", minid="28-0", approximate=False)
    assert [e[0] for e in r.xrange("capped")] == ["28-1", "29-1", "40-1"]
    assert r.xtrim("capped", maxlen=1, approximate=False) == 2
    assert r.xtrim("capped", minid="41", approximate=False) == 1 and r.xlen("capped") == 0
    assert r.xadd("approx", {"a": "1"}, maxlen=100, approximate=True)

    # XREAD, blocking on `$`, woken by another client.
    assert r.xread({k: ids[7]}, count=2) in (
        [[k, [(ids[8], {"n": "8", "kind": "even"}), (ids[9], {"n": "9", "kind": "odd"})]]],
        {k: [[(ids[8], {"n": "8", "kind": "even"}), (ids[9], {"n": "9", "kind": "odd"})]]},
    )
    got = {}

    def reader():
        c = redis.Redis(host="127.0.0.1", port=port, decode_responses=True, protocol=protocol)
        got["v"] = c.xread({"live": "$"}, block=5000)

    t = threading.Thread(target=reader)
    t.start()
    deadline = time.time() + 5
    while r.info("clients")["blocked_clients"] != 1:
        assert time.time() < deadline, "reader did not block"
        time.sleep(0.01)
    lid = r.xadd("live", {"hello": "world"})
    t.join()
    if protocol == 3:
        assert got["v"] == {"live": [[(lid, {"hello": "world"})]]}, got
    else:
        assert got["v"] == [["live", [(lid, {"hello": "world"})]]], got
    assert r.xread({"live": "$"}, block=50) in (None, [], {})

    # Consumer groups.
    assert r.xgroup_create(k, "workers", id="0")
    assert r.xgroup_create("fresh", "g", id="$", mkstream=True)
    assert r.xgroup_create(k, "late", id="$", entries_read=11)
    try:
        r.xgroup_create(k, "workers", id="0")
        raise AssertionError("BUSYGROUP expected")
    except redis.ResponseError as e:
        assert "BUSYGROUP" in str(e), e
    assert r.xgroup_createconsumer(k, "workers", "idle") == 1
    a = r.xreadgroup("workers", "alice", {k: ">"}, count=4)
    b = r.xreadgroup("workers", "bob", {k: ">"}, count=3)
    n = r.xreadgroup("workers", "nack", {k: ">"}, count=1, noack=True)

    def entry_ids(reply):
        if isinstance(reply, dict):
            return [e[0] for lst in reply.values() for e in lst[0]]
        return [e[0] for _, lst in reply for e in lst]

    a_ids, b_ids, n_ids = entry_ids(a), entry_ids(b), entry_ids(n)
    assert a_ids == ids[0:4] and b_ids == ids[4:7] and n_ids == ids[7:8], (a_ids, b_ids, n_ids)
    assert r.xack(k, "workers", a_ids[0], a_ids[1]) == 2
    assert r.xack(k, "workers", a_ids[0]) == 0
    p = r.xpending(k, "workers")
    assert p["pending"] == 5 and p["min"] == a_ids[2] and p["max"] == b_ids[2], p
    assert sorted((c["name"], c["pending"]) for c in p["consumers"]) == [("alice", 2), ("bob", 3)], p
    rng = r.xpending_range(k, "workers", min="-", max="+", count=10)
    assert [x["message_id"] for x in rng] == a_ids[2:] + b_ids, rng
    assert all(x["times_delivered"] == 1 for x in rng), rng
    assert [x["message_id"] for x in r.xpending_range(k, "workers", "-", "+", 10, consumername="bob")] == b_ids
    assert r.xpending_range(k, "workers", "-", "+", 10, idle=10_000_000) == []

    # XCLAIM / XAUTOCLAIM.
    claimed = r.xclaim(k, "workers", "carol", min_idle_time=0, message_ids=[b_ids[0]])
    assert [e[0] for e in claimed] == [b_ids[0]], claimed
    assert r.xclaim(k, "workers", "carol", 0, [b_ids[1]], justid=True) == [b_ids[1]]
    assert r.xclaim(k, "workers", "carol", 10_000_000, [b_ids[2]]) == []
    r.xclaim(k, "workers", "dave", 0, [a_ids[2]], idle=50_000, retrycount=5)
    d = r.xpending_range(k, "workers", a_ids[2], a_ids[2], 1)[0]
    assert d["consumer"] == "dave" and d["times_delivered"] == 5 and d["time_since_delivered"] >= 50_000, d
    assert r.xdel(k, a_ids[3]) == 1
    nxt, msgs, deleted = r.xautoclaim(k, "workers", "erin", 0, start_id="0-0", count=3)
    assert [m[0] for m in msgs] == [a_ids[2], b_ids[0]], msgs
    assert deleted == [a_ids[3]], deleted
    assert nxt == b_ids[1], nxt
    again = r.xautoclaim(k, "workers", "erin", 0, start_id="0-0", justid=True)
    assert again == [a_ids[2], b_ids[0], b_ids[1], b_ids[2]], again

    # XINFO.
    info = r.xinfo_stream(k)
    assert info["length"] == 10 and info["groups"] == 2, info
    assert info["last-generated-id"] == "99999999999999-5" and info["entries-added"] == 11, info
    assert info["first-entry"][0] == ids[0], info
    full = r.xinfo_stream(k, full=True)
    assert full["length"] == 10 and len(full["entries"]) == 10, full
    g = {x["name"]: x for x in full["groups"]}
    assert g["workers"]["pel-count"] == 4 and g["workers"]["last-delivered-id"] == ids[7], g
    groups = {x["name"]: x for x in r.xinfo_groups(k)}
    assert groups["workers"]["pending"] == 4 and groups["workers"]["consumers"] == 7, groups
    assert groups["late"]["entries-read"] == 11 and groups["late"]["lag"] == 0, groups
    assert groups["workers"]["lag"] == 3, groups
    cons = {x["name"]: x for x in r.xinfo_consumers(k, "workers")}
    assert set(cons) == {"alice", "bob", "nack", "idle", "carol", "dave", "erin"}, cons
    assert cons["erin"]["pending"] == 4 and cons["idle"]["pending"] == 0, cons
    assert cons["erin"]["idle"] < 10_000, cons

    # XGROUP SETID / DELCONSUMER / DESTROY, XREADGROUP after SETID.
    assert r.xgroup_delconsumer(k, "workers", "alice") == 0
    assert r.xgroup_delconsumer(k, "workers", "erin") == 4
    assert r.xpending(k, "workers")["pending"] == 0
    assert r.xgroup_setid(k, "workers", ids[8], entries_read=9)
    rest = r.xreadgroup("workers", "zed", {k: ">"})
    assert entry_ids(rest) == [ids[9], "99999999999999-5"], rest
    assert r.xgroup_destroy(k, "late") == 1 and r.xgroup_destroy(k, "late") == 0
    assert [x["name"] for x in r.xinfo_groups(k)] == ["workers"]

    # A blocking XREADGROUP woken by XADD.
    got = {}

    def group_reader():
        c = redis.Redis(host="127.0.0.1", port=port, decode_responses=True, protocol=protocol)
        got["v"] = c.xreadgroup("g", "w", {"fresh": ">"}, block=5000, count=10)

    t = threading.Thread(target=group_reader)
    t.start()
    deadline = time.time() + 5
    while r.info("clients")["blocked_clients"] != 1:
        assert time.time() < deadline, "group reader did not block"
        time.sleep(0.01)
    fid = r.xadd("fresh", {"job": "1"})
    t.join()
    assert entry_ids(got["v"]) == [fid], got

    # Pipelines and XDEL / XTRIM replies.
    pipe = r.pipeline(transaction=True)
    pipe.xadd("p", {"a": "1"}, id="1-0")
    pipe.xadd("p", {"a": "2"}, id="2-0")
    pipe.xdel("p", "1-0", "3-0")
    pipe.xlen("p")
    pipe.xtrim("p", maxlen=0, approximate=False)
    pipe.type("p")
    assert pipe.execute() == ["1-0", "2-0", 1, 1, 1, "stream"]
    r.close()


check(2)
check(3)
print("ok")
