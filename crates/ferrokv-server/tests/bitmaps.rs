//! Bitmap commands (SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD,
//! BITFIELD_RO) end to end against the real `ferrokv-server` binary:
//! seeded random differential sequences against redis-server 7.0 (every
//! reply byte for byte, RESP2 and RESP3, with invalid arguments in every
//! position, wrong types, int/embstr/raw sources and expiring keys), the
//! final values and encodings, keyspace notifications, the
//! proto-max-bulk-len offset limit, and AOF replay of the writes.

mod common;
use common::*;

const KEYS: &[&str] = &["b1", "b2", "b3", "{t}dst", "lst", "int", "gone"];

/// An offset argument: small, near byte and word edges, `#n`, negative,
/// huge, or not a number.
fn offset(r: &mut Rng, hash: bool) -> String {
    match r.below(14) {
        0 => "-1".into(),
        1 => "4294967296".into(),
        2 => "x".into(),
        3 => (r.below(8) * 64 + 63).to_string(),
        4 if hash => format!("#{}", r.below(12)),
        5 if hash => "#-1".into(),
        6 => "536870912000".into(),
        7 => "01".into(),
        _ => r.below(300).to_string(),
    }
}

/// A range index: mostly small, sometimes negative, large or malformed.
fn index(r: &mut Rng) -> String {
    match r.below(12) {
        0 => "a".into(),
        1 => "-9223372036854775808".into(),
        2 => "9223372036854775807".into(),
        3 | 4 => format!("-{}", r.below(80)),
        _ => r.below(80).to_string(),
    }
}

fn key(r: &mut Rng) -> String {
    r.pick(KEYS).into()
}

/// A BITFIELD type: valid, upper case, too wide, or malformed.
fn ftype(r: &mut Rng) -> String {
    match r.below(16) {
        0 => "u64".into(),
        1 => "U8".into(),
        2 => "i0".into(),
        3 => "i65".into(),
        4 => "x8".into(),
        5 => "i64".into(),
        6 => "u63".into(),
        _ => format!(
            "{}{}",
            if r.below(2) == 0 { "i" } else { "u" },
            1 + r.below(40)
        ),
    }
}

/// A value for BITFIELD SET / INCRBY.
fn fvalue(r: &mut Rng) -> String {
    match r.below(10) {
        0 => "9223372036854775807".into(),
        1 => "-9223372036854775808".into(),
        2 => "abc".into(),
        3 => format!("-{}", r.below(1000)),
        4 => r.next().to_string(),
        _ => r.below(300).to_string(),
    }
}

fn random_command(r: &mut Rng) -> Vec<String> {
    let mut c: Vec<String> = match r.below(22) {
        0..=3 => vec![
            "SETBIT".into(),
            key(r),
            offset(r, false),
            match r.below(8) {
                0 => "2".into(),
                1 => "-1".into(),
                2 => "on".into(),
                n => (n & 1).to_string(),
            },
        ],
        4 | 5 => vec!["GETBIT".into(), key(r), offset(r, false)],
        6 | 7 => {
            let mut c = vec!["BITCOUNT".into(), key(r)];
            match r.below(5) {
                0 => {}
                1 => c.push(index(r)),
                _ => {
                    c.push(index(r));
                    c.push(index(r));
                    if r.below(2) == 0 {
                        c.push(r.pick(&["BIT", "byte", "bits", "Bit"]).into());
                    }
                }
            }
            c
        }
        8 | 9 => {
            let mut c = vec![
                "BITPOS".into(),
                key(r),
                r.pick(&["0", "1", "1", "0", "2", "x"]).into(),
            ];
            let n = r.below(5);
            if n >= 1 {
                c.push(index(r));
            }
            if n >= 2 {
                c.push(index(r));
            }
            if n >= 3 {
                c.push(r.pick(&["BIT", "byte", "BYTE", "nibble"]).into());
            }
            if n >= 4 && r.below(4) == 0 {
                c.push("extra".into());
            }
            c
        }
        10 | 11 => {
            let op = r.pick(&["AND", "or", "XOR", "not", "NOT", "nand"]);
            let mut c = vec!["BITOP".into(), op.into(), key(r)];
            let n = if op.eq_ignore_ascii_case("not") && r.below(4) != 0 {
                1
            } else {
                1 + r.below(3)
            };
            for _ in 0..n {
                c.push(key(r));
            }
            c
        }
        12..=15 => {
            let name = if r.below(4) == 0 {
                "BITFIELD_RO"
            } else {
                "BITFIELD"
            };
            let mut c = vec![name.into(), key(r)];
            for _ in 0..r.below(4) {
                match r.below(9) {
                    0..=2 => {
                        c.push(r.pick(&["GET", "get"]).into());
                        c.push(ftype(r));
                        c.push(offset(r, true));
                    }
                    3 | 4 => {
                        c.push("SET".into());
                        c.push(ftype(r));
                        c.push(offset(r, true));
                        c.push(fvalue(r));
                    }
                    5 | 6 => {
                        c.push("INCRBY".into());
                        c.push(ftype(r));
                        c.push(offset(r, true));
                        c.push(fvalue(r));
                    }
                    7 => {
                        c.push("OVERFLOW".into());
                        c.push(r.pick(&["WRAP", "sat", "FAIL", "fail", "bad"]).into());
                    }
                    _ => c.push(r.pick(&["GET", "SET", "DEL"]).into()),
                }
            }
            c
        }
        16 => vec![
            "SET".into(),
            key(r),
            r.pick(&[
                "123",
                "foobar",
                "\u{ff}\u{0}",
                "",
                "-7",
                "a-longer-embstr-value",
            ])
            .into(),
        ],
        17 => vec!["RPUSH".into(), key(r), "x".into()],
        18 => vec!["DEL".into(), key(r)],
        19 => vec!["PEXPIRE".into(), key(r), r.pick(&["1", "100000"]).into()],
        20 => vec!["APPEND".into(), key(r), "\u{7f}z".into()],
        _ => vec!["GET".into(), key(r)],
    };
    if r.below(50) == 0 {
        c.pop();
    }
    c
}

fn run_seed(seed: u64, resp3: bool, n: usize) {
    let Some(mut p) = Pair::start() else { return };
    if resp3 {
        p.a.cmd(&[b"HELLO", b"3"]);
        p.b.cmd(&[b"HELLO", b"3"]);
    }
    let mut r = Rng(seed);
    let mut history: Vec<String> = Vec::new();
    let mut kinds = std::collections::HashMap::<u8, usize>::new();
    for i in 0..n {
        let c = random_command(&mut r);
        let args: Vec<&[u8]> = c.iter().map(|s| s.as_bytes()).collect();
        history.push(format!("{c:?}"));
        let (ours, theirs) = p.both(&args);
        if ours != theirs {
            let tail = history[history.len().saturating_sub(15)..].join("\n");
            panic!(
                "seed {seed:#x} (resp3 {resp3}), command #{i} differs\nferrokv: {:?}\nredis:   {:?}\nlast commands:\n{tail}",
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&theirs)
            );
        }
        *kinds.entry(ours[0]).or_default() += 1;
        if c[0] == "PEXPIRE" && c.get(2).map(String::as_str) == Some("1") {
            // Let the key expire on both sides alike.
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
    }
    for k in [b'-', b':', b'*'] {
        assert!(
            kinds.get(&k).copied().unwrap_or(0) >= n / 40,
            "too few {:?} replies: {kinds:?}",
            k as char
        );
    }
    for k in KEYS {
        p.check_line(&format!("GET {k}"));
        p.check_line(&format!("OBJECT ENCODING {k}"));
        p.check_line(&format!("TYPE {k}"));
    }
}

#[test]
fn differential_random_resp2() {
    let base = seed_from_env(0xb17_0000_0001);
    for s in 0..3 {
        run_seed(base + s, false, 2500);
    }
}

#[test]
fn differential_random_resp3() {
    let base = seed_from_env(0xb17_0000_1001);
    for s in 0..2 {
        run_seed(base + s, true, 2500);
    }
}

/// Exact forms from the command pages and bitops.c corner cases.
#[test]
fn documented_examples_and_corners() {
    let Some(mut p) = Pair::start() else { return };
    for line in [
        "SETBIT mykey 7 1",
        "SETBIT mykey 7 0",
        "GET mykey",
        "SET mykey foobar",
        "BITCOUNT mykey",
        "BITCOUNT mykey 0 0",
        "BITCOUNT mykey 1 1",
        "BITCOUNT mykey 1 1 BYTE",
        "BITCOUNT mykey 5 30 BIT",
        "BITCOUNT mykey -3 -1 BIT",
        "BITCOUNT mykey -1 -3",
        "SET mykey \u{ff}\u{f0}\u{0}",
        "BITPOS mykey 0",
        "SET mykey \u{0}\u{ff}\u{f0}",
        "BITPOS mykey 1 0",
        "BITPOS mykey 1 2",
        "BITPOS mykey 1 2 -1 BYTE",
        "BITPOS mykey 1 7 15 BIT",
        "SET mykey \u{ff}\u{ff}",
        "BITPOS mykey 0",
        "BITPOS mykey 0 0",
        "BITPOS mykey 0 0 -1",
        "BITPOS mykey 0 0 -1 BIT",
        "BITPOS nokey 0",
        "BITPOS nokey 1",
        "SET key1 foobar",
        "SET key2 abcdef",
        "BITOP AND dest key1 key2",
        "GET dest",
        "BITOP OR dest key1 key2 nokey",
        "BITOP NOT dest key1",
        "GET dest",
        "BITOP AND dest nokey nokey2",
        "EXISTS dest",
        "BITFIELD mykey INCRBY i5 100 1 GET u4 0",
        "BITFIELD mykey OVERFLOW SAT INCRBY u2 102 1",
        "BITFIELD mykey INCRBY u2 100 1 OVERFLOW SAT incrby u2 102 1",
        "BITFIELD mykey OVERFLOW FAIL incrby u2 102 1",
        "BITFIELD mykey SET i8 #0 100 SET i8 #1 200",
        "BITFIELD mykey GET i64 0 GET u63 1 SET i64 0 -1",
        "BITFIELD_RO mykey GET i8 0",
        "BITFIELD_RO mykey OVERFLOW FAIL GET i8 0",
        "BITFIELD nokey2",
        "EXISTS nokey2",
        "BITFIELD nokey3 OVERFLOW FAIL SET u1 0 2",
        "GET nokey3",
        "SET n 12345",
        "OBJECT ENCODING n",
        "SETBIT n 0 0",
        "OBJECT ENCODING n",
        "GETBIT n 2",
        "SETBIT big 4294967295 1",
        "STRLEN big",
        "SETBIT big 4294967296 1",
        "GETBIT big 4294967295",
        "BITCOUNT big",
        "BITPOS big 1",
        "COMMAND GETKEYSANDFLAGS BITFIELD k GET u8 0 OVERFLOW SAT",
        "COMMAND GETKEYSANDFLAGS BITFIELD k GET u8 0 SET u8 0 1",
        "COMMAND GETKEYSANDFLAGS BITOP AND d a b",
        "COMMAND INFO setbit getbit bitcount bitpos bitop bitfield bitfield_ro",
    ] {
        p.check_line(line);
    }
    // proto-max-bulk-len bounds the offsets.
    p.check_line("CONFIG SET proto-max-bulk-len 1048576");
    for line in [
        "SETBIT lim 8388607 1",
        "SETBIT lim 8388608 1",
        "GETBIT lim 8388608",
        "BITFIELD lim SET u8 8388600 1",
        "BITFIELD lim GET u8 #1048575",
        "BITFIELD lim GET u8 #1048576",
        "STRLEN lim",
    ] {
        p.check_line(line);
    }
}

/// Keyspace events of the bitmap writes, in order, as redis-server sends
/// them (only writes that change something notify).
#[test]
fn keyspace_events_match_redis() {
    let Some(mut p) = Pair::start() else { return };
    let mut subs = Vec::new();
    for port in [p.ours.port, p.redis.port] {
        let mut c = Raw::connect(port);
        c.cmd(&[b"CONFIG", b"SET", b"notify-keyspace-events", b"KEA"]);
        let mut s = Raw::connect(port);
        s.cmd(&[b"PSUBSCRIBE", b"__keyevent@0__:*"]);
        subs.push(s);
    }
    let script = [
        "SETBIT k 3 1",
        "SETBIT k 3 1",
        "SETBIT k 100 0",
        "BITFIELD k GET u8 0",
        "BITFIELD k SET u8 0 3",
        "BITFIELD n OVERFLOW FAIL INCRBY u2 0 9",
        "BITOP OR d k n",
        "BITOP AND d missing",
        "BITOP AND d missing",
        "SET fin 1",
    ];
    for line in script {
        p.check_line(line);
    }
    let mut got = Vec::new();
    for s in &mut subs {
        let mut ev = Vec::new();
        loop {
            let b = frame_bulks(&s.reply());
            let (event, key) = (b[2].clone(), b[3].clone());
            ev.push(format!("{event} {key}"));
            if key == "fin" {
                break;
            }
        }
        got.push(ev);
    }
    assert_eq!(got[0], got[1], "ferrokv vs redis-server events");
    assert!(
        got[0].contains(&"__keyevent@0__:setbit k".to_string()),
        "{:?}",
        got[0]
    );
}

/// Bitmap writes survive an AOF restart with the same values.
#[test]
fn aof_replays_bitmap_writes() {
    let srv = Server::start(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut c = srv.raw();
    let mut r = Rng(seed_from_env(0xb17_a0f));
    for _ in 0..600 {
        let cmd = random_command(&mut r);
        if cmd[0] == "PEXPIRE" {
            continue;
        }
        let args: Vec<&[u8]> = cmd.iter().map(|s| s.as_bytes()).collect();
        c.cmd(&args);
    }
    let before: Vec<Vec<u8>> = KEYS
        .iter()
        .map(|k| c.cmd(&[b"DUMP", k.as_bytes()]))
        .collect();
    // Stop without a final save: the restart reads only the AOF.
    let dir = srv.dir.path().to_str().expect("utf-8 dir").to_string();
    c.send_cmd(&[b"SHUTDOWN", b"NOSAVE"]);
    drop(c);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let again = Server::start(&["--dir", &dir, "--appendonly", "yes"]);
    let mut c = again.raw();
    let after: Vec<Vec<u8>> = KEYS
        .iter()
        .map(|k| c.cmd(&[b"DUMP", k.as_bytes()]))
        .collect();
    assert_eq!(before, after);
    assert!(
        before
            .iter()
            .filter(|d| d[0] == b'$' && d[1] != b'-')
            .count()
            >= 2
    );
}

/// SETBIT and BITFIELD count a change only when they made one (bitops.c:
/// a new key, a longer string or a different value; BITFIELD adds one per
/// changing SET/INCRBY): INFO `rdb_changes_since_last_save` follows
/// redis-server 7.0's after each command.
#[test]
fn bit_writes_count_changes_as_redis() {
    let Some(mut p) = Pair::start() else { return };
    for line in [
        "SETBIT b 7 1",
        "SETBIT b 7 1",
        "SETBIT b 7 0",
        "SETBIT b 100 0",
        "SETBIT b 100 0",
        "BITFIELD f SET u8 0 5",
        "BITFIELD f SET u8 0 5",
        "BITFIELD f SET u8 0 5 SET u8 8 0",
        "BITFIELD f INCRBY u8 0 0",
        "BITFIELD f SET u8 0 6 GET u8 0 SET u8 0 6",
        "BITFIELD f OVERFLOW FAIL INCRBY u8 0 300",
        "BITFIELD f INCRBY i4 100 0",
        "BITFIELD_RO f GET u8 0",
    ] {
        p.check_line(line);
        let ours = p.a.info_field("persistence", "rdb_changes_since_last_save");
        let redis = p.b.info_field("persistence", "rdb_changes_since_last_save");
        assert_eq!(ours, redis, "after {line}");
    }
}
