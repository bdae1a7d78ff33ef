//! Arbitrary packet sequences through the replay engine (issue 5): no panic,
//! and memory bounded by flows and open holes, never by packets.
//!
//! Packets are drawn from the two directions of one RC connection (plus a
//! second QP), with opcodes from the table (requests, responses, CNP, unknown),
//! PSNs near each other so the go-back-N, hole and READ logic is reached, and
//! every AETH syndrome.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
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
}

const OPCODES: [u8; 16] = [
    0x06, 0x07, 0x08, 0x0A, 0x04, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x81, 0x26, 0x64,
];

fuzz_target!(|ops: Vec<Op>| {
    if ops.len() > 4096 {
        return;
    }
    let mut engine = Engine::new(EngineConfig::default());
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
        ev.time_ns = time;
        ev.ack_req = op.ack_req;
        let info = ev.info;
        if info.is_some_and(|i| i.headers.is_some_and(|h| h.contains(&rocescope_dissectors::ExtHeader::Aeth))) {
            ev.aeth = Some((Syndrome(op.syndrome), u32::from(op.msn)));
        }
        ev.dmalen = op.dmalen;
        ev.payload_len = u32::from(op.payload_len);
        ev.ecn = op.ecn & 3;
        ev.icrc = if op.icrc_bad {
            Icrc::Invalid { expected: 1, found: 2 }
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
            assert!(flow.psn.open_holes() <= ops.len());
        }
    }
    let report = engine.finish();
    let fed = ops.len() as u64;
    for flow in &report.flows {
        let c = &flow.psn.counters;
        assert!(c.unrecovered <= c.lost, "{c:?}");
        assert!(c.out_of_order + c.duplicates <= fed + c.retransmissions, "{c:?}");
        assert!(flow.frames <= fed);
    }
});
