//! The library's layering (README, Layout): the top-level modules of
//! `src/` import one another without a cycle, and `db/` imports nothing
//! from the layers above it. Read from the sources: every `crate::name`
//! path (also inside `use crate::{a, b}` groups) outside `#[cfg(test)]`
//! code counts as an import of module `name`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level module -> modules it imports, with one place each is used.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules: `src/x.rs` and `src/x/` but lib.rs.
fn modules() -> BTreeSet<String> {
    let mut m = BTreeSet::new();
    for e in std::fs::read_dir(src()).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if name != "lib" && (p.is_dir() || p.extension().is_some_and(|x| x == "rs")) {
            m.insert(name);
        }
    }
    m
}

/// Names a `crate::` path starts with: `crate::a::b` -> [a];
/// `crate::{a, b::c}` -> [a, b].
fn referenced(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("crate::") {
        let at = from + i + "crate::".len();
        let rest = &text[at..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            let mut depth = 0;
            let mut word = String::new();
            let mut first = true;
            for ch in group[..end].chars() {
                match ch {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        first = true;
                        word.clear();
                        continue;
                    }
                    _ => {}
                }
                if first && (ch.is_alphanumeric() || ch == '_') {
                    word.push(ch);
                } else if first && !word.is_empty() {
                    out.push((at, std::mem::take(&mut word)));
                    first = false;
                }
            }
            if first && !word.is_empty() {
                out.push((at, word));
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push((at, name));
        }
        from = at;
    }
    out
}

fn graph() -> Graph {
    let mods = modules();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut g = Graph::new();
    for f in files {
        let rel = f
            .strip_prefix(src())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let top = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        if !mods.contains(&top) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let text = match text.find("#[cfg(test)]") {
            Some(i) => &text[..i],
            None => &text[..],
        };
        for (at, name) in referenced(text) {
            if name != top && mods.contains(&name) {
                let line = text[..at].matches('\n').count() + 1;
                g.entry(top.clone())
                    .or_default()
                    .entry(name)
                    .or_insert(format!("{rel}:{line}"));
            }
        }
    }
    g
}

/// A cycle through `start`, if any (depth-first search).
fn cycle(g: &Graph, start: &str) -> Option<Vec<String>> {
    fn walk(
        g: &Graph,
        at: &str,
        start: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in g.get(at).map(|m| m.keys()).into_iter().flatten() {
            if next == start {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(g, next, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    let mut seen = BTreeSet::new();
    walk(g, start, start, &mut path, &mut seen).then_some(path)
}

#[test]
fn top_level_modules_form_no_import_cycle() {
    let g = graph();
    for m in modules() {
        if let Some(path) = cycle(&g, &m) {
            let steps: Vec<String> = path
                .windows(2)
                .chain(std::iter::once(
                    &[path[path.len() - 1].clone(), path[0].clone()][..],
                ))
                .map(|w| format!("{} -> {} ({})", w[0], w[1], g[&w[0]][&w[1]]))
                .collect();
            panic!("import cycle:\n  {}", steps.join("\n  "));
        }
    }
}

#[test]
fn db_imports_nothing_from_the_layers_above() {
    let g = graph();
    let above = [
        "persist", "server", "net", "cmd", "acl", "config", "tx", "evict", "pubsub", "tracking",
    ];
    for (m, at) in g.get("db").into_iter().flatten() {
        assert!(!above.contains(&m.as_str()), "db imports {m} ({at})");
    }
}

#[test]
fn the_scanner_sees_imports() {
    // The checks above mean something only if references are found.
    let g = graph();
    assert!(g["cmd"].contains_key("server"), "{:?}", g.get("cmd"));
    assert!(g["net"].contains_key("cmd"));
    assert_eq!(
        referenced("use crate::{db::Keyspace, util};\nlet x = crate::resp::Out::new();")
            .into_iter()
            .map(|(_, n)| n)
            .collect::<Vec<_>>(),
        ["db", "util", "resp"]
    );
}
