"""pymemcache against ferrokv's memcached port (argv[1]), with the RESP
port (argv[2]) to check both protocols share one keyspace.

Exit 3 when pymemcache or redis is not installed; non-zero on any failure;
prints "ok" at the end.
"""

import sys

try:
    from pymemcache.client.base import Client
    from pymemcache import serde
    import redis
except ImportError as e:  # pragma: no cover - environment
    print(f"missing python package: {e}")
    sys.exit(3)

mc_port, resp_port = int(sys.argv[1]), int(sys.argv[2])
c = Client(("127.0.0.1", mc_port), default_noreply=False, serde=serde.pickle_serde)
r = redis.Redis(port=resp_port)

c.flush_all()
assert c.set("s", "text") is True
assert c.get("s") == "text"
# pickled objects travel with memcached's client flags.
assert c.set("obj", {"a": [1, 2, 3]}) is True
assert c.get("obj") == {"a": [1, 2, 3]}
assert c.add("s", "other") is False
assert c.replace("missing", "x") is False
assert c.set("n", 10) is True
assert c.incr("n", 5) == 15
assert c.decr("n", 20) == 0
assert c.append("s", "-tail") is True
assert c.prepend("s", "head-") is True
assert c.get("s") == "head-text-tail"
value, cas = c.gets("s")
assert value == "head-text-tail" and cas is not None
assert c.cas("s", "swapped", cas) is True
assert c.cas("s", "again", cas) is False
assert c.get("s") == "swapped"
assert c.touch("s", 100) is True
assert 99 <= r.ttl("s") <= 100
many = c.get_many(["s", "n", "nope"])
assert many == {"s": "swapped", "n": 0}, many
assert c.delete("s") is True
assert c.delete("s") is False
# One keyspace: RESP sees the items (the string form), and the other way.
c.set("shared", "from-memcached")
assert r.get("shared") == b"from-memcached"
r.set("from-resp", "v")
assert c.get("from-resp") == b"v"  # flags 0: bytes
# Many keys, pipelined by the client, verified as the seed benchmark does.
import random
import string

vals = {
    f"k{i}": "".join(random.choice(string.ascii_letters) for _ in range(256))
    for i in range(500)
}
assert c.set_many(vals) == []
assert c.get_many(list(vals)) == vals
assert c.delete_many(list(vals)) is True
assert c.get_many(list(vals)) == {}
stats = c.stats()
assert stats[b"cmd_get"] > 0 and b"curr_items" in stats, stats
print("ok")
