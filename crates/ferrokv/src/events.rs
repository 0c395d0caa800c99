//! Key events: the two things that must happen when a command changes a key,
//! both modelled on Redis 7.0.
//!
//! - WATCH: every modification "touches" the key (db.c `signalModifiedKey`
//!   → multi.c `touchWatchedKey`), so clients watching it fail their next
//!   EXEC;
//! - keyspace notifications (notify.c `notifyKeyspaceEvent`): when the
//!   `notify-keyspace-events` directive enables the event's class, the event
//!   is published on `__keyspace@<db>__:<key>` (message: the event name)
//!   and/or `__keyevent@<db>__:<event>` (message: the key).
//!
//! Command handlers report changes to the keyspace's [`Gate`] with
//! [`Gate::modified`], [`Gate::notify`] and [`Gate::touch`] (or the `Ctx`
//! wrappers) right where Redis calls
//! `signalModifiedKey` / `notifyKeyspaceEvent`, usually while they still hold
//! the key's shard lock. Nothing is done there: the event is appended to a
//! per-thread queue, and [`drain`] delivers the queue (through the
//! server's [`Deliver`]: WATCH, tracking, Pub/Sub) after the handler
//! returned (no shard lock held) but before the command counts as finished
//! (still inside the exec gate, see tx.rs), so an EXEC can never miss a
//! touch. Lazy expiry inside `Shard::get` and active expiry queue their
//! `expired` events the same way, which keeps Redis's order: a key expired
//! on access is announced before the event of the command that accessed it.
//!
//! Cost when nothing is watched and notifications are off: one relaxed
//! atomic load per call site ([`Gate::on`]).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// `K`: publish on `__keyspace@<db>__:<key>`.
pub const KEYSPACE: u32 = 1 << 0;
/// `E`: publish on `__keyevent@<db>__:<event>`.
pub const KEYEVENT: u32 = 1 << 1;
/// `g`: generic commands (DEL, EXPIRE, RENAME, ...).
pub const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub const STRING: u32 = 1 << 3;
/// `l`: list commands.
pub const LIST: u32 = 1 << 4;
/// `s`: set commands.
pub const SET: u32 = 1 << 5;
/// `h`: hash commands.
pub const HASH: u32 = 1 << 6;
/// `z`: sorted set commands.
pub const ZSET: u32 = 1 << 7;
/// `x`: expired events (a key deleted because its TTL passed).
pub const EXPIRED: u32 = 1 << 8;
/// `e`: evicted events (maxmemory).
pub const EVICTED: u32 = 1 << 9;
/// `t`: stream commands.
pub const STREAM: u32 = 1 << 10;
/// `m`: key-miss events (a read of a missing key).
pub const KEY_MISS: u32 = 1 << 11;
/// Module "loaded" events (not selectable by a flag letter).
pub const LOADED: u32 = 1 << 12;
/// `d`: module key type events.
pub const MODULE: u32 = 1 << 13;
/// `n`: new-key events (Redis 7.0).
pub const NEW: u32 = 1 << 14;
/// `A`: alias for `g$lshzxetd`.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// Whether key changes have anything to do, for one server: read on every
/// key change (one relaxed load), so it lives with the keyspace
/// (`Keyspace::events`), where lazy and active expiry report too.
///
/// Low 32 bits: the notify-keyspace-events flags (bit 31: client-side
/// caching is active, see tracking.rs); high 32 bits: the number of
/// (database, key) pairs watched by some client. Zero = nothing to do.
#[derive(Debug, Default)]
pub struct Gate(AtomicU64);

/// Bit of a [`Gate`] set while tracking.rs has work on key changes.
const TRACKING: u64 = 1 << 31;

impl Gate {
    /// True when a key change has anything to do (a key is watched,
    /// notifications are on, or clients track keys): one atomic load.
    #[inline]
    pub fn on(&self) -> bool {
        self.0.load(Ordering::Relaxed) != 0
    }

    /// The current notify-keyspace-events flags.
    #[inline]
    pub fn flags(&self) -> u32 {
        (self.0.load(Ordering::Relaxed) & !TRACKING) as u32
    }

    /// True while key changes must reach tracking.rs (some client tracks,
    /// or the tracking table is not empty).
    #[inline]
    pub fn tracking(&self) -> bool {
        self.0.load(Ordering::Relaxed) & TRACKING != 0
    }

    /// Turns the tracking bit on or off (tracking.rs).
    pub fn set_tracking(&self, on: bool) {
        if on {
            self.0.fetch_or(TRACKING, Ordering::AcqRel);
        } else {
            self.0.fetch_and(!TRACKING, Ordering::AcqRel);
        }
    }

    /// True when some key is watched.
    #[inline]
    pub fn watching(&self) -> bool {
        self.0.load(Ordering::Relaxed) >> 32 != 0
    }

    /// Sets the notification flags (CONFIG SET / start-up).
    pub fn set_flags(&self, f: u32) {
        let mut cur = self.0.load(Ordering::Relaxed);
        loop {
            let new = (cur & (!0xffff_ffff | TRACKING)) | f as u64;
            match self
                .0
                .compare_exchange_weak(cur, new, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(c) => cur = c,
            }
        }
    }

    /// Adjusts the count of watched (database, key) pairs (tx.rs registry).
    pub fn add_watched(&self, delta: i64) {
        if delta >= 0 {
            self.0.fetch_add((delta as u64) << 32, Ordering::AcqRel);
        } else {
            self.0.fetch_sub(((-delta) as u64) << 32, Ordering::AcqRel);
        }
    }

    #[inline]
    fn push(&self, db: usize, touch: bool, class: u32, event: &'static str, key: &[u8]) {
        let st = self.0.load(Ordering::Relaxed);
        let track = if touch && st & TRACKING != 0 {
            1 + u8::from(class == EXPIRED && event == "expired")
        } else {
            0
        };
        let touch = touch && st >> 32 != 0;
        let class = if class & (st & !TRACKING) as u32 != 0 {
            class
        } else {
            0
        };
        if !touch && class == 0 && track == 0 {
            return;
        }
        PENDING.with(|p| {
            p.borrow_mut().push(Pending {
                db: db as u32,
                touch,
                track,
                class,
                event,
                key: key.into(),
            })
        });
    }

    /// `key` of database `db` was modified: touches its watchers and emits
    /// `event` of `class` (signalModifiedKey + notifyKeyspaceEvent).
    #[inline]
    pub fn modified(&self, db: usize, key: &[u8], class: u32, event: &'static str) {
        crate::propagate::mark_dirty();
        if self.on() {
            self.push(db, true, class, event, key);
        }
    }

    /// Emits `event` of `class` for `key` without touching watchers.
    #[inline]
    pub fn notify(&self, db: usize, key: &[u8], class: u32, event: &'static str) {
        if self.on() {
            self.push(db, false, class, event, key);
        }
    }

    /// Touches the watchers of `key` without a notification.
    #[inline]
    pub fn touch(&self, db: usize, key: &[u8]) {
        crate::propagate::mark_dirty();
        if self.on() {
            self.push(db, true, 0, "", key);
        }
    }

    /// `key` was deleted because its TTL passed (lazy or active expiry):
    /// Redis 7.0 notifies `expired` and touches its watchers.
    #[inline]
    pub fn expired(&self, db: usize, key: &[u8]) {
        if self.on() {
            self.push(db, true, EXPIRED, "expired", key);
        }
    }

    /// `key` of database `db` was evicted (maxmemory). As Redis 7.0's
    /// evict.c `performEvictions`, this touches its watchers
    /// (signalModifiedKey) and notifies `evicted` (class `e`).
    #[inline]
    pub fn evicted(&self, db: usize, key: &[u8]) {
        if self.on() {
            self.push(db, true, EVICTED, "evicted", key);
        }
    }

    /// A read lookup of `key` of database `db` missed: emits `keymiss`
    /// (class `m`, Redis 7.0 db.c `lookupKey` unless `LOOKUP_NONOTIFY`).
    /// Only the letter `m` enables it (`A` does not include it). One
    /// atomic load when the class is off.
    #[inline]
    pub fn keymiss(&self, db: usize, key: &[u8]) {
        if self.0.load(Ordering::Relaxed) & KEY_MISS as u64 != 0 {
            self.push(db, false, KEY_MISS, "keymiss", key);
        }
    }
}

/// Where queued key events are delivered ([`drain`]): the server
/// implements it with the WATCH registry (tx.rs), client-side caching
/// (tracking.rs) and Pub/Sub (pubsub.rs), so this module depends on none
/// of them.
pub trait Deliver {
    /// The gate of the server's keyspace (its notification flags).
    fn gate(&self) -> &Gate;
    /// Marks the clients watching `key` of database `db` dirty
    /// (multi.c `touchWatchedKey`).
    fn touch_watchers(&self, db: usize, key: &[u8]);
    /// Invalidates `key` for client-side caching; `expired` when its TTL
    /// passed (tracking.c `trackingInvalidateKey`).
    fn invalidate(&self, key: &[u8], expired: bool);
    /// Publishes `message` on `channel` to subscribers and matching
    /// patterns.
    fn publish(&self, channel: &[u8], message: &[u8]);
}

/// Parses a notify-keyspace-events value (notify.c
/// `keyspaceEventsStringToFlags`); None for an unknown character.
pub fn parse_flags(s: &str) -> Option<u32> {
    let mut f = 0;
    for c in s.chars() {
        f |= match c {
            'A' => ALL,
            'g' => GENERIC,
            '$' => STRING,
            'l' => LIST,
            's' => SET,
            'h' => HASH,
            'z' => ZSET,
            'x' => EXPIRED,
            'e' => EVICTED,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            't' => STREAM,
            'm' => KEY_MISS,
            'd' => MODULE,
            'n' => NEW,
            _ => return None,
        };
    }
    Some(f)
}

/// Prints flags the way CONFIG GET shows them (notify.c
/// `keyspaceEventsFlagsToString`): `A` when every class of `A` is on, else
/// the class letters in a fixed order, then `K`, `E`, `m`.
pub fn format_flags(f: u32) -> String {
    let mut s = String::new();
    if f & ALL == ALL {
        s.push('A');
    } else {
        for (bit, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
            (NEW, 'n'),
        ] {
            if f & bit != 0 {
                s.push(c);
            }
        }
    }
    if f & KEYSPACE != 0 {
        s.push('K');
    }
    if f & KEYEVENT != 0 {
        s.push('E');
    }
    if f & KEY_MISS != 0 {
        s.push('m');
    }
    s
}

/// Validates and normalises a notify-keyspace-events value for the
/// configuration (Redis's error text for a bad character). The stored form
/// keeps every flag: Redis's printed form, plus a trailing `n` when `A`
/// hides it (Redis prints `KEAn` as `AKE` yet keeps `n` on); CONFIG GET
/// shows [`display`].
pub fn normalise(s: &str) -> Result<String, String> {
    let f = parse_flags(s)
        .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string())?;
    let mut out = format_flags(f);
    if f & ALL == ALL && f & NEW != 0 {
        out.push('n');
    }
    Ok(out)
}

/// The notify-keyspace-events value as CONFIG GET shows it (notify.c
/// `keyspaceEventsFlagsToString` of the stored flags).
pub fn display(stored: &str) -> String {
    parse_flags(stored).map_or_else(|| stored.to_string(), format_flags)
}

/// One queued key event.
struct Pending {
    db: u32,
    /// Touch watchers of the key.
    touch: bool,
    /// Invalidate the key for client-side caching: 1 modified, 2 expired.
    track: u8,
    /// Notification class (0 = none).
    class: u32,
    event: &'static str,
    key: Box<[u8]>,
}

thread_local! {
    static PENDING: RefCell<Vec<Pending>> = const { RefCell::new(Vec::new()) };
}

/// Events queued on a thread, set aside by [`take_queued`].
pub struct Queued(Vec<Pending>);

/// Takes this thread's queued events (a suspended script's, while the
/// other connections of its thread run: script/yielding.rs).
pub fn take_queued() -> Queued {
    Queued(PENDING.with(|p| std::mem::take(&mut *p.borrow_mut())))
}

/// Puts back events [`take_queued`] took, before any queued since.
pub fn restore_queued(q: Queued) {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        let later = std::mem::replace(&mut *p, q.0);
        p.extend(later);
    });
}

/// True when this thread has queued events.
#[inline]
pub fn pending() -> bool {
    PENDING.with(|p| !p.borrow().is_empty())
}

/// Processes this thread's queued events in order: touches watchers,
/// invalidates tracked keys and publishes notifications through `to`.
/// Called with no shard lock held.
pub fn drain(to: &dyn Deliver) {
    let mut batch = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    if batch.is_empty() {
        return;
    }
    for ev in batch.iter() {
        if ev.touch {
            to.touch_watchers(ev.db as usize, &ev.key);
        }
        if ev.track != 0 {
            to.invalidate(&ev.key, ev.track == 2);
        }
        if ev.class != 0 {
            publish_event(to, ev.db as usize, ev.class, ev.event, &ev.key);
        }
    }
    batch.clear();
    // Keep the allocation for the next batch when nothing was queued meanwhile.
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if p.is_empty() {
            *p = batch;
        }
    });
}

/// Publishes one keyspace event (notify.c `notifyKeyspaceEvent`).
fn publish_event(to: &dyn Deliver, db: usize, class: u32, event: &str, key: &[u8]) {
    let f = to.gate().flags();
    if f & class == 0 {
        return;
    }
    let mut dbs = itoa::Buffer::new();
    let dbs = dbs.format(db).as_bytes();
    if f & KEYSPACE != 0 {
        let mut ch = Vec::with_capacity(16 + key.len());
        ch.extend_from_slice(b"__keyspace@");
        ch.extend_from_slice(dbs);
        ch.extend_from_slice(b"__:");
        ch.extend_from_slice(key);
        to.publish(&ch, event.as_bytes());
    }
    if f & KEYEVENT != 0 {
        let mut ch = Vec::with_capacity(16 + event.len());
        ch.extend_from_slice(b"__keyevent@");
        ch.extend_from_slice(dbs);
        ch.extend_from_slice(b"__:");
        ch.extend_from_slice(event.as_bytes());
        to.publish(&ch, key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip_like_redis() {
        assert_eq!(format_flags(parse_flags("KEA$m").unwrap()), "AKEm");
        assert_eq!(format_flags(parse_flags("ngK").unwrap()), "gnK");
        assert_eq!(format_flags(parse_flags("").unwrap()), "");
        assert_eq!(format_flags(parse_flags("Elx").unwrap()), "lxE");
        assert!(parse_flags("Ab?").is_none());
        // 'n' is not part of 'A': kept in storage, hidden when printed.
        let stored = normalise("KEAn").unwrap();
        assert_eq!(parse_flags(&stored).unwrap() & NEW, NEW);
        assert_eq!(display(&stored), "AKE");
        assert_eq!(normalise("nE").unwrap(), "nE");
    }
}
