//! Runs the shared protocol/semantics cases (`tests/cases/*.case`, copied
//! from the project's shared case collection) against the real binary,
//! byte for byte, implementing the `.case` format of `run-cases.py`: `send`,
//! `cmd`, `sleep`, `expect`, `close`, `normalize`, `timeout`, named
//! connections, FLUSHALL before every case.
//!
//! Cases that need command families not built yet are listed in
//! [`PENDING`] with what will enable them: they are run and reported, but
//! only a failing non-pending case fails the test. A pending case that
//! starts passing is reported so it can be moved out of the list.
//!
//! When python3 is installed, `run-cases.py` itself is also run once against
//! the server (report only).

mod common;
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Cases waiting for a command family, with what will enable them.
const PENDING: &[(&str, &str)] = &[];

const DEFAULT_TIMEOUT: f64 = 3.0;
const GRACE: Duration = Duration::from_millis(200);

// ------------------------------------------------------------ escaping

/// C-style escapes → bytes (`\r \n \t \0 \\ \" \' \xHH`), as run-cases.py.
fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            let n = b[i + 1];
            match n {
                b'r' => out.push(b'\r'),
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'0' => out.push(0),
                b'\\' | b'"' | b'\'' => out.push(n),
                b'x' if hex2(&b[i + 2..]).is_some() => {
                    out.push(hex2(&b[i + 2..]).unwrap_or(0));
                    i += 4;
                    continue;
                }
                _ => return Err(format!("bad escape \\{} in {s:?}", n as char)),
            }
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(out)
}

fn hex2(b: &[u8]) -> Option<u8> {
    if b.len() < 2 {
        return None;
    }
    let h = (b[0] as char).to_digit(16)?;
    let l = (b[1] as char).to_digit(16)?;
    Some((h * 16 + l) as u8)
}

/// redis-cli style argument splitting, as run-cases.py's `split_cli_args`.
fn split_cli_args(line: &str) -> Result<Vec<Vec<u8>>, String> {
    let c: Vec<char> = line.chars().collect();
    let n = c.len();
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < n && (c[i] == ' ' || c[i] == '\t') {
            i += 1;
        }
        if i >= n {
            return Ok(args);
        }
        if c[i] == '"' {
            i += 1;
            let mut raw = String::new();
            loop {
                if i >= n {
                    return Err(format!("unbalanced double quote in: {line}"));
                }
                if c[i] == '\\' && i + 1 < n {
                    raw.push(c[i]);
                    raw.push(c[i + 1]);
                    i += 2;
                    if c[i - 1] == 'x' {
                        for _ in 0..2 {
                            if i < n {
                                raw.push(c[i]);
                                i += 1;
                            }
                        }
                    }
                    continue;
                }
                if c[i] == '"' {
                    i += 1;
                    break;
                }
                raw.push(c[i]);
                i += 1;
            }
            args.push(unescape(&raw)?);
        } else if c[i] == '\'' {
            i += 1;
            let mut buf = String::new();
            loop {
                if i >= n {
                    return Err(format!("unbalanced single quote in: {line}"));
                }
                if c[i] == '\\' && i + 1 < n && c[i + 1] == '\'' {
                    buf.push('\'');
                    i += 2;
                    continue;
                }
                if c[i] == '\'' {
                    i += 1;
                    break;
                }
                buf.push(c[i]);
                i += 1;
            }
            args.push(buf.into_bytes());
        } else {
            let start = i;
            while i < n && c[i] != ' ' && c[i] != '\t' {
                i += 1;
            }
            args.push(c[start..i].iter().collect::<String>().into_bytes());
            continue;
        }
        if i < n && c[i] != ' ' && c[i] != '\t' {
            return Err(format!(
                "closing quote must be followed by space in: {line}"
            ));
        }
    }
}

// ------------------------------------------------------------ mini regex

/// One element of a compiled normalisation pattern.
#[derive(Debug, Clone)]
enum Atom {
    /// A byte set (literal, class, `.`), possibly negated.
    Set(Vec<(u8, u8)>, bool),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Rep {
    One,
    Star,
    Plus,
    Opt,
}

/// A small regex subset, enough for the `normalize:` lines (Python bytes
/// regex syntax): literals, `\` escapes (`\r \n \t \d` and escaped
/// punctuation), `.`, classes `[a-z0-9]` / `[^\r]`, and `* + ?`.
#[derive(Debug, Clone)]
struct Pattern(Vec<(Atom, Rep)>);

fn escape_byte(c: u8) -> Vec<(u8, u8)> {
    match c {
        b'r' => vec![(b'\r', b'\r')],
        b'n' => vec![(b'\n', b'\n')],
        b't' => vec![(b'\t', b'\t')],
        b'd' => vec![(b'0', b'9')],
        b's' => vec![(b' ', b' '), (b'\t', b'\r')],
        other => vec![(other, other)],
    }
}

impl Pattern {
    fn compile(p: &[u8]) -> Result<Pattern, String> {
        let mut v = Vec::new();
        let mut i = 0;
        while i < p.len() {
            let atom = match p[i] {
                b'\\' if i + 1 < p.len() => {
                    i += 2;
                    Atom::Set(escape_byte(p[i - 1]), false)
                }
                b'.' => {
                    i += 1;
                    Atom::Set(vec![(b'\n', b'\n')], true)
                }
                b'[' => {
                    i += 1;
                    let neg = p.get(i) == Some(&b'^');
                    if neg {
                        i += 1;
                    }
                    let mut set = Vec::new();
                    let mut first = true;
                    loop {
                        let Some(&c) = p.get(i) else {
                            return Err("unterminated class".into());
                        };
                        if c == b']' && !first {
                            i += 1;
                            break;
                        }
                        first = false;
                        let lo = if c == b'\\' && i + 1 < p.len() {
                            i += 2;
                            let e = escape_byte(p[i - 1]);
                            if e.len() != 1 || e[0].0 != e[0].1 {
                                set.extend(e);
                                continue;
                            }
                            e[0].0
                        } else {
                            i += 1;
                            c
                        };
                        if p.get(i) == Some(&b'-') && p.get(i + 1).is_some_and(|&x| x != b']') {
                            let hi = p[i + 1];
                            i += 2;
                            set.push((lo, hi));
                        } else {
                            set.push((lo, lo));
                        }
                    }
                    Atom::Set(set, neg)
                }
                b'(' | b')' | b'|' | b'{' | b'^' | b'$' => {
                    return Err(format!(
                        "unsupported regex syntax '{}' (extend the runner)",
                        p[i] as char
                    ))
                }
                c => {
                    i += 1;
                    Atom::Set(vec![(c, c)], false)
                }
            };
            let rep = match p.get(i) {
                Some(b'*') => Rep::Star,
                Some(b'+') => Rep::Plus,
                Some(b'?') => Rep::Opt,
                _ => Rep::One,
            };
            if rep != Rep::One {
                i += 1;
            }
            v.push((atom, rep));
        }
        Ok(Pattern(v))
    }

    fn atom_matches(a: &Atom, c: u8) -> bool {
        let Atom::Set(set, neg) = a;
        set.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *neg
    }

    /// Length of the longest (greedy, backtracking) match at `s[0..]`.
    fn match_at(&self, k: usize, s: &[u8], pos: usize) -> Option<usize> {
        let Some((atom, rep)) = self.0.get(k) else {
            return Some(pos);
        };
        let (min, max) = match rep {
            Rep::One => (1, 1),
            Rep::Opt => (0, 1),
            Rep::Star => (0, usize::MAX),
            Rep::Plus => (1, usize::MAX),
        };
        let mut n = 0;
        while n < max && pos + n < s.len() && Self::atom_matches(atom, s[pos + n]) {
            n += 1;
        }
        loop {
            if n < min {
                return None;
            }
            if let Some(end) = self.match_at(k + 1, s, pos + n) {
                return Some(end);
            }
            if n == 0 {
                return None;
            }
            n -= 1;
        }
    }

    /// Replaces every non-overlapping match, left to right (re.sub).
    fn sub(&self, s: &[u8], rep: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(s.len());
        let mut i = 0;
        while i <= s.len() {
            match self.match_at(0, s, i) {
                Some(end) if end > i => {
                    out.extend_from_slice(rep);
                    i = end;
                }
                _ => {
                    if i < s.len() {
                        out.push(s[i]);
                    }
                    i += 1;
                }
            }
        }
        out
    }
}

// ------------------------------------------------------------ case files

enum Step {
    Send(String, Vec<u8>),
    Sleep(f64),
}

struct Case {
    name: String,
    steps: Vec<Step>,
    expect: Vec<(String, Vec<u8>)>,
    close: Vec<String>,
    normalizers: Vec<(Pattern, Vec<u8>)>,
    timeout: f64,
    conns: Vec<String>,
}

impl Case {
    fn expect_of(&self, c: &str) -> Vec<u8> {
        self.expect
            .iter()
            .find(|(n, _)| n == c)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    fn normalize(&self, d: &[u8]) -> Vec<u8> {
        let mut d = d.to_vec();
        for (p, r) in &self.normalizers {
            d = p.sub(&d, r);
        }
        d
    }

    fn parse(path: &Path) -> Result<Case, String> {
        let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut c = Case {
            name,
            steps: Vec::new(),
            expect: Vec::new(),
            close: Vec::new(),
            normalizers: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            conns: Vec::new(),
        };
        for (no, line) in text.lines().enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let err = |m: String| format!("{}:{}: {m}", path.display(), no + 1);
            let (head, value) = match line.find(':') {
                Some(p) => (&line[..p], &line[p + 1..]),
                None => return Err(err(format!("cannot parse line: {line:?}"))),
            };
            let value = match value.strip_prefix(' ') {
                Some(v) => v,
                None if value.is_empty() => "",
                None => return Err(err(format!("cannot parse line: {line:?}"))),
            };
            let (kind, conn) = match head.find('[') {
                Some(p) if head.ends_with(']') => (&head[..p], &head[p + 1..head.len() - 1]),
                _ => (head, "main"),
            };
            if conn.is_empty()
                || !conn
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            {
                return Err(err(format!("bad connection name in {line:?}")));
            }
            let conn = conn.to_string();
            let use_conn = |c: &mut Case, n: &String| {
                if !c.conns.contains(n) {
                    c.conns.push(n.clone());
                }
            };
            match kind {
                "send" => {
                    use_conn(&mut c, &conn);
                    c.steps
                        .push(Step::Send(conn, unescape(value).map_err(err)?));
                }
                "cmd" => {
                    use_conn(&mut c, &conn);
                    let args = split_cli_args(value).map_err(err)?;
                    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
                    c.steps.push(Step::Send(conn, encode(&refs)));
                }
                "sleep" => c.steps.push(Step::Sleep(
                    value.trim().parse().map_err(|_| err("bad sleep".into()))?,
                )),
                "expect" => {
                    use_conn(&mut c, &conn);
                    let b = unescape(value).map_err(err)?;
                    match c.expect.iter_mut().find(|(n, _)| *n == conn) {
                        Some((_, v)) => v.extend(b),
                        None => c.expect.push((conn, b)),
                    }
                }
                "close" => {
                    if matches!(
                        value.trim().to_ascii_lowercase().as_str(),
                        "yes" | "true" | "1"
                    ) {
                        use_conn(&mut c, &conn);
                        c.close.push(conn);
                    }
                }
                "normalize" => {
                    let Some((pat, rep)) = value.split_once(" => ") else {
                        return Err(err("normalize needs \"REGEX => REPLACEMENT\"".into()));
                    };
                    let p = Pattern::compile(pat.as_bytes()).map_err(err)?;
                    let r = unescape(rep).map_err(err)?;
                    c.normalizers.push((p, r));
                }
                "timeout" => {
                    c.timeout = value
                        .trim()
                        .parse()
                        .map_err(|_| err("bad timeout".into()))?
                }
                _ => return Err(err(format!("cannot parse line: {line:?}"))),
            }
        }
        Ok(c)
    }
}

// ------------------------------------------------------------ playing

/// A connection whose incoming bytes a thread collects.
struct Conn {
    sock: TcpStream,
    state: Arc<Mutex<(Vec<u8>, bool)>>,
}

impl Conn {
    fn open(port: u16) -> Conn {
        let sock = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        sock.set_nodelay(true).expect("nodelay");
        let state = Arc::new(Mutex::new((Vec::new(), false)));
        let mut r = sock.try_clone().expect("clone");
        let st = state.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            loop {
                match r.read(&mut buf) {
                    Ok(0) | Err(_) => {
                        st.lock().unwrap().1 = true;
                        return;
                    }
                    Ok(n) => st.lock().unwrap().0.extend_from_slice(&buf[..n]),
                }
            }
        });
        Conn { sock, state }
    }

    fn snapshot(&self) -> (Vec<u8>, bool) {
        let g = self.state.lock().unwrap();
        (g.0.clone(), g.1)
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let _ = self.sock.shutdown(std::net::Shutdown::Both);
    }
}

/// FLUSHALL on its own connection; returns its reply.
fn flushall(port: u16) -> Vec<u8> {
    let mut r = Raw::connect(port);
    r.cmd(&[b"FLUSHALL"])
}

/// Plays a case; Ok(()) when every connection got exactly the expected
/// bytes (and was closed when required), Err(report) otherwise.
fn play(case: &Case, port: u16) -> Result<(), String> {
    let mut conns: Vec<(String, Conn)> = Vec::new();
    fn get<'a>(conns: &'a mut Vec<(String, Conn)>, name: &str, port: u16) -> &'a mut Conn {
        if let Some(i) = conns.iter().position(|(n, _)| n == name) {
            return &mut conns[i].1;
        }
        conns.push((name.to_string(), Conn::open(port)));
        &mut conns.last_mut().expect("just pushed").1
    }
    for step in &case.steps {
        match step {
            Step::Sleep(s) => std::thread::sleep(Duration::from_secs_f64(*s)),
            Step::Send(c, bytes) => {
                let _ = get(&mut conns, c, port).sock.write_all(bytes);
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs_f64(case.timeout);
    let mut report = Vec::new();
    for name in &case.conns {
        let conn = get(&mut conns, name, port);
        let want = case.normalize(&case.expect_of(name));
        loop {
            let (data, eof) = conn.snapshot();
            let got = case.normalize(&data);
            if got.starts_with(&want) || eof {
                break;
            }
            if case.normalizers.is_empty() && !want.starts_with(&got) {
                break;
            }
            if Instant::now() >= deadline {
                report.push(format!("[{name}] gave up waiting after {}s", case.timeout));
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if !conn.snapshot().1 {
            std::thread::sleep(GRACE);
        }
        let must_close = case.close.contains(name);
        if must_close {
            while !conn.snapshot().1 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let (data, eof) = conn.snapshot();
        let got = case.normalize(&data);
        if got != want {
            report.push(format!(
                "[{name}] reply mismatch\n    expected: {}\n    received: {}{}",
                show(&want),
                show(&got),
                if eof { " (connection closed)" } else { "" }
            ));
        }
        if must_close && !eof {
            report.push(format!("[{name}] server did not close the connection"));
        }
    }
    if report.is_empty() {
        Ok(())
    } else {
        Err(report.join("\n"))
    }
}

fn show(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        match c {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s
}

fn case_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases")
}

fn case_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(case_dir())
        .expect("tests/cases")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "case"))
        .collect();
    v.sort();
    v
}

#[test]
fn mini_regex_matches_python_semantics() {
    let p = Pattern::compile(br"\$2\r\nid\r\n:[0-9]+\r\n").unwrap();
    assert_eq!(
        p.sub(
            b"$2\r\nid\r\n:156\r\n$4\r\nmode\r\n",
            b"$2\r\nid\r\n:<ID>\r\n"
        ),
        b"$2\r\nid\r\n:<ID>\r\n$4\r\nmode\r\n"
    );
    let p = Pattern::compile(br"\$7\r\nversion\r\n\$[0-9]+\r\n[^\r]*\r\n").unwrap();
    assert_eq!(p.sub(b"x$7\r\nversion\r\n$6\r\n7.0.15\r\ny", b"V"), b"xVy");
    let p = Pattern::compile(b"a.?c").unwrap();
    assert_eq!(p.sub(b"ac abc a\nc", b"-"), b"- - a\nc");
    assert!(Pattern::compile(b"(a)").is_err());
}

#[test]
fn shared_cases() {
    let files = case_files();
    assert!(
        !files.is_empty(),
        "no case files in {}",
        case_dir().display()
    );
    let shared = Server::start(&[]);
    // Without FLUSHALL (not built on every branch) each case gets a fresh
    // server, which is just as clean.
    let flush_ok = flushall(shared.port) == b"+OK\r\n";
    let mut failures = Vec::new();
    let mut summary = Vec::new();
    for path in &files {
        let case = match Case::parse(path) {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("bad case file: {e}"));
                continue;
            }
        };
        let fresh;
        let port = if flush_ok {
            let _ = flushall(shared.port);
            shared.port
        } else {
            fresh = Server::start(&[]);
            let _ = flushall(fresh.port);
            fresh.port
        };
        let pending = PENDING.iter().find(|(n, _)| *n == case.name).map(|p| p.1);
        match (play(&case, port), pending) {
            (Ok(()), None) => summary.push(format!("PASS {}", case.name)),
            (Ok(()), Some(_)) => {
                summary.push(format!("PASS {} (listed as PENDING)", case.name));
                failures.push(format!(
                    "{} passes but is listed as PENDING: remove it from the list",
                    case.name
                ));
            }
            (Err(r), Some(why)) => {
                summary.push(format!("PENDING {} (needs {why})", case.name));
                let _ = r;
            }
            (Err(r), None) => {
                summary.push(format!("FAIL {}", case.name));
                failures.push(format!("FAIL {}\n{r}", case.name));
            }
        }
    }
    for p in PENDING {
        assert!(
            files
                .iter()
                .any(|f| f.file_stem().is_some_and(|s| s == p.0)),
            "PENDING names a missing case: {}",
            p.0
        );
    }
    eprintln!("{}", summary.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs the collection's own Python runner once (report only).
#[test]
fn python_runner_report() {
    let Some(py) = which("python3") else {
        eprintln!("python3 not installed: run-cases.py skipped");
        return;
    };
    let s = Server::start(&[]);
    let out = std::process::Command::new(py)
        .arg(case_dir().join("run-cases.py"))
        .arg("127.0.0.1")
        .arg(s.port.to_string())
        .arg("--dir")
        .arg(case_dir())
        .output();
    match out {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout);
            let last = text.lines().last().unwrap_or("");
            eprintln!("run-cases.py (report only): {last}");
            for l in text
                .lines()
                .filter(|l| l.starts_with("PASS") || l.starts_with("FAIL"))
            {
                eprintln!("  {l}");
            }
        }
        Err(e) => eprintln!("run-cases.py could not run: {e}"),
    }
}
