//! Workloads: redis-benchmark's named tests, `--ratio` mixes, custom
//! commands and memcached equivalents, each as pre-encoded request
//! templates whose `__rand_int__` placeholders are patched in place.

use crate::keys::{KeyPattern, RAND_PLACEHOLDER, RAND_WIDTH};
use crate::{memcache, resp};

/// Wire protocol spoken to the targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// RESP (Redis, ferrokv).
    Redis,
    /// memcached text protocol.
    Memcached,
}

/// One pre-encoded request.
#[derive(Clone, Debug)]
pub struct Template {
    /// Name used in per-operation statistics (`SET`, `GET`, ...).
    pub name: String,
    /// The encoded request, placeholders included.
    pub bytes: Vec<u8>,
    /// Offsets of every `__rand_int__` placeholder in `bytes`.
    pub rand_offsets: Vec<usize>,
    /// Byte range of the key used for cluster routing.
    pub key: Option<(usize, usize)>,
    /// Whether this request is a write (uses the SET key pattern).
    pub is_write: bool,
}

impl Template {
    /// Encodes a RESP command; `key_arg` is the index of its routing key.
    pub fn redis(name: &str, args: &[Vec<u8>], key_arg: Option<usize>, is_write: bool) -> Self {
        let mut bytes = Vec::new();
        let mut key = None;
        for (i, a) in args.iter().enumerate() {
            if i == 0 {
                bytes.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
            }
            bytes.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            if Some(i) == key_arg {
                key = Some((bytes.len(), bytes.len() + a.len()));
            }
            bytes.extend_from_slice(a);
            bytes.extend_from_slice(b"\r\n");
        }
        debug_assert!({
            let mut check = Vec::new();
            resp::encode_command(&mut check, args);
            check == bytes
        });
        Self::finish(name, bytes, key, is_write)
    }

    /// A request sent as raw bytes (inline command, memcached line).
    pub fn raw(name: &str, bytes: Vec<u8>, key: Option<(usize, usize)>, is_write: bool) -> Self {
        Self::finish(name, bytes, key, is_write)
    }

    fn finish(name: &str, bytes: Vec<u8>, key: Option<(usize, usize)>, is_write: bool) -> Self {
        let rand_offsets = bytes
            .windows(RAND_WIDTH)
            .enumerate()
            .filter(|(_, w)| *w == RAND_PLACEHOLDER)
            .map(|(i, _)| i)
            .collect();
        Template {
            name: name.to_string(),
            bytes,
            rand_offsets,
            key,
            is_write,
        }
    }
}

/// A benchmark phase: one or more request templates mixed by weight.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Name printed in reports (`SET`, `LRANGE_100`, `SET:GET 1:10`, ...).
    pub name: String,
    /// The request kinds.
    pub ops: Vec<Template>,
    /// Deterministic cycle of op indexes realising the weights.
    pub cycle: Vec<u8>,
    /// SET/GET/DEL verification instead of plain load.
    pub verify: bool,
    /// Value size in bytes (`-d`, 256 for `--verify`).
    pub bytes_payload: usize,
}

impl Workload {
    fn single(name: &str, t: Template, payload: usize) -> Self {
        Workload {
            name: name.to_string(),
            ops: vec![t],
            cycle: vec![0],
            verify: false,
            bytes_payload: payload,
        }
    }
}

/// Key-selection settings for a run.
#[derive(Clone, Debug)]
pub struct KeyChoice {
    /// Pattern for write requests.
    pub set_pattern: KeyPattern,
    /// Pattern for read requests.
    pub get_pattern: KeyPattern,
}

/// The redis-benchmark test names, in the order redis-benchmark runs them.
pub const ALL_TESTS: &[&str] = &[
    "PING_INLINE",
    "PING_MBULK",
    "SET",
    "GET",
    "INCR",
    "LPUSH",
    "RPUSH",
    "LPOP",
    "RPOP",
    "SADD",
    "HSET",
    "SPOP",
    "ZADD",
    "ZPOPMIN",
    "LPUSH (needed to benchmark LRANGE)",
    "LRANGE_100 (first 100 elements)",
    "LRANGE_300 (first 300 elements)",
    "LRANGE_500 (first 500 elements)",
    "LRANGE_600 (first 600 elements)",
    "MSET (10 keys)",
];

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// Selects tests by redis-benchmark's `-t` rules: names are
/// case-insensitive, `ping` selects both pings, `lrange` (or any
/// `lrange_N`) also selects the LPUSH that fills the list.
pub fn select_tests(list: Option<&str>, protocol: Protocol) -> anyhow::Result<Vec<&'static str>> {
    let memcached_default = ["SET", "GET"];
    let Some(list) = list else {
        return Ok(match protocol {
            Protocol::Redis => ALL_TESTS.to_vec(),
            Protocol::Memcached => memcached_default.to_vec(),
        });
    };
    let wanted: Vec<String> = list
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    for w in &wanted {
        let known = ALL_TESTS.iter().any(|t| short(t) == *w) || w == "ping" || w == "lrange";
        if !known {
            anyhow::bail!("unknown test {w:?} (known: {})", known_list());
        }
    }
    let is = |s: &str| wanted.iter().any(|w| w == s);
    let mut out = Vec::new();
    for t in ALL_TESTS {
        let s = short(t);
        let selected = match s.as_str() {
            "ping_inline" | "ping_mbulk" => is(&s) || is("ping"),
            "lpush_lrange" => {
                is("lrange")
                    || ["lrange_100", "lrange_300", "lrange_500", "lrange_600"]
                        .iter()
                        .any(|x| is(x))
            }
            l if l.starts_with("lrange_") => is(l) || is("lrange"),
            _ => is(&s),
        };
        if selected {
            if protocol == Protocol::Memcached && !memcached_default.contains(t) {
                anyhow::bail!(
                    "test {t} is not available with --protocol memcached (only set, get)"
                );
            }
            out.push(*t);
        }
    }
    Ok(out)
}

fn short(t: &str) -> String {
    if t.starts_with("LPUSH (") {
        return "lpush_lrange".into();
    }
    t.split(' ').next().unwrap_or(t).to_ascii_lowercase()
}

fn known_list() -> String {
    let mut v: Vec<String> = ALL_TESTS.iter().map(|t| short(t)).collect();
    v.retain(|s| s != "lpush_lrange");
    v.push("ping".into());
    v.push("lrange".into());
    v.join(", ")
}

/// Builds the workload for one redis-benchmark test name. `rand` says
/// whether keys get the `__rand_int__` placeholder patched (`-r`), `data`
/// is the `-d` payload.
pub fn named_test(name: &str, data: &[u8], protocol: Protocol) -> Workload {
    let payload = data.len();
    if protocol == Protocol::Memcached {
        return match name {
            "SET" => Workload::single("SET", mc_set(data), payload),
            _ => Workload::single("GET", mc_get(), payload),
        };
    }
    let key = || b("key:__rand_int__");
    let d = || data.to_vec();
    let t = |n: &str, args: Vec<Vec<u8>>, key_arg: Option<usize>, w: bool| {
        Workload::single(name, Template::redis(n, &args, key_arg, w), payload)
    };
    match name {
        "PING_INLINE" => Workload::single(
            name,
            Template::raw("PING", b("PING\r\n"), None, false),
            payload,
        ),
        "PING_MBULK" => t("PING", vec![b("PING")], None, false),
        "SET" => t("SET", vec![b("SET"), key(), d()], Some(1), true),
        "GET" => t("GET", vec![b("GET"), key()], Some(1), false),
        "INCR" => t(
            "INCR",
            vec![b("INCR"), b("counter:__rand_int__")],
            Some(1),
            true,
        ),
        "LPUSH" | "LPUSH (needed to benchmark LRANGE)" => {
            t("LPUSH", vec![b("LPUSH"), b("mylist"), d()], Some(1), true)
        }
        "RPUSH" => t("RPUSH", vec![b("RPUSH"), b("mylist"), d()], Some(1), true),
        "LPOP" => t("LPOP", vec![b("LPOP"), b("mylist")], Some(1), true),
        "RPOP" => t("RPOP", vec![b("RPOP"), b("mylist")], Some(1), true),
        "SADD" => t(
            "SADD",
            vec![b("SADD"), b("myset"), b("element:__rand_int__")],
            Some(1),
            true,
        ),
        "HSET" => t(
            "HSET",
            vec![b("HSET"), b("myhash"), b("element:__rand_int__"), d()],
            Some(1),
            true,
        ),
        "SPOP" => t("SPOP", vec![b("SPOP"), b("myset")], Some(1), true),
        "ZADD" => t(
            "ZADD",
            vec![
                b("ZADD"),
                b("myzset"),
                b("__rand_int__"),
                b("element:__rand_int__"),
            ],
            Some(1),
            true,
        ),
        "ZPOPMIN" => t("ZPOPMIN", vec![b("ZPOPMIN"), b("myzset")], Some(1), true),
        "MSET (10 keys)" => {
            let mut args = vec![b("MSET")];
            for _ in 0..10 {
                args.push(key());
                args.push(d());
            }
            t("MSET", args, Some(1), true)
        }
        lrange if lrange.starts_with("LRANGE_") => {
            let n: usize = lrange[7..10].parse().unwrap_or(100);
            t(
                "LRANGE",
                vec![
                    b("LRANGE"),
                    b("mylist"),
                    b("0"),
                    (n - 1).to_string().into_bytes(),
                ],
                Some(1),
                false,
            )
        }
        other => panic!("unknown test {other}"),
    }
}

/// A memtier-style SET:GET mix with the given weights.
pub fn ratio_workload(sets: u32, gets: u32, data: &[u8], protocol: Protocol) -> Workload {
    let (set, get) = match protocol {
        Protocol::Redis => (
            Template::redis(
                "SET",
                &[b("SET"), b("key:__rand_int__"), data.to_vec()],
                Some(1),
                true,
            ),
            Template::redis("GET", &[b("GET"), b("key:__rand_int__")], Some(1), false),
        ),
        Protocol::Memcached => (mc_set(data), mc_get()),
    };
    let mut cycle = Vec::new();
    // Interleave evenly rather than all sets then all gets.
    let total = sets + gets;
    let mut acc = 0u32;
    for _ in 0..total {
        acc += sets;
        if acc >= total {
            acc -= total;
            cycle.push(0);
        } else {
            cycle.push(1);
        }
    }
    let ops = vec![set, get];
    Workload {
        name: format!("SET:GET {sets}:{gets}"),
        ops,
        cycle,
        verify: false,
        bytes_payload: data.len(),
    }
}

/// A custom command given on the command line (`ferrokv-benchmark ... SET k v`).
pub fn custom_workload(args: &[String]) -> Workload {
    let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
    let name = String::from_utf8_lossy(&args.join(&b' ')).into_owned();
    let key_arg = (args.len() > 1).then_some(1);
    let cmd = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    Workload::single(&name, Template::redis(&cmd, &args, key_arg, true), 0)
}

/// The `--verify` workload (SET, GET, DEL on a per-client key; the runner
/// generates the keys and values itself).
pub fn verify_workload() -> Workload {
    Workload {
        name: "VERIFY SET/GET/DEL".into(),
        ops: vec![
            Template::raw("SET", Vec::new(), None, true),
            Template::raw("GET", Vec::new(), None, false),
            Template::raw("DEL", Vec::new(), None, true),
        ],
        cycle: vec![0],
        verify: true,
        bytes_payload: 256,
    }
}

fn mc_set(data: &[u8]) -> Template {
    let mut bytes = Vec::new();
    memcache::encode_set(&mut bytes, b"key:__rand_int__", data);
    Template::raw("SET", bytes, Some((4, 20)), true)
}

fn mc_get() -> Template {
    let mut bytes = Vec::new();
    memcache::encode_get(&mut bytes, b"key:__rand_int__");
    Template::raw("GET", bytes, Some((4, 20)), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_follows_redis_benchmark() {
        let t = select_tests(Some("SET,get"), Protocol::Redis).unwrap();
        assert_eq!(t, vec!["SET", "GET"]);
        let t = select_tests(Some("ping"), Protocol::Redis).unwrap();
        assert_eq!(t, vec!["PING_INLINE", "PING_MBULK"]);
        let t = select_tests(Some("lrange_100"), Protocol::Redis).unwrap();
        assert_eq!(
            t,
            vec![
                "LPUSH (needed to benchmark LRANGE)",
                "LRANGE_100 (first 100 elements)"
            ]
        );
        assert!(select_tests(Some("nope"), Protocol::Redis).is_err());
        assert!(select_tests(Some("incr"), Protocol::Memcached).is_err());
        assert_eq!(select_tests(None, Protocol::Redis).unwrap().len(), 20);
    }

    #[test]
    fn templates_find_placeholders_and_keys() {
        let w = named_test("SET", b"xxx", Protocol::Redis);
        let t = &w.ops[0];
        assert_eq!(
            t.bytes,
            b"*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$3\r\nxxx\r\n"
        );
        assert_eq!(t.rand_offsets.len(), 1);
        let (s, e) = t.key.unwrap();
        assert_eq!(&t.bytes[s..e], b"key:__rand_int__");
        let w = named_test("MSET (10 keys)", b"x", Protocol::Redis);
        assert_eq!(w.ops[0].rand_offsets.len(), 10);
        let w = named_test("SET", b"ab", Protocol::Memcached);
        let (s, e) = w.ops[0].key.unwrap();
        assert_eq!(&w.ops[0].bytes[s..e], b"key:__rand_int__");
        let w = named_test("LRANGE_600 (first 600 elements)", b"x", Protocol::Redis);
        assert!(w.ops[0].bytes.ends_with(b"$3\r\n599\r\n"));
    }

    #[test]
    fn ratio_cycle_has_the_right_mix() {
        let w = ratio_workload(1, 10, b"x", Protocol::Redis);
        assert_eq!(w.cycle.len(), 11);
        assert_eq!(w.cycle.iter().filter(|&&c| c == 0).count(), 1);
        let w = ratio_workload(3, 2, b"x", Protocol::Redis);
        assert_eq!(w.cycle.iter().filter(|&&c| c == 0).count(), 3);
    }
}
