//! Reports: redis-benchmark-style text, `-q` and `--csv` lines, the
//! `--compare` table and the `--json-out-file` document.

use crate::runner::PhaseResult;
use hdrhistogram::Histogram;
use serde_json::{json, Value};

/// Latency summary of a histogram, in milliseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Latency {
    /// Mean.
    pub avg: f64,
    /// Minimum.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Maximum.
    pub max: f64,
}

impl Latency {
    /// Summarises a microsecond histogram.
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Latency::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Latency {
            avg: h.mean() / 1000.0,
            min: ms(h.min()),
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
        }
    }
}

/// Output style.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Full text report.
    Text,
    /// One line per test (`-q`).
    Quiet,
    /// CSV (`--csv`).
    Csv,
}

/// The CSV header line, as redis-benchmark prints it.
pub const CSV_HEADER: &str = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"";

fn csv_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Formats one phase. `label` is the test name, with the target appended in
/// compare mode.
pub fn format_phase(
    r: &PhaseResult,
    label: &str,
    fmt: Format,
    clients: usize,
    pipeline: usize,
) -> String {
    let l = Latency::of(&r.total);
    let mut out = String::new();
    match fmt {
        Format::Csv => {
            out.push_str(&format!(
                "{},\"{:.2}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\"\n",
                csv_quote(label),
                r.rps(),
                l.avg,
                l.min,
                l.p50,
                l.p95,
                l.p99,
                l.max
            ));
        }
        Format::Quiet => {
            out.push_str(&format!(
                "{}: {:.2} requests per second, p50={:.3} msec\n",
                label,
                r.rps(),
                l.p50
            ));
        }
        Format::Text => {
            out.push_str(&format!("====== {label} ======\n"));
            out.push_str(&format!(
                "  {} requests completed in {:.2} seconds{}\n",
                r.requests(),
                r.elapsed.as_secs_f64(),
                if r.interrupted { " (interrupted)" } else { "" }
            ));
            out.push_str(&format!("  {clients} parallel clients\n"));
            out.push_str(&format!("  pipeline {pipeline}\n\n"));
            out.push_str(&format!(
                "throughput summary: {:.2} requests per second\n",
                r.rps()
            ));
            out.push_str("latency summary (msec):\n");
            out.push_str(&latency_table(&r.ops, &r.total));
        }
    }
    out.push_str(&problems(r));
    out
}

fn latency_table(ops: &[crate::runner::OpStats], total: &Histogram<u64>) -> String {
    let mut s = format!(
        "  {:<8} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
        "op", "count", "avg", "min", "p50", "p90", "p99", "p99.9", "max", "errors"
    );
    let row = |name: &str, count: u64, errors: u64, h: &Histogram<u64>| {
        let l = Latency::of(h);
        format!(
            "  {:<8} {:>10} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8}\n",
            name, count, l.avg, l.min, l.p50, l.p90, l.p99, l.p999, l.max, errors
        )
    };
    let used: Vec<_> = ops.iter().filter(|o| o.count > 0).collect();
    for o in &used {
        s.push_str(&row(&o.name, o.count, o.errors, &o.hist));
    }
    if used.len() > 1 {
        let count = ops.iter().map(|o| o.count).sum();
        let errors = ops.iter().map(|o| o.errors).sum();
        s.push_str(&row("Totals", count, errors, total));
    }
    s
}

/// Error replies, verification mismatches and connection failures of a
/// phase, or the empty string. Printed in every format.
pub fn problems(r: &PhaseResult) -> String {
    let mut s = String::new();
    if r.errors > 0 {
        s.push_str(&format!(
            "  {}: {} error replies, first ones:\n",
            r.name, r.errors
        ));
        for e in &r.first_errors {
            s.push_str(&format!("    -{e}\n"));
        }
    }
    if r.mismatches > 0 {
        s.push_str(&format!(
            "  {}: VERIFY FAILED: {} mismatches, first ones:\n",
            r.name, r.mismatches
        ));
        for e in &r.first_mismatches {
            s.push_str(&format!("    {e}\n"));
        }
    }
    for e in &r.io_errors {
        s.push_str(&format!("  {}: connection error: {e}\n", r.name));
    }
    if r.redirects > 0 {
        s.push_str(&format!("  cluster redirects followed: {}\n", r.redirects));
    }
    s
}

/// The `--compare` table for one workload: each target with its ratios to
/// the first.
pub fn format_compare(results: &[&PhaseResult]) -> String {
    let Some(first) = results.first() else {
        return String::new();
    };
    let base = (first.rps(), Latency::of(&first.total));
    let mut s = format!("====== compare: {} ======\n", first.name);
    s.push_str(&format!(
        "  {:<24} {:>12} {:>8} {:>8} {:>10} {:>10} {:>10}\n",
        "target", "rps", "p50", "p99", "rps/first", "p50/first", "p99/first"
    ));
    for r in results {
        let l = Latency::of(&r.total);
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        s.push_str(&format!(
            "  {:<24} {:>12.2} {:>8.3} {:>8.3} {:>10.3} {:>10.3} {:>10.3}\n",
            r.target,
            r.rps(),
            l.p50,
            l.p99,
            ratio(r.rps(), base.0),
            ratio(l.p50, base.1.p50),
            ratio(l.p99, base.1.p99)
        ));
    }
    s
}

/// One phase as JSON; `percentiles` is its latency curve as
/// `[[percentile 0..100, milliseconds], ...]` (see
/// [`crate::chart::histogram_percentiles`]).
pub fn phase_json(r: &PhaseResult) -> Value {
    let lat = |h: &Histogram<u64>| {
        let l = Latency::of(h);
        json!({
            "avg": l.avg, "min": l.min, "p50": l.p50, "p90": l.p90, "p95": l.p95,
            "p99": l.p99, "p99.9": l.p999, "max": l.max,
        })
    };
    let ops: Vec<Value> = r
        .ops
        .iter()
        .map(|o| {
            json!({
                "name": o.name,
                "count": o.count,
                "errors": o.errors,
                "latency_ms": lat(&o.hist),
            })
        })
        .collect();
    json!({
        "test": r.name,
        "target": r.target,
        "requests": r.requests(),
        "seconds": r.elapsed.as_secs_f64(),
        "rps": r.rps(),
        "errors": r.errors,
        "first_errors": r.first_errors,
        "mismatches": r.mismatches,
        "first_mismatches": r.first_mismatches,
        "connection_errors": r.io_errors,
        "redirects": r.redirects,
        "interrupted": r.interrupted,
        "latency_ms": lat(&r.total),
        "percentiles": crate::chart::histogram_percentiles(&r.total)
            .into_iter()
            .map(|(p, ms)| [p, ms])
            .collect::<Vec<_>>(),
        "ops": ops,
    })
}
