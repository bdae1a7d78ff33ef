//! Structure-aware: a chain of tunnels (GRE with any optional words and protocol, ERSPAN
//! I/II/III with or without the platform subheader and any frame type, TEB, VXLAN, Geneve
//! with options, MPLS stacks, IPv4/IPv6 in IP) wrapped around an inner frame (a well-formed
//! RoCEv2 packet or arbitrary bytes), each layer optionally damaged, then cut anywhere.
//!
//! Invariants:
//! - never a panic, and the walk stops: at most `encap::MAX_DEPTH` tunnels are entered;
//!   deeper chains end in the `TooDeep` finding, never in a RoCE layer;
//! - every outer layer lies in the frame, in increasing order, before the inner frame;
//! - an undamaged chain of at most `MAX_DEPTH` tunnels around the RoCE packet, uncut,
//!   dissects without error to that packet's BTH at the offset it was written;
//! - the field walk (`pretty::visit`) opens and closes in pairs and names only ranges in
//!   the frame.
#![no_main]

use core::ops::Range;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use rocescope_dissectors::encap::{self, erspan, gre};
use rocescope_dissectors::error::Malformed;
use rocescope_dissectors::pretty;
use rocescope_dissectors::stack::{self, DissectOptions, Start};
use rocescope_dissectors::visit::{Value, Visitor};
use rocescope_dissectors::{Layer, WireError};

#[derive(Debug, Arbitrary)]
enum Tunnel {
    /// Ethernet + IPv4 (or IPv6) + GRE; `proto` None = TEB (Ethernet inside).
    Gre {
        v6: bool,
        checksum: bool,
        key: Option<u32>,
        seq: Option<u32>,
        ip_inside: bool,
    },
    /// GRE + ERSPAN (`type3`, else II; Type I when `type1`).
    Erspan {
        type1: bool,
        type3: bool,
        platform: bool,
        frame_type: u8,
        session: u16,
        truncated: bool,
        bso: u8,
    },
    Vxlan {
        vni: u32,
    },
    Geneve {
        vni: u32,
        options: Vec<(u16, u8, u8)>,
    },
    /// Ethernet + MPLS labels, then the IP packet (the inner Ethernet header is dropped).
    Mpls {
        labels: Vec<u32>,
    },
    /// IPv4 (protocol 4) or IPv6 (41) around the IP packet.
    IpInIp {
        v6: bool,
    },
}

#[derive(Debug, Arbitrary)]
struct Input {
    tunnels: Vec<Tunnel>,
    /// Arbitrary inner bytes instead of the RoCE packet.
    inner: Option<Vec<u8>>,
    /// (byte, xor) damage.
    damage: Vec<(u16, u8)>,
    cut: Option<u16>,
}

/// A RoCEv2 RC WRITE ONLY over IPv4 with a 16-byte payload, ICRC not computed (the
/// fuzzing build accepts any ICRC).
fn roce_frame() -> Vec<u8> {
    let mut f = eth(0x0800);
    let payload_len = 12 + 16 + 16 + 4; // BTH + RETH + payload + ICRC
    f.extend_from_slice(&ipv4(17, 8 + payload_len));
    f.extend_from_slice(&[0xC0, 0x00, 0x12, 0xB7]);
    f.extend_from_slice(&u16::try_from(8 + payload_len).unwrap().to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    // BTH: opcode 0x0A (RC RDMA WRITE ONLY), pkey 0xFFFF, QP 0x11, PSN 5
    f.extend_from_slice(&[0x0A, 0, 0xFF, 0xFF, 0, 0, 0, 0x11, 0, 0, 0, 5]);
    f.extend_from_slice(&[0; 8]); // RETH VA
    f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 16]); // rkey, dmalen 16
    f.extend_from_slice(&[0xAB; 16]);
    f.extend_from_slice(&[0; 4]);
    f
}

fn eth(ethertype: u16) -> Vec<u8> {
    let mut e = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    e.extend_from_slice(&ethertype.to_be_bytes());
    e
}

fn ipv4(proto: u8, payload: usize) -> Vec<u8> {
    let total = u16::try_from((20 + payload).min(65535)).unwrap();
    let mut h = vec![
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2,
    ];
    h[2..4].copy_from_slice(&total.to_be_bytes());
    h
}

fn ipv6(next: u8, payload: usize) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0, 0, 0, next, 64];
    h[4..6].copy_from_slice(&u16::try_from(payload.min(65535)).unwrap().to_be_bytes());
    h.extend_from_slice(&[0xFD; 16]);
    h.extend_from_slice(&[0xFE; 16]);
    h
}

/// The IP packet inside an Ethernet frame (after its EtherType; VLAN tags not used here).
fn ip_of(frame: &[u8]) -> Option<(u16, Vec<u8>)> {
    let t = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    matches!(t, 0x0800 | 0x86DD).then(|| (t, frame[14..].to_vec()))
}

/// Wrap `inner` (an Ethernet frame) in one tunnel; returns the new Ethernet frame and
/// whether the result is still something the dissector must fully unwrap.
fn wrap(t: &Tunnel, inner: Vec<u8>) -> (Vec<u8>, bool) {
    let over_ip = |v6: bool, proto: u8, body: Vec<u8>| {
        let mut f = eth(if v6 { 0x86DD } else { 0x0800 });
        if v6 {
            f.extend_from_slice(&ipv6(proto, body.len()));
        } else {
            f.extend_from_slice(&ipv4(proto, body.len()));
        }
        f.extend_from_slice(&body);
        f
    };
    match t {
        Tunnel::Gre {
            v6,
            checksum,
            key,
            seq,
            ip_inside,
        } => {
            let (proto, body, ok) = match (ip_inside, ip_of(&inner)) {
                (true, Some((t, ip))) => (t, ip, true),
                _ => (gre::proto::TEB, inner, true),
            };
            let mut g = [0u8; 16];
            let n = gre::emit(&mut g, proto, *key, *seq);
            let mut hdr = g[..n].to_vec();
            if *checksum {
                // C bit and the checksum/offset word, which come first
                hdr[0] |= 0x80;
                hdr.splice(4..4, [0, 0, 0, 0]);
            }
            hdr.extend_from_slice(&body);
            (over_ip(*v6, 47, hdr), ok)
        }
        Tunnel::Erspan {
            type1,
            type3,
            platform,
            frame_type,
            session,
            truncated,
            bso,
        } => {
            let mut g = [0u8; 16];
            let mut hdr;
            let mut ok = true;
            if *type1 {
                let n = gre::emit(&mut g, gre::proto::ERSPAN_88BE, None, None);
                hdr = g[..n].to_vec();
            } else {
                let p = if *type3 {
                    gre::proto::ERSPAN_22EB
                } else {
                    gre::proto::ERSPAN_88BE
                };
                let n = gre::emit(&mut g, p, None, Some(1));
                hdr = g[..n].to_vec();
                let mut e = [0u8; 32];
                let len = erspan::Repr {
                    type3: *type3,
                    vlan: 0,
                    cos: 0,
                    truncated: *truncated,
                    session: *session & 0x3FF,
                    index_or_timestamp: 7,
                    hw: 1,
                    egress: false,
                }
                .emit(&mut e);
                let mut e = e[..len].to_vec();
                e[2] |= (bso & 3) << 3;
                if *type3 {
                    e[10] = (e[10] & 0x83) | ((frame_type & 0x1F) << 2);
                    ok = frame_type & 0x1F == 0;
                    if *platform {
                        e[11] |= 1;
                        e.extend_from_slice(&[0x0C, 0, 0, 0, 0, 0, 0, 0]);
                    }
                }
                hdr.extend_from_slice(&e);
            }
            hdr.extend_from_slice(&inner);
            (over_ip(false, 47, hdr), ok)
        }
        Tunnel::Vxlan { vni } => {
            let mut u = vec![0xC0, 0x01, 0x12, 0xB5, 0, 0, 0, 0];
            let len = u16::try_from((8 + 8 + inner.len()).min(65535)).unwrap();
            u[4..6].copy_from_slice(&len.to_be_bytes());
            let mut v = [0u8; 8];
            encap::vxlan::emit_vxlan(&mut v, vni & 0xFF_FFFF);
            u.extend_from_slice(&v);
            u.extend_from_slice(&inner);
            (over_ip(false, 17, u), true)
        }
        Tunnel::Geneve { vni, options } => {
            let mut opts = Vec::new();
            for &(class, kind, len) in options.iter().take(8) {
                let words = len & 0x1F;
                opts.extend_from_slice(&class.to_be_bytes());
                opts.push(kind);
                opts.push(words);
                opts.extend(std::iter::repeat_n(0x5A, usize::from(words) * 4));
            }
            let opt_words = (opts.len() / 4).min(63);
            opts.truncate(opt_words * 4);
            let mut gh = vec![u8::try_from(opt_words).unwrap(), 0, 0x65, 0x58];
            gh.extend_from_slice(&(vni << 8).to_be_bytes());
            gh.extend_from_slice(&opts);
            let mut u = vec![0xC0, 0x01, 0x17, 0xC1, 0, 0, 0, 0];
            let len = u16::try_from((8 + gh.len() + inner.len()).min(65535)).unwrap();
            u[4..6].copy_from_slice(&len.to_be_bytes());
            u.extend_from_slice(&gh);
            u.extend_from_slice(&inner);
            (over_ip(false, 17, u), true)
        }
        Tunnel::Mpls { labels } => {
            let Some((_, ip)) = ip_of(&inner) else {
                return (inner, false);
            };
            let mut f = eth(0x8847);
            let labels: Vec<u32> = labels.iter().take(20).map(|l| l & 0xF_FFFF).collect();
            let labels = if labels.is_empty() { vec![16] } else { labels };
            let mut m = vec![0u8; labels.len() * 4];
            encap::mpls::emit(&mut m, &labels);
            f.extend_from_slice(&m);
            f.extend_from_slice(&ip);
            (f, labels.len() <= encap::mpls::MAX_LABELS)
        }
        Tunnel::IpInIp { v6 } => {
            let Some((t, ip)) = ip_of(&inner) else {
                return (inner, false);
            };
            let proto = if t == 0x0800 { 4 } else { 41 };
            (over_ip(*v6, proto, ip), true)
        }
    }
}

/// Checks that the walk's opens and closes pair up and its ranges lie in the frame.
struct Walk {
    len: usize,
    depth: isize,
}

impl Walk {
    fn range(&self, r: &Range<usize>) {
        assert!(
            r.start <= r.end && r.end <= self.len,
            "{r:?} past {}",
            self.len
        );
    }
}

impl Visitor for Walk {
    fn begin(&mut self, _: &'static str, _: &'static str, r: Range<usize>) {
        self.range(&r);
        self.depth += 1;
    }
    fn end(&mut self) {
        self.depth -= 1;
        assert!(self.depth >= 0);
    }
    fn begin_list(&mut self, _: &'static str, _: &'static str, r: Range<usize>) {
        self.range(&r);
        self.depth += 1;
    }
    fn end_list(&mut self) {
        self.depth -= 1;
        assert!(self.depth >= 0);
    }
    fn field(&mut self, _: &'static str, _: &'static str, _: Value<'_>, r: Range<usize>) {
        self.range(&r);
    }
}

fuzz_target!(|input: Input| {
    let inner_roce = input.inner.is_none();
    let inner = input.inner.clone().unwrap_or_else(roce_frame);
    let mut frame = inner.clone();
    let mut entered = 0usize;
    let mut clean = true;
    for t in input.tunnels.iter().take(12) {
        let before = frame.len();
        let (f, ok) = wrap(t, frame);
        if f.len() > before {
            entered += 1;
        }
        clean &= ok;
        frame = f;
    }
    let bth_at = frame.len() - inner.len() + 14 + 20 + 8;
    for &(byte, xor) in input.damage.iter().take(4) {
        if xor == 0 || frame.is_empty() {
            continue;
        }
        let i = usize::from(byte) % frame.len();
        frame[i] ^= xor;
        clean = false;
    }
    if let Some(c) = input.cut {
        let c = usize::from(c);
        if c < frame.len() {
            frame.truncate(c);
            clean = false;
        }
    }

    let (d, err) = stack::dissect_with(&frame, Start::Ethernet, &DissectOptions::default());
    if let Some(e) = err {
        assert!(e.offset() <= frame.len(), "{e:?}");
        let _ = e.to_string();
    }
    // outer layers: in the frame, in order, before the inner frame
    let mut last = 0;
    let layers = d.outer_layers();
    for l in layers.iter() {
        assert!(l.offset >= last, "outer layers out of order");
        assert!(l.offset + l.bytes.len() <= frame.len());
        last = l.offset + l.bytes.len();
    }
    assert!(layers.iter().count() <= stack::MAX_OUTER);
    if layers.iter().count() > 0 {
        assert!(d.is_encapsulated());
    }
    let mut w = Walk {
        len: frame.len(),
        depth: 0,
    };
    pretty::visit(&d, &mut w);
    assert_eq!(w.depth, 0);

    let too_deep = matches!(
        err,
        Some(WireError::Malformed {
            layer: Layer::Encap,
            reason: Malformed::TooDeep { .. },
            ..
        })
    );
    if too_deep {
        assert!(d.roce.is_none());
    }
    // a whole, undamaged chain within the depth limit reaches the RoCE packet
    if clean && inner_roce && entered <= usize::from(encap::MAX_DEPTH) {
        assert!(err.is_none(), "{err:?} for {:?}", input.tunnels);
        let roce = d.roce.expect("the RoCE packet inside");
        // (measured from the end: MPLS and IP in IP drop the inner Ethernet header, but
        // the BTH is always the same distance from the end)
        assert_eq!(roce.bth_offset, bth_at);
        assert_eq!(roce.bth.psn().value(), 5);
    }
    if clean && inner_roce && entered > usize::from(encap::MAX_DEPTH) {
        assert!(too_deep, "{entered} tunnels: {err:?}");
    }
});
