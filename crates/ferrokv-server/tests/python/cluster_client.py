"""redis-py's RedisCluster against a running cluster: commands, hash
tags, pipelines (which redis-py splits by node), MGET across slots, and
a check that every key is where CLUSTER KEYSLOT says. Exits non-zero on
the first mismatch. Usage: cluster_client.py PORT"""
import sys

from redis.cluster import RedisCluster

port = int(sys.argv[1])
rc = RedisCluster(host="127.0.0.1", port=port, decode_responses=True)
for i in range(2000):
    rc.set(f"py:{i}", f"v{i}")
for i in range(2000):
    assert rc.get(f"py:{i}") == f"v{i}", i
# Pipelines: the client groups commands by node and follows MOVED.
p = rc.pipeline()
for i in range(2000):
    p.set(f"pipe:{i}", i)
    p.incr(f"pipe:{i}")
res = p.execute()
assert res == [True, None][:0] + [x for i in range(2000) for x in (True, i + 1)], res[:4]
p = rc.pipeline()
for i in range(2000):
    p.get(f"pipe:{i}")
assert p.execute() == [str(i + 1) for i in range(2000)]
# Multi-key commands inside one hash tag.
rc.mset({"{tag}a": "1", "{tag}b": "2"})
assert rc.mget(["{tag}a", "{tag}b"]) == ["1", "2"]
assert rc.keyslot("{tag}a") == rc.keyslot("{tag}b")
# redis-py's MGET across slots splits by slot.
assert rc.mget_nonatomic([f"py:{i}" for i in range(50)]) == [f"v{i}" for i in range(50)]
# Every key is on the node owning its slot.
for i in range(0, 2000, 97):
    key = f"py:{i}"
    node = rc.get_node_from_key(key)
    slot = rc.keyslot(key)
    assert rc.cluster_countkeysinslot(slot) >= 1
    assert key in rc.execute_command("CLUSTER GETKEYSINSLOT", slot, 1000, target_nodes=node)
print("ok")
