//! Any bytes as frames of every link type → `dissect -f parquet`'s rows (issue 16): the frame
//! table's column arena fed by the field walk, with random analysis marks, finished into Arrow
//! batches at random row counts.
//!
//! Input: a sequence of records `[link selector][marks][len][frame bytes]`. Invariants: no
//! panic; every frame is one row; every batch passes Arrow's full validation (offsets, nulls,
//! child lengths); no field the dissectors emit lacks a column (`unmapped()` stays `None`: the
//! hand-written schema covers the field walk of every frame, whatever its layers).
#![no_main]

use std::cell::RefCell;

use arrow_array::Array;
use libfuzzer_sys::fuzz_target;
use rocescope::capture::{Frame, LinkType};
use rocescope::dissect::parquet::FrameRows;
use rocescope::filter::Marks;
use rocescope::frame::FrameView;
use rocescope_dissectors::stack::DissectOptions;

const LINKS: [LinkType; 14] = [
    LinkType::ETHERNET,
    LinkType::LINUX_SLL,
    LinkType::LINUX_SLL2,
    LinkType::NULL,
    LinkType::LOOP,
    LinkType::RAW,
    LinkType::RAW_DLT12,
    LinkType::RAW_DLT14,
    LinkType::IPV4,
    LinkType::IPV6,
    LinkType::ERF,
    LinkType::INFINIBAND,
    LinkType::IPOIB,
    LinkType(9999),
];

const MARKS: [Marks; 6] = [
    Marks::LOSS,
    Marks::OOO,
    Marks::DUP,
    Marks::RETRANS,
    Marks::NOT_CAPTURED,
    Marks::CONFORMANCE,
];

thread_local! {
    // One table for every input, as the writer keeps one across row groups (`finish` empties
    // it); building ~250 column builders per input made the target 40 times slower.
    static ROWS: RefCell<FrameRows> = RefCell::new(FrameRows::new(vec!["a.pcap".into(), "b.pcap".into()]));
}

fuzz_target!(|data: &[u8]| ROWS.with_borrow_mut(|rows| one_input(rows, data)));

fn one_input(rows: &mut FrameRows, data: &[u8]) {
    let ports = [4791u16, 9000];
    let options = DissectOptions {
        roce_ports: &ports,
        ..DissectOptions::default()
    };
    let mut rest = data;
    let mut number = 0u64;
    let mut in_batch = 0usize;
    while rest.len() >= 3 {
        let (link, flags, len) = (rest[0], rest[1], usize::from(rest[2]) * 4);
        rest = &rest[3..];
        let bytes = &rest[..len.min(rest.len())];
        rest = &rest[bytes.len()..];
        number += 1;
        let frame = Frame {
            number,
            time_ns: number * 1_000,
            caplen: bytes.len() as u32,
            orig_len: bytes.len() as u32 + u32::from(flags & 0x80 != 0) * 100,
            link: LINKS[usize::from(link) % LINKS.len()],
            input: u16::from(flags & 0x40 != 0),
            data: bytes,
        };
        let view = FrameView::new(&frame, &options, 0);
        let marks = (flags & 0x20 != 0).then(|| {
            let mut m = Marks::default();
            for (i, &mark) in MARKS.iter().enumerate() {
                if flags & (1 << (i % 5)) != 0 {
                    m.insert(mark);
                }
            }
            m
        });
        rows.frame(&view, marks);
        in_batch += 1;
        assert_eq!(rows.table().rows(), in_batch);
        // finish at random points, as row groups are
        if link & 0x80 != 0 {
            finish(rows, in_batch);
            in_batch = 0;
        }
    }
    finish(rows, in_batch);
}

fn finish(rows: &mut FrameRows, expected: usize) {
    let table = rows.table();
    let batch = table.finish().expect("a batch of consistent columns");
    assert_eq!(batch.num_rows(), expected);
    for column in batch.columns() {
        column
            .to_data()
            .validate_full()
            .expect("a valid Arrow array");
    }
    assert_eq!(table.unmapped(), None, "a field without its column");
}
