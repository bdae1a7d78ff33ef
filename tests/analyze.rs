//! `rocescope analyze` and the replay engine: hand-built packet sequences for every rule of
//! interfaces.md §6.2–§6.4 (expected counts derived by hand in the comments), the real
//! captures of `../shared/captures/real/`, text-report snapshots, `--fail-on` exit codes,
//! and the generator's scenarios against their truth.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::Command;

use rocescope::analyze::{self, AnalyzeConfig};
use rocescope::config::AnalyzeFormat;
use rocescope::replay::{Engine, EngineConfig, Flow, FlowKey, Icrc, Kind, PacketEvent, Replay};
use rocescope_dissectors::Opcode;
use rocescope_dissectors::ib::aeth::{NakCode, Syndrome};

// ---------------------------------------------------------------- helpers

/// Requester A's QP and responder B's QP: A's requests go to `(A, B, QP_B)`, B's responses
/// to A's requests to `(B, A, QP_A)`.
const QP_A: u32 = 0x11;
const QP_B: u32 = 0x22;

const SEND_ONLY: Opcode = Opcode(0x04);
const WRITE_FIRST: Opcode = Opcode(0x06);
const WRITE_MIDDLE: Opcode = Opcode(0x07);
const WRITE_LAST: Opcode = Opcode(0x08);
const READ_REQUEST: Opcode = Opcode(0x0c);
const READ_RESP_FIRST: Opcode = Opcode(0x0d);
const READ_RESP_MIDDLE: Opcode = Opcode(0x0e);
const READ_RESP_LAST: Opcode = Opcode(0x0f);
const READ_RESP_ONLY: Opcode = Opcode(0x10);
const ACKNOWLEDGE: Opcode = Opcode(0x11);
const UC_SEND_ONLY: Opcode = Opcode(0x24);
const UD_SEND_ONLY: Opcode = Opcode(0x64);
const CNP: Opcode = Opcode(0x81);

fn a_to_b() -> FlowKey {
    FlowKey {
        src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)).into(),
        dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)).into(),
        dest_qp: QP_B,
    }
}

fn b_to_a() -> FlowKey {
    a_to_b().reverse(QP_A)
}

/// Builds a packet sequence with consecutive frame numbers.
#[derive(Default)]
struct Seq {
    pkts: Vec<PacketEvent>,
}

impl Seq {
    fn next_frame(&self) -> u64 {
        self.pkts.len() as u64 + 1
    }

    /// A request of A at `psn`.
    fn req(&mut self, op: Opcode, psn: u32) -> &mut PacketEvent {
        let mut p = PacketEvent::new(self.next_frame(), op, QP_B, psn);
        p.key = a_to_b();
        self.pkts.push(p);
        self.pkts.last_mut().unwrap()
    }

    fn send(&mut self, psns: &[u32]) {
        for &psn in psns {
            self.req(SEND_ONLY, psn);
        }
    }

    fn read(&mut self, psn: u32, dmalen: u32) {
        self.req(READ_REQUEST, psn).dmalen = Some(dmalen);
    }

    /// A response of B at `psn` (AETH for ACKNOWLEDGE and READ FIRST/LAST/ONLY).
    fn resp(&mut self, op: Opcode, psn: u32, syndrome: Option<Syndrome>) -> &mut PacketEvent {
        let mut p = PacketEvent::new(self.next_frame(), op, QP_A, psn);
        p.key = b_to_a();
        p.aeth = syndrome.map(|s| (s, 0));
        self.pkts.push(p);
        self.pkts.last_mut().unwrap()
    }

    fn ack(&mut self, psn: u32) {
        self.resp(ACKNOWLEDGE, psn, Some(Syndrome::ACK_UNLIMITED));
    }

    fn nak_seq(&mut self, psn: u32) {
        self.resp(
            ACKNOWLEDGE,
            psn,
            Some(Syndrome::nak(NakCode::PSN_SEQUENCE_ERROR)),
        );
    }

    fn replay(&self) -> Replay {
        let mut e = Engine::new(EngineConfig::default());
        for p in &self.pkts {
            e.packet(p);
        }
        e.finish()
    }
}

fn flow(r: &Replay, key: FlowKey) -> &Flow {
    &r.flows[id(r, key) as usize]
}

fn id(r: &Replay, key: FlowKey) -> u32 {
    r.find(&key).expect("flow present")
}

/// (psn_gaps, lost, unrecovered, out_of_order, duplicates, retransmissions, implied_timeouts)
fn seq_counts(f: &Flow) -> [u64; 7] {
    let c = f.psn().counters();
    [
        c.psn_gaps,
        c.lost,
        c.unrecovered,
        c.out_of_order,
        c.duplicates,
        c.retransmissions,
        c.implied_timeouts,
    ]
}

fn kinds(r: &Replay) -> Vec<(u64, &'static str)> {
    r.events.iter().map(|e| (e.frame, e.kind.name())).collect()
}

// ---------------------------------------------------------------- §6.2 classification

#[test]
fn in_order_stream() {
    // 10 11 12 13: every d == 0 after the first, which sets expected (in order, no gap).
    let mut s = Seq::default();
    s.send(&[10, 11, 12, 13]);
    let r = s.replay();
    let f = flow(&r, a_to_b());
    assert_eq!(seq_counts(f), [0; 7]);
    assert_eq!(f.messages(), 4);
    assert_eq!(f.first_psn().map(|p| p.value()), Some(10));
    assert_eq!(f.last_psn().map(|p| p.value()), Some(13));
    assert!(r.events.is_empty());
}

#[test]
fn capture_starting_mid_stream_shows_no_gap() {
    let mut s = Seq::default();
    s.send(&[5_000_000, 5_000_001]);
    let r = s.replay();
    assert_eq!(seq_counts(flow(&r, a_to_b())), [0; 7]);
}

#[test]
fn gap_left_open_is_lost_and_unrecovered() {
    // 10 11 14 15: 14 has d = 2 > 0: one psn_gap, 12 and 13 missing. Nothing fills them:
    // at the end both are unrecovered, and unrecovered PSNs count in lost too.
    let mut s = Seq::default();
    s.send(&[10, 11, 14, 15]);
    let r = s.replay();
    let f = flow(&r, a_to_b());
    assert_eq!(seq_counts(f), [1, 2, 2, 0, 0, 0, 0]);
    assert_eq!(f.messages(), 4);
    assert_eq!(kinds(&r), [(3, "psn_gap")]);
    assert_eq!(
        r.events[0].detail.to_string(),
        "expected PSN 12: 2 PSNs missing (12-13)"
    );
}

#[test]
fn late_original_is_out_of_order() {
    // 10 12 11 13: 12 opens a gap (11 missing). 11: d < 0, missing, at or below the previous
    // packet (12), so its class is held for the next packet. 13 is not 11+1 = 12, so no
    // timeout run: 11 is out_of_order (not lost). 13 is in order.
    let mut s = Seq::default();
    s.send(&[10, 12, 11, 13]);
    let r = s.replay();
    let f = flow(&r, a_to_b());
    assert_eq!(seq_counts(f), [1, 0, 0, 1, 0, 0, 0]);
    assert_eq!(f.messages(), 4);
    assert_eq!(kinds(&r), [(2, "psn_gap"), (3, "out_of_order")]);
}

#[test]
fn two_late_originals() {
    // 10 13 11 12 14: 13 opens a gap (11, 12). 11 is held; the next packet 12 is 11+1 but
    // was not seen (it is missing), so (b) fails: 11 out_of_order. 12: d < 0, missing, above
    // the previous packet (11), no run: out_of_order. 14 in order.
    let mut s = Seq::default();
    s.send(&[10, 13, 11, 12, 14]);
    let f = flow(&s.replay(), a_to_b()).clone();
    assert_eq!(seq_counts(&f), [1, 0, 0, 2, 0, 0, 0]);
}

#[test]
fn duplicates() {
    // 10 11 12 12 13: the second 12 is held (at or below the previous, 12); the next packet
    // 13 is 12+1 but not seen yet (d == 0), so no run: duplicate. 13 in order.
    // Then 5 (before the flow's first PSN) and 20 (d > 0: gap of 14..19) and 11 again:
    // 5 is held, next 20 is not 6: duplicate; 11 is held, end of capture: duplicate.
    let mut s = Seq::default();
    s.send(&[10, 11, 12, 12, 13, 5, 20, 11]);
    let r = s.replay();
    let f = flow(&r, a_to_b());
    // gaps 1 (14..19 = 6 PSNs, unrecovered), duplicates 3
    assert_eq!(seq_counts(f), [1, 6, 6, 0, 3, 0, 0]);
    // messages count distinct PSNs: 10 11 12 13 20
    assert_eq!(f.messages(), 5);
}

#[test]
fn nak_go_back_run_a() {
    // 0 (AckReq) ACK(0) pairs the flows (0 lies in the consumed PSNs [0, 1)).
    // 1 2 4: 4 opens a gap (3 missing). NAK(3) arrives. 5 6 are new data still in flight
    // (d == 0: in order). 3: d < 0, at or below the previous packet (6) and at or above the
    // unanswered NAK's PSN (3): (a) starts a run: retransmission, 3 was missing: lost.
    // 4 5 6: in the run, already seen: retransmission + duplicate each.
    // 7: passes the highest PSN seen before the run (6): in order, the run ends.
    let mut s = Seq::default();
    s.req(SEND_ONLY, 0).ack_req = true;
    s.ack(0);
    s.send(&[1, 2, 4]);
    s.nak_seq(3);
    s.send(&[5, 6, 3, 4, 5, 6, 7]);
    let r = s.replay();
    let f = flow(&r, a_to_b());
    assert_eq!(f.peer(), Some(id(&r, b_to_a())));
    // gaps 1, lost 1, unrecovered 0, ooo 0, dup 3, retx 4, timeouts 0
    assert_eq!(seq_counts(f), [1, 1, 0, 0, 3, 4, 0]);
    assert_eq!(f.messages(), 8);
    let rev = flow(&r, b_to_a());
    assert_eq!((rev.acks, rev.rare().naks.psn_seq_err), (1, 1));
    assert_eq!(f.latency().summary().samples, 1);
    assert_eq!(
        kinds(&r),
        [
            (5, "psn_gap"),
            (6, "nak_psn_seq_err"),
            (9, "retransmission"),
            (10, "retransmission"),
            (11, "retransmission"),
            (12, "retransmission"),
        ]
    );
}

#[test]
fn nak_on_unpaired_flow_does_not_start_a_run() {
    // Same as above but the NAK's PSN (30) lies outside the request flow's PSNs: it cannot
    // pair the flows, so it does not count; 3 is then held: the next packet 4 is 3+1 and seen:
    // a timeout run (b) instead.
    let mut s = Seq::default();
    s.send(&[1, 2, 4]);
    s.nak_seq(30);
    s.send(&[3, 4, 5]);
    let r = s.replay();
    let f = flow(&r, a_to_b());
    assert_eq!(f.peer(), None);
    // gaps 1, lost 1, dup 1 (4), retx 2 (3, 4), timeouts 1; 5 in order
    assert_eq!(seq_counts(f), [1, 1, 0, 0, 1, 2, 1]);
}

#[test]
fn timeout_run_b() {
    // 0 1 2 3, then 1 2 3 resent, then 4. 1: d < 0, seen, at or below the previous (3):
    // held. The next packet 2 is 1+1 and already seen: (b), one implied_timeout; 1 is a
    // retransmission (a duplicate, it was not missing). 2 3: in the run: retransmission +
    // duplicate. 4 passes 3: in order.
    let mut s = Seq::default();
    s.send(&[0, 1, 2, 3, 1, 2, 3, 4]);
    let r = s.replay();
    assert_eq!(seq_counts(flow(&r, a_to_b())), [0, 0, 0, 0, 3, 3, 1]);
    assert_eq!(
        kinds(&r),
        [
            (5, "implied_timeout"),
            (5, "retransmission"),
            (6, "retransmission"),
            (7, "retransmission"),
        ]
    );
}

#[test]
fn timeout_run_b_recovers_a_loss() {
    // 0 1 3 (gap: 2 missing), then 2 3 resent by timeout, then 4. 2 is held; the next packet
    // 3 is 2+1 and seen: (b). 2 fills its hole: lost (and recovered). 3: retransmission +
    // duplicate. 4 in order.
    let mut s = Seq::default();
    s.send(&[0, 1, 3, 2, 3, 4]);
    let f = flow(&s.replay(), a_to_b()).clone();
    // gaps 1, lost 1, unrecovered 0, ooo 0, dup 1, retx 2, timeouts 1
    assert_eq!(seq_counts(&f), [1, 1, 0, 0, 1, 2, 1]);
    assert_eq!(f.messages(), 5);
}

#[test]
fn run_ends_with_a_gap() {
    // 0 1 2, timeout resend 1 2, then 5: 5 passes the highest PSN before the run (2) with
    // d = 2: classified by the other rules: a psn_gap (3, 4 missing, unrecovered).
    let mut s = Seq::default();
    s.send(&[0, 1, 2, 1, 2, 5]);
    let f = flow(&s.replay(), a_to_b()).clone();
    assert_eq!(seq_counts(&f), [1, 2, 2, 0, 2, 2, 1]);
}

#[test]
fn second_run_inside_a_run() {
    // 0 1 2 3, resend 1 2 (run 1), resend 1 2 3 (1 at or below the previous (2), the next is
    // 2 = 1+1, seen: a second timeout run), then 4.
    let mut s = Seq::default();
    s.send(&[0, 1, 2, 3, 1, 2, 1, 2, 3, 4]);
    let f = flow(&s.replay(), a_to_b()).clone();
    // retransmissions: 1 2 1 2 3 = 5, all duplicates; 2 implied timeouts
    assert_eq!(seq_counts(&f), [0, 0, 0, 0, 5, 5, 2]);
}

// ---------------------------------------------------------------- known limits, accepted

#[test]
fn limit_single_timeout_resend_then_new_data_is_duplicate() {
    // 0 1 2, 2 resent by timeout, then new data 3: 2 is held, 3 was not seen: duplicate.
    let mut s = Seq::default();
    s.send(&[0, 1, 2, 2, 3]);
    assert_eq!(
        seq_counts(flow(&s.replay(), a_to_b())),
        [0, 0, 0, 0, 1, 0, 0]
    );
}

#[test]
fn limit_late_original_while_nak_unanswered_is_retransmission() {
    // 0 (AckReq), ACK(0) pairs. 1 3: gap (2 missing). NAK(2). Then 2 arrives: a late
    // original on the wire, but it is at or below the previous (3) and at or above the
    // unanswered NAK (2): (a), a retransmission, and 2 counts as lost. 4 in order.
    let mut s = Seq::default();
    s.req(SEND_ONLY, 0).ack_req = true;
    s.ack(0);
    s.send(&[1, 3]);
    s.nak_seq(2);
    s.send(&[2, 4]);
    let f = flow(&s.replay(), a_to_b()).clone();
    assert_eq!(seq_counts(&f), [1, 1, 0, 0, 0, 1, 0]);
}

#[test]
fn limit_rule3_after_a_loss() {
    // On the wire: PMTU 4096, READ at 10 of 4096 bytes consumes 1 PSN; the SEND at 11 is
    // lost; the SEND at 12 is captured. Rule 3: 12 - 10 = 2 = ceil(4096 / 2048), so the READ
    // is settled at n = 2 and 2048 becomes the PMTU: the loss of 11 is not seen (no gap).
    let mut s = Seq::default();
    s.read(10, 4096);
    s.send(&[12]);
    // The learned PMTU (2048) settles the next READ by rule 1: 4096 / 2048 = 2 PSNs (13, 14).
    s.read(13, 4096);
    s.send(&[15]);
    let r = s.replay();
    let f = flow(&r, a_to_b());
    assert_eq!(seq_counts(f), [0; 7]);
    assert_eq!(f.pmtu_seen, 2048);
    assert_eq!(f.last_psn().map(|p| p.value()), Some(15));
}

// ---------------------------------------------------------------- READ consumption rules

#[test]
fn read_rule1_pmtu_from_first_payload() {
    // WRITE FIRST at 0 carries 1024 payload bytes: the PMTU is 1024 (rule 1). READ at 3 of
    // 3000 bytes consumes ceil(3000/1024) = 3 PSNs (3 4 5); the SEND at 7 opens a gap of 1
    // (6 missing, unrecovered).
    let mut s = Seq::default();
    s.req(WRITE_FIRST, 0).payload_len = 1024;
    s.req(WRITE_MIDDLE, 1).payload_len = 1024;
    s.req(WRITE_LAST, 2).payload_len = 10;
    s.read(3, 3000);
    s.send(&[7]);
    let r = s.replay();
    let f = flow(&r, a_to_b());
    assert_eq!(seq_counts(f), [1, 1, 1, 0, 0, 0, 0]);
    // messages: WRITE LAST 2, READ 3, SEND 7
    assert_eq!((f.messages(), f.psn().counters().read_requests), (3, 1));
    let gap = r.events.iter().find(|e| e.kind == Kind::PsnGap).unwrap();
    assert_eq!(gap.detail.to_string(), "expected PSN 6: 1 PSN missing (6)");
}

#[test]
fn read_rule2_own_response() {
    // READ at 10 of 5000 bytes, PMTU unknown. Its FIRST response at 10 pairs the flows (10
    // lies in the consumed PSNs); its LAST at 12 settles n = 12 - 10 + 1 = 3 (rule 2). Only
    // m = 2048 gives ceil(5000/m) = 3: the PMTU becomes 2048. The SEND at 13 is in order; the
    // next READ at 14 of 5000 bytes is settled by rule 1 (3 PSNs: 14 15 16): SEND 17 in order.
    let mut s = Seq::default();
    s.read(10, 5000);
    s.resp(READ_RESP_FIRST, 10, Some(Syndrome::ACK_UNLIMITED));
    s.resp(READ_RESP_MIDDLE, 11, None);
    s.resp(READ_RESP_LAST, 12, Some(Syndrome::ACK_UNLIMITED));
    s.send(&[13]);
    s.read(14, 5000);
    s.send(&[17]);
    let r = s.replay();
    let f = flow(&r, a_to_b());
    assert_eq!(seq_counts(f), [0; 7]);
    assert_eq!(f.pmtu_seen, 2048);
    assert_eq!(flow(&r, b_to_a()).rare().read_responses, 3);
    // the first READ got all its responses; the second none
    assert_eq!(
        (
            f.psn().counters().read_requests,
            f.rare().read_response_gaps,
            f.rare().unanswered_reads
        ),
        (2, 0, 1)
    );
    assert_eq!(kinds(&r), [(6, "unanswered_read")]);
}

#[test]
fn read_rule3_next_request() {
    // READ at 10 of 5000 bytes, nothing known; the next request at 13: 13 - 10 = 3 =
    // ceil(5000/2048), so n = 3 and (only 2048 gives 3) the PMTU becomes 2048.
    let mut s = Seq::default();
    s.read(10, 5000);
    s.send(&[13]);
    s.read(14, 5000); // rule 1 now: 3 PSNs
    s.send(&[17]);
    let f = flow(&s.replay(), a_to_b()).clone();
    assert_eq!(seq_counts(&f), [0; 7]);
    assert_eq!(f.pmtu_seen, 2048);
}

#[test]
fn read_rule4_fallback() {
    // READ at 10 of 5000 bytes; the next request at 14: 4 PSNs fits no valid PMTU
    // (20, 10, 5, 3, 2): rule 4, n = ceil(5000/1024) = 5 (10..14), the PMTU stays unknown.
    // 14 then lies inside the READ's consumed range: a duplicate. 15 in order.
    let mut s = Seq::default();
    s.read(10, 5000);
    s.send(&[14, 15]);
    let f = flow(&s.replay(), a_to_b()).clone();
    assert_eq!(seq_counts(&f), [0, 0, 0, 0, 1, 0, 0]);
    assert_eq!(f.pmtu_seen, 0);
    // messages: READ 10, SEND 15 (14 was a duplicate, not a new PSN)
    assert_eq!(f.messages(), 2);
}

#[test]
fn read_rule4_at_end_of_capture() {
    // A READ as the last packet: settled by rule 4 at the end: 5000 bytes -> 5 PSNs.
    let mut s = Seq::default();
    s.read(10, 5000);
    let f = flow(&s.replay(), a_to_b()).clone();
    assert_eq!(f.last_psn().map(|p| p.value()), Some(14));
    assert_eq!(f.rare().unanswered_reads, 1);
}

#[test]
fn zero_length_read_consumes_one() {
    // max(1, ceil(0 / m)) = 1 for every m: rule 3 gives n = 1 when the next is at 11 but no
    // unique PMTU (every m gives 1).
    let mut s = Seq::default();
    s.read(10, 0);
    s.send(&[11]);
    let f = flow(&s.replay(), a_to_b()).clone();
    assert_eq!(seq_counts(&f), [0; 7]);
    assert_eq!(f.pmtu_seen, 0);
}

#[test]
fn read_retransmission_fills_its_range() {
    // PMTU 1024 from the WRITE FIRST. READ at 2 of 3072 bytes (3 PSNs: 2 3 4) is lost; the
    // SEND at 5 opens a gap of 3. The requester times out and resends the READ at 2 and the
    // SEND at 5. The READ is held; the next packet 5 = 2 + 3 and was seen: (b), one
    // implied_timeout; the READ fills 2 3 4: lost 3. 5: retransmission + duplicate. 6 in order.
    let mut s = Seq::default();
    s.req(WRITE_FIRST, 0).payload_len = 1024;
    s.req(WRITE_LAST, 1).payload_len = 1;
    s.send(&[5]);
    s.read(2, 3072);
    s.send(&[5, 6]);
    let f = flow(&s.replay(), a_to_b()).clone();
    assert_eq!(seq_counts(&f), [1, 3, 0, 0, 1, 2, 1]);
    // distinct message-ending PSNs: 1, 5, 2 (READ), 6
    assert_eq!((f.messages(), f.psn().counters().read_requests), (4, 1));
}

#[test]
fn late_read_with_open_count_fills_its_range_when_settled() {
    // SEND 13 is the flow's first packet (expected 14). READ at 10 (5000 bytes) comes after
    // it: d < 0 and before the flow's first PSN, so it was never missing: it fills nothing.
    // It is at or below the previous packet (13), so its class is held, and its count is open.
    // The next packet 14 settles the count: 14 - 10 = 4 fits no valid PMTU (rule 3), so rule
    // 4 gives 5; 14 is not 10 + 5, so no timeout run: the READ is a duplicate. 14: in order.
    let mut s = Seq::default();
    s.send(&[13]);
    s.read(10, 5000);
    s.send(&[14]);
    let f = flow(&s.replay(), a_to_b()).clone();
    // first packet 13 sets expected 14; 10 is before the first PSN: its first PSN was never
    // missing, so it is a duplicate and fills nothing.
    assert_eq!(seq_counts(&f), [0, 0, 0, 0, 1, 0, 0]);
}

#[test]
fn read_response_gap_and_unanswered() {
    // PMTU 1024 from a WRITE FIRST; ACK(1) pairs. READ at 2 of 3072 bytes expects responses
    // 2 3 4: FIRST 2 and LAST 4 arrive, MIDDLE 3 never does: one read_response_gap listing 3.
    // READ at 5 of 100 bytes (1 PSN) gets nothing: one unanswered_read.
    let mut s = Seq::default();
    s.req(WRITE_FIRST, 0).payload_len = 1024;
    s.req(WRITE_LAST, 1).ack_req = true;
    s.ack(1);
    s.read(2, 3072);
    s.read(5, 100);
    s.resp(READ_RESP_FIRST, 2, Some(Syndrome::ACK_UNLIMITED));
    s.resp(READ_RESP_LAST, 4, Some(Syndrome::ACK_UNLIMITED));
    s.send(&[6]);
    let r = s.replay();
    let f = flow(&r, a_to_b());
    assert_eq!(seq_counts(f), [0; 7]);
    assert_eq!(
        (
            f.psn().counters().read_requests,
            f.rare().read_response_gaps,
            f.rare().unanswered_reads
        ),
        (2, 1, 1)
    );
    assert_eq!(
        kinds(&r),
        [(4, "read_response_gap"), (5, "unanswered_read")]
    );
    assert_eq!(
        r.events[0].detail.to_string(),
        "3 response PSN(s) expected, missing: 3"
    );
    // READ responses with an ACK AETH acknowledge: the AckReq at 1 got a sample from ACK(1)
    assert_eq!(f.latency().summary().samples, 1);
}

#[test]
fn read_response_only_pairs_and_matches() {
    let mut s = Seq::default();
    s.read(100, 64);
    s.resp(READ_RESP_ONLY, 100, Some(Syndrome::ACK_UNLIMITED));
    let r = s.replay();
    let f = flow(&r, a_to_b());
    assert!(f.peer().is_some());
    assert_eq!(
        (f.rare().read_response_gaps, f.rare().unanswered_reads),
        (0, 0)
    );
}

// ---------------------------------------------------------------- PSN wrap

#[test]
fn psn_wraps_at_2_pow_24() {
    // 0xFFFFFE 0xFFFFFF 0 1: in order across the wrap.
    let mut s = Seq::default();
    s.send(&[0xFF_FFFE, 0xFF_FFFF, 0, 1]);
    let f = flow(&s.replay(), a_to_b()).clone();
    assert_eq!(seq_counts(&f), [0; 7]);
    assert_eq!(f.last_psn().map(|p| p.value()), Some(1));

    // 0xFFFFFE then 1: a gap of 2 across the wrap (0xFFFFFF and 0 missing); 0 arrives late.
    let mut s = Seq::default();
    s.send(&[0xFF_FFFE, 1, 0, 2]);
    let r = s.replay();
    let f = flow(&r, a_to_b());
    assert_eq!(seq_counts(f), [1, 1, 1, 1, 0, 0, 0]);
    assert_eq!(
        r.events[0].detail.to_string(),
        "expected PSN 16777215: 2 PSNs missing (16777215-0)"
    );

    // d >= 2^23 reads as negative: 0 then 0x800000 is "behind": a duplicate, not a gap.
    let mut s = Seq::default();
    s.send(&[0, 1, 0x80_0002]);
    let f = flow(&s.replay(), a_to_b()).clone();
    assert_eq!(seq_counts(&f), [0, 0, 0, 0, 1, 0, 0]);
}

// ---------------------------------------------------------------- transports, integrity

#[test]
fn uc_is_sequenced_ud_is_counted() {
    let mut s = Seq::default();
    for psn in [0, 1, 3] {
        s.req(UC_SEND_ONLY, psn);
    }
    for psn in [7, 9, 8] {
        let p = s.req(UD_SEND_ONLY, psn);
        p.key.dest_qp = 0x99;
    }
    let r = s.replay();
    let uc = flow(&r, a_to_b());
    assert_eq!((uc.transport_name(), seq_counts(uc)[0]), ("UC", 1));
    let ud = flow(&r, a_to_b().reverse(0x99).reverse(0x99));
    assert_eq!(ud.transport_name(), "UD");
    assert_eq!(seq_counts(ud), [0; 7]);
    assert_eq!(ud.messages(), 3);
    assert_eq!(
        (
            ud.first_psn().map(|p| p.value()),
            ud.last_psn().map(|p| p.value())
        ),
        (Some(7), Some(9))
    );
}

#[test]
fn bad_icrc_and_malformed_take_part_in_nothing() {
    // 0, 1 (ICRC bad), 2 (malformed), 3: the receiver drops 1 and 2, so 3 shows a gap of 2.
    let mut s = Seq::default();
    s.send(&[0]);
    s.req(SEND_ONLY, 1).icrc = Icrc::Invalid {
        expected: 1,
        found: 2,
    };
    let p = s.req(SEND_ONLY, 2);
    p.malformed = true;
    p.icrc = Icrc::NotVerifiable;
    s.send(&[3]);
    let r = s.replay();
    let f = flow(&r, a_to_b());
    assert_eq!(f.frames, 4);
    assert_eq!(f.rare().icrc_errors, 1);
    assert_eq!(seq_counts(f), [1, 2, 2, 0, 0, 0, 0]);
    assert_eq!(f.messages(), 2);
    assert_eq!((r.capture.icrc_errors, r.capture.malformed_frames), (1, 1));
}

#[test]
fn truncated_frames_still_sequence() {
    // A frame cut by the capture was on the wire whole: its PSN counts.
    let mut s = Seq::default();
    s.send(&[0]);
    let p = s.req(SEND_ONLY, 1);
    p.truncated = true;
    p.icrc = Icrc::NotVerifiable;
    s.send(&[2]);
    let r = s.replay();
    assert_eq!(seq_counts(flow(&r, a_to_b())), [0; 7]);
    assert_eq!((r.capture.truncated_frames, r.capture.icrc_errors), (1, 0));
}

// ---------------------------------------------------------------- §6.4 ECN / CNP, latency

#[test]
fn ecn_and_cnp_attribution() {
    // A's request at 0 is CE-marked; ACK(0) pairs; B sends a CNP to QP_A (B -> A flow).
    let mut s = Seq::default();
    let p = s.req(SEND_ONLY, 0);
    p.ecn = 0b11;
    p.ack_req = true;
    p.time_ns = 1_000;
    s.ack(0);
    s.pkts.last_mut().unwrap().time_ns = 5_000;
    let cnp = s.resp(CNP, 0, None);
    cnp.time_ns = 6_000;
    let r = s.replay();
    let req = flow(&r, a_to_b());
    let rev = flow(&r, b_to_a());
    assert_eq!(
        (
            req.rare().ecn_ce,
            rev.rare().cnps,
            req.rare().throttled_by_cnps,
            rev.rare().throttled_by_cnps
        ),
        (1, 1, 1, 0)
    );
    let lat = req.latency().summary();
    assert_eq!((lat.samples, lat.p50, lat.max), (1, 4_000, 4_000));
    assert_eq!(kinds(&r), [(1, "ecn_ce"), (3, "cnp")]);

    // A flow of CNPs only is transport CNP and, unpaired, throttles nothing.
    let mut s = Seq::default();
    s.resp(CNP, 0, None);
    let r = s.replay();
    assert_eq!(flow(&r, b_to_a()).transport_name(), "CNP");
}

/// CNP attribution over 100 flows (the end has the flows that saw CNPs set their peers'
/// count): each requester is throttled by the CNPs of its own connection, and only those.
#[test]
fn cnp_attribution_over_many_flows() {
    let mut pkts: Vec<PacketEvent> = Vec::new();
    let mut requests = Vec::new();
    for i in 0..50u8 {
        let fwd = FlowKey {
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 1, i)).into(),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 2, i)).into(),
            dest_qp: QP_B,
        };
        let frame = pkts.len() as u64 + 1;
        let mut req = PacketEvent::new(frame, SEND_ONLY, QP_B, 0);
        req.key = fwd;
        req.ack_req = true;
        pkts.push(req);
        let mut ack = PacketEvent::new(frame + 1, ACKNOWLEDGE, QP_A, 0);
        ack.key = fwd.reverse(QP_A);
        ack.aeth = Some((Syndrome::ACK_UNLIMITED, 0));
        pkts.push(ack);
        let cnps = u64::from(i % 3);
        for c in 0..cnps {
            let mut cnp = PacketEvent::new(frame + 2 + c, CNP, QP_A, 0);
            cnp.key = fwd.reverse(QP_A);
            pkts.push(cnp);
        }
        requests.push((fwd, cnps));
    }
    let mut e = Engine::new(EngineConfig::default());
    for p in &pkts {
        e.packet(p);
    }
    let r = e.finish();
    assert_eq!(r.flows.len(), 100);
    for (fwd, cnps) in requests {
        let req = flow(&r, fwd);
        let rev = flow(&r, fwd.reverse(QP_A));
        assert_eq!(
            (
                rev.rare().cnps,
                req.rare().throttled_by_cnps,
                rev.rare().throttled_by_cnps
            ),
            (cnps, cnps, 0),
            "{fwd}"
        );
    }
}

#[test]
fn ambiguous_psn_agreement_is_not_a_guess() {
    // Two request flows from A to B (QPs 0x22 and 0x23) both hold PSN 5: an ACK at 5 from B
    // to A cannot tell which one it answers: no pairing. An ACK at 20 (only the second
    // flow consumed it) pairs that one.
    let mut s = Seq::default();
    s.send(&[0, 5]);
    for psn in [5, 20] {
        s.req(SEND_ONLY, psn).key.dest_qp = 0x23;
    }
    s.send(&[6]);
    s.ack(5);
    let r = s.replay();
    assert!(r.flows.iter().all(|f| f.peer().is_none()));
    s.ack(20);
    let r = s.replay();
    let second = r.flows.iter().find(|f| f.key.dest_qp == 0x23).unwrap();
    assert_eq!(second.peer(), Some(id(&r, b_to_a())));
    assert_eq!(flow(&r, a_to_b()).peer(), None);
}

#[test]
fn every_event_kind_has_a_name_round_trip() {
    for k in Kind::ALL {
        assert_eq!(Kind::from_name(k.name()), Some(k));
    }
}

// ---------------------------------------------------------------- real captures

fn real_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/captures/real");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("skipping: {} is absent", dir.display());
        None
    }
}

fn analyze_json(path: &Path) -> serde_json::Value {
    let mut cfg = AnalyzeConfig::new(vec![path.to_path_buf()]);
    cfg.format = AnalyzeFormat::Json;
    serde_json::from_str(&analyze::report_string(&cfg).unwrap()).unwrap()
}

fn analyze_text(dir: &Path, name: &str) -> String {
    let mut cfg = AnalyzeConfig::new(vec![dir.join(name)]);
    cfg.events = 15;
    analyze::report_string(&cfg)
        .unwrap()
        .replace(&dir.display().to_string(), "<real>")
}

fn flows(v: &serde_json::Value) -> &Vec<serde_json::Value> {
    v["flows"].as_array().unwrap()
}

/// What tshark shows of a capture's RoCE requests and ACKs, per flow key `(src, dst,
/// destqp)`: request PSNs and ACK PSNs in capture order (the oracle for §6.2's capture loss,
/// read without any rocescope code). `None` when tshark is absent.
#[allow(clippy::type_complexity)]
fn tshark_psns(
    path: &Path,
) -> Option<(
    Vec<((String, String, u32), Vec<u32>)>,
    std::collections::HashMap<(String, String, u32), Vec<u32>>,
)> {
    let out = Command::new("tshark")
        .args(["-r", path.to_str().unwrap(), "-T", "fields"])
        .args([
            "-e",
            "ip.src",
            "-e",
            "ip.dst",
            "-e",
            "infiniband.bth.opcode",
        ])
        .args(["-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let mut requests: Vec<((String, String, u32), Vec<u32>)> = Vec::new();
    let mut acks: std::collections::HashMap<(String, String, u32), Vec<u32>> =
        std::collections::HashMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let opcode: u32 = f[2].parse().unwrap();
        let qp = u32::from_str_radix(f[3].trim_start_matches("0x"), 16).unwrap();
        let key = (f[0].to_owned(), f[1].to_owned(), qp);
        let psn: u32 = f[4].parse().unwrap();
        if opcode == 17 {
            acks.entry(key).or_default().push(psn);
        } else {
            match requests.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(psn),
                None => requests.push((key, vec![psn])),
            }
        }
    }
    Some((requests, acks))
}

/// 24-bit serial distance `a - b`.
fn serial(a: u32, b: u32) -> i64 {
    let d = i64::from(a.wrapping_sub(b) & 0x00FF_FFFF);
    if d >= 1 << 23 { d - (1 << 24) } else { d }
}

/// The Mellanox capture was taken by a host sniffer that missed most packets: every request
/// flow jumps over PSNs (311 gaps) with no NAK, no retransmission and no late packet. The
/// responder's ACKs (RC ACKs are cumulative and in order) cover 5788 of the missing PSNs:
/// the network delivered them and only the capture missed them, so they are `not_captured`.
/// The 1124 PSNs above each flow's last captured ACK stay `lost` and `unrecovered` (nothing
/// in the capture says they arrived). Both numbers are recomputed here from tshark's fields.
#[test]
fn real_mlx_rocev2_capture_loss_not_network_loss() {
    let Some(dir) = real_dir() else { return };
    let path = dir.join("mlx-rocev2-32qp.pcap");
    let v = analyze_json(&path);
    assert_eq!(v["capture"]["frames"], 708);
    assert_eq!(v["capture"]["roce_frames"], 708);
    assert_eq!(v["capture"]["icrc_errors"], 0);
    assert_eq!(v["capture"]["icrc_unreliable"], false);
    let flows = flows(&v);
    assert_eq!(flows.len(), 32);
    let sum = |k: &str| -> u64 { flows.iter().map(|f| f[k].as_u64().unwrap()).sum() };
    assert_eq!(sum("psn_gaps"), 311);
    assert_eq!(sum("not_captured"), 5788);
    assert_eq!(sum("lost"), 1124);
    assert_eq!(sum("unrecovered"), 1124);
    for f in flows {
        assert_eq!(f["transport"], "RC");
        for k in [
            "retransmissions",
            "duplicates",
            "out_of_order",
            "implied_timeouts",
        ] {
            assert_eq!(f[k], 0, "{k} in {f}");
        }
        for (k, n) in f["naks"].as_object().unwrap() {
            assert_eq!(n, 0, "nak {k} in {f}");
        }
        for (k, n) in f["conformance"].as_object().unwrap() {
            assert_eq!(n, 0, "conformance {k} in {f}");
        }
        // both directions are paired by PSN agreement (no CM in this capture)
        assert!(f["peer"].is_u64(), "{f}");
    }
    // The oracle: per request flow, the PSNs tshark never shows between the first and the
    // highest, split at the highest PSN its responder ACKed (ACK flow = the reverse address
    // pair's one flow with an ACK within the request flow's PSNs or 1024 before them).
    let Some((requests, acks)) = tshark_psns(&path) else {
        eprintln!("skipping the tshark oracle: tshark is absent");
        return;
    };
    let (mut not_captured, mut unrecovered) = (0u64, 0u64);
    for ((src, dst, _), psns) in &requests {
        let first = psns[0];
        let mut expected = 0i64;
        let mut missing = std::collections::BTreeSet::new();
        for &p in psns {
            let d = serial(p, first);
            if d > expected {
                missing.extend(expected..d);
            }
            expected = expected.max(d + 1);
            missing.remove(&d);
        }
        let mine: Vec<&Vec<u32>> = acks
            .iter()
            .filter(|((s, d, _), a)| {
                s == dst
                    && d == src
                    && a.iter()
                        .any(|&q| (-1024..expected).contains(&serial(q, first)))
            })
            .map(|(_, a)| a)
            .collect();
        assert_eq!(mine.len(), 1, "one ACK flow for {src} > {dst}");
        let highest = mine[0].iter().map(|&q| serial(q, first)).max().unwrap();
        let covered = missing.iter().filter(|&&m| m <= highest).count() as u64;
        not_captured += covered;
        unrecovered += missing.len() as u64 - covered;
    }
    assert_eq!((not_captured, unrecovered), (5788, 1124));
}

#[test]
fn real_nvmeof_cm_pairing_and_read() {
    let Some(dir) = real_dir() else { return };
    let path = dir.join("nvmeof-discover.pcap");
    let v = analyze_json(&path);
    let flows = flows(&v);
    let rc: Vec<&serde_json::Value> = flows.iter().filter(|f| f["transport"] == "RC").collect();
    assert_eq!(rc.len(), 2);
    assert_eq!(rc[0]["peer"], rc[1]["id"]);
    assert_eq!(rc[1]["peer"], rc[0]["id"]);
    let reader = rc.iter().find(|f| f["read_requests"] == 1).expect("a READ");
    assert_eq!(reader["read_response_gaps"], 0);
    assert_eq!(reader["unanswered_reads"], 0);
    let responder = rc.iter().find(|f| f["id"] == reader["peer"]).unwrap();
    assert!(responder["read_responses"].as_u64().unwrap() >= 1);
    // The pairing comes from the CM exchange: the engine marks CM-paired flows.
    let mut cfg = AnalyzeConfig::new(vec![path]);
    cfg.format = AnalyzeFormat::Json;
    let replay = analyze::replay(&cfg).unwrap();
    let cm_paired = replay
        .flows
        .iter()
        .filter(|f| f.cm_paired && f.peer().is_some())
        .count();
    assert_eq!(cm_paired, 2);
    for f in &replay.flows {
        assert_eq!(seq_counts(f), [0; 7], "{}", replay.key(f));
    }
}

/// The three offload-sniffer captures write a wrong ICRC in every frame (the sniffer copies
/// the packet before the NIC computes it): §6.5 finds their ICRCs unreliable, counts the
/// errors without events and sequences the frames; `--icrc trust` keeps the strict rule
/// (every frame corrupted, nothing sequenced).
#[test]
fn real_sniffers_have_unreliable_icrcs() {
    let Some(dir) = real_dir() else { return };
    for (name, errors) in [
        ("sniffer-rc-bad-icrc.pcap", 21),
        ("sniffer-uc-send.pcap", 17),
        ("sniffer-dc-vendor-opcodes.pcap", 19),
    ] {
        let v = analyze_json(&dir.join(name));
        assert_eq!(v["capture"]["icrc_unreliable"], true, "{name}");
        assert_eq!(v["capture"]["icrc_errors"], errors, "{name}");
        let per_flow: u64 = flows(&v)
            .iter()
            .map(|f| f["icrc_errors"].as_u64().unwrap())
            .sum();
        assert_eq!(per_flow, errors, "{name}");
        assert!(
            !v["events"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["kind"] == "icrc_error"),
            "{name}"
        );
        // the flows carrying requests take part: sequenced (or counted, DC)
        assert!(
            flows(&v)
                .iter()
                .any(|f| f["messages"].as_u64().unwrap() > 0),
            "{name}"
        );
    }
    let v = analyze_json(&dir.join("sniffer-rc-bad-icrc.pcap"));
    let rc = flows(&v);
    assert_eq!(rc.len(), 2);
    let writer = rc.iter().find(|f| f["first_psn"].is_u64()).unwrap();
    assert_eq!(writer["messages"], 16);
    assert_eq!(writer["psn_gaps"], 0);
    assert_eq!(writer["lost"], 0);
    // the WRITE flow and its ACK flow pair by PSN agreement
    assert!(writer["peer"].is_u64(), "{writer}");
    assert_eq!(rc[0]["peer"], rc[1]["id"]);
    // --icrc trust: every frame is a corrupted one, nothing takes part
    let mut cfg = AnalyzeConfig::new(vec![dir.join("sniffer-rc-bad-icrc.pcap")]);
    cfg.format = AnalyzeFormat::Json;
    cfg.icrc = rocescope::replay::IcrcMode::Trust;
    let v: serde_json::Value =
        serde_json::from_str(&analyze::report_string(&cfg).unwrap()).unwrap();
    assert_eq!(v["capture"]["icrc_unreliable"], false);
    assert!(
        flows(&v)
            .iter()
            .all(|f| f["first_psn"].is_null() && f["messages"] == 0)
    );
}

#[test]
fn real_nccl_snaplen_truncated_not_icrc() {
    let Some(dir) = real_dir() else { return };
    let v = analyze_json(&dir.join("nccl-uc-write-snaplen.pcap"));
    // 489 frames cut to 243 bytes (records claim orig_len == caplen) are truncated, never
    // "ICRC bad". The other 20 RoCE frames were captured whole and really do carry a wrong
    // ICRC (checked independently of this code), so 20 ICRC errors are expected.
    assert_eq!(v["capture"]["truncated_frames"], 489);
    assert_eq!(v["capture"]["icrc_errors"], 20);
    assert_eq!(v["capture"]["malformed_frames"], 0);
    assert_eq!(v["capture"]["roce_frames"], 509);
    // the cut frames still sequence: UC WRITE streams in order
    for f in flows(&v).iter().filter(|f| f["transport"] == "UC") {
        assert_eq!(f["psn_gaps"], 0, "{f}");
    }
}

#[test]
fn real_text_snapshots() {
    let Some(dir) = real_dir() else { return };
    for name in [
        "mlx-rocev2-32qp.pcap",
        "nvmeof-discover.pcap",
        "sniffer-rc-bad-icrc.pcap",
        "nccl-uc-write-snaplen.pcap",
    ] {
        let text = analyze_text(&dir, name);
        insta::assert_snapshot!(format!("text_{}", name.replace(['-', '.'], "_")), text);
    }
}

#[test]
fn every_real_capture_analyzes() {
    let Some(dir) = real_dir() else { return };
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    names.sort();
    for p in names {
        for format in [AnalyzeFormat::Text, AnalyzeFormat::Json, AnalyzeFormat::Csv] {
            let mut cfg = AnalyzeConfig::new(vec![p.clone()]);
            cfg.format = format;
            analyze::report_string(&cfg).unwrap();
        }
    }
}

// ---------------------------------------------------------------- the binary

fn rocescope(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .output()
        .expect("run rocescope")
}

#[test]
fn fail_on_loss_exit_codes() {
    let Some(dir) = real_dir() else { return };
    let lossy = dir.join("mlx-rocev2-32qp.pcap");
    let clean = dir.join("cm-send-write.pcap");
    let out = rocescope(&[
        "analyze",
        "--fail-on",
        "loss",
        "-f",
        "json",
        lossy.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.stdout.is_empty());
    let out = rocescope(&["analyze", "--fail-on", "loss", clean.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // the sniffer's wrong ICRCs are its own, not corrupted frames (§6.5) ...
    let sniffer = dir.join("sniffer-rc-bad-icrc.pcap");
    let out = rocescope(&[
        "analyze",
        "--fail-on",
        "integrity",
        "-q",
        sniffer.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    // ... unless told to trust them
    let out = rocescope(&[
        "analyze",
        "--fail-on",
        "integrity",
        "--icrc",
        "trust",
        "-q",
        sniffer.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn bad_arguments_exit_2() {
    let out = rocescope(&["analyze", "--fail-on", "bogus_kind", "x.pcap"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bogus_kind") && err.lines().count() == 1,
        "{err}"
    );
    let out = rocescope(&["analyze", "--link-speed", "fast", "x.pcap"]);
    assert_eq!(out.status.code(), Some(2));
    let out = rocescope(&["analyze", "/nonexistent/capture.pcap"]);
    assert_eq!(out.status.code(), Some(2));
    let out = rocescope(&["analyze", "--format", "xml", "x.pcap"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn output_file_and_csv() {
    let Some(dir) = real_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out_path = tmp.path().join("flows.csv");
    let out = rocescope(&[
        "analyze",
        "-f",
        "csv",
        "-o",
        out_path.to_str().unwrap(),
        dir.join("nvmeof-discover.pcap").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let csv = std::fs::read_to_string(&out_path).unwrap();
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("id,src,dst,destqp,transport,peer,"));
    let cols = header.split(',').count();
    assert_eq!(lines.clone().count(), 4);
    assert!(lines.all(|l| l.split(',').count() == cols));
}

// ---------------------------------------------------------------- no panic, invariants

mod props {
    use super::*;
    use proptest::prelude::*;

    fn opcode() -> impl Strategy<Value = Opcode> {
        prop::sample::select(vec![
            SEND_ONLY,
            WRITE_FIRST,
            WRITE_MIDDLE,
            WRITE_LAST,
            READ_REQUEST,
            READ_RESP_FIRST,
            READ_RESP_MIDDLE,
            READ_RESP_LAST,
            READ_RESP_ONLY,
            ACKNOWLEDGE,
            UC_SEND_ONLY,
            UD_SEND_ONLY,
            CNP,
            Opcode(0x13),
            Opcode(0x12),
            Opcode(0x1f),
            Opcode(0xff),
        ])
    }

    proptest! {
        /// Any sequence of packets, in any direction, with PSNs near the wrap and any READ
        /// length: no panic, and the counters stay consistent.
        #[test]
        fn engine_never_panics(
            pkts in prop::collection::vec(
                (opcode(), 0u32..40, any::<bool>(), any::<u32>(), 0u8..6, any::<u8>()),
                0..120,
            )
        ) {
            let mut e = Engine::new(EngineConfig::default());
            for (i, (op, psn, reverse, dmalen, flags, syn)) in pkts.into_iter().enumerate() {
                let mut p = PacketEvent::new(i as u64 + 1, op, if reverse { QP_A } else { QP_B }, psn.wrapping_sub(20));
                p.key = if reverse { b_to_a() } else { a_to_b() };
                p.dmalen = Some(dmalen >> (dmalen % 32));
                p.aeth = Some((Syndrome(syn), 0));
                p.ack_req = flags & 1 == 1;
                p.payload_len = if flags == 2 { 1024 } else { 16 };
                if flags == 5 {
                    p.icrc = Icrc::Invalid { expected: 0, found: 1 };
                }
                p.ecn = flags & 3;
                e.packet(&p);
            }
            let r = e.finish();
            for f in &r.flows {
                let c = f.psn().counters();
                prop_assert!(c.lost >= c.unrecovered);
                prop_assert!(c.retransmissions >= c.implied_timeouts);
                prop_assert!(f.frames >= c.messages);
            }
            prop_assert!(r.events.windows(2).all(|w| w[0].frame <= w[1].frame));
        }
    }
}

/// A pcap of one Ethernet/IPv4/UDP frame to port 53 (DNS): nothing rocescope decodes.
fn dns_only_pcap(path: &Path) {
    let mut frame = vec![0u8; 60];
    frame[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = [
        0x45, 0, 0, 32, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    frame[14..34].copy_from_slice(&ip);
    frame[34..42].copy_from_slice(&[0x30, 0x39, 0, 53, 0, 12, 0, 0]);
    let mut file = Vec::new();
    // pcap, microseconds, Ethernet
    file.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    file.extend_from_slice(&2u16.to_le_bytes());
    file.extend_from_slice(&4u16.to_le_bytes());
    file.extend_from_slice(&[0; 8]);
    file.extend_from_slice(&65535u32.to_le_bytes());
    file.extend_from_slice(&1u32.to_le_bytes());
    for t in [1u32, 0, 60, 60] {
        file.extend_from_slice(&t.to_le_bytes());
    }
    file.extend_from_slice(&frame);
    std::fs::write(path, file).unwrap();
}

/// §6: a capture with no RoCE, InfiniBand or PFC frame gets one stderr line naming the
/// link types seen; the report is still written and the exit status is 0.
#[test]
fn nothing_decodable_is_said_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dns.pcap");
    dns_only_pcap(&p);
    let out = rocescope(&["analyze", "-f", "json", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("no frame decodes as RoCE") && lines[0].contains("ETHERNET"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["capture"]["frames"], 1);
    assert_eq!(v["flows"].as_array().unwrap().len(), 0);
    // -q keeps stderr quiet
    let out = rocescope(&["analyze", "-q", p.to_str().unwrap()]);
    assert!(out.stderr.is_empty(), "{out:?}");
}

/// The sniffer notice: one stderr line for the file whose ICRCs are not the wire's.
#[test]
fn unreliable_icrc_notice_names_the_file() {
    let Some(dir) = real_dir() else { return };
    let p = dir.join("sniffer-uc-send.pcap");
    let out = rocescope(&["analyze", "-f", "json", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("sniffer-uc-send.pcap") && err.contains("ICRC"),
        "{err}"
    );
    let out = rocescope(&["analyze", "--icrc", "trust", p.to_str().unwrap()]);
    assert!(out.stderr.is_empty(), "{out:?}");
}

/// `--flows N`: the N flows with the most findings (loss first), then one line for the rest.
#[test]
fn text_report_lists_the_worst_flows_first() {
    let Some(dir) = real_dir() else { return };
    let p = dir.join("mlx-rocev2-32qp.pcap");
    let v = analyze_json(&p);
    let mut lost: Vec<(u64, u64)> = flows(&v)
        .iter()
        .map(|f| (f["lost"].as_u64().unwrap(), f["id"].as_u64().unwrap()))
        .collect();
    lost.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let out = rocescope(&["analyze", "--flows", "5", "-q", p.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("id "))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(table.len(), 6, "{text}");
    let ids: Vec<u64> = table[..5]
        .iter()
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    let want: Vec<u64> = lost[..5].iter().map(|x| x.1).collect();
    assert_eq!(ids, want, "{text}");
    assert!(table[5].contains("27 more flows"), "{}", table[5]);
    // all of them
    let out = rocescope(&["analyze", "--flows", "all", "-q", p.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("more flows"), "{text}");
    // the header says in words how much the network lost and the capture missed
    assert!(
        text.contains("0 PSNs lost in the network")
            && text.contains("5788 PSNs missed by the capture only")
            && text.contains("1124 PSNs still missing"),
        "{text}"
    );
}
