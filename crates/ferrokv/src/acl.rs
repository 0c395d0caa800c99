//! Access control lists (Redis 7.0 `acl.c` semantics): users, their rules,
//! permission checks, the ACL log and the ACL file.
//!
//! A [`User`] has flags (on/off, nopass, sanitize-payload), SHA-256 password
//! hashes and a list of [`Selector`]s: the root selector (rules given outside
//! parentheses) and 7.0's extra selectors `(...)`. A selector allows a set of
//! commands (a bitmap over the command table's ids, plus "first-args" such as
//! `+select|0`), key patterns (`~pat`, `%R~pat`, `%W~pat`) and channel
//! patterns (`&pat`). A request is allowed when any selector allows the
//! command, every key (with the access its key spec declares) and every
//! channel.
//!
//! Users live in [`Acl`] as immutable snapshots (`Arc<User>`); ACL SETUSER
//! builds a new snapshot and bumps a generation counter, and connections
//! re-read their user when the generation changed. When the only user is the
//! unrestricted `default`, [`Acl::restricted`] is false and the request path
//! pays one atomic load.
//!
//! ACL LIST / GETUSER describe command rules with Redis 7.0's reconstruction
//! (start from `+@all` or `-@all`, add the best-fitting categories, then
//! single commands): with ferrokv's smaller command table the chosen
//! categories can differ from Redis's for mixed rule sets, and single
//! commands come in table order (Redis: hash order, which varies per run).

use crate::keyspecs;

/// ACL categories (redis.io/docs/management/security/acl, "Command categories").
pub mod categories {
    /// @keyspace
    pub const KEYSPACE: u64 = 1 << 0;
    /// @read
    pub const READ: u64 = 1 << 1;
    /// @write
    pub const WRITE: u64 = 1 << 2;
    /// @set
    pub const SET: u64 = 1 << 3;
    /// @sortedset
    pub const SORTEDSET: u64 = 1 << 4;
    /// @list
    pub const LIST: u64 = 1 << 5;
    /// @hash
    pub const HASH: u64 = 1 << 6;
    /// @string
    pub const STRING: u64 = 1 << 7;
    /// @bitmap
    pub const BITMAP: u64 = 1 << 8;
    /// @hyperloglog
    pub const HYPERLOGLOG: u64 = 1 << 9;
    /// @geo
    pub const GEO: u64 = 1 << 10;
    /// @stream
    pub const STREAM: u64 = 1 << 11;
    /// @pubsub
    pub const PUBSUB: u64 = 1 << 12;
    /// @admin
    pub const ADMIN: u64 = 1 << 13;
    /// @fast
    pub const FAST: u64 = 1 << 14;
    /// @slow
    pub const SLOW: u64 = 1 << 15;
    /// @blocking
    pub const BLOCKING: u64 = 1 << 16;
    /// @dangerous
    pub const DANGEROUS: u64 = 1 << 17;
    /// @connection
    pub const CONNECTION: u64 = 1 << 18;
    /// @transaction
    pub const TRANSACTION: u64 = 1 << 19;
    /// @scripting
    pub const SCRIPTING: u64 = 1 << 20;

    /// (bit, name) in Redis's order.
    pub const NAMES: &[(u64, &str)] = &[
        (KEYSPACE, "keyspace"),
        (READ, "read"),
        (WRITE, "write"),
        (SET, "set"),
        (SORTEDSET, "sortedset"),
        (LIST, "list"),
        (HASH, "hash"),
        (STRING, "string"),
        (BITMAP, "bitmap"),
        (HYPERLOGLOG, "hyperloglog"),
        (GEO, "geo"),
        (STREAM, "stream"),
        (PUBSUB, "pubsub"),
        (ADMIN, "admin"),
        (FAST, "fast"),
        (SLOW, "slow"),
        (BLOCKING, "blocking"),
        (DANGEROUS, "dangerous"),
        (CONNECTION, "connection"),
        (TRANSACTION, "transaction"),
        (SCRIPTING, "scripting"),
    ];
}

use crate::resp::Args;
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Read permission of a key pattern (`%R~`).
pub const PERM_READ: u8 = 1;
/// Write permission of a key pattern (`%W~`).
pub const PERM_WRITE: u8 = 2;
/// Both (`~`).
pub const PERM_ALL: u8 = 3;

/// A key pattern with its permissions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPattern {
    /// [`PERM_READ`] | [`PERM_WRITE`].
    pub flags: u8,
    /// Glob pattern.
    pub pattern: Vec<u8>,
}

/// One selector: commands, key patterns and channel patterns.
#[derive(Debug, Clone)]
pub struct Selector {
    /// The root selector (rules outside parentheses).
    pub root: bool,
    /// `allkeys` / `~*`.
    pub allkeys: bool,
    /// `allchannels` / `&*`.
    pub allchannels: bool,
    /// Every command bit set (`+@all` and nothing removed since).
    pub allcommands: bool,
    /// Redis's reserved "future commands" bit: set by `+@all`, cleared only
    /// by `-@all`; decides whether descriptions start with +@all or -@all.
    future: bool,
    /// Allowed command ids (the command table's ids).
    bits: Vec<u64>,
    /// First arguments allowed for commands whose bit is clear
    /// (`+select|0`): (command id, args), in insertion order.
    firstargs: Vec<(usize, Vec<Vec<u8>>)>,
    /// Key patterns, in insertion order.
    pub patterns: Vec<KeyPattern>,
    /// Channel patterns, in insertion order.
    pub channels: Vec<Vec<u8>>,
}

/// Why a rule was refused (Redis's errno values of ACLSetUser).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    /// EINVAL.
    Syntax,
    /// ENOENT.
    UnknownCommand,
    /// EEXIST.
    KeyAfterAll,
    /// EISDIR.
    ChannelAfterAll,
    /// ENODEV.
    NoSuchPassword,
    /// EBADMSG.
    BadHash,
    /// ECHILD.
    SubcommandFirstArg,
    /// EALREADY.
    Duplicate,
}

impl RuleError {
    /// Redis's `ACLSetUserStringError` text.
    pub fn message(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::UnknownCommand => "Unknown command or category name in ACL",
            RuleError::KeyAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
            RuleError::Duplicate => "Duplicate user found. A user can only be defined once in config files",
        }
    }
}

/// What ACL rules need to know of the command table: ids, names, the
/// container/subcommand relation and categories (the command table
/// implements it; [`set_catalog`] hands it over).
pub trait CommandCatalog: Sync {
    /// Number of commands and subcommands (ids are `0..len`).
    fn len(&self) -> usize;
    /// True when the table is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Full name of `id` (`container|sub` for subcommands).
    fn name(&self, id: usize) -> &'static str;
    /// True when `id` has subcommands.
    fn is_container(&self, id: usize) -> bool;
    /// The subcommand ids of `id`.
    fn sub_ids(&self, id: usize) -> &[usize];
    /// The [`categories`] bits of `id`.
    fn categories(&self, id: usize) -> u64;
    /// A top-level command by name, ASCII case-insensitively.
    fn lookup(&self, name: &[u8]) -> Option<usize>;
    /// Subcommand `sub` of `id`.
    fn lookup_sub(&self, id: usize, sub: &[u8]) -> Option<usize>;
}

/// What a permission check needs to know of the command being run (its
/// command table entry).
pub trait Checked {
    /// Runs without authentication (AUTH, HELLO...): never refused.
    fn no_auth(&self) -> bool;
    /// The command has keys.
    fn has_keys(&self) -> bool;
    /// The keys of a request and how each is used.
    fn keys(&self, args: &Args<'_>) -> keyspecs::Keys;
    /// The channel arguments: (first index, count, literal).
    fn channel_args(&self, argc: usize) -> Option<(usize, usize, bool)>;
}

static CATALOG: std::sync::OnceLock<&'static dyn CommandCatalog> = std::sync::OnceLock::new();

/// Hands the command table to the ACL (once per process; `cmd::init`).
pub fn set_catalog(c: &'static dyn CommandCatalog) {
    let _ = CATALOG.set(c);
}

/// The command table, as [`set_catalog`] gave it.
///
/// # Panics
/// When no catalog was set: `ferrokv::cmd::init()` must run first.
fn cmds() -> &'static dyn CommandCatalog {
    *CATALOG
        .get()
        .expect("ferrokv::cmd::init() must run before ACL rules are used")
}

fn words() -> usize {
    cmds().len().div_ceil(64)
}

/// Redis's `ACLStringHasSpaces`: whitespace or NUL anywhere.
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&c| c == 0 || c == b' ' || (b'\t'..=b'\r').contains(&c))
}

/// The category bit of `name` (case-insensitive), or None.
pub fn category(name: &[u8]) -> Option<u64> {
    categories::NAMES
        .iter()
        .find(|(_, n)| n.as_bytes().eq_ignore_ascii_case(name))
        .map(|(b, _)| *b)
}

/// Looks a command up as ACL rules name it: `name` or `container|sub`
/// (Redis's `lookupCommandBySdsLogic`, strict). Returns its table id.
pub fn lookup_command(name: &[u8]) -> Option<usize> {
    let t = cmds();
    let parts: Vec<&[u8]> = name.split(|&b| b == b'|').collect();
    match parts.as_slice() {
        [one] => t.lookup(one),
        [top, sub] => {
            let id = t.lookup(top)?;
            if !t.is_container(id) {
                return None;
            }
            t.lookup_sub(id, sub)
        }
        _ => None,
    }
}

/// True when command id `id` is a subcommand.
fn is_sub(id: usize) -> bool {
    cmds().name(id).contains('|')
}

impl Selector {
    /// An empty selector (no commands, keys or channels; channels all when
    /// `acl-pubsub-default` is allchannels).
    pub fn new(root: bool, allchannels: bool) -> Self {
        Selector {
            root,
            allkeys: false,
            allchannels,
            allcommands: false,
            future: false,
            bits: vec![0; words()],
            firstargs: Vec::new(),
            patterns: Vec::new(),
            channels: Vec::new(),
        }
    }

    fn bit(&self, id: usize) -> bool {
        self.bits
            .get(id / 64)
            .is_some_and(|w| w & (1u64 << (id % 64)) != 0)
    }

    fn set_bit(&mut self, id: usize, on: bool) {
        if let Some(w) = self.bits.get_mut(id / 64) {
            if on {
                *w |= 1u64 << (id % 64);
            } else {
                *w &= !(1u64 << (id % 64));
                self.allcommands = false;
            }
        }
    }

    /// Redis's `ACLChangeSelectorPerm`: the command and, for a container,
    /// all its subcommands.
    fn change_perm(&mut self, id: usize, on: bool) {
        self.set_bit(id, on);
        self.firstargs.retain(|(i, _)| *i != id);
        let subs: Vec<usize> = cmds().sub_ids(id).to_vec();
        for s in subs {
            self.set_bit(s, on);
        }
    }

    fn set_category(&mut self, flag: u64, on: bool) {
        let t = cmds();
        for id in 0..t.len() {
            if t.categories(id) & flag != 0 {
                self.change_perm(id, on);
            }
        }
    }

    fn all_commands(&mut self, on: bool) {
        for w in self.bits.iter_mut() {
            *w = if on { u64::MAX } else { 0 };
        }
        self.allcommands = on;
        self.future = on;
        self.firstargs.clear();
    }

    /// Applies one selector rule (Redis's `ACLSetSelector`).
    pub fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let is = |s: &str| op.eq_ignore_ascii_case(s.as_bytes());
        if is("allkeys") || is("~*") {
            self.allkeys = true;
            self.patterns.clear();
        } else if is("resetkeys") {
            self.allkeys = false;
            self.patterns.clear();
        } else if is("allchannels") || is("&*") {
            self.allchannels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.allchannels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.all_commands(true);
        } else if is("nocommands") || is("-@all") {
            self.all_commands(false);
        } else if op[0] == b'~' || op[0] == b'%' {
            if self.allkeys {
                return Err(RuleError::KeyAfterAll);
            }
            let mut flags = 0u8;
            let mut off = 1;
            if op[0] == b'%' {
                while off < op.len() {
                    let c = op[off].to_ascii_uppercase();
                    if c == b'R' && flags & PERM_READ == 0 {
                        flags |= PERM_READ;
                    } else if c == b'W' && flags & PERM_WRITE == 0 {
                        flags |= PERM_WRITE;
                    } else if op[off] == b'~' {
                        off += 1;
                        break;
                    } else {
                        return Err(RuleError::Syntax);
                    }
                    off += 1;
                }
                if flags == 0 {
                    return Err(RuleError::Syntax);
                }
            } else {
                flags = PERM_ALL;
            }
            let pat = &op[off.min(op.len())..];
            if has_spaces(pat) {
                return Err(RuleError::Syntax);
            }
            match self.patterns.iter_mut().find(|p| p.pattern == pat) {
                Some(p) => p.flags |= flags,
                None => self.patterns.push(KeyPattern {
                    flags,
                    pattern: pat.to_vec(),
                }),
            }
            self.allkeys = false;
        } else if op[0] == b'&' {
            if self.allchannels {
                return Err(RuleError::ChannelAfterAll);
            }
            let pat = &op[1..];
            if has_spaces(pat) {
                return Err(RuleError::Syntax);
            }
            if !self.channels.iter().any(|c| c == pat) {
                self.channels.push(pat.to_vec());
            }
            self.allchannels = false;
        } else if op[0] == b'+' && op.get(1) != Some(&b'@') {
            let name = &op[1..];
            match name.iter().rposition(|&b| b == b'|') {
                None => {
                    let id = lookup_command(name).ok_or(RuleError::UnknownCommand)?;
                    self.change_perm(id, true);
                }
                Some(bar) => {
                    let (base, sub) = (&name[..bar], &name[bar + 1..]);
                    let id = lookup_command(base).ok_or(RuleError::UnknownCommand)?;
                    if is_sub(id) {
                        return Err(RuleError::SubcommandFirstArg);
                    }
                    if sub.is_empty() {
                        return Err(RuleError::Syntax);
                    }
                    if cmds().is_container(id) {
                        let sid = lookup_command(name).ok_or(RuleError::UnknownCommand)?;
                        self.change_perm(sid, true);
                    } else {
                        match self.firstargs.iter_mut().find(|(i, _)| *i == id) {
                            Some((_, v)) => {
                                if !v.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
                                    v.push(sub.to_vec());
                                }
                            }
                            None => self.firstargs.push((id, vec![sub.to_vec()])),
                        }
                    }
                }
            }
        } else if op[0] == b'-' && op.get(1) != Some(&b'@') {
            let id = lookup_command(&op[1..]).ok_or(RuleError::UnknownCommand)?;
            self.change_perm(id, false);
        } else if (op[0] == b'+' || op[0] == b'-') && op.get(1) == Some(&b'@') {
            let flag = category(&op[2..]).ok_or(RuleError::UnknownCommand)?;
            self.set_category(flag, op[0] == b'+');
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    fn count_category(bits: &Selector, flag: u64) -> (u64, u64) {
        let t = cmds();
        let (mut on, mut off) = (0, 0);
        for id in 0..t.len() {
            if t.categories(id) & flag != 0 {
                if bits.bit(id) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
        (on, off)
    }

    /// The command rules (Redis 7.0's `ACLDescribeSelectorCommandRules`).
    pub fn describe_commands(&self) -> String {
        let additive = !self.future;
        let mut rules = String::from(if additive { "-@all " } else { "+@all " });
        let mut fake = Selector::new(false, false);
        fake.all_commands(!additive);
        let mut temp = Selector::new(false, false);
        temp.bits = self.bits.clone();
        let cats = categories::NAMES;
        let mut applied = vec![false; cats.len()];
        loop {
            let mut best = None;
            let (mut mindiff, mut maxsame) = (u64::MAX, 0u64);
            for (j, (flag, _)) in cats.iter().enumerate() {
                if applied[j] {
                    continue;
                }
                let (on, off) = Self::count_category(&temp, *flag);
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
                    best = Some(j);
                    mindiff = diff;
                    maxsame = same;
                }
            }
            let Some(j) = best else { break };
            let (flag, name) = cats[j];
            fake.set_category(flag, additive);
            temp.set_category(flag, !additive);
            rules.push_str(if additive { "+@" } else { "-@" });
            rules.push_str(name);
            rules.push(' ');
            applied[j] = true;
        }
        let t = cmds();
        for id in 0..t.len() {
            let user = self.bit(id);
            if user != fake.bit(id) {
                rules.push(if user { '+' } else { '-' });
                rules.push_str(t.name(id));
                rules.push(' ');
                fake.change_perm(id, user);
            }
            if !user {
                if let Some((_, args)) = self.firstargs.iter().find(|(i, _)| *i == id) {
                    for a in args {
                        rules.push('+');
                        rules.push_str(t.name(id));
                        rules.push('|');
                        rules.push_str(&String::from_utf8_lossy(a));
                        rules.push(' ');
                    }
                }
            }
        }
        rules.pop();
        rules
    }

    /// Key patterns as ACL GETUSER shows them (space-separated).
    pub fn describe_keys(&self) -> String {
        if self.allkeys {
            return "~*".into();
        }
        let v: Vec<String> = self.patterns.iter().map(pattern_string).collect();
        v.join(" ")
    }

    /// Channel patterns as ACL GETUSER shows them.
    pub fn describe_channels(&self) -> String {
        if self.allchannels {
            return "&*".into();
        }
        let v: Vec<String> = self
            .channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect();
        v.join(" ")
    }

    /// Keys, channels and commands (Redis's `ACLDescribeSelector`).
    pub fn describe(&self) -> String {
        let mut s = String::new();
        if self.allkeys {
            s.push_str("~* ");
        } else {
            for p in &self.patterns {
                s.push_str(&pattern_string(p));
                s.push(' ');
            }
        }
        if self.allchannels {
            s.push_str("&* ");
        } else {
            s.push_str("resetchannels ");
            for c in &self.channels {
                s.push('&');
                s.push_str(&String::from_utf8_lossy(c));
                s.push(' ');
            }
        }
        s.push_str(&self.describe_commands());
        s
    }

    fn check_key(&self, key: &[u8], spec_flags: u16) -> bool {
        if self.allkeys {
            return true;
        }
        let mut need = 0u8;
        if spec_flags & keyspecs::ACCESS != 0 {
            need |= PERM_READ;
        }
        if spec_flags & (keyspecs::INSERT | keyspecs::DELETE | keyspecs::UPDATE) != 0 {
            need |= PERM_WRITE;
        }
        self.patterns
            .iter()
            .any(|p| p.flags & need == need && crate::util::glob_match(&p.pattern, key, false))
    }

    /// Redis's `ACLSelectorHasUnrestrictedKeyAccess` for read access: the
    /// selector has `allkeys` (`~*`) or `%R~*`.
    fn unrestricted_read(&self) -> bool {
        self.allkeys
            || self
                .patterns
                .iter()
                .any(|p| p.flags & PERM_READ != 0 && p.pattern == b"*")
    }

    fn check_channel(&self, ch: &[u8], literal: bool) -> bool {
        self.allchannels
            || self.channels.iter().any(|p| {
                if literal {
                    p == ch
                } else {
                    crate::util::glob_match(p, ch, false)
                }
            })
    }

    /// Redis's `ACLSelectorCheckCmd`.
    fn check<C: Checked + ?Sized>(
        &self,
        c: &C,
        id: usize,
        args: &Args<'_>,
        keys: &mut Option<keyspecs::Keys>,
    ) -> Result<(), Denied> {
        if !self.allcommands && !c.no_auth() && !self.bit(id) {
            let ok = args.len() >= 2
                && self.firstargs.iter().any(|(i, v)| {
                    *i == id && v.iter().any(|a| a.eq_ignore_ascii_case(args.get(1)))
                });
            if !ok {
                return Err(Denied::Command);
            }
        }
        if !self.allkeys && c.has_keys() {
            let ks = keys.get_or_insert_with(|| c.keys(args));
            for k in ks.iter() {
                if !self.check_key(args.get(k.pos), k.flags) {
                    return Err(Denied::Key(k.pos));
                }
            }
        }
        if !self.allchannels {
            if let Some((start, count, literal)) = c.channel_args(args.len()) {
                for (j, ch) in args.iter().enumerate().skip(start).take(count) {
                    if !self.check_channel(ch, literal) {
                        return Err(Denied::Channel(j));
                    }
                }
            }
        }
        Ok(())
    }
}

fn pattern_string(p: &KeyPattern) -> String {
    let prefix = match p.flags {
        PERM_READ => "%R~",
        PERM_WRITE => "%W~",
        _ => "~",
    };
    format!("{prefix}{}", String::from_utf8_lossy(&p.pattern))
}

/// Why a request was refused, with the offending argument's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// The command (or subcommand) is not allowed.
    Command,
    /// The key at this argument index is not allowed.
    Key(usize),
    /// The channel at this argument index is not allowed.
    Channel(usize),
}

impl Denied {
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (1, 0),
            Denied::Key(i) => (2, i),
            Denied::Channel(i) => (4, i),
        }
    }
}

/// An ACL user (an immutable snapshot; changes replace it).
#[derive(Debug, Clone)]
pub struct User {
    /// User name (no spaces or NUL bytes).
    pub name: Vec<u8>,
    /// `on` (else `off`).
    pub enabled: bool,
    /// `nopass`: any password works.
    pub nopass: bool,
    /// 0 = neither, 1 = `sanitize-payload`, 2 = `skip-sanitize-payload`.
    pub sanitize: u8,
    /// SHA-256 hashes, 64 lower-case hex characters each, in order added.
    pub passwords: Vec<String>,
    /// The root selector first, then `(...)` selectors.
    pub selectors: Vec<Selector>,
}

/// SHA-256 of `pass` as 64 lower-case hex characters (Redis's
/// `ACLHashPassword`).
pub fn hash_password(pass: &[u8]) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(pass);
    let mut s = String::with_capacity(64);
    for b in d.iter() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64 && h.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

impl User {
    /// A new user: off, no passwords, no permissions (Redis's
    /// `ACLCreateUser`).
    pub fn new(name: &[u8], allchannels: bool) -> Self {
        User {
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            sanitize: 0,
            passwords: Vec::new(),
            selectors: vec![Selector::new(true, allchannels)],
        }
    }

    /// The default user: on, nopass, ~* &* +@all.
    pub fn default_user() -> Self {
        let mut u = User::new(b"default", false);
        for op in ["+@all", "~*", "&*", "on", "nopass"] {
            let _ = u.apply(op.as_bytes(), false);
        }
        u
    }

    /// True when the root selector allows everything (no check needed).
    pub fn unrestricted(&self) -> bool {
        let r = &self.selectors[0];
        r.allcommands && r.allkeys && r.allchannels
    }

    /// Applies one rule (Redis's `ACLSetUser`); `allchannels` is
    /// acl-pubsub-default for new selectors and `reset`.
    pub fn apply(&mut self, op: &[u8], allchannels: bool) -> Result<(), RuleError> {
        if op.is_empty() {
            return Ok(());
        }
        let is = |s: &str| op.eq_ignore_ascii_case(s.as_bytes());
        if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.sanitize = 2;
        } else if is("sanitize-payload") {
            self.sanitize = 1;
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if op[0] == b'>' || op[0] == b'#' {
            let h = if op[0] == b'>' {
                hash_password(&op[1..])
            } else {
                if !valid_hash(&op[1..]) {
                    return Err(RuleError::BadHash);
                }
                String::from_utf8_lossy(&op[1..]).into_owned()
            };
            if !self.passwords.contains(&h) {
                self.passwords.push(h);
            }
            self.nopass = false;
        } else if op[0] == b'<' || op[0] == b'!' {
            let h = if op[0] == b'<' {
                hash_password(&op[1..])
            } else {
                if !valid_hash(&op[1..]) {
                    return Err(RuleError::BadHash);
                }
                String::from_utf8_lossy(&op[1..]).into_owned()
            };
            match self.passwords.iter().position(|p| *p == h) {
                Some(i) => {
                    self.passwords.remove(i);
                }
                None => return Err(RuleError::NoSuchPassword),
            }
        } else if op[0] == b'(' && op[op.len() - 1] == b')' {
            let mut s = Selector::new(false, allchannels);
            let inner = &op[1..op.len() - 1];
            let mut scratch = Vec::new();
            let mut ranges = Vec::new();
            crate::resp::parse::split_args(inner, &mut scratch, &mut ranges)
                .map_err(|_| RuleError::Syntax)?;
            for &(a, b) in &ranges {
                s.apply(&scratch[a as usize..b as usize])?;
            }
            self.selectors.push(s);
        } else if is("clearselectors") {
            self.selectors.truncate(1);
        } else if is("reset") {
            for r in ["resetpass", "resetkeys", "resetchannels"] {
                self.apply(r.as_bytes(), allchannels)?;
            }
            if allchannels {
                self.apply(b"allchannels", allchannels)?;
            }
            for r in ["off", "sanitize-payload", "clearselectors", "-@all"] {
                self.apply(r.as_bytes(), allchannels)?;
            }
        } else {
            self.selectors[0].apply(op)?;
        }
        Ok(())
    }

    /// Flags, passwords and selectors as ACL LIST shows them (Redis's
    /// `ACLDescribeUser`).
    pub fn describe(&self) -> String {
        let mut s = String::new();
        for f in self.flag_names() {
            s.push_str(f);
            s.push(' ');
        }
        for p in &self.passwords {
            s.push('#');
            s.push_str(p);
            s.push(' ');
        }
        for sel in &self.selectors {
            if sel.root {
                s.push_str(&sel.describe());
            } else {
                s.push_str(" (");
                s.push_str(&sel.describe());
                s.push(')');
            }
        }
        s
    }

    /// The user's flags in Redis's order.
    pub fn flag_names(&self) -> Vec<&'static str> {
        let mut v = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            v.push("nopass");
        }
        match self.sanitize {
            2 => v.push("skip-sanitize-payload"),
            1 => v.push("sanitize-payload"),
            _ => {}
        }
        v
    }

    /// Checks a password (constant time per stored hash).
    pub fn password_ok(&self, pass: &[u8]) -> bool {
        if self.nopass {
            return true;
        }
        let h = hash_password(pass);
        let mut ok = false;
        for p in &self.passwords {
            ok |= crate::util::constant_time_eq(p.as_bytes(), h.as_bytes());
        }
        ok
    }

    /// Redis's `ACLCheckAllUserCommandPerm`: Ok, or the most relevant
    /// denial over all selectors.
    pub fn check<C: Checked + ?Sized>(
        &self,
        c: &C,
        id: usize,
        args: &Args<'_>,
    ) -> Result<(), Denied> {
        let mut worst = Denied::Command;
        let mut keys = None;
        for s in &self.selectors {
            match s.check(c, id, args, &mut keys) {
                Ok(()) => return Ok(()),
                Err(d) => {
                    if d.rank() > worst.rank() {
                        worst = d;
                    }
                }
            }
        }
        Err(worst)
    }
}

impl User {
    /// Redis's `ACLUserCheckCmdWithUnrestrictedKeyAccess(..., CMD_KEY_ACCESS)`:
    /// true when one selector both allows this command with these
    /// arguments and may read every key (`allkeys`, `~*` or `%R~*`). SORT's
    /// BY and GET patterns name keys that are not arguments, so Redis allows
    /// them only to such users (sort.c).
    pub fn check_with_unrestricted_read<C: Checked + ?Sized>(
        &self,
        c: &C,
        id: usize,
        args: &Args<'_>,
    ) -> bool {
        if self.unrestricted() {
            return true;
        }
        let mut keys = None;
        self.selectors
            .iter()
            .any(|s| s.unrestricted_read() && s.check(c, id, args, &mut keys).is_ok())
    }
}

/// Merges selector rules spread over several arguments (`(~a` `+get)`),
/// Redis's `ACLMergeSelectorArguments`. Err(index of the unmatched `(`).
pub fn merge_selector_args(args: &[&[u8]]) -> Result<Vec<Vec<u8>>, usize> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (j, op) in args.iter().enumerate() {
        if let Some((_, sel)) = open.as_mut() {
            sel.push(b' ');
            sel.extend_from_slice(op);
            if op.last() == Some(&b')') {
                out.push(open.take().map(|(_, s)| s).unwrap_or_default());
            }
            continue;
        }
        if op.first() == Some(&b'(') && op.last() != Some(&b')') {
            open = Some((j, op.to_vec()));
            continue;
        }
        out.push(op.to_vec());
    }
    match open {
        Some((j, _)) => Err(j),
        None => Ok(out),
    }
}

/// One ACL LOG entry.
#[derive(Debug, Clone)]
pub struct LogEntry {
    /// Times this happened (similar entries within 60 s are merged).
    pub count: u64,
    /// "command", "key", "channel" or "auth".
    pub reason: &'static str,
    /// "toplevel", "multi", "lua" or "module".
    pub context: &'static str,
    /// Command name, key, channel, or the AUTH/HELLO word.
    pub object: Vec<u8>,
    /// The user.
    pub username: Vec<u8>,
    /// Last update, ms since the epoch.
    pub ctime_ms: u64,
    /// CLIENT LIST line of the client.
    pub client_info: String,
}

/// The ACL state of the server.
pub struct Acl {
    users: RwLock<BTreeMap<Vec<u8>, Arc<User>>>,
    /// Bumped on every change of any user (connections re-read theirs).
    pub generation: AtomicU64,
    /// False only while the sole user is an unrestricted `default`.
    pub restricted: AtomicBool,
    /// True when new connections must authenticate (the default user has
    /// passwords, or is off).
    pub auth_required: AtomicBool,
    /// acl-pubsub-default is allchannels.
    pub pubsub_allchannels: AtomicBool,
    /// acllog-max-len.
    pub log_max_len: AtomicU64,
    /// The log, newest first.
    pub log: Mutex<VecDeque<LogEntry>>,
    /// Last requirepass value applied to the default user.
    last_requirepass: Mutex<Option<String>>,
    /// Serialises read-modify-write changes (SETUSER, LOAD).
    write: Mutex<()>,
}

impl Default for Acl {
    fn default() -> Self {
        let mut m = BTreeMap::new();
        m.insert(b"default".to_vec(), Arc::new(User::default_user()));
        Acl {
            users: RwLock::new(m),
            generation: AtomicU64::new(1),
            restricted: AtomicBool::new(false),
            auth_required: AtomicBool::new(false),
            pubsub_allchannels: AtomicBool::new(false),
            log_max_len: AtomicU64::new(128),
            log: Mutex::new(VecDeque::new()),
            last_requirepass: Mutex::new(None),
            write: Mutex::new(()),
        }
    }
}

impl Acl {
    /// A user by name.
    pub fn get(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    /// The default user.
    pub fn default_user(&self) -> Arc<User> {
        self.get(b"default")
            .unwrap_or_else(|| Arc::new(User::default_user()))
    }

    /// All users, sorted by name (Redis's rax order).
    pub fn users(&self) -> Vec<Arc<User>> {
        self.users.read().values().cloned().collect()
    }

    fn changed(&self, users: &BTreeMap<Vec<u8>, Arc<User>>) {
        let d = users.get(b"default".as_slice());
        let unrestricted_default = d.is_some_and(|d| d.unrestricted());
        self.restricted
            .store(users.len() > 1 || !unrestricted_default, Ordering::SeqCst);
        let auth = d.is_none_or(|d| !d.nopass || !d.enabled);
        self.auth_required.store(auth, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// ACL SETUSER: applies `ops` to a copy of the user (or a new one) and
    /// stores it only if every rule is valid. Err((rule, error)).
    pub fn set_user(&self, name: &[u8], ops: &[Vec<u8>]) -> Result<(), (Vec<u8>, RuleError)> {
        let _w = self.write.lock();
        let all = self.pubsub_allchannels.load(Ordering::Relaxed);
        let mut u = match self.get(name) {
            Some(u) => (*u).clone(),
            None => User::new(name, all),
        };
        for op in ops {
            u.apply(op, all).map_err(|e| (op.clone(), e))?;
        }
        let mut users = self.users.write();
        users.insert(name.to_vec(), Arc::new(u));
        self.changed(&users);
        Ok(())
    }

    /// ACL DELUSER for one user: true when it existed. `default` must be
    /// refused by the caller.
    pub fn del_user(&self, name: &[u8]) -> bool {
        let _w = self.write.lock();
        let mut users = self.users.write();
        let existed = users.remove(name).is_some();
        if existed {
            self.changed(&users);
        }
        existed
    }

    /// Replaces every user (ACL LOAD); the default user is created when
    /// missing.
    pub fn replace_all(&self, mut users: BTreeMap<Vec<u8>, Arc<User>>) {
        let _w = self.write.lock();
        users
            .entry(b"default".to_vec())
            .or_insert_with(|| Arc::new(User::default_user()));
        let mut cur = self.users.write();
        *cur = users;
        self.changed(&cur);
    }

    /// Checks credentials (Redis's `ACLCheckUserCredentials`): the user when
    /// it exists, is on and the password matches.
    pub fn authenticate(&self, name: &[u8], pass: &[u8]) -> Option<Arc<User>> {
        let u = self.get(name)?;
        if !u.enabled || !u.password_ok(pass) {
            return None;
        }
        Some(u)
    }

    /// Applies the ACL-related directives after a configuration change:
    /// acl-pubsub-default, acllog-max-len and, when it changed, requirepass
    /// (the default user's only password, or nopass when empty).
    /// `pubsub_default` is acl-pubsub-default's value, `log_max_len`
    /// acllog-max-len's, `requirepass` requirepass's.
    pub fn sync_config(&self, pubsub_default: &str, log_max_len: i64, requirepass: &str) {
        self.pubsub_allchannels
            .store(pubsub_default == "allchannels", Ordering::Relaxed);
        self.log_max_len
            .store(log_max_len.max(0) as u64, Ordering::Relaxed);
        let rp = requirepass.to_string();
        let mut last = self.last_requirepass.lock();
        if last.as_deref() != Some(rp.as_str()) {
            let mut pw = b">".to_vec();
            pw.extend_from_slice(rp.as_bytes());
            let ops: Vec<Vec<u8>> = if rp.is_empty() {
                vec![b"resetpass".to_vec(), b"nopass".to_vec()]
            } else {
                vec![b"resetpass".to_vec(), pw]
            };
            let _ = self.set_user(b"default", &ops);
            *last = Some(rp);
        }
        self.log
            .lock()
            .truncate(self.log_max_len.load(Ordering::Relaxed) as usize);
    }

    /// Adds an ACL LOG entry, merging it with a similar recent one (Redis's
    /// `addACLLogEntry`).
    pub fn log_event(&self, mut e: LogEntry) {
        let max = self.log_max_len.load(Ordering::Relaxed) as usize;
        let mut log = self.log.lock();
        let found = log.iter().take(10).position(|x| {
            x.reason == e.reason
                && x.context == e.context
                && x.ctime_ms.abs_diff(e.ctime_ms) <= 60_000
                && x.object == e.object
                && x.username == e.username
        });
        if let Some(i) = found {
            if let Some(mut old) = log.remove(i) {
                old.count += 1;
                old.ctime_ms = e.ctime_ms;
                old.client_info = std::mem::take(&mut e.client_info);
                log.push_front(old);
            }
        } else {
            log.push_front(e);
            log.truncate(max);
        }
    }

    /// Parses an ACL file's text into users (Redis's `ACLLoadFromFile`
    /// validation). Err(the error text ACL LOAD replies, without "ERR ").
    pub fn parse_file(
        &self,
        path: &str,
        text: &str,
    ) -> Result<BTreeMap<Vec<u8>, Arc<User>>, String> {
        let all = self.pubsub_allchannels.load(Ordering::Relaxed);
        let mut users: BTreeMap<Vec<u8>, Arc<User>> = BTreeMap::new();
        let mut errors = String::new();
        for (i, line) in text.split('\n').enumerate() {
            let n = i + 1;
            let line = line.trim_matches(|c| c == ' ' || c == '\t' || c == '\r' || c == '\n');
            if line.is_empty() {
                continue;
            }
            let argv: Vec<&[u8]> = line
                .as_bytes()
                .split(|&b| b == b' ')
                .filter(|a| !a.is_empty())
                .collect();
            if argv.is_empty() {
                continue;
            }
            if argv[0] != b"user" || argv.len() < 2 {
                errors.push_str(&format!(
                    "{path}:{n} should start with user keyword followed by the username. "
                ));
                continue;
            }
            if users.contains_key(argv[1]) {
                errors.push_str(&format!(
                    "WARNING: Duplicate user '{}' found on line {n}. ",
                    String::from_utf8_lossy(argv[1])
                ));
                continue;
            }
            let mut u = User::new(argv[1], all);
            match merge_selector_args(&argv[2..]) {
                Err(_) => errors.push_str(&format!(
                    "{path}:{n}: Unmatched parenthesis in selector definition."
                )),
                Ok(ops) => {
                    for op in ops {
                        if let Err(e) = u.apply(&op, all) {
                            errors.push_str(&format!("{path}:{n}: {}. ", e.message()));
                        }
                    }
                }
            }
            users.insert(argv[1].to_vec(), Arc::new(u));
        }
        if errors.is_empty() {
            Ok(users)
        } else {
            errors.push_str(
                "WARNING: ACL errors detected, no change to the previously active ACL rules was performed",
            );
            Err(errors)
        }
    }

    /// The ACL file text for ACL SAVE: one `user <name> <rules>` line per
    /// user, sorted by name.
    pub fn file_text(&self) -> String {
        let mut s = String::new();
        for u in self.users() {
            s.push_str("user ");
            s.push_str(&String::from_utf8_lossy(&u.name));
            s.push(' ');
            s.push_str(&u.describe());
            s.push('\n');
        }
        s
    }

    /// Loads the ACL file into the live users (ACL LOAD).
    pub fn load_file(&self, path: &str) -> Result<(), String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "Error loading ACLs, opening file '{path}': {}",
                io_reason(&e)
            )
        })?;
        let users = self.parse_file(path, &text)?;
        self.replace_all(users);
        Ok(())
    }

    /// Writes the users to `path` through a temporary file (ACL SAVE).
    pub fn save_file(&self, path: &str) -> std::io::Result<()> {
        let tmp = format!(
            "{path}.tmp-{}-{}",
            std::process::id(),
            crate::util::now_ms()
        );
        let r = std::fs::write(&tmp, self.file_text()).and_then(|_| std::fs::rename(&tmp, path));
        if r.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        r
    }
}

/// strerror-like text of an I/O error (without Rust's "(os error N)").
fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Validates a `user <name> <rules...>` configuration line (Redis's
/// `ACLAppendUserForLoading`): Err((index of the bad argument, error)).
/// Unknown commands are accepted here as in Redis (reported at load).
pub fn validate_user_line(argv: &[String], seen: &[Vec<String>]) -> Result<(), (usize, RuleError)> {
    if seen.iter().any(|u| u.first() == argv.get(1)) {
        return Err((1, RuleError::Duplicate));
    }
    let args: Vec<&[u8]> = argv[2..].iter().map(|s| s.as_bytes()).collect();
    let ops = merge_selector_args(&args).map_err(|j| (j, RuleError::Syntax))?;
    let mut u = User::new(b"__fakeuser__", false);
    for (j, op) in ops.iter().enumerate() {
        if let Err(e) = u.apply(op, false) {
            if e != RuleError::UnknownCommand {
                return Err((j, e));
            }
        }
    }
    Ok(())
}

/// Loads the users declared in the configuration (`user` lines) and the
/// ACL file at start-up (Redis's `ACLLoadUsersAtStartup`). Errors stop the
/// server.
///
/// `aclfile` is the aclfile directive ("" when unset), `lines` the
/// configuration's `user` lines (each split into its words).
pub fn startup(acl: &Acl, aclfile: &str, lines: &[Vec<String>]) -> Result<(), String> {
    if !aclfile.is_empty() && !lines.is_empty() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
    }
    for l in lines {
        let name = l[0].as_bytes();
        if has_spaces(name) {
            return Err("Spaces not allowed in ACL usernames".into());
        }
        let mut ops = Vec::new();
        if acl.get(name).is_some() {
            ops.push(b"reset".to_vec());
        }
        let rules: Vec<&[u8]> = l[1..].iter().map(|s| s.as_bytes()).collect();
        ops.extend(merge_selector_args(&rules).unwrap_or_default());
        if let Err((op, e)) = acl.set_user(name, &ops) {
            return Err(format!(
                "Error loading ACL rule '{}' for the user named '{}': {}",
                String::from_utf8_lossy(&op),
                l[0],
                e.message()
            ));
        }
    }
    if !aclfile.is_empty() {
        acl.load_file(aclfile)
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
    }
    Ok(())
}

/// Per-connection ACL state: the authenticated user's name and a cached
/// snapshot of it.
#[derive(Debug, Default)]
pub struct ClientAcl {
    /// User name; empty = default.
    pub name: Vec<u8>,
    cached: Option<(u64, Arc<User>)>,
}

impl ClientAcl {
    /// Switches the connection to `name`.
    pub fn set_user(&mut self, name: &[u8]) {
        self.name.clear();
        if name != b"default" {
            self.name.extend_from_slice(name);
        }
        self.cached = None;
    }

    /// The user name (for ACL WHOAMI, CLIENT LIST).
    pub fn user_name(&self) -> &[u8] {
        if self.name.is_empty() {
            b"default"
        } else {
            &self.name
        }
    }

    /// The current snapshot of the connection's user (None when it was
    /// deleted).
    pub fn user(&mut self, acl: &Acl) -> Option<Arc<User>> {
        let gen = acl.generation.load(Ordering::Acquire);
        if let Some((g, u)) = &self.cached {
            if *g == gen {
                return Some(u.clone());
            }
        }
        let u = acl.get(self.user_name())?;
        self.cached = Some((gen, u.clone()));
        Some(u)
    }
}

/// Redis's NOPERM error texts.
/// `name` is the command's full name (`container|sub` for subcommands).
pub fn denied_message(d: Denied, name: &str) -> String {
    match d {
        Denied::Command => {
            format!("NOPERM this user has no permissions to run the '{name}' command")
        }
        Denied::Key(_) => {
            "NOPERM this user has no permissions to access one of the keys used as arguments".into()
        }
        Denied::Channel(_) => {
            "NOPERM this user has no permissions to access one of the channels used as arguments"
                .into()
        }
    }
}

/// Protected mode (Redis 7.0 `clientAcceptHandler`): true when a TCP client
/// from `peer` must be refused with [`PROTECTED_MODE_ERR`]: protected-mode
/// is on, the default user has no password, and the peer is not a loopback
/// address (127.0.0.0/8 or ::1).
pub fn protected_mode_denies(
    protected: bool,
    default_nopass: bool,
    peer: std::net::IpAddr,
) -> bool {
    let local = match peer {
        std::net::IpAddr::V4(a) => a.octets()[0] == 127,
        std::net::IpAddr::V6(a) => a.is_loopback(),
    };
    protected && default_nopass && !local
}

/// Redis 7.0's protected-mode reply (sent before closing).
pub const PROTECTED_MODE_ERR: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn user(ops: &[&str]) -> User {
        let mut u = User::new(b"u", false);
        for o in ops {
            u.apply(o.as_bytes(), false).unwrap();
        }
        u
    }

    #[test]
    fn describe_simple() {
        crate::cmd::init();
        assert_eq!(User::default_user().describe(), "on nopass ~* &* +@all");
        let u = user(&["on", ">p1", "+@all", "-@string", "~foo*", "%R~bar", "&ch*"]);
        assert_eq!(
            u.describe(),
            format!(
                "on #{} ~foo* %R~bar resetchannels &ch* +@all -@string",
                hash_password(b"p1")
            )
        );
        let u = user(&["+get", "+select|0", "(~x +set)"]);
        assert_eq!(
            u.describe(),
            "off resetchannels -@all +select|0 +get (~x resetchannels -@all +set)"
        );
    }

    #[test]
    fn rule_errors() {
        crate::cmd::init();
        let mut u = User::new(b"u", false);
        assert_eq!(u.apply(b"foo", false), Err(RuleError::Syntax));
        assert_eq!(u.apply(b"+nosuch", false), Err(RuleError::UnknownCommand));
        assert_eq!(
            u.apply(b"+config|get|x", false),
            Err(RuleError::SubcommandFirstArg)
        );
        assert_eq!(u.apply(b"-get|x", false), Err(RuleError::UnknownCommand));
        assert_eq!(u.apply(b"#abc", false), Err(RuleError::BadHash));
        assert_eq!(u.apply(b"<x", false), Err(RuleError::NoSuchPassword));
        u.apply(b"allkeys", false).unwrap();
        assert_eq!(u.apply(b"~a", false), Err(RuleError::KeyAfterAll));
        assert_eq!(
            merge_selector_args(&[b"(~a", b"+get)", b"on"]),
            Ok(vec![b"(~a +get)".to_vec(), b"on".to_vec()])
        );
        assert_eq!(merge_selector_args(&[b"on", b"(~a"]), Err(1));
    }

    #[test]
    fn protected_mode_decision() {
        let ext: std::net::IpAddr = "10.1.2.3".parse().unwrap();
        assert!(protected_mode_denies(true, true, ext));
        assert!(!protected_mode_denies(false, true, ext));
        assert!(!protected_mode_denies(true, false, ext));
        assert!(!protected_mode_denies(
            true,
            true,
            "127.0.0.5".parse().unwrap()
        ));
        assert!(!protected_mode_denies(true, true, "::1".parse().unwrap()));
        assert!(protected_mode_denies(
            true,
            true,
            "::ffff:10.0.0.1".parse().unwrap()
        ));
    }
}
