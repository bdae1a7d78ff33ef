//! `rocescope dissect`: decode every frame of one or more captures, like tshark.
//!
//! The frames come through [`crate::source::drive`] (read ahead on a second thread for large
//! inputs, merged by time when there are several files); each is viewed
//! ([`crate::frame::FrameView`]), filtered by `--frames`, `-Y` and `-c`, and written in one of
//! four formats through one large `BufWriter` on the locked stdout:
//!
//! - `text` ([`text`]): one summary line per frame, tshark's columns;
//! - `verbose` ([`verbose`]): the field tree of [`rocescope_dissectors::pretty::TreeWriter`];
//! - `jsonl` ([`json`]): one JSON object per frame with the keys of interfaces.md §4;
//! - `csv` ([`csv`]): a header row and one row per frame (columns documented there).
//!
//! A filter that uses the replay's analysis marks (`loss`, `ooo`, `dup`, `retrans`) first
//! replays the captures through [`crate::replay::run`] to learn each frame's marks (so it
//! needs files, not standard input). A broken pipe surfaces as an `io::Error` of kind
//! `BrokenPipe`, which `main` turns into a quiet exit 0. Nothing is allocated per frame: every
//! format writes through buffers that are reused from frame to frame.

pub mod csv;
pub mod fields;
pub mod json;
pub mod text;
pub mod verbose;

use std::io::{self, BufWriter, Write};
use std::ops::ControlFlow;

use anyhow::bail;
use rocescope_dissectors::stack::DissectOptions;

use crate::capture;
pub use crate::config::{DissectConfig, DissectFormat as Format};
use crate::filter::FrameMarks;
use crate::frame::FrameView;
use crate::replay::{self, EngineConfig};
use crate::source::{self, Ranged, Threads};

/// Output buffer size: large writes keep the syscall count low.
const OUT_BUF: usize = 256 << 10;

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

/// The replay's marks of every frame, when the filter asks for them.
///
/// # Errors
/// Standard input (it cannot be read twice), or a capture that cannot be read.
fn marks(cfg: &DissectConfig) -> anyhow::Result<Option<FrameMarks>> {
    if !cfg.filter.as_ref().is_some_and(|f| f.uses_marks()) {
        return Ok(None);
    }
    if cfg.captures.iter().any(|p| p.as_os_str() == "-") {
        bail!(
            "-Y: the analysis marks (loss, ooo, dup, retrans) need the capture read twice: give a file, not standard input"
        );
    }
    let mut source = capture::open_all(&cfg.captures)?;
    let engine = EngineConfig {
        link_bps: cfg.link_bps,
        roce_ports: cfg.roce_ports.clone(),
        rd_as_rd: cfg.rd_as_rd,
        ..EngineConfig::default()
    };
    let replayed = replay::run(&mut source, &engine, &mut ());
    if let Some(e) = replayed.error {
        return Err(e.into());
    }
    Ok(Some(FrameMarks::from_events(&replayed.replay.events)))
}

/// The dissect loop over `cfg.captures`, writing to `out`.
///
/// # Errors
/// As [`run`].
pub fn write_all(cfg: &DissectConfig, out: &mut impl Write) -> anyhow::Result<()> {
    let mut writer = Writer::new(cfg);
    let result = if let Some(live) = &cfg.live {
        if cfg.filter.as_ref().is_some_and(|f| f.uses_marks()) {
            bail!(
                "-Y: the analysis marks (loss, ooo, dup, retrans) need the capture read twice: capture to a file first (rocescope capture -w), then dissect it"
            );
        }
        let mut source = crate::live::open(live)?;
        let handle = source.handle();
        crate::live::stop_on_signals(&handle)?;
        if !cfg.quiet {
            eprintln!("rocescope: {}", crate::live::listening_line(live, &source));
        }
        writer.header(out)?;
        let shown = frames(cfg, &mut source, Some(&handle), &mut None, &mut writer, out);
        if !cfg.quiet {
            eprintln!(
                "rocescope: {}: {}",
                live.iface,
                crate::live::summary(&handle)
            );
        }
        shown
    } else {
        let mut marks = marks(cfg)?;
        let reader = capture::open_all(&cfg.captures)?;
        writer.header(out)?;
        if cfg.count == Some(0) {
            Ok(())
        } else {
            frames(
                cfg,
                &mut Ranged::new(reader, cfg.frames),
                None,
                &mut marks,
                &mut writer,
                out,
            )
        }
    };
    // The frames decoded before a capture error still go out.
    let finished = writer.finish(out);
    result?;
    finished?;
    Ok(())
}

fn frames(
    cfg: &DissectConfig,
    source: &mut dyn source::FrameSource,
    live: Option<&crate::live::LiveHandle>,
    marks: &mut Option<FrameMarks>,
    writer: &mut Writer,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let options = DissectOptions {
        roce_ports: &cfg.roce_ports,
        rd_as_rd: cfg.rd_as_rd,
        ..DissectOptions::default()
    };
    let mut shown = 0u64;
    source::for_each(source, Threads::Auto, |frame, at| -> anyhow::Result<_> {
        let view = FrameView::new(frame, &options, at.first_time_ns);
        if let Some(filter) = &cfg.filter {
            let m = marks
                .as_mut()
                .map(|m| m.next_frame(frame.number))
                .unwrap_or_default();
            if !filter.matches_marked(&view.facts(), m, view.dissected.as_ref()) {
                return Ok(ControlFlow::Continue(()));
            }
        }
        writer.frame(&view, out)?;
        shown += 1;
        if at.idle {
            out.flush()?; // live: the frame is shown as it arrives
        }
        Ok(if cfg.count.is_some_and(|c| shown >= c) {
            if let Some(live) = live {
                live.stop(); // the capture thread ends too
            }
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    })
}

/// The chosen output format with its reusable buffers.
enum Writer {
    Text(text::TextWriter),
    Verbose(verbose::VerboseWriter),
    Jsonl(json::JsonWriter),
    Csv(csv::CsvWriter),
    Fields(fields::FieldsWriter),
}

impl Writer {
    fn new(cfg: &DissectConfig) -> Self {
        match cfg.format {
            Format::Text => Writer::Text(text::TextWriter::new(cfg.link_bps)),
            Format::Verbose => Writer::Verbose(verbose::VerboseWriter::new()),
            Format::Jsonl => Writer::Jsonl(json::JsonWriter::new()),
            Format::Csv => Writer::Csv(csv::CsvWriter::new(cfg.link_bps)),
            Format::Fields => {
                Writer::Fields(fields::FieldsWriter::new(&cfg.fields, cfg.layout.clone()))
            }
        }
    }

    fn header(&mut self, out: &mut impl Write) -> io::Result<()> {
        match self {
            Writer::Csv(w) => w.header(out),
            Writer::Fields(w) => w.header(out),
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
            Writer::Fields(w) => w.frame(view, out),
        }
    }
}
