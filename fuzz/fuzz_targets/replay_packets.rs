//! Arbitrary packet sequences through the replay engine (issue 5): no panic,
//! and memory bounded by flows and open holes, never by packets.
//!
//! Packets are drawn from the two directions of one RC connection (plus a
//! second QP), with opcodes from the table (requests, responses, CNP, unknown),
//! PSNs near each other so the go-back-N, hole and READ logic is reached, and
//! every AETH syndrome (ACKs, NAKs of every kind, fatal ones included); times
//! with silences past `--rto-min` (rule (c), `response_after_fatal_nak`); ICRCs
//! valid, wrong or not verifiable under each `--icrc` mode (the §6.5 judging
//! and its hold queue); the capture-loss, timing and conformance counters
//! checked against what was fed.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use rocescope::replay::IcrcMode;
use rocescope::replay::engine::{Engine, EngineConfig};
use rocescope::replay::event::{Icrc, PacketEvent};
use rocescope_dissectors::ib::aeth::Syndrome;
use rocescope_dissectors::{Opcode, Psn};

#[derive(Debug, Arbitrary)]
struct Op {
    /// false: requester -> responder (QP 0x11 or 0x12); true: the reverse (QP 0x21).
    reverse: bool,
    second_qp: bool,
    /// Index into OPCODES, or a raw opcode when past its end.
    opcode: u8,
    /// PSN relative to a moving base, so nearby PSNs dominate.
    psn_delta: i8,
    /// Occasionally jump far (wrap, half-range).
    far: Option<u32>,
    ack_req: bool,
    syndrome: u8,
    msn: u16,
    dmalen: Option<u32>,
    payload_len: u16,
    ecn: u8,
    icrc_bad: bool,
    truncated: bool,
    malformed: bool,
    time_step: u16,
    /// A silence of this many 100 µs before the packet (past --rto-min when ≥ 10).
    silence: Option<u8>,
    /// ICRC not verifiable (a truncated or malformed frame's), before `icrc_bad`.
    icrc_unverifiable: bool,
}

#[derive(Debug, Arbitrary)]
struct Input {
    /// --icrc: auto, trust, ignore.
    icrc_mode: u8,
    /// --rto-min in µs (0: the default 1 ms).
    rto_min_us: u16,
    ops: Vec<Op>,
}

const OPCODES: [u8; 16] = [
    0x06, 0x07, 0x08, 0x0A, 0x04, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x81, 0x26, 0x64,
];

fuzz_target!(|input: Input| {
    let ops = &input.ops;
    if ops.len() > 4096 {
        return;
    }
    let mut cfg = EngineConfig {
        icrc: match input.icrc_mode % 3 {
            0 => IcrcMode::Auto,
            1 => IcrcMode::Trust,
            _ => IcrcMode::Ignore,
        },
        ..EngineConfig::default()
    };
    if input.rto_min_us > 0 {
        cfg.rto_min_ns = u64::from(input.rto_min_us) * 1000;
    }
    let mut engine = Engine::new(cfg);
    let mut base: u32 = 0x00FF_FF00; // close to the 2^24 wrap
    let mut time = 0u64;
    for (i, op) in ops.iter().enumerate() {
        let opcode = OPCODES
            .get(usize::from(op.opcode))
            .copied()
            .unwrap_or(op.opcode);
        let psn = match op.far {
            Some(p) => p & 0x00FF_FFFF,
            None => base.wrapping_add(op.psn_delta as i32 as u32) & 0x00FF_FFFF,
        };
        base = psn;
        let qp = match (op.reverse, op.second_qp) {
            (false, false) => 0x11,
            (false, true) => 0x12,
            (true, _) => 0x21,
        };
        let mut ev = PacketEvent::new(i as u64 + 1, Opcode(opcode), qp, psn);
        if op.reverse {
            core::mem::swap(&mut ev.key.src, &mut ev.key.dst);
        }
        time = time.wrapping_add(u64::from(op.time_step));
        if let Some(n) = op.silence {
            time = time.wrapping_add(u64::from(n) * 100_000);
        }
        ev.time_ns = time;
        ev.ack_req = op.ack_req;
        let info = ev.info;
        if info.is_some_and(|i| {
            i.headers
                .is_some_and(|h| h.contains(&rocescope_dissectors::ExtHeader::Aeth))
        }) {
            ev.aeth = Some((Syndrome(op.syndrome), u32::from(op.msn)));
        }
        ev.dmalen = op.dmalen;
        ev.payload_len = u32::from(op.payload_len);
        ev.ecn = op.ecn & 3;
        ev.icrc = if op.icrc_unverifiable {
            Icrc::NotVerifiable
        } else if op.icrc_bad {
            Icrc::Invalid {
                expected: 1,
                found: 2,
            }
        } else {
            Icrc::Valid
        };
        ev.truncated = op.truncated;
        ev.malformed = op.malformed;
        let _ = Psn::new_masked(psn);
        engine.packet(&ev);
        // memory follows flows and holes: at most 3 keys are ever used
        assert!(engine.flows().len() <= 3);
        for flow in engine.flows() {
            assert!(flow.psn().open_holes() <= ops.len());
        }
    }
    let report = engine.finish();
    let fed = ops.len() as u64;
    for flow in &report.flows {
        let c = flow.psn().counters();
        assert!(c.unrecovered <= c.lost, "{c:?}");
        assert!(
            c.out_of_order + c.duplicates <= fed + c.retransmissions,
            "{c:?}"
        );
        assert!(flow.frames <= fed);
        // every finding rests on a packet fed: at most one per packet and kind
        assert!(
            flow.rare().conformance.total() <= 6 * fed,
            "{:?}",
            flow.rare().conformance
        );
        assert!(flow.rare().conformance.response_after_fatal_nak <= 1);
        assert!(c.implied_timeouts <= c.retransmissions, "{c:?}");
        if let Some(t) = flow.psn().timings() {
            // a sample per PSN recovered, per (b)/(c) run, per NAK answered or gap NAKed
            assert!(t.recovery.samples() <= c.lost - c.unrecovered, "{c:?}");
            assert_eq!(t.timeout_wait.samples(), c.implied_timeouts, "{c:?}");
            assert!(t.nak_response.samples() <= fed);
            assert!(t.nak_generation.samples() <= c.psn_gaps, "{c:?}");
        }
    }
    let not_captured: u64 = report
        .flows
        .iter()
        .map(|f| f.psn().counters().not_captured)
        .sum();
    let events = report
        .events
        .iter()
        .filter(|e| e.kind == rocescope::replay::Kind::NotCaptured)
        .count() as u64;
    assert!(events <= not_captured);
    if input.icrc_mode % 3 != 0 {
        assert!(!report.capture.icrc_unreliable);
    }
});
