//! `dissect -f verbose`: a frame header line, the field tree of [`pretty::TreeWriter`] (every
//! field with its JSON key and byte range), and the dissector's complaint, like `tshark -V`.
//! Byte ranges count from the start of the frame (for Linux cooked captures, from the start of
//! the cooked header, as tshark counts them).

use std::fmt::Write as _;
use std::io::{self, Write};

use rocescope_dissectors::pretty::{self, TreeWriter};

use crate::frame::FrameView;
use crate::units::rel_time;

/// Writes field trees.
#[derive(Debug, Default)]
pub struct VerboseWriter {
    text: String,
}

impl VerboseWriter {
    #[must_use]
    pub fn new() -> Self {
        VerboseWriter {
            text: String::with_capacity(4096),
        }
    }

    /// Write one frame's tree and a blank line.
    ///
    /// # Errors
    /// Those of `out`.
    pub fn frame(&mut self, view: &FrameView<'_>, out: &mut impl Write) -> io::Result<()> {
        self.text.clear();
        let f = &view.frame;
        let t = &mut self.text;
        // Writing into a String cannot fail.
        let _ = write!(
            t,
            "Frame {}: {} bytes on wire, {} bytes captured, time {}.{:09} (+",
            f.number,
            view.wire_len(),
            view.captured_len(),
            f.time_ns / 1_000_000_000,
            f.time_ns % 1_000_000_000
        );
        let _ = rel_time(t, view.rel_ns);
        let _ = write!(t, " s), link {}", f.link);
        if view.truncated {
            t.push_str(" [TRUNCATED]");
        }
        if view.malformed {
            t.push_str(" [MALFORMED]");
        }
        t.push('\n');
        if let Some(d) = &view.dissected {
            // (an ERF record header is a layer of the tree)
            if d.link_header_len > 0 && d.erf().is_none() {
                let _ = writeln!(t, "    {} header [0..{}]", f.link, d.link_header_len);
            }
            let mut tree = TreeWriter::new(&mut *t);
            pretty::visit(d, &mut tree);
        }
        if let Some(p) = &view.problem {
            let _ = writeln!(t, "    Error: {p}");
        }
        t.push('\n');
        out.write_all(t.as_bytes())
    }
}
