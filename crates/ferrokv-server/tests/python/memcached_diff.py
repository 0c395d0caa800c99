#!/usr/bin/env python3
"""Differential tester for memcached-compatible servers (text + meta protocol).

Usage:
    python3 memcached_diff.py PORT_A PORT_B [--seed N] [--rounds N]
                              [--round R] [--no-binary] [--verbose] [--dump]

PORT_A is the reference (a real memcached 1.6.x), PORT_B the server under
test; both on 127.0.0.1.  Start the reference without the segmented LRU,
e.g. `memcached -U 0 -l 127.0.0.1 -p PORT -t 2 -o no_lru_maintainer` (see
check_settings: with memcached's default LRU the padding of incr/decr
results depends on a background thread, which causes rare false
mismatches; the harness warns when it sees `lru_segmented yes`).
--round R runs only round R of the seed, --dump prints every batch sent
and both replies, --no-binary skips the binary-protocol rounds (for a
server that only speaks the text/meta protocol).  The same generated command sequences are sent to
both servers and the replies are compared byte for byte (after the few
normalisations listed below).  Exit status: 0 when every reply matched, 1 on
the first mismatch (a report with the seed, the round, the exact bytes sent,
both replies and a shrunk reproduction is printed), 2 on a usage/connection
error.  Only the Python standard library is used (raw sockets).

How a run is organised
----------------------
* `flush_all` is sent once to both servers at the start.
* Every round opens fresh connections and uses a key prefix unique to the
  seed and the round, so rounds never see each other's keys.  Each round has
  its own RNG derived from (seed, round): `--round R` replays one round alone.
* A round is a list of *operations* (one command, or for quiet-mode tests a
  short pipeline ending in `mn`).  The harness appends `mn\\r\\n` after every
  operation.  Its `MN\\r\\n` reply (a) tells the reader when the reply of a
  batch is complete without waiting for an idle timeout and (b) splits the
  reply stream into per-operation replies.  It also makes memcached itself
  deterministic: `mn` flushes the pending responses, and memcached's
  incr/decr/ma rewrite a value in place (padding it with spaces) only if no
  queued response still holds a reference to the item; without the flush
  the padding would depend on TCP timing.
* Transport modes (chosen per round): `lockstep` (one operation per write),
  `pipelined` (5-25 operations in a single write), `split` (a batch cut at
  random byte offsets, sent in pieces with 0-2 ms pauses).  Some operations
  force a cut with a pause (long-line tests).  Both servers get the same cut
  points (as fractions of their byte strings, which differ only where CAS
  numbers are substituted).
* Special rounds: an ASCII garbage round (random non-UTF-8 lines, then mn)
  every 10 rounds and a binary-protocol round (first byte 0x80, memcached's
  binary magic; skipped with --no-binary) every 10 rounds.  Their replies
  are compared exactly (binary: read until 0.2 s of silence), together with
  whether the connection was closed.
* Operations that close the connection (quit, over-long lines) come last in a
  round; the harness compares the bytes received before the close and that
  both servers closed (EOF and RST both count as "closed").
* Connection liveness is compared after every batch.

CAS handling
------------
CAS unique numbers differ between servers, so literal numbers learned from A
are never sent to B.  Each server has its own `Tracker` that records the CAS
values it returned for each key (gets/gats VALUE lines, the `c` return flag
of mg/ms/ma).  Generated operations refer to "the current CAS of key k",
"a stale CAS of key k" (an older value it returned, or current-1), "a random
big number" or "0"; each server gets its own number.  In the same trackers a
consistency check runs per server: after a successful modification of a key
(STORED, DELETED, an incr/decr result, HD from ms/md/ma, flush_all) the next
CAS observed for that key must be new (never seen for that key before); with
no modification in between it must be unchanged (touch, gat, mg T... must
not change it).  Operations whose effect cannot be known (noreply, quiet
mode, malformed input, mg N) reset the check for the keys involved.

Normalisations (everything else is compared byte for byte)
----------------------------------------------------------
1. `VALUE <key> <flags> <bytes> <cas>` lines: the cas field becomes `<CAS>`.
2. Meta reply lines (HD VA EN NF NS EX; in fact every line other than VALUE,
   VERSION and ME lines, from its second token on): a return flag
   `c<digits>` other than `c0` becomes `c<CAS>` (`c0`, memcached's "no CAS"
   on NS/EX/NF, is kept).
3. `VERSION <anything>` becomes `VERSION <v>`: only the prefix is compared.
4. `ME ...` (meta debug) lines: only the first token `ME` is compared.
5. A `t<n>` return flag with n >= 2**31 becomes `t<past>`.  memcached
   prints the TTL left as an unsigned 32-bit number; for an item whose
   expiry is already in the past when the same command reports it (e.g.
   `mg k N-1 t`, `mg k T-1 t`, `ma k N1000000000 t`) that is
   2**32 - (seconds since memcached started + ~61), i.e. uptime-dependent
   garbage.  Both servers must print some n >= 2**31 there.
6. Meta return flags `t<n>` (TTL left) may differ by up to TTL_SLACK (2)
   seconds, `l<n>` (seconds since last access) by up to LA_SLACK (2).  Two
   seconds, not one: besides a second boundary passing between the sends to
   A and B, memcached converts absolute expiry times through its start-up
   wall clock (whole seconds, `process_started`) while its clock ticks on its
   own sub-second phase, so two real memcacheds can disagree by 1 on an
   absolute expiry even when queried at the same instant.
Sequences are designed so that nothing else depends on time: relative TTLs
used are 0, >= 100 s or negative; absolute ones are far in the past or far in
the future; flush_all never gets a positive delay; `R` tokens are far from
the TTLs used.  The binary-protocol round never uses opcodes whose replies
carry CAS numbers, versions or stats.  Absolute times are computed from the
clock at generation time, so a rerun with the same seed sends the same
commands except for those timestamps.
"""

import argparse
import base64
import random
import select
import socket
import struct
import sys
import time

HOST = "127.0.0.1"
TTL_SLACK = 2
LA_SLACK = 2
IDLE_SENTINEL = 1.0   # give up waiting for a batch's MN after this much silence
IDLE_GARBAGE = 0.2    # silence that ends the read of a garbage/binary round
LONG_PAUSE = 0.1      # pause after a >2048-byte line fragment
HARD_LIMIT = 10.0     # no single batch may take longer than this
SEND_TIMEOUT = 5.0
SAFE = b"xyz0123456789"   # filler alphabet that can never spell a command name
MN = b"mn\r\n"


# --------------------------------------------------------------------------
# Wire
# --------------------------------------------------------------------------

class Conn:
    """One client connection; accumulates and incrementally parses replies."""

    def __init__(self, port, name):
        self.name = name
        self.sock = socket.create_connection((HOST, port), timeout=SEND_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0          # parse position in buf
        self.units = []       # parsed reply units
        self.mn = 0           # number of MN units seen
        self.closed = False
        self.how = None

    def fileno(self):
        return self.sock.fileno()

    def send(self, data):
        if self.closed or not data:
            return
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self._drain()
            self._close("send failed (peer closed)")
        except socket.timeout:
            raise HarnessError("%s: send timed out (server not reading?)" % self.name)

    def _drain(self):
        """Read what the kernel still holds after the peer went away."""
        try:
            self.sock.setblocking(False)
            while True:
                d = self.sock.recv(65536)
                if not d:
                    break
                self._got(d)
        except OSError:
            pass

    def _close(self, how):
        if not self.closed:
            self.closed = True
            self.how = how

    def read_some(self):
        try:
            d = self.sock.recv(65536)
        except (ConnectionResetError, ConnectionAbortedError):
            self._close("reset")
            return
        except (BlockingIOError, socket.timeout):
            return
        if not d:
            self._close("eof")
        else:
            self._got(d)

    def _got(self, d):
        self.buf += d
        units, self.pos = parse_units(self.buf, self.pos)
        for u in units:
            self.units.append(u)
            if u[0] == b"MN\r\n":
                self.mn += 1

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def pump(conns, secs):
    """Read whatever arrives on conns for `secs` seconds."""
    end = time.time() + secs
    while True:
        left = end - time.time()
        live = [c for c in conns if not c.closed]
        if left <= 0 or not live:
            if left > 0:
                time.sleep(left)
            return
        r, _, _ = select.select(live, [], [], left)
        for c in r:
            c.read_some()


def wait(conns, done, idle):
    """Read until done(c) or closed for every conn, or `idle` s of silence."""
    start = last = time.time()
    while True:
        pending = [c for c in conns if not c.closed and not done(c)]
        if not pending:
            return
        now = time.time()
        if now - last >= idle or now - start >= HARD_LIMIT:
            return
        r, _, _ = select.select(pending, [], [], idle - (now - last))
        for c in r:
            c.read_some()
        if r:
            last = time.time()


# --------------------------------------------------------------------------
# Reply parsing and normalisation
# --------------------------------------------------------------------------

def parse_units(buf, pos):
    """Split a reply stream into units (raw_line_with_terminator, data|None).

    A unit is one line; `VALUE k f n [cas]` and `VA n ...` lines carry the
    following n+2 bytes as data.  Returns (complete units, new position)."""
    units = []
    n = len(buf)
    while pos < n:
        nl = buf.find(b"\n", pos)
        if nl < 0:
            break
        raw = bytes(buf[pos:nl + 1])
        end = nl + 1
        data = None
        toks = raw.rstrip(b"\r\n").split(b" ")
        dlen = None
        if toks[0] == b"VALUE" and len(toks) >= 4 and toks[3].isdigit():
            dlen = int(toks[3]) + 2
        elif toks[0] == b"VA" and len(toks) >= 2 and toks[1].isdigit():
            dlen = int(toks[1]) + 2
        if dlen is not None:
            if end + dlen > n:
                break
            data = bytes(buf[end:end + dlen])
            end += dlen
        units.append((raw, data))
        pos = end
    return units, pos


def _int_tok(b):
    try:
        return int(b)
    except ValueError:
        return None


def norm_unit(unit):
    """Normalised, comparable form of a unit (see module docstring)."""
    raw, data = unit
    if raw.endswith(b"\r\n"):
        line, term = raw[:-2], b"\r\n"
    else:
        line, term = raw[:-1], raw[-1:]
    toks = line.split(b" ")
    out = []
    if toks[0] == b"VALUE" and len(toks) == 5 and toks[4].isdigit():
        out = toks[:4] + [b"<CAS>"]
    elif toks[0] == b"VERSION":
        out = [b"VERSION", b"<v>"]
    elif toks[0] == b"ME":
        out = [b"ME"]
    else:
        # Meta reply lines.  Other lines get the same treatment after their
        # first token: memcached can echo a raw key containing LF in a `k`
        # return flag (an item created by `mg ... b N` or `ma ... b N` is not
        # marked as having a binary key), which pushes the remaining return
        # flags onto a line of their own.
        first = 2 if toks[0] == b"VA" else 1
        out = toks[:first]
        for t in toks[first:]:
            c = t[:1]
            if c == b"c" and t[1:].isdigit() and t[1:] != b"0":
                out.append(b"c<CAS>")
            elif c == b"t" and (_int_tok(t[1:]) or 0) >= 2 ** 31:
                out.append(b"t<past>")
            elif c in (b"t", b"l") and _int_tok(t[1:]) is not None:
                out.append((c, _int_tok(t[1:])))
            else:
                out.append(t)
    return (tuple(out), term, data)


def units_match(ua, ub):
    """Compare two normalised units, allowing the t/l slack."""
    (ta, terma, da), (tb, termb, db) = ua, ub
    if terma != termb or da != db or len(ta) != len(tb):
        return False
    for x, y in zip(ta, tb):
        if isinstance(x, tuple) and isinstance(y, tuple) and x[0] == y[0]:
            slack = TTL_SLACK if x[0] == b"t" else LA_SLACK
            if (x[1] < 0) != (y[1] < 0) or abs(x[1] - y[1]) > slack:
                return False
        elif x != y:
            return False
    return True


def show_norm(nu):
    toks, term, data = nu
    parts = []
    for t in toks:
        parts.append(t if isinstance(t, bytes) else t[0] + str(t[1]).encode() + b"~")
    s = b" ".join(parts) + term
    if data is not None:
        s += data
    return repr(s)


# --------------------------------------------------------------------------
# CAS tracking and the per-server consistency check
# --------------------------------------------------------------------------

class Failure(Exception):
    """A difference between the servers or a CAS inconsistency."""


class HarnessError(Exception):
    """Something went wrong that is not a protocol difference."""


class Tracker:
    """Per-server record of the CAS values returned for each key id."""

    checks = {"changed": 0, "unchanged": 0}   # consistency checks done (all trackers)

    def __init__(self, name):
        self.name = name
        self.hist = {}    # key id -> list of distinct CAS values seen, in order
        self.last = {}    # key id -> CAS last seen, while the check is armed
        self.dirty = {}   # key id -> modified since last observation

    def cas_for(self, ref):
        h = self.hist.get(ref.i, [])
        if ref.kind == "zero":
            return 0
        if ref.kind == "cur" and h:
            return h[-1]
        if ref.kind == "stale":
            if len(h) >= 2:
                return h[-2]
            if h and h[-1] > 1:
                return h[-1] - 1
        return ref.rnd

    def mut(self, i):
        self.dirty[i] = True

    def unk(self, i):
        self.last.pop(i, None)
        self.dirty.pop(i, None)

    def obs(self, i, cas, keyname, opdesc):
        if not cas:
            return
        h = self.hist.setdefault(i, [])
        last = self.last.get(i)
        if last is not None:
            if self.dirty.get(i):
                Tracker.checks["changed"] += 1
                if cas == last or cas in h:
                    raise Failure(
                        "CAS consistency (server %s): key %r was modified but its CAS "
                        "is %d, a value it already had (before: %r); seen in reply to %r"
                        % (self.name, keyname, cas, h, opdesc))
            elif cas != last:
                Tracker.checks["unchanged"] += 1
                raise Failure(
                    "CAS consistency (server %s): key %r was not modified but its CAS "
                    "changed from %d to %d; seen in reply to %r"
                    % (self.name, keyname, last, cas, opdesc))
            else:
                Tracker.checks["unchanged"] += 1
        self.last[i] = cas
        self.dirty[i] = False
        if not h or h[-1] != cas:
            h.append(cas)


# --------------------------------------------------------------------------
# Operations
# --------------------------------------------------------------------------

class K:
    """Reference to key id i of the round, raw or base64-encoded."""
    __slots__ = ("i", "b64")

    def __init__(self, i, b64=False):
        self.i, self.b64 = i, b64


class Cas:
    """Reference to a CAS value of key id i: cur, stale, rand or zero."""
    __slots__ = ("i", "kind", "rnd")

    def __init__(self, i, kind, rnd):
        self.i, self.kind, self.rnd = i, kind, rnd


class Pause:
    """Force a write boundary followed by a pause."""
    __slots__ = ("secs",)

    def __init__(self, secs):
        self.secs = secs


class Op:
    """One generated operation.

    parts   : bytes / K / Cas / Pause pieces, concatenated when rendered
    kind    : selects the effect interpretation (see apply_effects)
    keys    : key ids involved
    mn_count: number of `mn` commands inside the op (quiet pipelines)
    closes  : the op is expected to make the server close the connection
    unknown : effect on the keys cannot be known -> reset their CAS check
    """

    def __init__(self, parts, kind, keys=(), mn_count=0, closes=False,
                 unknown=False, flags=b"", noreply=False):
        self.parts = parts
        self.kind = kind
        self.keys = list(keys)
        self.mn_count = mn_count
        self.closes = closes
        self.unknown = unknown
        self.flags = flags        # meta flag letters used (for effects)
        self.noreply = noreply

    def render(self, keys, tracker):
        """-> list of (bytes, pause_after) segments for one server."""
        segs, cur = [], bytearray()
        for p in self.parts:
            if isinstance(p, (bytes, bytearray)):
                cur += p
            elif isinstance(p, K):
                raw = keys[p.i].raw
                cur += base64.b64encode(raw) if p.b64 else raw
            elif isinstance(p, Cas):
                cur += str(tracker.cas_for(p)).encode()
            elif isinstance(p, Pause):
                segs.append((bytes(cur), p.secs))
                cur = bytearray()
            else:
                raise TypeError(p)
        segs.append((bytes(cur), 0))
        return segs


class KeyInfo:
    def __init__(self, raw, kind):
        self.raw = raw
        self.kind = kind            # plain, odd, long, bin
        self.text_ok = kind != "bin"


def apply_effects(op, units, tracker, keys):
    """Turn one operation's reply units into CAS-tracker events."""
    k = op.keys[0] if op.keys else None
    name = keys[k].raw if k is not None else None
    if op.unknown:
        for i in op.keys:
            tracker.unk(i)
        return
    first = units[0][0] if units else b""
    kind = op.kind
    desc = op.kind
    if kind == "store":
        if op.noreply:
            tracker.unk(k)
        elif first == b"STORED\r\n":
            tracker.mut(k)
    elif kind == "arith":
        if op.noreply:
            tracker.unk(k)
        elif first.rstrip(b"\r\n").isdigit():
            tracker.mut(k)
    elif kind == "delete":
        if op.noreply:
            tracker.unk(k)
        elif first == b"DELETED\r\n":
            tracker.mut(k)
    elif kind == "flush":
        for i in range(len(keys)):
            tracker.mut(i)
    elif kind in ("gets", "get"):
        if kind == "gets":
            bykey = {ki.raw: i for i, ki in enumerate(keys)}
            for raw, _ in units:
                toks = raw.rstrip(b"\r\n").split(b" ")
                if toks[0] == b"VALUE" and len(toks) == 5 and toks[1] in bykey:
                    tracker.obs(bykey[toks[1]], int(toks[4]), toks[1], desc)
    elif kind in ("mg", "ms", "md", "ma"):
        fl = op.flags
        if not units:
            if b"q" in fl and kind != "mg":
                tracker.mut(k)      # only the nominal HD is suppressed by q
            return
        code = first[:2]
        ok = code in (b"HD", b"VA")
        if kind == "mg":
            if ok and b"N" in fl:
                tracker.unk(k)
        elif ok:
            tracker.mut(k)
        if ok:
            for t in first.rstrip(b"\r\n").split(b" ")[1:]:
                if t[:1] == b"c" and t[1:].isdigit():
                    tracker.obs(k, int(t[1:]), name, desc)
    # touch, misc: no effect on CAS


# --------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------

PLAIN_SUFFIXES = [b"a", b"b", b"c", b"num", b"cnt", b"x1", b"y2", b"val"]
ODD_SUFFIXES = [b"ctl\x01\x02", b"tab\tk", b"del\x7f", b"hi\xff\xfe\x80",
                b"cr\rmid", b"esc\x1b[0m", b"end\r", b"utf\xc3\xa9"]
BIN_SUFFIXES = [b"bin\x00\x01", b"sp ace", b"nl\nx", b"\x00\xff\x10"]
NUMERIC_VALUES = [b"0", b"1", b"9", b"10", b"99", b"100", b"007", b" 12", b"12 ",
                  b"\t7", b"18446744073709551615", b"18446744073709551614",
                  b"18446744073709551616", b"-5", b"+5", b"abc", b"", b"12abc",
                  b"1 2", b"0x10", b"00000000000000000001", b"4294967296",
                  b"12\r\n34"]
DELTAS = [b"1", b"0", b"5", b"100", b"18446744073709551615",
          b"9223372036854775808", b"00", b"+3", b"4294967296"]
BAD_DELTAS = [b"-1", b"abc", b"18446744073709551616", b"1.5", b"1x", b"0x10", b"-0x1"]
UNKNOWN_CMDS = [b"foo", b"bar baz", b"GET k", b"Get k", b"sett k 0 0 1", b"incrr k 1",
                b"delet k", b"ge", b"ge x", b"g", b"s", b"m", b"mz k", b"mgx k", b"MG k",
                b"MN", b"stat", b"gets\tk", b"get\tk", b"quitx", b"flush_al",
                b"versio", b"touchy k 1", b"x", b"decrement k 1", b"appendx k 0 0 1"]
EMPTY_LINES = [b"\r\n", b"   \r\n", b"\t\r\n", b"\n", b" \n", b"\r\r\n"]
META_VALID = {
    "mg": b"cfhklstuvqONRTPL",
    "ms": b"cCFIkqOTMPL",
    "md": b"qITCkOPL",
    "ma": b"NJDTMqOkctvCPL",
}
MAX_FLAGS = 17


class Gen:
    """Generates the operations of one round from its RNG."""

    def __init__(self, rng, keys, prefix, now):
        self.r = rng
        self.keys = keys
        self.prefix = prefix
        self.now = now

    # ---- small helpers --------------------------------------------------
    def key(self, text=True, plain_bias=0.7):
        r = self.r
        cands = [i for i, k in enumerate(self.keys) if k.text_ok or not text]
        plain = [i for i in cands if self.keys[i].kind == "plain"]
        if plain and r.random() < plain_bias:
            return r.choice(plain)
        return r.choice(cands)

    def miss_key(self):
        return self.prefix + b"miss" + str(self.r.randint(0, 9)).encode()

    def long_key(self):
        n = self.r.choice([251, 252, 300, 600])
        return self.prefix + b"Q" * (n - len(self.prefix))

    def safe(self, lo, hi):
        r = self.r
        return b"x" + bytes(r.choice(SAFE) for _ in range(r.randint(lo, hi)))

    def line(self, toks, odd=True):
        """Join tokens with spaces (sometimes several), + CRLF."""
        r = self.r
        parts = []
        if odd and r.random() < 0.03:
            parts.append(b" " * r.randint(1, 3))
        for j, t in enumerate(toks):
            if j:
                parts.append(b" " * r.randint(2, 4) if odd and r.random() < 0.04 else b" ")
            parts.append(t)
        if odd and r.random() < 0.03:
            parts.append(b" " * r.randint(1, 3))
        parts.append(b"\r\n")
        return parts

    def flags(self):
        r = self.r
        return r.choice([b"0"] * 5 + [b"1", b"65535", b"65536", b"4294967295",
                                      str(r.getrandbits(32)).encode(), b"2147483648"])

    def exptime(self):
        r = self.r
        return r.choice([b"0"] * 5 + [b"100", b"3600", b"2592000", b"-1", b"-100",
                                      b"1000000000", b"2592001",
                                      str(self.now + 10 ** 6).encode(),
                                      str(self.now - 100000).encode()])

    def ttl(self):
        r = self.r
        return r.choice([b"0", b"0", b"100", b"3600", b"-1", b"2592000",
                         str(self.now + 10 ** 6).encode(), b"1000000000"])

    def value(self):
        r = self.r
        x = r.random()
        if x < 0.3:
            return r.choice(NUMERIC_VALUES)
        if x < 0.6:
            return bytes(r.choice(b"abcdefghijklmnopqrstuvwxyz0123456789 -_.")
                         for _ in range(r.randint(0, 20)))
        if x < 0.8:
            return bytes(r.getrandbits(8) for _ in range(r.randint(0, 40)))
        if x < 0.95:
            return bytes(r.choice(b"abcdefghij\r\n") for _ in range(r.randint(100, 3000)))
        return b""

    def cas_ref(self, i):
        r = self.r
        kind = r.choice(["cur", "cur", "cur", "stale", "stale", "rand", "zero"])
        return Cas(i, kind, r.randint(10 ** 15, 10 ** 18))

    def opaque(self):
        r = self.r
        return b"O" + bytes(r.choice(b"abcXYZ0123456789") for _ in range(r.randint(0, 31)))

    # ---- text protocol --------------------------------------------------
    def op_store(self, setup=False):
        r = self.r
        if setup:
            cmd = b"set"
        else:
            cmd = r.choice([b"set"] * 4 + [b"add", b"replace", b"append", b"prepend",
                                          b"cas", b"cas"])
        k = self.key()
        val = r.choice(NUMERIC_VALUES[:12]) if setup and r.random() < 0.5 else self.value()
        toks = [cmd, K(k), self.flags(), b"0" if setup else self.exptime(),
                str(len(val)).encode()]
        if cmd == b"cas":
            toks.append(self.cas_ref(k))
        noreply = (not setup) and r.random() < 0.15
        if noreply:
            toks.append(b"noreply")
        return Op(self.line(toks) + [val, b"\r\n"], "store", [k], noreply=noreply)

    def op_get(self):
        r = self.r
        cmd = r.choice([b"get", b"gets", b"gets", b"gat", b"gats", b"gets"])
        n = r.randint(1, 4) if r.random() < 0.9 else r.randint(10, 30)
        toks, ks = [cmd], []
        if cmd in (b"gat", b"gats"):
            toks.append(self.exptime() if r.random() < 0.8 else r.choice([b"0", b"100"]))
        for _ in range(n):
            if r.random() < 0.15:
                toks.append(self.miss_key())
            else:
                k = self.key()
                ks.append(k)
                toks.append(K(k))
        return Op(self.line(toks), "gets" if cmd.endswith(b"s") else "get", ks)

    def op_arith(self):
        r = self.r
        cmd = r.choice([b"incr", b"decr"])
        k = self.key()
        bad = r.random() < 0.15
        toks = [cmd, K(k), r.choice(BAD_DELTAS if bad else DELTAS + [str(r.getrandbits(64)).encode()])]
        noreply = r.random() < 0.1
        if noreply:
            toks.append(b"noreply")
        return Op(self.line(toks), "arith", [k], noreply=noreply, unknown=bad)

    def op_touch(self):
        r = self.r
        k = self.key()
        toks = [b"touch", K(k), self.exptime()]
        if r.random() < 0.15:
            toks.append(b"noreply")
        return Op(self.line(toks), "touch", [k])

    def op_delete(self):
        r = self.r
        k = self.key()
        form = r.choice(["plain", "plain", "plain", "zero", "noreply", "zero_noreply"])
        toks = [b"delete", K(k)]
        if form.startswith("zero"):
            toks.append(b"0")
        if form.endswith("noreply"):
            toks.append(b"noreply")
        return Op(self.line(toks), "delete", [k], noreply=form.endswith("noreply"))

    def op_flush(self):
        r = self.r
        form = r.choice([b"flush_all", b"flush_all noreply", b"flush_all 0",
                         b"flush_all 0 noreply", b"flush_all -1", b"flush_all 0 x"])
        return Op([form, b"\r\n"], "flush", list(range(len(self.keys))))

    def op_misc(self):
        r = self.r
        form = r.choice([b"version", b"version x", b"verbosity 0", b"verbosity 0 noreply",
                         b"verbosity 0 x", b"mn x", b"verbosity", b"verbosity abc",
                         b"verbosity -1", b"verbosity 0 0 0", b"flush_all abc",
                         b"flush_all 1 2 3", b"flush_all noreply x", b"flush_all x noreply",
                         b"touch", b"incr", b"decr", b"get", b"gets", b"gat", b"gats",
                         b"gat 100", b"gats abc", b"delete", b"cas", b"set", b"add",
                         b"touch k", b"delete k 1", b"delete k x", b"delete k 0 x",
                         b"delete k 0 noreply x", b"incr k", b"incr k 1 2 3"])
        return Op([form, b"\r\n"], "misc", mn_count=1 if form == b"mn x" else 0)

    def op_unknown(self):
        r = self.r
        x = r.random()
        if x < 0.4:
            return Op([r.choice(UNKNOWN_CMDS), b"\r\n"], "misc")
        if x < 0.6:
            return Op([r.choice(EMPTY_LINES)], "misc")
        if x < 0.8:
            body = bytes([r.randint(0x81, 0xff)]) + bytes(
                r.choice([c for c in range(256) if c != 10]) for _ in range(r.randint(0, 60)))
            return Op([body, r.choice([b"\r\n", b"\n"])], "misc")
        # NUL ends the command line for memcached's tokenizer
        k = self.key()
        form = r.choice([[b"get ", K(k), b"\x00junk zz\r\n"], [b"version\x00xx\r\n"],
                         [b"gets ", K(k), b"\x00", K(k), b"\r\n"]])
        return Op(form, "get" if len(form) > 1 else "misc", [k])

    def op_bad_store(self):
        """Malformed storage command lines (framing stays predictable)."""
        r = self.r
        k = self.key()
        cmd = r.choice([b"set", b"add", b"replace", b"append", b"prepend", b"cas"])
        data = self.safe(0, 6)
        cas = [self.cas_ref(k)] if cmd == b"cas" else []
        n = str(len(data)).encode()
        variants = [
            [cmd, K(k), b"0", b"0"],                         # missing bytes
            [cmd, K(k)],
            [cmd, K(k), b"abc", b"0", n] + cas,              # non-numeric flags
            [cmd, K(k), b"0", b"abc", n] + cas,              # non-numeric exptime
            [cmd, K(k), b"0", b"0", b"abc"] + cas,           # non-numeric bytes
            [cmd, K(k), b"0", b"0", b"-1"] + cas,            # negative bytes
            [cmd, K(k), b"0", b"0", n + b"x"] + cas,
            [cmd, K(k), b"-1", b"0", n] + cas,               # negative flags
            [cmd, K(k), b"18446744073709551616", b"0", n] + cas,
            [cmd, K(k), b"4294967296", b"0", n] + cas,       # accepted, flags wrap to 0
            [cmd, K(k), b"0x10", b"0", n] + cas,
            [cmd, K(k), b"0", b"9999999999999999999", n] + cas,
            [cmd, K(k), b"0", b"4294967296", n] + cas,       # accepted, exptime wraps to 0
            [cmd, K(k), b"0", b"2147483648", n] + cas,       # accepted, wraps negative
            [cmd, K(k), b"0", b"0", n] + cas + [b"noreply", b"extra"],
            [cmd, K(k), b"0", b"0", n] + cas + [b"norepl"],
            [b"cas", K(k), b"0", b"0", n],                   # cas without unique
            [b"cas", K(k), b"0", b"0", n, b"abc"],
            [b"cas", K(k), b"0", b"0", n, b"-1"],
            [cmd + b"\t" + b"x", b"0", b"0", n],
        ]
        toks = r.choice(variants)
        if r.random() < 0.2 and toks[-1] not in (b"noreply", b"extra", b"norepl"):
            toks = toks + [b"noreply"]
        return Op(self.line(toks, odd=False) + [data, b"\r\n"], "store", [k], unknown=True)

    def op_bad_chunk(self):
        """Data block whose length does not match <bytes> (framing known)."""
        r = self.r
        k = self.key()
        meta = r.random() < 0.25
        cmd = r.choice([b"set", b"set", b"add", b"replace", b"append", b"prepend", b"cas"])
        form = r.choice(["long", "short", "lf"])
        declared = r.randint(0, 8) if form != "short" else r.randint(2, 10)
        if meta:
            fl = r.choice([[], [b"q"], [b"T0"], [b"c", b"k"], [b"MA"]])
            toks = [b"ms", K(k), str(declared).encode()] + fl
        else:
            toks = [cmd, K(k), self.flags(), b"0", str(declared).encode()]
            if cmd == b"cas":
                toks.append(self.cas_ref(k))
            if r.random() < 0.2:
                toks.append(b"noreply")
        head = self.line(toks, odd=False)
        if form == "long":
            # more data than declared; the rest of the line is read as a command
            data = self.safe(declared, declared + 8)
            body = [data, b"\r\n"]
        elif form == "short":
            # less data than declared: CRLF + filler complete the declared length
            data = self.safe(0, declared - 2)[:declared - 1]
            filler = bytes(r.choice(SAFE) for _ in range(declared - len(data)))
            body = [data, b"\r\n", filler]
        else:
            # LF instead of CRLF after the data
            data = self.safe(declared, declared)[:declared]
            body = [data, b"\n", bytes([r.choice(SAFE)]), b"\r\n"]
        return Op(head + body, "store", [k], unknown=True)

    def op_long_key(self):
        r = self.r
        lk = self.long_key()
        k = self.key()
        data = self.safe(0, 4)
        n = str(len(data)).encode()
        forms = [
            [b"set ", lk, b" 0 0 ", n, b"\r\n", data, b"\r\n"],
            [b"get ", lk, b"\r\n"],
            [b"get ", K(k), b" ", lk, b" ", K(k), b"\r\n"],
            [b"gets ", lk, b"\r\n"],
            [b"gat 100 ", lk, b"\r\n"],
            [b"touch ", lk, b" 100\r\n"],
            [b"delete ", lk, b"\r\n"],
            [b"incr ", lk, b" 1\r\n"],
            [b"mg ", lk, b" v\r\n"],
            [b"ms ", lk, b" ", n, b"\r\n", data, b"\r\n"],
            [b"md ", lk, b"\r\n"],
            [b"ma ", lk, b"\r\n"],
            [b"me ", lk, b"\r\n"],
            [b"set ", self.prefix + b"K" * (250 - len(self.prefix)), b" 0 0 ", n,
             b"\r\n", data, b"\r\n"],   # exactly 250: fine
        ]
        form = r.choice(forms)
        uses_k = any(isinstance(p, K) for p in form)
        return Op(form, "misc", [k] if uses_k else [], unknown=True)

    def op_long_line(self):
        """Long lines that stay under memcached's 2048-byte no-newline limit,
        or get/gets lines longer than that sent in two writes."""
        r = self.r
        x = r.random()
        if x < 0.3:
            return Op([b"x" * r.randint(300, 1900), b"\r\n"], "misc")
        toks, ks = [r.choice([b"get", b"gets"])], []
        target = r.randint(500, 1900) if x < 0.6 else r.randint(2200, 4000)
        size = 4
        while size < target:
            if r.random() < 0.5:
                t = self.miss_key()
                toks.append(t)
                size += len(t) + 1
            else:
                k = self.key()
                ks.append(k)
                toks.append(K(k))
                size += len(self.keys[k].raw) + 1
        parts = []
        lead = b" " * r.randint(0, 100) if r.random() < 0.3 else b""
        if lead:
            parts.append(lead)
        for j, t in enumerate(toks):
            if j:
                parts.append(b" ")
            parts.append(t)
        if target > 2048:
            # cut after ~2100 bytes: memcached keeps waiting for a get/gets line
            acc, out = len(lead), []
            cut = False
            for p in parts:
                out.append(p)
                acc += len(p) if isinstance(p, bytes) else len(self.keys[p.i].raw)
                if not cut and acc > 2100:
                    out.append(Pause(LONG_PAUSE))
                    cut = True
            parts = out
        parts.append(b"\r\n")
        return Op(parts, "gets" if toks[0] == b"gets" else "get", ks)

    def op_too_large(self):
        r = self.r
        k = self.key()
        size = 2 * 1024 * 1024
        if r.random() < 0.5:
            head = [b"set ", K(k), b" 0 0 ", str(size).encode(), b"\r\n"]
        else:
            head = [b"ms ", K(k), b" ", str(size).encode(), b" T0\r\n"]
        return Op(head + [b"a" * size, b"\r\n"], "store", [k], unknown=True)

    # ---- meta protocol --------------------------------------------------
    def _meta_key(self, cmd):
        r = self.r
        k = self.key(text=False, plain_bias=0.6)
        b64 = (not self.keys[k].text_ok) or r.random() < 0.15
        unknown = b64 and len(base64.b64encode(self.keys[k].raw)) > 250
        return k, b64, unknown

    def _meta_flags(self, cmd, k):
        r = self.r
        pool = META_VALID[cmd]
        chosen = r.sample(list(pool), r.randint(0, min(6, len(pool))))
        out = []
        for c in chosen:
            c = bytes([c])
            if c == b"O":
                out.append(self.opaque())
            elif c in (b"N", b"T"):
                out.append(c + self.ttl())
            elif c == b"R":
                out.append(c + r.choice([b"30", b"200", b"5000", b"0"]))
            elif c == b"C":
                out.append([b"C", self.cas_ref(k)])
            elif c == b"F":
                out.append(c + self.flags())
            elif c == b"J":
                out.append(c + r.choice(DELTAS[:5] + [str(r.getrandbits(64)).encode()]))
            elif c == b"D":
                out.append(c + r.choice(DELTAS))
            elif c == b"M":
                modes = {"ms": b"SEAPR", "ma": b"I+D-"}[cmd]
                out.append(c + bytes([r.choice(modes)]))
            elif c in (b"P", b"L"):
                out.append(c + (self.safe(0, 5) if r.random() < 0.5 else b""))
            else:
                out.append(c)
        return out

    def _letters(self, flags):
        return bytes((f[0] if isinstance(f, bytes) else f[0][0]) for f in flags if f)

    def _meta_line(self, toks):
        """Tokens (maybe [b'C', Cas] lists) -> parts with single spaces + CRLF."""
        parts = []
        for j, t in enumerate(toks):
            if j:
                parts.append(b" ")
            if isinstance(t, list):
                parts.extend(t)
            else:
                parts.append(t)
        parts.append(b"\r\n")
        return parts

    def op_mg(self):
        k, b64, unk = self._meta_key("mg")
        flags = self._meta_flags("mg", k)
        if b64:
            flags.insert(self.r.randint(0, len(flags)), b"b")
        return Op(self._meta_line([b"mg", K(k, b64)] + flags), "mg", [k],
                  flags=self._letters(flags), unknown=unk)

    def op_ms(self):
        r = self.r
        k, b64, unk = self._meta_key("ms")
        flags = self._meta_flags("ms", k)
        if b64:
            flags.insert(r.randint(0, len(flags)), b"b")
        val = self.value()
        line = self._meta_line([b"ms", K(k, b64), str(len(val)).encode()] + flags)
        return Op(line + [val, b"\r\n"], "ms", [k], flags=self._letters(flags), unknown=unk)

    def op_md(self):
        k, b64, unk = self._meta_key("md")
        flags = self._meta_flags("md", k)
        if b64:
            flags.insert(self.r.randint(0, len(flags)), b"b")
        return Op(self._meta_line([b"md", K(k, b64)] + flags), "md", [k],
                  flags=self._letters(flags), unknown=unk)

    def op_ma(self):
        k, b64, unk = self._meta_key("ma")
        flags = self._meta_flags("ma", k)
        if b64:
            flags.insert(self.r.randint(0, len(flags)), b"b")
        return Op(self._meta_line([b"ma", K(k, b64)] + flags), "ma", [k],
                  flags=self._letters(flags), unknown=unk)

    def op_me(self):
        k, b64, _ = self._meta_key("mg")
        toks = [b"me", K(k, b64)] + ([b"b"] if b64 else [])
        return Op(self._meta_line(toks), "misc", [k])

    def op_quiet_pipeline(self):
        """Several quiet meta commands followed by mn.  ma commands come
        first: an earlier mg hit in the same unflushed pipeline would change
        whether memcached rewrites the number in place."""
        r = self.r
        n = r.randint(2, 5)
        cmds = sorted((r.choice(["mg", "mg", "ms", "md", "ma"]) for _ in range(n)),
                      key=lambda c: c != "ma")
        parts, ks = [], []
        for c in cmds:
            k, b64, _ = self._meta_key(c)
            ks.append(k)
            flags = [f for f in self._meta_flags(c, k) if not (isinstance(f, bytes) and f[:1] == b"q")]
            flags.append(b"q")
            r.shuffle(flags)
            if b64:
                flags.append(b"b")
            if c == "ms":
                val = self.value()
                parts += self._meta_line([b"ms", K(k, b64), str(len(val)).encode()] + flags)
                parts += [val, b"\r\n"]
            else:
                parts += self._meta_line([c.encode(), K(k, b64)] + flags)
        parts.append(MN)
        return Op(parts, "misc", ks, mn_count=1, unknown=True)

    def op_meta_bad(self):
        """Invalid meta commands: unknown/duplicate flags, bad tokens, ..."""
        r = self.r
        cmd = r.choice(["mg", "ms", "md", "ma"])
        k, b64, _ = self._meta_key(cmd)
        keyt = K(k, b64)
        good = self._meta_flags(cmd, k)[:3]
        if b64:
            good.append(b"b")
        x = r.randint(0, 11)
        if x == 0:
            bad = [r.choice([b"x", b"y", b"z", b"E5", b"E", b"S3", b"a", b"1", b"!",
                             b"\x80", b"\xff", b"W", b"X", b"Z", b"K"])]
        elif x == 1:
            f = r.choice(list(META_VALID[cmd]))
            bad = [bytes([f]) + b"1", bytes([f]) + b"2"] if f in b"NTRCFJDMO" else [bytes([f])] * 2
            if f == ord("M"):
                bad = [b"MI", b"MI"] if cmd == "ma" else [b"MS", b"MS"]
        elif x == 2:
            bad = [b"O" + b"o" * r.randint(32, 40)]
        elif x == 3:
            f = r.choice([c for c in b"NTRCFJD"])
            bad = [bytes([f]) + r.choice([b"", b"abc", b"-", b"1x", b"99999999999999999999"])]
        elif x == 4:
            bad = [r.choice([b"M", b"MX", b"MII", b"Mi", b"Ms"])]
        elif x == 5:
            bad = [b"v"] * 0 + [bytes([c]) for c in b"cfhklstuvqPLOTNR"] + [b"D1", b"J1"]
            bad = bad[:r.randint(MAX_FLAGS + 1, MAX_FLAGS + 4)]
        elif x == 6:
            keyt = r.choice([b"YQ", b"!!!!", b"Y", b"a b"[:1], b"====", b"Zm9v="])
            bad = [b"b"]
            good = [g for g in good if g != b"b"]
        elif x == 7:
            return Op([cmd.encode(), b"\r\n"], "misc", [k], unknown=True)
        elif x == 8 and cmd == "ms":
            data = self.safe(0, 5)
            badlen = r.choice([b"abc", b"-1", b"1x", b"", b"2147483648"])
            toks = [b"ms", keyt] + ([badlen] if badlen else [])
            return Op(self._meta_line(toks) + [data, b"\r\n"], "misc", [k], unknown=True)
        elif x == 9:
            bad = [r.choice([b"I", b"u", b"s", b"t", b"h", b"l", b"f", b"F5", b"J5", b"D5"])]
        elif x == 10:
            bad = [b"v", b"vv"] if cmd != "ms" else [b"k", b"kk"]
        else:
            bad = [b"\t", b"T1\t"]
        flags = good + bad
        r.shuffle(flags)
        toks = [cmd.encode(), keyt]
        tail = []
        if cmd == "ms":
            data = self.safe(0, 6)
            toks.append(str(len(data)).encode())
            tail = [data, b"\r\n"]
        return Op(self._meta_line(toks + flags) + tail, "misc", [k], unknown=True)

    # ---- connection-closing operations ---------------------------------
    def op_closer(self):
        r = self.r
        k = self.key()
        x = r.randint(0, 5)
        if x == 0:
            return Op([b"quit\r\n"], "misc", closes=True)
        if x == 1:
            return Op([b"get ", K(k), b"\r\nquit\r\nget ", K(k), b"\r\n"], "get", [k], closes=True)
        if x == 2:
            return Op([b"quit extra tokens\r\nversion\r\n"], "misc", closes=True)
        if x == 3:
            # > 2048 bytes without a newline, not a get: memcached closes
            n = r.randint(2049, 3000)
            head = r.choice([b"set ", b"mg ", b"foo ", b"incr ", b""])
            return Op([head + b"y" * (n - len(head)), Pause(LONG_PAUSE), b"\r\n"],
                      "misc", closes=True)
        if x == 4:
            # more than 100 leading spaces before "get ": closes too
            return Op([b" " * r.randint(101, 200) + b"get " + b"z " * 1100,
                       Pause(LONG_PAUSE), b"\r\n"], "misc", closes=True)
        return Op([b"mn\r\nquit\r\n"], "misc", mn_count=1, closes=True)

    def op_observe(self, k):
        """An operation that returns the CAS of key id k without changing it."""
        r = self.r
        x = r.randint(0, 3)
        if x == 0 and self.keys[k].text_ok:
            return Op(self.line([b"gets", K(k)]), "gets", [k])
        if x == 1 and self.keys[k].text_ok:
            return Op(self.line([b"gats", r.choice([b"0", b"100", b"3600"]), K(k)]), "gets", [k])
        b64 = not self.keys[k].text_ok
        if b64 and len(base64.b64encode(self.keys[k].raw)) > 250:
            return Op(self.line([b"mn"]), "misc", mn_count=1)
        flags = [b"c"] + r.sample([b"v", b"k", b"s", b"f", b"t", b"h"], r.randint(0, 3))
        r.shuffle(flags)
        if b64:
            flags.append(b"b")
        return Op(self._meta_line([b"mg", K(k, b64)] + flags), "mg", [k], flags=self._letters(flags))

    MUTATORS = ("store", "arith", "delete", "touch", "ms", "md", "ma", "mg")

    # ---- round composition ---------------------------------------------
    WEIGHTS = [
        ("op_store", 18), ("op_get", 11), ("op_arith", 7), ("op_touch", 3),
        ("op_delete", 4), ("op_misc", 4), ("op_flush", 1), ("op_unknown", 3),
        ("op_bad_store", 5), ("op_bad_chunk", 4), ("op_long_key", 2),
        ("op_long_line", 1.5), ("op_too_large", 0.15), ("op_mg", 13),
        ("op_ms", 10), ("op_md", 4), ("op_ma", 7), ("op_quiet_pipeline", 4),
        ("op_me", 0.5), ("op_meta_bad", 7),
    ]

    def round_ops(self):
        r = self.r
        ops = []
        for _ in range(r.randint(3, 6)):
            ops.append(self.op_store(setup=True))
            if r.random() < 0.6:
                ops.append(self.op_observe(ops[-1].keys[0]))
        names = [n for n, _ in self.WEIGHTS]
        weights = [w for _, w in self.WEIGHTS]
        for _ in range(r.randint(12, 36)):
            op = getattr(self, r.choices(names, weights)[0])()
            ops.append(op)
            # often look at the CAS right after a modification, so that the
            # per-server "CAS must change" check has something to bite on
            if op.kind in self.MUTATORS and op.keys and r.random() < 0.45:
                ops.append(self.op_observe(op.keys[0]))
        if r.random() < 0.2:
            ops.append(self.op_closer())
        return ops


def make_keys(rng, prefix):
    keys = [KeyInfo(prefix + s, "plain") for s in rng.sample(PLAIN_SUFFIXES, 4)]
    for s in rng.sample(ODD_SUFFIXES, rng.randint(1, 2)):
        keys.append(KeyInfo(prefix + s, "odd"))
    if rng.random() < 0.3:
        keys.append(KeyInfo(prefix + b"L" * (250 - len(prefix)), "long"))
    if rng.random() < 0.6:
        keys.append(KeyInfo(prefix + rng.choice(BIN_SUFFIXES), "bin"))
    return keys


# --------------------------------------------------------------------------
# Garbage and binary-protocol rounds
# --------------------------------------------------------------------------

def garbage_ascii(rng):
    """Random non-UTF-8 lines (never starting with 0x80) followed by mn."""
    out = bytearray()
    for _ in range(rng.randint(1, 8)):
        body = bytes([rng.randint(0x81, 0xff)]) + bytes(
            rng.choice([c for c in range(256) if c not in (10, 0)])
            for _ in range(rng.randint(0, 120)))
        out += body + rng.choice([b"\r\n", b"\n"])
    return [bytes(out) + MN]


def bin_header(op, key=b"", extras=b"", body=b"", dtype=0, vb=0, opaque=0,
               cas=0, bodylen=None, magic=0x80):
    bl = len(key) + len(extras) + len(body) if bodylen is None else bodylen
    return struct.pack(">BBHBBHIIQ", magic, op, len(key), len(extras), dtype, vb,
                       bl, opaque, cas) + extras + key + body


def garbage_binary(rng, prefix):
    """Binary-protocol packets (magic 0x80 as the very first byte) built from
    opcodes whose replies are deterministic (noop, get/getq/getk/getkq of
    keys that never exist, quit, unknown opcodes), with random opaque,
    vbucket, cas and data-type fields, invalid lengths and trailing junk."""
    pkts = []
    for _ in range(rng.randint(1, 4)):
        x = rng.randint(0, 9)
        opq = rng.getrandbits(32)
        if x <= 2:
            pkts.append(bin_header(0x0A, opaque=opq, vb=rng.getrandbits(16)))
        elif x <= 4:
            op = rng.choice([0x00, 0x09, 0x0C, 0x0D])
            pkts.append(bin_header(op, key=prefix + b"binmiss" + bytes([65 + rng.randint(0, 25)]),
                                   opaque=opq, cas=rng.getrandbits(64)))
        elif x == 5:
            pkts.append(bin_header(rng.randint(0x40, 0xFE), opaque=opq,
                                   body=bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 8)))))
        elif x == 6:
            pkts.append(bin_header(0x0A, key=b"abc", opaque=opq))          # invalid args
        elif x == 7:
            pkts.append(bin_header(0x00, opaque=opq))                      # get without key
        elif x == 8:
            pkts.append(bin_header(0x0A, dtype=rng.randint(1, 255), opaque=opq))
        else:
            pkts.append(bin_header(rng.choice([0x07, 0x17]), opaque=opq))  # quit / quitq
    data = b"".join(pkts)
    if rng.random() < 0.4:
        data += bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 30)))
    return [data]


# --------------------------------------------------------------------------
# Running rounds
# --------------------------------------------------------------------------

class Ctx:
    """Everything needed to run and report one round."""

    def __init__(self, args, rnd):
        self.args = args
        self.round = rnd
        self.rng = random.Random("%d:%d" % (args.seed, rnd))
        self.prefix = b"r%d_%d:" % (args.seed % 1000000, rnd)
        self.sent = [bytearray(), bytearray()]
        self.log = []   # operations of completed batches (for the reproduction)


def send_segments(conns, segs_per_conn, mode, rng):
    """Send per-connection segment lists with the same cut points."""
    nseg = len(segs_per_conn[0])
    for s in range(nseg):
        datas = [segs[s][0] for segs in segs_per_conn]
        pause = segs_per_conn[0][s][1]
        if mode == "split" and max(len(d) for d in datas) > 1:
            fr = sorted(rng.random() for _ in range(rng.randint(1, 6)))
            cuts = [[0] + sorted(set(int(f * len(d)) for f in fr)) + [len(d)] for d in datas]
            npieces = len(fr) + 1
            for p in range(npieces):
                for c, d, cu in zip(conns, datas, cuts):
                    a = cu[p] if p < len(cu) else len(d)
                    b = cu[p + 1] if p + 1 < len(cu) else len(d)
                    c.send(d[a:b])
                pump(conns, rng.uniform(0, 0.002))
        else:
            for c, d in zip(conns, datas):
                c.send(d)
        if pause:
            pump(conns, pause)


def compare_streams(conns, starts, where):
    """Compare the replies received since `starts`; raise Failure on a difference."""
    a, b = conns
    ua = a.units[starts[0][0]:]
    ub = b.units[starts[1][0]:]
    na = [norm_unit(u) for u in ua]
    nb = [norm_unit(u) for u in ub]
    rest_a = bytes(a.buf[a.pos:]) if a.pos >= starts[0][1] else bytes(a.buf[starts[0][1]:])
    rest_b = bytes(b.buf[b.pos:]) if b.pos >= starts[1][1] else bytes(b.buf[starts[1][1]:])
    problem = None
    for i, (x, y) in enumerate(zip(na, nb)):
        if not units_match(x, y):
            problem = "reply unit #%d differs:\n    A: %s\n    B: %s" % (i, show_norm(x), show_norm(y))
            break
    if problem is None and len(na) != len(nb):
        i = min(len(na), len(nb))
        extra, who = (na, "A") if len(na) > len(nb) else (nb, "B")
        problem = "%s sent more reply units; first extra: %s" % (who, show_norm(extra[i]))
    if problem is None and rest_a != rest_b:
        problem = "unterminated trailing bytes differ: A %r, B %r" % (rest_a[:200], rest_b[:200])
    if problem is None and a.closed != b.closed:
        problem = "connection state differs: A %s, B %s" % (
            "closed (%s)" % a.how if a.closed else "open", "closed (%s)" % b.how if b.closed else "open")
    if problem:
        raise Failure("%s: %s" % (where, problem))
    return ua, ub


def run_ops(ctx, conns, trackers, keys, ops, mode, rng, verbose=False):
    """Run ops on the two connections in batches; compare; track CAS.
    Returns the number of batches.  Raises Failure."""
    if mode == "lockstep":
        sizes = [1] * len(ops)
    else:
        sizes = []
        left = len(ops)
        while left:
            n = min(left, rng.randint(5, 25) if mode == "pipelined" else rng.randint(2, 12))
            sizes.append(n)
            left -= n
    idx = 0
    nb = 0
    for n in sizes:
        batch = ops[idx:idx + n]
        idx += n
        nb += 1
        if any(c.closed for c in conns):
            break
        segs = []
        for c, tr in zip(conns, trackers):
            s = []
            for op in batch:
                r = op.render(keys, tr)
                r[-1] = (r[-1][0] + MN, r[-1][1])
                s.extend(r)
            # merge consecutive segments without pauses
            merged = []
            for d, p in s:
                if merged and merged[-1][1] == 0:
                    merged[-1] = (merged[-1][0] + d, p)
                else:
                    merged.append((d, p))
            segs.append(merged)
        starts = [(len(c.units), len(c.buf)) for c in conns]
        mn0 = [c.mn for c in conns]
        for c, s in zip(conns, segs):
            ctx.sent[conns.index(c)] += b"".join(d for d, _ in s)
        expected = sum(op.mn_count + 1 for op in batch)
        send_segments(conns, segs, mode, rng)
        wait(conns, lambda c: c.mn - mn0[conns.index(c)] >= expected, IDLE_SENTINEL)
        where = "batch %d (%d op%s, %s)" % (nb, len(batch), "s" if len(batch) > 1 else "", mode)
        if ctx.args.dump:
            print("--- round %d %s" % (ctx.round, where))
            for name, s, c, st in zip("AB", segs, conns, starts):
                print("  %s sent:  %r" % (name, b"".join(d for d, _ in s)))
                print("  %s reply: %r%s" % (name, bytes(c.buf[st[1]:]),
                                            " [closed: %s]" % c.how if c.closed else ""))
        try:
            ua, ub = compare_streams(conns, starts, where)
        except Failure as e:
            e.batch = (batch, segs, starts)
            raise
        # split per operation and apply CAS effects on each server
        for si, (units, tr) in enumerate(zip((ua, ub), trackers)):
            per_op = split_per_op(batch, units)
            if per_op is None:
                if verbose:
                    print("  note: framing of %s not as expected; CAS check reset" % where)
                for op in batch:
                    for i in (op.keys or []):
                        tr.unk(i)
                continue
            for op, u in zip(batch, per_op):
                try:
                    apply_effects(op, u, tr, keys)
                except Failure as e:
                    e.batch = (batch, segs, starts)
                    raise
        ctx.log.extend(batch)
    return nb


def split_per_op(batch, units):
    segs, cur = [], []
    for u in units:
        if u[0] == b"MN\r\n":
            segs.append(cur)
            cur = []
        else:
            cur.append(u)
    need = sum(op.mn_count + 1 for op in batch)
    closes = batch[-1].closes
    if len(segs) != need and not closes:
        return None
    out, j = [], 0
    for op in batch:
        n = op.mn_count + 1
        chunk = [u for s in segs[j:j + n] for u in s]
        if j + n > len(segs):
            chunk += cur
        out.append(chunk)
        j += n
    return out


def open_pair(args):
    return [Conn(args.port_a, "A"), Conn(args.port_b, "B")]


def run_round(args, rnd, verbose=False):
    """Run round `rnd`.  Returns (kind, n_ops).  Raises Failure with context."""
    ctx = Ctx(args, rnd)
    rng = ctx.rng
    kind = "normal"
    if rnd % 10 == 7:
        kind = "garbage"
    elif rnd % 10 == 3 and not args.no_binary:
        kind = "binary"
    conns = open_pair(args)
    try:
        if kind in ("garbage", "binary"):
            data = garbage_ascii(rng) if kind == "garbage" else garbage_binary(rng, ctx.prefix)
            for c in conns:
                c.send(data[0])
            # the ASCII garbage ends with mn; binary garbage is read until silence
            done = (lambda c: c.mn >= 1) if kind == "garbage" else (lambda c: False)
            wait(conns, done, IDLE_GARBAGE)
            a, b = conns
            if bytes(a.buf) != bytes(b.buf) or a.closed != b.closed:
                f = Failure("%s round: replies or connection state differ" % kind)
                f.raw = (data[0], bytes(a.buf), bytes(b.buf), a.closed, b.closed)
                raise f
            return kind, 1
        now = int(time.time())
        keys = make_keys(rng, ctx.prefix)
        gen = Gen(rng, keys, ctx.prefix, now)
        ops = gen.round_ops()
        mode = rng.choice(["lockstep", "pipelined", "split"])
        trackers = [Tracker("A"), Tracker("B")]
        ctx.keys, ctx.ops, ctx.mode = keys, ops, mode
        try:
            run_ops(ctx, conns, trackers, keys, ops, mode, rng, verbose)
        except Failure as e:
            e.ctx = ctx
            e.conns = conns
            raise
        if verbose:
            print("round %d: %s, %d ops, closed=%s" % (rnd, mode, len(ops), conns[0].closed))
        return kind, len(ops)
    finally:
        for c in conns:
            c.close()


# --------------------------------------------------------------------------
# Reproduction / shrinking
# --------------------------------------------------------------------------

def replay(args, keys, ops, mode="lockstep", rng_seed=0, deadline=None):
    """Replay ops on fresh connections after flush_all.  Returns None if
    everything matched, else (failing op index, Failure, per-op log)."""
    conns = open_pair(args)
    try:
        for c in conns:
            c.send(b"flush_all\r\n" + MN)
        wait(conns, lambda c: c.mn >= 1, IDLE_SENTINEL)
        trackers = [Tracker("A"), Tracker("B")]
        rng = random.Random(rng_seed)
        log = []
        batches = [[op] for op in ops] if mode == "lockstep" else [ops]
        done = 0
        for batch in batches:
            if any(c.closed for c in conns):
                return None
            if deadline is not None and time.time() > deadline:
                return None
            starts = [(len(c.units), len(c.buf)) for c in conns]
            sent = []
            segs = []
            for c, tr in zip(conns, trackers):
                s = []
                for op in batch:
                    r = op.render(keys, tr)
                    r[-1] = (r[-1][0] + MN, r[-1][1])
                    s.extend(r)
                segs.append(s)
                sent.append(b"".join(d for d, _ in s))
            mn0 = [c.mn for c in conns]
            expected = sum(op.mn_count + 1 for op in batch)
            send_segments(conns, segs, "lockstep", rng)
            wait(conns, lambda c: c.mn - mn0[conns.index(c)] >= expected, IDLE_SENTINEL)
            replies = [bytes(c.buf[st[1]:]) for c, st in zip(conns, starts)]
            log.append((batch, sent, replies))
            try:
                ua, ub = compare_streams(conns, starts, "replay")
                for units, tr in zip((ua, ub), trackers):
                    per_op = split_per_op(batch, units)
                    if per_op is None:
                        for op in batch:
                            for i in op.keys:
                                tr.unk(i)
                        continue
                    for op, u in zip(batch, per_op):
                        apply_effects(op, u, tr, keys)
            except Failure as e:
                return (done + len(batch) - 1, e, log)
            done += len(batch)
        return None
    finally:
        for c in conns:
            c.close()


def shrink(args, keys, ops, budget=8.0):
    """Greedy one-at-a-time removal keeping the failure on the last op."""
    deadline = time.time() + budget
    res = replay(args, keys, ops)
    if res is None:
        res = replay(args, keys, ops, mode="pipelined")
        if res is None:
            return None, None
        return ops, res
    ops = ops[:res[0] + 1]
    best = res
    i = len(ops) - 2
    while i >= 0 and time.time() < deadline:
        cand = ops[:i] + ops[i + 1:]
        r = replay(args, keys, cand, deadline=deadline)
        if r is not None and r[0] == len(cand) - 1:
            ops, best = cand, r
        i -= 1
    return ops, best


def report(args, rnd, e):
    out = sys.stdout
    w = out.write
    w("\n=== MISMATCH ===\n")
    w("seed=%d round=%d   rerun: python3 %s %d %d --seed %d --round %d\n"
      % (args.seed, rnd, sys.argv[0], args.port_a, args.port_b, args.seed, rnd))
    w("%s\n" % e)
    w("(normalised forms: c<CAS> = any CAS number, t123~ / l0~ = compared with "
      "+-%d s slack, VERSION <v> = any version)\n" % TTL_SLACK)
    raw = getattr(e, "raw", None)
    if raw is not None:
        data, ra, rb, ca, cb = raw
        w("\nbytes sent (same to both):\n  %r\n" % data)
        w("reply A (%s): %r\n" % ("closed" if ca else "open", ra))
        w("reply B (%s): %r\n" % ("closed" if cb else "open", rb))
        w("\nminimal reproduction: send the bytes above on a fresh connection to each server.\n")
        return
    ctx = getattr(e, "ctx", None)
    batch = getattr(e, "batch", None)
    if ctx is None or batch is None:
        return
    ops, segs, starts = batch
    conns = e.conns
    w("transport mode: %s\n" % ctx.mode)
    sa, sb = (b"".join(d for d, _ in s) for s in segs)
    w("\nbytes sent to A in the failing batch:\n  %r\n" % sa)
    w("bytes sent to B: %s\n" % ("same as A" if sa == sb else "\n  %r" % sb))
    for name, c, st in zip("AB", conns, starts):
        w("reply from %s (%s):\n  %r\n" % (name, "closed: %s" % c.how if c.closed else "open",
                                          bytes(c.buf[st[1]:])))
    w("\nshrinking (replaying one operation at a time after flush_all)...\n")
    upto = ctx.log + list(ops)
    try:
        small, res = shrink(args, ctx.keys, upto)
    except (OSError, HarnessError) as ex:
        small, res = None, None
        w("  replay failed: %s\n" % ex)
    if small is None:
        w("  could not reproduce outside the original transport timing; the whole round "
          "so far was (bytes to A):\n  %r\n" % bytes(ctx.sent[0]))
        return
    idx, err, log = res
    w("minimal reproduction (%d operation%s, each followed by mn):\n"
      % (len(small), "s" if len(small) > 1 else ""))
    allbytes = bytearray()
    for n, (batch, sent, replies) in enumerate(log, 1):
        w("  %d. send  %r\n" % (n, sent[0]))
        if sent[1] != sent[0]:
            w("     (to B, its own CAS numbers: %r)\n" % sent[1])
        w("     A --> %r\n" % replies[0])
        w("     B --> %r\n" % replies[1])
        allbytes += sent[0]
    w("  failure: %s\n" % err)
    w("\n  one-shot (CAS numbers are A's):\n  python3 -c \"import socket,time;"
      "s=socket.create_connection(('127.0.0.1',PORT));s.sendall(b'flush_all\\r\\n'+%r);"
      "time.sleep(.3);print(s.recv(1<<20))\"\n" % bytes(allbytes))


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def check_settings(args):
    """Warn when a server is a memcached running its segmented LRU.

    With `lru_segmented yes` (memcached's default) a fetched item in the
    COLD LRU is bumped asynchronously by a background thread which holds a
    reference meanwhile; incr/decr/ma then store their result in a new,
    unpadded item instead of rewriting the old one in place padded with
    spaces, so the stored value depends on timing.  Starting the reference
    with `-o no_lru_maintainer` (which turns lru_segmented off) makes it
    deterministic.  Servers that do not answer `stats settings` are ignored."""
    for name, port in (("A", args.port_a), ("B", args.port_b)):
        try:
            c = Conn(port, name)
        except OSError:
            continue
        try:
            c.send(b"stats settings\r\n" + MN)
            wait([c], lambda x: x.mn >= 1, IDLE_SENTINEL)
            if b"STAT lru_segmented yes" in bytes(c.buf):
                print("warning: server %s (port %d) runs memcached's segmented LRU; incr/decr "
                      "padding can then vary with timing and cause rare false mismatches. "
                      "Start it with -o no_lru_maintainer." % (name, port))
        finally:
            c.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("port_a", type=int, help="reference server (real memcached)")
    ap.add_argument("port_b", type=int, help="server under test")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--round", type=int, default=None, help="run only this round")
    ap.add_argument("--no-binary", action="store_true",
                    help="skip the binary-protocol (0x80 first byte) rounds")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--dump", action="store_true",
                    help="print every batch sent and both replies")
    args = ap.parse_args(argv)

    t0 = time.time()
    try:
        conns = open_pair(args)
    except OSError as ex:
        print("cannot connect: %s" % ex)
        return 2
    try:
        for c in conns:
            c.send(b"flush_all\r\n" + MN)
        wait(conns, lambda c: c.mn >= 1, IDLE_SENTINEL)
        try:
            compare_streams(conns, [(0, 0), (0, 0)], "initial flush_all")
        except Failure as e:
            print("=== MISMATCH ===\n%s\nsent: %r" % (e, b"flush_all\r\n" + MN))
            return 1
    finally:
        for c in conns:
            c.close()

    check_settings(args)
    rounds = [args.round] if args.round is not None else range(args.rounds)
    nops = 0
    kinds = {}
    for rnd in rounds:
        try:
            kind, n = run_round(args, rnd, args.verbose)
        except Failure as e:
            report(args, rnd, e)
            return 1
        except (HarnessError, OSError) as ex:
            print("harness error in round %d: %s" % (rnd, ex))
            return 2
        nops += n
        kinds[kind] = kinds.get(kind, 0) + 1
    print("OK: %d rounds (%s), %d operations, all replies matched; CAS checks: %d "
          "changed-after-modification, %d unchanged-otherwise (seed %d, %.1fs)"
          % (len(rounds), ", ".join("%d %s" % (v, k) for k, v in sorted(kinds.items())),
             nops, Tracker.checks["changed"], Tracker.checks["unchanged"], args.seed,
             time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
