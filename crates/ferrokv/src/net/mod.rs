//! Networking: listeners ([`listener`]), the per-connection loop
//! ([`connection`]) and the client registry ([`clients`]).

pub mod clients;
pub mod connection;
pub mod listener;
