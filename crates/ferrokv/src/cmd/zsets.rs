//! Sorted set commands (redis.io/commands/?group=sorted-set), following t_zset.c.

use super::Command;

/// The zsets family's table entries.
pub static COMMANDS: &[Command] = &[];
