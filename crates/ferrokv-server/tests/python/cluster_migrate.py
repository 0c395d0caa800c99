"""Moves a running cluster from redis-server nodes to ferrokv nodes, the
way an operator would, while a client keeps working.

Arguments: the ports of three redis-server masters, then of three ferrokv
masters, all in one cluster. A redis-py RedisCluster client writes and
reads keys the whole time (following MOVED/ASK); every slot of each
redis-server node is resharded to a ferrokv node with
`redis-cli --cluster reshard`, the redis-server nodes are removed with
`redis-cli --cluster del-node`, and every key written is read back.
Exits non-zero on any client error or missing key."""
import subprocess
import sys
import threading
import time

from redis.cluster import RedisCluster

ports = [int(p) for p in sys.argv[1:7]]
redis_ports, ferro_ports = ports[:3], ports[3:]


def cli(*args):
    r = subprocess.run(["redis-cli", *map(str, args)], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"redis-cli {args} failed: {r.stdout}{r.stderr}")
    return r.stdout


def myid(port):
    return cli("-p", port, "cluster", "myid").strip()


def slots_of(port):
    me = myid(port)
    n = 0
    for line in cli("-p", port, "cluster", "nodes").splitlines():
        f = line.split()
        if f[0] == me:
            for r in f[8:]:
                if r.startswith("["):
                    continue
                a, _, b = r.partition("-")
                n += int(b or a) - int(a) + 1
    return n


rc = RedisCluster(host="127.0.0.1", port=ferro_ports[0], decode_responses=True)
for i in range(20000):
    rc.set(f"key:{i}", f"v{i}")

errors = []
written = {}
stop = threading.Event()


def load():
    c = RedisCluster(host="127.0.0.1", port=ferro_ports[1], decode_responses=True)
    i = 0
    while not stop.is_set():
        k = f"live:{i % 5000}"
        try:
            c.set(k, str(i))
            written[k] = str(i)
            v = c.get(f"key:{i % 20000}")
            if v != f"v{i % 20000}":
                errors.append(f"key:{i % 20000} = {v!r}")
        except Exception as e:  # noqa: BLE001 - any client-visible error fails
            errors.append(repr(e))
        i += 1


# A daemon thread: a failure below ends the script instead of waiting
# for the load loop forever.
t = threading.Thread(target=load, daemon=True)
t.start()
start = time.time()
for rp, fp in zip(redis_ports, ferro_ports):
    n = slots_of(rp)
    cli("--cluster", "reshard", f"127.0.0.1:{fp}", "--cluster-from", myid(rp),
        "--cluster-to", myid(fp), "--cluster-slots", n, "--cluster-yes")
    if slots_of(rp) != 0:
        raise SystemExit(f"redis node {rp} still has slots")
elapsed = time.time() - start
time.sleep(0.5)
stop.set()
t.join()
if errors:
    raise SystemExit(f"{len(errors)} client errors during the reshard, first: {errors[:5]}")
def del_node(rp):
    """`redis-cli --cluster del-node`, tolerating one race of Redis 7.0's own:
    redis-cli sends CLUSTER FORGET to each node in turn, while the nodes that
    already forgot it gossip the forgotten node (the 7.0 ping extension), so
    on a slow machine a later node may have forgotten it already and answer
    "Unknown node". The rest of del-node is then done here: FORGET on the
    nodes that still know it, CLUSTER RESET SOFT on the removed node."""
    node = myid(rp)
    r = subprocess.run(["redis-cli", "--cluster", "del-node", f"127.0.0.1:{ferro_ports[0]}", node],
                       capture_output=True, text=True, timeout=600)
    if r.returncode == 0:
        return
    if f"Unknown node {node}" not in r.stdout + r.stderr:
        raise SystemExit(f"del-node {rp} failed: {r.stdout}{r.stderr}")
    for p in ferro_ports + [q for q in redis_ports if q != rp]:
        if node in cli("-p", p, "cluster", "nodes"):
            # Gossip may get there first here too: "Unknown node" is fine.
            subprocess.run(["redis-cli", "-p", str(p), "cluster", "forget", node],
                           capture_output=True, text=True, timeout=60)
    cli("-p", rp, "cluster", "reset", "soft")


for rp in redis_ports:
    del_node(rp)
check = cli("--cluster", "check", f"127.0.0.1:{ferro_ports[0]}")
if "[OK] All 16384 slots covered." not in check:
    raise SystemExit(check)
rc = RedisCluster(host="127.0.0.1", port=ferro_ports[2], decode_responses=True)
missing = [i for i in range(20000) if rc.get(f"key:{i}") != f"v{i}"]
if missing:
    raise SystemExit(f"{len(missing)} keys lost, first {missing[:5]}")
for k, v in written.items():
    if rc.get(k) != v:
        raise SystemExit(f"{k}: {rc.get(k)!r} != {v!r}")
print(f"ok: resharded in {elapsed:.1f}s with {len(written)} live keys")
