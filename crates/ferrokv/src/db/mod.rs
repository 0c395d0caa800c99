//! The data layer: the [`Keyspace`] of databases and shards
//! ([`keyspace`]), the hash table behind it ([`dict`]) and stored values
//! ([`value`]).

pub mod blocking;
pub mod dict;
pub mod hash;
pub mod keyspace;
pub mod lazyfree;
pub mod list;
pub mod listpack;
pub mod lru;
pub mod set;
pub mod slotindex;
pub mod smallbytes;
pub mod stream;
pub mod value;
pub mod zset;

pub use dict::{hash_bytes, hash_key, Dict, TableStats};
pub use hash::HashValue;
pub use keyspace::{shard_index, Db, KeyLocks, Keyspace, Shard};
pub use list::ListValue;
pub use set::SetValue;
pub use stream::StreamValue;
pub use value::{Entry, StrValue, Value};
pub use zset::ZSetValue;
