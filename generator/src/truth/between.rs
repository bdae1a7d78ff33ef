//! The truth of what happened between two taps (interfaces.md §6.8), from the generator's own
//! knowledge: which tap each flow passes first (requests the sender side's, 0; responses and
//! CNPs the receiver side's, 1) and when each packet passed each tap, on one clock, with no
//! jitter. Packets are paired by §6.8's rule applied to those exact times: a downstream copy
//! to the unmatched upstream copy of the same opcode and PSN that passed most recently before
//! it. Where two copies of one PSN are in flight at once (an ACK repeated before the first one
//! arrived) that rule can pair them crosswise, which then counts as reordering: the truth says
//! what §6.8 says, not what happened to each copy ([`TapRecord::serial`] would tell).

use std::collections::HashMap;

use serde::Serialize;

use crate::sim::TapRecord;

/// One flow's truth between the taps, keyed as the report keys its flows.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FlowBetweenTruth {
    pub src: String,
    pub dst: String,
    pub destqp: u32,
    pub upstream: u8,
    pub between_taps: BetweenCounts,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
pub struct BetweenCounts {
    pub matched: u64,
    pub dropped: u64,
    pub corrupted: u64,
    pub appeared: u64,
    pub reordered: u64,
    pub ecn_marked: u64,
    /// The true one-way delays (no clock offset, no jitter): nearest rank.
    pub delay_ns: DelayTruth,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
pub struct DelayTruth {
    pub samples: u64,
    pub p50: Option<i64>,
    pub p99: Option<i64>,
    pub max: Option<i64>,
    /// The smallest (not in the report: delays are made relative to it without an offset).
    #[serde(skip)]
    pub min: Option<i64>,
}

/// The truth of every flow seen by either tap: `sender` and `receiver` are the two taps' logs
/// ([`crate::Generator::tap_log`]), `keys` the flows' keys ([`crate::Generator::flow_keys`]),
/// `peers` the flows paired into connections in either tap ([`crate::Generator::peers`]).
#[must_use]
pub fn between(
    keys: &[(String, String, u32)],
    peers: &[(usize, usize)],
    sender: &[TapRecord],
    receiver: &[TapRecord],
) -> Vec<FlowBetweenTruth> {
    let mut flows: Vec<usize> = sender.iter().chain(receiver).map(|r| r.flow).collect();
    flows.sort_unstable();
    flows.dedup();
    let mut out: Vec<(usize, FlowBetweenTruth)> = flows
        .into_iter()
        .filter_map(|flow| {
            let (src, dst, destqp) = keys.get(flow)?.clone();
            let upstream = u8::from(flow % 2 == 1);
            let of = |log: &[TapRecord]| -> Vec<TapRecord> {
                log.iter().filter(|r| r.flow == flow).copied().collect()
            };
            let (up, down) = if upstream == 0 {
                (of(sender), of(receiver))
            } else {
                (of(receiver), of(sender))
            };
            let truth = FlowBetweenTruth {
                src,
                dst,
                destqp,
                upstream,
                between_taps: counts(&up, &down),
            };
            Some((flow, truth))
        })
        .collect();
    // §6.8: with no connection (§6.3's pairs) matched both ways there is no clock offset, and
    // each flow's delays are given relative to its smallest
    let matched = |flow: usize| {
        out.iter()
            .any(|(f, t)| *f == flow && t.between_taps.matched > 0)
    };
    let offset_known = peers.iter().any(|&(x, y)| matched(x) && matched(y));
    if !offset_known {
        for (_, t) in &mut out {
            let d = &mut t.between_taps.delay_ns;
            if let Some(lo) = d.min.take() {
                d.p50 = d.p50.map(|v| v - lo);
                d.p99 = d.p99.map(|v| v - lo);
                d.max = d.max.map(|v| v - lo);
            }
        }
    }
    out.into_iter().map(|(_, t)| t).collect()
}

fn counts(up: &[TapRecord], down: &[TapRecord]) -> BetweenCounts {
    // the upstream copies of each (opcode, PSN), in the order they passed
    let mut copies: HashMap<(u8, u32), Vec<usize>> = HashMap::new();
    for (i, u) in up.iter().enumerate() {
        copies.entry((u.opcode, u.psn)).or_default().push(i);
    }
    let mut taken = vec![false; up.len()];
    let mut c = BetweenCounts::default();
    let mut max_up: Option<usize> = None;
    let mut delays = Vec::new();
    for d in down {
        let pick = copies.get(&(d.opcode, d.psn)).and_then(|list| {
            list.iter()
                .rev()
                .copied()
                .find(|&i| !taken[i] && up[i].time_ns <= d.time_ns)
        });
        let Some(i) = pick else {
            c.appeared += 1;
            continue;
        };
        taken[i] = true;
        let u = &up[i];
        c.matched += 1;
        let verifiable = |r: &TapRecord| !r.truncated;
        if verifiable(u) && !u.icrc_bad && verifiable(d) && d.icrc_bad {
            c.corrupted += 1;
        }
        if !u.ce && d.ce {
            c.ecn_marked += 1;
        }
        match max_up {
            Some(m) if i < m => c.reordered += 1,
            _ => max_up = Some(i),
        }
        let delay = i128::from(d.time_ns) - i128::from(u.time_ns);
        delays.push(i64::try_from(delay).unwrap_or(i64::MAX));
    }
    c.dropped = taken.iter().filter(|t| !**t).count() as u64;
    delays.sort_unstable();
    let n = delays.len() as u64;
    let rank = |q: u64| -> Option<i64> {
        let r = (n * q).div_ceil(100).max(1);
        delays.get(usize::try_from(r - 1).ok()?).copied()
    };
    c.delay_ns = DelayTruth {
        samples: n,
        p50: rank(50),
        p99: rank(99),
        max: delays.last().copied(),
        min: delays.first().copied(),
    };
    c
}
