//! Networking: listeners ([`listener`]), the per-connection loop
//! ([`connection`]), the client registry ([`clients`]) and TLS ([`tls`]).

pub mod clients;
pub mod connection;
pub mod listener;
pub mod spin;
pub mod tls;
