//! `rocescope dissect`: decode every frame of one or more captures, like tshark.
//!
//! The loop reads frames from [`crate::capture::open_all`] (merged by time when there are
//! several files), dissects each one from its link type, classifies the dissector's complaint
//! (truncated or malformed, interfaces.md §2 and §6.5), applies `--frames`, `-Y` and `-c`, and
//! writes one of four formats through one large `BufWriter` on the locked stdout:
//!
//! - `text` ([`text`]): one summary line per frame, tshark's columns;
//! - `verbose` ([`verbose`]): the field tree of [`pretty::TreeWriter`];
//! - `jsonl` ([`json`]): one JSON object per frame with the keys of interfaces.md §4;
//! - `csv` ([`csv`]): a header row and one row per frame (columns documented there).
//!
//! A broken pipe surfaces as an `io::Error` of kind `BrokenPipe`, which `main` turns into a
//! quiet exit 0. Nothing is allocated per frame: every format writes through buffers that are
//! reused from frame to frame.

pub mod csv;
pub mod json;
pub mod text;
pub mod verbose;

use std::fmt;
use std::io::{self, BufWriter, Write};

use rocescope_dissectors::WireError;
use rocescope_dissectors::ethernet::EtherType;
use rocescope_dissectors::stack::{Dissected, Options, Start, dissect_with};

use crate::capture::{self, Frame, LinkType};
use crate::cli::DissectFormat;
use crate::config::DissectConfig;
use crate::filter::FrameFacts;

/// Output buffer size: large writes keep the syscall count low.
const OUT_BUF: usize = 256 << 10;

/// What went wrong with one frame (it is still shown, with this as its error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// The dissector's first complaint.
    Wire(WireError),
    /// A link type the dissector cannot start on.
    UnsupportedLink(LinkType),
    /// A cooked-capture (SLL/SLL2) frame shorter than its own header.
    ShortCooked(LinkType),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Wire(e) => write!(f, "{e}"),
            Problem::UnsupportedLink(l) => write!(f, "unsupported link type {l}"),
            Problem::ShortCooked(l) => write!(f, "truncated {l} header"),
        }
    }
}

/// One frame, dissected and classified: what every output format and the filter look at.
#[derive(Debug, Clone, Copy)]
pub struct FrameView<'a> {
    pub frame: Frame<'a>,
    /// `None` when the link type is not supported.
    pub dissected: Option<Dissected<'a>>,
    /// Offset of `dissected.frame` in `frame.data` (the cooked header's length, else 0).
    pub base: usize,
    pub problem: Option<Problem>,
    /// Captured short of the original length, or cut inside a header or length field.
    pub truncated: bool,
    /// Captured whole but inconsistent (§6.5).
    pub malformed: bool,
    /// Nanoseconds since the first frame of the capture (negative when time goes backwards).
    pub rel_ns: i128,
}

impl<'a> FrameView<'a> {
    /// Dissect `frame` from its link type and classify the result.
    #[must_use]
    pub fn new(frame: Frame<'a>, options: &Options<'_>, first_time_ns: u64) -> Self {
        let rel_ns = i128::from(frame.time_ns) - i128::from(first_time_ns);
        let mut view = FrameView {
            frame,
            dissected: None,
            base: 0,
            problem: None,
            truncated: frame.truncated(),
            malformed: false,
            rel_ns,
        };
        let (bytes, start) = match frame.link {
            LinkType::ETHERNET => (frame.data, Start::Ethernet),
            LinkType::LINUX_SLL | LinkType::LINUX_SLL2 => {
                match capture::cooked_payload(frame.link, frame.data) {
                    Some((proto, payload)) => {
                        view.base = frame.data.len() - payload.len();
                        (payload, Start::EtherType(EtherType(proto)))
                    }
                    None => {
                        view.problem = Some(Problem::ShortCooked(frame.link));
                        view.truncated = true;
                        return view;
                    }
                }
            }
            other => {
                view.problem = Some(Problem::UnsupportedLink(other));
                return view;
            }
        };
        let (d, err) = dissect_with(bytes, start, options);
        view.dissected = Some(d);
        if let Some(err) = err {
            match err {
                // Bytes missing past the end of what was captured: a cut frame. Real sniffers
                // write orig_len == caplen on frames they cut (captures/real/README.md,
                // nccl-uc-write-snaplen.pcap), so this does not look at orig_len.
                WireError::Truncated { offset, need, .. } => {
                    if offset.saturating_add(need) > bytes.len() {
                        view.truncated = true;
                    } else {
                        view.malformed = true;
                    }
                }
                WireError::Malformed { .. } => view.malformed = true,
                WireError::Unsupported { .. } => {}
            }
            view.problem = Some(Problem::Wire(err));
        }
        view
    }

    /// What the display filter may ask besides the field tree.
    #[must_use]
    pub fn facts(&self) -> FrameFacts {
        FrameFacts {
            number: self.frame.number,
            time_ns: self.frame.time_ns,
            len: u64::from(self.frame.orig_len),
            caplen: u64::from(self.frame.caplen),
            truncated: self.truncated,
            malformed: self.malformed,
        }
    }
}

/// Run `rocescope dissect` with a validated configuration, writing to standard output.
///
/// # Errors
/// A capture that cannot be opened or read (after the frames before the problem were written),
/// or an output error (a broken pipe among them).
pub fn run(cfg: &DissectConfig) -> anyhow::Result<()> {
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(OUT_BUF, stdout.lock());
    let result = write_all(cfg, &mut out);
    // Whatever happened, what was decoded so far goes out first.
    let flushed = out.flush();
    result?;
    flushed?;
    Ok(())
}

/// The dissect loop over `cfg.captures`, writing to `out`.
///
/// # Errors
/// As [`run`].
pub fn write_all(cfg: &DissectConfig, out: &mut impl Write) -> anyhow::Result<()> {
    let mut reader = capture::open_all(&cfg.captures)?;
    let mut writer = Writer::new(cfg);
    writer.header(out)?;
    let result = frames(cfg, &mut reader, &mut writer, out);
    // The frames decoded before a capture error still go out.
    let finished = writer.finish(out);
    result?;
    finished?;
    Ok(())
}

fn frames(
    cfg: &DissectConfig,
    reader: &mut capture::MergedReader,
    writer: &mut Writer,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let options = Options {
        roce_ports: &cfg.roce_ports,
        ..Options::default()
    };
    let mut first_time = None;
    let mut shown = 0u64;
    if cfg.count == Some(0) {
        return Ok(());
    }
    while let Some(item) = reader.next_frame() {
        let frame = item?;
        let first = *first_time.get_or_insert(frame.time_ns);
        if cfg.frames.is_past(frame.number) {
            break;
        }
        if !cfg.frames.contains(frame.number) {
            continue;
        }
        let view = FrameView::new(frame, &options, first);
        if let Some(filter) = &cfg.filter {
            if !filter.matches(&view.facts(), view.dissected.as_ref()) {
                continue;
            }
        }
        writer.frame(&view, out)?;
        shown += 1;
        if cfg.count.is_some_and(|c| shown >= c) {
            break;
        }
    }
    Ok(())
}

/// The chosen output format with its reusable buffers.
enum Writer {
    Text(text::TextWriter),
    Verbose(verbose::VerboseWriter),
    Jsonl(json::JsonWriter),
    Csv(csv::CsvWriter),
}

impl Writer {
    fn new(cfg: &DissectConfig) -> Self {
        match cfg.format {
            DissectFormat::Text => Writer::Text(text::TextWriter::new(cfg.link_bps)),
            DissectFormat::Verbose => Writer::Verbose(verbose::VerboseWriter::new()),
            DissectFormat::Jsonl => Writer::Jsonl(json::JsonWriter::new()),
            DissectFormat::Csv => Writer::Csv(csv::CsvWriter::new(cfg.link_bps)),
        }
    }

    fn header(&mut self, out: &mut impl Write) -> io::Result<()> {
        match self {
            Writer::Csv(w) => w.header(out),
            _ => Ok(()),
        }
    }

    fn finish(&mut self, out: &mut impl Write) -> io::Result<()> {
        match self {
            Writer::Jsonl(w) => w.finish(out),
            _ => Ok(()),
        }
    }

    fn frame(&mut self, view: &FrameView<'_>, out: &mut impl Write) -> io::Result<()> {
        match self {
            Writer::Text(w) => w.frame(view, out),
            Writer::Verbose(w) => w.frame(view, out),
            Writer::Jsonl(w) => w.frame(view, out),
            Writer::Csv(w) => w.frame(view, out),
        }
    }
}
