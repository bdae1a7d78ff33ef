//! `rocescope dissect` as a user runs it: the real binary on the real captures in
//! `../shared/captures/real/` (skipped with a notice when that folder is absent), JSONL checked
//! against the key list of interfaces.md §4, exit statuses, broken pipes, `-c`, `--frames`, and a
//! field-by-field differential test against tshark (skipped with a notice when tshark is absent).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rocescope"))
}

fn real_captures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/captures/real");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!(
            "notice: {} not found, real-capture checks skipped",
            dir.display()
        );
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    files.sort();
    files
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run rocescope")
}

fn jsonl(path: &Path, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["dissect", "-f", "jsonl"];
    args.extend_from_slice(extra);
    args.push(path.to_str().unwrap());
    let out = run(&args);
    assert!(
        out.status.success(),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// JSONL schema (interfaces.md §4)

#[derive(Clone, Copy)]
enum T {
    U,
    B,
    S,
    Mac,
    V4,
    V6,
    /// u64 or null
    UN,
    /// bool or null
    BN,
}

fn check_scalar(path: &str, t: T, v: &Value) {
    let ok = match t {
        T::U => v.is_u64(),
        T::B => v.is_boolean(),
        T::S => v.is_string(),
        T::Mac => v.as_str().is_some_and(|s| {
            s.len() == 17
                && s.split(':').count() == 6
                && s.split(':').all(|p| {
                    p.len() == 2
                        && p.bytes()
                            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                })
        }),
        T::V4 => v.as_str().is_some_and(|s| s.parse::<Ipv4Addr>().is_ok()),
        T::V6 => v.as_str().is_some_and(|s| s.parse::<Ipv6Addr>().is_ok()),
        T::UN => v.is_u64() || v.is_null(),
        T::BN => v.is_boolean() || v.is_null(),
    };
    assert!(ok, "{path}: wrong JSON type: {v}");
}

fn check_object(path: &str, v: &Value, fields: &[(&str, T)]) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{path}: not an object: {v}"));
    for (k, x) in obj {
        let Some((_, t)) = fields.iter().find(|(n, _)| n == k) else {
            panic!("{path}.{k}: key not in interfaces.md §4");
        };
        check_scalar(&format!("{path}.{k}"), *t, x);
    }
}

/// One item of `outer`: `{eth|ipv4|ipv6|udp|gre|erspan|vxlan|geneve|mpls: {..}}`.
fn check_outer(item: &Value) {
    use T::*;
    let o = item.as_object().expect("an outer layer is an object");
    assert_eq!(o.len(), 1, "one layer per outer item: {item}");
    let (k, x) = o.iter().next().unwrap();
    let p = format!("outer.{k}");
    match k.as_str() {
        // the same keys as the inner layers of that name
        "eth" | "ipv4" | "ipv6" | "udp" => check_frame(&serde_json::json!({
            "frame": 1, "time_ns": 0, "len": 0, "caplen": 0, "truncated": false,
            "errors": [], k.as_str(): x,
        })),
        "gre" => check_object(
            &p,
            x,
            &[
                ("flags", U),
                ("proto", U),
                ("checksum", U),
                ("key", U),
                ("seq", U),
            ],
        ),
        "erspan" => check_object(
            &p,
            x,
            &[
                ("version", U),
                ("vlan", U),
                ("cos", U),
                ("encap", U),
                ("bso", U),
                ("truncated", B),
                ("session", U),
                ("index", U),
                ("timestamp", U),
                ("sgt", U),
                ("p", B),
                ("ft", U),
                ("hw", U),
                ("direction", U),
                ("gra", U),
                ("platform", U),
            ],
        ),
        "vxlan" => check_object(&p, x, &[("flags", U), ("vni", U)]),
        "geneve" => {
            let g = x.as_object().unwrap();
            for (k2, y) in g {
                match k2.as_str() {
                    "vni" | "proto" => check_scalar(&format!("{p}.{k2}"), U, y),
                    "options" => y.as_array().unwrap().iter().for_each(|opt| {
                        check_object(
                            "outer.geneve.options",
                            opt,
                            &[("class", U), ("type", U), ("length", U)],
                        );
                    }),
                    other => panic!("{p}.{other}: key not in interfaces.md §4"),
                }
            }
        }
        "mpls" => x.as_array().expect("mpls is a list").iter().for_each(|e| {
            check_object(&p, e, &[("label", U), ("tc", U), ("s", B), ("ttl", U)]);
        }),
        other => panic!("outer.{other}: not an encapsulating layer of interfaces.md §4"),
    }
}

fn check_frame(v: &Value) {
    use T::*;
    let obj = v.as_object().expect("a JSON object per line");
    for key in ["frame", "time_ns", "len", "caplen", "truncated", "errors"] {
        assert!(obj.contains_key(key), "missing {key}: {v}");
    }
    for (k, x) in obj {
        let p = k.as_str();
        match p {
            "frame" | "time_ns" | "len" | "caplen" | "payload_len" | "immdt" | "ieth" => {
                check_scalar(p, U, x);
            }
            "truncated" => check_scalar(p, B, x),
            "errors" => {
                for e in x.as_array().expect("errors is an array") {
                    assert!(e.is_string(), "errors: {e}");
                }
            }
            "eth" => {
                let o = x.as_object().unwrap();
                for (k2, y) in o {
                    match k2.as_str() {
                        "src" | "dst" => check_scalar("eth.src", Mac, y),
                        "type" => check_scalar("eth.type", U, y),
                        "vlan" => {
                            for tag in y.as_array().expect("eth.vlan is an array") {
                                check_object(
                                    "eth.vlan",
                                    tag,
                                    &[("tpid", U), ("pcp", U), ("dei", B), ("vid", U)],
                                );
                            }
                        }
                        other => panic!("eth.{other}: key not in §4"),
                    }
                }
            }
            "pause" => check_object(p, x, &[("quanta", U)]),
            "macc" => check_object(p, x, &[("opcode", U)]),
            "pfc" => {
                let o = x.as_object().unwrap();
                check_scalar("pfc.enable", U, &o["enable"]);
                let q = o["quanta"].as_array().expect("pfc.quanta is an array");
                assert_eq!(q.len(), 8);
                q.iter().for_each(|y| check_scalar("pfc.quanta", U, y));
                assert_eq!(o.len(), 2);
            }
            "ipv4" => check_object(
                p,
                x,
                &[
                    ("src", V4),
                    ("dst", V4),
                    ("dscp", U),
                    ("ecn", U),
                    ("ttl", U),
                    ("id", U),
                    ("len", U),
                    ("proto", U),
                ],
            ),
            "ipv6" => check_object(
                p,
                x,
                &[
                    ("src", V6),
                    ("dst", V6),
                    ("dscp", U),
                    ("ecn", U),
                    ("flow_label", U),
                    ("hop_limit", U),
                    ("len", U),
                    ("next", U),
                ],
            ),
            "grh" => check_object(
                p,
                x,
                &[
                    ("sgid", V6),
                    ("dgid", V6),
                    ("tclass", U),
                    ("flow_label", U),
                    ("hop_limit", U),
                    ("next", U),
                ],
            ),
            "udp" => check_object(p, x, &[("srcport", U), ("dstport", U), ("len", U)]),
            "tcp" => check_object(
                p,
                x,
                &[
                    ("srcport", U),
                    ("dstport", U),
                    ("seq", U),
                    ("ack", U),
                    ("flags", U),
                    ("window", U),
                    ("ts_val", U),
                    ("ts_ecr", U),
                ],
            ),
            "tcp_bth" => check_object(
                p,
                x,
                &[
                    ("format", S),
                    ("exid", U),
                    ("opcode", U),
                    ("opcode_name", S),
                    ("msn", U),
                    ("mbo", U),
                    ("seg", U),
                    ("more", B),
                    ("imm", U),
                    ("mlen", U),
                    ("icrc", U),
                    ("icrc_valid", BN),
                ],
            ),
            "bth" => check_object(
                p,
                x,
                &[
                    ("opcode", U),
                    ("opcode_name", S),
                    ("se", B),
                    ("m", B),
                    ("padcnt", U),
                    ("tver", U),
                    ("pkey", U),
                    ("fecn", B),
                    ("becn", B),
                    ("destqp", U),
                    ("ackreq", B),
                    ("psn", U),
                ],
            ),
            "rdeth" => check_object(p, x, &[("eecnxt", U)]),
            "deth" => check_object(p, x, &[("qkey", U), ("srcqp", U)]),
            "xrceth" => check_object(p, x, &[("srqn", U)]),
            "reth" => check_object(p, x, &[("va", U), ("rkey", U), ("dmalen", U)]),
            "atomiceth" => check_object(
                p,
                x,
                &[("va", U), ("rkey", U), ("swap_add", U), ("compare", U)],
            ),
            "atomicacketh" => check_object(p, x, &[("orig", U)]),
            "aeth" => check_object(
                p,
                x,
                &[
                    ("syndrome", U),
                    ("kind", S),
                    ("credit", U),
                    ("timer_us", U),
                    ("nak_code", U),
                    ("msn", U),
                ],
            ),
            "feth" => check_object(p, x, &[("plt", U), ("sel", U)]),
            "cnp" => check_object(p, x, &[]),
            "erf" => {
                let o = x.as_object().unwrap();
                for (k2, y) in o {
                    match k2.as_str() {
                        "type" | "flags" | "rlen" | "lctr" | "wlen" => {
                            check_scalar(&format!("erf.{k2}"), U, y);
                        }
                        "ext" => y
                            .as_array()
                            .unwrap()
                            .iter()
                            .for_each(|e| check_scalar("erf.ext", U, e)),
                        other => panic!("erf.{other}: key not in interfaces.md §4"),
                    }
                }
            }
            "lrh" => check_object(
                p,
                x,
                &[
                    ("vl", U),
                    ("lver", U),
                    ("sl", U),
                    ("lnh", U),
                    ("dlid", U),
                    ("pktlen", U),
                    ("slid", U),
                ],
            ),
            "vcrc" => check_object(p, x, &[("value", U), ("computed", UN), ("valid", BN)]),
            "dc" => check_object(
                p,
                x,
                &[("sid_owner", B), ("sid", U), ("dci_dct", U), ("raw", U)],
            ),
            "dcceth" => check_object(p, x, &[("reconnect", B), ("access_key", U)]),
            "cm" => {
                // `cm: {attribute, local_qpn, remote_qpn, starting_psn, path_mtu, …}`
                let o = x.as_object().unwrap();
                for (k2, y) in o {
                    let t = if k2 == "attribute" { S } else { U };
                    check_scalar(&format!("cm.{k2}"), t, y);
                }
            }
            "icrc" => check_object(p, x, &[("value", UN), ("computed", UN), ("valid", BN)]),
            "mad" => check_object(
                p,
                x,
                &[
                    ("base_version", U),
                    ("mgmt_class", U),
                    ("class_name", S),
                    ("class_version", U),
                    ("method", U),
                    ("method_name", S),
                    ("status", U),
                    ("tid", U),
                    ("attribute_id", U),
                    ("attribute_name", S),
                    ("attribute_modifier", U),
                ],
            ),
            "ipoib" => check_object(p, x, &[("type", U)]),
            "outer" => x
                .as_array()
                .expect("outer is an array")
                .iter()
                .for_each(check_outer),
            other => panic!("{other}: top-level key not in interfaces.md §4"),
        }
    }
}

#[test]
fn jsonl_matches_the_key_list_on_every_real_frame() {
    for path in real_captures() {
        let frames = jsonl(&path, &[]);
        assert!(!frames.is_empty(), "{}", path.display());
        for (i, f) in frames.iter().enumerate() {
            check_frame(f);
            assert_eq!(f["frame"].as_u64(), Some(i as u64 + 1));
            // A truncated or malformed frame never has a verdict on its ICRC.
            if f["truncated"] == Value::Bool(true) {
                assert!(f["icrc"].get("valid").is_none_or(Value::is_null), "{f}");
            }
        }
    }
}

/// The demo captures of each encapsulation: every frame has `outer` (outermost first, the
/// tunnel's own header last) and the innermost frame at the top level, RoCE decoded.
#[test]
fn encapsulated_frames_list_their_outer_layers() {
    let want = [
        ("erspan3_mirror", &["eth", "ipv4", "gre", "erspan"][..]),
        ("erspan2_mirror", &["eth", "ipv4", "gre", "erspan"]),
        ("gre_teb", &["eth", "ipv4", "gre"]),
        ("vxlan_overlay", &["eth", "ipv4", "udp", "vxlan"]),
        ("geneve_overlay", &["eth", "ipv4", "udp", "geneve"]),
        ("mpls_core", &["eth", "mpls"]),
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (name, layers) in want {
        let frames = jsonl(&root.join(format!("captures/{name}.pcap")), &[]);
        assert!(!frames.is_empty(), "{name}");
        for f in &frames {
            check_frame(f);
            let outer: Vec<&str> = f["outer"]
                .as_array()
                .unwrap_or_else(|| panic!("{name}: no outer: {f}"))
                .iter()
                .map(|l| l.as_object().unwrap().keys().next().unwrap().as_str())
                .collect();
            // PFC frames ride the same tunnel; their inner layer is `pfc`
            assert_eq!(outer, layers, "{name} frame {}", f["frame"]);
            assert!(
                f.get("bth").is_some() || f.get("pfc").is_some(),
                "{name}: {f}"
            );
            assert_eq!(f["errors"].as_array().unwrap().len(), 0, "{name}: {f}");
            // the mirror's addresses are outside; the top level is the RoCE endpoints'
            let ip = f.get("ipv4").or_else(|| f.get("ipv6"));
            if let Some(ip) = ip {
                assert_ne!(ip["src"], "192.0.2.1", "{name}: {f}");
            }
            // MPLS carries no Ethernet header of the frame's own
            assert_eq!(f.get("eth").is_none(), name == "mpls_core", "{name}: {f}");
        }
    }
}

#[test]
fn snaplen_capture_is_truncated_not_bad_icrc() {
    let Some(path) = real_captures()
        .into_iter()
        .find(|p| p.ends_with("nccl-uc-write-snaplen.pcap"))
    else {
        return;
    };
    let frames = jsonl(&path, &["-Y", "roce"]);
    assert_eq!(frames.len(), 509);
    let mut cut = 0;
    for f in &frames {
        // caplen == len, but the IP total length says more was on the wire
        let ip_end = 14 + f["ipv4"]["len"].as_u64().unwrap();
        if ip_end > f["caplen"].as_u64().unwrap() {
            cut += 1;
            assert_eq!(f["truncated"], Value::Bool(true), "{f}");
            assert_eq!(f["icrc"]["valid"], Value::Null, "{f}");
            assert!(
                f["errors"][0].as_str().unwrap().starts_with("truncated"),
                "{f}"
            );
        }
    }
    assert!(cut > 400, "{cut} cut frames");
    let out = run(&[
        "dissect",
        "-Y",
        "icrc_bad && truncated",
        path.to_str().unwrap(),
    ]);
    assert!(out.stdout.is_empty());
    let out = run(&[
        "dissect",
        "-c",
        "1",
        "-Y",
        "roce && truncated",
        path.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("[TRUNCATED]"));
}

#[test]
fn every_format_runs_on_every_real_capture() {
    for path in real_captures() {
        for format in ["text", "verbose", "csv"] {
            let out = run(&["dissect", "-f", format, path.to_str().unwrap()]);
            assert!(out.status.success(), "{} {format}", path.display());
            let text = String::from_utf8(out.stdout).unwrap();
            let lines = text.lines().count();
            assert!(lines > 0);
            if format == "csv" {
                let header = text.lines().next().unwrap();
                let cols = header.split(',').count();
                // every row has the header's columns before the quoted info column
                for row in text.lines().skip(1) {
                    let before_info = row.split_once(",\"").map_or(row, |(a, _)| a);
                    assert_eq!(before_info.split(',').count(), cols - 1, "{row}");
                }
            }
        }
    }
}

#[test]
fn count_and_frame_range() {
    let Some(path) = real_captures()
        .into_iter()
        .find(|p| p.ends_with("cm-send-write.pcap"))
    else {
        return;
    };
    let frames = jsonl(&path, &["-c", "3"]);
    assert_eq!(
        frames
            .iter()
            .map(|f| f["frame"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    let frames = jsonl(&path, &["--frames", "5-8"]);
    assert_eq!(
        frames
            .iter()
            .map(|f| f["frame"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [5, 6, 7, 8]
    );
    let frames = jsonl(&path, &["--frames", "16-"]);
    assert_eq!(frames.len(), 2);
    let frames = jsonl(&path, &["--frames", "4", "-c", "5"]);
    assert_eq!(frames.len(), 1);
    // -c counts frames shown, after the filter
    let frames = jsonl(&path, &["-Y", "opcode == RC_ACKNOWLEDGE", "-c", "2"]);
    assert_eq!(frames.len(), 2);
    assert!(frames.iter().all(|f| f["bth"]["opcode"] == 17));
    let frames = jsonl(&path, &["-Y", "cm"]);
    assert_eq!(frames.len(), 5);
}

fn assert_usage_error(out: &Output, needle: &str) {
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{err} should name {needle}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn exit_statuses() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pcap");
    assert_usage_error(
        &run(&["dissect", missing.to_str().unwrap()]),
        "missing.pcap",
    );
    assert_usage_error(
        &run(&["dissect", dir.path().to_str().unwrap()]),
        "directory",
    );
    let empty = dir.path().join("empty.pcap");
    std::fs::write(&empty, b"").unwrap();
    assert_usage_error(&run(&["dissect", empty.to_str().unwrap()]), "empty.pcap");
    let random = dir.path().join("random.bin");
    let bytes: Vec<u8> = (0u32..4096)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&random, &bytes).unwrap();
    assert_usage_error(&run(&["dissect", random.to_str().unwrap()]), "random.bin");
    // a bad filter is a usage error with a column, before any file is read
    let out = run(&["dissect", "-Y", "psn ==", missing.to_str().unwrap()]);
    assert_usage_error(&out, "column 7");
    // the analysis marks are evaluated (through a replay of the files), so what is wrong here
    // is the missing file
    let out = run(&["dissect", "-Y", "loss", missing.to_str().unwrap()]);
    assert_usage_error(&out, "missing.pcap");
    let out = run(&["dissect", "--frames", "9-3", missing.to_str().unwrap()]);
    assert_usage_error(&out, "--frames");
    let out = run(&["--link-speed", "fast", "dissect", missing.to_str().unwrap()]);
    assert_usage_error(&out, "--link-speed");
}

#[test]
fn broken_pipe_exits_zero_quietly() {
    let Some(path) = real_captures()
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
    else {
        return;
    };
    for format in ["text", "jsonl", "verbose"] {
        let mut child = bin()
            .args(["dissect", "-f", format, path.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // `| head -1`: read one line's worth, then hang up
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 64];
        let _ = stdout.read(&mut first).unwrap();
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{format}: {out:?}");
        assert!(
            out.stderr.is_empty(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn standard_input_and_merge() {
    let Some(path) = real_captures()
        .into_iter()
        .find(|p| p.ends_with("cm-send-write.pcap"))
    else {
        return;
    };
    let bytes = std::fs::read(&path).unwrap();
    let mut child = bin()
        .args(["dissect", "-f", "jsonl", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 17);
    // the same file twice: merged by time, numbered in merged order
    let p = path.to_str().unwrap();
    let out = run(&["dissect", "-f", "jsonl", p, p]);
    let lines = String::from_utf8(out.stdout).unwrap();
    assert_eq!(lines.lines().count(), 34);
}

// ---------------------------------------------------------------------------------------------
// differential test against tshark

/// tshark field, our JSON path (`/`-separated; `#n` = the n-th list item).
const FIELDS: &[(&str, &str)] = &[
    ("eth.src", "eth/src"),
    ("eth.dst", "eth/dst"),
    ("eth.type", "eth/type"),
    ("vlan.priority", "eth/vlan/#0/pcp"),
    ("vlan.id", "eth/vlan/#0/vid"),
    ("ip.src", "ipv4/src"),
    ("ip.dst", "ipv4/dst"),
    ("ip.dsfield.dscp", "ipv4/dscp"),
    ("ip.dsfield.ecn", "ipv4/ecn"),
    ("ip.ttl", "ipv4/ttl"),
    ("ip.id", "ipv4/id"),
    ("ip.len", "ipv4/len"),
    ("ip.proto", "ipv4/proto"),
    ("udp.srcport", "udp/srcport"),
    ("udp.dstport", "udp/dstport"),
    ("udp.length", "udp/len"),
    ("infiniband.grh.sgid", "grh/sgid"),
    ("infiniband.grh.dgid", "grh/dgid"),
    ("infiniband.grh.hoplmt", "grh/hop_limit"),
    ("infiniband.bth.opcode", "bth/opcode"),
    ("infiniband.bth.se", "bth/se"),
    ("infiniband.bth.m", "bth/m"),
    ("infiniband.bth.padcnt", "bth/padcnt"),
    ("infiniband.bth.tver", "bth/tver"),
    ("infiniband.bth.p_key", "bth/pkey"),
    ("infiniband.bth.destqp", "bth/destqp"),
    ("infiniband.bth.a", "bth/ackreq"),
    ("infiniband.bth.psn", "bth/psn"),
    ("infiniband.reth.va", "reth/va"),
    ("infiniband.reth.r_key", "reth/rkey"),
    ("infiniband.reth.dmalen", "reth/dmalen"),
    ("infiniband.aeth.syndrome", "aeth/syndrome"),
    ("infiniband.aeth.msn", "aeth/msn"),
    ("infiniband.rdeth.eecnxt", "rdeth/eecnxt"),
    ("infiniband.deth.q_key", "deth/qkey"),
    ("infiniband.deth.srcqp", "deth/srcqp"),
    ("infiniband.immdt", "immdt"),
    ("infiniband.atomiceth.swapdt", "atomiceth/swap_add"),
    ("infiniband.atomiceth.cmpdt", "atomiceth/compare"),
    ("macc.cbfc.enbv", "pfc/enable"),
    ("macc.cbfc.pause_time.c0", "pfc/quanta/#0"),
    ("macc.cbfc.pause_time.c1", "pfc/quanta/#1"),
    ("macc.cbfc.pause_time.c2", "pfc/quanta/#2"),
    ("macc.cbfc.pause_time.c3", "pfc/quanta/#3"),
    ("macc.cbfc.pause_time.c4", "pfc/quanta/#4"),
    ("macc.cbfc.pause_time.c5", "pfc/quanta/#5"),
    ("macc.cbfc.pause_time.c6", "pfc/quanta/#6"),
    ("macc.cbfc.pause_time.c7", "pfc/quanta/#7"),
];

/// Where tshark 4.0 is known to be wrong, with the reason. Returns the reason when the
/// disagreement on `field` of a frame is one of them.
fn tshark_known_wrong(
    file: &str,
    ours: &Value,
    tshark_proto: &str,
    field: &str,
) -> Option<&'static str> {
    let opcode = ours["bth"]["opcode"].as_u64();
    let is_roce = !ours["bth"].is_null();
    if opcode == Some(0x81) && field.starts_with("infiniband.") {
        return Some("tshark does not know CNP (opcode 0x81) and decodes it as unknown");
    }
    if is_roce && tshark_proto == "TFTP" && field.starts_with("infiniband.") {
        return Some(
            "tshark decodes RoCEv2 with a low UDP source port as TFTP (RoCEv2 is UDP destination port 4791 whatever the source port)",
        );
    }
    if is_roce && opcode.is_some_and(|o| o >= 0xC0) && field.starts_with("infiniband.") {
        return Some(
            "vendor/reserved opcode: tshark guesses headers, rocescope keeps the bytes as payload",
        );
    }
    // (NVIDIA DC on the RD opcodes, sniffer-dc-vendor-opcodes.pcap, is decoded in tshark's
    // own layout now: no exception)
    let _ = file;
    None
}

/// tshark's text for a value → the integer or address text we compare.
fn normalize_tshark(field: &str, v: &str) -> String {
    // several occurrences (IP inside ICMP errors): the first is the frame's own header
    let v = v.split(',').next().unwrap_or("");
    if v == "True" {
        return "1".into();
    }
    if v == "False" {
        return "0".into();
    }
    if field == "infiniband.immdt" {
        // FT_BYTES: hex digits, maybe with colons
        let hex: String = v.chars().filter(char::is_ascii_hexdigit).collect();
        return u64::from_str_radix(&hex, 16).map_or(v.into(), |n| n.to_string());
    }
    if let Some(hex) = v.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).map_or(v.into(), |n| n.to_string());
    }
    if let Ok(a) = v.parse::<Ipv6Addr>() {
        return a.to_string();
    }
    v.to_ascii_lowercase()
}

fn ours_at(frame: &Value, path: &str) -> Option<String> {
    let mut v = frame;
    for seg in path.split('/') {
        v = match seg.strip_prefix('#') {
            Some(i) => v.get(i.parse::<usize>().ok()?)?,
            None => v.get(seg)?,
        };
    }
    Some(match v {
        Value::Bool(b) => u8::from(*b).to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s
            .parse::<Ipv6Addr>()
            .map_or_else(|_| s.to_ascii_lowercase(), |a| a.to_string()),
        Value::Null => return None,
        other => other.to_string(),
    })
}

#[test]
fn fields_agree_with_tshark() {
    let captures = real_captures();
    if captures.is_empty() {
        return;
    }
    if Command::new("tshark").arg("--version").output().is_err() {
        println!("notice: tshark not installed, differential test skipped");
        return;
    }
    let mut disagreements = Vec::new();
    let mut known = std::collections::BTreeMap::<&str, usize>::new();
    let mut compared = 0usize;
    for path in &captures {
        let ours = jsonl(path, &[]);
        let mut cmd = Command::new("tshark");
        cmd.args([
            "-r",
            path.to_str().unwrap(),
            "-T",
            "fields",
            "-E",
            "separator=/t",
        ]);
        cmd.args(["-e", "frame.number", "-e", "_ws.col.Protocol"]);
        for (f, _) in FIELDS {
            cmd.args(["-e", f]);
        }
        let out = cmd.stderr(Stdio::null()).output().unwrap();
        assert!(out.status.success(), "tshark on {}", path.display());
        let text = String::from_utf8_lossy(&out.stdout);
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows.len(), ours.len(), "{}: frame count", path.display());
        for (row, frame) in rows.iter().zip(&ours) {
            let cols: Vec<&str> = row.split('\t').collect();
            assert_eq!(cols[0], frame["frame"].to_string());
            let proto = cols.get(1).copied().unwrap_or("");
            for (i, (tf, path_ours)) in FIELDS.iter().enumerate() {
                let theirs = cols.get(i + 2).copied().unwrap_or("");
                let theirs = (!theirs.is_empty()).then(|| normalize_tshark(tf, theirs));
                let mine = ours_at(frame, path_ours);
                if theirs.is_none() && mine.is_none() {
                    continue;
                }
                compared += 1;
                if theirs == mine {
                    continue;
                }
                let file = path.file_name().unwrap().to_string_lossy();
                if let Some(reason) = tshark_known_wrong(&file, frame, proto, tf) {
                    *known.entry(reason).or_default() += 1;
                    continue;
                }
                disagreements.push(format!(
                    "{} frame {}: {tf}: tshark {theirs:?}, rocescope {mine:?} ({proto})",
                    path.file_name().unwrap().to_string_lossy(),
                    frame["frame"]
                ));
            }
        }
    }
    for (reason, n) in &known {
        println!("known tshark difference ({n} values): {reason}");
    }
    println!("{compared} field values compared");
    assert!(
        disagreements.is_empty(),
        "{} disagreements with tshark:\n{}",
        disagreements.len(),
        disagreements
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// `-Y` with the replay's analysis marks selects exactly the frames the replay put those
/// events on, and the count agrees with the generator's truth for the scenario.
#[test]
fn analysis_marks_select_the_replays_frames() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cap = root.join("captures/loss_gbn.pcap");
    let out = run(&["analyze", "-f", "json", cap.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let events = report["events"].as_array().unwrap();
    let frames_of = |kind: &str| -> Vec<u64> {
        let mut v: Vec<u64> = events
            .iter()
            .filter(|e| e["kind"] == kind)
            .map(|e| e["frame"].as_u64().unwrap())
            .collect();
        v.dedup();
        v
    };
    let retrans = frames_of("retransmission");
    assert!(!retrans.is_empty());
    let shown: Vec<u64> = jsonl(&cap, &["-Y", "retrans && !ce"])
        .iter()
        .map(|f| f["frame"].as_u64().unwrap())
        .collect();
    let ce = frames_of("ecn_ce");
    let want: Vec<u64> = retrans
        .iter()
        .copied()
        .filter(|f| !ce.contains(f))
        .collect();
    assert_eq!(shown, want);
    // the scenario's truth states the retransmissions the capture shows
    let truth = root.join("generator/scenarios/loss_gbn.toml");
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("truth.json");
    let pcap = dir.path().join("x.pcap");
    let generated = run(&[
        "generate",
        truth.to_str().unwrap(),
        "-o",
        pcap.to_str().unwrap(),
        "--truth",
        t.to_str().unwrap(),
    ]);
    assert_eq!(generated.status.code(), Some(0), "{generated:?}");
    let truth: serde_json::Value = serde_json::from_slice(&std::fs::read(&t).unwrap()).unwrap();
    let stated: u64 = truth["flows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["retransmissions"].as_u64())
        .sum();
    assert_eq!(
        jsonl(&pcap, &["-Y", "retrans"]).len() as u64,
        stated,
        "retrans frames vs the truth's retransmissions"
    );
    // standard input cannot be replayed before it is shown
    let mut child = bin()
        .args(["dissect", "-Y", "loss", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert_usage_error(&out, "standard input");
}
