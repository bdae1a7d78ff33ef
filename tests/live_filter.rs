//! The kernel filter of live captures (src/live/filter.rs) against two things nobody here
//! wrote the program for: netring's classic-BPF interpreter runs it, and rocescope's dissector
//! says what each frame is. Over every Ethernet frame of the demo and real captures (and
//! hand-made frames for what they lack): every frame rocescope decodes as RoCE, RoCEv1,
//! PFC/PAUSE or tcp_bth is kept, and nothing else is kept but tunnel frames.
#![cfg(feature = "live")]

use std::path::{Path, PathBuf};

use rocescope::capture::{CaptureReader, LinkType};
use rocescope::frame::FrameView;
use rocescope::live::filter::{Insn, all_program, default_program};
use rocescope_dissectors::stack::DissectOptions;

fn interpreter(program: &[Insn]) -> netring::BpfFilter {
    let insns = program
        .iter()
        .map(|i| netring::config::BpfInsn {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect();
    netring::BpfFilter::new(insns).expect("a valid program")
}

fn captures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    for dir in [root.join("captures"), root.join("../shared/captures/real")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            eprintln!(
                "notice: {} is not there; its captures are not checked",
                dir.display()
            );
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
                all.push(p);
            }
        }
    }
    all.sort();
    all
}

/// What the dissector says of a frame: (decoded by rocescope, a tunnel).
fn verdict(data: &[u8], number: u64) -> (bool, bool) {
    let frame = rocescope::capture::Frame {
        number,
        time_ns: 0,
        caplen: data.len() as u32,
        orig_len: data.len() as u32,
        link: LinkType::ETHERNET,
        input: 0,
        data,
    };
    let view = FrameView::new(&frame, &DissectOptions::default(), 0);
    let Some(d) = view.dissected.as_ref() else {
        return (false, false);
    };
    let decoded = d.roce.is_some() || d.mac_control().is_some() || d.tcp_bth().is_some();
    (decoded, d.is_encapsulated())
}

#[test]
fn the_filter_keeps_every_frame_rocescope_decodes_and_little_else() {
    let filter = interpreter(&default_program(&[], 262_144).unwrap());
    let (mut kept, mut decoded_total, mut dropped, mut files) = (0u64, 0u64, 0u64, 0);
    for path in captures() {
        let mut reader = CaptureReader::open(&path).unwrap();
        let mut ethernet = false;
        while let Some(frame) = reader.next_frame() {
            let frame = frame.unwrap();
            if frame.link != LinkType::ETHERNET {
                continue;
            }
            ethernet = true;
            let (decoded, tunnel) = verdict(frame.data, frame.number);
            let keep = filter.matches(frame.data);
            assert!(
                !decoded || keep,
                "{} frame {}: decoded by rocescope, dropped by the kernel filter",
                path.display(),
                frame.number
            );
            assert!(
                !keep || decoded || tunnel,
                "{} frame {}: kept by the kernel filter but neither decoded nor a tunnel",
                path.display(),
                frame.number
            );
            kept += u64::from(keep);
            decoded_total += u64::from(decoded);
            dropped += u64::from(!keep);
        }
        files += usize::from(ethernet);
    }
    assert!(files >= 20, "only {files} Ethernet captures found");
    // (the demo captures alone hold some 7,900; the real ones, where present, many more)
    assert!(decoded_total > 5_000, "{decoded_total} decoded frames");
    // the real captures hold other traffic too: the filter has something to drop
    assert!(
        dropped > 0 && kept >= decoded_total,
        "kept {kept}, dropped {dropped}"
    );
}

/// Frames the captures lack: VLAN-tagged (one and two tags), IPv6, fragments, other ports,
/// a tcp_bth option after the SYN options, other TCP.
#[test]
fn hand_made_frames() {
    fn eth(tags: &[u16], ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
        for (i, &tci) in tags.iter().enumerate() {
            let tpid: u16 = if i + 1 < tags.len() { 0x88a8 } else { 0x8100 };
            f.extend_from_slice(&tpid.to_be_bytes());
            f.extend_from_slice(&tci.to_be_bytes());
        }
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }
    fn ipv4(proto: u8, frag: u16, l4: &[u8]) -> Vec<u8> {
        let mut h = vec![0x45, 0, 0, 0, 0, 1];
        h.extend_from_slice(&frag.to_be_bytes());
        h.extend_from_slice(&[64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        let len = (h.len() + l4.len()) as u16;
        h[2..4].copy_from_slice(&len.to_be_bytes());
        h.extend_from_slice(l4);
        h
    }
    fn ipv6(next: u8, l4: &[u8]) -> Vec<u8> {
        let mut h = vec![0x60, 0, 0, 0];
        h.extend_from_slice(&(l4.len() as u16).to_be_bytes());
        h.extend_from_slice(&[next, 64]);
        h.extend_from_slice(&[0xfd; 32]);
        h.extend_from_slice(l4);
        h
    }
    fn udp(dport: u16) -> Vec<u8> {
        let mut u = vec![0xc0, 0x00];
        u.extend_from_slice(&dport.to_be_bytes());
        u.extend_from_slice(&[0, 20, 0, 0]);
        u.extend_from_slice(&[0; 12]); // a BTH's worth
        u
    }
    fn tcp(options: &[u8]) -> Vec<u8> {
        let doff = (20 + options.len()) / 4;
        let mut t = vec![0x9c, 0x41, 0x1d, 0x2f, 0, 0, 0, 1, 0, 0, 0, 0];
        t.push((doff as u8) << 4);
        t.extend_from_slice(&[0x10, 0xff, 0xff, 0, 0, 0, 0]);
        t.extend_from_slice(options);
        t
    }
    let bth_opt = |len: u8| {
        let mut o = vec![254, len, 0xef, 0xab];
        o.resize(usize::from(len), 0);
        o
    };
    let mut syn_opts = vec![2, 4, 0x05, 0xb4, 4, 2, 8, 10]; // MSS, SACK-permitted, TS…
    syn_opts.extend_from_slice(&[0; 8]);
    syn_opts.extend_from_slice(&[1, 3, 3, 7]); // NOP, window scale
    syn_opts.extend_from_slice(&bth_opt(4));
    let mut late = vec![1; 16];
    late.extend_from_slice(&bth_opt(24));
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("RoCEv2", eth(&[], 0x0800, &ipv4(17, 0, &udp(4791))), true),
        (
            "RoCEv2, one tag",
            eth(&[0x6003], 0x0800, &ipv4(17, 0, &udp(4791))),
            true,
        ),
        (
            "RoCEv2, two tags",
            eth(&[0x0010, 0x6003], 0x0800, &ipv4(17, 0, &udp(4791))),
            true,
        ),
        (
            "RoCEv2 over IPv6",
            eth(&[], 0x86dd, &ipv6(17, &udp(4791))),
            true,
        ),
        (
            "IPv6, two tags",
            eth(&[1, 2], 0x86dd, &ipv6(17, &udp(4791))),
            true,
        ),
        (
            "first fragment",
            eth(&[], 0x0800, &ipv4(17, 0x2000, &udp(4791))),
            true,
        ),
        (
            "later fragment",
            eth(&[], 0x0800, &ipv4(17, 0x0010, &udp(4791))),
            false,
        ),
        ("DNS", eth(&[], 0x0800, &ipv4(17, 0, &udp(53))), false),
        ("VXLAN", eth(&[], 0x0800, &ipv4(17, 0, &udp(4789))), true),
        (
            "Geneve over IPv6",
            eth(&[], 0x86dd, &ipv6(17, &udp(6081))),
            true,
        ),
        ("GRE", eth(&[], 0x0800, &ipv4(47, 0, &[0; 8])), true),
        ("MPLS", eth(&[], 0x8847, &[0; 8]), true),
        ("PFC", eth(&[], 0x8808, &[0x01, 0x01, 0, 0xff]), true),
        (
            "PFC, tagged",
            eth(&[0x6000], 0x8808, &[0x01, 0x01, 0, 0xff]),
            true,
        ),
        ("RoCEv1", eth(&[], 0x8915, &[0; 52]), true),
        ("ARP", eth(&[], 0x0806, &[0; 28]), false),
        (
            "tcp_bth first",
            eth(&[], 0x0800, &ipv4(6, 0, &tcp(&bth_opt(24)))),
            true,
        ),
        (
            "tcp_bth after the SYN options",
            eth(&[], 0x0800, &ipv4(6, 0, &tcp(&syn_opts))),
            true,
        ),
        (
            "tcp_bth after 16 NOPs",
            eth(&[], 0x86dd, &ipv6(6, &tcp(&late))),
            true,
        ),
        (
            "TCP with timestamps",
            eth(
                &[],
                0x0800,
                &ipv4(6, 0, &tcp(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0])),
            ),
            false,
        ),
        ("plain TCP", eth(&[], 0x0800, &ipv4(6, 0, &tcp(&[]))), false),
        ("ICMPv6", eth(&[], 0x86dd, &ipv6(58, &[0; 8])), false),
        ("runt", vec![0xff; 10], false),
    ];
    let filter = interpreter(&default_program(&[], 262_144).unwrap());
    for (name, frame, keep) in &cases {
        assert_eq!(filter.matches(frame), *keep, "{name}");
    }
    // --roce-port: an extra port is kept
    let extra = interpreter(&default_program(&[5000], 262_144).unwrap());
    let f = eth(&[], 0x0800, &ipv4(17, 0, &udp(5000)));
    assert!(extra.matches(&f) && !filter.matches(&f));
    // --all keeps everything
    let all = interpreter(&all_program(262_144));
    assert!(cases.iter().all(|(_, f, _)| all.matches(f)));
}

/// With the libpcap feature, libpcap compiles the same selection from its filter language;
/// its own interpreter must agree with the hand-made program on every frame.
#[cfg(feature = "libpcap")]
#[test]
fn libpcap_agrees_with_the_program() {
    let ours = interpreter(&default_program(&[], 262_144).unwrap());
    let cap = pcap::Capture::dead(pcap::Linktype::ETHERNET).unwrap();
    let theirs = cap
        .compile(&rocescope::live::libpcap_filter_expression(&[]), true)
        .unwrap();
    let mut n = 0;
    for path in captures() {
        let mut reader = CaptureReader::open(&path).unwrap();
        while let Some(frame) = reader.next_frame() {
            let frame = frame.unwrap();
            if frame.link != LinkType::ETHERNET {
                continue;
            }
            n += 1;
            assert_eq!(
                ours.matches(frame.data),
                theirs.filter(frame.data),
                "{} frame {}",
                path.display(),
                frame.number
            );
        }
    }
    assert!(n > 5_000, "{n} frames");
}
