//! `rocescope generate`: scenario file → generator → capture file (+ truth JSON).

// Indexing cannot panic here: `out.len` is the length the generator wrote into `scratch` (at most
// its size).
#![allow(clippy::indexing_slicing)]

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use rocescope_generator::truth::between::{FlowBetweenTruth, between};
use rocescope_generator::{CapturePoint, Generator, MAX_FRAME_LEN, Scenario, Truth};
use serde::Serialize;

use crate::capture::LinkType;
use crate::outfile::AtomicFile;
use crate::sink::{DEFAULT_SNAPLEN, FrameSink, writer_for_path_link};

pub use crate::config::GenerateConfig;

/// What one run produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GenerateSummary {
    pub frames: u64,
    /// Bytes written to the capture (frame bytes, after any snaplen cut).
    pub bytes: u64,
    pub truncated_frames: u64,
    /// Timestamps of the first and last frame (ns since the epoch).
    pub first_time_ns: Option<u64>,
    pub last_time_ns: Option<u64>,
}

/// Read the scenario, write every frame to `cfg.output` (and, for a scenario captured at both
/// points, the receiver side's to the second output) and the truth to `cfg.truth`; returns
/// what went to each file.
///
/// # Errors
/// The scenario cannot be read or is invalid (the message names file, line and key),
/// or writing the capture or the truth fails.
pub fn run(cfg: &GenerateConfig) -> anyhow::Result<Vec<(PathBuf, GenerateSummary)>> {
    let text = fs::read_to_string(&cfg.scenario)
        .with_context(|| format!("reading {}", cfg.scenario.display()))?;
    let scenario = Scenario::from_toml(&text, &cfg.scenario.display().to_string())?;
    let link = match scenario.link_kind {
        rocescope_generator::scenario::LinkKind::Ethernet => LinkType::ETHERNET,
        rocescope_generator::scenario::LinkKind::Infiniband => LinkType::ERF,
    };
    let both = scenario.capture == CapturePoint::Both;
    let outputs = match (&cfg.second_output, both) {
        (None, false) => vec![cfg.output.clone()],
        (Some(b), true) => vec![cfg.output.clone(), b.clone()],
        (None, true) => vec![with_tap(&cfg.output, "tx"), with_tap(&cfg.output, "rx")],
        (Some(_), false) => anyhow::bail!(
            "-o given twice, but {} is captured at one point (two captures need [capture] point = \"both\")",
            cfg.scenario.display()
        ),
    };
    let mut written = Vec::new();
    let mut taps = Vec::new();
    for (tap, path) in outputs.iter().enumerate() {
        let mut sink = writer_for_path_link(path, DEFAULT_SNAPLEN, link)
            .with_context(|| format!("creating {}", path.display()))?;
        let mut g = Generator::at_tap(&scenario, cfg.seed, u8::try_from(tap).unwrap_or(1));
        if both && cfg.truth.is_some() {
            g.keep_tap_log();
        }
        let summary = generate_with(&mut g, &mut sink)
            .with_context(|| format!("writing {}", path.display()))?;
        written.push((path.clone(), summary));
        taps.push(g);
    }
    if let Some(path) = &cfg.truth {
        let json = match taps.as_slice() {
            [tx, rx] => serde_json::to_string_pretty(&two_tap_truth(tx, rx))?,
            [one] => serde_json::to_string_pretty(&one.truth())?,
            _ => anyhow::bail!("{}: no capture generated", cfg.scenario.display()),
        };
        write_file(path, json.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(written)
}

/// The truth of a scenario captured at both points, in `analyze --tap`'s keys: each tap's
/// truth in `taps`, and per flow `between_taps`.
#[derive(Debug, Serialize)]
pub struct TwoTapTruth {
    pub version: u32,
    pub taps: [Truth; 2],
    pub flows: Vec<FlowBetweenTruth>,
}

/// [`TwoTapTruth`] of the two generators of one scenario (their tap logs kept).
#[must_use]
pub fn two_tap_truth(tx: &Generator<'_>, rx: &Generator<'_>) -> TwoTapTruth {
    TwoTapTruth {
        version: 1,
        taps: [tx.truth(), rx.truth()],
        flows: between(
            tx.flow_keys(),
            &[tx.peers(), rx.peers()].concat(),
            tx.tap_log(),
            rx.tap_log(),
        ),
    }
}

/// `OUT.pcap` → `OUT.tx.pcap` (the tap's name before the extension).
fn with_tap(path: &Path, tap: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{tap}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{tap}"),
    };
    path.with_file_name(name)
}

/// Generate `scenario` with `seed` into any sink (tests use a memory sink); returns the
/// summary and the truth.
///
/// # Errors
/// The sink fails, or the generator reports an error.
pub fn generate_into(
    scenario: &Scenario,
    seed: u64,
    sink: &mut dyn FrameSink,
) -> anyhow::Result<(GenerateSummary, Truth)> {
    let mut g = Generator::new(scenario, seed);
    let s = generate_with(&mut g, sink)?;
    Ok((s, g.truth()))
}

/// Every frame of `g` into `sink`.
///
/// # Errors
/// The sink fails, or the generator reports an error.
pub fn generate_with(
    g: &mut Generator<'_>,
    sink: &mut dyn FrameSink,
) -> anyhow::Result<GenerateSummary> {
    // One thread: writing a frame costs far less than generating it, and
    // handing batches to a writer thread (crate::ahead, which `send` uses)
    // measured slower here than this loop. Frames are built straight into the
    // sink's buffer when it has one (the file writers), else into one
    // cache-hot scratch buffer and copied.
    let mut scratch = Vec::new();
    let mut s = GenerateSummary::default();
    loop {
        let out = if let Some(buf) = sink.frame_buffer(MAX_FRAME_LEN)? {
            let Some(r) = g.next_frame(buf) else { break };
            let out = r?;
            sink.commit_frame(out.time_ns, out.len, out.orig_len)?;
            out
        } else {
            if scratch.is_empty() {
                scratch.resize(MAX_FRAME_LEN, 0);
            }
            let Some(r) = g.next_frame(&mut scratch) else {
                break;
            };
            let out = r?;
            let frame = &scratch[..out.len];
            if out.orig_len > out.len {
                let orig = u32::try_from(out.orig_len).context("frame longer than 4 GiB")?;
                sink.send_truncated(out.time_ns, frame, orig)?;
            } else {
                sink.send(out.time_ns, frame)?;
            }
            out
        };
        if out.orig_len > out.len {
            s.truncated_frames += 1;
        }
        s.frames += 1;
        s.bytes += out.len as u64;
        s.first_time_ns.get_or_insert(out.time_ns);
        s.last_time_ns = Some(out.time_ns);
    }
    sink.finish()?;
    Ok(s)
}

fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if path.as_os_str() == "-" {
        let mut out = io::stdout().lock();
        out.write_all(bytes)?;
        return out.write_all(b"\n");
    }
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes)?;
    f.write_all(b"\n")?;
    f.commit()
}
