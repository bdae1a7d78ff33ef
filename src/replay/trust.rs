//! Whether a capture file's ICRCs are the wire's (interfaces.md §6.5).
//!
//! Some capture points (offload sniffers that copy the packet before the NIC computes its
//! ICRC) write a wrong ICRC in every frame. When the first 16 verifiable RoCE frames of a file
//! (all of them when it has fewer, but at least 8) all fail their check, the file's ICRCs are
//! unreliable and its frames take part in the analysis as if their ICRC were not verifiable —
//! from the start. So that the file is read once, the engine holds the RoCE packets of a file
//! that is still being judged (and everything after them, to keep capture order) and replays
//! them once it is judged; the first valid ICRC settles a file at once, so for most captures
//! nothing is held at all. The queue is bounded: past [`HELD_MAX`] packets every file still
//! being judged is judged on what it showed so far.

// Indexing cannot panic here: inputs are indexed by the input number of a frame read from one of
// them (the table has one entry per input).
#![allow(clippy::indexing_slicing)]

use std::collections::VecDeque;

use rocescope_dissectors::cm::CmMessage;

use super::event::{Icrc, PacketEvent};
use crate::frame::Problem;

/// Verifiable frames that judge a file.
const JUDGED_BY: u8 = 16;
/// Fewer verifiable frames than this never make a file's ICRCs unreliable.
const JUDGED_AT_LEAST: u8 = 8;
/// Packets held at most while files are being judged.
pub const HELD_MAX: usize = 65_536;

/// `--icrc`: how ICRCs are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IcrcMode {
    /// Per file, by §6.5's rule.
    #[default]
    Auto,
    /// Every wrong ICRC is a corrupted frame (the strict rule).
    Trust,
    /// ICRCs are never checked.
    Ignore,
}

/// What to make of one packet's ICRC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// As the frame says: a wrong ICRC is a corrupted frame.
    AsCaptured,
    /// Its file's ICRCs are unreliable: a wrong one counts, but the frame takes part.
    Unreliable,
    /// Not checked at all.
    Ignored,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judging {
    /// Not judged yet: the verifiable frames seen so far, all of which failed (the first
    /// valid one judges the file reliable).
    Open {
        verifiable: u8,
    },
    Reliable,
    Unreliable,
}

/// A packet waiting for its file's verdict, with what its frame also carried.
#[derive(Debug)]
pub struct Held {
    pub packet: PacketEvent,
    pub problem: Option<Problem>,
    pub cm: Option<Box<CmMessage>>,
}

/// The verdicts of the inputs, and the packets held for them.
#[derive(Debug, Default)]
pub struct Trust {
    mode: IcrcMode,
    inputs: Vec<Judging>,
    held: VecDeque<Held>,
}

impl Trust {
    #[must_use]
    pub fn new(mode: IcrcMode) -> Self {
        Trust {
            mode,
            ..Trust::default()
        }
    }

    fn judging(&mut self, input: u16) -> &mut Judging {
        let i = usize::from(input);
        if self.inputs.len() <= i {
            self.inputs.resize(i + 1, Judging::Open { verifiable: 0 });
        }
        &mut self.inputs[i]
    }

    /// Count `ev` towards its file's verdict; true when the packet can be stepped now (its
    /// file is judged and nothing is held before it), false when it must be held.
    pub fn admit(&mut self, ev: &PacketEvent) -> bool {
        if self.mode != IcrcMode::Auto {
            return true;
        }
        let j = self.judging(ev.input);
        if let Judging::Open { verifiable } = j {
            match ev.icrc {
                Icrc::Valid => *j = Judging::Reliable,
                Icrc::Invalid { .. } => {
                    *verifiable += 1;
                    if *verifiable >= JUDGED_BY {
                        *j = Judging::Unreliable;
                    }
                }
                Icrc::NotVerifiable => {}
            }
        }
        self.held.is_empty() && !matches!(self.inputs[usize::from(ev.input)], Judging::Open { .. })
    }

    /// Hold a packet that [`Trust::admit`] did not let through.
    pub fn hold(&mut self, held: Held) {
        self.held.push_back(held);
        if self.held.len() >= HELD_MAX {
            self.judge_all();
        }
    }

    /// The next held packet whose file is judged (in capture order), if any.
    pub fn release(&mut self) -> Option<Held> {
        let front = self.held.front()?;
        if matches!(
            self.inputs.get(usize::from(front.packet.input)),
            Some(Judging::Open { .. })
        ) {
            return None;
        }
        self.held.pop_front()
    }

    /// Judge every file still open on what it showed (the end of the capture, or a full
    /// queue): at least 8 verifiable frames that all failed make it unreliable.
    pub fn judge_all(&mut self) {
        for j in &mut self.inputs {
            if let Judging::Open { verifiable } = *j {
                *j = if verifiable >= JUDGED_AT_LEAST {
                    Judging::Unreliable
                } else {
                    Judging::Reliable
                };
            }
        }
    }

    /// What to make of a (released or admitted) packet's ICRC.
    #[must_use]
    pub fn verdict(&self, ev: &PacketEvent) -> Verdict {
        match self.mode {
            IcrcMode::Ignore => Verdict::Ignored,
            IcrcMode::Trust => Verdict::AsCaptured,
            IcrcMode::Auto => match self.inputs.get(usize::from(ev.input)) {
                Some(Judging::Unreliable) => Verdict::Unreliable,
                _ => Verdict::AsCaptured,
            },
        }
    }

    /// The inputs whose ICRCs were judged unreliable.
    #[must_use]
    pub fn unreliable(&self) -> Vec<u16> {
        (0u16..)
            .zip(&self.inputs)
            .filter(|(_, j)| **j == Judging::Unreliable)
            .map(|(i, _)| i)
            .collect()
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use rocescope_dissectors::Opcode;

    fn ev(frame: u64, icrc: Icrc) -> PacketEvent {
        PacketEvent {
            icrc,
            ..PacketEvent::new(
                frame,
                Opcode::RC_SEND_ONLY,
                0x11,
                u32::try_from(frame).unwrap(),
            )
        }
    }

    const BAD: Icrc = Icrc::Invalid {
        expected: 1,
        found: 2,
    };

    #[test]
    fn sixteen_bad_make_a_file_unreliable_from_the_start() {
        let mut t = Trust::new(IcrcMode::Auto);
        for f in 1..=15 {
            assert!(!t.admit(&ev(f, BAD)));
            t.hold(Held {
                packet: ev(f, BAD),
                problem: None,
                cm: None,
            });
            assert!(t.release().is_none());
        }
        // the 16th decides; everything held comes out in order, judged unreliable
        assert!(!t.admit(&ev(16, BAD)));
        t.hold(Held {
            packet: ev(16, BAD),
            problem: None,
            cm: None,
        });
        let out: Vec<u64> = std::iter::from_fn(|| t.release())
            .map(|h| h.packet.frame)
            .collect();
        assert_eq!(out, (1..=16).collect::<Vec<_>>());
        assert_eq!(t.verdict(&ev(1, BAD)), Verdict::Unreliable);
        assert_eq!(t.unreliable(), [0]);
    }

    #[test]
    fn one_good_icrc_settles_a_file_and_few_bad_ones_do_not_condemn_it() {
        let mut t = Trust::new(IcrcMode::Auto);
        assert!(!t.admit(&ev(1, BAD)));
        t.hold(Held {
            packet: ev(1, BAD),
            problem: None,
            cm: None,
        });
        assert!(!t.admit(&ev(2, Icrc::Valid)));
        assert_eq!(t.release().map(|h| h.packet.frame), Some(1));
        assert_eq!(t.verdict(&ev(1, BAD)), Verdict::AsCaptured);
        // a second file with 7 verifiable frames, all bad, and then the end: reliable
        let mut t = Trust::new(IcrcMode::Auto);
        for f in 1..=7 {
            t.admit(&ev(f, BAD));
        }
        t.judge_all();
        assert!(t.unreliable().is_empty());
        assert_eq!(
            Trust::new(IcrcMode::Ignore).verdict(&ev(1, BAD)),
            Verdict::Ignored
        );
    }
}
