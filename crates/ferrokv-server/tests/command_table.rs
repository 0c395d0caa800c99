//! The command table against redis-server 7.0: COMMAND LIST holds the same
//! names (minus the commands still to come, listed below, plus the newer
//! ones ferrokv adds), COMMAND COUNT agrees with it, and COMMAND INFO of
//! every command and subcommand both servers have is byte-identical
//! (arity, flags, key positions, ACL categories, tips, key specs with
//! their notes). Containers are compared without their subcommand list,
//! whose order is the hash order of Redis's command dict (it changes from
//! run to run); their subcommands are compared one by one. COMMAND INFO
//! of unknown names, COMMAND GETKEYS / GETKEYSANDFLAGS (results and
//! errors) and the argument errors of COMMAND's subcommands are compared
//! byte for byte, COMMAND LIST FILTERBY (MODULE, ACLCAT of every category,
//! PATTERN) as sets of names.

mod common;
use common::resp::{elems, parse, Resp};
use common::*;
use std::collections::BTreeSet;

/// Redis 7.0 commands not implemented yet, each waiting on an open issue.
const PENDING: &[&str] = &[];

/// Commands of newer Redis releases that ferrokv already has.
const NEWER: &[&str] = &[
    "client|no-touch",
    "client|setinfo",
    "delex",
    "delifeq",
    "digest",
    "hexpire",
    "hexpireat",
    "hexpiretime",
    "hgetdel",
    "hgetex",
    "hpersist",
    "hpexpire",
    "hpexpireat",
    "hpexpiretime",
    "hpttl",
    "hsetex",
    "httl",
    "msetex",
];

fn names(c: &mut Raw) -> BTreeSet<String> {
    let r = parse(&c.cmd(&[b"COMMAND", b"LIST"]));
    elems(&r)
        .iter()
        .map(|e| match e {
            Resp::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("COMMAND LIST element {other:?}"),
        })
        .collect()
}

#[test]
fn command_list_matches_redis_but_pending_issues() {
    let Some(mut p) = Pair::start() else { return };
    let ours = names(&mut p.a);
    let theirs = names(&mut p.b);
    let missing: BTreeSet<&str> = theirs
        .iter()
        .filter(|n| !ours.contains(*n))
        .map(String::as_str)
        .collect();
    let extra: BTreeSet<&str> = ours
        .iter()
        .filter(|n| !theirs.contains(*n))
        .map(String::as_str)
        .collect();
    assert_eq!(
        missing,
        PENDING.iter().copied().collect::<BTreeSet<_>>(),
        "commands redis-server has and ferrokv lacks"
    );
    assert_eq!(extra, NEWER.iter().copied().collect::<BTreeSet<_>>());
    // COMMAND COUNT counts the top-level commands of the list.
    let top = ours.iter().filter(|n| !n.contains('|')).count();
    let count = p.a.cmd(&[b"COMMAND", b"COUNT"]);
    assert_eq!(String::from_utf8_lossy(&count), format!(":{top}\r\n"));
}

/// COMMAND INFO of one command without its subcommand list (field 10).
fn info_without_subs(c: &mut Raw, name: &str) -> (Vec<u8>, Vec<String>) {
    let raw = c.cmd(&[b"COMMAND", b"INFO", name.as_bytes()]);
    let r = parse(&raw);
    let entry = &elems(&r)[0];
    let fields = elems(entry);
    let subs: Vec<String> = elems(&fields[9])
        .iter()
        .map(|s| match &elems(s)[0] {
            Resp::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("subcommand name {other:?}"),
        })
        .collect();
    if subs.is_empty() {
        return (raw, subs);
    }
    (format!("{:?}", &fields[..9]).into_bytes(), subs)
}

#[test]
fn command_info_matches_redis_for_every_command() {
    let Some(mut p) = Pair::start() else { return };
    let ours = names(&mut p.a);
    let theirs = names(&mut p.b);
    let mut wrong = Vec::new();
    let mut compared = 0;
    for name in ours.iter().filter(|n| theirs.contains(*n)) {
        let (a, mut subs_a) = info_without_subs(&mut p.a, name);
        let (b, mut subs_b) = info_without_subs(&mut p.b, name);
        subs_a.retain(|s| theirs.contains(s));
        subs_b.retain(|s| ours.contains(s));
        subs_a.sort();
        subs_b.sort();
        compared += 1;
        if a != b || subs_a != subs_b {
            wrong.push(format!(
                "{name}:\n  ferrokv {}\n  redis   {}",
                String::from_utf8_lossy(&a),
                String::from_utf8_lossy(&b)
            ));
        }
    }
    assert!(compared > 300, "only {compared} commands compared");
    assert!(
        wrong.is_empty(),
        "{} differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// COMMAND DOCS of every command and subcommand both servers have, in
/// RESP2 and RESP3: byte-identical (arguments, history, doc flags),
/// except that a container's subcommand map, which Redis lists in its
/// dictionary's (per-process) order, is compared as a set of names.
#[test]
fn command_docs_match_redis_for_every_command() {
    let Some(mut p) = Pair::start() else { return };
    let ours = names(&mut p.a);
    let theirs = names(&mut p.b);
    let mut wrong = Vec::new();
    let mut compared = 0;
    for resp3 in [false, true] {
        if resp3 {
            p.a.cmds("HELLO 3");
            p.b.cmds("HELLO 3");
        }
        for name in ours.iter().filter(|n| theirs.contains(*n)) {
            let is_container = ours.iter().any(|n| n.starts_with(&format!("{name}|")));
            let a = p.a.cmd(&[b"COMMAND", b"DOCS", name.as_bytes()]);
            let b = p.b.cmd(&[b"COMMAND", b"DOCS", name.as_bytes()]);
            compared += 1;
            let same = if is_container {
                // Everything before the subcommand map, then its names.
                let cut = |r: &[u8]| {
                    let s = String::from_utf8_lossy(r).into_owned();
                    s[..s.find("subcommands").unwrap_or(s.len())].to_string()
                };
                cut(&a) == cut(&b)
            } else {
                a == b
            };
            if !same {
                wrong.push(format!(
                    "{name} (resp3 {resp3}):\n  ferrokv {}\n  redis   {}",
                    String::from_utf8_lossy(&a),
                    String::from_utf8_lossy(&b)
                ));
            }
        }
    }
    assert!(compared > 600, "only {compared} commands compared");
    assert!(
        wrong.is_empty(),
        "{} differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// COMMAND GETKEYS / GETKEYSANDFLAGS: results and errors byte-identical
/// with redis-server 7.0 (introspection-2.tcl's cases, the four errors in
/// Redis's order of checks, numkeys and keyword-driven key specs,
/// subcommands, no-mandatory-keys commands).
#[test]
fn command_getkeys_matches_redis() {
    let Some(mut p) = Pair::start() else { return };
    for line in [
        "COMMAND GETKEYS",
        "COMMAND GETKEYSANDFLAGS",
        "COMMAND GETKEYS nosuch",
        "COMMAND GETKEYS nosuch a",
        "COMMAND GETKEYS get",
        "COMMAND GETKEYS get key",
        "COMMAND GETKEYS get a b",
        "COMMAND GETKEYS ping",
        "COMMAND GETKEYS select",
        "COMMAND GETKEYS memory stats",
        "COMMAND GETKEYS memory usage key",
        "COMMAND GETKEYS memory nosuch key",
        "COMMAND GETKEYS config get x",
        "COMMAND GETKEYS object encoding k",
        "COMMAND GETKEYS xgroup create key groupname $",
        "COMMAND GETKEYS xinfo stream k",
        "COMMAND GETKEYS set a b",
        "COMMAND GETKEYS mset a b c d",
        "COMMAND GETKEYS mset a b c",
        "COMMAND GETKEYS mget a b c",
        "COMMAND GETKEYS eval x 1 key",
        "COMMAND GETKEYS eval x 0",
        "COMMAND GETKEYS eval x 2 a b",
        "COMMAND GETKEYS eval x 3 a b",
        "COMMAND GETKEYS eval x -1 a b",
        "COMMAND GETKEYS evalsha sha 1 a",
        "COMMAND GETKEYS fcall f 2 a b",
        "COMMAND GETKEYS fcall_ro f 0",
        "COMMAND GETKEYS zunionstore dst 2 a b",
        "COMMAND GETKEYS zunionstore dst 3 a b",
        "COMMAND GETKEYS zinter 2 a b",
        "COMMAND GETKEYS sintercard 2 a b",
        "COMMAND GETKEYS lmpop 2 a b left",
        "COMMAND GETKEYS lmpop 0 left",
        "COMMAND GETKEYS lmpop 0 a",
        "COMMAND GETKEYS lmpop abc a left",
        "COMMAND GETKEYS lmpop 3 a left",
        "COMMAND GETKEYS blmpop 0 2 a b left",
        "COMMAND GETKEYS bzmpop 0 1 a min",
        "COMMAND GETKEYS sort abc",
        "COMMAND GETKEYS sort abc alpha store def",
        "COMMAND GETKEYS sort abc by w_* get x_*",
        "COMMAND GETKEYS sort_ro abc",
        "COMMAND GETKEYS xread count 1 streams a b 0 0",
        "COMMAND GETKEYS xread streams a b 0",
        "COMMAND GETKEYS xreadgroup group g c streams a >",
        "COMMAND GETKEYS migrate h p k 0 0",
        "COMMAND GETKEYS migrate h p \"\" 0 0 keys a b",
        "COMMAND GETKEYS georadius k 0 0 1 km store d storedist e",
        "COMMAND GETKEYS georadiusbymember k m 1 km store d",
        "COMMAND GETKEYS geosearchstore d s frommember m byradius 1 km",
        "COMMAND GETKEYS lcs key1 key2",
        "COMMAND GETKEYS rpoplpush a b",
        "COMMAND GETKEYS bitfield_ro k get u8 0",
        "COMMAND GETKEYS pfmerge d a b",
        "COMMAND GETKEYS rename a b",
        "COMMAND GETKEYSANDFLAGS set k1 v1",
        "COMMAND GETKEYSANDFLAGS mset k1 v1 k2 v2",
        "COMMAND GETKEYSANDFLAGS lmove k1 k2 left right",
        "COMMAND GETKEYSANDFLAGS sort k1 store k2",
        "COMMAND GETKEYSANDFLAGS eval x 2 a b",
        "COMMAND GETKEYSANDFLAGS del a b",
        "COMMAND GETKEYSANDFLAGS getex a",
        "COMMAND GETKEYSANDFLAGS getdel a",
        "COMMAND GETKEYSANDFLAGS ping",
        "COMMAND GETKEYSANDFLAGS nosuch",
        "COMMAND GETKEYSANDFLAGS get",
        "COMMAND GETKEYSANDFLAGS georadius k 0 0 1 km store d",
        "COMMAND GETKEYSANDFLAGS copy a b",
        "COMMAND GETKEYSANDFLAGS rename a b",
        "COMMAND GETKEYSANDFLAGS zmpop 2 a b min",
        "COMMAND GETKEYSANDFLAGS xreadgroup group g c streams a b > >",
        "COMMAND GETKEYSANDFLAGS memory usage k",
        "COMMAND GETKEYSANDFLAGS bitop and d a b",
    ] {
        // A line is split on spaces, except that "" is an empty argument.
        let args: Vec<&[u8]> = line
            .split(' ')
            .map(|a| if a == "\"\"" { &b""[..] } else { a.as_bytes() })
            .collect();
        p.check(&args);
    }
}

/// COMMAND INFO of unknown commands and subcommands (a null in their
/// place), of a subcommand given with `|`, of a sub-subcommand, and
/// COMMAND INFO's, COMMAND COUNT's and COMMAND LIST's argument errors:
/// byte-identical with redis-server 7.0.
#[test]
fn command_info_of_unknown_names_and_errors_match_redis() {
    let Some(mut p) = Pair::start() else { return };
    for line in [
        "COMMAND INFO nosuch",
        "COMMAND INFO get nosuch set",
        "COMMAND INFO config|nosuch",
        "COMMAND INFO config|get|x",
        "COMMAND INFO get|key",
        "COMMAND INFO CONFIG|GET",
        "COMMAND INFO GET",
        "COMMAND INFO |",
        "COMMAND INFO config|",
        "COMMAND DOCS nosuch config|nosuch",
        "COMMAND COUNT x",
        "COMMAND LIST x",
        "COMMAND LIST FILTERBY",
        "COMMAND LIST FILTERBY ACLCAT",
        "COMMAND LIST FILTERBY bad_arg",
        "COMMAND LIST FILTERBY bad_arg bad_arg2",
        "COMMAND LIST FILTERBY ACLCAT a b",
        "COMMAND LIST FILTERBY MODULE foo",
        "COMMAND LIST FILTERBY ACLCAT nosuch",
        "COMMAND LIST FILTERBY PATTERN nosuch*",
        "COMMAND nosuch",
        "COMMAND HELP x",
    ] {
        p.check_line(line);
    }
}

/// The names of a COMMAND LIST reply, sorted (Redis lists them in its
/// command dict's order, which changes from run to run).
fn sorted_names(raw: &[u8]) -> Vec<String> {
    let r = parse(raw);
    let mut v: Vec<String> = elems(&r)
        .iter()
        .map(|e| match e {
            Resp::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("COMMAND LIST element {other:?}"),
        })
        .collect();
    v.sort();
    v
}

/// COMMAND LIST FILTERBY ACLCAT of every category Redis 7.0 has and
/// FILTERBY PATTERN of several globs (subcommands included, case rules):
/// the same names as redis-server 7.0, but the newer commands ferrokv
/// adds.
#[test]
fn command_list_filterby_matches_redis() {
    let Some(mut p) = Pair::start() else { return };
    let cats = sorted_names(&p.b.cmds("ACL CAT"));
    assert!(cats.len() >= 21, "{cats:?}");
    let mut filters: Vec<(String, String)> = cats
        .iter()
        .map(|c| ("ACLCAT".to_string(), c.clone()))
        .collect();
    for pat in [
        "*", "pf*", "PF*", "config*", "config|*", "*|*", "client|*", "x?dd", "[gs]et", "*range*",
        "z*store", "h*", "nosuch",
    ] {
        filters.push(("PATTERN".into(), pat.into()));
    }
    for (kind, arg) in &filters {
        let args: [&[u8]; 5] = [
            b"COMMAND",
            b"LIST",
            b"FILTERBY",
            kind.as_bytes(),
            arg.as_bytes(),
        ];
        let mut ours = sorted_names(&p.a.cmd(&args));
        ours.retain(|n| !NEWER.contains(&n.as_str()));
        let theirs = sorted_names(&p.b.cmd(&args));
        assert_eq!(ours, theirs, "COMMAND LIST FILTERBY {kind} {arg}");
    }
}
