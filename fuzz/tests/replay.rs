//! Stable-Rust run of the fuzz harnesses (CI has no nightly): every file of
//! the committed corpus (`corpus/<target>/`) and of the regression inputs
//! (`regressions/<target>/`, crashes found and fixed), then random inputs
//! for a bounded time: mutations of corpus files (bit flips, byte
//! insertions and deletions, splices) and fresh random bytes.
//!
//! `FERROKV_FUZZ_SECS` sets the random phase per target (default 5 s);
//! `FERROKV_SEED` replays a run (the seed is printed). A failing input is
//! written to `target/replay-failure-<target>` before the panic is raised
//! again, so it can be replayed with `cargo fuzz run <target> <file>`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// xorshift64*: deterministic given the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn mutate(rng: &mut Rng, corpus: &[Vec<u8>], max_len: usize) -> Vec<u8> {
    let mut v = if corpus.is_empty() || rng.below(8) == 0 {
        (0..rng.below(256)).map(|_| rng.next() as u8).collect()
    } else {
        corpus[rng.below(corpus.len())].clone()
    };
    for _ in 0..1 + rng.below(8) {
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 => {
                let i = rng.below(v.len() + 1);
                v.insert(i, rng.next() as u8);
            }
            2 if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = rng.below(v.len() - i + 1);
                v.drain(i..i + n);
            }
            3 if !corpus.is_empty() => {
                let o = &corpus[rng.below(corpus.len())];
                let i = rng.below(v.len() + 1);
                let s = rng.below(o.len() + 1);
                let n = rng.below(o.len() - s + 1);
                v.splice(i..i, o[s..s + n].iter().copied());
            }
            4 if !v.is_empty() => {
                // Interesting byte values in place (lengths, opcodes).
                let i = rng.below(v.len());
                v[i] =
                    [0, 1, 0x7f, 0x80, 0xff, b'*', b'$', b'\r', b'\n', b'-', b'9'][rng.below(11)];
            }
            _ => {
                let i = rng.below(v.len() + 1);
                let b = rng.next() as u8;
                let n = rng.below(16);
                v.splice(i..i, std::iter::repeat_n(b, n));
            }
        }
    }
    v.truncate(max_len);
    v
}

fn run_one(target: &str, f: fn(&[u8]), input: &[u8]) {
    if let Err(e) = std::panic::catch_unwind(|| f(input)) {
        let out = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join(format!("replay-failure-{target}"));
        let _ = std::fs::create_dir_all(out.parent().unwrap());
        let _ = std::fs::write(&out, input);
        eprintln!("{target}: failing input written to {}", out.display());
        std::panic::resume_unwind(e);
    }
}

fn replay(target: &str, f: fn(&[u8]), max_len: usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut corpus = Vec::new();
    for dir in ["corpus", "regressions"] {
        for p in files(&root.join(dir).join(target)) {
            let data = std::fs::read(&p).unwrap();
            run_one(target, f, &data);
            corpus.push(data);
        }
    }
    let secs: u64 = std::env::var("FERROKV_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let seed: u64 = std::env::var("FERROKV_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        })
        | 1;
    // Printed first: a failing run panics before the summary line.
    eprintln!("{target}: FERROKV_SEED={seed}");
    let mut rng = Rng(seed);
    let end = Instant::now() + Duration::from_secs(secs);
    let mut n = 0u64;
    while Instant::now() < end {
        let input = mutate(&mut rng, &corpus, max_len);
        run_one(target, f, &input);
        n += 1;
    }
    eprintln!(
        "{target}: {} corpus files, {n} random inputs in {secs} s (FERROKV_SEED={seed})",
        corpus.len()
    );
}

#[test]
fn resp_parse() {
    replay("resp_parse", ferrokv_fuzz::resp_parse, 8192);
}

#[test]
fn command_exec() {
    replay("command_exec", ferrokv_fuzz::command_exec, 4096);
}

#[test]
fn rdb_load() {
    replay("rdb_load", ferrokv_fuzz::rdb_load, 8192);
}

#[test]
fn aof_load() {
    replay("aof_load", ferrokv_fuzz::aof_load, 8192);
}
