//! HyperLogLog commands (PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST)
//! against redis-server 7.0: seeded random sequences compare every reply
//! and the values themselves byte for byte (GET shows the sparse or dense
//! representation and the cached cardinality), across sparse-to-dense
//! promotion at several `hll-sparse-max-bytes`; HyperLogLogs built by
//! one server are counted and extended by the other (RESTORE of DUMP
//! payloads); corrupted and foreign values get Redis's errors.

mod common;
use common::*;

const KEYS: &[&str] = &["h1", "h2", "h3", "s", "l"];

fn element(r: &mut Rng) -> String {
    match r.below(4) {
        0 => format!("e{}", r.below(50)),
        1 => format!("{}", r.next()),
        2 => String::new(),
        _ => format!("member-{}-{}", r.below(100_000), "x".repeat(r.below(20))),
    }
}

fn random_command(r: &mut Rng) -> Vec<String> {
    let key = |r: &mut Rng| r.pick(KEYS).to_string();
    match r.below(20) {
        0..=6 => {
            let mut c = vec!["PFADD".into(), key(r)];
            let n = if r.below(10) == 0 {
                300 + r.below(700)
            } else {
                r.below(6)
            };
            for _ in 0..n {
                c.push(element(r));
            }
            c
        }
        7..=9 => {
            let mut c = vec!["PFCOUNT".into()];
            for _ in 0..1 + r.below(3) {
                c.push(key(r));
            }
            c
        }
        10 | 11 => {
            let mut c = vec!["PFMERGE".into(), key(r)];
            for _ in 0..r.below(3) {
                c.push(key(r));
            }
            c
        }
        12 => vec![
            "PFDEBUG".into(),
            r.pick(&["ENCODING", "decode", "TODENSE", "getreg", "nope"])
                .into(),
            key(r),
        ],
        13 => vec![
            "SET".into(),
            r.pick(&["s", "h3"]).into(),
            r.pick(&[
                "plain",
                "12345",
                "HYLL",
                // Sparse, its one XZERO covering 16369 registers: too few.
                "HYLL\u{1}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{7f}\u{70}",
            ])
            .into(),
        ],
        14 => vec!["RPUSH".into(), "l".into(), "x".into()],
        15 => vec!["DEL".into(), key(r)],
        16 => vec!["OBJECT".into(), "ENCODING".into(), key(r)],
        17 => vec![
            "CONFIG".into(),
            "SET".into(),
            "hll-sparse-max-bytes".into(),
            r.pick(&["40", "300", "3000", "0"]).into(),
        ],
        _ => vec!["GET".into(), key(r)],
    }
}

fn run_seed(seed: u64, resp3: bool, n: usize) {
    let Some(mut p) = Pair::start() else { return };
    if resp3 {
        p.a.cmd(&[b"HELLO", b"3"]);
        p.b.cmd(&[b"HELLO", b"3"]);
    }
    let mut r = Rng(seed);
    let mut history = Vec::new();
    for i in 0..n {
        let c = random_command(&mut r);
        let args: Vec<&[u8]> = c.iter().map(|s| s.as_bytes()).collect();
        let shown: Vec<String> = c.iter().take(6).cloned().collect();
        history.push(format!(
            "{shown:?}{}",
            if c.len() > 6 { " ..." } else { "" }
        ));
        let (ours, theirs) = p.both(&args);
        if ours != theirs {
            let tail = history[history.len().saturating_sub(12)..].join("\n");
            panic!(
                "seed {seed:#x} (resp3 {resp3}), command #{i} differs\nferrokv: {:?}\nredis:   {:?}\nlast commands:\n{tail}",
                String::from_utf8_lossy(&ours[..ours.len().min(400)]),
                String::from_utf8_lossy(&theirs[..theirs.len().min(400)])
            );
        }
    }
    for k in KEYS {
        p.check_line(&format!("GET {k}"));
        p.check_line(&format!("PFCOUNT {k}"));
    }
}

#[test]
fn differential_random_sequences() {
    let base = seed_from_env(0x411_0001);
    for s in 0..4 {
        run_seed(base + s, s == 3, 700);
    }
}

/// Large cardinalities: the estimator and the dense form agree with Redis
/// at every step, in one key and merged.
#[test]
fn large_cardinalities_match() {
    let Some(mut p) = Pair::start() else { return };
    let mut n = 0u64;
    for step in [10u64, 100, 1000, 5000, 20_000, 60_000] {
        let mut args: Vec<String> = vec!["PFADD".into(), "big".into()];
        while n < step {
            args.push(format!("item:{n}"));
            n += 1;
        }
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        p.check(&a);
        p.check_line("PFCOUNT big");
        p.check_line("PFDEBUG ENCODING big");
        p.check_line("GET big");
    }
    p.check_line("PFADD other a b c d e");
    p.check_line("PFCOUNT big other");
    p.check_line("PFMERGE dst other big");
    p.check_line("GET dst");
    p.check_line("PFCOUNT dst");
    p.check_line("PFDEBUG GETREG dst");
}

/// Each server counts and extends HyperLogLogs the other built.
#[test]
fn values_move_between_servers() {
    let Some(mut p) = Pair::start() else { return };
    for (i, n) in [3usize, 200, 3000].into_iter().enumerate() {
        let key = format!("k{i}");
        let mut args = vec!["PFADD".to_string(), key.clone()];
        args.extend((0..n).map(|j| format!("v{j}")));
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        // Built on redis-server only, moved to ferrokv by DUMP/RESTORE.
        p.b.cmd(&a);
        let dump = p.b.cmd(&[b"DUMP", key.as_bytes()]);
        let payload = bulk_payload(&dump);
        let restored = p.a.cmd(&[b"RESTORE", key.as_bytes(), b"0", &payload]);
        assert_eq!(restored, b"+OK\r\n");
        p.b.cmd(&[b"DEL", key.as_bytes()]);
        p.b.cmd(&[b"RESTORE", key.as_bytes(), b"0", &payload]);
        p.check_line(&format!("PFCOUNT {key}"));
        p.check_line(&format!("PFADD {key} more1 more2 more3"));
        p.check_line(&format!("GET {key}"));
    }
}

fn bulk_payload(reply: &[u8]) -> Vec<u8> {
    let nl = reply.iter().position(|&b| b == b'\n').unwrap();
    let n: usize = std::str::from_utf8(&reply[1..nl - 1])
        .unwrap()
        .parse()
        .unwrap();
    reply[nl + 1..nl + 1 + n].to_vec()
}

/// Errors, corrupted values and the debugging commands.
#[test]
fn errors_and_corruption_match() {
    let Some(mut p) = Pair::start() else { return };
    for line in [
        "PFADD",
        "PFCOUNT",
        "PFMERGE",
        "PFADD h",
        "PFCOUNT h",
        "GET h",
        "OBJECT ENCODING h",
        "PFDEBUG DECODE h",
        "PFDEBUG ENCODING h",
        "PFDEBUG FOO h",
        "PFDEBUG ENCODING missing",
        "PFDEBUG GETREG",
        "RPUSH l a",
        "PFADD l x",
        "PFCOUNT l",
        "PFCOUNT h l",
        "PFMERGE h l",
        "PFMERGE l h",
        "SET n 1234",
        "PFADD n a",
        "PFCOUNT n",
        "SET s hello-world-not-an-hll",
        "PFADD s a",
        "PFCOUNT h s",
        "PFSELFTEST",
        "PFDEBUG TODENSE h",
        "PFDEBUG TODENSE h",
        "PFDEBUG ENCODING h",
        "PFDEBUG DECODE h",
        "PFCOUNT h",
        "CONFIG GET hll-sparse-max-bytes",
        "CONFIG SET hll-sparse-max-bytes -1",
        "CONFIG SET hll-sparse-max-bytes 1kb",
        "CONFIG GET hll-sparse-max-bytes",
    ] {
        p.check_line(line);
    }
    // Hand-made values: a sparse header whose opcodes cover too few or too
    // many registers, a dense one of the wrong size, a bad encoding byte.
    let hdr = |enc: u8| {
        let mut v = b"HYLL".to_vec();
        v.push(enc);
        v.extend_from_slice(&[0; 11]);
        v
    };
    let mut short = hdr(1);
    short.extend_from_slice(&[0x7f, 0x00]);
    let mut long = hdr(1);
    long.extend_from_slice(&[0x7f, 0xff, 0x80]);
    let mut tiny_dense = hdr(0);
    tiny_dense.extend_from_slice(&[0; 100]);
    let bad_enc = hdr(7);
    for (name, v) in [
        ("short", short),
        ("long", long),
        ("dense", tiny_dense),
        ("enc", bad_enc),
    ] {
        p.check(&[b"SET", name.as_bytes(), &v]);
        for line in [
            format!("PFCOUNT {name}"),
            format!("PFADD {name} a b c"),
            format!("PFCOUNT {name} h"),
            format!("PFMERGE m {name}"),
            format!("PFDEBUG DECODE {name}"),
            format!("PFDEBUG GETREG {name}"),
            format!("GET {name}"),
        ] {
            p.check_line(&line);
        }
    }
    p.check_line("COMMAND INFO pfadd pfcount pfmerge pfdebug pfselftest");
}
