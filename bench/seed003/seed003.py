#!/usr/bin/env python3
"""Seed 003 worker: N (green) threads each do SET / GET / DEL of a random
256-char value for a random number (100..999) of iterations, asserting the
value read back. Python 3 port of the seed's eventlet benchmark.py.

One process runs one (driver, target) pair; bench/seed003/run starts it once
per pair and round, so green-thread monkey-patching never leaks between runs.

Environment (all optional except the address of the driver in use):
  DRIVER        redis | redis-pipe | memcached            (default redis)
  THREADS       number of threads                         (default 50; the runner passes 30)
  GREEN         auto | eventlet | gevent | threads        (default auto:
                eventlet if importable, else gevent, else OS threads)
  HOST, PORT    TCP address for `redis` and `memcached`   (default 127.0.0.1)
  SOCKET        unix socket path for `redis-pipe`
  MEMCACHED_CLIENT  pymemcache | pylibmc (binary protocol, as the seed) |
                pylibmc-text                              (default pymemcache)
  SEED          seed for per-thread iteration counts and values (default:
                unseeded; the runner passes one seed per round)

Output: one line per thread ("N operations completed in T s"), the seed's
totals, and a last line "RESULT {json}" for the runner. Any mismatch prints
the key and both values and exits 1; any other error exits 2.
"""
import os
import sys


def pick_mode():
    mode = os.environ.get("GREEN", "auto")
    if mode in ("auto", "eventlet"):
        import warnings
        warnings.simplefilter("ignore")  # eventlet's DeprecationWarning banner
    if mode == "auto":
        for cand in ("eventlet", "gevent"):
            try:
                __import__(cand)
                return cand
            except Exception:
                continue
        return "threads"
    return mode


MODE = pick_mode()

# Monkey-patch before anything else imports socket/threading (as the seed does).
if MODE == "eventlet":
    import eventlet
    eventlet.monkey_patch()
elif MODE == "gevent":
    from gevent import monkey
    monkey.patch_all()
elif MODE != "threads":
    sys.exit("seed003.py: unknown GREEN=%r" % MODE)

import json  # noqa: E402
import random  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from string import ascii_letters, digits  # noqa: E402

DRIVER = os.environ.get("DRIVER", "redis")
THREADS = int(os.environ.get("THREADS", 50))
HOST = os.environ.get("HOST", "127.0.0.1")
PORT = int(os.environ.get("PORT", 0) or 0)
SOCKET = os.environ.get("SOCKET", "")
MEMCACHED_CLIENT = os.environ.get("MEMCACHED_CLIENT", "pymemcache")
ALPHABET = digits + ascii_letters

SEED = os.environ.get("SEED", "")


def thread_rng(thread):
    """Each thread draws from its own generator; with SEED set, thread i gets
    the same iteration count and values in every run (so all targets of one
    round do exactly the same work), whatever the scheduling."""
    if SEED:
        return random.Random("{}-{}".format(SEED, thread))
    return random.Random()


class Mismatch(Exception):
    pass


def redis_connection():
    from redis import Redis
    return Redis(host=HOST, port=PORT, decode_responses=True)


def redis_pipe_connection():
    from redis import Redis
    return Redis(unix_socket_path=SOCKET, decode_responses=True)


def memcached_connection():
    if MEMCACHED_CLIENT in ("pylibmc", "pylibmc-text"):
        import pylibmc
        # As in the seed (binary protocol; "pylibmc-text": ASCII protocol).
        # NB: pylibmc is C code, green threads do not yield in it: under
        # eventlet/gevent its calls run one thread at a time.
        return pylibmc.Client(["%s:%d" % (HOST, PORT)],
                              behaviors={"ketama": True, "tcp_nodelay": True},
                              binary=(MEMCACHED_CLIENT == "pylibmc"))
    from pymemcache.client.base import Client
    # default_noreply=False: pymemcache sends set/delete with "noreply" by
    # default (no round trip); the seed's pylibmc waits for every reply, and
    # so do the redis drivers, so every op here is one request + one reply.
    return Client((HOST, PORT), no_delay=True, connect_timeout=10, timeout=30,
                  default_noreply=False)


CONNECTIONS = {
    "redis": redis_connection,
    "redis-pipe": redis_pipe_connection,
    "memcached": memcached_connection,
}


def random_string(rng, length=256):
    return "".join(rng.choice(ALPHABET) for _ in range(length))


def as_str(value):
    if isinstance(value, bytes):
        return value.decode()
    return value


def benchmark(thread):
    rng = thread_rng(thread)
    conn = CONNECTIONS[DRIVER]()
    number = rng.randint(100, 999)
    start = time.time()

    for _ in range(number):
        key = "key-{:d}-{:d}".format(thread, number)
        value = random_string(rng)

        if DRIVER == "redis-pipe":
            pipe = conn.pipeline()
            pipe.set(key, value)
            pipe.get(key)
            pipe.delete(key)
            got_value = pipe.execute()[1]
        else:
            conn.set(key, value)
            got_value = as_str(conn.get(key))
            conn.delete(key)

        if value != got_value:
            raise Mismatch("thread {} key {!r}: {!r} != {!r}".format(
                thread, key, value, got_value))

    elapsed = time.time() - start
    try:
        conn.close()
    except Exception:
        pass
    return elapsed, number * 3


def run_all():
    """Run benchmark(0..THREADS-1) concurrently; yield (timer, ops) or raise."""
    if MODE == "eventlet":
        pool = eventlet.GreenPool(THREADS)
        for res in pool.imap(benchmark, range(THREADS)):
            yield res
        return
    if MODE == "gevent":
        from gevent.pool import Pool
        pool = Pool(THREADS)
        for res in pool.imap(benchmark, range(THREADS)):
            yield res
        return
    # OS threads: one per "green thread", results in thread order like imap.
    results = [None] * THREADS
    gate = threading.Event()

    def worker(i):
        gate.wait()
        try:
            results[i] = ("ok", benchmark(i))
        except BaseException as e:  # re-raised in the main thread
            results[i] = ("err", e)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True)
               for i in range(THREADS)]
    for t in threads:
        t.start()
    gate.set()
    for i, t in enumerate(threads):
        t.join()
        kind, val = results[i]
        if kind == "err":
            raise val
        yield val


def main():
    if DRIVER not in CONNECTIONS:
        sys.exit("seed003.py: unknown DRIVER=%r (want %s)"
                 % (DRIVER, ", ".join(CONNECTIONS)))
    if DRIVER == "redis-pipe" and not SOCKET:
        sys.exit("seed003.py: DRIVER=redis-pipe needs SOCKET=/path/to/sock")
    if DRIVER != "redis-pipe" and not PORT:
        sys.exit("seed003.py: DRIVER=%s needs PORT" % DRIVER)

    start = time.time()
    timers = []
    total = 0
    try:
        for timer, counter in run_all():
            print("{} operations completed in {:.4f} s".format(counter, timer))
            timers.append(timer)
            total += counter
    except Mismatch as e:
        print("ASSERTION FAILED: %s" % e, flush=True)
        print("RESULT " + json.dumps({"ok": False, "error": "mismatch: %s" % e}),
              flush=True)
        os._exit(1)
    except Exception as e:
        print("ERROR: %s: %s" % (type(e).__name__, e), flush=True)
        print("RESULT " + json.dumps(
            {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}), flush=True)
        os._exit(2)
    timer = time.time() - start

    print()
    print("In total, operations: {}, time: {:.4f} s".format(total, timer))
    print("Requests per second: {:.0f}".format(total / timer))
    print("Min: {:.4f}, max: {:.4f}".format(min(timers), max(timers)))
    print("RESULT " + json.dumps({
        "ok": True, "driver": DRIVER, "mode": MODE, "threads": THREADS,
        "ops": total, "seconds": timer, "ops_per_sec": total / timer,
        "thread_min_s": min(timers), "thread_max_s": max(timers),
    }), flush=True)


if __name__ == "__main__":
    main()
