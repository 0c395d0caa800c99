//! Persistence: RDB snapshots ([`rdb`]) and the append-only file ([`aof`]).

pub mod aof;
pub mod rdb;
pub mod snapshot;

use std::sync::Arc;

/// What persistence works on: the parts of a server it reads and changes
/// (the server implements it; persistence code is generic over it, so this
/// module sits below the server and knows nothing of the layers above).
pub trait Host: Send + Sync + 'static {
    /// The configuration (dir, dbfilename, appendonly, save points, ...).
    fn config(&self) -> &parking_lot::RwLock<crate::config::Config>;
    /// Hot-path configuration values (encodings of loaded values).
    fn live(&self) -> &crate::config::LiveConfig;
    /// The databases.
    fn keyspace(&self) -> &crate::db::Keyspace;
    /// RDB state (SAVE, BGSAVE, INFO persistence).
    fn rdb(&self) -> &rdb::RdbState;
    /// The append-only file.
    fn aof(&self) -> &Arc<aof::Aof>;
    /// The stream of effects the AOF is a sink of.
    fn propagation(&self) -> &crate::propagate::Stream;
    /// Counters for INFO.
    fn stats(&self) -> &crate::stats::Stats;
    /// The server's clock.
    fn clock(&self) -> &crate::clock::Clock;
    /// LASTSAVE, Unix seconds.
    fn lastsave(&self) -> &std::sync::atomic::AtomicU64;
    /// Connected clients.
    fn clients(&self) -> &crate::clients::ClientRegistry;
    /// Handles of the I/O worker runtimes (the AOF rewrite's barrier).
    fn worker_handles(&self) -> Vec<tokio::runtime::Handle>;
    /// Replication state (the RDB's repl-id / repl-offset fields).
    fn repl(&self) -> &crate::repl::Repl;
    /// The code of every function library, for the RDB's FUNCTION2
    /// records (rdb.c `rdbSaveFunctions`).
    fn function_libraries(&self) -> Vec<Vec<u8>>;
    /// Loads a function library read from an RDB (`replace`: one of the
    /// same name is replaced, else it is an error). Err: why it failed.
    fn load_function_library(&self, code: &[u8], replace: bool) -> Result<(), String>;
    /// Removes every function library (what Redis 7.0's `emptyData`
    /// does besides emptying the databases, unless EMPTYDB_NOFUNCTIONS).
    fn clear_function_libraries(&self);
}

/// A shared server is a host too (callers hold `Arc<Server>`).
impl<H: Host> Host for Arc<H> {
    fn config(&self) -> &parking_lot::RwLock<crate::config::Config> {
        (**self).config()
    }
    fn live(&self) -> &crate::config::LiveConfig {
        (**self).live()
    }
    fn keyspace(&self) -> &crate::db::Keyspace {
        (**self).keyspace()
    }
    fn rdb(&self) -> &rdb::RdbState {
        (**self).rdb()
    }
    fn function_libraries(&self) -> Vec<Vec<u8>> {
        (**self).function_libraries()
    }
    fn load_function_library(&self, code: &[u8], replace: bool) -> Result<(), String> {
        (**self).load_function_library(code, replace)
    }
    fn clear_function_libraries(&self) {
        (**self).clear_function_libraries()
    }
    fn aof(&self) -> &Arc<aof::Aof> {
        (**self).aof()
    }
    fn propagation(&self) -> &crate::propagate::Stream {
        (**self).propagation()
    }
    fn stats(&self) -> &crate::stats::Stats {
        (**self).stats()
    }
    fn clock(&self) -> &crate::clock::Clock {
        (**self).clock()
    }
    fn lastsave(&self) -> &std::sync::atomic::AtomicU64 {
        (**self).lastsave()
    }
    fn clients(&self) -> &crate::clients::ClientRegistry {
        (**self).clients()
    }
    fn worker_handles(&self) -> Vec<tokio::runtime::Handle> {
        (**self).worker_handles()
    }
    fn repl(&self) -> &crate::repl::Repl {
        (**self).repl()
    }
}
