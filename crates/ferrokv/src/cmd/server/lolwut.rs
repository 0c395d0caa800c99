//! LOLWUT [VERSION v] [args...] as Redis 7.0 has it (lolwut.c, lolwut5.c,
//! lolwut6.c; written anew here):
//!
//! - without VERSION, or for a version with no drawing of its own, the line
//!   `Redis ver. <redis_version>` (ferrokv reports Redis 7.0.15);
//! - VERSION 5 (and 4.9): Georg Nees' "Schotter", squares drawn with
//!   Bresenham lines on a canvas rendered as Braille characters (2x4 pixels
//!   each), the squares of the lower rows rotated and shifted at random;
//!   arguments `[columns] [squares-per-row] [squares-per-col]` (66 8 12);
//! - VERSION 6 (and 5.9): a city skyline in the four grays of the terminal
//!   palette, buildings and windows at random; arguments `[columns]
//!   [rows]` (80 20).
//!
//! The randomness is C's `rand()`, as Redis's: the C library's generator,
//! seeded once per process from the time and the process id as Redis's
//! `main` seeds it, and every coordinate goes through the same single- and
//! double-precision steps as Redis's code, so a drawing that uses no random
//! number (Schotter with at most two rows of squares, and the unrotated top
//! rows of any Schotter) is byte-identical to redis-server's, and a random
//! one is one Redis could have drawn.

use crate::cmd::{cmd, err, flags::*, Command, Ctx};
use crate::resp::Args;

/// The LOLWUT table entry (Redis 7.0: `readonly fast`, `@read @fast`).
pub static COMMANDS: &[Command] = &[
    cmd("lolwut", -1, READONLY | FAST, (0, 0, 0), 0, lolwut).doc(
        "server",
        "5.0.0",
        "Display some computer art and the Redis version",
        "",
    ),
];

/// LOLWUT [VERSION v] [args...]: a verbatim string (RESP2: bulk). `v` must
/// be an integer (`ERR value is not an integer or out of range`); it picks
/// the drawing as Redis does, from the text of `"<v as unsigned>.0.0"`.
/// The version-specific arguments are integers too, clamped to Redis's
/// limits.
fn lolwut(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let mut version = crate::REDIS_VERSION.to_string();
    let mut first = 1;
    if args.len() >= 3 && args.get(1).eq_ignore_ascii_case(b"version") {
        let Some(v) = crate::util::parse_i64(args.get(2)) else {
            return ctx.error(err::NOT_INT);
        };
        // C's (unsigned int) conversion.
        version = format!("{}.0.0", v as u32);
        first = 3;
    }
    // Each drawing parses only the arguments it takes, in order, as Redis
    // (an unused or extra argument is never looked at).
    let param = |i: usize, default: i64| -> Option<i64> {
        if first + i < args.len() {
            crate::util::parse_i64(args.get(first + i))
        } else {
            Some(default)
        }
    };
    let v = version.as_bytes();
    let is = |major: u8, minor_nine: bool| {
        v.len() >= 3 && v[0] == major && v[1] == b'.' && ((v[2] == b'9') == minor_nine)
    };
    let text = if is(b'5', false) || is(b'4', true) {
        let (Some(cols), Some(per_row), Some(per_col)) = (param(0, 66), param(1, 8), param(2, 12))
        else {
            return ctx.error(err::NOT_INT);
        };
        lolwut5(cols, per_row, per_col)
    } else if is(b'6', false) || is(b'5', true) {
        let (Some(cols), Some(rows)) = (param(0, 80), param(1, 20)) else {
            return ctx.error(err::NOT_INT);
        };
        lolwut6(cols, rows)
    } else {
        format!("Redis ver. {}\n", crate::REDIS_VERSION).into_bytes()
    };
    ctx.out.verbatim(&text);
}

/// C's `rand()`, seeded once per process as Redis's `main` does
/// (`srand(time(NULL)^getpid())`).
fn c_rand() -> i32 {
    static SEED: std::sync::Once = std::sync::Once::new();
    SEED.call_once(|| {
        // SAFETY: time, getpid and srand have no memory-safety
        // preconditions.
        unsafe {
            let t = libc::time(std::ptr::null_mut());
            libc::srand((t as u32) ^ (libc::getpid() as u32));
        }
    });
    // SAFETY: rand has no preconditions (glibc's is thread-safe).
    unsafe { libc::rand() }
}

/// A canvas of `width` x `height` pixels, one byte (a color) each.
struct Canvas {
    width: i32,
    height: i32,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: i32, height: i32, bg: u8) -> Canvas {
        Canvas {
            width,
            height,
            pixels: vec![bg; (width.max(0) as usize) * (height.max(0) as usize)],
        }
    }

    /// Sets a pixel; coordinates outside the canvas are ignored.
    fn draw_pixel(&mut self, x: i32, y: i32, color: u8) {
        if x < 0 || x >= self.width || y < 0 || y >= self.height {
            return;
        }
        self.pixels[(x + y * self.width) as usize] = color;
    }

    /// A pixel's color; 0 outside the canvas.
    fn get_pixel(&self, x: i32, y: i32) -> u8 {
        if x < 0 || x >= self.width || y < 0 || y >= self.height {
            return 0;
        }
        self.pixels[(x + y * self.width) as usize]
    }

    /// Bresenham's line from (x1, y1) to (x2, y2), both ends included.
    fn draw_line(&mut self, mut x1: i32, mut y1: i32, x2: i32, y2: i32, color: u8) {
        let dx = (x2 - x1).abs();
        let dy = (y2 - y1).abs();
        let sx = if x1 < x2 { 1 } else { -1 };
        let sy = if y1 < y2 { 1 } else { -1 };
        let mut err = dx - dy;
        loop {
            self.draw_pixel(x1, y1, color);
            if x1 == x2 && y1 == y2 {
                break;
            }
            let e2 = err * 2;
            if e2 > -dy {
                err -= dy;
                x1 += sx;
            }
            if e2 < dx {
                err += dx;
                y1 += sy;
            }
        }
    }

    /// A square centred on (x, y) with side `size`, rotated by `angle`
    /// radians: its corners are on the circle through them, at pi/4 +
    /// angle and every pi/2 after (the size scaled by 1/sqrt(2) and rounded
    /// first), in Redis's mix of float and double arithmetic.
    fn draw_square(&mut self, x: i32, y: i32, size: f32, angle: f32, color: u8) {
        // Redis's truncated constant, not SQRT_2: the rounding must match.
        #[allow(clippy::approx_constant)]
        let mut size = (size as f64 / 1.4142135623) as f32;
        size = (size as f64).round() as f32;
        let mut k = (std::f64::consts::PI / 4.0 + angle as f64) as f32;
        let mut px = [0i32; 4];
        let mut py = [0i32; 4];
        for j in 0..4 {
            px[j] = ((k as f64).sin() * size as f64 + x as f64).round() as i32;
            py[j] = ((k as f64).cos() * size as f64 + y as f64).round() as i32;
            k = (k as f64 + std::f64::consts::PI / 2.0) as f32;
        }
        for j in 0..4 {
            self.draw_line(px[j], py[j], px[(j + 1) % 4], py[(j + 1) % 4], color);
        }
    }
}

/// LOLWUT 5: Schotter on a canvas of twice `cols` pixels wide, rendered in
/// Braille characters, then Redis's caption line.
pub fn lolwut5(cols: i64, per_row: i64, per_col: i64) -> Vec<u8> {
    let cols = cols.clamp(1, 1000) as i32;
    let per_row = per_row.clamp(1, 200) as i32;
    let per_col = per_col.clamp(1, 200) as i32;
    let canvas = schotter(cols, per_row, per_col);
    let mut out = render_braille(&canvas);
    out.extend_from_slice(
        format!(
            "\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. {}\n",
            crate::REDIS_VERSION
        )
        .as_bytes(),
    );
    out
}

/// Draws Schotter: `per_row` x `per_col` squares, those of the third row
/// on rotated and shifted by random amounts growing with the row.
fn schotter(console_cols: i32, per_row: i32, per_col: i32) -> Canvas {
    let canvas_width = console_cols * 2;
    let padding = if canvas_width > 4 { 2 } else { 0 };
    let side = (canvas_width - padding * 2) as f32 / per_row as f32;
    let canvas_height = (side * per_col as f32 + (padding * 2) as f32) as i32;
    let mut canvas = Canvas::new(canvas_width, canvas_height, 0);
    for y in 0..per_col {
        for x in 0..per_row {
            let mut sx = (x as f32 * side + side / 2.0 + padding as f32) as i32;
            let mut sy = (y as f32 * side + side / 2.0 + padding as f32) as i32;
            let mut angle = 0.0f32;
            if y > 1 {
                let rnd = || c_rand() as f32 / libc::RAND_MAX as f32 / per_col as f32 * y as f32;
                let mut r1 = rnd();
                let mut r2 = rnd();
                let mut r3 = rnd();
                if c_rand() % 2 != 0 {
                    r1 = -r1;
                }
                if c_rand() % 2 != 0 {
                    r2 = -r2;
                }
                if c_rand() % 2 != 0 {
                    r3 = -r3;
                }
                angle = r1;
                sx = (sx as f32 + r2 * side / 3.0) as i32;
                sy = (sy as f32 + r3 * side / 3.0) as i32;
            }
            canvas.draw_square(sx, sy, side, angle, 1);
        }
    }
    canvas
}

/// Renders a two-color canvas as Braille characters, one per 2x4 pixels
/// (dots 1-2-3 / 4-5-6 down the columns, 7-8 at the bottom), one line per
/// four pixel rows; every line but one whose first pixel row is the
/// canvas's last ends with a newline, as Redis's renderer does.
fn render_braille(c: &Canvas) -> Vec<u8> {
    let mut out = Vec::new();
    let mut y = 0;
    while y < c.height {
        let mut x = 0;
        while x < c.width {
            let bit = |dx: i32, dy: i32, b: u32| u32::from(c.get_pixel(x + dx, y + dy) != 0) << b;
            let byte = bit(0, 0, 0)
                | bit(0, 1, 1)
                | bit(0, 2, 2)
                | bit(1, 0, 3)
                | bit(1, 1, 4)
                | bit(1, 2, 5)
                | bit(0, 3, 6)
                | bit(1, 3, 7);
            let code = 0x2800 + byte;
            out.push(0xE0 | (code >> 12) as u8);
            out.push(0x80 | ((code >> 6) & 0x3F) as u8);
            out.push(0x80 | (code & 0x3F) as u8);
            x += 2;
        }
        if y != c.height - 1 {
            out.push(b'\n');
        }
        y += 4;
    }
    out
}

/// LOLWUT 6: a skyline of `cols` x `rows` character cells in ANSI grays,
/// then Redis's dedication lines.
pub fn lolwut6(cols: i64, rows: i64) -> Vec<u8> {
    let cols = cols.clamp(1, 1000) as i32;
    let rows = rows.clamp(1, 1000) as i32;
    let mut canvas = Canvas::new(cols, rows, 3);
    skyline(&mut canvas);
    let mut out = Vec::new();
    for y in 0..canvas.height {
        for x in 0..canvas.width {
            let ce = match canvas.get_pixel(x, y) {
                1 => "0;90;100m",
                2 => "0;37;47m",
                3 => "0;97;107m",
                _ => "0;30;40m",
            };
            out.extend_from_slice(format!("\x1b[{ce} \x1b[0m").as_bytes());
        }
        if y != canvas.height - 1 {
            out.push(b'\n');
        }
    }
    out.extend_from_slice(
        format!(
            "\nDedicated to the 8 bit game developers of past and present.\nOriginal 8 bit image from Plaguemon by hikikomori. Redis ver. {}\n",
            crate::REDIS_VERSION
        )
        .as_bytes(),
    );
    out
}

/// One building of the skyline.
struct Building {
    xoff: i32,
    width: i32,
    height: i32,
    windows: bool,
    color: u8,
}

/// Draws a building from the bottom row up: its roof two pixels narrower
/// on each side and, with windows, two-pixel-wide windows on every other
/// row in a random gray other than the wall's.
fn building(c: &mut Canvas, b: &Building) {
    let starty = c.height - 1;
    let endy = starty - b.height + 1;
    let mut y = starty;
    while y >= endy {
        for x in b.xoff..b.xoff + b.width {
            if y == endy && (x <= b.xoff + 1 || x >= b.xoff + b.width - 2) {
                continue;
            }
            let mut color = b.color;
            if b.windows
                && x > b.xoff + 1
                && x < b.xoff + b.width - 2
                && y > endy + 1
                && y < starty - 1
            {
                let relx = x - (b.xoff + 1);
                let rely = y - (endy + 1);
                if (relx / 2) % 2 != 0 && rely % 2 != 0 {
                    loop {
                        color = (1 + c_rand() % 2) as u8;
                        if color != b.color {
                            break;
                        }
                    }
                    if relx % 2 != 0 {
                        color = c.get_pixel(x - 1, y);
                    }
                }
            }
            c.draw_pixel(x, y, color);
        }
        y -= 1;
    }
}

/// Two passes of window-less background buildings (the lighter gray
/// first, so it stays behind), then black foreground buildings with
/// windows, at random offsets, widths and heights.
fn skyline(c: &mut Canvas) {
    let h = c.height;
    for color in [2u8, 1] {
        let mut offset = -10;
        while offset < c.width {
            offset += c_rand() % 8;
            let width = 10 + c_rand() % 9;
            let height = if color == 2 {
                h / 2 + (c_rand() % h) / 2
            } else {
                h / 2 + (c_rand() % h) / 3
            };
            let b = Building {
                xoff: offset,
                width,
                height,
                windows: false,
                color,
            };
            building(c, &b);
            offset += if color == 2 { width / 2 } else { width + 1 };
        }
    }
    let mut offset = -10;
    while offset < c.width {
        offset += c_rand() % 8;
        let mut width = 5 + c_rand() % 14;
        if width % 4 != 0 {
            width += width % 3;
        }
        let height = h / 3 + (c_rand() % h) / 2;
        let b = Building {
            xoff: offset,
            width,
            height,
            windows: true,
            color: 0,
        };
        building(c, &b);
        offset += width + 5;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schotter_without_random_rows_is_fixed() {
        let a = lolwut5(10, 2, 2);
        let b = lolwut5(10, 2, 2);
        assert_eq!(a, b);
        let s = String::from_utf8(a).unwrap();
        assert!(s.ends_with("1968. Redis ver. 7.0.15\n"));
        assert!(s
            .chars()
            .all(|ch| ch == '\n' || ch.is_ascii() || ('\u{2800}'..='\u{28ff}').contains(&ch)));
    }

    #[test]
    fn skyline_has_the_requested_size() {
        let s = String::from_utf8(lolwut6(7, 3)).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 5);
        for l in &lines[..3] {
            assert_eq!(l.matches("\x1b[0m").count(), 7);
        }
    }
}
