//! Any bytes as a capture file indexed the way `inspect` indexes a large one (issue 13): one
//! indexer from the start, stopped where `Indexer::split_point` guesses a record starts, and a
//! second from there.
//!
//! Invariants: no panic; the first indexer either lands on the point or reads past it, never
//! both; landed, its entries and the second's, end to end, are one indexer's entries, and the
//! second ends in one indexer's error; read past, the first alone gives one indexer's entries
//! and error.
#![no_main]

use std::io::Write;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use rocescope::capture::index::{IndexEntry, Indexer};

/// Entries read at most: zero-length records are cheap to repeat.
const MAX_ENTRIES: usize = 100_000;

fn whole(ix: &mut Indexer) -> (Vec<IndexEntry>, Option<String>) {
    let mut entries = Vec::new();
    while entries.len() < MAX_ENTRIES {
        match ix.next_chunk(&mut entries, 1000) {
            Ok(true) => {}
            Ok(false) => return (entries, None),
            Err(e) => return (entries, Some(e.to_string())),
        }
    }
    (entries, Some("(stopped reading)".into()))
}

fn check(path: &Path) {
    let Ok(mut one) = Indexer::open(path) else {
        return;
    };
    let (all, end) = whole(&mut one);
    let mut first = Indexer::open(path).expect("opened once already");
    let Some(at) = first.split_point(0) else {
        return;
    };
    first.stop_at(&at);
    let (mut entries, head_end) = whole(&mut first);
    assert!(!(first.reached() && first.passed()));
    if first.reached() {
        assert_eq!(head_end, None);
        let mut second = Indexer::open_at(path, &at).expect("a file");
        let (rest, rest_end) = whole(&mut second);
        entries.extend(rest);
        if entries.len() < MAX_ENTRIES {
            assert_eq!(rest_end, end);
        }
    } else {
        assert_eq!(head_end, end);
    }
    entries.truncate(all.len());
    assert_eq!(entries, all);
}

fuzz_target!(|data: &[u8]| {
    let mut file = tempfile::NamedTempFile::new().expect("a temporary file");
    file.write_all(data).expect("written");
    check(file.path());
});
