//! Error precedence and argument validation against redis-server 7.0, for
//! every command of Redis 7.0's command table (issue 23, item 7).
//!
//! The argument grammar of each command and subcommand comes from the
//! stored COMMAND DOCS reply of redis-server 7.0.15
//! (crates/ferrokv/src/cmd/server/command_docs.resp). From it the test
//! renders a valid request (optional arguments left out, the first
//! alternative of each `oneof`, one occurrence of each `multiple`), then
//! variants (each optional argument present, each alternative, two
//! occurrences, a non-repeatable option given twice, all options at once,
//! pairs of options) and, in each, invalid arguments in every position:
//! a non-number where an integer or double is expected, negative, zero,
//! fractional and overflowing numbers, `nan`/`inf`, an unknown token, an
//! empty string, a key of each other type (or a missing key), truncations
//! to every shorter length (wrong arity), an extra argument, and several of
//! these problems at once in different positions (seeded, deterministic:
//! `FERROKV_SEED` replays another draw).
//!
//! Every request goes to a fresh ferrokv and a fresh redis-server 7.0
//! holding the same dataset (restored after any command that may write),
//! and the replies are compared: errors byte for byte always, other replies
//! byte for byte except for the commands listed in [`LOOSE`], whose
//! successful replies depend on time, randomness, hash order or the server
//! itself (there only "both succeeded" is compared). Differences that are
//! intended are listed in [`ALLOW`] with their reason; any other difference
//! fails the test, listing each request with both replies.

mod common;
use common::resp::{parse, Resp};
use common::*;
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

/// Commands not sent at all, because their effect cannot be compared or
/// would break the run: SHUTDOWN stops the server, DEBUG can crash or stall
/// it, MONITOR and the SUBSCRIBE family turn the connection into a push
/// stream, SYNC/PSYNC into a replication stream, REPLICAOF/SLAVEOF and
/// FAILOVER change the replication role, CLIENT PAUSE stalls every client,
/// CLIENT REPLY OFF/SKIP suppresses the replies the harness waits for,
/// BGSAVE and BGREWRITEAOF start a child whose lifetime decides the next
/// one's reply ("Another child process is active"), a matter of timing.
const SKIP: &[&str] = &[
    "bgsave",
    "bgrewriteaof",
    "shutdown",
    "debug",
    "monitor",
    "subscribe",
    "psubscribe",
    "ssubscribe",
    "sync",
    "psync",
    "replicaof",
    "slaveof",
    "failover",
    "client|pause",
    "client|reply",
];

/// Commands after which the connection is replaced by a new one, because
/// they change the connection's state (selected db, protocol, transaction,
/// authentication, tracking, name...) or may close it, and the
/// UNSUBSCRIBE family, which replies once per channel (only the first reply
/// is compared).
const RECONNECT: &[&str] = &[
    "select",
    "hello",
    "reset",
    "auth",
    "multi",
    "exec",
    "discard",
    "watch",
    "unwatch",
    "quit",
    "readonly",
    "readwrite",
    "asking",
    "unsubscribe",
    "punsubscribe",
    "sunsubscribe",
];

/// Commands whose successful replies are not compared byte for byte (their
/// errors are): the reply holds times, ids, counters, randomness, hash
/// order, the server's own name/version/configuration or the command table
/// (where ferrokv also lists newer commands).
const LOOSE: &[&str] = &[
    "info",
    "time",
    "lastsave",
    "lolwut",
    "randomkey",
    "srandmember",
    "spop",
    "hrandfield",
    "zrandmember",
    "scan",
    "sscan",
    "keys",
    "smembers",
    "sunion",
    "sinter",
    "sdiff",
    "save",
    "xadd",
    "dump",
    "command",
    "command|count",
    "command|docs",
    "command|info",
    "command|list",
    "command|getkeys",
    "command|getkeysandflags",
    "config|get",
    "memory|stats",
    "memory|usage",
    "memory|doctor",
    "memory|malloc-stats",
    "object|idletime",
    "object|freq",
    "latency|doctor",
    "latency|history",
    "latency|latest",
    "latency|graph",
    "latency|histogram",
    "slowlog|get",
    "slowlog|len",
    "client|list",
    "client|info",
    "client|id",
    "client|kill",
    "client|trackinginfo",
    "acl|log",
    "acl|genpass",
    "acl|list",
    "acl|users",
    "acl|getuser",
    "function|stats",
    "function|dump",
    "xinfo|consumers",
    "xpending",
    "xautoclaim",
    "xclaim",
    "pfselftest",
    "module|list",
];

/// Intended differences: (command name, substring of the request line or
/// "" for every request of the command, reason). Each is also listed in
/// README's differences from Redis 7.0.
const ALLOW: &[(&str, &str, &str)] = &[
    (
        "client|help",
        "",
        "ferrokv also has CLIENT NO-TOUCH and CLIENT SETINFO (Redis 7.2), so its help lists them",
    ),
    (
        "script|debug",
        "",
        "ferrokv has no Lua debugger: SCRIPT DEBUG YES/SYNC is refused",
    ),
];

/// The dataset both servers hold before each request: one key of each type
/// (and `k:none`, never created).
const DATASET: &[&[&str]] = &[
    &["FLUSHALL"],
    &["SET", "k:str", "10"],
    &["RPUSH", "k:list", "a", "b", "c"],
    &["HSET", "k:hash", "f1", "1", "f2", "2"],
    &["SADD", "k:set", "a", "b", "c"],
    &["ZADD", "k:zset", "1", "a", "2", "b", "3", "c"],
    &["XADD", "k:stream", "1-1", "f", "v"],
    &["XGROUP", "CREATE", "k:stream", "g", "0"],
];

/// Key names of each type, the missing key last.
const KEYS: &[&str] = &[
    "k:str", "k:list", "k:hash", "k:set", "k:zset", "k:stream", "k:none",
];

/// Requests generated per command at most (a seeded sample beyond that).
const CAP: usize = 260;

/// One argument of the grammar (a node of COMMAND DOCS' `arguments`).
#[derive(Debug, Clone)]
struct Arg {
    id: usize,
    name: String,
    ty: String,
    token: Option<String>,
    optional: bool,
    multiple: bool,
    multiple_token: bool,
    args: Vec<Arg>,
}

/// One command or subcommand with its grammar.
#[derive(Debug)]
struct Cmd {
    /// `get`, `client|kill`.
    name: String,
    /// The words that name it (`CLIENT`, `KILL`).
    words: Vec<String>,
    group: String,
    args: Vec<Arg>,
    /// Every node in DFS order with its ancestors' ids.
    nodes: Vec<(Arg, Vec<usize>)>,
}

fn text(r: &Resp) -> String {
    match r {
        Resp::Bulk(Some(b)) | Resp::Line(_, b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("string expected, got {other:?}"),
    }
}

fn map(r: &Resp) -> Vec<(String, &Resp)> {
    match r {
        Resp::Agg(b'%', v) => v.chunks(2).map(|c| (text(&c[0]), &c[1])).collect(),
        other => panic!("map expected, got {other:?}"),
    }
}

fn parse_args(r: &Resp, next: &mut usize) -> Vec<Arg> {
    let Resp::Agg(_, items) = r else {
        panic!("arguments")
    };
    items
        .iter()
        .map(|it| {
            let mut a = Arg {
                id: *next,
                name: String::new(),
                ty: String::new(),
                token: None,
                optional: false,
                multiple: false,
                multiple_token: false,
                args: Vec::new(),
            };
            *next += 1;
            for (k, v) in map(it) {
                match k.as_str() {
                    "name" => a.name = text(v),
                    "type" => a.ty = text(v),
                    "token" => a.token = Some(text(v)),
                    "flags" => {
                        if let Resp::Agg(_, fl) = v {
                            for f in fl {
                                match text(f).as_str() {
                                    "optional" => a.optional = true,
                                    "multiple" => a.multiple = true,
                                    "multiple_token" => a.multiple_token = true,
                                    _ => {}
                                }
                            }
                        }
                    }
                    "arguments" => a.args = parse_args(v, next),
                    _ => {}
                }
            }
            a
        })
        .collect()
}

fn flatten(args: &[Arg], anc: &[usize], out: &mut Vec<(Arg, Vec<usize>)>) {
    for a in args {
        out.push((a.clone(), anc.to_vec()));
        let mut inner = anc.to_vec();
        inner.push(a.id);
        flatten(&a.args, &inner, out);
    }
}

fn load_commands() -> Vec<Cmd> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../ferrokv/src/cmd/server/command_docs.resp"
    );
    let raw = std::fs::read(path).expect("command_docs.resp");
    let top = parse(&raw);
    let mut out = Vec::new();
    fn add(name: String, doc: &Resp, out: &mut Vec<Cmd>) {
        let mut group = String::new();
        let mut args = Vec::new();
        let mut subs = Vec::new();
        let mut next = 0;
        for (k, v) in map(doc) {
            match k.as_str() {
                "group" => group = text(v),
                "arguments" => args = parse_args(v, &mut next),
                "subcommands" => subs = map(v).into_iter().map(|(n, d)| (n, d.clone())).collect(),
                _ => {}
            }
        }
        if subs.is_empty() {
            let mut nodes = Vec::new();
            flatten(&args, &[], &mut nodes);
            out.push(Cmd {
                words: name.split('|').map(str::to_uppercase).collect(),
                name,
                group,
                args,
                nodes,
            });
        } else {
            for (n, d) in subs {
                add(n, &d, out);
            }
        }
    }
    for (name, doc) in map(&top) {
        add(name, doc, &mut out);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// What one rendered argument is, for choosing its invalid replacements.
#[derive(Debug, Clone, PartialEq)]
enum Slot {
    Key,
    Int {
        timeout: bool,
    },
    Double {
        timeout: bool,
    },
    UnixTime,
    Token,
    /// `id`: a stream id.
    Str {
        id: bool,
    },
    Pattern,
}

/// Which optional parts a rendering includes.
#[derive(Default, Clone)]
struct Variant {
    include: HashSet<usize>,
    choice: BTreeMap<usize, usize>,
    reps: BTreeMap<usize, usize>,
    dup: Option<usize>,
}

/// The key a command's group works on.
fn home_key(group: &str) -> &'static str {
    match group {
        "list" => "k:list",
        "hash" => "k:hash",
        "set" => "k:set",
        "sorted-set" | "geo" => "k:zset",
        "stream" => "k:stream",
        _ => "k:str",
    }
}

fn valid_value(cmd: &Cmd, a: &Arg) -> (String, Slot) {
    let timeout = a.name == "timeout" || a.token.as_deref() == Some("BLOCK");
    match a.ty.as_str() {
        "key" => (home_key(&cmd.group).to_string(), Slot::Key),
        "integer" => ("1".into(), Slot::Int { timeout }),
        "double" => (
            if timeout { "0.01" } else { "1" }.into(),
            Slot::Double { timeout },
        ),
        "unix-time" => ("2000000000".into(), Slot::UnixTime),
        "pattern" => ("*".into(), Slot::Pattern),
        _ => {
            let zset = cmd.group == "sorted-set";
            let v = match a.name.as_str() {
                "start" if zset => "0",
                "stop" if zset => "-1",
                "min" if zset => "-",
                "max" if zset => "+",
                "host" => "127.0.0.1",
                "group" | "groupname" => "g",
                "consumer" | "consumername" => "c",
                "id" | "start" | "end" | "last-id" => "1-1",
                "script" => "return 1",
                "username" => "u1",
                "field" => "f1",
                "value" => "1",
                _ => "a",
            };
            let id = cmd.group == "stream" && ID_NAMES.contains(&a.name.as_str());
            (v.into(), Slot::Str { id })
        }
    }
}

fn render_arg(cmd: &Cmd, a: &Arg, v: &Variant, out: &mut Vec<(String, Slot)>) {
    if a.optional && !v.include.contains(&a.id) {
        return;
    }
    let times = if v.dup == Some(a.id) { 2 } else { 1 };
    for _ in 0..times {
        let reps = if a.multiple {
            *v.reps.get(&a.id).unwrap_or(&1)
        } else {
            1
        };
        for r in 0..reps {
            if a.ty != "pure-token" {
                if let Some(t) = &a.token {
                    if r == 0 || a.multiple_token {
                        out.push((t.clone(), Slot::Token));
                    }
                }
            }
            match a.ty.as_str() {
                "pure-token" => out.push((a.token.clone().unwrap_or_default(), Slot::Token)),
                "block" => {
                    for c in &a.args {
                        render_arg(cmd, c, v, out);
                    }
                }
                "oneof" => {
                    let i = *v.choice.get(&a.id).unwrap_or(&0);
                    render_arg(cmd, &a.args[i.min(a.args.len() - 1)], v, out);
                }
                _ => {
                    let (mut val, slot) = valid_value(cmd, a);
                    if r > 0 && matches!(slot, Slot::Str { id: false }) {
                        val = format!("{val}{r}");
                    }
                    out.push((val, slot));
                }
            }
        }
    }
}

/// Renders a variant; `numkeys` gets the number of keys that follow it.
fn render(cmd: &Cmd, v: &Variant) -> Vec<(String, Slot)> {
    let mut out = Vec::new();
    for a in &cmd.args {
        render_arg(cmd, a, v, &mut out);
    }
    if let Some(nk) = cmd
        .args
        .iter()
        .position(|a| a.name == "numkeys" || a.name == "numkey")
    {
        // Index of the numkeys slot: render the arguments before it.
        let mut before = Vec::new();
        for a in &cmd.args[..nk] {
            render_arg(cmd, a, v, &mut before);
        }
        let i = before.len();
        if i < out.len() {
            let keys = out[i + 1..]
                .iter()
                .take_while(|(_, s)| *s == Slot::Key)
                .count();
            out[i].0 = keys.to_string();
        }
    }
    out
}

/// String arguments that hold stream ids.
const ID_NAMES: &[&str] = &["id", "start", "end", "last-id"];

fn bad_values(s: &Slot, current: &str) -> Vec<String> {
    let v: Vec<&str> = match s {
        Slot::Key => KEYS.to_vec(),
        Slot::Int { timeout: false } => {
            vec![
                "abc",
                "1.5",
                "-1",
                "0",
                "9223372036854775808",
                "99999999999",
            ]
        }
        Slot::Int { timeout: true } => vec!["abc", "-1", "1.5", "9223372036854775808"],
        Slot::Double { timeout: false } => vec!["abc", "nan", "inf", "-1", "0", "1e400"],
        Slot::Double { timeout: true } => vec!["abc", "-1", "nan", "inf"],
        Slot::UnixTime => vec!["abc", "-1", "9223372036854775807"],
        Slot::Token => vec!["BOGUS"],
        Slot::Str { id: true } => vec!["abc", "0-0", "-", "+", "1-abc", "18446744073709551616"],
        Slot::Str { id: false } => vec!["", "-1"],
        Slot::Pattern => vec![],
    };
    v.into_iter()
        .filter(|x| *x != current)
        .map(String::from)
        .collect()
}

/// Every request for one command, deduplicated, in a fixed order.
fn requests(cmd: &Cmd, rng: &mut Rng) -> Vec<Vec<String>> {
    let mut variants: Vec<(Variant, bool)> = vec![(Variant::default(), true)];
    let with_anc = |id: usize, anc: &[usize]| {
        let mut v = Variant::default();
        v.include.insert(id);
        v.include.extend(anc.iter().copied());
        v
    };
    let optionals: Vec<&(Arg, Vec<usize>)> = cmd.nodes.iter().filter(|(a, _)| a.optional).collect();
    for (a, anc) in &cmd.nodes {
        if a.optional {
            variants.push((with_anc(a.id, anc), true));
            if !a.multiple {
                let mut v = with_anc(a.id, anc);
                v.dup = Some(a.id);
                variants.push((v, false));
            }
        }
        if a.ty == "oneof" {
            for i in 1..a.args.len() {
                let mut v = with_anc(a.id, anc);
                v.choice.insert(a.id, i);
                variants.push((v, true));
            }
        }
        if a.multiple {
            let mut v = with_anc(a.id, anc);
            v.reps.insert(a.id, 2);
            variants.push((v, true));
        }
    }
    if !optionals.is_empty() {
        let mut all = Variant::default();
        for (a, anc) in &optionals {
            all.include.insert(a.id);
            all.include.extend(anc.iter().copied());
        }
        variants.push((all.clone(), true));
        let mut last = all;
        for (a, _) in &cmd.nodes {
            if a.ty == "oneof" {
                last.choice.insert(a.id, a.args.len() - 1);
            }
        }
        variants.push((last, false));
        // Pairs of options (conflicting ones among them).
        let mut pairs = Vec::new();
        for i in 0..optionals.len() {
            for j in i + 1..optionals.len() {
                pairs.push((i, j));
            }
        }
        while pairs.len() > 12 {
            let k = rng.below(pairs.len());
            pairs.swap_remove(k);
        }
        for (i, j) in pairs {
            let mut v = with_anc(optionals[i].0.id, &optionals[i].1);
            v.include.insert(optionals[j].0.id);
            v.include.extend(optionals[j].1.iter().copied());
            variants.push((v, false));
        }
    }
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut seen = HashSet::new();
    let words = cmd.words.clone();
    let mut push = |args: Vec<String>, out: &mut Vec<Vec<String>>| {
        let mut req = words.clone();
        req.extend(args);
        if seen.insert(req.clone()) {
            out.push(req);
        }
    };
    let mut singles: Vec<Vec<String>> = Vec::new();
    let mut renders = Vec::new();
    for (v, mutate) in &variants {
        let r = render(cmd, v);
        let vals: Vec<String> = r.iter().map(|x| x.0.clone()).collect();
        push(vals.clone(), &mut out);
        if *mutate {
            for (i, (cur, slot)) in r.iter().enumerate() {
                for b in bad_values(slot, cur) {
                    let mut m = vals.clone();
                    m[i] = b;
                    singles.push(m);
                }
            }
        }
        renders.push(r);
    }
    // Tokens are case-insensitive.
    for r in [&renders[0], renders.last().unwrap()] {
        let low: Vec<String> = r
            .iter()
            .map(|(v, s)| {
                if *s == Slot::Token {
                    v.to_lowercase()
                } else {
                    v.clone()
                }
            })
            .collect();
        push(low, &mut out);
    }
    // Wrong arity: every truncation of the fullest rendering, one extra.
    let full = renders.iter().max_by_key(|r| r.len()).unwrap();
    let full_vals: Vec<String> = full.iter().map(|x| x.0.clone()).collect();
    for n in 0..full_vals.len() {
        push(full_vals[..n].to_vec(), &mut out);
    }
    let mut extra = renders[0].iter().map(|x| x.0.clone()).collect::<Vec<_>>();
    extra.push("extra".into());
    push(extra, &mut out);
    // Several problems at once, in different positions.
    let mut multi = Vec::new();
    for _ in 0..10 {
        let r = &renders[rng.below(renders.len())];
        if r.len() < 2 {
            break;
        }
        let mut m: Vec<String> = r.iter().map(|x| x.0.clone()).collect();
        let mut changed = 0;
        for _ in 0..3 {
            let i = rng.below(r.len());
            let bad = bad_values(&r[i].1, &r[i].0);
            if !bad.is_empty() {
                m[i] = bad[rng.below(bad.len())].clone();
                changed += 1;
            }
        }
        if changed > 0 {
            multi.push(m);
        }
    }
    for m in singles {
        push(m, &mut out);
    }
    for m in multi {
        push(m, &mut out);
    }
    while out.len() > CAP {
        // Keep the valid renderings (first) and sample the rest.
        let k = variants.len() + rng.below(out.len() - variants.len());
        out.remove(k);
    }
    out
}

/// Runs the requests against one server and returns each reply (or
/// `<closed>` / `<no reply>`), restoring the dataset after any request of a
/// command that may write.
fn run(label: &str, port: u16, reqs: &[(String, Vec<String>, bool)]) -> Vec<Vec<u8>> {
    let mut slow: BTreeMap<&str, Duration> = BTreeMap::new();
    let connect = || {
        let mut c = Raw::connect(port);
        c.set_timeout(Duration::from_secs(3));
        c
    };
    let mut c = connect();
    let restore = |c: &mut Raw| {
        for line in DATASET {
            let a: Vec<&[u8]> = line.iter().map(|s| s.as_bytes()).collect();
            let r = c.try_cmd(&a).expect("dataset");
            assert!(!r.starts_with(b"-"), "dataset {line:?}: {r:?}");
        }
    };
    restore(&mut c);
    let mut out = Vec::with_capacity(reqs.len());
    for (name, req, writes) in reqs {
        let a: Vec<&[u8]> = req.iter().map(|s| s.as_bytes()).collect();
        let t0 = std::time::Instant::now();
        let reply = match c.try_cmd(&a) {
            Ok(r) => r,
            Err(e) => {
                c = connect();
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut
                {
                    b"<no reply>".to_vec()
                } else {
                    b"<closed>".to_vec()
                }
            }
        };
        let top = name.split('|').next().unwrap_or("");
        if RECONNECT.contains(&top) || top == "client" {
            c = connect();
        }
        if *writes {
            restore(&mut c);
        }
        *slow.entry(name).or_default() += t0.elapsed();
        out.push(reply);
    }
    let mut slow: Vec<_> = slow.into_iter().collect();
    slow.sort_by_key(|x| std::cmp::Reverse(x.1));
    eprintln!("{label}: slowest commands {:?}", &slow[..slow.len().min(8)]);
    out
}

/// The write flag of every command and subcommand, from redis-server's
/// COMMAND INFO (true unless flagged `readonly`; `loading`/`stale`
/// read-only admin commands count as writes, which only costs a restore).
fn writes(c: &mut Raw, cmds: &[Cmd]) -> Vec<bool> {
    cmds.iter()
        .map(|cmd| {
            let a: Vec<&[u8]> = std::iter::once(b"COMMAND".as_slice())
                .chain(std::iter::once(b"INFO".as_slice()))
                .chain(std::iter::once(cmd.name.as_bytes()))
                .collect();
            let r = c.cmd(&a);
            !String::from_utf8_lossy(&r).contains("+readonly\r\n")
        })
        .collect()
}

fn show(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b).replace("\r\n", " ");
    if s.len() > 300 {
        format!(
            "{}...",
            &s[..s.char_indices().nth(300).map_or(s.len(), |x| x.0)]
        )
    } else {
        s
    }
}

#[test]
fn invalid_arguments_in_every_position_reply_as_redis() {
    let Some(mut p) = Pair::start() else { return };
    let cmds = load_commands();
    assert!(cmds.len() > 300, "{} commands in the docs", cmds.len());
    let w = writes(&mut p.b, &cmds);
    let mut rng = Rng(seed_from_env(23));
    let only = std::env::var("ARGDIFF_ONLY").ok();
    let mut reqs: Vec<(String, Vec<String>, bool)> = Vec::new();
    for (cmd, writes) in cmds.iter().zip(w) {
        if SKIP.contains(&cmd.name.as_str()) {
            continue;
        }
        if let Some(o) = &only {
            if !o.split(',').any(|x| x == cmd.name) {
                continue;
            }
        }
        for r in requests(cmd, &mut rng) {
            reqs.push((cmd.name.clone(), r, writes));
        }
    }
    eprintln!("{} requests over {} commands", reqs.len(), cmds.len());
    let (pa, pb) = (p.ours.port, p.redis.port);
    let (ours, theirs) = std::thread::scope(|s| {
        let a = s.spawn(|| run("ferrokv", pa, &reqs));
        let b = s.spawn(|| run("redis-server", pb, &reqs));
        (a.join().unwrap(), b.join().unwrap())
    });
    let mut diffs = Vec::new();
    let mut per_cmd: BTreeMap<&str, usize> = BTreeMap::new();
    for (((name, req, _), x), y) in reqs.iter().zip(&ours).zip(&theirs) {
        let same = if x.starts_with(b"-")
            || y.starts_with(b"-")
            || x.starts_with(b"<")
            || y.starts_with(b"<")
        {
            x == y
        } else {
            LOOSE.contains(&name.as_str()) || x == y
        };
        if same {
            continue;
        }
        let line = req.join(" ");
        if ALLOW
            .iter()
            .any(|(c, sub, _)| c == name && line.contains(sub))
        {
            continue;
        }
        *per_cmd.entry(name).or_default() += 1;
        diffs.push(format!(
            "{line:?}\n    ferrokv: {}\n    redis:   {}",
            show(x),
            show(y)
        ));
    }
    if let Ok(path) = std::env::var("ARGDIFF_DUMP") {
        std::fs::write(&path, diffs.join("\n")).unwrap();
    }
    assert!(
        diffs.is_empty(),
        "{} replies differ from redis-server 7.0 (per command: {per_cmd:?}):\n{}",
        diffs.len(),
        diffs
            .iter()
            .take(150)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
