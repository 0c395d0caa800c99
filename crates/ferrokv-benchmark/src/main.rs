//! `ferrokv-benchmark`: see the library documentation and `--help`.

use clap::Parser;
use ferrokv_benchmark::args::{parse_ratio, Args, ReportArgs};
use ferrokv_benchmark::chart;
use ferrokv_benchmark::cluster;
use ferrokv_benchmark::conn::{clean_io_error, Addr, SyncConn};
use ferrokv_benchmark::keys::{KeyPattern, KeySpace};
use ferrokv_benchmark::report::{self, Format};
use ferrokv_benchmark::runner::{run_phase, PhaseResult, RunSpec, SlotMap};
use ferrokv_benchmark::workload::{self, KeyChoice, Protocol, Workload};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn main() {
    let result = if std::env::args_os().nth(1).is_some_and(|a| a == "report") {
        draw_report(ReportArgs::parse_from(std::env::args_os().skip(1))).map(|()| 0)
    } else {
        run(Args::parse())
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}

/// Watches for Ctrl-C on a small thread of its own.
fn install_ctrl_c() {
    std::thread::spawn(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            while tokio::signal::ctrl_c().await.is_ok() {
                if INTERRUPTED.swap(true, Ordering::SeqCst) {
                    // Second Ctrl-C: give up at once.
                    std::process::exit(130);
                }
            }
        });
    });
}

fn key_settings(args: &Args) -> anyhow::Result<Option<(KeySpace, KeyChoice)>> {
    let (set_p, get_p) = match &args.key_pattern {
        Some(p) => {
            let (a, b) = p.split_once(':').unwrap_or((p, p));
            let parse = |s: &str| {
                KeyPattern::parse(s).ok_or_else(|| {
                    anyhow::anyhow!("--key-pattern: unknown pattern {s:?} (R, S, G or Z)")
                })
            };
            (parse(a)?, parse(b)?)
        }
        None => (KeyPattern::Random, KeyPattern::Random),
    };
    let randomize =
        args.keyspacelen.is_some() || args.key_pattern.is_some() || args.ratio.is_some();
    if !randomize {
        return Ok(None);
    }
    let mut space = match args.keyspacelen {
        Some(0) => anyhow::bail!("-r must be at least 1"),
        Some(n) => KeySpace::new(0, n - 1),
        None => {
            if args.key_maximum < args.key_minimum {
                anyhow::bail!("--key-maximum must not be below --key-minimum");
            }
            KeySpace::new(args.key_minimum, args.key_maximum)
        }
    };
    if let Some(m) = args.key_median {
        space.median = m;
    }
    if let Some(s) = args.key_stddev {
        space.stddev = s;
    }
    if args.key_zipf_exp <= 0.0 {
        anyhow::bail!("--key-zipf-exp must be positive");
    }
    space.zipf_exp = args.key_zipf_exp;
    Ok(Some((
        space,
        KeyChoice {
            set_pattern: set_p,
            get_pattern: get_p,
        },
    )))
}

/// `ferrokv-benchmark report`: reads each `--input` document and writes
/// their picture to `--out`.
fn draw_report(args: ReportArgs) -> anyhow::Result<()> {
    let mut report = chart::Report {
        title: args.title.unwrap_or_default(),
        ..Default::default()
    };
    for path in &args.input {
        let text = if path == "-" {
            std::io::read_to_string(std::io::stdin())
        } else {
            std::fs::read_to_string(path)
        }
        .map_err(|e| anyhow::anyhow!("--input {path}: {e}"))?;
        let doc: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("--input {path}: {e}"))?;
        report
            .add_json(&doc)
            .map_err(|e| anyhow::anyhow!("--input {path}: {e}"))?;
    }
    report.write_svg(&args.out)
}

/// The targets to run against, each with its name: `--compare`'s entries
/// (`NAME=ADDR` or `ADDR`, where ADDR is HOST:PORT, PORT or a socket path;
/// the name defaults to the address), or the one -h/-p/-s target.
fn targets(args: &Args) -> Vec<(String, Addr)> {
    let named = |addr: Addr| (addr.to_string(), addr);
    if let Some(list) = &args.compare {
        return list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|entry| {
                let (name, s) = match entry.split_once('=') {
                    Some((n, a)) => (Some(n.trim()), a.trim()),
                    None => (None, entry),
                };
                let addr = if s.starts_with('/') {
                    Addr::Unix(s.into())
                } else if s.contains(':') {
                    Addr::Tcp(s.to_string())
                } else {
                    Addr::Tcp(format!("{}:{s}", args.host))
                };
                match name {
                    Some(n) => (n.to_string(), addr),
                    None => named(addr),
                }
            })
            .collect();
    }
    match &args.socket {
        Some(s) => vec![named(Addr::Unix(s.into()))],
        None => vec![named(Addr::Tcp(cluster::join_host_port(
            &args.host,
            args.port as i64,
        )))],
    }
}

fn workloads(args: &Args, protocol: Protocol) -> anyhow::Result<Vec<Workload>> {
    let data = vec![b'x'; args.datasize];
    if args.verify {
        return Ok(vec![workload::verify_workload()]);
    }
    if let Some(r) = &args.ratio {
        let (s, g) = parse_ratio(r)?;
        return Ok(vec![workload::ratio_workload(s, g, &data, protocol)]);
    }
    if !args.command.is_empty() {
        if protocol == Protocol::Memcached {
            anyhow::bail!("custom commands need --protocol redis");
        }
        return Ok(vec![workload::custom_workload(&args.command)]);
    }
    Ok(workload::select_tests(args.tests.as_deref(), protocol)?
        .into_iter()
        .map(|t| workload::named_test(t, &data, protocol))
        .collect())
}

fn preflight(addr: &Addr, protocol: Protocol, args: &Args) -> anyhow::Result<Option<Arc<SlotMap>>> {
    let word = if protocol == Protocol::Redis {
        "Redis"
    } else {
        "memcached"
    };
    let mut c = match SyncConn::connect(addr, Duration::from_secs(5)) {
        Ok(c) => c,
        Err(e) => anyhow::bail!(
            "Could not connect to {word} at {addr}: {}",
            clean_io_error(&e)
        ),
    };
    if !args.cluster {
        return Ok(None);
    }
    if let Some(pw) = &args.password {
        c.command(&["AUTH", pw])?;
    }
    let v = c.command(&["CLUSTER", "SLOTS"])?;
    if let ferrokv_benchmark::resp::Value::Error(e) = &v {
        anyhow::bail!("CLUSTER SLOTS on {addr} failed: {e}");
    }
    let host = match addr {
        Addr::Tcp(a) => a.rsplit_once(':').map(|(h, _)| h).unwrap_or(a).to_string(),
        Addr::Unix(_) => anyhow::bail!("--cluster needs a TCP address"),
    };
    let ranges = cluster::parse_cluster_slots(&v, host.trim_matches(|c| c == '[' || c == ']'))?;
    if ranges.is_empty() {
        anyhow::bail!("CLUSTER SLOTS on {addr}: no slots assigned");
    }
    Ok(Some(Arc::new(SlotMap::from_ranges(&ranges))))
}

fn run(args: Args) -> anyhow::Result<i32> {
    let protocol = match args.protocol.as_str() {
        "memcached" => Protocol::Memcached,
        _ => Protocol::Redis,
    };
    if args.cluster && protocol == Protocol::Memcached {
        anyhow::bail!("--cluster needs --protocol redis");
    }
    if args.clients == 0 || args.pipeline == 0 || args.threads == 0 {
        anyhow::bail!("-c, -P and --threads must be at least 1");
    }
    let fmt = if args.csv {
        Format::Csv
    } else if args.quiet {
        Format::Quiet
    } else {
        Format::Text
    };
    let keys = key_settings(&args)?;
    let workloads = workloads(&args, protocol)?;
    let targets = targets(&args);
    if targets.is_empty() {
        anyhow::bail!("--compare: no targets");
    }
    let mut slot_maps = Vec::new();
    for (_, t) in &targets {
        slot_maps.push(preflight(t, protocol, &args)?);
    }
    install_ctrl_c();
    let duration = args.test_time.map(Duration::from_secs_f64);
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    let show_progress = args.progress || (fmt == Format::Text && std::io::stdout().is_terminal());
    let comparing = targets.len() > 1;
    let mut stdout = std::io::stdout();
    if fmt == Format::Csv {
        writeln!(stdout, "{}", report::CSV_HEADER)?;
    }
    let mut all: Vec<PhaseResult> = Vec::new();
    let mut failed = false;
    'outer: for wl in &workloads {
        let mut this: Vec<PhaseResult> = Vec::new();
        for ((name, t), map) in targets.iter().zip(&slot_maps) {
            let spec = RunSpec {
                addr: t.clone(),
                protocol,
                clients: args.clients,
                threads: args.threads,
                pipeline: args.pipeline,
                requests: if duration.is_some() {
                    None
                } else {
                    Some(args.requests)
                },
                duration,
                rate: args.rate,
                auth: args.password.clone(),
                keys: keys.clone(),
                cluster: map.clone(),
                seed: seed ^ all.len() as u64,
            };
            let label = if comparing {
                format!("{}@{name}", wl.name)
            } else {
                wl.name.clone()
            };
            let bar = progress_bar(show_progress, &label, &spec, wl.verify);
            let mut last = (Instant::now(), 0u64);
            let mut r = run_phase(&spec, wl, |p| {
                let done = p.done();
                let now = Instant::now();
                let dt = now.duration_since(last.0).as_secs_f64();
                if dt >= 0.25 {
                    let rate = (done - last.1) as f64 / dt;
                    bar.set_message(format!("{rate:.0} ops/s"));
                    last = (now, done);
                }
                bar.set_position(done);
                !INTERRUPTED.load(Ordering::SeqCst)
            });
            bar.finish_and_clear();
            r.target = name.clone();
            print!(
                "{}",
                report::format_phase(&r, &label, fmt, args.clients, args.pipeline)
            );
            if fmt == Format::Text {
                println!();
            }
            stdout.flush()?;
            failed |= r.mismatches > 0 || r.errors > 0 || !r.io_errors.is_empty();
            let stop = r.interrupted;
            this.push(r);
            if stop {
                all.append(&mut this);
                break 'outer;
            }
        }
        if comparing && fmt != Format::Csv {
            let refs: Vec<&PhaseResult> = this.iter().collect();
            println!("{}", report::format_compare(&refs));
        }
        all.append(&mut this);
    }
    let interrupted = all.iter().any(|r| r.interrupted);
    if args.json_out_file.is_some() || args.report.is_some() {
        let doc = serde_json::json!({
            "tool": "ferrokv-benchmark",
            "version": env!("CARGO_PKG_VERSION"),
            "config": {
                "targets": targets.iter().map(|(_, t)| t.to_string()).collect::<Vec<_>>(),
                "names": targets.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
                "protocol": args.protocol,
                "clients": args.clients,
                "threads": args.threads,
                "pipeline": args.pipeline,
                "requests": if duration.is_some() { None } else { Some(args.requests) },
                "test_time": args.test_time,
                "datasize": args.datasize,
                "ratio": args.ratio,
                "key_pattern": args.key_pattern,
                "keyspace": keys.as_ref().map(|(s, _)| serde_json::json!({"min": s.min, "max": s.max})),
                "rate": args.rate,
                "verify": args.verify,
                "cluster": args.cluster,
            },
            "interrupted": interrupted,
            "results": all.iter().map(report::phase_json).collect::<Vec<_>>(),
        });
        if let Some(path) = &args.json_out_file {
            std::fs::write(path, serde_json::to_string_pretty(&doc)? + "\n")
                .map_err(|e| anyhow::anyhow!("--json-out-file {path}: {e}"))?;
        }
        if let Some(path) = &args.report {
            let mut report = chart::Report {
                title: args.report_title.clone().unwrap_or_default(),
                ..Default::default()
            };
            report.add_json(&doc)?;
            report
                .write_svg(path)
                .map_err(|e| anyhow::anyhow!("--report {path}: {e}"))?;
        }
    }
    if interrupted {
        eprintln!("Interrupted: partial results above.");
        return Ok(130);
    }
    if failed {
        let mismatches: u64 = all.iter().map(|r| r.mismatches).sum();
        if mismatches > 0 {
            eprintln!("VERIFY FAILED: {mismatches} mismatches");
        }
        let errors: u64 = all.iter().map(|r| r.errors).sum();
        if errors > 0 {
            eprintln!("{errors} error replies (see the report above)");
        }
        return Ok(2);
    }
    Ok(0)
}

fn progress_bar(show: bool, label: &str, spec: &RunSpec, verify: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = match spec.requests {
        Some(n) => {
            let n = if verify { 3 * n } else { n };
            let b = ProgressBar::with_draw_target(Some(n), draw_target());
            if let Ok(style) =
                ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
            {
                b.set_style(style.progress_chars("=> "));
            }
            b
        }
        None => {
            let b = ProgressBar::with_draw_target(None, draw_target());
            if let Ok(style) =
                ProgressStyle::with_template("{prefix} {spinner} {pos} requests {msg} ({elapsed})")
            {
                b.set_style(style);
            }
            b
        }
    };
    bar.set_prefix(label.to_string());
    bar
}

/// The progress bar's target: the terminal on stderr, or (with `--progress`
/// when stderr is not a terminal) plain ANSI output to stderr, so the bar
/// can be recorded in a log.
fn draw_target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::term_like_with_hz(Box::new(AnsiStderr), 4)
    }
}

/// A [`indicatif::TermLike`] writing ANSI sequences to stderr whatever it is.
#[derive(Debug)]
struct AnsiStderr;

impl indicatif::TermLike for AnsiStderr {
    fn width(&self) -> u16 {
        100
    }
    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.write_str(&format!("\x1b[{n}A"))
    }
    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.write_str(&format!("\x1b[{n}B"))
    }
    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.write_str(&format!("\x1b[{n}C"))
    }
    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.write_str(&format!("\x1b[{n}D"))
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.write_str(&format!("{s}\n"))
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        std::io::stderr().write_all(s.as_bytes())
    }
    fn clear_line(&self) -> std::io::Result<()> {
        self.write_str("\r\x1b[2K")
    }
    fn flush(&self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
