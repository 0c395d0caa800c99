#!/usr/bin/env python3
"""Differential tester for memcached's binary protocol.

Usage: python3 memcached_bin_diff.py PORT_A PORT_B [--seed N] [--ops N]

PORT_A is the reference (memcached 1.6), PORT_B the server under test,
both on 127.0.0.1. One connection per server speaks the binary protocol
(its first byte is 0x80). A seeded sequence of requests over a few keys
(GET GETQ GETK GETKQ SET SETQ ADD ADDQ REPLACE REPLACEQ APPEND APPENDQ
PREPEND DELETE DELETEQ INCREMENT INCREMENTQ DECREMENT DECREMENTQ TOUCH GAT
GATQ GATK GATKQ NOOP VERSION, with random opaques, flags, expirations,
deltas and initial values) is sent to both, one request at a time, and
every response packet is compared field by field: magic, opcode, status,
opaque, extras, key and value. CAS values differ between servers (each
has its own counter): only whether a CAS is set is compared. Exit status 0
when everything matched, 1 on a mismatch (the request and both replies are
printed), 2 on a connection error. Only the standard library is used.
"""
import argparse
import random
import socket
import struct
import sys


def pkt(op, key=b"", extras=b"", value=b"", cas=0, opaque=0):
    """One request: header (magic, opcode, key length, extras length, data
    type, vbucket, body length, opaque, CAS) and body."""
    body_len = len(extras) + len(key) + len(value)
    return struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(extras), 0, 0,
                       body_len, opaque, cas) + extras + key + value


# The opaque of the NOOP sent after each request: its response marks the
# end of that request's responses (quiet commands answer nothing), so the
# comparison does not depend on how fast either server answers.
SENTINEL = 0xFE55E11A


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    return s


def exchange(s, p):
    """Sends request `p` and a sentinel NOOP; returns the bytes answered
    before the sentinel's response (all of them when the server closed)."""
    s.sendall(p + pkt(0x0A, opaque=SENTINEL))
    end = struct.pack(">BBHBBHII", 0x81, 0x0A, 0, 0, 0, 0, 0, SENTINEL)
    out = b""
    while True:
        i = out.find(end)
        if i >= 0 and (len(out) - i) >= 24:
            return out[:i]
        try:
            d = s.recv(1 << 20)
        except socket.timeout:
            return out + b"<timeout>"
        if not d:
            return out
        out += d


def parse(b):
    """Response packets as comparable tuples (CAS reduced to set/unset)."""
    res = []
    while len(b) >= 24:
        magic, op, kl, el, _dt, st, bl, opq, cas = struct.unpack(">BBHBBHIIQ", b[:24])
        body, b = b[24:24 + bl], b[24 + bl:]
        res.append((hex(magic), hex(op), st, opq, "cas" if cas else 0,
                    body[:el], body[el:el + kl], body[el + kl:]))
    if b:
        res.append(("trailing", b))
    return res


def request(r, op, key):
    opq = r.getrandbits(32)
    if op in (0x01, 0x02, 0x03, 0x11, 0x12, 0x13):
        v = r.choice([b"hello", b"12", b"", b"x" * 100, b"99999"])
        ext = struct.pack(">II", r.getrandbits(32), r.choice([0, 0, 100]))
        return pkt(op, key, ext, v, opaque=opq)
    if op in (0x05, 0x06, 0x15, 0x16):
        ext = struct.pack(">QQI", r.randint(0, 5), r.randint(0, 50),
                          r.choice([0, 0xFFFFFFFF, 100]))
        return pkt(op, key, ext, opaque=opq)
    if op in (0x1C, 0x1D, 0x1E, 0x23, 0x24):
        return pkt(op, key, struct.pack(">I", r.choice([0, 100])), opaque=opq)
    if op in (0x0A, 0x0B):
        return pkt(op, opaque=opq)
    if op in (0x0E, 0x0F, 0x19):
        return pkt(op, key, value=b"ab", opaque=opq)
    return pkt(op, key, opaque=opq)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port_a", type=int)
    ap.add_argument("port_b", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ops", type=int, default=300)
    a = ap.parse_args()
    try:
        sa, sb = connect(a.port_a), connect(a.port_b)
    except OSError as e:
        print(f"connect: {e}")
        return 2
    for s in (sa, sb):
        exchange(s, pkt(0x08))  # FLUSH
    r = random.Random(a.seed)
    keys = [b"bk1", b"bk2", b"bnum", b"bk3"]
    ops = [0x00, 0x01, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x09, 0x0C, 0x0D, 0x0E,
           0x0F, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x19, 0x1C, 0x1D, 0x1E, 0x23,
           0x24, 0x0A, 0x0B]
    for i in range(a.ops):
        p = request(r, r.choice(ops), r.choice(keys))
        ra, rb = parse(exchange(sa, p)), parse(exchange(sb, p))
        if ra != rb:
            print(f"MISMATCH seed={a.seed} request #{i}: {p!r}\n  A: {ra}\n  B: {rb}")
            return 1
    print(f"OK: {a.ops} binary requests matched (seed {a.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
