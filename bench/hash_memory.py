"""Memory of a server (ferrokv or redis-server) for two hash workloads:
`big` = one hash of 1,000,000 fields (field:N -> value:N), `small` =
100,000 hashes user:N of 10 fields (fieldJ -> value-N-J). Starts the
binary on <port> without persistence, loads with pipelining (HSET of 100
resp. 10 fields per command), then prints INFO used_memory and RSS.

usage: python3 bench/hash_memory.py <server binary> <port> big|small
"""
import socket, subprocess, sys, time, os

def enc(args):
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)

class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(('127.0.0.1', port))
        self.buf = b''
    def pipeline(self, cmds):
        self.s.sendall(b''.join(enc(c) for c in cmds))
        n = 0
        while n < len(cmds):
            while b'\r\n' not in self.buf:
                self.buf += self.s.recv(1 << 20)
            # replies here are single-line (:n / +OK) or bulk (INFO)
            line, rest = self.buf.split(b'\r\n', 1)
            if line.startswith(b'$'):
                ln = int(line[1:])
                while len(rest) < ln + 2:
                    rest += self.s.recv(1 << 20)
                self.last = rest[:ln]
                self.buf = rest[ln + 2:]
            else:
                if line.startswith(b'-'):
                    raise SystemExit(line)
                self.last = line
                self.buf = rest
            n += 1

def info_mem(c):
    c.pipeline([['INFO', 'memory']])
    d = {}
    for l in c.last.decode().split('\r\n'):
        if ':' in l:
            k, v = l.split(':', 1)
            d[k] = v
    return int(d['used_memory']), int(d['used_memory_rss'])

def rss(pid):
    for l in open('/proc/%d/status' % pid):
        if l.startswith('VmRSS:'):
            return int(l.split()[1]) * 1024

binary, port, scen = sys.argv[1], int(sys.argv[2]), sys.argv[3]
args = [binary, '--port', str(port), '--save', '', '--appendonly', 'no']
p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(100):
        try:
            c = Conn(port); break
        except OSError:
            time.sleep(0.05)
    time.sleep(0.2)
    u0, r0 = info_mem(c)
    t = time.time()
    if scen == 'big':
        batch = []
        for i in range(0, 1_000_000, 100):
            cmd = ['HSET', 'bighash']
            for j in range(i, i + 100):
                cmd += ['field:%d' % j, 'value:%d' % j]
            batch.append(cmd)
            if len(batch) == 100:
                c.pipeline(batch); batch = []
        if batch: c.pipeline(batch)
        c.pipeline([['HLEN', 'bighash']]); assert c.last == b':1000000', c.last
    else:
        batch = []
        for i in range(100_000):
            cmd = ['HSET', 'user:%d' % i]
            for j in range(10):
                cmd += ['field%d' % j, 'value-%d-%d' % (i, j)]
            batch.append(cmd)
            if len(batch) == 1000:
                c.pipeline(batch); batch = []
        if batch: c.pipeline(batch)
        c.pipeline([['DBSIZE']]); assert c.last == b':100000', c.last
    load = time.time() - t
    time.sleep(1.0)
    c.pipeline([['OBJECT', 'ENCODING', 'bighash' if scen == 'big' else 'user:1']])
    encname = c.last.decode()
    u1, r1 = info_mem(c)
    print('%s %s: encoding=%s load=%.1fs used_memory %.1f -> %.1f MB (+%.1f MB), used_memory_rss %.1f -> %.1f MB (+%.1f MB), VmRSS %.1f MB'
          % (os.path.basename(binary), scen, encname, load, u0/1e6, u1/1e6, (u1 - u0) / 1e6, r0/1e6, r1 / 1e6, (r1-r0)/1e6, rss(p.pid) / 1e6))
finally:
    p.terminate(); p.wait()
