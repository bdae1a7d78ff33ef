//! `rocescope dissect`: decode every frame of one or more captures, like tshark.
//!
//! The frames come through [`crate::source::drive`] (read ahead on a second thread for large
//! inputs, merged by time when there are several files); each is viewed
//! ([`crate::frame::FrameView`]), filtered by `--frames`, `-Y` and `-c`, and written in one of
//! four formats through one large `BufWriter` on the locked stdout:
//!
//! - `text` ([`text`]): one summary line per frame, tshark's columns;
//! - `verbose` ([`verbose`]): the field tree of [`rocescope_dissectors::pretty::TreeWriter`];
//! - `jsonl` ([`json`]): one JSON object per frame with the keys of interfaces.md §4 (from
//!   files, the reading thread formats frames too while the writing thread is behind);
//! - `csv` ([`csv`]): a header row and one row per frame (columns documented there);
//! - `parquet` ([`parquet`]): one row per frame, with the frame's analysis marks (the captures
//!   are replayed on a thread of their own at the same time, when they are files, and the
//!   `marks` column filled in as the encoder writes).
//!
//! `-o FILE` writes any format to a file that is complete or absent ([`AtomicFile`]).
//! A filter that uses the replay's analysis marks (`loss`, `ooo`, `dup`, `retrans`) first
//! replays the captures through [`crate::replay::run`] to learn each frame's marks (so it
//! needs files, not standard input). A broken pipe surfaces as an `io::Error` of kind
//! `BrokenPipe`, which `main` turns into a quiet exit 0. Nothing is allocated per frame: every
//! format writes through buffers that are reused from frame to frame.

pub mod csv;
pub mod fields;
pub mod json;
pub mod parquet;
pub mod text;
pub mod verbose;

use std::io::{self, BufWriter, Write};
use std::ops::ControlFlow;

use anyhow::{Context as _, bail};
use rocescope_dissectors::stack::DissectOptions;

use self::parquet::FrameRows;
use crate::capture;
use crate::columnar::ParquetFile;
use crate::columnar::encoder::Late;
pub use crate::config::{DissectConfig, DissectFormat as Format};
use crate::filter::FrameMarks;
use crate::frame::FrameView;
use crate::outfile::AtomicFile;
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
    if let Some(path) = cfg
        .output
        .as_ref()
        .filter(|_| cfg.format != Format::Parquet)
    {
        let file = AtomicFile::create(path).with_context(|| path.display().to_string())?;
        let mut out = BufWriter::with_capacity(OUT_BUF, file);
        // On an error the file is dropped unnamed: complete or absent.
        write_all(cfg, &mut out)?;
        let mut file = out
            .into_inner()
            .map_err(std::io::IntoInnerError::into_error)
            .with_context(|| path.display().to_string())?;
        file.commit().with_context(|| path.display().to_string())?;
        return Ok(());
    }
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(OUT_BUF, stdout.lock());
    let result = write_all(cfg, &mut out);
    // Whatever happened, what was decoded so far goes out first.
    let flushed = out.flush();
    result?;
    flushed?;
    Ok(())
}

/// The replay's marks of every frame, when the filter asks for them (before the frames are
/// shown).
///
/// # Errors
/// Standard input (it cannot be read twice), or a capture that cannot be read.
fn marks(cfg: &DissectConfig) -> anyhow::Result<Option<FrameMarks>> {
    if !filter_uses_marks(cfg) {
        return Ok(None);
    }
    if from_stdin(cfg) {
        bail!(
            "-Y: the analysis marks (loss, ooo, dup, retrans) need the capture read twice: give a file, not standard input"
        );
    }
    replay_marks(&cfg.captures, &engine(cfg), false).map(Some)
}

/// The filter asks for the replay's analysis marks (`loss`, `ooo`, …).
fn filter_uses_marks(cfg: &DissectConfig) -> bool {
    cfg.filter.as_ref().is_some_and(|f| f.uses_marks())
}

fn from_stdin(cfg: &DissectConfig) -> bool {
    cfg.captures.iter().any(|p| p.as_os_str() == "-")
}

fn engine(cfg: &DissectConfig) -> EngineConfig {
    EngineConfig {
        link_bps: cfg.link_bps,
        roce_ports: cfg.roce_ports.clone(),
        rd_as_rd: cfg.rd_as_rd,
        ..EngineConfig::default()
    }
}

/// Replay `captures` for the marks of their frames; `alongside`: while the frame pass runs
/// (the replay then reads in place on its one thread: the cores are busy, and a reading
/// thread would only add the copy of every frame).
///
/// # Errors
/// A capture that cannot be read.
fn replay_marks(
    captures: &[std::path::PathBuf],
    engine: &EngineConfig,
    alongside: bool,
) -> anyhow::Result<FrameMarks> {
    let mut source = capture::open_all(captures)?;
    let threads = if alongside { Some(None) } else { None };
    let replayed = replay::run_with(&mut source, engine, threads, &mut ());
    if let Some(e) = replayed.error {
        return Err(e.into());
    }
    Ok(FrameMarks::from_events(&replayed.replay.events))
}

/// `-f parquet`'s `marks` column, when the filter did not need them first: the captures are
/// replayed on a thread of their own while the frames are written, and the column is filled
/// in as the marks become known (`None`: standard input or live, where `marks` stay null).
///
/// # Errors
/// The thread cannot be started.
fn late_marks(cfg: &DissectConfig, rows: &FrameRows) -> anyhow::Result<Option<Late>> {
    if cfg.live.is_some() || from_stdin(cfg) || filter_uses_marks(cfg) {
        return Ok(None);
    }
    let (tx, ready) = std::sync::mpsc::channel();
    let captures = cfg.captures.clone();
    let engine = engine(cfg);
    std::thread::Builder::new()
        .name("marks".into())
        .spawn(move || {
            let fill = replay_marks(&captures, &engine, true).map(self::parquet::marks_fill);
            let _ = tx.send(fill); // the encoder is gone when the frame pass failed
        })
        .context("cannot start the replay for the marks column")?;
    let (field, key) = rows.marks_and_frame_fields()?;
    Ok(Some(Late { field, key, ready }))
}

/// The dissect loop over `cfg.captures`, writing to `out`.
///
/// # Errors
/// As [`run`].
pub fn write_all(cfg: &DissectConfig, out: &mut impl Write) -> anyhow::Result<()> {
    write_all_with(cfg, out, None)
}

/// [`write_all`] with `-f jsonl`'s sharing of the formatting between the threads chosen:
/// `None` as [`write_all`] decides, `Some(split)` on two threads as told (tests compare them).
///
/// # Errors
/// As [`run`].
pub fn write_all_with(
    cfg: &DissectConfig,
    out: &mut impl Write,
    split: Option<replay::Split>,
) -> anyhow::Result<()> {
    let mut writer = Writer::new(cfg)?;
    let result = if let Some(live) = &cfg.live {
        if filter_uses_marks(cfg) {
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
        let shown = frames(
            cfg,
            &mut source,
            Some(&handle),
            &mut None,
            &mut writer,
            out,
            split,
        );
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
                split,
            )
        }
    };
    // The frames decoded before a capture error still go out (to a stream; a Parquet file is
    // complete or absent).
    let finished = match (&result, &writer) {
        (Err(_), Writer::Parquet(_)) => Ok(()),
        _ => writer.finish(out),
    };
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
    split: Option<replay::Split>,
) -> anyhow::Result<()> {
    let options = DissectOptions {
        roce_ports: &cfg.roce_ports,
        rd_as_rd: cfg.rd_as_rd,
        ..DissectOptions::default()
    };
    if live.is_none() && marks.is_none() {
        match writer {
            Writer::Jsonl(w) => return line_frames(cfg, source, w, out, split),
            Writer::Text(w) => return line_frames(cfg, source, w, out, split),
            _ => {}
        }
    }
    let mut shown = 0u64;
    source::for_each(source, Threads::Auto, |frame, at| -> anyhow::Result<_> {
        let mut place = None;
        let view = FrameView::new_in(&mut place, &frame, &options, at.first_time_ns);
        let m = marks.as_mut().map(|m| m.next_frame(frame.number));
        if let Some(filter) = &cfg.filter
            && !filter.matches_marked(
                &view.facts(),
                m.unwrap_or_default(),
                view.dissected.as_ref(),
            )
        {
            return Ok(ControlFlow::Continue(()));
        }
        writer.frame(view, m, out)?;
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

/// A frame the reading thread dissected, filtered and wrote as its JSON line: bytes
/// `start..end` of its batch; `shown` false when the filter left it out.
struct Written {
    shown: bool,
    start: usize,
    end: usize,
}

/// A format whose frames are independent lines (`text`, `jsonl`): either thread may write one.
/// Implemented beside each writer (`json.rs`, `text.rs`).
trait Lines: Clone + Send {
    /// Write `view`'s line (the writing thread).
    fn frame(&mut self, view: &FrameView<'_>, out: &mut impl Write) -> io::Result<()>;
    /// Append `view`'s line to `buf` (the reading thread's copy of the writer).
    fn append(&mut self, view: &FrameView<'_>, buf: &mut Vec<u8>);
    /// Write a line [`Lines::append`] wrote on the reading thread (the writing thread).
    fn line(&mut self, line: &[u8], out: &mut impl Write) -> io::Result<()>;
}

/// [`frames`] for the line formats from files: when the writing thread falls behind, the
/// reading thread also dissects, filters and formats frames ([`source::Prepare`]), so both
/// cores format. The lines are the same either way, in frame order (the writing thread takes
/// the batches in order).
///
/// Measured and not kept (issue 13): each of two threads reading chunks of a pcap file of its
/// own (`pread`), walking their records once the chunk before was walked, formatting them
/// from its own cache, the lines written in order by a third. Output byte-identical, but
/// 1.03-1.26x the time of this on frames1k (chunks of 2 MiB to 256 KiB, 5-7 pairs; 1.10x for
/// text): the CPU time fell 6 %, yet each thread waited about 14 % of the time for the other's
/// walk or turn, and two cores copying at once still cost a third more per byte than one
/// (perf samples in `_copy_to_iter`: 772 against 578 single-threaded, 846 here).
fn line_frames<W: Lines>(
    cfg: &DissectConfig,
    source: &mut dyn source::FrameSource,
    writer: &mut W,
    out: &mut impl Write,
    split: Option<replay::Split>,
) -> anyhow::Result<()> {
    let (threads, split) = match split {
        None => (Threads::Auto, replay::Split::Balanced),
        Some(split) => (Threads::Two, split),
    };
    let options = DissectOptions {
        roce_ports: &cfg.roce_ports,
        rd_as_rd: cfg.rd_as_rd,
        ..DissectOptions::default()
    };
    let filter = cfg.filter.as_ref();
    let kept = move |view: &FrameView<'_>| {
        filter.is_none_or(|f| {
            f.matches_marked(
                &view.facts(),
                crate::filter::Marks::default(),
                view.dissected.as_ref(),
            )
        })
    };
    // the reading thread's own writer (its buffers and caches)
    let mut reader = writer.clone();
    let prepare = move |frame: &capture::Frame<'_>,
                        told: source::Prepare<'_>,
                        written: &mut Option<Written>| {
        if !split.reader_dissects(told.busy) {
            return;
        }
        let mut place = None;
        let view = FrameView::new_in(&mut place, frame, &options, told.first_time_ns);
        let out = &mut told.out.bytes;
        let start = out.len();
        let shown = kept(view);
        if shown {
            reader.append(view, out);
        }
        *written = Some(Written {
            shown,
            start,
            end: out.len(),
        });
    };
    let mut shown = 0u64;
    source::drive(source, threads, prepare, |slot, at| -> anyhow::Result<_> {
        match slot {
            source::Slot::Frame(frame) => {
                let mut place = None;
                let view = FrameView::new_in(&mut place, &frame, &options, at.first_time_ns);
                if !kept(view) {
                    return Ok(ControlFlow::Continue(()));
                }
                writer.frame(view, out)?;
            }
            source::Slot::Ahead(_) => return Ok(ControlFlow::Continue(())),
            source::Slot::Prepared(w, side) => {
                if !w.shown {
                    return Ok(ControlFlow::Continue(()));
                }
                Lines::line(
                    writer,
                    side.bytes.get(w.start..w.end).unwrap_or_default(),
                    out,
                )?;
            }
        }
        shown += 1;
        Ok(if cfg.count.is_some_and(|c| shown >= c) {
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
    Parquet(Box<ParquetFrames>),
}

/// `-f parquet`: the frame rows and the file they go to, a row group at a time.
struct ParquetFrames {
    rows: FrameRows,
    file: Option<ParquetFile>,
    written: u64,
    /// Where, and whether to say so (not under `-q`).
    path: std::path::PathBuf,
    quiet: bool,
}

impl Writer {
    fn new(cfg: &DissectConfig) -> anyhow::Result<Self> {
        Ok(match cfg.format {
            Format::Text => Writer::Text(text::TextWriter::new(cfg.link_bps)),
            Format::Verbose => Writer::Verbose(verbose::VerboseWriter::new()),
            Format::Jsonl => Writer::Jsonl(json::JsonWriter::new()),
            Format::Csv => Writer::Csv(csv::CsvWriter::new(cfg.link_bps)),
            Format::Fields => {
                Writer::Fields(fields::FieldsWriter::new(&cfg.fields, cfg.layout.clone()))
            }
            Format::Parquet => {
                let Some(path) = &cfg.output else {
                    bail!("-f parquet writes a file: name it with -o FILE");
                };
                let files = if cfg.live.is_some() {
                    cfg.live.iter().map(|l| l.iface.clone()).collect()
                } else {
                    cfg.captures
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect()
                };
                let mut rows = FrameRows::new(files);
                let name = format!("frames/{}", self::parquet::SCHEMA_VERSION);
                let unique = self::parquet::UNIQUE;
                let late = late_marks(cfg, &rows)?;
                let file = ParquetFile::create(path, rows.table(), &name, &unique, late)?;
                Writer::Parquet(Box::new(ParquetFrames {
                    rows,
                    file: Some(file),
                    written: 0,
                    path: path.clone(),
                    quiet: cfg.quiet,
                }))
            }
        })
    }

    fn header(&mut self, out: &mut impl Write) -> io::Result<()> {
        match self {
            Writer::Csv(w) => w.header(out),
            Writer::Fields(w) => w.header(out),
            _ => Ok(()),
        }
    }

    fn finish(&mut self, out: &mut impl Write) -> anyhow::Result<()> {
        match self {
            Writer::Jsonl(w) => w.finish(out)?,
            Writer::Parquet(p) => {
                if let Some(file) = p.file.take() {
                    file.close(p.rows.table())?;
                    if !p.quiet {
                        eprintln!(
                            "rocescope: wrote {} frames to {}",
                            p.written,
                            p.path.display()
                        );
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// One frame; `marks` are its analysis marks where the captures were replayed.
    fn frame(
        &mut self,
        view: &FrameView<'_>,
        marks: Option<crate::filter::Marks>,
        out: &mut impl Write,
    ) -> anyhow::Result<()> {
        match self {
            Writer::Text(w) => w.frame(view, out)?,
            Writer::Verbose(w) => w.frame(view, out)?,
            Writer::Jsonl(w) => w.frame(view, out)?,
            Writer::Csv(w) => w.frame(view, out)?,
            Writer::Fields(w) => w.frame(view, out)?,
            Writer::Parquet(p) => {
                p.rows.frame(view, marks);
                p.written += 1;
                if let Some(file) = &mut p.file {
                    file.write_when_full(p.rows.table())?;
                }
            }
        }
        Ok(())
    }
}
