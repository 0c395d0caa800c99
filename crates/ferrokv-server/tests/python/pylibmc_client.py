"""pylibmc (libmemcached) against ferrokv's memcached port (argv[1]), in
the binary protocol (what the seed benchmark uses) and the text protocol:
set, get, multi-get, add, replace, append, incr/decr, gets/cas, delete,
touch, and 256-byte values.

Exit 3 when pylibmc is not installed; non-zero on any failure; prints
"ok" at the end.
"""

import sys

try:
    import pylibmc
except ImportError as e:  # pragma: no cover - environment
    print(f"missing python package: {e}")
    sys.exit(3)

port = int(sys.argv[1])
for binary in (True, False):
    c = pylibmc.Client([f"127.0.0.1:{port}"], binary=binary, behaviors={"cas": True})
    c.flush_all()
    assert c.set("a", "x" * 256)
    assert c.get("a") == "x" * 256
    assert c.set_multi({"b": 1, "c": "two"}) == []
    assert c.get_multi(["a", "b", "c", "nope"]) == {"a": "x" * 256, "b": 1, "c": "two"}
    assert c.add("a", "y") is False
    assert c.replace("a", "z") is True and c.get("a") == "z"
    assert c.append("a", "w") and c.get("a") == "zw"
    c.set("n", "10")
    assert c.incr("n", 5) == 15 and c.decr("n", 20) == 0
    v, cas = c.gets("a")
    assert v == "zw"
    assert c.cas("a", "new", cas) is True and c.cas("a", "newer", cas) is False
    assert c.delete("a") is True and c.get("a") is None and c.delete("a") is False
    assert c.touch("b", 100)
    for i in range(200):
        c.set(f"k{i}", bytes([i % 256]) * 256)
    got = c.get_multi([f"k{i}" for i in range(200)])
    assert all(got[f"k{i}"] == bytes([i % 256]) * 256 for i in range(200))
print("ok")
