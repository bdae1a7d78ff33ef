//! `analyze --tap A --tap B` (interfaces.md §6.8): two captures of the same traffic at two points
//! of its path. Each tap is replayed on its own thread as `analyze` replays one capture (its
//! report is `taps[i]`), and hands its RoCE packets, as the engine takes them, to this thread,
//! which merges the two streams in time order and matches them ([`between::Matcher`]).
//!
//! The taps' clocks need not agree: before the streams are merged, the first
//! [`ESTIMATE_PACKETS`] RoCE packets of each file give a first estimate of the offset (§6.8's
//! rule on them) and the direction of the flows they hold; the offset reported is §6.8's rule
//! over every matched packet, computed by the matcher at the end.

// Indexing cannot panic here: taps (0 or 1) index arrays of two, and a median is taken of a
// list checked to be non-empty.
#![allow(clippy::indexing_slicing)]

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use anyhow::{Context as _, bail};
use serde::Serialize;

use super::{AnalyzeConfig, json};
use crate::capture;
use crate::config::AnalyzeFormat as Format;
use crate::frame::FrameView;
use crate::outfile::AtomicFile;
use crate::replay::between::{Between, BetweenEvent, Matcher, Sighting};
use crate::replay::{self, FlowKey, Observer, PacketEvent, Replay};
use crate::source::{self, Threads};

/// RoCE packets of each tap read for the first estimate of the clock offset.
pub const ESTIMATE_PACKETS: usize = 8192;

/// Sightings a tap's thread hands over at a time, and batches in flight per tap.
const BATCH: usize = 4096;
const BATCHES_IN_FLIGHT: usize = 4;

/// A tap's packets on their way to the matcher, with the keys of the flows they are the first
/// of (a sighting names its flow by the tap's index).
#[derive(Default)]
struct Batch {
    flows: Vec<(u32, FlowKey)>,
    sightings: Vec<Sighting>,
}

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
    let [a, b] = cfg.taps.as_slice() else {
        bail!(
            "--tap: two captures of the same traffic, one per capture point (got {})",
            cfg.taps.len()
        );
    };
    let first = [estimate_packets(cfg, a)?, estimate_packets(cfg, b)?];
    let estimate = Estimate::new(&first);
    drop(first);
    let mut matcher = Matcher::new(estimate.offset_ns.unwrap_or(0), cfg.tap_window_ns);
    for (key, up) in &estimate.upstream {
        matcher.set_upstream(*key, *up);
    }
    let engine = cfg.engine();
    let (replays, matcher) = std::thread::scope(|scope| -> anyhow::Result<_> {
        let mut rx = Vec::new();
        let mut handles = Vec::new();
        for (i, path) in [a, b].into_iter().enumerate() {
            let (tx, r) = sync_channel::<Batch>(BATCHES_IN_FLIGHT);
            rx.push(r);
            let engine = engine.clone();
            let tap = u8::try_from(i).unwrap_or(0);
            let handle = std::thread::Builder::new()
                .name(format!("tap{i}"))
                .spawn_scoped(scope, move || replay_tap(path, tap, &engine, &tx))
                .context("cannot start a tap's replay")?;
            handles.push(handle);
        }
        let (r1, r0) = (rx.pop(), rx.pop());
        if let (Some(r0), Some(r1)) = (r0, r1) {
            merge(&mut matcher, [r0, r1]);
        }
        let mut replays = Vec::new();
        for h in handles {
            match h.join() {
                Ok(r) => replays.push(r?),
                Err(_) => bail!("a tap's replay failed"),
            }
        }
        Ok((replays, matcher))
    })?;
    let connections = connections(&replays);
    Ok((replays, matcher.finish(&connections)))
}

/// One tap's replay; its packets to `tx` in batches.
fn replay_tap(
    path: &Path,
    tap: u8,
    engine: &replay::EngineConfig,
    tx: &SyncSender<Batch>,
) -> anyhow::Result<Replay> {
    struct Hand<'a> {
        tap: u8,
        batch: Batch,
        /// The replay's flows whose keys went out already.
        named: Vec<bool>,
        tx: &'a SyncSender<Batch>,
        /// The matcher stopped taking batches (it never does before the end; kept quiet).
        gone: bool,
    }
    impl Observer for Hand<'_> {
        fn packet(&mut self, flow: u32, p: &PacketEvent) {
            let at = flow as usize;
            if !self.named.get(at).copied().unwrap_or(false) {
                if self.named.len() <= at {
                    self.named.resize(at + 1, false);
                }
                self.named[at] = true;
                self.batch.flows.push((flow, p.key));
            }
            self.batch.sightings.push(Sighting::new(self.tap, flow, p));
            if self.batch.sightings.len() >= BATCH && !self.gone {
                let full = std::mem::replace(
                    &mut self.batch,
                    Batch {
                        flows: Vec::new(),
                        sightings: Vec::with_capacity(BATCH),
                    },
                );
                self.gone = self.tx.send(full).is_err();
            }
        }
    }
    let mut source =
        capture::open_all(&[path.to_path_buf()]).with_context(|| path.display().to_string())?;
    let mut hand = Hand {
        tap,
        batch: Batch::default(),
        named: Vec::new(),
        tx,
        gone: false,
    };
    let replayed = replay::run_with(&mut source, engine, Some(None), &mut hand);
    if !hand.batch.sightings.is_empty() && !hand.gone {
        let _ = tx.send(std::mem::take(&mut hand.batch));
    }
    match replayed.error {
        Some(e) => Err(anyhow::Error::from(e).context(path.display().to_string())),
        None => Ok(replayed.replay),
    }
}

/// Both taps' sightings into the matcher, in merged time order.
fn merge(m: &mut Matcher, rx: [Receiver<Batch>; 2]) {
    let mut batches: [std::vec::IntoIter<Sighting>; 2] =
        [Vec::new().into_iter(), Vec::new().into_iter()];
    let mut next: [Option<Sighting>; 2] = [None, None];
    let refill = |i: usize,
                  batches: &mut [std::vec::IntoIter<Sighting>; 2],
                  m: &mut Matcher|
     -> Option<Sighting> {
        loop {
            if let Some(s) = batches[i].next() {
                return Some(s);
            }
            let batch = rx[i].recv().ok()?;
            for (flow, key) in batch.flows {
                m.flow(u8::try_from(i).unwrap_or(1), flow, key);
            }
            batches[i] = batch.sightings.into_iter();
        }
    };
    next[0] = refill(0, &mut batches, m);
    next[1] = refill(1, &mut batches, m);
    loop {
        let pick = match (&next[0], &next[1]) {
            (Some(a), Some(b)) => {
                usize::from(m.merged_time(1, b.time_ns) < m.merged_time(0, a.time_ns))
            }
            (Some(_), None) => 0,
            (None, Some(_)) => 1,
            (None, None) => break,
        };
        if let Some(s) = next[pick].take() {
            m.sighting(&s);
        }
        next[pick] = refill(pick, &mut batches, m);
    }
}

/// The connections the taps' replays paired (§6.3), as pairs of flow keys.
fn connections(replays: &[Replay]) -> Vec<(FlowKey, FlowKey)> {
    let mut out = Vec::new();
    for r in replays {
        for f in &r.flows {
            let Some(peer) = f.peer.and_then(|p| r.flows.get(p as usize)) else {
                continue;
            };
            let pair = if f.key <= peer.key {
                (f.key, peer.key)
            } else {
                (peer.key, f.key)
            };
            if !out.contains(&pair) {
                out.push(pair);
            }
        }
    }
    out
}

/// The first RoCE packets of a tap, for the estimate.
fn estimate_packets(cfg: &AnalyzeConfig, path: &Path) -> anyhow::Result<Vec<PacketEvent>> {
    let mut source =
        capture::open_all(&[path.to_path_buf()]).with_context(|| path.display().to_string())?;
    let options = rocescope_dissectors::stack::DissectOptions {
        roce_ports: &cfg.roce_ports,
        rd_as_rd: cfg.rd_as_rd,
        ..rocescope_dissectors::stack::DissectOptions::default()
    };
    let mut out = Vec::new();
    let read = source::for_each(&mut source, Threads::One, |frame, _| {
        let view = FrameView::new(frame, &options, 0);
        if let Some(ev) = PacketEvent::from_view(&view) {
            out.push(ev);
        }
        Ok::<_, capture::CaptureError>(if out.len() >= ESTIMATE_PACKETS {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    });
    // an error later in the file is the replay's to report, with everything before it
    if let Err(e) = read
        && out.is_empty()
    {
        return Err(anyhow::Error::from(e).context(path.display().to_string()));
    }
    Ok(out)
}

/// The first estimate: the offset and the direction of the flows seen at the start.
struct Estimate {
    offset_ns: Option<i64>,
    upstream: Vec<(FlowKey, u8)>,
}

impl Estimate {
    /// §6.8's rule over `first` (the first packets of each tap), with the flows of a pair of
    /// addresses taken together (the taps' replays have not paired them into connections
    /// yet); with no pair both ways, the first tap is upstream and the offset is the smallest
    /// difference.
    fn new(first: &[Vec<PacketEvent>; 2]) -> Estimate {
        type Id = (FlowKey, u8, u32);
        let mut seen: HashMap<Id, ([u32; 2], [u64; 2])> = HashMap::new();
        for (tap, packets) in first.iter().enumerate() {
            for p in packets {
                let e = seen
                    .entry((p.key, p.opcode.0, p.psn.value()))
                    .or_insert(([0; 2], [0; 2]));
                e.0[tap] += 1;
                e.1[tap] = p.time_ns;
            }
        }
        let mut by_flow: BTreeMap<FlowKey, Vec<i64>> = BTreeMap::new();
        for ((key, _, _), (n, t)) in &seen {
            if *n == [1, 1] {
                let d = i128::from(t[1]) - i128::from(t[0]);
                by_flow
                    .entry(*key)
                    .or_default()
                    .push(i64::try_from(d).unwrap_or(0));
            }
        }
        // the two directions of each address pair
        let mut pairs: BTreeMap<(replay::Addr, replay::Addr), [Vec<i64>; 2]> = BTreeMap::new();
        for (key, ds) in &by_flow {
            let (lo, hi, way) = if key.src <= key.dst {
                (key.src, key.dst, 0)
            } else {
                (key.dst, key.src, 1)
            };
            pairs.entry((lo, hi)).or_default()[way].extend(ds);
        }
        let median = |v: &mut Vec<i64>| {
            v.sort_unstable();
            v[(v.len() - 1) / 2]
        };
        let mut offsets = Vec::new();
        let mut forward_way: BTreeMap<(replay::Addr, replay::Addr), usize> = BTreeMap::new();
        for (pair, [w0, w1]) in &mut pairs {
            if w0.is_empty() || w1.is_empty() {
                continue;
            }
            let fwd = usize::from(median(w1) > median(w0));
            let (f, b) = if fwd == 0 { (&*w0, &*w1) } else { (&*w1, &*w0) };
            let lo = f.iter().copied().min().unwrap_or(0);
            let hi = b.iter().copied().max().unwrap_or(0);
            offsets.push(lo + (hi - lo) / 2);
            forward_way.insert(*pair, fwd);
        }
        let offset_ns = if offsets.is_empty() {
            by_flow.values().flatten().copied().min()
        } else {
            Some(median(&mut offsets))
        };
        let upstream = by_flow
            .keys()
            .map(|key| {
                let (pair, way) = if key.src <= key.dst {
                    ((key.src, key.dst), 0)
                } else {
                    ((key.dst, key.src), 1)
                };
                let up = match forward_way.get(&pair) {
                    Some(&fwd) => u8::from(way != fwd),
                    None => 0,
                };
                (*key, up)
            })
            .collect();
        Estimate {
            offset_ns,
            upstream,
        }
    }
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

#[derive(Serialize)]
struct Report<'a> {
    version: u32,
    capture: Vec<json::CaptureJson>,
    taps: Vec<json::Report<'a>>,
    clock: ClockJson,
    flows: Vec<FlowJson>,
    events: Vec<EventJson>,
}

#[derive(Serialize)]
struct ClockJson {
    /// Time in the second tap minus time in the first.
    offset_ns: Option<i64>,
    /// What it rests on: `connections`, or `none` (delays relative to each flow's smallest).
    source: &'static str,
    estimate_ns: i64,
    connections: Vec<ConnectionJson>,
}

#[derive(Serialize)]
struct ConnectionJson {
    forward: KeyJson,
    backward: KeyJson,
    offset_ns: i64,
}

#[derive(Serialize)]
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
    src: String,
    dst: String,
    destqp: u32,
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
    src: String,
    dst: String,
    destqp: u32,
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

fn report<'a>(cfg: &AnalyzeConfig, taps: &'a [Replay], between: &Between) -> Report<'a> {
    let key = |flow: u32| between.flows.get(flow as usize).map(|f| f.key);
    Report {
        version: 1,
        capture: taps
            .iter()
            .enumerate()
            .map(|(i, r)| json::capture_json(&tap_cfg(cfg, i), r))
            .collect(),
        taps: taps
            .iter()
            .enumerate()
            .map(|(i, r)| json::report(&tap_cfg(cfg, i), r))
            .collect(),
        clock: ClockJson {
            offset_ns: between.offset_ns,
            source: if between.offset_ns.is_some() {
                "connections"
            } else {
                "none"
            },
            estimate_ns: between.estimate_ns,
            connections: between
                .connections
                .iter()
                .filter_map(|c| {
                    Some(ConnectionJson {
                        forward: KeyJson::new(&key(c.forward)?),
                        backward: KeyJson::new(&key(c.backward)?),
                        offset_ns: c.offset_ns,
                    })
                })
                .collect(),
        },
        flows: between
            .flows
            .iter()
            .map(|f| FlowJson {
                src: f.key.src.to_string(),
                dst: f.key.dst.to_string(),
                destqp: f.key.dest_qp,
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
            })
            .collect(),
        events: between
            .events
            .iter()
            .filter_map(|e| event_json(between, e))
            .collect(),
    }
}

fn event_json(between: &Between, e: &BetweenEvent) -> Option<EventJson> {
    let k = between.flows.get(e.flow as usize)?.key;
    Some(EventJson {
        kind: e.kind.name(),
        src: k.src.to_string(),
        dst: k.dst.to_string(),
        destqp: k.dest_qp,
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
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &report(cfg, taps, between))
                .map_err(io::Error::from)?;
            out.write_all(b"\n")
        }
        Format::Csv => write_csv(between, out),
        Format::Text => write_text(cfg, taps, between, out),
        Format::Parquet => Err(io::Error::other(
            "--tap writes text, json or csv (-f parquet is for one capture or --each)",
        )),
    }
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
            "clock offset (tap 1 − tap 0): {} over {} connection(s)",
            signed_ns(o),
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
        let name = format!("{} → {} QP {:#08x}", f.key.src, f.key.dst, f.key.dest_qp);
        let up = f.upstream.map_or("-".to_owned(), |u| u.to_string());
        let d = |v: Option<i64>| v.map_or("-".to_owned(), signed_ns);
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
                "  {:<18} {} → {} QP {:#08x} PSN {} (frame {} in tap 0, {} in tap 1)",
                e.kind.name(),
                f.key.src,
                f.key.dst,
                f.key.dest_qp,
                e.psn,
                frame(e.frames[0]),
                frame(e.frames[1])
            )?;
        }
    }
    Ok(())
}

fn signed_ns(v: i64) -> String {
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    match a {
        0..1_000 => format!("{sign}{a} ns"),
        1_000..1_000_000 => format!("{sign}{:.1} µs", a as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{sign}{:.3} ms", a as f64 / 1e6),
        _ => format!("{sign}{:.6} s", a as f64 / 1e9),
    }
}
