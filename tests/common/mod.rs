//! Helpers shared by integration tests: writing hand-made frames as a pcap, reading one,
//! running `rocescope dissect -f jsonl` on it.

use std::path::Path;
use std::process::Command;

use rocescope::capture::CaptureReader;
use serde_json::Value;

/// A little-endian pcap global header (version 2.4, snaplen 65535): nanosecond or
/// microsecond timestamps, link type `link`.
#[allow(dead_code)]
pub fn pcap_header(nanos: bool, link: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(24);
    let magic: u32 = if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
    out.extend_from_slice(&magic.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&link.to_le_bytes());
    out
}

#[allow(dead_code)]
/// A nanosecond Ethernet pcap of these frames (1 µs apart).
pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut out = pcap_header(true, 1);
    for (i, f) in frames.iter().enumerate() {
        let len = u32::try_from(f.len()).unwrap();
        out.extend_from_slice(&1_700_000_000u32.to_le_bytes());
        out.extend_from_slice(&(u32::try_from(i).unwrap() * 1000).to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(f);
    }
    std::fs::write(path, out).unwrap();
}

#[allow(dead_code)]
/// Every frame's captured bytes.
pub fn frames_of(path: &Path) -> Vec<Vec<u8>> {
    let mut r = CaptureReader::open(path).unwrap();
    let mut v = Vec::new();
    while let Some(f) = r.next_frame() {
        v.push(f.unwrap().data.to_vec());
    }
    v
}

/// A microsecond pcap of `packets` with link type `link`, one second apart; for ERF (197)
/// each packet gets an ibdump record header (type 21 InfiniBand, flags 4, rlen = 16 + wlen).
#[allow(dead_code)]
pub fn write_pcap_link(path: &Path, link: u32, packets: &[Vec<u8>]) {
    let mut out = pcap_header(false, link);
    for (i, p) in packets.iter().enumerate() {
        let secs = 1_700_000_000 + u32::try_from(i).unwrap();
        let mut rec = Vec::new();
        if link == 197 {
            rec.extend_from_slice(&(u64::from(secs) << 32).to_le_bytes());
            let wlen = u16::try_from(p.len()).unwrap();
            rec.extend_from_slice(&[21, 4]);
            rec.extend_from_slice(&(16 + wlen).to_be_bytes());
            rec.extend_from_slice(&0u16.to_be_bytes());
            rec.extend_from_slice(&wlen.to_be_bytes());
        }
        rec.extend_from_slice(p);
        let n = u32::try_from(rec.len()).unwrap();
        for v in [secs, 0, n, n] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&rec);
    }
    std::fs::write(path, out).unwrap();
}

/// `rocescope dissect -f jsonl ARGS PATH`, one JSON value per frame (the run must succeed).
#[allow(dead_code)]
pub fn jsonl(path: &Path, args: &[&str]) -> Vec<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["dissect", "-f", "jsonl"])
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every key of `truth` must be in `got` with the same value (objects compared recursively).
#[allow(dead_code)]
pub fn compare(at: &str, truth: &Value, got: &Value, diffs: &mut Vec<String>) {
    match (truth, got) {
        (Value::Object(t), Value::Object(g)) => {
            for (k, tv) in t {
                match g.get(k) {
                    Some(gv) => compare(&format!("{at}.{k}"), tv, gv, diffs),
                    None => diffs.push(format!("{at}.{k}: missing (truth {tv})")),
                }
            }
        }
        _ if truth == got => {}
        _ => diffs.push(format!("{at}: truth {truth}, analyze {got}")),
    }
}

#[allow(dead_code)]
pub fn find<'v>(rows: &'v [Value], row: &Value, keys: &[&str]) -> Option<&'v Value> {
    rows.iter().find(|r| keys.iter().all(|k| r[k] == row[k]))
}

/// Fails listing every difference `compare`/`check` collected, when there is one.
#[allow(dead_code)]
pub fn assert_no_differences(diffs: &[String]) {
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

/// Every key the truth states, for the capture, each flow, each PFC row and each
/// `tcp_bth` direction.
#[allow(dead_code)]
pub fn check(name: &str, got: &Value, truth: &Value, diffs: &mut Vec<String>) {
    compare(
        &format!("{name}.capture"),
        &truth["capture"],
        &got["capture"],
        diffs,
    );
    let got_flows = got["flows"].as_array().unwrap();
    let truth_flows = truth["flows"].as_array().unwrap();
    if got_flows.len() != truth_flows.len() {
        diffs.push(format!(
            "{name}: {} flows, truth {}",
            got_flows.len(),
            truth_flows.len()
        ));
    }
    for tf in truth_flows {
        let at = format!(
            "{name}.flow[{} > {} qp {}]",
            tf["src"], tf["dst"], tf["destqp"]
        );
        match find(got_flows, tf, &["src", "dst", "destqp"]) {
            Some(gf) => compare(&at, tf, gf, diffs),
            None => diffs.push(format!("{at}: not found")),
        }
    }
    if let Some(rows) = truth.get("tcp_bth").and_then(Value::as_array) {
        let got_rows = got["tcp_bth"].as_array().unwrap();
        for tr in rows {
            let at = format!(
                "{name}.tcp_bth[{}:{} > {}:{}]",
                tr["src"], tr["srcport"], tr["dst"], tr["dstport"]
            );
            match find(got_rows, tr, &["src", "srcport", "dst", "dstport"]) {
                Some(gr) => compare(&at, tr, gr, diffs),
                None => diffs.push(format!("{at}: not found")),
            }
        }
    }
    let got_pfc = got["pfc"].as_array().unwrap();
    for tp in truth["pfc"].as_array().unwrap() {
        let at = format!("{name}.pfc[{} p{}]", tp["src_mac"], tp["priority"]);
        match find(got_pfc, tp, &["src_mac", "priority"]) {
            Some(gp) => compare(&at, tp, gp, diffs),
            None => diffs.push(format!("{at}: not found")),
        }
    }
}

/// A tiny deterministic generator for the scenario parameters below.
#[allow(dead_code)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
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
#[allow(dead_code)]
pub fn random_scenario(rng: &mut Rng, i: u64) -> String {
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

/// A capture `rocescope generate` makes in `dir` of `connections` RC connections between
/// two hosts (two flows each), every one writing `messages` messages of 2 KiB (two packets each)
/// and acknowledging every `ack_every` packets, with packets dropped at `drop_probability`.
#[allow(dead_code)]
pub fn many_connections(
    dir: &Path,
    connections: u32,
    ack_every: u32,
    messages: u32,
    drop_probability: f64,
) -> std::path::PathBuf {
    let mut scenario = String::from(
        "[link]\nspeed_gbps = 100\ndelay_ns = 1000\n[capture]\npoint = \"receiver\"\n\
         [[host]]\nname = \"a\"\nmac = \"02:00:00:00:00:01\"\nip = \"10.0.0.1\"\n\
         [[host]]\nname = \"b\"\nmac = \"02:00:00:00:00:02\"\nip = \"10.0.0.2\"\n",
    );
    for i in 0..connections {
        scenario.push_str(&format!(
            "[[connection]]\nname = \"c{i}\"\ntransport = \"rc\"\nrequester = \"a\"\n\
             responder = \"b\"\nrequester_qpn = {}\nresponder_qpn = {}\nstart_psn = {}\n\
             pmtu = 1024\nack_every = {ack_every}\nload = 0.0001\n\
             [[traffic]]\nconnection = \"c{i}\"\nop = \"write\"\nsize = 2048\n\
             messages = {messages}\n",
            0x1000 + i,
            0x40_0000 + i,
            i * 977 % 0x100_0000,
        ));
    }
    scenario.push_str(&format!(
        "[[fault]]\nkind = \"drop\"\nprobability = {drop_probability}\n"
    ));
    let toml = dir.join("many.toml");
    std::fs::write(&toml, scenario).unwrap();
    let pcap = dir.join("many.pcap");
    let status = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["-q", "generate", "--seed", "7", "-o"])
        .arg(&pcap)
        .arg(&toml)
        .status()
        .unwrap();
    assert!(status.success(), "generate failed");
    pcap
}

/// The scenario files of `generator/scenarios/`, sorted.
#[allow(dead_code)]
pub fn scenarios() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("generator/scenarios");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("generator/scenarios")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    paths
}

/// The pcap and pcapng files of `dir`, sorted (none when it does not exist).
#[allow(dead_code)]
pub fn pcaps(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    v.sort();
    v
}

/// Every capture of `captures/` (there must be some), then those of `../shared/captures/real/`
/// where that directory exists.
#[allow(dead_code)]
pub fn demo_and_real_captures() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = pcaps(&root.join("captures"));
    assert!(!files.is_empty(), "no capture in captures/");
    files.extend(pcaps(&root.join("../shared/captures/real")));
    files
}

/// The JSON report of `replay` as `json::write` writes it, held byte for byte to serde_json's
/// pretty layout of the same report (the oracle of the directly written report), and
/// `json::write_line`'s to serde_json's compact layout; `name` says which report in the
/// message.
#[allow(dead_code)]
pub fn json_report(
    cfg: &rocescope::analyze::AnalyzeConfig,
    replay: &rocescope::replay::Replay,
    name: &str,
) -> Vec<u8> {
    use rocescope::analyze::json;
    type Writer = fn(
        &rocescope::analyze::AnalyzeConfig,
        &rocescope::replay::Replay,
        &mut dyn std::io::Write,
    ) -> std::io::Result<()>;
    let report = json::report(cfg, replay);
    // the pretty report, and on one line (`--each`) as serde_json's compact layout
    let layouts: [(&str, Writer, Vec<u8>); 2] = [
        (
            "json::write",
            json::write,
            serde_json::to_vec_pretty(&report).unwrap(),
        ),
        (
            "json::write_line",
            json::write_line,
            serde_json::to_vec(&report).unwrap(),
        ),
    ];
    let mut written = Vec::new();
    for (writer, write, mut oracle) in layouts {
        let mut out = Vec::new();
        write(cfg, replay, &mut out).unwrap();
        oracle.push(b'\n');
        assert!(
            out == oracle,
            "{name}: {writer} differs from serde_json's layout"
        );
        written.push(out);
    }
    written.swap_remove(0)
}
