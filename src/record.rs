//! `rocescope capture`: a live interface into pcapng (interfaces.md §11).
//!
//! One Interface Description Block naming the interface (nanosecond timestamps), one Enhanced
//! Packet Block per frame, and at the end an Interface Statistics Block with the frames
//! received and the kernel's drops, as dumpcap writes. The file is written in place, as tcpdump
//! does, so that it can be watched as it grows; it is flushed whenever the interface goes
//! quiet, and everything goes out before the process ends on `-c`, `--duration`, SIGINT or
//! SIGTERM, so an interrupted capture is a complete, valid file holding every frame counted.
//! (A second SIGINT ends the process at once.) `-w -` writes to standard output.
//!
//! With `--ring N --ring-size SIZE` the capture goes to `NAME_00001.pcapng`, `NAME_00002…`,
//! a new file once one reaches SIZE bytes, the oldest removed when there would be more than N.

use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;

pub use crate::config::{CaptureConfig, Rotation};
use crate::frame::{Frame, LinkType};
use crate::live::{self, LiveHandle};
use crate::sink::{FrameSink, PcapNgWriter};
use crate::source::{self, Threads};

/// What a capture did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CaptureSummary {
    /// Frames written.
    pub frames: u64,
    /// Frames the kernel dropped (the capture could not keep up).
    pub kernel_drops: u64,
    /// The files written, oldest first (those rotation removed are not listed).
    pub files: Vec<PathBuf>,
}

/// Captures until the bound, a stop signal or an error; prints the counters on stderr.
///
/// # Errors
/// The interface cannot be opened (one line: no such interface, no permission …), the output
/// cannot be written, or the interface fails during the capture (the files are still
/// finished and valid).
pub fn run(cfg: &CaptureConfig) -> anyhow::Result<CaptureSummary> {
    let mut source = live::open(&cfg.live)?;
    let handle = source.handle();
    live::stop_on_signals(&handle)?;
    let mut files = Files::open(cfg, source.link())?;
    if !cfg.quiet {
        eprintln!("rocescope: {}", live::listening_line(&cfg.live, &source));
    }
    let mut ticker = Ticker::new(cfg);
    let iface = cfg.live.iface.as_str();
    let captured = source::for_each(&mut source, Threads::Auto, |frame, at| {
        files.write(&frame)?;
        if at.idle {
            files.flush()?;
        }
        ticker.tick(&handle, at.idle);
        Ok::<_, anyhow::Error>(ControlFlow::Continue(()))
    });
    ticker.clear();
    let summary = files.finish(&handle)?;
    if !cfg.quiet {
        eprintln!("rocescope: {iface}: {}", live::summary(&handle));
    }
    // (the error names the interface; the file holds what came before it and is complete)
    captured?;
    Ok(summary)
}

/// The counters on stderr every `--stats-every`, when stderr is a terminal.
struct Ticker {
    every: Option<std::time::Duration>,
    last: Instant,
    frames: u64,
}

impl Ticker {
    fn new(cfg: &CaptureConfig) -> Self {
        let show = !cfg.quiet && io::stderr().is_terminal();
        Ticker {
            every: show.then_some(cfg.stats_every),
            last: Instant::now(),
            frames: 0,
        }
    }

    fn tick(&mut self, handle: &LiveHandle, idle: bool) {
        let Some(every) = self.every else { return };
        self.frames += 1;
        // a clock read per 256 frames, or whenever the interface goes quiet
        if (idle || self.frames.is_multiple_of(256)) && self.last.elapsed() >= every {
            self.last = Instant::now();
            eprint!(
                "\rrocescope: {} frames captured, {} dropped by the kernel ",
                handle.captured(),
                handle.kernel_drops()
            );
        }
    }

    fn clear(&self) {
        if self.every.is_some() {
            eprint!("\r\x1b[K");
        }
    }
}

/// The output: one pcapng, or a ring of them.
struct Files {
    base: PathBuf,
    rotation: Option<Rotation>,
    iface: String,
    link: LinkType,
    snaplen: u32,
    writer: PcapNgWriter<Box<dyn Write>>,
    /// Number of the open file (rotation), from 1.
    index: u32,
    /// Bytes in the open file.
    bytes: u64,
    frames: u64,
    kept: Vec<PathBuf>,
}

impl Files {
    fn open(cfg: &CaptureConfig, link: LinkType) -> anyhow::Result<Self> {
        let path = name(&cfg.output, cfg.rotation.map(|_| 1));
        let writer = start(&path, cfg.live.snaplen, link, &cfg.live.iface)?;
        Ok(Files {
            base: cfg.output.clone(),
            rotation: cfg.rotation,
            iface: cfg.live.iface.clone(),
            link,
            snaplen: cfg.live.snaplen,
            writer,
            index: 1,
            bytes: 0,
            frames: 0,
            kept: vec![path],
        })
    }

    fn write(&mut self, frame: &Frame<'_>) -> anyhow::Result<()> {
        if let Some(r) = self.rotation
            && self.bytes >= r.bytes
        {
            self.rotate(r)?;
        }
        self.writer
            .send_truncated(frame.time_ns, frame.data, frame.orig_len)
            .with_context(|| format!("{}: write error", self.current().display()))?;
        self.frames += 1;
        // an Enhanced Packet Block: 32 bytes around the data padded to 4
        self.bytes += 32 + u64::from(frame.caplen.div_ceil(4) * 4);
        Ok(())
    }

    fn current(&self) -> &Path {
        self.kept
            .last()
            .map_or(self.base.as_path(), PathBuf::as_path)
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        self.writer
            .finish()
            .with_context(|| format!("{}: write error", self.current().display()))
    }

    fn rotate(&mut self, r: Rotation) -> anyhow::Result<()> {
        self.flush()?;
        self.index += 1;
        let path = name(&self.base, Some(self.index));
        self.writer = start(&path, self.snaplen, self.link, &self.iface)?;
        self.bytes = 0;
        self.kept.push(path);
        while self.kept.len() > r.files as usize {
            let old = self.kept.remove(0);
            std::fs::remove_file(&old)
                .with_context(|| format!("{}: cannot remove (--ring)", old.display()))?;
        }
        Ok(())
    }

    /// The statistics block, the last flush and a sync.
    fn finish(mut self, handle: &LiveHandle) -> anyhow::Result<CaptureSummary> {
        let drops = handle.kernel_drops();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let path = self.current().to_owned();
        let write_error = || format!("{}: write error", path.display());
        self.writer
            .statistics(now, self.frames, drops)
            .with_context(write_error)?;
        self.writer.finish().with_context(write_error)?;
        Ok(CaptureSummary {
            frames: self.frames,
            kernel_drops: drops,
            files: self.kept,
        })
    }
}

/// `FILE`, or with rotation `STEM_00001.EXT`.
fn name(base: &Path, index: Option<u32>) -> PathBuf {
    let Some(i) = index else {
        return base.to_owned();
    };
    let stem = base
        .file_stem()
        .map_or_else(|| "capture".into(), |s| s.to_string_lossy().into_owned());
    let ext = base
        .extension()
        .map_or_else(|| "pcapng".into(), |e| e.to_string_lossy().into_owned());
    base.with_file_name(format!("{stem}_{i:05}.{ext}"))
}

fn start(
    path: &Path,
    snaplen: u32,
    link: LinkType,
    iface: &str,
) -> anyhow::Result<PcapNgWriter<Box<dyn Write>>> {
    let out: Box<dyn Write> = if path.as_os_str() == "-" {
        Box::new(io::stdout())
    } else {
        Box::new(File::create(path).with_context(|| format!("{}: cannot create", path.display()))?)
    };
    PcapNgWriter::for_interface(out, snaplen, link, iface)
        .with_context(|| format!("{}: write error", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_file_names() {
        assert_eq!(
            name(Path::new("/x/cap.pcapng"), None),
            Path::new("/x/cap.pcapng")
        );
        assert_eq!(
            name(Path::new("/x/cap.pcapng"), Some(7)),
            Path::new("/x/cap_00007.pcapng")
        );
        assert_eq!(
            name(Path::new("cap"), Some(1)),
            Path::new("cap_00001.pcapng")
        );
    }
}
