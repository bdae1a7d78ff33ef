//! `dissect`'s line formats (text, `-f jsonl`) share the formatting between the reading thread
//! and the writing one when the writer falls behind: the lines must be the same bytes, in the same order, however
//! the frames are shared. Every capture of `captures/` and `../shared/captures/real/`, each
//! written in place (one thread) and with every frame formatted on the reading thread, on the
//! writing thread, and shared as the load decides; with a filter and with `-c` too.

use std::path::Path;

use rocescope::config::{DissectConfig, DissectFormat, FieldsLayout};
use rocescope::dissect::write_all_with;
use rocescope::filter::Filter;
use rocescope::replay::Split;
use rocescope::source::FrameRange;

mod common;

fn config(
    capture: &Path,
    format: DissectFormat,
    filter: Option<&str>,
    count: Option<u64>,
) -> DissectConfig {
    DissectConfig {
        captures: vec![capture.to_path_buf()],
        fields: Vec::new(),
        layout: FieldsLayout::default(),
        live: None,
        format,
        output: None,
        filter: filter.map(|f| Filter::compile_with_marks(f).unwrap()),
        count,
        frames: FrameRange::ALL,
        roce_ports: Vec::new(),
        rd_as_rd: false,
        link_bps: 100_000_000_000,
        quiet: true,
        color: rocescope::config::Color::default(),
    }
}

fn lines(cfg: &DissectConfig, split: Option<Split>) -> Vec<u8> {
    let mut out = Vec::new();
    write_all_with(cfg, &mut out, split).unwrap();
    out
}

#[test]
fn every_split_writes_the_same_lines() {
    let files = common::demo_and_real_captures();
    let mut checked = 0;
    for file in &files {
        for (format, filter, count) in [
            (DissectFormat::Jsonl, None, None),
            (DissectFormat::Jsonl, Some("infiniband.bth.psn > 3"), None),
            (DissectFormat::Jsonl, None, Some(7)),
            (DissectFormat::Text, None, None),
            (DissectFormat::Text, Some("infiniband.bth.psn > 3"), Some(5)),
        ] {
            let cfg = config(file, format, filter, count);
            // a small capture is written in place: the reference
            let want = lines(&cfg, None);
            for split in [Split::Reader, Split::Engine, Split::Balanced] {
                let got = lines(&cfg, Some(split));
                assert!(
                    got == want,
                    "{} {format:?} {filter:?} -c {count:?}: split {split:?} wrote other lines",
                    file.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 5 * 32);
}
