//! `rocescope dissect`: decode every frame of one or more captures, like tshark.
//!
//! A reading thread takes frames from [`crate::capture::open_all`] (merged by time when there
//! are several files) and hands them over in recycled batches; the loop dissects each one from
//! its link type, classifies the dissector's complaint
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
use std::sync::mpsc;
use std::thread;

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

/// Frames per hand-off from the reading thread (fewer when [`BATCH_BYTES`] is reached first).
const BATCH_FRAMES: usize = 1024;
/// Captured bytes per hand-off (a batch ends after the frame that reaches this).
const BATCH_BYTES: usize = 1 << 20;
/// Batches in circulation: one being filled, one being decoded, two waiting.
const BATCHES: usize = 4;

/// One frame of a [`Batch`]: a [`Frame`] whose bytes are `data[start..end]` of the batch.
#[derive(Debug, Clone, Copy)]
struct Meta {
    number: u64,
    time_ns: u64,
    caplen: u32,
    orig_len: u32,
    link: LinkType,
    start: usize,
    end: usize,
}

/// Frames read ahead by the reading thread, in capture order; recycled once decoded.
#[derive(Default)]
struct Batch {
    data: Vec<u8>,
    frames: Vec<Meta>,
    /// Time of the first frame of the capture (whether shown or not).
    first_time: Option<u64>,
    /// The capture error met right after these frames (the reading thread then stops).
    error: Option<capture::CaptureError>,
}

/// The reading thread: read the frames of `--frames`, copy them into recycled batches and
/// send them in order. It stops at the end, at an error (sent after the frames before it), or
/// when the decoding side hangs up.
fn read_ahead(
    cfg: &DissectConfig,
    reader: &mut capture::MergedReader,
    free: &mpsc::Receiver<Batch>,
    full: &mpsc::SyncSender<Batch>,
) {
    let mut first_time = None;
    let mut done = false;
    while !done {
        let Ok(mut batch) = free.recv() else {
            return;
        };
        batch.data.clear();
        batch.frames.clear();
        while batch.frames.len() < BATCH_FRAMES && batch.data.len() < BATCH_BYTES {
            let frame = match reader.next_frame() {
                None => {
                    done = true;
                    break;
                }
                Some(Err(e)) => {
                    batch.error = Some(e);
                    done = true;
                    break;
                }
                Some(Ok(frame)) => frame,
            };
            first_time.get_or_insert(frame.time_ns);
            if cfg.frames.is_past(frame.number) {
                done = true;
                break;
            }
            if !cfg.frames.contains(frame.number) {
                continue;
            }
            let start = batch.data.len();
            batch.data.extend_from_slice(frame.data);
            batch.frames.push(Meta {
                number: frame.number,
                time_ns: frame.time_ns,
                caplen: frame.caplen,
                orig_len: frame.orig_len,
                link: frame.link,
                start,
                end: batch.data.len(),
            });
        }
        batch.first_time = first_time;
        if (batch.frames.is_empty() && batch.error.is_none()) || full.send(batch).is_err() {
            return;
        }
    }
}

/// Decode and write frames: a reading thread fills batches of frames (the read system calls
/// and the copy out of the page cache), this one dissects and formats them. Output order is
/// capture order; nothing is allocated per frame (batches are recycled).
fn frames(
    cfg: &DissectConfig,
    reader: &mut capture::MergedReader,
    writer: &mut Writer,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    if cfg.count == Some(0) {
        return Ok(());
    }
    let (free_tx, free_rx) = mpsc::channel::<Batch>();
    let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(BATCHES);
    for _ in 0..BATCHES {
        let batch = Batch {
            data: Vec::with_capacity(BATCH_BYTES + (64 << 10)),
            frames: Vec::with_capacity(BATCH_FRAMES),
            ..Batch::default()
        };
        // Cannot fail: the receiver is alive.
        let _ = free_tx.send(batch);
    }
    thread::scope(|scope| {
        scope.spawn(move || read_ahead(cfg, reader, &free_rx, &full_tx));
        let result = decode(cfg, &full_rx, &free_tx, writer, out);
        // Hanging up stops the reading thread (the scope waits for it) when decoding stopped
        // early: `-c`, an output error.
        drop(full_rx);
        drop(free_tx);
        result
    })
}

/// The decoding side of [`frames`].
fn decode(
    cfg: &DissectConfig,
    full: &mpsc::Receiver<Batch>,
    free: &mpsc::Sender<Batch>,
    writer: &mut Writer,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let options = Options {
        roce_ports: &cfg.roce_ports,
        ..Options::default()
    };
    let mut shown = 0u64;
    for mut batch in full {
        let first = batch.first_time.unwrap_or(0);
        for m in &batch.frames {
            let frame = Frame {
                number: m.number,
                time_ns: m.time_ns,
                caplen: m.caplen,
                orig_len: m.orig_len,
                link: m.link,
                data: &batch.data[m.start..m.end],
            };
            let view = FrameView::new(frame, &options, first);
            if let Some(filter) = &cfg.filter {
                if !filter.matches(&view.facts(), view.dissected.as_ref()) {
                    continue;
                }
            }
            writer.frame(&view, out)?;
            shown += 1;
            if cfg.count.is_some_and(|c| shown >= c) {
                return Ok(());
            }
        }
        if let Some(e) = batch.error.take() {
            return Err(e.into());
        }
        // The reading thread may have stopped already: then the batch is simply dropped.
        let _ = free.send(batch);
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
