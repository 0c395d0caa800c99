//! Persistence: the append-only file ([`aof`]).

pub mod aof;
