//! Persistence: RDB snapshots ([`rdb`]) and the append-only file ([`aof`]).

pub mod aof;
pub mod rdb;
pub mod snapshot;
