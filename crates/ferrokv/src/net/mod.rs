//! Networking: listeners ([`listener`]), the per-connection loop
//! ([`connection`]) and the wire protocols it speaks through a [`codec`]
//! ([`resp`]), TLS ([`tls`]) and
//! the open-file limit behind `maxclients` ([`fdlimit`]).

pub mod codec;
pub mod connection;
pub mod fdlimit;
pub mod listener;
pub mod resp;
pub mod spin;
pub mod tls;
