//! The open-file limit behind `maxclients`, as Redis's
//! `adjustOpenFilesLimit` (server.c): every client is a descriptor, and the
//! server keeps [`RESERVED_FDS`] more for itself (listeners, epoll, the AOF
//! and RDB files, log). At start-up, and when CONFIG SET raises
//! `maxclients`, the soft RLIMIT_NOFILE is raised to `maxclients + 32`
//! where the system allows it; where it does not, `maxclients` is lowered
//! to what the limit can serve, with Redis's log lines, so a client beyond
//! the limit gets `-ERR max number of clients reached` instead of a
//! connection that is accepted by the kernel and never answered.

/// Descriptors kept for the server's own use (CONFIG_MIN_RESERVED_FDS).
pub const RESERVED_FDS: u64 = 32;

/// Step by which Redis lowers the limit it asks for after a refusal.
const STEP: u64 = 16;

/// The current (soft, hard) RLIMIT_NOFILE, or the OS error.
fn get_limit() -> std::io::Result<(u64, u64)> {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((l.rlim_cur, l.rlim_max))
}

/// Sets the soft limit to `soft` (raising the hard limit with it when
/// needed, which only privileged processes may do).
fn set_limit(soft: u64, hard: u64) -> std::io::Result<()> {
    let l = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard.max(soft),
    };
    // SAFETY: setrlimit only reads the struct.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The highest RLIMIT_NOFILE the kernel accepts at all (fs.nr_open).
fn nr_open() -> u64 {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1024 * 1024)
}

/// Outcome of [`adjust`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adjusted {
    /// The limit serves `maxclients` as requested.
    Ok,
    /// The limit serves only this many clients.
    Lowered(u64),
    /// The limit is too low to start (at most [`RESERVED_FDS`]
    /// descriptors): Redis exits.
    TooLow,
}

/// Makes RLIMIT_NOFILE serve `maxclients` clients plus [`RESERVED_FDS`],
/// as Redis's `adjustOpenFilesLimit`: nothing to do when the soft limit is
/// already high enough; otherwise the highest of `maxfiles`, `maxfiles -
/// 16`, `maxfiles - 32`, ... above the current limit that the system
/// accepts is set (computed from the hard limit and fs.nr_open instead of
/// one setrlimit call per step). Logs Redis's lines. When getrlimit fails,
/// 1024 descriptors are assumed.
pub fn adjust(maxclients: u64) -> Adjusted {
    let maxfiles = maxclients + RESERVED_FDS;
    let (old, hard) = match get_limit() {
        Ok(l) => l,
        Err(e) => {
            let clients = 1024 - RESERVED_FDS;
            tracing::warn!(
                "Unable to obtain the current NOFILE limit ({e}), assuming 1024 and setting the max clients configuration accordingly."
            );
            return if clients < maxclients {
                Adjusted::Lowered(clients)
            } else {
                Adjusted::Ok
            };
        }
    };
    if old >= maxfiles {
        return Adjusted::Ok;
    }
    // The candidates Redis tries are maxfiles - 16k; start at the first
    // one the system can accept: the hard limit for an unprivileged
    // process, fs.nr_open for one that may raise its hard limit.
    let ceiling = hard.max(nr_open());
    let mut best = if maxfiles <= ceiling {
        maxfiles
    } else {
        maxfiles - (maxfiles - ceiling).div_ceil(STEP) * STEP
    };
    let mut error = None;
    let mut tries = 0u32;
    while best > old {
        match set_limit(best, hard) {
            Ok(()) => break,
            Err(e) => error = Some(e),
        }
        tries += 1;
        // Past the ceiling the hard limit is what an unprivileged process
        // can reach: jump there instead of stepping a million times.
        best = if tries == 1 && best > hard && hard > old {
            maxfiles - (maxfiles - hard).div_ceil(STEP) * STEP
        } else if best < STEP {
            old
        } else {
            best - STEP
        };
        if tries > 4096 {
            best = old;
        }
    }
    if best <= old {
        best = old;
    }
    if best >= maxfiles {
        tracing::info!(
            "Increased maximum number of open files to {maxfiles} (it was originally set to {old})."
        );
        return Adjusted::Ok;
    }
    if best <= RESERVED_FDS {
        tracing::warn!(
            "Your current 'ulimit -n' of {old} is not enough for the server to start. Please increase your open file limit to at least {maxfiles}. Exiting."
        );
        return Adjusted::TooLow;
    }
    let clients = best - RESERVED_FDS;
    tracing::warn!("You requested maxclients of {maxclients} requiring at least {maxfiles} max file descriptors.");
    let why = error.map_or_else(
        || "Operation not permitted".to_string(),
        |e| os_error_text(&e),
    );
    tracing::warn!("Server can't set maximum open files to {maxfiles} because of OS error: {why}.");
    tracing::warn!(
        "Current maximum open files is {best}. maxclients has been reduced to {clients} to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'."
    );
    Adjusted::Lowered(clients)
}

/// An OS error as C's strerror prints it (without Rust's "(os error N)").
fn os_error_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enough_limit_is_left_alone() {
        let (soft, _) = get_limit().unwrap();
        assert_eq!(
            adjust(soft.saturating_sub(RESERVED_FDS).max(1)),
            Adjusted::Ok
        );
        assert_eq!(get_limit().unwrap().0, soft);
    }
}
