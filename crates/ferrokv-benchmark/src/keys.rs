//! Key generation: a small fast PRNG and the key-index distributions
//! (uniform random, sequential, Gaussian, Zipf) used to fill the 12-digit
//! `__rand_int__` placeholder of each request.

/// Width of the `__rand_int__` placeholder and of the zero-padded key index.
pub const RAND_WIDTH: usize = 12;

/// The placeholder replaced by a key index in request templates.
pub const RAND_PLACEHOLDER: &[u8; RAND_WIDTH] = b"__rand_int__";

/// xoshiro256** pseudo-random generator: cheap, good enough for load
/// generation, seeded from a 64-bit value through splitmix64.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator seeded from `seed` (any value, including 0, is fine).
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }

    /// Next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform integer in `0..n` (`n > 0`), by multiply-shift.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform float in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// How key indexes are drawn from the keyspace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeyPattern {
    /// Uniform random over the keyspace (memtier `R`, redis-benchmark `-r`).
    Random,
    /// Sequential, each connection walking its own slice of the keyspace (`S`).
    Sequential,
    /// Gaussian around the median with the given standard deviation (`G`).
    Gaussian,
    /// Zipf with the configured exponent: index 0 is the hottest key (`Z`).
    Zipf,
}

impl KeyPattern {
    /// Parses one memtier-style pattern letter (`R`, `S`, `G`, `Z`).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_uppercase().as_str() {
            "R" => Some(KeyPattern::Random),
            "S" => Some(KeyPattern::Sequential),
            "G" => Some(KeyPattern::Gaussian),
            "Z" => Some(KeyPattern::Zipf),
            _ => None,
        }
    }
}

/// Settings of the keyspace shared by all connections.
#[derive(Clone, Debug)]
pub struct KeySpace {
    /// Smallest key index.
    pub min: u64,
    /// Largest key index (inclusive).
    pub max: u64,
    /// Gaussian median (defaults to the middle of the range).
    pub median: f64,
    /// Gaussian standard deviation (defaults to a sixth of the range).
    pub stddev: f64,
    /// Zipf exponent (> 0).
    pub zipf_exp: f64,
}

impl KeySpace {
    /// A keyspace `[min, max]` with the default Gaussian and Zipf settings.
    pub fn new(min: u64, max: u64) -> Self {
        let span = (max - min) as f64;
        KeySpace {
            min,
            max,
            median: min as f64 + span / 2.0,
            stddev: (span / 6.0).max(1.0),
            zipf_exp: 0.99,
        }
    }

    /// Number of distinct keys.
    pub fn len(&self) -> u64 {
        self.max - self.min + 1
    }

    /// Always false: a keyspace holds at least one key.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// Draws key indexes for one connection with one pattern.
#[derive(Clone, Debug)]
pub struct KeyGen {
    pattern: KeyPattern,
    space: KeySpace,
    seq: u64,
    zipf: Option<Zipf>,
}

impl KeyGen {
    /// A generator for connection `conn` of `conns` (used to spread the
    /// sequential pattern's starting points over the keyspace).
    pub fn new(pattern: KeyPattern, space: &KeySpace, conn: u64, conns: u64) -> Self {
        let seq = if conns > 0 {
            (space.len() as u128 * conn as u128 / conns as u128) as u64
        } else {
            0
        };
        let zipf = (pattern == KeyPattern::Zipf).then(|| Zipf::new(space.len(), space.zipf_exp));
        KeyGen {
            pattern,
            space: space.clone(),
            seq,
            zipf,
        }
    }

    /// The next key index, within `[min, max]`.
    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        let n = self.space.len();
        let off = match self.pattern {
            KeyPattern::Random => rng.below(n),
            KeyPattern::Sequential => {
                let v = self.seq % n;
                self.seq = self.seq.wrapping_add(1);
                v
            }
            KeyPattern::Gaussian => {
                let g = gaussian(rng) * self.space.stddev + self.space.median;
                let g = g
                    .round()
                    .clamp(self.space.min as f64, self.space.max as f64);
                g as u64 - self.space.min
            }
            KeyPattern::Zipf => self.zipf.as_ref().map_or(0, |z| z.sample(rng) - 1),
        };
        self.space.min + off
    }
}

/// A standard normal deviate (Box–Muller, one of the pair).
pub fn gaussian(rng: &mut Rng) -> f64 {
    let u1 = 1.0 - rng.unit(); // (0, 1]
    let u2 = rng.unit();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Zipf distribution over ranks `1..=n` with `P(k) ∝ k^-s`, sampled by
/// rejection-inversion (Hörmann and Derflinger, 1996): constant time per
/// sample, no table.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}

impl Zipf {
    /// A Zipf sampler over `1..=n` with exponent `s > 0`.
    pub fn new(n: u64, s: f64) -> Self {
        let mut z = Zipf {
            n: n as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            cut: 0.0,
        };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(n as f64 + 0.5);
        z.cut = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        z
    }

    /// A rank in `1..=n`.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + rng.unit() * (self.h_x1 - self.h_n);
            let x = self.h_integral_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.cut || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// Antiderivative of `h`: `(x^(1-s) - 1) / (1-s)`, or `ln x` at s = 1.
    fn h_integral(&self, x: f64) -> f64 {
        let lx = x.ln();
        expm1_over_x((1.0 - self.s) * lx) * lx
    }

    fn h_integral_inv(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (ln1p_over_x(t) * x).exp()
    }
}

/// `(e^x - 1) / x`, continuous at 0.
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x / 2.0
    }
}

/// `ln(1 + x) / x`, continuous at 0.
fn ln1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x / 2.0
    }
}

/// Writes `v` as 12 zero-padded decimal digits into `out` (which must be 12
/// bytes long); larger values keep their low 12 digits.
#[inline]
pub fn write_key_digits(out: &mut [u8], mut v: u64) {
    for b in out.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_zero_padded() {
        let mut b = [0u8; 12];
        write_key_digits(&mut b, 42);
        assert_eq!(&b, b"000000000042");
        write_key_digits(&mut b, 999_999_999_999);
        assert_eq!(&b, b"999999999999");
    }

    #[test]
    fn random_stays_in_range() {
        let space = KeySpace::new(10, 19);
        let mut g = KeyGen::new(KeyPattern::Random, &space, 0, 1);
        let mut rng = Rng::new(1);
        let mut seen = [false; 10];
        for _ in 0..10_000 {
            let k = g.next(&mut rng);
            assert!((10..=19).contains(&k));
            seen[(k - 10) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn sequential_walks_and_wraps() {
        let space = KeySpace::new(0, 9);
        let mut g = KeyGen::new(KeyPattern::Sequential, &space, 1, 2);
        let mut rng = Rng::new(1);
        let v: Vec<u64> = (0..7).map(|_| g.next(&mut rng)).collect();
        assert_eq!(v, vec![5, 6, 7, 8, 9, 0, 1]);
    }

    #[test]
    fn gaussian_centres_on_median() {
        let space = KeySpace::new(0, 9_999);
        let mut g = KeyGen::new(KeyPattern::Gaussian, &space, 0, 1);
        let mut rng = Rng::new(7);
        let n = 100_000;
        let (mut sum, mut within) = (0f64, 0u32);
        for _ in 0..n {
            let k = g.next(&mut rng) as f64;
            sum += k;
            if (k - space.median).abs() <= space.stddev {
                within += 1;
            }
        }
        let mean = sum / n as f64;
        assert!((mean - 4999.5).abs() < 50.0, "mean {mean}");
        let frac = within as f64 / n as f64;
        assert!((frac - 0.6827).abs() < 0.02, "within 1 sd: {frac}");
    }

    #[test]
    fn zipf_follows_power_law() {
        for &s in &[0.8, 1.0, 1.2] {
            let z = Zipf::new(1000, s);
            let mut rng = Rng::new(3);
            let mut counts = vec![0u32; 1001];
            let n = 400_000;
            for _ in 0..n {
                let k = z.sample(&mut rng);
                assert!((1..=1000).contains(&k));
                counts[k as usize] += 1;
            }
            for &k in &[2usize, 4, 10] {
                let want = (k as f64).powf(s);
                let got = counts[1] as f64 / counts[k] as f64;
                assert!(
                    (got / want - 1.0).abs() < 0.1,
                    "s={s} p(1)/p({k}) = {got}, want {want}"
                );
            }
        }
    }

    #[test]
    fn zipf_keygen_prefers_low_indexes() {
        let mut space = KeySpace::new(100, 1099);
        space.zipf_exp = 1.0;
        let mut g = KeyGen::new(KeyPattern::Zipf, &space, 0, 1);
        let mut rng = Rng::new(5);
        let mut low = 0;
        for _ in 0..10_000 {
            let k = g.next(&mut rng);
            assert!((100..=1099).contains(&k));
            if k < 110 {
                low += 1;
            }
        }
        // Harmonic: H(10)/H(1000) ≈ 0.39 of the mass is on the first 10 keys.
        assert!(low > 3_500 && low < 4_300, "{low}");
    }
}
