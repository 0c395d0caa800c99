//! Geo commands (GEOADD, GEODIST, GEOHASH, GEOPOS, GEOSEARCH,
//! GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and the `_RO` variants) end
//! to end against the real `ferrokv-server` binary: seeded random
//! differential sequences against redis-server 7.0 (every reply byte for
//! byte, RESP2 and RESP3, with invalid arguments in every position, wrong
//! types, listpack and skiplist indexes, cities and random positions up to
//! the poles' and the antimeridian's limits, hand-made scores), then every
//! key's members, scores and encoding; the command pages' examples; STORE /
//! STOREDIST / GEOSEARCHSTORE destinations; keyspace events; key positions;
//! and AOF replay (GEOADD is logged as ZADD, as Redis does).

mod common;
use common::*;

const KEYS: &[&str] = &["g1", "g2", "big", "{t}dst", "str", "lst", "gone"];

/// Real places (name, longitude, latitude), two of them twice under
/// another name so that searches see equal distances.
const CITIES: &[(&str, &str, &str)] = &[
    ("Palermo", "13.361389", "38.115556"),
    ("Catania", "15.087269", "37.502669"),
    ("Rome", "12.496366", "41.902782"),
    ("Paris", "2.352222", "48.856613"),
    ("London", "-0.127758", "51.507351"),
    ("NewYork", "-74.005974", "40.712776"),
    ("Tokyo", "139.691711", "35.689487"),
    ("Sydney", "151.209290", "-33.868820"),
    ("Auckland", "174.763336", "-36.848461"),
    ("Suva", "178.441895", "-18.141600"),
    ("Apia", "-171.751862", "-13.759029"),
    ("Anchorage", "-149.900284", "61.218056"),
    ("Reykjavik", "-21.817439", "64.126518"),
    ("Longyearbyen", "15.633333", "78.216667"),
    ("McMurdo", "166.668235", "-77.846323"),
    ("Ushuaia", "-68.303004", "-54.801912"),
    ("Quito", "-78.467834", "-0.180653"),
    ("Nairobi", "36.821945", "-1.292066"),
    ("Lagos", "3.379206", "6.524379"),
    ("Null", "0", "0"),
    ("Mumbai", "72.877655", "19.075983"),
    ("Moscow", "37.617300", "55.755826"),
    ("Cairo", "31.235712", "30.044420"),
    ("Honolulu", "-157.858337", "21.306944"),
    ("Palermo2", "13.361389", "38.115556"),
    ("Tokyo2", "139.691711", "35.689487"),
];

fn key(r: &mut Rng) -> String {
    r.pick(KEYS).into()
}

/// Mostly a key holding a geo index.
fn geo_key(r: &mut Rng) -> String {
    if r.below(4) == 0 {
        key(r)
    } else {
        r.pick(&["g1", "big", "g2", "big"]).into()
    }
}

fn member(r: &mut Rng) -> String {
    match r.below(8) {
        0 => format!("m{}", r.below(40)),
        1 | 2 => r.pick(&["nope", "Rome", "Paris", "Catania"]).into(),
        3 | 4 => format!("p{}", r.below(320)),
        _ => r.pick2(CITIES).0.into(),
    }
}

/// A random number in [lo, hi] with a few decimals.
fn within(r: &mut Rng, lo: f64, hi: f64) -> String {
    let f = (r.next() % 1_000_001) as f64 / 1_000_000.0;
    format!("{:.6}", lo + (hi - lo) * f)
}

/// A (longitude, latitude) pair: a city, a random valid position, the
/// limits exactly, just outside them, or not numbers.
fn lon_lat(r: &mut Rng) -> (String, String) {
    let n = if r.below(2) == 0 {
        6 + r.below(14)
    } else {
        r.below(20)
    };
    match n {
        0 => ("180".into(), "85.05112878".into()),
        1 => ("-180".into(), "-85.05112878".into()),
        2 => (
            r.pick(&["180", "-180", "179.9999", "-179.9999"]).into(),
            within(r, -85.05, 85.05),
        ),
        3 => (
            within(r, -180.0, 180.0),
            r.pick(&["85.05112878", "-85.05112878", "85.05", "-85.0511"])
                .into(),
        ),
        4 => (
            r.pick(&[
                "180.000001",
                "-181",
                "1e400",
                "inf",
                "abc",
                "",
                "0x10",
                " 1",
            ])
            .into(),
            "0".into(),
        ),
        5 => (
            "0".into(),
            r.pick(&["85.05112879", "-90", "91", "nan", "-inf", "1e-400"])
                .into(),
        ),
        6..=11 => {
            let c = r.pick2(CITIES);
            (c.1.into(), c.2.into())
        }
        _ => (
            within(r, -180.0, 180.0),
            within(r, -85.05112878, 85.05112878),
        ),
    }
}

fn unit(r: &mut Rng) -> String {
    if r.below(12) == 0 {
        return r.pick(&["yd", "", "kilometers"]).into();
    }
    r.pick(&["m", "km", "ft", "mi", "KM", "Mi", "M", "km", "km", "mi"])
        .into()
}

/// A radius (or box side) with mostly useful sizes for the unit-less value.
fn radius(r: &mut Rng) -> String {
    let n = if r.below(2) == 0 {
        6 + r.below(10)
    } else {
        r.below(16)
    };
    match n {
        0 => "-1".into(),
        1 => "abc".into(),
        2 => "0".into(),
        3 => "inf".into(),
        4 => "1e308".into(),
        5 => "20000000".into(),
        6 => r.below(100).to_string(),
        7 => format!("{}.5", r.below(3000)),
        _ => r
            .pick(&["500", "1000", "2500", "5000", "10000", "200", "50"])
            .into(),
    }
}

fn count_value(r: &mut Rng) -> String {
    match r.below(10) {
        0 => "0".into(),
        1 => "-3".into(),
        2 => "x".into(),
        3 => "9223372036854775807".into(),
        _ => (1 + r.below(6)).to_string(),
    }
}

/// Trailing options for the search commands, in random order, sometimes
/// bad or misplaced ones.
fn search_options(r: &mut Rng, c: &mut Vec<String>, store_ok: bool) {
    for _ in 0..r.below(5) {
        let n = if r.below(2) == 0 {
            r.below(6)
        } else {
            r.below(16)
        };
        match n {
            0 => c.push(r.pick(&["WITHDIST", "withdist"]).into()),
            1 => c.push("WITHHASH".into()),
            2 => c.push("WITHCOORD".into()),
            3 => c.push(r.pick(&["ASC", "desc"]).into()),
            4 | 5 => {
                c.push("COUNT".into());
                c.push(count_value(r));
                if r.below(3) == 0 {
                    c.push("ANY".into());
                }
            }
            6 => c.push("ANY".into()),
            7 if store_ok => {
                c.push(r.pick(&["STORE", "STOREDIST", "store"]).into());
                c.push(r.pick(&["{t}dst", "g2", "str", "gone"]).into());
            }
            8 => c.push(r.pick(&["COUNT", "STORE", "bogus", "WITHDIST"]).into()),
            _ => c.push(r.pick(&["ASC", "WITHCOORD", "WITHDIST"]).into()),
        }
    }
}

/// GEOSEARCH's area options: FROMMEMBER or FROMLONLAT, BYRADIUS or BYBOX,
/// sometimes missing, doubled or short of arguments.
fn area_options(r: &mut Rng, c: &mut Vec<String>) {
    let mut parts: Vec<Vec<String>> = Vec::new();
    match r.below(10) {
        0 => {}
        1 => parts.push(vec!["FROMMEMBER".into()]),
        2..=5 => parts.push(vec!["FROMMEMBER".into(), member(r)]),
        _ => {
            let (lo, la) = lon_lat(r);
            parts.push(vec!["FROMLONLAT".into(), lo, la]);
        }
    }
    match r.below(10) {
        0 => {}
        1 => parts.push(vec!["BYBOX".into(), radius(r), unit(r)]),
        2..=5 => parts.push(vec!["BYRADIUS".into(), radius(r), unit(r)]),
        _ => parts.push(vec!["BYBOX".into(), radius(r), radius(r), unit(r)]),
    }
    if r.below(12) == 0 {
        parts.push(vec!["FROMMEMBER".into(), member(r)]);
    }
    if r.below(12) == 0 {
        parts.push(vec!["BYRADIUS".into(), radius(r), unit(r)]);
    }
    if r.below(4) == 0 {
        parts.reverse();
    }
    for p in parts {
        c.extend(p);
    }
}

fn random_command(r: &mut Rng) -> Vec<String> {
    let mut c: Vec<String> = match r.below(30) {
        0..=4 => {
            let mut c = vec!["GEOADD".into(), key(r)];
            for _ in 0..r.below(3) {
                c.push(r.pick(&["NX", "xx", "CH", "ch", "GT", "nx"]).into());
            }
            for _ in 0..1 + r.below(3) {
                let (lo, la) = lon_lat(r);
                c.push(lo);
                c.push(la);
                c.push(member(r));
            }
            if r.below(20) == 0 {
                c.pop();
            }
            c
        }
        5 | 6 => {
            let mut c = vec!["GEODIST".into(), geo_key(r), member(r), member(r)];
            if r.below(2) == 0 {
                c.push(unit(r));
            }
            if r.below(15) == 0 {
                c.push("extra".into());
            }
            c
        }
        7 => {
            let mut c = vec!["GEOHASH".into(), geo_key(r)];
            for _ in 0..r.below(4) {
                c.push(member(r));
            }
            c
        }
        8 | 9 => {
            let mut c = vec!["GEOPOS".into(), geo_key(r)];
            for _ in 0..r.below(4) {
                c.push(member(r));
            }
            c
        }
        10..=13 => {
            let ro = r.below(3) == 0;
            let name = if ro { "GEORADIUS_RO" } else { "GEORADIUS" };
            let (lo, la) = lon_lat(r);
            let mut c = vec![name.into(), geo_key(r), lo, la, radius(r), unit(r)];
            search_options(r, &mut c, true);
            c
        }
        14..=16 => {
            let ro = r.below(3) == 0;
            let name = if ro {
                "GEORADIUSBYMEMBER_RO"
            } else {
                "GEORADIUSBYMEMBER"
            };
            let mut c = vec![name.into(), geo_key(r), member(r), radius(r), unit(r)];
            search_options(r, &mut c, true);
            c
        }
        17..=20 => {
            let mut c = vec!["GEOSEARCH".into(), geo_key(r)];
            area_options(r, &mut c);
            search_options(r, &mut c, false);
            if r.below(10) == 0 {
                c.push("STOREDIST".into());
            }
            c
        }
        21 | 22 => {
            let dst = if r.below(8) == 0 {
                key(r)
            } else {
                r.pick(&["{t}dst", "g2", "str", "gone"]).into()
            };
            let mut c = vec!["GEOSEARCHSTORE".into(), dst, geo_key(r)];
            area_options(r, &mut c);
            search_options(r, &mut c, false);
            if r.below(3) == 0 {
                c.push("STOREDIST".into());
            }
            c
        }
        23 => vec![
            "ZADD".into(),
            key(r),
            r.pick(&[
                "-1",
                "1e300",
                "9.3e18",
                "inf",
                "-inf",
                "0",
                "4503599627370496",
                "3.5",
            ])
            .into(),
            member(r),
        ],
        24 => vec!["ZREM".into(), key(r), member(r)],
        25 => vec![
            "ZRANGE".into(),
            key(r),
            "0".into(),
            "-1".into(),
            "WITHSCORES".into(),
        ],
        26 => {
            // Keep g1 and big (the seeded indexes) alive.
            let k: String = r.pick(&["str", "lst", "gone", "{t}dst"]).into();
            match r.below(4) {
                0 => vec!["SET".into(), k, "v".into()],
                1 => vec!["RPUSH".into(), k, "x".into()],
                2 => vec!["DEL".into(), k],
                _ => vec!["PEXPIRE".into(), k, r.pick(&["1", "100000"]).into()],
            }
        }
        27 => vec!["OBJECT".into(), "ENCODING".into(), key(r)],
        _ => {
            let mut c = vec!["GEOSEARCH".into(), r.pick(&["g1", "big"]).into()];
            if r.below(2) == 0 {
                c.push("FROMMEMBER".into());
                c.push(r.pick2(CITIES).0.into());
            } else {
                let (lo, la) = lon_lat(r);
                c.extend(["FROMLONLAT".into(), lo, la]);
            }
            if r.below(2) == 0 {
                c.extend(["BYRADIUS".into(), radius(r), "km".into()]);
            } else {
                c.extend(["BYBOX".into(), radius(r), radius(r), "km".into()]);
            }
            c.push(r.pick(&["ASC", "DESC", "WITHDIST"]).into());
            if r.below(2) == 0 {
                c.extend(["COUNT".into(), (1 + r.below(8)).to_string()]);
            }
            c.extend(["WITHCOORD".into(), "WITHHASH".into()]);
            c
        }
    };
    if r.below(60) == 0 {
        c.pop();
    }
    c
}

/// Fills `g1` with the cities (a listpack) and `big` with 300 random
/// positions (a skiplist) on both servers.
fn seed_data(p: &mut Pair, r: &mut Rng) {
    let mut c: Vec<String> = vec!["GEOADD".into(), "g1".into()];
    for (name, lo, la) in CITIES {
        c.extend([lo.to_string(), la.to_string(), name.to_string()]);
    }
    let args: Vec<&[u8]> = c.iter().map(|s| s.as_bytes()).collect();
    p.check(&args);
    let mut c: Vec<String> = vec!["GEOADD".into(), "big".into()];
    for i in 0..300 {
        let (lo, la) = if i % 10 == 0 {
            let c = r.pick2(CITIES);
            (c.1.to_string(), c.2.to_string())
        } else {
            (
                within(r, -180.0, 180.0),
                within(r, -85.05112878, 85.05112878),
            )
        };
        c.extend([lo, la, format!("p{i}")]);
    }
    let args: Vec<&[u8]> = c.iter().map(|s| s.as_bytes()).collect();
    p.check(&args);
    p.check_line("OBJECT ENCODING g1");
    p.check_line("OBJECT ENCODING big");
}

fn run_seed(seed: u64, resp3: bool, n: usize) {
    let Some(mut p) = Pair::start() else { return };
    if resp3 {
        p.a.cmd(&[b"HELLO", b"3"]);
        p.b.cmd(&[b"HELLO", b"3"]);
    }
    let mut r = Rng(seed);
    seed_data(&mut p, &mut r);
    let mut history: Vec<String> = Vec::new();
    let mut kinds = std::collections::HashMap::<u8, usize>::new();
    let mut nonempty = 0;
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
        if c[0].starts_with("GEO") && ours.starts_with(b"*") && !ours.starts_with(b"*0\r\n") {
            nonempty += 1;
        }
        if c[0] == "PEXPIRE" && c.get(2).map(String::as_str) == Some("1") {
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
    assert!(
        nonempty >= n / 8,
        "too few non-empty geo replies: {nonempty}"
    );
    for k in KEYS {
        p.check_line(&format!("ZRANGE {k} 0 -1 WITHSCORES"));
        p.check_line(&format!("OBJECT ENCODING {k}"));
        p.check_line(&format!("TYPE {k}"));
    }
}

#[test]
fn differential_random_resp2() {
    let base = seed_from_env(0x6e0_0000_0001);
    for s in 0..3 {
        run_seed(base + s, false, 2500);
    }
}

#[test]
fn differential_random_resp3() {
    let base = seed_from_env(0x6e0_0000_1001);
    for s in 0..2 {
        run_seed(base + s, true, 2500);
    }
}

/// With zset-max-listpack-entries 0 every index is a skiplist, with 1000
/// every one is a listpack: the same random sequences still agree.
#[test]
fn differential_random_encodings() {
    for (entries, seed) in [("0", 0x6e0_0000_2001), ("1000", 0x6e0_0000_2002)] {
        let Some(mut p) = Pair::start() else { return };
        p.check_line(&format!("CONFIG SET zset-max-listpack-entries {entries}"));
        let mut r = Rng(seed_from_env(seed));
        seed_data(&mut p, &mut r);
        for i in 0..1500 {
            let c = random_command(&mut r);
            let args: Vec<&[u8]> = c.iter().map(|s| s.as_bytes()).collect();
            let (ours, theirs) = p.both(&args);
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&theirs),
                "entries {entries}, command #{i} {c:?}"
            );
            // A 1 ms TTL has passed on both servers before the next
            // command (as in run_seed): otherwise which of them still has
            // the key depends on timing.
            if c[0] == "PEXPIRE" && c.get(2).map(String::as_str) == Some("1") {
                std::thread::sleep(std::time::Duration::from_millis(3));
            }
        }
        for k in KEYS {
            p.check_line(&format!("ZRANGE {k} 0 -1 WITHSCORES"));
            p.check_line(&format!("OBJECT ENCODING {k}"));
        }
    }
}

/// The examples of the redis.io command pages, in RESP2 and RESP3.
#[test]
fn documented_examples() {
    let Some(mut p) = Pair::start() else { return };
    let page = [
        "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
        "GEODIST Sicily Palermo Catania",
        "GEORADIUS Sicily 15 37 100 km",
        "GEORADIUS Sicily 15 37 200 km",
        "GEODIST Sicily Palermo Catania km",
        "GEODIST Sicily Palermo Catania mi",
        "GEODIST Sicily Foo Bar",
        "GEOHASH Sicily Palermo Catania",
        "GEOPOS Sicily Palermo Catania NonExisting",
        "GEORADIUS Sicily 15 37 200 km WITHDIST",
        "GEORADIUS Sicily 15 37 200 km WITHCOORD",
        "GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD",
        "GEOADD Sicily 13.583333 37.316667 Agrigento",
        "GEORADIUSBYMEMBER Sicily Agrigento 100 km",
        "GEOADD Sicily 12.758489 38.788135 edge1 17.241510 38.788135 edge2",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHCOORD WITHDIST",
        "GEOSEARCHSTORE key1 Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC COUNT 3",
        "GEOSEARCH key1 FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHCOORD WITHDIST WITHHASH",
        "GEOSEARCHSTORE key2 Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC COUNT 3 STOREDIST",
        "ZRANGE key2 0 -1 WITHSCORES",
        "GEORADIUS_RO Sicily 15 37 200 km WITHDIST WITHHASH ASC",
        "GEORADIUSBYMEMBER_RO Sicily Palermo 200 km DESC COUNT 2",
        "GEORADIUSBYMEMBER Sicily Palermo 200 km DESC COUNT 2 ANY",
        "ZRANGE Sicily 0 -1 WITHSCORES",
        "OBJECT ENCODING Sicily",
        "TYPE Sicily",
    ];
    for line in page {
        p.check_line(line);
    }
    p.a.cmd(&[b"HELLO", b"3"]);
    p.b.cmd(&[b"HELLO", b"3"]);
    for line in page {
        if !line.starts_with("GEOADD") && !line.starts_with("GEOSEARCHSTORE") {
            p.check_line(line);
        }
    }
}

/// Redis's order of checks and its error texts, one case at a time.
#[test]
fn errors_and_corners() {
    let Some(mut p) = Pair::start() else { return };
    for line in [
        "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
        "SET str x",
        // GEOADD
        "GEOADD k 200 100 x",
        "GEOADD k -180 -85.05112878 x 180 85.05112878 y",
        "ZRANGE k 0 -1 WITHSCORES",
        "GEOPOS k x y",
        "GEOHASH k x y",
        "GEOADD k nx xx 1 2 z",
        "GEOADD k 1 2",
        "GEOADD k ch nx",
        "GEOADD k gt 1 2 z",
        "GEOADD k 1 2 z 3",
        "GEOADD k nx nx nx",
        "GEOADD k a 2 z",
        "GEOADD k 1 b z",
        "GEOADD k 1 2 z 1 b y",
        "GEOADD k inf 0 x",
        "GEOADD k 1e308 0 x",
        "GEOADD k 0 -85.06 x",
        "GEOADD k 1e400 0 x",
        "GEOADD str 200 0 x",
        "GEOADD str 1 2 x",
        "GEOADD k XX 1 2 newmember 3 4 x",
        "GEOADD k XX CH 1 2 newmember 3 4 x",
        "GEOADD k NX CH 1 2 newmember 3 4 x",
        "GEOADD k CH 1 2 x 5 6 y 7 8 w",
        "GEOADD nokey XX 1 2 x",
        "EXISTS nokey",
        // GEODIST
        "GEODIST k x y km",
        "GEODIST k x y KM",
        "GEODIST k x y foo",
        "GEODIST nokey x y foo",
        "GEODIST nokey x y",
        "GEODIST k x y km z",
        "GEODIST str x y",
        "GEODIST str x y foo",
        "GEODIST k x x",
        // GEOHASH / GEOPOS
        "GEOHASH nokey a b",
        "GEOHASH k",
        "GEOHASH str a",
        "GEOPOS nokey a b",
        "GEOPOS k",
        "GEOPOS str a",
        // Search argument order
        "GEOSEARCH str foo",
        "GEOSEARCH str FROMMEMBER a BYRADIUS x y",
        "GEORADIUS str 1 2 3 4",
        "GEORADIUS str 1000 2 3 4",
        "GEORADIUSBYMEMBER nokey m abc xyz",
        "GEORADIUSBYMEMBER nokey m abc xyz STORE d",
        "GEORADIUSBYMEMBER nokey m abc xyz WITHDIST STORE d",
        "GEORADIUSBYMEMBER nokey m abc xyz bogus",
        "GEORADIUSBYMEMBER Sicily nomember abc xyz",
        "GEORADIUSBYMEMBER Sicily Palermo abc xyz",
        "GEORADIUSBYMEMBER Sicily Palermo -1 xyz",
        "GEORADIUSBYMEMBER Sicily Palermo 1 xyz",
        "GEORADIUSBYMEMBER Sicily Palermo 200 km WITHDIST WITHCOORD WITHHASH",
        "GEORADIUSBYMEMBER Sicily Palermo 200 km COUNT",
        "GEORADIUSBYMEMBER Sicily Palermo 200 km COUNT 0",
        "GEORADIUSBYMEMBER Sicily Palermo 200 km COUNT -1",
        "GEORADIUSBYMEMBER Sicily Palermo 200 km COUNT x",
        "GEORADIUSBYMEMBER Sicily Palermo 200 km ANY",
        "GEORADIUSBYMEMBER Sicily Palermo 200 km ANY COUNT 1",
        "GEORADIUSBYMEMBER Sicily Palermo 200 km STORE d WITHDIST",
        "GEORADIUSBYMEMBER Sicily Palermo 200 km STORE",
        "GEORADIUSBYMEMBER_RO Sicily Palermo 200 km STORE d",
        "GEORADIUS_RO Sicily 15 37 200 km STOREDIST d",
        "GEORADIUS Sicily 15 37 200 km FROMMEMBER Palermo",
        "GEORADIUS Sicily 15 37 200 km BYRADIUS 1 km",
        "GEORADIUS Sicily 15 37 -200 km",
        "GEORADIUS Sicily 15 37 200 parsec",
        "GEORADIUS Sicily 15 95 200 km",
        "GEORADIUS Sicily x 37 200 km",
        "GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 1 km BYBOX 1 1 km",
        "GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 1 1 BYRADIUS 1 km",
        "GEOSEARCH Sicily FROMMEMBER Palermo STOREDIST BYRADIUS 1 km",
        "GEOSEARCH Sicily FROMMEMBER Palermo STORE d BYRADIUS 1 km",
        "GEOSEARCH Sicily FROMMEMBER nomember BYRADIUS 1 km bogus",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX -1 400 km",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX a 400 km",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 b km",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 -1 km",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 1 au",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 1",
        "GEOSEARCH nokey FROMMEMBER x BYBOX 1 b km",
        "GEOSEARCH nokey FROMMEMBER x BYBOX 1 1 km",
        "geoSEARCH Sicily FROMMEMBER Palermo WITHDIST ASC DESC",
        "geosearch Sicily BYRADIUS 10 km WITHDIST ASC",
        "GEOSEARCHstore d Sicily BYRADIUS 10 km  ASC DESC",
        "GEOSEARCHSTORE d Sicily FROMMEMBER Palermo BYRADIUS 1 km WITHDIST",
        "GEOSEARCHSTORE d Sicily FROMMEMBER Palermo BYRADIUS 1 km STORE x",
        "GEOSEARCH nokey FROMMEMBER Palermo WITHDIST ASC DESC",
        "GEOSEARCH nokey FROMMEMBER Palermo FROMMEMBER x BYRADIUS 1 m",
        "GEOSEARCH Sicily FROMMEMBER Palermo FROMMEMBER Catania BYRADIUS 1 m WITHDIST",
        "GEOSEARCH Sicily FROMLONLAT 1 1 FROMMEMBER Catania BYRADIUS 1 m WITHDIST",
        "GEOSEARCH Sicily FROMLONLAT 1 1 FROMLONLAT 15 37 BYRADIUS 100 km BYRADIUS 200 km WITHDIST",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ANY",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 1 ANY DESC WITHDIST",
        // Huge, infinite and zero radii.
        "GEORADIUS Sicily 0 0 inf m",
        "GEORADIUS Sicily 0 0 1e308 km WITHDIST",
        "GEORADIUS Sicily 13.361389 38.115556 0 m WITHDIST",
        "GEORADIUSBYMEMBER Sicily Palermo 0 m WITHDIST WITHHASH",
        "GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 0 0 m WITHDIST",
        "GEOSEARCH Sicily FROMMEMBER Palermo BYBOX inf inf m WITHDIST",
        "GEORADIUS Sicily 15 37 200 km COUNT 1 ANY WITHDIST",
        "GEORADIUS Sicily 15 37 200 km COUNT 5 DESC WITHDIST",
        // Scores that are not geohashes.
        "ZADD w -1 neg 1e300 huge 9.3e18 big inf pinf -inf ninf 4503599627370495 top",
        "GEOPOS w neg huge big pinf ninf top",
        "GEOHASH w neg huge big pinf ninf top",
        "GEODIST w neg ninf",
        "GEOSEARCH w FROMMEMBER neg BYRADIUS 1 m WITHDIST WITHHASH WITHCOORD",
        "GEOSEARCH w FROMMEMBER top BYRADIUS 100 km WITHDIST WITHHASH WITHCOORD",
        "GEOSEARCH w FROMLONLAT 0 0 BYRADIUS 30000 km WITHHASH",
        // Key positions.
        "COMMAND GETKEYS GEORADIUS k 1 2 3 km STORE d STOREDIST e",
        "COMMAND GETKEYS GEORADIUSBYMEMBER k m 3 km STOREDIST e",
        "COMMAND GETKEYS GEOSEARCHSTORE d s FROMMEMBER m BYRADIUS 1 km",
        "COMMAND GETKEYSANDFLAGS GEORADIUS k 1 2 3 km STORE d",
        "COMMAND GETKEYSANDFLAGS GEORADIUSBYMEMBER k m 3 km store e",
        "COMMAND GETKEYSANDFLAGS GEOSEARCHSTORE d s FROMMEMBER m BYRADIUS 1 km",
        "COMMAND GETKEYS GEOADD k 1 2 m",
        "COMMAND INFO geoadd geodist geohash geopos georadius georadius_ro",
        "COMMAND INFO georadiusbymember georadiusbymember_ro geosearch geosearchstore",
    ] {
        p.check_line(line);
    }
}

/// Searches at the poles' and the antimeridian's limits, where Redis's
/// cell arithmetic wraps (and misses points it could see): same results.
#[test]
fn limits_of_the_map() {
    let Some(mut p) = Pair::start() else { return };
    let mut r = Rng(seed_from_env(0x6e0_0000_3001));
    let mut c: Vec<String> = vec!["GEOADD".into(), "edge".into()];
    for i in 0..400 {
        let lo = match i % 4 {
            0 => within(&mut r, 170.0, 180.0),
            1 => within(&mut r, -180.0, -170.0),
            _ => within(&mut r, -180.0, 180.0),
        };
        let la = match i % 3 {
            0 => within(&mut r, 75.0, 85.05112878),
            1 => within(&mut r, -85.05112878, -75.0),
            _ => within(&mut r, -85.05112878, 85.05112878),
        };
        c.extend([lo, la, format!("e{i}")]);
    }
    c.extend(
        [
            "180",
            "85.05112878",
            "ne",
            "-180",
            "-85.05112878",
            "sw",
            "180",
            "0",
            "east",
            "-180",
            "0",
            "west",
        ]
        .map(String::from),
    );
    let args: Vec<&[u8]> = c.iter().map(|s| s.as_bytes()).collect();
    p.check(&args);
    for (lo, la) in [
        ("180", "85.05112878"),
        ("-180", "-85.05112878"),
        ("180", "0"),
        ("-180", "0"),
        ("179.99", "84"),
        ("0", "85.05112878"),
        ("0", "-85.05112878"),
        ("-179.5", "-80.5"),
    ] {
        for rad in ["1", "50", "300", "1000", "5000", "15000"] {
            p.check_line(&format!(
                "GEORADIUS edge {lo} {la} {rad} km WITHDIST WITHHASH ASC"
            ));
            p.check_line(&format!(
                "GEOSEARCH edge FROMLONLAT {lo} {la} BYBOX {rad} {rad} km WITHCOORD DESC"
            ));
            p.check_line(&format!(
                "GEOSEARCH edge FROMLONLAT {lo} {la} BYRADIUS {rad} km COUNT 7"
            ));
            p.check_line(&format!(
                "GEOSEARCH edge FROMLONLAT {lo} {la} BYBOX {rad} 10 km COUNT 3 ANY"
            ));
        }
    }
    for m in ["ne", "sw", "east", "west", "e0", "e1"] {
        p.check_line(&format!("GEORADIUSBYMEMBER edge {m} 800 km WITHDIST ASC"));
        p.check_line(&format!("GEOPOS edge {m}"));
        p.check_line(&format!("GEOHASH edge {m}"));
        p.check_line(&format!("GEODIST edge {m} ne mi"));
    }
}

/// STORE / STOREDIST / GEOSEARCHSTORE: the destination's members, scores
/// and encoding, replacing any type and TTL, deleted when nothing matched
/// or the source is missing.
#[test]
fn stores() {
    let Some(mut p) = Pair::start() else { return };
    let mut c: Vec<String> = vec!["GEOADD".into(), "g".into()];
    for (name, lo, la) in CITIES {
        c.extend([lo.to_string(), la.to_string(), name.to_string()]);
    }
    let args: Vec<&[u8]> = c.iter().map(|s| s.as_bytes()).collect();
    p.check(&args);
    for line in [
        "GEORADIUS g 15 37 3000 km STORE d",
        "ZRANGE d 0 -1 WITHSCORES",
        "OBJECT ENCODING d",
        "GEORADIUS g 15 37 3000 km STOREDIST d COUNT 3",
        "ZRANGE d 0 -1 WITHSCORES",
        "GEORADIUS g 15 37 3000 mi STOREDIST d DESC COUNT 4",
        "ZRANGE d 0 -1 WITHSCORES",
        "GEORADIUS g 15 37 3000 km STORE d STOREDIST e",
        "EXISTS d e",
        "ZRANGE e 0 -1 WITHSCORES",
        "GEORADIUSBYMEMBER g Rome 2000 km STOREDIST e ASC",
        "ZRANGE e 0 -1 WITHSCORES",
        "SET s x EX 100",
        "GEOSEARCHSTORE s g FROMMEMBER Tokyo BYRADIUS 100 km",
        "TYPE s",
        "TTL s",
        "ZRANGE s 0 -1 WITHSCORES",
        "GEOSEARCHSTORE s g FROMMEMBER Tokyo BYRADIUS 100 km STOREDIST",
        "ZRANGE s 0 -1 WITHSCORES",
        "GEOSEARCHSTORE s g FROMLONLAT 0 -60 BYRADIUS 10 km",
        "EXISTS s",
        "GEOSEARCHSTORE s g FROMLONLAT 0 -60 BYRADIUS 10 km",
        "SET s x",
        "GEOSEARCHSTORE s nokey FROMLONLAT 0 -60 BYRADIUS 10 km",
        "EXISTS s",
        "SET s x",
        "GEORADIUS nokey 0 0 1 km STORE s",
        "EXISTS s",
        "GEOSEARCHSTORE g g FROMMEMBER Paris BYBOX 3000 2000 km ASC COUNT 4",
        "ZRANGE g 0 -1 WITHSCORES",
        "GEOSEARCHSTORE g2 g FROMMEMBER Paris BYBOX 3000 2000 km ANY COUNT 1",
        "ZRANGE g2 0 -1 WITHSCORES",
        "CONFIG SET zset-max-listpack-entries 2",
        "GEORADIUS g 15 37 30000 km STORE d",
        "OBJECT ENCODING d",
        "GEORADIUS g 15 37 30000 km STORE d COUNT 2",
        "OBJECT ENCODING d",
        "CONFIG SET zset-max-listpack-entries 128",
        "CONFIG SET zset-max-listpack-value 4",
        "GEORADIUS g 15 37 30000 km STORE d COUNT 2",
        "OBJECT ENCODING d",
        "GEOADD n 1 2 abc",
        "OBJECT ENCODING n",
        "GEOADD n2 1 2 abcdefgh",
        "OBJECT ENCODING n2",
    ] {
        p.check_line(line);
    }
    // Options end at a NUL byte, as strcasecmp reads them.
    p.check(&[
        b"GEORADIUS",
        b"g",
        b"15",
        b"37",
        b"3000",
        b"km",
        b"STORE\0x",
        b"nul",
    ]);
    p.check_line("ZRANGE nul 0 -1 WITHSCORES");
    p.check(&[b"GEOADD", b"nul", b"CH\0?", b"nx\0", b"1", b"2", b"Rome"]);
    p.check_line("ZRANGE nul 0 -1 WITHSCORES");
}

/// Keyspace events of the geo writes, in order, as redis-server sends them.
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
        "GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
        "GEOADD g NX 13.361389 38.115556 Palermo",
        "GEOADD g XX 13.4 38.1 Palermo",
        "GEORADIUS g 15 37 200 km",
        "GEORADIUS g 15 37 200 km STORE d",
        "GEORADIUS g 15 37 200 km STORE d",
        "GEORADIUSBYMEMBER g Palermo 200 km STOREDIST d",
        "GEOSEARCHSTORE d2 g FROMMEMBER Palermo BYRADIUS 10 km",
        "GEOSEARCHSTORE d g FROMLONLAT 0 0 BYRADIUS 1 m",
        "GEOSEARCHSTORE d g FROMLONLAT 0 0 BYRADIUS 1 m",
        "GEORADIUS missing 15 37 200 km STORE d2",
        "GEOSEARCH missing FROMLONLAT 1 1 BYRADIUS 1 km",
        "GEOPOS missing a",
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
    for e in [
        "__keyevent@0__:zadd g",
        "__keyevent@0__:georadiusstore d",
        "__keyevent@0__:geosearchstore d2",
        "__keyevent@0__:del d",
        "__keyevent@0__:del d2",
    ] {
        assert!(got[0].contains(&e.to_string()), "{e} missing: {:?}", got[0]);
    }
}

/// Clients blocked in BZPOPMIN on a key are served by GEOADD and by a
/// search storing into it, with the replies redis-server gives.
#[test]
fn blocked_pops_are_served() {
    let Some(mut p) = Pair::start() else { return };
    p.check_line("GEOADD src 13.361389 38.115556 Palermo 15.087269 37.502669 Catania");
    for (key, write) in [
        ("w", "GEOADD w 2.352222 48.856613 Paris"),
        (
            "d",
            "GEOSEARCHSTORE d src FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST",
        ),
        ("e", "GEORADIUS src 15 37 200 km STORE e"),
    ] {
        let mut replies = Vec::new();
        for port in [p.ours.port, p.redis.port] {
            let mut waiter = Raw::connect(port);
            waiter.send_cmd(&[b"BZPOPMIN", key.as_bytes(), b"5"]);
            let mut c = Raw::connect(port);
            c.wait_blocked(1);
            let w: Vec<&[u8]> = write.split(' ').map(str::as_bytes).collect();
            let r = c.cmd(&w);
            replies.push((
                r,
                waiter.reply(),
                c.cmd(&[b"ZRANGE", key.as_bytes(), b"0", b"-1", b"WITHSCORES"]),
            ));
        }
        assert_eq!(replies[0], replies[1], "{write}");
    }
}

/// Geo writes survive an AOF restart, GEOADD logged as ZADD with the
/// geohash scores (as Redis's geoaddCommand rewrites it).
#[test]
fn aof_replays_geo_writes() {
    let srv = Server::start(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut c = srv.raw();
    let mut r = Rng(seed_from_env(0x6e0_a0f));
    for _ in 0..800 {
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
    let dir = srv.dir.path().to_str().expect("utf-8 dir").to_string();
    let mut log = Vec::new();
    for e in walk(srv.dir.path()) {
        if e.to_string_lossy().contains(".aof") {
            log.extend(std::fs::read(&e).unwrap_or_default());
        }
    }
    let text = String::from_utf8_lossy(&log).to_lowercase();
    assert!(text.contains("\r\nzadd\r\n"), "no ZADD record in the AOF");
    assert!(!text.contains("\r\ngeoadd\r\n"), "GEOADD logged as itself");
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

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
