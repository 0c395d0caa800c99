//! `ferrokv-benchmark`: a load generator for ferrokv, Redis and memcached.
//!
//! It speaks redis-benchmark's common flags and test names, adds
//! memtier-style workloads (`--ratio`, `--key-pattern`, `--test-time`,
//! `--json-out-file`), end-to-end verification (`--verify`), the memcached
//! text protocol, Redis Cluster routing and side-by-side comparisons.
//!
//! Modules: [`args`] (command line), [`keys`] (key generation),
//! [`workload`] (request templates), [`resp`] and [`memcache`] (protocols),
//! [`cluster`] (slot routing), [`conn`] (connections), [`runner`] (the load
//! loop), [`report`] (text and JSON output) and [`chart`] (the SVG
//! picture).

pub mod args;
pub mod chart;
pub mod cluster;
pub mod conn;
pub mod keys;
pub mod memcache;
pub mod report;
pub mod resp;
pub mod runner;
pub mod workload;
