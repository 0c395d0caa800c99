//! String commands (redis.io/commands/?group=string): GET, SET and its
//! variants, MGET/MSET/MSETNX, GETSET/GETDEL/GETEX, APPEND, STRLEN, the
//! INCR/DECR family, INCRBYFLOAT, GETRANGE/SUBSTR, SETRANGE and LCS.
//!
//! Behaviour follows Redis 7.0 (t_string.c as documented and as observed on
//! redis-server 7.0.15): the order in which arguments, key types and expire
//! times are checked decides which error a request gets, so each handler
//! keeps Redis's order and says so. Values keep Redis's encodings
//! ([`StrValue`]): SET stores canonical integers as `int`, INCR results are
//! `int`, INCRBYFLOAT results `embstr`/`raw`, APPEND and SETRANGE produce
//! `raw`.
//!
//! Read commands count keyspace hits/misses where Redis's `lookupKeyRead`
//! does (GET, MGET, STRLEN, GETRANGE, LCS, GETDEL, GETEX, SET ... GET,
//! GETSET); every lookup refreshes the entry's LRU clock unless the client
//! set CLIENT NO-TOUCH.

use super::cas::Cond;
use super::keyspecs;
use super::{acl, cmd, err, flags::*, Command, Ctx};
use crate::db::lru::Access;
use crate::db::{hash_key, Entry, StrValue, Value};
use crate::events::{GENERIC, NEW, STRING};
use crate::resp::{Args, Out};
use std::sync::atomic::Ordering;

/// The string family's table entries (arity, flags, key positions, ACL
/// categories and docs as Redis 7.0's COMMAND INFO / COMMAND DOCS report).
pub static COMMANDS: &[Command] = &[
    cmd("get", 2, READONLY | FAST, (1, 1, 1), acl::STRING, get).key_specs(keyspecs::DUMP).doc(
        "string",
        "1.0.0",
        "Get the value of a key",
        "O(1)",
    ),
    cmd("set", -3, WRITE | DENYOOM, (1, 1, 1), acl::STRING, set).key_specs(keyspecs::SET).key_finder(keyspecs::set_keys).doc(
        "string",
        "1.0.0",
        "Set the string value of a key",
        "O(1)",
    ),
    cmd("setnx", 3, WRITE | DENYOOM | FAST, (1, 1, 1), acl::STRING, setnx).key_specs(keyspecs::SETNX).doc(
        "string",
        "1.0.0",
        "Set the value of a key, only if the key does not exist",
        "O(1)",
    ),
    cmd("setex", 4, WRITE | DENYOOM, (1, 1, 1), acl::STRING, setex).key_specs(keyspecs::PSETEX).doc(
        "string",
        "2.0.0",
        "Set the value and expiration of a key",
        "O(1)",
    ),
    cmd("psetex", 4, WRITE | DENYOOM, (1, 1, 1), acl::STRING, psetex).key_specs(keyspecs::PSETEX).doc(
        "string",
        "2.6.0",
        "Set the value and expiration in milliseconds of a key",
        "O(1)",
    ),
    cmd("mget", -2, READONLY | FAST, (1, -1, 1), acl::STRING, mget).key_specs(keyspecs::MGET)
        .doc(
            "string",
            "1.0.0",
            "Get the values of all the given keys",
            "O(N) where N is the number of keys to retrieve.",
        )
        .tips(&["request_policy:multi_shard"]),
    cmd("mset", -3, WRITE | DENYOOM, (1, -1, 2), acl::STRING, mset).key_specs(keyspecs::MSET)
        .doc(
            "string",
            "1.0.1",
            "Set multiple keys to multiple values",
            "O(N) where N is the number of keys to set.",
        )
        .tips(&["request_policy:multi_shard", "response_policy:all_succeeded"]),
    cmd("msetnx", -3, WRITE | DENYOOM, (1, -1, 2), acl::STRING, msetnx).key_specs(keyspecs::MSETNX)
        .doc(
            "string",
            "1.0.1",
            "Set multiple keys to multiple values, only if none of the keys exist",
            "O(N) where N is the number of keys to set.",
        )
        .tips(&["request_policy:multi_shard", "response_policy:agg_min"]),
    cmd("getset", 3, WRITE | DENYOOM | FAST, (1, 1, 1), acl::STRING, getset).key_specs(keyspecs::DECR).doc(
        "string",
        "1.0.0",
        "Set the string value of a key and return its old value",
        "O(1)",
    ),
    cmd("getdel", 2, WRITE | FAST, (1, 1, 1), acl::STRING, getdel).key_specs(keyspecs::GETDEL).doc(
        "string",
        "6.2.0",
        "Get the value of a key and delete the key",
        "O(1)",
    ),
    cmd("getex", -2, WRITE | FAST, (1, 1, 1), acl::STRING, getex).key_specs(keyspecs::GETEX).doc(
        "string",
        "6.2.0",
        "Get the value of a key and optionally set its expiration",
        "O(1)",
    ),
    cmd("append", 3, WRITE | DENYOOM | FAST, (1, 1, 1), acl::STRING, append).key_specs(keyspecs::APPEND).doc(
        "string",
        "2.0.0",
        "Append a value to a key",
        "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.",
    ),
    cmd("strlen", 2, READONLY | FAST, (1, 1, 1), acl::STRING, strlen).key_specs(keyspecs::HEXISTS).doc(
        "string",
        "2.2.0",
        "Get the length of the value stored in a key",
        "O(1)",
    ),
    cmd("incr", 2, WRITE | DENYOOM | FAST, (1, 1, 1), acl::STRING, incr).key_specs(keyspecs::DECR).doc(
        "string",
        "1.0.0",
        "Increment the integer value of a key by one",
        "O(1)",
    ),
    cmd("decr", 2, WRITE | DENYOOM | FAST, (1, 1, 1), acl::STRING, decr).key_specs(keyspecs::DECR).doc(
        "string",
        "1.0.0",
        "Decrement the integer value of a key by one",
        "O(1)",
    ),
    cmd("incrby", 3, WRITE | DENYOOM | FAST, (1, 1, 1), acl::STRING, incrby).key_specs(keyspecs::DECR).doc(
        "string",
        "1.0.0",
        "Increment the integer value of a key by the given amount",
        "O(1)",
    ),
    cmd("decrby", 3, WRITE | DENYOOM | FAST, (1, 1, 1), acl::STRING, decrby).key_specs(keyspecs::DECR).doc(
        "string",
        "1.0.0",
        "Decrement the integer value of a key by the given number",
        "O(1)",
    ),
    cmd(
        "incrbyfloat",
        3,
        WRITE | DENYOOM | FAST,
        (1, 1, 1),
        acl::STRING,
        incrbyfloat,
    ).key_specs(keyspecs::DECR)
    .doc(
        "string",
        "2.6.0",
        "Increment the float value of a key by the given amount",
        "O(1)",
    ),
    cmd("getrange", 4, READONLY, (1, 1, 1), acl::STRING, getrange).key_specs(keyspecs::DUMP).doc(
        "string",
        "2.4.0",
        "Get a substring of the string stored at a key",
        RANGE_COMPLEXITY,
    ),
    cmd("setrange", 4, WRITE | DENYOOM, (1, 1, 1), acl::STRING, setrange).key_specs(keyspecs::EXPIRE).doc(
        "string",
        "2.2.0",
        "Overwrite part of a string at key starting at the specified offset",
        "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.",
    ),
    cmd("substr", 4, READONLY, (1, 1, 1), acl::STRING, getrange).key_specs(keyspecs::DUMP).doc(
        "string",
        "1.0.0",
        "Get a substring of the string stored at a key",
        RANGE_COMPLEXITY,
    ),
    cmd("lcs", -3, READONLY, (1, 2, 1), acl::STRING, lcs).key_specs(keyspecs::LCS).doc(
        "string",
        "7.0.0",
        "Find longest common substring",
        "O(N*M) where N and M are the lengths of s1 and s2, respectively",
    ),
];

const RANGE_COMPLEXITY: &str = "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.";

/// "ERR string exceeds maximum allowed size (proto-max-bulk-len)".
pub const ERR_TOO_BIG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

// ---------------------------------------------------------------- helpers

/// Writes a string value as a bulk reply.
#[inline]
fn reply_str(out: &mut Out, s: &StrValue) {
    match s {
        StrValue::Int(n) => out.bulk_int(*n),
        other => out.bulk(other.as_slice().unwrap_or_default()),
    }
}

/// Refreshes an entry's LRU clock (`touch` is [`Ctx::touch_time`]).
#[inline]
fn touch(e: &mut Entry, touch: Option<Access<'_>>) {
    if let Some(t) = touch {
        t.record(&mut e.lru);
    }
}

use super::opt_is;

/// Redis's `checkStringLength`: true when a string of `size + append` bytes
/// would exceed proto-max-bulk-len (or overflow).
#[inline]
fn too_big(ctx: &Ctx<'_>, size: u64, append: u64) -> bool {
    let max = ctx.server.live.proto_max_bulk_len.load(Ordering::Relaxed);
    match size.checked_add(append) {
        Some(total) => total > max,
        None => true,
    }
}

/// An `embstr`/`raw` value holding `data` as `createStringObject` makes it
/// (never `int`: INCRBYFLOAT results stay strings).
#[inline]
fn plain_string(data: Vec<u8>) -> StrValue {
    StrValue::plain(&data)
}

// ---------------------------------------------------------------- GET / SET

/// GET key: the value, nil when missing, WRONGTYPE for other types.
fn get(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let t = ctx.touch_time();
    match shard.get(h, key, ctx.now) {
        None => {
            drop(shard);
            ctx.hit(key, false);
            ctx.out.null();
        }
        Some(e) => {
            touch(e, t);
            match &e.value {
                Value::Str(s) => reply_str(ctx.out, s),
                #[allow(unreachable_patterns)]
                _ => {
                    drop(shard);
                    ctx.hit(key, true);
                    return ctx.wrongtype();
                }
            }
            drop(shard);
            ctx.hit(key, true);
        }
    }
}

/// Parses an EX/PX/EXAT/PXAT argument into an absolute expiry time in ms
/// since the epoch, as Redis's `getExpireMillisecondsOrReply`:
/// a non-integer is "ERR value is not an integer or out of range"; a value
/// <= 0, a seconds value above i64::MAX/1000, or a sum with the current time
/// that overflows is "ERR invalid expire time in '<cmdname>' command".
/// `unit_ms`: the value is in milliseconds (PX, PXAT) rather than seconds;
/// `absolute`: a Unix time (EXAT, PXAT) rather than relative to `ctx.now`.
/// Replies the error and returns None on failure.
pub fn expire_from_arg(
    ctx: &mut Ctx<'_>,
    unit_ms: bool,
    absolute: bool,
    a: &[u8],
    cmdname: &str,
) -> Option<u64> {
    let Some(v) = crate::util::parse_i64(a) else {
        ctx.not_int();
        return None;
    };
    let ms = if v <= 0 {
        None
    } else if unit_ms {
        Some(v)
    } else {
        v.checked_mul(1000)
    };
    let at = ms.and_then(|ms| {
        if absolute {
            Some(ms)
        } else {
            ms.checked_add(ctx.now as i64)
        }
    });
    match at {
        Some(at) if at > 0 => Some(at as u64),
        _ => {
            ctx.error(&format!("ERR invalid expire time in '{cmdname}' command"));
            None
        }
    }
}

/// Kind of expire argument given to SET / GETEX.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ExpKind {
    Ex,
    Px,
    ExAt,
    PxAt,
}

impl ExpKind {
    fn unit_ms(self) -> bool {
        matches!(self, ExpKind::Px | ExpKind::PxAt)
    }
    fn absolute(self) -> bool {
        matches!(self, ExpKind::ExAt | ExpKind::PxAt)
    }
}

/// Options of SET (`for_set`) or GETEX, parsed as Redis's
/// `parseExtendedStringArgumentsOrReply`.
#[derive(Default, Debug)]
struct ExtOpts {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    /// The expire option and the index of its value argument; a repeated
    /// option of the same kind replaces the earlier one, as in Redis.
    expire: Option<(ExpKind, usize)>,
    /// A compare-and-set condition of SET (Redis 8.4, Valkey 8.1) and the
    /// index of its argument.
    cond: Option<(Cond, usize)>,
}

/// Parses options from `args[start..]`. Err(()) means "ERR syntax error".
/// Redis's rules: NX and XX exclude each other; KEEPTTL excludes any expire
/// option and PERSIST; an expire option excludes the other kinds, KEEPTTL
/// and PERSIST but may repeat; an expire option needs a following argument;
/// NX/XX/GET/KEEPTTL are SET-only, PERSIST is GETEX-only. A condition
/// (IFEQ, IFNE, IFDEQ, IFDNE: SET only) excludes NX, XX and another
/// condition and needs a following argument (Redis 8.4). `Cmd::MSetEx`
/// takes NX/XX/KEEPTTL and the expire options but not GET or conditions.
fn parse_ext(args: &Args<'_>, start: usize, cmd: ExtCmd) -> Result<ExtOpts, ()> {
    let for_set = cmd != ExtCmd::GetEx;
    let mut o = ExtOpts::default();
    let mut j = start;
    while j < args.len() {
        let a = args.get(j);
        let has_next = j + 1 < args.len();
        let kind = o.expire.map(|(k, _)| k);
        let other_exp = |k: ExpKind| kind.is_some_and(|x| x != k);
        let cond = if cmd == ExtCmd::Set {
            Cond::parse(a)
        } else {
            None
        };
        if for_set && opt_is(a, b"nx") && !o.xx && o.cond.is_none() {
            o.nx = true;
        } else if for_set && opt_is(a, b"xx") && !o.nx && o.cond.is_none() {
            o.xx = true;
        } else if let Some(c) = cond {
            if o.nx || o.xx || o.cond.is_some() || !has_next {
                return Err(());
            }
            o.cond = Some((c, j + 1));
            j += 1;
        } else if cmd == ExtCmd::Set && opt_is(a, b"get") {
            o.get = true;
        } else if for_set && opt_is(a, b"keepttl") && !o.persist && kind.is_none() {
            o.keepttl = true;
        } else if !for_set && opt_is(a, b"persist") && kind.is_none() && !o.keepttl {
            o.persist = true;
        } else {
            let k = if opt_is(a, b"ex") {
                ExpKind::Ex
            } else if opt_is(a, b"px") {
                ExpKind::Px
            } else if opt_is(a, b"exat") {
                ExpKind::ExAt
            } else if opt_is(a, b"pxat") {
                ExpKind::PxAt
            } else {
                return Err(());
            };
            if o.keepttl || o.persist || other_exp(k) || !has_next {
                return Err(());
            }
            o.expire = Some((k, j + 1));
            j += 1;
        }
        j += 1;
    }
    Ok(o)
}

/// Which command's options [`parse_ext`] reads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ExtCmd {
    Set,
    GetEx,
    MSetEx,
}

/// What [`set_generic`] does.
struct SetSpec<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    /// Absolute expiry (ms) to set.
    expire_at: Option<u64>,
    /// SETNX's integer replies (:1 set, :0 not set) instead of +OK / nil.
    int_reply: bool,
    /// Recorded as `SET key value PXAT <ms>` (any expiry option, PXAT
    /// included: Redis 7.0's setGenericCommand rewrite).
    as_pxat: bool,
    /// A compare-and-set condition and its argument.
    cond: Option<(Cond, &'a [u8])>,
}

/// Redis's `setGenericCommand` after the expire time was validated: with
/// GET, replies the old value first (WRONGTYPE for a non-string, counting a
/// hit or miss); then applies NX/XX (nil, :0 or nothing more with GET when
/// the condition fails); then stores the value (dropping the TTL unless
/// KEEPTTL) and sets the new TTL. An expiry already in the past (EXAT/PXAT)
/// is stored as such and the key disappears on its next access, as in 7.0.
///
/// `drop_get`: the arguments of a SET ... GET without expiry or of a GETSET,
/// recorded as SET without the GET words.
fn set_generic(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    val: &[u8],
    value: StrValue,
    spec: SetSpec<'_>,
    drop_get: Option<&Args<'_>>,
) {
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now;
    let t = ctx.touch_time();
    let existing = shard.get(h, key, now);
    // A digest of the wrong length is refused only when there is a string
    // to compare (Redis 8.4 checks it there), before anything is replied.
    if let (Some((c, arg)), Some(e)) = (spec.cond, &existing) {
        if let (Value::Str(_), Err(msg)) = (&e.value, c.check_arg(arg)) {
            drop(shard);
            return ctx.error(msg);
        }
    }
    if spec.get {
        match existing {
            None => {
                ctx.hit(key, false);
                ctx.out.null();
            }
            Some(ref e) => match &e.value {
                Value::Str(s) => {
                    ctx.hit(key, true);
                    reply_str(ctx.out, s);
                }
                #[allow(unreachable_patterns)]
                _ => {
                    drop(shard);
                    ctx.hit(key, true);
                    return ctx.wrongtype();
                }
            },
        }
    }
    // A condition: a missing key passes IFNE/IFDNE only; an existing one
    // must be a string (WRONGTYPE; already replied with GET) and satisfy
    // it.
    let cond_fails = match (spec.cond, &existing) {
        (None, _) => false,
        (Some((c, _)), None) => !c.holds_when_missing(),
        (Some((c, arg)), Some(e)) => match &e.value {
            Value::Str(v) => !c.holds(v, arg),
            #[allow(unreachable_patterns)]
            _ => {
                drop(shard);
                return ctx.wrongtype();
            }
        },
    };
    let found = existing.is_some();
    if let Some(e) = existing {
        touch(e, t);
    }
    let old_ttl = if found && spec.keepttl {
        shard.expire_at(h, key)
    } else {
        0
    };
    if (spec.nx && found) || (spec.xx && !found) || cond_fails {
        drop(shard);
        if !spec.get {
            if spec.int_reply {
                ctx.out.int(0);
            } else {
                ctx.out.null();
            }
        }
        return;
    }
    let entry = Entry::new(Value::Str(value), ctx.server.keyspace.lru.initial(now));
    let at = spec.expire_at.unwrap_or(old_ttl);
    let old = shard.insert_with_expire(h, key, entry, at);
    crate::db::lazyfree::free_old(old, crate::db::lazyfree::Reason::ServerDel);
    let has_ttl = spec.expire_at.is_some();
    drop(shard);
    if spec.cond.is_some() {
        // Recorded without the condition (and GET), which held here: the
        // plain SET that Redis 7.0 replicas and AOF readers know.
        let ms = spec
            .expire_at
            .map(|at| itoa::Buffer::new().format(at).to_string());
        let mut argv: Vec<&[u8]> = vec![b"SET", key, val];
        if let Some(ms) = &ms {
            argv.extend([&b"PXAT"[..], ms.as_bytes()]);
        } else if spec.keepttl {
            argv.push(b"KEEPTTL");
        }
        crate::propagate::rewrite(&argv);
    } else if spec.as_pxat {
        if let Some(at) = spec.expire_at {
            let ms = itoa::Buffer::new().format(at).to_string();
            crate::propagate::rewrite(&[b"SET", key, val, b"PXAT", ms.as_bytes()]);
        }
    } else if let Some(args) = drop_get {
        // SET ... GET without an expiry is recorded without its GET words,
        // GETSET as SET (Redis 7.0.15's setGenericCommand / getsetCommand).
        if ctx.server.propagation.on() {
            let mut argv: Vec<&[u8]> = vec![b"SET", key, val];
            argv.extend(
                (3..args.len())
                    .map(|i| args.get(i))
                    .filter(|a| !a.eq_ignore_ascii_case(b"get")),
            );
            crate::propagate::rewrite(&argv);
        }
    }
    if !found {
        ctx.notify(key, NEW, "new");
    }
    ctx.modified(key, STRING, "set");
    if has_ttl {
        ctx.notify(key, GENERIC, "expire");
    }
    if !spec.get {
        if spec.int_reply {
            ctx.out.int(1);
        } else {
            ctx.out.ok();
        }
    }
}

/// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT unix-s|PXAT unix-ms|KEEPTTL]:
/// +OK, nil when NX/XX prevented the write, or with GET the old value (nil
/// when there was none). Check order as Redis: options (syntax error),
/// expire time, then GET's type check.
fn set(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Ok(o) = parse_ext(args, 3, ExtCmd::Set) else {
        return ctx.syntax();
    };
    let mut expire_at = None;
    if let Some((k, pos)) = o.expire {
        match expire_from_arg(ctx, k.unit_ms(), k.absolute(), args.get(pos), "set") {
            Some(at) => expire_at = Some(at),
            None => return,
        }
    }
    let spec = SetSpec {
        nx: o.nx,
        xx: o.xx,
        get: o.get,
        keepttl: o.keepttl,
        expire_at,
        int_reply: false,
        as_pxat: o.expire.is_some(),
        cond: o.cond.map(|(c, i)| (c, args.get(i))),
    };
    let drop_get = (o.get && o.expire.is_none()).then_some(args);
    set_generic(
        ctx,
        args.get(1),
        args.get(2),
        super::arg_str_value(args, 2),
        spec,
        drop_get,
    );
}

/// SETNX key value: :1 when set, :0 when the key already existed.
fn setnx(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let spec = SetSpec {
        nx: true,
        xx: false,
        get: false,
        keepttl: false,
        expire_at: None,
        int_reply: true,
        as_pxat: false,
        cond: None,
    };
    set_generic(
        ctx,
        args.get(1),
        args.get(2),
        super::arg_str_value(args, 2),
        spec,
        None,
    );
}

/// SETEX / PSETEX key ttl value (seconds / milliseconds): +OK; errors as
/// SET's EX / PX, naming the command.
fn set_with_ttl(ctx: &mut Ctx<'_>, args: &Args<'_>, unit_ms: bool, name: &str) {
    let Some(at) = expire_from_arg(ctx, unit_ms, false, args.get(2), name) else {
        return;
    };
    let spec = SetSpec {
        nx: false,
        xx: false,
        get: false,
        keepttl: false,
        expire_at: Some(at),
        int_reply: false,
        as_pxat: true,
        cond: None,
    };
    set_generic(
        ctx,
        args.get(1),
        args.get(3),
        super::arg_str_value(args, 3),
        spec,
        None,
    );
}

/// SETEX key seconds value.
fn setex(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    set_with_ttl(ctx, args, false, "setex");
}

/// PSETEX key milliseconds value.
fn psetex(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    set_with_ttl(ctx, args, true, "psetex");
}

/// GETSET key value: the old value (nil when none, WRONGTYPE without
/// writing for other types), then stores `value` without TTL.
fn getset(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let spec = SetSpec {
        nx: false,
        xx: false,
        get: true,
        keepttl: false,
        expire_at: None,
        int_reply: false,
        as_pxat: false,
        cond: None,
    };
    set_generic(
        ctx,
        args.get(1),
        args.get(2),
        super::arg_str_value(args, 2),
        spec,
        Some(args),
    );
}

/// GETDEL key: the value (nil when missing), then deletes the key.
fn getdel(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    match shard.get(h, key, ctx.now) {
        None => {
            drop(shard);
            ctx.hit(key, false);
            ctx.out.null();
        }
        Some(e) => {
            match &e.value {
                Value::Str(s) => reply_str(ctx.out, s),
                #[allow(unreachable_patterns)]
                _ => {
                    drop(shard);
                    ctx.hit(key, true);
                    return ctx.wrongtype();
                }
            }
            shard.remove(h, key);
            drop(shard);
            ctx.hit(key, true);
            ctx.modified(key, GENERIC, "del");
            crate::propagate::rewrite(&[b"DEL", key]);
        }
    }
}

/// GETEX key [EX s|PX ms|EXAT unix-s|PXAT unix-ms|PERSIST]: the value (nil
/// when missing, before any expire check), then applies the option: a new
/// TTL, PERSIST removes it, no option leaves it. Check order as Redis:
/// options (syntax error), key lookup, type, expire time. An EXAT/PXAT time
/// already past deletes the key.
fn getex(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Ok(o) = parse_ext(args, 2, ExtCmd::GetEx) else {
        return ctx.syntax();
    };
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let t = ctx.touch_time();
    let now = ctx.now;
    let Some(e) = shard.get(h, key, now) else {
        drop(shard);
        ctx.hit(key, false);
        return ctx.out.null();
    };
    touch(e, t);
    #[allow(irrefutable_let_patterns)]
    let Value::Str(_) = &e.value
    else {
        drop(shard);
        ctx.hit(key, true);
        return ctx.wrongtype();
    };
    let mut at = 0;
    if let Some((k, pos)) = o.expire {
        match expire_from_arg(ctx, k.unit_ms(), k.absolute(), args.get(pos), "getex") {
            Some(v) => at = v,
            None => {
                drop(shard);
                ctx.hit(key, true);
                return;
            }
        }
    }
    if let Some(Entry {
        value: Value::Str(s),
        ..
    }) = shard.get(h, key, now)
    {
        reply_str(ctx.out, s);
    }
    // Never recorded as GETEX: as PEXPIREAT, DEL or PERSIST, as Redis
    // 7.0.15's getexCommand.
    match o.expire {
        Some((k, _)) if k.absolute() && at <= now => {
            shard.remove(h, key);
            ctx.modified(key, GENERIC, "del");
            crate::propagate::rewrite(&[b"DEL", key]);
        }
        Some(_) => {
            shard.set_expire(h, key, at);
            ctx.modified(key, GENERIC, "expire");
            let ms = itoa::Buffer::new().format(at).to_string();
            crate::propagate::rewrite(&[b"PEXPIREAT", key, ms.as_bytes()]);
        }
        None if o.persist && shard.get(h, key, now).is_some() && shard.expire_at(h, key) != 0 => {
            shard.set_expire(h, key, 0);
            ctx.modified(key, GENERIC, "persist");
            crate::propagate::rewrite(&[b"PERSIST", key]);
        }
        None => {}
    }
    drop(shard);
    ctx.hit(key, true);
}

// ---------------------------------------------------------------- multi-key

/// (db, hash) of every `step`-th argument from `from` up to `to`
/// (exclusive): the shards a multi-key command locks together.
fn key_hashes(
    ctx: &Ctx<'_>,
    args: &Args<'_>,
    from: usize,
    to: usize,
    step: usize,
) -> Vec<(usize, u64)> {
    let db = ctx.client.db;
    (from..to)
        .step_by(step)
        .map(|i| (db, hash_key(args.get(i))))
        .collect()
}

/// MGET key [key ...]: an array with each key's value, nil for missing keys
/// and for keys of another type. Atomic: all shards locked together.
fn mget(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let db = ctx.client.db;
    let hashes = key_hashes(ctx, args, 1, args.len(), 1);
    let mut locks = ctx.server.keyspace.lock_keys(&hashes);
    let t = ctx.touch_time();
    let (mut hits, mut misses) = (0, 0);
    ctx.out.array(hashes.len());
    for (i, &(_, h)) in hashes.iter().enumerate() {
        match locks.shard(db, h).get(h, args.get(i + 1), ctx.now) {
            None => {
                misses += 1;
                ctx.events().keymiss(db, args.get(i + 1));
                ctx.out.null();
            }
            Some(e) => {
                hits += 1;
                touch(e, t);
                match &e.value {
                    Value::Str(s) => reply_str(ctx.out, s),
                    #[allow(unreachable_patterns)]
                    _ => ctx.out.null(),
                }
            }
        }
    }
    drop(locks);
    crate::stats::bump(&ctx.stats.hits, hits);
    crate::stats::bump(&ctx.stats.misses, misses);
}

/// MSET / MSETNX: an odd argument count (key without value) is a
/// wrong-number-of-arguments error naming the command.
fn mset_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, nx: bool) {
    if args.len().is_multiple_of(2) {
        let name = if nx { "msetnx" } else { "mset" };
        return ctx.error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
    }
    let spec = Pairs {
        nx,
        ..Pairs::default()
    };
    let set = set_pairs(ctx, args, 1, (args.len() - 1) / 2, spec);
    if nx {
        ctx.out.int(set as i64);
    } else {
        ctx.out.ok();
    }
}

/// How [`set_pairs`] stores its pairs.
#[derive(Default)]
struct Pairs {
    /// Nothing is stored when any key exists (MSETNX, MSETEX NX).
    nx: bool,
    /// Nothing is stored when any key is missing (MSETEX XX).
    xx: bool,
    /// Absolute expiry (ms) of every key; None: no TTL, or with
    /// `keepttl` each key keeps its own.
    expire_at: Option<u64>,
    keepttl: bool,
    /// Record each key as `SET key value [PXAT ms|KEEPTTL]` (MSETEX's
    /// rewrite for the AOF and replicas) instead of the command itself.
    rewrite: bool,
}

/// Stores the `n` key/value pairs at `args[first..]` atomically, their
/// shards locked together (MSET, MSETNX, MSETEX); a repeated key takes its
/// last value. Returns false, storing nothing, when `nx`/`xx` refuse. A
/// stale entry is expired first so expired_keys counts it, as Redis's
/// lookup inside setKey does. Events: `new`, `set`, and `expire` when a
/// TTL is given.
fn set_pairs(ctx: &mut Ctx<'_>, args: &Args<'_>, first: usize, n: usize, spec: Pairs) -> bool {
    let db = ctx.client.db;
    let hashes = key_hashes(ctx, args, first, first + 2 * n, 2);
    let mut locks = ctx.server.keyspace.lock_keys(&hashes);
    let now = ctx.now;
    if spec.nx || spec.xx {
        let refused = hashes.iter().enumerate().any(|(i, &(_, h))| {
            let found = locks
                .shard(db, h)
                .get(h, args.get(first + 2 * i), now)
                .is_some();
            found == spec.nx
        });
        if refused {
            return false;
        }
    }
    let pxat = spec
        .expire_at
        .map(|at| itoa::Buffer::new().format(at).to_string());
    let record = spec.rewrite && ctx.server.propagation.on();
    for (i, &(_, h)) in hashes.iter().enumerate() {
        let (key, val) = (args.get(first + 2 * i), args.get(first + 1 + 2 * i));
        let shard = locks.shard(db, h);
        shard.get(h, key, now);
        let at = match spec.expire_at {
            Some(at) => at,
            None if spec.keepttl => shard.expire_at(h, key),
            None => 0,
        };
        let entry = Entry::new(
            Value::Str(super::arg_str_value(args, first + 1 + 2 * i)),
            ctx.server.keyspace.lru.initial(now),
        );
        if shard.insert_with_expire(h, key, entry, at).is_none() {
            ctx.notify(key, NEW, "new");
        }
        ctx.modified(key, STRING, "set");
        if spec.expire_at.is_some() {
            ctx.notify(key, GENERIC, "expire");
        }
        if record {
            let mut argv: Vec<&[u8]> = vec![b"SET", key, val];
            if let Some(ms) = &pxat {
                argv.extend([&b"PXAT"[..], ms.as_bytes()]);
            } else if spec.keepttl {
                argv.push(b"KEEPTTL");
            }
            crate::propagate::rewrite_more(&argv);
        }
    }
    true
}

/// MSETEX numkeys key value [key value ...] [NX|XX] [EX s|PX ms|EXAT
/// unix-s|PXAT unix-ms|KEEPTTL] (Redis 8.4, Valkey 9.1): sets every pair
/// atomically with one shared expiry (KEEPTTL: each key keeps its own);
/// :1 when the keys were set, :0 when NX found a key or XX missed one
/// (then nothing is set). Errors in order: a `numkeys` that is not a
/// positive integer ("invalid numkeys value"), fewer pairs than it says
/// ("wrong number of key-value pairs"), options as SET's without GET
/// ("syntax error"), the expire time ("invalid expire time in 'msetex'
/// command"). Recorded as one `SET key value [PXAT ms|KEEPTTL]` per key
/// (in MULTI/EXEC), which Redis 7.0 replicas and AOF readers know.
pub(super) fn msetex(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let n = match crate::util::parse_i64(args.get(1)) {
        Some(n) if (1..=i32::MAX as i64).contains(&n) => n as usize,
        _ => return ctx.error("ERR invalid numkeys value"),
    };
    if 2 + 2 * n > args.len() {
        return ctx.error("ERR wrong number of key-value pairs");
    }
    let Ok(o) = parse_ext(args, 2 + 2 * n, ExtCmd::MSetEx) else {
        return ctx.syntax();
    };
    let mut expire_at = None;
    if let Some((k, pos)) = o.expire {
        match expire_from_arg(ctx, k.unit_ms(), k.absolute(), args.get(pos), "msetex") {
            Some(at) => expire_at = Some(at),
            None => return,
        }
    }
    let spec = Pairs {
        nx: o.nx,
        xx: o.xx,
        expire_at,
        keepttl: o.keepttl,
        rewrite: true,
    };
    let set = set_pairs(ctx, args, 2, n, spec);
    ctx.out.int(set as i64);
}

/// MSET key value [key value ...]: +OK; every key set atomically, TTLs
/// dropped, a repeated key takes its last value.
fn mset(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    mset_generic(ctx, args, false);
}

/// MSETNX key value [key value ...]: :1 and sets all keys when none exists,
/// else :0 and sets nothing.
fn msetnx(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    mset_generic(ctx, args, true);
}

// ---------------------------------------------------------------- APPEND / STRLEN

/// APPEND key value: the new length. A missing key is created with `value`
/// encoded as SET does; an existing one becomes `raw`. Refused with
/// "string exceeds maximum allowed size (proto-max-bulk-len)" when the
/// result would exceed proto-max-bulk-len.
fn append(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let add = args.get(2);
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now;
    let t = ctx.touch_time();
    let Some(e) = shard.get(h, key, now) else {
        shard.insert(
            h,
            key,
            Entry::new(
                Value::Str(super::arg_str_value(args, 2)),
                ctx.server.keyspace.lru.initial(now),
            ),
        );
        drop(shard);
        ctx.notify(key, NEW, "new");
        ctx.modified(key, STRING, "append");
        return ctx.out.int(add.len() as i64);
    };
    touch(e, t);
    #[allow(unreachable_patterns)]
    let s = match &mut e.value {
        Value::Str(s) => s,
        _ => {
            drop(shard);
            return ctx.wrongtype();
        }
    };
    if too_big(ctx, s.len() as u64, add.len() as u64) {
        drop(shard);
        return ctx.error(ERR_TOO_BIG);
    }
    let len = {
        let data = s.make_raw();
        data.extend_from_slice(add);
        data.len()
    };
    drop(shard);
    ctx.modified(key, STRING, "append");
    ctx.out.int(len as i64);
}

/// STRLEN key: the length of the value, 0 for a missing key.
fn strlen(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    match read_str(ctx, args.get(1), StrValue::len) {
        None => ctx.out.int(0),
        Some(Some(n)) => ctx.out.int(n as i64),
        Some(None) => ctx.wrongtype(),
    }
}

/// Looks `key` up for reading (`lookupKeyRead`: counts a hit or miss,
/// refreshes the LRU clock) and runs `f` on its string: None when the key
/// is missing, Some(None) when it holds another type (the caller replies
/// WRONGTYPE). The shard is unlocked before the hit is counted.
pub(super) fn read_str<R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    f: impl FnOnce(&StrValue) -> R,
) -> Option<Option<R>> {
    let (h, mut shard) = ctx.lock(key);
    let t = ctx.touch_time();
    let r = shard.get(h, key, ctx.now).map(|e| {
        touch(e, t);
        match &e.value {
            Value::Str(s) => Some(f(s)),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    });
    drop(shard);
    ctx.hit(key, r.is_some());
    r
}

// ---------------------------------------------------------------- counters

/// Redis's `incrDecrCommand`: adds `incr` to the integer at `key` (0 when
/// missing), keeping its TTL; replies the new value. Errors: WRONGTYPE, a
/// stored value that is not a canonical 64-bit integer ("ERR value is not an
/// integer or out of range"), overflow ("ERR increment or decrement would
/// overflow", value unchanged).
fn incr_decr(ctx: &mut Ctx<'_>, key: &[u8], incr: i64) {
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now;
    let t = ctx.touch_time();
    let Some(e) = shard.get(h, key, now) else {
        shard.insert(
            h,
            key,
            Entry::new(
                Value::Str(StrValue::Int(incr)),
                ctx.server.keyspace.lru.initial(now),
            ),
        );
        drop(shard);
        ctx.notify(key, NEW, "new");
        ctx.modified(key, STRING, "incrby");
        return ctx.out.int(incr);
    };
    touch(e, t);
    let old = match &e.value {
        Value::Str(StrValue::Int(n)) => Some(*n),
        Value::Str(other) => other.as_slice().and_then(crate::util::parse_i64),
        #[allow(unreachable_patterns)]
        _ => {
            drop(shard);
            return ctx.wrongtype();
        }
    };
    let Some(old) = old else {
        drop(shard);
        return ctx.not_int();
    };
    let Some(new) = old.checked_add(incr) else {
        drop(shard);
        return ctx.error(err::OVERFLOW);
    };
    e.value = Value::Str(StrValue::Int(new));
    drop(shard);
    ctx.modified(key, STRING, "incrby");
    ctx.out.int(new);
}

/// INCR key: +1.
fn incr(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    incr_decr(ctx, args.get(1), 1);
}

/// DECR key: -1.
fn decr(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    incr_decr(ctx, args.get(1), -1);
}

/// INCRBY key increment: the increment is parsed first (string2ll rules).
fn incrby(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(n) = super::arg_i64(ctx, args.get(2)) else {
        return;
    };
    incr_decr(ctx, args.get(1), n);
}

/// DECRBY key decrement: i64::MIN cannot be negated ("ERR decrement would
/// overflow").
fn decrby(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(n) = super::arg_i64(ctx, args.get(2)) else {
        return;
    };
    if n == i64::MIN {
        return ctx.error("ERR decrement would overflow");
    }
    incr_decr(ctx, args.get(1), -n);
}

/// INCRBYFLOAT key increment: the sum computed in C `long double` and
/// printed as Redis does (see [`crate::ldouble`]), stored as an `embstr` /
/// `raw` string keeping the key's TTL, replied as a bulk string. Errors:
/// WRONGTYPE, "ERR value is not a valid float" (stored value or increment),
/// "ERR increment would produce NaN or Infinity"; nothing is written then.
fn incrbyfloat(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now;
    let t = ctx.touch_time();
    let mut digits = itoa::Buffer::new();
    let entry = shard.get(h, key, now);
    let result = match entry {
        None => crate::ldouble::incr_by_float(b"0", args.get(2)),
        Some(ref e) => match &e.value {
            Value::Str(s) => crate::ldouble::incr_by_float(s.as_bytes(&mut digits), args.get(2)),
            #[allow(unreachable_patterns)]
            _ => {
                drop(shard);
                return ctx.wrongtype();
            }
        },
    };
    let sum = match result {
        Ok(v) => v,
        Err(crate::ldouble::FloatError::NanOrInf) => {
            drop(shard);
            return ctx.error("ERR increment would produce NaN or Infinity");
        }
        Err(_) => {
            drop(shard);
            return ctx.error(err::NOT_FLOAT);
        }
    };
    // Recorded as SET key <result> KEEPTTL, so float formatting cannot
    // differ on replay (Redis's incrbyfloatCommand).
    crate::propagate::rewrite(&[b"SET", key, &sum, b"KEEPTTL"]);
    match entry {
        Some(e) => {
            touch(e, t);
            ctx.out.bulk(&sum);
            e.value = Value::Str(plain_string(sum));
        }
        None => {
            ctx.out.bulk(&sum);
            shard.insert(
                h,
                key,
                Entry::new(
                    Value::Str(plain_string(sum)),
                    ctx.server.keyspace.lru.initial(now),
                ),
            );
            ctx.notify(key, NEW, "new");
        }
    }
    ctx.modified(key, STRING, "incrbyfloat");
}

// ---------------------------------------------------------------- ranges

/// GETRANGE / SUBSTR key start end: the inclusive byte range, negative
/// indexes counting from the end, clamped to the string; "" when empty or
/// the key is missing. Start and end are parsed before the key is looked up.
fn getrange(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(start) = super::arg_i64(ctx, args.get(2)) else {
        return;
    };
    let Some(end) = super::arg_i64(ctx, args.get(3)) else {
        return;
    };
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let t = ctx.touch_time();
    let Some(e) = shard.get(h, key, ctx.now) else {
        drop(shard);
        ctx.hit(key, false);
        return ctx.out.bulk(b"");
    };
    touch(e, t);
    let mut digits = itoa::Buffer::new();
    #[allow(unreachable_patterns)]
    let s = match &e.value {
        Value::Str(s) => s.as_bytes(&mut digits),
        _ => {
            drop(shard);
            ctx.hit(key, true);
            return ctx.wrongtype();
        }
    };
    match byte_range(s.len(), start, end) {
        Some((a, b)) => ctx.out.bulk(&s[a..=b]),
        None => ctx.out.bulk(b""),
    }
    drop(shard);
    ctx.hit(key, true);
}

/// GETRANGE's index arithmetic: the inclusive range [a, b] of a string of
/// `len` bytes selected by `start`/`end`, or None when it is empty.
pub fn byte_range(len: usize, start: i64, end: i64) -> Option<(usize, usize)> {
    if start < 0 && end < 0 && start > end {
        return None;
    }
    let len_i = len as i64;
    let mut start = if start < 0 { len_i + start } else { start };
    let mut end = if end < 0 { len_i + end } else { end };
    start = start.max(0);
    end = end.max(0);
    if len == 0 {
        return None;
    }
    if end >= len_i {
        end = len_i - 1;
    }
    if start > end {
        return None;
    }
    Some((start as usize, end as usize))
}

/// SETRANGE key offset value: overwrites from `offset`, zero-padding a
/// shorter string, and replies the new length; the key becomes `raw`. An
/// empty `value` changes nothing (replies the current length, 0 and no key
/// when missing). Errors in Redis's order: offset not an integer, offset < 0
/// ("ERR offset is out of range"), WRONGTYPE, offset + length above
/// proto-max-bulk-len.
fn setrange(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(offset) = super::arg_i64(ctx, args.get(2)) else {
        return;
    };
    if offset < 0 {
        return ctx.error("ERR offset is out of range");
    }
    let offset = offset as u64;
    let key = args.get(1);
    let v = args.get(3);
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now;
    let t = ctx.touch_time();
    let Some(e) = shard.get(h, key, now) else {
        if v.is_empty() {
            drop(shard);
            return ctx.out.int(0);
        }
        if too_big(ctx, offset, v.len() as u64) {
            drop(shard);
            return ctx.error(ERR_TOO_BIG);
        }
        let off = offset as usize;
        let mut data = vec![0u8; off + v.len()];
        data[off..].copy_from_slice(v);
        let n = data.len();
        shard.insert(
            h,
            key,
            Entry::new(
                Value::Str(StrValue::raw(data)),
                ctx.server.keyspace.lru.initial(now),
            ),
        );
        drop(shard);
        ctx.notify(key, NEW, "new");
        ctx.modified(key, STRING, "setrange");
        return ctx.out.int(n as i64);
    };
    touch(e, t);
    #[allow(unreachable_patterns)]
    let s = match &mut e.value {
        Value::Str(s) => s,
        _ => {
            drop(shard);
            return ctx.wrongtype();
        }
    };
    if v.is_empty() {
        let n = s.len();
        drop(shard);
        return ctx.out.int(n as i64);
    }
    if too_big(ctx, offset, v.len() as u64) {
        drop(shard);
        return ctx.error(ERR_TOO_BIG);
    }
    let off = offset as usize;
    let mut data = std::mem::replace(s, StrValue::Int(0)).into_vec();
    if data.len() < off + v.len() {
        data.resize(off + v.len(), 0);
    }
    data[off..off + v.len()].copy_from_slice(v);
    let n = data.len();
    *s = StrValue::raw(data);
    drop(shard);
    ctx.modified(key, STRING, "setrange");
    ctx.out.int(n as i64);
}

// ---------------------------------------------------------------- LCS

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]: the longest
/// common subsequence of two strings (missing keys are empty strings).
/// Without options: the subsequence as a bulk string; LEN: its length; IDX:
/// a map {matches: [[[a0,a1],[b0,b1](,len)]...], len: n} listing matched
/// ranges from the end, filtered by MINMATCHLEN. Check order as Redis 7.0:
/// both keys' types ("ERR The specified keys must contain string values"),
/// options (syntax error / not an integer), LEN with IDX.
fn lcs(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let db = ctx.client.db;
    let ka = args.get(1);
    let kb = args.get(2);
    let hashes = [(db, hash_key(ka)), (db, hash_key(kb))];
    let t = ctx.touch_time();
    let now = ctx.now;
    // Some(Some(bytes)) string, Some(None) other type, None missing.
    let fetch = |locks: &mut crate::db::KeyLocks<'_>, k: &[u8], h: u64| {
        locks.shard(db, h).get(h, k, now).map(|e| {
            touch(e, t);
            match &e.value {
                Value::Str(s) => Some(s.to_vec()),
                #[allow(unreachable_patterns)]
                _ => None,
            }
        })
    };
    let mut locks = ctx.server.keyspace.lock_keys(&hashes);
    let a = fetch(&mut locks, ka, hashes[0].1);
    let b = fetch(&mut locks, kb, hashes[1].1);
    drop(locks);
    ctx.hit(ka, a.is_some());
    ctx.hit(kb, b.is_some());
    let (a, b) = match (a, b) {
        (Some(None), _) | (_, Some(None)) => {
            return ctx.error("ERR The specified keys must contain string values")
        }
        (a, b) => (
            a.flatten().unwrap_or_default(),
            b.flatten().unwrap_or_default(),
        ),
    };
    let (mut getlen, mut getidx, mut withmatchlen) = (false, false, false);
    let mut minmatchlen: i64 = 0;
    let mut j = 3;
    while j < args.len() {
        let opt = args.get(j);
        let more = j + 1 < args.len();
        if opt_is(opt, b"idx") {
            getidx = true;
        } else if opt_is(opt, b"len") {
            getlen = true;
        } else if opt_is(opt, b"withmatchlen") {
            withmatchlen = true;
        } else if opt_is(opt, b"minmatchlen") && more {
            let Some(n) = super::arg_i64(ctx, args.get(j + 1)) else {
                return;
            };
            minmatchlen = n.max(0);
            j += 1;
        } else {
            return ctx.syntax();
        }
        j += 1;
    }
    if getidx && getlen {
        return ctx.error("ERR If you want both the length and indexes, please just use IDX.");
    }
    if a.len() >= u32::MAX as usize - 1 || b.len() >= u32::MAX as usize - 1 {
        return ctx.error("ERR String too long for LCS");
    }
    // Redis 7.0.15's lcsCommand: the (len(a)+1) x (len(b)+1) table of u32
    // is refused above proto-max-bulk-len (a huge table would be granted
    // by overcommit and kill the process when touched), or when it cannot
    // be allocated.
    let cells = (a.len() as u64 + 1) * (b.len() as u64 + 1);
    let max = ctx.server.live.proto_max_bulk_len.load(Ordering::Relaxed);
    if cells.saturating_mul(4) > max {
        return ctx
            .error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    }
    let Some(table) = LcsTable::build(&a, &b) else {
        return ctx.error("ERR Insufficient memory, failed allocating transient memory for LCS");
    };
    let total = table.at(a.len(), b.len());
    if getlen {
        return ctx.out.int(total as i64);
    }
    let (seq, ranges) = table.walk(&a, &b, getidx, minmatchlen as u64);
    if !getidx {
        return ctx.out.bulk(&seq);
    }
    ctx.out.map(2);
    ctx.out.bulk(b"matches");
    ctx.out.array(ranges.len());
    for r in &ranges {
        ctx.out.array(if withmatchlen { 3 } else { 2 });
        ctx.out.array(2);
        ctx.out.int(r.a.0 as i64);
        ctx.out.int(r.a.1 as i64);
        ctx.out.array(2);
        ctx.out.int(r.b.0 as i64);
        ctx.out.int(r.b.1 as i64);
        if withmatchlen {
            ctx.out.int(r.len as i64);
        }
    }
    ctx.out.bulk(b"len");
    ctx.out.int(total as i64);
}

/// One matched range reported by LCS IDX: inclusive positions in each
/// string and the match length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LcsRange {
    /// (start, end) in the first string.
    pub a: (u32, u32),
    /// (start, end) in the second string.
    pub b: (u32, u32),
    /// end - start + 1.
    pub len: u32,
}

/// The dynamic-programming table of LCS lengths: cell (i, j) is the LCS
/// length of a[..i] and b[..j]; (len(a)+1) x (len(b)+1) u32 cells.
pub struct LcsTable {
    cells: Vec<u32>,
    width: usize,
}

impl LcsTable {
    /// Builds the table, or None when it cannot be allocated.
    pub fn build(a: &[u8], b: &[u8]) -> Option<LcsTable> {
        let width = b.len() + 1;
        let size = (a.len() + 1).checked_mul(width)?;
        size.checked_mul(4)?;
        let mut cells: Vec<u32> = Vec::new();
        cells.try_reserve_exact(size).ok()?;
        cells.resize(size, 0);
        for i in 1..=a.len() {
            for j in 1..=b.len() {
                let v = if a[i - 1] == b[j - 1] {
                    cells[(i - 1) * width + j - 1] + 1
                } else {
                    cells[(i - 1) * width + j].max(cells[i * width + j - 1])
                };
                cells[i * width + j] = v;
            }
        }
        Some(LcsTable { cells, width })
    }

    /// The LCS length of a[..i] and b[..j].
    #[inline]
    pub fn at(&self, i: usize, j: usize) -> u32 {
        self.cells[i * self.width + j]
    }

    /// Walks back from the end as Redis does, returning the subsequence and,
    /// when `ranges` is set, the matched ranges of at least `minmatchlen`
    /// (0 = all). Redis's walk closes a range when the next match is not
    /// contiguous (that match then starts no range of its own), when the
    /// walk leaves the diagonal, or when a range reaches the start of either
    /// string; the ranges reported are exactly those.
    pub fn walk(
        &self,
        a: &[u8],
        b: &[u8],
        ranges: bool,
        minmatchlen: u64,
    ) -> (Vec<u8>, Vec<LcsRange>) {
        let alen = a.len();
        let mut idx = self.at(a.len(), b.len()) as usize;
        let mut seq = vec![0u8; idx];
        let mut out = Vec::new();
        let (mut i, mut j) = (a.len(), b.len());
        // `alen` as range start means "no range open".
        let (mut as_, mut ae, mut bs, mut be) = (alen, 0usize, 0usize, 0usize);
        while i > 0 && j > 0 {
            let mut emit = false;
            if a[i - 1] == b[j - 1] {
                seq[idx - 1] = a[i - 1];
                if as_ == alen {
                    as_ = i - 1;
                    ae = i - 1;
                    bs = j - 1;
                    be = j - 1;
                } else if as_ == i && bs == j {
                    as_ -= 1;
                    bs -= 1;
                } else {
                    emit = true;
                }
                if as_ == 0 || bs == 0 {
                    emit = true;
                }
                idx -= 1;
                i -= 1;
                j -= 1;
            } else {
                if self.at(i - 1, j) > self.at(i, j - 1) {
                    i -= 1;
                } else {
                    j -= 1;
                }
                if as_ != alen {
                    emit = true;
                }
            }
            if emit {
                // Redis computes this in u32 arithmetic.
                let len = (ae as u32).wrapping_sub(as_ as u32).wrapping_add(1);
                if ranges && (minmatchlen == 0 || len as u64 >= minmatchlen) {
                    out.push(LcsRange {
                        a: (as_ as u32, ae as u32),
                        b: (bs as u32, be as u32),
                        len,
                    });
                }
                as_ = alen;
            }
        }
        (seq, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::new_handle;
    use crate::cmd::client::Client;
    use crate::config::Config;
    use crate::resp::OwnedArgs;
    use crate::server::Server;
    use std::sync::Arc;

    /// An in-process server and one client: runs commands through
    /// `cmd::execute` and inspects the keyspace directly.
    struct Rig {
        server: Arc<Server>,
        client: Client,
        resp3: bool,
    }

    impl Rig {
        fn new() -> Rig {
            crate::cmd::init();
            let server = Server::new(Config::default(), 1);
            let h = new_handle(
                &server.clients,
                server.clock.now_ms(),
                "test:1".into(),
                "test:0".into(),
                -1,
                false,
            );
            let mut client = Client::new(h);
            client.authenticated = true;
            Rig {
                server,
                client,
                resp3: false,
            }
        }

        fn run(&mut self, args: &[&[u8]]) -> String {
            let mut o = OwnedArgs::default();
            for a in args {
                o.push(a);
            }
            let mut out = Out::new();
            out.resp3 = self.resp3;
            let stats = self.server.stats.local(super::super::table().all.len());
            super::super::execute(&self.server, &mut self.client, &mut out, &o.args(), &stats);
            String::from_utf8_lossy(&out.buf).into_owned()
        }

        fn line(&mut self, l: &str) -> String {
            let parts: Vec<&[u8]> = l.split_whitespace().map(str::as_bytes).collect();
            self.run(&parts)
        }

        fn entry(&self, key: &str) -> Option<Entry> {
            let h = hash_key(key.as_bytes());
            let shard = self.server.keyspace.db(0).lock(h);
            shard
                .peek(h, key.as_bytes(), crate::util::now_ms())
                .cloned()
        }

        fn enc(&self, key: &str) -> &'static str {
            self.entry(key)
                .map(|e| e.value.encoding())
                .unwrap_or("none")
        }

        fn ttl(&self, key: &str) -> u64 {
            let h = hash_key(key.as_bytes());
            let shard = self.server.keyspace.db(0).lock(h);
            match shard.peek(h, key.as_bytes(), crate::util::now_ms()) {
                Some(_) => shard.expire_at(h, key.as_bytes()),
                None => u64::MAX,
            }
        }

        fn hits_misses(&self) -> (u64, u64) {
            let st = self.server.stats.local(super::super::table().all.len());
            (
                st.hits.load(Ordering::Relaxed),
                st.misses.load(Ordering::Relaxed),
            )
        }
    }

    #[test]
    fn encodings_follow_redis() {
        let mut r = Rig::new();
        r.line("SET i 123");
        assert_eq!(r.enc("i"), "int");
        r.line("SET s hello");
        assert_eq!(r.enc("s"), "embstr");
        r.run(&[b"SET", b"l", &[b'x'; 45]]);
        assert_eq!(r.enc("l"), "raw");
        r.run(&[b"SET", b"e", &[b'x'; 44]]);
        assert_eq!(r.enc("e"), "embstr");
        r.line("APPEND s !");
        assert_eq!(r.enc("s"), "raw");
        r.line("APPEND n 12");
        assert_eq!(r.enc("n"), "int");
        r.line("APPEND i 4");
        assert_eq!(r.enc("i"), "raw");
        r.line("INCR i");
        assert_eq!(r.enc("i"), "int");
        r.line("SETRANGE r 0 ab");
        assert_eq!(r.enc("r"), "raw");
        r.line("SET f 1");
        assert_eq!(r.line("INCRBYFLOAT f 1"), "$1\r\n2\r\n");
        assert_eq!(r.enc("f"), "embstr");
        r.line("SET f 1e50");
        r.line("INCRBYFLOAT f 1");
        assert_eq!(r.enc("f"), "raw");
        r.line("MSET m1 7 m2 x");
        assert_eq!((r.enc("m1"), r.enc("m2")), ("int", "embstr"));
        r.line("SET z 01");
        assert_eq!(r.enc("z"), "embstr");
    }

    #[test]
    fn ttl_kept_or_dropped() {
        let mut r = Rig::new();
        let now = crate::util::now_ms();
        r.line("SET k 1 PX 100000");
        let t = r.ttl("k");
        assert!(t > now && t <= now + 100_000 + 1000);
        r.line("INCR k");
        r.line("INCRBYFLOAT k 1.5");
        r.line("APPEND k x");
        r.line("SETRANGE k 0 9");
        assert_eq!(r.ttl("k"), t);
        r.line("SET k v KEEPTTL");
        assert_eq!(r.ttl("k"), t);
        r.line("GETEX k");
        assert_eq!(r.ttl("k"), t);
        r.line("GETEX k PERSIST");
        assert_eq!(r.ttl("k"), 0);
        r.line("GETEX k EXAT 4000000000");
        assert_eq!(r.ttl("k"), 4_000_000_000_000);
        r.line("SET k v");
        assert_eq!(r.ttl("k"), 0);
        r.line("SETEX k 100 v");
        assert!(r.ttl("k") > now);
        r.line("GETSET k w");
        assert_eq!(r.ttl("k"), 0);
        r.line("PSETEX k 100000 v");
        r.line("MSET k v");
        assert_eq!(r.ttl("k"), 0);
        assert_eq!(r.line("GETEX k PXAT 1"), "$1\r\nv\r\n");
        assert!(r.entry("k").is_none());
    }

    #[test]
    fn hits_and_misses() {
        let mut r = Rig::new();
        r.line("SET a 1");
        let base = r.hits_misses();
        r.line("GET a");
        r.line("GET b");
        r.line("MGET a b c");
        r.line("STRLEN a");
        r.line("GETRANGE b 0 1");
        r.line("LCS a b");
        r.line("SET a 2 GET");
        r.line("INCR a");
        r.line("APPEND a 1");
        let (h, m) = r.hits_misses();
        assert_eq!((h - base.0, m - base.1), (5, 5));
    }

    #[test]
    fn no_touch_leaves_lru() {
        let mut r = Rig::new();
        r.line("SET a 1");
        {
            let h = hash_key(b"a");
            let mut sh = r.server.keyspace.db(0).lock(h);
            sh.get(h, b"a", 0).unwrap().lru = 5;
        }
        r.client.no_touch = true;
        r.line("GET a");
        r.line("INCR a");
        assert_eq!(r.entry("a").unwrap().lru, 5);
        r.client.no_touch = false;
        r.line("GET a");
        assert!(r.entry("a").unwrap().lru > 5);
    }

    #[test]
    fn resp3_replies() {
        // Bytes captured from redis-server 7.0.15 after HELLO 3.
        let mut r = Rig::new();
        r.resp3 = true;
        r.line("MSET k1 ohmytext k2 mynewtext");
        assert_eq!(
            r.line("LCS k1 k2 IDX WITHMATCHLEN"),
            "%2\r\n$7\r\nmatches\r\n*2\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n\
             *3\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n:2\r\n$3\r\nlen\r\n:6\r\n"
        );
        assert_eq!(r.line("GETEX nokey"), "_\r\n");
        assert_eq!(r.line("MGET nokey k1"), "*2\r\n_\r\n$8\r\nohmytext\r\n");
        assert_eq!(r.line("SET k1 v XX GET"), "$8\r\nohmytext\r\n");
        assert_eq!(r.line("SET k9 v XX"), "_\r\n");
    }

    #[test]
    fn proto_max_bulk_len_limits() {
        let mut r = Rig::new();
        r.server
            .live
            .proto_max_bulk_len
            .store(10, Ordering::Relaxed);
        assert_eq!(r.line("SETRANGE k 8 abc"), format!("-{ERR_TOO_BIG}\r\n"));
        assert_eq!(r.line("SETRANGE k 7 abc"), ":10\r\n");
        assert_eq!(r.line("APPEND k x"), format!("-{ERR_TOO_BIG}\r\n"));
        assert_eq!(
            r.line("SETRANGE k 9223372036854775807 a"),
            format!("-{ERR_TOO_BIG}\r\n")
        );
        assert_eq!(r.line("SETRANGE k -1 a"), "-ERR offset is out of range\r\n");
    }

    #[test]
    fn ranges() {
        assert_eq!(byte_range(5, 0, -1), Some((0, 4)));
        assert_eq!(byte_range(5, -10, -20), None);
        assert_eq!(byte_range(5, -20, -10), Some((0, 0)));
        assert_eq!(byte_range(5, 3, 100), Some((3, 4)));
        assert_eq!(byte_range(5, 4, 3), None);
        assert_eq!(byte_range(0, 0, -1), None);
        assert_eq!(byte_range(5, i64::MIN, i64::MAX), Some((0, 4)));
        assert_eq!(byte_range(5, i64::MAX, i64::MIN), None);
    }

    #[test]
    fn lcs_walk() {
        let a = b"ohmytext";
        let b = b"mynewtext";
        let t = LcsTable::build(a, b).unwrap();
        assert_eq!(t.at(a.len(), b.len()), 6);
        let (seq, r) = t.walk(a, b, true, 0);
        assert_eq!(seq, b"mytext");
        assert_eq!(
            r,
            vec![
                LcsRange {
                    a: (4, 7),
                    b: (5, 8),
                    len: 4
                },
                LcsRange {
                    a: (2, 3),
                    b: (0, 1),
                    len: 2
                },
            ]
        );
        let (_, r) = t.walk(a, b, true, 4);
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn options() {
        assert!(opt_is(b"NX", b"nx"));
        assert!(opt_is(b"nX\0junk", b"nx"));
        assert!(!opt_is(b"nxx", b"nx"));
    }
}
