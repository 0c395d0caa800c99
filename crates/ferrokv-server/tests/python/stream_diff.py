#!/usr/bin/env python3
"""Differential tester for the Redis STREAM command family (RESP2).

Usage:
    python3 stream_diff.py PORT_A PORT_B [--seed N] [--rounds R] [--round R]
                           [--verbose]

PORT_A is the reference (a real redis-server 7.0.x), PORT_B the server under
test; both on 127.0.0.1.  The same seeded sequence of stream commands is sent
to both servers and every pair of replies is compared after the few
normalisations listed below.  Exit status: 0 when every reply matched, 1 on
the first mismatch (the seed, the round, the command as sent to each server,
both replies, raw and normalised, and the previous commands of the round are
printed, with a command line that reruns just that round), 2 on a usage or
connection error (or when the reference itself stops answering).  --round R
runs only round R of the seed (default: rounds 0..R-1 with --rounds R,
R = 30); --verbose prints every command with A's (normalised) reply.  Only
the Python standard library is used: raw sockets and a small RESP2
encoder/parser of our own.

How a run is organised
----------------------
* FLUSHALL is sent once to both servers at the start.
* Every round opens fresh connections, has its own RNG derived from
  (seed, round) -- so `--round R` replays round R alone -- and uses key names
  with a prefix unique to the seed and the round (`sd<seed>_<round>:`), so
  rounds never see each other's keys.
* At the start of a round both servers get `CONFIG SET
  stream-node-max-entries V` with V drawn from {2, 3, 5, 10, 100}: small
  values split the streams into many radix-tree nodes, which exercises node
  splitting, `radix-tree-keys` and approximate (`~`) trimming, whose result
  depends on node boundaries.  At the end of the round (also after a
  mismatch) it is set back to 100.
* A round works on 2-3 stream keys, a string key (SET at the start, to get
  WRONGTYPE; never deleted) and a key that is missing at the start.  Each
  stream key first gets 2-12 entries and, each with probability 0.6,
  consumer groups g1 and g2 (XGROUP CREATE at 0, $ or an existing ID), so
  that the group commands have something to work on.  Then the round sends
  80-160 generated commands, one at a time to both servers (lock-step), then
  a state dump (XINFO STREAM FULL, XRANGE - +, XINFO GROUPS, XINFO CONSUMERS
  and XPENDING of every group it knows about) so that a divergence of state
  that no reply showed yet is still caught.
* Commands are chosen among XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XREAD,
  XSETID, XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER, HELP),
  XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO (STREAM [FULL [COUNT]],
  GROUPS, CONSUMERS, HELP), TYPE, OBJECT ENCODING, EXISTS, DEL and an unknown
  command.  About three quarters are well-formed (many of those still get an
  error: an ID not greater than the top item, NOGROUP, BUSYGROUP, ...); the
  rest are invalid on purpose: malformed IDs (`abc`, `1-`, `-1`, overflowing
  numbers, ...), bad numbers, incompatible options (LIMIT without `~`,
  MAXLEN with MINID, `$` in XREADGROUP, `>` in XREAD, ...), wrong arity,
  unknown subcommands, keywords in random case, and a generic mutation that
  truncates the command or inserts, replaces or duplicates a token anywhere
  after the key (for XREAD/XREADGROUP: anywhere before STREAMS).
* The generator is on-line: it reads the reference's replies (after
  normalisation) to keep a rough model of each key (its last ID, IDs that
  exist, its groups, an upper bound of its length) so that it can produce
  mostly meaningful commands.  The model only steers the generation; nothing
  is checked against it.  Since the reference is deterministic, a rerun of a
  seed sends the same commands (except the TIME values of XCLAIM, computed
  from the clock).

Keeping the replies deterministic
---------------------------------
* Most IDs are explicit (`ms-seq`, or `ms-*` with an explicit ms, whose
  sequence part is deterministic).  Explicit IDs use small ms values (or the
  extreme 18446744073709551615), never values on the scale of the clock.
* A bare `*` (an ID from the server's clock) is used only in about 40% of
  the rounds, and then only on one designated "clock" key of that round.  The
  n-th successful `XADD <clock key> ... *` of a round defines placeholder
  <id#n>: for each server the harness records which ID it generated.  In every
  later reply of that server a bulk string equal to one of its generated IDs
  is replaced by the placeholder, and a command that refers to <id#n> (also
  as `(<id#n>`) is rendered, per server, with that server's own ID.  Only
  ordering-preserving uses are made of them (no derived IDs, no incomplete
  IDs of clock scale), so both servers see equivalent commands.  When the
  clock key is deleted the placeholders are forgotten (a later `*` may
  generate the very same ID again on one server and not on the other).
* The clock key never gets approximate (`~`) trimming and at most 40
  XADDs between creations: its listpack nodes stay far below
  stream-node-max-bytes (4096) so that the byte size of clock-derived IDs,
  which differs between the servers, can never move a node boundary.  Other
  keys may reach the byte limit with stream-node-max-entries 100; they are
  deterministic, so there the server under test must split like Redis does.
* Every key whose length may exceed 60 gets an exact MAXLEN trim with its
  next XADD, which keeps replies short.
* Idle/delivery times are only compared as "recent" or "old" (see below).
  To make that and every min-idle filter deterministic the generator only
  uses min-idle thresholds of 0 (or negative, or garbage) or 1000000 ms,
  and XCLAIM IDLE/TIME values that put the delivery time either within a
  few ms of now (IDLE 0 or 5; TIME in the future, or IDLE so large that the
  time would be negative, both of which Redis clamps to now) or at least
  10^7 ms in the past (IDLE >= 10^7, TIME 0, 1 or now - 10^8).  The generic
  mutation never touches a min-idle argument or inserts IDLE.
* BLOCK is used only with a 1 ms timeout (or an invalid one), so a command
  that would block returns at once with a null reply; generic mutations are
  never applied to a command with BLOCK and never insert BLOCK or `*`.

Normalisations (everything else is compared exactly; error texts must match
byte for byte)
--------------
1. Generated IDs become <id#n> placeholders, per server (above): a bulk
   string equal to one, or an occurrence inside an error text (Redis echoes
   some arguments, e.g. `Unrecognized XCLAIM option '<id>'`).
2. XPENDING extended form: the idle time of each entry (third element)
   becomes <recent> (idle < 500000 ms) or <old>.
3. XINFO STREAM [FULL]: the value of `radix-tree-nodes` (an implementation
   detail of the rax) becomes <ignored>.  In the FULL form the `delivery-time`
   of each group PEL entry, the `seen-time` of each consumer and the
   delivery time in each consumer PEL entry become <recent> / <old> (by
   their age, now - value).
4. XINFO CONSUMERS: the `idle` value becomes <recent> / <old>.
5. Redis 7.2 added `active-time` (consumers in XINFO STREAM FULL) and
   `inactive` (XINFO CONSUMERS); such name/value pairs are dropped from B's
   reply before comparing (the 7.0 reference never has them).
"""

import argparse
import random
import re
import socket
import sys
import time

HOST = "127.0.0.1"
REPLY_TIMEOUT = 5.0     # no single reply may take longer than this
LIVE_CAP = 60           # force an exact trim on XADD when a key may hold this many entries
CLOCK_CAP = 40          # at most this many XADDs on the clock key between creations
RECENT_MS = 500000      # idle below this is "recent", above it "old"
OLD_IDLE = 1000000      # the only positive min-idle threshold used
LOG_KEEP = 10           # previous commands shown in a mismatch report
MAX64 = 18446744073709551615
NODE_SIZES = [2, 3, 5, 10, 100, 100]
DEFAULT_NODE_SIZE = 100


# --------------------------------------------------------------------------
# Wire: RESP2 encoding and parsing
# --------------------------------------------------------------------------

def encode(args):
    """A command as a RESP2 array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n" % len(a))
        out.append(a)
        out.append(b"\r\n")
    return b"".join(out)


class Incomplete(Exception):
    """The buffer does not yet hold a whole reply."""


class BadReply(Exception):
    """The bytes received are not valid RESP2."""


def parse(buf, pos):
    """Parse one reply starting at buf[pos].  Returns (value, next position).

    Values: ("+", bytes) status, ("-", bytes) error, (":", int) integer,
    ("$", bytes or None) bulk string, ("*", list or None) array.  Raises
    Incomplete or BadReply."""
    nl = buf.find(b"\r\n", pos)
    if nl < 0:
        raise Incomplete()
    tag = bytes(buf[pos:pos + 1])
    line = bytes(buf[pos + 1:nl])
    pos = nl + 2
    if tag == b"+" or tag == b"-":
        return (tag.decode(), line), pos
    if tag == b":":
        try:
            return (":", int(line)), pos
        except ValueError:
            raise BadReply("bad integer %r" % line)
    if tag in (b"$", b"*"):
        try:
            n = int(line)
        except ValueError:
            raise BadReply("bad length %r" % line)
        if n < -1:
            raise BadReply("bad length %r" % line)
        if tag == b"$":
            if n == -1:
                return ("$", None), pos
            if len(buf) < pos + n + 2:
                raise Incomplete()
            if buf[pos + n:pos + n + 2] != b"\r\n":
                raise BadReply("bulk string not followed by CRLF")
            return ("$", bytes(buf[pos:pos + n])), pos + n + 2
        if n == -1:
            return ("*", None), pos
        items = []
        for _ in range(n):
            v, pos = parse(buf, pos)
            items.append(v)
        return ("*", items), pos
    raise BadReply("unknown reply type byte %r" % tag)


class NoReply(Exception):
    """A server did not produce a (valid) reply."""


class Conn:
    """One client connection to one server."""

    def __init__(self, port, name):
        self.name = name
        self.sock = socket.create_connection((HOST, port), timeout=REPLY_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.dead = None      # why the connection is unusable, once it is

    def send(self, args):
        if self.dead:
            return
        try:
            self.sock.sendall(encode(args))
        except socket.timeout:
            self.dead = "send timed out (server not reading?)"
        except OSError as e:
            self.dead = "send failed: %s" % e

    def read(self):
        """Read one reply: (value, raw bytes).  Raises NoReply."""
        if self.dead:
            raise NoReply(self.dead)
        deadline = time.time() + REPLY_TIMEOUT
        while True:
            if self.buf:
                try:
                    v, pos = parse(self.buf, 0)
                    raw = bytes(self.buf[:pos])
                    del self.buf[:pos]
                    return v, raw
                except Incomplete:
                    pass
                except BadReply as e:
                    self.dead = "protocol error: %s (buffer %r)" % (e, bytes(self.buf[:200]))
                    raise NoReply(self.dead)
            left = deadline - time.time()
            if left <= 0:
                self.dead = "no reply within %.0f s" % REPLY_TIMEOUT
                raise NoReply(self.dead)
            self.sock.settimeout(left)
            try:
                d = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError as e:
                self.dead = "connection error: %s" % e
                raise NoReply(self.dead)
            if not d:
                self.dead = "connection closed by the server"
                raise NoReply(self.dead)
            self.buf += d

    def call(self, args):
        self.send(args)
        return self.read()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


# --------------------------------------------------------------------------
# Command tokens, placeholders, display
# --------------------------------------------------------------------------

class Ph:
    """Token standing for the n-th ID generated by `XADD <clock> ... *`;
    `pre` is b"(" for the exclusive form."""
    __slots__ = ("n", "pre")

    def __init__(self, n, pre=b""):
        self.n = n
        self.pre = pre

    def excl(self):
        return Ph(self.n, b"(")

    def __eq__(self, other):
        return isinstance(other, Ph) and (self.n, self.pre) == (other.n, other.pre)

    def __hash__(self):
        return hash((self.n, self.pre))

    def __repr__(self):
        return "%s<id#%d>" % (self.pre.decode(), self.n)


class IdRegistry:
    """Per-server record of the IDs generated by `*` (placeholder <-> value)."""

    def __init__(self):
        self.count = 0
        self.val = [{}, {}]   # placeholder number -> ID bytes, per server
        self.num = [{}, {}]   # ID bytes -> placeholder number, per server

    def add(self, va, vb):
        self.count += 1
        n = self.count
        for srv, v in ((0, va), (1, vb)):
            self.val[srv][n] = v
            self.num[srv][v] = n
        return n

    def clear(self):
        self.val = [{}, {}]
        self.num = [{}, {}]


def render(toks, srv, reg):
    """The byte strings sent to server `srv` for a token list."""
    out = []
    for t in toks:
        if isinstance(t, Ph):
            v = reg.val[srv].get(t.n)
            if v is None:   # forgotten (clock key deleted): send something inert
                v = b"<forgotten-id>"
            out.append(t.pre + v)
        else:
            out.append(t)
    return out


def q(b):
    """A byte string quoted like redis-cli does when needed."""
    if b and all(33 <= c < 127 and c not in b'"\'\\' for c in b):
        return b.decode()
    s = []
    for c in b:
        if c == 0x22 or c == 0x5c:
            s.append("\\" + chr(c))
        elif 32 <= c < 127:
            s.append(chr(c))
        elif c == 10:
            s.append("\\n")
        elif c == 13:
            s.append("\\r")
        else:
            s.append("\\x%02x" % c)
    return '"' + "".join(s) + '"'


def show_cmd(toks):
    return " ".join(repr(t) if isinstance(t, Ph) else q(t) for t in toks)


def fmt(v):
    """One-line display of a (possibly normalised) reply."""
    t = v[0]
    if t == "+":
        return "+" + v[1].decode("latin-1")
    if t == "-":
        return "(error) " + v[1].decode("latin-1")
    if t == ":":
        return "(integer) %d" % v[1]
    if t == "$":
        return "(nil)" if v[1] is None else q(v[1])
    if t == "*":
        if v[1] is None:
            return "(nil array)"
        return "[" + ", ".join(fmt(x) for x in v[1]) + "]"
    if t == "id":
        return "<id#%d>" % v[1]
    if t == "age":
        return "<%s>" % v[1]
    if t == "ignored":
        return "<ignored>"
    if t == "noreply":
        return "<NO REPLY: %s>" % v[1]
    return repr(v)


# --------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------

def age_bucket(ms):
    return ("age", "recent" if ms < RECENT_MS else "old")


def abs_bucket(v, now_ms):
    """Bucket for an absolute timestamp (ms): by its age."""
    if v[0] != ":":
        return v
    return age_bucket(now_ms - v[1])


def idle_bucket(v):
    if v[0] != ":":
        return v
    return age_bucket(v[1])


ID_IN_TEXT = re.compile(rb"(?<![0-9])[0-9]+-[0-9]+(?![0-9])")


def rewrite_ids(v, num):
    """Replace bulk strings that are generated IDs of this server by ("id", n),
    and such IDs inside error/status texts (Redis echoes some arguments, e.g.
    "Unrecognized XCLAIM option '<id>'") by the text <id#n>."""
    t = v[0]
    if t == "$" and v[1] is not None and v[1] in num:
        return ("id", num[v[1]])
    if t in ("-", "+") and num and b"-" in v[1]:
        return (t, ID_IN_TEXT.sub(
            lambda mo: b"<id#%d>" % num[mo.group()] if mo.group() in num else mo.group(),
            v[1]))
    if t == "*" and v[1] is not None:
        return ("*", [rewrite_ids(x, num) for x in v[1]])
    return v


def as_map(v):
    """The list of a flat name/value array reply, or None if v is not one."""
    if v[0] != "*" or v[1] is None or len(v[1]) % 2:
        return None
    items = v[1]
    for i in range(0, len(items), 2):
        if items[i][0] != "$" or items[i][1] is None:
            return None
    return items


def map_edit(v, edits, drop=()):
    """Apply edits {name: fn(value)} to a flat map reply, dropping `drop` names."""
    items = as_map(v)
    if items is None:
        return v
    out = []
    for i in range(0, len(items), 2):
        name, val = items[i][1], items[i + 1]
        if name in drop:
            continue
        if name in edits:
            val = edits[name](val)
        out += [items[i], val]
    return ("*", out)


def list_edit(v, fn):
    """Apply fn to each element of an array reply."""
    if v[0] != "*" or v[1] is None:
        return v
    return ("*", [fn(x) for x in v[1]])


def elem_edit(v, idx, fn, size):
    """Apply fn to element idx of an array reply of exactly `size` elements."""
    if v[0] != "*" or v[1] is None or len(v[1]) != size:
        return v
    items = list(v[1])
    items[idx] = fn(items[idx])
    return ("*", items)


def norm_xinfo_stream(v, srv, now_ms):
    drop = (b"active-time",) if srv == 1 else ()

    def consumer(c):
        return map_edit(c, {
            b"seen-time": lambda x: abs_bucket(x, now_ms),
            b"pending": lambda pl: list_edit(
                pl, lambda e: elem_edit(e, 1, lambda x: abs_bucket(x, now_ms), 3)),
        }, drop)

    def group(g):
        return map_edit(g, {
            b"pending": lambda pl: list_edit(
                pl, lambda e: elem_edit(e, 2, lambda x: abs_bucket(x, now_ms), 4)),
            b"consumers": lambda cl: list_edit(cl, consumer),
        })

    def groups(gv):
        # a count in the plain form, a list of group maps in the FULL form
        return list_edit(gv, group) if gv[0] == "*" else gv

    return map_edit(v, {b"radix-tree-nodes": lambda x: ("ignored",),
                        b"groups": groups})


def normalise(v, toks, srv, reg):
    """Normalised, comparable form of reply v of server srv to command toks."""
    if v[0] == "noreply":
        return v
    v = rewrite_ids(v, reg.num[srv])
    if v[0] != "*" or v[1] is None:
        return v
    now_ms = int(time.time() * 1000)
    cmd = toks[0].upper() if toks and not isinstance(toks[0], Ph) else b""
    sub = toks[1].upper() if len(toks) > 1 and not isinstance(toks[1], Ph) else b""
    if cmd == b"XPENDING":
        # extended form: a list of [id, consumer, idle, deliveries]; the summary
        # form starts with an integer and is left alone
        if all(x[0] == "*" and x[1] is not None and len(x[1]) == 4 and x[1][2][0] == ":"
               for x in v[1]):
            return list_edit(v, lambda e: elem_edit(e, 2, idle_bucket, 4))
    elif cmd == b"XINFO" and sub == b"STREAM":
        return norm_xinfo_stream(v, srv, now_ms)
    elif cmd == b"XINFO" and sub == b"CONSUMERS":
        drop = (b"inactive",) if srv == 1 else ()
        return list_edit(v, lambda c: map_edit(c, {b"idle": idle_bucket}, drop))
    return v


# --------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------

# Malformed stream IDs (each is rejected by Redis wherever an ID is parsed,
# except where a command gives some of them a meaning: `-`, `+`, `$`, `>`).
MALFORMED = [b"abc", b"1-", b"-1", b"-", b"+", b"", b"1-2-3", b"1-abc", b"abc-1",
             b" 1-1", b"1 -1", b"0x10", b"18446744073709551616-0",
             b"1-18446744073709551616", b"18446744073709551616", b"1.5-0", b"-1-0",
             b"1--1", b"$", b">", b"*-1", b"1-*-*", b"+1-1", b"1e3", b"(", b"((1-1"]

# Tokens used by the generic mutation.  Never `*` (a clock ID on a key that
# is not the clock key), BLOCK (could block for ever with a 0 after it),
# STREAMS, or IDLE (a small min-idle would make XPENDING timing-dependent).
GARBAGE = [b"", b"abc", b"-1", b"0", b"1", b"2", b"100", b"-", b"+", b"$", b">", b"(1",
           b"1-", b"1-1", b"0-0", b"0-1", b"18446744073709551615", b"18446744073709551616",
           b"9223372036854775807", b"-9223372036854775808", b"1.5", b"COUNT", b"FULL",
           b"MKSTREAM", b"LIMIT", b"~", b"=", b"NOACK", b"JUSTID", b"FORCE", b"TIME",
           b"RETRYCOUNT", b"LASTID", b"ENTRIESREAD", b"ENTRIESADDED", b"MAXDELETEDID",
           b"MAXLEN", b"MINID", b"NOMKSTREAM", b"GROUP", b"foo", b"count", b"maxlen",
           b"justid", b"\x00\xff"]

FIELDS = [b"f", b"g", b"h", b"name"]
GROUPS = [b"g1", b"g2", b"g3"]
CONSUMERS = [b"c1", b"c2", b"c3"]


def parse_id(b):
    """(ms, seq) of an explicit full or ms-only ID, else None."""
    if not isinstance(b, bytes):
        return None
    ms, sep, seq = b.partition(b"-")
    if not ms.isdigit() or (sep and not seq.isdigit()):
        return None
    ms, seq = int(ms), int(seq) if sep else 0
    if ms > MAX64 or seq > MAX64:
        return None
    return (ms, seq)


class KeyModel:
    """What the generator believes about one key (from A's replies)."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.last = None        # (ms, seq) of the last explicit ID, None if none/timed
        self.timed = False      # its last ID came from the clock
        self.known = []         # IDs added (bytes or Ph); some may be gone
        self.live = 0           # upper bound of its length
        self.adds = 0           # roughly entries-added
        self.lifetime = 0       # XADDs since it was created
        self.groups = []        # consumer groups believed to exist
        self.delivered = {}     # group -> IDs it delivered (XREADGROUP), likely pending


class Op:
    """One generated command.

    toks: the tokens (bytes or Ph).  fixed: tokens up to this index are never
    touched by the generic mutation (command, subcommand, key, min-idle...);
    hi: insertion/replacement only below this index (None: end of command).
    nomut: no generic mutation at all.  info: what observe() needs."""

    def __init__(self, toks, kind, keys=(), fixed=1, hi=None, nomut=False, **info):
        self.toks = toks
        self.kind = kind
        self.keys = list(keys)
        self.fixed = fixed
        self.hi = hi
        self.nomut = nomut
        self.info = info


class Gen:
    """Generates the commands of one round."""

    def __init__(self, rng, prefix, nkeys, use_clock):
        self.rng = rng
        self.prefix = prefix
        self.skeys = [prefix + b"s%d" % i for i in range(1, nkeys + 1)]
        self.strkey = prefix + b"str"
        self.misskey = prefix + b"nokey"
        self.clock = self.skeys[-1] if use_clock else None
        self.models = {k: KeyModel() for k in self.skeys + [self.misskey, self.strkey]}

    # ---- small helpers

    def m(self, k):
        return self.models.setdefault(k, KeyModel())

    def kw(self, s):
        """A keyword, mostly upper case, sometimes lower or mixed case."""
        r = self.rng.random()
        if r < 0.07:
            return s.lower()
        if r < 0.10:
            return bytes(c ^ 0x20 if chr(c).isalpha() and self.rng.random() < 0.5 else c
                         for c in s)
        return s

    def chance(self, p):
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(seq)

    def pick_key(self, other=0.1):
        r = self.rng.random()
        if r < other / 2:
            return self.misskey
        if r < other:
            return self.strkey
        return self.pick(self.skeys)

    def num(self, lo, hi):
        return b"%d" % self.rng.randint(lo, hi)

    def value(self):
        r = self.rng.random()
        if r < 0.55:
            return b"v%d" % self.rng.randint(0, 99)
        if r < 0.8:
            return b"%d" % self.rng.randint(-5, 500)
        return self.pick([b"", b"x y", b"\x00\xff", b"*", b"$", b"-1"])

    def fields(self, pairs):
        names = self.rng.sample(FIELDS, min(pairs, len(FIELDS)))
        out = []
        for n in names:
            out += [n, self.value()]
        return out

    def group_key(self):
        """A key for a consumer-group command: mostly one that has groups."""
        with_groups = [k for k in self.skeys if self.m(k).groups]
        if with_groups and self.chance(0.75):
            return self.pick(with_groups)
        return self.pick_key()

    def group(self, k):
        g = self.m(k).groups
        if g and self.chance(0.85):
            return self.pick(g)
        return self.pick(GROUPS + [b"nog"])

    def consumer(self):
        return self.pick(CONSUMERS) if self.chance(0.95) else self.pick([b"c4", b"", b"x y"])

    def max_ms(self, k):
        last = self.m(k).last
        if last is None or last[0] > 1000:
            return 12
        return last[0] + 2

    def known_id(self, k):
        kn = self.m(k).known
        if kn:
            return self.pick(kn[-12:] if self.chance(0.7) else kn)
        return self.explicit_id(k)

    def pel_id(self, k, g):
        """An ID that is likely pending in group g of k."""
        d = self.m(k).delivered.get(g)
        if d and self.chance(0.75):
            return self.pick(d[-10:] if self.chance(0.7) else d)
        return self.known_id(k)

    def explicit_id(self, k):
        return b"%d-%d" % (self.rng.randint(0, self.max_ms(k)), self.rng.randint(0, 3))

    def excl(self, t):
        return t.excl() if isinstance(t, Ph) else b"(" + t

    def range_id(self, k):
        """A start/end argument for XRANGE-like commands (all valid syntax)."""
        r = self.rng.random()
        if r < 0.25:
            return self.pick([b"-", b"+"])
        if r < 0.50:
            return self.known_id(k)
        if r < 0.62:
            return self.excl(self.known_id(k))
        if r < 0.74:
            return self.num(0, self.max_ms(k))
        if r < 0.78:
            return b"(" + self.num(0, self.max_ms(k))
        if r < 0.90:
            return self.explicit_id(k)
        return self.pick([b"0-0", b"0", b"18446744073709551615-18446744073709551615",
                          b"(0-0", b"(18446744073709551615-18446744073709551615",
                          b"18446744073709551615", b"(18446744073709551615"])

    def read_id(self, k):
        """An ID argument of XREAD."""
        r = self.rng.random()
        if r < 0.15:
            return b"$"
        if r < 0.30:
            return b"0"
        if r < 0.35:
            return b"0-0"
        if r < 0.70:
            return self.known_id(k)
        if r < 0.80:
            return self.num(0, self.max_ms(k))
        return self.explicit_id(k)

    def bad_id(self):
        return self.pick(MALFORMED)

    # ---- IDs for XADD

    def next_id(self, k):
        """A valid explicit ID (or `ms-*`) greater than the key's last ID, or None."""
        m = self.m(k)
        if m.timed:
            return None
        ms, seq = m.last or (0, 0)
        star = self.chance(0.3)
        if ms == MAX64 and seq == MAX64:
            return None
        if (self.chance(0.35) or ms == MAX64) and seq < MAX64:
            if star:
                return b"%d-*" % ms
            return b"%d-%d" % (ms, min(MAX64, seq + self.rng.randint(1, 3)))
        nms = min(MAX64, ms + self.rng.randint(1, 4))
        if star:
            return b"%d-*" % nms
        return b"%d-%d" % (nms, self.pick([0, 0, 1, 2, 5]))

    def bad_xadd_id(self, k):
        """An ID that is (most likely) refused by XADD, or an extreme one."""
        m = self.m(k)
        r = self.rng.random()
        if r < 0.3 and m.last is not None and m.last != (0, 0):
            ms, seq = m.last
            return self.pick([b"%d-%d" % (ms, seq),
                              b"%d-%d" % (ms, max(0, seq - 1)),
                              b"%d-%d" % (max(0, ms - 1), seq + 5),
                              b"%d" % max(0, ms - 1)])
        if r < 0.45:
            return b"0-0"
        if r < 0.55:
            return self.pick([b"18446744073709551615-18446744073709551615",
                              b"18446744073709551615-*", b"0-*"])
        return self.bad_id()

    # ---- trimming arguments (XADD and XTRIM)

    def trim_args(self, k, valid=True):
        strat = self.pick([b"MAXLEN", b"MAXLEN", b"MINID"])
        ops = [b"", b"="] if k == self.clock else [b"", b"=", b"~", b"~"]
        op = self.pick(ops)
        if strat == b"MAXLEN":
            thr = self.num(0, 30) if self.chance(0.9) else b"0"
        else:
            thr = self.pick([self.known_id(k), self.explicit_id(k), self.num(0, self.max_ms(k)),
                             b"0"])
        res = [self.kw(strat)] + ([op] if op else []) + [thr]
        if op == b"~" and self.chance(0.4):
            res += [self.kw(b"LIMIT"), self.pick([b"0", b"1", b"2", b"5", b"10", b"100"])]
        if valid:
            return res
        v = self.rng.randint(0, 7)
        if v == 0:      # LIMIT without ~
            return [self.kw(strat)] + self.pick([[b"="], []]) + [thr, self.kw(b"LIMIT"),
                                                               self.num(0, 10)]
        if v == 1:      # negative / garbage thresholds
            bad = self.pick([b"-1", b"abc", b"1.5", b"", b"18446744073709551616"]) \
                if strat == b"MAXLEN" else self.bad_id()
            return [self.kw(strat)] + ([op] if op else []) + [bad]
        if v == 2:      # bad LIMIT values (with ~ so LIMIT itself is allowed)
            return [self.kw(strat), b"~", thr, self.kw(b"LIMIT"),
                    self.pick([b"-1", b"abc", b"", b"9223372036854775808"])]
        if v == 3:      # missing threshold
            return [self.kw(strat)] + ([op] if op else [])
        if v == 4:      # both strategies
            return [self.kw(b"MAXLEN"), self.num(0, 10), self.kw(b"MINID"), self.known_id(k)]
        if v == 5:      # unknown operator (taken as the threshold)
            return [self.kw(strat), self.pick([b"<", b"==", b"~~", b"!"]), thr]
        if v == 6:      # LIMIT without a value
            return [self.kw(strat), b"~", thr, self.kw(b"LIMIT")]
        return [self.kw(b"MAXLEN"), b"~", self.num(0, 10), self.kw(b"MAXLEN"), self.num(0, 10)]

    # ---- the generic mutation

    def mutate(self, op):
        toks = list(op.toks)
        hi = op.hi if op.hi is not None else len(toks)
        lo = op.fixed + 1
        r = self.rng.random()
        if r < 0.3 and len(toks) > 1:
            n = self.rng.randint(1, min(3, len(toks) - 1))
            toks = toks[:-n]
        elif r < 0.6 and lo <= hi:
            toks.insert(self.rng.randint(lo, hi), self.kw(self.pick(GARBAGE)))
        elif r < 0.85 and lo < hi:
            toks[self.rng.randint(lo, hi - 1)] = self.kw(self.pick(GARBAGE))
        elif lo < hi:
            i = self.rng.randint(lo, hi - 1)
            toks.insert(i, toks[i])
        else:
            toks.append(self.kw(self.pick(GARBAGE)))
        op.toks = toks
        op.info["mutated"] = True
        return op

    # ---- command generators

    def g_xadd(self):
        k = self.pick_key(other=0.1)
        if k == self.clock and self.m(k).lifetime >= CLOCK_CAP:
            k = self.skeys[0]
        m = self.m(k)
        invalid = self.chance(0.22)
        opts = []
        if self.chance(0.12):
            opts.append([self.kw(b"NOMKSTREAM")])
        exact = None
        if m.live >= LIVE_CAP:
            exact = self.rng.randint(10, 25)
            opts.append([self.kw(b"MAXLEN")] + self.pick([[b"="], []]) + [b"%d" % exact])
        elif self.chance(0.3):
            t = self.trim_args(k)
            if t[0].upper() == b"MAXLEN" and b"~" not in t:
                exact = int(t[-1])
            opts.append(t)
        self.rng.shuffle(opts)
        if k == self.clock and (m.timed or self.chance(0.6)):
            eid = b"*"
        else:
            eid = self.next_id(k)
            if eid is None:
                eid = self.bad_xadd_id(k)
        flds = self.fields(self.rng.randint(1, 3) if self.chance(0.9) else 4)
        if invalid:
            v = self.rng.randint(0, 9)
            if v <= 2:
                eid = self.bad_xadd_id(k)
            elif v == 3:        # odd number of field tokens
                flds = flds[:-1] if self.chance(0.5) else flds + [self.pick(FIELDS)]
            elif v == 4:        # no fields at all
                flds = []
            elif v == 5:        # bad trimming options
                opts = [self.trim_args(k, valid=False)]
                exact = None
            elif v == 6:        # an option after the ID (it becomes a field name)
                flds = [self.kw(self.pick([b"NOMKSTREAM", b"MAXLEN", b"LIMIT"]))] + flds
            elif v == 7:        # arity
                toks = [self.kw(b"XADD")] + ([k] if self.chance(0.6) else [])
                return Op(toks, "xadd", [k], nomut=True)
        toks = [self.kw(b"XADD"), k] + [t for o in opts for t in o] + [eid] + flds
        op = Op(toks, "xadd", [k], exact=exact, star=(eid == b"*"))
        if invalid and self.chance(0.35):
            self.mutate(op)
        return op

    def g_xlen(self):
        k = self.pick_key()
        if self.chance(0.08):
            return Op([self.kw(b"XLEN")] + self.pick([[], [k, k]]), "xlen", [k], nomut=True)
        return Op([self.kw(b"XLEN"), k], "xlen", [k])

    def g_xrange(self, rev=False):
        k = self.pick_key()
        a, b = self.range_id(k), self.range_id(k)
        toks = [self.kw(b"XREVRANGE" if rev else b"XRANGE"), k, a, b]
        if self.chance(0.4):
            toks += [self.kw(b"COUNT"), self.pick([b"0", b"1", b"2", b"3", b"5", b"10", b"-1"])]
        op = Op(toks, "xrange", [k])
        if self.chance(0.22):
            v = self.rng.randint(0, 5)
            if v == 0:
                toks[self.pick([2, 3])] = self.bad_id()
            elif v == 1:
                toks[4:] = [self.kw(b"COUNT"), self.pick([b"abc", b"", b"1.5",
                                                          b"9223372036854775808"])]
            elif v == 2:
                toks[4:] = [self.kw(b"COUNT")]
            elif v == 3:
                toks.append(self.kw(self.pick([b"foo", b"LIMIT", b"COUNT"])))
            elif v == 4:
                del toks[3:]
            else:
                self.mutate(op)
        return op

    def g_xdel(self):
        k = self.pick_key()
        ids = [self.known_id(k) if self.chance(0.8) else self.explicit_id(k)
               for _ in range(self.rng.randint(1, 3))]
        op = Op([self.kw(b"XDEL"), k] + ids, "xdel", [k])
        if self.chance(0.2):
            v = self.rng.randint(0, 2)
            if v == 0:
                op.toks.insert(self.rng.randint(2, len(op.toks)), self.bad_id())
            elif v == 1:
                op.toks = op.toks[:2]
            else:
                self.mutate(op)
        return op

    def g_xtrim(self):
        k = self.pick_key()
        t = self.trim_args(k)
        exact = None
        if t[0].upper() == b"MAXLEN" and b"~" not in t:
            exact = int(t[-1])
        op = Op([self.kw(b"XTRIM"), k] + t, "xtrim", [k], exact=exact)
        if self.chance(0.3):
            op.info["exact"] = None
            v = self.rng.randint(0, 5)
            if v <= 2:
                op.toks = [op.toks[0], k] + self.trim_args(k, valid=False)
            elif v == 3:
                op.toks = op.toks[:self.rng.randint(1, 2)]
            elif v == 4:
                op.toks = [op.toks[0], k, self.kw(self.pick([b"FOO", b"LIMIT", b"COUNT", b"="])),
                           self.num(0, 5)]
            else:
                self.mutate(op)
        return op

    def xread_keys(self):
        n = self.pick([1, 1, 1, 2, 2, 3])
        keys = self.rng.sample(self.skeys, min(n, len(self.skeys)))
        if self.chance(0.1):
            keys.append(self.pick([self.misskey, self.strkey]))
        return keys

    def g_xread(self):
        keys = self.xread_keys()
        ids = [self.read_id(k) for k in keys]
        opts = []
        if self.chance(0.5):
            opts.append([self.kw(b"COUNT"), self.pick([b"0", b"1", b"2", b"3", b"10", b"-1"])])
        block = self.chance(0.04)
        if block:
            opts.append([self.kw(b"BLOCK"), b"1"])
        self.rng.shuffle(opts)
        head = [self.kw(b"XREAD")] + [t for o in opts for t in o]
        streams = [self.kw(b"STREAMS")]
        invalid = self.chance(0.22)
        if invalid:
            v = self.rng.randint(0, 8)
            if v == 0:
                ids[self.rng.randrange(len(ids))] = self.bad_id()
            elif v == 1:
                ids[self.rng.randrange(len(ids))] = self.pick([b">", b"+", b"(1-1"])
            elif v == 2:    # unbalanced
                if self.chance(0.5):
                    ids = ids[:-1]
                else:
                    keys = keys + [self.pick(self.skeys)]
            elif v == 3:
                streams = []
            elif v == 4:
                head += [self.kw(b"COUNT"), self.pick([b"abc", b"", b"1.5"])]
            elif v == 5:
                head += [self.kw(b"BLOCK"), self.pick([b"-1", b"abc", b"1.5", b""])]
                block = True
            elif v == 6:
                head += [self.kw(self.pick([b"NOACK", b"GROUP", b"FOO", b"COUNT"]))]
            elif v == 7:
                keys, ids = [], []
        toks = head + streams + keys + ids
        hi = len(head)
        op = Op(toks, "xread", keys, fixed=0, hi=hi, nomut=block)
        if invalid and not block and self.chance(0.3):
            self.mutate(op)
        return op

    def g_xsetid(self):
        k = self.pick_key()
        m = self.m(k)
        if m.timed:
            # never below a clock ID: an emptied clock stream could be set back
            # and then generate an ID it generated before
            target = m.known[-1] if m.known and self.chance(0.7) else \
                b"18446744073709551615-%d" % self.rng.randint(0, 3)
        elif m.last is not None and self.chance(0.5):
            target = b"%d-%d" % m.last
        elif m.last is not None:
            ms, seq = m.last
            target = self.pick([b"%d-%d" % (min(MAX64, ms + self.rng.randint(0, 3)),
                                            self.rng.randint(0, 9)),
                                b"%d" % min(MAX64, ms + 1)])
        else:
            target = self.explicit_id(k)
        opts = []
        if self.chance(0.3):
            opts.append([self.kw(b"ENTRIESADDED"), b"%d" % (m.adds + self.rng.randint(0, 5))])
        if self.chance(0.3):
            opts.append([self.kw(b"MAXDELETEDID"), self.pick([b"0-0", b"0-1", b"1-0"])])
        self.rng.shuffle(opts)
        toks = [self.kw(b"XSETID"), k, target] + [t for o in opts for t in o]
        adds = [int(o[1]) for o in opts if o[0].upper() == b"ENTRIESADDED"]
        op = Op(toks, "xsetid", [k], fixed=1, target=target, adds=(adds or [None])[0])
        if self.chance(0.3):
            op.info["target"] = op.info["adds"] = None
            v = self.rng.randint(0, 8)
            if v == 1 and k == self.clock:
                v = 0
            if v == 0:
                toks[2] = self.bad_id()
            elif v == 1:
                toks[2] = self.pick([b"0-0", b"0-1", b"1-0", self.explicit_id(k)])
            elif v == 2:
                toks += [self.kw(b"ENTRIESADDED"), self.pick([b"-1", b"abc", b"0", b"1"])]
            elif v == 3:
                toks += [self.kw(b"MAXDELETEDID"),
                         self.pick([self.bad_id(), b"18446744073709551615-18446744073709551615",
                                    self.explicit_id(k)])]
            elif v == 4:
                toks += [self.kw(self.pick([b"ENTRIESADDED", b"MAXDELETEDID"]))]
            elif v == 5:
                op.toks = toks[:self.rng.randint(1, 2)]
            elif v == 6:
                toks += [self.kw(self.pick([b"FOO", b"MAXLEN", b"ENTRIESREAD"])), b"1"]
            else:
                self.mutate(op)
        return op

    def group_id(self, k):
        r = self.rng.random()
        if r < 0.3:
            return b"$"
        if r < 0.6:
            return b"0"
        if r < 0.85:
            return self.known_id(k)
        return self.pick([self.num(0, self.max_ms(k)), self.explicit_id(k), b"0-0"])

    def g_xgroup(self):
        k = self.pick_key()
        g = self.group(k)
        X = self.kw(b"XGROUP")
        sub = self.rng.choices(
            [b"CREATE", b"SETID", b"DESTROY", b"CREATECONSUMER", b"DELCONSUMER", b"HELP",
             b"unknown", b"arity"],
            [35, 15, 8, 15, 10, 1, 4, 5])[0]
        if sub == b"HELP":
            return Op([X, self.kw(b"HELP")] + ([b"x"] if self.chance(0.3) else []),
                      "xgroup", nomut=True)
        if sub == b"unknown":
            return Op([X, self.pick([b"FOO", b"CREATEX", b"", b"DESTROYCONSUMER"]), k, g],
                      "xgroup", [k], nomut=True)
        if sub == b"arity":
            full = [X, self.kw(self.pick([b"CREATE", b"SETID", b"DESTROY", b"CREATECONSUMER",
                                          b"DELCONSUMER"])), k, g, b"0"]
            return Op(full[:self.rng.randint(1, 3)], "xgroup", [k], nomut=True)
        if sub == b"CREATE" and g in self.m(k).groups and self.chance(0.6):
            g = self.pick(GROUPS)   # most often a group that does not exist yet
        toks = [X, self.kw(sub), k, g]
        op = Op(toks, "xgroup", [k], fixed=2, sub=sub, group=g)
        invalid = self.chance(0.22)
        if sub in (b"CREATE", b"SETID"):
            toks.append(self.group_id(k))
            opts = []
            if sub == b"CREATE" and self.chance(0.3):
                opts.append([self.kw(b"MKSTREAM")])
            if self.chance(0.15):
                opts.append([self.kw(b"ENTRIESREAD"),
                             self.pick([b"-1", b"0", b"1", b"%d" % self.m(k).adds,
                                        self.num(0, 30)])])
            self.rng.shuffle(opts)
            toks += [t for o in opts for t in o]
            if invalid:
                v = self.rng.randint(0, 5)
                if v == 0:
                    toks[4] = self.bad_id()
                elif v == 1:
                    toks += [self.kw(b"ENTRIESREAD"), self.pick([b"-2", b"abc", b"", b"1.5"])]
                elif v == 2:
                    toks += [self.kw(self.pick([b"MKSTREAM", b"FOO", b"ENTRIESREAD", b"NOACK"]))]
                elif v == 3:
                    del toks[4:]
                else:
                    self.mutate(op)
        elif sub in (b"CREATECONSUMER", b"DELCONSUMER"):
            toks.append(self.consumer())
            if invalid:
                if self.chance(0.5):
                    del toks[4:]
                else:
                    toks.append(self.pick([b"c1", b"foo"]))
        elif invalid:   # DESTROY
            toks.append(self.pick([b"c1", b"foo", b"0"]))
        return op

    def g_xreadgroup(self):
        k0 = self.group_key()
        if k0 not in self.skeys:
            k0 = self.pick(self.skeys)
        g = self.group(k0)
        c = self.consumer()
        keys = [k0] + ([self.pick(self.skeys)] if self.chance(0.12) else [])
        keys = list(dict.fromkeys(keys))
        if self.chance(0.06):
            keys.append(self.pick([self.misskey, self.strkey]))
        ids = []
        for k in keys:
            r = self.rng.random()
            if r < 0.7:
                ids.append(b">")
            elif r < 0.82:
                ids.append(b"0")
            elif r < 0.92:
                ids.append(self.known_id(k))
            else:
                ids.append(self.pick([self.num(0, self.max_ms(k)), self.explicit_id(k)]))
        opts = [[self.kw(b"GROUP"), g, c]]
        if self.chance(0.5):
            opts.append([self.kw(b"COUNT"), self.pick([b"0", b"1", b"2", b"3", b"10", b"-1"])])
        noack = self.chance(0.15)
        if noack:
            opts.append([self.kw(b"NOACK")])
        block = self.chance(0.03)
        if block:
            opts.append([self.kw(b"BLOCK"), b"1"])
        if self.chance(0.2):
            self.rng.shuffle(opts)
        head = [self.kw(b"XREADGROUP")] + [t for o in opts for t in o]
        streams = [self.kw(b"STREAMS")]
        invalid = self.chance(0.22)
        if invalid:
            v = self.rng.randint(0, 8)
            if v == 0:
                ids[self.rng.randrange(len(ids))] = self.pick([b"$", b"+", b"(1-1"])
            elif v == 1:
                ids[self.rng.randrange(len(ids))] = self.bad_id()
            elif v == 2:
                ids = ids[:-1] if self.chance(0.5) else ids + [b">"]
            elif v == 3:    # no GROUP
                head = [head[0]] + [t for o in opts if o[0].upper() != b"GROUP" for t in o]
            elif v == 4:    # GROUP with one argument
                head = [head[0], self.kw(b"GROUP"), g]
            elif v == 5:
                head += [self.kw(b"COUNT"), self.pick([b"abc", b"", b"1.5"])]
            elif v == 6:
                head += [self.kw(b"BLOCK"), self.pick([b"-1", b"abc", b""])]
                block = True
            elif v == 7:
                head += [self.kw(self.pick([b"FOO", b"NOACK", b"JUSTID"]))]
            else:
                streams = []
        toks = head + streams + keys + ids
        op = Op(toks, "xreadgroup", keys, fixed=0, hi=len(head), nomut=block, group=g,
                noack=noack)
        if invalid and not block and self.chance(0.3):
            self.mutate(op)
        return op

    def g_xack(self):
        k = self.group_key()
        g = self.group(k)
        ids = [self.pel_id(k, g) for _ in range(self.rng.randint(1, 3))]
        op = Op([self.kw(b"XACK"), k, g] + ids, "xack", [k], fixed=2)
        if self.chance(0.2):
            v = self.rng.randint(0, 2)
            if v == 0:
                op.toks.append(self.bad_id())
            elif v == 1:
                op.toks = op.toks[:self.rng.randint(1, 3)]
            else:
                self.mutate(op)
        return op

    def g_xpending(self):
        k = self.group_key()
        g = self.group(k)
        toks = [self.kw(b"XPENDING"), k, g]
        fixed = 2
        if self.chance(0.6):
            if self.chance(0.25):
                toks += [self.kw(b"IDLE"), self.pick([b"0", b"0", b"%d" % OLD_IDLE, b"-1"])]
                fixed = 4
            toks += [self.range_id(k), self.range_id(k),
                     self.pick([b"0", b"1", b"2", b"5", b"10", b"100", b"-1"])]
            count_at = len(toks) - 1
            if self.chance(0.3):
                toks.append(self.consumer())
        op = Op(toks, "xpending", [k], fixed=fixed)
        if self.chance(0.22):
            v = self.rng.randint(0, 6)
            if v == 0 and len(toks) > 4:
                toks[count_at] = self.pick([b"abc", b"", b"1.5", b"9223372036854775808"])
            elif v == 1:
                op.toks = toks[:3] + [self.range_id(k)] + ([self.range_id(k)] if self.chance(.5)
                                                           else [])
            elif v == 2:
                op.toks = toks[:3] + [self.kw(b"IDLE"), self.pick([b"abc", b"", b"1.5"])] + \
                    [b"-", b"+", b"10"]
            elif v == 3:
                op.toks = toks[:3] + [self.kw(b"IDLE"), b"0"]
            elif v == 4:
                op.toks = toks[:3] + [self.bad_id(), b"+", b"10"]
            elif v == 5:
                op.toks = toks[:self.rng.randint(1, 2)]
            else:
                self.mutate(op)
        return op

    def min_idle(self):
        return self.pick([b"0", b"0", b"0", b"%d" % OLD_IDLE, b"-1"])

    def g_xclaim(self):
        k = self.group_key()
        g = self.group(k)
        toks = [self.kw(b"XCLAIM"), k, g, self.consumer(), self.min_idle()]
        toks += [self.pel_id(k, g) for _ in range(self.rng.randint(1, 3))]
        now = int(time.time() * 1000)
        opts = []
        if self.chance(0.3):
            opts.append([self.kw(b"IDLE"), self.pick([b"0", b"5", b"10000000", b"10000000",
                                                      b"100000000000", b"9223372036854775807"])])
        if self.chance(0.15):
            opts.append([self.kw(b"TIME"), self.pick([b"%d" % (now - 100000000), b"0", b"1",
                                                      b"%d" % (now + 100000000), b"-5"])])
        if self.chance(0.2):
            opts.append([self.kw(b"RETRYCOUNT"), self.pick([b"0", b"1", b"3", b"7"])])
        if self.chance(0.2):
            opts.append([self.kw(b"FORCE")])
        if self.chance(0.3):
            opts.append([self.kw(b"JUSTID")])
        if self.chance(0.15):
            opts.append([self.kw(b"LASTID"), self.pick([self.known_id(k), self.explicit_id(k)])])
        self.rng.shuffle(opts)
        toks += [t for o in opts for t in o]
        op = Op(toks, "xclaim", [k], fixed=4)
        if self.chance(0.22):
            v = self.rng.randint(0, 7)
            if v == 0:
                toks[4] = self.pick([b"abc", b"", b"1.5"])
            elif v == 1:
                toks.insert(5, self.bad_id())
            elif v == 2:
                toks += [self.kw(self.pick([b"IDLE", b"TIME", b"RETRYCOUNT"])),
                         self.pick([b"abc", b"", b"1.5"])]
            elif v == 3:
                toks += [self.kw(b"LASTID"), self.bad_id()]
            elif v == 4:
                op.toks = toks[:self.rng.randint(1, 5)]
            elif v == 5:
                toks += [self.kw(self.pick([b"IDLE", b"TIME", b"RETRYCOUNT", b"LASTID", b"FOO"]))]
            else:
                self.mutate(op)
        return op

    def g_xautoclaim(self):
        k = self.group_key()
        g = self.group(k)
        start = self.pick([b"0", b"0-0", b"-", self.known_id(k), self.num(0, self.max_ms(k)),
                           self.explicit_id(k)])
        toks = [self.kw(b"XAUTOCLAIM"), k, g, self.consumer(), self.min_idle(), start]
        if self.chance(0.5):
            toks += [self.kw(b"COUNT"), self.pick([b"1", b"2", b"3", b"5", b"100"])]
        if self.chance(0.3):
            toks.append(self.kw(b"JUSTID"))
        op = Op(toks, "xautoclaim", [k], fixed=4)
        if self.chance(0.22):
            v = self.rng.randint(0, 6)
            if v == 0:
                toks[5] = self.pick([self.bad_id(), b"+", b"(1-1"])
            elif v == 1:
                toks += [self.kw(b"COUNT"), self.pick([b"0", b"-1", b"abc",
                                                       b"9223372036854775807", b"2147483648"])]
            elif v == 2:
                toks[4] = self.pick([b"abc", b"", b"1.5"])
            elif v == 3:
                toks += [self.kw(self.pick([b"COUNT", b"FOO", b"FORCE", b"IDLE"]))]
            elif v == 4:
                op.toks = toks[:self.rng.randint(1, 5)]
            else:
                self.mutate(op)
        return op

    def g_xinfo(self):
        k = self.pick_key()
        X = self.kw(b"XINFO")
        sub = self.rng.choices([b"STREAM", b"FULL", b"GROUPS", b"CONSUMERS", b"HELP", b"bad"],
                               [25, 25, 20, 25, 1, 4])[0]
        if sub == b"HELP":
            return Op([X, self.kw(b"HELP")] + ([b"x"] if self.chance(0.3) else []), "xinfo",
                      nomut=True)
        if sub == b"bad":
            return Op(self.pick([[X], [X, self.pick([b"FOO", b"STREAMS", b""]), k],
                                 [X, self.kw(b"STREAM")], [X, self.kw(b"CONSUMERS"), k]]),
                      "xinfo", [k], nomut=True)
        if sub == b"FULL":
            toks = [X, self.kw(b"STREAM"), k, self.kw(b"FULL")]
            if self.chance(0.5):
                toks += [self.kw(b"COUNT"), self.pick([b"0", b"1", b"2", b"5", b"-1"])]
        elif sub == b"CONSUMERS":
            toks = [X, self.kw(sub), k, self.group(k)]
        else:
            toks = [X, self.kw(sub), k]
        op = Op(toks, "xinfo", [k], fixed=2)
        if self.chance(0.15):
            v = self.rng.randint(0, 3)
            if v == 0 and sub == b"FULL":
                op.toks = toks[:4] + [self.kw(b"COUNT"), self.pick([b"abc", b"", b"1.5"])]
            elif v == 1 and sub == b"FULL":
                op.toks = toks[:4] + [self.kw(self.pick([b"COUNT", b"FOO"]))]
            elif v == 2:
                op.toks = toks + [self.kw(self.pick([b"FOO", b"FULL", b"COUNT"]))]
            else:
                self.mutate(op)
        return op

    def g_misc(self):
        k = self.pick_key(other=0.2)
        r = self.rng.random()
        if r < 0.3:
            return Op([self.kw(b"TYPE"), k], "type", [k])
        if r < 0.55:
            return Op([self.kw(b"OBJECT"), self.kw(b"ENCODING"), self.pick(self.skeys +
                                                                         [self.misskey])],
                      "object", [k], nomut=True)
        if r < 0.75:
            return Op([self.kw(b"EXISTS")] + self.rng.sample(self.skeys + [self.misskey], 2),
                      "exists", nomut=True)
        if r < 0.95:
            ks = [self.pick(self.skeys + [self.misskey])]
            return Op([self.kw(b"DEL")] + ks, "del", ks, nomut=True)
        return Op([self.pick([b"XFOO", b"XADDX", b"XINF"]), k, b"1-1"], "unknown", nomut=True)

    def next_op(self):
        name = self.rng.choices(
            ["xadd", "xlen", "xrange", "xrevrange", "xdel", "xtrim", "xread", "xsetid",
             "xgroup", "xreadgroup", "xack", "xpending", "xclaim", "xautoclaim", "xinfo",
             "misc"],
            [24, 3, 6, 4, 4, 4, 6, 3, 9, 12, 4, 5, 6, 4, 7, 4])[0]
        if name == "xrevrange":
            return self.g_xrange(rev=True)
        return getattr(self, "g_" + name)()

    def setup_ops(self, k):
        """Initial content of stream key k: some entries, maybe groups.  Yields
        ops one at a time (each is observed before the next is generated)."""
        for _ in range(self.rng.randint(2, 12)):
            m = self.m(k)
            eid = b"*" if k == self.clock and (m.timed or self.chance(0.5)) else self.next_id(k)
            yield Op([b"XADD", k, eid] + self.fields(self.rng.randint(1, 3)), "xadd", [k],
                     star=(eid == b"*"))
        for g in GROUPS[:2]:
            if self.chance(0.6):
                gid = self.pick([b"0", b"0", b"$", self.known_id(k)])
                yield Op([b"XGROUP", b"CREATE", k, g, gid], "xgroup", [k], sub=b"CREATE",
                         group=g)

    def final_ops(self):
        """State dump at the end of the round."""
        ops = []
        for k in self.skeys + [self.misskey]:
            ops.append(Op([b"XINFO", b"STREAM", k, b"FULL"], "xinfo", [k]))
            ops.append(Op([b"XRANGE", k, b"-", b"+"], "xrange", [k]))
            ops.append(Op([b"XINFO", b"GROUPS", k], "xinfo", [k]))
            for g in self.m(k).groups:
                ops.append(Op([b"XINFO", b"CONSUMERS", k, g], "xinfo", [k]))
                ops.append(Op([b"XPENDING", k, g, b"-", b"+", b"1000"], "xpending", [k]))
        return ops

    # ---- model update from A's normalised reply

    def observe(self, op, v, reg):
        t = v[0]
        kind = op.kind
        if t == "-" or t == "noreply":
            return
        k = op.keys[0] if op.keys else None
        m = self.m(k) if k is not None else None
        if kind == "xadd" and t in ("$", "id") and v[1] is not None:
            if t == "id":
                m.known.append(Ph(v[1]))
                m.timed, m.last = True, None
            else:
                m.known.append(v[1])
                m.timed, m.last = False, parse_id(v[1])
            m.live += 1
            m.adds += 1
            m.lifetime += 1
            ex = op.info.get("exact")
            if ex is not None and not op.info.get("mutated"):
                m.live = min(m.live, ex)
        elif kind in ("xtrim", "xdel") and t == ":":
            m.live = max(0, m.live - v[1])
            ex = op.info.get("exact")
            if ex is not None and not op.info.get("mutated"):
                m.live = min(m.live, ex)
        elif kind == "xlen" and t == ":" and len(op.toks) == 2:
            m.live = v[1]
        elif kind == "xsetid" and t == "+":
            tgt = op.info.get("target")
            if isinstance(tgt, bytes) and parse_id(tgt) is not None:
                m.last, m.timed = parse_id(tgt), False
            if op.info.get("adds") is not None:
                m.adds = op.info["adds"]
        elif kind == "xgroup" and not op.info.get("mutated"):
            sub, g = op.info.get("sub"), op.info.get("group")
            if sub == b"CREATE" and t == "+":
                if g not in m.groups:
                    m.groups.append(g)
            elif sub == b"DESTROY" and v == (":", 1) and g in m.groups:
                m.groups.remove(g)
        elif kind == "xreadgroup" and t == "*" and v[1] is not None and \
                not op.info.get("noack"):
            g = op.info.get("group")
            for kv in v[1]:
                if kv[0] != "*" or not kv[1] or len(kv[1]) != 2 or kv[1][1][0] != "*":
                    continue
                km = self.m(kv[1][0][1]) if kv[1][0][0] == "$" else None
                for e in kv[1][1][1] or []:
                    if km is not None and e[0] == "*" and e[1]:
                        eid = e[1][0]
                        d = km.delivered.setdefault(g, [])
                        if eid[0] == "id":
                            d.append(Ph(eid[1]))
                        elif eid[0] == "$":
                            d.append(eid[1])
        elif kind == "del":
            for key in op.keys:
                self.m(key).reset()
                if key == self.clock:
                    reg.clear()


# --------------------------------------------------------------------------
# Running rounds
# --------------------------------------------------------------------------

class Failure(Exception):
    """A reply differed; carries everything the report needs."""


class HarnessError(Exception):
    """Not a difference between the servers (e.g. the reference is down)."""


class Round:
    def __init__(self, args, rnd):
        self.args = args
        self.rnd = rnd
        self.rng = random.Random("stream:%d:%d" % (args.seed, rnd))
        self.prefix = b"sd%d_%d:" % (args.seed % 1000000, rnd)
        self.reg = IdRegistry()
        self.log = []        # (canonical tokens, toks A, toks B, normalised reply A)
        self.ncmds = 0
        self.nerr = 0
        self.node_size = DEFAULT_NODE_SIZE
        self.clock = None    # the round's clock key (the only one that gets `*`)

    def exchange(self, conns, op):
        """Send op to both servers, compare the normalised replies."""
        rendered = [render(op.toks, srv, self.reg) for srv in (0, 1)]
        for c, r in zip(conns, rendered):
            c.send(r)
        replies, raws = [], []
        for c in conns:
            try:
                v, raw = c.read()
            except NoReply as e:
                v, raw = ("noreply", str(e)), b""
            replies.append(v)
            raws.append(raw)
        if replies[0][0] == "noreply":
            raise HarnessError("reference server (A) failed on %s: %s"
                               % (show_cmd(rendered[0]), replies[0][1]))
        # a successful `XADD ... *` on the clock key defines a new placeholder
        if (op.kind == "xadd" and op.info.get("star") and op.keys[0] == self.clock and
                all(v[0] == "$" and v[1] is not None for v in replies)):
            for srv, v in enumerate(replies):
                if v[1] in self.reg.num[srv]:
                    break
            else:
                self.reg.add(replies[0][1], replies[1][1])
        norm = [normalise(v, op.toks, srv, self.reg) for srv, v in enumerate(replies)]
        self.ncmds += 1
        if norm[0][0] == "-":
            self.nerr += 1
        if self.args.verbose:
            print("  %s\n    -> %s" % (show_cmd(op.toks), fmt(norm[0])))
        if norm[0] != norm[1]:
            f = Failure("replies differ")
            f.detail = (op, rendered, replies, raws, norm)
            raise f
        self.log.append((op.toks, rendered, norm[0]))
        return norm[0]

    def run(self):
        args = self.args
        rng = self.rng
        conns = open_pair(args)
        try:
            self.node_size = rng.choice(NODE_SIZES)
            nkeys = rng.choice([2, 3])
            use_clock = rng.random() < 0.4
            gen = Gen(rng, self.prefix, nkeys, use_clock)
            self.clock = gen.clock
            setup = [Op([b"CONFIG", b"SET", b"stream-node-max-entries", b"%d" % self.node_size],
                        "config"),
                     Op([b"SET", gen.strkey, b"hello"], "set")]
            for op in setup:
                self.exchange(conns, op)
            for k in gen.skeys:
                for op in gen.setup_ops(k):
                    gen.observe(op, self.exchange(conns, op), self.reg)
            n = rng.randint(80, 160)
            for _ in range(n):
                op = gen.next_op()
                va = self.exchange(conns, op)
                gen.observe(op, va, self.reg)
            for op in gen.final_ops():
                self.exchange(conns, op)
            if args.verbose:
                print("round %d: %d commands, %d error replies, stream-node-max-entries %d, "
                      "%s" % (self.rnd, self.ncmds, self.nerr, self.node_size,
                              "clock key %s" % gen.clock.decode() if gen.clock else
                              "no clock key"))
        finally:
            # back to the default, best effort (also after a mismatch)
            for c in conns:
                try:
                    c.call([b"CONFIG", b"SET", b"stream-node-max-entries",
                            b"%d" % DEFAULT_NODE_SIZE])
                except (NoReply, OSError):
                    pass
                c.close()


def open_pair(args):
    """Connections to A and B; HarnessError if either cannot be opened."""
    conns = []
    try:
        for port, name in ((args.port_a, "A"), (args.port_b, "B")):
            conns.append(Conn(port, name))
    except OSError as e:
        for c in conns:
            c.close()
        raise HarnessError("cannot connect to %s (port %d): %s" % (name, port, e))
    return conns


def report(args, rnd, rd, f):
    w = sys.stdout.write
    op, rendered, replies, raws, norm = f.detail
    w("\n=== MISMATCH ===\n")
    w("seed=%d round=%d (command #%d of the round; stream-node-max-entries %d)\n"
      % (args.seed, rnd, rd.ncmds, rd.node_size))
    w("rerun: python3 %s %d %d --seed %d --round %d --verbose\n"
      % (sys.argv[0], args.port_a, args.port_b, args.seed, rnd))
    w("(<id#n> = the n-th ID generated by `XADD ... *` in this round, per server; "
      "<recent>/<old> = a time/idle value below/above %d ms; <ignored> = "
      "radix-tree-nodes)\n\n" % RECENT_MS)
    w("command:          %s\n" % show_cmd(op.toks))
    w("sent to A:        %s\n" % show_cmd(rendered[0]))
    if rendered[1] != rendered[0]:
        w("sent to B:        %s\n" % show_cmd(rendered[1]))
    w("reply A (norm.):  %s\n" % fmt(norm[0]))
    w("reply B (norm.):  %s\n" % fmt(norm[1]))
    for name, raw, v in (("A", raws[0], replies[0]), ("B", raws[1], replies[1])):
        if v[0] == "noreply":
            w("raw reply %s:      <none: %s>\n" % (name, v[1]))
        else:
            s = repr(raw)
            w("raw reply %s:      %s\n" % (name, s if len(s) < 3000 else s[:3000] + "..."))
    prev = rd.log[-LOG_KEEP:]
    if prev:
        w("\nprevious %d commands of the round (replies matched; A's shown):\n" % len(prev))
        for toks, rend, va in prev:
            w("  %s\n" % show_cmd(toks))
            if rend[1] != rend[0]:
                w("    (to A: %s)\n    (to B: %s)\n" % (show_cmd(rend[0]), show_cmd(rend[1])))
            w("    -> %s\n" % fmt(va))
    w("\nthe whole round: rerun with --round %d --verbose (every command and A's reply)\n"
      % rnd)


def server_version(port):
    try:
        c = Conn(port, "?")
    except OSError:
        return None
    try:
        v, _ = c.call([b"INFO", b"server"])
        if v[0] == "$" and v[1]:
            for line in v[1].split(b"\r\n"):
                if line.startswith(b"redis_version:"):
                    return line.split(b":", 1)[1].decode()
    except NoReply:
        pass
    finally:
        c.close()
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("port_a", type=int, help="reference server (redis-server 7.0)")
    ap.add_argument("port_b", type=int, help="server under test")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--round", type=int, default=None, help="run only this round")
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="print every command with A's normalised reply")
    args = ap.parse_args(argv)

    t0 = time.time()
    try:
        conns = open_pair(args)
    except HarnessError as e:
        print(e)
        return 2
    try:
        replies = []
        for c in conns:
            try:
                replies.append(c.call([b"FLUSHALL"])[0])
            except NoReply as e:
                print("FLUSHALL failed on %s: %s" % (c.name, e))
                return 2
        if replies[0] != replies[1]:
            print("=== MISMATCH ===\nFLUSHALL: A %s, B %s" % (fmt(replies[0]), fmt(replies[1])))
            return 1
    finally:
        for c in conns:
            c.close()
    va = server_version(args.port_a)
    if va is not None and not va.startswith("7.0."):
        print("warning: the reference (port %d) is redis %s; the normalisations assume 7.0"
              % (args.port_a, va))

    rounds = [args.round] if args.round is not None else range(args.rounds)
    ncmds = nerr = 0
    for rnd in rounds:
        rd = Round(args, rnd)
        try:
            rd.run()
        except Failure as f:
            report(args, rnd, rd, f)
            return 1
        except HarnessError as e:
            print("harness error in round %d: %s" % (rnd, e))
            return 2
        except OSError as e:
            print("harness error in round %d: %s" % (rnd, e))
            return 2
        ncmds += rd.ncmds
        nerr += rd.nerr
    print("OK: %d rounds, %d commands (%d%% error replies), all replies matched "
          "(seed %d, %.1fs)" % (len(rounds), ncmds, 100 * nerr // max(1, ncmds), args.seed,
                               time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
