//! The picture report (`--report PATH`, `ferrokv-benchmark report`): one
//! SVG with throughput per workload per server as grouped bars and, per
//! workload, latency percentiles as HDR-style curves (one per server),
//! drawn with `plotters`' SVG backend.
//!
//! The input is the `--json-out-file` document (or several of them, or the
//! one `bench/compare` writes in the same shape): a `results` list whose
//! entries have `test` (or `workload`), `target` (the server's name), `rps`
//! and `percentiles` (`[[percentile 0..100, milliseconds], ...]`; entries
//! without it fall back to the `latency_ms` summary).

use anyhow::{anyhow, bail, Context};
use hdrhistogram::Histogram;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;

/// One measured (workload, server) pair.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// Workload label, e.g. `SET P16` (the test name and the pipeline depth).
    pub workload: String,
    /// Server name (the `--compare NAME=ADDR` name, or the address).
    pub server: String,
    /// Throughput in requests per second.
    pub rps: f64,
    /// Latency curve: `(percentile in [0, 100), milliseconds)`, ascending
    /// in percentile. Points at 100 or above cannot be placed on the
    /// `1/(1-p)` axis and are left out of the picture.
    pub percentiles: Vec<(f64, f64)>,
}

/// Everything one picture shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Heading of the picture.
    pub title: String,
    /// Second heading line (the run's settings), may be empty.
    pub subtitle: String,
    /// The measurements, in the order they were made.
    pub measurements: Vec<Measurement>,
}

/// One bar of the throughput chart, in workload units: workload `i` owns
/// the x interval `[i, i + 1)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bar {
    /// Index into [`Report::workloads`].
    pub workload: usize,
    /// Index into [`Report::servers`] (and the colour).
    pub server: usize,
    /// Left edge.
    pub x0: f64,
    /// Right edge.
    pub x1: f64,
    /// Height: requests per second.
    pub rps: f64,
}

/// Sizes of the picture, in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    /// Width of the whole picture.
    pub width: u32,
    /// Height of the whole picture.
    pub height: u32,
    /// Height of the heading and legend band at the top.
    pub header: u32,
    /// Height of the throughput chart under the heading.
    pub bars: u32,
    /// Latency charts: rows and columns of the grid under the bars.
    pub grid: (u32, u32),
    /// Whether the workload names under the bars are turned to read
    /// upwards (when they are wider than their slots).
    pub vertical_labels: bool,
    /// Height of the band under the bars that holds the workload names.
    pub label_band: u32,
}

/// Estimated width in pixels of a workload name under the bars (about 9 px
/// a character at the labels' size; plotters' SVG backend has no font
/// metrics without its `ttf` feature).
fn label_width(text: &str) -> u32 {
    9 * text.chars().count() as u32 + 8
}

/// Share of a workload's slot the bars of its group fill (the rest is the
/// gap between groups).
pub const GROUP_WIDTH: f64 = 0.8;

const PALETTE: [RGBColor; 8] = [
    RGBColor(0x1F, 0x77, 0xB4),
    RGBColor(0xFF, 0x7F, 0x0E),
    RGBColor(0x2C, 0xA0, 0x2C),
    RGBColor(0xD6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xBD),
    RGBColor(0x8C, 0x56, 0x4B),
    RGBColor(0xE3, 0x77, 0xC2),
    RGBColor(0x7F, 0x7F, 0x7F),
];

/// The colour of server number `i` as `#RRGGBB` (what the SVG's `fill`
/// and `stroke` attributes say); colours repeat after eight servers.
pub fn server_color(i: usize) -> String {
    let c = PALETTE[i % PALETTE.len()];
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// The x coordinate of a percentile (0..100) on the HDR axis: `1/(1-p)`,
/// so 0 → 1, 90 → 10, 99 → 100, 99.9 → 1000. `None` at 100 and above.
pub fn hdr_x(percentile: f64) -> Option<f64> {
    let q = 1.0 - percentile / 100.0;
    (q > 0.0 && percentile >= 0.0).then(|| 1.0 / q)
}

/// The percentile label of an HDR-axis coordinate: 1 → `0%`, 10 → `90%`,
/// 1000 → `99.9%`.
pub fn percentile_label(x: f64) -> String {
    let p = 100.0 * (1.0 - 1.0 / x);
    let s = format!("{p:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// Latency curve points of a microsecond histogram, in milliseconds: ten
/// per decade of `1/(1-p)` from the minimum (percentile 0) up to
/// `1 - 1/count`, where the maximum is placed.
pub fn histogram_percentiles(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let ms = |us: u64| us as f64 / 1000.0;
    let last = h.len().max(2) as f64;
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        let x = 10f64.powf(i as f64 / 10.0);
        if x >= last {
            break;
        }
        let q = 1.0 - 1.0 / x;
        out.push((100.0 * q, ms(h.value_at_quantile(q))));
        i += 1;
    }
    out.push((100.0 * (1.0 - 1.0 / last), ms(h.max())));
    out
}

/// Key points of the HDR axis up to `x_max`: every power of ten (0%, 90%,
/// 99%, ...), plus 2 (the median) when there are at most four decades
/// (further out its label would run into 0%'s).
pub fn percentile_keys(x_max: f64) -> Vec<f64> {
    let mut keys = vec![1.0];
    if x_max <= 1e4 {
        keys.push(2.0);
    }
    let mut k = 10.0;
    while k <= x_max * (1.0 + 1e-9) {
        keys.push(k);
        k *= 10.0;
    }
    keys
}

/// Key points of a log axis from `lo` to `hi` (both positive): the powers
/// of ten between them, with 2 and 5 times each when `hi / lo` is at most
/// 1000 (so a narrow range still has several labels).
pub fn log_keys(lo: f64, hi: f64) -> Vec<f64> {
    let first = lo.log10().floor() as i32;
    let last = hi.log10().ceil() as i32;
    let steps: &[f64] = if hi / lo <= 1000.0 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    (first..=last)
        .flat_map(|e| steps.iter().map(move |m| m * 10f64.powi(e)))
        .filter(|v| *v >= lo && *v <= hi)
        .collect()
}

/// Compact throughput text: `950`, `12.3k`, `1.25M`.
pub fn short_rps(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Milliseconds with at most three decimals and no trailing zeros: `0.3`,
/// `12`, `0.025`.
pub fn short_ms(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn first_seen<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for s in items {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// A result's latency curve: its `percentiles`, or else points made from
/// its `latency_ms` summary (`min` at 0, then p50 ... p99.9).
fn result_percentiles(r: &Value) -> Vec<(f64, f64)> {
    if let Some(list) = r.get("percentiles").and_then(Value::as_array) {
        return list
            .iter()
            .filter_map(|p| Some((num(p.get(0)?)?, num(p.get(1)?)?)))
            .collect();
    }
    let Some(l) = r.get("latency_ms") else {
        return Vec::new();
    };
    [
        ("min", 0.0),
        ("p50", 50.0),
        ("p90", 90.0),
        ("p95", 95.0),
        ("p99", 99.0),
        ("p99.9", 99.9),
    ]
    .iter()
    .filter_map(|(k, p)| Some((*p, num(l.get(*k)?)?)))
    .collect()
}

impl Report {
    /// Workload labels in first-seen order.
    pub fn workloads(&self) -> Vec<&str> {
        first_seen(self.measurements.iter().map(|m| m.workload.as_str()))
    }

    /// Server names in first-seen order (this order picks the colours).
    pub fn servers(&self) -> Vec<&str> {
        first_seen(self.measurements.iter().map(|m| m.server.as_str()))
    }

    /// Adds the results of one `--json-out-file` (or `bench/compare`)
    /// document. A result's workload is its `workload` field, or else its
    /// `test` and the document's `config.pipeline` (`SET P16`); its server
    /// is `target`. The document's `description`, or else a summary of its
    /// `config`, joins the subtitle. Errors when `results` is missing or an
    /// entry has no `rps` or no test name.
    pub fn add_json(&mut self, doc: &Value) -> anyhow::Result<()> {
        let results = doc
            .get("results")
            .and_then(Value::as_array)
            .ok_or_else(|| anyhow!("no \"results\" list"))?;
        let config = doc.get("config").cloned().unwrap_or(Value::Null);
        let pipeline = config.get("pipeline").and_then(Value::as_u64);
        for (i, r) in results.iter().enumerate() {
            let workload = match (r.get("workload").and_then(Value::as_str), r.get("test")) {
                (Some(w), _) => w.to_string(),
                (None, Some(Value::String(t))) => match pipeline {
                    Some(p) => format!("{t} P{p}"),
                    None => t.clone(),
                },
                _ => bail!("result {i} has neither \"workload\" nor \"test\""),
            };
            let server = r
                .get("target")
                .and_then(Value::as_str)
                .unwrap_or("server")
                .to_string();
            let rps = r
                .get("rps")
                .and_then(num)
                .ok_or_else(|| anyhow!("result {i} has no \"rps\""))?;
            self.measurements.push(Measurement {
                workload,
                server,
                rps,
                percentiles: result_percentiles(r),
            });
        }
        let line = match doc.get("description").and_then(Value::as_str) {
            Some(d) => d.to_string(),
            None => config_summary(&config),
        };
        if !line.is_empty() && !self.subtitle.split("; ").any(|s| s == line) {
            if !self.subtitle.is_empty() {
                self.subtitle.push_str("; ");
            }
            self.subtitle.push_str(&line);
        }
        Ok(())
    }

    /// The bars of the throughput chart: for each workload, one bar per
    /// server that has a measurement of it (the first one when there are
    /// several), side by side in server order, together [`GROUP_WIDTH`]
    /// wide and centred in the workload's slot.
    pub fn bars(&self) -> Vec<Bar> {
        let workloads = self.workloads();
        let servers = self.servers();
        let width = GROUP_WIDTH / servers.len().max(1) as f64;
        let mut out = Vec::new();
        for (wi, w) in workloads.iter().enumerate() {
            for (si, s) in servers.iter().enumerate() {
                let Some(m) = self
                    .measurements
                    .iter()
                    .find(|m| m.workload == *w && m.server == *s)
                else {
                    continue;
                };
                let x0 = wi as f64 + (1.0 - GROUP_WIDTH) / 2.0 + si as f64 * width;
                out.push(Bar {
                    workload: wi,
                    server: si,
                    x0,
                    x1: x0 + width,
                    rps: m.rps,
                });
            }
        }
        out
    }

    /// The picture's sizes for this report: 1000 px wide (wider with many
    /// bars, up to 2400), the throughput chart on top and the latency
    /// charts two to a row under it.
    pub fn page_layout(&self) -> PageLayout {
        let w = self.workloads().len() as u32;
        let s = self.servers().len() as u32;
        let width = (120 + w * (s * 24 + 24)).clamp(1000, 2400);
        let cols = if w <= 1 { 1 } else { 2 };
        let rows = w.div_ceil(cols).max(1);
        let header = if self.subtitle.is_empty() { 70 } else { 90 };
        let widest = self.workloads().iter().map(|n| label_width(n)).max();
        let slot = (width - 120) / w.max(1);
        let vertical_labels = widest.is_some_and(|l| l > slot);
        let label_band = if vertical_labels {
            widest.unwrap_or(0) + 10
        } else {
            36
        };
        let bars = 344 + label_band;
        PageLayout {
            width,
            height: header + bars + rows * 320,
            header,
            bars,
            grid: (rows, cols),
            vertical_labels,
            label_band,
        }
    }

    /// Draws the report as an SVG document. Errors when there is nothing
    /// to draw or plotters fails.
    pub fn to_svg(&self) -> anyhow::Result<String> {
        if self.measurements.is_empty() {
            bail!("no results to draw");
        }
        let layout = self.page_layout();
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (layout.width, layout.height))
                .into_drawing_area();
            root.fill(&WHITE).map_err(plot_err)?;
            let (head, rest) = root.split_vertically(layout.header);
            let (bars, curves) = rest.split_vertically(layout.bars);
            self.draw_header(&head)?;
            self.draw_bars(&bars, &layout)?;
            let cells = curves.split_evenly((layout.grid.0 as usize, layout.grid.1 as usize));
            for (wi, cell) in self.workloads().iter().zip(cells.iter()) {
                self.draw_curves(cell, wi)?;
            }
            root.present().map_err(plot_err)?;
        }
        Ok(svg)
    }

    /// Writes [`Report::to_svg`] to `path`.
    pub fn write_svg(&self, path: &str) -> anyhow::Result<()> {
        let svg = self.to_svg()?;
        std::fs::write(path, svg).with_context(|| format!("writing report {path}"))
    }

    fn draw_header(&self, area: &DrawingArea<SVGBackend, Shift>) -> anyhow::Result<()> {
        let title = if self.title.is_empty() {
            "ferrokv-benchmark"
        } else {
            &self.title
        };
        let left = Pos::new(HPos::Left, VPos::Top);
        area.draw(&Text::new(
            title.to_string(),
            (20, 12),
            TextStyle::from(("sans-serif", 26).into_font().style(FontStyle::Bold)).pos(left),
        ))
        .map_err(plot_err)?;
        let mut y = 42;
        if !self.subtitle.is_empty() {
            area.draw(&Text::new(
                self.subtitle.clone(),
                (20, y),
                ("sans-serif", 16)
                    .into_font()
                    .color(&BLACK.mix(0.7))
                    .pos(left),
            ))
            .map_err(plot_err)?;
            y += 22;
        }
        // Legend: a dot in the server's colour and its name.
        let mut x = 26;
        for (i, s) in self.servers().iter().enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            area.draw(&Circle::new((x, y + 8), 6, c.filled()))
                .map_err(plot_err)?;
            area.draw(&Text::new(
                s.to_string(),
                (x + 12, y + 1),
                TextStyle::from(("sans-serif", 18).into_font()).pos(left),
            ))
            .map_err(plot_err)?;
            x += 40 + 10 * s.chars().count() as i32;
        }
        Ok(())
    }

    fn draw_bars(
        &self,
        area: &DrawingArea<SVGBackend, Shift>,
        layout: &PageLayout,
    ) -> anyhow::Result<()> {
        let workloads = self.workloads();
        let bars = self.bars();
        let top = bars.iter().map(|b| b.rps).fold(0.0, f64::max).max(1.0) * 1.12;
        let n = workloads.len() as i64;
        // x in thousandths of a workload slot (plotters' integer axes take
        // custom key points with label formatters; its f64 axes do not).
        let milli = |x: f64| (x * 1000.0).round() as i64;
        let centres: Vec<i64> = (0..n).map(|i| i * 1000 + 500).collect();
        let mut chart = ChartBuilder::on(area)
            .caption(
                "Throughput (requests per second, higher is better)",
                ("sans-serif", 19),
            )
            .margin(12)
            .margin_right(30)
            .x_label_area_size(layout.label_band)
            .y_label_area_size(70)
            .build_cartesian_2d((0..n * 1000).with_key_points(centres), 0.0..top)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_label_formatter(&|x| {
                // Turned names are drawn below, plotters centres its own.
                let i = (*x / 1000).max(0) as usize;
                match workloads.get(i) {
                    Some(w) if !layout.vertical_labels => w.to_string(),
                    _ => String::new(),
                }
            })
            .y_label_formatter(&|y| short_rps(*y))
            .x_label_style(("sans-serif", 17))
            .y_label_style(("sans-serif", 14))
            .draw()
            .map_err(plot_err)?;
        if layout.vertical_labels {
            // Reading upwards, ending just under the axis.
            let style = TextStyle::from(("sans-serif", 15).into_font())
                .transform(FontTransform::Rotate270)
                .pos(Pos::new(HPos::Right, VPos::Center));
            chart
                .draw_series(workloads.iter().enumerate().map(|(i, w)| {
                    EmptyElement::at((i as i64 * 1000 + 500, 0.0))
                        + Text::new(w.to_string(), (0, 8), style.clone())
                }))
                .map_err(plot_err)?;
        }
        chart
            .draw_series(bars.iter().map(|b| {
                Rectangle::new(
                    [(milli(b.x0), 0.0), (milli(b.x1), b.rps)],
                    PALETTE[b.server % PALETTE.len()].filled(),
                )
            }))
            .map_err(plot_err)?;
        let label = TextStyle::from(("sans-serif", 13).into_font())
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        chart
            .draw_series(bars.iter().map(|b| {
                Text::new(
                    short_rps(b.rps),
                    (milli((b.x0 + b.x1) / 2.0), b.rps + top * 0.005),
                    label.clone(),
                )
            }))
            .map_err(plot_err)?;
        Ok(())
    }

    fn draw_curves(
        &self,
        area: &DrawingArea<SVGBackend, Shift>,
        workload: &str,
    ) -> anyhow::Result<()> {
        let servers = self.servers();
        let curves: Vec<(usize, Vec<(f64, f64)>)> = servers
            .iter()
            .enumerate()
            .filter_map(|(si, s)| {
                let m = self
                    .measurements
                    .iter()
                    .find(|m| m.workload == workload && m.server == *s)?;
                let pts: Vec<(f64, f64)> = m
                    .percentiles
                    .iter()
                    .filter_map(|&(p, ms)| Some((hdr_x(p)?, ms.max(0.001))))
                    .collect();
                (!pts.is_empty()).then_some((si, pts))
            })
            .collect();
        let all = curves.iter().flat_map(|(_, p)| p.iter());
        let (mut x_max, mut y_min, mut y_max) = (10.0f64, f64::MAX, 0.0f64);
        for &(x, y) in all {
            x_max = x_max.max(x);
            y_min = y_min.min(y);
            y_max = y_max.max(y);
        }
        let x_max = 10f64.powf(x_max.log10().ceil());
        let (y_min, y_max) = if y_max > 0.0 {
            (y_min * 0.8, y_max * 1.25)
        } else {
            (0.001, 1.0)
        };
        let x_keys = percentile_keys(x_max);
        let y_keys = log_keys(y_min, y_max);
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("{workload}: latency by percentile (ms, lower is better)"),
                ("sans-serif", 17),
            )
            .margin(12)
            .margin_right(40)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(
                (1.0..x_max).log_scale().with_key_points(x_keys),
                (y_min..y_max).log_scale().with_key_points(y_keys),
            )
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|x| percentile_label(*x))
            .y_label_formatter(&|y| short_ms(*y))
            .label_style(("sans-serif", 13))
            .x_desc("percentile")
            .y_desc("ms")
            .draw()
            .map_err(plot_err)?;
        for (si, pts) in curves {
            let c = PALETTE[si % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                .map_err(plot_err)?;
        }
        Ok(())
    }
}

/// A one-line summary of a `--json-out-file` `config`: clients, threads,
/// value size, the length of each run and the keyspace (the pipeline depth
/// is in each workload's label instead).
pub fn config_summary(config: &Value) -> String {
    let mut parts = Vec::new();
    let get = |k: &str| config.get(k).filter(|v| !v.is_null());
    if let Some(v) = get("clients") {
        parts.push(format!("{v} clients"));
    }
    if let Some(v) = get("threads") {
        parts.push(format!("threads {v}"));
    }
    if let Some(v) = get("datasize") {
        parts.push(format!("{v}-byte values"));
    }
    if let Some(v) = get("test_time") {
        parts.push(format!("{v} s per run"));
    } else if let Some(v) = get("requests") {
        parts.push(format!("{v} requests per run"));
    }
    if let Some(k) = get("keyspace")
        .and_then(|k| k.get("max"))
        .and_then(Value::as_u64)
    {
        parts.push(format!("{} keys", k + 1));
    }
    parts.join(", ")
}

fn plot_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing the report: {e:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(workload: &str, server: &str, rps: f64) -> Measurement {
        Measurement {
            workload: workload.into(),
            server: server.into(),
            rps,
            percentiles: vec![(0.0, 0.1), (50.0, 0.2), (99.0, 0.5), (99.9, 2.0)],
        }
    }

    fn fixed() -> Report {
        Report {
            title: "t".into(),
            subtitle: String::new(),
            measurements: vec![
                m("SET P1", "ferrokv", 100.0),
                m("SET P1", "redis", 80.0),
                m("GET P1", "ferrokv", 120.0),
                m("GET P1", "redis", 90.0),
                // A server seen first in the second workload only.
                m("GET P1", "valkey", 95.0),
            ],
        }
    }

    #[test]
    fn bars_are_grouped_by_workload_in_server_order() {
        let r = fixed();
        assert_eq!(r.workloads(), vec!["SET P1", "GET P1"]);
        assert_eq!(r.servers(), vec!["ferrokv", "redis", "valkey"]);
        let bars = r.bars();
        let w = GROUP_WIDTH / 3.0;
        let expect = [
            (0, 0, 0.1, 100.0),
            (0, 1, 0.1 + w, 80.0),
            (1, 0, 1.1, 120.0),
            (1, 1, 1.1 + w, 90.0),
            (1, 2, 1.1 + 2.0 * w, 95.0),
        ];
        assert_eq!(bars.len(), expect.len());
        for (b, (wi, si, x0, rps)) in bars.iter().zip(expect) {
            assert_eq!((b.workload, b.server, b.rps), (wi, si, rps));
            assert!((b.x0 - x0).abs() < 1e-9, "{b:?}");
            assert!((b.x1 - b.x0 - w).abs() < 1e-9, "{b:?}");
        }
        // Groups are centred in their slots and never overlap.
        assert!((bars[1].x1 - 0.5 - (0.5 - bars[0].x0) + w).abs() < 1e-9);
        for pair in bars.windows(2) {
            assert!(pair[0].x1 <= pair[1].x0 + 1e-9);
        }
        let l = r.page_layout();
        assert_eq!(l.grid, (1, 2));
        assert_eq!((l.width, l.header, l.bars), (1000, 70, 380));
        assert_eq!(l.height, 70 + 380 + 320);
        assert!(!l.vertical_labels);
        // Many workloads with long names: wider, names turned upwards in
        // a band as tall as the longest name.
        let mut many = Report::default();
        for i in 0..60 {
            many.measurements
                .push(m(&format!("LPUSH collections P{i}"), "a", 1.0));
        }
        let l = many.page_layout();
        // 120 + 60 * (24 + 24) px asked for, at most 2400.
        assert_eq!(l.width, 2400);
        assert!(l.vertical_labels);
        assert_eq!(l.label_band, 9 * 21 + 8 + 10);
        assert_eq!(l.bars, 344 + l.label_band);
        assert_eq!(l.grid, (30, 2));
        let mut one = r.clone();
        one.measurements.retain(|m| m.workload == "SET P1");
        assert_eq!(one.page_layout().grid, (1, 1));
    }

    #[test]
    fn hdr_axis() {
        assert_eq!(hdr_x(0.0), Some(1.0));
        assert!((hdr_x(90.0).unwrap() - 10.0).abs() < 1e-9);
        assert!((hdr_x(99.9).unwrap() - 1000.0).abs() < 1e-6);
        assert_eq!(hdr_x(100.0), None);
        assert_eq!(percentile_label(1.0), "0%");
        assert_eq!(percentile_label(2.0), "50%");
        assert_eq!(percentile_label(10.0), "90%");
        assert_eq!(percentile_label(1000.0), "99.9%");
        assert_eq!(percentile_label(100000.0), "99.999%");
        assert_eq!(percentile_keys(1000.0), vec![1.0, 2.0, 10.0, 100.0, 1000.0]);
        assert_eq!(percentile_keys(1e6).len(), 7);
        assert_eq!(log_keys(0.08, 0.6), vec![0.1, 0.2, 0.5]);
        assert_eq!(log_keys(0.088, 7.6), vec![0.1, 0.2, 0.5, 1.0, 2.0, 5.0]);
        assert_eq!(log_keys(0.05, 120.0), vec![0.1, 1.0, 10.0, 100.0]);
        assert_eq!(short_ms(0.30000000000000004), "0.3");
        assert_eq!(short_ms(12.0), "12");
        assert_eq!(short_ms(0.025), "0.025");
        assert_eq!(short_rps(950.0), "950");
        assert_eq!(short_rps(1234.0), "1.2k");
        assert_eq!(short_rps(123456.0), "123k");
        assert_eq!(short_rps(1_250_000.0), "1.25M");
    }

    #[test]
    fn histogram_curve_ends_at_the_maximum() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in 1..=1000u64 {
            h.record(v).unwrap();
        }
        let pts = histogram_percentiles(&h);
        assert_eq!(pts[0], (0.0, 0.001));
        let (p, ms) = *pts.last().unwrap();
        assert!(
            (p - 99.9).abs() < 1e-9 && (ms - 1.0).abs() < 0.01,
            "{p} {ms}"
        );
        // Ten points per decade of 1/(1-p) below 1000, then the maximum.
        assert_eq!(pts.len(), 31);
        assert!(pts.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    }

    #[test]
    fn reads_json_documents_and_draws_every_bar() {
        let doc = serde_json::json!({
            "config": {"clients": 4, "threads": 1, "pipeline": 16, "datasize": 3, "test_time": 1.0},
            "results": [
                {"test": "SET", "target": "a", "rps": 10.0, "percentiles": [[0.0, 0.1], [90.0, 0.3]]},
                {"test": "SET", "target": "b", "rps": 20.0,
                 "latency_ms": {"min": 0.1, "p50": 0.2, "p99": 0.4}},
            ],
        });
        let mut r = Report::default();
        r.add_json(&doc).unwrap();
        r.add_json(&doc).unwrap();
        assert_eq!(r.workloads(), vec!["SET P16"]);
        assert_eq!(
            r.measurements[1].percentiles,
            vec![(0.0, 0.1), (50.0, 0.2), (99.0, 0.4)]
        );
        assert_eq!(
            r.subtitle,
            "4 clients, threads 1, 3-byte values, 1.0 s per run"
        );
        let svg = r.to_svg().unwrap();
        // plotters writes one element per line, the text on its own line.
        let lines: Vec<&str> = svg.lines().map(str::trim).collect();
        let count = |tag: &str, attr: &str, color: &str| {
            let want = format!("{attr}=\"{color}\"");
            let tag = format!("<{tag} ");
            lines
                .iter()
                .filter(|l| l.starts_with(&tag) && l.contains(&want))
                .count()
        };
        for (i, name) in ["a", "b"].iter().enumerate() {
            // One bar (the legend is a circle), and one curve.
            let c = server_color(i);
            assert_eq!(count("rect", "fill", &c), 1, "{name}");
            assert_eq!(count("circle", "fill", &c), 1, "{name}");
            assert_eq!(count("polyline", "stroke", &c), 1, "{name}");
            assert!(lines.contains(name), "{name}");
        }
        let texts = &lines;
        assert!(texts.contains(&"SET P16"), "{texts:?}");
        assert!(texts.contains(&"99%"), "{texts:?}");
        assert!(texts.contains(&"0.2"), "{texts:?}");
        assert!(Report::default().to_svg().is_err());
        assert!(r.add_json(&serde_json::json!({})).is_err());
    }
}
