//! The RESP wire protocol: request parsing ([`parse`]) and reply encoding
//! ([`reply`]), RESP2 and RESP3 (redis.io/docs/reference/protocol-spec).

pub mod parse;
pub mod reply;

pub use parse::{Args, OwnedArgs, Parsed, ProtocolError, RequestParser};
pub use reply::Out;
