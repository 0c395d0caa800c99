//! In-process tests of the command families: each test builds a server in
//! this process (harness.rs), runs commands through the command layer as a
//! connection does and controls the server's clock, so TTLs, idle times and
//! LFU ageing are tested by moving the clock, never by sleeping. The
//! end-to-end tests of the binary (crates/ferrokv-server/tests) cover the
//! network, the protocol and the differential comparison with redis-server.

mod harness;

mod hashes;
mod keys;
mod lists;
mod servers;
mod snapshot;
mod strings;
