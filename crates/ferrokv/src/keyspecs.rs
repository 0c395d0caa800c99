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

/// Flag names in the order COMMAND INFO lists them (Redis's
/// `addReplyFlagsForKeyArgs`).
pub const INFO_FLAG_NAMES: &[(u16, &str)] = &[
    (RO, "RO"),
    (RW, "RW"),
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

/// Key specs of SPUBLISH (Redis 7.0.15): its shard channel, not a key
/// (only cluster routing reads it).
pub const SPUBLISH: &[KeySpec] = &[key_at(NOT_KEY, 1)];

/// Key specs of SSUBSCRIBE, SUNSUBSCRIBE (Redis 7.0.15): shard channels.
pub const SSUBSCRIBE: &[KeySpec] = &[range_at(NOT_KEY, 1, -1, 1, 0)];

/// A command's own key finder over its arguments (args[0] the name), for
/// the forms its key specs cannot describe (Redis's `getkeys_proc`).
pub type KeyFinder = fn(&Args<'_>) -> Keys;

/// One key spec.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    /// Key flags (the constants of this module).
    pub flags: u16,
    /// Begin-search step.
    pub begin: Begin,
    /// Find-keys step.
    pub find: Find,
    /// The spec's `notes` as COMMAND INFO shows them (Redis 7.0.15).
    pub notes: Option<&'static str>,
}

impl KeySpec {
    /// The same spec with COMMAND INFO `notes`.
    pub const fn with_notes(mut self, notes: &'static str) -> KeySpec {
        self.notes = Some(notes);
        self
    }
}

const fn spec(flags: u16, begin: Begin, find: Find) -> KeySpec {
    KeySpec {
        flags,
        begin,
        find,
        notes: None,
    }
}

/// One key at argument `i`.
const fn key_at(flags: u16, i: i32) -> KeySpec {
    range_at(flags, i, 0, 1, 0)
}

/// Keys from argument `i` to `last` (relative; negative from the end),
/// every `step`-th, `limit` as [`Find::Range`].
const fn range_at(flags: u16, i: i32, last: i32, step: i32, limit: i32) -> KeySpec {
    spec(flags, Begin::Index(i), Find::Range { last, step, limit })
}

/// A key count `idx` after argument `i`, keys from `first` after it.
const fn keynum_at(flags: u16, i: i32, idx: i32, first: i32, step: i32) -> KeySpec {
    spec(flags, Begin::Index(i), Find::Keynum { idx, first, step })
}

/// Key specs of APPEND, HSETNX, LINSERT, LPUSH, LPUSHX, RPUSH, RPUSHX, SADD (Redis 7.0.15).
pub const APPEND: &[KeySpec] = &[key_at(RW | INSERT, 1)];

/// Key specs of BLMOVE, BRPOPLPUSH, LMOVE, RPOPLPUSH, SMOVE (Redis 7.0.15).
pub const BLMOVE: &[KeySpec] = &[key_at(RW | ACCESS | DELETE, 1), key_at(RW | INSERT, 2)];

/// Key specs of BLMPOP, BZMPOP (Redis 7.0.15).
pub const BLMPOP: &[KeySpec] = &[keynum_at(RW | ACCESS | DELETE, 2, 0, 1, 1)];

/// Key specs of BLPOP, BRPOP, BZPOPMAX, BZPOPMIN (Redis 7.0.15).
pub const BLPOP: &[KeySpec] = &[range_at(RW | ACCESS | DELETE, 1, -2, 1, 0)];

/// Key specs of COPY (Redis 7.0.15).
pub const COPY: &[KeySpec] = &[key_at(RO | ACCESS, 1), key_at(OW | UPDATE, 2)];

/// Key specs of DECR, DECRBY, GETEX, GETSET, HINCRBY, HINCRBYFLOAT, INCR, INCRBY, INCRBYFLOAT, MOVE, ZINCRBY (Redis 7.0.15).
pub const DECR: &[KeySpec] = &[key_at(RW | ACCESS | UPDATE, 1)];

/// Key specs of DEL, UNLINK (Redis 7.0.15).
pub const DEL: &[KeySpec] = &[range_at(RM | DELETE, 1, -1, 1, 0)];

/// Key specs of EXISTS, TOUCH, WATCH (Redis 7.0.15).
pub const EXISTS: &[KeySpec] = &[range_at(RO, 1, -1, 1, 0)];

/// Key specs of EXPIRE, EXPIREAT, HMSET, HSET, LSET, PERSIST, PEXPIRE, PEXPIREAT, SETRANGE, ZADD (Redis 7.0.15).
pub const EXPIRE: &[KeySpec] = &[key_at(RW | UPDATE, 1)];

/// Key specs of DUMP, EXPIRETIME, GET, GETRANGE, HGET, HGETALL, HKEYS, HMGET, HRANDFIELD, HSCAN, HVALS, LINDEX, LPOS, LRANGE, PEXPIRETIME, PTTL, SMEMBERS, SMISMEMBER, SRANDMEMBER, SSCAN, SUBSTR, TTL, ZCOUNT, ZLEXCOUNT, ZMSCORE, ZRANDMEMBER, ZRANGE, ZRANGEBYLEX, ZRANGEBYSCORE, ZRANK, ZREVRANGE, ZREVRANGEBYLEX, ZREVRANGEBYSCORE, ZREVRANK, ZSCAN, ZSCORE (Redis 7.0.15).
pub const DUMP: &[KeySpec] = &[key_at(RO | ACCESS, 1)];

/// Key specs of GETDEL, LPOP, RPOP, SPOP, ZPOPMAX, ZPOPMIN (Redis 7.0.15).
pub const GETDEL: &[KeySpec] = &[key_at(RW | ACCESS | DELETE, 1)];

/// Key specs of HDEL, LREM, LTRIM, SREM, ZREM, ZREMRANGEBYLEX, ZREMRANGEBYRANK, ZREMRANGEBYSCORE (Redis 7.0.15).
pub const HDEL: &[KeySpec] = &[key_at(RW | DELETE, 1)];

/// Key specs of HEXISTS, HLEN, HSTRLEN, LLEN, SCARD, SISMEMBER, STRLEN, TYPE, ZCARD (Redis 7.0.15).
pub const HEXISTS: &[KeySpec] = &[key_at(RO, 1)];

/// Key specs of LCS (Redis 7.0.15).
pub const LCS: &[KeySpec] = &[range_at(RO | ACCESS, 1, 1, 1, 0)];

/// Key specs of EVAL, EVALSHA, FCALL (Redis 7.0.15): a key count at 2,
/// used in every way ("we cannot tell how the keys will be used").
pub const EVAL: &[KeySpec] = &[keynum_at(RW | ACCESS | UPDATE, 2, 0, 1, 1)];

/// Key specs of EVAL_RO, EVALSHA_RO, FCALL_RO (Redis 7.0.15).
pub const EVAL_RO: &[KeySpec] = &[keynum_at(RO | ACCESS, 2, 0, 1, 1)];

/// Key specs of EVAL and FCALL (Redis 7.0.15): [`EVAL`] with its notes.
pub const EVAL_NOTED: &[KeySpec] = &[keynum_at(RW | ACCESS | UPDATE, 2, 0, 1, 1)
    .with_notes("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE")];

/// Key specs of EVAL_RO and FCALL_RO (Redis 7.0.15): [`EVAL_RO`] with its
/// notes.
pub const EVAL_RO_NOTED: &[KeySpec] = &[keynum_at(RO | ACCESS, 2, 0, 1, 1)
    .with_notes("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS")];

/// Key specs of GETEX (Redis 7.0.15).
pub const GETEX: &[KeySpec] =
    &[key_at(RW | ACCESS | UPDATE, 1).with_notes("RW and UPDATE because it changes the TTL")];

/// Key specs of LMPOP, ZMPOP (Redis 7.0.15).
pub const LMPOP: &[KeySpec] = &[keynum_at(RW | ACCESS | DELETE, 1, 0, 1, 1)];

/// Key specs of MGET, SDIFF, SINTER, SUNION (Redis 7.0.15).
pub const MGET: &[KeySpec] = &[range_at(RO | ACCESS, 1, -1, 1, 0)];

/// Key specs of MSET (Redis 7.0.15).
pub const MSET: &[KeySpec] = &[range_at(OW | UPDATE, 1, -1, 2, 0)];

/// Key specs of MSETNX (Redis 7.0.15).
pub const MSETNX: &[KeySpec] = &[range_at(OW | INSERT, 1, -1, 2, 0)];

/// Key specs of OBJECT ENCODING, OBJECT FREQ, OBJECT IDLETIME, OBJECT REFCOUNT (Redis 7.0.15).
pub const OBJECT_ENCODING: &[KeySpec] = &[key_at(RO, 2)];

/// Key specs of PSETEX, RESTORE, SETEX (Redis 7.0.15).
pub const PSETEX: &[KeySpec] = &[key_at(OW | UPDATE, 1)];

/// Key specs of RENAME (Redis 7.0.15).
pub const RENAME: &[KeySpec] = &[key_at(RW | ACCESS | DELETE, 1), key_at(OW | UPDATE, 2)];

/// Key specs of RENAMENX (Redis 7.0.15).
pub const RENAMENX: &[KeySpec] = &[key_at(RW | ACCESS | DELETE, 1), key_at(OW | INSERT, 2)];

/// Key specs of SDIFFSTORE, SUNIONSTORE (Redis 7.0.15).
pub const SDIFFSTORE: &[KeySpec] = &[key_at(OW | UPDATE, 1), range_at(RO | ACCESS, 2, -1, 1, 0)];

/// Key specs of SET (Redis 7.0.15).
pub const SET: &[KeySpec] = &[key_at(RW | ACCESS | UPDATE | VARIABLE_FLAGS, 1)
    .with_notes("RW and ACCESS due to the optional `GET` argument")];

/// Key specs of DELEX (Redis 8.4) and DELIFEQ: read and deleted; the
/// flags depend on the condition ([`delex_keys`]).
pub const DELEX: &[KeySpec] = &[key_at(RW | DELETE | VARIABLE_FLAGS, 1)];

/// Key specs of MSETEX (Redis 8.4): a key count at 1, then key/value
/// pairs.
pub const MSETEX: &[KeySpec] = &[keynum_at(OW | UPDATE, 1, 0, 1, 2)];

/// Key specs of SETNX (Redis 7.0.15).
pub const SETNX: &[KeySpec] = &[key_at(OW | INSERT, 1)];

/// Key specs of SINTERCARD, ZDIFF, ZINTER, ZINTERCARD, ZUNION (Redis 7.0.15).
pub const SINTERCARD: &[KeySpec] = &[keynum_at(RO | ACCESS, 1, 0, 1, 1)];

/// Key specs of SINTERSTORE (Redis 7.0.15).
pub const SINTERSTORE: &[KeySpec] = &[key_at(RW | UPDATE, 1), range_at(RO | ACCESS, 2, -1, 1, 0)];

/// Key specs of SORT (Redis 7.0.15).
pub const SORT: &[KeySpec] = &[
    key_at(RO | ACCESS, 1),
    spec(RO | ACCESS, Begin::Unknown, Find::Unknown).with_notes(SORT_BY_NOTES),
    spec(OW | UPDATE, Begin::Unknown, Find::Unknown).with_notes(
        "For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array",
    ),
];

const SORT_BY_NOTES: &str = "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort";

/// Key specs of SORT_RO (Redis 7.0.15).
pub const SORT_RO: &[KeySpec] = &[
    key_at(RO | ACCESS, 1),
    spec(RO | ACCESS, Begin::Unknown, Find::Unknown).with_notes(SORT_BY_NOTES),
];

/// Key specs of ZDIFFSTORE, ZINTERSTORE, ZUNIONSTORE (Redis 7.0.15).
pub const ZDIFFSTORE: &[KeySpec] = &[key_at(OW | UPDATE, 1), keynum_at(RO | ACCESS, 2, 0, 1, 1)];

/// Key specs of MIGRATE (Redis 7.0.15): the key at 3, or the keys after
/// KEYS (incomplete: resolved by [`migrate_keys`]).
pub const MIGRATE: &[KeySpec] = &[
    key_at(RW | ACCESS | DELETE, 3),
    spec(
        RW | ACCESS | DELETE | INCOMPLETE,
        Begin::Keyword(b"KEYS", -2),
        Find::Range {
            last: -1,
            step: 1,
            limit: 0,
        },
    ),
];

/// Keys of a request from a command's legacy (first, last, step) key
/// range (Redis's getKeysUsingLegacyRangeSpec): `last` < 0 counts from the
/// end; positions past the arguments give no key (commands of variable
/// arity report their own error).
pub fn legacy_range(first: i32, last: i32, step: i32, argc: usize) -> Keys {
    if first <= 0 || step <= 0 {
        return Keys::NONE;
    }
    let last = if last < 0 { argc as i32 + last } else { last };
    if last < first || last as usize >= argc {
        return Keys::NONE;
    }
    let span = (last - first) / step * step;
    let mut k = Keys::NONE;
    k.push(first as usize, (first + span) as usize, step as usize, 0);
    k
}

/// Keys of MIGRATE (Redis's migrateGetKeys): the key at 3, or with the
/// KEYS option (and an empty key argument) every argument after KEYS;
/// COPY and REPLACE are skipped, AUTH with its argument, AUTH2 with two.
pub fn migrate_keys(argv: &Args<'_>) -> Keys {
    let argc = argv.len();
    let (mut first, mut num) = (3usize, 1usize);
    if argc > 6 {
        let mut i = 6;
        while i < argc {
            let a = argv.get(i);
            if a.eq_ignore_ascii_case(b"keys") {
                if !argv.get(3).is_empty() {
                    return Keys::NONE;
                }
                first = i + 1;
                num = argc - first;
                break;
            }
            if a.eq_ignore_ascii_case(b"auth") {
                i += 1;
            } else if a.eq_ignore_ascii_case(b"auth2") {
                i += 2;
            }
            i += 1;
        }
    }
    if num == 0 || argc < 4 {
        return Keys::NONE;
    }
    let mut k = Keys::NONE;
    k.push(first, first + num - 1, 1, RW | ACCESS | DELETE);
    k
}

/// Key specs of XADD, XACK, XCLAIM, XSETID (Redis 7.0.15).
pub const XADD: &[KeySpec] = &[key_at(RW | UPDATE, 1)];

/// Key specs of XADD itself (Redis 7.0.15): [`XADD`] with its notes.
pub const XADD_NOTED: &[KeySpec] = &[key_at(RW | UPDATE, 1)
    .with_notes("UPDATE instead of INSERT because of the optional trimming feature")];

/// Key specs of XLEN (Redis 7.0.15).
pub const XLEN: &[KeySpec] = &[key_at(RO, 1)];

/// Key specs of XRANGE, XREVRANGE, XPENDING (Redis 7.0.15).
pub const XRANGE: &[KeySpec] = &[key_at(RO | ACCESS, 1)];

/// Key specs of XDEL, XTRIM, XAUTOCLAIM (Redis 7.0.15).
pub const XDEL: &[KeySpec] = &[key_at(RW | DELETE, 1)];

/// Key specs of XREAD (Redis 7.0.15): the first half of the arguments
/// after STREAMS.
pub const XREAD: &[KeySpec] = &[spec(
    RO | ACCESS,
    Begin::Keyword(b"STREAMS", 1),
    Find::Range {
        last: -1,
        step: 1,
        limit: 2,
    },
)];

/// Key specs of XREADGROUP (Redis 7.0.15).
pub const XREADGROUP: &[KeySpec] = &[spec(
    RO | ACCESS,
    Begin::Keyword(b"STREAMS", 4),
    Find::Range {
        last: -1,
        step: 1,
        limit: 2,
    },
)];

/// Key specs of XGROUP CREATE, XGROUP CREATECONSUMER (Redis 7.0.15).
pub const XGROUP_INSERT: &[KeySpec] = &[key_at(RW | INSERT, 2)];

/// Key specs of XGROUP DESTROY, XGROUP DELCONSUMER (Redis 7.0.15).
pub const XGROUP_DELETE: &[KeySpec] = &[key_at(RW | DELETE, 2)];

/// Key specs of XGROUP SETID (Redis 7.0.15).
pub const XGROUP_UPDATE: &[KeySpec] = &[key_at(RW | UPDATE, 2)];

/// Key specs of XINFO GROUPS / STREAM / CONSUMERS (Redis 7.0.15).
pub const XINFO: &[KeySpec] = &[key_at(RO | ACCESS, 2)];

/// Key specs of PFCOUNT (Redis 7.0.15).
pub const PFCOUNT: &[KeySpec] = &[range_at(RW | ACCESS, 1, -1, 1, 0).with_notes(
    "RW because it may change the internal representation of the key, and propagate to replicas",
)];

/// Key specs of PFMERGE (Redis 7.0.15).
pub const PFMERGE: &[KeySpec] = &[
    key_at(RW | ACCESS | INSERT, 1),
    range_at(RO | ACCESS, 2, -1, 1, 0),
];

/// Key specs of PFDEBUG (Redis 7.0.15).
pub const PFDEBUG: &[KeySpec] = &[key_at(RW | ACCESS, 2)];

/// Key specs of BITFIELD (Redis 7.0.15).
pub const BITFIELD: &[KeySpec] = &[key_at(RW | ACCESS | UPDATE | VARIABLE_FLAGS, 1)
    .with_notes("This command allows both access and modification of the key")];

/// Key specs of BITOP (Redis 7.0.15).
pub const BITOP: &[KeySpec] = &[key_at(OW | UPDATE, 2), range_at(RO | ACCESS, 3, -1, 1, 0)];

/// Key specs of ZRANGESTORE (Redis 7.0.15).
pub const ZRANGESTORE: &[KeySpec] = &[key_at(OW | UPDATE, 1), key_at(RO | ACCESS, 2)];

/// Key specs of GEORADIUS (Redis 7.0.15): the source, and the STORE /
/// STOREDIST destinations, each searched from argument 6.
pub const GEORADIUS: &[KeySpec] = &[
    key_at(RO | ACCESS, 1),
    keyword_key(OW | UPDATE, b"STORE", 6),
    keyword_key(OW | UPDATE, b"STOREDIST", 6),
];

/// Key specs of GEORADIUSBYMEMBER (Redis 7.0.15): as GEORADIUS, the
/// keywords searched from argument 5.
pub const GEORADIUSBYMEMBER: &[KeySpec] = &[
    key_at(RO | ACCESS, 1),
    keyword_key(OW | UPDATE, b"STORE", 5),
    keyword_key(OW | UPDATE, b"STOREDIST", 5),
];

/// One key right after keyword `kw`, searched from argument `from`.
const fn keyword_key(flags: u16, kw: &'static [u8], from: i32) -> KeySpec {
    spec(
        flags,
        Begin::Keyword(kw, from),
        Find::Range {
            last: 0,
            step: 1,
            limit: 0,
        },
    )
}

/// A key of a request: its argument index and its key-spec flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRef {
    /// Argument index (0 = the command name).
    pub pos: usize,
    /// Key-spec flags.
    pub flags: u16,
}

/// Most runs of key positions one request's keys form: every command's
/// resolvable key specs and every key finder fit (a test checks the table).
pub const MAX_KEY_RUNS: usize = 3;

/// Key positions `first..=last`, every `step`-th, all with `flags`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Run {
    first: u32,
    last: u32,
    step: u32,
    flags: u16,
}

impl Run {
    fn len(&self) -> usize {
        ((self.last - self.first) / self.step) as usize + 1
    }
}

/// The keys of one request, as [`get_keys`] finds them: up to
/// [`MAX_KEY_RUNS`] runs of argument positions (a key, a range such as
/// MSET's every other argument from 1, a counted list), held inline, so
/// finding a request's keys never allocates whatever the command. Iterate
/// with [`Keys::iter`] (or `for k in keys`) for [`KeyRef`]s in Redis's
/// order: the order of the key specs, or of the command's own key finder.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Keys {
    runs: [Run; MAX_KEY_RUNS],
    n: u8,
}

impl Keys {
    /// No key.
    pub const NONE: Keys = Keys {
        runs: [Run {
            first: 0,
            last: 0,
            step: 1,
            flags: 0,
        }; MAX_KEY_RUNS],
        n: 0,
    };

    /// One key at argument `pos`.
    pub fn one(pos: usize, flags: u16) -> Keys {
        let mut k = Keys::NONE;
        k.push(pos, pos, 1, flags);
        k
    }

    /// Appends keys `first..=last` every `step`-th (`step` ≥ 1, `first` ≤
    /// `last`); false when [`MAX_KEY_RUNS`] runs are already held.
    fn push(&mut self, first: usize, last: usize, step: usize, flags: u16) -> bool {
        let Some(r) = self.runs.get_mut(self.n as usize) else {
            return false;
        };
        *r = Run {
            first: first as u32,
            last: last as u32,
            step: step as u32,
            flags,
        };
        self.n += 1;
        true
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.runs[..self.n as usize].iter().map(Run::len).sum()
    }

    /// True when the request has no key.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The keys in order.
    pub fn iter(&self) -> KeysIter {
        self.into_iter()
    }

    /// The key arguments of `args` (the request these keys were found in),
    /// in order.
    pub fn args<'a>(&self, args: &Args<'a>) -> impl Iterator<Item = &'a [u8]> {
        let args = *args;
        self.iter().map(move |k| args.get(k.pos))
    }
}

/// Iterator over [`Keys`]: [`KeyRef`]s in order.
#[derive(Debug, Clone)]
pub struct KeysIter {
    keys: Keys,
    run: usize,
    next: u32,
}

impl Iterator for KeysIter {
    type Item = KeyRef;

    #[inline]
    fn next(&mut self) -> Option<KeyRef> {
        let r = self.keys.runs[..self.keys.n as usize].get(self.run)?;
        let k = KeyRef {
            pos: self.next as usize,
            flags: r.flags,
        };
        match self.next.checked_add(r.step) {
            Some(n) if n <= r.last => self.next = n,
            _ => {
                self.run += 1;
                self.next = self.keys.runs.get(self.run).map_or(0, |r| r.first);
            }
        }
        Some(k)
    }
}

impl IntoIterator for Keys {
    type Item = KeyRef;
    type IntoIter = KeysIter;

    fn into_iter(self) -> KeysIter {
        KeysIter {
            next: self.runs[0].first,
            keys: self,
            run: 0,
        }
    }
}

impl IntoIterator for &Keys {
    type Item = KeyRef;
    type IntoIter = KeysIter;

    fn into_iter(self) -> KeysIter {
        (*self).into_iter()
    }
}

/// True when a command with key specs `specs` has keys (Redis's
/// `doesCommandHaveKeys`).
pub fn has_keys(specs: &[KeySpec]) -> bool {
    specs.iter().any(|s| s.flags & NOT_KEY == 0)
}

/// The keys of request `args` for a command with key specs `sp` and key
/// finder `finder` (args[0] is the command name, or for a subcommand
/// args[1] its name), as Redis's
/// `getKeysFromCommandWithSpecs(..., GET_KEYSPEC_DEFAULT)` (db.c): the key
/// specs when they resolve, else the command's own key finder. Allocates
/// nothing: ACL key checks, COMMAND GETKEYS and cluster slot routing call
/// it on the request path.
pub fn get_keys(sp: &[KeySpec], finder: Option<KeyFinder>, args: &Args<'_>) -> Keys {
    let varflags = sp.iter().any(|s| s.flags & VARIABLE_FLAGS != 0);
    if !sp.is_empty() && !varflags {
        if let Some(k) = from_specs(sp, args) {
            return k;
        }
    }
    finder.map_or(Keys::NONE, |f| f(args))
}

/// Redis's `getKeysUsingKeySpecs`; None for an unresolvable spec.
fn from_specs(sp: &[KeySpec], argv: &Args<'_>) -> Option<Keys> {
    let argc = argv.len() as i64;
    let mut out = Keys::NONE;
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
                    if argv.get(i as usize).eq_ignore_ascii_case(kw) {
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
                let n = crate::util::parse_i64(argv.get(at as usize)).filter(|&n| n >= 0)?;
                first += fk as i64;
                // The last key is `n - 1` steps after the first (Redis
                // 7.0 adds `n - 1` whatever the step; no 7.0 command has
                // a step above 1, MSETEX's pairs need it: redis#14657).
                let step = step.max(1) as i64;
                (first.saturating_add((n - 1).saturating_mul(step)), step)
            }
            Find::Unknown => return None,
        };
        // Every position of first..=last is then an argument (Redis's loop
        // over them, which skips positions past argc only for a variadic
        // command, never sees one).
        if last >= argc || last < first || first >= argc || first < 0 {
            return None;
        }
        if !out.push(first as usize, last as usize, step as usize, s.flags) {
            return None;
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
    argv: &Args<'_>,
) -> Keys {
    if count_at >= argv.len() {
        return Keys::NONE;
    }
    let num = atoi(argv.get(count_at));
    let argc = argv.len() as i64;
    if num < 1 || num > (argc - first_at as i64) / step as i64 {
        return Keys::NONE;
    }
    let mut k = Keys::NONE;
    k.push(first_at, first_at + (num as usize - 1) * step, step, 0);
    if store_at != 0 {
        k.push(store_at, store_at, 1, 0);
    }
    k
}

/// Keys of ZUNION, ZINTER, ZDIFF, SINTERCARD, ZINTERCARD, LMPOP, ZMPOP: a
/// key count at 1, keys after it (Redis's zunionInterDiffGetKeys & co.).
pub fn numkeys_at_1(argv: &Args<'_>) -> Keys {
    generic(0, 1, 2, 1, argv)
}

/// Keys of ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE: the destination, then a
/// key count at 2 and keys after it.
pub fn store_numkeys_at_2(argv: &Args<'_>) -> Keys {
    generic(1, 2, 3, 1, argv)
}

/// Keys of BLMPOP, BZMPOP: a key count at 2 (after the timeout).
pub fn numkeys_at_2(argv: &Args<'_>) -> Keys {
    generic(0, 2, 3, 1, argv)
}

/// Keys of MSETEX: a key count at 1, then key/value pairs (Redis 8.4).
pub fn msetex_keys(argv: &Args<'_>) -> Keys {
    generic(0, 1, 2, 2, argv)
}

/// Key of DELEX: removed blindly without a condition, read and deleted
/// with one (Redis 8.4's delexGetKeys).
pub fn delex_keys(argv: &Args<'_>) -> Keys {
    if argv.len() < 2 {
        return Keys::NONE;
    }
    let flags = if argv.len() > 2 {
        RW | ACCESS | DELETE
    } else {
        RM | DELETE
    };
    Keys::one(1, flags)
}

/// Key of SET: read and updated with GET or a compare-and-set condition
/// (IFEQ, IFNE, IFDEQ, IFDNE), else overwritten (Redis's setGetKeys).
pub fn set_keys(argv: &Args<'_>) -> Keys {
    if argv.len() < 2 {
        return Keys::NONE;
    }
    let get = argv.iter().skip(3).any(|a| {
        [&b"get"[..], b"ifeq", b"ifne", b"ifdeq", b"ifdne"]
            .iter()
            .any(|t| a.eq_ignore_ascii_case(t))
    });
    let flags = if get {
        RW | ACCESS | UPDATE
    } else {
        OW | UPDATE
    };
    Keys::one(1, flags)
}

/// Key of BITFIELD: read only when every operation is a GET (OVERFLOW
/// aside), else read and updated; a malformed request counts as writing
/// (Redis's bitfieldGetKeys).
pub fn bitfield_keys(argv: &Args<'_>) -> Keys {
    if argv.len() < 2 {
        return Keys::NONE;
    }
    let n = argv.len();
    let mut readonly = true;
    let mut i = 2;
    while i < n {
        let rem = n - i - 1;
        let a = argv.get(i);
        if a.eq_ignore_ascii_case(b"get") && rem >= 2 {
            i += 3;
        } else if a.eq_ignore_ascii_case(b"overflow") && rem >= 1 {
            i += 2;
        } else {
            readonly = false;
            break;
        }
    }
    Keys::one(
        1,
        if readonly {
            RO | ACCESS
        } else {
            RW | ACCESS | UPDATE
        },
    )
}

/// Key of SORT_RO.
pub fn sort_ro_keys(_argv: &Args<'_>) -> Keys {
    Keys::one(1, RO | ACCESS)
}

/// Keys of SORT: the source and a STORE destination (Redis's sortGetKeys,
/// which skips LIMIT's two arguments and GET/BY's one).
pub fn sort_keys(argv: &Args<'_>) -> Keys {
    let mut k = Keys::one(1, RO | ACCESS);
    let mut store = None;
    let mut i = 2;
    while i < argv.len() {
        let a = argv.get(i);
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
        k.push(p, p, 1, OW | UPDATE);
    }
    k
}

/// Keys of GEORADIUS and GEORADIUSBYMEMBER as Redis's georadiusGetKeys
/// finds them (cluster routing): the source, then the key after the last
/// STORE or STOREDIST from argument 5 on, both with flags 0 (the key specs
/// carry the flags).
pub fn georadius_keys(argv: &Args<'_>) -> Keys {
    let mut k = Keys::one(1, 0);
    let mut store = None;
    let mut i = 5;
    while i < argv.len() {
        let a = argv.get(i);
        if (a.eq_ignore_ascii_case(b"store") || a.eq_ignore_ascii_case(b"storedist"))
            && i + 1 < argv.len()
        {
            store = Some(i + 1);
            i += 1;
        }
        i += 1;
    }
    if let Some(p) = store {
        k.push(p, p, 1, 0);
    }
    k
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
        let t = crate::cmd::table();
        let mut a = crate::resp::OwnedArgs::default();
        for s in argv {
            a.push(s.as_bytes());
        }
        let c = t.by_full_name(argv[0].as_bytes()).unwrap();
        let k = c.keys(&a.args());
        let v: Vec<(usize, u16)> = k.iter().map(|k| (k.pos, k.flags)).collect();
        assert_eq!(v.len(), k.len());
        assert_eq!(v.is_empty(), k.is_empty());
        v
    }

    /// Every entry with legacy key positions carries its key specs (a new
    /// command without them would have no keys for ACL, GETKEYS and
    /// cluster routing).
    #[test]
    fn entries_with_keys_carry_specs() {
        for c in &crate::cmd::table().all {
            if c.first_key != 0 {
                assert!(!c.key_specs.is_empty(), "{} has no key specs", c.name);
            }
        }
    }

    /// Every entry's keys fit in [`Keys`] without allocating.
    #[test]
    fn specs_fit_inline() {
        for c in &crate::cmd::table().all {
            let n = c
                .key_specs
                .iter()
                .filter(|s| s.flags & NOT_KEY == 0)
                .count();
            assert!(n <= MAX_KEY_RUNS, "{} has {n} key specs", c.name);
        }
    }

    #[test]
    fn ranges_and_steps() {
        assert_eq!(
            keys(&["mset", "a", "1", "b", "2"]),
            vec![(1, OW | UPDATE), (3, OW | UPDATE)]
        );
        assert_eq!(
            keys(&["sdiffstore", "d", "a", "b"]),
            vec![(1, OW | UPDATE), (2, RO | ACCESS), (3, RO | ACCESS)]
        );
        assert_eq!(
            keys(&["blpop", "a", "b", "0"]),
            vec![(1, RW | ACCESS | DELETE), (2, RW | ACCESS | DELETE)]
        );
        assert_eq!(keys(&["get", "k"]), vec![(1, RO | ACCESS)]);
        assert_eq!(keys(&["ping"]), vec![]);
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
