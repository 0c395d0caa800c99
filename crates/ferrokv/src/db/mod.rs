//! The data layer: the [`Keyspace`] of databases and shards
//! ([`keyspace`]), the hash table behind it ([`dict`]) and stored values
//! ([`value`]).

pub mod dict;
pub mod keyspace;
pub mod value;

pub use dict::{hash_key, Dict};
pub use keyspace::{Db, KeyLocks, Keyspace, Shard};
pub use value::{Entry, StrValue, Value};
