//! Helpers shared by integration tests: writing hand-made frames as a pcap, reading one.

use std::path::Path;

use rocescope::capture::CaptureReader;

/// A nanosecond Ethernet pcap of these frames (1 µs apart).
pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    for (i, f) in frames.iter().enumerate() {
        let len = u32::try_from(f.len()).unwrap();
        out.extend_from_slice(&1_700_000_000u32.to_le_bytes());
        out.extend_from_slice(&(u32::try_from(i).unwrap() * 1000).to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(f);
    }
    std::fs::write(path, out).unwrap();
}

/// Every frame's captured bytes.
pub fn frames_of(path: &Path) -> Vec<Vec<u8>> {
    let mut r = CaptureReader::open(path).unwrap();
    let mut v = Vec::new();
    while let Some(f) = r.next_frame() {
        v.push(f.unwrap().data.to_vec());
    }
    v
}
