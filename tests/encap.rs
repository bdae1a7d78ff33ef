//! Mirrored and tunnelled RoCE (interfaces.md §3, capture-formats.md §4): ERSPAN II/III,
//! GRE, VXLAN, Geneve, MPLS and IP in IP are unwrapped and the innermost frame is dissected
//! and analyzed as if captured directly. Checked against tshark's filters on the demo
//! captures, against the unwrapped run of the same scenario, and on hand-made frames for
//! the cases no scenario writes (ERSPAN's BSO, a loop of GRE in GRE, IP in IP).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::{frames_of, jsonl, write_pcap};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rocescope")
}

fn demo(name: &str) -> PathBuf {
    root().join(format!("captures/{name}.pcap"))
}

fn run(args: &[&str], path: &Path) -> std::process::Output {
    Command::new(bin()).args(args).arg(path).output().unwrap()
}

fn analyze(path: &Path) -> Value {
    let out = run(&["-q", "analyze", "-f", "json"], path);
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn have_tshark() -> bool {
    Command::new("tshark").arg("-v").output().is_ok()
}

/// An outer IPv4 header (checksum left zero: nothing here checks it) for `payload` bytes.
fn ipv4(proto: u8, payload: usize) -> Vec<u8> {
    let total = u16::try_from(20 + payload).unwrap();
    let mut h = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0];
    h[2..4].copy_from_slice(&total.to_be_bytes());
    h.extend_from_slice(&[192, 0, 2, 1, 192, 0, 2, 2]);
    h
}

fn eth(ethertype: u16) -> Vec<u8> {
    let mut e = vec![2, 0, 0, 0, 0xFE, 2, 2, 0, 0, 0, 0xFE, 1];
    e.extend_from_slice(&ethertype.to_be_bytes());
    e
}

/// The report's keys that must not depend on how the frames were delivered: everything but
/// the file name, the byte counts and the offsets inside the frame named by the findings
/// (a mirrored frame's headers start later in the record).
fn comparable(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "files" | "bytes"))
                .map(|(k, x)| (k.clone(), comparable(x)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(comparable).collect()),
        Value::String(s) => {
            let mut out = String::new();
            let mut rest = s.as_str();
            while let Some(i) = rest.find("at offset ") {
                out.push_str(&rest[..i + 10]);
                rest = rest[i + 10..].trim_start_matches(|c: char| c.is_ascii_digit());
                out.push('N');
            }
            out.push_str(rest);
            Value::String(out)
        }
        other => other.clone(),
    }
}

/// `mixed.toml` (every fault, truncated frames, PFC) mirrored through ERSPAN III and through
/// every other encapsulation: the report is the unwrapped run's.
#[test]
fn wrapped_mixed_run_reports_what_the_unwrapped_run_reports() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("generator/scenarios/mixed.toml")).unwrap();
    let bare = dir.path().join("bare.pcap");
    let sc = dir.path().join("bare.toml");
    std::fs::write(&sc, &text).unwrap();
    let out = Command::new(bin())
        .args(["-q", "generate"])
        .arg(&sc)
        .arg("-o")
        .arg(&bare)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let want = comparable(&analyze(&bare));
    assert!(want["capture"]["truncated_frames"].as_u64().unwrap() > 0);
    for enc in ["erspan3", "erspan2", "gre", "vxlan", "geneve", "mpls"] {
        let wrapped_text = text.replacen(
            "point = \"receiver\"",
            &format!("point = \"receiver\"\nencapsulation = \"{enc}\""),
            1,
        );
        assert_ne!(wrapped_text, text);
        let sc = dir.path().join(format!("{enc}.toml"));
        std::fs::write(&sc, wrapped_text).unwrap();
        let pcap = dir.path().join(format!("{enc}.pcap"));
        let out = Command::new(bin())
            .args(["-q", "generate"])
            .arg(&sc)
            .arg("-o")
            .arg(&pcap)
            .output()
            .unwrap();
        assert!(out.status.success(), "{enc}: {out:?}");
        // the frames really are wrapped
        let first = &jsonl(&pcap, &[])[0];
        assert!(
            first["outer"].as_array().is_some_and(|a| !a.is_empty()),
            "{enc}"
        );
        let got = comparable(&analyze(&pcap));
        assert_eq!(
            got, want,
            "{enc}: the report differs from the unwrapped run's"
        );
    }
}

/// A copy the switch cut (ERSPAN's T bit) is a truncated frame: no ICRC verdict, counted as
/// truncated, the same frames as the unwrapped run's snaplen cut.
#[test]
fn erspan_truncated_bit_marks_the_frame_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("generator/scenarios/mixed.toml"))
        .unwrap()
        .replacen(
            "point = \"receiver\"",
            "point = \"receiver\"\nencapsulation = \"erspan3\"",
            1,
        );
    let sc = dir.path().join("m.toml");
    std::fs::write(&sc, text).unwrap();
    let pcap = dir.path().join("m.pcap");
    let out = Command::new(bin())
        .args(["-q", "generate"])
        .arg(&sc)
        .arg("-o")
        .arg(&pcap)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let frames = jsonl(&pcap, &[]);
    let cut: Vec<&Value> = frames
        .iter()
        .filter(|f| f["outer"][3]["erspan"]["truncated"] == Value::Bool(true))
        .collect();
    assert_eq!(cut.len(), 6);
    for f in &cut {
        assert_eq!(f["truncated"], Value::Bool(true), "{f}");
        assert!(f["icrc"].get("valid").is_none_or(Value::is_null), "{f}");
        // the record itself is whole: the pcap lengths agree, only the mirror cut it
        assert_eq!(f["len"], f["caplen"], "{f}");
    }
    let filtered = run(&["dissect", "-Y", "erspan.truncated == 1"], &pcap);
    assert_eq!(String::from_utf8_lossy(&filtered.stdout).lines().count(), 6);
    assert!(String::from_utf8_lossy(&filtered.stdout).contains("[TRUNCATED]"));
}

/// ERSPAN III's BSO (bad/short/oversized on the mirrored port) is a finding on the frame.
#[test]
fn erspan_bso_is_a_finding() {
    let dir = tempfile::tempdir().unwrap();
    let mut frames = frames_of(&demo("erspan3_mirror"));
    frames.truncate(3);
    // ERSPAN at 14 + 20 + 8 (GRE with a sequence number); BSO is bits 12-11 of its second
    // 16-bit word: 3 = a CRC or alignment error
    assert_eq!(&frames[0][36..38], &[0x22, 0xEB]);
    frames[0][44] |= 0x18;
    let pcap = dir.path().join("bso.pcap");
    write_pcap(&pcap, &frames);
    let out = jsonl(&pcap, &[]);
    assert_eq!(out[0]["outer"][3]["erspan"]["bso"], 3);
    let report = analyze(&pcap);
    assert_eq!(report["capture"]["malformed_frames"], 1, "{report}");
    let text = String::from_utf8_lossy(&run(&["dissect"], &pcap).stdout).into_owned();
    let first = text.lines().next().unwrap();
    assert!(first.contains("[MALFORMED]"), "{first}");
    let ev = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "malformed")
        .expect("a malformed event");
    assert!(
        ev["detail"]
            .as_str()
            .unwrap()
            .contains("the mirror marked the frame bad"),
        "{ev}"
    );
    assert_eq!(ev["frame"], 1);
    // the inner frame is still dissected in full
    assert!(out[0]["bth"].is_object(), "{}", out[0]);
}

/// GRE carrying IPv4 carrying GRE …: unwrapping stops at the depth limit with a one-line
/// finding, never loops or overflows.
#[test]
fn gre_in_gre_stops_at_the_depth_limit() {
    let dir = tempfile::tempdir().unwrap();
    let inner = frames_of(&demo("clean_write"))[0][14..].to_vec();
    let mut deep = Vec::new();
    for n in [1usize, 3, 4, 5, 12, 200] {
        // n tunnels: IPv4(GRE) + GRE(0x0800) each, then the RoCE packet
        let mut pkt = inner.clone();
        for _ in 0..n {
            let mut hdr = ipv4(47, 4 + pkt.len());
            hdr.extend_from_slice(&[0, 0, 0x08, 0x00]);
            hdr.extend_from_slice(&pkt);
            pkt = hdr;
        }
        let mut f = eth(0x0800);
        f.extend_from_slice(&pkt);
        deep.push(f);
    }
    let pcap = dir.path().join("deep.pcap");
    write_pcap(&pcap, &deep);
    let frames = jsonl(&pcap, &[]);
    for (f, n) in frames.iter().zip([1usize, 3, 4, 5, 12, 200]) {
        let errors = f["errors"].as_array().unwrap();
        if n <= 4 {
            assert!(errors.is_empty(), "{n} tunnels: {f}");
            assert!(f["bth"].is_object(), "{n} tunnels: {f}");
            // outer: eth, then (ipv4, gre) per tunnel
            assert_eq!(f["outer"].as_array().unwrap().len(), 1 + 2 * n, "{f}");
        } else {
            assert!(f.get("bth").is_none(), "{n} tunnels: {f}");
            assert_eq!(errors.len(), 1, "{f}");
            let e = errors[0].as_str().unwrap();
            assert!(e.contains("more than 4 encapsulations"), "{e}");
        }
    }
    let report = analyze(&pcap);
    assert_eq!(report["capture"]["roce_frames"], 3);
    assert_eq!(report["capture"]["malformed_frames"], 3);
}

/// IPv4 in IPv4 (protocol 4) and in IPv6 (protocol 41 carries IPv6; 4 carries IPv4): the
/// inner packet is the RoCE one, as tshark reads it.
#[test]
fn ip_in_ip_is_unwrapped() {
    let dir = tempfile::tempdir().unwrap();
    let inner = frames_of(&demo("clean_write"))[0][14..].to_vec();
    let mut f = eth(0x0800);
    f.extend_from_slice(&ipv4(4, inner.len()));
    f.extend_from_slice(&inner);
    let pcap = dir.path().join("ipip.pcap");
    write_pcap(&pcap, &[f]);
    let out = jsonl(&pcap, &[]);
    assert_eq!(out[0]["outer"][1]["ipv4"]["proto"], 4, "{}", out[0]);
    assert_eq!(out[0]["ipv4"]["src"], "10.0.0.1", "{}", out[0]);
    assert_eq!(out[0]["icrc"]["valid"], true, "{}", out[0]);
    let line = String::from_utf8_lossy(&run(&["dissect"], &pcap).stdout).into_owned();
    assert!(line.contains("[IP-in-IP]"), "{line}");
    if have_tshark() {
        let t = Command::new("tshark")
            .args(["-r"])
            .arg(&pcap)
            .args(["-T", "fields", "-e", "infiniband.bth.psn", "-e", "ip.src"])
            .output()
            .unwrap();
        let t = String::from_utf8_lossy(&t.stdout);
        assert_eq!(
            t.trim(),
            format!("{}\t192.0.2.1,10.0.0.1", out[0]["bth"]["psn"]),
            "tshark"
        );
    }
}

/// Wireshark's names for the encapsulating layers select the same frames in rocescope as in
/// tshark, on every demo capture; `outer.*` names only the outer layers.
#[test]
fn filters_on_encapsulation_fields_agree_with_tshark() {
    if !have_tshark() {
        eprintln!("encap: skipped the tshark comparison: tshark is not installed");
        return;
    }
    let filters = [
        "erspan",
        "gre",
        "vxlan",
        "geneve",
        "mpls",
        "erspan.spanid == 42",
        "erspan.version == 2",
        "erspan.index == 7",
        "gre.key == 0x2a2a",
        "gre.proto == 0x88be",
        "vxlan.vni == 5001",
        "geneve.vni == 5001",
        "mpls.label == 16",
        "mpls.label == 1000",
        "ip.src == 192.0.2.1",
        "ip.dst == 10.0.22.10",
        "ip.addr == 10.0.19.1",
        "udp.dstport == 4789",
        "udp.dstport == 4791 && vxlan",
        "eth.src == 02:00:00:00:fe:01",
        "eth.src == 02:00:00:00:13:02",
        "infiniband.bth.destqp == 0x1301",
        "ipv6.src == fd00::15:1",
    ];
    let captures = [
        "erspan3_mirror",
        "erspan2_mirror",
        "gre_teb",
        "vxlan_overlay",
        "geneve_overlay",
        "mpls_core",
    ];
    let mut nonzero = 0;
    for c in captures {
        let pcap = demo(c);
        for f in filters {
            let ours = run(&["dissect", "-Y", f], &pcap);
            assert!(ours.status.success(), "{c} {f}: {ours:?}");
            let ours = String::from_utf8_lossy(&ours.stdout).lines().count();
            let theirs = Command::new("tshark")
                .arg("-r")
                .arg(&pcap)
                .args(["-Y", f])
                .output()
                .unwrap();
            let theirs = String::from_utf8_lossy(&theirs.stdout).lines().count();
            assert_eq!(
                ours, theirs,
                "{c}: `{f}` selects {ours} frames, tshark {theirs}"
            );
            nonzero += usize::from(ours > 0);
        }
        // the JSON path of the outer layers names the mirror's, never the inner ones
        let n = |f: &str| {
            String::from_utf8_lossy(&run(&["dissect", "-Y", f], &pcap).stdout)
                .lines()
                .count()
        };
        let all = frames_of(&pcap).len();
        assert_eq!(n("outer.eth.src == 02:00:00:00:fe:01"), all, "{c}");
        assert_eq!(n("outer.ipv4.src == 10.0.19.1"), 0, "{c}");
    }
    assert!(
        nonzero >= 20,
        "{nonzero} filter/capture pairs matched anything"
    );
}
