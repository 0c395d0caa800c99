//! Persistence: RDB snapshots ([`rdb`]).

pub mod rdb;
