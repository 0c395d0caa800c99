//! The load loop: OS threads each running a tokio current-thread runtime
//! that drives its share of the connections. Each connection builds one
//! pipeline batch into a reused buffer (template copies with the key digits
//! patched in place), writes it with one write per node, and skips over the
//! replies without allocating.

use crate::cluster::{self, Redirect, SLOTS};
use crate::conn::{clean_io_error, Addr, Conn};
use crate::keys::{write_key_digits, KeyGen, KeySpace, Rng, RAND_WIDTH};
use crate::memcache::{self, McKind};
use crate::resp::{self, Kind};
use crate::workload::{KeyChoice, Protocol, Workload};
use hdrhistogram::Histogram;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How many error / mismatch messages are kept for the report.
pub const KEEP_MESSAGES: usize = 5;

/// The cluster slot map: node addresses and the node index of each slot.
#[derive(Clone, Debug)]
pub struct SlotMap {
    /// Node addresses (`host:port`).
    pub nodes: Vec<String>,
    /// Index into `nodes` for each of the 16384 slots.
    pub slots: Vec<u16>,
}

impl SlotMap {
    /// Builds a map from `(start, end, addr)` ranges; unassigned slots go to
    /// the first node (which will redirect).
    pub fn from_ranges(ranges: &[(u16, u16, String)]) -> Self {
        let mut nodes: Vec<String> = Vec::new();
        let mut slots = vec![0u16; SLOTS];
        for (start, end, addr) in ranges {
            let idx = match nodes.iter().position(|n| n == addr) {
                Some(i) => i,
                None => {
                    nodes.push(addr.clone());
                    nodes.len() - 1
                }
            };
            for s in *start..=*end {
                slots[s as usize] = idx as u16;
            }
        }
        if nodes.is_empty() {
            nodes.push(String::new());
        }
        SlotMap { nodes, slots }
    }
}

/// Everything a phase needs to know about one target and the load shape.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The target (the seed node in cluster mode).
    pub addr: Addr,
    /// Wire protocol.
    pub protocol: Protocol,
    /// Number of connections (`-c`).
    pub clients: usize,
    /// Number of OS threads (`--threads`).
    pub threads: usize,
    /// Requests per pipeline batch (`-P`).
    pub pipeline: usize,
    /// Total requests (`-n`); `None` runs until `duration` ends.
    pub requests: Option<u64>,
    /// Run time (`--test-time`).
    pub duration: Option<Duration>,
    /// Target rate in requests per second over all connections (`--rate`).
    pub rate: Option<f64>,
    /// `AUTH` password (`-a`).
    pub auth: Option<String>,
    /// Keyspace and patterns; `None` leaves `__rand_int__` keys literal.
    pub keys: Option<(KeySpace, KeyChoice)>,
    /// Slot map in cluster mode.
    pub cluster: Option<Arc<SlotMap>>,
    /// Random seed.
    pub seed: u64,
}

/// Statistics of one request kind within a phase.
#[derive(Clone, Debug)]
pub struct OpStats {
    /// Request kind name (`SET`, `GET`, ...).
    pub name: String,
    /// Replies received.
    pub count: u64,
    /// Error replies among them.
    pub errors: u64,
    /// Latency in microseconds.
    pub hist: Histogram<u64>,
}

/// The outcome of running one workload against one target.
#[derive(Clone, Debug)]
pub struct PhaseResult {
    /// Workload name.
    pub name: String,
    /// Target label.
    pub target: String,
    /// Per request kind.
    pub ops: Vec<OpStats>,
    /// All request kinds together.
    pub total: Histogram<u64>,
    /// Wall time of the phase.
    pub elapsed: Duration,
    /// Error replies.
    pub errors: u64,
    /// First few error replies.
    pub first_errors: Vec<String>,
    /// `--verify` mismatches.
    pub mismatches: u64,
    /// First few mismatch descriptions.
    pub first_mismatches: Vec<String>,
    /// Connection / protocol failures (each ends one connection).
    pub io_errors: Vec<String>,
    /// Cluster redirects followed.
    pub redirects: u64,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
}

impl PhaseResult {
    /// Replies received, all kinds.
    pub fn requests(&self) -> u64 {
        self.ops.iter().map(|o| o.count).sum()
    }

    /// Requests per second.
    pub fn rps(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.requests() as f64 / s
        } else {
            0.0
        }
    }
}

/// A latency histogram in microseconds, 1 µs to 1 hour, 3 significant digits.
pub fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

struct Shared {
    remaining: AtomicI64,
    stop: AtomicBool,
    done: AtomicU64,
    finished: AtomicUsize,
    messages: Mutex<Messages>,
    kept_errors: AtomicUsize,
}

#[derive(Default)]
struct Messages {
    errors: Vec<String>,
    mismatches: Vec<String>,
    io: Vec<String>,
}

impl Shared {
    fn note_error(&self, text: &[u8]) {
        if self.kept_errors.fetch_add(1, Ordering::Relaxed) < KEEP_MESSAGES {
            let mut m = self.messages.lock().unwrap();
            m.errors.push(String::from_utf8_lossy(text).into_owned());
        }
    }

    fn note_mismatch(&self, text: String) {
        let mut m = self.messages.lock().unwrap();
        if m.mismatches.len() < KEEP_MESSAGES {
            m.mismatches.push(text);
        }
    }

    fn note_io(&self, text: String) {
        let mut m = self.messages.lock().unwrap();
        if m.io.len() < KEEP_MESSAGES {
            m.io.push(text);
        }
    }
}

/// Live view of a running phase for the progress display.
pub struct Progress {
    shared: Arc<Shared>,
}

impl Progress {
    /// Requests completed so far.
    pub fn done(&self) -> u64 {
        self.shared.done.load(Ordering::Relaxed)
    }

    /// Asks every connection to stop after its current batch.
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

/// Runs `wl` against `spec.addr`, calling `tick` about every 100 ms with the
/// live progress; `tick` returns false to stop early (Ctrl-C).
pub fn run_phase(
    spec: &RunSpec,
    wl: &Workload,
    mut tick: impl FnMut(&Progress) -> bool,
) -> PhaseResult {
    let shared = Arc::new(Shared {
        remaining: AtomicI64::new(spec.requests.map_or(i64::MAX, |n| n as i64)),
        stop: AtomicBool::new(false),
        done: AtomicU64::new(0),
        finished: AtomicUsize::new(0),
        messages: Mutex::new(Messages::default()),
        kept_errors: AtomicUsize::new(0),
    });
    let spec = Arc::new(spec.clone());
    let wl = Arc::new(wl.clone());
    let threads = spec.threads.clamp(1, spec.clients.max(1));
    let start = Instant::now();
    let deadline = spec.duration.map(|d| start + d);
    let mut handles = Vec::new();
    for t in 0..threads {
        let ids: Vec<usize> = (t..spec.clients).step_by(threads).collect();
        let (spec, wl, shared) = (spec.clone(), wl.clone(), shared.clone());
        handles.push(std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            let done_flag = shared.clone();
            let stats = rt.block_on(async move {
                let mut set = tokio::task::JoinSet::new();
                for id in ids {
                    set.spawn(run_client(
                        spec.clone(),
                        wl.clone(),
                        shared.clone(),
                        id,
                        start,
                        deadline,
                    ));
                }
                let mut all = Vec::new();
                while let Some(r) = set.join_next().await {
                    if let Ok(s) = r {
                        all.push(s);
                    }
                }
                all
            });
            let end = Instant::now();
            done_flag.finished.fetch_add(1, Ordering::Relaxed);
            (stats, end)
        }));
    }
    let progress = Progress {
        shared: shared.clone(),
    };
    let mut interrupted = false;
    while shared.finished.load(Ordering::Relaxed) < threads {
        std::thread::sleep(Duration::from_millis(10));
        if let Some(d) = deadline {
            if Instant::now() >= d {
                progress.stop();
            }
        }
        if !interrupted && !tick(&progress) {
            interrupted = true;
            progress.stop();
        }
    }
    let mut end = start;
    let mut ops: Vec<OpStats> = wl
        .ops
        .iter()
        .map(|t| OpStats {
            name: t.name.clone(),
            count: 0,
            errors: 0,
            hist: new_hist(),
        })
        .collect();
    let mut total = new_hist();
    let (mut mismatches, mut redirects) = (0, 0);
    for h in handles {
        let (stats, t_end) = h.join().unwrap_or_else(|_| (Vec::new(), Instant::now()));
        end = end.max(t_end);
        for c in stats {
            for (o, s) in ops.iter_mut().zip(c.ops) {
                o.count += s.count;
                o.errors += s.errors;
                let _ = o.hist.add(&s.hist);
                let _ = total.add(&s.hist);
            }
            mismatches += c.mismatches;
            redirects += c.redirects;
        }
    }
    let elapsed = end.duration_since(start);
    let m = std::mem::take(&mut *shared.messages.lock().unwrap());
    PhaseResult {
        name: wl.name.clone(),
        target: spec.addr.to_string(),
        errors: ops.iter().map(|o| o.errors).sum(),
        ops,
        total,
        elapsed,
        first_errors: m.errors,
        mismatches,
        first_mismatches: m.mismatches,
        io_errors: m.io,
        redirects,
        interrupted,
    }
}

struct ClientStats {
    ops: Vec<OpStats>,
    mismatches: u64,
    redirects: u64,
}

/// What a reply must be in `--verify` mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    Any,
    Stored,
    Value(u32),
    Deleted,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    op: u8,
    start: u32,
    end: u32,
    expect: Expect,
}

/// A reply of either protocol.
#[derive(Clone, Debug)]
enum Reply {
    Resp(resp::Frame),
    Mc(memcache::McFrame),
}

impl Reply {
    fn len(&self) -> usize {
        match self {
            Reply::Resp(f) => f.len,
            Reply::Mc(f) => f.len,
        }
    }

    fn is_error(&self) -> bool {
        match self {
            Reply::Resp(f) => f.is_error(),
            Reply::Mc(f) => f.kind == McKind::Error,
        }
    }

    fn body(&self) -> Range<usize> {
        match self {
            Reply::Resp(f) => f.body.clone(),
            Reply::Mc(f) => f.body.clone(),
        }
    }
}

struct Node {
    addr: Addr,
    conn: Option<Conn>,
    wbuf: Vec<u8>,
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    pending: Vec<Pending>,
}

#[derive(Debug)]
struct Fatal(String);

impl Node {
    fn new(addr: Addr) -> Self {
        Node {
            addr,
            conn: None,
            wbuf: Vec::with_capacity(4096),
            rbuf: vec![0; 16384],
            rstart: 0,
            rend: 0,
            pending: Vec::new(),
        }
    }

    async fn ensure(&mut self, auth: Option<&str>, protocol: Protocol) -> Result<(), Fatal> {
        if self.conn.is_some() {
            return Ok(());
        }
        let conn = Conn::connect(&self.addr).await.map_err(|e| {
            Fatal(format!(
                "Could not connect to {} at {}: {}",
                server_word(protocol),
                self.addr,
                clean_io_error(&e)
            ))
        })?;
        self.conn = Some(conn);
        if let Some(pw) = auth {
            let mut cmd = Vec::new();
            resp::encode_command(&mut cmd, &["AUTH", pw]);
            self.send(&cmd).await?;
            let r = self.next_reply(protocol).await?;
            if r.is_error() {
                let text = self.text(&r);
                return Err(Fatal(format!("AUTH failed: {text}")));
            }
            self.rstart += r.len();
        }
        Ok(())
    }

    async fn send(&mut self, bytes: &[u8]) -> Result<(), Fatal> {
        let addr = &self.addr;
        let conn = self.conn.as_mut().expect("connected");
        conn.write_all(bytes)
            .await
            .map_err(|e| Fatal(format!("write to {addr}: {}", clean_io_error(&e))))
    }

    async fn flush_wbuf(&mut self) -> Result<(), Fatal> {
        let addr = &self.addr;
        let conn = self.conn.as_mut().expect("connected");
        conn.write_all(&self.wbuf)
            .await
            .map_err(|e| Fatal(format!("write to {addr}: {}", clean_io_error(&e))))
    }

    fn text(&self, r: &Reply) -> String {
        let b = r.body();
        String::from_utf8_lossy(&self.rbuf[self.rstart + b.start..self.rstart + b.end]).into_owned()
    }

    /// Parses the next complete reply, reading more as needed. The reply
    /// stays in the buffer at `rstart`; the caller advances `rstart`.
    async fn next_reply(&mut self, protocol: Protocol) -> Result<Reply, Fatal> {
        loop {
            let avail = &self.rbuf[self.rstart..self.rend];
            let parsed = match protocol {
                Protocol::Redis => resp::skip_reply(avail).map(|o| o.map(Reply::Resp)),
                Protocol::Memcached => memcache::skip_reply(avail).map(|o| o.map(Reply::Mc)),
            };
            match parsed {
                Ok(Some(r)) => return Ok(r),
                Ok(None) => self.fill().await?,
                Err(e) => return Err(Fatal(format!("{} from {}", e, self.addr))),
            }
        }
    }

    async fn fill(&mut self) -> Result<(), Fatal> {
        if self.rstart == self.rend {
            self.rstart = 0;
            self.rend = 0;
        } else if self.rbuf.len() - self.rend < 4096 {
            self.rbuf.copy_within(self.rstart..self.rend, 0);
            self.rend -= self.rstart;
            self.rstart = 0;
            if self.rbuf.len() - self.rend < 4096 {
                let n = self.rbuf.len() * 2;
                self.rbuf.resize(n, 0);
            }
        }
        let addr = &self.addr;
        let conn = self.conn.as_mut().expect("connected");
        match conn.read(&mut self.rbuf[self.rend..]).await {
            Ok(0) => Err(Fatal(format!("connection to {addr} closed by server"))),
            Ok(n) => {
                self.rend += n;
                Ok(())
            }
            Err(e) => Err(Fatal(format!("read from {addr}: {}", clean_io_error(&e)))),
        }
    }
}

fn server_word(p: Protocol) -> &'static str {
    match p {
        Protocol::Redis => "Redis",
        Protocol::Memcached => "memcached",
    }
}

struct Client {
    /// This connection's number (0..clients), to stagger `--rate` schedules.
    id: usize,
    spec: Arc<RunSpec>,
    wl: Arc<Workload>,
    shared: Arc<Shared>,
    nodes: Vec<Node>,
    slots: Option<Vec<u16>>,
    rng: Rng,
    keygens: Vec<KeyGen>,
    stats: ClientStats,
    cycle_pos: usize,
    verify_key: Vec<u8>,
    values: Vec<Vec<u8>>,
}

struct Retry {
    op: u8,
    expect: Expect,
    bytes: Vec<u8>,
    redirect: Redirect,
}

async fn run_client(
    spec: Arc<RunSpec>,
    wl: Arc<Workload>,
    shared: Arc<Shared>,
    id: usize,
    start: Instant,
    deadline: Option<Instant>,
) -> ClientStats {
    let mut rng = Rng::new(spec.seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let keygens = wl
        .ops
        .iter()
        .map(|t| match &spec.keys {
            Some((space, choice)) => {
                let p = if t.is_write {
                    choice.set_pattern
                } else {
                    choice.get_pattern
                };
                KeyGen::new(p, space, id as u64, spec.clients as u64)
            }
            None => KeyGen::new(crate::keys::KeyPattern::Random, &KeySpace::new(0, 0), 0, 1),
        })
        .collect();
    let (nodes, slots) = match &spec.cluster {
        Some(map) => (
            map.nodes
                .iter()
                .map(|a| Node::new(Addr::Tcp(a.clone())))
                .collect(),
            Some(map.slots.clone()),
        ),
        None => (vec![Node::new(spec.addr.clone())], None),
    };
    let cycle_pos = rng.below(wl.cycle.len() as u64) as usize;
    let mut c = Client {
        stats: ClientStats {
            ops: wl
                .ops
                .iter()
                .map(|t| OpStats {
                    name: t.name.clone(),
                    count: 0,
                    errors: 0,
                    hist: new_hist(),
                })
                .collect(),
            mismatches: 0,
            redirects: 0,
        },
        id,
        spec,
        wl,
        shared,
        nodes,
        slots,
        rng,
        keygens,
        cycle_pos,
        // The hash tag keeps every round's key in one cluster slot.
        verify_key: format!("{{ferrokv-benchmark:verify:{id}:{}}}", std::process::id())
            .into_bytes(),
        values: Vec::new(),
    };
    if let Err(Fatal(msg)) = c.run(start, deadline).await {
        c.shared.note_io(msg);
    }
    c.stats
}

impl Client {
    async fn run(&mut self, _start: Instant, deadline: Option<Instant>) -> Result<(), Fatal> {
        let protocol = self.spec.protocol;
        let auth = self.spec.auth.clone();
        if self.slots.is_none() {
            self.nodes[0].ensure(auth.as_deref(), protocol).await?;
        }
        let per_conn_interval = self
            .spec
            .rate
            .map(|r| Duration::from_secs_f64(self.spec.clients as f64 / r.max(1e-9)));
        let pipeline = self.spec.pipeline.max(1);
        // The --rate schedule starts once connected (connection set-up is
        // not charged to the first request), and connection `id` is offset
        // by id/clients of an interval so that together the connections send
        // evenly spaced requests instead of bursts.
        let sched0 = match per_conn_interval {
            Some(iv) => {
                Instant::now() + iv.mul_f64(self.id as f64 / self.spec.clients.max(1) as f64)
            }
            None => Instant::now(),
        };
        let mut sent: u64 = 0;
        let mut retries: Vec<Retry> = Vec::new();
        loop {
            if self.shared.stop.load(Ordering::Relaxed) {
                break;
            }
            if let Some(d) = deadline {
                if Instant::now() >= d {
                    break;
                }
            }
            let want = pipeline as i64;
            let n = if self.spec.requests.is_some() {
                let before = self.shared.remaining.fetch_sub(want, Ordering::Relaxed);
                if before <= 0 {
                    break;
                }
                before.min(want) as usize
            } else {
                pipeline
            };
            // Schedule: with --rate, latency counts from the intended send
            // time, so a late batch is charged for the wait (no coordinated
            // omission).
            let send_time = match per_conn_interval {
                Some(iv) => {
                    let intended = sched0 + iv.mul_f64(sent as f64);
                    if intended > Instant::now() {
                        tokio::time::sleep_until(intended.into()).await;
                    }
                    intended
                }
                None => Instant::now(),
            };
            sent += n as u64;
            if self.wl.verify {
                // SETs, then GETs, then DELs, each stage one round trip of
                // `n` pipelined requests, so each command has its own
                // latency.
                for stage in 0..3u8 {
                    let t = if stage == 0 {
                        send_time
                    } else {
                        Instant::now()
                    };
                    self.build_verify(n, stage);
                    self.round_trip(t, &mut retries).await?;
                }
            } else {
                self.build_batch(n)?;
                self.round_trip(send_time, &mut retries).await?;
            }
            let done = if self.wl.verify { 3 * n } else { n };
            self.shared.done.fetch_add(done as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Sends what [`Self::build_batch`] or [`Self::build_verify`] encoded
    /// and reads every reply, following cluster redirects; latencies count
    /// from `send_time`.
    async fn round_trip(
        &mut self,
        send_time: Instant,
        retries: &mut Vec<Retry>,
    ) -> Result<(), Fatal> {
        let protocol = self.spec.protocol;
        let auth = self.spec.auth.clone();
        for i in 0..self.nodes.len() {
            if !self.nodes[i].pending.is_empty() {
                self.nodes[i].ensure(auth.as_deref(), protocol).await?;
                self.nodes[i].flush_wbuf().await?;
            }
        }
        for i in 0..self.nodes.len() {
            self.read_node(i, send_time, retries).await?;
        }
        for r in std::mem::take(retries) {
            self.follow(r, send_time).await?;
        }
        Ok(())
    }

    /// Encodes `n` requests of the workload.
    fn build_batch(&mut self, n: usize) -> Result<(), Fatal> {
        for node in &mut self.nodes {
            node.wbuf.clear();
            node.pending.clear();
        }
        let randomize = self.spec.keys.is_some();
        for _ in 0..n {
            let op = self.wl.cycle[self.cycle_pos] as usize;
            self.cycle_pos += 1;
            if self.cycle_pos == self.wl.cycle.len() {
                self.cycle_pos = 0;
            }
            let t = &self.wl.ops[op];
            // Route first (by the final key), so encode into a scratch
            // position of node 0 only when not clustered.
            let node_idx = if let Some(slots) = &self.slots {
                let mut key = [0u8; 64];
                let (ks, ke) = t.key.unwrap_or((0, 0));
                let klen = (ke - ks).min(64);
                key[..klen].copy_from_slice(&t.bytes[ks..ks + klen]);
                if randomize {
                    for &off in &t.rand_offsets {
                        if off >= ks && off + RAND_WIDTH <= ks + klen {
                            let k = self.keygens[op].next(&mut self.rng);
                            write_key_digits(&mut key[off - ks..off - ks + RAND_WIDTH], k);
                        }
                    }
                }
                // Re-encode below with the same digits: remember them.
                let slot = cluster::slot(&key[..klen]);
                let node = slots[slot as usize] as usize;
                let base = self.nodes[node].wbuf.len();
                self.nodes[node].wbuf.extend_from_slice(&t.bytes);
                let buf = &mut self.nodes[node].wbuf;
                buf[base + ks..base + ks + klen].copy_from_slice(&key[..klen]);
                if randomize {
                    for &off in &t.rand_offsets {
                        if !(off >= ks && off + RAND_WIDTH <= ks + klen) {
                            let k = self.keygens[op].next(&mut self.rng);
                            write_key_digits(&mut buf[base + off..base + off + RAND_WIDTH], k);
                        }
                    }
                }
                node
            } else {
                let buf = &mut self.nodes[0].wbuf;
                let base = buf.len();
                buf.extend_from_slice(&t.bytes);
                if randomize {
                    for &off in &t.rand_offsets {
                        let k = self.keygens[op].next(&mut self.rng);
                        write_key_digits(&mut buf[base + off..base + off + RAND_WIDTH], k);
                    }
                }
                0
            };
            let node = &mut self.nodes[node_idx];
            let end = node.wbuf.len();
            let start = end - t.bytes.len();
            node.pending.push(Pending {
                op: op as u8,
                start: start as u32,
                end: end as u32,
                expect: Expect::Any,
            });
        }
        Ok(())
    }

    fn build_verify(&mut self, n: usize, stage: u8) {
        for node in &mut self.nodes {
            node.wbuf.clear();
            node.pending.clear();
        }
        while self.values.len() < n {
            self.values.push(vec![0u8; 256]);
        }
        let node_idx = match &self.slots {
            Some(slots) => slots[cluster::slot(&self.verify_key) as usize] as usize,
            None => 0,
        };
        let mut key = self.verify_key.clone();
        let base = key.len();
        for i in 0..n {
            // One key per round of the batch: the n SETs of a batch go out
            // before its n GETs.
            key.truncate(base);
            key.push(b':');
            key.extend_from_slice(i.to_string().as_bytes());
            if stage == 0 {
                self.rng.fill(&mut self.values[i]);
            }
            let value = &self.values[i];
            let node = &mut self.nodes[node_idx];
            let push = |op: u8, expect: Expect, node: &mut Node, f: &dyn Fn(&mut Vec<u8>)| {
                let start = node.wbuf.len();
                f(&mut node.wbuf);
                node.pending.push(Pending {
                    op,
                    start: start as u32,
                    end: node.wbuf.len() as u32,
                    expect,
                });
            };
            match self.spec.protocol {
                Protocol::Redis => match stage {
                    0 => push(0, Expect::Stored, node, &|b| {
                        resp::encode_command(b, &[&b"SET"[..], &key, value])
                    }),
                    1 => push(1, Expect::Value(i as u32), node, &|b| {
                        resp::encode_command(b, &[&b"GET"[..], &key])
                    }),
                    _ => push(2, Expect::Deleted, node, &|b| {
                        resp::encode_command(b, &[&b"DEL"[..], &key])
                    }),
                },
                Protocol::Memcached => match stage {
                    0 => push(0, Expect::Stored, node, &|b| {
                        memcache::encode_set(b, &key, value)
                    }),
                    1 => push(1, Expect::Value(i as u32), node, &|b| {
                        memcache::encode_get(b, &key)
                    }),
                    _ => push(2, Expect::Deleted, node, &|b| {
                        memcache::encode_delete(b, &key)
                    }),
                },
            }
        }
    }

    async fn read_node(
        &mut self,
        i: usize,
        send_time: Instant,
        retries: &mut Vec<Retry>,
    ) -> Result<(), Fatal> {
        let protocol = self.spec.protocol;
        let mut now = Instant::now();
        let mut idx = 0;
        while idx < self.nodes[i].pending.len() {
            let node = &mut self.nodes[i];
            let avail = &node.rbuf[node.rstart..node.rend];
            let parsed = match protocol {
                Protocol::Redis => resp::skip_reply(avail).map(|o| o.map(Reply::Resp)),
                Protocol::Memcached => memcache::skip_reply(avail).map(|o| o.map(Reply::Mc)),
            };
            let reply = match parsed {
                Ok(Some(r)) => r,
                Ok(None) => {
                    node.fill().await?;
                    now = Instant::now();
                    continue;
                }
                Err(e) => return Err(Fatal(format!("{} from {}", e, node.addr))),
            };
            let p = node.pending[idx];
            idx += 1;
            if self.slots.is_some() && reply.is_error() {
                let b = reply.body();
                let text = &node.rbuf[node.rstart + b.start..node.rstart + b.end];
                if let Some(redirect) = cluster::parse_redirect(text) {
                    retries.push(Retry {
                        op: p.op,
                        expect: p.expect,
                        bytes: node.wbuf[p.start as usize..p.end as usize].to_vec(),
                        redirect,
                    });
                    node.rstart += reply.len();
                    continue;
                }
            }
            self.account(
                i,
                &reply,
                p.op,
                p.expect,
                now.saturating_duration_since(send_time),
            );
            self.nodes[i].rstart += reply.len();
        }
        Ok(())
    }

    /// Records one reply (latency, error, verification) while it is still
    /// at `rstart` of node `i`'s read buffer.
    fn account(&mut self, i: usize, reply: &Reply, op: u8, expect: Expect, lat: Duration) {
        let node = &self.nodes[i];
        let body = reply.body();
        let data = &node.rbuf[node.rstart + body.start..node.rstart + body.end];
        let st = &mut self.stats.ops[op as usize];
        st.count += 1;
        st.hist.saturating_record((lat.as_micros() as u64).max(1));
        if reply.is_error() {
            st.errors += 1;
            self.shared.note_error(data);
        }
        if expect == Expect::Any {
            return;
        }
        let ok = match (expect, reply) {
            (Expect::Stored, Reply::Resp(f)) => f.kind == Kind::Simple && data == b"OK",
            (Expect::Stored, Reply::Mc(f)) => f.kind == McKind::Stored,
            (Expect::Value(v), Reply::Resp(f)) => {
                f.kind == Kind::Bulk && data == self.values[v as usize].as_slice()
            }
            (Expect::Value(v), Reply::Mc(f)) => {
                f.kind == McKind::Value && data == self.values[v as usize].as_slice()
            }
            (Expect::Deleted, Reply::Resp(f)) => f.kind == Kind::Integer && data == b"1",
            (Expect::Deleted, Reply::Mc(f)) => f.kind == McKind::Deleted,
            (Expect::Any, _) => true,
        };
        if !ok {
            self.stats.mismatches += 1;
            let what = match expect {
                Expect::Stored => "SET: expected OK/STORED".to_string(),
                Expect::Value(_) => "GET: expected the 256-byte value just set".to_string(),
                Expect::Deleted => "DEL: expected 1/DELETED".to_string(),
                Expect::Any => String::new(),
            };
            let got = match reply {
                Reply::Resp(f) => {
                    let head = node.rbuf[node.rstart];
                    format!(
                        "{}{:?} ({} bytes)",
                        head as char,
                        lossy_prefix(data),
                        f.body.len()
                    )
                }
                Reply::Mc(f) => format!(
                    "{:?} {:?} ({} bytes)",
                    f.kind,
                    lossy_prefix(data),
                    data.len()
                ),
            };
            self.shared.note_mismatch(format!(
                "{what}, got {got} for key {}",
                String::from_utf8_lossy(&self.verify_key)
            ));
        }
    }

    /// Follows a cluster redirect (and any chain of them, up to 5 hops).
    async fn follow(&mut self, mut r: Retry, send_time: Instant) -> Result<(), Fatal> {
        let protocol = self.spec.protocol;
        let auth = self.spec.auth.clone();
        for _ in 0..5 {
            self.stats.redirects += 1;
            let (addr, asking) = match &r.redirect {
                Redirect::Moved(slot, addr) => {
                    let idx = self.node_index(addr);
                    if let Some(slots) = &mut self.slots {
                        slots[*slot as usize] = idx as u16;
                    }
                    (addr.clone(), false)
                }
                Redirect::Ask(_, addr) => (addr.clone(), true),
            };
            let i = self.node_index(&addr);
            self.nodes[i].ensure(auth.as_deref(), protocol).await?;
            if asking {
                let mut cmd = Vec::new();
                resp::encode_command(&mut cmd, &["ASKING"]);
                cmd.extend_from_slice(&r.bytes);
                self.nodes[i].send(&cmd).await?;
                let ok = self.nodes[i].next_reply(protocol).await?;
                self.nodes[i].rstart += ok.len();
            } else {
                self.nodes[i].send(&r.bytes).await?;
            }
            let reply = self.nodes[i].next_reply(protocol).await?;
            if reply.is_error() {
                let b = reply.body();
                let n = &self.nodes[i];
                let text = &n.rbuf[n.rstart + b.start..n.rstart + b.end];
                if let Some(next) = cluster::parse_redirect(text) {
                    self.nodes[i].rstart += reply.len();
                    r.redirect = next;
                    continue;
                }
            }
            self.account(i, &reply, r.op, r.expect, send_time.elapsed());
            self.nodes[i].rstart += reply.len();
            return Ok(());
        }
        Err(Fatal("too many cluster redirects".into()))
    }

    fn node_index(&mut self, addr: &str) -> usize {
        if let Some(i) = self
            .nodes
            .iter()
            .position(|n| matches!(&n.addr, Addr::Tcp(a) if a == addr))
        {
            return i;
        }
        self.nodes.push(Node::new(Addr::Tcp(addr.to_string())));
        self.nodes.len() - 1
    }
}

fn lossy_prefix(data: &[u8]) -> String {
    let d = &data[..data.len().min(32)];
    let mut s: String = d
        .iter()
        .map(|&c| {
            if c.is_ascii_graphic() || c == b' ' {
                c as char
            } else {
                '.'
            }
        })
        .collect();
    if data.len() > 32 {
        s.push_str("...");
    }
    s
}
