//! Suspending a script that runs past `busy-reply-threshold`, so that the
//! other connections of its I/O thread are answered meanwhile.
//!
//! **Why.** Redis runs one thread: a script past the threshold makes the
//! count hook call `processEventsWhileBlocked` (script.c
//! `scriptInterrupt`), which serves every other client: most commands get
//! `-BUSY`, and SCRIPT KILL, FUNCTION KILL, FUNCTION STATS and SHUTDOWN
//! NOSAVE run. Here each I/O thread owns its connections (one
//! current-thread tokio runtime per thread, workers.rs), so a script that
//! never returns from its task's poll would starve every other connection
//! of its thread: with one I/O thread (the default on two cores) SCRIPT
//! KILL could never arrive.
//!
//! **How.** A request that may run a script executes on a stack of its own
//! (a stackful coroutine, `corosensei`), one per I/O thread and reused. When
//! the busy hook finds the script past the threshold it suspends that
//! stack: the request's `execute` call returns to the connection loop
//! ([`run`] answers [`Outcome::Suspended`]), which yields to the runtime
//! and then [`resume`]s the script where it stopped. Everything the
//! suspended request uses (its connection's state, its reply buffer, the
//! exec gate it holds) stays where it is, on the suspended stack and in the
//! connection's future; the other connections of the thread run in between
//! and find the script busy (server.c `processCommand`). Stack switches
//! cost a few nanoseconds, so requests that never get busy pay almost
//! nothing.
//!
//! Only threads that called [`enable`] (the I/O workers, whose tasks never
//! move between threads) suspend; elsewhere scripts run to the end as
//! before.

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::{Cell, RefCell};
use std::ptr::NonNull;

/// Size of a script stack in bytes (virtual: only the pages touched become
/// resident).
const STACK_SIZE: usize = 8 << 20;

/// A request to run, its lifetime erased (see [`run`]'s contract); None
/// when resuming a suspended one.
type Job = Option<NonNull<dyn FnMut()>>;

/// Why the coroutine handed control back.
enum Event {
    /// The job returned.
    Done,
    /// The job's script suspended itself ([`suspend`]).
    Busy,
}

type Fiber = Coroutine<Job, Event, (), DefaultStack>;

thread_local! {
    static ENABLED: Cell<bool> = const { Cell::new(false) };
    /// The thread's coroutine (None until first used, or after a panic).
    static FIBER: RefCell<Option<Fiber>> = const { RefCell::new(None) };
    /// The coroutine's yielder while a job runs on it.
    static YIELDER: Cell<*const Yielder<Job, Event>> = const { Cell::new(std::ptr::null()) };
    /// A job is on the coroutine (running or suspended).
    static IN_JOB: Cell<bool> = const { Cell::new(false) };
    /// A job is suspended: its connection must resume it before anything
    /// else uses the coroutine.
    static SUSPENDED: Cell<bool> = const { Cell::new(false) };
    /// Set while a suspended job is driven to its end without further
    /// suspensions ([`finish`]).
    static FINISHING: Cell<bool> = const { Cell::new(false) };
}

/// Lets scripts of requests run through [`run`] on this thread suspend
/// (called once by each I/O worker thread).
pub fn enable() {
    ENABLED.with(|e| e.set(true));
}

/// True when [`run`] may be used on this thread (an I/O worker with no job
/// on its coroutine).
#[inline]
pub fn available() -> bool {
    ENABLED.with(Cell::get) && !IN_JOB.with(Cell::get)
}

/// How [`run`] went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The job ran to its end.
    Finished,
    /// The job's script suspended itself: call [`resume`] until it returns
    /// true.
    Suspended,
}

fn new_fiber() -> std::io::Result<Fiber> {
    let stack = DefaultStack::new(STACK_SIZE)?;
    Ok(Coroutine::with_stack(
        stack,
        |y: &Yielder<Job, Event>, mut job: Job| {
            YIELDER.with(|c| c.set(y as *const _));
            loop {
                if let Some(mut f) = job {
                    // SAFETY: `run`'s caller keeps the job alive and unused
                    // until it has finished.
                    unsafe { f.as_mut()() };
                }
                job = y.suspend(Event::Done);
            }
        },
    ))
}

/// Drives the thread's coroutine with `job` until it finishes or
/// suspends.
fn drive(job: Job) -> Outcome {
    let mut fiber = FIBER.with(|f| f.borrow_mut().take());
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            // A panic of the job left the coroutine finished: the next job
            // gets a new one.
            if std::thread::panicking() {
                IN_JOB.with(|c| c.set(false));
                SUSPENDED.with(|c| c.set(false));
                FINISHING.with(|c| c.set(false));
            }
        }
    }
    let reset = Reset;
    let co = fiber.as_mut().expect("fiber present");
    IN_JOB.with(|c| c.set(true));
    SUSPENDED.with(|c| c.set(false));
    let r = co.resume(job);
    std::mem::forget(reset);
    let out = match r {
        CoroutineResult::Yield(Event::Done) | CoroutineResult::Return(()) => {
            IN_JOB.with(|c| c.set(false));
            SUSPENDED.with(|c| c.set(false));
            Outcome::Finished
        }
        CoroutineResult::Yield(Event::Busy) => {
            SUSPENDED.with(|c| c.set(true));
            Outcome::Suspended
        }
    };
    FIBER.with(|f| *f.borrow_mut() = fiber);
    out
}

/// Runs `job` on this thread's script stack. When its script suspends
/// itself, returns [`Outcome::Suspended`] with the job still in progress;
/// the caller yields to its runtime and calls [`resume`] until it returns
/// true. Without a usable stack (not [`available`], or it could not be
/// mapped) the job runs here, to its end.
///
/// # Safety
/// Until the job has finished (this returns [`Outcome::Finished`] or a
/// later [`resume`] returns true), `job` and everything it borrows must
/// stay alive and must not be used by anyone else; dropping the caller's
/// state first requires [`finish`].
pub unsafe fn run(job: &mut dyn FnMut()) -> Outcome {
    if !available() {
        job();
        return Outcome::Finished;
    }
    let ready = FIBER.with(|f| {
        let mut f = f.borrow_mut();
        if f.is_none() {
            *f = new_fiber().ok();
        }
        f.is_some()
    });
    if !ready {
        job();
        return Outcome::Finished;
    }
    let p: NonNull<dyn FnMut() + '_> = NonNull::from(job);
    // SAFETY: only the lifetime is erased; the caller's contract keeps the
    // pointee alive while the coroutine may use it.
    let p: NonNull<dyn FnMut()> = unsafe { std::mem::transmute(p) };
    drive(Some(p))
}

/// True while a job of this thread is suspended.
#[inline]
pub fn suspended() -> bool {
    SUSPENDED.with(Cell::get)
}

/// Continues the suspended job: true when it has finished, false when it
/// suspended again.
pub fn resume() -> bool {
    if !suspended() {
        return true;
    }
    drive(None) == Outcome::Finished
}

/// Drives a suspended job to its end without letting it suspend again
/// (its connection is being dropped: the script must not outlive it).
pub fn finish() {
    FINISHING.with(|c| c.set(true));
    while !resume() {}
    FINISHING.with(|c| c.set(false));
}

/// True when the running script may suspend itself now: it runs as a job
/// on this thread's coroutine and is not being finished.
#[inline]
pub fn can_suspend() -> bool {
    IN_JOB.with(Cell::get) && !SUSPENDED.with(Cell::get) && !FINISHING.with(Cell::get)
}

/// Suspends the running job (called by the busy hook of its script when
/// [`can_suspend`]); returns when the connection resumes it.
pub fn suspend() {
    let y = YIELDER.with(Cell::get);
    if y.is_null() || !can_suspend() {
        return;
    }
    // SAFETY: the yielder lives on the coroutine's stack, which is the
    // stack running this code.
    let _ = unsafe { (*y).suspend(Event::Busy) };
}

/// Resumes a suspended job of this thread when dropped before it finished
/// ([`finish`]): the connection loop keeps one while it waits.
pub struct FinishOnDrop;

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        if suspended() {
            finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_suspends_and_resumes_with_its_state() {
        enable();
        let mut steps = Vec::new();
        let mut job = || {
            steps.push(1);
            assert!(can_suspend());
            suspend();
            steps.push(2);
            suspend();
            steps.push(3);
        };
        // SAFETY: `job` lives until it finished below.
        assert_eq!(unsafe { run(&mut job) }, Outcome::Suspended);
        assert!(suspended());
        assert!(!available());
        assert!(!resume());
        assert!(resume());
        assert!(!suspended());
        assert!(available());
        assert_eq!(steps, vec![1, 2, 3]);
        // The stack is reused by the next job; finish() runs it to the end
        // without suspending.
        let mut n = 0;
        let mut job = || {
            suspend();
            n += 1;
            suspend();
            n += 1;
        };
        // SAFETY: as above.
        assert_eq!(unsafe { run(&mut job) }, Outcome::Suspended);
        finish();
        assert_eq!(n, 2);
        assert!(available());
    }

    #[test]
    fn a_panicking_job_leaves_a_usable_thread() {
        enable();
        let r = std::panic::catch_unwind(|| {
            let mut job = || panic!("job failed");
            // SAFETY: the job borrows nothing.
            unsafe { run(&mut job) }
        });
        assert!(r.is_err());
        assert!(available());
        let mut ran = false;
        let mut job = || ran = true;
        // SAFETY: as above.
        assert_eq!(unsafe { run(&mut job) }, Outcome::Finished);
        assert!(ran);
    }
}
