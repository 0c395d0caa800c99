#!/usr/bin/env python3
"""A port of the `simple.py` benchmark of seed 004 (redis-py-cluster's
benchmarks): a chain of SET then GET of the same key, N/2 times, through
redis-py's cluster client (RedisCluster) or its plain client (Redis, with
--nocluster), each pair in its own two-command pipeline with --pipeline.
Prints operations per second for 10k, 20k and 40k operations, as the
original does.

usage: bench/cluster_simple.py --port P [--host H] [--nocluster]
       [--pipeline] [--counts 10000,20000,40000] [--csv]
"""
import argparse
import time

import redis
from redis.cluster import RedisCluster


def chain(c, num):
    for i in range(num // 2):
        k = f"foo{i}"
        c.set(k, i)
        c.get(k)


def chain_pipeline(c, num):
    for i in range(num // 2):
        k = f"foo{i}"
        p = c.pipeline()
        p.set(k, i)
        p.get(k)
        p.execute()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--nocluster", action="store_true")
    ap.add_argument("--pipeline", action="store_true")
    ap.add_argument("--counts", default="10000,20000,40000")
    ap.add_argument("--csv", action="store_true")
    a = ap.parse_args()
    if a.nocluster:
        c = redis.Redis(host=a.host, port=a.port)
    else:
        c = RedisCluster(host=a.host, port=a.port)
    run = chain_pipeline if a.pipeline else chain
    for num in (int(x) for x in a.counts.split(",")):
        t0 = time.perf_counter()
        run(c, num)
        el = time.perf_counter() - t0
        if a.csv:
            print(f"{num},{num / el:.1f}")
        else:
            what = "operations inside pipelines" if a.pipeline else "operations"
            print(f"{num / 1000:.1f}k SET/GET {what} took: {el} seconds... "
                  f"{num / el} operations per second")


if __name__ == "__main__":
    main()
