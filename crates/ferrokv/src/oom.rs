//! `oom-score-adj`: the Linux OOM killer's preference for this process,
//! written to `/proc/self/oom_score_adj` as Redis 7.0's `setOOMScoreAdj`
//! (server.c) does.
//!
//! `oom-score-adj-values` holds three values, for a master, a replica and
//! a background child (ferrokv has no child process: the third value is
//! parsed and reported, never written). With `oom-score-adj yes` or
//! `relative` the value of the process's class is added to the score the
//! process had when ferrokv first took control of it; with `absolute` it
//! is written as is; either is clamped to [-1000, 1000]. Turning the
//! directive back to `no` restores the score ferrokv found. Nothing is
//! written while it is `no`.

use parking_lot::Mutex;

const PATH: &str = "/proc/self/oom_score_adj";

/// The score found before ferrokv first changed it, while it controls it
/// (Redis's `oom_score_adjusted_by_redis` / `oom_score_adj_base`).
static BASE: Mutex<Option<i32>> = Mutex::new(None);

/// Process class index in `oom-score-adj-values`: a master.
pub const MASTER: usize = 0;
/// Process class index in `oom-score-adj-values`: a replica.
pub const REPLICA: usize = 1;

/// Applies `mode` (`no`, `yes`, `relative`, `absolute`) and `values` (the
/// three integers of `oom-score-adj-values`) for process class `class`
/// ([`MASTER`] or [`REPLICA`]). Errors (the file could not be read or
/// written; logged as Redis does, and returned) leave the caller to report
/// "Failed to set current oom_score_adj. Check server logs.".
pub fn apply(mode: &str, values: &str, class: usize) -> std::io::Result<()> {
    let mut base = BASE.lock();
    let val = if mode != "no" {
        let b = match *base {
            Some(b) => b,
            None => {
                let read = std::fs::read_to_string(PATH).inspect_err(|e| {
                    tracing::warn!("Unable to read oom_score_adj: {}", reason(e))
                })?;
                let b = read.trim().parse::<i32>().unwrap_or(0);
                *base = Some(b);
                b
            }
        };
        let v: i32 = values
            .split_whitespace()
            .nth(class)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let v = if mode == "absolute" { v } else { v + b };
        v.clamp(-1000, 1000)
    } else if let Some(b) = base.take() {
        b
    } else {
        return Ok(());
    };
    std::fs::write(PATH, format!("{val}\n"))
        .inspect_err(|e| tracing::warn!("Unable to write oom_score_adj: {}", reason(e)))
}

fn reason(e: &std::io::Error) -> String {
    let t = e.to_string();
    match t.find(" (os error") {
        Some(i) => t[..i].to_string(),
        None => t,
    }
}

/// [`apply`] with the directives of `cfg` and the class of a server that
/// is a replica when `replica`.
pub fn apply_config(cfg: &crate::config::Config, replica: bool) -> std::io::Result<()> {
    apply(
        cfg.get("oom-score-adj"),
        cfg.get("oom-score-adj-values"),
        if replica { REPLICA } else { MASTER },
    )
}

/// The error CONFIG SET reports when [`apply`] failed (Redis's).
pub const SET_FAILED: &str = "Failed to set current oom_score_adj. Check server logs.";
