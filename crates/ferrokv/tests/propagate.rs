//! In-process tests of the propagation stream (crates/ferrokv/src/propagate.rs):
//! which records a unit holds, in which order. A separate test binary, so
//! turning recording on cannot disturb other tests.

use ferrokv::propagate::*;
use ferrokv::resp::OwnedArgs;
use parking_lot::Mutex;
use std::sync::Arc;

/// Each unit as (database, RESP bytes) records.
type Unit = Vec<(usize, Vec<u8>)>;

struct Capture(Mutex<Vec<Unit>>);

impl Sink for Capture {
    fn append_unit(&self, recs: Records<'_>) -> u64 {
        self.0
            .lock()
            .push(recs.iter().map(|(d, r)| (d, r.to_vec())).collect());
        0
    }
}

fn args(words: &[&str]) -> OwnedArgs {
    let mut o = OwnedArgs::default();
    for w in words {
        o.push(w.as_bytes());
    }
    o
}

fn text(r: &(usize, Vec<u8>)) -> String {
    String::from_utf8_lossy(&r.1).replace("\r\n", " ")
}

#[test]
fn units_follow_the_rules() {
    let s = Stream::default();
    s.set_user(ferrokv::propagate::USER_AOF, true);
    let cap = Arc::new(Capture(Mutex::new(Vec::new())));
    s.add_sink(cap.clone());
    // Changed nothing: no record.
    s.begin_command();
    s.end_command(0, &args(&["DEL", "missing"]).args());
    // Changed: verbatim.
    s.begin_command();
    mark_dirty();
    s.end_command(1, &args(&["SET", "k", "v"]).args());
    // Rewritten, with an expiry DEL first and a served pop after.
    s.begin_command();
    assert!(deleted(0, b"old"));
    mark_dirty();
    also(0, &[b"LPOP", b"q"]);
    rewrite(&[b"SET", b"k", b"v", b"PXAT", b"1"]);
    s.end_command(0, &args(&["SET", "k", "v", "EX", "1"]).args());
    // A block is one unit.
    let b = s.begin_block();
    s.begin_command();
    mark_dirty();
    s.end_command(0, &args(&["INCR", "n"]).args());
    s.begin_command();
    prevent();
    mark_dirty();
    s.end_command(0, &args(&["INCR", "m"]).args());
    s.end_block(b);
    assert!(!deleted(0, b"outside"));
    s.set_user(ferrokv::propagate::USER_AOF, false);
    let units = cap.0.lock();
    let t: Vec<Vec<String>> = units.iter().map(|u| u.iter().map(text).collect()).collect();
    assert_eq!(
        t,
        vec![
            vec!["*3 $3 SET $1 k $1 v ".to_string()],
            vec![
                "*2 $3 DEL $3 old ".into(),
                "*5 $3 SET $1 k $1 v $4 PXAT $1 1 ".into(),
                "*2 $4 LPOP $1 q ".into(),
            ],
            vec!["*2 $4 INCR $1 n ".into()],
        ]
    );
    assert_eq!(units[0][0].0, 1);
}
