//! Two capture points (interfaces.md §6.8): the packets of each flow matched between two taps
//! of the same traffic, and what happened between them.
//!
//! [`Matcher`] is a pure state machine: it is handed the RoCE packets of both taps
//! ([`Sighting`]s) merged in time order once a first estimate of the clock offset between the
//! taps is applied (the driver, `analyze --tap`, makes that estimate from the first packets of
//! each file), and keeps per flow only the packets not matched yet, for at most the match
//! window: memory is bounded by the window and the flows, not by the files.
//!
//! A packet is matched by (flow, opcode, PSN): a downstream copy to the unmatched upstream copy
//! that precedes it most closely, so that a resent PSN matches the resend and the original is
//! dropped; a downstream copy that no upstream copy precedes appeared between the taps (with
//! the estimate's offset applied: where the estimate, or jitter, is wrong by more than the
//! delay between the taps, a copy can seem to come before its upstream one). A copy at the same
//! instant precedes too: with no delay between the taps (one capture given twice) the merge
//! hands over the first tap's copy first, and a downstream one waits for it there. A flow's
//! upstream tap is set beforehand for the flows of the driver's estimate (from their median
//! time difference), else it is the one whose copy came first in the flow's first match;
//! until then copies are paired in order.
//!
//! The clock offset of §6.8 (the midpoint between the smallest difference one way and the
//! largest the other) is computed at the end from every flow's extremes over matches of PSNs
//! that had one copy in each tap while they were in the window ([`Matcher::finish`]).

// Indexing cannot panic here: flows (and their keys and offsets) are indexed by ids this
// matcher handed out, taps (0 or 1, masked) into arrays of two, and a pending copy by a
// position just found in its queue.
#![allow(clippy::indexing_slicing)]

use super::compact::{FewDeque, OptPos};
use super::event::{FlowKey, Icrc, PacketEvent};
use super::hash::{FxHashMap, FxHashSet};
use super::hosts::{HostKey, Hosts};
use super::sketch::Sketch;
use crate::replay::Kind;

/// One RoCE packet as one tap saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sighting {
    /// 0 for the first `--tap`, 1 for the second.
    pub tap: u8,
    pub frame: u64,
    /// On the tap's own clock.
    pub time_ns: u64,
    pub opcode: u8,
    pub psn: u32,
    /// `Some(valid)` where the ICRC could be verified.
    pub icrc: Option<bool>,
    /// IP ECN was CE.
    pub ce: bool,
    /// The flow's index in its tap's replay, named once by [`Matcher::flow`] (a sighting
    /// stays small, and finding its flow costs no hashing of a key).
    pub tap_flow: u32,
}

impl Sighting {
    #[must_use]
    pub fn new(tap: u8, tap_flow: u32, ev: &PacketEvent) -> Sighting {
        Sighting {
            tap_flow,
            tap,
            frame: ev.frame,
            time_ns: ev.time_ns,
            opcode: ev.opcode.0,
            psn: ev.psn.value(),
            icrc: match ev.icrc {
                Icrc::Valid => Some(true),
                Icrc::Invalid { .. } => Some(false),
                Icrc::NotVerifiable => None,
            },
            ce: ev.ecn == 3,
        }
    }
}

/// What happened to a flow's packets between the taps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Seen in both taps (corrupted ones too).
    pub matched: u64,
    /// Seen upstream, never downstream.
    pub dropped: u64,
    /// ICRC valid upstream, invalid downstream.
    pub corrupted: u64,
    /// Seen downstream only (the upstream tap missed it, or a duplicate made between them).
    pub appeared: u64,
    /// Matched, but after a packet that followed it upstream.
    pub reordered: u64,
    /// Not CE upstream, CE downstream.
    pub ecn_marked: u64,
}

/// One finding between the taps: the frame numbers in each tap where there is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BetweenEvent {
    pub kind: Kind,
    /// Index into [`Between::flows`].
    pub flow: u32,
    pub opcode: u8,
    pub psn: u32,
    pub frames: [Option<u64>; 2],
    /// On the first tap's clock (the estimate's offset removed for the second).
    pub time_ns: i64,
}

impl BetweenEvent {
    /// An event of `flow` about the packet `p` (its opcode and PSN).
    fn of(kind: Kind, flow: u32, p: &Pending, frames: [Option<u64>; 2], time_ns: i64) -> Self {
        BetweenEvent {
            kind,
            flow,
            opcode: p.opcode,
            psn: p.psn,
            frames,
            time_ns,
        }
    }
}

/// A delay summary in ns (they can be negative: two clocks, and offsets that assume equal
/// delays both ways).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Delays {
    pub samples: u64,
    pub p50: Option<i64>,
    pub p99: Option<i64>,
    pub max: Option<i64>,
}

/// One flow's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowBetween {
    pub key: FlowKey,
    /// The tap its packets pass first; `None` when nothing of it was matched.
    pub upstream: Option<u8>,
    /// Its packets in each tap.
    pub packets: [u64; 2],
    pub counts: Counts,
    pub delay: Delays,
}

/// The clock offset of one connection: time in the second tap minus time in the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionOffset {
    /// The flow that travels from the first tap to the second, and the other one.
    pub forward: u32,
    pub backward: u32,
    pub offset_ns: i64,
}

/// Everything the matcher found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Between {
    pub flows: Vec<FlowBetween>,
    pub events: Vec<BetweenEvent>,
    pub connections: Vec<ConnectionOffset>,
    /// The capture's offset (the median over connections); `None` when no connection gave
    /// one: delays are then relative to each flow's smallest.
    pub offset_ns: Option<i64>,
    /// The estimate the packets were merged with.
    pub estimate_ns: i64,
}

/// The time differences (second tap's time minus the first's) of one direction of a
/// connection, as §6.8's clock rule reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Differences {
    pub median: i64,
    pub min: i64,
    pub max: i64,
}

/// §6.8's clock rule for one connection, whose two directions differ by `a` and `b`: the one
/// with the larger median travels from the first tap to the second, and the offset is the
/// midpoint between its smallest difference and the other's largest. Returns whether `a` is
/// that one, and the offset.
#[must_use]
pub fn connection_offset(a: Differences, b: Differences) -> (bool, i64) {
    let a_forward = a.median >= b.median;
    let (forward, backward) = if a_forward { (a, b) } else { (b, a) };
    (a_forward, forward.min + (backward.max - forward.min) / 2)
}

/// The median of `v` (the lower one of an even count, as nearest rank gives), sorting it.
#[must_use]
pub fn median(v: &mut [i64]) -> Option<i64> {
    v.sort_unstable();
    v.get(v.len().checked_sub(1)? / 2).copied()
}

/// Samples of a signed quantity, as two [`Sketch`]es of magnitudes. Most flows' samples
/// have one sign (delays are positive; a backward flow's differences negative): the sketch
/// of negative ones is allocated by the first (a matcher keeps two of these a flow).
#[derive(Debug, Clone)]
struct SignedSketch {
    below: Option<Box<Sketch>>,
    above: Sketch,
    /// The extremes once there is a sample (`i64::MAX` and `i64::MIN` before).
    lowest: i64,
    highest: i64,
}

impl Default for SignedSketch {
    fn default() -> Self {
        SignedSketch {
            below: None,
            above: Sketch::default(),
            lowest: i64::MAX,
            highest: i64::MIN,
        }
    }
}

impl SignedSketch {
    fn sample(&mut self, v: i64) {
        self.lowest = self.lowest.min(v);
        self.highest = self.highest.max(v);
        if v < 0 {
            self.below
                .get_or_insert_with(Box::default)
                .sample(v.unsigned_abs());
        } else {
            self.above.sample(v.unsigned_abs());
        }
    }

    fn below_samples(&self) -> u64 {
        self.below.as_deref().map_or(0, Sketch::samples)
    }

    fn count(&self) -> u64 {
        self.below_samples() + self.above.samples()
    }

    /// The smallest sample, if any.
    fn min(&self) -> Option<i64> {
        (self.count() > 0).then_some(self.lowest)
    }

    /// The largest sample, if any.
    fn max(&self) -> Option<i64> {
        (self.count() > 0).then_some(self.highest)
    }

    /// Nearest-rank percentile `q` (0–100).
    fn percentile(&self, q: u64) -> Option<i64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let r = (n * q).div_ceil(100).max(1);
        let below = self.below_samples();
        Some(match self.below.as_deref() {
            // the below sketch holds magnitudes: its largest is the smallest value
            Some(b) if r <= below => -i64::try_from(b.at_rank(below - r + 1)).unwrap_or(i64::MAX),
            _ => i64::try_from(self.above.at_rank(r - below)).unwrap_or(i64::MAX),
        })
    }
}

/// A copy not matched yet.
#[derive(Debug, Clone, Copy)]
struct Pending {
    frame: u64,
    /// On the first tap's clock (the estimate applied).
    at: i64,
    /// Raw time in its own tap.
    raw: u64,
    opcode: u8,
    psn: u32,
    icrc: Option<bool>,
    ce: bool,
    /// Its place among the flow's packets in its tap.
    seq: u64,
}

#[derive(Debug, Default)]
struct FlowState {
    upstream: Option<u8>,
    /// Each tap's copies waiting, in arrival order (one at a time, on most flows).
    pending: [FewDeque<Pending>; 2],
    /// In [`Matcher::waiting`].
    listed: bool,
    packets: [u64; 2],
    matched: u64,
    /// What most flows never count, allocated by the first count ([`FlowState::trouble`]).
    trouble: Option<Box<Trouble>>,
    /// The largest upstream place matched so far (in downstream order; a packet's place
    /// never reaches `u64::MAX`, which stands for none).
    max_up_seq: OptPos,
    /// Oriented delays (d minus the estimate, negated where the second tap is upstream).
    delay: SignedSketch,
    /// d (second tap's time minus the first's, raw clocks) minus the estimate, over
    /// single-copy matches: near zero, where the sketch is exact; its extremes plus the
    /// estimate are d's.
    d_median: SignedSketch,
}

/// A flow's counts of what happened to its packets between the taps (but for `matched`,
/// which [`FlowState`] keeps and this leaves at zero), and its copies that left the window
/// before the direction was known: kept out of [`FlowState`] so that hundreds of thousands
/// of clean flows do not carry them (64 bytes).
#[derive(Debug, Default)]
struct Trouble {
    counts: Counts,
    unresolved: [u64; 2],
}

impl FlowState {
    fn trouble(&mut self) -> &mut Trouble {
        self.trouble.get_or_insert_with(Box::default)
    }

    /// The flow's result, its delays shifted by `offset` (this connection's, else the
    /// capture's; `est` is the estimate the samples were taken with).
    fn result(self, key: FlowKey, offset: Option<i64>, est: i64) -> FlowBetween {
        let shift = match (self.upstream, offset) {
            // oriented sample s = ±(d − est); delay = ±(d − off) = s ∓ (off − est)
            (Some(0), Some(off)) => Some(off - est),
            (Some(_), Some(off)) => Some(est - off),
            // no offset: relative to the flow's smallest
            (Some(_), None) => Some(self.delay.min().unwrap_or(0)),
            (None, _) => None,
        };
        let delay = shift.map_or_else(Delays::default, |shift| Delays {
            samples: self.delay.count(),
            p50: self.delay.percentile(50).map(|v| v - shift),
            p99: self.delay.percentile(99).map(|v| v - shift),
            max: self.delay.max().map(|v| v - shift),
        });
        FlowBetween {
            key,
            upstream: self.upstream,
            packets: self.packets,
            counts: Counts {
                matched: self.matched,
                ..self.trouble.map_or_else(Counts::default, |t| t.counts)
            },
            delay,
        }
    }
}

/// Flows whose state [`Matcher::finish`] turns into results between two shrinks of the
/// table (each gives back their memory: 16,384 flows, 4.7 MB).
const SHRINK_EVERY: usize = 16_384;

/// The matcher (see the module's text).
#[derive(Debug)]
pub struct Matcher {
    window_ns: i64,
    estimate_ns: i64,
    /// Flow keys with their addresses as ids ([`Hosts`]): a key is 12 bytes, not 40, in
    /// the index and in `keys` (a flow of either tap each).
    hosts: Hosts,
    index: FxHashMap<HostKey, u32>,
    /// Per tap: the matcher's flow of each of the tap's flow indices (`u32::MAX`: not yet).
    by_tap_flow: [Vec<u32>; 2],
    keys: Vec<HostKey>,
    flows: Vec<FlowState>,
    /// Flows with copies waiting (each once: [`FlowState::listed`]), swept for those that
    /// waited longer than the window every sixteenth of it.
    waiting: Vec<u32>,
    /// When the last sweep ran (merged time).
    swept_at: i64,
    /// Copies that left the window in a sweep (kept to reuse its room).
    leaving: Vec<(u32, u8, Pending)>,
    events: Vec<BetweenEvent>,
}

fn as_i64(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

impl Matcher {
    /// `estimate_ns`: the offset (second tap's clock minus the first's) the packets are merged
    /// with; `window_ns`: how long a copy waits for its match.
    #[must_use]
    pub fn new(estimate_ns: i64, window_ns: u64) -> Matcher {
        Matcher {
            window_ns: as_i64(window_ns),
            estimate_ns,
            hosts: Hosts::default(),
            index: FxHashMap::default(),
            by_tap_flow: [Vec::new(), Vec::new()],
            keys: Vec::new(),
            flows: Vec::new(),
            waiting: Vec::new(),
            swept_at: i64::MIN,
            leaving: Vec::new(),
            events: Vec::new(),
        }
    }

    /// A packet's time on the first tap's clock.
    #[must_use]
    pub fn merged_time(&self, tap: u8, time_ns: u64) -> i64 {
        if tap == 0 {
            as_i64(time_ns)
        } else {
            as_i64(time_ns).saturating_sub(self.estimate_ns)
        }
    }

    /// Set a flow's upstream tap before its packets come (the driver's estimate saw it).
    pub fn set_upstream(&mut self, key: FlowKey, tap: u8) {
        let id = self.flow_id(key);
        self.flows[id as usize].upstream = Some(tap & 1);
    }

    /// Flow `tap_flow` of tap `tap` is `key` (before its first sighting).
    pub fn flow(&mut self, tap: u8, tap_flow: u32, key: FlowKey) {
        let id = self.flow_id(key);
        let known = &mut self.by_tap_flow[usize::from(tap & 1)];
        let at = tap_flow as usize;
        if known.len() <= at {
            known.resize(at + 1, u32::MAX);
        }
        known[at] = id;
    }

    fn flow_id(&mut self, key: FlowKey) -> u32 {
        let key = self.hosts.intern_key(&key);
        if let Some(&id) = self.index.get(&key) {
            return id;
        }
        let id = u32::try_from(self.flows.len()).unwrap_or(u32::MAX);
        self.index.insert(key, id);
        self.keys.push(key);
        self.flows.push(FlowState::default());
        id
    }

    /// One packet of one tap, in merged time order.
    pub fn sighting(&mut self, s: &Sighting) {
        let tap = s.tap & 1;
        let at = self.merged_time(tap, s.time_ns);
        if self.swept_at == i64::MIN {
            self.swept_at = at;
        } else if at.saturating_sub(self.swept_at) >= (self.window_ns / 16).max(1) {
            self.swept_at = at;
            self.expire(at.saturating_sub(self.window_ns), at);
        }
        let id = match self.by_tap_flow[usize::from(tap)].get(s.tap_flow as usize) {
            Some(&id) if id != u32::MAX => id,
            _ => return, // a flow never named: nothing to match it with
        };
        let f = &mut self.flows[id as usize];
        let seq = f.packets[usize::from(tap)];
        f.packets[usize::from(tap)] += 1;
        let p = Pending {
            frame: s.frame,
            at,
            raw: s.time_ns,
            opcode: s.opcode,
            psn: s.psn,
            icrc: s.icrc,
            ce: s.ce,
            seq,
        };
        let other = 1 - tap;
        let q = &f.pending[usize::from(other)];
        let same = |c: &Pending| c.opcode == p.opcode && c.psn == p.psn;
        let found = match f.upstream {
            // an upstream copy: it waits for its downstream one, unless that came at the same
            // instant (no delay between the taps: only the merge put it first)
            Some(up) if up == tap => q.iter().position(|c| same(c) && c.at == at),
            // a downstream copy: the upstream copy that precedes it most closely (a resend, not
            // the dropped original); with none, it waits for one at the same instant, and
            // appeared between the taps when it leaves the window unmatched
            Some(_) => q.iter().rposition(same),
            // the direction is not known yet: copies are paired in order
            None => q.iter().position(same),
        };
        match found {
            Some(i) => {
                let single = q.iter().filter(|c| same(c)).count() == 1
                    && !f.pending[usize::from(tap)].iter().any(same);
                let mate = f.pending[usize::from(other)].remove(i);
                if let Some(mate) = mate {
                    let (a, b) = if tap == 0 { (p, mate) } else { (mate, p) };
                    self.matched(id, a, b, single);
                }
            }
            None => {
                f.pending[usize::from(tap)].push_back(p);
                if !f.listed {
                    f.listed = true;
                    self.waiting.push(id);
                }
            }
        }
    }

    /// A pair: `a` from the first tap, `b` from the second.
    fn matched(&mut self, id: u32, a: Pending, b: Pending, single: bool) {
        let est = self.estimate_ns;
        let f = &mut self.flows[id as usize];
        let d = as_i64(b.raw).saturating_sub(as_i64(a.raw));
        if single {
            f.d_median.sample(d.saturating_sub(est));
        }
        f.matched += 1;
        // a first match tells the direction: the copy that came first is upstream
        let up = *f.upstream.get_or_insert(u8::from(b.at < a.at));
        let (u, w) = if up == 0 { (a, b) } else { (b, a) };
        self.judge(id, up, &u, &w, d);
    }

    /// The checks of a matched pair once the direction is known: upstream copy `u`,
    /// downstream `w`.
    fn judge(&mut self, id: u32, up: u8, u: &Pending, w: &Pending, d: i64) {
        let est = self.estimate_ns;
        let f = &mut self.flows[id as usize];
        let oriented = if up == 0 {
            d.saturating_sub(est)
        } else {
            est.saturating_sub(d)
        };
        f.delay.sample(oriented);
        let frames = if up == 0 {
            [Some(u.frame), Some(w.frame)]
        } else {
            [Some(w.frame), Some(u.frame)]
        };
        let time_ns = u.at.min(w.at);
        if u.icrc == Some(true) && w.icrc == Some(false) {
            f.trouble().counts.corrupted += 1;
            self.events.push(BetweenEvent::of(
                Kind::CorruptedBetween,
                id,
                u,
                frames,
                time_ns,
            ));
        }
        let f = &mut self.flows[id as usize];
        if !u.ce && w.ce {
            f.trouble().counts.ecn_marked += 1;
        }
        match f.max_up_seq.get() {
            Some(m) if u.seq < m => {
                f.trouble().counts.reordered += 1;
                self.events.push(BetweenEvent::of(
                    Kind::ReorderedBetween,
                    id,
                    u,
                    frames,
                    time_ns,
                ));
            }
            _ => f.max_up_seq.set(Some(u.seq)),
        }
    }

    /// Copies that waited since before `before`: dropped (upstream) or appeared (downstream);
    /// and downstream copies from before `now`, which only an upstream copy of their own
    /// instant could still have matched.
    fn expire(&mut self, before: i64, now: i64) {
        let mut leaving = std::mem::take(&mut self.leaving);
        let flows = &mut self.flows;
        self.waiting.retain(|&id| {
            let f = &mut flows[id as usize];
            for tap in 0..2u8 {
                let cutoff = match f.upstream {
                    Some(up) if up != tap => now,
                    _ => before,
                };
                let q = &mut f.pending[usize::from(tap)];
                // a queue is in arrival order: the old copies are at its front
                while q.front().is_some_and(|p| p.at < cutoff) {
                    if let Some(p) = q.pop_front() {
                        leaving.push((id, tap, p));
                    }
                }
            }
            f.listed = f.pending.iter().any(|q| !q.is_empty());
            if !f.listed {
                // an idle flow gives back the room its queues took beyond their first copy:
                // most flows of a fabric are idle most of the time
                f.pending = Default::default();
            }
            f.listed
        });
        for (id, tap, p) in leaving.drain(..) {
            self.left_unmatched(id, tap, &p);
        }
        self.leaving = leaving;
    }

    fn left_unmatched(&mut self, id: u32, tap: u8, p: &Pending) {
        let f = &mut self.flows[id as usize];
        match f.upstream {
            None => f.trouble().unresolved[usize::from(tap)] += 1,
            Some(up) if up == tap => {
                f.trouble().counts.dropped += 1;
                let mut frames = [None, None];
                frames[usize::from(tap)] = Some(p.frame);
                self.events
                    .push(BetweenEvent::of(Kind::DroppedBetween, id, p, frames, p.at));
            }
            Some(_) => f.trouble().counts.appeared += 1,
        }
    }

    /// Every copy still waiting leaves the window; the offsets of `connections` (pairs of flow
    /// keys, either order; a pair given again counts once) and of the capture; each flow's
    /// delays with its offset removed.
    #[must_use]
    pub fn finish(mut self, connections: impl IntoIterator<Item = (FlowKey, FlowKey)>) -> Between {
        self.expire(i64::MAX, i64::MAX);
        for f in &mut self.flows {
            if let (Some(up), Some(t)) = (f.upstream, f.trouble.as_deref_mut()) {
                let [u0, u1] = std::mem::take(&mut t.unresolved);
                let (lost, extra) = if up == 0 { (u0, u1) } else { (u1, u0) };
                t.counts.dropped += lost;
                t.counts.appeared += extra;
            }
        }
        let est = self.estimate_ns;
        let mut offsets = Vec::new();
        let mut flow_offset: Vec<Option<i64>> = vec![None; self.flows.len()];
        // a fabric's taps pair hundreds of thousands of connections, each given once per
        // flow and tap: met as pairs of ids (8 bytes), not of keys (80)
        let mut met: FxHashSet<(u32, u32)> = FxHashSet::default();
        for (a, b) in connections {
            let id = |k| {
                self.hosts
                    .lookup(&k)
                    .and_then(|k| self.index.get(&k).copied())
            };
            let (Some(ia), Some(ib)) = (id(a), id(b)) else {
                continue;
            };
            if !met.insert((ia, ib)) {
                continue;
            }
            // d's extremes are those of d minus the estimate, plus the estimate (the
            // subtraction saturates only past 2^62 ns, a century after the epoch)
            let differences = |f: &FlowState| {
                Some(Differences {
                    median: f.d_median.percentile(50)?,
                    min: f.d_median.min()?.saturating_add(est),
                    max: f.d_median.max()?.saturating_add(est),
                })
            };
            let (Some(da), Some(db)) = (
                differences(&self.flows[ia as usize]),
                differences(&self.flows[ib as usize]),
            ) else {
                continue;
            };
            let (a_forward, offset) = connection_offset(da, db);
            let (fwd, bwd) = if a_forward { (ia, ib) } else { (ib, ia) };
            flow_offset[fwd as usize] = Some(offset);
            flow_offset[bwd as usize] = Some(offset);
            offsets.push(ConnectionOffset {
                forward: fwd,
                backward: bwd,
                offset_ns: offset,
            });
        }
        let offset_ns = median(&mut offsets.iter().map(|c| c.offset_ns).collect::<Vec<_>>());
        // From the last flow back, the table shrinking as its results grow: with hundreds of
        // thousands of flows, the table and the results at once were the run's peak memory.
        let mut states = std::mem::take(&mut self.flows);
        let mut flows = Vec::with_capacity(states.len());
        while let Some(f) = states.pop() {
            // `keys` and `flow_offset` have an entry for every flow
            let at = states.len();
            let key = self.hosts.key(&self.keys[at]);
            flows.push(f.result(key, flow_offset[at].or(offset_ns), est));
            if at.is_multiple_of(SHRINK_EVERY) {
                states.shrink_to_fit();
            }
        }
        flows.reverse();
        let mut events = self.events;
        events.sort_by_key(|e| e.time_ns);
        Between {
            flows,
            events,
            connections: offsets,
            offset_ns,
            estimate_ns: est,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;
    use crate::replay::Addr;

    fn key(src: u8, dst: u8, qp: u32) -> FlowKey {
        let ip = |x| Addr::Ip(IpAddr::V4(Ipv4Addr::new(10, 0, 0, x)));
        FlowKey {
            src: ip(src),
            dst: ip(dst),
            dest_qp: qp,
        }
    }

    fn s(tap: u8, frame: u64, t: u64, k: FlowKey, psn: u32) -> Sighting {
        Sighting {
            tap,
            frame,
            time_ns: t,
            opcode: 0x0A,
            psn,
            icrc: Some(true),
            ce: false,
            tap_flow: k.dest_qp,
        }
    }

    /// Feed sightings merged by their time on the first tap's clock (each test flow's index
    /// in both taps is its QPN).
    fn run(m: &mut Matcher, keys: &[FlowKey], mut all: Vec<Sighting>) {
        for &k in keys {
            m.flow(0, k.dest_qp, k);
            m.flow(1, k.dest_qp, k);
        }
        all.sort_by_key(|x| m.merged_time(x.tap, x.time_ns));
        for x in &all {
            m.sighting(x);
        }
    }

    /// A matcher keeps one of these for every flow of both taps (issue 13: hundreds of
    /// thousands); growing it is a decision.
    #[test]
    fn flow_state_stays_in_its_budget() {
        let size = std::mem::size_of::<FlowState>();
        assert!(size <= 288, "FlowState is {size} bytes");
    }

    #[test]
    fn a_drop_a_resend_a_corruption_a_mark_and_a_reorder() {
        let fwd = key(1, 2, 0x11);
        let off = 1_000_000_000; // the second tap's clock runs 1 s ahead
        let delay = 3_000;
        let mut m = Matcher::new(off, 1_000_000);
        let mut all = Vec::new();
        // upstream (tap 0): PSNs 0..8, then 3 resent; 3's original dropped between
        for (i, psn) in [0, 1, 2, 3, 4, 5, 6, 7, 3].into_iter().enumerate() {
            let t = 10_000 * (i as u64 + 1);
            all.push(s(0, i as u64 + 1, t, fwd, psn));
        }
        // downstream (tap 1): 0 1 2 5 4 6 7 3 (4 held back behind 5), 6 corrupted, 7 marked
        let mut n = 0;
        for (psn, up_i) in [
            (0, 0u64),
            (1, 1),
            (2, 2),
            (5, 5),
            (4, 4),
            (6, 6),
            (7, 7),
            (3, 8),
        ] {
            n += 1;
            let mut t = 10_000 * (up_i + 1) + delay + off as u64;
            if psn == 4 {
                t += 15_000; // after 5
            }
            let mut x = s(1, n, t, fwd, psn);
            x.icrc = Some(psn != 6);
            x.ce = psn == 7;
            all.push(x);
        }
        run(&mut m, &[fwd], all);
        let b = m.finish(None);
        let f = &b.flows[0];
        assert_eq!(f.upstream, Some(0));
        assert_eq!(
            f.counts,
            Counts {
                matched: 8,
                dropped: 1,
                corrupted: 1,
                appeared: 0,
                reordered: 1,
                ecn_marked: 1,
            }
        );
        let kinds: Vec<_> = b.events.iter().map(|e| (e.kind, e.psn, e.frames)).collect();
        assert!(
            kinds.contains(&(Kind::DroppedBetween, 3, [Some(4), None])),
            "{kinds:?}"
        );
        assert!(kinds.contains(&(Kind::CorruptedBetween, 6, [Some(7), Some(6)])));
        assert!(kinds.contains(&(Kind::ReorderedBetween, 4, [Some(5), Some(5)])));
    }

    #[test]
    fn the_offset_is_the_midpoint_and_delays_lose_it() {
        let fwd = key(1, 2, 0x11);
        let bwd = key(2, 1, 0x22);
        let off: i64 = -700_000_000;
        // an estimate 500 ns out (less than the delays, or downstream copies would seem to come
        // first); the directions from the estimate's medians, as the driver sets them
        let mut m = Matcher::new(off + 500, 1_000_000);
        m.set_upstream(fwd, 0);
        m.set_upstream(bwd, 1);
        let mut all = Vec::new();
        for i in 0..100u64 {
            let t = 2_000_000_000 + i * 20_000;
            // requests take 2–4 µs from tap 0 to tap 1, ACKs 2–3 µs back
            all.push(s(0, 2 * i + 1, t, fwd, i as u32));
            all.push(s(
                1,
                2 * i + 1,
                (t as i64 + off) as u64 + 2_000 + (i % 3) * 1_000,
                fwd,
                i as u32,
            ));
            let back = t + 10_000;
            all.push(s(1, 2 * i + 2, (back as i64 + off) as u64, bwd, i as u32));
            all.push(s(
                0,
                2 * i + 2,
                back + 2_000 + (i % 2) * 1_000,
                bwd,
                i as u32,
            ));
        }
        run(&mut m, &[fwd, bwd], all);
        // given as the driver gives it: once per flow and tap
        let b = m.finish([(fwd, bwd); 4]);
        assert_eq!(b.offset_ns, Some(off));
        assert_eq!(b.connections.len(), 1);
        let (f, g) = (&b.flows[0], &b.flows[1]);
        assert_eq!((f.upstream, g.upstream), (Some(0), Some(1)));
        assert_eq!(f.counts.matched, 100);
        assert_eq!(
            (f.delay.samples, f.delay.p50, f.delay.max),
            (100, Some(3_000), Some(4_000))
        );
        assert_eq!((g.delay.p50, g.delay.max), (Some(2_000), Some(3_000)));
    }

    /// Taps with no delay between them (the same capture given twice): a downstream copy the
    /// merge puts before its upstream copy at the same instant is matched to it; one earlier
    /// than any upstream copy still appeared, and that upstream copy was dropped.
    #[test]
    fn copies_at_the_same_instant_match_whichever_comes_first() {
        let back = key(2, 1, 0x22);
        let mut m = Matcher::new(0, 100_000);
        m.set_upstream(back, 1);
        let mut all = Vec::new();
        for i in 0..10u64 {
            // tap 0 (downstream) first in the merge's order at each instant
            all.push(s(0, i + 1, i * 1000, back, i as u32));
            all.push(s(1, i + 1, i * 1000, back, i as u32));
        }
        // PSN 10 downstream 1 ns before its upstream copy; PSN 11 downstream only
        all.push(s(0, 11, 20_000, back, 10));
        all.push(s(1, 11, 20_001, back, 10));
        all.push(s(0, 12, 30_000, back, 11));
        run(&mut m, &[back], all);
        let b = m.finish(None);
        let f = &b.flows[0];
        assert_eq!(
            (
                f.counts.matched,
                f.counts.appeared,
                f.counts.dropped,
                f.counts.reordered
            ),
            (10, 2, 1, 0)
        );
        assert_eq!((f.delay.samples, f.delay.max), (10, Some(0)));
    }

    /// A downstream copy with no upstream copy waits only for one of its own instant: the
    /// next sweep (every sixteenth of the window) counts it as appeared, so that a tap that
    /// missed much does not keep a window's worth of the other tap's copies.
    #[test]
    fn downstream_copies_wait_only_for_their_instant() {
        let fwd = key(1, 2, 0x11);
        let mut m = Matcher::new(0, 1_600_000);
        m.set_upstream(fwd, 0);
        // 1,000 copies in the downstream tap only, 1 µs apart (a sweep every 100 µs)
        let all = (0..1000u64).map(|i| s(1, i + 1, i * 1000, fwd, i as u32));
        run(&mut m, &[fwd], all.collect());
        let waiting = m.flows[0].pending[1].len();
        assert!(waiting <= 101, "{waiting} copies still wait");
        let b = m.finish(None);
        assert_eq!(
            (b.flows[0].counts.appeared, b.flows[0].counts.matched),
            (1000, 0)
        );
    }

    #[test]
    fn duplicates_appear_and_flows_of_one_tap_stay_unmatched() {
        let fwd = key(1, 2, 0x11);
        let lone = key(3, 4, 0x33);
        let mut m = Matcher::new(0, 100_000);
        let mut all = Vec::new();
        for i in 0..20u64 {
            all.push(s(0, i + 1, i * 1000, fwd, i as u32));
            all.push(s(1, i + 1, i * 1000 + 500, fwd, i as u32));
            all.push(s(0, 100 + i, i * 1000 + 10, lone, i as u32));
        }
        all.push(s(1, 50, 9_600, fwd, 9)); // duplicated between the taps
        run(&mut m, &[fwd, lone], all);
        let b = m.finish(None);
        let f = b.flows.iter().find(|f| f.key == fwd).unwrap();
        assert_eq!(
            (f.counts.matched, f.counts.appeared, f.counts.dropped),
            (20, 1, 0)
        );
        // no offset: delays relative to the smallest
        assert_eq!(b.offset_ns, None);
        assert_eq!(f.delay.p50, Some(0));
        let l = b.flows.iter().find(|f| f.key == lone).unwrap();
        assert_eq!(
            (l.upstream, l.packets, l.counts.matched),
            (None, [20, 0], 0)
        );
    }
}
