//! Any bytes as a capture file (issue 15): the pcap/pcapng reader from arbitrary input, read
//! once from memory in one piece and once through a stream that hands out a few bytes per
//! `read` (a pipe), then every frame dissected and classified as the commands do.
//!
//! Invariants: no panic; the reader ends (an error is its last item); both reads give the same
//! frames (number, time, lengths, link type, bytes) and the same error; frame numbers count
//! from 1; a frame holds at most its record's captured length and never more than the input.
#![no_main]

use std::io::{self, Cursor, Read};

use libfuzzer_sys::fuzz_target;
use rocescope::capture::CaptureReader;
use rocescope::dissect::json::{self, TimeDigits};
use rocescope::dissect::text::TextWriter;
use rocescope::frame::FrameView;
use rocescope_dissectors::stack::DissectOptions;

/// A stream that returns at most `step` bytes per `read`, as a pipe may.
struct Trickle {
    data: Vec<u8>,
    at: usize,
    step: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.step).min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[derive(Debug, PartialEq)]
struct Seen {
    number: u64,
    time_ns: u64,
    caplen: u32,
    orig_len: u32,
    link: u32,
    data: Vec<u8>,
}

/// Frames kept for the comparison (the rest are only read).
const KEEP: usize = 64;
/// Frames read at most: the input is small, but zero-length records are cheap to repeat.
const MAX_FRAMES: usize = 100_000;

fn read_all(
    reader: Result<CaptureReader, rocescope::capture::CaptureError>,
    input_len: usize,
) -> (Vec<Seen>, usize, Option<String>) {
    let mut reader = match reader {
        Ok(r) => r,
        Err(e) => return (Vec::new(), 0, Some(e.to_string())),
    };
    let mut seen = Vec::new();
    let mut count = 0;
    let mut error = None;
    let options = DissectOptions::default();
    let (mut json_line, mut time) = (Vec::new(), TimeDigits::default());
    let mut text = TextWriter::new(100_000_000_000);
    while let Some(item) = reader.next_frame() {
        let frame = match item {
            Ok(f) => f,
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        };
        count += 1;
        assert_eq!(frame.number, count as u64);
        assert!(frame.data.len() <= input_len);
        assert!(frame.data.len() as u64 <= u64::from(frame.caplen).max(frame.data.len() as u64));
        let view = FrameView::new(&frame, &options, 0);
        let _ = view.facts();
        // What `dissect -f jsonl` and the text view print: the line is one JSON object.
        json_line.clear();
        json::write_frame(&mut json_line, &view, &mut time);
        let line = json_line.strip_suffix(b"\n").unwrap_or(&json_line);
        if let Err(e) = serde_json::from_slice::<serde_json::Value>(line) {
            panic!("invalid JSON line ({e}): {}", String::from_utf8_lossy(line));
        }
        text.write(&view, &mut io::sink())
            .expect("a sink takes everything");
        if seen.len() < KEEP {
            seen.push(Seen {
                number: frame.number,
                time_ns: frame.time_ns,
                caplen: frame.caplen,
                orig_len: frame.orig_len,
                link: frame.link.0,
                data: frame.data.to_vec(),
            });
        }
        if count == MAX_FRAMES {
            break;
        }
    }
    if error.is_some() {
        assert!(
            reader.next_frame().is_none(),
            "a reader is finished after its error"
        );
    }
    (seen, count, error)
}

fuzz_target!(|data: &[u8]| {
    let whole = read_all(
        CaptureReader::from_reader("fuzz.pcap", Cursor::new(data.to_vec())),
        data.len(),
    );
    let step = usize::from(data.first().copied().unwrap_or(1) % 7) + 1;
    let trickle = Trickle {
        data: data.to_vec(),
        at: 0,
        step,
    };
    let streamed = read_all(CaptureReader::from_reader("fuzz.pcap", trickle), data.len());
    assert_eq!(
        whole, streamed,
        "a stream read {step} bytes at a time differs"
    );
});
