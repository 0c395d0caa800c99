//! Allocator accounting: `used_memory` as Redis's `zmalloc_used_memory`
//! reports it, the bytes currently allocated by the process.
//!
//! The binary wraps its global allocator in [`Counting`]; every allocation
//! adds its size to a per-thread slot and every free subtracts it (from the
//! freeing thread's slot, so a slot may go negative; the sum is exact).
//! A thread owns its slot, so the update is a plain load and store on a
//! cache line no other thread writes: no atomic read-modify-write and no
//! shared line on the allocation path. Threads beyond [`SLOTS`]` - 1`
//! share the last slot with atomic adds. [`used`] sums the slots.
//!
//! Without the wrapper (the library's own unit tests) [`used`] is 0 and
//! callers fall back to the resident set size.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

static RELEASE_HOOK: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// True when transparent huge pages are allowed for this process
/// (`disable-thp no`); a process-wide kernel setting, so a static.
static THP_ALLOWED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records whether transparent huge pages are allowed for the process
/// (set once at start-up from `disable-thp`).
pub fn set_thp_allowed(on: bool) {
    THP_ALLOWED.store(on, Ordering::Relaxed);
}

/// True when transparent huge pages are allowed for the process: then
/// the first byte written to a fresh large allocation makes a whole 2 MiB
/// page resident, so buffers filled slowly by clients grow with the bytes
/// received instead of being reserved in full (resp/parse.rs).
pub fn thp_allowed() -> bool {
    THP_ALLOWED.load(Ordering::Relaxed)
}

/// Installs the allocator's "give freed memory back to the system" call
/// (the binary installs mimalloc's `mi_collect`); [`release_free_memory`]
/// calls it. Only the first call has an effect.
pub fn set_release_hook(f: fn()) {
    let _ = RELEASE_HOOK.set(f);
}

/// Asks the allocator to return freed memory to the operating system (the
/// cron calls it once a second), so RSS follows `used_memory` down after
/// a large value or buffer is freed, as jemalloc's background purge does
/// for Redis. Nothing happens without a hook.
pub fn release_free_memory() {
    if let Some(f) = RELEASE_HOOK.get() {
        f();
    }
}

/// What the process's allocator can report and do beyond the counting
/// done here, installed once by the binary ([`set_allocator_hooks`]; the
/// server installs mimalloc's). MEMORY MALLOC-STATS, MEMORY PURGE and the
/// `allocator.*` fields of MEMORY STATS use them; without hooks they fall
/// back to Redis's answers for an allocator without statistics.
#[derive(Debug, Clone, Copy)]
pub struct AllocatorHooks {
    /// Returns every freed page the allocator can give back to the
    /// operating system, at once (MEMORY PURGE; Redis purges jemalloc's
    /// arenas).
    pub purge: fn(),
    /// A human-readable statistics report of the allocator (MEMORY
    /// MALLOC-STATS; Redis prints jemalloc's `malloc_stats_print`).
    pub stats: fn() -> String,
}

static HOOKS: std::sync::OnceLock<AllocatorHooks> = std::sync::OnceLock::new();

/// Installs the allocator's hooks (see [`AllocatorHooks`]); only the first
/// call has an effect.
pub fn set_allocator_hooks(h: AllocatorHooks) {
    let _ = HOOKS.set(h);
}

/// The installed allocator hooks, if any.
pub fn allocator_hooks() -> Option<&'static AllocatorHooks> {
    HOOKS.get()
}

/// Number of counter slots.
pub const SLOTS: usize = 64;

#[repr(align(64))]
struct Slot(AtomicI64);

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: Slot = Slot(AtomicI64::new(0));
static COUNTS: [Slot; SLOTS] = [ZERO; SLOTS];
static NEXT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // usize::MAX: not assigned yet. No destructor, so usable inside the
    // allocator.
    static MY_SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

#[inline]
fn add(delta: i64) {
    let slot = MY_SLOT
        .try_with(|s| {
            let mut i = s.get();
            if i == usize::MAX {
                i = NEXT.fetch_add(1, Ordering::Relaxed).min(SLOTS - 1);
                s.set(i);
            }
            i
        })
        .unwrap_or(SLOTS - 1);
    let c = &COUNTS[slot].0;
    if slot < SLOTS - 1 {
        // Owned by this thread alone: load + store is exact.
        c.store(c.load(Ordering::Relaxed) + delta, Ordering::Relaxed);
    } else {
        c.fetch_add(delta, Ordering::Relaxed);
    }
}

/// A global allocator wrapper that counts allocated bytes (requested
/// sizes). Install in the binary:
/// `#[global_allocator] static A: Counting<mimalloc::MiMalloc> = Counting(mimalloc::MiMalloc);`
pub struct Counting<A>(pub A);

// SAFETY: every call is forwarded unchanged to the wrapped allocator; the
// wrapper only updates counters.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = self.0.alloc(layout);
        if !p.is_null() {
            add(layout.size() as i64);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = self.0.alloc_zeroed(layout);
        if !p.is_null() {
            add(layout.size() as i64);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.0.dealloc(ptr, layout);
        add(-(layout.size() as i64));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = self.0.realloc(ptr, layout, new_size);
        if !p.is_null() {
            add(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

/// Bytes currently allocated through [`Counting`] (0 when it is not the
/// global allocator).
pub fn used() -> u64 {
    // Only the slots handed out so far can be non-zero.
    let n = NEXT.load(Ordering::Relaxed).min(SLOTS);
    let mut sum = 0i64;
    for s in COUNTS[..n].iter() {
        sum += s.0.load(Ordering::Relaxed);
    }
    sum.max(0) as u64
}

/// True when the allocator is counted (some allocation was seen).
pub fn counted() -> bool {
    NEXT.load(Ordering::Relaxed) > 0
}

/// Resident bytes of this process's anonymous memory (/proc/self/smaps:
/// mappings without a file, the heap and stacks included): the pages the
/// allocators hold, as opposed to the program's code and libraries. None
/// when smaps cannot be read. Reads one line per mapping: for MEMORY STATS
/// and MEMORY DOCTOR, not for hot paths.
pub fn anon_rss_bytes() -> Option<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut anon = false;
    let mut kb = 0u64;
    for line in smaps.lines() {
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        if first.contains('-') && first.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
            // "start-end perms offset dev inode [path]"
            let path = line.split_whitespace().nth(5);
            anon = match path {
                None => true,
                Some(p) => {
                    p.starts_with("[heap") || p.starts_with("[stack") || p.starts_with("[anon")
                }
            };
        } else if first == "Rss:" && anon {
            kb += words
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    Some(kb * 1024)
}

/// Resident set size of this process in bytes (/proc/self/statm).
pub fn rss_bytes() -> u64 {
    let page = {
        // SAFETY: sysconf has no memory effects.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if p > 0 {
            p as u64
        } else {
            4096
        }
    };
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map(|pages| pages * page)
        .unwrap_or(0)
}

/// Bytes of the replication stream buffer held beyond `repl-backlog-size`
/// for replicas that have not read them yet (set by the backlog, repl/).
static REPL_NOT_COUNTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The replicas' share of the stream buffer, which maxmemory does not
/// count (Redis 7.0's freeMemoryGetNotCountedMemory: the part of the
/// shared replication buffer exceeding the backlog size), so a slow
/// replica does not make the master evict its whole dataset or refuse
/// writes with -OOM. Bytes.
pub fn repl_not_counted() -> u64 {
    REPL_NOT_COUNTED.load(Ordering::Relaxed)
}

/// Records [`repl_not_counted`] (the replication backlog, after each
/// append or trim).
pub fn set_repl_not_counted(bytes: u64) {
    REPL_NOT_COUNTED.store(bytes, Ordering::Relaxed);
}
