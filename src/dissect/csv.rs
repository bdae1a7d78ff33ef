//! `dissect -f csv`: a header row, then one row per frame (RFC 4180 quoting).
//!
//! Columns:
//!
//! | column | content |
//! |---|---|
//! | `frame` | 1-based frame number |
//! | `time_ns` | capture timestamp, ns since the Unix epoch |
//! | `rel_time` | seconds since the first frame, six decimals |
//! | `src`, `dst` | IP addresses (GIDs for RoCEv1, MACs for other Ethernet frames) |
//! | `protocol` | as in the text format (`RoCEv2`, `RoCEv1`, `CM`, `PFC`, `UDP`, …) |
//! | `len`, `caplen` | original and captured length |
//! | `opcode` | BTH opcode number, empty when no BTH |
//! | `opcode_name` | `RC_SEND_ONLY`, `UNKNOWN(0x4a)`, … |
//! | `destqp`, `psn` | BTH DestQP and PSN (decimal) |
//! | `ackreq` | `1` / `0` |
//! | `icrc_valid` | `true`, `false`, or empty when not verifiable |
//! | `truncated`, `malformed` | `1` / `0` |
//! | `info` | the text format's info column |

// Indexing cannot panic here: the string is cut at a position found in it.
#![allow(clippy::indexing_slicing)]

use std::io::{self, Write};

use rocescope_dissectors::icrc::IcrcStatus;

use crate::frame::FrameView;
use crate::frame::summary::{Summarizer, SummaryLine};
use crate::units::rel_time;

/// The header row.
pub const HEADER: &str = "frame,time_ns,rel_time,src,dst,protocol,len,caplen,opcode,opcode_name,destqp,psn,ackreq,icrc_valid,truncated,malformed,info";

/// Writes CSV rows.
#[derive(Debug)]
pub struct CsvWriter {
    summarizer: Summarizer,
    summary: SummaryLine,
    time: String,
}

impl CsvWriter {
    #[must_use]
    pub fn new(link_bps: u64) -> Self {
        CsvWriter {
            summarizer: Summarizer::new(link_bps),
            summary: SummaryLine::default(),
            time: String::with_capacity(32),
        }
    }

    /// Write the header row.
    ///
    /// # Errors
    /// Those of `out`.
    pub fn header(&mut self, out: &mut impl Write) -> io::Result<()> {
        writeln!(out, "{HEADER}")
    }

    /// Write one frame's row.
    ///
    /// # Errors
    /// Those of `out`.
    pub fn frame(&mut self, view: &FrameView<'_>, out: &mut impl Write) -> io::Result<()> {
        self.summarizer.summarize(view, &mut self.summary);
        self.time.clear();
        let _ = rel_time(&mut self.time, view.rel_ns);
        let f = &view.frame;
        let s = &self.summary;
        write!(
            out,
            "{},{},{},{},{},{},{},{},",
            f.number,
            f.time_ns,
            self.time,
            s.src,
            s.dst,
            s.protocol,
            view.wire_len(),
            view.captured_len()
        )?;
        match view.dissected.as_ref().and_then(|d| d.roce.as_ref()) {
            Some(r) => {
                let icrc = match r.icrc_status() {
                    IcrcStatus::Valid => "true",
                    IcrcStatus::Invalid { .. } => "false",
                    IcrcStatus::NotVerifiable => "",
                };
                write!(
                    out,
                    "{},{},{},{},{},{},",
                    r.bth.opcode().0,
                    r.opcode_label(),
                    r.bth.dest_qp().value(),
                    r.bth.psn().value(),
                    u8::from(r.bth.ack_req()),
                    icrc
                )?;
            }
            None => out.write_all(b",,,,,,")?,
        }
        write!(
            out,
            "{},{},\"",
            u8::from(view.truncated),
            u8::from(view.malformed)
        )?;
        let mut rest = s.info.as_str();
        while let Some(i) = rest.find('"') {
            out.write_all(&rest.as_bytes()[..=i])?;
            out.write_all(b"\"")?;
            rest = &rest[i + 1..];
        }
        out.write_all(rest.as_bytes())?;
        out.write_all(b"\"\n")
    }
}
