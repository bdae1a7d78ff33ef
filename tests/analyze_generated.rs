//! Every scenario of `generator/scenarios/` generated (seeds 1, 2, 3, 7, 42) and analyzed: the analyze JSON
//! report must equal the generator's truth on every key the truth states (interfaces.md §8:
//! the truth leaves out what §6 leaves to judgement).

use std::path::Path;

use rocescope::analyze::{AnalyzeConfig, json};
use rocescope::capture::Frame;
use rocescope::config::AnalyzeFormat;
use rocescope::frame::FrameView;
use rocescope::replay::{Engine, EngineConfig};
use rocescope_dissectors::stack::DissectOptions as Options;
use rocescope_generator::{Generator, MAX_FRAME_LEN, Scenario};
use serde_json::Value;

mod common;
use common::{check, compare};

/// Analyze a generated scenario in memory; returns (report JSON, truth JSON).
fn run(path: &Path, seed: u64) -> (Value, Value) {
    let text = std::fs::read_to_string(path).unwrap();
    run_text(&text, path, seed)
}

/// [`run`] for scenario text (`path` names it in messages).
fn run_text(text: &str, path: &Path, seed: u64) -> (Value, Value) {
    let scenario = Scenario::from_toml(text, &path.display().to_string())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut g = Generator::new(&scenario, seed);
    let mut buf = vec![0u8; MAX_FRAME_LEN];
    // analyze is told the link speed, as `--link-speed` would (PFC quanta to time)
    let mut engine = Engine::new(EngineConfig {
        link_bps: scenario.link_bps,
        ..EngineConfig::default()
    });
    let options = Options::default();
    let mut number = 0;
    while let Some(r) = g.next_frame(&mut buf) {
        let out = r.unwrap();
        number += 1;
        let frame = Frame {
            number,
            time_ns: out.time_ns,
            caplen: u32::try_from(out.len).unwrap(),
            orig_len: u32::try_from(out.orig_len).unwrap(),
            link: g.link_type(),
            input: 0,
            data: &buf[..out.len],
        };
        engine.frame(&FrameView::new(frame, &options, 0));
    }
    let truth = serde_json::to_value(g.truth()).unwrap();
    let replay = engine.finish();
    let mut cfg = AnalyzeConfig::new(vec![path.to_path_buf()]);
    cfg.format = AnalyzeFormat::Json;
    cfg.link_bps = scenario.link_bps;
    let mut out = Vec::new();
    json::write(&cfg, &replay, &mut out).unwrap();
    (serde_json::from_slice(&out).unwrap(), truth)
}

#[test]
fn generated_scenarios_match_truth() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("generator/scenarios");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty());
    let mut diffs = Vec::new();
    for path in &paths {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        for seed in [1, 2, 3, 7, 42] {
            let name = format!("{name}#{seed}");
            let (got, truth) = run(path, seed);
            check(&name, &got, &truth, &mut diffs);
        }
    }
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

/// A tiny deterministic generator for the scenario parameters below.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[usize::try_from(self.below(items.len() as u64)).unwrap()]
    }
}

/// One scenario with randomly placed faults: RC (sometimes UC) WRITE/SEND/READ
/// traffic on one or two QPs, IPv4 or IPv6, sometimes VLAN-tagged, PSNs that
/// sometimes start just below the 2^24 wrap, one to three faults (drop,
/// duplicate, reorder, corrupt ICRC, ECN CE, capture drop; drops of requests or
/// responses) placed by PSN, every-Nth or probability, captured at the sender or
/// the receiver side; half of them with a NIC misbehaviour knob, and some
/// captured by a sniffer that writes a wrong ICRC in every frame; one in nine native
/// InfiniBand, and some mirrored through ERSPAN III or tunnelled in VXLAN or MPLS.
fn random_scenario(rng: &mut Rng, i: u64) -> String {
    let point = if i.is_multiple_of(2) {
        "receiver"
    } else {
        "sender"
    };
    let v6 = i.is_multiple_of(3);
    let vlan = if i % 4 == 1 {
        "vlan = 100\npcp = 3\n"
    } else {
        ""
    };
    let ip = |h: u64| {
        if v6 {
            format!("fd00::{h}")
        } else {
            format!("10.9.{i}.{h}")
        }
    };
    // one in nine is native InfiniBand: LIDs, and GIDs (a GRH) where the others use IPv6
    let ib = i % 9 == 4;
    let mut text = if ib {
        let gid = |h: u64| {
            if v6 {
                format!("gid = \"fe80::9:{i}:{h}\"\n")
            } else {
                String::new()
            }
        };
        format!(
            "[link]\nkind = \"ib\"\nspeed_gbps = 100\ndelay_ns = 1000\n[capture]\npoint = \"{point}\"\n\
             [[host]]\nname = \"a\"\nlid = {}\n{}\
             [[host]]\nname = \"b\"\nlid = {}\n{}",
            1 + i,
            gid(1),
            0x100 + i,
            gid(2)
        )
    } else {
        // one in five of the others is mirrored or tunnelled
        let encap = match i % 15 {
            2 => "encapsulation = \"erspan3\"\n",
            7 => "encapsulation = \"vxlan\"\n",
            12 => "encapsulation = \"mpls\"\n",
            _ => "",
        };
        format!(
            "[link]\nspeed_gbps = 100\ndelay_ns = 1000\n[capture]\npoint = \"{point}\"\n{encap}\
             [[host]]\nname = \"a\"\nmac = \"02:00:00:00:09:01\"\nip = \"{}\"\n{vlan}\
             [[host]]\nname = \"b\"\nmac = \"02:00:00:00:09:02\"\nip = \"{}\"\n{vlan}",
            ip(1),
            ip(2)
        )
    };
    let qps = 1 + rng.below(2);
    for q in 0..qps {
        let transport = if rng.below(5) == 0 { "uc" } else { "rc" };
        let start_psn = if rng.below(3) == 0 {
            16_777_200 + rng.below(16)
        } else {
            rng.below(100_000)
        };
        let pmtu = rng.pick(&["256", "512", "1024", "2048", "4096"]);
        let ops: &[&str] = if transport == "rc" {
            &["write", "send", "read", "write"]
        } else {
            &["write", "send"]
        };
        let op = rng.pick(ops);
        text += &format!(
            "[[connection]]\nname = \"c{q}\"\ntransport = \"{transport}\"\nrequester = \"a\"\n\
             responder = \"b\"\nrequester_qpn = {}\nresponder_qpn = {}\nstart_psn = {start_psn}\n\
             pmtu = {pmtu}\nack_every = {}\nlocal_ack_timeout = 10\nload = 0.5\n\
             [[traffic]]\nconnection = \"c{q}\"\nop = \"{op}\"\nsize_min = 1\nsize_max = {}\nmessages = {}\n",
            0x100 + q * 2,
            0x101 + q * 2,
            1 + rng.below(16),
            1 + rng.below(12_000),
            10 + rng.below(30),
        );
    }
    for _ in 0..1 + rng.below(3) {
        let conn = format!("c{}", rng.below(qps));
        let mut kind = rng.pick(&[
            "drop",
            "drop",
            "duplicate",
            "reorder",
            "corrupt_icrc",
            "ecn_ce",
            "capture_drop",
            "capture_drop",
        ]);
        if ib && kind == "ecn_ce" {
            kind = "corrupt_icrc"; // no IP header, no ECN bits
        }
        let place = match rng.below(3) {
            0 if kind != "ecn_ce" => format!("psn = {}", rng.below(100_000)),
            1 if kind != "ecn_ce" => format!("every = {}", 5 + rng.below(40)),
            _ => format!("probability = 0.0{}", 1 + rng.below(5)),
        };
        let extra = match kind {
            "reorder" => "delay_ns = 600\n",
            // a drop or a capture drop of responses (ACKs, NAKs, READ responses) now and then
            "drop" | "capture_drop" if rng.below(3) == 0 => "direction = \"response\"\n",
            _ => "",
        };
        text += &format!("[[fault]]\nkind = \"{kind}\"\nconnection = \"{conn}\"\n{place}\n{extra}");
    }
    // and a misbehaving NIC now and then (§6.7's conformance findings have these causes)
    if rng.below(2) == 0 {
        let conn = format!("c{}", rng.below(qps));
        let knob = match rng.below(7) {
            0 => format!("wrong_resend\"\noffset = {}", 1 + rng.below(3)),
            1 => "double_nak\"".to_owned(),
            2 => format!("ack_regression\"\nback = {}", 1 + rng.below(4)),
            3 => "msn_regression\"".to_owned(),
            4 => "read_wrong_restart\"".to_owned(),
            5 => "fatal_nak\"".to_owned(),
            _ => "ignore_fatal_nak\"".to_owned(),
        };
        let place = match rng.below(3) {
            0 => format!("count = {}\n", 1 + rng.below(3)),
            1 => format!("probability = 0.0{}\n", 1 + rng.below(9)),
            _ => format!("every = {}\n", 3 + rng.below(20)),
        };
        text += &format!("[[fault]]\nkind = \"{knob}\nconnection = \"{conn}\"\n{place}");
        if knob.starts_with("fatal_nak") && rng.below(2) == 0 {
            text += &format!("[[fault]]\nkind = \"ignore_fatal_nak\"\nconnection = \"{conn}\"\n");
        }
    }
    // an offload sniffer's capture, once in a while (§6.5)
    if rng.below(6) == 0 {
        text = text.replacen("[capture]\n", "[capture]\nicrc = \"garbage\"\n", 1);
    }
    text
}

/// interfaces.md §6 against the generator's truth on scenarios nobody wrote by
/// hand: [`RANDOM_SCENARIOS`] of them, each with its own seed.
#[test]
fn random_fault_placement_matches_truth() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut diffs = Vec::new();
    // what the truths stated, summed: the faults must have had consequences
    let keys = [
        "psn_gaps",
        "lost",
        "duplicates",
        "retransmissions",
        "out_of_order",
        "implied_timeouts",
        "ecn_ce",
        "icrc_errors",
        "not_captured",
    ];
    let mut totals = [0u64; 9];
    let mut native = 0;
    let mut conformance = std::collections::BTreeMap::<String, u64>::new();
    let (mut flows, mut unreliable, mut timed) = (0, 0, 0);
    for i in 0..RANDOM_SCENARIOS {
        let text = random_scenario(&mut rng, i);
        let name = format!("random#{i}");
        let (got, truth) = run_text(&text, Path::new(&name), 1000 + i);
        let before = diffs.len();
        for tf in truth["flows"].as_array().unwrap() {
            flows += 1;
            for (k, t) in keys.iter().zip(totals.iter_mut()) {
                *t += tf[*k].as_u64().unwrap_or(0);
            }
            if let Some(c) = tf["conformance"].as_object() {
                for (k, v) in c {
                    *conformance.entry(k.clone()).or_default() += v.as_u64().unwrap();
                }
            }
            if tf["recovery_ns"]["samples"].as_u64().unwrap_or(0) > 0 {
                timed += 1;
            }
        }
        if truth["capture"]["icrc_unreliable"] == true {
            unreliable += 1;
        }
        if truth["capture"]["ib_frames"].as_u64().unwrap_or(0) > 0 {
            native += 1;
        }
        check(&name, &got, &truth, &mut diffs);
        if diffs.len() > before {
            diffs.push(format!("{name} was:\n{text}"));
        }
    }
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
    eprintln!(
        "random scenarios: {flows} flows, {keys:?} = {totals:?}, conformance {conformance:?}, \
         {unreliable} with unreliable ICRCs, {timed} flows with recovery samples"
    );
    assert!(flows >= 2 * RANDOM_SCENARIOS, "{flows} flows");
    for (k, t) in keys.iter().zip(totals) {
        assert!(t > 0, "no scenario produced any {k}");
    }
    assert!(unreliable > 0 && timed > 0);
    assert!(native >= 10, "{native} native InfiniBand scenarios");
    // the knobs' findings, each at least once
    for k in [
        "repeated_nak",
        "ack_regression",
        "msn_regression",
        "response_after_fatal_nak",
    ] {
        assert!(
            conformance.get(k).copied().unwrap_or(0) > 0,
            "no {k}: {conformance:?}"
        );
    }
}

/// How many random scenarios [`random_fault_placement_matches_truth`] runs.
const RANDOM_SCENARIOS: u64 = 120;

/// tcp_bth_faults (tcp_bth.md §d.2's three failure modes of `roce_test.c`, plus a
/// corrupted ICRC): the `tcp_bth` rows equal the truth's, and the events are
/// exactly the ones the faults call for, on every seed.
#[test]
fn tcp_bth_faults_events() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("generator/scenarios/tcp_bth_faults.toml");
    for seed in [1, 2, 3, 7, 42] {
        let (got, truth) = run(&path, seed);
        let mut diffs = Vec::new();
        compare("tcp_bth", &truth["tcp_bth"], &got["tcp_bth"], &mut diffs);
        assert!(diffs.is_empty(), "seed {seed}: {diffs:?}");
        let kinds: Vec<String> = got["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["kind"].as_str())
            .filter(|k| k.starts_with("tcp_bth_"))
            .map(str::to_owned)
            .collect();
        // the dropped FIRST of MSN 2 (segment 3): a hole, then its MIDDLE with no
        // FIRST; the MIDDLE/LAST swap of MSN 4: a hole, SEG 0 -> 2, the late
        // MIDDLE (older TSval, so reordered) with SEG 2 -> 1; the duplicated
        // MIDDLE of MSN 5 (same TSval); the bad ICRC; then the FIRST of MSN 2
        // resent with a newer TSval, repairing the hole.
        let want = [
            "tcp_bth_gap",
            "tcp_bth_missing_first",
            "tcp_bth_gap",
            "tcp_bth_seg_continuity",
            "tcp_bth_out_of_order",
            "tcp_bth_seg_continuity",
            "tcp_bth_duplicate",
            "tcp_bth_icrc_error",
            "tcp_bth_retransmission",
        ];
        assert_eq!(kinds, want, "seed {seed}");
    }
}

/// tcp_bth.md §d.1 step 4 on generated traffic: segments the capture point misses
/// (`capture_drop`, delivered to the server, which ACKs them) are `not_captured` holes,
/// a dropped one that is never resent would stay `unrecovered`; a missed FIRST makes its
/// message partial. Rows equal the truth's on every seed.
#[test]
fn tcp_bth_capture_drops_match_truth() {
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("generator/scenarios/tcp_bth_clean.toml"),
    )
    .unwrap();
    let text = format!(
        "{base}\n[[fault]]\nkind = \"capture_drop\"\nconnection = \"rdma\"\nevery = 7\n\
         [[fault]]\nkind = \"capture_drop\"\nconnection = \"rdma\"\npsn = 0\n"
    );
    let mut nocap = 0;
    for seed in [1, 2, 3, 7, 42] {
        let (got, truth) = run_text(&text, Path::new("tcp_bth_capture_drop"), seed);
        let mut diffs = Vec::new();
        compare("tcp_bth", &truth["tcp_bth"], &got["tcp_bth"], &mut diffs);
        assert!(diffs.is_empty(), "seed {seed}: {diffs:?}");
        let row = &got["tcp_bth"][0];
        assert_eq!(row["unrecovered"], 0, "seed {seed}: {row}");
        // the first data segment (a WRITE FIRST or ONLY) is never captured
        assert!(row["partial_messages"].as_u64().unwrap() >= 1, "{row}");
        nocap += row["not_captured"].as_u64().unwrap();
        let events = got["events"].as_array().unwrap();
        let n = events
            .iter()
            .filter(|e| e["kind"] == "not_captured")
            .count();
        assert_eq!(n as u64, row["not_captured"].as_u64().unwrap());
    }
    assert!(nocap >= 5, "{nocap}");
}
