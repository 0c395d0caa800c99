//! The AOF manifest (Redis 7.0 aof.c: `aofLoadManifestFromFile`,
//! `getAofManifestAsString`, `persistAofManifest`): the small text file
//! naming the base, incr and history files of the multi-part AOF, one line
//! `file <name> seq <n> type b|i|h` per file; its parser and formatter, the
//! paths of the AOF directory and file names, and the atomic replacement
//! of the manifest on disk (temp file, fsync, rename, fsync of the
//! directory).
//!
//! Later servers' manifests load too. Redis 7.2, Valkey 7.2 to 9.x write
//! the 7.0 lines; Redis 8.x adds `startoffset <n>` (and, once the file is
//! closed, `endoffset <n>`) to a file's line: the replication offsets the
//! file starts and ends at (aof.c `aofInfoFormat`). They are read, kept
//! and written back as Redis writes them; ferrokv itself never sets them.
//! Any other key is ignored, as Redis's parser does ("for forward
//! compatibility").

use crate::persist::Host;
use crate::resp::Args;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One line of the manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileInfo {
    /// File name inside the AOF directory.
    pub name: String,
    /// Sequence number.
    pub seq: i64,
    /// `b` base, `i` incr, `h` history.
    pub kind: u8,
    /// `startoffset` (Redis 8.x): the replication offset the file starts
    /// at, when the manifest says.
    pub start_offset: Option<i64>,
    /// `endoffset` (Redis 8.x): the replication offset the file ends at,
    /// when the manifest says (written only with a start offset).
    pub end_offset: Option<i64>,
}

/// The manifest: which files make up the AOF, in load order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The base file, if any.
    pub base: Option<FileInfo>,
    /// Incr files, ascending sequence.
    pub incrs: Vec<FileInfo>,
    /// History files (to delete).
    pub history: Vec<FileInfo>,
    /// Highest base sequence used.
    pub base_seq: i64,
    /// Highest incr sequence used.
    pub incr_seq: i64,
}

impl Manifest {
    /// Parses manifest text with Redis 7.0's rules (`aofLoadManifestFromFile`).
    /// Errors: Redis's message, with the line number and text when known.
    pub fn parse(text: &[u8]) -> Result<Manifest, String> {
        let mut m = Manifest::default();
        let mut maxseq = 0;
        if text.is_empty() {
            return Err("Found an empty AOF manifest".into());
        }
        for (i, raw) in text.split_inclusive(|&b| b == b'\n').enumerate() {
            let linenum = i + 1;
            if raw.first() == Some(&b'#') {
                continue;
            }
            let fail = |why: &str| {
                format!(
                    "Reading the manifest file, at line {linenum}: '{}': {why}",
                    String::from_utf8_lossy(raw).trim()
                )
            };
            if raw.last() != Some(&b'\n') {
                return Err(fail("Invalid AOF manifest file format (no newline)"));
            }
            let line = String::from_utf8_lossy(raw);
            let line = line.trim_matches(|c| c == ' ' || c == '\t' || c == '\r' || c == '\n');
            if line.is_empty() {
                return Err(fail("Invalid AOF manifest file format"));
            }
            let (mut data, mut ranges) = (Vec::new(), Vec::new());
            crate::resp::parse::split_args(line.as_bytes(), &mut data, &mut ranges)
                .map_err(|_| fail("Invalid AOF manifest file format"))?;
            let argv: Vec<Vec<u8>> = Args::new(&data, &ranges).to_vec();
            if argv.len() < 6 || !argv.len().is_multiple_of(2) {
                return Err(fail("Invalid AOF manifest file format"));
            }
            let (mut name, mut seq, mut kind) = (None, 0i64, 0u8);
            let (mut start_offset, mut end_offset) = (None, None);
            let num = |v: &[u8]| -> i64 {
                std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0)
            };
            for kv in argv.chunks(2) {
                let k = String::from_utf8_lossy(&kv[0]).to_ascii_lowercase();
                match k.as_str() {
                    "file" => {
                        let n = String::from_utf8_lossy(&kv[1]).into_owned();
                        if n.contains('/') {
                            return Err(fail("File can't be a path, just a filename"));
                        }
                        name = Some(n);
                    }
                    "seq" => {
                        seq = std::str::from_utf8(&kv[1])
                            .ok()
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(0)
                    }
                    "type" => kind = kv[1].first().copied().unwrap_or(0),
                    "startoffset" => start_offset = Some(num(&kv[1])),
                    "endoffset" => end_offset = Some(num(&kv[1])),
                    _ => {}
                }
            }
            let (Some(name), true, true) = (name, seq != 0, kind != 0) else {
                return Err(fail("Invalid AOF manifest file format"));
            };
            let fi = FileInfo {
                name,
                seq,
                kind,
                start_offset,
                end_offset,
            };
            match kind {
                b'b' => {
                    if m.base.is_some() {
                        return Err(fail("Found duplicate base file information"));
                    }
                    m.base_seq = seq;
                    m.base = Some(fi);
                }
                b'h' => m.history.push(fi),
                b'i' => {
                    if seq <= maxseq {
                        return Err(fail("Found a non-monotonic sequence number"));
                    }
                    maxseq = seq;
                    m.incr_seq = seq;
                    m.incrs.push(fi);
                }
                _ => return Err(fail("Unknown AOF file type")),
            }
        }
        Ok(m)
    }

    /// The manifest text (base first, then history, then incr files).
    pub fn format(&self) -> String {
        let mut s = String::new();
        let line = |s: &mut String, f: &FileInfo| {
            let name = if f.name.bytes().all(|b| b.is_ascii_graphic() && b != b'"') {
                f.name.clone()
            } else {
                let mut q = Vec::new();
                crate::util::repr(f.name.as_bytes(), &mut q);
                String::from_utf8_lossy(&q).into_owned()
            };
            s.push_str(&format!(
                "file {} seq {} type {}",
                name, f.seq, f.kind as char
            ));
            if let Some(start) = f.start_offset.filter(|&o| o != -1) {
                s.push_str(&format!(" startoffset {start}"));
                if let Some(end) = f.end_offset.filter(|&o| o != -1) {
                    s.push_str(&format!(" endoffset {end}"));
                }
            }
            s.push('\n');
        };
        if let Some(b) = &self.base {
            line(&mut s, b);
        }
        for f in &self.history {
            line(&mut s, f);
        }
        for f in &self.incrs {
            line(&mut s, f);
        }
        s
    }
}

pub(super) struct Paths {
    /// The AOF directory (`appenddirname`).
    pub(super) dir: PathBuf,
    /// The file name prefix (`appendfilename`).
    pub(super) fname: String,
}

pub(super) fn paths(server: &impl Host) -> Paths {
    let c = server.config().read();
    Paths {
        dir: PathBuf::from(c.get("appenddirname")),
        fname: c.get("appendfilename").to_string(),
    }
}

pub(super) fn fsync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

pub(super) fn write_manifest(p: &Paths, m: &Manifest) -> std::io::Result<()> {
    let tmp = p.dir.join(format!("temp-{}.manifest", p.fname));
    let dst = p.dir.join(format!("{}.manifest", p.fname));
    {
        let mut f = File::create(&tmp)?;
        f.write_all(m.format().as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, &dst)?;
    fsync_dir(&p.dir);
    Ok(())
}

pub(super) fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// A base file's name: `<appendfilename>.<seq>.base.rdb` in RDB format,
/// `.base.aof` in command form (Redis 7.0's getNewBaseFileNameAndMarkPreAsHistory).
pub(super) fn base_name(fname: &str, seq: i64, preamble: bool) -> String {
    let ext = if preamble { "rdb" } else { "aof" };
    format!("{fname}.{seq}.base.{ext}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trip() {
        let text = b"file appendonly.aof.1.base.aof seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\nfile appendonly.aof.2.incr.aof seq 2 type i\n";
        let m = Manifest::parse(text).unwrap();
        assert_eq!(m.incrs.len(), 2);
        assert_eq!(m.base_seq, 1);
        assert_eq!(m.incr_seq, 2);
        assert_eq!(m.format().as_bytes(), text);
    }

    #[test]
    fn manifest_of_redis_8_keeps_offsets() {
        let text = b"file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type h startoffset 0 endoffset 120\nfile appendonly.aof.2.incr.aof seq 2 type i startoffset 120\nfile appendonly.aof.3.incr.aof seq 3 type i future-key x\n";
        let m = Manifest::parse(text).unwrap();
        assert_eq!(m.history[0].end_offset, Some(120));
        assert_eq!(m.incrs[0].start_offset, Some(120));
        assert_eq!(m.incrs.len(), 2);
        let again = Manifest::parse(m.format().as_bytes()).unwrap();
        assert_eq!(again, m);
        assert!(m
            .format()
            .contains("seq 1 type h startoffset 0 endoffset 120\n"));
    }

    #[test]
    fn manifest_errors() {
        assert!(Manifest::parse(b"").is_err());
        assert!(Manifest::parse(b"file a seq 1\n").is_err());
        assert!(Manifest::parse(b"file a seq 2 type i\nfile b seq 1 type i\n").is_err());
        assert!(Manifest::parse(b"file a seq 1 type b\nfile b seq 2 type b\n").is_err());
        assert!(Manifest::parse(b"file x/a seq 1 type b\n").is_err());
        assert!(Manifest::parse(b"file a seq 1 type z\n").is_err());
    }
}
