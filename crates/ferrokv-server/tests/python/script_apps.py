"""Runs what applications run on Lua scripts against ferrokv with the
`redis` package: redis-py's `Lock` (acquire, contention between two
holders, timeout, extend, reacquire, release of a lock lost to expiry)
and a sliding-window rate limiter loaded with SCRIPT LOAD / EVALSHA
(`register_script`). Usage: script_apps.py PORT. Exits 0 and prints "ok"
when every check passes; prints the failing check and exits 1 otherwise;
exits 3 when the `redis` package is missing (the Rust test then skips)."""
import sys
import threading
import time

try:
    import redis
    from redis.exceptions import LockError, LockNotOwnedError
except ImportError:
    print("python package 'redis' is not installed")
    sys.exit(3)

PORT = int(sys.argv[1])
r = redis.Redis(port=PORT)


def check(cond, what):
    if not cond:
        print("FAILED:", what)
        sys.exit(1)


# redis-py Lock: its acquire/release/extend/reacquire are Lua scripts.
lock = r.lock("resource", timeout=5)
check(lock.acquire(blocking=False), "first acquire")
other = r.lock("resource", timeout=5)
check(not other.acquire(blocking=False), "second holder refused")
check(lock.owned(), "owned")
check(lock.extend(10), "extend")
check(r.pttl("resource") > 9000, "extended ttl")
check(lock.reacquire(), "reacquire")
lock.release()
check(not r.exists("resource"), "released")
check(other.acquire(blocking=False), "acquire after release")
other.release()

# A lock lost to expiry cannot be released by its old holder.
short = r.lock("short", timeout=0.2)
check(short.acquire(), "short acquire")
time.sleep(0.4)
thief = r.lock("short", timeout=5)
check(thief.acquire(blocking=False), "taken after expiry")
try:
    short.release()
    check(False, "release of a lost lock must fail")
except LockNotOwnedError:
    pass
thief.release()

# Mutual exclusion between threads incrementing through the lock.
counter_key = "counter"
r.set(counter_key, 0)


def worker():
    c = redis.Redis(port=PORT)
    for _ in range(50):
        with c.lock("mutex", timeout=5, blocking_timeout=10):
            v = int(c.get(counter_key))
            c.set(counter_key, v + 1)


threads = [threading.Thread(target=worker) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
check(int(r.get(counter_key)) == 200, "lock kept increments exclusive")

# A sliding-window rate limiter: at most LIMIT calls per WINDOW ms per key.
LIMITER = """
local key = KEYS[1]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
if redis.call('ZCARD', key) < limit then
  redis.call('ZADD', key, now, ARGV[4])
  redis.call('PEXPIRE', key, window)
  return 1
end
return 0
"""
limiter = r.register_script(LIMITER)
now = int(time.time() * 1000)
allowed = sum(limiter(keys=["rl:user1"], args=[now + i, 1000, 10, "req%d" % i]) for i in range(25))
check(allowed == 10, "limiter allowed %d of 25 in one window" % allowed)
later = now + 2000
check(limiter(keys=["rl:user1"], args=[later, 1000, 10, "late"]) == 1, "window slides")
r.script_flush()
# register_script falls back to EVAL after NOSCRIPT.
check(limiter(keys=["rl:user2"], args=[later, 1000, 10, "x"]) == 1, "reload after flush")
print("ok")
