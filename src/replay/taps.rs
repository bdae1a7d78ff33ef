//! Two capture points (interfaces.md §6.8), the driver: each tap replayed on its own thread as
//! [`super::run`] replays one capture, its RoCE packets handed, as the engine takes them, to
//! this thread, which merges the two streams in time order and matches them
//! ([`super::between::Matcher`]). `analyze --tap` and `inspect --tap` run it.
//!
//! The taps' clocks need not agree: before the streams are merged, the first
//! [`ESTIMATE_PACKETS`] RoCE packets of each file give a first estimate of the offset (§6.8's
//! rule on them) and the direction of the flows they hold; the offset reported is §6.8's rule
//! over every matched packet, computed by the matcher at the end.

// Indexing cannot panic here: taps (0 or 1) index arrays of two.
#![allow(clippy::indexing_slicing)]

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use anyhow::{Context as _, bail};

use super::between::{Between, Differences, Matcher, Sighting, connection_offset, median};
use super::{EngineConfig, FlowKey, Observer, PacketEvent, Replay};
use crate::capture;
use crate::frame::FrameView;
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

/// Replay both `taps` with `engine` and match their packets, each copy waiting at most
/// `window_ns` for its match.
///
/// # Errors
/// Not exactly two taps, or a capture that cannot be read.
pub fn run(
    taps: &[PathBuf],
    engine: &EngineConfig,
    window_ns: u64,
) -> anyhow::Result<(Vec<Replay>, Between)> {
    let [a, b] = taps else {
        bail!(
            "--tap: two captures of the same traffic, one per capture point (got {})",
            taps.len()
        );
    };
    let first = [estimate_packets(engine, a)?, estimate_packets(engine, b)?];
    let estimate = Estimate::new(&first);
    drop(first);
    let mut matcher = Matcher::new(estimate.offset_ns.unwrap_or(0), window_ns);
    for (key, up) in &estimate.upstream {
        matcher.set_upstream(*key, *up);
    }
    let (replays, matcher) = std::thread::scope(|scope| -> anyhow::Result<_> {
        let mut rx = Vec::new();
        let mut back = Vec::new();
        let mut handles = Vec::new();
        for (i, path) in [a, b].into_iter().enumerate() {
            let (tx, r) = sync_channel::<Batch>(BATCHES_IN_FLIGHT);
            rx.push(r);
            // the emptied batches go back to their tap, never holding the matcher up
            let (back_tx, spare) = sync_channel::<Batch>(BATCHES_IN_FLIGHT + 2);
            back.push(back_tx);
            let engine = engine.clone();
            let tap = u8::try_from(i).unwrap_or(0);
            let handle = std::thread::Builder::new()
                .name(format!("tap{i}"))
                .spawn_scoped(scope, move || replay_tap(path, tap, &engine, &tx, &spare))
                .context("cannot start a tap's replay")?;
            handles.push(handle);
        }
        if let (Ok(rx), Ok(back)) = (<[_; 2]>::try_from(rx), <[_; 2]>::try_from(back)) {
            merge(&mut matcher, rx, &back);
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
    let between = matcher.finish(connections(&replays));
    Ok((replays, between))
}

/// One tap's replay; its packets to `tx` in batches, refilled from the emptied ones that come
/// back on `spare` (else new): batches of the matcher's thread freed there and allocated anew
/// here put glibc to trimming and faulting their memory in again.
fn replay_tap(
    path: &Path,
    tap: u8,
    engine: &EngineConfig,
    tx: &SyncSender<Batch>,
    spare: &Receiver<Batch>,
) -> anyhow::Result<Replay> {
    struct Hand<'a> {
        tap: u8,
        batch: Batch,
        /// The replay's flows whose keys went out already.
        named: Vec<bool>,
        tx: &'a SyncSender<Batch>,
        spare: &'a Receiver<Batch>,
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
                let empty = self.spare.try_recv().unwrap_or_else(|_| Batch {
                    flows: Vec::new(),
                    sightings: Vec::with_capacity(BATCH),
                });
                let full = std::mem::replace(&mut self.batch, empty);
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
        spare,
        gone: false,
    };
    let replayed = super::run_batched(&mut source, engine, &mut hand);
    if !hand.batch.sightings.is_empty() && !hand.gone {
        let _ = tx.send(std::mem::take(&mut hand.batch));
    }
    match replayed.error {
        Some(e) => Err(anyhow::Error::from(e).context(path.display().to_string())),
        None => Ok(replayed.replay),
    }
}

/// Both taps' sightings into the matcher, in merged time order; each batch, once read, back
/// to its tap through `back` (dropped when the tap has enough).
fn merge(m: &mut Matcher, rx: [Receiver<Batch>; 2], back: &[SyncSender<Batch>; 2]) {
    // each tap's batch being read, and the place of its next sighting
    let mut current = [Batch::default(), Batch::default()];
    let mut at = [0usize; 2];
    let mut refill = |i: usize, m: &mut Matcher| -> Option<Sighting> {
        loop {
            if let Some(&s) = current[i].sightings.get(at[i]) {
                at[i] += 1;
                return Some(s);
            }
            let batch = rx[i].recv().ok()?;
            for &(flow, key) in &batch.flows {
                m.flow(u8::try_from(i).unwrap_or(1), flow, key);
            }
            let mut done = std::mem::replace(&mut current[i], batch);
            at[i] = 0;
            if done.sightings.capacity() > 0 {
                done.flows.clear();
                done.sightings.clear();
                let _ = back[i].try_send(done);
            }
        }
    };
    let mut next: [Option<Sighting>; 2] = [refill(0, m), refill(1, m)];
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
        next[pick] = refill(pick, m);
    }
}

/// The connections the taps' replays paired (§6.3), as pairs of flow keys in the order they
/// are first met: each once per flow of it and tap ([`Matcher::finish`] counts it once).
fn connections(replays: &[Replay]) -> impl Iterator<Item = (FlowKey, FlowKey)> + '_ {
    replays.iter().flat_map(|r| {
        r.flows.iter().filter_map(move |f| {
            let peer = f.peer().and_then(|p| r.flows.get(p as usize))?;
            let (key, peer_key) = (r.key(f), r.key(peer));
            Some(if key <= peer_key {
                (key, peer_key)
            } else {
                (peer_key, key)
            })
        })
    })
}

/// The first RoCE packets of a tap, for the estimate.
fn estimate_packets(engine: &EngineConfig, path: &Path) -> anyhow::Result<Vec<PacketEvent>> {
    let mut source =
        capture::open_all(&[path.to_path_buf()]).with_context(|| path.display().to_string())?;
    let options = rocescope_dissectors::stack::DissectOptions {
        roce_ports: &engine.roce_ports,
        rd_as_rd: engine.rd_as_rd,
        ..rocescope_dissectors::stack::DissectOptions::default()
    };
    let mut out = Vec::new();
    let read = source::for_each(&mut source, Threads::One, |frame, _| {
        let mut place = None;
        let view = FrameView::new_in(&mut place, &frame, &options, 0);
        if let Some(ev) = PacketEvent::from_view(view) {
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
        let mut pairs: BTreeMap<(super::Addr, super::Addr), [Vec<i64>; 2]> = BTreeMap::new();
        for (key, ds) in &by_flow {
            let (lo, hi, way) = if key.src <= key.dst {
                (key.src, key.dst, 0)
            } else {
                (key.dst, key.src, 1)
            };
            pairs.entry((lo, hi)).or_default()[way].extend(ds);
        }
        let differences = |v: &mut Vec<i64>| {
            Some(Differences {
                median: median(v)?,
                min: *v.first()?,
                max: *v.last()?,
            })
        };
        let mut offsets = Vec::new();
        let mut forward_way: BTreeMap<(super::Addr, super::Addr), usize> = BTreeMap::new();
        for (pair, [w0, w1]) in &mut pairs {
            let (Some(d0), Some(d1)) = (differences(w0), differences(w1)) else {
                continue;
            };
            let (w0_forward, offset) = connection_offset(d0, d1);
            offsets.push(offset);
            forward_way.insert(*pair, usize::from(!w0_forward));
        }
        let offset_ns = median(&mut offsets).or_else(|| by_flow.values().flatten().copied().min());
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
