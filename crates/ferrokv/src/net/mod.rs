//! Networking: listeners ([`listener`]), the per-connection loop
//! ([`connection`]), the client registry ([`clients`]), TLS ([`tls`]) and
//! the open-file limit behind `maxclients` ([`fdlimit`]).

pub mod clients;
pub mod connection;
pub mod fdlimit;
pub mod listener;
pub mod spin;
pub mod tls;
