//! Random draws are uniform (issue 23): SRANDMEMBER, SPOP, HRANDFIELD,
//! ZRANDMEMBER (with and without a count, positive and negative) and
//! RANDOMKEY, on compact (listpack/intset) and hashtable-encoded values,
//! pass a chi-square test over many draws. Redis 7.0's own tests use the
//! same statistic (tests/unit/type/set.tcl "histogram distribution");
//! the bound here, df + 4·sqrt(2·df), fails a fair server about once in
//! 30,000 runs and a biased bucket-then-chain draw every time.

mod common;
use common::Server;
use std::collections::HashMap;

/// The chi-square statistic of `counts` over `n` equally likely items.
fn chi_square(counts: &HashMap<String, u64>, n: usize) -> f64 {
    let total: u64 = counts.values().sum();
    let expected = total as f64 / n as f64;
    let seen: f64 = counts
        .values()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum();
    // Items never drawn contribute `expected` each.
    seen + (n - counts.len()) as f64 * expected
}

fn assert_uniform(what: &str, counts: &HashMap<String, u64>, n: usize) {
    let df = (n - 1) as f64;
    let bound = df + 4.0 * (2.0 * df).sqrt();
    let x2 = chi_square(counts, n);
    assert!(
        x2 < bound,
        "{what}: chi-square {x2:.1} over {n} items exceeds {bound:.1}"
    );
}

fn draw(c: &mut redis::Connection, cmd: &[&str], rounds: usize, counts: &mut HashMap<String, u64>) {
    let mut pipe = redis::pipe();
    for _ in 0..rounds {
        let mut x = redis::cmd(cmd[0]);
        for a in &cmd[1..] {
            x.arg(*a);
        }
        pipe.add_command(x);
    }
    let replies: Vec<redis::Value> = pipe.query(c).unwrap();
    for r in replies {
        let items: Vec<String> = match r {
            redis::Value::Array(v) => v
                .into_iter()
                .map(|x| redis::from_redis_value(x).unwrap())
                .collect(),
            other => vec![redis::from_redis_value(other).unwrap()],
        };
        for i in items {
            *counts.entry(i).or_default() += 1;
        }
    }
}

#[test]
fn random_draws_are_uniform() {
    let srv = Server::start(&[]);
    let mut c = srv.client();
    // 60 members stay compact (listpack / intset up to 128/512), 600 do
    // not; the members are strings so sets become listpack or hashtable.
    for n in [60usize, 600] {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        let members: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
        let _: () = redis::cmd("SADD")
            .arg("s")
            .arg(&members)
            .query(&mut c)
            .unwrap();
        let mut h = redis::cmd("HSET");
        h.arg("h");
        let mut z = redis::cmd("ZADD");
        z.arg("z");
        for (i, m) in members.iter().enumerate() {
            h.arg(m).arg(1);
            z.arg(i).arg(m);
        }
        let _: () = h.query(&mut c).unwrap();
        let _: () = z.query(&mut c).unwrap();
        let rounds = 40 * n / 10;
        for cmd in [
            &["SRANDMEMBER", "s", "10"][..],
            &["SRANDMEMBER", "s", "-10"],
            &["HRANDFIELD", "h", "10"],
            &["HRANDFIELD", "h", "-10"],
            &["ZRANDMEMBER", "z", "10"],
            &["ZRANDMEMBER", "z", "-10"],
        ] {
            let mut counts = HashMap::new();
            draw(&mut c, cmd, rounds, &mut counts);
            assert_uniform(&format!("{cmd:?} over {n}"), &counts, n);
        }
        let mut counts = HashMap::new();
        draw(&mut c, &["SRANDMEMBER", "s"], 40 * n, &mut counts);
        assert_uniform(&format!("SRANDMEMBER over {n}"), &counts, n);
        // SPOP: refill after each pop of 10.
        let mut counts = HashMap::new();
        for _ in 0..(40 * n / 10) {
            let popped: Vec<String> = redis::cmd("SPOP").arg("s").arg(10).query(&mut c).unwrap();
            let _: () = redis::cmd("SADD")
                .arg("s")
                .arg(&popped)
                .query(&mut c)
                .unwrap();
            for p in popped {
                *counts.entry(p).or_default() += 1;
            }
        }
        assert_uniform(&format!("SPOP 10 over {n}"), &counts, n);
    }
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    let mut m = redis::cmd("MSET");
    for i in 0..300 {
        m.arg(format!("k{i}")).arg(1);
    }
    let _: () = m.query(&mut c).unwrap();
    let mut counts = HashMap::new();
    draw(&mut c, &["RANDOMKEY"], 12_000, &mut counts);
    assert_uniform("RANDOMKEY over 300", &counts, 300);
}
