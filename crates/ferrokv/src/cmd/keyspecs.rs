//! Key specifications: where a request's keys are and how each is used.
//!
//! Redis 7.0 describes the keys of every command with "key specs" (COMMAND
//! INFO's eighth field): a begin-search step (a fixed index, or a keyword
//! searched from an index) and a find-keys step (a range relative to the
//! first key, or a key count read from an argument), plus flags saying how
//! the key is used (RO/RW/OW/RM, access/update/insert/delete). [`get_keys`]
//! interprets them as Redis's `getKeysFromCommandWithSpecs` (db.c) does,
//! including its fallbacks for specs that cannot be resolved (SORT's STORE,
//! SET's GET-dependent flags, a key count that is not a valid number), so
//! that COMMAND GETKEYS / GETKEYSANDFLAGS, the ACL key checks (%R~ / %W~)
//! and blocked-client signalling all see the same keys Redis sees.
//!
//! The table below holds Redis 7.0.15's key specs for the commands ferrokv
//! implements (taken from its COMMAND INFO output).

use super::Command;
use crate::resp::Args;

/// Read-only key.
pub const RO: u16 = 1 << 0;
/// Read-write key.
pub const RW: u16 = 1 << 1;
/// Overwritten key.
pub const OW: u16 = 1 << 2;
/// Removed key.
pub const RM: u16 = 1 << 3;
/// The value is read (returned or used).
pub const ACCESS: u16 = 1 << 4;
/// The value is updated.
pub const UPDATE: u16 = 1 << 5;
/// Data is inserted.
pub const INSERT: u16 = 1 << 6;
/// Data is deleted.
pub const DELETE: u16 = 1 << 7;
/// Not a key (a channel, ...).
pub const NOT_KEY: u16 = 1 << 8;
/// The spec may miss keys.
pub const INCOMPLETE: u16 = 1 << 9;
/// The flags depend on the arguments.
pub const VARIABLE_FLAGS: u16 = 1 << 10;

/// Flag names as COMMAND GETKEYSANDFLAGS prints them, in Redis's order.
pub const FLAG_NAMES: &[(u16, &str)] = &[
    (RW, "RW"),
    (RO, "RO"),
    (OW, "OW"),
    (RM, "RM"),
    (ACCESS, "access"),
    (UPDATE, "update"),
    (INSERT, "insert"),
    (DELETE, "delete"),
    (NOT_KEY, "not_key"),
    (INCOMPLETE, "incomplete"),
    (VARIABLE_FLAGS, "variable_flags"),
];

/// Where the search for a spec's first key starts.
#[derive(Debug, Clone, Copy)]
pub enum Begin {
    /// At this argument index.
    Index(i32),
    /// After this keyword, searched from `startfrom` (negative = from the end).
    Keyword(&'static [u8], i32),
    /// Not describable (the command's own key finder is used).
    Unknown,
}

/// How the keys are found from the first one.
#[derive(Debug, Clone, Copy)]
pub enum Find {
    /// `last` relative to the first key (negative = from the end), every
    /// `step`-th argument; `limit` > 1 stops at 1/limit of the rest.
    Range { last: i32, step: i32, limit: i32 },
    /// The key count is the argument `idx` after the begin index; keys
    /// start `first` after it, every `step`-th.
    Keynum { idx: i32, first: i32, step: i32 },
    /// Not describable.
    Unknown,
}

/// One key spec.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    /// Key flags (the constants of this module).
    pub flags: u16,
    /// Begin-search step.
    pub begin: Begin,
    /// Find-keys step.
    pub find: Find,
}

const fn spec(flags: u16, begin: Begin, find: Find) -> KeySpec {
    KeySpec { flags, begin, find }
}

/// Redis 7.0.15's key specs of the command or subcommand `name` (full,
/// lower-case name); empty for commands without keys.
pub fn specs(name: &str) -> &'static [KeySpec] {
    match name {
        "append" | "hsetnx" | "linsert" | "lpush" | "lpushx" | "rpush" | "rpushx" | "sadd" => {
            const S: &[KeySpec] = &[spec(
                RW | INSERT,
                Begin::Index(1),
                Find::Range {
                    last: 0,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "blmove" | "brpoplpush" | "lmove" | "rpoplpush" | "smove" => {
            const S: &[KeySpec] = &[
                spec(
                    RW | ACCESS | DELETE,
                    Begin::Index(1),
                    Find::Range {
                        last: 0,
                        step: 1,
                        limit: 0,
                    },
                ),
                spec(
                    RW | INSERT,
                    Begin::Index(2),
                    Find::Range {
                        last: 0,
                        step: 1,
                        limit: 0,
                    },
                ),
            ];
            S
        }
        "blmpop" | "bzmpop" => {
            const S: &[KeySpec] = &[spec(
                RW | ACCESS | DELETE,
                Begin::Index(2),
                Find::Keynum {
                    idx: 0,
                    first: 1,
                    step: 1,
                },
            )];
            S
        }
        "blpop" | "brpop" | "bzpopmax" | "bzpopmin" => {
            const S: &[KeySpec] = &[spec(
                RW | ACCESS | DELETE,
                Begin::Index(1),
                Find::Range {
                    last: -2,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "copy" => {
            const S: &[KeySpec] = &[
                spec(
                    RO | ACCESS,
                    Begin::Index(1),
                    Find::Range {
                        last: 0,
                        step: 1,
                        limit: 0,
                    },
                ),
                spec(
                    OW | UPDATE,
                    Begin::Index(2),
                    Find::Range {
                        last: 0,
                        step: 1,
                        limit: 0,
                    },
                ),
            ];
            S
        }
        "decr" | "decrby" | "getex" | "getset" | "hincrby" | "hincrbyfloat" | "incr" | "incrby"
        | "incrbyfloat" | "move" | "zincrby" => {
            const S: &[KeySpec] = &[spec(
                RW | ACCESS | UPDATE,
                Begin::Index(1),
                Find::Range {
                    last: 0,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "del" | "unlink" => {
            const S: &[KeySpec] = &[spec(
                RM | DELETE,
                Begin::Index(1),
                Find::Range {
                    last: -1,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "exists" | "touch" | "watch" => {
            const S: &[KeySpec] = &[spec(
                RO,
                Begin::Index(1),
                Find::Range {
                    last: -1,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "expire" | "expireat" | "hmset" | "hset" | "lset" | "persist" | "pexpire" | "pexpireat"
        | "setrange" | "zadd" => {
            const S: &[KeySpec] = &[spec(
                RW | UPDATE,
                Begin::Index(1),
                Find::Range {
                    last: 0,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "dump" | "expiretime" | "get" | "getrange" | "hget" | "hgetall" | "hkeys" | "hmget"
        | "hrandfield" | "hscan" | "hvals" | "lindex" | "lpos" | "lrange" | "pexpiretime"
        | "pttl" | "smembers" | "smismember" | "srandmember" | "sscan" | "substr" | "ttl"
        | "zcount" | "zlexcount" | "zmscore" | "zrandmember" | "zrange" | "zrangebylex"
        | "zrangebyscore" | "zrank" | "zrevrange" | "zrevrangebylex" | "zrevrangebyscore"
        | "zrevrank" | "zscan" | "zscore" => {
            const S: &[KeySpec] = &[spec(
                RO | ACCESS,
                Begin::Index(1),
                Find::Range {
                    last: 0,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "getdel" | "lpop" | "rpop" | "spop" | "zpopmax" | "zpopmin" => {
            const S: &[KeySpec] = &[spec(
                RW | ACCESS | DELETE,
                Begin::Index(1),
                Find::Range {
                    last: 0,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "hdel" | "lrem" | "ltrim" | "srem" | "zrem" | "zremrangebylex" | "zremrangebyrank"
        | "zremrangebyscore" => {
            const S: &[KeySpec] = &[spec(
                RW | DELETE,
                Begin::Index(1),
                Find::Range {
                    last: 0,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "hexists" | "hlen" | "hstrlen" | "llen" | "scard" | "sismember" | "strlen" | "type"
        | "zcard" => {
            const S: &[KeySpec] = &[spec(
                RO,
                Begin::Index(1),
                Find::Range {
                    last: 0,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "lcs" => {
            const S: &[KeySpec] = &[spec(
                RO | ACCESS,
                Begin::Index(1),
                Find::Range {
                    last: 1,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "lmpop" | "zmpop" => {
            const S: &[KeySpec] = &[spec(
                RW | ACCESS | DELETE,
                Begin::Index(1),
                Find::Keynum {
                    idx: 0,
                    first: 1,
                    step: 1,
                },
            )];
            S
        }
        "mget" | "sdiff" | "sinter" | "sunion" => {
            const S: &[KeySpec] = &[spec(
                RO | ACCESS,
                Begin::Index(1),
                Find::Range {
                    last: -1,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "mset" => {
            const S: &[KeySpec] = &[spec(
                OW | UPDATE,
                Begin::Index(1),
                Find::Range {
                    last: -1,
                    step: 2,
                    limit: 0,
                },
            )];
            S
        }
        "msetnx" => {
            const S: &[KeySpec] = &[spec(
                OW | INSERT,
                Begin::Index(1),
                Find::Range {
                    last: -1,
                    step: 2,
                    limit: 0,
                },
            )];
            S
        }
        "object|encoding" | "object|freq" | "object|idletime" | "object|refcount" => {
            const S: &[KeySpec] = &[spec(
                RO,
                Begin::Index(2),
                Find::Range {
                    last: 0,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "psetex" | "restore" | "setex" => {
            const S: &[KeySpec] = &[spec(
                OW | UPDATE,
                Begin::Index(1),
                Find::Range {
                    last: 0,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "rename" => {
            const S: &[KeySpec] = &[
                spec(
                    RW | ACCESS | DELETE,
                    Begin::Index(1),
                    Find::Range {
                        last: 0,
                        step: 1,
                        limit: 0,
                    },
                ),
                spec(
                    OW | UPDATE,
                    Begin::Index(2),
                    Find::Range {
                        last: 0,
                        step: 1,
                        limit: 0,
                    },
                ),
            ];
            S
        }
        "renamenx" => {
            const S: &[KeySpec] = &[
                spec(
                    RW | ACCESS | DELETE,
                    Begin::Index(1),
                    Find::Range {
                        last: 0,
                        step: 1,
                        limit: 0,
                    },
                ),
                spec(
                    OW | INSERT,
                    Begin::Index(2),
                    Find::Range {
                        last: 0,
                        step: 1,
                        limit: 0,
                    },
                ),
            ];
            S
        }
        "sdiffstore" | "sunionstore" => {
            const S: &[KeySpec] = &[
                spec(
                    OW | UPDATE,
                    Begin::Index(1),
                    Find::Range {
                        last: 0,
                        step: 1,
                        limit: 0,
                    },
                ),
                spec(
                    RO | ACCESS,
                    Begin::Index(2),
                    Find::Range {
                        last: -1,
                        step: 1,
                        limit: 0,
                    },
                ),
            ];
            S
        }
        "set" => {
            const S: &[KeySpec] = &[spec(
                RW | ACCESS | UPDATE | VARIABLE_FLAGS,
                Begin::Index(1),
                Find::Range {
                    last: 0,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "setnx" => {
            const S: &[KeySpec] = &[spec(
                OW | INSERT,
                Begin::Index(1),
                Find::Range {
                    last: 0,
                    step: 1,
                    limit: 0,
                },
            )];
            S
        }
        "sintercard" | "zdiff" | "zinter" | "zintercard" | "zunion" => {
            const S: &[KeySpec] = &[spec(
                RO | ACCESS,
                Begin::Index(1),
                Find::Keynum {
                    idx: 0,
                    first: 1,
                    step: 1,
                },
            )];
            S
        }
        "sinterstore" => {
            const S: &[KeySpec] = &[
                spec(
                    RW | UPDATE,
                    Begin::Index(1),
                    Find::Range {
                        last: 0,
                        step: 1,
                        limit: 0,
                    },
                ),
                spec(
                    RO | ACCESS,
                    Begin::Index(2),
                    Find::Range {
                        last: -1,
                        step: 1,
                        limit: 0,
                    },
                ),
            ];
            S
        }
        "sort" => {
            const S: &[KeySpec] = &[
                spec(
                    RO | ACCESS,
                    Begin::Index(1),
                    Find::Range {
                        last: 0,
                        step: 1,
                        limit: 0,
                    },
                ),
                spec(RO | ACCESS, Begin::Unknown, Find::Unknown),
                spec(OW | UPDATE, Begin::Unknown, Find::Unknown),
            ];
            S
        }
        "sort_ro" => {
            const S: &[KeySpec] = &[
                spec(
                    RO | ACCESS,
                    Begin::Index(1),
                    Find::Range {
                        last: 0,
                        step: 1,
                        limit: 0,
                    },
                ),
                spec(RO | ACCESS, Begin::Unknown, Find::Unknown),
            ];
            S
        }
        "zdiffstore" | "zinterstore" | "zunionstore" => {
            const S: &[KeySpec] = &[
                spec(
                    OW | UPDATE,
                    Begin::Index(1),
                    Find::Range {
                        last: 0,
                        step: 1,
                        limit: 0,
                    },
                ),
                spec(
                    RO | ACCESS,
                    Begin::Index(2),
                    Find::Keynum {
                        idx: 0,
                        first: 1,
                        step: 1,
                    },
                ),
            ];
            S
        }
        "zrangestore" => {
            const S: &[KeySpec] = &[
                spec(
                    OW | UPDATE,
                    Begin::Index(1),
                    Find::Range {
                        last: 0,
                        step: 1,
                        limit: 0,
                    },
                ),
                spec(
                    RO | ACCESS,
                    Begin::Index(2),
                    Find::Range {
                        last: 0,
                        step: 1,
                        limit: 0,
                    },
                ),
            ];
            S
        }
        _ => &[],
    }
}

/// A key of a request: its argument index and its key-spec flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRef {
    /// Argument index (0 = the command name).
    pub pos: usize,
    /// Key-spec flags.
    pub flags: u16,
}

/// True when the command has keys (Redis's `doesCommandHaveKeys`).
pub fn has_keys(c: &Command) -> bool {
    specs(c.name).iter().any(|s| s.flags & NOT_KEY == 0)
}

/// The keys of request `args` for command `c` (args[0] is the command name,
/// or for a subcommand args[1] its name), as Redis's
/// `getKeysFromCommandWithSpecs(..., GET_KEYSPEC_DEFAULT)`: the key specs
/// when they resolve, else the command's own key finder.
pub fn get_keys(c: &Command, args: &Args<'_>) -> Vec<KeyRef> {
    let argv: Vec<&[u8]> = args.iter().collect();
    get_keys_argv(c, &argv)
}

/// [`get_keys`] over an argument slice.
pub fn get_keys_argv(c: &Command, argv: &[&[u8]]) -> Vec<KeyRef> {
    let sp = specs(c.name);
    let varflags = sp.iter().any(|s| s.flags & VARIABLE_FLAGS != 0);
    if !sp.is_empty() && !varflags {
        if let Some(v) = from_specs(c, sp, argv) {
            return v;
        }
    }
    fallback(c.name, argv)
}

/// Redis's `getKeysUsingKeySpecs`; None for an unresolvable spec.
fn from_specs(c: &Command, sp: &[KeySpec], argv: &[&[u8]]) -> Option<Vec<KeyRef>> {
    let argc = argv.len() as i64;
    let mut out = Vec::new();
    for s in sp {
        if s.flags & NOT_KEY != 0 {
            continue;
        }
        let mut first: i64 = match s.begin {
            Begin::Index(i) => i as i64,
            Begin::Keyword(kw, from) => {
                let from = from as i64;
                let start = if from > 0 { from } else { argc + from };
                let end = if from > 0 { argc - 1 } else { 1 };
                let mut found = 0;
                let mut i = start;
                while i != end {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if argv[i as usize].eq_ignore_ascii_case(kw) {
                        found = i + 1;
                        break;
                    }
                    i = if start <= end { i + 1 } else { i - 1 };
                }
                if found == 0 {
                    continue;
                }
                found
            }
            Begin::Unknown => return None,
        };
        let (last, step) = match s.find {
            Find::Range { last, step, limit } => {
                let l = if last >= 0 {
                    first + last as i64
                } else if limit == 0 {
                    argc + last as i64
                } else {
                    first + ((argc - first) / limit as i64 + last as i64)
                };
                (l, step.max(1) as i64)
            }
            Find::Keynum {
                idx,
                first: fk,
                step,
            } => {
                let at = first + idx as i64;
                if at >= argc || at < 0 {
                    return None;
                }
                let n = crate::util::parse_i64(argv[at as usize]).filter(|&n| n >= 0)?;
                first += fk as i64;
                (first + n - 1, step.max(1) as i64)
            }
            Find::Unknown => return None,
        };
        if last >= argc || last < first || first >= argc {
            return None;
        }
        let mut i = first;
        while i <= last {
            if i >= argc || i < first {
                if c.arity < 0 {
                    i += step;
                    continue;
                }
                return None;
            }
            out.push(KeyRef {
                pos: i as usize,
                flags: s.flags,
            });
            i += step;
        }
        if s.flags & INCOMPLETE != 0 {
            return None;
        }
    }
    Some(out)
}

/// C's `atoi`: optional sign and leading digits, 0 when none.
fn atoi(s: &[u8]) -> i64 {
    let s = match s.iter().position(|c| !c.is_ascii_whitespace()) {
        Some(i) => &s[i..],
        None => return 0,
    };
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            break;
        }
        v = v.saturating_mul(10).saturating_add((c - b'0') as i64);
    }
    if neg {
        -v
    } else {
        v
    }
}

/// Redis's `genericGetKeys`: `count` at `count_at`, keys from `first_at`
/// every `step`, then the store key (flags 0, as Redis's native finders).
fn generic(
    store_at: usize,
    count_at: usize,
    first_at: usize,
    step: usize,
    argv: &[&[u8]],
) -> Vec<KeyRef> {
    let Some(a) = argv.get(count_at) else {
        return Vec::new();
    };
    let num = atoi(a);
    let argc = argv.len() as i64;
    if num < 1 || num > (argc - first_at as i64) / step as i64 {
        return Vec::new();
    }
    let mut v: Vec<KeyRef> = (0..num as usize)
        .map(|i| KeyRef {
            pos: first_at + i * step,
            flags: 0,
        })
        .collect();
    if store_at != 0 {
        v.push(KeyRef {
            pos: store_at,
            flags: 0,
        });
    }
    v
}

/// The native key finders Redis falls back to (db.c `*GetKeys`).
fn fallback(name: &str, argv: &[&[u8]]) -> Vec<KeyRef> {
    match name {
        "zunion" | "zinter" | "zdiff" | "sintercard" | "zintercard" | "lmpop" | "zmpop" => {
            generic(0, 1, 2, 1, argv)
        }
        "zunionstore" | "zinterstore" | "zdiffstore" => generic(1, 2, 3, 1, argv),
        "blmpop" | "bzmpop" => generic(0, 2, 3, 1, argv),
        "set" => {
            if argv.len() < 2 {
                return Vec::new();
            }
            let get = argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get"));
            let flags = if get {
                RW | ACCESS | UPDATE
            } else {
                OW | UPDATE
            };
            vec![KeyRef { pos: 1, flags }]
        }
        "sort_ro" => vec![KeyRef {
            pos: 1,
            flags: RO | ACCESS,
        }],
        "sort" => {
            let mut v = vec![KeyRef {
                pos: 1,
                flags: RO | ACCESS,
            }];
            let mut store = None;
            let mut i = 2;
            while i < argv.len() {
                let a = argv[i];
                if a.eq_ignore_ascii_case(b"limit") {
                    i += 2;
                } else if a.eq_ignore_ascii_case(b"get") || a.eq_ignore_ascii_case(b"by") {
                    i += 1;
                } else if a.eq_ignore_ascii_case(b"store") && i + 1 < argv.len() {
                    store = Some(i + 1);
                }
                i += 1;
            }
            if let Some(p) = store {
                v.push(KeyRef {
                    pos: p,
                    flags: OW | UPDATE,
                });
            }
            v
        }
        _ => Vec::new(),
    }
}

/// Key-spec flag names of `flags`, in Redis's order.
pub fn flag_names(flags: u16) -> impl Iterator<Item = &'static str> {
    FLAG_NAMES
        .iter()
        .filter(move |(b, _)| flags & b != 0)
        .map(|(_, n)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(argv: &[&str]) -> Vec<(usize, u16)> {
        let t = super::super::table();
        let a: Vec<&[u8]> = argv.iter().map(|s| s.as_bytes()).collect();
        let c = t.by_full_name(a[0]).unwrap();
        get_keys_argv(c, &a)
            .into_iter()
            .map(|k| (k.pos, k.flags))
            .collect()
    }

    #[test]
    fn numkeys_commands() {
        assert_eq!(
            keys(&["zunionstore", "d", "2", "a", "b"]),
            vec![(1, OW | UPDATE), (3, RO | ACCESS), (4, RO | ACCESS)]
        );
        assert_eq!(
            keys(&["zunionstore", "d", "2x", "a", "b"]),
            vec![(3, 0), (4, 0), (1, 0)]
        );
        assert_eq!(keys(&["zunionstore", "d", "0", "a"]), vec![]);
        assert_eq!(
            keys(&["blmpop", "0", "2", "a", "b", "left"]),
            vec![(3, RW | ACCESS | DELETE), (4, RW | ACCESS | DELETE)]
        );
        assert_eq!(
            keys(&["sintercard", "1", "a", "limit", "3"]),
            vec![(2, RO | ACCESS)]
        );
    }

    #[test]
    fn sort_and_set() {
        assert_eq!(
            keys(&["sort", "a", "store", "b", "store", "c", "limit", "1", "store"]),
            vec![(1, RO | ACCESS), (5, OW | UPDATE)]
        );
        assert_eq!(
            keys(&["set", "a", "b", "get"]),
            vec![(1, RW | ACCESS | UPDATE)]
        );
        assert_eq!(keys(&["set", "a", "b", "nx"]), vec![(1, OW | UPDATE)]);
        assert_eq!(atoi(b" -12x"), -12);
    }
}
