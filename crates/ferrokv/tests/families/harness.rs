//! The in-process test rig: a `Server` built in the test's own process (no
//! listener, no worker threads), clients that run commands through
//! `cmd::execute` exactly as a connection does, and the server's clock
//! stopped at a time the test chooses, so TTLs, idle times and LFU decay
//! are tested by moving the clock instead of sleeping.
//!
//! Replies come back as the RESP bytes a connection would send, in a
//! `String` for readable assertions (`":1\r\n"`, `"$-1\r\n"`), or decoded
//! ([`Rig::int`], [`Rig::bulk`], [`Rig::array`]).

use ferrokv::clients::new_handle;
use ferrokv::cmd::client::Client;
use ferrokv::config::Config;
use ferrokv::resp::reply::Out;
use ferrokv::resp::OwnedArgs;
use ferrokv::server::Server;
use ferrokv::stats::ThreadStats;
use std::sync::Arc;
use std::time::Duration;

/// The time the clock of every rig starts at: 2023-11-14 22:13:20 UTC, in
/// ms since the Unix epoch.
pub const T0: u64 = 1_700_000_000_000;

/// A server and its clients, in-process.
pub struct Rig {
    /// The server under test.
    pub server: Arc<Server>,
    stats: Arc<ThreadStats>,
    clients: Vec<Client>,
    /// The client [`Rig::cmd`] and friends use (an index into the clients).
    pub current: usize,
}

impl Rig {
    /// A rig with Redis's default configuration (no save points, no AOF)
    /// and one client, clock stopped at [`T0`].
    pub fn new() -> Rig {
        Rig::with_config(&[])
    }

    /// [`Rig::new`] with directives applied first, e.g.
    /// `&[("list-max-listpack-size", "4")]`.
    pub fn with_config(directives: &[(&str, &str)]) -> Rig {
        let mut config = Config::default();
        config.set("save", "").unwrap();
        config.set("appendonly", "no").unwrap();
        for (k, v) in directives {
            config.load_str(&format!("{k} \"{v}\"")).unwrap();
        }
        ferrokv::cmd::init();
        let server = Server::new(config, 1);
        server.clock.set_ms(T0);
        let stats = server.stats.local(ferrokv::cmd::table().all.len());
        let mut rig = Rig {
            server,
            stats,
            clients: Vec::new(),
            current: 0,
        };
        rig.add_client();
        rig
    }

    /// Adds a client (authenticated, as with no password set) and returns
    /// its index. Blocking commands act as their non-blocking forms (no
    /// event loop to wait in), as inside MULTI.
    pub fn add_client(&mut self) -> usize {
        let n = self.clients.len();
        let h = new_handle(
            &self.server.clients,
            self.server.clock.now_ms(),
            format!("127.0.0.1:{}", 40000 + n),
            "127.0.0.1:6379".into(),
            -1,
            false,
        );
        self.server.clients.add(h.clone());
        let mut c = Client::new(h);
        c.authenticated = true;
        c.deny_blocking = true;
        self.clients.push(c);
        n
    }

    /// Runs one command given as separate arguments on the current client;
    /// returns the reply bytes.
    pub fn cmdv(&mut self, argv: &[&[u8]]) -> Vec<u8> {
        let mut o = OwnedArgs::default();
        for a in argv {
            o.push(a);
        }
        let c = &mut self.clients[self.current];
        // A connection reads the clock once per batch of requests.
        c.clock_us = self.server.clock.now_us();
        let mut out = Out::new();
        ferrokv::cmd::execute(&self.server, c, &mut out, &o.args(), &self.stats);
        // The end of a batch: BCAST invalidations go out.
        ferrokv::tracking::flush_bcast(&self.server.tracking_env());
        let mut bytes = out.buf;
        // Pushed frames (pub/sub, invalidations) wait in the outbox.
        let mut outbox = Vec::new();
        c.handle.outbox.take(&mut outbox);
        c.handle.outbox.written(outbox.len());
        bytes.extend_from_slice(&outbox);
        bytes
    }

    /// Runs a command line split at spaces; returns the reply as text.
    pub fn cmd(&mut self, line: &str) -> String {
        let argv: Vec<&[u8]> = line.split_whitespace().map(str::as_bytes).collect();
        String::from_utf8_lossy(&self.cmdv(&argv)).into_owned()
    }

    /// Runs a command line on client `i`.
    pub fn cmd_on(&mut self, i: usize, line: &str) -> String {
        let keep = std::mem::replace(&mut self.current, i);
        let r = self.cmd(line);
        self.current = keep;
        r
    }

    /// The integer reply of a command; panics on any other reply.
    pub fn int(&mut self, line: &str) -> i64 {
        let r = self.cmd(line);
        r.strip_prefix(':')
            .and_then(|v| v.strip_suffix("\r\n"))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{line}: not an integer reply: {r:?}"))
    }

    /// The bulk string reply of a command (None for a null); panics on any
    /// other reply.
    pub fn bulk(&mut self, line: &str) -> Option<String> {
        let r = self.cmd(line);
        match decode(r.as_bytes()) {
            (Value::Bulk(b), _) => b.map(|b| String::from_utf8_lossy(&b).into_owned()),
            other => panic!("{line}: not a bulk reply: {other:?}"),
        }
    }

    /// The elements of an array reply, each as text (nulls as "(nil)");
    /// panics on any other reply.
    pub fn array(&mut self, line: &str) -> Vec<String> {
        let r = self.cmd(line);
        match decode(r.as_bytes()) {
            (Value::Array(Some(items)), _) => items.iter().map(Value::text).collect(),
            other => panic!("{line}: not an array reply: {other:?}"),
        }
    }

    /// Moves the server's clock `ms` milliseconds forward.
    pub fn advance_ms(&self, ms: u64) {
        self.server.clock.advance_ms(ms);
    }

    /// Runs the cron's active expiry once (unbounded in practice: 1 s of
    /// budget), at the server's clock.
    pub fn active_expire(&self) {
        ferrokv::active_expire(&self.server, Duration::from_secs(1));
    }

    /// A field of INFO (all sections) as text.
    pub fn info(&mut self, field: &str) -> String {
        let all = self.bulk("INFO everything").unwrap_or_default();
        all.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
            .unwrap_or_else(|| panic!("INFO has no field {field}"))
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        for mut c in std::mem::take(&mut self.clients) {
            ferrokv::tx::unwatch_all(&self.server.tx_env(), &mut c.watch);
            ferrokv::pubsub::unsubscribe_all(
                &self.server.pubsub_env(),
                &c.handle.clone(),
                &mut c.pubsub,
            );
            self.server.clients.remove(c.handle.id);
        }
    }
}

/// A decoded RESP2/RESP3 reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `+...`
    Status(String),
    /// `-...`
    Error(String),
    /// `:n`
    Int(i64),
    /// `$n` (None: `$-1`) or RESP3 null `_`.
    Bulk(Option<Vec<u8>>),
    /// `*n` / `>n` / `~n` (None: `*-1`).
    Array(Option<Vec<Value>>),
    /// `%n`, as pairs.
    Map(Vec<(Value, Value)>),
    /// `,x`
    Double(String),
}

impl Value {
    /// A short text form: the string of a status, error, bulk or double,
    /// the number of an integer, "(nil)" for nulls, "[a, b]" for arrays.
    pub fn text(&self) -> String {
        match self {
            Value::Status(s) | Value::Error(s) | Value::Double(s) => s.clone(),
            Value::Int(n) => n.to_string(),
            Value::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
            Value::Bulk(None) | Value::Array(None) => "(nil)".into(),
            Value::Array(Some(v)) => format!(
                "[{}]",
                v.iter().map(Value::text).collect::<Vec<_>>().join(", ")
            ),
            Value::Map(pairs) => format!(
                "{{{}}}",
                pairs
                    .iter()
                    .map(|(k, v)| format!("{}: {}", k.text(), v.text()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// Decodes one reply at the start of `b`; returns it and the bytes it took.
/// Panics on malformed input (the encoder under test produced it).
pub fn decode(b: &[u8]) -> (Value, usize) {
    let end = b
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or_else(|| panic!("incomplete reply {:?}", String::from_utf8_lossy(b)));
    let line = std::str::from_utf8(&b[1..end]).unwrap();
    let rest = end + 2;
    let count = || line.parse::<i64>().unwrap();
    match b[0] {
        b'+' => (Value::Status(line.into()), rest),
        b'-' => (Value::Error(line.into()), rest),
        b':' => (Value::Int(count()), rest),
        b',' => (Value::Double(line.into()), rest),
        b'_' => (Value::Bulk(None), rest),
        b'$' if count() < 0 => (Value::Bulk(None), rest),
        b'$' => {
            let n = count() as usize;
            (Value::Bulk(Some(b[rest..rest + n].to_vec())), rest + n + 2)
        }
        b'*' if count() < 0 => (Value::Array(None), rest),
        b'*' | b'>' | b'~' => {
            let mut at = rest;
            let mut items = Vec::new();
            for _ in 0..count() {
                let (v, n) = decode(&b[at..]);
                items.push(v);
                at += n;
            }
            (Value::Array(Some(items)), at)
        }
        b'%' => {
            let mut at = rest;
            let mut pairs = Vec::new();
            for _ in 0..count() {
                let (k, n) = decode(&b[at..]);
                at += n;
                let (v, n) = decode(&b[at..]);
                at += n;
                pairs.push((k, v));
            }
            (Value::Map(pairs), at)
        }
        other => panic!("unknown reply type {:?}", other as char),
    }
}
