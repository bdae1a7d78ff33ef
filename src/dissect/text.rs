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
use crate::text::push_padded;
use crate::units::rel_time;

/// Writes text lines.
#[derive(Debug, Clone)]
pub struct TextWriter {
    summarizer: Summarizer,
    summary: SummaryLine,
    /// The line being written, and its time column.
    line: String,
    time: String,
}

impl TextWriter {
    #[must_use]
    pub fn new(link_bps: u64) -> Self {
        TextWriter {
            summarizer: Summarizer::new(link_bps),
            summary: SummaryLine::default(),
            line: String::with_capacity(256),
            time: String::with_capacity(32),
        }
    }

    /// The line of `view`, written to `out`.
    ///
    /// # Errors
    /// Output errors.
    pub fn write(&mut self, view: &FrameView<'_>, out: &mut impl Write) -> io::Result<()> {
        self.build(view);
        out.write_all(self.line.as_bytes())
    }

    /// The line of `view`, in `self.line`.
    fn build(&mut self, view: &FrameView<'_>) {
        self.summarizer.summarize(view, &mut self.summary);
        let s = &self.summary;
        // "{:>7} {:>11} {:>17} → {:<17} {:<6} {:>5} {}", written column by column
        let line = &mut self.line;
        line.clear();
        push_padded(line, itoa::Buffer::new().format(view.frame.number), 7, true);
        line.push(' ');
        self.time.clear();
        let _ = rel_time(&mut self.time, view.rel_ns); // a String takes any text
        push_padded(line, &self.time, 11, true);
        line.push(' ');
        push_padded(line, &s.src, 17, true);
        line.push_str(" → ");
        push_padded(line, &s.dst, 17, false);
        line.push(' ');
        push_padded(line, &s.protocol, 6, false);
        line.push(' ');
        push_padded(line, itoa::Buffer::new().format(view.wire_len()), 5, true);
        line.push(' ');
        line.push_str(&s.info);
        line.push('\n');
    }
}

impl super::Lines for TextWriter {
    fn frame(&mut self, view: &FrameView<'_>, out: &mut impl Write) -> io::Result<()> {
        self.write(view, out)
    }

    fn append(&mut self, view: &FrameView<'_>, buf: &mut Vec<u8>) {
        self.build(view);
        buf.extend_from_slice(self.line.as_bytes());
    }

    fn line(&mut self, line: &[u8], out: &mut impl Write) -> io::Result<()> {
        out.write_all(line)
    }
}
