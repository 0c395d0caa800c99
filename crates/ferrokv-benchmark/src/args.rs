//! Command-line flags: redis-benchmark's common ones plus memtier-style
//! workload flags and ferrokv-benchmark's own modes.

use clap::Parser;

/// Load generator for ferrokv / Redis / memcached.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "ferrokv-benchmark",
    version,
    disable_help_flag = true,
    about = "Load generator for ferrokv, Redis and memcached (redis-benchmark flags plus memtier-style workloads)",
    after_help = "Subcommand: `ferrokv-benchmark report --input results.json --out report.svg` draws the --report picture from --json-out-file documents (see `ferrokv-benchmark report --help`).\nTests (-t): ping_inline, ping_mbulk, set, get, incr, lpush, rpush, lpop, rpop, sadd, hset, spop, zadd, zpopmin, lrange_100, lrange_300, lrange_500, lrange_600, mset; `ping` and `lrange` select groups.\nA command after the flags is benchmarked as a custom test, e.g. `ferrokv-benchmark -r 1000 SET key:__rand_int__ v`."
)]
pub struct Args {
    /// Print help.
    #[arg(long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Server hostname.
    #[arg(short = 'h', default_value = "127.0.0.1")]
    pub host: String,
    /// Server port.
    #[arg(short = 'p', default_value_t = 6379)]
    pub port: u16,
    /// Server Unix socket (overrides host and port).
    #[arg(short = 's')]
    pub socket: Option<String>,
    /// Password for AUTH.
    #[arg(short = 'a')]
    pub password: Option<String>,
    /// Number of parallel connections.
    #[arg(short = 'c', default_value_t = 50)]
    pub clients: usize,
    /// Total number of requests (SET/GET/DEL rounds with --verify).
    #[arg(short = 'n', default_value_t = 100_000)]
    pub requests: u64,
    /// Data size of SET/GET value in bytes.
    #[arg(short = 'd', default_value_t = 3)]
    pub datasize: usize,
    /// Use random keys in [0, N) for SET/GET/INCR, random elements for SADD/HSET/ZADD (`__rand_int__`).
    #[arg(short = 'r')]
    pub keyspacelen: Option<u64>,
    /// Pipeline N requests.
    #[arg(short = 'P', default_value_t = 1)]
    pub pipeline: usize,
    /// Quiet: just show query/sec values.
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Output in CSV format.
    #[arg(long)]
    pub csv: bool,
    /// Comma-separated list of tests to run.
    #[arg(short = 't')]
    pub tests: Option<String>,
    /// Number of threads, each driving its share of the connections.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// SET:GET ratio, memtier style (e.g. 1:10).
    #[arg(long)]
    pub ratio: Option<String>,
    /// Key pattern: R (random), S (sequential), G (Gaussian), Z (Zipf), or SET:GET like R:G.
    #[arg(long = "key-pattern")]
    pub key_pattern: Option<String>,
    /// Smallest key index (memtier --key-minimum).
    #[arg(long = "key-minimum", default_value_t = 0)]
    pub key_minimum: u64,
    /// Largest key index (memtier --key-maximum).
    #[arg(long = "key-maximum", default_value_t = 9_999_999)]
    pub key_maximum: u64,
    /// Gaussian median (default: middle of the key range).
    #[arg(long = "key-median")]
    pub key_median: Option<f64>,
    /// Gaussian standard deviation (default: range/6).
    #[arg(long = "key-stddev")]
    pub key_stddev: Option<f64>,
    /// Zipf exponent for the Z pattern.
    #[arg(long = "key-zipf-exp", default_value_t = 0.99)]
    pub key_zipf_exp: f64,
    /// Run each test for this many seconds instead of -n requests.
    #[arg(long = "test-time")]
    pub test_time: Option<f64>,
    /// Write results as JSON to this file.
    #[arg(long = "json-out-file")]
    pub json_out_file: Option<String>,
    /// Target rate in requests/second over all connections; latency is then measured from each request's intended send time.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Verify: each client does SET k v, GET k (must equal v), DEL k with random 256-byte values.
    #[arg(long)]
    pub verify: bool,
    /// Wire protocol: redis or memcached.
    #[arg(long, default_value = "redis", value_parser = ["redis", "memcached"])]
    pub protocol: String,
    /// Redis Cluster mode: discover slots with CLUSTER SLOTS, route by hash slot, follow MOVED/ASK.
    #[arg(long)]
    pub cluster: bool,
    /// Run the same workload against several targets (HOST:PORT,HOST:PORT,...), interleaved; NAME=HOST:PORT names a target in the output (e.g. ferrokv=127.0.0.1:6379,redis=127.0.0.1:6380).
    #[arg(long)]
    pub compare: Option<String>,
    /// Also draw the results as an SVG picture at PATH: throughput per test and target as grouped bars, latency by percentile as HDR curves (default: no picture).
    #[arg(long, value_name = "PATH")]
    pub report: Option<String>,
    /// Title of the --report picture (default: "ferrokv-benchmark").
    #[arg(long = "report-title", value_name = "TEXT")]
    pub report_title: Option<String>,
    /// Show the live progress bar (with ops/s) on stderr even when stdout
    /// is not a terminal (it is shown by default on a terminal).
    #[arg(long)]
    pub progress: bool,
    /// Random seed (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Custom command to benchmark instead of the named tests.
    #[arg(trailing_var_arg = true, allow_hyphen_values = false)]
    pub command: Vec<String>,
}

/// `ferrokv-benchmark report`: draws the SVG picture from saved results.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "ferrokv-benchmark report",
    bin_name = "ferrokv-benchmark report",
    about = "Draw the --report SVG picture from --json-out-file documents (or bench/compare's compare-report.json)",
    after_help = "Several --input files go into one picture (e.g. a -P 1 and a -P 16 run); each result's workload is its test and pipeline depth (SET P16), its server the --compare name."
)]
pub struct ReportArgs {
    /// A results document (repeatable; `-` reads stdin).
    #[arg(long, required = true, value_name = "PATH")]
    pub input: Vec<String>,
    /// Where to write the SVG.
    #[arg(long, value_name = "PATH")]
    pub out: String,
    /// Title of the picture (default: "ferrokv-benchmark").
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
}

/// Parses `A:B` into two non-negative weights (not both zero).
pub fn parse_ratio(s: &str) -> anyhow::Result<(u32, u32)> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| anyhow::anyhow!("--ratio must look like SET:GET, e.g. 1:10"))?;
    let a: u32 = a.trim().parse()?;
    let b: u32 = b.trim().parse()?;
    if a + b == 0 || a + b > 255 {
        anyhow::bail!("--ratio weights must add up to between 1 and 255");
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_redis_benchmark_flags() {
        let a = Args::try_parse_from([
            "x",
            "-h",
            "h1",
            "-p",
            "7000",
            "-c",
            "5",
            "-n",
            "10",
            "-P",
            "4",
            "-t",
            "set,get",
            "-q",
            "--csv",
            "-r",
            "100",
            "--threads",
            "2",
        ])
        .unwrap();
        assert_eq!(
            (a.host.as_str(), a.port, a.clients, a.requests),
            ("h1", 7000, 5, 10)
        );
        assert_eq!((a.pipeline, a.threads, a.keyspacelen), (4, 2, Some(100)));
        assert!(a.quiet && a.csv);
        let a = Args::try_parse_from(["x", "--compare", "a=h:1,h:2", "--report", "r.svg"]).unwrap();
        assert_eq!(
            (a.compare.as_deref(), a.report.as_deref()),
            (Some("a=h:1,h:2"), Some("r.svg"))
        );
        let r = ReportArgs::try_parse_from(["x", "--input", "a", "--input", "b", "--out", "o"])
            .unwrap();
        assert_eq!(
            (r.input, r.out.as_str()),
            (vec!["a".into(), "b".into()], "o")
        );
        assert!(ReportArgs::try_parse_from(["x", "--out", "o"]).is_err());
        let a = Args::try_parse_from(["x", "-r", "10", "SET", "k", "v"]).unwrap();
        assert_eq!(a.command, vec!["SET", "k", "v"]);
    }

    #[test]
    fn ratios() {
        assert_eq!(parse_ratio("1:10").unwrap(), (1, 10));
        assert!(parse_ratio("0:0").is_err());
        assert!(parse_ratio("x").is_err());
    }
}
