//! Networking: listeners ([`listener`]), the per-connection loop
//! ([`connection`]), the wire protocols it speaks through a [`codec`]
//! ([`resp`]) and the Prometheus endpoint ([`metrics`]). The top layer:
//! the worker threads and listener state (`crate::workers`), TLS contexts
//! (`crate::tls`) and the open-file limit (`crate::fdlimit`) live below
//! the server.

pub mod codec;
pub mod connection;
pub mod listener;
pub mod memcache;
pub mod metrics;
pub mod resp;
