//! Geospatial commands (redis.io/commands/?group=geo): GEOADD, GEODIST,
//! GEOHASH, GEOPOS, GEOSEARCH, GEOSEARCHSTORE, GEORADIUS,
//! GEORADIUSBYMEMBER and their `_RO` variants, following Redis 7.0's
//! geo.c, geohash.c and geohash_helper.c as observed on redis-server 7.0.15.
//!
//! A geo index is an ordinary sorted set: a member's score is its position
//! as a 52-bit geohash (26 bits of latitude interleaved with 26 bits of
//! longitude, latitude in the even bits) over the WGS84 / EPSG:3785 limits
//! (longitude ±180, latitude ±85.05112878), so ZRANGE, ZSCORE, ZREM, DUMP,
//! RDB and AOF treat it like any sorted set. GEOADD is Redis's: it checks
//! the coordinates, turns them into scores and runs ZADD (which it is
//! propagated as), so encoding, events (`zadd`) and blocked BZPOP* clients
//! are ZADD's.
//!
//! Searches are Redis's: the radius (or the box's half-diagonal) picks a
//! geohash precision (`geohashEstimateStepsByRadius`), the centre's cell and
//! its eight neighbours (some dropped when outside the bounding box,
//! `geohashCalculateAreasByShapeWGS84`) become score ranges scanned in the
//! sorted set, and each candidate is kept when its haversine distance
//! (Earth radius 6372797.560856 m) passes the shape's test. Results keep
//! the scan order unless sorted (glibc's stable merge sort, or Redis's
//! partial quicksort `pqsort` when COUNT cuts the list), so ties come out as
//! Redis orders them. Distances are replied with `%.4f`, coordinates with
//! Redis's `addReplyHumanLongDouble` (`%.17Lf` with trailing zeros removed;
//! a RESP3 double), hashes as integers.
//!
//! Checks come in Redis's order: the search commands look the source key up
//! (hit or miss, WRONGTYPE) before parsing their arguments, and parse left
//! to right, so the first bad argument decides the error; GEODIST checks its
//! unit before the key. STORE / STOREDIST (GEORADIUS*, GEOSEARCHSTORE)
//! replace the destination with a new sorted set (event `georadiusstore` /
//! `geosearchstore`, after `new` when created) or delete it when nothing
//! matched or the source is missing (event `del`).

use super::keyspecs;
use super::{acl, cmd, err, flags::*, opt_is, Command, Ctx};
use crate::db::zset::{cmp_entry, Limits};
use crate::db::{blocking, hash_key, Entry, Value, ZSetValue};
use crate::events::{self, GENERIC, NEW};
use crate::resp::parse::OwnedArgs;
use crate::resp::{Args, Out};
use crate::server::Server;
use crate::util::{fmt_double_human, parse_i64};
use std::cmp::Ordering;
use std::sync::atomic::Ordering as AtomicOrdering;

const GEO: u64 = acl::GEO;

const RADIUS_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.";
const SEARCH_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape";

/// The geo family's table entries (arity, flags, key positions and specs,
/// ACL categories and docs as Redis 7.0's COMMAND INFO / COMMAND DOCS
/// report them).
pub static COMMANDS: &[Command] = &[
    cmd("geoadd", -5, WRITE | DENYOOM, (1, 1, 1), GEO, geoadd)
        .key_specs(keyspecs::EXPIRE)
        .doc(
            "geo",
            "3.2.0",
            "Add one or more geospatial items in the geospatial index represented using a sorted set",
            "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
        ),
    cmd("geodist", -4, READONLY, (1, 1, 1), GEO, geodist)
        .key_specs(keyspecs::DUMP)
        .doc(
            "geo",
            "3.2.0",
            "Returns the distance between two members of a geospatial index",
            "O(log(N))",
        ),
    cmd("geohash", -2, READONLY, (1, 1, 1), GEO, geohash)
        .key_specs(keyspecs::DUMP)
        .doc(
            "geo",
            "3.2.0",
            "Returns members of a geospatial index as standard geohash strings",
            "O(log(N)) for each member requested, where N is the number of elements in the sorted set.",
        ),
    cmd("geopos", -2, READONLY, (1, 1, 1), GEO, geopos)
        .key_specs(keyspecs::DUMP)
        .doc(
            "geo",
            "3.2.0",
            "Returns longitude and latitude of members of a geospatial index",
            "O(N) where N is the number of members requested.",
        ),
    cmd(
        "georadius",
        -6,
        WRITE | DENYOOM | MOVABLE_KEYS,
        (1, 1, 1),
        GEO,
        georadius,
    )
    .key_specs(keyspecs::GEORADIUS)
    .key_finder(keyspecs::georadius_keys)
    .doc(
        "geo",
        "3.2.0",
        "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point",
        RADIUS_COMPLEXITY,
    ),
    cmd("georadius_ro", -6, READONLY, (1, 1, 1), GEO, georadius_ro)
        .key_specs(keyspecs::DUMP)
        .doc(
            "geo",
            "3.2.10",
            "A read-only variant for GEORADIUS",
            RADIUS_COMPLEXITY,
        ),
    cmd(
        "georadiusbymember",
        -5,
        WRITE | DENYOOM | MOVABLE_KEYS,
        (1, 1, 1),
        GEO,
        georadiusbymember,
    )
    .key_specs(keyspecs::GEORADIUSBYMEMBER)
    .key_finder(keyspecs::georadius_keys)
    .doc(
        "geo",
        "3.2.0",
        "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member",
        RADIUS_COMPLEXITY,
    ),
    cmd(
        "georadiusbymember_ro",
        -5,
        READONLY,
        (1, 1, 1),
        GEO,
        georadiusbymember_ro,
    )
    .key_specs(keyspecs::DUMP)
    .doc(
        "geo",
        "3.2.10",
        "A read-only variant for GEORADIUSBYMEMBER",
        RADIUS_COMPLEXITY,
    ),
    cmd("geosearch", -7, READONLY, (1, 1, 1), GEO, geosearch)
        .key_specs(keyspecs::DUMP)
        .doc(
            "geo",
            "6.2.0",
            "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.",
            SEARCH_COMPLEXITY,
        ),
    cmd(
        "geosearchstore",
        -8,
        WRITE | DENYOOM,
        (1, 2, 1),
        GEO,
        geosearchstore,
    )
    .key_specs(keyspecs::ZRANGESTORE)
    .doc(
        "geo",
        "6.2.0",
        "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.",
        SEARCH_COMPLEXITY,
    ),
];

// ================================================================ geohash

/// Westernmost longitude (degrees) a geo index accepts (GEO_LONG_MIN).
pub const LON_MIN: f64 = -180.0;
/// Easternmost longitude (GEO_LONG_MAX).
pub const LON_MAX: f64 = 180.0;
/// Southernmost latitude (GEO_LAT_MIN, EPSG:3785's limit).
pub const LAT_MIN: f64 = -85.05112878;
/// Northernmost latitude (GEO_LAT_MAX).
pub const LAT_MAX: f64 = 85.05112878;
/// Bits per coordinate of a stored geohash (GEO_STEP_MAX): scores have 52.
pub const STEP_MAX: u8 = 26;
/// The sphere's radius in metres used for every distance
/// (EARTH_RADIUS_IN_METERS, geohash_helper.c).
pub const EARTH_RADIUS_M: f64 = 6372797.560856;
/// Half the Earth's circumference in Web Mercator metres (MERCATOR_MAX).
const MERCATOR_MAX: f64 = 20037726.37;
/// Degrees to radians, as `M_PI / 180.0` (D_R).
const D_R: f64 = std::f64::consts::PI / 180.0;

/// A coordinate interval (GeoHashRange).
#[derive(Debug, Clone, Copy)]
struct Span {
    min: f64,
    max: f64,
}

const WGS84_LON: Span = Span {
    min: LON_MIN,
    max: LON_MAX,
};
const WGS84_LAT: Span = Span {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// A geohash of `step` bits per coordinate (GeoHashBits). `bits` may hold
/// a bit above `2 * step` when a coordinate sat exactly on its range's upper
/// limit, as in Redis. Bits and step both 0 is Redis's "zeroed" cell, which
/// searches skip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cell {
    bits: u64,
    step: u8,
}

impl Cell {
    const ZERO: Cell = Cell { bits: 0, step: 0 };

    fn is_zero(self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The cell's bits shifted to the 52-bit score scale
    /// (geohashAlign52Bits).
    fn align52(self) -> u64 {
        self.bits << (52 - 2 * self.step as u32)
    }
}

/// A cell's extent in degrees (GeoHashArea).
#[derive(Debug, Clone, Copy)]
struct Area {
    lon: Span,
    lat: Span,
}

/// Moves the low 32 bits of `v` to the even bit positions of the result.
fn spread(v: u32) -> u64 {
    let mut x = v as u64;
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// The even bits of `v`, packed (the inverse of [`spread`]).
fn squash(v: u64) -> u32 {
    let mut x = v & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    ((x | (x >> 16)) & 0xFFFF_FFFF) as u32
}

/// Redis's `geohashEncode`: None outside the WGS84 limits or the ranges.
/// The offsets are truncated to integers as C's conversion to `uint32_t`
/// does (a coordinate on a range's upper limit gives `2^step`).
fn encode(lon_r: Span, lat_r: Span, lon: f64, lat: f64, step: u8) -> Option<Cell> {
    if step == 0 || step > 32 {
        return None;
    }
    if !(LON_MIN..=LON_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if lat < lat_r.min || lat > lat_r.max || lon < lon_r.min || lon > lon_r.max {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_off = (lat - lat_r.min) / (lat_r.max - lat_r.min) * scale;
    let lon_off = (lon - lon_r.min) / (lon_r.max - lon_r.min) * scale;
    Some(Cell {
        bits: spread(lat_off as u32) | (spread(lon_off as u32) << 1),
        step,
    })
}

/// Redis's `geohashDecode`: the cell's extent (None for a zeroed cell).
/// The `+ 1` of the upper edge wraps at 32 bits as C's `uint32_t` does.
fn decode(lon_r: Span, lat_r: Span, c: Cell) -> Option<Area> {
    if c.is_zero() {
        return None;
    }
    let ilat = squash(c.bits);
    let ilon = squash(c.bits >> 1);
    let div = (1u64 << c.step) as f64;
    let (lat_scale, lon_scale) = (lat_r.max - lat_r.min, lon_r.max - lon_r.min);
    Some(Area {
        lat: Span {
            min: lat_r.min + (ilat as f64 / div) * lat_scale,
            max: lat_r.min + (ilat.wrapping_add(1) as f64 / div) * lat_scale,
        },
        lon: Span {
            min: lon_r.min + (ilon as f64 / div) * lon_scale,
            max: lon_r.min + (ilon.wrapping_add(1) as f64 / div) * lon_scale,
        },
    })
}

fn decode_wgs84(c: Cell) -> Option<Area> {
    decode(WGS84_LON, WGS84_LAT, c)
}

/// C's `(uint64_t)` conversion of a double as x86-64 code performs it
/// (values from 2^63 up are converted after subtracting 2^63; what
/// `cvttsd2si` cannot represent becomes 2^63): how Redis turns a score
/// that is not a geohash (ZADD'ed by hand) into bits.
fn c_double_to_u64(x: f64) -> u64 {
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    let cvt = |v: f64| -> u64 {
        if (-TWO63..TWO63).contains(&v) {
            v as i64 as u64
        } else {
            1 << 63
        }
    };
    if x >= TWO63 {
        cvt(x - TWO63) ^ (1 << 63)
    } else {
        cvt(x)
    }
}

/// Longitude and latitude, in degrees, of a stored score: the centre of its
/// 26-bit cell, clamped to the WGS84 limits (Redis's `decodeGeohash` /
/// `geohashDecodeAreaToLongLat`). Any score decodes.
pub fn decode_score(score: f64) -> (f64, f64) {
    let cell = Cell {
        bits: c_double_to_u64(score),
        step: STEP_MAX,
    };
    let a = decode_wgs84(cell).expect("step is not zero");
    let lon = ((a.lon.min + a.lon.max) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((a.lat.min + a.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// The score GEOADD stores for a position within the WGS84 limits (the
/// 52-bit geohash of `geohashEncodeWGS84` at step 26); None outside them.
pub fn encode_score(lon: f64, lat: f64) -> Option<u64> {
    encode(WGS84_LON, WGS84_LAT, lon, lat, STEP_MAX).map(Cell::align52)
}

/// The 11-character base32 geohash GEOHASH replies for a score: the decoded
/// position re-encoded over the standard latitude range (-90, 90), 52 bits,
/// the 11th character always '0' (Redis's `geohashCommand`).
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = decode_score(score);
    let std_lat = Span {
        min: -90.0,
        max: 90.0,
    };
    let bits = encode(WGS84_LON, std_lat, lon, lat, STEP_MAX).map_or(0, |c| c.bits);
    let mut s = [b'0'; 11];
    for (i, ch) in s.iter_mut().enumerate().take(10) {
        *ch = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    s
}

/// Moves a cell one column east (`d > 0`) or west, wrapping around
/// (geohash_move_x: arithmetic on the odd bits with the even ones filled).
fn move_x(c: &mut Cell, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - 2 * c.step as u32;
    let x = c.bits & 0xAAAA_AAAA_AAAA_AAAA;
    let y = c.bits & 0x5555_5555_5555_5555;
    let zz = 0x5555_5555_5555_5555u64 >> shift;
    let x = if d > 0 {
        x.wrapping_add(zz + 1)
    } else {
        (x | zz).wrapping_sub(zz + 1)
    };
    c.bits = (x & (0xAAAA_AAAA_AAAA_AAAAu64 >> shift)) | y;
}

/// Moves a cell one row north (`d > 0`) or south, wrapping around
/// (geohash_move_y).
fn move_y(c: &mut Cell, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - 2 * c.step as u32;
    let x = c.bits & 0xAAAA_AAAA_AAAA_AAAA;
    let y = c.bits & 0x5555_5555_5555_5555;
    let zz = 0xAAAA_AAAA_AAAA_AAAAu64 >> shift;
    let y = if d > 0 {
        y.wrapping_add(zz + 1)
    } else {
        (y | zz).wrapping_sub(zz + 1)
    };
    c.bits = x | (y & (0x5555_5555_5555_5555u64 >> shift));
}

/// The cell moved `dx` columns and `dy` rows.
fn moved(mut c: Cell, dx: i8, dy: i8) -> Cell {
    move_x(&mut c, dx);
    move_y(&mut c, dy);
    c
}

/// Great-circle distance in metres between two positions given in degrees
/// (Redis's `geohashGetDistance`: haversine on a sphere of
/// [`EARTH_RADIUS_M`], with the same floating-point steps).
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let (lat1r, lon1r) = (lat1 * D_R, lon1 * D_R);
    let (lat2r, lon2r) = (lat2 * D_R, lon2 * D_R);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let v = ((lon2r - lon1r) / 2.0).sin();
    2.0 * EARTH_RADIUS_M * (u * u + lat1r.cos() * lat2r.cos() * v * v).sqrt().asin()
}

/// The cell precision for a search of `range_m` metres around latitude
/// `lat` (geohashEstimateStepsByRadius).
fn estimate_steps(mut range_m: f64, lat: f64) -> u8 {
    if range_m == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range_m < MERCATOR_MAX {
        range_m *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// A search area (GeoShape): its centre in degrees, the unit's size in
/// metres, and a radius or a box (width, height) in that unit.
#[derive(Debug, Clone, Copy)]
struct Shape {
    lon: f64,
    lat: f64,
    conversion: f64,
    kind: Kind,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Circle { radius: f64 },
    Rect { width: f64, height: f64 },
}

impl Shape {
    /// (min lon, min lat, max lon, max lat) of the area
    /// (geohashBoundingBox: the wider edge of the box towards the pole).
    fn bounding_box(&self) -> [f64; 4] {
        let (half_h, half_w) = match self.kind {
            Kind::Circle { radius } => (radius, radius),
            Kind::Rect { width, height } => (height / 2.0, width / 2.0),
        };
        let height = self.conversion * half_h;
        let width = self.conversion * half_w;
        let lat_delta = height / EARTH_RADIUS_M / D_R;
        let top = width / EARTH_RADIUS_M / ((self.lat + lat_delta) * D_R).cos() / D_R;
        let bottom = width / EARTH_RADIUS_M / ((self.lat - lat_delta) * D_R).cos() / D_R;
        let delta = if self.lat < 0.0 { bottom } else { top };
        [
            self.lon - delta,
            self.lat - lat_delta,
            self.lon + delta,
            self.lat + lat_delta,
        ]
    }

    /// The centre cell and its neighbours N, S, E, W, NE, NW, SE, SW, the
    /// ones that cannot hold a match zeroed
    /// (geohashCalculateAreasByShapeWGS84).
    fn cells(&self) -> [Cell; 9] {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounding_box();
        let radius_m = match self.kind {
            Kind::Circle { radius } => radius,
            Kind::Rect { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.conversion;
        let mut steps = estimate_steps(radius_m, self.lat);
        let around = |steps: u8| -> [Cell; 9] {
            let c = encode(WGS84_LON, WGS84_LAT, self.lon, self.lat, steps).unwrap_or(Cell {
                bits: 0,
                step: steps,
            });
            [
                c,
                moved(c, 0, 1),
                moved(c, 0, -1),
                moved(c, 1, 0),
                moved(c, -1, 0),
                moved(c, 1, 1),
                moved(c, -1, 1),
                moved(c, 1, -1),
                moved(c, -1, -1),
            ]
        };
        let mut cells = around(steps);
        let edge = |c: Cell| decode_wgs84(c).expect("cells have a step");
        let (north, south) = (edge(cells[1]), edge(cells[2]));
        let (east, west) = (edge(cells[3]), edge(cells[4]));
        let decrease = north.lat.max < max_lat
            || south.lat.min > min_lat
            || east.lon.max < max_lon
            || west.lon.min > min_lon;
        if steps > 1 && decrease {
            steps -= 1;
            cells = around(steps);
        }
        if steps >= 2 {
            let area = edge(cells[0]);
            let mut zero = |ids: [usize; 3]| {
                for i in ids {
                    cells[i] = Cell::ZERO;
                }
            };
            if area.lat.min < min_lat {
                zero([2, 8, 7]);
            }
            if area.lat.max > max_lat {
                zero([1, 5, 6]);
            }
            if area.lon.min < min_lon {
                zero([4, 8, 6]);
            }
            if area.lon.max > max_lon {
                zero([3, 7, 5]);
            }
        }
        cells
    }

    /// The distance in metres from the centre to a stored position when it
    /// lies in the shape (geoAppendIfWithinShape: the circle test, or the
    /// box test on the east-west and north-south distances).
    fn admit(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.kind {
            Kind::Circle { radius } => {
                let d = distance(self.lon, self.lat, lon, lat);
                (d <= radius * self.conversion).then_some(d)
            }
            Kind::Rect { width, height } => {
                let (w, h) = (width * self.conversion, height * self.conversion);
                let lon_d = distance(lon, lat, self.lon, lat);
                let lat_d = distance(lon, lat, lon, self.lat);
                if lon_d > w / 2.0 || lat_d > h / 2.0 {
                    return None;
                }
                Some(distance(self.lon, self.lat, lon, lat))
            }
        }
    }
}

/// One match of a search (geoPoint).
#[derive(Debug, Clone)]
struct Point {
    lon: f64,
    lat: f64,
    dist: f64,
    score: f64,
    member: Vec<u8>,
}

/// Appends the members with scores in `[min, max)` that lie in `shape`,
/// in score order, stopping once `limit` (when not 0) matches are held
/// (geoGetPointsInRange).
fn scan_range(
    z: &ZSetValue,
    min: f64,
    max: f64,
    shape: &Shape,
    out: &mut Vec<Point>,
    limit: usize,
) {
    let len = z.len();
    let mut rank = z.partition(&|s, _| s < min);
    // A listpack is walked from its start by every range call: take it whole.
    let chunk = if z.is_listpack() { len.max(1) } else { 64 };
    let mut done = false;
    while !done && rank < len {
        let end = rank.saturating_add(chunk).min(len);
        z.range(rank, end, false, |m, s| {
            if done {
                return;
            }
            if s >= max {
                done = true;
                return;
            }
            let (lon, lat) = decode_score(s);
            if let Some(dist) = shape.admit(lon, lat) {
                out.push(Point {
                    lon,
                    lat,
                    dist,
                    score: s,
                    member: m.to_vec(),
                });
            }
            if limit > 0 && !out.is_empty() && out.len() >= limit {
                done = true;
            }
        });
        rank = end;
    }
}

/// Every member of `z` inside `shape`, in Redis's scan order (cell by
/// cell, skipping zeroed cells and a cell equal to the last one scanned),
/// at most `limit` of them when not 0 (membersOfAllNeighbors).
fn search(z: &ZSetValue, shape: &Shape, limit: usize) -> Vec<Point> {
    let cells = shape.cells();
    let mut out = Vec::new();
    let mut last = 0usize;
    for (i, &c) in cells.iter().enumerate() {
        if c.is_zero() {
            continue;
        }
        if last != 0 && c == cells[last] {
            continue;
        }
        if limit > 0 && !out.is_empty() && out.len() >= limit {
            break;
        }
        let next = Cell {
            bits: c.bits.wrapping_add(1),
            step: c.step,
        };
        scan_range(
            z,
            c.align52() as f64,
            next.align52() as f64,
            shape,
            &mut out,
            limit,
        );
        last = i;
    }
    out
}

/// Redis's distance comparator (sort_gp_asc): greater, equal, else less
/// (so a NaN distance compares less than anything, as in C).
fn cmp_dist(a: f64, b: f64) -> Ordering {
    if a > b {
        Ordering::Greater
    } else if a == b {
        Ordering::Equal
    } else {
        Ordering::Less
    }
}

/// glibc's `qsort` as used on these arrays: its stable top-down merge sort
/// (msort.c), which takes from the left run unless the comparator says
/// greater. Reproduced rather than `sort_by` so that a comparator that is
/// not a total order (NaN distances) gives glibc's order and never panics.
fn msort<T>(v: &mut Vec<T>, cmp: &dyn Fn(&T, &T) -> Ordering) {
    fn rec<T>(v: &[T], idx: &mut [usize], tmp: &mut Vec<usize>, cmp: &dyn Fn(&T, &T) -> Ordering) {
        let n = idx.len();
        if n <= 1 {
            return;
        }
        let n1 = n / 2;
        {
            let (a, b) = idx.split_at_mut(n1);
            rec(v, a, tmp, cmp);
            rec(v, b, tmp, cmp);
        }
        tmp.clear();
        let (mut i, mut j) = (0, n1);
        while i < n1 && j < n {
            if cmp(&v[idx[i]], &v[idx[j]]) != Ordering::Greater {
                tmp.push(idx[i]);
                i += 1;
            } else {
                tmp.push(idx[j]);
                j += 1;
            }
        }
        tmp.extend_from_slice(&idx[i..n1]);
        let k = tmp.len();
        idx[..k].copy_from_slice(tmp);
    }
    let mut idx: Vec<usize> = (0..v.len()).collect();
    let mut tmp = Vec::with_capacity(v.len());
    rec(v, &mut idx, &mut tmp, cmp);
    let mut slots: Vec<Option<T>> = v.drain(..).map(Some).collect();
    v.extend(
        idx.into_iter()
            .map(|i| slots[i].take().expect("a permutation")),
    );
}

// ================================================================ replies

/// `printf(fmt, v)` for one double (glibc's exact rounding, "inf", "nan").
fn c_format(fmt: &std::ffi::CStr, v: f64) -> Vec<u8> {
    let mut buf = [0u8; 512];
    // SAFETY: `buf` is 512 bytes and snprintf writes at most that many,
    // NUL included; the formats passed take exactly one double.
    let n = unsafe {
        libc::snprintf(
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
            fmt.as_ptr(),
            v,
        )
    };
    buf[..(n.max(0) as usize).min(buf.len() - 1)].to_vec()
}

/// A distance as Redis's `addReplyDoubleDistance`: a bulk string `%.4f`
/// (RESP2 and RESP3 alike).
fn reply_distance(out: &mut Out, d: f64) {
    out.bulk(&c_format(c"%.4f", d));
}

/// A coordinate as Redis's `addReplyHumanLongDouble`: `%.17Lf` without
/// trailing zeros, a bulk string in RESP2 and a double in RESP3.
fn reply_human(out: &mut Out, v: f64) {
    let s = fmt_double_human(v);
    if out.resp3 {
        out.buf.push(b',');
        out.buf.extend_from_slice(&s);
        out.buf.extend_from_slice(b"\r\n");
    } else {
        out.bulk(&s);
    }
}

// ================================================================ parsing

/// A parse failure: a message, or a message ending with the command name
/// as the client typed it (Redis's `%s` of argv[0]).
enum Fail {
    Msg(String),
    Static(&'static str),
    ForCommand(&'static str),
}

/// Longitude and latitude arguments (extractLongLatOrReply): two doubles as
/// `getDoubleFromObject` parses them, then the WGS84 limits.
fn lon_lat(a: &[u8], b: &[u8]) -> Result<(f64, f64), Fail> {
    let lon = super::zsets::parse_score(a).ok_or(Fail::Static(err::NOT_FLOAT))?;
    let lat = super::zsets::parse_score(b).ok_or(Fail::Static(err::NOT_FLOAT))?;
    if !(LON_MIN..=LON_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        let mut m = String::from("ERR invalid longitude,latitude pair ");
        m.push_str(&String::from_utf8_lossy(&c_format(c"%f", lon)));
        m.push(',');
        m.push_str(&String::from_utf8_lossy(&c_format(c"%f", lat)));
        return Err(Fail::Msg(m));
    }
    Ok((lon, lat))
}

/// Metres per unit (extractUnitOrReply: m, km, ft, mi, any case).
fn unit(a: &[u8]) -> Result<f64, Fail> {
    if opt_is(a, b"m") {
        Ok(1.0)
    } else if opt_is(a, b"km") {
        Ok(1000.0)
    } else if opt_is(a, b"ft") {
        Ok(0.3048)
    } else if opt_is(a, b"mi") {
        Ok(1609.34)
    } else {
        Err(Fail::Static(
            "ERR unsupported unit provided. please use M, KM, FT, MI",
        ))
    }
}

/// `radius unit` (extractDistanceOrReply): (radius, metres per unit).
fn radius_unit(r: &[u8], u: &[u8]) -> Result<(f64, f64), Fail> {
    let radius = super::zsets::parse_score(r).ok_or(Fail::Static("ERR need numeric radius"))?;
    if radius < 0.0 {
        return Err(Fail::Static("ERR radius cannot be negative"));
    }
    Ok((radius, unit(u)?))
}

/// `width height unit` (extractBoxOrReply): (width, height, metres per
/// unit).
fn box_unit(w: &[u8], h: &[u8], u: &[u8]) -> Result<(f64, f64, f64), Fail> {
    let width = super::zsets::parse_score(w).ok_or(Fail::Static("ERR need numeric width"))?;
    let height = super::zsets::parse_score(h).ok_or(Fail::Static("ERR need numeric height"))?;
    if height < 0.0 || width < 0.0 {
        return Err(Fail::Static("ERR height or width cannot be negative"));
    }
    Ok((width, height, unit(u)?))
}

/// The position of `member` in `z` (longLatFromMember).
fn member_pos(z: &ZSetValue, member: &[u8]) -> Result<(f64, f64), Fail> {
    z.score(member)
        .map(decode_score)
        .ok_or(Fail::Static("ERR could not decode requested zset member"))
}

/// Which search command runs (georadiusGeneric's flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// GEORADIUS / GEORADIUS_RO (`ro`: no STORE).
    Radius { ro: bool },
    /// GEORADIUSBYMEMBER / GEORADIUSBYMEMBER_RO.
    ByMember { ro: bool },
    /// GEOSEARCH.
    Search,
    /// GEOSEARCHSTORE.
    SearchStore,
}

impl Variant {
    fn src_index(self) -> usize {
        if self == Variant::SearchStore {
            2
        } else {
            1
        }
    }
    fn nostore(self) -> bool {
        matches!(
            self,
            Variant::Radius { ro: true } | Variant::ByMember { ro: true }
        )
    }
    fn geosearch(self) -> bool {
        matches!(self, Variant::Search | Variant::SearchStore)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// A parsed search request.
#[derive(Debug, Clone, Copy)]
struct Query {
    shape: Shape,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    sort: Sort,
    any: bool,
    /// COUNT (0: none).
    count: u64,
    /// Argument index of the STORE / STOREDIST destination.
    store: Option<usize>,
    storedist: bool,
}

/// Parses a search request as Redis's `georadiusGeneric`, left to right,
/// with the source `z` (None when missing: member positions are then not
/// looked up, and GEORADIUSBYMEMBER's radius is not parsed).
fn parse(args: &Args<'_>, v: Variant, z: Option<&ZSetValue>) -> Result<Query, Fail> {
    let mut q = Query {
        shape: Shape {
            lon: 0.0,
            lat: 0.0,
            conversion: 0.0,
            kind: Kind::Circle { radius: 0.0 },
        },
        withdist: false,
        withhash: false,
        withcoord: false,
        sort: Sort::None,
        any: false,
        count: 0,
        store: None,
        storedist: false,
    };
    let base = match v {
        Variant::Radius { .. } => {
            (q.shape.lon, q.shape.lat) = lon_lat(args.get(2), args.get(3))?;
            let (radius, conv) = radius_unit(args.get(4), args.get(5))?;
            q.shape.kind = Kind::Circle { radius };
            q.shape.conversion = conv;
            6
        }
        Variant::ByMember { .. } => {
            if let Some(z) = z {
                (q.shape.lon, q.shape.lat) = member_pos(z, args.get(2))?;
                let (radius, conv) = radius_unit(args.get(3), args.get(4))?;
                q.shape.kind = Kind::Circle { radius };
                q.shape.conversion = conv;
            }
            5
        }
        Variant::Search => 2,
        Variant::SearchStore => {
            q.store = Some(1);
            3
        }
    };
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let remaining = args.len().saturating_sub(base);
    let gs = v.geosearch();
    let mut i = 0;
    while i < remaining {
        let a = args.get(base + i);
        let at = |k: usize| args.get(base + i + k);
        if opt_is(a, b"withdist") {
            q.withdist = true;
        } else if opt_is(a, b"withhash") {
            q.withhash = true;
        } else if opt_is(a, b"withcoord") {
            q.withcoord = true;
        } else if opt_is(a, b"any") {
            q.any = true;
        } else if opt_is(a, b"asc") {
            q.sort = Sort::Asc;
        } else if opt_is(a, b"desc") {
            q.sort = Sort::Desc;
        } else if opt_is(a, b"count") && i + 1 < remaining {
            let n = parse_i64(at(1)).ok_or(Fail::Static(err::NOT_INT))?;
            if n <= 0 {
                return Err(Fail::Static("ERR COUNT must be > 0"));
            }
            q.count = n as u64;
            i += 1;
        } else if (opt_is(a, b"store") || opt_is(a, b"storedist"))
            && i + 1 < remaining
            && !v.nostore()
            && !gs
        {
            q.store = Some(base + i + 1);
            q.storedist = opt_is(a, b"storedist");
            i += 1;
        } else if opt_is(a, b"storedist") && v == Variant::SearchStore {
            q.storedist = true;
        } else if opt_is(a, b"frommember") && i + 1 < remaining && gs && !fromloc {
            if let Some(z) = z {
                (q.shape.lon, q.shape.lat) = member_pos(z, at(1))?;
            }
            frommember = true;
            i += 1;
        } else if opt_is(a, b"fromlonlat") && i + 2 < remaining && gs && !frommember {
            (q.shape.lon, q.shape.lat) = lon_lat(at(1), at(2))?;
            fromloc = true;
            i += 2;
        } else if opt_is(a, b"byradius") && i + 2 < remaining && gs && !bybox {
            let (radius, conv) = radius_unit(at(1), at(2))?;
            q.shape.kind = Kind::Circle { radius };
            q.shape.conversion = conv;
            byradius = true;
            i += 2;
        } else if opt_is(a, b"bybox") && i + 3 < remaining && gs && !byradius {
            let (width, height, conv) = box_unit(at(1), at(2), at(3))?;
            q.shape.kind = Kind::Rect { width, height };
            q.shape.conversion = conv;
            bybox = true;
            i += 3;
        } else {
            return Err(Fail::Static(err::SYNTAX));
        }
        i += 1;
    }
    if q.store.is_some() && (q.withdist || q.withhash || q.withcoord) {
        return Err(Fail::Static(if v == Variant::SearchStore {
            "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        } else {
            "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        }));
    }
    if gs && !(frommember || fromloc) {
        return Err(Fail::ForCommand(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for ",
        ));
    }
    if gs && !(byradius || bybox) {
        return Err(Fail::ForCommand(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for ",
        ));
    }
    if q.any && q.count == 0 {
        return Err(Fail::Static("ERR the ANY argument requires COUNT argument"));
    }
    Ok(q)
}

// ================================================================ commands

/// The sorted-set encoding limits (zset-max-listpack-entries / -value).
fn limits(ctx: &Ctx<'_>) -> Limits {
    let l = &ctx.server.live;
    Limits {
        max_entries: l.zset_max_listpack_entries.load(AtomicOrdering::Relaxed) as usize,
        max_value: l.zset_max_listpack_value.load(AtomicOrdering::Relaxed) as usize,
    }
}

/// GEOADD key [NX|XX] [CH] longitude latitude member [...]: integer, as
/// ZADD with the same options (members added, plus updated with CH).
/// Errors, before the key is looked up: "ERR syntax error" when the
/// triplets do not add up or NX and XX are both given, "ERR value is not a
/// valid float", "ERR invalid longitude,latitude pair %f,%f"; then ZADD's
/// (WRONGTYPE, "ERR syntax error" for no triplet at all). Runs and is
/// propagated as `zadd key [options] score member ...` (geoaddCommand).
fn geoadd(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let (mut nx, mut xx) = (false, false);
    let mut first = 2;
    while first < args.len() {
        let a = args.get(first);
        if opt_is(a, b"nx") {
            nx = true;
        } else if opt_is(a, b"xx") {
            xx = true;
        } else if !opt_is(a, b"ch") {
            break;
        }
        first += 1;
    }
    if !(args.len() - first).is_multiple_of(3) || (nx && xx) {
        return ctx.syntax();
    }
    let mut zadd = OwnedArgs::default();
    zadd.push(b"zadd");
    zadd.push(args.get(1));
    // The options as given (up to a NUL byte, as strcasecmp saw them).
    for i in 2..first {
        zadd.push(super::c_str(args.get(i), usize::MAX));
    }
    let mut digits = itoa::Buffer::new();
    for j in (first..args.len()).step_by(3) {
        let (lon, lat) = match lon_lat(args.get(j), args.get(j + 1)) {
            Ok(p) => p,
            Err(f) => return fail(ctx, args, f),
        };
        let score = encode_score(lon, lat).expect("checked coordinates encode");
        zadd.push(digits.format(score).as_bytes());
        zadd.push(args.get(j + 2));
    }
    let zargs = zadd.args();
    let argv: Vec<&[u8]> = zargs.iter().collect();
    crate::propagate::rewrite(&argv);
    let run = super::table()
        .by_full_name(b"zadd")
        .expect("zadd is in the table")
        .handler;
    run(ctx, &zargs);
}

/// Replies a parse failure.
fn fail(ctx: &mut Ctx<'_>, args: &Args<'_>, f: Fail) {
    match f {
        Fail::Msg(m) => ctx.error(&m),
        Fail::Static(m) => ctx.error(m),
        Fail::ForCommand(prefix) => ctx.error_with(prefix, args.get(0), ""),
    }
}

/// Looks `key` up for reading ([`super::zsets::read`]: counts a hit or
/// miss, refreshes its LRU clock) and runs `f` on its sorted set (None
/// when missing). Err(()) after replying WRONGTYPE.
fn read<R>(ctx: &mut Ctx<'_>, key: &[u8], f: impl Fn(Option<&ZSetValue>) -> R) -> Result<R, ()> {
    Ok(super::zsets::read(ctx, key, |z, _| f(Some(z)))?.unwrap_or_else(|| f(None)))
}

/// GEODIST key member1 member2 [M|KM|FT|MI]: the distance as a bulk string
/// with 4 decimals in the unit (metres by default), or null when the key
/// or a member is missing. The unit is checked first ("ERR unsupported unit
/// provided. please use M, KM, FT, MI"; a sixth argument is "ERR syntax
/// error"), then the key (WRONGTYPE).
fn geodist(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let per_unit = match args.len() {
        5 => match unit(args.get(4)) {
            Ok(u) => u,
            Err(f) => return fail(ctx, args, f),
        },
        4 => 1.0,
        _ => return ctx.syntax(),
    };
    let r = read(ctx, args.get(1), |z| {
        let z = z?;
        let s1 = z.score(args.get(2))?;
        let s2 = z.score(args.get(3))?;
        Some((decode_score(s1), decode_score(s2)))
    });
    match r {
        Err(()) => {}
        Ok(None) => ctx.out.null(),
        Ok(Some(((lon1, lat1), (lon2, lat2)))) => {
            reply_distance(ctx.out, distance(lon1, lat1, lon2, lat2) / per_unit)
        }
    }
}

/// GEOHASH key [member ...]: an array with each member's 11-character
/// geohash string, null for a missing member (all null for a missing key).
fn geohash(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let r = read(ctx, args.get(1), |z| {
        (2..args.len())
            .map(|i| z.and_then(|z| z.score(args.get(i))).map(geohash_string))
            .collect::<Vec<_>>()
    });
    if let Ok(hashes) = r {
        ctx.out.array(hashes.len());
        for h in hashes {
            match h {
                Some(s) => ctx.out.bulk(&s),
                None => ctx.out.null(),
            }
        }
    }
}

/// GEOPOS key [member ...]: an array with each member's [longitude,
/// latitude] (decoded cell centres), a null array for a missing member.
fn geopos(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let r = read(ctx, args.get(1), |z| {
        (2..args.len())
            .map(|i| z.and_then(|z| z.score(args.get(i))).map(decode_score))
            .collect::<Vec<_>>()
    });
    if let Ok(pos) = r {
        ctx.out.array(pos.len());
        for p in pos {
            match p {
                Some((lon, lat)) => {
                    ctx.out.array(2);
                    reply_human(ctx.out, lon);
                    reply_human(ctx.out, lat);
                }
                None => ctx.out.null_array(),
            }
        }
    }
}

/// GEORADIUS key longitude latitude radius M|KM|FT|MI [WITHCOORD]
/// [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC|DESC] [STORE key]
/// [STOREDIST key]: see [`search_generic`].
fn georadius(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    search_generic(ctx, args, Variant::Radius { ro: false });
}

/// GEORADIUS_RO: GEORADIUS without STORE / STOREDIST.
fn georadius_ro(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    search_generic(ctx, args, Variant::Radius { ro: true });
}

/// GEORADIUSBYMEMBER key member radius unit [options as GEORADIUS].
fn georadiusbymember(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    search_generic(ctx, args, Variant::ByMember { ro: false });
}

/// GEORADIUSBYMEMBER_RO: GEORADIUSBYMEMBER without STORE / STOREDIST.
fn georadiusbymember_ro(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    search_generic(ctx, args, Variant::ByMember { ro: true });
}

/// GEOSEARCH key FROMMEMBER member | FROMLONLAT longitude latitude
/// BYRADIUS radius unit | BYBOX width height unit [ASC|DESC]
/// [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH].
fn geosearch(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    search_generic(ctx, args, Variant::Search);
}

/// GEOSEARCHSTORE destination source [GEOSEARCH's area options] [ASC|DESC]
/// [COUNT count [ANY]] [STOREDIST].
fn geosearchstore(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    search_generic(ctx, args, Variant::SearchStore);
}

/// The destination a request would store into, found before the keys are
/// locked: GEOSEARCHSTORE's first key, or the last STORE / STOREDIST key of
/// GEORADIUS and GEORADIUSBYMEMBER (the scan of Redis's georadiusGetKeys,
/// which agrees with the argument parser whenever the request parses).
fn destination(args: &Args<'_>, v: Variant) -> Option<usize> {
    match v {
        Variant::SearchStore => Some(1),
        Variant::Radius { ro: false } | Variant::ByMember { ro: false } => {
            let k = keyspecs::georadius_keys(args);
            k.iter().nth(1).map(|k| k.pos)
        }
        _ => None,
    }
}

/// What the locked phase of a search found.
enum Found {
    Failed(Fail),
    WrongType,
    /// The source is missing (the request parsed).
    Missing(Query),
    /// The matches, sorted and cut to COUNT.
    Matches(Query, Vec<Point>),
    /// The request stores into another key than the one locked (the
    /// pre-scan and the parser disagree, not expected): lock it and retry.
    Relock(Option<usize>),
}

/// The search commands (Redis's `georadiusGeneric`). Order of checks: the
/// source is looked up (hit or miss; WRONGTYPE), GEORADIUS's centre and
/// radius and GEORADIUSBYMEMBER's member ("ERR could not decode requested
/// zset member", only when the key exists) and radius, then the options
/// left to right ("ERR syntax error", "ERR value is not an integer or out
/// of range", "ERR COUNT must be > 0", "ERR need numeric radius" / "width"
/// / "height", "ERR radius cannot be negative", "ERR height or width cannot
/// be negative", "ERR unsupported unit provided. please use M, KM, FT,
/// MI", "ERR invalid longitude,latitude pair %f,%f"), then STORE with
/// WITH* options, a missing FROM* or BY* option ("ERR exactly one of ...
/// can be specified for <command>") and ANY without COUNT.
///
/// Replies: an array of members, each an array [member, distance (bulk,
/// `%.4f`, in the unit), hash (integer), [longitude, latitude]] when WITH*
/// options ask for them; with a destination, the number of members stored
/// (0 and the destination deleted when nothing matched or the source is
/// missing). COUNT without ASC/DESC (and without ANY) sorts ascending; ANY
/// stops the scan at COUNT matches.
fn search_generic(ctx: &mut Ctx<'_>, args: &Args<'_>, v: Variant) {
    let server: &Server = ctx.server;
    let db = ctx.client.db;
    let now = ctx.now;
    let src = args.get(v.src_index());
    let hs = hash_key(src);
    let mut dst_at = destination(args, v);
    let t = ctx.touch_time();
    loop {
        let hd = dst_at.map(|i| hash_key(args.get(i)));
        let mut keys = vec![(db, hs)];
        keys.extend(hd.map(|h| (db, h)));
        let mut locks = server.keyspace.lock_keys(&keys);
        let (found, outcome) = match locks.shard(db, hs).get(hs, src, now) {
            None => (
                false,
                match parse(args, v, None) {
                    Ok(q) if q.store != dst_at => Found::Relock(q.store),
                    Ok(q) => Found::Missing(q),
                    Err(f) => Found::Failed(f),
                },
            ),
            Some(e) => {
                if let Some(t) = t {
                    t.record(&mut e.lru);
                }
                let outcome = match &e.value {
                    Value::ZSet(z) => match parse(args, v, Some(z)) {
                        Ok(q) if q.store != dst_at => Found::Relock(q.store),
                        Ok(q) => Found::Matches(q, matches(z, &q)),
                        Err(f) => Found::Failed(f),
                    },
                    _ => Found::WrongType,
                };
                (true, outcome)
            }
        };
        let parsed = match outcome {
            Found::Relock(at) => {
                drop(locks);
                dst_at = at;
                continue;
            }
            Found::Failed(f) => Err(Some(f)),
            Found::WrongType => Err(None),
            Found::Missing(q) => Ok((q, None)),
            Found::Matches(q, p) => Ok((q, Some(p))),
        };
        ctx.hit(src, found);
        let (q, points) = match parsed {
            Ok(r) => r,
            Err(f) => {
                drop(locks);
                return match f {
                    Some(f) => fail(ctx, args, f),
                    None => ctx.wrongtype(),
                };
            }
        };
        let Some(dst_at) = q.store else {
            drop(locks);
            if !v.nostore() && !v.geosearch() {
                ctx.dirty = Some(0);
            }
            return reply_points(ctx.out, &q, points.unwrap_or_default());
        };
        // Store (or delete) the destination, as setKey / dbDelete.
        let dst = args.get(dst_at);
        let hd = hash_key(dst);
        let lim = limits(ctx);
        let mut items: Vec<(Vec<u8>, f64)> = points
            .unwrap_or_default()
            .into_iter()
            .map(|p| {
                let s = if q.storedist {
                    p.dist / q.shape.conversion
                } else {
                    p.score
                };
                (p.member, s)
            })
            .collect();
        items.sort_by(|a, b| cmp_entry(a.1, &a.0, b.1, &b.0));
        items.dedup_by(|a, b| a.0 == b.0);
        let n = items.len();
        let shard = locks.shard(db, hd);
        let (old, existed) = if n == 0 {
            let old = shard.remove(hd, dst);
            let existed = old.is_some();
            (old, existed)
        } else {
            let existed = shard.get(hd, dst, now).is_some();
            let z = ZSetValue::from_sorted(&items, lim);
            let e = Entry::new(Value::ZSet(Box::new(z)), server.keyspace.lru.initial(now));
            (shard.insert(hd, dst, e), existed)
        };
        if n > 0 {
            if !existed {
                ctx.notify(dst, NEW, "new");
            }
            let event = if v.geosearch() {
                "geosearchstore"
            } else {
                "georadiusstore"
            };
            ctx.modified(dst, events::ZSET, event);
            blocking::serve_and_release(server, locks, db, &[dst], now);
        } else {
            if existed {
                ctx.modified(dst, GENERIC, "del");
            }
            drop(locks);
        }
        crate::db::lazyfree::free_old(old, crate::db::lazyfree::Reason::ServerDel);
        ctx.dirty = Some(if n > 0 { n as u64 } else { existed as u64 });
        ctx.out.int(n as i64);
        return;
    }
}

/// The matches of `q` in `z`, sorted as asked (COUNT alone sorts
/// ascending) and cut to COUNT.
fn matches(z: &ZSetValue, q: &Query) -> Vec<Point> {
    let count = q.count as usize;
    let mut sort = q.sort;
    if count != 0 && sort == Sort::None && !q.any {
        sort = Sort::Asc;
    }
    let mut pts = search(z, &q.shape, if q.any { count } else { 0 });
    let returned = if count == 0 || pts.len() < count {
        pts.len()
    } else {
        count
    };
    if sort != Sort::None && !pts.is_empty() {
        let desc = sort == Sort::Desc;
        let cmp = move |a: &Point, b: &Point| {
            let o = cmp_dist(a.dist, b.dist);
            if desc {
                o.reverse()
            } else {
                o
            }
        };
        if returned == pts.len() {
            msort(&mut pts, &cmp);
        } else {
            super::sort::pqsort(&mut pts, &cmp, 0, returned as i64 - 1);
        }
    }
    pts.truncate(returned);
    pts
}

/// Replies the matches of a search without a destination.
fn reply_points(out: &mut Out, q: &Query, points: Vec<Point>) {
    let extra = q.withdist as usize + q.withhash as usize + q.withcoord as usize;
    out.array(points.len());
    for p in points {
        if extra > 0 {
            out.array(extra + 1);
        }
        out.bulk(&p.member);
        if q.withdist {
            reply_distance(out, p.dist / q.shape.conversion);
        }
        if q.withhash {
            out.int(p.score as i64);
        }
        if q.withcoord {
            out.array(2);
            reply_human(out, p.lon);
            reply_human(out, p.lat);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_round_trips() {
        for v in [0u32, 1, 0x3ff_ffff, 0xdead_beef, u32::MAX] {
            assert_eq!(squash(spread(v)), v);
            assert_eq!(squash(spread(v) << 1 >> 1), v);
        }
    }

    #[test]
    fn palermo_and_catania() {
        let p = encode_score(13.361389, 38.115556).unwrap();
        let c = encode_score(15.087269, 37.502669).unwrap();
        assert_eq!(p, 3479099956230698);
        assert_eq!(c, 3479447370796909);
        let (lon, lat) = decode_score(p as f64);
        assert_eq!(fmt_double_human(lon), b"13.36138933897018433");
        assert_eq!(fmt_double_human(lat), b"38.11555639549629859");
        let (lon2, lat2) = decode_score(c as f64);
        let d = distance(lon, lat, lon2, lat2);
        assert_eq!(c_format(c"%.4f", d), b"166274.1516");
        assert_eq!(&geohash_string(p as f64), b"sqc8b49rny0");
        assert_eq!(&geohash_string(c as f64), b"sqdtr74hyu0");
    }

    #[test]
    fn odd_scores_decode_as_redis() {
        // Checked against redis-server 7.0.15 (ZADD then GEOPOS).
        assert_eq!(decode_score(-1.0).0, 180.0);
        assert_eq!(
            fmt_double_human(decode_score(1e300).0),
            b"-179.99999731779098511"
        );
        assert_eq!(decode_score(f64::NEG_INFINITY).0, 180.0);
        assert_eq!(
            fmt_double_human(decode_score(f64::NEG_INFINITY).1),
            b"-85.05112751263942528"
        );
    }

    #[test]
    fn moves_wrap_like_redis() {
        let c = encode(WGS84_LON, WGS84_LAT, 179.9, 0.0, 4).unwrap();
        let e = moved(c, 1, 0);
        let w = moved(e, -1, 0);
        assert_eq!(w, c);
        assert_eq!(squash(e.bits >> 1), 0);
        let n = moved(c, 0, 1);
        assert_eq!(moved(n, 0, -1), c);
    }

    #[test]
    fn msort_is_stable_and_total_on_nan() {
        let mut v = vec![(3.0, 0), (1.0, 1), (3.0, 2), (f64::NAN, 3), (0.5, 4)];
        msort(&mut v, &|a: &(f64, i32), b: &(f64, i32)| cmp_dist(a.0, b.0));
        let ids: Vec<i32> = v.iter().map(|x| x.1).collect();
        assert_eq!(ids.len(), 5);
        let mut v = vec![(3.0, 0), (1.0, 1), (3.0, 2), (0.5, 4)];
        msort(&mut v, &|a: &(f64, i32), b: &(f64, i32)| cmp_dist(a.0, b.0));
        assert_eq!(v.iter().map(|x| x.1).collect::<Vec<_>>(), vec![4, 1, 0, 2]);
    }
}
