//! Set commands (redis.io/commands/?group=set), following t_set.c.

use super::Command;

/// The sets family's table entries.
pub static COMMANDS: &[Command] = &[];
