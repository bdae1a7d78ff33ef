//! `analyze --tap A --tap B` (interfaces.md §6.8): two captures of the same traffic at two points
//! of its path, replayed and matched by [`crate::replay::taps::run`]; here, the report of both
//! (`taps[i]`, the clock offset, per flow `between_taps`, the events between the taps) as text,
//! JSON or CSV.

// Indexing cannot panic here: taps (0 or 1) index arrays of two.
#![allow(clippy::indexing_slicing)]

use std::io::{self, Write};

use anyhow::Context as _;
use serde::Serialize;

use super::{AnalyzeConfig, json, pretty};
use crate::config::AnalyzeFormat as Format;
use crate::outfile::AtomicFile;
use crate::replay::between::{Between, BetweenEvent, ConnectionOffset, FlowBetween};
use crate::replay::{FlowKey, Replay, taps};
use crate::units;

/// What `analyze --tap` produced.
#[derive(Debug)]
pub struct TapsOutcome {
    pub taps: Vec<Replay>,
    pub between: Between,
    /// `--fail-on` matched.
    pub matched: bool,
}

/// Run `analyze --tap A --tap B`: replay both, match, write the report.
///
/// # Errors
/// Not two taps, unreadable captures, output errors.
pub fn run(cfg: &AnalyzeConfig) -> anyhow::Result<TapsOutcome> {
    let (taps, between) = analyze(cfg)?;
    let write = |out: &mut dyn Write| write_report(cfg, &taps, &between, out);
    match &cfg.output {
        Some(path) => {
            let file = AtomicFile::create(path)
                .with_context(|| format!("{}: cannot create", path.display()))?;
            let mut out = io::BufWriter::new(file);
            write(&mut out)
                .and_then(|()| out.flush())
                .and_then(|()| out.get_mut().commit())
                .with_context(|| format!("{}: write error", path.display()))?;
        }
        None => {
            let stdout = io::stdout();
            let mut out = io::BufWriter::new(stdout.lock());
            write(&mut out)?;
            out.flush()?;
        }
    }
    if !cfg.quiet {
        for line in notices(cfg, &between) {
            eprintln!("rocescope: {line}");
        }
    }
    let matched = !cfg.fail_on.is_empty()
        && (taps.iter().any(|r| cfg.fail_on.matches(r))
            || between
                .events
                .iter()
                .any(|e| cfg.fail_on.kinds.contains(&e.kind)));
    Ok(TapsOutcome {
        taps,
        between,
        matched,
    })
}

/// Replay both taps and match them.
///
/// # Errors
/// Not exactly two taps, or a capture that cannot be read.
pub fn analyze(cfg: &AnalyzeConfig) -> anyhow::Result<(Vec<Replay>, Between)> {
    taps::run(&cfg.taps, &cfg.engine(), cfg.tap_window_ns)
}

/// The one-line notices: flows seen in one tap only, and an offset that could not be given.
fn notices(cfg: &AnalyzeConfig, between: &Between) -> Vec<String> {
    let mut out = Vec::new();
    let name = |i: usize| {
        cfg.taps
            .get(i)
            .map_or(String::new(), |p| p.display().to_string())
    };
    let common = between
        .flows
        .iter()
        .filter(|f| f.upstream.is_some())
        .count();
    if common == 0 && !between.flows.is_empty() {
        out.push(format!(
            "{} and {}: no packet of one is in the other: not two capture points of the same traffic?",
            name(0),
            name(1)
        ));
    } else if between.offset_ns.is_none() && common > 0 {
        out.push(
            "no connection had traffic both ways in both taps: no clock offset; delays are relative to each flow's smallest"
                .to_owned(),
        );
    }
    for (i, n) in [0, 1].map(|i| {
        (
            i,
            between
                .flows
                .iter()
                .filter(|f| f.upstream.is_none() && f.packets[i] > 0 && f.packets[1 - i] == 0)
                .count(),
        )
    }) {
        if n > 0 && common > 0 {
            out.push(format!("{}: {n} flow(s) seen only there", name(i)));
        }
    }
    out
}

// ------------------------------------------------------------------ the report

/// The report. Its long lists (the flows and connections between the taps, the events between
/// them, and each tap's own, see [`json::report`]) are made a row at a time as they are
/// written: the report's memory stays the replays' and the matcher's (§6.6).
#[derive(Serialize)]
struct Report<'a> {
    version: u32,
    capture: Vec<json::CaptureJson>,
    taps: Vec<json::Report<'a>>,
    clock: ClockJson<'a>,
    flows: Rows<'a, FlowJson>,
    events: Rows<'a, EventJson>,
}

#[derive(Serialize)]
struct ClockJson<'a> {
    /// Time in the second tap minus time in the first.
    offset_ns: Option<i64>,
    /// What it rests on: `connections`, or `none` (delays relative to each flow's smallest).
    source: &'static str,
    estimate_ns: i64,
    connections: Rows<'a, ConnectionJson>,
}

/// A list of the report whose rows are made from `between` one at a time, as they are
/// serialized.
struct Rows<'a, T> {
    between: &'a Between,
    row: fn(&'a Between) -> Box<dyn Iterator<Item = T> + 'a>,
}

impl<T: Serialize> Serialize for Rows<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq((self.row)(self.between))
    }
}

#[derive(Serialize)]
struct ConnectionJson {
    forward: KeyJson,
    backward: KeyJson,
    offset_ns: i64,
}

#[derive(Serialize)]
/// A flow's key as the report's flows have it (`src`, `dst`, `destqp`).
struct KeyJson {
    src: String,
    dst: String,
    destqp: u32,
}

impl KeyJson {
    fn new(k: &FlowKey) -> Self {
        KeyJson {
            src: k.src.to_string(),
            dst: k.dst.to_string(),
            destqp: k.dest_qp,
        }
    }
}

#[derive(Serialize)]
struct FlowJson {
    #[serde(flatten)]
    key: KeyJson,
    /// Its packets in each tap.
    packets: [u64; 2],
    /// The tap its packets pass first (0 or 1), null when nothing of it matched.
    upstream: Option<u8>,
    between_taps: BetweenJson,
}

#[derive(Serialize)]
struct BetweenJson {
    matched: u64,
    dropped: u64,
    corrupted: u64,
    appeared: u64,
    reordered: u64,
    ecn_marked: u64,
    delay_ns: DelayJson,
}

#[derive(Serialize)]
struct DelayJson {
    samples: u64,
    p50: Option<i64>,
    p99: Option<i64>,
    max: Option<i64>,
}

#[derive(Serialize)]
struct EventJson {
    kind: &'static str,
    #[serde(flatten)]
    key: KeyJson,
    opcode: u8,
    psn: u32,
    /// The frame numbers in each tap (null where it is not there).
    frames: [Option<u64>; 2],
    time_ns: i64,
}

/// `cfg` for tap `i` alone (its file in the report's `capture.files`).
fn tap_cfg(cfg: &AnalyzeConfig, i: usize) -> AnalyzeConfig {
    let mut one = cfg.clone();
    one.captures = cfg.taps.get(i).cloned().into_iter().collect();
    one
}

fn report<'a>(cfg: &AnalyzeConfig, taps: &'a [Replay], between: &'a Between) -> Report<'a> {
    Report {
        version: VERSION,
        capture: captures(cfg, taps),
        taps: taps
            .iter()
            .enumerate()
            .map(|(i, r)| json::report(&tap_cfg(cfg, i), r))
            .collect(),
        clock: clock(between),
        flows: flows(between),
        events: events(between),
    }
}

/// The report's `version`.
const VERSION: u32 = 1;

fn captures(cfg: &AnalyzeConfig, taps: &[Replay]) -> Vec<json::CaptureJson> {
    taps.iter()
        .enumerate()
        .map(|(i, r)| json::capture_json(&tap_cfg(cfg, i), r))
        .collect()
}

fn clock(between: &Between) -> ClockJson<'_> {
    ClockJson {
        offset_ns: between.offset_ns,
        source: if between.offset_ns.is_some() {
            "connections"
        } else {
            "none"
        },
        estimate_ns: between.estimate_ns,
        connections: Rows {
            between,
            row: |b| Box::new(b.connections.iter().filter_map(|c| connection_json(b, c))),
        },
    }
}

fn flows(between: &Between) -> Rows<'_, FlowJson> {
    Rows {
        between,
        row: |b| Box::new(b.flows.iter().map(flow_json)),
    }
}

fn events(between: &Between) -> Rows<'_, EventJson> {
    Rows {
        between,
        row: |b| Box::new(b.events.iter().filter_map(|e| event_json(b, e))),
    }
}

fn connection_json(between: &Between, c: &ConnectionOffset) -> Option<ConnectionJson> {
    let key = |flow: u32| between.flows.get(flow as usize).map(|f| f.key);
    Some(ConnectionJson {
        forward: KeyJson::new(&key(c.forward)?),
        backward: KeyJson::new(&key(c.backward)?),
        offset_ns: c.offset_ns,
    })
}

fn flow_json(f: &FlowBetween) -> FlowJson {
    FlowJson {
        key: KeyJson::new(&f.key),
        packets: f.packets,
        upstream: f.upstream,
        between_taps: BetweenJson {
            matched: f.counts.matched,
            dropped: f.counts.dropped,
            corrupted: f.counts.corrupted,
            appeared: f.counts.appeared,
            reordered: f.counts.reordered,
            ecn_marked: f.counts.ecn_marked,
            delay_ns: DelayJson {
                samples: f.delay.samples,
                p50: f.delay.p50,
                p99: f.delay.p99,
                max: f.delay.max,
            },
        },
    }
}

fn event_json(between: &Between, e: &BetweenEvent) -> Option<EventJson> {
    let k = between.flows.get(e.flow as usize)?.key;
    Some(EventJson {
        kind: e.kind.name(),
        key: KeyJson::new(&k),
        opcode: e.opcode,
        psn: e.psn,
        frames: e.frames,
        time_ns: e.time_ns,
    })
}

/// Write the report of both taps in `cfg.format`.
///
/// # Errors
/// Output errors.
pub fn write_report(
    cfg: &AnalyzeConfig,
    taps: &[Replay],
    between: &Between,
    out: &mut dyn Write,
) -> io::Result<()> {
    match cfg.format {
        Format::Json => write_json(cfg, taps, between, out),
        Format::Csv => write_csv(between, out),
        Format::Text => write_text(cfg, taps, between, out),
        Format::Parquet => Err(io::Error::other(
            "--tap writes text, json or csv (-f parquet is for one capture or --each)",
        )),
    }
}

/// The JSON report: the same bytes as `serde_json::to_writer_pretty` of [`report`] and a
/// newline, with each tap's report (most of its bytes: two of 685 MB at 400,000 flows) written
/// at its depth by [`json::write_nested`]; through serde it took 4.8 s where the text report
/// takes 1.0 s.
fn write_json(
    cfg: &AnalyzeConfig,
    taps: &[Replay],
    between: &Between,
    out: &mut dyn Write,
) -> io::Result<()> {
    // a member of the report: its value at depth 1
    let member = |out: &mut dyn Write, name: &str| write!(out, ",\n  \"{name}\": ");
    out.write_all(b"{\n  \"version\": ")?;
    write!(out, "{VERSION}")?;
    member(out, "capture")?;
    pretty::serde_pretty(out, 1, &captures(cfg, taps))?;
    member(out, "taps")?;
    out.write_all(b"[")?;
    for (i, replay) in taps.iter().enumerate() {
        out.write_all(if i == 0 { b"\n    " } else { b",\n    " })?;
        json::write_nested(&tap_cfg(cfg, i), replay, out, 2)?;
    }
    out.write_all(if taps.is_empty() { b"]" } else { b"\n  ]" })?;
    member(out, "clock")?;
    pretty::serde_pretty(out, 1, &clock(between))?;
    member(out, "flows")?;
    pretty::serde_pretty(out, 1, &flows(between))?;
    member(out, "events")?;
    pretty::serde_pretty(out, 1, &events(between))?;
    out.write_all(b"\n}\n")
}

/// The JSON report through serde alone (`to_writer_pretty` of [`report`], and a newline): the
/// oracle the tests hold [`write_report`]'s JSON to, byte for byte.
///
/// # Errors
/// Output errors.
#[doc(hidden)]
pub fn write_json_through_serde(
    cfg: &AnalyzeConfig,
    taps: &[Replay],
    between: &Between,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut gathered = io::BufWriter::with_capacity(1 << 16, &mut *out);
    serde_json::to_writer_pretty(&mut gathered, &report(cfg, taps, between))
        .map_err(io::Error::from)?;
    gathered.write_all(b"\n")?;
    gathered.flush()
}

fn write_csv(between: &Between, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "src,dst,destqp,upstream,packets_tap0,packets_tap1,matched,dropped,corrupted,appeared,reordered,ecn_marked,delay_samples,delay_p50_ns,delay_p99_ns,delay_max_ns"
    )?;
    let opt = |v: Option<i64>| v.map_or(String::new(), |v| v.to_string());
    for f in &between.flows {
        let c = &f.counts;
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            f.key.src,
            f.key.dst,
            f.key.dest_qp,
            f.upstream.map_or(String::new(), |u| u.to_string()),
            f.packets[0],
            f.packets[1],
            c.matched,
            c.dropped,
            c.corrupted,
            c.appeared,
            c.reordered,
            c.ecn_marked,
            f.delay.samples,
            opt(f.delay.p50),
            opt(f.delay.p99),
            opt(f.delay.max)
        )?;
    }
    Ok(())
}

fn write_text(
    cfg: &AnalyzeConfig,
    taps: &[Replay],
    between: &Between,
    out: &mut dyn Write,
) -> io::Result<()> {
    for (i, r) in taps.iter().enumerate() {
        let name = cfg
            .taps
            .get(i)
            .map_or(String::new(), |p| p.display().to_string());
        writeln!(
            out,
            "tap {i}: {name}: {} frames, {} flows, {} events",
            r.capture.frames,
            r.flows.len(),
            r.events.len()
        )?;
    }
    match between.offset_ns {
        Some(o) => writeln!(
            out,
            "clock offset (tap 1 − tap 0): {} s over {} connection(s)",
            rel_seconds(o),
            between.connections.len()
        )?,
        None => writeln!(
            out,
            "clock offset: unknown (no connection both ways in both taps); delays relative to each flow's smallest"
        )?,
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:<40} {:>2} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>12} {:>12}",
        "flow",
        "up",
        "matched",
        "dropped",
        "corrupt",
        "appeared",
        "reorder",
        "ecn",
        "delay p50",
        "delay p99"
    )?;
    let mut flows: Vec<_> = between.flows.iter().collect();
    // the worst first
    flows.sort_by_key(|f| {
        std::cmp::Reverse(
            f.counts.dropped + f.counts.corrupted + f.counts.appeared + f.counts.reordered,
        )
    });
    let shown = cfg.flows.unwrap_or(usize::MAX);
    for f in flows.iter().take(shown) {
        let c = &f.counts;
        let name = f.key.to_string();
        let up = f.upstream.map_or("-".to_owned(), |u| u.to_string());
        let d = |v: Option<i64>| v.map_or("-".to_owned(), signed_duration);
        writeln!(
            out,
            "{name:<40} {up:>2} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>12} {:>12}",
            c.matched,
            c.dropped,
            c.corrupted,
            c.appeared,
            c.reordered,
            c.ecn_marked,
            d(f.delay.p50),
            d(f.delay.p99)
        )?;
    }
    if flows.len() > shown {
        writeln!(out, "… {} more flows (--flows all)", flows.len() - shown)?;
    }
    if !between.events.is_empty() {
        writeln!(out)?;
        writeln!(out, "events between the taps: {}", between.events.len())?;
        for e in between.events.iter().take(cfg.events) {
            let Some(f) = between.flows.get(e.flow as usize) else {
                continue;
            };
            let frame = |v: Option<u64>| v.map_or("-".to_owned(), |n| n.to_string());
            writeln!(
                out,
                "  {:<18} {} PSN {} (frame {} in tap 0, {} in tap 1)",
                e.kind.name(),
                f.key,
                e.psn,
                frame(e.frames[0]),
                frame(e.frames[1])
            )?;
        }
    }
    Ok(())
}

/// Seconds with six decimals, as `dissect` writes relative times.
fn rel_seconds(ns: i64) -> String {
    let mut s = String::new();
    let _ = units::rel_time(&mut s, i128::from(ns));
    s
}

/// A delay as the report writes durations, negative ones with a minus.
fn signed_duration(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    format!("{sign}{}", units::Duration(ns.unsigned_abs()))
}
