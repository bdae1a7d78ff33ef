//! The one-line summary of a frame, tshark's columns: source, destination, protocol, info.
//!
//! Protocol is `RoCEv2`, `RoCEv1`, `CM` (a CM MAD on QP1), `MAD` (another management class on QP0/QP1), `InfiniBand`, `PFC`, `PAUSE`, `MACC`, `UDP`, `TCP`,
//! `ICMP`, `IPv4`, `IPv6`, `ARP`, or the EtherType in hex. Info for RoCE: opcode name,
//! `QP=0x000011 PSN=1234`, `A` when AckReq is set, `len=N` (RETH DMA length), `ACK MSN=9`,
//! `NAK PSN_SEQ_ERR MSN=9`, `RNR NAK 1.28ms MSN=9`, `imm=0x…`, `FECN`, `BECN`, `ICRC BAD`,
//! `ECN CE`; for PFC `PFC pause p3=65535q (335.5us @100G)` / `PFC resume p3`; then
//! the tunnels of an encapsulated frame (`[ERSPAN III span 42]`, `[VXLAN VNI 5001]`), then
//! `[TRUNCATED]` / `[MALFORMED]` and any other dissector complaint in brackets. `dissect`'s
//! text and CSV output and the inspector's frame list all print it.

// Indexing cannot panic here: two-byte slices taken with `get` are indexed at 0 and 1.
#![allow(clippy::indexing_slicing)]

use std::fmt::{self, Write as _};

use rocescope_dissectors::encap::{erspan, gre, mpls, vxlan};
use rocescope_dissectors::ib::aeth::{self, AethKind};
use rocescope_dissectors::ib::mad;
use rocescope_dissectors::icrc::IcrcStatus;
use rocescope_dissectors::ipv4::IpProtocol;
use rocescope_dissectors::mac_control::{self, MacControlOpcode};
use rocescope_dissectors::stack::{Dissected, Network, OuterKind, Roce, RoceVersion};

use super::{FrameView, LinkType, Problem};
use crate::text::{push_dec, push_hex};
use crate::units::{Duration, link_speed_label};

/// The summary columns of one frame, in reusable strings.
#[derive(Debug, Default, Clone)]
pub struct SummaryLine {
    pub src: String,
    pub dst: String,
    pub protocol: String,
    pub info: String,
}

/// Builds [`SummaryLine`]s (knows the link speed for PFC times).
#[derive(Debug, Clone)]
pub struct Summarizer {
    link_bps: u64,
    link_label: String,
}

impl Summarizer {
    #[must_use]
    pub fn new(link_bps: u64) -> Self {
        Summarizer {
            link_bps,
            link_label: link_speed_label(link_bps),
        }
    }

    /// Fill `s` for `view` (its strings are cleared first).
    pub fn summarize(&self, view: &FrameView<'_>, s: &mut SummaryLine) {
        s.src.clear();
        s.dst.clear();
        s.protocol.clear();
        s.info.clear();
        // Writing into a String cannot fail.
        let _ = self.fill(view, s);
    }

    fn fill(&self, view: &FrameView<'_>, s: &mut SummaryLine) -> fmt::Result {
        let Some(d) = &view.dissected else {
            s.protocol.push_str(match view.problem {
                Some(Problem::UnsupportedLink(_)) => "?",
                _ => "SLL",
            });
            if let Some(p) = &view.problem {
                write!(s.info, "[{p}]")?;
            }
            return Ok(());
        };
        addresses(d, s)?;
        let info = &mut s.info;
        match (&d.roce, &d.network) {
            (Some(roce), _) => {
                s.protocol
                    .push_str(match (roce.cm().is_some(), roce.version) {
                        (true, _) => "CM",
                        (false, _) if roce.mad().is_some() => "MAD",
                        (false, RoceVersion::V2) => "RoCEv2",
                        (false, RoceVersion::V1) => "RoCEv1",
                        (false, RoceVersion::Ib) => "InfiniBand",
                    });
                roce_info(d, roce, info)?;
            }
            (None, Some(Network::MacControl(p))) => match p.opcode() {
                MacControlOpcode::PFC => {
                    s.protocol.push_str("PFC");
                    info.push_str("PFC");
                    let enable = p.pfc_enable();
                    let quanta = p.pfc_quanta_all();
                    let mut paused = false;
                    for (prio, q) in quanta.iter().enumerate() {
                        if enable & (1 << prio) != 0 && *q > 0 {
                            info.push_str(if paused { ", " } else { " pause " });
                            paused = true;
                            write!(info, "p{prio}={q}q (")?;
                            duration(info, mac_control::quanta_to_ns(*q, self.link_bps))?;
                            write!(info, " @{})", self.link_label)?;
                        }
                    }
                    let mut resumed = false;
                    for (prio, q) in quanta.iter().enumerate() {
                        if enable & (1 << prio) != 0 && *q == 0 {
                            info.push_str(if resumed { ", " } else { " resume " });
                            resumed = true;
                            write!(info, "p{prio}")?;
                        }
                    }
                    if enable == 0 {
                        info.push_str(" (no priority enabled)");
                    }
                }
                MacControlOpcode::PAUSE => {
                    s.protocol.push_str("PAUSE");
                    let q = p.pause_quanta();
                    if q == 0 {
                        info.push_str("PAUSE resume");
                    } else {
                        write!(info, "PAUSE {q}q (")?;
                        duration(info, mac_control::quanta_to_ns(q, self.link_bps))?;
                        write!(info, " @{})", self.link_label)?;
                    }
                }
                other => {
                    s.protocol.push_str("MACC");
                    write!(info, "MAC Control opcode {:#06x}", other.0)?;
                }
            },
            (None, Some(Network::Ipv4(ip))) => {
                let l4 = ip.payload();
                transport_info(d, ip.next_header(), l4, "IPv4", s)?;
            }
            (None, Some(Network::Ipv6(ip))) => {
                let l4 = ip.payload();
                transport_info(d, ip.next_header(), l4, "IPv6", s)?;
            }
            (None, Some(Network::Grh(_))) if d.lrh().is_some() => {
                s.protocol.push_str("InfiniBand");
                info.push_str("GRH");
            }
            (None, Some(Network::Grh(_))) => {
                s.protocol.push_str("RoCEv1");
                info.push_str("GRH");
            }
            (None, None) => match d.ethertype {
                Some(t) => {
                    match t.0 {
                        0x0806 => s.protocol.push_str("ARP"),
                        0x88CC => s.protocol.push_str("LLDP"),
                        _ => write!(s.protocol, "{:#06x}", t.0)?,
                    }
                    write!(s.info, "EtherType {:#06x}", t.0)?;
                }
                // nothing decoded: a cooked-capture header cut short, or an Ethernet one
                None if view.frame.link == LinkType::ETHERNET => s.protocol.push_str("Ethernet"),
                None => s.protocol.push_str("SLL"),
            },
        }
        if d.is_encapsulated() {
            encapsulation(d, &mut s.info)?;
        }
        if let Some(p) = &view.problem {
            if view.truncated {
                s.info.push_str(" [TRUNCATED]");
            } else if view.malformed {
                s.info.push_str(" [MALFORMED]");
            } else {
                write!(s.info, " [{p}]")?;
            }
        } else if view.truncated {
            s.info.push_str(" [TRUNCATED]");
        }
        if s.info.starts_with(' ') {
            s.info.remove(0);
        }
        Ok(())
    }
}

/// The tunnels a mirrored or tunnelled frame came through, outermost first:
/// ` [ERSPAN III span 42]`, ` [VXLAN VNI 5001]`, ` [MPLS 16/1000]`, ` [GRE key 0x2a2a]`,
/// ` [IP-in-IP]`.
fn encapsulation(d: &Dissected<'_>, info: &mut String) -> fmt::Result {
    let layers = d.outer_layers();
    let mut first = true;
    let mut sep = |info: &mut String| {
        info.push_str(if first { " [" } else { ", " });
        first = false;
    };
    let mut prev = None;
    let mut it = layers.iter().peekable();
    while let Some(l) = it.next() {
        let next = it.peek().map(|n| n.kind);
        match l.kind {
            OuterKind::Erspan => {
                let e = erspan::Header::new_unchecked(l.bytes);
                sep(info);
                let ty = match e.version() {
                    0 => "I",
                    1 => "II",
                    _ => "III",
                };
                write!(info, "ERSPAN {ty} span {}", e.session())?;
            }
            OuterKind::Gre if next != Some(OuterKind::Erspan) => {
                sep(info);
                info.push_str("GRE");
                if let Some(k) = gre::Header::new_unchecked(l.bytes).key() {
                    write!(info, " key {k:#x}")?;
                }
            }
            OuterKind::Vxlan => {
                sep(info);
                if let Ok(v) = vxlan::Vxlan::new_checked(l.bytes) {
                    write!(info, "VXLAN VNI {}", v.vni())?;
                }
            }
            OuterKind::Geneve => {
                sep(info);
                if let Ok(g) = vxlan::Geneve::new_checked(l.bytes) {
                    write!(info, "Geneve VNI {}", g.vni())?;
                }
            }
            OuterKind::Mpls => {
                sep(info);
                info.push_str("MPLS ");
                for (i, e) in mpls::entries(l.bytes).enumerate() {
                    if i > 0 {
                        info.push('/');
                    }
                    write!(info, "{}", e.label())?;
                }
            }
            // an IP header right after another, or the last outer layer: IP in IP
            OuterKind::Ipv4 | OuterKind::Ipv6
                if matches!(next, None | Some(OuterKind::Ipv4 | OuterKind::Ipv6))
                    && prev != Some(OuterKind::Mpls) =>
            {
                sep(info);
                info.push_str("IP-in-IP");
            }
            _ => {}
        }
        prev = Some(l.kind);
    }
    if !first {
        info.push(']');
    }
    Ok(())
}

fn addresses(d: &Dissected<'_>, s: &mut SummaryLine) -> fmt::Result {
    match &d.network {
        Some(Network::Ipv4(ip)) => {
            for (out, a) in [(&mut s.src, ip.src_addr()), (&mut s.dst, ip.dst_addr())] {
                let (text, n) = crate::text::ipv4(a.octets());
                // ASCII digits and dots
                out.push_str(std::str::from_utf8(&text[..n]).unwrap_or_default());
            }
            Ok(())
        }
        Some(Network::Ipv6(ip)) => {
            write!(s.src, "{}", ip.src_addr())?;
            write!(s.dst, "{}", ip.dst_addr())
        }
        Some(Network::Grh(g)) => {
            write!(s.src, "{}", g.sgid())?;
            write!(s.dst, "{}", g.dgid())
        }
        _ => match (&d.eth, d.lrh()) {
            (Some(eth), _) => {
                write!(s.src, "{}", eth.src_addr())?;
                write!(s.dst, "{}", eth.dst_addr())
            }
            // a native packet without a GRH: its LIDs, as the flow key writes them
            (None, Some((_, lrh))) => {
                write!(s.src, "lid:{:#06x}", lrh.slid())?;
                write!(s.dst, "lid:{:#06x}", lrh.dlid())
            }
            (None, None) => Ok(()),
        },
    }
}

fn transport_info(
    d: &Dissected<'_>,
    proto: IpProtocol,
    l4: &[u8],
    ip_name: &str,
    s: &mut SummaryLine,
) -> fmt::Result {
    let port = |at: usize| l4.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    if let Some(udp) = &d.udp {
        s.protocol.push_str("UDP");
        return write!(
            s.info,
            "{} → {} Len={}",
            udp.src_port(),
            udp.dst_port(),
            udp.len().saturating_sub(8)
        );
    }
    match proto.0 {
        6 => {
            s.protocol.push_str("TCP");
            match (port(0), port(2)) {
                (Some(a), Some(b)) => write!(s.info, "{a} → {b}"),
                _ => s.info.write_str("TCP"),
            }
        }
        17 => {
            s.protocol.push_str("UDP");
            s.info.write_str("UDP")
        }
        1 => {
            s.protocol.push_str("ICMP");
            s.info.write_str("ICMP")
        }
        58 => {
            s.protocol.push_str("ICMPv6");
            s.info.write_str("ICMPv6")
        }
        n => {
            s.protocol.push_str(ip_name);
            write!(s.info, "protocol {n}")
        }
    }
}

fn roce_info(d: &Dissected<'_>, roce: &Roce<'_>, info: &mut String) -> fmt::Result {
    let bth = &roce.bth;
    // "{label} QP={:#08x} PSN={}", without the fmt machinery (every RoCE frame has it)
    match roce.info {
        Some(i) => info.push_str(i.name),
        None => write!(info, "{}", roce.opcode_label())?,
    }
    info.push_str(" QP=");
    push_hex(info, u64::from(bth.dest_qp().value()), 6);
    info.push_str(" PSN=");
    push_dec(info, bth.psn().value());
    if bth.ack_req() {
        info.push_str(" A");
    }
    if let Some(reth) = roce.exts.reth() {
        info.push_str(" len=");
        push_dec(info, reth.dma_len());
    }
    if let Some(a) = roce.exts.aeth() {
        match a.syndrome().kind() {
            AethKind::Ack { .. } => {
                info.push_str(" ACK MSN=");
                push_dec(info, a.msn());
            }
            AethKind::Nak(code) => write!(info, " NAK {code} MSN={}", a.msn())?,
            AethKind::RnrNak { timer_code } => {
                info.push_str(" RNR NAK ");
                duration(
                    info,
                    u64::from(aeth::rnr_timer_us(timer_code)).saturating_mul(1000),
                )?;
                write!(info, " MSN={}", a.msn())?;
            }
            AethKind::Reserved => write!(info, " AETH syndrome={}", a.syndrome())?,
        }
    }
    if let Some(imm) = roce.exts.immdt() {
        write!(info, " imm={:#010x}", imm.imm_data())?;
    }
    if let Some(h) = roce.ipoib() {
        let t = h.ethertype();
        let name = match t.0 {
            0x0800 => "IPv4",
            0x86DD => "IPv6",
            _ => "ARP",
        };
        write!(info, " IPoIB {name}")?;
    }
    let cm = roce.cm();
    if let (None, Some(m)) = (&cm, roce.mad()) {
        // a management datagram of another class: `SA GetTable(PathRecord)`
        let name = mad::attribute_name(m.mgmt_class(), m.attribute_id()).unwrap_or("UNKNOWN");
        let method = mad::method_name(m.method_byte());
        write!(
            info,
            " {} {method}({name}) TID={:#x}",
            m.class_name(),
            m.transaction_id()
        )?;
    }
    if let Some(cm) = &cm {
        write!(info, " {}", cm.attribute.name().unwrap_or("UNKNOWN"))?;
        if let Some(q) = cm.local_qpn {
            write!(info, " local_qpn={:#08x}", q.value())?;
        }
        if let Some(p) = cm.starting_psn {
            write!(info, " starting_psn={}", p.value())?;
        }
        if let Some(m) = cm.path_mtu {
            write!(info, " mtu={m}")?;
        }
    }
    if bth.fecn() {
        info.push_str(" FECN");
    }
    if bth.becn() {
        info.push_str(" BECN");
    }
    if let IcrcStatus::Invalid { .. } = roce.icrc_status() {
        info.push_str(" ICRC BAD");
    }
    let ce = match &d.network {
        Some(Network::Ipv4(ip)) => ip.ecn() == 3,
        Some(Network::Ipv6(ip)) => ip.ecn() == 3,
        Some(Network::Grh(g)) => g.tclass() & 3 == 3,
        _ => false,
    };
    if ce {
        info.push_str(" ECN CE");
    }
    Ok(())
}

/// `335.5us`, `1.28ms`: the reports' duration format.
fn duration(out: &mut String, ns: u64) -> fmt::Result {
    write!(out, "{}", Duration(ns))
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn durations() {
        let mut s = String::new();
        duration(&mut s, mac_control::quanta_to_ns(65535, 100_000_000_000)).unwrap();
        assert_eq!(s, "335.5us");
        s.clear();
        duration(&mut s, 1_280_000).unwrap();
        assert_eq!(s, "1.28ms");
        s.clear();
        duration(&mut s, 655_360_000).unwrap();
        assert_eq!(s, "655.36ms");
    }
}
