//! List commands (redis.io/commands/?group=list), following t_list.c.

use super::Command;

/// The lists family's table entries.
pub static COMMANDS: &[Command] = &[];
