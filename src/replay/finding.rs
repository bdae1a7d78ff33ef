//! What the replay engine reports: findings are data (style.md §2.4), never errors.

// Indexing cannot panic here: the inline event list is indexed below its `len`, capped at its
// capacity.
#![allow(clippy::indexing_slicing)]

use std::fmt;

use rocescope_dissectors::Psn;

use crate::units::Duration;

/// Every event kind of interfaces.md §6.6: the request stream's, the responses', congestion
/// and link signals, integrity, capture loss, the §6.7 RC conformance findings, the §6.8
/// two-tap kinds, and the `tcp_bth_*` kinds of §7 (tcp_bth.md §d.1 step 4 and the §d.2
/// consistency checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    PsnGap,
    OutOfOrder,
    Duplicate,
    Retransmission,
    ImpliedTimeout,
    NakPsnSeqErr,
    NakRnr,
    NakInvalidRequest,
    NakRemoteAccess,
    NakRemoteOp,
    NakInvalidRd,
    ReadResponseGap,
    UnansweredRead,
    EcnCe,
    Cnp,
    PfcPause,
    PfcResume,
    PfcStorm,
    IcrcError,
    Malformed,
    Truncated,
    NotCaptured,
    GbnWrongStart,
    RepeatedNak,
    AckRegression,
    MsnRegression,
    ReadWrongRestart,
    ResponseAfterFatalNak,
    DroppedBetween,
    CorruptedBetween,
    ReorderedBetween,
    TcpBthGap,
    TcpBthOutOfOrder,
    TcpBthRetransmission,
    TcpBthDuplicate,
    TcpBthIcrcError,
    TcpBthOffsetMismatch,
    TcpBthContiguity,
    TcpBthMsnGap,
    TcpBthMsnRegression,
    TcpBthOpcodeGrammar,
    TcpBthSegContinuity,
    TcpBthLength,
    TcpBthMissingFirst,
    TcpBthImmediate,
    TcpBthReadPairing,
    TcpBthInconsistentRetransmit,
    TcpBthNoPayload,
    TcpBthCoalesced,
}

impl Kind {
    pub const ALL: [Kind; 49] = [
        Kind::PsnGap,
        Kind::OutOfOrder,
        Kind::Duplicate,
        Kind::Retransmission,
        Kind::ImpliedTimeout,
        Kind::NakPsnSeqErr,
        Kind::NakRnr,
        Kind::NakInvalidRequest,
        Kind::NakRemoteAccess,
        Kind::NakRemoteOp,
        Kind::NakInvalidRd,
        Kind::ReadResponseGap,
        Kind::UnansweredRead,
        Kind::EcnCe,
        Kind::Cnp,
        Kind::PfcPause,
        Kind::PfcResume,
        Kind::PfcStorm,
        Kind::IcrcError,
        Kind::Malformed,
        Kind::Truncated,
        Kind::NotCaptured,
        Kind::GbnWrongStart,
        Kind::RepeatedNak,
        Kind::AckRegression,
        Kind::MsnRegression,
        Kind::ReadWrongRestart,
        Kind::ResponseAfterFatalNak,
        Kind::DroppedBetween,
        Kind::CorruptedBetween,
        Kind::ReorderedBetween,
        Kind::TcpBthGap,
        Kind::TcpBthOutOfOrder,
        Kind::TcpBthRetransmission,
        Kind::TcpBthDuplicate,
        Kind::TcpBthIcrcError,
        Kind::TcpBthOffsetMismatch,
        Kind::TcpBthContiguity,
        Kind::TcpBthMsnGap,
        Kind::TcpBthMsnRegression,
        Kind::TcpBthOpcodeGrammar,
        Kind::TcpBthSegContinuity,
        Kind::TcpBthLength,
        Kind::TcpBthMissingFirst,
        Kind::TcpBthImmediate,
        Kind::TcpBthReadPairing,
        Kind::TcpBthInconsistentRetransmit,
        Kind::TcpBthNoPayload,
        Kind::TcpBthCoalesced,
    ];

    /// The JSON `kind` string.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Kind::PsnGap => "psn_gap",
            Kind::OutOfOrder => "out_of_order",
            Kind::Duplicate => "duplicate",
            Kind::Retransmission => "retransmission",
            Kind::ImpliedTimeout => "implied_timeout",
            Kind::NakPsnSeqErr => "nak_psn_seq_err",
            Kind::NakRnr => "nak_rnr",
            Kind::NakInvalidRequest => "nak_invalid_request",
            Kind::NakRemoteAccess => "nak_remote_access",
            Kind::NakRemoteOp => "nak_remote_op",
            Kind::NakInvalidRd => "nak_invalid_rd",
            Kind::ReadResponseGap => "read_response_gap",
            Kind::UnansweredRead => "unanswered_read",
            Kind::EcnCe => "ecn_ce",
            Kind::Cnp => "cnp",
            Kind::PfcPause => "pfc_pause",
            Kind::PfcResume => "pfc_resume",
            Kind::PfcStorm => "pfc_storm",
            Kind::IcrcError => "icrc_error",
            Kind::Malformed => "malformed",
            Kind::Truncated => "truncated",
            Kind::NotCaptured => "not_captured",
            Kind::GbnWrongStart => "gbn_wrong_start",
            Kind::RepeatedNak => "repeated_nak",
            Kind::AckRegression => "ack_regression",
            Kind::MsnRegression => "msn_regression",
            Kind::ReadWrongRestart => "read_wrong_restart",
            Kind::ResponseAfterFatalNak => "response_after_fatal_nak",
            Kind::DroppedBetween => "dropped_between",
            Kind::CorruptedBetween => "corrupted_between",
            Kind::ReorderedBetween => "reordered_between",

            Kind::TcpBthGap => "tcp_bth_gap",
            Kind::TcpBthOutOfOrder => "tcp_bth_out_of_order",
            Kind::TcpBthRetransmission => "tcp_bth_retransmission",
            Kind::TcpBthDuplicate => "tcp_bth_duplicate",
            Kind::TcpBthIcrcError => "tcp_bth_icrc_error",
            Kind::TcpBthOffsetMismatch => "tcp_bth_offset_mismatch",
            Kind::TcpBthContiguity => "tcp_bth_contiguity",
            Kind::TcpBthMsnGap => "tcp_bth_msn_gap",
            Kind::TcpBthMsnRegression => "tcp_bth_msn_regression",
            Kind::TcpBthOpcodeGrammar => "tcp_bth_opcode_grammar",
            Kind::TcpBthSegContinuity => "tcp_bth_seg_continuity",
            Kind::TcpBthLength => "tcp_bth_length",
            Kind::TcpBthMissingFirst => "tcp_bth_missing_first",
            Kind::TcpBthImmediate => "tcp_bth_immediate",
            Kind::TcpBthReadPairing => "tcp_bth_read_pairing",
            Kind::TcpBthInconsistentRetransmit => "tcp_bth_inconsistent_retransmit",
            Kind::TcpBthNoPayload => "tcp_bth_no_payload",
            Kind::TcpBthCoalesced => "tcp_bth_coalesced",
        }
    }

    #[must_use]
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The RC conformance findings of interfaces.md §6.7.
    pub const CONFORMANCE: [Kind; 6] = [
        Kind::GbnWrongStart,
        Kind::RepeatedNak,
        Kind::AckRegression,
        Kind::MsnRegression,
        Kind::ReadWrongRestart,
        Kind::ResponseAfterFatalNak,
    ];

    #[must_use]
    pub fn is_conformance(self) -> bool {
        Kind::CONFORMANCE.contains(&self)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Structured detail of a finding, rendered to text only when a report is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    None,
    /// A gap: `expected` was due, `missing` PSNs were skipped.
    Gap {
        expected: Psn,
        missing: u32,
    },
    /// A retransmission that filled `filled` missing PSNs (lost and recovered), else a duplicate.
    Retransmission {
        filled: u32,
    },
    /// A late original filling `filled` missing PSNs.
    Reorder {
        filled: u32,
    },
    /// A go-back by timeout that starts at this packet.
    Timeout,
    /// A NAK (RNR timer in µs for an RNR NAK).
    Nak {
        msn: u32,
        rnr_us: Option<u32>,
    },
    /// A READ request's missing response PSNs (listed in full) out of `n`.
    ReadGap {
        n: u32,
        missing: String,
    },
    /// A READ request (`n` response PSNs expected) with no response at all.
    Unanswered {
        n: u32,
    },
    /// PFC pause/resume of one priority (quanta, time at the link speed).
    Pfc {
        priority: u8,
        quanta: u16,
        ns: u64,
    },
    /// A (source, priority) paused without a break for `ns`.
    Storm {
        src_mac: [u8; 6],
        priority: u8,
        ns: u64,
        threshold_ns: u64,
    },
    /// PSNs the responder acknowledged that the capture never showed: the first few ranges
    /// `(first, n)` (`more` when there were others), `count` in all.
    NotCaptured {
        count: u64,
        ranges: Box<[(Psn, u32)]>,
        more: bool,
    },
    /// Free text (dissector complaints, ICRC values).
    Text(String),
}

/// One finding of the replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub frame: u64,
    pub time_ns: u64,
    pub kind: Kind,
    /// Flow index (`None` for PFC and frames without a flow).
    pub flow: Option<u32>,
    pub psn: Option<Psn>,
    pub detail: Detail,
}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Detail::None => Ok(()),
            Detail::Gap { expected, missing } => {
                let last = expected.wrapping_add(missing.saturating_sub(1));
                if *missing == 1 {
                    write!(f, "expected PSN {expected}: 1 PSN missing ({expected})")
                } else {
                    write!(
                        f,
                        "expected PSN {expected}: {missing} PSNs missing ({expected}-{last})"
                    )
                }
            }
            Detail::Retransmission { filled: 0 } => f.write_str("resent, already seen (duplicate)"),
            Detail::Retransmission { filled } => {
                write!(f, "resent, fills {filled} missing PSN(s) (lost)")
            }
            Detail::Reorder { filled } => write!(f, "late original, fills {filled} missing PSN(s)"),
            Detail::Timeout => f.write_str("go-back with no NAK: local ACK timeout"),
            Detail::Nak {
                msn,
                rnr_us: Some(us),
            } => {
                let timer = Duration(u64::from(*us) * 1000);
                write!(f, "MSN={msn} RNR timer {timer}")
            }
            Detail::Nak { msn, rnr_us: None } => write!(f, "MSN={msn}"),
            Detail::ReadGap { n, missing } => {
                write!(f, "{n} response PSN(s) expected, missing: {missing}")
            }
            Detail::Unanswered { n } => write!(f, "{n} response PSN(s) expected, none seen"),
            Detail::Pfc {
                priority,
                quanta: 0,
                ..
            } => write!(f, "p{priority} resume"),
            Detail::Pfc {
                priority,
                quanta,
                ns,
            } => {
                write!(f, "p{priority} {quanta} quanta ({})", Duration(*ns))
            }
            Detail::Storm {
                src_mac,
                priority,
                ns,
                threshold_ns,
            } => {
                let m = src_mac;
                write!(
                    f,
                    "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x} p{priority} paused ",
                    m[0], m[1], m[2], m[3], m[4], m[5]
                )?;
                let (paused, threshold) = (Duration(*ns), Duration(*threshold_ns));
                write!(f, "{paused} without a break (storm threshold {threshold})")
            }
            Detail::NotCaptured {
                count,
                ranges,
                more,
            } => {
                for (i, &(first, n)) in ranges.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    if n == 1 {
                        write!(f, "{first}")?;
                    } else {
                        write!(f, "{first}-{}", first.wrapping_add(n - 1))?;
                    }
                }
                if *more {
                    f.write_str(", …")?;
                }
                let s = if *count == 1 { "" } else { "s" };
                write!(
                    f,
                    " ({count} PSN{s} acknowledged by the responder, not captured)"
                )
            }
            Detail::Text(s) => f.write_str(s),
        }
    }
}

/// Findings of one step: a fixed array for the usual handful, so stepping does not allocate,
/// and a spill list for the rare step that settles many at once (a READ count that releases
/// up to 64 held acknowledgements, each with its own findings). None is ever dropped.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    items: [Option<Finding>; 8],
    len: usize,
    /// Past the eighth, in order (empty, and unallocated, for almost every step; the engine
    /// reuses one `Findings`, so its capacity stays once grown).
    spill: Vec<Finding>,
}

impl Findings {
    #[must_use]
    pub fn new() -> Self {
        Findings::default()
    }

    /// Add one, after those already there.
    pub fn push(&mut self, f: Finding) {
        match self.items.get_mut(self.len) {
            Some(slot) if self.spill.is_empty() => {
                *slot = Some(f);
                self.len += 1;
            }
            _ => self.spill.push(f),
        }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.len + self.spill.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0 && self.spill.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Finding> {
        self.items[..self.len].iter().flatten().chain(&self.spill)
    }

    pub fn drain(&mut self) -> impl Iterator<Item = Finding> + '_ {
        let n = self.len;
        self.len = 0;
        self.items[..n]
            .iter_mut()
            .filter_map(Option::take)
            .chain(self.spill.drain(..))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn at(frame: u64) -> Finding {
        Finding {
            frame,
            time_ns: frame,
            kind: Kind::NotCaptured,
            flow: Some(0),
            psn: None,
            detail: Detail::Text("x".into()),
        }
    }

    /// Found by the `replay_packets` fuzz target: a READ count settled by a request released
    /// its held acknowledgements at once, and the ninth finding of that step was dropped
    /// (a debug assertion; in release a finding silently missing from the report).
    #[test]
    fn a_step_keeps_every_finding_in_order() {
        let mut f = Findings::new();
        for i in 0..20 {
            f.push(at(i));
        }
        assert_eq!(f.len(), 20);
        let frames: Vec<u64> = f.iter().map(|x| x.frame).collect();
        assert_eq!(frames, (0..20).collect::<Vec<_>>());
        let drained: Vec<u64> = f.drain().map(|x| x.frame).collect();
        assert_eq!(drained, (0..20).collect::<Vec<_>>());
        assert!(f.is_empty());
        // and again after a drain (the engine reuses one)
        for i in 0..3 {
            f.push(at(100 + i));
        }
        assert_eq!(
            f.iter().map(|x| x.frame).collect::<Vec<_>>(),
            vec![100, 101, 102]
        );
    }
}
