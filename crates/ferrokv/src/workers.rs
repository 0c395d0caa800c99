//! The I/O worker threads of a server and the state of its listeners.
//!
//! [`Workers`]: one current-thread tokio runtime per I/O thread
//! (`io-threads`), each polling for input for a while after a batch
//! ([`spin`]). [`Net`] is the server's part (`Server::net`): the workers
//! once started, the running accept loops (started and moved by
//! net/listener.rs) and the accept-failure log. Below the server and the
//! command layer: it knows nothing of either.

pub mod spin;

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// CONFIG SET's hook for the listeners and TLS: (old, new) configuration
/// -> Ok, or (directive, Redis's reason text). See
/// `net::listener::apply_config_set`.
pub type Reconfigure = dyn Fn(&crate::config::Config, &crate::config::Config) -> Result<(), (&'static str, &'static str)>
    + Send
    + Sync;

#[derive(Debug, Default)]
pub struct AcceptLog {
    /// When the last line was logged, ms since the Unix epoch.
    last_ms: AtomicU64,
    /// Failures not logged since.
    suppressed: AtomicU64,
}

impl AcceptLog {
    /// Logs a failed accept (Redis: "Accepting client connection:
    /// <error>"), at most once a second.
    pub fn failed(&self, e: &std::io::Error) {
        let now = crate::util::now_ms();
        let last = self.last_ms.load(Ordering::Relaxed);
        if now.saturating_sub(last) < 1000
            || self
                .last_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let n = self.suppressed.swap(0, Ordering::Relaxed);
        let e = e.to_string();
        let e = e.split(" (os error").next().unwrap_or_default();
        if n > 0 {
            tracing::warn!(
                "Accepting client connection: {e} ({n} similar errors in the last second not logged)"
            );
        } else {
            tracing::warn!("Accepting client connection: {e}");
        }
    }
}

/// A server's network state: its I/O workers, its listeners and the
/// accept-failure log limit (`Server::net`).
#[derive(Default)]
pub struct Net {
    /// The I/O worker threads, once started ([`Workers::start`]); servers
    /// embedded in tests have none and run connections on the current
    /// runtime.
    pub workers: std::sync::OnceLock<Workers>,
    /// The running accept loops (net/listener.rs).
    pub(crate) listening: parking_lot::Mutex<Option<Listening>>,
    /// Accept failures, logged at most once a second.
    pub(crate) accept_log: AcceptLog,
    /// Applies CONFIG SET changes of the listeners and TLS (installed by
    /// the listeners when they start; none for a server without them).
    pub(crate) reconfigure: std::sync::OnceLock<Box<Reconfigure>>,
}

impl Net {
    /// The runtime of the next worker (round-robin), or the current
    /// runtime when no workers were started.
    pub fn next_worker(&self) -> tokio::runtime::Handle {
        match self.workers.get() {
            Some(w) => w.next(),
            None => tokio::runtime::Handle::current(),
        }
    }

    /// Handles of every I/O worker runtime (empty when none were started):
    /// a task spawned on one runs between two of its batches (AOF barrier).
    pub fn worker_handles(&self) -> Vec<tokio::runtime::Handle> {
        self.workers
            .get()
            .map(|w| w.handles.clone())
            .unwrap_or_default()
    }

    /// Sets how long the workers keep polling for input after a batch
    /// (`io-idle-poll-us`, workers/spin.rs).
    pub fn set_idle_poll_us(&self, us: u64) {
        if let Some(w) = self.workers.get() {
            w.idle_poll_us.store(us, Ordering::Relaxed);
        }
    }
}

/// The I/O worker threads: one current-thread tokio runtime per thread,
/// each owning the connections handed to it (thread per core, no work
/// stealing: a connection's reads, commands and writes stay on one thread,
/// so no request costs a cross-thread wake-up). New connections are dealt
/// round-robin. Each runtime's `block_on` future is the idle poller
/// ([`spin::run`], `io-idle-poll-us`).
pub struct Workers {
    handles: Vec<tokio::runtime::Handle>,
    next: std::sync::atomic::AtomicUsize,
    /// `io-idle-poll-us`, read by every worker's poller.
    idle_poll_us: Arc<AtomicU64>,
    /// Each worker's POSIX thread, whose CPU clock [`Workers::cpu_seconds`]
    /// reads (the workers run for the life of the process).
    threads: Vec<libc::pthread_t>,
}

impl Workers {
    /// Starts `n` I/O worker threads (`io-threads`) polling for input up
    /// to `idle_poll_us` µs after a batch. Errors: a thread or runtime
    /// could not be created.
    pub fn start(n: usize, idle_poll_us: u64) -> std::io::Result<Workers> {
        let poll = Arc::new(AtomicU64::new(idle_poll_us));
        let mut handles = Vec::with_capacity(n.max(1));
        let mut threads = Vec::with_capacity(n.max(1));
        for i in 0..n.max(1) {
            let (tx, rx) = std::sync::mpsc::channel();
            let poll = poll.clone();
            std::thread::Builder::new()
                .name(format!("ferrokv-io-{i}"))
                .spawn(move || {
                    let rt = match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(rt) => rt,
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    };
                    // SAFETY: pthread_self has no preconditions.
                    let me = unsafe { libc::pthread_self() };
                    let _ = tx.send(Ok((rt.handle().clone(), me)));
                    // Tasks of this runtime never move to another thread:
                    // a busy script may suspend (script/yielding.rs).
                    crate::script::yielding::enable();
                    rt.block_on(spin::run(poll));
                })?;
            let (h, t) = rx
                .recv()
                .map_err(|_| std::io::Error::other("I/O worker thread exited"))??;
            handles.push(h);
            threads.push(t);
        }
        Ok(Workers {
            handles,
            next: std::sync::atomic::AtomicUsize::new(0),
            idle_poll_us: poll,
            threads,
        })
    }

    /// The CPU time (user + system) each worker thread has used since it
    /// started, seconds, by worker index (the `ferrokv-io-N` threads), read
    /// from the thread's CPU clock: nothing is counted on the request
    /// path. It includes the idle polling after batches ([`spin`]), which
    /// is CPU the worker spends. None for a thread whose clock cannot be
    /// read.
    pub fn cpu_seconds(&self) -> Vec<Option<f64>> {
        self.threads
            .iter()
            .map(|&t| {
                let mut clock: libc::clockid_t = 0;
                // SAFETY: `t` names a worker thread, which never exits
                // while the process runs; `clock` is a live out-pointer.
                if unsafe { libc::pthread_getcpuclockid(t, &mut clock) } != 0 {
                    return None;
                }
                let mut ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // SAFETY: clock_gettime fills the timespec it is given.
                if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
                    return None;
                }
                Some(ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9)
            })
            .collect()
    }

    /// The runtime of the next worker (round-robin).
    pub fn next(&self) -> tokio::runtime::Handle {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.handles.len();
        self.handles[i].clone()
    }
}

/// One running accept loop and a duplicate of its listening socket, so it
/// can be closed at once from any thread (the loop itself is dropped later,
/// on the main runtime).
pub(crate) struct AcceptLoop {
    pub(crate) task: tokio::task::AbortHandle,
    pub(crate) fd: std::os::fd::OwnedFd,
}

impl AcceptLoop {
    /// Stops accepting now: new connections are refused from this point,
    /// as when Redis closes a listener.
    pub(crate) fn close(self) {
        self.task.abort();
        // SAFETY: shutdown(2) on a descriptor this struct owns (a dup of the
        // listener's), so it cannot name an unrelated socket.
        unsafe {
            libc::shutdown(self.fd.as_raw_fd(), libc::SHUT_RDWR);
        }
    }
}

/// The running TCP and TLS accept loops, so CONFIG SET port / tls-port can
/// replace them (Redis 7.0's changeListenPort).
#[derive(Default)]
pub(crate) struct Listening {
    /// The runtime the accept loops run on (the main one).
    pub(crate) main: Option<tokio::runtime::Handle>,
    /// `bind` addresses and `tcp-backlog`, as at start-up.
    pub(crate) binds: Vec<String>,
    pub(crate) backlog: u32,
    /// Accept loops of the plain port and of the TLS port.
    pub(crate) tcp: Vec<AcceptLoop>,
    pub(crate) tls: Vec<AcceptLoop>,
}

impl Net {
    /// Applies CONFIG SET changes of the listeners and TLS through the hook
    /// the listeners installed (Ok without listeners).
    pub fn reconfigure(
        &self,
        old: &crate::config::Config,
        new: &crate::config::Config,
    ) -> Result<(), (&'static str, &'static str)> {
        match self.reconfigure.get() {
            Some(f) => f(old, new),
            None => Ok(()),
        }
    }
}
