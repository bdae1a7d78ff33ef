//! `dissect -f text`: one line per frame, tshark's summary columns.
//!
//! ```text
//!   frame  time(s since first)  source  →  destination  protocol  length  info
//!       1     0.000000        10.0.0.1 → 10.0.0.2         RoCEv2    1082 RC_SEND_ONLY QP=0x000011 PSN=1234 A
//! ```
//!
//! The columns are [`crate::frame::summary`]'s.

use std::io::{self, Write};

use crate::frame::FrameView;
use crate::frame::summary::{Summarizer, SummaryLine};
use crate::units::rel_time;

/// Writes text lines.
#[derive(Debug)]
pub struct TextWriter {
    summarizer: Summarizer,
    summary: SummaryLine,
    time: String,
}

impl TextWriter {
    #[must_use]
    pub fn new(link_bps: u64) -> Self {
        TextWriter {
            summarizer: Summarizer::new(link_bps),
            summary: SummaryLine::default(),
            time: String::with_capacity(32),
        }
    }

    /// Write one frame's line.
    ///
    /// # Errors
    /// Those of `out`.
    pub fn frame(&mut self, view: &FrameView<'_>, out: &mut impl Write) -> io::Result<()> {
        self.summarizer.summarize(view, &mut self.summary);
        self.time.clear();
        let _ = rel_time(&mut self.time, view.rel_ns);
        let s = &self.summary;
        writeln!(
            out,
            "{:>7} {:>11} {:>17} → {:<17} {:<6} {:>5} {}",
            view.frame.number,
            self.time,
            s.src,
            s.dst,
            s.protocol,
            view.wire_len(),
            s.info
        )
    }
}
