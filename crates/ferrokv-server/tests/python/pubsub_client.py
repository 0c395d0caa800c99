"""Drives ferrokv's Pub/Sub with the `redis` package's PubSub API, as a real
application would. Usage: pubsub_client.py PORT. Exits 0 when every check
passes; prints the failing check and exits 1 otherwise; exits 3 when the
`redis` package is missing (the Rust test then skips)."""
import sys
import threading
import time

try:
    import redis
except ImportError:
    print("python package 'redis' is not installed")
    sys.exit(3)

PORT = int(sys.argv[1])


def check(cond, what):
    if not cond:
        print("FAILED:", what)
        sys.exit(1)


def wait_message(p, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = p.get_message(timeout=0.2)
        if m is not None:
            return m
    return None


def run(protocol):
    r = redis.Redis(port=PORT, protocol=protocol)
    pub = redis.Redis(port=PORT)
    p = r.pubsub()
    p.subscribe("news", "sport")
    for ch in (b"news", b"sport"):
        m = wait_message(p)
        check(m and m["type"] == "subscribe" and m["channel"] == ch, f"subscribe {ch}: {m}")
    p.psubscribe("n*", r"h\?llo", "h[a-c]llo")
    for pat in (b"n*", rb"h\?llo", b"h[a-c]llo"):
        m = wait_message(p)
        check(m and m["type"] == "psubscribe" and m["channel"] == pat, f"psubscribe {pat}: {m}")
    check(pub.publish("news", "one") == 2, "PUBLISH news counts channel and pattern")
    m1, m2 = wait_message(p), wait_message(p)
    check(m1["type"] == "message" and m1["data"] == b"one", f"message: {m1}")
    check(m2["type"] == "pmessage" and m2["pattern"] == b"n*", f"pmessage: {m2}")
    check(pub.publish("h?llo", "q") == 1, "escaped ? matches a literal ?")
    check(pub.publish("hello", "q") == 0, "escaped ? does not match e")
    check(pub.publish("hbllo", "c") == 1, "character class")
    for want in (b"h?llo", b"hbllo"):
        m = wait_message(p)
        check(m["type"] == "pmessage" and m["channel"] == want, f"pattern message {want}: {m}")
    chans = sorted(pub.pubsub_channels())
    check(chans == [b"news", b"sport"], f"PUBSUB CHANNELS {chans}")
    check(dict(pub.pubsub_numsub("news", "none")) == {b"news": 1, b"none": 0}, "NUMSUB")
    check(pub.pubsub_numpat() == 3, "NUMPAT")
    # Order from one publisher, delivered through a background thread.
    got = []
    done = threading.Event()

    def handler(msg):
        got.append(int(msg["data"]))
        if len(got) == 500:
            done.set()

    p2 = r.pubsub()
    p2.subscribe(seq=handler)
    t = p2.run_in_thread(sleep_time=0.01)
    time.sleep(0.2)
    pipe = pub.pipeline(transaction=False)
    for i in range(500):
        pipe.publish("seq", str(i))
    check(all(n == 1 for n in pipe.execute()), "each PUBLISH reaches the one subscriber")
    check(done.wait(10), f"500 messages arrive (got {len(got)})")
    check(got == list(range(500)), "messages arrive in publish order")
    t.stop()
    t.join(5)
    p2.close()
    p.unsubscribe()
    p.punsubscribe()
    time.sleep(0.2)
    check(pub.pubsub_numpat() == 0, "NUMPAT after PUNSUBSCRIBE")
    p.close()
    deadline = time.time() + 5
    while time.time() < deadline and pub.pubsub_channels():
        time.sleep(0.05)
    check(pub.pubsub_channels() == [], "no channels left once the client is gone")
    r.close()
    pub.close()


run(2)
run(3)
print("ok")
