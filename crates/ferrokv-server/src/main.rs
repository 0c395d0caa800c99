//! `ferrokv-server [config-file] [--directive value ...]`: starts ferrokv the
//! way `redis-server` is started. Everything else lives in the `ferrokv`
//! library.

use ferrokv::config::Config;

#[global_allocator]
static GLOBAL: ferrokv::memory::Counting<mimalloc::MiMalloc> =
    ferrokv::memory::Counting(mimalloc::MiMalloc);

fn usage() {
    eprintln!(
        "Usage: ./ferrokv-server [/path/to/redis.conf] [options] [-]\n       \
         ./ferrokv-server - (read config from stdin)\n       \
         ./ferrokv-server -v or --version\n       \
         ./ferrokv-server -h or --help\n\n\
         Examples:\n       \
         ./ferrokv-server (run the server with default conf)\n       \
         ./ferrokv-server /etc/redis/6379.conf\n       \
         ./ferrokv-server --port 7777\n       \
         ./ferrokv-server /etc/myredis.conf --loglevel verbose -\n       \
         ./ferrokv-server --io-threads 4 --unixsocket /tmp/ferrokv.sock"
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("-h") | Some("--help") => {
            usage();
            return;
        }
        Some("-v") | Some("--version") => {
            println!(
                "ferrokv-server v={} (Redis {} compatible) bits=64",
                ferrokv::VERSION,
                ferrokv::REDIS_VERSION
            );
            return;
        }
        _ => {}
    }
    // The command table first: `user` lines are checked against it.
    ferrokv::cmd::init();
    let config = match Config::from_args(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    init_logging(&config);
    // The cron hands memory freed by large values and buffers back to the
    // system once a second (mimalloc otherwise purges only when the
    // allocator next runs on that heap, so an idle server kept its peak).
    ferrokv::memory::set_release_hook(release_free_memory);
    ferrokv::memory::set_allocator_hooks(ferrokv::memory::AllocatorHooks {
        purge: purge_free_memory,
        stats: allocator_stats,
    });
    if let Err(e) = ferrokv::run(config) {
        tracing::error!("{e}");
        eprintln!("ferrokv-server: {e}");
        std::process::exit(1);
    }
}

/// Returns freed memory to the operating system (mimalloc's collection of
/// expired arena purges; `force = false` keeps it cheap).
fn release_free_memory() {
    // SAFETY: mi_collect only walks the allocator's own structures.
    unsafe { libmimalloc_sys::mi_collect(false) }
}

/// MEMORY PURGE: mimalloc's forced collection (every heap's freed pages
/// returned to the system now, not after the purge delay).
fn purge_free_memory() {
    // SAFETY: mi_collect only walks the allocator's own structures.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// MEMORY MALLOC-STATS: mimalloc's own statistics report
/// (`mi_stats_print_out`), collected into a string.
fn allocator_stats() -> String {
    unsafe extern "C" fn append(msg: *const std::ffi::c_char, arg: *mut std::ffi::c_void) {
        // SAFETY: `arg` is the &mut String passed below, alive for the
        // duration of mi_stats_print_out; `msg` is a NUL-terminated string
        // from mimalloc.
        let out = unsafe { &mut *(arg as *mut String) };
        let s = unsafe { std::ffi::CStr::from_ptr(msg) };
        out.push_str(&s.to_string_lossy());
    }
    let mut out = String::new();
    // SAFETY: the callback only appends to `out`, which outlives the call.
    unsafe {
        libmimalloc_sys::mi_stats_print_out(
            Some(append),
            &mut out as *mut String as *mut std::ffi::c_void,
        )
    };
    out
}

/// Starts the log as Redis's `serverLog` writes it: Redis's line format
/// (`ferrokv::log::RedisFormat`), to standard output when `logfile` is
/// empty (Redis's default) or appended to `logfile`; `loglevel` debug,
/// verbose, notice and warning map to tracing's DEBUG, INFO, INFO and WARN
/// (`RUST_LOG` overrides it). Exits with status 1 when the file cannot be
/// opened, as Redis does.
fn init_logging(config: &Config) {
    let level = match config.get("loglevel") {
        "debug" => "debug",
        "verbose" => "info",
        "notice" => "info",
        "warning" => "warn",
        _ => "off",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let logfile = config.get("logfile");
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .event_format(ferrokv::log::RedisFormat);
    if logfile.is_empty() {
        fmt.with_writer(std::io::stdout).init();
    } else {
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(logfile)
        {
            Ok(f) => fmt.with_writer(std::sync::Mutex::new(f)).init(),
            Err(e) => {
                eprintln!("Can't open the log file: {e}");
                std::process::exit(1);
            }
        }
    }
    tracing::info!(
        "ferrokv {} (Redis {} compatible), bits=64, pid={}, just started",
        ferrokv::VERSION,
        ferrokv::REDIS_VERSION,
        std::process::id()
    );
}
