//! Hash commands (redis.io/commands/?group=hash), following t_hash.c.

use super::Command;

/// The hashes family's table entries.
pub static COMMANDS: &[Command] = &[];
