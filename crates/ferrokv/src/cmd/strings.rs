//! String commands (redis.io/commands/?group=string), following t_string.c.

use super::{acl, cmd, err, flags::*, Command, Ctx};
use crate::db::{Entry, StrValue, Value};
use crate::resp::Args;

/// The string family's table entries.
pub static COMMANDS: &[Command] = &[
    cmd("get", 2, READONLY | FAST, (1, 1, 1), acl::STRING, get).doc(
        "string",
        "1.0.0",
        "Get the value of a key",
        "O(1)",
    ),
    cmd("set", -3, WRITE | DENYOOM, (1, 1, 1), acl::STRING, set).doc(
        "string",
        "1.0.0",
        "Set the string value of a key",
        "O(1)",
    ),
];

/// GET key: the value, nil when missing, WRONGTYPE for other types.
fn get(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let (h, mut shard) = ctx.lock(key);
    let touch = ctx.touch_time();
    match shard.get(h, key, ctx.now) {
        None => {
            drop(shard);
            ctx.hit(false);
            ctx.out.null();
        }
        Some(e) => {
            if let Some(t) = touch {
                e.lru = t;
            }
            match &e.value {
                Value::Str(StrValue::Int(n)) => ctx.out.bulk_int(*n),
                Value::Str(StrValue::Bytes { data, .. }) => ctx.out.bulk(data),
                #[allow(unreachable_patterns)]
                _ => {
                    drop(shard);
                    return ctx.wrongtype();
                }
            }
            drop(shard);
            ctx.hit(true);
        }
    }
}

/// Expiry option of SET / GETEX.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ExpireOpt {
    /// No option.
    None,
    /// Absolute ms timestamp.
    At(u64),
    /// KEEPTTL.
    Keep,
    /// PERSIST (GETEX only).
    Persist,
}

/// Parses SET's EX/PX/EXAT/PXAT value into an absolute ms time, with
/// Redis's errors ("invalid expire time in 'set' command" for <= 0 or
/// overflow).
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
    let bad =
        |ctx: &mut Ctx<'_>| ctx.error(&format!("ERR invalid expire time in '{cmdname}' command"));
    if v <= 0 {
        bad(ctx);
        return None;
    }
    let ms = if unit_ms {
        Some(v)
    } else {
        v.checked_mul(1000)
    };
    let Some(ms) = ms else {
        bad(ctx);
        return None;
    };
    let at = if absolute {
        Some(ms)
    } else {
        ms.checked_add(ctx.now as i64)
    };
    match at {
        Some(at) if at > 0 => Some(at as u64),
        _ => {
            bad(ctx);
            None
        }
    }
}

/// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ms-ts|KEEPTTL].
fn set(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let (mut nx, mut xx, mut get) = (false, false, false);
    let mut exp = ExpireOpt::None;
    let mut i = 3;
    let mut exp_arg: Option<(bool, bool, usize)> = None;
    while i < args.len() {
        let a = args.get(i);
        let next = i + 1 < args.len();
        if a.eq_ignore_ascii_case(b"nx") && !xx {
            nx = true;
        } else if a.eq_ignore_ascii_case(b"xx") && !nx {
            xx = true;
        } else if a.eq_ignore_ascii_case(b"get") {
            get = true;
        } else if a.eq_ignore_ascii_case(b"keepttl") && exp_arg.is_none() && exp == ExpireOpt::None
        {
            exp = ExpireOpt::Keep;
        } else if exp_arg.is_none() && exp == ExpireOpt::None && next {
            let spec = if a.eq_ignore_ascii_case(b"ex") {
                (false, false)
            } else if a.eq_ignore_ascii_case(b"px") {
                (true, false)
            } else if a.eq_ignore_ascii_case(b"exat") {
                (false, true)
            } else if a.eq_ignore_ascii_case(b"pxat") {
                (true, true)
            } else {
                return ctx.syntax();
            };
            exp_arg = Some((spec.0, spec.1, i + 1));
            i += 1;
        } else {
            return ctx.syntax();
        }
        i += 1;
    }
    if let Some((ms, abs, pos)) = exp_arg {
        match expire_from_arg(ctx, ms, abs, args.get(pos), "set") {
            Some(at) => exp = ExpireOpt::At(at),
            None => return,
        }
    }
    let key = args.get(1);
    let val = StrValue::from_bytes(args.get(2));
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now;
    let existing = shard.get(h, key, now);
    if get {
        match existing.as_deref() {
            Some(Entry {
                value: Value::Str(_),
                ..
            })
            | None => {}
            #[allow(unreachable_patterns)]
            Some(_) => {
                drop(shard);
                return ctx.wrongtype();
            }
        }
    }
    let exists = existing.is_some();
    let old_ttl = existing.as_ref().map(|e| e.expire_at).unwrap_or(0);
    let old_val = if get {
        existing.map(|e| match &e.value {
            Value::Str(s) => s.to_vec(),
        })
    } else {
        None
    };
    if (nx && exists) || (xx && !exists) {
        drop(shard);
        if get {
            match old_val {
                Some(v) => ctx.out.bulk(&v),
                None => ctx.out.null(),
            }
        } else {
            ctx.out.null();
        }
        return;
    }
    let mut entry = Entry::new(Value::Str(val), now);
    entry.expire_at = match exp {
        ExpireOpt::At(at) => at,
        ExpireOpt::Keep => old_ttl,
        _ => 0,
    };
    if entry.expire_at != 0 && entry.expire_at <= now {
        shard.remove(h, key);
    } else {
        shard.insert(h, key, entry);
    }
    drop(shard);
    if get {
        match old_val {
            Some(v) => ctx.out.bulk(&v),
            None => ctx.out.null(),
        }
    } else {
        ctx.out.ok();
    }
}

#[allow(dead_code)]
const _: &str = err::SYNTAX;
