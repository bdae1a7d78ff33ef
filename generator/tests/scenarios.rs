//! Every shipped scenario generates, deterministically, frames that dissect
//! strictly, with a valid ICRC unless a fault corrupted it; the truth agrees
//! with counts taken independently from the frames.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rocescope_dissectors::ib::aeth::{AethKind, NakCode};
use rocescope_dissectors::icrc::IcrcStatus;
use rocescope_dissectors::stack::{self, dissect};
use rocescope_dissectors::{Opcode, Operation};
use rocescope_generator::{FlowTruth, Generator, MAX_FRAME_LEN, Scenario, Truth};

fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

fn load(name: &str) -> Scenario {
    let path = scenario_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    Scenario::from_toml(&text, &path.display().to_string()).unwrap_or_else(|e| panic!("{e}"))
}

struct Frame {
    time: u64,
    bytes: Vec<u8>,
    orig_len: usize,
}

fn generate(sc: &Scenario, seed: u64) -> (Vec<Frame>, Truth) {
    let mut g = Generator::new(sc, seed);
    let mut buf = vec![0u8; MAX_FRAME_LEN];
    let mut out = Vec::new();
    while let Some(r) = g.next_frame(&mut buf) {
        let f = r.unwrap();
        out.push(Frame {
            time: f.time_ns,
            bytes: buf[..f.len].to_vec(),
            orig_len: f.orig_len,
        });
    }
    let truth = g.truth();
    (out, truth)
}

#[derive(Default, Debug)]
struct Counted {
    frames: u64,
    naks_seq: u64,
    naks_rnr: u64,
    acks: u64,
    cnps: u64,
    ce: u64,
    icrc_bad: u64,
    read_responses: u64,
    atomic_acks: u64,
}

/// Check every frame and count per flow key independently of the generator.
fn check_frames(name: &str, frames: &[Frame]) -> HashMap<(String, String, u32), Counted> {
    let mut flows: HashMap<(String, String, u32), Counted> = HashMap::new();
    let mut last = 0;
    for (i, f) in frames.iter().enumerate() {
        assert!(f.time >= last, "{name}: frame {i} goes back in time");
        last = f.time;
        let truncated = f.bytes.len() < f.orig_len;
        let d = if truncated {
            stack::dissect_lax(&f.bytes).0
        } else {
            dissect(&f.bytes).unwrap_or_else(|e| panic!("{name}: frame {i}: {e}"))
        };
        if d.mac_control().is_some() {
            continue;
        }
        let roce = d
            .roce
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: frame {i} is not RoCE"));
        let (src, dst) = if let Some(ip) = d.ipv4() {
            (ip.src_addr().to_string(), ip.dst_addr().to_string())
        } else {
            let ip = d.ipv6().unwrap();
            (ip.src_addr().to_string(), ip.dst_addr().to_string())
        };
        let key = (src, dst, roce.bth.dest_qp().value());
        let c = flows.entry(key).or_default();
        c.frames += 1;
        let ecn = d
            .ipv4()
            .map_or_else(|| d.ipv6().unwrap().ecn(), |ip| ip.ecn());
        let status = d.icrc_status();
        let op = roce.opcode();
        if ecn == 3
            && (op.is_request() || op.is_response())
            && !matches!(status, IcrcStatus::Invalid { .. })
        {
            c.ce += 1;
        }
        if truncated {
            assert_eq!(status, IcrcStatus::NotVerifiable, "{name}: frame {i}");
            continue;
        }
        match status {
            IcrcStatus::Valid => {}
            IcrcStatus::Invalid { .. } => {
                c.icrc_bad += 1;
                continue;
            }
            IcrcStatus::NotVerifiable => panic!("{name}: frame {i}: ICRC not verifiable"),
        }
        if op == Opcode::CNP {
            c.cnps += 1;
        }
        match roce.info.map(|i| i.operation) {
            Some(Operation::Acknowledge) => match roce.exts.aeth().unwrap().syndrome().kind() {
                AethKind::Ack { .. } => c.acks += 1,
                AethKind::Nak(NakCode::PSN_SEQUENCE_ERROR) => c.naks_seq += 1,
                AethKind::RnrNak { .. } => c.naks_rnr += 1,
                k => panic!("{name}: unexpected AETH {k:?}"),
            },
            Some(Operation::ReadResponse) => c.read_responses += 1,
            Some(Operation::AtomicAcknowledge) => c.atomic_acks += 1,
            _ => {}
        }
    }
    flows
}

fn flow<'t>(t: &'t Truth, src: &str, dst: &str, qp: u32) -> &'t FlowTruth {
    t.flows
        .iter()
        .find(|f| f.src == src && f.dst == dst && f.destqp == qp)
        .unwrap_or_else(|| panic!("no flow {src} -> {dst} qp {qp}"))
}

fn run(name: &str) -> (Vec<Frame>, Truth) {
    let sc = load(name);
    let (a, truth) = generate(&sc, 7);
    let (b, truth_b) = generate(&sc, 7);
    assert_eq!(a.len(), b.len(), "{name}: not deterministic");
    for (x, y) in a.iter().zip(&b) {
        assert!(
            x.time == y.time && x.bytes == y.bytes,
            "{name}: not deterministic"
        );
    }
    assert_eq!(truth, truth_b);
    assert!(!a.is_empty(), "{name}: no frames");
    assert!(
        a.len() < 20_000,
        "{name}: {} frames, keep scenarios small",
        a.len()
    );
    let counted = check_frames(name, &a);
    assert_eq!(truth.capture.frames, a.len() as u64);
    for f in &truth.flows {
        let c = &counted[&(f.src.clone(), f.dst.clone(), f.destqp)];
        assert_eq!(f.frames, c.frames, "{name}: frames of {f:?}");
        assert_eq!(f.acks, c.acks, "{name}: acks of {f:?}");
        assert_eq!(f.naks.psn_seq_err, c.naks_seq, "{name}: NAKs of {f:?}");
        assert_eq!(f.naks.rnr, c.naks_rnr, "{name}: RNR NAKs of {f:?}");
        assert_eq!(f.cnps, c.cnps, "{name}: CNPs of {f:?}");
        assert_eq!(f.ecn_ce, c.ce, "{name}: CE of {f:?}");
        assert_eq!(f.icrc_errors, c.icrc_bad, "{name}: ICRC errors of {f:?}");
        assert_eq!(f.read_responses, c.read_responses, "{name}: {f:?}");
        assert_eq!(f.atomic_acks, c.atomic_acks, "{name}: {f:?}");
    }
    if std::env::var_os("SHOW_TRUTH").is_some() {
        eprintln!("{name}: {}", serde_json::to_string_pretty(&truth).unwrap());
    }
    (a, truth)
}

#[test]
fn clean_write() {
    let (_, t) = run("clean_write.toml");
    let f = flow(&t, "10.0.0.1", "10.0.0.2", 0x12);
    assert_eq!(f.transport, "RC");
    assert_eq!(f.messages, Some(60));
    assert_eq!(f.first_psn, Some(Some(1000)));
    assert_eq!(f.last_psn, Some(Some(1000 + 60 * 16 - 1)));
    for v in [
        f.psn_gaps,
        f.lost,
        f.duplicates,
        f.retransmissions,
        f.out_of_order,
    ] {
        assert_eq!(v, Some(0));
    }
    let r = flow(&t, "10.0.0.2", "10.0.0.1", 0x11);
    assert!(r.acks >= 120);
}

/// Request PSNs of one flow in capture order (valid frames only).
fn request_psns(frames: &[Frame], dst_qp: u32) -> Vec<u32> {
    frames
        .iter()
        .filter_map(|f| {
            let d = dissect(&f.bytes).ok()?;
            let r = d.roce.as_ref()?;
            (r.opcode().is_request()
                && r.bth.dest_qp().value() == dst_qp
                && d.icrc_status() == IcrcStatus::Valid)
                .then(|| r.bth.psn().value())
        })
        .collect()
}

/// (repeated packets, PSNs first seen after a higher PSN) counted from the frames.
fn repeats_and_late(psns: &[u32]) -> (u64, u64) {
    let mut seen = std::collections::HashSet::new();
    let mut high = None;
    let (mut repeats, mut late) = (0, 0);
    for &p in psns {
        if !seen.insert(p) {
            repeats += 1;
        } else if high.is_some_and(|h| p < h) {
            late += 1;
        }
        high = Some(high.map_or(p, |h: u32| h.max(p)));
    }
    (repeats, late)
}

#[test]
fn loss_gbn_receiver() {
    let (frames, t) = run("loss_gbn.toml");
    let f = flow(&t, "10.0.6.1", "10.0.6.2", 0x601);
    let r = flow(&t, "10.0.6.2", "10.0.6.1", 0x600);
    let (repeats, late) = repeats_and_late(&request_psns(&frames, 0x601));
    // two drops NAKed, the tail recovered by the timeout
    assert_eq!(r.naks.psn_seq_err, 2);
    assert_eq!(f.psn_gaps, Some(2));
    assert_eq!(f.lost, Some(late));
    assert_eq!(late, 2);
    assert_eq!(f.unrecovered, Some(0));
    assert_eq!(f.duplicates, Some(repeats));
    assert_eq!(f.retransmissions, Some(repeats + late));
    // the tail: resent from the last ACK; 199 itself arrives in order
    assert_eq!(f.implied_timeouts, Some(1));
    assert_eq!(f.messages, Some(50));
    assert_eq!(f.last_psn, Some(Some(199)));
}

#[test]
fn loss_gbn_sender() {
    let (frames, t) = run("loss_gbn_sender.toml");
    let f = flow(&t, "10.0.6.1", "10.0.6.2", 0x601);
    let r = flow(&t, "10.0.6.2", "10.0.6.1", 0x600);
    let (repeats, late) = repeats_and_late(&request_psns(&frames, 0x601));
    // every dropped packet is in the capture: no gap, only duplicates
    assert_eq!(late, 0);
    assert_eq!(r.naks.psn_seq_err, 2);
    assert_eq!(f.psn_gaps, Some(0));
    assert_eq!(f.lost, Some(0));
    assert_eq!(f.duplicates, Some(repeats));
    assert_eq!(f.retransmissions, Some(repeats));
    assert_eq!(f.implied_timeouts, Some(1));
}

#[test]
fn seed_changes_random_faults() {
    let sc = load("mixed.toml");
    let (a, _) = generate(&sc, 1);
    let (b, _) = generate(&sc, 2);
    assert!(a.len() != b.len() || a.iter().zip(&b).any(|(x, y)| x.bytes != y.bytes));
}

#[test]
fn read_heavy() {
    run("read_heavy.toml");
}
#[test]
fn send_imm() {
    run("send_imm.toml");
}
#[test]
fn ud() {
    run("ud.toml");
}
#[test]
fn ipv6() {
    run("ipv6.toml");
}
#[test]
fn vlan_pcp3() {
    run("vlan_pcp3.toml");
}
#[test]
fn reorder() {
    let (_, t) = run("reorder.toml");
    let uc = flow(&t, "10.0.7.1", "10.0.7.2", 0x701);
    assert_eq!(uc.transport, "UC");
    assert!(uc.out_of_order.unwrap() > 0);
    assert_eq!(uc.out_of_order, uc.psn_gaps);
    assert_eq!(uc.lost, Some(0));
}
#[test]
fn incast_ecn() {
    let (_, t) = run("incast_ecn.toml");
    for (i, qp) in [(1, 0x801), (2, 0x802), (3, 0x803)] {
        let back = flow(&t, "10.0.8.10", &format!("10.0.8.{i}"), qp);
        let fwd = flow(&t, &format!("10.0.8.{i}"), "10.0.8.10", qp + 0x10);
        assert!(
            back.cnps > 0 && back.cnps < fwd.ecn_ce,
            "CNPs are rate-limited"
        );
        assert_eq!(fwd.throttled_by_cnps, Some(back.cnps));
    }
}
#[test]
fn pfc_storm() {
    let (_, t) = run("pfc_storm.toml");
    let p3 = t.pfc.iter().find(|p| p.priority == 3).unwrap();
    assert_eq!(p3.storms, 1);
    assert_eq!(p3.paused_ns, 250_000_000);
    assert_eq!(p3.resume_frames, 1);
    assert_eq!(p3.pause_frames, 250);
}
#[test]
fn rnr() {
    run("rnr.toml");
}
#[test]
fn mixed() {
    run("mixed.toml");
}

/// More QPs than 16 bits can number: every one keeps its own id. (Connection ids were 16 bits,
/// and the 65,537th connection and all after it aliased silently to the last id.)
#[test]
fn seventy_thousand_qps_each_keep_their_own_flows() {
    use std::fmt::Write as _;
    const QPS: u32 = 70_000;
    let mut text = String::from(
        "[link]\nstop_ns = 60000000000\nmax_frames = 10000000\n[[host]]\nname = \"a\"\nmac = \"02:00:00:00:00:01\"\nip = \"10.0.0.1\"\n[[host]]\nname = \"b\"\nmac = \"02:00:00:00:00:02\"\nip = \"10.0.0.2\"\n",
    );
    for i in 0..QPS {
        write!(
            text,
            "[[connection]]\nname = \"c{i}\"\ntransport = \"rc\"\nrequester = \"a\"\nresponder = \"b\"\nrequester_qpn = {}\nresponder_qpn = {}\nload = 0.00001\n[[traffic]]\nconnection = \"c{i}\"\nop = \"write\"\nsize = 64\nmessages = 1\n",
            0x1000 + i,
            0x10_0000 + i
        )
        .unwrap();
    }
    let sc = Scenario::from_toml(&text, "many.toml").unwrap_or_else(|e| panic!("{e}"));
    let (frames, truth) = generate(&sc, 1);
    // one WRITE ONLY and its ACK per QP
    assert_eq!(frames.len(), 2 * QPS as usize);
    let mut dst_qps: Vec<u32> = frames
        .iter()
        .filter_map(|f| {
            dissect(&f.bytes)
                .ok()?
                .roce
                .map(|r| r.bth.dest_qp().value())
        })
        .collect();
    dst_qps.sort_unstable();
    dst_qps.dedup();
    assert_eq!(dst_qps.len(), 2 * QPS as usize, "distinct destination QPs");
    assert_eq!(truth.flows.len(), 2 * QPS as usize);
}
