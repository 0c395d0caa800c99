//! Compare-and-set on strings, from releases after Redis 7.0: Redis 8.4's
//! `DIGEST`, `DELEX` and the `IFEQ`/`IFNE`/`IFDEQ`/`IFDNE` conditions of
//! `SET` (Valkey 8.1 has `SET ... IFEQ` with the same meaning), Valkey
//! 9.0's `DELIFEQ`, and `MSETEX` (Redis 8.4, Valkey 9.1).
//!
//! A value's *digest* is the XXH3 64-bit hash (seed 0) of its bytes (an
//! integer-encoded string hashes its decimal text), written as 16 lowercase
//! hexadecimal digits with leading zeros (redis.io/commands/digest; Redis's
//! `stringDigest`). A digest given by a client must be exactly 16
//! characters long and is compared without regard to case; only its length
//! is checked, as in Redis 8.4 (`validateHexDigest`).
//!
//! These commands are recorded for the AOF and replicas as Redis 7.0
//! commands (`SET`, `DEL`), so a redis-server 7.0 replica or AOF reader
//! follows them.

use super::{acl, cmd, flags::*, Command, Ctx};
use crate::db::{StrValue, Value};
use crate::events::GENERIC;
use crate::keyspecs;
use crate::resp::Args;

/// The compare-and-set family's table entries (arity, flags, key specs,
/// ACL categories and docs as the releases that added them report).
pub static COMMANDS: &[Command] = &[
    cmd("digest", 2, READONLY | FAST, (1, 1, 1), acl::STRING, digest)
        .key_specs(keyspecs::DUMP)
        .doc(
            "string",
            "8.4.0",
            "Returns the XXH3 hash of a string value.",
            "O(N) where N is the length of the string value.",
        ),
    cmd("delex", -2, WRITE | FAST, (1, 1, 1), acl::STRING, delex)
        .key_specs(keyspecs::DELEX)
        .key_finder(keyspecs::delex_keys)
        .doc(
            "string",
            "8.4.0",
            "Conditionally removes the specified key based on value or digest comparison.",
            "O(1) for IFEQ/IFNE, O(N) for IFDEQ/IFDNE where N is the length of the string value.",
        ),
    cmd("delifeq", 3, WRITE | FAST, (1, 1, 1), acl::STRING, delifeq)
        .key_specs(keyspecs::DELEX)
        .doc(
            "string",
            "9.0.0",
            "Delete key if value matches string.",
            "O(1)",
        ),
    cmd("msetex", -4, WRITE | DENYOOM | MOVABLE_KEYS, (0, 0, 0), acl::STRING, super::strings::msetex)
        .key_specs(keyspecs::MSETEX)
        .key_finder(keyspecs::msetex_keys)
        .doc(
            "string",
            "8.4.0",
            "Atomically sets multiple string keys with a shared expiration in a single operation. Supports flexible argument parsing where condition and expiration flags can appear in any order.",
            "O(N) where N is the number of keys to set.",
        ),
];

/// Length of a digest in hexadecimal digits.
pub const DIGEST_HEX_LEN: usize = 16;

/// Error for a digest argument of the wrong length (Redis 8.4).
pub const ERR_DIGEST_LEN: &str = "ERR must be exactly 16 hexadecimal characters";

/// The digest of `bytes`: XXH3-64 (seed 0) as 16 lowercase hex digits.
pub fn digest_hex(bytes: &[u8]) -> [u8; DIGEST_HEX_LEN] {
    let h = xxhash_rust::xxh3::xxh3_64(bytes);
    let mut out = [0u8; DIGEST_HEX_LEN];
    for (i, o) in out.iter_mut().enumerate() {
        let nibble = (h >> (60 - 4 * i)) & 0xf;
        *o = b"0123456789abcdef"[nibble as usize];
    }
    out
}

/// The digest of a string value (its decimal text when integer-encoded).
pub fn value_digest(s: &StrValue) -> [u8; DIGEST_HEX_LEN] {
    let mut tmp = itoa::Buffer::new();
    digest_hex(s.as_bytes(&mut tmp))
}

/// A compare-and-set condition (the `IFEQ`, `IFNE`, `IFDEQ` and `IFDNE`
/// tokens of Redis 8.4's SET and DELEX).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Cond {
    /// `IFEQ v`: the value is exactly `v`.
    IfEq,
    /// `IFNE v`: the value is not `v`.
    IfNe,
    /// `IFDEQ d`: the value's digest is `d`.
    IfDEq,
    /// `IFDNE d`: the value's digest is not `d`.
    IfDNe,
}

impl Cond {
    /// The condition a token names (any case), or None.
    pub fn parse(token: &[u8]) -> Option<Cond> {
        [
            (&b"ifeq"[..], Cond::IfEq),
            (b"ifne", Cond::IfNe),
            (b"ifdeq", Cond::IfDEq),
            (b"ifdne", Cond::IfDNe),
        ]
        .into_iter()
        .find(|(t, _)| token.eq_ignore_ascii_case(t))
        .map(|(_, c)| c)
    }

    /// True when a missing key satisfies the condition (IFNE and IFDNE:
    /// SET creates the key; IFEQ and IFDEQ leave it absent).
    pub fn holds_when_missing(self) -> bool {
        matches!(self, Cond::IfNe | Cond::IfDNe)
    }

    /// True for the digest forms, whose argument must be 16 characters.
    pub fn is_digest(self) -> bool {
        matches!(self, Cond::IfDEq | Cond::IfDNe)
    }

    /// Checks the argument's shape: Err([`ERR_DIGEST_LEN`]) when a digest
    /// form's argument is not [`DIGEST_HEX_LEN`] characters long.
    pub fn check_arg(self, arg: &[u8]) -> Result<(), &'static str> {
        if self.is_digest() && arg.len() != DIGEST_HEX_LEN {
            Err(ERR_DIGEST_LEN)
        } else {
            Ok(())
        }
    }

    /// Whether the current value `s` satisfies the condition against
    /// `arg` (the digest compared without regard to case).
    pub fn holds(self, s: &StrValue, arg: &[u8]) -> bool {
        let mut tmp = itoa::Buffer::new();
        match self {
            Cond::IfEq => s.as_bytes(&mut tmp) == arg,
            Cond::IfNe => s.as_bytes(&mut tmp) != arg,
            Cond::IfDEq => value_digest(s).eq_ignore_ascii_case(arg),
            Cond::IfDNe => !value_digest(s).eq_ignore_ascii_case(arg),
        }
    }
}

/// DIGEST key: the value's digest as a bulk string, nil when the key does
/// not exist, WRONGTYPE for a non-string (redis.io/commands/digest).
fn digest(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    match super::strings::read_str(ctx, args.get(1), value_digest) {
        None => ctx.out.null(),
        Some(Some(d)) => ctx.out.bulk(&d),
        Some(None) => ctx.wrongtype(),
    }
}

/// What a conditional delete found.
enum Outcome {
    Missing,
    Deleted,
    Kept,
}

/// Deletes `key` when `keep` (given the value) says no: the shared body of
/// DELEX and DELIFEQ. `keep` returns Err(message) to refuse the request
/// with that error (the key stays). A deletion is recorded as `DEL key`
/// and emits the `del` event.
fn delete_if(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    keep: impl FnOnce(&Value) -> Result<bool, &'static str>,
) -> Result<Outcome, &'static str> {
    let (h, mut shard) = ctx.lock(key);
    let outcome = match shard.get(h, key, ctx.now) {
        None => Outcome::Missing,
        Some(e) => {
            if keep(&e.value)? {
                Outcome::Kept
            } else {
                shard.remove(h, key);
                Outcome::Deleted
            }
        }
    };
    drop(shard);
    if let Outcome::Deleted = outcome {
        crate::propagate::rewrite(&[b"DEL", key]);
        ctx.modified(key, GENERIC, "del");
    }
    Ok(outcome)
}

/// Replies a conditional delete's outcome: :1 deleted, :0 otherwise, or
/// the error it was refused with.
fn reply_delete(ctx: &mut Ctx<'_>, r: Result<Outcome, &'static str>) {
    match r {
        Ok(Outcome::Deleted) => ctx.out.int(1),
        Ok(Outcome::Missing | Outcome::Kept) => ctx.out.int(0),
        Err(e) => ctx.error(e),
    }
}

/// DELEX key [IFEQ v | IFNE v | IFDEQ d | IFDNE d] (Redis 8.4): :1 when
/// the key was deleted, :0 when it did not exist or the condition failed.
/// Without a condition it is DEL of one key of any type. Checks in Redis
/// 8.4's order: the argument count ("wrong number of arguments"), then
/// the key (a missing key is :0 whatever the condition), its type
/// ("Key should be of string type if conditions are specified"), the
/// condition's name ("Invalid condition. Use IFEQ, IFNE, IFDEQ, or
/// IFDNE") and a digest's length.
fn delex(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let key = args.get(1);
    let r = match args.len() {
        2 => delete_if(ctx, key, |_| Ok(false)),
        4 => {
            let (token, arg) = (args.get(2), args.get(3));
            delete_if(ctx, key, |v| {
                let Value::Str(s) = v else {
                    return Err("ERR Key should be of string type if conditions are specified");
                };
                let Some(c) = Cond::parse(token) else {
                    return Err("ERR Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE");
                };
                c.check_arg(arg)?;
                Ok(!c.holds(s, arg))
            })
        }
        _ => {
            return ctx.error("ERR wrong number of arguments for 'delex' command");
        }
    };
    reply_delete(ctx, r);
}

/// DELIFEQ key value (Valkey 9.0): :1 when the key held exactly `value`
/// and was deleted, :0 when it did not exist or held another value,
/// WRONGTYPE for a non-string (valkey.io/commands/delifeq).
fn delifeq(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let arg = args.get(2);
    let r = delete_if(ctx, args.get(1), |v| match v {
        Value::Str(s) => Ok(!Cond::IfEq.holds(s, arg)),
        #[allow(unreachable_patterns)]
        _ => Err(super::err::WRONGTYPE),
    });
    reply_delete(ctx, r);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Digests Redis 8.4's DIGEST gives for the same values.
    #[test]
    fn digests_match_redis() {
        assert_eq!(&digest_hex(b"hello"), b"9555e8555c62dcfd");
        assert_eq!(&digest_hex(b""), b"2d06800538d394c2");
        assert_eq!(&digest_hex(b"123"), b"404a763b3f4c8c9a");
        assert_eq!(&digest_hex(b"v8"), b"0cc76dbb41381419");
        assert_eq!(
            &value_digest(&StrValue::from_bytes(b"123")),
            b"404a763b3f4c8c9a"
        );
    }

    #[test]
    fn conditions() {
        let v = StrValue::from_bytes(b"hello");
        assert!(Cond::IfEq.holds(&v, b"hello"));
        assert!(!Cond::IfNe.holds(&v, b"hello"));
        assert!(Cond::IfDEq.holds(&v, b"9555E8555C62DCFD"));
        assert!(Cond::IfDNe.holds(&v, b"zzzzzzzzzzzzzzzz"));
        assert!(Cond::IfDEq.check_arg(b"0123").is_err());
        assert!(Cond::IfEq.check_arg(b"0123").is_ok());
        assert_eq!(Cond::parse(b"IfNe"), Some(Cond::IfNe));
        assert_eq!(Cond::parse(b"if"), None);
    }
}
