//! The server log in Redis's format (server.c `serverLogRaw`):
//! `<pid>:<role> <dd Mon yyyy HH:MM:SS.mmm> <level> <message>`, e.g.
//! `4242:M 05 Dec 2026 20:33:42.440 * Ready to accept connections`.
//!
//! The role is `M` for a master and `S` for a replica (Redis also has `C`
//! for a forked child and `X` for Sentinel, which ferrokv does not have);
//! the level is `.` debug, `-` verbose, `*` notice and `#` warning, mapped
//! from tracing's levels (TRACE, DEBUG, INFO, WARN/ERROR). Events with the
//! target [`RAW_TARGET`] are written as they are, without the prefix (Redis's
//! `LL_RAW`, used for the start-up banner). Fields other than the message
//! follow it as ` name=value`. Tools and test harnesses that read Redis's
//! log (Redis's own test suite waits for ` PID: <pid>` and `Ready to accept
//! connections` in it) therefore read ferrokv's the same way.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};

use tracing::field::{Field, Visit};
use tracing_subscriber::fmt::{format::Writer, FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Target of events written without the log prefix (Redis's `LL_RAW`).
pub const RAW_TARGET: &str = "ferrokv::raw";

/// The role character of log lines: `b'M'` or `b'S'`.
static ROLE: AtomicU8 = AtomicU8::new(b'M');

/// Records whether the server is a replica, for the role character of
/// later log lines (Redis's `server.masterhost ? 'S' : 'M'`).
pub fn set_replica(replica: bool) {
    ROLE.store(if replica { b'S' } else { b'M' }, Ordering::Relaxed);
}

/// Redis's level character for a tracing level.
fn level_char(level: &tracing::Level) -> char {
    match *level {
        tracing::Level::TRACE => '.',
        tracing::Level::DEBUG => '-',
        tracing::Level::INFO => '*',
        _ => '#',
    }
}

/// Formats events as Redis's log lines (see the module documentation).
pub struct RedisFormat;

/// Collects an event's message and its other fields.
#[derive(Default)]
struct Fields {
    message: String,
    rest: String,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.rest, " {}={}", field.name(), value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.rest, " {}={:?}", field.name(), value);
        }
    }
}

/// `dd Mon yyyy HH:MM:SS.mmm` of the local time now (Redis's
/// `strftime("%d %b %Y %H:%M:%S.")` plus milliseconds).
fn timestamp(out: &mut Writer<'_>) -> std::fmt::Result {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() as libc::time_t;
    // SAFETY: localtime_r writes only into `tm`, which it is given.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe { libc::localtime_r(&secs, &mut tm) };
    write!(
        out,
        "{:02} {} {} {:02}:{:02}:{:02}.{:03}",
        tm.tm_mday,
        MONTHS[tm.tm_mon.clamp(0, 11) as usize],
        tm.tm_year + 1900,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        now.subsec_millis()
    )
}

impl<S, N> FormatEvent<S, N> for RedisFormat
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut out: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let mut f = Fields::default();
        event.record(&mut f);
        let meta = event.metadata();
        if meta.target() == RAW_TARGET {
            return writeln!(out, "{}{}", f.message, f.rest);
        }
        write!(
            out,
            "{}:{} ",
            std::process::id(),
            ROLE.load(Ordering::Relaxed) as char
        )?;
        timestamp(&mut out)?;
        writeln!(out, " {} {}{}", level_char(meta.level()), f.message, f.rest)
    }
}

/// Logs the start-up banner (Redis's `redisAsciiArt`): with
/// `always-show-logo yes` or a terminal on standard output, a block of raw
/// lines naming the version, the mode, the port and the PID (Redis's test
/// suite waits for ` PID: <pid>` in the log); otherwise one line,
/// `Running mode=standalone|cluster, port=N.`, as Redis does.
pub fn banner(show_logo: bool, cluster: bool, port: u16) {
    use std::io::IsTerminal;
    let mode = if cluster { "cluster" } else { "standalone" };
    if !show_logo && !std::io::stdout().is_terminal() {
        tracing::info!("Running mode={mode}, port={port}.");
        return;
    }
    let pid = std::process::id();
    let text = format!(
        "\n    ferrokv {} (Redis {} compatible) 64 bit\n    \
         Running in {mode} mode\n    \
         Port: {port}\n    \
         PID: {pid}\n",
        crate::VERSION,
        crate::REDIS_VERSION
    );
    tracing::info!(target: RAW_TARGET, "{text}");
}
